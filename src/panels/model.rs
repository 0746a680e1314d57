//! The Model panel: a preset from the catalogue (searchable), its Megatron fields to override, or a
//! pasted Hugging Face config.json.

use crate::fields;
use crate::format::billions;
use crate::state::plan_doc::{self, display_value, get};
use crate::state::{Doc, catalog, editor};
use crate::ui::controls::TextField;
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use meshplan_core::{presets, recipes};
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

/// A preset's family: the catalogue's `family` field ("Llama 3", "Nemotron-H", …), else the family its key names.
pub fn family_of(m: &presets::ModelSummary) -> String {
    if m.family.trim().is_empty() { family_from_key(&m.key) } else { m.family.clone() }
}

/// `nemotron-h-8b` → `nemotron-h`, `llama-3.1-8b` → `llama`, `qwen3-30b-a3b` → `qwen3`: the key's parts up to the
/// first one that starts with a digit (a size or a version), at least one part.
fn family_from_key(key: &str) -> String {
    let parts: Vec<&str> = key.split('-').collect();
    let n = parts.iter().skip(1).position(|p| p.starts_with(|c: char| c.is_ascii_digit())).map_or(parts.len(), |i| i + 1);
    parts[..n].join("-")
}

/// The presets whose name, key, family or Hugging Face id contains `query` (any case), grouped by family in catalogue
/// order, as (family, [(key, "name — size")]). The catalogue's names are ASCII, so ASCII case folding is enough (and
/// keeps Unicode's case tables out of the page's wasm).
fn matching_presets(query: &str) -> Vec<(String, Vec<(String, String)>)> {
    let q = query.to_ascii_lowercase();
    let mut groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for m in &catalog().models {
        let family = family_of(m);
        let hit = q.is_empty()
            || m.name.to_ascii_lowercase().contains(&q)
            || m.key.contains(&q)
            || m.hf_id.to_ascii_lowercase().contains(&q)
            || family.to_ascii_lowercase().contains(&q);
        if !hit {
            continue;
        }
        let params = if m.moe {
            format!("{} total · {} active", billions(m.total_parameters), billions(m.active_parameters))
        } else {
            billions(m.total_parameters)
        };
        let item = (m.key.clone(), format!("{} — {params}", m.name));
        match groups.iter_mut().find(|g| g.0 == family) {
            Some(g) => g.1.push(item),
            None => groups.push((family, vec![item])),
        }
    }
    groups
}

/// The preset list as a picker: what matches the search, and the model in force (when the plan names a plain preset).
#[derive(Clone, Copy)]
struct Picker {
    matches: Memo<Vec<(String, Vec<(String, String)>)>>,
    current: Signal<Option<String>>,
}

impl Picker {
    /// The matching keys in list order.
    fn keys(&self) -> Vec<String> {
        self.matches.with(|g| g.iter().flat_map(|g| g.1.iter().map(|i| i.0.clone())).collect())
    }

    /// Makes `key` the plan's model. A recipe of another model is written out first, so that its cluster and settings
    /// stay.
    fn pick(&self, key: String) {
        if key.is_empty() || self.current.get_untracked().as_deref() == Some(key.as_str()) {
            return;
        }
        editor().update(|p| {
            if p.get("recipe").and_then(Value::as_str).and_then(recipes::find).is_some_and(|r| r.model != key) {
                *p = plan_doc::without_recipe(p);
            }
            plan_doc::set(p, "model", Value::String(key));
        });
    }

    /// The match `delta` places from the model in force (the first or last match when it is not among them).
    fn step(&self, delta: isize) {
        let keys = self.keys();
        let Some(last) = keys.len().checked_sub(1) else { return };
        let current = self.current.get_untracked();
        let next = match keys.iter().position(|k| Some(k) == current.as_ref()) {
            Some(i) => i.saturating_add_signed(delta).min(last),
            None if delta < 0 => last,
            None => 0,
        };
        self.pick(keys[next].clone());
    }
}

/// The search box's keys: Enter picks the first match unless the model in force is among them; the arrows step.
fn picker_key(ev: &web_sys::KeyboardEvent, picker: &Picker) {
    match ev.key().as_str() {
        "ArrowDown" => picker.step(1),
        "ArrowUp" => picker.step(-1),
        "Enter" => {
            let keys = picker.keys();
            let current = picker.current.get_untracked();
            if let Some(first) = keys.first().filter(|_| !keys.iter().any(|k| Some(k) == current.as_ref())) {
                picker.pick(first.clone());
            }
        }
        _ => return,
    }
    ev.prevent_default();
}

