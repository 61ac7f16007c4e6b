//! Contenders: any server program in a network study beside ringside's engines
//! (`--contender NAME=COMMAND`). The command runs through `sh -c` in a process group of its own,
//! pinned to the server CPU (and under the study's scheduling class), `{port}` replaced by a
//! free port and `{cpu}` by that CPU; once the port accepts, the contender goes through the
//! same cell as an engine (`net::measure_server`): the same load, window and warm-up, measured
//! from outside over the window (every process and thread it runs), every byte or response
//! checked. Then SIGTERM to its group, SIGKILL after a bound, nothing left running.
//!
//! A contender that exits before it listens, never listens, or dies during a run gives a row
//! marked with its `failure` and one line on stderr; the study goes on. Its rows say
//! `engine: "contender:NAME"` and carry the command in `params.command`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{measure_server, rig_params, LastWords, Rig, ServerProcess};
use crate::load::{load_row, LoadPlan, LoadReport};
use crate::measure::{counting_syscalls, process_tree, Measured, ProcessSyscallCounter};
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::system::network::NetPath;
use crate::system::tuning::Sched;

/// How long a contender may take to accept connections by default: a runtime's start-up
/// (Node, a JIT) takes longer than ringside's own servers.
const CONTENDER_START_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the port is tried while a contender starts.
const START_POLL: Duration = Duration::from_millis(20);

/// A server program named on the command line: `NAME=COMMAND`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contender {
    pub name: String,
    /// The command as given, `{port}` and `{cpu}` still in it (what rows record).
    pub command: String,
    /// How long it may take to accept connections before it counts as never listening.
    pub start_timeout: Duration,
}

impl Contender {
    /// Parses `NAME=COMMAND` (a name of letters, digits, `-`, `_` and `.`; a command that
    /// names `{port}`).
    pub fn parse(text: &str) -> Result<Contender, String> {
        let (name, command) = text
            .split_once('=')
            .ok_or_else(|| format!("'{text}' is not NAME=COMMAND"))?;
        let name = name.trim();
        let good = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if name.is_empty() || !name.chars().all(good) {
            return Err(format!(
                "contender name '{name}' must be letters, digits, '-', '_' or '.'"
            ));
        }
        let command = command.trim();
        if !command.contains("{port}") {
            return Err(format!(
                "the command of contender '{name}' must listen on {{port}} (ringside chooses a \
                 free port per run)"
            ));
        }
        Ok(Contender {
            name: name.to_string(),
            command: command.to_string(),
            start_timeout: CONTENDER_START_TIMEOUT,
        })
    }

    /// The name its rows carry in `engine`.
    pub fn engine(&self) -> String {
        format!("contender:{}", self.name)
    }

    /// The command with `{port}` and `{cpu}` filled in.
    pub fn command_line(&self, port: u16, cpu: usize) -> String {
        self.command
            .replace("{port}", &port.to_string())
            .replace("{cpu}", &cpu.to_string())
    }
}

/// Why a contender's run measured nothing, and whether it ever started (one that did not is
/// not started again in later cells of the study).
pub struct Failure {
    pub reason: String,
    pub started: bool,
}

/// One cell of a contender: started, measured as an engine is, stopped; or a row saying why
/// not, with the failure.
pub fn run_cell(
    contender: &Contender,
    plan: LoadPlan,
    run: u32,
    rig: &Rig,
) -> (Row, Option<Failure>) {
    let failed = |reason: String, started: bool| {
        let row = failed_row(contender, &plan, run, rig, &reason);
        (row, Some(Failure { reason, started }))
    };
    let server = match start(contender, rig) {
        Ok(server) => server,
        Err(reason) => return failed(reason, false),
    };
    let api = event_api(server.child.id() as i32);
    let params = params(rig, contender);
    // Contenders run on loopback only (the study refuses --network veth with them).
    let path = &NetPath::Loopback;
    match measure_server(
        server,
        &contender.engine(),
        params,
        plan.clone(),
        run,
        rig,
        path,
    ) {
        Ok(mut row) => {
            row.server_api = Some(api.to_string());
            (row, None)
        }
        Err(error) => failed(format!("{error:#}"), true),
    }
}

/// The row of a cell that measured nothing: the cell's parameters, no result, the reason.
pub fn failed_row(
    contender: &Contender,
    plan: &LoadPlan,
    run: u32,
    rig: &Rig,
    reason: &str,
) -> Row {
    let mut row = load_row(
        &contender.engine(),
        params(rig, contender),
        run,
        plan,
        &LoadReport::empty(),
        Some(&Measured::default()),
    );
    row.fail(reason);
    row
}

