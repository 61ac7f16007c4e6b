//! `report.md`: first the answer (`answer`: per study what won and why, the io_uring features
//! that helped and hurt, the caveats), then the tables of the source documents filled with this
//! machine's numbers, one per study, each followed by its measured verdict.

use comfy_table::{presets, Table};

use crate::model::study::Study;
use crate::report::answer::{answer, Answer};
use crate::report::contenders::{contender_cells, contender_verdicts};
use crate::report::depths::{depth_cells, depth_sweeps, depth_verdicts};
use crate::report::equal_load::equal_loads;
use crate::report::table::{cells, equal_load_cells, sweep_cells, Cells};
use crate::report::threads::{size_sweeps, size_verdicts, thread_sweeps, work_sweeps};
use crate::report::verdict::verdict;
use crate::report::work::work_verdicts;
use crate::row::Document;

pub fn render_markdown(document: &Document, studies: &[Study]) -> String {
    let mut text = String::from("# ringside report\n\n");
    text.push_str(&answer_section(&answer(document, studies)));
    text.push_str(&format!(
        "Produced by ringside {} with `{}`.\n\n",
        document.ringside_version, document.command
    ));
    for note in &document.notes {
        text.push_str(&format!("> {note}\n\n"));
    }
    if studies.is_empty() && equal_loads(&document.results).is_empty() {
        text.push_str("No results: no study finished.\n");
    }
    for study in studies {
        text.push_str(&study_section(study));
    }
    for load in equal_loads(&document.results) {
        text.push_str(&format!(
            "## {} at equal load\n\n**{}**\n\n{}\n\n",
            load.title(),
            load.verdict(),
            markdown_table(equal_load_cells(&load))
        ));
    }
    for sweep in thread_sweeps(studies)
        .into_iter()
        .chain(size_sweeps(studies))
        .chain(work_sweeps(studies))
    {
        text.push_str(&format!("## {}: against {}\n\n", sweep.title, sweep.noun()));
        for verdict in size_verdicts(&sweep)
            .into_iter()
            .chain(work_verdicts(&sweep))
        {
            text.push_str(&format!("- {verdict}\n"));
        }
        text.push_str(&format!("\n{}\n\n", markdown_table(sweep_cells(&sweep))));
    }
    for sweep in depth_sweeps(studies) {
        text.push_str(&format!("## {}: against queue depth\n\n", sweep.title));
        for sentence in depth_verdicts(&sweep) {
            text.push_str(&format!("- {sentence}\n"));
        }
        text.push_str(&format!("\n{}\n\n", markdown_table(depth_cells(&sweep))));
    }
    text
}

fn answer_section(answer: &Answer) -> String {
    let mut text = format!("## The answer on this machine\n\n{}.\n\n", answer.machine);
    for (title, finding) in &answer.studies {
        text.push_str(&format!("- **{title}**: {finding}\n"));
    }
    for (heading, items, empty) in answer.lists() {
        text.push_str(&format!("\n**{heading}**\n\n"));
        if items.is_empty() {
            text.push_str(&format!("- {empty}\n"));
        }
        for item in items {
            text.push_str(&format!("- {item}\n"));
        }
    }
    text.push('\n');
    text
}

fn study_section(study: &Study) -> String {
    let table = markdown_table(cells(study));
    let mut text = format!("## {}\n\n", study.title);
    if !study.params.is_empty() {
        text.push_str(&format!("`{}`\n\n", study.params_text()));
    }
    if !study.engines.is_empty() {
        text.push_str(&format!("{table}\n\n"));
    }
    text.push_str(&format!("{}\n\n", verdict(study)));
    if let Some(cells) = contender_cells(study) {
        text.push_str(&format!("### Contenders\n\n{}\n\n", markdown_table(cells)));
        for sentence in contender_verdicts(study) {
            text.push_str(&format!("- {sentence}\n"));
        }
        text.push('\n');
    }
    for note in &study.notes {
        text.push_str(&format!("- note: {note}\n"));
    }
    if !study.notes.is_empty() {
        text.push('\n');
    }
    text
}

fn markdown_table(cells: Cells) -> Table {
    let mut table = Table::new();
    table.load_style(presets::ASCII_MARKDOWN);
    table.set_header(cells.header);
    for line in cells.lines {
        table.add_row(line);
    }
    table
}
