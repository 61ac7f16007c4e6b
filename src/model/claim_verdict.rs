//! A claim judged against one document's analysis: each of its tests reads the study its
//! experiment measured (the study of the claim's workload whose parameters include the test's
//! `where`) and the comparison of its subject and reference **as the analysis decided it**
//! (`Study::decided`): the same interval at the same level, read off in the same zones, that
//! the report prints. Only a pair the analysis does not ask about (two sibling studies, two
//! contenders) is asked by the claim itself, at 1 − α on its own like a section's comparison.
//! The outcome then reads against what the source claimed, on this machine:
//!
//! - a test on a network cell whose load generator set the pace (client-bound or mixed)
//!   **cannot test here**: its throughputs rank the load generator, not the servers, and the
//!   servers' figures per operation were measured at whatever rate it reached, not at one load
//!   (a throughput claim that allows it is judged at equal load instead);
//! - a claimed difference decided in its direction is **reproduced**: "in size" when the
//!   interval meets the claimed ratio, "smaller here" or "larger here" when the whole interval
//!   lies nearer 1 or further from it; with a threshold (`at_least`, `at_most`) only when the
//!   interval clears it; decided the other way it is **reversed**; no difference beyond the
//!   margin, or an interval that rules out the claimed size or threshold, is **not
//!   reproduced**;
//! - a claimed size inside the metric's margin, where the claim states no margin of its own, is
//!   **below what this machine resolves**;
//! - a claimed tie reads against the tie's margin (the claim's, or the metric's equivalence
//!   margin): inside it reproduced, wholly beyond it not reproduced;
//! - otherwise **inconclusive**, with the smallest difference the run could have decided;
//! - an engine that cannot run here makes the test **cannot test here**, with the reason; a
//!   study that did not hold both engines leaves it **not measured**.
//!
//! A size that grows with a fact of the machine (`scale_with = "cpus"`) is scaled to this one
//! first. A verdict from a quick experiment, or from fewer rounds than a full experiment's first
//! look, is **provisional**.

use serde_json::{Map, Value};

use crate::model::claim::{metric_name, percent, ratio_text, Claim, ClaimTest, Expect, Expected};
use crate::model::comparison::{decide, Comparison, Family, LOOKS};
use crate::model::equal_load::{matching, EqualLoad};
use crate::model::figures::Figures;
use crate::model::regime::{CellClass, CellRegime, Regime};
use crate::model::study::{is_network, study_key, Study};
use crate::model::summary::{EngineSummary, Metric};
use crate::row::params::{Param, Params};
use crate::row::Row;
use crate::stats::median;
use crate::stats::rank::{Outcome, MIN_ROUNDS};

pub use crate::row::params::{CLAIM_FORM_PARAM, CLAIM_PARAM};

/// How a reproduced difference compares in size with the claimed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// The interval meets the claimed ratio (or range).
    InSize,
    /// The whole interval lies nearer 1 than the claim.
    SmallerHere,
    /// The whole interval lies further from 1.
    LargerHere,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Decided as claimed; the size when the claim gave a ratio.
    Reproduced(Option<Size>),
    /// No difference beyond the margin where one was claimed, an interval that rules out the
    /// claimed size or threshold, or a difference where a tie was claimed: why.
    NotReproduced(String),
    /// Decided the other way.
    Reversed,
    /// Undecided at the budget: how far it got.
    Inconclusive(String),
    /// The claimed size lies inside the margin this machine's verdicts use: why.
    BelowResolution(String),
    /// The machine lacks what the test needs, or its closed loop measured the load generator:
    /// the reason.
    CannotTest(String),
    /// The document holds no study with both engines: why.
    NotMeasured(String),
}

