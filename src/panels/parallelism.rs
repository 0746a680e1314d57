//! The Parallelism panel: one control per row of the core's parallelism table, in its order, chosen by the row's kind
//! — a text box for a size, a check box for a switch, the rank order (with Megatron-Core's usual orders offered), and
//! the explicit pipeline layout with its diagnostics.

use crate::fields::{self, FieldInfo};
use crate::state::plan_doc::{layout_value, typed_value};
use crate::state::{Doc, editor};
use crate::ui::controls::{CheckField, TextField, field_id, field_text};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::Severity;
use meshplan_core::parallelism::{Kind, PARALLELISM};

#[component]
pub fn ParallelismPanel(doc: Doc) -> impl IntoView {
    view! {
        <section class="panel" id="parallelism-panel" aria-labelledby="parallelism-h">
            <h2 id="parallelism-h">"Parallelism"</h2>
            <div class="fields">
                {PARALLELISM.iter().zip(fields::PARALLELISM.iter()).map(|(row, info)| match row.kind {
                    Kind::UInt | Kind::OptUInt => view! { <TextField doc info /> }.into_any(),
                    Kind::Bool | Kind::OptBool => view! { <CheckField doc info /> }.into_any(),
                    Kind::Order => view! { <OrderField doc info /> }.into_any(),
                    Kind::Layout => view! { <LayoutField doc info /> }.into_any(),
                }).collect_view()}
            </div>
        </section>
    }
}

/// The rank order as text, with the usual orders as suggestions.
#[component]
fn OrderField(doc: Doc, info: &'static FieldInfo) -> impl IntoView {
    let editor = editor();
    let id = field_id(info.path);
    let (order, resolved_order) = field_text(doc, info.path);
    view! {
        <div class="field">
            <label for=id.clone() title=info.tooltip()>{info.label}" "<code>{info.megatron()}</code></label>
            <input id=id list="orders" type="text" spellcheck="false" title=info.tooltip()
                placeholder=resolved_order
                prop:value=order
                on:input=move |ev| editor.edit(info.path, typed_value(&event_target_value(&ev))) />
            <datalist id="orders">
                <option value="tp-cp-ep-dp-pp"></option>
                <option value="tp-cp-ep-pp-dp"></option>
                <option value="tp-pp-dp"></option>
            </datalist>
        </div>
    }
}

/// Whether a diagnostic is about the pipeline layout: its own rules, and the rules of what sits beside it.
fn about_layout(code: &str) -> bool {
    code.starts_with("layout-") || code == "hybrid-pattern-with-layout"
}

/// `pipeline_model_parallel_layout` as text (Megatron's string form, or a JSON list of stage lists), with the
/// report's layout diagnostics right under it.
#[component]
fn LayoutField(doc: Doc, info: &'static FieldInfo) -> impl IntoView {
    let editor = editor();
    let id = field_id(info.path);
    let (value, resolved) = field_text(doc, info.path);
    // The layout in force when the box is empty: a recipe's, else Megatron's even split.
    let in_force = move || resolved.with(|r| if r.is_empty() { "none: Megatron's even split (e.g. Et*3|(tt|)*29,m|L)".to_string() } else { r.clone() });
    let from_recipe = move || value.with(String::is_empty) && resolved.with(|r| !r.is_empty());
    let diagnostics = memo(move || {
        doc.outcome.with(|o| {
            o.as_ref()
                .map(|r| r.diagnostics.iter().filter(|d| about_layout(d.code.as_str())).map(|d| (d.severity, d.code.to_string(), d.message.clone())).collect())
                .unwrap_or_default()
        })
    });
    let flagged = memo(move || diagnostics.with(|ds: &Vec<(Severity, String, String)>| ds.iter().any(|d| d.0 == Severity::Error)));
    view! {
        <div class="field wide" class:flagged=move || flagged.get()>
            <label for=id.clone() title=info.tooltip()>{info.label}" "<code>{info.megatron()}</code></label>
            <input id=id type="text" autocomplete="off" spellcheck="false" title=info.tooltip()
                placeholder=in_force
                aria-invalid=move || if flagged.get() { "true" } else { "false" }
                aria-describedby="layout-diagnostics"
                prop:value=value
                on:input=move |ev| editor.edit(info.path, layout_value(&event_target_value(&ev))) />
            {move || from_recipe().then(|| view! { <p id="layout-in-force" class="hint">"In force (from the recipe): "<code>{resolved.get()}</code></p> })}
            <ul id="layout-diagnostics" class="field-diags" aria-live="polite">
                {move || diagnostics.get().into_iter().map(|(sev, code, message)| {
                    let class = if sev == Severity::Error { "field-error" } else { "field-warning" };
                    let shown = code.clone();
                    view! { <li class=class data-code=code><code>{shown}</code>" "{message}</li> }
                }).collect_view()}
            </ul>
        </div>
    }
}
