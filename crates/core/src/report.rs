//! `plan()`: a plan in, a report out — derived sizes, diagnostics, per-stage memory and rank groups.
//!
//! This module only assembles: the sizes come from [`crate::derive`], the findings from [`crate::rules`], the rank
//! groups from [`crate::layout`], memory and step time from [`crate::memory`] and [`crate::perf`]. Nothing below
//! imports it.

use crate::layout::{self, Layout, MeshSizes};
use crate::memory::{self, MemoryReport};
use crate::perf::{self, Performance};
use crate::pipeline::{self, SplitError, StageSplit};
use crate::plan::{self, InputError, Plan};
use crate::{Code, Diagnostic, Severity, rules};
pub use crate::derive::{Derived, KindRun, derive, derive_into};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};


#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub valid: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub derived: Derived,
    pub memory: MemoryReport,
    /// Rank groups; null when the mesh sizes do not divide the world size.
    pub layout: Option<Layout>,
    /// Step time, throughput and MFU; null when the mesh sizes do not divide the world size.
    #[serde(default)]
    pub performance: Option<Performance>,
    /// The plan as resolved, with every default filled in.
    pub plan: Plan,
    /// Every speed and memory setting the plan left unstated, with the value planned and its source, a Megatron Bridge
    /// performance recipe's (`crate::tuned`, the default) or Megatron-Core's default; with `"defaults":
    /// "megatron-core"` (plain defaults) or a named recipe, each at Megatron-Core's default.
    #[serde(default)]
    pub assumptions: Vec<crate::tuned::Assumption>,
    /// What Megatron Bridge's performance summary measured for the plan's perf recipe, beside the prediction, while the
    /// plan runs that recipe's configuration (its GPUs, layout, batch and precision); never fitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedThroughput>,
}

/// A published throughput beside meshplan's prediction for the same configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublishedThroughput {
    pub recipe: String,
    #[serde(flatten)]
    pub measured: crate::recipes::Published,
    pub predicted_model_tflops_per_gpu: f64,
    /// predicted / published − 1.
    pub error: f64,
}

/// The published throughput of the plan's perf recipe, when the plan still runs its configuration: the recipe's GPU
/// and count, every parallel size and batch size it sets, its precision and FP8 recipe.
fn published(p: &Plan, perf: Option<&Performance>) -> Option<PublishedThroughput> {
    let r = crate::recipes::find(p.recipe.as_deref()?)?;
    let measured = r.published.first()?;
    // Each (key, value) the recipe sets, compared in place: collected into a map, each of the two lists compiled a
    // sort of its own into the page's wasm (a JSON map is a BTreeMap).
    fn same<'a>(p: &Plan, section: &str, mut set: impl Iterator<Item = (&'a str, &'a Value)>) -> bool {
        set.all(|(k, v)| p.field(section, k).is_none_or(|x| x == *v || x.as_f64() == v.as_f64() && v.is_number()))
    }
    let sizes = ["global_batch_size", "micro_batch_size", "precision", "fp8_recipe", "seq_length"].into_iter().filter_map(|k| Some((k, r.training.get(k)?)));
    let mesh = r.parallelism.iter().filter(|(k, _)| k.ends_with("_parallel_size")).map(|(k, v)| (k.as_str(), v));
    let runs_it = r.gpu.as_deref() == Some(p.gpu.key.as_str()) && r.gpus == Some(p.world_size()) && same(p, "parallelism", mesh) && same(p, "training", sizes);
    let perf = perf.filter(|_| runs_it)?;
    let predicted = perf.model_tflops_per_gpu;
    Some(PublishedThroughput {
        recipe: r.name.clone(),
        measured: measured.clone(),
        predicted_model_tflops_per_gpu: predicted,
        error: if measured.model_tflops_per_gpu > 0.0 { predicted / measured.model_tflops_per_gpu - 1.0 } else { 0.0 },
    })
}

