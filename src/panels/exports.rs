//! The Export panel: the core's exports of the plan (Megatron Bridge overrides and launch command,
//! Megatron-LM arguments, slurm sizing, the plan file), each with a Copy button.

use crate::state::Doc;
use crate::ui::copy::CopyButton;
use leptos::prelude::*;
use crate::state::signal::memo;
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

/// One export: its text is a memo, so an edit that leaves it equal leaves its block alone; the button says
/// "Copied" while the text shown is the text copied.
#[component]
fn Export(doc: Doc, id: &'static str, kind: ExportKind) -> impl IntoView {
    let text = memo(move || {
        doc.outcome.with(|o| match o.as_ref() {
            Ok(r) => export::export(kind, &r.plan, r),
            // An unreadable plan still exports as the document being edited.
            Err(_) if kind == ExportKind::Plan => doc.plan.with(|v| serde_json::to_string_pretty(v).unwrap_or_default()),
            Err(_) => String::new(),
        })
    });
    view! {
        <div class="export">
            <div class="export-head">
                <h3 id=format!("{id}-h")>{kind.label()}</h3>
                <CopyButton class="copy" describedby=format!("{id}-h") text=Callback::new(move |_| text.get_untracked()) shown=text
                    labels=["Copy", "Copied ✓", "Copy failed ✗"] advice="select the text and copy it." />
            </div>
            <pre id=id tabindex="0">{text}</pre>
        </div>
    }
}
