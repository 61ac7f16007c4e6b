//! `report.html`: one self-contained page (no network, no scripts, charts as inline SVG) that
//! draws the analysis's first screen, then the report's one outline (`outline`), as report.md
//! does: every answer links to its section, every verdict word to how to read it, and every
//! chart carries a title and a description, so the file can be mailed or attached to an issue
//! as is.

use crate::analysis::Analysis;
pub use crate::output::html::escape;
use crate::report::outline::{
    answer_cells, answer_charts, answer_id, Block, Outline, Target, GLOSSARY,
};
use crate::report::table::Cells;
use crate::row::Document;

const STYLE: &str = "body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;\
color:#222}table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;\
padding:.25rem .6rem;text-align:right}td:first-child,th:first-child{text-align:left}\
th{background:#f3f3f3}.verdict{font-weight:bold}.warn{color:#8a4b00}figure{margin:1rem 0}\
code{background:#f3f3f3;padding:0 .2rem}pre{background:#f7f7f7;padding:.5rem;overflow:auto}\
.answer{border:2px solid #2a6;border-radius:.4rem;padding:.2rem 1.2rem 1rem;background:#f6fbf7}\
.answer li{margin:.3rem 0}.answer h3{margin:1rem 0 .3rem;font-size:1rem}\
.headline{font-size:1.15rem;font-weight:bold}a.term{color:inherit}\
.charts{display:flex;flex-wrap:wrap;gap:0 .6rem}.charts figure{margin:.3rem 0}\
table.answers{font-size:.9rem}table.answers td,table.answers th{text-align:left}";

pub fn render_html(document: &Document, analysis: &Analysis) -> anyhow::Result<String> {
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ringside report</title><style>{STYLE}</style></head><body>\n\
         <h1>ringside report</h1>\n{}<p>Produced by ringside {} with <code>{}</code>.</p>\n",
        answer_section(analysis)?,
        escape(&document.ringside_version),
        escape(&document.command)
    );
    for note in &document.notes {
        page.push_str(&format!("<p class=\"warn\">{}</p>\n", escape(note)));
    }
    if analysis.studies.is_empty() && analysis.loads.is_empty() {
        page.push_str("<p>No results: no study finished.</p>\n");
    }
    for section in Outline::of(document, analysis, Target::Page).sections {
        page.push_str(&format!("<section id=\"{}\">\n", section.id));
        if !section.heading.is_empty() {
            page.push_str(&format!(
                "<h2>{} <a href=\"#answer\" title=\"back to the answer\">↑</a></h2>\n",
                escape(&section.heading)
            ));
        }
        if let Some(params) = &section.params {
            page.push_str(&format!("<p><code>{}</code></p>\n", escape(params)));
        }
        if section.id == "how-to-read" {
            page.push_str(&glossary(analysis));
        } else {
            for block in &section.blocks {
                page.push_str(&draw_block(block));
            }
        }
        if section.id == "environment" {
            let full = serde_json::to_string_pretty(&document.env).unwrap_or_default();
            page.push_str(&format!(
                "<details><summary>The probe's full environment block</summary><pre>{}</pre>\
                 </details>\n",
                escape(&full)
            ));
        }
        page.push_str("</section>\n");
    }
    page.push_str("</body></html>\n");
    Ok(page)
}

fn draw_block(block: &Block) -> String {
    match block {
        Block::Text { text, verdict } => {
            let class = if *verdict { " class=\"verdict\"" } else { "" };
            format!("<p{class}>{}</p>\n", linked(text))
        }
        Block::List(items) if items.is_empty() => String::new(),
        Block::List(items) => {
            let lines: String = items
                .iter()
                .map(|item| format!("<li>{}</li>\n", linked(item)))
                .collect();
            format!("<ul>\n{lines}</ul>\n")
        }
        Block::Table(cells, legend) => {
            let legend = legend
                .as_ref()
                .map_or(String::new(), |l| format!("<p>{}</p>\n", linked(l)));
            format!("{}{legend}", table(cells, None))
        }
        Block::Charts(svgs) => svgs
            .iter()
            .map(|svg| format!("<figure>{svg}</figure>\n"))
            .collect(),
        Block::Raw { html, .. } => html.clone(),
        Block::Heading(heading) => format!("<h3>{}</h3>\n", escape(heading)),
    }
}

