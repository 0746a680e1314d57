//! Input that cannot hurt: hostile sizes, lists, strings and texts get a diagnostic naming the value and the largest
//! accepted, and every one of them answers. Each case runs in a thread of its own with a generous timeout, so a
//! regression fails the test instead of hanging CI; nothing here asserts on time otherwise.
//!
//! Before the fixes: the first case took 48 s and 6.7 GB in the release CLI (and aborted under a 4 GB address-space
//! limit); the million-layer Hugging Face config did not answer in 20 s; the shared-expert product overflowed (a
//! panic in debug builds); the search answered an empty result without saying why; a 2^21-GPU plan took 7.4 s and
//! 1.4 GB.

mod common;
use common::*;
use meshplan_core::{Diagnostic, ExportKind, Report, export, plan_resolved, plan_str, plan_value};
use serde_json::{Value, json};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// Runs `f` in its own thread and returns its answer, failing if it panics or has not answered in 60 s.
fn answers<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: no answer within 60 s"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

/// Plans `v` in a thread, then its memory alone and every export of the report, each in a thread.
fn plan_all(what: &str, v: Value) -> Report {
    let v2 = v.clone();
    let r = answers(what, move || plan_value(&v).expect("the plan is read"));
    answers(what, move || meshplan_core::report::memory_value(&v2).expect("the plan is read"));
    for kind in ExportKind::ALL.iter().copied() {
        let r2 = r.clone();
        answers(what, move || export(kind, &r2.plan, &r2));
    }
    r
}

fn find<'a>(r: &'a Report, code: &str) -> &'a Diagnostic {
    r.diagnostics.iter().find(|d| d.code == code).unwrap_or_else(|| panic!("no {code} in {:?}", codes(r)))
}

fn llama_8b_on_8(par: Value) -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
           "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128}, "parallelism": par})
}

#[test]
fn pipeline_stages_beyond_the_layers_are_refused_before_any_per_stage_work() {
    // The issue's plan: Llama-3.1-8B (32 layers) on 8 GPUs, PP = 2^24 with all 32 layers in the first stage.
    let v = llama_8b_on_8(json!({"pipeline_model_parallel_size": 16777216, "num_layers_in_first_pipeline_stage": 32}));
    let r = plan_all("PP = 2^24", v);
    let d = find(&r, "pipeline-exceeds-layers");
    assert!(d.message.contains("16777216") && d.message.contains("largest accepted is 32"), "{}", d.message);
    assert!(!r.valid);
    // PP = 1 is used meanwhile: one stage holds all 32 layers.
    assert_eq!(r.memory.stages.len(), 1);
    assert_eq!(r.memory.stages[0].num_layers, 32);
}

#[test]
fn a_plan_built_by_hand_with_more_stages_than_layers_does_not_split() {
    // Past the reader, a Plan edited in code: 2^24 stages for 32 layers is the layer split's error, and memory is
    // shown over the nearest even split (32 stages of 1 layer).
    let (mut p, _) = meshplan_core::parse_plan(&llama_8b_on_8(json!({}))).unwrap();
    p.parallelism.pipeline_model_parallel_size = 1 << 24;
    p.parallelism.num_layers_in_first_pipeline_stage = Some(32);
    let r = answers("hand-built PP = 2^24", move || plan_resolved(&p, Vec::new()));
    assert!(codes(&r).contains(&"layers-not-divisible-by-pp"), "{:?}", codes(&r));
    assert_eq!(r.memory.stages.len(), 32);
}

#[test]
fn virtual_chunks_of_empty_stages_are_not_built() {
    // 16,384 layers all in the first of 16,384 stages, VPP = 16,384: the middle stages are empty (an error), and only
    // the first stage's 16,384 one-layer chunks exist — not PP·VPP = 2^28 of them.
    let model = json!({"num_layers": 16384, "hidden_size": 256, "num_attention_heads": 4, "ffn_hidden_size": 1024});
    let mut v = P::new(model, 8).json();
    v["parallelism"] = json!({"pipeline_model_parallel_size": 16384, "virtual_pipeline_model_parallel_size": 16384,
                              "num_layers_in_first_pipeline_stage": 16384});
    let r = plan_all("VPP over empty stages", v);
    assert!(codes(&r).contains(&"uneven-stages-empty-middle"), "{:?}", codes(&r));
    assert_eq!(r.derived.layers_per_stage.len(), 16384);
    assert_eq!(r.derived.layers_per_stage[0], 16384);
}

fn hf_plan(hf: Value) -> Value {
    json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}})
}

fn qwen_moe(layers: u64) -> Value {
    json!({"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
           "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 8,
           "num_experts_per_tok": 2, "vocab_size": 32000})
}

#[test]
fn a_million_layer_hf_config_with_a_million_mlp_only_layers_answers() {
    // The issue's config: 10^6 layers and a 10^6-entry mlp_only_layers (a per-layer scan of the list took > 20 s).
    let mut hf = qwen_moe(1_000_000);
    hf["mlp_only_layers"] = json!((0..1_000_000).collect::<Vec<u64>>());
    let r = plan_all("10^6 layers", hf_plan(hf));
    let d = r.diagnostics.iter().find(|d| d.message.contains("num_hidden_layers")).expect("num_hidden_layers named");
    assert_eq!(d.code, "invalid-value");
    assert!(d.message.contains("1000000") && d.message.contains("16384"), "{}", d.message);
    // The model falls back to 1 layer, so the list (10^6 entries for 1 layer) is refused too.
    let d = find(&r, "list-too-long");
    assert!(d.message.contains("1000000") && d.message.contains("num_hidden_layers = 1"), "{}", d.message);
}

