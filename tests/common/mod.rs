//! What the test files share: one loop over the engine table that every behaviour test runs
//! its body in, and a `ringside serve` child on 127.0.0.1 with its checks. Each test file uses
//! a part of it, so the parts another file leaves unused are not dead code.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ringside::engines::{engines_of, EngineDef, Workload};

pub const BIN: &str = env!("CARGO_BIN_EXE_ringside");

/// `ringside <path> --help` as the binary prints it.
pub fn help(path: &[&str]) -> String {
    let output = Command::new(BIN).args(path).arg("--help").output().unwrap();
    assert!(output.status.success(), "{path:?} --help");
    String::from_utf8(output.stdout).unwrap()
}
/// No single socket operation in these tests may block longer than this.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `body` for every engine of the table that serves `workload`, so an engine added to the
/// table is tested by every behaviour without editing a test file. An engine that cannot run
/// on this kernel is skipped with its reason; a body may skip one too (`skip`: something the
/// check needs is missing here) or pass over one the behaviour does not concern
/// (`not_applicable`); every other one must pass. One engine's failure does not hide the
/// others': the test fails at the end, naming each engine that failed, and it fails if an engine
/// of the table was neither exercised nor skipped. It ends by saying "N ran, M skipped
/// (reasons)". With `RINGSIDE_TEST_SKIPS=fail` (`.ci/run` as root), skipping an engine that
/// `ringside engines` (the probe, a process of its own) calls available is a failure too.
pub fn for_each_engine(workload: Workload, body: impl Fn(&'static EngineDef)) {
    let table: Vec<&str> = engines_of(workload).map(|engine| engine.name).collect();
    let mut accounted = Vec::new();
    let mut failed = Vec::new();
    let mut ran = 0;
    let mut skipped: Vec<(&str, String)> = Vec::new();
    let mut not_concerned: Vec<(&str, String)> = Vec::new();
    for engine in engines_of(workload) {
        accounted.push(engine.name);
        if let Err(reason) = engine.availability() {
            eprintln!("skipped {}: {reason}", engine.name);
            skipped.push((engine.name, reason));
            continue;
        }
        SKIPPED.with(|cell| cell.take());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(engine)));
        if outcome.is_err() {
            failed.push(engine.name);
        }
        match SKIPPED.with(|cell| cell.take()) {
            None => ran += 1,
            Some(Skip::Missing(reason)) => skipped.push((engine.name, reason)),
            Some(Skip::NotApplicable(reason)) => not_concerned.push((engine.name, reason)),
        }
    }
    eprintln!(
        "{}: {ran} ran, {} skipped{}{}",
        workload.name(),
        skipped.len(),
        reasons(&skipped),
        match not_concerned.len() {
            0 => String::new(),
            n => format!(", {n} not concerned{}", reasons(&not_concerned)),
        }
    );
    assert_eq!(
        accounted, table,
        "an engine of the table was never exercised"
    );
    assert!(
        failed.is_empty(),
        "failed for {failed:?} (see the panics above)"
    );
    if skips_fail() {
        let available = probed_available(workload);
        let wrongly: Vec<&str> = skipped
            .iter()
            .map(|(engine, _)| *engine)
            .filter(|engine| available.iter().any(|name| name == engine))
            .collect();
        assert!(
            wrongly.is_empty(),
            "{SKIPS}=fail: skipped {wrongly:?}, which `ringside engines` calls available here"
        );
    }
}

/// Why a body did not check its engine.
enum Skip {
    /// Something the check needs is missing here (root, a kernel feature, a tool).
    Missing(String),
    /// The behaviour does not concern this engine (by its design, not this machine).
    NotApplicable(String),
}

thread_local! {
    /// What the body `for_each_engine` runs (on this thread) said about its engine.
    static SKIPPED: std::cell::Cell<Option<Skip>> = const { std::cell::Cell::new(None) };
}

/// The check of `engine` cannot run here, for `reason`: said on stderr and counted as skipped
/// by `for_each_engine` (a failure under `RINGSIDE_TEST_SKIPS=fail` when the probe calls the
/// engine available).
pub fn skip(engine: &str, reason: &str) {
    eprintln!("skipped {engine}: {reason}");
    SKIPPED.with(|cell| cell.set(Some(Skip::Missing(reason.to_string()))));
}

