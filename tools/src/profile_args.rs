//! pmcstat's profile outputs in the formats other tools read: callgrind
//! (`-F`), gprof (`-g` into `-D`), pprof (`--pprof`) and a flame graph
//! (`--flamegraph`), from live sampling or from `-R`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use pmc::log::LogEvent;
use pmc_report::{Profile, ProfileBuilder, ProfileOptions};

/// The profile output options (flattened into pmcstat's arguments).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProfileArgs {
    /// Write the call tree in callgrind format to FILE (KCachegrind,
    /// callgrind_annotate).
    #[arg(short = 'F', value_name = "FILE")]
    pub callgrind: Option<PathBuf>,
    /// Write gprof gmon.out files, one per sampled object and event, under
    /// the -D directory (`DIR/EVENT/OBJECT.gmon`).
    #[arg(short = 'g')]
    pub gprof: bool,
    /// Directory for -g output.
    #[arg(short = 'D', value_name = "DIR", default_value = ".")]
    pub directory: PathBuf,
    /// Write a gzipped pprof profile.proto to FILE (go tool pprof, Parca,
    /// Pyroscope, Grafana).
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// Write an interactive flame graph SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
}

impl ProfileArgs {
    /// Whether any profile output is asked for.
    pub fn any(&self) -> bool {
        self.callgrind.is_some() || self.gprof || self.pprof.is_some() || self.flamegraph.is_some()
    }

    /// Writes the outputs asked for. `period` is the sampling reload count
    /// when known (live sampling), for pprof's event totals. Messages name
    /// the file that failed and why.
    pub fn write(&self, events: &[LogEvent], period: Option<u64>) -> Result<(), String> {
        if !self.any() {
            return Ok(());
        }
        let mut options = ProfileOptions::default();
        if let Some(period) = period {
            for e in events {
                if let pmc::log::LogRecord::PmcAllocateDyn { pmcid, .. } = &e.record {
                    options.periods.insert(*pmcid, period);
                }
            }
        }
        self.write_profile(&Profile::from_events_with(events, &options))
    }

    /// `-R LOG` with reports: streams the log into one profile (memory in
    /// proportion to its distinct stacks, not its size), then writes the
    /// `-G` call graph, the `--folded` stacks and these outputs from it.
    pub fn report_file(
        &self,
        log: &Path,
        callgraph: Option<&Path>,
        folded: Option<&Path>,
    ) -> Result<(), String> {
        let file =
            std::fs::File::open(log).map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let mut builder = ProfileBuilder::new(ProfileOptions::default());
        let reader =
            pmc::log::LogReader::from_reader(std::io::BufReader::with_capacity(1 << 20, file));
        for event in reader {
            match event {
                Ok(event) => builder.push(&event),
                // A log cut short (the writer crashed, the disk filled)
                // still holds every record before the damage: report them.
                Err(e) => {
                    eprintln!(
                        "pmcstat: warning: {}: {e}; reporting the records before it",
                        log.display()
                    );
                    break;
                }
            }
        }
        let profile = builder.finish();
        if let Some(path) = callgraph {
            write_bytes(path, pmc_report::callgraph(&profile).as_bytes())?;
        }
        if let Some(path) = folded {
            write_bytes(path, pmc_report::folded(&profile).as_bytes())?;
        }
        self.write_profile(&profile)
    }

    /// Writes the outputs asked for from a built profile.
    pub fn write_profile(&self, profile: &Profile) -> Result<(), String> {
        if let Some(path) = &self.callgrind {
            write_bytes(path, pmc_report::callgrind(profile, "pmcstat").as_bytes())?;
        }
        if let Some(path) = &self.pprof {
            let mut buf = Vec::new();
            pmc_report::pprof(profile, &mut buf).map_err(|e| format!("{}: {e}", path.display()))?;
            write_bytes(path, &buf)?;
        }
        if let Some(path) = &self.flamegraph {
            let title = profile
                .events
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let mut buf = Vec::new();
            pmc_report::flamegraph(profile, &format!("pmcstat: {title}"), &mut buf)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            write_bytes(path, &buf)?;
        }
        if self.gprof {
            for f in pmc_report::gmon(profile) {
                let path = self.directory.join(&f.relative_path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                }
                write_bytes(&path, &f.bytes)?;
            }
        }
        Ok(())
    }
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let r = if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush())
    } else {
        std::fs::write(path, bytes)
    };
    r.map_err(|e| format!("cannot write {}: {e}", path.display()))
}
