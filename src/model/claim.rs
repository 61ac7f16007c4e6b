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

use crate::model::summary::Metric;
use crate::row::params::{Param, CLAIM_FORM_PARAM, CLAIM_PARAM};

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
    /// The source does not state this comparison: it was worked out from the source's figures
    /// (a CPU share from a rate, a ratio from two tables). A test may say so of itself.
    Inferred,
}

impl Sureness {
    pub fn text(self) -> &'static str {
        match self {
            Sureness::Primary => "read in the primary source",
            Sureness::Secondary => "read second-hand: confirm it before quoting it as claimed",
            Sureness::DirectionOnly => "direction only: the figure itself was not retrieved",
            Sureness::Inferred => {
                "inferred from the source's figures: the source does not state it"
            }
        }
    }

    /// The word claims.json carries: primary, secondary, direction-only, inferred.
    pub fn key(self) -> &'static str {
        match self {
            Sureness::Primary => "primary",
            Sureness::Secondary => "secondary",
            Sureness::DirectionOnly => "direction-only",
            Sureness::Inferred => "inferred",
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
    /// How sure this test's figure is, where it differs from the claim's: a comparison worked
    /// out from the source's figures rather than stated by it is `inferred`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sure: Option<Sureness>,
    /// The smallest relative difference the claim is about (0.02: 2%), for a claimed size
    /// inside the metric's own margin; for a tie, how near counts as tied. None: the metric's
    /// margin (a tie: its equivalence margin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    /// A threshold instead of a size: subject ÷ reference at least this (with `higher`)…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    /// …or at most this (with `lower`): "a collapse to under half".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
    /// A fact of the machine the claimed size grows with: "cpus" (threads that each keep a CPU
    /// busy against one ring), from `scale_from` on the source's machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_with: Option<ScaleWith>,
    /// What `scale_with` was where the source measured (its threads or CPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_from: Option<u32>,
    /// A throughput test whose closed loop measured the load generator is judged at equal load
    /// instead: the subject's server CPU per operation against the reference's at the same
    /// offered rate, the claimed ratio turned round (1.24× the requests/s is 0.81× the CPU per
    /// request). The experiment must offer rates (`--sweep` or `--rate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_equal_load: bool,
}

/// A fact of the machine a claimed size grows with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleWith {
    /// The CPUs online: the claimed size times min(CPUs here, `scale_from`) ÷ `scale_from`.
    Cpus,
}

/// What a test expects of subject ÷ reference on this machine, its size scaled to the machine
/// where the claim says it grows with one of its facts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expected {
    pub expect: Expect,
    /// The claimed size's bounds, when the source gave one.
    pub size: Option<(f64, f64)>,
    pub at_least: Option<f64>,
    pub at_most: Option<f64>,
    /// The factor the claimed figures were scaled by (1: none).
    pub scaled: f64,
}

impl Expected {
    /// The same expectation of the reciprocal ratio: a claim on throughput read as one on the
    /// cost per operation at equal load.
    pub fn turned_round(self) -> Expected {
        let expect = match self.expect {
            Expect::Higher => Expect::Lower,
            Expect::Lower => Expect::Higher,
            Expect::Tie => Expect::Tie,
        };
        Expected {
            expect,
            size: self.size.map(|(low, high)| (high.recip(), low.recip())),
            at_least: self.at_most.map(f64::recip),
            at_most: self.at_least.map(f64::recip),
            scaled: self.scaled,
        }
    }
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

    /// What the source claimed, in ratio terms: "1.17–1.20× (higher)", "at least 2.00×",
    /// "a tie (within 10%)", "higher (direction only)".
    pub fn claimed_text(&self) -> String {
        let mut text = match (self.expect, self.ratio) {
            (Expect::Tie, _) => format!("a tie (within {})", percent(self.tie_margin())),
            (expect, Some(ratio)) => format!("{} ({})", ratio.text(), expect_word(expect)),
            (_, None) if self.at_least.is_some() || self.at_most.is_some() => String::new(),
            (expect, None) => format!("{} (direction only)", expect_word(expect)),
        };
        for (word, bound) in [("at least", self.at_least), ("at most", self.at_most)] {
            if let Some(bound) = bound {
                let sep = if text.is_empty() { "" } else { ", " };
                text += &format!("{sep}{word} {}×", ratio_text(bound));
            }
        }
        if let (Some(ScaleWith::Cpus), Some(from)) = (self.scale_with, self.scale_from) {
            text += &format!(" at {from} CPUs");
        }
        if let (Some(margin), false) = (self.margin, self.expect == Expect::Tie) {
            text += &format!(", judged beyond {}", percent(margin));
        }
        text
    }

