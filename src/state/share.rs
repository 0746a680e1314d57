//! Share links: the plan in the URL hash (`#plan=<base64url of the compact JSON>`, plus flags such
//! as `embed=1`), and the guard every link and kept plan passes before the page opens it.
//!
//! Plain Rust (no DOM), so all of it is tested natively.

use super::catalog;
use super::plan_doc::default_plan;
use meshplan_core::presets;
use serde_json::Value;

/// Largest world size a shared link may ask for: beyond it a link is treated as hostile
/// (the planner itself still plans whatever is typed in).
pub const MAX_LINK_GPUS: u64 = 65_536;
/// Largest encoded plan a link may carry (64 KiB of base64url, 48 KiB of JSON).
pub const MAX_LINK_CHARS: usize = 64 * 1024;
/// Most values (numbers, strings, list entries, objects) a link's plan may hold; a plan with a pasted
/// Hugging Face config holds a few hundred.
pub const MAX_LINK_VALUES: usize = 4096;
/// Largest layer count a link may ask for (any `…layers` field), and most pipeline stages × virtual chunks:
/// each holds at least a layer, and published models have at most a few hundred.
pub const MAX_LINK_LAYERS: u64 = 4096;

/// The base64url alphabet (RFC 4648 §5).
const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (RFC 4648 §5), as `Buffer.toString("base64url")` and the page write it. Written out
/// rather than taken from the base64 crate, whose general-purpose engine was 2.5 KB gzip of the page's wasm.
pub fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for k in 0..=chunk.len() {
            out.push(char::from(BASE64URL[(n >> (18 - 6 * k) & 63) as usize]));
        }
    }
    out
}

/// Reads base64url as the page's links always have been read (the base64 crate's URL-safe engine with padding
/// "indifferent" and trailing bits allowed; a test checks the two agree): padding is optional, but only at the
/// end of the last group of four and after at least two digits; a lone digit in the last group, or any other
/// character, is not base64url; the unused low bits of the last digit are ignored.
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let (body, last) = b.split_at(b.len().saturating_sub(1) / 4 * 4);
    let digits = &last[..last.len() - last.iter().rev().take_while(|&&c| c == b'=').count()];
    if !b.is_empty() && digits.len() < 2 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3 + 2);
    for group in body.chunks(4).chain(std::iter::once(digits)) {
        let mut n = 0u32;
        for (i, &c) in group.iter().enumerate() {
            let v = BASE64URL.iter().position(|&a| a == c)?;
            n |= (v as u32) << (18 - 6 * i);
        }
        out.extend((0..group.len() * 6 / 8).map(|k| (n >> (16 - 8 * k)) as u8));
    }
    Some(out)
}

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

/// One `key=value` parameter of a hash or query string (`#a=1&b=2`, `?a=1`).
pub fn hash_param<'a>(hash: &'a str, key: &str) -> Option<&'a str> {
    hash.trim_start_matches(['#', '?'])
        .split('&')
        .find_map(|kv| match kv.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if kv == key => Some(""),
            _ => None,
        })
}

/// Why a shared link was not opened: shown to the user in the fallback notice.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected(pub String);

/// Reads the plan of a shared link's `plan=` parameter. Anything malformed or hostile —
/// too long, not base64url, not UTF-8 JSON, not a plan [`vet`] passes — is rejected with a
/// reason, and the page falls back to the default plan.
pub fn decode_shared(param: &str) -> Result<Value, Rejected> {
    let bad = |why: &str| Rejected(why.to_string());
    if param.len() > MAX_LINK_CHARS {
        return Err(bad("the link's plan is too long"));
    }
    let bytes = base64url_decode(param).ok_or_else(|| bad("the link's plan is not valid base64url"))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("the link's plan is not UTF-8 text"))?;
    let value: Value = serde_json::from_str(&text).map_err(|_| bad("the link's plan is not valid JSON"))?;
    vet(&value)?;
    Ok(value)
}

/// What a link's plan (or the plan kept in localStorage) must pass before the page opens it. The page's
/// own limits come first ([`check_safe`], then [`check_sizes`]): planning does work in proportion to the
/// plan's sizes, so a size nobody has checked must not reach the core. Then the core plans it, and it may
/// ask for at most [`MAX_LINK_GPUS`] GPUs.
pub fn vet(value: &Value) -> Result<(), Rejected> {
    check_safe(value)?;
    check_sizes(value)?;
    let report = meshplan_core::plan_value(value).map_err(|e| Rejected(format!("the link's plan cannot be read: {}", e.message)))?;
    if report.derived.world_size > MAX_LINK_GPUS {
        return Err(Rejected(format!(
            "the link asks for {} GPUs, more than the {} a shared link may open",
            report.derived.world_size, MAX_LINK_GPUS
        )));
    }
    Ok(())
}

