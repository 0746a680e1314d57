//! The Advisor's plan edits: what "Apply" writes into the plan document, and which part of the plan a
//! search depends on. Plain Rust (no DOM), tested natively.

use crate::state::plan_doc;
use meshplan_core::search::{CandidateParallelism, CandidateTraining};
use serde_json::{Value, json};

/// The training fields the search chooses (the rest of `training` is its input).
pub const SEARCHED_TRAINING: [&str; 9] = [
    "micro_batch_size",
    "recompute_granularity",
    "recompute_method",
    "recompute_num_layers",
    "use_distributed_optimizer",
    "moe_token_dispatcher_type",
    "recompute_modules",
    "optimizer_cpu_offload",
    "optimizer_offload_fraction",
];

/// The (path, value) edits that make the plan a candidate's layout; `Value::Null` removes a field so
/// Megatron's default applies. Dense models keep megatron-core's default ETP (= TP); the search assumes the
/// default order and no microbatch grouping.
pub fn candidate_edits(par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) -> Vec<(String, Value)> {
    let opt = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let p = |k: &str| format!("parallelism.{k}");
    let t = |k: &str| format!("training.{k}");
    vec![
        (p("tensor_model_parallel_size"), json!(par.tensor_model_parallel_size)),
        (p("pipeline_model_parallel_size"), json!(par.pipeline_model_parallel_size)),
        (p("virtual_pipeline_model_parallel_size"), opt(par.virtual_pipeline_model_parallel_size)),
        (p("context_parallel_size"), json!(par.context_parallel_size)),
        (p("expert_model_parallel_size"), json!(par.expert_model_parallel_size)),
        (p("expert_tensor_parallel_size"), if moe { json!(par.expert_tensor_parallel_size) } else { Value::Null }),
        (p("sequence_parallel"), json!(par.sequence_parallel)),
        (p("num_layers_in_first_pipeline_stage"), opt(par.num_layers_in_first_pipeline_stage)),
        (p("num_layers_in_last_pipeline_stage"), opt(par.num_layers_in_last_pipeline_stage)),
        // The search lays out the layers itself (an even split, a lighter edge stage, or its own layout).
        (p("pipeline_model_parallel_layout"), par.pipeline_model_parallel_layout.clone().map_or(Value::Null, Value::from)),
        (p("account_for_embedding_in_pipeline_split"), Value::Null),
        (p("account_for_loss_in_pipeline_split"), Value::Null),
        (p("microbatch_group_size_per_vp_stage"), Value::Null),
        (p("order"), json!(meshplan_core::plan::DEFAULT_ORDER)),
        (t("micro_batch_size"), json!(tr.micro_batch_size)),
        (t("recompute_granularity"), serde_json::to_value(tr.recompute_granularity).unwrap_or(Value::Null)),
        (t("recompute_method"), tr.recompute_method.and_then(|m| serde_json::to_value(m).ok()).unwrap_or(Value::Null)),
        (t("recompute_num_layers"), opt(tr.recompute_num_layers)),
        (t("use_distributed_optimizer"), json!(tr.use_distributed_optimizer)),
        // What the search chose beside the layout; Megatron-Core's defaults (allgather, no offload) are left unwritten.
        (t("moe_token_dispatcher_type"), tr.moe_token_dispatcher_type.filter(|d| d.key() != "allgather").map_or(Value::Null, |d| json!(d.key()))),
        (t("recompute_modules"), tr.recompute_modules.as_ref().and_then(|m| serde_json::to_value(m).ok()).unwrap_or(Value::Null)),
        (t("optimizer_cpu_offload"), if tr.optimizer_cpu_offload == Some(true) { json!(true) } else { Value::Null }),
        (t("optimizer_offload_fraction"), tr.optimizer_offload_fraction.map_or(Value::Null, Value::from)),
    ]
}

/// Writes a candidate's layout into the plan document.
pub fn apply_candidate(plan: &mut Value, par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) {
    for (path, value) in candidate_edits(par, tr, moe) {
        plan_doc::set(plan, &path, value);
    }
}

/// Whether the plan already has a candidate's layout, i.e. applying it would change nothing (without the copy
/// that applying it to a clone and comparing would take: the Advisor asks this of every row on every edit).
pub fn is_applied(plan: &Value, par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) -> bool {
    candidate_edits(par, tr, moe).iter().all(|(path, value)| match plan_doc::get(plan, path) {
        // Applying writes the value, or removes the field for Null (a present null is removed too).
        Some(v) => !value.is_null() && v == value,
        None => value.is_null(),
    })
}

