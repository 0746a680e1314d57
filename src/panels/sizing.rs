//! "Size the cluster" (issue 25), in the Advisor: the core's cluster sizing (`size::size_str`) run in the search
//! worker for this plan's model, GPU, node size and batch over a range of node counts; a table of each count's best
//! layout, time to train and GPU-hours, the scaling picture (`charts::scaling`), and Apply to load a count's plan.
//! It computes nothing itself: every figure is the sizing's.

use crate::format::{gib_figure, percent};
use crate::state::{Doc, editor, plan_doc};
use crate::ui::chart::{Chart, swatch_box, swatch_diamond, swatch_line};
use crate::{advisor, browser, charts};
use leptos::prelude::*;
use crate::state::signal::memo;
use meshplan_core::size::{SizePoint, SizeResult};
use meshplan_core::{Code, InputError};
use serde_json::{Map, Value};
use std::sync::Arc;

#[derive(Clone)]
enum Sizing {
    Idle,
    Running,
    Done { result: Arc<SizeResult>, ms: f64 },
    Failed(InputError),
}

/// The request the form's boxes make (empty boxes left out: the core's defaults apply).
fn request(fields: &[(&str, String)]) -> String {
    let map: Map<String, Value> = fields.iter().filter(|(_, v)| !v.trim().is_empty()).map(|(k, v)| (k.to_string(), Value::from(v.trim()))).collect();
    Value::Object(map).to_string()
}

fn days(s: f64) -> String {
    format!("{:.1}", s / 86_400.0)
}

fn layout_text(q: &SizePoint) -> String {
    let Some(c) = &q.best else { return String::new() };
    let p = &c.parallelism;
    let mut s = format!("TP {} · PP {}", p.tensor_model_parallel_size, p.pipeline_model_parallel_size);
    if let Some(v) = p.virtual_pipeline_model_parallel_size {
        s += &format!(" · VPP {v}");
    }
    for (name, x) in [("CP", p.context_parallel_size), ("EP", p.expert_model_parallel_size)] {
        if x > 1 {
            s += &format!(" · {name} {x}");
        }
    }
    s + &format!(" · mbs {}", c.training.micro_batch_size)
}

/// The line under the button: what it does, that it runs, why it failed, or the answers.
fn status(s: &Sizing) -> String {
    match s {
        Sizing::Idle => "How many nodes, how long and how many GPU-hours to train this model, GPU and batch on the tokens below: the Advisor's search at each node count.".into(),
        Sizing::Running => "sizing…".into(),
        Sizing::Failed(e) => format!("The sizing could not run: {} Fix: {}", e.message, e.fix),
        Sizing::Done { result: r, ms } => {
            let mut t = format!("{} node counts sized in {ms:.0} ms.", r.points.len());
            match r.min_gpus {
                Some(g) => t += &format!(" Fewest GPUs that hold the model: {g}."),
                None => t += " No count tried holds the model.",
            }
            if r.options.deadline_s.is_some() {
                match r.fewest_nodes_meeting_deadline {
                    Some(n) => t += &format!(" Fewest nodes meeting the deadline: {n}."),
                    None => t += " No count tried meets the deadline.",
                }
            }
            if r.options.gpu_hours.is_some() {
                match r.fastest_within_budget {
                    Some(n) => t += &format!(" Fastest within the budget: {n} nodes."),
                    None => t += " No count tried fits the budget.",
                }
            }
            if let Some(n) = r.efficiency_below_threshold_at {
                t += &format!(" Throughput per GPU falls below {} of the best smaller count's at {n} nodes.", percent(r.efficiency_threshold));
            }
            t
        }
    }
}

/// A labelled text box of the sizing form (its own view state, not a plan field).
#[component]
fn SizeBox(id: &'static str, label: &'static str, hint: &'static str, value: RwSignal<String>) -> impl IntoView {
    view! {
        <div class="field">
            <label for=id title=hint>{label}</label>
            <input id=id type="text" autocomplete="off" spellcheck="false" title=hint placeholder=hint
                prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) />
        </div>
    }
}

