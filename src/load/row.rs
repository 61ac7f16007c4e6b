//! A load run as a result row: its rates, latency, errors by kind and verdict, and (HTTP) its
//! statuses and open-loop figures; and the wrk-style summary `load http` prints.

use serde_json::{Map, Value};

use super::{LoadPlan, LoadReport, Mode, LATE_BOUND, SATURATED_SHARE};
use crate::measure::Measured;
use crate::row::params::{Param, Params};
use crate::row::SyscallSource;
use crate::row::{Row, LATE_SHARE_LIMIT};
use crate::stats::per_second;

/// The result row of one load run. `server` is the server's own measurement over the window
/// when there was one (the study, or `--server-pid`).
pub fn load_row(
    engine: &str,
    mut params: Map<String, Value>,
    run: u32,
    plan: &LoadPlan,
    report: &LoadReport,
    server: Option<&Measured>,
) -> Row {
    add_plan_params(&mut params, plan);
    let bytes = report.bytes;
    let workload = if plan.mode == Mode::Http {
        "http"
    } else {
        "echo"
    };
    let mut row = Row {
        workload: workload.into(),
        engine: engine.into(),
        params,
        run,
        seconds: report.seconds,
        ops: report.messages,
        bytes,
        ops_per_sec: per_second(report.messages as f64, report.seconds),
        bytes_per_sec: per_second(bytes as f64, report.seconds),
        syscalls_source: SyscallSource::Unmeasured,
        verified: report.messages > 0 && report.errors.mismatch == 0 && held_all(report),
        errors: report.errors.total(),
        client_cpu_user_s: Some(report.client_usage.cpu_user_s),
        client_cpu_sys_s: Some(report.client_usage.cpu_sys_s),
        client_syscalls: report.client_syscalls,
        client_ctx_switches_voluntary: Some(report.client_usage.ctx_switches_voluntary),
        client_ctx_switches_involuntary: Some(report.client_usage.ctx_switches_involuntary),
        client_saturated: Some(report.saturated_threads > 0),
        window_start_unix_s: report.window.map(|(start, _)| unix_seconds(start)),
        window_end_unix_s: report.window.map(|(_, end)| unix_seconds(end)),
        ..Row::default()
    };
    if let Some(planned) = report.cut_short_of {
        row.notes.push(format!(
            "{} a signal (Ctrl-C or SIGTERM) ended this run {:.1} s into its {:.1} s \
             window; its figures cover those seconds",
            crate::row::PARTIAL_NOTE,
            report.seconds,
            planned.as_secs_f64()
        ));
    }
    if plan.mode == Mode::Stream {
        // Streams have no round trips: ops are payload-sized stretches echoed.
        row.ops = bytes / plan.payload_bytes as u64;
        row.ops_per_sec = per_second(row.ops as f64, report.seconds);
        // A stream always has bytes out, so one that times out stalled: bytes the server
        // received were never echoed (a paused slow reader is not timed).
        let errors = &report.errors;
        row.verified = bytes > 0 && errors.mismatch == 0 && errors.timeout == 0 && held_all(report);
    } else {
        row.set_latency(&report.latency_ns);
    }
    if plan.mode == Mode::Http {
        add_http_fields(&mut row, report);
    }
    add_open_loop_fields(&mut row, plan, report);
    add_errors(&mut row, plan, report);
    match server {
        Some(measured) => row.set_server_costs(measured),
        None => row.notes.push(SERVER_NOT_MEASURED_NOTE.into()),
    }
    if plan.mode == Mode::Stream {
        row.set_per_megabyte();
    }
    row
}

/// The note of a load run that measured no server (a study whose load ran on other hosts
/// measures the server itself, and leaves it out).
pub const SERVER_NOT_MEASURED_NOTE: &str =
    "server not measured: pass --server-pid to count its syscalls and CPU";

/// Seconds since the Unix epoch (0 for a time before it).
fn unix_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// The plan's parameters every row of the run carries.
fn add_plan_params(params: &mut Map<String, Value>, plan: &LoadPlan) {
    params.put(Param::Connections, plan.connections);
    if plan.mode != Mode::Http {
        params.put(Param::PayloadBytes, plan.payload_bytes);
    }
    params.put(Param::ClientThreads, plan.threads);
    params.put(Param::Sched, plan.sched.name());
    params.put(Param::Mode, plan.mode.name());
    if let Some(rate) = plan.read_bytes_per_sec {
        params.put(Param::ReadBytesPerSec, rate);
    }
    if let Some(bytes) = plan.rcvbuf_bytes {
        params.put(Param::RcvbufBytes, bytes);
    }
    if plan.mode == Mode::Stream {
        params.put(Param::WindowBytes, plan.window_bytes);
    }
}

