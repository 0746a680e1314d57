//! The page and its tools module keep one plan between them. The tools module (`meshplan-tools.js`, see
//! [`crate::tools`]) holds the panels a first render does not need — the import box, Compare, the Advisor, the
//! exports, Explain an OOM, the schedule — and loads after the page has rendered, so that the page's own wasm
//! stays small. The page is the one planner on the input path: an edit costs the tools module nothing until the
//! frame that shows it has painted. Window events carry the state:
//! - `meshplan:state`, page → tools, after every change: the page's revision number alone (`{"rev":N}`);
//! - `meshplan:pull`, tools → page, in a task after the frame that follows a new revision: the page answers by
//!   writing its state (the plan, the pinned baseline, the theme and the revision, as JSON text) into the event's
//!   `detail` object, so several edits within one frame cost the tools module one read and one plan;
//! - `meshplan:edit`, tools → page: the plan and baseline after one of the tools' panels changed them;
//! - `meshplan:hf-config`, page → tools, answered within the dispatch: a Hugging Face config.json mapped to Megatron
//!   fields by the tools module (the page's build has no families' mapping, see [`super::hf`]);
//!
//! and `meshplan:tools-ready`, tools → page, once: tell me the revision. Each side applies only what differs, so a
//! change echoed back is a no-op.

use crate::browser;
use leptos::prelude::*;
use crate::state::signal::effect;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

pub const STATE: &str = "meshplan:state";
pub const EDIT: &str = "meshplan:edit";
pub const READY: &str = "meshplan:tools-ready";
pub const PULL: &str = "meshplan:pull";
/// The property of a pull event's `detail` object the page writes its state into.
const PULLED: &str = "state";
/// The properties of an [`ask`] event's `detail` object: what is asked, and the answer written into it.
const QUESTION: &str = "question";
const ANSWER: &str = "answer";

/// What crosses between the page and the tools module.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug, Default)]
pub struct Shared {
    pub plan: Value,
    #[serde(default)]
    pub base: Option<Value>,
    #[serde(default)]
    pub dark: bool,
    /// The page's revision of this state: it counts the page's changes (plan, baseline, theme).
    #[serde(default)]
    pub rev: u64,
    /// How many times the page's Reset was pressed (the tools' panels clear their messages on it).
    #[serde(default)]
    pub resets: u64,
}

impl Shared {
    /// `text` read as serde's derived reader reads it, by hand from a `Value` (the page parses plans as `Value` anyway,
    /// so it links no typed serde reader; a native test checks the two agree).
    pub fn read(text: &str) -> Option<Shared> {
        let v: Value = serde_json::from_str(text).ok()?;
        // serde's derived reader takes an object by its keys, or an array of the fields in order.
        let (plan, base, dark, rev, resets) = match &v {
            Value::Object(o) => (o.get("plan"), o.get("base"), o.get("dark"), o.get("rev"), o.get("resets")),
            Value::Array(a) if a.len() <= 5 => (a.first(), a.get(1), a.get(2), a.get(3), a.get(4)),
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
        let count = |n: Option<&Value>| match n {
            None => Some(0),
            Some(r) => r.as_u64(),
        };
        Some(Shared { plan: plan?.clone(), base, dark, rev: count(rev)?, resets: count(resets)? })
    }
}

/// Pulls the page's state now, before a tools action reads the plan (Find layouts, Size the cluster): an edit made
/// within the frame before the click has not reached the tools' mirror yet, and the action must act on what the user
/// sees. The tools module provides it to its panels; panels mounted elsewhere (component tests) have none.
#[derive(Clone, Copy)]
pub struct CatchUp(Callback<()>);

impl CatchUp {
    pub fn new(pull: impl Fn() + Send + Sync + 'static) -> CatchUp {
        CatchUp(Callback::new(move |_| pull()))
    }

    /// The tools module's catch-up, if this component runs there (read when the component is made: an event handler
    /// has no owner to look it up from).
    pub fn from_context() -> Option<CatchUp> {
        use_context::<CatchUp>()
    }

    /// Brings the mirror up to the page's latest revision.
    pub fn run(self) {
        self.0.run(());
    }
}

/// The revision number a `meshplan:state` event carries (`{"rev":N}`), if it carries one.
pub fn read_rev(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text).ok()?.get("rev")?.as_u64()
}

/// Sends `text` as the `detail` of a window event named `name`.
pub fn send_text(name: &str, text: &str) {
    let Some(w) = browser::window() else { return };
    let init = web_sys::CustomEventInit::new();
    init.set_detail(&JsValue::from_str(text));
    if let Ok(ev) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
        let _ = w.dispatch_event(&ev);
    }
}

/// Sends `shared` as the `detail` of a window event named `name`.
pub fn send(name: &str, shared: &Shared) {
    if let Ok(text) = serde_json::to_string(shared) {
        send_text(name, &text);
    }
}

/// The tools' half of a pull: asks the page for its state (the page answers within the dispatch, see
/// [`serve_tools`]); `None` when no page answered or its answer is unreadable.
pub fn pull() -> Option<Shared> {
    Shared::read(&call(PULL, None, PULLED)?)
}

/// A call across the modules: dispatches window event `name` with `question` in its `detail` object and returns the
/// text a listener ([`answer`]) wrote there within the dispatch; `None` when no listener answered.
pub fn ask(name: &str, question: &str) -> Option<String> {
    call(name, Some(question), ANSWER)
}

