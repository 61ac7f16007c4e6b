//! Control jobs: established tools run beside ringside's own steps on the same parameters, so
//! the report shows what they get on this machine next to ringside's engines. fio writes the
//! file-write step's size in its block size; wrk drives ringside's `epoll` HTTP server with the
//! HTTP step's connections and duration, server and wrk pinned to the step's cores. Their rows
//! carry `params.control: true` and the tool's own numbers; neither tool verifies data, so
//! their rows are never `verified`. A missing tool is a note, never a failure.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::{Map, Value};

use crate::engines::uring::ring::Helpers;
use crate::engines::{find, Workload};
use crate::measure::ProcessMeter;
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::row::SyscallSource;
use crate::stats::per_second;
use crate::studies::net::{Rig, ServerProcess};
use crate::system::children::{self, guarded};
use crate::system::network::{NetPath, PathPlan};
use crate::system::pin::CpuSplit;
use crate::system::tuning::{Idle, Sched};

/// The fio engines run as controls, with the arguments that make them fio's equivalents.
const FIO_ENGINES: [(&str, &[&str]); 2] = [
    ("fio psync", &["--ioengine=psync"]),
    ("fio io_uring", &["--ioengine=io_uring"]),
];

/// True when `tool` runs here (`tool --version` succeeds).
pub fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Runs fio's controls for a write step whose rows are `rows`: as many runs as the step had,
/// engines alternating as ringside's do, in `dir`.
pub fn fio_write(rows: &[Row], dir: &Path) -> anyhow::Result<Vec<Row>> {
    let Some(first) = rows.iter().find(|row| row.workload == "fs-write") else {
        return Ok(Vec::new());
    };
    let runs = rows.iter().map(|row| row.run).max().unwrap_or(1);
    let file = dir.join("ringside-fio-control.dat");
    let mut controls = Vec::new();
    for run in 1..=runs {
        for (engine, engine_args) in FIO_ENGINES {
            let json = fio_job(&first.params, engine_args, &file)?;
            controls.push(fio_row("fs-write", engine, &first.params, run, &json)?);
        }
    }
    let _ = std::fs::remove_file(&file);
    Ok(controls)
}

