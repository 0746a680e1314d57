//! `pipeline_model_parallel_layout`: the layers of every (pipeline rank, virtual chunk), read exactly as Megatron-Core's
//! `PipelineParallelLayerLayout` reads it (megatron/core/transformer/pipeline_parallel_layer_layout.py).
//!
//! The string form (`"Et*3|(tt|)*29,m|L"`): commas are deleted, then `(…)*n` is unrolled (no nesting: the group is
//! everything up to the first `)`), then `x*n` for any single character `x`, then the text is split on `|` into
//! stages of `E` embedding, `t` decoder, `m` MTP and `L` loss. The list form (`[["embedding", "decoder"], …]`) names
//! Megatron's `LayerType` members. Stage i of the flat list goes to pipeline rank i mod PP, virtual chunk i div PP, so
//! VPP = stages / PP. Every error is Megatron's, in Megatron's order; the only error of meshplan's own is a layout
//! too large for the model ([`LayoutError::TooLarge`]), found from the repetition counts before anything is unrolled.

use super::{Chunk, ChunkRef, Placement, StageSplit};
use crate::limits::{MAX_LAYOUT_CHARS, MAX_PIPELINE_STAGES};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The layout as the plan gives it: Megatron's string form or its list of lists. Kept as given, so the exports write
/// it back unchanged; [`split`] reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LayoutSpec {
    /// `"Et*4|(t*4|)*14tmL"`.
    Text(String),
    /// `[["embedding", "decoder"], ["decoder", "loss"]]`: one list per stage, as given (checked by [`split`]).
    List(Vec<Value>),
}

/// One entry of a stage: Megatron's `LayerType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Embedding,
    Loss,
    Encoder,
    Decoder,
    Mtp,
}

impl Slot {
    /// Megatron's `LayerType` member name (megatron/core/transformer/enums.py).
    pub fn name(self) -> &'static str {
        match self {
            Slot::Embedding => "embedding",
            Slot::Loss => "loss",
            Slot::Encoder => "encoder",
            Slot::Decoder => "decoder",
            Slot::Mtp => "mtp",
        }
    }

    /// The string form's letter (pipeline_parallel_layer_layout.py parse_str_to_list char2layer_type).
    pub fn letter(self) -> Option<char> {
        match self {
            Slot::Embedding => Some('E'),
            Slot::Loss => Some('L'),
            Slot::Decoder => Some('t'),
            Slot::Mtp => Some('m'),
            Slot::Encoder => None,
        }
    }

    fn from_letter(c: char) -> Option<Slot> {
        [Slot::Embedding, Slot::Loss, Slot::Decoder, Slot::Mtp].into_iter().find(|s| s.letter() == Some(c))
    }

    fn from_name(name: &str) -> Option<Slot> {
        [Slot::Embedding, Slot::Loss, Slot::Encoder, Slot::Decoder, Slot::Mtp].into_iter().find(|s| s.name() == name)
    }
}

