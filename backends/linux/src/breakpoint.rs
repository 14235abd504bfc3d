//! Hardware breakpoints (`PERF_TYPE_BREAKPOINT`), validated before the
//! kernel sees them so that a bad length or alignment gets a precise error
//! rather than a bare EINVAL.

use crate::attr::{BreakpointAccess, EventConfig};
use crate::error::{Error, Result};

/// The length the kernel requires for execute breakpoints on this
/// architecture (`sizeof(long)`).
pub const EXECUTE_LEN: u64 = std::mem::size_of::<usize>() as u64;

/// The data-breakpoint length perf uses when none is given.
pub const DEFAULT_DATA_LEN: u64 = 4;

/// A validated breakpoint event: `len` 1, 2, 4 or 8 and `addr` aligned to
/// it for data breakpoints; [`EXECUTE_LEN`] for execute breakpoints.
/// `len: None` picks the default for the access type.
pub fn breakpoint(access: BreakpointAccess, addr: u64, len: Option<u64>) -> Result<EventConfig> {
    let len = match (access, len) {
        (BreakpointAccess::Execute, None) => EXECUTE_LEN,
        (BreakpointAccess::Execute, Some(l)) if l == EXECUTE_LEN => l,
        (BreakpointAccess::Execute, Some(l)) => {
            return Err(Error::invalid(
                "breakpoint length",
                format!(
                    "an execute breakpoint covers one instruction address and must be \
                     {EXECUTE_LEN} bytes on this architecture, not {l}"
                ),
            ));
        }
        (_, None) => DEFAULT_DATA_LEN,
        (_, Some(l @ (1 | 2 | 4 | 8))) => l,
        (_, Some(l)) => {
            return Err(Error::invalid(
                "breakpoint length",
                format!("a data breakpoint watches 1, 2, 4 or 8 bytes, not {l}"),
            ));
        }
    };
    if access != BreakpointAccess::Execute && !addr.is_multiple_of(len) {
        return Err(Error::invalid(
            "breakpoint address",
            format!(
                "{addr:#x} is not aligned to the {len}-byte length; watch {:#x}/{len} or use a \
                 smaller length",
                addr - addr % len
            ),
        ));
    }
    if cfg!(target_arch = "x86_64") && access == BreakpointAccess::Read {
        return Err(Error::invalid(
            "breakpoint access",
            "x86 debug registers cannot trigger on reads alone; use `rw` (read or write)",
        ));
    }
    Ok(EventConfig::Breakpoint { access, addr, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_alignment_are_checked() {
        use BreakpointAccess::*;
        assert_eq!(
            breakpoint(Write, 0x1000, None).unwrap(),
            EventConfig::Breakpoint {
                access: Write,
                addr: 0x1000,
                len: 4
            }
        );
        assert_eq!(
            breakpoint(Execute, 0x1001, None).unwrap(),
            EventConfig::Breakpoint {
                access: Execute,
                addr: 0x1001,
                len: EXECUTE_LEN
            }
        );
        for len in [1, 2, 4, 8] {
            assert!(breakpoint(ReadWrite, 0x1000, Some(len)).is_ok(), "{len}");
        }
        let e = breakpoint(Write, 0x1000, Some(3)).unwrap_err();
        assert!(e.to_string().contains("1, 2, 4 or 8"), "{e}");
        let e = breakpoint(Write, 0x1004, Some(8)).unwrap_err();
        assert!(e.to_string().contains("0x1000/8"), "{e}");
        let e = breakpoint(Execute, 0x1000, Some(4)).unwrap_err();
        assert!(e.to_string().contains("execute"), "{e}");
        if cfg!(target_arch = "x86_64") {
            assert!(breakpoint(Read, 0x1000, Some(8)).is_err());
        }
    }
}
