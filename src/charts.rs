//! Memory charts drawn with plotters' SVG backend: pure functions from the core's figures to
//! an SVG string (tested natively; the page sets it as a panel's inner HTML). Legends are the
//! page's HTML, not plotters': plotters measures legend text in the browser through a styled
//! span, which the page's Content-Security-Policy (no style attributes) forbids.

use plotters::prelude::*;

/// The memory terms of one pipeline stage, in bytes, in stacking order.
pub const TERMS: [&str; 5] = ["parameters", "gradients", "optimizer", "activations", "overhead"];
const TERM_COLOURS: [RGBColor; 5] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x99, 0x99, 0x99), // grey
];
const CAPACITY: RGBColor = RGBColor(0xD5, 0x5E, 0x00); // vermillion

pub const CAPACITY_COLOUR: &str = "#d55e00";

pub fn term_colour(i: usize) -> String {
    let RGBColor(r, g, b) = TERM_COLOURS[i % 5];
    format!("#{r:02x}{g:02x}{b:02x}")
}

const GIB: f64 = (1u64 << 30) as f64;

fn ink(dark: bool) -> RGBColor {
    if dark { RGBColor(0xe8, 0xe8, 0xe8) } else { RGBColor(0x22, 0x22, 0x22) }
}

/// Per-stage stacked bars against the GPU's capacity line. `stages[i]` holds the five terms.
pub fn stage_bars(stages: &[[u64; 5]], capacity: u64, dark: bool, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let n = stages.len().max(1);
        let top = stages.iter().map(|s| s.iter().sum::<u64>()).max().unwrap_or(0).max(capacity) as f64 / GIB * 1.12;
        let fg = ink(dark);
        let text = |px: u32| ("sans-serif", px).into_font().color(&fg);
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(54)
            .build_cartesian_2d(0f64..n as f64, 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let step = (n / 16).max(1);
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(fg.mix(0.08))
            .bold_line_style(fg.mix(0.15))
            .axis_style(fg.mix(0.6))
            .x_labels(n.min(16) + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor()).abs() < 1e-9 && i < n && i % step == 0 { format!("{i}") } else { String::new() }
            })
            .x_desc("pipeline stage")
            .y_desc("GiB per GPU")
            .label_style(text(12))
            .axis_desc_style(text(12))
            .draw();
        for (t, colour) in TERM_COLOURS.iter().enumerate() {
            let bars = stages.iter().enumerate().map(|(i, s)| {
                let below: u64 = s[..t].iter().sum();
                let (y0, y1) = (below as f64 / GIB, (below + s[t]) as f64 / GIB);
                let (x0, x1) = (i as f64 + 0.18, i as f64 + 0.82);
                Rectangle::new([(x0, y0), (x1, y1)], colour.filled())
            });
            let _ = chart.draw_series(bars);
        }
        let cap = capacity as f64 / GIB;
        capacity_line(&mut chart, 0.0, n as f64, cap);
        let _ = root.present();
    }
    svg
}

/// One point of a sweep: the swept value, the peak memory per GPU (None when the plan could
/// not be sized there), and whether the plan is valid there.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub value: u64,
    pub peak_bytes: Option<u64>,
    pub fits: bool,
}

/// Peak memory against the swept field, with the capacity line; points that fit are filled,
/// points that do not are hollow.
pub fn sweep(points: &[SweepPoint], field: &str, capacity: u64, dark: bool, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let n = points.len().max(1);
        let top = points.iter().filter_map(|p| p.peak_bytes).max().unwrap_or(0).max(capacity) as f64 / GIB * 1.12;
        let fg = ink(dark);
        let text = |px: u32| ("sans-serif", px).into_font().color(&fg);
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(54)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let labels: Vec<String> = points.iter().map(|p| p.value.to_string()).collect();
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(fg.mix(0.08))
            .bold_line_style(fg.mix(0.15))
            .axis_style(fg.mix(0.6))
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 { labels.get(i as usize).cloned().unwrap_or_default() } else { String::new() }
            })
            .x_desc(field)
            .y_desc("peak GiB per GPU")
            .label_style(text(12))
            .axis_desc_style(text(12))
            .draw();
        let cap = capacity as f64 / GIB;
        capacity_line(&mut chart, -0.5, n as f64 - 0.5, cap);
        let line: Vec<(f64, f64)> = points.iter().enumerate().filter_map(|(i, p)| p.peak_bytes.map(|b| (i as f64, b as f64 / GIB))).collect();
        let blue = TERM_COLOURS[0];
        let _ = chart.draw_series(LineSeries::new(line, blue.stroke_width(2)));
        let _ = chart.draw_series(points.iter().enumerate().filter_map(|(i, p)| {
            let b = p.peak_bytes? as f64 / GIB;
            let style = if p.fits { blue.filled() } else { blue.stroke_width(2) };
            Some(Circle::new((i as f64, b), 5, style))
        }));
        let _ = root.present();
    }
    svg
}

