//! What the kernel says a measured section cost: syscalls counted by the kernel itself (a
//! perf counter on the `raw_syscalls:sys_enter` tracepoint), CPU time and context switches of
//! the whole process from getrusage (so io_uring's io-wq workers and SQPOLL thread, which are
//! threads of this process, are counted too), and wall time.
//!
//! The seeds quote lines like "196608 syscalls" vs "386 syscalls"; ringside prints the same
//! kind of line, but with the number the kernel counted, not one the program believes.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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
        let id = sys_enter_tracepoint_id()?;
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
            let error = io::Error::last_os_error();
            return Err(format!(
                "perf_event_open on raw_syscalls:sys_enter failed ({error}); run as root or lower \
                 /proc/sys/kernel/perf_event_paranoid"
            ));
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

/// CPU time and context switches of the whole process (all threads, io_uring workers included).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub ctx_switches_voluntary: u64,
    pub ctx_switches_involuntary: u64,
}

impl Usage {
    pub fn of_process() -> Usage {
        Self::read(libc::RUSAGE_SELF)
    }

    /// Usage of the calling thread alone (a load generator thread measuring its own saturation).
    pub fn of_thread() -> Usage {
        Self::read(libc::RUSAGE_THREAD)
    }

    fn read(who: libc::c_int) -> Usage {
        // SAFETY: getrusage fills the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        let seconds = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        Usage {
            cpu_user_s: seconds(usage.ru_utime),
            cpu_sys_s: seconds(usage.ru_stime),
            ctx_switches_voluntary: usage.ru_nvcsw as u64,
            ctx_switches_involuntary: usage.ru_nivcsw as u64,
        }
    }

    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu_user_s: (self.cpu_user_s - earlier.cpu_user_s).max(0.0),
            cpu_sys_s: (self.cpu_sys_s - earlier.cpu_sys_s).max(0.0),
            // Saturating: summed over living threads (`of_pid`), a count can shrink when a
            // thread exits.
            ctx_switches_voluntary: self
                .ctx_switches_voluntary
                .saturating_sub(earlier.ctx_switches_voluntary),
            ctx_switches_involuntary: self
                .ctx_switches_involuntary
                .saturating_sub(earlier.ctx_switches_involuntary),
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
        let counters = task_ids(pid)
            .map_err(|error| format!("cannot list the threads of process {pid}: {error}"))?
            .into_iter()
            .map(SyscallCounter::open_for)
            .collect::<Result<Vec<_>, _>>()?;
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

impl Usage {
    /// CPU time of every thread of process `pid`, living or exited (`/proc/PID/stat`, in clock
    /// ticks, so 10 ms resolution at the usual 100 Hz), and the context switches of its living
    /// threads (`/proc/PID/task/*/status`).
    pub fn of_pid(pid: i32) -> io::Result<Usage> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // Fields after the command name, which is in parentheses and may contain spaces.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or_else(|| io::Error::other("malformed /proc/PID/stat"))?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat(5); field 3 is the first after the name.
        let ticks = |index: usize| -> io::Result<f64> {
            fields
                .get(index - 3)
                .and_then(|text| text.parse::<u64>().ok())
                .map(|ticks| ticks as f64 / clock_ticks_per_sec())
                .ok_or_else(|| io::Error::other("malformed /proc/PID/stat"))
        };
        let mut usage = Usage {
            cpu_user_s: ticks(14)?,
            cpu_sys_s: ticks(15)?,
            ..Usage::default()
        };
        for tid in task_ids(pid)? {
            let Ok(status) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")) else {
                continue; // The thread exited meanwhile.
            };
            for line in status.lines() {
                let value = |prefix: &str| {
                    line.strip_prefix(prefix)
                        .and_then(|rest| rest.trim().parse::<u64>().ok())
                };
                if let Some(count) = value("voluntary_ctxt_switches:") {
                    usage.ctx_switches_voluntary += count;
                } else if let Some(count) = value("nonvoluntary_ctxt_switches:") {
                    usage.ctx_switches_involuntary += count;
                }
            }
        }
        Ok(usage)
    }
}

fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// Measures another process (a server) over a section, from outside: kernel-counted syscalls of
/// all its threads and its CPU time and context switches from /proc.
pub struct ProcessMeter {
    pid: i32,
    counter: Option<ProcessSyscallCounter>,
    started: Option<(Instant, Usage, Option<ThreadTimes>)>,
}

impl ProcessMeter {
    pub fn new(pid: i32) -> ProcessMeter {
        ProcessMeter {
            pid,
            counter: None,
            started: None,
        }
    }

    /// Starts the section. The syscall counters open here, so they cover the threads the
    /// process has now and every thread they start later.
    pub fn start(&mut self) -> io::Result<()> {
        assert!(self.started.is_none(), "process meter started twice");
        let counting = std::env::var_os("RINGSIDE_NO_PERF").is_none();
        self.counter = counting
            .then(|| ProcessSyscallCounter::open(self.pid).ok())
            .flatten();
        let threads = ThreadTimes::of_pid(self.pid).ok();
        let usage = Usage::of_pid(self.pid)?;
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some((Instant::now(), usage, threads));
        Ok(())
    }

    pub fn stop(&mut self) -> io::Result<Measured> {
        let syscalls_kernel = self.counter.as_mut().map(ProcessSyscallCounter::stop);
        let (started, before, threads_before) = self
            .started
            .take()
            .expect("process meter stopped before start");
        let elapsed = started.elapsed();
        let usage = Usage::of_pid(self.pid)?.since(&before);
        let threads = ThreadTimes::of_pid(self.pid).ok();
        Ok(Measured {
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(threads_before)
                .map(|(now, before)| now.helpers_since(&before)),
            device: None,
        })
    }
}

/// What io_uring's kernel threads of a process did over a section, told apart by the names
/// the kernel gives them: io-wq workers (`iou-wrk-PID`), which run what a ring cannot finish
/// inline, and SQPOLL threads (`iou-sqp-PID`). A worker counts if it ran during the section.
/// Their CPU time is also inside the process's `cpu_*` figures; this says how much of it was
/// theirs. A worker that exited before the section ended is missed here (not there): workers
/// outlive 5 s of idleness, longer than the gaps inside one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HelperThreads {
    pub iowq_workers: u32,
    pub iowq_cpu_s: f64,
    pub sqpoll_threads: u32,
    pub sqpoll_cpu_s: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadRole {
    Own,
    IowqWorker,
    Sqpoll,
}

/// The CPU time of every living thread of a process, in ns, with its role.
#[derive(Clone, Debug)]
struct ThreadTimes {
    threads: Vec<(i32, ThreadRole, u64)>,
}

impl ThreadTimes {
    fn of_pid(pid: i32) -> io::Result<ThreadTimes> {
        let mut threads = Vec::new();
        for tid in task_ids(pid)? {
            let dir = format!("/proc/{pid}/task/{tid}");
            // The thread may exit between the listing and the reads.
            let Ok(comm) = fs::read_to_string(format!("{dir}/comm")) else {
                continue;
            };
            let role = if comm.starts_with("iou-wrk-") {
                ThreadRole::IowqWorker
            } else if comm.starts_with("iou-sqp-") {
                ThreadRole::Sqpoll
            } else {
                ThreadRole::Own
            };
            if let Some(runtime_ns) = thread_runtime_ns(&dir) {
                threads.push((tid, role, runtime_ns));
            }
        }
        Ok(ThreadTimes { threads })
    }

    fn helpers_since(&self, earlier: &ThreadTimes) -> HelperThreads {
        let mut helpers = HelperThreads::default();
        for &(tid, role, runtime_ns) in &self.threads {
            let before = earlier
                .threads
                .iter()
                .find(|(earlier_tid, ..)| *earlier_tid == tid)
                .map_or(0, |&(.., ns)| ns);
            let ran_ns = runtime_ns.saturating_sub(before);
            if ran_ns == 0 {
                continue;
            }
            let seconds = ran_ns as f64 / 1e9;
            match role {
                ThreadRole::Own => {}
                ThreadRole::IowqWorker => {
                    helpers.iowq_workers += 1;
                    helpers.iowq_cpu_s += seconds;
                }
                ThreadRole::Sqpoll => {
                    helpers.sqpoll_threads += 1;
                    helpers.sqpoll_cpu_s += seconds;
                }
            }
        }
        helpers
    }
}

