//! The file-descriptor limit (RLIMIT_NOFILE), which decides how many connections a study can
//! hold before anything is measured. Most desktops start processes with a soft limit of 1024
//! and a hard limit far above it; a load generator and a server that stay at 1024 fail with
//! EMFILE in the middle of a run (and once fds ran out, nothing, not even /proc, can be read).
//! So ringside raises its soft limit to the hard one at start, as Go's runtime does (children
//! inherit it), and a run that needs more than the hard limit stops before it starts, saying
//! the numbers and the fix. The same goes for memory a run would allocate up front.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

use crate::units::format_size;

/// Descriptors a process holds besides its connections: stdio, the listener, epoll instances
/// and rings, the stop pipe, perf counters, /proc files read while measuring, a child's pipes.
pub const FDS_BESIDES_CONNECTIONS: u64 = 64;

/// The soft and hard RLIMIT_NOFILE of this process (None: unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdLimit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

impl FdLimit {
    pub fn read() -> FdLimit {
        let limit = getrlimit(Resource::Nofile);
        FdLimit {
            soft: limit.current,
            hard: limit.maximum,
        }
    }
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (to fs.nr_open when the hard limit says
/// unlimited, the most the kernel takes). Returns the limits in force afterwards; a kernel that
/// refuses leaves them as they were, and the checks below then speak of the soft limit.
pub fn raise_fd_limit() -> FdLimit {
    let before = FdLimit::read();
    let ceiling = before.hard.or_else(nr_open);
    let below = |ceiling: &u64| before.soft.is_some_and(|soft| soft < *ceiling);
    if let Some(ceiling) = ceiling.filter(below) {
        let raised = Rlimit {
            current: Some(ceiling),
            maximum: before.hard,
        };
        let _ = setrlimit(Resource::Nofile, raised);
    }
    FdLimit::read()
}

/// The kernel's ceiling for any process's fd limit (`/proc/sys/fs/nr_open`).
fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Stops a run before it starts when a process of it would need more than `needed` fds (a
/// number that already counts `FDS_BESIDES_CONNECTIONS`) and this process may not open that
/// many: one sentence naming both numbers and the fix. `what` says what needs them.
pub fn ensure_fds(needed: u64, what: &str) -> anyhow::Result<()> {
    let limit = FdLimit::read();
    let Some(soft) = limit.soft else {
        return Ok(());
    };
    anyhow::ensure!(
        needed <= soft,
        "{what} needs about {needed} file descriptors per process, but this process may open \
         only {soft} (RLIMIT_NOFILE, hard limit {}); raise it with `ulimit -n {needed}` (as \
         root if the hard limit is lower) or `LimitNOFILE={needed}` for a systemd service, or \
         ask for fewer connections",
        limit
            .hard
            .map_or("unlimited".to_string(), |hard| hard.to_string())
    );
    Ok(())
}

/// Memory the kernel says it could give without swapping (`MemAvailable`), when it says.
pub fn memory_bytes_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What caps the memory io_uring pins for this process (registered buffers, buffer rings):
/// the soft RLIMIT_MEMLOCK, less what the process has pinned and locked already (`VmPin`,
/// `VmLck`). The kernel charges pins to the user, so other processes of the same user holding
/// registrations leave less than this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinLimit {
    pub limit: u64,
    pub held: u64,
}

impl PinLimit {
    /// None when nothing caps pinning: an unlimited limit, or CAP_IPC_LOCK (root), whose pins
    /// io_uring does not charge.
    pub fn read() -> Option<PinLimit> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        if holds_ipc_lock(&status) {
            return None;
        }
        let limit = getrlimit(Resource::Memlock).current?;
        let held: u64 = ["VmPin:", "VmLck:"]
            .iter()
            .filter_map(|field| status_kib(&status, field))
            .sum();
        Some(PinLimit {
            limit,
            held: held * 1024,
        })
    }

    /// Bytes this process may still pin.
    pub fn allowed(&self) -> u64 {
        self.limit.saturating_sub(self.held)
    }

    /// One sentence when registering `needed` bytes (`what`) would pass the limit: both numbers
    /// and the fixes.
    pub fn check(&self, needed: u64, what: &str) -> Result<(), String> {
        if needed <= self.allowed() {
            return Ok(());
        }
        Err(format!(
            "{what} pins {} bytes of locked memory (buffers and rings), but this process may pin only {} more \
             (RLIMIT_MEMLOCK {}, less {} held); raise the limit (`ulimit -l {}`, in KiB, or \
             LimitMEMLOCK= for a systemd service) or run as root (CAP_IPC_LOCK pins are not \
             charged)",
            format_size(needed),
            format_size(self.allowed()),
            format_size(self.limit),
            format_size(self.held),
            (needed + self.held).div_ceil(1024)
        ))
    }
}

/// Checks `needed` bytes of registered buffers against the limit, when one caps them.
pub fn ensure_pinnable(needed: u64, what: &str) -> Result<(), String> {
    PinLimit::read().map_or(Ok(()), |limit| limit.check(needed, what))
}

/// Whether the effective capabilities in a `/proc/<pid>/status` text hold CAP_IPC_LOCK.
fn holds_ipc_lock(status: &str) -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// A `kB` field of a `/proc/<pid>/status` text.
fn status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find_map(|line| line.strip_prefix(field))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The fds a process that holds `connections` connections needs in all.
pub fn fds_for_connections(connections: usize) -> u64 {
    connections as u64 + FDS_BESIDES_CONNECTIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipc_lock_is_read_from_the_effective_capabilities() {
        let root = "CapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        let user = "CapEff:\t0000000000000000\nVmPin:\t      12 kB\n";
        assert!(holds_ipc_lock(root));
        assert!(!holds_ipc_lock(user));
        assert_eq!(status_kib(user, "VmPin:"), Some(12));
        let limit = PinLimit {
            limit: 8 << 20,
            held: 16 << 10,
        };
        assert!(limit.check(4 << 20, "a pool").is_ok());
        let refused = limit.check(64 << 20, "uring-fixed").unwrap_err();
        assert!(
            refused.contains("pins 64M bytes") && refused.contains("8176k more"),
            "{refused}"
        );
        assert!(refused.contains("ulimit -l 65552"), "{refused}");
    }

    #[test]
    fn the_soft_limit_rises_to_the_hard_one_and_too_many_fds_is_one_sentence() {
        let limit = raise_fd_limit();
        assert!(limit.soft.is_none() || limit.soft == limit.hard.or_else(nr_open));
        assert!(ensure_fds(fds_for_connections(10), "a test").is_ok());
        if let Some(soft) = limit.soft {
            let error = ensure_fds(soft + 1, "echo with 99 connections").unwrap_err();
            let text = error.to_string();
            assert!(text.contains(&format!("ulimit -n {}", soft + 1)), "{text}");
            assert!(
                text.contains("LimitNOFILE=") && text.contains("echo with 99"),
                "{text}"
            );
        }
    }
}
