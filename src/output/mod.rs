//! Where results go: a human table on stdout (one line per engine and parameter set, with the
//! median and best of its runs, as the seeds' tables show them), CSV (one row per run, column
//! names equal to the JSON keys, ready for duckdb) or the canonical JSON document; and progress
//! on stderr (`progress`).

pub mod progress;

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use serde_json::Value;

use crate::row::SyscallSource;
use crate::row::{Document, Row};
use crate::stats::{best, median, params_text};
use crate::units::{format_count, format_mb_per_sec};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    // Each command's `--format` says what each form holds there (a study's CSV has a row per
    // run, `compare`'s a row per engine and metric): no help of the variants' own.
    // A summary table for people.
    Table,
    // Rows with a header, columns named like the JSON keys.
    Csv,
    // The canonical document: schema_version, command, env (the probe), results.
    Json,
}

/// Writes the document in `format` to `output`, or to stdout when there is none.
pub fn emit(document: &Document, format: Format, output: Option<&Path>) -> anyhow::Result<()> {
    write_text(&render(document, format)?, output)
}

/// Writes `text` to `output`, or to stdout when there is none; a closed pipe (`| head`) is not
/// an error.
pub fn write_text(text: &str, output: Option<&Path>) -> anyhow::Result<()> {
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write results to {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write results to stdout"),
            }
        }
    }
}

pub fn render(document: &Document, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(document)? + "\n",
        Format::Csv => render_csv(&document.results)?,
        Format::Table => render_table(&document.results),
    })
}

/// Row fields holding a whole serialized histogram: kilobytes of base64 that belong in the JSON
/// document, not in a spreadsheet's cells.
const HISTOGRAM_SUFFIX: &str = "_histogram";

/// The CSV's columns of ids, which the JSON document has no field for (a row's study and cell
/// follow from its workload, engine and parameters).
const STUDY_COLUMN: &str = "study";
const CELL_COLUMN: &str = "cell";

/// The CSV projection: every scalar field of a row as a column (serialized histograms left
/// out); `params` as `key=value` pairs.
pub fn render_csv(rows: &[Row]) -> anyhow::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = Vec::new();
    for row in rows {
        let Value::Object(fields) = serde_json::to_value(row)? else {
            unreachable!()
        };
        for key in fields.keys() {
            if !header.contains(key) && !key.ends_with(HISTOGRAM_SUFFIX) {
                header.push(key.clone());
            }
        }
    }
    if header.is_empty() {
        header = csv_default_header();
    }
    // Which study and cell each row measured, right after the engine: what a spreadsheet or
    // duckdb groups by (`GROUP BY study, cell`) without rebuilding it from `params.*`.
    let after_engine = header
        .iter()
        .position(|key| key == "engine")
        .map_or(0, |at| at + 1);
    header.splice(
        after_engine..after_engine,
        [STUDY_COLUMN.into(), CELL_COLUMN.into()],
    );
    // Each parameter as a column of its own too (`params.connections`, `params.depth`), after
    // every other column (a reader by position keeps its columns), so a spreadsheet or duckdb
    // can filter on one.
    let mut param_keys: Vec<String> = Vec::new();
    for key in rows.iter().flat_map(|row| row.params.keys()) {
        let column = format!("params.{key}");
        if !param_keys.contains(&column) {
            param_keys.push(column);
        }
    }
    header.extend(param_keys);
    writer.write_record(&header)?;
    for row in rows {
        let Value::Object(fields) = serde_json::to_value(row)? else {
            unreachable!()
        };
        let record: Vec<String> = header
            .iter()
            .map(|key| match (key.as_str(), fields.get(key)) {
                (STUDY_COLUMN, _) => row.study_id(),
                (CELL_COLUMN, _) => row.cell_id(),
                ("params", _) => row.params_text(),
                (column, _) if column.starts_with("params.") => {
                    match row.params.get(&column["params.".len()..]) {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                    }
                }
                (_, None | Some(Value::Null)) => String::new(),
                (_, Some(Value::String(text))) => text.clone(),
                // Notes as text, the looks of `--runs auto` as numbers: `12; 16; 24`.
                (_, Some(Value::Array(items))) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                (_, Some(other)) => other.to_string(),
            })
            .collect();
        writer.write_record(&record)?;
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

fn csv_default_header() -> Vec<String> {
    let Value::Object(fields) = serde_json::to_value(Row::default()).expect("row serialises")
    else {
        unreachable!()
    };
    fields.keys().cloned().collect()
}

/// Runs of one engine with one parameter set, in the order they first appeared.
pub struct Group<'a> {
    pub workload: &'a str,
    pub engine: &'a str,
    pub params: String,
    pub rows: Vec<&'a Row>,
}