/// Why a layout is rejected: Megatron's assertions in the order it makes them, and meshplan's size limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Larger than this model can use: `what` grew to `found` where at most `limit` is accepted.
    TooLarge { what: &'static str, found: u64, limit: u64 },
    /// A list-form row that is not a list (`kind` names what it is).
    NotListOfLists { kind: &'static str },
    /// A list-form element that is not a string.
    ElementType { kind: &'static str },
    /// A list-form string that names no `LayerType` (after strip and lowercase).
    NotLayerType { name: String },
    /// A string-form character other than E, L, t, m in `stage` of the unrolled text.
    Char { ch: char, stage: String, unrolled: String },
    StagesNotDivisible { stages: u64, pp: u64 },
    /// An explicit virtual_pipeline_model_parallel_size other than stages / PP.
    VppConflict { explicit: u64, detected: u64 },
    /// No entry at all (Megatron fails with an IndexError).
    Empty,
    FirstNotEmbedding { got: Slot },
    LastNotLoss { got: Slot },
    EmbeddingCount { found: u64 },
    LossCount { found: u64 },
    DecoderCount { found: u64, num_layers: u64 },
    MtpCount { found: u64, mtp_num_layers: u64 },
    MtpBeforeDecoder,
    /// `m` in a chunk other than its pipeline rank's last.
    MtpNotLastChunk { pp_rank: u64, vpp_rank: u64 },
    /// A rank's last chunk holds some MTP layers but not all.
    MtpSplit { pp_rank: u64, found: u64, mtp_num_layers: u64 },
    Encoder,
}

/// A valid layout: the split, and what the rules report about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutSplit {
    pub split: StageSplit,
    pub vpp: u64,
    /// The flat stage index of the `E` marker and of the `L` marker (the modules are built at (0, 0) and the last chunk
    /// whatever these are).
    pub embedding_stage: u64,
    pub loss_stage: u64,
    /// MTP on a pipeline rank other than the last (Megatron's `config.mtp_standalone`).
    pub mtp_standalone: bool,
}

/// The most entries and `|` a layout of this model can hold: its decoder and MTP layers, one embedding, one loss, and
/// a separator between each two of at most [`MAX_PIPELINE_STAGES`] stages. Any longer layout fails Megatron's counts.
pub fn max_entries(num_layers: u64, mtp_num_layers: u64) -> u64 {
    num_layers.saturating_add(mtp_num_layers).saturating_add(2).saturating_add(MAX_PIPELINE_STAGES - 1)
}

/// The number of stages (PP·VPP) the layout describes, or why it cannot be read.
pub fn stage_count(spec: &LayoutSpec, num_layers: u64, mtp_num_layers: u64) -> Result<u64, LayoutError> {
    let limit = max_entries(num_layers, mtp_num_layers);
    match spec {
        LayoutSpec::Text(text) => Ok(text_stages(text, limit)?.len() as u64),
        LayoutSpec::List(rows) => Ok(list_rows(rows, limit)?.len() as u64),
    }
}

/// The split a layout describes on `pp` pipeline ranks, checked as Megatron checks it; `explicit_vpp` is the plan's
/// virtual_pipeline_model_parallel_size when given.
// Source: pipeline_parallel_layer_layout.py __init__ (rows are lists, len % PP, LayerType names), transformer_config.py
// __post_init__ "PP layout" (the VPP conflict), then validate_layer_layout (checks 1–12 in order).
pub fn split(spec: &LayoutSpec, pp: u64, explicit_vpp: Option<u64>, num_layers: u64, mtp_num_layers: u64) -> Result<LayoutSplit, LayoutError> {
    let pp = pp.max(1);
    let limit = max_entries(num_layers, mtp_num_layers);
    let stages = match spec {
        LayoutSpec::Text(text) => {
            let stages = text_stages(text, limit)?;
            divides(stages.len() as u64, pp)?;
            stages
        }
        LayoutSpec::List(rows) => {
            let rows = list_rows(rows, limit)?;
            divides(rows.len() as u64, pp)?;
            list_slots(rows)?
        }
    };
    let vpp = stages.len() as u64 / pp;
    if let Some(v) = explicit_vpp.filter(|&v| v != vpp) {
        return Err(LayoutError::VppConflict { explicit: v, detected: vpp });
    }
    let mtp_stage = validate(&stages, pp, vpp, num_layers, mtp_num_layers)?;
    Ok(build(&stages, pp, vpp, mtp_stage))
}

fn divides(stages: u64, pp: u64) -> Result<(), LayoutError> {
    if stages % pp == 0 { Ok(()) } else { Err(LayoutError::StagesNotDivisible { stages, pp }) }
}

/// The string form unrolled and split into stages (parse_str_to_list).
fn text_stages(text: &str, limit: u64) -> Result<Vec<Vec<Slot>>, LayoutError> {
    let chars = text.chars().count();
    if chars > MAX_LAYOUT_CHARS {
        return Err(LayoutError::TooLarge { what: "characters", found: chars as u64, limit: MAX_LAYOUT_CHARS as u64 });
    }
    // 1. Commas are cosmetic and go first, so "t*2,3" reads as "t*23".
    let text: Vec<char> = text.chars().filter(|&c| c != ',').collect();
    // 2. `\(([^)]+)\)\*(\d+)`, then 3. `(.)\*(\d+)`, each as re.sub applies it: left to right, without overlaps.
    let text = unroll(&text, group_repeat, MAX_LAYOUT_CHARS as u64, "characters after unrolling (…)*n")?;
    let text = unroll(&text, char_repeat, limit, "entries after unrolling x*n (layers, E, L and |)")?;
    // Stages after the entries were bounded: at most `limit` of them, but the report keeps a bound of its own.
    let stages = text.iter().filter(|&&c| c == '|').count() as u64 + 1;
    if stages > MAX_PIPELINE_STAGES {
        return Err(LayoutError::TooLarge { what: "stages", found: stages, limit: MAX_PIPELINE_STAGES });
    }
    let mut out = Vec::with_capacity(stages as usize);
    for stage in text.split(|&c| c == '|') {
        let slots: Result<Vec<Slot>, char> = stage.iter().map(|&c| Slot::from_letter(c).ok_or(c)).collect();
        match slots {
            Ok(s) => out.push(s),
            Err(ch) => return Err(LayoutError::Char { ch, stage: stage.iter().collect(), unrolled: text.iter().collect() }),
        }
    }
    Ok(out)
}

/// A match of a repetition pattern at some position: the repeated text's range, the count, and where the match ends.
struct Repeat {
    body: std::ops::Range<usize>,
    times: u64,
    end: usize,
}

/// `\(([^)]+)\)\*(\d+)` at `i`: `(`, one or more characters up to the first `)`, then `*` and digits. `close[j]` is the
/// first `)` at or after j.
fn group_repeat(s: &[char], close: &[usize], i: usize) -> Option<Repeat> {
    if s[i] != '(' {
        return None;
    }
    let k = *close.get(i + 1)?;
    if k == i + 1 || k >= s.len() || s.get(k + 1) != Some(&'*') {
        return None;
    }
    let (times, end) = digits(s, k + 2)?;
    Some(Repeat { body: i + 1..k, times, end })
}

/// `(.)\*(\d+)` at `i`: any character but a newline (Python's `.`), `*`, digits.
fn char_repeat(s: &[char], _close: &[usize], i: usize) -> Option<Repeat> {
    if s[i] == '\n' || s.get(i + 1) != Some(&'*') {
        return None;
    }
    let (times, end) = digits(s, i + 2)?;
    Some(Repeat { body: i..i + 1, times, end })
}

/// The decimal number (`\d+`, greedy) at `from` and where it ends; saturates instead of growing.
// Megatron's `\d` also matches other scripts' digits (Python's str patterns are Unicode); meshplan reads ASCII digits
// only, so such a layout is rejected here with an invalid character where Megatron would accept it.
fn digits(s: &[char], from: usize) -> Option<(u64, usize)> {
    let mut end = from;
    let mut n: u64 = 0;
    while let Some(d) = s.get(end).and_then(|c| c.to_digit(10)) {
        n = n.saturating_mul(10).saturating_add(u64::from(d));
        end += 1;
    }
    (end > from).then_some((n, end))
}

/// One substitution pass of re.sub with `pattern`: the length of the result is summed from the repetition counts first
/// and must stay within `limit` (else [`LayoutError::TooLarge`] naming `what`); only then is it built.
fn unroll(s: &[char], pattern: fn(&[char], &[usize], usize) -> Option<Repeat>, limit: u64, what: &'static str) -> Result<Vec<char>, LayoutError> {
    let mut close = vec![usize::MAX; s.len() + 1];
    for j in (0..s.len()).rev() {
        close[j] = if s[j] == ')' { j } else { close[j + 1] };
    }
    let scan = |visit: &mut dyn FnMut(Option<&Repeat>, usize)| {
        let mut i = 0;
        while i < s.len() {
            match pattern(s, &close, i) {
                Some(r) => {
                    visit(Some(&r), i);
                    i = r.end;
                }
                None => {
                    visit(None, i);
                    i += 1;
                }
            }
        }
    };
    let mut length: u64 = 0;
    scan(&mut |r, _| length = length.saturating_add(r.map_or(1, |r| (r.body.len() as u64).saturating_mul(r.times))));
    if length > limit {
        return Err(LayoutError::TooLarge { what, found: length, limit });
    }
    let mut out = Vec::with_capacity(length as usize);
    scan(&mut |r, i| match r {
        Some(r) => (0..r.times).for_each(|_| out.extend_from_slice(&s[r.body.clone()])),
        None => out.push(s[i]),
    });
    Ok(out)
}

/// The list form's rows, each a list, within the size limits (checked before any row is read).
fn list_rows(rows: &[Value], limit: u64) -> Result<&[Value], LayoutError> {
    if let Some(row) = rows.iter().find(|r| !r.is_array()) {
        return Err(LayoutError::NotListOfLists { kind: python_type(row) });
    }
    if rows.len() as u64 > MAX_PIPELINE_STAGES {
        return Err(LayoutError::TooLarge { what: "stages", found: rows.len() as u64, limit: MAX_PIPELINE_STAGES });
    }
    let entries: u64 = rows.iter().map(|r| r.as_array().map_or(0, Vec::len) as u64).sum();
    let separators = (rows.len() as u64).saturating_sub(1);
    if entries.saturating_add(separators) > limit {
        return Err(LayoutError::TooLarge { what: "entries (layers, embedding, loss and stage boundaries)", found: entries + separators, limit });
    }
    Ok(rows)
}

/// The list form's names as `LayerType`s: `str.strip().lower()` must name a member. ASCII lower-casing gives the
/// same member as Python's full Unicode `lower()`: no non-ASCII character lower-cases into a member's letters (the
/// Kelvin sign becomes `k`, the dotted I `i̇`), and it keeps Unicode's case tables out of the page's wasm.
fn list_slots(rows: &[Value]) -> Result<Vec<Vec<Slot>>, LayoutError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut stage = Vec::new();
        for v in row.as_array().map(Vec::as_slice).unwrap_or_default() {
            let Value::String(s) = v else { return Err(LayoutError::ElementType { kind: python_type(v) }) };
            let name = s.trim().to_ascii_lowercase();
            stage.push(Slot::from_name(&name).ok_or(LayoutError::NotLayerType { name })?);
        }
        out.push(stage);
    }
    Ok(out)
}

