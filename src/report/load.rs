//! Reading a results document back: `report` and `compare` work from the JSON alone, so this is
//! the one gate every saved document passes. A document written under another `schema_version`
//! is refused before its fields are read, because a field that changed meaning would otherwise
//! render as a plausible but wrong number.
//!
//! A document is read from a regular file of bounded size (`system::input`) and parsed a part at
//! a time: the whole text is checked as one JSON value first (nothing built, nothing after it
//! but whitespace), then each row is built, checked and kept as a row, never the whole document
//! as a tree of values: `report` of 20,000 load rows (93 MB) held 375 MB at its peak, now 220 MB,
//! the text and the rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::row::{Document, Row, SCHEMA_VERSION};

/// The file a results directory keeps its canonical document in.
pub const RESULTS_FILE: &str = "results.json";

/// Where the document is: `path` itself, or `path/results.json` when `path` is a directory.
pub fn document_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    }
}

/// Reads and checks the document at `path` (a file or a results directory).
pub fn load_document(path: &Path) -> anyhow::Result<Document> {
    let file = document_path(path);
    let text = crate::system::input::read_document(&file)
        .with_context(|| format!("cannot read results from {}", file.display()))?;
    parse_document(&text).with_context(|| format!("{} cannot be used", file.display()))
}

/// The most text one part of a document may take: a row, or a field beside the rows (its
/// `env`, its notes). A part is built as a tree of values before it is checked, up to about 36
/// bytes per byte of text (`[0,0,...]`), so this bounds what one part can cost; the largest
/// row of a default run's document takes 15 KB, its `env` 4 KB.
const PART_BYTES_MAX: usize = 1 << 20;

