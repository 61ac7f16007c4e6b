//! The load generator as a checker, and the command line's clear errors, against the real
//! binary on 127.0.0.1 only, every wait bounded.
//!
//! Goal: the load generator must catch a server that corrupts one byte or ignores a short send,
//! and pass a correct one; a target nobody listens on, a port in use and zero connections or
//! payload each get one clear sentence and a non-zero exit. Methodology: small hand-written
//! servers in this file (one flips a bit, one ignores short sends) under `ringside load echo`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::time::Duration;

mod common;
use common::{slow_reader_stream, Server, BIN};

/// An echo server that flips one bit of the 1000th byte it echoes, and is otherwise correct.
fn corrupting_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut echoed_total = 0usize;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 4096];
            // Serves its connections one after another; the test uses one.
            while let Ok(n) = stream.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                if echoed_total <= 1000 && 1000 < echoed_total + n {
                    buffer[1000 - echoed_total] ^= 0x10;
                }
                echoed_total += n;
                if stream.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    });
    address
}

#[test]
fn load_generator_catches_a_server_that_flips_one_byte() {
    let address = corrupting_server();
    let output = Command::new(BIN)
        .args(["load", "echo", "--connections", "1", "--payload", "64"])
        .args([
            "--duration",
            "500ms",
            "--warmup",
            "0s",
            "--format",
            "json",
            "--target",
        ])
        .arg(address.to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], false);
    assert_eq!(row["error_counts"]["mismatch"], 1);
}

#[test]
fn stream_mode_catches_the_flipped_byte_and_passes_a_correct_server() {
    let address = corrupting_server();
    let output = Command::new(BIN)
        .args(["load", "echo", "--mode", "stream", "--connections", "1"])
        .args(["--payload", "333", "--duration", "300ms", "--warmup", "0s"])
        .args(["--format", "json", "--target", &address.to_string()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let Some(server) = Server::start("echo", "uring-multishot", &[])
        .or_else(|| Server::start("echo", "epoll", &[]))
    else {
        return;
    };
    let output = Command::new(BIN)
        .args(["load", "echo", "--mode", "stream", "--connections", "4"])
        .args(["--payload", "9001", "--duration", "500ms", "--warmup", "0s"])
        .args(["--format", "json", "--target", &server.address.to_string()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], true);
    assert!(row["bytes"].as_u64().unwrap() > 1 << 20, "{row}");
    server.stop();
}

/// An echo server that makes one non-blocking send of each read and ignores what it returned,
/// as frevib's servers do (FINDINGS.md): correct while its send buffer has room.
fn short_send_ignoring_server() -> SocketAddr {
    use std::os::fd::AsRawFd;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 2048];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
                    // SAFETY: send(2) from a live buffer on a socket this thread owns.
                    unsafe { libc::send(stream.as_raw_fd(), buffer.as_ptr().cast(), n, flags) };
                }
            });
        }
    });
    address
}

#[test]
fn the_slow_reader_catches_a_server_that_ignores_short_sends() {
    let output = slow_reader_stream(short_send_ignoring_server(), "2");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = &document["results"][0];
    assert_eq!(row["verified"], false);
    assert!(
        row["error_counts"]["mismatch"].as_u64().unwrap() > 0,
        "{row}"
    );
}

fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn fails_with(args: &[&str], needle: &str) {
    let assert = assert_cmd::Command::new(BIN)
        .args(args)
        .timeout(Duration::from_secs(20))
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains(needle),
        "stderr {stderr:?} lacks {needle:?}"
    );
    assert!(
        stderr.lines().count() <= 4,
        "not one clear sentence: {stderr}"
    );
}

#[test]
fn a_target_nobody_listens_on_is_a_clear_error() {
    let target = free_port().to_string();
    let args = [
        "load",
        "echo",
        "--target",
        &target,
        "--duration",
        "1s",
        "--timeout",
        "1s",
    ];
    fails_with(&args, "is a server listening there?");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = holder.local_addr().unwrap().to_string();
    fails_with(
        &["serve", "echo", "--engine", "epoll", "--listen", &address],
        "cannot listen on",
    );
}

#[test]
fn zero_connections_or_payload_is_a_clear_error() {
    let target = free_port().to_string();
    fails_with(
        &["load", "echo", "--target", &target, "--connections", "0"],
        "at least one connection",
    );
    fails_with(
        &["load", "echo", "--target", &target, "--payload", "0"],
        "at least one byte",
    );
    fails_with(&["echo", "--connections", "0"], "--connections value '0'");
    fails_with(
        &["serve", "echo", "--engine", "nope"],
        "not a network engine",
    );
}
