//! Progress on stderr (never stdout, which stays clean for `--format json`): a bar over a
//! study's planned time or `run`'s steps, and lines above it. Engines never see it; the
//! studies and `run` draw it.
//!
//! What is said, and when: the plan before anything runs; on a terminal the bar, without one
//! (a log, a pipe, `run`'s steps) a line per round or step with its planned and elapsed time;
//! a line per run only with `-v`; failures always. The bar's position is planned time done,
//! so the time left is what the plan leaves: it shrinks as cells finish and never jumps the
//! way a rate extrapolated from steps of different lengths does (an HTTP sweep's bar went from
//! "0s" to "2h" to "4h").

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How much a study or run says on stderr (`--quiet`, `-v`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Say {
    /// Failures only.
    pub quiet: bool,
    /// A line per run too.
    pub verbose: bool,
}

/// A bar on stderr, drawn only when stderr is a terminal and not quiet. Clones share the bar
/// (e.g. with a thread that forwards a child's stderr above it).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    say: Say,
    /// The position one cell without a planned time of its own advances by.
    cell_units: u64,
    /// Whether positions are milliseconds of planned time (else cells).
    timed: bool,
    /// Whether that time is a cap on each run (`--runtime`), not what it takes.
    capped: bool,
}

impl Progress {
    /// A study's bar over `planned`, the time its plan allows at most (None: a plan without
    /// times, counted in `cells`), each cell advancing it by its own planned time or by
    /// `cell_cap`, the most a run of a cell without one may take (`--runtime`).
    pub fn study(
        planned: Option<Duration>,
        cells: u64,
        cell_cap: Option<Duration>,
        say: Say,
    ) -> Progress {
        let (length, timed) = match planned {
            Some(planned) => (millis(planned), true),
            None => (cells, false),
        };
        let template = match timed {
            true => "{elapsed:>4} [{bar:24}] at most {left} left {msg}",
            false => "{elapsed:>4} [{bar:24}] {pos}/{len} {msg}",
        };
        Progress {
            bar: stderr_bar(length, say.quiet, template),
            say,
            cell_units: cell_cap.filter(|_| timed).map_or(1, millis),
            timed,
            capped: cell_cap.is_some(),
        }
    }

    /// A bar over `seconds` of estimated work, advanced with `set_position` as time passes, so
    /// its time left follows the estimates of steps that differ in length (`ringside run`); the
    /// message says which step of how many.
    pub fn timed(seconds: u64, say: Say) -> Progress {
        let bar = stderr_bar(
            seconds * 1000,
            say.quiet,
            "{elapsed:>4} [{bar:24}] ~{left} left {msg}",
        );
        Progress {
            bar,
            say,
            cell_units: 1000,
            timed: true,
            capped: false,
        }
    }

    /// A bar never drawn that says nothing but failures (tests, the parts of a study that
    /// have their own).
    pub fn hidden() -> Progress {
        Progress::study(
            None,
            0,
            None,
            Say {
                quiet: true,
                verbose: false,
            },
        )
    }