pub fn group_runs(rows: &[Row]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    for row in rows {
        let params = row.params_text();
        let found = groups
            .iter_mut()
            .find(|g| g.workload == row.workload && g.engine == row.engine && g.params == params);
        match found {
            Some(group) => group.rows.push(row),
            None => groups.push(Group {
                workload: &row.workload,
                engine: &row.engine,
                params,
                rows: vec![row],
            }),
        }
    }
    groups
}

/// Parameters with one value across all rows: printed once above the table, not in every line.
fn shared_params(rows: &[Row]) -> Vec<(String, Value)> {
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    first
        .params
        .iter()
        .filter(|(key, value)| rows.iter().all(|row| row.params.get(*key) == Some(value)))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

pub fn render_table(rows: &[Row]) -> String {
    let shared = shared_params(rows);
    let trimmed: Vec<Row> = rows
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row.params
                .retain(|key, _| !shared.iter().any(|(shared_key, _)| shared_key == key));
            row
        })
        .collect();
    let rows = trimmed.as_slice();
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    let has_latency = rows.iter().any(|row| row.latency_ns_p99.is_some());
    let has_params = rows.iter().any(|row| !row.params.is_empty());
    let mut header = vec![
        "workload",
        "engine",
        "params",
        "runs",
        "MB/s median",
        "MB/s best",
        "ops/s median",
        "seconds median",
        "syscalls",
        "syscalls/op",
        "CPU s",
        "ctx switches",
        "verified",
    ];
    if has_latency {
        header.push("p99 µs");
    }
    if !has_params {
        header.remove(2);
    }
    table.set_header(header);
    for group in group_runs(rows) {
        let mut cells = group_cells(&group, has_latency);
        if !has_params {
            cells.remove(2);
        }
        table.add_row(cells);
    }
    let mut text = String::new();
    if !shared.is_empty() {
        let pairs = params_text(shared.iter().map(|(key, value)| (key, value)));
        text.push_str(&format!("{pairs}\n"));
    }
    text.push_str(&table.to_string());
    text.push('\n');
    for note in rows
        .iter()
        .flat_map(|row| row.notes.iter())
        .collect::<std::collections::BTreeSet<_>>()
    {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}

/// Printed for a figure nobody measured (a server's syscalls and CPU when `load` was not given
/// its pid); the JSON keeps the field, and `syscalls_source: "none"` says so.
const NOT_MEASURED: &str = "—";

/// One line of the table: the group's medians (and best MB/s), all columns.
fn group_cells(group: &Group, has_latency: bool) -> Vec<Cell> {
    let pick = |field: fn(&Row) -> f64| group.rows.iter().map(|r| field(r)).collect::<Vec<_>>();
    let right = |text: String| Cell::new(text).set_alignment(CellAlignment::Right);
    let bytes_per_sec = pick(|r| r.bytes_per_sec);
    let syscalls = median(&pick(|r| r.syscalls as f64));
    let ops = median(&pick(|r| r.ops as f64));
    let cpu = median(&pick(|r| r.cpu_s()));
    let switches = median(&pick(|r| {
        (r.ctx_switches_voluntary + r.ctx_switches_involuntary) as f64
    }));
    let verified = group.rows.iter().all(|r| r.verified && r.errors == 0);
    let failed = group.rows.iter().any(|r| r.failure.is_some());
    let syscalls_measured = group.rows.iter().all(|r| r.syscalls_source.counted());
    let usage_measured = group.rows.iter().all(usage_measured);
    let source = if group
        .rows
        .iter()
        .all(|r| r.syscalls_source == SyscallSource::Kernel)
    {
        ""
    } else {
        " (self)"
    };
    let measured = |is: bool, text: String| if is { text } else { NOT_MEASURED.into() };
    let mut cells = vec![
        Cell::new(group.workload),
        Cell::new(group.engine),
        Cell::new(&group.params),
        right(group.rows.len().to_string()),
        right(format_mb_per_sec(median(&bytes_per_sec))),
        right(format_mb_per_sec(best(&bytes_per_sec))),
        right(format_count(median(&pick(|r| r.ops_per_sec)))),
        right(format!("{:.3}", median(&pick(|r| r.seconds)))),
        right(measured(
            syscalls_measured,
            format!("{}{source}", format_count(syscalls)),
        )),
        right(measured(
            syscalls_measured,
            format_count(if ops > 0.0 { syscalls / ops } else { 0.0 }),
        )),
        right(measured(usage_measured, format!("{cpu:.2}"))),
        right(measured(usage_measured, format_count(switches))),
        Cell::new(match (failed, verified) {
            (true, _) => "FAILED",
            (false, true) => "yes",
            (false, false) => "NO",
        }),
    ];
    if has_latency {
        let p99s: Vec<f64> = group
            .rows
            .iter()
            .filter_map(|r| r.latency_ns_p99)
            .map(|ns| ns as f64 / 1e3)
            .collect();
        let p99 = (!p99s.is_empty()).then(|| format!("{:.1}", median(&p99s)));
        cells.push(right(p99.unwrap_or_else(|| NOT_MEASURED.into())));
    }
    cells
}

