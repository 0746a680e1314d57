//! The cluster sizing's own input (issue 25, size.rs): each refusal with the nearest request that sizes. The plans
//! are small so that the silent cases' searches stay quick: Llama 3.1 8B on one node of 8 H100.

use super::*;

fn llama(training: Value) -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8}, "training": training})
}

fn batch() -> Value {
    json!({"seq_length": 4096, "global_batch_size": 128})
}

fn sized(request: Value) -> Probe {
    Probe::Size(llama(batch()), request)
}

pub fn cases() -> Vec<Case> {
    vec![
        // Neither tokens nor steps: nothing to time. With the tokens, it sizes.
        case("size-needs-tokens", Kind::Input, sized(json!({"nodes": "1"})), sized(json!({"nodes": "1", "tokens": "1B"}))),
        // "15X" has no unit meshplan reads; "15T" is 1.5·10^13 tokens.
        case("size-invalid-value", Kind::Input, sized(json!({"nodes": "1", "tokens": "15X"})), sized(json!({"nodes": "1", "tokens": "15T"}))),
        // Zero tokens; one million tokens is 2 steps of 128 × 4,096 = 524,288 tokens.
        case("size-zero-tokens", Kind::Input, sized(json!({"nodes": "1", "tokens": 0})), sized(json!({"nodes": "1", "tokens": "1M"}))),
        // A deadline of 0 days; of one day, it sizes (whether or not the run meets it).
        case("size-zero-deadline", Kind::Input, sized(json!({"nodes": "1", "tokens": "1B", "deadline": "0d"})), sized(json!({"nodes": "1", "tokens": "1B", "deadline": "1d"}))),
        // 2^21 + 1 nodes of 8 = 2^24 + 8 GPUs, past the search's 2^24; node 1 alone is searched.
        case(
            "size-nodes-out-of-range",
            Kind::Input,
            sized(json!({"nodes": "1..2097153", "tokens": "1B"})),
            sized(json!({"nodes": "1..1", "tokens": "1B"})),
        ),
        // 64 nodes = 512 GPUs at seq_length 1,024 (CP 1: a rank keeps at least 1,024 tokens): TP ≤ 8 × PP ≤ 32 layers
        // is at most 256 GPUs of model parallelism, so DP ≥ 2, and an odd global batch (3) divides by no micro-batch ×
        // DP. A global batch of 4 divides by DP 2 (TP 8, PP 32) at micro-batch 1 or 2.
        case(
            "size-batch-indivisible",
            Kind::Input,
            Probe::Size(llama(json!({"seq_length": 1024, "global_batch_size": 3})), json!({"nodes": "64", "tokens": "1B"})),
            Probe::Size(llama(json!({"seq_length": 1024, "global_batch_size": 4})), json!({"nodes": "64", "tokens": "1B"})),
        ),
        // limits.rs MAX_SEARCH_WORK's own measurement: 64 layers and 55,440 experts (the seed checks' small MoE model) on 8,648,640 GPUs (1,081,080 nodes
        // of 8) cost 3.0·10^8 units, over the 10^8 a sizing does. One node of the same model is sized.
        case("size-too-large", Kind::Input, Probe::Size(many_experts(), json!({"nodes": "1081080", "tokens": "1B"})), Probe::Size(many_experts(), json!({"nodes": "1", "tokens": "1B"}))),
    ]
}

fn many_experts() -> Value {
    let mut model = moe();
    model["num_layers"] = json!(64);
    model["num_moe_experts"] = json!(55_440);
    json!({"model": model,
           "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8}, "training": {"seq_length": 4096, "global_batch_size": 1024}})
}

#[test]
fn codes() {
    run(cases());
}
