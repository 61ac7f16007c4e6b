//! One perf counter on one kernel tracepoint, for a thread and every thread it starts after the
//! counter opens (perf's `inherit`), read at both ends of a measured section; and the tracepoint
//! ids from tracefs, which this VM does not mount (so ringside mounts it privately to read them).
//!
//! Reading an inheriting counter sums the counter of every thread that inherited it, living or
//! exited, so io_uring's io-wq workers and SQPOLL thread, which the ring's task starts after the
//! counter opened, are counted while they still run.
//!
//! The counter counts from the moment it opens and is never disabled: a section is the
//! difference of two reads. Enabling a disabled counter at the section's start reaches only the
//! threads that have inherited it by then, and a thread started at that moment by one still
//! disabled inherits a disabled counter, as do all the threads it starts: a server that starts a
//! thread per message lost every later message that way (tests/contenders.rs, 2 runs in 6).

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const PERF_TYPE_TRACEPOINT: u32 = 2;
/// _IOW('$', 6, char *)
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
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

/// A running count of one tracepoint's hits on one thread and its later threads.
pub(super) struct PerfCounter {
    fd: OwnedFd,
    /// The count when the section started.
    at_start: u64,
}

impl PerfCounter {
    /// Opens a counter of tracepoint `id` on thread `tid` of any process (0: the calling thread)
    /// and on every thread it starts afterwards, counting from now.
    pub(super) fn open_tracepoint(id: u64, tid: i32) -> io::Result<PerfCounter> {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            flags: ATTR_INHERIT,
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
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the syscall returned a new file descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
        Ok(PerfCounter { fd, at_start: 0 })
    }

    /// Counts only the hits whose fields match `filter` (tracefs' filter syntax: `count > 0`).
    pub(super) fn set_filter(&mut self, filter: &str) -> io::Result<()> {
        let filter = std::ffi::CString::new(filter).map_err(io::Error::other)?;
        // SAFETY: an ioctl on a perf fd this struct owns, with a NUL-terminated string that
        // outlives the call.
        let result = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                PERF_EVENT_IOC_SET_FILTER,
                filter.as_ptr(),
            )
        };
        if result < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Starts a section.
    pub(super) fn start(&mut self) {
        self.at_start = self.read();
    }

    /// The hits since `start`, over every thread counted.
    pub(super) fn stop(&mut self) -> u64 {
        self.read().saturating_sub(self.at_start)
    }

    /// The count so far: this thread's and every thread's that inherited the counter, living or
    /// exited. A read the kernel refuses (it does not, for a counter it opened) reads as 0.
    fn read(&self) -> u64 {
        let mut value = [0u8; 8];
        let read = rustix::io::read(&self.fd, &mut value).unwrap_or(0);
        debug_assert_eq!(read, 8);
        u64::from_ne_bytes(value)
    }
}

/// The ids of tracepoints named `system/event` (`raw_syscalls/sys_enter`), in the order asked:
/// None for a tracepoint this kernel lacks, an error when tracefs cannot be read at all. Looks in
/// the usual tracefs mounts and, when none is mounted (as on this VM), mounts tracefs privately
/// in a temporary directory for the moment it takes to read the ids.
pub(super) fn tracepoint_ids(events: &[&str]) -> Result<Vec<Option<u64>>, String> {
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let root = Path::new(root);
        if root.join("events").is_dir() {
            return read_ids(root, events);
        }
    }
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
            let ids = read_ids(&dir, events);
            let _ = rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::DETACH);
            ids
        }
        Err(error) => Err(format!(
            "tracefs is not mounted and mounting it failed ({error}); run as root or mount \
             tracefs at /sys/kernel/tracing"
        )),
    };
    let _ = fs::remove_dir(&dir);
    result
}

fn read_ids(root: &Path, events: &[&str]) -> Result<Vec<Option<u64>>, String> {
    events
        .iter()
        .map(|event| {
            let Ok(text) = fs::read_to_string(root.join("events").join(event).join("id")) else {
                return Ok(None);
            };
            text.trim()
                .parse()
                .map(Some)
                .map_err(|error| format!("bad id of tracepoint {event}: {error}"))
        })
        .collect()
}
