//! The sentence under each table: what the measurements say, computed from them. The first
//! engine of a study is its baseline (the table order puts blocking or epoll first); the verdict
//! names the fastest engine, how much more it moved than the baseline with its interval and
//! decision (paired round by round, the table's comparisons one exploratory family:
//! `model::comparison`), and what it paid in syscalls and CPU; then why, when the kernel's
//! counters show a reason (`causes`).

use crate::model::comparison::{table_comparisons, Comparison, Metric};
use crate::model::drift::drift;
use crate::model::study::{op_noun, runs_text, EngineSummary, Study};
use crate::report::causes::{client_saturation, first_cause, kernel_causes, Direction, Subject};
use crate::report::numbers::{per_op, ratio, throughput};

/// Most losing engines whose reason a verdict names (the table has the rest).
const LOSERS_EXPLAINED: usize = 3;
/// Most reasons a verdict gives for its winner.
const WINNER_CAUSES: usize = 2;

/// The measured verdict of one study, as one sentence (two when controls ran beside it).
pub fn verdict(study: &Study) -> String {
    // An engine whose data was not verified (or that had errors) reports no result to compare.
    let (measured, unverified): (Vec<&EngineSummary>, Vec<&EngineSummary>) = study
        .measured()
        .into_iter()
        .partition(|engine| engine.verified);
    let main = match measured.as_slice() {
        [] if !unverified.is_empty() => "No engine's data was verified here, so ringside has no \
                                         verdict."
            .to_string(),
        [] if !study.contenders.is_empty() => {
            "No ringside engine ran in this study; the contenders follow.".to_string()
        }
        [] => "Only control jobs ran in this study, so ringside has no verdict here.".to_string(),
        [only] => format!(
            "Only {} ran: {} {} (median of {}).",
            only.engine,
            throughput(study.headline, only.throughput.median),
            study.unit(),
            runs_text(only.runs)
        ),
        [baseline, rest @ ..] => {
            let best = fastest(rest);
            let decided = decided_over_baseline(study);
            let over = (decided.iter())
                .find(|c| c.subject == best.engine && c.reference == baseline.engine);
            if best.throughput.median > baseline.throughput.median {
                comparison(study, &best.engine, best, baseline, over)
            } else {
                let lead = format!("No engine beat {}: it", baseline.engine);
                comparison(study, &lead, baseline, best, over)
            }
        }
    };
    let mut text = main;
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

/// "blocking's MB/s moved during the study, …": the baseline's own figure jumped or trended
/// (`model::drift`), said beside the verdict.
pub fn drift_sentence(study: &Study) -> Option<String> {
    let baseline = study
        .measured()
        .into_iter()
        .find(|engine| engine.verified)?;
    let moved = drift(baseline, Metric::Throughput)?;
    let unit = study.unit();
    let text = moved.text(&unit, |value| throughput(study.headline, value));
    Some(format!("Drift: {text}."))
}

/// The measured reasons, where some stand out: a saturated client first (it bounds every
/// figure), then what carried the winner past the baseline, or what held the engines that lost
/// to the baseline (outside noise) below it.
fn why(study: &Study, measured: &[&EngineSummary]) -> Vec<String> {
    let mut sentences = Vec::new();
    let named: Vec<(&str, &_)> = measured
        .iter()
        .map(|engine| (engine.engine.as_str(), &engine.figures))
        .collect();
    sentences.extend(client_saturation(&named));
    let [baseline, rest @ ..] = measured else {
        return sentences;
    };
    if rest.is_empty() {
        return sentences;
    }
    let subject = |engine| Subject::new(engine, baseline, &study.workload);
    let best = fastest(rest);
    if best.throughput.median > baseline.throughput.median {
        let helped: Vec<String> = kernel_causes(&subject(best))
            .into_iter()
            .filter(|cause| cause.direction == Direction::Helps)
            .take(WINNER_CAUSES)
            .map(|cause| cause.text)
            .collect();
        if !helped.is_empty() {
            sentences.push(format!("Why: {}: {}.", best.engine, helped.join("; ")));
        }
    }
    let decided = decided_over_baseline(study);
    let lost = rest
        .iter()
        .filter(|engine| {
            (decided.iter()).any(|c| c.subject == engine.engine && c.is_different() && !c.better())
        })
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

fn fastest<'a>(engines: &[&'a EngineSummary]) -> &'a EngineSummary {
    engines
        .iter()
        .copied()
        .max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))
        .expect("at least one engine")
}

/// The table's comparisons of its engines' headline against the baseline's, decided as one
/// exploratory family with the table's rungs.
pub fn decided_over_baseline(study: &Study) -> Vec<Comparison> {
    table_comparisons(study, Metric::Throughput)
}

