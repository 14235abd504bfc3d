//! Gives libpmc.so its SONAME and writes `libpmc.pc` next to the libraries
//! (target/<profile>/pkgconfig/), where `PKG_CONFIG_PATH=target/release/pkgconfig
//! pkg-config --cflags --libs libpmc` finds it right after `cargo build
//! --release -p hwpmc-capi`. `cargo xtask install` fills the same template
//! (pkgconfig/libpmc.pc.in) with the installed paths. OUT_DIR is
//! target/<profile>/build/hwpmc-capi-*/out, three levels below.

use std::path::{Path, PathBuf};

/// The major version of libpmc's ABI: FreeBSD's libpmc.so.5, whose
/// functions and structures pmc.h declares.
const SONAME: &str = "libpmc.so.5";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=pkgconfig/libpmc.pc.in");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(os.as_str(), "linux" | "freebsd" | "android") {
        // Programs linked with -lpmc then record libpmc.so.5 (the file the
        // install names so, with libpmc.so a symlink for the linker).
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(libdir) = out.ancestors().nth(3).map(Path::to_path_buf) else {
        return;
    };
    // The name the SONAME gives programs at run time, beside the libraries
    // the build leaves in <profile>/ and (for `cargo test`) <profile>/deps/.
    for dir in [libdir.clone(), libdir.join("deps")] {
        let link = dir.join(SONAME);
        if std::fs::read_link(&link).is_err() && std::fs::create_dir_all(&dir).is_ok() {
            let _ = std::os::unix::fs::symlink("libpmc.so", &link);
        }
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let template = std::fs::read_to_string(manifest.join("pkgconfig/libpmc.pc.in"))
        .expect("capi/pkgconfig/libpmc.pc.in is part of the package");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let pc = template
        .replace("@LIBDIR@", &libdir.display().to_string())
        .replace(
            "@INCLUDEDIR@",
            &manifest.join("include").display().to_string(),
        )
        .replace("@VERSION@", &version);
    let dir = libdir.join("pkgconfig");
    if std::fs::create_dir_all(&dir).is_ok() {
        let path = dir.join("libpmc.pc");
        // Rewrite only on change, so the file's mtime means something.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(pc.as_str()) {
            let _ = std::fs::write(path, pc);
        }
    }
}