impl Verdict {
    pub fn text(&self) -> String {
        match self {
            Verdict::Reproduced(None) => "reproduced".into(),
            Verdict::Reproduced(Some(Size::InSize)) => "reproduced, in size".into(),
            Verdict::Reproduced(Some(Size::SmallerHere)) => "reproduced, smaller here".into(),
            Verdict::Reproduced(Some(Size::LargerHere)) => "reproduced, larger here".into(),
            Verdict::NotReproduced(_) => "not reproduced".into(),
            Verdict::Reversed => "reversed".into(),
            Verdict::Inconclusive(_) => "inconclusive".into(),
            Verdict::BelowResolution(_) => "below what this machine resolves".into(),
            Verdict::CannotTest(_) => "cannot test here".into(),
            Verdict::NotMeasured(_) => "not measured".into(),
        }
    }

    /// The short word scripts key on: reproduced, not-reproduced, reversed, inconclusive,
    /// below-resolution, cannot-test, not-measured.
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Reproduced(_) => "reproduced",
            Verdict::NotReproduced(_) => "not-reproduced",
            Verdict::Reversed => "reversed",
            Verdict::Inconclusive(_) => "inconclusive",
            Verdict::BelowResolution(_) => "below-resolution",
            Verdict::CannotTest(_) => "cannot-test",
            Verdict::NotMeasured(_) => "not-measured",
        }
    }

    /// Why, for every verdict that has a reason beside its word.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::NotReproduced(reason)
            | Verdict::Inconclusive(reason)
            | Verdict::BelowResolution(reason)
            | Verdict::CannotTest(reason)
            | Verdict::NotMeasured(reason) => Some(reason),
            Verdict::Reproduced(_) | Verdict::Reversed => None,
        }
    }

    /// Whether the verdict says something about the claim (reproduced, not reproduced,
    /// reversed), as opposed to saying why it could not.
    pub fn decided(&self) -> bool {
        matches!(
            self,
            Verdict::Reproduced(_) | Verdict::NotReproduced(_) | Verdict::Reversed
        )
    }
}

/// One document's analysis, as a claim reads it.
#[derive(Clone, Copy)]
pub struct Evidence<'a> {
    /// The studies, each with the comparisons the analysis decided (`Study::decided`).
    pub studies: &'a [Study],
    /// Each study's regime, by index, as the analysis classified it.
    pub regimes: &'a [Option<CellRegime>],
    /// The document's rows: the attribution rounds the causes read, and the CPUs each engine
    /// kept busy.
    pub rows: &'a [Row],
    /// The CPUs online where the rows were measured (None: the document does not say).
    pub cpus: Option<usize>,
    /// The equal-load comparisons, each decided by the analysis.
    pub loads: &'a [EqualLoad],
}

impl Evidence<'_> {
    /// The CPUs online as the document's environment records them.
    pub fn cpus_of(env: &Value) -> Option<usize> {
        let cpus = env.pointer("/host/cpus_online").and_then(Value::as_u64)?;
        usize::try_from(cpus).ok()
    }
}

/// One side of a test as measured: its summary, what was counted for it (the attribution
/// rounds' io_uring events included) and the CPUs it kept busy.
#[derive(Clone, Debug)]
pub struct Side<'a> {
    pub engine: &'a EngineSummary,
    pub figures: Figures,
    /// The median over its timed runs of CPU seconds per second of window (None without runs).
    pub cpus_used: Option<f64>,
}

/// One test of a claim, judged.
#[derive(Clone, Debug)]
pub struct Judged<'a> {
    pub test: &'a ClaimTest,
    pub verdict: Verdict,
    /// The comparison the verdict rests on, as decided.
    pub comparison: Option<Comparison>,
    /// Whether the claim asked the comparison itself (the analysis asks no question of this
    /// pair): then it was decided at 1 − α on its own.
    pub own_question: bool,
    /// The study the subject was read in (or, not measured, the first that matched).
    pub study: Option<&'a Study>,
    /// The study the reference was read in: `study`, or its sibling (`reference_where`).
    pub reference_study: Option<&'a Study>,
    /// The regime of the subject's cell, where its rows measure one.
    pub regime: Option<CellRegime>,
    /// What the test expects here, scaled to this machine.
    pub expected: Option<Expected>,
    /// Measured in an experiment's quick form, or in fewer rounds than a full experiment's first
    /// look: a first look, not the ledger.
    pub provisional: bool,
    /// The subject and the reference as measured, when both ran.
    pub sides: Option<(Side<'a>, Side<'a>)>,
}