/// Rejects what no honest plan contains: not an object, markup or control characters in any
/// key or string, over-long strings, numbers beyond 2^53, nesting deeper than 8, or more than
/// [`MAX_LINK_VALUES`] values.
pub fn check_safe(value: &Value) -> Result<(), Rejected> {
    if !value.is_object() {
        return Err(Rejected("the link's plan is not a JSON object".into()));
    }
    fn text_ok(s: &str) -> bool {
        s.len() <= 200 && !s.chars().any(|c| matches!(c, '<' | '>' | '"' | '`') || c.is_control())
    }
    fn walk(v: &Value, depth: usize, seen: &mut usize) -> Result<(), Rejected> {
        *seen += 1;
        if *seen > MAX_LINK_VALUES {
            return Err(Rejected(format!("the link's plan holds more than {MAX_LINK_VALUES} values")));
        }
        if depth > 8 {
            return Err(Rejected("the link's plan is nested too deeply".into()));
        }
        match v {
            Value::String(s) if !text_ok(s) => Err(Rejected("the link's plan has markup or control characters in a name".into())),
            Value::Number(n) if n.as_f64().is_none_or(|x| x.abs() > 9.007_199_254_740_992e15) => {
                Err(Rejected("the link's plan has an absurd number".into()))
            }
            Value::Array(items) => items.iter().try_for_each(|x| walk(x, depth + 1, seen)),
            Value::Object(map) => map.iter().try_for_each(|(k, x)| {
                if text_ok(k) { walk(x, depth + 1, seen) } else { Err(Rejected("the link's plan has markup or control characters in a name".into())) }
            }),
            _ => Ok(()),
        }
    }
    walk(value, 0, &mut 0)
}

/// The sizes that set how much work planning is, against the link's limits, read from the JSON before
/// anything is planned: every number in `cluster` and `parallelism` (GPUs, nodes, mesh sizes, stage
/// layers) and GPUs per node × nodes at most [`MAX_LINK_GPUS`]; every `…layers` count anywhere, and
/// pipeline stages × virtual chunks, at most [`MAX_LINK_LAYERS`].
pub fn check_sizes(plan: &Value) -> Result<(), Rejected> {
    let above = |key: &str, value: &Value, limit: u64| Rejected(format!("the link's {key} is {value}, above the {limit} a shared link may ask for"));
    for section in ["cluster", "parallelism"] {
        for (key, value) in plan.get(section).and_then(Value::as_object).into_iter().flatten() {
            if value.as_f64().is_some_and(|n| n > MAX_LINK_GPUS as f64) {
                return Err(above(key, value, MAX_LINK_GPUS));
            }
        }
    }
    let number = |pointer: &str| plan.pointer(pointer).and_then(Value::as_f64);
    // GPUs per node when the link leaves it out: its GPU's, or the most any catalogued GPU has.
    let per_node = number("/cluster/gpus_per_node").unwrap_or_else(|| {
        let gpu = plan.pointer("/cluster/gpu").and_then(Value::as_str).and_then(presets::gpu);
        gpu.map_or_else(|| catalog().gpus.iter().map(|g| g.gpus_per_node).max().unwrap_or(1), |g| g.gpus_per_node) as f64
    });
    let gpus = per_node * number("/cluster/num_nodes").unwrap_or(1.0);
    if gpus > MAX_LINK_GPUS as f64 {
        return Err(Rejected(format!("the link asks for {gpus} GPUs, more than the {MAX_LINK_GPUS} a shared link may open")));
    }
    let stages = number("/parallelism/pipeline_model_parallel_size").unwrap_or(1.0);
    let chunks = number("/parallelism/virtual_pipeline_model_parallel_size").unwrap_or(1.0);
    if stages * chunks > MAX_LINK_LAYERS as f64 {
        return Err(Rejected(format!(
            "the link asks for {stages} pipeline stages × {chunks} virtual chunks, more than the {MAX_LINK_LAYERS} a shared link may ask for"
        )));
    }
    layer_counts(plan, &above)
}

/// Every number under a key ending in `layers` (`num_layers`, `num_hidden_layers`, `mtp_num_layers`, …), at any depth.
fn layer_counts(v: &Value, above: &dyn Fn(&str, &Value, u64) -> Rejected) -> Result<(), Rejected> {
    match v {
        Value::Object(map) => map.iter().try_for_each(|(key, x)| match x.as_f64() {
            Some(n) if key.ends_with("layers") && n > MAX_LINK_LAYERS as f64 => Err(above(key, x, MAX_LINK_LAYERS)),
            _ => layer_counts(x, above),
        }),
        Value::Array(items) => items.iter().try_for_each(|x| layer_counts(x, above)),
        _ => Ok(()),
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
    let kept = stored.and_then(|s| serde_json::from_str::<Value>(s).ok()).filter(|v| vet(v).is_ok());
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

