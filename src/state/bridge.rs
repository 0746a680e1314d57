//! The page and its tools module keep one plan between them. The tools module (`meshplan-tools.js`, see
//! [`crate::tools`]) holds the panels a first render does not need — the import box, Compare, the Advisor, the
//! exports, Explain an OOM, the schedule — and loads after the page has rendered, so that the page's own wasm
//! stays small. Two window events carry the state, as JSON text in the event's `detail`:
//! - `meshplan:state`, page → tools, after every change: the plan, the pinned baseline and the theme;
//! - `meshplan:edit`, tools → page: the plan and baseline after one of the tools' panels changed them;
//!
//! and `meshplan:tools-ready`, tools → page, once: send me the state. Each side applies only what differs, so a
//! change echoed back is a no-op.

use crate::browser;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

pub const STATE: &str = "meshplan:state";
pub const EDIT: &str = "meshplan:edit";
pub const READY: &str = "meshplan:tools-ready";

/// What crosses between the page and the tools module.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Shared {
    pub plan: Value,
    #[serde(default)]
    pub base: Option<Value>,
    #[serde(default)]
    pub dark: bool,
}

impl Shared {
    /// `text` read as serde's derived reader reads it, by hand from a `Value` (the page parses plans as `Value` anyway,
    /// so it links no typed serde reader; a native test checks the two agree).
    pub fn read(text: &str) -> Option<Shared> {
        let v: Value = serde_json::from_str(text).ok()?;
        // serde's derived reader takes an object by its keys, or an array of the fields in order.
        let (plan, base, dark) = match &v {
            Value::Object(o) => (o.get("plan"), o.get("base"), o.get("dark")),
            Value::Array(a) if a.len() <= 3 => (a.first(), a.get(1), a.get(2)),
            _ => return None,
        };
        let base = match base {
            None | Some(Value::Null) => None,
            Some(b) => Some(b.clone()),
        };
        let dark = match dark {
            None => false,
            Some(d) => d.as_bool()?,
        };
        Some(Shared { plan: plan?.clone(), base, dark })
    }
}

/// Sends `shared` as the `detail` of a window event named `name`.
pub fn send(name: &str, shared: &Shared) {
    let Some(w) = browser::window() else { return };
    let Ok(text) = serde_json::to_string(shared) else { return };
    let init = web_sys::CustomEventInit::new();
    init.set_detail(&JsValue::from_str(&text));
    if let Ok(ev) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
        let _ = w.dispatch_event(&ev);
    }
}

/// Calls `f` with what each window event named `name` carries (events that carry no readable state are dropped).
pub fn listen(name: &'static str, f: impl Fn(Option<Shared>) + 'static) {
    let Some(w) = browser::window() else { return };
    let handler = Closure::<dyn Fn(web_sys::Event)>::new(move |ev: web_sys::Event| {
        let shared = ev
            .dyn_ref::<web_sys::CustomEvent>()
            .and_then(|c| c.detail().as_string())
            .and_then(|t| Shared::read(&t));
        f(shared);
    });
    let _ = w.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
    // The listener lives as long as the page.
    handler.forget();
}

/// Sets `signal` to `value` unless it already holds it (an echo of one's own change costs nothing).
pub fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|old| *old != value) {
        signal.set(value);
    }
}

/// The page's half: sends its state to the tools module after every change, applies the tools' edits, and
/// loads the module (`meshplan-tools_loader.js` beside index.html) once the page has rendered.
pub fn serve_tools(plan: RwSignal<Value>, base: RwSignal<Option<Value>>, dark: Memo<bool>, notice: RwSignal<Option<String>>) {
    let state = move || Shared { plan: plan.get_untracked(), base: base.get_untracked(), dark: dark.get_untracked() };
    Effect::new(move |_| {
        plan.track();
        base.track();
        dark.track();
        send(STATE, &state());
    });
    listen(READY, move |_| {
        send(STATE, &state());
        // Tests and measurements wait for this: every panel is on the page.
        if let Some(app) = browser::element_by_id("app") {
            let _ = app.set_attribute("data-tools", "ready");
        }
    });
    listen(EDIT, move |shared| {
        if let Some(s) = shared {
            set_if_changed(plan, s.plan);
            set_if_changed(base, s.base);
        }
    });
    // After the first frame has painted: the next animation frame runs before that paint, a task queued from it after.
    let failed = move || {
        notice.set(Some(
            "The planner's tools (import, recipes, config.json, Compare, Advisor, exports, Explain an OOM, schedule, Advanced memory, the memory figures and sweep) did not load: serve \
             meshplan-tools_loader.js, meshplan-tools.js and meshplan-tools_bg.wasm beside index.html, then reload."
                .into(),
        ))
    };
    request_animation_frame(move || set_timeout(move || load_tools(failed), std::time::Duration::ZERO));
}

/// Adds `<script type="module" src="meshplan-tools_loader.js">` (Trunk's loader: imports `meshplan-tools.js` and starts it). A page
/// that cannot fetch it (copied without it) calls `failed` and goes on without the tools' panels.
fn load_tools(failed: impl Fn() + 'static) {
    let Some(doc) = browser::window().and_then(|w| w.document()) else { return };
    let (Ok(script), Some(head)) = (doc.create_element("script"), doc.head()) else { return };
    let _ = script.set_attribute("type", "module");
    let _ = script.set_attribute("src", "./meshplan-tools_loader.js");
    let on_error = Closure::<dyn Fn()>::new(failed);
    let _ = script.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
    // Fires at most once, for the page's life.
    on_error.forget();
    let _ = head.append_child(&script);
}

#[cfg(test)]
mod tests {
    use super::Shared;

    /// `Shared::read` reads what serde's derived reader reads, and refuses what it refuses.
    #[test]
    fn shared_reads_as_serde_reads_it() {
        for text in [
            r#"{"plan":{"model":"llama-3.1-8b"},"base":{"model":"x"},"dark":true}"#,
            r#"{"plan":{"model":"llama-3.1-8b"},"base":null,"dark":false}"#,
            r#"{"plan":1}"#,
            r#"{"plan":null,"extra":2}"#,
            r#"{"base":{}}"#,
            r#"{"plan":{},"dark":null}"#,
            r#"{"plan":{},"dark":1}"#,
            r#"[1]"#,
            r#"[]"#,
            r#"[{"model":"x"},null]"#,
            r#"[{"model":"x"},{"model":"y"},true]"#,
            r#"[{"model":"x"},null,true,4]"#,
            r#"[{},null,"no"]"#,
            r#""text""#,
            r#"null"#,
            r#"{nope"#,
        ] {
            assert_eq!(Shared::read(text), serde_json::from_str::<Shared>(text).ok(), "{text}");
        }
    }
}

