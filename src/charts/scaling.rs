//! The cluster sizing's scaling picture (issue 25): throughput per GPU (top) and time to train (bottom) against the
//! GPU count, both on a log₂ GPU axis; the efficiency threshold, the deadline and the GPU-hour budget drawn in.

use super::{CAPACITY, axes, ink, lean, svg_error, term_rgb};
use plotters::prelude::*;

/// One GPU count whose best layout runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScalePoint {
    pub gpus: u64,
    pub tokens_per_s_per_gpu: f64,
    pub days: f64,
}

/// What the picture marks besides the points.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScaleMarks {
    /// Throughput per GPU at the efficiency threshold (the best rate up to the first count below it × the threshold): a line on the top chart.
    pub threshold_tokens_per_s_per_gpu: Option<f64>,
    /// The first count below the threshold: a ring on both charts.
    pub below_at_gpus: Option<u64>,
    /// A horizontal line on the bottom chart.
    pub deadline_days: Option<f64>,
    /// The budget's boundary on the bottom chart: days = budget ÷ GPUs ÷ 24.
    pub budget_gpu_hours: Option<f64>,
    /// The count the sizing picked (deadline, else budget, else fastest): a vermillion diamond.
    pub picked_gpus: Option<u64>,
}

/// A GPU count on the x axis (log₂) labelled as the count at whole powers of two.
fn gpu_label(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-6 { format!("{:.0}", x.round().exp2()) } else { String::new() }
}

/// Days on the y axis (log₁₀) labelled with two significant figures.
fn days_label(y: &f64) -> String {
    let d = 10f64.powf(*y);
    if d >= 10.0 { format!("{d:.0}") } else { format!("{d:.2}") }
}

