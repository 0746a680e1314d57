//! What the programs that take Megatron-LM's command line and add to it mean by their own words: slime's Ray launcher
//! and RL batch (`train.py --actor-num-nodes … --rollout-batch-size …`) with the defaults it sets before Megatron-LM
//! validates, and Megatron-DeepSpeed's DeepSpeed-MoE (`--num-experts` per MoE layer, `--topk`, `--expert-interval`,
//! `--mlp-type residual`); and an encoder-decoder (T5) command's layers, planned as a decoder's with a note.
//! `imports::mlm` hands each such word here ([`word`]) and, once the whole command is read,
//! calls [`finish`], which decides what the words mean together and says it in notes.

use super::builder::Builder;
use serde_json::Value;

/// slime's own arguments (slime/utils/arguments.py @ THUDM/slime 624b824a): the training actor's Ray placement
/// (`--actor-num-nodes`, default 1; `--actor-num-gpus-per-node`, default 8: Megatron's world is their product,
/// slime/backends/megatron_utils/arguments.py `megatron_parse_args`), the rollout batch that makes the global batch,
/// dynamic batching's token budget, the rollout lengths, and the Hugging Face checkpoint the run names its model by.
const SLIME: [&str; 10] = [
    "--actor-num-nodes",
    "--actor-num-gpus-per-node",
    "--rollout-batch-size",
    "--n-samples-per-prompt",
    "--num-steps-per-rollout",
    "--use-dynamic-batch-size",
    "--max-tokens-per-gpu",
    "--rollout-max-prompt-len",
    "--rollout-max-response-len",
    "--hf-checkpoint",
];

/// Megatron-DeepSpeed's MoE arguments (microsoft/Megatron-DeepSpeed megatron/arguments.py l.608-616 @ f4157bea:
/// `--num-experts` nargs '+' default [1], `--mlp-type` standard|residual, `--topk` default 1, `--expert-interval`
/// default 2).
const DS_MOE: [&str; 3] = ["--topk", "--expert-interval", "--mlp-type"];

/// Megatron-LM's encoder-decoder (T5) arguments (megatron/training/arguments.py: `--encoder-num-layers` and
/// `--decoder-num-layers`, each `--num-layers` when not given; `--decoder-seq-length`; `--vocab-extra-ids`, the
/// sentinel tokens), which `pretrain_t5.py` takes.
const T5: [&str; 4] = ["--encoder-num-layers", "--decoder-num-layers", "--decoder-seq-length", "--vocab-extra-ids"];

/// Ascend MindSpeed-LLM's model and pipeline arguments (@ Ascend/MindSpeed-LLM c77308a1): `--first-k-dense-replace`
/// (features_manager/transformer/transformer_block.py), `--n-shared-experts` (features_manager/moe/shared_expert.py),
/// `--noop-layers` (identity layers that pad a pipeline), `--num-layer-list` (each stage's layers,
/// features_manager/pipeline_parallel/num_layer_list.py), `--geglu` and `--gelu-tanh` (features_manager/models/module.py).
const MINDSPEED: [&str; 6] = ["--first-k-dense-replace", "--n-shared-experts", "--noop-layers", "--num-layer-list", "--geglu", "--gelu-tanh"];

/// The switches among them (store_true: no value follows).
pub(super) const SWITCHES: [&str; 3] = ["--use-dynamic-batch-size", "--geglu", "--gelu-tanh"];

/// The most values `--num-experts` keeps (one per MoE layer in PR-MoE).
const MAX_EXPERT_COUNTS: usize = 4096;

