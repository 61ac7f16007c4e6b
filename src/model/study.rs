//! Rows become studies: one study per workload and shared parameter set, one summary per engine
//! in the order the engines ran. Nothing here knows a workload by name except to pick its
//! headline metric and the noun of one operation, so echo and http rows summarise like file
//! rows do.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::engines::{engines_of, nearest_ran, Workload};
use crate::model::comparison::{decide, Comparison, Family, Judging};
use crate::model::regime::{CellRegime, Regime};
use crate::model::summary::{EngineSummary, Headline, Metric};
use crate::row::is_equal_load_row;
use crate::row::params::{Param, Params, CLAIM_PARAM};
use crate::row::{surely_stolen, Row};
use crate::stats::params_text;

/// What one operation of a workload is called in sentences ("syscalls per write").
pub fn op_noun(workload: &str) -> &'static str {
    match workload {
        "fs-write" => "write",
        "fs-cycle" => "page",
        "fs-read" => "read",
        "echo" => "message",
        "http" => "request",
        _ => "op",
    }
}

/// "1 run", "3 runs": the count every median states.
pub fn runs_text(runs: usize) -> String {
    if runs == 1 {
        "1 run".to_string()
    } else {
        format!("{runs} runs")
    }
}

/// Where an engine sorts in a study of `workload`: its place among the workload's engines in
/// the engine table, then its copy number.
pub fn table_rank(workload: &str, name: &str) -> (usize, u32) {
    let (base, copy) = match name.split_once('#') {
        Some((base, copy)) => (base, copy.parse().unwrap_or(u32::MAX)),
        None => (name, 1),
    };
    let row = (Workload::ALL.iter())
        .find(|known| known.name() == workload)
        .and_then(|&known| engines_of(known).position(|engine| engine.name == base))
        .unwrap_or(usize::MAX);
    (row, copy)
}

/// Whether an engine name is a contender's (`contender:NAME`, any server program measured
/// beside ringside's engines).
pub fn is_contender(engine: &str) -> bool {
    engine.starts_with(CONTENDER_PREFIX)
}

/// Whether `workload` is a network workload (its rows a server's under a load generator).
pub fn is_network(workload: &str) -> bool {
    (Workload::ALL.iter()).any(|known| known.is_network() && known.name() == workload)
}

/// Whether a network study's first-screen line compares `engine` at `connections`: at one
/// connection every engine; at more only those with event loops, the API io_uring replaces and
/// its rungs (`blocking` serves one connection at a time, `threads` a thread each: both stay in
/// the tables). Engines the table does not know (a copy's label aside) are kept.
pub fn in_network_line(workload: &str, engine: &str, connections: u64) -> bool {
    connections <= 1
        || crate::engines::serving_of(workload, engine)
            .is_none_or(|serving| serving == crate::engines::Serving::EventLoops)
}

/// What a contender's rows put before its name in `engine`.
pub const CONTENDER_PREFIX: &str = "contender:";

/// One table of the report: a workload at one parameter set, every engine that ran it.
#[derive(Clone, Debug)]
pub struct Study {
    pub workload: String,
    /// The workload, plus the parameters that tell this study apart from the other studies of
    /// the same workload: "fs-write (block_size=1M)".
    pub title: String,
    pub params: Map<String, Value>,
    pub headline: Headline,
    /// ringside's engines and the controls beside them, in table order.
    pub engines: Vec<EngineSummary>,
    /// The contenders measured beside the engines (`--contender`), with their own table.
    pub contenders: Vec<EngineSummary>,
    /// Sentences qualifying some run of the study, each once.
    pub notes: Vec<String>,
    /// The rounds after which the study looked at its comparisons (`--runs auto`), the last its
    /// budget; empty when its rounds were fixed (one look, at the end).
    pub looks: Vec<u32>,
    /// How its comparisons are judged: at its looks, with the noise between blocks its
    /// document's comparisons showed.
    pub judging: Judging,
    /// Every comparison of the study, decided once by the analysis (`analysis::Analysis`): what
    /// each view reads instead of deciding again. Empty until analysed.
    pub decided: Vec<Comparison>,
    /// What the host took from the measured cores over the study's windows, where its rows
    /// measured it.
    pub host_steal: Option<HostSteal>,
}

