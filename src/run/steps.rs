//! The study `ringside run` performs, as a table: one line per step, each naming the
//! subcommand it runs, its arguments in every mode and what it controls against. Adding a
//! workload is one line here; a step whose subcommand this binary lacks is skipped with a note.

/// How long the whole study may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A smoke run: for CI and a first look.
    Quick,
    /// The answer in rounds until decided (`MEASURED_TIME`).
    Default,
    /// The source documents' own sizes and durations.
    Full,
}

impl Mode {
    fn index(self) -> usize {
        match self {
            Mode::Quick => 0,
            Mode::Default => 1,
            Mode::Full => 2,
        }
    }
}

/// A tool run beside a step as a reference point, when it is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// fio's psync and io_uring engines writing the same file size in the same block size.
    FioWrite,
    /// fio's psync (jobs = depth), libaio and io_uring reading at each depth the step read at.
    FioRead,
    /// wrk against ringside's epoll HTTP server with the same connections and duration.
    WrkHttp,
}

/// One step of the study.
#[derive(Debug)]
pub struct Step {
    pub name: &'static str,
    /// The subcommand, e.g. `["fs", "write"]`.
    pub command: &'static [&'static str],
    /// Arguments per mode (quick, default, full); None leaves the step out of that mode.
    pub args: [Option<&'static [&'static str]>; 3],
    /// Whether the subcommand takes `--dir` for its scratch files.
    pub takes_dir: bool,
    /// Whether the subcommand takes `--network` and its shaping (the network studies).
    pub takes_network: bool,
    /// Whether server and client run under SCHED_FIFO where the process may (`--sched fifo`),
    /// else under the normal class with a note.
    pub realtime: bool,
    /// Seconds per mode, for the time left on stderr (default: measured on a 2-vCPU VM).
    pub seconds: [u64; 3],
    pub control: Option<Control>,
    /// Where the reference contenders join the step (`run --contenders`): the connection
    /// counts they run at per mode (None: not in that mode, or not a network step), and the
    /// seconds they add.
    pub contenders: [Option<&'static str>; 3],
    pub contender_seconds: [u64; 3],
    /// Its place in the order `run --budget` keeps steps in (1 first): the steps that answer
    /// the main question for files and the network, then the equal-load sweeps, then the
    /// shapes beyond them.
    pub rank: u8,
    /// Whether the report judges published claims from its studies (`run --only claims`).
    pub claims: bool,
}

/// A part of the study `run --only` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    // The file steps (`--only`'s help says what each holds).
    Fs,
    // The echo and HTTP steps.
    Net,
    // The steps the report judges published claims from.
    Claims,
}

impl Only {
    /// Whether `step` is in this part.
    pub fn keeps(self, step: &Step) -> bool {
        match self {
            Only::Fs => step.command[0] == "fs",
            Only::Net => step.command[0] != "fs",
            Only::Claims => step.claims,
        }
    }
}

impl Step {
    pub fn args(&self, mode: Mode) -> Option<&'static [&'static str]> {
        self.args[mode.index()]
    }

    /// Seconds the step takes in `mode`, with the reference contenders or without, its
    /// engines' cells at `server_thread_counts` counts of server loops when it takes the
    /// network flags (`run --server-threads 1,2`: twice the cells).
    pub fn seconds(&self, mode: Mode, with_contenders: bool, server_thread_counts: u64) -> u64 {
        let contenders = match (with_contenders, self.contenders(mode)) {
            (true, Some(_)) => self.contender_seconds[mode.index()],
            _ => 0,
        };
        let cells = if self.takes_network {
            server_thread_counts
        } else {
            1
        };
        self.seconds[mode.index()] * cells + contenders
    }

    /// The connection counts the reference contenders run at in `mode`, if they join.
    pub fn contenders(&self, mode: Mode) -> Option<&'static str> {
        self.contenders[mode.index()]
    }

    /// The value of `flag` in the step's arguments for `mode` (e.g. `--duration` → `5s`).
    pub fn flag(&self, mode: Mode, flag: &str) -> Option<&'static str> {
        let args = self.args(mode)?;
        let at = args.iter().position(|arg| *arg == flag)?;
        args.get(at + 1).copied()
    }
}

