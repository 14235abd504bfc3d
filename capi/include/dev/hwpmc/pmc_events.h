/*
 * dev/hwpmc/pmc_events.h -- where FreeBSD keeps the event numbers; here
 * they are the generated <pmc_events.h>. Found with -Icapi/include.
 */
#include <pmc_events.h>
