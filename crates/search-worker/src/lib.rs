//! The layout search in a Web Worker, so that the page stays responsive while it runs and the page's own
//! module does not carry the search code.
//!
//! Protocol (structured-clone messages):
//! - worker → page, once, when it is ready: `{"ready": true}`;
//! - page → worker: `{"id": n, "input": "<plan file JSON>", "top": k}`;
//! - worker → page: `{"id": n, "output": "<search_text's JSON>", "ms": search time in the worker}`;
//! - page → worker, a cluster sizing: `{"id": n, "input": "<plan file JSON>", "size": "<request JSON>"}`, answered
//!   `{"id": n, "output": "<size_text's JSON>", "ms": …}` (the request: `{"tokens": "15T", "deadline": "30d", …}`).
//!
//! Imported on a page instead (as `meshplan-search.js`), the module is the search half of the JS API:
//! `search(input, top)` and `size(input, request)` return the same JSON texts.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Searches layouts for a plan file (JSON text; its parallelism is ignored) and returns the core's search
/// result as JSON text — `evaluated`, `valid`, the best `top` candidates, the Pareto front — the same JSON as
/// `meshplan search FILE --format json`. Unreadable input returns `{"error": {code, message, fix}}`.
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

/// Sizes the cluster for a plan file (JSON text) and a request (JSON text: `tokens` or `steps`, and `deadline`,
/// `gpu_hours`, `nodes`, `batch_tokens`, `efficiency`, each a string such as "15T", "30d", "16..512" or a number) and
/// returns the core's sizing as JSON text — the same JSON as `meshplan size FILE --tokens … --format json`. Unreadable
/// input returns `{"error": {code, message, fix}}`.
#[wasm_bindgen(js_name = size)]
pub fn size_js(input: &str, request: &str) -> String {
    size_text(input, request)
}

pub fn size_text(input: &str, request: &str) -> String {
    use meshplan_core::size;
    let sized = meshplan_core::plan::read_json(request)
        .and_then(|r| size::SizeRequest::from_value(&r))
        .and_then(|r| size::size_str(input, &r));
    match sized {
        Ok(result) => serde_json::to_string(&result).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
}

/// In a dedicated worker: answers search requests and says it is ready. Elsewhere (a page importing the
/// module for the JS API): does nothing.
pub fn start() {
    let Ok(scope) = js_sys::global().dyn_into::<web_sys::DedicatedWorkerGlobalScope>() else { return };
    let reply_to = scope.clone();
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let data = ev.data();
        let field = |name: &str| js_sys::Reflect::get(&data, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
        let input = field("input").as_string().unwrap_or_default();
        // Any number: the core clamps `top` to limits::MAX_SEARCH_TOP and says so in the result's notes.
        let top = field("top").as_f64().unwrap_or(10.0).max(1.0) as usize;
        let clock = reply_to.performance();
        let t0 = clock.as_ref().map_or(0.0, |p| p.now());
        // A request with `size` is a cluster sizing; else a layout search.
        let output = match field("size").as_string() {
            Some(request) => size_text(&input, &request),
            None => search_text(&input, top),
        };
        let ms = clock.as_ref().map_or(0.0, |p| p.now()) - t0;
        let _ = reply_to.post_message(&message(&[("id", field("id")), ("output", output.into()), ("ms", ms.into())]));
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    let _ = scope.post_message(&message(&[("ready", JsValue::TRUE)]));
}

fn message(fields: &[(&str, JsValue)]) -> js_sys::Object {
    let o = js_sys::Object::new();
    for (k, v) in fields {
        let _ = js_sys::Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn size_text_sizes_or_explains() {
        let plan = r#"{"model":"llama-3.1-8b","cluster":{"gpu":"h100-sxm-80gb","gpus_per_node":8},"training":{"seq_length":8192,"global_batch_size":128}}"#;
        // 1,048,576,000 tokens at 128 × 8,192 a step: 1,000 steps on each of 1 and 2 nodes.
        let ok: serde_json::Value = serde_json::from_str(&super::size_text(plan, r#"{"tokens": 1048576000, "nodes": "1..2"}"#)).unwrap();
        let points = ok["points"].as_array().unwrap();
        assert_eq!(points.len(), 2);
        assert!(points.iter().all(|q| q["train_iters"] == 1000 && q["best"].is_object()), "{ok}");
        let bad: serde_json::Value = serde_json::from_str(&super::size_text(plan, r#"{"tokens": "0"}"#)).unwrap();
        assert_eq!(bad["error"]["code"], "size-zero-tokens");
        let bad: serde_json::Value = serde_json::from_str(&super::size_text(plan, "{nope")).unwrap();
        assert_eq!(bad["error"]["code"], "invalid-json");
    }

    #[test]
    fn the_js_apis_top_is_bounded_by_the_core() {
        // `search(input, top)` with top = u32::MAX: the core returns at most MAX_SEARCH_TOP candidates and a note.
        // Llama-3.1-8B on 8 GPUs has fewer valid layouts than that, so all of them come back, with the note.
        let out = super::search_text(
            r#"{"model":"llama-3.1-8b","cluster":{"gpu":"h100-sxm-80gb","gpus_per_node":8,"num_nodes":1},"training":{"seq_length":8192,"global_batch_size":128}}"#,
            u32::MAX as usize,
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["candidates"].as_array().unwrap().len() <= meshplan_core::limits::MAX_SEARCH_TOP);
        assert!(v["notes"][0].as_str().unwrap().contains("4294967295"), "{}", v["notes"]);
    }
}
