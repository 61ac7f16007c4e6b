//! The first screen, as data: per study its answer (who beat the baseline, tied engines named
//! as a tie, the regime said once), the features that made a decided difference, the caveats,
//! and the headline sentences the report opens with and the terminal ends with. Every sentence
//! here is built from decided comparisons of the one analysis, and names the interval and the
//! margin its words rest on.

use serde::Serialize;
use serde_json::Value;

use crate::analysis::causes::{first_cause, Direction, Subject};
use crate::analysis::environment::warnings;
use crate::analysis::plan::{self, line, Kind, Place, Question};
use crate::engines::nearest_ran;
use crate::model::comparison::Comparison;
use crate::model::drift::drift;
use crate::model::equal_load::EqualLoad;
use crate::model::ladder::{steps, DID_NOT_RUN};
use crate::model::regime::CellRegime;
use crate::model::study::{op_noun, Study};
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::model::sweep::{Sweep, Swept};
use crate::row::params::{Param, Params};
use crate::row::Document;
use crate::stats::rank::{Outcome, MIN_ROUNDS};
use crate::units::{format_count, format_size};

/// What a study (or an equal-load comparison without its closed-loop study) answered.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    /// The study's index in `Analysis::studies` (None for an equal-load comparison alone).
    pub study: Option<usize>,
    /// The equal-load comparison's index in `Analysis::loads`, where the answer gives it.
    pub load: Option<usize>,
    /// The study in words ("O_DIRECT 4 KiB writes"), and its title (the parameters).
    pub words: String,
    pub title: String,
    /// The answer, one or two sentences.
    pub text: String,
    /// The one engine decided faster than the baseline and than every other engine of the
    /// line: the only engine a chart stars. None on a tie.
    pub winner: Option<String>,
    /// Where the answer stands, for the headline.
    pub verdict: Verdict,
    /// The comparisons the answer rests on.
    pub comparisons: Vec<Comparison>,
    /// The engines that won, where some did: the leader's tie (a study's line) or those that
    /// used less server CPU (equal load).
    pub leaders: Vec<String>,
    /// The answer as a line of the first screen's table.
    pub summary: Summary,
}

/// An answer as the first screen's table says it: what wins, by how much, how sure.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub wins: String,
    pub by: String,
    pub sure: String,
}

impl Summary {
    /// The line of an answer from its verdict, leaders and decided comparisons: the leaders'
    /// largest decided difference, or the closest engine where the baseline stayed ahead, each
    /// with the interval and level it was decided at.
    fn of(answer: &Answer) -> Summary {
        let comparisons = &answer.comparisons;
        let effect = |c: &&Comparison| c.ratio.ln().abs();
        let reference = comparisons.first().map_or("", |c| c.reference.as_str());
        let sure =
            |c: &Comparison| format!("decided at {}: {}", c.confidence_text(), c.interval_text());
        let by = |c: &Comparison| {
            let said = format!("{:.2}× {} than {}", c.ratio, c.word(), c.reference);
            match c.metric {
                Metric::CpuPerOp => format!("{said} in server CPU at equal load"),
                _ => said,
            }
        };
        match answer.verdict {
            Verdict::Pays => {
                let best = (comparisons.iter())
                    .filter(|c| c.is_different() && c.better())
                    .filter(|c| answer.leaders.contains(&c.subject))
                    .max_by(|a, b| effect(a).total_cmp(&effect(b)));
                let tie = match (answer.winner.is_none(), answer.leaders.len()) {
                    (true, 2..) => " (tied)",
                    _ => "",
                };
                Summary {
                    wins: format!("{}{tie}", answer.leaders.join(", ")),
                    by: best.map_or_else(String::new, by),
                    sure: best.map_or_else(String::new, sure),
                }
            }
            Verdict::BaselineAhead => {
                let closest = comparisons
                    .iter()
                    .min_by(|a, b| effect(a).total_cmp(&effect(b)));
                Summary {
                    wins: format!("{reference} (the baseline)"),
                    by: closest.map_or_else(String::new, |c| {
                        format!("{}, the closest: {:.2}× {}", c.subject, c.ratio, c.word())
                    }),
                    sure: closest.map_or_else(String::new, sure),
                }
            }
            Verdict::NoDifference => {
                let all_equivalent = comparisons.iter().all(|c| c.outcome == Outcome::Equivalent);
                let level = comparisons.first().map_or_else(String::new, |c| {
                    format!(
                        "decided at {}, {}",
                        c.confidence_text(),
                        rounds_text(c.rounds)
                    )
                });
                Summary {
                    wins: "no engine".to_string(),
                    by: match all_equivalent {
                        true => format!("no difference beyond 3% from {reference}"),
                        false => format!("every engine within 10% of {reference}"),
                    } + match comparisons.first().map(|c| c.metric) {
                        Some(Metric::CpuPerOp) => " in server CPU at equal load",
                        _ => "",
                    },
                    sure: level,
                }
            }
            Verdict::Undecided => Summary {
                wins: "not told apart".to_string(),
                by: "—".to_string(),
                sure: (comparisons.iter())
                    .filter_map(|c| c.detectable)
                    .reduce(f64::min)
                    .map_or("undecided".to_string(), |share| {
                        format!(
                            "undecided: this run could tell apart differences beyond {:.0}%",
                            share * 100.0
                        )
                    }),
            },
            Verdict::Nothing => Summary {
                wins: "—".to_string(),
                by: "—".to_string(),
                sure: "not compared: its answer says why".to_string(),
            },
        }
    }
}

/// Where an answer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Some engine was decided better than the baseline.
    Pays,
    /// Every engine was decided worse than the baseline.
    BaselineAhead,
    /// Every engine was decided within the margin of the baseline (or within the equivalence
    /// margin, some of them).
    NoDifference,
    /// Not every comparison was decided, and none was decided better.
    Undecided,
    /// Nothing to compare (one engine, none verified, only contenders).
    Nothing,
}

