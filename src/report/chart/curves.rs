//! The equal-load curves: per engine, p99 against the rate it achieved, and server CPU per
//! operation against the rate offered, one line each; points an engine did not hold are
//! hollow.

use plotters::prelude::*;

use super::{color_of, draw_legend, FONT, WIDTH_PX};
use crate::model::study::op_noun;
use crate::report::equal_load::{EqualLoad, Point};

/// What a curve draws: its title, its y unit, its x (the rate) and y from a point, and whether
/// its y axis is logarithmic.
struct Curve {
    title: String,
    unit: &'static str,
    x: fn(&Point) -> f64,
    y: fn(&Point) -> f64,
    log: bool,
}

/// The two charts of one equal-load comparison.
pub fn equal_load_charts(load: &EqualLoad) -> anyhow::Result<Vec<String>> {
    let noun = op_noun(&load.workload);
    let curves = [
        Curve {
            title: format!("p99 latency against achieved {noun}s/s (from each due time)"),
            unit: "p99 µs",
            x: |point| point.achieved,
            y: |point| point.p99_us,
            log: true,
        },
        Curve {
            title: format!("server CPU µs per {noun} against offered {noun}s/s"),
            unit: "server CPU µs/op",
            x: |point| point.offered,
            y: |point| point.cpu_us_per_op.median,
            log: false,
        },
    ];
    curves.iter().map(|curve| draw(load, curve)).collect()
}

fn draw(load: &EqualLoad, curve: &Curve) -> anyhow::Result<String> {
    let points = || load.engines.iter().flat_map(|(_, points)| points.iter());
    let x_high = points().map(curve.x).fold(0.0, f64::max) * 1.1;
    let ys: Vec<f64> = points().map(curve.y).filter(|y| y.is_finite()).collect();
    let y_high = ys.iter().copied().fold(0.0, f64::max).max(1.0) * 1.2;
    let y_low = ys.iter().copied().fold(f64::INFINITY, f64::min).max(1.0) / 1.2;
    let axis = "hollow: a point the engine did not hold (behind schedule, short of the rate, \
                or p99 over the bound)";
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 380)).into_drawing_area();
        root.fill(&WHITE)?;
        let caption = format!("{}: {}", load.title(), curve.title);
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(caption, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        let x_range = 0.0..x_high.max(1.0);
        if curve.log {
            let mut chart = builder.build_cartesian_2d(x_range, (y_low..y_high).log_scale())?;
            chart
                .configure_mesh()
                .x_desc(axis)
                .y_desc(curve.unit)
                .label_style((FONT, 12))
                .draw()?;
            lines(load, curve, &mut chart)?;
            draw_legend(&mut chart)?;
        } else {
            let mut chart = builder.build_cartesian_2d(x_range, 0.0..y_high)?;
            chart
                .configure_mesh()
                .x_desc(axis)
                .y_desc(curve.unit)
                .label_style((FONT, 12))
                .draw()?;
            lines(load, curve, &mut chart)?;
            draw_legend(&mut chart)?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// One line per engine, a dot per point: filled where it held the rate.
fn lines<'a, CT>(
    load: &EqualLoad,
    curve: &Curve,
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> anyhow::Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for (index, (engine, points)) in load.engines.iter().enumerate() {
        let color = color_of(index, false);
        let drawn: Vec<&Point> = points.iter().filter(|p| (curve.y)(p).is_finite()).collect();
        let line = drawn.iter().map(|p| ((curve.x)(p), (curve.y)(p)));
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))?
            .label(engine.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        let dots = drawn.iter().map(|p| {
            let style = match p.held {
                true => color.filled(),
                false => color.stroke_width(1),
            };
            Circle::new(((curve.x)(p), (curve.y)(p)), 4, style)
        });
        chart.draw_series(dots)?;
    }
    Ok(())
}
