//! `echo` and `http`: the network studies' flags and the plans they
//! turn into. The two studies share their rig and output flags (`NetStudyArgs`, flattened);
//! each adds its own defaults and what it sends.

use crate::studies::Rounds;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::common::size_arg;
use super::common::{cpus_arg, duration_arg, parse_list, positive_duration_arg, rate_arg};
use super::common::{server_helper_help, HelperArgs, OutputArgs, SayArgs};
use super::load_hosts::LoadHostArgs;
use crate::engines::uring::ring::{format_cpus, Helpers};
use crate::engines::{default_list, full_list, select, with_aa_pair, Workload};
use crate::load::Mode;
use crate::studies::echo::EchoStudy;
use crate::studies::http::HttpStudy;
use crate::studies::net::contender::Contender;
use crate::studies::net::{NetStudy, Placement, Rig, Sweep, ECHO_PAYLOAD_FLAG};
use crate::studies::serve::runs_event_loops;
use crate::system::network::{parse_loss, parse_rate, Network, PathPlan, Shaping};
use crate::system::pin::{cpus_online, CpuList};
use crate::system::tuning::{Idle, Sched};

/// The flags both network studies share. They carry the names of the file studies' flags
/// (`--engine`, `--runs`, `--format`, `--output`, `--quiet`) with the network's own defaults
/// (a few minutes without flags, the full sweep with `--full`), and two CPUs (`--server-cpu`,
/// `--client-cpu`) instead of one `--cpu`.
#[derive(Args, Debug, Clone)]
#[command(mut_args(server_helper_help))]
pub struct NetStudyArgs {
    /// Rounds: each round runs every cell once, in a fresh random order (each rung next to
    /// the engine it extends). `auto` adds rounds in stages (12, 16, 24) until the questions
    /// the answer asks (each engine against epoll, each rung against the engine it extends)
    /// are decided or cannot be, each connection count on its own; a number runs exactly that
    /// many.
    #[arg(long, short = 'r', default_value = "auto", value_parser = Rounds::parse)]
    pub runs: Rounds,
    /// The full sweep: every engine of the workload a study can run, more connection counts
    /// (echo 1, 50 and 256; HTTP 50 and 256) and long windows after 1 s warm-ups (echo 5 s,
    /// HTTP 10 s), as the published benchmarks ringside repeats ran; an hour or more (the plan
    /// says how long). Flags given still win.
    #[arg(long)]
    pub full: bool,
    /// Unmeasured time before each run's window [default: 150ms; 1s with --full or --mode
    /// stream].
    #[arg(long, value_parser = duration_arg)]
    pub warmup: Option<Duration>,
    /// A message not echoed, or a response not in, within this time is a timeout (a client
    /// `blocking` never serves).
    #[arg(long, default_value = "2s", value_parser = positive_duration_arg)]
    pub timeout: Duration,
    /// CPUs of the server's event loops (`0-3`): loop i on the i-th, round robin [default:
    /// the first online CPUs, one per loop].
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub server_cpu: Option<CpuList>,
    /// Event loops of the epoll and io_uring servers (`serve --threads`), comma separated: a
    /// cell each, alternated with the engines (`1,2,4` sweeps them). Each loop is one pinned
    /// thread with its own listening socket (SO_REUSEPORT) and ring. A fair split gives every
    /// loop a CPU of its own and the load generator the CPUs left, which is the default
    /// (--server-cpu, --client-cpu): on 8 CPUs, 2 loops on CPUs 0-1 and 6 load threads on
    /// 2-7. Where loops and load outnumber the CPUs they share them (2 loops on 2 CPUs: the
    /// load runs on CPU 1 beside loop 1), which measures sharing, not scaling; such rows say
    /// so (`cpus_shared`). Engines without loops (blocking, threads) run at 1 only.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "COUNTS",
        default_value = "1"
    )]
    pub server_threads: Vec<String>,
    /// CPUs of the load generator (`2-7`), load thread i on the i-th [default: the online CPUs
    /// the server's loops leave, or the last online CPU when they leave none].
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub client_cpu: Option<CpuList>,
    /// Load generator threads [default: one per CPU of --client-cpu's default or list].
    #[arg(long, short = 't', value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Option<u32>,
    /// With uring-sqpoll and more than one server thread: the later loops' rings attach to
    /// the first loop's SQPOLL thread (IORING_SETUP_ATTACH_WQ), so all loops share one poller
    /// instead of one each (recorded as `sqpoll_shared`).
    #[arg(long)]
    pub share_sqpoll: bool,
    /// Scheduling class of server and client (fifo = SCHED_FIFO 50, as `chrt -f 50`).
    #[arg(long, value_enum, default_value_t = Sched::Other)]
    pub sched: Sched,
    /// CPU idle state during the study (poll = hold /dev/cpu_dma_latency at 0).
    #[arg(long, value_enum, default_value_t = Idle::Default)]
    pub idle: Idle,
    /// The io_uring servers' kernel threads, recorded in the io_uring engines' rows.
    #[command(flatten)]
    pub helpers: HelperArgs,
    /// Also count io_uring's own events in the kernel (SQEs, CQEs, io-wq punts, polls armed,
    /// task-work runs, CQ overflows, short writes) on the server's threads, for the report's
    /// causes: in 2 attribution rounds after the timed ones, whose rows are marked
    /// `attribution` and never compared (the tracepoints cost some engines far more than
    /// others: docs/rows.md gives what they cost on a 2-vCPU VM). An equal-load sweep counts
    /// none.
    #[arg(long)]
    pub ring_events: bool,
    /// Leave out the A/A pair: without --engine a study also measures epoll a second time
    /// (epoll#2), an ordinary cell of every round, so the report can say how often it tells an
    /// engine from itself.
    #[arg(long)]
    pub no_aa: bool,
    /// Servers close connections silent for this long (`serve --idle-timeout`), so the
    /// timeouts' cost per message is measured; loads keep every connection busy.
    #[arg(long, value_parser = duration_arg)]
    pub idle_timeout: Option<Duration>,
    /// CPU time each request costs the engines' servers (`serve --work`, e.g. 2us), spent the
    /// same way in every engine, comma separated (`0us,2us,10us`): a cell each, alternated
    /// with the engines; rows record it (`work_ns`). Charged per request, not per receive:
    /// HTTP per request parsed; echo per --payload bytes received (each cell's server is told
    /// its payload; rows record it as `work_bytes`), however the receives split them.
    /// Contenders do their own work (they run at the first).
    #[arg(long, value_name = "TIMES", value_delimiter = ',', value_parser = work_arg)]
    pub work: Vec<Duration>,
    /// Open loop at these offered rates, messages (or requests)/s over all connections, comma
    /// separated: a cell each, latency counted from each message's due time (as wrk2), sends
    /// more than 1 ms behind it counted (`client_late_share`). Without it, a closed loop.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "RATES",
        conflicts_with = "sweep"
    )]
    pub rate: Vec<String>,
    /// The equal-load sweep: per connection count a closed-loop probe of each engine
    /// (--probe-duration), the load's own open-loop ceiling against the fastest, then every
    /// engine that serves connections at once open loop at the same rates, --sweep-points of
    /// the lower ceiling (the slowest probe, or the load's own), each going on past them until
    /// it falls behind or its p99 passes --p99-bound (its knee); the highest point epoll and
    /// most engines held is then measured in rounds (--runs) by those that held it, the others
    /// named with their knees. Rows carry `offered_rate`,
    /// `client_late_share` and `server_cpu_us_per_op`; the report compares the engines' server
    /// CPU per operation there with epoll's, paired by round.
    #[arg(long)]
    pub sweep: bool,
    /// The sweep's offered rates as fractions of the lower ceiling (the slowest closed-loop
    /// probe of the engines that serve connections at once, or the load's own open-loop
    /// ceiling, whichever is lower), comma separated, ascending.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "FRACTIONS",
        default_value = "0.25,0.5,0.75,0.9"
    )]
    pub sweep_points: Vec<String>,
    /// A sweep's point is held when its p99 stays under this.
    #[arg(long, default_value = "1ms", value_parser = positive_duration_arg)]
    pub p99_bound: Duration,
    /// Measured time of a sweep's closed-loop probes.
    #[arg(long, default_value = "1s", value_parser = positive_duration_arg)]
    pub probe_duration: Duration,
    #[command(flatten)]
    pub path: PathArgs,
    #[command(flatten)]
    pub load_hosts: LoadHostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub say: SayArgs,
    /// Also measure this server program, as NAME=COMMAND (repeatable): run through `sh -c`
    /// pinned to --server-cpu, `{port}` replaced by a free port on 127.0.0.1 and `{cpu}` by the
    /// server CPU, a fresh process per run, measured from outside as the engines are (all its
    /// processes and threads). Its rows say `contender:NAME`; echo contenders also get the
    /// slow-reader integrity stream. `--engine none` measures contenders alone.
    #[arg(long = "contender", value_name = "NAME=COMMAND", value_parser = Contender::parse)]
    pub contenders: Vec<Contender>,
    /// Run the contenders at these connection counts only, comma separated (default: every
    /// count of --connections).
    #[arg(long, value_delimiter = ',', value_name = "COUNTS")]
    pub contender_connections: Vec<String>,
    /// How long a contender may take to accept connections before it counts as never listening.
    #[arg(long, default_value = "10s", value_parser = duration_arg)]
    pub contender_timeout: Duration,
}

