//! The questions a study's plan asks, before anything is measured: who is compared with whom,
//! on which metric, in which family. The first screen asks, per study whose closed loop ranks
//! the servers (every file study), each engine of its line against the line's baseline and each
//! rung against the engine it extends, on the headline; and, per equal-load comparison, each
//! engine against epoll on server CPU. Which engine measured fastest chooses nothing here.

use serde_json::Value;

use crate::engines::nearest_ran;
use crate::model::comparison::{Comparison, Judging};
use crate::model::equal_load::{EqualLoad, BASELINE};
use crate::model::regime::CellRegime;
use crate::model::study::study_comparisons;
use crate::model::study::{in_network_line, is_network, Study};
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::row::params::{Param, Params};

/// Where a question is asked: a study, or an equal-load comparison (by index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Study(usize),
    Load(usize),
}

/// What a screen question asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An engine of the line against the line's baseline.
    OverBaseline,
    /// A rung against the engine it extends (the nearest ancestor in the line that ran).
    Rung,
    /// An engine against epoll at equal load, on server CPU.
    EqualLoad,
}

/// One question of the first screen, with its comparison (decided once the family is).
#[derive(Clone, Debug)]
pub struct Question {
    pub place: Place,
    pub kind: Kind,
    pub comparison: Comparison,
    /// For a rung: the rungs between it and the engine it is compared with that did not run.
    pub via: Vec<String>,
}

/// The verified engines ringside measured that the study's line compares, the baseline first:
/// in a network study epoll (the readiness API io_uring replaces) and the event-loop engines,
/// blocking and threads only at one connection (`in_network_line`); elsewhere every one, the
/// table's first the baseline. A second copy of an engine (`epoll#2`, the A/A check) is not in
/// the line: it calibrates, it does not answer.
pub fn line(study: &Study) -> Vec<&EngineSummary> {
    let mut engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified && !engine.engine.contains('#'))
        .collect();
    if is_network(&study.workload) {
        let connections = study
            .params
            .param(Param::Connections)
            .and_then(Value::as_u64);
        let connections = connections.unwrap_or(1);
        engines.retain(|e| in_network_line(&study.workload, &e.engine, connections));
        if let Some(at) = engines.iter().position(|e| e.engine == BASELINE) {
            let baseline = engines.remove(at);
            engines.insert(0, baseline);
        }
    }
    engines
}

/// Whether the study's closed-loop throughputs answer a question about the servers: every file
/// study, and a network cell whose regime ranks the servers.
pub fn ranks(regime: Option<&CellRegime>) -> bool {
    regime.is_none_or(CellRegime::ranks_servers)
}

/// How a comparison of `study` is judged: at its looks, with its document's noise between
/// blocks.
pub fn alpha(study: &Study) -> &Judging {
    &study.judging
}

/// The line's questions on `metric`: each engine over the baseline, then each rung over the
/// nearest engine of the line it extends (where that is not the baseline), with the rungs
/// skipped between.
fn line_questions(study: &Study, metric: Metric) -> Vec<(Kind, Comparison, Vec<String>)> {
    let engines = line(study);
    let Some((baseline, rest)) = engines.split_first() else {
        return Vec::new();
    };
    let alpha = alpha(study);
    let mut asked: Vec<(Kind, Comparison, Vec<String>)> = (rest.iter())
        .map(|engine| {
            let comparison = Comparison::paired(engine, baseline, metric, alpha);
            (Kind::OverBaseline, comparison, Vec::new())
        })
        .collect();
    let ran = |name: &str| engines.iter().any(|e| e.engine == name);
    for engine in &engines {
        let Some((parent, via)) = nearest_ran(&study.workload, &engine.engine, &ran) else {
            continue;
        };
        if parent == baseline.engine {
            continue;
        }
        if let Some(parent) = engines.iter().find(|e| e.engine == parent) {
            let comparison = Comparison::paired(engine, parent, metric, alpha);
            asked.push((Kind::Rung, comparison, via));
        }
    }
    asked
}

/// The first screen's questions, undecided, in the order the screen states them: per study
/// whose throughputs rank the servers, its line's questions on the headline; then per
/// equal-load comparison each engine against epoll on server CPU.
pub fn screen_questions(
    studies: &[Study],
    regimes: &[Option<CellRegime>],
    loads: &[EqualLoad],
) -> Vec<Question> {
    let mut asked = Vec::new();
    for (index, (study, regime)) in studies.iter().zip(regimes).enumerate() {
        if !ranks(regime.as_ref()) {
            continue;
        }
        for (kind, comparison, via) in line_questions(study, Metric::Throughput) {
            let place = Place::Study(index);
            asked.push(Question {
                place,
                kind,
                comparison,
                via,
            });
        }
    }
    for (index, load) in loads.iter().enumerate() {
        for comparison in load.comparisons() {
            asked.push(Question {
                place: Place::Load(index),
                kind: Kind::EqualLoad,
                comparison,
                via: Vec::new(),
            });
        }
    }
    asked
}

