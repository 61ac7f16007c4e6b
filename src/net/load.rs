//! `ringside load echo`: the load generator, the control of every network study.
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

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hdrhistogram::Histogram;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use serde_json::{Map, Value};

use super::http::{Framed, ResponseFramer};
use super::proto::{fill_echo_message, fill_echo_stream, first_mismatch};
use crate::cli::{duration_arg, size_arg};
use crate::measure::{Measured, ProcessMeter, SyscallCounter, Usage};
use crate::output::Format;
use crate::row::{per_second, Document, Row};
use crate::tuning::Sched;

#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// The echo server to drive, HOST:PORT (ringside's own or any other).
    #[arg(long)]
    pub target: SocketAddr,
    /// Bytes per message (k/m suffixes allowed).
    #[arg(long, default_value = "64", value_parser = payload_arg)]
    pub payload: usize,
    /// ping-pong: one message in flight per connection, latency recorded. stream: every
    /// connection streams without waiting (odd-sized writes and reads, up to --window ahead of
    /// its echo), every byte checked: the test most peer servers failed (add --read-rate for
    /// the slow reader that exposes short sends).
    #[arg(long, value_enum, default_value_t = Mode::PingPong)]
    pub mode: Mode,
    /// Stream mode's slow reader: read each connection's echo at no more than this many
    /// bytes/s (k/m suffixes allowed, per connection), in small odd-sized reads, while the
    /// sender keeps writing up to --window ahead. The echo backs up until the server's send
    /// buffer is full: its sends go short and its buffers wait with bytes still pending, which
    /// servers that ignore a send's result get wrong (tcpkali's --channel-bandwidth-downstream,
    /// in bytes). `-c 8 --payload 1000 --read-rate 4m` caught such a server within 3 s; slower
    /// rates take longer to refill the server's send buffer.
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = read_rate_arg)]
    pub read_rate: Option<u64>,
    /// SO_RCVBUF of every client socket, set before it connects so it also bounds the TCP
    /// window the server sees (tcpkali's --rcvbuf). The kernel doubles it and keeps a minimum.
    #[arg(long, value_name = "BYTES", value_parser = rcvbuf_arg)]
    pub rcvbuf: Option<usize>,
    /// Stream mode: how far each connection's writes may run ahead of its checked echo, which
    /// bounds what the server and the socket buffers between must hold [default: 256k, or 8m
    /// with --read-rate: a slow reader only makes the server's sends go short once the server's
    /// send buffer is full, and Linux grows that up to net.ipv4.tcp_wmem's maximum, 4 MiB by
    /// default].
    #[arg(long, value_name = "BYTES", value_parser = window_arg)]
    pub window: Option<u64>,
    #[command(flatten)]
    pub run: LoadRunArgs,
}

/// `load http`: a URL instead of an address, and an optional arrival rate.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpLoadArgs {
    /// The HTTP server to drive, http://HOST:PORT/PATH (ringside's own or any other).
    #[arg(long)]
    pub target: String,
    /// Open loop at this many requests/s over all connections, latency counted from each
    /// request's due time (as wrk2); without it, a closed loop (as wrk).
    #[arg(long, value_parser = rate_arg)]
    pub rate: Option<f64>,
    #[command(flatten)]
    pub run: LoadRunArgs,
}

/// The flags `load echo` and `load http` share, with the same meaning.
#[derive(clap::Args, Debug, Clone)]
pub struct LoadRunArgs {
    /// Concurrent connections, each with one message or request in flight.
    #[arg(long, short = 'c', default_value_t = 50, value_parser = connections_arg)]
    pub connections: usize,
    /// Measured time.
    #[arg(long, short = 'd', default_value = "10s", value_parser = duration_arg)]
    pub duration: Duration,
    /// Time before the measured window; its messages are not counted.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Duration,
    /// Client threads; connections are spread over them.
    #[arg(long, short = 't', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// A message not answered in full within this time counts as a timeout; its connection
    /// closes.
    #[arg(long, default_value = "2s", value_parser = duration_arg)]
    pub timeout: Duration,
    /// Pin the client threads to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Measure this server process over the window: kernel-counted syscalls, CPU, switches.
    #[arg(long)]
    pub server_pid: Option<i32>,
    /// Scheduling class of the client threads (fifo = SCHED_FIFO 50, as `chrt -f 50`).
    #[arg(long, value_enum, default_value_t = Sched::Other)]
    pub sched: Sched,
    /// Output format on stdout (or in --output).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write results to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<std::path::PathBuf>,
}

fn rate_arg(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate > 0.0 && rate <= 10_000_000.0 => Ok(rate),
        _ => Err(format!(
            "'{text}' is not a rate between 0 and 10M requests/s"
        )),
    }
}

/// Splits `http://HOST:PORT/PATH` into the address to connect to, the Host header and the path.
pub fn parse_target(url: &str) -> Result<(SocketAddr, String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("'{url}' is not an http:// URL (https is not supported)"))?;
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let with_port = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let address = std::net::ToSocketAddrs::to_socket_addrs(&with_port)
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| format!("cannot resolve '{authority}' in '{url}'"))?;
    Ok((address, authority.to_string(), path.to_string()))
}

/// How each connection uses the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Closed loop: send a message of `--payload` bytes, wait for all of it, repeat.
    PingPong,
    /// Send an endless pattern in `--payload`-byte writes while reading the echo in odd-sized
    /// reads; the sender stays at most `--window` bytes ahead of the checked echo.
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

fn connections_arg(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("at least one connection is needed".into()),
        Ok(count) if count > 65_000 => Err(format!(
            "{count} connections is more than one \
             client address has ports for"
        )),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("'{text}' is not a number of connections")),
    }
}

fn read_rate_arg(text: &str) -> Result<u64, String> {
    match size_arg(text)? {
        0 => Err("a reader needs a rate of at least one byte/s".into()),
        rate => Ok(rate),
    }
}

fn rcvbuf_arg(text: &str) -> Result<usize, String> {
    match size_arg(text)? {
        0 => Err("a receive buffer needs at least one byte".into()),
        bytes if bytes > 1 << 30 => Err("receive buffers above 1 GiB are not supported".into()),
        bytes => Ok(bytes as usize),
    }
}

fn window_arg(text: &str) -> Result<u64, String> {
    match size_arg(text)? {
        0 => Err("a stream needs a window of at least one byte".into()),
        bytes if bytes > 1 << 30 => Err("windows above 1 GiB are not supported".into()),
        bytes => Ok(bytes),
    }
}

