//! `ringside engines`: every engine of the engine table, once per workload it serves, whether it
//! can run here (the reason when it cannot), and what it needs from the kernel.

use std::process::ExitCode;

use comfy_table::{presets, ContentArrangement, Table};
use serde::Serialize;

use crate::engines::{EngineDef, Workload, ENGINES};
use crate::output::Format;

/// One engine of one workload, as `ringside engines` prints it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct EngineListing {
    pub workload: &'static str,
    pub engine: &'static str,
    /// The engine it extends in this workload (its parent in the ladder; `null` for a
    /// baseline): what the report divides it by.
    pub over: Option<&'static str>,
    pub available: bool,
    /// Why the engine cannot run here (`null` when it can).
    pub reason: Option<String>,
    pub about: &'static str,
    /// Run by the workload's study when `--engine` names none.
    pub default: bool,
    /// What it needs from the kernel: opcodes, setup flags, registrations, oldest Linux.
    pub needs: String,
}

impl EngineListing {
    pub fn new(
        workload: Workload,
        def: &'static EngineDef,
        availability: Result<(), String>,
    ) -> EngineListing {
        EngineListing {
            workload: workload.name(),
            engine: def.name,
            over: def.parent(workload).map(|parent| parent.name),
            available: availability.is_ok(),
            reason: availability.err(),
            about: def.about,
            default: def.default_for.contains(&workload),
            needs: def.needs.text(),
        }
    }
}

/// Every engine of the table, once per workload it serves, grouped by workload in table order.
pub fn all() -> Vec<EngineListing> {
    let mut listings: Vec<EngineListing> = Vec::new();
    for def in ENGINES {
        let availability = def.availability();
        for &workload in def.workloads {
            listings.push(EngineListing::new(workload, def, availability.clone()));
        }
    }
    group_by_workload(&mut listings);
    listings
}

/// Stable sort by the position where each workload first appears, so a table's engine order
/// (the feature ladder) is kept within each workload.
fn group_by_workload(listings: &mut [EngineListing]) {
    let mut order: Vec<&'static str> = Vec::new();
    for listing in listings.iter() {
        if !order.contains(&listing.workload) {
            order.push(listing.workload);
        }
    }
    listings.sort_by_key(|listing| order.iter().position(|w| *w == listing.workload));
}

/// `ringside engines`: the table one engine a line, `long` with what each adds to the engine
/// it is over; CSV and JSON with every field.
pub fn run_engines(format: Format, long: bool) -> anyhow::Result<ExitCode> {
    let listings = all();
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&listings)? + "\n",
        Format::Csv => render_csv(&listings)?,
        Format::Table => render_table(&listings, columns(), long),
    };
    super::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// One line per listing, the columns named like the JSON keys.
fn render_csv(listings: &[EngineListing]) -> anyhow::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for listing in listings {
        writer.serialize(listing)?;
    }
    Ok(String::from_utf8(writer.into_inner()?)?)
}

/// The width `COLUMNS` gives, as shells and `ls` read it; else the terminal's own; else (a pipe
/// without `COLUMNS`) 100, so a log line stays readable.
fn columns() -> Option<u16> {
    let given = std::env::var("COLUMNS")
        .ok()
        .and_then(|text| text.trim().parse().ok());
    match given {
        Some(columns) if columns > 0 => Some(columns),
        _ if std::io::IsTerminal::is_terminal(&std::io::stdout()) => None,
        _ => Some(100),
    }
}

