//! The send strategy of the io_uring server: the SQE that sends a chunk. The loop keeps one
//! send in flight per connection and resubmits the rest after a short send, whatever the
//! strategy. A new way to send is one file implementing this trait and one row of the engine
//! table.

use io_uring::{squeue, types};

pub trait SendStrategy {
    /// A send that moved bytes posts a second completion, a notification, once the kernel no
    /// longer reads them (zero-copy): the bytes stay untouched until then, not only until the
    /// send completes.
    const NOTIFIES: bool;

    /// The SQE that sends `bytes` on `fd`; `registered` is the index of the registered buffer
    /// that holds them, when the row registers buffers.
    fn prepare(fd: types::Fd, bytes: &[u8], registered: Option<u16>) -> squeue::Entry;
}
