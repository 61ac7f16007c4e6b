//! Progress on stderr (never stdout, which stays clean for `--format json`): a bar over a
//! study's runs or `run`'s estimated seconds, and lines above it. Engines never see it; the
//! studies and `run` draw it.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

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

    /// Leaves `steps` steps out of the bar (a study that stopped early when decided).
    pub fn skip_steps(&self, steps: u64) {
        let length = self.bar.length().unwrap_or(0);
        self.bar.set_length(length.saturating_sub(steps));
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

    /// A line that is printed even when quiet (a failure the study goes on after), above the
    /// bar when one is drawn.
    pub fn alert(&self, text: String) {
        if self.quiet || self.bar.is_hidden() {
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
