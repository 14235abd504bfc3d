//! `pmcstat`: count events of a command, a running process or the whole
//! system, with FreeBSD pmcstat(8)'s options (`pmc_tools::pmcstat`).

fn main() -> std::process::ExitCode {
    pmc_tools::pmcstat::main()
}
