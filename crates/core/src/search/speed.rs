//! The speed settings a tuned run would use, per candidate of the layout search (issue 23, ask 5).
//!
//! A plan searched with tuned defaults (`crate::tuned`: no `"defaults"` switch, or `"tuned"`) is read twice: with
//! Megatron-Core's plain defaults (the search's base plan) and with the tuned ones. The tuned values of [`SPEED_KEYS`]
//! that the plan leaves unstated (its perf-recipe assumptions) are what every candidate starts from; [`settle`] then
//! withdraws, for that one candidate, each tuned value that Megatron rejects or turns off for its layout and variant, as
//! the rules report it (a rule's code → the keys it withdraws, [`WITHDRAW`]), back to its plain value: EP overlap at
//! EP 1, PP without VPP or beside full recompute; TP overlap without SP; per-layer CUDA graphs beside full recompute;
//! the flex dispatcher at expert TP × EP = 1 or with a backend the GPU does not run; overlap_param_gather and FP8 / FP4
//! parameter gather without the distributed optimizer. A setting the plan states is never withdrawn: the rules judge
//! it as they judge any plan.
//!
//! It imports `plan`, `rules`, `settings` and `codes`; `search` builds on it. No allocation per candidate.

use crate::Code;
use crate::plan::Plan;
use crate::rules::{self, Codes};
use crate::settings::{DispatcherType, Settings};
use crate::tuned::TUNED_KEYS;

/// The settings the search takes from tuned defaults per candidate: of [`TUNED_KEYS`], Megatron Bridge perf recipes'
/// speed settings (CUDA graphs, the MoE dispatcher and its backend, EP / TP / DP overlaps, FP8 / FP4 parameter
/// gather, the gradient buffer's dtype, which every perf recipe sets to bf16 and a plan read directly takes too, so the
/// search sizes the same memory); not the memory settings the search chooses itself (the distributed optimizer,
/// recompute) or that change what is trained. Their order is the bit order of a mask ([`Tuned::keys`], [`settle`]'s result).
pub const SPEED_KEYS: [&str; 12] = [
    TUNED_KEYS[0],
    TUNED_KEYS[1],
    TUNED_KEYS[2],
    TUNED_KEYS[3],
    TUNED_KEYS[4],
    TUNED_KEYS[5],
    TUNED_KEYS[6],
    TUNED_KEYS[7],
    TUNED_KEYS[15],
    TUNED_KEYS[16],
    TUNED_KEYS[17],
    // Last, so that the bits above keep their places.
    TUNED_KEYS[14],
];

const GRAPHS: u16 = 0b11;
/// The bit of `moe_token_dispatcher_type`.
pub const DISPATCHER: u16 = 1 << 2;
const DISPATCH: u16 = DISPATCHER | 1 << 3;
const EP_OVERLAP: u16 = 1 << 4;
const TP_OVERLAP: u16 = 1 << 5;
const PARAM_GATHER_OVERLAP: u16 = 1 << 7;
const LOW_PRECISION_GATHER: u16 = 0b111 << 8;

/// What each rule's code withdraws when it finds a tuned value invalid (an error) or turned off (a warning) for a
/// candidate. Each source is the rule's own (codes.rs): megatron-core's `TransformerConfig.__post_init__` asserts (EP
/// overlap, CUDA-graph scope, full recompute with per-layer graphs), `MoEFlexTokenDispatcher.__init__` (TP × EP > 1),
/// Bridge's `validate_flex_dispatcher_backend`, Bridge's CommOverlapConfig (TP overlap off at TP < 2 or without SP) and
/// Megatron-LM's `validate_args` (overlap_param_gather and parameter gather need the distributed optimizer).
const WITHDRAW: [(Code, u16); 15] = [
    (Code::EpOverlapInvalid, EP_OVERLAP),
    (Code::TpCommOverlapNeedsSp, TP_OVERLAP),
    (Code::FullRecomputeCudaGraphs, GRAPHS),
    (Code::CudaGraphScopeInvalid, GRAPHS),
    (Code::CudaGraphScopeWithoutImpl, GRAPHS),
    (Code::CudaGraphLocalBridge, GRAPHS),
    (Code::FlexDispatcherNeedsTpEp, DISPATCH),
    (Code::FlexBackendGpuBridge, DISPATCH),
    (Code::DeepepPadToCapacity, DISPATCH),
    (Code::OverlapParamGatherDistributedOptimizerMlm, PARAM_GATHER_OVERLAP),
    (Code::OverlapParamGatherGradReduceMlm, PARAM_GATHER_OVERLAP),
    (Code::ParamGatherDistributedOptimizerMlm, LOW_PRECISION_GATHER),
    (Code::OptimizerOffloadFp8DelayedMlm, LOW_PRECISION_GATHER),
    (Code::Mxfp8ParamGatherReuseBridge, LOW_PRECISION_GATHER),
    (Code::Fp8ParamGatherWithoutFp8, LOW_PRECISION_GATHER),
];