#[component]
pub fn ModelPanel(doc: Doc) -> impl IntoView {
    let editor = editor();
    let mode = memo(move || doc.plan.with(mode_of));
    let query = RwSignal::new(String::new());
    // Reset clears the filter too.
    effect(move || {
        editor.resets();
        query.set(String::new());
    });
    let current_key = memo(move || doc.resolved.with(|v| display_value(get(v, "model_key"))));
    let matches = memo(move || matching_presets(&query.get()));
    let picker = Picker { matches, current: Signal::derive(move || (mode.get() == Mode::Preset).then(|| current_key.get())) };
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
                <input id="model-search" type="search" placeholder="name, key or Hugging Face id" aria-controls="model-preset"
                    aria-describedby="model-search-hint"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev))
                    on:keydown=move |ev| picker_key(&ev, &picker) />
                <p id="model-search-hint" class="hint">"Enter picks the first match, ↑ ↓ step through the matches."</p>
            </div>
            <div class="field">
                <label for="model-preset" title="The model preset: Megatron TransformerConfig fields of a published model">"Preset"</label>
                <select id="model-preset" size="8" on:change=move |ev| picker.pick(event_target_value(&ev))
                    on:keydown=move |ev| if ev.key() == "Enter" { picker.pick(event_target_value(&ev)) }>
                    {move || matches.get().into_iter().map(|(family, items)| view! {
                        <optgroup label=family>
                            {items.into_iter().map(|(key, text)| {
                                let k = key.clone();
                                // A property, not the attribute: the attribute stops steering the highlight once the
                                // user has moved it, so the highlight would drift from the model in force.
                                view! { <option value=key prop:selected=move || mode.get() == Mode::Preset && current_key.with(|c| *c == k)>{text}</option> }
                            }).collect_view()}
                        </optgroup>
                    }).collect_view()}
                </select>
            </div>
            // The recipe picker and the config.json box are the tools module's, mounted here after the first render.
            <div id=crate::ui::slot::RECIPE class="tools-slot"></div>
            <details open=move || mode.get() == Mode::Fields on:toggle=move |ev| {
                let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
                if open && mode.get_untracked() == Mode::Preset { set_mode(Mode::Fields) }
            }>
                <summary>"Edit Megatron fields"</summary>
                <p class="hint">"Empty fields keep the preset's value (shown greyed)."</p>
                <div class="fields">{fields::MODEL.iter().map(|info| view! { <TextField doc info /> }).collect_view()}</div>
                <button on:click=move |_| set_mode(Mode::Preset)>"Back to the plain preset"</button>
            </details>
            <div id=crate::ui::slot::HF_CONFIG class="tools-slot"></div>
            <div id=crate::ui::slot::IMPORT class="tools-slot"></div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_keys() {
        assert_eq!(family_from_key("llama-3.1-8b"), "llama");
        assert_eq!(family_from_key("nemotron-h-8b"), "nemotron-h");
        assert_eq!(family_from_key("nemotron-3-nano-30b-a3b"), "nemotron");
        assert_eq!(family_from_key("qwen3-30b-a3b"), "qwen3");
        assert_eq!(family_from_key("gpt3-175b"), "gpt3");
        assert_eq!(family_from_key("kimi-k2"), "kimi-k2");
    }

    #[test]
    fn every_preset_is_in_one_group_in_catalogue_order() {
        let groups = matching_presets("");
        let keys: Vec<&str> = groups.iter().flat_map(|g| g.1.iter().map(|i| i.0.as_str())).collect();
        assert_eq!(keys.len(), catalog().models.len());
        let mut families: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
        families.dedup();
        assert_eq!(families.len(), groups.len(), "each family once");
        // The Llama 3.1 presets sit together; a search narrows the groups.
        let llama = groups.iter().find(|g| g.1.iter().any(|i| i.0 == "llama-3.1-70b")).unwrap();
        assert!(llama.1.iter().any(|i| i.0 == "llama-3.1-8b") && llama.1.iter().any(|i| i.0 == "llama-3.1-405b"));
        let found = matching_presets("mamba-free-nonsense");
        assert!(found.is_empty());
    }
}

