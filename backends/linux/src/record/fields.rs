//! Walking the variable-length parts of a record: every sample field in
//! record order, `read_format` blocks, registers, and the `sample_id`
//! trailer of non-sample records.

use super::cursor::Cursor;
use super::parser::RecordParser;
use super::views::{
    BranchStack, ReadValue, ReadValues, Regs, SampleFields, SampleId, StackUser, Weight,
};
use crate::attr::{ReadFormat, SampleType};
use crate::error::Result;

impl RecordParser {
    /// The size of the `sample_id` trailer.
    pub(crate) fn sample_id_size(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        let t = self.sample_type;
        [
            SampleType::TID,
            SampleType::TIME,
            SampleType::ID,
            SampleType::STREAM_ID,
            SampleType::CPU,
            SampleType::IDENTIFIER,
        ]
        .iter()
        .filter(|f| t.contains(**f))
        .count()
            * 8
    }

    pub(super) fn sample_id(&self, c: &mut Cursor<'_>) -> Result<SampleId> {
        let mut s = SampleId::default();
        if !self.sample_id_all {
            // Without sample_id_all, non-sample records carry no trailer.
            return Ok(s);
        }
        let t = self.sample_type;
        if t.contains(SampleType::TID) {
            s.pid = Some(c.u32("sample_id pid")?);
            s.tid = Some(c.u32("sample_id tid")?);
        }
        if t.contains(SampleType::TIME) {
            s.time = Some(c.u64("sample_id time")?);
        }
        if t.contains(SampleType::ID) {
            s.id = Some(c.u64("sample_id id")?);
        }
        if t.contains(SampleType::STREAM_ID) {
            s.stream_id = Some(c.u64("sample_id stream_id")?);
        }
        if t.contains(SampleType::CPU) {
            s.cpu = Some(c.u32("sample_id cpu")?);
            c.u32("sample_id res")?;
        }
        if t.contains(SampleType::IDENTIFIER) {
            s.identifier = Some(c.u64("sample_id identifier")?);
        }
        Ok(s)
    }

