//! The load generator at a bigger machine's scale, simulated on this one (issue 29 §4): on N
//! cores the load runs N − (server loops) threads, so on 16 cores 15 or more threads share the
//! connections. Run as the real binary on 127.0.0.1 only, against a `ringside serve echo`
//! child, every run a second long.
//!
//! Goal: at 16 client threads and 10,000 connections every message is verified, the closed
//! loop (a sweep's probe) completes messages, and the open loop's schedule, split over the
//! threads, sends what it was asked for and achieves the rate. Figures are checked for sanity,
//! not speed: 16 threads share 2 CPUs here, so lateness is not asserted.

mod common;
use common::{load_echo, Server};

/// The row of one `load echo` run against `server` at 16 threads and 10,000 connections.
fn load_16_threads(server: &Server, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--threads",
        "16",
        "-c",
        "10000",
        "-d",
        "1s",
        "--warmup",
        "500ms",
    ];
    args.extend_from_slice(extra);
    load_echo(server, &args)
}

#[test]
fn sixteen_load_threads_hold_ten_thousand_connections_closed_and_open_loop() {
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if nofile.maximum.is_some_and(|hard| hard < 10_100) {
        eprintln!("skipped: the hard open-file limit ({nofile:?}) is under 10,100");
        return;
    }
    let Some(server) = Server::start("echo", "epoll", &[]) else {
        return;
    };
    // Closed loop, as a sweep's probe: every connection's messages verified.
    let closed = load_16_threads(&server, &[]);
    assert_eq!(closed["verified"], true, "{closed}");
    assert!(closed["failure"].is_null(), "{closed}");
    assert_eq!(closed["params"]["connections"], 10_000, "{closed}");
    assert_eq!(closed["params"]["client_threads"], 16, "{closed}");
    assert!(closed["ops_per_sec"].as_f64().unwrap() > 0.0, "{closed}");
    // Open loop: the schedule over 16 threads offers the rate and the server achieves it.
    let open = load_16_threads(&server, &["--rate", "20000"]);
    server.stop();
    assert_eq!(open["verified"], true, "{open}");
    assert_eq!(open["offered_rate"], 20_000.0, "{open}");
    assert_eq!(open["params"]["client_threads"], 16, "{open}");
    let achieved = open["ops_per_sec"].as_f64().unwrap();
    assert!(
        (18_000.0..=22_000.0).contains(&achieved),
        "{achieved}/s of 20000: {open}"
    );
    let sends = open["client_sends"].as_u64().unwrap() as f64;
    let seconds = open["seconds"].as_f64().unwrap();
    assert!(
        (sends / seconds - 20_000.0).abs() <= 2_000.0,
        "{sends} sends in {seconds} s: {open}"
    );
    assert!(open["client_late_share"].is_number(), "{open}");
}
