//! The network path beyond loopback (`--network veth`): the study runs across two namespaces
//! joined by a veth pair, records the path, and leaves nothing behind, also when interrupted.
//! These tests need root (they skip, saying so, without it).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ringside");

/// A short measured window after a 100 ms warm-up: the tests check behaviour, not speed.
fn short_window(duration: &str) -> [&str; 4] {
    ["--duration", duration, "--warmup", "100ms"]
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: --network veth needs root");
    }
    root
}

/// The namespaces a ringside process `pid` made that still exist.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("ringside-{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Goal: a veth study measures across the pair and removes it. Method: a small echo study on
/// veth and an HTTP one on veth shaped by tbf; every row verified and naming the path and its
/// shaping; no namespace of the process left.
#[test]
fn a_veth_study_records_its_path_and_leaves_nothing_behind() {
    if !is_root() {
        return;
    }
    for (study, shaping) in [("echo", "--idle=default"), ("http", "--link-rate=1gbit")] {
        let child = Command::new(BIN)
            .args([
                study,
                "--network",
                "veth",
                shaping,
                "--engine",
                "epoll",
                "-c",
                "2",
            ])
            .args(["--runs", "1"])
            .args(short_window("300ms"))
            .args(["--format", "json", "--quiet"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{study}: {output:?}");
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let rows = document["results"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{study}");
        assert_eq!(rows[0]["verified"], true, "{study}: {}", rows[0]);
        assert_eq!(rows[0]["params"]["network"], "veth", "{study}");
        if study == "http" {
            assert_eq!(rows[0]["params"]["rate_bits_per_sec"], 1_000_000_000u64);
        }
        assert!(rows[0]["ops"].as_u64().unwrap() > 0);
        assert_eq!(namespaces_of(pid), Vec::<String>::new(), "{study}");
    }
}

/// Goal: Ctrl-C in the middle of a veth study loses nothing and leaves nothing. Method: SIGINT
/// once the namespaces exist; the study exits 130 and both namespaces (with the pair) are gone.
#[test]
fn an_interrupted_veth_study_removes_its_namespaces() {
    if !is_root() {
        return;
    }
    let mut child = Command::new(BIN)
        .args(["echo", "--network", "veth", "--engine", "epoll", "-c", "1"])
        .args(["--runs", "20"])
        .args(short_window("500ms"))
        .args(["--format", "json", "--quiet"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_of(pid).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(namespaces_of(pid).len(), 2, "the study made its namespaces");
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the study did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// Goal: shaping flags get a clear sentence where they cannot work. Method: --rtt on loopback
/// is refused; on veth it either runs or names the missing qdisc; nothing is left either way.
#[test]
fn shaping_is_refused_with_a_reason_where_it_cannot_work() {
    let output = Command::new(BIN)
        .args(["echo", "--rtt", "200us", "--engine", "epoll", "--quiet"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--network veth"), "{stderr}");
    if !is_root() {
        return;
    }
    let child = Command::new(BIN)
        .args([
            "echo",
            "--network",
            "veth",
            "--rtt",
            "200us",
            "--loss",
            "0.1%",
        ])
        .args(["--engine", "epoll", "-c", "1", "--runs", "1"])
        .args(short_window("300ms"))
        .args(["--quiet"])
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["results"][0]["params"]["rtt_us"], 200);
    } else {
        assert!(stderr.contains("netem"), "{stderr}");
    }
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
}

/// Network namespaces standing in for hosts: a server host with one veth pair to each load
/// host (198.18.0.0/30 and 198.18.0.4/30, no route elsewhere), removed when dropped.
struct Hosts {
    names: Vec<String>,
}

impl Hosts {
    fn create() -> Hosts {
        let pid = std::process::id();
        let hosts = Hosts {
            names: ["server", "load-a", "load-b"]
                .map(|name| format!("ringside-test-{pid}-{name}"))
                .to_vec(),
        };
        for name in &hosts.names {
            ip(&["netns", "add", name]);
            ip(&["-n", name, "link", "set", "lo", "up"]);
        }
        let server = &hosts.names[0];
        for (index, load) in hosts.names[1..].iter().enumerate() {
            let (near, far) = (format!("to-load{index}"), format!("to-server{index}"));
            ip(&[
                "-n", server, "link", "add", "name", &near, "type", "veth", "peer", "name", &far,
                "netns", load,
            ]);
            let base = 4 * index;
            ip(&[
                "-n",
                server,
                "addr",
                "add",
                &format!("198.18.0.{}/30", base + 1),
                "dev",
                &near,
            ]);
            ip(&[
                "-n",
                load,
                "addr",
                "add",
                &format!("198.18.0.{}/30", base + 2),
                "dev",
                &far,
            ]);
            ip(&["-n", server, "link", "set", &near, "up"]);
            ip(&["-n", load, "link", "set", &far, "up"]);
        }
        hosts
    }

    /// A command run on host `index` (0: the server).
    fn command(&self, index: usize) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.names[index], BIN]);
        command
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().unwrap();
    assert!(status.success(), "ip {args:?}");
}

/// Goal: loads on several hosts at once merge into exactly their sum. Method: a server host
/// and two load hosts (network namespaces when root, else all on loopback); both loads start
/// their windows at the same `--start-at`; the merge's operations are the sum of the hosts',
/// and its p99 is the p99 of both histograms' samples together. Then the refusals: a load with
/// another payload, and one whose window is elsewhere in time.
#[test]
fn loads_on_two_hosts_merge_into_their_sum() {
    let hosts = is_root().then(Hosts::create);
    let mut server_command = match &hosts {
        Some(hosts) => hosts.command(0),
        None => Command::new(BIN),
    };
    let listen = if hosts.is_some() {
        "0.0.0.0:0"
    } else {
        "127.0.0.1:0"
    };
    server_command.args([
        "serve", "echo", "--engine", "epoll", "--quiet", "--listen", listen,
    ]);
    let server = ServerChild::start(server_command);
    let port = server.address.rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let start_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0;
    let load = |index: usize, payload: &str, start: f64| {
        let (mut command, target) = match &hosts {
            Some(hosts) => (
                hosts.command(index),
                format!("198.18.0.{}:{port}", 4 * (index - 1) + 1),
            ),
            None => (Command::new(BIN), format!("127.0.0.1:{port}")),
        };
        let file = dir
            .path()
            .join(format!("host{index}-{payload}-{start}.json"));
        command
            .args([
                "load",
                "echo",
                "--target",
                &target,
                "-c",
                "4",
                "--payload",
                payload,
            ])
            .args(short_window("500ms"))
            .args(["--format", "json"])
            .arg(format!("--start-at=@{start}"))
            .arg("--output")
            .arg(&file)
            .spawn()
            .map(|child| (child, file))
            .unwrap()
    };
    let runs = [
        load(1, "64", start_at),
        load(2, "64", start_at),
        load(2, "100", start_at),
    ];
    let files: Vec<std::path::PathBuf> = runs
        .into_iter()
        .map(|(mut child, file)| {
            assert!(child.wait().unwrap().success());
            file
        })
        .collect();
    // A window well after the others': the same load, started later.
    let (mut late, late_file) = load(1, "64", start_at + 4.0);
    assert!(late.wait().unwrap().success());
    drop(server);
    drop(hosts);

    let merged = dir.path().join("all.json");
    let status = Command::new(BIN)
        .arg("merge")
        .args(&files[..2])
        .arg("-o")
        .arg(&merged)
        .status()
        .unwrap();
    assert!(status.success());
    let read = |path: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let (a, b, all) = (read(&files[0]), read(&files[1]), read(&merged));
    let (a, b, all) = (&a["results"][0], &b["results"][0], &all["results"][0]);
    for row in [a, b, all] {
        assert_eq!(row["verified"], true, "{row}");
    }
    let ops = |row: &serde_json::Value| row["ops"].as_u64().unwrap();
    assert!(ops(a) > 0 && ops(b) > 0);
    assert_eq!(ops(all), ops(a) + ops(b));
    assert_eq!(all["params"]["connections"], 8);
    let histogram = |row: &serde_json::Value| {
        ringside::stats::histogram::decode(row["latency_ns_histogram"].as_str().unwrap()).unwrap()
    };
    let mut samples = histogram(a);
    samples.add(histogram(b)).unwrap();
    assert_eq!(samples.len(), histogram(all).len());
    assert_eq!(all["latency_ns_p99"], samples.value_at_quantile(0.99));

    let refused = |other: &std::path::Path, needle: &str| {
        let output = Command::new(BIN)
            .arg("merge")
            .arg(&files[0])
            .arg(other)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{stderr}");
    };
    refused(&files[2], "payload_bytes differs");
    refused(&late_file, "--start-at");
}

/// A `ringside serve` child and where it listens; killed when dropped (a failed test leaves
/// no server behind).
struct ServerChild {
    child: std::process::Child,
    address: String,
}

impl ServerChild {
    fn start(mut command: Command) -> ServerChild {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_string();
        ServerChild { child, address }
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.child.wait().unwrap()
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The stats `serve --stats` wrote.
fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `serve echo` with `engine`'s two loops on CPUs 0 and 1, writing its stats to `stats`.
fn two_loops(engine: &str, stats: &std::path::Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "serve",
            "echo",
            "--engine",
            engine,
            "--threads",
            "2",
            "--cpu",
            "0-1",
        ])
        .args(["--listen", "127.0.0.1:0", "--quiet", "--stats"])
        .arg(stats);
    command
}

/// A short verified echo load of `connections` on two threads against `target`.
fn two_load_threads(target: &str, connections: usize) -> std::process::Output {
    Command::new(BIN)
        .args(["load", "echo", "--target", target, "-t", "2", "-c"])
        .arg(connections.to_string())
        .args(short_window("300ms"))
        .args(["--format", "json"])
        .output()
        .unwrap()
}

/// Goal: `serve --threads 2` runs two pinned loops that both serve, for every event-loop engine.
/// Method: two loops on CPUs 0 and 1, two load threads with
/// 16 connections; the load verifies every byte, and the server's per-loop counters show that
/// each loop accepted connections and echoed bytes (SO_REUSEPORT spread them).
#[test]
fn two_server_threads_each_serve_their_share() {
    let dir = tempfile::tempdir().unwrap();
    for engine in ringside::engines::engines_of(ringside::engines::Workload::Echo) {
        if !ringside::studies::serve::runs_event_loops(engine) {
            continue;
        }
        if let Err(reason) = engine.availability() {
            eprintln!("skipped {}: {reason}", engine.name);
            continue;
        }
        let stats = dir.path().join(format!("{}.json", engine.name));
        let server = ServerChild::start(two_loops(engine.name, &stats));
        let load = two_load_threads(&server.address, 16);
        assert!(server.stop().success(), "{}", engine.name);
        assert!(load.status.success(), "{}: {load:?}", engine.name);
        let stats = read_json(&stats);
        let loops = stats["threads"].as_array().unwrap();
        assert_eq!(loops.len(), 2, "{}", engine.name);
        for (index, one) in loops.iter().enumerate() {
            assert_eq!(one["cpu"], index, "{}", engine.name);
            assert!(
                one["connections_accepted"].as_u64().unwrap() > 0,
                "{}: {stats}",
                engine.name
            );
            assert!(
                one["bytes_sent"].as_u64().unwrap() > 0,
                "{}: {stats}",
                engine.name
            );
        }
        assert_eq!(stats["connections_accepted"], 16, "{}", engine.name);
    }
}

/// Runs ringside with `args`, which it must refuse with a sentence that contains `reason`.
fn refused(args: &[&str], reason: &str) {
    let output = Command::new(BIN).args(args).output().unwrap();
    assert!(!output.status.success(), "{args:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(reason), "{stderr}");
}

/// The `iou-sqp` (SQPOLL) threads of process `pid` now.
fn sqpoll_threads_of(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("iou-sqp"))
        .count()
}

/// Goal: `serve --share-sqpoll` gives two loops one SQPOLL thread (IORING_SETUP_ATTACH_WQ)
/// and still serves both. Method: uring-sqpoll with 2 loops on CPUs 0-1, with and without the
/// flag, loaded by two verified load threads; while it serves, the server has exactly one
/// `iou-sqp` thread with the flag and two without, and both loops served.
#[test]
fn two_loops_share_one_sqpoll_thread() {
    let engine =
        ringside::engines::find(ringside::engines::Workload::Echo, "uring-sqpoll").unwrap();
    if let Err(reason) = engine.availability() {
        eprintln!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (share, pollers) in [(true, 1), (false, 2)] {
        let stats = dir.path().join(format!("{share}.json"));
        let mut command = two_loops("uring-sqpoll", &stats);
        command.args(share.then_some("--share-sqpoll"));
        let server = ServerChild::start(command);
        let load = two_load_threads(&server.address, 8);
        assert_eq!(
            sqpoll_threads_of(server.child.id()),
            pollers,
            "shared: {share}"
        );
        assert!(server.stop().success());
        assert!(load.status.success(), "{load:?}");
        let document: serde_json::Value = serde_json::from_slice(&load.stdout).unwrap();
        assert_eq!(document["results"][0]["verified"], true, "{document}");
        let stats = read_json(&stats);
        for one in stats["threads"].as_array().unwrap() {
            assert!(one["bytes_sent"].as_u64().unwrap() > 0, "{stats}");
        }
    }
    let epoll = [
        "serve",
        "echo",
        "-e",
        "epoll",
        "--threads",
        "2",
        "--share-sqpoll",
    ];
    refused(&epoll, "no SQPOLL ring");
    refused(
        &[
            "echo",
            "--engine",
            "epoll",
            "--server-threads",
            "2",
            "--share-sqpoll",
        ],
        "--share-sqpoll",
    );
}

/// Goal: a study sweeps server threads as cells, splits the CPUs fairly for each count and
/// says where the load shared them; it refuses the engines that have no loops. Method: an
/// echo study with --server-threads 1,2 and the default CPUs: every row verified, naming its
/// server threads, with one load thread per load CPU, and a note wherever load and server
/// shared a CPU (2 loops on 2 CPUs); uring-sqpoll's 2-loop rows share one poller and say so;
/// `blocking`, which has no loops, runs at 1 only, and is refused with the reason from a sweep
/// without 1.
#[test]
fn a_study_sweeps_server_threads() {
    let sqpoll = ringside::engines::find(ringside::engines::Workload::Echo, "uring-sqpoll")
        .is_ok_and(|engine| engine.availability().is_ok());
    let engines = if sqpoll {
        "blocking,epoll,uring-sqpoll"
    } else {
        "blocking,epoll,uring"
    };
    let output = Command::new(BIN)
        .args(["echo", "--engine", engines, "--server-threads", "1,2"])
        .args(["-c", "8", "--runs", "1"])
        .args(["--share-sqpoll"].iter().filter(|_| sqpoll))
        .args(short_window("300ms"))
        .args(["--format", "json", "--quiet"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{document}");
    for row in rows {
        let params = &row["params"];
        assert_eq!(row["verified"], true, "{row}");
        let threads = params["server_threads"].as_u64().unwrap();
        assert!(
            threads == 1 || (threads == 2 && row["engine"] != "blocking"),
            "{row}"
        );
        let client_cpus = params["client_cpus"].as_str().map_or(1, |list| {
            ringside::system::pin::parse_cpus(list).unwrap().len()
        });
        assert_eq!(params["client_threads"], client_cpus, "{row}");
        let shared = params.get("cpus_shared").is_some();
        let noted = (row["notes"].as_array().into_iter().flatten())
            .any(|note| note.as_str().unwrap().contains("sharing, not scaling"));
        assert_eq!(shared, noted, "{row}");
        let online = ringside::system::pin::cpus_online().len() as u64;
        assert_eq!(shared, threads >= online, "{row}");
        if row["engine"] == "uring-sqpoll" {
            assert_eq!(params.get("sqpoll_shared").is_some(), threads == 2, "{row}");
        }
    }
    let blocking = ["echo", "--engine", "blocking", "--server-threads", "2,4"];
    refused(&blocking, "event-loop engines");
    refused(&["echo", "--server-threads", "1,0"], "--server-threads");
    refused(&["run", "--server-threads", "2,4"], "must include 1");
}

/// Goal: without root, --network veth is one clear sentence, before anything runs. Method: the
/// study and `run` as user nobody (setpriv, when the test runs as root and has it).
#[test]
fn veth_without_root_is_a_clear_sentence() {
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and setpriv to drop to another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for study in [&["echo"][..], &["run", "--quick", "--out", "unused"][..]] {
        let output = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(study)
            .args(["--network", "veth"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{study:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--network veth needs root"),
            "{study:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