/// Reads one of these programs' own words; true when it is one (kept for [`finish`]).
pub(super) fn word(b: &mut Builder, key: &str, values: &[String]) -> bool {
    let first = values.first().cloned().unwrap_or_default();
    if SLIME.contains(&key) {
        b.slime = true;
        b.fork_args.push((key.to_string(), first));
        return true;
    }
    // `--decoder-num-layers` alone is also today's spelling of a decoder's --num-layers (arguments.py:957-960), read
    // as that too.
    if key == "--decoder-num-layers" {
        b.fork_args.push((key.to_string(), first));
        return false;
    }
    if DS_MOE.contains(&key) || T5.contains(&key) || MULTIMODAL.contains(&key) || MINDSPEED.contains(&key) {
        b.fork_args.push((key.to_string(), first));
        return true;
    }
    // PR-MoE's experts per MoE layer (`--num-experts 32 32 … 64 64`): several numbers are Megatron-DeepSpeed's list.
    if key == "--num-experts" && values.len() > 1 {
        let counts: Vec<u64> = values.iter().take(MAX_EXPERT_COUNTS).filter_map(|v| v.parse().ok()).collect();
        if counts.len() == values.len().min(MAX_EXPERT_COUNTS) {
            b.fork_args.push((key.to_string(), values.join(" ")));
            let most = counts.iter().copied().max().unwrap_or(1);
            b.set("model.num_moe_experts", Value::from(most), 0);
            b.notes.push(format!(
                "--num-experts {}: Megatron-DeepSpeed's experts per MoE layer (PR-MoE); every MoE layer is sized with the most, {most} (one expert count for all layers is what meshplan models)",
                values.join(" ")
            ));
            return true;
        }
    }
    false
}

/// What the words [`word`] kept mean once the whole command is read: slime's placement, defaults and batch, and
/// DeepSpeed-MoE's routing and MoE layers. Runs before Megatron-LM's own defaults and validate_args.
pub(super) fn finish(b: &mut Builder) {
    if b.slime {
        slime(b);
    }
    let moe = b.get("model.num_moe_experts").and_then(crate::fields::as_uint).unwrap_or(0) > 1;
    let ds = b.deepspeed || b.fork_args.iter().any(|(k, _)| DS_MOE.contains(&k.as_str()));
    if moe && ds {
        deepspeed_moe(b);
    }
    hybrid_symbols(b);
    let has = |b: &Builder, keys: &[&str]| b.fork_args.iter().any(|(k, _)| keys.contains(&k.as_str()));
    if has(b, &MINDSPEED) {
        mindspeed(b);
    }
    if has(b, &MULTIMODAL) {
        multimodal(b);
    } else if has(b, &["--encoder-num-layers", "--vocab-extra-ids"]) {
        encoder_decoder(b);
    }
}

