//! fio's random reads as the control of a read step: at each depth the step ran, fio's `psync`
//! with as many jobs as the depth (the `threads` engine's equivalent), and `libaio` and
//! `io_uring` at that iodepth, on a file of the step's size in its block size, with the step's
//! page cache state (`--invalidate=0` warm, `--invalidate=1` cold, `--direct=1` direct) and its
//! runtime. Engines alternate run by run as ringside's do; rows carry `params.control: true`.

use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};

use super::control::{fio_row, parse_fio_json};
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::system::children::{self, guarded};

/// fio's engines and how each reaches a depth: jobs for psync, an iodepth for the others.
const FIO_READ_ENGINES: [(&str, &str, bool); 3] = [
    ("fio psync", "--ioengine=psync", true),
    ("fio libaio", "--ioengine=libaio", false),
    ("fio io_uring", "--ioengine=io_uring", false),
];

/// Runs fio's controls for a read step whose rows are `rows` and whose runs were capped at
/// `runtime` (fio's syntax, e.g. `500ms`), in `dir`.
pub fn fio_read(rows: &[Row], runtime: &str, dir: &Path) -> anyhow::Result<Vec<Row>> {
    let reads: Vec<&Row> = rows
        .iter()
        .filter(|row| row.workload == "fs-read")
        .collect();
    let runs = reads.iter().map(|row| row.run).max().unwrap_or(1);
    let mut depths: Vec<(u64, &Row)> = Vec::new();
    for row in &reads {
        let depth = row
            .params
            .param(Param::Depth)
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if !depths.iter().any(|(seen, _)| *seen == depth) {
            depths.push((depth, row));
        }
    }
    let file = dir.join("ringside-fio-read-control.dat");
    let mut controls = Vec::new();
    for run in 1..=runs {
        for &(depth, row) in &depths {
            for (engine, engine_arg, jobs) in FIO_READ_ENGINES {
                if crate::system::stop::stopped() {
                    return Ok(controls);
                }
                let json = fio_job(&row.params, engine_arg, depth, jobs, runtime, &file)?;
                let mut params = row.params.clone();
                params.put(Param::Numjobs, if jobs { depth } else { 1 });
                controls.push(fio_row("fs-read", engine, &params, run, &json)?);
            }
        }
    }
    let _ = std::fs::remove_file(&file);
    Ok(controls)
}

fn fio_job(
    params: &Map<String, Value>,
    engine_arg: &str,
    depth: u64,
    jobs: bool,
    runtime: &str,
    file: &Path,
) -> anyhow::Result<Value> {
    let text = |param: Param| match params.param(param) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let rw = if text(Param::Access) == "sequential" {
        "--rw=read"
    } else {
        "--rw=randread"
    };
    let cache = match text(Param::Cache).as_str() {
        "direct" => ["--direct=1", "--invalidate=0"],
        "cold" => ["--direct=0", "--invalidate=1"],
        _ => ["--direct=0", "--invalidate=0"],
    };
    let (numjobs, iodepth) = if jobs { (depth, 1) } else { (1, depth) };
    let mut fio = guarded("fio");
    fio.arg("--name=ringside-read-control")
        .arg(format!("--filename={}", file.display()))
        .args([rw, engine_arg, "--group_reporting", "--output-format=json"])
        .args(cache)
        .arg(format!("--bs={}", text(Param::BlockSize)))
        .arg(format!("--size={}", text(Param::Size)))
        .arg(format!("--numjobs={numjobs}"))
        .arg(format!("--iodepth={iodepth}"))
        .arg(format!("--runtime={runtime}"));
    let output = children::output(&mut fio).context("cannot start fio")?;
    anyhow::ensure!(
        output.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    parse_fio_json(&String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::is_control;

    #[test]
    fn fio_read_json_becomes_a_control_row_of_the_read_study() {
        let json = parse_fio_json(
            r#"{"jobs": [{"usr_cpu": 1.0, "sys_cpu": 3.0, "ctx": 16400,
              "read": {"io_bytes": 67108864, "bw_bytes": 490000000, "iops": 119591.2,
                       "runtime": 137, "total_ios": 16384,
                       "clat_ns": {"percentile": {"50.000000": 214016, "99.000000": 880000}}},
              "write": {"io_bytes": 0, "iops": 0.0, "runtime": 0, "total_ios": 0}}]}"#,
        )
        .unwrap();
        let mut params = Map::new();
        params.put(Param::Depth, 32);
        let row = fio_row("fs-read", "fio libaio", &params, 1, &json).unwrap();
        assert_eq!((row.workload.as_str(), row.ops), ("fs-read", 16384));
        assert_eq!(row.ops_per_sec, 119591.2);
        assert_eq!(row.latency_ns_p50, Some(214016));
        assert_eq!(row.latency_ns_p99, Some(880000));
        assert!(is_control(&row) && !row.verified);
    }
}