/// The path between server and client, and how it is shaped (recorded in every row's params).
#[derive(Args, Debug, Clone, Default)]
pub struct PathArgs {
    /// loopback: 127.0.0.1, the kernel's shortcut (no device, no qdisc). veth: server and
    /// client in two network namespaces joined by a veth pair (198.18.0.1 and .2, no route
    /// anywhere else), so packets cross a device with a qdisc that --rtt, --link-rate and --loss
    /// can shape; needs root and iproute2; removed at the end, also on Ctrl-C. Unshaped, both
    /// hand packets to the same per-CPU backlog, so they measure alike (docs/studies.md).
    #[arg(long, value_enum, default_value_t = Network::Loopback)]
    pub network: Network,
    /// Round-trip time added on the veth pair (tc netem delay, half each way), e.g. 200us.
    #[arg(long, value_name = "TIME", value_parser = duration_arg)]
    pub rtt: Option<Duration>,
    /// Rate of each direction of the veth pair, as tc writes it (10gbit, 500mbit): tbf, or
    /// netem's rate beside --rtt or --loss.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub link_rate: Option<u64>,
    /// Packets dropped in each direction of the veth pair (tc netem loss), e.g. 0.1%.
    #[arg(long, value_name = "PERCENT", value_parser = parse_loss)]
    pub loss: Option<f64>,
}

