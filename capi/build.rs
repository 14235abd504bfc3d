//! Writes `libpmc.pc` next to the libraries (target/<profile>/pkgconfig/),
//! where `PKG_CONFIG_PATH=target/release/pkgconfig pkg-config --cflags
//! --libs libpmc` finds it right after `cargo build --release -p pmc-capi`.
//! OUT_DIR is target/<profile>/build/pmc-capi-*/out, three levels below.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(libdir) = out.ancestors().nth(3).map(Path::to_path_buf) else {
        return;
    };
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // What a static link needs besides libpmc.a (rustc --print
    // native-static-libs for a std staticlib on Linux).
    let pc = format!(
        "libdir={}\nincludedir={}\n\nName: libpmc\nDescription: FreeBSD libpmc (pmc(3), pmclog(3)) over Linux perf_event\nVersion: {version}\nCflags: -I${{includedir}}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lpmc\nLibs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc\n",
        libdir.display(),
        include.display()
    );
    let dir = libdir.join("pkgconfig");
    if std::fs::create_dir_all(&dir).is_ok() {
        let path = dir.join("libpmc.pc");
        // Rewrite only on change, so the file's mtime means something.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(pc.as_str()) {
            let _ = std::fs::write(path, pc);
        }
    }
}
