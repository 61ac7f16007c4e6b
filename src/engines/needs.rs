//! What an engine needs from the kernel, as data: the io_uring opcodes it submits, the ring
//! setup flags it asks for, what it registers, and so the oldest kernel it runs on. Every row of
//! the engine table carries one `Needs`, and nothing here runs anything: whether this machine
//! gives it is asked by `uring/trial.rs` (the kernel's opcode probe plus one trial ring with
//! those flags and registrations, on a thread of its own), so an engine that cannot run here
//! says which opcode, flag or registration is missing before it is measured, not halfway
//! through. The probe's list of "opcodes ringside uses" is the union of the table's opcodes.

use io_uring::opcode;

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

pub const NOP: Opcode = op("Nop", opcode::Nop::CODE, (5, 1));
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
pub const CLOSE: Opcode = op("Close", opcode::Close::CODE, (5, 6));
pub const SHUTDOWN: Opcode = op("Shutdown", opcode::Shutdown::CODE, (5, 11));
pub const SEND_ZC: Opcode = op("SendZc", opcode::SendZc::CODE, (6, 0));
pub const LINK_TIMEOUT: Opcode = op("LinkTimeout", opcode::LinkTimeout::CODE, (5, 5));

// The opcodes and registrations several rows of the engine table share.

/// The plain rungs write (fs write) or read (fs read).
pub const FILE_PLAIN: &[Opcode] = &[WRITE, FSYNC, READ];
pub const FILE_CYCLE: &[Opcode] = &[WRITE, FSYNC, READ];
pub const FILE_FIXED: &[Opcode] = &[WRITE_FIXED, FSYNC, READ_FIXED];
/// What an IOPOLL ring submits: it refuses fsync, so it serves `fs write` and `fs read`.
pub const FILE_POLLED: &[Opcode] = &[WRITE_FIXED, READ_FIXED];
pub const FIXED: &[Registration] = &[Registration::Files, Registration::Buffers];
pub const FIXED_RING_FD: &[Registration] = &[
    Registration::Files,
    Registration::Buffers,
    Registration::RingFd,
];
pub const MULTISHOT: &[Opcode] = &[ACCEPT_MULTI, RECV_MULTI, SEND, ASYNC_CANCEL, POLL_ADD];
/// Multishot on direct descriptors: shut down and closed with SQEs.
pub const DIRECT: &[Opcode] = &[
    ACCEPT_MULTI,
    RECV_MULTI,
    SEND,
    ASYNC_CANCEL,
    POLL_ADD,
    SHUTDOWN,
    CLOSE,
];
pub const DIRECT_ZERO_COPY: &[Opcode] = &[
    ACCEPT_MULTI,
    RECV_MULTI,
    SEND_ZC,
    ASYNC_CANCEL,
    POLL_ADD,
    SHUTDOWN,
    CLOSE,
];
pub const DEFER_REGISTRATIONS: &[Registration] = &[Registration::BufRing, Registration::RingFd];
pub const DIRECT_REGISTRATIONS: &[Registration] = &[
    Registration::BufRing,
    Registration::RingFd,
    Registration::Files,
];
pub const SEND_BUFFER_REGISTRATIONS: &[Registration] = &[
    Registration::BufRing,
    Registration::RingFd,
    Registration::Files,
    Registration::Buffers,
];

/// The `IORING_SETUP_*` flags a ring is built with. The engine's ring is built from exactly
/// these (`RingSetup::flags`), so what the table says it needs is what it asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetupFlags {
    /// A kernel thread polls the submission queue (5.11 for unprivileged users).
    pub sqpoll: bool,
    /// SINGLE_ISSUER (6.0) | DEFER_TASKRUN (6.1) | COOP_TASKRUN (5.19): completion work runs
    /// only when the one submitting thread asks for it.
    pub defer_taskrun: bool,
    /// NO_SQARRAY (6.6): the submission queue without its index array.
    pub no_sqarray: bool,
    /// IOPOLL (5.1): completions of O_DIRECT I/O are polled from the device, not interrupts.
    pub iopoll: bool,
}

