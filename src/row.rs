//! The one result row every workload produces, and the document that carries rows.
//!
//! Field names are a contract read by scripts and later tools: units come last
//! (`latency_ns_p99`, `bytes_per_sec`), names are never renamed, only added.

pub mod merge;
pub mod params;

use params::{Param, Params};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::measure::SyscallSource;
use crate::measure::{clock_ticks_per_sec, Measured, PoolThreads, RingEvent};
use crate::stats::per_second;

/// Version of the JSON document layout; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// One measured run of one engine on one workload with one set of parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub workload: String,
    pub engine: String,
    /// The workload's parameters for this run (block size, depth, file state, ...).
    pub params: Map<String, Value>,
    /// 1-based run number; runs of different engines alternate (A B A B) within one study.
    pub run: u32,
    pub seconds: f64,
    pub ops: u64,
    pub bytes: u64,
    pub ops_per_sec: f64,
    pub bytes_per_sec: f64,
    pub syscalls: u64,
    /// `kernel` (counted by a perf tracepoint counter), `self` (the engine's own tally) or
    /// `none` (a server measured by nobody: `ringside load` without `--server-pid`).
    pub syscalls_source: SyscallSource,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub ctx_switches_voluntary: u64,
    pub ctx_switches_involuntary: u64,
    /// True only when the data was checked: file read back and compared, echo bytes compared,
    /// HTTP responses framed. An unverified run reports no result.
    pub verified: bool,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p50: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p90: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p99: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_p999: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_max: Option<u64>,
    /// Open-loop HTTP runs: latency from each request's actual send, beside `latency_ns_*`,
    /// which count from its due time (coordinated-omission-corrected, as wrk2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_p50: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_p90: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_p99: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_p999: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_max: Option<u64>,
    /// The whole distribution behind `latency_ns_*`, to re-analyse or merge later: an
    /// HdrHistogram in its V2 + deflate serialization, base64 (standard, padded); values in ns.
    /// See `crate::stats::histogram` to decode it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_histogram: Option<String>,
    /// The same for `latency_uncorrected_ns_*` (open loop only; a closed loop's would equal
    /// `latency_ns_histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_ns_histogram: Option<String>,
    /// Open loop: the arrival rate asked for (`ops_per_sec` is the one achieved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_sec_target: Option<f64>,
    /// Open loop: requests that fell due while their connection awaited the previous response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_late: Option<u64>,
    /// Open loop: the rate offered, messages or requests per second (equal to
    /// `ops_per_sec_target`; the equal-load sweep's name for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
    /// Open loop: sends in the window, and the share of them more than `load::LATE_BOUND` (1 ms)
    /// behind their due time: the open loop's saturation signal (`client_saturated` is set
    /// from it, not from CPU, in an open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_sends: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_late_share: Option<f64>,
    /// The server's CPU time over the window, all its threads (exited ones too), by the
    /// scheduler's clock (ns resolution); absent where that clock could not be read. `cpu_user_s`
    /// and `cpu_sys_s` split the same time at the timer tick's resolution (4–10 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    /// The server's CPU (`server_cpu_s`, else user + sys; all its threads) as a share of one
    /// CPU over the window, and per message or request in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_utilisation: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_op: Option<f64>,
    /// Streaming echo rows: MB (10^6 bytes) echoed and checked per second, and the server's
    /// CPU µs, syscalls and SQEs (with `--ring-events`) per MB echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_mb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_per_mb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqes_per_mb: Option<f64>,
    /// Why the run did not verify its data (the first reason; `notes` has each with "NOT
    /// VERIFIED:" before it); absent for a verified run, or one whose engine failed (`failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified_reason: Option<String>,
    /// The rounds after which the study looked at its comparisons when its rounds were not
    /// fixed (`--runs auto`: stop when decided), the last its budget; absent for a fixed count.
    /// Every look decides at the level that keeps the error over these looks at α
    /// (`stats::sequential::look_level`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<Vec<u32>>,
    /// The seed of the random order the engines ran in within each round (each round its own
    /// order, drawn from this seed and the round's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// The block of consecutive rounds the run belongs to (`BLOCK_ROUNDS` rounds each, from
    /// 1): what persists across rounds (a file study's file) is made afresh between blocks.
    /// Absent in documents from before blocks: `Row::block` derives it from `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    /// True for a run of an attribution round: measured with the costly instruments on (the
    /// io_uring tracepoints, `--ring-events`), after the timed rounds, for the causes only;
    /// its figures move with those instruments and are never compared. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<bool>,
    /// The share of the machine's CPU time (every CPU, user and system) over the window that
    /// went to processes other than the measured ones (for a server, its processes and the load
    /// generator): another job sharing the machine. Tick-sampled (10 ms), so a short window
    /// reads a few per cent either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_cpu_share: Option<f64>,
    /// HTTP responses by status code (`"200": n`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub status_counts: Map<String, Value>,
    /// Errors by kind (network: `connect`, `reset`, `write`, `timeout`, `mismatch`; HTTP rows
    /// always carry them, plus wrk's `read`, which counts the same as `reset`). `errors` is the
    /// sum of the kinds other than `read`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub error_counts: Map<String, Value>,
    /// HTTP rows: connections the load generator opened again in the window because the server
    /// closed them in order after an answer (HTTP/1.0, `Connection: close`) or while idle, as
    /// wrk does. A connection lost otherwise (reset, or closed mid-request) counts in
    /// `error_counts` instead, and the row is not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnects: Option<u64>,
    /// The load generator's own costs when the row's `syscalls`/`cpu_*` are a server's: its CPU,
    /// kernel-counted syscalls and context switches over the measured window (all its threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_user_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_sys_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_syscalls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ctx_switches_voluntary: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ctx_switches_involuntary: Option<u64>,
    /// True when a load generator thread was busy for ~90% or more of the measured window: the
    /// client, not the server, may have set the pace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_saturated: Option<bool>,
    /// Softirq and steal time of the server's and the client's cores over the window
    /// (`/proc/stat`; softirq is tick-sampled on kernels without IRQ time accounting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_core_softirq_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_core_steal_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_core_softirq_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_core_steal_s: Option<f64>,
    /// NET_RX softirqs the server's and the client's cores ran over the window
    /// (`/proc/softirqs`). On loopback the sending CPU runs the receive side of what it sent, so
    /// the server core's count is mostly the delivery of the server's own replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_core_net_rx_softirqs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_core_net_rx_softirqs: Option<u64>,
    /// io-wq workers (`iou-wrk-*` threads) that ran during the window, and their CPU seconds
    /// (part of `cpu_*`): where io_uring's punted work went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowq_workers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowq_cpu_s: Option<f64>,
    /// The `threads` file engine's pool: its threads, their CPU seconds and context switches
    /// (part of `cpu_*` and `ctx_switches_*`), each thread's own getrusage summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_threads: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_cpu_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_ctx_switches: Option<u64>,
    /// CPU seconds of the SQPOLL thread (`iou-sqp-*`) over the window (part of `cpu_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll_cpu_s: Option<f64>,
    /// Context switches (voluntary and involuntary) of the io-wq workers and of the SQPOLL
    /// thread over the window (part of `ctx_switches_*`; threads that exited within it missed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowq_ctx_switches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll_ctx_switches: Option<u64>,
    /// What io_uring did in the kernel over the window, counted on its tracepoints for every
    /// thread of the measured process (io-wq and SQPOLL threads included): SQEs the kernel took,
    /// CQEs it posted, requests it punted to io-wq workers, polls it armed for requests that
    /// could not complete at once, runs of task work and of DEFER_TASKRUN local work, CQEs that
    /// overflowed the completion queue, and short writes retried. Absent where not counted
    /// (`notes` says why); zero for an engine that made no ring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqes_submitted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqes_posted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowq_punts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls_armed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_work_runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_work_runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqe_overflows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_writes: Option<u64>,
    /// Write requests and cache flushes the block device under the file completed during the
    /// window (`/sys/dev/block/*/stat`; file workloads on a block device). Fewer flushes than
    /// fsyncs means concurrent fsyncs shared a flush. The counts are the whole device's: other
    /// writers on it during the window add to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_writes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_flushes: Option<u64>,
    /// A network run's server, by its own count over its whole life (warm-up included):
    /// accepts refused because it had no fd left (each paused its accepting), receives that
    /// found the provided-buffer pool empty, and waits after which the completion queue had
    /// overflowed (io_uring engines). Each was recovered from without losing a byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_refused_fd_limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provided_buffers_exhausted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cq_overflows: Option<u64>,
    /// The server's peak resident memory, and that peak less what it held before the engine
    /// started (its ring and pools count too), per connection of the run: what holding a
    /// connection costs each engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_peak_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_bytes_per_connection: Option<u64>,
    /// Peak resident memory of a server measured from outside (`VmHWM` of its processes at the
    /// window's end; a fresh server per run, so the peak is this run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_peak_bytes: Option<u64>,
    /// Why the run measured nothing: an engine or contender that did not start, was refused by
    /// the kernel, ran out of memory, died or erred during the run, or an engine asked for by
    /// name that cannot run here. Such a row is never `verified`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The event API a contender's processes held when its window opened, from their file
    /// descriptors: `io_uring` (a ring), `epoll` (an epoll instance) or `none`. The report
    /// compares a contender with ringside's raw engine of the same API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_api: Option<String>,
    /// Network rows: the measured window's edges on the wall clock, in seconds since the Unix
    /// epoch, so rows of loads on several hosts can be checked for overlap (`ringside merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_unix_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_end_unix_s: Option<f64>,
    /// Network rows of a study whose load ran on other hosts (`--load-host`, `--load-cmd`):
    /// each host's part of the run, in the order the hosts were given. The row's own figures
    /// are the hosts' merged (`ringside merge`: counts and rates added, histograms added), but
    /// its `client_cpu_*` are the busiest host's and `client_threads` each host's, so that the
    /// client's busy share is the busiest host's: a cell is server-bound only when no host
    /// saturated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_hosts: Vec<LoadHostPart>,
    /// The server's end of such a study: the interface that holds the address the servers
    /// listen on (`--listen-on`), e.g. `eth0 (virtio_net)` or `veth1 (virtual, no NIC)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_nic: Option<String>,
    /// Sentences that qualify this run (a capped run, a saturated client, a refused feature).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Rounds per block: the looks at 12, 16 and 24 rounds fall on block boundaries (3, 4, 6 blocks).
