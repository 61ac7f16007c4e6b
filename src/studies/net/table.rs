//! What the echo and HTTP studies' tables share: a row's figures per message, its markers, and
//! the table's lines.

use serde_json::Value;

use crate::row::Row;

/// `amount` per message (or request) of `row` (NaN when it has none).
pub fn per_message(row: &Row, amount: f64) -> f64 {
    if row.ops > 0 {
        amount / row.ops as f64
    } else {
        f64::NAN
    }
}

/// A numeric parameter of `row` (`connections`, `payload_bytes`).
pub fn param(row: &Row, key: &str) -> Option<u64> {
    row.params.get(key).and_then(Value::as_u64)
}

/// What a study's table appends to a cell of `runs`: `*` a saturated client, `!` errors,
/// ` FAILED` (the notes below the table say why) and ` NOT VERIFIED` in some run.
pub fn markers(runs: &[&Row]) -> String {
    let mut text = String::new();
    if runs.iter().any(|r| r.client_saturated == Some(true)) {
        text.push('*');
    }
    if runs.iter().any(|r| r.errors > 0) {
        text.push('!');
    }
    if runs.iter().any(|r| r.failure.is_some()) {
        text.push_str(" FAILED");
    }
    if runs.iter().any(|r| !r.verified && r.failure.is_none()) {
        text.push_str(" NOT VERIFIED");
    }
    text
}

/// The lines below a study's tables that say why a run failed or did not verify.
pub fn failure_lines(rows: &[Row]) -> String {
    let mut text = String::new();
    for (row, note) in rows
        .iter()
        .flat_map(|row| row.notes.iter().map(move |note| (row, note)))
        .filter(|(_, note)| note.starts_with("NOT VERIFIED") || note.starts_with("FAILED"))
    {
        text.push_str(&format!("{} {}: {note}\n", row.engine, row.params_text()));
    }
    text
}

/// One line of a study's table: an engine, at one server-thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLine<'a> {
    pub engine: &'a str,
    /// `params.server_threads` (absent: one loop).
    pub server_threads: u64,
    /// Whether the study swept server threads, so the label names the count.
    sweep: bool,
}

impl TableLine<'_> {
    pub fn label(&self) -> String {
        match self.sweep {
            true if self.server_threads == 1 => format!("{}, 1 loop", self.engine),
            true => format!("{}, {} loops", self.engine, self.server_threads),
            false => self.engine.to_string(),
        }
    }

    /// Whether `row` is a run of this line.
    pub fn holds(&self, row: &Row) -> bool {
        row.engine == self.engine && server_threads(row) == self.server_threads
    }
}

/// The server's event loops a row ran with (one unless it records more).
pub fn server_threads(row: &Row) -> u64 {
    param(row, "server_threads").unwrap_or(1)
}

/// The table's lines, engines in the order the rows first name them, each engine's thread
/// counts ascending.
pub fn lines_in(rows: &[Row]) -> Vec<TableLine<'_>> {
    let mut counts: Vec<u64> = rows.iter().map(server_threads).collect();
    counts.sort_unstable();
    counts.dedup();
    let sweep = counts.len() > 1;
    let mut lines: Vec<TableLine> = Vec::new();
    for row in rows {
        let line = TableLine {
            engine: &row.engine,
            server_threads: server_threads(row),
            sweep,
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let mut engines: Vec<&str> = lines.iter().map(|line| line.engine).collect();
    engines.dedup();
    lines.sort_by_key(|line| {
        let first = engines.iter().position(|&engine| engine == line.engine);
        (first, line.server_threads)
    });
    lines
}
