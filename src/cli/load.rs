//! `load echo` and `load http`: the load generator's flags, and the plan of one load run.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use super::common::OutputArgs;
use super::common::{cpus_arg, duration_arg, positive_duration_arg, rate_arg, size_arg};
use crate::load::{HttpLoad, LoadPlan, Mode, SLOW_READER_WINDOW_BYTES, STREAM_WINDOW_BYTES};
use crate::protocols::http::request_bytes;
use crate::studies::load::LoadCommand;
use crate::system::pin::CpuList;
use crate::system::tuning::Sched;

#[derive(clap::Args, Debug, Clone)]
pub struct LoadArgs {
    /// The echo server to drive, HOST:PORT (ringside's own or any other).
    #[arg(value_name = "HOST:PORT", required_unless_present_any = ["target_flag", "json"])]
    pub target: Option<SocketAddr>,
    /// The server, as a flag: the same as HOST:PORT.
    #[arg(
        long = "target",
        id = "target_flag",
        value_name = "HOST:PORT",
        conflicts_with = "target"
    )]
    pub target_flag: Option<SocketAddr>,
    /// Bytes per message (k/m suffixes allowed).
    #[arg(long, default_value = "64", value_parser = payload_arg)]
    pub payload: usize,
    /// ping-pong: one message in flight per connection, latency recorded. stream: every
    /// connection streams without waiting (odd-sized writes and reads, up to --window ahead of
    /// its echo), every byte checked: the test most peer servers failed (add --read-rate for
    /// the slow reader that exposes short sends).
    #[arg(long, value_enum, default_value_t = Mode::PingPong)]
    pub mode: Mode,
    /// Stream mode's slow reader: read each connection's echo at no more than this many
    /// bytes/s (k/m suffixes allowed, per connection), in small odd-sized reads, while the
    /// sender keeps writing up to --window ahead. The echo backs up until the server's send
    /// buffer is full: its sends go short and its buffers wait with bytes still pending, which
    /// servers that ignore a send's result get wrong (tcpkali's --channel-bandwidth-downstream,
    /// in bytes). `-c 8 --payload 1000 --read-rate 4m` caught such a server within 3 s; slower
    /// rates take longer to refill the server's send buffer.
    #[arg(long, value_name = "BYTES_PER_SEC", value_parser = read_rate_arg)]
    pub read_rate: Option<u64>,
    /// SO_RCVBUF of every client socket, set before it connects so it also bounds the TCP
    /// window the server sees (tcpkali's --rcvbuf). The kernel doubles it and keeps a minimum.
    #[arg(long, value_name = "BYTES", value_parser = rcvbuf_arg)]
    pub rcvbuf: Option<usize>,
    /// Stream mode: how far each connection's writes may run ahead of its checked echo, which
    /// bounds what the server and the socket buffers between must hold [default: 256k, or 8m
    /// with --read-rate: a slow reader only makes the server's sends go short once the server's
    /// send buffer is full, and Linux grows that up to net.ipv4.tcp_wmem's maximum, 4 MiB by
    /// default].
    #[arg(long, value_name = "BYTES", value_parser = window_arg)]
    pub window: Option<u64>,
    #[command(flatten)]
    pub run: LoadRunArgs,
}

/// `load http`: a URL instead of an address.
#[derive(clap::Args, Debug, Clone)]
pub struct HttpLoadArgs {
    /// The HTTP server to drive, http://HOST:PORT/PATH (ringside's own or any other), as wrk
    /// and curl take it; without a scheme, http:// is meant (`127.0.0.1:8080/`).
    #[arg(value_name = "URL", required_unless_present_any = ["target_flag", "json"])]
    pub target: Option<String>,
    /// The server, as a flag: the same as URL.
    #[arg(
        long = "target",
        id = "target_flag",
        value_name = "URL",
        conflicts_with = "target"
    )]
    pub target_flag: Option<String>,
    #[command(flatten)]
    pub run: LoadRunArgs,
}

