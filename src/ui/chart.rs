//! The frame every chart and the grid draw into: the width of their column, measured once mounted and
//! again after a resize, and the chart itself as an SVG memo; plus the legend swatches.

use leptos::prelude::*;
use crate::state::signal::{effect, memo};

/// The width of an element in CSS pixels, 0 until it is mounted: measured once mounted, and again when
/// the window has stopped resizing for 100 ms (a drag redraws once, not on every event).
pub fn element_width(node: NodeRef<leptos::html::Div>) -> ReadSignal<u32> {
    let width = RwSignal::new(0u32);
    let measure = move || {
        let Some(el) = node.try_get_untracked().flatten() else { return };
        let w = el.client_width().clamp(0, 1 << 14) as u32;
        if w > 0 && width.try_get_untracked() != Some(w) {
            width.try_set(w);
        }
    };
    effect(move || {
        if node.get().is_some() {
            measure();
        }
    });
    let ticket = StoredValue::new(0u64);
    let resize = window_event_listener(leptos::ev::resize, move |_| {
        let Some(mine) = ticket.try_update_value(|t| {
            *t += 1;
            *t
        }) else {
            return;
        };
        set_timeout(move || if ticket.try_get_value() == Some(mine) { measure() }, std::time::Duration::from_millis(100));
    });
    // The listener outlives nothing: an unmounted chart or canvas (switching meshes) takes it along.
    on_cleanup(move || resize.remove());
    width.read_only()
}

/// A plotters chart drawn at the width of its column, as the inner HTML of a div. `draw` gets the width
/// in CSS pixels and should read memos of exactly the chart's inputs: the SVG is a memo over them and the
/// width, so an edit that changes neither leaves the chart alone.
#[component]
pub fn Chart(id: &'static str, label: &'static str, draw: impl Fn(u32) -> String + Send + Sync + 'static) -> impl IntoView {
    let node = NodeRef::<leptos::html::Div>::new();
    let width = element_width(node);
    let svg = memo(move || match width.get() {
        0 => String::new(),
        w => draw(w),
    });
    view! { <div id=id node_ref=node class="chart" role="img" aria-label=label inner_html=svg></div> }
}

/// A filled square legend swatch.
pub fn swatch_box(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><rect width="14" height="14" fill="{colour}"/></svg>"#)
}

/// A line legend swatch (the GPU's capacity).
pub fn swatch_line(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><path d="M0 7H14" stroke="{colour}" stroke-width="3"/></svg>"#)
}

/// A diamond legend swatch (the current plan on the Pareto chart).
pub fn swatch_diamond(colour: &str) -> String {
    format!(r#"<svg width="14" height="14" xmlns="http://www.w3.org/2000/svg"><path d="M7 0L14 7L7 14L0 7Z" fill="{colour}"/></svg>"#)
}
