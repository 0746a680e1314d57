//! meshplan-web: the Leptos single-page planner over meshplan-core.

pub mod charts;
pub mod grid;
pub mod plan_doc;

use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    view! { <main id="app" data-ready=""><h1>"meshplan"</h1></main> }
}

/// Mounts the app on <body>.
pub fn start() {
    leptos::mount::mount_to_body(App);
}
