//! DeepSeek-V4 against the layout (`experimental_attention_variant = "dsv4_hybrid"`) and hyper-connections against
//! recompute: what Megatron-Core and Megatron Bridge require of them.

use super::findings::{Findings, TP, d};
use crate::Code;
use crate::plan::Plan;
use crate::settings::Recompute;

/// dsv4-tensor-parallel: DeepSeek-V4's hybrid attention runs at TP = 1 in Megatron Bridge (every recipe says so), and
/// Megatron-Core asserts the output groups divide over TP.
// Source: Megatron Bridge src/megatron/bridge/recipes/deepseek/h100/deepseek_v4.py ("DSv4 hybrid attention requires
// TP=1", each recipe sets tensor_model_parallel_size = 1); Megatron-LM
// experimental_attention_variant/deepseek_v4_hybrid_attention.py ("o_groups must be divisible by tp_size").
pub fn tensor_parallel(p: &Plan, out: &mut impl Findings) {
    let (m, tp) = (&p.model, p.parallelism.tp());
    if !m.is_dsv4() || tp <= 1 {
        return;
    }
    out.add(Code::Dsv4TensorParallel, |code| {
        let (groups, _) = m.dsv4_output();
        let groups_note = if groups % tp == 0 { String::new() } else { format!("; o_groups = {groups} does not even divide by it ({groups} mod {tp} = {})", groups % tp) };
        d(
            code,
            format!("tensor_model_parallel_size = {tp} with DeepSeek-V4's hybrid attention, which Megatron Bridge runs at TP = 1{groups_note}"),
            "set tensor_model_parallel_size to 1 and scale with expert and pipeline parallelism, as Bridge's DeepSeek-V4 recipes do".into(),
        )
        .with_apply(TP, 1u64)
    });
}

/// dsv4-hash-layers-need-layout: the hash-routed layers read the token ids, so they must sit with the embedding on
/// the first stage; with PP > 1 Megatron Bridge requires an explicit pipeline_model_parallel_layout, and a layout must
/// build the hash layers in the embedding's chunk. The fix is the
/// layout Bridge builds: the layers dealt evenly (the first num_layers mod PP stages one more), the embedding first,
/// the MTP layers and the loss last.
// Source: Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py
// set_deepseek_v4_pipeline_model_parallel_layout ("hash-routed MoE layers that must co-locate with the embedding on
// the first pipeline stage, so an explicit pipeline_model_parallel_layout is required whenever
// pipeline_model_parallel_size > 1").
pub fn hash_layers(p: &Plan, out: &mut impl Findings) {
    let m = &p.model;
    let par = &p.parallelism;
    let pp = par.pp();
    let hash = m.moe_n_hash_layers.unwrap_or(0).min(m.num_layers);
    if !m.is_dsv4() || hash == 0 || pp <= 1 {
        return;
    }
    let problem = match &par.pipeline_model_parallel_layout {
        None => format!("pipeline_model_parallel_size = {pp} without a pipeline_model_parallel_layout: DeepSeek-V4's {hash} hash-routed layers must be built with the embedding on the first stage"),
        Some(spec) => {
            // The layout's own split (only for a DeepSeek-V4 model with hash layers): the decoder layers of the chunk
            // that builds the embedding must begin with layers 0 .. hash. A layout that does not read is its own error.
            let Ok(l) = crate::pipeline::layout::split(spec, pp, par.virtual_pipeline_model_parallel_size, m.num_layers, m.mtp_num_layers) else { return };
            let e = l.split.placement.embedding;
            let chunk = l.split.stages.get(e.pipeline_rank as usize).and_then(|s| s.iter().find(|c| c.virtual_rank == e.virtual_rank));
            let with_embedding = chunk.filter(|c| c.start == 0).map_or(0, |c| c.count);
            if with_embedding >= hash {
                return;
            }
            format!("the pipeline_model_parallel_layout builds {with_embedding} decoder layer(s) with the embedding, but DeepSeek-V4's first {hash} layers are hash-routed and must be built there")
        }
    };
    out.add(Code::Dsv4HashLayersNeedLayout, |code| {
        let layout = bridge_layout(m.num_layers, pp, m.mtp_num_layers);
        d(
            code,
            problem,
            format!("set pipeline_model_parallel_layout to \"{layout}\", Megatron Bridge's even layout for {} layers on {pp} stages", m.num_layers),
        )
        .with_apply("parallelism.pipeline_model_parallel_layout", layout)
    });
}

/// Megatron Bridge's DeepSeek-V4 layout in Megatron's string form: per stage `t*n` (n = layers / PP, one more on the
/// first layers mod PP stages), `E` before the first, MTP (`m` per depth) and `L` after the last.
fn bridge_layout(layers: u64, pp: u64, mtp: u64) -> String {
    let (base, extra) = (layers / pp, layers % pp);
    // PP is bounded by the layer count before the rules run (plan::bound_pipeline), so this is at most 2^14 stages.
    let mut s = String::new();
    for rank in 0..pp {
        if rank > 0 {
            s.push('|');
        }
        if rank == 0 {
            s.push('E');
        }
        let n = base + u64::from(rank < extra);
        if n > 0 {
            s.push_str(&format!("t*{n}"));
        }
        if rank == pp - 1 {
            s.push_str(&"m".repeat(mtp.min(1 << 10) as usize));
            s.push('L');
        }
    }
    s
}

/// hyper-connections-full-recompute: Megatron-Core does not checkpoint whole layers with hyper-connections.
// Source: Megatron-LM megatron/core/transformer/transformer_config.py __post_init__ ("enable_mhc_connections is not
// yet compatible with full activation recompute. Use selective recompute with 'mhc' in recompute_modules").
pub fn hyper_connections(p: &Plan, out: &mut impl Findings) {
    if !p.model.enable_hyper_connections || p.training.settings.recompute_granularity != Recompute::Full {
        return;
    }
    out.add(Code::HyperConnectionsFullRecompute, |code| {
        d(
            code,
            "recompute_granularity = full with hyper-connections: Megatron-Core raises \"enable_mhc_connections is not yet compatible with full activation recompute\"".into(),
            "set recompute_granularity = \"selective\" without a recompute_method or recompute_num_layers (with \"mhc\" in recompute_modules, as Bridge's DeepSeek-V4 recipes do)".into(),
        )
        .with_apply("training.recompute_granularity", "selective")
        .with_apply("training.recompute_method", serde_json::Value::Null)
        .with_apply("training.recompute_num_layers", serde_json::Value::Null)
    });
}