/// The Python type a JSON value becomes, as Megatron's messages name it.
fn python_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// validate_layer_layout's checks in order; the flat stage index holding the MTP layers, if any.
// The flattened layout (vpp-major, pp inner) is the flat stage list in its own order: flat[vpp·PP + pp].
fn validate(stages: &[Vec<Slot>], pp: u64, vpp: u64, num_layers: u64, mtp: u64) -> Result<Option<usize>, LayoutError> {
    let flat = || stages.iter().flatten().copied();
    let count = |slot: Slot| flat().filter(|&s| s == slot).count() as u64;
    let (Some(first), Some(last)) = (flat().next(), flat().last()) else { return Err(LayoutError::Empty) };
    if first != Slot::Embedding {
        return Err(LayoutError::FirstNotEmbedding { got: first });
    }
    if last != Slot::Loss {
        return Err(LayoutError::LastNotLoss { got: last });
    }
    match (count(Slot::Embedding), count(Slot::Loss)) {
        (1, 1) => {}
        (1, found) => return Err(LayoutError::LossCount { found }),
        (found, _) => return Err(LayoutError::EmbeddingCount { found }),
    }
    let decoders = count(Slot::Decoder);
    if decoders != num_layers {
        return Err(LayoutError::DecoderCount { found: decoders, num_layers });
    }
    let mtps = count(Slot::Mtp);
    if mtps != mtp {
        return Err(LayoutError::MtpCount { found: mtps, mtp_num_layers: mtp });
    }
    if flat().skip_while(|&s| s != Slot::Mtp).any(|s| s == Slot::Decoder) {
        return Err(LayoutError::MtpBeforeDecoder);
    }
    let at = |p: u64, v: u64| &stages[(v * pp + p) as usize];
    let mut mtp_stage = None;
    for p in 0..pp {
        if let Some(v) = (0..vpp - 1).find(|&v| at(p, v).contains(&Slot::Mtp)) {
            return Err(LayoutError::MtpNotLastChunk { pp_rank: p, vpp_rank: v });
        }
    }
    for p in 0..pp {
        let found = at(p, vpp - 1).iter().filter(|&&s| s == Slot::Mtp).count() as u64;
        if found > 0 && found != mtp {
            return Err(LayoutError::MtpSplit { pp_rank: p, found, mtp_num_layers: mtp });
        }
        if found > 0 {
            mtp_stage = Some(((vpp - 1) * pp + p) as usize);
        }
    }
    if count(Slot::Encoder) > 0 {
        return Err(LayoutError::Encoder);
    }
    Ok(mtp_stage)
}