/// A thread's time on CPU in ns: `schedstat`'s first field (exact), else `stat`'s utime and
/// stime (clock ticks).
fn thread_runtime_ns(dir: &str) -> Option<u64> {
    if let Ok(text) = fs::read_to_string(format!("{dir}/schedstat")) {
        if let Some(ns) = text.split_whitespace().next().and_then(|f| f.parse().ok()) {
            return Some(ns);
        }
    }
    let stat = fs::read_to_string(format!("{dir}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((ticks as f64 / clock_ticks_per_sec() * 1e9) as u64)
}

/// The block device a file lives on, whose counters (`/sys/dev/block/MAJ:MIN/stat`) say how
/// many writes and cache flushes reached the device: concurrent fsyncs may share one flush,
/// which is where io_uring's page-cycle win comes from (FINDINGS).
#[derive(Clone, Debug)]
pub struct BlockDevice {
    stat_path: std::path::PathBuf,
}

/// Requests a block device completed over a section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceIo {
    pub writes: u64,
    pub flushes: u64,
}

impl BlockDevice {
    /// The device under `file`, or None when it is not on a block device (tmpfs, overlay).
    pub fn of_file(file: &fs::File) -> Option<BlockDevice> {
        let stat = rustix::fs::fstat(file).ok()?;
        let (major, minor) = (
            rustix::fs::major(stat.st_dev),
            rustix::fs::minor(stat.st_dev),
        );
        let stat_path = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
        let device = BlockDevice { stat_path };
        device.read().map(|_| device)
    }

    fn read(&self) -> Option<DeviceIo> {
        let text = fs::read_to_string(&self.stat_path).ok()?;
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        // Documentation/block/stat.rst: field 5 is write I/Os, field 16 flush I/Os (4.19+).
        Some(DeviceIo {
            writes: *fields.get(4)?,
            flushes: *fields.get(15)?,
        })
    }
}

impl DeviceIo {
    fn since(&self, earlier: &DeviceIo) -> DeviceIo {
        DeviceIo {
            writes: self.writes.saturating_sub(earlier.writes),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }
}

/// Time one CPU spent serving softirqs (the kernel's TCP receive work runs there) and stolen by
/// the hypervisor, from `/proc/stat`. Without CONFIG_IRQ_TIME_ACCOUNTING (as on this VM) the
/// softirq figure is sampled by the tick, so it is a share, not an exact time; steal says how
/// much of the window another guest had the core.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoreTimes {
    pub softirq_s: f64,
    pub steal_s: f64,
}

impl CoreTimes {
    pub fn read(cpu: usize) -> io::Result<CoreTimes> {
        let stat = fs::read_to_string("/proc/stat")?;
        let prefix = format!("cpu{cpu} ");
        let line = stat
            .lines()
            .find(|line| line.starts_with(&prefix))
            .ok_or_else(|| io::Error::other(format!("/proc/stat has no line for CPU {cpu}")))?;
        // user nice system idle iowait irq softirq steal ..., in USER_HZ ticks.
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        let seconds =
            |index: usize| fields.get(index).copied().unwrap_or(0) as f64 / clock_ticks_per_sec();
        Ok(CoreTimes {
            softirq_s: seconds(6),
            steal_s: seconds(7),
        })
    }

    pub fn since(&self, earlier: &CoreTimes) -> CoreTimes {
        CoreTimes {
            softirq_s: (self.softirq_s - earlier.softirq_s).max(0.0),
            steal_s: (self.steal_s - earlier.steal_s).max(0.0),
        }
    }
}

/// Measures one section: wall time, kernel-counted syscalls (when the kernel allows it) and
/// process usage. Open the meter before setting up, `start` right before the work, `stop` right
/// after it.
pub struct Meter {
    counter: Option<SyscallCounter>,
    started: Option<Started>,
    device: Option<BlockDevice>,
}

/// The readings a section starts from.
struct Started {
    at: Instant,
    usage: Usage,
    threads: Option<ThreadTimes>,
    device: Option<DeviceIo>,
}

/// What a measured section cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    pub elapsed: Duration,
    /// `None` when the kernel refused the counter; the engine's own count is used then.
    pub syscalls_kernel: Option<u64>,
    pub usage: Usage,
    /// What io_uring's kernel threads of the process did (None where /proc could not tell).
    pub helpers: Option<HelperThreads>,
    /// The block device under the measured file (file workloads on a block device only).
    pub device: Option<DeviceIo>,
}