/// Plans from plan-file text.
pub fn plan_str(text: &str) -> Result<Report, InputError> {
    plan_value(&plan::read_json(text)?)
}

/// Plans from a plan-file JSON value. A setting assumed from a perf recipe (`crate::tuned`) that Megatron rejects or
/// warns about for this plan — an error or a warning other than the out-of-memory verdicts whose message or fix names
/// it (overlap_param_gather assumed where the plan states no distributed optimizer: Megatron-LM asserts) — is not
/// assumed: the plan is read again
/// without it (once; at most three readings in all), and keeps the default.
pub fn plan_value(value: &Value) -> Result<Report, InputError> {
    let mut excluded: Vec<String> = Vec::new();
    loop {
        let (p, diags, assumptions) = plan::parse_plan_excluding(value, &excluded)?;
        let report = Report { assumptions, ..plan_resolved(&p, diags) };
        let rejected = rejected_assumptions(&report);
        if rejected.is_empty() || excluded.len() >= crate::tuned::TUNED_KEYS.len() {
            // Plain defaults (`"defaults": "megatron-core"`, or a named recipe) assume no recipe value; what the plan
            // leaves out is still listed, at Megatron-Core's default, and a verdict that one of those defaults decides
            // names it (issue 23: never a bare out-of-memory when one unstated setting flips it).
            return Ok(with_assumed_verdict(value, &excluded, report));
        }
        // A second rejection drops every recipe assumption, so the loop ends by the third reading.
        let all = !excluded.is_empty();
        excluded.extend(report.assumptions.iter().filter(|a| all || rejected.contains(&a.key)).map(|a| a.key.clone()));
        if all {
            excluded.extend(crate::tuned::TUNED_KEYS.iter().map(|k| k.to_string()));
        }
    }
}

/// The report with `out-of-memory-assumed` beside an out-of-memory verdict that an unstated setting flips.
fn with_assumed_verdict(value: &Value, excluded: &[String], mut report: Report) -> Report {
    if let Some(d) = verdict(value, excluded, &report) {
        report.diagnostics.push(d);
        crate::sort::stable_by_key(&mut report.diagnostics, |d| d.severity);
    }
    report
}

/// The assumed (perf-recipe) keys an error or a warning of the report names, the out-of-memory verdicts aside (a
/// verdict on the assumption's cost, which names it on purpose, not Megatron rejecting it), and the findings on the
/// input itself aside (an unknown field's fix lists every known field: a typo must not withdraw every tuned default).
fn rejected_assumptions(report: &Report) -> Vec<String> {
    let recipe_assumed = report.assumptions.iter().filter(|a| !crate::tuned::is_default_source(&a.source));
    recipe_assumed
        .filter(|a| {
            report.diagnostics.iter().any(|d| {
                d.severity != Severity::Info
                    && !matches!(d.code, Code::OutOfMemory | Code::OutOfMemoryAssumed)
                    && !d.code.is_input()
                    && (names(&d.message, &a.key) || names(&d.fix, &a.key))
            })
        })
        .map(|a| a.key.clone())
        .collect()
}

/// Whether `text` names `key` as a whole word.
fn names(text: &str, key: &str) -> bool {
    text.match_indices(key).any(|(i, _)| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        !text[..i].chars().next_back().is_some_and(word) && !text[i + key.len()..].chars().next().is_some_and(word)
    })
}

/// The memory of a plan alone: no rules, rank groups or step time. For callers that size many variants of one
/// plan (the page's memory sweep); the report's `memory` for the same plan is the same.
pub fn memory_value(value: &Value) -> Result<MemoryReport, InputError> {
    let (p, _) = plan::parse_plan(value)?;
    let split = split_of(&p);
    let derived = derive(&p, split.as_ref().ok());
    Ok(memory_of(&p, &derived, &split))
}

