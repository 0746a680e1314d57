//! The hybrid layer pattern fields of the model section: `hybrid_layer_pattern`, its deprecated name
//! `hybrid_override_pattern`, and `mtp_hybrid_override_pattern`, read as Megatron-LM's arguments.py (l.741–926) and
//! Megatron Bridge's HybridModelProvider.finalize read them.

use crate::fields::{Fields, short};
use crate::limits::{MAX_LAYERS, MAX_PATTERN_CHARS};
use crate::model::HybridPattern;
use crate::{Code, Diagnostic};
use serde_json::Value;

/// A pattern string of the section, checked for type and length before anything is parsed.
pub fn text(f: &mut Fields, key: &'static str) -> Option<String> {
    let v = f.raw(key)?;
    let Value::String(s) = v else {
        f.diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`model.{key}` must be a string of layer symbols, found {}", short(v)),
            format!("write `model.{key}` as e.g. \"M-M*-\" (the pattern was ignored)"),
        ));
        return None;
    };
    if s.len() > MAX_PATTERN_CHARS {
        f.diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`model.{key}` is {} bytes long; the longest pattern meshplan reads is {MAX_PATTERN_CHARS}", s.len()),
            format!("give at most {MAX_LAYERS} layer symbols (the pattern was ignored)"),
        ));
        return None;
    }
    Some(s.clone())
}

/// The pattern text the section gives under either name, over `base`'s. Both names at once is Megatron's error; the
/// new name is read then.
pub fn read_text(f: &mut Fields, base: Option<&HybridPattern>) -> Option<String> {
    let new = text(f, "hybrid_layer_pattern");
    let old = text(f, "hybrid_override_pattern");
    match (new, old) {
        (Some(new), Some(_)) => {
            // Source: megatron/core/models/hybrid/hybrid_model.py HybridModel.__init__ l.159–172 (and Bridge
            // hybrid_provider.py finalize l.183–196).
            f.diags.push(Diagnostic::new(
                Code::HybridPatternNamesBoth,
                "hybrid_override_pattern and hybrid_layer_pattern cannot both be set. hybrid_override_pattern has been deprecated; use hybrid_layer_pattern instead.",
                "remove `model.hybrid_override_pattern` (hybrid_layer_pattern was read)",
            ));
            Some(new)
        }
        (Some(new), None) => Some(new),
        (None, Some(old)) => {
            f.diags.push(Diagnostic::new(
                Code::HybridOverridePatternDeprecated,
                "hybrid_override_pattern is deprecated: read as hybrid_layer_pattern, as Megatron-LM copies it (with a warning)",
                "rename `model.hybrid_override_pattern` to `model.hybrid_layer_pattern`",
            ));
            Some(old)
        }
        (None, None) => base.map(|p| p.as_str().to_string()),
    }
}

/// Parses `text`; a refused pattern is a diagnostic with Megatron's message and no pattern. A pattern must have between
/// 1 and [`MAX_LAYERS`] layers for meshplan to plan it.
pub fn parse(text: &str, diags: &mut Vec<Diagnostic>) -> Option<HybridPattern> {
    let p = match HybridPattern::parse(text) {
        Ok(p) => p,
        Err(e) => {
            let code = match e {
                crate::model::PatternError::Symbol { .. } => Code::HybridPatternSymbol,
                crate::model::PatternError::AttentionWithMla => Code::HybridPatternAttentionMlaMix,
                crate::model::PatternError::MtpDiffer { .. } => Code::HybridMtpPatternsDiffer,
            };
            let fix = match e {
                crate::model::PatternError::Symbol { .. } => "use only M, G, *, D, +, - and E (and | between pipeline segments in the main pattern)",
                crate::model::PatternError::AttentionWithMla => "use * (attention) or +/D (MLA / DSA) in one pattern, not both",
                crate::model::PatternError::MtpDiffer { .. } => "give every MTP depth after / the same pattern",
            };
            diags.push(Diagnostic::new(code, e.megatron_message(&clip(text)), fix));
            return None;
        }
    };
    let n = p.num_layers();
    if n == 0 || n > MAX_LAYERS {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`model.hybrid_layer_pattern` has {n} layers; meshplan plans 1 to {MAX_LAYERS}"),
            "give the main pattern (before any /) at least one layer symbol (the pattern was ignored)",
        ));
        return None;
    }
    if p.has(b'D') {
        diags.push(Diagnostic::new(
            Code::LayerKindUnsized,
            "the hybrid pattern has D layers (DSA attention: MLA with a DSA indexer), a layer kind meshplan cannot size yet; they are counted with no parameters or activations",
            "plan the model without D layers, or size the DSA indexer apart",
        ));
    }
    Some(p)
}

