//! The shared receive pool: giving buffers back, and the connections whose receive found it
//! empty (ENOBUFS), which wait for a buffer to come back and are re-armed when one does.

use io_uring::SubmissionQueue;

use super::Server;
use crate::engines::server::ServerCounters;
use crate::engines::uring::server::connection::Source;
use crate::engines::uring::server::receive::ReceiveStrategy;
use crate::engines::uring::server::send::SendStrategy;

impl<R: ReceiveStrategy, S: SendStrategy> Server<'_, R, S> {
    /// The receive of the connection in `slot` ended because the pool was empty (ENOBUFS). It
    /// waits for a buffer to come back, unless one may have come back since the kernel looked:
    /// the buffers given back earlier in this batch of completions woke only the connections
    /// waiting then, so this one would wait for the next buffer back, which never comes once
    /// the traffic is over (it stayed open with its peer's bytes unread and its FIN behind
    /// them). Then `rearm_or_close` re-arms it at once; at worst it finds the pool empty again.
    ///
    /// A waiting connection keeps its hang-up poll armed, so that its peer's reset closes it
    /// (`hung_up`). A reset wakes the poll and the receive together, and a receive armed while
    /// the pool had room that finds it empty then ends with ENOBUFS; the poll's completion came
    /// first in the batch, took the receive for armed and only cancelled it, so the reset was
    /// lost (the connection stayed open, its peer gone, until the pool had room). Armed again,
    /// the poll reports the reset still there (a FIN alone changes nothing: `hung_up`).
    pub(super) fn starve(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        ServerCounters::add(&self.counters.provided_buffers_exhausted, 1);
        if self.receive.pool_has_room() {
            return;
        }
        let connection = &mut self.connections[slot];
        connection.starved = true;
        self.starved.push_back((slot, connection.generation));
        if !connection.hangup_armed && !connection.closing {
            self.arm_hangup(sq, slot);
        }
    }

    /// Gives back the receive buffers of a closing connection, except one a send still reads.
    pub(super) fn release_pending(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        let connection = &self.connections[slot];
        debug_assert!(connection.closing);
        // A send in flight reads its chunk, or every chunk handed to a bundle.
        let keep = if connection.send_in_flight {
            connection.handed.max(1)
        } else {
            0
        };
        while self.connections[slot].pending.len() > keep {
            let chunk = self.connections[slot].pending.pop_back().expect("a chunk");
            if let Source::Received(buffer) = chunk.source {
                self.release(sq, buffer);
            }
        }
    }

    /// Gives a receive buffer back and, when it went back to the pool, wakes every connection
    /// starved of one. Every one, not one per buffer: a re-armed receive whose peer sends
    /// nothing more leaves the buffer in the ring, and an incrementally consumed buffer serves
    /// many receives, so waking one per buffer left connections starved beside a pool with
    /// room, for good once no buffer came back (`uring-recv-inc`'s 2 buffers: an echo stalled
    /// 10 s). One that finds the pool empty again ends with ENOBUFS and waits again; one that
    /// holds too many unsent chunks to read is re-armed by `rearm_or_close` once they are sent.
    pub(super) fn release(&mut self, sq: &mut SubmissionQueue<'_>, buffer: u16) {
        if !self.receive.release(buffer) {
            return;
        }
        while let Some((slot, generation)) = self.starved.pop_front() {
            let Some(connection) = self.connections.get_mut(slot) else {
                continue;
            };
            if connection.generation != generation || !connection.starved {
                continue;
            }
            connection.starved = false;
            if self.may_arm_recv(slot) {
                self.arm_recv(sq, slot);
            }
        }
    }
}
