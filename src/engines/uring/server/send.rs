//! The send strategy of the io_uring server: the SQE that sends a chunk. The loop keeps one
//! send in flight per connection and resubmits the rest after a short send, whatever the
//! strategy. A new way to send (zero-copy send) is one file implementing this trait and one row
//! of the engine table.

use io_uring::{squeue, types};

pub trait SendStrategy {
    /// The SQE that sends `bytes` on `fd`. The bytes stay untouched until it completes.
    fn prepare(fd: types::Fd, bytes: &[u8]) -> squeue::Entry;
}
