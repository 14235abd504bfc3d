//! `PMC_CAP_*` per class: the one function both the PMCs of a class
//! (`pmc_capabilities`) and `cpuinfo`'s class rows use, so they agree.

use pmc_linux::pmu::Pmu;

use super::description::MachineDescription;
use crate::{Capabilities, Class};

/// FreeBSD's software class: `SOFT_CAPS` in `sys/dev/hwpmc/hwpmc_soft.c`
/// (READ | WRITE | INTERRUPT | USER | SYSTEM). perf's software-context
/// events (software, tracepoints, breakpoints, probes) sample and take
/// `exclude_user`/`exclude_kernel` alike.
pub(crate) const SOFT: Capabilities = Capabilities::READ
    .union(Capabilities::WRITE)
    .union(Capabilities::INTERRUPT)
    .union(Capabilities::USER)
    .union(Capabilities::SYSTEM);

/// What the FreeBSD qualifiers `edge`, `inv`, `cmask`/`threshold`,
/// `umask` set when a format field carries them.
const ENCODING: Capabilities = Capabilities::EDGE
    .union(Capabilities::THRESHOLD)
    .union(Capabilities::INVERT)
    .union(Capabilities::QUALIFIER);

/// The capabilities of `class` on the machine `d` describes.
///
/// - software, tracepoint, breakpoint, uprobe, kprobe: [`SOFT`];
/// - hardware and cache (generic events on the core PMU): [`SOFT`], and
///   PRECISE when every core PMU has `caps/max_precise` > 0;
/// - raw and core-PMU events: those of hardware and the encoding
///   qualifiers (they set the core PMU's format fields);
/// - another PMU `pmu/…/`: with a `cpumask` naming some CPUs it is an
///   uncore/system PMU, which perf does not let sample or filter by
///   privilege: READ | WRITE, and SYSWIDE (one CPU for the machine) or
///   DOMWIDE (one per package) as FreeBSD means them; without one it is a
///   per-task PMU like the software ones ([`SOFT`]). Either way the
///   encoding qualifiers when it has `edge` or `cmask` format fields.
///
/// An unknown PMU class has READ | WRITE only.
pub(crate) fn class_capabilities(class: &Class, d: &MachineDescription) -> Capabilities {
    match class {
        Class::Software | Class::Tracepoint | Class::Breakpoint | Class::Uprobe | Class::Kprobe => {
            SOFT
        }
        Class::Hardware | Class::Cache => hardware(d),
        Class::Raw => hardware(d) | ENCODING,
        Class::Pmu(name) => match d.pmu(name) {
            Ok(pmu) => pmu_capabilities(pmu, d),
            Err(_) => Capabilities::READ | Capabilities::WRITE,
        },
    }
}

fn hardware(d: &MachineDescription) -> Capabilities {
    if d.max_precise() > 0 {
        SOFT | Capabilities::PRECISE
    } else {
        SOFT
    }
}

/// The capabilities of the events of one PMU (see [`class_capabilities`]).
pub(crate) fn pmu_capabilities(pmu: &Pmu, d: &MachineDescription) -> Capabilities {
    if d.is_core(pmu) {
        return hardware(d) | ENCODING;
    }
    let encoding = if pmu
        .formats
        .iter()
        .any(|f| f.name == "edge" || f.name == "cmask")
    {
        ENCODING
    } else {
        Capabilities::empty()
    };
    let online = d.online_cpus();
    let scope = match &pmu.cpus {
        None => return SOFT | encoding,
        Some(c) if c.len() == 1 && online > 1 => Capabilities::SYSWIDE,
        Some(c) if c.len() > 1 && c.len() < online => Capabilities::DOMWIDE,
        Some(_) => Capabilities::empty(),
    };
    Capabilities::READ | Capabilities::WRITE | scope | encoding
}