/// The plan's layer split over its pipeline stages and virtual chunks: a hybrid pattern's `|` segments, else its
/// `pipeline_model_parallel_layout`, else Megatron's even split (uneven first/last stages,
/// `account_for_*_in_pipeline_split`).
pub fn split_of(p: &Plan) -> Result<StageSplit, SplitError> {
    let par = &p.parallelism;
    let (first, last) = (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage);
    if let Some(h) = &p.model.hybrid_layer_pattern {
        // The pattern's segments are the stages; a layout or account_for_* beside it is its own error
        // (rules::pipeline_layout::hybrid), as Megatron-LM asserts before it builds anything.
        return pipeline::split_from_segments(h.segments(), par.pp(), par.virtual_pipeline_model_parallel_size, first, last);
    }
    if let Some(spec) = &par.pipeline_model_parallel_layout {
        let explicit_vpp = par.virtual_pipeline_model_parallel_size;
        return pipeline::layout::split(spec, par.pp(), explicit_vpp, p.model.num_layers, p.model.mtp_num_layers)
            .map(|l| l.split)
            .map_err(SplitError::Layout);
    }
    pipeline::split_layers_accounting(
        p.model.num_layers,
        par.pp(),
        par.vpp(),
        first,
        last,
        par.account_for_embedding_in_pipeline_split,
        par.account_for_loss_in_pipeline_split,
    )
}

/// Memory over the plan's layer split; an invalid split still gets an estimate, over the nearest even split (its
/// error is reported by the rules).
fn memory_of(p: &Plan, derived: &Derived, split: &Result<StageSplit, SplitError>) -> MemoryReport {
    match split {
        Ok(s) => memory::estimate(p, derived, s),
        Err(_) => memory::estimate(p, derived, &pipeline::balanced_split(p.model.num_layers, p.parallelism.pp())),
    }
}

/// Plans an already resolved plan; `diags` are the findings of parsing it.
pub fn plan_resolved(p: &Plan, mut diags: Vec<Diagnostic>) -> Report {
    let par = &p.parallelism;
    let split = split_of(p);
    let derived = derive(p, split.as_ref().ok());
    rules::check(p, &derived, split.as_ref().err(), &mut diags);

    let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
    let layout = match layout::build_layout(derived.world_size, &sizes, &par.order, p.cluster.nvlink_domain_size) {
        Ok(l) => {
            rules::check_topology(p, &l, &mut diags);
            Some(l)
        }
        Err(d) => {
            // The world-size rules already report divisibility; keep only what they do not say.
            if !diags.iter().any(|x| x.code == d.code) && !matches!(d.code, Code::WorldNotDivisibleDense | Code::WorldNotDivisibleExpert) {
                diags.push(d);
            }
            None
        }
    };
    let memory = memory_of(p, &derived, &split);
    rules::check_memory(p, &memory, &mut diags);
    let performance = (derived.data_parallel_size > 0 && derived.expert_data_parallel_size > 0 && derived.num_microbatches > 0)
        .then(|| perf::estimate(p, &derived));
    if let Some(perf) = &performance {
        rules::check_measured(p, &derived, perf, &mut diags);
    }
    crate::sort::stable_by_key(&mut diags, |d| d.severity);
    let valid = !diags.iter().any(|d| d.severity == Severity::Error);
    let published = published(p, performance.as_ref());
    Report { valid, diagnostics: diags, derived, memory, layout, performance, plan: p.clone(), assumptions: Vec::new(), published }
}

// The out-of-memory verdict that rests on an unstated setting (`out-of-memory-assumed`), in this file rather than a
// child file of its own so that no two files import each other (tests/module_graph.rs):
// An out-of-memory verdict that rests on a setting the plan left unstated says so: each memory setting the report
// assumed (a perf recipe's value or Megatron-Core's default, `crate::tuned`) is flipped in turn to the value that
// saves memory, and the plan's memory is estimated again; the first flip that fits is named with what it saves
// (`out-of-memory-assumed`), else every applicable flip together if they fit; else nothing is said (the verdict does
// not rest on an unstated setting).

