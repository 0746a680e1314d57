//! The GPU grid panel: every GPU (or node) of the dense and/or expert mesh drawn on a canvas, coloured by
//! one group kind, with a legend, hover and keyboard focus, and the focused GPU's groups listed. The
//! pixels are `crate::grid`'s; the rank groups are the core's layout.

use crate::state::Outcome;
use crate::ui::chart::element_width;
use crate::{browser, grid};
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use meshplan_core::Report;
use meshplan_core::layout::{GroupKind, Layout};

const DENSE_KINDS: [GroupKind; 4] = [GroupKind::Tp, GroupKind::Cp, GroupKind::Dp, GroupKind::Pp];
const EXPERT_KINDS: [GroupKind; 4] = [GroupKind::Ep, GroupKind::Etp, GroupKind::Edp, GroupKind::Pp];

/// The grid's height at most, in CSS pixels.
const GRID_HEIGHT: u32 = 560;

fn kind_short(k: GroupKind) -> &'static str {
    match k {
        GroupKind::Tp => "TP",
        GroupKind::Cp => "CP",
        GroupKind::Dp => "DP",
        GroupKind::DpCp => "DP×CP",
        GroupKind::Pp => "PP stage",
        GroupKind::TpPp => "TP×PP",
        GroupKind::Ep => "EP",
        GroupKind::Etp => "ETP",
        GroupKind::Edp => "expert DP",
    }
}

/// The fill of a rank for a kind: its pipeline stage for PP, else which group holds it.
fn fill_index(layout: &Layout, kind: GroupKind, rank: u32) -> u32 {
    let g = layout.group_index(kind, rank).unwrap_or(0);
    if kind == GroupKind::Pp { position(layout, kind, g, rank) } else { g as u32 }
}

fn position(layout: &Layout, kind: GroupKind, group: usize, rank: u32) -> u32 {
    layout.groups_of(kind).get(group).and_then(|m| m.iter().position(|&r| r == rank)).unwrap_or(0) as u32
}