/// "`subject` reached R× [low–high], N rounds the unit of `other` (a vs b unit, faster) with
/// ...": `decided` is the comparison of the faster engine over the slower, when the baseline is
/// one of them (it always is: the winner over the baseline, or the baseline over the closest).
fn comparison(
    study: &Study,
    subject: &str,
    one: &EngineSummary,
    other: &EngineSummary,
    decided: Option<&Comparison>,
) -> String {
    let unit = study.unit();
    let noun = op_noun(&study.workload);
    let ratio_of_medians = ratio(one.throughput.median / other.throughput.median);
    let (figure, how) = match decided {
        // The comparison is always the engine over the baseline; turned round when the baseline
        // won, so the sentence reads baseline over engine.
        Some(c) => {
            let c = if c.subject == one.engine {
                c.clone()
            } else {
                c.inverse()
            };
            (
                ratio(c.ratio),
                format!("{}: {}", c.interval_text(), c.word()),
            )
        }
        None => (
            ratio_of_medians,
            format!("median of {}", runs_text(one.runs.max(other.runs))),
        ),
    };
    let mut text = format!(
        "{subject} reached {figure} the {unit} of {} ({how}; {} vs {} {unit})",
        other.engine,
        throughput(study.headline, one.throughput.median),
        throughput(study.headline, other.throughput.median),
    );
    if let (Some(a), Some(b)) = (&one.syscalls_per_op, &other.syscalls_per_op) {
        let syscalls = format!(
            " with {} syscalls per {noun} vs {}",
            per_op(a.median),
            per_op(b.median)
        );
        text.push_str(&syscalls);
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

/// "Controls: fio psync 1124 MB/s, ...; uring-ring reached 0.93× the best control."
fn control_sentence(study: &Study) -> Option<String> {
    let controls = study.controls();
    let best_control = controls
        .iter()
        .max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))?;
    let unit = study.unit();
    let listed: Vec<String> = controls
        .iter()
        .map(|c| {
            format!(
                "{} {} {unit}",
                c.engine,
                throughput(study.headline, c.throughput.median)
            )
        })
        .collect();
    let mut text = format!("Controls: {}", listed.join(", "));
    let measured: Vec<&EngineSummary> = study
        .measured()
        .into_iter()
        .filter(|engine| engine.verified)
        .collect();
    if !measured.is_empty() {
        let best = fastest(&measured);
        text.push_str(&format!(
            "; the fastest ringside engine, {}, reached {} the best control",
            best.engine,
            ratio(best.throughput.median / best_control.throughput.median)
        ));
    }
    text.push('.');
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;
    use crate::model::study::tests::{paired_rows, row};
    use serde_json::Value;

    #[test]
    fn the_winner_is_named_with_its_interval_syscalls_and_cpu() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-sqpoll", 1210.0, 10)],
            8,
        );
        let text = verdict(&studies(&rows)[0]);
        assert!(
            text.starts_with("uring-sqpoll reached 1.21× the MB/s of blocking (["),
            "{text}"
        );
        assert!(
            text.contains("], 8 rounds: faster; ")
                && text.ends_with(
                    "MB/s) with 0.010 syscalls per write vs 1.0, 1.0 vs 1.0 µs of CPU per write."
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
        let text = verdict(&studies(&rows)[0]);
        assert!(
            text.starts_with("uring-ring reached 1.01× the MB/s of blocking (["),
            "{text}"
        );
        assert!(text.contains("12 rounds: equivalent"), "{text}");
        // Two rounds decide nothing, however far apart.
        let rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)], 2);
        let text = verdict(&studies(&rows)[0]);
        assert!(
            text.contains("(no interval, 2 rounds: undecided;"),
            "{text}"
        );
    }

    #[test]
    fn a_baseline_that_wins_is_said_to_win() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("uring-single", 100.0, 1000)],
            8,
        );
        let text = verdict(&studies(&rows)[0]);
        assert!(
            text.starts_with(
                "No engine beat blocking: it reached 10.00× the MB/s of uring-single (["
            ),
            "{text}"
        );
        assert!(text.contains("8 rounds: faster;"), "{text}");
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
        let text = verdict(&studies(&rows)[0]);
        assert!(
            text.starts_with("No engine beat epoll: it reached 1.50× the MB/s of uring (no"),
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
        let text = verdict(&studies(&rows)[0]);
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
        control.params.insert("control".into(), Value::Bool(true));
        control.syscalls_source = crate::row::SyscallSource::Unmeasured;
        let text = verdict(&studies(&[row("blocking", 1, 1000.0, 1000), control])[0]);
        assert_eq!(
            text,
            "Only blocking ran: 1000 MB/s (median of 1 run). Controls: fio psync 500 MB/s; the \
             fastest ringside engine, blocking, reached 2.00× the best control."
        );
    }
}
