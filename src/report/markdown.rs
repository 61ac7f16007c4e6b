//! `report.md`: first the answer (`answer`: per study what won and why, the io_uring features
//! that helped and hurt, the caveats), then the tables of the source documents filled with this
//! machine's numbers, one per study, each followed by its measured verdict. The studies print
//! the same sections in the terminal (`terminal`), so a figure or a verdict reads the same
//! wherever it is shown.

use comfy_table::{presets, ContentArrangement, Table};

use crate::model::study::Study;
use crate::report::answer::{answer, Answer};
use crate::report::contenders::{contender_cells, contender_verdicts};
use crate::report::depths::{depth_cells, depth_sweeps, depth_verdicts};
use crate::report::equal_load::equal_loads;
use crate::report::table::{cells, equal_load_cells, sweep_cells, Cells, MARKS_LEGEND};
use crate::report::threads::{size_sweeps, size_verdicts, thread_sweeps, work_sweeps};
use crate::report::verdict::verdict;
use crate::report::work::work_verdicts;
use crate::row::Document;

/// How the sections' tables are drawn: Markdown's pipes, or a terminal's box of at most
/// `TERMINAL_COLUMNS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Markdown,
    Terminal,
}

/// The width the terminal's tables fit in.
pub const TERMINAL_COLUMNS: u16 = 100;

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
    text.push_str(&sections(document, studies, Style::Markdown));
    text
}

/// The study sections of the report, in `style`: per study its table and verdict, then equal
/// load, the sweeps and the depth sweeps, each with its verdicts.
pub fn sections(document: &Document, studies: &[Study], style: Style) -> String {
    let heading = |title: &str| match style {
        Style::Markdown => format!("## {title}\n\n"),
        Style::Terminal => format!("{title}\n"),
    };
    let mut text = String::new();
    if studies.is_empty() && equal_loads(&document.results).is_empty() {
        text.push_str("No results: no study finished.\n");
    }
    for study in studies {
        text.push_str(&study_section(study, style));
    }
    for load in equal_loads(&document.results) {
        text.push_str(&heading(&format!("{} at equal load", load.title())));
        let verdict = match style {
            Style::Markdown => format!("**{}**", load.verdict()),
            Style::Terminal => load.verdict(),
        };
        text.push_str(&format!(
            "{}\n\n{verdict}\n\n",
            draw(equal_load_cells(&load), style)
        ));
    }
    for sweep in thread_sweeps(studies)
        .into_iter()
        .chain(size_sweeps(studies))
        .chain(work_sweeps(studies))
    {
        text.push_str(&heading(&format!(
            "{}: against {}",
            sweep.title,
            sweep.noun()
        )));
        for verdict in size_verdicts(&sweep)
            .into_iter()
            .chain(work_verdicts(&sweep))
        {
            text.push_str(&format!("- {verdict}\n"));
        }
        text.push_str(&format!("\n{}\n\n", draw(sweep_cells(&sweep), style)));
    }
    for sweep in depth_sweeps(studies) {
        text.push_str(&heading(&format!("{}: against queue depth", sweep.title)));
        for sentence in depth_verdicts(&sweep) {
            text.push_str(&format!("- {sentence}\n"));
        }
        text.push_str(&format!("\n{}\n\n", draw(depth_cells(&sweep), style)));
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

fn study_section(study: &Study, style: Style) -> String {
    let mut cells = cells(study);
    if style == Style::Terminal {
        // The interval of every comparison is in the verdicts; the run range and p50 are in
        // report.md and the charts.
        cells.drop_columns(&["min–max", "p50 µs"]);
    }
    let table = draw(cells, style);
    let mut text = match style {
        Style::Markdown => format!("## {}\n\n", study.title),
        Style::Terminal => format!("{}\n", study.title),
    };
    if !study.params.is_empty() {
        match style {
            Style::Markdown => text.push_str(&format!("`{}`\n\n", study.params_text())),
            Style::Terminal => text.push_str(&format!("{}\n", study.params_text())),
        }
    }
    if !study.engines.is_empty() {
        text.push_str(&format!("{table}\n{MARKS_LEGEND}\n\n"));
    }
    text.push_str(&format!("{}\n\n", verdict(study)));
    if let Some(cells) = contender_cells(study) {
        let heading = match style {
            Style::Markdown => "### Contenders\n\n",
            Style::Terminal => "Contenders\n",
        };
        text.push_str(&format!("{heading}{}\n\n", draw(cells, style)));
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

fn draw(cells: Cells, style: Style) -> Table {
    let mut table = Table::new();
    match style {
        Style::Markdown => {
            table.load_style(presets::ASCII_MARKDOWN);
        }
        Style::Terminal => {
            table
                .load_style(presets::UTF8_FULL_CONDENSED)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(TERMINAL_COLUMNS);
        }
    }
    table.set_header(cells.header);
    for line in cells.lines {
        table.add_row(line);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;
    use crate::model::study::tests::paired_rows;
    use crate::report::verdict::verdict;

    fn document() -> Document {
        let rows = paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-single", 300.0, 1000),
                ("uring-batch", 1010.0, 10),
                ("uring-ring", 1015.0, 10),
            ],
            12,
        );
        Document::new(serde_json::json!({"machine": "test"}), rows)
    }

    /// Goal: the terminal and report.md show one model: the same verdict sentence and the same
    /// figures for the same rows.
    #[test]
    fn the_terminal_and_the_markdown_report_say_the_same() {
        let document = document();
        let studies = studies(&document.results);
        let markdown = render_markdown(&document, &studies);
        let terminal = sections(&document, &studies, Style::Terminal);
        let sentence = verdict(&studies[0]);
        assert!(
            markdown.contains(&sentence) && terminal.contains(&sentence),
            "{terminal}"
        );
        for figure in [
            "0.30× ★ blocking",
            "3.37× ★ uring-single",
            "1.01× = uring-batch",
        ] {
            assert!(
                markdown.contains(figure),
                "{figure} missing from {markdown}"
            );
            assert!(
                terminal.contains(figure),
                "{figure} missing from {terminal}"
            );
        }
        let widest = terminal
            .lines()
            .map(|line| line.chars().count())
            .filter(|&n| n < 200);
        let table_lines = terminal.lines().filter(|line| line.starts_with('│'));
        assert!(table_lines.clone().count() >= 4);
        assert!(table_lines
            .map(|line| line.chars().count())
            .all(|n| n <= 100));
        assert!(widest.count() > 0);
    }

    /// Goal: a ★ marks only a decided difference, and every ratio of the first screen names its
    /// interval and rounds.
    #[test]
    fn stars_mark_only_decided_differences_and_the_first_screen_names_its_rounds() {
        let document = document();
        let studies = studies(&document.results);
        let markdown = render_markdown(&document, &studies);
        let stars: Vec<&str> = markdown
            .lines()
            .filter(|line| line.contains("× ★"))
            .collect();
        assert_eq!(stars.len(), 2, "{stars:?}");
        assert!(
            !markdown.contains("1.01× ★"),
            "a star on an equivalent rung: {markdown}"
        );
        let answer = crate::report::answer::answer(&document, &studies);
        for (_, finding) in &answer.studies {
            assert!(
                finding.contains(" rounds") || finding.contains(" round"),
                "{finding}"
            );
        }
        for line in answer.helped.iter().chain(&answer.hurt) {
            assert!(line.contains(" rounds in "), "{line}");
        }
    }
}
