//! The answer as a picture: one small chart per study at the top of the report. Each verified
//! engine's throughput as a multiple of the baseline's (the study's first engine), paired round
//! by round, its whisker the interval; the margin within which no difference is called (±3%)
//! shaded; the winner marked only where the first screen decided it; engines whose client was
//! saturated drawn hollow, since their bar is the load generator's limit.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::model::comparison::Metric;
use crate::model::study::{EngineSummary, Study};
use crate::report::answer::rounds_text;
use crate::report::chart::{FONT, PALETTE};
use crate::report::numbers::ratio;
use crate::report::verdict::decided_over_baseline;

const WIDTH_PX: u32 = 440;
const ROW_PX: u32 = 20;
const WINNER: RGBColor = RGBColor(44, 160, 44);
const BASELINE: RGBColor = RGBColor(120, 120, 120);
const NOISE: RGBColor = RGBColor(160, 160, 160);

/// One engine's bar: its ratio to the baseline's median and the ratios of its extreme runs.
struct Line<'a> {
    engine: &'a EngineSummary,
    ratio: f64,
    low: f64,
    high: f64,
}

/// The study's answer chart, its winner (decided by the first screen) marked; None when fewer
/// than two verified engines have a result to compare (the sentence under it says why).
pub fn answer_chart(study: &Study, winner: Option<&str>) -> anyhow::Result<Option<String>> {
    let engines: Vec<&EngineSummary> = (study.measured().into_iter())
        .filter(|engine| engine.verified)
        .collect();
    let [baseline, _, ..] = engines.as_slice() else {
        return Ok(None);
    };
    let base = baseline.throughput.median;
    if base <= 0.0 || !base.is_finite() {
        return Ok(None);
    }
    let decided = decided_over_baseline(study);
    let lines: Vec<Line> = (engines.iter())
        .map(|engine| {
            let over = (decided.iter())
                .find(|c| c.subject == engine.engine && c.reference == baseline.engine);
            match over {
                Some(c) => Line {
                    engine,
                    ratio: c.ratio,
                    low: c.low.unwrap_or(c.ratio),
                    high: c.high.unwrap_or(c.ratio),
                },
                None => Line {
                    engine,
                    ratio: engine.throughput.median / base,
                    low: engine.throughput.median / base,
                    high: engine.throughput.median / base,
                },
            }
        })
        .collect();
    let winner = (lines.iter()).position(|line| Some(line.engine.engine.as_str()) == winner);
    let margin = 1.0 + Metric::Throughput.margin();
    let noise = (1.0 / margin, margin);
    // When every engine was client-bound the title says so once, instead of every bar.
    let all_saturated = lines.iter().all(saturated);
    let mut title = study.title.clone();
    if all_saturated {
        title.push_str(": client saturated");
    }
    let axis = format!(
        "× {}'s {} (paired over {}; shaded: ±3%)",
        baseline.engine,
        study.unit(),
        rounds_text(study.rounds())
    );
    let marked = Marked {
        winner,
        noise,
        all_saturated,
    };
    draw(&title, &axis, &lines, &marked)
}

/// What the chart marks besides the bars: the winner's index, the margin as ratios, and
/// whether every engine was client-bound.
struct Marked {
    winner: Option<usize>,
    noise: (f64, f64),
    all_saturated: bool,
}

/// Whether the engine's figures are the load generator's limit rather than the server's.
fn saturated(line: &Line) -> bool {
    line.engine.figures.client_saturated
}

fn draw(
    title: &str,
    axis: &str,
    lines: &[Line],
    marked: &Marked,
) -> anyhow::Result<Option<String>> {
    let (winner, noise) = (marked.winner, marked.noise);
    let count = lines.len() as u32;
    // Room for the "(client-bound)" labels right of the longest bar.
    let headroom = match lines.iter().any(saturated) && !marked.all_saturated {
        true => 1.6,
        false => 1.4,
    };
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
            .build_cartesian_2d(0.0..high * headroom, (0..count - 1).into_segmented())?;
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
                text.push_str(" ★ best");
            }
            if saturated(line) && !marked.all_saturated {
                text.push_str(" (client-bound)");
            }
            let corners = [
                (0.0, SegmentValue::Exact(slot)),
                (line.ratio, SegmentValue::Exact(slot + 1)),
            ];
            // A saturated engine's bar is hollow: the client's limit, not a server's result.
            let style = if saturated(line) {
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
        // The noise over the bars, translucent, so a bar's end inside it reads as noise.
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
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::studies;
    use crate::model::study::tests::row;
    use crate::row::Row;

    #[test]
    fn the_chart_stars_only_the_winner_it_is_given_and_draws_a_saturated_engine_hollow() {
        let mut rows = Vec::new();
        for run in 1..=8 {
            let machine = 1.0 + 0.1 * f64::from(run).sin();
            rows.push(row("blocking", run, 1000.0 * machine, 10));
            rows.push(row("uring-ring", run, 1500.0 * machine, 10));
            rows.push(Row {
                client_saturated: Some(true),
                ..row("uring-defer", run, 2000.0 * machine, 10)
            });
        }
        let study = &studies(&rows)[0];
        let svg = answer_chart(study, None).unwrap().unwrap();
        assert!(!svg.contains("★ best"), "no winner given: {svg}");
        assert!(svg.contains("2.00× (client-bound)"), "{svg}");
        assert!(
            svg.contains("× blocking&apos;s MB/s (paired over 8 rounds"),
            "{svg}"
        );
        let svg = answer_chart(study, Some("uring-ring")).unwrap().unwrap();
        assert!(svg.contains("1.50× ★ best"), "{svg}");
    }

    #[test]
    fn a_study_whose_every_engine_was_client_bound_says_so_once() {
        let rows: Vec<Row> = (["blocking", "uring-ring"].into_iter())
            .map(|engine| Row {
                client_saturated: Some(true),
                ..row(engine, 1, 1000.0, 10)
            })
            .collect();
        let svg = answer_chart(&studies(&rows)[0], None).unwrap().unwrap();
        assert!(svg.contains("fs-write: client saturated"), "{svg}");
        assert!(!svg.contains("client-bound"), "{svg}");
    }

    #[test]
    fn one_verified_engine_has_nothing_to_compare() {
        let mut unverified = row("uring-ring", 1, 10.0, 10);
        unverified.verified = false;
        let rows = vec![row("blocking", 1, 1000.0, 10), unverified];
        assert!(answer_chart(&studies(&rows)[0], None).unwrap().is_none());
    }
}
