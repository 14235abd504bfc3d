//! The Rust side's `sizeof`/`offsetof` of the C structs, in the format of
//! `tests/layout_freebsd_amd64.txt` (checked by this module's test against
//! that file, as `tests/c/layout.c` is for the headers).

use std::mem::{offset_of, size_of};

use crate::types::*;

macro_rules! rows {
    ($out:ident, $t:ident, $($f:ident),*) => {
        $out.push(format!("sizeof {} {}", stringify!($t), size_of::<$t>()));
        $(
            $out.push(format!(
                "offsetof {} {} {}",
                stringify!($t),
                stringify!($f),
                offset_of!($t, $f)
            ));
        )*
    };
}

/// Every line this crate's structs give.
pub fn rust_layout() -> Vec<String> {
    let mut v = Vec::new();
    rows!(v, pmc_classinfo, pm_class, pm_caps, pm_width, pm_num);
    rows!(
        v,
        pmc_cpuinfo,
        pm_cputype,
        pm_ncpu,
        pm_npmc,
        pm_nclass,
        pm_classes
    );
    rows!(
        v,
        pmc_info,
        pm_name,
        pm_class,
        pm_enabled,
        pm_rowdisp,
        pm_ownerpid,
        pm_mode,
        pm_event,
        pm_flags,
        pm_reloadcount
    );
    rows!(v, pmc_pmcinfo, pm_cpu, pm_pmcs);
    rows!(
        v,
        pmc_driverstats,
        pm_intr_ignored,
        pm_intr_processed,
        pm_intr_bufferfull,
        pm_syscalls,
        pm_syscall_errors,
        pm_buffer_requests,
        pm_buffer_requests_failed,
        pm_log_sweeps
    );
    rows!(
        v,
        pmclog_ev_callchain,
        pl_pid,
        pl_tid,
        pl_pmcid,
        pl_cpuflags,
        pl_cpuflags2,
        pl_npc,
        pl_pc
    );
    rows!(
        v,
        pmclog_ev_initialize,
        pl_version,
        pl_arch,
        pl_tsc_freq,
        pl_ts,
        pl_cpuid
    );
    rows!(v, pmclog_ev_map_in, pl_pid, pl_start, pl_pathname);
    rows!(v, pmclog_ev_map_out, pl_pid, pl_start, pl_end);
    rows!(
        v,
        pmclog_ev_pmcallocate,
        pl_evname,
        pl_rate,
        pl_event,
        pl_flags,
        pl_pmcid
    );
    rows!(
        v,
        pmclog_ev_pmcallocatedyn,
        pl_evname,
        pl_event,
        pl_flags,
        pl_pmcid
    );
    rows!(v, pmclog_ev_pmcattach, pl_pmcid, pl_pid, pl_pathname);
    rows!(v, pmclog_ev_pmcdetach, pl_pmcid, pl_pid);
    rows!(v, pmclog_ev_proccsw, pl_pid, pl_tid, pl_pmcid, pl_value);
    rows!(v, pmclog_ev_proccreate, pl_pid, pl_flags, pl_pcomm);
    rows!(
        v,
        pmclog_ev_procexec,
        pl_pid,
        pl_pmcid,
        pl_baseaddr,
        pl_dynaddr,
        pl_pathname
    );
    rows!(v, pmclog_ev_procexit, pl_pid, pl_pmcid, pl_value);
    rows!(v, pmclog_ev_procfork, pl_oldpid, pl_newpid);
    rows!(v, pmclog_ev_sysexit, pl_pid);
    rows!(
        v,
        pmclog_ev_threadcreate,
        pl_tid,
        pl_pid,
        pl_flags,
        pl_tdname
    );
    rows!(v, pmclog_ev_threadexit, pl_tid);
    rows!(v, pmclog_ev_userdata, pl_userdata);
    rows!(
        v,
        pmc_md_amd_op_pmcallocate,
        pm_amd_config,
        pm_amd_sub_class
    );
    rows!(v, pmc_md_iap_op_pmcallocate, pm_iap_config, pm_iap_rsp);
    v.push(format!(
        "sizeof pmc_md_op_pmcallocate {}",
        size_of::<pmc_md_op_pmcallocate>()
    ));
    rows!(
        v,
        pmc_op_pmcallocate,
        pm_caps,
        pm_cpu,
        pm_class,
        pm_ev,
        pm_flags,
        pm_mode,
        pm_pmcid,
        pm_count,
        pm_md
    );
    rows!(
        v, pmclog_ev, pl_state, pl_offset, pl_count, pl_ts, pl_type, pl_data, pl_len, pl_u
    );
    v
}

/// The `sizeof`/`offsetof` lines of a layout file (comments and blank
/// lines dropped).
pub fn parse_layout(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn rust_structs_have_freebsd_amd64_layout() {
        let expected = parse_layout(include_str!("../tests/layout_freebsd_amd64.txt"));
        let ours = rust_layout();
        let missing: Vec<_> = ours.iter().filter(|l| !expected.contains(l)).collect();
        assert!(
            missing.is_empty(),
            "Rust layout lines that differ from FreeBSD amd64: {missing:#?}"
        );
        // Everything FreeBSD has is here except what Rust does not model:
        // the empty structs, pcsample (not in pmclog_ev's union), the
        // operations' arguments other than PMCALLOCATE's (no hwpmc system
        // call here), the uncore MD structs, and the raw records (pl_data
        // hands C the bytes as read).
        let not_modelled = |l: &str| {
            let name = l.split_whitespace().nth(1).unwrap_or("");
            name == "pmclog_ev_pcsample"
                || name.starts_with("pmc_md_uc")
                || (name.starts_with("pmc_op_") && name != "pmc_op_pmcallocate")
                || name.starts_with("pmc_dyn_")
                || (name.starts_with("pmclog_") && !name.starts_with("pmclog_ev"))
        };
        let uncovered: Vec<_> = expected
            .iter()
            .filter(|l| !ours.contains(l) && !not_modelled(l))
            .collect();
        assert!(
            uncovered.is_empty(),
            "not checked on the Rust side: {uncovered:#?}"
        );
    }
}
