//! The shapes that set activation sizes on one GPU (tokens per microbatch and CP rank, TP, SP, ETP): what the
//! activations, the MoE dispatcher and the DSA indexer all size from, below each of them.

use crate::plan::Plan;

/// The shapes that set activation sizes on one GPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Tokens of one microbatch on this CP rank: micro_batch_size · seq_length / CP.
    pub tokens: f64,
    pub tp: f64,
    /// Divisor of the tensors SP shards along the sequence (TP with sequence_parallel, else 1).
    pub sp: f64,
    pub etp: f64,
}

impl Shape {
    pub fn of(p: &Plan) -> Shape {
        let par = &p.parallelism;
        let tp = par.tp().max(1) as f64;
        Shape {
            tokens: p.training.micro_batch_size as f64 * p.training.seq_length as f64 / par.cp().max(1) as f64,
            tp,
            sp: if par.sequence_parallel { tp } else { 1.0 },
            etp: par.etp().max(1) as f64,
        }
    }

    /// Tokens of one microbatch held by this rank along the sequence.
    pub fn local(&self) -> f64 {
        self.tokens / self.sp
    }
}
