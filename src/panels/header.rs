//! The page's header (title, the plan's status, share link, reset, theme), the notice a refused link
//! leaves, and the panel for a plan file the core cannot read.

use crate::browser;
use crate::format::count;
use crate::state::{Baseline, Doc, editor, share};
use crate::ui::copy::CopyButton;
use leptos::prelude::*;
use meshplan_core::{InputError, Severity};

/// The share link of the plan being edited, and of the pinned baseline if any (always the full planner's: no
/// `embed` flag).
fn share_link(doc: Doc, baseline: Option<Baseline>) -> String {
    let base = baseline.and_then(|b| b.plan.get_untracked());
    format!("{}{}", browser::page_url(), doc.plan.with_untracked(|p| share::encode_hash_with_base(p, base.as_ref(), &[])))
}

/// The status pill: "✓ valid plan", "✗ 2 errors" or "cannot plan", with its class.
fn status(doc: Doc) -> (&'static str, String) {
    doc.outcome.with(|o| match o {
        Err(_) => ("bad", "cannot plan".to_string()),
        Ok(r) => match r.diagnostics.iter().filter(|d| d.severity == Severity::Error).count() {
            0 => ("ok", "✓ valid plan".to_string()),
            errors => ("bad", format!("✗ {}", count(errors, "error"))),
        },
    })
}

#[component]
pub fn Header(doc: Doc, embed: bool, theme: RwSignal<String>) -> impl IntoView {
    let editor = editor();
    let baseline = use_context::<Baseline>();
    view! {
        <header class="top">
            <h1>"meshplan"<span class="tagline">" — Megatron-Core parallelism planner"</span></h1>
            <span id="status" class=move || format!("status {}", status(doc).0) role="status">{move || status(doc).1}</span>
            <div class="actions">
                {if embed {
                    view! { <a class="button" href=move || share_link(doc, baseline) target="_blank" rel="noopener">"Open the full planner ↗"</a> }.into_any()
                } else {
                    view! {
                        <CopyButton id="copy-link" text=Callback::new(move |_| share_link(doc, baseline))
                            labels=["Copy share link", "Link copied ✓", "Copy failed ✗"] advice="copy the link from the address bar." />
                        {baseline.map(|b| view! {
                            <button id="compare-pin" on:click=move |_| b.pin(doc) title="Pin the plan as it is now as the baseline; later edits are compared with it">
                                {move || if b.pinned() { "Compare with… (re-pin)" } else { "Compare with…" }}
                            </button>
                        })}
                        <button id="reset" on:click=move |_| editor.reset()>"Reset"</button>
                        <label class="inline" for="theme">"Theme"</label>
                        <select id="theme" on:change=move |ev| theme.set(event_target_value(&ev)) prop:value=move || theme.get()>
                            <option value="system">"System"</option>
                            <option value="light">"Light"</option>
                            <option value="dark">"Dark"</option>
                        </select>
                    }.into_any()
                }}
            </div>
        </header>
    }
}

/// Why a shared link was not opened, until dismissed.
#[component]
pub fn Notice(notice: ReadSignal<Option<String>>) -> impl IntoView {
    let editor = editor();
    move || {
        notice.get().map(|text| {
            view! {
                <div id="notice" class="notice" role="alert">
                    <span>{text}</span>
                    <button on:click=move |_| editor.dismiss_notice() aria-label="Dismiss the notice">"×"</button>
                </div>
            }
        })
    }
}

/// The plan file cannot be read: the core's input error, with its fix.
#[component]
pub fn InputErrorPanel(error: InputError) -> impl IntoView {
    view! {
        <section id="input-error" class="panel diag error" role="alert">
            <h2>"The plan cannot be read"</h2>
            <p><code>{error.code.as_str()}</code>" "{error.message}</p>
            <p class="fix">"Fix: "{error.fix}</p>
        </section>
    }
}