impl<'a> Judged<'a> {
    fn without(test: &'a ClaimTest, verdict: Verdict) -> Judged<'a> {
        Judged {
            test,
            verdict,
            comparison: None,
            own_question: false,
            study: None,
            reference_study: None,
            regime: None,
            expected: None,
            provisional: false,
            sides: None,
        }
    }

    /// The rounds the verdict rests on, when it rests on a comparison.
    pub fn rounds(&self) -> Option<usize> {
        self.comparison.as_ref().map(|c| c.rounds)
    }
}

/// The failure reason a row gives an engine that cannot run here (`Chosen::unavailable`).
pub const UNAVAILABLE: &str = "unavailable here: ";

/// Judges every test of `claim` against one document's analysis. `unmet` is why the machine
/// cannot run the claim's experiment at all (its needs), when it cannot: every test then says so.
pub fn judge<'a>(claim: &'a Claim, evidence: Evidence<'a>, unmet: Option<&str>) -> Vec<Judged<'a>> {
    let workload = claim.experiment.workload();
    (claim.tests.iter())
        .map(|test| match unmet {
            Some(reason) => Judged::without(test, Verdict::CannotTest(reason.to_string())),
            None => judge_test(test, &claim.id, &workload, evidence),
        })
        .collect()
}

/// The test's verdict from the first study that holds both its engines (or, with
/// `reference_where`, the subject's study and the reference's sibling); or why there is none.
fn judge_test<'a>(
    test: &'a ClaimTest,
    claim: &str,
    workload: &str,
    evidence: Evidence<'a>,
) -> Judged<'a> {
    let studies = evidence.studies;
    // Rows `ringside claims run` measured carry their claim's id: another claim's study of the
    // same shape had rounds of its own, which do not pair with these.
    let of_workload = (studies.iter()).filter(|study| {
        study.workload == workload
            && (study.params.get(CLAIM_PARAM)).is_none_or(|id| id.as_str() == Some(claim))
    });
    let candidates: Vec<&Study> = (of_workload.clone())
        .filter(|study| test.matches(&study.params) || test.reference_matches(&study.params))
        .collect();
    let ran = |study: &'a Study, name: &str| {
        find(study, name)
            .filter(|engine| !engine.rounds.is_empty())
            .map(|engine| (study, engine))
    };
    let subject_studies = of_workload.clone().filter(|s| test.matches(&s.params));
    let pair = if test.reference_where.is_empty() {
        subject_studies
            .clone()
            .find_map(|study| Some((ran(study, &test.subject)?, ran(study, &test.reference)?)))
    } else {
        let subject = subject_studies.clone().find_map(|s| ran(s, &test.subject));
        let reference = (of_workload.filter(|study| test.reference_matches(&study.params)))
            .find_map(|study| ran(study, &test.reference));
        subject.zip(reference)
    };
    let Some(((study, subject), (reference_study, reference))) = pair else {
        let mut judged = Judged::without(test, missing(test, workload, &candidates));
        judged.study = candidates.first().copied();
        // A swept experiment runs no closed loop: its equal-load comparison answers.
        if let Some(equal) = at_equal_load(test, workload, &test.at, evidence) {
            judged.expected = test.expected(evidence.cpus);
            if let Some(expected) = judged.expected {
                judge_at_equal_load(&mut judged, &expected, equal);
            }
        }
        return judged;
    };
    let mut judged = Judged::without(test, Verdict::NotMeasured(String::new()));
    judged.study = Some(study);
    judged.reference_study = Some(reference_study);
    judged.provisional = is_quick(study);
    let unverified = [subject, reference]
        .into_iter()
        .find(|engine| !engine.verified);
    if let Some(engine) = unverified {
        judged.verdict = Verdict::NotMeasured(match &engine.failure {
            Some(failure) => format!("{} failed in some run: {failure}", engine.engine),
            None => format!("{} did not verify its data", engine.engine),
        });
        return judged;
    }
    let (comparison, own) = comparison(study, reference_study, subject, reference, test);
    if comparison.rounds == 0 {
        // Both ran, but in no round both measured the figure (one failed or did not verify in
        // each): nothing to judge.
        judged.verdict = Verdict::NotMeasured(format!(
            "no round in which both {} and {} measured it",
            test.subject, test.reference
        ));
        return judged;
    }
    judged.sides = Some((
        side(evidence.rows, study, subject),
        side(evidence.rows, reference_study, reference),
    ));
    judged.regime = regime(evidence, study, subject, reference);
    judged.provisional |= comparison.rounds < LOOKS[0] as usize;
    judged.expected = test.expected(evidence.cpus);
    let (expected, regime) = (judged.expected, judged.regime.clone());
    judged.verdict = match (expected, &regime) {
        (None, _) => Verdict::CannotTest(
            "its size grows with the CPUs, and the document does not say how many this machine \
             has"
            .into(),
        ),
        (Some(expected), Some(regime)) if limited_by_load(study, regime) => {
            let mut limit = format!("the load generator was the limit: {}", regime.text());
            if test.metric != Metric::Throughput {
                limit.push_str(&format!(
                    "; and each server's {} was measured at whatever rate that load reached, \
                     not at one load (an equal-load sweep, `--sweep`, compares the servers at one \
                     offered rate)",
                    metric_name(test.metric)
                ));
            }
            match (
                test.at_equal_load,
                at_equal_load(test, workload, &study.params, evidence),
            ) {
                (true, Some(equal)) => {
                    judge_at_equal_load(&mut judged, &expected, equal);
                    return judged;
                }
                (true, None) => Verdict::CannotTest(format!(
                    "{limit}; and no equal-load comparison of {} and {} ran here",
                    test.subject, test.reference
                )),
                (false, _) => Verdict::CannotTest(limit),
            }
        }
        (Some(expected), _) => verdict(test, &expected, &comparison),
    };
    judged.comparison = Some(comparison);
    judged.own_question = own;
    judged
}

