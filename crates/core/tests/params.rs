//! Parameter counts of the presets against their published totals.

use meshplan_core::presets;

/// (total, active, active without the embedding and output layer).
fn counts(key: &str) -> (f64, f64, f64) {
    let c = presets::model(key).unwrap_or_else(|| panic!("preset {key}")).model_config().param_counts();
    (c.total as f64, c.active as f64, (c.active - c.embedding - c.output_layer) as f64)
}

#[test]
fn llama_3_1_8b_is_exact() {
    // 8,030,261,248 (HF safetensors metadata). By hand: embedding + output 2·128256·4096 = 1,050,673,152;
    // per layer q,o 2·4096² + k,v 2·4096·1024 + MLP 3·4096·14336 + 2 norms·4096 = 218,112,000; ×32 = 6,979,584,000;
    // final norm 4096 → 8,030,261,248.
    let c = presets::model("llama-3.1-8b").unwrap().model_config().param_counts();
    assert_eq!(c.total, 8_030_261_248);
    assert_eq!(c.active, c.total);
}

#[test]
fn presets_match_published_totals() {
    // (key, published total, published active, relative tolerance): tolerances reflect how the figure was rounded.
    let published: &[(&str, f64, f64, f64)] = &[
        ("llama-3.1-70b", 70.6e9, 70.6e9, 0.005),
        ("llama-3.1-405b", 405e9, 405e9, 0.01),
        ("qwen3-8b", 8.2e9, 8.2e9, 0.01),
        ("qwen3-32b", 32.8e9, 32.8e9, 0.01),
        ("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02),
        ("qwen3-235b-a22b", 235e9, 22e9, 0.01),
        ("mixtral-8x7b", 46.7e9, 12.9e9, 0.01),
        ("mixtral-8x22b", 141e9, 39e9, 0.01),
        ("deepseek-v2", 236e9, 21e9, 0.02),
        ("deepseek-v3", 671e9, 37e9, 0.015),
        ("olmoe-1b-7b", 6.9e9, 1.3e9, 0.02),
        // Zhipu's "32B / 12B active" leave out the embedding and output layer (2·151552·h): compared without them below.
        ("glm-4.5", 355e9, 32e9, 0.01),
        ("glm-4.5-air", 106e9, 12e9, 0.02),
        ("kimi-k2", 1.04e12, 32e9, 0.03),
        ("moonlight-16b-a3b", 16e9, 3e9, 0.03),
        ("nemotron-4-340b", 340e9, 340e9, 0.01),
        ("gpt3-175b", 175e9, 175e9, 0.01),
    ];
    for &(key, total, active, tol) in published {
        let (t, a, a_no_embed) = counts(key);
        let a = if key.starts_with("glm") { a_no_embed } else { a };
        assert!((t / total - 1.0).abs() <= tol, "{key}: total {t:.4e} vs published {total:.4e}");
        assert!((a / active - 1.0).abs() <= tol.max(0.02), "{key}: active {a:.4e} vs published {active:.4e}");
    }
}

#[test]
fn every_reference_model_and_gpu_is_a_preset() {
    assert_eq!(presets::models().len(), 76);
    assert_eq!(presets::gpus().len(), 18);
    for m in presets::models() {
        assert!(!m.hf_id.is_empty() && !m.source.is_empty(), "{}", m.key);
        assert!(!m.family.trim().is_empty(), "{}: a preset needs a family (the page groups by it)", m.key);
    }
    // Families as the page groups them: the Llama 3.1 presets share one, and a hybrid Mamba family is its own.
    let family = |k: &str| presets::model(k).unwrap().family.as_str();
    assert_eq!(family("llama-3.1-8b"), family("llama-3.1-405b"));
    assert_eq!(family("nemotron-h-8b"), "Nemotron-H");
    assert_ne!(family("qwen3-8b"), family("deepseek-v3"));
    let gb200 = presets::gpu("GB200").unwrap();
    assert_eq!(gb200.nvlink_domain_size, 72);
}

#[test]
fn deepseek_v3_mtp_is_reported_apart() {
    // One MTP module ≈ one MoE layer (11.5B) + eh_proj 2·7168² (0.1B): DeepSeek reports 671B main + ~14B MTP incl. its
    // own embedding/head copies (shared here).
    let c = presets::model("deepseek-v3").unwrap().model_config().param_counts();
    assert!((11.0e9..12.5e9).contains(&(c.mtp as f64)), "{}", c.mtp);
}

/// Megatron's per-layer rules, restated independently of the model module: `moe_layer_freq` (an int N: layers 0, N,
/// 2N, … are MoE; a list: 1 = MoE) and `linear_attention_freq` (an int N: layer i is full attention iff (i+1) % N == 0;
/// a list: 1 = linear attention).
fn flag(freq: &meshplan_core::model::MoeLayerFreq, i: u64, moe: bool) -> bool {
    use meshplan_core::model::MoeLayerFreq;
    match freq {
        MoeLayerFreq::Every(n) if moe => *n > 0 && i % n == 0,
        MoeLayerFreq::Every(n) => *n > 1 && (i + 1) % n != 0,
        MoeLayerFreq::Pattern(p) => p.get(i as usize).is_some_and(|&v| v != 0),
    }
}

proptest::proptest! {
    /// The layer kinds agree with Megatron's per-layer rules walked one layer at a time: `layer_is_moe`, the kind of
    /// each layer, the per-kind counts of any range (`LayerKinds::counts_in`), and `param_counts` = the sum of
    /// `layer_params` over every layer.
    #[test]
    fn kind_counts_equal_the_layer_walk(
        key in proptest::sample::select(vec!["deepseek-v3", "qwen3-30b-a3b", "llama-3.1-8b", "mixtral-8x7b", "glm-4.5-air"]),
        layers in 1u64..130,
        every in 1u64..5,
        pattern in proptest::collection::vec(0u8..2, 1..130),
        use_pattern in proptest::bool::ANY,
        linear in proptest::option::of(1u64..6),
        start in 0u64..140,
        count in 0u64..140,
    ) {
        use meshplan_core::model::{Ffn, Mixer, MoeLayerFreq};
        let mut m = presets::model(key).unwrap().model_config();
        m.num_layers = layers;
        m.moe_layer_freq = if use_pattern { MoeLayerFreq::Pattern(pattern) } else { MoeLayerFreq::Every(every) };
        if let Some(n) = linear {
            m.experimental_attention_variant = Some("gated_delta_net".into());
            m.linear_attention_freq = Some(MoeLayerFreq::Every(n));
        }
        let moe_at = |i: u64| m.is_moe() && flag(&m.moe_layer_freq, i, true);
        let gdn_at = |i: u64| m.linear_attention_freq.as_ref().is_some_and(|f| flag(f, i, false));
        for i in 0..layers {
            proptest::prop_assert_eq!(m.layer_is_moe(i), moe_at(i));
            let k = m.layer_kind(i);
            proptest::prop_assert_eq!(k.mixer == Mixer::GatedDeltaNet, gdn_at(i));
            proptest::prop_assert_eq!(k.ffn == Ffn::Moe, moe_at(i));
        }
        let walked = (0..layers).filter(|&i| moe_at(i)).count() as u64;
        proptest::prop_assert_eq!(m.num_moe_layers(), walked);
        let kinds = m.kinds();
        let counts = kinds.counts_in(start, count);
        let end = (start + count).min(layers);
        for (idx, kind) in kinds.totals.table.kinds().iter().enumerate() {
            let walked = (start.min(end)..end)
                .filter(|&i| (kind.ffn == Ffn::Moe) == moe_at(i) && (kind.mixer == Mixer::GatedDeltaNet) == gdn_at(i))
                .count() as u64;
            proptest::prop_assert_eq!(counts.get(idx), walked, "{:?} in [{}, {})", kind, start, end);
        }
        let c = m.param_counts();
        let total: u128 = (0..layers).map(|i| m.layer_params(i).total()).sum();
        let active: u128 = (0..layers).map(|i| m.layer_params(i).active(m.moe_router_topk)).sum();
        // Beyond the layers: embedding, output layer and the final norm (one weight for RMSNorm, two for LayerNorm).
        let norm = if m.normalization.eq_ignore_ascii_case("LayerNorm") { 2 } else { 1 } * m.hidden_size as u128;
        let rest = c.embedding + c.output_layer + norm;
        proptest::prop_assert_eq!(c.total, total + rest);
        proptest::prop_assert_eq!(c.active, active + rest);
    }
}
