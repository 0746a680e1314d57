//! Memory charts drawn with plotters' SVG backend: pure functions from the core's figures to
//! an SVG string (tested natively; the page sets it as a panel's inner HTML). Legends are the
//! page's HTML, not plotters': plotters measures legend text in the browser through a styled
//! span, which the page's Content-Security-Policy (no style attributes) forbids.

use crate::format::{GIB, axis_seconds, hex_colour};
use std::fmt::Write;
use plotters::chart::MeshStyle;
use plotters::prelude::*;

mod scaling;
pub use scaling::{ScaleMarks, ScalePoint, scaling};

/// The memory terms of one pipeline stage, in bytes, in stacking order: the stage's figures, with the vision encoder's
/// weights and activations and the DSA indexer's activations (the core's terms of those keys) drawn apart from the
/// parameters and activations that hold them.
pub const TERMS: [&str; 8] = [
    "parameters",
    "vision encoder weights",
    "gradients",
    "optimizer",
    "activations",
    "vision encoder activations",
    "DSA indexer activations",
    "overhead",
];
/// The stage's five figures, as the table's columns give them.
pub const FIGURES: [&str; 5] = ["parameters", "gradients", "optimizer", "activations", "overhead"];
/// The colour of each of the [`TERMS`] (Okabe–Ito, and Tol's wine): the one table the legend, the hand-drawn stage
/// chart and plotters' charts all read.
const TERM_RGB: [[u8; 3]; 8] = [
    [0x00, 0x72, 0xB2], // blue
    [0xCC, 0x79, 0xA7], // reddish purple
    [0x56, 0xB4, 0xE9], // sky blue
    [0x00, 0x9E, 0x73], // bluish green
    [0xE6, 0x9F, 0x00], // orange
    [0xF0, 0xE4, 0x42], // yellow
    [0x88, 0x22, 0x55], // wine (Tol)
    [0x99, 0x99, 0x99], // grey
];
const CAPACITY: RGBColor = RGBColor(0xD5, 0x5E, 0x00); // vermillion

pub const CAPACITY_COLOUR: &str = "#d55e00";

pub fn term_colour(i: usize) -> String {
    hex_colour(TERM_RGB[i % TERMS.len()])
}

/// A term's colour for plotters' charts.
fn term_rgb(i: usize) -> RGBColor {
    let [r, g, b] = TERM_RGB[i % TERMS.len()];
    RGBColor(r, g, b)
}

fn ink(dark: bool) -> RGBColor {
    if dark { RGBColor(0xe8, 0xe8, 0xe8) } else { RGBColor(0x22, 0x22, 0x22) }
}

