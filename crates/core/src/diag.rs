//! Typed diagnostics: every problem the core finds is one of these, never a panic.

pub use crate::codes::{Code, Severity};
use serde::{Deserialize, Serialize};

/// One finding: a stable kebab-case `code` (a row of [`crate::codes::RULES`]), that row's severity, a message with
/// the actual numbers, and a fix. Built only by [`Diagnostic::new`], so the severity always is the code's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub fix: String,
    /// Machine-applicable fixes: set these plan fields (dotted paths such as
    /// `parallelism.tensor_model_parallel_size`) to these values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apply: Vec<FieldValue>,
    /// The plan field (dotted path) whose own value this finding is about, when it is one field's (a value of the
    /// wrong type or out of range): the page marks that field and shows the message under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Private, so no module but this one can write a `Diagnostic { .. }` literal with a severity of its own.
    #[serde(skip)]
    sealed: (),
}

/// A value change the user can apply with one click: `path` is the dotted plan path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldValue {
    pub path: String,
    pub value: serde_json::Value,
}

impl Diagnostic {
    /// The one constructor: the severity is the code's row in the rules table.
    pub fn new(code: Code, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Diagnostic { severity: code.severity(), code, message: message.into(), fix: fix.into(), apply: Vec::new(), field: None, sealed: () }
    }
    /// Names the plan field (dotted path) this finding is about.
    pub fn with_field(mut self, path: &str) -> Self {
        self.field = Some(path.to_string());
        self
    }
    /// Attach a one-click fix: set `path` to `value`.
    pub fn with_apply(mut self, path: &str, value: impl Into<serde_json::Value>) -> Self {
        self.apply.push(FieldValue { path: path.to_string(), value: value.into() });
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Input that cannot be planned at all (exit status 2): not JSON, too large, no model, an unknown preset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputError {
    pub code: Code,
    pub message: String,
    pub fix: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error[{}]: {}\n  fix: {}", self.code, self.message, self.fix)
    }
}

impl InputError {
    pub fn new(code: Code, message: impl Into<String>, fix: impl Into<String>) -> Self {
        InputError { code, message: message.into(), fix: fix.into() }
    }
}
