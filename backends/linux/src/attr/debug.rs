//! `Debug` for [`Attr`]: every non-zero field by its uapi name.

use std::fmt;

use super::{Attr, AttrBit};

impl fmt::Debug for Attr {
    /// Prints every non-zero field by its uapi name, like `perf -vv`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.raw;
        let mut s = f.debug_struct("Attr");
        s.field("type", &r.type_).field("size", &r.size);
        s.field("config", &format_args!("{:#x}", r.config));
        let nz = |v: u64| v != 0;
        if nz(r.sample_period_or_freq) {
            let name = if self.is_set(AttrBit::FREQ) {
                "sample_freq"
            } else {
                "sample_period"
            };
            s.field(name, &r.sample_period_or_freq);
        }
        if nz(r.sample_type) {
            s.field("sample_type", &self.get_sample_type());
        }
        if nz(r.read_format) {
            s.field("read_format", &self.get_read_format());
        }
        for (name, bit) in AttrBit::ALL {
            let v = bit.get(r.flags);
            if v != 0 {
                s.field(&name.to_ascii_lowercase(), &v);
            }
        }
        for (name, v) in [
            ("wakeup", u64::from(r.wakeup)),
            ("bp_type", u64::from(r.bp_type)),
            ("config1", r.config1),
            ("config2", r.config2),
            ("branch_sample_type", r.branch_sample_type),
            ("sample_regs_user", r.sample_regs_user),
            ("sample_stack_user", u64::from(r.sample_stack_user)),
            ("clockid", r.clockid as u64),
            ("sample_regs_intr", r.sample_regs_intr),
            ("aux_watermark", u64::from(r.aux_watermark)),
            ("sample_max_stack", u64::from(r.sample_max_stack)),
            ("aux_sample_size", u64::from(r.aux_sample_size)),
            ("aux_action", u64::from(r.aux_action)),
            ("sig_data", r.sig_data),
            ("config3", r.config3),
        ] {
            if nz(v) {
                s.field(name, &format_args!("{v:#x}"));
            }
        }
        s.finish()
    }
}
