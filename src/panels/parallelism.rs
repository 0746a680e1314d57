//! The Parallelism panel: TP, PP, VPP, CP, EP, ETP, uneven first and last stages, sequence parallel and
//! the rank order (with Megatron-Core's usual orders offered).

use crate::fields;
use crate::state::plan_doc::typed_value;
use crate::state::{Doc, editor};
use crate::ui::controls::{CheckField, TextField, field_id, field_text};
use leptos::prelude::*;

#[component]
pub fn ParallelismPanel(doc: Doc) -> impl IntoView {
    view! {
        <section class="panel" id="parallelism-panel" aria-labelledby="parallelism-h">
            <h2 id="parallelism-h">"Parallelism"</h2>
            <div class="fields">
                {fields::PARALLELISM.iter().map(|info| view! { <TextField doc info /> }).collect_view()}
                <CheckField doc info=&fields::SEQUENCE_PARALLEL />
                <OrderField doc />
            </div>
        </section>
    }
}

/// The rank order as text, with the usual orders as suggestions.
#[component]
fn OrderField(doc: Doc) -> impl IntoView {
    let editor = editor();
    let info = &fields::ORDER;
    let id = field_id(info.path);
    let (order, resolved_order) = field_text(doc, info.path);
    view! {
        <div class="field">
            <label for=id.clone() title=info.tooltip()>{info.label}" "<code>"order"</code></label>
            <input id=id list="orders" type="text" spellcheck="false" title=info.tooltip()
                placeholder=resolved_order
                prop:value=order
                on:input=move |ev| editor.edit(info.path, typed_value(&event_target_value(&ev))) />
            <datalist id="orders">
                <option value="tp-cp-ep-dp-pp"></option>
                <option value="tp-cp-ep-pp-dp"></option>
                <option value="tp-pp-dp"></option>
            </datalist>
        </div>
    }
}