pub const STEPS: &[Step] = &[
    Step {
        name: "fs write 4k",
        command: &["fs", "write"],
        args: [
            Some(&["--size", "64m", "--runs", "2"]),
            // The rungs that answer the seeds' questions (one SQE at a time, a batch, a ring
            // of 128, DEFER_TASKRUN), in rounds until decided; `--full` runs every rung.
            Some(&[
                "--size",
                "128m",
                "--runtime",
                "300ms",
                "--engine",
                "blocking,blocking#2,uring-single,uring-batch,uring-ring,uring-defer",
                "--runs",
                "auto",
            ]),
            Some(&["--size", "1g", "--runs", "auto"]),
        ],
        takes_dir: true,
        takes_network: false,
        realtime: false,
        seconds: [15, 30, 600],
        control: Some(Control::FioWrite),
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 1,
        claims: true,
    },
    Step {
        name: "fs write 1m",
        command: &["fs", "write"],
        args: [
            None,
            Some(&[
                "--size",
                "256m",
                "--block-size",
                "1m",
                "--engine",
                "blocking,blocking#2,uring-ring",
                "--runs",
                "auto",
            ]),
            Some(&["--size", "1g", "--block-size", "1m", "--runs", "auto"]),
        ],
        takes_dir: true,
        takes_network: false,
        realtime: false,
        seconds: [0, 15, 300],
        control: Some(Control::FioWrite),
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 11,
        claims: true,
    },
    Step {
        // The O_DIRECT column of the file ladder, and the only step where the IOPOLL rungs can
        // run (they complete only O_DIRECT I/O). 256 MiB at 1 s a run: 20 s measured here,
        // most of it blocking and uring-single, which write 4 KiB at a time to the device.
        name: "fs write 4k direct",
        command: &["fs", "write"],
        args: [
            None,
            Some(&[
                "--size",
                "64m",
                "--direct",
                "--runtime",
                "300ms",
                "--engine",
                "blocking,blocking#2,uring-single,uring-batch,uring-ring",
                "--runs",
                "auto",
            ]),
            Some(&["--size", "1g", "--direct", "--runs", "auto"]),
        ],
        takes_dir: true,
        takes_network: false,
        realtime: false,
        seconds: [0, 30, 600],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 8,
        claims: false,
    },
    Step {
        // Random 4 KiB O_DIRECT reads at depths 1 and 32 (issue 21): every read engine, the
        // NOP floor, and fio's psync, libaio and io_uring beside them.
        name: "fs read 4k direct",
        command: &["fs", "read"],
        args: [
            None,
            Some(&[
                "--size",
                "64m",
                "--direct",
                "--depth",
                "1,32",
                "--runtime",
                "200ms",
                "--engine",
                "blocking,blocking#2,threads,libaio,uring-ring,uring-defer",
                "--runs",
                "auto",
            ]),
            Some(&[
                "--size",
                "1g",
                "--direct",
                "--depth",
                "1,4,16,64,128",
                "--runtime",
                "1s",
                "--runs",
                "auto",
            ]),
        ],
        takes_dir: true,
        takes_network: false,
        realtime: false,
        seconds: [0, 65, 900],
        control: Some(Control::FioRead),
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 7,
        claims: false,
    },
    Step {
        name: "fs cycle",
        command: &["fs", "cycle"],
        args: [
            Some(&["--size", "16m", "--runs", "1"]),
            Some(&[
                "--size",
                "16m",
                "--engine",
                "blocking,blocking#2,uring-link,uring-defer",
                "--runs",
                "auto",
            ]),
            Some(&["--size", "256m", "--runs", "auto"]),
        ],
        takes_dir: true,
        takes_network: false,
        realtime: false,
        seconds: [20, 20, 1500],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 4,
        claims: true,
    },
    Step {
        name: "echo",
        command: &["echo"],
        args: [
            // A smoke run: every engine and contender once, at the connection count where the
            // engines differ most (all three counts made --quick take 3.5 min here).
            Some(QUICK_NET),
            // epoll (the readiness API io_uring replaces) and the rungs that matter most, at the
            // seeds' 1 and 50 connections, in short rounds until decided: the noise here moves
            // within seconds, so many short windows beat a few long ones. The reference
            // contenders add their cells at 50 connections and their integrity streams.
            Some(&[
                "--engine",
                "epoll,epoll#2,uring,uring-multishot,uring-defer,uring-bundle",
                "--connections",
                "1,50",
                "--duration",
                "400ms",
                "--warmup",
                "150ms",
                "--runs",
                "auto",
            ]),
            Some(&[
                "--duration",
                "5s",
                "--runs",
                "auto",
                "--connections",
                "1,2,50,128,256",
            ]),
        ],
        takes_dir: false,
        takes_network: true,
        realtime: false,
        seconds: [20, 140, 3600],
        control: None,
        contenders: [Some("50"), Some("50"), Some("50")],
        // A contender's cell costs about one engine cell and its start (Node's ≈ 0.3 s), plus
        // one 1.5 s integrity stream each.
        contender_seconds: [20, 40, 440],
        rank: 2,
        claims: true,
    },
    Step {
        // Seed 000's claim that io_uring falls behind epoll at 2 connections (`ringside claims
        // show seed000-echo`): the echo step above measures its 1 and 50.
        name: "echo 2",
        command: &["echo"],
        args: [None, Some(ECHO_2), Some(ECHO_2)],
        takes_dir: false,
        takes_network: true,
        realtime: false,
        // Two engines, about 0.7 s a window with its start, 8 to 24 rounds.
        seconds: [0, 20, 20],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 9,
        claims: true,
    },
    Step {
        // Issue 22's shapes beyond 64-byte ping-pong, one short cell each within the run's
        // budget: 16 KiB messages at 50 connections (beside the echo step's 64 B there, the
        // report's size sweep) for epoll and the cheapest io_uring rung at that size
        // (incremental buffers); tcpkali's stream (seed 004: 1 KiB messages, 128 connections;
        // MB/s and the server's CPU per MB) for the top receive rung, bundles, and the seed's
        // own server's kind, multishot (its claim at 128 connections). The full sweeps
        // and epoll beside the stream are `echo --payload` and `--mode stream` (bench/shapes.md).
        name: "echo 16k",
        command: &["echo"],
        args: [None, Some(SHAPE_16K), Some(SHAPE_16K)],
        takes_dir: false,
        takes_network: true,
        realtime: false,
        // Two engines, half a second a window, 8 to 24 rounds.
        seconds: [0, 20, 20],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 12,
        claims: false,
    },
    Step {
        name: "echo stream",
        command: &["echo"],
        args: [None, Some(SHAPE_STREAM), Some(SHAPE_STREAM)],
        takes_dir: false,
        takes_network: true,
        realtime: false,
        // Three engines, about 1.3 s a window with its warm-up, 8 to 24 rounds.
        seconds: [0, 65, 65],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 10,
        claims: true,
    },
    Step {
        name: "http",
        command: &["http"],
        args: [
            Some(QUICK_NET),
            Some(&[
                "--engine",
                "epoll,epoll#2,uring,uring-defer,uring-bundle",
                "--connections",
                "50",
                "--duration",
                "400ms",
                "--warmup",
                "150ms",
                "--runs",
                "auto",
            ]),
            Some(&[
                "--duration",
                "5s",
                "--runs",
                "auto",
                "--connections",
                "50,256",
            ]),
        ],
        takes_dir: false,
        takes_network: true,
        realtime: false,
        seconds: [20, 60, 2800],
        control: Some(Control::WrkHttp),
        contenders: [Some("50"), Some("50"), Some("50")],
        contender_seconds: [12, 30, 420],
        rank: 3,
        claims: true,
    },
    Step {
        // At 50 connections the closed loop above saturates the client, so its throughputs
        // rank the load generator: the engines compared at the same offered rates instead.
        name: "echo equal load",
        command: &["echo"],
        args: [
            Some(QUICK_ECHO_SWEEP),
            Some(DEFAULT_ECHO_SWEEP),
            Some(FULL_SWEEP),
        ],
        takes_dir: false,
        takes_network: true,
        realtime: true,
        seconds: [50, 70, 1150],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 5,
        claims: false,
    },
    Step {
        name: "http equal load",
        command: &["http"],
        args: [
            Some(QUICK_HTTP_SWEEP),
            Some(DEFAULT_HTTP_SWEEP),
            Some(FULL_SWEEP),
        ],
        takes_dir: false,
        takes_network: true,
        realtime: true,
        seconds: [40, 55, 1150],
        control: None,
        contenders: [None, None, None],
        contender_seconds: [0, 0, 0],
        rank: 6,
        claims: false,
    },
];

