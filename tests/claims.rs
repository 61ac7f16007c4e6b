//! The claims ledger from outside: a claim written for the test, in a directory of its own, runs
//! through `ringside claims run --claims-dir` with no code of its own (its experiment is an
//! existing study), and prints the published figure, the measured one with its interval and
//! rounds, a verdict and a cause; a claim file that does not hold together is refused before
//! anything runs, naming the file.

use std::path::Path;
use std::process::Command;

mod common;
use common::BIN;

/// A claim that blocking writes and a ring of 16 write 1 MiB blocks alike, measured in eight
/// short rounds of 4 MiB.
const CLAIM: &str = r#"
id = "test-write-tie"
title = "A ring of 16 writes 1 MiB blocks as fast as blocking writes"
source = "tests/claims.rs"
sure = "primary"
quote = "both reach the same MB/s"
statistic = "written for the test"
[setup]
kernel = "any"
machine = "any"
tool = "ringside"
shape = "4 MiB, 1 MiB writes"
[experiment]
command = "fs write"
args = ["--size", "4m", "--block-size", "1m", "--depth", "16", "--engine", "blocking,uring-ring", "--runs", "8"]
quick = ["--size", "4m", "--block-size", "1m", "--depth", "16", "--engine", "blocking,uring-ring", "--runs", "8"]
[[test]]
name = "MB/s"
figure = "the same MB/s"
subject = "uring-ring"
reference = "blocking"
metric = "throughput"
expect = "tie"
where = { block_size = "1m" }
[[test]]
name = "syscalls"
figure = "one syscall per write against a ring's few"
subject = "uring-ring"
reference = "blocking"
metric = "syscalls_per_op"
expect = "lower"
ratio = [0.01, 0.5]
where = { block_size = "1m" }
"#;

fn claims(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("claims")
        .args(args)
        .arg("--claims-dir")
        .arg(dir)
        .output()
        .expect("ringside runs")
}

#[test]
fn a_new_claim_file_runs_without_code() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    std::fs::create_dir(&ledger).unwrap();
    std::fs::write(ledger.join("test-write-tie.toml"), CLAIM).unwrap();
    let listed = claims(&ledger, &["list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("test-write-tie  A ring of 16"), "{listed}");
    assert!(listed.contains("seed000-page-cycle"), "{listed}");
    let out = dir.path().join("out");
    let run = claims(
        &ledger,
        &[
            "run",
            "test-write-tie",
            "--quick",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The claim as published, the figure measured with its interval and rounds, the verdict
    // and the cause.
    assert!(text.contains("claimed: both reach the same MB/s"), "{text}");
    assert!(
        text.contains("syscalls: uring-ring over blocking"),
        "{text}"
    );
    assert!(text.contains("8 rounds"), "{text}");
    // A quick form's verdicts are a first look, in every view.
    // (Whether 8 rounds settle the tie is the machine's noise: either verdict is a verdict.)
    assert!(
        ["reproduced", "inconclusive"]
            .iter()
            .any(|verdict| text.contains(&format!("=> provisional (8 rounds): {verdict}"))),
        "{text}"
    );
    // The syscall test's cause gives the counts themselves, never "nothing counted explains".
    let syscalls = text.split("  syscalls: ").nth(1).unwrap_or_default();
    assert!(
        syscalls.contains("cause: ")
            && syscalls.contains(" syscalls")
            && !syscalls.contains("nothing counted explains it"),
        "{text}"
    );
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("claims.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["claim"], "test-write-tie");
        assert_eq!(row["rounds"], 8, "{row}");
        assert_eq!(row["provisional"], true, "{row}");
        assert_eq!(row["asked_by"], "analysis", "{row}");
        assert!(row["low"].as_f64().unwrap() <= row["ratio"].as_f64().unwrap());
    }
    assert_eq!(rows[1]["verdict_key"], "reproduced", "{}", rows[1]);
    for file in ["claims.md", "results.json", "report.md"] {
        assert!(out.join(file).exists(), "{file}");
    }
    // The report judges the user's claim as it judges the shipped ones: the document keeps it.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("### test-write-tie"), "{report}");
    assert!(report.contains("provisional (8 rounds)"), "{report}");
    // The ledger across machines, of this one machine, with no claims directory: the document
    // carries its claim.
    let merged = Command::new(BIN)
        .args(["claims", "merge"])
        .arg(out.join("results.json"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&merged.stdout);
    assert!(
        merged.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert!(table.contains("| test-write-tie | syscalls |"), "{table}");
    assert!(
        table.contains("- test-write-tie / syscalls: reproduced on 1 of 1 machine"),
        "{table}"
    );
    // A document that is not ringside's is refused by name, and nothing is printed.
    let crafted = dir.path().join("crafted.json");
    std::fs::write(&crafted, r#"{"schema_version": 99, "results": []}"#).unwrap();
    let refused = Command::new(BIN)
        .args(["claims", "merge"])
        .arg(out.join("results.json"))
        .arg(&crafted)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("crafted.json is refused"), "{stderr}");
    assert!(refused.stdout.is_empty());
}

#[test]
fn a_claim_file_that_does_not_hold_together_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (CLAIM.replace("--depth", "--deep"), "do not parse"),
        (
            CLAIM.replace("subject = \"uring-ring\"", "subject = \"uring-nope\""),
            "uring-nope",
        ),
        (
            CLAIM.replace("expect = \"lower\"", "expect = \"higher\""),
            "expects higher",
        ),
        (
            CLAIM.replace("id = \"test-write-tie\"", "id = \"other\""),
            "file's name",
        ),
        (
            CLAIM.replace("where = { block_size", "where = { block_sise"),
            "where names 'block_sise', which is no parameter ringside's rows carry (did you mean 'block_size'?)",
        ),
        (
            CLAIM.replace("ratio = [0.01, 0.5]", "at_least = 2.0"),
            "at_least = 2",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(dir.path().join("test-write-tie.toml"), &text).unwrap();
        let run = claims(dir.path(), &["run", "test-write-tie", "--quick"]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    std::fs::write(dir.path().join("test-write-tie.toml"), CLAIM).unwrap();
    let run = claims(dir.path(), &["show", "nope"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("no claim is called 'nope'"));
}
