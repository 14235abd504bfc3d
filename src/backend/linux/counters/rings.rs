//! The rings of a logging target: one per CPU, the other events of that
//! CPU routed into it, and the set that decodes them.

use std::sync::Arc;

use pmc_linux::event::Event;
use pmc_linux::ring::RingBuffer;

use super::OpenPlan;
use crate::Result;
use crate::backend::linux::from_linux;
use crate::backend::linux::sampling::{self, LinuxSource, RingSet, SetPlan};

/// Maps one ring per CPU and routes the other events of that CPU into it;
/// `events` are (cpu, event) pairs. Falls back to smaller rings when the
/// mlock limit refuses the default size.
pub(super) fn map_rings(
    event: &OpenPlan,
    cpus: &[i32],
    events: &Arc<[Event]>,
    siblings: &[(i32, Event)],
    root: Option<(u32, Arc<[Event]>)>,
) -> Result<Option<Arc<LinuxSource>>> {
    let Some(plan) = &event.log else {
        return Ok(None);
    };
    let mut ring_cut_to_kib: Option<usize> = None;
    let mut rings = Vec::new();
    let mut owner_of_cpu: Vec<(i32, usize)> = Vec::new();
    let mut ring_of = Vec::with_capacity(events.len());
    for (i, (cpu, ev)) in cpus.iter().zip(events.iter()).enumerate() {
        if let Some(ring) = owner_of_cpu.iter().position(|(c, _)| c == cpu) {
            ev.set_output(Some(&events[owner_of_cpu[ring].1]))
                .map_err(from_linux)?;
            ring_of.push(ring);
            continue;
        }
        ring_of.push(rings.len());
        let mut pages = plan.pages;
        let ring = loop {
            match RingBuffer::new(ev, pages) {
                Ok(r) => {
                    if pages < plan.pages {
                        let kib = r.data_size() / 1024;
                        ring_cut_to_kib = Some(ring_cut_to_kib.map_or(kib, |k| k.min(kib)));
                    }
                    break r;
                }
                Err(e) if pages > 1 && matches!(e.errno(), libc::EPERM | libc::ENOMEM) => {
                    pages /= 2
                }
                Err(e) => return Err(from_linux(e)),
            }
        };
        rings.push(ring);
        owner_of_cpu.push((*cpu, i));
    }
    for (cpu, sibling) in siblings {
        if let Some((_, owner)) = owner_of_cpu.iter().find(|(c, _)| c == cpu) {
            sibling
                .set_output(Some(&events[*owner]))
                .map_err(from_linux)?;
        }
    }
    let attr = event.attrs.first().copied().unwrap_or_default();
    let writers = sampling::RingEvents {
        events: events.clone(),
        ring_of,
    };
    let set = SetPlan {
        plan,
        attr: &attr,
        writers,
        root,
        slices: event.slices.as_ref(),
        ring_cut_to_kib,
    };
    Ok(Some(RingSet::source(set, rings, &event.shared.collector)?))
}
