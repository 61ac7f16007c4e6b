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

/// One line of a study's table: an engine, at one server-thread count and work per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLine<'a> {
    pub engine: &'a str,
    /// `params.server_threads` (absent: one loop).
    pub server_threads: u64,
    /// `params.work_ns` (absent: no `--work`).
    pub work_ns: Option<u64>,
    /// Whether the study swept server threads, so the label names the count.
    sweep: bool,
    /// Whether the study swept `--work`, so the label names it.
    work_sweep: bool,
}

impl TableLine<'_> {
    pub fn label(&self) -> String {
        let mut label = match self.sweep {
            true if self.server_threads == 1 => format!("{}, 1 loop", self.engine),
            true => format!("{}, {} loops", self.engine, self.server_threads),
            false => self.engine.to_string(),
        };
        if let (true, Some(work)) = (self.work_sweep, self.work_ns) {
            label.push_str(&format!(
                ", work {:?}",
                std::time::Duration::from_nanos(work)
            ));
        }
        label
    }

    /// Whether `row` is a run of this line.
    pub fn holds(&self, row: &Row) -> bool {
        row.engine == self.engine
            && server_threads(row) == self.server_threads
            && param(row, "work_ns") == self.work_ns
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
    let mut works: Vec<Option<u64>> = rows.iter().map(|row| param(row, "work_ns")).collect();
    works.sort_unstable();
    works.dedup();
    let work_sweep = works.len() > 1;
    let mut lines: Vec<TableLine> = Vec::new();
    for row in rows {
        let line = TableLine {
            engine: &row.engine,
            server_threads: server_threads(row),
            work_ns: param(row, "work_ns"),
            sweep,
            work_sweep,
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let mut engines: Vec<&str> = lines.iter().map(|line| line.engine).collect();
    engines.dedup();
    lines.sort_by_key(|line| {
        let first = engines.iter().position(|&engine| engine == line.engine);
        (first, line.server_threads, line.work_ns)
    });
    lines
}

/// The open-loop table (`--rate`, `--sweep`): per connection count and offered rate, each
/// engine's achieved rate, server CPU per operation (median, and the range of the runs), its
/// latency and its late sends; a sweep's probes first, as what each engine sustained closed.
pub fn equal_load_table(rows: &[Row]) -> String {
    use crate::stats::median;
    let mut groups: Vec<(u64, Option<u64>, Option<f64>)> = Vec::new();
    for row in rows {
        let key = (
            param(row, "connections").unwrap_or(0),
            param(row, "payload_bytes"),
            row.offered_rate,
        );
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut text = String::new();
    for (connections, payload, offered) in groups {
        let members: Vec<&Row> = (rows.iter())
            .filter(|r| param(r, "connections") == Some(connections))
            .filter(|r| param(r, "payload_bytes") == payload && r.offered_rate == offered)
            .collect();
        let payload = payload.map_or(String::new(), |bytes| format!(", {bytes} B"));
        text.push_str(&match offered {
            Some(rate) => format!("{connections} connections{payload}, offered {rate:.0}/s\n"),
            None => format!("{connections} connections{payload}, closed loop (probe)\n"),
        });
        text.push_str(
            "| engine | achieved/s | server CPU µs/op (range) | server CPU | p50 µs | p99 µs \
             | p99.9 µs | sends late | held |\n|---|---|---|---|---|---|---|---|---|\n",
        );
        let mut engines: Vec<&str> = Vec::new();
        for row in &members {
            if !engines.contains(&row.engine.as_str()) {
                engines.push(&row.engine);
            }
        }
        for engine in engines {
            let runs: Vec<&Row> = members
                .iter()
                .copied()
                .filter(|r| r.engine == engine)
                .collect();
            let of = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<f64> {
                runs.iter().filter_map(|r| f(r)).collect()
            };
            let us = |f: fn(&Row) -> Option<u64>| {
                let values = of(&|r| f(r).map(|ns| ns as f64 / 1e3));
                format!("{:.0}", median(&values))
            };
            let cpu = of(&|r| r.server_cpu_us_per_op);
            let (low, high) = cpu.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
            let late = of(&|r| r.client_late_share);
            let held: Vec<bool> = runs.iter().filter_map(|r| r.held_offered_rate()).collect();
            text.push_str(&format!(
                "| {engine}{} | {:.0} | {:.2} ({low:.2}–{high:.2}) | {:.0}% | {} | {} | {} | {} | {} |\n",
                markers(&runs),
                median(&of(&|r| Some(r.ops_per_sec))),
                median(&cpu),
                median(&of(&|r| r.server_cpu_utilisation)) * 100.0,
                us(|r| r.latency_ns_p50),
                us(|r| r.latency_ns_p99),
                us(|r| r.latency_ns_p999),
                match late.is_empty() {
                    true => "-".to_string(),
                    false => format!("{:.2}%", median(&late) * 100.0),
                },
                match held.is_empty() {
                    true => "-".to_string(),
                    false => format!("{}/{}", held.iter().filter(|&&h| h).count(), held.len()),
                },
            ));
        }
        text.push('\n');
    }
    text.push_str(
        "held: runs that achieved ≥97% of the offered rate with ≤1% of sends more than 1 ms late \
         and p99 under the sweep's bound; * client behind its schedule (open loop) or saturated \
         (probe); latency counts from each message's due time\n",
    );
    text
}
