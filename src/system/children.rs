//! Child processes that do not outlive the ringside that started them: a server left behind by
//! a study killed with SIGKILL keeps its CPU pinned (perhaps under SCHED_FIFO) and its port,
//! and a step left behind by `run` keeps its servers and its scratch file.
//!
//! The kernel's parent-death signal (PR_SET_PDEATHSIG) does it without a thread to watch: it
//! is sent when the *thread* that forked the child exits, not the process, so children are
//! started from the main thread only, whose exit is the process's.

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
