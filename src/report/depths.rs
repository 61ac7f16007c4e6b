//! Queue-depth sweeps (`fs read --depth 1,4,16,64,128`): the read studies that differ only in
//! depth, joined so the report shows each engine's reads per second and CPU per read against
//! the depth (a table and two charts), and says which engine wins at each depth and why: the
//! context switches and syscalls each read cost, the reads io_uring punted to io-wq, and how
//! far its CPU per read sat above the NOP floor (`uring-nop`, io_uring's own cost).

use plotters::prelude::*;

use crate::analysis::plan::decided_range;
use crate::analysis::screen::zones;
use crate::model::comparison::Comparison;
use crate::model::study::Study;
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::model::summary::FLOOR;
use crate::model::sweep::{sweeps, Sweep, Swept};
use crate::report::table::Cells;
use crate::stats::Spread;

/// The read studies that differ only in depth, one per depth, ascending.
pub type DepthSweep<'a> = Sweep<'a>;

/// The sweeps among `studies`: `fs-read` studies whose parameters differ only in `depth`,
/// with more than one depth.
pub fn depth_sweeps(studies: &[Study]) -> Vec<DepthSweep<'_>> {
    sweeps(studies, Swept::Depth)
}

fn per_read(amount: Option<f64>, summary: &EngineSummary) -> Option<f64> {
    let ops = summary.figures.ops;
    amount.filter(|_| ops > 0.0).map(|amount| amount / ops)
}

/// Per engine and depth: reads/s (median, min–max), CPU µs per read, context switches and
/// syscalls per read, p99 latency.
pub fn depth_cells(sweep: &DepthSweep) -> Cells {
    let header = [
        "engine",
        "depth",
        "reads/s median",
        "reads/s min–max",
        "CPU µs/read",
        "ctx switches/read",
        "syscalls/read",
        "p99 µs",
    ];
    let mut lines = Vec::new();
    for engine in sweep.engines() {
        for (depth, summary) in sweep.runs_of(engine) {
            let optional =
                |value: Option<f64>| value.map_or("—".to_string(), |v| format!("{v:.2}"));
            lines.push(vec![
                engine.to_string(),
                depth.to_string(),
                format!("{:.0}", summary.throughput.median),
                format!(
                    "{:.0}–{:.0}",
                    summary.throughput.min, summary.throughput.max
                ),
                format!("{:.2}", summary.cpu_us_per_op.median),
                optional(per_read(Some(summary.figures.ctx_switches), summary)),
                optional(summary.syscalls_per_op.map(|spread| spread.median)),
                optional(summary.p99_us.map(|spread| spread.median)),
            ]);
        }
    }
    Cells {
        header: header.iter().map(|h| h.to_string()).collect(),
        lines,
    }
}

/// Per depth, every engine against the depth's baseline as the analysis decided it (no engine
/// is called fastest unless decided so), what each read cost the leading engine and the
/// baseline (context switches, syscalls, io-wq punts), and the leading engine's CPU per read
/// beside the NOP floor's CPU per operation.
pub fn depth_verdicts(sweep: &DepthSweep) -> Vec<String> {
    let mut verdicts = Vec::new();
    for (depth, study) in &sweep.points {
        let engines: Vec<&EngineSummary> = (study.measured().into_iter())
            .filter(|engine| engine.engine != FLOOR && engine.verified)
            .collect();
        let Some((baseline, rest)) = engines.split_first() else {
            continue;
        };
        let decided: Vec<Comparison> = (rest.iter())
            .filter_map(|e| study.decided(&e.engine, &baseline.engine, Metric::Throughput))
            .collect();
        let mut sentence = format!(
            "depth {depth}: against {}: {}",
            baseline.engine,
            zones(&decided)
        );
        let leader = (rest.iter()).max_by(|a, b| {
            let ratio = |e: &&EngineSummary| {
                (decided.iter())
                    .find(|c| c.subject == e.engine)
                    .map_or(f64::NAN, |c| c.ratio)
            };
            ratio(a).total_cmp(&ratio(b))
        });
        if let Some(leader) = leader {
            sentence += &format!("; per read {} against {}", costs(leader), costs(baseline));
            let floor = study.engines.iter().find(|engine| engine.engine == FLOOR);
            if let Some(floor) = floor {
                sentence += &format!(
                    "; CPU {:.2} µs a read ({}) against io_uring's floor of {:.2} µs a NOP",
                    leader.cpu_us_per_op.median, leader.engine, floor.cpu_us_per_op.median
                );
            }
        }
        verdicts.push(sentence);
    }
    verdicts
}

/// "0.02 context switches, 0.06 syscalls, 0.90 io-wq punts (uring-ring)".
fn costs(summary: &EngineSummary) -> String {
    let mut parts = vec![format!(
        "{:.2} context switches",
        per_read(Some(summary.figures.ctx_switches), summary).unwrap_or(0.0)
    )];
    if let Some(syscalls) = summary.syscalls_per_op {
        parts.push(format!("{:.2} syscalls", syscalls.median));
    }
    if let Some(punts) = per_read(summary.figures.iowq_punts, summary) {
        parts.push(format!("{punts:.2} io-wq punts"));
    }
    format!("{} ({})", parts.join(", "), summary.engine)
}

