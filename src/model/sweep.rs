//! Sweeps: the studies of one workload that differ only in one thing, joined so a view can show
//! each engine's figures against it. Server threads (`echo --server-threads 1,2,4`): the event
//! loops and the CPUs that loops and load took; sizes (`echo --payload 64,16k`, `http
//! --body-size 64,16k`); work (`echo --work 0us,2us,10us`): the server's CPU per request; queue
//! depth (`fs read --depth 1,4,16`). One type for all of them; the report's thread, size, work
//! and depth sections render it.

use std::collections::HashMap;

use crate::model::study::{key_text, Study, StudyKey};
use crate::model::summary::EngineSummary;
use crate::row::params::{Param, Params};
use crate::stats::params_text;
use crate::units::format_size;

/// What a sweep's studies differ in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swept {
    ServerThreads,
    /// The echo payload or the HTTP body, in bytes.
    Size,
    /// The server's work per request (`--work`), in ns.
    Work,
    /// The read study's queue depth.
    Depth,
}

impl Swept {
    /// The parameters the sweep's studies may differ in (the thread count brings the CPUs split
    /// for it).
    pub fn params(self) -> &'static [Param] {
        match self {
            Swept::ServerThreads => &[
                Param::ServerThreads,
                Param::ServerCpus,
                Param::ServerCpu,
                Param::ClientCpu,
                Param::ClientCpus,
                Param::ClientThreads,
                Param::CpusShared,
            ],
            Swept::Size => &[Param::PayloadBytes, Param::BodySize, Param::BodyBytes],
            Swept::Work => &[Param::WorkNs],
            Swept::Depth => &[Param::Depth],
        }
    }

    /// Where a study sits on the sweep's axis, if it does.
    fn point(self, study: &Study) -> Option<u64> {
        let number = |param: Param| study.params.param_u64(param);
        match self {
            Swept::ServerThreads => Some(number(Param::ServerThreads).unwrap_or(1)),
            Swept::Size => number(Param::PayloadBytes).or_else(|| number(Param::BodyBytes)),
            Swept::Work => number(Param::WorkNs),
            Swept::Depth => {
                (study.workload == "fs-read").then(|| number(Param::Depth).unwrap_or(1))
            }
        }
    }

    /// Whether the sweep's table keeps the controls (fio's jobs beside a read study).
    fn keeps_controls(self) -> bool {
        self == Swept::Depth
    }
}

/// The studies of one sweep, one per point, ascending.
pub struct Sweep<'a> {
    /// The workload and the parameters its studies share.
    pub title: String,
    pub swept: Swept,
    pub points: Vec<(u64, &'a Study)>,
}

impl Sweep<'_> {
    /// The engines in the order the sweep's studies first name them (controls only where the
    /// sweep keeps them).
    pub fn engines(&self) -> Vec<&str> {
        let mut engines: Vec<&str> = Vec::new();
        for (_, study) in &self.points {
            for engine in &study.engines {
                if engine.control && !self.swept.keeps_controls() {
                    continue;
                }
                if !engines.contains(&engine.engine.as_str()) {
                    engines.push(&engine.engine);
                }
            }
        }
        engines
    }

    /// `engine` at each point it ran at.
    pub fn runs_of<'s>(
        &'s self,
        engine: &'s str,
    ) -> impl Iterator<Item = (u64, &'s EngineSummary)> {
        self.points.iter().filter_map(move |(at, study)| {
            let summary = study.engines.iter().find(|e| e.engine == engine)?;
            Some((*at, summary))
        })
    }

    /// The CPUs the load shared with the server at `threads` loops, when it did.
    pub fn shared_cpus(&self, threads: u64) -> Option<&str> {
        let (_, study) = self.points.iter().find(|(count, _)| *count == threads)?;
        study.params.param_str(Param::CpusShared)
    }

    /// What the sweep is against, as its section's title says it.
    pub fn noun(&self) -> &'static str {
        match self.swept {
            Swept::ServerThreads => "server threads",
            Swept::Size => "size",
            Swept::Work => "work per request",
            Swept::Depth => "queue depth",
        }
    }

    /// A point's value as its table shows it.
    pub fn point_text(&self, at: u64) -> String {
        match self.swept {
            Swept::ServerThreads | Swept::Depth => at.to_string(),
            Swept::Size => format_size(at),
            Swept::Work => work_text(at),
        }
    }

    pub fn unit(&self) -> String {
        self.points[0].1.unit()
    }
}

/// `no work`, `2 µs`: a work time in ns as tables and verdicts say it.
pub fn work_text(ns: u64) -> String {
    match ns {
        0 => "no work".to_string(),
        _ => format!("{} µs", ns as f64 / 1e3),
    }
}

/// The sweeps of `swept` among `studies`: groups of one workload's studies that differ only in
/// the swept parameters, with more than one point.
pub fn sweeps(studies: &[Study], swept: Swept) -> Vec<Sweep<'_>> {
    let mut groups: Vec<(StudyKey, Vec<(u64, &Study)>)> = Vec::new();
    let mut index_of: HashMap<String, usize> = HashMap::new();
    for study in studies.iter().filter(|study| !study.measured().is_empty()) {
        let Some(at) = swept.point(study) else {
            continue;
        };
        let mut shared = study.params.clone();
        shared.retain(|key, _| !swept.params().iter().any(|param| param.key() == key));
        let key = (study.workload.clone(), shared);
        let index = *index_of.entry(key_text(&key)).or_insert(groups.len());
        match groups.get_mut(index) {
            Some((_, points)) => points.push((at, study)),
            None => groups.push((key, vec![(at, study)])),
        }
    }
    groups
        .into_iter()
        .filter_map(|((workload, shared), mut points)| {
            points.sort_by_key(|(at, _)| *at);
            points.dedup_by_key(|(at, _)| *at);
            (points.len() > 1).then(|| Sweep {
                title: format!("{workload} ({})", params_text(&shared)),
                swept,
                points,
            })
        })
        .collect()
}
