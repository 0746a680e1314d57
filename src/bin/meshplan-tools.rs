//! The tools module's entry point (see `meshplan_web::tools`): built by Trunk as `meshplan-tools.js`, loaded by the
//! page after its first render, and started again by the page as the Advisor's module Web Worker
//! (`meshplan_web::browser`), where it runs the layout search's message loop (`meshplan_search_worker`) instead of
//! the panels. It also carries the JS API: `plan`, `installRecipes` and `presets` below, `search` and `size` from
//! `meshplan_search_worker` (docs/web.md, "The JS API").

use wasm_bindgen::prelude::*;

/// In a worker: the search loop. On the planner's own page (`<body data-meshplan-app>`): the panels. Anywhere else (a
/// docs page importing this module for the JS API): nothing, so that the page gets the API alone.
fn main() {
    if meshplan_web::browser::in_worker() {
        meshplan_web::tools::start_worker(meshplan_search_worker::start);
    } else if meshplan_web::browser::is_planner_page() {
        meshplan_web::tools::start();
    }
}

/// Plans a plan file (JSON text) and returns the report as JSON text — the same report as
/// `meshplan plan FILE --format json`. Unreadable input returns `{"error": {code, message, fix}}`.
#[wasm_bindgen(js_name = plan)]
pub fn plan_js(input: &str) -> String {
    meshplan_web::api::plan_text(input)
}

/// Installs Megatron Bridge's recipes from the text of `bridge-recipes.json` (a docs page fetches it beside this
/// module) and returns how many there are: `plan` then takes tuned defaults and recipes as the CLI does.
#[wasm_bindgen(js_name = installRecipes)]
pub fn install_recipes_js(text: &str) -> usize {
    meshplan_web::api::install_recipes_text(text)
}

/// The model presets and the GPU catalogue, as `meshplan presets --format json` prints them.
#[wasm_bindgen(js_name = presets)]
pub fn presets_js() -> String {
    meshplan_web::api::presets_text()
}