/// One fio job writing the step's size in its block size over a laid-out file; its JSON.
fn fio_job(
    params: &Map<String, Value>,
    engine_args: &[&str],
    file: &Path,
) -> anyhow::Result<Value> {
    let text = |key: &str| match params.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let mut fio = guarded("fio");
    fio.arg("--name=ringside-control")
        .arg(format!("--filename={}", file.display()))
        .args([
            "--rw=write",
            "--overwrite=1",
            "--invalidate=0",
            "--output-format=json",
        ])
        .arg(format!("--bs={}", text("block_size")))
        .arg(format!("--size={}", text("size")))
        .arg(format!(
            "--iodepth={}",
            params
                .param(Param::Depth)
                .and_then(Value::as_u64)
                .unwrap_or(1)
        ))
        .args(engine_args);
    let output = children::output(&mut fio).context("cannot start fio")?;
    anyhow::ensure!(
        output.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    parse_fio_json(&String::from_utf8_lossy(&output.stdout))
}

/// fio's JSON, skipping any note lines fio prints before it.
pub fn parse_fio_json(stdout: &str) -> anyhow::Result<Value> {
    let start = stdout.find('{').context("fio printed no JSON")?;
    serde_json::from_str(&stdout[start..]).context("fio's JSON does not parse")
}

/// A result row of `workload` (`fs-write` or `fs-read`) from fio's `jobs[0]`: its bandwidth,
/// operations, runtime and CPU, on the side of its JSON that the workload does.
pub fn fio_row(
    workload: &str,
    engine: &str,
    params: &Map<String, Value>,
    run: u32,
    json: &Value,
) -> anyhow::Result<Row> {
    let job = json.pointer("/jobs/0").context("fio's JSON has no job")?;
    let side = if workload == "fs-read" {
        "read"
    } else {
        "write"
    };
    let number = |pointer: &str| {
        let pointer = pointer.replace("{side}", side);
        job.pointer(&pointer).and_then(Value::as_f64).unwrap_or(0.0)
    };
    let seconds = number("/{side}/runtime") / 1e3;
    let mut params = params.clone();
    params.put(Param::Control, true);
    Ok(Row {
        workload: workload.into(),
        engine: engine.into(),
        params,
        run,
        seconds,
        ops: number("/{side}/total_ios") as u64,
        bytes: number("/{side}/io_bytes") as u64,
        ops_per_sec: number("/{side}/iops"),
        bytes_per_sec: number("/{side}/bw_bytes"),
        latency_ns_p50: percentile(job, side, "50.000000"),
        latency_ns_p99: percentile(job, side, "99.000000"),
        syscalls_source: SyscallSource::Unmeasured,
        cpu_user_s: number("/usr_cpu") / 100.0 * seconds,
        cpu_sys_s: number("/sys_cpu") / 100.0 * seconds,
        ctx_switches_voluntary: number("/ctx") as u64,
        notes: vec![
            "fio rows are controls: fio's own numbers, syscalls not counted, data not verified"
                .into(),
        ],
        ..Row::default()
    })
}

/// A completion-latency percentile fio reported (`clat_ns.percentile`), in ns.
fn percentile(job: &Value, side: &str, key: &str) -> Option<u64> {
    job.pointer(&format!("/{side}/clat_ns/percentile/{key}"))
        .and_then(Value::as_u64)
}

/// True when an executable file named `tool` is on PATH (for tools without a `--version` that
/// succeeds: `wrk --version` exits 1).
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The server engine wrk drives: the fastest HTTP server in FINDINGS' wrk table is an epoll one,
/// and ringside's epoll server is its equivalent.
pub const WRK_SERVER_ENGINE: &str = "epoll";

/// Runs wrk's controls for an HTTP step whose rows are `rows` and whose `--duration` was
/// `duration` (wrk's syntax, e.g. `5s`): per connection count of the step, as many runs as it
/// had, each against a fresh `ringside serve http --engine epoll` pinned to the step's server
/// CPU, wrk pinned to its client CPU with taskset.
pub fn wrk_http(rows: &[Row], duration: &str) -> anyhow::Result<Vec<Row>> {
    let http: Vec<&Row> = rows.iter().filter(|row| row.workload == "http").collect();
    let runs = http.iter().map(|row| row.run).max().unwrap_or(1);
    let mut cells: Vec<&Row> = Vec::new();
    for row in &http {
        let connections = |row: &Row| row.params.param(Param::Connections).cloned();
        if !cells
            .iter()
            .any(|cell| connections(cell) == connections(row))
        {
            cells.push(row);
        }
    }
    let engine = find(Workload::Http, WRK_SERVER_ENGINE)?;
    let mut controls = Vec::new();
    for run in 1..=runs {
        for cell in &cells {
            if crate::system::stop::stopped() {
                return Ok(controls);
            }
            let cpu = |param: Param, default: u64| {
                cell.params.param_u64(param).unwrap_or(default) as usize
            };
            let connections = cell
                .params
                .param(Param::Connections)
                .and_then(Value::as_u64);
            let connections = connections.context("the HTTP rows name no connection count")?;
            let mut serve = vec!["http".to_string()];
            if let Some(Value::String(body_size)) = cell.params.param(Param::BodySize) {
                serve.extend(["--body-size".to_string(), body_size.clone()]);
            }
            let server_cpu = cpu(Param::ServerCpu, 0);
            let rig = Rig {
                server_threads: 1,
                cpus: CpuSplit {
                    server: vec![server_cpu],
                    client: vec![cpu(Param::ClientCpu, 1)],
                },
                record_threads: false,
                share_sqpoll: false,
                sched: Sched::Other,
                idle: Idle::Default,
                serve,
                helpers: Helpers::for_server(server_cpu, Sched::Other.is_realtime()),
                path: PathPlan::default(),
                ring_events: false,
                idle_timeout: None,
                work: None,
                work_bytes: None,
                hosts: None,
            };
            let mut server = ServerProcess::start(engine, &rig, &NetPath::Loopback)?;
            let mut meter = ProcessMeter::new(server.child.id() as i32);
            meter.start().context("cannot measure the server")?;
            let mut wrk = guarded("taskset");
            wrk.args(["-c", &rig.client_cpu().to_string(), "wrk", "-t1"])
                .arg(format!("-c{connections}"))
                .arg(format!("-d{}", wrk_duration(duration)?))
                .arg("--latency")
                .arg(format!("http://{}/", server.address));
            let output = children::output(&mut wrk).context("cannot start wrk")?;
            let measured = meter.stop().context("cannot measure the server")?;
            server.stop()?;
            anyhow::ensure!(
                output.status.success(),
                "wrk failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
            let parsed = parse_wrk(&String::from_utf8_lossy(&output.stdout))?;
            let mut row = wrk_row(&cell.params, run, &parsed);
            row.set_server_costs(&measured);
            controls.push(row);
        }
    }
    Ok(controls)
}

/// A step's `--duration` in wrk's syntax: whole seconds, rounded up (wrk refuses `800ms`).
fn wrk_duration(duration: &str) -> anyhow::Result<String> {
    let duration = crate::units::parse_duration(duration).map_err(anyhow::Error::msg)?;
    Ok(format!("{}s", duration.as_secs_f64().ceil().max(1.0)))
}

/// What wrk prints for one run, in ringside's units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WrkOutput {
    pub requests: u64,
    pub seconds: f64,
    pub bytes: u64,
    pub requests_per_sec: f64,
    /// `--latency`'s distribution: (percent, ns) for 50, 75, 90 and 99.
    pub latency_ns: Vec<(u32, u64)>,
    /// The latency line's max under "Thread Stats".
    pub latency_ns_max: Option<u64>,
    /// `Socket errors: connect, read, write, timeout` (all zero when wrk printed no such line).
    pub socket_errors: [u64; 4],
    /// `Non-2xx or 3xx responses`.
    pub non_2xx_3xx: u64,
}

/// Parses wrk's text output (wrk 4 with `--latency`).
pub fn parse_wrk(text: &str) -> anyhow::Result<WrkOutput> {
    let mut parsed = WrkOutput::default();
    let mut in_distribution = false;
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if line == "Latency Distribution" {
            in_distribution = true;
            continue;
        }
        if in_distribution {
            let percent = words.first().and_then(|w| w.strip_suffix('%'));
            match (percent.and_then(|p| p.parse::<f64>().ok()), words.get(1)) {
                (Some(percent), Some(value)) => {
                    parsed
                        .latency_ns
                        .push((percent as u32, wrk_time_ns(value)?));
                    continue;
                }
                _ => in_distribution = false,
            }
        }
        if words.first() == Some(&"Latency") && words.len() >= 4 {
            parsed.latency_ns_max = Some(wrk_time_ns(words[3])?);
        } else if words.get(1) == Some(&"requests") && words.get(2) == Some(&"in") {
            // "236354 requests in 2.10s, 21.64MB read"
            parsed.requests = words[0].parse().context("wrk's request count")?;
            let seconds = words.get(3).map(|w| w.trim_end_matches(','));
            parsed.seconds = wrk_time_ns(seconds.unwrap_or_default())? as f64 / 1e9;
            parsed.bytes = wrk_bytes(words.get(4).copied().unwrap_or_default())?;
        } else if let Some(rest) = line.strip_prefix("Requests/sec:") {
            parsed.requests_per_sec = rest.trim().parse().context("wrk's Requests/sec")?;
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            // "connect 0, read 24476, write 0, timeout 0"
            for (slot, part) in rest.split(',').enumerate().take(4) {
                let count = part.split_whitespace().nth(1).unwrap_or("0");
                parsed.socket_errors[slot] = count.parse().context("wrk's socket errors")?;
            }
        } else if let Some(rest) = line.strip_prefix("Non-2xx or 3xx responses:") {
            parsed.non_2xx_3xx = rest.trim().parse().context("wrk's non-2xx count")?;
        }
    }
    anyhow::ensure!(
        parsed.requests_per_sec > 0.0 || parsed.requests > 0,
        "wrk's output has no Requests/sec line"
    );
    Ok(parsed)
}