impl PathArgs {
    pub fn plan(&self) -> PathPlan {
        PathPlan {
            network: self.network,
            shaping: Shaping {
                rtt: self.rtt,
                rate_bits_per_sec: self.link_rate,
                loss_percent: self.loss,
            },
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct EchoArgs {
    /// Server engines, comma separated (see `ringside engines`).
    #[arg(
        long,
        short = 'e',
        value_delimiter = ',',
        default_value = default_list(Workload::Echo)
    )]
    pub engine: Vec<String>,
    /// How each connection uses the server: ping-pong (one message in flight), or stream
    /// (writes of --payload bytes without waiting, up to 256 KiB ahead of the echo, every
    /// byte checked; rows carry MB/s and the server's CPU µs, syscalls and SQEs per MB).
    #[arg(long, value_enum, default_value_t = Mode::PingPong)]
    pub mode: Mode,
    /// Connection counts, comma separated: one column each [default: 1,50; --full 1,50,256;
    /// stream: 128,256, as tcpkali's echo benchmarks run].
    #[arg(long, short = 'c', value_delimiter = ',')]
    pub connections: Vec<String>,
    /// Message (stream: write) sizes, comma separated (k suffix allowed): one table each
    /// [default: 64; stream: 1k, tcpkali's message size].
    #[arg(long, value_delimiter = ',')]
    pub payload: Vec<String>,
    /// Measured time per run [default: 400ms; --full 5s].
    #[arg(long, short = 'd', value_parser = positive_duration_arg)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub study: NetStudyArgs,
}

/// The echo study's flags with HTTP's defaults (50 and 256 connections, 10 s windows with
/// `--full` as wrk's default) and a body size instead of a payload.
#[derive(Args, Debug, Clone)]
pub struct HttpArgs {
    /// Server engines, comma separated (see `ringside engines`); the first `epoll` in the list
    /// is the baseline of "% more requests".
    #[arg(
        long,
        short = 'e',
        value_delimiter = ',',
        default_value = default_list(Workload::Http)
    )]
    pub engine: Vec<String>,
    /// Connection counts, comma separated: one table each.
    #[arg(long, short = 'c', value_delimiter = ',', default_value = "50,256")]
    pub connections: Vec<String>,
    /// Serve bodies of these many bytes (k suffix allowed), comma separated: a cell each, a
    /// fresh server serving that size, rows carrying it (`body_size` as written, `body_bytes`).
    /// Without it, "Hello, World!".
    #[arg(long, value_delimiter = ',', value_parser = body_size_text)]
    pub body_size: Vec<String>,
    /// Measured time per run [default: 400ms; --full 10s, wrk's default].
    #[arg(long, short = 'd', value_parser = positive_duration_arg)]
    pub duration: Option<Duration>,
    #[command(flatten)]
    pub study: NetStudyArgs,
}

