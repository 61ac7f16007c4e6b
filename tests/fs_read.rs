//! `fs read` end to end: the real binary reads a real file at several depths with every engine
//! of the table that serves it, and every engine, driven through the library on a real file
//! whose block was corrupted after layout, reports exactly that block.

use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use ringside::engines::file::{ReadJob, Stamp};
use ringside::engines::needs::{Feature, NOP};
use ringside::engines::uring::ring::Helpers;
use ringside::engines::{engines_of, EngineDef, Make, Workload};
use ringside::measure::Meter;
use serde_json::Value;

fn ringside() -> Command {
    let mut command = Command::cargo_bin("ringside").unwrap();
    command
        .env_remove("RINGSIDE_FORCE_NO_URING")
        .env_remove("RINGSIDE_NO_PERF");
    command
}

/// The engines of the table that read here: available, not IOPOLL (no poll queues on most
/// test machines), split by whether they need `--direct`.
fn readers(direct: bool) -> Vec<&'static EngineDef> {
    engines_of(Workload::FsRead)
        .filter(|engine| engine.availability().is_ok() && !engine.needs.setup.iopoll)
        .filter(|engine| direct || !engine.needs.features.contains(&Feature::DirectFile))
        .collect()
}

fn rows(args: &[&str], dir: &Path) -> Vec<Value> {
    let output = ringside()
        .args(args)
        .args(["--format", "json", "--quiet", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ringside {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["results"].as_array().unwrap().clone()
}

#[test]
fn every_read_engine_verifies_every_block_at_every_depth() {
    let dir = tempfile::tempdir().unwrap();
    for (cache, flag) in [
        ("warm", None),
        ("cold", Some("--cold")),
        ("direct", Some("--direct")),
    ] {
        let engines: Vec<&str> = readers(flag == Some("--direct"))
            .iter()
            .map(|e| e.name)
            .collect();
        let all = engines.join(",");
        let mut args = vec![
            "fs",
            "read",
            "--size",
            "4m",
            "--depth",
            "1,8",
            "--runs",
            "1",
            "--runtime",
            "0",
            "--engine",
            &all,
        ];
        args.extend(flag);
        let rows = rows(&args, dir.path());
        let blocks = (4 << 20) / 4096;
        for row in &rows {
            assert_eq!(row["verified"], true, "{row}");
            assert_eq!(row["errors"], 0, "{row}");
            assert_eq!(row["ops"], blocks, "{row}");
            assert_eq!(row["params"]["cache"], cache, "{row}");
            let reads = row["engine"] != "uring-nop";
            assert_eq!(row["bytes"], if reads { 4 << 20 } else { 0 }, "{row}");
            let histogram = row["latency_ns_histogram"].as_str().expect("a histogram");
            let histogram = ringside::stats::histogram::decode(histogram).unwrap();
            assert_eq!(histogram.len(), blocks, "{row}");
            assert!(row["latency_ns_p50"].as_u64().unwrap() > 0, "{row}");
        }
        // An O_DIRECT read is submitted as its slot frees, one call each; buffered reads go in
        // one call per refill of the ring (src/engines/uring/read.rs, src/engines/libaio.rs).
        for row in rows.iter().filter(|r| r["params"]["depth"] == 8) {
            let per_read = row["syscalls"].as_f64().unwrap() / row["ops"].as_f64().unwrap();
            match (row["engine"].as_str().unwrap(), cache) {
                ("uring-ring" | "libaio", "direct") => assert!(per_read >= 1.0, "{row}"),
                ("uring-ring", "warm") => assert!(per_read < 0.5, "{row}"),
                _ => {}
            }
        }
        // Every engine at depth 1, and every engine but the one-at-a-time ones at depth 8.
        let at = |depth: u64| {
            rows.iter()
                .filter(|r| r["params"]["depth"] == depth)
                .count()
        };
        assert_eq!(at(1), engines.len());
        let single = ["blocking", "uring-single"];
        let deep = engines.iter().filter(|name| !single.contains(name)).count();
        assert_eq!(at(8), deep);
        let threads = rows
            .iter()
            .find(|r| r["engine"] == "threads" && r["params"]["depth"] == 8)
            .expect("a threads row at depth 8");
        assert_eq!(threads["pool_threads"], 8, "{threads}");
        assert!(threads["pool_cpu_s"].as_f64().is_some(), "{threads}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn libaio_without_direct_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let output = ringside()
        .args(["fs", "read", "--size", "1m", "--engine", "libaio", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "libaio cannot read this file: it reads asynchronously only from an O_DIRECT file"
        ),
        "{stderr}"
    );
}

/// An engine named that cannot read here gets a row at each depth saying why, beside the
/// engines measured, and the study exits 4 (docs/exit-codes.md): libaio on a buffered file,
/// and an io_uring rung where io_uring is switched off.
#[test]
fn named_engines_that_cannot_read_get_failure_rows() {
    let dir = tempfile::tempdir().unwrap();
    for (engine, switch_off, reason) in [
        (
            "libaio",
            false,
            "refused: it reads asynchronously only from an O_DIRECT file",
        ),
        (
            "uring-ring",
            true,
            "unavailable here: io_uring is switched off",
        ),
    ] {
        let mut command = ringside();
        if switch_off {
            command.env("RINGSIDE_FORCE_NO_URING", "1");
        }
        let engines = format!("blocking,{engine}");
        let output = command
            .args([
                "fs", "read", "--size", "1m", "--depth", "1,4", "--runs", "1",
            ])
            .args(["--engine", &engines, "--format", "json", "--quiet", "--dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(4), "{output:?}");
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        let rows = document["results"].as_array().unwrap();
        let measured: Vec<&Value> = rows.iter().filter(|r| r["engine"] == "blocking").collect();
        assert_eq!(measured.len(), 1);
        assert_eq!(measured[0]["verified"], true);
        let failed: Vec<&Value> = rows.iter().filter(|r| r["engine"] == engine).collect();
        assert_eq!(failed.len(), 2, "a row at each depth: {rows:?}");
        for row in failed {
            let failure = row["failure"].as_str().unwrap();
            assert!(failure.contains(reason), "{failure}");
            assert_eq!(row["verified"], false);
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A block whose content is not what the layout stamped (here: block 5 holds block 6's data,
/// and one bit in the middle of block 20 flipped, where the stamp checked nothing before it
/// checksummed the whole block) must be caught by every engine that reads, once per read of it.
#[test]
fn every_read_engine_catches_a_wrong_block() {
    const BLOCK: usize = 4096;
    const BLOCKS: u32 = 64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stamped");
    let stamp = Stamp::new(3);
    let mut data = vec![7u8; BLOCK * BLOCKS as usize];
    for (index, block) in data.chunks_mut(BLOCK).enumerate() {
        stamp.write(block, index as u32);
    }
    let wrong = data[6 * BLOCK..7 * BLOCK].to_vec();
    data[5 * BLOCK..6 * BLOCK].copy_from_slice(&wrong);
    data[20 * BLOCK + 1234] ^= 0x40;
    std::fs::write(&path, &data).unwrap();
    let helpers = Helpers::defaults(None);
    let order: Vec<u32> = (0..BLOCKS).rev().collect();
    for direct in [false, true] {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let Ok(file) = options.open(&path) else {
            assert!(direct, "the buffered file opens");
            continue;
        };
        for def in readers(direct) {
            if def.needs.opcodes.contains(&NOP) {
                continue;
            }
            let Make::File(make) = def.make else {
                unreachable!()
            };
            let job = ReadJob {
                file: file.as_fd(),
                blocks: &order,
                block_size: BLOCK,
                depth: 4,
                threads: None,
                stamp,
                advice: rustix::fs::Advice::Random,
                should_stop: &|| false,
            };
            let outcome = make(def, &helpers)
                .read(&job, &mut Meter::without_syscall_counter())
                .unwrap_or_else(|error| panic!("{} failed: {error}", def.name));
            assert_eq!(outcome.tally.ops, u64::from(BLOCKS), "{}", def.name);
            assert_eq!(outcome.mismatches, 2, "{} (direct: {direct})", def.name);
        }
    }
}

/// The pool is one thread per `--depth` unless `--threads` sets it; the rows say which.
#[test]
fn the_pool_takes_threads_apart_from_depth() {
    let dir = tempfile::tempdir().unwrap();
    let cycle = rows(
        &[
            "fs",
            "cycle",
            "--size",
            "1m",
            "--depth",
            "16",
            "--threads",
            "4",
            "--runs",
            "1",
            "--engine",
            "threads",
        ],
        dir.path(),
    );
    assert_eq!(cycle[0]["pool_threads"], 4, "{}", cycle[0]);
    assert_eq!(cycle[0]["params"]["threads"], 4);
    assert_eq!(cycle[0]["verified"], true);
    let read = rows(
        &[
            "fs", "read", "--size", "1m", "--depth", "2", "--runs", "1", "--engine", "threads",
        ],
        dir.path(),
    );
    assert_eq!(read[0]["pool_threads"], 2, "{}", read[0]);
}

/// `--filename`: every read engine of the table reads a file laid out by the first invocation
/// and kept by the next (warm and direct), the file stays; a kept file with one byte in the
/// middle of a block changed where the spread check does not look is read, and no engine's row
/// is verified; a warm study, which checks every block, refuses it and leaves it as it is.
#[test]
fn a_kept_file_is_read_by_every_engine_and_never_verified_when_changed() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kept.bin");
    let read = |flag: &str| {
        let engines: Vec<&str> = readers(flag == "--direct").iter().map(|e| e.name).collect();
        ringside()
            .args([
                "fs", "read", "--size", "8m", "--depth", "1,8", "--runs", "1",
            ])
            .args(["--runtime", "0", "--engine", &engines.join(","), flag])
            .args(["--format", "json", "--quiet", "--filename"])
            .arg(&path)
            .output()
            .unwrap()
    };
    for (flag, layout) in [
        ("--direct", "laid out"),
        ("--direct", "kept"),
        ("--cold", "kept"),
    ] {
        let output = read(flag);
        assert!(output.status.success(), "{output:?}");
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        for row in document["results"].as_array().unwrap() {
            assert_eq!(row["verified"], true, "{row}");
            assert_eq!(row["ops"], 2048, "{row}");
            assert_eq!(row["params"]["layout"], layout, "{row}");
        }
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 8 << 20, "kept");
    // 2048 blocks: the spread check reads every other one, so block 7 is not among them.
    let file = (std::fs::OpenOptions::new().read(true).write(true))
        .open(&path)
        .unwrap();
    let mut laid = [0u8; 1];
    file.read_exact_at(&mut laid, 7 * 4096 + 2000).unwrap();
    let changed = [laid[0] ^ 0xff];
    file.write_all_at(&changed, 7 * 4096 + 2000).unwrap();
    file.sync_all().unwrap();
    let output = read("--direct");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["results"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows.iter().filter(|row| row["engine"] != "uring-nop") {
        assert_eq!(row["verified"], false, "{row}");
        assert_eq!(row["errors"], 1, "{row}");
    }
    let output = read("--sequential");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("block 7 without its stamp"), "{stderr}");
    let mut byte = [0u8; 1];
    file.read_exact_at(&mut byte, 7 * 4096 + 2000).unwrap();
    assert_eq!(byte, changed, "the refused file is left as it is");
}