/// The memory settings a verdict may rest on, each with the value that saves memory, in the order tried (the
/// gradient buffer, the optimizer's sharding, FP8 weights, then recompute). Each flip is tried only when every key it
/// sets is unstated and the assumed value differs.
fn flips() -> [(&'static str, Vec<(&'static str, Value)>); 8] {
    [
        // param_and_grad_buffer.py: the main-grad buffer in the parameter dtype (2 B) instead of fp32 (4 B).
        ("grad_reduce_in_fp32", vec![("grad_reduce_in_fp32", json!(false))]),
        // distrib_optimizer.py: master weights and moments sharded over DP.
        ("use_distributed_optimizer", vec![("use_distributed_optimizer", json!(true))]),
        // optimizer_config.py use_precision_aware_optimizer: Adam's exp_avg / exp_avg_sq in bf16 (2 B each, not 4),
        // as Bridge's DeepSeek-V3 / Qwen3 MoE perf recipes keep them.
        (
            "use_precision_aware_optimizer",
            vec![("use_precision_aware_optimizer", json!(true)), ("exp_avg_dtype", json!("bf16")), ("exp_avg_sq_dtype", json!("bf16"))],
        ),
        // FP8 primary weights (fp8_param_gather): no bf16 copy beside the quantized one.
        ("fp8_param_gather", vec![("fp8_param_gather", json!(true))]),
        // transformer_engine.py is_first_microbatch: no cached quantized copy per module.
        ("disable_parameter_transpose_cache", vec![("disable_parameter_transpose_cache", json!(true))]),
        // After the lighter flips (a dtype, a cache): Megatron-FSDP sharding weights, gradients and optimizer state over DP (optim_grads_params), as Bridge's
        // perf recipes for PP-1 layouts run it (megatron_fsdp: unsharded one unit at a time).
        ("use_megatron_fsdp", vec![("use_megatron_fsdp", json!(true)), ("data_parallel_sharding_strategy", json!("optim_grads_params"))]),
        // transformer_config.py: selective recompute of core attention (Megatron-Core's default module list).
        ("recompute_granularity", vec![("recompute_granularity", json!("selective"))]),
        // Full recompute of every layer, one at a time (uniform, 1 layer).
        (
            "recompute_granularity",
            vec![("recompute_granularity", json!("full")), ("recompute_method", json!("uniform")), ("recompute_num_layers", json!(1))],
        ),
    ]
}

