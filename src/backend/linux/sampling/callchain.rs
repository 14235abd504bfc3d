//! A perf callchain as the log's kernel and user frames.

use crate::backend::event::Callchain;

/// Splits a perf callchain at its context markers (frames before the first
/// marker are in the sample's own mode, `user`), the user part ending at
/// its first frame in the kernel half: `pmc_linux::record::split_callchain`,
/// which `pmcstat -R perf.data` reads perf's chains with too.
pub(super) fn split(user: bool, pcs: impl IntoIterator<Item = u64>) -> Callchain {
    let chain = pmc_linux::record::split_callchain(user, pcs);
    Callchain {
        kernel: chain.kernel,
        user: chain.user,
    }
}
