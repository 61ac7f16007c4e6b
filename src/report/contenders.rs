//! The contenders' part of a study: their own table (throughput, CPU and syscalls per
//! operation, latency, peak memory, verified) and one sentence each against ringside's raw
//! engine of the same event API ("contender:tokio reached 0.81× the messages/s of ringside's
//! epoll at 1.32× its CPU per message"), so a reader sees how far the stack they run is from
//! the API under it.

pub use crate::analysis::plan::{raw_engine_of, reference};

use crate::analysis::numbers::{per_op, range, throughput};
use crate::analysis::screen::rounds_text;
use crate::model::study::{op_noun, Study};
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::report::table::{mark, Cells};

/// The contenders' table; None when the study has none.
pub fn contender_cells(study: &Study) -> Option<Cells> {
    if study.contenders.is_empty() {
        return None;
    }
    let unit = study.unit();
    let noun = op_noun(&study.workload);
    let mut header = vec![
        "contender".to_string(),
        "API".to_string(),
        "runs".to_string(),
        format!("{unit} median"),
        format!("{unit} min–max"),
        "× raw engine".to_string(),
        format!("syscalls/{noun}"),
        format!("CPU µs/{noun}"),
    ];
    if study.has_latency() {
        header.extend(["p50 µs".to_string(), "p99 µs".to_string()]);
    }
    header.extend(["peak RSS MiB".to_string(), "verified".to_string()]);
    let lines = study
        .contenders
        .iter()
        .map(|contender| line(study, contender))
        .collect();
    Some(Cells { header, lines })
}

fn line(study: &Study, contender: &EngineSummary) -> Vec<String> {
    let dash = || "—".to_string();
    let versus = (reference(study, contender))
        .filter(|(_, raw)| *raw)
        .and_then(|(engine, _)| {
            let c = study.decided(&contender.engine, &engine.engine, Metric::Throughput)?;
            Some(format!(
                "{:.2}× {} of {}",
                c.ratio,
                mark(c.outcome),
                engine.engine
            ))
        })
        .unwrap_or_else(dash);
    let mut cells = vec![
        contender.engine.clone(),
        contender.server_api.clone().unwrap_or_else(dash),
        contender.runs.to_string(),
        throughput(study.headline, contender.throughput.median),
        range(study.headline, &contender.throughput),
        versus,
        contender
            .syscalls_per_op
            .map_or_else(dash, |spread| per_op(spread.median)),
        per_op(contender.cpu_us_per_op.median),
    ];
    if study.has_latency() {
        for index in [0, 2] {
            let value = contender.latency_us.as_ref().map(|us| per_op(us[index]));
            cells.push(value.unwrap_or_else(dash));
        }
    }
    cells.push(
        contender
            .rss_peak_mib
            .map_or_else(dash, |mib| format!("{:.1}", mib.median)),
    );
    cells.push(
        match (&contender.failure, contender.verified) {
            (Some(_), _) => "FAILED",
            (None, true) => "yes",
            (None, false) => "NO",
        }
        .to_string(),
    );
    cells
}

/// One sentence per contender: against the raw engine of its API (or the fastest engine when
/// that did not run), or why there is no comparison.
pub fn contender_verdicts(study: &Study) -> Vec<String> {
    study
        .contenders
        .iter()
        .map(|contender| verdict(study, contender))
        .collect()
}