pub const BLOCK_ROUNDS: u32 = 4;

/// The block of round `run` (1-based): rounds 1–4 are block 1, 5–8 block 2, ….
pub fn block_of(run: u32) -> u32 {
    run.saturating_sub(1) / BLOCK_ROUNDS + 1
}

/// One load host's part of a network run (`Row::load_hosts`): the machine, as its own probe
/// saw it, and what its load measured over its window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadHostPart {
    /// As given: the ssh host, or the `--load-cmd` prefix.
    pub host: String,
    /// The host's probe line (`ringside probe`'s `machine`), its online CPUs and kernel.
    pub machine: String,
    pub cpus_online: u64,
    pub kernel_release: String,
    /// The interface its traffic to the servers left by, e.g. `eth0 (virtio_net)`.
    pub nic: String,
    /// Its wall clock less this machine's, from the check before the study (seconds).
    pub clock_offset_s: f64,
    /// Its share of the run's connections, and its load threads.
    pub connections: u64,
    pub client_threads: u64,
    pub ops: u64,
    pub ops_per_sec: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns_max: Option<u64>,
    pub client_cpu_user_s: f64,
    pub client_cpu_sys_s: f64,
    /// Its load's CPU over the window as a share of its threads (each on a CPU of its own), and
    /// whether a thread of it was busy for ~90% of the window (open loop: too many sends late).
    pub client_busy_share: f64,
    pub client_saturated: bool,
    pub verified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_unix_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_end_unix_s: Option<f64>,
}