/// A decided feature: a rung that helped or hurt, with the comparisons it rests on.
#[derive(Clone, Debug, Serialize)]
pub struct Feature {
    pub engine: String,
    pub parent: String,
    pub helped: bool,
    pub text: String,
    pub comparisons: Vec<Comparison>,
    /// The study of each comparison (its title), in the same order.
    pub studies: Vec<String>,
    /// The engines between `engine` and `parent` that did not run (the ratio covers them too).
    pub via: Vec<String>,
    /// The workload of the studies.
    pub workload: String,
    /// Each comparison's study in words, with its depth where the words lack it.
    pub places: Vec<String>,
}

/// The first screen.
#[derive(Clone, Debug, Serialize)]
pub struct Screen {
    /// How many comparisons the screen decided together.
    pub questions: usize,
    /// One or two sentences: the answer, from the decided statements only.
    pub headline: Vec<String>,
    pub answers: Vec<Answer>,
    /// Studies that only check integrity (only contenders ran them): below the answers.
    pub integrity: Vec<Answer>,
    pub helped: Vec<Feature>,
    pub hurt: Vec<Feature>,
    /// What to do about it: the decided features as settings to use or leave out, and where the
    /// baseline stayed ahead.
    pub settings: Vec<String>,
    pub caveats: Vec<String>,
}

impl Screen {
    pub fn of(
        document: &Document,
        studies: &[Study],
        regimes: &[Option<CellRegime>],
        loads: &[EqualLoad],
        asked: &[Question],
    ) -> Screen {
        let mut answers = Vec::new();
        let mut integrity = Vec::new();
        let mut answered_loads = Vec::new();
        for (index, (study, regime)) in studies.iter().zip(regimes).enumerate() {
            let load = matching_load(study, loads);
            answered_loads.extend(load);
            let answer = study_answer(index, study, regime.as_ref(), load.map(|i| (i, &loads[i])));
            match study.measured().is_empty() && !study.contenders.is_empty() {
                true => integrity.push(answer),
                false => answers.push(answer),
            }
        }
        for (index, load) in loads.iter().enumerate() {
            if !answered_loads.contains(&index) {
                answers.push(load_answer(index, load));
            }
        }
        let (helped, hurt) = features(studies, asked);
        Screen {
            questions: asked.len(),
            headline: headline(&answers),
            settings: settings(&helped, &hurt, &answers),
            answers,
            integrity,
            helped,
            hurt,
            caveats: caveats(document, studies),
        }
    }

    /// The engine starred in study `index`'s chart, if any.
    pub fn winner(&self, index: usize) -> Option<&str> {
        (self.answers.iter())
            .find(|answer| answer.study == Some(index))
            .and_then(|answer| answer.winner.as_deref())
    }

    /// The lists under the answers: heading, items, and what to say when there are none.
    pub fn lists(&self) -> [(&'static str, Vec<String>, &'static str); 4] {
        let texts = |features: &[Feature]| features.iter().map(|f| f.text.clone()).collect();
        [
            (
                "What to do about it",
                self.settings.clone(),
                "nothing decided to change",
            ),
            (
                "Features that made a decided difference (an engine over the engine it extends)",
                texts(&self.helped),
                "none decided",
            ),
            (
                "Features that cost (decided)",
                texts(&self.hurt),
                "none decided",
            ),
            ("Caveats", self.caveats.clone(), "none found"),
        ]
    }
}

/// A study in words, its parameters after: "O_DIRECT 4 KiB writes", "random 4 KiB reads at
/// queue depth 32", "the fsync page cycle", "echo, 50 connections, 64-byte messages".
pub fn words(study: &Study) -> String {
    words_except(study, &[])
}

/// A sweep's heading in words: its studies' words without the parameter it sweeps ("echo, 1
/// connection: against size").
pub fn sweep_words(sweep: &Sweep) -> String {
    let Some((_, first)) = sweep.points.first() else {
        return sweep.title.clone();
    };
    let mut left_out = sweep.swept.params().to_vec();
    if sweep.swept == Swept::Size {
        left_out.push(Param::BlockSize);
    }
    format!(
        "{}: against {}",
        words_except(first, &left_out),
        sweep.noun()
    )
}

/// `words`, saying nothing of the parameters `left_out`.
fn words_except(study: &Study, left_out: &[Param]) -> String {
    let param = |p: Param| {
        (!left_out.contains(&p))
            .then(|| study.params.param(p))
            .flatten()
    };
    let text = |p: Param| param(p).and_then(Value::as_str).map(str::to_string);
    let number = |p: Param| param(p).and_then(Value::as_u64);
    let size = |p: Param| {
        text(p).map(|t| {
            t.replace('k', " KiB")
                .replace('M', " MiB")
                .replace('G', " GiB")
        })
    };
    match study.workload.as_str() {
        "fs-write" => {
            let direct = param(Param::Direct).and_then(Value::as_bool) == Some(true);
            let block = size(Param::BlockSize).unwrap_or_default();
            let how = if direct { "O_DIRECT" } else { "buffered" };
            format!("{how} {block} writes").replace("  ", " ")
        }
        "fs-read" => {
            let depth =
                number(Param::Depth).map_or(String::new(), |d| format!(" at queue depth {d}"));
            let access = text(Param::Access).unwrap_or_else(|| "random".to_string());
            let block = size(Param::BlockSize).unwrap_or_default();
            format!("{access} {block} reads{depth}")
        }
        "fs-cycle" => "the fsync page cycle (write, fsync, read back)".to_string(),
        "echo" | "http" => {
            let connections = number(Param::Connections).unwrap_or(1);
            let plural = if connections == 1 { "" } else { "s" };
            let mut said = match study.workload.as_str() {
                "echo" => format!("echo, {connections} connection{plural}"),
                _ => format!("HTTP, {connections} connection{plural}"),
            };
            if let Some(bytes) = number(Param::PayloadBytes) {
                said.push_str(&format!(", {}-byte messages", format_count_bytes(bytes)));
            }
            if text(Param::Mode).as_deref() == Some("stream") {
                said.push_str(", streamed");
            }
            if let Some(threads) = number(Param::ServerThreads).filter(|&n| n > 1) {
                said.push_str(&format!(", {threads} server threads"));
            }
            said
        }
        _ => study.title.clone(),
    }
}

