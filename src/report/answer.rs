//! The report's first screen: the answer to ringside's question on this machine, before any
//! table. The machine in one line; per study, the fastest engine against the baseline, decided
//! (`model::comparison`: *different* with its interval and rounds, *equivalent*, or *undecided
//! after N rounds*) and, where decided, why; the io_uring features (the rungs of the ladder,
//! each engine over the engine it extends) that made a decided difference here, each with its
//! measured cause; and the caveats that bound every figure. Every comparison on this screen is
//! one family, decided together (Holm), so the chance that any "different" here is a false
//! alarm stays under 5%. Every ratio names the engine it divides by.

use serde_json::Value;

use crate::model::comparison::{decide, Comparison, Family};
use crate::model::equal_load::{Finding as LoadFinding, BASELINE};
use crate::model::ladder::{steps, Rung, DID_NOT_RUN};
use crate::model::regime::{client_bound, Regime, BUSY, FREE};
use crate::model::study::{in_network_line, is_network, EngineSummary, Study};
use crate::report::causes::{client_saturation, first_cause, Direction, Subject};
use crate::report::environment::{machine_line, warnings};
use crate::report::equal_load::{equal_loads, matching, verdict_of, EqualLoad};
use crate::report::features::{features, ranks_the_servers};
use crate::report::numbers::throughput;
use crate::report::verdict::drift_sentence;
use crate::row::params::{Param, Params};
use crate::row::Document;
use crate::stats::rank::{Outcome, MIN_ROUNDS};

/// The first screen, as sentences the Markdown and HTML reports lay out each in their way.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub machine: String,
    /// Per study: its title and what it found.
    pub studies: Vec<(String, String)>,
    pub helped: Vec<String>,
    pub hurt: Vec<String>,
    pub caveats: Vec<String>,
    /// Per study (by title), the engine named the winner: decided different from, and better
    /// than, the baseline. Charts star only these.
    pub winners: Vec<(String, String)>,
}

impl Answer {
    /// The lists under the studies: heading, items, and what to say when there are none.
    pub fn lists(&self) -> [(&'static str, &[String], &'static str); 3] {
        [
            (
                "Features that made a decided difference here (an engine over the engine it \
                 extends)",
                &self.helped,
                "none decided",
            ),
            (
                "Features that hurt here (decided)",
                &self.hurt,
                "none decided",
            ),
            ("Caveats", &self.caveats, "none found"),
        ]
    }

    /// The engine starred in `study`'s chart, if any.
    pub fn winner(&self, study: &str) -> Option<&str> {
        (self.winners.iter())
            .find(|(title, _)| title == study)
            .map(|(_, engine)| engine.as_str())
    }
}

/// Every comparison the first screen states, decided as one family: per study, its fastest
/// engine over its baseline (None where there is nothing to compare); per study, the rungs
/// that rank the servers; and per equal-load comparison, its cheapest engine against epoll.
pub struct Verdicts {
    pub findings: Vec<Option<Finding>>,
    pub rungs: Vec<Vec<Rung>>,
    /// In the order of `equal_loads`.
    pub loads: Vec<Option<LoadFinding>>,
}

/// A study's fastest engine over its baseline, among `engines`.
#[derive(Clone, Debug)]
pub struct Finding {
    pub best: String,
    pub baseline: String,
    pub comparison: Comparison,
}

impl Verdicts {
    pub fn of(studies: &[Study], loads: &[EqualLoad]) -> Verdicts {
        let mut findings: Vec<Option<Finding>> = (studies.iter())
            .map(|study| finding_of(study, &ranked_engines(study)))
            .collect();
        // A rung whose pair is its study's finding (the fastest engine over a baseline it
        // extends) is that finding, decided once.
        let mut rungs: Vec<Vec<Rung>> = (studies.iter().zip(&findings))
            .map(|(study, finding)| {
                (steps(study).into_iter().filter_map(Result::ok))
                    .filter(|rung| ranks_the_servers(study, rung))
                    .filter(|rung| {
                        finding.as_ref().is_none_or(|f| {
                            (f.best.as_str(), f.baseline.as_str())
                                != (rung.engine.as_str(), rung.parent.as_str())
                        })
                    })
                    .collect()
            })
            .collect();
        let mut load_findings: Vec<Option<LoadFinding>> =
            loads.iter().map(EqualLoad::finding).collect();
        let mut family: Vec<Comparison> = (findings.iter().flatten())
            .map(|finding| finding.comparison.clone())
            .chain(rungs.iter().flatten().map(|rung| rung.comparison.clone()))
            .chain(load_findings.iter().flatten().map(|f| f.comparison.clone()))
            .collect();
        decide(&mut family, Family::Confirmatory);
        let mut decided = family.into_iter();
        for finding in findings.iter_mut().flatten() {
            finding.comparison = decided.next().expect("one decision each");
        }
        for rung in rungs.iter_mut().flatten() {
            rung.comparison = decided.next().expect("one decision each");
        }
        for finding in load_findings.iter_mut().flatten() {
            finding.comparison = decided.next().expect("one decision each");
        }
        Verdicts {
            findings,
            rungs,
            loads: load_findings,
        }
    }
}

