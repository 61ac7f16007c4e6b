//! `ringside engines`: every engine of every workload and whether it can run here. Each
//! workload family keeps its own table (`fs::ENGINES`, `net::ENGINES`); this file turns
//! each table into the same `EngineListing` rows, so adding a family is one line in `all`.

use std::process::ExitCode;

use comfy_table::{presets, ContentArrangement, Table};
use serde::Serialize;

use crate::cli::ProbeArgs;
use crate::output::Format;

/// One engine of one workload, as `ringside engines` prints it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct EngineListing {
    pub workload: &'static str,
    pub engine: &'static str,
    pub available: bool,
    /// Why the engine cannot run here (`null` when it can).
    pub reason: Option<String>,
    pub about: &'static str,
}

impl EngineListing {
    pub fn new(
        workload: &'static str,
        engine: &'static str,
        about: &'static str,
        availability: Result<(), String>,
    ) -> EngineListing {
        EngineListing {
            workload,
            engine,
            available: availability.is_ok(),
            reason: availability.err(),
            about,
        }
    }
}

/// Every engine of every workload family, grouped by workload in the order tables name them.
pub fn all() -> Vec<EngineListing> {
    let mut listings: Vec<EngineListing> =
        crate::fs::ENGINES.iter().flat_map(file_engine).collect();
    listings.extend(
        crate::net::ENGINES
            .iter()
            .map(|def| EngineListing::new("echo", def.name, def.about, def.availability())),
    );
    group_by_workload(&mut listings);
    listings
}

fn file_engine(def: &'static crate::fs::EngineDef) -> Vec<EngineListing> {
    let availability = def.availability();
    def.workloads
        .iter()
        .map(|workload| {
            EngineListing::new(workload.name(), def.name, def.about, availability.clone())
        })
        .collect()
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

pub fn run_engines(args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    let listings = all();
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&listings)? + "\n",
        Format::Table => render_table(&listings),
        Format::Csv => anyhow::bail!("engines has no CSV form; use --format json"),
    };
    super::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn render_table(listings: &[EngineListing]) -> String {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(["workload", "engine", "status", "about"]);
    for listing in listings {
        let status = match &listing.reason {
            Some(reason) => format!("unavailable: {reason}"),
            None => "available".to_string(),
        };
        table.add_row([listing.workload, listing.engine, &status, listing.about]);
    }
    table.to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_group_by_workload_keeping_table_order() {
        let listing = |workload, engine| EngineListing::new(workload, engine, "", Ok(()));
        let mut listings = vec![
            listing("fs-write", "blocking"),
            listing("fs-cycle", "blocking"),
            listing("fs-write", "uring-single"),
            listing("fs-cycle", "uring-link"),
        ];
        group_by_workload(&mut listings);
        let names: Vec<(&str, &str)> = listings.iter().map(|l| (l.workload, l.engine)).collect();
        assert_eq!(
            names,
            [
                ("fs-write", "blocking"),
                ("fs-write", "uring-single"),
                ("fs-cycle", "blocking"),
                ("fs-cycle", "uring-link"),
            ]
        );
    }

    #[test]
    fn every_engine_is_listed_for_each_of_its_workloads() {
        let file_listings: usize = crate::fs::ENGINES
            .iter()
            .map(|def| def.workloads.len())
            .sum();
        assert_eq!(all().len(), file_listings + crate::net::ENGINES.len());
    }
}