/// "ranks 0–7", "ranks 0, 8, …, 56 (every 8th)" or the first few.
fn describe_ranks(ranks: &[u32]) -> String {
    match ranks {
        [] => "no ranks".into(),
        [r] => format!("rank {r}"),
        [a, b, ..] => {
            let stride = b.wrapping_sub(*a);
            let regular = ranks.windows(2).all(|w| w[1].wrapping_sub(w[0]) == stride);
            let last = ranks[ranks.len() - 1];
            match (regular, stride) {
                (true, 1) => format!("ranks {a}–{last}"),
                (true, _) if ranks.len() > 3 => format!("ranks {a}, {b}, …, {last} (every {stride})"),
                _ if ranks.len() <= 6 => format!("ranks {}", ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
                _ => format!("ranks {}, … ({} in all)", ranks[..4].iter().map(u32::to_string).collect::<Vec<_>>().join(", "), ranks.len()),
            }
        }
    }
}

#[component]
pub fn GridPanel(outcome: Memo<Outcome>, dark: Memo<bool>) -> impl IntoView {
    let moe = move || outcome.with(|o| o.as_ref().is_ok_and(|r| r.plan.model.is_moe()));
    let mesh = RwSignal::new("dense".to_string());
    let dense_kind = RwSignal::new(GroupKind::Tp);
    let expert_kind = RwSignal::new(GroupKind::Ep);
    // The GPU under the pointer or keyboard focus.
    let hover = RwSignal::new(None::<u32>);
    // Both meshes at half height each, so that both fit on the screen.
    let grid_height = move || if mesh.get() == "both" { GRID_HEIGHT / 2 } else { GRID_HEIGHT };
    view! {
        <section class="panel" id="grid-panel" aria-labelledby="grid-h">
            <h2 id="grid-h">"GPU grid"</h2>
            <div class="grid-controls">
                <fieldset class="mesh">
                    <legend>"Mesh"</legend>
                    {[("dense", "Dense (TP·CP·DP·PP)"), ("expert", "Expert (ETP·EP·EDP·PP)"), ("both", "Both")].into_iter().map(|(v, text)| view! {
                        <label class="radio"><input type="radio" name="mesh" value=v prop:checked=move || mesh.get() == v
                            on:change=move |_| mesh.set(v.to_string()) />{text}</label>
                    }).collect_view()}
                </fieldset>
                {move || (mesh.get() != "expert").then(|| view! { <KindSelect id="color-dense" label="Colour dense mesh by" kinds=DENSE_KINDS kind=dense_kind /> })}
                {move || (mesh.get() != "dense").then(|| view! { <KindSelect id="color-expert" label="Colour expert mesh by" kinds=EXPERT_KINDS kind=expert_kind /> })}
            </div>
            {move || (mesh.get() != "dense" && !moe()).then(|| view! { <p class="hint">"This model has no experts: the expert mesh still exists, with EP = 1."</p> })}
            <div class="grids">
                {move || (mesh.get() != "expert").then(|| view! { <GridCanvas outcome dark hover id="grid-dense" kind=dense_kind.into() title="Dense mesh" max_height=grid_height() /> })}
                {move || (mesh.get() != "dense").then(|| view! { <GridCanvas outcome dark hover id="grid-expert" kind=expert_kind.into() title="Expert mesh" max_height=grid_height() /> })}
            </div>
            <GridInfo outcome hover />
        </section>
    }
}

/// Which group kind colours a mesh.
#[component]
fn KindSelect(id: &'static str, label: &'static str, kinds: [GroupKind; 4], kind: RwSignal<GroupKind>) -> impl IntoView {
    view! {
        <div class="field inline-field">
            <label for=id>{label}</label>
            <select id=id on:change=move |ev| {
                let v = event_target_value(&ev);
                if let Some(k) = kinds.iter().find(|k| k.key() == v) { kind.set(*k) }
            }>
                {kinds.iter().map(|k| {
                    let k = *k;
                    view! { <option value=k.key() selected=move || kind.get() == k>{format!("{} — {}", kind_short(k), k.label())}</option> }
                }).collect_view()}
            </select>
        </div>
    }
}

/// The canvas's accessible summary: GPUs, nodes, the colouring kind and its group count.
fn canvas_summary(o: &Outcome, title: &str, k: GroupKind) -> String {
    match o {
        Ok(r) => match &r.layout {
            Some(l) => format!(
                "{title}: {} GPUs in {} nodes, coloured by {}: {} groups. Arrow keys move between GPUs.",
                r.derived.world_size,
                r.plan.cluster.num_nodes,
                kind_short(k),
                l.groups_of(k).len()
            ),
            None => format!("{title}: {} GPUs; the mesh sizes do not divide the world size, so there are no rank groups", r.derived.world_size),
        },
        Err(_) => format!("{title}: no plan"),
    }
}

/// The GPU under a keyboard key from the focused one (arrows, Home, End), `None` for Escape; `Err` for
/// keys the grid leaves alone.
fn key_target(g: &grid::Geometry, focused: Option<u32>, key: &str) -> Result<Option<u32>, ()> {
    let unit = g.unit_of(focused.unwrap_or(0));
    let next = match key {
        "ArrowRight" => g.step(unit, 1, 0),
        "ArrowLeft" => g.step(unit, -1, 0),
        "ArrowDown" => g.step(unit, 0, 1),
        "ArrowUp" => g.step(unit, 0, -1),
        "Home" => 0,
        "End" => g.units - 1,
        "Escape" => return Ok(None),
        _ => return Err(()),
    };
    Ok(Some(g.rank_of(next)))
}

#[component]
fn GridCanvas(
    outcome: Memo<Outcome>,
    dark: Memo<bool>,
    hover: RwSignal<Option<u32>>,
    id: &'static str,
    kind: Signal<GroupKind>,
    title: &'static str,
    max_height: u32,
) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let wrap = NodeRef::<leptos::html::Div>::new();
    let width = element_width(wrap);
    let scale = browser::device_pixel_ratio().round().clamp(1.0, 2.0) as u32;
    let geom = memo(move || {
        let w = width.get();
        if w == 0 {
            return None;
        }
        outcome.with(|o| {
            o.as_ref().ok().map(|r| {
                let world = r.derived.world_size.min(1 << 24) as u32;
                grid::geometry(world, r.plan.cluster.gpus_per_node.min(1 << 16) as u32, w.clamp(200, 1600), max_height, scale)
            })
        })
    });
    // What the picture depends on: the mesh sizes, the order and the NVLink domain fix every rank group, so
    // edits elsewhere (batch, recompute, model fields) do not redraw the grid.
    let mesh_key = memo(move || {
        outcome.with(|o| {
            o.as_ref().ok().map(|r| {
                let par = &r.plan.parallelism;
                let sizes = [r.derived.world_size, r.plan.cluster.gpus_per_node, r.plan.cluster.nvlink_domain_size, par.tp(), par.pp(), par.cp(), par.ep(), par.etp()];
                (sizes, r.layout.as_ref().map(|l| l.order.clone()))
            })
        })
    });
    // Draw: one putImageData of the whole grid, then labels when cells are large.
    effect(move || {
        let Some(el) = canvas.get() else { return };
        let Some(g) = geom.get() else { return };
        let (k, focus, dark) = (kind.get(), hover.get(), dark.get());
        // Read, not `track()`: tracking a memo does not compute it, and an uncomputed memo has no sources to follow.
        mesh_key.with(|_| ());
        outcome.with_untracked(|o| {
            let Ok(r) = o else { return };
            draw_grid(&el, &g, r, k, focus, dark);
        });
    });
    let pick = move |ev: &web_sys::MouseEvent| {
        let g = geom.get_untracked()?;
        let unit = g.hit(ev.offset_x().max(0) as u32 * g.scale, ev.offset_y().max(0) as u32 * g.scale)?;
        Some(g.rank_of(unit))
    };
    // A click pins the GPU under it (its groups stay listed while the pointer moves on); Esc or a click on it unpins.
    let pinned = RwSignal::new(false);
    let key = move |ev: leptos::ev::KeyboardEvent| {
        let Some(g) = geom.get_untracked() else { return };
        let Ok(next) = key_target(&g, hover.get_untracked(), &ev.key()) else { return };
        if next.is_some() {
            ev.prevent_default();
        }
        pinned.set(false);
        hover.set(next);
    };
    let click = move |ev: leptos::ev::MouseEvent| {
        let r = pick(&ev);
        if pinned.get_untracked() && r == hover.get_untracked() {
            pinned.set(false);
        } else if r.is_some() {
            pinned.set(true);
            hover.set(r);
        }
    };
    view! {
        <figure class="grid-figure">
            <figcaption>{title}" — coloured by "{move || kind_short(kind.get())}
                {move || geom.get().filter(|g| g.aggregated()).map(|g| format!(" (one cell per node of {} GPUs)", g.unit))}</figcaption>
            <div class="canvas-wrap" node_ref=wrap>
                <canvas id=id node_ref=canvas tabindex="0" role="img"
                    aria-label=move || outcome.with(|o| canvas_summary(o, title, kind.get()))
                    data-cells=move || geom.get().map(|g| g.units).unwrap_or(0)
                    data-unit=move || geom.get().map(|g| g.unit).unwrap_or(1)
                    data-cell=move || geom.get().map(|g| g.cell / g.scale).unwrap_or(0)
                    data-kind=move || kind.get().key()
                    data-groups=move || outcome.with(|o| o.as_ref().ok().and_then(|r| r.layout.as_ref().map(|l| l.groups_of(kind.get()).len())).unwrap_or(0))
                    data-pinned=move || if pinned.get() { "true" } else { "false" }
                    on:click=click
                    on:mousemove=move |ev| { let r = pick(&ev); if !pinned.get_untracked() && r.is_some() && r != hover.get_untracked() { hover.set(r) } }
                    on:mouseleave=move |_| if !pinned.get_untracked() { hover.set(None) }
                    on:focus=move |_| if hover.get_untracked().is_none() { hover.set(Some(0)) }
                    on:keydown=key></canvas>
            </div>
            <GridLegend outcome kind />
        </figure>
    }
}