impl SetupFlags {
    pub const NONE: SetupFlags = SetupFlags {
        sqpoll: false,
        defer_taskrun: false,
        no_sqarray: false,
        iopoll: false,
    };
    pub const SQPOLL: SetupFlags = SetupFlags {
        sqpoll: true,
        ..SetupFlags::NONE
    };
    pub const DEFER_TASKRUN: SetupFlags = SetupFlags {
        defer_taskrun: true,
        ..SetupFlags::NONE
    };
    pub const DEFER_NO_SQARRAY: SetupFlags = SetupFlags {
        no_sqarray: true,
        ..SetupFlags::DEFER_TASKRUN
    };
    pub const IOPOLL: SetupFlags = SetupFlags {
        iopoll: true,
        ..SetupFlags::DEFER_TASKRUN
    };

    /// Each flag asked for, with the names it sets and the Linux version that has it.
    fn asked(self) -> impl Iterator<Item = (&'static [&'static str], Kernel)> {
        const DEFER: &[&str] = &["SINGLE_ISSUER", "DEFER_TASKRUN", "COOP_TASKRUN"];
        [
            (self.sqpoll, &["SQPOLL"][..], (5, 11)),
            (self.defer_taskrun, DEFER, (6, 1)),
            (self.no_sqarray, &["NO_SQARRAY"], (6, 6)),
            (self.iopoll, &["IOPOLL"], (5, 1)),
        ]
        .into_iter()
        .filter(|&(set, _, _)| set)
        .map(|(_, names, since)| (names, since))
    }

    fn since(self) -> Kernel {
        self.asked()
            .map(|(_, since)| since)
            .fold((5, 1), Kernel::max)
    }

    fn names(self) -> Vec<&'static str> {
        self.asked()
            .flat_map(|(names, _)| names.iter().copied())
            .collect()
    }
}

/// What an engine needs beyond opcodes, setup flags and registrations: a feature the ring
/// reports, or something of the machine. The machine is checked right after io_uring itself
/// and before the opcodes, so an engine that lacks hardware says so rather than naming a
/// kernel feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// Waiting for several completions, but no longer than a minimum time for more than one
    /// (`min_wait_usec`, IORING_FEAT_MIN_TIMEOUT).
    MinWait,
    /// Receive and send bundles from a provided-buffer ring (IORING_FEAT_RECVSEND_BUNDLE).
    /// The cap the bundle receive asks for (6.17) is not needed: a kernel that refuses it gets
    /// uncapped bundles (`receive_multishot.rs`).
    Bundles,
    /// Provided-buffer rings whose buffers are consumed a part at a time (IOU_PBUF_RING_INC).
    IncrementalBuffers,
    /// IORING_OP_SEND from a registered buffer (IORING_RECVSEND_FIXED_BUF on plain sends).
    /// No released kernel has it: mainline honours the flag on SEND_ZC only (6.1, 6.12 and 6.18
    /// refuse it with EINVAL; a patch for plain sends was posted to io-uring@ in June 2026).
    SendFromRegisteredBuffers,
    /// NAPI busy polling (IORING_REGISTER_NAPI, 6.9): it polls a NIC's receive queue, and
    /// loopback has none.
    NapiBusyPoll,
    /// Zero-copy receive (IORING_REGISTER_ZCRX_IFQ, 6.15): a NIC's queue writes into memory
    /// shared with the ring, and loopback has none.
    ZeroCopyReceive,
    /// A block device with poll queues, where IOPOLL completes O_DIRECT I/O.
    PolledBlockDevice,
    /// A file opened with O_DIRECT (`--direct`): libaio is asynchronous only there (on a
    /// buffered file io_submit does the read itself before it returns).
    DirectFile,
}

impl Feature {
    /// Whether the feature works on a NIC's queue, which neither network a study runs over
    /// (loopback, veth) has: an engine that needs it never runs in a study.
    pub fn needs_a_nic(self) -> bool {
        matches!(self, Feature::NapiBusyPoll | Feature::ZeroCopyReceive)
    }

