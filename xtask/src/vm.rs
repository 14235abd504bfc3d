//! `cargo xtask test --vm arm64`: the live suite on an emulated PMU.
//!
//! No machine this project runs on has a core PMU, but QEMU's `-cpu
//! max,pmu=on` emulates an Arm PMUv3 (CPU_CYCLES always, INST_RETIRED
//! exactly under `-icount`). This module cross-builds the live test
//! binaries for aarch64, assembles an initramfs from Debian's own arm64
//! packages (the kernel, busybox, glibc, perf as the in-guest oracle, gcc
//! for the C API's programs), boots it, runs the suite inside and tallies
//! it on the host exactly as `cargo xtask test` tallies a host run.
//!
//! The guest mounts this workspace over 9p at the same absolute path, so
//! the paths cargo compiles into the tests (`CARGO_MANIFEST_DIR`,
//! `CARGO_BIN_EXE_*`) hold inside it. Every test's output goes to a file
//! under `target/vm/arm64/out` and to the serial console.
//!
//! Host needs (Debian): `qemu-system-arm`, `gcc-aarch64-linux-gnu`, the
//! `arm64` dpkg architecture (`dpkg --add-architecture arm64 && apt-get
//! update`) and `rustup target add aarch64-unknown-linux-gnu`; each is
//! checked first and named with its fix.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::test::Tally;

mod cpio;

/// The Rust target the guest runs.
const TARGET: &str = "aarch64-unknown-linux-gnu";
/// Debian packages of the guest (with their dependencies): the kernel,
/// a shell, glibc for our dynamically linked tests, perf as the oracle
/// the tests compare with, and a C compiler for the C API's programs.
const PACKAGES: &[&str] = &[
    "linux-image-arm64",
    "busybox-static",
    "libc6",
    "linux-perf",
    "gcc",
    "libc6-dev",
    "pkg-config",
    "binutils",
];
/// Kernel modules the guest loads (in order) to mount the workspace over
/// 9p: Debian builds them as modules.
const MODULES: &[&str] = &[
    "drivers/virtio/virtio_mmio",
    "fs/netfs/netfs",
    "fs/fscache/fscache",
    "net/9p/9pnet",
    "net/9p/9pnet_virtio",
    "fs/9p/9p",
];
/// One run of a test binary in the guest.
struct SuiteRun {
    package: &'static str,
    test: &'static str,
    /// libtest-mimic takes one filter: a target listed with several runs
    /// once per entry.
    filter: Option<&'static str>,
    /// A test this run leaves out (`--skip`): the one another boot runs.
    skip: Option<&'static str>,
    /// The vCPUs of the boot that runs it. One makes INST_RETIRED exact
    /// (see [`boot`]); a test of a thread moving between CPUs needs two.
    cpus: u32,
}

const fn one(package: &'static str, test: &'static str, filter: Option<&'static str>) -> SuiteRun {
    SuiteRun {
        package,
        test,
        filter,
        skip: None,
        cpus: 1,
    }
}

/// The test of a thread moving between CPUs, which the two-vCPU boot runs.
const MOVING_THREAD: &str = "multiplex::pinned_counter_of_a_moving_thread_is_scaled";

/// What the guest runs. The live harnesses and the C suite run whole; of
/// the CLI suite, which needs dozens of host programs the guest lacks, the
/// tests that use the PMU and pmccontrol's comparisons with FreeBSD's
/// (arm64 lists the ARMV8 class). Everything runs on one vCPU but the
/// moving-thread test, which a second boot with two runs.
const SUITE: &[SuiteRun] = &[
    one("hwpmc", "live", None),
    one("hwpmc-linux", "live", None),
    SuiteRun {
        skip: Some(MOVING_THREAD),
        ..one("hwpmc-linux", "multiplex", None)
    },
    one("hwpmc-linux", "ring_alias", None),
    one("hwpmc-linux", "own_threads", None),
    one("hwpmc-tools", "cli", Some("hardware::")),
    one(
        "hwpmc-tools",
        "cli",
        Some("pmcstat::instructions_agree_with_perf_stat"),
    ),
    one("hwpmc-tools", "cli", Some("pmccontrol::freebsd::")),
    one("hwpmc-capi", "c_programs", Some("c::")),
    SuiteRun {
        cpus: 2,
        ..one("hwpmc-linux", "multiplex", Some(MOVING_THREAD))
    },
];