/// One figure of an engine's runs a depth chart draws, what it is called, and the metric its
/// comparisons decide.
type Figure = (&'static str, Metric, fn(&EngineSummary) -> Spread);

/// What the depth charts draw: reads per second, then CPU per read.
const FIGURES: [Figure; 2] = [
    ("reads/s", Metric::Throughput, |engine| engine.throughput),
    ("CPU µs per read", Metric::CpuPerOp, |engine| {
        engine.cpu_us_per_op
    }),
];

/// Reads per second and CPU per read against the depth (log scale), one line per engine, the
/// whiskers each engine's decided interval against the depth's baseline.
pub fn depth_charts(sweep: &DepthSweep) -> anyhow::Result<Vec<String>> {
    FIGURES
        .iter()
        .map(|&(what, metric, value)| depth_chart(sweep, what, metric, value))
        .collect()
}

fn depth_chart(
    sweep: &DepthSweep,
    what: &str,
    metric: Metric,
    value: fn(&EngineSummary) -> Spread,
) -> anyhow::Result<String> {
    let engines = sweep.engines();
    let deepest = sweep
        .points
        .iter()
        .map(|(depth, _)| *depth)
        .max()
        .unwrap_or(1);
    let high = (engines.iter())
        .filter(|engine| what == "reads/s" || **engine != FLOOR)
        .flat_map(|engine| sweep.runs_of(engine).map(|(_, runs)| value(runs).max))
        .fold(0.0, f64::max);
    let x = |depth: u64| (depth as f64).log2();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 400)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{what} against queue depth"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.3..x(deepest) + 0.3, 0.0..(high * 1.15).max(1.0))?;
        chart
            .configure_mesh()
            .x_labels(x(deepest) as usize + 1)
            .x_label_formatter(
                &|position| match position.fract() == 0.0 && *position >= 0.0 {
                    true => format!("{}", 1u64 << (*position as u32)),
                    false => String::new(),
                },
            )
            .x_desc(
                "queue depth (reads in flight; medians; whiskers: each engine's decided interval \
                 against the depth's baseline)",
            )
            .label_style(("sans-serif", 12))
            .draw()?;
        for (index, engine) in engines.iter().enumerate() {
            // The floor's CPU per NOP would flatten the CPU chart; its reads/s line stays.
            if what != "reads/s" && *engine == FLOOR {
                continue;
            }
            let color = Palette99::pick(index).to_rgba();
            let points: Vec<(f64, Spread)> = (sweep.points.iter())
                .filter_map(|(depth, study)| {
                    let summary = study.engines.iter().find(|e| e.engine == *engine)?;
                    let spread = value(summary);
                    let (min, max) = decided_range(study, engine, metric)
                        .unwrap_or((spread.median, spread.median));
                    Some((
                        x(*depth),
                        Spread {
                            median: spread.median,
                            min,
                            max,
                        },
                    ))
                })
                .collect();
            let line = points.iter().map(|(x, spread)| (*x, spread.median));
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))?
                .label(*engine)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            let whiskers = (points.iter()).map(|(x, spread)| {
                PathElement::new(vec![(*x, spread.min), (*x, spread.max)], color)
            });
            chart.draw_series(whiskers)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::row as summary_row;
    use crate::row::params::{Param, Params};
    use crate::row::Row;
    use serde_json::Map;

    fn row(engine: &str, depth: u64, ops_per_sec: f64, ctx_switches: u64) -> Vec<Row> {
        (1..=8)
            .map(|run| {
                one(
                    engine,
                    run,
                    depth,
                    ops_per_sec * (1.0 + 0.1 * f64::from(run).sin()),
                    ctx_switches,
                )
            })
            .collect()
    }

    fn one(engine: &str, run: u32, depth: u64, ops_per_sec: f64, ctx_switches: u64) -> Row {
        let mut params = Map::new();
        params.put(Param::Depth, depth);
        params.put(Param::Cache, "direct");
        Row {
            workload: "fs-read".into(),
            params,
            ops: 1000,
            ops_per_sec,
            ctx_switches_voluntary: ctx_switches,
            verified: true,
            ..summary_row(engine, run, 0.0, 0)
        }
    }

    #[test]
    fn read_studies_that_differ_only_in_depth_make_a_sweep_with_verdicts_and_charts() {
        let rows: Vec<Row> = [
            row("threads", 1, 10_000.0, 1000),
            row("uring-ring", 1, 11_000.0, 1000),
            row("uring-nop", 1, 1e6, 0),
            row("threads", 16, 50_000.0, 1100),
            row("uring-ring", 16, 60_000.0, 70),
            row("uring-nop", 16, 9e6, 0),
        ]
        .concat();
        let studies = crate::analysis::Analysis::of_rows(&rows).studies;
        let sweeps = depth_sweeps(&studies);
        assert_eq!(sweeps.len(), 1);
        let sweep = &sweeps[0];
        assert!(sweep.title.contains("cache=direct"), "{}", sweep.title);
        assert_eq!(sweep.points.len(), 2);
        assert_eq!(depth_cells(sweep).lines.len(), 6);
        // No engine is called fastest: each is decided against the depth's baseline.
        let verdicts = depth_verdicts(sweep);
        assert_eq!(verdicts.len(), 2);
        assert!(
            verdicts[1].starts_with("depth 16: against threads: uring-ring faster (1.20× ["),
            "{verdicts:?}"
        );
        assert!(
            verdicts[1].contains("0.07 context switches"),
            "{verdicts:?}"
        );
        assert!(verdicts[1].contains("floor"), "{verdicts:?}");
        assert_eq!(depth_charts(sweep).unwrap().len(), 2);
    }
}
