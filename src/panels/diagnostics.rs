//! The Diagnostics panel: the core's diagnostics, each with its code, message, fix and, where the fix
//! is a value change, a one-click Apply.

use crate::state::{Outcome, editor};
use leptos::prelude::*;
use meshplan_core::{Diagnostic, InputError, Severity};

#[component]
pub fn DiagnosticsPanel(outcome: Memo<Outcome>) -> impl IntoView {
    // A memo: most edits leave the diagnostics as they were, and then the list is not rebuilt.
    let items = Memo::new(move |_| outcome.with(|o| o.as_ref().map(|r| r.diagnostics.clone()).unwrap_or_default()));
    view! {
        <section class="panel" id="diagnostics" aria-labelledby="diagnostics-h">
            <h2 id="diagnostics-h">"Diagnostics"</h2>
            <ul class="diags">
                {move || items.get().into_iter().map(|d| view! { <DiagnosticItem d /> }).collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn DiagnosticItem(d: Diagnostic) -> impl IntoView {
    let editor = editor();
    let (sev, icon) = match d.severity {
        Severity::Error => ("error", "✗ error"),
        Severity::Warning => ("warning", "! warning"),
        Severity::Info => ("info", "i info"),
    };
    let apply = d.apply.clone();
    view! {
        <li class=format!("diag {sev}") data-code=d.code.to_string()>
            <span class="sev">{icon}</span>" "
            <code class="code">{d.code.to_string()}</code>
            <p class="message">{d.message.clone()}</p>
            <p class="fix">"Fix: "{d.fix.clone()}</p>
            {(!apply.is_empty()).then(|| {
                let text = apply.iter().map(|a| format!("{} = {}", a.path.rsplit('.').next().unwrap_or(&a.path), a.value)).collect::<Vec<_>>().join(", ");
                view! {
                    <button class="apply" on:click=move |_| for a in &apply { editor.edit(&a.path, a.value.clone()) }>
                        "Apply: "{text}
                    </button>
                }
            })}
        </li>
    }
}

/// An input the core could not read (a pasted command, an OOM message), as a one-item diagnostics list.
#[component]
pub fn InputErrorList(id: &'static str, error: InputError) -> impl IntoView {
    view! {
        <ul class="diags" id=id><li class="diag error" data-code=error.code.as_str()>
            <span class="sev">"✗ error"</span>" "<code class="code">{error.code.as_str()}</code>
            <p class="message">{error.message}</p><p class="fix">"Fix: "{error.fix}</p>
        </li></ul>
    }
}