/// The subject over the reference on the test's metric as the analysis decided it, or, for a
/// pair it asked nothing about, asked here and decided on its own (the second value true).
fn comparison(
    study: &Study,
    reference_study: &Study,
    subject: &EngineSummary,
    reference: &EngineSummary,
    test: &ClaimTest,
) -> (Comparison, bool) {
    let same = std::ptr::eq(study, reference_study);
    let decided = same.then(|| study.decided(&subject.engine, &reference.engine, test.metric));
    if let Some(comparison) = decided.flatten() {
        return (comparison, false);
    }
    let mut own = [Comparison::paired(
        subject,
        reference,
        test.metric,
        &study.judging,
    )];
    decide(&mut own, Family::Each);
    let [comparison] = own;
    (comparison, true)
}

/// Whether the rows came from an experiment's quick form.
fn is_quick(study: &Study) -> bool {
    study.params.get(CLAIM_FORM_PARAM).and_then(Value::as_str) == Some("quick")
}

/// The regime of the subject's cell: the analysis's, or, where its line holds neither engine
/// (two contenders), the pair's own runs'.
fn regime(
    evidence: Evidence,
    study: &Study,
    subject: &EngineSummary,
    reference: &EngineSummary,
) -> Option<CellRegime> {
    let index = evidence.studies.iter().position(|s| std::ptr::eq(s, study));
    let analysed = index.and_then(|i| evidence.regimes.get(i).cloned().flatten());
    analysed.or_else(|| {
        let runs = |engine: &EngineSummary| -> Vec<Regime> {
            engine
                .rounds
                .iter()
                .filter_map(|round| round.regime)
                .collect()
        };
        CellRegime::of(&[runs(subject), runs(reference)])
    })
}

