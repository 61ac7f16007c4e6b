//! What io_uring offers here: whether a ring can be made at all (and why not), the
//! `IORING_FEAT_*` bits, the opcodes ringside's engines use, the setup flags the kernel accepts,
//! and whether a provided-buffer ring registers. Each engine's availability follows from these,
//! so a skipped engine can be traced to one line of this report.

use std::os::fd::AsRawFd;

use io_uring::{IoUring, Probe};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::engines::uring::ring::{self, RingSetup};

#[derive(Clone, Debug, Serialize)]
pub struct UringProbe {
    pub usable: bool,
    /// Why no ring can be made (sysctl, seccomp, memlock, forced off), in operator terms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `/proc/sys/kernel/io_uring_disabled`: 0 allowed, 1 only kernel.io_uring_group, 2 off.
    pub io_uring_disabled_sysctl: Option<u32>,
    /// `IORING_FEAT_*` name -> set, as the io-uring crate exposes them.
    pub features: Map<String, Value>,
    /// The opcodes ringside's engines submit (the engine table's, each once) -> supported (from
    /// `IORING_REGISTER_PROBE`).
    pub opcodes: Map<String, Value>,
    pub opcodes_note: &'static str,
    pub opcodes_supported_count: u32,
    /// Opcodes this kernel knows (`ops_len` of the probe), supported or not.
    pub opcodes_kernel_count: u32,
    /// `IORING_SETUP_*` flag -> accepted by a tiny test ring.
    pub setup_flags: Map<String, Value>,
    /// Registering a provided-buffer ring (`IORING_REGISTER_PBUF_RING`, kernel >= 5.19).
    pub buf_ring: Accepted,
}

/// Whether the kernel accepted a request, with its refusal when it did not.
#[derive(Clone, Debug, Serialize)]
pub struct Accepted {
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Accepted {
    fn from_result<T>(result: Result<T, String>) -> Accepted {
        Accepted {
            accepted: result.is_ok(),
            error: result.err(),
        }
    }
}

impl UringProbe {
    /// Reads what io_uring offers, with its trial rings on a thread of their own (so they do not
    /// size the calling thread's io-wq pool).
    pub fn read() -> UringProbe {
        ring::on_trial_thread(UringProbe::read_here)
    }

    fn read_here() -> UringProbe {
        let ring = RingSetup::with_entries(2).build();
        let mut probe = UringProbe {
            usable: ring.is_ok(),
            reason: ring.as_ref().err().cloned(),
            io_uring_disabled_sysctl: ring::io_uring_disabled_sysctl(),
            features: Map::new(),
            opcodes: Map::new(),
            opcodes_note: MULTISHOT_NOTE,
            opcodes_supported_count: 0,
            opcodes_kernel_count: 0,
            setup_flags: setup_flags(),
            buf_ring: Accepted::from_result(ring.as_ref().map_err(Clone::clone)),
        };
        if let Ok(ring) = ring {
            probe.features = features(&ring);
            probe.fill_opcodes(&ring);
            probe.buf_ring = Accepted::from_result(try_buf_ring(&ring));
        }
        probe
    }