/// The flags `load echo` and `load http` share, with the same meaning.
#[derive(clap::Args, Debug, Clone)]
pub struct LoadRunArgs {
    /// Concurrent connections, each with one message or request in flight.
    #[arg(long, short = 'c', default_value_t = 50, value_parser = connections_arg)]
    pub connections: usize,
    /// Measured time (`-z` as oha's).
    #[arg(
        long,
        short = 'd',
        short_alias = 'z',
        default_value = "10s",
        value_parser = positive_duration_arg
    )]
    pub duration: Duration,
    /// Time before the measured window; its messages are not counted.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Duration,
    /// Client threads; connections are spread over them.
    #[arg(long, short = 't', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// A message not answered in full within this time counts as a timeout; its connection
    /// closes.
    #[arg(long, default_value = "2s", value_parser = positive_duration_arg)]
    pub timeout: Duration,
    /// Pin the client threads to these CPUs (`1`, `2-3`): thread i on the i-th, round robin.
    #[arg(long, value_name = "LIST", value_parser = cpus_arg)]
    pub cpu: Option<CpuList>,
    /// Open loop at this many messages (or requests)/s over all connections, latency counted
    /// from each one's due time (as wrk2); sends more than 1 ms behind it are counted
    /// (`client_late_share`). Without it, a closed loop (as wrk). Ping-pong and HTTP.
    #[arg(long, value_parser = rate_arg)]
    pub rate: Option<f64>,
    /// Measure this server process over the window: kernel-counted syscalls, CPU, switches.
    #[arg(long)]
    pub server_pid: Option<i32>,
    /// Open the measured window at this wall-clock time: Unix seconds (`$(date -d '+20 sec'
    /// +%s)`, `@` allowed) or RFC 3339 (`2026-01-01T12:00:00Z`). The load connects and warms
    /// up just before it, so loads started on several hosts measure the same seconds and
    /// `ringside merge` can add them up. Needs clocks in sync (NTP) to well within the window.
    #[arg(long, value_name = "TIME", value_parser = start_at_arg)]
    pub start_at: Option<std::time::SystemTime>,
    /// Scheduling class of the client threads (fifo = SCHED_FIFO 50, as `chrt -f 50`); by default the
    /// class it was started with (`chrt -f 50 ringside ...` stays real-time).
    #[arg(long, value_enum, default_value_t = Sched::Inherit)]
    pub sched: Sched,
    /// Stop as Ctrl-C would when standard input ends: a study that started this load on a load
    /// host closes it to stop the load, and so does an ssh connection that goes away.
    #[arg(long, hide = true)]
    pub stop_with_stdin: bool,
    /// Accepted as wrk takes it; ringside always records latency: the percentiles in the
    /// table, the whole histogram in the JSON document.
    #[arg(long)]
    pub latency: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `load host-check`: what a study with load hosts asks each before it measures.
#[derive(clap::Args, Debug, Clone)]
pub struct HostCheckArgs {
    /// The study's check listener, on the address its servers will listen on.
    #[arg(long, value_name = "HOST:PORT")]
    pub target: SocketAddr,
}

/// Splits `http://HOST:PORT/PATH` into the address to connect to, the Host header and the path;
/// without a scheme, `http://` is meant (as curl takes `HOST:PORT/PATH`).
pub fn parse_target(url: &str) -> Result<(SocketAddr, String, String), String> {
    let rest = match url.strip_prefix("http://") {
        Some(rest) => rest,
        None if !url.contains("://") => url,
        None => {
            return Err(format!(
                "'{url}' is not an http:// URL (https is not supported)"
            ))
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let with_port = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let address = std::net::ToSocketAddrs::to_socket_addrs(&with_port)
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| format!("cannot resolve '{authority}' in '{url}'"))?;
    Ok((address, authority.to_string(), path.to_string()))
}

/// Whether `text` reads as a server's URL rather than a file's name, by its form alone (no
/// name is looked up): `http://...`, or `HOST:PORT` with a numeric port, a path after it.
fn reads_as_url(text: &str) -> bool {
    let rest = text.strip_prefix("http://").unwrap_or(text);
    let authority = rest.split('/').next().unwrap_or_default();
    let port = authority.rsplit_once(':').map(|(_, port)| port);
    text.starts_with("http://") || port.is_some_and(|port| port.parse::<u16>().is_ok())
}

/// `--start-at`: a time at most `DURATION_MAX` ahead (`1e19` overflowed `SystemTime`, and a
/// time centuries away would wait for ever).
fn start_at_arg(text: &str) -> Result<std::time::SystemTime, String> {
    let seconds = text.strip_prefix('@').unwrap_or(text);
    let time = match seconds.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds)
            .ok()
            .and_then(|since| std::time::UNIX_EPOCH.checked_add(since))
            .ok_or_else(|| format!("'{text}' is not a time from the Unix epoch to 365 days from now"))?,
        Err(_) => humantime::parse_rfc3339_weak(text).map_err(|_| {
            format!("'{text}' is neither Unix seconds (e.g. 1767268800) nor RFC 3339 (e.g. 2026-01-01T12:00:00Z)")
        })?,
    };
    let latest = std::time::SystemTime::now() + crate::units::DURATION_MAX;
    match time > latest {
        true => Err(format!("'{text}' is more than 365 days from now")),
        false => Ok(time),
    }
}

