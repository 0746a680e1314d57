//! The Compare panel, shown while a baseline is pinned ("Compare with…" in the header pins the plan); every edit shows what the core's
//! diff says changed from the baseline — the settings that differ, each pipeline stage's memory by term, the step
//! time by term, findings that appear or disappear, and rank-group kinds whose NVLink-domain crossing changes.

use crate::format::{GIB, gib, seconds};
use crate::state::{Comparison, Doc};
use leptos::prelude::*;
use meshplan_core::diff::{Diff, StageDelta};
use serde_json::Value;

/// A signed size: "+1.2 GiB", "−0.5 GiB", below 0.05 GiB in MiB ("+12 MiB"), "±0".
pub fn signed_gib(delta: i64) -> String {
    let size = |b: u64| if (b as f64) < 0.05 * GIB { format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64) } else { gib(b) };
    match delta {
        0 => "±0".into(),
        d if d > 0 => format!("+{}", size(d.unsigned_abs())),
        d => format!("−{}", size(d.unsigned_abs())),
    }
}

/// A signed duration: "+12 ms", "−1.20 s", "±0".
pub fn signed_seconds(delta: f64) -> String {
    if delta == 0.0 {
        "±0".into()
    } else if delta > 0.0 {
        format!("+{}", seconds(delta))
    } else {
        format!("−{}", seconds(-delta))
    }
}

/// How a plan value reads in the settings table ("—" when the plan does not have it).
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The class a delta's cell gets: more memory or time is `worse`, less is `better`.
fn tone(delta: f64) -> &'static str {
    if delta > 0.0 {
        "delta worse"
    } else if delta < 0.0 {
        "delta better"
    } else {
        "delta"
    }
}

#[component]
pub fn ComparePanel(doc: Doc, baseline: Comparison, embed: bool) -> impl IntoView {
    let pinned = move || baseline.pinned();
    view! {
        <section class="panel" id="compare" aria-labelledby="compare-h">
            <h2 id="compare-h">"Compare"</h2>
            {(!embed).then(|| view! {
                <div class="compare-actions">
                    <button id="compare-repin" on:click=move |_| baseline.pin(doc) title="Make the plan as it is now the baseline">"Pin this plan instead"</button>
                    <button id="compare-unpin" on:click=move |_| baseline.unpin()>"Unpin"</button>
                </div>
            })}
            {move || match (pinned(), baseline.outcome.with(|o| o.as_ref().and_then(|o| o.as_ref().err().cloned()))) {
                (false, _) => ().into_any(),
                (true, Some(e)) => view! { <p class="field-error" role="alert">"The baseline cannot be planned: "{e.message}</p> }.into_any(),
                (true, None) => match baseline.diff.get() {
                    None => view! { <p class="hint">"The plan being edited cannot be read; the comparison returns once it can."</p> }.into_any(),
                    Some(d) => view! { <DiffView d /> }.into_any(),
                },
            }}
        </section>
    }
}

#[component]
fn DiffView(d: Diff) -> impl IntoView {
    let same = d.settings.is_empty() && d.stages.iter().all(|s| s.delta_bytes == 0) && d.findings_added.is_empty() && d.findings_removed.is_empty();
    let peak = (d.b_peak_bytes as i64).saturating_sub(d.a_peak_bytes as i64);
    let step = match (d.a_step_time_s, d.b_step_time_s) {
        (Some(a), Some(b)) => format!("step time {} → {} ({})", seconds(a), seconds(b), signed_seconds(b - a)),
        _ => "step time: not estimated for one of the plans".into(),
    };
    let valid = |v: bool| if v { "valid" } else { "has errors" };
    view! {
        <p id="compare-summary" class="summary">
            "Baseline ("{valid(d.a_valid)}") → this plan ("{valid(d.b_valid)}"): peak "{gib(d.a_peak_bytes)}" → "{gib(d.b_peak_bytes)}
            " ("<span class=tone(peak as f64)>{signed_gib(peak)}</span>"), "{step}
        </p>
        {same.then(|| view! { <p class="hint">"The plans are the same."</p> })}
        <SettingsTable d=d.clone() />
        {by_layers(&d).then(|| d.peak_stages.clone().map(|p| view! {
            <p id="compare-peak-stage">"Peak stage: "{stage_label(&p)}": "{gib(p.a_total_bytes)}" → "{gib(p.b_total_bytes)}
                " ("{signed_gib(p.delta_bytes)}")"</p>
        }))}
        <StagesTable stages=if by_layers(&d) { d.stages_by_layers.clone() } else { d.stages.clone() } />
        <TimeTable d=d.clone() />
        <Findings d=d.clone() />
        {(!d.crossings.is_empty()).then(|| view! {
            <h3>"Rank groups crossing NVLink domains"</h3>
            <ul id="compare-crossings" class="compare-list">
                {d.crossings.iter().map(|c| view! {
                    <li data-kind=c.kind.clone()>{format!("{}: {} of {} groups cross → {} of {}", c.kind.to_ascii_uppercase(), c.a_groups_crossing, c.a_total_groups, c.b_groups_crossing, c.b_total_groups)}</li>
                }).collect_view()}
            </ul>
        })}
    }
}

