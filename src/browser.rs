//! The few browser APIs the app uses: the URL hash and history, localStorage, the clipboard,
//! the colour scheme, timing, and the panic panel. Every call tolerates a missing API.

use wasm_bindgen::JsCast;

pub fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

pub fn hash() -> String {
    window().and_then(|w| w.location().hash().ok()).unwrap_or_default()
}

pub fn search() -> String {
    window().and_then(|w| w.location().search().ok()).unwrap_or_default()
}

/// Writes the hash: a new history entry when `push`, else replaces the current one.
pub fn write_hash(hash: &str, push: bool) {
    let Some(w) = window() else { return };
    let Ok(history) = w.history() else { return };
    let _ = if push {
        history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(hash))
    } else {
        history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(hash))
    };
}

/// The page's address without the hash or query, for share links.
pub fn page_url() -> String {
    window()
        .and_then(|w| {
            let l = w.location();
            Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
        })
        .unwrap_or_default()
}

fn storage() -> Option<web_sys::Storage> {
    window()?.local_storage().ok().flatten()
}

pub fn load(key: &str) -> Option<String> {
    storage()?.get_item(key).ok().flatten()
}

pub fn save(key: &str, value: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(key, value);
    }
}

pub fn copy_text(text: &str) {
    if let Some(w) = window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

pub fn prefers_dark() -> bool {
    window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// Calls `f` with the new value whenever the system colour scheme changes (the page stays open for good).
pub fn on_prefers_dark_change(f: impl Fn(bool) + 'static) {
    let Some(mql) = window().and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten()) else { return };
    let watched = mql.clone();
    let callback = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || f(watched.matches()));
    mql.set_onchange(Some(wasm_bindgen::JsCast::unchecked_ref(callback.as_ref())));
    // The listener lives as long as the page.
    callback.forget();
}

pub fn set_theme_attr(theme: &str) {
    if let Some(el) = window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = el.set_attribute("data-theme", theme);
    }
}

pub fn now_ms() -> f64 {
    window().and_then(|w| w.performance()).map(|p| p.now()).unwrap_or(0.0)
}

/// A performance mark, for scripts/measure-web.mjs and the DevTools timeline.
pub fn mark(name: &str) {
    if let Some(p) = window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// A performance measure from the mark `start` to now (only marks and measures: nothing reads them back).
pub fn measure(name: &str, start: &str) {
    if let Some(p) = window().and_then(|w| w.performance()) {
        let _ = p.measure_with_start_mark(name, start);
    }
}

pub fn device_pixel_ratio() -> f64 {
    window().map(|w| w.device_pixel_ratio()).unwrap_or(1.0)
}

/// Replaces the page with an error panel (text only, never markup).
pub fn show_error_panel(message: &str) {
    let Some(doc) = window().and_then(|w| w.document()) else { return };
    let Some(body) = doc.body() else { return };
    let Ok(panel) = doc.create_element("section") else { return };
    panel.set_id("panic-panel");
    let _ = panel.set_attribute("role", "alert");
    let _ = panel.set_attribute("class", "panic-panel");
    let make = |tag: &str, text: &str| {
        doc.create_element(tag).ok().inspect(|e| e.set_text_content(Some(text)))
    };
    for el in [
        make("h2", "meshplan stopped with an internal error"),
        make("p", "This is a bug in meshplan, not in your plan. Reload the page to start again; your plan is kept in the link."),
        make("pre", message),
    ]
    .into_iter()
    .flatten()
    {
        let _ = panel.append_child(&el);
    }
    if let Some(app) = doc.get_element_by_id("app") {
        let _ = app.set_attribute("hidden", "");
    }
    let _ = body.append_child(&panel);
}

/// Logs a panic to the console and shows the error panel instead of a dead page.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        web_sys::console::error_1(&msg.clone().into());
        show_error_panel(&msg);
    }));
}

pub fn canvas_context(canvas: &web_sys::HtmlCanvasElement) -> Option<web_sys::CanvasRenderingContext2d> {
    canvas.get_context("2d").ok().flatten()?.dyn_into().ok()
}