/// Of a core's steal over a window as `/proc/stat` read it, what the host surely took: less the
/// one tick the reading may have rounded up.
pub fn surely_stolen(steal_s: f64) -> f64 {
    (steal_s - 1.0 / clock_ticks_per_sec()).max(0.0)
}

/// An open-loop run with more than this share of its sends late fell behind its schedule: the
/// rate it reports is not the rate it was asked to offer.
pub const LATE_SHARE_LIMIT: f64 = 0.01;
/// An open-loop run that achieved less than this share of its offered rate fell behind it (its
/// row says so in a note).
pub const FELL_BEHIND_RATE_SHARE: f64 = 0.95;
/// An open-loop run that achieved less than this share of its offered rate did not hold it.
pub const HELD_RATE_SHARE: f64 = 0.97;

impl Row {
    /// The block of consecutive rounds the row was measured in: recorded, or for a document
    /// from before blocks derived from its run (rounds ran in order).
    pub fn block(&self) -> u32 {
        self.block.unwrap_or_else(|| block_of(self.run))
    }

    /// Whether the row is an attribution round's: for causes, never for figures.
    pub fn is_attribution(&self) -> bool {
        self.attribution == Some(true)
    }

    /// Whether an open-loop row held its offered rate: verified, no errors, the rate achieved,
    /// its sends on time, and its p99 under the sweep's bound (when it has one). None for a
    /// closed loop.
    pub fn held_offered_rate(&self) -> Option<bool> {
        let offered = self.offered_rate?;
        let bound = self.params.param_u64(Param::P99BoundNs);
        let within = match (bound, self.latency_ns_p99) {
            (Some(bound), Some(p99)) => p99 <= bound,
            (Some(_), None) => false,
            (None, _) => true,
        };
        Some(
            self.verified
                && self.errors == 0
                && self.ops_per_sec >= HELD_RATE_SHARE * offered
                && self.client_late_share.unwrap_or(1.0) <= self.late_share_allowed()
                && within,
        )
    }