    pub fn name(self) -> &'static str {
        match self {
            Feature::MinWait => "min-wait (IORING_FEAT_MIN_TIMEOUT)",
            Feature::Bundles => "bundles (IORING_FEAT_RECVSEND_BUNDLE)",
            Feature::IncrementalBuffers => {
                "incrementally consumed buffer rings (IOU_PBUF_RING_INC)"
            }
            Feature::SendFromRegisteredBuffers => "sends from registered buffers",
            Feature::NapiBusyPoll => "NAPI busy polling of a NIC that carries the traffic",
            Feature::ZeroCopyReceive => "zero-copy receive from a NIC that carries the traffic",
            Feature::PolledBlockDevice => "a block device with poll queues",
            Feature::DirectFile => "an O_DIRECT file (--direct)",
        }
    }

    /// The Linux that added it; None when no released Linux has it.
    pub fn since(self) -> Option<Kernel> {
        match self {
            Feature::MinWait => Some((6, 12)),
            Feature::Bundles => Some((6, 10)),
            Feature::IncrementalBuffers => Some((6, 12)),
            Feature::SendFromRegisteredBuffers => None,
            Feature::NapiBusyPoll => Some((6, 9)),
            Feature::ZeroCopyReceive => Some((6, 15)),
            Feature::PolledBlockDevice => Some((5, 1)),
            Feature::DirectFile => Some((2, 6)),
        }
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

    pub fn since(self) -> Kernel {
        match self {
            Registration::Files | Registration::Buffers => (5, 1),
            Registration::BufRing => (5, 19),
            Registration::RingFd => (5, 18),
        }
    }
}

/// Every measured ring sets its io-wq worker limits (IORING_REGISTER_IOWQ_MAX_WORKERS, 5.15;
/// see `ring::Helpers`), so every io_uring engine needs at least this kernel's io_uring. The
/// 5.10 stable series has it too: its io_uring is 5.15's ("5.10 and 5.15 are identical in terms
/// of io_uring support", axboe in axboe/liburing#1173), and Debian 11's 5.10 ran and verified
/// every engine that needs no more (issue 20's kernel lab).
pub const IOWQ_LIMITS_SINCE: Kernel = (5, 15);

/// What one engine needs from the kernel. Engines without io_uring need nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    pub opcodes: &'static [Opcode],
    pub setup: SetupFlags,
    pub registrations: &'static [Registration],
    pub features: &'static [Feature],
}

impl Needs {
    /// Plain syscalls: every Linux ringside runs on has them.
    pub const NOTHING: Needs = Needs {
        opcodes: &[],
        setup: SetupFlags::NONE,
        registrations: &[],
        features: &[],
    };

    /// io_uring with these opcodes on a plain ring: no setup flags, registrations or features.
    pub const fn io_uring(opcodes: &'static [Opcode]) -> Needs {
        Needs {
            opcodes,
            ..Needs::NOTHING
        }
    }

    pub fn uses_io_uring(&self) -> bool {
        !self.opcodes.is_empty()
    }

    /// The oldest kernel that has all of it (None: any, or, with `unreleased`, none yet).
    pub fn kernel(&self) -> Option<Kernel> {
        if !self.uses_io_uring() || self.unreleased().is_some() {
            return None;
        }
        let opcodes = self.opcodes.iter().map(|opcode| opcode.since);
        let registrations = self.registrations.iter().map(|r| r.since());
        let features = self.features.iter().filter_map(|f| f.since());
        opcodes
            .chain(registrations)
            .chain(features)
            .chain([self.setup.since(), IOWQ_LIMITS_SINCE])
            .max()
    }

    /// A feature it needs that no released kernel has (its trial still asks the running one).
    pub fn unreleased(&self) -> Option<Feature> {
        self.features
            .iter()
            .copied()
            .find(|feature| feature.since().is_none())
    }

    /// One line for tables: "Write, Fsync; SQPOLL; registered files; Linux 5.15 (or 5.10
    /// stable)".
    pub fn text(&self) -> String {
        if !self.uses_io_uring() {
            return "plain syscalls".to_string();
        }
        let linux = match self.kernel() {
            Some(IOWQ_LIMITS_SINCE) => "Linux 5.15 (or 5.10 stable: the same io_uring)".to_string(),
            Some((major, minor)) => format!("Linux {major}.{minor}"),
            None => "no released Linux yet".to_string(),
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
        parts.extend(self.features.iter().map(|f| f.name().to_string()));
        parts.push(linux);
        parts.join("; ")
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
            features: &[],
        };
        assert_eq!(multishot.kernel(), Some((6, 0)));
        let defer = Needs {
            setup: SetupFlags::DEFER_TASKRUN,
            ..multishot
        };
        assert_eq!(defer.kernel(), Some((6, 1)));
        assert!(defer.text().contains("DEFER_TASKRUN"), "{}", defer.text());
        let plain = Needs::io_uring(&[WRITE, FSYNC]);
        assert_eq!(
            plain.text(),
            "Write, Fsync; Linux 5.15 (or 5.10 stable: the same io_uring)"
        );
    }
}