/// Options of the VM run.
#[derive(Debug, Clone)]
pub struct VmArgs {
    /// Give up on a guest that has not finished after this long.
    pub timeout: Duration,
    /// Extra arguments for every test binary (a filter narrows the suite).
    pub test_args: Vec<String>,
}

/// A cross-built test executable and where cargo would run it.
#[derive(Debug)]
struct GuestTest {
    label: String,
    exe: PathBuf,
    dir: PathBuf,
    filter: Option<&'static str>,
    skip: Option<&'static str>,
    cpus: u32,
}

/// Runs the suite in the VM and returns its tally, or why it could not.
pub fn run(args: &VmArgs) -> Result<Tally, String> {
    let workspace = workspace_root()?;
    let work = workspace.join("target/vm/arm64");
    check_host()?;
    let kernel = guest_root(&work)?;
    let tests = cross_build(&workspace)?;
    let out = work.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let initrd = work.join("initrd.cpio");
    let mut boots = Vec::new();
    let mut cpus: Vec<u32> = tests.iter().map(|t| t.cpus).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for n in cpus {
        let these: Vec<&GuestTest> = tests.iter().filter(|t| t.cpus == n).collect();
        let script = guest_script(&work, n, &these, &args.test_args)?;
        boots.push((
            n,
            boot(&workspace, &kernel, &initrd, &script, n, args.timeout)?,
        ));
    }
    let mut tally = Tally::default();
    for t in &tests {
        let log = work.join("out").join(format!("{}.log", t.label));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let failed_before = tally.failed;
        // The guest's log holds both streams (`2>&1`): libtest's lines
        // and the tests' FLAKE lines.
        for line in text.lines() {
            tally.line(line);
            tally.stderr_line(line);
        }
        let status = std::fs::read_to_string(work.join("out").join(format!("{}.status", t.label)))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        // A test binary that never reported (the guest died first) or
        // crashed without libtest's summary is a failure, not silence.
        tally.command_ended(status == Some(0), failed_before);
    }
    for (n, outcome) in &boots {
        println!(
            "vm arm64, {n} vCPU: boot {:.1} s, suite {:.1} s (QEMU {}, -icount shift=0)",
            outcome.boot.as_secs_f64(),
            outcome.suite.as_secs_f64(),
            outcome.qemu_version
        );
        if !outcome.finished {
            tally.failed += 1;
            tally.failures.push(format!(
                "the {n}-vCPU guest did not finish its suite ({})",
                outcome.why_unfinished
            ));
        }
    }
    Ok(tally)
}

fn workspace_root() -> Result<PathBuf, String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here
        .parent()
        .ok_or("xtask has no parent directory")?
        .to_path_buf();
    if root.to_string_lossy().contains(char::is_whitespace) {
        return Err(format!(
            "the workspace path {} has whitespace; the guest's kernel command line cannot carry it",
            root.display()
        ));
    }
    Ok(root)
}

