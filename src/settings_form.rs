//! The "Advanced memory" form as data: which rows of the core's settings table ([`meshplan_core::settings`]) it
//! shows, in which groups, with which control, and which diagnostics belong under which row. No DOM, so it is
//! tested natively; `panels/advanced.rs` renders it. One field schema: a new row of the table is a new field of the
//! form with no page change.

use meshplan_core::Diagnostic;
use meshplan_core::plan::Plan;
use meshplan_core::settings::{self, Group, Setting, Ty};
use serde_json::Value;

/// The settings the Training panel's own fields already edit (they are rows of the table too).
pub const IN_TRAINING_PANEL: [&str; 4] =
    ["training.recompute_granularity", "training.recompute_num_layers", "training.precision", "training.use_distributed_optimizer"];

/// Every row the form shows, by group in the table's group order, rows in table order (training rows, then the cluster
/// rows such as `host_memory_per_node_gb`).
pub fn groups() -> Vec<(Group, Vec<&'static Setting>)> {
    Group::ALL
        .iter()
        .map(|&g| (g, settings::all().filter(|r| r.group == g && !IN_TRAINING_PANEL.contains(&r.path().as_str())).collect::<Vec<_>>()))
        .filter(|(_, rows)| !rows.is_empty())
        .collect()
}

/// The control a row gets, from its value kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    Check,
    Select(&'static [&'static str]),
    Number,
    /// One check box per allowed name.
    Names(&'static [&'static str]),
}

pub fn control(row: &Setting) -> Control {
    match row.ty {
        Ty::Bool => Control::Check,
        Ty::Choice(c) => Control::Select(c),
        Ty::UInt | Ty::Float => Control::Number,
        Ty::List(c) => Control::Names(c),
    }
}

/// The row's tooltip: its label and help, its default and the values it takes.
pub fn tooltip(row: &Setting) -> String {
    format!("{}: {}. Default: {}. Values: {}.", row.doc().label, row.doc().help, row.default, row.values())
}

/// The value the run uses for a row, as plan JSON: the plan's, else the default resolved from the other settings
/// (the precision's Bridge recipe, Megatron-LM's offload fraction, the GPU's reference system for host memory, the
/// modules selective recompute checkpoints when none are given).
pub fn resolved(plan: &Plan, row: &Setting) -> Value {
    if row.path() == settings::HOST_MEMORY.path() {
        return plan.cluster.host_memory_per_node_gb.map_or(Value::Null, Value::from);
    }
    let s = &plan.training.settings;
    if row.key == "recompute_modules" && s.recompute_modules.is_none() {
        return Value::from(s.recompute_modules_run().iter().map(|m| m.key()).collect::<Vec<_>>());
    }
    s.resolved(row.key, &plan.gpu).unwrap_or(Value::Null)
}

