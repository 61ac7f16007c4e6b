//! The `threads` engines: many threads making blocking calls, the answer io_uring is most often
//! weighed against. A server with a thread per connection (`server.rs`), and a file engine with
//! a fixed pool of threads sharing the work (`file.rs`, as libuv's threadpool, tokio's
//! `spawn_blocking` or PostgreSQL's `io_method=worker`).

pub mod file;
pub mod server;
