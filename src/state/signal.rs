//! Signal helpers shared by the page's state, its panels and the bridge to the tools module.
//!
//! [`memo`] and [`effect`] are `Memo::new` and `Effect::new` through one boxed closure: Leptos' memo and effect
//! machinery is generic over the closure, so each call site compiled its own copy of it (31 memos and 9 effects in
//! the page's wasm, about 13 KB gzipped, docs/web.md "What went"); boxed, it is compiled once per value type.

use leptos::prelude::*;

/// Sets `signal` to `value` unless it already holds it (an echo of one's own change costs nothing).
pub fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|old| *old != value) {
        signal.set(value);
    }
}

/// `Memo::new(move |_| f())`: recomputed when what `f` reads changes, and notifying only when its value changed.
pub fn memo<T: PartialEq + Send + Sync + 'static>(f: impl Fn() -> T + Send + Sync + 'static) -> Memo<T> {
    boxed_memo(Box::new(f))
}

fn boxed_memo<T: PartialEq + Send + Sync + 'static>(f: Box<dyn Fn() -> T + Send + Sync>) -> Memo<T> {
    Memo::new(move |_| f())
}

/// `Effect::new(move |_| f())`: runs `f` now and again whenever what it reads changes.
pub fn effect(f: impl Fn() + 'static) {
    boxed_effect(Box::new(f));
}

fn boxed_effect(f: Box<dyn Fn()>) {
    Effect::new(move |_| f());
}
