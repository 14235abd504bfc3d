/*
 * sys/pmclog.h -- FreeBSD's kernel half of pmclog.h (enum pmclog_type and
 * the CALLCHAIN cpuflags macros); here they live in <pmclog.h>.
 */
#include <pmclog.h>
