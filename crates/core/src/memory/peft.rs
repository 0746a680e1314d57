//! LoRA adapters per layer: the trained parameters a frozen base gains (Megatron Bridge's `cfg.peft = LoRA(...)`, a
//! wrapper's `--train_type lora`). The base keeps its weights only; the adapters carry the gradients, master weights
//! and optimizer state (`state.rs`).

use crate::model::{Ffn, LayerKind, Mixer, ModelConfig};
use crate::settings::{LoraTarget, Peft, Settings};

/// One adapter's parameters per GPU for a base linear of `inp` × `out`: linear_in (in → r) and linear_out (r → out),
/// each split over the base's tensor-parallel size `tp`.
// MB src/megatron/bridge/peft/utils.py ParallelLinearAdapter (l.1033-1080): linear_in a ColumnParallelLinear(in, dim)
// (RowParallelLinear(in, dim) when the base's input is parallel), linear_out a ColumnParallelLinear(dim, out): either
// way r·in/TP + r·out/TP per rank.
fn adapter(r: f64, inp: f64, out: f64, tp: f64) -> f64 {
    r * (inp + out) / tp
}

/// The LoRA parameters per GPU of one layer of `kind` (0 without PEFT). Attention adapters on a standard (GQA)
/// attention mixer; MLP adapters on a dense MLP, and on a MoE block one shared adapter per linear for the EP rank's
/// experts plus the shared experts' own. Other mixers (MLA, Mamba, Gated DeltaNet, DeepSeek-V4) get none: their
/// linears have other names than Bridge's default targets.
// MB peft/lora.py l.143-147 (target_modules, dim), l.131-133 (share_expert_adapters = True: grouped expert linears
// share one adapter across the local experts).
pub(crate) fn adapter_params(m: &ModelConfig, s: &Settings, kind: LayerKind, (tp, etp): (f64, f64)) -> f64 {
    if s.peft == Peft::None {
        return 0.0;
    }
    let r = s.lora_dim as f64;
    let on = |t: LoraTarget| s.lora_target_modules.contains(&t);
    let h = m.hidden_size as f64;
    let mut total = 0.0;
    if matches!(kind.mixer, Mixer::Attention | Mixer::WindowAttention) && !m.multi_latent_attention {
        let a = m.attention_shape(kind.mixer);
        let q = (a.num_attention_heads * a.kv_channels) as f64;
        let kv = 2.0 * (a.num_query_groups.max(1) * a.kv_channels) as f64;
        if on(LoraTarget::LinearQkv) {
            total += adapter(r, h, q + kv, tp);
        }
        if on(LoraTarget::LinearProj) {
            total += adapter(r, q, h, tp);
        }
    }
    let gate = if m.gated_linear_unit { 2.0 } else { 1.0 };
    let mlp = |ffn: f64, tp: f64| {
        f64::from(u8::from(on(LoraTarget::LinearFc1))) * adapter(r, h, gate * ffn, tp)
            + f64::from(u8::from(on(LoraTarget::LinearFc2))) * adapter(r, ffn, h, tp)
    };
    match kind.ffn {
        Ffn::None => {}
        Ffn::Dense => total += mlp(m.dense_width(kind) as f64, tp),
        Ffn::Moe => {
            total += mlp(m.moe_ffn() as f64, etp);
            if let Some(shared) = m.moe_shared_expert_intermediate_size.filter(|&f| f > 0) {
                total += mlp(shared as f64, tp);
            }
        }
    }
    total
}
