//! `report.html`: one self-contained page (no network, no scripts, charts as inline SVG) that
//! reads top to bottom like the Markdown report: the answer first, then each study's table with
//! its charts, and the probe's environment at the end, so the file can be mailed or attached to
//! an issue as is.

use crate::model::study::Study;
use crate::report::answer::{answer, Answer};
use crate::report::answer_chart::answer_chart;
use crate::report::chart::{
    contenders_chart, equal_load_charts, ladder_chart, latency_chart, syscalls_chart,
    thread_sweep_charts, throughput_chart,
};
use crate::report::contenders::{contender_cells, contender_verdicts};
use crate::report::depths::{depth_cells, depth_charts, depth_sweeps, depth_verdicts};
use crate::report::environment::{facts, warnings};
use crate::report::equal_load::equal_loads;
use crate::report::table::{cells, equal_load_cells, sweep_cells, Cells};
use crate::report::threads::{size_sweeps, size_verdicts, thread_sweeps, work_sweeps};
use crate::report::verdict::verdict;
use crate::report::work::work_verdicts;
use crate::row::Document;

const STYLE: &str = "body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;\
color:#222}table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;\
padding:.25rem .6rem;text-align:right}td:first-child,th:first-child{text-align:left}\
th{background:#f3f3f3}.verdict{font-weight:bold}.warn{color:#8a4b00}figure{margin:1rem 0}\
code{background:#f3f3f3;padding:0 .2rem}pre{background:#f7f7f7;padding:.5rem;overflow:auto}\
.answer{border:2px solid #2a6;border-radius:.4rem;padding:.2rem 1.2rem 1rem;background:#f6fbf7}\
.answer li{margin:.3rem 0}.answer h3{margin:1rem 0 .3rem;font-size:1rem}\
.charts{display:flex;flex-wrap:wrap;gap:0 .6rem}.charts figure{margin:.3rem 0}";

pub fn render_html(document: &Document, studies: &[Study]) -> anyhow::Result<String> {
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ringside report</title><style>{STYLE}</style></head><body>\n\
         <h1>ringside report</h1>\n{}<p>Produced by ringside {} with <code>{}</code>.</p>\n",
        answer_section(&answer(document, studies), studies)?,
        escape(&document.ringside_version),
        escape(&document.command)
    );
    for note in &document.notes {
        page.push_str(&format!("<p class=\"warn\">{}</p>\n", escape(note)));
    }
    if studies.is_empty() && equal_loads(&document.results).is_empty() {
        page.push_str("<p>No results: no study finished.</p>\n");
    }
    for study in studies {
        page.push_str(&study_section(study)?);
    }
    for load in equal_loads(&document.results) {
        page.push_str(&format!(
            "<section>\n<h2>{} at equal load</h2>\n<p class=\"verdict\">{}</p>\n{}",
            escape(&load.title()),
            escape(&load.verdict()),
            table(&equal_load_cells(&load))
        ));
        for svg in equal_load_charts(&load)? {
            page.push_str(&format!("<figure>{svg}</figure>\n"));
        }
        page.push_str("</section>\n");
    }
    for sweep in thread_sweeps(studies)
        .into_iter()
        .chain(size_sweeps(studies))
        .chain(work_sweeps(studies))
    {
        page.push_str(&format!(
            "<section>\n<h2>{}: against {}</h2>\n",
            escape(&sweep.title),
            sweep.noun()
        ));
        for verdict in size_verdicts(&sweep)
            .into_iter()
            .chain(work_verdicts(&sweep))
        {
            page.push_str(&format!("<p class=\"verdict\">{}</p>\n", escape(&verdict)));
        }
        page.push_str(&table(&sweep_cells(&sweep)));
        for svg in thread_sweep_charts(&sweep)? {
            page.push_str(&format!("<figure>{svg}</figure>\n"));
        }
        page.push_str("</section>\n");
    }
    for sweep in depth_sweeps(studies) {
        page.push_str(&format!(
            "<section>\n<h2>{}: against queue depth</h2>\n<ul>\n",
            escape(&sweep.title)
        ));
        for sentence in depth_verdicts(&sweep) {
            page.push_str(&format!(
                "<li class=\"verdict\">{}</li>\n",
                escape(&sentence)
            ));
        }
        page.push_str(&format!("</ul>\n{}", table(&depth_cells(&sweep))));
        for svg in depth_charts(&sweep)? {
            page.push_str(&format!("<figure>{svg}</figure>\n"));
        }
        page.push_str("</section>\n");
    }
    page.push_str(&environment_section(&document.env));
    page.push_str("</body></html>\n");
    Ok(page)
}