#[test]
fn mlp_only_layers_as_long_as_the_model_is_read_in_linear_time() {
    // 16,384 layers (the most accepted), every one listed as dense: no MoE layer is left.
    let mut hf = qwen_moe(16384);
    hf["mlp_only_layers"] = json!((0..16384).rev().collect::<Vec<u64>>());
    let text = serde_json::to_string(&hf_plan(hf.clone())).unwrap();
    let r = answers("16,384 mlp_only_layers", move || plan_str(&text).unwrap());
    assert!(!codes(&r).contains(&"list-too-long"), "{:?}", codes(&r));
    assert_eq!(r.plan.model.num_moe_layers(), 0);
    // One entry more than layers is refused, and the list ignored: every layer is MoE again.
    hf["mlp_only_layers"] = json!((0..16385).collect::<Vec<u64>>());
    let r = plan_all("16,385 mlp_only_layers", hf_plan(hf));
    assert!(find(&r, "list-too-long").message.contains("16385"));
    assert_eq!(r.plan.model.num_moe_layers(), 16384);
}

#[test]
fn hf_widths_that_overflow_are_diagnosed() {
    // n_shared_experts × moe_intermediate_size = 2^40 · 2^40 overflows u64.
    let mut hf = json!({"model_type": "deepseek_v3", "hidden_size": 1024, "intermediate_size": 4096,
        "moe_intermediate_size": 1u64 << 40, "num_hidden_layers": 4, "num_attention_heads": 8, "n_routed_experts": 8,
        "n_shared_experts": 1u64 << 40, "num_experts_per_tok": 2, "vocab_size": 32000});
    let r = plan_all("shared width overflow", hf_plan(hf.clone()));
    let d = r.diagnostics.iter().find(|d| d.message.contains("n_shared_experts")).unwrap_or_else(|| panic!("{:?}", codes(&r)));
    assert_eq!(d.code, "invalid-value");
    assert!(r.plan.model.moe_shared_expert_intermediate_size.is_none());
    // Every other HF width at u64::MAX and 1e300: diagnostics, no panic.
    for key in ["hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
                "n_routed_experts", "num_experts_per_tok", "first_k_dense_replace", "moe_layer_freq", "kv_lora_rank",
                "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers"] {
        for big in [json!(u64::MAX), json!(1e300), json!(-1), json!(0)] {
            hf[key] = big.clone();
            let v = hf_plan(hf.clone());
            answers(key, move || {
                let _ = plan_value(&v);
            });
        }
        hf[key] = json!(2);
    }
}

#[test]
fn shared_dsa_indexer_widths_that_overflow_answer() {
    // GLM-5.2's shared-indexer warning sizes one indexer, q_lora_rank × heads × dim + ...: every width at u64::MAX
    // (and the cadence keys at 0 and u64::MAX) must answer with diagnostics, never overflow.
    let base = json!({"model_type": "glm_moe_dsa", "hidden_size": 1024, "intermediate_size": 4096, "moe_intermediate_size": 512,
        "num_hidden_layers": 4, "num_attention_heads": 8, "n_routed_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
        "kv_lora_rank": 64, "q_lora_rank": 128, "index_n_heads": 4, "index_head_dim": 32, "index_topk": 16,
        "index_topk_freq": 2, "index_skip_topk_offset": 1});
    for key in ["hidden_size", "q_lora_rank", "index_n_heads", "index_head_dim", "index_topk_freq", "index_skip_topk_offset"] {
        for big in [json!(u64::MAX), json!(1u64 << 40), json!(0)] {
            let mut hf = base.clone();
            hf[key] = big;
            if key != "hidden_size" {
                hf["hidden_size"] = json!(u64::MAX);
            }
            let v = hf_plan(hf);
            answers(key, move || {
                let _ = plan_value(&v);
            });
        }
    }
    // The widest every limit accepts, at once: 2^40 for q_lora_rank, the indexer's heads and dim and the hidden size
    // (one indexer is then about 2^120 parameters), on as many layers as a model may have, every other one shared.
    let mut wide = base.clone();
    for key in ["hidden_size", "q_lora_rank", "index_n_heads", "index_head_dim"] {
        wide[key] = json!(1u64 << 40);
    }
    wide["num_hidden_layers"] = json!(16384);
    let v = hf_plan(wide);
    answers("every width at 2^40", move || {
        let _ = plan_value(&v);
    });
    // Sane widths still warn with the count: 2 of 4 layers share (freq 2, offset 1: layers 2 and 4 reuse), each
    // indexer 128·(4·32) + 1024·32 + 2·32 + 1024·4 = 16,384 + 32,768 + 64 + 4,096 = 53,312 parameters.
    let r = plan_all("sane shared indexers", hf_plan(base));
    let d = find(&r, "hf-config-part-approximated");
    assert!(d.message.contains("2 of 4 layers") && d.message.contains("106624 parameters over") && d.message.contains("53312 a layer"), "{}", d.message);
}

