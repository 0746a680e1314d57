//! Heterogeneous layers: DeciLM / Llama-Nemotron `block_configs`, which Megatron-Core reads as
//! `heterogeneous_layers_config_encoded_json` (transformer/heterogeneous/heterogeneous_config.py): each layer has
//! attention or none and a dense MLP of its own width or none.

use super::{Ffn, LayerKind, Mixer};
use serde::{Deserialize, Serialize};

/// One layer of a heterogeneous model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeteroLayer {
    /// Self-attention with the model's heads and query groups; false: no attention (a no-op block).
    pub attention: bool,
    /// The dense MLP's width; `None`: no MLP (a no-op block).
    pub ffn_hidden_size: Option<u64>,
}

impl HeteroLayer {
    /// The layer's kind: its mixer and its MLP of its own width.
    pub fn kind(&self) -> LayerKind {
        let mixer = if self.attention { Mixer::Attention } else { Mixer::None };
        match self.ffn_hidden_size {
            Some(w) => LayerKind::with_ffn_width(mixer, Ffn::Dense, w),
            None => LayerKind::new(mixer, Ffn::None),
        }
    }
}
