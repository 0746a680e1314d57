//! The JS API for docs sites: the core's plan function, JSON in and JSON out.
//!
//! ```js
//! import init, { plan, presets } from "./meshplan-web.js";
//! await init();
//! const report = JSON.parse(plan(JSON.stringify({ model: "llama-3.1-8b", ... })));
//! ```

use wasm_bindgen::prelude::*;

/// Plans a plan file (JSON text) and returns the report as JSON text — the same report as
/// `meshplan plan FILE --format json`. Unreadable input returns `{"error": {code, message, fix}}`.
#[wasm_bindgen(js_name = plan)]
pub fn plan_js(input: &str) -> String {
    plan_text(input)
}

/// The model presets and the GPU catalogue, as `meshplan presets --format json` prints them.
#[wasm_bindgen(js_name = presets)]
pub fn presets_js() -> String {
    serde_json::to_string(&meshplan_core::presets::catalog()).unwrap_or_default()
}

pub fn plan_text(input: &str) -> String {
    match meshplan_core::plan_json(input) {
        Ok(report) => serde_json::to_string(&report).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
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

/// Searches layouts for a plan file (JSON text; its parallelism is ignored) and returns the
/// core's search result as JSON text: `evaluated`, `valid`, the best `top` candidates and the
/// Pareto front. Unreadable input returns `{"error": {code, message, fix}}`.
#[wasm_bindgen(js_name = search)]
pub fn search_js(input: &str, top: u32) -> String {
    search_text(input, top as usize)
}

pub fn search_text(input: &str, top: usize) -> String {
    let opts = meshplan_core::search::SearchOptions { top: top.max(1), ..Default::default() };
    match meshplan_core::search::search_str(input, &opts) {
        Ok(result) => serde_json::to_string(&result).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
}

#[cfg(test)]
mod search_tests {
    #[test]
    fn search_text_finds_layouts_or_explains() {
        let ok = super::search_text(
            r#"{"model":"llama-3.1-8b","cluster":{"gpu":"h100-sxm-80gb","gpus_per_node":8,"num_nodes":1},"training":{"seq_length":8192,"global_batch_size":128}}"#,
            3,
        );
        let v: serde_json::Value = serde_json::from_str(&ok).unwrap();
        assert!(v["valid"].as_u64().unwrap() > 0);
        assert_eq!(v["candidates"].as_array().unwrap().len(), 3);
        let bad: serde_json::Value = serde_json::from_str(&super::search_text("{nope", 3)).unwrap();
        assert_eq!(bad["error"]["code"], "invalid-json");
    }
}
