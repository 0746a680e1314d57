//! The planner's components. One source of truth, the plan document (`Store::plan`); the
//! core's report is a memo over it; effects only sync the URL hash and localStorage.

use crate::fields::{self, FieldInfo};
use crate::plan_doc::{self, default_plan, display_value, get, typed_value};
use crate::{advisor, browser, charts, grid};
use leptos::prelude::*;
use meshplan_core::layout::{GroupKind, Layout};
use meshplan_core::presets::{self, Catalog};
use meshplan_core::plan::Recompute;
use meshplan_core::search::{CandidateTraining, SearchResult};
use meshplan_core::{Code, ExportKind, InputError, Report, Severity, export};
use serde_json::Value;
use std::sync::OnceLock;

pub type Outcome = Result<Report, InputError>;

const STORAGE_KEY: &str = "meshplan.plan";
const THEME_KEY: &str = "meshplan.theme";

/// The app's state, shared through context.
#[derive(Clone, Copy)]
pub struct Store {
    pub plan: RwSignal<Value>,
    pub outcome: Memo<Outcome>,
    /// The resolved plan (every default filled in) as JSON, addressed by the same paths.
    pub resolved: Memo<Value>,
    pub notice: RwSignal<Option<String>>,
    pub theme: RwSignal<String>,
    pub dark: Memo<bool>,
    /// The GPU under the pointer or keyboard focus.
    pub hover: RwSignal<Option<u32>>,
    pub embed: bool,
}

impl Store {
    pub fn edit(&self, path: &str, value: Value) {
        self.plan.update(|p| plan_doc::set(p, path, value));
    }

    fn flags(&self) -> Vec<(&'static str, &'static str)> {
        if self.embed { vec![("embed", "1")] } else { vec![] }
    }

    pub fn share_link(&self) -> String {
        let flags: Vec<(&str, &str)> = Vec::new();
        format!("{}{}", browser::page_url(), plan_doc::encode_hash(&self.plan.get_untracked(), &flags))
    }
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(presets::catalog)
}

fn store() -> Store {
    expect_context::<Store>()
}

/// The whole planner.
#[component]
pub fn App() -> impl IntoView {
    let hash = browser::hash();
    let embed = plan_doc::hash_param(&hash, "embed").is_some() || plan_doc::hash_param(&browser::search(), "embed").is_some();
    let (initial, notice) = plan_doc::initial_plan(&hash, browser::load(STORAGE_KEY).as_deref());
    let plan = RwSignal::new(initial);
    let outcome = Memo::new(move |_| plan.with(meshplan_core::plan_value));
    let resolved = Memo::new(move |_| {
        outcome.with(|o| o.as_ref().ok().and_then(|r| serde_json::to_value(&r.plan).ok()).unwrap_or(Value::Null))
    });
    let theme = RwSignal::new(browser::load(THEME_KEY).unwrap_or_else(|| "system".into()));
    // The system scheme is outside state: a signal the media query's change event keeps in step.
    let system_dark = RwSignal::new(browser::prefers_dark());
    browser::on_prefers_dark_change(move |d| system_dark.set(d));
    let dark = Memo::new(move |_| match theme.get().as_str() {
        "dark" => true,
        "light" => false,
        _ => system_dark.get(),
    });
    let store = Store { plan, outcome, resolved, notice: RwSignal::new(notice), theme, dark, hover: RwSignal::new(None), embed };
    provide_context(store);

    // The plan → the URL hash (edits within a second share one history entry) and localStorage.
    // The write waits for 150 ms without edits: history.replaceState costs milliseconds per call, too much
    // to pay on every keystroke (it was half of an edit's time at 1,024 GPUs).
    let last_push = StoredValue::new(f64::NEG_INFINITY);
    let first = StoredValue::new(true);
    let ticket = StoredValue::new(0u64);
    let sync_url = move || {
        let text = plan.with_untracked(|p| p.to_string());
        let hash = plan.with_untracked(|p| plan_doc::encode_hash(p, &store.flags()));
        if hash != browser::hash() {
            let now = browser::now_ms();
            let push = !first.get_value() && now - last_push.get_value() > 1000.0;
            browser::write_hash(&hash, push);
            if push {
                last_push.set_value(now);
            }
        }
        first.set_value(false);
        browser::save(STORAGE_KEY, &text);
    };
    Effect::new(move |_| {
        plan.track();
        let mine = ticket.get_value() + 1;
        ticket.set_value(mine);
        if first.get_value() {
            sync_url();
            return;
        }
        set_timeout(
            move || {
                if ticket.try_get_value() == Some(mine) {
                    sync_url();
                }
            },
            std::time::Duration::from_millis(150),
        );
    });
    // Back/forward and edited links → the plan.
    let follow = move || {
        let hash = browser::hash();
        let Some(param) = plan_doc::hash_param(&hash, "plan") else { return };
        match plan_doc::decode_shared(param) {
            Ok(v) => {
                if plan.with_untracked(|p| *p != v) {
                    plan.set(v);
                }
            }
            Err(plan_doc::Rejected(why)) => {
                store.notice.set(Some(format!("The link was not opened: {why}. Showing the default plan instead.")));
                plan.set(default_plan());
            }
        }
    };
    let _ = window_event_listener(leptos::ev::popstate, move |_| follow());
    let _ = window_event_listener(leptos::ev::hashchange, move |_| follow());
    Effect::new(move |_| {
        let t = theme.get();
        browser::save(THEME_KEY, &t);
        browser::set_theme_attr(&t);
    });

    view! {
        <div id="app" data-ready="" class:embed=embed>
            <Header />
            <Notice />
            {move || store.outcome.with(|o| o.as_ref().err().cloned()).map(|e| view! { <InputErrorPanel error=e /> })}
            <div class="layout">
                <div class="inputs">
                    {(!embed).then(|| view! { <ModelPanel /> <ClusterPanel /> <TrainingPanel /> })}
                    <ParallelismPanel />
                </div>
                <div class="results">
                    <DerivedPanel />
                    <DiagnosticsPanel />
                    <GridPanel />
                    <MemoryPanel />
                    {(!embed).then(|| view! { <AdvisorPanel /> <ExportPanel /> })}
                </div>
            </div>
        </div>
    }
}

#[component]
fn Header() -> impl IntoView {
    let s = store();
    let status = move || {
        s.outcome.with(|o| match o {
            Err(_) => ("bad", "cannot plan".to_string()),
            Ok(r) => {
                let errors = r.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
                if errors == 0 { ("ok", "✓ valid plan".to_string()) } else { ("bad", format!("✗ {errors} error{}", if errors == 1 { "" } else { "s" })) }
            }
        })
    };
    let copied = RwSignal::new(false);
    view! {
        <header class="top">
            <h1>"meshplan"<span class="tagline">" — Megatron-Core parallelism planner"</span></h1>
            <span id="status" class=move || format!("status {}", status().0) role="status">{move || status().1}</span>
            <div class="actions">
                {if s.embed {
                    view! { <a class="button" href=move || s.share_link() target="_blank" rel="noopener">"Open the full planner ↗"</a> }.into_any()
                } else {
                    view! {
                        <button id="copy-link" on:click=move |_| { browser::copy_text(&s.share_link()); copied.set(true); }>
                            {move || if copied.get() { "Link copied ✓" } else { "Copy share link" }}
                        </button>
                        <button id="reset" on:click=move |_| { s.plan.set(default_plan()); s.notice.set(None); }>"Reset"</button>
                        <label class="inline" for="theme">"Theme"</label>
                        <select id="theme" on:change=move |ev| s.theme.set(event_target_value(&ev)) prop:value=move || s.theme.get()>
                            <option value="system">"System"</option>
                            <option value="light">"Light"</option>
                            <option value="dark">"Dark"</option>
                        </select>
                    }.into_any()
                }}
            </div>
        </header>
    }
}

#[component]
fn Notice() -> impl IntoView {
    let s = store();
    move || {
        s.notice.get().map(|text| {
            view! {
                <div id="notice" class="notice" role="alert">
                    <span>{text}</span>
                    <button on:click=move |_| s.notice.set(None) aria-label="Dismiss the notice">"×"</button>
                </div>
            }
        })
    }
}