/// The share of the measured cores' time the host surely took (steal, `row::surely_stolen`)
/// over a study's windows: the server's and the load's cores of its network rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSteal {
    /// Over all the study's windows.
    pub share: f64,
    /// In its worst window.
    pub worst: f64,
}

impl HostSteal {
    fn of(rows: &[&Row]) -> Option<HostSteal> {
        let (mut stolen, mut time, mut worst) = (0.0, 0.0, 0.0f64);
        for row in rows.iter().filter(|row| row.seconds > 0.0) {
            let cores: Vec<f64> = [row.server_core_steal_s, row.client_core_steal_s]
                .into_iter()
                .flatten()
                .map(surely_stolen)
                .collect();
            if cores.is_empty() {
                continue;
            }
            let (taken, window) = (cores.iter().sum::<f64>(), cores.len() as f64 * row.seconds);
            stolen += taken;
            time += window;
            worst = worst.max(taken / window);
        }
        (time > 0.0).then(|| HostSteal {
            share: stolen / time,
            worst,
        })
    }
}

impl Study {
    /// The engines ringside measured itself, in table order (the controls left out).
    pub fn measured(&self) -> Vec<&EngineSummary> {
        self.engines
            .iter()
            .filter(|engine| !engine.control)
            .collect()
    }

    pub fn controls(&self) -> Vec<&EngineSummary> {
        self.engines
            .iter()
            .filter(|engine| engine.control)
            .collect()
    }

    pub fn params_text(&self) -> String {
        params_text(&self.params)
    }

    /// The headline's unit: MB/s for bytes, the workload's operations per second otherwise
    /// ("pages/s", "messages/s").
    pub fn unit(&self) -> String {
        match self.headline {
            Headline::BytesPerSec => "MB/s".to_string(),
            Headline::OpsPerSec => format!("{}s/s", op_noun(&self.workload)),
        }
    }

    pub fn has_latency(&self) -> bool {
        self.engines
            .iter()
            .any(|engine| engine.latency_us.is_some())
    }

    /// Most runs any engine or contender had: what the charts' "median of N runs" states.
    pub fn runs(&self) -> usize {
        self.engines
            .iter()
            .chain(&self.contenders)
            .map(|engine| engine.runs)
            .max()
            .unwrap_or(0)
    }

    /// The rounds measured: the distinct runs any engine ringside measured has a row for.
    pub fn rounds(&self) -> usize {
        let mut runs: Vec<u32> = (self.measured().into_iter())
            .flat_map(|engine| engine.rounds.iter().map(|round| round.run))
            .collect();
        runs.sort_unstable();
        runs.dedup();
        runs.len()
    }

    /// The comparison of `subject` over `reference` on `metric` as the analysis decided it (turned
    /// round when it was decided the other way); None when the analysis made none.
    pub fn decided(&self, subject: &str, reference: &str, metric: Metric) -> Option<Comparison> {
        let same = |c: &&Comparison, a: &str, b: &str| {
            c.metric == metric && c.subject == a && c.reference == b
        };
        let found = self.decided.iter().find(|c| same(c, subject, reference));
        match found {
            Some(comparison) => Some(comparison.clone()),
            None => (self.decided.iter())
                .find(|c| same(c, reference, subject))
                .map(Comparison::inverse),
        }
    }

    /// Which side set the pace of the study's closed loop, from its compared engines' runs; None
    /// for a study whose rows do not measure both sides (files, open loops).
    pub fn regime(&self) -> Option<CellRegime> {
        let runs: Vec<Vec<Regime>> = (self.measured().into_iter())
            .filter(|engine| engine.verified && !engine.engine.contains('#'))
            .filter(|engine| {
                let connections = self
                    .params
                    .param(Param::Connections)
                    .and_then(Value::as_u64);
                in_network_line(&self.workload, &engine.engine, connections.unwrap_or(1))
            })
            .map(|engine| {
                engine
                    .rounds
                    .iter()
                    .filter_map(|round| round.regime)
                    .collect()
            })
            .collect();
        CellRegime::of(&runs)
    }

    /// The load model when the rows say it (`params.mode`: closed or open loop).
    pub fn mode(&self) -> Option<&str> {
        self.params.param(Param::Mode).and_then(Value::as_str)
    }
}

/// What makes a study: its workload and its parameters without the control marker and the
/// settings an engine chose for itself (its io-wq and SQPOLL threads), which differ by engine.
pub type StudyKey = (String, Map<String, Value>);

