//! Loads on other hosts (`--load-host`, `--load-cmd`): the servers run here as in every study,
//! and each run starts `ringside load ... --format json --start-at T` on every load host, over
//! ssh (`ssh -o BatchMode=yes HOST`, the user's own keys and config) or through a command
//! prefix (`ip netns exec NS`, `kubectl exec -i POD --`). The server is measured here over the
//! window every host opens at T on its own clock; the hosts' documents are merged per run as
//! `ringside merge` merges them (histograms added), and each host's part is kept in the row.
//!
//! Before a minute is spent, every host is checked (`load host-check`): it answers, runs a
//! ringside that writes this result schema, reaches the servers' address, and its clock is
//! within `CLOCK_SHARE_MAX` of the shortest window from this machine's. A remote load is
//! stopped by closing its standard input (`load --stop-with-stdin`): a study that ends, fails
//! or is interrupted, and a local ssh that dies, leave no load running on any host.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::process::LastWords;
use crate::load::{LoadPlan, Mode, WindowEdge, CONNECT_ALLOWANCE, SERVER_NOT_MEASURED_NOTE};
use crate::report::merge::merge_rows;
use crate::row::params::{Param, Params};
use crate::row::{Document, LoadHostPart, Row, SCHEMA_VERSION};
use crate::system::children::die_with_parent;
use crate::system::network::Interface;
use crate::system::stop::stopped;

/// A host's clock may differ from this machine's by this share of the shortest measured
/// window: the server is measured here over the seconds the hosts load it, so a host whose
/// window is off by more would have the server measured over other seconds than its load.
pub const CLOCK_SHARE_MAX: f64 = 0.02;
/// How long a host may take to answer its check (ssh's connection and login included).
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a host's load may take, after its window, to write its row and exit.
const FINISH_GRACE: Duration = Duration::from_secs(10);
/// How long a load asked to stop (its stdin closed) may take to exit before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(3);
/// The least time given to start a load on a host before its connecting begins, and how many
/// times its check's answer time is given beyond that.
const START_LEAD_MIN: Duration = Duration::from_millis(250);
const START_LEAD_CHECKS: u32 = 3;

/// The load hosts of a study, as its flags gave them.
#[derive(Clone, Debug)]
pub struct LoadHosts {
    pub hosts: Vec<LoadHost>,
    /// The `ringside` each host runs (`--load-bin`).
    pub load_bin: String,
    /// Where the servers listen, an address of this machine the hosts reach (`--listen-on`).
    pub listen_on: IpAddr,
    /// Every host's load threads (`--threads`, else one per CPU of `--client-cpu`); None: one
    /// per online CPU of the host with the fewest.
    pub client_threads: Option<usize>,
    /// The CPUs every host pins its load threads to (`--client-cpu`); empty: unpinned.
    pub client_cpus: Vec<usize>,
}

/// One load host, and how it is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadHost {
    /// `ssh -o BatchMode=yes HOST ...`.
    Ssh(String),
    /// `PREFIX ringside ...`, run through `sh -c`.
    Prefix(String),
}

impl LoadHost {
    /// The host as rows and sentences name it.
    pub fn name(&self) -> &str {
        match self {
            LoadHost::Ssh(host) | LoadHost::Prefix(host) => host,
        }
    }

    /// The host as sentences name it: a prefix in quotes.
    fn label(&self) -> String {
        match self {
            LoadHost::Ssh(host) => host.clone(),
            LoadHost::Prefix(prefix) => format!("'{prefix}'"),
        }
    }

    /// The command that runs `load_bin args` on this host.
    fn command(&self, load_bin: &str, args: &[String]) -> Command {
        match self {
            LoadHost::Ssh(host) => {
                let mut command = Command::new("ssh");
                let words: Vec<String> = std::iter::once(load_bin)
                    .chain(args.iter().map(String::as_str))
                    .map(shell_quoted)
                    .collect();
                // The remote shell parses one line: each word quoted, so none is split or
                // expanded there.
                command
                    .args(["-T", "-o", "BatchMode=yes", host])
                    .arg(words.join(" "));
                command
            }
            LoadHost::Prefix(prefix) => {
                let mut command = Command::new("sh");
                command
                    .arg("-c")
                    .arg(format!("exec {prefix} \"$@\""))
                    .arg("sh")
                    .arg(load_bin)
                    .args(args);
                command
            }
        }
    }

