//! Share links' plans: base64url (RFC 4648 §5) and the guard a link's plan passes before anything plans it — the
//! page's `#plan=` and `base=` parameters and the plan it keeps in localStorage. The page's `state/share.rs` builds
//! and reads its URL around these; the fuzz harness drives them as the page does.
//!
//! Pure and bounded: a link is read only up to [`MAX_LINK_CHARS`]; its values, depth, strings and sizes pass the
//! limits in [`crate::limits`] before [`crate::report::plan_value`] sees it.

use crate::limits::{MAX_LINK_CHARS, MAX_LINK_DEPTH, MAX_LINK_GPUS, MAX_LINK_LAYERS, MAX_LINK_NUMBER, MAX_LINK_TEXT_BYTES, MAX_LINK_VALUES};
use crate::presets;
use serde_json::Value;

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
/// "indifferent" and trailing bits allowed; a test of the page checks the two agree): padding is optional, but only at
/// the end of the last group of four and after at least two digits; a lone digit in the last group, or any other
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

/// What a link's plan (or the plan kept in localStorage) must pass before the page opens it. The link's own limits
/// come first ([`check_safe`], then [`check_sizes`]): planning does work in proportion to the plan's sizes, so a size
/// nobody has checked must not reach the planner. Then it is planned, and it may ask for at most [`MAX_LINK_GPUS`]
/// GPUs.
pub fn vet(value: &Value) -> Result<(), Rejected> {
    check_safe(value)?;
    check_sizes(value)?;
    // A build that maps Hugging Face configs in another module (the page: crates/core/src/hf.rs `install`) may not have
    // loaded it yet. The GPUs a link asks for do not depend on its model: they are counted with a preset in its place.
    let planned = match crate::report::plan_value(value) {
        Err(e) if e.code == crate::Code::HfConfigLoading => match with_preset_model(value) {
            Some(standin) => crate::report::plan_value(&standin),
            None => return Ok(()),
        },
        r => r,
    };
    let report = match planned {
        // A build that fetches the recipes (the page) has not yet: the link's own sizes have passed the limits above,
        // and a recipe's are the data's; the plan is planned once the recipes are in.
        Err(e) if e.code == crate::Code::RecipesLoading => return Ok(()),
        r => r.map_err(|e| Rejected(format!("the link's plan cannot be read: {}", e.message)))?,
    };
    if report.derived.world_size > MAX_LINK_GPUS {
        return Err(Rejected(format!(
            "the link asks for {} GPUs, more than the {} a shared link may open",
            report.derived.world_size, MAX_LINK_GPUS
        )));
    }
    Ok(())
}

/// The plan with the catalogue's first model preset in place of its own model (None: not a plan object).
fn with_preset_model(value: &Value) -> Option<Value> {
    let mut standin = value.clone();
    standin.as_object_mut()?.insert("model".into(), Value::from(presets::models().first()?.key.as_str()));
    Some(standin)
}

/// Rejects what no honest plan contains: not an object, markup or control characters in any key or string, strings
/// over [`MAX_LINK_TEXT_BYTES`], numbers beyond [`MAX_LINK_NUMBER`], nesting deeper than [`MAX_LINK_DEPTH`], or more
/// than [`MAX_LINK_VALUES`] values.
pub fn check_safe(value: &Value) -> Result<(), Rejected> {
    if !value.is_object() {
        return Err(Rejected("the link's plan is not a JSON object".into()));
    }
    fn text_ok(s: &str) -> bool {
        s.len() <= MAX_LINK_TEXT_BYTES && !s.chars().any(|c| matches!(c, '<' | '>' | '"' | '`') || c.is_control())
    }
    fn walk(v: &Value, depth: usize, seen: &mut usize) -> Result<(), Rejected> {
        *seen += 1;
        if *seen > MAX_LINK_VALUES {
            return Err(Rejected(format!("the link's plan holds more than {MAX_LINK_VALUES} values")));
        }
        if depth > MAX_LINK_DEPTH {
            return Err(Rejected("the link's plan is nested too deeply".into()));
        }
        match v {
            Value::String(s) if !text_ok(s) => Err(Rejected("the link's plan has markup or control characters in a name".into())),
            Value::Number(n) if n.as_f64().is_none_or(|x| x.abs() > MAX_LINK_NUMBER) => Err(Rejected("the link's plan has an absurd number".into())),
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
        gpu.map_or_else(|| presets::gpus().iter().map(|g| g.gpus_per_node).max().unwrap_or(1), |g| g.gpus_per_node) as f64
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