/// One line per engine and workload: its parent, a short status (a numbered note for an engine
/// that cannot run here) and whether its study runs it by default (`long`: and what it adds),
/// then the notes with their reasons, each once. Without `long` every row fits one line of 80
/// columns: the longest names and a note's number take 70.
fn render_table(listings: &[EngineListing], width: Option<u16>, long: bool) -> String {
    let mut table = Table::new();
    let mut header = vec!["workload", "engine", "over", "here", "default"];
    if long {
        header.push("about");
    }
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    if let Some(width) = width {
        table.set_width(width);
    }
    let mut reasons: Vec<&str> = Vec::new();
    for listing in listings {
        let status = match &listing.reason {
            Some(reason) => {
                let index = match reasons.iter().position(|known| *known == reason) {
                    Some(index) => index,
                    None => {
                        reasons.push(reason);
                        reasons.len() - 1
                    }
                };
                format!("no ({})", index + 1)
            }
            None => "yes".to_string(),
        };
        let over = listing.over.unwrap_or("—");
        let default = if listing.default { "yes" } else { "" };
        let mut row = vec![listing.workload, listing.engine, over, &status, default];
        if long {
            row.push(listing.about);
        }
        table.add_row(row);
    }
    let mut text = table.to_string() + "\n";
    let width = width.map_or(usize::MAX, usize::from);
    for (index, reason) in reasons.iter().enumerate() {
        let note = format!("({}) {reason}", index + 1);
        text.push_str(&wrapped(&note, width));
    }
    if !long {
        let more = "default: what the workload's study runs without --engine (--full: every \
                    engine it can run). `ringside engines --long` adds what each engine adds to \
                    the one it is over; --format csv or json adds what it needs of the kernel.";
        text.push_str(&wrapped(more, width));
    }
    text
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stands
/// alone), each line after the first indented by four spaces.
fn wrapped(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.trim().is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = "   ".to_string();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out + &line + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine table as docs/engines.md shows it, one line per row; a test keeps that copy
    /// equal to this, so the page lists exactly the table's engines, defaults and needs.
    pub fn markdown_table() -> String {
        let names = |workloads: &[Workload]| {
            let names: Vec<&str> = workloads.iter().map(|w| w.name()).collect();
            if names.is_empty() {
                "—".to_string()
            } else {
                names.join(", ")
            }
        };
        let mut text = String::from(
            "| engine | over | workloads | default in | what it adds to the engine it is over | needs |\n\
             |---|---|---|---|---|---|\n",
        );
        for def in ENGINES {
            let over: Vec<String> = def.over.iter().map(|name| format!("`{name}`")).collect();
            text.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                def.name,
                if over.is_empty() {
                    "—".to_string()
                } else {
                    over.join(", ")
                },
                names(def.workloads),
                names(def.default_for),
                def.about.replace('|', "\\|"),
                def.needs.text().replace('|', "\\|")
            ));
        }
        text
    }

    #[test]
    fn csv_has_a_record_per_listing_and_the_table_keeps_to_columns() {
        let listings = all();
        let csv = render_csv(&listings).unwrap();
        assert!(csv.starts_with("workload,engine,over,available,reason,about,default,needs\n"));
        let records = csv::Reader::from_reader(csv.as_bytes()).records().count();
        assert_eq!(records, listings.len());
        let table = render_table(&listings, Some(100), true);
        let widest = table.lines().map(|line| line.chars().count()).max();
        assert!(widest <= Some(100), "{table}");
        // At 80 columns, one line per engine and workload, and no name split.
        let short = render_table(&listings, Some(80), false);
        let widest = short.lines().map(|line| line.chars().count()).max();
        assert!(widest <= Some(80), "{short}");
        let rows = short.lines().filter(|line| line.starts_with("│ ")).count();
        assert_eq!(
            rows,
            listings.len() + 1,
            "a header and a line per listing:\n{short}"
        );
        assert!(short.contains("┆ default "), "{short}");
        assert!(
            table.contains("┆ no (1) "),
            "a reason is a note below: {table}"
        );
        assert!(table.contains("\n(1) "), "{table}");
    }

    #[test]
    fn listings_group_by_workload_keeping_table_order() {
        let names: Vec<(&str, &str)> = all().iter().map(|l| (l.workload, l.engine)).collect();
        let write = names
            .iter()
            .position(|&n| n == ("fs-write", "uring-single"));
        let cycle = names.iter().position(|&n| n == ("fs-cycle", "blocking"));
        assert!(write < cycle, "{names:?}");
        assert_eq!(names[0], ("fs-write", "blocking"));
    }

    #[test]
    fn every_engine_is_listed_for_each_of_its_workloads() {
        let served: usize = ENGINES.iter().map(|def| def.workloads.len()).sum();
        assert_eq!(all().len(), served);
    }

    #[test]
    fn docs_engines_shows_the_engine_table() {
        let page = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/engines.md"));
        let table = markdown_table();
        assert!(
            page.contains(&table),
            "docs/engines.md's engine table differs from the table; paste this:\n{table}"
        );
    }
}
