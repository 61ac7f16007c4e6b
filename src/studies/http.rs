//! `ringside http`: seed 001's study done so that its numbers can be trusted. Each server engine
//! runs as a child process (`ringside serve http`) pinned to one core, ringside's HTTP load
//! generator runs pinned to the other, runs alternate engines, and the server is measured from
//! outside over exactly the measured window, through the same cell as the echo study
//! (`net::run_cell`), so the two studies differ only in what goes over the wire.
//!
//! It prints the report's own sections (`report::terminal_text`, handed over in its `Destination`): per connection count and body
//! size the engines' table (requests/s, syscalls and CPU per request, p50 and p99) with each
//! rung over its parent, decided, and the verdict.

use std::process::ExitCode;

use super::net::{per_message, NetCell, NetStudy};
use crate::load::{HttpLoad, LoadPlan, Mode};
use crate::protocols::http::request_bytes;
use crate::row::params::{Param, Params};
use crate::row::Row;

/// The HTTP study, as its flags asked for it.
pub struct HttpStudy {
    pub net: NetStudy,
    /// The servers' body sizes in bytes and as given (`16k`): a cell each, recorded in its
    /// rows; empty: "Hello, World!".
    pub body_sizes: Vec<(usize, String)>,
}

pub fn run(study: &HttpStudy) -> anyhow::Result<ExitCode> {
    let net = &study.net;
    let request = request_bytes("127.0.0.1", "/");
    let plan_of = |cell: &NetCell| LoadPlan {
        http: Some(HttpLoad {
            request: request.clone(),
        }),
        ..net.load_plan(cell, request.len(), Mode::Http)
    };
    let line = |cell: &NetCell, run: u32, row: &mut Row| {
        let size = (study.body_sizes.iter()).find(|(bytes, _)| Some(*bytes) == cell.payload_bytes);
        if let Some((bytes, text)) = size {
            row.params.put(Param::BodySize, text.as_str());
            row.params.put(Param::BodyBytes, *bytes);
        }
        format!(
            "{:<16} run {run} conn {:>4}: {:>9.0} req/s, {:.2} syscalls/req, \
             {:.1} µs server CPU/req",
            cell.server_label(),
            cell.connections,
            row.ops_per_sec,
            per_message(row, row.syscalls as f64),
            per_message(row, row.cpu_s() * 1e6),
        )
    };
    let sizes: Vec<Option<usize>> = match study.body_sizes.as_slice() {
        [] => vec![None],
        sizes => sizes.iter().map(|(bytes, _)| Some(*bytes)).collect(),
    };
    let table = net.destination.render_terminal;
    net.run(&sizes, plan_of, None, line, table)
}