/// The behaviour does not concern `engine` (e.g. a pool's fairness, for an engine without a
/// pool): counted apart from the skips, never a failure.
pub fn not_applicable(engine: &str, reason: &str) {
    SKIPPED.with(|cell| cell.set(Some(Skip::NotApplicable(reason.to_string()))));
    let _ = engine;
}

/// The environment variable that makes a skipped available engine fail the test.
pub const SKIPS: &str = "RINGSIDE_TEST_SKIPS";

fn skips_fail() -> bool {
    std::env::var(SKIPS).is_ok_and(|value| value == "fail")
}

fn reasons(engines: &[(&str, String)]) -> String {
    if engines.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = engines
        .iter()
        .map(|(engine, reason)| format!("{engine}: {reason}"))
        .collect();
    format!(" ({})", listed.join("; "))
}

/// The engines of `workload` that `ringside engines` calls available: the probe, asked once
/// per test binary in a process of its own.
fn probed_available(workload: Workload) -> Vec<String> {
    static LISTING: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let listing = LISTING.get_or_init(|| {
        let output = Command::new(BIN)
            .args(["engines", "--format", "json"])
            .output()
            .expect("run ringside engines");
        assert!(output.status.success(), "ringside engines: {output:?}");
        serde_json::from_slice(&output.stdout).expect("the engines as JSON")
    });
    listing
        .as_array()
        .expect("a list of engines")
        .iter()
        .filter(|entry| entry["workload"] == workload.name() && entry["available"] == true)
        .filter_map(|entry| entry["engine"].as_str().map(str::to_string))
        .collect()
}

/// Engines that serve one connection at a time by design (the rest wait in the backlog), so
/// behaviours that need concurrent clients use one client with them, or none.
pub fn serves_one_at_a_time(engine: &EngineDef) -> bool {
    engine.serving == ringside::engines::Serving::OneAtATime
}

/// A `ringside serve <proto>` child, killed when dropped.
pub struct Server {
    pub child: Child,
    pub address: SocketAddr,
}

impl Server {
    /// Starts `ringside serve <proto> --engine <engine>` with `extra` flags after the usual
    /// ones, or returns None (and says why) when the engine cannot run on this kernel.
    pub fn start(proto: &str, engine: &str, extra: &[&str]) -> Option<Server> {
        Server::start_with_fd_limit(proto, engine, extra, None)
    }

    /// `start`, with RLIMIT_NOFILE (soft and hard) set to `fd_limit` before the server runs,
    /// so every accept it arms sees that limit.
    pub fn start_with_fd_limit(
        proto: &str,
        engine: &str,
        extra: &[&str],
        fd_limit: Option<u64>,
    ) -> Option<Server> {
        let workload = if proto == "http" {
            Workload::Http
        } else {
            Workload::Echo
        };
        let def = ringside::engines::find(workload, engine).unwrap();
        if let Err(reason) = def.availability() {
            skip(engine, &reason);
            return None;
        }
        let mut command = Command::new(BIN);
        command
            .args(["serve", proto, "--quiet", "--listen", "127.0.0.1:0"])
            .args(["--engine", engine])
            .args(extra)
            .stdout(Stdio::piped());
        if let Some(limit) = fd_limit {
            limit_fds(&mut command, limit, limit);
        }
        let mut child = command.spawn().expect("start the server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        Some(Server { child, address })
    }

    /// A client connection with bounded waits and no Nagle delay, so that each small write
    /// leaves as its own segment.
    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect_timeout(&self.address, IO_TIMEOUT).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// Waits, bounded, for the server to close what it had open beyond `before` fds; returns
    /// how many it has open then. A server closes its ends as it notices its clients went.
    pub fn open_fds_settled(&self, before: usize) -> usize {
        let deadline = Instant::now() + IO_TIMEOUT;
        let mut after = self.open_fds();
        while after > before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            after = self.open_fds();
        }
        after
    }

    /// What each open fd of the server is (for the message of a failed fd check).
    pub fn fd_targets(&self) -> Vec<String> {
        let dir = format!("/proc/{}/fd", self.pid());
        let mut targets: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .map(|target| target.display().to_string())
            .collect();
        targets.sort();
        targets
    }