#[component]
fn InputErrorPanel(error: InputError) -> impl IntoView {
    view! {
        <section id="input-error" class="panel diag error" role="alert">
            <h2>"The plan cannot be read"</h2>
            <p><code>{error.code.as_str()}</code>" "{error.message}</p>
            <p class="fix">"Fix: "{error.fix}</p>
        </section>
    }
}

// ---------- controls ----------

fn is_flagged(s: Store, path: &'static str) -> Memo<bool> {
    Memo::new(move |_| {
        s.outcome.with(|o| {
            o.as_ref().is_ok_and(|r| r.diagnostics.iter().any(|d| d.severity == Severity::Error && d.apply.iter().any(|a| a.path == path)))
        })
    })
}

fn field_id(path: &str) -> String {
    format!("f-{}", path.replace(['.', '_'], "-"))
}

/// What a text box for `path` shows: the plan's value, and the resolved value (greyed) for when that is
/// empty. Memos, so that an edit elsewhere in the plan leaves the box alone (a property set by a closure
/// is written on every run, equal or not).
fn field_text(s: Store, path: &'static str) -> (Memo<String>, Memo<String>) {
    (Memo::new(move |_| s.plan.with(|p| display_value(get(p, path)))), Memo::new(move |_| s.resolved.with(|v| display_value(get(v, path)))))
}

/// A labelled text box for one plan field: any value can be typed; the core flags what is wrong.
#[component]
fn TextField(info: &'static FieldInfo) -> impl IntoView {
    let s = store();
    let path = info.path;
    let id = field_id(path);
    let flagged = is_flagged(s, path);
    let (value, resolved) = field_text(s, path);
    view! {
        <div class="field" class:flagged=move || flagged.get()>
            <label for=id.clone() title=info.tooltip()>{info.label}" "<code>{info.megatron()}</code></label>
            <input id=id type="text" inputmode="numeric" autocomplete="off" spellcheck="false"
                title=info.tooltip()
                aria-invalid=move || if flagged.get() { "true" } else { "false" }
                placeholder=resolved
                prop:value=value
                on:input=move |ev| s.edit(path, typed_value(&event_target_value(&ev))) />
        </div>
    }
}

#[component]
fn CheckField(info: &'static FieldInfo) -> impl IntoView {
    let s = store();
    let path = info.path;
    let id = field_id(path);
    let checked = Memo::new(move |_| {
        s.plan.with(|p| get(p, path).and_then(Value::as_bool)).or_else(|| s.resolved.with(|v| get(v, path).and_then(Value::as_bool))).unwrap_or(false)
    });
    view! {
        <div class="field check">
            <input id=id.clone() type="checkbox" title=info.tooltip() prop:checked=checked
                on:change=move |ev| s.edit(path, Value::Bool(event_target_checked(&ev))) />
            <label for=id title=info.tooltip()>{info.label}" "<code>{info.megatron()}</code></label>
        </div>
    }
}

#[component]
fn SelectField(info: &'static FieldInfo, options: Vec<(String, String)>) -> impl IntoView {
    let s = store();
    let path = info.path;
    let id = field_id(path);
    let current = Memo::new(move |_| {
        s.plan.with(|p| get(p, path).map(|v| display_value(Some(v)))).unwrap_or_else(|| s.resolved.with(|v| display_value(get(v, path))))
    });
    view! {
        <div class="field">
            <label for=id.clone() title=info.tooltip()>{info.label}" "<code>{info.megatron()}</code></label>
            <select id=id title=info.tooltip() prop:value=current on:change=move |ev| s.edit(path, Value::String(event_target_value(&ev)))>
                {options.into_iter().map(|(value, text)| view! { <option value=value.clone() selected=move || current.with(|c| *c == value)>{text}</option> }).collect_view()}
            </select>
        </div>
    }
}