/// For a test that allows it, the analysis's equal-load comparison of its subject and
/// reference at the connections and payload of `params` (server CPU per operation at one
/// offered rate), turned round where the analysis compared them the other way.
fn at_equal_load(
    test: &ClaimTest,
    workload: &str,
    params: &Map<String, Value>,
    evidence: Evidence,
) -> Option<Comparison> {
    if !test.at_equal_load {
        return None;
    }
    let connections = params.param(Param::Connections).and_then(Value::as_u64);
    let payload = params.param(Param::PayloadBytes).and_then(Value::as_u64);
    let load = matching(evidence.loads, workload, connections, payload)?;
    let found = load.decided_as(&test.subject, &test.reference).cloned();
    found.or_else(|| {
        load.decided_as(&test.reference, &test.subject)
            .map(Comparison::inverse)
    })
}

/// Judges the test on an equal-load comparison: server CPU per operation at one offered rate,
/// against the claimed ratio turned round.
fn judge_at_equal_load(judged: &mut Judged, expected: &Expected, equal: Comparison) {
    judged.provisional |= equal.rounds < LOOKS[0] as usize;
    judged.verdict = verdict(judged.test, &expected.turned_round(), &equal);
    judged.comparison = Some(equal);
}

/// Whether the test's figure measured the load generator: any figure of a closed-loop network
/// cell whose load set the pace in most runs, or in some runs of some engines. Its throughputs
/// rank the load generator; its servers ran below their limit at whatever rate the load reached
/// in each run, so their CPU, syscalls and tail per operation compare two loads, not two
/// servers (a CPU test judged so on the same claim file went "reproduced" 1.12× [1.05–1.20],
/// then "not reproduced" 1.05× [0.96–1.15], in two runs back to back).
fn limited_by_load(study: &Study, regime: &CellRegime) -> bool {
    is_network(&study.workload) && matches!(regime.class, CellClass::ClientBound | CellClass::Mixed)
}

/// `engine` of `study` as the causes read it: the figures of its timed runs, with the io_uring
/// events its attribution rounds counted where the timed runs counted none (per operation of
/// the attribution rounds, times the timed runs' operations, so per-operation figures hold),
/// and the CPUs its timed runs kept busy.
fn side<'a>(rows: &[Row], study: &Study, engine: &'a EngineSummary) -> Side<'a> {
    let of_engine = |attribution: bool| -> Vec<&Row> {
        (rows.iter())
            .filter(|row| row.engine == engine.engine && row.is_attribution() == attribution)
            .filter(|row| row.failure.is_none() && row.workload == study.workload)
            .filter(|row| study_key(row).1 == study.params)
            .collect()
    };
    let mut figures = engine.figures.clone();
    let attribution = of_engine(true);
    if !attribution.is_empty() {
        let counted = Figures::of(&attribution);
        let scale = match counted.ops > 0.0 {
            true => figures.ops / counted.ops,
            false => 0.0,
        };
        let fields: [fn(&mut Figures) -> &mut Option<f64>; 8] = [
            |f| &mut f.sqes_submitted,
            |f| &mut f.cqes_posted,
            |f| &mut f.iowq_punts,
            |f| &mut f.polls_armed,
            |f| &mut f.task_work_runs,
            |f| &mut f.local_work_runs,
            |f| &mut f.cqe_overflows,
            |f| &mut f.short_writes,
        ];
        let mut counted = counted;
        for field in fields {
            if field(&mut figures).is_none() {
                *field(&mut figures) = field(&mut counted).map(|count| count * scale);
            }
        }
    }
    let busy: Vec<f64> = (of_engine(false).iter())
        .filter(|row| row.seconds > 0.0)
        .map(|row| row.cpu_s() / row.seconds)
        .collect();
    Side {
        engine,
        figures,
        cpus_used: (!busy.is_empty()).then(|| median(&busy)),
    }
}

