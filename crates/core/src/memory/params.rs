//! What each pipeline stage holds that the layout decides: its layers by kind per virtual chunk and its parameters
//! per GPU, with the share of them that FP8/FP4 layers store quantized.

use super::run::Run;
use crate::derive::Derived;
use crate::model::{Ffn, KindCounts, LayerKind, LayerKinds, LayerParams, MAX_LAYER_KINDS, Mixer, ModelConfig};
use crate::pipeline::{ChunkRef, StageSplit};
use crate::plan::Plan;

/// What one pipeline stage holds that the layout alone decides: its layers by kind in each virtual chunk and its
/// parameters per GPU. The same for every micro-batch size, recompute and optimizer choice of that layout.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageParams {
    pub layers: u64,
    /// Parameters per GPU of the dense part (sharded over TP, or replicated) and of the routed experts (over EP·ETP).
    pub dense: f64,
    pub experts: f64,
    /// Layers of each kind (indexed like the model's kind table) in each virtual chunk, in order.
    pub chunks: Vec<KindCounts>,
    /// Layers of each kind of the whole stage: the sum of `chunks`, counted once per layout rather than per candidate.
    pub counts: KindCounts,
    /// The MoE layers among `counts`, counted once per layout.
    pub moe_layers: u64,
    /// The GEMM weights among `dense` / `experts` of layers that run in FP8 / FP4 (0 without low precision): what TE
    /// stores quantized. Embeddings, the output layer, norms and routers stay in the parameter dtype.
    pub dense_low: f64,
    pub experts_low: f64,
    /// Layers of each kind of this stage kept in BF16 under FP8 / FP4 (`first_last_layers_bf16`).
    pub bf16_layers: KindCounts,
    /// Parameters per GPU of the stage's largest layer (a Megatron-FSDP unit).
    pub largest_layer: f64,
    /// Whether this stage builds the output layer and the loss (the split's last chunk).
    pub output: bool,
    /// Whether this stage builds the MTP block (the split's MTP chunk: a layout's `m`, else the last chunk).
    pub mtp: bool,
    /// The vision encoder's parameters per GPU on the stage that builds it (the embedding's): all of them, and the
    /// frozen share (weights only; the trained share is also in `dense`).
    pub vision: f64,
    pub vision_frozen: f64,
    /// LoRA adapter parameters per GPU of the stage's layers (0 without PEFT, `memory/peft.rs`): with PEFT they are
    /// what is trained; `dense` and `experts` are the frozen base.
    pub adapters: f64,
    /// Whether `chunks` and `bf16_layers` are the previous stage's: its saved activations per microbatch are then the
    /// previous stage's too, and the search's estimate reuses them (the middle stages of most splits).
    pub like_previous: bool,
    /// Whether the stage holds everything the previous stage holds (`like_previous`, and the same parameters, output
    /// side, MTP block and vision encoder): its memory then differs from the previous stage's only by the
    /// microbatches in flight.
    pub same_as_previous: bool,
}

/// The parameters every stage of `split` holds under `p`'s layout; `kinds` is `p.model.kinds()`, counted once by
/// callers that size many layouts of one model.
pub fn stage_params(p: &Plan, d: &Derived, split: &StageSplit, kinds: &LayerKinds) -> Vec<StageParams> {
    let mut out = Vec::new();
    stage_params_into(p, d, split, kinds, &mut out);
    out
}

/// The GEMM weights among a layer's replicated parameters: MLA's down-projections, duplicated on every TP rank, and a
/// latent MoE's projections h → ℓ → h, duplicated likewise.
// ML megatron/core/transformer/multi_latent_attention.py: linear_q_down_proj (h × q_lora_rank) and linear_kv_down_proj
// (h × (kv_lora_rank + qk_pos_emb_head_dim)), TE linears in parallel_mode "duplicated"; moe/moe_layer.py
// fc1_latent_proj / fc2_latent_proj (TELinear, parallel_mode "duplicated").
fn replicated_gemms(m: &ModelConfig, kind: LayerKind) -> f64 {
    let h = m.hidden_size as f64;
    let mla = if m.multi_latent_attention && kind.mixer == Mixer::Attention {
        h * m.q_lora_rank.unwrap_or(0) as f64 + h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) as f64
    } else if kind.mixer.is_dsv4() {
        // DeepSeek-V4: linear_q_down_proj, the output group projection, the compressor's and indexer's linears
        // (model/dsv4.rs dsv4_replicated_gemms).
        m.dsv4_replicated_gemms(kind.mixer)
    } else {
        0.0
    };
    let latent = if kind.ffn == Ffn::Moe { m.moe_latent_size.map_or(0.0, |l| 2.0 * h * l as f64) } else { 0.0 };
    mla + latent
}