/// A section's questions not yet decided, on every metric: the table's (each engine against
/// the table's baseline, each rung against its parent, copies against their engine) and the
/// line's, each once.
pub fn section_questions(study: &Study) -> Vec<Comparison> {
    let mut asked: Vec<Comparison> = Vec::new();
    // Each control beside the table's baseline, where both ran in the same rounds.
    let baseline = study.measured().into_iter().find(|engine| engine.verified);
    let controls: Vec<Comparison> = (baseline.into_iter())
        .flat_map(|baseline| {
            (study.controls().into_iter()).map(move |control| {
                Comparison::paired(baseline, control, Metric::Throughput, alpha(study))
            })
        })
        .collect();
    // Each contender beside the engine it is measured against.
    let contenders: Vec<Comparison> = (study.contenders.iter())
        .filter(|contender| contender.verified)
        .filter_map(|contender| Some((contender, reference(study, contender)?.0)))
        .flat_map(|(contender, engine)| {
            (Metric::ALL.into_iter())
                .map(move |metric| Comparison::paired(contender, engine, metric, alpha(study)))
        })
        .collect();
    for metric in Metric::ALL {
        let line = line_questions(study, metric).into_iter().map(|(_, c, _)| c);
        let controls = controls.iter().filter(|c| c.metric == metric).cloned();
        let contenders = contenders.iter().filter(|c| c.metric == metric).cloned();
        let candidates = (study_comparisons(study, metric).into_iter())
            .chain(line)
            .chain(controls)
            .chain(contenders);
        for comparison in candidates {
            let known = |c: &Comparison| {
                c.metric == metric
                    && ((c.subject == comparison.subject && c.reference == comparison.reference)
                        || (c.subject == comparison.reference && c.reference == comparison.subject))
            };
            if comparison.rounds == 0 || study.decided.iter().any(known) || asked.iter().any(known)
            {
                continue;
            }
            asked.push(comparison);
        }
    }
    asked
}

/// The line engine the screen names first: the one whose decided ratio over the baseline is the
/// highest (None without a second engine). Which engine that is decides no family: it names the
/// engine the tie questions are asked against.
pub fn leader(study: &Study) -> Option<&EngineSummary> {
    let engines = line(study);
    let (baseline, rest) = engines.split_first()?;
    let ratio = |engine: &&EngineSummary| {
        study
            .decided(&engine.engine, &baseline.engine, Metric::Throughput)
            .map_or(f64::NAN, |c| c.ratio)
    };
    rest.iter()
        .copied()
        .max_by(|a, b| ratio(a).total_cmp(&ratio(b)))
}

/// Who ties with the leader: each line engine (the baseline too) against it, on the headline,
/// where no decided comparison of the pair exists yet. None where the throughputs rank the load
/// generator.
pub fn tie_questions(study: &Study, regime: Option<&CellRegime>) -> Vec<Comparison> {
    if !ranks(regime) {
        return Vec::new();
    }
    let Some(leader) = leader(study) else {
        return Vec::new();
    };
    let alpha = alpha(study);
    (line(study).into_iter())
        .filter(|engine| engine.engine != leader.engine)
        .filter(|engine| {
            (study.decided(&engine.engine, &leader.engine, Metric::Throughput)).is_none()
        })
        .map(|engine| Comparison::paired(engine, leader, Metric::Throughput, alpha))
        .filter(|comparison| comparison.rounds > 0)
        .collect()
}

/// The engine a study's figures of `engine` are divided by: the line's baseline for an engine
/// of the line, else the table's first verified engine.
pub fn baseline_of<'a>(study: &'a Study, engine: &str) -> Option<&'a EngineSummary> {
    let engines = line(study);
    match engines.iter().any(|e| e.engine == engine) {
        true => engines.first().copied(),
        false => study.measured().into_iter().find(|e| e.verified),
    }
}

/// `engine`'s figure on `metric` as its verdict used it: the baseline's median times the ends of
/// the decided ratio's interval (what a chart's whisker draws). None for the baseline itself, or
/// an engine without a decided comparison with an interval.
pub fn decided_range(study: &Study, engine: &str, metric: Metric) -> Option<(f64, f64)> {
    let baseline = baseline_of(study, engine).filter(|b| b.engine != engine)?;
    let median = match metric {
        Metric::Throughput => baseline.throughput.median,
        Metric::CpuPerOp => baseline.cpu_us_per_op.median,
        Metric::SyscallsPerOp => baseline.syscalls_per_op?.median,
        Metric::P99 => baseline.p99_us?.median,
    };
    let decided = study.decided(engine, &baseline.engine, metric)?;
    Some((median * decided.low?, median * decided.high?))
}

/// The ringside engine a contender of `api` is compared with: the raw engine of that API.
pub fn raw_engine_of(api: &str) -> Option<&'static str> {
    match api {
        "io_uring" => Some("uring"),
        "epoll" => Some("epoll"),
        _ => None,
    }
}

/// The engine `contender` is measured against: ringside's raw engine of its API when that ran
/// and was verified, else the verified engine of the study with the highest median (a reference, not a verdict); the second value says
/// which of the two it is.
pub fn reference<'a>(
    study: &'a Study,
    contender: &EngineSummary,
) -> Option<(&'a EngineSummary, bool)> {
    let verified: Vec<&EngineSummary> = study
        .measured()
        .into_iter()
        .filter(|engine| engine.verified)
        .collect();
    let raw = contender.server_api.as_deref().and_then(raw_engine_of);
    if let Some(engine) = verified
        .iter()
        .find(|engine| Some(engine.engine.as_str()) == raw)
    {
        return Some((engine, true));
    }
    let highest = verified
        .into_iter()
        .max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))?;
    Some((highest, false))
}