/// The picture as an SVG string of `size` pixels (two charts stacked).
pub fn scaling(points: &[ScalePoint], marks: &ScaleMarks, dark: bool, size: (u32, u32)) -> String {
    let pts: Vec<ScalePoint> = points.iter().copied().filter(|p| p.gpus > 0 && p.days > 0.0 && p.days.is_finite() && p.tokens_per_s_per_gpu.is_finite()).collect();
    if pts.is_empty() {
        return svg_error();
    }
    let lx = |g: u64| (g as f64).log2();
    let x0 = pts.iter().map(|p| lx(p.gpus)).fold(f64::INFINITY, f64::min) - 0.4;
    let x1 = pts.iter().map(|p| lx(p.gpus)).fold(f64::NEG_INFINITY, f64::max) + 0.4;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let halves = root.split_evenly((2, 1));
        let (fg, blue, green) = (ink(dark), term_rgb(0), term_rgb(3));
        let top = pts.iter().map(|p| p.tokens_per_s_per_gpu).fold(0.0, f64::max).max(marks.threshold_tokens_per_s_per_gpu.unwrap_or(0.0)) * 1.15;
        let chart = ChartBuilder::on(&halves[0]).margin(8).margin_right(20).x_label_area_size(30).y_label_area_size(62).build_cartesian_2d(x0..x1, 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = axes(&mut chart.configure_mesh(), fg).x_label_formatter(&gpu_label).x_desc("GPUs").y_desc("tokens/s per GPU").y_label_formatter(&|y| format!("{y:.0}")).draw();
        if let Some(t) = marks.threshold_tokens_per_s_per_gpu {
            let _ = chart.draw_series(LineSeries::new([(x0, t), (x1, t)], CAPACITY.mix(0.6).stroke_width(1)));
        }
        let line: Vec<(f64, f64)> = pts.iter().map(|p| (lx(p.gpus), p.tokens_per_s_per_gpu)).collect();
        let _ = chart.draw_series(LineSeries::new(line.clone(), blue.stroke_width(2)));
        let _ = chart.draw_series(line.iter().map(|&p| Circle::new(p, 4, blue.filled())));
        if let Some(p) = marks.below_at_gpus.and_then(|g| pts.iter().find(|p| p.gpus == g)) {
            let _ = chart.draw_series(std::iter::once(Circle::new((lx(p.gpus), p.tokens_per_s_per_gpu), 8, CAPACITY.stroke_width(2))));
        }
        // Time to train, log-log: perfect scaling is a line of slope −1.
        let ly = |d: f64| d.log10();
        let mut lo = pts.iter().map(|p| ly(p.days)).fold(f64::INFINITY, f64::min);
        let mut hi = pts.iter().map(|p| ly(p.days)).fold(f64::NEG_INFINITY, f64::max);
        if let Some(d) = marks.deadline_days.filter(|d| *d > 0.0) {
            (lo, hi) = (lo.min(ly(d)), hi.max(ly(d)));
        }
        let pad = ((hi - lo) * 0.1).max(0.1);
        let (lo, hi) = (lo - pad, hi + pad);
        let chart = ChartBuilder::on(&halves[1]).margin(8).margin_right(20).x_label_area_size(34).y_label_area_size(62).build_cartesian_2d(x0..x1, lo..hi);
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = axes(&mut chart.configure_mesh(), fg).x_label_formatter(&gpu_label).x_desc("GPUs").y_desc("days to train").y_label_formatter(&days_label).draw();
        if let Some(d) = marks.deadline_days.filter(|d| *d > 0.0) {
            let _ = chart.draw_series(LineSeries::new([(x0, ly(d)), (x1, ly(d))], CAPACITY.stroke_width(2)));
        }
        if let Some(h) = marks.budget_gpu_hours.filter(|h| *h > 0.0) {
            // Within budget below this line: GPUs × days × 24 ≤ budget.
            let edge: Vec<(f64, f64)> = (0..=40).map(|i| x0 + (x1 - x0) * i as f64 / 40.0).map(|x| (x, ly(h / x.exp2() / 24.0))).filter(|&(_, y)| (lo..=hi).contains(&y)).collect();
            let _ = chart.draw_series(LineSeries::new(edge, green.stroke_width(2)));
        }
        let line: Vec<(f64, f64)> = pts.iter().map(|p| (lx(p.gpus), ly(p.days))).collect();
        let _ = chart.draw_series(LineSeries::new(line.clone(), blue.stroke_width(2)));
        let _ = chart.draw_series(line.iter().map(|&p| Circle::new(p, 4, blue.filled())));
        if let Some(p) = marks.picked_gpus.and_then(|g| pts.iter().find(|p| p.gpus == g)) {
            let (x, y) = (lx(p.gpus), ly(p.days));
            let diamond = EmptyElement::at((x, y)) + Polygon::new(vec![(0, -8), (8, 0), (0, 8), (-8, 0)], CAPACITY.filled());
            let _ = chart.draw_series(std::iter::once(diamond));
        }
        let _ = root.present();
    }
    lean(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts() -> Vec<ScalePoint> {
        // 16 … 128 GPUs; time halves with each doubling but the last (efficiency 0.75 at 128).
        vec![
            ScalePoint { gpus: 16, tokens_per_s_per_gpu: 4000.0, days: 80.0 },
            ScalePoint { gpus: 32, tokens_per_s_per_gpu: 4000.0, days: 40.0 },
            ScalePoint { gpus: 64, tokens_per_s_per_gpu: 3800.0, days: 21.0 },
            ScalePoint { gpus: 128, tokens_per_s_per_gpu: 3000.0, days: 13.3 },
        ]
    }

    #[test]
    fn the_picture_draws_both_curves_the_lines_and_the_marks() {
        let marks = ScaleMarks {
            threshold_tokens_per_s_per_gpu: Some(3200.0),
            below_at_gpus: Some(128),
            deadline_days: Some(30.0),
            budget_gpu_hours: Some(40_000.0),
            picked_gpus: Some(64),
        };
        let svg = scaling(&pts(), &marks, false, (640, 520));
        // Four points on each chart and the ring around the count below the threshold.
        assert_eq!(svg.matches("<circle").count(), 9, "{svg}");
        // One diamond for the pick.
        assert_eq!(svg.matches("<polygon").count(), 1);
        // The x axis labels powers of two as counts; the axes say what they are.
        for want in [">16<", ">32<", ">64<", ">128<", "tokens/s per GPU", "days to train", "GPUs"] {
            assert!(svg.contains(want), "no {want} in the picture");
        }
        // Without marks: no ring, no diamond, fewer lines.
        let bare = scaling(&pts(), &ScaleMarks::default(), false, (640, 520));
        assert_eq!(bare.matches("<circle").count(), 8);
        assert_eq!(bare.matches("<polygon").count(), 0);
        assert!(bare.matches("<polyline").count() < svg.matches("<polyline").count());
    }

    #[test]
    fn labels_read_as_counts_and_days() {
        // x = log₂ GPUs: 10 is 1,024 GPUs; between powers, no label.
        assert_eq!(gpu_label(&10.0), "1024");
        assert_eq!(gpu_label(&10.5), "");
        // y = log₁₀ days: 1.5 is 31.6 days, shown whole; 0 is one day.
        assert_eq!(days_label(&1.5), "32");
        assert_eq!(days_label(&0.0), "1.00");
        assert!(scaling(&[], &ScaleMarks::default(), false, (100, 100)).contains("<svg"));
    }
}
