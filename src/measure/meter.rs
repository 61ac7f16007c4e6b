//! Meters: one section of this process (`Meter`: what a file engine's run cost) or of another
//! process measured from outside (`ProcessMeter`: a server under load).

use std::io;
use std::time::{Duration, Instant};

use super::device::{BlockDevice, DeviceIo};
use super::syscalls::{ProcessSyscallCounter, SyscallCounter};
use super::threads::{HelperThreads, ThreadTimes};
use super::usage::Usage;

/// Measures one section: wall time, kernel-counted syscalls (when the kernel allows it) and
/// process usage. Open the meter before setting up, `start` right before the work, `stop` right
/// after it.
pub struct Meter {
    counter: Option<SyscallCounter>,
    started: Option<Started>,
    device: Option<BlockDevice>,
}

/// The readings a section starts from.
struct Started {
    at: Instant,
    usage: Usage,
    threads: Option<ThreadTimes>,
    device: Option<DeviceIo>,
}

/// What a measured section cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    pub elapsed: Duration,
    /// `None` when the kernel refused the counter; the engine's own count is used then.
    pub syscalls_kernel: Option<u64>,
    pub usage: Usage,
    /// What io_uring's kernel threads of the process did (None where /proc could not tell).
    pub helpers: Option<HelperThreads>,
    /// The block device under the measured file (file workloads on a block device only).
    pub device: Option<DeviceIo>,
}

impl Meter {
    pub fn new() -> Meter {
        Meter {
            counter: SyscallCounter::open().ok(),
            started: None,
            device: None,
        }
    }

    /// A meter that does not count syscalls (what `RINGSIDE_NO_PERF` or a refused counter gives).
    pub fn without_syscall_counter() -> Meter {
        Meter {
            counter: None,
            started: None,
            device: None,
        }
    }

    /// Also reads the I/O counters of the block device under the measured file.
    pub fn with_device(mut self, device: Option<BlockDevice>) -> Meter {
        self.device = device;
        self
    }

    pub fn counts_syscalls(&self) -> bool {
        self.counter.is_some()
    }

    pub fn start(&mut self) {
        assert!(self.started.is_none(), "meter started twice");
        let threads = ThreadTimes::of_pid(std::process::id() as i32).ok();
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let usage = Usage::of_process();
        let at = Instant::now();
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some(Started {
            at,
            usage,
            threads,
            device,
        });
    }

    pub fn stop(&mut self) -> Measured {
        let syscalls_kernel = self.counter.as_mut().map(SyscallCounter::stop);
        let started = self.started.take().expect("meter stopped before start");
        let elapsed = started.at.elapsed();
        let usage = Usage::of_process().since(&started.usage);
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let threads = ThreadTimes::of_pid(std::process::id() as i32).ok();
        Measured {
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(started.threads)
                .map(|(now, before)| now.helpers_since(&before)),
            device: device
                .zip(started.device)
                .map(|(now, before)| now.since(&before)),
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
    if std::env::var_os("RINGSIDE_NO_PERF").is_some() {
        Meter::without_syscall_counter()
    } else {
        Meter::new()
    }
}

/// Measures another process (a server) over a section, from outside: kernel-counted syscalls of
/// all its threads and its CPU time and context switches from /proc.
pub struct ProcessMeter {
    pid: i32,
    counter: Option<ProcessSyscallCounter>,
    started: Option<(Instant, Usage, Option<ThreadTimes>)>,
}

impl ProcessMeter {
    pub fn new(pid: i32) -> ProcessMeter {
        ProcessMeter {
            pid,
            counter: None,
            started: None,
        }
    }

    /// Starts the section. The syscall counters open here, so they cover the threads the
    /// process has now and every thread they start later.
    pub fn start(&mut self) -> io::Result<()> {
        assert!(self.started.is_none(), "process meter started twice");
        let counting = std::env::var_os("RINGSIDE_NO_PERF").is_none();
        self.counter = counting
            .then(|| ProcessSyscallCounter::open(self.pid).ok())
            .flatten();
        let threads = ThreadTimes::of_pid(self.pid).ok();
        let usage = Usage::of_pid(self.pid)?;
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some((Instant::now(), usage, threads));
        Ok(())
    }

    pub fn stop(&mut self) -> io::Result<Measured> {
        let syscalls_kernel = self.counter.as_mut().map(ProcessSyscallCounter::stop);
        // A start that failed (the process gone, or no fd left to read /proc) left nothing.
        let (started, before, threads_before) = self
            .started
            .take()
            .ok_or_else(|| io::Error::other("the measurement of the server never started"))?;
        let elapsed = started.elapsed();
        let usage = Usage::of_pid(self.pid)?.since(&before);
        let threads = ThreadTimes::of_pid(self.pid).ok();
        Ok(Measured {
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(threads_before)
                .map(|(now, before)| now.helpers_since(&before)),
            device: None,
        })
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
