//! The vision encoder's memory on the stage that builds it (the first chunk, with the embedding): its weights per GPU,
//! trained (gradients and optimizer state like the rest) or frozen (`freeze_vision_model`, `freeze_vision_projection`:
//! weights only), and the activations it saves per microbatch for the image tokens of `image_tokens_per_sample`.
// Source: megatron/core/models/multimodal/llava_model.py (the vision model and projection built with add_encoder on the
// first stage; freeze() sets requires_grad = False, so the optimizer and the grad buffers leave those parameters out);
// Megatron Bridge @067f987df03b qwen_vl/modelling_qwen3_vl/transformer_config.py get_vision_model_config (a config built
// afresh: the language model's tensor_model_parallel_size and recompute settings, but sequence_parallel False,
// context_parallel_size 1, pipeline_model_parallel_size 1, no fp8 — the encoder's weights are 16-bit parameters with no
// FP8 weight cache, its saved tensors 16-bit) and modelling_qwen3_vl/model.py (the patch merger's linear_fc1
// TEColumnParallelLinear, linear_fc2 TERowParallelLinear; with CP > 1 and vision_dp_when_cp False, its default, every CP
// rank encodes all of its samples' images: context parallelism does not split the encoder, by Megatron's design).
// An encoder with its own tensor_model_parallel_size 1 (Megatron Bridge's Hugging Face towers: Gemma 4's Gemma4VLModel
// builds AutoModel.from_config(vision_config) and marks it for TP gradient averaging) is whole on every TP rank, and
// every TP rank runs it on the same images: neither its weights nor its saved tensors split over TP.

use crate::model::VisionEncoder;
use crate::plan::{Plan, Recompute};

/// The encoder's parameters per GPU: (trained, frozen).
pub(crate) fn params_per_gpu(p: &Plan, e: &VisionEncoder) -> (f64, f64) {
    let tp = e.tp(p.parallelism.tp().max(1)) as f64;
    let ep = e.params();
    // Layers' GEMMs and the projector split over TP; norms, output biases, the patch embedding and the rest replicated.
    let encoder = ep.layers_tp_sharded as f64 / tp + ep.replicated as f64;
    let projector = ep.projector as f64 / tp;
    let s = &p.training.settings;
    let (mut trained, mut frozen) = (0.0, 0.0);
    for (n, is_frozen) in [(encoder, s.freeze_vision_model), (projector, s.freeze_vision_projection)] {
        if is_frozen {
            frozen += n;
        } else {
            trained += n;
        }
    }
    (trained, frozen)
}

/// Bytes of activations one microbatch leaves saved in the encoder and projector (16-bit): nothing for a frozen part
/// (its input needs no gradient, so autograd saves nothing before the first trained module); a trained encoder saves
/// each layer's tensors per patch ([`VisionEncoder::layer_activation_bytes`]) — under full recompute only each layer's
/// input — and a trained projector its linears' inputs per image token. The encoder runs without sequence parallelism
/// (its tensors outside the TP-split attention and MLP are whole on every TP rank) and without context parallelism.
pub(crate) fn activations_per_microbatch(p: &Plan, e: &VisionEncoder) -> f64 {
    let s = &p.training.settings;
    let tokens = p.training.micro_batch_size as f64 * s.image_tokens_per_sample as f64;
    let patches = tokens * e.patches_per_token as f64;
    let tp = e.tp(p.parallelism.tp().max(1)) as f64;
    let mut bytes = 0.0;
    if !s.freeze_vision_model {
        // The vision config's sequence_parallel is False whatever the language model's: the per-patch tensors outside
        // the TP-split projections (norm inputs, residuals) are whole on each TP rank.
        let (split, seq) = e.layer_activation_bytes();
        let per_layer = if s.recompute_granularity == Recompute::Full { 2.0 * e.hidden_size as f64 } else { split / tp + seq };
        bytes += patches * e.num_layers as f64 * per_layer;
    }
    if !s.freeze_vision_model || !s.freeze_vision_projection {
        // Each projector linear's input (2 bytes an element). The linears run in column-, row-parallel pairs (the patch
        // merger's linear_fc1 / linear_fc2): a column-parallel linear's input is whole on every TP rank, a row-parallel
        // one's (the column-parallel output) split over TP.
        let inputs: f64 = e.projector.iter().enumerate().map(|(i, [inp, _])| *inp as f64 / if i % 2 == 1 { tp } else { 1.0 }).sum();
        bytes += tokens * 2.0 * inputs;
    }
    bytes
}
