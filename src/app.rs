//! The whole planner: the state (one plan document, the core's report as a memo over it, the editor in
//! context), the effects that sync it with the outside world, and the panels laid out in two columns — with
//! empty slots where the tools module ([`crate::tools`]) mounts the panels it loads after the first render.

use crate::panels::*;
use crate::state::{Baseline, Doc, Editor, bridge, sync};
use crate::ui::slot;
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let opening = sync::opening();
    let embed = opening.embed;
    let plan = RwSignal::new(opening.plan);
    let base = RwSignal::new(opening.base);
    let notice = RwSignal::new(opening.notice);
    let doc = Doc::new(plan.read_only());
    let baseline = Baseline::new(base);
    provide_context(baseline);
    let (theme, dark) = sync::theme();
    let editor = Editor::new(plan, notice);
    bridge::serve_tools(editor, base, dark);
    crate::state::hf::serve(doc.hf_reader);
    provide_context(editor);
    sync::keep_in_url(plan, base, embed);
    sync::follow_links(plan, base, notice);
    // Megatron Bridge's recipes after the first render (the page's wasm carries none, src/state/recipes.rs), so that
    // a recipe picked or imported later plans without waiting; a plan that names one fetches them at once. The embed
    // view too: tuned defaults come from them, and an embedded plan must show the figures the page shows.
    request_animation_frame(move || set_timeout(move || crate::state::recipes::load(doc.recipes), std::time::Duration::ZERO));

    view! {
        <div id="app" data-ready="" class:embed=embed>
            <Header doc embed theme />
            <Notice notice=notice.read_only() />
            {move || doc.outcome.with(|o| o.as_ref().err().cloned()).map(|error| view! { <InputErrorPanel error /> })}
            <div class="layout">
                <div class="inputs">
                    {(!embed).then(|| view! { <ModelPanel doc /> <ClusterPanel doc /> <TrainingPanel doc /> })}
                    <ParallelismPanel doc />
                </div>
                <div class="results" id="results" tabindex="-1">
                    <DerivedPanel outcome=doc.outcome />
                    {(!embed).then(|| view! { <div id=slot::ASSUMED class="tools-slot"></div> })}
                    <DiagnosticsPanel doc />
                    <div id=slot::COMPARE class="tools-slot"></div>
                    <GridPanel outcome=doc.outcome dark />
                    <MemoryPanel doc dark />
                    {(!embed).then(|| view! {
                        <div id=slot::ADVISOR class="tools-slot"></div>
                        <div id=slot::EXPORTS class="tools-slot"></div>
                        <div id=slot::OOM class="tools-slot"></div>
                    })}
                    <div id=slot::SCHEDULE class="tools-slot"></div>
                </div>
            </div>
        </div>
    }
}