    pub(super) fn read_values<'a>(&self, c: &mut Cursor<'a>) -> Result<ReadValues<'a>> {
        let f = self.read_format;
        let mut v = ReadValues {
            format: f,
            ..ReadValues::default()
        };
        if f.contains(ReadFormat::GROUP) {
            let nr = c.u64("read nr")?;
            if f.contains(ReadFormat::TOTAL_TIME_ENABLED) {
                v.time_enabled = Some(c.u64("read time_enabled")?);
            }
            if f.contains(ReadFormat::TOTAL_TIME_RUNNING) {
                v.time_running = Some(c.u64("read time_running")?);
            }
            let per = 1
                + usize::from(f.contains(ReadFormat::ID))
                + usize::from(f.contains(ReadFormat::LOST));
            let n = usize::try_from(nr).map_err(|_| c.err("read nr"))?;
            let bytes = n.checked_mul(per * 8).ok_or_else(|| c.err("read values"))?;
            v.entries = c.take(bytes, "read values")?;
            v.nr = n;
        } else {
            let value = c.u64("read value")?;
            if f.contains(ReadFormat::TOTAL_TIME_ENABLED) {
                v.time_enabled = Some(c.u64("read time_enabled")?);
            }
            if f.contains(ReadFormat::TOTAL_TIME_RUNNING) {
                v.time_running = Some(c.u64("read time_running")?);
            }
            let id = if f.contains(ReadFormat::ID) {
                Some(c.u64("read id")?)
            } else {
                None
            };
            let lost = if f.contains(ReadFormat::LOST) {
                Some(c.u64("read lost")?)
            } else {
                None
            };
            v.single = Some(ReadValue { value, id, lost });
        }
        Ok(v)
    }

    pub(super) fn regs<'a>(&self, c: &mut Cursor<'a>, count: u32, what: &str) -> Result<Regs<'a>> {
        let abi = c.u64(what)?;
        let n = if abi == 0 { 0 } else { u64::from(count) };
        Ok(Regs {
            abi,
            regs: c.u64s(n, what)?,
        })
    }

    pub(super) fn sample<'a>(&self, misc: u16, c: &mut Cursor<'a>) -> Result<SampleFields<'a>> {
        let t = self.sample_type;
        let mut s = SampleFields {
            misc,
            ..SampleFields::default()
        };
        if t.contains(SampleType::IDENTIFIER) {
            s.identifier = Some(c.u64("identifier")?);
        }
        if t.contains(SampleType::IP) {
            s.ip = Some(c.u64("ip")?);
        }
        if t.contains(SampleType::TID) {
            s.pid = Some(c.u32("pid")?);
            s.tid = Some(c.u32("tid")?);
        }
        if t.contains(SampleType::TIME) {
            s.time = Some(c.u64("time")?);
        }
        if t.contains(SampleType::ADDR) {
            s.addr = Some(c.u64("addr")?);
        }
        if t.contains(SampleType::ID) {
            s.id = Some(c.u64("id")?);
        }
        if t.contains(SampleType::STREAM_ID) {
            s.stream_id = Some(c.u64("stream_id")?);
        }
        if t.contains(SampleType::CPU) {
            s.cpu = Some(c.u32("cpu")?);
            c.u32("cpu res")?;
        }
        if t.contains(SampleType::PERIOD) {
            s.period = Some(c.u64("period")?);
        }
        if t.contains(SampleType::READ) {
            s.read = Some(self.read_values(c)?);
        }
        if t.contains(SampleType::CALLCHAIN) {
            let nr = c.u64("callchain nr")?;
            s.callchain = Some(c.u64s(nr, "callchain")?);
        }
        if t.contains(SampleType::RAW) {
            let size = c.u32("raw size")?;
            s.raw = Some(c.take(size as usize, "raw data")?);
        }
        if t.contains(SampleType::BRANCH_STACK) {
            let nr = c.u64("branch nr")?;
            let hw_index = if self.branch_hw_index {
                Some(c.u64("branch hw_idx")?)
            } else {
                None
            };
            let bytes = usize::try_from(nr)
                .ok()
                .and_then(|n| n.checked_mul(24))
                .ok_or_else(|| c.err("branch entries"))?;
            s.branch_stack = Some(BranchStack {
                hw_index,
                entries: c.take(bytes, "branch entries")?,
            });
        }
        if t.contains(SampleType::REGS_USER) {
            s.regs_user = Some(self.regs(c, self.regs_user, "regs_user")?);
        }
        if t.contains(SampleType::STACK_USER) {
            let size = c.u64("stack size")?;
            let data = c.take(
                usize::try_from(size).map_err(|_| c.err("stack data"))?,
                "stack data",
            )?;
            let dyn_size = if size > 0 {
                c.u64("stack dyn_size")?
            } else {
                0
            };
            s.stack_user = Some(StackUser { data, dyn_size });
        }
        if t.contains(SampleType::WEIGHT) {
            s.weight = Some(Weight::Full(c.u64("weight")?));
        } else if t.contains(SampleType::WEIGHT_STRUCT) {
            let var1 = c.u32("weight var1")?;
            let var2 = c.u16("weight var2")?;
            let var3 = c.u16("weight var3")?;
            s.weight = Some(Weight::Struct { var1, var2, var3 });
        }
        if t.contains(SampleType::DATA_SRC) {
            s.data_src = Some(c.u64("data_src")?);
        }
        if t.contains(SampleType::TRANSACTION) {
            s.transaction = Some(c.u64("transaction")?);
        }
        if t.contains(SampleType::REGS_INTR) {
            s.regs_intr = Some(self.regs(c, self.regs_intr, "regs_intr")?);
        }
        if t.contains(SampleType::PHYS_ADDR) {
            s.phys_addr = Some(c.u64("phys_addr")?);
        }
        if t.contains(SampleType::CGROUP) {
            s.cgroup = Some(c.u64("cgroup")?);
        }
        if t.contains(SampleType::DATA_PAGE_SIZE) {
            s.data_page_size = Some(c.u64("data_page_size")?);
        }
        if t.contains(SampleType::CODE_PAGE_SIZE) {
            s.code_page_size = Some(c.u64("code_page_size")?);
        }
        if t.contains(SampleType::AUX) {
            let size = c.u64("aux size")?;
            s.aux = Some(c.take(
                usize::try_from(size).map_err(|_| c.err("aux data"))?,
                "aux data",
            )?);
        }
        Ok(s)
    }
}
