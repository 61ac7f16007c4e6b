//! SIGINT keeps what was measured: a study interrupted mid-window keeps that run as a row
//! marked partial (its figures over the seconds that ran, its answers verified), and one
//! interrupted before any window opened says plainly that nothing was measured. Before, SIGINT
//! 5 s into `echo -d 10s` kept nothing and printed "the results above cover the runs that
//! finished" above nothing.

mod common;

use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::IO_TIMEOUT;
use common::{
    for_each_engine, not_applicable, processes_left, processes_marked, Server, BIN, CASE_MARK,
};
use ringside::engines::Workload;
use ringside::model::summary::FLOOR;

/// Starts `ringside echo` with `args` in a process group of its own, sends SIGINT to the whole
/// group `after` its first server appeared (as Ctrl-C in a terminal does), and returns what it
/// printed.
fn interrupt_echo(mark: &str, args: &[&str], after: Duration) -> Output {
    let child = Command::new(BIN)
        .arg("echo")
        .args(args)
        .args(["-e", "epoll", "-c", "1", "--format", "json"])
        .env(CASE_MARK, mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while processes_marked(mark).len() < 2 {
        assert!(started.elapsed() < IO_TIMEOUT, "no server started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    // SAFETY: kill(2) on the process group this test's child leads.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    let output = child.wait_with_output().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_left(mark).is_empty() {
        assert!(Instant::now() < deadline, "a server was left");
        std::thread::sleep(Duration::from_millis(20));
    }
    output
}

/// Goal: Ctrl-C 4 s into a 10 s window keeps that run. Method: `echo -d 10s --warmup 0s`, SIGINT
/// to its group 4 s after its server started; the one row must say partial, cover 2-9 s, be
/// verified with no errors (the server, in a group of its own, served until the load stopped).
#[test]
fn sigint_mid_window_keeps_the_run_marked_partial() {
    let output = interrupt_echo(
        "signals-mid-window",
        &["-d", "10s", "--warmup", "0s", "--runs", "1"],
        Duration::from_secs(4),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cut short (marked partial)"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{stderr}");
    let row = &rows[0];
    let seconds = row["seconds"].as_f64().unwrap();
    assert!((2.0..9.0).contains(&seconds), "{seconds} s");
    assert!(row["ops"].as_u64().unwrap() > 0);
    assert_eq!(row["verified"], true, "{row}");
    assert_eq!(row["errors"], 0, "{row}");
    let notes = row["notes"].to_string();
    assert!(notes.contains("partial: a signal"), "{notes}");
    assert!(notes.contains("of its 10.0 s window") || notes.contains("10.0 s window"));
}

/// Goal: Ctrl-C before any window opened says so instead of pointing at results that are not
/// there. Method: SIGINT during a 5 s warm-up.
#[test]
fn sigint_before_any_window_says_nothing_was_measured() {
    let output = interrupt_echo(
        "signals-warmup",
        &["-d", "2s", "--warmup", "5s"],
        Duration::from_secs(1),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted before any run finished: nothing was measured"),
        "{stderr}"
    );
    assert!(!stderr.contains("the results above"), "{stderr}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["results"].as_array().unwrap().len(), 0);
}

/// How soon after SIGINT a process waiting in the kernel must have exited (issue 32: "Ctrl-C
/// ends a kernel wait within a bounded time").
const STOP_BOUND: Duration = Duration::from_secs(1);

/// Sends SIGINT to `child` and waits for it to exit, at most `IO_TIMEOUT` (killing it then);
/// returns the time from the signal to its exit, and its exit code.
fn interrupt_and_time(child: &mut Child) -> (Duration, Option<i32>) {
    let signalled = Instant::now();
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (signalled.elapsed(), status.code());
        }
        if signalled.elapsed() > IO_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return (signalled.elapsed(), None);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Clients that leave a server waiting in the kernel: idle connections, one with half a
/// message, and one that sends without ever reading until the server's sends block.
fn silent_clients(server: &common::Server, proto: &str) -> Vec<TcpStream> {
    let mut held = Vec::new();
    let flood = server.connect();
    flood.set_nonblocking(true).unwrap();
    let chunk = match proto {
        "http" => b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000),
        _ => vec![b'x'; 64 * 1024],
    };
    // Sends until the socket took nothing for 300 ms: the server's sends are blocked then.
    let mut blocked_since = Instant::now();
    while blocked_since.elapsed() < Duration::from_millis(300) {
        match (&flood).write(&chunk) {
            Ok(_) => blocked_since = Instant::now(),
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(error) => panic!("the flooding client: {error}"),
        }
    }
    held.push(flood);
    for _ in 0..3 {
        held.push(server.connect());
    }
    let half = if proto == "http" { "GET / HT" } else { "abc" };
    held[1].write_all(half.as_bytes()).unwrap();
    held
}

/// Goal: Ctrl-C stops `ringside serve` within `STOP_BOUND` whatever its clients do, in every
/// server engine, and the server's exit is its normal end (0: a signal is how a server's run
/// ends). Method: every engine of the table, echo and http, with `silent_clients` connected
/// (idle, half a message, and a peer whose unread answers fill the socket: a blocking send,
/// a readiness that never comes, a zero-copy notification the kernel holds), SIGINT, the time
/// to exit measured; the times are printed for bench/reliability.md.
#[test]
fn every_server_engine_stops_within_a_second_of_sigint_whatever_its_clients_do() {
    for (workload, proto) in [(Workload::Echo, "echo"), (Workload::Http, "http")] {
        for_each_engine(workload, |engine| {
            let Some(mut server) = Server::start(proto, engine.name, &[]) else {
                return;
            };
            let clients = silent_clients(&server, proto);
            std::thread::sleep(Duration::from_millis(200));
            let (took, code) = interrupt_and_time(&mut server.child);
            eprintln!(
                "serve {proto} {}: exited {took:?} after SIGINT",
                engine.name
            );
            assert!(took <= STOP_BOUND, "{}: {took:?}", engine.name);
            assert_eq!(code, Some(0), "{}", engine.name);
            drop(clients);
        });
    }
}

/// A listener on 127.0.0.1 that never answers: with `accepting`, a thread accepts and holds
/// every connection without reading; without, nothing accepts and the listen queue (one
/// entry) fills, so further connects wait for a SYN-ACK that never comes.
fn never_answering(accepting: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    if !accepting {
        // listen(2) again sets the queue's length: 0 holds one connection.
        // SAFETY: listen on a socket this test owns.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
        // Open as long as the test process: nothing ever accepts from it.
        std::mem::forget(listener);
        return address;
    }
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept() {
            held.push(stream);
        }
    });
    address
}

