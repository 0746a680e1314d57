//! The Schedule panel: the core's pipeline schedule drawn — for each pipeline stage a timeline of the forward (F) and
//! backward (B) of every microbatch and virtual chunk, the idle time between them (the bubble), and below it the
//! stage's saved activations over time; for the baseline too while one is pinned, on the same time axis.
//!
//! Cost (an edit at 1,024 GPUs with a baseline pinned and the panel open was 25.6 ms, the budget 16): the plan's
//! schedule is laid out and drawn in a task after the edit's frame (as the memory sweep is), only while the panel is
//! open; the baseline's is laid out and drawn once per pin. Each is drawn on its own time axis (its makespan the full
//! width) and scaled into the shared axis by a transform, so a new span rewrites one attribute, not the drawing; and
//! each stage's operations are one path per kind and virtual chunk, not one element per operation.

use crate::browser;
use crate::format::{gib, percent, seconds};
use crate::state::{Comparison, Doc};
use crate::ui::chart::{element_width, swatch_box};
use leptos::prelude::*;
use meshplan_core::schedule::{Schedule, schedule};

/// Okabe–Ito (colour-blind safe): forward blue, backward vermilion; chunks past the first lighter.
const FORWARD: &str = "#0072b2";
const BACKWARD: &str = "#d55e00";
const ACTIVATIONS: &str = "#009e73";
/// The most operations drawn; a longer schedule is drawn for its first microbatches up to this many.
pub const MAX_DRAWN_OPS: usize = 4096;
const ROW: f64 = 14.0;
const MEM: f64 = 22.0;
const LABEL: f64 = 64.0;

/// One schedule drawn at a chart width: the labels (fixed) and the marks (operations and saved activations) on the
/// schedule's own time axis, x = 0 at its start and x = `plot_w` at its makespan; the panel scales the marks into
/// the time axis it shares with the other plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawing {
    pub width: u32,
    pub height: f64,
    /// The width of the time axis, px (the chart less the labels and a margin).
    pub plot_w: f64,
    pub makespan_s: f64,
    /// Stage names, the idle background and each stage's peak activations, in chart coordinates.
    pub labels: String,
    /// Operations (one path per stage, kind and chunk) and the activation lines, on the schedule's own axis.
    pub marks: String,
    /// Operations drawn.
    pub ops: usize,
}

impl Drawing {
    /// The transform that puts the marks on a time axis of `span_s` seconds.
    pub fn transform(&self, span_s: f64) -> String {
        let k = if span_s > 0.0 { self.makespan_s / span_s } else { 1.0 };
        format!("translate({LABEL} 0) scale({k:.5} 1)")
    }
}

