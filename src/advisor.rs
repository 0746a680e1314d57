//! The Advisor's plan edits: what "Apply" writes into the plan document, and which part of the plan a
//! search depends on. Plain Rust (no DOM), tested natively.

use crate::state::plan_doc;
use meshplan_core::parallelism::{PARALLELISM, Parallelism};
use meshplan_core::search::{CandidateParallelism, CandidateTraining, SPEED_KEYS};
use serde_json::{Value, json};
use meshplan_core::tuned::{DEFAULTS_KEY, PLAIN};
use meshplan_core::{Code, InputError};

/// The input error a search reply carries (`{"error": {code, message, fix}}`), or one saying the reply was unreadable.
pub fn search_error(json: &str) -> InputError {
    serde_json::from_str::<Value>(json)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("error")?.clone()).ok())
        .unwrap_or_else(|| InputError::new(Code::SearchWorker, "the search worker's reply is not a search result", "reload the page"))
}

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
/// Megatron's default applies. One edit per row of the parallelism table the search chooses
/// ([`meshplan_core::parallelism::ParSetting::searched`]), at the value the candidate runs
/// ([`CandidateParallelism::parallelism`]): dense models keep megatron-core's default ETP (= TP), and a row the plan file
/// leaves out at its default is removed. Then the searched training fields.
pub fn candidate_edits(par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) -> Vec<(String, Value)> {
    let opt = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let t = |k: &str| format!("training.{k}");
    let (full, defaults) = (par.parallelism(moe), Parallelism::default());
    let mut edits: Vec<(String, Value)> = PARALLELISM
        .iter()
        .filter(|row| row.searched)
        .map(|row| {
            let value = match row.key {
                "expert_tensor_parallel_size" if full.expert_tensor_parallel_size_defaulted => Value::Null,
                key => full.get(key).unwrap_or(Value::Null),
            };
            let at_default = row.doc().written_when_set && Some(&value) == defaults.get(row.key).as_ref();
            (row.path.to_string(), if at_default { Value::Null } else { value })
        })
        .collect();
    edits.extend([
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
    ]);
    // The speed settings the row ran with that the plan left to tuned defaults, as the row states them.
    edits.extend(tr.speed_settings.iter().map(|(k, v)| (t(k), v.clone())));
    edits
}

/// Writes a candidate's layout into the plan document. The search plans Megatron-Core's plain defaults with the speed
/// settings tuned defaults assume, settled per layout (`meshplan_core::search::read_for_search`), and the row states
/// those settings, so a plan that says nothing gets them written and `"defaults": "megatron-core"`: the applied plan is
/// the run the row priced.
pub fn apply_candidate(plan: &mut Value, par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) {
    for (path, value) in candidate_edits(par, tr, moe) {
        plan_doc::set(plan, &path, value);
    }
    if plan.get(DEFAULTS_KEY).is_none() {
        plan_doc::set(plan, DEFAULTS_KEY, json!(PLAIN));
    }
}

/// Whether the plan already has a candidate's layout, i.e. applying it would change nothing (without the copy
/// that applying it to a clone and comparing would take: the Advisor asks this of every row on every edit).
pub fn is_applied(plan: &Value, par: &CandidateParallelism, tr: &CandidateTraining, moe: bool) -> bool {
    plan.get(DEFAULTS_KEY).is_some() && candidate_edits(par, tr, moe).iter().all(|(path, value)| match plan_doc::get(plan, path) {
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
        // No switch and "megatron-core" are one search input: the search plans plain defaults for both.
        if m.get(DEFAULTS_KEY).and_then(Value::as_str).is_some_and(|d| d.trim().eq_ignore_ascii_case(PLAIN)) {
            m.remove(DEFAULTS_KEY);
        }
    }
    if let Some(t) = v.get_mut("training").and_then(Value::as_object_mut) {
        // The speed settings Apply writes (a row's `speed_settings`) are the search's choice too.
        for k in SEARCHED_TRAINING.iter().chain(SPEED_KEYS.iter()) {
            t.remove(*k);
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
                // The plan runs the speed settings the row states (the qwen3 row's tuned CUDA graphs, EP overlap, DP
                // overlaps; llama's DP overlaps), and the row states some.
                assert!(!c.training.speed_settings.is_empty(), "{model}: no speed settings stated");
                for (k, v) in &c.training.speed_settings {
                    assert_eq!(r.plan.training.settings.resolved(k, &r.plan.gpu).as_ref(), Some(v), "{model}: {k}");
                }
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
    fn the_edits_are_every_searched_row_of_the_parallelism_table_at_the_candidates_value() {
        let par = CandidateParallelism {
            tensor_model_parallel_size: 2,
            pipeline_model_parallel_size: 4,
            virtual_pipeline_model_parallel_size: Some(2),
            context_parallel_size: 1,
            expert_model_parallel_size: 8,
            expert_tensor_parallel_size: 1,
            sequence_parallel: true,
            num_layers_in_first_pipeline_stage: None,
            num_layers_in_last_pipeline_stage: Some(5),
            pipeline_model_parallel_layout: None,
        };
        let tr = CandidateTraining {
            micro_batch_size: 1,
            recompute_granularity: meshplan_core::plan::Recompute::None,
            use_distributed_optimizer: true,
            recompute_method: None,
            recompute_num_layers: None,
            moe_token_dispatcher_type: None,
            recompute_modules: None,
            optimizer_cpu_offload: None,
            optimizer_offload_fraction: None,
            speed_settings: [("overlap_grad_reduce".to_string(), json!(true))].into_iter().collect(),
        };
        let edits = candidate_edits(&par, &tr, true);
        // A stated speed setting is written as stated.
        assert!(edits.contains(&("training.overlap_grad_reduce".to_string(), json!(true))));
        let parallel: Vec<(&str, Value)> = edits.iter().filter_map(|(p, v)| p.strip_prefix("parallelism.").map(|k| (k, v.clone()))).collect();
        // By hand: the candidate's sizes; Megatron-Core's default order written out; what the search does not use removed
        // (no group, no accounting, no layout); overlap_p2p_comm, which the search keeps as the plan has it, untouched.
        let want = [
            ("tensor_model_parallel_size", json!(2)),
            ("pipeline_model_parallel_size", json!(4)),
            ("virtual_pipeline_model_parallel_size", json!(2)),
            ("context_parallel_size", json!(1)),
            ("expert_model_parallel_size", json!(8)),
            ("expert_tensor_parallel_size", json!(1)),
            ("sequence_parallel", json!(true)),
            ("order", json!("tp-cp-ep-dp-pp")),
            ("num_layers_in_first_pipeline_stage", Value::Null),
            ("num_layers_in_last_pipeline_stage", json!(5)),
            ("microbatch_group_size_per_vp_stage", Value::Null),
            ("pipeline_model_parallel_layout", Value::Null),
            ("account_for_embedding_in_pipeline_split", Value::Null),
            ("account_for_loss_in_pipeline_split", Value::Null),
        ];
        assert_eq!(parallel, want.to_vec());
        // Every row of the table is either edited or one the search keeps.
        for row in PARALLELISM {
            assert_eq!(parallel.iter().any(|(k, _)| *k == row.key), row.searched, "{}", row.key);
        }
        // A dense model keeps Megatron-Core's default ETP: the field is removed.
        let dense = candidate_edits(&par, &tr, false);
        assert!(dense.contains(&("parallelism.expert_tensor_parallel_size".to_string(), Value::Null)));
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
