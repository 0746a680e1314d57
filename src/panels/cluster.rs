//! The Cluster panel: the GPU (with its catalogue facts), GPUs per node, nodes, the NVLink domain, and
//! the total GPU count, which sets the node count when typed.

use crate::fields;
use crate::state::{Doc, catalog, editor};
use crate::ui::controls::{SelectField, TextField};
use leptos::prelude::*;
use crate::state::signal::memo;
use serde_json::Value;

#[component]
pub fn ClusterPanel(doc: Doc) -> impl IntoView {
    let gpus = catalog().gpus.iter().map(|g| (g.key.clone(), g.name.clone())).collect::<Vec<_>>();
    view! {
        <section class="panel" id="cluster-panel" aria-labelledby="cluster-h">
            <h2 id="cluster-h">"Cluster"</h2>
            <SelectField doc info=&fields::GPU options=gpus />
            <GpuFacts doc />
            <div class="fields">
                {fields::CLUSTER.iter().map(|info| view! { <TextField doc info /> }).collect_view()}
                <TotalGpus doc />
            </div>
        </section>
    }
}

/// The chosen GPU's memory, bandwidths, peak FLOP/s and NVLink domain, from the catalogue.
#[component]
fn GpuFacts(doc: Doc) -> impl IntoView {
    let gpu = move || doc.outcome.with(|o| o.as_ref().ok().map(|r| r.plan.gpu.clone()));
    move || {
        gpu().map(|g| {
            view! {
                <p class="gpu-facts">
                    {format!("{:.0} GB {} · {:.2} TB/s · {:.0} BF16 TFLOP/s", g.memory_gb, g.memory_type, g.hbm_bandwidth_tbps, g.dense_bf16_tflops)}
                    {g.dense_fp8_tflops.map(|t| format!(" · {t:.0} FP8 TFLOP/s"))}
                    {g.scale_up_bw_gbps.map(|b| format!(" · {} {b:.0} GB/s", g.scale_up))}
                    {format!(" · NVLink domain {}", g.nvlink_domain_size)}
                </p>
            }
        })
    }
}

/// Total GPUs = GPUs per node × nodes; typing a total sets the node count (rounded up).
#[component]
fn TotalGpus(doc: Doc) -> impl IntoView {
    let editor = editor();
    let id = "f-cluster-num-gpus";
    let help = "Total GPUs = GPUs per node × nodes; typing it sets the node count";
    let total = memo(move || doc.outcome.with(|o| o.as_ref().map(|r| r.derived.world_size.to_string()).unwrap_or_default()));
    // What was typed and what it became: a total that is not a whole number of nodes is rounded up, and says so while
    // the plan still has the rounded count.
    let typed = RwSignal::new(None::<(u64, String, u64)>);
    let rounding = move || {
        typed.get().filter(|(t, made, _)| total.with(|now| now == made) && t.to_string() != *made).map(|(t, made, gpn)| {
            format!("{t} GPUs is not a whole number of {gpn}-GPU nodes: rounded up to {made} GPUs.")
        })
    };
    view! {
        <div class="field">
            <label for=id title=help>"Total GPUs"</label>
            <input id=id type="text" inputmode="numeric" title=help
                prop:value=total
                on:change=move |ev| {
                    if let Ok(total) = event_target_value(&ev).trim().parse::<u64>() {
                        let gpn = doc.outcome.with_untracked(|o| o.as_ref().map(|r| r.plan.cluster.gpus_per_node).unwrap_or(8)).max(1);
                        let nodes = total.div_ceil(gpn).max(1);
                        typed.set(Some((total, nodes.saturating_mul(gpn).to_string(), gpn)));
                        editor.edit("cluster.num_nodes", Value::from(nodes));
                    }
                } />
            {move || rounding().map(|m| view! { <p id="total-gpus-rounded" class="hint" role="status">{m}</p> })}
        </div>
    }
}
