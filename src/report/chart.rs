//! The report's charts as inline SVG (plotters' SVG backend, no font library: the browser draws
//! the text). Every chart states its unit, the rounds behind each bar and the load model when
//! the rows record one; a whisker is the interval its engine's verdict was decided by (against
//! its baseline, from the one analysis), so a chart shows what the words under it used.

mod curves;
mod sweeps;

pub use curves::equal_load_charts;
pub use sweeps::thread_sweep_charts;

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::analysis::numbers::{per_op, ratio, throughput};
use crate::analysis::plan::decided_range;
use crate::analysis::screen::rounds_text;
use crate::model::ladder::ladder;
use crate::model::study::{op_noun, Study, CONTENDER_PREFIX};
use crate::model::summary::Metric;
use crate::model::summary::{EngineSummary, PERCENTILES};
use crate::report::contenders::reference;

const WIDTH_PX: u32 = 780;
const ROW_PX: u32 = 30;
pub const FONT: &str = "sans-serif";

/// Engine colours in table order; controls are grey so they read as a reference, not a rival.
/// A comparison that is not a decided difference.
pub const UNDECIDED: RGBColor = RGBColor(150, 150, 150);

pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];
const CONTROL_COLOR: RGBColor = RGBColor(150, 150, 150);

/// The largest magnitude a chart draws. plotters steps through an axis to place its ticks, so
/// an infinite end (a ratio over a baseline near zero, from a crafted document) never finishes:
/// every range and value is made finite, and within this, before plotters sees it.
const DRAWN_MAX: f64 = 1e18;

/// Where a value is drawn: NaN at zero, anything beyond `DRAWN_MAX` (infinity too) at it.
pub(crate) fn drawn(value: f64) -> f64 {
    if value.is_nan() {
        0.0
    } else {
        value.clamp(-DRAWN_MAX, DRAWN_MAX)
    }
}

/// `svg` with a `<title>` and a `<desc>` as the first children of its root: what a screen reader
/// says and a browser shows on hover, the chart in words.
pub fn with_title(svg: String, title: &str, description: &str) -> String {
    let Some(open) = svg
        .find("<svg")
        .and_then(|at| svg[at..].find('>').map(|end| at + end + 1))
    else {
        return svg;
    };
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "{}<title>{}</title><desc>{}</desc>{}",
        &svg[..open],
        escape(title),
        escape(description),
        &svg[open..]
    )
}

/// An axis plotters can tick: both ends drawn, and the high one above the low one.
pub(crate) fn drawn_range(low: f64, high: f64) -> std::ops::Range<f64> {
    let (low, high) = (drawn(low), drawn(high));
    low..if high > low {
        high
    } else {
        low + low.abs().max(1.0)
    }
}

/// One horizontal bar from `base` to `value`, with a whisker from `low` to `high`.
struct Bar {
    label: String,
    base: f64,
    value: f64,
    low: f64,
    high: f64,
    text: String,
    color: RGBColor,
}

/// A horizontal bar chart; `log` draws the value axis in powers of ten.
struct Bars {
    title: String,
    axis: String,
    bars: Vec<Bar>,
    log: bool,
    reference: Option<f64>,
}

impl Bars {
    /// Where a value sits on the drawn axis (its log10 when the axis is logarithmic).
    fn position(&self, value: f64) -> f64 {
        drawn(if self.log {
            value.max(1e-6).log10()
        } else {
            value
        })
    }

    fn axis_range(&self) -> (f64, f64) {
        let values = self
            .bars
            .iter()
            .flat_map(|bar| [bar.base, bar.value, bar.low, bar.high]);
        let values: Vec<f64> = values.chain(self.reference).map(drawn).collect();
        if self.log {
            // Headroom past the last decade keeps the value labels inside the chart.
            let (low, high) = decades(values.into_iter());
            (low, high + 0.3)
        } else {
            let low = values.iter().copied().fold(0.0, f64::min);
            let high = values.iter().copied().fold(0.0, f64::max);
            (low, if high > low { high * 1.18 } else { low + 1.0 })
        }
    }

    /// One tick per power of ten on a log axis (half-decades read as noise); plotters' choice
    /// on a linear one.
    fn tick_count(&self, low: f64, high: f64) -> usize {
        if self.log {
            (high - low).floor() as usize + 1
        } else {
            10
        }
    }

