//! The server's own work per request (`--work`): CPU spent on the request's bytes, the same in
//! every engine because every engine asks `Proto` for its reply. Not a sleep and no clock read
//! per request: a dependent multiply chain over the bytes, its step time measured once when
//! the server starts, so a request of any size costs the time asked for.

use std::hint::black_box;
use std::time::Duration;

/// The steps of the chain one request costs; zero: no work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    steps: u64,
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
        let trial = Work {
            steps: CALIBRATION_STEPS,
        };
        let fastest = (0..CALIBRATION_TRIALS)
            .map(|_| {
                let start = thread_cpu_time();
                trial.spend(black_box(&bytes[..]));
                thread_cpu_time().saturating_sub(start)
            })
            .min()
            .unwrap_or(Duration::from_nanos(1));
        let ns_per_step = fastest.as_nanos().max(1) as f64 / CALIBRATION_STEPS as f64;
        Work {
            steps: (per_request.as_nanos() as f64 / ns_per_step).round() as u64,
        }
    }

    /// Spends the work on `input`: each step mixes one byte into a hash whose every step
    /// depends on the one before, so the CPU cannot overlap or skip them. Never inlined, so
    /// the calibration times the very code every engine runs.
    #[inline(never)]
    pub fn spend(self, input: &[u8]) {
        if self.steps == 0 || input.is_empty() {
            return;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut left = self.steps;
        while left > 0 {
            let take = left.min(input.len() as u64) as usize;
            for &byte in &input[..take] {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
            left -= take as u64;
        }
        black_box(hash);
    }
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
                        work.spend(&input);
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
