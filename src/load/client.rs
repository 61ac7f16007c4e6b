//! One client thread of the load generator: its connections on one epoll instance, the loop
//! that drives them through the warm-up and the measured window, and what it measured. Nothing
//! is allocated inside the loop: buffers and connections are made before the warm-up.

use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::io::Errno;

use super::connection::{
    close, connect, connected, continue_send, expire, hang_up, may_send_more, receive,
    receive_http, reopen, start_message, Connection, Received,
};
use super::schedule::Schedule;
use super::slow_reader::SlowReader;
use super::{LoadErrors, LoadPlan, LoadReport, Mode, Shared};
use super::{LATE_BOUND, PHASE_CONNECTING, PHASE_DONE, PHASE_MEASURE, STATUS_CODES, WAIT_TIMEOUT};
use crate::measure::Usage;
use crate::protocols::http::{Framed, ResponseFramer};
use crate::system::epoll_wait::{empty_event, EpollWait};

/// How long a client waits at most, once the run is over, for the servers to close the
/// connections it hung up (and to send what they still owed).
const HANG_UP_WAIT: Duration = Duration::from_secs(1);
/// `HANG_UP_WAIT` once a signal stopped the run.
const HANG_UP_WAIT_STOPPED: Duration = Duration::from_millis(100);
/// Ready connections taken per `epoll_wait`.
const EVENTS_PER_WAIT: usize = 512;
/// Bytes taken per `recv`; echoes larger than this arrive in several.
const RECV_BUFFER_BYTES: usize = 64 * 1024;
/// Bytes a stream takes per `recv`: odd, so reads and writes never line up; a slow reader's
/// are small, so its pauses pace it closely.
const STREAM_READ_BYTES: usize = 65_521;
const SLOW_READ_BYTES: usize = 1499;

/// What one client thread measured is a `LoadReport` of its own connections (its CPU in
/// `client_usage`); the coordinator adds them up.
impl LoadReport {
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

    /// An open-loop send at `now` of a message due at `due`.
    fn record_send(&mut self, due: Instant, now: Instant) {
        self.sends += 1;
        self.sends_late += u64::from(now.saturating_duration_since(due) > LATE_BOUND);
    }
}

/// The body of one client thread: connect, wait for the coordinator's go, then drive the
/// connections until the window closes.
pub fn client_thread(
    plan: &LoadPlan,
    ids: std::ops::Range<usize>,
    cpu: Option<usize>,
    shared: &Shared,
) -> anyhow::Result<LoadReport> {
    let prepared = prepare_thread(plan, ids, cpu);
    // Counted before the thread says it is ready: the coordinator reads `connected` as soon as
    // every thread is, and a thread counted late would look like no connection at all.
    if let Ok((_, _, connections, _)) = &prepared {
        (shared.connected).fetch_add(connections.len(), Ordering::AcqRel);
    }
    shared.ready.fetch_add(1, Ordering::AcqRel);
    let (epoll_fd, waits, connections, connect_errors) = prepared?;
    while shared.phase.load(Ordering::Acquire) == PHASE_CONNECTING {
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut client = Client {
        plan,
        schedule: Schedule::new(plan, connections.len()),
        slow_reader: SlowReader::new(plan, connections.len()),
        epoll_fd,
        waits,
        connections,
        report: LoadReport {
            errors: LoadErrors {
                connect: connect_errors,
                ..LoadErrors::default()
            },
            ..LoadReport::empty()
        },
        scratch: vec![0u8; RECV_BUFFER_BYTES],
    };
    if client.connections.is_empty() {
        return Ok(client.report);
    }
    client.start();
    client.run(shared)?;
    Ok(client.report)
}

/// A client thread's state while it drives its connections.
struct Client<'a> {
    plan: &'a LoadPlan,
    epoll_fd: OwnedFd,
    /// The waits on `epoll_fd` (exact to the microsecond on every kernel: the open loop's
    /// schedule depends on it).
    waits: EpollWait,
    connections: Vec<Connection>,
    schedule: Option<Schedule>,
    slow_reader: Option<SlowReader>,
    report: LoadReport,
    /// Receive buffer.
    scratch: Vec<u8>,
}