#[test]
fn the_search_says_why_it_does_not_search_above_2_pow_24_gpus() {
    let text = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4194304},
                      "training": {"seq_length": 4096, "global_batch_size": 1024}})
    .to_string();
    let e = answers("search of 2^25 GPUs", move || meshplan_core::search::search_str(&text, &Default::default()))
        .expect_err("an input error, not an empty result");
    assert_eq!(e.code, "search-too-large");
    assert!(e.message.contains("33554432") && e.message.contains("16777216"), "{}", e.message);
}

#[test]
fn worlds_too_large_to_list_every_group_say_so() {
    // 2^21 GPUs (the former limit) took 7.4 s and 1.4 GB; the rank groups are listed up to 2^16.
    // TP 8 with SP: the plan fits, so the listing limit is its only finding above info.
    let mut v = llama_8b_on_8(json!({"tensor_model_parallel_size": 8, "sequence_parallel": true}));
    v["cluster"]["num_nodes"] = json!(262144);
    v["training"]["global_batch_size"] = json!(1 << 21);
    let r = plan_all("2^21 GPUs", v);
    let d = find(&r, "world-too-large-to-lay-out");
    assert!(d.message.contains("2097152") && d.message.contains("65536"), "{}", d.message);
    // A warning, not an error: the plan stays valid; its layout has the order and crossings but no group lists.
    assert_eq!(d.severity, meshplan_core::Severity::Warning);
    assert!(r.valid, "{:?}", codes(&r));
    let layout = r.layout.as_ref().expect("a layout without group lists");
    assert_eq!(layout.order, "tp-cp-ep-dp-pp");
    assert!(layout.groups.tp.is_empty() && layout.groups.dp.is_empty());
    // Derived sizes are still there: DP = 2^21 / 8 at TP 8, PP 1.
    assert_eq!(r.derived.data_parallel_size, 1 << 18);
}

#[test]
fn nvlink_crossings_are_counted_up_to_2_pow_24_gpus_and_say_so_above() {
    // The fuzz harness's slowest input took 427 s counting crossings: 2.86·10^12 GPUs with NVLink domains of 2^40
    // ranks. A narrow group's crossings now take the shorter walk (crossing.rs); beyond that, 2^48 GPUs at PP 32 with
    // domains of 2^32 − 5 ranks defeated both walks (> 30 s). Above 2^24 GPUs no crossing is counted, and the report
    // says so; the plan still answers, with its order.
    for (per_node, nodes, domain) in [(5_455_910u64, 524_288u64, 1u64 << 40), (1 << 24, 1 << 24, (1 << 32) - 5)] {
        let mut v = llama_8b_on_8(json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 32}));
        v["cluster"] = json!({"gpu": "h100-sxm-80gb", "gpus_per_node": per_node, "num_nodes": nodes, "nvlink_domain_size": domain});
        let r = plan_all("crossings of a huge world", v);
        let d = find(&r, "world-too-large-to-lay-out");
        let world = (per_node * nodes).to_string();
        assert!(d.message.contains(&world) && d.message.contains("16777216") && d.message.contains("crossings"), "{}", d.message);
        let layout = r.layout.as_ref().expect("a layout with its order");
        assert_eq!(layout.order, "tp-cp-ep-dp-pp");
        assert!(layout.crossings.is_empty() && layout.groups.tp.is_empty());
    }
    // At 2^24 GPUs they are counted: TP 8 on domains of 72 (= 9·8) never crosses; a PP group's 32 ranks are
    // TP·DP = 8·2^16 = 2^19 apart, each in a domain of its own: all 2^24 / 32 = 2^19 groups cross, over 32 domains.
    let mut v = llama_8b_on_8(json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 32}));
    v["cluster"] = json!({"gpu": "h100-sxm-80gb", "gpus_per_node": 1 << 12, "num_nodes": 1 << 12, "nvlink_domain_size": 72});
    let r = plan_all("crossings of 2^24 GPUs", v);
    let layout = r.layout.as_ref().expect("a layout");
    let d = find(&r, "world-too-large-to-lay-out");
    assert!(d.message.contains("65536") && !d.message.contains("crossings meshplan counts"), "{}", d.message);
    assert!(layout.crossings.iter().all(|c| c.kind != "tp"), "{:?}", layout.crossings);
    let pp = layout.crossings.iter().find(|c| c.kind == "pp").expect("pp groups cross");
    assert_eq!((pp.groups_crossing, pp.total_groups, pp.max_domains_spanned), (1 << 19, 1 << 19, 32));
}

#[test]
fn mesh_sizes_beyond_the_world_are_divisibility_errors() {
    let v = llama_8b_on_8(json!({"tensor_model_parallel_size": 16777216, "context_parallel_size": 16777216,
                                 "expert_model_parallel_size": 16777216, "expert_tensor_parallel_size": 16777216}));
    let r = plan_all("meshes of 2^24 on 8 GPUs", v);
    assert!(codes(&r).contains(&"world-not-divisible-dense") && codes(&r).contains(&"world-not-divisible-expert"), "{:?}", codes(&r));
    assert!(r.layout.is_none() && r.performance.is_none());
}

