//! "Assumed settings": every speed and memory setting the plan leaves out, the value meshplan planned it with and
//! where that value comes from (the report's `assumptions`: Megatron Bridge's performance recipe for the nearest run,
//! or Megatron-Core's default — `meshplan_core::tuned`), with the one switch between tuned and plain defaults (the
//! plan's top-level `defaults`) and, per row, "State it": the value written into the plan, where the Advanced memory
//! fields change it. Mounted by the tools module in the results column's slot (`ui::slot::ASSUMED`).

use crate::state::{Doc, editor, plan_doc};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::tuned::{Assumption, DEFAULTS_KEY};
use serde_json::Value;

/// The plan's switch as the select shows it: "tuned" unless the plan asks for Megatron-Core's plain defaults.
fn switch_of(plan: &Value) -> &'static str {
    match plan.get(DEFAULTS_KEY).and_then(Value::as_str) {
        Some("megatron-core") => "megatron-core",
        _ => "tuned",
    }
}

/// A value as the plan writes it, short: `true`, `"alltoall"` without quotes, `[]`.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

#[component]
pub fn AssumedPanel(doc: Doc) -> impl IntoView {
    let editor = editor();
    let rows = memo(move || doc.outcome.with(|o| o.as_ref().map(|r| r.assumptions.clone()).unwrap_or_default()));
    let switch = memo(move || doc.plan.with(switch_of));
    let from_recipe = memo(move || doc.plan.with(crate::state::recipes::names_recipe));
    let count = move || rows.with(Vec::len);
    // A memo: "State it" changes the rows, not whether there are any, so the open list stays open.
    let any = memo(move || count() > 0);
    view! {
        <section class="panel" id="assumed" aria-labelledby="assumed-h">
            <h2 id="assumed-h">"Assumed settings"</h2>
            <div class="field inline-field">
                <label for="defaults" title="The plan's top-level `defaults`: what a setting the plan leaves out is planned with">
                    "Settings the plan leaves out"</label>
                <select id="defaults" prop:value=move || switch.get() on:change=move |ev| {
                    let v = event_target_value(&ev);
                    editor.update(|p| plan_doc::set(p, DEFAULTS_KEY, if v == "tuned" { Value::Null } else { Value::String(v) }));
                }>
                    <option value="tuned" selected=move || switch.get() == "tuned">"tuned: Megatron Bridge's performance recipe for the nearest run"</option>
                    <option value="megatron-core" selected=move || switch.get() == "megatron-core">"Megatron-Core's defaults"</option>
                </select>
            </div>
            <p class="hint" id="assumed-note">{move || match (count(), from_recipe.get()) {
                (0, true) => "The plan takes what it leaves out from its Megatron Bridge recipe: nothing more is assumed.".to_string(),
                (0, false) => "The plan states every speed and memory setting: nothing is assumed.".to_string(),
                (n, _) => format!("{n} setting{} the plan does not state, planned as below; the step time and the memory rest on them. \
                    \"State it\" writes one into the plan, where its field changes it.", if n == 1 { "" } else { "s" }),
            }}</p>
            {move || any.get().then(|| view! {
                <details id="assumed-details">
                    <summary>{move || format!("Show the {} settings, by where their value comes from", count())}</summary>
                    <table id="assumed-table" class="assumed-table">
                        <thead><tr><th scope="col">"setting"</th><th scope="col">"planned as"</th><th scope="col"><span class="sr-only">"action"</span></th></tr></thead>
                        <tbody>{move || groups(&rows.get()).into_iter().map(|(source, items)| view! {
                            <tr class="assumed-source"><th scope="colgroup" colspan="3">{source.clone()}</th></tr>
                            {items.into_iter().map(|a| view! { <AssumedRow a /> }).collect_view()}
                        }).collect_view()}</tbody>
                    </table>
                </details>
            })}
        </section>
    }
}

/// The assumptions by source, in the order each source first appears (`tuned::by_source`), owned for the view.
fn groups(rows: &[Assumption]) -> Vec<(String, Vec<Assumption>)> {
    meshplan_core::tuned::by_source(rows).into_iter().map(|(source, items)| (source.to_string(), items.into_iter().cloned().collect())).collect()
}

#[component]
fn AssumedRow(a: Assumption) -> impl IntoView {
    let editor = editor();
    let (key, value) = (a.key.clone(), a.value.clone());
    let label = format!("State {} = {} in the plan", a.key, shown(&a.value));
    view! {
        <tr data-key=a.key.clone() data-source=a.source.clone()>
            <td><code>{a.key.clone()}</code></td>
            <td>{shown(&a.value)}</td>
            <td><button class="state-it" aria-label=label on:click=move |_| {
                let (k, v) = (key.clone(), value.clone());
                // A training key, or a plan path (the parallelism setting the launchers assume, tuned::OVERLAP_P2P_KEY).
                let path = if k.contains('.') { k } else { format!("training.{k}") };
                editor.update(|p| plan_doc::set(p, &path, if v.is_null() { Value::Null } else { v }));
            }>"State it"</button></td>
        </tr>
    }
}
