//! Setting up io_uring rings, and saying in operator terms why the kernel refused one.
//!
//! Every io_uring engine builds its ring here, so the answer to "why is this engine
//! unavailable?" is written once: the `kernel.io_uring_disabled` sysctl, a seccomp filter
//! (EPERM/ENOSYS, as in containers), a locked-memory limit, or a setup flag this kernel lacks.
//! `RINGSIDE_FORCE_NO_URING=1` makes every ring refuse, so the fallback paths can be tested on
//! a kernel that has io_uring.
//!
//! It also sets the kernel threads that work for a ring (`Helpers`) on purpose. The kernel sizes
//! a thread's pool of io-wq workers from the *first* ring that thread creates (at most
//! min(entries, 4 x CPUs)) and gives the workers and the SQPOLL thread the creating thread's CPU
//! affinity. Left alone, a 2-entry trial ring made the page cycle's fsyncs run on 2 workers, one
//! device flush each, 2.3x slower than seed 000's demo (FINDINGS); a pinned engine's poller
//! starved its own workers. So every measured ring sets its worker limits and CPUs explicitly,
//! and trial rings are made on a thread of their own (`on_trial_thread`).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use io_uring::{IoUring, Submitter};

use super::refusal;
use crate::engines::needs::SetupFlags;
use crate::row::params::{Param, Params};
use crate::system::pin;
use crate::system::tuning::calling_thread_is_realtime;

/// Environment variable that makes ringside behave as on a kernel without io_uring.
pub const FORCE_NO_URING: &str = "RINGSIDE_FORCE_NO_URING";

/// How a ring is set up: its size and the `IORING_SETUP_*` flags an engine asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingSetup {
    pub entries: u32,
    /// Completion queue size when it must exceed twice `entries` (many CQEs per SQE).
    pub cq_entries: Option<u32>,
    /// SQPOLL with this idle time in milliseconds before the kernel thread sleeps (its CPU is
    /// `helpers.sqpoll_cpu`).
    pub sqpoll_idle_ms: Option<u32>,
    pub single_issuer: bool,
    pub defer_taskrun: bool,
    pub coop_taskrun: bool,
    pub no_sqarray: bool,
    pub iopoll: bool,
    /// The io-wq limits and CPUs to set once the ring exists; None for trial rings.
    pub helpers: Option<Helpers>,
    /// IORING_SETUP_ATTACH_WQ to this ring: an SQPOLL ring then shares that ring's poller.
    pub attach_wq: Option<RawFd>,
}

/// Default bounded io-wq workers per online CPU (see `Helpers::defaults`).
pub const WORKERS_PER_CPU: u32 = 16;

/// The kernel threads that work for a measured ring: io-wq workers (`iou-wrk-*`), which run
/// what cannot complete inline (buffered file writes, fsyncs), and the SQPOLL thread
/// (`iou-sqp-*`). Every ring-based engine sets these, and its rows record them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Helpers {
    /// Most io-wq workers for bounded work (regular files and block devices).
    pub iowq_bounded_max: u32,
    /// Most io-wq workers for unbounded work (sockets, pipes); 0 keeps the kernel's limit.
    pub iowq_unbounded_max: u32,
    /// CPUs the io-wq workers may run on, ascending.
    pub iowq_cpus: Vec<usize>,
    /// CPU of the SQPOLL thread (SQPOLL rings only); None leaves it to the scheduler.
    pub sqpoll_cpu: Option<usize>,
}

impl Helpers {
    /// What an engine gets unless told otherwise, the best fair chance for io_uring measured
    /// here: 16 bounded workers per online CPU, 4 times the most the kernel gives any ring by
    /// itself (the page cycle's fsyncs block in workers, and more of them in flight share more
    /// device flushes: 65536 pages took 1.17 s on 8 workers and 0.85-0.92 s on 16 to 64, at the
    /// same CPU, bench/peers.md), the kernel's unbounded limit, workers allowed on every online
    /// CPU (as for an unpinned process), and the SQPOLL thread on a CPU other than the engine's
    /// when the engine is pinned and another CPU exists (a spinning poller on the engine's own
    /// CPU takes the time the engine and its workers need).
    pub fn defaults(engine_cpu: Option<usize>) -> Helpers {
        let online = pin::cpus_online();
        let sqpoll_cpu = engine_cpu.and_then(|engine| {
            online
                .iter()
                .copied()
                .find(|&cpu| cpu > engine)
                .or_else(|| online.iter().copied().find(|&cpu| cpu != engine))
        });
        Helpers {
            iowq_bounded_max: WORKERS_PER_CPU * online.len().max(1) as u32,
            iowq_unbounded_max: 0,
            iowq_cpus: online,
            sqpoll_cpu,
        }
    }

