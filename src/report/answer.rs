//! The report's first screen: the answer to ringside's question on this machine, before any
//! table. The machine in one line; per study, the fastest engine and what it bought over the
//! baseline (with the run-to-run spread) and why; the io_uring features (the rungs of the
//! ladder, each engine over the engine it extends) that helped and those that hurt here, each
//! with its measured cause; and the caveats that bound every figure (among them the rungs that
//! have no ratio because their parent did not run). Every ratio names the engine it divides by. Everything is computed from the rows, with the verdicts' own rules.

use serde_json::Value;

use crate::report::causes::{client_saturation, first_cause, Direction, Subject};
use crate::report::environment::{machine_line, warnings};
use crate::report::equal_load::{equal_loads, matching, EqualLoad};
use crate::report::features::features;
use crate::report::ladder::{steps, Rung};
use crate::report::numbers::{ratio, throughput};
use crate::report::summary::{EngineSummary, Study};
use crate::row::Document;

/// The first screen, as sentences the Markdown and HTML reports lay out each in their way.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub machine: String,
    /// Per study: its title and what it found.
    pub studies: Vec<(String, String)>,
    pub helped: Vec<String>,
    pub hurt: Vec<String>,
    pub caveats: Vec<String>,
}

impl Answer {
    /// The lists under the studies: heading, items, and what to say when there are none.
    pub fn lists(&self) -> [(&'static str, &[String], &'static str); 3] {
        [
            (
                "Features that helped here (an engine over the engine it extends)",
                &self.helped,
                "none outside noise",
            ),
            ("Features that hurt here", &self.hurt, "none outside noise"),
            ("Caveats", &self.caveats, "none found"),
        ]
    }
}

pub fn answer(document: &Document, studies: &[Study]) -> Answer {
    let machine = document
        .env
        .pointer("/machine")
        .and_then(Value::as_str)
        .map_or_else(|| machine_line(&document.env), String::from);
    let (helped, hurt) = features(studies);
    let loads = equal_loads(&document.results);
    let mut answered: Vec<&EqualLoad> = Vec::new();
    let mut found: Vec<(String, String)> = Vec::new();
    for study in studies {
        let text = match client_paced(study, &loads) {
            Some((text, load)) => {
                answered.extend(load);
                text
            }
            None => finding(study, &compared(study)),
        };
        found.push((study.title.clone(), text));
    }
    for load in &loads {
        if !answered.iter().any(|known| std::ptr::eq(*known, load)) {
            found.push((format!("{} at equal load", load.title()), load.verdict()));
        }
    }
    Answer {
        machine,
        studies: found,
        helped,
        hurt,
        caveats: caveats(document, studies),
    }
}

/// A network study whose closed loop saturated the client for some engines: their throughputs
/// are the load generator's limit, so no winner is named among them and the equal-load verdict
/// of the same connections (when a sweep ran) speaks for them. The engines whose client kept
/// up are ranked among themselves, and against the saturated ones only where that holds
/// whatever the client's limit: every run of the slowest saturated engine outran every run of
/// the fastest free one, so each saturated engine served at least that much more. None when
/// no engine saturated its client.
fn client_paced<'a>(
    study: &Study,
    loads: &'a [EqualLoad],
) -> Option<(String, Option<&'a EqualLoad>)> {
    let engines = compared(study);
    let (saturated, free): (Vec<&EngineSummary>, Vec<&EngineSummary>) =
        (engines.iter()).partition(|engine| engine.figures.client_saturated);
    let slowest = (saturated.iter().copied())
        .min_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))?;
    let unit = study.unit();
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
               throughputs rank the load generator, not the servers"
            .to_string(),
        _ => format!(
            "the client was saturated in the closed-loop runs of {whom}, so those engines' \
             throughputs rank the load generator, not the servers, and none of them is named a \
             winner"
        ),
    };
    let fastest_free =
        (free.iter().copied()).max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median));
    if let Some(fastest) = fastest_free {
        if slowest.throughput.min > fastest.throughput.max {
            text.push_str(&format!(
                "; each still reached at least {} the {unit} of {} (the slowest, {}: {} vs {} \
                 {unit}, every run above every run of it, client not saturated)",
                ratio(slowest.throughput.median / fastest.throughput.median),
                fastest.engine,
                slowest.engine,
                throughput(study.headline, slowest.throughput.median),
                throughput(study.headline, fastest.throughput.median),
            ));
        }
    }
    text.push('.');
    if free.len() > 1 {
        text.push_str(&format!(
            " Among {}: {}",
            names(&free),
            finding(study, &free)
        ));
    }
    let param = |key: &str| study.params.get(key).and_then(Value::as_u64);
    let connections = param("connections");
    let load = matching(loads, &study.workload, connections, param("payload_bytes"));
    match load {
        Some(load) => text.push_str(&format!(" At equal load: {}", load.verdict())),
        None => text.push_str(
            " No equal-load sweep ran at these connections (`--sweep` compares the servers at \
             the same offered rates).",
        ),
    }
    Some((text, load))
}

