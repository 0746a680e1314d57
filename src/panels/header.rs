//! The page's header (title, the plan's status, share link, reset, theme), the notice a refused link
//! leaves, and the panel for a plan file the core cannot read.

use crate::browser;
use crate::format::{count, gib, percent, seconds};
use crate::state::{Baseline, Doc, editor, recipes, share};
use crate::ui::copy::CopyButton;
use crate::ui::slot;
use leptos::prelude::*;
use crate::state::signal::memo;
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

/// The figures the summary bar shows: whether the plan fits and its peak against the GPU's memory, the step time and
/// MFU (none when the mesh does not divide the world), and the first error's code.
#[derive(Clone, PartialEq)]
struct Summary {
    fits: bool,
    peak: String,
    step: Option<(String, String)>,
    first_error: Option<String>,
}

fn summary(doc: Doc) -> Option<Summary> {
    doc.outcome.with(|o| {
        let r = o.as_ref().ok()?;
        let m = &r.memory;
        Some(Summary {
            fits: m.fits,
            peak: format!("{} of {}", gib(m.peak_bytes), gib(m.gpu_memory_bytes)),
            step: r.performance.as_ref().map(|p| (seconds(p.step_time_s), percent(p.mfu))),
            first_error: r.diagnostics.iter().find(|d| d.severity == Severity::Error).map(|d| d.code.to_string()),
        })
    })
}

/// Whether the figures stand on tuned defaults that are not here yet: the plan asks for tuned defaults (it names no
/// recipe and does not ask for plain ones) while this module's copy of Megatron Bridge's recipes is still on its way
/// (`Some(None)`) or could not be had (`Some(Some(why))`). Until then the core plans with Megatron-Core's defaults.
fn tuned_pending(doc: Doc) -> Option<Option<String>> {
    let tuned = doc.plan.with(|p| !meshplan_core::tuned::plain(p));
    doc.recipes.with(|r| match r {
        _ if !tuned => None,
        recipes::Load::Ready => None,
        recipes::Load::Failed(why) => Some(Some(why.clone())),
        recipes::Load::Idle | recipes::Load::Loading => Some(None),
    })
}

/// The bar under the title that stays in view while the page scrolls, at every width: valid or how many errors (a
/// link to the first), fits, peak memory, step time and MFU; and, while they are missing, that the tuned defaults are.
#[component]
fn SummaryBar(doc: Doc) -> impl IntoView {
    let figures = memo(move || summary(doc));
    let pending = memo(move || tuned_pending(doc));
    let go_to_first_error = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        if let Some(el) = browser::first_error() {
            el.scroll_into_view();
            let _ = el.focus();
        }
    };
    view! {
        <div id="summary" class="summary-bar" aria-label="Plan summary">
            <span id="status" class=move || format!("status {}", status(doc).0) role="status">{move || status(doc).1}</span>
            {move || figures.get().map(|f| view! {
                {f.first_error.map(|code| view! {
                    <a id="first-error" href="#diagnostics" on:click=go_to_first_error>"first: "<code>{code}</code></a>
                })}
                <span id="s-fits" class=if f.fits { "fig ok" } else { "fig bad" }>{if f.fits { "fits" } else { "does not fit" }}</span>
                <span id="s-peak" class="fig"><span class="k">"peak "</span>{f.peak}</span>
                {f.step.map(|(step, mfu)| view! {
                    <span id="s-step" class="fig"><span class="k">"step "</span>{step}</span>
                    <span id="s-mfu" class="fig"><span class="k">"MFU "</span>{mfu}</span>
                })}
            })}
            {move || pending.get().map(|failed| {
                let (class, text, title) = match failed {
                    None => ("fig pending", "tuned defaults loading…", "Megatron Bridge's perf recipes are on their way; until they arrive".to_string()),
                    Some(why) => ("fig bad", "plain defaults: Bridge's recipes not loaded", format!("Megatron Bridge's perf recipes could not be loaded ({why});")),
                };
                view! { <span id="s-defaults" class=class title=title + " the figures use Megatron-Core's plain defaults">{text}</span> }
            })}
        </div>
    }
}

