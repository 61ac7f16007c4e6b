//! Whether this machine gives an engine of the table what its row needs (`needs.rs`, pure
//! data): the machine first (a NIC, a polled block device), then io_uring itself, then one trial
//! ring with the row's setup flags on a thread of its own (so it never sizes the caller's io-wq
//! pool), asked for the row's opcodes (the kernel's probe), features and registrations. The
//! answer is the first thing missing, in a sentence, or nothing.

use std::os::fd::{AsRawFd, BorrowedFd};

use io_uring::types::IOU_PBUF_RING_INC;
use io_uring::{IoUring, Probe, Submitter};

use super::buf_ring::{BufRing, RingEntries};
use super::registered::Regions;
use super::ring::{self, RingSetup};
use super::server::{PlainSend, SendStrategy};
use super::teardown::{HeldMemory, InFlight, KernelHeld};
use crate::engines::needs::{Feature, Kernel, Needs, Opcode, Registration, IOWQ_LIMITS_SINCE};

/// Whether the kernel gives all of `needs`; the first thing it lacks when it does not.
pub fn availability(needs: &Needs) -> Result<(), String> {
    if !needs.uses_io_uring() {
        return Ok(());
    }
    ring::usable()?;
    for &feature in needs.features {
        machine_has(feature)?;
    }
    let running = crate::system::kernel::running_kernel_version();
    ring::on_trial_thread(|| trial(needs)).map_err(|reason| with_minimum(needs, reason, running))
}

/// A trial's reason, and where this kernel is older than the engine's minimum, that minimum:
/// the one missing feature named may be the first of several the engine needs.
fn with_minimum(needs: &Needs, reason: String, running: Option<Kernel>) -> String {
    match (needs.kernel(), running) {
        (Some(needed), Some(here)) if here < needed && needed > IOWQ_LIMITS_SINCE => {
            format!(
                "{reason}; this engine needs Linux {}.{} in all, this is {}.{}",
                needed.0, needed.1, here.0, here.1
            )
        }
        _ => reason,
    }
}

/// What a trial ring's requests and registrations use: a one-buffer pool and a send buffer,
/// held beside the ring like any engine's memory.
struct TrialMemory {
    pool: BufRing,
    send: Box<[u8; 64]>,
    in_flight: InFlight,
}

impl HeldMemory for TrialMemory {
    fn in_flight(&mut self) -> &mut InFlight {
        &mut self.in_flight
    }

    /// None: the trial's one request, a send into an empty socket buffer, completes at once.
    fn waiting(&self, _user_data: &mut Vec<u64>) {}

    fn unregister(&mut self, submitter: &Submitter<'_>) {
        self.pool.unregister(submitter);
        let _ = submitter.unregister_buffers();
        let _ = submitter.unregister_files();
    }

    fn describe(&self) -> String {
        "the trial ring's two small buffers".to_string()
    }
}

fn trial(needs: &Needs) -> Result<(), String> {
    let ring = RingSetup::trial(needs.setup).build()?;
    let memory = TrialMemory {
        pool: BufRing::new(1, 64, 0),
        send: Box::new([7; 64]),
        in_flight: InFlight::default(),
    };
    let mut held = KernelHeld::new(ring, memory);
    let (ring, memory) = held.parts();
    ring::iowq_max_workers(ring).map_err(|error| {
        format!(
            "the kernel refused IORING_REGISTER_IOWQ_MAX_WORKERS ({error}), which every \
             measured ring uses: it needs Linux 5.15"
        )
    })?;
    check_opcodes(needs, ring)?;
    for &feature in needs.features {
        ring_has(feature, ring, memory)?;
    }
    for &registration in needs.registrations {
        register(ring, registration, memory).map_err(|error| {
            let (major, minor) = registration.since();
            format!(
                "the kernel refused {} ({error}); it needs Linux {major}.{minor}",
                registration.name()
            )
        })?;
    }
    Ok(())
}

fn check_opcodes(needs: &Needs, ring: &IoUring) -> Result<(), String> {
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|error| format!("the kernel has no opcode probe ({error}): Linux 5.6+"))?;
    let version = crate::system::kernel::running_kernel_version().unwrap_or((0, 0));
    match needs
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

/// Whether `opcode` works here: the probe says so, and for a flag variant the kernel is new
/// enough (the probe sees only the base opcode).
pub fn supported(opcode: &Opcode, probe: &Probe, version: Kernel) -> bool {
    probe.is_supported(opcode.code) && (!opcode.flag_variant || version >= opcode.since)
}