    /// Asserts the server still runs, then stops it with SIGTERM and checks it exits cleanly.
    pub fn stop(mut self) {
        assert!(self.child.try_wait().unwrap().is_none(), "the server died");
        terminate(&mut self.child);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "server exit {status}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Makes closing `stream` send a reset (SO_LINGER 0) instead of a FIN.
pub fn linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt with a valid linger struct on a socket we own.
    let result = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(result, 0);
}

/// Sends SIGTERM and waits, bounded, for the child to exit.
fn terminate(child: &mut Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + IO_TIMEOUT;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server did not stop within {IO_TIMEOUT:?} of SIGTERM");
}

/// Environment variable that marks every process a test case starts (children inherit it), so
/// the case can find any it left behind, even one its parent orphaned.
pub const CASE_MARK: &str = "RINGSIDE_TEST_CASE";

/// The live processes (other than zombies) whose environment carries `CASE_MARK=mark`.
pub fn processes_marked(mark: &str) -> Vec<u32> {
    let needle = format!("{CASE_MARK}={mark}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie
                && environ
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
        })
        .collect()
}

/// Waits, bounded, until no process marked `mark` is left; returns those still there.
pub fn processes_left(mark: &str) -> Vec<u32> {
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        let left = processes_marked(mark);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Makes `command` run with RLIMIT_NOFILE `soft` and `hard`, set before it starts.
pub fn limit_fds(command: &mut Command, soft: u64, hard: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook only calls setrlimit, which is async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
}

/// The engines of a results document's rows, in order.
pub fn row_engines(document: &[u8]) -> Vec<String> {
    let document: serde_json::Value = serde_json::from_slice(document).unwrap();
    document["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["engine"].as_str().unwrap().to_string())
        .collect()
}

/// `load echo --mode stream` with the slow reader, for 1.5 s, through a 64 KiB SO_RCVBUF.
///
/// Not smaller: a zero-copy sender (`uring-send-zc`) charges a whole page of socket memory to
/// each fragment, so 1000-byte echoes arrive at about 5 bytes of truesize per byte of payload,
/// and the receiver's window shrinks to that share of its buffer. With a 4 KiB SO_RCVBUF
/// (8 KiB after the kernel doubles it) the window fell to 1000 or 2000 bytes, below the
/// sender's MSS (half the largest window it had seen, 2048): TCP then sends nothing but a
/// zero-window probe every 200 ms (`ss -tmi`: persist timer, snd_wnd 1000, the reader's
/// Recv-Q 0), 40 KiB in 1.5 s, in 1 run of 6 on a quiet machine. With 64 KiB the window
/// stays above the MSS (0 stalls in 55 runs under load) and the server's sends still go
/// short (epoll, strace: 17 of 646 sends short, 21 EAGAIN).
pub fn slow_reader_stream(address: SocketAddr, connections: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["load", "echo", "--mode", "stream", "--read-rate", "4m"])
        .args([
            "--rcvbuf",
            "64k",
            "--connections",
            connections,
            "--payload",
            "1000",
        ])
        .args(["--duration", "1500ms", "--warmup", "0s", "--format", "json"])
        .args(["--target", &address.to_string()])
        .output()
        .unwrap()
}

/// Streams `payload`-byte messages on 16 connections for 1 s from the load generator to
/// `server`, every byte checked, and asserts the run succeeded and verified.
pub fn assert_a_stream_verifies(server: &Server, payload: &str, engine: &str) {
    let output = Command::new(BIN)
        .args(["load", "echo", "--mode", "stream", "--connections", "16"])
        .args(["--payload", payload, "--duration", "1s", "--warmup", "0s"])
        .args(["--format", "json", "--target", &server.address.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{engine}: {output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["results"][0]["verified"], true, "{engine}");
}

/// The row of one `ringside load echo` run against `server` with `args`.
pub fn load_echo(server: &Server, args: &[&str]) -> serde_json::Value {
    let target = server.address.to_string();
    let mut all = vec!["--target", target.as_str()];
    all.extend_from_slice(args);
    load_row("echo", &all)
}

/// The row of one `ringside load <workload>` run with `args` (its JSON document's first
/// result), the run asserted to have succeeded.
pub fn load_row(workload: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(BIN)
        .args(["load", workload, "--format", "json"])
        .args(args)
        .env("RINGSIDE_NO_PERF", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "load {workload} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    document["results"][0].clone()
}