#[test]
fn long_strings_are_refused_by_length() {
    // A 10 MB `order` (as a share link's plan value could carry it past a text limit).
    let v = llama_8b_on_8(json!({"order": "tp-".repeat((10 << 20) / 3)}));
    let r = plan_all("10 MB order", v);
    let d = r.diagnostics.iter().find(|d| d.message.contains("parallelism.order")).unwrap_or_else(|| panic!("{:?}", codes(&r)));
    assert_eq!(d.code, "invalid-value");
    assert!(d.message.contains("longest accepted is 256"), "{}", d.message);
    assert_eq!(r.plan.parallelism.order, "tp-cp-ep-dp-pp");
    // A megabyte-long GPU key is refused by its length (the default GPU is used meanwhile); a megabyte-long preset
    // key is an input error whose message stays short.
    let mut v = llama_8b_on_8(json!({}));
    v["cluster"]["gpu"] = json!("h".repeat(1 << 20));
    let r = plan_all("1 MB gpu key", v);
    assert!(find(&r, "invalid-value").message.contains("cluster.gpu"), "{:?}", r.diagnostics);
    let mut v = llama_8b_on_8(json!({}));
    v["model"] = json!("l".repeat(1 << 20));
    let e = answers("1 MB preset key", move || plan_value(&v).unwrap_err());
    assert_eq!(e.code, "unknown-model-preset");
    assert!(e.message.len() < 200 && e.fix.len() < 2000, "{} / {}", e.message.len(), e.fix.len());
    // A model that is a million-entry list: named by its kind, not printed.
    let mut v = llama_8b_on_8(json!({}));
    v["model"] = json!(vec![0; 1 << 20]);
    let e = answers("1M-entry model", move || plan_value(&v).unwrap_err());
    assert!(e.message.len() < 200, "{}", e.message.len());
}

#[test]
fn plan_text_over_a_mebibyte_is_refused_before_parsing() {
    let mut v = llama_8b_on_8(json!({}));
    v["comment"] = json!("x".repeat(2 << 20));
    let text = v.to_string();
    let e = answers("2 MiB plan", move || plan_str(&text).unwrap_err());
    assert_eq!(e.code, "plan-too-large");
    assert!(e.message.contains("1048576"), "{}", e.message);
    // The search reads the same way.
    let text = v.to_string();
    let e = answers("2 MiB search", move || meshplan_core::search::search_str(&text, &Default::default()).unwrap_err());
    assert_eq!(e.code, "plan-too-large");
}

#[test]
fn deeply_nested_json_stops_at_serde_jsons_recursion_limit() {
    // serde_json refuses nesting deeper than 128: 100,000 brackets, and a hf_config 200 deep, are not JSON to it.
    for text in ["[".repeat(100_000), format!("{{\"model\": {{\"hf_config\": {}{}}}}}", "[".repeat(200), "]".repeat(200))] {
        let e = answers("deep JSON", move || plan_str(&text).unwrap_err());
        assert_eq!(e.code, "invalid-json");
        assert!(e.message.contains("recursion limit"), "{}", e.message);
    }
    // 100 deep is read, and an hf_config that is a list is an input error.
    let text = format!("{{\"model\": {{\"hf_config\": {}{}}}, \"cluster\": {{}}}}", "[".repeat(100), "]".repeat(100));
    let e = answers("100 deep", move || plan_str(&text).unwrap_err());
    assert_eq!(e.code, "hf-config-unmappable");
}

#[test]
fn a_moe_layer_freq_list_longer_than_the_model_is_refused_without_reading_it_whole() {
    let mut v = P::new(small_moe(), 8).json();
    v["model"]["moe_layer_freq"] = json!(vec![1; 400_000]);
    let text = v.to_string();
    let r = answers("400,000-entry moe_layer_freq", move || plan_str(&text).unwrap());
    let d = find(&r, "moe-layer-freq-length");
    assert!(d.message.contains("400000") && d.message.contains("num_layers = 16"), "{}", d.message);
}

#[test]
fn a_hundred_thousand_unknown_fields_are_summed_up() {
    let mut v = P::new(small_dense(), 8).json();
    for i in 0..100_000 {
        v["training"][format!("field_{i}")] = json!(i);
    }
    let r = plan_all("10^5 unknown fields", v);
    let unknown: Vec<&Diagnostic> = r.diagnostics.iter().filter(|d| d.code == "unknown-field").collect();
    // 20 named, then one for the other 99,980.
    assert_eq!(unknown.len(), 21);
    assert!(unknown[20].message.contains("99980"), "{}", unknown[20].message);
}

#[test]
fn a_search_space_too_large_to_size_in_a_second_is_refused_before_sizing_it() {
    // 64 layers and 55,440 experts (120 divisors) on 8,648,640 GPUs (448 divisors): 4.7·10^6 candidates, 1.8 s of
    // sizing in a release build before the limit (and 2.3 s with its expert-count loop).
    let text = json!({"model": {"num_layers": 64, "hidden_size": 1024, "num_attention_heads": 16, "num_moe_experts": 55440},
                      "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1081080},
                      "training": {"seq_length": 4096, "global_batch_size": 8192}})
    .to_string();
    let e = answers("search of 8,648,640 GPUs", move || meshplan_core::search::search_str(&text, &Default::default()).unwrap_err());
    assert_eq!(e.code, "search-too-large");
    assert!(e.message.contains("8648640") && e.message.contains("55440 experts") && e.message.contains("100000000"), "{}", e.message);
    // DeepSeek-V3 on 16,384 GPUs (2.2·10^6 units) is searched.
    let text = json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2048},
                      "training": {"seq_length": 4096, "global_batch_size": 8192}})
    .to_string();
    let r = answers("DeepSeek-V3 search", move || meshplan_core::search::search_str(&text, &Default::default()).unwrap());
    assert!(r.evaluated > 0);
}