#[component]
fn SettingsTable(d: Diff) -> impl IntoView {
    (!d.settings.is_empty()).then(|| view! {
        <h3>"Settings that differ"</h3>
        <div class="table-scroll">
            <table id="compare-settings" class="compare-table">
                <thead><tr><th scope="col">"setting"</th><th scope="col">"baseline"</th><th scope="col">"this plan"</th></tr></thead>
                <tbody>
                    {d.settings.iter().map(|c| view! {
                        <tr data-path=c.path.clone()><th scope="row"><code>{c.path.clone()}</code></th><td>{shown(&c.a)}</td><td>{shown(&c.b)}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    })
}

/// Whether stages are compared by the layers they hold: when a stage of the same pipeline rank holds other layers in
/// the two plans (PP or the layout changed), comparing by rank would compare different layers.
fn by_layers(d: &Diff) -> bool {
    !d.stages_by_layers.is_empty() && d.stages.iter().any(|s| s.a_layers != s.b_layers)
}

/// "stage 1 (layers 20–39) → stage 2 (layers 20–29)" when the pair is not one rank holding the same layers, else "stage 1".
fn stage_label(s: &StageDelta) -> String {
    let layers = |l: &[[u64; 2]]| l.iter().map(|[a, b]| if b > a { format!("{a}–{}", b - 1) } else { String::new() }).collect::<Vec<_>>().join(", ");
    match (s.a_pipeline_rank, s.b_pipeline_rank) {
        (Some(a), Some(b)) if a != b || s.a_layers != s.b_layers => {
            format!("stage {a} (layers {}) → stage {b} (layers {})", layers(&s.a_layers), layers(&s.b_layers))
        }
        _ => format!("stage {}", s.pipeline_rank),
    }
}

/// Each stage's total, then the terms that changed (largest change first, as the core orders them).
#[component]
fn StagesTable(stages: Vec<StageDelta>) -> impl IntoView {
    let changed: Vec<StageDelta> = stages.into_iter().filter(|s| s.delta_bytes != 0 || !s.terms.is_empty()).collect();
    (!changed.is_empty()).then(|| view! {
        <h3>"Memory per pipeline stage, by term"</h3>
        <div class="table-scroll">
            <table id="compare-memory" class="compare-table">
                <thead><tr><th scope="col">"stage / term"</th><th scope="col">"baseline"</th><th scope="col">"this plan"</th><th scope="col">"change"</th></tr></thead>
                <tbody>
                    {changed.into_iter().map(|s| {
                        // A stage only one plan has: its total, not its terms (each would equal the total's side).
                        let only = match (s.a_total_bytes, s.b_total_bytes) {
                            (0, _) => " (this plan only)",
                            (_, 0) => " (baseline only)",
                            _ => "",
                        };
                        let label = stage_label(&s);
                        let terms = if only.is_empty() { s.terms } else { Vec::new() };
                        view! {
                        <tr class="stage-row" data-stage=s.pipeline_rank>
                            <th scope="row">{label}{only}</th><td>{gib(s.a_total_bytes)}</td><td>{gib(s.b_total_bytes)}</td>
                            <td class=tone(s.delta_bytes as f64)>{signed_gib(s.delta_bytes)}</td>
                        </tr>
                        {terms.into_iter().map(|t| view! {
                            <tr class="term-row" data-term=t.key.clone()>
                                <th scope="row">{t.label}</th><td>{gib(t.a_bytes)}</td><td>{gib(t.b_bytes)}</td>
                                <td class=tone(t.delta_bytes as f64)>{signed_gib(t.delta_bytes)}</td>
                            </tr>
                        }).collect_view()}
                    }}).collect_view()}
                </tbody>
            </table>
        </div>
    })
}

#[component]
fn TimeTable(d: Diff) -> impl IntoView {
    let rows: Vec<_> = d.step_time.into_iter().filter(|t| t.delta_s != 0.0).collect();
    (!rows.is_empty()).then(|| view! {
        <h3>"Step time by term"</h3>
        <table id="compare-time" class="compare-table">
            <thead><tr><th scope="col">"term"</th><th scope="col">"baseline"</th><th scope="col">"this plan"</th><th scope="col">"change"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|t| view! {
                    <tr data-term=t.term.clone()><th scope="row">{t.term.clone()}</th><td>{seconds(t.a_s)}</td><td>{seconds(t.b_s)}</td>
                        <td class=tone(t.delta_s)>{signed_seconds(t.delta_s)}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
    })
}

#[component]
fn Findings(d: Diff) -> impl IntoView {
    (!d.findings_added.is_empty() || !d.findings_removed.is_empty()).then(|| view! {
        <h3>"Diagnostics"</h3>
        <ul id="compare-findings" class="compare-list">
            {d.findings_added.iter().map(|f| view! {
                <li class="added" data-code=f.code.clone()>"+ appears: "<code>{f.code.clone()}</code>" ("{f.severity.clone()}") "{f.message.clone()}</li>
            }).collect_view()}
            {d.findings_removed.iter().map(|f| view! {
                <li class="removed" data-code=f.code.clone()>"− disappears: "<code>{f.code.clone()}</code>" ("{f.severity.clone()}") "{f.message.clone()}</li>
            }).collect_view()}
        </ul>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_figures() {
        // 1.5 GiB = 1,610,612,736 bytes.
        assert_eq!(signed_gib(1_610_612_736), "+1.5 GiB");
        assert_eq!(signed_gib(-1_610_612_736), "−1.5 GiB");
        assert_eq!(signed_gib(0), "±0");
        // 12 MiB = 12,582,912 bytes, under 0.05 GiB (51.2 MiB).
        assert_eq!(signed_gib(12_582_912), "+12 MiB");
        assert_eq!(signed_seconds(0.012), "+12 ms");
        assert_eq!(signed_seconds(-1.2), "−1.20 s");
        assert_eq!(shown(&Value::Null), "—");
        assert_eq!(tone(-1.0), "delta better");
    }
}
