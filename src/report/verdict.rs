//! The sentence under each table: what the measurements say, from the study's decided
//! comparisons (`analysis::Analysis`): every engine against the table's baseline grouped by what
//! was decided, the figures behind the leading engine's ratio, then why, when the kernel's
//! counters show a reason (`analysis::causes`). A cell's regime is said once, in its own
//! sentence (`regimes_sentence`).

use crate::analysis::causes::{first_cause, kernel_causes, Direction, Subject};
use crate::analysis::numbers::{per_op, throughput};
use crate::analysis::screen::{drift_sentence, rounds_text, zones};
use crate::model::comparison::Comparison;
use crate::model::regime::{CellRegime, Regime, BUSY, FREE};
use crate::model::study::{op_noun, Study};
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;

/// Most losing engines whose reason a verdict names (the table has the rest).
const LOSERS_EXPLAINED: usize = 3;
/// Most reasons a verdict gives for an engine decided faster.
const WINNER_CAUSES: usize = 2;

/// The measured verdict of one study, from its decided comparisons: every engine against the
/// table's baseline grouped by what was decided (faster, slower, no difference beyond the
/// margin, within the equivalence margin, undecided), the figures behind the leading engine's
/// ratio, and why, where the kernel's counters show a reason.
pub fn verdict(study: &Study) -> String {
    // An engine whose data was not verified (or that had errors) reports no result to compare.
    let (measured, unverified): (Vec<&EngineSummary>, Vec<&EngineSummary>) = study
        .measured()
        .into_iter()
        .partition(|engine| engine.verified);
    let mut text = match measured.as_slice() {
        [] if !unverified.is_empty() => {
            "No engine's data was verified here, so ringside has no verdict.".to_string()
        }
        [] if !study.contenders.is_empty() => {
            "No ringside engine ran in this study; the contenders follow.".to_string()
        }
        [] => "Only control jobs ran in this study, so ringside has no verdict here.".to_string(),
        [only] => format!(
            "Only {} ran: {} {} (median of {}).",
            only.engine,
            throughput(study.headline, only.throughput.median),
            study.unit(),
            rounds_text(only.runs)
        ),
        [baseline, rest @ ..] => {
            let decided = over_baseline(study, baseline, rest);
            let mut text = format!(
                "Against {}'s {}: {}.",
                baseline.engine,
                study.unit(),
                zones(&decided)
            );
            if let Some(leader) = leading(rest, &decided) {
                text.push(' ');
                text.push_str(&figures(study, leader, baseline));
            }
            text
        }
    };
    for sentence in why(study, &measured) {
        text.push(' ');
        text.push_str(&sentence);
    }
    if let Some(sentence) = drift_sentence(study) {
        text.push(' ');
        text.push_str(&sentence);
    }
    let (failed, unverified): (Vec<&EngineSummary>, Vec<&EngineSummary>) =
        unverified.into_iter().partition(|e| e.failure.is_some());
    if !unverified.is_empty() {
        let names: Vec<&str> = unverified.iter().map(|e| e.engine.as_str()).collect();
        text.push_str(&format!(
            " Not compared, because their data was not verified or they had errors: {}.",
            names.join(", ")
        ));
    }
    for engine in failed {
        let reason = engine.failure.as_deref().unwrap_or_default();
        text.push_str(&format!(
            " {} failed, so it has no result: {reason}.",
            engine.engine
        ));
    }
    match control_sentence(study) {
        Some(controls) => format!("{text} {controls}"),
        None => text,
    }
}

/// Each engine of `rest` over the baseline on the headline, as the analysis decided it.
fn over_baseline(
    study: &Study,
    baseline: &EngineSummary,
    rest: &[&EngineSummary],
) -> Vec<Comparison> {
    (rest.iter())
        .filter_map(|e| study.decided(&e.engine, &baseline.engine, Metric::Throughput))
        .collect()
}

/// The measured reasons, where some stand out: what carried an engine decided faster than the
/// baseline past it, and what held the engines decided slower below it.
fn why(study: &Study, measured: &[&EngineSummary]) -> Vec<String> {
    let mut sentences = Vec::new();
    let [baseline, rest @ ..] = measured else {
        return sentences;
    };
    let decided = over_baseline(study, baseline, rest);
    let subject = |engine| Subject::new(engine, baseline, &study.workload);
    let verdict_of = |engine: &EngineSummary| decided.iter().find(|c| c.subject == engine.engine);
    if let Some(leader) = leading(rest, &decided) {
        if verdict_of(leader).is_some_and(|c| c.is_different() && c.better()) {
            let helped: Vec<String> = (kernel_causes(&subject(leader)).into_iter())
                .filter(|cause| cause.direction == Direction::Helps)
                .take(WINNER_CAUSES)
                .map(|cause| cause.text)
                .collect();
            if !helped.is_empty() {
                sentences.push(format!("Why: {}: {}.", leader.engine, helped.join("; ")));
            }
        }
    }
    let lost = (rest.iter())
        .filter(|engine| verdict_of(engine).is_some_and(|c| c.is_different() && !c.better()))
        .filter_map(|engine| {
            let cause = first_cause(&subject(engine), Direction::Hurts)?;
            Some(format!(
                "{} lost to {}: {cause}.",
                engine.engine, baseline.engine
            ))
        })
        .take(LOSERS_EXPLAINED);
    sentences.extend(lost);
    sentences
}