/// The equal-load sweeps' arguments per mode: a short probe per engine, then points at shares
/// (25% and up, issue 29) of the lower of the slowest concurrent engine's probe and the load's
/// own open-loop ceiling, which the sweep measures (the open-loop client costs several times a
/// closed loop's CPU per message: every send wakes an idle server). The steps run under SCHED_FIFO
/// (`Step::realtime`): under the normal class, other work on this 2-CPU machine held the
/// client and server back for 2–7 ms at a time, so at 17k msg/s, 50 connections, every echo
/// engine sent 0.4–4.5% of its messages more than 1 ms late with p99 1.4–3.3 ms, where under
/// SCHED_FIFO all of them held 19k, 38k and 67k msg/s with p99 116–414 µs (bench/equal-load.md).
/// Half-second windows: a point's p99 still rests on 90+ latencies above it.
/// Quick and default sweep the engines the closed-loop steps focus on (each engine is screened
/// at every point and followed to its knee: every engine of the table took 96 s of a quick
/// run); `--full` sweeps them all. The verdict's point is measured in rounds, so its
/// comparisons have intervals: 8 in the default run, 6 (the fewest a comparison is decided on,
/// `MIN_ROUNDS`) in quick, which screens one point, half the lower ceiling, after 100 ms
/// warm-ups to stay under its three minutes (two points, 200 ms warm-ups and 6 rounds took
/// 167 s here, one point 170 s: the knee steps vary run to run, 28 of an echo sweep's 71 runs;
/// this 161 s, its sweeps 49 and 41 s, the default's alone 60 and 50 s).
/// This makes one such list of flags from its engines, warm-up, probe, points and rounds.
macro_rules! sweep {
    ($engines:expr, $warmup:literal, $probe:literal, $points:literal, $rounds:literal) => {
        [
            "--sweep",
            "--engine",
            $engines,
            "--connections",
            "50",
            "--runs",
            $rounds,
            "--duration",
            "500ms",
            "--warmup",
            $warmup,
            "--probe-duration",
            $probe,
            "--sweep-points",
            $points,
        ]
    };
}