/// Why no study holds both engines: one of them could not run here (its rows say so), it
/// failed, or the document has no such study.
fn missing(test: &ClaimTest, workload: &str, candidates: &[&Study]) -> Verdict {
    for name in [&test.subject, &test.reference] {
        let failure = (candidates.iter())
            .filter_map(|study| find(study, name))
            .find_map(|engine| engine.failure.clone());
        if let Some(failure) = failure {
            return match failure.strip_prefix(UNAVAILABLE) {
                Some(reason) => Verdict::CannotTest(format!("{name}: {reason}")),
                None => Verdict::NotMeasured(format!("{name} failed: {failure}")),
            };
        }
    }
    let at = (test.at.iter())
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(", ");
    let place = if at.is_empty() {
        workload.to_string()
    } else {
        format!("{workload} at {at}")
    };
    Verdict::NotMeasured(format!(
        "no study of {place} measured both {} and {}",
        test.subject, test.reference
    ))
}

/// An engine or contender of the study by name.
fn find<'s>(study: &'s Study, name: &str) -> Option<&'s EngineSummary> {
    (study.engines.iter())
        .chain(&study.contenders)
        .find(|engine| engine.engine == name)
}

/// The verdict of a decided comparison against what the test expects here.
pub fn verdict(test: &ClaimTest, expected: &Expected, comparison: &Comparison) -> Verdict {
    let (Some(low), Some(high)) = (comparison.low, comparison.high) else {
        return Verdict::Inconclusive(format!("no interval at {} rounds", comparison.rounds));
    };
    if comparison.rounds < MIN_ROUNDS {
        return Verdict::Inconclusive(format!(
            "{} rounds, fewer than the {MIN_ROUNDS} a decision needs",
            comparison.rounds
        ));
    }
    let detectable = (comparison.detectable)
        .map(|share| {
            format!(
                ": this run could decide differences beyond {}",
                percent(share)
            )
        })
        .unwrap_or_default();
    if expected.expect == Expect::Tie {
        let tie = test.tie_margin();
        return match Outcome::of_interval(low, high, tie, tie) {
            Outcome::Equivalent => Verdict::Reproduced(None),
            Outcome::Different => Verdict::NotReproduced(format!(
                "the interval lies beyond the claimed tie's {}",
                percent(tie)
            )),
            _ => Verdict::Inconclusive(format!(
                "its interval straddles the claimed tie's {}{detectable}",
                percent(tie)
            )),
        };
    }
    let margin = test.difference_margin();
    if let (None, Some((claimed_low, claimed_high))) = (test.margin, expected.size) {
        let inside = |ratio: f64| ratio.ln().abs() < margin.ln_1p();
        if inside(claimed_low) && inside(claimed_high) {
            return Verdict::BelowResolution(format!(
                "the claimed {} lies inside the {} margin this machine's verdicts use{detectable}; \
                 a claim file may state its own margin (margin = 0.01)",
                size_text(claimed_low, claimed_high),
                percent(margin)
            ));
        }
    }
    let outcome = match test.margin {
        None => comparison.outcome,
        Some(own) => {
            let within = test.metric.equivalence_margin().max(own);
            Outcome::of_interval(low, high, own, within)
        }
    };
    let higher = expected.expect == Expect::Higher;
    // Nearer 1 than the claim on the claimed side: what rules the claim out.
    let short_of = |bound: f64| match higher {
        true => high < bound,
        false => low > bound,
    };
    let threshold = match higher {
        true => expected.at_least.map(|bound| ("at least", bound)),
        false => expected.at_most.map(|bound| ("at most", bound)),
    };
    let nearest_claimed = match higher {
        true => expected.size.map(|(low, _)| low),
        false => expected.size.map(|(_, high)| high),
    };
    match outcome {
        Outcome::Different if (comparison.ratio > 1.0) != higher => Verdict::Reversed,
        Outcome::Different => match threshold {
            Some((word, bound)) if short_of(bound) => Verdict::NotReproduced(format!(
                "the interval lies short of the claimed {word} {}×",
                ratio_text(bound)
            )),
            Some((word, bound)) if higher && low < bound || !higher && high > bound => {
                Verdict::Inconclusive(format!(
                    "its interval straddles the claimed {word} {}×",
                    ratio_text(bound)
                ))
            }
            _ => Verdict::Reproduced(size(expected, low, high)),
        },
        Outcome::Equivalent => {
            Verdict::NotReproduced(format!("no difference beyond {}", percent(margin)))
        }
        Outcome::Within | Outcome::Undecided => {
            let ruled_out = threshold
                .or(nearest_claimed.map(|bound| ("", bound)))
                .filter(|(_, bound)| short_of(*bound));
            match ruled_out {
                Some((word, bound)) => {
                    let word = if word.is_empty() {
                        String::new()
                    } else {
                        format!("{word} ")
                    };
                    Verdict::NotReproduced(format!(
                        "the interval rules out the claimed {word}{}×",
                        ratio_text(bound)
                    ))
                }
                None => Verdict::Inconclusive(format!(
                    "its interval straddles the {} margin{detectable}",
                    percent(margin)
                )),
            }
        }
    }
}

