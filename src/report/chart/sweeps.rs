//! The sweep charts: each engine's figures against what a sweep's studies differ in (server
//! threads, size, the server's work per request), one line per engine through its medians, the
//! whiskers each engine's decided interval against the point's baseline (what its verdict used).

use plotters::prelude::*;

use super::{color_of, draw_legend, drawn, drawn_range, FONT, WIDTH_PX};
use crate::analysis::numbers::per_op;
use crate::analysis::plan::decided_range;
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::report::threads::{Sweep, Swept};
use crate::stats::Spread;
use crate::units::format_size;

/// One figure of an engine's runs that a sweep chart draws, and what it is called.
type SweepFigure = (&'static str, fn(&EngineSummary, u64) -> Spread);

/// What the sweep charts draw against server threads: throughput, then server CPU per op.
const SWEEP_FIGURES: [SweepFigure; 2] = [
    ("throughput", |engine, _| engine.throughput),
    ("server CPU µs per op", |engine, _| engine.cpu_us_per_op),
];

/// What they draw against size: server CPU per op, then per byte (where a feature pays).
const SIZE_FIGURES: [SweepFigure; 2] = [
    ("server CPU µs per op", |engine, _| engine.cpu_us_per_op),
    ("server CPU ns per byte", |engine, bytes| {
        let per_byte = |us: f64| us * 1e3 / bytes.max(1) as f64;
        let cpu = engine.cpu_us_per_op;
        Spread {
            median: per_byte(cpu.median),
            min: per_byte(cpu.min),
            max: per_byte(cpu.max),
        }
    }),
];

/// What they draw against the server's work: server CPU per op (how much of an engine's
/// saving is left as the work grows).
const WORK_FIGURES: [SweepFigure; 1] =
    [("server CPU µs per op", |engine, _| engine.cpu_us_per_op)];

/// Throughput and server CPU per operation against the server's event loops (or server CPU
/// per operation and per byte against size, server CPU per operation against work), one line
/// per engine, whiskers the decided interval against the point's baseline.
pub fn thread_sweep_charts(sweep: &Sweep) -> anyhow::Result<Vec<String>> {
    let figures: &[SweepFigure] = match sweep.swept {
        Swept::ServerThreads | Swept::Depth => &SWEEP_FIGURES,
        Swept::Size => &SIZE_FIGURES,
        Swept::Work => &WORK_FIGURES,
    };
    figures
        .iter()
        .map(|figure| thread_sweep_chart(sweep, figure))
        .collect()
}

/// The metric whose comparisons decide a figure of the sweep charts.
fn metric_of(what: &str) -> Metric {
    match what {
        "throughput" => Metric::Throughput,
        _ => Metric::CpuPerOp,
    }
}

fn thread_sweep_chart(sweep: &Sweep, figure: &SweepFigure) -> anyhow::Result<String> {
    let (what, value) = *figure;
    let unit = match what {
        "throughput" => sweep.unit(),
        "server CPU ns per byte" => "ns".to_string(),
        _ => "µs".to_string(),
    };
    let engines = sweep.engines();
    // Sizes go on a log2 axis: 64 B to 64 KiB are ten even steps; work on a linear one, in µs.
    let x_of = |at: u64| match sweep.swept {
        Swept::ServerThreads => at as f64,
        Swept::Size | Swept::Depth => (at.max(1) as f64).log2(),
        Swept::Work => at as f64 / 1e3,
    };
    let xs: Vec<f64> = sweep
        .points
        .iter()
        .map(|(at, _)| drawn(x_of(*at)))
        .collect();
    let (first, last) = (xs[0], xs[xs.len() - 1]);
    let first = match sweep.swept {
        Swept::ServerThreads => 1.0,
        Swept::Size | Swept::Work | Swept::Depth => first,
    };
    let high = (engines.iter())
        .flat_map(|engine| {
            sweep
                .runs_of(engine)
                .map(|(at, runs)| drawn(value(runs, at).max))
        })
        .fold(0.0, f64::max);
    let shared: Vec<u64> = (sweep.points.iter())
        .map(|(threads, _)| *threads)
        .filter(|&threads| sweep.shared_cpus(threads).is_some())
        .collect();
    let (mut axis, noun) = match sweep.swept {
        Swept::ServerThreads => (
            "server threads (event loops; medians, whiskers: the decided interval against \
             the baseline)"
                .to_string(),
            "server threads",
        ),
        Swept::Size => (
            "bytes per message or body (medians, whiskers: the decided interval against the \
             baseline)"
                .to_string(),
            "size",
        ),
        Swept::Depth => (
            "queue depth (medians, whiskers: the decided interval against the baseline)"
                .to_string(),
            "queue depth",
        ),
        Swept::Work => (
            "the server's work per request, µs (medians, whiskers: the decided interval \
             against the baseline)"
                .to_string(),
            "the server's work per request",
        ),
    };
    if let Some(first) = shared.first() {
        axis = format!("{axis}; from {first} threads the load shared a CPU with the server");
    }
    let swept = sweep.swept;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 380)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{what} ({unit}) against {noun}"), (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                drawn_range(first - 0.5, last + 0.5),
                drawn_range(0.0, (high * 1.15).max(1.0)),
            )?;
        chart
            .configure_mesh()
            // At most a dozen labels: a sweep to 100 µs of work has no label per µs.
            .x_labels(((last - first) as usize + 2).min(12))
            .x_label_formatter(&|position| match (position.fract() == 0.0, swept) {
                (false, _) => String::new(),
                (true, Swept::ServerThreads) => format!("{position:.0}"),
                (true, Swept::Size) => format_size(2f64.powf(*position) as u64),
                (true, Swept::Depth) => format!("{:.0}", 2f64.powf(*position)),
                (true, Swept::Work) => format!("{position:.0}"),
            })
            .y_label_formatter(&|position| per_op(*position))
            .y_desc(unit.as_str())
            .x_desc(axis.as_str())
            .label_style((FONT, 12))
            .draw()?;
        for (index, engine) in engines.iter().enumerate() {
            let color = color_of(index, false);
            let runs: Vec<(f64, Spread)> = (sweep.runs_of(engine))
                .map(|(at, summary)| {
                    let spread = value(summary, at);
                    let median = spread.median;
                    // The whisker is the verdict's interval, scaled as the figure is.
                    let study = sweep
                        .points
                        .iter()
                        .find(|(point, _)| *point == at)
                        .map(|(_, s)| s);
                    let scale = |cpu: f64| match spread.median / summary.cpu_us_per_op.median {
                        share if share.is_finite() && what != "throughput" => cpu * share,
                        _ => cpu,
                    };
                    let (min, max) = (study
                        .and_then(|study| decided_range(study, engine, metric_of(what))))
                    .map_or((median, median), |(low, high)| match what {
                        "throughput" => (low, high),
                        _ => (scale(low), scale(high)),
                    });
                    (
                        drawn(x_of(at)),
                        Spread {
                            median: drawn(median),
                            min: drawn(min),
                            max: drawn(max),
                        },
                    )
                })
                .collect();
            let line = runs.iter().map(|(x, spread)| (*x, spread.median));
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))?
                .label(*engine)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            let whiskers = runs.iter().map(|(x, spread)| {
                PathElement::new(vec![(*x, spread.min), (*x, spread.max)], color)
            });
            chart.draw_series(whiskers)?;
            let dots = (runs.iter())
                .map(|(x, spread)| Circle::new((*x, spread.median), 3, color.filled()));
            chart.draw_series(dots)?;
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}
