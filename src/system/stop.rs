//! The stop flag that Ctrl-C, SIGTERM and SIGHUP raise, so a study ends its current run, keeps
//! what finished, cleans up its files and exits non-zero, and a server loop leaves its loop. It
//! lives apart from the progress bar so that engines, which look at it, never see the terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

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
