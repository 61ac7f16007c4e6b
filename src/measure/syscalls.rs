//! Syscalls counted by the kernel itself: a perf counter on the `raw_syscalls:sys_enter`
//! tracepoint, for the calling thread and the threads it starts (`SyscallCounter`) or for every
//! thread of another process (`ProcessSyscallCounter`).

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

/// Where a syscall count came from: the kernel's tracepoint counter, or the engine's own tally
/// when the kernel refused the counter (not root, perf_event_paranoid, no tracefs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyscallSource {
    Kernel,
    #[serde(rename = "self")]
    SelfCounted,
}

impl SyscallSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SyscallSource::Kernel => "kernel",
            SyscallSource::SelfCounted => "self",
        }
    }
}

/// Reads the id of the `raw_syscalls:sys_enter` tracepoint. Looks in the usual tracefs mounts
/// and, when none is mounted (as on this VM), mounts tracefs privately in a temporary directory
/// for the moment it takes to read the id.
pub fn sys_enter_tracepoint_id() -> Result<u64, String> {
    static ID: OnceLock<Result<u64, String>> = OnceLock::new();
    ID.get_or_init(|| {
        const RELATIVE: &str = "events/raw_syscalls/sys_enter/id";
        for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            if let Ok(text) = fs::read_to_string(Path::new(root).join(RELATIVE)) {
                return text
                    .trim()
                    .parse()
                    .map_err(|error| format!("bad tracepoint id: {error}"));
            }
        }
        read_id_from_private_tracefs(RELATIVE)
    })
    .clone()
}

fn read_id_from_private_tracefs(relative: &str) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("ringside-tracefs-{}", std::process::id()));
    fs::create_dir_all(&dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let mounted = rustix::mount::mount(
        "nodev",
        &dir,
        "tracefs",
        rustix::mount::MountFlags::empty(),
        None,
    );
    let result = match mounted {
        Ok(()) => {
            let text = fs::read_to_string(dir.join(relative));
            let _ = rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::DETACH);
            text.map_err(|error| format!("tracefs has no raw_syscalls tracepoint: {error}"))
                .and_then(|t| {
                    t.trim()
                        .parse()
                        .map_err(|error| format!("bad tracepoint id: {error}"))
                })
        }
        Err(error) => Err(format!(
            "tracefs is not mounted and mounting it failed ({error}); run as root or mount \
             tracefs at /sys/kernel/tracing"
        )),
    };
    let _ = fs::remove_dir(&dir);
    result
}

/// A kernel counter of syscalls entered by this thread and by every thread it starts after the
/// counter opens (perf's `inherit`), enabled only around the measured section.
pub struct SyscallCounter {
    fd: OwnedFd,
    /// Syscalls the counter's own enable/disable pair adds, measured once and subtracted.
    overhead: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_EVENT_IOC_RESET: libc::c_ulong = 0x2403;
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_INHERIT: u64 = 1 << 1;

/// `struct perf_event_attr` up to `config2` (PERF_ATTR_SIZE_VER1); the kernel accepts the
/// shorter layout and zero-fills the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

impl SyscallCounter {
    /// Opens a disabled counter on the calling thread; the error says why the kernel refused it.
    pub fn open() -> Result<SyscallCounter, String> {
        SyscallCounter::open_for(0)
    }

    /// Opens a disabled counter on thread `tid` of any process (0: the calling thread), and on
    /// every thread it starts afterwards. This is how a study counts the syscalls of a server
    /// running as another process, without touching the server.
    pub fn open_for(tid: i32) -> Result<SyscallCounter, String> {
        SyscallCounter::open_raw(tid).map_err(OpenError::explain)
    }

    fn open_raw(tid: i32) -> Result<SyscallCounter, OpenError> {
        let id = sys_enter_tracepoint_id().map_err(OpenError::Tracepoint)?;
        let attr = PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            flags: ATTR_DISABLED | ATTR_INHERIT,
            ..Default::default()
        };
        // SAFETY: attr is a valid perf_event_attr prefix whose size field says how long it is.
        let raw = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                tid,
                -1,
                -1,
                0,
            )
        };
        if raw < 0 {
            return Err(OpenError::Refused(io::Error::last_os_error()));
        }
        // SAFETY: the syscall returned a new file descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
        let mut counter = SyscallCounter { fd, overhead: 0 };
        counter.start();
        counter.overhead = counter.stop();
        Ok(counter)
    }

    /// Zeroes and enables the counter.
    pub fn start(&mut self) {
        // SAFETY: plain ioctls on a perf fd this struct owns.
        unsafe {
            libc::ioctl(self.fd.as_raw_fd(), PERF_EVENT_IOC_RESET, 0);
            libc::ioctl(self.fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0);
        }
    }

    /// Disables the counter and returns the syscalls counted since `start`, less its own.
    pub fn stop(&mut self) -> u64 {
        // SAFETY: plain ioctl on a perf fd this struct owns.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE, 0) };
        let mut value = [0u8; 8];
        let read = rustix::io::read(&self.fd, &mut value).unwrap_or(0);
        debug_assert_eq!(read, 8);
        u64::from_ne_bytes(value).saturating_sub(self.overhead)
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
