//! Sequence parallelism, context parallelism and the sequence length: what SP needs, the multiples seq_length must
//! be, and the position embeddings' limits.

use super::fixes::{lcm, round_up};
use super::{Findings, SEQ, SP, d};
use crate::Code;
use crate::plan::Plan;

/// The multiple seq_length must be: 2·CP when CP > 1 (the load-balanced CP split), CP·TP with sequence parallelism
/// (the CP-local sequence scattered over TP); both together give CP·lcm(2, TP).
pub fn seq_multiple(cp: u64, tp: u64, sequence_parallel: bool) -> u64 {
    let cp_part = if cp > 1 { 2 * cp } else { 1 };
    let sp_part = if sequence_parallel && tp > 1 { cp.saturating_mul(tp) } else { 1 };
    lcm(cp_part, sp_part)
}

/// sp-requires-tp and moe-tp-requires-sp: whether sequence_parallel fits TP (cheap; the search asks it per layout).
pub fn sequence_parallel(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (tp, ep, moe) = (par.tp(), par.ep(), p.model.is_moe());
    if par.sequence_parallel && tp == 1 {
        out.add(Code::SpRequiresTp, |code|
            d(
                code,
                "sequence_parallel = true with tensor_model_parallel_size = 1: SP splits activations across the TP group, which has one rank".into(),
                "set sequence_parallel = false, or tensor_model_parallel_size > 1 (Megatron-Core's ModelParallelConfig raises; Megatron-LM's validate_args turns SP off with a warning, arguments.py:1433-1439, and `meshplan import` reads a Megatron-LM launch so)".into(),
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

}

/// cp-seq-not-divisible and sp-seq-not-divisible: the multiple seq_length must be under CP and SP.
pub fn sequence_length(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (tp, cp) = (par.tp(), par.cp());
    // Context parallelism and the sequence.
    // Megatron-LM validate_args and Bridge ConfigContainer.validate assert seq % (2·CP) == 0 when CP > 1; with
    // SP the CP-local sequence seq/CP is scattered over TP (mappings._split_along_first_dim asserts at the first
    // forward), so seq % (CP·TP) == 0. Together: seq % lcm(2·CP, CP·TP) = seq % (CP·lcm(2, TP)). Both fixes round
    // up to that combined multiple, so applying either one clears both rules.
    let seq = p.training.seq_length;
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
}

/// seq-exceeds-max-position, seq-exceeds-max-position-mlm and mtp-position-embedding-mlm.
pub fn positions(p: &Plan, out: &mut impl Findings) {
    let (m, seq) = (&p.model, p.training.seq_length);
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

}