#[component]
pub fn SizingPanel(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let state = RwSignal::new(Sizing::Idle);
    let catch_up = crate::state::bridge::CatchUp::from_context();
    let (tokens, deadline, gpu_hours, nodes, efficiency) =
        (RwSignal::new("1T".to_string()), RwSignal::new("30d".to_string()), RwSignal::new(String::new()), RwSignal::new("1..256".to_string()), RwSignal::new("0.8".to_string()));
    let running = move || state.with(|s| matches!(s, Sizing::Running));
    let run = move |_| {
        if running() {
            return;
        }
        state.set(Sizing::Running);
        let fields = [("tokens", tokens.get_untracked()), ("deadline", deadline.get_untracked()), ("gpu_hours", gpu_hours.get_untracked()), ("nodes", nodes.get_untracked()), ("efficiency", efficiency.get_untracked())];
        catch_up.map(crate::state::bridge::CatchUp::run);
        browser::size_in_worker(doc.plan.get_untracked().to_string(), request(&fields), move |reply| {
            state.try_set(match reply {
                Ok((json, ms)) => match serde_json::from_str::<SizeResult>(&json) {
                    Ok(result) => Sizing::Done { result: Arc::new(result), ms },
                    Err(_) => Sizing::Failed(advisor::search_error(&json)),
                },
                Err(why) => Sizing::Failed(InputError::new(Code::SearchWorker, why, "reload the page; if it persists, serve meshplan-tools*.js and .wasm beside index.html")),
            });
        });
    };
    let result = memo(move || state.with(|s| if let Sizing::Done { result, .. } = s { Some(result.clone()) } else { None }));
    let ms = move || state.with(|s| if let Sizing::Done { ms, .. } = s { format!("{ms:.1}") } else { String::new() });
    view! {
        <h3 class="chart-title" id="sizing-h">"Size the cluster"</h3>
        <div class="sizing-form">
            <SizeBox id="size-tokens" label="tokens" hint="tokens to train: 15T, 500B" value=tokens />
            <SizeBox id="size-deadline" label="deadline" hint="30d, 12h, 2w" value=deadline />
            <SizeBox id="size-gpu-hours" label="GPU-hours" hint="budget: 500k, 2M" value=gpu_hours />
            <SizeBox id="size-nodes" label="nodes" hint="16..512 (empty: up to 65,536 GPUs)" value=nodes />
            <SizeBox id="size-efficiency" label="efficiency" hint="0.8: the share of the best smaller count's throughput per GPU" value=efficiency />
        </div>
        <div class="advisor-head">
            <button id="size-cluster" on:click=run aria-describedby="sizing-status">{move || if running() { "Sizing…" } else { "Size the cluster" }}</button>
            <p id="sizing-status" class="hint" role="status" aria-live="polite" data-ms=ms>{move || state.with(status)}</p>
        </div>
        {move || result.get().map(|r| view! { <SizingTable doc result=r.clone() /> <ScalingPicture dark result=r /> })}
    }
}

