//! Progress on stderr (never stdout, which stays clean for `--format json`), and the stop flag
//! that Ctrl-C, SIGTERM and SIGHUP raise so a study ends its current run, keeps what finished,
//! cleans up its files and exits non-zero.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static STOP: AtomicBool = AtomicBool::new(false);

/// The process-wide stop flag, with the signal handler installed on first use.
pub fn stop_flag() -> &'static AtomicBool {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        // A second handler (e.g. in tests) is not an error worth failing a run for.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    });
    &STOP
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// A bar of `steps` steps with a message; drawn only when stderr is a terminal and not quiet.
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
}

impl Progress {
    pub fn new(steps: u64, quiet: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
        if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("{elapsed:>4} [{bar:24}] {pos}/{len} eta {eta} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress { bar, quiet }
    }

    pub fn step(&self, message: String) {
        self.bar.set_message(message);
    }

    pub fn done_step(&self) {
        self.bar.inc(1);
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
