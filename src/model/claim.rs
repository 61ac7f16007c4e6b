//! A published claim about io_uring as data: what the source said (its figure, in its words and
//! units, and the statistic behind it), how sure we are it said so, the source's set-up, the
//! ringside experiment that tests it, what that needs of the machine, and its tests: each an
//! engine over another on one metric, with the direction (and, where the source gave one, the
//! ratio) it claimed. One TOML file per claim under `claims/`, every one of them embedded in the
//! binary (`EMBEDDED`, written by build.rs), so adding a claim is adding a file; `ringside
//! claims --claims-dir DIR` adds a user's own. `claim_verdict` judges a claim's tests against
//! the studies a document holds.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::comparison::Metric;

/// The claims shipped with this binary: (file name, TOML text), from `claims/*.toml`.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/claims.rs"));

/// How sure we are the source published the figure (CLAIMS.md's P, S and U).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sureness {
    /// Read in the primary source: the repository file, the issue thread, the paper.
    Primary,
    /// Read only where someone else quoted it.
    Secondary,
    /// The figure was not retrieved: only the direction is confirmed.
    DirectionOnly,
}

impl Sureness {
    pub fn text(self) -> &'static str {
        match self {
            Sureness::Primary => "read in the primary source",
            Sureness::Secondary => "read second-hand: confirm it before quoting it as claimed",
            Sureness::DirectionOnly => "direction only: the figure itself was not retrieved",
        }
    }
}

/// The source's own set-up, as it stated it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSetup {
    pub kernel: String,
    pub machine: String,
    /// The program that made the load or took the figures (k6, rust_echo_bench, fio, ...).
    pub tool: String,
    /// Sizes, connections, depths, durations.
    pub shape: String,
}

/// The ringside study that tests the claim: a subcommand and its arguments, for a full run and
/// for `--quick` (a first look in well under a minute).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// The subcommand, as typed: "fs cycle", "echo", "http".
    pub command: String,
    pub args: Vec<String>,
    pub quick: Vec<String>,
    /// Reference contenders (`ringside run --contenders`'s names: tokio, monoio, go, node)
    /// measured beside the engines, each a `--contender` flag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contenders: Vec<String>,
}

impl Experiment {
    /// The subcommand's words.
    pub fn command_words(&self) -> Vec<&str> {
        self.command.split_whitespace().collect()
    }

    /// The arguments of a full run or a quick one.
    pub fn args(&self, quick: bool) -> &[String] {
        if quick {
            &self.quick
        } else {
            &self.args
        }
    }

    /// The workload its rows carry ("fs-cycle", "echo").
    pub fn workload(&self) -> String {
        self.command_words().join("-")
    }

    /// The command line a reader can type, contenders left as their names.
    pub fn command_line(&self, quick: bool) -> String {
        let mut words = vec!["ringside".to_string(), self.command.clone()];
        words.extend(self.args(quick).iter().map(|arg| shell_word(arg)));
        for contender in &self.contenders {
            words.push(format!("--contender {contender}=…"));
        }
        words.join(" ")
    }
}

fn shell_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.,=:/".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What the claim's experiment needs of the machine beyond what its engines need (each engine
/// says itself whether it can run here).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineNeeds {
    /// A block device with NVMe poll queues under the scratch directory (IOPOLL).
    #[serde(default)]
    pub poll_queues: bool,
    /// A NIC that carries the traffic: loopback and veth copy every send and have no NAPI.
    #[serde(default)]
    pub nic: bool,
    /// At least this many online CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
    /// Root (SCHED_FIFO, dropping caches, network namespaces).
    #[serde(default)]
    pub root: bool,
}

/// Which way the source said the subject's metric lies from the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// subject ÷ reference above 1 (faster, or costlier for a cost).
    Higher,
    /// Below 1.
    Lower,
    /// Within the metric's margin of 1.
    Tie,
}

/// The ratio the source's figures give, one value or the range its runs or set-ups spanned.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Claimed {
    One(f64),
    Range([f64; 2]),
}

