//! Native event names through the system's libpfm4 (feature `libpfm`):
//! `amd64_fam17h::retired_instructions:u`, `inst_retired.any`, … encoded
//! the way libpfm4 knows the CPU, as an [`Attr`].

use std::ffi::CString;

use crate::attr::Attr;
use crate::error::{Error, Result};
use crate::sys::{abi, pfm};

/// Whether libpfm4 initializes here (it knows at least the generic
/// `perf::` events everywhere).
pub fn available() -> Result<()> {
    pfm::initialize().map_err(|why| Error::Unsupported {
        what: "libpfm4".into(),
        why,
    })
}

/// Encodes `name` with libpfm4. Unknown names give libpfm's message.
pub fn encode(name: &str) -> Result<Attr> {
    let cname = CString::new(name).map_err(|_| Error::invalid(name, "contains a NUL byte"))?;
    let mut raw = abi::RawAttr {
        size: abi::ATTR_SIZE_CURRENT,
        ..abi::RawAttr::default()
    };
    pfm::encode(&cname, &mut raw).map_err(|why| Error::Unsupported {
        what: format!("event `{name}` (libpfm4)"),
        why,
    })?;
    // libpfm may write its own (older) struct size; the rest is zero.
    raw.size = abi::ATTR_SIZE_CURRENT;
    Ok(Attr { raw })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_perf_names_encode_everywhere() {
        available().expect("libpfm4 initializes");
        let a = encode("perf::instructions").unwrap();
        assert_eq!(
            (a.type_id(), a.get_config()),
            (0, 1),
            "PERF_TYPE_HARDWARE instructions"
        );
        let a = encode("perf::task-clock").unwrap();
        assert_eq!(
            (a.type_id(), a.get_config()),
            (1, 1),
            "PERF_TYPE_SOFTWARE task-clock"
        );
        let u = encode("perf::instructions:u").unwrap();
        assert!(u.is_set(crate::attr::AttrBit::EXCLUDE_KERNEL));
        let e = encode("no_such_pmu::no_such_event")
            .unwrap_err()
            .to_string();
        assert!(e.contains("libpfm4"), "{e}");
    }

    #[test]
    fn native_names_encode_where_libpfm_knows_the_cpu() {
        // libpfm4 detects the CPU from CPUID, so this works even where the
        // kernel exposes no PMU; other CPUs say what they are not.
        let family = crate::system::cpuid(1, 0).map(|[eax, ..]| {
            let base = (eax >> 8) & 0xf;
            if base == 0xf {
                base + ((eax >> 20) & 0xff)
            } else {
                base
            }
        });
        let amd =
            crate::system::cpuid(0, 0).is_some_and(|[_, ebx, ..]| ebx.to_le_bytes() == *b"Auth");
        match encode("amd64_fam17h::retired_instructions") {
            Ok(a) => assert_eq!((a.type_id(), a.get_config() & 0xff), (4, 0xc0)),
            // Elsewhere the answer is an error naming the event.
            Err(e) => assert!(
                !(amd && family == Some(0x17)) && e.to_string().contains("retired_instructions"),
                "{e}"
            ),
        }
    }
}
