//! The report's one outline: which sections, in which order, holding which statements, tables
//! and charts, built once from the analysis. report.md, report.html and the terminal draw this
//! same outline (`markdown.rs`, `html.rs`), so the three cannot disagree about what is said or
//! where.

use crate::analysis::environment::{facts, warnings};
use crate::analysis::screen::words;
use crate::analysis::Analysis;
use crate::report::answer_chart::answer_chart;
use crate::report::chart::{
    contenders_chart, equal_load_charts, ladder_chart, latency_chart, syscalls_chart,
    thread_sweep_charts, throughput_chart,
};
use crate::report::contenders::{contender_cells, contender_verdicts};
use crate::report::depths::{depth_cells, depth_charts, depth_sweeps, depth_verdicts};
use crate::report::equal_load::{self, scale_text};
use crate::report::table::{cells, equal_load_cells, sweep_cells, Cells, MARKS_LEGEND};
use crate::report::threads::{size_sweeps, size_verdicts, thread_sweeps, work_sweeps};
use crate::report::verdict::{regimes_sentence, verdict};
use crate::report::work::work_verdicts;
use crate::row::Document;

/// One section of the report.
#[derive(Clone, Debug)]
pub struct Section {
    /// Its anchor in report.html (`s3`, `load-0`, `how-to-read`).
    pub id: String,
    /// Its heading, in words.
    pub heading: String,
    /// The parameters behind the heading, where it has them.
    pub params: Option<String>,
    pub blocks: Vec<Block>,
}

/// What a section holds, in order.
#[derive(Clone, Debug)]
pub enum Block {
    /// A paragraph; `verdict` paragraphs are drawn bold.
    Text {
        text: String,
        verdict: bool,
    },
    List(Vec<String>),
    /// A table and the legend under it.
    Table(Cells, Option<String>),
    /// Charts as SVG: drawn only in report.html (empty when the outline was built without them).
    Charts(Vec<String>),
    /// A block with its own Markdown and HTML (the claims section).
    Raw {
        markdown: String,
        html: String,
    },
    /// A sub-heading.
    Heading(String),
}

/// Where the outline will be drawn: charts are drawn only for the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Page,
    Text,
}

/// The answer's section is drawn apart (its list items link to the sections); the rest follow.
pub struct Outline {
    pub sections: Vec<Section>,
}

fn text(text: String) -> Block {
    Block::Text {
        text,
        verdict: false,
    }
}

fn bold(text: String) -> Block {
    Block::Text {
        text,
        verdict: true,
    }
}

fn charts(target: Target, draw: impl FnOnce() -> anyhow::Result<Vec<String>>) -> Block {
    Block::Charts(match target {
        // A chart that fails to draw is left out; the table above it holds its figures.
        Target::Page => draw().unwrap_or_default(),
        Target::Text => Vec::new(),
    })
}

impl Outline {
    /// Every section after the answer: the studies, equal load, the sweeps, the claims, how to
    /// read the report and the environment.
    pub fn of(document: &Document, analysis: &Analysis, target: Target) -> Outline {
        let mut sections = study_sections(analysis, target);
        if target == Target::Page || !document.env.is_null() {
            sections.extend(claims_section(document, analysis));
            sections.push(how_to_read(analysis));
            sections.push(environment(document));
        }
        Outline { sections }
    }

    /// The sections a study prints in the terminal: its tables and verdicts, nothing else.
    pub fn terminal(analysis: &Analysis) -> Outline {
        Outline {
            sections: study_sections(analysis, Target::Text),
        }
    }
}

/// The anchor of study `index`'s section.
pub fn study_id(index: usize) -> String {
    format!("s{index}")
}

/// The anchor of equal-load comparison `index`'s section.
pub fn load_id(index: usize) -> String {
    format!("load-{index}")
}

