//! The machine description resolution reads: every PMU (type id, format
//! fields, event aliases, cpumask, caps), which of them are core PMUs, the
//! `max_precise` they share, the tracefs mount, the CPU's native event
//! table and the names unknown-name errors suggest from.
//!
//! Reading it costs hundreds of microseconds of sysfs reads, so this
//! machine's description is read once and shared ([`system`]); allocating
//! an event then reads nothing from sysfs. It is refreshed when a lookup
//! misses and the PMU directory has changed since (a module loaded or
//! removed a PMU: one directory listing, only on the miss path), or on
//! demand ([`refresh`]). Fixture trees (other roots) get a fresh
//! description per resolution.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use pmc_linux::pmu::{self as lpmu, Pmu};
use pmc_linux::pmu_events::EventTable;
use pmc_linux::tracefs::Tracefs;

use super::Sysfs;

/// What resolution needs to know about a machine's PMUs and tracepoints.
#[derive(Debug)]
pub(crate) struct MachineDescription {
    pmu_root: PathBuf,
    /// Every readable PMU under `pmu_root`, sorted by name.
    pmus: Vec<Pmu>,
    /// The names in `pmu_root` when it was read (including unreadable
    /// entries), to tell whether it changed.
    listed: Vec<String>,
    /// Indices into `pmus` of the core PMUs.
    core: Vec<usize>,
    max_precise: u8,
    /// How many CPUs are online (SYSWIDE/DOMWIDE compare cpumasks with it).
    online: usize,
    /// A fixed tracefs root (fixtures); `None`: locate this machine's.
    tracefs_root: Option<PathBuf>,
    /// This machine's tracefs once located (it may be mounted later, so a
    /// failure is not kept).
    located: Mutex<Option<Tracefs>>,
    cpuid: Option<String>,
    table: Option<Arc<EventTable>>,
    /// Every name the unknown-name error may suggest, built at the first
    /// unknown name.
    known_names: OnceLock<Vec<String>>,
}

impl MachineDescription {
    /// Reads the description of the machine `sysfs` points to.
    pub(crate) fn read(sysfs: &Sysfs) -> MachineDescription {
        let listed = lpmu::pmu_names(&sysfs.pmu_root);
        let pmus: Vec<Pmu> = listed
            .iter()
            .filter_map(|n| Pmu::read(&sysfs.pmu_root.join(n)).ok())
            .collect();
        let core: Vec<usize> = (0..pmus.len()).filter(|&i| pmus[i].is_core()).collect();
        // The lowest of the core PMUs' `caps/max_precise`, so a precise
        // attr opens on each core type of a hybrid machine.
        let max_precise = core
            .iter()
            .map(|&i| pmus[i].caps.get("max_precise").and_then(|v| v.parse().ok()))
            .min()
            .flatten()
            .unwrap_or(0);
        let table = sysfs.cpuid.as_deref().and_then(EventTable::for_cpuid);
        MachineDescription {
            pmu_root: sysfs.pmu_root.to_path_buf(),
            pmus,
            listed,
            core,
            max_precise,
            online: pmc_linux::system::online_cpus().len(),
            tracefs_root: sysfs.tracefs.clone(),
            located: Mutex::new(None),
            cpuid: sysfs.cpuid.as_deref().map(str::to_string),
            table,
            known_names: OnceLock::new(),
        }
    }

    /// The PMU directory this describes.
    pub(crate) fn pmu_root(&self) -> &Path {
        &self.pmu_root
    }

    /// Every PMU, sorted by name.
    pub(crate) fn pmus(&self) -> &[Pmu] {
        &self.pmus
    }

    /// The core PMUs: several on hybrid machines, one (`cpu`) elsewhere,
    /// none without a hardware PMU.
    pub(crate) fn core_pmus(&self) -> impl ExactSizeIterator<Item = &Pmu> + Clone {
        self.core.iter().map(|&i| &self.pmus[i])
    }

    /// Whether `pmu` is one of the core PMUs.
    pub(crate) fn is_core(&self, pmu: &Pmu) -> bool {
        self.core_pmus().any(|c| c.name == pmu.name)
    }

    /// The highest `precise_ip` every core PMU supports.
    pub(crate) fn max_precise(&self) -> u8 {
        self.max_precise
    }

    /// The description with `n` CPUs online (fixture machines have more
    /// CPUs than this one).
    #[cfg(test)]
    pub(crate) fn with_online_cpus(mut self, n: usize) -> MachineDescription {
        self.online = n;
        self
    }

    /// How many CPUs were online when this was read.
    pub(crate) fn online_cpus(&self) -> usize {
        self.online
    }

