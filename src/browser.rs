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

/// The first error in the Diagnostics panel, to bring into view.
pub fn first_error() -> Option<web_sys::HtmlElement> {
    window()?.document()?.query_selector("#diagnostics .diag.error").ok()??.dyn_into().ok()
}

/// The page's element with this id, as an HTML element.
pub fn element_by_id(id: &str) -> Option<web_sys::HtmlElement> {
    window()?.document()?.get_element_by_id(id)?.dyn_into().ok()
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

/// Writes `text` to the clipboard and calls `done` once the browser has answered: `Err` says in a sentence
/// why it did not write (no Clipboard API outside a secure context, a permissions policy, the user refusing).
// Promise callbacks, not an async fn: awaiting would bring an executor into the page's wasm (9.5 KB gzipped).
pub fn copy_text(text: &str, done: impl FnOnce(Result<(), String>) + 'static) {
    let Some(navigator) = window().map(|w| w.navigator()) else { return done(Err("There is no window".into())) };
    // `navigator.clipboard` is missing outside secure contexts: calling it would throw, not reject.
    if !js_sys::Reflect::has(&navigator, &"clipboard".into()).unwrap_or(false) {
        return done(Err("This page has no clipboard (it needs https or localhost)".into()));
    }
    let promise = navigator.clipboard().write_text(text);
    // Exactly one of the two callbacks runs; each frees itself when called (the other is left to the page).
    let done = std::rc::Rc::new(std::cell::Cell::new(Some(Box::new(done) as Box<dyn FnOnce(Result<(), String>)>)));
    let answer = move |result: Result<(), String>| {
        if let Some(done) = done.take() {
            done(result)
        }
    };
    let answer_too = answer.clone();
    let written = wasm_bindgen::closure::Closure::once_into_js(move |_: wasm_bindgen::JsValue| answer(Ok(())));
    let refused = wasm_bindgen::closure::Closure::once_into_js(move |e: wasm_bindgen::JsValue| {
        answer_too(Err(match js_field(&e, "name").as_string().as_deref() {
            Some("NotAllowedError") => "The browser blocked the clipboard".to_string(),
            Some(name) => format!("The clipboard write failed ({name})"),
            None => "The clipboard write failed".to_string(),
        }))
    });
    then(&promise, &written, &refused);
}

/// Fetches `url` (this page's own origin: the CSP allows no other) as text and calls `done` once: `Err` says in a
/// sentence why there is no text (no window, a network failure, an HTTP status). Promise callbacks, as in [`copy_text`].
pub fn fetch_text(url: &str, done: impl FnOnce(Result<String, String>) + 'static) {
    // The global's fetch: a window's, or a worker's (the tools module as the Advisor's worker fetches the recipes).
    let global = js_sys::global();
    let fetch = js_sys::Reflect::get(&global, &"fetch".into()).ok().and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    let Some(request) = fetch.and_then(|f| f.call1(&global, &url.into()).ok()) else {
        return done(Err("this context cannot fetch".into()));
    };
    let done = std::rc::Rc::new(std::cell::Cell::new(Some(Box::new(done) as Box<dyn FnOnce(Result<String, String>)>)));
    let answer = move |result: Result<String, String>| {
        if let Some(done) = done.take() {
            done(result)
        }
    };
    let (failed, failed_too, unread, read) = (answer.clone(), answer.clone(), answer.clone(), answer);
    let on_text = wasm_bindgen::closure::Closure::once_into_js(move |t: wasm_bindgen::JsValue| {
        read(t.as_string().ok_or_else(|| "the reply is not text".to_string()))
    });
    let on_unread = wasm_bindgen::closure::Closure::once_into_js(move |_: wasm_bindgen::JsValue| unread(Err("the reply could not be read".into())));
    let on_failure = wasm_bindgen::closure::Closure::once_into_js(move |e: wasm_bindgen::JsValue| {
        failed(Err(js_field(&e, "message").as_string().unwrap_or_else(|| "the request failed".into())))
    });
    let on_response = wasm_bindgen::closure::Closure::once_into_js(move |r: wasm_bindgen::JsValue| {
        if js_field(&r, "ok").as_bool() != Some(true) {
            let status = js_field(&r, "status").as_f64().unwrap_or(0.0);
            return failed_too(Err(format!("the server answered HTTP {status}")));
        }
        let text = js_sys::Reflect::get(&r, &"text".into()).ok().and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match text.and_then(|f| f.call0(&r).ok()) {
            Some(p) => then(&p, &on_text, &on_unread),
            None => failed_too(Err("the reply has no text".into())),
        }
    });
    then(&request, &on_response, &on_failure);
}

/// Whether this is the planner's own page (its `<body data-meshplan-app>`), not a docs page importing a module for
/// the JS API, nor a worker.
pub fn is_planner_page() -> bool {
    let body = window().and_then(|w| w.document()).and_then(|d| d.body());
    body.is_some_and(|b| b.has_attribute("data-meshplan-app"))
}

/// Whether this module runs in a dedicated Web Worker.
pub fn in_worker() -> bool {
    js_sys::global().has_type::<web_sys::DedicatedWorkerGlobalScope>()
}

/// `promise.then(ok, err)`.
fn then(promise: &wasm_bindgen::JsValue, ok: &wasm_bindgen::JsValue, err: &wasm_bindgen::JsValue) {
    if let Ok(then) = js_sys::Reflect::get(promise, &"then".into()).and_then(|f| f.dyn_into::<js_sys::Function>()) {
        let _ = then.call2(promise, ok, err);
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

/// What a layout search sends back: the search's JSON text and how long the search took in the worker (ms),
/// or why the worker could not answer.
pub type SearchReply = Result<(String, f64), String>;

/// The layout-search worker: the tools module itself (`meshplan-tools*.js`, whose entry point runs
/// `crates/search-worker`'s message loop in a worker, src/bin/meshplan-tools.rs), so that a visit downloads the core
/// once. Its core is compiled at opt-level 2 (cargo profile `tools`): at "z" the cluster sizing took 45% longer
/// (docs/web.md, "What went"). Started once, it answers one search at a time; a newer request supersedes an
/// unanswered one.
struct SearchWorker {
    worker: web_sys::Worker,
    ready: bool,
    /// A request posted before the worker said it was ready.
    queued: Option<js_sys::Object>,
    next_id: u32,
    waiting: Option<(u32, Box<dyn FnOnce(SearchReply)>)>,
}

thread_local! {
    static SEARCH_WORKER: std::cell::RefCell<Option<SearchWorker>> = const { std::cell::RefCell::new(None) };
}

const SEARCH_WORKER_URL: &str = "./meshplan-tools_loader.js";

fn js_object(fields: &[(&str, wasm_bindgen::JsValue)]) -> js_sys::Object {
    let o = js_sys::Object::new();
    for (k, v) in fields {
        let _ = js_sys::Reflect::set(&o, &wasm_bindgen::JsValue::from_str(k), v);
    }
    o
}

fn js_field(value: &wasm_bindgen::JsValue, name: &str) -> wasm_bindgen::JsValue {
    js_sys::Reflect::get(value, &wasm_bindgen::JsValue::from_str(name)).unwrap_or(wasm_bindgen::JsValue::UNDEFINED)
}

/// Answers the waiting request with `reply` (outside the worker's borrow, so the callback may search again).
fn answer(id: Option<u32>, reply: SearchReply) {
    let done = SEARCH_WORKER.with_borrow_mut(|w| {
        let w = w.as_mut()?;
        match (&w.waiting, id) {
            (Some((waiting, _)), Some(id)) if *waiting != id => None,
            _ => w.waiting.take().map(|(_, f)| f),
        }
    });
    if let Some(done) = done {
        done(reply);
    }
}

fn start_search_worker() -> Result<SearchWorker, String> {
    let opts = web_sys::WorkerOptions::new();
    opts.set_type(web_sys::WorkerType::Module);
    let worker = web_sys::Worker::new_with_options(SEARCH_WORKER_URL, &opts)
        .map_err(|e| format!("the search worker could not start: {}", e.as_string().unwrap_or_else(|| format!("{e:?}"))))?;
    let on_message = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::MessageEvent)>::new(|ev: web_sys::MessageEvent| {
        let data = ev.data();
        if js_field(&data, "ready").is_truthy() {
            let queued = SEARCH_WORKER.with_borrow_mut(|w| {
                let w = w.as_mut()?;
                w.ready = true;
                w.queued.take().map(|m| (w.worker.clone(), m))
            });
            if let Some((worker, m)) = queued {
                let _ = worker.post_message(&m);
            }
            return;
        }
        let id = js_field(&data, "id").as_f64().map(|x| x as u32);
        let output = js_field(&data, "output").as_string().unwrap_or_default();
        let ms = js_field(&data, "ms").as_f64().unwrap_or(0.0);
        answer(id, Ok((output, ms)));
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    // The worker's script failed to load or threw: whoever waits hears why, and the next search starts afresh.
    let on_error = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::Event)>::new(|ev: web_sys::Event| {
        let detail = ev.dyn_ref::<web_sys::ErrorEvent>().map(|e| e.message()).filter(|m| !m.is_empty());
        let stopped = SEARCH_WORKER.with_borrow_mut(|w| w.take());
        if let Some(w) = &stopped {
            w.worker.terminate();
        }
        let why = format!(
            "the search worker ({SEARCH_WORKER_URL}) stopped: {}",
            detail.unwrap_or_else(|| "its script or WebAssembly did not load".into())
        );
        if let Some((_, done)) = stopped.and_then(|w| w.waiting) {
            done(Err(why));
        }
    });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    Ok(SearchWorker { worker, ready: false, queued: None, next_id: 0, waiting: None })
}

/// Starts the search worker ahead of the first search, so that it has loaded by then.
pub fn warm_search_worker() {
    SEARCH_WORKER.with_borrow_mut(|w| {
        if w.is_none() {
            *w = start_search_worker().ok();
        }
    });
}

/// Runs `meshplan-core`'s search on `input` (a plan file's JSON) in the worker and calls `done` with its reply.
pub fn search_in_worker(input: String, top: usize, done: impl FnOnce(SearchReply) + 'static) {
    ask_worker(vec![("input", input.into()), ("top", (top as u32).into())], Box::new(done));
}

/// Runs `meshplan-core`'s cluster sizing on `input` (a plan file's JSON) and `request` (the sizing request's JSON) in
/// the worker and calls `done` with its reply (the sizing's JSON text).
pub fn size_in_worker(input: String, request: String, done: impl FnOnce(SearchReply) + 'static) {
    ask_worker(vec![("input", input.into()), ("size", request.into())], Box::new(done));
}

/// Posts one request (`fields` and an id) to the worker, starting it if needed; a newer request supersedes an
/// unanswered one.
fn ask_worker(fields: Vec<(&str, wasm_bindgen::JsValue)>, done: Box<dyn FnOnce(SearchReply)>) {
    let mut done = Some(done);
    let failed = SEARCH_WORKER.with_borrow_mut(|slot| {
        let w = match slot {
            Some(w) => w,
            None => match start_search_worker() {
                Ok(w) => slot.insert(w),
                Err(why) => return Some(why),
            },
        };
        w.next_id = w.next_id.wrapping_add(1);
        let id = w.next_id;
        let mut fields = fields;
        fields.push(("id", id.into()));
        let m = js_object(&fields);
        w.waiting = done.take().map(|f| (id, f));
        if w.ready {
            let _ = w.worker.post_message(&m);
        } else {
            w.queued = Some(m);
        }
        None
    });
    if let (Some(why), Some(done)) = (failed, done) {
        done(Err(why));
    }
}
