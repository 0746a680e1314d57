//! The settings table: every row a typed field read from `training`, the old training keys unchanged, the plan-file
//! export read back to the same settings for every row, and the defaults that follow Bridge's mixed-precision recipes.

use meshplan_core::settings::{self, Fp8Recipe, Precision, SETTINGS, Settings, Ty};
use meshplan_core::{ExportKind, export, plan_value};
use serde_json::{Value, json};

/// Llama 3.1 8B on one H100 node with Megatron-Core's plain defaults, which the tests below read the table's against.
fn plan(training: Value) -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
           "training": training,
           "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1}, "defaults": "megatron-core"})
}

fn report_training(training: Value) -> Value {
    let r = plan_value(&plan(training)).expect("plans");
    serde_json::to_value(&r.plan).unwrap()["training"].clone()
}

#[test]
fn rows_are_unique_and_each_is_a_field() {
    let mut keys: Vec<&str> = settings::all().map(|r| r.key).collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "a key twice");
    let s = Settings::default();
    for r in SETTINGS {
        assert!(s.get(r.key).is_some(), "{} is not a field", r.key);
        assert!(!r.doc().label.is_empty() && !r.doc().help.is_empty() && !r.doc().source.is_empty() && !r.default.is_empty(), "{}", r.key);
        assert!(!r.doc().megatron_core.is_empty(), "{}", r.key);
        if let Some((lo, hi)) = r.bounds {
            assert!(lo <= hi && matches!(r.ty, Ty::UInt | Ty::Float), "{}", r.key);
        }
    }
    // The docs are a table of their own (so the page's first render does not link them), row for row.
    assert_eq!(settings::SETTING_DOCS.len(), SETTINGS.len());
    let host = &settings::HOST_MEMORY;
    assert!(host.doc().help.starts_with("meshplan's input: CPU memory of one node"), "{}", host.doc().help);
    assert!(settings::setting("recompute_granularity").unwrap().doc().help.starts_with("activation recomputation"));
    // Every setting the task lists is a row (issue 10 §1-7 and the measured rows' keys).
    for key in [
        "optimizer", "grad_reduce_in_fp32", "use_precision_aware_optimizer", "main_params_dtype", "main_grads_dtype",
        "exp_avg_dtype", "exp_avg_sq_dtype", "store_param_remainders", "num_distributed_optimizer_instances",
        "fp8_recipe", "fp8_param_gather", "fp4_param_gather", "reuse_grad_buf_for_mxfp8_param_ag", "fp8_amax_history_len",
        "first_last_layers_bf16", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16",
        "disable_parameter_transpose_cache", "recompute_modules", "distribute_saved_activations", "optimizer_cpu_offload",
        "optimizer_offload_fraction", "fine_grained_activation_offloading", "offload_modules", "use_megatron_fsdp",
        "data_parallel_sharding_strategy", "overlap_grad_reduce", "overlap_param_gather", "cuda_graph_impl",
        "cuda_graph_scope", "moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "moe_expert_capacity_factor",
        "moe_pad_expert_input_to_capacity", "moe_router_force_load_balancing", "moe_routing_imbalance_factor",
        "tp_comm_overlap", "defer_embedding_wgrad_compute", "wgrad_deferral_limit", "host_memory_per_node_gb",
    ] {
        assert!(settings::setting(key).is_some(), "{key}");
    }
}