fn connections_arg(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("at least one connection is needed".into()),
        Ok(count) if count > 65_000 => Err(format!(
            "{count} connections is more than one \
             client address has ports for"
        )),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("'{text}' is not a number of connections")),
    }
}

fn read_rate_arg(text: &str) -> Result<u64, String> {
    match size_arg(text)? {
        0 => Err("a reader needs a rate of at least one byte/s".into()),
        rate => Ok(rate),
    }
}

fn rcvbuf_arg(text: &str) -> Result<usize, String> {
    match size_arg(text)? {
        0 => Err("a receive buffer needs at least one byte".into()),
        bytes if bytes > 1 << 30 => Err("receive buffers above 1 GiB are not supported".into()),
        bytes => Ok(bytes as usize),
    }
}

fn window_arg(text: &str) -> Result<u64, String> {
    match size_arg(text)? {
        0 => Err("a stream needs a window of at least one byte".into()),
        bytes if bytes > 1 << 30 => Err("windows above 1 GiB are not supported".into()),
        bytes => Ok(bytes),
    }
}

pub(super) fn payload_arg(text: &str) -> Result<usize, String> {
    match size_arg(text)? {
        0 => Err("a message needs at least one byte".into()),
        bytes if bytes > 1 << 24 => Err("messages above 16 MiB are not supported".into()),
        bytes => Ok(bytes as usize),
    }
}

impl LoadRunArgs {
    fn plan(&self, target: SocketAddr, payload_bytes: usize, mode: Mode) -> LoadPlan {
        LoadPlan {
            target,
            connections: self.connections,
            payload_bytes,
            duration: self.duration,
            warmup: self.warmup,
            threads: self.threads as usize,
            timeout: self.timeout,
            cpus: self
                .cpu
                .clone()
                .map(|CpuList(cpus)| cpus)
                .unwrap_or_default(),
            sched: self.sched,
            mode,
            read_bytes_per_sec: None,
            rcvbuf_bytes: None,
            window_bytes: STREAM_WINDOW_BYTES,
            http: None,
            rate_per_sec: self.rate,
            start_at: self.start_at,
        }
    }
}

impl LoadArgs {
    pub fn plan(&self) -> anyhow::Result<LoadPlan> {
        if self.mode == Mode::Stream && self.run.rate.is_some() {
            anyhow::bail!(
                "--rate paces ping-pong messages; a stream sends as fast as its window allows"
            );
        }
        if self.mode != Mode::Stream && (self.read_rate.is_some() || self.window.is_some()) {
            anyhow::bail!(
                "--read-rate and --window shape --mode stream; ping-pong reads each echo whole \
                 before it sends the next message"
            );
        }
        let target = (self.target.or(self.target_flag))
            .ok_or_else(|| anyhow::anyhow!("load echo needs the server's HOST:PORT"))?;
        let mut plan = self.run.plan(target, self.payload, self.mode);
        plan.read_bytes_per_sec = self.read_rate;
        plan.rcvbuf_bytes = self.rcvbuf;
        plan.window_bytes = match (self.window, self.read_rate) {
            (Some(window), _) => window,
            (None, Some(_)) => SLOW_READER_WINDOW_BYTES,
            (None, None) => STREAM_WINDOW_BYTES,
        };
        if self.mode == Mode::Stream && plan.window_bytes < self.payload as u64 {
            anyhow::bail!(
                "a stream's --window ({} bytes) must hold at least one --payload write ({} bytes)",
                plan.window_bytes,
                self.payload
            );
        }
        Ok(plan)
    }
}

impl HttpLoadArgs {
    pub fn plan(&self) -> anyhow::Result<LoadPlan> {
        let target = (self.target.as_ref().or(self.target_flag.as_ref()))
            .ok_or_else(|| anyhow::anyhow!("load http needs the server's URL"))?;
        let (address, host, path) = parse_target(target).map_err(anyhow::Error::msg)?;
        let request = request_bytes(&host, &path);
        let mut plan = self.run.plan(address, request.len(), Mode::Http);
        plan.http = Some(HttpLoad { request });
        Ok(plan)
    }
}

impl LoadRunArgs {
    fn command(&self) -> anyhow::Result<LoadCommand> {
        Ok(LoadCommand {
            server_pid: self.server_pid,
            destination: self.output.destination()?,
            stop_with_stdin: self.stop_with_stdin,
        })
    }
}