/// The step-time terms of [`meshplan_core::Breakdown`], in stacking order.
pub use meshplan_core::perf::BREAKDOWN_TERMS as STEP_TERMS;
/// Okabe–Ito, colour-blind safe; the ninth (optimizer) is the ink colour, see [`step_colour`].
const STEP_COLOURS: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2), // blue: compute
    RGBColor(0x56, 0xB4, 0xE9), // sky blue: recompute
    RGBColor(0x00, 0x9E, 0x73), // bluish green: TP
    RGBColor(0xF0, 0xE4, 0x42), // yellow: CP
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple: EP
    RGBColor(0xE6, 0x9F, 0x00), // orange: PP
    RGBColor(0xD5, 0x5E, 0x00), // vermillion: DP
    RGBColor(0x99, 0x99, 0x99), // grey: bubble
];

fn step_rgb(i: usize, dark: bool) -> RGBColor {
    STEP_COLOURS.get(i).copied().unwrap_or_else(|| if dark { RGBColor(0xf2, 0xf2, 0xf2) } else { RGBColor(0x3a, 0x3a, 0x3a) })
}

/// The fill of step-time term `i` as `#rrggbb` (for the page's legend).
pub fn step_colour(i: usize, dark: bool) -> String {
    let RGBColor(r, g, b) = step_rgb(i, dark);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The current plan's marker on the Pareto chart.
pub const CURRENT_COLOUR: &str = "#d55e00";

/// One stacked horizontal bar of a step's time, `terms` in [`STEP_TERMS`] order, in seconds.
pub fn step_bar(terms: &[f64; 9], dark: bool, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let total: f64 = terms.iter().filter(|t| t.is_finite() && **t > 0.0).sum();
        let right = if total > 0.0 { total * 1.04 } else { 1.0 };
        let fg = ink(dark);
        let text = |px: u32| ("sans-serif", px).into_font().color(&fg);
        let chart = ChartBuilder::on(&root).margin(8).x_label_area_size(34).y_label_area_size(10).build_cartesian_2d(0f64..right, 0f64..1f64);
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .light_line_style(fg.mix(0.08))
            .bold_line_style(fg.mix(0.15))
            .axis_style(fg.mix(0.6))
            .x_desc("seconds per step")
            .x_label_formatter(&|x| seconds(*x))
            .label_style(text(12))
            .axis_desc_style(text(12))
            .draw();
        let mut at = 0.0;
        for (i, &t) in terms.iter().enumerate() {
            if !(t.is_finite() && t > 0.0) {
                continue;
            }
            let _ = chart.draw_series(std::iter::once(Rectangle::new([(at, 0.15), (at + t, 0.85)], step_rgb(i, dark).filled())));
            at += t;
        }
        let _ = root.present();
    }
    svg
}

fn seconds(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() < 0.1 {
        format!("{:.0} ms", x * 1e3)
    } else {
        format!("{x:.2} s")
    }
}

/// One point of the Pareto front (or the current plan): peak memory per GPU and throughput.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontPoint {
    pub peak_bytes: u64,
    pub tokens_per_s_per_gpu: f64,
}

/// Peak memory (x) against tokens/s per GPU (y) of the Pareto set, joined as a step line, with the
/// GPU's capacity as a vertical line and the current plan as a vermillion diamond.
pub fn pareto(front: &[FrontPoint], current: Option<FrontPoint>, capacity: u64, dark: bool, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let all = || front.iter().chain(current.iter()).filter(|p| p.tokens_per_s_per_gpu.is_finite());
        let right = all().map(|p| p.peak_bytes).max().unwrap_or(0).max(capacity) as f64 / GIB * 1.08;
        let top = all().map(|p| p.tokens_per_s_per_gpu).fold(0.0, f64::max) * 1.12;
        let fg = ink(dark);
        let text = |px: u32| ("sans-serif", px).into_font().color(&fg);
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(62)
            .build_cartesian_2d(0f64..right.max(1.0), 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = chart
            .configure_mesh()
            .light_line_style(fg.mix(0.08))
            .bold_line_style(fg.mix(0.15))
            .axis_style(fg.mix(0.6))
            .x_desc("peak GiB per GPU")
            .y_desc("tokens/s per GPU")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(text(12))
            .axis_desc_style(text(12))
            .draw();
        let cap = capacity as f64 / GIB;
        let _ = chart.draw_series(LineSeries::new([(cap, 0.0), (cap, top.max(1.0))], CAPACITY.mix(0.5).stroke_width(1)));
        let blue = TERM_COLOURS[0];
        let pts: Vec<(f64, f64)> = front.iter().map(|p| (p.peak_bytes as f64 / GIB, p.tokens_per_s_per_gpu)).collect();
        // The front as a staircase: each layout is the best below its own memory.
        let mut stairs = Vec::with_capacity(pts.len() * 2);
        for (i, &(x, y)) in pts.iter().enumerate() {
            if i > 0 {
                stairs.push((x, pts[i - 1].1));
            }
            stairs.push((x, y));
        }
        let _ = chart.draw_series(LineSeries::new(stairs, blue.mix(0.6).stroke_width(1)));
        let _ = chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, blue.filled())));
        if let Some(c) = current {
            let (x, y) = (c.peak_bytes as f64 / GIB, c.tokens_per_s_per_gpu);
            let diamond = |dx: i32, dy: i32| EmptyElement::at((x, y)) + Polygon::new(vec![(0, -dy), (dx, 0), (0, dy), (-dx, 0)], CAPACITY.filled());
            let _ = chart.draw_series(std::iter::once(diamond(7, 7)));
        }
        let _ = root.present();
    }
    svg
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>;

