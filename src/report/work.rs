//! A work sweep's verdicts (`echo --work 0us,2us,10us`): how much of each engine's advantage
//! over the baseline of its tree (epoll, or blocking) is left as the server's work per request
//! grows. Netbench's point: an API's saving is a fixed cost per request, so the more CPU the
//! application spends per request, the smaller the share of it that saving is.

use crate::engines::parent_name;
use crate::model::comparison::Comparison;
use crate::model::summary::Metric;
use crate::report::threads::{work_text, Sweep, Swept};
use crate::stats::Spread;

/// Each engine of a work sweep against the baseline of its tree, where both ran: its server
/// CPU per request as a share of the baseline's at each work time, and how much of the
/// advantage it had at the least work is left at the most (or that it grew: in a closed loop
/// an engine that batches its sends wakes the client less often, bench/shapes.md).
pub fn work_verdicts(sweep: &Sweep) -> Vec<String> {
    if sweep.swept != Swept::Work {
        return Vec::new();
    }
    let Some((_, first)) = sweep.points.first() else {
        return Vec::new();
    };
    let workload = first.workload.as_str();
    let engines = sweep.engines();
    let mut verdicts = Vec::new();
    for &engine in &engines {
        let Some(base) = baseline(workload, engine).filter(|base| engines.contains(base)) else {
            continue;
        };
        let points: Vec<Point> = (sweep.points.iter())
            .filter_map(|(work_ns, study)| {
                let cpu = |name: &str| {
                    let summary = study.engines.iter().find(|e| e.engine == name)?;
                    Some(summary.cpu_us_per_op).filter(|cpu| cpu.median > 0.0)
                };
                let decided = study.decided(engine, base, Metric::CpuPerOp)?;
                Some(Point::new(*work_ns, cpu(engine)?, cpu(base)?, decided))
            })
            .collect();
        if points.len() < 2 {
            continue;
        }
        verdicts.push(verdict(engine, base, &points));
    }
    verdicts
}

/// The root of `engine`'s tree in the engine table (epoll for the io_uring servers, blocking
/// for threads); None for a root itself.
fn baseline(workload: &str, engine: &str) -> Option<&'static str> {
    let mut base = parent_name(workload, engine)?;
    while let Some(parent) = parent_name(workload, base) {
        base = parent;
    }
    Some(base)
}

/// An engine's and its baseline's server CPU per request at one work time, and their paired
/// comparison as the analysis decided it.
struct Point {
    work_ns: u64,
    /// µs per request the engine spends less than the baseline (negative: more), by medians.
    saving_us: f64,
    decided: Comparison,
}

impl Point {
    fn new(work_ns: u64, engine: Spread, base: Spread, decided: Comparison) -> Point {
        Point {
            work_ns,
            saving_us: base.median - engine.median,
            decided,
        }
    }

    /// The engine's advantage as a share of the baseline's CPU (negative: a cost), where its
    /// comparison decided a difference; 0 where it did not.
    fn advantage(&self) -> f64 {
        match self.decided.is_different() {
            true => 1.0 - self.decided.ratio,
            false => 0.0,
        }
    }

    /// `0.77× cheaper [0.70–0.84], 12 rounds (3.9 µs less) at 10 µs`, or `not told apart
    /// (1.01×, …) with no work`.
    fn text(&self) -> String {
        let at = at_text(self.work_ns);
        if !self.decided.is_different() {
            return format!(
                "not decided cheaper or costlier ({}) {at}",
                self.decided.verdict_text()
            );
        }
        let (amount, direction) = (self.saving_us.abs(), self.saving_us > 0.0);
        let direction = if direction { "less" } else { "more" };
        format!(
            "{} ({amount:.1} µs {direction}) {at}",
            self.decided.verdict_text()
        )
    }
}

/// `with no work`, `at 2 µs`.
fn at_text(work_ns: u64) -> String {
    match work_ns {
        0 => "with no work".to_string(),
        ns => format!("at {}", work_text(ns)),
    }
}

