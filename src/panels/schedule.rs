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
use crate::state::signal::{effect, memo};
use meshplan_core::schedule::{Schedule, drawn};

/// Okabe–Ito (colour-blind safe): forward blue, backward vermilion; chunks past the first lighter.
const FORWARD: &str = "#0072b2";
const BACKWARD: &str = "#d55e00";
const ACTIVATIONS: &str = "#009e73";
/// The most operations a stage's row draws one by one (the core's limits.rs); a longer step is drawn with a break.
pub use meshplan_core::limits::MAX_DRAWN_SCHEDULE_OPS_PER_STAGE as MAX_DRAWN_OPS;
const ROW: f64 = 14.0;
const MEM: f64 = 22.0;
const LABEL: f64 = 64.0;
/// The width of a break, px.
const BREAK: f64 = 36.0;

/// One schedule drawn at a chart width: the labels (fixed) and the marks (operations and saved activations) on the
/// schedule's own time axis, x = 0 at its start and x = `plot_w` at its makespan; the panel scales the marks into
/// the time axis it shares with the other plan (a schedule with a break keeps its own axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Drawing {
    pub width: u32,
    pub height: f64,
    /// The width of the time axis, px (the chart less the labels and a margin).
    pub plot_w: f64,
    pub makespan_s: f64,
    /// The time axis is linear (no break), so it can share a scale with the other plan's.
    pub linear: bool,
    /// Stage names and each stage's peak activations, in chart coordinates.
    pub labels: String,
    /// The idle background, operations (one path per stage, kind and chunk), the activation lines and any break, on
    /// the schedule's own axis.
    pub marks: String,
    /// Operations drawn.
    pub ops: usize,
}

impl Drawing {
    /// The transform that puts the marks on a time axis of `span_s` seconds (its own when it has a break).
    pub fn transform(&self, span_s: f64) -> String {
        let k = if self.linear && span_s > 0.0 { self.makespan_s / span_s } else { 1.0 };
        format!("translate({LABEL} 0) scale({k:.5} 1)")
    }
}

/// The time axis: linear over the step, or linear on both sides of a break that takes [`BREAK`] px.
struct Axis {
    w: f64,
    makespan: f64,
    cut: Option<(f64, f64)>,
}

impl Axis {
    fn x(&self, t: f64) -> f64 {
        let Some((a, b)) = self.cut else { return if self.makespan > 0.0 { t / self.makespan * self.w } else { 0.0 } };
        let shown = (self.makespan - (b - a)).max(f64::MIN_POSITIVE);
        let lin = (self.w - BREAK).max(1.0) / shown;
        if t <= a {
            t * lin
        } else if t >= b {
            a * lin + BREAK + (t - b) * lin
        } else {
            a * lin + (t - a) / (b - a) * BREAK
        }
    }
}