/// The memory of `value` with `set` written into its training section (planned as the report was: the same excluded
/// assumptions). None when the plan no longer reads.
fn memory_with(value: &Value, excluded: &[String], set: &[(&str, Value)]) -> Option<(Plan, crate::memory::MemoryReport)> {
    let mut v = value.clone();
    let t = v.as_object_mut()?.entry("training").or_insert_with(|| json!({}));
    for (k, x) in set {
        t.as_object_mut()?.insert(k.to_string(), x.clone());
    }
    let (p, ..) = plan::parse_plan_excluding(&v, excluded).ok()?;
    let split = split_of(&p);
    let derived = derive(&p, split.as_ref().ok());
    let m = memory_of(&p, &derived, &split);
    Some((p, m))
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// The diagnostic naming the assumed settings an out-of-memory verdict rests on, if the report has that verdict and
/// the plan left any memory setting unstated.
pub fn verdict(value: &Value, excluded: &[String], report: &Report) -> Option<Diagnostic> {
    if report.memory.fits || !report.diagnostics.iter().any(|d| d.code == Code::OutOfMemory) {
        return None;
    }
    let assumed = |k: &str| report.assumptions.iter().find(|a| a.key == k);
    // FP8 weights matter only under FP8 / FP4 GEMMs.
    let low = report.plan.training.settings.precision.is_low();
    let applicable: Vec<(&str, Vec<(&str, Value)>)> = flips()
        .into_iter()
        .filter(|(key, _)| low || !matches!(*key, "fp8_param_gather" | "disable_parameter_transpose_cache"))
        // The flip's own setting is an assumption the plan leaves at another value; a companion it sets with it
        // (Megatron-FSDP's sharding strategy) is one too, or one the plan does not state.
        .filter(|(key, set)| {
            let stated = |k: &str| value.get("training").and_then(|t| t.get(k)).is_some_and(|v| !v.is_null());
            assumed(key).is_some() && set.iter().all(|(k, x)| assumed(k).map_or(!stated(k), |a| a.value != *x))
        })
        .collect();
    // The precision-aware optimizer needs the distributed optimizer (Megatron-LM arguments.py asserts it): alone only
    // where the plan has it, together only where that is a flip too.
    let dist_opt = report.plan.training.settings.use_distributed_optimizer;
    let flips_dist_opt = applicable.iter().any(|(k, _)| *k == "use_distributed_optimizer");
    let applicable: Vec<_> =
        applicable.into_iter().filter(|(k, _)| *k != "use_precision_aware_optimizer" || dist_opt || flips_dist_opt).collect();
    if applicable.is_empty() {
        return None;
    }
    let cap = report.memory.gpu_memory_bytes;
    let peak = report.memory.peak_bytes;
    let was = |k: &str| assumed(k).map_or(String::new(), |a| format!("{k} = {} ({})", a.value, short_source(&a.source)));
    for (key, set) in &applicable {
        if *key == "use_precision_aware_optimizer" && !dist_opt {
            continue;
        }
        let Some((_, m)) = memory_with(value, excluded, set) else { continue };
        if m.fits {
            let to: Vec<String> = set.iter().map(|(k, x)| format!("{k} = {x}")).collect();
            let mut d = Diagnostic::new(
                Code::OutOfMemoryAssumed,
                format!(
                    "does not fit with {} (assumed: the plan does not state it); fits with {} (−{:.1} GiB: peak {:.1} of {:.1} GiB)",
                    was(key),
                    to.join(", "),
                    gib(peak.saturating_sub(m.peak_bytes)),
                    gib(m.peak_bytes),
                    gib(cap)
                ),
                format!("state what your run uses: {}", to.join(", ")),
            );
            for (k, x) in set {
                d = d.with_apply(&format!("training.{k}"), x.clone());
            }
            return Some(d);
        }
    }
    // No single flip fits: all of them together (the last recompute flip supersedes the selective one). If even that
    // does not fit, the verdict does not rest on an unstated setting and nothing is said.
    let mut together: Vec<(&str, Value)> = Vec::new();
    for (_, set) in &applicable {
        for (k, x) in set {
            together.retain(|(t, _)| t != k);
            together.push((k, x.clone()));
        }
    }
    let (_, m) = memory_with(value, excluded, &together)?;
    if !m.fits {
        return None;
    }
    // Sorted and distinct, as a set would give them.
    let mut keys: Vec<String> = applicable.iter().map(|(k, _)| was(k)).collect();
    crate::sort::stable_by(&mut keys, |a, b| a.cmp(b));
    keys.dedup();
    let to: Vec<String> = together.iter().map(|(k, x)| format!("{k} = {x}")).collect();
    let message = format!(
        "does not fit with {} (assumed: the plan does not state them); fits with {} together (−{:.1} GiB: peak {:.1} of {:.1} GiB)",
        keys.join(", "),
        to.join(", "),
        gib(peak.saturating_sub(m.peak_bytes)),
        gib(m.peak_bytes),
        gib(cap)
    );
    let mut d = Diagnostic::new(Code::OutOfMemoryAssumed, message, format!("state what your run uses: {}", to.join(", ")));
    for (k, x) in &together {
        d = d.with_apply(&format!("training.{k}"), x.clone());
    }
    Some(d)
}

/// "Megatron-Core default", "Bridge mixed-precision recipe default" or "perf.<recipe>": an assumption's source, short
/// enough for a message.
fn short_source(source: &str) -> &str {
    source.split_whitespace().find(|w| w.starts_with("perf.")).unwrap_or(source)
}