    fn tick_text(&self, position: f64) -> String {
        if self.log {
            per_op(10f64.powf(position))
        } else {
            format!("{position}")
        }
    }
}

fn draw_bars(spec: &Bars) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let count = spec.bars.len() as u32;
        let height_px = 90 + ROW_PX * count;
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, height_px)).into_drawing_area();
        root.fill(&WHITE)?;
        let label_chars = spec
            .bars
            .iter()
            .map(|bar| bar.label.len())
            .max()
            .unwrap_or(4);
        let (low, high) = spec.axis_range();
        let range = drawn_range(low, high);
        let (low, high) = (range.start, range.end);
        let mut chart = ChartBuilder::on(&root)
            .caption(&spec.title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_chars as u32 * 7 + 16)
            .build_cartesian_2d(range, (0..count - 1).into_segmented())?;
        // Segments count from the bottom; the first engine goes on top, as in the table.
        let labels: Vec<&str> = spec
            .bars
            .iter()
            .rev()
            .map(|bar| bar.label.as_str())
            .collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(count as usize)
            .y_label_formatter(&|value| match value {
                SegmentValue::CenterOf(index) => labels
                    .get(*index as usize)
                    .copied()
                    .unwrap_or("")
                    .to_string(),
                _ => String::new(),
            })
            .x_labels(spec.tick_count(low, high))
            .x_label_formatter(&|position| spec.tick_text(*position))
            .x_desc(spec.axis.as_str())
            .label_style((FONT, 12))
            .draw()?;
        for (index, bar) in spec.bars.iter().enumerate() {
            let slot = count - 1 - index as u32;
            draw_bar(&mut chart, spec, bar, slot)?;
        }
        if let Some(reference) = spec.reference {
            let x = spec.position(reference);
            let line = [(x, SegmentValue::Exact(0)), (x, SegmentValue::Exact(count))];
            chart.draw_series(std::iter::once(PathElement::new(
                line,
                BLACK.stroke_width(1),
            )))?;
        }
        root.present()?;
    }
    Ok(svg)
}

type BarChart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordu32>,
    >,
>;

fn draw_bar(chart: &mut BarChart, spec: &Bars, bar: &Bar, slot: u32) -> anyhow::Result<()> {
    let (base, value) = (spec.position(bar.base), spec.position(bar.value));
    let corners = [
        (base, SegmentValue::Exact(slot)),
        (value, SegmentValue::Exact(slot + 1)),
    ];
    let mut rectangle = Rectangle::new(corners, bar.color.filled());
    rectangle.set_margin(6, 6, 0, 0);
    chart.draw_series(std::iter::once(rectangle))?;
    let centre = SegmentValue::CenterOf(slot);
    let (low, high) = (spec.position(bar.low), spec.position(bar.high));
    let whisker = [(low, centre.clone()), (high, centre.clone())];
    chart.draw_series(std::iter::once(PathElement::new(whisker, BLACK)))?;
    for end in [low, high] {
        let cap = EmptyElement::at((end, centre.clone()))
            + PathElement::new(vec![(0, -6), (0, 6)], BLACK);
        chart.draw_series(std::iter::once(cap))?;
    }
    let label = EmptyElement::at((high.max(value), centre))
        + Text::new(bar.text.clone(), (8, -6), (FONT, 12).into_font());
    chart.draw_series(std::iter::once(label))?;
    Ok(())
}

pub(crate) fn color_of(index: usize, control: bool) -> RGBColor {
    if control {
        CONTROL_COLOR
    } else {
        PALETTE[index % PALETTE.len()]
    }
}

/// "median of 12 rounds; whiskers: …; closed loop": what every chart states besides its unit.
fn basis(study: &Study, whiskers: bool) -> String {
    let mut text = format!("median of {}", rounds_text(study.rounds()));
    if whiskers {
        text.push_str("; whiskers: each engine's decided interval against its baseline");
    }
    if let Some(mode) = study.mode() {
        text.push_str(&format!("; {mode} loop"));
    }
    text
}

/// Throughput per engine, controls included and grey.
pub fn throughput_chart(study: &Study) -> anyhow::Result<String> {
    let unit = study.unit();
    let bars = study
        .engines
        .iter()
        .enumerate()
        .map(|(index, engine)| {
            let text = format!(
                "{} {unit}",
                throughput(study.headline, engine.throughput.median)
            );
            let range = decided_range(study, &engine.engine, Metric::Throughput);
            throughput_bar(engine, text, color_of(index, engine.control), range)
        })
        .collect();
    draw_bars(&Bars {
        title: format!("{}: throughput per engine ({unit})", study.title),
        axis: format!("{unit} ({})", basis(study, true)),
        bars,
        log: false,
        reference: None,
    })
}

