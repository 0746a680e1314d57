//! The import box: "Paste a launch command or config" — a Megatron-LM command line or the arguments block it prints,
//! Megatron Bridge overrides or the config YAML a Bridge run writes, or any meshplan export — read by the core's
//! `imports::import` into a plan that replaces the one being edited. The settings meshplan does not read are listed
//! under the box (name, value, why); an input the core cannot read is shown as its diagnostic.

use crate::state::{Doc, editor};
use crate::panels::diagnostics::InputErrorList;
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::{Code, InputError};
use meshplan_core::imports::{Format, ImportOptions, Imported, import};

/// The format choices: "auto" (the core detects it) and each format's key.
const FORMATS: [(&str, &str); 5] = [
    ("auto", "detect"),
    ("megatron-args", "Megatron-LM arguments"),
    ("bridge-overrides", "Megatron Bridge overrides"),
    ("bridge-yaml", "Megatron Bridge config YAML"),
    ("plan", "meshplan plan file"),
];

/// What the box last read: the import's findings, or why it could not.
type Outcome = Result<Imported, InputError>;

#[component]
pub fn ImportBox(doc: Doc) -> impl IntoView {
    let editor = editor();
    let text = RwSignal::new(String::new());
    let from = RwSignal::new("auto".to_string());
    let outcome = RwSignal::new(None::<Outcome>);
    // The plan the import wrote: once the plan moves on, the message says it describes an earlier plan.
    let imported = RwSignal::new(None::<serde_json::Value>);
    let stale = memo(move || imported.with(|i| i.as_ref().is_some_and(|i| doc.plan.with(|p| p != i))));
    // Reset clears the box and its message.
    Effect::new(move |prev: Option<()>| {
        editor.resets();
        if prev.is_some() {
            text.set(String::new());
            outcome.set(None);
            imported.set(None);
        }
    });
    let use_it = move |_| {
        // An input that names no GPU keeps the page's (a launch command rarely names it), said by the import.
        let gpu = doc.plan.with_untracked(|p| p.get("cluster").and_then(|c| c.get("gpu")).and_then(serde_json::Value::as_str).map(str::to_string));
        let mut opts = ImportOptions { from: Format::from_key(&from.get_untracked()), unnamed_gpu: gpu, ..ImportOptions::default() };
        let mut read = text.with_untracked(|t| import(t, &opts));
        // An input that names no model (an MLPerf configuration, a script of sizes only) keeps the page's preset, said.
        if let (Err(InputError { code: Code::ImportNoModel, .. }), Some(key)) = (&read, doc.plan.with_untracked(preset_key)) {
            opts.model = Some(key.clone());
            read = text.with_untracked(|t| import(t, &opts)).map(|mut i| {
                i.notes.insert(0, format!("model: the input names none; the page's model, the {key} preset, kept"));
                i
            });
        }
        if let Ok(i) = &read {
            let plan = i.plan.clone();
            imported.set(Some(plan.clone()));
            editor.update(move |p| *p = plan);
        }
        outcome.set(Some(read));
    };
    view! {
        <details id="import-box">
            <summary>"Paste a launch command or config"</summary>
            <label for="import-text">"A Megatron-LM command line or script (torchrun, srun, mpirun, a Kubernetes job) or arguments block, a Megatron Bridge launch (run_recipe.py, train.sh, the performance launcher), overrides or config YAML, a NeMo 2 or NeMo 1 launch or config, an MLPerf config_*.sh, or a meshplan export"</label>
            <textarea id="import-text" rows="6" spellcheck="false" placeholder="torchrun … pretrain_gpt.py --tensor-model-parallel-size 2 …"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <div class="field inline-field">
                <label for="import-from">"Read as"</label>
                <select id="import-from" on:change=move |ev| from.set(event_target_value(&ev))>
                    {FORMATS.iter().map(|(k, label)| view! { <option value=*k>{*label}</option> }).collect_view()}
                </select>
                <button id="use-import" on:click=use_it>"Use this plan"</button>
            </div>
            {move || (stale.get() && outcome.with(|o| matches!(o, Some(Ok(_))))).then(|| view! {
                <p id="import-stale" class="hint stale">"The plan has been edited since this import: what follows describes the imported plan."</p>
            })}
            {move || outcome.get().map(|o| match o {
                Err(error) => view! { <InputErrorList id="import-error" error /> }.into_any(),
                Ok(i) => view! { <ImportResult i /> }.into_any(),
            })}
        </details>
    }
}

/// The preset a plan's `model` names (`"key"` or `{"preset": "key", …}`).
fn preset_key(plan: &serde_json::Value) -> Option<String> {
    let m = plan.get("model")?;
    m.as_str().or_else(|| m.get("preset").and_then(serde_json::Value::as_str)).map(str::to_string)
}

#[component]
fn ImportResult(i: Imported) -> impl IntoView {
    let n = i.unrecognized.len();
    view! {
        <p id="import-summary" class="hint">
            "Read as "{FORMATS.iter().find(|(k, _)| *k == i.format.key()).map_or("", |f| f.1)}"; the plan was replaced by what it says. "
            {if n == 0 { "Every setting was read.".to_string() } else { format!("{n} setting{} not read:", if n == 1 { "" } else { "s" }) }}
        </p>
        {(n > 0).then(|| view! {
            <div class="table-scroll">
                <table id="import-unrecognized" class="compare-table">
                    <thead><tr><th scope="col">"setting"</th><th scope="col">"value"</th><th scope="col">"why"</th></tr></thead>
                    <tbody>
                        {i.unrecognized.iter().map(|u| view! {
                            <tr><th scope="row"><code>{u.name.clone()}</code></th><td><code>{u.value.clone()}</code></td><td class="why">{u.why.clone()}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        })}
        {(!i.notes.is_empty()).then(|| view! {
            <ul id="import-notes" class="compare-list">{i.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
        })}
    }
}