/// A resolved value as the form shows it beside an unset control: "true", "tensorwise", "[core_attn]", "none".
pub fn shown(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string)).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// The names of a list value (a plan list, or a resolved one).
pub fn names(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

/// A list after ticking (`on`) or unticking `name`, in the row's order of names; `base` is the list the run uses now
/// (the plan's, or the resolved default when the plan leaves it unset).
pub fn toggled(row_names: &[&str], base: &[String], name: &str, on: bool) -> Value {
    let keep = |n: &str| if n == name { on } else { base.iter().any(|b| b == n) };
    Value::from(row_names.iter().filter(|n| keep(n)).map(|n| n.to_string()).collect::<Vec<_>>())
}

/// Whether a diagnostic is about a row: its one-click fix sets the row, or its message names the row — by its path,
/// or by its key as a whole word (`fp8_param_gather`); a one-word key (`optimizer`) only as `optimizer =` or in
/// backquotes, since the word alone is plain English.
pub fn is_about(row: &Setting, d: &Diagnostic) -> bool {
    let path = row.path();
    if d.apply.iter().any(|a| a.path == path) || d.message.contains(&path) {
        return true;
    }
    let text = d.message.as_str();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    text.match_indices(row.key).any(|(i, k)| {
        let before = text[..i].chars().next_back();
        let after = &text[i + k.len()..];
        let whole = !before.is_some_and(ident) && !after.chars().next().is_some_and(ident);
        whole && (row.key.contains('_') || before == Some('`') || after.trim_start().starts_with('='))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshplan_core::Code;
    use serde_json::json;

    fn row(key: &str) -> &'static Setting {
        settings::setting(key).unwrap()
    }

    #[test]
    fn every_row_is_in_the_form_or_the_training_panel_once() {
        let shown: Vec<String> = groups().iter().flat_map(|(_, rows)| rows.iter().map(|r| r.path())).collect();
        let all: Vec<String> = settings::all().map(|r| r.path()).collect();
        assert_eq!(shown.len() + IN_TRAINING_PANEL.len(), all.len());
        for p in &all {
            assert_eq!(shown.iter().filter(|s| *s == p).count() + usize::from(IN_TRAINING_PANEL.contains(&p.as_str())), 1, "{p}");
        }
        // The cluster's host memory sits with the offloading rows.
        let offloading = &groups().into_iter().find(|(g, _)| *g == Group::Offloading).unwrap().1;
        assert!(offloading.iter().any(|r| r.path() == "cluster.host_memory_per_node_gb"));
    }

    #[test]
    fn controls_follow_the_value_kind() {
        assert_eq!(control(row("optimizer_cpu_offload")), Control::Check);
        assert_eq!(control(row("optimizer")), Control::Select(&["adam", "sgd"]));
        assert_eq!(control(row("optimizer_offload_fraction")), Control::Number);
        assert!(matches!(control(row("recompute_modules")), Control::Names(n) if n.contains(&"mlp") && n.contains(&"core_attn")));
    }

    #[test]
    fn toggling_a_name_keeps_the_rows_order() {
        let names = ["core_attn", "mlp", "moe", "layernorm"];
        let base = vec!["core_attn".to_string()];
        assert_eq!(toggled(&names, &base, "mlp", true), json!(["core_attn", "mlp"]));
        assert_eq!(toggled(&names, &base, "core_attn", false), json!([]));
        let base = vec!["layernorm".to_string(), "core_attn".to_string()];
        assert_eq!(toggled(&names, &base, "moe", true), json!(["core_attn", "moe", "layernorm"]));
    }

    #[test]
    fn resolved_defaults_come_from_the_core() {
        // The page's default plan: bf16 on H100, selective recompute, no modules given → Megatron-Core's ["core_attn"];
        // grad_reduce_in_fp32 from the nearest Bridge perf recipe (false: perf_recipes/_common.py:73), and with plain
        // defaults from Bridge's bf16_mixed (true); no offload → fraction 0.
        let r = meshplan_core::plan_value(&crate::state::plan_doc::default_plan()).unwrap();
        assert_eq!(resolved(&r.plan, row("recompute_modules")), json!(["core_attn"]));
        assert_eq!(resolved(&r.plan, row("grad_reduce_in_fp32")), json!(false));
        let mut plain = crate::state::plan_doc::default_plan();
        plain["defaults"] = json!("megatron-core");
        let r = meshplan_core::plan_value(&plain).unwrap();
        assert_eq!(resolved(&r.plan, row("grad_reduce_in_fp32")), json!(true));
        assert_eq!(shown(&resolved(&r.plan, row("recompute_modules"))), "[core_attn]");
        assert_eq!(shown(&Value::Null), "none");
    }

    #[test]
    fn diagnostics_go_under_the_rows_they_name() {
        let d = Diagnostic::new(Code::InvalidValue, "optimizer_offload_fraction = 0.5 without optimizer_cpu_offload: nothing is offloaded", "x");
        assert!(is_about(row("optimizer_offload_fraction"), &d));
        assert!(is_about(row("optimizer_cpu_offload"), &d));
        assert!(!is_about(row("optimizer"), &d), "`optimizer` inside another key is not the key");
        let d = Diagnostic::new(Code::InvalidValue, "use_precision_aware_optimizer with optimizer = sgd: the optimizer step", "x");
        assert!(is_about(row("optimizer"), &d));
        let d = Diagnostic::new(Code::InvalidValue, "the optimizer step runs on the host", "x");
        assert!(!is_about(row("optimizer"), &d));
        let d = Diagnostic::new(Code::InvalidValue, "`training.exp_avg_dtype` must be one of fp32", "x").with_apply("training.exp_avg_dtype", "fp32");
        assert!(is_about(row("exp_avg_dtype"), &d) && !is_about(row("exp_avg_sq_dtype"), &d));
    }
}
