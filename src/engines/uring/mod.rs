//! The io_uring engines. `ring.rs` sets up every ring (its flags, its kernel helper threads, and
//! why the kernel refused one, in operator terms; `refusal.rs` finds the one setup flag a kernel
//! lacks); `trial.rs` asks this machine whether it gives what a row of the engine table needs;
//! `token.rs` is what a server's `user_data` carries; `buf_ring.rs` is the provided-buffer ring
//! multishot receives take buffers from;
//! `file.rs` is the file engine, whose submission styles are the rungs of the file ladder
//! (`read.rs`: its reads of single blocks at a queue depth, and the NOP floor); and
//! `server/` is the server loop with one file per receive and send strategy, so a new rung of
//! the network ladder (bundles, zero-copy send, registered files, SQPOLL) is one file there.
//! Every engine keeps its ring beside the memory its requests use in `teardown.rs`'s
//! `KernelHeld`, whose teardown cancels and reaps every request before that memory is freed;
//! `canary.rs` (the `canary` feature) is the allocator that catches a free made too early.

pub mod buf_ring;
#[cfg(feature = "canary")]
pub mod canary;
pub mod file;
mod read;
pub mod refusal;
pub mod registered;
pub mod ring;
pub mod server;
pub mod teardown;
pub mod token;
pub mod trial;
