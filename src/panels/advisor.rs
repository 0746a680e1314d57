//! The Advisor panel: Find layouts runs the core's search in the worker and ranks the layouts that fit;
//! Apply writes one into the plan (`crate::advisor`). Below: the Pareto front of the search and where the
//! current plan's step time goes.

use crate::format::{gib, gib_figure, percent, seconds, yes_no};
use crate::state::{Doc, editor};
use crate::ui::chart::{Chart, swatch_box, swatch_diamond, swatch_line};
use crate::{advisor, browser, charts};
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use meshplan_core::{Code, InputError};
use meshplan_core::plan::Recompute;
use meshplan_core::search::{Candidate, CandidateTraining, SearchResult};
use serde_json::Value;
use std::sync::Arc;

/// How many ranked layouts the Advisor shows.
const ADVISOR_TOP: usize = 10;

#[derive(Clone)]
enum Advice {
    Idle,
    Searching,
    /// A search's result, the search input it was for (see [`advisor::search_input`]) and how long it took.
    Done { result: Arc<SearchResult>, input: Value, ms: f64 },
    Failed(InputError),
}

fn recompute_text(t: &CandidateTraining) -> &'static str {
    match t.recompute_granularity {
        Recompute::None => "none",
        Recompute::Selective => "selective",
        Recompute::Full => "full",
    }
}

/// The line under Find layouts: what the search does, that it runs, why it failed, or what it found.
fn advice_status(a: &Advice) -> String {
    match a {
        Advice::Idle => "Searches TP, PP, VPP, CP, EP, ETP, SP, micro-batch size, recompute and the distributed optimizer for this model, cluster and batch, and ranks the layouts that fit by predicted throughput.".to_string(),
        Advice::Searching => "searching…".to_string(),
        Advice::Failed(e) => format!("The search could not run: {} Fix: {}", e.message, e.fix),
        Advice::Done { result: r, ms, .. } => {
            let mut t = format!("Evaluated {} layouts, {} valid", r.evaluated, r.valid);
            if r.pruned_by_memory > 0 {
                t.push_str(&format!(", {} more skipped as too large", r.pruned_by_memory));
            }
            t.push_str(&format!(" — searched in {ms:.0} ms."));
            if r.candidates.is_empty() {
                match r.smallest_peak_bytes {
                    Some(b) => t.push_str(&format!(" None fits: the smallest needs {} per GPU of {}.", gib(b), gib(r.gpu_memory_bytes))),
                    None => t.push_str(" No layout passes the rules for this world size."),
                }
            } else {
                t.push_str(&format!(" The best {} by tokens/s per GPU:", r.candidates.len()));
            }
            t
        }
    }
}

#[component]
pub fn AdvisorPanel(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let advice = RwSignal::new(Advice::Idle);
    let catch_up = crate::state::bridge::CatchUp::from_context();
    let searching = move || advice.with(|a| matches!(a, Advice::Searching));
    let run = move |_| {
        if advice.with_untracked(|a| matches!(a, Advice::Searching)) {
            return;
        }
        advice.set(Advice::Searching);
        catch_up.map(crate::state::bridge::CatchUp::run);
        let plan = doc.plan.get_untracked();
        let input = advisor::search_input(&plan);
        // The search runs in the worker: the page keeps painting and answering input meanwhile.
        browser::search_in_worker(plan.to_string(), ADVISOR_TOP, move |reply| {
            advice.try_set(match reply {
                Ok((json, ms)) => match serde_json::from_str::<SearchResult>(&json) {
                    Ok(result) => Advice::Done { result: Arc::new(result), input, ms },
                    Err(_) => Advice::Failed(advisor::search_error(&json)),
                },
                Err(why) => Advice::Failed(InputError::new(Code::SearchWorker, why, "reload the page; if it persists, serve meshplan-tools*.js and .wasm beside index.html")),
            });
        });
    };
    // Load the worker while the user reads the page, so the first search does not wait for it.
    effect(|| browser::warm_search_worker());
    let result = Signal::derive(move || advice.with(|a| if let Advice::Done { result, .. } = a { Some(result.clone()) } else { None }));
    let stale = move || advice.with(|a| matches!(a, Advice::Done { input, .. } if doc.plan.with(|p| advisor::search_input(p) != *input)));
    let counts = move || advice.with(|a| if let Advice::Done { result: r, ms, .. } = a { (r.evaluated.to_string(), r.valid.to_string(), format!("{ms:.1}")) } else { Default::default() });
    view! {
        <section class="panel" id="advisor" aria-labelledby="advisor-h" aria-busy=move || if searching() { "true" } else { "false" }>
            <h2 id="advisor-h">"Advisor"</h2>
            <div class="advisor-head">
                <button id="find-layouts" on:click=run aria-describedby="advisor-status">
                    {move || if searching() { "Searching…" } else { "Find layouts" }}
                </button>
                <p id="advisor-status" class="hint" role="status" aria-live="polite"
                    data-evaluated=move || counts().0 data-valid=move || counts().1 data-ms=move || counts().2>{move || advice.with(advice_status)}</p>
            </div>
            {move || stale().then(|| view! {
                <p id="advisor-stale" class="notice-inline">"The model, cluster or batch changed since this search: Find layouts again for this plan."</p>
            })}
            {move || result.get().filter(|r| !r.candidates.is_empty()).map(|r| view! { <CandidateTable doc result=r /> })}
            <ParetoFront doc dark result />
            <StepTime doc dark />
            <super::SizingPanel doc dark />
        </section>
    }
}