fn verdict(engine: &str, base: &str, points: &[Point]) -> String {
    let (first, last) = (&points[0], &points[points.len() - 1]);
    let (before, after) = (first.advantage(), last.advantage());
    let last_work = at_text(last.work_ns);
    let left = if before <= 0.0 {
        match after > 0.0 {
            true => format!(
                "it had no advantage {} and gained one as the work grew",
                at_text(first.work_ns)
            ),
            false => "it had no advantage to keep".to_string(),
        }
    } else if after <= 0.0 {
        format!("none of its advantage is left {last_work}")
    } else if after >= before {
        format!(
            "its advantage grew with the work: {:.0}% less CPU {}, {:.0}% less {last_work}",
            before * 100.0,
            at_text(first.work_ns),
            after * 100.0
        )
    } else {
        format!(
            "{:.0}% of its advantage ({:.0}% less CPU {}) is left {last_work} ({:.0}% less)",
            after / before * 100.0,
            before * 100.0,
            at_text(first.work_ns),
            after * 100.0
        )
    };
    let each: Vec<String> = points.iter().map(Point::text).collect();
    format!(
        "{engine} against {base}, server CPU per request as a share of {base}'s: {}; {left}",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row as summary_row;
    use crate::report::threads::work_sweeps;
    use crate::row::params::{Param, Params};
    use crate::row::Row;
    use serde_json::Map;

    /// An echo row of `engine` at `work_ns` whose server spent `cpu_us` per message.
    fn worked(engine: &str, run: u32, work_ns: u64, cpu_us: f64) -> Row {
        let mut params = Map::new();
        params.put(Param::Connections, 50);
        params.put(Param::PayloadBytes, 64);
        params.put(Param::WorkNs, work_ns);
        Row {
            workload: "echo".into(),
            params,
            ops: 1000,
            ops_per_sec: 1000.0,
            server_cpu_s: Some(cpu_us * 1000.0 / 1e6),
            ..summary_row(engine, run, 0.0, 0)
        }
    }

    fn rows(io_uring: [f64; 3]) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in 1..=8 {
            let jitter = f64::from(run) * 0.01;
            for (index, work_ns) in [0, 2000, 10_000].into_iter().enumerate() {
                let epoll = [4.0, 6.0, 14.0][index];
                rows.push(worked("epoll", run, work_ns, epoll + jitter));
                rows.push(worked(
                    "uring-defer",
                    run,
                    work_ns,
                    io_uring[index] + jitter,
                ));
            }
        }
        rows
    }

    #[test]
    fn a_saving_per_request_shrinks_as_a_share_when_the_work_grows() {
        let rows = rows([3.0, 5.0, 13.0]);
        let studies = crate::analysis::Analysis::of_rows(&rows).studies;
        let sweeps = work_sweeps(&studies);
        assert_eq!(sweeps.len(), 1);
        let verdicts = work_verdicts(&sweeps[0]);
        assert_eq!(verdicts.len(), 1, "{verdicts:?}");
        let verdict = &verdicts[0];
        assert!(
            verdict.starts_with("uring-defer against epoll, server CPU per request"),
            "{verdict}"
        );
        // The rounds drift together (the jitter grows with the run), so the two blocks' ratios
        // differ and the interval carries that between-block move.
        assert!(
            verdict.contains("0.75× cheaper [0.75–0.76], 8 rounds (1.0 µs less) with no work"),
            "{verdict}"
        );
        // 1 − 13/14 ≈ 7% less at 10 µs, of 25% less with no work: 29% of it left.
        assert!(
            verdict.ends_with(
                "29% of its advantage (25% less CPU with no work) is left at 10 µs (7% less)"
            ),
            "{verdict}"
        );
    }

    #[test]
    fn an_advantage_lost_or_never_held_is_said_so() {
        let lost = rows([3.0, 5.0, 14.0]);
        let studies_lost = crate::analysis::Analysis::of_rows(&lost).studies;
        let verdict = &work_verdicts(&work_sweeps(&studies_lost)[0])[0];
        assert!(
            verdict.contains("not decided cheaper or costlier (1.00×, no difference beyond 3% ["),
            "{verdict}"
        );
        assert!(
            verdict.ends_with("none of its advantage is left at 10 µs"),
            "{verdict}"
        );
        let grew = rows([3.0, 5.0, 10.0]);
        let studies_grew = crate::analysis::Analysis::of_rows(&grew).studies;
        let verdict = &work_verdicts(&work_sweeps(&studies_grew)[0])[0];
        assert!(
            verdict.ends_with(
                "its advantage grew with the work: 25% less CPU with no work, 28% less at 10 µs"
            ),
            "{verdict}"
        );
        let never = rows([4.0, 5.0, 13.0]);
        let studies_never = crate::analysis::Analysis::of_rows(&never).studies;
        let verdict = &work_verdicts(&work_sweeps(&studies_never)[0])[0];
        assert!(
            verdict.ends_with("it had no advantage with no work and gained one as the work grew"),
            "{verdict}"
        );
    }

    #[test]
    fn a_root_engine_has_no_baseline_and_a_rung_has_its_trees() {
        assert_eq!(baseline("echo", "epoll"), None);
        assert_eq!(baseline("echo", "uring-bundle"), Some("epoll"));
        assert_eq!(baseline("echo", "threads"), Some("blocking"));
    }
}