/// The first screen: the headline, the machine, the answers' table (each study linked to its
/// section), one chart per study, then the lists (what to do about it first), each answer in
/// full, and the integrity checks below them.
fn answer_section(analysis: &Analysis) -> anyhow::Result<String> {
    let screen = &analysis.screen;
    let mut text = String::from(
        "<section class=\"answer\" id=\"answer\">\n<h2>The answer on this machine</h2>\n",
    );
    for sentence in &screen.headline {
        text.push_str(&format!("<p class=\"headline\">{}</p>\n", linked(sentence)));
    }
    text.push_str(&format!(
        "<p>{}. <a href=\"#how-to-read\">How to read this report</a>.</p>\n",
        escape(&analysis.machine)
    ));
    if !screen.answers.is_empty() {
        let links: Vec<String> = screen.answers.iter().map(answer_id).collect();
        text.push_str(&table(&answer_cells(analysis), Some(&links)));
    }
    text.push_str("<div class=\"charts\">\n");
    for svg in answer_charts(analysis)? {
        text.push_str(&format!("<figure>{svg}</figure>\n"));
    }
    text.push_str("</div>\n");
    for (heading, items, empty) in screen.lists() {
        text.push_str(&format!("<h3>{}</h3>\n<ul>\n", escape(heading)));
        if items.is_empty() {
            text.push_str(&format!("<li>{empty}</li>\n"));
        }
        for item in items {
            text.push_str(&format!("<li>{}</li>\n", linked(&item)));
        }
        text.push_str("</ul>\n");
    }
    if !screen.answers.is_empty() {
        text.push_str("<h3>Each answer in full</h3>\n<ul>\n");
        for answer in &screen.answers {
            text.push_str(&format!(
                "<li><a href=\"#{}\"><b>{}</b></a>: {}</li>\n",
                answer_id(answer),
                escape(&answer.words),
                linked(&answer.text)
            ));
        }
        text.push_str("</ul>\n");
    }
    if !screen.integrity.is_empty() {
        text.push_str("<h3>Integrity checks (only contenders ran these: no answer)</h3>\n<ul>\n");
        for answer in &screen.integrity {
            text.push_str(&format!(
                "<li><a href=\"#{}\">{}</a>: {}</li>\n",
                answer_id(answer),
                escape(&answer.words),
                escape(&answer.text)
            ));
        }
        text.push_str("</ul>\n");
    }
    text.push_str(&format!(
        "<p><a href=\"#g-levels\">Levels</a>: {}</p>\n</section>\n",
        escape(&analysis.levels_text())
    ));
    Ok(text)
}

/// How to read the report: each verdict word with its anchor, which every use links to.
fn glossary(analysis: &Analysis) -> String {
    let mut text = String::from("<dl>\n");
    for (anchor, term, meaning) in GLOSSARY {
        text.push_str(&format!(
            "<dt id=\"g-{anchor}\"><b>{}</b></dt><dd>{}</dd>\n",
            escape(term),
            escape(meaning)
        ));
    }
    text.push_str(&format!(
        "</dl>\n<p>{}</p>\n",
        escape(&analysis.levels_text())
    ));
    text
}

/// The verdict words of `text` linked to how to read them, the rest escaped: each word where it
/// starts a word, the first match at each place (so no link lands inside another).
pub fn linked(text: &str) -> String {
    const TERMS: [(&str, &str); 14] = [
        ("no difference beyond", "no-difference"),
        ("within 10%", "within"),
        ("undecided", "undecided"),
        ("faster", "faster"),
        ("slower", "faster"),
        ("cheaper", "faster"),
        ("costlier", "faster"),
        ("tied", "tied"),
        ("client-bound", "regime"),
        ("server-bound", "regime"),
        ("mixed", "regime"),
        ("the load generator was saturated", "regime"),
        ("neither side saturated", "regime"),
        ("rounds", "rounds"),
    ];
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    'scan: while !rest.is_empty() {
        let starts_word =
            out.is_empty() || !out.ends_with(|c: char| c.is_alphanumeric() || c == '-' || c == '_');
        if starts_word {
            for (term, anchor) in TERMS {
                if rest.starts_with(term) {
                    out.push_str(&format!(
                        "<a class=\"term\" href=\"#g-{anchor}\">{}</a>",
                        escape(term)
                    ));
                    rest = &rest[term.len()..];
                    continue 'scan;
                }
            }
        }
        let next = rest.chars().next().expect("not empty");
        out.push_str(&escape(next.encode_utf8(&mut [0; 4])));
        rest = &rest[next.len_utf8()..];
    }
    out
}

/// A table; with `links`, each line's first cell links to the anchor of the same index.
fn table(cells: &Cells, links: Option<&[String]>) -> String {
    let row = |tag: &str, line: &[String], link: Option<&String>| {
        let inner: String = (line.iter().enumerate())
            .map(|(column, cell)| match (column, link) {
                (0, Some(anchor)) => {
                    format!("<{tag}><a href=\"#{anchor}\">{}</a></{tag}>", escape(cell))
                }
                // The answers' verdict words link to how to read them, as in the sentences.
                (_, Some(_)) => format!("<{tag}>{}</{tag}>", linked(cell)),
                _ => format!("<{tag}>{}</{tag}>", escape(cell)),
            })
            .collect();
        format!("<tr>{inner}</tr>\n")
    };
    let class = if links.is_some() {
        " class=\"answers\""
    } else {
        ""
    };
    let mut text = format!("<table{class}>\n{}", row("th", &cells.header, None));
    for (index, line) in cells.lines.iter().enumerate() {
        text.push_str(&row("td", line, links.and_then(|links| links.get(index))));
    }
    text.push_str("</table>\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_escaped() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
