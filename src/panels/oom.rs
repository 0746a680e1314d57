//! The OOM panel: "Explain an OOM" reads a CUDA out-of-memory message (and the failing rank, if the message does not
//! say it) against the plan through the core's `oom::explain`: the rank's pipeline stage and groups, meshplan's
//! prediction for that stage term by term beside the message's numbers, fragmentation or a real overrun, and the
//! nearby plans that fit, cheapest first, each with a one-click Apply.

use crate::format::{gib, seconds};
use crate::panels::compare::signed_seconds;
use crate::state::{Doc, editor};
use crate::panels::diagnostics::InputErrorList;
use leptos::prelude::*;
use meshplan_core::InputError;
use meshplan_core::oom::{Cause, Explanation, Fix, explain};

/// The most ranks of a group listed; a longer group shows its first and last few and its size.
const SHOWN_RANKS: usize = 12;

/// A group's ranks: "0, 1, 2, 3" or "0, 8, 16, 24, 32, 40, …, 1016 (128 ranks)".
pub fn rank_list(ranks: &[u32]) -> String {
    let join = |r: &[u32]| r.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    if ranks.len() <= SHOWN_RANKS {
        join(ranks)
    } else {
        format!("{}, …, {} ({} ranks)", join(&ranks[..SHOWN_RANKS - 2]), join(&ranks[ranks.len() - 1..]), ranks.len())
    }
}

/// "12.3 GiB", or "—" where the message or the prediction has no such number.
fn maybe_gib(b: Option<u64>) -> String {
    b.map_or_else(|| "—".into(), gib)
}

#[component]
pub fn OomPanel(doc: Doc) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let rank = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Result<Explanation, InputError>>);
    // The plan explained: after an edit (an Apply below, say) the explanation is of an earlier plan, and says so.
    let explained = RwSignal::new(None::<serde_json::Value>);
    let stale = Memo::new(move |_| explained.with(|e| e.as_ref().is_some_and(|e| doc.plan.with(|p| p != e))));
    let run = move |_| {
        explained.set(Some(doc.plan.get_untracked()));
        let r = rank.get_untracked().trim().parse::<u64>().ok();
        let message = text.get_untracked();
        let answer = doc.outcome.with_untracked(|o| match o {
            Ok(report) => doc.plan.with_untracked(|p| explain(p, report, &message, r)),
            Err(e) => Err(e.clone()),
        });
        result.set(Some(answer));
    };
    view! {
        <section class="panel" id="oom-panel" aria-labelledby="oom-h">
            <h2 id="oom-h">"Explain an OOM"</h2>
            <details prop:open=move || result.with(Option::is_some)>
                <summary>"Paste a CUDA out-of-memory message"</summary>
                <label for="oom-message">"The message (PyTorch's “CUDA out of memory. Tried to allocate …”)"</label>
                <textarea id="oom-message" rows="4" spellcheck="false"
                    placeholder="Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. …"
                    prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                <div class="field inline-field">
                    <label for="oom-rank">"Failing rank (global; empty: the message's)"</label>
                    <input id="oom-rank" type="text" inputmode="numeric" size="6"
                        prop:value=move || rank.get() on:input=move |ev| rank.set(event_target_value(&ev)) />
                    <button id="oom-explain" on:click=run>"Explain"</button>
                </div>
            </details>
            {move || stale.get().then(|| view! {
                <p id="oom-stale" class="hint stale" role="status">"The plan has changed since this explanation: press Explain again to explain the message against the plan as it is now."</p>
            })}
            {move || result.get().map(|r| match r {
                Err(error) => view! { <InputErrorList id="oom-error" error /> }.into_any(),
                Ok(x) => view! { <ExplanationView x /> }.into_any(),
            })}
        </section>
    }
}

