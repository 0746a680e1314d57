//! Reading a JSON object field by field: wrong types, out-of-range values and unknown keys become
//! diagnostics (and a fallback value), never a panic.

use crate::limits::{MAX_STRING_CHARS, MAX_UNKNOWN_FIELDS_REPORTED};
use crate::{Code, Diagnostic};
use serde_json::{Map, Value};

pub use crate::limits::MAX_FIELD;

pub struct Fields<'a> {
    map: Option<&'a Map<String, Value>>,
    section: String,
    seen: Vec<&'static str>,
    pub diags: &'a mut Vec<Diagnostic>,
}

impl<'a> Fields<'a> {
    /// Reads `value` as an object; anything else is an error diagnostic and an empty object.
    pub fn new(value: Option<&'a Value>, section: &str, diags: &'a mut Vec<Diagnostic>) -> Self {
        let map = match value {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                diags.push(Diagnostic::new(
                    Code::InvalidSection,
                    format!("`{section}` must be a JSON object, found {}", kind_of(other)),
                    format!("write `{section}` as {{ \"field\": value, ... }}"),
                ));
                None
            }
        };
        Fields { map, section: section.to_string(), seen: Vec::new(), diags }
    }

    pub fn is_present(&self) -> bool {
        self.map.is_some()
    }

    fn path(&self, key: &str) -> String {
        if self.section.is_empty() { key.to_string() } else { format!("{}.{key}", self.section) }
    }

    /// The raw value of `key`, treating JSON null as absent.
    pub fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.seen.push(key);
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    fn bad(&mut self, key: &str, what: &str, found: &Value, fallback: String) {
        let path = self.path(key);
        self.diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`{path}` must be {what}, found {}", short(found)),
            format!("set `{path}` to {what} (using {fallback} meanwhile)"),
        ).with_field(&path));
    }

    /// An optional integer in [min, max].
    pub fn opt_uint(&mut self, key: &'static str, min: u64, max: u64) -> Option<u64> {
        let v = self.raw(key)?;
        let what = if max >= MAX_FIELD { format!("an integer ≥ {min}") } else { format!("an integer in {min}..={max}") };
        match as_uint(v) {
            Some(n) if n >= min && n <= max => Some(n),
            _ => {
                self.bad(key, &what, v, "the default".into());
                None
            }
        }
    }

    /// An optional number in [min, max].
    pub fn opt_number(&mut self, key: &'static str, min: f64, max: f64) -> Option<f64> {
        let v = self.raw(key)?;
        match v.as_f64() {
            Some(x) if x >= min && x <= max => Some(x),
            _ => {
                self.bad(key, &format!("a number in {min}..={max}"), v, "the default".into());
                None
            }
        }
    }

    /// An integer in [min, max] with a default.
    pub fn uint(&mut self, key: &'static str, default: u64, min: u64, max: u64) -> u64 {
        self.opt_uint(key, min, max).unwrap_or(default)
    }

    pub fn boolean(&mut self, key: &'static str, default: bool) -> bool {
        match self.raw(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                self.bad(key, "true or false", v, default.to_string());
                default
            }
        }
    }

    pub fn opt_bool(&mut self, key: &'static str) -> Option<bool> {
        match self.raw(key) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => {
                self.bad(key, "true or false", v, "the default".into());
                None
            }
        }
    }

    /// A string that must be one of `choices` (compared case-insensitively); returns the canonical spelling.
    pub fn choice(&mut self, key: &'static str, choices: &[&'static str], default: &'static str) -> &'static str {
        match self.raw(key) {
            None => default,
            Some(Value::String(s)) => match choices.iter().find(|c| c.eq_ignore_ascii_case(s.trim())) {
                Some(c) => c,
                None => {
                    let path = self.path(key);
                    self.diags.push(Diagnostic::new(
                        Code::InvalidValue,
                        format!("`{path}` is {:?}, which is not one of {}", clip(s), choices.join(", ")),
                        format!("set `{path}` to one of {} (using {default:?} meanwhile)", choices.join(", ")),
                    ).with_field(&path));
                    default
                }
            },
            Some(v) => {
                self.bad(key, &format!("one of {}", choices.join(", ")), v, format!("{default:?}"));
                default
            }
        }
    }

    /// A string of at most [`MAX_STRING_CHARS`] characters.
    pub fn string(&mut self, key: &'static str) -> Option<String> {
        match self.raw(key) {
            None => None,
            Some(Value::String(s)) => match too_long(&self.path(key), s) {
                Some(d) => {
                    self.diags.push(d);
                    None
                }
                None => Some(s.clone()),
            },
            Some(v) => {
                self.bad(key, "a string", v, "the default".into());
                None
            }
        }
    }

    /// The keys read or accepted so far (the section's known fields, once every field was read).
    pub fn seen(&self) -> &[&'static str] {
        &self.seen
    }

    /// Marks keys as known without reading them (read elsewhere, or accepted and ignored).
    pub fn accept(&mut self, keys: &[&'static str]) {
        self.seen.extend_from_slice(keys);
    }

    /// Warns about every key that was never read, suggesting the nearest known one; past
    /// [`MAX_UNKNOWN_FIELDS_REPORTED`] of them, one more warning counts the rest.
    pub fn finish(self) {
        let Some(map) = self.map else { return };
        let mut unknown = map.keys().filter(|key| !self.seen.iter().any(|s| s == key));
        for key in unknown.by_ref().take(MAX_UNKNOWN_FIELDS_REPORTED) {
            // A key is shown whole up to the longest string field accepted.
            let path = clip_to(&self.path(key), MAX_STRING_CHARS);
            let fix = match nearest(key, &self.seen) {
                Some(n) => format!("did you mean `{}`? Remove or rename `{path}`", self.path(n)),
                None => format!("remove `{path}`; known fields are {}", self.seen.join(", ")),
            };
            self.diags.push(Diagnostic::new(Code::UnknownField, format!("`{path}` is not a field meshplan knows; it was ignored"), fix));
        }
        let rest = unknown.count();
        if rest > 0 {
            let section = if self.section.is_empty() { "the plan" } else { self.section.as_str() };
            self.diags.push(Diagnostic::new(
                Code::UnknownField,
                format!("`{section}` has {rest} more fields meshplan does not know; they were ignored"),
                format!("remove them; known fields are {}", self.seen.join(", ")),
            ));
        }
    }
}