fn llama_8b_pp2_layout(layout: Value) -> Value {
    llama_8b_on_8(json!({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": layout}))
}

#[test]
fn layout_repetitions_are_counted_before_anything_is_unrolled() {
    // Llama-3.1-8B: 32 layers, no MTP; a layout holds at most 32 + 0 + 2 + 16,383 = 16,417 entries and separators.
    // `t*999999999` would be a 10^9-character string in Megatron's parser.
    let r = plan_all("t*999999999", llama_8b_pp2_layout(json!("Et*999999999|L")));
    let d = find(&r, "layout-too-large");
    assert!(d.message.contains("1000000002") && d.message.contains("16417"), "{}", d.message);
    // `(t|)*4294967296`: 2^32 copies of a 2-character group (+ E and L: 8,589,934,594 characters), refused at 2^16
    // characters after unrolling `(…)*n`.
    let r = plan_all("(t|)*2^32", llama_8b_pp2_layout(json!("E(t|)*4294967296L")));
    let d = find(&r, "layout-too-large");
    assert!(d.message.contains("8589934594") && d.message.contains("65536"), "{}", d.message);
    // Counts past u64 saturate instead of wrapping around to something small.
    let r = plan_all("t*10^40", llama_8b_pp2_layout(json!(format!("Et*{}|L", "9".repeat(40)))));
    assert!(find(&r, "layout-too-large").message.contains(&u64::MAX.to_string()));
    // A group of 65,000 characters repeated 9 times.
    let r = plan_all("big group", llama_8b_pp2_layout(json!(format!("E({}|)*9L", "t".repeat(65_000)))));
    find(&r, "layout-too-large");
}

#[test]
fn long_layout_texts_are_refused_when_read() {
    // A 1 MB layout (the plan text may be 1 MiB): refused when read, before any parsing, and ignored.
    let r = plan_all("1 MB layout", llama_8b_pp2_layout(json!("t".repeat(1_000_000))));
    let d = find(&r, "layout-too-large");
    assert!(d.message.contains("1000000") && d.message.contains("65536"), "{}", d.message);
    assert!(r.plan.parallelism.pipeline_model_parallel_layout.is_none());
    // 65,536 opening parentheses: each looks for its `)` in a table built once, not by a scan of the rest; then the
    // 65,536 characters are more than the 16,417 entries a layout of this model can hold.
    let r = plan_all("65,536 (", llama_8b_pp2_layout(json!("(".repeat(65_536))));
    find(&r, "layout-too-large");
    // 21,845 × `t*0`: 65,535 characters that unroll to nothing, one empty stage (Megatron: an empty layout) on PP 1.
    let v = llama_8b_on_8(json!({"pipeline_model_parallel_layout": "t*0".repeat(21_845)}));
    let r = plan_all("t*0 × 21,845", v);
    find(&r, "layout-empty");
}

#[test]
fn list_layouts_are_bounded_by_their_stages_and_entries() {
    // 300,000 empty stages (≈ 900 KB of plan): more than 2^14 stages, counted before any is read.
    let r = plan_all("300,000 stages", llama_8b_pp2_layout(json!(vec![Vec::<String>::new(); 300_000])));
    assert!(find(&r, "layout-too-large").message.contains("300000"));
    // One stage of 100,000 names: past the 16,417 entries the model can use.
    let r = plan_all("100,000 names", llama_8b_pp2_layout(json!([vec!["decoder"; 100_000]])));
    find(&r, "layout-too-large");
}

#[test]
fn the_most_stages_a_layout_may_have_are_planned() {
    // 2^14 stages, all but the last empty (`|*16383` unrolls to 16,383 separators), on PP = 2^14: PP may exceed the 32
    // layers with a layout, and each of the 16,384 stages gets its memory line.
    let v = llama_8b_on_8(json!({"pipeline_model_parallel_size": 16384, "pipeline_model_parallel_layout": "E|*16383t*32L"}));
    let r = plan_all("2^14 stages", v);
    assert!(r.diagnostics.iter().all(|d| d.code != "pipeline-exceeds-layers" && !d.code.as_str().starts_with("layout")), "{:?}", codes(&r));
    assert_eq!(r.memory.stages.len(), 16384);
    assert_eq!(r.derived.layers_per_stage[16383], 32);
}

/// A DeciLM / Llama-Nemotron config of the most layers meshplan reads.
fn nemotron_nas(blocks: Vec<Value>) -> Value {
    hf_plan(json!({"model_type": "nemotron-nas", "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": null,
                   "num_hidden_layers": blocks.len(), "vocab_size": 32000, "block_configs": blocks}))
}

#[test]
fn heterogeneous_blocks_of_every_layer_answer_and_too_many_kinds_are_named() {
    let n = meshplan_core::limits::MAX_LAYERS as usize;
    // 2^14 blocks alternating two kinds: 2^14 runs of one layer, sized and planned with every export.
    let block = |i: usize| {
        if i % 2 == 0 {
            json!({"attention": {"no_op": false, "n_heads_in_group": 2}, "ffn": {"no_op": false, "ffn_mult": 1.5}})
        } else {
            json!({"attention": {"no_op": true}, "ffn": {"no_op": false, "ffn_mult": 3.0}})
        }
    };
    let r = plan_all("2^14 alternating blocks", nemotron_nas((0..n).map(block).collect()));
    assert_eq!(r.plan.model.num_layers, n as u64);
    // 2^14 blocks each of its own width: refused by name at the 13th kind, before anything is built per layer.
    let wide = |i: usize| json!({"attention": {"no_op": true}, "ffn": {"no_op": false, "ffn_mult": 0.375 * (i + 1) as f64}});
    let v = nemotron_nas((0..n).map(wide).collect());
    let e = answers("2^14 distinct widths", move || plan_value(&v).unwrap_err());
    assert!(e.message.contains("distinct layer kinds"), "{}", e.message);
}

#[test]
fn a_window_pattern_of_every_layer_and_a_text_full_of_infinities_answer() {
    let n = meshplan_core::limits::MAX_LAYERS;
    let model = json!({"num_layers": n, "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 1000, "gated_linear_unit": true,
        "add_bias_linear": false, "window_size": [127, 0], "window_attn_skip_freq": (0..n).map(|i| i % 2).collect::<Vec<_>>()});
    let r = plan_all("2^14-layer window pattern", json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb"}}));
    assert_eq!(r.plan.model.window_attention_layers(), n / 2);
    // Just under a mebibyte of Infinity tokens in a pasted config: one pass, then read as nulls.
    let infinities = vec!["Infinity"; 100_000].join(",");
    let text = format!(r#"{{"model": {{"hf_config": {{"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
        "num_hidden_layers": 2, "vocab_size": 1000, "x": [{infinities}]}}}}, "cluster": {{"gpu": "h100-sxm-80gb"}}}}"#);
    assert!(text.len() < meshplan_core::limits::MAX_PLAN_BYTES);
    let r = answers("a text of 100,000 Infinity tokens", move || plan_str(&text).map(|r| r.derived.total_parameters));
    assert!(r.is_ok());
}