/// The split of a valid layout: each chunk's decoder layers from the count of all earlier ones in flat order
/// (get_layer_offset), and where the MTP block sits.
fn build(stages: &[Vec<Slot>], pp: u64, vpp: u64, mtp_stage: Option<usize>) -> LayoutSplit {
    let chunk_of = |i: usize| ChunkRef { pipeline_rank: i as u64 % pp, virtual_rank: i as u64 / pp };
    let mut out: Vec<Vec<Chunk>> = (0..pp).map(|_| Vec::with_capacity(vpp as usize)).collect();
    let mut next = 0u64;
    for (i, stage) in stages.iter().enumerate() {
        let count = stage.iter().filter(|&&s| s == Slot::Decoder).count() as u64;
        let at = chunk_of(i);
        out[at.pipeline_rank as usize].push(Chunk { virtual_rank: at.virtual_rank, start: next, count });
        next += count;
    }
    let mut placement = Placement::default_for(pp, vpp);
    if let Some(i) = mtp_stage {
        placement.mtp = Some(chunk_of(i));
    }
    let marker = |slot: Slot| stages.iter().position(|s| s.contains(&slot)).unwrap_or(0) as u64;
    LayoutSplit {
        split: StageSplit { stages: out, placement },
        vpp,
        embedding_stage: marker(Slot::Embedding),
        loss_stage: marker(Slot::Loss),
        mtp_standalone: mtp_stage.is_some_and(|i| chunk_of(i).pipeline_rank != pp - 1),
    }
}

