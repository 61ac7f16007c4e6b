//! Results documents from other hosts, crafted to hurt: `merge` and `report` read them with
//! bounded memory and time, and refuse a bad one in a sentence that names its row, exit 1,
//! never an allocation the header asked for, a panic or a hang.

mod common;

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::BIN;

/// The address space each command may use: a 4 GiB allocation fails under it at once.
const ADDRESS_SPACE_BYTES: u64 = 1 << 30;
/// No command here may take longer (the infinite chart range never finished).
const COMMAND_TIME_MAX: Duration = Duration::from_secs(30);

/// One host's `load` document: the hand-made echo fixture's first row, with a measured
/// window and a real latency histogram, so that two copies merge.
fn host_document() -> Value {
    let fixture = std::fs::read("tests/fixtures/echo-hand.json").unwrap();
    let mut document: Value = serde_json::from_slice(&fixture).unwrap();
    let mut row = document["results"][0].clone();
    let mut latency = ringside::stats::histogram::new_latency();
    for micros in 10..200 {
        latency.record(micros * 1000).unwrap();
    }
    row["latency_ns_histogram"] = ringside::stats::histogram::encode(&latency).unwrap().into();
    row["window_start_unix_s"] = 100.0.into();
    row["window_end_unix_s"] = 110.0.into();
    document["results"] = Value::from(vec![row]);
    document
}

/// The field: HdrHistogram's V2 header declaring 4 GiB of counts, deflated, 56
/// characters of base64. Before, `merge` zero-filled 4,294,967,280 bytes for it.
fn four_gib_histogram() -> String {
    use base64::Engine as _;
    let mut header = 0x1c84_9313u32.to_be_bytes().to_vec();
    header.extend(0xFFFF_FFF0u32.to_be_bytes());
    header.extend(0u32.to_be_bytes());
    header.extend(3u32.to_be_bytes());
    header.extend(1u64.to_be_bytes());
    header.extend(100_000_000_000u64.to_be_bytes());
    header.extend(1.0f64.to_be_bytes());
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
    deflate.write_all(&header).unwrap();
    let compressed = deflate.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend((compressed.len() as u32).to_be_bytes());
    bytes.extend(compressed);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs ringside with `args` under `ADDRESS_SPACE_BYTES`, killed past `COMMAND_TIME_MAX`.
fn ringside(args: &[&Path]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the hook only calls setrlimit, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: ADDRESS_SPACE_BYTES,
                rlim_max: ADDRESS_SPACE_BYTES,
            };
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        })
    };
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > COMMAND_TIME_MAX {
            child.kill().unwrap();
            panic!("ringside {args:?} ran past {COMMAND_TIME_MAX:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Asserts a refusal: exit 1, no panic, and stderr containing each of `says`.
fn assert_refused(output: &Output, says: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for words in says {
        assert!(stderr.contains(words), "{words:?} not in {stderr}");
    }
}

/// Goal: a crafted histogram, overflowing sums and figures no measurement gives are each
/// refused by `merge` with the row named. Method: two host documents, one field changed at a
/// time, merged under a 1 GiB address space.
#[test]
fn merge_refuses_crafted_documents_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let good = host_document().to_string();
    let host = write(dir.path(), "host.json", &good);
    let merged = ringside(&["merge".as_ref(), host.as_path(), host.as_path()]);
    assert!(merged.status.success(), "{merged:?}");

    let mut crafted = host_document();
    crafted["results"][0]["latency_ns_histogram"] = four_gib_histogram().into();
    let field = crafted["results"][0]["latency_ns_histogram"]
        .as_str()
        .unwrap();
    assert_eq!(field.len(), 56);
    let crafted = write(dir.path(), "crafted.json", &crafted.to_string());
    let output = ringside(&["merge".as_ref(), host.as_path(), crafted.as_path()]);
    assert_refused(
        &output,
        &[
            "row 1 (echo epoll run 1)",
            "host 2's latency histogram",
            "declares 4294967280 bytes of counts but holds 0",
        ],
    );

    let mut huge = host_document();
    huge["results"][0]["ops"] = u64::MAX.into();
    let huge = write(dir.path(), "huge.json", &huge.to_string());
    let output = ringside(&["merge".as_ref(), huge.as_path(), huge.as_path()]);
    assert_refused(&output, &["row 1 (echo epoll run 1)", "its ops overflows"]);

    let mut status = host_document();
    status["results"][0]["status_counts"] = serde_json::json!({"200": u64::MAX});
    let status = write(dir.path(), "status.json", &status.to_string());
    let output = ringside(&["merge".as_ref(), status.as_path(), status.as_path()]);
    assert_refused(&output, &["its status_counts.200 overflows"]);

    let mut rate = host_document();
    rate["results"][0]["ops_per_sec"] = f64::MAX.into();
    let rate = write(dir.path(), "rate.json", &rate.to_string());
    let output = ringside(&["merge".as_ref(), host.as_path(), rate.as_path()]);
    assert_refused(
        &output,
        &["rate.json cannot be used: row 1 (echo epoll run 1): its ops_per_sec is 1.7976931348623157e+308"],
    );
}

/// Goal: NaN and infinity, which JSON cannot carry, and the extreme finite figures that become
/// them in a report's arithmetic, are refused or drawn finite. Method: `report` over the
/// fixture with NaN, 1e400 and -1 written in, then with legal extremes (1e15 over 5e-324, a
/// ratio that is infinite) that must render within the time bound with no NaN in the page.
#[test]
fn report_refuses_nan_and_infinity_and_draws_extremes_finite() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::fs::read_to_string("tests/fixtures/echo-hand.json").unwrap();
    let cases = [
        (
            "\"ops_per_sec\": 12936.0",
            "\"ops_per_sec\": NaN",
            "it is not JSON",
        ),
        (
            "\"ops_per_sec\": 12936.0",
            "\"ops_per_sec\": 1e400",
            "number out of range",
        ),
        (
            "\"ops_per_sec\": 12936.0",
            "\"ops_per_sec\": -1.0",
            "row 1 (echo epoll run 1)",
        ),
    ];
    for (index, (from, to, says)) in cases.iter().enumerate() {
        assert!(fixture.contains(from));
        let bad = write(
            dir.path(),
            &format!("bad{index}.json"),
            &fixture.replacen(from, to, 1),
        );
        let out = dir.path().join(format!("out{index}"));
        let output = ringside(&["report".as_ref(), bad.as_path(), "--out".as_ref(), &out]);
        assert_refused(&output, &[says]);
        assert!(!out.join("report.html").exists());
    }

    let mut extreme: Value = serde_json::from_str(&fixture).unwrap();
    for (index, row) in extreme["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let tiny = index % 3 == 0;
        let figure = if tiny { 5e-324 } else { 1e15 };
        row["ops_per_sec"] = figure.into();
        row["cpu_user_s"] = figure.into();
        row["ops"] = (if tiny { u64::MAX } else { 1 }).into();
        row["syscalls"] = (if tiny { 0 } else { u64::MAX }).into();
        row["latency_ns_max"] = u64::MAX.into();
    }
    let extreme = write(dir.path(), "extreme.json", &extreme.to_string());
    let out = dir.path().join("extreme");
    let output = ringside(&["report".as_ref(), extreme.as_path(), "--out".as_ref(), &out]);
    assert!(output.status.success(), "{output:?}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg"));
    assert!(!html.contains("NaN"), "a NaN reached the page");
}