impl Claimed {
    /// The lowest and highest claimed ratio.
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Claimed::One(ratio) => (ratio, ratio),
            Claimed::Range([a, b]) => (a.min(b), a.max(b)),
        }
    }

    pub fn text(self) -> String {
        match self.bounds() {
            (low, high) if low == high => format!("{}×", ratio_text(low)),
            (low, high) => format!("{}–{}×", ratio_text(low), ratio_text(high)),
        }
    }
}

/// A ratio with two significant digits at least: 0.16, 1.2, 2.0.
pub fn ratio_text(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}")
    } else {
        format!("{ratio:.2}")
    }
}

/// One comparison the claim makes: `subject` over `reference` on `metric`, in the study whose
/// parameters include `where`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimTest {
    /// What tells it from the claim's other tests ("50 connections").
    pub name: String,
    /// The published figures this test rests on, in the source's words and units.
    pub figure: String,
    /// An engine of the study, or a contender as `contender:NAME`.
    pub subject: String,
    pub reference: String,
    pub metric: Metric,
    pub expect: Expect,
    /// subject ÷ reference as the source's figures give it; none for a direction-only claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<Claimed>,
    /// Parameters the study must have (`connections = 50`, `block_size = "4k"`), compared as
    /// text, case aside.
    #[serde(default, rename = "where", skip_serializing_if = "Map::is_empty")]
    pub at: Map<String, Value>,
    /// Parameters where the reference's study differs from the subject's, when the two ran
    /// in sibling studies of one experiment (blocking at depth 1 against a ring at depth 32):
    /// cells of one study run in the same rounds, so their rounds still pair.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub reference_where: Map<String, Value>,
}

impl ClaimTest {
    /// Whether a study with `params` is the one the subject is read in.
    pub fn matches(&self, params: &Map<String, Value>) -> bool {
        matches(&self.at, params)
    }

    /// Whether a study with `params` is the one the reference is read in: `where`, with
    /// `reference_where` in place of what it names.
    pub fn reference_matches(&self, params: &Map<String, Value>) -> bool {
        let mut at = self.at.clone();
        at.extend(self.reference_where.clone());
        matches(&at, params)
    }

    /// "50 connections: uring over epoll, throughput".
    pub fn label(&self) -> String {
        format!(
            "{}: {} over {}, {}",
            self.name,
            self.subject,
            self.reference,
            metric_name(self.metric)
        )
    }

    /// What the source claimed, in ratio terms: "1.17–1.20× (higher)", "a tie".
    pub fn claimed_text(&self) -> String {
        match (self.expect, self.ratio) {
            (Expect::Tie, _) => format!(
                "a tie (within {:.0}%)",
                self.metric.equivalence_margin() * 100.0
            ),
            (expect, Some(ratio)) => format!("{} ({})", ratio.text(), expect_word(expect)),
            (expect, None) => format!("{} (direction only)", expect_word(expect)),
        }
    }
}

fn expect_word(expect: Expect) -> &'static str {
    match expect {
        Expect::Higher => "higher",
        Expect::Lower => "lower",
        Expect::Tie => "a tie",
    }
}

/// The metric as a reader says it.
pub fn metric_name(metric: Metric) -> &'static str {
    match metric {
        Metric::Throughput => "throughput",
        Metric::CpuPerOp => "CPU per operation",
        Metric::SyscallsPerOp => "syscalls per operation",
        Metric::P99 => "p99 latency",
    }
}

fn matches(at: &Map<String, Value>, params: &Map<String, Value>) -> bool {
    at.iter().all(|(key, wanted)| {
        params
            .get(key)
            .is_some_and(|value| value_text(value).eq_ignore_ascii_case(&value_text(wanted)))
    })
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// One claim of the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The file's name without `.toml`.
    pub id: String,
    pub title: String,
    /// The citation: repository and path at a commit, issue thread, paper.
    pub source: String,
    pub sure: Sureness,
    /// The seed write-up it comes from ("000"), for the claims `ringside run` includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// The claim in the source's own words and units.
    pub quote: String,
    /// What the source's figure is: best of N, median, mean, one run.
    pub statistic: String,
    pub setup: SourceSetup,
    /// What differs here beyond kernel, machine and tool, and matters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    pub experiment: Experiment,
    #[serde(default)]
    pub needs: MachineNeeds,
    #[serde(rename = "test")]
    pub tests: Vec<ClaimTest>,
}

