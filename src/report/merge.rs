//! `ringside merge`: the documents of loads run at the same time on several hosts against one
//! server, read and combined into one (`crate::row::merge` says how), written as a document or
//! the report.

use std::path::PathBuf;
use std::process::ExitCode;

use super::load::load_document;
use crate::output::{emit, write_text, Format};
use crate::row::merge::merge_documents;
use crate::row::Document;

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