/// A study in words with its queue depth where the words lack it ("buffered 4 KiB writes at
/// depth 128"): the depth a decided rung was measured at.
fn place(study: &Study) -> String {
    let said = words(study);
    match study.params.param(Param::Depth).and_then(Value::as_u64) {
        Some(depth) if !said.contains("depth") => format!("{said} at depth {depth}"),
        _ => said,
    }
}

fn format_count_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 && b.is_multiple_of(1024) => format_size(b),
        b => b.to_string(),
    }
}

/// The equal-load comparison of a network study's connections (and payload), by index.
fn matching_load(study: &Study, loads: &[EqualLoad]) -> Option<usize> {
    let param = |key: Param| study.params.param(key).and_then(Value::as_u64);
    let load = crate::model::equal_load::matching(
        loads,
        &study.workload,
        param(Param::Connections),
        param(Param::PayloadBytes),
    )?;
    loads.iter().position(|known| std::ptr::eq(known, load))
}

/// The engine's name list as a sentence says it: "a", "a and b", "a, b and c".
pub fn names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [many @ .., last] => format!("{} and {last}", many.join(", ")),
    }
}

/// The answer of one study.
fn study_answer(
    index: usize,
    study: &Study,
    regime: Option<&CellRegime>,
    load: Option<(usize, &EqualLoad)>,
) -> Answer {
    let mut answer = Answer {
        study: Some(index),
        load: load.map(|(i, _)| i),
        words: words(study),
        title: study.title.clone(),
        text: String::new(),
        winner: None,
        verdict: Verdict::Nothing,
        comparisons: Vec::new(),
        leaders: Vec::new(),
        summary: Summary::default(),
    };
    if study.measured().is_empty() && !study.contenders.is_empty() {
        let verified = study.contenders.iter().filter(|c| c.verified).count();
        answer.text = format!(
            "only contenders ran this; {verified} of {} verified their data (their table is in \
             the study's section).",
            study.contenders.len()
        );
        answer.summary = Summary::of(&answer);
        return answer;
    }
    let mut text = regime.map_or(String::new(), |regime| format!("{}: ", regime.text()));
    if plan::ranks(regime) {
        line_answer(study, &mut answer, &mut text);
    } else {
        match load {
            Some((_, load)) => {
                let (said, verdict, comparisons, leaders) = load_text(load);
                text.push_str(&format!(
                    "at equal load, which compares the servers, {said}"
                ));
                answer.verdict = verdict;
                answer.comparisons = comparisons;
                answer.leaders = leaders;
            }
            None => text.push_str(
                "no equal-load sweep ran at these connections (`--sweep` compares the servers \
                 at the same offered rates).",
            ),
        }
    }
    answer.text = text;
    answer.summary = Summary::of(&answer);
    answer
}

/// What the study's line found, decided: the engines that beat the baseline (the leader's tie
/// named as a tie), or that none did.
fn line_answer(study: &Study, answer: &mut Answer, text: &mut String) {
    let engines = line(study);
    let unit = study.unit();
    let Some((baseline, rest)) = engines.split_first() else {
        text.push_str("no engine's data was verified, so no result.");
        return;
    };
    if rest.is_empty() {
        text.push_str(&format!(
            "only {} ran: {} {unit}.",
            baseline.engine,
            crate::analysis::numbers::throughput(study.headline, baseline.throughput.median)
        ));
        return;
    }
    let over = |engine: &EngineSummary| {
        study.decided(&engine.engine, &baseline.engine, Metric::Throughput)
    };
    let decided: Vec<(&EngineSummary, Comparison)> = (rest.iter())
        .filter_map(|engine| Some((*engine, over(engine)?)))
        .collect();
    answer.comparisons = decided.iter().map(|(_, c)| c.clone()).collect();
    let leader = plan::leader(study);
    // The leader's group: it and every line engine not decided slower than it.
    let tied: Vec<&str> = match leader {
        Some(leader) => (rest.iter())
            .filter(|engine| {
                engine.engine == leader.engine
                    || study
                        .decided(&engine.engine, &leader.engine, Metric::Throughput)
                        .is_none_or(|c| !c.is_different() || c.better())
            })
            .map(|engine| engine.engine.as_str())
            .collect(),
        None => Vec::new(),
    };
    let faster: Vec<&(&EngineSummary, Comparison)> = (decided.iter())
        .filter(|(_, c)| c.is_different() && c.better())
        .collect();
    let slower = (decided.iter()).filter(|(_, c)| c.is_different() && !c.better());
    let named = |group: &[&str]| -> (String, String) {
        let said: Vec<String> = (group.iter())
            .filter_map(|name| decided.iter().find(|(e, _)| e.engine == *name))
            .map(|(_, c)| c.verdict_text())
            .collect();
        (names(group), said.join("; "))
    };
    let cause = |engine: &str, direction| {
        let engine = rest.iter().find(|e| e.engine == engine)?;
        let subject = Subject::new(engine, baseline, &study.workload);
        first_cause(&subject, direction).map(|cause| format!(": {cause}"))
    };
    let base = &baseline.engine;
    if !faster.is_empty() {
        answer.verdict = Verdict::Pays;
        let group: Vec<&str> = (tied.iter().copied())
            .filter(|name| faster.iter().any(|(e, _)| e.engine == *name))
            .collect();
        let leader = leader.map_or("", |l| l.engine.as_str());
        let sole = group.len() == 1
            && (line(study).iter())
                .filter(|e| e.engine != leader)
                .all(|e| {
                    study
                        .decided(leader, &e.engine, Metric::Throughput)
                        .is_some_and(|c| c.is_different() && c.better())
                });
        let (who, said) = named(&group);
        let how = match (sole, group.len()) {
            (true, _) => format!("{who} beat {base} and every other engine"),
            (false, 1) => format!("{who} beat {base}, not told apart from the next engine"),
            (false, _) => format!("{who} (tied: not told apart) beat {base}"),
        };
        text.push_str(&format!(
            "{how}: {said} of its {unit}{}; {} of {} engines beat {base}.",
            cause(leader, Direction::Helps).unwrap_or_default(),
            faster.len(),
            rest.len()
        ));
        if sole {
            answer.winner = Some(leader.to_string());
        }
        answer.leaders = group.iter().map(|name| name.to_string()).collect();
        return;
    }
    let slower: Vec<&(&EngineSummary, Comparison)> = slower.collect();
    answer.verdict = if slower.len() == rest.len() {
        Verdict::BaselineAhead
    } else if decided.len() == rest.len() && decided.iter().all(|(_, c)| c.outcome.decided()) {
        Verdict::NoDifference
    } else {
        Verdict::Undecided
    };
    text.push_str(&format!(
        "no engine was shown faster than {base}: {}.",
        tally(
            &decided.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
            "slower"
        )
    ));
}

