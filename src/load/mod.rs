//! The load generator, the control of every network study (`ringside load`, and the client side
//! of `echo` and `http`).
//!
//! Closed loop per connection, like rust_echo_bench: send a message, wait for the whole echo,
//! compare every byte with what was sent (each message carries a different pattern, so a stale,
//! reordered, crossed or corrupted echo fails), record the round trip in an HdrHistogram,
//! repeat. Unlike rust_echo_bench (a blocking thread per connection, which FINDINGS saw
//! saturate its core above ≈50 connections), all connections share one epoll loop on one pinned
//! thread (`--threads` for more), with nothing allocated and one `epoll_wait` per batch of
//! ready connections. The loop measures its own thread CPU time and marks a run whose client
//! was busy for ≥90% of the window as saturated: then the client, not the server, set the pace.
//!
//! A connection the server never serves (the `blocking` engine with two clients) times out per
//! `--timeout`, is counted and closed; the run goes on with the others.
//!
//! This file is the plan and the coordinator (threads, warm-up, the measured window); a client
//! thread's loop is `client.rs`, one connection's sends and checks `connection.rs`, the open
//! loop's timetable `schedule.rs`, the slow reader `slow_reader.rs`, and the result row
//! `row.rs`. The `load` subcommand is `studies/load.rs`.

mod client;
mod connection;
mod row;
mod schedule;
mod slow_reader;

pub use row::{http_summary, load_row, SERVER_NOT_MEASURED_NOTE};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::measure::{SyscallCounter, Usage};
use crate::system::limits::fds_for_connections;
use crate::system::tuning::Sched;

/// How each connection uses the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Closed loop: send a message of `--payload` bytes, wait for all of it, repeat.
    PingPong,
    /// Send an endless pattern in `--payload`-byte messages, combined into writes of up to
    /// 64 KiB (as tcpkali does), while reading the echo in odd-sized reads; the sender stays at
    /// most `--window` bytes ahead of the checked echo.
    Stream,
    /// HTTP requests and framed responses (`load http`; not an echo mode).
    #[value(skip)]
    Http,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::PingPong => "ping-pong",
            Mode::Stream => "stream",
            Mode::Http => "http",
        }
    }
}

/// One load run, validated.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    pub target: SocketAddr,
    pub connections: usize,
    pub payload_bytes: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub threads: usize,
    pub timeout: Duration,
    /// Pin load thread i to the i-th of these CPUs (round robin); empty: unpinned.
    pub cpus: Vec<usize>,
    pub sched: Sched,
    /// How echo connections use the server (ignored by HTTP runs).
    pub mode: Mode,
    /// Stream mode: each connection reads its echo at no more than this rate (a slow reader).
    pub read_bytes_per_sec: Option<u64>,
    /// SO_RCVBUF of every client socket, set before connecting.
    pub rcvbuf_bytes: Option<usize>,
    /// Stream mode: how far a connection's writes may run ahead of its checked echo.
    pub window_bytes: u64,
    /// Some for an HTTP run: connections send requests and frame responses instead of echoes.
    pub http: Option<HttpLoad>,
    /// Open loop: messages (or requests) per second over all connections, each due at a fixed
    /// time whatever happened to the ones before it; latency runs from that due time (wrk2's
    /// coordinated-omission correction). None: closed loop, the next goes out when the previous
    /// answer is in. Ping-pong and HTTP only.
    pub rate_per_sec: Option<f64>,
    /// Open the measured window at this wall-clock time (connecting and warming up before
    /// it), so loads on several hosts measure the same seconds (`ringside merge` checks).
    pub start_at: Option<SystemTime>,
}

impl LoadPlan {
    /// Bytes each send offers: a message (ping-pong), or in a stream as many whole `--payload`
    /// messages as fit in `STREAM_WRITE_BYTES` and the window, combined into one write as
    /// tcpkali does (`--write-combine`). A slow reader keeps one message a write: the shape
    /// that caught the peers' short-send bugs.
    pub fn write_bytes(&self) -> usize {
        match (self.mode, self.read_bytes_per_sec) {
            (Mode::Stream, None) => {
                let room = STREAM_WRITE_BYTES.min(self.window_bytes as usize);
                self.payload_bytes * (room / self.payload_bytes).max(1)
            }
            _ => self.payload_bytes,
        }
    }
}

/// What an HTTP run sends.
#[derive(Clone, Debug)]
pub struct HttpLoad {
    /// The request every connection sends, one in flight at a time.
    pub request: Vec<u8>,
}