/// The ranked layouts, best first, each followed by why it was chosen.
#[component]
fn CandidateTable(doc: Doc, result: Arc<SearchResult>) -> impl IntoView {
    let moe = move || doc.outcome.with_untracked(|o| o.as_ref().is_ok_and(|r| r.plan.model.is_moe()));
    let rows = result.candidates.iter().enumerate().map(|(i, c)| view! { <CandidateRow doc rank=i + 1 c=c.clone() moe=moe() /> }).collect_view();
    view! {
        <div class="table-scroll" tabindex="0" role="region" aria-label="Ranked layouts (scrolls sideways)">
            <table id="advisor-table" class="advisor-table">
                <caption class="sr-only">"Ranked layouts, best first; each is followed by why it was chosen"</caption>
                <thead><tr>
                    <th scope="col">"#"</th><th scope="col" title="tensor_model_parallel_size">"TP"</th><th scope="col" title="pipeline_model_parallel_size (* uneven first or last stage)">"PP"</th>
                    <th scope="col" title="virtual_pipeline_model_parallel_size">"VPP"</th><th scope="col" title="context_parallel_size">"CP"</th>
                    <th scope="col" title="expert_model_parallel_size">"EP"</th><th scope="col" title="expert_tensor_parallel_size">"ETP"</th>
                    <th scope="col" title="sequence_parallel">"SP"</th><th scope="col" title="micro_batch_size">"mbs"</th>
                    <th scope="col" title="recompute_granularity">"recompute"</th><th scope="col" title="use_distributed_optimizer">"dist-opt"</th>
                    <th scope="col">"step time"</th><th scope="col">"tokens/s/GPU"</th><th scope="col">"MFU"</th><th scope="col">"peak GiB"</th>
                    <th scope="col"><span class="sr-only">"apply"</span></th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

/// One ranked layout: its sizes and figures, Apply (or "current" when the plan already is it), and why.
#[component]
fn CandidateRow(doc: Doc, rank: usize, c: Candidate, moe: bool) -> impl IntoView {
    let editor = editor();
    let (par, tr) = (c.parallelism, c.training);
    let (p2, t2) = (par.clone(), tr.clone());
    let current = memo(move || doc.plan.with(|p| advisor::is_applied(p, &p2, &t2, moe)));
    let label = format!(
        "Apply layout {rank}: TP {}, PP {}, CP {}, EP {}, micro-batch {}",
        par.tensor_model_parallel_size, par.pipeline_model_parallel_size, par.context_parallel_size, par.expert_model_parallel_size, tr.micro_batch_size
    );
    // The speed settings the row runs: the dispatcher and what tuned defaults assume, settled for this layout.
    let speed = tr.speed_parts();
    let shown: Vec<String> = c.why.iter().take(2).cloned().collect();
    let more: Vec<String> = c.why.iter().skip(2).cloned().collect();
    let split = match (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage, &par.pipeline_model_parallel_layout) {
        (Some(f), _, _) => format!(" (first stage {f} layers)"),
        (_, Some(l), _) => format!(" (last stage {l} layers)"),
        (_, _, Some(layout)) => format!(" (layout {layout})"),
        _ => String::new(),
    };
    let (apply_par, apply_tr) = (par.clone(), tr.clone());
    let apply = move || {
        if current.get() {
            view! { <span class="current-mark">"current"</span> }.into_any()
        } else {
            let (par, tr) = (apply_par.clone(), apply_tr.clone());
            view! {
                <button class="apply-layout" aria-label=label.clone()
                    on:click=move |_| editor.update(|p| advisor::apply_candidate(p, &par, &tr, moe))>"Apply"</button>
            }
            .into_any()
        }
    };
    view! {
        <tr class="candidate" class:current=move || current.get() class:tied=c.tied_with_best data-tp=par.tensor_model_parallel_size>
            <th scope="row">{rank}{c.tied_with_best.then(|| view! {
                " "<span class="tie-mark" title="predicted within the step-time model's own error of #1: a tie">"≈"</span>
            })}</th>
            <td data-label="TP">{par.tensor_model_parallel_size}</td>
            <td data-label="PP" title=split.clone()>{par.pipeline_model_parallel_size}{(!split.is_empty()).then_some("*")}</td>
            <td data-label="VPP">{par.virtual_pipeline_model_parallel_size.map_or("—".to_string(), |v| v.to_string())}</td>
            <td data-label="CP">{par.context_parallel_size}</td>
            <td data-label="EP">{par.expert_model_parallel_size}</td>
            <td data-label="ETP">{par.expert_tensor_parallel_size}</td>
            <td data-label="SP">{yes_no(par.sequence_parallel)}</td>
            <td data-label="mbs">{tr.micro_batch_size}</td>
            <td data-label="recompute">{recompute_text(&tr)}</td>
            <td data-label="dist-opt">{yes_no(tr.use_distributed_optimizer)}</td>
            <td data-label="step time" class="figure">{seconds(c.step_time_s)}</td>
            <td data-label="tokens/s/GPU" class="figure">{format!("{:.0}", c.tokens_per_s_per_gpu)}</td>
            <td data-label="MFU" class="figure">{percent(c.mfu)}</td>
            <td data-label="peak GiB" class="figure">{gib_figure(c.peak_bytes)}</td>
            <td class="apply-cell">{apply}</td>
        </tr>
        <tr class="why-row" class:current=move || current.get()>
            <td></td>
            <td colspan="15" class="why">
                {(!speed.is_empty()).then(|| view! {
                    <p class="speed-settings"><span class="why-label">"runs with: "</span>{speed.join(", ")}</p>
                })}
                <span class="why-label">"why: "</span>{shown.join(" · ")}
                {(!more.is_empty()).then(|| view! {
                    <details>
                        <summary>{format!("{} more reason{}", more.len(), if more.len() == 1 { "" } else { "s" })}</summary>
                        <ul>{more.into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
                    </details>
                })}
            </td>
        </tr>
    }
}

/// The searched layouts' Pareto front (peak memory against throughput) with the current plan marked.
#[component]
fn ParetoFront(doc: Doc, dark: Memo<bool>, result: Signal<Option<Arc<SearchResult>>>) -> impl IntoView {
    // The chart's inputs as memos: it is redrawn only when its own figures change.
    let front = memo(move || {
        let r = result.get()?;
        let front: Vec<charts::FrontPoint> =
            r.pareto.iter().map(|p| charts::FrontPoint { peak_bytes: p.peak_bytes, tokens_per_s_per_gpu: p.tokens_per_s_per_gpu }).collect();
        Some((front, r.gpu_memory_bytes))
    });
    let current = memo(move || {
        doc.outcome.with(|o| {
            let r = o.as_ref().ok()?;
            let perf = r.performance.as_ref()?;
            Some(charts::FrontPoint { peak_bytes: r.memory.peak_bytes, tokens_per_s_per_gpu: perf.tokens_per_s_per_gpu })
        })
    });
    let pareto_svg = move |w| {
        front.with(|f| f.as_ref().map(|(front, cap)| charts::pareto(front, current.get(), *cap, dark.get(), (w, 280)))).unwrap_or_default()
    };
    // Whether there is a chart at all (the chart itself stays mounted while its figures change).
    let has_front = memo(move || front.with(Option::is_some));
    move || {
        has_front.get().then(|| view! {
            <h3 class="chart-title">"Pareto front: peak memory against throughput"</h3>
            <Chart id="pareto-chart" label="Pareto front of the searched layouts: peak memory per GPU against tokens per second per GPU, with the current plan marked" draw=pareto_svg />
            <ul class="chart-legend">
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_box(&charts::term_colour(0))></span>"layouts no other beats on both memory and throughput"</li>
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_diamond(charts::CURRENT_COLOUR)></span>"the current plan"</li>
                <li><span class="swatch" aria-hidden="true" inner_html=swatch_line(charts::CAPACITY_COLOUR)></span>"GPU memory"</li>
            </ul>
        })
    }
}

/// The current plan's step time as one stacked bar of the core's terms, with their figures.
#[component]
fn StepTime(doc: Doc, dark: Memo<bool>) -> impl IntoView {
    let terms = memo(move || {
        doc.outcome.with(|o| {
            let b = &o.as_ref().ok()?.performance.as_ref()?.breakdown;
            Some(b.terms().map(|(_, t)| t))
        })
    });
    let step_svg = move |w| terms.get().map(|t| charts::step_bar(&t, dark.get(), (w, 90))).unwrap_or_default();
    let has_terms = memo(move || terms.with(Option::is_some));
    let step_total = move || {
        doc.outcome.with(|o| {
            o.as_ref().ok().and_then(|r| r.performance.as_ref()).map(|p| {
                format!("Step time of the current plan: {} · {:.0} tokens/s per GPU · MFU {}", seconds(p.step_time_s), p.tokens_per_s_per_gpu, percent(p.mfu))
            })
        })
    };
    // Megatron Bridge's published throughput for the plan's perf recipe, beside the prediction (issue 23): shown, never
    // fitted to; present while the plan runs that recipe's configuration.
    let published = move || {
        doc.outcome.with(|o| {
            let pb = o.as_ref().ok()?.published.as_ref()?;
            let m = &pb.measured;
            Some(format!(
                "Published (Megatron Bridge {}, {}): {:.0} TFLOP/s per GPU ({:.0} tokens/s per GPU); meshplan predicts {:.0} ({:+.0}%). {}",
                m.release, pb.recipe, m.model_tflops_per_gpu, m.tokens_per_s_per_gpu, pb.predicted_model_tflops_per_gpu, pb.error * 100.0, m.source
            ))
        })
    };
    view! {
        <h3 class="chart-title">"Where the current plan's step time goes"</h3>
        {move || published().map(|text| view! { <p id="step-published" class="hint">{text}</p> })}
        {move || match has_terms.get() {
            true => view! {
                <p id="step-total" class="hint">{step_total}</p>
                <Chart id="step-chart" label="Stacked bar of the current plan's step time by term" draw=step_svg />
                <ul class="chart-legend">
                    // One item per term, made once: an edit rewrites only the seconds that changed.
                    {charts::STEP_TERMS.iter().enumerate().map(|(i, name)| {
                        let colour = move || swatch_box(&charts::step_colour(i, dark.get()));
                        let value = move || terms.with(|t| t.as_ref().and_then(|t| t.get(i).copied())).map(seconds).unwrap_or_default();
                        view! { <li><span class="swatch" aria-hidden="true" inner_html=colour></span>{*name}" "{value}</li> }
                    }).collect_view()}
                </ul>
            }.into_any(),
            false => view! { <p class="hint">"No step-time estimate: the mesh sizes do not divide the world size."</p> }.into_any(),
        }}
    }
}
