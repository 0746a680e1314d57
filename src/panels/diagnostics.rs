//! The Diagnostics panel: the core's diagnostics, each with its code, message, fix and, where the fix
//! is a value change, a one-click Apply.

use crate::format::{gib, seconds};
use crate::state::{Doc, editor};
use leptos::prelude::*;
use meshplan_core::diag::FieldValue;
use meshplan_core::remedy::{self, Remedy};
use meshplan_core::{Diagnostic, InputError, Severity};

#[component]
pub fn DiagnosticsPanel(doc: Doc) -> impl IntoView {
    let outcome = doc.outcome;
    // A memo: most edits leave the diagnostics as they were, and then the list is not rebuilt.
    let items = Memo::new(move |_| outcome.with(|o| o.as_ref().map(|r| r.diagnostics.clone()).unwrap_or_default()));
    // A new error is listed first (the core sorts errors first): the list scrolls back to its top to show it, rather
    // than keep the scroll position of an older list.
    let errors = Memo::new(move |_| items.with(|ds| ds.iter().filter(|d| d.severity == Severity::Error).map(|d| d.code).collect::<Vec<_>>()));
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

/// "tensor_model_parallel_size = 2, sequence_parallel = true": a fix's edits by field name.
fn edits_text(edits: &[FieldValue]) -> String {
    edits.iter().map(|a| format!("{} = {}", a.path.rsplit('.').next().unwrap_or(&a.path), a.value)).collect::<Vec<_>>().join(", ")
}

/// What a re-planned fix predicts: "valid · fits · peak 61.2 GiB · step 3.21 s".
fn prediction(r: &Remedy) -> String {
    let validity = match r.errors_after {
        0 => "valid".to_string(),
        n => format!("{n} error{} left", if n == 1 { "" } else { "s" }),
    };
    let fits = if r.fits { "fits" } else { "does not fit" };
    let step = r.step_time_s.map(|t| format!(" · step {}", seconds(t))).unwrap_or_default();
    format!("{validity} · {fits} · peak {}{step}", gib(r.peak_bytes))
}

/// The fixes the core ranked for this diagnostic: for an error, those that clear it (best first, at most 3); for a
/// warning or an info, its own fix re-planned.
fn fixes_for(d: &Diagnostic, all: &[Remedy]) -> Vec<Remedy> {
    if d.severity == Severity::Error {
        remedy::clearing(all, d.code).take(3).cloned().collect()
    } else {
        all.iter().filter(|r| r.edits == d.apply).take(1).cloned().collect()
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
                let ranked = remedies.with(|all| fixes_for(&d2, all));
                if ranked.is_empty() {
                    // Not ranked yet (or no fix re-planned): the rule's own one-click fix.
                    (!apply.is_empty()).then(|| {
                        let apply = apply.clone();
                        let text = edits_text(&apply);
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
                                            "Apply: "{edits_text(&r.edits)}
                                        </button>
                                        " "<span class="prediction">{prediction(&r)}</span>
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