    /// Starts `load_bin args` on the host: its own process group (Ctrl-C reaches the study,
    /// which stops the loads in order), killed if the study dies (the remote load then reads
    /// the end of its stdin and stops too).
    fn spawn(&self, load_bin: &str, args: &[String], stdin: Stdio) -> anyhow::Result<Child> {
        let mut command = self.command(load_bin, args);
        command.process_group(0);
        die_with_parent(&mut command, rustix::process::Signal::KILL);
        command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| match self {
                LoadHost::Ssh(host) => format!("load host {host}: cannot run ssh"),
                LoadHost::Prefix(_) => format!("load host {}: cannot run sh", self.label()),
            })
    }
}

/// A word as a POSIX shell reads it back unchanged.
fn shell_quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// What `load host-check` answers: the host's facts, and whether it reached the servers'
/// address.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostAnswer {
    pub schema_version: u32,
    pub ringside_version: String,
    pub machine: String,
    pub cpus_online: u64,
    pub kernel_release: String,
    pub nic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach_error: Option<String>,
}

/// `ringside load host-check --target ADDR`: connects to the study's check listener, answers
/// its line with this host's wall clock at once, and prints its answer (one JSON line) whether
/// or not it got through.
pub fn answer_host_check(target: SocketAddr) -> anyhow::Result<std::process::ExitCode> {
    let exchange = || -> std::io::Result<()> {
        let stream = std::net::TcpStream::connect_timeout(&target, CHECK_TIMEOUT / 2)?;
        stream.set_read_timeout(Some(CHECK_TIMEOUT / 2))?;
        stream.set_nodelay(true)?;
        let mut asked = BufReader::new(&stream);
        let mut line = String::new();
        // Each line asks the time, until the study closes the connection.
        while asked.read_line(&mut line)? > 0 {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            (&stream).write_all(format!("{:.9}\n", now.as_secs_f64()).as_bytes())?;
            line.clear();
        }
        Ok(())
    };
    let reach_error = exchange().err().map(|error| error.to_string());
    let probe = crate::probe::environment(std::path::Path::new("."));
    let text = |path: &str| {
        probe
            .pointer(path)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
    };
    let answer = HostAnswer {
        schema_version: SCHEMA_VERSION,
        ringside_version: env!("CARGO_PKG_VERSION").to_string(),
        machine: text("/machine").to_string(),
        cpus_online: (probe.pointer("/host/cpus_online").and_then(Value::as_u64)).unwrap_or(0),
        kernel_release: text("/host/kernel_release").to_string(),
        nic: Interface::toward(target.ip())
            .map_or_else(|| "unknown".to_string(), |nic| nic.describe()),
        reach_error,
    };
    println!("{}", serde_json::to_string(&answer)?);
    Ok(std::process::ExitCode::SUCCESS)
}

/// A host that passed its check.
#[derive(Clone, Debug)]
pub struct CheckedHost {
    pub host: LoadHost,
    pub answer: HostAnswer,
    /// Its wall clock less this machine's when its check connected.
    pub clock_offset_s: f64,
    /// From starting its check to its connection: what starting a load there takes.
    pub answered_in: Duration,
}

/// The study's load hosts, checked: what every run starts its loads with.
#[derive(Clone, Debug)]
pub struct Hosts {
    pub hosts: Vec<CheckedHost>,
    pub load_bin: String,
    pub listen_on: IpAddr,
    /// The interface holding `listen_on`, described (`Row::server_nic`).
    pub server_nic: String,
    /// Every host's load threads, and the CPUs they are pinned to (empty: unpinned).
    pub client_threads: usize,
    pub client_cpus: Vec<usize>,
    /// How far ahead of the connecting a run's start time is set: time for every host's load
    /// to start.
    lead: Duration,
}