fn options(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

// ---------- input panels ----------

fn billions(n: u64) -> String {
    if n >= 1_000_000_000_000 {
        format!("{:.2} T", n as f64 / 1e12)
    } else if n >= 1_000_000_000 {
        format!("{:.2} B", n as f64 / 1e9)
    } else {
        format!("{:.0} M", n as f64 / 1e6)
    }
}

#[component]
fn ModelPanel() -> impl IntoView {
    let s = store();
    let mode = Memo::new(move |_| {
        s.plan.with(|p| match p.get("model") {
            Some(Value::Object(m)) if m.contains_key("hf_config") => "hf",
            Some(Value::Object(_)) => "fields",
            _ => "preset",
        })
    });
    let query = RwSignal::new(String::new());
    let current_key = Memo::new(move |_| s.resolved.with(|v| display_value(get(v, "model_key"))));
    let set_mode = move |m: &str| match m {
        "preset" => {
            let key = s.plan.with_untracked(|p| p.pointer("/model/preset").and_then(Value::as_str).map(str::to_string));
            let key = key.unwrap_or_else(|| current_key.get_untracked());
            let key = if presets::model(&key).is_some() { key } else { "llama-3.1-8b".into() };
            s.edit("model", Value::String(key));
        }
        "fields" => {
            let key = s.plan.with_untracked(|p| p.get("model").and_then(Value::as_str).map(str::to_string));
            if let Some(k) = key {
                s.edit("model", serde_json::json!({ "preset": k }));
            } else if mode.get_untracked() == "hf" {
                s.edit("model", serde_json::json!({ "preset": "llama-3.1-8b" }));
            }
        }
        _ => {}
    };
    let hf_text = RwSignal::new(String::new());
    let hf_error = RwSignal::new(None::<String>);
    let use_hf = move |_| match serde_json::from_str::<Value>(&hf_text.get_untracked()) {
        Ok(v) if v.is_object() => {
            hf_error.set(None);
            s.edit("model", serde_json::json!({ "hf_config": v }));
        }
        Ok(_) => hf_error.set(Some("a config.json is a JSON object".into())),
        Err(e) => hf_error.set(Some(format!("not valid JSON: {e}"))),
    };
    let hf_open = RwSignal::new(false);
    let matches = move || {
        let q = query.get().to_lowercase();
        catalog()
            .models
            .iter()
            .filter(|m| q.is_empty() || m.name.to_lowercase().contains(&q) || m.key.contains(&q) || m.hf_id.to_lowercase().contains(&q))
            .map(|m| {
                let params = if m.moe {
                    format!("{} total · {} active", billions(m.total_parameters), billions(m.active_parameters))
                } else {
                    billions(m.total_parameters)
                };
                (m.key.clone(), format!("{} — {params}", m.name))
            })
            .collect::<Vec<_>>()
    };
    view! {
        <section class="panel" id="model-panel" aria-labelledby="model-h">
            <h2 id="model-h">"Model"</h2>
            <p class="summary">{move || s.resolved.with(|v| display_value(get(v, "model_name")))}
                " · "{move || s.outcome.with(|o| o.as_ref().map(|r| billions(r.derived.total_parameters)).unwrap_or_default())}" parameters"</p>
            <div class="field">
                <label for="model-search">"Search presets"</label>
                <input id="model-search" type="search" placeholder="name, key or Hugging Face id"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
            </div>
            <div class="field">
                <label for="model-preset" title="The model preset: Megatron TransformerConfig fields of a published model">"Preset"</label>
                <select id="model-preset" size="6" on:change=move |ev| { s.edit("model", Value::String(event_target_value(&ev))); }>
                    {move || matches().into_iter().map(|(key, text)| {
                        let k = key.clone();
                        view! { <option value=key selected=move || mode.get() == "preset" && current_key.with(|c| *c == k)>{text}</option> }
                    }).collect_view()}
                </select>
            </div>
            <details open=move || mode.get() == "fields" on:toggle=move |ev| {
                let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
                if open && mode.get_untracked() == "preset" { set_mode("fields") }
            }>
                <summary>"Edit Megatron fields"</summary>
                <p class="hint">"Empty fields keep the preset's value (shown greyed)."</p>
                <div class="fields">{fields::MODEL.iter().map(|info| view! { <TextField info /> }).collect_view()}</div>
                <button on:click=move |_| set_mode("preset")>"Back to the plain preset"</button>
            </details>
            <details prop:open=move || hf_open.get() || mode.get() == "hf" on:toggle=move |ev| hf_open.set(event_target::<web_sys::HtmlDetailsElement>(&ev).open())>
                <summary>"Paste a Hugging Face config.json"</summary>
                <label for="hf-config">"config.json"</label>
                <textarea id="hf-config" rows="6" spellcheck="false" placeholder="{ \"architectures\": [\"LlamaForCausalLM\"], ... }"
                    prop:value=move || hf_text.get() on:input=move |ev| hf_text.set(event_target_value(&ev))></textarea>
                <button id="use-hf" on:click=use_hf>"Use this config"</button>
                {move || hf_error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
            </details>
        </section>
    }
}

#[component]
fn ClusterPanel() -> impl IntoView {
    let s = store();
    let gpus = options(&[]).into_iter().chain(catalog().gpus.iter().map(|g| (g.key.clone(), g.name.clone()))).collect::<Vec<_>>();
    let gpu = move || s.outcome.with(|o| o.as_ref().ok().map(|r| r.plan.gpu.clone()));
    let total_id = "f-cluster-num-gpus";
    let total = Memo::new(move |_| s.outcome.with(|o| o.as_ref().map(|r| r.derived.world_size.to_string()).unwrap_or_default()));
    view! {
        <section class="panel" id="cluster-panel" aria-labelledby="cluster-h">
            <h2 id="cluster-h">"Cluster"</h2>
            <SelectField info=&fields::GPU options=gpus />
            {move || gpu().map(|g| view! {
                <p class="gpu-facts">
                    {format!("{:.0} GB {} · {:.2} TB/s · {:.0} BF16 TFLOP/s", g.memory_gb, g.memory_type, g.hbm_bandwidth_tbps, g.dense_bf16_tflops)}
                    {g.dense_fp8_tflops.map(|t| format!(" · {t:.0} FP8 TFLOP/s"))}
                    {g.scale_up_bw_gbps.map(|b| format!(" · {} {b:.0} GB/s", g.scale_up))}
                    {format!(" · NVLink domain {}", g.nvlink_domain_size)}
                </p>
            })}
            <div class="fields">
                {fields::CLUSTER.iter().map(|info| view! { <TextField info /> }).collect_view()}
                <div class="field">
                    <label for=total_id title="Total GPUs = GPUs per node × nodes; typing it sets the node count">"Total GPUs"</label>
                    <input id=total_id type="text" inputmode="numeric" title="Total GPUs = GPUs per node × nodes; typing it sets the node count"
                        prop:value=total
                        on:change=move |ev| {
                            if let Ok(total) = event_target_value(&ev).trim().parse::<u64>() {
                                let gpn = s.outcome.with_untracked(|o| o.as_ref().map(|r| r.plan.cluster.gpus_per_node).unwrap_or(8)).max(1);
                                s.edit("cluster.num_nodes", Value::from(total.div_ceil(gpn).max(1)));
                            }
                        } />
                </div>
            </div>
        </section>
    }
}

#[component]
fn TrainingPanel() -> impl IntoView {
    view! {
        <section class="panel" id="training-panel" aria-labelledby="training-h">
            <h2 id="training-h">"Training"</h2>
            <div class="fields">
                {fields::TRAINING.iter().map(|info| view! { <TextField info /> }).collect_view()}
                <SelectField info=&fields::RECOMPUTE options=options(&[("none", "none"), ("selective", "selective"), ("full", "full")]) />
                <SelectField info=&fields::PRECISION options=options(&[("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "fp8"), ("fp4", "fp4"), ("fp32", "fp32")]) />
                <CheckField info=&fields::DISTRIBUTED_OPTIMIZER />
            </div>
        </section>
    }
}

#[component]
fn ParallelismPanel() -> impl IntoView {
    let s = store();
    let order_id = field_id(fields::ORDER.path);
    let (order, resolved_order) = field_text(s, fields::ORDER.path);
    view! {
        <section class="panel" id="parallelism-panel" aria-labelledby="parallelism-h">
            <h2 id="parallelism-h">"Parallelism"</h2>
            <div class="fields">
                {fields::PARALLELISM.iter().map(|info| view! { <TextField info /> }).collect_view()}
                <CheckField info=&fields::SEQUENCE_PARALLEL />
                <div class="field">
                    <label for=order_id.clone() title=fields::ORDER.tooltip()>{fields::ORDER.label}" "<code>"order"</code></label>
                    <input id=order_id list="orders" type="text" spellcheck="false" title=fields::ORDER.tooltip()
                        placeholder=resolved_order
                        prop:value=order
                        on:input=move |ev| s.edit(fields::ORDER.path, typed_value(&event_target_value(&ev))) />
                    <datalist id="orders">
                        <option value="tp-cp-ep-dp-pp"></option>
                        <option value="tp-cp-ep-pp-dp"></option>
                        <option value="tp-pp-dp"></option>
                    </datalist>
                </div>
            </div>
        </section>
    }
}

// ---------- result panels ----------

#[component]
fn DiagnosticsPanel() -> impl IntoView {
    let s = store();
    // A memo: most edits leave the diagnostics as they were, and then the list is not rebuilt.
    let items = Memo::new(move |_| s.outcome.with(|o| o.as_ref().map(|r| r.diagnostics.clone()).unwrap_or_default()));
    view! {
        <section class="panel" id="diagnostics" aria-labelledby="diagnostics-h">
            <h2 id="diagnostics-h">"Diagnostics"</h2>
            <ul class="diags">
                {move || items.get().into_iter().map(|d| {
                    let sev = match d.severity { Severity::Error => "error", Severity::Warning => "warning", Severity::Info => "info" };
                    let icon = match d.severity { Severity::Error => "✗ error", Severity::Warning => "! warning", Severity::Info => "i info" };
                    let apply = d.apply.clone();
                    view! {
                        <li class=format!("diag {sev}") data-code=d.code.as_str()>
                            <span class="sev">{icon}</span>" "
                            <code class="code">{d.code.as_str()}</code>
                            <p class="message">{d.message.clone()}</p>
                            <p class="fix">"Fix: "{d.fix.clone()}</p>
                            {(!apply.is_empty()).then(|| {
                                let text = apply.iter().map(|a| format!("{} = {}", a.path.rsplit('.').next().unwrap_or(&a.path), a.value)).collect::<Vec<_>>().join(", ");
                                view! {
                                    <button class="apply" on:click=move |_| for a in &apply { s.edit(&a.path, a.value.clone()) }>
                                        "Apply: "{text}
                                    </button>
                                }
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// "— (does not divide)" for a size that is 0 because the mesh does not divide the world.
fn per(n: u64) -> String {
    if n == 0 { "— (does not divide)".to_string() } else { n.to_string() }
}

/// One derived figure: element id, label, and its value from the report.
type Figure = (&'static str, &'static str, fn(&Report) -> String);

const DERIVED: [Figure; 11] = [
    ("world-size", "World size", |r| r.derived.world_size.to_string()),
    ("dp", "Data parallel (DP)", |r| per(r.derived.data_parallel_size)),
    ("edp", "Expert data parallel", |r| per(r.derived.expert_data_parallel_size)),
    ("min-gpus", "Minimum GPUs: PP·max(TP·CP, EP·ETP)", |r| r.derived.min_gpus.to_string()),
    ("nodes-needed", "Nodes needed", |r| r.derived.nodes_needed.to_string()),
    ("microbatches", "Microbatches per step", |r| r.derived.num_microbatches.to_string()),
    ("bubble", "Pipeline bubble", |r| format!("{:.1}%", r.derived.pipeline_bubble_fraction * 100.0)),
    ("total-params", "Total parameters", |r| billions(r.derived.total_parameters)),
    ("active-params", "Active parameters", |r| billions(r.derived.active_parameters)),
    ("layers-per-stage", "Layers per stage", |r| r.derived.layers_per_stage.iter().map(u64::to_string).collect::<Vec<_>>().join(" · ")),
    ("peak", "Peak memory per GPU", |r| {
        let m = &r.memory;
        format!("{} of {}{}", gib(m.peak_bytes), gib(m.gpu_memory_bytes), if m.fits { "" } else { " — does not fit" })
    }),
];

#[component]
fn DerivedPanel() -> impl IntoView {
    let s = store();
    // The rows stay put while the plan can be read; an edit updates the values whose text changed.
    let readable = Memo::new(move |_| s.outcome.with(Result::is_ok));
    view! {
        <section class="panel" id="derived" aria-labelledby="derived-h">
            <h2 id="derived-h">"Derived"</h2>
            <dl class="derived">
                {move || readable.get().then(|| DERIVED.iter().map(|&(id, label, value)| view! {
                    <div class="kv" data-key=id><dt>{label}</dt>
                        <dd id=format!("d-{id}")>{move || s.outcome.with(|o| o.as_ref().map(value).unwrap_or_default())}</dd></div>
                }).collect_view())}
            </dl>
        </section>
    }
}

// ---------- the GPU grid ----------

const DENSE_KINDS: [GroupKind; 4] = [GroupKind::Tp, GroupKind::Cp, GroupKind::Dp, GroupKind::Pp];
const EXPERT_KINDS: [GroupKind; 4] = [GroupKind::Ep, GroupKind::Etp, GroupKind::Edp, GroupKind::Pp];

fn kind_short(k: GroupKind) -> &'static str {
    match k {
        GroupKind::Tp => "TP",
        GroupKind::Cp => "CP",
        GroupKind::Dp => "DP",
        GroupKind::DpCp => "DP×CP",
        GroupKind::Pp => "PP stage",
        GroupKind::TpPp => "TP×PP",
        GroupKind::Ep => "EP",
        GroupKind::Etp => "ETP",
        GroupKind::Edp => "expert DP",
    }
}

/// The fill of a rank for a kind: its pipeline stage for PP, else which group holds it.
fn fill_index(layout: &Layout, kind: GroupKind, rank: u32) -> u32 {
    let g = layout.group_index(kind, rank).unwrap_or(0);
    if kind == GroupKind::Pp { position(layout, kind, g, rank) } else { g as u32 }
}

fn position(layout: &Layout, kind: GroupKind, group: usize, rank: u32) -> u32 {
    layout.groups_of(kind).get(group).and_then(|m| m.iter().position(|&r| r == rank)).unwrap_or(0) as u32
}

/// "ranks 0–7", "ranks 0, 8, …, 56 (every 8th)" or the first few.
fn describe_ranks(ranks: &[u32]) -> String {
    match ranks {
        [] => "no ranks".into(),
        [r] => format!("rank {r}"),
        [a, b, ..] => {
            let stride = b.wrapping_sub(*a);
            let regular = ranks.windows(2).all(|w| w[1].wrapping_sub(w[0]) == stride);
            let last = ranks[ranks.len() - 1];
            match (regular, stride) {
                (true, 1) => format!("ranks {a}–{last}"),
                (true, _) if ranks.len() > 3 => format!("ranks {a}, {b}, …, {last} (every {stride})"),
                _ if ranks.len() <= 6 => format!("ranks {}", ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
                _ => format!("ranks {}, … ({} in all)", ranks[..4].iter().map(u32::to_string).collect::<Vec<_>>().join(", "), ranks.len()),
            }
        }
    }
}

/// The grid's height at most, in CSS pixels.
const GRID_HEIGHT: u32 = 560;

#[component]
fn GridPanel() -> impl IntoView {
    let s = store();
    let moe = move || s.outcome.with(|o| o.as_ref().is_ok_and(|r| r.plan.model.is_moe()));
    let mesh = RwSignal::new("dense".to_string());
    let dense_kind = RwSignal::new(GroupKind::Tp);
    let expert_kind = RwSignal::new(GroupKind::Ep);
    // Both meshes at half height each, so that both fit on the screen.
    let grid_height = move || if mesh.get() == "both" { GRID_HEIGHT / 2 } else { GRID_HEIGHT };
    let kind_select = |id: &'static str, label: &'static str, kinds: [GroupKind; 4], sig: RwSignal<GroupKind>| {
        view! {
            <div class="field inline-field">
                <label for=id>{label}</label>
                <select id=id on:change=move |ev| {
                    let v = event_target_value(&ev);
                    if let Some(k) = kinds.iter().find(|k| k.key() == v) { sig.set(*k) }
                }>
                    {kinds.iter().map(|k| {
                        let k = *k;
                        view! { <option value=k.key() selected=move || sig.get() == k>{format!("{} — {}", kind_short(k), k.label())}</option> }
                    }).collect_view()}
                </select>
            </div>
        }
    };
    view! {
        <section class="panel" id="grid-panel" aria-labelledby="grid-h">
            <h2 id="grid-h">"GPU grid"</h2>
            <div class="grid-controls">
                <fieldset class="mesh">
                    <legend>"Mesh"</legend>
                    {[("dense", "Dense (TP·CP·DP·PP)"), ("expert", "Expert (ETP·EP·EDP·PP)"), ("both", "Both")].into_iter().map(|(v, text)| view! {
                        <label class="radio"><input type="radio" name="mesh" value=v prop:checked=move || mesh.get() == v
                            on:change=move |_| mesh.set(v.to_string()) />{text}</label>
                    }).collect_view()}
                </fieldset>
                {move || (mesh.get() != "expert").then(|| kind_select("color-dense", "Colour dense mesh by", DENSE_KINDS, dense_kind))}
                {move || (mesh.get() != "dense").then(|| kind_select("color-expert", "Colour expert mesh by", EXPERT_KINDS, expert_kind))}
            </div>
            {move || (mesh.get() != "dense" && !moe()).then(|| view! { <p class="hint">"This model has no experts: the expert mesh still exists, with EP = 1."</p> })}
            <div class="grids">
                {move || (mesh.get() != "expert").then(|| view! { <GridCanvas id="grid-dense" kind=dense_kind.into() title="Dense mesh" max_height=grid_height() /> })}
                {move || (mesh.get() != "dense").then(|| view! { <GridCanvas id="grid-expert" kind=expert_kind.into() title="Expert mesh" max_height=grid_height() /> })}
            </div>
            <GridInfo />
        </section>
    }
}

/// The width of an element in CSS pixels, 0 until it is mounted: measured once mounted, and again when
/// the window has stopped resizing for 100 ms (a drag redraws once, not on every event).
fn element_width(node: NodeRef<leptos::html::Div>) -> ReadSignal<u32> {
    let width = RwSignal::new(0u32);
    let measure = move || {
        let Some(el) = node.try_get_untracked().flatten() else { return };
        let w = el.client_width().clamp(0, 1 << 14) as u32;
        if w > 0 && width.try_get_untracked() != Some(w) {
            width.try_set(w);
        }
    };
    Effect::new(move |_| {
        if node.get().is_some() {
            measure();
        }
    });
    let ticket = StoredValue::new(0u64);
    let resize = window_event_listener(leptos::ev::resize, move |_| {
        let Some(mine) = ticket.try_update_value(|t| {
            *t += 1;
            *t
        }) else {
            return;
        };
        set_timeout(move || if ticket.try_get_value() == Some(mine) { measure() }, std::time::Duration::from_millis(100));
    });
    // The listener outlives nothing: an unmounted chart or canvas (switching meshes) takes it along.
    on_cleanup(move || resize.remove());
    width.read_only()
}

#[component]
fn GridCanvas(id: &'static str, kind: Signal<GroupKind>, title: &'static str, max_height: u32) -> impl IntoView {
    let s = store();
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let wrap = NodeRef::<leptos::html::Div>::new();
    let width = element_width(wrap);
    let scale = browser::device_pixel_ratio().round().clamp(1.0, 2.0) as u32;
    let geom = Memo::new(move |_| {
        let w = width.get();
        if w == 0 {
            return None;
        }
        s.outcome.with(|o| {
            o.as_ref().ok().map(|r| {
                let world = r.derived.world_size.min(1 << 24) as u32;
                grid::geometry(world, r.plan.cluster.gpus_per_node.min(1 << 16) as u32, w.clamp(200, 1600), max_height, scale)
            })
        })
    });
    // What the picture depends on: the mesh sizes, the order and the NVLink domain fix every rank group, so
    // edits elsewhere (batch, recompute, model fields) do not redraw the grid.
    let mesh_key = Memo::new(move |_| {
        s.outcome.with(|o| {
            o.as_ref().ok().map(|r| {
                let par = &r.plan.parallelism;
                let sizes = [r.derived.world_size, r.plan.cluster.gpus_per_node, r.plan.cluster.nvlink_domain_size, par.tp(), par.pp(), par.cp(), par.ep(), par.etp()];
                (sizes, r.layout.as_ref().map(|l| l.order.clone()))
            })
        })
    });
    // Draw: one putImageData of the whole grid, then labels when cells are large.
    Effect::new(move |_| {
        let Some(el) = canvas.get() else { return };
        let Some(g) = geom.get() else { return };
        let k = kind.get();
        let hover = s.hover.get();
        let dark = s.dark.get();
        mesh_key.track();
        s.outcome.with_untracked(|o| {
            let Ok(r) = o else { return };
            draw_grid(&el, &g, r, k, hover, dark);
        });
    });
    let pick = move |ev: &web_sys::MouseEvent| {
        let g = geom.get_untracked()?;
        let unit = g.hit(ev.offset_x().max(0) as u32 * g.scale, ev.offset_y().max(0) as u32 * g.scale)?;
        Some(g.rank_of(unit))
    };
    let key = move |ev: leptos::ev::KeyboardEvent| {
        let Some(g) = geom.get_untracked() else { return };
        let unit = g.unit_of(s.hover.get_untracked().unwrap_or(0));
        let next = match ev.key().as_str() {
            "ArrowRight" => g.step(unit, 1, 0),
            "ArrowLeft" => g.step(unit, -1, 0),
            "ArrowDown" => g.step(unit, 0, 1),
            "ArrowUp" => g.step(unit, 0, -1),
            "Home" => 0,
            "End" => g.units - 1,
            "Escape" => {
                s.hover.set(None);
                return;
            }
            _ => return,
        };
        ev.prevent_default();
        s.hover.set(Some(g.rank_of(next)));
    };
    let summary = move || {
        let k = kind.get();
        s.outcome.with(|o| match o {
            Ok(r) => match &r.layout {
                Some(l) => format!(
                    "{title}: {} GPUs in {} nodes, coloured by {}: {} groups. Arrow keys move between GPUs.",
                    r.derived.world_size,
                    r.plan.cluster.num_nodes,
                    kind_short(k),
                    l.groups_of(k).len()
                ),
                None => format!("{title}: {} GPUs; the mesh sizes do not divide the world size, so there are no rank groups", r.derived.world_size),
            },
            Err(_) => format!("{title}: no plan"),
        })
    };
    view! {
        <figure class="grid-figure">
            <figcaption>{title}" — coloured by "{move || kind_short(kind.get())}
                {move || geom.get().filter(|g| g.aggregated()).map(|g| format!(" (one cell per node of {} GPUs)", g.unit))}</figcaption>
            <div class="canvas-wrap" node_ref=wrap>
                <canvas id=id node_ref=canvas tabindex="0" role="img"
                    aria-label=summary
                    data-cells=move || geom.get().map(|g| g.units).unwrap_or(0)
                    data-unit=move || geom.get().map(|g| g.unit).unwrap_or(1)
                    data-cell=move || geom.get().map(|g| g.cell / g.scale).unwrap_or(0)
                    data-kind=move || kind.get().key()
                    data-groups=move || s.outcome.with(|o| o.as_ref().ok().and_then(|r| r.layout.as_ref().map(|l| l.groups_of(kind.get()).len())).unwrap_or(0))
                    on:mousemove=move |ev| { let r = pick(&ev); if r.is_some() && r != s.hover.get_untracked() { s.hover.set(r) } }
                    on:mouseleave=move |_| s.hover.set(None)
                    on:focus=move |_| if s.hover.get_untracked().is_none() { s.hover.set(Some(0)) }
                    on:keydown=key></canvas>
            </div>
            <GridLegend kind />
        </figure>
    }
}

fn draw_grid(el: &web_sys::HtmlCanvasElement, g: &grid::Geometry, r: &Report, kind: GroupKind, hover: Option<u32>, dark: bool) {
    el.set_width(g.width);
    el.set_height(g.height);
    // CSS size through CSSOM: the CSP forbids style attributes.
    let css = web_sys::HtmlElement::style(el);
    let _ = css.set_property("width", &format!("{}px", g.width / g.scale));
    let _ = css.set_property("height", &format!("{}px", g.height / g.scale));
    let Some(ctx) = browser::canvas_context(el) else { return };
    let domain = r.plan.cluster.nvlink_domain_size.clamp(1, u32::MAX as u64) as u32;
    let layout = r.layout.as_ref();
    let crossing: Vec<bool> = layout
        .map(|l| l.groups_of(kind).iter().map(|m| m.first().is_some_and(|f| m.iter().any(|x| x / domain != f / domain))).collect())
        .unwrap_or_default();
    let fill_of = |rank: u32| layout.map_or(7, |l| fill_index(l, kind, rank));
    let crosses = |rank: u32| layout.and_then(|l| l.group_index(kind, rank)).is_some_and(|gi| crossing.get(gi).copied().unwrap_or(false));
    let hovered_group = hover.and_then(|h| layout.and_then(|l| l.group_index(kind, h)));
    let same = |rank: u32| layout.and_then(|l| l.group_index(kind, rank)) == hovered_group;
    let highlight: Option<&dyn Fn(u32) -> bool> = if hovered_group.is_some() { Some(&same) } else { None };
    let paint = grid::Paint { fill_of: &fill_of, crosses: &crosses, nvlink_domain: domain, highlight, focus: hover.map(|h| g.unit_of(h)), dark };
    let mut px = grid::render(g, &paint);
    if let Ok(img) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(wasm_bindgen::Clamped(&mut px[..]), g.width, g.height) {
        let _ = ctx.put_image_data(&img, 0.0, 0.0);
    }
    if g.labelled() && layout.is_some() {
        ctx.set_font(&format!("{}px sans-serif", 11 * g.scale));
        ctx.set_text_align("center");
        ctx.set_text_baseline("middle");
        for unit in 0..g.units {
            let rank = g.rank_of(unit);
            let n = fill_of(rank);
            let (rgb, _) = grid::fill(n);
            let light = (rgb[0] as u32 * 299 + rgb[1] as u32 * 587 + rgb[2] as u32 * 114) / 1000 > 140;
            ctx.set_fill_style_str(if light { "#111" } else { "#fff" });
            let (x, y) = g.origin(unit);
            let _ = ctx.fill_text(&n.to_string(), (x + g.cell / 2) as f64, (y + g.cell / 2) as f64);
        }
    }
}

#[component]
fn GridLegend(kind: Signal<GroupKind>) -> impl IntoView {
    let s = store();
    // A memo: the legend changes with the mesh or the kind, not with most edits.
    let entries = Memo::new(move |_| {
        let k = kind.get();
        s.outcome.with(|o| {
            let Some(l) = o.as_ref().ok().and_then(|r| r.layout.as_ref()) else { return (Vec::new(), String::new()) };
            let groups = l.groups_of(k);
            if k == GroupKind::Pp {
                let stages = groups.first().map_or(1, Vec::len) as u32;
                let items = (0..stages.min(24)).map(|i| (i, format!("stage {i}"))).collect();
                return (items, format!("{stages} pipeline stages; cells show their stage number"));
            }
            let items = groups.iter().enumerate().take(24).map(|(i, m)| (i as u32, format!("{} {i}: {}", kind_short(k), describe_ranks(m)))).collect();
            let size = groups.first().map_or(0, Vec::len);
            let note = format!("{} groups of {size}{}", groups.len(), if groups.len() > 24 { "; fills repeat every 24" } else { "" });
            (items, note)
        })
    });
    view! {
        <div class="legend">
            <p class="legend-note">{move || entries.with(|e| e.1.clone())}" · ◥ marks a group that spans more than one NVLink domain; the strip under each GPU alternates by NVLink domain."</p>
            <ul class="swatches">
                {move || entries.with(|e| e.0.clone()).into_iter().map(|(i, text)| {
                    view! {
                        <li><span class="swatch" aria-hidden="true" inner_html=grid::swatch_svg(i)></span>{text}</li>
                    }
                }).collect_view()}
            </ul>
        </div>
    }
}

#[component]
fn GridInfo() -> impl IntoView {
    let s = store();
    let info = move || {
        let rank = s.hover.get()?;
        s.outcome.with(|o| {
            let r = o.as_ref().ok()?;
            let gpn = r.plan.cluster.gpus_per_node.max(1);
            let domain = r.plan.cluster.nvlink_domain_size.max(1);
            let head = format!(
                "GPU rank {rank} · node {} · local GPU {} · NVLink domain {}",
                rank as u64 / gpn,
                rank as u64 % gpn,
                rank as u64 / domain
            );
            let rows: Vec<(String, String)> = r
                .layout
                .as_ref()
                .map(|l| {
                    GroupKind::all()
                        .iter()
                        .filter_map(|&k| {
                            let gi = l.group_index(k, rank)?;
                            let members = l.groups_of(k).get(gi)?;
                            let pos = position(l, k, gi, rank);
                            Some((format!("{} ({})", kind_short(k), k.key()), format!("group {gi} · coordinate {pos} of {} · {}", members.len(), describe_ranks(members))))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some((head, rows))
        })
    };
    view! {
        <div id="grid-info" class="grid-info" aria-live="polite">
            {move || match info() {
                None => view! { <p class="hint">"Hover over a GPU, or focus the grid and use the arrow keys, to see its rank, coordinates and groups."</p> }.into_any(),
                Some((head, rows)) => view! {
                    <p id="grid-info-head"><strong>{head}</strong></p>
                    <table class="coords">
                        <tbody>{rows.into_iter().map(|(k, v)| view! { <tr><th scope="row">{k}</th><td>{v}</td></tr> }).collect_view()}</tbody>
                    </table>
                }.into_any(),
            }}
        </div>
    }
}

// ---------- memory ----------

const SWEEPS: [(&str, &str, &[u64]); 4] = [
    ("parallelism.tensor_model_parallel_size", "TP", &[1, 2, 4, 8, 16]),
    ("parallelism.pipeline_model_parallel_size", "PP", &[1, 2, 4, 8, 16, 32]),
    ("training.micro_batch_size", "Micro-batch", &[1, 2, 4, 8, 16]),
    ("training.seq_length", "Sequence length", &[2048, 4096, 8192, 16384, 32768, 65536, 131072]),
];

#[component]
fn MemoryPanel() -> impl IntoView {
    let s = store();
    // Each chart's inputs as a memo: an edit that leaves them equal does not redraw the chart.
    let stages = Memo::new(move |_| {
        s.outcome.with(|o| {
            let m = &o.as_ref().ok()?.memory;
            let stages: Vec<[u64; 5]> =
                m.stages.iter().map(|st| [st.parameters_bytes, st.gradients_bytes, st.optimizer_bytes, st.activations_bytes, st.overhead_bytes]).collect();
            Some((stages, m.gpu_memory_bytes))
        })
    });
    let capacity = Memo::new(move |_| s.outcome.with(|o| o.as_ref().map(|r| r.memory.gpu_memory_bytes).unwrap_or(0)));
    let bars = move |w| stages.with(|st| st.as_ref().map(|(st, cap)| charts::stage_bars(st, *cap, s.dark.get(), (w, 300))).unwrap_or_default());
    let sweep_field = RwSignal::new(0usize);
    // The sweep re-plans the whole plan once per point (5 re-plans of 16,384 GPUs take 20 ms), so it
    // runs in a task after the edit's frame: the frame callback makes that order certain (Chromium
    // already paints first after an input event; a task queued right away may run first elsewhere).
    // A stale sweep (typing went on) is dropped.
    let points = RwSignal::new(Vec::<charts::SweepPoint>::new());
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let (path, _, values) = SWEEPS[sweep_field.get().min(SWEEPS.len() - 1)];
        let plan = s.plan.get();
        let ticket = generation.get_value() + 1;
        generation.set_value(ticket);
        let sweep = move || {
            if generation.try_get_value() != Some(ticket) {
                return;
            }
            browser::mark("meshplan-sweep-start");
            let pts = values
                .iter()
                .map(|&v| {
                    let mut q = plan.clone();
                    plan_doc::set(&mut q, path, Value::from(v));
                    // Memory alone: the sweep needs no rules, rank groups or step time.
                    let m = meshplan_core::report::memory_value(&q).ok();
                    charts::SweepPoint { value: v, peak_bytes: m.as_ref().map(|m| m.peak_bytes), fits: m.is_some_and(|m| m.fits) }
                })
                .collect::<Vec<_>>();
            if points.try_with_untracked(|p| *p != pts) == Some(true) {
                points.set(pts);
            }
            browser::measure("meshplan-sweep", "meshplan-sweep-start");
        };
        request_animation_frame(move || set_timeout(sweep, std::time::Duration::ZERO));
    });
    let sweep_svg = move |w| {
        let (path, _, _) = SWEEPS[sweep_field.get().min(SWEEPS.len() - 1)];
        points.with(|pts| charts::sweep(pts, path.rsplit('.').next().unwrap_or(path), capacity.get(), s.dark.get(), (w, 260)))
    };
    let sweep_note = move || {
        points.with(|pts| {
            let fit: Vec<String> = pts.iter().filter(|p| p.fits).map(|p| p.value.to_string()).collect();
            if fit.is_empty() { "Fits at none of these values.".to_string() } else { format!("Fits at {}.", fit.join(", ")) }
        })
    };
    let table = move || {
        s.outcome.with(|o| {
            o.as_ref().map(|r| {
                r.memory
                    .stages
                    .iter()
                    .map(|st| {
                        view! {
                            <tr>
                                <td>{st.pipeline_rank}</td><td>{st.num_layers}</td>
                                <td>{gib(st.parameters_bytes)}</td><td>{gib(st.gradients_bytes)}</td><td>{gib(st.optimizer_bytes)}</td>
                                <td>{gib(st.activations_bytes)}</td><td>{gib(st.overhead_bytes)}</td><td><strong>{gib(st.total_bytes)}</strong></td>
                            </tr>
                        }
                    })
                    .collect_view()
            }).ok()
        })
    };
    view! {
        <section class="panel" id="memory" aria-labelledby="memory-h">
            <h2 id="memory-h">"Memory per GPU, by pipeline stage"</h2>
            <Chart id="stage-chart" label="Stacked bars of memory per pipeline stage against the GPU's capacity" draw=bars />
            <ul class="chart-legend">
                {charts::TERMS.iter().enumerate().map(|(i, t)| view! { <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(i))></span>{*t}</li> }).collect_view()}
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>
                    {move || s.outcome.with(|o| o.as_ref().map(|r| format!("GPU memory ({})", gib(r.memory.gpu_memory_bytes))).unwrap_or_default())}</li>
            </ul>
            <details>
                <summary>"Figures per stage"</summary>
                <table class="memory-table">
                    <thead><tr><th>"stage"</th><th>"layers"</th>{charts::TERMS.iter().map(|t| view! { <th>{*t}</th> }).collect_view()}<th>"total"</th></tr></thead>
                    <tbody>{table}</tbody>
                </table>
            </details>
            <div class="field inline-field">
                <label for="sweep-field">"Sweep peak memory over"</label>
                <select id="sweep-field" on:change=move |ev| sweep_field.set(event_target_value(&ev).parse().unwrap_or(0))>
                    {SWEEPS.iter().enumerate().map(|(i, (_, label, _))| view! { <option value=i.to_string()>{*label}</option> }).collect_view()}
                </select>
            </div>
            <Chart id="sweep-chart" label="Peak memory against the swept field; filled points fit" draw=sweep_svg />
            <ul class="chart-legend">
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(0))></span>"peak memory per GPU: ● fits, ○ does not"</li>
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>"GPU memory"</li>
            </ul>
            <p id="sweep-note" class="hint">{sweep_note}</p>
        </section>
    }
}

/// A plotters chart drawn at the width of its column, as the inner HTML of a div. `draw` gets the width
/// in CSS pixels and should read memos of exactly the chart's inputs: the SVG is a memo over them and the
/// width, so an edit that changes neither leaves the chart alone.
#[component]
fn Chart(id: &'static str, label: &'static str, draw: impl Fn(u32) -> String + Send + Sync + 'static) -> impl IntoView {
    let node = NodeRef::<leptos::html::Div>::new();
    let width = element_width(node);
    let svg = Memo::new(move |_| match width.get() {
        0 => String::new(),
        w => draw(w),
    });
    view! { <div id=id node_ref=node class="chart" role="img" aria-label=label inner_html=svg></div> }
}

fn swatch_box(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><rect width="14" height="14" fill="{colour}"/></svg>"#)
}

fn swatch_line(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><path d="M0 7H14" stroke="{colour}" stroke-width="3"/></svg>"#)
}

// ---------- advisor ----------

/// How many ranked layouts the Advisor shows.
const ADVISOR_TOP: usize = 10;

#[derive(Clone)]
enum Advice {
    Idle,
    Searching,
    /// A search's result, the search input it was for (see [`advisor::search_input`]) and how long it took.
    Done { result: std::sync::Arc<SearchResult>, input: Value, ms: f64 },
    Failed(InputError),
}

/// The input error a search reply carries (`{"error": {code, message, fix}}`), or one saying the reply was unreadable.
fn search_error(json: &str) -> InputError {
    serde_json::from_str::<Value>(json)
        .ok()
        .and_then(|v| serde_json::from_value(v.get("error")?.clone()).ok())
        .unwrap_or_else(|| InputError::new(Code::SearchWorker, "the search worker's reply is not a search result", "reload the page"))
}

fn seconds(x: f64) -> String {
    if x < 1.0 { format!("{:.0} ms", x * 1e3) } else { format!("{x:.2} s") }
}

fn recompute_text(t: &CandidateTraining) -> &'static str {
    match t.recompute_granularity {
        Recompute::None => "none",
        Recompute::Selective => "selective",
        Recompute::Full => "full",
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[component]
fn AdvisorPanel() -> impl IntoView {
    let s = store();
    let advice = RwSignal::new(Advice::Idle);
    let searching = move || advice.with(|a| matches!(a, Advice::Searching));
    let run = move |_| {
        if advice.with_untracked(|a| matches!(a, Advice::Searching)) {
            return;
        }
        advice.set(Advice::Searching);
        let plan = s.plan.get_untracked();
        let input = advisor::search_input(&plan);
        // The search runs in the worker: the page keeps painting and answering input meanwhile.
        browser::search_in_worker(plan.to_string(), ADVISOR_TOP, move |reply| {
            advice.try_set(match reply {
                Ok((json, ms)) => match serde_json::from_str::<SearchResult>(&json) {
                    Ok(result) => Advice::Done { result: std::sync::Arc::new(result), input, ms },
                    Err(_) => Advice::Failed(search_error(&json)),
                },
                Err(why) => Advice::Failed(InputError::new(Code::SearchWorker, why, "reload the page; if it persists, serve meshplan-search*.js and .wasm beside index.html")),
            });
        });
    };
    // Load the worker while the user reads the page, so the first search does not wait for it.
    Effect::new(|_| browser::warm_search_worker());
    let result = move || advice.with(|a| if let Advice::Done { result, .. } = a { Some(result.clone()) } else { None });
    let stale = move || advice.with(|a| matches!(a, Advice::Done { input, .. } if s.plan.with(|p| advisor::search_input(p) != *input)));
    let status = move || {
        advice.with(|a| match a {
            Advice::Idle => "Searches TP, PP, VPP, CP, EP, ETP, SP, micro-batch size, recompute and the distributed optimizer for this model, cluster and batch, and ranks the layouts that fit by predicted throughput.".to_string(),
            Advice::Searching => "searching…".to_string(),
            Advice::Failed(e) => format!("The search could not run: {} Fix: {}", e.message, e.fix),
            Advice::Done { result: r, ms, .. } => {
                let mut t = format!("Evaluated {} layouts, {} valid", r.evaluated, r.valid);
                if r.pruned_by_memory > 0 {
                    t.push_str(&format!(", {} more skipped as too large", r.pruned_by_memory));
                }
                t.push_str(&format!(" — searched in {ms:.0} ms."));
                if r.candidates.is_empty() {
                    match r.smallest_peak_bytes {
                        Some(b) => t.push_str(&format!(" None fits: the smallest needs {} per GPU of {}.", gib(b), gib(r.gpu_memory_bytes))),
                        None => t.push_str(" No layout passes the rules for this world size."),
                    }
                } else {
                    t.push_str(&format!(" The best {} by tokens/s per GPU:", r.candidates.len()));
                }
                t
            }
        })
    };
    let counts = move || advice.with(|a| if let Advice::Done { result: r, ms, .. } = a { (r.evaluated.to_string(), r.valid.to_string(), format!("{ms:.1}")) } else { Default::default() });
    let moe = move || s.outcome.with_untracked(|o| o.as_ref().is_ok_and(|r| r.plan.model.is_moe()));
    let rows = move || {
        let Some(r) = result() else { return ().into_any() };
        r.candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (par, tr) = (c.parallelism.clone(), c.training.clone());
                let (p2, t2) = (par.clone(), tr.clone());
                let current = Memo::new(move |_| s.plan.with(|p| advisor::is_applied(p, &p2, &t2, moe())));
                let rank = i + 1;
                let label = format!(
                    "Apply layout {rank}: TP {}, PP {}, CP {}, EP {}, micro-batch {}",
                    par.tensor_model_parallel_size, par.pipeline_model_parallel_size, par.context_parallel_size, par.expert_model_parallel_size, tr.micro_batch_size
                );
                let shown: Vec<String> = c.why.iter().take(2).cloned().collect();
                let more: Vec<String> = c.why.iter().skip(2).cloned().collect();
                let split = match (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage) {
                    (Some(f), _) => format!(" (first stage {f} layers)"),
                    (_, Some(l)) => format!(" (last stage {l} layers)"),
                    _ => String::new(),
                };
                let (apply_par, apply_tr) = (par.clone(), tr.clone());
                view! {
                    <tr class="candidate" class:current=move || current.get() data-tp=par.tensor_model_parallel_size>
                        <th scope="row">{rank}</th>
                        <td>{par.tensor_model_parallel_size}</td>
                        <td title=split.clone()>{par.pipeline_model_parallel_size}{(!split.is_empty()).then_some("*")}</td>
                        <td>{par.virtual_pipeline_model_parallel_size.map_or("—".to_string(), |v| v.to_string())}</td>
                        <td>{par.context_parallel_size}</td>
                        <td>{par.expert_model_parallel_size}</td>
                        <td>{par.expert_tensor_parallel_size}</td>
                        <td>{yes_no(par.sequence_parallel)}</td>
                        <td>{tr.micro_batch_size}</td>
                        <td>{recompute_text(&tr)}</td>
                        <td>{yes_no(tr.use_distributed_optimizer)}</td>
                        <td>{seconds(c.step_time_s)}</td>
                        <td>{format!("{:.0}", c.tokens_per_s_per_gpu)}</td>
                        <td>{format!("{:.1}%", c.mfu * 100.0)}</td>
                        <td>{format!("{:.1}", c.peak_bytes as f64 / (1u64 << 30) as f64)}</td>
                        <td>
                            {move || if current.get() {
                                view! { <span class="current-mark">"current"</span> }.into_any()
                            } else {
                                let (par, tr) = (apply_par.clone(), apply_tr.clone());
                                view! {
                                    <button class="apply-layout" aria-label=label.clone()
                                        on:click=move |_| { let m = moe(); s.plan.update(|p| advisor::apply_candidate(p, &par, &tr, m)) }>"Apply"</button>
                                }.into_any()
                            }}
                        </td>
                    </tr>
                    <tr class="why-row" class:current=move || current.get()>
                        <td></td>
                        <td colspan="15" class="why">
                            <span class="why-label">"why: "</span>{shown.join(" · ")}
                            {(!more.is_empty()).then(|| view! {
                                <details>
                                    <summary>{format!("{} more reason{}", more.len(), if more.len() == 1 { "" } else { "s" })}</summary>
                                    <ul>{more.into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
                                </details>
                            })}
                        </td>
                    </tr>
                }
            })
            .collect_view()
            .into_any()
    };
    let current_point = move || {
        s.outcome.with(|o| {
            let r = o.as_ref().ok()?;
            let perf = r.performance.as_ref()?;
            Some(charts::FrontPoint { peak_bytes: r.memory.peak_bytes, tokens_per_s_per_gpu: perf.tokens_per_s_per_gpu })
        })
    };
    // The charts' inputs as memos: each chart is redrawn only when its own figures change.
    let front = Memo::new(move |_| {
        let r = result()?;
        let front: Vec<charts::FrontPoint> =
            r.pareto.iter().map(|p| charts::FrontPoint { peak_bytes: p.peak_bytes, tokens_per_s_per_gpu: p.tokens_per_s_per_gpu }).collect();
        Some((front, r.gpu_memory_bytes))
    });
    let current = Memo::new(move |_| current_point());
    let pareto_svg = move |w| {
        front.with(|f| f.as_ref().map(|(front, cap)| charts::pareto(front, current.get(), *cap, s.dark.get(), (w, 280)))).unwrap_or_default()
    };
    let terms = Memo::new(move |_| {
        s.outcome.with(|o| {
            let b = &o.as_ref().ok()?.performance.as_ref()?.breakdown;
            Some(b.terms().map(|(_, t)| t))
        })
    });
    let step_svg = move |w| terms.get().map(|t| charts::step_bar(&t, s.dark.get(), (w, 90))).unwrap_or_default();
    // Whether there is a chart at all (the chart itself stays mounted while its figures change).
    let has_front = Memo::new(move |_| front.with(Option::is_some));
    let has_terms = Memo::new(move |_| terms.with(Option::is_some));
    let step_total = move || {
        s.outcome.with(|o| o.as_ref().ok().and_then(|r| r.performance.as_ref()).map(|p| {
            format!("Step time of the current plan: {} · {:.0} tokens/s per GPU · MFU {:.1}%", seconds(p.step_time_s), p.tokens_per_s_per_gpu, p.mfu * 100.0)
        }))
    };
    view! {
        <section class="panel" id="advisor" aria-labelledby="advisor-h" aria-busy=move || if searching() { "true" } else { "false" }>
            <h2 id="advisor-h">"Advisor"</h2>
            <div class="advisor-head">
                <button id="find-layouts" on:click=run aria-describedby="advisor-status">
                    {move || if searching() { "Searching…" } else { "Find layouts" }}
                </button>
                <p id="advisor-status" class="hint" role="status" aria-live="polite"
                    data-evaluated=move || counts().0 data-valid=move || counts().1 data-ms=move || counts().2>{status}</p>
            </div>
            {move || stale().then(|| view! {
                <p id="advisor-stale" class="notice-inline">"The model, cluster or batch changed since this search: Find layouts again for this plan."</p>
            })}
            {move || result().filter(|r| !r.candidates.is_empty()).map(|_| view! {
                <div class="table-scroll" tabindex="0" role="region" aria-label="Ranked layouts (scrolls sideways)">
                    <table id="advisor-table" class="advisor-table">
                        <caption class="sr-only">"Ranked layouts, best first; each is followed by why it was chosen"</caption>
                        <thead><tr>
                            <th scope="col">"#"</th><th scope="col" title="tensor_model_parallel_size">"TP"</th><th scope="col" title="pipeline_model_parallel_size (* uneven first or last stage)">"PP"</th>
                            <th scope="col" title="virtual_pipeline_model_parallel_size">"VPP"</th><th scope="col" title="context_parallel_size">"CP"</th>
                            <th scope="col" title="expert_model_parallel_size">"EP"</th><th scope="col" title="expert_tensor_parallel_size">"ETP"</th>
                            <th scope="col" title="sequence_parallel">"SP"</th><th scope="col" title="micro_batch_size">"mbs"</th>
                            <th scope="col" title="recompute_granularity">"recompute"</th><th scope="col" title="use_distributed_optimizer">"dist-opt"</th>
                            <th scope="col">"step time"</th><th scope="col">"tokens/s/GPU"</th><th scope="col">"MFU"</th><th scope="col">"peak GiB"</th>
                            <th scope="col"><span class="sr-only">"apply"</span></th>
                        </tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            })}
            {move || has_front.get().then(|| view! {
                <h3 class="chart-title">"Pareto front: peak memory against throughput"</h3>
                <Chart id="pareto-chart" label="Pareto front of the searched layouts: peak memory per GPU against tokens per second per GPU, with the current plan marked" draw=pareto_svg />
                <ul class="chart-legend">
                    <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(0))></span>"layouts no other beats on both memory and throughput"</li>
                    <li><span class="swatch" aria-hidden="true" inner_html=swatch_diamond(charts::CURRENT_COLOUR)></span>"the current plan"</li>
                    <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>"GPU memory"</li>
                </ul>
            })}
            <h3 class="chart-title">"Where the current plan's step time goes"</h3>
            {move || match has_terms.get() {
                true => view! {
                    <p id="step-total" class="hint">{step_total}</p>
                    <Chart id="step-chart" label="Stacked bar of the current plan's step time by term" draw=step_svg />
                    <ul class="chart-legend">
                        {move || terms.get().unwrap_or_default().into_iter().enumerate().map(|(i, t)| {
                            let colour = charts::step_colour(i, s.dark.get());
                            view! { <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&colour)></span>{format!("{} {}", charts::STEP_TERMS[i], seconds(t))}</li> }
                        }).collect_view()}
                    </ul>
                }.into_any(),
                false => view! { <p class="hint">"No step-time estimate: the mesh sizes do not divide the world size."</p> }.into_any(),
            }}
        </section>
    }
}

fn swatch_diamond(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><path d="M7 0L14 7L7 14L0 7Z" fill="{colour}"/></svg>"#)
}

// ---------- export ----------

#[component]
fn ExportPanel() -> impl IntoView {
    // Element ids are the e2e tests' handles; the texts are the core's exports.
    const IDS: [(&str, ExportKind); 5] = [
        ("export-bridge", ExportKind::Bridge),
        ("export-launch", ExportKind::BridgeCli),
        ("export-megatron", ExportKind::MegatronLm),
        ("export-slurm", ExportKind::Slurm),
        ("export-plan", ExportKind::Plan),
    ];
    view! {
        <section class="panel" id="export" aria-labelledby="export-h">
            <h2 id="export-h">"Export"</h2>
            {IDS.iter().map(|&(id, kind)| view! { <Export id kind /> }).collect_view()}
        </section>
    }
}

/// One export: its text is a memo, so an edit that leaves it equal leaves its block alone.
#[component]
fn Export(id: &'static str, kind: ExportKind) -> impl IntoView {
    let s = store();
    let text = Memo::new(move |_| {
        s.outcome.with(|o| match o.as_ref() {
            Ok(r) => export::export(kind, &r.plan, r),
            // An unreadable plan still exports as the document being edited.
            Err(_) if kind == ExportKind::Plan => s.plan.with(|v| serde_json::to_string_pretty(v).unwrap_or_default()),
            Err(_) => String::new(),
        })
    });
    // The text last copied: the button says "Copied" while that is still the text shown.
    let copied = RwSignal::new(None::<String>);
    let is_copied = move || copied.with(|c| text.with(|t| c.as_ref() == Some(t)));
    view! {
        <div class="export">
            <div class="export-head">
                <h3 id=format!("{id}-h")>{kind.label()}</h3>
                <button class="copy" aria-describedby=format!("{id}-h")
                    on:click=move |_| { let t = text.get_untracked(); browser::copy_text(&t); copied.set(Some(t)); }>
                    {move || if is_copied() { "Copied ✓" } else { "Copy" }}
                </button>
            </div>
            <pre id=id tabindex="0">{text}</pre>
        </div>
    }
}
