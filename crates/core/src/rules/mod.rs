//! Every rule of the source guide, Megatron-Core / Megatron-LM and Megatron Bridge, as diagnostics.
//! The table [`RULES`] (in `codes.rs`, re-exported here) lists each code once, with its severity, what it means and
//! where it comes from; `meshplan explain CODE` prints that entry.
//!
//! One file per topic, each check a function of one concept: [`world`] (the world against both meshes),
//! [`widths`] (model widths against TP and ETP), [`sequence`] (SP, CP and the sequence), [`moe`] (experts and the
//! router), [`pipeline`] (VPP, uneven stages, the layer split and the schedule), [`pipeline_layout`] (explicit layouts:
//! `pipeline_model_parallel_layout` and hybrid `|` segments), [`training`] (batch, recompute and
//! precision), [`optimizer`] (optimizer, gradient, offload and data-parallel buffer settings), [`model_settings`]
//! (low-precision weights, recompute modules, activation offloading, CUDA graphs, the MoE dispatcher, TP overlap),
//! [`memory_fit`], [`topology`], and [`advice`] (the guide's tables, infos only). [`fixes`] finds the
//! nearest valid values the fixes name. [`check`] runs them in a fixed order; the search calls the cheap
//! per-topic entry points directly.

pub mod advice;
pub mod dsv4;
mod findings;
pub mod fixes;
pub mod measured;
pub mod memory_fit;
pub mod model_settings;
pub mod moe;
pub mod optimizer;
pub mod pipeline;
pub mod pipeline_layout;
pub mod sequence;
pub mod ssm;
pub mod topology;
pub mod training;
pub mod vision;
pub mod widths;
pub mod world;

use crate::derive::Derived;
use crate::pipeline::SplitError;
use crate::plan::Plan;

pub use crate::codes::{RULES, Rule, rule};
pub use findings::{Codes, Findings};
pub use fixes::{lcm, nearest_divisor, seq_multiple};
pub use measured::measured as check_measured;
pub use memory_fit::check_memory;
pub use pipeline::{interleaved_microbatches_at_least, split_code, split_diagnostic, split_diagnostic_for};
pub use topology::check_topology;

/// Sizing, divisibility and configuration rules, in a fixed order (the report lists findings of one severity in
/// this order, and the search counts a rejected layout under its first error).
pub fn check(p: &Plan, dv: &Derived, split_error: Option<&SplitError>, out: &mut impl Findings) {
    world::meshes(p, out);
    widths::attention(p, out);
    widths::window_attention(p, out);
    widths::mtp_layer(p, out);
    dsv4::tensor_parallel(p, out);
    widths::ffn(p, dv, out);
    widths::vocab(p, dv, out);
    ssm::mamba(p, dv, out);
    ssm::gated_delta_net(p, dv, out);
    sequence::sequence_parallel(p, out);
    sequence::sequence_length(p, out);
    sequence::positions(p, out);
    moe::expert_parallel(p, out);
    moe::router_and_experts(p, out);
    pipeline::stages(p, out);
    pipeline::gemma4_dense(p, out);
    pipeline_layout::conflicts(p, out);
    if let Some(e) = split_error {
        out.add(split_code(e), |_| split_diagnostic_for(p, e));
    }
    pipeline_layout::markers(p, out);
    dsv4::hash_layers(p, out);
    if let Some(h) = &p.model.hybrid_layer_pattern {
        pipeline_layout::hybrid(p, h.segments().len() as u64, out);
    }
    training::batch(p, dv, out);
    pipeline::interleaved(p, dv, out);
    pipeline::schedule(p, dv, split_error.is_some(), out);
    training::recompute_config(p, out);
    training::recompute_num_layers(p, dv, split_error.is_some(), out);
    training::precision(p, dv, out);
    optimizer::precision_aware(p, out);
    optimizer::gradient_dtype(p, out);
    optimizer::offload(p, out);
    optimizer::optimizer_instances(p, dv, out);
    optimizer::data_parallel_buffers(p, out);
    model_settings::low_precision_weights(p, out);
    model_settings::fp8_layers(p, out);
    model_settings::recompute_modules(p, dv, out);
    model_settings::gemma4_moe(p, out);
    model_settings::full_recompute(p, out);
    dsv4::hyper_connections(p, out);
    model_settings::activation_offload(p, out);
    model_settings::cpu_offload(p, out);
    model_settings::cuda_graphs(p, out);
    model_settings::moe_dispatch(p, out);
    model_settings::ep_overlap(p, out);
    model_settings::tp_comm_overlap(p, out);
    model_settings::cross_entropy(p, out);
    vision::image_tokens(p, out);
    advice::advice(p, dv, out);
}