impl LoadHosts {
    /// Checks every host before anything is measured, one at a time; the first that fails is
    /// one sentence naming it and what failed. `shortest_window` bounds the clocks' offset.
    pub fn check(&self, shortest_window: Duration) -> anyhow::Result<Hosts> {
        let interface = Interface::holding(self.listen_on).with_context(|| {
            format!(
                "--listen-on {}: no interface of this machine holds that address (give one \
                 that `ip -brief address` lists, which the load hosts reach)",
                self.listen_on
            )
        })?;
        crate::system::network::set_traffic_route(interface.clone());
        let tolerance = shortest_window.mul_f64(CLOCK_SHARE_MAX);
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for host in &self.hosts {
            hosts.push(self.check_one(host, tolerance)?);
        }
        let slowest = (hosts.iter().map(|h| h.answered_in).max()).unwrap_or_default();
        let fewest_cpus = (hosts.iter().map(|h| h.answer.cpus_online).min()).unwrap_or(1);
        Ok(Hosts {
            client_threads: (self.client_threads).unwrap_or(fewest_cpus.max(1) as usize),
            client_cpus: self.client_cpus.clone(),
            hosts,
            load_bin: self.load_bin.clone(),
            listen_on: self.listen_on,
            server_nic: interface.describe(),
            lead: START_LEAD_MIN + slowest * START_LEAD_CHECKS,
        })
    }