/// One row per node count: its best layout and figures, or why none runs; Apply loads the count's plan.
#[component]
fn SizingTable(doc: Doc, result: Arc<SizeResult>) -> impl IntoView {
    let editor = editor();
    let moe = doc.outcome.with_untracked(|o| o.as_ref().is_ok_and(|r| r.plan.model.is_moe()));
    let rows = result
        .points
        .iter()
        .map(|q| {
            let q = q.clone();
            let marks = [(q.meets_deadline == Some(true), "deadline"), (q.within_budget == Some(true), "budget")];
            let mark: Vec<&str> = marks.iter().filter(|m| m.0).map(|m| m.1).collect();
            let (n, gbs) = (q.num_nodes, q.global_batch_size);
            let apply = q.best.clone().map(|c| {
                let label = format!("Apply {n} nodes: {}", layout_text(&q));
                view! {
                    <button class="apply-size" aria-label=label on:click=move |_| editor.update(|p| {
                        plan_doc::set(p, "cluster.num_nodes", n.into());
                        plan_doc::set(p, "training.global_batch_size", gbs.into());
                        advisor::apply_candidate(p, &c.parallelism, &c.training, moe);
                    })>"Apply"</button>
                }
            });
            match (q.time_to_train_s, q.gpu_hours) {
                (Some(t), Some(h)) => view! {
                    <tr class="size-row" data-nodes=n>
                        <th scope="row" data-label="nodes">{n}</th><td data-label="GPUs">{q.gpus}</td><td data-label="GBS">{gbs}</td>
                        <td data-label="layout" class="layout-cell">{layout_text(&q)}</td><td data-label="days">{days(t)}</td>
                        <td data-label="GPU-hours">{format!("{h:.0}")}</td><td data-label="MFU">{q.mfu.map(percent).unwrap_or_default()}</td>
                        <td data-label="peak GiB">{q.peak_bytes.map(gib_figure).unwrap_or_default()}</td>
                        <td data-label="efficiency">{q.scaling_efficiency.map(percent).unwrap_or_default()}</td>
                        <td data-label="meets">{mark.join(", ")}</td><td class="apply-cell">{apply}</td>
                    </tr>
                }
                .into_any(),
                _ => view! {
                    <tr class="size-row no-fit" data-nodes=n>
                        <th scope="row" data-label="nodes">{n}</th><td data-label="GPUs">{q.gpus}</td><td data-label="GBS">{gbs}</td>
                        <td colspan="8" class="no-fit-why">{q.no_fit.as_ref().map(|f| format!("{} [{}]", f.message, f.code)).unwrap_or_default()}</td>
                    </tr>
                }
                .into_any(),
            }
        })
        .collect_view();
    let notes: Vec<String> = result.assumptions.iter().chain(&result.notes).cloned().collect();
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="Node counts and their best layouts (scrolls sideways)">
            <table id="sizing-table" class="advisor-table">
                <caption class="sr-only">"Each node count's best layout, time to train and GPU-hours"</caption>
                <thead><tr>
                    <th scope="col" title="num_nodes">"nodes"</th><th scope="col">"GPUs"</th><th scope="col" title="global_batch_size">"GBS"</th>
                    <th scope="col">"layout"</th><th scope="col">"days"</th><th scope="col">"GPU-hours"</th><th scope="col">"MFU"</th>
                    <th scope="col">"peak GiB"</th><th scope="col" title="throughput per GPU over the best of any smaller count">"efficiency"</th>
                    <th scope="col">"meets"</th><th scope="col"><span class="sr-only">"apply"</span></th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <details class="hint"><summary>"What the sizing assumed"</summary><ul>{notes.into_iter().map(|a| view! { <li>{a}</li> }).collect_view()}</ul></details>
    }
}

/// The scaling picture of a sizing: the fitting counts' throughput per GPU and days to train, with the marks.
#[component]
fn ScalingPicture(dark: Memo<bool>, result: Arc<SizeResult>) -> impl IntoView {
    let pts: Vec<charts::ScalePoint> = result
        .points
        .iter()
        .filter_map(|q| Some(charts::ScalePoint { gpus: q.gpus, tokens_per_s_per_gpu: q.tokens_per_s_per_gpu?, days: q.time_to_train_s? / 86_400.0 }))
        .collect();
    let gpus_of = |n: Option<u64>| n.map(|n| n.saturating_mul(result.gpus_per_node));
    // The threshold against the best rate up to the first count below it (the running best the core compares with).
    let upto = result.efficiency_below_threshold_at.unwrap_or(u64::MAX);
    let reference = result.points.iter().filter(|q| q.num_nodes <= upto).filter_map(|q| q.tokens_per_s_per_gpu).reduce(f64::max);
    let marks = charts::ScaleMarks {
        threshold_tokens_per_s_per_gpu: reference.map(|t| t * result.efficiency_threshold),
        below_at_gpus: gpus_of(result.efficiency_below_threshold_at),
        deadline_days: result.options.deadline_s.map(|d| d / 86_400.0),
        budget_gpu_hours: result.options.gpu_hours,
        picked_gpus: gpus_of(result.fewest_nodes_meeting_deadline.or(result.fastest_within_budget).or(result.fastest)),
    };
    let draw = move |w| charts::scaling(&pts, &marks, dark.get(), (w, 440));
    let threshold = percent(result.efficiency_threshold);
    view! {
        <Chart id="scaling-chart" label="Throughput per GPU and days to train against the GPU count, with the deadline, the GPU-hour budget and the efficiency threshold" draw />
        <ul class="chart-legend">
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(0))></span>"best layout at each count"</li>
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>{format!("deadline; {threshold} of the best throughput per GPU so far (ring: first count below)")}</li>
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(&charts::term_colour(3))></span>"GPU-hour budget (runs below the line fit it)"</li>
            <li><span class="swatch" aria-hidden="true" inner_html=swatch_diamond(charts::CURRENT_COLOUR)></span>"the count picked"</li>
        </ul>
    }
}
