//! What an engine needs from the kernel, as data: the io_uring opcodes it submits, the ring
//! setup flags it asks for, what it registers, and so the oldest kernel it runs on. Every row of
//! the engine table carries one `Needs`; availability is checked from it (the kernel's opcode
//! probe plus one trial ring with those flags and registrations, on a thread of its own), so an
//! engine that cannot run here says which opcode, flag or registration is missing before it is
//! measured, not halfway through. The probe's list of "opcodes ringside uses" is the union of
//! the table's opcodes.

use std::os::fd::AsRawFd;

use io_uring::{opcode, IoUring, Probe};

use super::uring::buf_ring::BufRing;
use super::uring::ring::{self, RingSetup};

/// A Linux version, (major, minor).
pub type Kernel = (u32, u32);

/// One io_uring opcode an engine submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opcode {
    pub name: &'static str,
    pub code: u8,
    /// The kernel that added it (for a flag variant, the variant).
    pub since: Kernel,
    /// A variant selected by an SQE flag (multishot), which the probe reports as its base
    /// opcode: only the kernel version tells whether the variant works.
    pub flag_variant: bool,
}

const fn op(name: &'static str, code: u8, since: Kernel) -> Opcode {
    Opcode {
        name,
        code,
        since,
        flag_variant: false,
    }
}

pub const READ: Opcode = op("Read", opcode::Read::CODE, (5, 6));
pub const WRITE: Opcode = op("Write", opcode::Write::CODE, (5, 6));
pub const READ_FIXED: Opcode = op("ReadFixed", opcode::ReadFixed::CODE, (5, 1));
pub const WRITE_FIXED: Opcode = op("WriteFixed", opcode::WriteFixed::CODE, (5, 1));
pub const FSYNC: Opcode = op("Fsync", opcode::Fsync::CODE, (5, 1));
pub const ACCEPT: Opcode = op("Accept", opcode::Accept::CODE, (5, 5));
pub const ACCEPT_MULTI: Opcode = Opcode {
    flag_variant: true,
    ..op("AcceptMulti", opcode::AcceptMulti::CODE, (5, 19))
};
pub const RECV: Opcode = op("Recv", opcode::Recv::CODE, (5, 6));
pub const RECV_MULTI: Opcode = Opcode {
    flag_variant: true,
    ..op("RecvMulti", opcode::RecvMulti::CODE, (6, 0))
};
pub const SEND: Opcode = op("Send", opcode::Send::CODE, (5, 6));
pub const ASYNC_CANCEL: Opcode = op("AsyncCancel", opcode::AsyncCancel::CODE, (5, 5));
pub const POLL_ADD: Opcode = op("PollAdd", opcode::PollAdd::CODE, (5, 1));

/// The `IORING_SETUP_*` flags a ring is built with. The engine's ring is built from exactly
/// these (`RingSetup::flags`), so what the table says it needs is what it asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetupFlags {
    /// A kernel thread polls the submission queue (5.11 for unprivileged users).
    pub sqpoll: bool,
    /// SINGLE_ISSUER (6.0) | DEFER_TASKRUN (6.1) | COOP_TASKRUN (5.19): completion work runs
    /// only when the one submitting thread asks for it.
    pub defer_taskrun: bool,
}

impl SetupFlags {
    pub const NONE: SetupFlags = SetupFlags {
        sqpoll: false,
        defer_taskrun: false,
    };
    pub const SQPOLL: SetupFlags = SetupFlags {
        sqpoll: true,
        defer_taskrun: false,
    };
    pub const DEFER_TASKRUN: SetupFlags = SetupFlags {
        sqpoll: false,
        defer_taskrun: true,
    };

    fn since(self) -> Kernel {
        match (self.sqpoll, self.defer_taskrun) {
            (_, true) => (6, 1),
            (true, false) => (5, 11),
            (false, false) => (5, 1),
        }
    }

    fn names(self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.sqpoll {
            names.push("SQPOLL");
        }
        if self.defer_taskrun {
            names.extend(["SINGLE_ISSUER", "DEFER_TASKRUN", "COOP_TASKRUN"]);
        }
        names
    }
}

/// Something an engine registers with its ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// The file, used as `types::Fixed` (IORING_REGISTER_FILES).
    Files,
    /// The data and read-back buffers (IORING_REGISTER_BUFFERS, `WriteFixed`/`ReadFixed`).
    Buffers,
    /// A provided-buffer ring for multishot receives (IORING_REGISTER_PBUF_RING).
    BufRing,
    /// The ring's own fd, so io_uring_enter skips the fd lookup (IORING_REGISTER_RING_FDS).
    RingFd,
}

impl Registration {
    pub fn name(self) -> &'static str {
        match self {
            Registration::Files => "registered files",
            Registration::Buffers => "registered buffers",
            Registration::BufRing => "a provided-buffer ring",
            Registration::RingFd => "a registered ring fd",
        }
    }

    fn since(self) -> Kernel {
        match self {
            Registration::Files | Registration::Buffers => (5, 1),
            Registration::BufRing => (5, 19),
            Registration::RingFd => (5, 18),
        }
    }
}

/// Every measured ring sets its io-wq worker limits (IORING_REGISTER_IOWQ_MAX_WORKERS, 5.15;
/// see `ring::Helpers`), so every io_uring engine needs at least this kernel.
const IOWQ_LIMITS_SINCE: Kernel = (5, 15);

