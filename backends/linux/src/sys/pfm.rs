//! libpfm4 (`-lpfm`): native event names → perf_event_attr encodings.
//! Only with the `libpfm` feature.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::abi::RawAttr;

#[link(name = "pfm")]
unsafe extern "C" {
    fn pfm_initialize() -> c_int;
    fn pfm_strerror(code: c_int) -> *const c_char;
    fn pfm_get_os_event_encoding(
        name: *const c_char,
        dfl_plm: c_int,
        os: c_int,
        args: *mut c_void,
    ) -> c_int;
}

/// `pfm_perf_encode_arg_t`.
#[repr(C)]
struct EncodeArg {
    attr: *mut RawAttr,
    fstr: *mut *mut c_char,
    size: usize,
    idx: c_int,
    cpu: c_int,
    flags: c_int,
    pad0: c_int,
}

/// `PFM_OS_PERF_EVENT`.
const OS_PERF_EVENT: c_int = 1;
/// `PFM_PLM0 | PFM_PLM3`: kernel and user, unless the name's modifiers say.
const PLM_ALL: c_int = 0x01 | 0x08;

fn message(code: c_int) -> String {
    // SAFETY: pfm_strerror returns a pointer to a static NUL-terminated
    // string (or NULL) for any code.
    let p = unsafe { pfm_strerror(code) };
    if p.is_null() {
        return format!("libpfm error {code}");
    }
    // SAFETY: non-null, static, NUL-terminated (see above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Initializes libpfm4 once; the error is libpfm's message.
pub(crate) fn initialize() -> Result<(), String> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| {
        // SAFETY: pfm_initialize takes no arguments and may be called once
        // per process (guarded by the OnceLock).
        let ret = unsafe { pfm_initialize() };
        if ret == 0 { Ok(()) } else { Err(message(ret)) }
    })
    .clone()
}

/// Encodes a native event name into `attr` (type, config, config1/2 and
/// the privilege bits its modifiers imply).
pub(crate) fn encode(name: &CStr, attr: &mut RawAttr) -> Result<(), String> {
    initialize()?;
    let mut arg = EncodeArg {
        attr,
        fstr: std::ptr::null_mut(),
        size: std::mem::size_of::<EncodeArg>(),
        idx: 0,
        cpu: 0,
        flags: 0,
        pad0: 0,
    };
    // SAFETY: `name` is NUL-terminated; `arg` is a valid
    // pfm_perf_encode_arg_t whose `attr` points at a zeroed perf_event_attr
    // at least as large as libpfm's (ours is the newest uapi size), and
    // `fstr` is NULL so libpfm allocates nothing for us to free.
    let ret = unsafe {
        pfm_get_os_event_encoding(
            name.as_ptr(),
            PLM_ALL,
            OS_PERF_EVENT,
            (&mut arg as *mut EncodeArg).cast(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(message(ret)) }
}
