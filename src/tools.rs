//! The tools module: the panels a first render does not need, built as a second wasm (`meshplan-tools`, from
//! `src/bin/meshplan-tools.rs`) that the page loads once it has rendered (see [`crate::state::bridge`]). Each panel
//! mounts into its slot in the page (an empty element with the ids below) and works on a mirror of the page's plan:
//! the page sends its state after every change, and what a panel writes goes back to the page as an edit.
//!
//! The panels are the page's own components (same code, same props); only where they live changes. What they link
//! — the importers, the diff, the OOM explainer, the schedule, the exports, the Advisor's result types, the memory sweep's
//! chart, the settings form of "Advanced memory", the memory
//! panel's folded table and terms, the recipe picker, the config.json box — stays out of
//! the page's wasm.

use crate::panels::*;
use crate::state::bridge::{self, CatchUp, Shared};
use crate::state::{Baseline, Comparison, Doc, Editor};
use crate::ui::slot;
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use serde_json::Value;

/// Starts the tools module: mirrors the page's state, mounts each panel whose slot the page has, says it is ready.
/// The entry point (src/bin/meshplan-tools.rs) calls it on the planner's own page only.
pub fn start() {
    crate::browser::install_panic_hook();
    // Effects below are made before any mount (which would set the executor up).
    let _ = any_spawner::Executor::init_wasm_bindgen();
    let owner = Owner::new();
    owner.with(start_owned);
    // The tools live as long as the page.
    std::mem::forget(owner);
}

fn start_owned() {
    let plan = RwSignal::new(Value::Null);
    let base = RwSignal::new(None::<Value>);
    let dark_now = RwSignal::new(false);
    let notice = RwSignal::new(None::<String>);
    // What the page last sent: an edit is sent back only when a panel changed something.
    let received = StoredValue::new(Shared::default());
    let editor = Editor::new(plan, notice);
    let catch_up = follow_page(received, editor, base, dark_now);
    effect(move || {
        let now = Shared { plan: plan.get(), base: base.get(), dark: dark_now.get_untracked(), ..Shared::default() };
        let changed = received.with_value(|last| now.plan != last.plan || now.base != last.base);
        if now.plan != Value::Null && changed {
            bridge::send(bridge::EDIT, &now);
        }
    });
    let doc = Doc::new(plan.read_only());
    // The page's plans with a Hugging Face config are mapped here (`state::hf`).
    crate::state::hf::answer_page();
    // The recipe picker and the exports need Megatron Bridge's recipes whatever the plan names.
    crate::state::recipes::load(doc.recipes);
    // The Diagnostics panel's computed fixes, ranked here for the page (`state::remedies`).
    crate::state::remedies::rank_for_page(doc);
    let baseline = Baseline::new(base);
    let comparison = Comparison::new(baseline, doc);
    let dark = memo(move || dark_now.get());
    let embed = crate::state::sync::is_embed();
    // Whether the page's state has arrived: a memo, so that an edit does not re-mount every panel.
    let has_plan = memo(move || plan.with(|p| !p.is_null()));
    let ready = move || has_plan.get();

    mount(slot::IMPORT, editor, catch_up, move || view! { {move || ready().then(|| view! { <ImportBox doc /> })} });
    mount(slot::COMPARE, editor, catch_up, move || view! { {move || (ready() && comparison.pinned()).then(|| view! { <ComparePanel doc baseline=comparison embed /> })} });
    mount(slot::ASSUMED, editor, catch_up, move || view! { {move || ready().then(|| view! { <AssumedPanel doc /> })} });
    mount(slot::ADVISOR, editor, catch_up, move || view! { {move || ready().then(|| view! { <AdvisorPanel doc dark /> })} });
    mount(slot::EXPORTS, editor, catch_up, move || view! { {move || ready().then(|| view! { <ExportPanel doc /> })} });
    mount(slot::OOM, editor, catch_up, move || view! { {move || ready().then(|| view! { <OomPanel doc /> })} });
    mount(slot::EMBED, editor, catch_up, move || view! { {move || ready().then(|| view! { <EmbedAction doc /> })} });
    mount(slot::RECIPE, editor, catch_up, move || view! { {move || ready().then(|| view! { <RecipePicker doc /> })} });
    mount(slot::HF_CONFIG, editor, catch_up, move || view! { {move || ready().then(|| view! { <HfConfigBox doc /> })} });
    mount(slot::ADVANCED, editor, catch_up, move || view! { {move || ready().then(|| view! { <AdvancedMemory doc /> })} });
    mount(slot::MEMORY_DETAILS, editor, catch_up, move || view! { {move || ready().then(|| view! { <MemoryDetails outcome=doc.outcome /> })} });
    mount(slot::SWEEP, editor, catch_up, move || view! { {move || ready().then(|| view! { <SweepPanel doc dark /> })} });
    mount(slot::SCHEDULE, editor, catch_up, move || view! { {move || ready().then(|| view! { <SchedulePanel doc baseline=comparison /> })} });
    bridge::send(bridge::READY, &Shared::default());
}

/// Starts the module as the Advisor's Web Worker: installs Megatron Bridge's recipes (this build of the core has
/// none: a plan that names a recipe is `recipes-loading` until they are here, and stays so if the file cannot be
/// had), then runs `serve`, the layout search's message loop, which says when it is ready.
pub fn start_worker(serve: fn()) {
    crate::browser::install_panic_hook();
    crate::browser::fetch_text(crate::state::recipes::FILE, move |reply| {
        if let Ok(text) = reply {
            meshplan_core::recipes::install(&text);
        }
        serve();
    });
}

/// Keeps the mirror in step with the page, keyed on the page's revision: a `meshplan:state` event says only that
/// the page moved on; the state itself is pulled in a task after the next frame (the page's edit has painted by
/// then), once for all the revisions that came within that frame, and only if it is newer than the mirror's.
/// Returns the same pull to run at once ([`CatchUp`]).
fn follow_page(received: StoredValue<Shared>, editor: Editor, base: RwSignal<Option<Value>>, dark: RwSignal<bool>) -> CatchUp {
    let pending = StoredValue::new(false);
    let apply = move || {
        let Some(s) = bridge::pull() else { return };
        // The page's revisions start at 1; the mirror's at 0 (nothing received).
        if received.with_value(|r| r.rev >= s.rev) {
            return;
        }
        received.set_value(s.clone());
        crate::browser::mark("meshplan-tools-pulled");
        bridge::set_if_changed(dark, s.dark);
        bridge::set_if_changed(base, s.base);
        editor.set_resets(s.resets);
        editor.mirror(s.plan);
    };
    bridge::listen_rev(move |rev| {
        if pending.get_value() || received.with_value(|r| r.rev >= rev) {
            return;
        }
        pending.set_value(true);
        request_animation_frame(move || {
            set_timeout(
                move || {
                    pending.set_value(false);
                    apply();
                },
                std::time::Duration::ZERO,
            )
        });
    });
    CatchUp::new(move || apply())
}

/// Mounts `view` into the page's element with this id, if the page has one, with the editor in context.
fn mount<V: IntoView + 'static>(id: &str, editor: Editor, catch_up: CatchUp, view: impl FnOnce() -> V + 'static) {
    let Some(el) = crate::browser::element_by_id(id) else { return };
    let handle = leptos::mount::mount_to(el, move || {
        provide_context(editor);
        provide_context(catch_up);
        view()
    });
    // Mounted for the page's life.
    handle.forget();
}