/// An out-of-memory message in PyTorch ≥ 2.1's form (c10/cuda/CUDACachingAllocator.cpp), written for these tests.
const OOM_LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 74.21 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.";

#[test]
fn an_oom_log_with_a_multibyte_character_across_the_message_cut_answers() {
    // The reader keeps 4,000 bytes of the message from "Tried to allocate". A progress bar's `█` (3 bytes) and an
    // ellipsis `…` (3 bytes) that start one byte before that cut straddle it. Before the fix: "byte index 4000 is not
    // a char boundary" (a panic; on the page the tools module aborts).
    let from = OOM_LINE.find("Tried to allocate ").unwrap();
    for ch in ['█', '…'] {
        let pad = 4000 - 1 - (OOM_LINE.len() - from);
        let text = format!("{OOM_LINE}{}{ch}{ch} tail", "x".repeat(pad));
        assert!(!text.is_char_boundary(from + 4000));
        let m = answers("OOM log, multibyte across 4,000 bytes", move || meshplan_core::oom::parse_message(&text));
        let m = m.expect("the message is read");
        // 2.00 GiB = 2 · 2^30 bytes; 79.11 GiB = 79 · 2^30 + 0.11 · 2^30 = 84,825,604,096 + 118,111,600.64 → 84,943,715,697.
        assert_eq!((m.requested_bytes, m.gpu_index, m.capacity_bytes), (2 << 30, Some(3), Some(84_943_715_697)));
    }
}

#[test]
fn an_oom_log_with_a_multibyte_character_across_its_limit_answers() {
    // A pasted log is read up to MAX_OOM_LOG_BYTES (16 MiB; 1 MiB when this test was written, where a `█` straddling
    // that byte panicked before the fix).
    let cut = meshplan_core::limits::MAX_OOM_LOG_BYTES;
    let head = format!("{OOM_LINE}\n\n");
    let text = format!("{head}{}█ more log", "x".repeat(cut - 1 - head.len()));
    assert!(!text.is_char_boundary(cut));
    let t2 = text.clone();
    let m = answers("OOM log, multibyte across its limit", move || meshplan_core::oom::parse_message(&t2)).expect("read");
    assert_eq!(m.requested_bytes, 2 << 30);
    // And through the explanation against a plan, as `meshplan oom` and the page run it.
    let v = llama_8b_on_8(json!({}));
    let r = plan_value(&v).unwrap();
    let e = answers("OOM explained, multibyte across its limit", move || meshplan_core::oom::explain(&v, &r, &text, None));
    assert!(e.is_ok(), "{:?}", e.err());
}

#[test]
fn prefix_backs_off_to_a_char_boundary() {
    use meshplan_core::limits::prefix;
    // "a█b": 'a' is byte 0, '█' bytes 1..4, 'b' byte 4. Cuts inside '█' back off to byte 1.
    assert_eq!(prefix("a█b", 0), "");
    assert_eq!(prefix("a█b", 1), "a");
    assert_eq!(prefix("a█b", 2), "a");
    assert_eq!(prefix("a█b", 3), "a");
    assert_eq!(prefix("a█b", 4), "a█");
    assert_eq!(prefix("a█b", 5), "a█b");
    assert_eq!(prefix("a█b", usize::MAX), "a█b");
    // A combining mark is its own char: "e\u{301}" (é as e + U+0301, 2 bytes) cut at 2 keeps the 'e' alone.
    assert_eq!(prefix("e\u{301}x", 2), "e");
}