/// The verified engines ringside measured: the first is the baseline.
fn compared(study: &Study) -> Vec<&EngineSummary> {
    study
        .measured()
        .into_iter()
        .filter(|engine| engine.verified)
        .collect()
}

/// "uring-link reached 4.10× the pages/s of blocking (3.80–4.50× across runs): fsyncs shared…",
/// over `engines` (verified, the first the baseline).
fn finding(study: &Study, engines: &[&EngineSummary]) -> String {
    if study.measured().is_empty() && !study.contenders.is_empty() {
        // E.g. `run`'s integrity stream, which only the contenders run: their table says more.
        let verified = study.contenders.iter().filter(|c| c.verified).count();
        return format!(
            "only contenders ran this; {verified} of {} verified their data (their table below).",
            study.contenders.len()
        );
    }
    let unit = study.unit();
    let [baseline, rest @ ..] = engines else {
        return "no engine's data was verified, so no result.".to_string();
    };
    let Some(best) = rest
        .iter()
        .copied()
        .max_by(|a, b| a.throughput.median.total_cmp(&b.throughput.median))
    else {
        return format!(
            "only {} ran: {} {unit}.",
            baseline.engine,
            throughput(study.headline, baseline.throughput.median)
        );
    };
    let rung = Rung::between(baseline, best);
    let spread = spread_text(&rung, best.runs.max(baseline.runs));
    let subject = Subject::new(best, baseline, &study.workload);
    if rung.ratio > 1.0 {
        let cause = first_cause(&subject, Direction::Helps)
            .map_or(String::new(), |cause| format!(": {cause}"));
        format!(
            "{} reached {} the {unit} of {} ({spread}){cause}.",
            best.engine,
            ratio(rung.ratio),
            baseline.engine
        )
    } else {
        let cause = first_cause(&subject, Direction::Hurts)
            .map_or(String::new(), |cause| format!(": {cause}"));
        format!(
            "no engine beat {} ({} {unit}); the closest, {}, reached {} of it ({spread}){cause}.",
            baseline.engine,
            throughput(study.headline, baseline.throughput.median),
            best.engine,
            ratio(rung.ratio)
        )
    }
}