/// The engine with the highest decided ratio over the baseline: the one the figures sentence
/// describes (called faster only where its own comparison decides it).
fn leading<'a>(engines: &[&'a EngineSummary], decided: &[Comparison]) -> Option<&'a EngineSummary> {
    let ratio = |engine: &&EngineSummary| {
        (decided.iter())
            .find(|c| c.subject == engine.engine)
            .map_or(f64::NAN, |c| c.ratio)
    };
    engines
        .iter()
        .copied()
        .max_by(|a, b| ratio(a).total_cmp(&ratio(b)))
}

/// "uring-defer against blocking: 5100 vs 4270 MB/s (medians of 12 rounds), 0.010 vs 1.0
/// syscalls per write, 0.90 vs 1.0 µs of CPU per write": the medians behind the leading ratio.
fn figures(study: &Study, one: &EngineSummary, other: &EngineSummary) -> String {
    let unit = study.unit();
    let noun = op_noun(&study.workload);
    let mut text = format!(
        "{} against {}: {} vs {} {unit} (medians of {})",
        one.engine,
        other.engine,
        throughput(study.headline, one.throughput.median),
        throughput(study.headline, other.throughput.median),
        rounds_text(one.runs.max(other.runs))
    );
    if let (Some(a), Some(b)) = (&one.syscalls_per_op, &other.syscalls_per_op) {
        text.push_str(&format!(
            ", {} vs {} syscalls per {noun}",
            per_op(a.median),
            per_op(b.median)
        ));
    }
    text.push_str(&format!(
        ", {} vs {} µs of CPU per {noun}",
        per_op(one.cpu_us_per_op.median),
        per_op(other.cpu_us_per_op.median)
    ));
    if let (Some(a), Some(b)) = (&one.p99_us, &other.p99_us) {
        text.push_str(&format!(
            ", p99 {} vs {} µs",
            per_op(a.median),
            per_op(b.median)
        ));
    }
    text.push('.');
    text
}

/// The cell's regime, said as the analysis classified it, with each engine's runs behind it.
/// None for a study whose rows do not measure both sides.
pub fn regimes_sentence(study: &Study, regime: Option<&CellRegime>) -> Option<String> {
    let regime = regime?;
    let each: Vec<String> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .filter_map(|engine| {
            let runs: Vec<Regime> = engine.rounds.iter().filter_map(|r| r.regime).collect();
            let count = |regime: Regime| runs.iter().filter(|r| **r == regime).count();
            (!runs.is_empty()).then(|| {
                format!(
                    "{} {}/{} of {}",
                    engine.engine,
                    count(Regime::ClientBound),
                    count(Regime::ServerBound),
                    runs.len()
                )
            })
        })
        .collect();
    Some(format!(
        "Regime: {}. Runs client-bound / server-bound per engine (a run is client-bound when its \
         load was saturated or ≥ {:.0}% busy, server-bound when the server's cores were ≥ {:.0}% \
         busy and the load's ≤ {:.0}%): {}.",
        regime.text(),
        BUSY * 100.0,
        BUSY * 100.0,
        FREE * 100.0,
        each.join(", ")
    ))
}

