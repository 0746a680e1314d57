//! The vision encoder's settings against the model and the sequence: image tokens are part of the language model's
//! sequence, and the settings only mean something for a model with a `vision_config`.

use super::findings::{Findings, d};
use crate::Code;
use crate::plan::Plan;

const TOKENS: &str = "training.image_tokens_per_sample";

/// vision-image-tokens-unset, vision-image-tokens-exceed-sequence and vision-settings-without-encoder.
// Source: megatron/core/models/multimodal/llava_model.py (image embeddings are placed into the language model's
// sequence of seq_length tokens); Megatron Bridge qwen3_vl_provider.py (freeze_* only act on a VLM).
pub fn image_tokens(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let seq = p.training.seq_length;
    let Some(e) = &p.model.vision_config else {
        let set: Vec<&str> = [
            (s.image_tokens_per_sample > 0, "image_tokens_per_sample"),
            (s.images_per_sample != 1, "images_per_sample"),
            (s.freeze_vision_model, "freeze_vision_model"),
            (s.freeze_vision_projection, "freeze_vision_projection"),
        ]
        .into_iter()
        .filter_map(|(on, k)| on.then_some(k))
        .collect();
        if let Some(first) = set.first() {
            out.add(Code::VisionSettingsWithoutEncoder, |code| {
                d(code, format!("{} set, but the model has no vision_config: ignored", set.join(", ")), format!("remove training.{first}, or give the model its vision_config (a multimodal config.json's vision_config is read)"))
                    .with_apply(&format!("training.{first}"), serde_json::Value::Null)
            });
        }
        return;
    };
    if s.image_tokens_per_sample == 0 {
        out.add(Code::VisionImageTokensUnset, |code| {
            d(
                code,
                format!("the model has a {}-layer vision encoder but image_tokens_per_sample = 0: its weights are counted on the first stage, its activations and FLOPs are not", e.num_layers),
                "set training.image_tokens_per_sample to the image tokens of a sequence (Llama 4: 144 per 336-pixel tile; Qwen3-VL: (pixels / 32)² per image)".into(),
            )
        });
    } else if s.image_tokens_per_sample > seq {
        out.add(Code::VisionImageTokensExceedSequence, |code| {
            d(code, format!("image_tokens_per_sample = {} is more than seq_length = {seq}: image tokens take places in the language model's sequence", s.image_tokens_per_sample), format!("set image_tokens_per_sample to at most {seq}"))
                .with_apply(TOKENS, seq)
        });
    }
}
