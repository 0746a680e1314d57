//! The page's Hugging Face config.json reader. The page's module is built without the core's families' mapping
//! (meshplan-core feature `hf-config`: 16 KB gzip of the first render's wasm, docs/web.md "What went"); the tools
//! module has it. A plan whose model is `{"hf_config": {...}}` is planned by the page as before, its config mapped by
//! the tools module within the plan's own call: the core calls the reader [`serve`] installs, which asks
//! `meshplan:hf-config` (`bridge::ask`, page → tools, answered within the dispatch) and reads the answer. Until the
//! tools module is there such a plan is the `hf-config-loading` input error, and it is planned again when it arrives.
//!
//! The answer is `{"fields": {Megatron TransformerConfig fields}, "before": [Diagnostic], "after": [Diagnostic]}`
//! (`hf::HfReading`) or `{"error": {code, message, fix}}`, read by hand as serde's derived readers read them (the page
//! links no typed serde reader; a native test checks the two agree).

use super::bridge;
use leptos::prelude::*;
use meshplan_core::diag::FieldValue;
use meshplan_core::hf::{self, HfReading};
use meshplan_core::{Code, Diagnostic, InputError};
use serde_json::{Value, json};

pub const HF_CONFIG: &str = "meshplan:hf-config";

/// The page's half: installs the reader in the core, and counts the tools module's arrival in `ready` (the plan is
/// planned again then).
pub fn serve(ready: RwSignal<bool>) {
    hf::install(ask_tools);
    bridge::listen(bridge::READY, move |_| ready.set(true));
}

/// The tools' half: maps each config the page asks about.
pub fn answer_page() {
    bridge::answer(HF_CONFIG, |question| Some(answer(&question)));
}

/// What the tools module answers for a config (JSON text).
fn answer(question: &str) -> String {
    let Ok(config) = serde_json::from_str::<Value>(question) else {
        return json!({ "error": hf::loading() }).to_string();
    };
    match hf::map(&config) {
        Ok(r) => json!({ "fields": r.fields, "before": r.before, "after": r.after }).to_string(),
        Err(e) => json!({ "error": e }).to_string(),
    }
}

/// The reader the page installs: the tools module's answer, or `hf-config-loading` while no one answers.
fn ask_tools(config: &Value) -> Result<HfReading, InputError> {
    let answer = bridge::ask(HF_CONFIG, &config.to_string()).ok_or_else(hf::loading)?;
    read(&answer).ok_or_else(hf::loading)?
}

/// The code spelled `s`, found in `Code::ALL` (`Code::parse` would link the rules table's text into the page).
fn code(s: &str) -> Option<Code> {
    Code::ALL.iter().copied().find(|c| c.as_str() == s)
}

/// An answer read as serde reads `HfReading` / `InputError` (None: unreadable).
fn read(text: &str) -> Option<Result<HfReading, InputError>> {
    let v: Value = serde_json::from_str(text).ok()?;
    if let Some(e) = v.get("error") {
        let text = |k: &str| e.get(k)?.as_str().map(str::to_string);
        return Some(Err(InputError::new(code(e.get("code")?.as_str()?)?, text("message")?, text("fix")?)));
    }
    let list = |k: &str| v.get(k)?.as_array()?.iter().map(read_diagnostic).collect::<Option<Vec<_>>>();
    Some(Ok(HfReading { fields: v.get("fields")?.clone(), before: list("before")?, after: list("after")? }))
}

fn read_diagnostic(v: &Value) -> Option<Diagnostic> {
    let text = |k: &str| v.get(k)?.as_str().map(str::to_string);
    let mut d = Diagnostic::new(code(v.get("code")?.as_str()?)?, text("message")?, text("fix")?);
    if let Some(apply) = v.get("apply") {
        let edit = |e: &Value| Some(FieldValue { path: e.get("path")?.as_str()?.to_string(), value: e.get("value")?.clone() });
        d.apply = apply.as_array()?.iter().map(edit).collect::<Option<Vec<_>>>()?;
    }
    d.field = match v.get("field") {
        None | Some(Value::Null) => None,
        Some(f) => Some(f.as_str()?.to_string()),
    };
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configs of the core's Hugging Face tests (crates/core/tests/data/hf/*.json, each a model card's config.json):
    /// what the tools module answers for each is read back as the core's own mapping, finding for finding, and the
    /// page plans it as the core does with the mapping compiled in.
    #[test]
    fn an_answer_reads_as_the_core_maps() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/core/tests/data/hf");
        let mut read_back = 0;
        let mut findings = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let config = meshplan_core::plan::read_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let mapped = hf::map(&config);
            assert_eq!(read(&answer(&config.to_string())), Some(mapped.clone()), "{}", path.display());
            if let Ok(r) = &mapped {
                read_back += 1;
                findings += r.before.len() + r.after.len();
            }
        }
        assert!(read_back >= 10, "{read_back} configs mapped");
        assert!(findings >= 1, "some config carries a finding ({findings})");
        // A config that cannot be mapped crosses as its input error; an unreadable answer is none.
        let bad = answer(r#"{"model_type": "llama"}"#);
        assert!(matches!(read(&bad), Some(Err(e)) if e.code == Code::HfConfigUnmappable), "{bad}");
        assert_eq!(read(&answer("[1]")), Some(Err(hf::map(&json!([1])).unwrap_err())));
        for text in ["nope", "{}", r#"{"fields":{},"before":[{"code":"no-such-code","message":"m","fix":"f"}],"after":[]}"#] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    /// A diagnostic with a one-click fix and a field reads back as serde writes it.
    #[test]
    fn a_diagnostic_reads_as_serde_writes_it() {
        let mut d = Diagnostic::new(Code::InvalidValue, "`model.hf_config.num_hidden_layers` must be …", "set it");
        d.field = Some("model.hf_config.num_hidden_layers".into());
        d.apply = vec![FieldValue { path: "parallelism.tensor_model_parallel_size".into(), value: json!(2) }];
        let plain = Diagnostic::new(Code::HfConfigFamilyUnknown, "model_type \"x\"", "check");
        for d in [d, plain] {
            assert_eq!(read_diagnostic(&serde_json::to_value(&d).unwrap()), Some(d));
        }
    }
}
