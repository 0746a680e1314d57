//! The Training panel's "Advanced memory" section: one control per row of the core's settings table, generated from
//! the rows (`settings_form`), grouped as the table groups them, collapsed by default. A control shows the plan's
//! value, or the value the run resolves to when the plan leaves the row unset; "default" removes the key. The
//! diagnostics that name a row are listed under it. The rows mount when the section is first opened, so a closed
//! section costs an edit nothing.

use crate::settings_form::{self as form, Control};
use crate::state::plan_doc::{display_value, get, typed_value};
use crate::state::{Doc, editor};
use crate::ui::controls::field_id;
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::Severity;
use meshplan_core::settings::Setting;
use serde_json::Value;

#[component]
pub fn AdvancedMemory(doc: Doc) -> impl IntoView {
    let opened = RwSignal::new(false);
    view! {
        <details id="advanced-memory" class="advanced" on:toggle=move |ev| {
            if event_target::<web_sys::HtmlDetailsElement>(&ev).open() { opened.set(true) }
        }>
            <summary>"Advanced memory"</summary>
            <p class="hint">"Megatron-Core / Bridge run settings. Unset, a setting takes the default the run resolves to (shown); \"default\" unsets it."</p>
            <Show when=move || opened.get()>
                {form::groups().into_iter().map(|(group, rows)| view! {
                    <fieldset class="settings-group" data-group=format!("{group:?}")>
                        <legend>{group.label()}</legend>
                        {rows.into_iter().map(|row| view! { <SettingField doc row /> }).collect_view()}
                    </fieldset>
                }).collect_view()}
            </Show>
        </details>
    }
}

/// One row: its label (the Megatron / Bridge key), its control, a reset to the default, and its diagnostics.
#[component]
fn SettingField(doc: Doc, row: &'static Setting) -> impl IntoView {
    let editor = editor();
    let path = leak(row.path());
    let id = field_id(path);
    let tip = form::tooltip(row);
    let given = memo(move || doc.plan.with(|p| get(p, path).cloned()));
    let resolved = memo(move || doc.outcome.with(|o| o.as_ref().map(|r| form::resolved(&r.plan, row)).unwrap_or(Value::Null)));
    let diags = memo(move || {
        doc.outcome.with(|o| {
            o.as_ref()
                .map(|r| r.diagnostics.iter().filter(|d| form::is_about(row, d)).map(|d| (d.severity, d.code.to_string(), d.message.clone())).collect())
                .unwrap_or_default()
        })
    });
    let flagged = memo(move || diags.with(|ds: &Vec<(Severity, String, String)>| ds.iter().any(|d| d.0 == Severity::Error)));
    let is_set = memo(move || given.with(Option::is_some));
    let control = match form::control(row) {
        Control::Check => {
            let checked = memo(move || given.get().unwrap_or_else(|| resolved.get()).as_bool().unwrap_or(false));
            view! {
                <input id=id.clone() type="checkbox" title=tip.clone() prop:checked=checked
                    on:change=move |ev| editor.edit(path, Value::Bool(event_target_checked(&ev))) />
            }
            .into_any()
        }
        Control::Select(choices) => {
            let current = memo(move || given.with(|v| v.as_ref().map(|v| display_value(Some(v))).unwrap_or_default()));
            let default_text = move || format!("default ({})", form::shown(&resolved.get()));
            view! {
                <select id=id.clone() title=tip.clone() prop:value=current
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        editor.edit(path, if v.is_empty() { Value::Null } else { Value::String(v) })
                    }>
                    <option value="" selected=move || current.with(String::is_empty)>{default_text}</option>
                    {choices.iter().map(|&c| view! { <option value=c selected=move || current.with(|v| v == c)>{c}</option> }).collect_view()}
                </select>
            }
            .into_any()
        }
        Control::Number => {
            let value = memo(move || given.with(|v| display_value(v.as_ref())));
            let placeholder = memo(move || resolved.with(|v| if v.is_null() { String::new() } else { form::shown(v) }));
            view! {
                <input id=id.clone() type="text" inputmode="decimal" autocomplete="off" spellcheck="false" title=tip.clone()
                    aria-invalid=move || if flagged.get() { "true" } else { "false" }
                    placeholder=placeholder prop:value=value
                    on:input=move |ev| editor.edit(path, typed_value(&event_target_value(&ev))) />
            }
            .into_any()
        }
        Control::Names(names) => {
            let ticked = memo(move || form::names(&given.get().unwrap_or_else(|| resolved.get())));
            view! {
                <div class="names" role="group" aria-labelledby=format!("{id}-label")>
                    {names.iter().map(|&name| {
                        let box_id = format!("{id}-{}", name.replace('_', "-"));
                        view! {
                            <label class="name" for=box_id.clone()>
                                <input id=box_id.clone() type="checkbox" data-name=name
                                    prop:checked=move || ticked.with(|t| t.iter().any(|n| n == name))
                                    on:change=move |ev| {
                                        let base = ticked.get_untracked();
                                        editor.edit(path, form::toggled(names, &base, name, event_target_checked(&ev)))
                                    } />
                                <code>{name}</code>
                            </label>
                        }
                    }).collect_view()}
                </div>
            }
            .into_any()
        }
    };
    let (label_for, label_id) = (id.clone(), format!("{id}-label"));
    view! {
        <div class="setting" class:flagged=move || flagged.get() class:unset=move || !is_set.get() data-key=row.key>
            <div class="setting-head">
                <label id=label_id for=label_for title=tip.clone()><code>{row.key}</code></label>
                <button type="button" class="reset" title=format!("unset {}: {}", row.key, row.default)
                    disabled=move || !is_set.get()
                    on:click=move |_| editor.edit(path, Value::Null)>"default"</button>
            </div>
            {control}
            <p class="setting-label" title=tip>{row.doc().label}</p>
            <ul class="field-diags" aria-live="polite">
                {move || diags.get().into_iter().map(|(sev, code, message)| {
                    let class = if sev == Severity::Error { "field-error" } else if sev == Severity::Warning { "field-warning" } else { "field-info" };
                    let shown = code.clone();
                    view! { <li class=class data-code=code><code>{shown}</code>" "{message}</li> }
                }).collect_view()}
            </ul>
        </div>
    }
}

/// A row's dotted path as a `'static` str for the control's handlers. The section mounts its rows once (on first
/// open; the panel is never rebuilt), so this leaks a few dozen short strings once for the page's life.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
