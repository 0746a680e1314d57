//! Share links: the plan in the URL hash (`#plan=<base64url of the compact JSON>`, plus flags such
//! as `embed=1`). The guard every link and kept plan passes before the page opens it, base64url and the link limits
//! are the core's (`meshplan_core::share`, `meshplan_core::limits`), where the fuzz harness reaches them.
//!
//! Plain Rust (no DOM), so all of it is tested natively.

use super::plan_doc::default_plan;
use serde_json::Value;

pub use meshplan_core::limits::{MAX_LINK_CHARS, MAX_LINK_GPUS, MAX_LINK_LAYERS, MAX_LINK_VALUES};
pub use meshplan_core::share::{Rejected, base64url_decode, base64url_encode, check_safe, check_sizes, decode_shared, hash_param, vet};

/// The URL hash for a plan and the page's flags.
pub fn encode_hash(plan: &Value, flags: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = flags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.push(format!("plan={}", base64url_encode(plan.to_string().as_bytes())));
    format!("#{}", parts.join("&"))
}

/// The URL hash for a plan compared with a pinned baseline: `base=` (the baseline, vetted as `plan=` is when the
/// link is opened) before `plan=`; without a baseline, exactly [`encode_hash`]'s.
pub fn encode_hash_with_base(plan: &Value, base: Option<&Value>, flags: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = flags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(b) = base {
        parts.push(format!("base={}", base64url_encode(b.to_string().as_bytes())));
    }
    parts.push(format!("plan={}", base64url_encode(plan.to_string().as_bytes())));
    format!("#{}", parts.join("&"))
}

/// The baseline of a comparison link's `base=` parameter, read and vetted exactly as `plan=` ([`decode_shared`]);
/// none without one. A refused baseline is dropped (the plan still opens) with a notice saying why.
pub fn initial_base(hash: &str) -> (Option<Value>, Option<String>) {
    match hash_param(hash, "base").map(decode_shared) {
        None => (None, None),
        Some(Ok(v)) => (Some(v), None),
        Some(Err(Rejected(why))) => (None, Some(format!("The link's baseline was not opened: {}. Showing the plan alone.", why.replace("the link's plan", "the baseline").replace("the link's ", "the baseline's ")))),
    }
}