    /// The smallest difference a claimed difference is judged beyond: the claim's margin, or
    /// the metric's.
    pub fn difference_margin(&self) -> f64 {
        self.margin.unwrap_or(self.metric.margin())
    }

    /// How near 1 a claimed tie may be: the claim's margin, or the metric's equivalence margin.
    pub fn tie_margin(&self) -> f64 {
        self.margin.unwrap_or(self.metric.equivalence_margin())
    }

    /// What the test expects on a machine with `cpus` CPUs online (None: unknown): its size
    /// and thresholds scaled where it grows with the CPUs, its direction read off the scaled
    /// size. None when the size scales and the CPUs are unknown.
    pub fn expected(&self, cpus: Option<usize>) -> Option<Expected> {
        let scaled = match (self.scale_with, self.scale_from) {
            (Some(ScaleWith::Cpus), Some(from)) => {
                let here = u32::try_from(cpus?).unwrap_or(u32::MAX).min(from);
                f64::from(here) / f64::from(from)
            }
            _ => 1.0,
        };
        let size = (self.ratio).map(|ratio| {
            let (low, high) = ratio.bounds();
            (low * scaled, high * scaled)
        });
        // Scaled to a machine with fewer CPUs, a claimed gain can become a loss.
        let expect = match (self.expect, size) {
            (Expect::Higher, Some((_, high))) if high < 1.0 => Expect::Lower,
            (Expect::Lower, Some((low, _))) if low > 1.0 => Expect::Higher,
            (expect, _) => expect,
        };
        Some(Expected {
            expect,
            size,
            at_least: self.at_least.map(|bound| bound * scaled),
            at_most: self.at_most.map(|bound| bound * scaled),
            scaled,
        })
    }

    /// The test's sureness: its own, or its claim's.
    pub fn sureness(&self, claim: &Claim) -> Sureness {
        self.sure.unwrap_or(claim.sure)
    }

