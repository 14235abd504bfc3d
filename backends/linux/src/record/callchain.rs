//! A `PERF_SAMPLE_CALLCHAIN` split at its context markers.

use super::context;

/// A sample's callchain as kernel and user frames, innermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitCallchain {
    /// The kernel frames.
    pub kernel: Vec<u64>,
    /// The user frames (for a kernel-mode sample, the user stack the
    /// kernel was entered from), up to the first in the kernel half.
    pub user: Vec<u64>,
}

/// Splits a perf callchain at its context markers; frames before the first
/// marker are in the sample's own mode (`user`: `PERF_RECORD_MISC_USER`).
/// Other markers (hypervisor, guest) are dropped with what follows them
/// counted in the mode before. The user part ends at its first frame in
/// the kernel half of the address space (bit 63 set, on x86-64 and arm64):
/// the kernel's frame-pointer walk of a user stack stores whatever
/// `[fp + 8]` holds, and through code that uses the frame register for
/// data that is any word of memory — in a profiler, often a kernel pc it
/// is handling, which a report would print as a kernel frame nobody called.
pub fn split_callchain(user: bool, pcs: impl IntoIterator<Item = u64>) -> SplitCallchain {
    let mut chain = SplitCallchain::default();
    let mut in_user = user;
    let mut user_ended = false;
    for pc in pcs {
        match pc {
            context::KERNEL => in_user = false,
            context::USER => in_user = true,
            pc if pc >= context::MAX => {}
            pc if in_user => {
                user_ended |= pc >= 1 << 63;
                if !user_ended {
                    chain.user.push(pc);
                }
            }
            pc => chain.kernel.push(pc),
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_kernel_and_user_frames() {
        let c = split_callchain(
            false,
            [
                context::KERNEL,
                0xffff_ffff_8100_0010,
                0xffff_ffff_8100_0020,
                context::USER,
                0x5555_0000_1000,
                0x7f00_0000_2000,
            ],
        );
        assert_eq!(c.kernel, vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        assert_eq!(c.user, vec![0x5555_0000_1000, 0x7f00_0000_2000]);
    }

    /// A user chain perf recorded of a process under valgrind, whose
    /// `[rbp + 8]` held a kernel pc: the user frames end before it.
    #[test]
    fn a_user_frame_in_the_kernel_half_ends_the_user_frames() {
        let c = split_callchain(
            true,
            [
                context::USER,
                0x5801_06c2,
                0xffff_ffff_815a_30f4,
                0x5555_0000_1000,
            ],
        );
        assert_eq!(c.user, vec![0x5801_06c2]);
        assert!(c.kernel.is_empty());
        // Non-canonical garbage (valgrind's `0x8ae9_0000_0000_c2c7`) too.
        let c = split_callchain(true, [0x0010_02c2_452e, 0xb98f, 0x8ae9_0000_0000_c2c7]);
        assert_eq!(c.user, vec![0x0010_02c2_452e, 0xb98f]);
    }

    /// A kernel-mode sample: the user stack after the kernel's is cut the
    /// same way; the kernel frames stay.
    #[test]
    fn a_kernel_mode_samples_user_part_is_cut_too() {
        let c = split_callchain(
            false,
            [
                context::KERNEL,
                0xffff_ffff_8100_0010,
                context::USER,
                0x4000_1000,
                0xcccc_cccc_cccc_cccc,
                0x4000_2000,
            ],
        );
        assert_eq!(c.kernel, vec![0xffff_ffff_8100_0010]);
        assert_eq!(c.user, vec![0x4000_1000]);
    }

    /// A word of the user stack equal to a marker (dash keeps -128, which
    /// is `PERF_CONTEXT_KERNEL`) switches the walk's rest to the kernel
    /// part, as perf reads it: the user frames end there.
    #[test]
    fn a_marker_read_from_the_user_stack_ends_the_user_frames() {
        let c = split_callchain(
            true,
            [
                context::USER,
                0x5600_0000_6ec1,
                context::KERNEL,
                0x5600_1000_0a98,
            ],
        );
        assert_eq!(c.user, vec![0x5600_0000_6ec1]);
        assert_eq!(c.kernel, vec![0x5600_1000_0a98]);
    }
}
