//! Every rule of the source guide, Megatron-Core / Megatron-LM and Megatron Bridge, as diagnostics.
//! The table [`RULES`] (in `codes.rs`, re-exported here) lists each code once, with its severity, what it means and
//! where it comes from; `meshplan explain CODE` prints that entry.

use crate::layout::{GroupKind, Layout};
use crate::memory::MemoryReport;
use crate::pipeline::SplitError;
use crate::plan::{Plan, Precision, Recompute};
use crate::report::Derived;
use crate::{Code, Diagnostic, Severity};

pub use crate::codes::{RULES, Rule, rule};

fn d(code: Code, message: String, fix: String) -> Diagnostic {
    Diagnostic::new(code, message, fix)
}

/// Divisors of `n` (n ≥ 1), ascending; n is at most 2^40 here, so trial division to √n is cheap.
fn divisors(n: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut i = 1u64;
    while i.saturating_mul(i) <= n && i <= (1 << 21) {
        if n % i == 0 {
            small.push(i);
            if i != n / i {
                large.push(n / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// The divisor of `n` nearest to `x` (ties go to the smaller one), for "nearest valid value" fixes.
pub fn nearest_divisor(n: u64, x: u64) -> u64 {
    divisors(n.max(1)).into_iter().min_by_key(|&v| (v.abs_diff(x), v)).unwrap_or(1)
}

/// The smallest multiple of `m` that is ≥ x.
fn round_up(x: u64, m: u64) -> u64 {
    x.div_ceil(m.max(1)).saturating_mul(m.max(1))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Least common multiple, saturating; lcm(0, x) is taken as x so a zero never reaches a modulus.
pub fn lcm(a: u64, b: u64) -> u64 {
    let (a, b) = (a.max(1), b.max(1));
    (a / gcd(a, b)).saturating_mul(b)
}

/// The multiple seq_length must be: 2·CP when CP > 1 (the load-balanced CP split), CP·TP with sequence parallelism
/// (the CP-local sequence scattered over TP); both together give CP·lcm(2, TP).
pub fn seq_multiple(cp: u64, tp: u64, sequence_parallel: bool) -> u64 {
    let cp_part = if cp > 1 { 2 * cp } else { 1 };
    let sp_part = if sequence_parallel && tp > 1 { cp.saturating_mul(tp) } else { 1 };
    lcm(cp_part, sp_part)
}

/// The smallest microbatch count M' ≥ `mb` the interleaved schedule accepts with group size `group` ≥ `pp`:
/// M' ≥ group and M' mod group ∈ {0} ∪ [pp, group).
pub fn interleaved_microbatches_at_least(mb: u64, group: u64, pp: u64) -> u64 {
    let group = group.max(1);
    let m = mb.max(group);
    let r = m % group;
    if r == 0 || r >= pp {
        m
    } else if pp < group {
        m.saturating_add(pp - r)
    } else {
        m.saturating_add(group - r)
    }
}

/// Whether TP = `c` passes the width rules: heads, query groups (multiple or divisor), dense and shared FFN.
fn tp_widths_divide(m: &crate::model::ModelConfig, c: u64) -> bool {
    let c = c.max(1);
    let g = m.num_query_groups.max(1);
    let dense = m.num_layers > m.num_moe_layers();
    m.num_attention_heads % c == 0
        && (m.multi_latent_attention || g % c == 0 || c % g == 0)
        && (!dense || m.ffn_hidden_size % c == 0)
        && m.moe_shared_expert_intermediate_size.filter(|&s| m.is_moe() && s > 0).is_none_or(|s| s % c == 0)
}

/// The TP nearest to the plan's that passes every TP width rule (heads, query groups, dense and shared FFN, see
/// [`tp_widths_divide`]) and `also`, for "set tensor_model_parallel_size to …" fixes. Prefers a TP that divides
/// world/(PP·CP), so the dense data-parallel size stays whole; with `whole_dp` only such a TP will do (None if none
/// does). Ties go to the smaller TP. TP = 1 passes the width rules, so without `whole_dp` and `also` there is always one.
// TP must divide num_attention_heads (attention.py), so the candidates are its divisors.
fn nearest_valid_tp(p: &Plan, also: impl Fn(u64) -> bool, whole_dp: bool) -> Option<u64> {
    let (tp, m) = (p.parallelism.tp(), &p.model);
    let pp_cp = p.parallelism.pp().saturating_mul(p.parallelism.cp()).max(1);
    let w = p.world_size();
    let per = if w % pp_cp == 0 { w / pp_cp } else { 0 };
    let candidates: Vec<u64> = divisors(m.num_attention_heads.max(1)).into_iter().filter(|&c| tp_widths_divide(m, c) && also(c)).collect();
    let pick = |fits_world: bool| {
        candidates.iter().copied().filter(|&c| !fits_world || (per > 0 && per % c == 0)).min_by_key(|&c| (c.abs_diff(tp), c))
    };
    pick(true).or_else(|| if whole_dp { None } else { pick(false) })
}

/// Rank-local GEMM dims that break TE's FP8 alignment at this TP: (what, value, modulus). Only TP-divisible
/// widths are checked (the divisibility rules report the rest); MLA attention and grouped experts are not modelled.
fn fp8_width_failures(m: &crate::model::ModelConfig, tp: u64) -> Vec<(String, u64, u64)> {
    let tp = tp.max(1);
    let mut bad = Vec::new();
    let mut need = |name: String, total: u64, k: u64| {
        if total % tp == 0 && (total / tp) % k != 0 {
            bad.push((name, total / tp, k));
        }
    };
    need("hidden_size".into(), m.hidden_size.saturating_mul(tp), 16);
    if !m.multi_latent_attention {
        let q = m.num_attention_heads.saturating_mul(m.kv_channels);
        let qkv = m.num_attention_heads.saturating_add(2 * m.num_query_groups).saturating_mul(m.kv_channels);
        need(format!("linear_qkv out/TP = {qkv}/{tp}"), qkv, 8);
        need(format!("linear_proj in/TP = {q}/{tp}"), q, 16);
    }
    if m.num_layers > m.num_moe_layers() {
        let glu = if m.gated_linear_unit { 2 } else { 1 };
        need(format!("linear_fc1 out/TP = {}/{tp}", glu * m.ffn_hidden_size), glu * m.ffn_hidden_size, 8);
        need(format!("linear_fc2 in/TP = {}/{tp}", m.ffn_hidden_size), m.ffn_hidden_size, 16);
    }
    if let Some(s) = m.moe_shared_expert_intermediate_size.filter(|&s| m.is_moe() && s > 0) {
        need(format!("shared expert fc2 in/TP = {s}/{tp}"), s, 16);
    }
    bad
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

const TP: &str = "parallelism.tensor_model_parallel_size";
const VPP: &str = "parallelism.virtual_pipeline_model_parallel_size";
const EP: &str = "parallelism.expert_model_parallel_size";
const ETP: &str = "parallelism.expert_tensor_parallel_size";
const SP: &str = "parallelism.sequence_parallel";
const GBS: &str = "training.global_batch_size";
const SEQ: &str = "training.seq_length";

/// The rule a failing layer split breaks.
pub fn split_code(e: &SplitError) -> Code {
    match e {
        SplitError::Uneven { .. } => Code::LayersNotDivisibleByPp,
        SplitError::VirtualUneven { .. } => Code::LayersNotDivisibleByVpp,
        SplitError::TooManyEdgeLayers { .. } => Code::UnevenStagesTooManyLayers,
        SplitError::EdgeNeedsPipeline => Code::UnevenStagesNeedPp,
    }
}

/// The diagnostic for a layer split that fails.
pub fn split_diagnostic(e: &SplitError) -> Diagnostic {
    let code = split_code(e);
    match *e {
        SplitError::Uneven { layers, stages } => d(
            code,
            format!("{layers} layers do not divide evenly over {stages} pipeline stages"),
            format!(
                "use a pipeline size that divides {layers} (e.g. {}), or set num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage so the rest divides",
                nearest_divisor(layers, stages.max(1))
            ),
        ),
        SplitError::VirtualUneven { layers, vpp } => d(
            code,
            format!("a pipeline stage of {layers} layers does not split into {vpp} virtual chunks"),
            format!("set virtual_pipeline_model_parallel_size to a divisor of {layers} (e.g. {})", nearest_divisor(layers.max(1), vpp)),
        )
        .with_apply(VPP, nearest_divisor(layers.max(1), vpp)),
        SplitError::TooManyEdgeLayers { first, last, layers } => d(
            code,
            format!("num_layers_in_first_pipeline_stage ({first}) + num_layers_in_last_pipeline_stage ({last}) exceed num_layers = {layers}"),
            "lower the first/last stage layer counts".into(),
        ),
        SplitError::EdgeNeedsPipeline => d(
            code,
            "num_layers_in_first/last_pipeline_stage is set but pipeline_model_parallel_size = 1".into(),
            "remove the first/last stage layer counts or use pipeline_model_parallel_size > 1".into(),
        ),
    }
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

/// Sizing, divisibility and configuration rules.
pub fn check(p: &Plan, dv: &Derived, split_error: Option<&SplitError>, out: &mut impl Findings) {
    let par = &p.parallelism;
    let m = &p.model;
    let t = &p.training;
    let (tp, pp, cp, ep, etp) = (par.tp(), par.pp(), par.cp(), par.ep(), par.etp());
    let w = dv.world_size;
    let moe = m.is_moe();

    // World size against both meshes.
    let dense = tp.saturating_mul(pp).saturating_mul(cp);
    if dense == 0 || w % dense != 0 {
        let good_tp = nearest_valid_tp(p, |_| true, true);
        out.add(Code::WorldNotDivisibleDense, |code| {
            let gpus = format!("use {} GPUs (the nearest multiple of {dense} at or above {w})", round_up(w, dense));
            let diag = d(
                code,
                format!("world size {w} is not a multiple of TP·PP·CP = {tp}·{pp}·{cp} = {dense}, so the dense data-parallel size {w}/{dense} is not whole"),
                match good_tp {
                    Some(g) => format!("{gpus}, or set tensor_model_parallel_size to {g}, the nearest TP that divides {w}/(PP·CP) and the model's widths"),
                    None => format!("{gpus}; no tensor_model_parallel_size fixes it, since PP·CP = {} does not divide {w} (or no TP that does also divides the model's widths)", pp.saturating_mul(cp)),
                },
            );
            match good_tp {
                Some(g) => diag.with_apply(TP, g),
                None => diag,
            }
        });
    }
    let expert = etp.saturating_mul(ep).saturating_mul(pp);
    if expert == 0 || w % expert != 0 {
        let per = w / pp.saturating_mul(etp).max(1);
        let good_ep = nearest_divisor(per.max(1), ep);
        out.add(Code::WorldNotDivisibleExpert, |code|
            d(
                code,
                format!("world size {w} is not a multiple of ETP·EP·PP = {etp}·{ep}·{pp} = {expert}, so the expert data-parallel size is not whole"),
                format!("use {} GPUs, or set expert_model_parallel_size to {good_ep}", round_up(w, expert)),
            )
            .with_apply(EP, good_ep),
        );
    }

    // Tensor parallelism against the model's widths.
    // One pick for every TP width rule below, so applying any of their fixes clears them all.
    let nearest_width_tp = || nearest_valid_tp(p, |_| true, false).unwrap_or(1);
    if m.num_attention_heads % tp != 0 {
        out.add(Code::HeadsNotDivisibleByTp, |code| {
            let width_tp = nearest_width_tp();
            d(
                code,
                format!("num_attention_heads = {} is not divisible by tensor_model_parallel_size = {tp}", m.num_attention_heads),
                format!("set tensor_model_parallel_size to {width_tp}, the nearest TP that divides {} and passes the other TP width rules", m.num_attention_heads),
            )
            .with_apply(TP, width_tp)
        });
    }
    if !m.multi_latent_attention {
        // megatron/core/transformer/transformer_config.py __post_init__: num_query_groups must be a multiple OR a
        // divisor of TP. With fewer groups than TP, attention.py gives each rank one KV group (replicated
        // TP/num_query_groups times) and all-gathers then slices the QKV output.
        let g = m.num_query_groups.max(1);
        if g % tp != 0 && tp % g != 0 {
            let good = nearest_width_tp();
            out.add(Code::QueryGroupsNotDivisibleByTp, |code|
                d(
                    code,
                    format!(
                        "num_query_groups = {g} is neither a multiple nor a divisor of tensor_model_parallel_size = {tp} ({g} mod {tp} = {}, {tp} mod {g} = {})",
                        g % tp,
                        tp % g
                    ),
                    format!(
                        "set tensor_model_parallel_size to {good}, the nearest TP that divides num_attention_heads = {} and is a multiple or divisor of {g}",
                        m.num_attention_heads
                    ),
                )
                .with_apply(TP, good),
            );
        } else if g < tp && m.num_attention_heads % tp == 0 {
            out.add(Code::QueryGroupsReplicated, |code| d(
                code,
                format!(
                    "num_query_groups = {g} < tensor_model_parallel_size = {tp}: megatron-core gives each TP rank one KV head, so every KV head is replicated on {tp}/{g} = {} ranks (QKV is all-gathered, then sliced)",
                    tp / g
                ),
                format!("nothing to fix; KV-projection compute and the KV cache are duplicated {}×, and cp_comm_type a2a cannot split one KV head per rank over CP > 1", tp / g),
            ));
        }
        if m.num_attention_heads % m.num_query_groups.max(1) != 0 {
            out.add(Code::HeadsNotDivisibleByQueryGroups, |code| d(
                code,
                format!("num_attention_heads = {} is not a multiple of num_query_groups = {}", m.num_attention_heads, m.num_query_groups),
                format!("set num_query_groups to a divisor of {} (e.g. {})", m.num_attention_heads, nearest_divisor(m.num_attention_heads, m.num_query_groups)),
            ));
        }
    }
    let dense_layers = m.num_layers > m.num_moe_layers();
    let shared = m.moe_shared_expert_intermediate_size.filter(|&s| moe && s > 0);
    let widths = [("ffn_hidden_size", Some(m.ffn_hidden_size).filter(|_| dense_layers)), ("moe_shared_expert_intermediate_size", shared)];
    for (name, width) in widths {
        if let Some(f) = width.filter(|&f| f % tp != 0) {
            out.add(Code::FfnNotDivisibleByTp, |code| {
                let width_tp = nearest_width_tp();
                d(
                    code,
                    format!("{name} = {f} is not divisible by tensor_model_parallel_size = {tp} ({f} mod {tp} = {})", f % tp),
                    format!("set tensor_model_parallel_size to {width_tp}, the nearest TP that divides {f} and passes the other TP width rules"),
                )
                .with_apply(TP, width_tp)
            });
        }
    }
    if moe && m.moe_ffn() % etp != 0 {
        let good = nearest_divisor(m.moe_ffn(), etp);
        out.add(Code::MoeFfnNotDivisibleByEtp, |code|
            d(
                code,
                format!("moe_ffn_hidden_size = {} is not divisible by expert_tensor_parallel_size = {etp}", m.moe_ffn()),
                format!("set expert_tensor_parallel_size to {good}"),
            )
            .with_apply(ETP, good),
        );
    }

    // Vocabulary: Megatron-LM always pads (megatron/training/vocab_utils.py calculate_padded_vocab_size, from the
    // tokenizer's size); Megatron Bridge pads only a vocab_size it takes from the tokenizer (setup.py
    // _validate_and_set_vocab_size returns should_pad_vocab = False for a vocab_size the model config sets, as presets
    // and HF conversions do), and VocabParallelEmbedding's divide(vocab, TP) then asserts at model build.
    if m.vocab_size % tp != 0 {
        let padded = dv.padded_vocab_size;
        out.add(Code::VocabNotDivisibleByTp, |code|
            d(
                code,
                format!(
                    "vocab_size = {} is not divisible by tensor_model_parallel_size = {tp} ({} mod {tp} = {}): Megatron-LM pads it to {padded} (a multiple of make_vocab_size_divisible_by·TP = {}·{tp}), which this plan sizes; Megatron Bridge builds a vocab_size set in the model config unpadded (should_pad_vocab = False) and VocabParallelEmbedding fails dividing {} rows over {tp} ranks",
                    m.vocab_size,
                    m.vocab_size,
                    m.vocab_size % tp,
                    m.make_vocab_size_divisible_by,
                    m.vocab_size
                ),
                format!("for Megatron Bridge set vocab_size to the padded {padded} (or cfg.model.should_pad_vocab = True); Megatron-LM needs nothing"),
            )
            .with_apply("model.vocab_size", padded),
        );
    }

    // Sequence parallelism.
    if par.sequence_parallel && tp == 1 {
        out.add(Code::SpRequiresTp, |code|
            d(
                code,
                "sequence_parallel = true with tensor_model_parallel_size = 1: SP splits activations across the TP group, which has one rank".into(),
                "set sequence_parallel = false, or tensor_model_parallel_size > 1 (megatron-core raises; Megatron-LM and Bridge silently turn SP off)".into(),
            )
            .with_apply(SP, false),
        );
    }
    if moe && tp > 1 && !par.sequence_parallel {
        out.add(Code::MoeTpRequiresSp, |code|
            d(
                code,
                format!(
                    "MoE model with tensor_model_parallel_size = {tp} and sequence_parallel = false (expert_model_parallel_size = {ep}): MoELayer.forward raises ValueError at the first training step whatever EP is; megatron-core's config check only warns, and only when EP > 1"
                ),
                "set sequence_parallel = true".into(),
            )
            .with_apply(SP, true),
        );
    }

    // Context parallelism and the sequence.
    // Megatron-LM validate_args and Bridge ConfigContainer.validate assert seq % (2·CP) == 0 when CP > 1; with
    // SP the CP-local sequence seq/CP is scattered over TP (mappings._split_along_first_dim asserts at the first
    // forward), so seq % (CP·TP) == 0. Together: seq % lcm(2·CP, CP·TP) = seq % (CP·lcm(2, TP)). Both fixes round
    // up to that combined multiple, so applying either one clears both rules.
    let seq = t.seq_length;
    let seq_multiple = seq_multiple(cp, tp, par.sequence_parallel);
    if cp > 1 && seq % (2 * cp) != 0 {
        let good = round_up(seq, seq_multiple);
        out.add(Code::CpSeqNotDivisible, |code|
            d(
                code,
                format!(
                    "seq_length = {seq} is not divisible by 2·context_parallel_size = 2·{cp} = {}: CP splits the sequence into 2·CP chunks for load balance ({seq} mod {} = {})",
                    2 * cp,
                    2 * cp,
                    seq % (2 * cp)
                ),
                if seq_multiple != 2 * cp {
                    format!("set seq_length to {good}, the next multiple of lcm(2·CP, CP·TP) = {seq_multiple} (2·CP for the CP split, CP·TP for sequence parallelism), or change context_parallel_size")
                } else {
                    format!("set seq_length to {good} (next multiple of {}), or change context_parallel_size", 2 * cp)
                },
            )
            .with_apply(SEQ, good),
        );
    }
    if par.sequence_parallel && tp > 1 && seq % cp.saturating_mul(tp) != 0 {
        let good = round_up(seq, seq_multiple);
        let share = if seq % cp == 0 { format!("{}", seq / cp) } else { format!("{seq}/{cp} (not whole)") };
        out.add(Code::SpSeqNotDivisible, |code|
            d(
                code,
                format!(
                    "with sequence_parallel each of the {cp} CP ranks holds seq_length/CP = {share} tokens, which do not split evenly over tensor_model_parallel_size = {tp}: seq_length = {seq} is not a multiple of CP·TP = {}",
                    cp * tp
                ),
                format!("set seq_length to {good}, the next multiple of {seq_multiple} (CP·TP = {}{})", cp * tp, if cp > 1 { format!(", with 2·CP = {}", 2 * cp) } else { String::new() }),
            )
            .with_apply(SEQ, good),
        );
    }
    if let Some(max_pos) = m.max_position_embeddings.filter(|&mp| seq > mp) {
        if m.position_embedding_type == "learned_absolute" {
            out.add(Code::SeqExceedsMaxPosition, |code| d(
                code,
                format!("seq_length = {seq} exceeds max_position_embeddings = {max_pos}"),
                format!("set seq_length ≤ {max_pos} or raise max_position_embeddings"),
            ));
        } else {
            // Megatron-LM validate_args asserts max_position_embeddings ≥ seq_length whatever the position
            // embedding; Bridge's GPTModelProvider has no such field and sizes RoPE from seq_length.
            out.add(Code::SeqExceedsMaxPositionMlm, |code| d(
                code,
                format!(
                    "seq_length = {seq} exceeds max_position_embeddings = {max_pos} with position_embedding_type = {}: Megatron-LM (pretrain_gpt.py validate_args) asserts max_position_embeddings ≥ seq_length even for RoPE; Megatron Bridge does not check it",
                    m.position_embedding_type
                ),
                format!("for a Megatron-LM launch pass --max-position-embeddings {seq} (or more), or set seq_length ≤ {max_pos}"),
            ));
        }
    }

    // Multi-token prediction: Megatron-LM validate_args asserts position_embedding_type in (rope, none) when
    // mtp_num_layers is set; megatron-core and Bridge's GPTModelProvider build it with any type.
    if m.mtp_num_layers > 0 && !["rope", "none"].contains(&m.position_embedding_type.as_str()) {
        out.add(Code::MtpPositionEmbeddingMlm, |code|
            d(
                code,
                format!(
                    "mtp_num_layers = {} with position_embedding_type = {}: Megatron-LM (validate_args) asserts that MTP runs with rope or none; Megatron Bridge builds it",
                    m.mtp_num_layers, m.position_embedding_type
                ),
                "for a Megatron-LM launch use position_embedding_type = \"rope\" (with --rope-type yarn for YaRN scaling under MLA) or \"none\"".into(),
            )
            .with_apply("model.position_embedding_type", "rope"),
        );
    }

    // Experts.
    if !moe {
        if ep > 1 {
            out.add(Code::EpRequiresMoe, |code|
                d(
                    code,
                    format!("expert_model_parallel_size = {ep} on a dense model: it has no experts to distribute"),
                    "set expert_model_parallel_size = 1, or use an MoE model (num_moe_experts)".into(),
                )
                .with_apply(EP, 1),
            );
        }
        if !par.expert_tensor_parallel_size_defaulted && etp != tp && etp > 1 {
            out.add(Code::EtpWithoutMoe, |code| d(
                code,
                format!("expert_tensor_parallel_size = {etp} has no effect on a dense model"),
                "remove expert_tensor_parallel_size".into(),
            ));
        }
    } else {
        let experts = m.num_experts();
        if experts % ep != 0 {
            let good = nearest_divisor(experts, ep);
            out.add(Code::ExpertsNotDivisibleByEp, |code|
                d(
                    code,
                    format!("num_moe_experts = {experts} is not divisible by expert_model_parallel_size = {ep}: each EP rank must hold the same number of experts"),
                    format!("set expert_model_parallel_size to {good} (a divisor of {experts})"),
                )
                .with_apply(EP, good),
            );
        }
        if m.moe_router_topk > experts {
            out.add(Code::TopkExceedsExperts, |code| d(
                code,
                format!("moe_router_topk = {} exceeds num_moe_experts = {experts}", m.moe_router_topk),
                format!("set moe_router_topk ≤ {experts}"),
            ));
        }
        if m.moe_router_topk == 1 && !m.moe_router_pre_softmax {
            out.add(Code::TopkOneNeedsPreSoftmax, |code| d(
                code,
                "moe_router_topk = 1 with softmax scoring and moe_router_pre_softmax = false: the single routing weight would always be 1".into(),
                "set moe_router_pre_softmax = true, or moe_router_topk ≥ 2".into(),
            ));
        }
        if m.add_bias_linear && etp > 1 {
            out.add(Code::MoeBiasNeedsEtp1, |code|
                d(
                    code,
                    format!("add_bias_linear = true with expert_tensor_parallel_size = {etp}: Megatron's grouped experts do not support biases with ETP > 1"),
                    "set expert_tensor_parallel_size = 1 or add_bias_linear = false".into(),
                )
                .with_apply(ETP, 1),
            );
        }
        if par.expert_tensor_parallel_size_defaulted && ep > 1 && tp > 1 {
            out.add(Code::EtpDefault, |code|
                d(
                    code,
                    format!(
                        "expert_tensor_parallel_size was not given, so this plan uses megatron-core's default ETP = TP = {tp}; Megatron Bridge would use ETP = 1 because EP = {ep} > 1"
                    ),
                    "set expert_tensor_parallel_size explicitly so both launchers build the same expert mesh".into(),
                )
                .with_apply(ETP, 1),
            );
        }
    }

    // Pipeline: virtual stages, the layer split and microbatches.
    let vpp = par.vpp();
    if par.virtual_pipeline_model_parallel_size.is_some_and(|v| v > 1) && pp == 1 {
        out.add(Code::VppRequiresPp, |code|
            d(
                code,
                format!("virtual_pipeline_model_parallel_size = {vpp} with pipeline_model_parallel_size = 1: interleaving needs several pipeline stages"),
                "unset virtual_pipeline_model_parallel_size, or use pipeline_model_parallel_size > 1".into(),
            )
            .with_apply(VPP, serde_json::Value::Null),
        );
    }
    // TransformerConfig.__post_init__ (uneven pipeline): first/last must be > 0, and the middle stages get layers
    // exactly when there are middle stages ("Mismatch: … middle layers remaining but … middle PP stages").
    let (first, last) = (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage);
    if pp > 1 && (first.is_some() || last.is_some()) {
        for (name, v) in [("num_layers_in_first_pipeline_stage", first), ("num_layers_in_last_pipeline_stage", last)] {
            if v == Some(0) {
                out.add(Code::UnevenStageZeroLayers, |code|
                    d(
                        code,
                        format!("{name} = 0: megatron-core requires it to be larger than 0"),
                        format!("unset {name}, or set it to at least {}", vpp),
                    )
                    .with_apply(&format!("parallelism.{name}"), serde_json::Value::Null),
                );
            }
        }
        let (f, l) = (first.unwrap_or(0), last.unwrap_or(0));
        let mid_stages = pp - u64::from(first.is_some()) - u64::from(last.is_some());
        let mid_layers = m.num_layers.saturating_sub(f.saturating_add(l));
        if f.saturating_add(l) <= m.num_layers && mid_stages > 0 && mid_layers == 0 {
            out.add(Code::UnevenStagesEmptyMiddle, |code| d(
                code,
                format!(
                    "num_layers_in_first/last_pipeline_stage = {f} + {l} take all {} layers, leaving 0 layers for the {mid_stages} middle pipeline stage(s)",
                    m.num_layers
                ),
                format!("lower the first/last counts so that the {mid_stages} middle stage(s) get a whole multiple of {vpp} layers each, or lower pipeline_model_parallel_size"),
            ));
        }
    }
    if let Some(e) = split_error {
        out.add(split_code(e), |_| split_diagnostic(e));
    }
    let dp = dv.data_parallel_size;
    let mbs = t.micro_batch_size;
    let gbs = dv.global_batch_size;
    if dp > 0 && t.global_batch_size.is_none() {
        out.add(Code::GbsDefault, |code|
            d(
                code,
                format!(
                    "global_batch_size was not given: Megatron-LM sets it to micro_batch_size·DP = {mbs}·{dp} = {gbs}, one microbatch per step{}; Megatron Bridge asserts that train.global_batch_size is set",
                    if pp > 1 { format!(" (the {pp}-stage pipeline never fills)") } else { String::new() }
                ),
                format!("set global_batch_size explicitly ({gbs} is what this plan uses; a multiple of {gbs} gives more microbatches per step)"),
            )
            .with_apply(GBS, gbs),
        );
    }
    if dp > 0 {
        let unit = mbs.saturating_mul(dp);
        if gbs % unit != 0 || gbs < unit {
            let good = round_up(gbs.max(1), unit);
            out.add(Code::GbsNotDivisible, |code|
                d(
                    code,
                    format!("global_batch_size = {gbs} is not divisible by micro_batch_size × data_parallel_size = {mbs} × {dp} = {unit}"),
                    format!("set global_batch_size to {good} (or {}), a multiple of {unit}", good.saturating_sub(unit).max(unit)),
                )
                .with_apply(GBS, good),
            );
        } else if vpp > 1 && pp > 1 {
            // megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving: with
            // N = microbatch_group_size_per_vp_stage (default PP), ValueError unless PP ≤ N ≤ M, RuntimeError if
            // 0 < M mod N < PP. With the default N = PP that is M ≥ PP and M mod PP = 0.
            let group = par.microbatch_group_size_per_vp_stage.unwrap_or(pp);
            let mb = dv.num_microbatches;
            if group < pp {
                out.add(Code::VppMicrobatchGroupBelowPp, |code|
                    d(
                        code,
                        format!("microbatch_group_size_per_vp_stage = {group} is below pipeline_model_parallel_size = {pp}: the interleaved schedule needs it in [PP, M] = [{pp}, {mb}]"),
                        format!("set microbatch_group_size_per_vp_stage to {pp} (megatron-core's default, PP), or unset it"),
                    )
                    .with_apply("parallelism.microbatch_group_size_per_vp_stage", pp),
                );
            } else if group > mb || (mb % group != 0 && mb % group < pp) {
                let good_mb = interleaved_microbatches_at_least(mb, group, pp);
                let good_gbs = good_mb.saturating_mul(unit);
                let why = if group > mb {
                    format!("{mb} microbatches are fewer than microbatch_group_size_per_vp_stage = {group} (it must lie in [PP, M] = [{pp}, {mb}])")
                } else {
                    format!(
                        "{mb} microbatches leave a last group of {mb} mod {group} = {} (microbatch_group_size_per_vp_stage = {group}); it must be 0 or at least PP = {pp}",
                        mb % group
                    )
                };
                let alt = if mb >= pp { format!(", or set microbatch_group_size_per_vp_stage = {mb}") } else { String::new() };
                out.add(Code::InterleavedMicrobatches, |code|
                    d(code, format!("the interleaved schedule rejects this step: {why}"), format!("set global_batch_size to {good_gbs} ({good_mb} microbatches){alt}, or drop virtual pipeline stages"))
                        .with_apply(GBS, good_gbs),
                );
            }
        }
        if vpp > 1 && pp == 2 && par.overlap_p2p_comm != Some(true) {
            out.add(Code::VppPp2NeedsOverlapP2p, |code|
                d(
                    code,
                    format!(
                        "virtual_pipeline_model_parallel_size = {vpp} with pipeline_model_parallel_size = 2 and overlap_p2p_comm {}: Megatron-LM (pretrain_gpt.py validate_args) asserts PP > 2 for the interleaved schedule unless --overlap-p2p-communication; Megatron Bridge turns overlap_p2p_comm on itself when PP > 1 and VPP > 1, so a Bridge launch is fine",
                        if par.overlap_p2p_comm == Some(false) { "= false" } else { "not set" }
                    ),
                    "set overlap_p2p_comm = true (Megatron-LM: --overlap-p2p-communication), or use pipeline_model_parallel_size ≥ 3".into(),
                )
                .with_apply("parallelism.overlap_p2p_comm", true),
            );
        }
        if pp > 1 && dv.num_microbatches > 0 && dv.num_microbatches < pp {
            out.add(Code::FewMicrobatches, |code| d(
                code,
                format!("{} microbatches over {pp} pipeline stages: the pipeline never fills (bubble {:.0}%)", dv.num_microbatches, 100.0 * dv.pipeline_bubble_fraction.min(9.99)),
                format!("raise global_batch_size to at least {} for {pp} microbatches per step", unit.saturating_mul(pp)),
            ));
        }
    }
    if pp > 1 && vpp == 1 && split_error.is_none() {
        let per_stage = m.num_layers / pp;
        if per_stage >= 2 {
            out.add(Code::PpWithoutVpp, |code| d(
                code,
                format!("PP = {pp} without interleaving: bubble = (PP−1)/m = {:.1}% of the step", 100.0 * dv.pipeline_bubble_fraction),
                format!("set virtual_pipeline_model_parallel_size to a divisor of {per_stage} layers per stage (e.g. {})", nearest_divisor(per_stage, 2)),
            ));
        }
    }

    // Recompute.
    match t.recompute_granularity {
        Recompute::Full if t.recompute_method.is_none() || t.recompute_num_layers.is_none() => {
            out.add(Code::FullRecomputeNeedsMethod, |code|
                d(
                    code,
                    "recompute_granularity = full needs recompute_method (uniform or block) and recompute_num_layers".into(),
                    "set recompute_method = \"uniform\" and recompute_num_layers = 1 (recompute every layer)".into(),
                )
                .with_apply("training.recompute_method", "uniform")
                .with_apply("training.recompute_num_layers", 1),
            );
        }
        // MCore TransformerConfig raises for recompute_num_layers with selective; only Megatron-LM's validate_args
        // asserts on recompute_method with selective (MCore, and so Bridge, ignore it).
        Recompute::Selective if t.recompute_num_layers.is_some() => {
            out.add(Code::SelectiveRecomputeForbidsMethod, |code|
                d(
                    code,
                    format!(
                        "recompute_granularity = selective with recompute_num_layers = {}: megatron-core requires recompute_num_layers = None{}",
                        t.recompute_num_layers.unwrap_or(0),
                        if t.recompute_method.is_some() { " (and Megatron-LM also rejects recompute_method)" } else { "" }
                    ),
                    "remove recompute_num_layers (and recompute_method)".into(),
                )
                .with_apply("training.recompute_num_layers", serde_json::Value::Null),
            );
        }
        Recompute::Selective if t.recompute_method.is_some() => {
            out.add(Code::SelectiveRecomputeMethodMlm, |code|
                d(
                    code,
                    "recompute_granularity = selective with recompute_method set: Megatron-LM (validate_args) asserts recompute_method is None for selective; megatron-core and Megatron Bridge ignore it".into(),
                    "remove recompute_method".into(),
                )
                .with_apply("training.recompute_method", serde_json::Value::Null),
            );
        }
        Recompute::Full => {
            // megatron/core/recompute.py: uniform steps layer_idx += recompute_num_layers (0 never advances) and
            // clips the last unit with min(); block recomputes the first recompute_num_layers layers of the chunk,
            // so a larger value recomputes them all. TransformerConfig checks only that the value is set.
            let n = t.recompute_num_layers.unwrap_or(1);
            let uniform = t.recompute_method == Some(crate::plan::RecomputeMethod::Uniform);
            // The largest model chunk: a valid split gives every stage's layers to its VPP chunks evenly.
            let per_chunk = dv.layers_per_stage.iter().max().filter(|_| split_error.is_none()).map(|&n| n / vpp.max(1));
            if n == 0 && uniform {
                out.add(Code::RecomputeNumLayersRange, |code|
                    d(
                        code,
                        "recompute_num_layers = 0 with recompute_method = uniform: megatron-core's uniform loop advances by recompute_num_layers per unit, so the first forward never ends".into(),
                        "set recompute_num_layers = 1 (recompute every layer, one checkpoint per layer)".into(),
                    )
                    .with_apply("training.recompute_num_layers", 1),
                );
            } else if let Some(chunk) = per_chunk.filter(|&c| n > c || n == 0) {
                // checkpointed_forward runs over the layers of one model chunk (len(self.layers)): uniform checkpoints
                // [i, min(i + n, chunk)), block checkpoints layer i when i < n.
                let (what, fix, good) = if n == 0 {
                    (
                        "block recompute of 0 layers checkpoints no layer (layer_idx < 0 never holds): the run saves every activation, as without recompute, and this plan counts it so".to_string(),
                        "set recompute_num_layers to at least 1 (the first layers of each chunk recomputed), or recompute_granularity to \"selective\" / \"none\" to say what runs".to_string(),
                        1,
                    )
                } else if uniform {
                    (
                        format!("megatron-core accepts it and clips each unit to the chunk (min(layer_idx + {n}, {chunk})): one checkpoint per chunk, the same as recompute_num_layers = {chunk}"),
                        format!("set recompute_num_layers to {chunk}, which is what runs"),
                        chunk,
                    )
                } else {
                    (
                        format!("megatron-core accepts it and block recomputes every layer of each chunk (layer_idx < {n} for all {chunk}), the same as recompute_num_layers = {chunk}"),
                        format!("set recompute_num_layers to {chunk}, which is what runs"),
                        chunk,
                    )
                };
                out.add(Code::RecomputeNumLayersClipped, |code|
                    d(code, format!("recompute_num_layers = {n} with recompute_method = {} and at most {chunk} layers per model chunk: {what}", if uniform { "uniform" } else { "block" }), fix)
                        .with_apply("training.recompute_num_layers", good),
                );
            }
            if m.mtp_num_layers > 0 && t.recompute_method == Some(crate::plan::RecomputeMethod::Block) {
                out.add(Code::MtpBlockRecomputeSkipped, |code|
                    d(
                        code,
                        format!(
                            "mtp_num_layers = {} with full block recompute: megatron-core recomputes the decoder's first {n} layers per chunk but not the MTP layers (\"recompute_method == 'block' is not supported for MTP yet. Skipping recompute.\"); their activations stay whole, as this plan counts them",
                            m.mtp_num_layers
                        ),
                        "to recompute the MTP layers too use recompute_method = \"uniform\" with recompute_num_layers = 1 (the MTP block requires 1)".into(),
                    )
                    .with_apply("training.recompute_method", "uniform")
                    .with_apply("training.recompute_num_layers", 1),
                );
            }
            if m.mtp_num_layers > 0 && uniform && n != 1 && n != 0 {
                out.add(Code::MtpRecomputeUniformNeedsOne, |code|
                    d(
                        code,
                        format!("mtp_num_layers = {} with full uniform recompute and recompute_num_layers = {n}: the MTP block asserts recompute_num_layers == 1", m.mtp_num_layers),
                        "set recompute_num_layers = 1, or recompute_method = \"block\"".into(),
                    )
                    .with_apply("training.recompute_num_layers", 1),
                );
            }
        }
        _ => {}
    }

    // Precision against the GPU.
    let unsupported = match t.precision {
        Precision::Fp8 => p.gpu.dense_fp8_tflops.is_none(),
        Precision::Fp4 => p.gpu.dense_fp4_tflops.is_none(),
        _ => false,
    };
    if unsupported {
        out.add(Code::PrecisionUnsupported, |code|
            d(
                code,
                format!("{} has no {} tensor cores", p.gpu.name, t.precision.key()),
                "use precision = \"bf16\", or a GPU that supports it".into(),
            )
            .with_apply("training.precision", "bf16"),
        );
    }
    if matches!(t.precision, Precision::Fp8 | Precision::Fp4) {
        // Transformer Engine utils.assert_dim_for_fp8_exec (called by Linear, LayerNormLinear, LayerNormMLP): the
        // product of all dims but the last must be divisible by 8 and the last by 16, for the input and for the
        // weight [out_per_partition, in_per_partition]. The column-parallel input is checked before the SP
        // all-gather, so the token count is seq/CP/(TP with SP)·MBS.
        let t_sp = if par.sequence_parallel && tp > 1 { tp } else { 1 };
        let local = cp.saturating_mul(t_sp);
        if seq % local == 0 {
            let tokens = (seq / local).saturating_mul(mbs);
            if tokens % 8 != 0 {
                let unit = local.saturating_mul(8 / gcd(8, mbs.max(1)));
                let good = round_up(seq, lcm(seq_multiple, unit));
                out.add(Code::Fp8DimsNotDivisible, |code|
                    d(
                        code,
                        format!(
                            "{} GEMMs need the rank-local token count divisible by 8: seq_length/(CP{})·micro_batch_size = {seq}/{local}·{mbs} = {tokens}, and {tokens} mod 8 = {}",
                            t.precision.key(),
                            if t_sp > 1 { "·TP" } else { "" },
                            tokens % 8
                        ),
                        format!("set seq_length to {good} (local tokens {}), or a micro_batch_size that makes the count a multiple of 8", (good / local).saturating_mul(mbs)),
                    )
                    .with_apply(SEQ, good),
                );
            }
        }
        let bad = fp8_width_failures(m, tp);
        if !bad.is_empty() {
            // Nearest TP that every TP width rule accepts and whose local widths align.
            let good_tp = nearest_valid_tp(p, |c| fp8_width_failures(m, c).is_empty(), false);
            out.add(Code::Fp8DimsNotDivisible, |code| {
                let list: Vec<String> = bad.iter().map(|(name, v, k)| format!("{name} = {v} (mod {k} = {})", v % k)).collect();
                let diag = d(
                    code,
                    format!("{} GEMM weights need rank-local dims divisible by 16 (input side) and 8 (output side) at TP = {tp}: {}", t.precision.key(), list.join(", ")),
                    match good_tp {
                        Some(g) => format!("set tensor_model_parallel_size to {g}, the nearest TP whose local widths all align"),
                        None => "no TP that divides num_attention_heads aligns every width: pad the model widths to multiples of 16·TP".into(),
                    },
                );
                match good_tp {
                    Some(g) => diag.with_apply(TP, g),
                    None => diag,
                }
            });
        }
    }

    advice(p, dv, out);
}

/// The source guide's tables and notes: infos, never errors.
fn advice(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (tp, pp, cp, ep, etp) = (par.tp(), par.pp(), par.cp(), par.ep(), par.etp());
    let moe = p.model.is_moe();
    let w = dv.world_size;
    if moe && (ep > 1 || etp > 1) {
        let full = pp.saturating_mul(tp).saturating_mul(cp).saturating_mul(ep).saturating_mul(etp);
        out.add(Code::MinGpus, |code| d(
            code,
            format!(
                "min_gpus = PP·max(TP·CP, EP·ETP) = {pp}·max({}, {}) = {}{}",
                tp * cp,
                ep * etp,
                dv.min_gpus,
                if full > dv.min_gpus {
                    format!("; the full product PP·TP·CP·EP·ETP = {full} would over-allocate")
                } else {
                    String::new()
                }
            ),
            format!("size the job in multiples of {} GPUs ({} nodes of {})", dv.min_gpus_lcm, dv.min_gpus_lcm.div_ceil(p.cluster.gpus_per_node.max(1)), p.cluster.gpus_per_node),
        ));
        if dv.min_gpus_lcm != dv.min_gpus {
            out.add(Code::MinGpusLcm, |code| d(
                code,
                format!(
                    "PP·max(TP·CP, EP·ETP) = {} is not a multiple of both meshes; Megatron needs the world size to be a multiple of PP·lcm(TP·CP, EP·ETP) = {}",
                    dv.min_gpus, dv.min_gpus_lcm
                ),
                format!("use a multiple of {} GPUs", dv.min_gpus_lcm),
            ));
        }
    }
    if dv.data_parallel_size > 1 && dv.min_gpus > 0 && w > dv.min_gpus && w % dv.min_gpus == 0 {
        out.add(Code::WorldExceedsNeed, |code| d(
            code,
            format!(
                "{w} GPUs = {}× the minimum {}: dense DP = {}, expert DP = {}",
                w / dv.min_gpus,
                dv.min_gpus,
                dv.data_parallel_size,
                dv.expert_data_parallel_size
            ),
            "nothing to fix: the extra GPUs scale data parallelism (and the global batch per step)".into(),
        ));
    }
    // Source: seed "Decision by Sequence Length".
    let seq = p.training.seq_length;
    let seq_hint = if seq >= 32 * 1024 && cp < 4 {
        Some("≥ 32K: the guide suggests context_parallel_size 4–8 (consider cp_comm_type a2a+p2p for large CP)")
    } else if (8 * 1024..32 * 1024).contains(&seq) && cp < 2 {
        Some("is in 8K–32K: the guide suggests adding context_parallel_size = 2")
    } else if (2 * 1024..8 * 1024).contains(&seq) && tp > 1 && !par.sequence_parallel {
        Some("is in 2K–8K: the guide suggests sequence_parallel = true")
    } else {
        None
    };
    if let Some(hint) = seq_hint {
        out.add(Code::SeqLengthAdvice, |code| {
            d(code, format!("seq_length = {seq} {hint}"), "a starting point, not a rule: profile the first iterations".into())
        });
    }
    // Source: seed "Decision by Model Size" (dense table, by total parameters; MoE table by model).
    let params = dv.total_parameters as f64;
    let hint = if moe {
        moe_table_row(&p.model_key)
    } else {
        let b = params / 1e9;
        Some(
            match b {
                x if x < 1.0 => "< 1B dense: DP only (1–8 GPUs)",
                x if x < 10.0 => "1–10B dense: TP = 2–4 + DP (8–16 GPUs)",
                x if x < 70.0 => "10–70B dense: TP = 4–8 + PP = 2–4 + DP (16–64 GPUs)",
                x if x < 175.0 => "70–175B dense: TP = 8 + PP = 4–8 + DP (64–256 GPUs)",
                _ => "175–500B dense: TP = 8 + PP = 8–16 + CP = 2 + DP (256–1024 GPUs)",
            },
        )
    };
    if let Some(h) = hint {
        out.add(Code::ModelSizeAdvice, |code| d(
            code,
            format!("{:.1}B parameters; the guide's starting point: {h}", params / 1e9),
            "a starting point, not a rule: profile the first iteration".into(),
        ));
    }
    if tp > 1 || cp > 1 {
        out.add(Code::CudaDeviceMaxConnections, |code| d(
            code,
            "TP/CP communication overlap relies on kernel ordering: launch with CUDA_DEVICE_MAX_CONNECTIONS=1".into(),
            "export CUDA_DEVICE_MAX_CONNECTIONS=1 in the launch environment (see the TP/DP comm-overlap guide)".into(),
        ));
    }
}

/// The guide's MoE table row for a preset, if it has one.
fn moe_table_row(key: &str) -> Option<&'static str> {
    let row = match key {
        "olmoe-1b-7b" => "OLMoE 7B/1B: TP 1, PP 1, EP 8 (EP only, fits a single node)",
        "moonlight-16b-a3b" => "Moonlight 16B/3B: TP 2, PP 1, EP 8 (small TP for shared layers)",
        "deepseek-v2" => "DeepSeek-V2 236B/21B: TP 1, PP 4, EP 32 (no TP at all)",
        "glm-4.5-air" => "GLM-4.5 Air 106B/12B: TP 1, PP 4, EP 8 (no TP at all)",
        "qwen3-30b-a3b" => "Qwen3 30B-A3B: TP 4, PP 2, EP 4",
        "glm-4.5" => "GLM-4.5 355B/32B: TP 2, PP 8, EP 16",
        "qwen3-235b-a22b" => "Qwen3 235B-A22B: TP 4, PP 16, EP 8 (CP = 2 for pretraining)",
        "deepseek-v3" => "DeepSeek-V3 671B/37B: TP 2, PP 16, EP 64 (needs PP·EP·ETP = 1,024 GPUs; 61 layers need uneven first/last stages at PP = 16)",
        "kimi-k2" => "Kimi-K2 1T: TP 2, PP 16, EP 32",
        _ => return Some("MoE: size TP by active parameters (often 1–2), scale with EP, use PP for depth"),
    };
    Some(row)
}

/// Topology rules: which groups leave the NVLink domain.
pub fn check_topology(p: &Plan, layout: &Layout, out: &mut impl Findings) {
    let domain = p.cluster.nvlink_domain_size;
    for c in &layout.crossings {
        let (code, what, fix) = match c.kind.as_str() {
            "tp" => (
                Code::TpCrossesNvlink,
                "tensor-parallel",
                format!("keep tensor_model_parallel_size ≤ {domain} (the NVLink domain) and scale across domains with PP or DP"),
            ),
            "ep" if p.model.is_moe() => (
                Code::EpCrossesNvlink,
                "expert-parallel",
                format!("keep EP·ETP ≤ {domain} if the all-to-all is the bottleneck, or accept scale-out all-to-all"),
            ),
            "cp" => (Code::CpCrossesNvlink, "context-parallel", "keep CP inside a domain where possible, or use a2a+p2p".to_string()),
            _ => continue,
        };
        out.add(code, |code| {
            let diag = d(
                code,
                format!(
                    "{} of {} {what} groups span more than one NVLink domain of {domain} GPUs (up to {} domains)",
                    c.groups_crossing, c.total_groups, c.max_domains_spanned
                ),
                fix,
            );
            match (code == Code::TpCrossesNvlink).then(|| nearest_valid_tp(p, |c| domain % c == 0, false)).flatten() {
                Some(g) => diag.with_apply(TP, g),
                None => diag,
            }
        });
    }
    let _ = GroupKind::all();
}

/// Memory rules: out of memory is an error, under 10% headroom a warning.
pub fn check_memory(p: &Plan, mem: &MemoryReport, out: &mut impl Findings) {
    let cap = mem.gpu_memory_bytes;
    let Some(worst) = mem.stages.iter().max_by_key(|s| s.total_bytes) else { return };
    if !mem.fits {
        out.add(Code::OutOfMemory, |code| d(
            code,
            format!(
                "pipeline stage {} needs {} per GPU but {} has {}",
                worst.pipeline_rank,
                gib(worst.total_bytes),
                p.gpu.name,
                gib(cap)
            ),
            suggest_memory_fix(p),
        ));
    } else if (cap - mem.peak_bytes) as f64 <= 0.10 * cap as f64 {
        out.add(Code::LowMemoryHeadroom, |code| d(
            code,
            format!("peak {} of {} leaves {:.1}% free", gib(mem.peak_bytes), gib(cap), 100.0 * (cap - mem.peak_bytes) as f64 / cap as f64),
            "leave ≥ 10% for fragmentation and spikes: ".to_string() + &suggest_memory_fix(p),
        ));
    }
}

fn suggest_memory_fix(p: &Plan) -> String {
    let mut s = Vec::new();
    if !p.training.use_distributed_optimizer {
        s.push("use_distributed_optimizer = true".to_string());
    }
    if p.training.recompute_granularity == Recompute::None {
        s.push("recompute_granularity = \"selective\"".to_string());
    }
    s.push(format!("raise pipeline_model_parallel_size above {}", p.parallelism.pp()));
    if p.parallelism.tp() < p.cluster.nvlink_domain_size {
        s.push(format!("raise tensor_model_parallel_size above {} (inside the NVLink domain)", p.parallelism.tp()));
    }
    if p.model.is_moe() {
        s.push(format!("raise expert_model_parallel_size above {}", p.parallelism.ep()));
    }
    s.push("or lower micro_batch_size / seq_length".into());
    format!("try {}", s.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_kebab() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(r.code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{}", r.code);
            assert!(RULES[i + 1..].iter().all(|o| o.code != r.code), "duplicate {}", r.code);
        }
    }

    #[test]
    fn nearest_divisor_picks_closest() {
        // Divisors of 8 are 1, 2, 4, 8: 3 is equally far from 2 and 4, ties go low.
        assert_eq!(nearest_divisor(8, 3), 2);
        assert_eq!(nearest_divisor(64, 6), 4);
        assert_eq!(nearest_divisor(61, 16), 1);
        assert_eq!(nearest_divisor(96, 10), 8);
    }
}