/// Lays out one schedule's drawing, `width` px wide.
pub fn drawing(s: &Schedule, width: u32) -> Drawing {
    use std::fmt::Write;
    let w = (width as f64 - LABEL - 8.0).max(50.0);
    let x = |t: f64| if s.makespan_s > 0.0 { t / s.makespan_s * w } else { 0.0 };
    let per_stage = ROW + MEM + 6.0;
    let height = per_stage * s.stages.len() as f64 + 16.0;
    let peak = s.stages.iter().map(|st| st.peak_activation_bytes).max().unwrap_or(0).max(1) as f64;
    let total: usize = s.stages.iter().map(|st| st.ops.len()).sum();
    // Too many operations: draw the ops of the first microbatches only (the pattern repeats after the warm-up).
    let last_mb = if total > MAX_DRAWN_OPS { (MAX_DRAWN_OPS / (2 * s.stages.len().max(1) * s.vpp.max(1) as usize)).max(1) as u64 } else { u64::MAX };
    let (mut labels, mut marks, mut drawn) = (String::new(), String::new(), 0);
    let vpp = s.vpp.max(1);
    for (i, st) in s.stages.iter().enumerate() {
        let y = i as f64 * per_stage;
        let _ = write!(labels, r#"<text x="0" y="{:.1}" fill="currentColor">stage {}</text>"#, y + ROW - 3.0, st.pipeline_rank);
        let _ = write!(labels, r#"<rect class="bg" x="{LABEL}" y="{y:.1}" width="{w:.1}" height="{ROW}" fill="currentColor" fill-opacity="0.08"/>"#);
        // One path per kind and chunk: a rectangle per operation as a subpath.
        for (kind, colour) in [("F", FORWARD), ("B", BACKWARD)] {
            for chunk in 0..vpp {
                let mut d = String::new();
                let mut n = 0;
                for op in st.ops.iter().filter(|o| o.microbatch < last_mb && o.chunk == chunk && o.kind == kind) {
                    let (x0, ow) = (x(op.start_s), (x(op.end_s) - x(op.start_s)).max(0.3));
                    let _ = write!(d, "M{x0:.2} {y:.1}h{ow:.2}v{ROW}h-{ow:.2}z");
                    n += 1;
                }
                if n == 0 {
                    continue;
                }
                drawn += n;
                let opacity = 1.0 - 0.45 * chunk as f64 / vpp.max(2).saturating_sub(1) as f64;
                let _ = write!(marks, r#"<path class="ops" data-kind="{kind}" data-chunk="{chunk}" data-ops="{n}" d="{d}" fill="{colour}" fill-opacity="{opacity:.2}"/>"#);
            }
        }
        // Saved activations: a step line from the stage's changes, scaled to the largest stage peak.
        let base = y + ROW + MEM;
        let mut path = format!("M0 {base:.1}");
        for &(t, bytes) in &st.activation_bytes {
            let _ = write!(path, "H{:.1}V{:.1}", x(t), base - bytes as f64 / peak * (MEM - 2.0));
        }
        let _ = write!(path, "H{w:.1}");
        let _ = write!(marks, r#"<path d="{path}" fill="none" stroke="{ACTIVATIONS}" stroke-width="1.2" vector-effect="non-scaling-stroke"/>"#);
        let _ = write!(labels, r#"<text x="0" y="{:.1}" fill="currentColor" fill-opacity="0.7">{}</text>"#, base - 4.0, gib(st.peak_activation_bytes));
    }
    Drawing { width, height, plot_w: w, makespan_s: s.makespan_s, labels, marks, ops: drawn }
}

/// "1F1B, PP 4 · 64 microbatches: bubble 4.7% of busy time, step 12.3 s (drawn: the first 8 microbatches)".
pub fn summary(s: &Schedule) -> String {
    let kind = match s.kind.as_str() {
        "interleaved" => format!("interleaved 1F1B, PP {} · VPP {} (groups of {})", s.pp, s.vpp, s.group),
        "1f1b" => format!("1F1B, PP {}", s.pp),
        _ => "no pipeline (PP 1)".into(),
    };
    let total: usize = s.stages.iter().map(|st| st.ops.len()).sum();
    let drawn = if total > MAX_DRAWN_OPS { " (drawn: the first microbatches only)" } else { "" };
    format!("{kind} · {} microbatches: bubble {} of busy time, pipeline {}{drawn}", s.microbatches, percent(s.bubble_fraction), seconds(s.makespan_s))
}

/// A drawing as an SVG whose marks follow the shared time axis `span` (a memo of both plans' makespans): the labels
/// and marks are set once per drawing; a new span rewrites the transform and the axis' end label only.
#[component]
fn ScheduleSvg(drawing: Drawing, span: Memo<f64>) -> impl IntoView {
    let transform = {
        let d = drawing.clone();
        move || d.transform(span.get())
    };
    let (w, h, plot_w) = (drawing.width, drawing.height, drawing.plot_w);
    view! {
        <svg xmlns="http://www.w3.org/2000/svg" width=w height=format!("{h:.0}") font-size="10" font-family="sans-serif" data-ops=drawing.ops>
            <g inner_html=drawing.labels></g>
            <g class="marks" transform=transform inner_html=drawing.marks></g>
            <text x=LABEL y=format!("{:.1}", h - 3.0) fill="currentColor" fill-opacity="0.7">"0"</text>
            <text x=format!("{:.1}", LABEL + plot_w) y=format!("{:.1}", h - 3.0) fill="currentColor" fill-opacity="0.7" text-anchor="end">
                {move || seconds(span.get())}
            </text>
        </svg>
    }
}

#[component]
pub fn SchedulePanel(doc: Doc, baseline: Comparison) -> impl IntoView {
    let open = RwSignal::new(false);
    // This plan's schedule, laid out in a task after the edit's frame (the edit's own frame stays within budget); a
    // stale one (typing went on) is dropped.
    let ours = RwSignal::new(None::<Result<Schedule, String>>);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        if !open.get() {
            return;
        }
        // Read, not `track()`: tracking a memo does not compute it, and an uncomputed memo has no sources to follow.
        doc.outcome.with(|_| ());
        let ticket = generation.get_value() + 1;
        generation.set_value(ticket);
        let lay_out = move || {
            if generation.try_get_value() != Some(ticket) {
                return;
            }
            browser::mark("meshplan-schedule-start");
            let s = doc.outcome.with_untracked(|o| o.as_ref().map_err(|e| e.message.clone()).and_then(|r| schedule(r).map_err(|d| d.message)));
            ours.try_set(Some(s));
            browser::measure("meshplan-schedule", "meshplan-schedule-start");
        };
        request_animation_frame(move || set_timeout(lay_out, std::time::Duration::ZERO));
    });
    // The baseline's: once per pin (its report is a memo over the pinned plan alone).
    let theirs = Memo::new(move |_| {
        (open.get() && baseline.pinned())
            .then(|| baseline.outcome.with(|o| o.as_ref().and_then(|o| o.as_ref().ok()).and_then(|r| schedule(r).ok())))
            .flatten()
    });
    let node = NodeRef::<leptos::html::Div>::new();
    let width = element_width(node);
    let ours_drawing = Memo::new(move |_| match width.get() {
        0 => None,
        w => ours.with(|s| s.as_ref().and_then(|s| s.as_ref().ok()).map(|s| drawing(s, w))),
    });
    let theirs_drawing = Memo::new(move |_| match width.get() {
        0 => None,
        w => theirs.with(|s| s.as_ref().map(|s| drawing(s, w))),
    });
    let span = Memo::new(move |_| {
        let a = ours_drawing.with(|d| d.as_ref().map_or(0.0, |d| d.makespan_s));
        let b = theirs_drawing.with(|d| d.as_ref().map_or(0.0, |d| d.makespan_s));
        a.max(b)
    });
    let ours_summary = Memo::new(move |_| ours.with(|s| s.as_ref().map(|s| match s { Ok(s) => summary(s), Err(e) => format!("no schedule: {e}") })));
    let theirs_summary = Memo::new(move |_| theirs.with(|s| s.as_ref().map(summary)));
    view! {
        <section class="panel" id="schedule-panel" aria-labelledby="schedule-h">
            <h2 id="schedule-h">"Pipeline schedule"</h2>
            <details on:toggle=move |ev| open.set(event_target::<web_sys::HtmlDetailsElement>(&ev).open())>
                <summary>"Draw the 1F1B / interleaved schedule and each stage's saved activations"</summary>
                <p class="legend">
                    <span inner_html=swatch_box(FORWARD)></span>" forward "
                    <span inner_html=swatch_box(BACKWARD)></span>" backward (lighter: later virtual chunks) "
                    <span inner_html=swatch_box(ACTIVATIONS)></span>" saved activations · grey: idle (the bubble)"
                </p>
                {move || theirs_summary.with(Option::is_some).then(|| view! { <h3>"This plan (the baseline below, on the same time axis)"</h3> })}
                <p id="schedule-summary" class="summary">{move || ours_summary.get()}</p>
                <div node_ref=node id="schedule-chart" class="chart" role="img" aria-label="Pipeline schedule of the plan">
                    {move || ours_drawing.get().map(|drawing| view! { <ScheduleSvg drawing span /> })}
                </div>
                {move || theirs_summary.get().map(|text| view! {
                    <h3>"Baseline"</h3>
                    <p id="schedule-base-summary" class="summary">{text}</p>
                    <div id="schedule-base-chart" class="chart" role="img" aria-label="Pipeline schedule of the baseline">
                        {move || theirs_drawing.get().map(|drawing| view! { <ScheduleSvg drawing span /> })}
                    </div>
                })}
            </details>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshplan_core::schedule::{Op, StageSchedule};

    fn op(kind: &str, microbatch: u64, start_s: f64, end_s: f64) -> Op {
        Op { kind: kind.into(), microbatch, chunk: 0, start_s, end_s }
    }

    /// PP 2, 2 microbatches, forward 1 s and backward 2 s (by hand: stage 1 starts F0 at 1 s; the pipeline ends at
    /// 1 + 1 + 2 + 1 + 2 + 2 = 9 s on stage 0's last backward).
    #[test]
    fn a_two_stage_schedule_is_drawn_op_by_op() {
        let stage = |r: u64, ops: Vec<Op>| StageSchedule {
            pipeline_rank: r, ops, busy_s: 6.0, idle_s: 3.0, activation_bytes: vec![(0.0, 1 << 30), (5.0, 0)],
            peak_activation_bytes: 1 << 30, peak_in_flight: 1.0, memory_model_in_flight: 2.0,
        };
        let s = Schedule {
            kind: "1f1b".into(), pp: 2, vpp: 1, microbatches: 2, group: 2, forward_s: 1.0, backward_s: 2.0, makespan_s: 9.0,
            bubble_fraction: 0.5, even_bubble_fraction: 0.5,
            stages: vec![
                stage(0, vec![op("F", 0, 0.0, 1.0), op("F", 1, 1.0, 2.0), op("B", 0, 4.0, 6.0), op("B", 1, 7.0, 9.0)]),
                stage(1, vec![op("F", 0, 1.0, 2.0), op("B", 0, 2.0, 4.0), op("F", 1, 4.0, 5.0), op("B", 1, 5.0, 7.0)]),
            ],
        };
        let d = drawing(&s, 472);
        // One path per stage and kind (VPP 1: one chunk), 8 operations in all, 2 a path.
        assert_eq!(d.marks.matches(r#"class="ops""#).count(), 4);
        assert_eq!(d.marks.matches(r#"data-ops="2""#).count(), 4);
        assert_eq!(d.ops, 8);
        assert_eq!(d.labels.matches(r#"class="bg""#).count(), 2);
        // 472 px less the 64 px labels and 8 px margin: 400 px for 9 s; stage 0's B 1 runs from 7 s to 9 s, i.e. from
        // 311.11 px for 88.89 px, on the row of stage 0 (y 0).
        assert!(d.marks.contains("M311.11 0.0h88.89v14h-88.89z"), "{}", d.marks);
        // Stage 1 (y = 14 + 22 + 6 = 42): F 0 from 1 s to 2 s = 44.44 px to 88.89 px.
        assert!(d.marks.contains("M44.44 42.0h44.44v14h-44.44z"), "{}", d.marks);
        // Beside a plan of 18 s, this one's 9 s take half the axis; alone, all of it.
        assert_eq!(d.transform(18.0), "translate(64 0) scale(0.50000 1)");
        assert_eq!(d.transform(9.0), "translate(64 0) scale(1.00000 1)");
        assert_eq!(summary(&s), "1F1B, PP 2 · 2 microbatches: bubble 50.0% of busy time, pipeline 9.00 s");
    }
}
