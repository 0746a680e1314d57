//! The Export panel: the core's exports of the plan (Megatron Bridge overrides and launch command,
//! Megatron-LM arguments, slurm sizing, the plan file), each with a Copy button.

use crate::browser;
use crate::state::Doc;
use leptos::prelude::*;
use meshplan_core::{ExportKind, export};

/// Element ids are the e2e tests' handles; the texts are the core's exports.
const EXPORTS: [(&str, ExportKind); 5] = [
    ("export-bridge", ExportKind::Bridge),
    ("export-launch", ExportKind::BridgeCli),
    ("export-megatron", ExportKind::MegatronLm),
    ("export-slurm", ExportKind::Slurm),
    ("export-plan", ExportKind::Plan),
];

#[component]
pub fn ExportPanel(doc: Doc) -> impl IntoView {
    view! {
        <section class="panel" id="export" aria-labelledby="export-h">
            <h2 id="export-h">"Export"</h2>
            {EXPORTS.iter().map(|&(id, kind)| view! { <Export doc id kind /> }).collect_view()}
        </section>
    }
}

/// One export: its text is a memo, so an edit that leaves it equal leaves its block alone.
#[component]
fn Export(doc: Doc, id: &'static str, kind: ExportKind) -> impl IntoView {
    let text = Memo::new(move |_| {
        doc.outcome.with(|o| match o.as_ref() {
            Ok(r) => export::export(kind, &r.plan, r),
            // An unreadable plan still exports as the document being edited.
            Err(_) if kind == ExportKind::Plan => doc.plan.with(|v| serde_json::to_string_pretty(v).unwrap_or_default()),
            Err(_) => String::new(),
        })
    });
    // The text last copied: the button says "Copied" while that is still the text shown.
    let copied = RwSignal::new(None::<String>);
    let is_copied = move || copied.with(|c| text.with(|t| c.as_ref() == Some(t)));
    view! {
        <div class="export">
            <div class="export-head">
                <h3 id=format!("{id}-h")>{kind.label()}</h3>
                <button class="copy" aria-describedby=format!("{id}-h")
                    on:click=move |_| { let t = text.get_untracked(); browser::copy_text(&t); copied.set(Some(t)); }>
                    {move || if is_copied() { "Copied ✓" } else { "Copy" }}
                </button>
            </div>
            <pre id=id tabindex="0">{text}</pre>
        </div>
    }
}