/// The fastest of `engines` (the first the baseline) over the baseline, undecided.
fn finding_of(study: &Study, engines: &[&EngineSummary]) -> Option<Finding> {
    let [baseline, rest @ ..] = engines else {
        return None;
    };
    let best = (rest.iter().copied())
        .max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))?;
    let rung = Rung::between(study, baseline, best);
    Some(Finding {
        best: best.engine.clone(),
        baseline: baseline.engine.clone(),
        comparison: rung.comparison,
    })
}

/// The engines the study's line ranks, the first the baseline: those it compares
/// (`compared`) whose cell was not client-bound (all of them where none was).
fn ranked_engines(study: &Study) -> Vec<&EngineSummary> {
    let engines = compared(study);
    if engines.iter().any(|engine| client_bound(&engine.figures)) {
        (engines.into_iter())
            .filter(|engine| !client_bound(&engine.figures))
            .collect()
    } else {
        engines
    }
}

pub fn answer(document: &Document, studies: &[Study]) -> Answer {
    let machine = document
        .env
        .pointer("/machine")
        .and_then(Value::as_str)
        .map_or_else(|| machine_line(&document.env), String::from);
    let loads = equal_loads(&document.results);
    let verdicts = Verdicts::of(studies, &loads);
    let (helped, hurt) = features(studies, &verdicts);
    let mut answered: Vec<usize> = Vec::new();
    let mut found: Vec<(String, String)> = Vec::new();
    let mut winners = Vec::new();
    for (study, finding) in studies.iter().zip(&verdicts.findings) {
        let mut text = match regimes_line(study) {
            Some(regimes) => format!("{regimes}: "),
            None => String::new(),
        };
        match client_paced(study, finding.as_ref()) {
            Some(paced) => text.push_str(&paced),
            None => text.push_str(&finding_text(study, finding.as_ref())),
        }
        if let Some(index) = matching_load(study, &loads) {
            if !any_client_bound(study) {
                text.push_str(" At equal load: ");
            } else {
                text.push_str(" At equal load, which compares the servers: ");
            }
            text.push_str(&verdict_of(&loads[index], verdicts.loads[index].as_ref()));
            answered.push(index);
        } else if any_client_bound(study) {
            text.push_str(
                " No equal-load sweep ran at these connections (`--sweep` compares the servers \
                 at the same offered rates).",
            );
        }
        if let Some(finding) = finding.as_ref().filter(|f| f.comparison.is_different()) {
            if finding.comparison.better() && !any_client_bound(study) {
                winners.push((study.title.clone(), finding.best.clone()));
            }
        }
        found.push((study.title.clone(), text));
    }
    for (index, load) in loads.iter().enumerate() {
        if !answered.contains(&index) {
            let verdict = verdict_of(load, verdicts.loads[index].as_ref());
            found.push((format!("{} at equal load", load.title()), verdict));
        }
    }
    Answer {
        machine,
        studies: found,
        helped,
        hurt,
        caveats: caveats(document, studies),
        winners,
    }
}

fn any_client_bound(study: &Study) -> bool {
    compared(study)
        .iter()
        .any(|engine| client_bound(&engine.figures))
}

/// The equal-load comparison of a network study's connections (and payload), by its index.
fn matching_load(study: &Study, loads: &[EqualLoad]) -> Option<usize> {
    let param = |key: &str| study.params.get(key).and_then(Value::as_u64);
    let load = matching(
        loads,
        &study.workload,
        param("connections"),
        param("payload_bytes"),
    )?;
    loads.iter().position(|known| std::ptr::eq(known, load))
}

