//! Which of a process's threads are io_uring's kernel helpers, and how much CPU and how many
//! context switches each kind took.

use std::fs;
use std::io;

use super::syscalls::task_ids;
use super::usage::{clock_ticks_per_sec, thread_ctx_switches};

/// What io_uring's kernel threads of a process did over a section, told apart by the names
/// the kernel gives them: io-wq workers (`iou-wrk-PID`), which run what a ring cannot finish
/// inline, and SQPOLL threads (`iou-sqp-PID`). A worker counts if it ran during the section.
/// Their CPU time and context switches are also inside the process's `cpu_*` and `ctx_switches_*`
/// figures; this says how much of them was theirs. A worker that exited before the section ended is missed here (not there): workers
/// outlive 5 s of idleness, longer than the gaps inside one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HelperThreads {
    pub iowq_workers: u32,
    pub iowq_cpu_s: f64,
    /// Voluntary and involuntary: a worker that blocks in an fsync, or sleeps between punts.
    pub iowq_ctx_switches: u64,
    pub sqpoll_threads: u32,
    pub sqpoll_cpu_s: f64,
    pub sqpoll_ctx_switches: u64,
}

/// What a user-space pool of threads making blocking calls (the `threads` file engine) did over
/// a section, summed over its threads from each one's own getrusage: the user-space rival of
/// io-wq, reported the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolThreads {
    pub threads: u32,
    pub cpu_s: f64,
    /// Voluntary and involuntary: a thread blocks in each read that misses the cache, and in
    /// each fsync.
    pub ctx_switches: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadRole {
    IowqWorker,
    Sqpoll,
}

/// The CPU time (ns) and context switches of every living io_uring helper thread of a process,
/// with its role.
#[derive(Clone, Debug)]
pub(super) struct ThreadTimes {
    threads: Vec<ThreadTime>,
}

#[derive(Clone, Copy, Debug)]
struct ThreadTime {
    tid: i32,
    role: ThreadRole,
    runtime_ns: u64,
    ctx_switches: u64,
}

impl ThreadTimes {
    pub(super) fn of_pid(pid: i32) -> io::Result<ThreadTimes> {
        let mut threads = Vec::new();
        for tid in task_ids(pid)? {
            let dir = format!("/proc/{pid}/task/{tid}");
            // The thread may exit between the listing and the reads.
            let Ok(comm) = fs::read_to_string(format!("{dir}/comm")) else {
                continue;
            };
            let role = if comm.starts_with("iou-wrk-") {
                ThreadRole::IowqWorker
            } else if comm.starts_with("iou-sqp-") {
                ThreadRole::Sqpoll
            } else {
                // The process's own threads count nowhere here; reading two more files of each
                // held a `threads` server's stop with 5,000 of them 0.71 s (0.39-0.46 s without).
                continue;
            };
            let runtime = thread_runtime_ns(&dir);
            let switches = thread_ctx_switches(pid, tid);
            if let Some((runtime_ns, (voluntary, involuntary))) = runtime.zip(switches) {
                threads.push(ThreadTime {
                    tid,
                    role,
                    runtime_ns,
                    ctx_switches: voluntary + involuntary,
                });
            }
        }
        Ok(ThreadTimes { threads })
    }

    /// The threads of several processes (a server and the processes it started).
    pub(super) fn of_pids(pids: &[i32]) -> io::Result<ThreadTimes> {
        let mut times = ThreadTimes::of_pid(pids[0])?;
        for &pid in &pids[1..] {
            if let Ok(more) = ThreadTimes::of_pid(pid) {
                times.threads.extend(more.threads);
            }
        }
        Ok(times)
    }

    pub(super) fn helpers_since(&self, earlier: &ThreadTimes) -> HelperThreads {
        let mut helpers = HelperThreads::default();
        for now in &self.threads {
            let before = earlier.threads.iter().find(|then| then.tid == now.tid);
            let ran_ns = now
                .runtime_ns
                .saturating_sub(before.map_or(0, |then| then.runtime_ns));
            if ran_ns == 0 {
                continue;
            }
            let seconds = ran_ns as f64 / 1e9;
            let switches = now
                .ctx_switches
                .saturating_sub(before.map_or(0, |then| then.ctx_switches));
            match now.role {
                ThreadRole::IowqWorker => {
                    helpers.iowq_workers += 1;
                    helpers.iowq_cpu_s += seconds;
                    helpers.iowq_ctx_switches += switches;
                }
                ThreadRole::Sqpoll => {
                    helpers.sqpoll_threads += 1;
                    helpers.sqpoll_cpu_s += seconds;
                    helpers.sqpoll_ctx_switches += switches;
                }
            }
        }
        helpers
    }
}

/// How many threads of this process are named `comm` (an io-wq worker's `iou-wrk-TID` names
/// the thread whose rings it works for); 0 when /proc cannot say.
pub fn threads_named(comm: &str) -> usize {
    let pid = std::process::id() as i32;
    let tasks = task_ids(pid).unwrap_or_default();
    let named = |tid: &i32| {
        fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .is_ok_and(|name| name.trim_end() == comm)
    };
    tasks.iter().filter(|tid| named(tid)).count()
}

/// A thread's time on CPU in ns: `schedstat`'s first field (exact), else `stat`'s utime and
/// stime (clock ticks).
fn thread_runtime_ns(dir: &str) -> Option<u64> {
    let schedstat = fs::read_to_string(format!("{dir}/schedstat")).ok();
    if let Some(ns) = schedstat.as_deref().and_then(schedstat_runtime_ns) {
        return Some(ns);
    }
    let stat = fs::read_to_string(format!("{dir}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((ticks as f64 / clock_ticks_per_sec() * 1e9) as u64)
}

/// The ns a task ran, from its `schedstat` (`runtime_ns run_delay_ns timeslices`). The file
/// exists with CONFIG_SCHED_INFO (with or without CONFIG_SCHEDSTATS: 6.18 without it fills
/// all three), but reads `0 0 0` where the kernel keeps no sched_info (older kernels with
/// delay accounting compiled in and switched off): a task that exists has run, so a zero is
/// no reading. None then, or for text that is no schedstat.
pub(super) fn schedstat_runtime_ns(text: &str) -> Option<u64> {
    let mut fields = text.split_whitespace();
    let runtime_ns = fields.next()?.parse::<u64>().ok()?;
    let rest_are_numbers = fields.all(|field| field.parse::<u64>().is_ok());
    (runtime_ns > 0 && rest_are_numbers).then_some(runtime_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_runtime_is_its_first_field() {
        assert_eq!(
            schedstat_runtime_ns("203009591 42483599 841\n"),
            Some(203_009_591)
        );
        // No sched_info kept, or no schedstat at all.
        assert_eq!(schedstat_runtime_ns("0 0 0\n"), None);
        assert_eq!(schedstat_runtime_ns(""), None);
        assert_eq!(schedstat_runtime_ns("12x 3 4"), None);
        assert_eq!(schedstat_runtime_ns("12 three 4"), None);
    }

    #[test]
    fn this_thread_has_run() {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let dir = format!("/proc/self/task/{tid}");
        assert!(thread_runtime_ns(&dir).is_some());
    }
}
