//! The app's state: one plan document, what the core makes of it, and the one writer that changes it.
//!
//! Panels get what they show as props (a [`Doc`]: the plan and memos over the core's report) and change
//! the plan through the [`Editor`] in context. `plan_doc` edits the document, `share` carries it in a
//! link, `sync` keeps the URL hash, localStorage and the theme in step with it.

pub mod baseline;
pub mod bridge;
pub mod hf;
pub mod plan_doc;
pub mod recipes;
pub mod remedies;
pub mod resolved;
pub mod share;
pub mod signal;
pub mod sync;

pub use baseline::{Baseline, Comparison};
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use meshplan_core::presets::{self, Catalog};
use meshplan_core::{Code, InputError, Report};
use serde_json::Value;
use std::sync::OnceLock;

/// What the core makes of the plan: its report, or why the plan file cannot be read.
pub type Outcome = Result<Report, InputError>;

/// The plan and the core's report on it, read-only: what panels are handed as props.
#[derive(Clone, Copy)]
pub struct Doc {
    /// The plan document (the plan file's JSON).
    pub plan: ReadSignal<Value>,
    /// The core's report, a memo over the plan.
    pub outcome: Memo<Outcome>,
    /// The resolved plan's values at the fields' paths (every default filled in, [`resolved::shown`]), as JSON
    /// addressed by the same paths as the plan.
    pub resolved: Memo<Value>,
    /// This module's copy of Megatron Bridge's recipes ([`recipes`]): the report is planned again when they arrive.
    pub recipes: RwSignal<recipes::Load>,
    /// Whether the tools module, which maps a Hugging Face config for the page ([`hf`]), has arrived: a plan with
    /// `model.hf_config` is planned again then.
    pub hf_reader: RwSignal<bool>,
}

impl Doc {
    /// The report and the resolved plan as memos over `plan`.
    pub fn new(plan: ReadSignal<Value>) -> Doc {
        let recipes = RwSignal::new(recipes::Load::initial());
        let hf_reader = RwSignal::new(false);
        let outcome = memo(move || {
            if plan.with(plan_doc::names_hf_config) {
                hf_reader.track();
            }
            let failed = recipes.with(|r| if let recipes::Load::Failed(why) = r { Some(why.clone()) } else { None });
            plan.with(|p| match failed.filter(|_| recipes::names_recipe(p)) {
                Some(why) => Err(InputError::new(
                    Code::RecipesLoading,
                    format!("the plan names a Megatron Bridge recipe, and the recipes ({}) could not be loaded: {why}", recipes::FILE),
                    format!("serve {} beside index.html (the build writes it), then edit the plan or reload", recipes::FILE),
                )),
                None => meshplan_core::plan_value(p),
            })
        });
        // A plan that names a recipe fetches them (once; again after a failure).
        effect(move || {
            if plan.with(recipes::names_recipe) {
                recipes::load(recipes);
            }
        });
        let resolved = memo(move || {
            outcome.with(|o| o.as_ref().map_or(Value::Null, |r| resolved::shown(&r.plan)))
        });
        Doc { plan, outcome, resolved, recipes, hf_reader }
    }

    /// What the core's answers depend on besides the plan, read (so tracked): whether the recipes are installed (tuned
    /// defaults come from them, `meshplan_core::tuned`) and whether the Hugging Face reader is here. A memo or effect
    /// that plans a plan of its own with the core keys on this too, or it keeps what it made before they arrived.
    pub fn core_state(&self) -> (bool, bool) {
        (self.recipes.with(|r| *r == recipes::Load::Ready), self.hf_reader.get())
    }
}

/// Every change to the plan or the notice goes through here; provided as context by the app.
#[derive(Clone, Copy)]
pub struct Editor {
    plan: RwSignal<Value>,
    notice: RwSignal<Option<String>>,
    /// How many times Reset was pressed: view state kept outside the plan (a search filter, a message) clears on it.
    resets: RwSignal<u64>,
}

impl Editor {
    pub fn new(plan: RwSignal<Value>, notice: RwSignal<Option<String>>) -> Editor {
        Editor { plan, notice, resets: RwSignal::new(0) }
    }

    /// The tools module's mirror takes the page's plan (a no-op when equal).
    pub fn mirror(&self, plan: Value) {
        signal::set_if_changed(self.plan, plan);
    }

    /// The number of resets so far (tracked: an effect that reads it runs again on Reset).
    pub fn resets(&self) -> u64 {
        self.resets.get()
    }

    /// Counts a reset that happened elsewhere (the page's, for the tools module's panels).
    pub fn set_resets(&self, n: u64) {
        if self.resets.get_untracked() != n {
            self.resets.set(n);
        }
    }

    /// Sets the field at a dotted path (`Value::Null` removes it), see [`plan_doc::set`].
    pub fn edit(&self, path: &str, value: Value) {
        self.plan.update(|p| plan_doc::set(p, path, value));
    }

    /// Any other change to the document (the Advisor's Apply writes a whole layout).
    pub fn update(&self, change: impl FnOnce(&mut Value)) {
        self.plan.update(change);
    }

    /// Back to the default plan, with no notice.
    pub fn reset(&self) {
        self.plan.set(plan_doc::default_plan());
        self.notice.set(None);
        self.resets.update(|n| *n += 1);
    }

    pub fn dismiss_notice(&self) {
        self.notice.set(None);
    }
}

/// The editor the app provides.
pub fn editor() -> Editor {
    expect_context::<Editor>()
}

/// The model presets and the GPU catalogue, read once.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(presets::catalog)
}
