//! `--listen`: the counting PMCs served to Prometheus. A thread of its own
//! answers `GET /metrics` (tiny_http), reading the PMCs at each scrape
//! (`metrics.rs`); the main thread keeps counting and printing at -w. The
//! server ends with the run.

mod metrics;

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::ExitCode;
use std::sync::Arc;
use std::thread::JoinHandle;

use prometheus_client::registry::Registry;

use crate::gate::HeldCommand;
use crate::sysexits::EX_OSERR;

use super::TOOL;
use super::counting::Counter;
use super::options::Args;
use metrics::{Format, SeriesLabels, Source};

/// `--listen [ADDR:]PORT`: `PORT` or `:PORT` is 127.0.0.1's (a counter
/// server is not opened to the network unless asked), `ADDR:PORT` and
/// `[V6ADDR]:PORT` as given. Port 0 is refused: Prometheus must be told
/// the port.
pub(crate) fn listen_address(text: &str) -> Result<SocketAddr, String> {
    let port_only = text.strip_prefix(':').unwrap_or(text);
    let address = match port_only.parse::<u16>() {
        Ok(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Err(_) => text.parse::<SocketAddr>().map_err(|_| {
            format!(
                "expected PORT, :PORT, ADDR:PORT or [IPv6]:PORT (an IP address, not a host name), got {text:?}"
            )
        })?,
    };
    if address.port() == 0 {
        return Err("port 0: give the port Prometheus is to scrape".into());
    }
    Ok(address)
}

/// Binds `address` before anything runs, so a port in use fails the run
/// before the PMCs start or the command is released.
pub(super) fn bind(address: SocketAddr) -> Result<TcpListener, ExitCode> {
    TcpListener::bind(address).map_err(|e| {
        // "EADDRINUSE: Address already in use": the errno and its text.
        let error = e
            .raw_os_error()
            .map_or_else(|| e.to_string(), |n| nix::errno::Errno::from_raw(n).to_string());
        let what_to_do = match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "another program serves that port (`ss -ltnp 'sport = :{}'` names it): give --listen a free port",
                address.port()
            ),
            std::io::ErrorKind::AddrNotAvailable => {
                "the address is none of this machine's: give --listen one of its addresses, or only the port for 127.0.0.1".into()
            }
            std::io::ErrorKind::PermissionDenied => {
                "ports below 1024 need root or CAP_NET_BIND_SERVICE: give --listen a port from 1024 up".into()
            }
            _ => "give --listen another address or port".into(),
        };
        eprintln!("{TOOL}: cannot listen on {address} (--listen): {error}: {what_to_do}");
        ExitCode::from(EX_OSERR)
    })
}

/// The series of the counting PMCs: `event`, `mode`, and for a process
/// PMC its target's pid and name (the command pmcstat started, or the
/// processes of -t).
pub(super) fn sources(
    counters: &[Counter],
    held: Option<&HeldCommand>,
    args: &Args,
    targets: &[u32],
) -> Vec<Source> {
    let (pids, names): (Vec<u32>, Vec<String>) = match held {
        Some(h) => {
            let program = std::path::Path::new(&args.command[0]);
            let name = program.file_name().unwrap_or(program.as_os_str());
            (vec![h.pid()], vec![name.to_string_lossy().into_owned()])
        }
        None => targets
            .iter()
            .map(|&pid| (pid, super::targets::process_name(pid).unwrap_or_default()))
            .unzip(),
    };
    let join = |items: Vec<String>| Some(items.join(",")).filter(|s| !s.is_empty());
    let pid = join(pids.iter().map(u32::to_string).collect());
    let mut distinct_names = names;
    distinct_names.sort();
    distinct_names.dedup();
    let command = join(distinct_names);
    counters
        .iter()
        .map(|c| {
            let process = c.with_process_pmc(|_| ()).is_some();
            Source {
                labels: SeriesLabels {
                    event: c.spec().to_string(),
                    mode: if process { "TC" } else { "SC" },
                    pid: pid.clone().filter(|_| process),
                    command: command.clone().filter(|_| process),
                    cgroup: c.cgroup.clone(),
                    ..SeriesLabels::default()
                },
                pmcs: c.shared_pmcs(),
            }
        })
        .collect()
}