/// The windows of a network study without flags: 400 ms after a 150 ms warm-up, in many short
/// rounds (the noise of a shared 2-CPU machine moves within seconds, so many short windows
/// decide sooner than a few long ones, docs/verdicts.md) ...
const QUICK_WINDOW: Duration = Duration::from_millis(400);
const QUICK_WARMUP: Duration = Duration::from_millis(150);
/// ... and with `--full`, or a stream's, whose buffers take a second to fill (uring-bundle
/// echoed nothing in a stream's first 500 ms).
const FULL_WARMUP: Duration = Duration::from_secs(1);

/// The engines a study runs without `--engine`, by name.
fn default_names(workload: Workload) -> impl Iterator<Item = &'static str> {
    default_list(workload).split(',')
}

impl NetStudyArgs {
    /// The measured window: `--duration`, else 400 ms, or `full` with `--full`.
    fn window(&self, given: Option<Duration>, full: Duration) -> Duration {
        given.unwrap_or(match self.full {
            true => full,
            false => QUICK_WINDOW,
        })
    }

    fn study(
        &self,
        workload: Workload,
        engines: &[String],
        connections: &[String],
        duration: Duration,
        serve: Vec<String>,
        stream: bool,
    ) -> anyhow::Result<NetStudy> {
        self.path.plan().check()?;
        if let (Sched::Fifo, Some(reason)) = (self.sched, self.sched.refusal()) {
            anyhow::bail!(
                "--sched fifo: the kernel refused SCHED_FIFO: {reason}. Leave out --sched fifo \
                 to measure under SCHED_OTHER"
            );
        }
        let online = cpus_online();
        let given = |list: &Option<CpuList>| list.clone().map(|CpuList(cpus)| cpus);
        let (server_cpus, client_cpus) = (given(&self.server_cpu), given(&self.client_cpu));
        let server_cpus_named = server_cpus
            .iter()
            .flatten()
            .map(|&cpu| ("--server-cpu", cpu));
        let client_cpus_named = client_cpus
            .iter()
            .flatten()
            .map(|&cpu| ("--client-cpu", cpu));
        for (flag, cpu) in server_cpus_named.chain(client_cpus_named) {
            anyhow::ensure!(
                online.contains(&cpu),
                "{flag} {cpu} is not an online CPU here (online: {})",
                format_cpus(&online)
            );
        }
        let count = |text: &str| {
            text.parse::<usize>()
                .ok()
                .filter(|&n| (1..=65_000).contains(&n))
        };
        let connection_counts = parse_list(connections, "--connections", count)?;
        let contender_connection_counts = match self.contender_connections.as_slice() {
            [] => connection_counts.clone(),
            counts => parse_list(counts, "--contender-connections", count)?,
        };
        if let Some(stray) =
            (contender_connection_counts.iter()).find(|count| !connection_counts.contains(count))
        {
            anyhow::bail!("--contender-connections {stray} is not one of --connections");
        }
        let mut names: Vec<&str> = Vec::new();
        for contender in &self.contenders {
            anyhow::ensure!(
                !names.contains(&contender.name.as_str()),
                "two contenders are called '{}'",
                contender.name
            );
            names.push(&contender.name);
        }
        let engines = match engines {
            [none] if none == "none" => {
                anyhow::ensure!(
                    !self.contenders.is_empty(),
                    "--engine none leaves nothing to measure without a --contender"
                );
                Vec::new()
            }
            // The default list itself, as clap fills it in, names nothing: --full widens it.
            names if self.full && names.iter().map(String::as_str).eq(default_names(workload)) => {
                full_list(workload)
            }
            names => select(workload, names)?,
        };
        let server_thread_counts = server_thread_counts(&self.server_threads)?;
        if let Some(engine) = engines.iter().find(|engine| !runs_event_loops(engine)) {
            // Such engines run at one loop only, so a sweep must include it.
            anyhow::ensure!(
                server_thread_counts.contains(&1),
                "--server-threads applies to the event-loop engines (epoll and io_uring); leave \
                 {} out of --engine, it serves with a thread per connection or one at a time \
                 (in a sweep that includes 1 it runs at 1 only)",
                engine.name
            );
        }
        anyhow::ensure!(
            self.contenders.is_empty() || self.path.network == Network::Loopback,
            "--contender servers run on loopback only; leave out --network veth to measure them"
        );
        anyhow::ensure!(
            self.load_hosts.is_empty()
                || (self.contenders.is_empty() && self.path.plan() == PathPlan::default()),
            "--load-host and --load-cmd run the load on other hosts, over the network between \
             them: leave out --network, --rtt, --link-rate, --loss and --contender (contenders \
             listen on loopback only)"
        );
        anyhow::ensure!(
            !self.share_sqpoll
                || (engines.iter().any(|engine| engine.needs.setup.sqpoll)
                    && server_thread_counts.iter().any(|&count| count > 1)),
            "--share-sqpoll shares uring-sqpoll's poller between server threads: it needs \
             uring-sqpoll in --engine and a --server-threads count above 1"
        );
        let rates = match self.rate.is_empty() {
            true => Vec::new(),
            false => (self.rate.iter())
                .map(|text| rate_arg(text).map_err(|error| anyhow::anyhow!("--rate {error}")))
                .collect::<anyhow::Result<_>>()?,
        };
        let load_sweep = match self.sweep {
            false => None,
            true => {
                let points = parse_list(&self.sweep_points, "--sweep-points", |text| {
                    text.parse::<f64>().ok().filter(|m| *m > 0.0 && *m <= 100.0)
                })?;
                anyhow::ensure!(
                    points.windows(2).all(|pair| pair[0] < pair[1]),
                    "--sweep-points must ascend (each multiple above the one before)"
                );
                Some(Sweep {
                    points,
                    p99_bound: self.p99_bound,
                    probe: self.probe_duration,
                })
            }
        };
        let works: Vec<Option<Duration>> = match self.work.as_slice() {
            [] => vec![None],
            works => works.iter().copied().map(Some).collect(),
        };
        anyhow::ensure!(
            (works.iter()).all(|work| works.iter().filter(|w| *w == work).count() == 1),
            "--work names a time twice"
        );
        let load_hosts = self.load_hosts.plan(
            self.threads.map(|threads| threads as usize),
            client_cpus.clone().unwrap_or_default(),
        )?;
        let placement = Placement {
            online,
            server_cpus,
            client_cpus,
            client_threads: self.threads.map(|threads| threads as usize),
        };
        let (first_count, sweep) = (server_thread_counts[0], server_thread_counts.len() > 1);
        let cpus = placement.split(first_count);
        let server_cpu = cpus.server[0];
        // The default list itself, as clap fills it in, names nothing.
        let engines_named = !self.full
            && engines
                .iter()
                .map(|engine| engine.name)
                .ne(default_names(workload));
        let engines = match engines_named || self.no_aa {
            true => engines,
            false => with_aa_pair(workload, engines),
        };
        Ok(NetStudy {
            workload: workload.name(),
            engines,
            engines_named,
            contenders: (self.contenders.iter())
                .map(|contender| Contender {
                    start_timeout: self.contender_timeout,
                    ..contender.clone()
                })
                .collect(),
            connection_counts,
            server_thread_counts,
            contender_connection_counts,
            rounds: self.runs,
            works,
            rates,
            sweep: load_sweep,
            duration,
            warmup: self.warmup.unwrap_or(match self.full || stream {
                true => FULL_WARMUP,
                false => QUICK_WARMUP,
            }),
            timeout: self.timeout,
            rig: Rig {
                server_threads: first_count,
                cpus,
                record_threads: sweep,
                share_sqpoll: self.share_sqpoll,
                sched: self.sched,
                idle: self.idle,
                serve,
                helpers: server_helpers(&self.helpers, server_cpu, self.sched)?,
                path: self.path.plan(),
                ring_events: self.ring_events,
                idle_timeout: self.idle_timeout,
                work: None,
                work_bytes: None,
                hosts: None,
            },
            placement,
            payload_flag: None,
            destination: self.output.destination()?,
            quiet: self.say.quiet,
            verbose: self.say.verbose,
            load_hosts,
        })
    }
}