/// Whether the run held what it says it measured: every connection connected, none was lost
/// without cause (reset, or closed with an answer awaited, rather than closed in order after
/// one), and some were still open when the window closed (else the server went away mid-run).
fn held_all(report: &LoadReport) -> bool {
    let errors = &report.errors;
    errors.connect == 0 && lost(report) == 0 && report.connections_open_at_end > 0
}

/// Connections lost without cause: reset or closed while an answer was awaited, or whose send
/// failed.
fn lost(report: &LoadReport) -> u64 {
    report.errors.reset + report.errors.write
}

/// The error counts by kind, and the notes that explain them and a saturated client.
fn add_errors(row: &mut Row, plan: &LoadPlan, report: &LoadReport) {
    let errors = report.errors;
    if errors.connect > 0 {
        row.unverified_because(format!(
            "{} of {} connections could not connect within --timeout (a server \
             that accepts one connection at a time, or a full listen queue): the run did not \
             hold {} connections",
            errors.connect, plan.connections, plan.connections
        ));
    }
    if lost(report) > 0 {
        let awaited = match plan.mode {
            Mode::Http => "a response was awaited (not an orderly HTTP close after one)",
            _ => "an echo was awaited",
        };
        row.unverified_because(format!(
            "{} connections were lost without cause: reset, or closed while {awaited}, or their \
             send failed; the run did not hold its {} connections",
            lost(report),
            plan.connections
        ));
    }
    if report.connections_open_at_end == 0 {
        row.unverified_because(
            "every connection was closed or reset before the window ended (did the server \
             die?): the figures cover only the time before"
                .into(),
        );
    }
    // HTTP rows always say their socket errors, under wrk's names too (`read`: a connection
    // reset or closed while a response was awaited, the same count as `reset`).
    if errors.total() > 0 || plan.mode == Mode::Http {
        for (kind, count) in [
            ("connect", errors.connect),
            ("reset", errors.reset),
            ("write", errors.write),
            ("timeout", errors.timeout),
            ("mismatch", errors.mismatch),
        ] {
            row.error_counts.insert(kind.into(), Value::from(count));
        }
        if plan.mode == Mode::Http {
            row.error_counts
                .insert("read".into(), Value::from(errors.reset));
        }
    }
    if errors.total() > 0 {
        row.notes.push(format!(
            "{} errors: {} connect, {} reset or closed while reading, {} failed sends, {} timed \
             out after the --timeout, {} answers that differed from what was sent or could not \
             be framed",
            errors.total(),
            errors.connect,
            errors.reset,
            errors.write,
            errors.timeout,
            errors.mismatch
        ));
    }
    if errors.mismatch > 0 {
        row.unverified_because(format!(
            "{} answers came back with different bytes or broken framing",
            errors.mismatch
        ));
    }
    if row.ops == 0 && row.unverified_reason.is_none() {
        let window = report.seconds;
        row.unverified_because(format!(
            "no answer completed in the {window:.2} s window: every connection was still waiting \
             for its first (a server that stalled, or a machine too busy to run it)"
        ));
    }
    if plan.mode == Mode::Stream && errors.timeout > 0 {
        row.unverified_because(format!(
            "{} streams stalled: bytes sent were not echoed within --timeout",
            errors.timeout
        ));
    }
    if report.saturated_threads > 0 && plan.rate_per_sec.is_none() {
        row.notes.push(format!(
            "client saturated: {} of {} load threads were on CPU for >= {:.0}% of the window, \
             so the client may have set the pace (try --threads)",
            report.saturated_threads,
            plan.threads.min(plan.connections),
            SATURATED_SHARE * 100.0
        ));
    }
}

