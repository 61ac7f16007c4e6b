//! `ringside merge`: the results of loads run at the same time on several hosts (each with
//! `load --start-at`) against one server, combined losslessly into one document, as k6's and
//! Gatling's users add up their load generators' results.
//!
//! Row i of every document is merged with row i of the others, and only when they describe the
//! same measurement: the same workload, engine, run and parameters (connection and thread
//! counts excepted: those add up), and measured windows that overlap. Counts add up
//! (operations, bytes, errors by kind, statuses, client costs), rates add up (the hosts ran at
//! once), and latency histograms are added, so every percentile of the merged row is the
//! percentile of all samples together, not an average of percentiles. What was measured once
//! per host about its own machine (its cores' softirq) is dropped; the server's costs, when a
//! host measured them (`--server-pid`, same machine as the server), are taken once.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Map, Value};

use super::load::load_document;
use crate::output::{emit, write_text, Format};
use crate::row::SyscallSource;
use crate::row::{Document, Row};
use crate::stats::histogram;

/// Parameters that add up across hosts; every other parameter must be equal.
const SUMMED_PARAMS: [&str; 2] = ["connections", "client_threads"];
/// Share of the shortest window that all windows must have in common.
const OVERLAP_SHARE_MIN: f64 = 0.9;

/// What `merge` combines, and where the result goes.
pub struct Merge {
    pub inputs: Vec<PathBuf>,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// The report in Markdown instead of `format` (`-o FILE.md`).
    pub markdown: bool,
}