    fn check_one(&self, host: &LoadHost, tolerance: Duration) -> anyhow::Result<CheckedHost> {
        let name = host.label();
        let listener = TcpListener::bind((self.listen_on, 0))
            .with_context(|| format!("--listen-on {}: cannot listen there", self.listen_on))?;
        listener.set_nonblocking(true)?;
        let target = listener.local_addr()?;
        let args = ["load", "host-check", "--target", &target.to_string()].map(String::from);
        let started = Instant::now();
        let mut child = host.spawn(&self.load_bin, &args, Stdio::null())?;
        let last_words = LastWords::keep(child.stderr.take().expect("piped stderr"), false);
        let stdout = read_to_end(child.stdout.take().expect("piped stdout"));
        let mut clock: Option<(f64, Duration)> = None;
        let deadline = started + CHECK_TIMEOUT;
        let status = loop {
            if clock.is_none() {
                clock = clock_reading(&listener, started);
            }
            if let Some(status) = child.try_wait()? {
                // Its connection may have come just before it exited.
                if clock.is_none() {
                    clock = clock_reading(&listener, started);
                }
                break status;
            }
            if Instant::now() >= deadline || stopped() {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::ensure!(!stopped(), "interrupted while checking the load hosts");
                anyhow::bail!(
                    "load host {name} did not answer within {CHECK_TIMEOUT:?}{}",
                    last_words.text(true)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let output = stdout.recv_timeout(STOP_WAIT).unwrap_or_default();
        let answer = self.answer_of(host, status, &output, &last_words.text(true))?;
        if let Some(error) = &answer.reach_error {
            anyhow::bail!(
                "load host {name} cannot reach the servers' address {target}: {error} (give \
                 --listen-on an address of this machine that the host reaches)"
            );
        }
        let (offset, answered_in) = clock.with_context(|| {
            format!("load host {name} says it connected to {target}, but nothing arrived here")
        })?;
        anyhow::ensure!(
            offset.abs() <= tolerance.as_secs_f64(),
            "the clock of load host {name} is {:.3} s {} this machine's, and the study needs them \
             within {:.3} s ({:.0}% of its shortest window, since every load opens its window \
             at the same wall-clock time, --start-at): synchronise the clocks (NTP, chrony)",
            offset.abs(),
            if offset > 0.0 { "ahead of" } else { "behind" },
            tolerance.as_secs_f64(),
            CLOCK_SHARE_MAX * 100.0
        );
        Ok(CheckedHost {
            host: host.clone(),
            answer,
            clock_offset_s: offset,
            answered_in,
        })
    }

    /// The host's answer to its check, or the sentence that says why it gave none.
    fn answer_of(
        &self,
        host: &LoadHost,
        status: ExitStatus,
        output: &str,
        last_words: &str,
    ) -> anyhow::Result<HostAnswer> {
        let name = host.label();
        let bin = &self.load_bin;
        let line = output.lines().rfind(|line| !line.trim().is_empty());
        if let Some(answer) = line.and_then(|line| serde_json::from_str::<HostAnswer>(line).ok()) {
            anyhow::ensure!(
                answer.schema_version == SCHEMA_VERSION,
                "load host {name} runs ringside {}, which writes result schema {}; this one \
                 (ringside {}) reads schema {SCHEMA_VERSION}: install the same ringside there",
                answer.ringside_version,
                answer.schema_version,
                env!("CARGO_PKG_VERSION")
            );
            return Ok(answer);
        }
        let code = status.code();
        let missing = code == Some(127)
            || last_words.contains("not found")
            || last_words.contains("No such file");
        anyhow::bail!(match (host, code) {
            (LoadHost::Ssh(_), Some(255)) => format!(
                "load host {name} does not answer over ssh (ssh -o BatchMode=yes {name}: exit \
                 255){last_words}"
            ),
            _ if missing => format!(
                "load host {name} could not run {bin} (give the path of ringside there with \
                 --load-bin){last_words}"
            ),
            (_, Some(2)) if last_words.contains("host-check") => format!(
                "load host {name} runs a ringside without `load host-check`, older than this \
                 one (ringside {}, result schema {SCHEMA_VERSION}): install the same ringside \
                 there{last_words}",
                env!("CARGO_PKG_VERSION")
            ),
            _ => format!(
                "load host {name} gave no answer to its check ({bin} load host-check exited \
                 with {status}){last_words}"
            ),
        })
    }
}

/// The clock offset of a host whose check has connected to `listener` (None until it has),
/// as NTP reads one: this machine's clock as it asks, the host's in its answer, and this
/// machine's as the answer arrives; the host's less the middle of the two, within half the
/// round trip.
///
/// It asks `CLOCK_READINGS` times and keeps the reading of the shortest round trip, as NTP
/// does: on a busy machine one answer may wait for a CPU, which widens its round trip.
fn clock_reading(listener: &TcpListener, started: Instant) -> Option<(f64, Duration)> {
    let (stream, _) = listener.accept().ok()?;
    let answered_in = started.elapsed();
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(CHECK_TIMEOUT)).ok()?;
    stream.set_nodelay(true).ok()?;
    let unix_now = || SystemTime::now().duration_since(UNIX_EPOCH).ok();
    let mut answers = BufReader::new(&stream);
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..CLOCK_READINGS {
        let asked = unix_now()?;
        (&stream).write_all(b"time?\n").ok()?;
        let mut line = String::new();
        answers.read_line(&mut line).ok()?;
        let answered = unix_now()?;
        let there: f64 = line.trim().parse().ok()?;
        let round_trip = (answered - asked).as_secs_f64();
        let offset = there - (asked + answered).as_secs_f64() / 2.0;
        if best.is_none_or(|(shortest, _)| round_trip < shortest) {
            best = Some((round_trip, offset));
        }
    }
    best.map(|(_, offset)| (offset, answered_in))
}

/// How many times a check reads a host's clock.
const CLOCK_READINGS: usize = 8;

/// Reads `stdout` to its end on a thread of its own.
fn read_to_end(mut stdout: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = sender.send(text);
    });
    receiver
}

/// A load running on a host for one run.
struct RemoteLoad<'a> {
    host: &'a CheckedHost,
    child: Child,
    /// Closed to stop the load (`load --stop-with-stdin`).
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    last_words: LastWords,
}