    /// The defaults for a server pinned to `cpu`: its io-wq workers stay on that CPU (a study
    /// gives the server one core and its load generator the other; sockets rarely need them),
    /// and so does its SQPOLL thread unless the server runs `realtime`. On the other CPU the
    /// poller takes the load generator's time: uring-sqpoll echoed 57-75k msg/s at 50-256
    /// connections with its poller there and 190k with it on the server's CPU, both under
    /// SCHED_OTHER (bench/ladder.md). A real-time server would starve a poller sharing its
    /// CPU (`check_sqpoll_placement` refuses it), so it keeps the poller on another.
    pub fn for_server(cpu: usize, realtime: bool) -> Helpers {
        let defaults = Helpers::defaults(Some(cpu));
        Helpers {
            iowq_cpus: vec![cpu],
            sqpoll_cpu: if realtime {
                defaults.sqpoll_cpu
            } else {
                Some(cpu)
            },
            ..defaults
        }
    }

    /// Applies the worker limits and CPUs to `ring`'s io-wq (the SQPOLL thread's for an SQPOLL
    /// ring), then reads the limits back: the kernel clamps them to RLIMIT_NPROC.
    fn apply(&self, ring: &IoUring) -> Result<(), String> {
        let submitter = ring.submitter();
        let mut limits = [self.iowq_bounded_max, self.iowq_unbounded_max];
        submitter
            .register_iowq_max_workers(&mut limits)
            .map_err(|error| {
                format!(
                    "the kernel refused to set the io-wq worker limits ({error});                      IORING_REGISTER_IOWQ_MAX_WORKERS needs Linux 5.15"
                )
            })?;
        let applied = iowq_max_workers(ring)
            .map_err(|error| format!("cannot read the io-wq worker limits back ({error})"))?;
        if self.iowq_bounded_max > 0 && applied[0] != self.iowq_bounded_max {
            return Err(format!(
                "the kernel set {} io-wq workers where {} were asked for (RLIMIT_NPROC?); \
                 raise `ulimit -u` or ask for fewer with --iowq-workers",
                applied[0], self.iowq_bounded_max
            ));
        }
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // libc's CPU_SET indexes the set's words and panics past its size (it ignores nothing).
        let set_size = libc::CPU_SETSIZE as usize;
        if let Some(cpu) = self.iowq_cpus.iter().find(|&&cpu| cpu >= set_size) {
            return Err(format!(
                "io-wq CPU {cpu} is past the {set_size} CPUs a CPU set can name"
            ));
        }
        for &cpu in &self.iowq_cpus {
            // SAFETY: cpu < CPU_SETSIZE (checked above), inside the set, a valid local.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        submitter.register_iowq_aff(&set).map_err(|error| {
            format!(
                "the kernel refused io-wq CPUs {} ({error}); they must be online and allowed \
                 to this process's cpuset",
                format_cpus(&self.iowq_cpus)
            )
        })
    }

    /// Refuses an SQPOLL thread placed where it would starve the engine or its workers. Under a
    /// real-time class (`chrt -f`), a spinning poller is not preempted by threads of its own
    /// priority, which the engine and its workers are; so it may not hold every CPU either of
    /// them may use (FINDINGS: pinned to one CPU under SCHED_FIFO, uring-sqpoll wrote 3632
    /// pages in 75 s). Under the normal class the scheduler shares the CPU, and `sqpoll_note`
    /// says so in the row.
    fn check_sqpoll_placement(&self) -> Result<(), String> {
        match self.sqpoll_crowding() {
            Some(crowding) if calling_thread_is_realtime() => Err(format!(
                "{crowding} under a real-time class, where the spinning poller starves them; \
                 give it a CPU of its own with --sqpoll-cpu, or run under the normal class"
            )),
            _ => Ok(()),
        }
    }

    /// A sentence for the rows of an SQPOLL engine whose poller may hold the one CPU the engine
    /// thread (the calling thread) or its workers may use, so they take turns with it.
    pub fn sqpoll_note(&self) -> Option<String> {
        self.sqpoll_crowding()
            .map(|crowding| format!("{crowding}, taking turns with a spinning thread"))
    }

    fn sqpoll_crowding(&self) -> Option<String> {
        let engine = pin::current_cpus();
        let poller = match self.sqpoll_cpu {
            Some(cpu) => vec![cpu],
            None => engine.clone(),
        };
        // A set of two CPUs or more keeps one free of the poller; a single CPU may not.
        let held = |cpus: &[usize]| cpus.len() == 1 && poller.contains(&cpus[0]);
        (held(&engine) || held(&self.iowq_cpus)).then(|| {
            format!(
                "the SQPOLL thread may run on CPU {}, the one CPU of the engine (CPU {}) or of \
                 its io-wq workers (CPU {})",
                format_cpus(&poller),
                format_cpus(&engine),
                format_cpus(&self.iowq_cpus)
            )
        })
    }

    /// The settings as row parameters: what the engine asked the kernel for and got.
    pub fn params(&self, sqpoll: bool) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::Value;
        // `apply` checked that the kernel set the bounded limit asked for; an unbounded limit
        // left to the kernel is the process's RLIMIT_NPROC, as io-wq takes it.
        let unbounded = match self.iowq_unbounded_max {
            0 => rustix::process::getrlimit(rustix::process::Resource::Nproc)
                .current
                .unwrap_or(u64::MAX),
            asked => u64::from(asked),
        };
        let mut params = serde_json::Map::new();
        params.put(Param::IowqBoundedMax, Value::from(self.iowq_bounded_max));
        params.put(Param::IowqUnboundedMax, unbounded);
        params.put(Param::IowqCpus, Value::from(format_cpus(&self.iowq_cpus)));
        if sqpoll {
            let cpu = self
                .sqpoll_cpu
                .map_or_else(|| "any".to_string(), |cpu| cpu.to_string());
            params.put(Param::SqpollCpu, cpu);
        }
        params
    }

    /// The flags that ask a `ringside serve` child for these settings.
    pub fn serve_args(&self) -> Vec<String> {
        let mut args = vec![
            "--iowq-workers".to_string(),
            self.iowq_bounded_max.to_string(),
            "--iowq-cpus".to_string(),
            format_cpus(&self.iowq_cpus),
        ];
        if let Some(cpu) = self.sqpoll_cpu {
            args.extend(["--sqpoll-cpu".to_string(), cpu.to_string()]);
        }
        args
    }
}

