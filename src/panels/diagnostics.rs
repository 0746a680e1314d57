//! The Diagnostics panel: the core's diagnostics, each with its code, message, fix and, where the fix
//! is a value change, a one-click Apply.

use crate::state::{Doc, editor};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::remedy::{self, Remedy};
use meshplan_core::{Diagnostic, InputError, Severity};

#[component]
pub fn DiagnosticsPanel(doc: Doc) -> impl IntoView {
    let outcome = doc.outcome;
    // A memo: most edits leave the diagnostics as they were, and then the list is not rebuilt.
    let items = memo(move || outcome.with(|o| o.as_ref().map(|r| r.diagnostics.clone()).unwrap_or_default()));
    // A new error is listed first (the core sorts errors first): the list scrolls back to its top to show it, rather
    // than keep the scroll position of an older list.
    let errors = memo(move || items.with(|ds| ds.iter().filter(|d| d.severity == Severity::Error).map(|d| d.code).collect::<Vec<_>>()));
    let list = NodeRef::<leptos::html::Ul>::new();
    Effect::new(move |prev: Option<Vec<meshplan_core::Code>>| {
        let now = errors.get();
        if let (Some(prev), Some(ul)) = (prev, list.get_untracked())
            && now.iter().any(|c| !prev.contains(c))
        {
            ul.set_scroll_top(0);
        }
        now
    });
    // The core's ranked fixes, from the tools module (`state::remedies`).
    let remedies = crate::state::remedies::ranked(doc, items);
    view! {
        <section class="panel" id="diagnostics" aria-labelledby="diagnostics-h">
            <h2 id="diagnostics-h">"Diagnostics"</h2>
            <ul class="diags" node_ref=list>
                {move || items.get().into_iter().map(|d| view! { <DiagnosticItem d remedies /> }).collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn DiagnosticItem(d: Diagnostic, remedies: ReadSignal<Vec<Remedy>>) -> impl IntoView {
    let editor = editor();
    let (sev, icon) = match d.severity {
        Severity::Error => ("error", "✗ error"),
        Severity::Warning => ("warning", "! warning"),
        Severity::Info => ("info", "i info"),
    };
    let apply = d.apply.clone();
    let d2 = d.clone();
    view! {
        <li class=format!("diag {sev}") data-code=d.code.to_string() tabindex="-1">
            <span class="sev">{icon}</span>" "
            <code class="code">{d.code.to_string()}</code>
            <p class="message">{d.message.clone()}</p>
            <p class="fix">"Fix: "{d.fix.clone()}</p>
            {move || {
                let ranked: Vec<Remedy> = remedies.with(|all| remedy::for_diagnostic(&d2, all).into_iter().cloned().collect());
                if ranked.is_empty() {
                    // Not ranked yet (or no fix re-planned): the rule's own one-click fix.
                    (!apply.is_empty()).then(|| {
                        let apply = apply.clone();
                        let text = remedy::edits_text(&apply);
                        view! {
                            <button class="apply" on:click=move |_| for a in &apply { editor.edit(&a.path, a.value.clone()) }>
                                "Apply: "{text}
                            </button>
                        }
                    }).into_any()
                } else {
                    view! {
                        <ol class="remedies" aria-label="Fixes, re-planned: the smallest change first">
                            {ranked.into_iter().enumerate().map(|(i, r)| {
                                let edits = r.edits.clone();
                                view! {
                                    <li class="remedy">
                                        <button class=if i == 0 { "apply" } else { "apply-alt" }
                                            on:click=move |_| for a in &edits { editor.edit(&a.path, a.value.clone()) }>
                                            "Apply: "{r.edits_text()}
                                        </button>
                                        " "<span class="prediction">{r.prediction()}</span>
                                    </li>
                                }
                            }).collect_view()}
                        </ol>
                    }.into_any()
                }
            }}
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
