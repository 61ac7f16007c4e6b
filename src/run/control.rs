//! Control jobs: fio run beside ringside's file-write step on the same file size and block
//! size, so the report shows what an established tool gets on this machine next to ringside's
//! engines. Its rows carry `params.control: true` and fio's own numbers; fio does not count
//! syscalls for us or verify data, so those columns stay empty. A missing fio is a note.

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::{Map, Value};

use crate::report::summary::CONTROL_PARAM;
use crate::row::Row;

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
            controls.push(fio_row(engine, &first.params, run, &json)?);
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
    let output = Command::new("fio")
        .arg("--name=ringside-control")
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
            params.get("depth").and_then(Value::as_u64).unwrap_or(1)
        ))
        .args(engine_args)
        .output()
        .context("cannot start fio")?;
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

/// A result row from fio's `jobs[0]`: its bandwidth, operations, runtime and CPU.
pub fn fio_row(
    engine: &str,
    params: &Map<String, Value>,
    run: u32,
    json: &Value,
) -> anyhow::Result<Row> {
    let job = json.pointer("/jobs/0").context("fio's JSON has no job")?;
    let number = |pointer: &str| job.pointer(pointer).and_then(Value::as_f64).unwrap_or(0.0);
    let seconds = number("/write/runtime") / 1e3;
    let mut params = params.clone();
    params.insert(CONTROL_PARAM.into(), Value::Bool(true));
    Ok(Row {
        workload: "fs-write".into(),
        engine: engine.into(),
        params,
        run,
        seconds,
        ops: number("/write/total_ios") as u64,
        bytes: number("/write/io_bytes") as u64,
        ops_per_sec: number("/write/iops"),
        bytes_per_sec: number("/write/bw_bytes"),
        syscalls_source: "none".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_json_becomes_a_control_row() {
        let stdout = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs": [{"jobname": "ringside-control", "usr_cpu": 10.0, "sys_cpu": 50.0, "ctx": 7,
  "write": {"io_bytes": 67108864, "bw_bytes": 1073741824, "iops": 262144.0,
            "runtime": 62, "total_ios": 16384}}]}"#;
        let json = parse_fio_json(stdout).unwrap();
        let mut params = Map::new();
        params.insert("size".into(), Value::from("64M"));
        let row = fio_row("fio psync", &params, 2, &json).unwrap();
        assert_eq!(row.bytes_per_sec, 1073741824.0);
        assert_eq!((row.ops, row.bytes, row.run), (16384, 67108864, 2));
        assert!((row.cpu_sys_s - 0.031).abs() < 1e-9);
        assert_eq!(row.params[CONTROL_PARAM], Value::Bool(true));
        assert_eq!(row.syscalls_source, "none");
    }
}