fn payload_arg(text: &str) -> Result<usize, String> {
    match size_arg(text)? {
        0 => Err("a message needs at least one byte".into()),
        bytes if bytes > 1 << 24 => Err("messages above 16 MiB are not supported".into()),
        bytes => Ok(bytes as usize),
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
    pub cpu: Option<usize>,
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
}

/// What an HTTP run sends, and at what pace.
#[derive(Clone, Debug)]
pub struct HttpLoad {
    /// The request every connection sends, one in flight at a time.
    pub request: Vec<u8>,
    /// Open loop: requests per second over all connections, each request due at a fixed time
    /// whatever happened to the ones before it; latency runs from that due time (wrk2's
    /// coordinated-omission correction). None: closed loop, the next request goes out when
    /// the previous response is in.
    pub rate_per_sec: Option<f64>,
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
    /// Connections the server reset or closed while a message was in flight (read side).
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
    pub errors: LoadErrors,
    /// CPU and switches of the client threads over the window, summed.
    pub client_usage: Usage,
    pub client_syscalls: Option<u64>,
    /// Client threads busy for at least `SATURATED_SHARE` of the window.
    pub saturated_threads: usize,
}

/// Share of the window a client thread must be on CPU to count as saturated.
const SATURATED_SHARE: f64 = 0.9;
/// Ready connections taken per `epoll_wait`.
const EVENTS_PER_WAIT: usize = 512;
/// How long a client loop blocks at most, so it notices the window's edges and timeouts.
const WAIT_TIMEOUT: Duration = Duration::from_millis(10);
/// Bytes taken per `recv`; echoes larger than this arrive in several.
const RECV_BUFFER_BYTES: usize = 64 * 1024;
/// Bytes taken per `recv` in stream mode: odd, so reads and writes never line up.
const STREAM_READ_BYTES: usize = 1499;
/// How far a stream may run ahead of its echo by default: bounds what the server must hold.
pub const STREAM_WINDOW_BYTES: u64 = 256 * 1024;
/// The default window with a slow reader: twice Linux's default send-buffer maximum
/// (net.ipv4.tcp_wmem), so the server's send buffer fills before the window does.
const SLOW_READER_WINDOW_BYTES: u64 = 8 << 20;
/// How far a slow reader may read ahead of its rate before it pauses: `epoll_wait` sleeps in
/// whole milliseconds, so pausing after every read would hold fast rates far below their target.
const READ_PACE_SLACK: Duration = Duration::from_millis(2);
/// HTTP status codes are three digits.
const STATUS_CODES: usize = 1000;

const PHASE_CONNECTING: u8 = 0;
const PHASE_WARMUP: u8 = 1;
const PHASE_MEASURE: u8 = 2;
const PHASE_DONE: u8 = 3;

/// State the coordinating thread shares with the client threads.
struct Shared {
    phase: AtomicU8,
    ready: AtomicUsize,
    connected: AtomicUsize,
}

/// Runs `plan`, calling `on_window` at the measured window's start and stop.
pub fn run(plan: &LoadPlan, on_window: &mut dyn FnMut(WindowEdge)) -> anyhow::Result<LoadReport> {
    assert!(plan.connections > 0 && plan.payload_bytes > 0 && plan.threads > 0);
    let threads = plan.threads.min(plan.connections);
    let shared = Shared {
        phase: AtomicU8::new(PHASE_CONNECTING),
        ready: AtomicUsize::new(0),
        connected: AtomicUsize::new(0),
    };
    // Opened before the client threads start so that it counts them too (perf's inherit).
    let mut syscall_counter = if std::env::var_os("RINGSIDE_NO_PERF").is_none() {
        SyscallCounter::open().ok()
    } else {
        None
    };
    let outcome = std::thread::scope(|scope| -> anyhow::Result<LoadReport> {
        let workers: Vec<_> = (0..threads)
            .map(|index| {
                let first = plan.connections * index / threads;
                let last = plan.connections * (index + 1) / threads;
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("ringside-load-{index}"))
                    .spawn_scoped(scope, move || client_thread(plan, first..last, shared))
                    .expect("spawn a client thread")
            })
            .collect();
        while shared.ready.load(Ordering::Acquire) < threads {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut window = None;
        if shared.connected.load(Ordering::Acquire) > 0 {
            shared.phase.store(PHASE_WARMUP, Ordering::Release);
            sleep_unless_stopped(plan.warmup);
            shared.phase.store(PHASE_MEASURE, Ordering::Release);
            on_window(WindowEdge::Start);
            if let Some(counter) = syscall_counter.as_mut() {
                counter.start();
            }
            let started = Instant::now();
            sleep_unless_stopped(plan.duration);
            let seconds = started.elapsed().as_secs_f64();
            let syscalls = syscall_counter.as_mut().map(SyscallCounter::stop);
            shared.phase.store(PHASE_DONE, Ordering::Release);
            on_window(WindowEdge::Stop);
            window = Some((seconds, syscalls));
        } else {
            shared.phase.store(PHASE_DONE, Ordering::Release);
        }
        let mut report = LoadReport {
            seconds: 0.0,
            messages: 0,
            bytes: 0,
            latency_ns: crate::histogram::new_latency(),
            latency_uncorrected_ns: crate::histogram::new_latency(),
            status_counts: vec![0; STATUS_CODES],
            late: 0,
            errors: LoadErrors::default(),
            client_usage: Usage::default(),
            client_syscalls: None,
            saturated_threads: 0,
        };
        for worker in workers {
            let part = worker.join().expect("a client thread panicked")?;
            report.messages += part.messages;
            report.bytes += part.bytes;
            report
                .latency_ns
                .add(&part.latency_ns)
                .expect("same bounds");
            report
                .latency_uncorrected_ns
                .add(&part.latency_uncorrected_ns)
                .expect("same bounds");
            for (total, count) in report.status_counts.iter_mut().zip(&part.status_counts) {
                *total += count;
            }
            report.late += part.late;
            report.errors.add(&part.errors);
            let usage = part.usage;
            report.client_usage.cpu_user_s += usage.cpu_user_s;
            report.client_usage.cpu_sys_s += usage.cpu_sys_s;
            report.client_usage.ctx_switches_voluntary += usage.ctx_switches_voluntary;
            report.client_usage.ctx_switches_involuntary += usage.ctx_switches_involuntary;
            if let Some((seconds, _)) = window {
                let busy = usage.cpu_user_s + usage.cpu_sys_s;
                report.saturated_threads += usize::from(busy >= SATURATED_SHARE * seconds);
            }
        }
        match window {
            Some((seconds, syscalls)) => {
                report.seconds = seconds;
                report.client_syscalls = syscalls;
                Ok(report)
            }
            None => Err(anyhow::anyhow!(
                "no connection to {} succeeded ({} tried): is a server listening there?",
                plan.target,
                plan.connections
            )),
        }
    });
    if crate::progress::stopped() {
        anyhow::bail!("interrupted");
    }
    outcome
}

fn sleep_unless_stopped(duration: Duration) {
    let until = Instant::now() + duration;
    let stop = crate::progress::stop_flag();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// One client connection and the message (ping-pong) or stretch of stream it is sending.
struct Connection {
    stream: TcpStream,
    id: u64,
    sequence: u64,
    message: Box<[u8]>,
    /// Bytes of `message` sent; `message.len()` means the sender is idle.
    sent: usize,
    /// Ping-pong: bytes of the echo of `message` received.
    received: usize,
    /// Stream: offset of `message` in the stream, and bytes of echo received and checked.
    stream_sent: u64,
    stream_received: u64,
    /// When the message was sent (ping-pong) or the echo last moved (stream).
    started: Instant,
    /// When the request was due (HTTP open loop); equals `started` in a closed loop.
    due: Instant,
    /// Open loop: waiting for the next request's due time, nothing in flight.
    idle: bool,
    framer: ResponseFramer,
    /// EPOLLOUT is registered: the last send was short.
    writing: bool,
    /// Slow reader: EPOLLIN is withdrawn until `read_at`, so the echo backs up meanwhile.
    paused: bool,
    /// Slow reader: when the reader's rate allows its next `recv`.
    read_at: Instant,
    /// Stream: how far the sender may run ahead of the checked echo.
    window_bytes: u64,
    open: bool,
}

/// What one receive did.
enum Received {
    Nothing,
    /// Ping-pong: the whole echo is back, after this long.
    Message(Duration),
    /// Stream: this many more bytes of echo are back and checked.
    Bytes(usize),
    /// HTTP: a whole response is framed.
    Response(Framed),
}

/// What one client thread measured.
struct ThreadReport {
    messages: u64,
    bytes: u64,
    latency_ns: Histogram<u64>,
    latency_uncorrected_ns: Histogram<u64>,
    status_counts: Vec<u64>,
    late: u64,
    errors: LoadErrors,
    /// This thread's CPU and switches over the measured window.
    usage: Usage,
}

fn client_thread(
    plan: &LoadPlan,
    ids: std::ops::Range<usize>,
    shared: &Shared,
) -> anyhow::Result<ThreadReport> {
    let prepared = prepare_thread(plan, ids);
    shared.ready.fetch_add(1, Ordering::AcqRel);
    let (epoll_fd, mut connections, connect_errors) = prepared?;
    shared
        .connected
        .fetch_add(connections.len(), Ordering::AcqRel);
    let mut report = ThreadReport {
        messages: 0,
        bytes: 0,
        latency_ns: crate::histogram::new_latency(),
        latency_uncorrected_ns: crate::histogram::new_latency(),
        status_counts: vec![0; STATUS_CODES],
        late: 0,
        errors: LoadErrors {
            connect: connect_errors,
            ..LoadErrors::default()
        },
        usage: Usage::default(),
    };
    while shared.phase.load(Ordering::Acquire) == PHASE_CONNECTING {
        std::thread::sleep(Duration::from_micros(200));
    }
    if connections.is_empty() {
        return Ok(report);
    }
    let mut schedule = Schedule::new(plan, connections.len());
    let mut slow_reader = SlowReader::new(plan, connections.len());
    for (index, connection) in connections.iter_mut().enumerate() {
        match schedule.as_mut() {
            Some(schedule) => schedule.first(connection, index),
            None => start_message(connection, plan.mode, &epoll_fd, index, &mut report.errors),
        }
    }
    let empty = Event {
        flags: EventFlags::empty(),
        data: EventData::new_u64(0),
    };
    let mut events = vec![empty; EVENTS_PER_WAIT];
    let mut scratch = vec![0u8; RECV_BUFFER_BYTES];
    let mut expected = vec![0u8; RECV_BUFFER_BYTES];
    let mut usage_start = None;
    let mut timeouts_checked = Instant::now();
    loop {
        let phase = shared.phase.load(Ordering::Acquire);
        if phase == PHASE_DONE {
            break;
        }
        let measuring = phase == PHASE_MEASURE;
        if measuring && usage_start.is_none() {
            usage_start = Some(Usage::of_thread());
        }
        let mut wait = WAIT_TIMEOUT;
        if let Some(schedule) = schedule.as_mut() {
            let now = Instant::now();
            while let Some(index) = schedule.pop_due(now) {
                let connection = &mut connections[index];
                if connection.open {
                    connection.idle = false;
                    start_message(connection, plan.mode, &epoll_fd, index, &mut report.errors);
                }
            }
            wait = wait.min(schedule.until_next(Instant::now()));
        }
        if let Some(reader) = slow_reader.as_mut() {
            let now = Instant::now();
            reader.resume_due(&mut connections, now, &epoll_fd, &mut report.errors);
            wait = wait.min(reader.until_next(now));
        }
        let wait_timeout = rustix::event::Timespec::try_from(wait)?;
        let ready = match epoll::wait(&epoll_fd, &mut events[..], Some(&wait_timeout)) {
            Ok(ready) => ready,
            Err(Errno::INTR) => continue,
            Err(error) => return Err(anyhow::anyhow!("epoll_wait failed: {error}")),
        };
        for event in &events[..ready] {
            // Copied out: `Event` is packed on x86-64, its fields cannot be borrowed.
            let (flags, index) = (event.flags, event.data.u64() as usize);
            let connection = &mut connections[index];
            if !connection.open {
                continue;
            }
            if flags.contains(EventFlags::OUT) {
                continue_send(connection, plan.mode, &epoll_fd, index, &mut report.errors);
            }
            if !flags.intersects(EventFlags::IN | EventFlags::ERR | EventFlags::HUP) {
                continue;
            }
            let buffers = (&mut scratch[..], &mut expected[..]);
            let received = match plan.mode {
                Mode::Http => receive_http(connection, &epoll_fd, &mut scratch, &mut report.errors),
                _ => receive(
                    connection,
                    plan.mode,
                    &epoll_fd,
                    buffers,
                    &mut report.errors,
                ),
            };
            match received {
                Received::Nothing => {}
                Received::Message(latency) => {
                    if measuring {
                        report.messages += 1;
                        report.bytes += connection.message.len() as u64;
                        report
                            .latency_ns
                            .saturating_record(latency.as_nanos() as u64);
                    }
                    start_message(connection, plan.mode, &epoll_fd, index, &mut report.errors);
                }
                Received::Bytes(bytes) => {
                    if measuring {
                        report.bytes += bytes as u64;
                    }
                    if let Some(reader) = slow_reader.as_mut() {
                        let now = Instant::now();
                        reader.pause(connection, index, bytes, now, &epoll_fd, &mut report.errors);
                        if !connection.open {
                            continue;
                        }
                    }
                    // A stream that waited for its echo to catch up goes on.
                    let idle = connection.sent == connection.message.len();
                    if idle && may_send_more(connection) {
                        continue_send(connection, plan.mode, &epoll_fd, index, &mut report.errors);
                    }
                }
                Received::Response(framed) => {
                    let now = Instant::now();
                    if measuring {
                        // A closed loop sends each request the moment it is due.
                        let due = match schedule {
                            Some(_) => connection.due,
                            None => connection.started,
                        };
                        report.record_response(framed, due, connection.started, now);
                    }
                    if framed.close {
                        // The server said it closes: this connection is done.
                        report.errors.reset += 1;
                        close(connection, &epoll_fd);
                        continue;
                    }
                    let late = match schedule.as_mut() {
                        Some(schedule) => schedule.next(connection, index, now),
                        None => false,
                    };
                    report.late += u64::from(late && measuring);
                    if !connection.idle {
                        start_message(connection, plan.mode, &epoll_fd, index, &mut report.errors);
                    }
                }
            }
        }
        if timeouts_checked.elapsed() >= WAIT_TIMEOUT {
            timeouts_checked = Instant::now();
            expire(
                &mut connections,
                &epoll_fd,
                plan.timeout,
                &mut report.errors,
            );
        }
    }
    if let Some(start) = usage_start {
        report.usage = Usage::of_thread().since(&start);
    }
    Ok(report)
}

impl ThreadReport {
    fn record_response(&mut self, framed: Framed, due: Instant, sent: Instant, now: Instant) {
        self.messages += 1;
        self.bytes += framed.body_bytes;
        self.status_counts[usize::from(framed.status).min(STATUS_CODES - 1)] += 1;
        let corrected = now.duration_since(due);
        let uncorrected = now.duration_since(sent);
        self.latency_ns
            .saturating_record(corrected.as_nanos() as u64);
        self.latency_uncorrected_ns
            .saturating_record(uncorrected.as_nanos() as u64);
    }
}

/// The open loop's timetable for one client thread: every connection sends its requests at a
/// fixed interval (connections / rate), staggered so that together they arrive evenly. A
/// request that falls due while its connection still awaits the previous response goes out as
/// soon as that response is in, and its latency still counts from when it was due.
struct Schedule {
    interval: Duration,
    start: Instant,
    /// Idle connections by due time, soonest first (at most one entry per connection).
    waiting: BinaryHeap<Reverse<(Instant, usize)>>,
    /// The connections' global ids, to stagger them across threads.
    total: usize,
}

impl Schedule {
    fn new(plan: &LoadPlan, connections: usize) -> Option<Schedule> {
        let rate = plan.http.as_ref()?.rate_per_sec?;
        assert!(rate > 0.0);
        Some(Schedule {
            interval: Duration::from_secs_f64(plan.connections as f64 / rate),
            start: Instant::now(),
            waiting: BinaryHeap::with_capacity(connections),
            total: plan.connections,
        })
    }

    /// Sets the connection's first due time.
    fn first(&mut self, connection: &mut Connection, index: usize) {
        let offset = self
            .interval
            .mul_f64(connection.id as f64 / self.total as f64);
        connection.due = self.start + offset;
        connection.idle = true;
        self.waiting.push(Reverse((connection.due, index)));
    }

    /// After a response: the next request's due time. Returns whether it is already past
    /// (the request is late; the caller sends it now), else parks the connection until then.
    fn next(&mut self, connection: &mut Connection, index: usize, now: Instant) -> bool {
        connection.due += self.interval;
        if connection.due <= now {
            return true;
        }
        connection.idle = true;
        self.waiting.push(Reverse((connection.due, index)));
        false
    }

    /// A connection whose request is due by `now`, if any.
    fn pop_due(&mut self, now: Instant) -> Option<usize> {
        let &Reverse((when, index)) = self.waiting.peek()?;
        if when > now {
            return None;
        }
        self.waiting.pop();
        Some(index)
    }

    fn until_next(&self, now: Instant) -> Duration {
        self.waiting
            .peek()
            .map_or(WAIT_TIMEOUT, |Reverse((when, _))| {
                when.saturating_duration_since(now)
            })
    }
}

/// Stream mode's slow reader: after a `recv` of n bytes a connection may read again n / rate
/// seconds later, and until then its EPOLLIN is withdrawn. Its echo backs up in the socket
/// buffers meanwhile, so the server's sends go short and its buffers wait with bytes still
/// pending, while the connection's sender goes on up to its window.
struct SlowReader {
    rate_bytes_per_sec: f64,
    /// Paused connections by the time they may read again, soonest first. An entry whose
    /// connection was resumed or closed meanwhile is skipped.
    paused: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl SlowReader {
    fn new(plan: &LoadPlan, connections: usize) -> Option<SlowReader> {
        let rate = plan.read_bytes_per_sec?;
        assert!(rate > 0 && plan.mode == Mode::Stream);
        Some(SlowReader {
            rate_bytes_per_sec: rate as f64,
            paused: BinaryHeap::with_capacity(connections),
        })
    }

    /// Charges `bytes`, read at `now`, to the connection's rate and pauses its reader once it
    /// is more than `READ_PACE_SLACK` ahead of that rate, until the rate allows the next read.
    fn pause(
        &mut self,
        connection: &mut Connection,
        index: usize,
        bytes: usize,
        now: Instant,
        epoll_fd: &OwnedFd,
        errors: &mut LoadErrors,
    ) {
        debug_assert!(bytes > 0);
        let spent = Duration::from_secs_f64(bytes as f64 / self.rate_bytes_per_sec);
        connection.read_at = connection.read_at.max(now) + spent;
        if connection.read_at <= now + READ_PACE_SLACK {
            return;
        }
        self.paused.push(Reverse((connection.read_at, index)));
        if !connection.paused {
            connection.paused = true;
            register(connection, epoll_fd, index, errors);
        }
    }

    /// Lets the connections whose pause is over read again.
    fn resume_due(
        &mut self,
        connections: &mut [Connection],
        now: Instant,
        epoll_fd: &OwnedFd,
        errors: &mut LoadErrors,
    ) {
        while let Some(&Reverse((when, index))) = self.paused.peek() {
            if when > now {
                return;
            }
            self.paused.pop();
            let connection = &mut connections[index];
            if connection.open && connection.paused && connection.read_at <= now {
                connection.paused = false;
                // The timeout counts from when the reader is ready again.
                connection.started = now;
                register(connection, epoll_fd, index, errors);
            }
        }
    }

    fn until_next(&self, now: Instant) -> Duration {
        self.paused
            .peek()
            .map_or(WAIT_TIMEOUT, |Reverse((when, _))| {
                when.saturating_duration_since(now)
            })
    }
}

type Prepared = (OwnedFd, Vec<Connection>, u64);

/// Connects this thread's connections (blocking, one after another, each within the timeout)
/// and registers them with a new epoll instance. Refused connections are counted, not fatal.
fn prepare_thread(plan: &LoadPlan, ids: std::ops::Range<usize>) -> anyhow::Result<Prepared> {
    if let Some(cpu) = plan.cpu {
        crate::pin::pin_current_thread(cpu)?;
    }
    plan.sched.apply_to_current_thread()?;
    let epoll_fd = epoll::create(CreateFlags::CLOEXEC)?;
    let mut connections = Vec::with_capacity(ids.len());
    let mut failed = 0;
    for id in ids {
        let stream = match connect(&plan.target, plan.timeout, plan.rcvbuf_bytes) {
            Ok(stream) => stream,
            Err(_) => {
                failed += 1;
                continue;
            }
        };
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let data = EventData::new_u64(connections.len() as u64);
        epoll::add(&epoll_fd, stream.as_fd(), data, EventFlags::IN)?;
        connections.push(Connection {
            stream,
            id: id as u64,
            sequence: 0,
            message: match &plan.http {
                Some(http) => http.request.clone().into_boxed_slice(),
                None => vec![0u8; plan.payload_bytes].into_boxed_slice(),
            },
            sent: 0,
            received: 0,
            stream_sent: 0,
            stream_received: 0,
            started: Instant::now(),
            due: Instant::now(),
            idle: false,
            framer: ResponseFramer::default(),
            writing: false,
            paused: false,
            read_at: Instant::now(),
            window_bytes: plan.window_bytes,
            open: true,
        });
    }
    Ok((epoll_fd, connections, failed))
}

/// Connects within `timeout`. With `rcvbuf_bytes`, SO_RCVBUF is set before `connect` so the
/// window scale and the first advertised window already follow it.
fn connect(
    target: &SocketAddr,
    timeout: Duration,
    rcvbuf_bytes: Option<usize>,
) -> io::Result<TcpStream> {
    use rustix::event::{PollFd, PollFlags};
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let Some(rcvbuf_bytes) = rcvbuf_bytes else {
        return TcpStream::connect_timeout(target, timeout);
    };
    let family = match target {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let socket = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    sockopt::set_socket_recv_buffer_size(&socket, rcvbuf_bytes)?;
    match rustix::net::connect(&socket, target) {
        Ok(()) => {}
        Err(Errno::INPROGRESS) => {
            let mut polled = [PollFd::new(&socket, PollFlags::OUT)];
            let limit = rustix::event::Timespec::try_from(timeout).map_err(io::Error::other)?;
            if rustix::event::poll(&mut polled, Some(&limit))? == 0 {
                return Err(io::ErrorKind::TimedOut.into());
            }
            sockopt::socket_error(&socket)??;
        }
        Err(error) => return Err(error.into()),
    }
    // The caller sets non-blocking mode again; `TcpStream` starts as what the fd is.
    Ok(TcpStream::from(socket))
}

/// Fills the connection's next message (or next stretch of its stream) and sends as much of
/// it as the socket takes.
fn start_message(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    match mode {
        Mode::PingPong => {
            fill_echo_message(&mut connection.message, connection.id, connection.sequence);
            connection.received = 0;
            connection.started = Instant::now();
        }
        Mode::Stream => {
            let offset = connection.stream_sent;
            fill_echo_stream(&mut connection.message, connection.id, offset);
        }
        // The request never changes.
        Mode::Http => connection.started = Instant::now(),
    }
    connection.sent = 0;
    continue_send(connection, mode, epoll_fd, index, errors);
}

/// Whether a stream may send another stretch without running too far ahead of its echo.
fn may_send_more(connection: &Connection) -> bool {
    let sent_total = connection.stream_sent + connection.sent as u64;
    let ahead = sent_total - connection.stream_received;
    ahead + connection.message.len() as u64 <= connection.window_bytes
}

/// Sends the unsent rest of the message; registers for EPOLLOUT while the socket is full. A
/// stream goes on with its next stretch while its window allows.
fn continue_send(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    loop {
        let rest = &connection.message[connection.sent..];
        if rest.is_empty() {
            if mode != Mode::Stream || !may_send_more(connection) {
                break;
            }
            connection.stream_sent += connection.message.len() as u64;
            let offset = connection.stream_sent;
            fill_echo_stream(&mut connection.message, connection.id, offset);
            connection.sent = 0;
            continue;
        }
        match rustix::net::send(&connection.stream, rest, SendFlags::NOSIGNAL) {
            Ok(sent) => connection.sent += sent,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => break,
            Err(_) => {
                errors.write += 1;
                close(connection, epoll_fd);
                return;
            }
        }
    }
    let want_writing = connection.sent < connection.message.len();
    if want_writing != connection.writing {
        connection.writing = want_writing;
        register(connection, epoll_fd, index, errors);
    }
}

/// Registers what the connection waits for: its echo unless its reader is paused, and room to
/// send while its last send was short.
fn register(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    index: usize,
    errors: &mut LoadErrors,
) {
    let mut flags = EventFlags::empty();
    if !connection.paused {
        flags |= EventFlags::IN;
    }
    if connection.writing {
        flags |= EventFlags::OUT;
    }
    let data = EventData::new_u64(index as u64);
    if epoll::modify(epoll_fd, connection.stream.as_fd(), data, flags).is_err() {
        errors.reset += 1;
        close(connection, epoll_fd);
    }
}

/// One `recv` into `buffer`: the bytes received, or None when there were none yet or the
/// connection ended (closed or reset while bytes were awaited: counted, and closed here).
fn recv_or_close(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    buffer: &mut [u8],
    errors: &mut LoadErrors,
) -> Option<usize> {
    match rustix::net::recv(&connection.stream, buffer, RecvFlags::empty()) {
        Ok((received, _)) if received > 0 => Some(received),
        Err(Errno::AGAIN | Errno::INTR) => None,
        // 0: the server closed while bytes were awaited; any other error: a reset.
        Ok(_) | Err(_) => {
            errors.reset += 1;
            close(connection, epoll_fd);
            None
        }
    }
}

/// One `recv`, checked against what was sent.
fn receive(
    connection: &mut Connection,
    mode: Mode,
    epoll_fd: &OwnedFd,
    (scratch, expected): (&mut [u8], &mut [u8]),
    errors: &mut LoadErrors,
) -> Received {
    debug_assert!(mode != Mode::Http, "HTTP answers go to receive_http");
    let limit = match mode {
        Mode::PingPong | Mode::Http => scratch.len(),
        Mode::Stream => STREAM_READ_BYTES,
    };
    let Some(received) = recv_or_close(connection, epoll_fd, &mut scratch[..limit], errors) else {
        return Received::Nothing;
    };
    let got = &scratch[..received];
    let verdict = match mode {
        Mode::PingPong | Mode::Http => {
            let end = connection.received + received;
            match connection.message.get(connection.received..end) {
                Some(want) => first_mismatch(want, got),
                // More bytes than were sent: the server made some up.
                None => Some(0),
            }
        }
        Mode::Stream => {
            let sent_end = connection.stream_sent + connection.sent as u64;
            if connection.stream_received + received as u64 > sent_end {
                Some(0)
            } else {
                let want = &mut expected[..received];
                fill_echo_stream(want, connection.id, connection.stream_received);
                first_mismatch(want, got)
            }
        }
    };
    if verdict.is_some() {
        errors.mismatch += 1;
        close(connection, epoll_fd);
        return Received::Nothing;
    }
    if mode == Mode::Stream {
        connection.stream_received += received as u64;
        connection.started = Instant::now();
        return Received::Bytes(received);
    }
    connection.received += received;
    if connection.received < connection.message.len() {
        return Received::Nothing;
    }
    connection.sequence += 1;
    Received::Message(connection.started.elapsed())
}

/// One `recv` on an HTTP connection, fed to its response framer. A response must end exactly
/// where the bytes of this read end: one request is in flight, so anything after its response
/// is bytes the server should not have sent.
fn receive_http(
    connection: &mut Connection,
    epoll_fd: &OwnedFd,
    scratch: &mut [u8],
    errors: &mut LoadErrors,
) -> Received {
    let Some(received) = recv_or_close(connection, epoll_fd, scratch, errors) else {
        return Received::Nothing;
    };
    let mut bytes = &scratch[..received];
    let mut framed = None;
    while !bytes.is_empty() {
        match connection.framer.feed(bytes) {
            Ok((used, done)) if framed.is_none() && !connection.idle => {
                bytes = &bytes[used..];
                framed = done;
            }
            // Bad framing, or bytes beyond the one response owed.
            _ => {
                errors.mismatch += 1;
                close(connection, epoll_fd);
                return Received::Nothing;
            }
        }
    }
    match framed {
        Some(framed) => Received::Response(framed),
        None => Received::Nothing,
    }
}

/// Closes connections whose message has waited longer than `timeout`.
fn expire(
    connections: &mut [Connection],
    epoll_fd: &OwnedFd,
    timeout: Duration,
    errors: &mut LoadErrors,
) {
    // A paused reader waits by choice; its clock restarts when it reads again.
    for connection in connections
        .iter_mut()
        .filter(|c| c.open && !c.idle && !c.paused)
    {
        if connection.started.elapsed() > timeout {
            errors.timeout += 1;
            close(connection, epoll_fd);
        }
    }
}

/// Stops using a connection: out of the epoll set (a shut-down socket would report readiness
/// forever), shut down so the server sees the end, closed when the run ends.
fn close(connection: &mut Connection, epoll_fd: &OwnedFd) {
    connection.open = false;
    let _ = epoll::delete(epoll_fd, connection.stream.as_fd());
    let _ = connection.stream.shutdown(std::net::Shutdown::Both);
}

/// The result row of one load run. `server` is the server's own measurement over the window
/// when there was one (the study, or `--server-pid`).
pub fn load_row(
    engine: &str,
    mut params: Map<String, Value>,
    run: u32,
    plan: &LoadPlan,
    report: &LoadReport,
    server: Option<&Measured>,
) -> Row {
    params.insert("connections".into(), Value::from(plan.connections));
    if plan.mode != Mode::Http {
        params.insert("payload_bytes".into(), Value::from(plan.payload_bytes));
    }
    params.insert("client_threads".into(), Value::from(plan.threads));
    params.insert("sched".into(), Value::from(plan.sched.name()));
    params.insert("mode".into(), Value::from(plan.mode.name()));
    if let Some(rate) = plan.read_bytes_per_sec {
        params.insert("read_bytes_per_sec".into(), Value::from(rate));
    }
    if let Some(bytes) = plan.rcvbuf_bytes {
        params.insert("rcvbuf_bytes".into(), Value::from(bytes));
    }
    if plan.mode == Mode::Stream {
        params.insert("window_bytes".into(), Value::from(plan.window_bytes));
    }
    let bytes = report.bytes;
    let workload = if plan.mode == Mode::Http {
        "http"
    } else {
        "echo"
    };
    let mut row = Row {
        workload: workload.into(),
        engine: engine.into(),
        params,
        run,
        seconds: report.seconds,
        ops: report.messages,
        bytes,
        ops_per_sec: per_second(report.messages as f64, report.seconds),
        bytes_per_sec: per_second(bytes as f64, report.seconds),
        syscalls_source: "none".into(),
        verified: report.messages > 0 && report.errors.mismatch == 0,
        errors: report.errors.total(),
        client_cpu_user_s: Some(report.client_usage.cpu_user_s),
        client_cpu_sys_s: Some(report.client_usage.cpu_sys_s),
        client_syscalls: report.client_syscalls,
        client_ctx_switches_voluntary: Some(report.client_usage.ctx_switches_voluntary),
        client_ctx_switches_involuntary: Some(report.client_usage.ctx_switches_involuntary),
        client_saturated: Some(report.saturated_threads > 0),
        ..Row::default()
    };
    if plan.mode == Mode::Stream {
        // Streams have no round trips: ops are payload-sized stretches echoed.
        row.ops = bytes / plan.payload_bytes as u64;
        row.ops_per_sec = per_second(row.ops as f64, report.seconds);
        // A stream always has bytes out, so one that times out stalled: bytes the server
        // received were never echoed (a paused slow reader is not timed).
        let errors = &report.errors;
        row.verified = bytes > 0 && errors.mismatch == 0 && errors.timeout == 0;
    } else {
        row.set_latency(&report.latency_ns);
    }
    if plan.mode == Mode::Http {
        add_http_fields(&mut row, plan, report);
    }
    let errors = report.errors;
    // HTTP rows always say their socket errors, under wrk's names too (`read`: a connection
    // reset or closed while a response was awaited, the same count as `reset`).
    if errors.total() > 0 || plan.mode == Mode::Http {
        for (kind, count) in [
            ("connect", errors.connect),
            ("reset", errors.reset),
            ("write", errors.write),
            ("timeout", errors.timeout),
            ("mismatch", errors.mismatch),
        ] {
            row.error_counts.insert(kind.into(), Value::from(count));
        }
        if plan.mode == Mode::Http {
            row.error_counts
                .insert("read".into(), Value::from(errors.reset));
        }
    }
    if errors.total() > 0 {
        row.notes.push(format!(
            "{} errors: {} connect, {} reset or closed while reading, {} failed sends, {} timed \
             out after the --timeout, {} answers that differed from what was sent or could not \
             be framed",
            errors.total(),
            errors.connect,
            errors.reset,
            errors.write,
            errors.timeout,
            errors.mismatch
        ));
    }
    if errors.mismatch > 0 {
        row.notes.push(format!(
            "NOT VERIFIED: {} answers came back with different bytes or broken framing",
            errors.mismatch
        ));
    }
    if plan.mode == Mode::Stream && errors.timeout > 0 {
        row.notes.push(format!(
            "NOT VERIFIED: {} streams stalled: bytes sent were not echoed within --timeout",
            errors.timeout
        ));
    }
    if report.saturated_threads > 0 {
        row.notes.push(format!(
            "client saturated: {} of {} load threads were on CPU for >= {:.0}% of the window, \
             so the client may have set the pace (try --threads)",
            report.saturated_threads,
            plan.threads.min(plan.connections),
            SATURATED_SHARE * 100.0
        ));
    }
    match server {
        Some(measured) => row.set_server_costs(measured),
        None => row
            .notes
            .push("server not measured: pass --server-pid to count its syscalls and CPU".into()),
    }
    row
}

/// A histogram in the row's text form; a histogram that cannot be written becomes a note.
/// What the generic table leaves out of an HTTP row, laid out as wrk prints it: the latency
/// distribution (corrected and uncorrected side by side in an open loop), statuses, errors.
fn http_summary(row: &Row) -> String {
    let ms = |ns: Option<u64>| ns.map_or("-".to_string(), |ns| format!("{:.3}", ns as f64 / 1e6));
    let mut text = format!("requests/s {:.0}", row.ops_per_sec);
    if let (Some(target), Some(late)) = (row.ops_per_sec_target, row.ops_late) {
        text.push_str(&format!(" (target {target:.0}, {late} sent late)"));
    }
    text.push_str("\nlatency ms      p50      p90      p99    p99.9      max\n");
    let mut lines = vec![(
        if row.ops_per_sec_target.is_some() {
            "corrected"
        } else {
            ""
        },
        [
            row.latency_ns_p50,
            row.latency_ns_p90,
            row.latency_ns_p99,
            row.latency_ns_p999,
        ],
        row.latency_ns_max,
    )];
    if row.ops_per_sec_target.is_some() {
        lines.push((
            "uncorrected",
            [
                row.latency_uncorrected_ns_p50,
                row.latency_uncorrected_ns_p90,
                row.latency_uncorrected_ns_p99,
                row.latency_uncorrected_ns_p999,
            ],
            row.latency_uncorrected_ns_max,
        ));
    }
    for (label, quantiles, max) in lines {
        text.push_str(&format!("{label:<11}"));
        for value in quantiles.into_iter().chain([max]) {
            text.push_str(&format!(" {:>8}", ms(value)));
        }
        text.push('\n');
    }
    let statuses: Vec<String> = row
        .status_counts
        .iter()
        .map(|(status, count)| format!("{status}: {count}"))
        .collect();
    text.push_str(&format!("statuses {}\n", statuses.join(", ")));
    let count = |kind: &str| {
        row.error_counts
            .get(kind)
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    text.push_str(&format!(
        "socket errors: connect {}, read {}, write {}, timeout {}; unframeable responses {}\n",
        count("connect"),
        count("reset"),
        count("write"),
        count("timeout"),
        count("mismatch")
    ));
    text
}

/// The HTTP run's own fields: status counts, and in an open loop the target rate, the late
/// requests and the uncorrected latency beside the corrected one.
fn add_http_fields(row: &mut Row, plan: &LoadPlan, report: &LoadReport) {
    let mut not_ok = 0;
    for (status, &count) in report.status_counts.iter().enumerate() {
        if count > 0 {
            row.status_counts
                .insert(status.to_string(), Value::from(count));
            not_ok += count * u64::from(!(200..300).contains(&status));
        }
    }
    if not_ok > 0 {
        row.verified = false;
        row.notes.push(format!(
            "NOT VERIFIED: {not_ok} responses had a status other than 2xx"
        ));
    }
    let Some(rate) = plan.http.as_ref().and_then(|http| http.rate_per_sec) else {
        return;
    };
    row.params.insert("rate_per_sec".into(), Value::from(rate));
    row.ops_per_sec_target = Some(rate);
    row.ops_late = Some(report.late);
    row.set_latency_uncorrected(&report.latency_uncorrected_ns);
    if row.ops_per_sec < 0.95 * rate {
        row.notes.push(format!(
            "open loop fell behind: {:.0} requests/s achieved of {rate:.0} targeted ({} late); \
             latency counts from each request's due time",
            row.ops_per_sec, report.late
        ));
    }
}

impl LoadRunArgs {
    fn plan(&self, target: SocketAddr, payload_bytes: usize, mode: Mode) -> LoadPlan {
        LoadPlan {
            target,
            connections: self.connections,
            payload_bytes,
            duration: self.duration,
            warmup: self.warmup,
            threads: self.threads as usize,
            timeout: self.timeout,
            cpu: self.cpu,
            sched: self.sched,
            mode,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
        }
    }
}

impl LoadArgs {
    pub fn plan(&self) -> anyhow::Result<LoadPlan> {
        if self.mode != Mode::Stream && (self.read_rate.is_some() || self.window.is_some()) {
            anyhow::bail!(
                "--read-rate and --window shape --mode stream; ping-pong reads each echo whole \
                 before it sends the next message"
            );
        }
        let mut plan = self.run.plan(self.target, self.payload, self.mode);
        plan.read_bytes_per_sec = self.read_rate;
        plan.rcvbuf_bytes = self.rcvbuf;
        plan.window_bytes = match (self.window, self.read_rate) {
            (Some(window), _) => window,
            (None, Some(_)) => SLOW_READER_WINDOW_BYTES,
            (None, None) => STREAM_WINDOW_BYTES,
        };
        if self.mode == Mode::Stream && plan.window_bytes < self.payload as u64 {
            anyhow::bail!(
                "a stream's --window ({} bytes) must hold at least one --payload write ({} bytes)",
                plan.window_bytes,
                self.payload
            );
        }
        Ok(plan)
    }
}

impl HttpLoadArgs {
    pub fn plan(&self) -> anyhow::Result<LoadPlan> {
        let (address, host, path) = parse_target(&self.target).map_err(anyhow::Error::msg)?;
        let request = crate::net::http::request_bytes(&host, &path);
        let mut plan = self.run.plan(address, request.len(), Mode::Http);
        plan.http = Some(HttpLoad {
            request,
            rate_per_sec: self.rate,
        });
        Ok(plan)
    }
}

pub fn run_echo(args: &LoadArgs) -> anyhow::Result<ExitCode> {
    run_command(&args.plan()?, &args.run)
}

pub fn run_http(args: &HttpLoadArgs) -> anyhow::Result<ExitCode> {
    run_command(&args.plan()?, &args.run)
}

/// One load run against an external server, measured by `--server-pid` when given.
fn run_command(plan: &LoadPlan, args: &LoadRunArgs) -> anyhow::Result<ExitCode> {
    crate::progress::stop_flag();
    let mut server_meter = args.server_pid.map(ProcessMeter::new);
    let mut meter_error: Option<io::Error> = None;
    let mut server: Option<Measured> = None;
    let report = run(plan, &mut |edge| {
        let Some(meter) = server_meter.as_mut() else {
            return;
        };
        if meter_error.is_some() {
            return; // The server was gone at the window's start: nothing to stop.
        }
        let outcome = match edge {
            WindowEdge::Start => meter.start(),
            WindowEdge::Stop => meter.stop().map(|measured| server = Some(measured)),
        };
        if let Err(error) = outcome {
            meter_error.get_or_insert(error);
        }
    })?;
    if let (Some(error), Some(pid)) = (meter_error, args.server_pid) {
        return Err(error).with_context(|| format!("cannot measure server process {pid}"));
    }
    let row = load_row("external", Map::new(), 1, plan, &report, server.as_ref());
    let verified = row.verified;
    let summary =
        (plan.mode == Mode::Http && args.format == Format::Table && args.output.is_none())
            .then(|| http_summary(&row));
    let env = crate::probe::environment(std::path::Path::new("."));
    crate::output::emit(
        &Document::new(env, vec![row]),
        args.format,
        args.output.as_deref(),
    )?;
    if let Some(summary) = summary {
        print!("{summary}");
    }
    Ok(if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!("ringside: the answers were not verified (see the notes)");
        ExitCode::from(3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> LoadPlan {
        LoadPlan {
            target: SocketAddr::from(([127, 0, 0, 1], 1)),
            connections: 2,
            payload_bytes: 64,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            threads: 1,
            timeout: Duration::from_secs(1),
            cpu: None,
            sched: Sched::Other,
            mode: Mode::PingPong,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
        }
    }

    fn report(messages: u64, errors: LoadErrors) -> LoadReport {
        let mut latency_ns = crate::histogram::new_latency();
        for value in 1..=1000u64 {
            latency_ns.record(value * 1000).unwrap();
        }
        LoadReport {
            seconds: 2.0,
            messages,
            bytes: messages * 64,
            latency_ns,
            latency_uncorrected_ns: crate::histogram::new_latency(),
            status_counts: vec![0; STATUS_CODES],
            late: 0,
            errors,
            client_usage: Usage::default(),
            client_syscalls: Some(10),
            saturated_threads: 0,
        }
    }

    #[test]
    fn a_clean_run_is_verified_with_percentiles_from_the_histogram() {
        let row = load_row(
            "epoll",
            Map::new(),
            1,
            &plan(),
            &report(1000, LoadErrors::default()),
            None,
        );
        assert!(row.verified);
        assert_eq!((row.ops, row.ops_per_sec, row.errors), (1000, 500.0, 0));
        let p50 = row.latency_ns_p50.unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        assert!(row.latency_ns_max.unwrap() >= 999_000);
        assert_eq!(row.syscalls_source, "none", "no server was measured");
        assert!(row.error_counts.is_empty());
    }

    /// Goal: the histogram a row carries is the one the run recorded. Method: the row goes
    /// through its JSON form and back, and the decoded histogram must have the recorded count
    /// and the row's own p99.
    #[test]
    fn a_row_histogram_round_trips_through_json() {
        let report = report(1000, LoadErrors::default());
        let row = load_row("epoll", Map::new(), 1, &plan(), &report, None);
        assert!(
            row.latency_uncorrected_ns_histogram.is_none(),
            "closed loop"
        );
        let json = serde_json::to_string(&row).unwrap();
        let back: Row = serde_json::from_str(&json).unwrap();
        let text = back.latency_ns_histogram.as_deref().expect("a histogram");
        let histogram = crate::histogram::decode(text).unwrap();
        assert_eq!(histogram.len(), report.latency_ns.len());
        assert_eq!(histogram.len(), 1000);
        assert_eq!(Some(histogram.value_at_quantile(0.99)), row.latency_ns_p99);
    }

    #[test]
    fn one_mismatch_makes_the_run_unverified_and_is_counted_by_kind() {
        let errors = LoadErrors {
            timeout: 2,
            mismatch: 1,
            ..LoadErrors::default()
        };
        let row = load_row("epoll", Map::new(), 1, &plan(), &report(1000, errors), None);
        assert!(!row.verified);
        assert_eq!(row.errors, 3);
        assert_eq!(row.error_counts["mismatch"], 1);
        assert_eq!(row.error_counts["timeout"], 2);
        assert!(row
            .notes
            .iter()
            .any(|note| note.starts_with("NOT VERIFIED")));
    }

    #[test]
    fn a_stream_that_stalls_is_not_verified() {
        let mut plan = plan();
        plan.mode = Mode::Stream;
        let clean = load_row(
            "x",
            Map::new(),
            1,
            &plan,
            &report(1000, LoadErrors::default()),
            None,
        );
        assert!(clean.verified);
        let errors = LoadErrors {
            timeout: 1,
            ..LoadErrors::default()
        };
        let row = load_row("x", Map::new(), 1, &plan, &report(1000, errors), None);
        assert!(!row.verified);
        assert!(row
            .notes
            .iter()
            .any(|note| note.contains("1 streams stalled")));
    }

    #[test]
    fn http_rows_carry_statuses_and_open_loop_figures() {
        let mut plan = plan();
        plan.mode = Mode::Http;
        plan.http = Some(HttpLoad {
            request: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            rate_per_sec: Some(400.0),
        });
        let mut report = report(1000, LoadErrors::default());
        report.status_counts[200] = 999;
        report.status_counts[503] = 1;
        report.late = 7;
        report.latency_uncorrected_ns.record(42_000).unwrap();
        let row = load_row("epoll", Map::new(), 1, &plan, &report, None);
        assert_eq!(row.workload, "http");
        assert_eq!(row.status_counts["503"], 1);
        assert!(!row.verified, "a 503 is not a verified answer");
        assert_eq!(
            (row.ops_per_sec_target, row.ops_late),
            (Some(400.0), Some(7))
        );
        assert!(row.latency_uncorrected_ns_p99.is_some());
        let uncorrected = row.latency_uncorrected_ns_histogram.as_deref().unwrap();
        assert_eq!(crate::histogram::decode(uncorrected).unwrap().len(), 1);
        assert!(row.params.get("payload_bytes").is_none());
    }

    #[test]
    fn targets_are_http_urls() {
        let (address, host, path) = parse_target("http://127.0.0.1:8080/a?b").unwrap();
        assert_eq!(
            (address.port(), host.as_str(), path.as_str()),
            (8080, "127.0.0.1:8080", "/a?b")
        );
        assert_eq!(parse_target("http://127.0.0.1:1").unwrap().2, "/");
        assert!(parse_target("https://127.0.0.1/")
            .unwrap_err()
            .contains("http://"));
    }

    fn echo_plan(flags: &[&str]) -> anyhow::Result<LoadPlan> {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            load: LoadArgs,
        }
        let target = ["ringside", "--target", "127.0.0.1:1"];
        let command: Command = clap::Parser::try_parse_from(target.iter().chain(flags))?;
        command.load.plan()
    }

    #[test]
    fn a_slow_reader_gets_a_window_past_the_servers_send_buffer() {
        let plan = echo_plan(&["--mode", "stream", "--read-rate", "4m", "--rcvbuf", "4k"]).unwrap();
        assert_eq!(plan.read_bytes_per_sec, Some(4 << 20));
        assert_eq!(plan.rcvbuf_bytes, Some(4096));
        assert_eq!(plan.window_bytes, SLOW_READER_WINDOW_BYTES);
        let plan = echo_plan(&["--mode", "stream", "--read-rate", "4m", "--window", "1m"]).unwrap();
        assert_eq!(plan.window_bytes, 1 << 20);
        assert_eq!(
            echo_plan(&["--mode", "stream"]).unwrap().window_bytes,
            STREAM_WINDOW_BYTES
        );
    }

    #[test]
    fn stream_flags_outside_stream_mode_and_windows_below_a_write_are_refused() {
        let error = echo_plan(&["--read-rate", "1m"]).unwrap_err().to_string();
        assert!(error.contains("--mode stream"), "{error}");
        assert!(echo_plan(&["--window", "1m"]).is_err());
        let error = echo_plan(&["--mode", "stream", "--payload", "1m"]).unwrap_err();
        assert!(error.to_string().contains("--window"), "{error}");
        assert!(echo_plan(&["--mode", "stream", "--read-rate", "0"]).is_err());
    }

    #[test]
    fn zero_connections_and_empty_messages_are_refused() {
        assert!(connections_arg("0")
            .unwrap_err()
            .contains("at least one connection"));
        assert!(payload_arg("0").unwrap_err().contains("at least one byte"));
        assert_eq!(payload_arg("1k"), Ok(1024));
    }
}
