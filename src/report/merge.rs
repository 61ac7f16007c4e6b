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
use crate::row::params::{Param, Params};
use crate::row::SyscallSource;
use crate::row::{Document, Row};
use crate::stats::histogram;

/// Parameters that add up across hosts; every other parameter must be equal.
const SUMMED_PARAMS: [Param; 2] = [Param::Connections, Param::ClientThreads];
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
        let analysis = crate::analysis::Analysis::of(&merged);
        let text = super::markdown::render_markdown(&merged, &analysis);
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
        let first = parts[0];
        rows.push(merge_rows(&parts).with_context(|| {
            format!(
                "cannot merge row {} ({} {} run {})",
                index + 1,
                first.workload,
                first.engine,
                first.run
            )
        })?);
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
        params: merged_params(parts)?,
        run: first.run,
        seconds: span.1 - span.0,
        ops: sum(parts, "ops", |r| Some(r.ops))?.unwrap_or(0),
        bytes: sum(parts, "bytes", |r| Some(r.bytes))?.unwrap_or(0),
        ops_per_sec: sum(parts, "ops_per_sec", |r| Some(r.ops_per_sec))?.unwrap_or(0.0),
        bytes_per_sec: sum(parts, "bytes_per_sec", |r| Some(r.bytes_per_sec))?.unwrap_or(0.0),
        syscalls_source: SyscallSource::Unmeasured,
        verified: parts.iter().all(|r| r.verified),
        errors: sum(parts, "errors", |r| Some(r.errors))?.unwrap_or(0),
        ops_per_sec_target: sum(parts, "ops_per_sec_target", |r| r.ops_per_sec_target)?,
        ops_late: sum(parts, "ops_late", |r| r.ops_late)?,
        status_counts: sum_counts(parts, "status_counts", |r| &r.status_counts)?,
        error_counts: sum_counts(parts, "error_counts", |r| &r.error_counts)?,
        client_cpu_user_s: sum(parts, "client_cpu_user_s", |r| r.client_cpu_user_s)?,
        client_cpu_sys_s: sum(parts, "client_cpu_sys_s", |r| r.client_cpu_sys_s)?,
        client_syscalls: sum(parts, "client_syscalls", |r| r.client_syscalls)?,
        client_ctx_switches_voluntary: sum(parts, "client_ctx_switches_voluntary", |r| {
            r.client_ctx_switches_voluntary
        })?,
        client_ctx_switches_involuntary: sum(parts, "client_ctx_switches_involuntary", |r| {
            r.client_ctx_switches_involuntary
        })?,
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
    for key in keys.filter(|key| !SUMMED_PARAMS.iter().any(|param| param.key() == *key)) {
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

fn merged_params(parts: &[&Row]) -> anyhow::Result<Map<String, Value>> {
    let mut params = parts[0].params.clone();
    for key in SUMMED_PARAMS {
        let count = |r: &Row| r.params.param_u64(key);
        if parts.iter().all(|r| count(r).is_some()) {
            let total = sum(parts, key.key(), count)?;
            params.put(key, total.unwrap_or(0));
        }
    }
    params.put(Param::Hosts, parts.len());
    Ok(params)
}

/// A figure that adds up across hosts: a count, or a rate, time or share.
trait Summed: Copy + std::fmt::Display {
    /// The sum, or None where it leaves the figures a document can hold.
    fn plus(self, other: Self) -> Option<Self>;
}

impl Summed for u64 {
    fn plus(self, other: u64) -> Option<u64> {
        self.checked_add(other)
    }
}

impl Summed for f64 {
    fn plus(self, other: f64) -> Option<f64> {
        Some(self + other).filter(|total| total.is_finite())
    }
}

/// The sum of a field over the hosts that have it (None when none has it), refused with its
/// name when it overflows: a wrapped count or an infinite rate would read as a measurement.
fn sum<T: Summed>(
    parts: &[&Row],
    name: &str,
    field: impl Fn(&Row) -> Option<T>,
) -> anyhow::Result<Option<T>> {
    let mut total: Option<T> = None;
    for (index, value) in parts
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, field(r)?)))
    {
        total = Some(match total {
            None => value,
            Some(sum) => sum.plus(value).with_context(|| {
                format!(
                    "its {name} overflows when host {}'s {value} is added to {sum}",
                    index + 1
                )
            })?,
        });
    }
    Ok(total)
}

