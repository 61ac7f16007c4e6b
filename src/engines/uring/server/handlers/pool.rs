//! The shared receive pool: giving buffers back, and whose turn it is to receive. Receives armed
//! in one submission take the pool's buffers in submission order, and each may take many (a
//! multishot receive retries up to 32 times while its socket has bytes). So when the pool runs
//! short, the order receives are armed in decides who reads: re-armed in the order their
//! completions came, the connections served last time came first again, took every buffer
//! back, and the rest found the pool empty, batch after batch (at 128 streams on 1024 buffers,
//! 54 to 58 connections read nothing for the whole run while 66 buffers came back every batch).
//! So receives are armed at the end of each batch of completions, those that found the pool
//! empty first, in the order they found it empty, then the others.

use io_uring::SubmissionQueue;

use super::Server;
use crate::engines::server::ServerCounters;
use crate::engines::uring::server::connection::Source;
use crate::engines::uring::server::receive::ReceiveStrategy;
use crate::engines::uring::server::send::SendStrategy;

impl<R: ReceiveStrategy, S: SendStrategy> Server<'_, R, S> {
    /// The receive of the connection in `slot` ended because the pool was empty (ENOBUFS), or
    /// would have: it joins the back of the starved queue.
    ///
    /// A starved connection keeps its hang-up poll armed, so that its peer's reset closes it
    /// (`hung_up`). A reset wakes the poll and the receive together, and a receive armed while
    /// the pool had room that finds it empty then ends with ENOBUFS; the poll's completion came
    /// first in the batch, took the receive for armed and only cancelled it, so the reset was
    /// lost (the connection stayed open, its peer gone, until the pool had room). Armed again,
    /// the poll reports the reset still there (a FIN alone changes nothing: `hung_up`).
    pub(super) fn starve(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        ServerCounters::add(&self.counters.provided_buffers_exhausted, 1);
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.queued && !connection.recv_armed);
        connection.queued = true;
        self.starved.push_back((slot, connection.generation));
        if !connection.hangup_armed && !connection.closing {
            self.arm_hangup(sq, slot);
        }
    }

    /// Arms the receive of the connection in `slot`: at once without a shared pool, else at the
    /// end of the batch, behind the starved connections (module doc).
    pub(super) fn arm_recv_in_turn(&mut self, sq: &mut SubmissionQueue<'_>, slot: usize) {
        if !R::POOLED {
            return self.arm_recv(sq, slot);
        }
        let connection = &mut self.connections[slot];
        debug_assert!(!connection.queued && !connection.recv_armed);
        connection.queued = true;
        self.rearm_due.push_back((slot, connection.generation));
    }

    /// At the end of a batch of completions: when the pool has room, arms the receive of every
    /// starved connection, longest starved first, then those due; when it has none, those due
    /// are starved without a receive armed, which would only end with ENOBUFS (every buffer is
    /// held by a connection), and counted as if it had.
    ///
    /// Every starved one, not one per buffer: a re-armed receive whose peer sends nothing more
    /// leaves the buffer in the ring, and an incrementally consumed buffer serves many
    /// receives, so waking one per buffer left connections starved beside a pool with room, for
    /// good once no buffer came back (`uring-recv-inc`'s 2 buffers: an echo stalled 10 s). One
    /// that finds the pool empty again ends with ENOBUFS and joins the back of the queue, after
    /// those that found it empty before it; one that holds too many unsent chunks to read is
    /// re-armed by `rearm_or_close` once they are sent. Waking after the whole batch also wakes
    /// a receive that found the pool empty after buffers had come back earlier in the batch: a
    /// lost wake-up if only buffers given back later woke it, since none may come once the
    /// traffic is over.
    pub fn arm_queued(&mut self, sq: &mut SubmissionQueue<'_>) {
        if R::COPIES_BACKLOG && !self.receive.pool_has_room() {
            self.copy_queued();
        }
        if !self.receive.pool_has_room() {
            while let Some(queued) = self.rearm_due.pop_front() {
                if let Some(slot) = self.unqueue(queued) {
                    self.starve(sq, slot);
                }
            }
            return;
        }
        while let Some(queued) = self.starved.pop_front() {
            if let Some(slot) = self.unqueue(queued).filter(|&slot| self.may_arm_recv(slot)) {
                self.arm_recv(sq, slot);
            }
        }
        while let Some(queued) = self.rearm_due.pop_front() {
            if let Some(slot) = self.unqueue(queued).filter(|&slot| self.may_arm_recv(slot)) {
                self.arm_recv(sq, slot);
            }
        }
    }

    /// The pool is dry and its buffers may all be held by chunks queued behind sends that wait
    /// for peers that do not read (`ReceiveStrategy::COPIES_BACKLOG`): every connection's queued
    /// chunks move out of the pool, but the ones sends read, so nobody waits on those peers.
    /// Only a dry pool pays the copies (a scan of the connections while it stays dry).
    fn copy_queued(&mut self) {
        for slot in 0..self.connections.capacity() {
            let queued = (self.connections.get(slot))
                .is_some_and(|connection| connection.pending.len() > 1 && !connection.closing);
            if queued {
                self.copy_out(slot);
            }
        }
    }

    /// The connection a queue entry names, taken out of the queue: None when it has closed or
    /// was taken out already.
    fn unqueue(&mut self, (slot, generation): (usize, u32)) -> Option<usize> {
        let connection = self.connections.get_mut(slot)?;
        if connection.generation != generation || !connection.queued {
            return None;
        }
        connection.queued = false;
        Some(slot)
    }

    /// Gives back the receive buffers of a closing connection, except one a send still reads;
    /// while zero-copy notifications are due, the buffers are held until the last comes (a
    /// short zero-copy send's head, sent in part, may still be read by packets in flight).
    pub(super) fn release_pending(&mut self, slot: usize) {
        let connection = &self.connections[slot];
        debug_assert!(connection.closing);
        // A send in flight reads its chunk, or every chunk handed to a bundle.
        let keep = if connection.send_in_flight {
            connection.handed.max(1)
        } else {
            0
        };
        while self.connections[slot].pending.len() > keep {
            let connection = &mut self.connections[slot];
            let chunk = connection.pending.pop_back().expect("a chunk");
            let buffer = match chunk.source {
                Source::Received(buffer) => buffer,
                Source::Copied(_) => {
                    let block = connection.copied.pop_back().expect("its copied block");
                    self.spare(block);
                    continue;
                }
                Source::Response(_) => continue,
            };
            if connection.notifications_due > 0 {
                connection.held.push(buffer);
            } else {
                self.receive.release(buffer);
            }
        }
    }
}
