//! Meters: one section of this process (`Meter`: what a file engine's run cost) or of another
//! process measured from outside (`ProcessMeter`: a server under load).

use std::io;
use std::time::{Duration, Instant};

use super::device::{BlockDevice, DeviceIo};
use super::ring_events::{RingEventCounter, RingEvents};
use super::syscalls::{task_ids, ProcessSyscallCounter, SyscallCounter};
use super::threads::{HelperThreads, ThreadTimes};
use super::usage::{process_tree, rss_peak_bytes, MachineCpu, Usage};

/// Measures one section: wall time, kernel-counted syscalls (when the kernel allows it) and
/// process usage. Open the meter before setting up, `start` right before the work, `stop` right
/// after it.
pub struct Meter {
    counter: Option<SyscallCounter>,
    ring: RingCounting,
    started: Option<Started>,
    device: Option<BlockDevice>,
    /// Whether the section's io_uring helper threads are read (every thread's name, twice).
    helpers: bool,
}

/// The readings a section starts from.
struct Started {
    at: Instant,
    usage: Usage,
    threads: Option<ThreadTimes>,
    device: Option<DeviceIo>,
    machine: Option<MachineCpu>,
}

/// What a measured section cost.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub elapsed: Duration,
    /// `None` when the kernel refused the counter; the engine's own count is used then.
    pub syscalls_kernel: Option<u64>,
    pub usage: Usage,
    /// What io_uring's kernel threads of the process did (None where /proc could not tell).
    pub helpers: Option<HelperThreads>,
    /// The block device under the measured file (file workloads on a block device only).
    pub device: Option<DeviceIo>,
    /// Peak resident memory of a process measured from outside (VmHWM at the section's end,
    /// summed over the process and the processes it started).
    pub rss_peak_bytes: Option<u64>,
    /// What io_uring did in the kernel, from its tracepoints (None where not counted).
    pub ring: Option<RingEvents>,
    /// The share of the machine's CPU time over the section that went to work other than the
    /// measured processes' (and this one's): another job beside the study (None where
    /// /proc/stat could not be read).
    pub foreign_cpu_share: Option<f64>,
    /// Sentences saying what was not counted, and why.
    pub notes: Vec<String>,
}

impl Meter {
    pub fn new() -> Meter {
        Meter {
            counter: SyscallCounter::open().ok(),
            ..Meter::without_syscall_counter()
        }
    }

    /// A meter that does not count syscalls (what `RINGSIDE_NO_PERF` or a refused counter gives).
    pub fn without_syscall_counter() -> Meter {
        Meter {
            counter: None,
            ring: RingCounting::default(),
            started: None,
            device: None,
            helpers: true,
        }
    }

    /// A meter that leaves the helper threads unread, for a section whose reader does not
    /// report them and whose threads may be thousands (a `threads` server's, at its stop).
    pub fn without_helpers(mut self) -> Meter {
        self.helpers = false;
        self
    }

    /// Also counts io_uring's tracepoints on this thread and the threads it starts later (the
    /// io-wq and SQPOLL threads of rings it makes): open the meter before making the ring.
    pub fn with_ring_events(mut self, asked: bool) -> Meter {
        if asked && std::env::var_os("RINGSIDE_NO_PERF").is_none() {
            self.ring = RingCounting::open(&[0]);
        }
        self
    }

    /// Also reads the I/O counters of the block device under the measured file.
    pub fn with_device(mut self, device: Option<BlockDevice>) -> Meter {
        self.device = device;
        self
    }

    fn helper_times(&self) -> Option<ThreadTimes> {
        self.helpers
            .then(|| ThreadTimes::of_pid(std::process::id() as i32).ok())
            .flatten()
    }

    pub fn counts_syscalls(&self) -> bool {
        self.counter.is_some()
    }

    pub fn start(&mut self) {
        assert!(self.started.is_none(), "meter started twice");
        let threads = self.helper_times();
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let machine = MachineCpu::read().ok();
        let usage = Usage::of_process();
        let at = Instant::now();
        self.ring.start();
        // Started last and stopped first, so it does not count the other counters' ioctls.
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some(Started {
            at,
            usage,
            threads,
            device,
            machine,
        });
    }