    /// The share of the window the host surely took from the load's core (steal), where
    /// measured. `/proc/stat` counts steal in ticks, so one tick of it may be rounding: a quiet
    /// machine's half-second windows read 0 or 2%.
    pub fn load_core_stolen_share(&self) -> Option<f64> {
        Some(surely_stolen(self.client_core_steal_s?) / self.seconds.max(f64::EPSILON))
    }

    /// The late share an open loop may have and still be on schedule: `LATE_SHARE_LIMIT`, and
    /// the share of the window the host surely took from the load's core besides. A send due
    /// while the load's vCPU was not running is late whatever the load does (a CI host took 13%
    /// of it and 6% of the sends were late, the rate itself held).
    pub fn late_share_allowed(&self) -> f64 {
        LATE_SHARE_LIMIT + self.load_core_stolen_share().unwrap_or(0.0)
    }

    /// Whether an open-loop row fell behind its schedule: too many sends late, or the rate
    /// short of the offered one (its notes say so). None for a closed loop.
    pub fn open_loop_fell_behind(&self) -> Option<bool> {
        let (rate, late) = (self.offered_rate?, self.client_late_share?);
        Some(late > LATE_SHARE_LIMIT || self.ops_per_sec < FELL_BEHIND_RATE_SHARE * rate)
    }

    /// Marks a row that measured nothing as failed, for `reason` (a sentence without the
    /// engine's name).
    /// Marks the run unverified because of `reason`: the flag, the reason (the first one given),
    /// and a note that says it.
    pub fn unverified_because(&mut self, reason: String) {
        self.verified = false;
        self.notes.push(format!("NOT VERIFIED: {reason}"));
        self.unverified_reason.get_or_insert(reason);
    }

    pub fn fail(&mut self, reason: &str) {
        // What its empty measurement noted (no connection lasted, ...) says nothing more.
        self.notes.clear();
        self.verified = false;
        self.failure = Some(reason.to_string());
        self.notes.push(format!("FAILED: {} {reason}", self.engine));
    }

