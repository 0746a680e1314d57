//! meshplan-web: the Leptos single-page planner over meshplan-core. The app edits the plan and
//! renders the core's report; all sizing stays in the core.
//!
//! `state` holds the plan and the report; `panels` one file per panel; `ui` the controls and chart
//! frame panels share; `format` how numbers read; `tools` the panels loaded after the first render
//! (a second wasm, `meshplan-tools`). `charts`, `grid`, `advisor` and `fields` are plain
//! Rust (SVG, pixels, plan edits, field facts); `browser` wraps the browser; `api` is the JS API.

pub mod advisor;
pub mod api;
pub mod app;
pub mod browser;
pub mod charts;
pub mod fields;
pub mod format;
pub mod grid;
pub mod panels;
pub mod settings_form;
pub mod state;
pub mod strip;
pub mod tools;
pub mod ui;

pub use app::App;

/// Installs the panic panel and mounts the planner — only on the planner's own page (its
/// <body data-meshplan-app>), so that a docs page importing meshplan-web.js for the JS API
/// gets the API alone.
pub fn start() {
    browser::install_panic_hook();
    if browser::is_planner_page() {
        leptos::mount::mount_to_body(App);
        browser::mark("meshplan-mounted");
    }
}