impl Client<'_> {
    /// Sends every connection's first message, or in an open loop schedules it.
    fn start(&mut self) {
        for (index, connection) in self.connections.iter_mut().enumerate() {
            match self.schedule.as_mut() {
                Some(schedule) => schedule.first(connection, index),
                None => start_message(
                    connection,
                    self.plan.mode,
                    &self.epoll_fd,
                    index,
                    &mut self.report.errors,
                ),
            }
        }
    }

    /// The loop: wait for ready connections (or the next due request or paused reader), serve
    /// them, expire the ones that waited too long; until the coordinator says the window is
    /// over. The thread's CPU is read at the window's start and end, for saturation.
    fn run(&mut self, shared: &Shared) -> anyhow::Result<()> {
        let mut events = vec![empty_event(); EVENTS_PER_WAIT];
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
            if shared.past_deadline() {
                // The window's end holds even when the coordinator cannot get the CPU (a
                // real-time loop beside it): the client stops on its own clock.
                break;
            }
            let wait = self.start_due(measuring);
            let ready = match self.waits.wait(&self.epoll_fd, &mut events[..], Some(wait)) {
                Ok(ready) => ready,
                Err(Errno::INTR) => continue,
                Err(error) => return Err(anyhow::anyhow!("epoll_wait failed: {error}")),
            };
            for event in &events[..ready] {
                // Copied out: `Event` is packed on x86-64, its fields cannot be borrowed.
                let (flags, index) = (event.flags, event.data.u64() as usize);
                self.on_ready(index, flags, measuring);
            }
            if timeouts_checked.elapsed() >= WAIT_TIMEOUT {
                timeouts_checked = Instant::now();
                let errors = &mut self.report.errors;
                expire(
                    &mut self.connections,
                    &self.epoll_fd,
                    self.plan.timeout,
                    errors,
                );
            }
        }
        if let Some(start) = usage_start {
            self.report.client_usage = Usage::of_thread().since(&start);
        }
        self.report.connections_open_at_end = self.connections.iter().filter(|c| c.open).count();
        // After Ctrl-C the user is waiting: a server that owes answers and never sends them
        // may hold the exit no longer than a glance (ringside's own answer in microseconds).
        let patience = match crate::system::stop::stopped() {
            true => HANG_UP_WAIT_STOPPED,
            false => HANG_UP_WAIT,
        };
        let wait = self.plan.timeout.min(patience);
        let waits = (&self.epoll_fd, &self.waits);
        hang_up(&mut self.connections, waits, &mut self.scratch, wait);
        Ok(())
    }

    /// Sends the requests that fell due and resumes the paused readers whose pause is over;
    /// returns how long the loop may wait for readiness before the next of either.
    fn start_due(&mut self, measuring: bool) -> Duration {
        let mut wait = WAIT_TIMEOUT;
        if let Some(schedule) = self.schedule.as_mut() {
            let now = Instant::now();
            while let Some(index) = schedule.pop_due(now) {
                let connection = &mut self.connections[index];
                if connection.open {
                    connection.idle = false;
                    if measuring {
                        self.report.record_send(connection.due, Instant::now());
                    }
                    // A connection still connecting sends once it is connected.
                    if !connection.connecting {
                        let errors = &mut self.report.errors;
                        start_message(connection, self.plan.mode, &self.epoll_fd, index, errors);
                    }
                }
            }
            wait = wait.min(schedule.until_next(Instant::now()));
        }
        if let Some(reader) = self.slow_reader.as_mut() {
            let errors = &mut self.report.errors;
            let now = Instant::now();
            reader.resume_due(&mut self.connections, now, &self.epoll_fd, errors);
            wait = wait.min(reader.until_next(now));
        }
        wait
    }

    /// One ready connection: send what it may, receive what arrived, and act on it.
    fn on_ready(&mut self, index: usize, flags: EventFlags, measuring: bool) {
        let mode = self.plan.mode;
        let connection = &mut self.connections[index];
        if !connection.open {
            return;
        }
        let errors = &mut self.report.errors;
        if connection.connecting {
            // Opened again after the server closed it: its request goes out once connected
            // (in an open loop, once it is also due).
            if connected(connection, &self.epoll_fd, index, errors) && !connection.idle {
                start_message(connection, mode, &self.epoll_fd, index, errors);
            }
            return;
        }
        if flags.contains(EventFlags::OUT) {
            continue_send(connection, mode, &self.epoll_fd, index, errors);
        }
        if !flags.intersects(EventFlags::IN | EventFlags::ERR | EventFlags::HUP) {
            return;
        }
        let received = match mode {
            Mode::Http => receive_http(connection, &self.epoll_fd, &mut self.scratch, errors),
            _ => {
                let limit = match (mode, &self.slow_reader) {
                    (Mode::Stream, Some(_)) => SLOW_READ_BYTES,
                    (Mode::Stream, None) => STREAM_READ_BYTES,
                    _ => RECV_BUFFER_BYTES,
                };
                receive(
                    connection,
                    mode,
                    &self.epoll_fd,
                    &mut self.scratch[..limit],
                    errors,
                )
            }
        };
        match received {
            Received::Nothing => {}
            Received::Message(latency) => self.on_message(index, latency, measuring),
            Received::Bytes(bytes) => self.on_stream_bytes(index, bytes, measuring),
            Received::Response(framed) => self.on_response(index, framed, measuring),
            Received::Closed => self.reopen(index, measuring),
        }
    }

    /// The server closed the connection in order after an answer (HTTP/1.0, `Connection:
    /// close`, an idle timeout): a new one takes its place, as wrk's does, counted.
    fn reopen(&mut self, index: usize, measuring: bool) {
        let connection = &mut self.connections[index];
        let target = (&self.plan.target, self.plan.rcvbuf_bytes);
        if reopen(connection, target, &self.epoll_fd, index).is_err() {
            self.report.errors.connect += 1;
            close(connection, &self.epoll_fd);
            return;
        }
        if measuring {
            self.report.reconnects += 1;
        }
    }

    /// Ping-pong: the whole echo is back; the next message goes out now (closed loop, or a
    /// late open-loop message) or when it falls due.
    fn on_message(&mut self, index: usize, latency: Duration, measuring: bool) {
        let now = Instant::now();
        let connection = &mut self.connections[index];
        if measuring {
            self.report.messages += 1;
            self.report.bytes += connection.message.len() as u64;
            // An open loop counts from the due time, as HTTP's `record_response` does.
            let corrected = match self.schedule {
                Some(_) => now.duration_since(connection.due),
                None => latency,
            };
            self.report
                .latency_ns
                .saturating_record(corrected.as_nanos() as u64);
            self.report
                .latency_uncorrected_ns
                .saturating_record(latency.as_nanos() as u64);
        }
        self.next_message(index, now, measuring);
    }

    /// After an answer: the open loop's next due time, and the next message sent now when it
    /// is already due (or at once in a closed loop).
    fn next_message(&mut self, index: usize, now: Instant, measuring: bool) {
        let connection = &mut self.connections[index];
        let late = match self.schedule.as_mut() {
            Some(schedule) => schedule.next(connection, index, now),
            None => false,
        };
        if late && measuring {
            self.report.late += 1;
            self.report.record_send(connection.due, now);
        }
        if connection.open && !connection.idle && !connection.connecting {
            let errors = &mut self.report.errors;
            start_message(connection, self.plan.mode, &self.epoll_fd, index, errors);
        }
    }

    /// Stream: more echo is back and checked; a slow reader pauses, and a sender that waited
    /// for its echo to catch up goes on.
    fn on_stream_bytes(&mut self, index: usize, bytes: usize, measuring: bool) {
        if measuring {
            self.report.bytes += bytes as u64;
        }
        let connection = &mut self.connections[index];
        let errors = &mut self.report.errors;
        if let Some(reader) = self.slow_reader.as_mut() {
            let now = Instant::now();
            reader.pause(connection, index, bytes, now, &self.epoll_fd, errors);
            if !connection.open {
                return;
            }
        }
        let idle = connection.sent == connection.message.len();
        if idle && may_send_more(connection) {
            continue_send(connection, self.plan.mode, &self.epoll_fd, index, errors);
        }
    }

    /// HTTP: a whole response is framed; recorded, then the next request goes out now (closed
    /// loop, or a late open-loop request) or when it falls due.
    fn on_response(&mut self, index: usize, framed: Framed, measuring: bool) {
        let now = Instant::now();
        let connection = &mut self.connections[index];
        if measuring {
            // A closed loop sends each request the moment it is due.
            let due = match self.schedule {
                Some(_) => connection.due,
                None => connection.started,
            };
            self.report
                .record_response(framed, due, connection.started, now);
        }
        if framed.close {
            // The server said it closes after this answer: the next request goes out on a new
            // connection.
            self.reopen(index, measuring);
        }
        self.next_message(index, now, measuring);
    }
}

