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
use serde_json::Value;

mod assumed;

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
    /// With `"defaults": "tuned"`: every speed and memory setting the plan left unstated, with the value planned and its
    /// source, a Megatron Bridge performance recipe's (`crate::tuned`) or Megatron-Core's default. Empty with plain
    /// defaults (the default for now).
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
    let plan = serde_json::to_value(p).ok()?;
    let same = |section: &str, m: &serde_json::Map<String, Value>| m.iter().all(|(k, v)| plan[section].get(k).is_none_or(|x| x == v || x.as_f64() == v.as_f64() && v.is_number()));
    let sizes: serde_json::Map<String, Value> = ["global_batch_size", "micro_batch_size", "precision", "fp8_recipe", "seq_length"]
        .iter()
        .filter_map(|k| Some((k.to_string(), r.training.get(*k)?.clone())))
        .collect();
    let mesh: serde_json::Map<String, Value> = r.parallelism.iter().filter(|(k, _)| k.ends_with("_parallel_size")).map(|(k, v)| (k.clone(), v.clone())).collect();
    let runs_it = r.gpu.as_deref() == Some(p.gpu.key.as_str()) && r.gpus == Some(p.world_size()) && same("parallelism", &mesh) && same("training", &sizes);
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

/// Plans from a plan-file JSON value. A setting assumed from a perf recipe (`crate::tuned`) that Megatron rejects for
/// this plan — an error other than out-of-memory whose message or fix names it — is not assumed: the plan is read again
/// without it (once; at most three readings in all), and keeps the default.
pub fn plan_value(value: &Value) -> Result<Report, InputError> {
    let mut excluded: Vec<String> = Vec::new();
    loop {
        let (p, diags, assumptions) = plan::parse_plan_excluding(value, &excluded)?;
        let report = Report { assumptions, ..plan_resolved(&p, diags) };
        let rejected = rejected_assumptions(&report);
        if rejected.is_empty() || excluded.len() >= crate::tuned::TUNED_KEYS.len() {
            // Plain defaults (the default for now) list nothing and name no assumption: the report is as before.
            if crate::tuned::plain(value) {
                return Ok(Report { assumptions: Vec::new(), ..report });
            }
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
    if let Some(d) = assumed::verdict(value, excluded, &report) {
        report.diagnostics.push(d);
        report.diagnostics.sort_by_key(|d| d.severity);
    }
    report
}

/// The assumed (perf-recipe) keys an error of the report names, out-of-memory aside (a verdict on the assumption's
/// cost, not Megatron rejecting it).
fn rejected_assumptions(report: &Report) -> Vec<String> {
    let recipe_assumed = report.assumptions.iter().filter(|a| a.source != crate::tuned::DEFAULT_SOURCE);
    recipe_assumed
        .filter(|a| {
            report.diagnostics.iter().any(|d| {
                d.severity == Severity::Error && d.code != Code::OutOfMemory && (names(&d.message, &a.key) || names(&d.fix, &a.key))
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
    diags.sort_by_key(|d| d.severity);
    let valid = !diags.iter().any(|d| d.severity == Severity::Error);
    let published = published(p, performance.as_ref());
    Report { valid, diagnostics: diags, derived, memory, layout, performance, plan: p.clone(), assumptions: Vec::new(), published }
}
