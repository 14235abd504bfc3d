use pmc::Reading;
use prometheus_client::registry::Registry;

use super::{Format, Observed, SeriesLabels, scrape};

fn reading(value: u64, enabled: u64, running: u64) -> Reading {
    Reading {
        value,
        raw: value,
        time_enabled: enabled,
        time_running: running,
        multiplexed: running < enabled,
    }
}

fn body_of(observed: Observed) -> String {
    body_as(observed, Format::OpenMetrics)
}

fn body_as(observed: Observed, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(observed));
    scrape(&registry, format).expect("a String takes every write")
}

fn system(event: &str, cpu: u32) -> SeriesLabels {
    SeriesLabels {
        event: event.into(),
        mode: "SC",
        cpu: Some(cpu),
        ..Default::default()
    }
}

#[test]
fn a_system_pmc_has_a_counter_per_cpu_with_its_times_and_up() {
    let body = body_of(Observed {
        series: vec![
            (
                system("cpu-clock", 0),
                Some(reading(1_000, 2_000_000_000, 1_000_000_000)),
            ),
            (system("cpu-clock", 1), Some(reading(7, 5, 5))),
        ],
        lost_samples: 3,
    });
    let lines: Vec<&str> = body.lines().collect();
    for want in [
        r#"pmc_events_total{event="cpu-clock",mode="SC",cpu="0"} 1000"#,
        r#"pmc_events_total{event="cpu-clock",mode="SC",cpu="1"} 7"#,
        r#"pmc_enabled_seconds_total{event="cpu-clock",mode="SC",cpu="0"} 2.0"#,
        r#"pmc_running_seconds_total{event="cpu-clock",mode="SC",cpu="0"} 1.0"#,
        r#"pmc_up{event="cpu-clock",mode="SC",cpu="1"} 1"#,
        "pmc_lost_samples_total 3",
        "# TYPE pmc_events counter",
        "# TYPE pmc_enabled_seconds counter",
        "# UNIT pmc_enabled_seconds seconds",
        "# TYPE pmc_up gauge",
    ] {
        assert!(lines.contains(&want), "no line {want:?} in\n{body}");
    }
    assert_eq!(lines.last(), Some(&"# EOF"), "{body}");
    assert!(body.ends_with("# EOF\n"), "{body:?}");
}

#[test]
fn a_process_pmc_has_pid_and_command_and_no_cpu() {
    let labels = SeriesLabels {
        event: "instructions,usr".into(),
        mode: "TC",
        pid: Some("4242".into()),
        command: Some("make".into()),
        ..Default::default()
    };
    let body = body_of(Observed {
        series: vec![(labels, Some(reading(12, 1, 1)))],
        lost_samples: 0,
    });
    assert!(
        body.contains(
            r#"pmc_events_total{event="instructions,usr",mode="TC",pid="4242",command="make"} 12"#
        ),
        "{body}"
    );
    assert!(!body.contains("cpu="), "{body}");
}

#[test]
fn the_cgroup_slot_is_one_more_label() {
    let labels = SeriesLabels {
        cgroup: Some("/sys/fs/cgroup/web".into()),
        ..system("cycles", 0)
    };
    let body = body_of(Observed {
        series: vec![(labels, Some(reading(1, 1, 1)))],
        lost_samples: 0,
    });
    assert!(
        body.contains(
            r#"pmc_events_total{event="cycles",mode="SC",cpu="0",cgroup="/sys/fs/cgroup/web"} 1"#
        ),
        "{body}"
    );
}

#[test]
fn label_values_are_escaped() {
    let labels = SeriesLabels {
        event: "cpu-clock".into(),
        mode: "TC",
        pid: Some("1".into()),
        command: Some("a \"quoted\" back\\slash\nnewline".into()),
        ..Default::default()
    };
    let body = body_of(Observed {
        series: vec![(labels, Some(reading(1, 1, 1)))],
        lost_samples: 0,
    });
    assert!(
        body.contains(r#"command="a \"quoted\" back\\slash\nnewline"} 1"#),
        "{body}"
    );
    // The raw newline never reaches the body: every line is a whole one.
    assert!(
        body.lines()
            .all(|l| l.starts_with('#') || l.starts_with("pmc_")),
        "{body}"
    );
}

#[test]
fn a_pmc_that_did_not_read_is_down_with_no_count() {
    let body = body_of(Observed {
        series: vec![
            (system("cycles", 0), None),
            (system("cycles", 1), Some(reading(5, 1, 1))),
        ],
        lost_samples: 0,
    });
    assert!(
        body.contains(r#"pmc_up{event="cycles",mode="SC",cpu="0"} 0"#),
        "{body}"
    );
    assert!(
        body.contains(r#"pmc_up{event="cycles",mode="SC",cpu="1"} 1"#),
        "{body}"
    );
    assert!(
        !body.contains(r#"pmc_events_total{event="cycles",mode="SC",cpu="0"}"#),
        "{body}"
    );
    assert!(
        body.contains(r#"pmc_events_total{event="cycles",mode="SC",cpu="1"} 5"#),
        "{body}"
    );
}

#[test]
fn prometheus_text_names_each_family_by_its_samples_and_has_no_eof() {
    let body = body_as(
        Observed {
            series: vec![(system("cpu-clock", 0), Some(reading(9, 1, 1)))],
            lost_samples: 0,
        },
        Format::PrometheusText,
    );
    for want in [
        "# TYPE pmc_events_total counter",
        r#"pmc_events_total{event="cpu-clock",mode="SC",cpu="0"} 9"#,
        "# TYPE pmc_enabled_seconds_total counter",
        "# TYPE pmc_up gauge",
    ] {
        assert!(
            body.lines().any(|l| l == want),
            "no line {want:?} in\n{body}"
        );
    }
    assert!(!body.contains("# EOF"), "{body}");
}
