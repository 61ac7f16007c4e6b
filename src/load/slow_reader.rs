//! Stream mode's slow reader (`load echo --mode stream --read-rate`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::connection::{register, Connection};
use super::{LoadErrors, LoadPlan, Mode, WAIT_TIMEOUT};

/// How far a slow reader may read ahead of its rate before it pauses: `epoll_wait` sleeps in
/// whole milliseconds, so pausing after every read would hold fast rates far below their target.
const READ_PACE_SLACK: Duration = Duration::from_millis(2);

/// Stream mode's slow reader: after a `recv` of n bytes a connection may read again n / rate
/// seconds later, and until then its EPOLLIN is withdrawn. Its echo backs up in the socket
/// buffers meanwhile, so the server's sends go short and its buffers wait with bytes still
/// pending, while the connection's sender goes on up to its window.
pub struct SlowReader {
    rate_bytes_per_sec: f64,
    /// Paused connections by the time they may read again, soonest first. An entry whose
    /// connection was resumed or closed meanwhile is skipped.
    paused: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl SlowReader {
    pub fn new(plan: &LoadPlan, connections: usize) -> Option<SlowReader> {
        let rate = plan.read_bytes_per_sec?;
        assert!(rate > 0 && plan.mode == Mode::Stream);
        Some(SlowReader {
            rate_bytes_per_sec: rate as f64,
            paused: BinaryHeap::with_capacity(connections),
        })
    }

    /// Charges `bytes`, read at `now`, to the connection's rate and pauses its reader once it
    /// is more than `READ_PACE_SLACK` ahead of that rate, until the rate allows the next read.
    pub fn pause(
        &mut self,
        connection: &mut Connection,
        index: usize,
        bytes: usize,
        now: Instant,
        epoll_fd: &OwnedFd,
        errors: &mut LoadErrors,
    ) {
        debug_assert!(bytes > 0);
        let spent = Duration::from_secs_f64(bytes as f64 / self.rate_bytes_per_sec);
        connection.read_at = connection.read_at.max(now) + spent;
        if connection.read_at <= now + READ_PACE_SLACK {
            return;
        }
        self.paused.push(Reverse((connection.read_at, index)));
        if !connection.paused {
            connection.paused = true;
            register(connection, epoll_fd, index, errors);
        }
    }

    /// Lets the connections whose pause is over read again.
    pub fn resume_due(
        &mut self,
        connections: &mut [Connection],
        now: Instant,
        epoll_fd: &OwnedFd,
        errors: &mut LoadErrors,
    ) {
        while let Some(&Reverse((when, index))) = self.paused.peek() {
            if when > now {
                return;
            }
            self.paused.pop();
            let connection = &mut connections[index];
            if connection.open && connection.paused && connection.read_at <= now {
                connection.paused = false;
                // The timeout counts from when the reader is ready again.
                connection.started = now;
                register(connection, epoll_fd, index, errors);
            }
        }
    }

    pub fn until_next(&self, now: Instant) -> Duration {
        self.paused
            .peek()
            .map_or(WAIT_TIMEOUT, |Reverse((when, _))| {
                when.saturating_duration_since(now)
            })
    }
}
