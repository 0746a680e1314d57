//! The source guide's tables and notes: infos, never errors. The tables are data (`data/advice.json`, with the
//! guide's section for each).

use super::findings::{Findings, d};
use crate::Code;
use crate::derive::Derived;
use crate::plan::Plan;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The source guide's tables and notes: infos, never errors.
pub fn advice(p: &Plan, dv: &Derived, out: &mut impl Findings) {
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
    if let Some(hint) = sequence_length_advice(p) {
        let seq = p.training.seq_length;
        out.add(Code::SeqLengthAdvice, |code| {
            d(code, format!("seq_length = {seq} {hint}"), "a starting point, not a rule: profile the first iterations".into())
        });
    }
    let params = dv.total_parameters as f64;
    if let Some(h) = model_size_advice(p, params) {
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

/// The source guide's advice tables (`data/advice.json`).
#[derive(Debug, Default, Deserialize)]
pub struct AdviceTables {
    pub dense_model_size: DenseTable,
    pub moe_models: MoeTable,
    pub sequence_length: SequenceTable,
}

#[derive(Debug, Default, Deserialize)]
pub struct DenseTable {
    pub source: String,
    pub rows: Vec<DenseRow>,
}

/// A row of the dense table: models below this many billion parameters (None: every larger model).
#[derive(Debug, Deserialize)]
pub struct DenseRow {
    pub below_billion_parameters: Option<f64>,
    pub advice: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct MoeTable {
    pub source: String,
    /// The guide's row for a model, by model preset key.
    pub rows: BTreeMap<String, String>,
    /// For an MoE model the table has no row for.
    pub otherwise: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct SequenceTable {
    pub source: String,
    pub rows: Vec<SequenceRow>,
}

/// A row of the sequence-length table: for seq_length in [from_tokens, below_tokens), what the guide adds.
#[derive(Debug, Deserialize)]
pub struct SequenceRow {
    pub from_tokens: u64,
    pub below_tokens: Option<u64>,
    #[serde(default)]
    pub sequence_parallel: bool,
    #[serde(default)]
    pub context_parallel_size_at_least: u64,
    pub advice: String,
}

/// The embedded tables; a broken file (the tests parse it) yields empty tables and no advice, never a panic.
pub fn tables() -> &'static AdviceTables {
    static TABLES: OnceLock<AdviceTables> = OnceLock::new();
    TABLES.get_or_init(|| AdviceTables::read(include_str!(concat!(env!("OUT_DIR"), "/advice.json"))).unwrap_or_default())
}

impl AdviceTables {
    /// The file read by hand from a `Value`, as serde's derived reader reads it (tests/catalogue_read.rs checks
    /// they agree): the page then links no serde reader of these tables. None: the file is unreadable.
    fn read(text: &str) -> Option<AdviceTables> {
        use crate::presets::read::*;
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let table = |k: &str| v.get(k)?.as_object();
        fn rows(t: &Obj) -> Option<Vec<&Obj>> {
            t.get("rows")?.as_array()?.iter().map(|r| r.as_object()).collect()
        }
        let (dense, moe, seq) = (table("dense_model_size")?, table("moe_models")?, table("sequence_length")?);
        Some(AdviceTables {
            dense_model_size: DenseTable {
                source: string(dense, "source")?,
                rows: rows(dense)?
                    .into_iter()
                    .map(|r| Some(DenseRow { below_billion_parameters: opt_f64(r, "below_billion_parameters")?, advice: string(r, "advice")? }))
                    .collect::<Option<_>>()?,
            },
            moe_models: MoeTable {
                source: string(moe, "source")?,
                // Inserted one by one: collecting into a BTreeMap compiles a sort of its own (docs/web.md "What went").
                rows: {
                    let mut m = BTreeMap::new();
                    for (k, a) in moe.get("rows")?.as_object()? {
                        m.insert(k.clone(), a.as_str()?.to_string());
                    }
                    m
                },
                otherwise: string(moe, "otherwise")?,
            },
            sequence_length: SequenceTable {
                source: string(seq, "source")?,
                rows: rows(seq)?
                    .into_iter()
                    .map(|r| {
                        Some(SequenceRow {
                            from_tokens: u64(r, "from_tokens")?,
                            below_tokens: opt_u64(r, "below_tokens")?,
                            sequence_parallel: or_default(r, "sequence_parallel", serde_json::Value::as_bool)?,
                            context_parallel_size_at_least: or_default(r, "context_parallel_size_at_least", serde_json::Value::as_u64)?,
                            advice: string(r, "advice")?,
                        })
                    })
                    .collect::<Option<_>>()?,
            },
        })
    }
}

/// The sequence-length row holding the plan's seq_length, if the plan does not already follow it. The SP advice
/// applies with TP > 1 only (sequence parallelism splits over the TP group).
fn sequence_length_advice(p: &Plan) -> Option<&'static str> {
    let (par, seq) = (&p.parallelism, p.training.seq_length);
    let row = tables().sequence_length.rows.iter().find(|r| seq >= r.from_tokens && r.below_tokens.is_none_or(|b| seq < b))?;
    let wants_sp = row.sequence_parallel && par.tp() > 1 && !par.sequence_parallel;
    let wants_cp = par.cp() < row.context_parallel_size_at_least;
    (wants_sp || wants_cp).then_some(row.advice.as_str())
}

/// The model-size row for the plan's model: the MoE table by preset, the dense table by total parameters.
fn model_size_advice(p: &Plan, params: f64) -> Option<&'static str> {
    let t = tables();
    if p.model.is_moe() {
        return Some(t.moe_models.rows.get(&p.model_key).unwrap_or(&t.moe_models.otherwise).as_str()).filter(|s| !s.is_empty());
    }
    let billions = params / 1e9;
    let row = t.dense_model_size.rows.iter().find(|r| r.below_billion_parameters.is_none_or(|b| billions < b))?;
    Some(row.advice.as_str())
}
