//! `report.md` and the terminal: the analysis's first screen (the headline, per study what it
//! answered, the features that made a decided difference, the caveats), then the report's one
//! outline (`outline`): each study's table and verdict, equal load, the sweeps, the claims, how
//! to read it. A figure or a verdict reads the same wherever it is shown: every one comes from
//! the one `Analysis`.

use comfy_table::{presets, ContentArrangement, Table};

use crate::analysis::Analysis;
use crate::report::outline::{Block, Outline, Target};
use crate::report::table::Cells;
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

pub fn render_markdown(document: &Document, analysis: &Analysis) -> String {
    let mut text = String::from("# ringside report\n\n");
    text.push_str(&answer_section(analysis));
    text.push_str(&format!(
        "Produced by ringside {} with `{}`.\n\n",
        document.ringside_version, document.command
    ));
    for note in &document.notes {
        text.push_str(&format!("> {note}\n\n"));
    }
    if analysis.studies.is_empty() && analysis.loads.is_empty() {
        text.push_str("No results: no study finished.\n\n");
    }
    text.push_str(&draw_outline(
        &Outline::of(document, analysis, Target::Text),
        Style::Markdown,
    ));
    text
}

/// The study sections in `style` (a study's own terminal output, `report::terminal_text`).
pub fn sections(analysis: &Analysis, style: Style) -> String {
    let mut text = String::new();
    if analysis.studies.is_empty() && analysis.loads.is_empty() {
        text.push_str("No results: no study finished.\n");
    }
    text.push_str(&draw_outline(&Outline::terminal(analysis), style));
    text
}

/// The outline's sections in `style`.
fn draw_outline(outline: &Outline, style: Style) -> String {
    let mut text = String::new();
    for section in &outline.sections {
        if !section.heading.is_empty() {
            text.push_str(&match style {
                Style::Markdown => format!("## {}\n\n", section.heading),
                Style::Terminal => format!("{}\n", section.heading),
            });
        }
        if let Some(params) = &section.params {
            text.push_str(&match style {
                Style::Markdown => format!("`{params}`\n\n"),
                Style::Terminal => format!("{params}\n"),
            });
        }
        for block in &section.blocks {
            text.push_str(&draw_block(block, style));
        }
    }
    text
}

fn draw_block(block: &Block, style: Style) -> String {
    match block {
        Block::Text { text, verdict } => match (style, verdict) {
            (Style::Markdown, true) => format!("**{text}**\n\n"),
            _ => format!("{text}\n\n"),
        },
        Block::List(items) if items.is_empty() => String::new(),
        Block::List(items) => {
            let lines: String = items.iter().map(|item| format!("- {item}\n")).collect();
            format!("{lines}\n")
        }
        Block::Table(cells, legend) => {
            let legend = legend.as_ref().map_or(String::new(), |l| format!("{l}\n"));
            format!("{}\n{legend}\n", draw(cells.clone(), style))
        }
        Block::Charts(_) => String::new(),
        Block::Raw { markdown, .. } => markdown.clone(),
        Block::Heading(heading) => match style {
            Style::Markdown => format!("### {heading}\n\n"),
            Style::Terminal => format!("{heading}\n"),
        },
    }
}

/// The first screen in Markdown: the headline, the machine, each study's answer, the lists.
fn answer_section(analysis: &Analysis) -> String {
    let screen = &analysis.screen;
    let mut text = String::from("## The answer on this machine\n\n");
    for sentence in &screen.headline {
        text.push_str(&format!("**{sentence}**\n"));
    }
    text.push_str(&format!("\n{}.\n\n", analysis.machine));
    for answer in &screen.answers {
        text.push_str(&format!("- **{}**: {}\n", answer.words, answer.text));
    }
    for (heading, items, empty) in screen.lists() {
        text.push_str(&format!("\n**{heading}**\n\n"));
        if items.is_empty() {
            text.push_str(&format!("- {empty}\n"));
        }
        for item in items {
            text.push_str(&format!("- {item}\n"));
        }
    }
    if !screen.integrity.is_empty() {
        text.push_str("\n**Integrity checks**\n\n");
        for answer in &screen.integrity {
            text.push_str(&format!("- {}: {}\n", answer.words, answer.text));
        }
    }
    text.push_str(&format!("\n{}\n\n", analysis.levels_text()));
    text
}

/// The headline and each study's answer as the terminal ends a run with them.
pub fn answer_text(analysis: &Analysis) -> String {
    let mut text = String::new();
    for sentence in &analysis.screen.headline {
        text.push_str(&format!("{sentence}\n"));
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
        let analysis = Analysis::of(&document);
        let markdown = render_markdown(&document, &analysis);
        let terminal = sections(&analysis, Style::Terminal);
        let sentence = verdict(&analysis.studies[0]);
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
        let analysis = Analysis::of(&document);
        let markdown = render_markdown(&document, &analysis);
        let stars: Vec<&str> = markdown
            .lines()
            .filter(|line| line.contains("× ★"))
            .collect();
        assert_eq!(stars.len(), 2, "{stars:?}");
        assert!(
            !markdown.contains("1.01× ★"),
            "a star on an equivalent rung: {markdown}"
        );
        let screen = &analysis.screen;
        for answer in &screen.answers {
            let said = answer.text.contains(" rounds") || answer.text.contains("could tell apart");
            assert!(said, "{}", answer.text);
        }
        for feature in screen.helped.iter().chain(&screen.hurt) {
            assert!(feature.text.contains(" rounds in "), "{}", feature.text);
        }
    }
}
