//! Decoding every record type but samples (the sample_id trailer sits at
//! the end of each).

use super::cursor::{Cursor, c_str};
use super::decoded::Record;
use super::parser::RecordParser;
use super::views::FileId;
use super::{kind, misc};
use crate::error::{Error, Result};

impl RecordParser {
    /// Every record but samples.
    #[inline]
    pub(super) fn parse_other<'a>(
        &self,
        record_type: u32,
        misc: u16,
        body: &'a [u8],
        offset: usize,
    ) -> Result<Record<'a>> {
        // Non-sample records: the sample_id trailer sits at the end.
        let trailer = self.sample_id_size();
        let known = (kind::MMAP..=kind::AUX_OUTPUT_HW_ID).contains(&record_type);
        if !known {
            return Ok(Record::Unknown {
                record_type,
                misc,
                body,
            });
        }
        if body.len() < trailer {
            return Err(Error::invalid(
                format!("record at byte {offset}"),
                "too short for its sample_id trailer",
            ));
        }
        let (main, tail) = body.split_at(body.len() - trailer);
        let sample_id = self.sample_id(&mut Cursor {
            bytes: tail,
            pos: 0,
            base: offset + 8 + main.len(),
            record: offset,
        })?;
        let mut c = Cursor {
            bytes: main,
            pos: 0,
            base: offset + 8,
            record: offset,
        };
        let bit13 = misc & misc::BIT13 != 0;
        let bit14 = misc & misc::BIT14 != 0;
        Ok(match record_type {
            kind::MMAP => Record::Mmap {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                addr: c.u64("addr")?,
                len: c.u64("len")?,
                pgoff: c.u64("pgoff")?,
                filename: c_str(c.rest()),
                data: bit13,
                sample_id,
            },
            kind::LOST => Record::Lost {
                id: c.u64("id")?,
                lost: c.u64("lost")?,
                sample_id,
            },
            kind::COMM => Record::Comm {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                comm: c_str(c.rest()),
                exec: bit13,
                sample_id,
            },
            kind::EXIT | kind::FORK => {
                let (pid, ppid, tid, ptid) =
                    (c.u32("pid")?, c.u32("ppid")?, c.u32("tid")?, c.u32("ptid")?);
                let time = c.u64("time")?;
                if record_type == kind::EXIT {
                    Record::Exit {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                        sample_id,
                    }
                } else {
                    Record::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                        sample_id,
                    }
                }
            }
            kind::THROTTLE | kind::UNTHROTTLE => {
                let (time, id, stream_id) = (c.u64("time")?, c.u64("id")?, c.u64("stream_id")?);
                if record_type == kind::THROTTLE {
                    Record::Throttle {
                        time,
                        id,
                        stream_id,
                        sample_id,
                    }
                } else {
                    Record::Unthrottle {
                        time,
                        id,
                        stream_id,
                        sample_id,
                    }
                }
            }
            kind::READ => Record::Read {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                values: self.read_values(&mut c)?,
                sample_id,
            },
            kind::MMAP2 => {
                let (pid, tid) = (c.u32("pid")?, c.u32("tid")?);
                let (addr, len, pgoff) = (c.u64("addr")?, c.u64("len")?, c.u64("pgoff")?);
                let file = if bit14 {
                    let size = c.take(1, "build_id_size")?[0];
                    c.take(3, "reserved")?;
                    let id = c.take(20, "build_id")?;
                    FileId::BuildId(&id[..usize::from(size).min(20)])
                } else {
                    FileId::Inode {
                        maj: c.u32("maj")?,
                        min: c.u32("min")?,
                        ino: c.u64("ino")?,
                        ino_generation: c.u64("ino_generation")?,
                    }
                };
                Record::Mmap2 {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    file,
                    prot: c.u32("prot")?,
                    flags: c.u32("flags")?,
                    filename: c_str(c.rest()),
                    sample_id,
                }
            }
            kind::AUX => Record::Aux {
                aux_offset: c.u64("aux_offset")?,
                aux_size: c.u64("aux_size")?,
                flags: c.u64("flags")?,
                sample_id,
            },
            kind::ITRACE_START => Record::ItraceStart {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                sample_id,
            },
            kind::LOST_SAMPLES => Record::LostSamples {
                lost: c.u64("lost")?,
                sample_id,
            },
            kind::SWITCH => Record::Switch {
                out: bit13,
                preempt: bit14,
                sample_id,
            },
            kind::SWITCH_CPU_WIDE => Record::SwitchCpuWide {
                next_prev_pid: c.u32("next_prev_pid")?,
                next_prev_tid: c.u32("next_prev_tid")?,
                out: bit13,
                preempt: bit14,
                sample_id,
            },
            kind::NAMESPACES => {
                let (pid, tid) = (c.u32("pid")?, c.u32("tid")?);
                let nr = c.u64("nr_namespaces")?;
                Record::Namespaces {
                    pid,
                    tid,
                    namespaces: c.u64s(
                        nr.checked_mul(2).ok_or_else(|| c.err("namespaces"))?,
                        "namespaces",
                    )?,
                    sample_id,
                }
            }
            kind::KSYMBOL => Record::Ksymbol {
                addr: c.u64("addr")?,
                len: c.u32("len")?,
                ksym_type: c.u16("ksym_type")?,
                flags: c.u16("flags")?,
                name: c_str(c.rest()),
                sample_id,
            },
            kind::BPF_EVENT => {
                let event_type = c.u16("type")?;
                let flags = c.u16("flags")?;
                let id = c.u32("id")?;
                let t = c.take(8, "tag")?;
                Record::BpfEvent {
                    event_type,
                    flags,
                    id,
                    tag: [t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]],
                    sample_id,
                }
            }
            kind::CGROUP => Record::Cgroup {
                id: c.u64("id")?,
                path: c_str(c.rest()),
                sample_id,
            },
            kind::TEXT_POKE => {
                let addr = c.u64("addr")?;
                let old_len = c.u16("old_len")?;
                let new_len = c.u16("new_len")?;
                let n = usize::from(old_len) + usize::from(new_len);
                Record::TextPoke {
                    addr,
                    old_len,
                    new_len,
                    bytes: c.take(n, "text_poke bytes")?,
                    sample_id,
                }
            }
            _ => Record::AuxOutputHwId {
                hw_id: c.u64("hw_id")?,
                sample_id,
            },
        })
    }
}