/// The layout in Megatron's string form (what `--pipeline-model-parallel-layout` takes): the string as given, or the
/// list form written as letters. None for a list form with an encoder or an unreadable row (a rejected layout).
pub fn as_text(spec: &LayoutSpec) -> Option<String> {
    match spec {
        LayoutSpec::Text(t) => Some(t.clone()),
        LayoutSpec::List(rows) => {
            let slots = list_slots(rows).ok()?;
            let stages: Option<Vec<String>> = slots.iter().map(|s| s.iter().map(|x| x.letter()).collect()).collect();
            Some(stages?.join("|"))
        }
    }
}

/// The list form's stages as `LayerType` names, normalized (stripped, lowercased), for writing back as Python or Hydra.
pub fn list_names(spec: &LayoutSpec) -> Option<Vec<Vec<&'static str>>> {
    match spec {
        LayoutSpec::Text(_) => None,
        LayoutSpec::List(rows) => Some(list_slots(rows).ok()?.iter().map(|s| s.iter().map(|x| x.name()).collect()).collect()),
    }
}

/// A valid layout of `num_layers` decoder layers and `mtp_num_layers` MTP layers over `stages` stages, written in the
/// string form: the layers dealt as evenly as possible (the first `num_layers mod stages` stages take one more), `E`
/// in the first stage, the MTP layers and `L` in the last, runs of equal stages folded into `(…|)*n`. The fixes offer
/// it as the nearest layout of the right shape. `stages` is at most [`MAX_PIPELINE_STAGES`] here.
pub fn even_text(num_layers: u64, mtp_num_layers: u64, stages: u64) -> String {
    let stages = stages.clamp(1, MAX_PIPELINE_STAGES);
    let (base, extra) = (num_layers / stages, num_layers % stages);
    let run = |n: u64| match n {
        0 => String::new(),
        1 => "t".to_string(),
        n => format!("t*{n}"),
    };
    let stage = |i: u64| {
        let mut s = if i == 0 { "E".to_string() } else { String::new() };
        s.push_str(&run(base + u64::from(i < extra)));
        if i == stages - 1 {
            s.push_str(&match mtp_num_layers {
                0 => String::new(),
                1 => "m".into(),
                n => format!("m*{n}"),
            });
            s.push('L');
        }
        s
    };
    let mut out = String::new();
    let mut i = 0;
    while i < stages {
        let s = stage(i);
        let mut same = 1;
        while i + same < stages - 1 && i > 0 && stage(i + same) == s {
            same += 1;
        }
        if same > 1 {
            out.push_str(&format!("({s}|)*{same}"));
        } else if i == stages - 1 {
            out.push_str(&s);
        } else {
            out.push_str(&s);
            out.push('|');
        }
        i += same;
    }
    out
}
