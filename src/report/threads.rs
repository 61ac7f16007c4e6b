//! The network sweeps' sections (`model::sweep`): server threads, sizes (where bundles,
//! incremental buffers and SEND_ZC start to pay or cost) and work (how much of an engine's
//! advantage is left when the application works: `work.rs`).

use crate::engines::parent_name;
use crate::model::study::Study;
use crate::model::summary::Metric;
use crate::model::sweep::sweeps;
pub use crate::model::sweep::{work_text, Sweep, Swept};
use crate::units::format_size;

/// Where each engine of a size sweep pays and where it costs against the engine it extends
/// (its parent in the table, when it ran in the sweep): server CPU per op at each size, each a
/// paired comparison as the analysis decided it (cheaper, costlier, or neither at that size).
pub fn size_verdicts(sweep: &Sweep) -> Vec<String> {
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
        let (mut pays, mut costs, mut neither) = (Vec::new(), Vec::new(), Vec::new());
        for (at, study) in &sweep.points {
            let Some(c) = study.decided(engine, before, Metric::CpuPerOp) else {
                continue;
            };
            let size = format!("{} ({})", format_size(*at), c.verdict_text());
            match (c.is_different(), c.better()) {
                (true, true) => pays.push(size),
                (true, false) => costs.push(size),
                (false, _) => neither.push(format_size(*at)),
            }
        }
        let mut said = Vec::new();
        if !pays.is_empty() {
            said.push(format!("cheaper at {}", pays.join(", ")));
        }
        if !costs.is_empty() {
            said.push(format!("costlier at {}", costs.join(", ")));
        }
        if !neither.is_empty() {
            said.push(format!(
                "not decided cheaper or costlier at {}",
                neither.join(", ")
            ));
        }
        verdicts.push(format!(
            "{engine} over {before}, server CPU per op: {}.",
            said.join("; ")
        ));
    }
    verdicts
}

/// The sweeps among `studies`: groups of studies of one workload whose parameters differ
/// only in `SWEPT_PARAMS`, with more than one server-thread count.
pub fn thread_sweeps(studies: &[Study]) -> Vec<Sweep<'_>> {
    sweeps(studies, Swept::ServerThreads)
}

/// The size sweeps among `studies`: groups of one workload's studies that differ only in the
/// echo payload or HTTP body size, with more than one size.
pub fn size_sweeps(studies: &[Study]) -> Vec<Sweep<'_>> {
    sweeps(studies, Swept::Size)
}

/// The work sweeps among `studies`: groups of one workload's studies that differ only in the
/// server's `--work`, with more than one work time.
pub fn work_sweeps(studies: &[Study]) -> Vec<Sweep<'_>> {
    sweeps(studies, Swept::Work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row as summary_row;
    use crate::row::params::{Param, Params};
    use crate::row::Row;
    use serde_json::Map;
    use serde_json::Value;

    fn row(engine: &str, threads: u64, connections: u64, ops_per_sec: f64) -> Row {
        let mut params = Map::new();
        params.put(Param::Connections, connections);
        params.put(Param::ServerThreads, threads);
        params.put(Param::ServerCpus, Value::from(format!("0-{}", threads - 1)));
        params.put(Param::ClientThreads, 1);
        if threads > 1 {
            params.put(Param::CpusShared, "1");
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
        let studies = crate::analysis::Analysis::of_rows(&rows).studies;
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
        let analysis = crate::analysis::Analysis::of(&document);
        let page = crate::report::html::render_html(&document, &analysis).unwrap();
        let section = &page[page.find("against server threads").expect("a section")..];
        let section = &section[..section.find("</section>").unwrap_or(section.len())];
        assert_eq!(section.matches("<svg").count(), 2, "throughput and CPU");
        let text = crate::report::markdown::render_markdown(&document, &analysis);
        assert!(text.contains("against server threads"), "{text}");
    }

    /// Echo studies that differ only in payload make a size sweep; a rung decided cheaper in
    /// CPU per message than the rung it extends at a size pays there, and one not decided either
    /// way is said so.
    #[test]
    fn payload_studies_make_a_size_sweep_whose_verdict_names_where_a_rung_pays() {
        let sized = |engine: &str, run: u32, payload: u64, cpu_s: f64| {
            let mut params = Map::new();
            params.put(Param::Connections, 50);
            params.put(Param::PayloadBytes, payload);
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
        for run in 1..=8 {
            let jitter = f64::from(run) * 1e-4;
            rows.push(sized("uring-fixed-files", run, 64, 0.010 + jitter));
            rows.push(sized("uring-bundle", run, 64, 0.010 + jitter));
            rows.push(sized("uring-fixed-files", run, 16384, 0.030 + jitter));
            rows.push(sized("uring-bundle", run, 16384, 0.020 + jitter));
        }
        let studies = crate::analysis::Analysis::of_rows(&rows).studies;
        assert!(thread_sweeps(&studies).is_empty());
        let sweeps = size_sweeps(&studies);
        assert_eq!(sweeps.len(), 1);
        let verdicts = size_verdicts(&sweeps[0]);
        assert_eq!(verdicts.len(), 1, "{verdicts:?}");
        assert!(
            verdicts[0].starts_with(
                "uring-bundle over uring-fixed-files, server CPU per op: cheaper at 16k (0.67× \
                 cheaper ["
            ) && verdicts[0].ends_with("; not decided cheaper or costlier at 64."),
            "{verdicts:?}"
        );
        let document = crate::row::Document::new(Value::Null, rows);
        let analysis = crate::analysis::Analysis::of(&document);
        let page = crate::report::html::render_html(&document, &analysis).unwrap();
        let section = &page[page.find("against size").expect("a section")..];
        let section = &section[..section.find("</section>").unwrap_or(section.len())];
        assert_eq!(
            section.matches("<svg").count(),
            2,
            "CPU per op and per byte"
        );
    }
}