    /// True when the bar is drawn on stderr.
    pub fn is_drawn(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// What this progress says.
    pub fn say(&self) -> Say {
        self.say
    }

    pub fn step(&self, message: String) {
        self.bar.set_message(message);
    }

    /// A cell's run is done: the bar moves on by its planned time (`planned`, or the plan's
    /// time per cell).
    pub fn done_cell(&self, planned: Option<Duration>) {
        self.bar.inc(self.units(planned));
    }

    /// The position `planned` (a cell's planned time) stands for on this bar.
    pub fn units(&self, planned: Option<Duration>) -> u64 {
        match (self.timed, planned) {
            (true, Some(planned)) => millis(planned),
            _ => self.cell_units,
        }
    }

    /// The planned time `units` of this bar stand for (None on a bar that counts cells, or
    /// whose times are caps).
    pub fn time_of(&self, units: u64) -> Option<Duration> {
        (self.timed && !self.capped).then(|| Duration::from_millis(units))
    }

    /// Leaves `units` of the bar out (a study that stopped early when decided).
    pub fn skip(&self, units: u64) {
        let length = self.bar.length().unwrap_or(0);
        self.bar.set_length(length.saturating_sub(units));
    }

    /// Ends the bar's length at the position reached (a study whose steps were only bounded in
    /// advance, as the equal-load sweep's).
    pub fn end_at_position(&self) {
        self.bar.set_length(self.bar.position());
    }

    /// `run`'s position: estimated seconds of work done.
    pub fn set_seconds(&self, seconds: u64) {
        self.bar.set_position(seconds * 1000);
    }

    /// A line that stays above the bar (a step done, a sweep's points); silent when quiet.
    pub fn line(&self, text: String) {
        if !self.say.quiet {
            self.print(text);
        }
    }

    /// A line per run: only with `-v`.
    pub fn run_line(&self, text: String) {
        if self.say.verbose && !self.say.quiet {
            self.print(text);
        }
    }

    /// A line for a log that has no bar (stderr not a terminal): a round or step done. On a
    /// terminal the bar says it.
    pub fn log_line(&self, text: String) {
        if !self.say.quiet && !self.is_drawn() {
            eprintln!("{text}");
        }
    }

    /// A line that is printed even when quiet (a failure the study goes on after), above the
    /// bar when one is drawn.
    pub fn alert(&self, text: String) {
        self.print(text);
    }

    fn print(&self, text: String) {
        if self.is_drawn() {
            self.bar.println(text);
        } else {
            eprintln!("{text}");
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A round's or step's line: what it was, how long it took against its plan (if planned).
pub fn took_line(what: &str, started: Instant, planned: Option<Duration>) -> String {
    let took = time_text(started.elapsed());
    match planned {
        Some(planned) => format!("{what}: {took} (planned {})", time_text(planned)),
        None => format!("{what}: {took}"),
    }
}

/// A duration as people say it: `850 ms`, `4.2 s`, `42 s`, `3 min 05 s`, `1 h 02 min`.
pub fn time_text(time: Duration) -> String {
    let seconds = time.as_secs_f64().round() as u64;
    match seconds {
        _ if time < Duration::from_secs(1) => format!("{} ms", time.as_millis()),
        _ if time < Duration::from_millis(9950) => format!("{:.1} s", time.as_secs_f64()),
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min {:02} s", seconds / 60, seconds % 60),
        _ => format!("{} h {:02} min", seconds / 3600, seconds % 3600 / 60),
    }
}

fn millis(time: Duration) -> u64 {
    u64::try_from(time.as_millis()).unwrap_or(u64::MAX)
}

/// A bar on stderr with `template`, hidden when quiet or when stderr is not a terminal (a log
/// file or a pipe gets lines, not redraws). A timed bar's position and length are milliseconds
/// of planned time.
fn stderr_bar(length: u64, quiet: bool, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(length), ProgressDrawTarget::stderr());
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            // What the plan leaves: the position is planned time done, so the rest of the
            // length is the plan of what remains (indicatif's own `eta` extrapolates the rate
            // instead, which swings when steps beat their estimates or differ in length).
            .with_key(
                "left",
                |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                    let left = state.len().unwrap_or(0).saturating_sub(state.pos()) / 1000;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_people_say_them() {
        assert_eq!(time_text(Duration::from_millis(850)), "850 ms");
        assert_eq!(time_text(Duration::from_millis(4240)), "4.2 s");
        assert_eq!(time_text(Duration::from_secs(42)), "42 s");
        assert_eq!(time_text(Duration::from_secs(185)), "3 min 05 s");
        assert_eq!(time_text(Duration::from_secs(3720)), "1 h 02 min");
    }

    /// A timed bar moves by each cell's planned time, a cell without one by the plan's.
    #[test]
    fn cells_advance_the_bar_by_their_planned_time() {
        let say = Say {
            quiet: true,
            verbose: false,
        };
        let bar = Progress::study(
            Some(Duration::from_secs(10)),
            4,
            Some(Duration::from_millis(2500)),
            say,
        );
        assert_eq!(bar.units(Some(Duration::from_secs(1))), 1000);
        assert_eq!(bar.units(None), 2500);
        let counted = Progress::study(None, 4, None, say);
        assert_eq!(counted.units(Some(Duration::from_secs(1))), 1);
    }
}