/// The io-wq worker limits of `ring`'s pool now, [bounded, unbounded] (asking with zeros
/// changes nothing and returns the current limits).
pub fn iowq_max_workers(ring: &IoUring) -> io::Result<[u32; 2]> {
    let mut limits = [0, 0];
    ring.submitter().register_iowq_max_workers(&mut limits)?;
    Ok(limits)
}

/// A CPU list in the kernel's notation: `0-3,6`.
pub fn format_cpus(cpus: &[usize]) -> String {
    let mut ranges: Vec<String> = Vec::new();
    let mut index = 0;
    while index < cpus.len() {
        let first = cpus[index];
        let mut last = first;
        while index + 1 < cpus.len() && cpus[index + 1] == last + 1 {
            index += 1;
            last = cpus[index];
        }
        ranges.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        index += 1;
    }
    ranges.join(",")
}

/// Runs `trial` on a thread of its own and returns its result. A ring made there gives that
/// short-lived thread, not the measuring one, its io-wq pool (see the module doc).
pub fn on_trial_thread<T: Send>(trial: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(trial)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The kernel threads of one server loop's ring: its helpers, and the SQPOLL thread the loops'
/// rings share (`serve --share-sqpoll`; None: one each).
#[derive(Clone, Copy)]
pub struct ServerHelpers<'a> {
    pub helpers: &'a Helpers,
    pub sqpoll_share: Option<&'a SqpollShare>,
}

/// One SQPOLL thread shared by the rings of a server's loops: the first loop's ring makes the
/// poller, the later ones attach to it with IORING_SETUP_ATTACH_WQ. Since Linux 5.12 that is
/// all ATTACH_WQ shares (io_uring/sqpoll.c, `io_attach_sq_data`): each thread has its own
/// io-wq pool whatever its rings ask (io_uring/tctx.c, `io_init_wq_offload`).
pub struct SqpollShare {
    attach: Mutex<Attach>,
    changed: Condvar,
    /// The loops that attach to the first one's ring.
    later_rings: usize,
}