impl Meter {
    pub fn new() -> Meter {
        Meter {
            counter: SyscallCounter::open().ok(),
            started: None,
            device: None,
        }
    }

    /// A meter that does not count syscalls (what `RINGSIDE_NO_PERF` or a refused counter gives).
    pub fn without_syscall_counter() -> Meter {
        Meter {
            counter: None,
            started: None,
            device: None,
        }
    }

    /// Also reads the I/O counters of the block device under the measured file.
    pub fn with_device(mut self, device: Option<BlockDevice>) -> Meter {
        self.device = device;
        self
    }

    pub fn counts_syscalls(&self) -> bool {
        self.counter.is_some()
    }

    pub fn start(&mut self) {
        assert!(self.started.is_none(), "meter started twice");
        let threads = ThreadTimes::of_pid(std::process::id() as i32).ok();
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let usage = Usage::of_process();
        let at = Instant::now();
        if let Some(counter) = self.counter.as_mut() {
            counter.start();
        }
        self.started = Some(Started {
            at,
            usage,
            threads,
            device,
        });
    }

    pub fn stop(&mut self) -> Measured {
        let syscalls_kernel = self.counter.as_mut().map(SyscallCounter::stop);
        let started = self.started.take().expect("meter stopped before start");
        let elapsed = started.at.elapsed();
        let usage = Usage::of_process().since(&started.usage);
        let device = self.device.as_ref().and_then(BlockDevice::read);
        let threads = ThreadTimes::of_pid(std::process::id() as i32).ok();
        Measured {
            elapsed,
            syscalls_kernel,
            usage,
            helpers: threads
                .zip(started.threads)
                .map(|(now, before)| now.helpers_since(&before)),
            device: device
                .zip(started.device)
                .map(|(now, before)| now.since(&before)),
        }
    }
}

impl Default for Meter {
    fn default() -> Self {
        Meter::new()
    }
}

/// A meter for a run: the kernel counter unless `RINGSIDE_NO_PERF` asks for the engines' own
/// counts (which is how the fallback path is tested on a machine where the counter works).
pub fn meter_for_run() -> Meter {
    if std::env::var_os("RINGSIDE_NO_PERF").is_some() {
        Meter::without_syscall_counter()
    } else {
        Meter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_moves_forward_with_work() {
        let before = Usage::of_process();
        let mut spin = 0u64;
        let until = Instant::now() + Duration::from_millis(30);
        while Instant::now() < until {
            spin = spin.wrapping_add(1);
        }
        let used = Usage::of_process().since(&before);
        assert!(spin > 0);
        assert!(used.cpu_user_s + used.cpu_sys_s > 0.0);
    }

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

    #[test]
    fn another_process_is_counted_from_outside() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Wait until it is past its startup and inside clock_nanosleep (230 on x86-64).
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            let syscall = fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
            if syscall.starts_with("230 ") {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let usage = Usage::of_pid(pid).expect("a living child has /proc entries");
        assert!(usage.cpu_user_s >= 0.0 && usage.ctx_switches_voluntary < 1000);
        if let Ok(mut counter) = ProcessSyscallCounter::open(pid) {
            // Let the child finish exec and start-up (loader syscalls) and fall asleep first.
            std::thread::sleep(Duration::from_millis(300));
            counter.start();
            std::thread::sleep(Duration::from_millis(50));
            // A sleeping process makes no syscalls while it sleeps.
            assert!(counter.stop() <= 2);
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
