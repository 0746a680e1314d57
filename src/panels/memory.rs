//! The Memory panel: the layer strip (each pipeline rank's layer kinds), memory per GPU by pipeline stage (stacked
//! bars and a table) against the GPU's capacity, with host memory per node beside it and every labelled term of a
//! stage, and peak memory swept over one field (TP, PP, micro-batch or sequence length; [`SweepPanel`], which the
//! tools module mounts in the panel's slot after the first render).

use crate::format::{chunks, gib};
use crate::state::{Doc, Outcome, plan_doc};
use crate::strip::{self, Strip};
use crate::ui::chart::{Chart, swatch_box, swatch_line};
use crate::{browser, charts};
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use meshplan_core::memory::{Location, MemoryReport, TermKey};
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
    let stages = memo(move || {
        outcome.with(|o| {
            let m = &o.as_ref().ok()?.memory;
            // The vision encoder's and the DSA indexer's terms drawn apart from the figures that hold them.
            let stages: Vec<[u64; charts::TERMS.len()]> = m
                .stages
                .iter()
                .map(|st| {
                    let term = |k: TermKey| st.terms.iter().filter(|t| t.key == k).map(|t| t.bytes).sum::<u64>();
                    let (vw, va, da) = (term(TermKey::VisionEncoderWeights), term(TermKey::VisionEncoderActivations), term(TermKey::DsaIndexerActivations));
                    let act = st.activations_bytes.saturating_sub(va).saturating_sub(da);
                    [st.parameters_bytes.saturating_sub(vw), vw, st.gradients_bytes, st.optimizer_bytes, act, va, da, st.overhead_bytes]
                })
                .collect();
            Some((stages, m.gpu_memory_bytes))
        })
    });
    // The legend names the vision encoder's and the DSA indexer's terms only for a plan that has them; the stage's five
    // figures are always named.
    let optional = |i: usize| !charts::FIGURES.contains(&charts::TERMS[i]);
    let shown = memo(move || {
        stages.with(|st| {
            let mut on = [false; charts::TERMS.len()];
            for (i, o) in on.iter_mut().enumerate() {
                *o = !optional(i) || st.as_ref().is_some_and(|(st, _)| st.iter().any(|s| s[i] > 0));
            }
            on
        })
    });
    let bars = move |w| stages.with(|st| st.as_ref().map(|(st, cap)| charts::stage_bars(st, *cap, dark.get(), (w, 300))).unwrap_or_default());
    // A memo, so that an edit that leaves the figures alone does not rewrite the line.
    let summary_text = memo(move || outcome.with(|o| o.as_ref().map(|r| summary(&r.memory)).unwrap_or_default()));
    view! {
        <section class="panel" id="memory" aria-labelledby="memory-h">
            <h2 id="memory-h">"Memory per GPU, by pipeline stage"</h2>
            <p id="memory-summary" class="summary">{summary_text}</p>
            <LayerStrip outcome dark />
            <Chart id="stage-chart" label="Stacked bars of memory per pipeline stage against the GPU's capacity" draw=bars />
            <ul class="chart-legend" id="memory-legend">
                {charts::TERMS.iter().enumerate().map(|(i, t)| view! { <li hidden=move || !shown.get()[i]><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(i))></span>{*t}</li> }).collect_view()}
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>
                    {move || outcome.with(|o| o.as_ref().map(|r| format!("GPU memory ({})", gib(r.memory.gpu_memory_bytes))).unwrap_or_default())}</li>
            </ul>
            // "Figures per stage" and "Every term of a stage" (both closed at first) are the tools module's: MemoryDetails.
            <div id=crate::ui::slot::MEMORY_DETAILS class="tools-slot"></div>
            // The sweep is the tools module's (it re-plans the plan per point; the first render does not need it).
            <div id=crate::ui::slot::SWEEP class="tools-slot"></div>
        </section>
    }
}

/// The stage figures as a table and every labelled term of one stage, both folded: mounted by the tools module in the
/// Memory panel's slot.
#[component]
pub fn MemoryDetails(outcome: Memo<Outcome>) -> impl IntoView {
    view! {
        <details>
            <summary>"Figures per stage"</summary>
            <div class="table-scroll" tabindex="0" role="region" aria-label="Memory per stage (scrolls sideways)">
            <table class="memory-table">
                <thead><tr><th>"stage"</th><th>"layers"</th><th title="decoder layers of each virtual chunk; E embedding, m MTP, L output and loss">"chunks"</th>{charts::FIGURES.iter().map(|t| view! { <th>{*t}</th> }).collect_view()}<th>"total"</th>
                    <th title="the allocator's peak: Megatron's max allocated">"allocated"</th><th title="allocated + fragmentation">"reserved"</th><th title="host memory per GPU (offloading)">"host"</th></tr></thead>
                <tbody><StageRows outcome /></tbody>
            </table>
            </div>
        </details>
        <Terms outcome />
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
                                    <td>{gib(st.allocated_bytes)}</td><td>{gib(st.reserved_bytes)}</td><td>{gib(st.host_bytes)}</td>
                                </tr>
                            }
                        })
                        .collect_view()
                })
                .ok()
        })
    }
}