/// Where the shared poller is: not made yet, made by the first ring (whose fd the later rings
/// attach to, `settled` of them done trying), or never (the first ring failed).
#[derive(Clone, Copy)]
enum Attach {
    Waiting,
    Made { ring_fd: RawFd, settled: usize },
    Failed,
}

/// How often a loop waiting for the others looks at the stop flag (a loop that failed before
/// its ring stops the server).
const SHARE_WAIT_SLICE: Duration = Duration::from_millis(50);

impl SqpollShare {
    /// The share of a server with `rings` loops.
    pub fn new(rings: usize) -> SqpollShare {
        assert!(rings > 1);
        SqpollShare {
            attach: Mutex::new(Attach::Waiting),
            changed: Condvar::new(),
            later_rings: rings - 1,
        }
    }

    /// Builds the ring of `setup` as the first ring (`first`) or attached to it. The first
    /// returns once every later ring has tried, so the fd they attach to is still its own.
    pub fn build(&self, setup: &RingSetup, first: bool) -> Result<IoUring, String> {
        assert!(setup.sqpoll_idle_ms.is_some() && setup.attach_wq.is_none());
        let mut attach = self.attach.lock().unwrap_or_else(|e| e.into_inner());
        if first {
            drop(attach);
            let built = setup.build();
            let mut attach = self.attach.lock().unwrap_or_else(|e| e.into_inner());
            *attach = match &built {
                Ok(ring) => Attach::Made {
                    ring_fd: ring.as_raw_fd(),
                    settled: 0,
                },
                Err(_) => Attach::Failed,
            };
            self.changed.notify_all();
            while matches!(*attach, Attach::Made { settled, .. } if settled < self.later_rings) {
                if crate::system::stop::stopped() {
                    return Err("the server stopped before its rings shared a poller".into());
                }
                attach = self.wait(attach);
            }
            return built;
        }
        loop {
            match *attach {
                Attach::Waiting if crate::system::stop::stopped() => {
                    return Err("the server stopped before its first ring was made".into());
                }
                Attach::Waiting => attach = self.wait(attach),
                Attach::Failed => {
                    return Err(
                        "the first loop's SQPOLL ring, which this one shares, failed".into(),
                    )
                }
                Attach::Made { ring_fd, settled } => {
                    let built = RingSetup {
                        attach_wq: Some(ring_fd),
                        ..setup.clone()
                    }
                    .build();
                    *attach = Attach::Made {
                        ring_fd,
                        settled: settled + 1,
                    };
                    self.changed.notify_all();
                    return built;
                }
            }
        }
    }

    fn wait<'a>(
        &self,
        attach: std::sync::MutexGuard<'a, Attach>,
    ) -> std::sync::MutexGuard<'a, Attach> {
        let waited = self.changed.wait_timeout(attach, SHARE_WAIT_SLICE);
        waited.unwrap_or_else(|e| e.into_inner()).0
    }
}

/// SQPOLL thread idle time before it sleeps and needs a wakeup syscall.
pub const SQPOLL_IDLE_MS: u32 = 100;

impl RingSetup {
    pub fn with_entries(entries: u32) -> RingSetup {
        RingSetup {
            entries,
            ..RingSetup::default()
        }
    }

    /// A ring of `entries` with the setup flags an engine of the table needs.
    pub fn with_flags(entries: u32, flags: SetupFlags) -> RingSetup {
        RingSetup {
            sqpoll_idle_ms: flags.sqpoll.then_some(SQPOLL_IDLE_MS),
            single_issuer: flags.defer_taskrun,
            defer_taskrun: flags.defer_taskrun,
            coop_taskrun: flags.defer_taskrun,
            no_sqarray: flags.no_sqarray,
            iopoll: flags.iopoll,
            ..RingSetup::with_entries(entries)
        }
    }

    /// The small ring an availability check makes with `flags` (no helpers: it is not
    /// measured, and is made on a thread of its own).
    pub fn trial(flags: SetupFlags) -> RingSetup {
        RingSetup::with_flags(8, flags)
    }

    /// Builds the ring, or explains why the kernel refused it.
    pub fn build(&self) -> Result<IoUring, String> {
        usable()?;
        if let (Some(_), Some(helpers)) = (self.sqpoll_idle_ms, &self.helpers) {
            helpers.check_sqpoll_placement()?;
        }
        let ring = self
            .build_plain()
            .map_err(|error| explain_setup_error(&error, self))?;
        if let Some(helpers) = &self.helpers {
            helpers.apply(&ring)?;
        }
        Ok(ring)
    }

