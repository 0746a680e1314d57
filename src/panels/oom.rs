//! The OOM panel: "Explain an OOM" reads a log with one or more out-of-memory messages (and the failing rank, if the
//! message does not say it) against the plan through the core's `oom::explain_all`: per failing rank, its pipeline
//! stage and groups, the allocation that failed named against the stage's tensors (or the value the request implies),
//! one verdict, meshplan's prediction term by term beside the message's numbers, the assumptions its numbers rest on,
//! and the ranked fixes, each with a one-click Apply. The explanation is a memo over the plan: it follows every change.

use crate::format::{gib, seconds};
use crate::panels::compare::signed_seconds;
use crate::state::{Doc, editor, plan_doc};
use crate::panels::diagnostics::InputErrorList;
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::InputError;
use meshplan_core::oom::{Cause, Explanation, Fix, explain_all};
use meshplan_core::imports::{ImportOptions, has_printed_arguments, import_log};
use serde_json::Value;

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

/// The class and data-cause of a verdict (the e2e tests' handles).
pub fn cause_class(c: Cause) -> &'static str {
    match c {
        Cause::Fragmentation => "fragmentation",
        Cause::Overrun => "overrun",
        Cause::DoesNotFit => "does-not-fit",
        Cause::OutsideAllocator => "outside-allocator",
        Cause::MemoryReport => "memory-report",
        Cause::SharedDevice => "shared-device",
        Cause::HostMemory => "host-memory",
        Cause::OversizedRequest => "oversized-request",
    }
}

/// A button that writes `edits` to the plan in one change.
#[component]
pub fn ApplyEdits(edits: Vec<(String, Value)>, #[prop(into)] label: String) -> impl IntoView {
    let editor = editor();
    view! {
        <button class="apply" on:click=move |_| {
            let edits = edits.clone();
            editor.update(move |p| for (path, value) in edits { plan_doc::set(p, &path, value) });
        }>{label}</button>
    }
}

#[component]
pub fn OomPanel(doc: Doc) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let rank = RwSignal::new(String::new());
    // What was submitted; the explanation is recomputed from it and the current plan, so it follows every change.
    let submitted = RwSignal::new(None::<(String, Option<u64>)>);
    let run = move |_| submitted.set(Some((text.get_untracked(), rank.get_untracked().trim().parse::<u64>().ok())));
    let result = memo(move || {
        submitted.with(|s| {
            s.as_ref().map(|(message, r)| {
                doc.outcome.with(|o| match o {
                    Ok(report) => doc.plan.with(|p| explain_all(p, report, message, *r)),
                    Err(e) => Err::<Vec<Explanation>, InputError>(e.clone()),
                })
            })
        })
    });
    // A log that holds the arguments the run printed at start-up offers the run's own plan (imported as the import box
    // does, the page's GPU kept when the log names none); the explanation then follows it.
    let editor = editor();
    let log_args = memo(move || submitted.with(|s| s.as_ref().is_some_and(|(m, _)| has_printed_arguments(m))));
    // What using the log read: the plan it wrote and its notes (shown while that plan is the page's), or why not.
    let log_read = RwSignal::new(None::<Result<(Value, Vec<String>), InputError>>);
    let using_log = memo(move || log_read.with(|r| matches!(r, Some(Ok((plan, _))) if doc.plan.with(|p| p == plan))));
    let use_log = move |_| {
        let gpu = doc.plan.with_untracked(|p| p.get("cluster").and_then(|c| c.get("gpu")).and_then(Value::as_str).map(str::to_string));
        // The page's GPU when the log names none, unless the message's device capacity says another (the import's
        // oom::gpu_of_log).
        let opts = ImportOptions { unnamed_gpu: gpu, ..ImportOptions::default() };
        let read = submitted.with_untracked(|s| s.as_ref().map(|(m, _)| import_log(m, &opts)));
        match read {
            Some(Ok(i)) => {
                let plan = i.plan;
                log_read.set(Some(Ok((plan.clone(), i.notes))));
                editor.update(move |p| *p = plan);
            }
            Some(Err(e)) => log_read.set(Some(Err(e))),
            None => {}
        }
    };
    view! {
        <section class="panel" id="oom-panel" aria-labelledby="oom-h">
            <h2 id="oom-h">"Explain an OOM"</h2>
            <details prop:open=move || submitted.with(Option::is_some)>
                <summary>"Paste a CUDA out-of-memory message"</summary>
                <label for="oom-message">"The message or the log around it (PyTorch's “CUDA out of memory. Tried to allocate …”, HIP, XPU, NPU; cuBLAS / NCCL allocation failures; “CUDA error: out of memory”; or, to compare a run that did not run out, its memory report lines)"</label>
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
            {move || (log_args.get() && !using_log.get()).then(|| view! {
                <p id="oom-log-args" class="hint">
                    "This log holds the arguments the run printed at start-up. The explanation below is for the page's plan; "
                    <button id="oom-use-log-plan" on:click=use_log>"Use the run's settings from the log"</button>
                </p>
            })}
            {move || log_read.get().map(|r| match r {
                Err(error) => view! { <InputErrorList id="oom-log-error" error /> }.into_any(),
                Ok((_, notes)) => using_log.get().then(|| view! {
                    <details id="oom-log-notes"><summary>"The plan is now the log's: what was read and assumed"</summary>
                        <ul class="compare-list">{notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
                    </details>
                }).into_any(),
            })}
            {move || result.get().map(|r| match r {
                Err(error) => view! { <InputErrorList id="oom-error" error /> }.into_any(),
                Ok(xs) => {
                    let many = xs.len() > 1;
                    xs.into_iter().map(|x| view! { <ExplanationView x many /> }).collect_view().into_any()
                }
            })}
        </section>
    }
}

