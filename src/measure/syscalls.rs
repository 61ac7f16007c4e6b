//! Syscalls counted by the kernel itself: a perf counter on the `raw_syscalls:sys_enter`
//! tracepoint, for the calling thread and the threads it starts (`SyscallCounter`) or for every
//! thread of another process (`ProcessSyscallCounter`).

use std::fs;
use std::io;
use std::sync::OnceLock;

use super::perf::{tracepoint_ids, PerfCounter};

/// Where a syscall count came from: the kernel's tracepoint counter, the engine's own tally
/// when the kernel refused the counter (not root, perf_event_paranoid, no tracefs), or nobody
/// (`none`: a server measured by nobody, a control tool's own run), whose count says nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyscallSource {
    Kernel,
    #[serde(rename = "self")]
    SelfCounted,
    #[default]
    #[serde(rename = "none")]
    Unmeasured,
}

impl SyscallSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SyscallSource::Kernel => "kernel",
            SyscallSource::SelfCounted => "self",
            SyscallSource::Unmeasured => "none",
        }
    }

    /// Whether somebody counted: the kernel or the engine itself.
    pub fn counted(self) -> bool {
        self != SyscallSource::Unmeasured
    }
}

impl std::fmt::Display for SyscallSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads the id of the `raw_syscalls:sys_enter` tracepoint (once).
pub fn sys_enter_tracepoint_id() -> Result<u64, String> {
    static ID: OnceLock<Result<u64, String>> = OnceLock::new();
    ID.get_or_init(|| {
        tracepoint_ids(&["raw_syscalls/sys_enter"])?
            .pop()
            .flatten()
            .ok_or_else(|| "tracefs has no raw_syscalls:sys_enter tracepoint".to_string())
    })
    .clone()
}

/// A kernel counter of syscalls entered by this thread and by every thread it starts after the
/// counter opens (perf's `inherit`), read at both ends of the measured section.
pub struct SyscallCounter {
    counter: PerfCounter,
    /// Syscalls the counter's own reads add to a section, measured once and subtracted.
    overhead: u64,
}

impl SyscallCounter {
    /// Opens a counter on the calling thread; the error says why the kernel refused it.
    pub fn open() -> Result<SyscallCounter, String> {
        SyscallCounter::open_for(0)
    }

    /// Opens a counter on thread `tid` of any process (0: the calling thread), and on
    /// every thread it starts afterwards. This is how a study counts the syscalls of a server
    /// running as another process, without touching the server.
    pub fn open_for(tid: i32) -> Result<SyscallCounter, String> {
        SyscallCounter::open_raw(tid).map_err(OpenError::explain)
    }

    fn open_raw(tid: i32) -> Result<SyscallCounter, OpenError> {
        let id = sys_enter_tracepoint_id().map_err(OpenError::Tracepoint)?;
        let counter = PerfCounter::open_tracepoint(id, tid).map_err(OpenError::Refused)?;
        let mut counter = SyscallCounter {
            counter,
            overhead: 0,
        };
        counter.start();
        counter.overhead = counter.stop();
        Ok(counter)
    }

    /// Starts a section.
    pub fn start(&mut self) {
        self.counter.start();
    }

    /// The syscalls counted since `start`, less the counter's own.
    pub fn stop(&mut self) -> u64 {
        self.counter.stop().saturating_sub(self.overhead)
    }
}

/// Why a counter did not open: no syscall tracepoint, or the kernel refused the counter (ESRCH:
/// the thread has gone).
enum OpenError {
    Tracepoint(String),
    Refused(io::Error),
}

impl OpenError {
    /// The reason in operator terms.
    fn explain(self) -> String {
        match self {
            OpenError::Tracepoint(reason) => reason,
            OpenError::Refused(error) => format!(
                "perf_event_open on raw_syscalls:sys_enter failed ({error}); run as root or lower \
                 /proc/sys/kernel/perf_event_paranoid"
            ),
        }
    }
}

/// The syscalls of a whole running process, counted from outside: one counter per thread that
/// exists when it opens (each inheriting to the threads that thread starts later).
pub struct ProcessSyscallCounter {
    counters: Vec<SyscallCounter>,
}

impl ProcessSyscallCounter {
    pub fn open(pid: i32) -> Result<ProcessSyscallCounter, String> {
        ProcessSyscallCounter::open_all(&[pid])
    }

    /// The counters of several processes (a server and the processes it started) as one. A
    /// thread or process that exits between the listing and its counter's opening is left out
    /// (a server that starts a thread per request ends threads all the time); every thread
    /// started after the counters open is counted by its parent's.
    pub fn open_all(pids: &[i32]) -> Result<ProcessSyscallCounter, String> {
        let mut counters = Vec::new();
        for (index, &pid) in pids.iter().enumerate() {
            let tids = match task_ids(pid) {
                Ok(tids) => tids,
                Err(_) if index > 0 => continue,
                Err(error) => {
                    return Err(format!("cannot list the threads of process {pid}: {error}"))
                }
            };
            for tid in tids {
                match SyscallCounter::open_raw(tid) {
                    Ok(counter) => counters.push(counter),
                    Err(OpenError::Refused(error)) if error.raw_os_error() == Some(libc::ESRCH) => {
                    }
                    Err(error) => return Err(error.explain()),
                }
            }
        }
        Ok(ProcessSyscallCounter { counters })
    }

    pub fn start(&mut self) {
        self.counters.iter_mut().for_each(SyscallCounter::start);
    }

    pub fn stop(&mut self) -> u64 {
        self.counters.iter_mut().map(SyscallCounter::stop).sum()
    }
}

/// The thread ids of process `pid`.
pub fn task_ids(pid: i32) -> io::Result<Vec<i32>> {
    let mut ids = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        if let Some(id) = entry?
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_counter_counts_syscalls_when_allowed() {
        let Ok(mut counter) = SyscallCounter::open() else {
            eprintln!("skipped: the kernel refused the syscall counter here");
            return;
        };
        counter.start();
        for _ in 0..100 {
            let _ = rustix::process::getppid();
        }
        let counted = counter.stop();
        assert!(
            (100..=110).contains(&counted),
            "counted {counted} syscalls for 100 getppid"
        );
        counter.start();
        let idle = counter.stop();
        assert!(idle <= 2, "an empty section counted {idle} syscalls");
    }
}