/// The diagnostic for a string field `path` longer than [`MAX_STRING_CHARS`] characters, if `s` is.
pub fn too_long(path: &str, s: &str) -> Option<Diagnostic> {
    s.chars().nth(MAX_STRING_CHARS)?;
    Some(Diagnostic::new(
        Code::InvalidValue,
        format!("`{path}` is {} characters long; the longest accepted is {MAX_STRING_CHARS}", s.chars().count()),
        format!("set `{path}` to a string of at most {MAX_STRING_CHARS} characters (using the default meanwhile)"),
    ).with_field(path))
}

/// A non-negative integer, accepting integral floats such as 4.0.
pub fn as_uint(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            let f = n.as_f64()?;
            (f >= 0.0 && f.fract() == 0.0 && f <= MAX_FIELD as f64).then_some(f as u64)
        }),
        _ => None,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn clip(s: &str) -> String {
    clip_to(s, 40)
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn clip_to(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// A value as a message shows it: strings clipped, numbers whole, anything else by its kind.
pub fn short(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{:?}", clip(s)),
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}

/// A row of a table as `meshplan explain` prints it: `head`, a blank line, then each non-empty `(label, value)` with the
/// labels in one column.
pub fn explain_text(head: &str, rows: &[(&str, String)]) -> String {
    let mut out = format!("{head}\n\n");
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        out.push_str(&format!("{k:<17}{v}\n"));
    }
    out
}

/// The closest candidate within a third of its length (at least 2 edits), compared case-insensitively by
/// Levenshtein distance on the first 64 characters, so a megabyte-long word costs no more than a short one.
pub fn nearest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let head = |s: &str| s.chars().take(64).collect::<String>().to_ascii_lowercase();
    let word = head(word);
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&word, &head(c)), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn nearest_suggests_within_a_third_of_the_name() {
        let known = ["tensor_model_parallel_size", "pipeline_model_parallel_size", "num_query_groups"];
        // One deletion ("paralel"), one insertion ("groups" → "group"): distance 1.
        assert_eq!(nearest("tensor_model_paralel_size", &known), Some("tensor_model_parallel_size"));
        assert_eq!(nearest("NUM_QUERY_GROUP", &known), Some("num_query_groups"));
        // "seq_len" is 16+ edits from every name: no suggestion.
        assert_eq!(nearest("seq_len", &known), None);
        // Short names allow 2 edits: "tp" → "ep" is 1, "xyz" → "ep" is 3.
        assert_eq!(nearest("tp", &["ep", "cp"]), Some("cp"));
        assert_eq!(nearest("xyz", &["ep"]), None);
    }

    #[test]
    fn nearest_reads_only_the_first_64_characters() {
        // A megabyte-long word is compared by its head: "num_query_groups" followed by junk is 64 − 16 = 48 edits away.
        let long = format!("num_query_groups{}", "x".repeat(1 << 20));
        assert_eq!(nearest(&long, &["num_query_groups"]), None);
        assert_eq!(nearest(&long[..17], &["num_query_groups"]), Some("num_query_groups"));
    }
}
