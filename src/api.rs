//! The JS API for docs sites: the core's plan function, JSON in and JSON out. Exported by the tools module
//! (`meshplan-tools.js`, src/bin/meshplan-tools.rs), which carries the core's report serialisation and the search
//! already; the page's own module exports nothing, so that its first render does not carry them.
//!
//! ```js
//! import init, { plan, presets } from "./meshplan-tools.js";
//! await init();
//! const report = JSON.parse(plan(JSON.stringify({ model: "llama-3.1-8b", ... })));
//! ```

/// Plans a plan file (JSON text) and returns the report as JSON text — the same report as
/// `meshplan plan FILE --format json`, `remedies` included (every diagnostic's fix re-planned, as the CLI adds them).
/// Unreadable input returns `{"error": {code, message, fix}}`.
pub fn plan_text(input: &str) -> String {
    let planned = meshplan_core::plan::read_json(input).and_then(|v| meshplan_core::plan_value(&v).map(|r| (v, r)));
    match planned {
        Ok((plan, report)) => {
            let remedies = meshplan_core::remedy::ranked(&plan, &report);
            // The report is a struct, so its JSON is an object: `remedies` goes in before its closing brace. Written as
            // text, not through serde_json::Value (a second serializer of the whole report: 4.4 KB of gzipped wasm).
            let mut out = serde_json::to_string(&report).unwrap_or_default();
            match (out.pop(), serde_json::to_string(&remedies)) {
                (Some('}'), Ok(r)) => {
                    out.push_str(if out.ends_with('{') { "\"remedies\":" } else { ",\"remedies\":" });
                    out.push_str(&r);
                    out.push('}');
                    out
                }
                _ => serde_json::to_string(&report).unwrap_or_default(),
            }
        }
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
}

/// Takes Megatron Bridge's recipes from the text of `bridge-recipes.json` (served beside the planner) into this
/// module's core, and returns how many it has (0 for a text that is not the recipes file). The module is built without
/// them: until they are installed a plan is planned with Megatron-Core's defaults (its assumptions say so) and a plan
/// naming a recipe answers `recipes-loading`; installed, `plan` gives the CLI's report. The first file taken stays.
pub fn install_recipes_text(text: &str) -> usize {
    meshplan_core::recipes::install(text)
}

/// The model presets and the GPU catalogue, as `meshplan presets --format json` prints them.
pub fn presets_text() -> String {
    serde_json::to_string(&meshplan_core::presets::catalog()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn plan_text_reports_or_explains() {
        let ok = super::plan_text(r#"{"model":"llama-3.1-8b","cluster":{"gpu":"h100-sxm-80gb","gpus_per_node":8,"num_nodes":1}}"#);
        let v: serde_json::Value = serde_json::from_str(&ok).unwrap();
        assert_eq!(v["derived"]["world_size"], 8);
        // As the CLI's JSON: the re-planned fixes beside the report (none needed here: every diagnostic is an info).
        assert!(v["remedies"].is_array());
        let bad: serde_json::Value = serde_json::from_str(&super::plan_text("{nope")).unwrap();
        assert_eq!(bad["error"]["code"], "invalid-json");
    }
}