    fn fill_opcodes(&mut self, ring: &IoUring) {
        let mut kernel = Probe::new();
        if ring.submitter().register_probe(&mut kernel).is_err() {
            return;
        }
        let version = crate::system::kernel::running_kernel_version().unwrap_or((0, 0));
        for opcode in crate::engines::opcodes_used() {
            let supported = crate::engines::uring::trial::supported(&opcode, &kernel, version);
            self.opcodes
                .insert(opcode.name.to_string(), Value::from(supported));
        }
        self.opcodes_supported_count =
            (0..=u8::MAX).filter(|&c| kernel.is_supported(c)).count() as u32;
        self.opcodes_kernel_count = kernel_opcode_count(ring).unwrap_or(0);
    }
}

/// Kernels before 5.19 and 6.0 run Accept/Recv but reject their multishot flag.
const MULTISHOT_NOTE: &str = "AcceptMulti/RecvMulti share Accept/Recv's opcode (multishot \
                                  is a flag): they count as supported from kernel 5.19 / 6.0";

fn features(ring: &IoUring) -> Map<String, Value> {
    let params = ring.params();
    let bits = [
        ("single_mmap", params.is_feature_single_mmap()),
        ("nodrop", params.is_feature_nodrop()),
        ("submit_stable", params.is_feature_submit_stable()),
        ("rw_cur_pos", params.is_feature_rw_cur_pos()),
        ("cur_personality", params.is_feature_cur_personality()),
        ("fast_poll", params.is_feature_fast_poll()),
        ("poll_32bits", params.is_feature_poll_32bits()),
        ("sqpoll_nonfixed", params.is_feature_sqpoll_nonfixed()),
        ("ext_arg", params.is_feature_ext_arg()),
        ("native_workers", params.is_feature_native_workers()),
        ("resource_tagging", params.is_feature_resource_tagging()),
        ("cqe_skip", params.is_feature_skip_cqe_on_success()),
        ("linked_file", params.is_feature_linked_file()),
        ("recvsend_bundle", params.is_feature_recvsend_bundle()),
        ("min_timeout", params.is_feature_min_timeout()),
        ("no_iowait", params.is_feature_no_iowait()),
    ];
    bits.into_iter()
        .map(|(name, set)| (name.to_string(), Value::from(set)))
        .collect()
}

/// Builds a two-entry ring with each flag the engines may ask for.
fn setup_flags() -> Map<String, Value> {
    let base = RingSetup::with_entries(2);
    let trials = [
        (
            "sqpoll",
            RingSetup {
                sqpoll_idle_ms: Some(10),
                ..base.clone()
            },
        ),
        (
            "single_issuer",
            RingSetup {
                single_issuer: true,
                ..base.clone()
            },
        ),
        // DEFER_TASKRUN is only valid together with SINGLE_ISSUER.
        (
            "defer_taskrun",
            RingSetup {
                single_issuer: true,
                defer_taskrun: true,
                ..base.clone()
            },
        ),
        (
            "coop_taskrun",
            RingSetup {
                coop_taskrun: true,
                ..base.clone()
            },
        ),
        (
            "no_sqarray",
            RingSetup {
                no_sqarray: true,
                ..base.clone()
            },
        ),
    ];
    trials
        .into_iter()
        .map(|(name, setup)| {
            let accepted = Accepted::from_result(setup.build().map(drop));
            let value = serde_json::to_value(accepted).expect("accepted serialises");
            (name.to_string(), value)
        })
        .collect()
}

/// The ring memory of a provided-buffer ring: entries of 16 bytes, page aligned as the kernel
/// requires.
#[repr(C, align(4096))]
struct BufRingPage([u8; 4096]);

fn try_buf_ring(ring: &IoUring) -> Result<(), String> {
    const ENTRIES: u16 = 8;
    const GROUP: u16 = 0;
    let page = Box::new(BufRingPage([0; 4096]));
    let submitter = ring.submitter();
    // SAFETY: the page outlives the registration: it is unregistered before the box drops.
    unsafe { submitter.register_buf_ring_with_flags(page.0.as_ptr() as u64, ENTRIES, GROUP, 0) }
        .map_err(|error| {
            format!("register_buf_ring refused ({error}); kernels before 5.19 lack it")
        })?;
    submitter
        .unregister_buf_ring(GROUP)
        .map_err(|error| format!("unregister_buf_ring failed: {error}"))
}

/// `struct io_uring_probe` (16-byte header, `ops_len` at byte 1) and room for every opcode's
/// 8-byte entry; the io-uring crate does not expose `ops_len`, the count the kernel knows.
#[repr(C, align(8))]
struct RawProbe([u8; 16 + 256 * 8]);

const IORING_REGISTER_PROBE: libc::c_long = 8;

fn kernel_opcode_count(ring: &IoUring) -> Option<u32> {
    let mut raw = RawProbe([0; 16 + 256 * 8]);
    // SAFETY: raw is a zeroed io_uring_probe followed by room for the 256 ops we pass as nr_args.
    let result = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            IORING_REGISTER_PROBE,
            raw.0.as_mut_ptr(),
            256,
        )
    };
    (result == 0).then_some(u32::from(raw.0[1]))
}