/// Which side set the pace of each engine's closed loop (`model::regime`), as the line's
/// opening: "server-bound (each server's cores ≥ 90% busy, the load's threads ≤ 80%)",
/// "client-bound (the load generator's threads ≥ 90% busy)", "neither bound (no side ≥ 90%
/// busy: the round trips set the pace)", or, where the engines differ, each regime with its
/// engines. None for a study whose rows do not measure both sides (files).
fn regimes_line(study: &Study) -> Option<String> {
    let engines = compared(study);
    let regimes: Vec<(&str, Regime)> = (engines.iter())
        .map(|engine| Some((engine.engine.as_str(), Regime::of(&engine.figures)?)))
        .collect::<Option<_>>()?;
    let explained = |regime: Regime| match regime {
        Regime::ServerBound => format!(
            "server-bound (server's cores ≥ {:.0}% busy, the load's threads ≤ {:.0}%: the \
             closed loop ranks the servers)",
            BUSY * 100.0,
            FREE * 100.0
        ),
        Regime::ClientBound => format!(
            "client-bound (the load generator's threads ≥ {:.0}% busy: the closed loop ranks \
             the load generator)",
            BUSY * 100.0
        ),
        Regime::Neither => format!(
            "neither bound (no side ≥ {:.0}% busy with the other ≤ {:.0}%: the round trips, \
             not a saturated side, set the pace)",
            BUSY * 100.0,
            FREE * 100.0
        ),
    };
    let first = regimes.first()?.1;
    if regimes.iter().all(|(_, regime)| *regime == first) {
        return Some(explained(first));
    }
    let groups: Vec<String> = [Regime::ServerBound, Regime::ClientBound, Regime::Neither]
        .into_iter()
        .filter_map(|regime| {
            let names: Vec<&str> = (regimes.iter())
                .filter(|(_, r)| *r == regime)
                .map(|(name, _)| *name)
                .collect();
            (!names.is_empty()).then(|| format!("{} for {}", regime.name(), names.join(", ")))
        })
        .collect();
    Some(groups.join("; "))
}

/// Each engine's regime with the figures behind it, for the study's section: "Which side set
/// the pace (median server CPU of its cores / of the load's threads): epoll server-bound (99% /
/// 33%), …". None for a study whose rows do not measure both sides.
pub fn regimes_sentence(study: &Study) -> Option<String> {
    let each: Vec<String> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .map(|engine| {
            let figures = &engine.figures;
            let regime = Regime::of(figures)?;
            Some(format!(
                "{} {} ({:.0}% / {:.0}%)",
                engine.engine,
                regime.name(),
                figures.server_busy_share? * 100.0,
                figures.client_busy_share? * 100.0
            ))
        })
        .collect::<Option<_>>()?;
    (!each.is_empty()).then(|| {
        format!(
            "Which side set the pace (median server CPU as a share of its loops' cores / the \
             load's as a share of its threads'; busy ≥ {:.0}%, free ≤ {:.0}%): {}.",
            BUSY * 100.0,
            FREE * 100.0,
            each.join(", ")
        )
    })
}

/// A network study whose closed loop was client-bound for some engines: their throughputs are
/// the load generator's limit, so no winner is named among them; the engines whose client kept
/// up are ranked among themselves (`finding`, decided with the rest of the first screen). None
/// when no engine was client-bound.
fn client_paced(study: &Study, finding: Option<&Finding>) -> Option<String> {
    let engines = compared(study);
    let (saturated, free): (Vec<&EngineSummary>, Vec<&EngineSummary>) =
        (engines.iter()).partition(|engine| client_bound(&engine.figures));
    if saturated.is_empty() {
        return None;
    }
    let names = |group: &[&EngineSummary]| {
        let names: Vec<&str> = group.iter().map(|engine| engine.engine.as_str()).collect();
        match names.as_slice() {
            [many @ .., last] if !many.is_empty() => format!("{} and {last}", many.join(", ")),
            _ => names.join(""),
        }
    };
    let whom = match free.len() {
        n if n < saturated.len() => format!("every engine but {}", names(&free)),
        _ => names(&saturated),
    };
    let mut text = match free.as_slice() {
        [] => "the client was saturated in every engine's closed-loop runs, so their \
               throughputs rank the load generator, not the servers."
            .to_string(),
        _ => format!(
            "the client was saturated in the closed-loop runs of {whom}, so those engines' \
             throughputs rank the load generator, not the servers, and none of them is named a \
             winner."
        ),
    };
    if free.len() > 1 {
        text.push_str(&format!(
            " Among {}: {}",
            names(&free),
            finding_text(study, finding)
        ));
    }
    Some(text)
}

