//! Megatron Bridge's recipes at run time. The page's modules are built without them (meshplan-core's
//! `builtin-recipes` feature is off: ~16 KB of gzipped wasm a first render does not need, growing with every recipe
//! read). Each module fetches [`FILE`] — written beside index.html at build time by scripts/recipes-asset.mjs from the
//! same data the CLI compiles in — and installs it in its copy of the core: the page once a plan names a recipe, the
//! tools module when it starts (its recipe picker and exports need them). Until then the core answers a plan that
//! names a recipe with `recipes-loading`; if the file cannot be had, the plan's error says why, and the next edit
//! that needs them tries again.

use crate::browser;
use leptos::prelude::*;
use meshplan_core::recipes;
use serde_json::Value;

/// The recipes' file, beside index.html.
pub const FILE: &str = "bridge-recipes.json";

/// Where a module's copy of the recipes is.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Not asked for yet.
    Idle,
    Loading,
    /// Installed (or built in).
    Ready,
    /// Why the file could not be had or read.
    Failed(String),
}

impl Load {
    /// Ready when the core has them (built in, or installed before), else idle.
    pub fn initial() -> Load {
        if recipes::available() { Load::Ready } else { Load::Idle }
    }
}

/// Whether `plan` names a recipe.
pub fn names_recipe(plan: &Value) -> bool {
    plan.get("recipe").is_some_and(|r| !r.is_null())
}

/// Starts fetching the recipes unless they are here or on their way; `state` follows.
pub fn load(state: RwSignal<Load>) {
    if state.with_untracked(|s| matches!(s, Load::Loading | Load::Ready)) {
        return;
    }
    if recipes::available() {
        state.set(Load::Ready);
        return;
    }
    state.set(Load::Loading);
    browser::fetch_text(FILE, move |reply| {
        let next = match reply {
            Ok(text) if recipes::install(&text) > 0 => Load::Ready,
            Ok(_) => Load::Failed(format!("{FILE} holds no recipes")),
            Err(why) => Load::Failed(why),
        };
        state.try_set(next);
    });
}