#[test]
fn a_search_asked_for_any_number_of_picks_returns_at_most_the_limit() {
    use meshplan_core::limits::MAX_SEARCH_TOP;
    use meshplan_core::search::{SearchOptions, search_str};
    // Llama-3.1-70B on 1,024 H100 has 5,589 valid layouts, 4,110 of them distinct once the edge stages are set
    // aside: an unbounded `top` re-planned and explained every one (3.6 s in a debug build, against 1.0 s for 5;
    // Qwen3-30B-A3B on 20,160 H100, 44,667 picks: 24 s in the `fuzz` profile).
    let text = json!({"model": "llama-3.1-70b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128},
                      "training": {"seq_length": 8192, "global_batch_size": 1024}})
    .to_string();
    for top in [usize::MAX, 1_000_000_000, MAX_SEARCH_TOP + 1] {
        let t = text.clone();
        let r = answers("search, top unbounded", move || search_str(&t, &SearchOptions { top, ..Default::default() }).unwrap());
        assert_eq!(r.candidates.len(), MAX_SEARCH_TOP, "top {top}");
        assert_eq!(r.notes.len(), 1, "top {top}: {:?}", r.notes);
        assert!(r.notes[0].contains(&top.to_string()) && r.notes[0].contains("at most 1000"), "{}", r.notes[0]);
    }
    // At the limit: no note. And the Plan-level entry point clamps as well.
    let r = search_str(&text, &SearchOptions { top: MAX_SEARCH_TOP, ..Default::default() }).unwrap();
    assert_eq!((r.candidates.len(), r.notes.len()), (MAX_SEARCH_TOP, 0));
    let (p, _) = meshplan_core::parse_plan(&serde_json::from_str(&text).unwrap()).unwrap();
    let r = answers("search(), top u64::MAX", move || meshplan_core::search::search(&p, &SearchOptions { top: u64::MAX as usize, ..Default::default() }));
    assert_eq!(r.candidates.len(), MAX_SEARCH_TOP);
}

