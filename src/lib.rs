//! ringside: how much do io_uring and its features buy over blocking syscalls and epoll, for
//! file and network I/O, on this machine and kernel, and why?
//!
//! The crate is one binary with a library beside it so tests can call the internals. The path
//! of data: the command line (`cli`) turns flags into a plain plan; a study (`studies`) runs the
//! engines of the one engine table (`engines`) and, for network workloads, the load generator
//! (`load`) speaking a protocol (`protocols`), measured by the kernel (`measure`); each run
//! becomes a row (`row`) that is printed or exported (`output`) and summarised into reports
//! (`report`). `run` runs the whole study; `probe` records the machine; `stats` holds the
//! statistics every table uses; `system` the machine's knobs (pinning, scheduling, the stop
//! flag). docs/ARCHITECTURE.md says what each folder may import.

pub mod analysis;
pub mod cli;
pub mod engines;
pub mod load;
pub mod measure;
pub mod model;
pub mod output;
pub mod probe;
pub mod protocols;
pub mod report;
pub mod row;
pub mod run;
pub mod stats;
pub mod studies;
pub mod system;
pub mod units;
