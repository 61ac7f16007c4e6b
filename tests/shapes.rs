//! Network shapes beyond 64-byte ping-pong, through the real binary on 127.0.0.1: every engine
//! verified at each size of an echo payload sweep, streaming, and at each size of an HTTP
//! body-size sweep (table-driven, `for_each_engine`), and `--work` recorded in the rows (the CPU it
//! costs is tests/work.rs, alone in its binary).

use std::process::Command;

use ringside::engines::{EngineDef, Workload};
use serde_json::Value;

// The shared helpers these tests leave unused (fd counts, lingering) are the others'.
mod common;
use common::{for_each_engine, serves_one_at_a_time, BIN};

/// Runs a short study of one run per cell and returns its rows.
fn study_rows(args: &[&str]) -> Vec<Value> {
    let output = Command::new(BIN)
        .args(args)
        .args(["--runs", "1", "--duration", "300ms", "--warmup", "100ms"])
        .args(["--format", "json", "--quiet"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["results"].as_array().unwrap().clone()
}

fn connections(def: &EngineDef) -> &'static str {
    match serves_one_at_a_time(def) {
        true => "1",
        false => "2",
    }
}

#[test]
fn every_engine_is_verified_at_each_payload_of_a_sweep() {
    for_each_engine(Workload::Echo, |def| {
        let rows = study_rows(&[
            "echo",
            "--engine",
            def.name,
            "--payload",
            "64,16k,64k",
            "--connections",
            connections(def),
        ]);
        let payloads: Vec<u64> = (rows.iter())
            .map(|row| row["params"]["payload_bytes"].as_u64().unwrap())
            .collect();
        assert_eq!(payloads, [64, 16 << 10, 64 << 10], "{}", def.name);
        for row in &rows {
            assert_eq!(row["verified"], true, "{}: {row}", def.name);
            assert!(row["ops"].as_u64().unwrap() > 0, "{}: {row}", def.name);
        }
    });
}

/// `echo --mode stream` is a measured cell for every engine: tcpkali's 1 KiB messages by
/// default, every byte echoed and checked, MB/s and the server's costs per MB in the row.
#[test]
fn every_engine_is_verified_streaming() {
    for_each_engine(Workload::Echo, |def| {
        let rows = study_rows(&[
            "echo",
            "--engine",
            def.name,
            "--mode",
            "stream",
            "--connections",
            connections(def),
        ]);
        assert_eq!(rows.len(), 1, "{}: {rows:?}", def.name);
        let row = &rows[0];
        assert_eq!(row["params"]["mode"], "stream", "{}", def.name);
        assert_eq!(row["params"]["payload_bytes"], 1024, "{}", def.name);
        assert_eq!(row["verified"], true, "{}: {row}", def.name);
        let megabytes = row["bytes"].as_f64().unwrap() / 1e6;
        let seconds = row["seconds"].as_f64().unwrap();
        let mb_per_sec = row["mb_per_sec"].as_f64().unwrap();
        assert!(
            megabytes > 0.0 && (mb_per_sec - megabytes / seconds).abs() < 1e-6 * mb_per_sec,
            "{}: {row}",
            def.name
        );
        assert!(row["server_cpu_us_per_mb"].is_f64(), "{}: {row}", def.name);
        if row["syscalls_source"] != "none" {
            let per_mb = row["syscalls_per_mb"].as_f64().unwrap();
            let syscalls = row["syscalls"].as_f64().unwrap();
            assert!((per_mb - syscalls / megabytes).abs() < 1e-6 * (1.0 + per_mb));
        }
    });
}

#[test]
fn every_engine_is_verified_at_each_body_size_of_a_sweep() {
    for_each_engine(Workload::Http, |def| {
        let rows = study_rows(&[
            "http",
            "--engine",
            def.name,
            "--body-size",
            "64,16k",
            "--connections",
            connections(def),
        ]);
        let sizes: Vec<(&str, u64)> = (rows.iter())
            .map(|row| {
                let params = &row["params"];
                (
                    params["body_size"].as_str().unwrap(),
                    params["body_bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(sizes, [("64", 64), ("16k", 16 << 10)], "{}", def.name);
        for row in &rows {
            assert_eq!(row["verified"], true, "{}: {row}", def.name);
            // Each size's server sent bodies of that size: the bytes per response grow.
            assert!(row["ops"].as_u64().unwrap() > 0, "{}: {row}", def.name);
        }
        let per_response: Vec<f64> = (rows.iter())
            .map(|row| row["bytes"].as_f64().unwrap() / row["ops"].as_f64().unwrap())
            .collect();
        assert!(
            per_response[1] > per_response[0] + 15_000.0,
            "{}: {per_response:?}",
            def.name
        );
    });
}

/// A study records the engines' work in their rows, and the message size echo charges it by.
#[test]
fn rows_record_the_work() {
    let rows = study_rows(&[
        "echo",
        "--engine",
        "epoll",
        "--connections",
        "1",
        "--work",
        "2us",
    ]);
    assert!(
        rows.iter()
            .all(|row| row["params"]["work_ns"] == 2000 && row["params"]["work_bytes"] == 64),
        "{rows:?}"
    );
}
