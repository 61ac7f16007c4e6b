//! The server's own work per request (`--work`): CPU spent on the request's bytes, the same in
//! every engine because every engine asks `Proto` for its reply. Not a sleep and no clock read
//! per request: a dependent multiply chain over the bytes, its step time measured once when
//! the server starts, so a request of any size costs the time asked for.
//!
//! The work belongs to the request, not to the receive that happened to carry it: how a
//! kernel splits the bytes differs by engine and by client. HTTP counts its requests, so each
//! request parsed pays the whole work. Echo has no framing: it is told its message size and
//! charges by the byte, a receive of n bytes paying n / message of one message's steps, so
//! every engine and client pays the same work per byte whatever their receive sizes.

use std::hint::black_box;
use std::time::Duration;

/// The work per request, in steps of the chain; zero: no work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// The steps one request costs.
    steps: u64,
    /// The steps one byte costs where the protocol charges by the byte (echo), in 32.32 fixed
    /// point, rounded up so that a whole message's bytes cost exactly `steps` (and a message
    /// split over receives at most one step less per piece); zero until `per_message_of`.
    steps_per_byte: u128,
}

/// The bytes and steps the calibration runs over: long enough that the clock's own cost and
/// resolution vanish (about a millisecond), repeated so that the fastest (least disturbed)
/// trial sets the step time. Timed in this thread's CPU time, not wall time: on a busy machine
/// every trial may be preempted, and the wall clock would count the other work as ours
/// (calibrating too few steps).
const CALIBRATION_BYTES: usize = 1024;
const CALIBRATION_STEPS: u64 = 1 << 20;
const CALIBRATION_TRIALS: usize = 7;

impl Work {
    /// Work of `per_request` CPU time per request on this CPU, calibrated now.
    pub fn calibrated(per_request: Duration) -> Work {
        if per_request.is_zero() {
            return Work::default();
        }
        let bytes = [0x5au8; CALIBRATION_BYTES];
        let fastest = (0..CALIBRATION_TRIALS)
            .map(|_| {
                let start = thread_cpu_time();
                spend(CALIBRATION_STEPS, black_box(&bytes[..]));
                thread_cpu_time().saturating_sub(start)
            })
            .min()
            .unwrap_or(Duration::from_nanos(1));
        let ns_per_step = fastest.as_nanos().max(1) as f64 / CALIBRATION_STEPS as f64;
        Work {
            steps: (per_request.as_nanos() as f64 / ns_per_step).round() as u64,
            steps_per_byte: 0,
        }
    }

    /// The same work charged by the byte, a request being a message of `message_bytes` (echo:
    /// the load's `--payload`).
    pub fn per_message_of(self, message_bytes: usize) -> Work {
        assert!(message_bytes > 0, "a message has at least one byte");
        let steps_per_byte = (u128::from(self.steps) << 32).div_ceil(message_bytes as u128);
        Work {
            steps_per_byte,
            ..self
        }
    }

    /// Whether echo can charge this work by the byte: no work, or `per_message_of` said what
    /// a message is.
    pub fn charges_bytes(self) -> bool {
        self.steps == 0 || self.steps_per_byte > 0
    }

    /// Spends what `requests` whole requests cost, over `input` (HTTP: the requests one
    /// receive completed).
    #[inline]
    pub fn on_requests(self, requests: u32, input: &[u8]) {
        spend(self.steps.saturating_mul(u64::from(requests)), input);
    }

    /// Spends what `input`'s bytes cost as a share of messages (echo): `input.len()` /
    /// message of one message's steps.
    #[inline]
    pub fn on_bytes(self, input: &[u8]) {
        spend(self.steps_for_bytes(input.len()), input);
    }

    /// The steps `bytes` received cost: whole messages exactly their steps, a piece its share
    /// rounded down (integer fixed point, so the hot path has no float and no division).
    fn steps_for_bytes(self, bytes: usize) -> u64 {
        ((bytes as u128 * self.steps_per_byte) >> 32) as u64
    }
}