/// Per-stage stacked bars against the GPU's capacity line. `stages[i]` holds the [`TERMS`]; a term of 0 draws nothing.
/// Stage `i` is centred on x = i, where its label sits. Drawn by hand as SVG text (the page links no plotters): the
/// same picture plotters drew before, element for element — see [`frame`] for the layout and [`ticks`] for the axis.
pub fn stage_bars(stages: &[[u64; TERMS.len()]], capacity: u64, dark: bool, size: (u32, u32)) -> String {
    let n = stages.len().max(1);
    let top = stages.iter().map(|s| s.iter().sum::<u64>()).max().unwrap_or(0).max(capacity) as f64 / GIB * 1.12;
    let f = Frame::new(size, (-0.5, n as f64 - 0.5), (0.0, top.max(1.0)));
    let ink = if dark { "#E8E8E8" } else { "#222222" };
    let mut svg = f.open(ink, "pipeline stage", "GiB per GPU");
    // Grid lines at the y labels only (at most 11, plotters' default); then the y axis with its labels, the x axis with one label per whole stage (at
    // most 16, so that with more stages every second or fifth is labelled).
    let ys = ticks(f.y, 11);
    for &y in &ys {
        let py = f.py(y);
        let _ = write!(svg, r#"<line opacity="0.12" stroke="{ink}" stroke-width="1" x1="{}" y1="{py}" x2="{}" y2="{py}"/>"#, f.left, f.right - 1);
    }
    f.y_axis(&mut svg, ink, ys.iter().map(|&y| (f.py(y), float_label(y))));
    f.x_axis(&mut svg, ink, ticks(f.x, n.min(16)).into_iter().filter_map(|x| whole(x).map(|i| (f.px(x), i.to_string()))));
    // Bars fill 64% of a stage's slot, at most 80 px wide.
    let slot_px = (f.right - f.left) as f64 / n as f64;
    let half = 0.32f64.min(40.0 / slot_px.max(1.0));
    for (t, [r, g, b]) in TERM_RGB.iter().enumerate() {
        // As plotters writes a colour: upper-case hex.
        let colour = format!("#{r:02X}{g:02X}{b:02X}");
        for (i, s) in stages.iter().enumerate().filter(|(_, s)| s[t] > 0) {
            let below: u64 = s[..t].iter().sum();
            let (x0, x1) = (f.px(i as f64 - half), f.px(i as f64 + half));
            let (y0, y1) = (f.py(below as f64 / GIB), f.py((below + s[t]) as f64 / GIB));
            let _ = write!(svg, r#"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="{colour}"/>"#, x1 - x0, y0 - y1);
        }
    }
    let cap = f.py(capacity as f64 / GIB);
    let _ = write!(svg, r#"<polyline fill="none" stroke="{CAPACITY_HEX}" stroke-width="2" points="{},{cap} {},{cap} "/>"#, f.left, f.right - 1);
    svg.push_str("</g></svg>");
    svg
}

/// [`CAPACITY`] as plotters' SVG writes it.
const CAPACITY_HEX: &str = "#D55E00";

/// A chart's layout in whole pixels, as plotters' `ChartBuilder` laid it out with `margin(8)`, `x_label_area_size(34)`
/// and `y_label_area_size(54)`: the plotting area spans x in [left, right) and y in [top, bottom); a value maps to
/// the pixel `left + floor(width_px·t + 0.001)` (y: `bottom − 1 − floor(…)` upwards), t its fraction of the range,
/// with `width_px` one less than the area's width (plotters' `Ranged::map` over the area's first to last pixel).
struct Frame {
    size: (u32, u32),
    left: i64,
    right: i64,
    top: i64,
    bottom: i64,
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    const MARGIN: i64 = 8;
    const X_LABELS: i64 = 34;
    const Y_LABELS: i64 = 54;
    /// The tick length; labels sit twice as far from their axis.
    const TICK: i64 = 5;

    fn new(size: (u32, u32), x: (f64, f64), y: (f64, f64)) -> Frame {
        let (w, h) = (i64::from(size.0), i64::from(size.1));
        let left = Self::MARGIN + Self::Y_LABELS;
        let bottom = (h - Self::MARGIN - Self::X_LABELS).max(Self::MARGIN + 1);
        Frame { size, left, right: (w - Self::MARGIN).max(left + 1), top: Self::MARGIN, bottom, x, y }
    }

    fn map(v: f64, (lo, hi): (f64, f64), pixels: i64) -> i64 {
        let t = (v - lo) / (hi - lo);
        if !t.is_finite() {
            return 0;
        }
        (pixels as f64 * t + 1e-3).floor() as i64
    }

    fn px(&self, x: f64) -> i64 {
        self.left + Self::map(x, self.x, self.right - 1 - self.left)
    }

    fn py(&self, y: f64) -> i64 {
        self.bottom - 1 - Self::map(y, self.y, self.bottom - 1 - self.top)
    }

    /// The `<svg>` and its text group (font and ink set once), with the two axis descriptions.
    fn open(&self, ink: &str, x_desc: &str, y_desc: &str) -> String {
        let (w, h) = self.size;
        let mid_y = (self.top + (self.bottom - self.top) / 2, Self::MARGIN);
        let mut svg = format!(
            r#"<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg"><g font-family="sans-serif" font-size="{:.2}" fill="{ink}">"#,
            TEXT_PX / 1.24
        );
        let _ = write!(
            svg,
            r#"<text x="{m}" y="{y}" dy="0.76em" text-anchor="middle" transform="rotate(270, {m}, {y})">{y_desc}</text>"#,
            m = mid_y.1,
            y = mid_y.0
        );
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" dy="-0.5ex" text-anchor="middle">{x_desc}</text>"#,
            self.left + (self.right - self.left) / 2,
            self.bottom + Self::X_LABELS
        );
        svg
    }

    /// The y axis just left of the plotting area, with a tick and a right-aligned label at each `(pixel, text)`.
    fn y_axis(&self, svg: &mut String, ink: &str, labels: impl Iterator<Item = (i64, String)>) {
        let x = self.left - 1;
        let _ = write!(svg, r#"<polyline fill="none" opacity="0.6" stroke="{ink}" stroke-width="1" points="{x},{} {x},{} "/>"#, self.top, self.bottom - 1);
        for (y, text) in labels {
            let _ = write!(svg, r#"<text x="{}" y="{y}" dy="0.5ex" text-anchor="end">{text}</text>"#, self.left - 2 * Self::TICK);
            let _ = write!(svg, r#"<polyline fill="none" opacity="0.6" stroke="{ink}" stroke-width="1" points="{},{y} {x},{y} "/>"#, x - Self::TICK);
        }
    }

    /// The x axis just below the plotting area, with a tick and a centred label at each `(pixel, text)`.
    fn x_axis(&self, svg: &mut String, ink: &str, labels: impl Iterator<Item = (i64, String)>) {
        let y = self.bottom;
        let _ = write!(svg, r#"<polyline fill="none" opacity="0.6" stroke="{ink}" stroke-width="1" points="{},{y} {},{y} "/>"#, self.left, self.right - 1);
        for (x, text) in labels {
            let _ = write!(svg, r#"<text x="{x}" y="{}" dy="0.76em" text-anchor="middle">{text}</text>"#, y + 2 * Self::TICK);
            let _ = write!(svg, r#"<polyline fill="none" opacity="0.6" stroke="{ink}" stroke-width="1" points="{x},{y} {x},{} "/>"#, y + Self::TICK);
        }
    }
}

/// Axis values as plotters chose them: the multiples within `[lo, hi]` of the smallest step of the 1–2–5 series
/// (…, 0.5, 1, 2, 5, 10, …) that gives at most `max` of them.
fn ticks((lo, hi): (f64, f64), max: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) || max == 0 {
        return Vec::new();
    }
    let count = |step: f64| ((hi / step + 1e-9).floor() - (lo / step - 1e-9).ceil() + 1.0).max(0.0);
    let mut step = 10f64.powf((hi - lo).log10().floor() - 1.0);
    // Up the series from one decade below the range until the multiples are few enough.
    // (the range is finite, so 3 × 330 steps reach past any f64 range)
    for k in 0..990 {
        let s = step * [1.0, 2.0, 5.0][k % 3] * 10f64.powi((k / 3) as i32);
        if count(s) <= max as f64 {
            step = s;
            break;
        }
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    (0..count(step) as i64).map(|i| (first + i) as f64 * step).collect()
}

/// A y label as plotters wrote it: at most five decimals, trailing zeros dropped but one kept ("10.0", "2.5").
fn float_label(v: f64) -> String {
    let s = format!("{:.5}", v + 0.0);
    let s = s.trim_end_matches('0');
    if s.ends_with('.') { format!("{s}0") } else { s.to_string() }
}

/// `x` as a whole number, if it is one (axis key points between stages or sweep points get no label).
fn whole(x: f64) -> Option<usize> {
    let i = x.round();
    ((x - i).abs() < 1e-6 && i >= 0.0).then_some(i as usize)
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
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(54)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = axes(&mut chart.configure_mesh(), fg)
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| whole(*x).and_then(|i| points.get(i)).map(|p| p.value.to_string()).unwrap_or_default())
            .x_desc(field)
            .y_desc("peak GiB per GPU")
            .draw();
        let cap = capacity as f64 / GIB;
        capacity_line(&mut chart, -0.5, n as f64 - 0.5, cap);
        let line: Vec<(f64, f64)> = points.iter().enumerate().filter_map(|(i, p)| p.peak_bytes.map(|b| (i as f64, b as f64 / GIB))).collect();
        let blue = term_rgb(0);
        let _ = chart.draw_series(LineSeries::new(line, blue.stroke_width(2)));
        let _ = chart.draw_series(points.iter().enumerate().filter_map(|(i, p)| {
            let b = p.peak_bytes? as f64 / GIB;
            let style = if p.fits { blue.filled() } else { blue.stroke_width(2) };
            Some(Circle::new((i as f64, b), 5, style))
        }));
        let _ = root.present();
    }
    lean(svg)
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
    hex_colour([r, g, b])
}

/// The current plan's marker on the Pareto chart.
pub const CURRENT_COLOUR: &str = "#d55e00";

/// One stacked horizontal bar of a step's time, `terms` in [`STEP_TERMS`] order, in seconds.
pub fn step_bar(terms: &[f64], dark: bool, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let total: f64 = terms.iter().filter(|t| t.is_finite() && **t > 0.0).sum();
        let right = if total > 0.0 { total * 1.04 } else { 1.0 };
        let fg = ink(dark);
        // The right margin leaves room for half of the last axis label, centred on the axis' end.
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .margin_right(32)
            .x_label_area_size(34)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..right, 0f64..1f64);
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = axes(&mut chart.configure_mesh(), fg)
            .disable_mesh()
            .disable_y_axis()
            .x_desc("seconds per step")
            .x_label_formatter(&|x| axis_seconds(*x))
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
    lean(svg)
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
        let chart = ChartBuilder::on(&root)
            .margin(8)
            .margin_right(20)
            .x_label_area_size(34)
            .y_label_area_size(62)
            .build_cartesian_2d(0f64..right.max(1.0), 0f64..top.max(1.0));
        let Ok(mut chart) = chart else { return svg_error() };
        let _ = axes(&mut chart.configure_mesh(), fg)
            .x_desc("peak GiB per GPU")
            .y_desc("tokens/s per GPU")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw();
        let cap = capacity as f64 / GIB;
        let _ = chart.draw_series(LineSeries::new([(cap, 0.0), (cap, top.max(1.0))], CAPACITY.mix(0.5).stroke_width(1)));
        let blue = term_rgb(0);
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
    lean(svg)
}

type Coord = plotters::coord::types::RangedCoordf64;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>;

/// Axis text size in CSS pixels (plotters writes `font-size` as size / 1.24, see [`lean`]).
const TEXT_PX: f64 = 12.0;

/// The axes every chart shares: labels and descriptions in the ink colour, and grid lines only at
/// labelled values (no faint lines between them: they were most of an SVG's bytes).
fn axes<'m, 'a, 'b, 's>(mesh: &'m mut MeshStyle<'a, 'b, Coord, Coord, SVGBackend<'s>>, fg: RGBColor) -> &'m mut MeshStyle<'a, 'b, Coord, Coord, SVGBackend<'s>> {
    let text = ("sans-serif", TEXT_PX).into_font().color(&fg);
    mesh.max_light_lines(0).bold_line_style(fg.mix(0.12)).axis_style(fg.mix(0.6)).label_style(text.clone()).axis_desc_style(text)
}

/// Plotters' SVG with what the defaults already say left out: no newlines, no `opacity="1"`, no
/// `stroke="none"`, and the labels' font and ink set once on a group instead of on every label.
fn lean(svg: String) -> String {
    let font = format!(r#" font-family="sans-serif" font-size="{}""#, TEXT_PX / 1.24);
    let svg = svg.replace('\n', "").replace(r#" opacity="1""#, "").replace(r#" stroke="none""#, "").replace(&font, "");
    let (Some(open), Some(close)) = (svg.find('>'), svg.rfind("</svg>")) else { return svg };
    // The ink is the first label's fill; an element of that fill inherits the same from the group.
    let ink = svg.find("<text").and_then(|t| {
        let from = t + svg[t..].find(r#" fill=""#)?;
        let to = from + 7 + svg[from + 7..].find('"')?;
        Some(svg[from..=to].to_string())
    });
    let body = &svg[open + 1..close];
    let (ink, body) = match ink {
        Some(ink) => (ink.clone(), body.replace(&ink, "")),
        None => (String::new(), body.to_string()),
    };
    format!(r#"{}<g font-family="sans-serif" font-size="{:.2}"{ink}>{body}</g></svg>"#, &svg[..=open], TEXT_PX / 1.24)
}

/// The GPU's capacity as a horizontal line from `x0` to `x1`.
fn capacity_line<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, x0: f64, x1: f64, cap: f64) {
    let _ = chart.draw_series(LineSeries::new([(x0, cap), (x1, cap)], CAPACITY.stroke_width(2)));
}

fn svg_error() -> String {
    r#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>"#.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stage chart as plotters drew it before it was drawn by hand (the code of commit 356d0f0): the reference the
    /// hand-drawn one must match element for element.
    fn stage_bars_plotters(stages: &[[u64; TERMS.len()]], capacity: u64, dark: bool, size: (u32, u32)) -> String {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            let n = stages.len().max(1);
            let top = stages.iter().map(|s| s.iter().sum::<u64>()).max().unwrap_or(0).max(capacity) as f64 / GIB * 1.12;
            let fg = ink(dark);
            let chart = ChartBuilder::on(&root)
                .margin(8)
                .x_label_area_size(34)
                .y_label_area_size(54)
                .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top.max(1.0));
            let Ok(mut chart) = chart else { return svg_error() };
            let _ = axes(&mut chart.configure_mesh(), fg)
                .disable_x_mesh()
                .x_labels(n.min(16))
                .x_label_formatter(&|x| whole(*x).map(|i| i.to_string()).unwrap_or_default())
                .x_desc("pipeline stage")
                .y_desc("GiB per GPU")
                .draw();
            let slot_px = chart.plotting_area().dim_in_pixel().0 as f64 / n as f64;
            let half = 0.32f64.min(40.0 / slot_px.max(1.0));
            for t in 0..TERMS.len() {
                let colour = term_rgb(t);
                let bars = stages.iter().enumerate().filter(|(_, s)| s[t] > 0).map(|(i, s)| {
                    let below: u64 = s[..t].iter().sum();
                    let (y0, y1) = (below as f64 / GIB, (below + s[t]) as f64 / GIB);
                    let (x0, x1) = (i as f64 - half, i as f64 + half);
                    Rectangle::new([(x0, y0), (x1, y1)], colour.filled())
                });
                let _ = chart.draw_series(bars);
            }
            let cap = capacity as f64 / GIB;
            capacity_line(&mut chart, -0.5, n as f64 - 0.5, cap);
            let _ = root.present();
        }
        lean(svg)
    }

    #[test]
    fn the_hand_drawn_stage_chart_is_the_one_plotters_drew() {
        let g = 1u64 << 30;
        // Vision encoder terms on every third stage, the DSA indexer's on every other: zero terms draw nothing in both.
        let st = |i: u64| {
            let (vw, va, da) = if i % 3 == 0 { (g / 2, g / 4, 0) } else if i % 2 == 1 { (0, 0, g / 5) } else { (0, 0, 0) };
            [4 * g + i * g / 3, vw, 8 * g, (12 * g).saturating_sub(i * g / 7), (10 * g).saturating_sub(i * g), va, da, 2 * g + i * 1_000_003]
        };
        // Stage counts around the 16-label limit, odd widths, a capacity above and below the bars, tiny and huge GPUs.
        for (n, cap, w, h) in [(1, 80, 640, 300), (4, 80, 900, 300), (7, 24, 641, 300), (16, 80, 1000, 300), (17, 80, 999, 300),
            (33, 141, 1200, 300), (64, 80, 733, 300), (3, 1, 320, 200), (2, 192, 777, 300), (128, 80, 1400, 300)] {
            let stages: Vec<[u64; TERMS.len()]> = (0..n).map(st).collect();
            for dark in [false, true] {
                assert_eq!(stage_bars(&stages, cap * g, dark, (w, h)), stage_bars_plotters(&stages, cap * g, dark, (w, h)), "{n} stages, {cap} GiB, {w} px");
            }
        }
        // Small figures: the axis in fractions of a GiB (a capacity of 0 draws the range 0..1).
        let tiny = [[g / 100, 0, g / 50, g / 30, g / 20, 0, 0, g / 64]; 3];
        assert_eq!(stage_bars(&tiny, 0, false, (640, 300)), stage_bars_plotters(&tiny, 0, false, (640, 300)));
        assert_eq!(stage_bars(&[], 80 * g, false, (640, 300)), stage_bars_plotters(&[], 80 * g, false, (640, 300)));
    }

    #[test]
    fn axis_values_step_through_one_two_five() {
        // 0..89.6 GiB with at most 11 labels (plotters' default): steps of 5 give 18, of 10 give 9 (0, 10, …, 80).
        assert_eq!(ticks((0.0, 89.6), 11), (0..9).map(|i| f64::from(i) * 10.0).collect::<Vec<_>>());
        // 20 stages (−0.5..19.5), at most 16 labels: steps of 1 give 20, of 2 give 10 (0, 2, …, 18).
        assert_eq!(ticks((-0.5, 19.5), 16), (0..10).map(|i| f64::from(i) * 2.0).collect::<Vec<_>>());
        // 0..215 GiB: steps of 20 give 11 (0, 20, …, 200), just within 11.
        assert_eq!(ticks((0.0, 215.0), 11).len(), 11);
        assert_eq!(float_label(0.30000000000000004), "0.3");
        assert_eq!(float_label(80.0), "80.0");
        assert_eq!(float_label(0.25), "0.25");
    }

    #[test]
    fn stage_bars_draw_one_rect_per_term_and_stage_and_the_capacity_line() {
        let g = 1u64 << 30;
        let svg = stage_bars(&[[4 * g, 0, 8 * g, 12 * g, 10 * g, 0, 0, 2 * g], [4 * g, g, 8 * g, 12 * g, 6 * g, g, 0, 2 * g]], 80 * g, false, (640, 320));
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("pipeline stage"));
        assert_eq!(svg.matches("<rect").count(), 12, "five terms × two stages, and the second stage's vision encoder weights and activations");
        assert!(svg.contains("#CC79A7") || svg.contains("#cc79a7"), "the vision encoder weights' own colour");
        assert!(svg.contains(r##"stroke="#D55E00""##) || svg.contains(r##"stroke="#d55e00""##), "the capacity line");
        // No inline style attributes: the page's CSP forbids them.
        assert!(!svg.contains("style="));
    }

    /// The numeric attribute `name` of an SVG tag.
    fn attr(tag: &str, name: &str) -> f64 {
        let at = tag.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("no {name} in {tag}")) + name.len() + 3;
        tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
    }

    /// Every `<tag …>` opening of `svg`, with the text that follows it up to the next tag.
    fn tags<'a>(svg: &'a str, tag: &str) -> Vec<(&'a str, &'a str)> {
        svg.match_indices(&format!("<{tag} ")).map(|(i, _)| {
            let end = i + svg[i..].find('>').unwrap();
            let text = &svg[end + 1..end + 1 + svg[end + 1..].find('<').unwrap_or(0)];
            (&svg[i..=end], text)
        }).collect()
    }

    #[test]
    fn stage_labels_sit_under_the_middle_of_their_bars() {
        let g = 1u64 << 30;
        let stages = [[4 * g, 0, 8 * g, 12 * g, 10 * g, 0, 0, 2 * g]; 4];
        let svg = stage_bars(&stages, 80 * g, false, (900, 300));
        // The first term's rects, one per stage, left to right.
        let bars: Vec<f64> = tags(&svg, "rect").iter().filter(|(t, _)| t.contains(r##"fill="#0072B2""##)).map(|(t, _)| attr(t, "x") + attr(t, "width") / 2.0).collect();
        assert_eq!(bars.len(), 4);
        for (i, centre) in bars.iter().enumerate() {
            let label = tags(&svg, "text").into_iter().find(|(_, text)| *text == i.to_string()).unwrap_or_else(|| panic!("no label {i}"));
            assert!((attr(label.0, "x") - centre).abs() <= 1.0, "stage {i}: label at {} but bar centred at {centre}", attr(label.0, "x"));
            assert!(label.0.contains(r#"text-anchor="middle""#));
        }
    }

    #[test]
    fn charts_draw_grid_lines_only_at_labelled_values_and_leave_out_defaults() {
        let g = 1u64 << 30;
        let svg = stage_bars(&[[4 * g, 0, 8 * g, 12 * g, 10 * g, 0, 0, 2 * g]; 2], 80 * g, false, (640, 300));
        // Grid lines: one per y label at most (before, nine faint lines between every two labels).
        assert!(svg.matches("<line").count() <= svg.matches("<text").count(), "{svg}");
        assert!(!svg.contains('\n') && !svg.contains(r#"opacity="1""#) && !svg.contains(r#"stroke="none""#));
        // The labels' font and ink are set once, on the group around the whole picture.
        assert!(svg.contains(r##"<g font-family="sans-serif" font-size="9.68" fill="#222222">"##), "{svg}");
        assert!(svg.ends_with("</g></svg>"));
        assert_eq!(svg.matches("font-family").count(), 1);
        assert!(svg.len() < 5000, "{} bytes", svg.len());
    }

    #[test]
    fn the_step_bar_keeps_its_last_axis_label_inside_the_picture() {
        // 6.74 s in all: the axis runs to 7.01 s and its last label, "7.00 s", is centred at the axis' end.
        let width = 640.0;
        let svg = step_bar(&[6.1, 0.255, 0.109, 0.0, 0.0, 0.061, 0.003, 0.202, 0.002], false, (width as u32, 90));
        let labels = tags(&svg, "text");
        let (last, text) = labels.iter().filter(|(_, t)| t.ends_with(" s")).max_by(|a, b| attr(a.0, "x").total_cmp(&attr(b.0, "x"))).unwrap();
        assert_eq!(*text, "7.00 s");
        // Half the label's width at most 0.6 em per character of the 9.68 px font.
        let half = text.chars().count() as f64 * 0.6 * 9.68 / 2.0;
        assert!(attr(last, "x") + half <= width, "{last} {text}");
        assert!(svg.len() < 2500, "{} bytes: {svg}", svg.len());
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
