//! A server as a child process: `ringside serve`, or a contender's command, measured from
//! outside and stopped with a bound.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::cell::Rig;
use crate::engines::shared_counters::SharedCounters;
use crate::engines::uring::ring::format_cpus;
use crate::engines::EngineDef;
use crate::measure::{ProcessMeter, ProcessSyscallCounter};
use crate::studies::serve::{ServerStats, STATS_TO_STDOUT};
use crate::system::children::die_with_parent;
use crate::system::network::NetPath;

/// How long a server may take to say where it listens, and to exit after SIGTERM.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);
const SERVER_STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of a server's last stderr line a failure quotes.
const LAST_WORDS_CHARS: usize = 200;
/// How long a failure waits for an exited server's stderr to end (a contender's other
/// processes may hold it open).
const LAST_WORDS_WAIT: Duration = Duration::from_secs(1);

/// The last line a server wrote to stderr, for a failure to quote.
pub struct LastWords {
    line: Arc<Mutex<String>>,
    /// Hangs up when the server's stderr has ended.
    ended: Receiver<()>,
}

impl LastWords {
    /// Reads `stderr` to its end on a thread of its own, keeping its last non-empty line;
    /// `forward` passes every line on to this process's stderr too.
    pub fn keep(stderr: ChildStderr, forward: bool) -> LastWords {
        let line = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&line);
        let (sender, ended) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _ended_with_this_thread = sender;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if forward {
                    eprintln!("{line}");
                }
                if !line.trim().is_empty() {
                    let text: String = line.trim().chars().take(LAST_WORDS_CHARS).collect();
                    *kept.lock().unwrap_or_else(|e| e.into_inner()) = text;
                }
            }
        });
        LastWords { line, ended }
    }

    /// "; its last words on stderr: ..." when it wrote any; once the server has `exited`, after
    /// its stderr has ended (bounded), so that its final line is in.
    pub(super) fn text(&self, exited: bool) -> String {
        if exited {
            let _ = self.ended.recv_timeout(LAST_WORDS_WAIT);
        }
        match self.line.lock().unwrap_or_else(|e| e.into_inner()).as_str() {
            "" => String::new(),
            line => format!("; its last words on stderr: {line}"),
        }
    }
}

/// A server child process: `ringside serve` (also the server of `run`'s wrk control), or a
/// contender's command.
pub struct ServerProcess {
    pub child: Child,
    pub address: SocketAddr,
    /// What `ringside serve` prints after its `listening on` line: its stats (`--stats -`),
    /// sent once it has exited. None for a contender.
    rest: Option<Receiver<String>>,
    /// The last line it wrote to stderr.
    last_words: LastWords,
    /// A contender: it leads a process group of its own, stopped as a whole, and may die of
    /// SIGTERM or ignore it.
    contender: bool,
    /// A contender's syscall counter, opened before its command ran (None: opened when the
    /// window opens, or not counting).
    syscalls: Option<ProcessSyscallCounter>,
    /// `ringside serve`'s loop counters, shared through this memfd (None for a contender).
    counters: Option<(SharedCounters, OwnedFd)>,
}