    /// Checks what the types cannot: a ratio on the side of 1 its direction claims, thresholds
    /// that go with the direction, a margin between 0 and 50%, a scale with its source's count,
    /// and `where` keys that are parameters ringside's rows carry.
    fn check(&self) -> Result<(), String> {
        if let Some(ratio) = self.ratio {
            let (low, high) = ratio.bounds();
            let sided = match self.expect {
                Expect::Higher => low > 1.0,
                Expect::Lower => high < 1.0,
                Expect::Tie => low > 0.0,
            };
            if !(low > 0.0 && high.is_finite() && sided) {
                return Err(format!(
                    "claims {} but expects {}",
                    ratio.text(),
                    expect_word(self.expect)
                ));
            }
        }
        if let Some(bound) = self.at_least {
            if !(self.expect == Expect::Higher && bound >= 1.0 && bound.is_finite()) {
                return Err(format!(
                    "says at_least = {bound}, which goes with expect = \"higher\" and a bound of 1 or more"
                ));
            }
        }
        if let Some(bound) = self.at_most {
            if !(self.expect == Expect::Lower && bound > 0.0 && bound <= 1.0) {
                return Err(format!(
                    "says at_most = {bound}, which goes with expect = \"lower\" and a bound above 0 and at most 1"
                ));
            }
        }
        if self.at_equal_load && self.metric != Metric::Throughput {
            return Err("says at_equal_load, which judges a throughput test at equal load: its metric is not throughput".into());
        }
        // The analysis compares each engine at equal load with the baseline only.
        let baseline = crate::model::equal_load::BASELINE;
        if self.at_equal_load && self.subject != baseline && self.reference != baseline {
            return Err(format!(
                "says at_equal_load, but the analysis compares engines at equal load with \
                 {baseline} only: neither {} nor {} is",
                self.subject, self.reference
            ));
        }
        if let Some(margin) = self.margin {
            if !(margin > 0.0 && margin <= 0.5) {
                return Err(format!(
                    "says margin = {margin}: a margin is a share above 0 and at most 0.5 (0.02 is 2%)"
                ));
            }
        }
        match (self.scale_with, self.scale_from) {
            (Some(_), Some(0)) | (Some(_), None) => {
                return Err("says scale_with without scale_from (the count on the source's machine, at least 1)".into())
            }
            (None, Some(_)) => return Err("says scale_from without scale_with".into()),
            (Some(_), Some(_)) if self.ratio.is_none() && self.at_least.is_none() && self.at_most.is_none() => {
                return Err("says scale_with but claims no size to scale (ratio, at_least or at_most)".into())
            }
            _ => {}
        }
        for (field, at) in [
            ("where", &self.at),
            ("reference_where", &self.reference_where),
        ] {
            for key in at.keys() {
                if Param::of_key(key).is_none()
                    && ![CLAIM_PARAM, CLAIM_FORM_PARAM].contains(&key.as_str())
                {
                    let near = nearest_param(key)
                        .map(|near| format!(" (did you mean '{near}'?)"))
                        .unwrap_or_default();
                    return Err(format!(
                        "{field} names '{key}', which is no parameter ringside's rows carry{near}; \
                         docs/rows.md lists them"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The parameter key nearest `key` in spelling, when one is near (two edits or fewer).
fn nearest_param(key: &str) -> Option<&'static str> {
    (Param::ALL.iter())
        .map(|param| (edits(key, param.key()), param.key()))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance: the insertions, deletions and substitutions from `a` to `b`.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// "3%", "2.5%".
pub fn percent(share: f64) -> String {
    let value = share * 100.0;
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
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
    /// The file's text, as read: what a results document keeps of the claims it measured, and
    /// what tells two versions of one claim apart (`version`).
    #[serde(skip)]
    pub text: String,
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
            test.check()
                .map_err(|why| anyhow::anyhow!("{file}: test '{}' {why}", test.name))?;
        }
        let mut claim = claim;
        claim.text = text.to_string();
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

    /// Its file's version: the first 8 hex digits of the text's FNV-1a hash, the same for the
    /// same text on any machine and different when any byte of the file changed.
    pub fn version(&self) -> String {
        let hash = (self.text.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{:08x}", hash >> 32)
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

    /// Goal: `at_equal_load` goes with a throughput test only, and a throughput claim turned
    /// round reads as one on the cost per operation. Method: the example's test with it, then
    /// with a CPU metric; its expectation of 1.17–1.20× higher turned round.
    #[test]
    fn a_throughput_claim_turns_round_at_equal_load() {
        let equal = EXAMPLE.replace("ratio = [", "at_equal_load = true\n        ratio = [");
        let claim = Claim::parse("example.toml", &equal).unwrap();
        assert!(claim.tests[0].at_equal_load);
        let cpu = equal.replace("\"throughput\"", "\"cpu_per_op\"");
        let cpu = cpu
            .replace("\"higher\"", "\"lower\"")
            .replace("[1.17, 1.20]", "0.8");
        let error = Claim::parse("example.toml", &cpu).unwrap_err().to_string();
        assert!(error.contains("its metric is not throughput"), "{error}");
        let pair = equal
            .replace("\"uring\"", "\"uring-defer\"")
            .replace("\"epoll\"", "\"uring\"");
        let error = Claim::parse("example.toml", &pair).unwrap_err().to_string();
        assert!(error.contains("with epoll only"), "{error}");
        let turned = claim.tests[0].expected(None).unwrap().turned_round();
        assert_eq!(turned.expect, Expect::Lower);
        let (low, high) = turned.size.unwrap();
        assert!((low - 1.0 / 1.2).abs() < 1e-12 && (high - 1.0 / 1.17).abs() < 1e-12);
        let at_least = Expected {
            at_least: Some(2.0),
            ..claim.tests[0].expected(None).unwrap()
        };
        assert_eq!(at_least.turned_round().at_most, Some(0.5));
        assert_eq!(turned.turned_round().expect, Expect::Higher);
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
