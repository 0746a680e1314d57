//! The Diagnostics panel's computed fixes (the core's `remedy::ranked`: every diagnostic's one-click fix re-planned),
//! ranked by the tools module and shown by the page. Ranking re-plans up to `MAX_REMEDIES` plans and links the OOM
//! explainer's fixes; in the tools module (which plans its mirror of the page's plan after the edit's frame anyway)
//! none of that is in the page's first-render wasm (docs/web.md, "What went": −10.7 KB gzip).
//!
//! `meshplan:remedies`, tools → page, after the mirror's report changed and one of its diagnostics offers a fix:
//! `{"plan": the plan ranked, "remedies": [Remedy, …]}`. The page takes a ranking only for the plan it shows, so a
//! ranking made before the user typed on is dropped (the next one follows the next pull). A page without the tools
//! module shows each rule's own one-click fix.

use super::Doc;
use super::bridge;
use leptos::prelude::*;
use crate::state::signal::effect;
use meshplan_core::diag::FieldValue;
use meshplan_core::remedy::{self, Remedy};
use meshplan_core::{Code, Diagnostic};
use serde_json::Value;

pub const REMEDIES: &str = "meshplan:remedies";

/// Whether any diagnostic offers a one-click fix (only then is there something to rank).
fn offers(ds: &[Diagnostic]) -> bool {
    ds.iter().any(|d| !d.apply.is_empty())
}

/// The tools' half: after every change of the mirror's report that offers a fix, ranks the fixes and sends them.
pub fn rank_for_page(doc: Doc) {
    effect(move || {
        let message = doc.outcome.with(|o| {
            let r = o.as_ref().ok().filter(|r| offers(&r.diagnostics))?;
            doc.plan.with_untracked(|p| serde_json::json!({ "plan": p, "remedies": remedy::ranked(p, r) }).to_string().into())
        });
        if let Some(text) = message {
            bridge::send_text(REMEDIES, &text);
        }
    });
}

/// The page's half: the ranked fixes of the plan the page shows (empty while no diagnostic offers a fix, and until
/// the tools module has ranked this plan's).
pub fn ranked(doc: Doc, items: Memo<Vec<Diagnostic>>) -> ReadSignal<Vec<Remedy>> {
    let (remedies, set_remedies) = signal(Vec::<Remedy>::new());
    effect(move || {
        if !items.with(|ds| offers(ds)) && remedies.with_untracked(|r| !r.is_empty()) {
            set_remedies.set(Vec::new());
        }
    });
    bridge::listen_text(REMEDIES, move |text| {
        let Some((plan, list)) = read(&text) else { return };
        if doc.plan.try_with_untracked(|p| *p == plan) == Some(true) {
            let _ = set_remedies.try_set(list);
        }
    });
    remedies
}

/// A `meshplan:remedies` message read as serde's derived readers read [`Remedy`], by hand from a `Value` (the page
/// parses plans as `Value` anyway, so it links no typed serde reader; a native test checks the two agree).
fn read(text: &str) -> Option<(Value, Vec<Remedy>)> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    let plan = v.get_mut("plan")?.take();
    let list = v.get("remedies")?.as_array()?.iter().map(read_remedy).collect::<Option<Vec<_>>>()?;
    Some((plan, list))
}

/// The code spelled `s`, found in `Code::ALL` (a message names a few codes; `Code::parse` would link the rules table's
/// text, 16 KB gzip, into the page).
fn code(s: &str) -> Option<Code> {
    Code::ALL.iter().copied().find(|c| c.as_str() == s)
}

fn read_remedy(v: &Value) -> Option<Remedy> {
    let codes = |key: &str| v.get(key)?.as_array()?.iter().map(|c| code(c.as_str()?)).collect::<Option<Vec<_>>>();
    let edits = v.get("edits")?.as_array()?.iter().map(|e| Some(FieldValue { path: e.get("path")?.as_str()?.to_string(), value: e.get("value")?.clone() }));
    Some(Remedy {
        edits: edits.collect::<Option<Vec<_>>>()?,
        offered_by: codes("offered_by")?,
        clears: codes("clears")?,
        errors_after: usize::try_from(v.get("errors_after")?.as_u64()?).ok()?,
        fits: v.get("fits")?.as_bool()?,
        peak_bytes: v.get("peak_bytes")?.as_u64()?,
        step_time_s: match v.get("step_time_s") {
            None | Some(Value::Null) => None,
            Some(t) => Some(t.as_f64()?),
        },
        distance: v.get("distance")?.as_f64()?,
    })
}

#[cfg(test)]
mod tests {
    use meshplan_core::remedy::{self, Remedy};
    use serde_json::json;

    /// The guide's DeepSeek-V3 layout (TP 2, PP 16, EP 64) on 1,024 H100 (crates/core/tests/remedy.rs) and an
    /// out-of-memory plan: the message the tools module sends is read back as serde reads it, remedy for remedy.
    #[test]
    fn a_ranking_crosses_the_bridge_unchanged() {
        let plans = [
            json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128},
                   "training": {"global_batch_size": 4096, "seq_length": 4096, "micro_batch_size": 1},
                   "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64}}),
            json!({"model": "llama-3.1-70b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                   "training": {"global_batch_size": 64, "seq_length": 8192, "micro_batch_size": 4}}),
        ];
        let mut seen = 0;
        for plan in plans {
            let report = meshplan_core::plan_value(&plan).unwrap();
            let ranked = remedy::ranked(&plan, &report);
            seen += ranked.len();
            let text = json!({ "plan": plan, "remedies": ranked }).to_string();
            let by_serde: Vec<Remedy> = serde_json::from_value(serde_json::from_str::<serde_json::Value>(&text).unwrap()["remedies"].clone()).unwrap();
            assert_eq!(super::read(&text), Some((plan, by_serde)));
        }
        assert!(seen >= 3, "both plans offer fixes ({seen})");
        // Anything else is not a ranking.
        for text in [r#"{"remedies":[]}"#, r#"{"plan":{},"remedies":[{"edits":[]}]}"#, r#"{"plan":{},"remedies":{}}"#, "nope"] {
            assert_eq!(super::read(text), None, "{text}");
        }
    }
}