/// The GPU's capacity as a horizontal line from `x0` to `x1`.
fn capacity_line<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, x0: f64, x1: f64, cap: f64) {
    let _ = chart
        .draw_series(LineSeries::new([(x0, cap), (x1, cap)], CAPACITY.stroke_width(2)));
}

fn svg_error() -> String {
    r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>"#.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_bars_draw_one_rect_per_term_and_stage_and_the_capacity_line() {
        let g = 1u64 << 30;
        let svg = stage_bars(&[[4 * g, 8 * g, 12 * g, 10 * g, 2 * g], [4 * g, 8 * g, 12 * g, 6 * g, 2 * g]], 80 * g, false, (640, 320));
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("pipeline stage"));
        assert_eq!(svg.matches("<rect").count() - svg.matches("<rect x=\"0\" y=\"0\"").count() >= 10, true, "five terms × two stages");
        assert!(svg.contains(r##"stroke="#D55E00""##) || svg.contains(r##"stroke="#d55e00""##), "the capacity line");
        // No inline style attributes: the page's CSP forbids them.
        assert!(!svg.contains("style="));
    }

    #[test]
    fn sweep_marks_points_that_do_not_fit() {
        let g = 1u64 << 30;
        let pts = [
            SweepPoint { value: 1, peak_bytes: Some(120 * g), fits: false },
            SweepPoint { value: 2, peak_bytes: Some(70 * g), fits: true },
            SweepPoint { value: 4, peak_bytes: None, fits: false },
        ];
        let svg = sweep(&pts, "tensor_model_parallel_size", 80 * g, true, (640, 300));
        assert!(svg.contains("tensor_model_parallel_size"));
        assert!(svg.contains("<circle"));
        assert!(!svg.contains("style="));
    }

    #[test]
    fn step_bar_stacks_the_nonzero_terms_in_order() {
        let svg = step_bar(&[1.0, 0.2, 0.1, 0.0, 0.0, 0.05, 0.02, 0.3, 0.01], false, (640, 100));
        assert!(svg.contains("seconds per step"));
        assert!(svg.contains(r##"fill="#0072B2""##) || svg.contains(r##"fill="#0072b2""##), "compute in blue");
        assert!(!svg.to_lowercase().contains(r##"fill="#f0e442""##), "CP is zero: no bar");
        assert!(!svg.contains("style="));
        assert_eq!(step_colour(0, false), "#0072b2");
        assert_ne!(step_colour(8, false), step_colour(8, true), "the optimizer follows the ink");
        assert!(step_bar(&[0.0; 9], true, (640, 100)).starts_with("<svg"));
    }

    #[test]
    fn pareto_draws_the_front_and_marks_the_current_plan() {
        let g = 1u64 << 30;
        let front = [
            FrontPoint { peak_bytes: 30 * g, tokens_per_s_per_gpu: 5000.0 },
            FrontPoint { peak_bytes: 50 * g, tokens_per_s_per_gpu: 8000.0 },
        ];
        let svg = pareto(&front, Some(FrontPoint { peak_bytes: 40 * g, tokens_per_s_per_gpu: 6000.0 }), 80 * g, true, (640, 300));
        assert!(svg.contains("peak GiB per GPU") && svg.contains("tokens/s per GPU"));
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("<polygon"), "the current plan's diamond");
        assert!(svg.contains(r##"fill="#E8E8E8""##) || svg.contains(r##"fill="#e8e8e8""##), "dark ink");
        assert!(!svg.contains("style="));
        let none = pareto(&[], None, 80 * g, false, (640, 300));
        assert!(none.starts_with("<svg") && !none.contains("<polygon"));
    }
}
