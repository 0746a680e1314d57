//! The Copy buttons (share link, exports): a button that says "copied" only once the browser has written
//! the text, and says why not, with what to do instead, when it refused.

use crate::browser;
use leptos::prelude::*;

/// What a Copy button last did.
#[derive(Clone, Debug, PartialEq)]
pub enum Copied {
    Not,
    /// The text now on the clipboard.
    Done(String),
    /// The text that could not be copied, and why (a sentence).
    Failed(String, String),
}

impl Copied {
    /// The last outcome if it was for `text` (any outcome when `text` is `None`).
    pub fn of(&self, text: Option<&str>) -> &Copied {
        match self {
            Copied::Done(t) | Copied::Failed(t, _) if text.is_none_or(|text| t == text) => self,
            _ => &Copied::Not,
        }
    }
}

/// `text` is asked for on click. When `shown` is given, an outcome counts only while that is still the text
/// on show (an export that changed since it was copied is not "copied"). `labels` are the button's words
/// before, after and on failure; `advice` follows the reason a copy failed.
#[component]
pub fn CopyButton(
    text: Callback<(), String>,
    #[prop(optional)] shown: Option<Memo<String>>,
    labels: [&'static str; 3],
    advice: &'static str,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(optional)] class: Option<&'static str>,
    #[prop(optional)] describedby: Option<String>,
) -> impl IntoView {
    let copied = RwSignal::new(Copied::Not);
    let outcome = move |read: &dyn Fn(&Copied) -> Option<String>| match shown {
        Some(shown) => shown.with(|t| copied.with(|c| read(c.of(Some(t))))),
        None => copied.with(|c| read(c.of(None))),
    };
    let label = move || {
        outcome(&|c| {
            Some(match c {
                Copied::Not => labels[0],
                Copied::Done(_) => labels[1],
                Copied::Failed(..) => labels[2],
            }.to_string())
        })
    };
    let failure = move || outcome(&|c| if let Copied::Failed(_, why) = c { Some(format!("{why}: {advice}")) } else { None });
    let click = move |_| {
        let text = text.run(());
        browser::copy_text(&text.clone(), move |written| {
            copied.try_set(match written {
                Ok(()) => Copied::Done(text),
                Err(why) => Copied::Failed(text, why),
            });
        });
    };
    view! {
        <button id=id class=class aria-describedby=describedby on:click=click>{label}</button>
        {move || failure().map(|text| view! { <span id=id.map(|id| format!("{id}-failed")) class="copy-failed" role="alert">{text}</span> })}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_belongs_to_the_text_it_was_for() {
        let done = Copied::Done("a".into());
        assert_eq!(done.of(Some("a")), &done);
        assert_eq!(done.of(Some("b")), &Copied::Not);
        assert_eq!(done.of(None), &done);
        let failed = Copied::Failed("a".into(), "The browser blocked the clipboard".into());
        assert_eq!(failed.of(Some("a")), &failed);
        assert_eq!(failed.of(Some("b")), &Copied::Not);
    }
}
