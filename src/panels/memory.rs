//! The Memory panel: memory per GPU by pipeline stage (stacked bars and a table) against the GPU's
//! capacity, and peak memory swept over one field (TP, PP, micro-batch or sequence length).

use crate::format::{chunks, gib};
use crate::state::{Doc, Outcome, plan_doc};
use crate::ui::chart::{Chart, swatch_box, swatch_line};
use crate::{browser, charts};
use leptos::prelude::*;
use serde_json::Value;

const SWEEPS: [(&str, &str, &[u64]); 4] = [
    ("parallelism.tensor_model_parallel_size", "TP", &[1, 2, 4, 8, 16]),
    ("parallelism.pipeline_model_parallel_size", "PP", &[1, 2, 4, 8, 16, 32]),
    ("training.micro_batch_size", "Micro-batch", &[1, 2, 4, 8, 16]),
    ("training.seq_length", "Sequence length", &[2048, 4096, 8192, 16384, 32768, 65536, 131072]),
];

#[component]
pub fn MemoryPanel(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let outcome = doc.outcome;
    // Each chart's inputs as a memo: an edit that leaves them equal does not redraw the chart.
    let stages = Memo::new(move |_| {
        outcome.with(|o| {
            let m = &o.as_ref().ok()?.memory;
            let stages: Vec<[u64; 5]> =
                m.stages.iter().map(|st| [st.parameters_bytes, st.gradients_bytes, st.optimizer_bytes, st.activations_bytes, st.overhead_bytes]).collect();
            Some((stages, m.gpu_memory_bytes))
        })
    });
    let bars = move |w| stages.with(|st| st.as_ref().map(|(st, cap)| charts::stage_bars(st, *cap, dark.get(), (w, 300))).unwrap_or_default());
    view! {
        <section class="panel" id="memory" aria-labelledby="memory-h">
            <h2 id="memory-h">"Memory per GPU, by pipeline stage"</h2>
            <Chart id="stage-chart" label="Stacked bars of memory per pipeline stage against the GPU's capacity" draw=bars />
            <ul class="chart-legend">
                {charts::TERMS.iter().enumerate().map(|(i, t)| view! { <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(i))></span>{*t}</li> }).collect_view()}
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>
                    {move || outcome.with(|o| o.as_ref().map(|r| format!("GPU memory ({})", gib(r.memory.gpu_memory_bytes))).unwrap_or_default())}</li>
            </ul>
            <details>
                <summary>"Figures per stage"</summary>
                <table class="memory-table">
                    <thead><tr><th>"stage"</th><th>"layers"</th><th title="decoder layers of each virtual chunk; E embedding, m MTP, L output and loss">"chunks"</th>{charts::TERMS.iter().map(|t| view! { <th>{*t}</th> }).collect_view()}<th>"total"</th></tr></thead>
                    <tbody><StageRows outcome /></tbody>
                </table>
            </details>
            <Sweep doc dark />
        </section>
    }
}

/// One table row per pipeline stage: its layers, their chunks and each memory term.
#[component]
fn StageRows(outcome: Memo<Outcome>) -> impl IntoView {
    move || {
        outcome.with(|o| {
            o.as_ref()
                .map(|r| {
                    r.memory
                        .stages
                        .iter()
                        .map(|st| {
                            view! {
                                <tr>
                                    <td>{st.pipeline_rank}</td><td>{st.num_layers}</td><td class="chunks">{chunks(r, st.pipeline_rank)}</td>
                                    <td>{gib(st.parameters_bytes)}</td><td>{gib(st.gradients_bytes)}</td><td>{gib(st.optimizer_bytes)}</td>
                                    <td>{gib(st.activations_bytes)}</td><td>{gib(st.overhead_bytes)}</td><td><strong>{gib(st.total_bytes)}</strong></td>
                                </tr>
                            }
                        })
                        .collect_view()
                })
                .ok()
        })
    }
}

/// The peak memory of the plan with one field set to each of a few values (the core's `memory_value`).
fn sweep_points(plan: &Value, path: &str, values: &[u64]) -> Vec<charts::SweepPoint> {
    values
        .iter()
        .map(|&v| {
            let mut q = plan.clone();
            plan_doc::set(&mut q, path, Value::from(v));
            // Memory alone: the sweep needs no rules, rank groups or step time.
            let m = meshplan_core::report::memory_value(&q).ok();
            charts::SweepPoint { value: v, peak_bytes: m.as_ref().map(|m| m.peak_bytes), fits: m.is_some_and(|m| m.fits) }
        })
        .collect()
}

/// The sweep: a field to sweep, the chart of peak memory over its values, and where the plan fits.
#[component]
fn Sweep(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let capacity = Memo::new(move |_| doc.outcome.with(|o| o.as_ref().map(|r| r.memory.gpu_memory_bytes).unwrap_or(0)));
    let sweep_field = RwSignal::new(0usize);
    // The sweep re-plans the whole plan once per point (5 re-plans of 16,384 GPUs take 20 ms), so it
    // runs in a task after the edit's frame: the frame callback makes that order certain (Chromium
    // already paints first after an input event; a task queued right away may run first elsewhere).
    // A stale sweep (typing went on) is dropped.
    let points = RwSignal::new(Vec::<charts::SweepPoint>::new());
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let (path, _, values) = SWEEPS[sweep_field.get().min(SWEEPS.len() - 1)];
        let plan = doc.plan.get();
        let ticket = generation.get_value() + 1;
        generation.set_value(ticket);
        let sweep = move || {
            if generation.try_get_value() != Some(ticket) {
                return;
            }
            browser::mark("meshplan-sweep-start");
            let pts = sweep_points(&plan, path, values);
            if points.try_with_untracked(|p| *p != pts) == Some(true) {
                points.set(pts);
            }
            browser::measure("meshplan-sweep", "meshplan-sweep-start");
        };
        request_animation_frame(move || set_timeout(sweep, std::time::Duration::ZERO));
    });
    let sweep_svg = move |w| {
        let (path, _, _) = SWEEPS[sweep_field.get().min(SWEEPS.len() - 1)];
        points.with(|pts| charts::sweep(pts, path.rsplit('.').next().unwrap_or(path), capacity.get(), dark.get(), (w, 260)))
    };
    let sweep_note = move || {
        points.with(|pts| {
            let fit: Vec<String> = pts.iter().filter(|p| p.fits).map(|p| p.value.to_string()).collect();
            if fit.is_empty() { "Fits at none of these values.".to_string() } else { format!("Fits at {}.", fit.join(", ")) }
        })
    };
    view! {
        <div class="field inline-field">
            <label for="sweep-field">"Sweep peak memory over"</label>
            <select id="sweep-field" on:change=move |ev| sweep_field.set(event_target_value(&ev).parse().unwrap_or(0))>
                {SWEEPS.iter().enumerate().map(|(i, (_, label, _))| view! { <option value=i.to_string()>{*label}</option> }).collect_view()}
            </select>
        </div>
        <Chart id="sweep-chart" label="Peak memory against the swept field; filled points fit" draw=sweep_svg />
        <ul class="chart-legend">
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(0))></span>"peak memory per GPU: ● fits, ○ does not"</li>
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>"GPU memory"</li>
        </ul>
        <p id="sweep-note" class="hint">{sweep_note}</p>
    }
}