    pub fn stop(&mut self) -> Measured {
        let syscalls_kernel = self.counter.as_mut().map(SyscallCounter::stop);
        let ring = self.ring.stop();
        let started = self.started.take().expect("meter stopped before start");
        let elapsed = started.at.elapsed();
        let usage = Usage::of_process().since(&started.usage);
        let machine = MachineCpu::read().ok().zip(started.machine);
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let threads = self.helper_times();
        let own_s = usage.cpu_user_s + usage.cpu_sys_s;
        Measured {
            foreign_cpu_share: machine
                .and_then(|(now, before)| now.foreign_share(&before, own_s, elapsed.as_secs_f64())),
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(started.threads)
                .map(|(now, before)| now.helpers_since(&before)),
            device: device
                .zip(started.device)
                .map(|(now, before)| now.since(&before)),
            rss_peak_bytes: None,
            ring,
            notes: self.ring.notes.clone(),
        }
    }
}

impl Default for Meter {
    fn default() -> Self {
        Meter::new()
    }
}

/// A meter for a run: the kernel counter unless `RINGSIDE_NO_PERF` asks for the engines' own
/// counts (which is how the fallback path is tested on a machine where the counter works).
pub fn meter_for_run() -> Meter {
    if !counting_syscalls() {
        Meter::without_syscall_counter()
    } else {
        Meter::new()
    }
}

/// Measures another process (a server) and the processes it started, over a section, from
/// outside: kernel-counted syscalls of all their threads, their CPU time and context switches
/// from /proc, and their peak memory. A server run through a shell or a launcher (a contender's
/// command) is measured whole that way; ringside's own servers are one process.
pub struct ProcessMeter {
    pid: i32,
    /// The process and its descendants when the section started.
    tree: Vec<i32>,
    counter: Option<ProcessSyscallCounter>,
    /// Whether to count io_uring's tracepoints too.
    ring_events: bool,
    ring: RingCounting,
    started: Option<ProcessStarted>,
}

/// The readings a section of another process starts from: its usage, its threads' times, and
/// the machine's CPU time and this process's usage (its load generator's threads), so that what
/// neither took is other work's.
struct ProcessStarted {
    at: Instant,
    usage: Usage,
    threads: Option<ThreadTimes>,
    machine: Option<MachineCpu>,
    own: Usage,
}

impl ProcessMeter {
    pub fn new(pid: i32) -> ProcessMeter {
        ProcessMeter::with_counter(pid, None)
    }

    /// A meter whose syscall counter opened before the process ran anything
    /// (`ProcessSyscallCounter::before_exec`), so it covers every thread and process the
    /// process ever starts.
    pub fn with_counter(pid: i32, counter: Option<ProcessSyscallCounter>) -> ProcessMeter {
        ProcessMeter {
            pid,
            tree: vec![pid],
            counter,
            ring_events: false,
            ring: RingCounting::default(),
            started: None,
        }
    }

    /// Also counts io_uring's tracepoints on every thread of the process, when `asked`.
    pub fn with_ring_events(mut self, asked: bool) -> ProcessMeter {
        self.ring_events = asked;
        self
    }

    /// Starts the section. The counters open here (unless the syscall counters opened with the
    /// process), so they cover the threads the processes have now (io-wq and SQPOLL threads
    /// included) and every thread or process they start later.
    pub fn start(&mut self) -> io::Result<()> {
        assert!(self.started.is_none(), "process meter started twice");
        self.tree = process_tree(self.pid);
        if self.counter.is_none() && counting_syscalls() {
            self.counter = ProcessSyscallCounter::open_all(&self.tree).ok();
        }
        if counting_syscalls() && self.ring_events {
            self.ring = match task_ids(self.pid) {
                Ok(tids) => RingCounting::open(&tids),
                Err(error) => RingCounting::refused(format!(
                    "cannot list the threads of process {}: {error}",
                    self.pid
                )),
            };
        }
        let threads = ThreadTimes::of_pids(&self.tree).ok();
        let usage = self.usage()?;
        let machine = MachineCpu::read().ok();
        let own = Usage::of_process();
        self.ring.start();
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some(ProcessStarted {
            at: Instant::now(),
            usage,
            threads,
            machine,
            own,
        });
        Ok(())
    }

