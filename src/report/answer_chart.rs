//! The answer as a picture: one small chart per study at the top of the report. Each engine of
//! the study's line as a multiple of the line's baseline, with the interval the first screen
//! decided it by (its whisker); the margins shaded (±3%: no difference beyond it; ±10%: within
//! it); a star only on the engine the analysis decided faster than the baseline and every other
//! engine of the line. Where the load generator set the pace (the cell's regime), the title says
//! so once and every bar is hollow.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::analysis::numbers::ratio;
use crate::analysis::plan::{line, ranks};
use crate::analysis::screen::{rounds_text, words};
use crate::model::regime::CellRegime;
use crate::model::study::Study;
use crate::model::summary::EngineSummary;
use crate::model::summary::Metric;
use crate::report::chart::{drawn, drawn_range, with_title, FONT, PALETTE};

const WIDTH_PX: u32 = 440;
const ROW_PX: u32 = 20;
const WINNER: RGBColor = RGBColor(44, 160, 44);
const BASELINE: RGBColor = RGBColor(120, 120, 120);
const NOISE: RGBColor = RGBColor(160, 160, 160);

/// One engine's bar: its decided ratio to the baseline and its interval.
struct Line<'a> {
    engine: &'a EngineSummary,
    ratio: f64,
    low: f64,
    high: f64,
}

/// The study's answer chart, its winner (decided by the first screen) starred; None when fewer
/// than two engines of the line have a result to compare (the answer says why).
pub fn answer_chart(
    study: &Study,
    regime: Option<&CellRegime>,
    winner: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let engines = line(study);
    let [baseline, _, ..] = engines.as_slice() else {
        return Ok(None);
    };
    let lines: Vec<Line> = (engines.iter())
        .map(|engine| {
            let decided = study.decided(&engine.engine, &baseline.engine, Metric::Throughput);
            match decided {
                Some(c) => Line {
                    engine,
                    ratio: drawn(c.ratio),
                    low: drawn(c.low.unwrap_or(c.ratio)),
                    high: drawn(c.high.unwrap_or(c.ratio)),
                },
                None => Line {
                    engine,
                    ratio: 1.0,
                    low: 1.0,
                    high: 1.0,
                },
            }
        })
        .collect();
    let winner = (lines.iter()).position(|line| Some(line.engine.engine.as_str()) == winner);
    let margin = 1.0 + Metric::Throughput.margin();
    let equivalence = 1.0 + Metric::Throughput.equivalence_margin();
    let hollow = !ranks(regime);
    let mut title = words(study);
    if let Some(regime) = regime.filter(|_| hollow) {
        title.push_str(&format!(
            ": {} (bars rank the load generator)",
            regime.name()
        ));
    }
    let axis = format!(
        "× {}'s {} (paired over {}; shaded: ±3%, ±10%)",
        baseline.engine,
        study.unit(),
        rounds_text(study.rounds())
    );
    let description: Vec<String> = (lines.iter().skip(1))
        .map(|line| {
            format!(
                "{} {:.2}× [{:.2}–{:.2}]",
                line.engine.engine, line.ratio, line.low, line.high
            )
        })
        .collect();
    let marked = Marked {
        winner,
        noise: (1.0 / margin, margin),
        within: (1.0 / equivalence, equivalence),
        hollow,
        description: format!(
            "Each engine's {} as a multiple of {}'s: {}.",
            study.unit(),
            baseline.engine,
            description.join("; ")
        ),
    };
    draw(&title, &axis, &lines, &marked)
}

/// What the chart marks besides the bars: the winner's index, the margins as ratios, whether
/// the bars are the load generator's limit, and the chart in words.
struct Marked {
    winner: Option<usize>,
    noise: (f64, f64),
    within: (f64, f64),
    hollow: bool,
    description: String,
}

fn draw(
    title: &str,
    axis: &str,
    lines: &[Line],
    marked: &Marked,
) -> anyhow::Result<Option<String>> {
    let (winner, noise, within) = (marked.winner, marked.noise, marked.within);
    let count = lines.len() as u32;
    let headroom = 1.4;
    let high = (lines.iter())
        .map(|line| line.high.max(line.ratio))
        .fold(noise.1.max(1.0), f64::max);
    let label_chars = (lines.iter())
        .map(|line| line.engine.engine.len())
        .max()
        .unwrap_or(4);
    let mut svg = String::new();
    {
        let height_px = 78 + ROW_PX * count;
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, height_px)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 14))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(label_chars as u32 * 7 + 12)
            .build_cartesian_2d(
                drawn_range(0.0, high * headroom),
                (0..count - 1).into_segmented(),
            )?;
        let labels: Vec<&str> = (lines.iter().rev())
            .map(|line| line.engine.engine.as_str())
            .collect();
        chart
            .configure_mesh()
            .disable_mesh()
            .y_labels(count as usize)
            .y_label_formatter(&|value| match value {
                SegmentValue::CenterOf(index) => {
                    labels.get(*index as usize).copied().unwrap_or("").into()
                }
                _ => String::new(),
            })
            .x_labels(6)
            .x_label_formatter(&|value| format!("{value:.1}×"))
            .x_desc(axis)
            .label_style((FONT, 13))
            .draw()?;
        for (index, line) in lines.iter().enumerate() {
            let slot = count - 1 - index as u32;
            let color = if Some(index) == winner {
                WINNER
            } else if index == 0 {
                BASELINE
            } else {
                PALETTE[0]
            };
            let mut text = ratio(line.ratio);
            if Some(index) == winner {
                text.push_str(" ★");
            }
            let corners = [
                (0.0, SegmentValue::Exact(slot)),
                (line.ratio, SegmentValue::Exact(slot + 1)),
            ];
            // Where the load generator set the pace every bar is hollow: its limit, not a server's.
            let style = if marked.hollow {
                color.stroke_width(2)
            } else {
                color.filled()
            };
            let mut bar = Rectangle::new(corners, style);
            bar.set_margin(3, 3, 0, 0);
            chart.draw_series(std::iter::once(bar))?;
            let centre = SegmentValue::CenterOf(slot);
            let whisker = [(line.low, centre.clone()), (line.high, centre.clone())];
            chart.draw_series(std::iter::once(PathElement::new(whisker, BLACK)))?;
            let label = EmptyElement::at((line.high.max(line.ratio), centre))
                + Text::new(text, (5, -5), (FONT, 13).into_font());
            chart.draw_series(std::iter::once(label))?;
        }
        // The margins over the bars, translucent: a bar's end inside the darker band is no
        // difference beyond 3%, inside the lighter one within 10%.
        let wide = [
            (within.0, SegmentValue::Exact(0)),
            (within.1, SegmentValue::Exact(count)),
        ];
        chart.draw_series(std::iter::once(Rectangle::new(
            wide,
            NOISE.mix(0.25).filled(),
        )))?;
        let band = [
            (noise.0, SegmentValue::Exact(0)),
            (noise.1, SegmentValue::Exact(count)),
        ];
        chart.draw_series(std::iter::once(Rectangle::new(
            band,
            NOISE.mix(0.55).filled(),
        )))?;
        let one = [
            (1.0, SegmentValue::Exact(0)),
            (1.0, SegmentValue::Exact(count)),
        ];
        chart.draw_series(std::iter::once(PathElement::new(one, BLACK)))?;
        root.present()?;
    }
    Ok(Some(with_title(svg, title, &marked.description)))
}
