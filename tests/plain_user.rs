//! What a plain user gets: the real binary run under a small locked-memory limit and without
//! CAP_IPC_LOCK (dropped from the bounding set when the tests run as root, so root's pins are
//! charged too), and without the kernel's syscall counter. Registered buffers are sized by what
//! is in flight and recorded, or the engine is skipped up front with both numbers; server rows
//! carry the servers' own syscall counts, marked as such.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use ringside::engines::{find, Workload};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ringside");

/// The kernel charges pinned memory to the user, not the process: these tests run one at a
/// time, so one's pool does not take what another's limit allows.
static CHARGED: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    CHARGED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `ringside` with RLIMIT_MEMLOCK at `memlock` bytes and no CAP_IPC_LOCK, as a plain user.
fn as_plain_user(memlock: u64) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_remove("RINGSIDE_FORCE_NO_URING")
        .env_remove("RINGSIDE_NO_PERF");
    // SAFETY: the hook calls only prctl and setrlimit, which are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            const CAP_IPC_LOCK: libc::c_ulong = 14;
            // Refused (EPERM) for a plain user, who has no CAP_IPC_LOCK to drop.
            libc::prctl(libc::PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0);
            let limit = libc::rlimit {
                rlim_cur: memlock,
                rlim_max: memlock,
            };
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    command
}

fn rows(output: &Output) -> Vec<Value> {
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON ({error}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    document["results"].as_array().unwrap().clone()
}

fn available(workload: Workload, engine: &str) -> bool {
    match find(workload, engine).unwrap().availability() {
        Ok(()) => true,
        Err(reason) => {
            eprintln!("skipped: {engine} cannot run here: {reason}");
            false
        }
    }
}

#[test]
fn uring_fixed_registers_a_slot_per_write_in_flight_under_an_8_mib_limit() {
    let _charged = one_at_a_time();
    if !available(Workload::FsWrite, "uring-fixed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 16 MiB of file: registering it whole, as before, passes the limit twice over.
    for (workload, depth, expected) in [("write", "32", 32 * 4096), ("cycle", "8", 2 * 8 * 4096)] {
        let output = as_plain_user(8 << 20)
            .args([
                "fs", workload, "--size", "16m", "--depth", depth, "--runs", "1",
            ])
            .args(["-e", "uring-fixed", "--format", "json", "-q", "--dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "fs {workload}: {stderr}");
        let rows = rows(&output);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["verified"], true, "{:?}", rows[0]);
        assert_eq!(
            rows[0]["params"]["registered_bytes"], expected,
            "fs {workload}"
        );
    }
}

#[test]
fn uring_fixed_is_skipped_up_front_with_the_numbers_when_its_slots_pass_the_limit() {
    let _charged = one_at_a_time();
    if !available(Workload::FsWrite, "uring-fixed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 32 writes of 64 KiB in flight need 2 MiB; the limit is 1 MiB.
    let output = as_plain_user(1 << 20)
        .args([
            "fs",
            "write",
            "--size",
            "4m",
            "--block-size",
            "64k",
            "--depth",
            "32",
        ])
        .args([
            "--runs",
            "1",
            "-e",
            "blocking,uring-fixed",
            "--format",
            "json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "skipping uring-fixed: uring-fixed (depth 32 × 64k --block-size) pins 2056k bytes"
        ) && stderr.contains("ulimit -l"),
        "{stderr}"
    );
    let engines: Vec<Value> = rows(&output)
        .iter()
        .map(|row| row["engine"].clone())
        .collect();
    assert_eq!(engines, ["blocking"]);
}

#[test]
fn a_zero_copy_server_fits_its_registered_pool_to_an_8_mib_limit() {
    let _charged = one_at_a_time();
    if !available(Workload::Echo, "uring-send-zc") {
        return;
    }
    let output = as_plain_user(8 << 20)
        .env("RINGSIDE_NO_PERF", "1")
        .args(["echo", "-e", "uring-send-zc", "-c", "4", "-d", "300ms"])
        .args(["--warmup", "100ms", "--runs", "1", "--format", "json", "-q"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let rows = rows(&output);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["verified"], true, "{row:?}");
    // The default pool of 1024 × 8 KiB alone is the whole limit; the rings are charged too.
    let pool = row["params"]["provided_buffers"].as_u64().unwrap();
    assert!((16..1024).contains(&pool), "{row:?}");
    let registered = row["params"]["registered_bytes"].as_u64().unwrap();
    assert!(registered >= pool * 8192 && registered < 8 << 20, "{row:?}");
}

#[test]
fn server_rows_carry_the_servers_own_syscall_counts_when_the_kernel_refuses_its_counter() {
    let _charged = one_at_a_time();
    let output = as_plain_user(8 << 20)
        .env("RINGSIDE_NO_PERF", "1")
        .args([
            "echo",
            "-e",
            "blocking,epoll,uring",
            "-c",
            "1",
            "-d",
            "300ms",
        ])
        .args(["--warmup", "100ms", "--runs", "1", "--format", "json", "-q"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let rows = rows(&output);
    assert!(!rows.is_empty());
    for row in &rows {
        assert_eq!(row["syscalls_source"], "self", "{row:?}");
        let per_message = row["syscalls"].as_f64().unwrap() / row["ops"].as_f64().unwrap();
        // One connection, ping-pong: a recv and a send per message at least for the blocking
        // and epoll servers; the io_uring server enters the kernel to wait for each.
        assert!((0.5..4.0).contains(&per_message), "{row:?}");
    }
}
