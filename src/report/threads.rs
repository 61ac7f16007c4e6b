//! Sweeps: the studies of one workload that differ only in one thing, joined so the report can
//! show each engine's figures against it. Server threads (`echo --server-threads 1,2,4`): the
//! event loops and the CPUs that loops and load took; sizes (`echo --payload 64,16k`, `http
//! --body-size 64,16k`): the message or body size, where bundles, incremental buffers and
//! SEND_ZC start to pay or cost; work (`echo --work 0us,2us,10us`): the server's CPU per
//! request, how much of an engine's advantage is left when the application works (`work.rs`).

use std::collections::HashMap;

use serde_json::Value;

use crate::engines::parent_name;
use crate::report::summary::{key_text, EngineSummary, Study, StudyKey};
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
}

/// The parameters a size sweep's studies differ in.
const SIZE_PARAMS: [&str; 3] = ["payload_bytes", "body_size", "body_bytes"];

/// The parameter a work sweep's studies differ in.
const WORK_PARAMS: [&str; 1] = ["work_ns"];

/// The parameters a thread sweep's studies may differ in: the loops, and the CPUs split for
/// them.
const SWEPT_PARAMS: [&str; 7] = [
    "server_threads",
    "server_cpus",
    "server_cpu",
    "client_cpu",
    "client_cpus",
    "client_threads",
    "cpus_shared",
];

/// The studies of one sweep, one per server-thread count (or size), ascending.
pub struct ThreadSweep<'a> {
    /// The workload and the parameters its studies share.
    pub title: String,
    pub swept: Swept,
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

    /// `engine`'s runs at each server-thread count (or size) it ran at.
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

    /// What the sweep is against, as its section's title says it.
    pub fn noun(&self) -> &'static str {
        match self.swept {
            Swept::ServerThreads => "server threads",
            Swept::Size => "size",
            Swept::Work => "work per request",
        }
    }

    /// A point's swept value as its table shows it.
    pub fn point_text(&self, at: u64) -> String {
        match self.swept {
            Swept::ServerThreads => at.to_string(),
            Swept::Size => format_size(at),
            Swept::Work => work_text(at),
        }
    }

    pub fn unit(&self) -> String {
        self.points[0].1.unit()
    }
}

/// A rung's CPU per op against the rung before it, as a share: below this it pays, above
/// its inverse it costs, when the runs' ranges do not overlap either.
const PAYS_BELOW: f64 = 0.95;

/// Where each engine of a size sweep pays and where it costs against the engine it extends
/// (its parent in the table, when it ran in the sweep): server CPU per op at each size, a
/// difference counted only when the two engines' run ranges do not overlap.
pub fn size_verdicts(sweep: &ThreadSweep) -> Vec<String> {
    if sweep.swept != Swept::Size {
        return Vec::new();
    }
    let engines = sweep.engines();
    let Some(workload) = sweep
        .points
        .first()
        .map(|(_, study)| study.workload.as_str())
    else {
        return Vec::new();
    };
    let mut verdicts = Vec::new();
    // Each rung against the engine it extends (its parent in the table), as the ladder does.
    for &engine in &engines {
        let Some(before) = parent_name(workload, engine).filter(|p| engines.contains(p)) else {
            continue;
        };
        let mut pays = Vec::new();
        let mut costs = Vec::new();
        for (at, study) in &sweep.points {
            let cpu = |name: &str| {
                let summary = study.engines.iter().find(|e| e.engine == name)?;
                Some(summary.cpu_us_per_op).filter(|cpu| cpu.median > 0.0)
            };
            let (Some(old), Some(new)) = (cpu(before), cpu(engine)) else {
                continue;
            };
            let share = new.median / old.median;
            let size = format!("{} ({share:.2}×)", format_size(*at));
            if share < PAYS_BELOW && new.max < old.min {
                pays.push(size);
            } else if share > 1.0 / PAYS_BELOW && new.min > old.max {
                costs.push(size);
            }
        }
        let sentence = match (pays.is_empty(), costs.is_empty()) {
            (true, true) => "within the noise at every size".to_string(),
            (false, true) => format!("pays at {}", pays.join(", ")),
            (true, false) => format!("costs at {}", costs.join(", ")),
            (false, false) => format!("pays at {}; costs at {}", pays.join(", "), costs.join(", ")),
        };
        verdicts.push(format!(
            "{engine} over {before}: {sentence} (server CPU per op, × {before}'s)"
        ));
    }
    verdicts
}

