//! Progress on stderr (never stdout, which stays clean for `--format json`), and the stop flag
//! that Ctrl-C, SIGTERM and SIGHUP raise so a study ends its current run, keeps what finished,
//! cleans up its files and exits non-zero.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use rustix::pipe::PipeFlags;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));
/// The read end of a pipe the signal handler writes a byte to after raising the flag.
static STOP_PIPE: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// The process-wide stop flag, raised by SIGINT, SIGTERM and SIGHUP once this has been called.
///
/// The handler is a plain signal handler that sets the flag and then writes to a pipe
/// (`stop_event`), not a thread that waits for the signal (as the ctrlc crate's is): a second
/// thread makes every syscall that takes an fd (recv, send, epoll_ctl) take and drop a
/// reference on it, which a single-threaded process skips, and ringside's servers must not pay
/// what their peers do not.
pub fn stop_flag() -> &'static AtomicBool {
    STOP_PIPE.get_or_init(|| {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // Registering fails only for signals that cannot be caught, which these are not.
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

/// A bar of `steps` steps with a message; drawn only when stderr is a terminal and not quiet.
/// Clones share the bar (e.g. with a thread that forwards a child's stderr above it).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
}

impl Progress {
    pub fn new(steps: u64, quiet: bool) -> Progress {
        let bar = stderr_bar(
            steps,
            quiet,
            "{elapsed:>4} [{bar:24}] {pos}/{len} eta {eta} {msg}",
        );
        Progress { bar, quiet }
    }

    /// A bar over `seconds` of estimated work, advanced with `set_position` as time passes, so
    /// its ETA follows the estimates of steps that differ in length (`ringside run`); the
    /// message says which step of how many. Unlike `new`'s, its lines are printed even when the
    /// bar is hidden (quiet, or stderr not a terminal): they are then the only progress shown.
    pub fn timed(seconds: u64, quiet: bool) -> Progress {
        let bar = stderr_bar(seconds, quiet, "{elapsed:>4} [{bar:24}] ~{left} left {msg}");
        Progress { bar, quiet: false }
    }

    /// True when the bar is drawn on stderr.
    pub fn is_drawn(&self) -> bool {
        !self.bar.is_hidden()
    }

    pub fn step(&self, message: String) {
        self.bar.set_message(message);
    }

    pub fn done_step(&self) {
        self.bar.inc(1);
    }

    pub fn set_position(&self, position: u64) {
        self.bar.set_position(position);
    }

    /// A line that stays above the bar (e.g. the seed-style per-run line); silent when quiet.
    pub fn line(&self, text: String) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A bar on stderr with `template`, hidden when quiet or when stderr is not a terminal (a log
/// file or a pipe gets lines, not redraws).
fn stderr_bar(length: u64, quiet: bool, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(length), ProgressDrawTarget::stderr());
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            // What the estimates leave: a timed bar's position is estimated seconds done, so
            // the rest of its length is the estimate of what remains (indicatif's own `eta`
            // extrapolates the rate instead, which swings when steps beat their estimates).
            .with_key(
                "left",
                |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                    let left = state.len().unwrap_or(0).saturating_sub(state.pos());
                    let _ = match left {
                        0..60 => write!(out, "{left}s"),
                        _ => write!(out, "{}m{:02}s", left / 60, left % 60),
                    };
                },
            )
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