/// The study a row belongs to.
pub fn study_key(row: &Row) -> StudyKey {
    let mut params = row.params.clone();
    params.remove(Param::Control.key());
    params.retain(|key, _| !crate::row::is_engine_setting(key));
    (row.workload.clone(), params)
}

/// Groups rows into studies, studies and engines each in the order they first appeared. The
/// equal-load rows (open loop, a sweep's probes) are compared apart (`equal_load`): at equal
/// rates throughput ranks nothing.
/// Each row is placed through a map keyed by its study key's text, so a document of n rows
/// (from any host) groups in O(n log n), never n².
pub fn studies(rows: &[Row]) -> Vec<Study> {
    let mut keyed: Vec<(StudyKey, Vec<&Row>)> = Vec::new();
    let mut index_of: HashMap<String, usize> = HashMap::new();
    // Attribution rounds ran with costly instruments on: their figures are never compared.
    for row in (rows.iter()).filter(|row| !is_equal_load_row(row) && !row.is_attribution()) {
        let key = study_key(row);
        let index = *index_of.entry(key_text(&key)).or_insert(keyed.len());
        match keyed.get_mut(index) {
            Some((_, members)) => members.push(row),
            None => keyed.push((key, vec![row])),
        }
    }
    let mut studies: Vec<Study> = keyed
        .into_iter()
        .map(|((workload, params), members)| study(workload, params, &members))
        .collect();
    let shared = SharedParams::of(&studies);
    let titles: Vec<String> = studies.iter().map(|one| title(one, &shared)).collect();
    for (study, title) in studies.iter_mut().zip(titles) {
        study.title = title;
    }
    // The noise between blocks is pooled over every study's engines against its baseline:
    // over the whole document, or, in a claims document, over each claim's experiment (each ran
    // at its own time, and `claims run` judges it on its own rows as it ends, so the report and
    // `claims merge` of the same rows decide as it did; pooled over the whole document, one test
    // of 35 was "inconclusive" in one view and "reversed" in the other).
    let experiment = |study: &Study| study.params.get(CLAIM_PARAM).cloned();
    let mut experiments: Vec<Option<Value>> = Vec::new();
    for study in &studies {
        if !experiments.contains(&experiment(study)) {
            experiments.push(experiment(study));
        }
    }
    for one in experiments {
        let pairs = (studies.iter())
            .filter(|study| experiment(study) == one)
            .flat_map(baseline_pairs);
        let judging = Judging::pooled(Vec::new(), pairs);
        for study in studies.iter_mut().filter(|study| experiment(study) == one) {
            study.judging = judging.at(study.looks.clone());
        }
    }
    studies
}

/// Each verified engine of `study` with the study's baseline (its first verified engine).
fn baseline_pairs(study: &Study) -> Vec<(&EngineSummary, &EngineSummary)> {
    let engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .collect();
    match engines.split_first() {
        Some((baseline, rest)) => rest.iter().map(|engine| (*engine, *baseline)).collect(),
        None => Vec::new(),
    }
}

/// A study key as text, equal exactly when the keys are equal: what maps group studies by.
pub fn key_text((workload, params): &StudyKey) -> String {
    let params = Value::Object(params.clone());
    canonical(&Value::from(vec![Value::from(workload.as_str()), params]))
}

/// A value's text with every object's keys sorted, so equal values (which compare as maps,
/// whatever their order) have equal text.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by_key(|(key, _)| *key);
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// How many studies each workload has, and how many of them have each parameter at each value:
/// a parameter tells a study apart when fewer of its workload's studies share it than there are.
struct SharedParams {
    studies: HashMap<String, usize>,
    sharing: HashMap<(String, String, String), usize>,
}

impl SharedParams {
    fn of(studies: &[Study]) -> SharedParams {
        let mut shared = SharedParams {
            studies: HashMap::new(),
            sharing: HashMap::new(),
        };
        for study in studies {
            *shared.studies.entry(study.workload.clone()).or_default() += 1;
            for (key, value) in &study.params {
                let param = (study.workload.clone(), key.clone(), canonical(value));
                *shared.sharing.entry(param).or_default() += 1;
            }
        }
        shared
    }

    fn differs(&self, workload: &str, key: &str, value: &Value) -> bool {
        let param = (workload.to_string(), key.to_string(), canonical(value));
        let sharing = self.sharing.get(&param).copied().unwrap_or(0);
        sharing < self.studies.get(workload).copied().unwrap_or(0)
    }
}