/// "3.80–4.50× across runs", and whether the run ranges overlap; "one run each" without runs
/// to spread.
fn spread_text(rung: &Rung, runs: usize) -> String {
    if runs == 1 {
        return "one run each".to_string();
    }
    let noise = if rung.within_noise() {
        ", within noise"
    } else {
        ""
    };
    format!("{:.2}–{} across runs{noise}", rung.low, ratio(rung.high))
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
        let unverified: Vec<&str> = study
            .measured()
            .iter()
            .filter(|engine| !engine.verified)
            .map(|engine| engine.engine.as_str())
            .collect();
        if !unverified.is_empty() {
            caveats.push(format!(
                "{}: not verified or with errors, so not compared: {}.",
                study.title,
                unverified.join(", ")
            ));
        }
        let orphans: Vec<String> = steps(study)
            .into_iter()
            .filter_map(Result::err)
            .map(|none| none.text())
            .collect();
        if !orphans.is_empty() {
            caveats.push(format!("{}: {}.", study.title, orphans.join("; ")));
        }
    }
    let single: Vec<&str> = studies
        .iter()
        .filter(|study| study.runs() == 1)
        .map(|study| study.title.as_str())
        .collect();
    if !single.is_empty() {
        caveats.push(format!(
            "one run per engine, so no spread to judge noise by: {}.",
            single.join(", ")
        ));
    }
    caveats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::studies;
    use crate::report::summary::tests::row;
    use crate::row::Row;
    use serde_json::json;

    fn document(rows: Vec<Row>) -> Document {
        let env = json!({"machine": "2 x AMD EPYC, Linux 6.18",
                         "warnings": ["running under SCHED_OTHER: other work can lower results"]});
        Document::new(env, rows)
    }

    /// A closed loop that saturated its client in every engine's runs ranks the client: the
    /// first screen gives the equal-load verdict of the same connections instead of a winner.
    #[test]
    fn a_client_saturated_closed_loop_gets_the_equal_load_verdict() {
        use crate::report::equal_load::tests::point_row;
        let mut rows = vec![
            closed_row("epoll", 1, 100_000.0, true),
            closed_row("uring-defer", 1, 120_000.0, true),
            closed_row("epoll", 2, 101_000.0, true),
            closed_row("uring-defer", 2, 121_000.0, true),
        ];
        for (engine, cpu) in [("epoll", 6.0), ("uring-defer", 5.4)] {
            rows.push(point_row(engine, 50_000.0, cpu, 200));
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(answer.studies.len(), 1, "{:?}", answer.studies);
        let (title, text) = &answer.studies[0];
        assert_eq!(title, "echo");
        assert!(!text.contains("reached"), "no throughput winner: {text}");
        assert!(
            text.contains(
                "At equal load: at 50000 messages/s (the highest rate every engine \
                 held), uring-defer used 0.90× epoll's server CPU per message"
            ),
            "{text}"
        );
    }

    /// A rung whose engine and parent both saturated the client is the load generator's, not a
    /// feature that helped; a saturated engine over a free parent it outran still is.
    #[test]
    fn features_leave_out_rungs_the_client_paced() {
        let helped = |parent_saturated: bool| {
            let mut rows = Vec::new();
            for run in 1..=2 {
                let wobble = f64::from(run) * 100.0;
                rows.push(closed_row(
                    "uring-multishot",
                    run,
                    120_000.0 + wobble,
                    parent_saturated,
                ));
                rows.push(closed_row("uring-defer", run, 200_000.0 + wobble, true));
            }
            let document = document(rows);
            answer(&document, &studies(&document.results)).helped
        };
        assert!(helped(true).is_empty(), "{:?}", helped(true));
        let bound = helped(false);
        assert!(
            bound[0].starts_with("uring-defer over uring-multishot: 1.67×"),
            "{bound:?}"
        );
    }

    /// A closed-loop echo row at 50 connections, its client saturated or not.
    fn closed_row(engine: &str, run: u32, rate: f64, saturated: bool) -> Row {
        use crate::report::equal_load::tests::point_row;
        let mut row = point_row(engine, rate, 3.0, 300);
        row.run = run;
        (row.offered_rate, row.client_late_share) = (None, None);
        row.params.remove(crate::row::P99_BOUND_PARAM);
        row.client_saturated = Some(saturated);
        row
    }

    /// Echo at 50 connections as `run` measured it: blocking (a thread per connection) kept
    /// its client under the limit, every other engine saturated it. No winner is named among
    /// the saturated ones; blocking is compared with them only as a lower bound, since every
    /// run of the slowest of them outran every run of blocking.
    #[test]
    fn saturated_engines_are_set_apart_from_one_whose_client_kept_up() {
        use crate::report::equal_load::tests::point_row;
        let mut rows = Vec::new();
        for run in 1..=2 {
            let wobble = f64::from(run) * 100.0;
            rows.push(closed_row("blocking", run, 18_000.0 + wobble, false));
            rows.push(closed_row("epoll", run, 200_000.0 + wobble, true));
            rows.push(closed_row("uring-defer", run, 230_000.0 + wobble, true));
        }
        for (engine, cpu) in [("epoll", 6.0), ("uring-defer", 5.4)] {
            rows.push(point_row(engine, 50_000.0, cpu, 200));
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(answer.studies.len(), 1, "{:?}", answer.studies);
        let text = &answer.studies[0].1;
        assert!(
            !text.contains("reached 12"),
            "no winner among saturated: {text}"
        );
        assert!(
            text.starts_with(
                "the client was saturated in the closed-loop runs of every engine but \
                 blocking, so those engines' throughputs rank the load generator"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "each still reached at least 11.03× the messages/s of blocking (the slowest, \
                 epoll: "
            ),
            "{text}"
        );
        assert!(
            text.contains("At equal load: at 50000 messages/s (the highest rate every engine"),
            "{text}"
        );
    }

    /// Where a saturated engine's runs overlap a free engine's, no comparison across the two
    /// groups holds; the free engines are still ranked among themselves, and without a sweep
    /// the text says none ran.
    #[test]
    fn free_engines_are_ranked_among_themselves_and_overlap_is_not_compared() {
        let mut rows = Vec::new();
        for run in 1..=2 {
            let wobble = f64::from(run) * 1000.0;
            rows.push(closed_row("blocking", run, 20_000.0 + wobble, false));
            rows.push(closed_row("epoll", run, 60_000.0 + wobble, false));
            rows.push(closed_row("uring", run, 59_000.0 + 3.0 * wobble, true));
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        let text = &answer.studies[0].1;
        assert!(!text.contains("at least"), "overlapping runs: {text}");
        assert!(
            text.contains(
                "the closed-loop runs of uring, so those engines' throughputs rank the load \
                 generator"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "Among blocking and epoll: epoll reached 2.86× the messages/s of blocking"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                "No equal-load sweep ran at these connections (`--sweep` \
                 compares the servers at the same offered rates)."
            ),
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
    fn the_first_screen_names_winners_features_and_caveats() {
        let mut rows = Vec::new();
        for run in 1..=2 {
            let spread = f64::from(run) * 10.0;
            rows.push(row("blocking", run, 1000.0 + spread, 1000));
            rows.push(row("uring-fixed", run, 1100.0 + spread, 100));
            rows.push(Row {
                local_work_runs: Some(50),
                cqes_posted: Some(1000),
                ..row("uring-defer", run, 2000.0 + spread, 10)
            });
            rows.push(Row {
                seconds: 1.0,
                sqpoll_cpu_s: Some(0.9),
                ..row("uring-sqpoll", run, 500.0 + spread, 10)
            });
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(answer.machine, "2 x AMD EPYC, Linux 6.18");
        assert_eq!(
            answer.studies,
            [(
                "fs-write".to_string(),
                "uring-defer reached 1.99× the MB/s of blocking (1.97–2.00× across runs): it ran \
                 its completions when it asked for them, in 50 batches of DEFER_TASKRUN local \
                 work (20 CQEs each)."
                    .to_string()
            )]
        );
        // Each feature over the engine it extends: both uring-defer and uring-sqpoll extend
        // uring-fixed, although uring-sqpoll sits below uring-defer in the table.
        assert_eq!(answer.helped.len(), 1);
        assert!(
            answer.helped[0].starts_with("uring-defer over uring-fixed: 1.81× in fs-write; "),
            "{:?}",
            answer.helped
        );
        assert_eq!(
            answer.hurt,
            [
                "uring-sqpoll over uring-fixed: 0.46× in fs-write; in fs-write, its SQPOLL thread \
              was on a CPU for 90% of the window, a core the rest of the work could not use."
            ]
        );
        assert_eq!(
            answer.caveats,
            [
                "running under SCHED_OTHER: other work can lower results",
                "fs-write: uring-fixed: no ratio, its parent uring-ring did not run."
            ]
        );
    }

    #[test]
    fn every_ratio_in_the_first_screen_names_its_denominators_engine() {
        let mut rows = Vec::new();
        for run in 1..=3 {
            let wobble = f64::from(run);
            for (engine, mb_per_sec) in [
                ("blocking", 1000.0),
                ("uring-single", 700.0),
                ("uring-batch", 1500.0),
                ("uring-ring", 1600.0),
                ("uring-fixed", 2400.0),
                ("uring-defer", 3000.0),
                ("uring-sqpoll", 1200.0),
                ("uring-ring-fd", 3600.0),
            ] {
                rows.push(row(engine, run, mb_per_sec + wobble, 10));
            }
        }
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        let (_, finding) = &answer.studies[0];
        assert!(finding.starts_with("uring-ring-fd reached 3.59× the MB/s of blocking "));
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

    #[test]
    fn a_baseline_that_wins_and_a_single_run_are_said_plainly() {
        let mut unverified = row("uring-single", 1, 10.0, 1000);
        unverified.verified = false;
        let rows = vec![
            row("blocking", 1, 1000.0, 1000),
            row("uring-ring", 1, 900.0, 10),
            unverified,
        ];
        let document = document(rows);
        let answer = answer(&document, &studies(&document.results));
        assert_eq!(
            answer.studies[0].1,
            "no engine beat blocking (1000 MB/s); the closest, uring-ring, reached 0.90× of it \
             (one run each)."
        );
        assert_eq!(answer.helped, Vec::<String>::new());
        assert!(answer.caveats.contains(
            &"fs-write: not verified or with errors, so not compared: uring-single.".to_string()
        ));
        assert!(answer.caveats.contains(
            &"one run per engine, so no spread to judge noise by: fs-write.".to_string()
        ));
    }
}