    /// Fills `latency_ns_*` and `latency_ns_histogram` from `latency` (nothing when empty).
    pub fn set_latency(&mut self, latency: &hdrhistogram::Histogram<u64>) {
        if let Some(fields) = LatencyFields::of(latency, &mut self.notes) {
            self.latency_ns_p50 = Some(fields.p50);
            self.latency_ns_p90 = Some(fields.p90);
            self.latency_ns_p99 = Some(fields.p99);
            self.latency_ns_p999 = Some(fields.p999);
            self.latency_ns_max = Some(fields.max);
            self.latency_ns_histogram = fields.histogram;
        }
    }

    /// The same for `latency_uncorrected_ns_*` (open loop: latency from the actual send).
    pub fn set_latency_uncorrected(&mut self, latency: &hdrhistogram::Histogram<u64>) {
        if let Some(fields) = LatencyFields::of(latency, &mut self.notes) {
            self.latency_uncorrected_ns_p50 = Some(fields.p50);
            self.latency_uncorrected_ns_p90 = Some(fields.p90);
            self.latency_uncorrected_ns_p99 = Some(fields.p99);
            self.latency_uncorrected_ns_p999 = Some(fields.p999);
            self.latency_uncorrected_ns_max = Some(fields.max);
            self.latency_uncorrected_ns_histogram = fields.histogram;
        }
    }
    /// A row for the work an engine tallied, measured by `measured`. The engine's own syscall
    /// count is used only when the kernel did not count.
    pub fn measured(
        workload: &str,
        engine: &str,
        params: Map<String, Value>,
        run: u32,
        measured: &Measured,
        tally: Tally,
    ) -> Row {
        let seconds = measured.elapsed.as_secs_f64();
        let Tally {
            ops,
            bytes,
            syscalls_self,
        } = tally;
        let (syscalls, source) = match measured.syscalls_kernel {
            Some(count) => (count, SyscallSource::Kernel),
            None => (syscalls_self, SyscallSource::SelfCounted),
        };
        Row {
            workload: workload.to_string(),
            engine: engine.to_string(),
            params,
            run,
            seconds,
            ops,
            bytes,
            ops_per_sec: per_second(ops as f64, seconds),
            bytes_per_sec: per_second(bytes as f64, seconds),
            syscalls,
            syscalls_source: source,
            cpu_user_s: measured.usage.cpu_user_s,
            cpu_sys_s: measured.usage.cpu_sys_s,
            ctx_switches_voluntary: measured.usage.ctx_switches_voluntary,
            ctx_switches_involuntary: measured.usage.ctx_switches_involuntary,
            foreign_cpu_share: measured.foreign_cpu_share,
            ..Row::default()
        }
        .with_kernel_threads(measured)
    }

    /// The CPU time the row's `cpu_*` fields measure: a server's by the scheduler's clock where
    /// it was read (`server_cpu_s`), else user + system.
    pub fn cpu_s(&self) -> f64 {
        self.server_cpu_s
            .unwrap_or(self.cpu_user_s + self.cpu_sys_s)
    }

    /// Sets the costs of a process measured from outside (a server): its syscalls as the kernel
    /// counted them (`none` when it refused), CPU, context switches and io_uring threads.
    pub fn set_server_costs(&mut self, measured: &Measured) {
        self.syscalls = measured.syscalls_kernel.unwrap_or(0);
        self.syscalls_source = match measured.syscalls_kernel {
            Some(_) => SyscallSource::Kernel,
            None => SyscallSource::Unmeasured,
        };
        self.cpu_user_s = measured.usage.cpu_user_s;
        self.cpu_sys_s = measured.usage.cpu_sys_s;
        self.ctx_switches_voluntary = measured.usage.ctx_switches_voluntary;
        self.ctx_switches_involuntary = measured.usage.ctx_switches_involuntary;
        self.rss_peak_bytes = measured.rss_peak_bytes;
        self.foreign_cpu_share = measured.foreign_cpu_share;
        self.server_cpu_s = measured.usage.cpu_sched_s;
        let cpu_s = self.cpu_s();
        self.server_cpu_utilisation = (self.seconds > 0.0).then(|| cpu_s / self.seconds);
        self.server_cpu_us_per_op = (self.ops > 0).then(|| cpu_s * 1e6 / self.ops as f64);
        *self = std::mem::take(self).with_kernel_threads(measured);
    }

