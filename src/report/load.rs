//! Reading a results document back: `report` and `compare` work from the JSON alone, so this is
//! the one gate every saved document passes. A document written under another `schema_version`
//! is refused before its fields are read, because a field that changed meaning would otherwise
//! render as a plausible but wrong number.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::row::{Document, SCHEMA_VERSION};

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
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read results from {}", file.display()))?;
    parse_document(&text).with_context(|| format!("{} cannot be used", file.display()))
}

/// Parses a document, refusing any schema version other than this build's.
pub fn parse_document(text: &str) -> anyhow::Result<Document> {
    let value: Value = serde_json::from_str(text).context("it is not JSON")?;
    let Some(version) = value.get("schema_version") else {
        anyhow::bail!("it is not a ringside results document (it has no schema_version)");
    };
    anyhow::ensure!(
        version.as_u64() == Some(u64::from(SCHEMA_VERSION)),
        "it was written with schema_version {version}, but this ringside reads only version \
         {SCHEMA_VERSION}; re-run the study with this ringside, or read it with the ringside that \
         wrote it"
    );
    serde_json::from_value(value)
        .with_context(|| format!("its fields do not match schema_version {SCHEMA_VERSION}"))
}

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
}
