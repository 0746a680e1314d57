//! The page's state and the world outside it: the plan it opens with (a link, else localStorage), the
//! plan written back to the URL hash and localStorage, links followed on back/forward, and the theme.
//! These are the app's only effects on the plan: they sync, they never compute.

use super::plan_doc::default_plan;
use super::share::{self, Rejected};
use crate::browser;
use leptos::prelude::*;
use crate::state::signal::{effect, memo};
use serde_json::Value;

const STORAGE_KEY: &str = "meshplan.plan";
const THEME_KEY: &str = "meshplan.theme";

/// What the page opens with.
pub struct Opening {
    pub plan: Value,
    /// Why a shared link was not opened, if it was not.
    pub notice: Option<String>,
    /// The compact layout for docs pages (`embed` in the hash or the query).
    pub embed: bool,
    /// The pinned baseline of a comparison link (`base=`), vetted as the plan is.
    pub base: Option<Value>,
}

/// The plan the URL hash or localStorage holds (see [`share::initial_plan`]), and the layout.
pub fn opening() -> Opening {
    let hash = browser::hash();
    let embed = is_embed();
    let (plan, notice) = share::initial_plan(&hash, browser::load(STORAGE_KEY).as_deref());
    let (base, base_notice) = share::initial_base(&hash);
    Opening { plan, notice: notice.or(base_notice), embed, base }
}

/// Whether the page shows the compact layout for docs pages (`embed` in the hash or the query).
pub fn is_embed() -> bool {
    share::hash_param(&browser::hash(), "embed").is_some() || share::hash_param(&browser::search(), "embed").is_some()
}

/// The plan → the URL hash (edits within a second share one history entry) and localStorage.
/// The write waits for 150 ms without edits: history.replaceState costs milliseconds per call, too much
/// to pay on every keystroke (it was half of an edit's time at 1,024 GPUs).
/// A pinned baseline rides along as `base=`.
pub fn keep_in_url(plan: RwSignal<Value>, base: RwSignal<Option<Value>>, embed: bool) {
    let last_push = StoredValue::new(f64::NEG_INFINITY);
    let first = StoredValue::new(true);
    let ticket = StoredValue::new(0u64);
    let flags: &'static [(&str, &str)] = if embed { &[("embed", "1")] } else { &[] };
    let sync_url = move || {
        let text = plan.with_untracked(|p| p.to_string());
        let hash = plan.with_untracked(|p| base.with_untracked(|b| share::encode_hash_with_base(p, b.as_ref(), flags)));
        if hash != browser::hash() {
            let now = browser::now_ms();
            let push = !first.get_value() && now - last_push.get_value() > 1000.0;
            browser::write_hash(&hash, push);
            if push {
                last_push.set_value(now);
            }
        }
        first.set_value(false);
        browser::save(STORAGE_KEY, &text);
    };
    effect(move || {
        plan.track();
        base.track();
        let mine = ticket.get_value() + 1;
        ticket.set_value(mine);
        if first.get_value() {
            sync_url();
            return;
        }
        set_timeout(
            move || {
                if ticket.try_get_value() == Some(mine) {
                    sync_url();
                }
            },
            std::time::Duration::from_millis(150),
        );
    });
}

/// Back/forward and edited links → the plan (and the baseline: a link without `base=` unpins); a link that is refused
/// opens the default plan with a notice.
pub fn follow_links(plan: RwSignal<Value>, base: RwSignal<Option<Value>>, notice: RwSignal<Option<String>>) {
    let follow = move || {
        let hash = browser::hash();
        let (b, why) = share::initial_base(&hash);
        if base.with_untracked(|old| *old != b) {
            base.set(b);
        }
        if why.is_some() {
            notice.set(why);
        }
        let Some(param) = share::hash_param(&hash, "plan") else { return };
        match share::decode_shared(param) {
            Ok(v) => {
                if plan.with_untracked(|p| *p != v) {
                    plan.set(v);
                }
            }
            Err(Rejected(why)) => {
                notice.set(Some(format!("The link was not opened: {why}. Showing the default plan instead.")));
                plan.set(default_plan());
            }
        }
    };
    let _ = window_event_listener(leptos::ev::popstate, move |_| follow());
    let _ = window_event_listener(leptos::ev::hashchange, move |_| follow());
}

/// The chosen theme ("system", "light" or "dark", kept in localStorage and set on the root element) and
/// whether the page is dark: the system scheme is a signal the media query's change event keeps in step.
pub fn theme() -> (RwSignal<String>, Memo<bool>) {
    let theme = RwSignal::new(browser::load(THEME_KEY).unwrap_or_else(|| "system".into()));
    let system_dark = RwSignal::new(browser::prefers_dark());
    browser::on_prefers_dark_change(move |d| system_dark.set(d));
    let dark = memo(move || match theme.get().as_str() {
        "dark" => true,
        "light" => false,
        _ => system_dark.get(),
    });
    effect(move || {
        let t = theme.get();
        browser::save(THEME_KEY, &t);
        browser::set_theme_attr(&t);
    });
    (theme, dark)
}
