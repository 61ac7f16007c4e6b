//! A claim judged on this machine: each of its tests reads the study its experiment measured
//! (the study of the claim's workload whose parameters include the test's `where`), compares its
//! subject with its reference paired round by round (`Comparison::paired`), and the claim's
//! tests are decided together as one confirmatory family (Holm): a claim is one published
//! question, so its verdicts hold their error whatever else ran beside it. The outcome then
//! reads against what the source claimed:
//!
//! - a claimed difference decided in its direction is **reproduced**: "in size" when the
//!   interval meets the claimed ratio, "smaller here" or "larger here" when the whole interval
//!   lies nearer 1 or further from it; decided the other way it is **reversed**, found
//!   equivalent it is **not reproduced**;
//! - a claimed tie found equivalent is reproduced, found different not reproduced;
//! - undecided at the budget it is **inconclusive** (the rounds and interval say how far);
//! - an engine that cannot run here makes the test **cannot test here**, with the reason; a
//!   study that did not hold both engines leaves it **not measured**.

use crate::model::claim::{Claim, ClaimTest, Expect};
use crate::model::comparison::{decide, Comparison, Family};
use crate::model::study::{EngineSummary, Study};
use crate::stats::rank::Outcome;

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
    /// Equivalent where a difference was claimed, or different where a tie was.
    NotReproduced,
    /// Decided the other way.
    Reversed,
    /// Undecided at the budget.
    Inconclusive,
    /// The machine lacks what the test needs: the reason.
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
            Verdict::NotReproduced => "not reproduced".into(),
            Verdict::Reversed => "reversed".into(),
            Verdict::Inconclusive => "inconclusive".into(),
            Verdict::CannotTest(_) => "cannot test here".into(),
            Verdict::NotMeasured(_) => "not measured".into(),
        }
    }

    /// The short word scripts key on: reproduced, not-reproduced, reversed, inconclusive,
    /// cannot-test, not-measured.
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Reproduced(_) => "reproduced",
            Verdict::NotReproduced => "not-reproduced",
            Verdict::Reversed => "reversed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::CannotTest(_) => "cannot-test",
            Verdict::NotMeasured(_) => "not-measured",
        }
    }

    /// Why it could not be measured, for the two verdicts without a comparison.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::CannotTest(reason) | Verdict::NotMeasured(reason) => Some(reason),
            _ => None,
        }
    }
}

/// One test of a claim, judged.
#[derive(Clone, Debug)]
pub struct Judged<'a> {
    pub test: &'a ClaimTest,
    pub verdict: Verdict,
    /// The comparison the verdict rests on, decided with the claim's other tests.
    pub comparison: Option<Comparison>,
    /// The study the subject was read in (or, not measured, the first that matched).
    pub study: Option<&'a Study>,
    /// The study the reference was read in: `study`, or its sibling (`reference_where`).
    pub reference_study: Option<&'a Study>,
}

impl Judged<'_> {
    /// The subject's and reference's summaries in the study, when both ran.
    pub fn engines(&self) -> Option<(&EngineSummary, &EngineSummary)> {
        Some((
            find(self.study?, &self.test.subject)?,
            find(self.reference_study?, &self.test.reference)?,
        ))
    }
}

/// The parameter `ringside claims run` adds to the rows of a claim's experiment: its id.
pub const CLAIM_PARAM: &str = "claim";

/// The failure reason a row gives an engine that cannot run here (`Chosen::unavailable`).
pub const UNAVAILABLE: &str = "unavailable here: ";