/// What the machine lacks for `feature`, checked before any ring is made.
fn machine_has(feature: Feature) -> Result<(), String> {
    match feature {
        Feature::NapiBusyPoll | Feature::ZeroCopyReceive => Err(nic_traffic_reason()),
        Feature::PolledBlockDevice => polled_block_device().map(drop),
        _ => Ok(()),
    }
}

/// What the kernel lacks for `feature`, from the trial ring.
fn ring_has(feature: Feature, ring: &mut IoUring, memory: &mut TrialMemory) -> Result<(), String> {
    let present = match feature {
        Feature::MinWait => ring.params().is_feature_min_timeout(),
        Feature::Bundles => ring.params().is_feature_recvsend_bundle(),
        // No feature bit says it: the kernel's answer to the registration does.
        Feature::IncrementalBuffers => {
            RingEntries::new(1).register_trial(&ring.submitter(), IOU_PBUF_RING_INC as u16)
        }
        Feature::SendFromRegisteredBuffers => {
            return send_from_registered_buffer(ring, memory).map_err(|error| {
                format!(
                    "this kernel refuses IORING_OP_SEND from a registered buffer \
                     (IORING_RECVSEND_FIXED_BUF: {error}); no released Linux takes one on a \
                     plain send, only SEND_ZC does (uring-send-zc)"
                )
            })
        }
        Feature::NapiBusyPoll
        | Feature::ZeroCopyReceive
        | Feature::PolledBlockDevice
        | Feature::DirectFile => true,
    };
    let since = feature.since().map_or_else(String::new, |(major, minor)| {
        format!(" (Linux {major}.{minor})")
    });
    present
        .then_some(())
        .ok_or_else(|| format!("this kernel lacks {}{since}", feature.name()))
}

/// Sends 8 bytes from a registered buffer over a socket pair on the trial `ring`, as the
/// `uring-fixed-bufs` server would: the kernel's answer is the availability (no version says it).
fn send_from_registered_buffer(ring: &mut IoUring, memory: &mut TrialMemory) -> Result<(), String> {
    let (sender, _receiver) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
    let buffer = &memory.send[..];
    // SAFETY: the buffer is held beside the ring (`KernelHeld`): the teardown reaps the send
    // and unregisters before it frees it.
    let regions = unsafe { Regions::register(&ring.submitter(), &[buffer]) };
    regions.map_err(|error| format!("no registered buffers: {error}"))?;
    let fd = io_uring::types::Fd(sender.as_raw_fd());
    let send = PlainSend.prepare(0, fd, &buffer[..8], Some(0));
    // SAFETY: the entry reads the held buffer (as above).
    unsafe { ring.submission().push(&send.user_data(1)) }.map_err(|e| e.to_string())?;
    memory.in_flight.pushed(1);
    ring.submit_and_wait(1).map_err(|error| error.to_string())?;
    let result = match ring.completion().next() {
        Some(cqe) => {
            memory.in_flight.completed(cqe.flags());
            cqe.result()
        }
        None => -1,
    };
    let _ = ring.submitter().unregister_buffers();
    match result {
        8 => Ok(()),
        error if error < 0 => Err(std::io::Error::from_raw_os_error(-error).to_string()),
        short => Err(format!("{short} of 8 bytes sent")),
    }
}

fn register(
    ring: &IoUring,
    registration: Registration,
    memory: &mut TrialMemory,
) -> std::io::Result<()> {
    let mut submitter = ring.submitter();
    match registration {
        Registration::Files => {
            let null = std::fs::File::open("/dev/null")?;
            submitter.register_files(&[null.as_raw_fd()])
        }
        Registration::Buffers => {
            // SAFETY: the buffer is held beside the ring (`KernelHeld`), and nothing submitted
            // names it before it is unregistered here.
            let registered = unsafe { Regions::register(&submitter, &[&memory.send[..]]) };
            registered.and_then(|_| submitter.unregister_buffers())
        }
        // SAFETY: the pool is held beside the ring (`KernelHeld`), whose teardown unregisters
        // it before it frees it; nothing submitted on the trial ring selects a buffer anyway.
        Registration::BufRing => unsafe { memory.pool.register(&submitter, 0) },
        Registration::RingFd => submitter.register_ring_fd().map(drop),
    }
}