/// Spends `steps` on `input`: each step mixes one byte into a hash whose every step depends
/// on the one before, so the CPU cannot overlap or skip them, cycling over the bytes. Never
/// inlined, so the calibration times the very code every engine runs.
#[inline(never)]
fn spend(steps: u64, input: &[u8]) {
    if steps == 0 || input.is_empty() {
        return;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut left = steps;
    while left > 0 {
        let take = left.min(input.len() as u64) as usize;
        for &byte in &input[..take] {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        left -= take as u64;
    }
    black_box(hash);
}

/// The CPU time this thread has run (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_work_is_no_steps_and_some_work_is_some() {
        assert_eq!(Work::calibrated(Duration::ZERO), Work::default());
        assert!(Work::calibrated(Duration::from_micros(2)).steps > 0);
    }

    fn of_steps(steps: u64) -> Work {
        Work {
            steps,
            steps_per_byte: 0,
        }
    }

    /// Echo's charge by the byte: a whole message costs exactly its steps, whole messages
    /// together exactly theirs, at every message size and step count, including steps that
    /// do not divide by the size and messages larger than the steps.
    #[test]
    fn whole_messages_cost_exactly_their_steps() {
        for steps in [1, 7, 1000, 6_667, 3_333_333, 10_000_000_000] {
            for message in [1, 3, 64, 1000, 1024, 16 << 10, 1 << 24] {
                let work = of_steps(steps).per_message_of(message);
                assert_eq!(
                    work.steps_for_bytes(message),
                    steps,
                    "{steps} over {message}"
                );
                for messages in [2, 5, 64] {
                    let total = work.steps_for_bytes(message * messages);
                    assert_eq!(total, steps * messages as u64, "{messages} x {message}");
                }
            }
        }
    }

    /// A message split over receives costs its steps less at most one per extra piece (each
    /// piece's share rounds down: under a nanosecond a receive), however the pieces fall; a
    /// piece costs its share of bytes.
    #[test]
    fn a_split_message_costs_one_messages_steps() {
        let work = of_steps(6_667).per_message_of(16 << 10);
        for piece in [1, 100, 1000, 4096, 8192, 10_000, 16 << 10] {
            let (mut left, mut pieces, mut total) = (16usize << 10, 0u64, 0);
            while left > 0 {
                let len = piece.min(left);
                total += work.steps_for_bytes(len);
                left -= len;
                pieces += 1;
            }
            let least = 6_667u64.saturating_sub(pieces - 1);
            assert!((least..=6_667).contains(&total), "{piece}: {total}");
        }
        assert_eq!(work.steps_for_bytes(8 << 10), 6_667 / 2);
        assert_eq!(
            of_steps(1000).per_message_of(1024).steps_for_bytes(256),
            250
        );
    }

    /// No work costs nothing by the byte either, and a work not told its message size is not
    /// one echo can charge.
    #[test]
    fn echo_needs_the_message_size() {
        assert!(Work::default().per_message_of(64).charges_bytes());
        assert_eq!(
            Work::default().per_message_of(64).steps_for_bytes(1 << 20),
            0
        );
        assert!(!of_steps(10).charges_bytes());
        assert!(of_steps(10).per_message_of(64).charges_bytes());
    }

    /// The calibrated work takes about the CPU time asked for, whatever the request's size
    /// (loosely: a shared machine's test must not flake; the study's test measures it closely).
    /// CPU time, as the calibration: under load every wall-clock trial was preempted (630 µs
    /// for 200 µs beside two busy loops). A busy sibling hyperthread or a stolen vCPU still
    /// slows a calibration or a trial now and then (1 attempt in 20 beside two busy loops), so
    /// one of a few attempts, each calibrated afresh, must hold for every size.
    #[test]
    fn calibrated_work_takes_about_its_time() {
        let attempt = || {
            let work = Work::calibrated(Duration::from_micros(200));
            [1, 64, 16 << 10].map(|size| {
                let input = vec![7u8; size];
                let fastest = (0..5)
                    .map(|_| {
                        let start = thread_cpu_time();
                        work.on_requests(1, &input);
                        thread_cpu_time().saturating_sub(start)
                    })
                    .min()
                    .unwrap();
                (size, fastest)
            })
        };
        let about = |fastest: Duration| {
            fastest > Duration::from_micros(150) && fastest < Duration::from_micros(400)
        };
        let attempts: Vec<_> = (0..5).map(|_| attempt()).collect();
        assert!(
            attempts
                .iter()
                .any(|sizes| sizes.iter().all(|&(_, fastest)| about(fastest))),
            "(bytes, fastest) per attempt: {attempts:?}"
        );
    }
}