/// Lays out one schedule's drawing, `width` px wide.
pub fn drawing(s: &Schedule, width: u32) -> Drawing {
    use std::fmt::Write;
    let w = (width as f64 - LABEL - 8.0).max(50.0);
    let axis = Axis { w, makespan: s.makespan_s, cut: s.cut.as_ref().map(|c| (c.start_s, c.end_s)) };
    let x = |t: f64| axis.x(t);
    let per_stage = ROW + MEM + 6.0;
    let height = per_stage * s.stages.len() as f64 + 16.0;
    let peak = s.stages.iter().map(|st| st.peak_activation_bytes).max().unwrap_or(0).max(1) as f64;
    let (mut labels, mut marks, mut drawn) = (String::new(), String::new(), 0);
    let vpp = s.vpp.max(1);
    for (i, st) in s.stages.iter().enumerate() {
        let y = i as f64 * per_stage;
        let _ = write!(labels, r#"<text x="0" y="{:.1}" fill="currentColor">stage {}</text>"#, y + ROW - 3.0, st.pipeline_rank);
        // The idle background spans the plan's own step only (it scales with the marks): past its end is no idle time.
        let _ = write!(marks, r#"<rect class="bg" x="0" y="{y:.1}" width="{w:.1}" height="{ROW}" fill="currentColor" fill-opacity="0.08"/>"#);
        // One path per kind and chunk: a rectangle per operation as a subpath.
        for (kind, colour) in [("F", FORWARD), ("B", BACKWARD)] {
            for chunk in 0..vpp {
                let (mut d, mut n, mut last) = (String::new(), 0, 0);
                for op in st.ops.iter().filter(|o| o.chunk == chunk && o.kind == kind) {
                    let (x0, ow) = (x(op.start_s), (x(op.end_s) - x(op.start_s)).max(0.3));
                    let _ = write!(d, "M{x0:.2} {y:.1}h{ow:.2}v{ROW}h-{ow:.2}z");
                    n += 1;
                    last = last.max(op.microbatch);
                }
                if n == 0 {
                    continue;
                }
                drawn += n;
                let opacity = 1.0 - 0.45 * chunk as f64 / vpp.max(2).saturating_sub(1) as f64;
                let _ = write!(marks, r#"<path class="ops" data-kind="{kind}" data-chunk="{chunk}" data-ops="{n}" data-last="{last}" d="{d}" fill="{colour}" fill-opacity="{opacity:.2}"/>"#);
            }
        }
        if let Some(cut) = &s.cut {
            steady(&mut marks, s, cut.idle_s.get(i).copied().unwrap_or(0.0) / (cut.end_s - cut.start_s).max(f64::MIN_POSITIVE), x(cut.start_s), y);
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
    if let Some(cut) = &s.cut {
        // On the marks' axis, which a drawing with a break keeps unscaled.
        let (x0, rows) = (x(cut.start_s), per_stage * s.stages.len() as f64);
        let _ = write!(
            marks,
            r#"<g class="break" data-microbatches="{n}" data-seconds="{secs:.6}"><path d="M{x0:.1} 0V{rows:.1}M{x1:.1} 0V{rows:.1}" stroke="currentColor" stroke-dasharray="3 2" fill="none"/><text class="break-label" x="{xm:.1}" y="{ty:.1}" fill="currentColor" text-anchor="middle">⋯ {n} microbatches, {time} ⋯</text></g>"#,
            n = cut.microbatches,
            secs = cut.end_s - cut.start_s,
            x1 = x0 + BREAK,
            xm = x0 + BREAK / 2.0,
            ty = height - 3.0,
            time = seconds(cut.end_s - cut.start_s),
        );
    }
    Drawing { width, height, plot_w: w, makespan_s: s.makespan_s, linear: s.cut.is_none(), labels, marks, ops: drawn }
}

/// A stage's row inside the break: forward and backward in turn, at their shares of a microbatch's time, over the
/// part of the break the stage is busy; the idle rest stays grey.
fn steady(out: &mut String, s: &Schedule, idle_share: f64, x0: f64, y: f64) {
    use std::fmt::Write;
    let busy_w = BREAK * (1.0 - idle_share.clamp(0.0, 1.0));
    let pair = busy_w / 6.0;
    let f = pair * s.forward_s / (s.forward_s + s.backward_s).max(f64::MIN_POSITIVE);
    let (mut df, mut db) = (String::new(), String::new());
    for k in 0..6 {
        let xs = x0 + k as f64 * pair;
        let _ = write!(df, "M{xs:.2} {y:.1}h{f:.2}v{ROW}h-{f:.2}z");
        let _ = write!(db, "M{:.2} {y:.1}h{:.2}v{ROW}h-{:.2}z", xs + f, pair - f, pair - f);
    }
    let _ = write!(out, r#"<path class="steady" data-busy="{:.4}" d="{df}" fill="{FORWARD}"/><path class="steady" d="{db}" fill="{BACKWARD}"/>"#, 1.0 - idle_share);
}

/// "1F1B, PP 4 · 64 microbatches: bubble 4.7% of busy time, pipeline 12.3 s", and what a break stands for.
pub fn summary(s: &Schedule) -> String {
    let kind = match s.kind.as_str() {
        "interleaved" => format!("interleaved 1F1B, PP {} · VPP {} (groups of {})", s.pp, s.vpp, s.group),
        "1f1b" => format!("1F1B, PP {}", s.pp),
        _ => "no pipeline (PP 1)".into(),
    };
    let cut = s.cut.as_ref().map_or(String::new(), |c| {
        format!(" · the break (⋯) stands for {} more microbatches of the steady state, {}", c.microbatches, seconds(c.end_s - c.start_s))
    });
    format!("{kind} · {} microbatches: bubble {} of busy time, pipeline {}{cut}", s.microbatches, percent(s.bubble_fraction), seconds(s.makespan_s))
}

/// A drawing as an SVG whose marks follow the shared time axis `span` (a memo of both plans' makespans): the labels
/// and marks are set once per drawing; a new span rewrites the transform and the axis' end label only.
#[component]
fn ScheduleSvg(drawing: Drawing, span: Memo<f64>) -> impl IntoView {
    let transform = {
        let d = drawing.clone();
        move || d.transform(span.get())
    };
    let (w, h, plot_w, linear, own) = (drawing.width, drawing.height, drawing.plot_w, drawing.linear, drawing.makespan_s);
    view! {
        <svg xmlns="http://www.w3.org/2000/svg" width=w height=format!("{h:.0}") font-size="10" font-family="sans-serif" data-ops=drawing.ops>
            <g inner_html=drawing.labels></g>
            <g class="marks" transform=transform inner_html=drawing.marks></g>
            <text x=LABEL y=format!("{:.1}", h - 3.0) fill="currentColor" fill-opacity="0.7">"0"</text>
            <text x=format!("{:.1}", LABEL + plot_w) y=format!("{:.1}", h - 3.0) fill="currentColor" fill-opacity="0.7" text-anchor="end">
                {move || seconds(match span.get() { t if linear && t > 0.0 => t, _ => own })}
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
    effect(move || {
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
            let s = doc.outcome.with_untracked(|o| o.as_ref().map_err(|e| e.message.clone()).and_then(|r| drawn(r, MAX_DRAWN_OPS).map_err(|d| d.message)));
            ours.try_set(Some(s));
            browser::measure("meshplan-schedule", "meshplan-schedule-start");
        };
        request_animation_frame(move || set_timeout(lay_out, std::time::Duration::ZERO));
    });
    // The baseline's: once per pin (its report is a memo over the pinned plan and the core's state, not the edits).
    let theirs = memo(move || {
        (open.get() && baseline.pinned())
            .then(|| baseline.outcome.with(|o| o.as_ref().and_then(|o| o.as_ref().ok()).and_then(|r| drawn(r, MAX_DRAWN_OPS).ok())))
            .flatten()
    });
    let node = NodeRef::<leptos::html::Div>::new();
    let width = element_width(node);
    let ours_drawing = memo(move || match width.get() {
        0 => None,
        w => ours.with(|s| s.as_ref().and_then(|s| s.as_ref().ok()).map(|s| drawing(s, w))),
    });
    let theirs_drawing = memo(move || match width.get() {
        0 => None,
        w => theirs.with(|s| s.as_ref().map(|s| drawing(s, w))),
    });
    // The shared time axis: the longer makespan, or none (0: each on its own axis) when either is drawn with a break.
    let span = memo(move || {
        let a = ours_drawing.with(|d| d.as_ref().map_or(Some(0.0), |d| d.linear.then_some(d.makespan_s)));
        let b = theirs_drawing.with(|d| d.as_ref().map_or(Some(0.0), |d| d.linear.then_some(d.makespan_s)));
        a.zip(b).map_or(0.0, |(a, b)| a.max(b))
    });
    let has_break = move || ours.with(|s| matches!(s, Some(Ok(s)) if s.cut.is_some()));
    let ours_summary = memo(move || ours.with(|s| s.as_ref().map(|s| match s { Ok(s) => summary(s), Err(e) => format!("no schedule: {e}") })));
    let theirs_summary = memo(move || theirs.with(|s| s.as_ref().map(summary)));
    view! {
        <section class="panel" id="schedule-panel" aria-labelledby="schedule-h">
            <h2 id="schedule-h">"Pipeline schedule"</h2>
            <details on:toggle=move |ev| open.set(event_target::<web_sys::HtmlDetailsElement>(&ev).open())>
                <summary>"Draw the 1F1B / interleaved schedule and each stage's saved activations"</summary>
                <p class="legend">
                    <span inner_html=swatch_box(FORWARD)></span>" forward "
                    <span inner_html=swatch_box(BACKWARD)></span>" backward (lighter: later virtual chunks) "
                    <span inner_html=swatch_box(ACTIVATIONS)></span>" saved activations · grey: idle (the bubble)"
                    {move || has_break().then_some(" · between the dashed lines (⋯): the steady state's repeated microbatches, their count and time below")}
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
            bubble_fraction: 0.5, even_bubble_fraction: 0.5, cut: None,
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
        assert_eq!(d.marks.matches(r#"class="bg""#).count(), 2);
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

    /// PP 4 with 1,000 microbatches (the core lays out a break): 472 px less the labels and margin leave 400 px, 36 of
    /// them the break; the step's ends are at 0 and 400 px (stage 0's last backward, microbatch 999, ends the step), the
    /// break is labelled with the microbatches it stands for, and every stage is busy across it (1F1B's steady state).
    #[test]
    fn a_long_step_is_drawn_whole_with_a_break() {
        let plan = serde_json::json!({
            "model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 4, "num_nodes": 1},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1000},
            "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4}
        });
        let s = drawn(&meshplan_core::plan_value(&plan).unwrap(), MAX_DRAWN_OPS).unwrap();
        let cut = s.cut.clone().expect("a break");
        let d = drawing(&s, 472);
        assert!(!d.linear);
        assert!(d.marks.contains(&format!(r#"class="break" data-microbatches="{}""#, cut.microbatches)));
        assert!(d.marks.contains(&format!("⋯ {} microbatches, ", cut.microbatches)));
        assert_eq!(d.marks.matches(r#"data-busy="1.0000""#).count(), 4);
        assert!(d.marks.contains(r#"data-kind="B" data-chunk="0" data-ops="#) && d.marks.matches(r#"data-last="999""#).count() >= 4);
        // Stage 0's first forward at 0 px; its last backward ends at 400 px.
        assert!(d.marks.contains(r#"d="M0.00 0.0h"#), "{}", &d.marks[..200]);
        let end = s.stages[0].ops.last().unwrap();
        let axis = Axis { w: 400.0, makespan: s.makespan_s, cut: Some((cut.start_s, cut.end_s)) };
        assert!((axis.x(end.end_s) - 400.0).abs() < 1e-6 && (axis.x(cut.end_s) - axis.x(cut.start_s) - BREAK).abs() < 1e-9);
        assert_eq!(d.transform(2.0 * s.makespan_s), "translate(64 0) scale(1.00000 1)", "a break keeps its own axis");
        assert!(summary(&s).ends_with(&format!("the break (⋯) stands for {} more microbatches of the steady state, {}", cut.microbatches, seconds(cut.end_s - cut.start_s))));
    }
}
