//! A comparison: the plan pinned as the baseline ("Compare with…"), and — in the tools module, where the Compare and
//! schedule panels live — its report and the core's diff from it to the plan being edited. The baseline travels in the
//! share link as `base=` (see [`super::share`]).

use super::{Doc, Outcome};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::diff::{Diff, diff};
use serde_json::Value;

/// The pinned baseline's plan document; none when nothing is pinned. The page holds it (the share link carries it).
#[derive(Clone, Copy)]
pub struct Baseline {
    pub plan: RwSignal<Option<Value>>,
}

impl Baseline {
    pub fn new(plan: RwSignal<Option<Value>>) -> Baseline {
        Baseline { plan }
    }

    /// Pins the plan being edited as the baseline.
    pub fn pin(&self, doc: Doc) {
        self.plan.set(Some(doc.plan.get_untracked()));
    }

    pub fn unpin(&self) {
        self.plan.set(None);
    }

    pub fn pinned(&self) -> bool {
        self.plan.with(Option::is_some)
    }
}

/// The baseline with what the core makes of it; copied into the panels that show a comparison.
#[derive(Clone, Copy)]
pub struct Comparison {
    pub baseline: Baseline,
    /// The baseline's report (planned once per pin and state of the core, not per edit).
    pub outcome: Memo<Option<Outcome>>,
    /// Baseline → the plan being edited; none when nothing is pinned or either plan cannot be read.
    pub diff: Memo<Option<Diff>>,
}

impl Comparison {
    pub fn new(baseline: Baseline, doc: Doc) -> Comparison {
        let plan = baseline.plan;
        // Planned again when the core's state moves (the recipes arriving change tuned defaults), as the plan's is.
        let outcome = memo(move || {
            doc.core_state();
            plan.with(|b| b.as_ref().map(meshplan_core::plan_value))
        });
        let diff = memo(move || {
            outcome.with(|a| match a {
                Some(Ok(a)) => doc.outcome.with(|b| b.as_ref().ok().map(|b| diff(a, b))),
                _ => None,
            })
        });
        Comparison { baseline, outcome, diff }
    }

    pub fn pin(&self, doc: Doc) {
        self.baseline.pin(doc);
    }

    pub fn unpin(&self) {
        self.baseline.unpin();
    }

    pub fn pinned(&self) -> bool {
        self.baseline.pinned()
    }
}
