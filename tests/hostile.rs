//! Hostile conditions, against the real binary: a server out of fds, HTTP input that is not
//! HTTP, a CQ too small for the load, a seccomp filter that refuses io_uring.
//!
//! Goal: ringside survives what the machine and its clients do to it, says what happened, and
//! loses nothing: servers keep serving the connections they hold and never spin, no byte is
//! lost or answered twice, and every engine of the table gets the same test body. Methodology:
//! each test starts its own `ringside serve` children on 127.0.0.1, waits are bounded, and the
//! server's own counters (`--stats`) say which fault it met.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ringside::engines::needs::Registration;
use ringside::engines::{EngineDef, Workload};
use ringside::protocols::echo::fill_echo_message;

mod common;
use common::{for_each_engine, serves_one_at_a_time, Server};

/// One message each way, checked.
fn echo_once(stream: &mut TcpStream, connection: u64) {
    let mut message = [0u8; 100];
    fill_echo_message(&mut message, connection, 1);
    stream.write_all(&message).unwrap();
    let mut echo = [0u8; 100];
    stream.read_exact(&mut echo).unwrap();
    assert_eq!(message, echo, "connection {connection}: echo differs");
}

/// CPU seconds the threads of process `pid` have used (/proc/PID/task/*/stat, 10 ms ticks),
/// its SQPOLL thread's among them: a paused accept submits nothing while no fd is free, so the
/// poller must fall asleep too.
fn cpu_seconds(pid: u32) -> f64 {
    let mut ticks = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let Ok(stat) = std::fs::read_to_string(task.unwrap().path().join("stat")) else {
            continue; // The thread exited meanwhile.
        };
        let (_, rest) = stat.rsplit_once(')').unwrap();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime, fields 14 and 15 of stat(5); the first after the name is field 3.
        ticks += fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    }
    // SAFETY: sysconf has no preconditions.
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// The server's `--stats` file, once it has stopped.
fn stats_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Out of fds, a server must keep serving what it holds, not spin, and accept again.
///
/// Methodology: a first server of the engine says how many fds it holds idle; a second starts
/// under an fd limit of that plus `held` connections (set before it runs: a multishot accept
/// takes the limit in force when it is armed, so lowering it later with prlimit would not
/// reach it), and twice that many clients connect. The held ones must be served while the rest
/// wait in the listen queue; over one second in that state the server may use at most 20% of a
/// CPU (servers that retried accept at once used 98-100%); once the held clients leave, each
/// waiting client must be accepted and served in turn; and the server must count the accepts
/// the limit refused. `blocking` holds one connection and accepts only after it closes, so it
/// never meets the limit while serving: it must simply pass the same steps.
#[test]
fn out_of_fds_a_server_serves_what_it_holds_without_spinning_and_accepts_again() {
    for_each_engine(Workload::Echo, out_of_fds_with);
}