impl RemoteLoad<'_> {
    /// Why the run failed when the load exited with `status` before its time.
    fn died(&mut self, status: ExitStatus) -> anyhow::Error {
        let how = match (&self.host.host, status.code()) {
            (LoadHost::Ssh(_), Some(255)) => {
                "ssh exited 255: the load there died or the connection was lost".to_string()
            }
            _ => status.to_string(),
        };
        anyhow::anyhow!(
            "load host {}: its ringside load ended during the run ({how}){}",
            self.host.host.label(),
            self.last_words.text(true)
        )
    }

    /// Its row, once it has exited by `deadline`.
    fn finish(mut self, deadline: Instant) -> anyhow::Result<Row> {
        let name = self.host.host.label();
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            anyhow::ensure!(!stopped(), "interrupted");
            anyhow::ensure!(
                Instant::now() < deadline,
                "load host {name}: its ringside load had not ended {FINISH_GRACE:?} after its \
                 window{}",
                self.last_words.text(false)
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let output = self.stdout.recv_timeout(STOP_WAIT).unwrap_or_default();
        let document: Option<Document> = serde_json::from_str(&output).ok();
        let Some(mut document) = document.filter(|d| d.results.len() == 1) else {
            anyhow::bail!(
                "load host {name}: its ringside load ended ({status}) without its row{}",
                self.last_words.text(true)
            );
        };
        let mut row = document.results.remove(0);
        row.notes.retain(|note| note != SERVER_NOT_MEASURED_NOTE);
        Ok(row)
    }
}

