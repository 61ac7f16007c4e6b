//! Results documents from anywhere, through what `merge` and `report` do with them: the gate
//! every document passes (`parse_document`), the merge of two hosts' documents, the merged
//! document written as JSON and read back, and the report (studies, markdown, HTML with its
//! charts) of each, all in memory. Run with `cargo +nightly fuzz run document` from `fuzz/`.
//!
//! Input layout: one document's text, or two separated by a NUL byte (without one, the
//! document is merged with itself, which doubles every sum). Properties: no panic, no
//! allocation beyond libFuzzer's limit (`-rss_limit_mb`, 2 GiB by default; the 4 GiB histogram
//! header asked for more), no run beyond its timeout (an infinite chart range never ended);
//! a merged document reads back through the same gate.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside::model::study::studies;
use ringside::report::load::parse_document;
use ringside::report::merge::merge_documents;
use ringside::report::{html, markdown};
use ringside::row::Document;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, second) = text.split_once('\0').unwrap_or((text, text));
    let Ok(first) = parse_document(first) else {
        return;
    };
    render(&first);
    let Ok(second) = parse_document(second) else {
        return;
    };
    let Ok(merged) = merge_documents(&[first, second]) else {
        return;
    };
    let written = serde_json::to_string(&merged).expect("a merged document serializes");
    let read = parse_document(&written).expect("a merged document passes the gate it came through");
    render(&read);
});

/// The report of `document`, as `ringside report` writes it, kept in memory.
fn render(document: &Document) {
    let studies = studies(&document.results);
    let _ = markdown::render_markdown(document, &studies);
    let _ = html::render_html(document, &studies);
}