fn out_of_fds_with(def: &EngineDef) {
    let Some(idle) = Server::start("echo", def.name, &[]) else {
        return;
    };
    // Direct descriptors live in the ring's file table, not the process's.
    let direct = def.needs.registrations.contains(&Registration::Files);
    // One served message means the loop has made its ring or epoll instance (made after the
    // `listening on` line, so counting right after a bare connect raced with it and left the
    // limit one fd short on a loaded machine); then the connection's own fd must go.
    let mut probe = idle.connect();
    echo_once(&mut probe, 0);
    let serving = idle.open_fds();
    drop(probe);
    let base = if direct {
        serving
    } else {
        idle.open_fds_settled(serving - 1)
    };
    idle.stop();
    let held: usize = if serves_one_at_a_time(def) { 1 } else { 4 };
    let stats = tempfile::NamedTempFile::new().unwrap();
    let flags = ["--stats", stats.path().to_str().unwrap()];
    let limit = Some((base + held) as u64);
    let server = Server::start_with_fd_limit("echo", def.name, &flags, limit).unwrap();
    let mut holders: Vec<TcpStream> = (0..held).map(|_| server.connect()).collect();
    for (index, holder) in holders.iter_mut().enumerate() {
        echo_once(holder, index as u64);
    }
    let waiting: Vec<TcpStream> = (0..held * 2).map(|_| server.connect()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let before = cpu_seconds(server.pid());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_seconds(server.pid()) - before;
    let share = used / started.elapsed().as_secs_f64();
    assert!(
        share < 0.2,
        "{}: {:.0}% CPU while out of fds",
        def.name,
        share * 100.0
    );
    for (index, holder) in holders.iter_mut().enumerate() {
        echo_once(holder, index as u64);
    }
    drop(holders);
    for (index, mut client) in waiting.into_iter().enumerate() {
        echo_once(&mut client, (held + index) as u64);
    }
    server.stop();
    let refused = stats_of(stats.path())["connections_refused_fd_limit"]
        .as_u64()
        .unwrap();
    // Servers on direct descriptors hold every connection within the limit, so none has an
    // accept to refuse.
    if !serves_one_at_a_time(def) && !direct {
        assert!(refused > 0, "{}: no accept met the fd limit", def.name);
    }
}

/// Every HTTP engine, over a socket, answers arbitrary bytes exactly as the sans-IO session
/// says (the model the fuzz target checks): the same responses in the same order, nothing for
/// a request it did not receive, and a close after a closing response (garbage gets `400` and
/// a close). Methodology: proptest draws streams from the fuzz corpus's seeds and arbitrary
/// bytes, cut into writes at arbitrary points; a bounded number of cases per engine, then the
/// server must still answer a fresh request and stop cleanly.
#[test]
fn every_http_engine_answers_arbitrary_bytes_as_the_session_says() {
    for_each_engine(Workload::Http, arbitrary_bytes_with);
}

fn arbitrary_bytes_with(def: &EngineDef) {
    use proptest::test_runner::{Config, TestRunner};
    let Some(server) = Server::start("http", def.name, &[]) else {
        return;
    };
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    let cuts = proptest::collection::vec(1usize..64, 0..16);
    TestRunner::new(config)
        .run(&(request_stream(), cuts), |(input, cuts)| {
            answers_over_a_socket(&server, &input, &cuts)
        })
        .unwrap_or_else(|failure| panic!("{}: {failure}", def.name));
    answers_over_a_socket(&server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &[]).unwrap();
    server.stop();
}

/// The streams the fuzz corpus starts from (each file: a count byte, that many cut sizes, the
/// stream), cut and mixed with arbitrary bytes.
fn request_stream() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/http_request");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .filter_map(|bytes| {
            let (&count, rest) = bytes.split_first()?;
            Some(rest[usize::from(count % 16).min(rest.len())..].to_vec())
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "the fuzz corpus has seeds");
    let piece = prop_oneof![
        proptest::sample::select(seeds),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

/// Sends `input` in pieces of `cuts` on a new connection and checks the answers against the
/// session's.
fn answers_over_a_socket(
    server: &Server,
    input: &[u8],
    cuts: &[usize],
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::{prop_assert, prop_assert_eq};
    use ringside::protocols::http::{reply_to_pieces, Closing, ResponseFramer, SliceOf};
    let owed = reply_to_pieces(input, &[]);
    let mut stream = server.connect();
    let mut rest = input;
    for &cut in cuts.iter().chain(std::iter::repeat(&usize::MAX)) {
        if rest.is_empty() {
            break;
        }
        let (piece, later) = rest.split_at(cut.min(rest.len()));
        if stream.write_all(piece).is_err() {
            break; // The server closed after a closing response; its answer is on its way.
        }
        rest = later;
    }
    // The final responses owed, in order: the framer skips an interim `100 Continue`, and is
    // told where an answer to a `HEAD` (no body) comes.
    let finals: Vec<SliceOf> = owed
        .answers
        .iter()
        .copied()
        .filter(|of| of.responses() > 0)
        .collect();
    let answers_head = |of: Option<&SliceOf>| {
        matches!(
            of,
            Some(SliceOf::Head(_) | SliceOf::Closing(Closing::OkHead))
        )
    };
    let mut framer = ResponseFramer::default();
    let mut framed = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut ended = false;
    while framed.len() < finals.len() {
        let received = match stream.read(&mut buffer) {
            Ok(0) | Err(_) => {
                ended = true;
                break;
            }
            Ok(received) => received,
        };
        let mut bytes = &buffer[..received];
        while !bytes.is_empty() {
            if framer.is_idle() && answers_head(finals.get(framed.len())) {
                framer.expect_head_answer();
            }
            let (used, done) = framer.feed(bytes).expect("responses frame");
            bytes = &bytes[used..];
            framed.extend(done);
        }
    }
    prop_assert_eq!(framed.len(), finals.len(), "responses to {:?}", input);
    for (response, of) in framed.iter().zip(&finals) {
        let status = match of {
            SliceOf::Closing(closing) => closing.status(),
            _ => 200,
        };
        let close = matches!(of, SliceOf::Closing(_));
        prop_assert_eq!((response.status, response.close), (status, close));
    }
    if let Some(closing) = owed.closing {
        // Then the server closes: end of stream (or a reset, if input was left unread).
        let end = ended || matches!(stream.read(&mut buffer), Ok(0) | Err(_));
        prop_assert!(end, "the server did not close after {:?}", closing);
    } else {
        // Nothing more is owed, so nothing more may come.
        stream
            .set_read_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let extra = matches!(stream.read(&mut buffer), Ok(received) if received > 0);
        prop_assert!(!extra, "an answer to a request never sent: {:?}", input);
    }
    Ok(())
}

/// The io_uring engines with a completion queue of 8 entries under 16 streaming connections:
/// the queue must overflow (the server counts it) and every byte must come back intact (the
/// load generator checks each one); the server re-arms what the overflow ended.
#[test]
fn a_tiny_completion_queue_overflows_and_loses_no_byte() {
    let uring = |engine: &&'static EngineDef| !engine.needs.opcodes.is_empty();
    for engine in ringside::engines::engines_of(Workload::Echo).filter(uring) {
        let stats = tempfile::NamedTempFile::new().unwrap();
        let flags = [
            "--cq-entries",
            "8",
            "--stats",
            stats.path().to_str().unwrap(),
        ];
        let Some(server) = Server::start("echo", engine.name, &flags) else {
            continue;
        };
        common::assert_a_stream_verifies(&server, "4k", engine.name);
        server.stop();
        let overflows = stats_of(stats.path())["cq_overflows"].as_u64().unwrap();
        assert!(overflows > 0, "{}: the queue never overflowed", engine.name);
    }
}

/// A seccomp filter that makes io_uring_setup, io_uring_enter and io_uring_register fail with
/// EPERM (as a container runtime's default profile does), for x86-64.
#[cfg(target_arch = "x86_64")]
fn refuse_io_uring() -> std::io::Result<()> {
    const LOAD_WORD_AT: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_IF_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const JUMP_IF_ABOVE: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const ALLOW: u32 = 0x7fff_0000;
    const FAIL_WITH_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let program = [
        op(LOAD_WORD_AT, 0, 0, 4), // seccomp_data.arch
        op(JUMP_IF_EQUAL, 1, 0, AUDIT_ARCH_X86_64),
        op(RETURN, 0, 0, ALLOW),
        op(LOAD_WORD_AT, 0, 0, 0), // seccomp_data.nr
        op(JUMP_IF_AT_LEAST, 0, 2, libc::SYS_io_uring_setup as u32),
        op(JUMP_IF_ABOVE, 1, 0, libc::SYS_io_uring_register as u32),
        op(RETURN, 0, 0, FAIL_WITH_EPERM),
        op(RETURN, 0, 0, ALLOW),
    ];
    let filter = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl with the documented arguments; the program outlives both calls.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &filter) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// io_uring refused by a seccomp filter on this process only (installed in the child before it
/// runs ringside; the machine's sysctl is untouched): every io_uring engine is reported
/// unavailable with the filter named as the cause, and a study runs the others.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_seccomp_filter_that_refuses_io_uring_leaves_the_other_engines_running() {
    use std::os::unix::process::CommandExt;
    let filtered = |args: &[&str]| {
        let mut command = std::process::Command::new(common::BIN);
        command.args(args);
        // SAFETY: the hook only calls prctl, which is async-signal-safe.
        unsafe { command.pre_exec(refuse_io_uring) };
        command.output().unwrap()
    };
    let engines = filtered(&["engines", "--format", "json"]);
    assert!(engines.status.success(), "{engines:?}");
    let table: serde_json::Value = serde_json::from_slice(&engines.stdout).unwrap();
    let text = table.to_string();
    assert!(
        text.contains("seccomp filter this process runs under"),
        "{text}"
    );
    let study = "echo --engine epoll,uring --connections 1 --runs 1 --duration 200ms --warmup 0s \
                 --format json";
    let study = filtered(&study.split_whitespace().collect::<Vec<_>>());
    // uring, named, cannot run: a row that says why, epoll measured, exit 4.
    assert_eq!(study.status.code(), Some(4), "{study:?}");
    let stderr = String::from_utf8_lossy(&study.stderr);
    assert!(
        stderr.contains("uring cannot run here") && stderr.contains("seccomp"),
        "{stderr}"
    );
    assert_eq!(common::row_engines(&study.stdout), ["epoll", "uring"]);
    let document: serde_json::Value = serde_json::from_slice(&study.stdout).unwrap();
    assert_eq!(document["results"][0]["verified"], true);
    let failure = document["results"][1]["failure"].as_str().unwrap();
    assert!(failure.contains("seccomp"), "{failure}");
}

