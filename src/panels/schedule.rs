//! The Schedule panel: the core's pipeline schedule drawn — for each pipeline stage a timeline of the forward (F) and
//! backward (B) of every microbatch and virtual chunk, the idle time between them (the bubble), and below it the
//! stage's saved activations over time; for the baseline too while one is pinned, on the same time axis. Laid out only
//! while the panel is open (the schedule has up to 2^16 operations).

use crate::format::{gib, percent, seconds};
use crate::state::{Comparison, Doc};
use crate::ui::chart::{element_width, swatch_box};
use leptos::prelude::*;
use meshplan_core::schedule::{Schedule, schedule};

/// Okabe–Ito (colour-blind safe): forward blue, backward vermilion; chunks past the first lighter.
const FORWARD: &str = "#0072b2";
const BACKWARD: &str = "#d55e00";
const ACTIVATIONS: &str = "#009e73";
/// The most operations drawn one by one; a longer schedule is drawn for its first microbatches up to this many.
pub const MAX_DRAWN_OPS: usize = 4096;
const ROW: f64 = 14.0;
const MEM: f64 = 22.0;
const LABEL: f64 = 64.0;

/// One schedule as SVG, `width` px wide, on a time axis of `span_s` seconds (the longer of the plans compared).
pub fn draw(s: &Schedule, width: u32, span_s: f64) -> String {
    let w = (width as f64 - LABEL - 8.0).max(50.0);
    let x = |t: f64| LABEL + if span_s > 0.0 { t / span_s * w } else { 0.0 };
    let per_stage = ROW + MEM + 6.0;
    let height = per_stage * s.stages.len() as f64 + 16.0;
    let peak = s.stages.iter().map(|st| st.peak_activation_bytes).max().unwrap_or(0).max(1) as f64;
    let total: usize = s.stages.iter().map(|st| st.ops.len()).sum();
    // Too many operations: draw the ops of the first microbatches only (the pattern repeats after the warm-up).
    let last_mb = if total > MAX_DRAWN_OPS { (MAX_DRAWN_OPS / (2 * s.stages.len().max(1) * s.vpp.max(1) as usize)).max(1) as u64 } else { u64::MAX };
    let mut out = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" font-size="10" font-family="sans-serif">"#);
    for (i, st) in s.stages.iter().enumerate() {
        let y = i as f64 * per_stage;
        out += &format!(r#"<text x="0" y="{:.1}" fill="currentColor">stage {}</text>"#, y + ROW - 3.0, st.pipeline_rank);
        out += &format!(r#"<rect class="bg" x="{LABEL}" y="{y:.1}" width="{w:.1}" height="{ROW}" fill="currentColor" fill-opacity="0.08"/>"#);
        for op in st.ops.iter().filter(|o| o.microbatch < last_mb) {
            let colour = if op.kind == "F" { FORWARD } else { BACKWARD };
            let opacity = 1.0 - 0.45 * op.chunk as f64 / s.vpp.max(2).saturating_sub(1) as f64;
            // No per-op tooltip: a <title> each took an edit with the panel open from 25.6 to 31.1 ms (1,024 GPUs, pinned).
            out += &format!(
                r#"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{ROW}" fill="{colour}" fill-opacity="{opacity:.2}"/>"#,
                x(op.start_s),
                (x(op.end_s) - x(op.start_s)).max(0.3)
            );
        }
        // Saved activations: a step line from the stage's changes, scaled to the largest stage peak.
        let base = y + ROW + MEM;
        let mut path = format!("M{:.1} {base:.1}", x(0.0));
        for &(t, bytes) in &st.activation_bytes {
            path += &format!("H{:.1}V{:.1}", x(t), base - bytes as f64 / peak * (MEM - 2.0));
        }
        path += &format!("H{:.1}", x(s.makespan_s));
        out += &format!(r#"<path d="{path}" fill="none" stroke="{ACTIVATIONS}" stroke-width="1.2"/>"#);
        out += &format!(r#"<text x="0" y="{:.1}" fill="currentColor" fill-opacity="0.7">{}</text>"#, base - 4.0, gib(st.peak_activation_bytes));
    }
    out += &format!(
        r#"<text x="{LABEL}" y="{:.1}" fill="currentColor" fill-opacity="0.7">0</text><text x="{:.1}" y="{:.1}" fill="currentColor" fill-opacity="0.7" text-anchor="end">{}</text></svg>"#,
        height - 3.0,
        x(span_s),
        height - 3.0,
        seconds(span_s)
    );
    out
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

#[component]
pub fn SchedulePanel(doc: Doc, baseline: Comparison) -> impl IntoView {
    let open = RwSignal::new(false);
    let ours = Memo::new(move |_| open.get().then(|| doc.outcome.with(|o| o.as_ref().map_err(|e| e.message.clone()).and_then(|r| schedule(r).map_err(|d| d.message)))));
    let theirs = Memo::new(move |_| {
        (open.get() && baseline.pinned())
            .then(|| baseline.outcome.with(|o| o.as_ref().and_then(|o| o.as_ref().ok()).and_then(|r| schedule(r).ok())))
            .flatten()
    });
    let node = NodeRef::<leptos::html::Div>::new();
    let width = element_width(node);
    let span = move || {
        let a = ours.with(|s| s.as_ref().and_then(|s| s.as_ref().ok()).map_or(0.0, |s| s.makespan_s));
        let b = theirs.with(|s| s.as_ref().map_or(0.0, |s| s.makespan_s));
        a.max(b)
    };
    let svg = Memo::new(move |_| match (width.get(), ours.get()) {
        (w, Some(Ok(s))) if w > 0 => draw(&s, w, span()),
        _ => String::new(),
    });
    let base_svg = Memo::new(move |_| match (width.get(), theirs.get()) {
        (w, Some(s)) if w > 0 => draw(&s, w, span()),
        _ => String::new(),
    });
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
                {move || theirs.with(Option::is_some).then(|| view! { <h3>"This plan (the baseline below, on the same time axis)"</h3> })}
                <p id="schedule-summary" class="summary">{move || ours.get().map(|s| match s { Ok(s) => summary(&s), Err(e) => format!("no schedule: {e}") })}</p>
                <div node_ref=node id="schedule-chart" class="chart" role="img" aria-label="Pipeline schedule of the plan" inner_html=svg></div>
                {move || theirs.get().map(|s| view! {
                    <h3>"Baseline"</h3>
                    <p id="schedule-base-summary" class="summary">{summary(&s)}</p>
                    <div id="schedule-base-chart" class="chart" role="img" aria-label="Pipeline schedule of the baseline" inner_html=base_svg></div>
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
            bubble_fraction: 0.5,
            stages: vec![
                stage(0, vec![op("F", 0, 0.0, 1.0), op("F", 1, 1.0, 2.0), op("B", 0, 4.0, 6.0), op("B", 1, 7.0, 9.0)]),
                stage(1, vec![op("F", 0, 1.0, 2.0), op("B", 0, 2.0, 4.0), op("F", 1, 4.0, 5.0), op("B", 1, 5.0, 7.0)]),
            ],
        };
        let svg = draw(&s, 472, 9.0);
        assert_eq!(svg.matches("<rect").count() - svg.matches(r#"class="bg""#).count(), 8);
        // 472 px less the 64 px labels and 8 px margin: 400 px for 9 s; stage 0's B 1 starts at 7 s → 64 + 311.1.
        assert!(svg.contains(r#"x="375.11""#), "{svg}");
        assert_eq!(summary(&s), "1F1B, PP 2 · 2 microbatches: bubble 50.0% of busy time, pipeline 9.00 s");
    }
}
