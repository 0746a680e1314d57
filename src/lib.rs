//! meshplan-web: the Leptos single-page planner over meshplan-core. The app edits the plan and
//! renders the core's report; all sizing stays in the core.

pub mod api;
pub mod advisor;
pub mod app;
pub mod browser;
pub mod charts;
pub mod fields;
pub mod grid;
pub mod plan_doc;

pub use app::App;

/// Installs the panic panel and mounts the planner — only on the planner's own page (its
/// <body data-meshplan-app>), so that a docs page importing meshplan-web.js for the JS API
/// gets the API alone.
pub fn start() {
    browser::install_panic_hook();
    let body = browser::window().and_then(|w| w.document()).and_then(|d| d.body());
    if body.is_some_and(|b| b.has_attribute("data-meshplan-app")) {
        leptos::mount::mount_to_body(App);
        browser::mark("meshplan-mounted");
    }
}
