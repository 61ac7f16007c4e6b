//! What a study measures (`Workload`): each engine of the table serves some of them.

use serde::Serialize;

/// What a study measures; each engine serves some of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    /// `fs write`: a file written sequentially in blocks (seed 003).
    FsWrite,
    /// `fs cycle`: per page, write, fsync, read back (seed 000).
    FsCycle,
    /// `echo`: a TCP echo server under ringside's load generator (seeds 000 and 004).
    Echo,
    /// `http`: a fixed-response HTTP/1.1 server (seed 001).
    Http,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::FsWrite,
        Workload::FsCycle,
        Workload::Echo,
        Workload::Http,
    ];

    /// The name rows carry in `workload`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::FsWrite => "fs-write",
            Workload::FsCycle => "fs-cycle",
            Workload::Echo => "echo",
            Workload::Http => "http",
        }
    }

    /// Served by a server engine over TCP (else by a file engine).
    pub fn is_network(self) -> bool {
        matches!(self, Workload::Echo | Workload::Http)
    }
}