const QUICK_ECHO_SWEEP: &[&str] = &sweep!(ECHO_SWEPT, "100ms", "500ms", "0.5", "6");
const QUICK_HTTP_SWEEP: &[&str] = &sweep!(HTTP_SWEPT, "100ms", "500ms", "0.5", "6");
const DEFAULT_ECHO_SWEEP: &[&str] = &sweep!(ECHO_SWEPT, "200ms", "500ms", "0.25,0.5,0.75", "8");
const DEFAULT_HTTP_SWEEP: &[&str] = &sweep!(HTTP_SWEPT, "200ms", "500ms", "0.25,0.5,0.75", "8");
const ECHO_SWEPT: &str = "epoll,uring,uring-multishot,uring-defer,uring-bundle";
const HTTP_SWEPT: &str = "epoll,uring,uring-defer,uring-bundle";

const FULL_SWEEP: &[&str] = &[
    "--sweep",
    "--connections",
    "50",
    "--runs",
    "3",
    "--duration",
    "5s",
];

/// Seed 000's echo at 2 connections, in the default and the full run alike.
const ECHO_2: &[&str] = &[
    "--engine",
    "epoll,epoll#2,uring",
    "--connections",
    "2",
    "--duration",
    "400ms",
    "--warmup",
    "150ms",
    "--runs",
    "auto",
];