/// Whether a row's CPU and context switches were measured: every row's are but those of a
/// server that nobody measured (`load` without `--server-pid`: no syscall source and no CPU
/// share).
fn usage_measured(row: &&Row) -> bool {
    row.syscalls_source.counted() || row.server_cpu_utilisation.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::params::{Param, Params};

    fn row(engine: &str, run: u32, bytes_per_sec: f64) -> Row {
        Row {
            workload: "fs-write".into(),
            engine: engine.into(),
            run,
            bytes_per_sec,
            ops: 10,
            syscalls: 20,
            syscalls_source: SyscallSource::Kernel,
            verified: true,
            ..Row::default()
        }
    }

    #[test]
    fn groups_keep_first_appearance_order_across_alternating_runs() {
        let rows = vec![
            row("a", 1, 1.0),
            row("b", 1, 2.0),
            row("a", 2, 3.0),
            row("b", 2, 4.0),
        ];
        let groups = group_runs(&rows);
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].engine, groups[0].rows.len()), ("a", 2));
        assert_eq!(groups[1].engine, "b");
    }

    #[test]
    fn csv_has_one_header_and_one_line_per_run() {
        let mut first = row("a", 1, 1e9);
        first.params.put(Param::BlockSize, 4096);
        first.notes.push("capped".into());
        let text = render_csv(&[first, row("b", 1, 2e9)]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("workload,engine,study,cell,params,run,seconds,ops,bytes"));
        assert!(lines[0].ends_with(",params.block_size"), "{}", lines[0]);
        assert!(lines[1].contains("block_size=4096"));
        assert!(lines[1].ends_with(",capped,4096"), "{}", lines[1]);
    }

    /// Goal: results.csv groups by study and cell without `params.*`, and keeps the looks.
    /// Rows of one study share its id whatever an engine chose for itself (its io-wq
    /// workers); another parameter is another study; the looks are written as numbers.
    #[test]
    fn csv_names_each_rows_study_and_cell_and_keeps_the_looks() {
        let mut a = row("a", 1, 1e9);
        a.params.put(Param::BlockSize, 4096);
        a.looks = Some(vec![12, 16, 24]);
        let mut b = row("b", 1, 1e9);
        b.params.put(Param::BlockSize, 4096);
        b.params.insert("iowq_bounded_max".into(), Value::from(32));
        let mut c = row("a", 1, 1e9);
        c.params.put(Param::BlockSize, 8192);
        assert_eq!(a.study_id(), b.study_id());
        assert_ne!(a.study_id(), c.study_id());
        assert!(a.study_id().starts_with("fs-write-"), "{}", a.study_id());
        assert_eq!(a.cell_id(), format!("{}/a", a.study_id()));
        let text = render_csv(&[a.clone(), b, c]).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header = reader.headers().unwrap().clone();
        let column = |name: &str| header.iter().position(|key| key == name).unwrap();
        let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(&records[0][column("study")], a.study_id());
        assert_eq!(&records[0][column("cell")], a.cell_id());
        assert_eq!(&records[0][column("looks")], "12; 16; 24");
        assert_eq!(records[0][column("study")], records[1][column("study")]);
        assert_ne!(records[0][column("study")], records[2][column("study")]);
    }

    /// Goal: a figure nobody measured reads as "—", not as a measured 0; the JSON keeps it.
    #[test]
    fn a_server_nobody_measured_shows_dashes_not_zeros() {
        let mut unmeasured = row("external", 1, 1e6);
        unmeasured.syscalls = 0;
        unmeasured.syscalls_source = SyscallSource::Unmeasured;
        let text = render_table(&[unmeasured.clone()]);
        let line = text.lines().find(|line| line.contains("external")).unwrap();
        assert_eq!(line.matches(NOT_MEASURED).count(), 4, "{text}");
        let json = render(
            &Document::new(Default::default(), vec![unmeasured.clone()]),
            Format::Json,
        );
        assert!(json.unwrap().contains("\"syscalls\": 0"));
        // Measured CPU without the kernel's syscall count: only the syscalls are missing.
        unmeasured.server_cpu_utilisation = Some(0.5);
        let text = render_table(&[unmeasured]);
        let line = text.lines().find(|line| line.contains("external")).unwrap();
        assert_eq!(line.matches(NOT_MEASURED).count(), 2, "{text}");
        assert!(!render_table(&[row("a", 1, 1e9)]).contains(NOT_MEASURED));
    }

    #[test]
    fn table_shows_median_and_best() {
        let rows = vec![row("a", 1, 1e9), row("a", 2, 3e9), row("a", 3, 2e9)];
        let text = render_table(&rows);
        assert!(text.contains("2000"), "{text}");
        assert!(text.contains("3000"), "{text}");
    }
}