impl ServerProcess {
    /// Starts `engine` on the server's side of `path`. The server leads a process group of its
    /// own, so Ctrl-C in a terminal reaches the study alone, which ends its load before it
    /// stops the server (a server stopped first would turn the load's last answers into
    /// errors); and it is killed if the study dies without stopping it (SIGKILL, a crash).
    pub fn start(engine: &EngineDef, args: &Rig, path: &NetPath) -> anyhow::Result<ServerProcess> {
        let exe = std::env::current_exe().context("cannot find the ringside binary")?;
        let (counters, memfd) = SharedCounters::create(args.server_threads)
            .context("cannot make the server's shared counters")?;
        let memfd_path = format!("/proc/{}/fd/{}", std::process::id(), memfd.as_raw_fd());
        let mut command = path.server_command(&exe);
        command.process_group(0);
        die_with_parent(&mut command, rustix::process::Signal::KILL);
        let mut child = command
            .arg("serve")
            .args(&args.serve)
            .args(["--counters", &memfd_path])
            .args(["--quiet", "--stats", STATS_TO_STDOUT, "--listen"])
            .arg(path.server_listen().to_string())
            .arg("--engine")
            .arg(engine.name)
            .arg("--cpu")
            .arg(format_cpus(&args.cpus.server))
            .arg("--threads")
            .arg(args.server_threads.to_string())
            .args(args.shares_sqpoll(engine).then_some("--share-sqpoll"))
            .arg("--sched")
            .arg(args.sched.name())
            .args(args.helpers.serve_args())
            .args(args.idle_timeout.iter().flat_map(|timeout| {
                [
                    "--idle-timeout".to_string(),
                    format!("{}ms", timeout.as_millis()),
                ]
            }))
            .args(
                args.work
                    .iter()
                    .flat_map(|work| ["--work".to_string(), format!("{}ns", work.as_nanos())]),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the server process")?;
        // What the server says on stderr is passed on, its last line kept for its row.
        let last_words = LastWords::keep(child.stderr.take().expect("piped stderr"), true);
        let stdout = child.stdout.take().expect("piped stdout");
        // The first line says where the server listens; a server that fails says why on
        // stderr and exits, which ends the line with EOF.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            if sender.send(line).is_err() {
                return;
            }
            // Then the rest, up to the server's exit: its stats.
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            let _ = sender.send(rest);
        });
        let line = receiver
            .recv_timeout(SERVER_START_TIMEOUT)
            .unwrap_or_default();
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|text| text.parse().ok());
        match address {
            Some(address) => Ok(ServerProcess {
                child,
                address,
                rest: Some(receiver),
                last_words,
                contender: false,
                syscalls: None,
                counters: Some((counters, memfd)),
            }),
            None => {
                let _ = child.kill();
                let status = child.wait()?;
                anyhow::bail!(
                    "the {} server did not start ({status}){}",
                    engine.name,
                    last_words.text(true)
                )
            }
        }
    }

    /// A started contender, leading its own process group, whose stderr `last_words` keeps,
    /// counted by `syscalls` since before it ran.
    pub fn contender(
        child: Child,
        address: SocketAddr,
        last_words: LastWords,
        syscalls: Option<ProcessSyscallCounter>,
    ) -> ServerProcess {
        ServerProcess {
            child,
            address,
            rest: None,
            last_words,
            contender: true,
            syscalls,
            counters: None,
        }
    }

    /// The counters `ringside serve` keeps in memory shared with this process (None for a
    /// contender): its own syscall counts, read at the window's edges.
    pub fn own_counters(&self) -> Option<&SharedCounters> {
        self.counters.as_ref().map(|(counters, _)| counters)
    }

    /// The meter of this server's window (once: it takes a contender's counter).
    pub fn meter(&mut self) -> ProcessMeter {
        ProcessMeter::with_counter(self.child.id() as i32, self.syscalls.take())
    }

    /// "; its last words on stderr: ..." when the server wrote any, for a failure to quote.
    pub fn last_words(&mut self) -> String {
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        self.last_words.text(exited)
    }

    /// SIGTERM (to a contender's whole group), then a bounded wait; a server that does not
    /// stop is killed (and reported, unless it is a contender), and one that had exited before
    /// it was asked to is reported. Returns the stats `ringside serve` printed as it stopped.
    pub fn stop(&mut self) -> anyhow::Result<Option<ServerStats>> {
        if let Some(status) = self.child.try_wait()? {
            self.kill(); // What is left of a contender's group; the server itself is reaped.
            anyhow::bail!(
                "the server exited during the run with {status}{}",
                self.last_words()
            );
        }
        self.signal(rustix::process::Signal::TERM);
        let deadline = Instant::now() + SERVER_STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                // A contender may die of the signal; ringside's servers exit 0 on it.
                if !(self.contender || status.success()) {
                    anyhow::bail!("the server exited with {status}{}", self.last_words());
                }
                if !self.group_alive() {
                    return Ok(self.stats());
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        // A contender that ignores SIGTERM is killed and its measurement stands (the issue's
        // contract: SIGTERM, then SIGKILL after a bound); ringside's own servers must stop.
        anyhow::ensure!(
            self.contender,
            "the server did not stop within {SERVER_STOP_TIMEOUT:?} of SIGTERM"
        );
        Ok(None)
    }

    /// The stats `ringside serve` printed as it exited (None for a contender).
    fn stats(&self) -> Option<ServerStats> {
        let rest = self.rest.as_ref()?.recv_timeout(SERVER_STOP_TIMEOUT).ok()?;
        let last = rest.lines().rfind(|line| !line.trim().is_empty())?;
        serde_json::from_str(last).ok()
    }

    fn pid(&self) -> rustix::process::Pid {
        rustix::process::Pid::from_raw(self.child.id() as i32).expect("a child pid")
    }

    /// Sends `signal` to the server, or to a contender's whole process group.
    fn signal(&self, signal: rustix::process::Signal) {
        let _ = match self.contender {
            true => rustix::process::kill_process_group(self.pid(), signal),
            false => rustix::process::kill_process(self.pid(), signal),
        };
    }

    /// Whether a contender's process group still has a process that has not exited (false for
    /// ringside's servers, which have no group of their own). Its exited processes may wait
    /// for their reaper (an init that reaps once a second held each contender's stop for 1 s).
    fn group_alive(&self) -> bool {
        self.contender
            && rustix::process::test_kill_process_group(self.pid()).is_ok()
            && crate::measure::group_has_live_process(self.pid().as_raw_nonzero().get())
    }

    /// SIGKILL to the server while it is not reaped, or to a contender's group while it has a
    /// process, and the child reaped. A reaped pid is never signalled: it may already be
    /// another process's (as root, any process's). A group's id is not reused while the group
    /// has a process.
    fn kill(&mut self) {
        let running = matches!(self.child.try_wait(), Ok(None));
        if running || self.group_alive() {
            self.signal(rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // An error path left the server (or a contender's group) running: do not leave it
        // behind.
        if matches!(self.child.try_wait(), Ok(None)) || self.group_alive() {
            self.kill();
        }
    }
}
