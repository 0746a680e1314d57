//! Every row of `rules::RULES`: a minimal plan that triggers the code and the nearest plan that does not, each
//! worked out by hand from the rule's source (the numbers are in each case's comment). A triggered diagnostic must
//! carry the table's severity; where its fix carries `apply` values, applying them to the plan must clear the code.
//! Input-level codes (exit status 2) are `InputError`s of `plan_value` / `plan_str`.
//!
//! The cases read the report through its JSON contract (`severity`, `code`, `apply`), so they hold whatever Rust
//! types carry the code. `every_rules_row_has_a_case` fails when a row of `RULES` has no case here.

mod advice;
mod dsv4;
mod fit;
mod hybrid;
mod input;
mod layout;
mod limits;
mod mesh;
mod model;
mod moe;
mod pipeline;
mod sequence;
mod settings;
mod size;
mod trace;
mod training;
mod vision;

use meshplan_core::rules::RULES;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// What a code is: a diagnostic of the report with its severity (exit 1 for errors), or an `InputError` (exit 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Error,
    Warning,
    Info,
    /// Unreadable input: `plan_value` / `plan_str` return it as an `InputError`, the CLI exits with status 2.
    Input,
}

impl Kind {
    fn severity(self) -> &'static str {
        match self {
            Kind::Error | Kind::Input => "error",
            Kind::Warning => "warning",
            Kind::Info => "info",
        }
    }
}