/// The embed snippet of the plan being edited: an iframe of the compact view (`embed=1`).
fn embed_snippet(doc: Doc) -> (String, String) {
    let url = format!("{}{}", browser::page_url(), doc.plan.with_untracked(|p| share::encode_hash(p, &[("embed", "1")])));
    let snippet = format!("<iframe src=\"{url}\" width=\"820\" height=\"900\" title=\"meshplan: the plan\" loading=\"lazy\"></iframe>");
    (url, snippet)
}

/// "Embed": the iframe snippet for a docs page, with a copy button and a live preview of what it shows. Mounted by the
/// tools module into the header's slot (a first render shows the plan, not the snippet).
#[component]
pub fn EmbedAction(doc: Doc) -> impl IntoView {
    let open = RwSignal::new(false);
    let snippet = memo(move || {
        doc.plan.track();
        open.get().then(|| embed_snippet(doc))
    });
    view! {
        <details id="embed-action" class="embed-action" on:toggle=move |ev| open.set(event_target::<web_sys::HtmlDetailsElement>(&ev).open())>
            <summary>"Embed"</summary>
            {move || snippet.get().map(|(url, text)| {
                let copy_text = text.clone();
                view! {
                    <div class="embed-pop">
                        <label for="embed-snippet">"Paste this into a docs page: the compact view of this plan"</label>
                        <textarea id="embed-snippet" rows="3" readonly spellcheck="false">{text}</textarea>
                        <CopyButton id="copy-embed" text=Callback::new(move |_| copy_text.clone())
                            labels=["Copy snippet", "Snippet copied ✓", "Copy failed ✗"] advice="select the snippet and copy it." />
                        <iframe id="embed-preview" src=url title="Preview of the embedded view" width="410" height="300"></iframe>
                    </div>
                }
            })}
        </details>
    }
}

/// What the embedded view names: "Llama 3.1 8B · 16 × NVIDIA H100 · TP 2 · PP 2 · CP 1 · EP 1".
fn embed_title(doc: Doc) -> String {
    doc.outcome.with(|o| {
        o.as_ref()
            .map(|r| {
                let par = &r.plan.parallelism;
                let mut s = format!("{} · {} × {} · TP {} · PP {}", r.plan.model_name, r.derived.world_size, r.plan.gpu.name, par.tp(), par.pp());
                if par.vpp() > 1 {
                    s.push_str(&format!(" · VPP {}", par.vpp()));
                }
                s.push_str(&format!(" · CP {} · EP {}", par.cp(), par.ep()));
                if par.etp() != par.tp() && par.ep() > 1 {
                    s.push_str(&format!(" · ETP {}", par.etp()));
                }
                s
            })
            .unwrap_or_default()
    })
}

#[component]
pub fn Header(doc: Doc, embed: bool, theme: RwSignal<String>) -> impl IntoView {
    let editor = editor();
    let baseline = use_context::<Baseline>();
    view! {
        <header class="top">
            <a class="skip-link" href="#results">"Skip to the results"</a>
            <h1>"meshplan"<span class="tagline">" — Megatron-Core parallelism planner"</span></h1>
            <div class="actions">
                {if embed {
                    view! {
                        <p id="embed-title" class="embed-title">{move || embed_title(doc)}</p>
                        <a class="button" href=move || share_link(doc, baseline) target="_blank" rel="noopener">"Open the full planner ↗"</a>
                    }.into_any()
                } else {
                    view! {
                        <CopyButton id="copy-link" text=Callback::new(move |_| share_link(doc, baseline))
                            labels=["Copy share link", "Link copied ✓", "Copy failed ✗"] advice="copy the link from the address bar." />
                        {baseline.map(|b| view! {
                            <button id="compare-pin" on:click=move |_| b.pin(doc) title="Pin the plan as it is now as the baseline; later edits are compared with it">
                                {move || if b.pinned() { "Compare with… (re-pin)" } else { "Compare with…" }}
                            </button>
                        })}
                        <div id=slot::EMBED class="tools-slot"></div>
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
        <SummaryBar doc />
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