/// Comparisons against one reference that no engine won, in one fixed form whatever the
/// counts, so two runs that differ only in how many landed where read alike: "1 of 4 within 10%
/// of it (0 of them within 3%), 1 slower, 2 not told apart; this run could tell apart
/// differences beyond 8%" (the most sensitive comparison's reach; each interval is in the
/// study's section).
pub fn tally(comparisons: &[Comparison], worse: &str) -> String {
    let count = |outcome: Outcome| comparisons.iter().filter(|c| c.outcome == outcome).count();
    let (equivalent, within) = (count(Outcome::Equivalent), count(Outcome::Within));
    let worse_ones = (comparisons.iter()).filter(|c| c.is_different() && !c.better());
    // The most sensitive comparison's reach: the smallest difference any of them could decide.
    let reach = (comparisons.iter())
        .filter_map(|c| c.detectable)
        .reduce(f64::min)
        .map_or("too few rounds for an interval yet".to_string(), |share| {
            format!(
                "this run could tell apart differences beyond {:.0}%",
                share * 100.0
            )
        });
    format!(
        "{} of {} within 10% of it ({equivalent} of them within 3%), {} {worse}, {} not told \
         apart; {reach}",
        equivalent + within,
        comparisons.len(),
        worse_ones.count(),
        count(Outcome::Undecided)
    )
}

/// Comparisons against one reference grouped by what was decided: "uring and uring-defer: no
/// difference beyond 3% (0.99× [0.97–1.01]; …); uring-multishot slower (0.90× [0.85–0.95])".
pub fn zones(comparisons: &[Comparison]) -> String {
    // The order the groups are said in: decided better, decided worse, then the bounds.
    let rank = |c: &Comparison| match c.outcome {
        Outcome::Different if c.better() => 0,
        Outcome::Different => 1,
        Outcome::Equivalent => 2,
        Outcome::Within => 3,
        Outcome::Undecided => 4,
    };
    let mut said = Vec::new();
    for place in 0..5 {
        let group: Vec<&Comparison> = comparisons.iter().filter(|c| rank(c) == place).collect();
        let Some(first) = group.first() else {
            continue;
        };
        let who: Vec<&str> = group.iter().map(|c| c.subject.as_str()).collect();
        let figures: Vec<String> = group.iter().map(|c| c.ratio_text()).collect();
        let word = match first.outcome {
            Outcome::Undecided => {
                let detectable = (group.iter())
                    .filter_map(|c| c.detectable)
                    .fold(f64::NAN, f64::min);
                match detectable.is_finite() {
                    true => format!(
                        "undecided (this run could decide differences beyond {:.0}%)",
                        detectable * 100.0
                    ),
                    false => "undecided".to_string(),
                }
            }
            _ => first.word(),
        };
        said.push(format!("{} {word} ({})", names(&who), figures.join("; ")));
    }
    said.join("; ")
}

/// An equal-load comparison's verdict at its rate: (the sentence, where it stands, the
/// comparisons it rests on, the engines decided cheaper).
fn load_text(load: &EqualLoad) -> (String, Verdict, Vec<Comparison>, Vec<String>) {
    let noun = op_noun(&load.workload);
    let Some((rate, left_out)) = load.verdict_rate() else {
        return (
            format!("no offered rate was held by epoll and most engines, so no server CPU per {noun} is compared."),
            Verdict::Nothing,
            Vec::new(),
            Vec::new(),
        );
    };
    let comparisons: Vec<Comparison> = (load.comparisons().into_iter())
        .filter_map(|c| load.decided_as(&c.subject, &c.reference).cloned())
        .collect();
    if comparisons.is_empty() {
        return (
            format!(
                "at {} {noun}s/s only one engine held the rate.",
                format_count(rate)
            ),
            Verdict::Nothing,
            comparisons,
            Vec::new(),
        );
    }
    let verdict = if comparisons.iter().any(|c| c.is_different() && c.better()) {
        Verdict::Pays
    } else if comparisons.iter().all(|c| c.is_different()) {
        Verdict::BaselineAhead
    } else if comparisons.iter().all(|c| c.outcome.decided()) {
        Verdict::NoDifference
    } else {
        Verdict::Undecided
    };
    let reference = &comparisons[0].reference;
    let held = |c: &&Comparison| !left_out.iter().any(|(name, _)| *name == c.subject);
    let cheaper: Vec<&Comparison> = (comparisons.iter())
        .filter(held)
        .filter(|c| c.is_different() && c.better())
        .collect();
    let rest: Vec<Comparison> = (comparisons.iter())
        .filter(held)
        .filter(|c| !(c.is_different() && c.better()))
        .cloned()
        .collect();
    let rounds = comparisons.iter().map(|c| c.rounds).max().unwrap_or(0);
    let dropped = comparisons.len() - comparisons.iter().filter(held).count();
    let held_not = match dropped {
        0 => String::new(),
        n => format!(
            "; {n} of {} did not hold the rate: the section names them with the highest rate \
             each held",
            comparisons.len()
        ),
    };
    let at = format!(
        "at {} {noun}s/s ({}{held_not})",
        format_count(rate),
        rounds_text(rounds)
    );
    let leaders = cheaper.iter().map(|c| c.subject.clone()).collect();
    let said = match cheaper.as_slice() {
        [] => format!(
            "{at} no engine was shown to use less server CPU per {noun} than {reference}: {}.",
            tally(&rest, "costlier")
        ),
        _ => {
            let who: Vec<&str> = cheaper.iter().map(|c| c.subject.as_str()).collect();
            let figures: Vec<String> = cheaper.iter().map(|c| c.verdict_text()).collect();
            format!(
                "{at} {} used less server CPU per {noun} than {reference} ({}); of the others, \
                 {}.",
                names(&who),
                figures.join("; "),
                tally(&rest, "costlier")
            )
        }
    };
    (said, verdict, comparisons, leaders)
}