/// Requests one hostile client pipelines without reading, and the body each asks for.
const PIPELINED: usize = 4_000;
const PIPELINED_BODY: &str = "1m";
/// What a server may hold at its peak while a client pipelines `PIPELINED` requests for 1 MiB
/// bodies and never reads: its prebuilt responses (16 bodies in the batch of `200 OK`s, one in
/// the closing `200 OK`: 17 MiB, 19 MiB while they are made) and what it holds anyway (binary,
/// rings, buffer pools, stacks), twice what was measured here (peaks of 23-32 MiB, the most
/// with `uring-send-zc`). Before, epoll copied the answers to one 64 KiB receive (2,427
/// requests, 2.4 GB) into the connection's output: 1.45 GB at its peak.
const PIPELINED_RSS_MAX: u64 = 64 << 20;

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kib: u64 = line["VmHWM:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib << 10
}

/// Goal: a client that pipelines 4,000 requests for 1 MiB bodies (4 GiB of answers) and never
/// reads costs a server no more memory than its prebuilt responses, and an engine that serves
/// connections at once goes on serving the others meanwhile.
///
/// Methodology: `serve http --body-size 1m` per engine of the table; the hostile client writes
/// its 4,000 `GET`s from a thread (the server takes them as it reads) and reads nothing; once
/// they are written and the server's sends have had time to fill every buffer on the way, a
/// second client (not with `blocking`, which serves one connection at a time) must get a whole
/// 1 MiB answer, and the server's peak RSS must stay under `PIPELINED_RSS_MAX`.
#[test]
fn a_client_that_pipelines_and_never_reads_costs_bounded_memory() {
    for_each_engine(Workload::Http, pipelining_without_reading_with);
}