/// The allocation that failed: named, implied or the nearest tensors; the corrections with Apply.
#[component]
fn NamedView(x: Explanation) -> impl IntoView {
    let n = x.named.clone();
    view! {
        <div class="oom-named">
            {n.culprit.clone().map(|c| view! {
                <p class="oom-culprit" data-kind=format!("{:?}", c.kind)>"The request is "<strong>{c.label.clone()}</strong>
                    " — "{gib(c.predicted_bytes)}" predicted, "{c.phase.clone()}"."</p>
            })}
            {n.implied.clone().map(|i| view! { <p class="oom-implied">{i.text}</p> })}
            {(!x.corrections.is_empty()).then(|| {
                let shown = x.corrections.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ");
                view! { <p class="oom-correction">"Correction: "{shown}" "<ApplyEdits edits=x.corrections.clone() label="Apply" /></p> }
            })}
            {(n.culprit.is_none() && !n.nearest.is_empty()).then(|| view! {
                <p>"No tensor of the plan is the request's size; the nearest:"</p>
                <ul class="oom-nearest">{n.nearest.iter().map(|c| view! { <li>{c.label.clone()}" — "{gib(c.predicted_bytes)}</li> }).collect_view()}</ul>
            })}
        </div>
    }
}

#[component]
fn ExplanationView(x: Explanation, many: bool) -> impl IntoView {
    let cause_class = cause_class(x.cause);
    let coords = x.coordinates.map(|c| format!(" · TP {} · CP {} · DP {} · PP {} · EP {}", c.tp, c.cp, c.dp, c.pp, c.ep)).unwrap_or_default();
    let phase = x.phase.clone().map(|p| format!(" · {p}")).unwrap_or_default();
    view! {
        <div class="oom-rank" data-rank=x.rank>
        {many.then(|| view! { <h3>"Rank "{x.rank}</h3> })}
        <p id="oom-where" class="summary">
            "Rank "{x.rank}" ("{x.rank_source.clone()}"): pipeline stage "<strong>{x.pipeline_stage}</strong>{coords}{phase}
        </p>
        {x.message.note.clone().map(|n| view! { <p class="hint">{n}</p> })}
        {x.message.location.clone().map(|f| view! {
            <p class="oom-location">"Traceback: "<code>{format!("{}:{}", f.file, f.line)}</code>" in "<code>{f.function}</code>
                {(!f.what.is_empty()).then(|| format!(" — {}", f.what))}</p>
        })}
        <NamedView x=x.clone() />
        <p id="oom-cause" class=format!("oom-cause {cause_class}") data-cause=cause_class>{x.cause_text.clone()}</p>
        {(!x.over_budget.is_empty()).then(|| view! {
            <ul class="oom-over-budget">{x.over_budget.iter().map(|t| view! { <li>{t.label.clone()}": "{gib(t.bytes)}</li> }).collect_view()}</ul>
        })}
        {(!x.assumptions.is_empty()).then(|| view! {
            <h3>"What the numbers assume (not in the plan)"</h3>
            <ul class="oom-assumptions">{x.assumptions.iter().map(|a| view! { <li>{a.clone()}</li> }).collect_view()}</ul>
        })}
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
        {if x.fixes.is_empty() {
            // A memory report, the host's memory, a request no layout holds, a checkpoint's or a library's failure on a
            // plan that fits: the cause and the notes say why there is nothing to re-plan.
            view! { <p class="hint" id="oom-no-fixes">"No layout change to offer: the cause above and the notes below say why."</p> }.into_any()
        } else {
            view! {
                <h3>"Fixes: those that fit first, then those that shrink the named tensor, cheapest first"</h3>
                <FixTable fixes=x.fixes.clone() />
            }.into_any()
        }}
        {x.notes.into_iter().map(|n| view! { <p class="hint">{n}</p> }).collect_view()}
        </div>
    }
}

/// The ranked fixes, each re-planned, with Apply: the one table "Explain an OOM" and the out-of-memory diagnostic show.
#[component]
pub fn FixTable(fixes: Vec<Fix>) -> impl IntoView {
    view! {
        <table id="oom-fixes" class="compare-table">
            <thead><tr><th scope="col">"change"</th><th scope="col">"peak"</th><th scope="col">"step time"</th><th scope="col">""</th></tr></thead>
            <tbody>{fixes.into_iter().map(|fix| view! { <FixRow fix /> }).collect_view()}</tbody>
        </table>
    }
}

#[component]
fn FixRow(fix: Fix) -> impl IntoView {
    let time = match (fix.step_time_s, fix.step_time_delta_s) {
        (Some(t), Some(d)) => format!("{} ({})", seconds(t), signed_seconds(d)),
        _ => "—".into(),
    };
    let peak = format!("{}{}", gib(fix.peak_bytes), if fix.fits { "" } else { " (still over)" });
    let edits = fix.edits.clone();
    view! {
        <tr class="fix-row" data-fits=fix.fits.to_string() data-shrinks=fix.shrinks_culprit.to_string()>
            <th scope="row">{fix.change.clone()}{fix.caveat.clone().map(|c| view! { <br /><span class="hint">{c}</span> })}</th>
            <td>{peak}</td>
            <td>{time}</td>
            <td>{(!edits.is_empty()).then(|| view! { <ApplyEdits edits=edits.clone() label="Apply" /> })}
                {fix.edits.is_empty().then(|| view! { <span class="hint">"set it in the launch environment"</span> })}</td>
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