    /// The PMU called `name`; the error lists the PMUs there (as
    /// `Pmu::find` says it).
    pub(crate) fn pmu(&self, name: &str) -> Result<&Pmu, pmc_linux::Error> {
        if let Ok(i) = self.pmus.binary_search_by(|p| p.name.as_str().cmp(name)) {
            return Ok(&self.pmus[i]);
        }
        Err(pmc_linux::Error::NoSuchPmu {
            name: name.to_string(),
            root: self.pmu_root.display().to_string(),
            closest: pmc_suggest::closest(name, self.listed.iter().map(String::as_str), 5),
            present: self.listed.clone(),
        })
    }

    /// The tracefs to read tracepoint ids from.
    pub(crate) fn tracefs(&self) -> Result<Tracefs, pmc_linux::Error> {
        if let Some(root) = &self.tracefs_root {
            return Ok(Tracefs::at(root.clone()));
        }
        let mut located = self.located.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = located.as_ref() {
            return Ok(t.clone());
        }
        let t = Tracefs::locate()?;
        *located = Some(t.clone());
        Ok(t)
    }

    /// The id of tracepoint `subsystem:event`. Read each time: module
    /// tracepoints get new ids when their module is loaded again, and a
    /// stale id would count another event.
    pub(crate) fn tracepoint_id(
        &self,
        subsystem: &str,
        event: &str,
    ) -> Result<u64, pmc_linux::Error> {
        match self.tracefs()?.tracepoint_id(subsystem, event) {
            Ok(id) => Ok(id),
            // tracefs may have been unmounted since it was located: locate
            // it again, so the error says so rather than "no tracepoint".
            Err(_) if self.tracefs_root.is_none() => {
                *self.located.lock().unwrap_or_else(|p| p.into_inner()) = None;
                self.tracefs()?.tracepoint_id(subsystem, event)
            }
            Err(e) => Err(e),
        }
    }

    /// The CPUID string choosing the native table.
    pub(crate) fn cpuid(&self) -> Option<&str> {
        self.cpuid.as_deref()
    }

    /// The CPU's native event table, if there is one.
    pub(crate) fn table(&self) -> Option<&Arc<EventTable>> {
        self.table.as_ref()
    }

    /// Every name an unknown name is compared with: generic names, PMU
    /// event aliases and the native table's names.
    pub(crate) fn known_names(&self) -> &[String] {
        self.known_names.get_or_init(|| {
            let mut known: Vec<String> = crate::spec::generic_names()
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            for p in &self.pmus {
                known.extend(p.events.iter().map(|e| e.name.clone()));
            }
            if let Some(t) = &self.table {
                known.extend(t.names().map(str::to_string));
            }
            known
        })
    }

    /// Whether the PMU directory lists other names than when this was read.
    fn is_stale(&self) -> bool {
        lpmu::pmu_names(&self.pmu_root) != self.listed
    }
}

/// This machine's shared description.
static SYSTEM: RwLock<Option<Arc<MachineDescription>>> = RwLock::new(None);

/// This machine's description, read at the first call.
pub(crate) fn system() -> Arc<MachineDescription> {
    if let Some(d) = SYSTEM.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
        return d.clone();
    }
    let mut slot = SYSTEM.write().unwrap_or_else(|p| p.into_inner());
    slot.get_or_insert_with(|| Arc::new(MachineDescription::read(&Sysfs::system())))
        .clone()
}

/// This machine's description, re-read first if its PMU directory changed
/// (one directory listing): for listings (`cpuinfo`, event names), which
/// should show a PMU loaded since the first allocation.
pub(crate) fn system_checked() -> Arc<MachineDescription> {
    let d = system();
    refreshed_if_stale(&Sysfs::system(), &d).unwrap_or(d)
}

/// Reads this machine's description again (after loading a PMU driver,
/// say); descriptions already handed out stay as they were.
pub(crate) fn refresh() -> Arc<MachineDescription> {
    let fresh = Arc::new(MachineDescription::read(&Sysfs::system()));
    *SYSTEM.write().unwrap_or_else(|p| p.into_inner()) = Some(fresh.clone());
    fresh
}

/// After a lookup in `current` missed: a fresh description if its PMU
/// directory changed since it was read (the shared one is replaced when
/// `current` is this machine's), else `None`.
pub(crate) fn refreshed_if_stale(
    sysfs: &Sysfs,
    current: &MachineDescription,
) -> Option<Arc<MachineDescription>> {
    if !current.is_stale() {
        return None;
    }
    Some(if sysfs.is_system() {
        refresh()
    } else {
        Arc::new(MachineDescription::read(sysfs))
    })
}
