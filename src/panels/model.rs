//! The Model panel: a preset from the catalogue (searchable), its Megatron fields to override, or a
//! pasted Hugging Face config.json.

use crate::fields;
use crate::format::billions;
use crate::state::plan_doc::{display_value, get};
use crate::state::{Doc, catalog, editor};
use crate::ui::controls::TextField;
use leptos::prelude::*;
use meshplan_core::presets;
use serde_json::{Value, json};

/// How the plan names its model: a preset key, a preset with field overrides, or a Hugging Face config.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Preset,
    Fields,
    Hf,
}

fn mode_of(plan: &Value) -> Mode {
    match plan.get("model") {
        Some(Value::Object(m)) if m.contains_key("hf_config") => Mode::Hf,
        Some(Value::Object(_)) => Mode::Fields,
        _ => Mode::Preset,
    }
}

/// The presets whose name, key or Hugging Face id contains `query` (any case), as (key, "name — size").
fn matching_presets(query: &str) -> Vec<(String, String)> {
    let q = query.to_lowercase();
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
        .collect()
}

#[component]
pub fn ModelPanel(doc: Doc) -> impl IntoView {
    let editor = editor();
    let mode = Memo::new(move |_| doc.plan.with(mode_of));
    let query = RwSignal::new(String::new());
    let current_key = Memo::new(move |_| doc.resolved.with(|v| display_value(get(v, "model_key"))));
    // Opening the fields turns a preset key into `{"preset": key}`; back to the plain preset drops the overrides.
    let set_mode = move |m: Mode| match m {
        Mode::Preset => {
            let key = doc.plan.with_untracked(|p| p.pointer("/model/preset").and_then(Value::as_str).map(str::to_string));
            let key = key.unwrap_or_else(|| current_key.get_untracked());
            let key = if presets::model(&key).is_some() { key } else { "llama-3.1-8b".into() };
            editor.edit("model", Value::String(key));
        }
        Mode::Fields => {
            let key = doc.plan.with_untracked(|p| p.get("model").and_then(Value::as_str).map(str::to_string));
            if let Some(k) = key {
                editor.edit("model", json!({ "preset": k }));
            } else if mode.get_untracked() == Mode::Hf {
                editor.edit("model", json!({ "preset": "llama-3.1-8b" }));
            }
        }
        Mode::Hf => {}
    };
    view! {
        <section class="panel" id="model-panel" aria-labelledby="model-h">
            <h2 id="model-h">"Model"</h2>
            <p class="summary">{move || doc.resolved.with(|v| display_value(get(v, "model_name")))}
                " · "{move || doc.outcome.with(|o| o.as_ref().map(|r| billions(r.derived.total_parameters)).unwrap_or_default())}" parameters"</p>
            <div class="field">
                <label for="model-search">"Search presets"</label>
                <input id="model-search" type="search" placeholder="name, key or Hugging Face id"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
            </div>
            <div class="field">
                <label for="model-preset" title="The model preset: Megatron TransformerConfig fields of a published model">"Preset"</label>
                <select id="model-preset" size="6" on:change=move |ev| { editor.edit("model", Value::String(event_target_value(&ev))); }>
                    {move || matching_presets(&query.get()).into_iter().map(|(key, text)| {
                        let k = key.clone();
                        view! { <option value=key selected=move || mode.get() == Mode::Preset && current_key.with(|c| *c == k)>{text}</option> }
                    }).collect_view()}
                </select>
            </div>
            <details open=move || mode.get() == Mode::Fields on:toggle=move |ev| {
                let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
                if open && mode.get_untracked() == Mode::Preset { set_mode(Mode::Fields) }
            }>
                <summary>"Edit Megatron fields"</summary>
                <p class="hint">"Empty fields keep the preset's value (shown greyed)."</p>
                <div class="fields">{fields::MODEL.iter().map(|info| view! { <TextField doc info /> }).collect_view()}</div>
                <button on:click=move |_| set_mode(Mode::Preset)>"Back to the plain preset"</button>
            </details>
            <HfConfig open_for_hf=Signal::derive(move || mode.get() == Mode::Hf) />
            <crate::panels::ImportBox />
        </section>
    }
}

/// The paste box for a Hugging Face config.json: a JSON object becomes the plan's `model.hf_config`.
#[component]
fn HfConfig(open_for_hf: Signal<bool>) -> impl IntoView {
    let editor = editor();
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let open = RwSignal::new(false);
    let use_it = move |_| match serde_json::from_str::<Value>(&text.get_untracked()) {
        Ok(v) if v.is_object() => {
            error.set(None);
            editor.edit("model", json!({ "hf_config": v }));
        }
        Ok(_) => error.set(Some("a config.json is a JSON object".into())),
        Err(e) => error.set(Some(format!("not valid JSON: {e}"))),
    };
    view! {
        <details prop:open=move || open.get() || open_for_hf.get() on:toggle=move |ev| open.set(event_target::<web_sys::HtmlDetailsElement>(&ev).open())>
            <summary>"Paste a Hugging Face config.json"</summary>
            <label for="hf-config">"config.json"</label>
            <textarea id="hf-config" rows="6" spellcheck="false" placeholder="{ \"architectures\": [\"LlamaForCausalLM\"], ... }"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <button id="use-hf" on:click=use_it>"Use this config"</button>
            {move || error.get().map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
        </details>
    }
}