/// A long pattern shown in a message: its first 200 characters.
fn clip(s: &str) -> String {
    if s.len() <= 200 { s.to_string() } else { format!("{}…", s.chars().take(200).collect::<String>()) }
}

/// `num_layers` with a pattern: always the pattern's layer count. A different `num_layers` given is a warning that says
/// what each tool does.
// Source: megatron/training/arguments.py l.786–798 (warns, uses the pattern's count); Megatron Bridge
// hybrid_provider.py finalize l.236–251 (asserts equality).
pub fn num_layers(given: Option<u64>, p: &HybridPattern, diags: &mut Vec<Diagnostic>) -> u64 {
    let n = p.num_layers();
    if let Some(g) = given.filter(|&g| g != n) {
        diags.push(Diagnostic::new(
            Code::HybridNumLayersMismatch,
            format!(
                "num_layers = {g} but hybrid_layer_pattern has {n} layers: Megatron-LM warns and uses {n} (\"--hybrid-layer-pattern is set; ignoring --num-layers ({g}) and using the layer count derived from the pattern ({n}).\"); Megatron Bridge refuses (\"num_layers ({g}) does not match the number of layers derived from hybrid_layer_pattern ({n}).\")"
            ),
            format!("set num_layers to {n} or remove it"),
        ));
    }
    n
}

/// The unified pattern with the deprecated `mtp_hybrid_override_pattern`: when the main pattern has no `/`, the MTP
/// pattern is appended once per depth (Megatron-LM: `mtp_num_layers` copies; Bridge with `mtp_use_repeated_layer`: at
/// least one).
// Source: megatron/training/arguments.py l.774–784; Megatron Bridge hybrid_provider.py finalize l.200–234.
pub fn with_mtp(main: &str, mtp: Option<&str>, mtp_num_layers: u64, repeated: bool, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let mtp = mtp.filter(|m| !m.is_empty() && !main.contains('/'))?;
    let copies = if repeated { mtp_num_layers.max(1) } else { mtp_num_layers };
    let len = (mtp.len() as u64 + 1).saturating_mul(copies).saturating_add(main.len() as u64);
    if len > MAX_PATTERN_CHARS as u64 {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`model.mtp_hybrid_override_pattern` × {copies} depths makes a pattern of {len} bytes; the longest meshplan reads is {MAX_PATTERN_CHARS}"),
            "shorten the MTP pattern or lower mtp_num_layers (MTP was ignored)",
        ));
        return None;
    }
    (copies > 0).then(|| {
        let mut s = main.to_string();
        for _ in 0..copies {
            s.push('/');
            s.push_str(mtp);
        }
        s
    })
}

/// `mtp_num_layers` with a pattern: the number of MTP depths the pattern gives, when it gives any; a different value
/// given is a warning (Megatron-LM uses the pattern's).
// Source: megatron/training/arguments.py (MTP depth inference: "--mtp-num-layers (…) conflicts with MTP depth count (…)
// in pattern '…'. Using the inferred value (…).").
pub fn mtp_depths(given: u64, explicit: bool, p: &HybridPattern, diags: &mut Vec<Diagnostic>) -> u64 {
    let depths = p.mtp_depths();
    if depths == 0 {
        return given;
    }
    if explicit && given != depths {
        diags.push(Diagnostic::new(
            Code::HybridMtpDepthsMismatch,
            format!(
                "--mtp-num-layers ({given}) conflicts with MTP depth count ({depths}) in pattern '{}'. Using the inferred value ({depths}).",
                clip(p.as_str())
            ),
            format!("set mtp_num_layers to {depths} or remove it"),
        ));
    }
    depths
}