/// Why the NIC rungs cannot run: ringside's network studies send only to 127.0.0.1 (the
/// network rule of this lab), and loopback sockets have no NAPI id and no hardware queue.
pub fn nic_traffic_reason() -> String {
    // With load hosts the route decides: a NIC opens the rung's need, not the rung itself.
    if let Some(route) = crate::system::network::traffic_route() {
        return match route.is_nic() {
            true => format!(
                "the route to --listen-on crosses {}, a NIC whose receive queue the rung needs, \
                 so the machine allows it; but ringside's server for it is not built yet",
                route.describe()
            ),
            false => format!(
                "needs traffic through a NIC's receive queue, and the route to --listen-on \
                 crosses {}, which has none",
                route.describe()
            ),
        };
    }
    let nics: Vec<String> = std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("device").exists())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let driver = std::fs::read_link(entry.path().join("device/driver"))
                .ok()
                .and_then(|link| link.file_name().map(|n| n.to_string_lossy().into_owned()));
            match driver {
                Some(driver) => format!("{name} ({driver})"),
                None => name,
            }
        })
        .collect();
    let found = if nics.is_empty() {
        "there is no NIC here".to_string()
    } else {
        format!(
            "the NICs here ({}) carry none of the studies' traffic",
            nics.join(", ")
        )
    };
    format!(
        "needs traffic through a NIC's receive queue, and ringside's network studies run on \
         loopback or a veth pair, which have no NAPI id and no hardware queue (ringside fakes \
         neither); {found}"
    )
}

/// The block devices with poll queues (`/sys/block/*/queue/io_poll` = 1), or why there are none.
pub fn polled_block_device() -> Result<Vec<String>, String> {
    let mut polled = Vec::new();
    let mut unpolled = Vec::new();
    for entry in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("loop") || name.starts_with("zram") || name.starts_with("ram") {
            continue;
        }
        match std::fs::read_to_string(entry.path().join("queue/io_poll")) {
            Ok(value) if value.trim() == "1" => polled.push(name),
            _ => unpolled.push(name),
        }
    }
    if polled.is_empty() {
        return Err(format!(
            "no block device here has poll queues (/sys/block/{{{}}}/queue/io_poll is 0; \
             virtio-blk needs its poll_queues module parameter, NVMe its poll_queues), so IOPOLL \
             has nothing to poll",
            unpolled.join(",")
        ));
    }
    Ok(polled)
}

/// Whether the block device under `file` has poll queues: IOPOLL needs that device's, not just
/// any device's (on a device without them, polled O_DIRECT reads complete with EOPNOTSUPP).
pub fn file_device_polled(file: BorrowedFd) -> Result<(), String> {
    let stat =
        rustix::fs::fstat(file).map_err(|error| format!("cannot stat the file ({error})"))?;
    let (major, minor) = (
        rustix::fs::major(stat.st_dev),
        rustix::fs::minor(stat.st_dev),
    );
    let device = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    // A partition has no queue of its own: its disk's is one level up.
    let polled = ["queue/io_poll", "../queue/io_poll"].iter().any(|queue| {
        std::fs::read_to_string(device.join(queue)).is_ok_and(|value| value.trim() == "1")
    });
    if polled {
        return Ok(());
    }
    Err(format!(
        "the file's block device ({major}:{minor}) has no poll queues ({}/queue/io_poll is not \
         1), so IOPOLL cannot complete its reads or writes; put --dir on a device that has them \
         ({})",
        device.display(),
        polled_block_device()
            .map(|devices| devices.join(", "))
            .unwrap_or_else(|_| "none here".to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::needs::{SetupFlags, ACCEPT_MULTI, FSYNC, RECV_MULTI, SEND, WRITE};

    #[test]
    fn a_reason_names_the_minimum_only_where_this_kernel_is_older() {
        let defer = Needs {
            opcodes: &[ACCEPT_MULTI, RECV_MULTI, SEND],
            setup: SetupFlags::DEFER_TASKRUN,
            registrations: &[Registration::BufRing],
            features: &[],
        };
        let reason = "this kernel lacks IORING_SETUP_COOP_TASKRUN (Linux 5.19)".to_string();
        assert_eq!(
            with_minimum(&defer, reason.clone(), Some((5, 10))),
            format!("{reason}; this engine needs Linux 6.1 in all, this is 5.10")
        );
        assert_eq!(with_minimum(&defer, reason.clone(), Some((6, 1))), reason);
        let plain = Needs::io_uring(&[WRITE, FSYNC]);
        assert_eq!(with_minimum(&plain, reason.clone(), Some((5, 10))), reason);
    }
}
