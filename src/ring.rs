//! Setting up io_uring rings, and saying in operator terms why the kernel refused one.
//!
//! Every io_uring engine builds its ring here, so the answer to "why is this engine
//! unavailable?" is written once: the `kernel.io_uring_disabled` sysctl, a seccomp filter
//! (EPERM/ENOSYS, as in containers), a locked-memory limit, or a setup flag this kernel lacks.
//! `RINGSIDE_FORCE_NO_URING=1` makes every ring refuse, so the fallback paths can be tested on
//! a kernel that has io_uring.

use std::io;
use std::sync::OnceLock;

use io_uring::IoUring;

/// Environment variable that makes ringside behave as on a kernel without io_uring.
pub const FORCE_NO_URING: &str = "RINGSIDE_FORCE_NO_URING";

/// How a ring is set up: its size and the `IORING_SETUP_*` flags an engine asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingSetup {
    pub entries: u32,
    /// Completion queue size when it must exceed twice `entries` (many CQEs per SQE).
    pub cq_entries: Option<u32>,
    /// SQPOLL with this idle time in milliseconds before the kernel thread sleeps.
    pub sqpoll_idle_ms: Option<u32>,
    /// Pin the SQPOLL thread to this CPU.
    pub sqpoll_cpu: Option<u32>,
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    pub coop_taskrun: bool,
}

impl RingSetup {
    pub fn with_entries(entries: u32) -> RingSetup {
        RingSetup {
            entries,
            ..RingSetup::default()
        }
    }

    /// Builds the ring, or explains why the kernel refused it.
    pub fn build(&self) -> Result<IoUring, String> {
        usable()?;
        let mut builder = IoUring::builder();
        if let Some(cq_entries) = self.cq_entries {
            builder.setup_cqsize(cq_entries);
        }
        if let Some(idle_ms) = self.sqpoll_idle_ms {
            builder.setup_sqpoll(idle_ms);
            if let Some(cpu) = self.sqpoll_cpu {
                builder.setup_sqpoll_cpu(cpu);
            }
        }
        if self.single_issuer {
            builder.setup_single_issuer();
        }
        if self.defer_taskrun {
            builder.setup_defer_taskrun();
        }
        if self.coop_taskrun {
            builder.setup_coop_taskrun();
        }
        builder
            .build(self.entries)
            .map_err(|error| explain_setup_error(&error, self))
    }
}

/// Whether this process may use io_uring at all, with the reason when it may not. Checked once.
pub fn usable() -> Result<(), String> {
    static USABLE: OnceLock<Result<(), String>> = OnceLock::new();
    USABLE
        .get_or_init(|| {
            if std::env::var_os(FORCE_NO_URING).is_some_and(|value| value != "0") {
                return Err(format!(
                    "io_uring is switched off for this run by {FORCE_NO_URING}"
                ));
            }
            IoUring::new(2)
                .map(drop)
                .map_err(|error| explain_setup_error(&error, &RingSetup::default()))
        })
        .clone()
}

/// The value of `/proc/sys/kernel/io_uring_disabled` (0 allowed, 1 restricted to a group,
/// 2 disabled), when the kernel has the sysctl.
pub fn io_uring_disabled_sysctl() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Turns an io_uring_setup error into one sentence saying what happened and what to do.
pub fn explain_setup_error(error: &io::Error, setup: &RingSetup) -> String {
    let sysctl = io_uring_disabled_sysctl();
    match error.raw_os_error() {
        Some(libc::ENOSYS) => format!(
            "io_uring_setup is not available ({error}): the kernel was built without io_uring or \
             a seccomp filter (e.g. a container's default profile) returns ENOSYS; use a kernel \
             >= 5.6 outside the filter"
        ),
        Some(libc::EPERM) if sysctl == Some(2) => format!(
            "io_uring is disabled by the sysctl kernel.io_uring_disabled=2 ({error}); run `sysctl -w \
             kernel.io_uring_disabled=0` as root to allow it"
        ),
        Some(libc::EPERM) if sysctl == Some(1) => format!(
            "io_uring is restricted by kernel.io_uring_disabled=1 to members of the \
             kernel.io_uring_group group ({error}); join that group or set the sysctl to 0"
        ),
        Some(libc::EPERM) if setup.sqpoll_idle_ms.is_some() => format!(
            "the kernel refused an SQPOLL ring ({error}); kernels before 5.11 allow SQPOLL only to \
             root (CAP_SYS_NICE)"
        ),
        Some(libc::EPERM) => format!(
            "io_uring_setup was refused ({error}) although kernel.io_uring_disabled allows it; a \
             seccomp filter (container runtime, systemd SystemCallFilter) is the likely cause: run \
             outside it or allow io_uring_setup/io_uring_enter/io_uring_register"
        ),
        Some(libc::ENOMEM) => format!(
            "io_uring_setup could not lock memory for a ring of {} entries ({error}); raise the \
             locked-memory limit (`ulimit -l`, RLIMIT_MEMLOCK) or use a smaller --depth",
            setup.entries
        ),
        Some(libc::EINVAL) => format!(
            "the kernel refused this ring's setup flags ({error}); it is older than the features \
             this engine needs ({})",
            describe_flags(setup)
        ),
        _ => format!("io_uring_setup failed: {error}"),
    }
}

fn describe_flags(setup: &RingSetup) -> String {
    let mut flags = Vec::new();
    if setup.sqpoll_idle_ms.is_some() {
        flags.push("SQPOLL");
    }
    if setup.single_issuer {
        flags.push("SINGLE_ISSUER (6.0)");
    }
    if setup.defer_taskrun {
        flags.push("DEFER_TASKRUN (6.1)");
    }
    if setup.coop_taskrun {
        flags.push("COOP_TASKRUN (5.19)");
    }
    if flags.is_empty() {
        "no special flags".to_string()
    } else {
        flags.join(", ")
    }
}

/// Waits until at least `want` completions are ready, treating EINTR as "try again" and EBUSY
/// (completion queue overflow backlog) as "reap first": the caller reaps and calls again.
pub fn submit_and_wait(ring: &IoUring, want: usize) -> io::Result<usize> {
    loop {
        match ring.submit_and_wait(want) {
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => continue,
            Err(error) if error.raw_os_error() == Some(libc::EBUSY) => return Ok(0),
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanations_name_the_cause_and_the_fix() {
        let eperm = io::Error::from_raw_os_error(libc::EPERM);
        let text = explain_setup_error(&eperm, &RingSetup::default());
        assert!(
            text.contains("seccomp") || text.contains("sysctl"),
            "{text}"
        );
        let enomem = io::Error::from_raw_os_error(libc::ENOMEM);
        assert!(explain_setup_error(&enomem, &RingSetup::with_entries(4096)).contains("ulimit -l"));
        let einval = io::Error::from_raw_os_error(libc::EINVAL);
        let setup = RingSetup {
            defer_taskrun: true,
            ..RingSetup::with_entries(8)
        };
        assert!(explain_setup_error(&einval, &setup).contains("DEFER_TASKRUN"));
    }
}
