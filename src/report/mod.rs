//! `ringside report DIR_OR_JSON`: the report re-rendered from a results document alone, as
//! `report.md` (tables and verdicts) and `report.html` (the same plus charts, one
//! self-contained file). Results are data and the report is a view of them, so a document saved
//! today can be re-rendered by a later ringside that reads its schema.

pub mod answer_chart;
pub mod chart;
pub mod claims;
pub mod compare;
pub mod contenders;
pub mod depths;
pub mod equal_load;
pub mod html;
pub mod load;
pub mod markdown;
pub mod merge;
pub mod outline;
pub mod table;
pub mod threads;
pub mod verdict;
pub mod work;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::analysis::{export, Analysis};
use crate::row::Document;

/// Re-renders the reports of the document at `input` (a results directory or JSON file) into
/// `out`, or beside the JSON.
pub fn run(input: &Path, out: Option<&Path>) -> anyhow::Result<ExitCode> {
    let document = load::load_document(input)?;
    let file = load::document_path(input);
    let beside = file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let out = out.map_or(beside, Path::to_path_buf);
    let replaced = REPORT_FILES.iter().any(|name| out.join(name).exists());
    let written = write_reports(&document, &out)?;
    for path in &written {
        println!("{}", path.display());
    }
    eprintln!(
        "ringside report: wrote {} and {} from {}{}",
        written[0].display(),
        written[1].display(),
        file.display(),
        if replaced {
            ", replacing the reports that were there (--out DIR writes elsewhere)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The reports `write_reports` writes in a directory.
const REPORT_FILES: [&str; 2] = ["report.md", "report.html"];

/// Prints the verdict table of the document at `input` (`verdicts`), as JSON or CSV.
pub fn print_verdicts(input: &Path, csv: bool) -> anyhow::Result<ExitCode> {
    let document = load::load_document(input)?;
    let analysis = Analysis::of(&document);
    let text = match csv {
        true => export::csv(&export::verdict_rows(&analysis))?,
        false => serde_json::to_string_pretty(&export::export(&analysis))? + "\n",
    };
    crate::output::write_text(&text, None)?;
    Ok(ExitCode::SUCCESS)
}

/// What a study prints in the terminal for its rows: the report's own sections (each study's
/// table and verdict, equal load, the sweeps), drawn to fit `markdown::TERMINAL_COLUMNS`.
pub fn terminal_text(rows: &[crate::row::Row]) -> String {
    let analysis = Analysis::of_rows(rows);
    markdown::sections(&analysis, markdown::Style::Terminal)
}

/// Writes `report.md` and `report.html` for `document` into `dir`; returns their paths.
pub fn write_reports(document: &Document, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the report directory {}", dir.display()))?;
    let analysis = Analysis::of(document);
    let [markdown, html] = REPORT_FILES.map(|name| dir.join(name));
    std::fs::write(&markdown, markdown::render_markdown(document, &analysis))
        .with_context(|| format!("cannot write {}", markdown.display()))?;
    std::fs::write(&html, html::render_html(document, &analysis)?)
        .with_context(|| format!("cannot write {}", html.display()))?;
    Ok(vec![markdown, html])
}
