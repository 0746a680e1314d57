//! Megatron-Core's hybrid layer pattern (`hybrid_layer_pattern`, formerly `hybrid_override_pattern`), read exactly as
//! megatron/core/models/hybrid/hybrid_layer_allocation.py `parse_hybrid_pattern` reads it: one symbol per layer
//! (`M` Mamba-2, `G` Gated DeltaNet, `*` attention, `D` DSA attention, `+` MLA, `-` dense MLP, `E` MoE), `|` between
//! pipeline segments, `/` before each multi-token-prediction depth's pattern.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The symbols Megatron accepts as layers (`Symbols.VALID_LAYERS`), in the order its error lists them.
pub const LAYER_SYMBOLS: &str = "MG*D+-E";

/// A validated pattern, kept as given and as runs of one symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HybridPattern {
    text: String,
    /// The main pattern without `|`, as (symbol, count) runs.
    main: Vec<(u8, u64)>,
    /// Layers in each `|`-separated segment of the main pattern (one segment without `|`).
    segments: Vec<u64>,
    /// One MTP depth's pattern as runs (empty without MTP).
    mtp: Vec<(u8, u64)>,
    mtp_depths: u64,
}

/// Why a pattern is refused; each carries Megatron's own message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatternError {
    /// A character that is not a layer symbol (or `|` in an MTP pattern).
    Symbol { mtp: bool, symbol: char },
    /// `*` together with `D` or `+` in one pattern.
    AttentionWithMla,
    /// The MTP depths' patterns differ: (1-based index of the first that differs, it, the first).
    MtpDiffer { index: usize, first: String, other: String },
}

impl PatternError {
    /// Megatron's message for this error.
    // Source: hybrid_layer_allocation.py `_validate_pattern` (l.277–298) and `parse_hybrid_pattern` (l.200–274).
    pub fn megatron_message(&self, pattern: &str) -> String {
        match self {
            PatternError::Symbol { mtp, symbol } => format!(
                "In {} pattern, '{symbol}' is not a valid layer symbol. Valid symbols are: {{{}}}",
                if *mtp { "MTP" } else { "main" },
                LAYER_SYMBOLS.chars().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ")
            ),
            PatternError::AttentionWithMla => "Not supported to have both Attention and MLA/DSA in one model".to_string(),
            PatternError::MtpDiffer { index, first, other } => format!(
                "All MTP patterns must be identical. Pattern 1 is '{first}', but pattern {index} is '{other}'. Full pattern: '{pattern}'"
            ),
        }
    }
}

/// Runs of equal symbols, `|` skipped.
fn runs(s: &str) -> Vec<(u8, u64)> {
    let mut out: Vec<(u8, u64)> = Vec::new();
    for b in s.bytes().filter(|&b| b != b'|') {
        match out.last_mut() {
            Some((sym, n)) if *sym == b => *n += 1,
            _ => out.push((b, 1)),
        }
    }
    out
}

/// `_validate_pattern`: every character a layer symbol (or `|` where allowed), then no `*` beside `D` or `+`.
fn validate(s: &str, mtp: bool) -> Result<(), PatternError> {
    if let Some(symbol) = s.chars().find(|&c| !(LAYER_SYMBOLS.contains(c) || (c == '|' && !mtp))) {
        return Err(PatternError::Symbol { mtp, symbol });
    }
    if s.contains('*') && (s.contains('D') || s.contains('+')) {
        return Err(PatternError::AttentionWithMla);
    }
    Ok(())
}

impl HybridPattern {
    /// Parses and validates a pattern in Megatron's order: split on `/`; the main part (may be empty, may hold `|`);
    /// MTP parts that are all empty mean no MTP, else they must be identical strings (checked before their symbols)
    /// and hold layers only. Linear in the text's length; the caller bounds the length.
    pub fn parse(text: &str) -> Result<HybridPattern, PatternError> {
        let mut parts = text.split('/');
        let main = parts.next().unwrap_or("");
        validate(main, false)?;
        let mtp_parts: Vec<&str> = parts.collect();
        let (mtp, mtp_depths) = if mtp_parts.iter().all(|p| p.is_empty()) {
            (Vec::new(), 0)
        } else {
            let first = mtp_parts[0];
            if let Some((i, other)) = mtp_parts.iter().enumerate().find(|(_, p)| **p != first) {
                return Err(PatternError::MtpDiffer { index: i + 1, first: first.to_string(), other: other.to_string() });
            }
            validate(first, true)?;
            (runs(first), mtp_parts.len() as u64)
        };
        let segments = main.split('|').map(|s| s.len() as u64).collect();
        Ok(HybridPattern { text: text.to_string(), main: runs(main), segments, mtp, mtp_depths })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
    /// `get_hybrid_total_layer_count`: the main pattern's length without `|`.
    pub fn num_layers(&self) -> u64 {
        self.segments.iter().sum()
    }
    pub fn main_runs(&self) -> &[(u8, u64)] {
        &self.main
    }
    pub fn mtp_runs(&self) -> &[(u8, u64)] {
        &self.mtp
    }
    /// Layers in each `|`-separated segment (one entry when the pattern has no `|`).
    pub fn segments(&self) -> &[u64] {
        &self.segments
    }
    /// The number of MTP depths the pattern gives (`/`-separated parts), 0 without MTP.
    pub fn mtp_depths(&self) -> u64 {
        self.mtp_depths
    }
    /// Whether any layer (main or MTP) is `sym`.
    pub fn has(&self, sym: u8) -> bool {
        self.main.iter().chain(&self.mtp).any(|&(s, _)| s == sym)
    }
}

impl Serialize for HybridPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for HybridPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        HybridPattern::parse(&text).map_err(|e| serde::de::Error::custom(e.megatron_message(&text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megatron_documented_patterns() {
        // HybridModel docstring: "M-M-|M-M*-/MM/MM" has 9 layers in 2 segments and 2 MTP depths of "MM".
        let p = HybridPattern::parse("M-M-|M-M*-/MM/MM").unwrap();
        assert_eq!((p.num_layers(), p.segments(), p.mtp_depths()), (9, &[4, 5][..], 2));
        assert_eq!(p.mtp_runs(), &[(b'M', 2)]);
        // Trailing empty MTP parts mean no MTP; an empty main pattern has no layers.
        assert_eq!(HybridPattern::parse("M*M*//").unwrap().mtp_depths(), 0);
        assert_eq!(HybridPattern::parse("/MM/MM").unwrap().num_layers(), 0);
        assert_eq!(HybridPattern::parse("||M*").unwrap().segments(), &[0, 0, 2]);
    }

    #[test]
    fn megatron_rejections_in_its_order() {
        let err = |s: &str| HybridPattern::parse(s).unwrap_err().megatron_message(s);
        assert!(err("M*X*").starts_with("In main pattern, 'X' is not a valid layer symbol"));
        assert_eq!(err("MDM*-"), "Not supported to have both Attention and MLA/DSA in one model");
        // The identical-patterns check runs before the symbol check.
        assert_eq!(err("M*M*/MM/Ma"), "All MTP patterns must be identical. Pattern 1 is 'MM', but pattern 2 is 'Ma'. Full pattern: 'M*M*/MM/Ma'");
        assert_eq!(err("M*M*/MM/"), "All MTP patterns must be identical. Pattern 1 is 'MM', but pattern 2 is ''. Full pattern: 'M*M*/MM/'");
        assert!(err("M*M*/M|M/M|M").starts_with("In MTP pattern, '|' is not a valid layer symbol"));
        assert!(err("M*M*/Ma/Ma").starts_with("In MTP pattern, 'a' is not a valid layer symbol"));
    }
}
