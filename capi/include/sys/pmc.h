/*
 * sys/pmc.h -- FreeBSD programs include <sys/pmc.h> for the kernel ABI part
 * of pmc.h (enums, PMC_* constants, struct pmc_info); here both live in
 * <pmc.h>. Found first with -Icapi/include.
 */
#include <pmc.h>
