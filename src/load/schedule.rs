//! The open loop's timetable (`--rate`, as wrk2).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use super::connection::Connection;
use super::{LoadPlan, WAIT_TIMEOUT};

/// Each connection's messages fall due at a fixed interval, staggered across connections; a
/// message that falls due while its connection still awaits the previous response goes out as
/// soon as that response is in, and its latency still counts from when it was due.
pub struct Schedule {
    interval: Duration,
    start: Instant,
    /// Idle connections by due time, soonest first (at most one entry per connection).
    waiting: BinaryHeap<Reverse<(Instant, usize)>>,
    /// The connections' global ids, to stagger them across threads.
    total: usize,
}

impl Schedule {
    pub fn new(plan: &LoadPlan, connections: usize) -> Option<Schedule> {
        let rate = plan.rate_per_sec?;
        assert!(rate > 0.0);
        Some(Schedule {
            interval: Duration::from_secs_f64(plan.connections as f64 / rate),
            start: Instant::now(),
            waiting: BinaryHeap::with_capacity(connections),
            total: plan.connections,
        })
    }

    /// Sets the connection's first due time.
    pub fn first(&mut self, connection: &mut Connection, index: usize) {
        let offset = self
            .interval
            .mul_f64(connection.id as f64 / self.total as f64);
        connection.due = self.start + offset;
        connection.idle = true;
        self.waiting.push(Reverse((connection.due, index)));
    }

    /// After a response: the next request's due time. Returns whether it is already past
    /// (the request is late; the caller sends it now), else parks the connection until then.
    pub fn next(&mut self, connection: &mut Connection, index: usize, now: Instant) -> bool {
        connection.due += self.interval;
        if connection.due <= now {
            return true;
        }
        connection.idle = true;
        self.waiting.push(Reverse((connection.due, index)));
        false
    }

    /// A connection whose request is due by `now`, if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<usize> {
        let &Reverse((when, index)) = self.waiting.peek()?;
        if when > now {
            return None;
        }
        self.waiting.pop();
        Some(index)
    }

    pub fn until_next(&self, now: Instant) -> Duration {
        self.waiting
            .peek()
            .map_or(WAIT_TIMEOUT, |Reverse((when, _))| {
                when.saturating_duration_since(now)
            })
    }
}
