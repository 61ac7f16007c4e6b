//! Results documents from other hosts, crafted to hurt: `merge` and `report` read them with
//! bounded memory and time, and refuse a bad one in a sentence that names its row, exit 1,
//! never an allocation the header asked for, a panic or a hang. What is not a regular file of
//! at most `--max-input` bytes is refused before it is read, whichever command reads it.

mod common;

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
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
    ringside_measured(args).0
}

/// `ringside`, and the peak resident memory of the process (its rusage, from wait4), in bytes.
fn ringside_measured(args: &[&Path]) -> (Output, u64) {
    let outputs = tempfile::tempdir().unwrap();
    let stdout = outputs.path().join("stdout");
    let stderr = outputs.path().join("stderr");
    let mut command = Command::new(BIN);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap());
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
    // Reaped by wait4 below, which gives its resource usage too (std's wait would not).
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 on our own child, which std never waits for.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break (status, usage);
        }
        if started.elapsed() > COMMAND_TIME_MAX {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            panic!("ringside {args:?} ran past {COMMAND_TIME_MAX:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: std::fs::read(&stdout).unwrap(),
        stderr: std::fs::read(&stderr).unwrap(),
    };
    (output, usage.ru_maxrss as u64 * 1024)
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

/// What a command reading a document may hold at its peak while it refuses one that is too
/// large or not a file: the binary and its libraries (6 MB measured). Before, `merge` held
/// 2,054 MB for a 2 GiB file, and read `/dev/zero` until it had 24 GB.
const REFUSAL_RSS_MAX: u64 = 64 << 20;

/// Goal: every command that reads a document (`merge`, `report`, `compare`, `claims
/// --claims-dir`) refuses what is not a regular file, or holds more than `--max-input`, before
/// it reads a byte of it, in a sentence, exit 1, within a few MB; and a document with anything
/// but whitespace after its JSON value. Method: a sparse 2 GiB file (no disk, 2 GiB if read),
/// a valid document with 4 MiB of whitespace after it under `--max-input 1m`, `/dev/zero`, and
/// a FIFO nobody writes to (whose open blocked before), each given to each command; a valid
/// document with one byte after it; the peak RSS of each refusal from wait4.
#[test]
fn what_is_not_a_regular_file_within_the_bound_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let good = host_document().to_string();
    let spaced = write(
        dir.path(),
        "spaced.json",
        &(good.clone() + &" ".repeat(4 << 20)),
    );
    let fifo = dir.path().join("fifo.json");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let zero = Path::new("/dev/zero");
    let cases: [(&Path, &[&str], &str); 4] = [
        (
            &huge,
            &[],
            "it holds 2147483648 bytes (2048 MiB), more than --max-input",
        ),
        (
            &spaced,
            &["--max-input", "1m"],
            "more than --max-input allows (1048576 bytes",
        ),
        (zero, &[], "it is a character device, not a regular file"),
        (&fifo, &[], "it is a FIFO, not a regular file"),
    ];
    let out = dir.path().join("out");
    for (input, flags, says) in cases {
        let flags: Vec<&Path> = flags.iter().map(Path::new).collect();
        let commands: [Vec<&Path>; 3] = [
            vec!["merge".as_ref(), input, input],
            vec!["report".as_ref(), input, "--out".as_ref(), &out],
            vec!["compare".as_ref(), input, input],
        ];
        for mut command in commands {
            command.extend(&flags);
            let (output, peak) = ringside_measured(&command);
            assert_refused(&output, &[says]);
            assert!(
                peak < REFUSAL_RSS_MAX,
                "{command:?}: peak RSS {} MiB",
                peak >> 20
            );
        }
    }
    let claims = dir.path().join("claims");
    std::fs::create_dir(&claims).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        claims.join("mine.toml"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let listed = ringside(&[
        "claims".as_ref(),
        "list".as_ref(),
        "--claims-dir".as_ref(),
        &claims,
    ]);
    assert_refused(&listed, &["mine.toml", "it is a FIFO, not a regular file"]);

    let trailing = write(dir.path(), "trailing.json", &(good.clone() + "\n x"));
    let output = ringside(&["merge".as_ref(), trailing.as_path(), trailing.as_path()]);
    assert_refused(
        &output,
        &["trailing.json cannot be used: it is not JSON: trailing characters"],
    );
    // Whitespace after the value is JSON's own (RFC 8259), within the bound.
    let newline = write(dir.path(), "newline.json", &(good + "\n\n"));
    let output = ringside(&["merge".as_ref(), newline.as_path(), newline.as_path()]);
    assert!(output.status.success(), "{output:?}");
}

/// HdrHistogram's V2 header with `digits` and `highest`, and `counts` as V2 writes them (ZigZag
/// LEB128, a negative number a run of zeros), deflated and in base64 as a row carries it.
fn crafted_histogram(digits: u32, highest: u64, counts: &[i64]) -> String {
    use base64::Engine as _;
    let mut payload = Vec::new();
    for &count in counts {
        let mut zigzag = ((count << 1) ^ (count >> 63)) as u64;
        while zigzag >= 0x80 {
            payload.push(zigzag as u8 | 0x80);
            zigzag >>= 7;
        }
        payload.push(zigzag as u8);
    }
    let mut inner = 0x1c84_9313u32.to_be_bytes().to_vec();
    inner.extend((payload.len() as u32).to_be_bytes());
    inner.extend(0u32.to_be_bytes());
    inner.extend(digits.to_be_bytes());
    inner.extend(1u64.to_be_bytes());
    inner.extend(highest.to_be_bytes());
    inner.extend(1.0f64.to_be_bytes());
    inner.extend(payload);
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), Default::default());
    deflate.write_all(&inner).unwrap();
    let compressed = deflate.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend((compressed.len() as u32).to_be_bytes());
    bytes.extend(compressed);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Goal: a histogram whose header the library reads but whose meaning no ringside histogram
/// has is refused by what is wrong, with the row and the host named. Before, `merge` took each
/// of these three with exit 0 and merged percentiles from them. Method: a host document with
/// one such histogram merged with a good one: no significant digit, values tracked to i64::MAX
/// ns, and counts that run past the histogram's counters.
#[test]
fn merge_refuses_histograms_whose_header_reads_but_means_nothing_ringside_writes() {
    let dir = tempfile::tempdir().unwrap();
    let host = write(dir.path(), "host.json", &host_document().to_string());
    let counters = ringside::stats::histogram::new_latency().distinct_values();
    let past = format!("counts run to index 60001, past its {counters} counters");
    let cases = [
        (
            crafted_histogram(0, 100_000_000_000, &[5, -3, 7]),
            "keeps 0 significant digits".to_string(),
        ),
        (
            crafted_histogram(3, i64::MAX as u64, &[5, -3, 7]),
            "tracks 1 to 9223372036854775807 ns".to_string(),
        ),
        (crafted_histogram(3, 100_000_000_000, &[1, -60_000]), past),
    ];
    for (index, (histogram, says)) in cases.iter().enumerate() {
        let mut crafted = host_document();
        crafted["results"][0]["latency_ns_histogram"] = histogram.as_str().into();
        let crafted = write(
            dir.path(),
            &format!("crafted{index}.json"),
            &crafted.to_string(),
        );
        let output = ringside(&["merge".as_ref(), host.as_path(), crafted.as_path()]);
        assert_refused(
            &output,
            &[
                "row 1 (echo epoll run 1)",
                "host 2's latency histogram",
                says,
            ],
        );
    }
}