impl Drop for RemoteLoad<'_> {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        // The end of its stdin stops the load on the host; a host that does not stop in time
        // loses its ssh (or prefix command), whose end of stdin it then reads.
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_WAIT;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hosts {
    /// Each host's part of `plan`: its share of the connections (and of an open loop's rate),
    /// the same threads on every host; hosts left without a connection sit the run out.
    fn shares<'a>(&'a self, plan: &LoadPlan) -> Vec<(&'a CheckedHost, LoadPlan)> {
        let count = self.hosts.len();
        let mut shares = Vec::with_capacity(count);
        for (index, host) in self.hosts.iter().enumerate() {
            let connections =
                plan.connections * (index + 1) / count - plan.connections * index / count;
            if connections == 0 {
                continue;
            }
            // Each host offers an equal part of an open loop's rate (`merge` refuses rows
            // whose rates differ), whatever its share of the connections.
            let hosts = count.min(plan.connections);
            let rate = plan.rate_per_sec.map(|rate| rate / hosts as f64);
            shares.push((
                host,
                LoadPlan {
                    connections,
                    rate_per_sec: rate,
                    threads: self.client_threads,
                    cpus: self.client_cpus.clone(),
                    ..plan.clone()
                },
            ));
        }
        shares
    }

    /// The `ringside load` arguments of a host's share, its window opening at `start_at`.
    fn load_args(&self, share: &LoadPlan, start_at: SystemTime) -> Vec<String> {
        let seconds = |d: Duration| d.as_secs_f64().to_string();
        let mut args: Vec<String> = vec!["load".into()];
        match share.mode {
            Mode::Http => args.extend([
                "http".into(),
                "--target".into(),
                format!("http://{}/", share.target),
            ]),
            mode => {
                args.extend(["echo", "--target"].map(String::from));
                args.push(share.target.to_string());
                args.extend(["--payload".into(), share.payload_bytes.to_string()]);
                args.extend(["--mode".into(), mode.name().into()]);
                if mode == Mode::Stream {
                    args.extend(["--window".into(), share.window_bytes.to_string()]);
                }
                if let Some(rate) = share.read_bytes_per_sec {
                    args.extend(["--read-rate".into(), rate.to_string()]);
                }
                if let Some(bytes) = share.rcvbuf_bytes {
                    args.extend(["--rcvbuf".into(), bytes.to_string()]);
                }
            }
        }
        args.extend(["--connections".into(), share.connections.to_string()]);
        args.extend(["--duration".into(), seconds(share.duration)]);
        args.extend(["--warmup".into(), seconds(share.warmup)]);
        args.extend(["--threads".into(), share.threads.to_string()]);
        args.extend(["--timeout".into(), seconds(share.timeout)]);
        args.extend(["--sched".into(), share.sched.name().into()]);
        if !share.cpus.is_empty() {
            let cpus: Vec<String> = share.cpus.iter().map(usize::to_string).collect();
            args.extend(["--cpu".into(), cpus.join(",")]);
        }
        if let Some(rate) = share.rate_per_sec {
            args.extend(["--rate".into(), rate.to_string()]);
        }
        let at = start_at.duration_since(UNIX_EPOCH).unwrap_or_default();
        args.push(format!("--start-at=@{:.6}", at.as_secs_f64()));
        args.extend(["--format", "json", "--stop-with-stdin"].map(String::from));
        args
    }

    /// One run's load: every host's share started with the same start time, the window
    /// (`on_window`) opened and closed on this machine's clock at the seconds the hosts
    /// measure, the hosts' rows merged. A host that fails fails the run; the others are
    /// stopped.
    pub fn run(
        &self,
        plan: &LoadPlan,
        on_window: &mut dyn FnMut(WindowEdge),
    ) -> anyhow::Result<RunLoad> {
        let shares = self.shares(plan);
        // Every load connects `CONNECT_ALLOWANCE` before its warm-up, which ends at the start.
        let start_at = SystemTime::now() + self.lead + CONNECT_ALLOWANCE + plan.warmup;
        let mut loads = Vec::with_capacity(shares.len());
        for (host, share) in &shares {
            let args = self.load_args(share, start_at);
            let mut child = host.host.spawn(&self.load_bin, &args, Stdio::piped())?;
            let last_words = LastWords::keep(child.stderr.take().expect("piped stderr"), false);
            loads.push(RemoteLoad {
                host,
                stdin: child.stdin.take(),
                stdout: read_to_end(child.stdout.take().expect("piped stdout")),
                child,
                last_words,
            });
        }
        wait_until(start_at, &mut loads)?;
        on_window(WindowEdge::Start);
        let during = wait_until(start_at + plan.duration, &mut loads);
        on_window(WindowEdge::Stop);
        during?;
        let deadline = Instant::now() + plan.timeout + FINISH_GRACE;
        let mut rows = Vec::with_capacity(loads.len());
        // In order, each dropped (stopped) if an earlier one failed.
        for load in loads {
            rows.push(load.finish(deadline)?);
        }
        let merged = match rows.as_slice() {
            [row] => row.clone(),
            rows => merge_rows(&rows.iter().collect::<Vec<_>>())?,
        };
        let parts = (shares.iter().zip(&rows))
            .map(|((host, share), row)| part(host, share, row))
            .collect();
        Ok(RunLoad {
            merged,
            rows,
            parts,
        })
    }

    /// The row of a run from its hosts' merged row: the engine's name and run, the rig's
    /// parameters beside the load's, the client's CPU the busiest host's (its threads are
    /// every host's), and each host's part.
    pub fn study_row(
        &self,
        load: RunLoad,
        plan: &LoadPlan,
        engine: &str,
        rig: Map<String, Value>,
        run: u32,
    ) -> Row {
        let RunLoad {
            mut merged,
            rows,
            parts,
        } = load;
        merged.engine = engine.to_string();
        merged.run = run;
        let load = std::mem::replace(&mut merged.params, rig);
        merged.params.extend(load);
        self.adjust_params(&mut merged.params, plan);
        if let Some(rate) = plan.rate_per_sec {
            // The hosts' open loops: their rates add up to the cell's, their late sends too.
            merged.offered_rate = Some(rate);
            let sends: Vec<(u64, f64)> = (rows.iter())
                .filter_map(|row| Some((row.client_sends?, row.client_late_share?)))
                .collect();
            let total: u64 = sends.iter().map(|(sends, _)| sends).sum();
            let late: f64 = sends
                .iter()
                .map(|(sends, share)| *sends as f64 * share)
                .sum();
            merged.client_sends = Some(total);
            merged.client_late_share = Some(if total > 0 { late / total as f64 } else { 0.0 });
        }
        let busiest = (parts.iter())
            .max_by(|a, b| a.client_busy_share.total_cmp(&b.client_busy_share))
            .expect("a run has a host");
        merged.client_cpu_user_s = Some(busiest.client_cpu_user_s);
        merged.client_cpu_sys_s = Some(busiest.client_cpu_sys_s);
        merged.server_nic = Some(self.server_nic.clone());
        merged.load_hosts = parts;
        merged
    }

    /// The parameters of a row whose load ran on the hosts, from those of a load run here
    /// (`rig` beside `plan`'s): the load's CPUs and threads the hosts', the cell's rate (each
    /// host's is its share), the hosts that had connections and where the servers listened.
    pub fn adjust_params(&self, params: &mut Map<String, Value>, plan: &LoadPlan) {
        for param in [Param::ClientCpu, Param::ClientCpus, Param::CpusShared] {
            params.remove(param.key());
        }
        if !self.client_cpus.is_empty() {
            let cpus: Vec<String> = self.client_cpus.iter().map(usize::to_string).collect();
            params.put(Param::ClientCpus, cpus.join(","));
        }
        params.put(Param::Network, "hosts");
        params.put(Param::Connections, plan.connections);
        params.put(Param::ClientThreads, self.client_threads);
        if let Some(rate) = plan.rate_per_sec {
            params.put(Param::RatePerSec, rate);
        }
        params.put(Param::Hosts, self.shares(plan).len());
        let names: Vec<&str> = self.hosts.iter().map(|h| h.host.name()).collect();
        params.put(Param::LoadHosts, names.join(","));
        params.put(Param::ListenOn, self.listen_on.to_string());
    }

    /// The sentences the study says before it measures: each host's machine, NIC and clock.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "servers listen on {} ({})",
            self.listen_on, self.server_nic
        )];
        for checked in &self.hosts {
            let answer = &checked.answer;
            // To a tenth of a millisecond, never "-0.0".
            let offset_ms = (checked.clock_offset_s * 1e4).round() / 10.0 + 0.0;
            lines.push(format!(
                "load host {}: {}; traffic by {}; clock {offset_ms:+.1} ms; ringside {}",
                checked.host.label(),
                answer.machine,
                answer.nic,
                answer.ringside_version
            ));
        }
        lines
    }
}