/// A wrk time ("214.00us", "0.89ms", "2.10s", "1.00m") in nanoseconds.
fn wrk_time_ns(text: &str) -> anyhow::Result<u64> {
    let units = [
        ("us", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
        ("m", 60e9),
        ("h", 3600e9),
    ];
    for (suffix, ns) in units {
        if let Some(number) = text.strip_suffix(suffix) {
            if let Ok(value) = number.parse::<f64>() {
                return Ok((value * ns).round() as u64);
            }
        }
    }
    anyhow::bail!("'{text}' is not a wrk time")
}

/// A wrk byte count ("21.64MB", "567.19KB", "512B"); wrk's units are powers of 1024.
fn wrk_bytes(text: &str) -> anyhow::Result<u64> {
    let units = [
        ("KB", 1u64 << 10),
        ("MB", 1 << 20),
        ("GB", 1 << 30),
        ("TB", 1 << 40),
    ];
    for (suffix, unit) in units {
        if let Some(number) = text.strip_suffix(suffix) {
            if let Ok(value) = number.parse::<f64>() {
                return Ok((value * unit as f64).round() as u64);
            }
        }
    }
    text.strip_suffix('B')
        .and_then(|number| number.parse::<f64>().ok())
        .map(|value| value as u64)
        .ok_or_else(|| anyhow::anyhow!("'{text}' is not a wrk byte count"))
}

/// A control row from wrk's output, in the study of the HTTP rows whose params are `params`.
/// wrk prints only p50/p75/p90/p99 with `--latency`: p99.9 stays empty.
pub fn wrk_row(params: &Map<String, Value>, run: u32, wrk: &WrkOutput) -> Row {
    let mut params = params.clone();
    params.put(Param::Control, true);
    let percentile = |wanted: u32| {
        wrk.latency_ns
            .iter()
            .find(|(percent, _)| *percent == wanted)
            .map(|&(_, ns)| ns)
    };
    let [connect, read, write, timeout] = wrk.socket_errors;
    let mut row = Row {
        workload: "http".into(),
        engine: format!("wrk {WRK_SERVER_ENGINE}"),
        params,
        run,
        seconds: wrk.seconds,
        ops: wrk.requests,
        bytes: wrk.bytes,
        ops_per_sec: wrk.requests_per_sec,
        bytes_per_sec: per_second(wrk.bytes as f64, wrk.seconds),
        syscalls_source: SyscallSource::Unmeasured,
        errors: connect + read + write + timeout + wrk.non_2xx_3xx,
        latency_ns_p50: percentile(50),
        latency_ns_p90: percentile(90),
        latency_ns_p99: percentile(99),
        latency_ns_max: wrk.latency_ns_max,
        notes: vec![format!(
            "wrk rows are controls: wrk's own requests/s and latency against ringside's \
             {WRK_SERVER_ENGINE} server, whose syscalls and CPU are measured over wrk's whole \
             run (connection setup included); wrk does not verify responses"
        )],
        ..Row::default()
    };
    if row.errors > 0 {
        for (kind, count) in [
            ("connect", connect),
            ("read", read),
            ("write", write),
            ("timeout", timeout),
            ("non_2xx_3xx", wrk.non_2xx_3xx),
        ] {
            row.error_counts.insert(kind.into(), Value::from(count));
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk takes whole seconds: the default run's 800 ms windows are given as 1 s.
    #[test]
    fn wrk_gets_whole_seconds() {
        assert_eq!(wrk_duration("800ms").unwrap(), "1s");
        assert_eq!(wrk_duration("20s").unwrap(), "20s");
        assert_eq!(wrk_duration("1.5s").unwrap(), "2s");
    }

    #[test]
    fn fio_json_becomes_a_control_row() {
        let stdout = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs": [{"jobname": "ringside-control", "usr_cpu": 10.0, "sys_cpu": 50.0, "ctx": 7,
  "write": {"io_bytes": 67108864, "bw_bytes": 1073741824, "iops": 262144.0,
            "runtime": 62, "total_ios": 16384}}]}"#;
        let json = parse_fio_json(stdout).unwrap();
        let mut params = Map::new();
        params.put(Param::Size, "64M");
        let row = fio_row("fs-write", "fio psync", &params, 2, &json).unwrap();
        assert_eq!(row.bytes_per_sec, 1073741824.0);
        assert_eq!((row.ops, row.bytes, row.run), (16384, 67108864, 2));
        assert!((row.cpu_sys_s - 0.031).abs() < 1e-9);
        assert_eq!(row.params[Param::Control.key()], Value::Bool(true));
        assert_eq!(row.syscalls_source, SyscallSource::Unmeasured);
    }

    /// Captured from `taskset -c 1 wrk -t1 -c50 -d2s --latency` against
    /// `ringside serve http --engine epoll --cpu 0` on 127.0.0.1.
    const WRK_CLEAN: &str = "Running 2s test @ http://127.0.0.1:33591/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   246.90us  162.55us   3.57ms   95.25%
    Req/Sec   113.15k    12.93k  134.81k    66.67%
  Latency Distribution
     50%  214.00us
     75%  267.00us
     90%  338.00us
     99%  753.00us
  236354 requests in 2.10s, 21.64MB read
Requests/sec: 112439.71
Transfer/sec:     10.29MB
";

    /// Captured the same way against a server started with `--max-connections 10`, so 40 of
    /// wrk's connections were closed at once (`-d1s`). The last line is not from that run: it is
    /// wrk's `Non-2xx or 3xx responses: %d` line, added to exercise its parsing (ringside's
    /// server answers 200 to every request).
    const WRK_ERRORS: &str = "Running 1s test @ http://127.0.0.1:35039/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.03ms    1.06ms  22.94ms   98.83%
    Req/Sec     5.51k   630.98     6.16k    63.64%
  Latency Distribution
     50%    0.89ms
     75%    1.09ms
     90%    1.21ms
     99%    2.20ms
  6050 requests in 1.10s, 567.19KB read
  Socket errors: connect 0, read 24476, write 0, timeout 0
Requests/sec:   5485.62
Transfer/sec:    514.28KB
  Non-2xx or 3xx responses: 3
";

    fn http_params() -> Map<String, Value> {
        let mut params = Map::new();
        params.put(Param::Connections, 50);
        params.put(Param::Mode, "closed");
        params
    }

    #[test]
    fn wrk_output_becomes_a_control_row() {
        let wrk = parse_wrk(WRK_CLEAN).unwrap();
        assert_eq!((wrk.requests, wrk.requests_per_sec), (236354, 112439.71));
        assert!((wrk.seconds - 2.1).abs() < 1e-9);
        assert_eq!(wrk.bytes, (21.64 * 1048576.0f64).round() as u64);
        let row = wrk_row(&http_params(), 3, &wrk);
        assert_eq!(
            (row.workload.as_str(), row.engine.as_str()),
            ("http", "wrk epoll")
        );
        assert_eq!(row.params[Param::Control.key()], Value::Bool(true));
        assert_eq!(row.params[Param::Connections.key()], 50);
        assert_eq!(row.run, 3);
        assert_eq!(row.ops_per_sec, 112439.71);
        assert_eq!(row.latency_ns_p50, Some(214_000));
        assert_eq!(row.latency_ns_p90, Some(338_000));
        assert_eq!(row.latency_ns_p99, Some(753_000));
        assert_eq!(row.latency_ns_p999, None, "wrk --latency stops at p99");
        assert_eq!(row.latency_ns_max, Some(3_570_000));
        assert_eq!(row.errors, 0);
        assert!(row.error_counts.is_empty());
        assert!(!row.verified, "wrk does not verify responses");
        let control = crate::model::summary::is_control(&row);
        assert!(control, "marked as fio's rows are");
    }

    #[test]
    fn wrk_socket_errors_and_non_2xx_become_errors() {
        let wrk = parse_wrk(WRK_ERRORS).unwrap();
        assert_eq!(wrk.socket_errors, [0, 24476, 0, 0]);
        assert_eq!(wrk.non_2xx_3xx, 3);
        assert_eq!(wrk.latency_ns[0], (50, 890_000));
        assert_eq!(wrk.bytes, (567.19 * 1024.0f64).round() as u64);
        let row = wrk_row(&http_params(), 1, &wrk);
        assert_eq!(row.errors, 24479);
        assert_eq!(row.error_counts["read"], 24476);
        assert_eq!(row.error_counts["non_2xx_3xx"], 3);
        assert_eq!(row.latency_ns_max, Some(22_940_000));
    }

    #[test]
    fn text_that_is_not_wrk_output_is_refused() {
        assert!(parse_wrk("wrk: command not found").is_err());
        assert!(wrk_time_ns("12parsecs").is_err());
    }
}