    /// A stream's figures per MB echoed, from the row's bytes and server costs (set last, once
    /// the syscall count is final).
    pub fn set_per_megabyte(&mut self) {
        let megabytes = self.bytes as f64 / 1e6;
        if megabytes <= 0.0 || self.failure.is_some() {
            return;
        }
        self.mb_per_sec = Some(per_second(megabytes, self.seconds));
        // Only a measured server has a utilisation (`set_server_costs`).
        let cpu_us = self.cpu_s() * 1e6;
        self.server_cpu_us_per_mb = self.server_cpu_utilisation.map(|_| cpu_us / megabytes);
        self.syscalls_per_mb =
            (self.syscalls_source.counted()).then(|| self.syscalls as f64 / megabytes);
        self.sqes_per_mb = self.sqes_submitted.map(|sqes| sqes as f64 / megabytes);
    }

    /// The syscalls of a server measured from outside when the kernel would not count them:
    /// the server's own count over the window, when it keeps one (ringside's servers do,
    /// contenders do not), marked `self`.
    pub fn set_server_own_syscalls(&mut self, own: Option<u64>) {
        if let (Some(count), "none") = (own, self.syscalls_source.as_str()) {
            self.syscalls = count;
            self.syscalls_source = SyscallSource::SelfCounted;
        }
    }

    /// Where the work went besides the measured thread: io-wq workers, the SQPOLL thread,
    /// the device's writes and flushes, and what io_uring did in the kernel.
    fn with_kernel_threads(mut self, measured: &Measured) -> Row {
        if let Some(helpers) = measured.helpers {
            let sqpoll = helpers.sqpoll_threads > 0;
            self.iowq_workers = Some(helpers.iowq_workers);
            self.iowq_cpu_s = Some(helpers.iowq_cpu_s);
            self.iowq_ctx_switches = Some(helpers.iowq_ctx_switches);
            self.sqpoll_cpu_s = sqpoll.then_some(helpers.sqpoll_cpu_s);
            self.sqpoll_ctx_switches = sqpoll.then_some(helpers.sqpoll_ctx_switches);
        }
        if let Some(device) = measured.device {
            self.device_writes = Some(device.writes);
            self.device_flushes = Some(device.flushes);
        }
        if let Some(ring) = measured.ring {
            self.sqes_submitted = ring.get(RingEvent::SqeSubmitted);
            self.cqes_posted = ring.get(RingEvent::CqePosted);
            self.iowq_punts = ring.get(RingEvent::IowqPunt);
            self.polls_armed = ring.get(RingEvent::PollArmed);
            self.task_work_runs = ring.get(RingEvent::TaskWorkRun);
            self.local_work_runs = ring.get(RingEvent::LocalWorkRun);
            self.cqe_overflows = ring.get(RingEvent::CqOverflow);
            self.short_writes = ring.get(RingEvent::ShortWrite);
        }
        self.notes.extend(measured.notes.iter().cloned());
        self
    }

    /// What a user-space pool of threads did (the `threads` file engine).
    pub fn set_pool(&mut self, pool: &PoolThreads) {
        self.pool_threads = Some(pool.threads);
        self.pool_cpu_s = Some(pool.cpu_s);
        self.pool_ctx_switches = Some(pool.ctx_switches);
    }

    /// The parameters as `key=value` pairs in a stable order, for tables and CSV.
    pub fn params_text(&self) -> String {
        crate::stats::params_text(&self.params)
    }

    /// The study the row belongs to, as results.csv's `study` column: its workload and a
    /// checksum of the parameters every engine of the study shares (those of
    /// `study_params`, keys sorted), so rows group by study without reading `params.*`, and
    /// the same study has the same id in every document.
    pub fn study_id(&self) -> String {
        let mut params: Vec<(&String, &Value)> = self.study_params().collect();
        params.sort_by_key(|(key, _)| *key);
        let text = serde_json::to_string(&params).expect("parameters serialise");
        format!("{}-{:08x}", self.workload, crc32fast::hash(text.as_bytes()))
    }

