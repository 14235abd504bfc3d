//! Declares the `pmc_freebsd_check_sys` cfg: it compiles the FreeBSD-only
//! transport (`src/sys.rs`) on other hosts so CI can type-check it with
//! `RUSTFLAGS="--cfg pmc_freebsd_check_sys" cargo check -p hwpmc-freebsd`.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pmc_freebsd_check_sys)");
}