/// The edges of the measured window, reported to the caller as they pass so it can measure a
/// server over exactly that window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowEdge {
    Start,
    Stop,
}

/// Errors by kind. Every kind ends the connection it happened on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadErrors {
    /// Connections the server refused or did not accept in time.
    pub connect: u64,
    /// Connections the server reset or closed while a message was in flight (read side): lost
    /// without an orderly HTTP close, so the run held fewer connections than it says.
    pub reset: u64,
    /// Sends that failed (the server had reset the connection).
    pub write: u64,
    /// Messages not echoed in full within `--timeout`.
    pub timeout: u64,
    /// Echoes that differed from what was sent (or came with extra bytes).
    pub mismatch: u64,
}

impl LoadErrors {
    pub fn total(&self) -> u64 {
        self.connect + self.reset + self.write + self.timeout + self.mismatch
    }

    fn add(&mut self, other: &LoadErrors) {
        self.connect += other.connect;
        self.reset += other.reset;
        self.write += other.write;
        self.timeout += other.timeout;
        self.mismatch += other.mismatch;
    }
}

/// What one load run measured.
pub struct LoadReport {
    /// The measured window's wall time.
    pub seconds: f64,
    /// The measured window's edges on the wall clock.
    pub window: Option<(SystemTime, SystemTime)>,
    /// Round trips (ping-pong) or `--payload`-sized stretches echoed (stream).
    pub messages: u64,
    /// Bytes echoed back and checked.
    pub bytes: u64,
    /// From each message's send (closed loop) or due time (open loop) to its answer.
    pub latency_ns: Histogram<u64>,
    /// From each request's actual send to its response: what a tool without the
    /// coordinated-omission correction reports (equal to `latency_ns` in a closed loop).
    pub latency_uncorrected_ns: Histogram<u64>,
    /// HTTP responses by status code (index = code).
    pub status_counts: Vec<u64>,
    /// Open loop: requests that fell due while their connection still awaited the previous
    /// response, so went out late.
    pub late: u64,
    /// Open loop: messages sent in the window, and those sent more than `LATE_BOUND` after
    /// their due time (whether the client was busy or the connection still awaited an answer):
    /// the open loop's saturation signal, where CPU is not one.
    pub sends: u64,
    pub sends_late: u64,
    pub errors: LoadErrors,
    /// CPU and switches of the client threads over the window, summed.
    pub client_usage: Usage,
    pub client_syscalls: Option<u64>,
    /// Client threads busy for at least `SATURATED_SHARE` of the window.
    pub saturated_threads: usize,
    /// Connections still open when the window closed: none means the server went away (or
    /// closed every connection) during the run, which then measured less than it says.
    pub connections_open_at_end: usize,
    /// The window the plan asked for, when a signal (Ctrl-C, SIGTERM) closed it early: the
    /// figures then cover `seconds` of it.
    pub cut_short_of: Option<Duration>,
    /// HTTP: connections opened again in the window after the server closed them in order
    /// after an answer (HTTP/1.0, `Connection: close`, an idle timeout).
    pub reconnects: u64,
}

impl LoadReport {
    pub(crate) fn empty() -> LoadReport {
        LoadReport {
            seconds: 0.0,
            window: None,
            messages: 0,
            bytes: 0,
            latency_ns: crate::stats::histogram::new_latency(),
            latency_uncorrected_ns: crate::stats::histogram::new_latency(),
            status_counts: vec![0; STATUS_CODES],
            late: 0,
            sends: 0,
            sends_late: 0,
            errors: LoadErrors::default(),
            client_usage: Usage::default(),
            client_syscalls: None,
            saturated_threads: 0,
            connections_open_at_end: 0,
            cut_short_of: None,
            reconnects: 0,
        }
    }

    /// Adds what one client thread measured; `window_seconds` (when the window opened) judges
    /// whether the thread was saturated.
    fn add(&mut self, part: &LoadReport, window_seconds: Option<f64>) {
        self.messages += part.messages;
        self.bytes += part.bytes;
        self.latency_ns.add(&part.latency_ns).expect("same bounds");
        self.latency_uncorrected_ns
            .add(&part.latency_uncorrected_ns)
            .expect("same bounds");
        for (total, count) in self.status_counts.iter_mut().zip(&part.status_counts) {
            *total += count;
        }
        self.late += part.late;
        self.sends += part.sends;
        self.sends_late += part.sends_late;
        self.errors.add(&part.errors);
        self.connections_open_at_end += part.connections_open_at_end;
        self.reconnects += part.reconnects;
        let usage = part.client_usage;
        self.client_usage.cpu_user_s += usage.cpu_user_s;
        self.client_usage.cpu_sys_s += usage.cpu_sys_s;
        self.client_usage.ctx_switches_voluntary += usage.ctx_switches_voluntary;
        self.client_usage.ctx_switches_involuntary += usage.ctx_switches_involuntary;
        if let Some(seconds) = window_seconds {
            let busy = usage.cpu_user_s + usage.cpu_sys_s;
            self.saturated_threads += usize::from(busy >= SATURATED_SHARE * seconds);
        }
    }
}

