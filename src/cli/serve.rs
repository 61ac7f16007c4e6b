//! `serve echo|http`: one server for any client, its flags and the plan they turn into.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use super::common::{cpus_arg, duration_arg, server_helper_help, HelperArgs};
use super::load::payload_arg;
use super::net::{body_size_arg, cq_entries_arg, provided_buffers_arg, server_helpers, work_arg};
use crate::engines::uring::server::CQ_ENTRIES;
use crate::engines::{engines_of, find, Workload};
use crate::protocols::work::Work;
use crate::protocols::Proto;
use crate::studies::serve::Serve;
use crate::system::pin::CpuList;
use crate::system::tuning::Sched;

#[derive(clap::Args, Debug, Clone)]
#[command(mut_args(server_helper_help))]
pub struct ServeArgs {
    #[arg(long, short = 'e', help = serve_engine_help())]
    pub engine: String,
    /// Address to listen on; port 0 lets the kernel choose (the first line of stdout says which).
    #[arg(long, default_value = "127.0.0.1:3001")]
    pub listen: SocketAddr,
    /// Pin the server to this CPU; with --threads, a list (`0-3`, `0,2`): loop i on the i-th
    /// CPU, round robin.
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub cpu: Option<CpuList>,
    /// Event loops, each on its own pinned thread with its own listening socket on the one
    /// port (SO_REUSEPORT: the kernel spreads connections by a hash of their addresses) and,
    /// for io_uring, its own ring (epoll and io_uring engines). A fair split gives the loops
    /// their own CPUs and the load generator the rest: `--threads 2 --cpu 0-1` on a 4-CPU
    /// machine, the load on CPUs 2-3. Each loop also has its own io-wq workers: since Linux
    /// 5.12 the pool belongs to the thread, and IORING_SETUP_ATTACH_WQ shares only an SQPOLL
    /// thread (--share-sqpoll), so rings cannot share one.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// uring-sqpoll with --threads above 1: the later loops' rings attach to the first loop's
    /// ring (IORING_SETUP_ATTACH_WQ), so one SQPOLL thread polls every loop's ring instead of
    /// one thread each. That is all ATTACH_WQ shares since Linux 5.12: io-wq workers belong
    /// to each thread.
    #[arg(long)]
    pub share_sqpoll: bool,
    /// Connections served at once; more are accepted and closed at once.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Buffers in the provided-buffer pool of the multishot io_uring engines (a power of two,
    /// 8 KiB each): fewer connections' worth of unsent echoes fit before recv runs out.
    #[arg(long, default_value_t = 1024, value_parser = provided_buffers_arg)]
    pub provided_buffers: u16,
    /// Close a connection that sends nothing for this long (io_uring: a timeout linked to each
    /// recv, or one periodic tick for the multishot servers; epoll: a periodic timerfd;
    /// blocking/threads: socket timeouts).
    #[arg(long, value_parser = duration_arg)]
    pub idle_timeout: Option<Duration>,
    /// Completion queue entries of the io_uring engines (a power of two; the submission queue
    /// is no larger). A small queue overflows under load: the kernel holds the completions
    /// that do not fit and ends the multishot operations that posted them, which the server
    /// counts (`cq_overflows`) and re-arms.
    #[arg(long, default_value_t = CQ_ENTRIES, value_parser = cq_entries_arg)]
    pub cq_entries: u32,
    /// Scheduling class of the server (fifo = SCHED_FIFO 50, as `chrt -f 50`); by default the
    /// class it was started with (`chrt -f 50 ringside ...` stays real-time).
    #[arg(long, value_enum, default_value_t = Sched::Inherit)]
    pub sched: Sched,
    /// The io_uring engines' kernel threads: a server pinned with --cpu keeps them on that CPU
    /// unless told otherwise.
    #[command(flatten)]
    pub helpers: HelperArgs,
    /// Also write the counters as JSON to this file when the server stops (`-`: one line on
    /// stdout, after the `listening on` line).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Count the server's own syscalls (kernel tracepoint) for the summary and --stats. Off by
    /// default: the tracepoint sends every syscall down the kernel's slow path, a cost the
    /// server's peers do not pay (a study counts its servers from outside, over its window).
    #[arg(long)]
    pub count_syscalls: bool,
    /// CPU time each request costs the server (e.g. 2us), standing in for an application's own
    /// work: a loop over the request's bytes, its speed measured once at start, run where every
    /// engine asks the protocol for its reply, so each engine spends it alike. Charged per request,
    /// not per receive: `http` pays it for every request it parses (each of a pipelined
    /// batch); `echo` has no framing and pays it per --payload bytes received (a receive of n
    /// bytes pays n/payload of it), so every engine and client pays the same per byte
    /// whatever sizes their receives take.
    #[arg(long, value_name = "TIME", value_parser = work_arg)]
    pub work: Option<Duration>,
    /// Keep the loops' counters in this file, exactly their size (a study's memfd, named
    /// `/proc/PID/fd/N`), so the study reads the server's own syscall counts over its window.
    #[arg(long, hide = true)]
    pub counters: Option<PathBuf>,
    /// No summary on stderr when the server stops.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `serve echo`: the server's flags plus the message size its work is charged by.
#[derive(clap::Args, Debug, Clone)]
pub struct EchoServeArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// The clients' message size (k/m suffixes; `load --payload`, whose default it shares):
    /// --work charges one message's work per this many bytes received. Echo itself is the
    /// same at any size.
    #[arg(long, value_name = "BYTES", default_value = "64", value_parser = payload_arg)]
    pub payload: usize,
}