/// Parses a document, refusing any schema version other than this build's, and any row whose
/// figures no measurement could have produced (each refusal names the row).
pub fn parse_document(text: &str) -> anyhow::Result<Document> {
    // The whole text as one JSON value, nothing after it but whitespace: checked, not built.
    let whole: &RawValue = serde_json::from_str(text).context("it is not JSON")?;
    let Ok(mut fields) = serde_json::from_str::<BTreeMap<String, &RawValue>>(whole.get()) else {
        anyhow::bail!("it is not a ringside results document (it is not a JSON object)");
    };
    let Some(version) = fields.remove("schema_version") else {
        anyhow::bail!("it is not a ringside results document (it has no schema_version)");
    };
    let version = parse_part(version).context("its schema_version")?;
    anyhow::ensure!(
        version.as_u64() == Some(u64::from(SCHEMA_VERSION)),
        "it was written with schema_version {version}, but this ringside reads only version \
         {SCHEMA_VERSION}; re-run the study with this ringside, or read it with the ringside that \
         wrote it"
    );
    let rows = fields.remove("results");
    let mut head = Map::new();
    head.insert("schema_version".to_string(), version);
    for (name, raw) in fields {
        let value = parse_part(raw).with_context(|| format!("its {name}"))?;
        head.insert(name, value);
    }
    let Some(Ok(rows)) = rows.map(|rows| serde_json::from_str::<Vec<&RawValue>>(rows.get())) else {
        anyhow::bail!("it has no list of results");
    };
    head.insert("results".to_string(), Value::Array(Vec::new()));
    let mut document: Document = serde_json::from_value(Value::Object(head))
        .with_context(|| format!("its fields do not match schema_version {SCHEMA_VERSION}"))?;
    document.results = (rows.into_iter().enumerate())
        .map(|(index, raw)| {
            let row = parse_part(raw).with_context(|| format!("row {}", index + 1))?;
            let name = row_name(index, &row);
            parse_row(row).with_context(|| name)
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(document)
}

/// One part of a document built as values, refused past `PART_BYTES_MAX`.
fn parse_part(raw: &RawValue) -> anyhow::Result<Value> {
    let bytes = raw.get().len();
    anyhow::ensure!(
        bytes <= PART_BYTES_MAX,
        "it takes {bytes} bytes, more than any ringside writes (at most {PART_BYTES_MAX})"
    );
    Ok(serde_json::from_str(raw.get())?)
}

/// The largest figure a row may carry as a decimal number: a petabyte or 10^15 operations per
/// second, 31 million years in seconds. Reports divide, add and scale figures; below this bound
/// none of that reaches infinity.
const FIGURE_MAX: f64 = 1e15;

/// One row, after checking that every figure in it is a measurement: no negative number, no
/// decimal beyond `FIGURE_MAX`.
fn parse_row(row: Value) -> anyhow::Result<Row> {
    if let Some(fields) = row.as_object() {
        for (name, figure) in fields.iter().filter(|(name, _)| *name != "params") {
            check_figure(name, figure)?;
            for (key, count) in figure.as_object().into_iter().flatten() {
                check_figure(&format!("{name}.{key}"), count)?;
            }
        }
    }
    let row: Row = serde_json::from_value(row)
        .with_context(|| format!("its fields do not match schema_version {SCHEMA_VERSION}"))?;
    // A merge spans the hosts' windows: one that ends before it starts would give the merged
    // row a negative duration, which this gate then refuses (found by the fuzz target).
    if let (Some(start), Some(end)) = (row.window_start_unix_s, row.window_end_unix_s) {
        anyhow::ensure!(
            start <= end,
            "its measured window ends (window_end_unix_s {end}) before it starts \
             (window_start_unix_s {start})"
        );
    }
    Ok(row)
}

fn check_figure(name: &str, figure: &Value) -> anyhow::Result<()> {
    let Some(number) = figure.as_number() else {
        return Ok(());
    };
    if number.is_u64() {
        return Ok(());
    }
    let decimal = number.as_f64().unwrap_or(f64::NAN);
    anyhow::ensure!(
        (0.0..=FIGURE_MAX).contains(&decimal),
        "its {name} is {number}, which no measurement gives (figures are at least 0 and at \
         most {FIGURE_MAX:e})"
    );
    Ok(())
}

/// "row 3 (echo epoll run 1)": a row as a refusal names it, from the fields it may lack.
fn row_name(index: usize, row: &Value) -> String {
    let text = |name: &str| match row.get(name) {
        Some(Value::String(text)) => text.chars().take(NAME_CHARS_MAX).collect(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "?".to_string(),
    };
    format!(
        "row {} ({} {} run {})",
        index + 1,
        text("workload"),
        text("engine"),
        text("run")
    )
}

/// How much of a name a refusal quotes.
const NAME_CHARS_MAX: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal(version: u32) -> String {
        format!(
            r#"{{"schema_version": {version}, "ringside_version": "0.1.0", "command": "x",
                 "env": {{}}, "results": []}}"#
        )
    }

    #[test]
    fn the_current_version_is_read() {
        let document = parse_document(&minimal(SCHEMA_VERSION)).unwrap();
        assert!(document.results.is_empty());
    }

    #[test]
    fn older_and_newer_versions_are_refused_in_one_sentence() {
        for version in [0, SCHEMA_VERSION + 1] {
            let error = parse_document(&minimal(version)).unwrap_err().to_string();
            assert!(
                error.contains(&format!("schema_version {version}")),
                "{error}"
            );
            assert!(error.contains("reads only version 1"), "{error}");
        }
    }

    #[test]
    fn a_document_without_a_version_is_not_ours() {
        let error = parse_document(r#"{"results": []}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no schema_version"), "{error}");
    }

    /// A document of one row: a real row's fields with `figure` set to `value` (JSON text).
    fn with_figure(figure: &str, value: &str) -> String {
        let mut row =
            serde_json::to_value(crate::model::study::tests::row("epoll", 2, 1.0, 1)).unwrap();
        row[figure] = serde_json::from_str(value).unwrap();
        let mut document: Value = serde_json::from_str(&minimal(SCHEMA_VERSION)).unwrap();
        document["results"] = Value::from(vec![Value::Null, row]);
        document["results"][0] = document["results"][1].clone();
        document.to_string()
    }

    #[test]
    fn a_figure_no_measurement_gives_is_refused_naming_the_row() {
        assert!(parse_document(&with_figure("ops_per_sec", "1e15")).is_ok());
        for (figure, value) in [
            ("ops_per_sec", "1.7e308"),
            ("seconds", "-1.0"),
            ("cpu_sys_s", "-0.5"),
            ("window_start_unix_s", "1e300"),
        ] {
            let error = format!(
                "{:#}",
                parse_document(&with_figure(figure, value)).unwrap_err()
            );
            assert!(
                error.starts_with("row 1 (fs-write epoll run 2): "),
                "{error}"
            );
            assert!(error.contains(&format!("its {figure} is ")), "{error}");
        }
        let error = format!(
            "{:#}",
            parse_document(&with_figure("ops", "-1")).unwrap_err()
        );
        assert!(error.contains("its ops is -1"), "{error}");
        let counts = with_figure("status_counts", r#"{"200": -5}"#);
        let error = format!("{:#}", parse_document(&counts).unwrap_err());
        assert!(error.contains("its status_counts.200 is -5"), "{error}");
        let inverted = with_figure("window_start_unix_s", "1851599875.3").replace(
            r#""window_start_unix_s":1851599875.3"#,
            r#""window_start_unix_s":1851599875.3,"window_end_unix_s":1795573024.3"#,
        );
        let error = format!("{:#}", parse_document(&inverted).unwrap_err());
        assert!(
            error.starts_with("row 1 (fs-write epoll run 2): its measured window ends"),
            "{error}"
        );
        let wrong = with_figure("ops", r#""many""#);
        let error = format!("{:#}", parse_document(&wrong).unwrap_err());
        assert!(
            error.starts_with("row 1 (fs-write epoll run 2): "),
            "{error}"
        );
    }
}
