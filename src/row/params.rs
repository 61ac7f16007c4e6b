//! The parameters a row carries (`params` in its JSON): every key is a `Param`, so the compiler
//! checks each name where a row is written or read; the JSON keeps the same strings, the
//! contract outside checks read.

use serde_json::{Map, Value};

/// The parameter `ringside claims run` adds to its rows: the claim's id (two claims' studies of
/// one shape had rounds of their own, which do not pair).
pub const CLAIM_PARAM: &str = "claim";
/// The parameter `ringside claims run` adds beside it: which form of the experiment ran,
/// `quick` or `full` (a quick verdict is provisional).
pub const CLAIM_FORM_PARAM: &str = "claim_form";

macro_rules! params {
    ($($(#[doc = $doc:literal])* $variant:ident = $key:literal,)*) => {
        /// One key of a row's `params`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Param {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Param {
            pub const ALL: &'static [Param] = &[$(Param::$variant,)*];

            /// The key as the JSON writes it.
            pub const fn key(self) -> &'static str {
                match self {
                    $(Param::$variant => $key,)*
                }
            }
        }
    };
}

params! {
    // Files.
    /// The file's size, e.g. "64M".
    Size = "size",
    /// Bytes per write or read.
    BlockSize = "block_size",
    /// The page cycle's page.
    PageSize = "page_size",
    /// Operations in flight.
    Depth = "depth",
    /// A thread pool's threads (`threads`, fio's numjobs).
    Threads = "threads",
    Numjobs = "numjobs",
    /// overwrite or fresh.
    File = "file",
    /// random or sequential reads.
    Access = "access",
    /// warm, cold or direct.
    Cache = "cache",
    Direct = "direct",
    /// The seed of the random offsets.
    Seed = "seed",
    /// The read file's layout on disk.
    Layout = "layout",
    /// How the page cycle syncs (fsync, fdatasync, sync_file_range).
    Sync = "sync",
    /// One fsync at the end of a write run.
    FsyncEnd = "fsync_end",
    // The load.
    Connections = "connections",
    PayloadBytes = "payload_bytes",
    ClientThreads = "client_threads",
    /// The client's scheduling class.
    Sched = "sched",
    /// ping-pong, pipelined or stream.
    Mode = "mode",
    /// An open loop's offered rate.
    RatePerSec = "rate_per_sec",
    /// A stream's reading client: its rate cap, receive buffer and window.
    ReadBytesPerSec = "read_bytes_per_sec",
    RcvbufBytes = "rcvbuf_bytes",
    WindowBytes = "window_bytes",
    /// An HTTP body's size as asked ("1k") and in bytes.
    BodySize = "body_size",
    BodyBytes = "body_bytes",
    /// The p99 bound a sweep's point must stay under to count as held, in ns.
    P99BoundNs = "p99_bound_ns",
    /// An equal-load sweep's rows: `probe` (its closed-loop probe), `ceiling` (the load's own
    /// ceiling) or `point`.
    Sweep = "sweep",
    /// A sweep's run once more of a rate the engine missed (true; absent otherwise): it
    /// decides whether the rate was held, and is no round of its own.
    SecondLook = "second_look",
    /// Documents merged from this many hosts.
    Hosts = "hosts",
    /// A study whose load ran on other hosts: the hosts as given (comma separated), and the
    /// address the servers listened on.
    LoadHosts = "load_hosts",
    ListenOn = "listen_on",
    // The server and its machine.
    ServerThreads = "server_threads",
    ServerCpu = "server_cpu",
    ServerCpus = "server_cpus",
    ClientCpu = "client_cpu",
    ClientCpus = "client_cpus",
    /// CPUs the server and the client share.
    CpusShared = "cpus_shared",
    /// The idle state the vCPUs were held in.
    Idle = "idle",
    /// The server's work per request (`--work`): time or bytes.
    WorkNs = "work_ns",
    WorkBytes = "work_bytes",
    /// loopback, veth, or a shaped link's round trip, rate and loss.
    Network = "network",
    RttUs = "rtt_us",
    RateBitsPerSec = "rate_bits_per_sec",
    LossPercent = "loss_percent",
    // What an io_uring engine asked the kernel for and got.
    IowqBoundedMax = "iowq_bounded_max",
    IowqUnboundedMax = "iowq_unbounded_max",
    IowqCpus = "iowq_cpus",
    SqpollCpu = "sqpoll_cpu",
    SqpollIdleMs = "sqpoll_idle_ms",
    /// Servers that share one SQPOLL thread.
    SqpollShared = "sqpoll_shared",
    ProvidedBuffers = "provided_buffers",
    RegisteredBytes = "registered_bytes",
    // Rows that are not ringside's engines.
    /// A control (fio, wrk): never verified, drawn grey.
    Control = "control",
    /// A contender's command line.
    Command = "command",
}

impl Param {
    /// The parameter named `key` in a document, if ringside writes one.
    pub fn of_key(key: &str) -> Option<Param> {
        Param::ALL.iter().copied().find(|param| param.key() == key)
    }
}

/// A row's parameters, written and read by `Param`.
pub trait Params {
    fn put(&mut self, param: Param, value: impl Into<Value>);
    fn param(&self, param: Param) -> Option<&Value>;

    fn param_u64(&self, param: Param) -> Option<u64> {
        self.param(param).and_then(Value::as_u64)
    }

    fn param_str(&self, param: Param) -> Option<&str> {
        self.param(param).and_then(Value::as_str)
    }
}

impl Params for Map<String, Value> {
    fn put(&mut self, param: Param, value: impl Into<Value>) {
        self.insert(param.key().into(), value.into());
    }

    fn param(&self, param: Param) -> Option<&Value> {
        self.get(param.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_names_one_param() {
        for &param in Param::ALL {
            assert_eq!(Param::of_key(param.key()), Some(param));
        }
        assert_eq!(Param::of_key("connection"), None);
    }

    #[test]
    fn a_param_reads_back_what_was_put() {
        let mut params = Map::new();
        params.put(Param::Depth, 32);
        params.put(Param::Cache, "direct");
        assert_eq!(params.param_u64(Param::Depth), Some(32));
        assert_eq!(params.param_str(Param::Cache), Some("direct"));
        assert_eq!(params["depth"], 32, "the JSON keeps its key");
    }
}