/// "Controls: fio psync 1124 MB/s (median); blocking against fio psync: 0.97×, …": each control
/// beside the table's baseline, as the analysis decided it where both ran in the same rounds.
fn control_sentence(study: &Study) -> Option<String> {
    let controls = study.controls();
    if controls.is_empty() {
        return None;
    }
    let unit = study.unit();
    let baseline = study.measured().into_iter().find(|engine| engine.verified);
    let listed: Vec<String> = (controls.iter())
        .map(|control| {
            let mut said = format!(
                "{} {} {unit} (median)",
                control.engine,
                throughput(study.headline, control.throughput.median)
            );
            let decided = baseline.and_then(|baseline| {
                let c = study.decided(&baseline.engine, &control.engine, Metric::Throughput)?;
                Some(format!(
                    "; {} against it: {}",
                    baseline.engine,
                    c.verdict_text()
                ))
            });
            said.push_str(&decided.unwrap_or_default());
            said
        })
        .collect();
    Some(format!("Controls: {}.", listed.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::causes::tests::punted;
    use crate::model::study::tests::{paired_rows, row};
    use crate::row::params::{Param, Params};
    use crate::row::Row;
    use serde_json::Value;

    #[test]
    fn the_winner_is_named_with_its_interval_syscalls_and_cpu() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-sqpoll", 1210.0, 10)],
            8,
        );
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.starts_with("Against blocking's MB/s: uring-sqpoll faster (1.21× ["),
            "{text}"
        );
        assert!(
            text.contains("], 8 rounds). uring-sqpoll against blocking: ")
                && text.ends_with(
                    "(medians of 8 rounds), 0.010 vs 1.0 syscalls per write, 1.0 vs 1.0 µs of \
                     CPU per write."
                ),
            "{text}"
        );
    }

    #[test]
    fn a_difference_inside_the_margin_is_not_called_faster() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-ring", 1010.0, 10)],
            12,
        );
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.starts_with(
                "Against blocking's MB/s: uring-ring no difference beyond 3% (1.01× ["
            ),
            "{text}"
        );
        assert!(!text.contains("faster"), "{text}");
        // Two rounds decide nothing, however far apart.
        let rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)], 2);
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.starts_with(
                "Against blocking's MB/s: uring-ring undecided (2.01× no interval, 2 rounds)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_baseline_that_wins_is_said_to_win() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-single", 100.0, 1000)],
            8,
        );
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.starts_with("Against blocking's MB/s: uring-single slower (0.10× ["),
            "{text}"
        );
    }

    #[test]
    fn an_unverified_engine_is_named_and_not_compared() {
        let mut starved = row("blocking", 1, 15.0, 1000);
        starved.verified = false;
        let rows = [
            starved,
            row("epoll", 1, 150.0, 1000),
            row("uring", 1, 100.0, 100),
        ];
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.starts_with("Against epoll's MB/s: uring undecided (0.67× no interval, 1 round)"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "Not compared, because their data was not verified or they had errors: blocking."
            ),
            "{text}"
        );
    }

    #[test]
    fn a_failed_engine_is_named_with_its_reason() {
        let mut killed = row("uring", 1, 0.0, 0);
        killed.fail("the server exited during the run with signal: 9 (SIGKILL)");
        let rows = [
            row("blocking", 1, 15.0, 1000),
            killed,
            row("epoll", 1, 150.0, 1000),
        ];
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.ends_with(
                "uring failed, so it has no result: the server exited during the run with \
                 signal: 9 (SIGKILL)."
            ),
            "{text}"
        );
        assert!(!text.contains("Not compared"), "{text}");
    }

    #[test]
    fn controls_get_their_own_sentence_and_a_lone_engine_is_reported_alone() {
        let mut control = row("fio psync", 1, 500.0, 0);
        control.params.put(Param::Control, Value::Bool(true));
        control.syscalls_source = crate::row::SyscallSource::Unmeasured;
        let text = verdict(
            &crate::analysis::Analysis::of_rows(&[row("blocking", 1, 1000.0, 1000), control])
                .studies[0],
        );
        assert_eq!(
            text,
            "Only blocking ran: 1000 MB/s (median of 1 round). Controls: fio psync 500 MB/s \
             (median); blocking against it: 2.00×, undecided no interval, 1 round."
        );
    }

    #[test]
    fn the_verdict_says_why_the_baseline_won_and_why_a_winner_won() {
        // Eight rounds, the machine moving every engine of a round alike.
        let rounds = |make: &dyn Fn(u32, f64) -> Vec<Row>| -> Vec<Row> {
            (1..=8)
                .flat_map(|run| make(run, 1.0 + 0.1 * f64::from(run).sin()))
                .collect()
        };
        let rows = rounds(&|run, machine| {
            vec![
                row("blocking", run, 1000.0 * machine, 1000),
                punted("uring-single", run, 70.0 * machine, 1000),
                punted("uring-ring", run, 900.0 * machine, 600),
            ]
        });
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.contains(
                " uring-single lost to blocking: 100% of its requests were punted to io-wq \
                 workers (1000), which ran on 2 workers for 0.90 s of CPU and 2000 context \
                 switches. uring-ring lost to blocking: 60% of its requests"
            ),
            "{text}"
        );
        let rows = rounds(&|run, machine| {
            let mut defer = punted("uring-defer", run, 2000.0 * machine, 100);
            defer.local_work_runs = Some(50);
            vec![row("blocking", run, 1000.0 * machine, 1000), defer]
        });
        let text = verdict(&crate::analysis::Analysis::of_rows(&rows).studies[0]);
        assert!(
            text.ends_with(
                " Why: uring-defer: it ran its completions when it asked for them, in 50 \
                 batches of DEFER_TASKRUN local work (20 CQEs each)."
            ),
            "{text}"
        );
    }
}
