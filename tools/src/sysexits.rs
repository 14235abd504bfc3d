//! Exit statuses of FreeBSD's tools: the values of `<sysexits.h>`
//! (FreeBSD `include/sysexits.h`), which pmcstat.c and pmccontrol.c pass to
//! `err(3)`/`errx(3)`/`exit(3)`.

/// Successful termination (`EX_OK`, 0): pmcstat.c ends every normal run
/// with `exit(EX_OK)`.
pub const EX_OK: u8 = 0;
/// Command line usage error (`EX_USAGE`, 64).
pub const EX_USAGE: u8 = 64;
/// Data format error (`EX_DATAERR`, 65): e.g. pmcstat's `-t` regular
/// expression that does not compile, or no target process matching it.
pub const EX_DATAERR: u8 = 65;
/// Cannot open input (`EX_NOINPUT`, 66).
pub const EX_NOINPUT: u8 = 66;
/// Service unavailable (`EX_UNAVAILABLE`, 69): pmcstat.c when `pmc_init`
/// fails.
pub const EX_UNAVAILABLE: u8 = 69;
/// Internal software error (`EX_SOFTWARE`, 70).
pub const EX_SOFTWARE: u8 = 70;
/// System error (`EX_OSERR`, 71): a failing system call (pmc_allocate,
/// pmc_attach, pmc_start, pmc_read, fork/exec …).
pub const EX_OSERR: u8 = 71;
/// Cannot create (user) output file (`EX_CANTCREAT`, 73).
pub const EX_CANTCREAT: u8 = 73;
/// Input/output error (`EX_IOERR`, 74).
pub const EX_IOERR: u8 = 74;
/// Permission denied (`EX_NOPERM`, 77).
pub const EX_NOPERM: u8 = 77;
/// Configuration error (`EX_CONFIG`, 78).
pub const EX_CONFIG: u8 = 78;

/// What a shell reports for a tool killed by SIGPIPE (128 + 13): FreeBSD's
/// pmcstat and pmccontrol leave SIGPIPE at its default, so a closed output
/// pipe ends them with it. Rust programs ignore SIGPIPE; ours exit quietly
/// with this status instead.
pub const CLOSED_PIPE: u8 = 128 + 13;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_sysexits_h() {
        // FreeBSD include/sysexits.h: EX__BASE 64, then in order.
        let table = [
            (EX_OK, 0),
            (EX_USAGE, 64),
            (EX_DATAERR, 65),
            (EX_NOINPUT, 66),
            (EX_UNAVAILABLE, 69),
            (EX_SOFTWARE, 70),
            (EX_OSERR, 71),
            (EX_CANTCREAT, 73),
            (EX_IOERR, 74),
            (EX_NOPERM, 77),
            (EX_CONFIG, 78),
        ];
        for (ours, freebsd) in table {
            assert_eq!(ours, freebsd);
        }
    }
}