    /// The cell the row measured, as results.csv's `cell` column: its study and its engine.
    pub fn cell_id(&self) -> String {
        format!("{}/{}", self.study_id(), self.engine)
    }

    /// The parameters that make the row's study (what `model::study::study_key` groups by):
    /// all of them but the control marker and the settings an engine chose for itself.
    pub fn study_params(&self) -> impl Iterator<Item = (&String, &Value)> {
        (self.params.iter())
            .filter(|(key, _)| *key != Param::Control.key() && !is_engine_setting(key))
    }
}

/// Whether a `params` key is a setting an engine chose for itself (`iowq_*`, `sqpoll_*`: the
/// kernel threads of its ring; `command`: a contender's; the buffers it registered) rather than
/// a parameter of the workload that every engine of a study shares.
pub fn is_engine_setting(key: &str) -> bool {
    key.starts_with("iowq_")
        || key.starts_with("sqpoll_")
        || [
            Param::Command,
            // What a fixed-buffer engine registered, fitted to the locked-memory limit.
            Param::RegisteredBytes,
            Param::ProvidedBuffers,
            // fio's jobs beside a read study at the same depth (psync's pool of `depth` jobs).
            Param::Numjobs,
        ]
        .iter()
        .any(|param| param.key() == key)
}

/// How the note of a row whose run a signal cut short begins: its figures cover the part that
/// ran.
pub const PARTIAL_NOTE: &str = "partial:";

/// What an engine counted itself during a measured section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub ops: u64,
    pub bytes: u64,
    /// Syscalls the engine issued, by its own count (the fallback when the kernel cannot count).
    pub syscalls_self: u64,
}

/// The canonical results document: `--format json` prints it, `report` and `compare` read it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Document {
    pub schema_version: u32,
    pub ringside_version: String,
    /// The exact command line that produced the results.
    pub command: String,
    pub env: Value,
    pub results: Vec<Row>,
    /// Sentences about the document as a whole (a study step skipped, a control tool missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The claim files `ringside claims run` judged these rows against, as it read them: the
    /// report judges a user's own claims as it does the shipped ones, and `claims merge` tells
    /// two versions of one claim apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimFile>,
}

/// A claim file as a document keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimFile {
    /// Its name ("seed000-echo.toml").
    pub file: String,
    pub text: String,
}

impl Document {
    pub fn new(env: Value, results: Vec<Row>) -> Document {
        let command: Vec<String> = std::env::args().collect();
        Document {
            schema_version: SCHEMA_VERSION,
            ringside_version: env!("CARGO_PKG_VERSION").to_string(),
            command: command.join(" "),
            env,
            results,
            notes: Vec::new(),
            claims: Vec::new(),
        }
    }
}

/// What a row keeps of a latency histogram.
struct LatencyFields {
    p50: u64,
    p90: u64,
    p99: u64,
    p999: u64,
    max: u64,
    /// None (with a note on the row) if it could not be serialized.
    histogram: Option<String>,
}

impl LatencyFields {
    fn of(latency: &hdrhistogram::Histogram<u64>, notes: &mut Vec<String>) -> Option<Self> {
        if latency.is_empty() {
            return None;
        }
        Some(LatencyFields {
            p50: latency.value_at_quantile(0.50),
            p90: latency.value_at_quantile(0.90),
            p99: latency.value_at_quantile(0.99),
            p999: latency.value_at_quantile(0.999),
            max: latency.max(),
            histogram: crate::stats::histogram::encode(latency)
                .map_err(|error| notes.push(format!("{error:#}")))
                .ok(),
        })
    }
}