/// The running server; dropping it stops it (the run is over).
pub(super) struct Exporter {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Serves `sources` on `listener` from a thread of its own.
    pub(super) fn serve(listener: TcpListener, sources: Vec<Source>) -> Result<Exporter, ExitCode> {
        let address = listener.local_addr().ok();
        let server = tiny_http::Server::from_listener(listener, None).map_err(|e| {
            eprintln!("{TOOL}: cannot serve --listen {address:?}: {e}");
            ExitCode::from(EX_OSERR)
        })?;
        let server = Arc::new(server);
        let registry = metrics::registry(sources);
        let serving = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("pmcstat-listen".into())
            .spawn(move || {
                // Ends when `unblock` is called (the iterator's recv fails).
                for request in serving.incoming_requests() {
                    answer(request, &registry);
                }
            })
            .map_err(|e| {
                eprintln!("{TOOL}: cannot start the --listen thread: {e}");
                ExitCode::from(EX_OSERR)
            })?;
        Ok(Exporter {
            server,
            thread: Some(thread),
        })
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            // A panic of the thread was said on standard error already.
            let _ = thread.join();
        }
    }
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>pmcstat</title></head>\
<body><h1>pmcstat</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

/// The format a scrape asks for: OpenMetrics when its Accept header names
/// it (Prometheus's does), else Prometheus's text format.
fn format_asked(request: &tiny_http::Request) -> Format {
    let accepts_openmetrics = request.headers().iter().any(|h| {
        h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
    });
    if accepts_openmetrics {
        Format::OpenMetrics
    } else {
        Format::PrometheusText
    }
}

/// `GET /metrics`, `GET /` (a link to it); 404 for any other path, 405
/// for any other method.
fn answer(request: tiny_http::Request, registry: &Registry) {
    let path = request.url().split('?').next().unwrap_or_default();
    let method = request.method().clone();
    let format = format_asked(&request);
    let (status, content_type, body) = match (&method, path) {
        (tiny_http::Method::Get | tiny_http::Method::Head, "/metrics") => {
            match metrics::scrape(registry, format) {
                Ok(body) => (200, format.content_type(), body),
                Err(_) => (500, "text/plain", "encoding the metrics failed\n".into()),
            }
        }
        (tiny_http::Method::Get | tiny_http::Method::Head, "/") => {
            (200, "text/html; charset=utf-8", INDEX.into())
        }
        (tiny_http::Method::Get | tiny_http::Method::Head, _) => (
            404,
            "text/plain",
            "not found: pmcstat serves /metrics\n".into(),
        ),
        _ => (405, "text/plain", "only GET and HEAD\n".into()),
    };
    let header = tiny_http::Header::from_bytes("Content-Type", content_type)
        .expect("a constant header is valid");
    let response = tiny_http::Response::from_string(body)
        .with_status_code(status)
        .with_header(header);
    // A scraper that hung up: nothing to tell it, the next scrape retries.
    let _ = request.respond(response);
}

#[cfg(test)]
mod tests {
    use super::listen_address;

    #[test]
    fn a_port_alone_is_loopbacks_and_an_address_is_kept() {
        assert_eq!(
            listen_address("9100"),
            Ok("127.0.0.1:9100".parse().unwrap())
        );
        assert_eq!(
            listen_address(":9100"),
            Ok("127.0.0.1:9100".parse().unwrap())
        );
        assert_eq!(
            listen_address("0.0.0.0:9100"),
            Ok("0.0.0.0:9100".parse().unwrap())
        );
        assert_eq!(
            listen_address("[::1]:9100"),
            Ok("[::1]:9100".parse().unwrap())
        );
        assert!(listen_address("localhost:9100").is_err());
        assert!(listen_address("0").is_err());
        assert!(listen_address("70000").is_err());
        assert!(listen_address("").is_err());
    }
}