/// The verified engines ringside measured that the study's line compares, the first the
/// baseline: in a network study epoll (the readiness API io_uring replaces) and the event-loop
/// engines, blocking and threads only at one connection (`in_network_line`); elsewhere every
/// one, the table's first the baseline.
fn compared(study: &Study) -> Vec<&EngineSummary> {
    let mut engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
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

/// What the study found, from its decided finding: "uring-link reached 4.10× the pages/s of
/// blocking [3.80–4.50], 8 rounds: fsyncs shared…", "no engine differed from blocking by more
/// than 3% …", or "undecided after 6 rounds: …".
fn finding_text(study: &Study, finding: Option<&Finding>) -> String {
    if study.measured().is_empty() && !study.contenders.is_empty() {
        // E.g. `run`'s integrity stream, which only the contenders run: their table says more.
        let verified = study.contenders.iter().filter(|c| c.verified).count();
        return format!(
            "only contenders ran this; {verified} of {} verified their data (their table below).",
            study.contenders.len()
        );
    }
    let unit = study.unit();
    let engines = compared(study);
    let Some(baseline) = engines.first() else {
        return "no engine's data was verified, so no result.".to_string();
    };
    let Some(finding) = finding else {
        return format!(
            "only {} ran: {} {unit}.",
            baseline.engine,
            throughput(study.headline, baseline.throughput.median)
        );
    };
    let comparison = &finding.comparison;
    let best = (engines.iter()).find(|engine| engine.engine == finding.best);
    let cause = |direction| {
        let best = best?;
        let subject = Subject::new(best, baseline, &study.workload);
        first_cause(&subject, direction).map(|cause| format!(": {cause}"))
    };
    let (ratio, interval) = (
        crate::report::numbers::ratio(comparison.ratio),
        comparison.interval_text(),
    );
    let (baseline, margin) = (&finding.baseline, comparison.metric.margin() * 100.0);
    let within = comparison.metric.equivalence_margin() * 100.0;
    match comparison.outcome {
        Outcome::Different if comparison.better() => format!(
            "{} reached {ratio} the {unit} of {baseline} ({interval}){}.",
            finding.best,
            cause(Direction::Helps).unwrap_or_default()
        ),
        Outcome::Different => format!(
            "no engine beat {baseline}; the closest, {}, reached {ratio} of its {unit} \
             ({interval}){}.",
            finding.best,
            cause(Direction::Hurts).unwrap_or_default()
        ),
        Outcome::Equivalent => format!(
            "no engine differed from {baseline} by more than {within:.0}%: the fastest, {}, \
             reached {ratio} of its {unit} ({interval}: equivalent).",
            finding.best
        ),
        Outcome::Undecided if comparison.beyond_margin() => format!(
            "undecided: the fastest, {}, reached {ratio} the {unit} of {baseline} ({interval} \
             at {}), beyond {margin:.0}% at that level but not at the one this screen's \
             comparisons together ask for; more rounds would decide it.",
            finding.best,
            comparison.confidence_text(),
        ),
        Outcome::Undecided => format!(
            "undecided: the fastest, {}, reached {ratio} the {unit} of {baseline} \
             ({interval}), neither beyond {margin:.0}% nor within {within:.0}%.",
            finding.best,
        ),
    }
}

/// "1 round", "8 rounds".
pub fn rounds_text(rounds: usize) -> String {
    match rounds {
        1 => "1 round".to_string(),
        n => format!("{n} rounds"),
    }
}

/// What bounds the figures here: the probe's warnings, a saturated client, unverified engines,
/// rungs without a ratio, studies with a single run.
fn caveats(document: &Document, studies: &[Study]) -> Vec<String> {
    let mut caveats = warnings(&document.env);
    for study in studies {
        let named: Vec<(&str, &_)> = study
            .measured()
            .iter()
            .map(|engine| (engine.engine.as_str(), &engine.figures))
            .collect();
        if let Some(sentence) = client_saturation(&named) {
            caveats.push(format!("{}: {sentence}", study.title));
        }
        let unverified: Vec<String> = study
            .measured()
            .iter()
            .filter(|engine| !engine.verified)
            .map(|engine| match &engine.unverified {
                Some((run, reason)) => format!("{} (run {run}: {reason})", engine.engine),
                None => engine.engine.clone(),
            })
            .collect();
        if !unverified.is_empty() {
            caveats.push(format!(
                "{}: not verified or with errors, so not compared: {}.",
                study.title,
                unverified.join("; ")
            ));
        }
        let left_out: Vec<String> = (study.measured().iter())
            .filter(|engine| engine.verified && !engine.left_out.is_empty())
            .filter_map(|engine| {
                let (run, reason) = engine.unverified.as_ref()?;
                let runs = (engine.left_out.iter())
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                Some(format!(
                    "{}'s run {runs} left out (run {run}: {reason}), compared on its other {}",
                    engine.engine,
                    rounds_text(engine.runs)
                ))
            })
            .collect();
        if !left_out.is_empty() {
            caveats.push(format!(
                "{}: did not verify, so left out: {}.",
                study.title,
                left_out.join("; ")
            ));
        }
        if let Some(sentence) = drift_sentence(study) {
            caveats.push(format!("{}: {sentence}", study.title));
        }
        // A rung none of whose ancestors ran here is still compared with the study's baseline;
        // only a parent that ran and gave nothing to divide by is worth a caveat.
        let orphans: Vec<String> = steps(study)
            .into_iter()
            .filter_map(Result::err)
            .filter(|none| none.why != DID_NOT_RUN)
            .map(|none| none.text())
            .collect();
        if !orphans.is_empty() {
            caveats.push(format!("{}: {}.", study.title, orphans.join("; ")));
        }
    }
    let short: Vec<&str> = studies
        .iter()
        .filter(|study| !study.measured().is_empty() && study.rounds() < MIN_ROUNDS)
        .map(|study| study.title.as_str())
        .collect();
    if !short.is_empty() {
        caveats.push(format!(
            "fewer than {MIN_ROUNDS} rounds, too few to decide any comparison: {}.",
            short.join(", ")
        ));
    }
    caveats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;
    use crate::model::study::tests::{paired_rows, row};
    use crate::row::Row;
    use serde_json::json;

    fn document(rows: Vec<Row>) -> Document {
        let env = json!({"machine": "2 x AMD EPYC, Linux 6.18",
                         "warnings": ["running under SCHED_OTHER: other work can lower results"]});
        Document::new(env, rows)
    }

    /// `rounds` rounds of closed-loop echo rows, each engine at its rate, its client saturated
    /// or not; the machine moves every engine of a round together.
    fn closed_rounds(engines: &[(&str, f64, bool)], rounds: u32) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in 1..=rounds {
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
            for (index, (engine, rate, saturated)) in engines.iter().enumerate() {
                let own = 1.0 + 0.01 * (f64::from(run) * 2.3 + index as f64).cos();
                rows.push(closed_row(engine, run, rate * machine * own, *saturated));
            }
        }
        rows
    }

    /// A closed loop that saturated its client in every engine's runs ranks the client: the
    /// first screen says so (client-bound) and gives the equal-load verdict of the same
    /// connections instead of a winner, decided from its rounds.
    #[test]
    fn a_client_bound_closed_loop_gets_the_equal_load_verdict() {
        use crate::report::equal_load::tests::rounds_at;
        let mut rows = closed_rounds(
            &[("epoll", 100_000.0, true), ("uring-defer", 120_000.0, true)],
            8,
        );
        rows.extend(rounds_at(
            &[("epoll", 6.0), ("uring-defer", 5.4)],
            50_000.0,
            8,
        ));
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(answer.studies.len(), 1, "{:?}", answer.studies);
        let (title, text) = &answer.studies[0];
        assert_eq!(title, "echo");
        assert!(!text.contains("reached"), "no throughput winner: {text}");
        assert!(answer.winners.is_empty(), "{:?}", answer.winners);
        assert!(
            text.contains(
                "At equal load, which compares the servers: at 50.0k messages/s (8 rounds; the \
                 highest rate every engine held), uring-defer used 0.90× epoll's server CPU per \
                 message (["
            ),
            "{text}"
        );
        assert!(text.contains("8 rounds: cheaper)"), "{text}");
    }

    /// A rung whose engine and parent both saturated the client is the load generator's, not a
    /// feature that helped; a saturated engine over a free parent it outran still is.
    #[test]
    fn features_leave_out_rungs_the_client_paced() {
        let helped = |parent_saturated: bool| {
            let rows = closed_rounds(
                &[
                    ("uring-multishot", 120_000.0, parent_saturated),
                    ("uring-defer", 200_000.0, true),
                ],
                12,
            );
            let document = document(rows);
            answer(&document, &studies(&document.results)).helped
        };
        assert!(helped(true).is_empty(), "{:?}", helped(true));
        let bound = helped(false);
        assert!(
            bound[0].starts_with("uring-defer over uring-multishot: 1.67× ["),
            "{bound:?}"
        );
    }

    /// A closed-loop echo row at 50 connections, its client saturated or not.
    fn closed_row(engine: &str, run: u32, rate: f64, saturated: bool) -> Row {
        use crate::report::equal_load::tests::point_row;
        let mut row = point_row(engine, rate, 3.0, 300);
        row.run = run;
        (row.offered_rate, row.client_late_share) = (None, None);
        row.params.remove(Param::P99BoundNs.key());
        row.client_saturated = Some(saturated);
        row
    }

    /// Where some engines saturated their client, the free ones are ranked among themselves
    /// and no winner is named among the saturated; blocking (one connection at a time) is not
    /// in a 50-connection line; without a sweep the text says none ran.
    #[test]
    fn free_engines_are_ranked_among_themselves_and_saturated_ones_named_apart() {
        let rows = closed_rounds(
            &[
                ("blocking", 20_000.0, false),
                ("epoll", 60_000.0, false),
                ("uring", 59_000.0, true),
                ("uring-defer", 66_000.0, false),
            ],
            12,
        );
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        let text = &answer.studies[0].1;
        assert!(
            text.starts_with(
                "the client was saturated in the closed-loop runs of uring, so those engines' \
                 throughputs rank the load generator"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "Among epoll and uring-defer: uring-defer reached 1.10× the messages/s of epoll (["
            ),
            "{text}"
        );
        assert!(!text.contains("blocking"), "{text}");
        assert!(
            text.ends_with(
                "No equal-load sweep ran at these connections (`--sweep` \
                 compares the servers at the same offered rates)."
            ),
            "{text}"
        );
    }

    /// A closed-loop echo row at `connections` whose server used `server` of its core and
    /// whose one load thread used `client` of its own.
    fn measured_row(engine: &str, run: u32, rate: f64, server: f64, client: f64) -> Row {
        let mut row = closed_row(engine, run, rate, client >= 0.9);
        row.server_cpu_utilisation = Some(server);
        row.params.put(Param::ClientThreads, json!(1));
        (row.client_cpu_user_s, row.client_cpu_sys_s) = (Some(client / 2.0), Some(client / 2.0));
        row
    }

    /// Goal: the first screen's network line divides by epoll, the readiness API io_uring
    /// replaces, though the echo table puts blocking first; blocking and threads join the line
    /// only at one connection. A server-bound closed loop (the server's core full, the load's
    /// threads free: a machine with cores to spare) ranks the servers and says so.
    #[test]
    fn the_network_line_names_epoll_as_the_denominator() {
        let line = |connections: u64, engines: &[(&str, f64)]| {
            let mut rows = Vec::new();
            for run in 1..=8 {
                let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
                for (engine, rate) in engines {
                    let mut row = measured_row(engine, run, rate * machine, 0.99, 0.33);
                    row.params.put(Param::Connections, json!(connections));
                    rows.push(row);
                }
            }
            let document = document(rows);
            answer(&document, &studies(&document.results)).studies[0]
                .1
                .clone()
        };
        let many = [
            ("blocking", 20_000.0),
            ("threads", 80_000.0),
            ("epoll", 150_000.0),
            ("uring-defer", 180_000.0),
        ];
        let text = line(50, &many);
        assert!(
            text.starts_with(
                "server-bound (server's cores ≥ 90% busy, the load's threads ≤ 80%: the closed \
                 loop ranks the servers): uring-defer reached 1.20× the messages/s of epoll (["
            ),
            "{text}"
        );
        assert!(
            !text.contains("blocking") && !text.contains("threads,"),
            "{text}"
        );
        let one = [
            ("blocking", 14_000.0),
            ("epoll", 13_000.0),
            ("uring-defer", 12_000.0),
        ];
        let text = line(1, &one);
        assert!(
            text.contains("blocking reached 1.08× the messages/s of epoll (["),
            "{text}"
        );
    }

    #[test]
    fn a_study_only_contenders_ran_says_so_instead_of_no_result() {
        let rows = vec![
            row("contender:node", 1, 100.0, 10),
            Row {
                verified: false,
                ..row("contender:go", 1, 100.0, 10)
            },
        ];
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(
            answer.studies[0].1,
            "only contenders ran this; 1 of 2 verified their data (their table below)."
        );
    }

    #[test]
    fn the_first_screen_names_decided_winners_features_and_caveats() {
        let mut rows = paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-fixed", 1100.0, 100),
                ("uring-defer", 2000.0, 10),
                ("uring-sqpoll", 500.0, 10),
            ],
            12,
        );
        for row in rows.iter_mut() {
            match row.engine.as_str() {
                "uring-defer" => (row.local_work_runs, row.cqes_posted) = (Some(50), Some(1000)),
                "uring-sqpoll" => (row.seconds, row.sqpoll_cpu_s) = (1.0, Some(0.9)),
                _ => {}
            }
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(answer.machine, "2 x AMD EPYC, Linux 6.18");
        let (title, finding) = &answer.studies[0];
        assert_eq!(title, "fs-write");
        assert!(
            finding.starts_with("uring-defer reached 2.00× the MB/s of blocking (["),
            "{finding}"
        );
        assert!(
            finding.ends_with(
                "12 rounds): it ran its completions when it asked for them, in 50 batches of \
                 DEFER_TASKRUN local work (20 CQEs each)."
            ),
            "{finding}"
        );
        assert_eq!(answer.winner("fs-write"), Some("uring-defer"));
        // Each feature over the engine it extends: both uring-defer and uring-sqpoll extend
        // uring-fixed, although uring-sqpoll sits below uring-defer in the table.
        // uring-fixed's parent and the rungs below it did not run: it is compared with the
        // baseline, and says which rungs it skipped.
        assert_eq!(answer.helped.len(), 2, "{:?}", answer.helped);
        assert!(
            answer.helped[0].starts_with(
                "uring-fixed over blocking via uring-ring, uring-batch, uring-single: "
            ) && answer.helped[1].starts_with("uring-defer over uring-fixed: 1.82× ["),
            "{:?}",
            answer.helped
        );
        assert_eq!(answer.hurt.len(), 1, "{:?}", answer.hurt);
        assert!(
            answer.hurt[0].starts_with("uring-sqpoll over uring-fixed: 0.46× [")
                && answer.hurt[0].ends_with(
                    "12 rounds in fs-write; in fs-write, its SQPOLL thread was on a CPU for 90% \
                     of the window, a core the rest of the work could not use."
                ),
            "{:?}",
            answer.hurt
        );
        assert_eq!(
            answer.caveats,
            ["running under SCHED_OTHER: other work can lower results"]
        );
    }

    /// An A/A study (`--engine blocking,blocking`) names no difference: the first screen says
    /// the two are equivalent, and no feature helped or hurt.
    #[test]
    fn a_second_copy_of_the_baseline_is_equivalent() {
        let rows = paired_rows(
            &[("blocking", 1000.0, 1000), ("blocking#2", 1000.0, 1000)],
            12,
        );
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert!(
            answer.studies[0].1.starts_with(
                "no engine differed from blocking by more than 10%: the fastest, blocking#2"
            ),
            "{:?}",
            answer.studies
        );
        assert!(answer.helped.is_empty() && answer.hurt.is_empty());
        assert!(answer.winners.is_empty());
    }

    #[test]
    fn every_ratio_in_the_first_screen_names_its_denominators_engine() {
        let rows = paired_rows(
            &[
                ("blocking", 1000.0, 10),
                ("uring-single", 700.0, 10),
                ("uring-batch", 1500.0, 10),
                ("uring-ring", 1600.0, 10),
                ("uring-fixed", 2400.0, 10),
                ("uring-defer", 3000.0, 10),
                ("uring-sqpoll", 1200.0, 10),
                ("uring-ring-fd", 3600.0, 10),
            ],
            16,
        );
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        let (_, finding) = &answer.studies[0];
        assert!(
            finding.starts_with("uring-ring-fd reached 3.60× the MB/s of blocking "),
            "{finding}"
        );
        let lines = answer.helped.iter().chain(&answer.hurt);
        let mut named = Vec::new();
        for line in lines {
            let (pair, _) = line.split_once(": ").expect("engine over parent: ratios");
            let (engine, parent) = pair
                .split_once(" over ")
                .expect("an engine over its parent");
            assert_eq!(
                Some(parent),
                crate::engines::parent_name("fs-write", engine),
                "{line}"
            );
            named.push(engine);
        }
        named.sort_unstable();
        assert_eq!(
            named,
            [
                "uring-batch",
                "uring-defer",
                "uring-fixed",
                "uring-ring",
                "uring-ring-fd",
                "uring-single",
                "uring-sqpoll"
            ]
        );
        assert!(answer
            .hurt
            .iter()
            .any(|l| l.starts_with("uring-sqpoll over uring-fixed: 0.50×")));
        assert!(answer
            .helped
            .iter()
            .any(|l| l.starts_with("uring-ring-fd over uring-defer: 1.20×")));
    }

    /// One round of twelve that did not verify (an HTTP window in which nothing completed) is
    /// left out of that engine's figures and comparisons, and said so; the engine is compared
    /// on its other eleven. Four of twelve are the engine's: it is not compared at all.
    #[test]
    fn one_unverified_round_is_left_out_and_more_leave_the_engine_out() {
        for (unverified_runs, compared) in [(vec![3], true), (vec![2, 5, 7, 9], false)] {
            let mut rows = paired_rows(
                &[("blocking", 1000.0, 1000), ("uring-ring", 2000.0, 10)],
                12,
            );
            for row in (rows.iter_mut())
                .filter(|row| row.engine == "uring-ring" && unverified_runs.contains(&row.run))
            {
                row.verified = false;
                row.ops_per_sec = 0.0;
                row.bytes_per_sec = 0.0;
                row.unverified_reason = Some("read back 0 of 1000 blocks".into());
            }
            let document = document(rows);
            let studies = studies(&document.results);
            let ring = (studies[0].measured().into_iter())
                .find(|engine| engine.engine == "uring-ring")
                .unwrap();
            assert_eq!(ring.verified, compared);
            let answer = answer(&document, &studies);
            let said = answer.studies[0].1.clone();
            assert_eq!(
                said.starts_with("uring-ring reached 2.00×"),
                compared,
                "{said}"
            );
            let left_out = "fs-write: did not verify, so left out: uring-ring's run 3 left out \
                            (run 3: read back 0 of 1000 blocks), compared on its other 11 rounds.";
            let not_compared = "fs-write: not verified or with errors, so not compared: \
                                uring-ring (run 2: read back 0 of 1000 blocks).";
            let expected = if compared { left_out } else { not_compared };
            assert!(
                answer.caveats.iter().any(|caveat| caveat == expected),
                "{:?}",
                answer.caveats
            );
        }
    }

    #[test]
    fn a_baseline_that_wins_and_too_few_rounds_are_said_plainly() {
        let mut rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 900.0, 10)], 12);
        let mut unverified = row("uring-single", 1, 10.0, 1000);
        unverified.verified = false;
        rows.push(unverified);
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert!(
            answer.studies[0].1.starts_with(
                "no engine beat blocking; the closest, uring-ring, reached 0.90× of its MB/s (["
            ),
            "{:?}",
            answer.studies
        );
        assert_eq!(answer.helped, Vec::<String>::new());
        assert!(
            answer.caveats.iter().any(|caveat| caveat.starts_with(
                "fs-write: not verified or with errors, so not compared: uring-single (run 1: "
            )),
            "{:?}",
            answer.caveats
        );
        let rows = paired_rows(&[("blocking", 1000.0, 1000), ("uring-ring", 900.0, 10)], 3);
        let short = super::tests::document(rows);
        let answer = super::answer(&short, &studies(&short.results));
        assert!(answer.studies[0]
            .1
            .starts_with("undecided: the fastest, uring-ring"));
        assert!(answer.caveats.contains(
            &"fewer than 6 rounds, too few to decide any comparison: fs-write.".to_string()
        ));
    }
}
