//! The Training panel: sequence length, batch sizes, recompute, precision and the distributed optimizer, and the
//! slot where the tools module mounts the "Advanced memory" section with every other run setting.

use crate::fields;
use crate::state::Doc;
use crate::ui::controls::{CheckField, SelectField, TextField, options};
use leptos::prelude::*;

#[component]
pub fn TrainingPanel(doc: Doc) -> impl IntoView {
    view! {
        <section class="panel" id="training-panel" aria-labelledby="training-h">
            <h2 id="training-h">"Training"</h2>
            <div class="fields">
                {fields::TRAINING.iter().map(|info| view! { <TextField doc info /> }).collect_view()}
                <SelectField doc info=&fields::RECOMPUTE options=options(&[("none", "none"), ("selective", "selective"), ("full", "full")]) />
                <SelectField doc info=&fields::PRECISION options=options(&[("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "fp8"), ("fp4", "fp4"), ("fp32", "fp32")]) />
                <CheckField doc info=&fields::DISTRIBUTED_OPTIMIZER />
            </div>
            // "Advanced memory" is the tools module's, mounted here after the first render.
            <div id=crate::ui::slot::ADVANCED class="tools-slot"></div>
        </section>
    }
}