/// Per study its table and verdict, then equal load, the sweeps and the depth sweeps.
fn study_sections(analysis: &Analysis, target: Target) -> Vec<Section> {
    let studies = &analysis.studies;
    let mut sections = Vec::new();
    for (index, study) in studies.iter().enumerate() {
        let mut blocks = Vec::new();
        if !study.engines.is_empty() {
            let mut table = cells(study);
            if target == Target::Text {
                // The intervals are in the verdicts; the run range and p50 in report.md.
                table.drop_columns(&["min–max", "p50 µs"]);
            }
            blocks.push(Block::Table(table, Some(MARKS_LEGEND.to_string())));
        }
        blocks.push(bold(verdict(study)));
        if let Some(sentence) = regimes_sentence(study, analysis.regime(index)) {
            blocks.push(text(sentence));
        }
        if !study.engines.is_empty() {
            blocks.push(charts(target, || {
                let drawn = [
                    Some(throughput_chart(study)?),
                    ladder_chart(study)?,
                    syscalls_chart(study)?,
                    latency_chart(study)?,
                ];
                Ok(drawn.into_iter().flatten().collect())
            }));
        }
        if let Some(table) = contender_cells(study) {
            blocks.push(Block::Heading("Contenders".to_string()));
            blocks.push(Block::List(contender_verdicts(study)));
            blocks.push(Block::Table(table, None));
            blocks.push(charts(target, || {
                Ok(contenders_chart(study)?.into_iter().collect())
            }));
        }
        if !study.notes.is_empty() {
            let notes = study
                .notes
                .iter()
                .map(|note| format!("note: {note}"))
                .collect();
            blocks.push(Block::List(notes));
        }
        sections.push(Section {
            id: study_id(index),
            heading: words(study),
            params: (!study.params.is_empty()).then(|| study.params_text()),
            blocks,
        });
    }
    for (index, load) in analysis.loads.iter().enumerate() {
        let mut blocks = Vec::new();
        if let Some(scale) = scale_text(load) {
            blocks.push(text(scale));
        }
        blocks.push(Block::Table(equal_load_cells(load), None));
        blocks.push(bold(equal_load::verdict(load)));
        blocks.push(charts(target, || equal_load_charts(load)));
        sections.push(Section {
            id: load_id(index),
            heading: format!("{} at equal load", load.title()),
            params: None,
            blocks,
        });
    }
    let sweeps = thread_sweeps(studies)
        .into_iter()
        .chain(size_sweeps(studies))
        .chain(work_sweeps(studies));
    for (index, sweep) in sweeps.enumerate() {
        let verdicts: Vec<String> = (size_verdicts(&sweep).into_iter())
            .chain(work_verdicts(&sweep))
            .collect();
        let mut blocks = Vec::new();
        if !verdicts.is_empty() {
            blocks.push(Block::List(verdicts));
        }
        blocks.push(Block::Table(sweep_cells(&sweep), None));
        blocks.push(charts(target, || thread_sweep_charts(&sweep)));
        sections.push(Section {
            id: format!("sweep-{index}"),
            heading: format!("{}: against {}", sweep.title, sweep.noun()),
            params: None,
            blocks,
        });
    }
    for (index, sweep) in depth_sweeps(studies).into_iter().enumerate() {
        let blocks = vec![
            Block::List(depth_verdicts(&sweep)),
            Block::Table(depth_cells(&sweep), None),
            charts(target, || depth_charts(&sweep)),
        ];
        sections.push(Section {
            id: format!("depths-{index}"),
            heading: format!("{}: against queue depth", sweep.title),
            params: None,
            blocks,
        });
    }
    sections
}

/// The published claims judged on this document's studies, where any applies.
fn claims_section(document: &Document, analysis: &Analysis) -> Option<Section> {
    let markdown = crate::report::claims::section(&document.env, &analysis.studies);
    let html = crate::report::claims::html_section(&document.env, &analysis.studies);
    (!markdown.is_empty()).then(|| Section {
        id: "claims".to_string(),
        heading: String::new(),
        params: None,
        blocks: vec![Block::Raw { markdown, html }],
    })
}