#[component]
fn ExplanationView(x: Explanation) -> impl IntoView {
    let cause_class = match x.cause {
        Cause::Fragmentation => "fragmentation",
        Cause::Overrun => "overrun",
    };
    let coords = x.coordinates.map(|c| format!(" · TP {} · CP {} · DP {} · PP {} · EP {}", c.tp, c.cp, c.dp, c.pp, c.ep)).unwrap_or_default();
    view! {
        <p id="oom-where" class="summary">
            "Rank "{x.rank}" ("{x.rank_source.clone()}"): pipeline stage "<strong>{x.pipeline_stage}</strong>{coords}
        </p>
        <p id="oom-cause" class=format!("oom-cause {cause_class}") data-cause=cause_class>{x.cause_text.clone()}</p>
        <h3>"The rank's groups"</h3>
        <ul id="oom-groups" class="compare-list">
            {x.groups.iter().map(|(kind, ranks)| view! { <li data-kind=kind.clone()><strong>{kind.to_ascii_uppercase()}</strong>": "{rank_list(ranks)}</li> }).collect_view()}
        </ul>
        <h3>"The message beside meshplan's prediction for stage "{x.pipeline_stage}</h3>
        <table id="oom-compared" class="compare-table">
            <thead><tr><th scope="col">""</th><th scope="col">"the message"</th><th scope="col">"meshplan"</th></tr></thead>
            <tbody>
                {x.compared.iter().map(|c| view! {
                    <tr><th scope="row">{c.what.clone()}</th><td>{maybe_gib(c.message_bytes)}</td><td>{maybe_gib(c.predicted_bytes)}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
        <details>
            <summary>"The prediction term by term"</summary>
            <table id="oom-terms" class="compare-table">
                <thead><tr><th scope="col">"term"</th><th scope="col">"size"</th><th scope="col">"when"</th><th scope="col">"where"</th></tr></thead>
                <tbody>
                    {x.predicted_terms.iter().map(|t| view! {
                        <tr><th scope="row">{t.label.clone()}</th><td>{gib(t.bytes)}</td><td>{t.phase.clone()}</td><td>{t.location.clone()}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        </details>
        <h3>"Fixes, cheapest first"</h3>
        <table id="oom-fixes" class="compare-table">
            <thead><tr><th scope="col">"change"</th><th scope="col">"peak"</th><th scope="col">"step time"</th><th scope="col">""</th></tr></thead>
            <tbody>{x.fixes.into_iter().map(|fix| view! { <FixRow fix /> }).collect_view()}</tbody>
        </table>
        {x.notes.into_iter().map(|n| view! { <p class="hint">{n}</p> }).collect_view()}
    }
}

#[component]
fn FixRow(fix: Fix) -> impl IntoView {
    let editor = editor();
    let time = match (fix.step_time_s, fix.step_time_delta_s) {
        (Some(t), Some(d)) => format!("{} ({})", seconds(t), signed_seconds(d)),
        _ => "—".into(),
    };
    let edits = fix.edits.clone();
    view! {
        <tr class="fix-row">
            <th scope="row">{fix.change.clone()}{fix.caveat.clone().map(|c| view! { <br /><span class="hint">{c}</span> })}</th>
            <td>{gib(fix.peak_bytes)}</td>
            <td>{time}</td>
            <td>{(!edits.is_empty()).then(|| view! {
                <button class="apply" on:click=move |_| for (path, value) in &edits { editor.edit(path, value.clone()) }>"Apply"</button>
            })}{fix.edits.is_empty().then(|| view! { <span class="hint">"set it in the launch environment"</span> })}</td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_groups_are_shortened() {
        assert_eq!(rank_list(&[3, 11]), "3, 11");
        // A DP group of 128 ranks at stride 8: the first ten, then the last (8 × 127 = 1016).
        let dp: Vec<u32> = (0..128).map(|i| i * 8).collect();
        assert_eq!(rank_list(&dp), "0, 8, 16, 24, 32, 40, 48, 56, 64, 72, …, 1016 (128 ranks)");
    }
}