/// What the hosts measured in one run: their rows, merged and as each wrote it, and each
/// host's part.
pub struct RunLoad {
    merged: Row,
    rows: Vec<Row>,
    parts: Vec<LoadHostPart>,
}

/// One host's part of a run, from its row.
fn part(host: &CheckedHost, share: &LoadPlan, row: &Row) -> LoadHostPart {
    let (user, sys) = (
        row.client_cpu_user_s.unwrap_or(0.0),
        row.client_cpu_sys_s.unwrap_or(0.0),
    );
    let threads = share.threads.min(share.connections).max(1);
    let busy = match row.seconds > 0.0 {
        true => (user + sys) / row.seconds / threads as f64,
        false => 0.0,
    };
    let latency = (row.latency_ns_histogram.as_deref())
        .and_then(|text| crate::stats::histogram::decode(text).ok());
    LoadHostPart {
        host: host.host.name().to_string(),
        machine: host.answer.machine.clone(),
        cpus_online: host.answer.cpus_online,
        kernel_release: host.answer.kernel_release.clone(),
        nic: host.answer.nic.clone(),
        clock_offset_s: host.clock_offset_s,
        connections: share.connections as u64,
        client_threads: share.threads as u64,
        ops: row.ops,
        ops_per_sec: row.ops_per_sec,
        latency_ns_count: latency.as_ref().map(|h| h.len()),
        latency_ns_max: latency.as_ref().map(|h| h.max()),
        client_cpu_user_s: user,
        client_cpu_sys_s: sys,
        client_busy_share: busy,
        client_saturated: row.client_saturated == Some(true),
        verified: row.verified,
        window_start_unix_s: row.window_start_unix_s,
        window_end_unix_s: row.window_end_unix_s,
    }
}