    /// io_uring_setup with these flags, nothing checked before, explained or applied after.
    pub fn build_plain(&self) -> io::Result<IoUring> {
        let mut builder = IoUring::builder();
        if let Some(cq_entries) = self.cq_entries {
            builder.setup_cqsize(cq_entries);
        }
        if let Some(idle_ms) = self.sqpoll_idle_ms {
            builder.setup_sqpoll(idle_ms);
            if let Some(cpu) = self.helpers.as_ref().and_then(|helpers| helpers.sqpoll_cpu) {
                builder.setup_sqpoll_cpu(cpu as u32);
            }
        }
        if let Some(fd) = self.attach_wq {
            builder.setup_attach_wq(fd);
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
        if self.no_sqarray {
            builder.setup_no_sqarray();
        }
        if self.iopoll {
            builder.setup_iopoll();
        }
        builder.build(self.entries)
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
            on_trial_thread(|| {
                IoUring::new(2)
                    .map(drop)
                    .map_err(|error| explain_setup_error(&error, &RingSetup::with_entries(2)))
            })
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

/// Whether this process runs under a seccomp filter (`Seccomp: 2` in /proc/self/status).
fn under_seccomp_filter() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.split_whitespace().eq(["Seccomp:", "2"]))
    })
}

/// Turns an io_uring_setup error into one sentence saying what happened and what to do.
pub fn explain_setup_error(error: &io::Error, setup: &RingSetup) -> String {
    let sysctl = io_uring_disabled_sysctl();
    match error.raw_os_error() {
        Some(libc::EPERM | libc::ENOSYS) if sysctl != Some(2) && under_seccomp_filter() => {
            format!(
                "io_uring_setup was refused ({error}) by the seccomp filter this process runs \
                 under (Seccomp: 2 in /proc/self/status; a container runtime or systemd \
                 SystemCallFilter installs one): run outside it or allow \
                 io_uring_setup/io_uring_enter/io_uring_register"
            )
        }
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
        Some(libc::EINVAL) => refusal::reason(&refusal::trials(setup), error, setup.entries),
        _ => format!("io_uring_setup failed: {error}"),
    }
}

/// Waits until at least `want` completions are ready, treating EINTR as "try again" and EBUSY
/// (completion queue overflow backlog) as "reap first": the caller reaps and calls again.
/// Retrying on EINTR does not hold Ctrl-C: the file engines wait only for reads and writes they
/// issued, which the kernel cannot cancel and whose buffers must outlive them, so a stop has to
/// wait for them anyway; the engine looks at the stop flag between blocks and issues no more.
pub fn submit_and_wait(submitter: &Submitter<'_>, want: usize) -> io::Result<usize> {
    loop {
        match submitter.submit_and_wait(want) {
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

    #[test]
    fn cpu_lists_read_like_the_kernels() {
        assert_eq!(format_cpus(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpus(&[1]), "1");
        assert_eq!(format_cpus(&[0, 2, 4, 5]), "0,2,4-5");
        assert_eq!(format_cpus(&[]), "");
    }

    #[test]
    fn the_sqpoll_thread_leaves_the_engines_cpu() {
        let online = pin::cpus_online();
        let helpers = Helpers::defaults(online.first().copied());
        assert_eq!(helpers.iowq_cpus, online);
        assert_eq!(
            helpers.iowq_bounded_max,
            WORKERS_PER_CPU * online.len() as u32
        );
        if online.len() > 1 {
            assert_ne!(helpers.sqpoll_cpu, online.first().copied());
        }
        assert_eq!(Helpers::defaults(None).sqpoll_cpu, None);
    }

    #[test]
    fn a_measured_ring_gets_the_workers_it_asked_for() {
        if usable().is_err() {
            eprintln!("skipped: no io_uring here");
            return;
        }
        on_trial_thread(|| {
            // The trap: a tiny first ring caps this thread's pool at 2 workers.
            let _tiny = IoUring::new(2).unwrap();
            let helpers = Helpers {
                iowq_bounded_max: 6,
                ..Helpers::defaults(None)
            };
            let setup = RingSetup {
                helpers: Some(helpers),
                ..RingSetup::with_entries(8)
            };
            let ring = setup.build().unwrap();
            assert_eq!(iowq_max_workers(&ring).unwrap()[0], 6);
        });
    }
}