fn draw_grid(el: &web_sys::HtmlCanvasElement, g: &grid::Geometry, r: &Report, kind: GroupKind, hover: Option<u32>, dark: bool) {
    el.set_width(g.width);
    el.set_height(g.height);
    // CSS size through CSSOM: the CSP forbids style attributes.
    let css = web_sys::HtmlElement::style(el);
    let _ = css.set_property("width", &format!("{}px", g.width / g.scale));
    let _ = css.set_property("height", &format!("{}px", g.height / g.scale));
    let Some(ctx) = browser::canvas_context(el) else { return };
    let domain = r.plan.cluster.nvlink_domain_size.clamp(1, u32::MAX as u64) as u32;
    let layout = r.layout.as_ref();
    let fill_of = |rank: u32| layout.map_or(7, |l| fill_index(l, kind, rank));
    // Whether the rank's group spans NVLink domains: the core's layout answers it (O(1) per rank).
    let crosses = |rank: u32| layout.is_some_and(|l| l.rank_crosses(kind, rank, domain as u64));
    let hovered_group = hover.and_then(|h| layout.and_then(|l| l.group_index(kind, h)));
    let same = |rank: u32| layout.and_then(|l| l.group_index(kind, rank)) == hovered_group;
    let highlight: Option<&dyn Fn(u32) -> bool> = if hovered_group.is_some() { Some(&same) } else { None };
    let paint = grid::Paint { fill_of: &fill_of, crosses: &crosses, nvlink_domain: domain, highlight, focus: hover.map(|h| g.unit_of(h)), dark };
    let mut px = grid::render(g, &paint);
    if let Ok(img) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(wasm_bindgen::Clamped(&mut px[..]), g.width, g.height) {
        let _ = ctx.put_image_data(&img, 0.0, 0.0);
    }
    if g.labelled() && layout.is_some() {
        ctx.set_font(&format!("{}px sans-serif", 11 * g.scale));
        ctx.set_text_align("center");
        ctx.set_text_baseline("middle");
        for unit in 0..g.units {
            let rank = g.rank_of(unit);
            let n = fill_of(rank);
            let (rgb, _) = grid::fill(n);
            let light = (rgb[0] as u32 * 299 + rgb[1] as u32 * 587 + rgb[2] as u32 * 114) / 1000 > 140;
            ctx.set_fill_style_str(if light { "#111" } else { "#fff" });
            let (x, y) = g.origin(unit);
            let _ = ctx.fill_text(&n.to_string(), (x + g.cell / 2) as f64, (y + g.cell / 2) as f64);
        }
    }
}

