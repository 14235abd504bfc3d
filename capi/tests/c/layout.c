/* Prints sizeof/offsetof of every public struct of pmc.h and pmclog.h. */
#include <stddef.h>
#include <stdio.h>

#include <pmc.h>
#include <pmclog.h>

#define S(t)	printf("sizeof %s %zu\n", #t, sizeof(struct t))
#define O(t, f)	printf("offsetof %s %s %zu\n", #t, #f, offsetof(struct t, f))

int
main(void)
{
	S(pmc_classinfo); O(pmc_classinfo, pm_class); O(pmc_classinfo, pm_caps);
	O(pmc_classinfo, pm_width); O(pmc_classinfo, pm_num);
	S(pmc_cpuinfo); O(pmc_cpuinfo, pm_cputype); O(pmc_cpuinfo, pm_ncpu);
	O(pmc_cpuinfo, pm_npmc); O(pmc_cpuinfo, pm_nclass);
	O(pmc_cpuinfo, pm_classes);
	S(pmc_info); O(pmc_info, pm_name); O(pmc_info, pm_class);
	O(pmc_info, pm_enabled); O(pmc_info, pm_rowdisp);
	O(pmc_info, pm_ownerpid); O(pmc_info, pm_mode); O(pmc_info, pm_event);
	O(pmc_info, pm_flags); O(pmc_info, pm_reloadcount);
	S(pmc_pmcinfo); O(pmc_pmcinfo, pm_cpu); O(pmc_pmcinfo, pm_pmcs);
	S(pmc_driverstats); O(pmc_driverstats, pm_intr_ignored);
	O(pmc_driverstats, pm_intr_processed);
	O(pmc_driverstats, pm_intr_bufferfull); O(pmc_driverstats, pm_syscalls);
	O(pmc_driverstats, pm_syscall_errors);
	O(pmc_driverstats, pm_buffer_requests);
	O(pmc_driverstats, pm_buffer_requests_failed);
	O(pmc_driverstats, pm_log_sweeps);

	S(pmclog_ev_callchain); O(pmclog_ev_callchain, pl_pid);
	O(pmclog_ev_callchain, pl_tid); O(pmclog_ev_callchain, pl_pmcid);
	O(pmclog_ev_callchain, pl_cpuflags);
	O(pmclog_ev_callchain, pl_cpuflags2); O(pmclog_ev_callchain, pl_npc);
	O(pmclog_ev_callchain, pl_pc);
	S(pmclog_ev_initialize); O(pmclog_ev_initialize, pl_version);
	O(pmclog_ev_initialize, pl_arch); O(pmclog_ev_initialize, pl_tsc_freq);
	O(pmclog_ev_initialize, pl_ts); O(pmclog_ev_initialize, pl_cpuid);
	S(pmclog_ev_map_in); O(pmclog_ev_map_in, pl_pid);
	O(pmclog_ev_map_in, pl_start); O(pmclog_ev_map_in, pl_pathname);
	S(pmclog_ev_map_out); O(pmclog_ev_map_out, pl_pid);
	O(pmclog_ev_map_out, pl_start); O(pmclog_ev_map_out, pl_end);
	S(pmclog_ev_pmcallocate); O(pmclog_ev_pmcallocate, pl_evname);
	O(pmclog_ev_pmcallocate, pl_rate); O(pmclog_ev_pmcallocate, pl_event);
	O(pmclog_ev_pmcallocate, pl_flags); O(pmclog_ev_pmcallocate, pl_pmcid);
	S(pmclog_ev_pmcallocatedyn); O(pmclog_ev_pmcallocatedyn, pl_evname);
	O(pmclog_ev_pmcallocatedyn, pl_event);
	O(pmclog_ev_pmcallocatedyn, pl_flags);
	O(pmclog_ev_pmcallocatedyn, pl_pmcid);
	S(pmclog_ev_pmcattach); O(pmclog_ev_pmcattach, pl_pmcid);
	O(pmclog_ev_pmcattach, pl_pid); O(pmclog_ev_pmcattach, pl_pathname);
	S(pmclog_ev_pmcdetach); O(pmclog_ev_pmcdetach, pl_pmcid);
	O(pmclog_ev_pmcdetach, pl_pid);
	S(pmclog_ev_proccsw); O(pmclog_ev_proccsw, pl_pid);
	O(pmclog_ev_proccsw, pl_tid); O(pmclog_ev_proccsw, pl_pmcid);
	O(pmclog_ev_proccsw, pl_value);
	S(pmclog_ev_proccreate); O(pmclog_ev_proccreate, pl_pid);
	O(pmclog_ev_proccreate, pl_flags); O(pmclog_ev_proccreate, pl_pcomm);
	S(pmclog_ev_procexec); O(pmclog_ev_procexec, pl_pid);
	O(pmclog_ev_procexec, pl_pmcid); O(pmclog_ev_procexec, pl_baseaddr);
	O(pmclog_ev_procexec, pl_dynaddr); O(pmclog_ev_procexec, pl_pathname);
	S(pmclog_ev_procexit); O(pmclog_ev_procexit, pl_pid);
	O(pmclog_ev_procexit, pl_pmcid); O(pmclog_ev_procexit, pl_value);
	S(pmclog_ev_procfork); O(pmclog_ev_procfork, pl_oldpid);
	O(pmclog_ev_procfork, pl_newpid);
	S(pmclog_ev_sysexit); O(pmclog_ev_sysexit, pl_pid);
	S(pmclog_ev_threadcreate); O(pmclog_ev_threadcreate, pl_tid);
	O(pmclog_ev_threadcreate, pl_pid); O(pmclog_ev_threadcreate, pl_flags);
	O(pmclog_ev_threadcreate, pl_tdname);
	S(pmclog_ev_threadexit); O(pmclog_ev_threadexit, pl_tid);
	S(pmclog_ev_userdata); O(pmclog_ev_userdata, pl_userdata);
	S(pmclog_ev_pcsample); O(pmclog_ev_pcsample, pl_pc);
	O(pmclog_ev_pcsample, pl_pid); O(pmclog_ev_pcsample, pl_tid);
	O(pmclog_ev_pcsample, pl_pmcid); O(pmclog_ev_pcsample, pl_flags);
	O(pmclog_ev_pcsample, pl_usermode);
	S(pmclog_ev); O(pmclog_ev, pl_state); O(pmclog_ev, pl_offset);
	O(pmclog_ev, pl_count); O(pmclog_ev, pl_ts); O(pmclog_ev, pl_type);
	O(pmclog_ev, pl_data); O(pmclog_ev, pl_len); O(pmclog_ev, pl_u);
	return 0;
}
