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
/// `meshplan plan FILE --format json`. Unreadable input returns `{"error": {code, message, fix}}`.
pub fn plan_text(input: &str) -> String {
    match meshplan_core::plan_json(input) {
        Ok(report) => serde_json::to_string(&report).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
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
        let bad: serde_json::Value = serde_json::from_str(&super::plan_text("{nope")).unwrap();
        assert_eq!(bad["error"]["code"], "invalid-json");
    }
}