/// Checks the host tools, naming the fix of each one missing.
fn check_host() -> Result<(), String> {
    let mut missing = Vec::new();
    for (program, fix) in [
        ("qemu-system-aarch64", "apt-get install qemu-system-arm"),
        (
            "aarch64-linux-gnu-gcc",
            "apt-get install gcc-aarch64-linux-gnu",
        ),
        ("dpkg-deb", "apt-get install dpkg"),
        (
            "apt-get",
            "a Debian host (apt-get fetches the guest's packages)",
        ),
    ] {
        if !on_path(program) {
            missing.push(format!("{program} (fix: {fix})"));
        }
    }
    let arches =
        output(Command::new("dpkg").arg("--print-foreign-architectures")).unwrap_or_default();
    if !arches.lines().any(|a| a.trim() == "arm64") {
        missing.push(
            "the arm64 dpkg architecture (fix: dpkg --add-architecture arm64 && apt-get update)"
                .into(),
        );
    }
    let targets =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if !targets.lines().any(|t| t.trim() == TARGET) {
        missing.push(format!(
            "the Rust target {TARGET} (fix: rustup target add {TARGET})"
        ));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("the VM run needs: {}", missing.join("; ")))
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::inherit()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_checked(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Fetches the guest's packages (cached under `work/debs`), unpacks them
/// and writes `work/initrd.cpio` when the package set or the init script
/// changed. Returns the kernel image.
fn guest_root(work: &Path) -> Result<PathBuf, String> {
    let debs = work.join("debs");
    std::fs::create_dir_all(debs.join("partial"))
        .map_err(|e| format!("create {}: {e}", debs.display()))?;
    // apt computes the closure as for an empty arm64 system (an empty
    // status file) and only downloads: nothing is installed on the host.
    let status = work.join("dpkg-status");
    std::fs::write(&status, "").map_err(|e| format!("write {}: {e}", status.display()))?;
    let started = Instant::now();
    run_checked(
        Command::new("apt-get")
            .args(["-qq", "-y", "--download-only", "--no-install-recommends"])
            .arg(format!("-oDir::State::status={}", status.display()))
            .arg(format!("-oDir::Cache::archives={}", debs.display()))
            .args([
                "-oAPT::Architecture=arm64",
                "-oAPT::Architectures::=arm64",
                "-oDebug::NoLocking=1",
                "install",
            ])
            .args(PACKAGES),
        "apt-get download of the guest's arm64 packages",
    )?;
    let mut names: Vec<String> = std::fs::read_dir(&debs)
        .map_err(|e| format!("read {}: {e}", debs.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".deb"))
        .collect();
    names.sort();
    // Old versions stay in the cache after an upgrade: keep the newest of
    // each package (apt names them package_version_arch.deb).
    let mut newest: std::collections::BTreeMap<String, String> = Default::default();
    for n in &names {
        let package = n.split('_').next().unwrap_or(n).to_string();
        let keep = newest.get(&package).is_none_or(|old| {
            let cmp = Command::new("dpkg")
                .args(["--compare-versions", version_of(n), "gt", version_of(old)])
                .status();
            cmp.is_ok_and(|s| s.success())
        });
        if keep {
            newest.insert(package, n.clone());
        }
    }
    let stamp_text = format!(
        "{}\n{}\n{}\nlayout 3",
        newest.values().cloned().collect::<Vec<_>>().join("\n"),
        INIT,
        MODULES.join(",")
    );
    let stamp = work.join("initrd.stamp");
    let initrd = work.join("initrd.cpio");
    let root = work.join("root");
    let kernel = work.join("vmlinuz");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(&stamp_text)
        && initrd.exists()
        && kernel.exists()
    {
        println!("vm: guest root cached ({} packages)", newest.len());
        return Ok(kernel);
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| format!("create {}: {e}", root.display()))?;
    for deb in newest.values() {
        run_checked(
            Command::new("dpkg-deb")
                .arg("-x")
                .arg(debs.join(deb))
                .arg(&root),
            &format!("dpkg-deb -x {deb}"),
        )?;
    }
    let boot = root.join("boot");
    let vmlinuz = std::fs::read_dir(&boot)
        .map_err(|e| format!("read {}: {e}", boot.display()))?
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
        .ok_or("linux-image-arm64 unpacked no /boot/vmlinuz-*")?
        .path();
    std::fs::copy(&vmlinuz, &kernel).map_err(|e| format!("copy the kernel: {e}"))?;
    // Only the 9p modules stay: the rest of /lib/modules is 300 MB.
    let modules = root.join("lib/modules");
    let release = std::fs::read_dir(&modules)
        .map_err(|e| format!("read {}: {e}", modules.display()))?
        .filter_map(|e| e.ok())
        .next()
        .ok_or("the kernel package has no /lib/modules")?
        .path();
    let kept = work.join("modules");
    let _ = std::fs::remove_dir_all(&kept);
    std::fs::create_dir_all(&kept).map_err(|e| format!("create {}: {e}", kept.display()))?;
    for m in MODULES {
        let from = release.join("kernel").join(format!("{m}.ko"));
        let name = Path::new(m).file_name().unwrap_or_default();
        std::fs::copy(&from, kept.join(name).with_extension("ko"))
            .map_err(|e| format!("copy {}: {e}", from.display()))?;
    }
    std::fs::remove_dir_all(&modules).map_err(|e| format!("remove {}: {e}", modules.display()))?;
    std::fs::create_dir_all(&modules).map_err(|e| format!("create {}: {e}", modules.display()))?;
    std::fs::rename(&kept, modules.join(release.file_name().unwrap_or_default()))
        .map_err(|e| format!("move the modules: {e}"))?;
    for dir in [
        "boot",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/locale",
        "usr/share/info",
    ] {
        let _ = std::fs::remove_dir_all(root.join(dir));
    }
    for dir in ["proc", "sys", "dev", "tmp", "root", "run", "usr/local/bin"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| format!("create /{dir}: {e}"))?;
    }
    let _ = std::fs::remove_file(root.join("bin/sh"));
    std::os::unix::fs::symlink("busybox", root.join("bin/sh"))
        .map_err(|e| format!("link /bin/sh: {e}"))?;
    // update-alternatives would make these in an installed system; the
    // C API's tests call `cc`.
    for (link, to) in [("usr/bin/cc", "gcc"), ("usr/bin/c++", "g++")] {
        if !root.join(link).exists() && root.join("usr/bin").join(to).exists() {
            std::os::unix::fs::symlink(to, root.join(link))
                .map_err(|e| format!("link /{link}: {e}"))?;
        }
    }
    // Tests run as root and look users up (the matrix's `nobody`).
    std::fs::create_dir_all(root.join("etc")).map_err(|e| format!("create /etc: {e}"))?;
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
    )
    .map_err(|e| format!("write /etc/passwd: {e}"))?;
    std::fs::write(root.join("etc/group"), "root:x:0:\nnogroup:x:65534:\n")
        .map_err(|e| format!("write /etc/group: {e}"))?;
    write_executable(&root.join("init"), INIT)?;
    let started_cpio = Instant::now();
    cpio::write_tree(&root, &initrd).map_err(|e| format!("write {}: {e}", initrd.display()))?;
    std::fs::write(&stamp, stamp_text).map_err(|e| format!("write {}: {e}", stamp.display()))?;
    println!(
        "vm: guest root of {} packages (fetch {:.1} s, initramfs {:.1} s, {} MB)",
        newest.len(),
        started_cpio.duration_since(started).as_secs_f64(),
        started_cpio.elapsed().as_secs_f64(),
        std::fs::metadata(&initrd).map_or(0, |m| m.len() >> 20)
    );
    Ok(kernel)
}