type Prepared = (OwnedFd, EpollWait, Vec<Connection>, u64);

/// How long connecting may take per connection, beyond one `--timeout`: a server that accepts
/// takes well under this on loopback (the handshake completes in the kernel).
const CONNECT_BUDGET_PER_CONNECTION: Duration = Duration::from_millis(1);

/// Connects this thread's connections (blocking, one after another, each within the timeout)
/// and registers them with a new epoll instance. Refused connections are counted, not fatal.
/// The whole phase is bounded too (one `--timeout` plus a millisecond per connection): against
/// a server whose accept queue is full every further connect would wait out its own timeout
/// (the SYN is dropped), 10,000 of them for hours; those not connected by then are counted as
/// connect errors without trying.
fn prepare_thread(
    plan: &LoadPlan,
    ids: std::ops::Range<usize>,
    cpu: Option<usize>,
) -> anyhow::Result<Prepared> {
    if let Some(cpu) = cpu {
        crate::system::pin::pin_current_thread(cpu)?;
    }
    plan.sched.apply_to_current_thread()?;
    let epoll_fd = epoll::create(CreateFlags::CLOEXEC)?;
    let waits = EpollWait::new(&epoll_fd)?;
    let mut connections = Vec::with_capacity(ids.len());
    let mut failed = 0;
    let deadline = Instant::now() + plan.timeout + CONNECT_BUDGET_PER_CONNECTION * ids.len() as u32;
    for id in ids {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || crate::system::stop::stopped() {
            failed += 1;
            continue;
        }
        let timeout = plan.timeout.min(left);
        let stream: TcpStream = match connect(&plan.target, timeout, plan.rcvbuf_bytes) {
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
                None => vec![0u8; plan.write_bytes()].into_boxed_slice(),
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
            connecting: false,
            window_bytes: plan.window_bytes,
            open: true,
        });
    }
    Ok((epoll_fd, waits, connections, failed))
}