/// The answer of an equal-load comparison whose closed-loop study is not in the document.
fn load_answer(index: usize, load: &EqualLoad) -> Answer {
    let (text, verdict, comparisons, leaders) = load_text(load);
    let mut answer = Answer {
        study: None,
        load: Some(index),
        words: format!("{} at equal load", load.title()),
        title: format!("{} at equal load", load.title()),
        text,
        winner: None,
        verdict,
        comparisons,
        leaders,
        summary: Summary::default(),
    };
    answer.summary = Summary::of(&answer);
    answer
}

/// The decided features: each screen question of a rung (an engine over the nearest engine of
/// its line it extends) decided different, grouped across studies by feature and direction.
fn features(studies: &[Study], asked: &[Question]) -> (Vec<Feature>, Vec<Feature>) {
    let rungs: Vec<(usize, &Question, Vec<String>)> = (asked.iter())
        .filter_map(|question| {
            let Place::Study(index) = question.place else {
                return None;
            };
            let study = &studies[index];
            let c = &question.comparison;
            match question.kind {
                Kind::Rung => Some((index, question, question.via.clone())),
                Kind::OverBaseline => {
                    let names: Vec<&str> = line(study).iter().map(|e| e.engine.as_str()).collect();
                    let ran = |name: &str| names.contains(&name);
                    let (parent, via) = nearest_ran(&study.workload, &c.subject, &ran)?;
                    (parent == c.reference).then_some((index, question, via))
                }
                Kind::EqualLoad => None,
            }
        })
        .filter(|(_, question, _)| question.comparison.is_different())
        .collect();
    let mut helped: Vec<Feature> = Vec::new();
    let mut hurt: Vec<Feature> = Vec::new();
    for (index, question, via) in &rungs {
        let c = &question.comparison;
        let gained = c.better();
        let list = if gained { &mut helped } else { &mut hurt };
        if list
            .iter()
            .any(|f| f.engine == c.subject && f.parent == c.reference)
        {
            continue;
        }
        let same: Vec<&(usize, &Question, Vec<String>)> = (rungs.iter())
            .filter(|(_, q, _)| {
                q.comparison.subject == c.subject
                    && q.comparison.reference == c.reference
                    && q.comparison.better() == gained
            })
            .collect();
        let places: Vec<String> = (same.iter())
            .map(|(i, q, _)| format!("{} in {}", q.comparison.verdict_text(), words(&studies[*i])))
            .collect();
        let strongest = (same.iter())
            .max_by(|a, b| {
                let effect = |q: &Question| q.comparison.ratio.ln().abs();
                effect(a.1).total_cmp(&effect(b.1))
            })
            .map_or(*index, |(i, _, _)| *i);
        let study = &studies[strongest];
        let cause = (|| {
            let engine = study.engines.iter().find(|e| e.engine == c.subject)?;
            let parent = study.engines.iter().find(|e| e.engine == c.reference)?;
            let direction = if gained {
                Direction::Helps
            } else {
                Direction::Hurts
            };
            let subject = Subject::new(engine, parent, &study.workload);
            first_cause(&subject, direction).map(|cause| format!("; in {}, {cause}", words(study)))
        })();
        let parent = match via.as_slice() {
            [] => c.reference.clone(),
            via => format!("{} via {}", c.reference, via.join(", ")),
        };
        list.push(Feature {
            engine: c.subject.clone(),
            parent: c.reference.clone(),
            helped: gained,
            text: format!(
                "{} over {parent}: {}{}.",
                c.subject,
                places.join("; "),
                cause.unwrap_or_default()
            ),
            comparisons: same.iter().map(|(_, q, _)| q.comparison.clone()).collect(),
            studies: same
                .iter()
                .map(|(i, _, _)| studies[*i].title.clone())
                .collect(),
            via: via.clone(),
            workload: study.workload.clone(),
            places: same.iter().map(|(i, _, _)| place(&studies[*i])).collect(),
        });
    }
    (helped, hurt)
}

/// "at least 1.27× faster (1.44× [1.27–1.64] at 99.6%, past the 3% margin)", "slower by at least
/// 5% (…)": a decided difference by the end of its interval nearest no difference, and the
/// margin the whole interval cleared.
fn at_least(c: &Comparison) -> String {
    let (low, high) = (c.low.unwrap_or(c.ratio), c.high.unwrap_or(c.ratio));
    let bound = match c.ratio > 1.0 {
        true => format!("at least {low:.2}× {}", c.word()),
        false => format!("{} by at least {:.0}%", c.word(), (1.0 - high) * 100.0),
    };
    format!(
        "{bound} ({:.2}× [{low:.2}–{high:.2}] at {}, past the {:.0}% margin)",
        c.ratio,
        c.confidence_text(),
        c.metric.margin() * 100.0
    )
}

