//! Typed diagnostics: every problem the core finds is one of these, never a panic.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// One finding: a stable kebab-case `code`, a message with the actual numbers, and a fix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: String,
    pub message: String,
    pub fix: String,
    /// Machine-applicable fixes: set these plan fields (dotted paths such as
    /// `parallelism.tensor_model_parallel_size`) to these values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apply: Vec<FieldValue>,
}

/// A value change the user can apply with one click: `path` is the dotted plan path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldValue {
    pub path: String,
    pub value: serde_json::Value,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Diagnostic { severity, code: code.to_string(), message: message.into(), fix: fix.into(), apply: Vec::new() }
    }
    pub fn error(code: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message, fix)
    }
    pub fn warning(code: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message, fix)
    }
    pub fn info(code: &str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::new(Severity::Info, code, message, fix)
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