/// Share of the window a client thread must be on CPU to count as saturated.
pub(crate) const SATURATED_SHARE: f64 = 0.9;
/// An open-loop send more than this behind its due time is late: well above the loop's own
/// wake-up jitter here (tens of µs), well below a p99 worth reporting.
pub const LATE_BOUND: Duration = Duration::from_millis(1);
/// How long a client loop blocks at most, so it notices the window's edges and timeouts.
pub(crate) const WAIT_TIMEOUT: Duration = Duration::from_millis(10);
/// Most bytes a stream offers per send (its `--payload` messages combined).
pub const STREAM_WRITE_BYTES: usize = 64 * 1024;
/// How far a stream may run ahead of its echo by default: bounds what the server must hold.
pub const STREAM_WINDOW_BYTES: u64 = 256 * 1024;
/// The default window with a slow reader: twice Linux's default send-buffer maximum
/// (net.ipv4.tcp_wmem), so the server's send buffer fills before the window does.
pub const SLOW_READER_WINDOW_BYTES: u64 = 8 << 20;
/// HTTP status codes are three digits.
pub(crate) const STATUS_CODES: usize = 1000;

const PHASE_CONNECTING: u8 = 0;
const PHASE_WARMUP: u8 = 1;
const PHASE_MEASURE: u8 = 2;
const PHASE_DONE: u8 = 3;

/// State the coordinating thread shares with the client threads.
struct Shared {
    phase: AtomicU8,
    /// Client threads done connecting (or failing to).
    ready: AtomicUsize,
    /// Connections made, over all threads.
    connected: AtomicUsize,
    /// When the window ends, in ns after `origin` (u64::MAX until it opens): the client
    /// threads stop on it themselves.
    origin: Instant,
    deadline_ns: AtomicU64,
}

impl Shared {
    /// Whether the measured window's end has passed.
    fn past_deadline(&self) -> bool {
        let deadline = self.deadline_ns.load(Ordering::Acquire);
        deadline != u64::MAX && self.origin.elapsed().as_nanos() as u64 >= deadline
    }
}