/// What to do about it, from decided comparisons only: each feature that helped as a setting to
/// use, each that cost as one to leave out (what the engine adds, in the engine table's words),
/// and where the baseline stayed ahead, the baseline to keep, each with how much at least.
fn settings(helped: &[Feature], hurt: &[Feature], answers: &[Answer]) -> Vec<String> {
    let mut said = Vec::new();
    for (verb, features) in [("Use", helped), ("Leave out", hurt)] {
        for feature in features {
            let names = feature.via.iter().rev().chain([&feature.engine]);
            let added: Vec<&str> = names
                .filter_map(|name| crate::engines::addition(&feature.workload, name))
                .collect();
            let places: Vec<String> = (feature.comparisons.iter().zip(&feature.places))
                .map(|(c, place)| format!("{} in {place}", at_least(c)))
                .collect();
            said.push(format!(
                "{verb} {} ({} over {}): {}.",
                added.join("; then "),
                feature.engine,
                feature.parent,
                places.join("; ")
            ));
        }
    }
    for answer in answers
        .iter()
        .filter(|a| a.verdict == Verdict::BaselineAhead)
    {
        let effect = |c: &&Comparison| c.ratio.ln().abs();
        let Some(closest) =
            (answer.comparisons.iter()).min_by(|a, b| effect(a).total_cmp(&effect(b)))
        else {
            continue;
        };
        said.push(format!(
            "Keep {} for {}: every other engine was decided {}; the closest, {}, {}.",
            closest.reference,
            answer.words,
            closest.word(),
            closest.subject,
            at_least(closest)
        ));
    }
    said
}

/// One or two sentences from the decided answers: where an engine beat the baseline (its best
/// decided ratio), where the baseline stayed ahead (the closest engine's), where every engine
/// was decided within the margins or behind it, and how many answers were not decided.
fn headline(answers: &[Answer]) -> Vec<String> {
    let listed = |verdict: Verdict| -> Vec<String> {
        (answers.iter())
            .filter(|answer| answer.verdict == verdict)
            .map(|answer| {
                let ratios = (answer.comparisons.iter())
                    .filter(|c| c.is_different() && (verdict != Verdict::Pays || c.better()))
                    .map(|c| c.ratio);
                match ratios.reduce(f64::max) {
                    Some(ratio) => format!("{} ({ratio:.2}×)", answer.words),
                    None => answer.words.clone(),
                }
            })
            .collect()
    };
    let joined = |items: &[String]| names(&items.iter().map(String::as_str).collect::<Vec<_>>());
    let mut clauses = Vec::new();
    let pays = listed(Verdict::Pays);
    if !pays.is_empty() {
        clauses.push(format!("an engine beat the baseline for {}", joined(&pays)));
    }
    let ahead = listed(Verdict::BaselineAhead);
    if !ahead.is_empty() {
        clauses.push(format!("the baseline stayed ahead for {}", joined(&ahead)));
    }
    // Decided, none better: each engine within the margins of the baseline or behind it.
    let none_beat: Vec<String> = (answers.iter())
        .filter(|answer| answer.verdict == Verdict::NoDifference)
        .map(|answer| answer.words.clone())
        .collect();
    if !none_beat.is_empty() {
        clauses.push(format!(
            "no engine beat the baseline for {}",
            joined(&none_beat)
        ));
    }
    let undecided = (answers.iter())
        .filter(|answer| answer.verdict == Verdict::Undecided)
        .count();
    let mut sentences = Vec::new();
    if !clauses.is_empty() {
        sentences.push(format!("On this machine {}.", clauses.join("; ")));
    }
    let each = "each says how small a difference this run could tell apart";
    match (undecided, clauses.is_empty()) {
        (0, _) => {}
        (1, true) => sentences.push(format!("The one answer was not decided ({each}).")),
        (n, true) => sentences.push(format!("None of the {n} answers was decided ({each}).")),
        (1, false) => sentences.push(format!("1 more answer was not decided ({each}).")),
        (n, false) => sentences.push(format!("{n} more answers were not decided ({each}).")),
    }
    sentences
}

/// "1 round", "8 rounds".
pub fn rounds_text(rounds: usize) -> String {
    match rounds {
        1 => "1 round".to_string(),
        n => format!("{n} rounds"),
    }
}

/// What bounds the figures: the probe's warnings, unverified engines, runs left out, drift,
/// rungs without a ratio, studies with too few rounds. (Each cell's regime is said once, in its
/// answer.)
fn caveats(document: &Document, studies: &[Study]) -> Vec<String> {
    let mut caveats = warnings(&document.env);
    for study in studies {
        let title = words(study);
        let unverified: Vec<String> = (study.measured().iter())
            .filter(|engine| !engine.verified)
            .map(|engine| match &engine.unverified {
                Some((run, reason)) => format!("{} (run {run}: {reason})", engine.engine),
                None => engine.engine.clone(),
            })
            .collect();
        if !unverified.is_empty() {
            caveats.push(format!(
                "{title}: not verified or with errors, so not compared: {}.",
                unverified.join("; ")
            ));
        }
        let left_out: Vec<String> = (study.measured().iter())
            .filter(|engine| engine.verified && !engine.left_out.is_empty())
            .filter_map(|engine| {
                let (run, reason) = engine.unverified.as_ref()?;
                let runs: Vec<String> = engine.left_out.iter().map(u32::to_string).collect();
                Some(format!(
                    "{}'s run {} left out (run {run}: {reason}), compared on its other {}",
                    engine.engine,
                    runs.join(", "),
                    rounds_text(engine.runs)
                ))
            })
            .collect();
        if !left_out.is_empty() {
            caveats.push(format!(
                "{title}: did not verify, so left out: {}.",
                left_out.join("; ")
            ));
        }
        if let Some(sentence) = drift_sentence(study) {
            caveats.push(format!("{title}: {sentence}"));
        }
        if let Some(sentence) = steal_sentence(study) {
            caveats.push(format!("{title}: {sentence}"));
        }
        let orphans: Vec<String> = (steps(study).into_iter().filter_map(Result::err))
            .filter(|none| none.why != DID_NOT_RUN)
            .map(|none| none.text())
            .collect();
        if !orphans.is_empty() {
            caveats.push(format!("{title}: {}.", orphans.join("; ")));
        }
    }
    let short: Vec<String> = (studies.iter())
        .filter(|study| !study.measured().is_empty() && study.rounds() < MIN_ROUNDS)
        .map(words)
        .collect();
    if !short.is_empty() {
        caveats.push(format!(
            "fewer than {MIN_ROUNDS} rounds, too few to decide any comparison: {}.",
            short.join("; ")
        ));
    }
    caveats
}