/// Device memory per GPU beside host memory per node: "Device peak 53.7 GiB per GPU of 80.0 GiB (allocated 49.5 GiB)
/// · host 0.0 GiB per node of 2048.0 GiB".
pub fn summary(m: &MemoryReport) -> String {
    let host = match (m.host_memory_per_node_bytes, m.host_fits) {
        (Some(cap), Some(fits)) => format!("{} per node of {}{}", gib(m.host_bytes_per_node), gib(cap), if fits { "" } else { ": does not fit" }),
        _ => format!("{} per node (host memory unknown)", gib(m.host_bytes_per_node)),
    };
    format!(
        "Device peak {} per GPU of {}{} (allocated {}, Megatron's max allocated) · host {host}",
        gib(m.peak_bytes),
        gib(m.gpu_memory_bytes),
        if m.fits { "" } else { ": does not fit" },
        gib(m.allocated_peak_bytes)
    )
}

/// The layer kinds of every pipeline rank and virtual chunk, above the stage chart, with a legend of the kinds the
/// model has. A memo over the report's runs and placement: an edit that moves no layer does not redraw it.
#[component]
fn LayerStrip(outcome: Memo<Outcome>, dark: Memo<bool>) -> impl IntoView {
    let figures = memo(move || {
        outcome.with(|o| {
            o.as_ref()
                .map(|r| Strip {
                    runs: r.derived.layer_runs_per_chunk.clone(),
                    placement: r.derived.pipeline_placement,
                    has_mtp: r.plan.model.mtp_num_layers > 0,
                })
                .unwrap_or_default()
        })
    });
    let symbols = memo(move || figures.with(Strip::symbols));
    let draw = move |w| figures.with(|s| strip::layer_strip(s, dark.get(), w));
    let ink = move || if dark.get() { "#e8e8e8" } else { "#222222" };
    view! {
        <h3 class="chart-title">"Layers by pipeline rank and virtual chunk"</h3>
        <Chart id="layer-strip" label="Each pipeline rank's layer kinds, its virtual chunks side by side; hover a rank for its layers as text" draw />
        <ul class="chart-legend" id="strip-legend">
            {move || symbols.get().into_iter().filter_map(|c| strip::KINDS.iter().find(|k| k.0 == c)).map(|(c, name, colour)| view! {
                <li data-symbol=c.to_string()><span class="swatch" aria-hidden="true" inner_html=swatch_box(colour)></span>{*name}" "<code>{c.to_string()}</code></li>
            }).collect_view()}
            <li><span class="swatch" aria-hidden="true" inner_html=move || swatch_box(ink())></span>"embedding "<code>"E"</code>" · output and loss "<code>"L"</code></li>
            <Show when=move || figures.with(|s| s.has_mtp)>
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(strip::MTP_COLOUR)></span>"MTP "<code>"m"</code></li>
            </Show>
        </ul>
    }
}