/// The plan the page opens: a shared link's plan if the hash carries one (or the default with
/// a notice saying why not), else the last plan kept in localStorage, else the default.
pub fn initial_plan(hash: &str, stored: Option<&str>) -> (Value, Option<String>) {
    if let Some(param) = hash_param(hash, "plan") {
        return match decode_shared(param) {
            Ok(v) => (v, None),
            Err(Rejected(why)) => (default_plan(), Some(format!("The shared link was not opened: {why}. Showing the default plan instead."))),
        };
    }
    // A kept plan passes what a link would: it may have come from one (a tab that stopped on it).
    let kept = stored.and_then(|s| meshplan_core::plan::read_json(s).ok()).filter(|v| vet(v).is_ok());
    (kept.unwrap_or_else(default_plan), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::plan_doc::set;
    use serde_json::json;

    #[test]
    fn base64url_round_trips() {
        for text in ["", "a", "ab", "abc", "abcd", "{\"model\":\"x\"}", "ü→✓"] {
            let enc = base64url_encode(text.as_bytes());
            assert!(enc.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
            assert_eq!(base64url_decode(&enc).unwrap(), text.as_bytes());
        }
        assert_eq!(base64url_encode(b"Man"), "TWFu");
        assert_eq!(base64url_encode(b"\xfb\xff"), "-_8");
        assert_eq!(base64url_decode("a"), None);
        assert_eq!(base64url_decode("ab$d"), None);
        // Links written with padding, or with the unused low bits of the last digit set ("TWF": T W F =
        // 19 22 5 → 0x4D 0x61 and 0b01 left over), read as they always have: "Ma".
        assert_eq!(base64url_decode("TWE=").as_deref(), Some(&b"Ma"[..]));
        assert_eq!(base64url_decode("TWE").as_deref(), Some(&b"Ma"[..]));
        assert_eq!(base64url_decode("TWF").as_deref(), Some(&b"Ma"[..]));
    }

    #[test]
    fn base64url_reads_as_the_base64_crate_did() {
        // The base64 crate's engine, configured as the page's links were read before this reader was written out,
        // is the oracle: every text of up to five characters over digits, padding and stray characters decodes the
        // same (or is refused by both), and encoding agrees on every length of a byte run.
        use base64::Engine;
        use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
        let crate_engine = GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            GeneralPurposeConfig::new()
                .with_encode_padding(false)
                .with_decode_padding_mode(DecodePaddingMode::Indifferent)
                .with_decode_allow_trailing_bits(true),
        );
        let alphabet = ['A', 'Q', '_', '-', 'z', '9', '=', '$', '+'];
        let mut layer = vec![String::new()];
        for _ in 0..6 {
            for t in &layer {
                assert_eq!(base64url_decode(t), crate_engine.decode(t).ok(), "{t:?}");
            }
            layer = layer.iter().flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}"))).collect();
        }
        let bytes: Vec<u8> = (0..=255u8).rev().chain(0..=255).collect();
        for n in 0..bytes.len() {
            assert_eq!(base64url_encode(&bytes[..n]), crate_engine.encode(&bytes[..n]));
        }
    }

    #[test]
    fn share_link_round_trip() {
        let mut p = default_plan();
        set(&mut p, "parallelism.tensor_model_parallel_size", json!(4));
        let hash = encode_hash(&p, &[("embed", "1")]);
        assert_eq!(hash_param(&hash, "embed"), Some("1"));
        assert_eq!(decode_shared(hash_param(&hash, "plan").unwrap()).unwrap(), p);
        assert_eq!(hash_param("?embed", "embed"), Some(""));
        assert_eq!(hash_param("#plan=x", "embed"), None);
    }

    #[test]
    fn a_comparison_link_carries_both_plans() {
        let base = default_plan();
        let mut p = default_plan();
        set(&mut p, "training.micro_batch_size", json!(2));
        let hash = encode_hash_with_base(&p, Some(&base), &[("embed", "1")]);
        assert!(hash.starts_with("#embed=1&base="));
        assert_eq!(initial_plan(&hash, None), (p.clone(), None));
        assert_eq!(initial_base(&hash), (Some(base), None));
        assert_eq!(encode_hash_with_base(&p, None, &[]), encode_hash(&p, &[]));
        assert_eq!(initial_base(&encode_hash(&p, &[])), (None, None));
    }

    #[test]
    fn a_hostile_baseline_is_refused_before_it_is_planned() {
        // The same 2^24-stage plan a `plan=` link is refused for: as `base=` it is dropped and the plan opens.
        let huge_pp = json!({"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 1},
            "parallelism": {"pipeline_model_parallel_size": 16_777_216, "num_layers_in_first_pipeline_stage": 32}});
        let hash = encode_hash_with_base(&default_plan(), Some(&huge_pp), &[]);
        assert_eq!(initial_plan(&hash, None), (default_plan(), None));
        let (base, notice) = initial_base(&hash);
        assert_eq!(base, None);
        assert_eq!(notice.unwrap(), "The link's baseline was not opened: the baseline's pipeline_model_parallel_size is 16777216, above the 65536 a shared link may ask for. Showing the plan alone.");
        let (base, notice) = initial_base("#base=%%%&plan=x");
        assert!(base.is_none() && notice.unwrap().contains("not valid base64url"));
    }

    #[test]
    fn hostile_links_are_rejected() {
        let enc = |s: &str| base64url_encode(s.as_bytes());
        let cases = [
            "%%%".to_string(),
            enc("{not json"),
            enc("[1,2]"),
            enc(r#"{"model":"<img src=x onerror=alert(1)>","cluster":{},"training":{},"parallelism":{}}"#),
            enc(r#"{"model":{"preset":"llama-3.1-8b","name":"<script>x</script>"},"cluster":{"gpus_per_node":8,"num_nodes":1}}"#),
            enc(r#"{"model":"llama-3.1-8b","cluster":{"gpus_per_node":8,"num_nodes":1e300}}"#),
            enc(r#"{"model":"llama-3.1-8b","cluster":{"gpus_per_node":8,"num_nodes":100000}}"#),
            enc(r#"{"model":"no-such-model","cluster":{"gpus_per_node":8,"num_nodes":1}}"#),
            "A".repeat(MAX_LINK_CHARS + 4),
        ];
        for c in cases {
            assert!(decode_shared(&c).is_err(), "accepted {c:.80}");
        }
    }

    /// The reason a plan is refused, or "opened".
    fn verdict(plan: Value) -> String {
        match decode_shared(&base64url_encode(plan.to_string().as_bytes())) {
            Ok(_) => "opened".into(),
            Err(Rejected(why)) => why,
        }
    }

    #[test]
    fn links_are_sized_before_they_are_planned() {
        // The issue's link: Llama 3.1 8B on 8 GPUs with 2^24 pipeline stages, which the core would build
        // one by one (48 s and 6.7 GB natively).
        let huge_pp = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
            "parallelism": {"pipeline_model_parallel_size": 16_777_216, "num_layers_in_first_pipeline_stage": 32}});
        assert_eq!(verdict(huge_pp), "the link's pipeline_model_parallel_size is 16777216, above the 65536 a shared link may ask for");
        let nodes = json!({"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 100_000}});
        assert_eq!(verdict(nodes), "the link's num_nodes is 100000, above the 65536 a shared link may ask for");
        // 8 × 10,000 = 80,000 GPUs; and 65,536 H100 nodes of the catalogue's 8 GPUs = 524,288.
        let product = json!({"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 10_000}});
        assert_eq!(verdict(product), "the link asks for 80000 GPUs, more than the 65536 a shared link may open");
        let default_per_node = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 65_536}});
        assert_eq!(verdict(default_per_node), "the link asks for 524288 GPUs, more than the 65536 a shared link may open");
        // 64 stages × 128 chunks = 8,192 model chunks.
        let chunks = json!({"model": "llama-3.1-8b", "cluster": {"num_nodes": 1},
            "parallelism": {"pipeline_model_parallel_size": 64, "virtual_pipeline_model_parallel_size": 128}});
        assert_eq!(verdict(chunks), "the link asks for 64 pipeline stages × 128 virtual chunks, more than the 4096 a shared link may ask for");
        let layers = json!({"model": {"hf_config": {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1_000_000}}, "cluster": {"num_nodes": 1}});
        assert_eq!(verdict(layers), "the link's num_hidden_layers is 1000000, above the 4096 a shared link may ask for");
        let list: Vec<u64> = (0..5000).collect();
        let values = json!({"model": {"hf_config": {"architectures": ["Qwen2MoeForCausalLM"], "mlp_only_layers": list}}, "cluster": {"num_nodes": 1}});
        assert_eq!(verdict(values), "the link's plan holds more than 4096 values");
    }

    #[test]
    fn real_plans_pass_the_link_limits() {
        // The screenshots' Llama 3.1 405B on 4,096 GPUs (PP 8 · VPP 2, uneven edges) and a 16,384-GPU DeepSeek-V3.
        let big = json!({"model": "llama-3.1-405b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 512},
            "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 2048},
            "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 2,
                "context_parallel_size": 2, "num_layers_in_first_pipeline_stage": 16, "num_layers_in_last_pipeline_stage": 14}});
        assert_eq!(verdict(big), "opened");
        let moe = json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 2048},
            "parallelism": {"pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64}});
        assert_eq!(verdict(moe), "opened");
    }

    #[test]
    fn a_kept_plan_is_vetted_as_a_link_is() {
        let huge_pp = json!({"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 1},
            "parallelism": {"pipeline_model_parallel_size": 16_777_216, "num_layers_in_first_pipeline_stage": 32}});
        assert_eq!(initial_plan("", Some(&huge_pp.to_string())), (default_plan(), None));
    }

    #[test]
    fn a_link_wins_then_storage_then_the_default() {
        let mut p = default_plan();
        set(&mut p, "parallelism.tensor_model_parallel_size", json!(8));
        let hash = encode_hash(&p, &[]);
        assert_eq!(initial_plan(&hash, None), (p.clone(), None));
        assert_eq!(initial_plan("", Some(&p.to_string())), (p.clone(), None));
        assert_eq!(initial_plan("", Some("{broken")), (default_plan(), None));
        let (plan, notice) = initial_plan("#plan=!!!", Some(&p.to_string()));
        assert_eq!(plan, default_plan());
        assert!(notice.unwrap().contains("not opened"));
    }
}