/// Whether `row` belongs to an equal-load comparison rather than a closed-loop study (its
/// open-loop points, or a sweep's closed-loop probes).
pub fn is_equal_load_row(row: &Row) -> bool {
    row.offered_rate.is_some() || row.params.contains_key(Param::Sweep.key())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::measure::Usage;
    use crate::row::params::{Param, Params};
    use std::time::Duration;

    fn sample() -> Row {
        let measured = Measured {
            elapsed: Duration::from_millis(500),
            syscalls_kernel: Some(386),
            usage: Usage {
                cpu_user_s: 0.1,
                cpu_sys_s: 0.3,
                ..Usage::default()
            },
            ..Measured::default()
        };
        let mut params = Map::new();
        params.put(Param::BlockSize, 4096);
        params.put(Param::File, "overwrite");
        let tally = Tally {
            ops: 1000,
            bytes: 4_096_000,
            syscalls_self: 7,
        };
        Row::measured("fs-write", "uring-ring", params, 2, &measured, tally)
    }

    /// The CI host's open loop: 1001/s achieved of 1000 over 2 s, 6% of its sends late, and
    /// `steal_s` of the load's core taken by the host (0.26 s there).
    pub fn late_open_loop_row(steal_s: f64) -> Row {
        Row {
            verified: true,
            seconds: 2.0,
            offered_rate: Some(1000.0),
            ops_per_sec: 1001.0,
            client_late_share: Some(0.06),
            client_core_steal_s: Some(steal_s),
            ..Row::default()
        }
    }

    #[test]
    fn late_sends_the_host_explains_do_not_unhold_a_rate() {
        let row = late_open_loop_row;
        // Less the one tick (10 ms) /proc/stat may have rounded up.
        assert!((row(0.26).late_share_allowed() - 0.135).abs() < 1e-9);
        assert_eq!(row(0.26).held_offered_rate(), Some(true));
        // One tick of steal: 6% late is the load's, and the rate was not held.
        assert_eq!(row(0.01).late_share_allowed(), LATE_SHARE_LIMIT);
        assert_eq!(row(0.01).held_offered_rate(), Some(false));
        // Nothing measured: the limit alone.
        let unmeasured = Row {
            client_core_steal_s: None,
            ..row(0.0)
        };
        assert_eq!(unmeasured.late_share_allowed(), LATE_SHARE_LIMIT);
    }

    #[test]
    fn rates_come_from_time_and_counts() {
        let row = sample();
        assert_eq!(row.ops_per_sec, 2000.0);
        assert_eq!(row.bytes_per_sec, 8_192_000.0);
        assert_eq!(row.syscalls, 386);
        assert_eq!(row.syscalls_source, SyscallSource::Kernel);
        assert_eq!(row.params_text(), "block_size=4096 file=overwrite");
    }

    #[test]
    fn self_count_is_used_only_without_the_kernel_counter() {
        let measured = Measured {
            elapsed: Duration::from_secs(1),
            syscalls_kernel: None,
            usage: Usage::default(),
            ..Measured::default()
        };
        let tally = Tally {
            ops: 1,
            bytes: 1,
            syscalls_self: 7,
        };
        let row = Row::measured("fs-write", "blocking", Map::new(), 1, &measured, tally);
        assert_eq!((row.syscalls, row.syscalls_source.as_str()), (7, "self"));
    }

    #[test]
    fn a_row_without_its_block_derives_it_from_its_run() {
        let mut row = sample();
        let blocks: Vec<u32> = [1, 4, 5, 8, 9, 12, 13, 24]
            .iter()
            .map(|&run| {
                row.run = run;
                row.block()
            })
            .collect();
        assert_eq!(blocks, [1, 1, 2, 2, 3, 3, 4, 6]);
        row.block = Some(7);
        assert_eq!(row.block(), 7, "a recorded block wins");
        let json = serde_json::to_value(sample()).unwrap();
        assert!(json.get("block").is_none() && json.get("attribution").is_none());
    }

    #[test]
    fn json_keeps_the_contract_names_and_round_trips() {
        let row = sample();
        let json = serde_json::to_value(&row).unwrap();
        for key in [
            "workload",
            "engine",
            "params",
            "run",
            "seconds",
            "ops",
            "bytes",
            "ops_per_sec",
            "bytes_per_sec",
            "syscalls",
            "syscalls_source",
            "cpu_user_s",
            "cpu_sys_s",
            "ctx_switches_voluntary",
            "ctx_switches_involuntary",
            "verified",
            "errors",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        let back: Row = serde_json::from_value(json).unwrap();
        assert_eq!(back, row);
    }
}