/// Every labelled term of one stage (the peak stage unless one is picked): what it is, bytes, device or host, the
/// phase that holds it, and whether the allocator hands it out.
#[component]
fn Terms(outcome: Memo<Outcome>) -> impl IntoView {
    let picked = RwSignal::new(None::<usize>);
    let stages = memo(move || outcome.with(|o| o.as_ref().map(|r| r.memory.stages.len()).unwrap_or(0)));
    let peak_stage = memo(move || {
        outcome.with(|o| o.as_ref().ok().and_then(|r| r.memory.stages.iter().enumerate().max_by_key(|(_, s)| s.total_bytes).map(|(i, _)| i)).unwrap_or(0))
    });
    let shown = memo(move || picked.get().filter(|&i| i < stages.get()).unwrap_or_else(|| peak_stage.get()));
    let rows = memo(move || {
        let i = shown.get();
        outcome.with(|o| o.as_ref().ok().and_then(|r| r.memory.stages.get(i)).map(|s| s.terms.clone()).unwrap_or_default())
    });
    view! {
        <details id="memory-terms-box">
            <summary>"Every term of a stage"</summary>
            <div class="field inline-field">
                <label for="terms-stage">"Stage"</label>
                <select id="terms-stage" prop:value=move || shown.get().to_string()
                    on:change=move |ev| picked.set(event_target_value(&ev).parse().ok())>
                    {move || (0..stages.get()).map(|i| {
                        let text = if i == peak_stage.get() { format!("{i} (peak)") } else { i.to_string() };
                        view! { <option value=i.to_string() selected=move || shown.get() == i>{text}</option> }
                    }).collect_view()}
                </select>
            </div>
            <div class="table-scroll" tabindex="0" role="region" aria-label="Memory terms of the stage (scrolls sideways)">
            <table class="terms-table" id="memory-terms">
                <thead><tr><th class="what">"term"</th><th>"GiB"</th><th>"where"</th><th>"phase"</th><th title="handed out by PyTorch's caching allocator: counted in max allocated">"allocated"</th></tr></thead>
                <tbody>
                    {move || rows.get().into_iter().map(|t| {
                        let key = serde_json::to_value(t.key).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                        let place = if t.location == Location::Host { "host" } else { "device" };
                        view! {
                            <tr data-key=key data-location=place data-bytes=t.bytes.to_string()>
                                <td class="what">{t.label.to_string()}</td><td class="bytes">{crate::format::gib_figure(t.bytes)}</td>
                                <td>{place}</td><td>{t.phase.label()}</td><td>{crate::format::yes_no(t.allocated)}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            </div>
        </details>
    }
}

/// The peak memory of the plan with one field set to each of a few values (the core's `memory_value`).
/// Peak memory at each of `values` of the field at `path`. The point at the plan's own value is the plan's memory
/// (`current`, from the report already made), so the sweep re-plans only the other variants.
fn sweep_points(plan: &Value, path: &str, values: &[u64], current: Option<(u64, bool)>) -> Vec<charts::SweepPoint> {
    let own = plan_doc::get(plan, path).and_then(Value::as_u64);
    values
        .iter()
        .map(|&v| {
            if let (Some(o), Some((peak, fits))) = (own, current)
                && o == v
            {
                return charts::SweepPoint { value: v, peak_bytes: Some(peak), fits };
            }
            let mut q = plan.clone();
            plan_doc::set(&mut q, path, Value::from(v));
            // Memory alone: the sweep needs no rules, rank groups or step time.
            let m = meshplan_core::report::memory_value(&q).ok();
            charts::SweepPoint { value: v, peak_bytes: m.as_ref().map(|m| m.peak_bytes), fits: m.is_some_and(|m| m.fits) }
        })
        .collect()
}

/// The sweep: a field to sweep, the chart of peak memory over its values, and where the plan fits. Mounted by the
/// tools module into the Memory panel's slot.
#[component]
pub fn SweepPanel(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let capacity = memo(move || doc.outcome.with(|o| o.as_ref().map(|r| r.memory.gpu_memory_bytes).unwrap_or(0)));
    let sweep_field = RwSignal::new(0usize);
    // The sweep re-plans the plan once per point but its own (4 re-plans of 16,384 GPUs take about 2 ms), so it
    // runs in a task after the edit's frame: the frame callback makes that order certain (Chromium
    // already paints first after an input event; a task queued right away may run first elsewhere).
    // A stale sweep (typing went on) is dropped. Its points depend on the plan but the swept field, so an edit of
    // that field alone (or one that leaves the plan equal) reuses them; and on the core's state, so the recipes'
    // arrival (tuned defaults) sweeps again instead of keeping peaks planned without them.
    let points = RwSignal::new(Vec::<charts::SweepPoint>::new());
    let generation = StoredValue::new(0u64);
    let key = memo(move || {
        let field = sweep_field.get().min(SWEEPS.len() - 1);
        let mut rest = doc.plan.get();
        plan_doc::set(&mut rest, SWEEPS[field].0, Value::Null);
        (field, rest, doc.core_state())
    });
    effect(move || {
        // Read, not `track()`: a memo no one has read has no sources yet, so tracking it alone never fires again.
        key.with(|_| ());
        let (path, _, values) = SWEEPS[sweep_field.get_untracked().min(SWEEPS.len() - 1)];
        let ticket = generation.get_value() + 1;
        generation.set_value(ticket);
        let sweep = move || {
            if generation.try_get_value() != Some(ticket) {
                return;
            }
            browser::mark("meshplan-sweep-start");
            // The plan and its report as they are now (the same revision): the swept field may have moved since.
            let Some(plan) = doc.plan.try_get_untracked() else { return };
            let current = doc.outcome.try_with_untracked(|o| o.as_ref().ok().map(|r| (r.memory.peak_bytes, r.memory.fits))).flatten();
            let pts = sweep_points(&plan, path, values, current);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_per_gpu_beside_host_per_node() {
        // 53.72 GiB device peak (57,682,668,027 B / 2^30), 49.46 GiB allocated, 80 GiB GPUs; 60 GiB of host memory on a
        // node of 2,048 GiB; then the same host need on a node of 32 GiB, and an unknown host memory.
        let mut m = MemoryReport {
            peak_bytes: 57_682_668_027,
            allocated_peak_bytes: 53_112_471_552,
            gpu_memory_bytes: 80 << 30,
            fits: true,
            host_bytes_per_node: 60 << 30,
            host_memory_per_node_bytes: Some(2048 << 30),
            host_fits: Some(true),
            ..Default::default()
        };
        assert_eq!(summary(&m), "Device peak 53.7 GiB per GPU of 80.0 GiB (allocated 49.5 GiB, Megatron's max allocated) · host 60.0 GiB per node of 2048.0 GiB");
        (m.host_memory_per_node_bytes, m.host_fits) = (Some(32 << 30), Some(false));
        assert!(summary(&m).ends_with("host 60.0 GiB per node of 32.0 GiB: does not fit"));
        (m.host_memory_per_node_bytes, m.host_fits, m.fits) = (None, None, false);
        assert!(summary(&m).contains("of 80.0 GiB: does not fit") && summary(&m).ends_with("(host memory unknown)"));
    }
}