/// Runs `plan`, calling `on_window` at the measured window's start and stop.
pub fn run(plan: &LoadPlan, on_window: &mut dyn FnMut(WindowEdge)) -> anyhow::Result<LoadReport> {
    assert!(plan.connections > 0 && plan.payload_bytes > 0 && plan.threads > 0);
    let threads = plan.threads.min(plan.connections);
    let needed = fds_for_connections(plan.connections) + threads as u64;
    let what = format!("a load run with {} connections", plan.connections);
    crate::system::limits::ensure_fds(needed, &what)?;
    if let Some(start_at) = plan.start_at {
        wait_to_connect(start_at, plan.warmup)?;
    }
    let shared = Shared {
        phase: AtomicU8::new(PHASE_CONNECTING),
        ready: AtomicUsize::new(0),
        connected: AtomicUsize::new(0),
        origin: Instant::now(),
        deadline_ns: AtomicU64::new(u64::MAX),
    };
    // Opened before the client threads start so that it counts them too (perf's inherit).
    let mut syscall_counter = if crate::measure::counting_syscalls() {
        SyscallCounter::open().ok()
    } else {
        None
    };
    let outcome = std::thread::scope(|scope| -> anyhow::Result<LoadReport> {
        let spawned: std::io::Result<Vec<_>> = (0..threads)
            .map(|index| {
                let first = plan.connections * index / threads;
                let last = plan.connections * (index + 1) / threads;
                let shared = &shared;
                let cpu = (!plan.cpus.is_empty()).then(|| plan.cpus[index % plan.cpus.len()]);
                std::thread::Builder::new()
                    .name(format!("ringside-load-{index}"))
                    .spawn_scoped(scope, move || {
                        client::client_thread(plan, first..last, cpu, shared)
                    })
            })
            .collect();
        let workers = match spawned {
            Ok(workers) => workers,
            Err(error) => {
                // The threads that did start end at once, and the scope joins them.
                shared.phase.store(PHASE_DONE, Ordering::Release);
                anyhow::bail!("cannot start {threads} load threads ({error})");
            }
        };
        while shared.ready.load(Ordering::Acquire) < workers.len() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut window = None;
        // Raised only now: the client threads, already started, keep the plain class.
        let _timekeeper = plan.sched.timekeeper();
        if shared.connected.load(Ordering::Acquire) > 0 && !crate::system::stop::stopped() {
            shared.phase.store(PHASE_WARMUP, Ordering::Release);
            let warmup = match plan.start_at {
                Some(start_at) => start_at
                    .duration_since(SystemTime::now())
                    .unwrap_or_default(),
                None => plan.warmup,
            };
            sleep_unless_stopped(warmup);
        }
        // A signal before the window opened: no window opens (an instant's window would
        // divide a message by microseconds).
        if shared.phase.load(Ordering::Acquire) == PHASE_WARMUP && !crate::system::stop::stopped() {
            shared.phase.store(PHASE_MEASURE, Ordering::Release);
            on_window(WindowEdge::Start);
            if let Some(counter) = syscall_counter.as_mut() {
                counter.start();
            }
            let started = Instant::now();
            let started_wall = SystemTime::now();
            let deadline = started + plan.duration;
            let deadline_ns = deadline.duration_since(shared.origin).as_nanos() as u64;
            shared.deadline_ns.store(deadline_ns, Ordering::Release);
            sleep_unless_stopped(plan.duration);
            // The clients stopped counting at the deadline even if this thread woke late.
            let elapsed = started.elapsed();
            let seconds = elapsed.min(plan.duration).as_secs_f64();
            let cut_short = elapsed < plan.duration;
            let syscalls = syscall_counter.as_mut().map(SyscallCounter::stop);
            let stopped_wall = SystemTime::now();
            shared.phase.store(PHASE_DONE, Ordering::Release);
            on_window(WindowEdge::Stop);
            window = Some((seconds, syscalls, (started_wall, stopped_wall), cut_short));
        } else {
            shared.phase.store(PHASE_DONE, Ordering::Release);
        }
        let mut report = LoadReport::empty();
        for worker in workers {
            let part = worker.join().expect("a client thread panicked")?;
            report.add(&part, window.map(|(seconds, ..)| seconds));
        }
        match window {
            Some((seconds, syscalls, edges, cut_short)) => {
                report.seconds = seconds;
                report.window = Some(edges);
                report.client_syscalls = syscalls;
                report.cut_short_of = cut_short.then_some(plan.duration);
                Ok(report)
            }
            None => Err(anyhow::anyhow!(
                "no connection to {} succeeded ({} tried): is a server listening there?",
                plan.target,
                plan.connections
            )),
        }
    });
    // A signal before the window opened leaves nothing measured; one during it, a window
    // cut short that the row says it is, if it ran long enough to stand for its run.
    let kept = |report: &LoadReport| {
        (report.cut_short_of)
            .is_some_and(|planned| report.seconds >= PARTIAL_SHARE_MIN * planned.as_secs_f64())
    };
    match outcome {
        Ok(report) if kept(&report) => Ok(report),
        _ if crate::system::stop::stopped() => anyhow::bail!("interrupted"),
        outcome => outcome,
    }
}

/// The least share of its window a run cut short by a signal must have measured for its row
/// to be kept (marked partial): a window of a few milliseconds is mostly its edges.
const PARTIAL_SHARE_MIN: f64 = 0.25;

/// How long before `--start-at`'s warm-up the load starts connecting.
pub const CONNECT_ALLOWANCE: Duration = Duration::from_secs(1);

/// Sleeps until it is time to connect for a window that opens at `start_at` after `warmup`;
/// refuses a time too soon for that (the window would open late, misaligned with the others).
fn wait_to_connect(start_at: SystemTime, warmup: Duration) -> anyhow::Result<()> {
    let lead = warmup + CONNECT_ALLOWANCE;
    let Some(connect_at) = start_at.checked_sub(lead) else {
        anyhow::bail!("--start-at is before the epoch");
    };
    match connect_at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            sleep_unless_stopped(wait);
            Ok(())
        }
        Err(late) => anyhow::bail!(
            "--start-at is too soon by {:.1} s: give a time at least --warmup ({:?}) plus {:?} \
             ahead, so every load can connect and warm up before the window opens",
            late.duration().as_secs_f64(),
            warmup,
            CONNECT_ALLOWANCE
        ),
    }
}

fn sleep_unless_stopped(duration: Duration) {
    let until = Instant::now() + duration;
    let stop = crate::system::stop::stop_flag();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}