/// The first screen: the machine, the answer's sentences, then one chart per study.
fn answer_section(answer: &Answer, studies: &[Study]) -> anyhow::Result<String> {
    let mut text = format!(
        "<section class=\"answer\">\n<h2>The answer on this machine</h2>\n<p>{}.</p>\n<ul>\n",
        escape(&answer.machine)
    );
    for (title, finding) in &answer.studies {
        text.push_str(&format!(
            "<li><b>{}</b>: {}</li>\n",
            escape(title),
            escape(finding)
        ));
    }
    text.push_str("</ul>\n");
    for (heading, items, empty) in answer.lists() {
        text.push_str(&format!("<h3>{}</h3>\n<ul>\n", escape(heading)));
        if items.is_empty() {
            text.push_str(&format!("<li>{empty}</li>\n"));
        }
        for item in items {
            text.push_str(&format!("<li>{}</li>\n", escape(item)));
        }
        text.push_str("</ul>\n");
    }
    text.push_str("<div class=\"charts\">\n");
    for study in studies {
        if let Some(svg) = answer_chart(study, answer.winner(&study.title))? {
            text.push_str(&format!("<figure>{svg}</figure>\n"));
        }
    }
    text.push_str("</div>\n</section>\n");
    Ok(text)
}

fn study_section(study: &Study) -> anyhow::Result<String> {
    let mut text = format!("<section>\n<h2>{}</h2>\n", escape(&study.title));
    if !study.params.is_empty() {
        text.push_str(&format!(
            "<p><code>{}</code></p>\n",
            escape(&study.params_text())
        ));
    }
    text.push_str(&format!(
        "<p class=\"verdict\">{}</p>\n",
        escape(&verdict(study))
    ));
    if !study.engines.is_empty() {
        text.push_str(&table(&cells(study)));
        let charts = [
            Some(throughput_chart(study)?),
            ladder_chart(study)?,
            syscalls_chart(study)?,
            latency_chart(study)?,
        ];
        for svg in charts.into_iter().flatten() {
            text.push_str(&format!("<figure>{svg}</figure>\n"));
        }
    }
    if let Some(cells) = contender_cells(study) {
        text.push_str("<h3>Contenders</h3>\n<ul>\n");
        for sentence in contender_verdicts(study) {
            text.push_str(&format!(
                "<li class=\"verdict\">{}</li>\n",
                escape(&sentence)
            ));
        }
        text.push_str("</ul>\n");
        text.push_str(&table(&cells));
        if let Some(svg) = contenders_chart(study)? {
            text.push_str(&format!("<figure>{svg}</figure>\n"));
        }
    }
    if !study.notes.is_empty() {
        text.push_str("<ul>\n");
        for note in &study.notes {
            text.push_str(&format!("<li>note: {}</li>\n", escape(note)));
        }
        text.push_str("</ul>\n");
    }
    text.push_str("</section>\n");
    Ok(text)
}

fn table(cells: &Cells) -> String {
    let row = |tag: &str, line: &[String]| {
        let inner: String = line
            .iter()
            .map(|cell| format!("<{tag}>{}</{tag}>", escape(cell)))
            .collect();
        format!("<tr>{inner}</tr>\n")
    };
    let mut text = format!("<table>\n{}", row("th", &cells.header));
    for line in &cells.lines {
        text.push_str(&row("td", line));
    }
    text.push_str("</table>\n");
    text
}

fn environment_section(env: &serde_json::Value) -> String {
    let mut text = String::from("<section>\n<h2>Environment</h2>\n<table>\n");
    for (label, value) in facts(env) {
        text.push_str(&format!(
            "<tr><td>{}</td><td>{}</td></tr>\n",
            escape(label),
            escape(&value)
        ));
    }
    text.push_str("</table>\n");
    let warnings = warnings(env);
    if !warnings.is_empty() {
        text.push_str("<p>Warnings from the probe:</p>\n<ul>\n");
        for warning in warnings {
            text.push_str(&format!("<li class=\"warn\">{}</li>\n", escape(&warning)));
        }
        text.push_str("</ul>\n");
    }
    let full = serde_json::to_string_pretty(env).unwrap_or_default();
    text.push_str(&format!(
        "<details><summary>The probe's full environment block</summary><pre>{}</pre></details>\n\
         </section>\n",
        escape(&full)
    ));
    text
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_names_is_escaped() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
