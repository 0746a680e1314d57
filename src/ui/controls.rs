//! Form controls bound to one plan field each: a text box, a check box and a select. Any value can be
//! typed; the core flags what is wrong (the box turns red) instead of the form blocking it.

use crate::fields::FieldInfo;
use crate::state::plan_doc::{display_value, get, typed_value};
use crate::state::{Doc, editor};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::Severity;
use serde_json::Value;

/// Whether an error diagnostic's one-click fix names the field: the field is flagged.
fn is_flagged(doc: Doc, path: &'static str) -> Memo<bool> {
    memo(move || {
        doc.outcome.with(|o| {
            o.as_ref().is_ok_and(|r| {
                r.diagnostics.iter().any(|d| d.severity == Severity::Error && (d.field.as_deref() == Some(path) || d.apply.iter().any(|a| a.path == path)))
            })
        })
    })
}

/// The message of the diagnostic about this field's own value (a wrong type, out of range), shown under it.
fn own_error(doc: Doc, path: &'static str) -> Memo<Option<String>> {
    memo(move || {
        doc.outcome.with(|o| o.as_ref().ok().and_then(|r| r.diagnostics.iter().find(|d| d.field.as_deref() == Some(path)).map(|d| d.message.clone())))
    })
}

/// The element id of a field's control: `f-parallelism-tensor-model-parallel-size` (the tests' handle).
pub fn field_id(path: &str) -> String {
    format!("f-{}", path.replace(['.', '_'], "-"))
}

/// What a text box for `path` shows: the plan's value, and the resolved value (greyed) for when that is
/// empty. Memos, so that an edit elsewhere in the plan leaves the box alone (a property set by a closure
/// is written on every run, equal or not).
pub fn field_text(doc: Doc, path: &'static str) -> (Memo<String>, Memo<String>) {
    (memo(move || doc.plan.with(|p| display_value(get(p, path)))), memo(move || doc.resolved.with(|v| display_value(get(v, path)))))
}

/// A labelled text box for one plan field.
#[component]
pub fn TextField(doc: Doc, info: &'static FieldInfo) -> impl IntoView {
    let editor = editor();
    let path = info.path;
    let id = field_id(path);
    let flagged = is_flagged(doc, path);
    let error = own_error(doc, path);
    let (value, resolved) = field_text(doc, path);
    let error_id = format!("{id}-error");
    let (described, error_id_p) = (error_id.clone(), error_id.clone());
    // The accessible name is the label alone ("TP"); the Megatron name is its description.
    let name_id = format!("{id}-label");
    let megatron_id = format!("{id}-megatron");
    let megatron_ref = megatron_id.clone();
    view! {
        <div class="field" class:flagged=move || flagged.get()>
            <label for=id.clone() title=info.tooltip()><span id=name_id.clone()>{info.label}</span>" "<code id=megatron_id>{info.megatron()}</code></label>
            <input id=id type="text" inputmode="numeric" autocomplete="off" spellcheck="false"
                title=info.tooltip()
                aria-labelledby=name_id
                aria-describedby=move || if error.with(Option::is_some) { format!("{megatron_ref} {described}") } else { megatron_ref.clone() }
                aria-invalid=move || if flagged.get() { "true" } else { "false" }
                placeholder=resolved
                prop:value=value
                on:input=move |ev| editor.edit(path, typed_value(&event_target_value(&ev))) />
            {move || error.get().map(|m| view! { <p class="field-error" id=error_id_p.clone()>{m}</p> })}
        </div>
    }
}

/// A check box for a boolean plan field; unset, it shows the resolved default.
#[component]
pub fn CheckField(doc: Doc, info: &'static FieldInfo) -> impl IntoView {
    let editor = editor();
    let path = info.path;
    let id = field_id(path);
    let checked = memo(move || {
        doc.plan.with(|p| get(p, path).and_then(Value::as_bool)).or_else(|| doc.resolved.with(|v| get(v, path).and_then(Value::as_bool))).unwrap_or(false)
    });
    let (name_id, megatron_id) = (format!("{id}-label"), format!("{id}-megatron"));
    view! {
        <div class="field check">
            <input id=id.clone() type="checkbox" title=info.tooltip() prop:checked=checked
                aria-labelledby=name_id.clone() aria-describedby=megatron_id.clone()
                on:change=move |ev| editor.edit(path, Value::Bool(event_target_checked(&ev))) />
            <label for=id title=info.tooltip()><span id=name_id>{info.label}</span>" "<code id=megatron_id>{info.megatron()}</code></label>
        </div>
    }
}

/// A select for a plan field with a fixed set of values (`options` are value, text).
#[component]
pub fn SelectField(doc: Doc, info: &'static FieldInfo, options: Vec<(String, String)>) -> impl IntoView {
    let editor = editor();
    let path = info.path;
    let id = field_id(path);
    let current = memo(move || {
        doc.plan.with(|p| get(p, path).map(|v| display_value(Some(v)))).unwrap_or_else(|| doc.resolved.with(|v| display_value(get(v, path))))
    });
    let (name_id, megatron_id) = (format!("{id}-label"), format!("{id}-megatron"));
    view! {
        <div class="field">
            <label for=id.clone() title=info.tooltip()><span id=name_id.clone()>{info.label}</span>" "<code id=megatron_id.clone()>{info.megatron()}</code></label>
            <select id=id title=info.tooltip() aria-labelledby=name_id aria-describedby=megatron_id prop:value=current on:change=move |ev| editor.edit(path, Value::String(event_target_value(&ev)))>
                {options.into_iter().map(|(value, text)| view! { <option value=value.clone() selected=move || current.with(|c| *c == value)>{text}</option> }).collect_view()}
            </select>
        </div>
    }
}

/// Select options whose value and text are given as string pairs.
pub fn options(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}