impl EchoArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let stream = self.mode == Mode::Stream;
        let or_default = |given: &[String], ping_pong: &str, stream_default: &str| match (
            given.is_empty(),
            stream,
        ) {
            (false, _) => given.to_vec(),
            (true, false) => ping_pong.split(',').map(String::from).collect(),
            (true, true) => stream_default.split(',').map(String::from).collect(),
        };
        anyhow::ensure!(
            !stream || (self.study.rate.is_empty() && !self.study.sweep),
            "--mode stream is a closed loop (each connection writes as fast as its window \
             allows): leave out --rate and --sweep"
        );
        let ping_pong_connections = match self.study.full {
            true => "1,50,256",
            false => "1,50",
        };
        let connections = or_default(&self.connections, ping_pong_connections, "128,256");
        let payload = or_default(&self.payload, "64", "1k");
        let mut net = self.study.study(
            Workload::Echo,
            &self.engine,
            &connections,
            self.study.window(self.duration, Duration::from_secs(5)),
            vec!["echo".into()],
            stream,
        )?;
        let payloads = parse_list(&payload, "--payload", |text| {
            crate::units::parse_size(text)
                .ok()
                .filter(|&n| (1..=1 << 24).contains(&n))
                .map(|n| n as usize)
        })?;
        net.payload_flag = Some(ECHO_PAYLOAD_FLAG);
        let study = EchoStudy {
            net,
            payloads,
            mode: self.mode,
        };
        crate::studies::echo::run(&study)
    }
}

