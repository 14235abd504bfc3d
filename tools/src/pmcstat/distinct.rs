//! Every file pmcstat writes is its own: an output that is the `-R` log
//! or another output (`pmcstat -R x.log -G x.log`, `-O F -G F`) is a usage
//! error before anything is opened, as `cp` refuses to copy a file onto
//! itself. `-` (standard output or error) is no file; standard output is
//! refused only where `-R`'s log is what it writes into.

use std::path::Path;
use std::process::ExitCode;

use crate::destination::Identity;
use crate::usage;

use super::TOOL;
use super::options::{Args, wants_report};

/// Each output named, with its option, in the order they are written.
fn outputs(args: &Args) -> Vec<(&'static str, &Path)> {
    let named = [
        ("-O", args.log_out.as_deref()),
        ("-o", args.output.as_deref()),
        ("-G", args.callgraph.as_deref()),
        ("--folded", args.folded.as_deref()),
        ("-m", args.sampled_pcs.as_deref()),
        ("-a", args.annotated.as_deref()),
        ("-F", args.profile.callgrind.as_deref()),
        ("--pprof", args.profile.pprof.as_deref()),
        ("--flamegraph", args.profile.flamegraph.as_deref()),
        (
            "-M",
            args.profile
                .gmon_map
                .as_deref()
                .filter(|_| args.profile.gprof),
        ),
    ];
    named
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path?)))
        .filter(|(_, path)| path.as_os_str() != "-")
        .collect()
}

/// Whether `-R` writes anything to standard output: `-v`'s statistics,
/// an output named `-`, or its dump and `-G -` where no `-o` file takes
/// them.
fn read_log_writes_stdout(args: &Args) -> bool {
    let dash = |p: Option<&Path>| p.is_some_and(|p| p.as_os_str() == "-");
    args.verbose > 0
        || [
            args.folded.as_deref(),
            args.sampled_pcs.as_deref(),
            args.annotated.as_deref(),
            args.profile.callgrind.as_deref(),
            args.profile.pprof.as_deref(),
            args.profile.flamegraph.as_deref(),
        ]
        .into_iter()
        .any(dash)
        || args.output.is_none()
            && (!wants_report(args) && args.log_out.is_none() || dash(args.callgraph.as_deref()))
}

/// Refuses (EX_USAGE) an output that is the `-R` log or another output.
/// A path that cannot be examined (a directory without search
/// permission) is left to the open, which says why.
pub(super) fn check_outputs_distinct(args: &Args) -> Result<(), ExitCode> {
    let identity = |p: &Path| Identity::of(p).ok();
    let mut seen: Vec<(&str, &Path, Identity)> = Vec::new();
    if let Some(log) = args.read_log.as_deref()
        && let Some(id) = identity(log)
    {
        if read_log_writes_stdout(args)
            && let Some(stdout) = standard_output()
            && id.clashes_with(&stdout)
        {
            return Err(usage(
                TOOL,
                &format!(
                    "-R {}: standard output is that same file: a report never writes over its \
                     log; send the output elsewhere",
                    log.display()
                ),
            ));
        }
        seen.push(("-R", log, id));
    }
    for (flag, path) in outputs(args) {
        let Some(id) = identity(path) else { continue };
        if let Some((other, other_path, _)) = seen.iter().find(|(_, _, s)| s.clashes_with(&id)) {
            let why = if *other == "-R" {
                "a report never writes over its log"
            } else {
                "each output needs a file of its own"
            };
            return Err(usage(
                TOOL,
                &format!(
                    "{flag} {} and {other} {} are the same file: {why}; name another file",
                    path.display(),
                    other_path.display()
                ),
            ));
        }
        seen.push((flag, path, id));
    }
    Ok(())
}

/// The file standard output is, if it can be examined.
fn standard_output() -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    let stdout = std::io::stdout();
    let fd = std::os::fd::AsFd::as_fd(&stdout)
        .try_clone_to_owned()
        .ok()?;
    let m = std::fs::File::from(fd).metadata().ok()?;
    Some(Identity::Existing {
        dev: m.dev(),
        ino: m.ino(),
        regular: m.file_type().is_file(),
    })
}