/// The sweeps among `studies`: groups of studies of one workload whose parameters differ
/// only in `SWEPT_PARAMS`, with more than one server-thread count.
pub fn thread_sweeps(studies: &[Study]) -> Vec<ThreadSweep<'_>> {
    sweeps(studies, Swept::ServerThreads)
}

/// The size sweeps among `studies`: groups of one workload's studies that differ only in the
/// echo payload or HTTP body size, with more than one size.
pub fn size_sweeps(studies: &[Study]) -> Vec<ThreadSweep<'_>> {
    sweeps(studies, Swept::Size)
}

/// The work sweeps among `studies`: groups of one workload's studies that differ only in the
/// server's `--work`, with more than one work time.
pub fn work_sweeps(studies: &[Study]) -> Vec<ThreadSweep<'_>> {
    sweeps(studies, Swept::Work)
}

/// `no work`, `2 µs`: a work time in ns as tables and verdicts say it.
pub fn work_text(ns: u64) -> String {
    match ns {
        0 => "no work".to_string(),
        _ => format!("{} µs", ns as f64 / 1e3),
    }
}

/// Where a study sits on a sweep's axis, if it does.
type PointOf = fn(&Study) -> Option<u64>;

fn sweeps(studies: &[Study], swept: Swept) -> Vec<ThreadSweep<'_>> {
    let (params, x): (&[&str], PointOf) = match swept {
        Swept::ServerThreads => (&SWEPT_PARAMS, |study| {
            Some(
                study
                    .params
                    .get("server_threads")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            )
        }),
        Swept::Size => (&SIZE_PARAMS, |study| {
            let bytes = |key: &str| study.params.get(key).and_then(Value::as_u64);
            bytes("payload_bytes").or_else(|| bytes("body_bytes"))
        }),
        Swept::Work => (&WORK_PARAMS, |study| {
            study.params.get("work_ns").and_then(Value::as_u64)
        }),
    };
    let mut groups: Vec<(StudyKey, Vec<(u64, &Study)>)> = Vec::new();
    let mut index_of: HashMap<String, usize> = HashMap::new();
    for study in studies.iter().filter(|study| !study.measured().is_empty()) {
        let Some(at) = x(study) else { continue };
        let mut shared = study.params.clone();
        shared.retain(|key, _| !params.contains(&key.as_str()));
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
            (points.len() > 1).then(|| ThreadSweep {
                title: format!("{workload} ({})", params_text(&shared)),
                swept,
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

    /// Echo studies that differ only in payload make a size sweep; a rung whose CPU per
    /// message is lower than the rung before it at a size, beyond both ranges, pays there.
    #[test]
    fn payload_studies_make_a_size_sweep_whose_verdict_names_where_a_rung_pays() {
        let sized = |engine: &str, run: u32, payload: u64, cpu_s: f64| {
            let mut params = Map::new();
            params.insert("connections".into(), Value::from(50));
            params.insert("payload_bytes".into(), Value::from(payload));
            Row {
                workload: "echo".into(),
                params,
                ops: 1000,
                ops_per_sec: 1000.0,
                cpu_sys_s: cpu_s,
                ..summary_row(engine, run, 0.0, 0)
            }
        };
        let mut rows = Vec::new();
        for run in 1..=3 {
            let jitter = f64::from(run) * 1e-4;
            rows.push(sized("uring-fixed-files", run, 64, 0.010 + jitter));
            rows.push(sized("uring-bundle", run, 64, 0.010 + jitter));
            rows.push(sized("uring-fixed-files", run, 16384, 0.030 + jitter));
            rows.push(sized("uring-bundle", run, 16384, 0.020 + jitter));
        }
        let studies = studies(&rows);
        assert!(thread_sweeps(&studies).is_empty());
        let sweeps = size_sweeps(&studies);
        assert_eq!(sweeps.len(), 1);
        let verdicts = size_verdicts(&sweeps[0]);
        assert_eq!(verdicts.len(), 1, "{verdicts:?}");
        assert!(
            verdicts[0].starts_with("uring-bundle over uring-fixed-files: pays at 16k (0.67×)"),
            "{verdicts:?}"
        );
        let document = crate::row::Document::new(Value::Null, rows);
        let page = crate::report::html::render_html(&document, &studies).unwrap();
        let section = &page[page.find("against size</h2>").expect("a section")..];
        assert_eq!(
            section.matches("<svg").count(),
            2,
            "CPU per op and per byte"
        );
    }
}