fn version_of(deb: &str) -> &str {
    deb.split('_').nth(1).unwrap_or("0")
}

fn write_executable(path: &Path, text: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

/// The guest's init: mounts what the tests need, the workspace over 9p at
/// the path the kernel command line names, runs the suite script there,
/// and powers off. `pmc.booted` marks the end of the boot for the host's
/// timing; the script's own markers end the suite.
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /usr/local/bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
for m in virtio_mmio netfs fscache 9pnet 9pnet_virtio 9p; do insmod /lib/modules/*/$m.ko || echo "pmc.error: insmod $m"; done
for arg in $(cat /proc/cmdline); do
  case "$arg" in pmc.workspace=*) workspace=${arg#pmc.workspace=} ;; pmc.script=*) script=${arg#pmc.script=} ;; esac
done
mkdir -p "$workspace"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose host "$workspace" || echo "pmc.error: mount the workspace"
ifconfig lo 127.0.0.1 up
echo "pmc.booted $(uname -r) $(ls /sys/bus/event_source/devices | tr '\n' ' ')"
sh "$script"
echo "pmc.finished $?"
sync
poweroff -f
"#;

/// Cross-builds the suite's test binaries for aarch64 (and, as their
/// dependencies, pmcstat, pmccontrol and libpmc).
fn cross_build(workspace: &Path) -> Result<Vec<GuestTest>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    // Optimized (with debug assertions kept): under emulation a debug
    // build's loops retire ~20× the instructions; the 200 M-iteration
    // workloads of the instruction tests would take minutes each. Only the
    // target's artifacts change (build scripts keep their own profile).
    cmd.current_dir(workspace)
        .env("CARGO_PROFILE_DEV_OPT_LEVEL", "1")
        .args([
            "test",
            "--no-run",
            "--message-format=json-render-diagnostics",
            "--target",
            TARGET,
        ]);
    let mut seen = std::collections::BTreeSet::new();
    for run in SUITE {
        if seen.insert((run.package, run.test)) {
            cmd.args(["-p", run.package, "--test", run.test]);
        }
    }
    println!("vm: cross-building the suite for {TARGET}");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cross-building the suite for {TARGET} failed"));
    }
    let mut tests = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] != true {
            continue;
        }
        let (Some(exe), Some(name)) = (msg["executable"].as_str(), msg["target"]["name"].as_str())
        else {
            continue;
        };
        let manifest = Path::new(msg["manifest_path"].as_str().unwrap_or("."));
        let package = package_name(manifest);
        for (i, run) in SUITE.iter().enumerate() {
            if run.test == name
                && msg["target"]["kind"][0] == "test"
                && package.as_deref() == Some(run.package)
            {
                tests.push(GuestTest {
                    label: format!("{i:02}-{}-{}", run.package, run.test),
                    exe: exe.into(),
                    dir: manifest.parent().unwrap_or(workspace).to_path_buf(),
                    filter: run.filter,
                    skip: run.skip,
                    cpus: run.cpus,
                });
            }
        }
    }
    tests.sort_by(|a, b| a.label.cmp(&b.label));
    if tests.len() != SUITE.len() {
        return Err(format!(
            "cargo built {} of the {} test runs the VM suite names: {:?}",
            tests.len(),
            SUITE.len(),
            tests.iter().map(|t| &t.label).collect::<Vec<_>>()
        ));
    }
    Ok(tests)
}

/// The `name` of a manifest's `[package]`.
fn package_name(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let package = text.split("[package]").nth(1)?;
    package.lines().find_map(|l| {
        let v = l
            .trim()
            .strip_prefix("name")?
            .trim_start()
            .strip_prefix('=')?;
        Some(v.trim().trim_matches('"').to_string())
    })
}

/// Writes the script a guest with `cpus` vCPUs runs: each test binary
/// from its package's directory, its output to the console and to
/// `out/LABEL.log`, its exit status to `out/LABEL.status`.
fn guest_script(
    work: &Path,
    cpus: u32,
    tests: &[&GuestTest],
    extra: &[String],
) -> Result<PathBuf, String> {
    let out = work.join("out");
    let mut s = String::from(
        "# Written by cargo xtask test --vm arm64; run by the guest's init.\n\
         set -o pipefail\n\
         # CI's kind of machine: paranoid 2 (Debian's kernel defaults to 3).\n\
         echo 2 > /proc/sys/kernel/perf_event_paranoid\n\
         # No address-space randomization: with -icount a program then retires\n\
         # the same instructions every run, and perf stat shows it.\n\
         echo 0 > /proc/sys/kernel/randomize_va_space\n\
         status=0\n",
    );
    if cpus == 1 {
        // One vCPU under -icount: the PMU counts instructions exactly, and
        // the tests that can compare exactly do (tools/tests/cli/hardware.rs).
        s.push_str("export PMC_TEST_ICOUNT=1\n");
    }
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    for t in tests {
        let mut args: Vec<String> = Vec::new();
        if let Some(f) = t.filter {
            args.push(format!("'{f}'"));
        }
        if let Some(skip) = t.skip {
            args.push(format!("--skip '{skip}'"));
        }
        args.extend(
            extra
                .iter()
                .map(|a| format!("'{}'", a.replace('\'', r"'\''"))),
        );
        let log = out.join(format!("{}.log", t.label));
        s.push_str(&format!(
            "echo 'pmc.run {label}'\n\
             (cd {dir} && CARGO_MANIFEST_DIR={dir} {exe} {args}) 2>&1 | tee {log}\n\
             rc=$?; echo $rc > {status}; [ $rc = 0 ] || status=1\n",
            label = t.label,
            dir = quote(&t.dir),
            exe = quote(&t.exe),
            args = args.join(" "),
            log = quote(&log),
            status = quote(&out.join(format!("{}.status", t.label))),
        ));
    }
    s.push_str("exit $status\n");
    let script = work.join(format!("suite-{cpus}cpu.sh"));
    write_executable(&script, &s)?;
    Ok(script)
}

/// What the boot gave.
#[derive(Debug)]
struct Outcome {
    boot: Duration,
    suite: Duration,
    finished: bool,
    why_unfinished: String,
    qemu_version: String,
}

/// Boots the guest, echoing its console, until it powers off or `timeout`.
fn boot(
    workspace: &Path,
    kernel: &Path,
    initrd: &Path,
    script: &Path,
    cpus: u32,
    timeout: Duration,
) -> Result<Outcome, String> {
    let qemu_version = output(Command::new("qemu-system-aarch64").arg("--version"))
        .and_then(|v| {
            v.lines()
                .next()
                .map(|l| l.trim_start_matches("QEMU emulator version ").to_string())
        })
        .unwrap_or_else(|| "?".into());
    let mut child = Command::new("qemu-system-aarch64")
        .args([
            "-M",
            "virt",
            "-cpu",
            "max,pmu=on",
            "-smp",
            &cpus.to_string(),
            "-m",
            "4096",
        ])
        // INST_RETIRED counts only under -icount, and from the icount
        // clock, which all vCPUs advance: with two, a counter of one vCPU
        // also gains what the other runs while it waits its round-robin
        // turn (hundreds to ~100 000 instructions per 20 M, measured). One
        // vCPU makes it exact, at no cost in speed (-icount runs every
        // vCPU on one host thread anyway); the suite's second boot, with
        // two, is for the test that needs a thread to move.
        .args(["-icount", "shift=0"])
        .args([
            "-nographic",
            "-no-reboot",
            "-nic",
            "none",
            "-serial",
            "stdio",
            "-monitor",
            "none",
        ])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(format!(
            "console=ttyAMA0 quiet loglevel=3 panic=-1 pmc.workspace={} pmc.script={}",
            workspace.display(),
            script.display()
        ))
        .args(["-device", "virtio-9p-device,fsdev=ws,mount_tag=host"])
        .arg("-fsdev")
        .arg(format!(
            "local,id=ws,path={},security_model=none",
            workspace.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("start qemu-system-aarch64: {e}"))?;
    let started = Instant::now();
    let stdout = child.stdout.take().ok_or("qemu has no stdout")?;
    // The console is read on a thread so the timeout holds while it is silent.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n').map_while(Result::ok) {
            let line = String::from_utf8_lossy(&line)
                .trim_end_matches('\r')
                .to_string();
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut booted = None;
    let mut finished = None;
    let mut errors = Vec::new();
    let mut stdout = std::io::stdout();
    let why_unfinished = loop {
        let left = timeout.saturating_sub(started.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let _ = writeln!(stdout, "{line}");
                if line.starts_with("pmc.booted") {
                    booted = Some(started.elapsed());
                } else if line.starts_with("pmc.finished") {
                    finished = Some(started.elapsed());
                } else if let Some(e) = line.strip_prefix("pmc.error: ") {
                    errors.push(e.to_string());
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                break format!("killed after {} s", timeout.as_secs());
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break match child.wait() {
                    Ok(s) if finished.is_some() => format!("{s}"),
                    Ok(s) => format!("QEMU exited ({s}) before the suite finished"),
                    Err(e) => format!("wait for QEMU: {e}"),
                };
            }
        }
    };
    let _ = child.wait();
    let _ = reader.join();
    if !errors.is_empty() {
        return Err(format!(
            "the guest could not start the suite: {}",
            errors.join("; ")
        ));
    }
    let boot = booted.ok_or_else(|| format!("the guest never booted: {why_unfinished}"))?;
    Ok(Outcome {
        boot,
        suite: finished
            .unwrap_or_else(|| started.elapsed())
            .saturating_sub(boot),
        finished: finished.is_some(),
        why_unfinished,
        qemu_version,
    })
}