/// The words every verdict uses, each with the anchor the page links it to.
pub const GLOSSARY: [(&str, &str, &str); 10] = [
    (
        "rounds",
        "round",
        "A study runs every engine once per round, in an order drawn afresh each round, each \
         engine next to the engine it extends. Every comparison divides two engines' figures \
         round by round, so the machine's drift falls on both sides.",
    ),
    (
        "rungs",
        "rung",
        "Each io_uring engine adds one feature to the engine it extends (its parent): the ratio \
         of an engine to its parent is what that feature bought here. \"uring-defer over \
         uring-ring via uring-fixed\" means uring-fixed did not run, so the ratio covers both \
         steps.",
    ),
    (
        "interval",
        "interval",
        "The bracket after a ratio, [low–high], is its confidence interval: the ratios the \
         rounds are compatible with. The words beside a ratio are read off this interval and \
         nothing else.",
    ),
    (
        "faster",
        "faster",
        "faster, slower, cheaper, costlier: the whole interval lies beyond the margin (3% for \
         throughput and CPU, 1% for syscalls, 15% for p99). Only these are marked ★ in a table.",
    ),
    (
        "no-difference",
        "no difference beyond 3%",
        "The whole interval lies inside ±3%: any difference is smaller than the margin. Marked =.",
    ),
    (
        "within",
        "within 10%",
        "The whole interval lies inside ±10% but not inside ±3%: a difference of a few percent \
         may hide here. Not \"the same\". Marked ≈.",
    ),
    (
        "undecided",
        "undecided",
        "None of the above: more rounds might decide it. The sentence says the smallest \
         difference this run could have decided. Marked ~.",
    ),
    (
        "tied",
        "tied",
        "Engines not decided slower than the leading one are named together as a tie; a star \
         marks only an engine decided faster than the baseline and every other engine.",
    ),
    (
        "regime",
        "regime",
        "In a closed loop, the side that set the pace: server-bound (the server's cores busy, \
         the load free: throughput ranks the servers), neither (round trips set the pace), or \
         the load generator saturated in some or all runs (client-bound, mixed): then \
         throughput ranks the load generator and the equal-load sweep compares the servers' \
         CPU at the same offered rate.",
    ),
    (
        "levels",
        "levels",
        "The first screen's comparisons are decided together: each interval is wider (at \
         1 − 5%/m for its m comparisons) so that all of them hold at 95% at once. A section's \
         other comparisons are at 95% each; a section shows the screen's interval for a \
         comparison the screen asked, so no comparison has two intervals on one page.",
    ),
];

fn how_to_read(analysis: &Analysis) -> Section {
    let mut items: Vec<String> = GLOSSARY
        .iter()
        .map(|(_, term, meaning)| format!("{term}: {meaning}"))
        .collect();
    items.push(analysis.levels_text());
    Section {
        id: "how-to-read".to_string(),
        heading: "How to read this report".to_string(),
        params: None,
        blocks: vec![Block::List(items)],
    }
}

fn environment(document: &Document) -> Section {
    let lines: Vec<Vec<String>> = (facts(&document.env).into_iter())
        .map(|(label, value)| vec![label.to_string(), value])
        .collect();
    let mut blocks = vec![Block::Table(
        Cells {
            header: vec!["fact".to_string(), "value".to_string()],
            lines,
        },
        None,
    )];
    let warnings = warnings(&document.env);
    if !warnings.is_empty() {
        blocks.push(text("Warnings from the probe:".to_string()));
        blocks.push(Block::List(warnings));
    }
    Section {
        id: "environment".to_string(),
        heading: "Environment".to_string(),
        params: None,
        blocks,
    }
}

/// The first screen's charts, one per study whose line has two engines.
pub fn answer_charts(analysis: &Analysis) -> anyhow::Result<Vec<String>> {
    let mut drawn = Vec::new();
    for (index, study) in analysis.studies.iter().enumerate() {
        let winner = analysis.screen.winner(index);
        drawn.extend(answer_chart(study, analysis.regime(index), winner)?);
    }
    Ok(drawn)
}
