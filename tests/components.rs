//! Component tests: the app mounted in headless Chromium (wasm-bindgen-test).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

#[wasm_bindgen_test]
async fn app_mounts() {
    let host = document().create_element("div").unwrap();
    document().body().unwrap().append_child(&host).unwrap();
    let host: web_sys::HtmlElement = wasm_bindgen::JsCast::unchecked_into(host);
    let _handle = leptos::mount::mount_to(host.clone(), meshplan_web::App);
    leptos::task::tick().await;
    assert!(host.inner_html().contains("meshplan"));
}