/// What the generic table leaves out of an HTTP row, laid out as wrk prints it: the latency
/// distribution (corrected and uncorrected side by side in an open loop), statuses, errors.
pub fn http_summary(row: &Row) -> String {
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |ns| format!("{:.3}", ns as f64 / 1e6));
    let mut text = format!("requests/s {:.0}", row.ops_per_sec);
    if let (Some(target), Some(late)) = (row.ops_per_sec_target, row.ops_late) {
        text.push_str(&format!(" (target {target:.0}, {late} sent late)"));
    }
    text.push_str("\nlatency ms      p50      p90      p99    p99.9      max\n");
    let mut lines = vec![(
        if row.ops_per_sec_target.is_some() {
            "corrected"
        } else {
            ""
        },
        [
            row.latency_ns_p50,
            row.latency_ns_p90,
            row.latency_ns_p99,
            row.latency_ns_p999,
        ],
        row.latency_ns_max,
    )];
    if row.ops_per_sec_target.is_some() {
        lines.push((
            "uncorrected",
            [
                row.latency_uncorrected_ns_p50,
                row.latency_uncorrected_ns_p90,
                row.latency_uncorrected_ns_p99,
                row.latency_uncorrected_ns_p999,
            ],
            row.latency_uncorrected_ns_max,
        ));
    }
    for (label, quantiles, max) in lines {
        text.push_str(&format!("{label:<11}"));
        for value in quantiles.into_iter().chain([max]) {
            text.push_str(&format!(" {:>8}", ms(value)));
        }
        text.push('\n');
    }
    let statuses: Vec<String> = row
        .status_counts
        .iter()
        .map(|(status, count)| format!("{status}: {count}"))
        .collect();
    text.push_str(&format!("statuses {}\n", statuses.join(", ")));
    let count = |kind: &str| {
        row.error_counts
            .get(kind)
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    text.push_str(&format!(
        "socket errors: connect {}, read {}, write {}, timeout {}; unframeable responses {}\n",
        count("connect"),
        count("reset"),
        count("write"),
        count("timeout"),
        count("mismatch")
    ));
    if let Some(reconnects) = row.reconnects.filter(|&count| count > 0) {
        text.push_str(&format!(
            "reconnects {reconnects}: the server closed connections in order after an answer, \
             and new ones took their place\n"
        ));
    }
    text
}

/// The HTTP run's own fields: its status counts and reconnects.
fn add_http_fields(row: &mut Row, report: &LoadReport) {
    row.reconnects = Some(report.reconnects);
    let mut not_ok = 0;
    for (status, &count) in report.status_counts.iter().enumerate() {
        if count > 0 {
            row.status_counts
                .insert(status.to_string(), Value::from(count));
            not_ok += count * u64::from(!(200..300).contains(&status));
        }
    }
    if not_ok > 0 {
        row.unverified_because(format!("{not_ok} responses had a status other than 2xx"));
    }
}