fn verdict(study: &Study, contender: &EngineSummary) -> String {
    let name = &contender.engine;
    let unit = study.unit();
    let noun = op_noun(&study.workload);
    if let Some(failure) = &contender.failure {
        return format!("{name} failed, so it has no result here: {failure}.");
    }
    if !contender.verified {
        return format!(
            "{name}'s data was not verified (or it had errors), so it is not compared."
        );
    }
    let own = format!(
        "{} {unit}, {} µs of CPU per {noun}, median of {}",
        throughput(study.headline, contender.throughput.median),
        per_op(contender.cpu_us_per_op.median),
        rounds_text(contender.runs)
    );
    let Some((engine, raw)) = reference(study, contender) else {
        return format!("{name}: {own}; no verified ringside engine ran here to compare with.");
    };
    let which = if raw {
        format!("ringside's {}", engine.engine)
    } else {
        let api = contender.server_api.as_deref().unwrap_or("unknown");
        format!(
            "ringside's {}, the engine with the highest median here (no raw engine of its API, \
             {api}, ran)",
            engine.engine
        )
    };
    let decided = |metric: Metric| {
        (study.decided(&contender.engine, &engine.engine, metric))
            .map_or_else(|| "not compared".to_string(), |c| c.verdict_text())
    };
    let mut text = format!(
        "{name} against {which}: {unit} {}; CPU per {noun} {} ({} vs {} {unit}, {} vs {} µs",
        decided(Metric::Throughput),
        decided(Metric::CpuPerOp),
        throughput(study.headline, contender.throughput.median),
        throughput(study.headline, engine.throughput.median),
        per_op(contender.cpu_us_per_op.median),
        per_op(engine.cpu_us_per_op.median),
    );
    if let (Some(a), Some(b)) = (&contender.syscalls_per_op, &engine.syscalls_per_op) {
        text.push_str(&format!(
            "; {} vs {} syscalls per {noun}",
            per_op(a.median),
            per_op(b.median)
        ));
    }
    text.push_str(").");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row;
    use crate::row::Row;

    /// Eight rounds of `make(run)`'s rows, the machine moving every row of a round alike.
    fn rounds(make: impl Fn(u32) -> Vec<Row>) -> Vec<Row> {
        (1..=8)
            .flat_map(|run| {
                let machine = 1.0 + 0.1 * f64::from(run).sin();
                make(run).into_iter().map(move |mut row| {
                    row.bytes_per_sec *= machine;
                    row.ops_per_sec *= machine;
                    row
                })
            })
            .collect()
    }

    #[test]
    fn a_contender_is_compared_with_the_raw_engine_of_its_api() {
        let rows = rounds(|run| {
            let mut tokio = row("contender:tokio", run, 810.0, 1500);
            tokio.server_api = Some("epoll".into());
            tokio.cpu_sys_s = 0.00132;
            vec![
                row("epoll", run, 1000.0, 1000),
                row("uring", run, 1200.0, 10),
                tokio,
            ]
        });
        let analysis = crate::analysis::Analysis::of_rows(&rows);
        let study = &analysis.studies[0];
        assert_eq!(
            study.engines.len(),
            2,
            "contenders are not in the engine table"
        );
        let text = contender_verdicts(study).join(" ");
        assert!(
            text.starts_with(
                "contender:tokio against ringside's epoll: MB/s 0.81× slower [0.81–0.81], 8 \
                 rounds; CPU per write 1.32× costlier [1.32–1.32], 8 rounds"
            ),
            "{text}"
        );
        let cells = contender_cells(study).unwrap();
        assert_eq!(cells.lines[0][5], "0.81× ★ of epoll");
        assert_eq!(cells.lines[0].last().unwrap(), "yes");
    }

    #[test]
    fn a_failed_contender_says_why_and_one_without_its_api_meets_the_highest_median() {
        let rows = rounds(|run| {
            let mut failed = row("contender:broken", run, 0.0, 0);
            failed.verified = false;
            failed.failure = Some("exited with exit status: 1 before it listened".into());
            let mut script = row("contender:py", run, 50.0, 3000);
            script.server_api = Some("none".into());
            vec![row("epoll", run, 1000.0, 1000), failed, script]
        });
        let analysis = crate::analysis::Analysis::of_rows(&rows);
        let study = &analysis.studies[0];
        let verdicts = contender_verdicts(study);
        assert!(verdicts[0].contains("failed") && verdicts[0].contains("exit status: 1"));
        assert!(
            verdicts[1].contains(
                "ringside's epoll, the engine with the highest median here (no raw engine of its \
                 API, none, ran)"
            ),
            "{}",
            verdicts[1]
        );
        assert_eq!(
            contender_cells(study).unwrap().lines[0].last().unwrap(),
            "FAILED"
        );
    }
}