fn title(study: &Study, shared: &SharedParams) -> String {
    let differing: Map<String, Value> = study
        .params
        .iter()
        .filter(|(key, value)| shared.differs(&study.workload, key, value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if differing.is_empty() {
        study.workload.clone()
    } else {
        format!("{} ({})", study.workload, params_text(&differing))
    }
}

fn study(workload: String, params: Map<String, Value>, rows: &[&Row]) -> Study {
    let headline = Headline::for_workload(&workload);
    let mut engines: Vec<(&str, Vec<&Row>)> = Vec::new();
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    for row in rows {
        let index = *index_of.entry(&row.engine).or_insert(engines.len());
        match engines.get_mut(index) {
            Some((_, runs)) => runs.push(row),
            None => engines.push((&row.engine, vec![row])),
        }
    }
    // Rounds run in random orders, so the rows' order says nothing: the table's order does
    // (the baseline first), a copy (`epoll#2`) after its engine, anything else after them in
    // the order it came.
    engines.sort_by_key(|(name, _)| table_rank(&workload, name));
    let mut seen: HashSet<&String> = HashSet::new();
    let notes: Vec<String> = (rows.iter().flat_map(|row| row.notes.iter()))
        .filter(|note| seen.insert(note))
        .cloned()
        .collect();
    let (contenders, engines): (Vec<EngineSummary>, Vec<EngineSummary>) = engines
        .iter()
        .map(|(name, runs)| EngineSummary::of(name, runs, headline))
        .partition(|summary| is_contender(&summary.engine));
    let looks = rows
        .iter()
        .find_map(|row| row.looks.clone())
        .unwrap_or_default();
    Study {
        host_steal: HostSteal::of(rows),
        engines,
        contenders,
        judging: Judging::default(),
        looks,
        decided: Vec::new(),
        title: workload.clone(),
        workload,
        params,
        headline,
        notes,
    }
}

/// Every comparison the study's verdicts rest on, on `metric`: each verified engine against the
/// study's baseline (its first verified engine), and each rung against the engine it extends.
pub fn study_comparisons(study: &Study, metric: Metric) -> Vec<Comparison> {
    let judging = &study.judging;
    let engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .collect();
    let mut comparisons = Vec::new();
    let Some((baseline, rest)) = engines.split_first() else {
        return comparisons;
    };
    for engine in rest {
        comparisons.push(Comparison::paired(engine, baseline, metric, judging));
    }
    let ran = |name: &str| engines.iter().any(|e| e.engine == name);
    for engine in &engines {
        let nearest = nearest_ran(&study.workload, &engine.engine, &ran);
        let Some((parent, _)) = nearest else {
            continue;
        };
        if parent == baseline.engine {
            continue;
        }
        if let Some(parent) = engines.iter().find(|e| e.engine == parent) {
            comparisons.push(Comparison::paired(engine, parent, metric, judging));
        }
    }
    comparisons
}

/// The comparisons of a study's table on `metric`: as the analysis decided them, or, for a study
/// not analysed yet (a study deciding whether to stop), `study_comparisons` each on its own.
pub fn table_comparisons(study: &Study, metric: Metric) -> Vec<Comparison> {
    if !study.decided.is_empty() {
        // Analysed: what the analysis decided, never a second decision.
        return (study.decided.iter())
            .filter(|c| c.metric == metric)
            .cloned()
            .collect();
    }
    let mut comparisons = study_comparisons(study, metric);
    decide(&mut comparisons, Family::Each);
    comparisons
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::row::SyscallSource;

    /// A verified fs-write row: `mb_per_sec` MB/s, 1000 writes, `syscalls` counted by the kernel.
    pub fn row(engine: &str, run: u32, mb_per_sec: f64, syscalls: u64) -> Row {
        let mut params = Map::new();
        params.put(Param::Size, "64M");
        Row {
            workload: "fs-write".into(),
            engine: engine.into(),
            params,
            run,
            ops: 1000,
            bytes_per_sec: mb_per_sec * 1e6,
            ops_per_sec: mb_per_sec * 1e6 / 4096.0,
            syscalls,
            syscalls_source: SyscallSource::Kernel,
            cpu_sys_s: 0.001,
            verified: true,
            ..Row::default()
        }
    }

    /// `rounds` rounds of fs-write rows, each engine at its MB/s and syscalls per write: the
    /// machine moves every engine of a round together (±20%), each engine moves on its own by
    /// ±1%, so a paired comparison sees the engines' ratios and little else.
    pub fn paired_rows(engines: &[(&str, f64, u64)], rounds: u32) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in 1..=rounds {
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
            for (index, (engine, mb_per_sec, syscalls)) in engines.iter().enumerate() {
                let own = 1.0 + 0.01 * (f64::from(run) * 2.3 + index as f64).cos();
                rows.push(row(engine, run, mb_per_sec * machine * own, *syscalls));
            }
        }
        rows
    }

    /// Goal: in a claims document each claim's experiment is judged as `claims run` judged it,
    /// on its own rows, whatever else the document holds. Method: two experiments' rows, tagged
    /// with their claims, the second with its ring 10% faster in every other block of rounds;
    /// each study's judging in the whole document equals its experiment's alone, and the two
    /// differ (the noise between blocks is each experiment's own).
    #[test]
    fn a_claims_experiment_is_judged_on_its_own_rows() {
        let experiment = |claim: &str, shift: f64| {
            let mut rows = paired_rows(
                &[("blocking", 1000.0, 1000), ("uring-ring", 1200.0, 10)],
                16,
            );
            for row in &mut rows {
                row.params.insert(CLAIM_PARAM.into(), Value::from(claim));
                if row.engine == "uring-ring" && row.block() % 2 == 0 {
                    row.bytes_per_sec *= shift;
                }
            }
            rows
        };
        let (quiet, shifted) = (experiment("a", 1.0), experiment("b", 1.1));
        let whole = studies(&[quiet.clone(), shifted.clone()].concat());
        assert_eq!(whole.len(), 2);
        let alone = [&studies(&quiet)[0], &studies(&shifted)[0]];
        for (study, alone) in whole.iter().zip(alone) {
            assert_eq!(study.judging, alone.judging, "{}", study.title);
        }
        assert_ne!(whole[0].judging, whole[1].judging);
    }

    #[test]
    fn controls_join_the_study_they_control_and_engines_keep_their_order() {
        let mut control = row("fio psync", 1, 900.0, 0);
        control.params.put(Param::Control, true);
        control.syscalls_source = SyscallSource::Unmeasured;
        let mut other = row("blocking", 1, 1.0, 1);
        other.params.put(Param::Size, "1G");
        let rows = vec![
            row("blocking", 1, 1000.0, 1000),
            row("uring-ring", 1, 1200.0, 10),
            row("blocking", 2, 1100.0, 1000),
            control,
            other,
        ];
        let studies = studies(&rows);
        assert_eq!(studies.len(), 2);
        assert_eq!(studies[1].title, "fs-write (size=1G)");
        let names: Vec<&str> = studies[0]
            .engines
            .iter()
            .map(|e| e.engine.as_str())
            .collect();
        assert_eq!(names, ["blocking", "uring-ring", "fio psync"]);
        let blocking = &studies[0].engines[0];
        assert_eq!(blocking.runs, 2);
        assert_eq!(blocking.throughput.median, 1050.0);
        assert_eq!(blocking.syscalls_per_op.unwrap().median, 1.0);
        assert!((blocking.cpu_us_per_op.median - 1.0).abs() < 1e-9);
        assert!(studies[0].engines[2].control);
        assert!(studies[0].engines[2].syscalls_per_op.is_none());
        assert_eq!(studies[0].measured().len(), 2);
    }

    #[test]
    fn parameters_in_another_order_are_the_same_study_and_titles_name_what_differs() {
        let mut a = row("blocking", 1, 1000.0, 1000);
        a.params.put(Param::Depth, Value::from(1));
        let mut b = row("uring-ring", 1, 1200.0, 10);
        b.params = Map::new();
        b.params.put(Param::Depth, Value::from(1));
        b.params.put(Param::Size, Value::from("64M"));
        let mut c = a.clone();
        c.params.put(Param::Depth, Value::from(8));
        let studies = studies(&[a, b, c]);
        assert_eq!(studies.len(), 2);
        assert_eq!(studies[0].engines.len(), 2);
        assert_eq!(studies[0].title, "fs-write (depth=1)");
        assert_eq!(studies[1].title, "fs-write (depth=8)");
    }
}