/// How a case reaches the core.
pub enum Probe {
    /// A plan file as JSON, through `plan_value`.
    Plan(Value),
    /// Plan-file text, through `plan_str` (for text that is not JSON).
    Text(&'static str),
    /// A core function below the plan (the layout API): its diagnostic as JSON, or None when it succeeds.
    Call(fn() -> Option<Value>),
    /// A plan file through the layout search (`search::search_value`): its input error, or nothing when it searches.
    Search(Value),
    /// Text through `imports::import_plan` (its format detected), with `--model` when given: its input error, or the
    /// findings of reading the plan it builds.
    Import(&'static str, Option<&'static str>),
    /// Text through `oom::parse_message`: its input error, or nothing when a message is read.
    Oom(&'static str),
    /// A plan file planned, then laid out by `schedule::schedule`: its diagnostic, or nothing when it lays out.
    Schedule(Value),
    /// A plan file and a sizing request (the JS API's fields) through `size::size_value`: its input error, or nothing
    /// when it sizes.
    Size(Value, Value),
}

pub struct Case {
    pub code: &'static str,
    pub kind: Kind,
    pub trigger: Probe,
    /// The nearest plan where the code stays silent; None only for a code that fires on every plan.
    pub silent: Option<Probe>,
    /// The one-click fix (`apply`: dotted path and value) the triggered diagnostic must carry, worked out by hand;
    /// empty when the rule's fix is advice only.
    pub fix: Vec<(&'static str, Value)>,
}

pub fn case(code: &'static str, kind: Kind, trigger: Probe, silent: Probe) -> Case {
    Case { code, kind, trigger, silent: Some(silent), fix: Vec::new() }
}

impl Case {
    pub fn fix(mut self, apply: &[(&'static str, Value)]) -> Self {
        self.fix = apply.to_vec();
        self
    }
}

/// What the core answered: the report's diagnostics (JSON contract), or the input error.
enum Outcome {
    Report(Vec<Value>),
    Input(Value),
}

fn outcome(probe: &Probe) -> Outcome {
    let planned = match probe {
        Probe::Plan(v) => meshplan_core::plan_value(v),
        Probe::Text(t) => meshplan_core::plan_str(t),
        Probe::Call(f) => return Outcome::Report(f().into_iter().collect()),
        Probe::Search(v) => return input_outcome(meshplan_core::search::search_value(v, &Default::default()).map(|_| Vec::new())),
        Probe::Import(text, model) => {
            let opts = meshplan_core::imports::ImportOptions { model: model.map(str::to_string), ..Default::default() };
            return input_outcome(meshplan_core::imports::import_plan(text, &opts).map(|(_, _, diags)| diags));
        }
        Probe::Oom(text) => return input_outcome(meshplan_core::oom::parse_message(text).map(|_| Vec::new())),
        Probe::Size(plan, request) => {
            let sized = meshplan_core::size::SizeRequest::from_value(request).and_then(|r| meshplan_core::size::size_value(plan, &r));
            return input_outcome(sized.map(|_| Vec::new()));
        }
        Probe::Schedule(v) => {
            let report = meshplan_core::plan_value(v).expect("a schedule probe plans");
            return Outcome::Report(meshplan_core::schedule::schedule(&report).err().map(|d| serde_json::to_value(d).expect("a diagnostic serializes")).into_iter().collect());
        }
    };
    match planned {
        Ok(r) => match serde_json::to_value(&r.diagnostics) {
            Ok(Value::Array(diags)) => Outcome::Report(diags),
            other => panic!("diagnostics are a JSON array: {other:?}"),
        },
        Err(e) => Outcome::Input(serde_json::to_value(&e).expect("an input error serializes")),
    }
}

/// An input error, or the findings of what was read.
fn input_outcome(r: Result<Vec<meshplan_core::Diagnostic>, meshplan_core::plan::InputError>) -> Outcome {
    match r {
        Ok(diags) => Outcome::Report(diags.iter().map(|d| serde_json::to_value(d).expect("a diagnostic serializes")).collect()),
        Err(e) => Outcome::Input(serde_json::to_value(&e).expect("an input error serializes")),
    }
}

fn found<'a>(diags: &'a [Value], code: &str) -> Option<&'a Value> {
    diags.iter().find(|d| d["code"] == code)
}

fn codes_of(diags: &[Value]) -> Vec<&str> {
    diags.iter().filter_map(|d| d["code"].as_str()).collect()
}

/// `plan` with the dotted `path` (e.g. `parallelism.tensor_model_parallel_size`) set to `value`.
pub fn set(plan: &Value, edits: &[(&str, Value)]) -> Value {
    let mut v = plan.clone();
    for (path, value) in edits {
        let mut at = &mut v;
        for key in path.split('.') {
            at = &mut at[key];
        }
        *at = value.clone();
    }
    v
}

/// Checks one case; every problem found, as a line.
fn check(case: &Case) -> Vec<String> {
    let mut problems = Vec::new();
    let code = case.code;
    match (outcome(&case.trigger), case.kind) {
        (Outcome::Input(e), Kind::Input) if e["code"] == code => {}
        (Outcome::Input(e), _) => problems.push(format!("{code}: trigger is an input error {e}")),
        (Outcome::Report(diags), Kind::Input) => problems.push(format!("{code}: trigger planned, expected exit 2: {:?}", codes_of(&diags))),
        (Outcome::Report(diags), kind) => match found(&diags, code) {
            None => problems.push(format!("{code}: trigger does not fire: {:?}", codes_of(&diags))),
            Some(d) if d["severity"] != kind.severity() => problems.push(format!("{code}: severity {} not {}", d["severity"], kind.severity())),
            Some(d) => problems.extend(check_fix(case, d)),
        },
    }
    if let Some(silent) = &case.silent {
        match outcome(silent) {
            Outcome::Report(diags) if found(&diags, code).is_some() => problems.push(format!("{code}: fires on the silent plan")),
            Outcome::Report(_) => {}
            Outcome::Input(e) => problems.push(format!("{code}: the silent plan is an input error {e}")),
        }
    }
    problems
}

/// The trigger's one-click fix is the one worked out by hand, and applied to the trigger plan it clears the code.
fn check_fix(case: &Case, diag: &Value) -> Option<String> {
    let apply = diag["apply"].as_array().cloned().unwrap_or_default();
    let edits: Vec<(&str, Value)> = apply.iter().map(|a| (a["path"].as_str().unwrap_or(""), a["value"].clone())).collect();
    if edits != case.fix {
        return Some(format!("{}: apply {edits:?}, worked out {:?}", case.code, case.fix));
    }
    if edits.is_empty() {
        return None;
    }
    let plan = match &case.trigger {
        Probe::Plan(plan) => plan,
        // A core function below the plan (the hybrid segments' split): its fix names plan paths, but there is no plan
        // to apply them to; the values were compared above.
        Probe::Call(_) => return None,
        _ => return Some(format!("{}: apply on a non-plan probe", case.code)),
    };
    let Outcome::Report(before) = outcome(&case.trigger) else { return None };
    match outcome(&Probe::Plan(set(plan, &edits))) {
        Outcome::Report(after) if found(&after, case.code).is_some() => Some(format!("{}: still fires after applying {edits:?}", case.code)),
        Outcome::Report(after) => {
            // A fix names the nearest valid value: it raises no error the plan did not have.
            let errors = |diags: &[Value]| -> BTreeSet<String> {
                diags.iter().filter(|d| d["severity"] == "error").filter_map(|d| d["code"].as_str()).map(str::to_string).collect()
            };
            let raised: Vec<String> = errors(&after).difference(&errors(&before)).cloned().collect();
            let known: Vec<String> = FIX_RAISES.iter().filter(|(c, _)| *c == case.code).map(|(_, r)| r.to_string()).collect();
            (raised != known).then(|| format!("{}: applying {edits:?} raises {raised:?} (known: {known:?})", case.code))
        }
        Outcome::Input(e) => Some(format!("{}: applying {edits:?} gives an input error {e}", case.code)),
    }
}

/// Fixes that clear their own code but raise another error today; each is in the report to the lead. When a rule's
/// fix is corrected its entry here fails the test, so it goes.
const FIX_RAISES: &[(&str, &str)] = &[];

/// Codes the page emits (never the core), with the end-to-end test that triggers each and the one it clears in.
const PAGE_ONLY: &[(&str, &str)] =
    &[
        ("search-worker", "tests/e2e/advisor.test.mjs: a search worker that cannot load says so, and Find layouts works again once it can"),
        ("recipes-loading", "tests/e2e/advanced.test.mjs: a shared plan that names a recipe waits for the recipes, then plans"),
        ("hf-config-loading", "tests/e2e/hf-config.test.mjs: a shared plan with a config.json waits for the tools module, then plans the config's model"),
    ];

/// Runs every case of a topic; fails naming every case that does not hold.
pub fn run(cases: Vec<Case>) {
    let problems: Vec<String> = cases.iter().flat_map(check).collect();
    assert!(problems.is_empty(), "{} problem(s):\n  {}", problems.len(), problems.join("\n  "));
}

fn all_cases() -> Vec<Case> {
    [
        advice::cases(),
        dsv4::cases(),
        fit::cases(),
        hybrid::cases(),
        input::cases(),
        layout::cases(),
        limits::cases(),
        mesh::cases(),
        model::cases(),
        moe::cases(),
        pipeline::cases(),
        sequence::cases(),
        settings::cases(),
        size::cases(),
        trace::cases(),
        training::cases(),
        vision::cases(),
    ]
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn every_rules_row_has_a_case() {
    let table: BTreeSet<String> = RULES.iter().map(|r| r.code.to_string()).collect();
    let cases = all_cases();
    let mut covered = BTreeSet::new();
    let duplicates: Vec<&str> = cases.iter().filter(|c| !covered.insert(c.code.to_string())).map(|c| c.code).collect();
    // Codes only the page emits, each held by an end-to-end test in real Chromium instead.
    for (code, _e2e_test) in PAGE_ONLY {
        covered.insert(code.to_string());
    }
    let missing: Vec<&String> = table.difference(&covered).collect();
    let unknown: Vec<&String> = covered.difference(&table).collect();
    assert!(missing.is_empty(), "rows of RULES without a trigger case: {missing:?}");
    assert!(unknown.is_empty(), "cases for codes RULES does not have: {unknown:?}");
    assert!(duplicates.is_empty(), "codes with two cases: {duplicates:?}");
    // Only a code that fires on every plan goes without a silent case.
    let unsilenced: Vec<&str> = cases.iter().filter(|c| c.silent.is_none()).map(|c| c.code).collect();
    assert_eq!(unsilenced, ["model-size-advice"]);
}

#[test]
fn model_size_advice_fires_on_every_plan() {
    // Why it has no silent case: rules::advice picks a row of the guide's model-size tables for every model (the dense
    // table covers every size, the MoE table falls back to a general row), so every planned case carries it.
    let mut planned = 0;
    for c in all_cases() {
        for p in [Some(&c.trigger), c.silent.as_ref()].into_iter().flatten() {
            if let (Probe::Plan(_), Outcome::Report(diags)) = (p, outcome(p)) {
                planned += 1;
                assert!(found(&diags, "model-size-advice").is_some(), "{}: {:?}", c.code, codes_of(&diags));
            }
        }
    }
    assert!(planned > 100, "{planned}");
}

#[test]
fn every_case_severity_matches_the_table() {
    // The table is where severity is decided; the cases state it independently (from each rule's source).
    for c in all_cases() {
        let row = RULES.iter().find(|r| r.code.to_string() == c.code).expect("a row");
        assert_eq!(format!("{:?}", row.severity).to_lowercase(), c.kind.severity(), "{}", c.code);
    }
}

// Builders shared by the topic files.

pub const TP: &str = "parallelism.tensor_model_parallel_size";
pub const PP: &str = "parallelism.pipeline_model_parallel_size";
pub const VPP: &str = "parallelism.virtual_pipeline_model_parallel_size";
pub const CP: &str = "parallelism.context_parallel_size";
pub const EP: &str = "parallelism.expert_model_parallel_size";
pub const ETP: &str = "parallelism.expert_tensor_parallel_size";
pub const SP: &str = "parallelism.sequence_parallel";
pub const ORDER: &str = "parallelism.order";
pub const FIRST: &str = "parallelism.num_layers_in_first_pipeline_stage";
pub const LAST: &str = "parallelism.num_layers_in_last_pipeline_stage";
pub const GROUP: &str = "parallelism.microbatch_group_size_per_vp_stage";
pub const OVERLAP: &str = "parallelism.overlap_p2p_comm";
pub const SEQ: &str = "training.seq_length";
pub const MBS: &str = "training.micro_batch_size";
pub const GBS: &str = "training.global_batch_size";
pub const RECOMPUTE: &str = "training.recompute_granularity";
pub const METHOD: &str = "training.recompute_method";
pub const RECOMPUTE_LAYERS: &str = "training.recompute_num_layers";
pub const PRECISION: &str = "training.precision";
pub const PER_NODE: &str = "cluster.gpus_per_node";
pub const NODES: &str = "cluster.num_nodes";

/// The seed checks' small dense model: 16 layers, hidden 2048, ffn 5632 (SwiGLU), 16 heads in 8 query groups of 128,
/// vocabulary 32000, no linear biases (given, so no add-bias-linear-default info). About 0.83B parameters: memory never
/// decides these cases unless a case says so.
pub fn dense() -> Value {
    json!({"num_layers": 16, "hidden_size": 2048, "ffn_hidden_size": 5632, "num_attention_heads": 16,
           "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
           "add_bias_linear": false})
}

/// The seed checks' small MoE model: 16 layers, hidden 1024, 16 heads in 4 query groups of 64, 64 experts of width 512,
/// top-4, no linear biases.
pub fn moe() -> Value {
    json!({"num_layers": 16, "hidden_size": 1024, "ffn_hidden_size": 2816, "num_attention_heads": 16,
           "num_query_groups": 4, "kv_channels": 64, "vocab_size": 32000, "gated_linear_unit": true,
           "add_bias_linear": false, "num_moe_experts": 64, "moe_router_topk": 4, "moe_ffn_hidden_size": 512})
}

/// `model` on one node of 8 H100 80GB (NVLink domain 8), TP = PP = CP = EP = 1 (ETP 1 for an MoE model), seq 4096,
/// micro-batch 1, global batch 1024 (DP 8: 128 microbatches), selective recompute, distributed optimizer, bf16.
pub fn plan(model: Value) -> Value {
    let moe = model.get("num_moe_experts").is_some();
    let mut parallelism = json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1, "context_parallel_size": 1,
                                 "expert_model_parallel_size": 1, "sequence_parallel": false});
    if moe {
        parallelism["expert_tensor_parallel_size"] = json!(1);
    }
    // Megatron-Core's plain defaults: the rules' cases are worked out at them, not at a perf recipe's settings.
    json!({"model": model, "defaults": "megatron-core", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
           "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024,
                        "recompute_granularity": "selective", "use_distributed_optimizer": true, "precision": "bf16"},
           "parallelism": parallelism})
}

/// `plan(model)` with edits, as a probe.
pub fn probe(model: Value, edits: &[(&str, Value)]) -> Probe {
    Probe::Plan(set(&plan(model), edits))
}