pub fn run(merge: &Merge) -> anyhow::Result<ExitCode> {
    let documents = merge
        .inputs
        .iter()
        .map(|path| load_document(path))
        .collect::<anyhow::Result<Vec<Document>>>()?;
    let mut merged = merge_documents(&documents)?;
    for (path, document) in merge.inputs.iter().zip(&documents) {
        merged.notes.push(format!(
            "merged from {} ({})",
            path.display(),
            document.command
        ));
    }
    if merge.markdown {
        let studies = crate::model::study::studies(&merged.results);
        let text = super::markdown::render_markdown(&merged, &studies);
        write_text(&text, merge.output.as_deref())?;
    } else {
        emit(&merged, merge.format, merge.output.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One document of the merged rows; its environment is the first document's.
pub fn merge_documents(documents: &[Document]) -> anyhow::Result<Document> {
    anyhow::ensure!(documents.len() >= 2, "merge needs at least two documents");
    let count = documents[0].results.len();
    for (index, document) in documents.iter().enumerate() {
        anyhow::ensure!(
            document.results.len() == count,
            "document {} has {} rows and document 1 has {count}: merge combines the documents \
             of one load run per host, row by row",
            index + 1,
            document.results.len()
        );
    }
    let mut rows = Vec::with_capacity(count);
    for index in 0..count {
        let parts: Vec<&Row> = documents.iter().map(|d| &d.results[index]).collect();
        rows.push(merge_rows(&parts).with_context(|| format!("cannot merge row {}", index + 1))?);
    }
    let mut merged = Document::new(documents[0].env.clone(), rows);
    merged.notes.push(format!(
        "env is the first document's; {} documents merged",
        documents.len()
    ));
    Ok(merged)
}

/// Rows of the same measurement made by several hosts at once, as one row.
pub fn merge_rows(parts: &[&Row]) -> anyhow::Result<Row> {
    assert!(parts.len() >= 2);
    let first = parts[0];
    for (index, part) in parts.iter().enumerate().skip(1) {
        same_measurement(first, part).with_context(|| format!("host 1 and host {}", index + 1))?;
    }
    let span = check_windows(parts)?;
    let mut row = Row {
        workload: first.workload.clone(),
        engine: first.engine.clone(),
        params: merged_params(parts),
        run: first.run,
        seconds: span.1 - span.0,
        ops: parts.iter().map(|r| r.ops).sum(),
        bytes: parts.iter().map(|r| r.bytes).sum(),
        ops_per_sec: parts.iter().map(|r| r.ops_per_sec).sum(),
        bytes_per_sec: parts.iter().map(|r| r.bytes_per_sec).sum(),
        syscalls_source: SyscallSource::Unmeasured,
        verified: parts.iter().all(|r| r.verified),
        errors: parts.iter().map(|r| r.errors).sum(),
        ops_per_sec_target: sum_some(parts, |r| r.ops_per_sec_target),
        ops_late: sum_some(parts, |r| r.ops_late),
        status_counts: sum_counts(parts, |r| &r.status_counts),
        error_counts: sum_counts(parts, |r| &r.error_counts),
        client_cpu_user_s: sum_some(parts, |r| r.client_cpu_user_s),
        client_cpu_sys_s: sum_some(parts, |r| r.client_cpu_sys_s),
        client_syscalls: sum_some(parts, |r| r.client_syscalls),
        client_ctx_switches_voluntary: sum_some(parts, |r| r.client_ctx_switches_voluntary),
        client_ctx_switches_involuntary: sum_some(parts, |r| r.client_ctx_switches_involuntary),
        client_saturated: parts
            .iter()
            .filter_map(|r| r.client_saturated)
            .reduce(|a, b| a || b),
        window_start_unix_s: Some(span.0),
        window_end_unix_s: Some(span.1),
        ..Row::default()
    };
    let latency = add_histograms(parts, |r| r.latency_ns_histogram.as_deref())?;
    if let Some(latency) = latency {
        row.set_latency(&latency);
    }
    let uncorrected = add_histograms(parts, |r| r.latency_uncorrected_ns_histogram.as_deref())?;
    if let Some(uncorrected) = uncorrected {
        row.set_latency_uncorrected(&uncorrected);
    }
    take_server_costs(&mut row, parts);
    for (index, part) in parts.iter().enumerate() {
        let host = index + 1;
        row.notes
            .extend(part.notes.iter().map(|note| format!("host {host}: {note}")));
    }
    Ok(row)
}

/// Refuses rows that do not describe the same measurement, saying what differs.
fn same_measurement(a: &Row, b: &Row) -> anyhow::Result<()> {
    anyhow::ensure!(
        (&a.workload, &a.engine, a.run) == (&b.workload, &b.engine, b.run),
        "they measured different things ({} {} run {} and {} {} run {})",
        a.workload,
        a.engine,
        a.run,
        b.workload,
        b.engine,
        b.run
    );
    let keys = a.params.keys().chain(b.params.keys());
    for key in keys.filter(|key| !SUMMED_PARAMS.contains(&key.as_str())) {
        let (left, right) = (a.params.get(key), b.params.get(key));
        anyhow::ensure!(
            left == right,
            "their parameter {key} differs ({} and {}): merged loads must run the same workload",
            left.map_or("absent".into(), Value::to_string),
            right.map_or("absent".into(), Value::to_string)
        );
    }
    Ok(())
}

/// The windows' union, after checking that they share at least `OVERLAP_SHARE_MIN` of the
/// shortest one.
fn check_windows(parts: &[&Row]) -> anyhow::Result<(f64, f64)> {
    let mut windows = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter().enumerate() {
        let (Some(start), Some(end)) = (part.window_start_unix_s, part.window_end_unix_s) else {
            anyhow::bail!(
                "host {}'s row has no measured window times (a ringside before `load \
                 --start-at`, or not a network row)",
                index + 1
            );
        };
        windows.push((start, end));
    }
    let latest_start = windows.iter().map(|w| w.0).fold(f64::MIN, f64::max);
    let earliest_end = windows.iter().map(|w| w.1).fold(f64::MAX, f64::min);
    let shortest = windows.iter().map(|w| w.1 - w.0).fold(f64::MAX, f64::min);
    let common = (earliest_end - latest_start).max(0.0);
    anyhow::ensure!(
        common >= OVERLAP_SHARE_MIN * shortest,
        "the measured windows overlap for {common:.2} s of the shortest {shortest:.2} s: the \
         loads did not run at the same time (start each with the same `load --start-at TIME`)"
    );
    let earliest_start = windows.iter().map(|w| w.0).fold(f64::MAX, f64::min);
    let latest_end = windows.iter().map(|w| w.1).fold(f64::MIN, f64::max);
    Ok((earliest_start, latest_end))
}

fn merged_params(parts: &[&Row]) -> Map<String, Value> {
    let mut params = parts[0].params.clone();
    for key in SUMMED_PARAMS {
        let values: Option<Vec<u64>> = parts
            .iter()
            .map(|r| r.params.get(key).and_then(Value::as_u64))
            .collect();
        if let Some(values) = values {
            params.insert(key.into(), Value::from(values.iter().sum::<u64>()));
        }
    }
    params.insert("hosts".into(), Value::from(parts.len()));
    params
}

/// The sum of a field the rows may lack (None when all lack it).
fn sum_some<T: std::iter::Sum<T> + Copy>(
    parts: &[&Row],
    field: fn(&Row) -> Option<T>,
) -> Option<T> {
    let values: Vec<T> = parts.iter().filter_map(|r| field(r)).collect();
    (!values.is_empty()).then(|| values.into_iter().sum())
}

/// Counts by key (statuses, error kinds), added.
fn sum_counts(parts: &[&Row], field: fn(&Row) -> &Map<String, Value>) -> Map<String, Value> {
    let mut total = Map::new();
    for part in parts {
        for (key, count) in field(part) {
            let sum = total.get(key).and_then(Value::as_u64).unwrap_or(0);
            total.insert(key.clone(), Value::from(sum + count.as_u64().unwrap_or(0)));
        }
    }
    total
}

/// The rows' latency histograms added (None when no row has one); a row with operations but no
/// histogram is refused, since its percentiles cannot be merged exactly.
fn add_histograms(
    parts: &[&Row],
    field: fn(&Row) -> Option<&str>,
) -> anyhow::Result<Option<hdrhistogram::Histogram<u64>>> {
    if parts.iter().all(|r| field(r).is_none()) {
        return Ok(None);
    }
    let mut total = histogram::new_latency();
    for (index, part) in parts.iter().enumerate() {
        let Some(text) = field(part) else {
            anyhow::ensure!(
                part.ops == 0,
                "host {}'s row has no latency histogram, so its percentiles cannot be merged \
                 exactly",
                index + 1
            );
            continue;
        };
        let decoded = histogram::decode(text)?;
        total
            .add(&decoded)
            .map_err(|error| anyhow::anyhow!("cannot add latency histograms: {error:?}"))?;
    }
    Ok(Some(total))
}

/// The server's costs from the first host that measured them (they are the one server's,
/// measured over each host's window: adding them would count it twice).
fn take_server_costs(row: &mut Row, parts: &[&Row]) {
    let Some((index, part)) = parts
        .iter()
        .enumerate()
        .find(|(_, r)| r.syscalls_source.counted())
    else {
        return;
    };
    row.syscalls = part.syscalls;
    row.syscalls_source = part.syscalls_source;
    row.cpu_user_s = part.cpu_user_s;
    row.cpu_sys_s = part.cpu_sys_s;
    row.server_cpu_s = part.server_cpu_s;
    row.ctx_switches_voluntary = part.ctx_switches_voluntary;
    row.ctx_switches_involuntary = part.ctx_switches_involuntary;
    row.iowq_workers = part.iowq_workers;
    row.iowq_cpu_s = part.iowq_cpu_s;
    row.sqpoll_cpu_s = part.sqpoll_cpu_s;
    row.notes.push(format!(
        "server costs as host {} measured them over its window",
        index + 1
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(connections: u64, start: f64, latencies_us: std::ops::Range<u64>) -> Row {
        let mut params = Map::new();
        params.insert("connections".into(), Value::from(connections));
        params.insert("payload_bytes".into(), Value::from(64));
        let mut latency = histogram::new_latency();
        for value in latencies_us.clone() {
            latency.record(value * 1000).unwrap();
        }
        let mut row = Row {
            workload: "echo".into(),
            engine: "external".into(),
            params,
            run: 1,
            seconds: 10.0,
            ops: latencies_us.count() as u64,
            ops_per_sec: 100.0,
            verified: true,
            syscalls_source: SyscallSource::Unmeasured,
            window_start_unix_s: Some(start),
            window_end_unix_s: Some(start + 10.0),
            ..Row::default()
        };
        row.set_latency(&latency);
        row
    }

    #[test]
    fn counts_and_rates_add_and_percentiles_come_from_all_samples() {
        let (a, b) = (row(50, 100.0, 1..1001), row(30, 100.5, 5000..5101));
        let merged = merge_rows(&[&a, &b]).unwrap();
        assert_eq!(merged.ops, a.ops + b.ops);
        assert_eq!(merged.ops_per_sec, 200.0);
        assert_eq!(merged.params["connections"], 80);
        assert_eq!(merged.params["hosts"], 2);
        let mut all = histogram::new_latency();
        for value in (1..1001).chain(5000..5101) {
            all.record(value * 1000).unwrap();
        }
        assert_eq!(merged.latency_ns_p99, Some(all.value_at_quantile(0.99)));
        assert!(merged.latency_ns_p99.unwrap() > a.latency_ns_p99.unwrap());
        assert_eq!(
            (merged.window_start_unix_s, merged.window_end_unix_s),
            (Some(100.0), Some(110.5))
        );
    }

    #[test]
    fn different_parameters_and_apart_windows_are_refused_with_the_reason() {
        let a = row(50, 100.0, 1..10);
        let mut b = row(50, 100.0, 1..10);
        b.params.insert("payload_bytes".into(), Value::from(1024));
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("payload_bytes differs"), "{error}");
        let late = row(50, 105.0, 1..10);
        let error = format!("{:#}", merge_rows(&[&a, &late]).unwrap_err());
        assert!(error.contains("--start-at"), "{error}");
        let mut bare = row(50, 100.0, 1..10);
        bare.latency_ns_histogram = None;
        assert!(merge_rows(&[&a, &bare]).is_err());
    }
}