#[test]
fn old_training_keys_keep_their_json() {
    // The report's plan.training before the settings table: these eight keys, in this order, with Megatron's
    // defaults (seq 4096, MBS 1, GBS null, no recompute, no distributed optimizer, bf16).
    let r = plan_value(&plan(json!({}))).unwrap();
    let text = serde_json::to_string(&r.plan.training).unwrap();
    assert!(
        text.starts_with(r#"{"seq_length":4096,"micro_batch_size":1,"global_batch_size":null,"recompute_granularity":"none","recompute_method":null,"recompute_num_layers":null,"use_distributed_optimizer":false,"precision":"bf16","#),
        "{text}"
    );
    let t = report_training(json!({}));
    assert_eq!(t["seq_length"], 4096);
    assert_eq!(t["micro_batch_size"], 1);
    assert_eq!(t["global_batch_size"], Value::Null);
    assert_eq!(t["recompute_granularity"], "none");
    assert_eq!(t["recompute_method"], Value::Null);
    assert_eq!(t["recompute_num_layers"], Value::Null);
    assert_eq!(t["use_distributed_optimizer"], false);
    assert_eq!(t["precision"], "bf16");
    // Given values read as before (case-insensitive choices).
    let t = report_training(json!({"recompute_granularity": "Full", "recompute_method": "block", "recompute_num_layers": 2, "precision": "FP8"}));
    assert_eq!((t["recompute_granularity"].as_str(), t["recompute_method"].as_str(), t["precision"].as_str()), (Some("full"), Some("block"), Some("fp8")));
    // New keys appear with their defaults, e.g. Megatron-Core's store_param_remainders = True.
    assert_eq!(t["store_param_remainders"], true);
    assert_eq!(t["offload_modules"], json!([]));
}

#[test]
fn a_bad_value_is_invalid_value_and_the_default() {
    let r = plan_value(&plan(json!({"exp_avg_dtype": "int4", "optimizer_offload_fraction": 1.5, "recompute_modules": ["mlp", "attention"], "overlap_grad_reduce": 1}))).unwrap();
    let bad: Vec<&str> = r.diagnostics.iter().filter(|d| d.code == "invalid-value").map(|d| d.message.as_str()).collect();
    assert_eq!(bad.len(), 4, "{bad:?}");
    assert!(bad.iter().any(|m| m.contains("`training.exp_avg_dtype` must be one of fp32, fp16, bf16, fp8") && m.contains("\"int4\"")), "{bad:?}");
    assert!(bad.iter().any(|m| m.contains("`training.optimizer_offload_fraction` must be a number, 0 to 1")), "{bad:?}");
    let s = &r.plan.training.settings;
    assert_eq!(s.exp_avg_dtype, settings::MomentDtype::Fp32);
    assert_eq!(s.optimizer_offload_fraction, None);
    assert_eq!(s.recompute_modules, None);
    assert!(!s.overlap_grad_reduce);
}

#[test]
fn a_training_key_under_model_points_to_training() {
    let mut p = plan(json!({}));
    p["model"] = json!({"preset": "llama-3.1-8b", "recompute_modules": ["mlp"]});
    let r = plan_value(&p).unwrap();
    let d = r.diagnostics.iter().find(|d| d.code == "unknown-field").expect("unknown-field");
    assert!(d.message.starts_with("`model.recompute_modules`"), "{}", d.message);
    assert!(d.fix.starts_with("did you mean `training.recompute_modules`?"), "{}", d.fix);
}

/// A few values of each row, as the plan file spells them.
fn samples(r: &settings::Setting) -> Vec<Value> {
    let mut out = match r.ty {
        Ty::Bool => vec![json!(true), json!(false)],
        Ty::UInt => {
            let (lo, hi) = r.bounds.unwrap_or((0.0, 1e6));
            vec![json!(lo as u64), json!(((lo + hi) / 2.0).floor() as u64), json!(hi as u64)]
        }
        Ty::Float => {
            let (lo, hi) = r.bounds.unwrap_or((0.0, 1e6));
            vec![json!(lo), json!((lo + hi) / 2.0), json!(hi)]
        }
        Ty::Choice(c) => c.iter().map(|s| json!(s)).collect(),
        Ty::List(c) => vec![json!([]), json!([c[0]]), json!(c.to_vec())],
    };
    if r.nullable {
        out.push(Value::Null);
    }
    out
}

#[test]
fn every_row_round_trips_through_the_plan_file() {
    let mut checked = 0;
    for r in SETTINGS {
        for v in samples(r) {
            let given = plan(json!({ r.key: v.clone() }));
            let first = plan_value(&given).unwrap_or_else(|e| panic!("{}={v}: {e}", r.key));
            assert_eq!(first.plan.training.settings.get(r.key), Some(v.clone()), "{} = {v} reads back as given", r.key);
            let text = export(ExportKind::Plan, &first.plan, &first);
            let again = meshplan_core::plan_str(&text).unwrap();
            assert_eq!(again.plan.training.settings, first.plan.training.settings, "{} = {v}", r.key);
            // The report's plan deserializes back (the flattened section reads as the struct).
            let json = serde_json::to_string(&first.plan.training).unwrap();
            let back: meshplan_core::plan::Training = serde_json::from_str(&json).unwrap();
            assert_eq!(back, first.plan.training, "{} = {v}", r.key);
            checked += 1;
        }
    }
    assert!(checked > 120, "{checked}");
}

#[test]
fn host_memory_is_a_cluster_field() {
    // Without the field: the catalogue's reference system — DGX H100: 2 TB of DDR5 (NVIDIA DGX BasePOD reference
    // architecture), a GB300 NVL72 compute tray: 2 Grace CPUs × 480 GB; a PCIe L40S server: not stated.
    let on = |gpu: &str| {
        let mut p = plan(json!({}));
        p["cluster"]["gpu"] = json!(gpu);
        plan_value(&p).unwrap().plan.cluster.host_memory_per_node_gb
    };
    assert_eq!(on("h100-sxm-80gb"), Some(2048.0));
    assert_eq!(on("gb300"), Some(960.0));
    assert_eq!(on("l40s"), None);
    let mut p = plan(json!({}));
    p["cluster"]["host_memory_per_node_gb"] = json!(2048);
    let r = plan_value(&p).unwrap();
    assert_eq!(r.plan.cluster.host_memory_per_node_gb, Some(2048.0));
    let text = export(ExportKind::Plan, &r.plan, &r);
    assert_eq!(meshplan_core::plan_str(&text).unwrap().plan.cluster.host_memory_per_node_gb, Some(2048.0));
}

fn low(training: Value, gpu: &str) -> settings::LowPrecision {
    let mut p = plan(training);
    p["cluster"]["gpu"] = json!(gpu);
    let r = plan_value(&p).unwrap();
    r.plan.training.settings.low_precision(&r.plan.gpu)
}

#[test]
fn precision_picks_the_bridge_recipe_and_its_defaults() {
    // bf16: bf16_mixed keeps grads in fp32 (MixedPrecisionConfig grad_reduce_in_fp32 = True); fp16_mixed does not.
    let b = low(json!({"precision": "bf16"}), "h100-sxm-80gb");
    assert_eq!((b.recipe, b.grad_reduce_in_fp32, b.fp8_recipe), (Some("bf16_mixed"), true, None));
    let h = low(json!({"precision": "fp16"}), "h100-sxm-80gb");
    assert_eq!((h.recipe, h.grad_reduce_in_fp32), (Some("fp16_mixed"), false));
    // fp32: no Bridge recipe; the grads are fp32 anyway.
    let f = low(json!({"precision": "fp32"}), "h100-sxm-80gb");
    assert_eq!((f.recipe, f.grad_reduce_in_fp32), (None, true));
    // fp8 on Hopper: bf16_with_fp8_current_scaling_mixed — tensorwise, first and last layer in BF16, FP8 weights
    // (with the distributed optimizer only).
    let h100 = low(json!({"precision": "fp8", "use_distributed_optimizer": true}), "h100-sxm-80gb");
    assert_eq!(h100.recipe, Some("bf16_with_fp8_current_scaling_mixed"));
    assert_eq!(h100.fp8_recipe, Some(Fp8Recipe::Tensorwise));
    assert_eq!((h100.first_last_layers_bf16, h100.num_layers_at_start_in_bf16, h100.num_layers_at_end_in_bf16), (true, 1, 1));
    assert!(h100.fp8_param_gather && !h100.reuse_grad_buf_for_mxfp8_param_ag);
    assert!(!low(json!({"precision": "fp8"}), "h100-sxm-80gb").fp8_param_gather, "no FP8 param gather without the distributed optimizer");
    // fp8 on Blackwell: bf16_with_mxfp8_mixed, reusing the grad buffer for the MXFP8 all-gather.
    let b200 = low(json!({"precision": "fp8", "use_distributed_optimizer": true}), "b200");
    assert_eq!((b200.recipe, b200.fp8_recipe), (Some("bf16_with_mxfp8_mixed"), Some(Fp8Recipe::Mxfp8)));
    assert!(b200.fp8_param_gather && b200.reuse_grad_buf_for_mxfp8_param_ag && !b200.first_last_layers_bf16);
    // An explicit recipe picks its Bridge recipe: delayed keeps 1024 amax values; blockwise keeps bf16 weights.
    let delayed = low(json!({"precision": "fp8", "fp8_recipe": "delayed", "use_distributed_optimizer": true}), "h100-sxm-80gb");
    assert_eq!((delayed.recipe, delayed.fp8_amax_history_len, delayed.fp8_param_gather), (Some("bf16_with_fp8_delayed_scaling_mixed"), 1024, true));
    let block = low(json!({"precision": "fp8", "fp8_recipe": "blockwise", "use_distributed_optimizer": true}), "h100-sxm-80gb");
    assert_eq!((block.recipe, block.fp8_param_gather), (Some("bf16_with_fp8_subchannel_scaling_mixed"), false));
    // fp4: bf16_with_nvfp4_mixed gathers NVFP4 weights; given values win over the recipe's.
    let fp4 = low(json!({"precision": "fp4", "use_distributed_optimizer": true, "fp4_param_gather": false, "grad_reduce_in_fp32": false}), "gb300");
    assert_eq!((fp4.recipe, fp4.fp4_param_gather, fp4.grad_reduce_in_fp32, fp4.fp8_recipe), (Some("bf16_with_nvfp4_mixed"), false, false, None));
    assert!(low(json!({"precision": "fp4", "use_distributed_optimizer": true}), "gb300").fp4_param_gather);
    // first_last_layers_bf16 given on a recipe without it: Megatron-Core's default counts, 1 and 1.
    let fl = low(json!({"precision": "fp8", "first_last_layers_bf16": true}), "b200");
    assert_eq!((fl.num_layers_at_start_in_bf16, fl.num_layers_at_end_in_bf16), (1, 1));
}

#[test]
fn resolved_recompute_modules_and_offload_fraction() {
    let s = |t: Value| plan_value(&plan(t)).unwrap().plan.training.settings;
    // Megatron-Core: recompute_modules None becomes ["core_attn"] with selective recompute.
    assert_eq!(s(json!({"recompute_granularity": "selective"})).recompute_modules_run(), [settings::RecomputeModule::CoreAttn]);
    assert_eq!(s(json!({"recompute_granularity": "selective", "recompute_modules": ["mlp", "moe_act"]})).recompute_modules_run().len(), 2);
    assert!(s(json!({"recompute_granularity": "full", "recompute_modules": ["mlp"]})).recompute_modules_run().is_empty());
    // Megatron-LM's --optimizer-offload-fraction default 1.0 when offloading; nothing without it.
    assert_eq!(s(json!({"optimizer_cpu_offload": true})).offload_fraction(), 1.0);
    assert_eq!(s(json!({"optimizer_cpu_offload": true, "optimizer_offload_fraction": 0.25})).offload_fraction(), 0.25);
    assert_eq!(s(json!({"optimizer_offload_fraction": 0.25})).offload_fraction(), 0.0);
    assert_eq!(Settings::default().precision, Precision::Bf16);
}

#[test]
fn mixed_precision_data_reads() {
    // One recipe per (precision, FP8 recipe) meshplan maps to: bf16, fp16, four FP8 recipes, NVFP4.
    let r = settings::mixed_precision_recipes();
    assert_eq!(r.len(), 7);
    for x in r {
        assert!(x.source.contains("mixed_precision.py"), "{}", x.name);
    }
}

/// Arbitrary JSON for one value: every JSON kind, with numbers around the rows' bounds and the choices' spellings.
fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..1_100_000).prop_map(Value::from),
        (-2.0f64..2_000_000.0).prop_map(Value::from),
        prop::sample::select(vec!["fp8", "BF16", " mlp ", "none", "flex", "optim_grads", "x", ""]).prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 6, |inner| prop::collection::vec(inner, 0..6).prop_map(Value::Array))
}

proptest::proptest! {
    /// Whatever a row is given, reading never panics, and the row either holds what was given (as the plan spells
    /// it back, choices canonical) or its default with an invalid-value diagnostic naming it.
    #[test]
    fn any_value_reads_as_given_or_as_default(row in 0..SETTINGS.len(), v in any_value()) {
        let r = &SETTINGS[row];
        let report = plan_value(&plan(json!({ r.key: v.clone() }))).expect("plans");
        let got = report.plan.training.settings.get(r.key).unwrap();
        let default = Settings::default().get(r.key).unwrap();
        let flagged = report.diagnostics.iter().any(|d| d.code == "invalid-value" && d.message.contains(&format!("`training.{}`", r.key)));
        if flagged {
            proptest::prop_assert_eq!(got, default);
        } else if v.is_null() {
            proptest::prop_assert_eq!(got, default);
        } else {
            // Accepted: the same setting again when written back and read.
            let mut again = Settings::default();
            proptest::prop_assert!(again.set(r.key, &got).is_ok());
            proptest::prop_assert_eq!(again.get(r.key).unwrap(), got);
        }
    }
}