/// An engine's median throughput as a bar from zero, its decided interval against its baseline
/// (`range`) as the whisker; none where it has no decided ratio (the baseline, a control).
fn throughput_bar(
    engine: &EngineSummary,
    text: String,
    color: RGBColor,
    range: Option<(f64, f64)>,
) -> Bar {
    let median = engine.throughput.median;
    let (low, high) = range.unwrap_or((median, median));
    Bar {
        label: engine.engine.clone(),
        base: 0.0,
        value: median,
        low,
        high,
        text,
        color,
    }
}

/// The contenders beside ringside's engines they are compared with (the raw engine of each
/// one's API, or the fastest engine): throughput with whiskers, CPU per operation in the label;
/// None without contenders.
pub fn contenders_chart(study: &Study) -> anyhow::Result<Option<String>> {
    if study.contenders.is_empty() {
        return Ok(None);
    }
    let mut shown: Vec<(usize, &EngineSummary)> = Vec::new();
    for contender in &study.contenders {
        if let Some((engine, _)) = reference(study, contender) {
            let index = study.engines.iter().position(|e| e.engine == engine.engine);
            if let Some(index) = index.filter(|&i| !shown.iter().any(|(j, _)| *j == i)) {
                shown.push((index, engine));
            }
        }
    }
    shown.sort_by_key(|(index, _)| *index);
    let colored = shown
        .into_iter()
        .map(|(index, engine)| (color_of(index, false), engine));
    let contenders = (study.contenders.iter().enumerate())
        .map(|(index, contender)| (PALETTE[(index + 4) % PALETTE.len()], contender));
    let (unit, noun) = (study.unit(), op_noun(&study.workload));
    let bars = colored
        .chain(contenders)
        .map(|(color, engine)| {
            let text = format!(
                "{} {unit}, {} µs CPU/{noun}",
                throughput(study.headline, engine.throughput.median),
                per_op(engine.cpu_us_per_op.median)
            );
            // A contender's whisker is its decided interval against its reference engine.
            let range = match reference(study, engine) {
                Some((reference, _)) if engine.engine.starts_with(CONTENDER_PREFIX) => {
                    let c = study.decided(&engine.engine, &reference.engine, Metric::Throughput);
                    let median = reference.throughput.median;
                    c.and_then(|c| Some((median * c.low?, median * c.high?)))
                }
                _ => decided_range(study, &engine.engine, Metric::Throughput),
            };
            throughput_bar(engine, text, color, range)
        })
        .collect();
    let chart = draw_bars(&Bars {
        title: format!(
            "{}: contenders beside ringside's engines ({unit})",
            study.title
        ),
        axis: format!("{unit} ({})", basis(study, true)),
        bars,
        log: false,
        reference: None,
    })?;
    Ok(Some(chart))
}

/// The feature ladder: each engine's throughput over its parent's; None without rungs.
pub fn ladder_chart(study: &Study) -> anyhow::Result<Option<String>> {
    let rungs = ladder(study);
    if rungs.is_empty() {
        return Ok(None);
    }
    let bars = rungs
        .iter()
        .map(|rung| {
            let comparison = &rung.comparison;
            // Green or red only where the feature made a decided difference; grey otherwise.
            let color = match (rung.decided(), comparison.better()) {
                (true, true) => PALETTE[2],
                (true, false) => PALETTE[3],
                (false, _) => UNDECIDED,
            };
            Bar {
                label: format!("{} over {}", rung.engine, rung.parent_label()),
                base: 1.0,
                value: rung.ratio(),
                low: comparison.low.unwrap_or(rung.ratio()),
                high: comparison.high.unwrap_or(rung.ratio()),
                text: format!("{} {}", ratio(rung.ratio()), comparison.word()),
                color,
            }
        })
        .collect();
    let chart = draw_bars(&Bars {
        title: format!(
            "{}: io_uring feature ladder, what each engine bought over the engine it extends",
            study.title
        ),
        axis: format!(
            "× its parent engine's {} (paired over {}; whiskers: the interval)",
            study.unit(),
            rounds_text(study.rounds())
        ),
        bars,
        log: false,
        reference: Some(1.0),
    })?;
    Ok(Some(chart))
}