impl HttpArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let mut net = self.study.study(
            Workload::Http,
            &self.engine,
            &self.connections,
            self.study.window(self.duration, Duration::from_secs(10)),
            vec!["http".to_string()],
            false,
        )?;
        let mut body_sizes = Vec::new();
        for text in &self.body_size {
            let bytes = body_size_arg(text).map_err(|error| anyhow::anyhow!(error))?;
            anyhow::ensure!(
                !body_sizes.iter().any(|(known, _)| *known == bytes),
                "--body-size names {text} twice"
            );
            body_sizes.push((bytes, text.clone()));
        }
        net.payload_flag = (!body_sizes.is_empty()).then_some("--body-size");
        let study = HttpStudy { net, body_sizes };
        crate::studies::http::run(&study)
    }
}

pub fn server_thread_counts(texts: &[String]) -> anyhow::Result<Vec<usize>> {
    parse_list(texts, "--server-threads", |text| {
        text.parse::<usize>()
            .ok()
            .filter(|&n| (1..=256).contains(&n))
    })
}

/// A body size the servers take, kept as written (rows record it so).
fn body_size_text(text: &str) -> Result<String, String> {
    body_size_arg(text).map(|_| text.to_string())
}

pub(super) fn body_size_arg(text: &str) -> Result<usize, String> {
    match size_arg(text)? {
        bytes if bytes > 1 << 24 => Err("bodies above 16 MiB are not supported".into()),
        bytes => Ok(bytes as usize),
    }
}

