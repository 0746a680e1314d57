//! Share links: the plan in the URL hash (`#plan=<base64url of the compact JSON>`, plus flags such
//! as `embed=1`), and the guard every link and kept plan passes before the page opens it.
//!
//! Plain Rust (no DOM), so all of it is tested natively.

use super::plan_doc::default_plan;
use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

/// Largest world size a shared link may ask for: beyond it a link is treated as hostile
/// (the planner itself still plans whatever is typed in).
pub const MAX_LINK_GPUS: u64 = 65_536;
/// Largest encoded plan a link may carry.
pub const MAX_LINK_CHARS: usize = 64 * 1024;

/// base64url without padding, as `Buffer.toString("base64url")` and the page write it; reading also
/// takes padded text and non-zero trailing bits, as the page's links always have been read.
const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

pub fn base64url_encode(bytes: &[u8]) -> String {
    BASE64URL.encode(bytes)
}

pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    BASE64URL.decode(text).ok()
}

/// The URL hash for a plan and the page's flags.
pub fn encode_hash(plan: &Value, flags: &[(&str, &str)]) -> String {
    let mut parts: Vec<String> = flags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.push(format!("plan={}", base64url_encode(plan.to_string().as_bytes())));
    format!("#{}", parts.join("&"))
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
/// not base64url, not UTF-8 JSON, not an object, markup or control characters in any text,
/// absurd numbers, more than [`MAX_LINK_GPUS`] GPUs, or a plan the core cannot read — is
/// rejected with a reason, and the page falls back to the default plan.
pub fn decode_shared(param: &str) -> Result<Value, Rejected> {
    let bad = |why: &str| Rejected(why.to_string());
    if param.len() > MAX_LINK_CHARS {
        return Err(bad("the link's plan is too long"));
    }
    let bytes = base64url_decode(param).ok_or_else(|| bad("the link's plan is not valid base64url"))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("the link's plan is not UTF-8 text"))?;
    let value: Value = serde_json::from_str(&text).map_err(|_| bad("the link's plan is not valid JSON"))?;
    check_safe(&value)?;
    let report = meshplan_core::plan_value(&value).map_err(|e| Rejected(format!("the link's plan cannot be read: {}", e.message)))?;
    if report.derived.world_size > MAX_LINK_GPUS {
        return Err(Rejected(format!(
            "the link asks for {} GPUs, more than the {} a shared link may open",
            report.derived.world_size, MAX_LINK_GPUS
        )));
    }
    Ok(value)
}

/// Rejects what no honest plan contains: not an object, markup or control characters in any
/// key or string, over-long strings, numbers beyond 2^53, or nesting deeper than 8.
pub fn check_safe(value: &Value) -> Result<(), Rejected> {
    if !value.is_object() {
        return Err(Rejected("the link's plan is not a JSON object".into()));
    }
    fn text_ok(s: &str) -> bool {
        s.len() <= 200 && !s.chars().any(|c| matches!(c, '<' | '>' | '"' | '`') || c.is_control())
    }
    fn walk(v: &Value, depth: usize) -> Result<(), Rejected> {
        if depth > 8 {
            return Err(Rejected("the link's plan is nested too deeply".into()));
        }
        match v {
            Value::String(s) if !text_ok(s) => Err(Rejected("the link's plan has markup or control characters in a name".into())),
            Value::Number(n) if n.as_f64().is_none_or(|x| x.abs() > 9.007_199_254_740_992e15) => {
                Err(Rejected("the link's plan has an absurd number".into()))
            }
            Value::Array(items) => items.iter().try_for_each(|x| walk(x, depth + 1)),
            Value::Object(map) => map.iter().try_for_each(|(k, x)| {
                if text_ok(k) { walk(x, depth + 1) } else { Err(Rejected("the link's plan has markup or control characters in a name".into())) }
            }),
            _ => Ok(()),
        }
    }
    walk(value, 0)
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
    let kept = stored
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .filter(|v| check_safe(v).is_ok() && meshplan_core::plan_value(v).is_ok_and(|r| r.derived.world_size <= MAX_LINK_GPUS));
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
