//! The stop flag that Ctrl-C, SIGTERM and SIGHUP raise, so a study ends its current run, keeps
//! what finished, cleans up its files and exits with 128 + the signal's number (as a shell
//! reports a process that signal killed), and a server loop leaves its loop. It lives apart from
//! the progress bar so that engines, which look at it, never see the terminal.
//!
//! The handler is a plain signal handler that sets the flag and then writes a byte to a pipe
//! (`stop_event`), not a thread that waits for the signal (as the ctrlc crate's is): a second
//! thread makes every syscall that takes an fd (recv, send, epoll_ctl) take and drop a reference
//! on it, which a single-threaded process skips, and ringside's servers must not pay what their
//! peers do not (perf showed the fget/fput beside frevib's servers).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use rustix::pipe::PipeFlags;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));
/// The number of the signal that raised the flag (0 before one came), for the exit code.
static STOP_SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// The read end of a pipe the signal handler writes a byte to after raising the flag.
static STOP_PIPE: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// The process-wide stop flag, raised by SIGINT, SIGTERM and SIGHUP once this has been called.
pub fn stop_flag() -> &'static AtomicBool {
    STOP_PIPE.get_or_init(|| {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // Registering fails only for signals that cannot be caught, which these are not.
            // The signal's number first, so it is known once the flag is up.
            let _ = signal_hook::flag::register_usize(signal, &STOP_SIGNAL, signal as usize);
            let _ = signal_hook::flag::register(signal, Arc::clone(&STOP));
        }
        // Without a pipe (no fd left), loops fall back to waking now and then to look.
        let (read, write) =
            rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).ok()?;
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // Registered after the flag, so the flag is up when a loop wakes for the byte.
            let _ = signal_hook::low_level::pipe::register(signal, write.try_clone().ok()?);
        }
        Some(read)
    });
    &STOP
}

/// A file descriptor that becomes readable once the stop flag is up, so an event loop can wait
/// in the kernel with no timeout (a timer armed and cancelled on every wait costs a server time
/// its peers do not spend) and still wake at once for Ctrl-C. None if it could not be made.
pub fn stop_event() -> Option<BorrowedFd<'static>> {
    stop_flag();
    STOP_PIPE.get().and_then(Option::as_ref).map(AsFd::as_fd)
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The exit code of a process the stop flag ended, as shells report a death by that signal:
/// 128 + its number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP); 130 when the flag was
/// raised without one.
pub fn interrupted_exit_code() -> u8 {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => 128 + SIGINT as u8,
        signal => 128 + signal as u8,
    }
}

/// Whether `code` is the exit code of a ringside process the stop flag ended.
pub fn is_interrupted_exit(code: i32) -> bool {
    [SIGINT, SIGTERM, SIGHUP].contains(&(code - 128))
}

/// The signal that raised the stop flag, to pass on to a child process.
pub fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal as i32),
    }
}