/// "The host took 13% of the measured cores' time …": said where the host's steal over the
/// study's windows exceeds the margin its throughput verdicts use, so a figure may have moved by
/// more than the difference the words are about (a quiet machine here: under 1%).
pub fn steal_sentence(study: &Study) -> Option<String> {
    let steal = study.host_steal?;
    let margin = Metric::Throughput.margin();
    (steal.share > margin).then(|| {
        format!(
            "the host took {:.0}% of the measured cores' time over the study's windows (steal; \
             {:.0}% in the worst), more than the {:.0}% margin of its verdicts: each round's \
             ratios divide out what hit both of its engines alike, its absolute figures do not.",
            steal.share * 100.0,
            steal.worst * 100.0,
            margin * 100.0
        )
    })
}

/// "Drift: blocking's MB/s moved during the study, …": the baseline's own figure jumped or
/// trended (`model::drift`).
pub fn drift_sentence(study: &Study) -> Option<String> {
    let baseline = study
        .measured()
        .into_iter()
        .find(|engine| engine.verified)?;
    let moved = drift(baseline, Metric::Throughput)?;
    let unit = study.unit();
    let text = moved.text(&unit, |value| {
        crate::analysis::numbers::throughput(study.headline, value)
    });
    Some(format!("Drift: {text}."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::model::study::tests::{paired_rows, row};
    use crate::row::Row;
    use serde_json::json;

    fn analysed(rows: Vec<Row>) -> Analysis {
        let env = json!({"machine": "2 x AMD EPYC, Linux 6.18",
                         "warnings": ["running under SCHED_OTHER: other work can lower results"]});
        Analysis::of(&Document::new(env, rows))
    }

    /// A closed-loop echo row at 50 connections in round `run`, its load saturated or not.
    fn closed_row(engine: &str, run: u32, rate: f64, saturated: bool) -> Row {
        use crate::model::equal_load::tests::point_row;
        let mut row = point_row(engine, rate, 3.0, 300);
        row.run = run;
        (row.offered_rate, row.client_late_share) = (None, None);
        row.params.remove(Param::P99BoundNs.key());
        row.client_saturated = Some(saturated);
        row.server_cpu_utilisation = Some(if saturated { 0.7 } else { 0.99 });
        row.params.put(Param::ClientThreads, json!(1));
        let client = if saturated { 0.99 } else { 0.4 };
        (row.client_cpu_user_s, row.client_cpu_sys_s) = (
            Some(client * row.seconds / 2.0),
            Some(client * row.seconds / 2.0),
        );
        row
    }

    /// `rounds` rounds of closed-loop echo rows; `saturated(engine, run)` says whether that
    /// run's load was saturated.
    fn closed_rounds(
        engines: &[(&str, f64)],
        rounds: u32,
        saturated: impl Fn(&str, u32) -> bool,
    ) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in 1..=rounds {
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
            for (index, (engine, rate)) in engines.iter().enumerate() {
                let own = 1.0 + 0.01 * (f64::from(run) * 2.3 + index as f64).cos();
                let busy = saturated(engine, run);
                rows.push(closed_row(engine, run, rate * machine * own, busy));
            }
        }
        rows
    }

    /// Goal: a cell whose load was saturated in most runs of every engine, or in some runs only,
    /// says so once, in one wording with its counts, names no throughput winner and gives the
    /// equal-load verdict of the same connections, decided from its rounds.
    #[test]
    fn a_client_bound_or_mixed_cell_gets_the_equal_load_verdict_and_no_winner() {
        use crate::model::equal_load::tests::rounds_at;
        for (all, class) in [(true, "client-bound"), (false, "mixed")] {
            let mut rows = closed_rounds(
                &[("epoll", 100_000.0), ("uring-defer", 150_000.0)],
                12,
                |_, run| all || run % 3 == 0,
            );
            rows.extend(rounds_at(
                &[("epoll", 6.0), ("uring-defer", 5.4)],
                50_000.0,
                8,
            ));
            let analysis = analysed(rows);
            assert_eq!(analysis.regime(0).map(|r| r.name()), Some(class));
            let answer = &analysis.screen.answers[0];
            assert!(
                answer
                    .text
                    .starts_with("the load generator was saturated in "),
                "{}",
                answer.text
            );
            assert!(!answer.text.contains("beat"), "{}", answer.text);
            assert!(answer.winner.is_none());
            assert!(
                answer.text.contains("at equal load, which compares the servers, at 50.0k messages/s (")
                    && answer.text.contains(") uring-defer used less server CPU per message than epoll (0.90× cheaper ["),
                "{}",
                answer.text
            );
            assert!(
                analysis.screen.helped.is_empty(),
                "{:?}",
                analysis.screen.helped
            );
        }
    }

    /// Goal: a study whose cores the host took more of than its verdicts' margin says so once,
    /// with the share; a quiet machine's tick of steal says nothing.
    #[test]
    fn a_study_the_host_took_cores_from_says_so() {
        let with_steal = |steal_s: f64| {
            let mut rows = closed_rounds(
                &[("epoll", 100_000.0), ("uring-defer", 150_000.0)],
                12,
                |_, _| false,
            );
            for row in &mut rows {
                // 0.13 s of each core's 1.5 s window, less the 10 ms tick: 8%.
                row.seconds = 1.5;
                (row.server_core_steal_s, row.client_core_steal_s) = (Some(steal_s), Some(steal_s));
            }
            // One window whose load core the host all but took: 54% of the two cores' time.
            rows[0].client_core_steal_s = Some(1.51);
            analysed(rows).screen.caveats
        };
        let caveats = with_steal(0.13);
        let said: Vec<&String> = caveats.iter().filter(|c| c.contains("(steal;")).collect();
        assert_eq!(said.len(), 1, "{caveats:?}");
        assert!(
            said[0].contains(
                "the host took 10% of the measured cores' time over the study's \
                 windows (steal; 54% in the worst), more than the 3% margin"
            ),
            "{}",
            said[0]
        );
        // A tick's steal in every window and the one bad window: 2% over the study.
        let quiet = with_steal(0.01);
        assert!(!quiet.iter().any(|c| c.contains("steal")), "{quiet:?}");
    }

    /// Goal: engines the comparisons cannot tell apart are named as a tie, and no engine is
    /// starred; a sole engine decided faster than the baseline and every other is starred.
    #[test]
    fn a_tie_is_named_as_a_tie_and_only_a_sole_winner_is_starred() {
        let tied = analysed(paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-batch", 9000.0, 10),
                ("uring-ring", 9050.0, 10),
            ],
            12,
        ));
        let answer = &tied.screen.answers[0];
        assert!(
            answer
                .text
                .starts_with("uring-batch and uring-ring (tied: not told apart) beat blocking: "),
            "{}",
            answer.text
        );
        assert!(answer.winner.is_none() && tied.screen.winner(0).is_none());
        let sole = analysed(paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-batch", 2000.0, 10),
                ("uring-ring", 4000.0, 10),
            ],
            12,
        ));
        let answer = &sole.screen.answers[0];
        assert!(
            answer
                .text
                .starts_with("uring-ring beat blocking and every other engine: 4.00× faster ["),
            "{}",
            answer.text
        );
        assert_eq!(sole.screen.winner(0), Some("uring-ring"));
    }

    /// Goal: no sentence calls an engine fastest when it is slower than the baseline, and the
    /// answer without a winner has one form whatever the counts.
    #[test]
    fn no_engine_slower_than_the_baseline_is_called_fastest() {
        let analysis = analysed(paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-ring", 900.0, 10),
                ("uring-defer", 700.0, 10),
            ],
            12,
        ));
        let text = &analysis.screen.answers[0].text;
        assert!(
            text.starts_with(
                "no engine was shown faster than blocking: 0 of 2 within 10% of it (0 of them \
                 within 3%), 2 slower, 0 not told apart; this run could tell apart differences \
                 beyond "
            ),
            "{text}"
        );
        assert!(!text.contains("fastest"), "{text}");
        assert_eq!(analysis.screen.answers[0].verdict, Verdict::BaselineAhead);
        assert_eq!(
            analysis.screen.headline,
            ["On this machine the baseline stayed ahead for buffered writes (0.90×)."]
        );
    }

    /// Goal: what to do about it turns each decided feature into a setting in the engine
    /// table's words, with how much it bought at least and the margin its interval cleared; where
    /// the baseline stayed ahead it says to keep the baseline; an undecided rung is no setting.
    /// The first screen's table says what wins, by how much and how sure.
    #[test]
    fn what_to_do_turns_decided_features_into_settings() {
        let analysis = analysed(paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-single", 300.0, 1000),
                ("uring-batch", 600.0, 10),
                ("uring-ring", 603.0, 10),
            ],
            12,
        ));
        let settings = &analysis.screen.settings;
        let said = |start: &str, inside: &str| {
            settings
                .iter()
                .any(|s| s.starts_with(start) && s.contains(inside))
        };
        assert!(
            said(
                "Use batches: fill --depth SQEs, submit, wait for all, repeat (uring-batch over \
                 uring-single): at least ",
                "× faster (2.00× ["
            ),
            "{settings:?}"
        );
        assert!(
            said(
                "Leave out blocking's one operation at a time through io_uring",
                "(uring-single over blocking): slower by at least "
            ),
            "{settings:?}"
        );
        assert!(
            said(
                "Keep blocking for buffered writes: every other engine was decided slower; the \
                 closest, uring-",
                "past the 3% margin)."
            ),
            "{settings:?}"
        );
        assert!(
            settings.iter().all(|s| !s.contains("(uring-ring over")),
            "{settings:?}"
        );
        let summary = &analysis.screen.answers[0].summary;
        assert_eq!(summary.wins, "blocking (the baseline)");
        assert!(
            summary.by.contains(", the closest: 0.60× slower"),
            "{summary:?}"
        );
        assert!(summary.sure.starts_with("decided at 9"), "{summary:?}");
    }

    /// Goal: an A/A copy calibrates and answers nothing: it is not in the line, the screen or
    /// the features, and its comparison with its engine is decided in the section.
    #[test]
    fn a_second_copy_of_the_baseline_is_not_an_answer() {
        let analysis = analysed(paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("blocking#2", 1000.0, 1000),
                ("uring-ring", 2000.0, 10),
            ],
            12,
        ));
        let answer = &analysis.screen.answers[0];
        assert!(!answer.text.contains("blocking#2"), "{}", answer.text);
        assert!(
            answer.text.contains("; 1 of 1 engines beat blocking."),
            "{}",
            answer.text
        );
        let copy = analysis.studies[0].decided("blocking#2", "blocking", Metric::Throughput);
        let copy = copy.expect("decided in the section");
        assert_eq!(copy.family_size, 1);
        assert_eq!(copy.outcome, Outcome::Equivalent, "{copy:?}");
    }

    /// Goal: every comparison is decided once: no study holds two decisions of one pair on one
    /// metric, so no page can print two intervals for it; the screen's questions are decided
    /// with the study's family size, the rest each on its own.
    #[test]
    fn every_comparison_is_decided_once() {
        let mut rows = paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-single", 300.0, 1000),
                ("uring-batch", 1010.0, 10),
                ("uring-ring", 1500.0, 10),
                ("uring-fixed", 1520.0, 10),
            ],
            12,
        );
        rows.push(row("uring-defer", 1, 10.0, 10));
        let analysis = analysed(rows);
        for study in &analysis.studies {
            for (index, one) in study.decided.iter().enumerate() {
                let twice = study.decided[index + 1..].iter().any(|other| {
                    other.metric == one.metric
                        && ((other.subject == one.subject && other.reference == one.reference)
                            || (other.subject == one.reference && other.reference == one.subject))
                });
                assert!(
                    !twice,
                    "decided twice: {} over {} ({:?})",
                    one.subject, one.reference, one.metric
                );
            }
        }
        let screen: Vec<&Comparison> = (analysis.studies[0].decided.iter())
            .filter(|c| c.family_size > 1)
            .collect();
        assert!(
            screen.iter().all(|c| c.family_size == screen.len()),
            "{screen:?}"
        );
        assert!(screen.iter().all(|c| c.metric == Metric::Throughput));
    }
}