impl LoadArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let mut args = self.clone();
        if args.target.is_none() && args.target_flag.is_none() {
            let after_json = (args.run.output.exports)
                .target_after_json(|text| text.parse::<SocketAddr>().is_ok());
            args.target = after_json.and_then(|text| text.parse().ok());
        }
        crate::studies::load::run(&args.plan()?, &args.run.command()?)
    }
}

impl HttpLoadArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let mut args = self.clone();
        if args.target.is_none() && args.target_flag.is_none() {
            args.target = (args.run.output.exports).target_after_json(reads_as_url);
        }
        crate::studies::load::run(&args.plan()?, &args.run.command()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_http_urls() {
        let (address, host, path) = parse_target("http://127.0.0.1:8080/a?b").unwrap();
        assert_eq!(
            (address.port(), host.as_str(), path.as_str()),
            (8080, "127.0.0.1:8080", "/a?b")
        );
        assert_eq!(parse_target("http://127.0.0.1:1").unwrap().2, "/");
        let (address, host, path) = parse_target("127.0.0.1:8080/a").unwrap();
        assert_eq!(
            (address.port(), host.as_str(), path.as_str()),
            (8080, "127.0.0.1:8080", "/a")
        );
        assert!(parse_target("ftp://127.0.0.1/").is_err());
        assert!(reads_as_url("http://example") && reads_as_url("127.0.0.1:80/a"));
        assert!(!reads_as_url("out.json") && !reads_as_url("dir/out.json"));
        assert!(parse_target("https://127.0.0.1/")
            .unwrap_err()
            .contains("http://"));
    }

    fn echo_plan(flags: &[&str]) -> anyhow::Result<LoadPlan> {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            load: LoadArgs,
        }
        let target = ["ringside", "--target", "127.0.0.1:1"];
        let command: Command = clap::Parser::try_parse_from(target.iter().chain(flags))?;
        command.load.plan()
    }

    #[test]
    fn a_slow_reader_gets_a_window_past_the_servers_send_buffer() {
        let plan = echo_plan(&["--mode", "stream", "--read-rate", "4m", "--rcvbuf", "4k"]).unwrap();
        assert_eq!(plan.read_bytes_per_sec, Some(4 << 20));
        assert_eq!(plan.rcvbuf_bytes, Some(4096));
        assert_eq!(plan.window_bytes, SLOW_READER_WINDOW_BYTES);
        let plan = echo_plan(&["--mode", "stream", "--read-rate", "4m", "--window", "1m"]).unwrap();
        assert_eq!(plan.window_bytes, 1 << 20);
        assert_eq!(
            echo_plan(&["--mode", "stream"]).unwrap().window_bytes,
            STREAM_WINDOW_BYTES
        );
    }

    #[test]
    fn stream_flags_outside_stream_mode_and_windows_below_a_write_are_refused() {
        let error = echo_plan(&["--read-rate", "1m"]).unwrap_err().to_string();
        assert!(error.contains("--mode stream"), "{error}");
        assert!(echo_plan(&["--window", "1m"]).is_err());
        let error = echo_plan(&["--mode", "stream", "--payload", "1m"]).unwrap_err();
        assert!(error.to_string().contains("--window"), "{error}");
        assert!(echo_plan(&["--mode", "stream", "--read-rate", "0"]).is_err());
    }

    #[test]
    fn start_times_are_unix_seconds_or_rfc3339() {
        let epoch = std::time::UNIX_EPOCH;
        assert_eq!(start_at_arg("@10"), Ok(epoch + Duration::from_secs(10)));
        assert_eq!(start_at_arg("1.5"), Ok(epoch + Duration::from_millis(1500)));
        assert_eq!(
            start_at_arg("1970-01-01T00:01:00Z"),
            Ok(epoch + Duration::from_secs(60))
        );
        assert!(start_at_arg("soon").unwrap_err().contains("RFC 3339"));
        assert!(start_at_arg("-1").is_err());
        // 1e19 s passes what SystemTime holds; 1e17 s is three billion years away.
        assert!(start_at_arg("1e19")
            .unwrap_err()
            .contains("365 days from now"));
        assert!(start_at_arg("1e17")
            .unwrap_err()
            .contains("365 days from now"));
        assert!(start_at_arg("9999-01-01T00:00:00Z").is_err());
    }

    #[test]
    fn zero_connections_and_empty_messages_are_refused() {
        assert!(connections_arg("0")
            .unwrap_err()
            .contains("at least one connection"));
        assert!(payload_arg("0").unwrap_err().contains("at least one byte"));
        assert_eq!(payload_arg("1k"), Ok(1024));
    }
}