/// Counts by key (statuses, error kinds), added.
fn sum_counts(
    parts: &[&Row],
    name: &str,
    field: fn(&Row) -> &Map<String, Value>,
) -> anyhow::Result<Map<String, Value>> {
    let mut total = Map::new();
    for part in parts {
        for key in field(part).keys() {
            if !total.contains_key(key) {
                let count = sum(parts, &format!("{name}.{key}"), |r| {
                    field(r).get(key).and_then(Value::as_u64)
                })?;
                total.insert(key.clone(), Value::from(count.unwrap_or(0)));
            }
        }
    }
    Ok(total)
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
    let mut samples: u64 = 0;
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
        let host = index + 1;
        let decoded =
            histogram::decode(text).with_context(|| format!("host {host}'s latency histogram"))?;
        // hdrhistogram saturates its counts instead of failing: check the sum it cannot hold.
        samples = samples.checked_add(decoded.len()).with_context(|| {
            format!("host {host}'s latency histogram overflows the count of samples")
        })?;
        total.add(&decoded).map_err(|error| {
            anyhow::anyhow!("cannot add host {host}'s latency histogram: {error}")
        })?;
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
        params.put(Param::Connections, connections);
        params.put(Param::PayloadBytes, 64);
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
        assert_eq!(merged.params[Param::Connections.key()], 80);
        assert_eq!(merged.params[Param::Hosts.key()], 2);
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
        b.params.put(Param::PayloadBytes, 1024);
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("payload_bytes differs"), "{error}");
        let late = row(50, 105.0, 1..10);
        let error = format!("{:#}", merge_rows(&[&a, &late]).unwrap_err());
        assert!(error.contains("--start-at"), "{error}");
        let mut bare = row(50, 100.0, 1..10);
        bare.latency_ns_histogram = None;
        assert!(merge_rows(&[&a, &bare]).is_err());
    }

    #[test]
    fn sums_beyond_what_a_figure_holds_are_refused_naming_the_figure() {
        let (mut a, mut b) = (row(50, 100.0, 1..10), row(30, 100.0, 1..10));
        a.ops = u64::MAX;
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("its ops overflows when host 2's"), "{error}");
        a.ops = 1;
        b.status_counts.insert("200".into(), Value::from(u64::MAX));
        a.status_counts.insert("200".into(), Value::from(1));
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("its status_counts.200 overflows"), "{error}");
        b.status_counts.clear();
        b.params.put(Param::Connections, Value::from(u64::MAX));
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("its connections overflows"), "{error}");
        b.params.put(Param::Connections, Value::from(30));
        a.ops_per_sec = f64::MAX;
        b.ops_per_sec = f64::MAX;
        let error = format!("{:#}", merge_rows(&[&a, &b]).unwrap_err());
        assert!(error.contains("its ops_per_sec overflows"), "{error}");
        // hdrhistogram would saturate these counts and report a plausible p99. The format holds
        // counts up to i64::MAX, so three hosts pass u64::MAX.
        (a.ops_per_sec, b.ops_per_sec) = (1.0, 1.0);
        let mut many = histogram::new_latency();
        many.record_n(1000, i64::MAX as u64).unwrap();
        a.set_latency(&many);
        b.set_latency(&many);
        let error = format!("{:#}", merge_rows(&[&a, &b, &b]).unwrap_err());
        assert!(
            error.contains("host 3's latency histogram overflows the count of samples"),
            "{error}"
        );
    }
}