/// The shape steps' arguments: one cell per engine, one short run.
const SHAPE_16K: &[&str] = &[
    "--engine",
    "epoll,epoll#2,uring-recv-inc",
    "--payload",
    "16k",
    "--connections",
    "50",
    "--runs",
    "auto",
    "--duration",
    "300ms",
    "--warmup",
    "200ms",
];
/// A second of warm-up: 128 streams start with 32 MiB in flight, and uring-bundle echoed
/// nothing within the first 500 ms here while its provided buffers refilled.
const SHAPE_STREAM: &[&str] = &[
    "--engine",
    "epoll,epoll#2,uring-multishot,uring-bundle",
    "--mode",
    "stream",
    "--connections",
    "128",
    "--runs",
    "auto",
    "--duration",
    "300ms",
    "--warmup",
    "1s",
];

/// The echo and HTTP steps' arguments under `--quick`.
const QUICK_NET: &[&str] = &[
    "--duration",
    "1s",
    "--warmup",
    "200ms",
    "--runs",
    "1",
    "--connections",
    "50",
];

/// The steps of `mode`, in table order.
pub fn plan(mode: Mode) -> Vec<&'static Step> {
    STEPS
        .iter()
        .filter(|step| step.args(mode).is_some())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: every default step that measures its baseline measures it twice (the A/A pair a
    /// study adds to its default engines), but the equal-load sweeps (their own verdict rule).
    #[test]
    fn every_closed_loop_step_with_its_baseline_has_the_aa_pair() {
        for step in plan(Mode::Default) {
            let Some(list) = step.flag(Mode::Default, "--engine") else {
                continue;
            };
            let engines: Vec<&str> = list.split(',').collect();
            let workload = crate::engines::Workload::ALL
                .into_iter()
                .find(|workload| workload.name() == step.command.join("-"))
                .expect("a step's workload");
            let base = crate::engines::baseline(workload);
            let copy = format!("{base}#2");
            let sweep = step.args(Mode::Default).unwrap().contains(&"--sweep");
            if engines.contains(&base) && !sweep {
                assert!(engines.contains(&copy.as_str()), "{}: {list}", step.name);
            }
        }
    }

    #[test]
    fn quick_is_a_subset_with_small_files_and_every_mode_has_every_workload() {
        let quick: Vec<&str> = plan(Mode::Quick).iter().map(|step| step.name).collect();
        let expected = [
            "fs write 4k",
            "fs cycle",
            "echo",
            "http",
            "echo equal load",
            "http equal load",
        ];
        assert_eq!(quick, expected);
        assert_eq!(plan(Mode::Full).len(), STEPS.len());
        let seconds: u64 = plan(Mode::Default)
            .iter()
            .map(|s| s.seconds(Mode::Default, true, 1))
            .sum();
        let echo = STEPS.iter().find(|step| step.name == "echo").unwrap();
        let one = echo.seconds(Mode::Default, false, 1);
        assert_eq!(
            echo.seconds(Mode::Default, false, 2),
            2 * one,
            "a cell per loop count"
        );
        assert!(
            seconds <= 15 * 60,
            "the default study may take up to 15 minutes: the baseline, epoll and the rungs \
             that matter most in rounds until decided, the reference contenders and the read \
             step ({seconds} s estimated)"
        );
    }
}