/// Dispatches window event `name` with a fresh `detail` object (holding `question`, if any) and returns the text a
/// listener wrote under `key` before the dispatch returned.
fn call(name: &str, question: Option<&str>, key: &str) -> Option<String> {
    let w = browser::window()?;
    let detail = js_sys::Object::new();
    if let Some(q) = question {
        js_sys::Reflect::set(&detail, &JsValue::from_str(QUESTION), &JsValue::from_str(q)).ok()?;
    }
    let init = web_sys::CustomEventInit::new();
    init.set_detail(&detail);
    let ev = web_sys::CustomEvent::new_with_event_init_dict(name, &init).ok()?;
    w.dispatch_event(&ev).ok()?;
    js_sys::Reflect::get(&detail, &JsValue::from_str(key)).ok()?.as_string()
}

/// Answers each window event `name` ([`ask`]): writes `reply(question)` into its `detail` object.
pub fn answer(name: &'static str, reply: impl Fn(String) -> Option<String> + 'static) {
    answer_with(name, ANSWER, move |question| question.and_then(&reply));
}

/// Calls `f` with the text each window event named `name` carries in its `detail` (events without text are dropped).
pub fn listen_text(name: &'static str, f: impl Fn(String) + 'static) {
    let Some(w) = browser::window() else { return };
    let handler = Closure::<dyn Fn(web_sys::Event)>::new(move |ev: web_sys::Event| {
        if let Some(text) = ev.dyn_ref::<web_sys::CustomEvent>().and_then(|c| c.detail().as_string()) {
            f(text);
        }
    });
    let _ = w.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
    // The listener lives as long as the page.
    handler.forget();
}

/// Calls `f` with the revision number of each `meshplan:state` event.
pub fn listen_rev(f: impl Fn(u64) + 'static) {
    listen_text(STATE, move |text| {
        if let Some(rev) = read_rev(&text) {
            f(rev);
        }
    });
}

/// Calls `f` with what each window event named `name` carries (events that carry no readable state are dropped).
pub fn listen(name: &'static str, f: impl Fn(Option<Shared>) + 'static) {
    listen_text(name, move |text| f(Shared::read(&text)));
}

// Lives below both `state` and this file, so neither imports the other back.
pub use super::signal::set_if_changed;

/// The page's half: tells the tools module its revision after every change, answers its pulls with the state,
/// applies the tools' edits, and loads the module (`meshplan-tools_loader.js` beside index.html) once the page has
/// rendered. An edit costs the page one small event here: the tools module reads and plans the state after the frame.
pub fn serve_tools(editor: super::Editor, base: RwSignal<Option<Value>>, dark: Memo<bool>) {
    let (plan, notice, resets) = (editor.plan, editor.notice, editor.resets);
    let rev = StoredValue::new(0u64);
    let state = move || Shared {
        plan: plan.get_untracked(),
        base: base.get_untracked(),
        dark: dark.get_untracked(),
        rev: rev.get_value(),
        resets: resets.get_untracked(),
    };
    let send_rev = move || send_text(STATE, &format!("{{\"rev\":{}}}", rev.get_value()));
    effect(move || {
        plan.track();
        base.track();
        dark.track();
        resets.track();
        rev.update_value(|r| *r += 1);
        send_rev();
    });
    answer_pulls(move || serde_json::to_string(&state()).ok());
    listen(READY, move |_| {
        send_rev();
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

/// Answers each `meshplan:pull` by writing `state()` into the event's `detail` object.
fn answer_pulls(state: impl Fn() -> Option<String> + 'static) {
    answer_with(PULL, PULLED, move |_| state());
}

/// Answers each window event `name` by writing `reply(the detail's question)` into its `detail` object under `key`.
fn answer_with(name: &'static str, key: &'static str, reply: impl Fn(Option<String>) -> Option<String> + 'static) {
    let Some(w) = browser::window() else { return };
    let handler = Closure::<dyn Fn(web_sys::Event)>::new(move |ev: web_sys::Event| {
        let Some(detail) = ev.dyn_ref::<web_sys::CustomEvent>().map(|c| c.detail()) else { return };
        if !detail.is_object() {
            return;
        }
        let question = js_sys::Reflect::get(&detail, &JsValue::from_str(QUESTION)).ok().and_then(|q| q.as_string());
        if let Some(text) = reply(question) {
            let _ = js_sys::Reflect::set(&detail, &JsValue::from_str(key), &JsValue::from_str(&text));
        }
    });
    let _ = w.add_event_listener_with_callback(name, handler.as_ref().unchecked_ref());
    // The listener lives as long as the page.
    handler.forget();
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
    use super::{Shared, read_rev};

    /// A state event's revision: `{"rev":N}` as the page writes it; anything else is not one.
    #[test]
    fn rev_is_read_from_the_state_event() {
        assert_eq!(read_rev(r#"{"rev":42}"#), Some(42));
        assert_eq!(read_rev(r#"{"plan":{}}"#), None);
        assert_eq!(read_rev(r#"{"rev":"4"}"#), None);
        assert_eq!(read_rev("nope"), None);
    }

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
            r#"{"plan":{},"rev":7}"#,
            r#"{"plan":{},"rev":-1}"#,
            r#"{"plan":{},"rev":1.5}"#,
            r#"[{},null,false,3]"#,
            r#"[{},null,false,3,4]"#,
            r#"[{},null,false,3,4,5]"#,
            r#"{"plan":{},"resets":2}"#,
            r#"{"plan":{},"resets":"2"}"#,
            r#""text""#,
            r#"null"#,
            r#"{nope"#,
        ] {
            assert_eq!(Shared::read(text), serde_json::from_str::<Shared>(text).ok(), "{text}");
        }
    }
}