/// Goal: Ctrl-C stops `ringside load` within `STOP_BOUND` against a server that never
/// answers, whether it accepted (clients wait for echoes and answers) or not (connects wait
/// for a SYN-ACK; each waited for its whole `--timeout` before), exiting 130. Method: echo
/// (closed loop) and http (open loop at 100/s), 8 connections, `--timeout 20s`, against each
/// kind of silent server, SIGINT 1.5 s in.
#[test]
fn load_stops_within_a_second_of_sigint_against_a_server_that_never_answers() {
    for accepting in [true, false] {
        let address = never_answering(accepting);
        for (proto, extra) in [("echo", &[][..]), ("http", &["--rate", "100"][..])] {
            let target = match proto {
                "http" => format!("http://{address}/"),
                _ => address.to_string(),
            };
            let mut child = Command::new(BIN)
                .args([
                    "load",
                    proto,
                    "--target",
                    &target,
                    "-c",
                    "8",
                    "--timeout",
                    "20s",
                ])
                .args(["--warmup", "0s", "-d", "30s"])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            let (took, code) = interrupt_and_time(&mut child);
            let what = format!(
                "load {proto} against a server that never answers (accepting: {accepting})"
            );
            eprintln!("{what}: exited {took:?} after SIGINT");
            assert!(took <= STOP_BOUND, "{what}: {took:?}");
            assert_eq!(code, Some(130), "{what}");
        }
    }
}