/// What one engine needs from the kernel. Engines without io_uring need nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    pub opcodes: &'static [Opcode],
    pub setup: SetupFlags,
    pub registrations: &'static [Registration],
}

impl Needs {
    /// Plain syscalls: every Linux ringside runs on has them.
    pub const NOTHING: Needs = Needs {
        opcodes: &[],
        setup: SetupFlags::NONE,
        registrations: &[],
    };

    pub fn uses_io_uring(&self) -> bool {
        !self.opcodes.is_empty()
    }

    /// The oldest kernel that has all of it (None: any).
    pub fn kernel(&self) -> Option<Kernel> {
        if !self.uses_io_uring() {
            return None;
        }
        let opcodes = self.opcodes.iter().map(|opcode| opcode.since);
        let registrations = self.registrations.iter().map(|r| r.since());
        opcodes
            .chain(registrations)
            .chain([self.setup.since(), IOWQ_LIMITS_SINCE])
            .max()
    }

    /// One line for tables: "Write, Fsync; SQPOLL; registered files; Linux 5.15".
    pub fn text(&self) -> String {
        let Some((major, minor)) = self.kernel() else {
            return "plain syscalls".to_string();
        };
        let mut parts = vec![self
            .opcodes
            .iter()
            .map(|opcode| opcode.name)
            .collect::<Vec<_>>()
            .join(", ")];
        let flags = self.setup.names();
        if !flags.is_empty() {
            parts.push(flags.join("|"));
        }
        parts.extend(self.registrations.iter().map(|r| r.name().to_string()));
        parts.push(format!("Linux {major}.{minor}"));
        parts.join("; ")
    }

    /// Whether the kernel gives all of it; the first thing it lacks when it does not. The trial
    /// ring is made on a thread of its own, so it never sizes the caller's io-wq pool.
    pub fn check(&self) -> Result<(), String> {
        if !self.uses_io_uring() {
            return Ok(());
        }
        ring::usable()?;
        ring::on_trial_thread(|| self.trial())
    }

    fn trial(&self) -> Result<(), String> {
        // Declared before the ring so that it is dropped after it (see buf_ring.rs).
        let mut buffers = BufRing::new(1, 64, 0);
        let ring = RingSetup::trial(self.setup).build()?;
        ring::iowq_max_workers(&ring).map_err(|error| {
            format!(
                "the kernel refused IORING_REGISTER_IOWQ_MAX_WORKERS ({error}), which every \
                 measured ring uses: it needs Linux 5.15"
            )
        })?;
        self.check_opcodes(&ring)?;
        for &registration in self.registrations {
            register(&ring, registration, &mut buffers).map_err(|error| {
                let (major, minor) = registration.since();
                format!(
                    "the kernel refused {} ({error}); it needs Linux {major}.{minor}",
                    registration.name()
                )
            })?;
        }
        Ok(())
    }

    fn check_opcodes(&self, ring: &IoUring) -> Result<(), String> {
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|error| format!("the kernel has no opcode probe ({error}): Linux 5.6+"))?;
        let version = crate::system::kernel::running_kernel_version().unwrap_or((0, 0));
        match self
            .opcodes
            .iter()
            .find(|opcode| !supported(opcode, &probe, version))
        {
            Some(missing) => Err(format!(
                "this kernel lacks the io_uring opcode {} (Linux {}.{})",
                missing.name, missing.since.0, missing.since.1
            )),
            None => Ok(()),
        }
    }
}

/// Whether `opcode` works here: the probe says so, and for a flag variant the kernel is new
/// enough (the probe sees only the base opcode).
pub fn supported(opcode: &Opcode, probe: &Probe, version: Kernel) -> bool {
    probe.is_supported(opcode.code) && (!opcode.flag_variant || version >= opcode.since)
}

fn register(
    ring: &IoUring,
    registration: Registration,
    buffers: &mut BufRing,
) -> std::io::Result<()> {
    let mut submitter = ring.submitter();
    match registration {
        Registration::Files => {
            let null = std::fs::File::open("/dev/null")?;
            submitter.register_files(&[null.as_raw_fd()])
        }
        Registration::Buffers => {
            let buffer = [0u8; 64];
            let iovec = libc::iovec {
                iov_base: buffer.as_ptr() as *mut _,
                iov_len: buffer.len(),
            };
            // SAFETY: the buffer outlives the registration: the ring is dropped in `trial`,
            // before this frame's caller returns, and nothing is submitted.
            let registered = unsafe { submitter.register_buffers(&[iovec]) };
            registered.and_then(|()| submitter.unregister_buffers())
        }
        Registration::BufRing => buffers.register(&submitter),
        Registration::RingFd => submitter.register_ring_fd().map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_kernel_is_the_newest_of_the_parts() {
        assert_eq!(Needs::NOTHING.kernel(), None);
        let multishot = Needs {
            opcodes: &[ACCEPT_MULTI, RECV_MULTI, SEND],
            setup: SetupFlags::NONE,
            registrations: &[Registration::BufRing],
        };
        assert_eq!(multishot.kernel(), Some((6, 0)));
        let defer = Needs {
            setup: SetupFlags::DEFER_TASKRUN,
            ..multishot
        };
        assert_eq!(defer.kernel(), Some((6, 1)));
        assert!(defer.text().contains("DEFER_TASKRUN"), "{}", defer.text());
    }
}