/// The legend's swatches (at most 24) and its note, for a layout coloured by `k`.
fn legend_entries(l: &Layout, k: GroupKind) -> (Vec<(u32, String)>, String) {
    let groups = l.groups_of(k);
    if k == GroupKind::Pp {
        let stages = groups.first().map_or(1, Vec::len) as u32;
        let items = (0..stages.min(24)).map(|i| (i, format!("stage {i}"))).collect();
        return (items, format!("{stages} pipeline stages; cells show their stage number"));
    }
    let items = groups.iter().enumerate().take(24).map(|(i, m)| (i as u32, format!("{} {i}: {}", kind_short(k), describe_ranks(m)))).collect();
    let size = groups.first().map_or(0, Vec::len);
    let note = if groups.len() > 24 {
        format!("{} groups of {size}; the first 24 are listed, and fills repeat every 24", groups.len())
    } else {
        format!("{} groups of {size}", groups.len())
    };
    (items, note)
}

#[component]
fn GridLegend(outcome: Memo<Outcome>, kind: Signal<GroupKind>) -> impl IntoView {
    // A memo: the legend changes with the mesh or the kind, not with most edits.
    let entries = memo(move || {
        let k = kind.get();
        outcome.with(|o| o.as_ref().ok().and_then(|r| r.layout.as_ref()).map(|l| legend_entries(l, k)).unwrap_or_default())
    });
    view! {
        <div class="legend">
            <p class="legend-note">{move || entries.with(|e| e.1.clone())}" · ◥ marks a group that spans more than one NVLink domain; the strip under each GPU alternates by NVLink domain."</p>
            <ul class="swatches">
                {move || entries.with(|e| e.0.clone()).into_iter().map(|(i, text)| {
                    view! {
                        <li><span class="swatch" aria-hidden="true" inner_html=grid::swatch_svg(i)></span>{text}</li>
                    }
                }).collect_view()}
            </ul>
        </div>
    }
}