fn pipelining_without_reading_with(def: &EngineDef) {
    let Some(mut server) = Server::start("http", def.name, &["--body-size", PIPELINED_BODY]) else {
        return;
    };
    // An engine that registers its buffers registers the 1 MiB responses too: a plain user's
    // locked-memory limit (8 MiB on a desktop, `.ci/run`'s unprivileged pass) cannot hold them,
    // and the server says so on stderr and exits as its loop sets up its ring. That is the
    // limit's verdict, not the engine's; as root it would be a failure.
    std::thread::sleep(Duration::from_millis(200));
    if let Some(status) = server.child.try_wait().unwrap() {
        // SAFETY: geteuid(2) has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let registers = def.needs.registrations.contains(&Registration::Buffers);
        assert!(
            !root && registers,
            "{}: the server exited at start ({status})",
            def.name
        );
        common::skip(
            def.name,
            "the locked-memory limit cannot hold its registered 1 MiB responses (its sentence above)",
        );
        return;
    }
    let hostile = server.connect();
    let writer = {
        let mut hostile = hostile.try_clone().unwrap();
        let requests = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(PIPELINED);
        std::thread::spawn(move || hostile.write_all(&requests).is_ok())
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !writer.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The hostile client's receive buffer and the server's send buffer fill meanwhile.
    std::thread::sleep(Duration::from_millis(300));
    if !serves_one_at_a_time(def) {
        let mut other = server.connect();
        other
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut framer = ringside::protocols::http::ResponseFramer::default();
        let mut buffer = vec![0u8; 64 * 1024];
        let framed = loop {
            let received = other.read(&mut buffer).expect("the other client is served");
            assert!(received > 0, "{}: the other client was closed", def.name);
            let (used, done) = framer.feed(&buffer[..received]).unwrap();
            assert_eq!(used, received, "one response, nothing after it");
            if let Some(framed) = done {
                break framed;
            }
        };
        assert_eq!(
            (framed.status, framed.body_bytes),
            (200, 1 << 20),
            "{}",
            def.name
        );
    }
    let peak = peak_rss(server.pid());
    eprintln!("{}: peak RSS {} MiB", def.name, peak >> 20);
    assert!(
        peak <= PIPELINED_RSS_MAX,
        "{}: peak RSS {} MiB over the bound of {} MiB",
        def.name,
        peak >> 20,
        PIPELINED_RSS_MAX >> 20
    );
    drop(hostile);
    server.stop();
    assert!(
        writer.join().unwrap(),
        "{}: the requests were written",
        def.name
    );
}

/// Clients that push without reading, each from its own socket: eight, as many as a server's
/// pool of buffers could be spread over.
const PUSHERS: usize = 8;
/// The pushers' queues are full (the server has stopped reading them) once none of them has
/// taken a byte for this long: then the newcomer comes.
const PUSHERS_STALLED: Duration = Duration::from_millis(250);
/// The newcomer comes after this at the latest, full queues or not (a server that reads and
/// drops what it cannot answer never stalls its pushers).
const PUSHING_MAX: Duration = Duration::from_secs(2);
/// How soon the newcomer's answer must come: every engine answered in 0.04-17 ms (echo and
/// HTTP, the pushers stalled after 0.31-0.96 s and 4-15 MiB each; three runs, the slowest
/// `uring-sqpoll` HTTP at 17 ms with this file's other tests running beside it), six times
/// under this; a server that had lent its whole pool to the pushers answered nothing in 5 s.
const NEWCOMER_ANSWERED_WITHIN: Duration = Duration::from_millis(100);
/// What a server may hold at its peak meanwhile: 6-17 MiB were measured (the most with the
/// engines that keep buffer rings), under a quarter of this.
const PUSHED_RSS_MAX: u64 = 64 << 20;

/// Goal: every server stays live for everyone: while eight clients push without reading, a new
/// client is answered within 100 ms, and the server's memory stays bounded. Before, a zero-copy
/// send kept its pool buffer until a notification that a peer which never reads never lets
/// come, so eight such peers took `uring-send-zc`'s whole pool and it answered no new client
/// in 5 s. Method: `serve echo` and `serve http` per engine; the pushers write 64 KiB of echo
/// bytes, or pipelined `GET`s, from one thread without ever reading until their queues are
/// full (`PUSHERS_STALLED`, `PUSHING_MAX`), and go on while the newcomer sends one message
/// and times its whole answer. `blocking` serves one connection at
/// a time: a newcomer waits by design, so it is not concerned.
#[test]
fn a_new_client_is_answered_at_once_while_others_push_without_reading() {
    for (proto, workload) in [("echo", Workload::Echo), ("http", Workload::Http)] {
        for_each_engine(workload, |def| {
            if serves_one_at_a_time(def) {
                let reason = "it serves one connection at a time: a newcomer waits by design";
                return common::not_applicable(def.name, reason);
            }
            newcomer_beside_pushers(proto, def);
        });
    }
}

fn newcomer_beside_pushers(proto: &str, def: &EngineDef) {
    let Some(server) = Server::start(proto, def.name, &[]) else {
        return;
    };
    let chunk = match proto {
        "http" => b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2_000),
        _ => vec![b'x'; 64 << 10],
    };
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let pushers: Vec<TcpStream> = (0..PUSHERS).map(|_| server.connect()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let pushed = Arc::new(AtomicUsize::new(0));
    let pushing = {
        let (stop, pushed) = (Arc::clone(&stop), Arc::clone(&pushed));
        std::thread::spawn(move || {
            for pusher in &pushers {
                pusher.set_nonblocking(true).unwrap();
            }
            while !stop.load(Ordering::Relaxed) {
                for mut pusher in &pushers {
                    pushed.fetch_add(pusher.write(&chunk).unwrap_or(0), Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            pushers
        })
    };
    let started = Instant::now();
    let mut progress = (0, Instant::now());
    while started.elapsed() < PUSHING_MAX && progress.1.elapsed() < PUSHERS_STALLED {
        std::thread::sleep(Duration::from_millis(10));
        let now = pushed.load(Ordering::Relaxed);
        if now != progress.0 {
            progress = (now, Instant::now());
        }
    }
    let pushed_for = started.elapsed();
    let mut newcomer = server.connect();
    let answered_in = match proto {
        "http" => http_answer_time(&mut newcomer),
        _ => {
            let started = Instant::now();
            echo_once(&mut newcomer, 1);
            started.elapsed()
        }
    };
    stop.store(true, Ordering::Relaxed);
    let pushers = pushing.join().unwrap();
    let peak = peak_rss(server.pid());
    eprintln!(
        "{} {proto}: newcomer answered in {answered_in:?} beside {PUSHERS} clients that pushed \
         {} MiB each without reading (for {pushed_for:?} before it came); peak RSS {} MiB",
        def.name,
        (pushed.load(Ordering::Relaxed) / PUSHERS) >> 20,
        peak >> 20
    );
    assert!(
        answered_in <= NEWCOMER_ANSWERED_WITHIN,
        "{} {proto}: the newcomer was answered in {answered_in:?}",
        def.name
    );
    assert!(
        peak <= PUSHED_RSS_MAX,
        "{} {proto}: peak RSS {} MiB beside clients that do not read",
        def.name,
        peak >> 20
    );
    drop(pushers);
    server.stop();
}

/// Sends one `GET` on `stream` and reads its whole answer: how long that took.
fn http_answer_time(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut framer = ringside::protocols::http::ResponseFramer::default();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let received = stream.read(&mut buffer).expect("the newcomer is answered");
        assert!(received > 0, "the newcomer was closed");
        if let (_, Some(_)) = framer.feed(&buffer[..received]).unwrap() {
            return started.elapsed();
        }
    }
}
