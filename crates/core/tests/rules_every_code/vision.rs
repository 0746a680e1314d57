//! The vision encoder's settings (rules/vision.rs): image tokens against the sequence, and settings on a model
//! without an encoder.

use super::*;

const TOKENS: &str = "training.image_tokens_per_sample";

/// The small dense model with a two-layer vision encoder (tests/vision.rs sizes it by hand).
pub fn vlm() -> Value {
    set(&dense(), &[("vision_config", json!({"num_layers": 2, "hidden_size": 64, "ffn_hidden_size": 256, "num_attention_heads": 4,
        "patch_dim": 588, "patches_per_token": 4, "projector": [[256, 256], [256, 2048]], "extra_parameters": 1000}))])
}

pub fn cases() -> Vec<Case> {
    vec![
        // An encoder and no image tokens: its weights are counted, its work is not; 256 image tokens silence it.
        case("vision-image-tokens-unset", Kind::Info, probe(vlm(), &[]), probe(vlm(), &[(TOKENS, json!(256))])),
        // 5000 image tokens in a 4096-token sequence; the fix is the sequence length.
        case("vision-image-tokens-exceed-sequence", Kind::Error, probe(vlm(), &[(TOKENS, json!(5000))]), probe(vlm(), &[(TOKENS, json!(4096))]))
            .fix(&[(TOKENS, json!(4096))]),
        // Image tokens on a text-only model are ignored; the fix removes them.
        case("vision-settings-without-encoder", Kind::Warning, probe(dense(), &[(TOKENS, json!(256))]), probe(vlm(), &[(TOKENS, json!(256))]))
            .fix(&[(TOKENS, Value::Null)]),
    ]
}

#[test]
fn vision_rules_fire_and_fall_silent() {
    run(cases());
}