/// The part of the plan a search depends on: everything but the parallelism and the searched training fields.
/// A search is stale when this changes.
pub fn search_input(plan: &Value) -> Value {
    let mut v = plan.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("parallelism");
    }
    if let Some(t) = v.get_mut("training").and_then(Value::as_object_mut) {
        for k in SEARCHED_TRAINING {
            t.remove(k);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshplan_core::search::{SearchOptions, search_value};

    fn plan_8_gpus(model: &str) -> Value {
        let mut p = plan_doc::default_plan();
        plan_doc::set(&mut p, "model", json!(model));
        plan_doc::set(&mut p, "cluster.num_nodes", json!(1));
        p
    }

    #[test]
    fn applying_every_top_candidate_plans_exactly_that_layout_and_it_is_valid() {
        for model in ["llama-3.1-8b", "qwen3-30b-a3b"] {
            let base = plan_8_gpus(model);
            let found = search_value(&base, &SearchOptions { top: 10, ..SearchOptions::default() }).unwrap();
            assert!(!found.candidates.is_empty(), "{model}: no candidates");
            for c in &found.candidates {
                let mut p = base.clone();
                let moe = meshplan_core::plan_value(&p).unwrap().plan.model.is_moe();
                apply_candidate(&mut p, &c.parallelism, &c.training, moe);
                let r = meshplan_core::plan_value(&p).unwrap();
                let par = &r.plan.parallelism;
                assert_eq!(par.tensor_model_parallel_size, c.parallelism.tensor_model_parallel_size, "{model}");
                assert_eq!(par.pipeline_model_parallel_size, c.parallelism.pipeline_model_parallel_size);
                assert_eq!(par.context_parallel_size, c.parallelism.context_parallel_size);
                assert_eq!(par.expert_model_parallel_size, c.parallelism.expert_model_parallel_size);
                assert_eq!(par.expert_tensor_parallel_size, c.parallelism.expert_tensor_parallel_size);
                assert_eq!(par.sequence_parallel, c.parallelism.sequence_parallel);
                assert_eq!(r.plan.training.micro_batch_size, c.training.micro_batch_size);
                assert_eq!(r.plan.training.settings.recompute_granularity, c.training.recompute_granularity);
                assert!(r.valid, "{model}: applied candidate invalid: {:?}", r.diagnostics.iter().filter(|d| d.severity == meshplan_core::Severity::Error).collect::<Vec<_>>());
                assert_eq!(r.memory.peak_bytes, c.peak_bytes, "{model}: the report agrees with the search");
                let perf = r.performance.expect("the applied plan has a step-time estimate");
                assert!((perf.step_time_s - c.step_time_s).abs() <= 1e-9 * c.step_time_s.max(1.0), "{model}: step time {} against {}", perf.step_time_s, c.step_time_s);
                // The search input is untouched by an apply.
                assert_eq!(search_input(&p), search_input(&base));
            }
        }
    }

    #[test]
    fn is_applied_says_what_applying_and_comparing_says() {
        for model in ["llama-3.1-8b", "qwen3-30b-a3b"] {
            let base = plan_8_gpus(model);
            let moe = meshplan_core::plan_value(&base).unwrap().plan.model.is_moe();
            let found = search_value(&base, &SearchOptions { top: 10, ..SearchOptions::default() }).unwrap();
            let mut plans = vec![base.clone()];
            for c in &found.candidates {
                let mut p = base.clone();
                apply_candidate(&mut p, &c.parallelism, &c.training, moe);
                plans.push(p);
            }
            // Each plan against each candidate: the applied one matches itself and differs from the others.
            let mut matches = 0;
            for p in &plans {
                for c in &found.candidates {
                    let mut q = p.clone();
                    apply_candidate(&mut q, &c.parallelism, &c.training, moe);
                    let by_copy = q == *p;
                    assert_eq!(is_applied(p, &c.parallelism, &c.training, moe), by_copy, "{model}");
                    matches += usize::from(by_copy);
                }
            }
            assert!(matches >= found.candidates.len(), "{model}: every applied plan matches its candidate");
        }
    }

    #[test]
    fn the_search_input_ignores_what_the_search_chooses() {
        let a = plan_doc::default_plan();
        let mut b = a.clone();
        plan_doc::set(&mut b, "parallelism.tensor_model_parallel_size", json!(8));
        plan_doc::set(&mut b, "training.micro_batch_size", json!(4));
        assert_eq!(search_input(&a), search_input(&b));
        plan_doc::set(&mut b, "training.global_batch_size", json!(256));
        assert_ne!(search_input(&a), search_input(&b));
    }
}