/// "1.02×", "1.01–1.03×".
fn size_text(low: f64, high: f64) -> String {
    match low == high {
        true => format!("{}×", ratio_text(low)),
        false => format!("{}–{}×", ratio_text(low), ratio_text(high)),
    }
}

/// Where the decided interval lies against the claimed size, measured as distance from 1.
fn size(expected: &Expected, low: f64, high: f64) -> Option<Size> {
    let (claimed_low, claimed_high) = expected.size?;
    let (below, above) = (high < claimed_low, low > claimed_high);
    Some(match (expected.expect, below, above) {
        (_, false, false) => Size::InSize,
        (Expect::Lower, true, _) | (Expect::Higher, _, true) => Size::LargerHere,
        _ => Size::SmallerHere,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::claim::Claimed;
    use crate::model::study::{studies, tests::paired_rows};
    use crate::model::summary::Metric;

    fn test(expect: Expect, ratio: Option<Claimed>) -> ClaimTest {
        ClaimTest {
            name: "t".into(),
            figure: "f".into(),
            subject: "uring-ring".into(),
            reference: "blocking".into(),
            metric: Metric::Throughput,
            expect,
            ratio,
            at: Default::default(),
            reference_where: Default::default(),
            sure: None,
            margin: None,
            at_least: None,
            at_most: None,
            scale_with: None,
            scale_from: None,
            at_equal_load: false,
        }
    }

    fn claim(tests: Vec<ClaimTest>) -> Claim {
        let text = crate::model::claim::EMBEDDED[0].1;
        let mut claim = Claim::parse(crate::model::claim::EMBEDDED[0].0, text).unwrap();
        claim.experiment.command = "fs write".into();
        claim.tests = tests;
        claim
    }

    /// Every test's verdict against studies of `rows`, the comparisons decided as the analysis
    /// leaves them undecided here (no plan ran): each asked by the claim.
    fn verdicts(rows: &[Row], tests: Vec<ClaimTest>, cpus: Option<usize>) -> Vec<Verdict> {
        let measured = studies(rows);
        let claim = claim(tests);
        let evidence = Evidence {
            studies: &measured,
            regimes: &[],
            rows,
            cpus,
            loads: &[],
        };
        (judge(&claim, evidence, None).into_iter())
            .map(|one| one.verdict)
            .collect()
    }

    /// Goal: each way a measured ratio can fall against a claim gets its verdict. Method: 12
    /// paired rounds of uring-ring at 2× blocking (and at 1.0×), judged against claims of 2×,
    /// 1.3×, 3×, a tie, the reverse direction, thresholds and a size below the margin.
    #[test]
    fn each_outcome_reads_against_the_claim() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)],
            12,
        );
        let one = |ratio| Some(Claimed::One(ratio));
        let at_least = |bound| ClaimTest {
            at_least: Some(bound),
            ..test(Expect::Higher, None)
        };
        let found = verdicts(
            &rows,
            vec![
                test(Expect::Higher, one(2.0)),
                test(Expect::Higher, one(1.3)),
                test(Expect::Higher, one(3.0)),
                test(Expect::Higher, None),
                test(Expect::Lower, one(0.5)),
                test(Expect::Tie, None),
                at_least(1.5),
                at_least(2.5),
            ],
            None,
        );
        assert_eq!(found[0], Verdict::Reproduced(Some(Size::InSize)));
        assert_eq!(found[1], Verdict::Reproduced(Some(Size::LargerHere)));
        assert_eq!(found[2], Verdict::Reproduced(Some(Size::SmallerHere)));
        assert_eq!(found[3], Verdict::Reproduced(None));
        assert_eq!(found[4], Verdict::Reversed);
        assert_eq!(found[5].key(), "not-reproduced");
        assert_eq!(found[6], Verdict::Reproduced(None));
        assert_eq!(found[7].key(), "not-reproduced", "{:?}", found[7]);
        let tie = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 1000.0, 10)],
            12,
        );
        let found = verdicts(
            &tie,
            vec![
                test(Expect::Tie, None),
                test(Expect::Higher, None),
                test(Expect::Higher, one(1.02)),
                test(Expect::Higher, one(1.24)),
            ],
            None,
        );
        assert_eq!(found[0], Verdict::Reproduced(None));
        assert_eq!(found[1].key(), "not-reproduced");
        assert_eq!(found[2].key(), "below-resolution", "{:?}", found[2]);
        assert_eq!(found[3].key(), "not-reproduced");
    }

    /// Goal: a size that grows with the CPUs is judged at this machine's count. Method: a claim
    /// of 4× at 8 CPUs, read on 2 CPUs (1×: below the margin), on 4 (2×: in size against the
    /// measured 2×) and on a machine that does not say.
    #[test]
    fn a_size_that_grows_with_the_cpus_is_scaled_to_this_machine() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)],
            12,
        );
        let scaled = ClaimTest {
            scale_with: Some(crate::model::claim::ScaleWith::Cpus),
            scale_from: Some(8),
            ..test(Expect::Higher, Some(Claimed::One(4.0)))
        };
        let on = |cpus| verdicts(&rows, vec![scaled.clone()], cpus).remove(0);
        assert_eq!(on(Some(4)), Verdict::Reproduced(Some(Size::InSize)));
        assert_eq!(on(Some(16)), Verdict::Reproduced(Some(Size::SmallerHere)));
        assert_eq!(on(Some(2)).key(), "below-resolution");
        assert_eq!(on(None).key(), "cannot-test");
    }

    #[test]
    fn too_few_rounds_are_inconclusive_and_missing_engines_say_why() {
        let rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)], 3);
        let measured = studies(&rows);
        let mut other = test(Expect::Higher, None);
        other.subject = "uring-fixed".into();
        let claim = claim(vec![test(Expect::Higher, None), other]);
        let evidence = Evidence {
            studies: &measured,
            regimes: &[],
            rows: &rows,
            cpus: None,
            loads: &[],
        };
        let judged = judge(&claim, evidence, None);
        assert_eq!(judged[0].verdict.key(), "inconclusive");
        assert!(judged[0].provisional, "3 rounds are a first look");
        let reason = judged[1].verdict.reason().unwrap();
        assert!(
            reason.contains("measured both uring-fixed and blocking"),
            "{reason}"
        );
        let unmet = judge(&claim, evidence, Some("no poll queues"));
        assert_eq!(
            unmet[0].verdict,
            Verdict::CannotTest("no poll queues".into())
        );
    }
}
