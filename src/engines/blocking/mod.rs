//! The blocking engines: one plain syscall per operation, no event loop. `file.rs` is the
//! baseline of the file workloads (pwrite/fsync/pread); `server.rs` serves one connection at a
//! time with blocking recv/send, and its connection loop is also the body of every thread of
//! the `threads` engine.

pub mod file;
pub mod server;
