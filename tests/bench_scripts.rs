//! bench/'s scripts format ringside's analysis (`ringside report --format json`, `ringside
//! compare`) and compute no statistic of their own: a median, mean, percentile or spread computed
//! in Python is a second analysis beside ringside's, which can say another thing than the report.
//! The few scripts that summarise other programs' output, which ringside cannot read, are named
//! below with the reason.

use std::path::{Path, PathBuf};

/// Scripts allowed to compute a statistic, each with why ringside's analysis cannot do it.
const ALLOWED: [(&str, &str); 7] = [
    (
        "bench/blocks-summary.py",
        "studies the verdict procedure's own noise (the spread of the rounds' log ratios, the \
         share of it between blocks, the Hodges-Lehmann estimate itself): statistics of the \
         statistic, which no verdict rests on",
    ),
    (
        "bench/peers-echo-summary.py",
        "rust_echo_bench's and tcpkali's text output against public servers that ringside \
         neither runs nor verifies",
    ),
    (
        "bench/peers-fs-summary.py",
        "the TigerBeetle page-cycle demos' own log lines, five runs a process, the first on a \
         fresh file: no run of theirs is a ringside row",
    ),
    (
        "bench/http-peers-summary.py",
        "wrk's text output and /proc ticks against seed 001's servers, beside the same servers \
         under ringside's load",
    ),
    (
        "bench/shapes-stream-summary.py",
        "tcpkali's text output and /proc/stat core shares beside ringside's stream load",
    ),
    (
        "bench/shapes-work-perf-summary.py",
        "perf stat's counts (wake-ups, IPIs, waits), which ringside's rows do not carry",
    ),
    (
        "bench/shapes-work-profile.py",
        "perf record's samples sorted into what the server was doing",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python_in(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            python_in(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            found.push(path);
        }
    }
}

/// The lines of a Python source that compute a statistic: a call of statistics', numpy's or a
/// hand-made median, mean, percentile or spread (docstrings and comments aside).
fn statistics_computed(source: &str) -> Vec<String> {
    const CALLS: [&str; 13] = [
        "import statistics",
        "from statistics",
        "statistics.",
        "numpy",
        "median(",
        "mean(",
        "percentile(",
        "quantile(",
        "stdev(",
        "variance(",
        "//2]",
        "// 2]",
        ") / len(",
    ];
    let mut in_docstring = false;
    let mut found = Vec::new();
    for line in source.lines() {
        let code = line.trim();
        let quotes = code.matches("\"\"\"").count();
        if in_docstring || code.starts_with("\"\"\"") {
            // A docstring's lines are prose; one that opens and closes on a line is one line.
            if quotes % 2 == 1 {
                in_docstring = !in_docstring;
            }
            continue;
        }
        let code = code.split('#').next().unwrap_or("");
        if CALLS.iter().any(|call| code.contains(call)) {
            found.push(line.to_string());
        }
    }
    found
}

#[test]
fn bench_scripts_compute_no_statistic_of_their_own() {
    let mut scripts = Vec::new();
    python_in(&root().join("bench"), &mut scripts);
    scripts.sort();
    assert!(scripts.len() > 10, "bench/ holds {} scripts", scripts.len());
    let mut offenders = Vec::new();
    for path in &scripts {
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let computed = statistics_computed(&std::fs::read_to_string(path).unwrap());
        let allowed = ALLOWED.iter().any(|(allowed, _)| *allowed == name);
        if allowed {
            // An allowed script that no longer computes anything leaves the list.
            assert!(
                !computed.is_empty(),
                "{name} computes no statistic: take it off ALLOWED"
            );
        } else if !computed.is_empty() {
            offenders.push(format!("{name}: {}", computed[0].trim()));
        }
    }
    assert!(
        offenders.is_empty(),
        "these bench/ scripts compute a statistic themselves; print ringside's analysis \
         (bench/ringside_analysis.py: `ringside report --format json`, `ringside compare`) \
         instead:\n{}",
        offenders.join("\n")
    );
    for (name, reason) in ALLOWED {
        assert!(
            root().join(name).exists(),
            "ALLOWED names {name}, which is gone"
        );
        assert!(!reason.is_empty());
    }
}

#[test]
fn the_check_finds_a_hand_made_median_and_passes_prose() {
    let prose = "\"\"\"The median and the runs' range, as ringside's analysis gives them.\"\"\"\n\
                 print(f\"{figure['median']:.1f} median (min–max)\")  # not a median() call\n";
    assert!(statistics_computed(prose).is_empty());
    for computing in [
        "import statistics",
        "values = sorted(rates)[len(rates) // 2]",
        "average = sum(rates) / len(rates)",
        "    middle = np.percentile(rates, 50)",
        "x = statistics.median(rates)",
    ] {
        let found = statistics_computed(computing);
        assert_eq!(found.len(), 1, "{computing:?} was not found");
    }
}
