//! ringside: how much do io_uring and its features buy over blocking syscalls and epoll, for
//! file and network I/O, on this machine and kernel, and why?
//!
//! The crate is one binary with a library beside it so tests can call the internals. Results are
//! rows (`row`), measured by the kernel (`measure`), printed or exported (`output`). Each
//! workload lives in its own module with one file per engine and one table listing them.

pub mod cli;
pub mod fs;
pub mod histogram;
pub mod measure;
pub mod net;
pub mod output;
pub mod pin;
pub mod probe;
pub mod progress;
pub mod report;
pub mod ring;
pub mod row;
pub mod run;
pub mod study;
pub mod tuning;
pub mod units;