/// Syscalls per operation on a log scale (they span 1 to 0.001); None when nobody counted.
pub fn syscalls_chart(study: &Study) -> anyhow::Result<Option<String>> {
    let counted: Vec<_> = study
        .engines
        .iter()
        .enumerate()
        .filter_map(|(index, engine)| engine.syscalls_per_op.map(|spread| (index, engine, spread)))
        .collect();
    if counted.is_empty() {
        return Ok(None);
    }
    let noun = op_noun(&study.workload);
    let bars = counted
        .iter()
        .map(|(index, engine, spread)| Bar {
            label: engine.engine.clone(),
            base: 0.0,
            value: spread.median,
            low: spread.min,
            high: spread.max,
            text: per_op(spread.median),
            color: color_of(*index, engine.control),
        })
        .collect();
    let chart = draw_bars(&Bars {
        title: format!("{}: syscalls per {noun} (log scale)", study.title),
        axis: format!("syscalls per {noun}, log scale ({})", basis(study, true)),
        bars,
        log: true,
        reference: None,
    })?;
    Ok(Some(chart))
}

/// One engine's latency line: its table index (for its colour), name, control flag and the
/// median microseconds of each of `PERCENTILES`.
type LatencyLine<'a> = (usize, &'a str, bool, &'a [f64]);

/// Latency percentiles per engine, one line each, on a log scale; None without latency.
pub fn latency_chart(study: &Study) -> anyhow::Result<Option<String>> {
    let lines: Vec<LatencyLine> = study
        .engines
        .iter()
        .enumerate()
        .filter_map(|(index, engine)| {
            let us = engine.latency_us.as_deref()?;
            Some((index, engine.engine.as_str(), engine.control, us))
        })
        .collect();
    if lines.is_empty() {
        return Ok(None);
    }
    let (low, high) = decades(lines.iter().flat_map(|line| line.3.iter().copied()));
    let range = drawn_range(low, high);
    let (low, high) = (range.start, range.end);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 380)).into_drawing_area();
        root.fill(&WHITE)?;
        let count = PERCENTILES.len() as u32;
        let title = format!(
            "{}: latency percentiles per engine (µs, log scale)",
            study.title
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((0..count - 1).into_segmented(), range)?;
        chart
            .configure_mesh()
            .x_labels(count as usize)
            .x_label_formatter(&|value| match value {
                SegmentValue::CenterOf(index) => PERCENTILES
                    .get(*index as usize)
                    .map_or("", |(name, _)| name)
                    .to_string(),
                _ => String::new(),
            })
            .y_label_formatter(&|position| per_op(10f64.powf(*position)))
            .y_labels((high - low) as usize + 1)
            .y_desc("µs (log scale)")
            .x_desc(format!("percentile ({})", basis(study, false)))
            .label_style((FONT, 12))
            .draw()?;
        for line in lines {
            draw_latency_line(&mut chart, line)?;
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(Some(svg))
}

type LatencyChart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordu32>,
        plotters::coord::types::RangedCoordf64,
    >,
>;

fn draw_latency_line(chart: &mut LatencyChart, line: LatencyLine) -> anyhow::Result<()> {
    let (index, engine, control, us) = line;
    let color = color_of(index, control);
    let points: Vec<(SegmentValue<u32>, f64)> = us
        .iter()
        .enumerate()
        .filter(|(_, value)| value.is_finite())
        .map(|(slot, value)| (SegmentValue::CenterOf(slot as u32), value.max(1e-3).log10()))
        .collect();
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
        .label(engine)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
    let dots = points
        .into_iter()
        .map(|point| Circle::new(point, 3, color.filled()));
    chart.draw_series(dots)?;
    Ok(())
}

/// The engines' legend of a line chart, top left over a translucent background.
pub(crate) fn draw_legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()?;
    Ok(())
}

/// The whole powers of ten (as log10) that enclose the positive `values`, at least one apart.
fn decades(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let positive: Vec<f64> = values
        .filter(|value| *value > 0.0 && value.is_finite())
        .collect();
    let low = positive
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let high = positive
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .log10()
        .ceil();
    if low.is_finite() {
        (low, high.max(low + 1.0))
    } else {
        (0.0, 1.0)
    }
}
