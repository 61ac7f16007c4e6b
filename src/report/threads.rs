//! Server-thread sweeps (`echo --server-threads 1,2,4`): the studies of one workload that
//! differ only in the server's event loops and the CPUs that loops and load took, joined so
//! the report can show each engine's throughput and CPU per operation against its loops.

use serde_json::Value;

use crate::report::summary::{EngineSummary, Study, StudyKey};
use crate::stats::params_text;

/// The parameters a sweep's studies may differ in: the loops, and the CPUs split for them.
const SWEPT_PARAMS: [&str; 7] = [
    "server_threads",
    "server_cpus",
    "server_cpu",
    "client_cpu",
    "client_cpus",
    "client_threads",
    "cpus_shared",
];

/// The studies of one sweep, one per server-thread count, ascending.
pub struct ThreadSweep<'a> {
    /// The workload and the parameters its studies share.
    pub title: String,
    pub points: Vec<(u64, &'a Study)>,
}

impl ThreadSweep<'_> {
    /// The engines (controls left out) in the order the sweep's studies first name them.
    pub fn engines(&self) -> Vec<&str> {
        let mut engines: Vec<&str> = Vec::new();
        for (_, study) in &self.points {
            for engine in study.measured() {
                if !engines.contains(&engine.engine.as_str()) {
                    engines.push(&engine.engine);
                }
            }
        }
        engines
    }

    /// `engine`'s runs at each server-thread count it ran at.
    pub fn runs_of<'s>(
        &'s self,
        engine: &'s str,
    ) -> impl Iterator<Item = (u64, &'s EngineSummary)> {
        self.points.iter().filter_map(move |(threads, study)| {
            let summary = study.engines.iter().find(|e| e.engine == engine)?;
            Some((*threads, summary))
        })
    }

    /// The CPUs the load shared with the server at `threads` loops, when it did.
    pub fn shared_cpus(&self, threads: u64) -> Option<&str> {
        let (_, study) = self.points.iter().find(|(count, _)| *count == threads)?;
        study.params.get("cpus_shared").and_then(Value::as_str)
    }

    pub fn unit(&self) -> String {
        self.points[0].1.unit()
    }
}

/// The sweeps among `studies`: groups of studies of one workload whose parameters differ
/// only in `SWEPT_PARAMS`, with more than one server-thread count.
pub fn thread_sweeps(studies: &[Study]) -> Vec<ThreadSweep<'_>> {
    let mut groups: Vec<(StudyKey, Vec<(u64, &Study)>)> = Vec::new();
    for study in studies.iter().filter(|study| !study.measured().is_empty()) {
        let mut shared = study.params.clone();
        shared.retain(|key, _| !SWEPT_PARAMS.contains(&key.as_str()));
        let threads = study.params.get("server_threads").and_then(Value::as_u64);
        let point = (threads.unwrap_or(1), study);
        let key = (study.workload.clone(), shared);
        match groups.iter_mut().find(|(known, _)| *known == key) {
            Some((_, points)) => points.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    groups
        .into_iter()
        .filter_map(|((workload, shared), mut points)| {
            points.sort_by_key(|(threads, _)| *threads);
            points.dedup_by_key(|(threads, _)| *threads);
            (points.len() > 1).then(|| ThreadSweep {
                title: format!("{workload} ({})", params_text(&shared)),
                points,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::studies;
    use crate::report::summary::tests::row as summary_row;
    use crate::row::Row;
    use serde_json::Map;

    fn row(engine: &str, threads: u64, connections: u64, ops_per_sec: f64) -> Row {
        let mut params = Map::new();
        params.insert("connections".into(), Value::from(connections));
        params.insert("server_threads".into(), Value::from(threads));
        params.insert(
            "server_cpus".into(),
            Value::from(format!("0-{}", threads - 1)),
        );
        params.insert("client_threads".into(), Value::from(1));
        if threads > 1 {
            params.insert("cpus_shared".into(), Value::from("1"));
        }
        Row {
            workload: "echo".into(),
            params,
            ops: ops_per_sec as u64,
            ops_per_sec,
            ..summary_row(engine, 1, 0.0, 0)
        }
    }

    #[test]
    fn studies_that_differ_only_in_loops_make_one_sweep_per_connection_count() {
        let rows = vec![
            row("epoll", 1, 50, 100.0),
            row("uring", 1, 50, 90.0),
            row("epoll", 2, 50, 150.0),
            row("uring", 2, 50, 160.0),
            row("epoll", 1, 1, 10.0),
        ];
        let studies = studies(&rows);
        let sweeps = thread_sweeps(&studies);
        assert_eq!(sweeps.len(), 1, "one count has no sweep");
        let sweep = &sweeps[0];
        assert!(sweep.title.contains("connections=50"), "{}", sweep.title);
        assert!(!sweep.title.contains("server_threads"), "{}", sweep.title);
        assert_eq!(sweep.engines(), ["epoll", "uring"]);
        let uring: Vec<(u64, f64)> = (sweep.runs_of("uring"))
            .map(|(threads, summary)| (threads, summary.throughput.median))
            .collect();
        assert_eq!(uring, [(1, 90.0), (2, 160.0)]);
        assert_eq!(sweep.shared_cpus(1), None);
        assert_eq!(sweep.shared_cpus(2), Some("1"));
        assert!(thread_sweeps(&studies[..1]).is_empty());
        let document = crate::row::Document::new(Value::Null, rows);
        let page = crate::report::html::render_html(&document, &studies).unwrap();
        let section = &page[page.find("against server threads</h2>").expect("a section")..];
        assert_eq!(section.matches("<svg").count(), 2, "throughput and CPU");
        let text = crate::report::markdown::render_markdown(&document, &studies);
        assert!(text.contains("against server threads"), "{text}");
    }
}