/// Judges every test of `claim` against `studies` (one document's), deciding the tests'
/// comparisons as one family. `unmet` is why the machine cannot run the claim's experiment at
/// all (its needs), when it cannot: every test then says so.
pub fn judge<'a>(claim: &'a Claim, studies: &'a [Study], unmet: Option<&str>) -> Vec<Judged<'a>> {
    let workload = claim.experiment.workload();
    let mut judged: Vec<Judged<'a>> = (claim.tests.iter())
        .map(|test| match unmet {
            Some(reason) => Judged {
                test,
                verdict: Verdict::CannotTest(reason.to_string()),
                comparison: None,
                study: None,
                reference_study: None,
            },
            None => measured(test, &claim.id, &workload, studies),
        })
        .collect();
    let mut comparisons: Vec<Comparison> = (judged.iter())
        .filter_map(|one| one.comparison.clone())
        .collect();
    decide(&mut comparisons, Family::Simultaneous);
    let mut decided = comparisons.into_iter();
    for one in judged.iter_mut().filter(|one| one.comparison.is_some()) {
        let comparison = decided.next().expect("one decision per comparison");
        one.verdict = verdict(one.test, &comparison);
        one.comparison = Some(comparison);
    }
    judged
}

/// The test's comparison, undecided, in the first study that holds both its engines (or, with
/// `reference_where`, the subject's study and the reference's sibling); or why there is none.
fn measured<'a>(
    test: &'a ClaimTest,
    claim: &str,
    workload: &str,
    studies: &'a [Study],
) -> Judged<'a> {
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
    let pair = if test.reference_where.is_empty() {
        (of_workload
            .clone()
            .filter(|study| test.matches(&study.params)))
        .find_map(|study| Some((ran(study, &test.subject)?, ran(study, &test.reference)?)))
    } else {
        let subject = (of_workload
            .clone()
            .filter(|study| test.matches(&study.params)))
        .find_map(|study| ran(study, &test.subject));
        let reference = (of_workload.filter(|study| test.reference_matches(&study.params)))
            .find_map(|study| ran(study, &test.reference));
        subject.zip(reference)
    };
    let Some(((study, subject), (reference_study, reference))) = pair else {
        return Judged {
            test,
            verdict: missing(test, workload, &candidates),
            comparison: None,
            study: candidates.first().copied(),
            reference_study: None,
        };
    };
    let unverified = [subject, reference]
        .into_iter()
        .find(|engine| !engine.verified);
    if let Some(engine) = unverified {
        let why = match &engine.failure {
            Some(failure) => format!("{} failed in some run: {failure}", engine.engine),
            None => format!("{} did not verify its data", engine.engine),
        };
        return Judged {
            test,
            verdict: Verdict::NotMeasured(why),
            comparison: None,
            study: Some(study),
            reference_study: Some(reference_study),
        };
    }
    let comparison = Comparison::paired(subject, reference, test.metric, &study.judging);
    if comparison.rounds == 0 {
        // Both ran, but in no round both measured the figure (one failed or did not verify in
        // each): nothing to judge.
        return Judged {
            test,
            verdict: Verdict::NotMeasured(format!(
                "no round in which both {} and {} measured it",
                test.subject, test.reference
            )),
            comparison: None,
            study: Some(study),
            reference_study: Some(reference_study),
        };
    }
    Judged {
        test,
        verdict: Verdict::Inconclusive,
        comparison: Some(comparison),
        study: Some(study),
        reference_study: Some(reference_study),
    }
}