/// The Megatron Bridge recipes of the model shown (and the plan's own recipe, whatever its model): picking one starts
/// the plan from it (its cluster, parallelism and settings); "none" writes the recipe's values into the plan and drops
/// the name.
#[component]
pub fn RecipePicker(doc: Doc) -> impl IntoView {
    let editor = editor();
    let current = memo(move || doc.plan.with(|p| p.get("recipe").and_then(Value::as_str).map(str::to_string).unwrap_or_default()));
    let model_key = memo(move || doc.resolved.with(|v| display_value(get(v, "model_key"))));
    let offered = memo(move || {
        doc.recipes.with(|_| ());
        let (m, cur) = (model_key.get(), current.get());
        recipes::all().iter().filter(|r| r.model == m || r.name == cur).map(|r| (r.name.clone(), r.description.clone())).collect::<Vec<_>>()
    });
    let note = memo(move || recipes::find(&current.get()).map(|r| format!("{} — Megatron Bridge {}", r.description, r.source)));
    // What the last choice replaced of the plan as typed, and the plan before it (one-click undo); gone once the plan
    // is edited past it.
    let undo = RwSignal::new(None::<(Value, Vec<String>)>);
    let sets = memo(move || {
        recipes::find(&current.get()).map(|r| {
            let keys: Vec<String> = r.parallelism.iter().chain(r.training.iter()).map(|(k, v)| format!("{k} = {v}")).collect();
            keys.join(", ")
        })
    });
    view! {
        <div class="field">
            <label for="recipe" title="A Megatron Bridge library recipe: its cluster, parallelism and run settings; what the plan sets overrides it">
                "Megatron Bridge recipe "<code>"recipe"</code></label>
            <select id="recipe" prop:value=current on:change=move |ev| {
                let name = event_target_value(&ev);
                let before = doc.plan.get_untracked();
                let next = if name.is_empty() { plan_doc::without_recipe(&before) } else { plan_doc::with_recipe(&before, &name) };
                let replaced = replaced_values(&before, &next);
                undo.set(Some((before, replaced)));
                editor.update(|p| *p = next);
            }>
                <option value="" selected=move || current.with(String::is_empty)>
                    {move || format!("none ({} for this model)", offered.with(|o| o.iter().filter(|r| r.0 != current.get()).count()))}</option>
                {move || offered.get().into_iter().map(|(name, description)| {
                    let (n, text) = (name.clone(), name.clone());
                    view! { <option value=name title=description selected=move || current.with(|c| *c == n)>{text}</option> }
                }).collect_view()}
            </select>
            {move || note.get().map(|n| view! { <p id="recipe-note" class="hint">{n}</p> })}
            {move || sets.get().filter(|s| !s.is_empty()).map(|s| view! { <p id="recipe-sets" class="hint">"It sets: "{s}</p> })}
            {move || undo.get().map(|(before, replaced)| {
                let what = if replaced.is_empty() { "It replaced nothing you had typed.".to_string() } else { format!("It replaced what you had typed: {}.", replaced.join(", ")) };
                view! {
                    <p id="recipe-replaced" class="hint stale" role="status">{what}" "
                        <button id="recipe-undo" on:click=move |_| { editor.update(|p| *p = before.clone()); undo.set(None); }>"Undo"</button>
                    </p>
                }
            })}
        </div>
    }
}

/// The values typed in `before` (its cluster, training and parallelism sections) that `after` — once its recipe is
/// written out — no longer has: "seq_length 8192 → 4096".
fn replaced_values(before: &Value, after: &Value) -> Vec<String> {
    let after = recipes::expand(after).unwrap_or_else(|| after.clone());
    let mut out = Vec::new();
    for section in ["cluster", "training", "parallelism"] {
        let Some(typed) = before.get(section).and_then(Value::as_object) else { continue };
        for (key, was) in typed {
            let now = after.get(section).and_then(|s| s.get(key));
            if now != Some(was) {
                out.push(format!("{key} {was} → {}", now.map_or("default".to_string(), Value::to_string)));
            }
        }
    }
    out
}

/// The config.json box, open while the plan's model is a Hugging Face config (mounted by the tools module).
#[component]
pub fn HfConfigBox(doc: Doc) -> impl IntoView {
    view! { <HfConfig open_for_hf=Signal::derive(move || doc.plan.with(mode_of) == Mode::Hf) /> }
}

/// The paste box for a Hugging Face config.json: a JSON object becomes the plan's `model.hf_config`.
#[component]
fn HfConfig(open_for_hf: Signal<bool>) -> impl IntoView {
    let editor = editor();
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let open = RwSignal::new(false);
    let use_it = move |_| match plan_doc::hf_config_value(&text.get_untracked()) {
        Ok(v) => {
            error.set(None);
            editor.edit("model", json!({ "hf_config": v }));
        }
        Err(e) => error.set(Some(e)),
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
