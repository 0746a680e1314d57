//! The tokenizers Megatron-LM launch scripts name, as data (`data/tokenizers.json`, each with its source): the
//! vocabulary a `--tokenizer-type`, `--tokenizer-model` (a Hugging Face id) or `--vocab-file` gives, so an import
//! derives `vocab_size` as Megatron-LM does instead of assuming one.

use serde_json::Value;
use std::sync::OnceLock;

/// One tokenizer: its name, unpadded vocabulary and where the figure comes from.
pub struct Tokenizer {
    pub name: String,
    pub vocab_size: u64,
    pub source: String,
    types: Vec<String>,
    hf_ids: Vec<String>,
    files: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_str).map(str::to_lowercase).collect())
}

fn table() -> &'static [Tokenizer] {
    static TABLE: OnceLock<Vec<Tokenizer>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let v: Value = serde_json::from_str(include_str!(concat!(env!("OUT_DIR"), "/tokenizers.json"))).unwrap_or(Value::Null);
        let rows = v.get("tokenizers").and_then(Value::as_array).cloned().unwrap_or_default();
        rows.iter()
            .filter_map(|r| {
                Some(Tokenizer {
                    name: r.get("name")?.as_str()?.to_string(),
                    vocab_size: r.get("vocab_size")?.as_u64()?,
                    source: r.get("source")?.as_str()?.to_string(),
                    types: strings(r, "types"),
                    hf_ids: strings(r, "hf_ids"),
                    files: strings(r, "vocab_file_contains"),
                })
            })
            .collect()
    })
}

/// The tokenizer a launch names: by Hugging Face id (case-insensitive, an `-Instruct` suffix aside), else by
/// tokenizer type, else by the vocab file's name; with the argument that decided it.
pub fn find(tokenizer_type: Option<&str>, model: Option<&str>, vocab_file: Option<&str>) -> Option<(&'static Tokenizer, String)> {
    let t = table();
    if let Some(m) = model {
        let id = m.trim().trim_end_matches('/').to_lowercase();
        let id = id.strip_suffix("-instruct").unwrap_or(&id).to_string();
        if let Some(k) = t.iter().find(|k| k.hf_ids.contains(&id)) {
            return Some((k, format!("--tokenizer-model {m}")));
        }
    }
    if let Some(ty) = tokenizer_type {
        if let Some(k) = t.iter().find(|k| k.types.contains(&ty.to_lowercase())) {
            return Some((k, format!("--tokenizer-type {ty}")));
        }
    }
    let file = vocab_file?;
    let base = file.rsplit('/').next().unwrap_or(file).to_lowercase();
    t.iter().find(|k| k.files.iter().any(|f| base.contains(f.as_str()))).map(|k| (k, format!("--vocab-file {file}")))
}