/// MindSpeed-LLM's arguments (see [`MINDSPEED`]), each as MindSpeed builds it: with `--first-k-dense-replace K` a layer
/// (0-based l) is MoE when l ≥ K and l % moe_layer_freq == 0 (core/transformer/transformer_block.py l.163-166); the
/// shared expert is n_shared_experts × the expert FFN; `--geglu` / `--gelu-tanh` make the MLP gated GELU
/// (core/transformer/mlp.py l.85-96); `--num-layer-list` is each stage's layers, a pipeline layout; noop layers at the
/// end are identity layers, so the model is that many layers shorter on its last stage. Said in one note.
fn mindspeed(b: &mut Builder) {
    let mut said = Vec::new();
    if given(b, "--geglu") || given(b, "--gelu-tanh") {
        b.set("model.gated_linear_unit", Value::Bool(true), 0);
        b.set("model.activation_func", Value::from("gelu"), 0);
        said.push("a gated GELU MLP (--geglu / --gelu-tanh)".to_string());
    }
    let uint = |b: &Builder, p: &str| b.get(p).and_then(crate::fields::as_uint);
    let layers = uint(b, "model.num_layers").filter(|&l| l <= crate::limits::MAX_LAYERS);
    if let (Some(k), Some(l), true) = (num(b, "--first-k-dense-replace"), layers, uint(b, "model.num_moe_experts").unwrap_or(0) > 1) {
        let freq = uint(b, "model.moe_layer_freq").unwrap_or(1).max(1);
        let list: Vec<Value> = (0..l).map(|i| Value::from(u64::from(i >= k && i % freq == 0))).collect();
        b.set("model.moe_layer_freq", Value::Array(list), 0);
        said.push(format!("the first {k} layers dense, then an MoE layer every {freq}"));
    }
    if let (Some(n), None) = (num(b, "--n-shared-experts"), b.get("model.moe_shared_expert_intermediate_size")) {
        if let Some(f) = uint(b, "model.moe_ffn_hidden_size").or_else(|| uint(b, "model.ffn_hidden_size")) {
            b.set("model.moe_shared_expert_intermediate_size", Value::from(n.saturating_mul(f)), 0);
            said.push(format!("a shared expert of {n} × {f}"));
        }
    }
    let pp = uint(b, "parallelism.pipeline_model_parallel_size").unwrap_or(1).max(1);
    let list = b.fork_args.iter().find(|(k, _)| k == "--num-layer-list").map(|(_, v)| v.split(',').map(|n| n.trim().parse::<u64>().ok()).collect::<Option<Vec<u64>>>());
    if let (Some(Some(stages)), Some(l)) = (list, layers) {
        if stages.len() as u64 == pp && stages.iter().sum::<u64>() == l && stages.iter().all(|&n| n > 0) {
            let body: Vec<String> = stages.iter().map(|&n| "t".repeat(n as usize)).collect();
            b.set("parallelism.pipeline_model_parallel_layout", Value::from(format!("E{}L", body.join("|"))), 0);
            said.push(format!("each stage's layers {} (--num-layer-list), as a pipeline layout", stages.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")));
        }
    }
    if let (Some(noop), Some(l)) = (b.fork_args.iter().find(|(k, _)| k == "--noop-layers").map(|(_, v)| v.clone()), layers) {
        let ids: Option<Vec<u64>> = noop.split(',').map(|n| n.trim().parse().ok()).collect();
        let k = ids.as_ref().map_or(0, Vec::len) as u64;
        // The last k layers, on the last stage of an even split without VPP: a shorter model whose last stage is short.
        let at_end = ids.as_ref().is_some_and(|ids| ids.iter().all(|&i| i >= l.saturating_sub(k) && i < l));
        let even = l % pp == 0 && l / pp > k && b.get("parallelism.virtual_pipeline_model_parallel_size").is_none_or(Value::is_null);
        if k > 0 && at_end && even && b.get("parallelism.pipeline_model_parallel_layout").is_none() {
            b.set("model.num_layers", Value::from(l - k), 0);
            if let Some(Value::Array(freq)) = b.get("model.moe_layer_freq").cloned() {
                b.set("model.moe_layer_freq", Value::Array(freq.into_iter().take((l - k) as usize).collect()), 0);
            }
            if pp > 1 {
                b.set("parallelism.num_layers_in_last_pipeline_stage", Value::from(l / pp - k), 0);
            }
            said.push(format!("--noop-layers {noop}: {k} identity layers at the end, so {} layers{}", l - k, if pp > 1 { format!(", the last stage {}", l / pp - k) } else { String::new() }));
        } else if k > 0 {
            said.push(format!("--noop-layers {noop}: identity layers, counted here as full layers (not at the end of an even split)"));
        }
    }
    if !said.is_empty() {
        b.notes.push(format!("MindSpeed-LLM: {}", said.join("; ")));
    }
}

/// A hybrid layer pattern as the program builds it. Pai-Megatron-Patch's `pretrain_qwen3_next.py` builds Megatron-Core's
/// MambaStack with its own spec (megatron_patch/model/qwen3_next/layer_specs.py `get_qwen3_next_layer_spec` @
/// alibaba/Pai-Megatron-Patch a098ca5a): `M` is a Gated DeltaNet mixer and `-` an MoE layer with its shared expert —
/// Megatron-Core's `G` and `E` — so the pattern is read in Megatron-Core's symbols, said. Elsewhere experts given with
/// a pattern that has no `E` layer build none (Megatron-Core's hybrid model places MoE only at `E`), said.
fn hybrid_symbols(b: &mut Builder) {
    let key = ["model.hybrid_override_pattern", "model.hybrid_layer_pattern"].into_iter().find(|k| b.get(k).and_then(Value::as_str).is_some());
    let Some(key) = key else { return };
    let pattern = b.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let program = b.fork_args.iter().find(|(k, _)| k == "program").map(|(_, v)| v.as_str());
    if program == Some("pretrain_qwen3_next.py") {
        let read: String = pattern.chars().map(|c| match c {
            'M' => 'G',
            '-' => 'E',
            c => c,
        }).collect();
        b.set(key, Value::from(read.as_str()), 0);
        b.notes.push("pretrain_qwen3_next.py (Pai-Megatron-Patch): its layer spec builds the pattern's M as a Gated DeltaNet mixer and - as an MoE layer, read as Megatron-Core's G and E".into());
        return;
    }
    let experts = b.get("model.num_moe_experts").and_then(crate::fields::as_uint).unwrap_or(0);
    if experts > 1 && !pattern.contains('E') {
        b.notes.push(format!("--num-experts {experts} with a hybrid layer pattern that has no E layer: Megatron-Core's hybrid model builds MoE only at E, so no layer has experts (a fork's own layer spec may read the symbols otherwise)"));
    }
}

/// Megatron-LM's multimodal models' own arguments (examples/multimodal/train.py, pretrain_vlm.py): the language and
/// vision models by name.
const MULTIMODAL: [&str; 2] = ["--language-model-type", "--vision-model-type"];

/// A multimodal (LLaVA-style) command: `--seq-length` is the image embeddings' count and the language model runs at
/// `--decoder-seq-length` (examples/multimodal/model.py l.69-70 sets seq_length to the image embeddings and l.234
/// passes language_max_sequence_length = decoder_seq_length @ NVIDIA/Megatron-LM d98e8a64dd), so that is the plan's
/// sequence; the vision encoder and projector are not counted, said.
fn multimodal(b: &mut Builder) {
    let mut said = String::new();
    if let Some(d) = num(b, "--decoder-seq-length").filter(|&d| (1..=crate::limits::MAX_FIELD).contains(&d)) {
        let images = b.get("training.seq_length").cloned();
        b.set("training.seq_length", Value::from(d), 0);
        said = format!(
            "seq_length = {d}, the language model's --decoder-seq-length{}; ",
            images.map(|i| format!(" (--seq-length {i} is the image embeddings' count)")).unwrap_or_default()
        );
    }
    let vision = b.fork_args.iter().find(|(k, _)| k == "--vision-model-type").map(|(_, v)| format!(" ({v})")).unwrap_or_default();
    b.notes.push(format!("a multimodal model: {said}planned as its language model; the vision encoder{vision} and projector are not counted"));
}

/// An encoder-decoder (T5) model, which meshplan does not model: planned as a decoder-only GPT of the encoder's and
/// decoder's layers together at the encoder's sequence length — about their weights, without the decoder's
/// cross-attention — and said.
fn encoder_decoder(b: &mut Builder) {
    let both = b.get("model.num_layers").and_then(crate::fields::as_uint);
    let (enc, dec) = (num(b, "--encoder-num-layers").or(both), num(b, "--decoder-num-layers").or(both));
    let mut planned = String::from("its layers as given");
    if let (Some(e), Some(d)) = (enc, dec) {
        let l = e.saturating_add(d);
        if l <= crate::limits::MAX_LAYERS {
            b.set("model.num_layers", Value::from(l), 0);
            planned = format!("{l} layers ({e} encoder + {d} decoder)");
        }
    }
    let dec_seq = num(b, "--decoder-seq-length").map(|s| format!(", the decoder's {s}-token sequence")).unwrap_or_default();
    b.notes.push(format!(
        "an encoder-decoder (T5) model: meshplan plans decoder-only models, so this is planned as a GPT of {planned} at the encoder's sequence length; not counted: the decoder's cross-attention{dec_seq}, --vocab-extra-ids' sentinel tokens"
    ));
}

/// The value of kept word `key` as a whole number.
fn num(b: &Builder, key: &str) -> Option<u64> {
    b.fork_args.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.trim().parse().ok())
}

/// Whether kept word `key` was given (a switch).
fn given(b: &Builder, key: &str) -> bool {
    b.fork_args.iter().any(|(k, v)| k == key && !matches!(v.as_str(), "false" | "False"))
}

/// slime (THUDM/slime 624b824a): Megatron's world is `--actor-num-nodes × --actor-num-gpus-per-node` (1 and 8 by
/// default); `_set_default_megatron_args` always turns the distributed optimizer on and trains in bf16 unless
/// `--fp16`; its validate_args turns the allgather dispatcher into alltoall (variable sequence lengths); the global
/// batch is `rollout_batch_size × n_samples_per_prompt // num_steps_per_rollout` when the steps are given
/// (slime/utils/arguments.py l.1971-1979); with `--use-dynamic-batch-size` a micro-batch is samples packed up to
/// `--max-tokens-per-gpu × CP` tokens (slime/utils/dp_schedule.py l.120), sized as one sequence of that length, and
/// else a sample is at most the rollout's prompt and response. The model's name is the Hugging Face checkpoint's.
fn slime(b: &mut Builder) {
    let mut said = Vec::new();
    if let Some((_, path)) = b.fork_args.iter().find(|(k, _)| k == "--hf-checkpoint").filter(|(_, v)| !v.is_empty()) {
        b.load_path = Some(path.clone());
    }
    let open_world = b.world_size.is_none() && b.get("cluster.num_nodes").is_none() && b.get("cluster.gpus_per_node").is_none();
    if open_world {
        for (key, path, default) in [("--actor-num-nodes", "cluster.num_nodes", 1), ("--actor-num-gpus-per-node", "cluster.gpus_per_node", 8)] {
            let n = num(b, key).filter(|&n| (1..=crate::limits::MAX_FIELD).contains(&n));
            b.set(path, Value::from(n.unwrap_or(default)), 0);
            let field = path.rsplit('.').next().unwrap_or(path);
            said.push(match n {
                Some(n) => format!("{field} = {n} ({key})"),
                None => format!("{field} = {default} ({key}'s default)"),
            });
        }
    }
    if b.get("training.use_distributed_optimizer") != Some(&Value::Bool(true)) {
        b.set("training.use_distributed_optimizer", Value::Bool(true), 0);
        said.push("use_distributed_optimizer = true (always)".into());
    }
    if matches!(b.precision, None | Some("fp32")) {
        b.precision = Some("bf16");
        said.push("bf16 (args.bf16 = not args.fp16)".into());
    }
    // Megatron's default dispatcher is allgather, so every slime run (MoE or not) has alltoall.
    let dispatcher = b.get("training.moe_token_dispatcher_type").and_then(Value::as_str);
    if matches!(dispatcher, None | Some("allgather")) {
        b.set("training.moe_token_dispatcher_type", Value::from("alltoall"), 0);
        said.push("moe_token_dispatcher_type = \"alltoall\" (allgather does not take variable lengths)".into());
    }
    said.extend(slime_batch(b));
    b.notes.push(format!("slime: what it sets before Megatron-LM validates the arguments: {}", said.join(", ")));
}

/// slime's training batch (see [`slime`]); each value set is returned for the note.
fn slime_batch(b: &mut Builder) -> Vec<String> {
    let mut said = Vec::new();
    let cap = crate::limits::MAX_FIELD;
    let cp = b.get("parallelism.context_parallel_size").and_then(crate::fields::as_uint).unwrap_or(1).max(1);
    match (given(b, "--use-dynamic-batch-size"), num(b, "--max-tokens-per-gpu")) {
        (true, Some(t)) if (1..=cap).contains(&t.saturating_mul(cp)) => {
            let seq = t * cp;
            b.set("training.seq_length", Value::from(seq), 0);
            b.set("training.micro_batch_size", Value::from(1), 0);
            said.push(format!("seq_length = {seq} and micro_batch_size = 1 (--use-dynamic-batch-size: samples packed up to --max-tokens-per-gpu {t} × CP {cp} tokens a micro-batch)"));
        }
        _ => {
            if let (Some(p), Some(r), None) = (num(b, "--rollout-max-prompt-len"), num(b, "--rollout-max-response-len"), b.get("training.seq_length")) {
                let seq = p.saturating_add(r);
                if (1..=cap).contains(&seq) {
                    b.set("training.seq_length", Value::from(seq), 5);
                    said.push(format!("seq_length = {seq} (--rollout-max-prompt-len {p} + --rollout-max-response-len {r})"));
                }
            }
        }
    }
    if let (Some(steps), Some(prompts)) = (num(b, "--num-steps-per-rollout").filter(|&s| s > 0), num(b, "--rollout-batch-size")) {
        let n = num(b, "--n-samples-per-prompt").unwrap_or(1);
        let g = prompts.saturating_mul(n) / steps;
        if (1..=cap).contains(&g) {
            b.set("training.global_batch_size", Value::from(g), 0);
            said.push(format!("global_batch_size = {g} (--rollout-batch-size {prompts} × --n-samples-per-prompt {n} // --num-steps-per-rollout {steps})"));
        }
    }
    said
}

/// DeepSpeed-MoE in Megatron-DeepSpeed: top-1 routing unless `--topk`; an MoE layer every `--expert-interval` layers
/// (default 2), the layers whose 1-based number it divides (megatron/model/transformer.py
/// `get_num_experts_per_layer`: `layer_num % expert_interval == 0`), as Megatron-Core's per-layer `moe_layer_freq`
/// list; PR-MoE's `--mlp-type residual` adds a dense MLP of the model's FFN size beside the experts, which every token
/// passes, as a shared expert does.
fn deepspeed_moe(b: &mut Builder) {
    let mut said = Vec::new();
    if b.get("model.moe_router_topk").is_none() {
        let k = num(b, "--topk").unwrap_or(1);
        b.set("model.moe_router_topk", Value::from(k), 0);
        if num(b, "--topk").is_none() {
            said.push("moe_router_topk = 1 (--topk's default)".to_string());
        }
    }
    let layers = b.get("model.num_layers").and_then(crate::fields::as_uint);
    let interval = num(b, "--expert-interval").unwrap_or(2).max(1);
    if let (None, Some(l)) = (b.get("model.moe_layer_freq"), layers.filter(|&l| l <= crate::limits::MAX_LAYERS)) {
        let freq: Vec<Value> = (1..=l).map(|n| Value::from(u64::from(n % interval == 0))).collect();
        b.set("model.moe_layer_freq", Value::Array(freq), 0);
        said.push(format!("an MoE layer every {interval} layers, layers {interval}, {}, … (1-based; --expert-interval{})", 2 * interval, if num(b, "--expert-interval").is_none() { "'s default" } else { "" }));
    }
    let residual = b.fork_args.iter().any(|(k, v)| k == "--mlp-type" && v == "residual");
    // Megatron-LM's default FFN is 4h (arguments.py, without --ffn-hidden-size and not gated).
    let ffn = b.get("model.ffn_hidden_size").and_then(crate::fields::as_uint).or_else(|| b.get("model.hidden_size").and_then(crate::fields::as_uint).map(|h| h.saturating_mul(4)));
    if let (true, Some(ffn)) = (residual, ffn) {
        if b.get("model.moe_shared_expert_intermediate_size").is_none() {
            b.set("model.moe_shared_expert_intermediate_size", Value::from(ffn), 0);
            said.push(format!("--mlp-type residual: a dense MLP of {ffn} beside the experts of each MoE layer, sized as a shared expert"));
        }
    }
    if !said.is_empty() {
        b.notes.push(format!("Megatron-DeepSpeed's MoE (DeepSpeed-MoE): {}", said.join("; ")));
    }
}
