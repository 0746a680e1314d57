//! DeepSeek-V4's fields as Megatron Bridge's DeepSeekV4Bridge sets them: `csa_compress_ratios` (one ratio per decoder
//! layer, then per MTP layer), `csa_window_size`, `o_groups`, `o_lora_rank`, `enable_hyper_connections`,
//! `num_residual_streams`, `moe_n_hash_layers`. The ratios are checked before the list is kept: each 0, 4 or 128 (the
//! layer types Bridge maps), and exactly num_layers + mtp_num_layers of them (Megatron-Core rejects another length;
//! Bridge's no-MTP recipe trims the MTP entry for that reason).

use crate::fields::{Fields, as_uint, short};
use crate::limits::MAX_LAYERS;
use crate::model::{Mixer, ModelConfig};
use crate::{Code, Diagnostic};
use serde_json::Value;

/// DeepSeek-V4's fields as given (over `base`'s).
pub struct Dsv4Fields {
    pub csa_compress_ratios: Option<Vec<u64>>,
    pub csa_window_size: Option<u64>,
    pub o_groups: Option<u64>,
    pub o_lora_rank: Option<u64>,
    pub enable_hyper_connections: bool,
    pub num_residual_streams: Option<u64>,
    pub moe_n_hash_layers: Option<u64>,
}

// Source: Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py provider_bridge (csa_compress_ratios
// = _dsv4_compress_ratios(...)[:num_hidden_layers + mtp], csa_window_size, o_groups, o_lora_rank,
// enable_hyper_connections, num_residual_streams = hc_mult, moe_n_hash_layers); examples/models/deepseek_v4/README.md
// (no-MTP SFT trims csa_compress_ratios to num_layers because transformer_config rejects the extra entry).
pub fn read(f: &mut Fields, b: Option<&ModelConfig>, num_layers: u64, mtp_num_layers: u64) -> Dsv4Fields {
    let csa_compress_ratios = match f.raw("csa_compress_ratios") {
        None => b.and_then(|b| b.csa_compress_ratios.clone()),
        Some(Value::Null) => None,
        Some(v) => ratios(v, num_layers + mtp_num_layers).map_err(|why| f.diags.push(why)).ok(),
    };
    Dsv4Fields {
        csa_compress_ratios,
        csa_window_size: f.opt_uint("csa_window_size", 1, 1 << 32).or(b.and_then(|b| b.csa_window_size)),
        o_groups: f.opt_uint("o_groups", 1, 1 << 16).or(b.and_then(|b| b.o_groups)),
        o_lora_rank: f.opt_uint("o_lora_rank", 1, 1 << 24).or(b.and_then(|b| b.o_lora_rank)),
        enable_hyper_connections: f.boolean("enable_hyper_connections", b.is_some_and(|b| b.enable_hyper_connections)),
        num_residual_streams: f.opt_uint("num_residual_streams", 1, 64).or(b.and_then(|b| b.num_residual_streams)),
        moe_n_hash_layers: f.opt_uint("moe_n_hash_layers", 0, MAX_LAYERS).or(b.and_then(|b| b.moe_n_hash_layers)),
    }
}

/// The ratio list, checked entry by entry and against its expected length before anything is kept.
fn ratios(v: &Value, want: u64) -> Result<Vec<u64>, Diagnostic> {
    let bad = |message: String, fix: String| Err(Diagnostic::new(Code::InvalidValue, message, fix));
    let Value::Array(items) = v else {
        return bad(
            format!("`model.csa_compress_ratios` must be a list of compress ratios, one per layer, found {}", short(v)),
            format!("give {want} entries (num_layers + mtp_num_layers), each 0 (sliding window), 4 (CSA) or 128 (HCA)"),
        );
    };
    if items.len() as u64 != want {
        return bad(
            format!("`model.csa_compress_ratios` lists {} ratios but num_layers + mtp_num_layers = {want}", items.len()),
            format!("give exactly {want} entries: one per decoder layer, then one per MTP layer (0 for DeepSeek-V4's)"),
        );
    }
    if let Some((i, x)) = items.iter().enumerate().find(|(_, x)| as_uint(x).and_then(Mixer::of_compress_ratio).is_none()) {
        return bad(
            format!("`model.csa_compress_ratios[{i}]` is {}: DeepSeek-V4's layers have ratio 0, 4 or 128", short(x)),
            "use 0 (sliding window), 4 (CSA, with the indexer) or 128 (HCA) as Megatron Bridge maps DeepSeek-V4's layer types".to_string(),
        );
    }
    Ok(items.iter().filter_map(as_uint).collect())
}

/// A DeepSeek-V4 model (variant "dsv4_hybrid") misses what sizes it: the ratios, the output projection's groups and
/// rank, or (with CSA layers) the indexer's heads and width. Each is named; the layers are counted without it.
pub fn check(c: &ModelConfig, diags: &mut Vec<Diagnostic>) {
    if c.experimental_attention_variant.as_deref() != Some("dsv4_hybrid") {
        return;
    }
    let mut missing = Vec::new();
    if c.csa_compress_ratios.is_none() {
        missing.push("csa_compress_ratios");
    }
    if c.o_groups.is_none() {
        missing.push("o_groups");
    }
    if c.o_lora_rank.is_none() {
        missing.push("o_lora_rank");
    }
    let csa = c.csa_compress_ratios.as_ref().is_some_and(|r| r.contains(&4));
    if csa && c.dsa_indexer_n_heads.is_none() {
        missing.push("dsa_indexer_n_heads");
    }
    if csa && c.dsa_indexer_head_dim.is_none() {
        missing.push("dsa_indexer_head_dim");
    }
    if !missing.is_empty() {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("experimental_attention_variant \"dsv4_hybrid\" needs {}: missing", missing.join(", ")),
            "give them as Megatron Bridge's DeepSeekV4Bridge sets them (or paste the deepseek_v4 config.json)",
        ));
    }
    // A preset's ratios kept under another layer or MTP count (the list given with the model is checked as it is read).
    let want = c.num_layers + c.mtp_num_layers;
    if let Some(r) = c.csa_compress_ratios.as_ref().filter(|r| r.len() as u64 != want) {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("csa_compress_ratios lists {} ratios but num_layers + mtp_num_layers = {want}", r.len()),
            format!("give csa_compress_ratios with the model: {want} entries, one per decoder layer, then one per MTP layer"),
        ));
    }
    let (n, d) = (c.num_attention_heads, c.v_head_dim);
    if let Some(g) = c.o_groups.filter(|&g| (n * d) % g != 0) {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("num_attention_heads · v_head_dim = {n} · {d} = {} is not a multiple of o_groups = {g}", n * d),
            "set o_groups to a divisor of num_attention_heads · v_head_dim (DeepSeek-V4-Flash: 8 for 64 heads of 512)",
        ));
    }
}
