//! The images an exec maps, placed from PROCEXEC.

use std::collections::HashMap;
use std::sync::Arc;

use super::{DebugFiles, ObjectInfo};

/// Where an exec places the program and its run-time linker, as
/// libpmcstat_process.c `pmcstat_process_elf_exec` does: `(MAP_IN start,
/// path)` of each. hwpmc logs no MAP_IN for either (exec maps them, not
/// mmap), so PROCEXEC is all a FreeBSD log says of them. FreeBSD 14 and
/// later (`pl_base`, `pl_dyn`): the program at its link address plus
/// `pl_dyn`, the run-time linker at `pl_base`. FreeBSD 12–13 (`pl_start`,
/// the run-time linker's entry point): the program at its link address,
/// the run-time linker at `pl_start` less its `e_entry`.
pub(super) fn exec_images(
    objects: &mut HashMap<Arc<str>, Option<ObjectInfo>>,
    notes: &mut DebugFiles,
    version: u32,
    path: &str,
    base: u64,
    dynaddr: u64,
) -> Vec<(u64, Arc<str>)> {
    let mut load = |path: &str| -> Option<ExecImage> {
        let key: Arc<str> = Arc::from(path);
        let o = objects
            .entry(key.clone())
            .or_insert_with(|| ObjectInfo::load(path, notes))
            .as_ref()?;
        Some(ExecImage {
            entry: o.entry,
            interpreter: o.interpreter.clone(),
            unrelocated_start: o.start_at_bias(0).unwrap_or(0),
            // Linked at 0, a PIE is where the kernel put it, never at 0.
            linked_where_loaded: !o.position_independent
                || o.segments.iter().all(|(_, _, vaddr)| *vaddr != 0),
            path: key,
        })
    };
    let mut out = Vec::new();
    let Some(program) = load(path) else {
        return out;
    };
    let since_14 = version >> 24 >= pmc::log::PMC_VERSION >> 24;
    let program_bias = if since_14 { dynaddr } else { 0 };
    // A PIE linked at 0 and left there: the log did not know its address.
    if program.linked_where_loaded || program_bias != 0 {
        out.push((
            program.unrelocated_start.wrapping_add(program_bias),
            program.path.clone(),
        ));
    }
    // A relative PT_INTERP would be resolved against the reader's
    // directory: the kernel refuses it, and so does the object opener.
    if let Some(interpreter) = program.interpreter
        && base != 0
        && interpreter.starts_with('/')
    {
        // The kernel logs the file it opened; name it as the kernel does.
        let resolved = std::fs::canonicalize(&interpreter)
            .map(|p| p.display().to_string())
            .unwrap_or(interpreter);
        if let Some(rtld) = load(&resolved) {
            let bias = if since_14 {
                base
            } else {
                base.wrapping_sub(rtld.entry)
            };
            out.push((rtld.unrelocated_start.wrapping_add(bias), rtld.path));
        }
    }
    out
}

/// What placing an exec'd object needs of it.
struct ExecImage {
    path: Arc<str>,
    entry: u64,
    interpreter: Option<String>,
    /// Its MAP_IN start at its link addresses.
    unrelocated_start: u64,
    /// Fixed-address, or position-independent but linked above 0.
    linked_where_loaded: bool,
}