/// The focused GPU's node, local index and NVLink domain, and one row per group kind that holds it.
fn rank_info(r: &Report, rank: u32) -> (String, Vec<(String, String)>) {
    let gpn = r.plan.cluster.gpus_per_node.max(1);
    let domain = r.plan.cluster.nvlink_domain_size.max(1);
    let head = format!("GPU rank {rank} · node {} · local GPU {} · NVLink domain {}", rank as u64 / gpn, rank as u64 % gpn, rank as u64 / domain);
    let rows = r
        .layout
        .as_ref()
        .map(|l| {
            GroupKind::all()
                .iter()
                .filter_map(|&k| {
                    let gi = l.group_index(k, rank)?;
                    let members = l.groups_of(k).get(gi)?;
                    let pos = position(l, k, gi, rank);
                    Some((format!("{} ({})", kind_short(k), k.key()), format!("group {gi} · coordinate {pos} of {} · {}", members.len(), describe_ranks(members))))
                })
                .collect()
        })
        .unwrap_or_default();
    (head, rows)
}

#[component]
fn GridInfo(outcome: Memo<Outcome>, hover: RwSignal<Option<u32>>) -> impl IntoView {
    let info = move || {
        let rank = hover.get()?;
        outcome.with(|o| o.as_ref().ok().map(|r| rank_info(r, rank)))
    };
    view! {
        <div id="grid-info" class="grid-info" aria-live="polite">
            {move || match info() {
                None => view! { <p class="hint">"Hover over a GPU, or focus the grid and use the arrow keys, to see its rank, coordinates and groups."</p> }.into_any(),
                Some((head, rows)) => view! {
                    <p id="grid-info-head"><strong>{head}</strong></p>
                    <table class="coords">
                        <tbody>{rows.into_iter().map(|(k, v)| view! { <tr><th scope="row">{k}</th><td>{v}</td></tr> }).collect_view()}</tbody>
                    </table>
                }.into_any(),
            }}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_read_as_ranges_strides_or_the_first_few() {
        assert_eq!(describe_ranks(&[]), "no ranks");
        assert_eq!(describe_ranks(&[5]), "rank 5");
        assert_eq!(describe_ranks(&[0, 1, 2, 3, 4, 5, 6, 7]), "ranks 0–7");
        // DP over TP 8 on 64 GPUs: every 8th rank.
        assert_eq!(describe_ranks(&[0, 8, 16, 24, 32, 40, 48, 56]), "ranks 0, 8, …, 56 (every 8)");
        assert_eq!(describe_ranks(&[0, 8, 16]), "ranks 0, 8, 16");
        assert_eq!(describe_ranks(&[0, 1, 8, 9, 16, 17, 24, 25]), "ranks 0, 1, 8, 9, … (8 in all)");
    }

    #[test]
    fn a_group_crosses_when_its_ranks_sit_in_more_than_one_domain() {
        // TP 8 on 16 GPUs in NVLink domains of 4: groups 0–7 and 8–15 each span two domains; in domains of 8, none.
        let l = meshplan_core::layout::build_layout(
            16,
            &meshplan_core::layout::MeshSizes { tp: 8, cp: 1, ep: 1, etp: 8, pp: 1 },
            meshplan_core::plan::DEFAULT_ORDER,
            4,
        )
        .unwrap();
        // What the grid marks, rank by rank, through the core's layout.
        let marked = |kind: GroupKind, domain: u64| (0..16).map(|r| l.rank_crosses(kind, r, domain)).collect::<Vec<_>>();
        assert_eq!(marked(GroupKind::Tp, 4), vec![true; 16]);
        assert_eq!(marked(GroupKind::Tp, 8), vec![false; 16]);
        // DP pairs {r, r + 8}: in domains of 8 they always cross.
        assert_eq!(marked(GroupKind::Dp, 8), vec![true; 16]);
    }
}
