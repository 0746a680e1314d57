//! Tracing a run back to its configuration (issue 13): what `import`, `oom` and `schedule` refuse, and the search's
//! own input. Each has its own code; the codes they once borrowed (missing-model, invalid-plan, search-too-large,
//! world-not-divisible-dense) keep their own meanings.

use super::*;

/// The README's issue-13 message (crates/core/tests/data/oom/meshplan_issue13.txt, without its ellipsis).
const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 74.21 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.";

fn search_plan(training: Value) -> Probe {
    Probe::Search(json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}, "training": training}))
}

pub fn cases() -> Vec<Case> {
    vec![
        // Bridge overrides that set a layout and a batch but no model (no recipe, no model.num_layers): nothing to size.
        // The same words with --model llama-3.1-8b import.
        case(
            "import-no-model",
            Kind::Input,
            Probe::Import("model.tensor_model_parallel_size=2 train.global_batch_size=8", None),
            Probe::Import("model.tensor_model_parallel_size=2 train.global_batch_size=8", Some("llama-3.1-8b")),
        ),
        // An NCCL error is not an out-of-memory message; issue 13's message is read.
        case("no-oom-message", Kind::Input, Probe::Oom("NCCL error: unhandled system error"), Probe::Oom(OOM)),
        // PP 2 on 8 GPUs: DP 4. Global batch 65,540 at micro-batch 1: 16,385 microbatches, 2·2·1·16,385 = 65,540
        // operations > 2^16 = 65,536. Global batch 65,536: 16,384 microbatches, exactly 65,536 operations.
        case(
            "schedule-too-large",
            Kind::Error,
            Probe::Schedule(set(&plan(dense()), &[(PP, json!(2)), (GBS, json!(65_540))])),
            Probe::Schedule(set(&plan(dense()), &[(PP, json!(2)), (GBS, json!(65_536))])),
        ),
        // TP 3 on 8 GPUs: 8 is no multiple of 3, no whole DP, no step time. TP 2: DP 4.
        case(
            "schedule-without-step-time",
            Kind::Error,
            Probe::Schedule(set(&plan(dense()), &[(TP, json!(3))])),
            Probe::Schedule(set(&plan(dense()), &[(TP, json!(2))])),
        ),
        // The search without a global batch: it cannot count microbatches. With one (and the sequence), it searches.
        case(
            "search-needs-batch",
            Kind::Input,
            search_plan(json!({"seq_length": 4096})),
            search_plan(json!({"seq_length": 4096, "global_batch_size": 1024})),
        ),
    ]
}
