//! The Derived panel: the sizes the core derives from the plan (DP, expert DP, minimum GPUs, microbatches,
//! bubble, parameters, layers per stage and per virtual chunk, peak memory), one fixed row each.

use crate::format::{billions, chunks, gib, percent};
use crate::state::Outcome;
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::Report;

/// "— (does not divide)" for a size that is 0 because the mesh does not divide the world.
fn per(n: u64) -> String {
    if n == 0 { "— (does not divide)".to_string() } else { n.to_string() }
}

/// One derived figure: element id, label, and its value from the report.
type Figure = (&'static str, &'static str, fn(&Report) -> String);

const DERIVED: [Figure; 12] = [
    ("world-size", "World size", |r| r.derived.world_size.to_string()),
    ("dp", "Data parallel (DP)", |r| per(r.derived.data_parallel_size)),
    ("edp", "Expert data parallel", |r| per(r.derived.expert_data_parallel_size)),
    ("min-gpus", "Minimum GPUs: PP·max(TP·CP, EP·ETP)", |r| r.derived.min_gpus.to_string()),
    ("nodes-needed", "Minimum nodes (for the minimum GPUs)", |r| r.derived.nodes_needed.to_string()),
    ("microbatches", "Microbatches per step", |r| r.derived.num_microbatches.to_string()),
    ("bubble", "Pipeline bubble, relative to compute time", |r| percent(r.derived.pipeline_bubble_fraction)),
    ("total-params", "Total parameters", |r| billions(r.derived.total_parameters)),
    ("active-params", "Active parameters", |r| billions(r.derived.active_parameters)),
    ("layers-per-stage", "Layers per stage", |r| r.derived.layers_per_stage.iter().map(u64::to_string).collect::<Vec<_>>().join(" · ")),
    ("layers-per-chunk", "Layers per virtual chunk, by stage", |r| {
        (0..r.derived.layers_per_chunk.len() as u64).map(|rank| chunks(r, rank)).collect::<Vec<_>>().join(" | ")
    }),
    ("peak", "Peak memory per GPU", |r| {
        let m = &r.memory;
        format!("{} of {}{}", gib(m.peak_bytes), gib(m.gpu_memory_bytes), if m.fits { "" } else { " — does not fit" })
    }),
];

#[component]
pub fn DerivedPanel(outcome: Memo<Outcome>) -> impl IntoView {
    // The rows stay put while the plan can be read; an edit updates the values whose text changed.
    let readable = memo(move || outcome.with(Result::is_ok));
    view! {
        <section class="panel" id="derived" aria-labelledby="derived-h">
            <h2 id="derived-h">"Derived"</h2>
            <dl class="derived">
                {move || readable.get().then(|| DERIVED.iter().map(|&(id, label, value)| view! {
                    <div class="kv" data-key=id><dt>{label}</dt>
                        <dd id=format!("d-{id}")>{move || outcome.with(|o| o.as_ref().map(value).unwrap_or_default())}</dd></div>
                }).collect_view())}
            </dl>
        </section>
    }
}
