//! What every rule shares, below all of them: the sink rules report into ([`Findings`]; [`Codes`] for the search),
//! the diagnostic constructor they call, and the dotted plan paths their one-click fixes set.

use crate::{Code, Diagnostic, Severity};

/// Dotted plan paths of the one-click fixes.
pub(crate) const TP: &str = "parallelism.tensor_model_parallel_size";
pub(crate) const VPP: &str = "parallelism.virtual_pipeline_model_parallel_size";
pub(crate) const EP: &str = "parallelism.expert_model_parallel_size";
pub(crate) const ETP: &str = "parallelism.expert_tensor_parallel_size";
pub(crate) const SP: &str = "parallelism.sequence_parallel";
pub(crate) const CP: &str = "parallelism.context_parallel_size";
pub(crate) const GBS: &str = "training.global_batch_size";
pub(crate) const SEQ: &str = "training.seq_length";

pub(crate) fn d(code: Code, message: String, fix: String) -> Diagnostic {
    Diagnostic::new(code, message, fix)
}

/// Where the rules put what they find. A rule names its code first and builds the diagnostic (message, fix,
/// one-click values) only when the sink asks for it, so sinks that keep codes only format nothing.
pub trait Findings {
    /// Takes finding `code`; `make(code)` builds its diagnostic.
    fn add(&mut self, code: Code, make: impl FnOnce(Code) -> Diagnostic);
}

/// Every diagnostic, in full.
impl Findings for Vec<Diagnostic> {
    fn add(&mut self, code: Code, make: impl FnOnce(Code) -> Diagnostic) {
        self.push(make(code));
    }
}

/// The codes only, for callers that never show a message (the layout search evaluates thousands of layouts).
#[derive(Clone, Debug, Default)]
pub struct Codes(pub Vec<Code>);

impl Findings for Codes {
    fn add(&mut self, code: Code, _make: impl FnOnce(Code) -> Diagnostic) {
        self.0.push(code);
    }
}

impl Codes {
    /// The first code whose rule is an error.
    pub fn first_error(&self) -> Option<Code> {
        self.0.iter().copied().find(|c| c.severity() == Severity::Error)
    }
}
