//! Component tests: the app mounted in headless Chromium (wasm-bindgen-test).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// A fresh host element, with no plan left in the URL or localStorage by another test.
fn host() -> web_sys::HtmlElement {
    let w = web_sys::window().unwrap();
    w.local_storage().unwrap().unwrap().clear().unwrap();
    w.history().unwrap().replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some("#")).unwrap();
    let host = document().create_element("div").unwrap();
    document().body().unwrap().append_child(&host).unwrap();
    host.unchecked_into()
}

fn find(host: &web_sys::HtmlElement, selector: &str) -> web_sys::Element {
    host.query_selector(selector).unwrap().unwrap_or_else(|| panic!("no {selector}"))
}

fn text(host: &web_sys::HtmlElement, selector: &str) -> String {
    find(host, selector).text_content().unwrap_or_default()
}

/// Waits (up to ~4 s, in 20 ms steps) until `selector` holds `needle`: the tools module reads the page's state in a
/// task after the next frame (src/state/bridge.rs, one plan per edit), so its panels fill in after a tick, not during it.
async fn wait_for_text(host: &web_sys::HtmlElement, selector: &str, needle: &str) -> String {
    for _ in 0..200 {
        if let Some(el) = host.query_selector(selector).unwrap() {
            let t = el.text_content().unwrap_or_default();
            if t.contains(needle) {
                return t;
            }
        }
        let sleep = js_sys::Promise::new(&mut |resolve, _| {
            web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 20).unwrap();
        });
        wasm_bindgen_futures::JsFuture::from(sleep).await.unwrap();
        leptos::task::tick().await;
    }
    panic!("{selector} never held {needle:?}")
}

async fn type_into(host: &web_sys::HtmlElement, selector: &str, value: &str) {
    let input: web_sys::HtmlInputElement = find(host, selector).unchecked_into();
    input.set_value(value);
    input.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    leptos::task::tick().await;
}

#[wasm_bindgen_test]
async fn the_default_plan_renders_its_report() {
    let host = host();
    let _app = leptos::mount::mount_to(host.clone(), meshplan_web::App);
    // The exports are the tools module's (src/tools.rs): started here in the same wasm, it mounts into the page's
    // slots and mirrors the page's plan through the bridge's events, as the loaded module does.
    meshplan_web::tools::start();
    leptos::task::tick().await;
    assert_eq!(text(&host, "#d-world-size"), "16");
    assert_eq!(text(&host, "#d-dp"), "4");
    let grid = find(&host, "#grid-dense");
    assert_eq!(grid.get_attribute("data-cells").as_deref(), Some("16"));
    assert_eq!(grid.get_attribute("data-groups").as_deref(), Some("8"));
    assert!(find(&host, "#stage-chart").inner_html().starts_with("<svg"));
    wait_for_text(&host, "#export-bridge", "cfg.model.tensor_model_parallel_size = 2").await;
    assert!(text(&host, "#status").contains("valid"));
}

#[wasm_bindgen_test]
async fn editing_a_field_rerenders_and_writes_the_share_link() {
    let host = host();
    let _app = leptos::mount::mount_to(host.clone(), meshplan_web::App);
    leptos::task::tick().await;
    type_into(&host, "#f-parallelism-tensor-model-parallel-size", "4").await;
    assert_eq!(text(&host, "#d-dp"), "2");
    assert_eq!(find(&host, "#grid-dense").get_attribute("data-groups").as_deref(), Some("4"));
    // The URL and localStorage follow after 150 ms without edits.
    sleep_ms(250).await;
    let hash = web_sys::window().unwrap().location().hash().unwrap();
    let plan = meshplan_web::state::share::decode_shared(meshplan_web::state::share::hash_param(&hash, "plan").unwrap()).unwrap();
    assert_eq!(plan["parallelism"]["tensor_model_parallel_size"], 4);
    let kept = web_sys::window().unwrap().local_storage().unwrap().unwrap().get_item("meshplan.plan").unwrap().unwrap();
    assert!(kept.contains("\"tensor_model_parallel_size\":4"));
}

#[wasm_bindgen_test]
async fn invalid_values_are_flagged_with_fixes() {
    let host = host();
    let _app = leptos::mount::mount_to(host.clone(), meshplan_web::App);
    leptos::task::tick().await;
    type_into(&host, "#f-parallelism-tensor-model-parallel-size", "3").await;
    assert!(text(&host, "#status").contains("error"));
    let diag = find(&host, r#"li[data-code="heads-not-divisible-by-tp"]"#);
    let button: web_sys::HtmlElement = diag.query_selector("button.apply").unwrap().unwrap().unchecked_into();
    button.click();
    leptos::task::tick().await;
    assert_eq!(text(&host, "#d-dp"), "4");
}

#[wasm_bindgen_test]
fn the_error_panel_shows_text_never_markup() {
    meshplan_web::browser::show_error_panel("boom <img src=x>");
    let panel = document().get_element_by_id("panic-panel").unwrap();
    assert!(panel.text_content().unwrap().contains("boom <img src=x>"));
    assert!(panel.query_selector("img").unwrap().is_none());
    assert_eq!(panel.get_attribute("role").as_deref(), Some("alert"));
    panel.remove();
}

async fn sleep_ms(ms: i32) {
    let wait = js_sys::Promise::new(&mut |resolve, _| {
        let _ = web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(wait).await;
}