/// An open loop's fields: the rate offered, the late sends and the uncorrected latency beside
/// the corrected one; its client counts as saturated when too many sends were late (it may
/// read ≥ 90% CPU while still sending on time, so CPU is not its signal).
fn add_open_loop_fields(row: &mut Row, plan: &LoadPlan, report: &LoadReport) {
    let Some(rate) = plan.rate_per_sec else {
        return;
    };
    row.params.put(Param::RatePerSec, rate);
    row.ops_per_sec_target = Some(rate);
    row.offered_rate = Some(rate);
    row.ops_late = Some(report.late);
    row.client_sends = Some(report.sends);
    let late_share = match report.sends {
        0 => 0.0,
        sends => report.sends_late as f64 / sends as f64,
    };
    row.client_late_share = Some(late_share);
    row.client_saturated = Some(late_share > LATE_SHARE_LIMIT);
    row.set_latency_uncorrected(&report.latency_uncorrected_ns);
    if row.open_loop_fell_behind() == Some(true) {
        row.notes.push(format!(
            "open loop fell behind: {:.0}/s achieved of {rate:.0}/s offered, {:.1}% of sends \
             more than {LATE_BOUND:?} behind their due time ({} due while their connection still \
             awaited an answer); latency counts from each message's due time",
            row.ops_per_sec,
            late_share * 100.0,
            report.late
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{HttpLoad, LoadErrors, STATUS_CODES, STREAM_WINDOW_BYTES};
    use crate::measure::Usage;
    use crate::system::tuning::Sched;
    use std::net::SocketAddr;
    use std::time::Duration;

    fn plan() -> LoadPlan {
        LoadPlan {
            target: SocketAddr::from(([127, 0, 0, 1], 1)),
            connections: 2,
            payload_bytes: 64,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            threads: 1,
            timeout: Duration::from_secs(1),
            cpus: Vec::new(),
            sched: Sched::Other,
            mode: Mode::PingPong,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
            rate_per_sec: None,
            start_at: None,
        }
    }

    fn report(messages: u64, errors: LoadErrors) -> LoadReport {
        let mut latency_ns = crate::stats::histogram::new_latency();
        for value in 1..=1000u64 {
            latency_ns.record(value * 1000).unwrap();
        }
        LoadReport {
            seconds: 2.0,
            window: None,
            messages,
            bytes: messages * 64,
            latency_ns,
            latency_uncorrected_ns: crate::stats::histogram::new_latency(),
            status_counts: vec![0; STATUS_CODES],
            late: 0,
            sends: 0,
            sends_late: 0,
            errors,
            client_usage: Usage::default(),
            client_syscalls: Some(10),
            saturated_threads: 0,
            connections_open_at_end: 4,
            cut_short_of: None,
            reconnects: 0,
        }
    }

    #[test]
    fn a_window_a_signal_cut_short_is_a_row_that_says_so() {
        let mut cut = report(100, LoadErrors::default());
        cut.cut_short_of = Some(Duration::from_secs(10));
        let row = load_row("epoll", Map::new(), 1, &plan(), &cut, None);
        assert!(row.verified);
        assert_eq!(row.ops_per_sec, 50.0);
        let note = row
            .notes
            .iter()
            .find(|n| n.starts_with(crate::row::PARTIAL_NOTE));
        let note = note.expect("a partial note");
        assert!(note.contains("2.0 s into its 10.0 s window"), "{note}");
    }

    #[test]
    fn a_clean_run_is_verified_with_percentiles_from_the_histogram() {
        let row = load_row(
            "epoll",
            Map::new(),
            1,
            &plan(),
            &report(1000, LoadErrors::default()),
            None,
        );
        assert!(row.verified);
        assert_eq!((row.ops, row.ops_per_sec, row.errors), (1000, 500.0, 0));
        let p50 = row.latency_ns_p50.unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        assert!(row.latency_ns_max.unwrap() >= 999_000);
        assert_eq!(
            row.syscalls_source,
            SyscallSource::Unmeasured,
            "no server was measured"
        );
        assert!(row.error_counts.is_empty());
    }

    /// Goal: the histogram a row carries is the one the run recorded. Method: the row goes
    /// through its JSON form and back, and the decoded histogram must have the recorded count
    /// and the row's own p99.
    #[test]
    fn a_row_histogram_round_trips_through_json() {
        let report = report(1000, LoadErrors::default());
        let row = load_row("epoll", Map::new(), 1, &plan(), &report, None);
        assert!(
            row.latency_uncorrected_ns_histogram.is_none(),
            "closed loop"
        );
        let json = serde_json::to_string(&row).unwrap();
        let back: Row = serde_json::from_str(&json).unwrap();
        let text = back.latency_ns_histogram.as_deref().expect("a histogram");
        let histogram = crate::stats::histogram::decode(text).unwrap();
        assert_eq!(histogram.len(), report.latency_ns.len());
        assert_eq!(histogram.len(), 1000);
        assert_eq!(Some(histogram.value_at_quantile(0.99)), row.latency_ns_p99);
    }

    #[test]
    fn one_mismatch_makes_the_run_unverified_and_is_counted_by_kind() {
        let errors = LoadErrors {
            timeout: 2,
            mismatch: 1,
            ..LoadErrors::default()
        };
        let row = load_row("epoll", Map::new(), 1, &plan(), &report(1000, errors), None);
        assert!(!row.verified);
        assert_eq!(row.errors, 3);
        assert_eq!(row.error_counts["mismatch"], 1);
        assert_eq!(row.error_counts["timeout"], 2);
        assert!(row
            .notes
            .iter()
            .any(|note| note.starts_with("NOT VERIFIED")));
    }

    #[test]
    fn a_window_in_which_nothing_completed_says_so() {
        let row = load_row(
            "epoll",
            Map::new(),
            1,
            &plan(),
            &report(0, LoadErrors::default()),
            None,
        );
        assert!(!row.verified);
        let reason = row.unverified_reason.as_deref().unwrap_or_default();
        assert!(reason.starts_with("no answer completed"), "{reason}");
    }

    #[test]
    fn connections_that_never_connected_or_a_server_gone_leave_the_run_unverified() {
        let errors = LoadErrors {
            connect: 9,
            ..LoadErrors::default()
        };
        let row = load_row(
            "blocking",
            Map::new(),
            1,
            &plan(),
            &report(10, errors),
            None,
        );
        assert!(!row.verified);
        assert!(row
            .notes
            .iter()
            .any(|note| note.contains("9 of 2 connections")));
        let mut gone = report(10, LoadErrors::default());
        gone.connections_open_at_end = 0;
        let row = load_row("epoll", Map::new(), 1, &plan(), &gone, None);
        assert!(!row.verified);
        assert!(row
            .notes
            .iter()
            .any(|note| note.contains("did the server die?")));
    }

    /// Goal: a run that lost connections without cause is not called verified, however many
    /// answers it checked, and says why; connections the server closed in order and that were
    /// opened again are counted, not held against it.
    #[test]
    fn connections_lost_without_cause_leave_the_run_unverified() {
        let mut plan = plan();
        plan.mode = Mode::Http;
        for errors in [
            LoadErrors {
                reset: 3,
                ..LoadErrors::default()
            },
            LoadErrors {
                write: 1,
                ..LoadErrors::default()
            },
        ] {
            let row = load_row("x", Map::new(), 1, &plan, &report(1000, errors), None);
            assert!(!row.verified);
            let lost = errors.reset + errors.write;
            let says = format!("{lost} connections were lost without cause");
            assert!(
                row.notes.iter().any(|note| note.contains(&says)),
                "{:?}",
                row.notes
            );
        }
        let mut reopened = report(1000, LoadErrors::default());
        reopened.status_counts[200] = 1000;
        reopened.reconnects = 1000;
        let row = load_row("x", Map::new(), 1, &plan, &reopened, None);
        assert!(row.verified, "{:?}", row.notes);
        assert_eq!(row.reconnects, Some(1000));
        assert!(http_summary(&row).contains("reconnects 1000"));
    }

    #[test]
    fn a_stream_that_stalls_is_not_verified() {
        let mut plan = plan();
        plan.mode = Mode::Stream;
        let clean = load_row(
            "x",
            Map::new(),
            1,
            &plan,
            &report(1000, LoadErrors::default()),
            None,
        );
        assert!(clean.verified);
        let errors = LoadErrors {
            timeout: 1,
            ..LoadErrors::default()
        };
        let row = load_row("x", Map::new(), 1, &plan, &report(1000, errors), None);
        assert!(!row.verified);
        assert!(row
            .notes
            .iter()
            .any(|note| note.contains("1 streams stalled")));
    }

    #[test]
    fn http_rows_carry_statuses_and_open_loop_figures() {
        let mut plan = plan();
        plan.mode = Mode::Http;
        plan.http = Some(HttpLoad {
            request: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        });
        plan.rate_per_sec = Some(400.0);
        let mut report = report(1000, LoadErrors::default());
        report.status_counts[200] = 999;
        report.status_counts[503] = 1;
        report.late = 7;
        (report.sends, report.sends_late) = (1000, 20);
        report.latency_uncorrected_ns.record(42_000).unwrap();
        let row = load_row("epoll", Map::new(), 1, &plan, &report, None);
        assert_eq!(row.workload, "http");
        assert_eq!(row.status_counts["503"], 1);
        assert!(!row.verified, "a 503 is not a verified answer");
        assert_eq!(
            (row.ops_per_sec_target, row.ops_late),
            (Some(400.0), Some(7))
        );
        assert!(row.latency_uncorrected_ns_p99.is_some());
        assert_eq!(row.client_late_share, Some(0.02));
        assert_eq!(row.client_saturated, Some(true), "2% of sends late: behind");
        let uncorrected = row.latency_uncorrected_ns_histogram.as_deref().unwrap();
        assert_eq!(
            crate::stats::histogram::decode(uncorrected).unwrap().len(),
            1
        );
        assert!(row.params.param(Param::PayloadBytes).is_none());
    }
}