/// The tuned speed settings of a search: the plan read with tuned defaults, and which [`SPEED_KEYS`] it assumed from a
/// perf recipe (bit i: `SPEED_KEYS[i]`). Keys the plan states, or that no recipe speaks for, are not in `keys`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    pub settings: Settings,
    pub keys: u16,
}

impl Tuned {
    /// The tuned settings of the keys assumed from a recipe (`assumed`: the assumption keys whose source is a recipe).
    pub fn new<'a>(settings: Settings, assumed: impl IntoIterator<Item = &'a str>) -> Tuned {
        let mut keys = 0;
        for a in assumed {
            if let Some(i) = SPEED_KEYS.iter().position(|k| *k == a) {
                keys |= 1 << i;
            }
        }
        Tuned { settings, keys }
    }

    /// Writes every tuned key into `s`.
    pub fn write_into(&self, s: &mut Settings) {
        copy(s, &self.settings, self.keys);
    }
}

/// The bit of `name` in [`SPEED_KEYS`], found at compile time (a name not among them does not compile).
const fn bit(name: &str) -> usize {
    let mut i = 0;
    while i < SPEED_KEYS.len() {
        let (a, b) = (SPEED_KEYS[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a speed key")
}

/// Copies the keys of `mask` from `src` into `dst` (a list is copied into the buffer `dst` holds). The keys are matched
/// by their bit, named at compile time: the search copies them for every candidate.
fn copy(dst: &mut Settings, src: &Settings, mask: u16) {
    const GRAPH_IMPL: usize = bit("cuda_graph_impl");
    const GRAPH_SCOPE: usize = bit("cuda_graph_scope");
    const DISPATCHER_TYPE: usize = bit("moe_token_dispatcher_type");
    const FLEX_BACKEND: usize = bit("moe_flex_dispatcher_backend");
    const EP_COMM: usize = bit("overlap_moe_expert_parallel_comm");
    const TP_COMM: usize = bit("tp_comm_overlap");
    const GRAD_REDUCE: usize = bit("overlap_grad_reduce");
    const PARAM_GATHER: usize = bit("overlap_param_gather");
    const FP8_GATHER: usize = bit("fp8_param_gather");
    const FP4_GATHER: usize = bit("fp4_param_gather");
    const REUSE_GRAD_BUF: usize = bit("reuse_grad_buf_for_mxfp8_param_ag");
    const GRAD_FP32: usize = bit("grad_reduce_in_fp32");
    let mut rest = mask & ((1 << SPEED_KEYS.len()) - 1);
    while rest != 0 {
        let i = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        match i {
            GRAPH_IMPL => dst.cuda_graph_impl = src.cuda_graph_impl,
            GRAPH_SCOPE => dst.cuda_graph_scope.clone_from(&src.cuda_graph_scope),
            DISPATCHER_TYPE => dst.moe_token_dispatcher_type = src.moe_token_dispatcher_type,
            FLEX_BACKEND => dst.moe_flex_dispatcher_backend = src.moe_flex_dispatcher_backend,
            EP_COMM => dst.overlap_moe_expert_parallel_comm = src.overlap_moe_expert_parallel_comm,
            TP_COMM => dst.tp_comm_overlap = src.tp_comm_overlap,
            GRAD_REDUCE => dst.overlap_grad_reduce = src.overlap_grad_reduce,
            PARAM_GATHER => dst.overlap_param_gather = src.overlap_param_gather,
            FP8_GATHER => dst.fp8_param_gather = src.fp8_param_gather,
            FP4_GATHER => dst.fp4_param_gather = src.fp4_param_gather,
            REUSE_GRAD_BUF => dst.reuse_grad_buf_for_mxfp8_param_ag = src.reuse_grad_buf_for_mxfp8_param_ag,
            GRAD_FP32 => dst.grad_reduce_in_fp32 = src.grad_reduce_in_fp32,
            // Every key above is a speed key: `the_bits_name_their_keys` checks the masks below against these names.
            _ => {}
        }
    }
}

/// The rules that judge the speed settings, in [`rules::check`]'s order.
fn speed_rules(p: &Plan, codes: &mut Codes) {
    codes.0.clear();
    rules::model_settings::low_precision_weights(p, codes);
    rules::optimizer::offload(p, codes);
    rules::optimizer::data_parallel_buffers(p, codes);
    rules::model_settings::full_recompute(p, codes);
    rules::model_settings::cuda_graphs(p, codes);
    rules::model_settings::moe_dispatch(p, codes);
    rules::model_settings::ep_overlap(p, codes);
    rules::model_settings::tp_comm_overlap(p, codes);
}

/// Settles the tuned speed settings of the candidate in `p` (its layout and variant written): the keys `withdrawn` from
/// the previous candidate are put back (the dispatcher as `dispatcher`, the candidate's own), then each tuned key a
/// rule finds invalid or turned off for this candidate goes back to `plain`'s value (the dispatcher to `fallback`:
/// alltoall where the search switches Megatron-Core's default allgather at EP > 1), until no rule of [`WITHDRAW`]
/// names a tuned key. Returns the keys withdrawn (a mask of [`SPEED_KEYS`]). At most one round per group of keys.
pub fn settle(p: &mut Plan, t: &Tuned, plain: &Settings, dispatcher: DispatcherType, fallback: DispatcherType, withdrawn: u16, codes: &mut Codes) -> u16 {
    let st = &mut p.training.settings;
    copy(st, &t.settings, withdrawn & t.keys & !DISPATCHER);
    if withdrawn & DISPATCHER != 0 {
        st.moe_token_dispatcher_type = dispatcher;
    }
    let mut out = 0u16;
    for _ in 0..WITHDRAW.len() {
        speed_rules(p, codes);
        let w = WITHDRAW.iter().filter(|(code, _)| codes.0.contains(code)).fold(0, |m, (_, keys)| m | keys) & t.keys & !out;
        if w == 0 {
            break;
        }
        let st = &mut p.training.settings;
        copy(st, plain, w & !DISPATCHER);
        if w & DISPATCHER != 0 {
            st.moe_token_dispatcher_type = fallback;
        }
        out |= w;
    }
    out
}

/// [`settle`]'s outcome written without asking the rules again: the keys `withdrawn` put back (the dispatcher as
/// `dispatcher`), then the keys of `mask` — what `settle` found for the same layout and variant — withdrawn (the
/// dispatcher to `fallback`). The search reuses a layout's verdicts for each of its micro-batch sizes, which no speed
/// rule reads.
pub fn apply(p: &mut Plan, t: &Tuned, plain: &Settings, (dispatcher, fallback): (DispatcherType, DispatcherType), withdrawn: u16, mask: u16) {
    let st = &mut p.training.settings;
    copy(st, &t.settings, withdrawn & t.keys & !DISPATCHER);
    if withdrawn & DISPATCHER != 0 {
        st.moe_token_dispatcher_type = dispatcher;
    }
    copy(st, plain, mask & t.keys & !DISPATCHER);
    if mask & DISPATCHER != 0 {
        st.moe_token_dispatcher_type = fallback;
    }
}

/// The keys of a mask, in [`SPEED_KEYS`] order.
pub fn keys_of(mask: u16) -> impl Iterator<Item = &'static str> {
    SPEED_KEYS.iter().enumerate().filter(move |(i, _)| mask & (1 << i) != 0).map(|(_, k)| *k)
}

/// The tuned settings of a settled candidate written into `s`: every tuned key but the dispatcher (the candidate's key
/// carries the one it runs), the `withdrawn` ones at `plain`'s value.
pub fn fix(s: &mut Settings, t: &Tuned, plain: &Settings, withdrawn: u16) {
    copy(s, &t.settings, t.keys & !DISPATCHER);
    copy(s, plain, withdrawn & t.keys & !DISPATCHER);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masks name the keys their comments say (SPEED_KEYS is indexed into TUNED_KEYS, so a reordered TUNED_KEYS
    /// would move them).
    #[test]
    fn the_bits_name_their_keys() {
        let names = |m: u16| keys_of(m).collect::<Vec<_>>();
        assert_eq!(names(GRAPHS), ["cuda_graph_impl", "cuda_graph_scope"]);
        assert_eq!(names(DISPATCH), ["moe_token_dispatcher_type", "moe_flex_dispatcher_backend"]);
        assert_eq!(names(EP_OVERLAP), ["overlap_moe_expert_parallel_comm"]);
        assert_eq!(names(TP_OVERLAP), ["tp_comm_overlap"]);
        assert_eq!(names(1 << 6), ["overlap_grad_reduce"]);
        assert_eq!(names(PARAM_GATHER_OVERLAP), ["overlap_param_gather"]);
        assert_eq!(names(LOW_PRECISION_GATHER), ["fp8_param_gather", "fp4_param_gather", "reuse_grad_buf_for_mxfp8_param_ag"]);
        assert_eq!(names(1 << 11), ["grad_reduce_in_fp32"]);
    }
}