/// Why no study holds both engines: one of them could not run here (its rows say so), it
/// failed, or the document has no such study.
fn missing(test: &ClaimTest, workload: &str, candidates: &[&Study]) -> Verdict {
    for name in [&test.subject, &test.reference] {
        let failure = (candidates.iter())
            .filter_map(|study| find(study, name))
            .find_map(|engine| engine.failure.clone());
        match failure {
            Some(failure) => {
                return match failure.strip_prefix(UNAVAILABLE) {
                    Some(reason) => Verdict::CannotTest(format!("{name}: {reason}")),
                    None => Verdict::NotMeasured(format!("{name} failed: {failure}")),
                }
            }
            None => continue,
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

/// The verdict of a decided comparison against what the test claimed.
pub fn verdict(test: &ClaimTest, comparison: &Comparison) -> Verdict {
    let higher = comparison.ratio > 1.0;
    match (test.expect, comparison.outcome) {
        (_, Outcome::Undecided | Outcome::Within) => Verdict::Inconclusive,
        (Expect::Tie, Outcome::Equivalent) => Verdict::Reproduced(None),
        (Expect::Tie, Outcome::Different) => Verdict::NotReproduced,
        (_, Outcome::Equivalent) => Verdict::NotReproduced,
        (expect, Outcome::Different) if higher != (expect == Expect::Higher) => Verdict::Reversed,
        (expect, Outcome::Different) => Verdict::Reproduced(size(test, expect, comparison)),
    }
}

/// Where the decided interval lies against the claimed ratio, measured as distance from 1.
fn size(test: &ClaimTest, expect: Expect, comparison: &Comparison) -> Option<Size> {
    let (claimed_low, claimed_high) = test.ratio?.bounds();
    let (low, high) = (comparison.low?, comparison.high?);
    let (below, above) = (high < claimed_low, low > claimed_high);
    Some(match (expect, below, above) {
        (_, false, false) => Size::InSize,
        (Expect::Lower, true, _) | (Expect::Higher, _, true) => Size::LargerHere,
        _ => Size::SmallerHere,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::claim::Claimed;
    use crate::model::comparison::Metric;
    use crate::model::study::{studies, tests::paired_rows};

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
        }
    }

    fn claim(tests: Vec<ClaimTest>) -> Claim {
        let text = crate::model::claim::EMBEDDED[0].1;
        let mut claim = Claim::parse(crate::model::claim::EMBEDDED[0].0, text).unwrap();
        claim.experiment.command = "fs write".into();
        claim.tests = tests;
        claim
    }

    /// Goal: each way a measured ratio can fall against a claim gets its verdict. Method: 12
    /// paired rounds of uring-ring at 2× blocking (and at 1.0×), judged against claims of 2×,
    /// 1.3×, 3×, a tie and the reverse direction.
    #[test]
    fn each_outcome_reads_against_the_claim() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)],
            12,
        );
        let measured = studies(&rows);
        let verdicts = |tests: Vec<ClaimTest>| {
            let claim = claim(tests);
            judge(&claim, &measured, None)
                .iter()
                .map(|one| one.verdict.clone())
                .collect::<Vec<_>>()
        };
        let one = |ratio| Some(Claimed::One(ratio));
        assert_eq!(
            verdicts(vec![
                test(Expect::Higher, one(2.0)),
                test(Expect::Higher, one(1.3)),
                test(Expect::Higher, one(3.0)),
                test(Expect::Higher, None),
                test(Expect::Lower, one(0.5)),
                test(Expect::Tie, None),
            ]),
            [
                Verdict::Reproduced(Some(Size::InSize)),
                Verdict::Reproduced(Some(Size::LargerHere)),
                Verdict::Reproduced(Some(Size::SmallerHere)),
                Verdict::Reproduced(None),
                Verdict::Reversed,
                Verdict::NotReproduced,
            ]
        );
        let tie = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 1000.0, 10)],
            12,
        );
        let tie_studies = studies(&tie);
        let claim = claim(vec![test(Expect::Tie, None), test(Expect::Higher, None)]);
        let judged = judge(&claim, &tie_studies, None);
        assert_eq!(judged[0].verdict, Verdict::Reproduced(None));
        assert_eq!(judged[1].verdict, Verdict::NotReproduced);
    }

    #[test]
    fn too_few_rounds_are_inconclusive_and_missing_engines_say_why() {
        let rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)], 3);
        let studies = studies(&rows);
        let mut other = test(Expect::Higher, None);
        other.subject = "uring-fixed".into();
        let claim = claim(vec![test(Expect::Higher, None), other]);
        let judged = judge(&claim, &studies, None);
        assert_eq!(judged[0].verdict, Verdict::Inconclusive);
        let reason = judged[1].verdict.reason().unwrap();
        assert!(
            reason.contains("measured both uring-fixed and blocking"),
            "{reason}"
        );
        let unmet = judge(&claim, &studies, Some("no poll queues"));
        assert_eq!(
            unmet[0].verdict,
            Verdict::CannotTest("no poll queues".into())
        );
    }
}
