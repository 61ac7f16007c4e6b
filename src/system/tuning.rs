//! The two settings of this VM that decide network numbers more than any I/O API does
//! (FINDINGS.md): the scheduling class (other work on the machine made echo numbers 2–9× lower
//! until server and client ran under SCHED_FIFO) and the idle state (one connection measures
//! the vCPU's wake-up path; holding `/dev/cpu_dma_latency` at 0 makes idle vCPUs poll instead
//! of halting and gave 3–7× more). A study either sets them or records that it did not; both
//! go into every row's `params`.

use std::io::Write;

use anyhow::Context;

use super::realtime::RealtimeFacts;

/// Scheduling class for the server and the load generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Sched {
    /// The default time-sharing class (SCHED_OTHER).
    #[default]
    Other,
    /// SCHED_FIFO at priority 50, as `chrt -f 50` (real-time: preempts ordinary work).
    Fifo,
    /// Leave the class the process was started with (`chrt -f 50 ringside serve ...` stays
    /// real-time): what `serve` and `load` do unless told, so that a peer comparison that puts
    /// every server under `chrt` puts ringside's there too.
    Inherit,
}

/// The real-time priority `--sched fifo` uses (the priority FINDINGS measured with).
const FIFO_PRIORITY: i32 = 50;

impl Sched {
    pub fn name(self) -> &'static str {
        match self {
            Sched::Other => "other",
            Sched::Fifo => "fifo",
            Sched::Inherit => "inherit",
        }
    }

    /// Whether a process run under this class is real-time (`Inherit`: whether the calling
    /// thread is now).
    pub fn is_realtime(self) -> bool {
        match self {
            Sched::Other => false,
            Sched::Fifo => true,
            Sched::Inherit => calling_thread_is_realtime(),
        }
    }

    /// Applies the class to the calling thread; threads it starts later inherit it. A refusal
    /// says which of the kernel's reasons refused it (`RealtimeFacts`).
    pub fn apply_to_current_thread(self) -> anyhow::Result<()> {
        self.set_on_calling_thread().map_err(|error| {
            anyhow::anyhow!(
                "cannot switch to SCHED_{}: {}",
                self.name().to_uppercase(),
                self.refusal_of(&error)
            )
        })
    }

    /// Why this process may not run under the class (None when it may): tried on a thread of
    /// its own, which ends at once, so the calling thread keeps its class.
    pub fn refusal(self) -> Option<String> {
        std::thread::spawn(move || self.set_on_calling_thread().err())
            .join()
            .unwrap_or_else(|_| Some(std::io::Error::from(std::io::ErrorKind::Other)))
            .map(|error| self.refusal_of(&error))
    }

    /// The sentence for a refusal with `error`: the kernel's reason, read from the process's
    /// capabilities, limit and cgroup.
    fn refusal_of(self, error: &std::io::Error) -> String {
        let errno = rustix::io::Errno::from_io_error(error)
            .map_or_else(|| error.to_string(), |errno| format!("{errno:?}"));
        RealtimeFacts::read().refusal(FIFO_PRIORITY as u32, &errno)
    }

    /// The class set on the calling thread with one syscall and no allocation, so that a
    /// forked child may call it before exec (a contender's command).
    pub fn set_on_calling_thread(self) -> std::io::Result<()> {
        let (policy, priority) = match self {
            Sched::Other => (libc::SCHED_OTHER, 0),
            Sched::Fifo => (libc::SCHED_FIFO, FIFO_PRIORITY),
            Sched::Inherit => return Ok(()),
        };
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The calling thread raised one real-time priority above the loops of its class while this
/// lives, then put back: a thread that keeps time for SCHED_FIFO loops on its CPUs must
/// preempt them when its timer fires, or it runs only when they block (a 5 s window measured
/// 7–12 s that way).
pub struct Timekeeper {
    previous: Option<(i32, libc::sched_param)>,
}

impl Sched {
    /// Makes the calling thread the timekeeper of loops run under this class (nothing for a
    /// class that is not real-time; a refusal leaves the thread as it was).
    pub fn timekeeper(self) -> Timekeeper {
        if !self.is_realtime() {
            return Timekeeper { previous: None };
        }
        // SAFETY: pid 0 is the calling thread; the param is written by the kernel.
        let policy = unsafe { libc::sched_getscheduler(0) };
        let mut previous = libc::sched_param { sched_priority: 0 };
        if unsafe { libc::sched_getparam(0, &mut previous) } != 0 {
            return Timekeeper { previous: None };
        }
        let loops = match policy {
            libc::SCHED_FIFO | libc::SCHED_RR => previous.sched_priority,
            _ => FIFO_PRIORITY,
        };
        let raised = libc::sched_param {
            sched_priority: (loops + 1).min(99),
        };
        // SAFETY: as above.
        let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &raised) } == 0;
        Timekeeper {
            previous: set.then_some((policy, previous)),
        }
    }
}

impl Drop for Timekeeper {
    fn drop(&mut self) {
        if let Some((policy, param)) = self.previous {
            // SAFETY: restores what sched_getscheduler and sched_getparam returned.
            unsafe { libc::sched_setscheduler(0, policy, &param) };
        }
    }
}

/// Whether the calling thread runs under a real-time class (SCHED_FIFO or SCHED_RR).
pub fn calling_thread_is_realtime() -> bool {
    // SAFETY: sched_getscheduler has no preconditions; 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
}

/// Idle state of the CPUs during a study.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Idle {
    /// Whatever the kernel's cpuidle governor does (idle vCPUs halt and must be woken).
    #[default]
    Default,
    /// Hold `/dev/cpu_dma_latency` open at 0 µs: idle CPUs poll, wake-ups are immediate.
    Poll,
}

impl Idle {
    pub fn name(self) -> &'static str {
        match self {
            Idle::Default => "default",
            Idle::Poll => "poll",
        }
    }

    /// Applies the idle state; it lasts as long as the returned guard.
    pub fn hold(self) -> anyhow::Result<Option<IdleGuard>> {
        match self {
            Idle::Default => Ok(None),
            Idle::Poll => IdleGuard::poll().map(Some),
        }
    }
}

/// Keeps the PM QoS request alive: the kernel drops it when the file is closed, which
/// dropping the guard does.
pub struct IdleGuard {
    _file: std::fs::File,
}

impl IdleGuard {
    fn poll() -> anyhow::Result<IdleGuard> {
        const PATH: &str = "/dev/cpu_dma_latency";
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(PATH)
            .with_context(|| format!("cannot open {PATH} to keep CPUs out of deep idle"))?;
        file.write_all(&0i32.to_ne_bytes())
            .with_context(|| format!("cannot write 0 to {PATH}"))?;
        Ok(IdleGuard { _file: file })
    }
}