/// `--work`: up to a second per request.
pub(super) fn work_arg(text: &str) -> Result<Duration, String> {
    match duration_arg(text)? {
        work if work > Duration::from_secs(1) => Err(format!("'{text}': at most 1s a request")),
        work => Ok(work),
    }
}

pub(super) fn cq_entries_arg(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(count) if count.is_power_of_two() && (2..=65536).contains(&count) => Ok(count),
        _ => Err(format!("'{text}' is not a power of two from 2 to 65536")),
    }
}

pub(super) fn provided_buffers_arg(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(count) if count.is_power_of_two() && count <= 32768 => Ok(count),
        _ => Err(format!("'{text}' is not a power of two from 1 to 32768")),
    }
}

/// The kernel threads of a server pinned to `cpu` under `sched`: its io-wq workers and, under
/// the normal class, its SQPOLL thread stay on that CPU unless `--iowq-cpus` or
/// `--sqpoll-cpu` say otherwise (sockets rarely need workers, and the other CPU is the
/// client's).
pub(super) fn server_helpers(
    args: &HelperArgs,
    cpu: usize,
    sched: Sched,
) -> anyhow::Result<Helpers> {
    let mut helpers = args.resolve(Some(cpu))?;
    let server = Helpers::for_server(cpu, sched.is_realtime());
    if args.iowq_cpus.is_none() {
        helpers.iowq_cpus = server.iowq_cpus;
    }
    if args.sqpoll_cpu.is_none() {
        helpers.sqpoll_cpu = server.sqpoll_cpu;
    }
    Ok(helpers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run` passes a path to its steps as flags: they must parse back to the same path.
    #[test]
    fn a_path_survives_its_flags() {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            path: PathArgs,
        }
        let parse = |args: &[&str]| -> PathPlan {
            let command: Command =
                clap::Parser::try_parse_from(["ringside"].iter().chain(args)).unwrap();
            command.path.plan()
        };
        let plan = parse(&[
            "--network",
            "veth",
            "--rtt",
            "200us",
            "--link-rate",
            "10gbit",
        ]);
        assert_eq!(plan.shaping.rtt, Some(Duration::from_micros(200)));
        assert_eq!(plan.shaping.rate_bits_per_sec, Some(10_000_000_000));
        let flags = plan.args();
        let again = parse(&flags.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(again, plan);
        assert_eq!(parse(&[]), PathPlan::default());
        assert!(
            parse(&["--loss", "1%"]).check().is_err(),
            "loss on loopback"
        );
    }

    /// A server's SQPOLL thread shares the server's CPU under the normal class (the other CPU
    /// is the client's), keeps off it under a real-time class (it would starve there), and
    /// goes where `--sqpoll-cpu` says whatever the class.
    #[test]
    fn a_servers_poller_is_placed_by_its_class() {
        let cpu = 0;
        let default = HelperArgs::default();
        let placed = |args: &HelperArgs, sched| server_helpers(args, cpu, sched).unwrap();
        assert_eq!(placed(&default, Sched::Other).sqpoll_cpu, Some(cpu));
        assert_ne!(placed(&default, Sched::Fifo).sqpoll_cpu, Some(cpu));
        let told = HelperArgs {
            sqpoll_cpu: Some(cpu),
            ..HelperArgs::default()
        };
        for sched in [Sched::Other, Sched::Fifo] {
            assert_eq!(placed(&told, sched).sqpoll_cpu, Some(cpu));
            assert_eq!(placed(&told, sched).iowq_cpus, [cpu]);
        }
    }
}
