//! Flag values that panicked end in a sentence: each value the issue found (and its kin) is
//! refused before anything runs, naming the flag and the bound, with no backtrace. The parsers
//! themselves are property-tested in `cli/mod.rs`, `cli/common.rs` and `units.rs`.

mod common;

use std::process::{Command, Stdio};

use common::BIN;

/// Goal: no value of a duration, rate, count or time flag reaches a panic. Method: the issue's
/// values (`--duration 1e20` panicked in `Duration::from_secs_f64`, `1e19` in `Instant +
/// Duration`, `--rate 1e-300` in a load thread, `--idle-timeout 429496729.6s` divided by zero
/// in the blocking server, 4294967295 runs reserved 3.4 TB) run through the real binary; each
/// must exit 1 or 2 (clap's code for a bad value) with the flag named, before any server starts.
#[test]
fn the_values_that_panicked_are_refused_in_a_sentence() {
    let cases: &[(&[&str], &str)] = &[
        (&["echo", "--duration", "1e20"], "365 days"),
        (&["echo", "--duration", "1e19"], "365 days"),
        (&["http", "--warmup", "1e20"], "365 days"),
        (&["echo", "--timeout", "1e20"], "365 days"),
        (&["echo", "--idle-timeout", "1e20"], "365 days"),
        (&["echo", "--work", "1e20"], "365 days"),
        (&["fs", "write", "--runtime", "1e300"], "365 days"),
        (
            &[
                "serve",
                "echo",
                "-e",
                "blocking",
                "--idle-timeout",
                "429496729.6s",
            ],
            "365 days",
        ),
        (
            &[
                "load",
                "echo",
                "--target",
                "127.0.0.1:9",
                "--rate",
                "1e-300",
            ],
            "0.001",
        ),
        (
            &[
                "load",
                "http",
                "--target",
                "http://127.0.0.1:9/",
                "--rate",
                "NaN",
            ],
            "0.001",
        ),
        (
            &["echo", "--rate", "1e-300", "-e", "epoll"],
            "--rate '1e-300'",
        ),
        (
            &["http", "--rate", "50,1e308", "-e", "epoll"],
            "--rate '1e308'",
        ),
        (&["echo", "--runs", "4294967295"], "from 1 to 1000"),
        (&["fs", "cycle", "--runs", "1001"], "from 1 to 1000"),
        (
            &[
                "load",
                "echo",
                "--target",
                "127.0.0.1:9",
                "--start-at",
                "1e19",
            ],
            "365 days",
        ),
        (
            &[
                "load",
                "echo",
                "--target",
                "127.0.0.1:9",
                "--start-at",
                "1e17",
            ],
            "365 days",
        ),
    ];
    for (args, says) in cases {
        let output = Command::new(BIN)
            .args(*args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let what = args.join(" ");
        assert!(
            matches!(output.status.code(), Some(1 | 2)),
            "{what}: {:?} {stderr}",
            output.status
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {says:?} not in {stderr}");
    }
}
