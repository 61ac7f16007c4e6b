//! Child processes that do not outlive the ringside that started them: a server left behind by
//! a study killed with SIGKILL keeps its CPU pinned (perhaps under SCHED_FIFO) and its port,
//! and a step left behind by `run` keeps its servers and its scratch file.
//!
//! The kernel's parent-death signal (PR_SET_PDEATHSIG) does it without a thread to watch: it
//! is sent when the *thread* that forked the child exits, not the process, so children are
//! started from the main thread only, whose exit is the process's. It reaches that child
//! alone, never the processes the child starts: a tool that starts its own (a build's
//! compilers, fio's jobs) runs `guarded`, under a shell that takes the signal and kills the
//! tool's whole process group.

use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::process::Signal;

/// Makes the child `command` starts receive `signal` when this process exits, however it
/// exits. A parent that died between the fork and the request (the signal would then never
/// come) makes the child fail to start.
pub fn die_with_parent(command: &mut Command, signal: Signal) {
    let parent = rustix::process::getpid();
    debug_assert_eq!(
        rustix::thread::gettid(),
        parent,
        "the parent-death signal follows the forking thread: start children from the main thread"
    );
    // SAFETY: the hook makes three raw syscalls (prctl, getppid), which are async-signal-safe,
    // and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal))?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other(
                    "the parent exited as the child started",
                ));
            }
            Ok(())
        });
    }
}

/// The shell a `guarded` tool runs under: the parent-death signal (SIGTERM, set on this shell
/// alone: the kernel sends it to no grandchild) or the stop passed on ends its wait and kills
/// its process group, the tool and whatever the tool started, itself last. `wait` is where a
/// POSIX shell takes a trapped signal at once; a tool in the foreground would be waited for.
const GUARD: &str = r#"trap 'kill -KILL 0' TERM INT HUP; "$0" "$@" & wait $!"#;

/// How often `output` looks at the stop flag while the tool runs.
const STOP_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A command for a tool that must not outlive ringside, grandchildren included (a build's
/// compilers, fio's job processes): `program` runs under `GUARD` in a process group of its own,
/// which dies with this process however it dies. Add its arguments and run it with `output`.
/// Its exit code is the tool's; a tool killed by signal N exits 128 + N, as a shell reports it.
pub fn guarded(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = under_guard(program);
    die_with_parent(&mut command, Signal::TERM);
    command
}

/// `guarded` without the parent-death signal, which follows the forking thread (the tests'
/// threads are not the main one).
fn under_guard(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", GUARD]).arg(program).process_group(0);
    command
}

/// Runs a `guarded` command to its end and returns what it wrote, as `Command::output` does,
/// with stdin from /dev/null. The group is not the terminal's, so Ctrl-C reaches ringside
/// alone: once the stop flag is up, SIGTERM goes to the guard, which ends the tool.
pub fn output(command: &mut Command) -> std::io::Result<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = (command.stdin(Stdio::null()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as _));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as _));
    let mut passed_on = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if crate::system::stop::stopped() && !passed_on {
            passed_on = true;
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_child(&child),
                Signal::TERM,
            );
        }
        std::thread::sleep(STOP_POLL);
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool's arguments, output and exit code pass through the guard unchanged.
    #[test]
    fn a_guarded_tool_gets_its_arguments_and_gives_its_output_and_exit_code() {
        let mut command = under_guard("sh");
        command.args([
            "-c",
            "echo \"$1|$2\"; echo err >&2; exit 3",
            "tool",
            "a b",
            "c",
        ]);
        let output = output(&mut command).unwrap();
        assert_eq!(output.stdout, b"a b|c\n");
        assert_eq!(output.stderr, b"err\n");
        assert_eq!(output.status.code(), Some(3));
    }

    /// SIGTERM to the guard (as the parent-death signal sends it) kills the tool and what the
    /// tool started, however deep, within a moment.
    #[test]
    fn the_guard_s_sigterm_kills_the_tool_s_whole_group() {
        let mut command = under_guard("sh");
        // The tool starts a grandchild and says its pid, then waits for it.
        command
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, Signal::TERM).unwrap();
        child.wait().unwrap();
        let started = std::time::Instant::now();
        // Gone, or a zombie that its new parent has yet to reap.
        let alive = || {
            let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat"));
            stat.is_ok_and(|stat| {
                stat.rsplit(')')
                    .next()
                    .is_some_and(|rest| !rest.starts_with(" Z"))
            })
        };
        while alive() && started.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(), "the grandchild outlived the guard");
    }
}