/// Goal: Ctrl-C stops a study within `STOP_BOUND` in every engine of the table, in the middle
/// of its waits, exiting 130 with no process and no scratch file left. A file engine waits on
/// its device: a read or write issued there cannot be cancelled (the kernel completes it, and
/// its buffer must outlive it), so the bound holds while the operations in flight complete
/// within it (here microseconds to a few milliseconds each). Method: each engine of `fs write`
/// (O_DIRECT), `fs cycle` (every page written, fsynced and read back), `fs read` (O_DIRECT),
/// `echo` and `http` given a run of 30 s it would not reach, SIGINT 1.5 s in, the time from the
/// signal to the exit printed for bench/reliability.md.
#[test]
fn every_study_stops_within_a_second_of_sigint_in_every_engine() {
    let studies: [(Workload, &[&str]); 5] = [
        (
            Workload::FsWrite,
            &[
                "fs",
                "write",
                "--size",
                "128m",
                "--direct",
                "--runtime",
                "30s",
            ],
        ),
        (Workload::FsCycle, &["fs", "cycle", "--size", "64m"]),
        (
            Workload::FsRead,
            &[
                "fs",
                "read",
                "--size",
                "256m",
                "--direct",
                "--runtime",
                "30s",
            ],
        ),
        (
            Workload::Echo,
            &["echo", "-c", "4", "-d", "30s", "--warmup", "0s"],
        ),
        (
            Workload::Http,
            &["http", "-c", "4", "-d", "30s", "--warmup", "0s"],
        ),
    ];
    for (workload, args) in studies {
        for_each_engine(workload, |engine| {
            if engine.name == FLOOR {
                // Its runs took 9-47 ms each here (5 depths), so the study could end between
                // the check that it runs and the signal: exit 0 in 3 runs of 18 whose output
                // was kept. It is uring-ring's loop with NOPs, and uring-ring's stop is tested.
                return not_applicable(
                    engine.name,
                    "the NOP floor does no I/O; its study may end first",
                );
            }
            let dir = tempfile::tempdir().unwrap();
            let mark = format!("signals-{}-{}", workload.name(), engine.name);
            let mut child = Command::new(BIN)
                .args(args)
                .args(["-e", engine.name, "-r", "1", "--format", "json"])
                .current_dir(dir.path())
                .env("TMPDIR", dir.path())
                .env(CASE_MARK, &mark)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            in_its_run(&mut child, workload);
            let (took, code) = interrupt_and_time(&mut child);
            let what = format!("{} {}", workload.name(), engine.name);
            eprintln!("{what}: exited {took:?} after SIGINT");
            assert!(took <= STOP_BOUND, "{what}: {took:?}");
            assert_eq!(code, Some(130), "{what}");
            assert!(
                processes_left(&mark).is_empty(),
                "{what}: a process was left"
            );
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(left.is_empty(), "{what}: a scratch file was left: {left:?}");
        });
    }
}

/// Waits until `child`'s run is under way: a file study's run has a thread of its own, which
/// appears once the data is made and laid out (seconds); then 100 ms into it. A network study
/// starts its window at once (`--warmup 0s`): 1.5 s in.
fn in_its_run(child: &mut Child, workload: Workload) {
    let started = Instant::now();
    if workload.is_network() {
        std::thread::sleep(Duration::from_millis(1500));
    } else {
        let tasks = format!("/proc/{}/task", child.id());
        while std::fs::read_dir(&tasks).map_or(0, Iterator::count) < 2 {
            assert!(started.elapsed() < IO_TIMEOUT, "no run started");
            assert!(child.try_wait().unwrap().is_none(), "exited before its run");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "finished before the signal"
    );
}

/// Goal: Ctrl-C while a file study makes and lays out its data (seconds for a large --size)
/// ends it within `STOP_BOUND` with 130 and no scratch file. Before, the handler was installed
/// only when the runs began, so the signal killed the process and left the scratch directory.
/// Method: `fs write --size 1g` and `fs read --size 1g`, SIGINT 1 s in, before their runs.
#[test]
fn sigint_while_a_file_study_lays_out_its_file_leaves_nothing() {
    for study in [["fs", "write"], ["fs", "read"]] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args(study)
            .args(["--size", "1g", "-e", "blocking", "--format", "json"])
            .current_dir(dir.path())
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(1));
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap();
        assert_eq!(tasks.count(), 1, "{study:?}: its run began already");
        let (took, code) = interrupt_and_time(&mut child);
        eprintln!("{study:?} laying out: exited {took:?} after SIGINT");
        assert!(took <= STOP_BOUND, "{study:?}: {took:?}");
        assert_eq!(code, Some(130), "{study:?}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(
            left.is_empty(),
            "{study:?}: a scratch file was left: {left:?}"
        );
    }
}