    pub fn stop(&mut self) -> io::Result<Measured> {
        let syscalls_kernel = self.counter.as_mut().map(ProcessSyscallCounter::stop);
        let ring = self.ring.stop();
        // A start that failed (the process gone, or no fd left to read /proc) left nothing.
        let started = self
            .started
            .take()
            .ok_or_else(|| io::Error::other("the measurement of the server never started"))?;
        let elapsed = started.at.elapsed();
        let own = Usage::of_process().since(&started.own);
        let machine = MachineCpu::read().ok().zip(started.machine);
        let usage = self.usage()?.since(&started.usage);
        let threads_before = started.threads;
        let threads = ThreadTimes::of_pids(&self.tree).ok();
        let own_s = usage.cpu_user_s + usage.cpu_sys_s + own.cpu_user_s + own.cpu_sys_s;
        let rss_peak_bytes = self
            .tree
            .iter()
            .filter_map(|&pid| rss_peak_bytes(pid))
            .sum();
        Ok(Measured {
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(threads_before)
                .map(|(now, before)| now.helpers_since(&before)),
            device: None,
            rss_peak_bytes: Some(rss_peak_bytes).filter(|&bytes| bytes > 0),
            foreign_cpu_share: machine
                .and_then(|(now, before)| now.foreign_share(&before, own_s, elapsed.as_secs_f64())),
            ring,
            notes: self.ring.notes.clone(),
        })
    }

    /// The usage of the measured processes, summed; an error only when the first has gone
    /// (a descendant that exited meanwhile is left out).
    fn usage(&self) -> io::Result<Usage> {
        let mut total = Usage::of_pid(self.pid)?;
        for &pid in self.tree.iter().filter(|&&pid| pid != self.pid) {
            if let Ok(usage) = Usage::of_pid(pid) {
                total = total.plus(&usage);
            }
        }
        Ok(total)
    }
}

/// Whether syscalls are counted at all (`RINGSIDE_NO_PERF` set: never, as on a kernel that
/// refuses the counters).
pub fn counting_syscalls() -> bool {
    std::env::var_os("RINGSIDE_NO_PERF").is_none()
}

/// The io_uring tracepoint counters of a meter, or why there are none.
#[derive(Default)]
struct RingCounting {
    counter: Option<RingEventCounter>,
    notes: Vec<String>,
}

impl RingCounting {
    fn open(tids: &[i32]) -> RingCounting {
        match RingEventCounter::open(tids) {
            Ok((counter, missing)) => RingCounting {
                counter: Some(counter),
                notes: missing
                    .iter()
                    .map(|name| format!("not counted: this kernel has no {name} tracepoint"))
                    .collect(),
            },
            Err(reason) => RingCounting::refused(reason),
        }
    }

    fn refused(reason: String) -> RingCounting {
        RingCounting {
            counter: None,
            notes: vec![format!("io_uring events not counted: {reason}")],
        }
    }

    fn start(&mut self) {
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
    }

    fn stop(&mut self) -> Option<RingEvents> {
        self.counter.as_mut().map(RingEventCounter::stop)
    }
}

#[cfg(test)]
mod tests {
    use super::super::syscalls::ProcessSyscallCounter;
    use super::*;
    use std::fs;

    #[test]
    fn another_process_is_counted_from_outside() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Wait until it is past its startup and inside clock_nanosleep (230 on x86-64).
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            let syscall = fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
            if syscall.starts_with("230 ") {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let usage = Usage::of_pid(pid).expect("a living child has /proc entries");
        assert!(usage.cpu_user_s >= 0.0 && usage.ctx_switches_voluntary < 1000);
        if let Ok(mut counter) = ProcessSyscallCounter::open(pid) {
            // Let the child finish exec and start-up (loader syscalls) and fall asleep first.
            std::thread::sleep(Duration::from_millis(300));
            counter.start();
            std::thread::sleep(Duration::from_millis(50));
            // A sleeping process makes no syscalls while it sleeps.
            assert!(counter.stop() <= 2);
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