/// `serve http`: the echo server's flags plus the response body.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpServeArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Serve bodies of this many bytes (k/m suffixes) instead of the 13-byte "Hello, World!",
    /// so that larger sends are measured.
    #[arg(long, value_parser = body_size_arg)]
    pub body_size: Option<usize>,
}

/// `--server-threads 1,2,4`: counts of server loops from 1 to 256.
/// `--engine`'s help: the server engines of the table.
fn serve_engine_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    HELP.get_or_init(|| {
        let names: Vec<&str> = engines_of(Workload::Echo).map(|e| e.name).collect();
        format!(
            "The server engine (see `ringside engines`): {}.",
            names.join(", ")
        )
    })
}

impl ServeArgs {
    /// The server to run for `workload`, speaking `proto` (with its work).
    fn serve(&self, workload: Workload, proto: Proto) -> anyhow::Result<Serve> {
        let cpus = self
            .cpu
            .clone()
            .map(|CpuList(cpus)| cpus)
            .unwrap_or_default();
        let helpers = match cpus.first() {
            Some(&cpu) => server_helpers(&self.helpers, cpu, self.sched)?,
            None => self.helpers.resolve(None)?,
        };
        Ok(Serve {
            engine: find(workload, &self.engine)?,
            proto,
            listen: self.listen,
            cpus,
            threads: self.threads as usize,
            share_sqpoll: self.share_sqpoll,
            max_connections: self.max_connections as usize,
            provided_buffers: self.provided_buffers,
            idle_timeout: self.idle_timeout,
            cq_entries: self.cq_entries,
            sched: self.sched,
            helpers,
            stats: self.stats.clone(),
            count_syscalls: self.count_syscalls,
            counters: self.counters.clone(),
            quiet: self.quiet,
        })
    }

    /// The work per request, calibrated on the CPU this runs on.
    fn work(&self) -> Work {
        Work::calibrated(self.work.unwrap_or_default())
    }
}

impl EchoServeArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let work = self.serve.work().per_message_of(self.payload);
        let proto = Proto::echo().with_work(work);
        crate::studies::serve::run(&self.serve.serve(Workload::Echo, proto)?)
    }
}

impl HttpServeArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let proto = Proto::http(self.body_size).with_work(self.serve.work());
        crate::studies::serve::run(&self.serve.serve(Workload::Http, proto)?)
    }
}
