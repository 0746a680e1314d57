//! Signal writes shared by the page's state and the bridge to the tools module.

use leptos::prelude::*;

/// Sets `signal` to `value` unless it already holds it (an echo of one's own change costs nothing).
pub fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|old| *old != value) {
        signal.set(value);
    }
}