impl Claim {
    /// Parses a claim file named `file` (its id must be the file's name), checking what the
    /// types cannot: at least one test, a ratio on the side of 1 its direction claims.
    pub fn parse(file: &str, text: &str) -> anyhow::Result<Claim> {
        let claim: Claim =
            toml::from_str(text).map_err(|error| anyhow::anyhow!("{file}: {error}"))?;
        let stem = file.strip_suffix(".toml").unwrap_or(file);
        anyhow::ensure!(
            claim.id == stem,
            "{file}: its id '{}' is not its file's name",
            claim.id
        );
        anyhow::ensure!(!claim.tests.is_empty(), "{file}: no [[test]]");
        for test in &claim.tests {
            let Some(ratio) = test.ratio else { continue };
            let (low, high) = ratio.bounds();
            let sided = match test.expect {
                Expect::Higher => low > 1.0,
                Expect::Lower => high < 1.0,
                Expect::Tie => low > 0.0,
            };
            anyhow::ensure!(
                low > 0.0 && sided,
                "{file}: test '{}' claims {} but expects {}",
                test.name,
                ratio.text(),
                expect_word(test.expect)
            );
        }
        Ok(claim)
    }

    /// Every claim shipped with this binary, in file order.
    pub fn embedded() -> anyhow::Result<Vec<Claim>> {
        EMBEDDED
            .iter()
            .map(|(file, text)| Claim::parse(file, text))
            .collect()
    }

    /// Whether `ringside run` includes it: a seed's claim.
    pub fn is_seed(&self) -> bool {
        self.seed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::params::{Param, Params};

    const EXAMPLE: &str = r#"
        id = "example"
        title = "io_uring echoes 20% more"
        source = "somewhere/README.md"
        sure = "primary"
        quote = "+20%"
        statistic = "best of 3"
        [setup]
        kernel = "5.7"
        machine = "a laptop"
        tool = "rust_echo_bench"
        shape = "64 B, 50 connections"
        [experiment]
        command = "echo"
        args = ["--engine", "epoll,uring", "--connections", "50"]
        quick = ["--engine", "epoll,uring", "--connections", "50", "--runs", "8"]
        [[test]]
        name = "50 connections"
        figure = "120,420 vs 140,668 msgs/s"
        subject = "uring"
        reference = "epoll"
        metric = "throughput"
        expect = "higher"
        ratio = [1.17, 1.20]
        where = { connections = 50, payload_bytes = 64 }
    "#;

    #[test]
    fn a_claim_file_parses_and_its_test_finds_its_study() {
        let claim = Claim::parse("example.toml", EXAMPLE).unwrap();
        let test = &claim.tests[0];
        assert_eq!(test.ratio.unwrap().bounds(), (1.17, 1.2));
        assert_eq!(claim.experiment.workload(), "echo");
        let params = |connections: u64| {
            let mut params = Map::new();
            params.put(Param::Connections, Value::from(connections));
            params.put(Param::PayloadBytes, Value::from(64));
            params
        };
        assert!(test.matches(&params(50)));
        assert!(!test.matches(&params(1)));
        assert_eq!(test.claimed_text(), "1.17–1.20× (higher)");
    }

    #[test]
    fn a_claim_that_contradicts_itself_or_its_file_is_refused() {
        let error = Claim::parse("other.toml", EXAMPLE).unwrap_err().to_string();
        assert!(error.contains("is not its file's name"), "{error}");
        let lower = EXAMPLE.replace("\"higher\"", "\"lower\"");
        let error = Claim::parse("example.toml", &lower)
            .unwrap_err()
            .to_string();
        assert!(error.contains("expects lower"), "{error}");
        let typo = EXAMPLE.replace("statistic", "statistics");
        assert!(Claim::parse("example.toml", &typo).is_err());
    }

    #[test]
    fn every_shipped_claim_parses() {
        let claims = Claim::embedded().unwrap();
        assert!(claims.len() >= 15, "{} claims", claims.len());
        let mut ids: Vec<&str> = claims.iter().map(|claim| claim.id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), claims.len());
    }
}
