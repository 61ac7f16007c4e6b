//! The machine and the process limits: which host, kernel and CPU produced a number, the
//! locked-memory limit that caps ring sizes and registered buffers, and the fd limit that caps
//! connections.

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Host {
    pub hostname: String,
    pub kernel_release: String,
    pub cpu_model: String,
    pub cpus_online: u64,
    pub memory_bytes_total: u64,
    pub ringside_version: &'static str,
    /// How ringside reaches the kernel, so a reader knows no libc wrapper sits in the path.
    pub syscall_layer: &'static str,
    /// How the epoll server and the load generator wait: `epoll_pwait2` (Linux 5.11), or
    /// `epoll_wait` with a timerfd for sub-millisecond timeouts.
    pub epoll_wait: String,
}

impl Host {
    pub fn read() -> Host {
        let uname = rustix::system::uname();
        Host {
            hostname: uname.nodename().to_string_lossy().into_owned(),
            kernel_release: uname.release().to_string_lossy().into_owned(),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".to_string()),
            cpus_online: cpus_online(),
            memory_bytes_total: memory_bytes_total().unwrap_or(0),
            ringside_version: env!("CARGO_PKG_VERSION"),
            syscall_layer: "rustix (raw syscalls)",
            epoll_wait: crate::system::epoll_wait::WaitCall::here().describe(),
        }
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

fn cpus_online() -> u64 {
    // SAFETY: sysconf only reads a system value.
    let count = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    count.max(0) as u64
}

fn memory_bytes_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// RLIMIT_MEMLOCK: registered buffers (and rings on kernels before 5.12) are charged to it.
#[derive(Clone, Debug, Serialize)]
pub struct Limits {
    /// `null` means unlimited.
    pub memlock_bytes_soft: Option<u64>,
    /// `null` means unlimited.
    pub memlock_bytes_hard: Option<u64>,
    /// Root (CAP_IPC_LOCK) is not held to the memlock limit and may open perf counters.
    pub running_as_root: bool,
    /// RLIMIT_NOFILE as ringside runs (its soft limit raised to the hard one at start): every
    /// connection is an fd in the load generator and another in the server. `null`: unlimited.
    pub open_files_soft: Option<u64>,
    pub open_files_hard: Option<u64>,
}

impl Limits {
    pub fn read() -> Limits {
        let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock);
        let files = crate::system::limits::FdLimit::read();
        Limits {
            memlock_bytes_soft: memlock.current,
            memlock_bytes_hard: memlock.maximum,
            running_as_root: rustix::process::geteuid().is_root(),
            open_files_soft: files.soft,
            open_files_hard: files.hard,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_facts_are_filled_in() {
        let host = Host::read();
        assert!(!host.kernel_release.is_empty());
        assert!(host.cpus_online >= 1);
        assert!(host.memory_bytes_total > 0);
    }
}