/// Starts the contender's command and waits until its port accepts a connection.
fn start(contender: &Contender, rig: &Rig) -> Result<ServerProcess, String> {
    let port = free_port().map_err(|error| format!("found no free port: {error}"))?;
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let line = contender.command_line(port, rig.server_cpu());
    let mut command = Command::new("sh");
    command
        .args(["-c", STOP_THEN_RUN, "ringside-contender", &line])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let (cpu, sched) = (rig.server_cpu(), rig.sched);
    // SAFETY: the closure runs in the forked child before exec and makes only syscalls
    // (sched_setaffinity, sched_setscheduler), no allocation.
    unsafe {
        command.pre_exec(move || place_this_process(cpu, sched));
    }
    // Killed with the study: the shell execs the contender, which keeps the signal (processes
    // it forks do not; the study stops their group as a whole).
    crate::system::children::die_with_parent(&mut command, rustix::process::Signal::KILL);
    let mut child = command
        .spawn()
        .map_err(|error| format!("could not start `{line}`: {error}"))?;
    // Kept, not passed on: a chatty contender never blocks on a full pipe.
    let last_words = LastWords::keep(child.stderr.take().expect("piped stderr"), false);
    let syscalls = count_from_the_start(&child);
    let mut server = ServerProcess::contender(child, address, last_words, syscalls);
    let deadline = Instant::now() + contender.start_timeout;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!(
                "exited with {status} before it listened on {address}{}",
                server.last_words()
            ));
        }
        if TcpStream::connect_timeout(&address, START_POLL).is_ok() {
            return Ok(server);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "never listened on {address} within {:?} of `{line}`{}",
                contender.start_timeout,
                server.last_words()
            ));
        }
        std::thread::sleep(START_POLL);
    }
}

/// The event API a server's processes hold, from their file descriptors: `io_uring` when one
/// holds a ring, else `epoll` when one holds an epoll instance, else `none` (blocking calls,
/// poll or select).
pub fn event_api(pid: i32) -> &'static str {
    let mut api = "none";
    for pid in process_tree(pid) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            match std::fs::read_link(fd.path()) {
                Ok(target) if target.as_os_str() == "anon_inode:[io_uring]" => return "io_uring",
                Ok(target) if target.as_os_str() == "anon_inode:[eventpoll]" => api = "epoll",
                _ => {}
            }
        }
    }
    api
}

/// The shell that runs a contender's command (`$1`) stops itself first, so that its syscall
/// counter opens before the command runs anything and covers every thread and process it will
/// ever start (perf's inherit), however soon it starts them.
const STOP_THEN_RUN: &str = "kill -STOP $$ && exec sh -c \"$1\"";

/// Waits until the contender's shell has stopped itself, opens its syscall counter, and lets it
/// go on. None when the kernel refuses the counter (or `RINGSIDE_NO_PERF`): the meter then
/// counts from the window's threads, or not at all.
fn count_from_the_start(child: &Child) -> Option<ProcessSyscallCounter> {
    let pid = rustix::process::Pid::from_child(child);
    let stopped = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::UNTRACED);
    let Ok(Some((_, status))) = stopped else {
        return None;
    };
    // Only a stopped shell is continued: one that died is reaped, and its pid may be reused.
    if !status.stopped() {
        return None;
    }
    let counter = counting_syscalls()
        .then(|| ProcessSyscallCounter::open(pid.as_raw_nonzero().get()).ok())
        .flatten();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
    counter
}

/// Pins the calling process to `cpu` and puts it in the study's scheduling class, as the
/// engines' `ringside serve --cpu --sched` does; its children inherit both.
fn place_this_process(cpu: usize, sched: Sched) -> std::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)?;
    sched.set_on_calling_thread()
}

/// A port free on 127.0.0.1 now (the kernel's choice; the contender binds it a moment later).
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The parameters every contender row carries beside the load's: the rig's and the command.
fn params(rig: &Rig, contender: &Contender) -> Map<String, Value> {
    let mut params = rig_params(rig);
    params.put(Param::Command, contender.command.clone());
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contender_is_a_name_and_a_command_that_names_its_port() {
        let contender = Contender::parse("py=python3 server.py {port} --cpu {cpu}").unwrap();
        assert_eq!(contender.name, "py");
        assert_eq!(contender.engine(), "contender:py");
        assert_eq!(
            contender.command_line(4000, 0),
            "python3 server.py 4000 --cpu 0"
        );
        assert!(Contender::parse("no equals sign").is_err());
        assert!(Contender::parse("bad name=x {port}").is_err());
        assert!(Contender::parse("=x {port}").is_err());
        let error = Contender::parse("fixed=server --port 8080").unwrap_err();
        assert!(error.contains("{port}"), "{error}");
    }
}