#[test]
fn share_links_past_each_link_limit_are_refused_before_they_are_planned() {
    use meshplan_core::limits::{MAX_LINK_CHARS, MAX_LINK_DEPTH, MAX_LINK_TEXT_BYTES, MAX_LINK_VALUES};
    use meshplan_core::share::{Rejected, base64url_encode, decode_shared};
    let link = |v: &Value| base64url_encode(v.to_string().as_bytes());
    let why = |param: String| answers("share link", move || decode_shared(&param)).map(|_| ()).map_err(|Rejected(w)| w);
    // MAX_LINK_CHARS: 64 KiB + 1 of base64url is refused before it is decoded.
    assert_eq!(why("A".repeat(MAX_LINK_CHARS + 1)), Err("the link's plan is too long".into()));
    // MAX_LINK_VALUES: the plan object, its model string, the list and 4,096 zeros are 4,099 values.
    let values = json!({"model": "llama-3.1-8b", "x": vec![0; MAX_LINK_VALUES]});
    assert_eq!(why(link(&values)), Err(format!("the link's plan holds more than {MAX_LINK_VALUES} values")));
    // MAX_LINK_DEPTH: the plan object is depth 0; nine nested lists put a value at depth 10.
    let deep: Value = serde_json::from_str(&format!("{{\"x\": {}0{}}}", "[".repeat(MAX_LINK_DEPTH + 1), "]".repeat(MAX_LINK_DEPTH + 1))).unwrap();
    assert_eq!(why(link(&deep)), Err("the link's plan is nested too deeply".into()));
    // MAX_LINK_TEXT_BYTES: 67 `█` are 201 bytes (67 characters).
    let long = json!({"model": "█".repeat(MAX_LINK_TEXT_BYTES / 3 + 1)});
    assert_eq!(why(link(&long)), Err("the link's plan has markup or control characters in a name".into()));
    // MAX_LINK_NUMBER: 2^53 + 2 is past JavaScript's exact integers.
    let absurd = json!({"model": "llama-3.1-8b", "cluster": {"num_nodes": 9_007_199_254_740_994u64}});
    assert_eq!(why(link(&absurd)), Err("the link's plan has an absurd number".into()));
    // MAX_LINK_GPUS and MAX_LINK_LAYERS: the page's own tests (src/state/share.rs) word each; one of each here.
    let gpus = json!({"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 8193}});
    assert_eq!(why(link(&gpus)), Err("the link asks for 65544 GPUs, more than the 65536 a shared link may open".into()));
    let layers = json!({"model": {"num_layers": 4097, "hidden_size": 64, "num_attention_heads": 1}});
    assert_eq!(why(link(&layers)), Err("the link's num_layers is 4097, above the 4096 a shared link may ask for".into()));
    // Text of every kind around the links' size: a 1 MiB hash of multi-byte noise is refused, not decoded.
    assert!(why("█".repeat(1 << 18)).is_err());
}

#[test]
fn an_oom_message_longer_than_its_limit_is_read_from_its_first_4000_bytes() {
    use meshplan_core::limits::MAX_OOM_MESSAGE_BYTES;
    // The numbers after the cut are not read: a message whose "Of the allocated memory" sits past 4,000 bytes gives
    // no allocated figure, one within gives it. 74.21 GiB = 74 · 2^30 + 0.21 · 2^30 = 79,456,894,976 + 225,485,783.04
    // → 79,682,380,759.
    let (head, tail) = OOM_LINE.split_at(OOM_LINE.find(" Of the allocated").unwrap());
    let pad = |n: usize| format!("{head}{}{tail}", " ".repeat(n));
    let from = OOM_LINE.find("Tried").unwrap();
    let within = pad(MAX_OOM_MESSAGE_BYTES - (OOM_LINE.len() - from) - 1);
    let past = pad(MAX_OOM_MESSAGE_BYTES);
    let a = answers("OOM within", move || meshplan_core::oom::parse_message(&within)).unwrap();
    let b = answers("OOM past", move || meshplan_core::oom::parse_message(&past)).unwrap();
    assert_eq!((a.allocated_bytes, b.allocated_bytes), (Some(79_682_380_759), None));
}

#[test]
fn an_import_of_a_mebibyte_with_a_multibyte_character_across_the_limit_answers() {
    use meshplan_core::imports::{Format, ImportOptions, import_plan};
    use meshplan_core::limits::MAX_PLAN_BYTES;
    // A launch-script line (Megatron-LM's flags) repeated to just under 1 MiB, then `█` (3 bytes) from byte
    // MAX_PLAN_BYTES − 1: the text is 2 bytes over the limit and refused before it is read, in every format; without
    // the `█` it is read (its last, cut line included). The import limits of the shell and YAML readers have their
    // own hostile inputs in tests/import_limits.rs.
    let line = "torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 32 --hidden-size 4096 \\\n";
    let mut text = line.repeat(MAX_PLAN_BYTES / line.len());
    text.push_str(&"x".repeat(MAX_PLAN_BYTES - 1 - text.len()));
    let under = text.clone();
    text.push('█');
    assert!(!text.is_char_boundary(MAX_PLAN_BYTES) && text.len() == MAX_PLAN_BYTES + 2);
    for from in Format::ALL.into_iter().map(Some).chain([None]) {
        let t = text.clone();
        let e = answers("1 MiB import", move || import_plan(&t, &ImportOptions { from, ..Default::default() }).map(|_| ()).unwrap_err());
        assert_eq!(e.code, "plan-too-large", "{from:?}");
        assert!(e.message.contains(&(MAX_PLAN_BYTES + 2).to_string()), "{}", e.message);
    }
    let opts = ImportOptions { from: Some(Format::MegatronArgs), model: Some("llama-3.1-8b".into()), ..Default::default() };
    let (_, plan, _) = answers("just under 1 MiB import", move || import_plan(&under, &opts)).expect("read");
    assert_eq!(plan.parallelism.tp(), 2);
}

#[test]
fn an_oom_message_with_a_multibyte_character_across_its_device_cut_answers() {
    // The reader looks for the device name (GPU, NPU) in a message's first 200 bytes; a 4-byte `𖭣` at bytes
    // 197..201 panicked ("end byte index 200 is not a char boundary") before that cut went through limits::prefix.
    // Found by the import property test's Unicode fragments.
    let head = "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of ";
    let text = format!("{head}{}𖭣 79.11 GiB of which 1.02 GiB is free.", "x".repeat(197 - head.len()));
    assert!(!text.is_char_boundary(200));
    let m = answers("OOM, multibyte across byte 200", move || meshplan_core::oom::parse_message(&text).map(|m| m.requested_bytes).map_err(|e| e.code));
    // It answers, and it is no message: the word after "total capacity of" is the padding, not a size, and without a
    // capacity or an allocated figure the reader does not take it for one.
    assert_eq!(m.map_err(|c| c == meshplan_core::Code::NoOomMessage), Err(true));
}

/// The OOM reader's newer inputs at size: 8 MiB of traceback lines with multi-byte text (a frame window's 32 KiB start
/// falls inside characters), a sizeless CUDA runtime failure every few hundred lines, and memory-report lines with
/// absurd numbers. Each failure's traceback is read from a bounded window (frames::FRAME_WINDOW), at most
/// MAX_OOM_MESSAGES are kept, and nothing panics.
#[test]
fn an_oom_log_of_tracebacks_and_reports_at_size_answers() {
    use meshplan_core::limits::MAX_OOM_MESSAGES;
    let mut log = String::new();
    let mut i = 0u64;
    while log.len() < 8 << 20 {
        log += &format!("[rank{}]:   File \"/w/megatron/core/transformer/moe/experts.py█é\", line {i}, in forward ✓\n", i % 200);
        if i % 300 == 0 {
            log += &format!("[rank{}]: RuntimeError: CUDA error: out of memory\n", i % 200);
        }
        i += 1;
    }
    let all = meshplan_core::oom::parse_messages(&log).unwrap();
    assert!(!all.is_empty() && all.len() <= MAX_OOM_MESSAGES);
    assert!(all.iter().all(|m| m.location.as_ref().is_some_and(|f| f.what.starts_with("the MoE layer"))));
    let reports = "[Rank 0] (after 1 iterations) memory (MB) | max allocated: 1e400 | max reserved: -5\n".repeat(100_000);
    let all = meshplan_core::oom::parse_messages(&reports);
    assert!(all.is_err(), "an unreadable report is no message: {all:?}");
}