/// Waits until `time` on this machine's clock, watching the loads: one that exits before its
/// time fails the run, as does Ctrl-C.
fn wait_until(time: SystemTime, loads: &mut [RemoteLoad]) -> anyhow::Result<()> {
    loop {
        anyhow::ensure!(!stopped(), "interrupted");
        for load in loads.iter_mut() {
            if let Some(status) = load.child.try_wait()? {
                return Err(load.died(status));
            }
        }
        let Ok(left) = time.duration_since(SystemTime::now()) else {
            return Ok(());
        };
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(count: usize) -> Hosts {
        let answer = HostAnswer {
            schema_version: SCHEMA_VERSION,
            ringside_version: "0".into(),
            machine: "m".into(),
            cpus_online: 2,
            kernel_release: "k".into(),
            nic: "n".into(),
            reach_error: None,
        };
        let host = |index: usize| CheckedHost {
            host: LoadHost::Ssh(format!("h{index}")),
            answer: answer.clone(),
            clock_offset_s: 0.0,
            answered_in: Duration::ZERO,
        };
        Hosts {
            hosts: (0..count).map(host).collect(),
            load_bin: "ringside".into(),
            listen_on: IpAddr::from([198, 18, 0, 1]),
            server_nic: "n".into(),
            client_threads: 2,
            client_cpus: vec![1],
            lead: Duration::ZERO,
        }
    }

    fn plan(connections: usize, rate: Option<f64>) -> LoadPlan {
        LoadPlan {
            target: SocketAddr::from(([198, 18, 0, 1], 9)),
            connections,
            payload_bytes: 64,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            threads: 7,
            timeout: Duration::from_secs(1),
            cpus: Vec::new(),
            sched: crate::system::tuning::Sched::Other,
            mode: Mode::PingPong,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: crate::load::STREAM_WINDOW_BYTES,
            http: None,
            rate_per_sec: rate,
            start_at: None,
        }
    }

    /// Goal: a run's connections are split between the hosts to the last one, an open loop's
    /// rate equally (`merge` refuses rows whose rates differ), every host with the study's
    /// threads and CPUs; a host left without a connection sits the run out.
    #[test]
    fn a_runs_connections_and_rate_are_shared_between_the_hosts() {
        let three = hosts(3);
        let shares = three.shares(&plan(10, Some(900.0)));
        let connections: Vec<usize> = shares.iter().map(|(_, p)| p.connections).collect();
        assert_eq!(connections, [3, 3, 4]);
        assert!(shares.iter().all(|(_, p)| p.rate_per_sec == Some(300.0)));
        assert!(shares.iter().all(|(_, p)| p.threads == 2 && p.cpus == [1]));
        let few = three.shares(&plan(2, Some(100.0)));
        assert_eq!(few.len(), 2);
        assert!(few
            .iter()
            .all(|(_, p)| p.connections == 1 && p.rate_per_sec == Some(50.0)));
        let args = hosts(1).load_args(&few[0].1, UNIX_EPOCH + Duration::from_secs(5));
        let text = args.join(" ");
        assert!(
            text.starts_with("load echo --target 198.18.0.1:9 --payload 64"),
            "{text}"
        );
        assert!(
            text.contains("--rate 50 ") && text.contains("--cpu 1 "),
            "{text}"
        );
        assert!(text.ends_with("--start-at=@5.000000 --format json --stop-with-stdin"));
    }

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(shell_quoted("--start-at=@1.5"), "--start-at=@1.5");
        assert_eq!(
            shell_quoted("/opt/my tools/ringside"),
            "'/opt/my tools/ringside'"
        );
        assert_eq!(shell_quoted("it's"), "'it'\\''s'");
        assert_eq!(shell_quoted(""), "''");
        assert_eq!(shell_quoted("$(reboot)"), "'$(reboot)'");
    }
}
