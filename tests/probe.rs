//! `ringside probe` and `ringside engines` as a user runs them: the real binary, its exit code,
//! and output a script can parse. Each test takes well under a second.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn ringside() -> Command {
    Command::cargo_bin("ringside").expect("the binary is built")
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("stdout is JSON")
}

#[test]
fn probe_json_has_the_kernel_and_io_uring_facts() {
    let output = ringside()
        .args(["probe", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let probe = json_of(&output.stdout);
    let release = probe["host"]["kernel_release"].as_str().unwrap();
    assert!(
        release.starts_with(|c: char| c.is_ascii_digit()),
        "{release}"
    );
    assert!(probe["io_uring"]["usable"].is_boolean());
    assert!(probe["io_uring"].get("io_uring_disabled_sysctl").is_some());
    assert!(probe["target"]["fs_type"].is_string());
    assert!(probe["warnings"].is_array());
}

#[test]
fn probe_table_ends_with_warnings() {
    ringside()
        .arg("probe")
        .assert()
        .success()
        .stdout(predicate::str::contains("io_uring\n"))
        .stdout(predicate::str::contains("warnings ("));
}

#[test]
fn probe_of_a_missing_dir_fails_with_one_sentence() {
    ringside()
        .args(["probe", "--dir", "/nonexistent"])
        .assert()
        .failure()
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("cannot probe --dir /nonexistent"));
}

#[test]
fn probe_offers_no_csv_form_and_engines_gives_one() {
    ringside()
        .args(["probe", "--format", "csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("[possible values: table, json]"));
    ringside()
        .args(["engines", "--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "workload,engine,over,available,",
        ));
}

#[test]
fn engines_keeps_its_table_to_columns_when_piped() {
    let output = ringside()
        .arg("engines")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    let widest = table.lines().map(|line| line.chars().count()).max();
    assert!(widest <= Some(100), "{table}");
}

#[test]
fn forced_no_uring_shows_why_while_blocking_stays_available() {
    let output = ringside()
        .args(["engines", "--format", "json"])
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .output()
        .unwrap();
    assert!(output.status.success());
    let listings = json_of(&output.stdout);
    for listing in listings.as_array().unwrap() {
        let engine = listing["engine"].as_str().unwrap();
        if engine == "blocking" {
            assert_eq!(listing["available"], true);
        } else if engine.starts_with("uring") {
            assert_eq!(listing["available"], false, "{engine}");
            let reason = listing["reason"].as_str().unwrap();
            assert!(reason.contains("RINGSIDE_FORCE_NO_URING"), "{reason}");
        }
    }
    ringside()
        .arg("engines")
        .env("RINGSIDE_FORCE_NO_URING", "1")
        .assert()
        .success()
        .stdout(predicate::str::contains("(1) io_uring is switched off"))
        .stdout(predicate::str::contains("┆ no (1) "))
        .stdout(predicate::str::contains("blocking"));
}

#[test]
fn engines_json_lists_every_field() {
    let output = ringside()
        .args(["engines", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let listings = json_of(&output.stdout);
    let first = &listings.as_array().unwrap()[0];
    for key in ["workload", "engine", "over", "available", "reason", "about"] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
}