/// As [`stage_params`], into `out`, reusing its buffers (the layout search sizes thousands of layouts).
pub fn stage_params_into(p: &Plan, d: &Derived, split: &StageSplit, kinds: &LayerKinds, out: &mut Vec<StageParams>) {
    let par = &p.parallelism;
    let m = &p.model;
    let run = Run::of(p);
    let tp = par.tp().max(1) as f64;
    let expert_shard = (par.ep().max(1) * par.etp().max(1)) as f64;
    let vocab = d.padded_vocab_size;
    let place = split.placement;
    // The final norm: without MTP on the post_process (last) chunk; with MTP on the chunk holding the last decoder layer
    // (megatron/core/transformer/transformer_block.py has_final_layernorm_in_this_stage).
    let final_norm_rank = match place.mtp {
        Some(_) if m.mtp_num_layers > 0 => split.stage_of_layer(m.num_layers.saturating_sub(1)).unwrap_or(place.loss.pipeline_rank as usize),
        _ => place.loss.pipeline_rank as usize,
    };
    // Rows of a learned position table: Megatron-LM builds max_position_embeddings (required, ≥ seq_length, in
    // megatron/training/arguments.py); Megatron Bridge's gpt_provider.py provide() passes max_sequence_length = seq_length.
    let position_rows = m.max_position_embeddings.unwrap_or(p.training.seq_length);
    // Layers of one kind have identical parameters (model.rs params_of): per GPU, the TP-sharded part over TP plus
    // the replicated part, and the routed experts over EP·ETP; the GEMM weights are the TP-sharded part plus the
    // duplicated GEMMs (MLA's down-projections, a latent MoE's projections).
    let per_gpu = |lp: &LayerParams| (lp.tp_sharded as f64 / tp + lp.replicated as f64, lp.routed_experts as f64 / expert_shard);
    let table = &kinds.totals.table;
    let mut per_kind = [(0.0, 0.0); MAX_LAYER_KINDS];
    let mut gemm_kind = [0.0; MAX_LAYER_KINDS];
    let mut adapter_kind = [0.0; MAX_LAYER_KINDS];
    for (i, (&kind, lp)) in table.kinds().iter().zip(table.params()).enumerate() {
        per_kind[i] = per_gpu(lp);
        adapter_kind[i] = super::peft::adapter_params(m, &p.training.settings, kind, (tp, par.etp().max(1) as f64));
        gemm_kind[i] = lp.tp_sharded as f64 / tp + replicated_gemms(m, kind);
    }
    let n_kinds = table.len();
    out.resize_with(split.stages.len(), StageParams::default);
    for ((rank, chunks), st) in split.stages.iter().enumerate().zip(out.iter_mut()) {
        st.chunks.clear();
        (st.layers, st.dense, st.experts, st.dense_low, st.experts_low) = (0, 0.0, 0.0, 0.0, 0.0);
        st.bf16_layers = KindCounts::default();
        let mut counts = KindCounts::default();
        for c in chunks {
            let chunk = kinds.counts_in(c.start, c.count);
            counts.add_all(&chunk);
            st.chunks.push(chunk);
            st.layers += c.count;
            if run.low() {
                // ML megatron/core/fp8_utils.py is_first_last_bf16_layer: the first num_layers_at_start_in_bf16 and the
                // last num_layers_at_end_in_bf16 layers of the model run in BF16.
                st.bf16_layers.add_all(&kinds.edge_counts_in(c.start, c.count, m.num_layers, (run.bf16_first, run.bf16_last)));
            }
        }
        st.counts = counts;
        st.moe_layers = table.kinds().iter().zip(counts.0).filter(|(k, _)| k.ffn == Ffn::Moe).map(|(_, n)| n).sum();
        st.largest_layer = 0.0;
        st.adapters = 0.0;
        for kind in 0..n_kinds {
            let ((dense_per_layer, experts_per_layer), count) = (per_kind[kind], counts.get(kind));
            st.adapters += count as f64 * adapter_kind[kind];
            st.dense += count as f64 * dense_per_layer;
            st.experts += count as f64 * experts_per_layer;
            if run.low() {
                let quantized = count.saturating_sub(st.bf16_layers.get(kind)) as f64;
                st.dense_low += quantized * gemm_kind[kind];
                st.experts_low += quantized * experts_per_layer;
            }
            if count > 0 {
                st.largest_layer = st.largest_layer.max(dense_per_layer + experts_per_layer);
            }
        }
        // Each module where the split places it (pipeline::Placement: the embedding on the first chunk, the output
        // layer and loss on the last, the MTP block where a layout's `m` is, else on the last chunk).
        let at = |c: ChunkRef| c.pipeline_rank == rank as u64;
        let word_embedding = m.word_embedding_params(vocab) as f64 / tp + m.position_embedding_params(position_rows) as f64;
        let output_layer = vocab as f64 * m.hidden_size as f64 / tp;
        (st.vision, st.vision_frozen) = (0.0, 0.0);
        if at(place.embedding) {
            // Word embeddings split over TP by vocabulary; a learned position table is replicated on every TP rank.
            st.dense += word_embedding;
            // Gemma 4's per-layer embeddings sit beside them (model.rs per_layer_embedding_params).
            let (ple_split, ple_whole) = m.per_layer_embedding_params();
            st.dense += ple_split as f64 / tp + ple_whole as f64;
            // The vision encoder sits beside the embedding (memory/vision.rs).
            if let Some(e) = &m.vision_config {
                let (trained, frozen) = super::vision::params_per_gpu(p, e);
                st.dense += trained;
                (st.vision, st.vision_frozen) = (trained + frozen, frozen);
            }
        }
        if rank == final_norm_rank {
            // Replicated over TP.
            st.dense += m.final_norm_params() as f64;
        }
        st.output = at(place.loss);
        // The output layer; with tied embeddings it shares the embedding's weight only on the first chunk
        // (language_module.py setup_embeddings_and_output_layer: skip_weight_param_allocation = pre_process and
        // share_embeddings_and_output_weights), so with PP > 1 the last stage keeps its own copy.
        if st.output && !(m.share_embeddings_and_output_weights && place.loss == place.embedding) {
            st.dense += output_layer;
        }
        st.mtp = place.mtp.is_some_and(at);
        if let Some(mtp_chunk) = place.mtp.filter(|_| st.mtp) {
            // The MTP chunk builds its own LanguageModelEmbedding for the MTP inputs unless it is the first chunk
            // (gpt_model.py: built when pre_process or mtp_process; language_module.py keeps it in sync with the first
            // stage's), and its own output layer unless it is the last chunk (built when post_process or mtp_process;
            // with tied weights still allocated unless pre_process). A layout's standalone MTP chunk holds both.
            if m.mtp_num_layers > 0 && mtp_chunk != place.embedding {
                st.dense += word_embedding;
            }
            if m.mtp_num_layers > 0 && mtp_chunk != place.loss && !(m.share_embeddings_and_output_weights && mtp_chunk == place.embedding) {
                st.dense += output_layer;
            }
            // The MTP layers (multi_token_prediction.py), each depth its layers plus its projections
            // (one depth's weights for every depth with mtp_use_repeated_layer); their GEMMs (the layers' and eh_proj,
            // 2h·h) run in the layers' precision.
            let block = &kinds.totals.mtp;
            let (mtp_dense, mtp_experts) = per_gpu(&block.params);
            let mtp = block.weight_copies as f64;
            st.dense += mtp * mtp_dense;
            st.experts += mtp * mtp_experts;
            if run.low() {
                let replicated =
                    table.kinds().iter().enumerate().fold(0.0, |s, (i, &k)| s + block.layers.get(i) as f64 * replicated_gemms(m, k));
                st.dense_low += mtp * (block.params.tp_sharded as f64 / tp + replicated);
                st.experts_low += mtp * mtp_experts;
            }
            if block.weight_copies > 0 {
                st.largest_layer = st.largest_layer.max(mtp_dense + mtp_experts);
            }
        }
    }
    for i in 0..out.len() {
        let like = i > 0 && out[i].chunks == out[i - 1].chunks && out[i].bf16_layers == out[i - 1].bf16_layers;
        out[i].like_previous = like;
        out[i].same_as_previous = like && holds_the_same(&out[i], &out[i - 1]);
    }
}

/// Whether two stages with the same layers (`like_previous`) hold the same parameters and parts of the model.
fn holds_the_same(a: &StageParams, b: &StageParams) -> bool {
    let f = |s: &StageParams| {
        [s.dense, s.experts, s.dense_low, s.experts_low, s.largest_layer, s.vision, s.vision_frozen, s.adapters].map(f64::to_bits)
    };
    (a.layers, a.counts, a.moe_layers, a.output, a.mtp) == (b.layers, b.counts, b.moe_layers, b.output, b.mtp) && f(a) == f(b)
}
