//! Layer kinds: every decoder layer is a token mixer (none, attention, Mamba-2, Gated DeltaNet) followed by a
//! feed-forward block (none, dense MLP, MoE). A GPT layer is (attention, dense | MoE); a hybrid pattern's `M` is
//! (Mamba, none), `*` (attention, none), `-` (none, dense), `E` (none, MoE), `G` (Gated DeltaNet, none).
//!
//! A model holds a small table of the kinds it declares ([`KindTable`], each kind's parameters counted once) and its
//! layer sequence as runs of one kind ([`LayerRuns`]: computed from `moe_layer_freq` / `linear_attention_freq` or read
//! from the hybrid pattern, never one step per layer of an unvalidated count). [`LayerKinds`] indexes the runs so that
//! "how many layers of each kind in layers [a, b)" costs a binary search, as the search asks it per stage and chunk.

use super::{LayerParams, ModelConfig, MoeLayerFreq};
use serde::{Deserialize, Serialize};

/// The token mixer of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mixer {
    None,
    /// Self-attention as the model configures it: GQA / MHA, or MLA with `multi_latent_attention`.
    Attention,
    /// Mamba-2 (megatron/core/ssm/mamba_mixer.py MambaMixer).
    Mamba,
    /// Gated DeltaNet (megatron/core/ssm/gated_delta_net/gdn.py GatedDeltaNet).
    GatedDeltaNet,
    /// Sliding-window self-attention with its own heads, query groups and head width (`sliding_attention_setting`:
    /// Step-3.5-Flash's window layers, as Megatron Bridge's Step35DecoderLayer builds them).
    WindowAttention,
    /// DeepSeek-V4's hybrid attention on a layer of compress ratio 0: sliding-window MQA over the last
    /// `csa_window_size` tokens, no compressor (Megatron-Core DSv4HybridSelfAttention).
    Dsv4Window,
    /// DeepSeek-V4's Compressed Sparse Attention (compress ratio 4): the window plus the indexer's top-k of the
    /// keys a compressor pools over overlapping blocks of 4 tokens.
    Dsv4Csa,
    /// DeepSeek-V4's Heavily Compressed Attention (compress ratio 128): the window plus every compressed key.
    Dsv4Hca,
}

impl Mixer {
    /// Self-attention of any shape: the model's, the window layers' own, or DeepSeek-V4's hybrid attention.
    pub const fn is_attention(self) -> bool {
        matches!(self, Mixer::Attention | Mixer::WindowAttention | Mixer::Dsv4Window | Mixer::Dsv4Csa | Mixer::Dsv4Hca)
    }

    /// DeepSeek-V4's hybrid attention, of any compress ratio.
    pub const fn is_dsv4(self) -> bool {
        matches!(self, Mixer::Dsv4Window | Mixer::Dsv4Csa | Mixer::Dsv4Hca)
    }

    /// The DeepSeek-V4 mixer of a layer of compress ratio `ratio` (Megatron Bridge's layer types: 0 sliding, 4 CSA,
    /// 128 HCA); `None` for another ratio.
    // Source: Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py _DSV4_LAYER_TYPE_TO_COMPRESS_RATIO.
    pub const fn of_compress_ratio(ratio: u64) -> Option<Mixer> {
        match ratio {
            0 => Some(Mixer::Dsv4Window),
            4 => Some(Mixer::Dsv4Csa),
            128 => Some(Mixer::Dsv4Hca),
            _ => None,
        }
    }

    /// The compress ratio of a DeepSeek-V4 mixer (0 for the others).
    pub const fn compress_ratio(self) -> u64 {
        match self {
            Mixer::Dsv4Csa => 4,
            Mixer::Dsv4Hca => 128,
            _ => 0,
        }
    }
}

/// The feed-forward block of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ffn {
    None,
    /// A dense MLP of `ffn_hidden_size`.
    Dense,
    /// Routed experts (and shared experts) of `moe_ffn_hidden_size`.
    Moe,
}

/// One kind of decoder layer: a mixer and a feed-forward block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LayerKind {
    pub mixer: Mixer,
    pub ffn: Ffn,
    /// A dense MLP's own width where layers differ (heterogeneous layers); 0: the model's `ffn_hidden_size`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ffn_width: u64,
}

fn is_zero(w: &u64) -> bool {
    *w == 0
}

impl LayerKind {
    pub const fn new(mixer: Mixer, ffn: Ffn) -> LayerKind {
        LayerKind { mixer, ffn, ffn_width: 0 }
    }

    /// A kind whose dense MLP is `width` wide (0: the model's `ffn_hidden_size`).
    pub const fn with_ffn_width(mixer: Mixer, ffn: Ffn, width: u64) -> LayerKind {
        LayerKind { mixer, ffn, ffn_width: width }
    }

    /// The kind one symbol of a Megatron-Core hybrid layer pattern builds; `None` for `|`, `/` and anything that is
    /// not a layer meshplan sizes (`D`, DSA attention, is a valid symbol meshplan does not size yet).
    // Source: megatron/core/models/hybrid/hybrid_layer_allocation.py `Symbols`; hybrid_block.py HybridStack: one
    // symbol is one layer, `*` / `+` attention only, `-` / `E` the MLP only.
    pub const fn from_symbol(c: u8) -> Option<LayerKind> {
        Some(match c {
            b'M' => LayerKind::new(Mixer::Mamba, Ffn::None),
            b'G' => LayerKind::new(Mixer::GatedDeltaNet, Ffn::None),
            // `+` is MLA: the same kind, with multi_latent_attention set (a pattern never mixes `*` with `+`).
            b'*' | b'+' => LayerKind::new(Mixer::Attention, Ffn::None),
            b'-' => LayerKind::new(Mixer::None, Ffn::Dense),
            b'E' => LayerKind::new(Mixer::None, Ffn::Moe),
            _ => return None,
        })
    }

    /// No mixer and no feed-forward block: what a symbol meshplan does not size stands for (no parameters).
    pub const EMPTY: LayerKind = LayerKind::new(Mixer::None, Ffn::None);

    /// [`LayerKind::from_symbol`], or [`LayerKind::EMPTY`] for a symbol meshplan does not size (the model reader
    /// reports it).
    pub const fn of_symbol(c: u8) -> LayerKind {
        match LayerKind::from_symbol(c) {
            Some(k) => k,
            None => LayerKind::EMPTY,
        }
    }

    /// The layer as Megatron-Core's hybrid layer pattern writes it: the mixer's symbol (`*` attention, `+` with `mla`,
    /// `M` Mamba-2, `G` Gated DeltaNet) then the feed-forward block's (`-` dense MLP, `E` MoE). A GPT layer is two
    /// pattern symbols ("*-", "+E"), a hybrid pattern's layer one; an empty kind is "".
    // Source: megatron/core/models/hybrid/hybrid_layer_allocation.py `Symbols` (one symbol per sub-layer).
    pub fn symbols(self, mla: bool) -> String {
        let mixer = match self.mixer {
            Mixer::None => "",
            Mixer::Attention if mla => "+",
            // DeepSeek-V4's hybrid attention is MLA-derived (Megatron Bridge sets multi_latent_attention).
            Mixer::Dsv4Window | Mixer::Dsv4Csa | Mixer::Dsv4Hca => "+",
            Mixer::Attention | Mixer::WindowAttention => "*",
            Mixer::Mamba => "M",
            Mixer::GatedDeltaNet => "G",
        };
        let ffn = match self.ffn {
            Ffn::None => "",
            Ffn::Dense => "-",
            Ffn::Moe => "E",
        };
        format!("{mixer}{ffn}")
    }

    /// A short readable name: "attention + MoE", "Mamba-2", "dense MLP".
    pub fn name(self) -> String {
        let mixer = match self.mixer {
            Mixer::None => "",
            Mixer::Attention => "attention",
            Mixer::WindowAttention => "window attention",
            Mixer::Dsv4Window => "sliding attention (ratio 0)",
            Mixer::Dsv4Csa => "CSA (ratio 4)",
            Mixer::Dsv4Hca => "HCA (ratio 128)",
            Mixer::Mamba => "Mamba-2",
            Mixer::GatedDeltaNet => "Gated DeltaNet",
        };
        let ffn = match self.ffn {
            Ffn::None => "",
            Ffn::Dense => "dense MLP",
            Ffn::Moe => "MoE",
        };
        match (mixer.is_empty(), ffn.is_empty()) {
            (false, false) => format!("{mixer} + {ffn}"),
            (true, false) => ffn.to_string(),
            (false, true) => mixer.to_string(),
            (true, true) => "empty".to_string(),
        }
    }
}

/// The most distinct layer kinds a model's table holds (limits.rs).
pub use crate::limits::MAX_LAYER_KINDS;

/// Layers per kind, indexed like the model's [`KindTable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCounts(pub [u64; MAX_LAYER_KINDS]);

impl KindCounts {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub fn get(&self, index: usize) -> u64 {
        self.0.get(index).copied().unwrap_or(0)
    }
    fn add(&mut self, index: usize, n: u64) {
        if let Some(c) = self.0.get_mut(index) {
            *c = c.saturating_add(n);
        }
    }
    /// Adds `other`'s layers kind by kind.
    pub fn add_all(&mut self, other: &KindCounts) {
        for (c, n) in self.0.iter_mut().zip(other.0) {
            *c = c.saturating_add(n);
        }
    }
}

/// The kinds a model declares, in a fixed order (mixer, then feed-forward block), each with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindTable {
    kinds: [LayerKind; MAX_LAYER_KINDS],
    params: [LayerParams; MAX_LAYER_KINDS],
    len: usize,
}

impl KindTable {
    /// The declared kinds, sorted, each once.
    fn of(m: &ModelConfig) -> KindTable {
        let mut t = KindTable {
            kinds: [LayerKind::EMPTY; MAX_LAYER_KINDS],
            params: [LayerParams::default(); MAX_LAYER_KINDS],
            len: 0,
        };
        m.for_each_declared_kind(|k| {
            if t.index_of(k).is_none() && t.len < MAX_LAYER_KINDS {
                t.kinds[t.len] = k;
                t.len += 1;
            }
        });
        t.kinds[..t.len].sort_unstable();
        for i in 0..t.len {
            t.params[i] = m.params_of(t.kinds[i]);
        }
        t
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn kinds(&self) -> &[LayerKind] {
        &self.kinds[..self.len]
    }
    /// Parameters of each kind, in table order.
    pub fn params(&self) -> &[LayerParams] {
        &self.params[..self.len]
    }
    pub fn index_of(&self, kind: LayerKind) -> Option<usize> {
        self.kinds().iter().position(|&k| k == kind)
    }
}

/// The multi-token-prediction block: `depths` modules of the same layers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mtp {
    /// `mtp_num_layers`: prediction depths, each run once per step.
    pub depths: u64,
    /// Depths with weights of their own: every depth, or one with `mtp_use_repeated_layer`.
    pub weight_copies: u64,
    /// The layers of one depth, by kind.
    pub layers: KindCounts,
    /// One depth's parameters: its layers plus enorm, hnorm, eh_proj (2h → h) and its final norm.
    pub params: LayerParams,
}

/// What a model's layers add up to, without allocating: the kind table, the decoder layers per kind, and MTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindTotals {
    pub table: KindTable,
    /// Decoder layers of each kind.
    pub decoder: KindCounts,
    pub mtp: Mtp,
}

impl KindTotals {
    /// Decoder layers of the kinds `which` accepts.
    pub fn decoder_where(&self, which: impl Fn(LayerKind) -> bool) -> u64 {
        self.table.kinds().iter().enumerate().filter(|(_, k)| which(**k)).map(|(i, _)| self.decoder.get(i)).sum()
    }
    /// Layers run per step of the kinds `which` accepts: the decoder's and each MTP depth's.
    pub fn run_where(&self, which: impl Fn(LayerKind) -> bool) -> u64 {
        let k = self.table.kinds();
        let mtp: u64 = k.iter().enumerate().filter(|(_, k)| which(**k)).map(|(i, _)| self.mtp.layers.get(i)).sum();
        self.decoder_where(which).saturating_add(mtp.saturating_mul(self.mtp.depths))
    }
}

/// Layers `start..start + count` that fall in the first `edges.0` or the last `edges.1` layers of a `total`-layer
/// model, as (from, count) ranges; a layer in both is counted once (in the first).
pub fn edge_ranges(start: u64, count: u64, total: u64, edges: (u64, u64)) -> [(u64, u64); 2] {
    let (first, last) = edges;
    let end = start.saturating_add(count);
    let head = (start, end.min(first).saturating_sub(start));
    let tail_start = start.max(total.saturating_sub(last).max(first));
    [head, (tail_start, end.saturating_sub(tail_start))]
}

/// The layer sequence of a model, indexed: per-kind layer counts of any range in O(log runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerKinds {
    pub totals: KindTotals,
    /// Exclusive end of each run, ascending.
    ends: Vec<u64>,
    /// Table index of each run's kind.
    run_kind: Vec<u8>,
    /// `prefix[r * K + k]`: layers of kind k in the runs before run r (K = the table's length).
    prefix: Vec<u64>,
}

impl LayerKinds {
    fn of(m: &ModelConfig) -> LayerKinds {
        let totals = m.kind_totals();
        let k = totals.table.len().max(1);
        let (mut ends, mut run_kind, mut prefix) = (Vec::new(), Vec::new(), vec![0; k]);
        let mut end = 0u64;
        for (kind, n) in m.layer_runs() {
            let row = prefix.len() - k;
            prefix.extend_from_within(row..);
            // Every run's kind is declared (the table is built from the same source); a kind missing from it would
            // keep its layers' positions but count them under no kind.
            let i = totals.table.index_of(kind);
            if let Some(i) = i {
                let cell = prefix.len() - k + i;
                prefix[cell] += n;
            }
            end += n;
            ends.push(end);
            run_kind.push(i.map_or(u8::MAX, |i| i as u8));
        }
        LayerKinds { totals, ends, run_kind, prefix }
    }

    /// Layers of each kind among the `count` layers from `start` (clipped to the model).
    pub fn counts_in(&self, start: u64, count: u64) -> KindCounts {
        let end = start.saturating_add(count);
        let (mut hi, lo) = (self.before(end), self.before(start.min(end)));
        for (h, l) in hi.0.iter_mut().zip(lo.0) {
            *h -= l;
        }
        hi
    }

    /// Layers of each kind among the `count` layers from `start` that are among the first `edges.0` or the last
    /// `edges.1` of the model's `total` (the layers Megatron keeps in BF16 under FP8 / FP4).
    pub fn edge_counts_in(&self, start: u64, count: u64, total: u64, edges: (u64, u64)) -> KindCounts {
        let [(a, n), (b, m)] = edge_ranges(start, count, total, edges);
        let mut out = self.counts_in(a, n);
        out.add_all(&self.counts_in(b, m));
        out
    }

    /// Layers of each kind in [0, x).
    fn before(&self, x: u64) -> KindCounts {
        let k = self.totals.table.len().max(1);
        // The run holding layer x (the first whose end is past x); runs before it count whole.
        let r = self.ends.partition_point(|&e| e <= x);
        let mut out = KindCounts::default();
        for (i, c) in self.prefix.get(r * k..(r + 1) * k).unwrap_or_default().iter().enumerate() {
            out.add(i, *c);
        }
        if let Some(&kind) = self.run_kind.get(r) {
            let start = r.checked_sub(1).map_or(0, |q| self.ends[q]);
            out.add(kind as usize, x - start);
        }
        out
    }
}

/// The decoder layers as runs of one kind, in model order.
pub struct LayerRuns<'a> {
    m: &'a ModelConfig,
    next: u64,
    /// The next run of the hybrid pattern, when the model has one.
    hybrid: usize,
}

impl Iterator for LayerRuns<'_> {
    type Item = (LayerKind, u64);

    fn next(&mut self) -> Option<(LayerKind, u64)> {
        if let Some(p) = &self.m.hybrid_layer_pattern {
            let &(symbol, n) = p.main_runs().get(self.hybrid)?;
            self.hybrid += 1;
            return Some((LayerKind::of_symbol(symbol), n));
        }
        if let Some(layers) = &self.m.heterogeneous_layers {
            // One entry per layer (the reader bounds the list by num_layers); a run is equal neighbours.
            let start = usize::try_from(self.next).ok()?;
            let first = layers.get(start)?.kind();
            let n = layers[start..].iter().take_while(|l| l.kind() == first).count() as u64;
            self.next += n;
            return Some((first, n));
        }
        let left = self.m.num_layers.checked_sub(self.next).filter(|&n| n > 0)?;
        let (mixer, a) = self.m.mixer_run_at(self.next);
        let (ffn, b) = self.m.ffn_run_at(self.next);
        let (width, c) = self.m.width_run_at(self.next, ffn);
        let n = a.min(b).min(c).min(left).max(1);
        self.next += n;
        Some((LayerKind::with_ffn_width(mixer, ffn, width), n))
    }
}

/// DeepSeek-V4's mixer at layer `i` from `csa_compress_ratios` and how many layers from `i` share its ratio (the
/// reader bounds the list by the layer count and checks each ratio).
fn dsv4_run_at(ratios: &[u64], i: u64, rest: u64) -> (Mixer, u64) {
    let i_usize = usize::try_from(i).unwrap_or(usize::MAX);
    let Some(&r) = ratios.get(i_usize) else { return (Mixer::Dsv4Window, rest) };
    let same = ratios[i_usize..].iter().take_while(|&&x| x == r).count() as u64;
    (Mixer::of_compress_ratio(r).unwrap_or(Mixer::Dsv4Window), same.min(rest).max(1))
}

/// The length of the run of equal flags from `i` in a 0/1 list; entries past its end read as 0.
fn flag_run(list: &[u8], i: u64, total: u64) -> (bool, u64) {
    let i_usize = usize::try_from(i).unwrap_or(usize::MAX);
    let Some(&first) = list.get(i_usize) else { return (false, total.saturating_sub(i)) };
    let on = first != 0;
    let same = list[i_usize..].iter().take_while(|&&v| (v != 0) == on).count() as u64;
    // Past the list's end every layer reads 0: an "off" run continues to the model's end.
    let tail = if !on && i_usize + same as usize == list.len() { total.saturating_sub(list.len() as u64) } else { 0 };
    (on, same + tail)
}

impl ModelConfig {
    /// The decoder layers as runs of one kind.
    pub fn layer_runs(&self) -> LayerRuns<'_> {
        LayerRuns { m: self, next: 0, hybrid: 0 }
    }

    /// The kind of layer `index` (0-based).
    pub fn layer_kind(&self, index: u64) -> LayerKind {
        if let Some(p) = &self.hybrid_layer_pattern {
            let mut start = 0u64;
            for &(symbol, n) in p.main_runs() {
                if index < start + n {
                    return LayerKind::of_symbol(symbol);
                }
                start += n;
            }
            return LayerKind::EMPTY;
        }
        if let Some(layers) = &self.heterogeneous_layers {
            return layers.get(usize::try_from(index).unwrap_or(usize::MAX)).map_or(LayerKind::EMPTY, |l| l.kind());
        }
        let ffn = self.ffn_run_at(index).0;
        LayerKind::with_ffn_width(self.mixer_run_at(index).0, ffn, self.width_run_at(index, ffn).0)
    }

    /// The first of the double-wide layers: Gemma 4's KV-shared layers with `use_double_wide_mlp` (a GPT model's).
    fn double_wide_from(&self) -> Option<u64> {
        let on = self.use_double_wide_mlp && self.num_kv_shared_layers > 0 && self.hybrid_layer_pattern.is_none() && self.heterogeneous_layers.is_none();
        on.then(|| self.num_layers.saturating_sub(self.num_kv_shared_layers))
    }

    /// The own width of layer `i`'s dense MLP (0: `ffn_hidden_size`) and how many layers from `i` share it.
    // Source: Megatron Bridge modeling_gemma4.py _gemma4_dense_ffn_hidden_size (2 · ffn_hidden_size on the KV-shared
    // layers, layer_number − 1 ≥ num_layers − num_kv_shared_layers, when use_double_wide_mlp).
    fn width_run_at(&self, i: u64, ffn: Ffn) -> (u64, u64) {
        let rest = self.num_layers.saturating_sub(i);
        match self.double_wide_from() {
            Some(from) if i < from => (0, from - i),
            Some(_) if ffn == Ffn::Dense => (self.ffn_hidden_size.saturating_mul(2), rest),
            _ => (0, rest),
        }
    }

    /// The FFN of layer `i` and how many layers from `i` have it: `moe_layer_freq` as Megatron reads it.
    // Source: megatron/core/transformer/transformer_block.py / moe_utils `get_moe_layer_wise_logging` pattern:
    // moe_layer_freq = N makes layers 0, N, 2N, … MoE; a list gives one 0/1 per layer.
    fn ffn_run_at(&self, i: u64) -> (Ffn, u64) {
        let rest = self.num_layers.saturating_sub(i);
        if !self.is_moe() {
            return (Ffn::Dense, rest);
        }
        let (moe, n) = match &self.moe_layer_freq {
            MoeLayerFreq::Every(0) => (false, rest),
            MoeLayerFreq::Every(1) => (true, rest),
            MoeLayerFreq::Every(n) if i % n == 0 => (true, 1),
            MoeLayerFreq::Every(n) => (false, n - i % n),
            MoeLayerFreq::Pattern(p) => flag_run(p, i, self.num_layers),
        };
        (if moe { Ffn::Moe } else { Ffn::Dense }, n)
    }

    /// The mixer of layer `i` and how many layers from `i` have it: attention, or Gated DeltaNet where
    /// `experimental_attention_variant = "gated_delta_net"` and `linear_attention_freq` say so.
    // Source: megatron/core/models/gpt/experimental_attention_variant_module_specs.py (linear attention pattern):
    // an int N makes layer i linear unless (i + 1) % N == 0; a list gives 1 for linear attention, 0 for full.
    fn mixer_run_at(&self, i: u64) -> (Mixer, u64) {
        let rest = self.num_layers.saturating_sub(i);
        if let Some(ratios) = self.dsv4_ratios() {
            return dsv4_run_at(ratios, i, rest);
        }
        if self.window_shape_differs() {
            return self.window_run_at(i);
        }
        let freq = self.linear_attention_freq.as_ref().filter(|_| self.gated_delta_net_variant());
        let (linear, n) = match freq {
            None | Some(MoeLayerFreq::Every(0)) | Some(MoeLayerFreq::Every(1)) => (false, rest),
            Some(MoeLayerFreq::Every(n)) if (i + 1) % n == 0 => (false, 1),
            Some(MoeLayerFreq::Every(n)) => (true, n - 1 - i % n),
            Some(MoeLayerFreq::Pattern(p)) => flag_run(p, i, self.num_layers),
        };
        (if linear { Mixer::GatedDeltaNet } else { Mixer::Attention }, n)
    }

    /// Whether the window layers have an attention shape of their own ([`Mixer::WindowAttention`]): a
    /// `sliding_attention_setting` on a GQA model with a window and no Gated DeltaNet layers.
    pub fn window_shape_differs(&self) -> bool {
        self.sliding_attention_setting.is_some() && self.window_size.is_some() && !self.multi_latent_attention && !self.gated_delta_net_variant()
    }

    /// The mixer of layer `i` when the window layers have their own shape, and how many layers from `i` have it.
    // Source: megatron/core/transformer/utils.py is_layer_window_attention, as ModelConfig::is_window_layer reads it
    // (an int N: layer i full iff (i + 1) % N == 0; a list: 1 = window).
    fn window_run_at(&self, i: u64) -> (Mixer, u64) {
        let rest = self.num_layers.saturating_sub(i);
        let (window, n) = match &self.window_attn_skip_freq {
            None | Some(MoeLayerFreq::Every(0)) => (true, rest),
            Some(MoeLayerFreq::Every(1)) => (false, rest),
            Some(MoeLayerFreq::Every(n)) if (i + 1) % n == 0 => (false, 1),
            Some(MoeLayerFreq::Every(n)) => (true, n - 1 - i % n),
            Some(MoeLayerFreq::Pattern(p)) => flag_run(p, i, self.num_layers),
        };
        (if window { Mixer::WindowAttention } else { Mixer::Attention }, n)
    }

    /// Every kind the configuration declares: the hybrid pattern's symbols (main and MTP), or each GPT mixer with each
    /// FFN the model has.
    fn for_each_declared_kind(&self, mut f: impl FnMut(LayerKind)) {
        if let Some(p) = &self.hybrid_layer_pattern {
            for &(symbol, _) in p.main_runs().iter().chain(p.mtp_runs()) {
                f(LayerKind::of_symbol(symbol));
            }
            return;
        }
        if let Some(layers) = &self.heterogeneous_layers {
            for l in layers {
                f(l.kind());
            }
            return;
        }
        let ffns = [Some(Ffn::Dense), self.is_moe().then_some(Ffn::Moe)];
        if let Some(ratios) = self.dsv4_ratios() {
            // DeepSeek-V4: the mixers of the ratios its decoder and MTP layers use.
            for mixer in [Mixer::Dsv4Window, Mixer::Dsv4Csa, Mixer::Dsv4Hca] {
                if ratios.iter().any(|&r| Mixer::of_compress_ratio(r) == Some(mixer)) {
                    ffns.into_iter().flatten().for_each(|ffn| f(LayerKind::new(mixer, ffn)));
                }
            }
            return;
        }
        let linear = self.gated_delta_net_variant() && self.linear_attention_freq.is_some();
        let window = self.window_shape_differs().then_some(Mixer::WindowAttention);
        let wide = self.double_wide_from().map(|_| self.ffn_hidden_size.saturating_mul(2));
        for mixer in [Some(Mixer::Attention), linear.then_some(Mixer::GatedDeltaNet), window].into_iter().flatten() {
            for ffn in [Some(Ffn::Dense), self.is_moe().then_some(Ffn::Moe)].into_iter().flatten() {
                f(LayerKind::new(mixer, ffn));
            }
            if let Some(w) = wide {
                f(LayerKind::with_ffn_width(mixer, Ffn::Dense, w));
            }
        }
    }

    /// The kind table, the decoder layers per kind and the MTP block, in O(runs) and without allocating.
    pub fn kind_totals(&self) -> KindTotals {
        let table = KindTable::of(self);
        let mut decoder = KindCounts::default();
        for (kind, n) in self.layer_runs() {
            if let Some(i) = table.index_of(kind) {
                decoder.add(i, n);
            }
        }
        let mtp = self.mtp_block(&table);
        KindTotals { table, decoder, mtp }
    }

    /// The kinds with the layer sequence indexed for range counts ([`LayerKinds::counts_in`]); computed once by callers
    /// that size many layouts of one model.
    pub fn kinds(&self) -> LayerKinds {
        LayerKinds::of(self)
    }

    /// Whether `mtp_layer` names a kind the model declares (a GPT model's mixers × feed-forward blocks, or one of its
    /// heterogeneous layers' kinds); a hybrid model's MTP layers come from its pattern, never from `mtp_layer`.
    pub fn mtp_layer_usable(&self) -> bool {
        let Some(want) = self.mtp_layer else { return false };
        if self.hybrid_layer_pattern.is_some() {
            return false;
        }
        let mut found = false;
        self.for_each_declared_kind(|k| found |= k == want);
        found
    }

    /// The layer kind of a GPT model's MTP depth: `mtp_layer` where the model declares that kind, else a layer like
    /// the last decoder layer.
    // Source: gpt_layer_specs.py get_gpt_mtp_block_spec (spec.layer_specs[-1]); Megatron Bridge step35_bridge.py
    // _MTPDenseLayerSpecsList overrides that look-up with a dense layer spec.
    pub fn mtp_layer_kind(&self) -> LayerKind {
        // DeepSeek-V4: the MTP layer's attention is that of its own entry of csa_compress_ratios (after the decoder's).
        // Source: Megatron Bridge deepseek_v4_bridge.py _dsv4_compress_ratios (num_hidden_layers + MTP entries).
        if let Some(&r) = self.dsv4_ratios().and_then(|r| r.get(usize::try_from(self.num_layers).ok()?)) {
            let ffn = self.layer_kind(self.num_layers.saturating_sub(1)).ffn;
            return LayerKind::new(Mixer::of_compress_ratio(r).unwrap_or(Mixer::Dsv4Window), ffn);
        }
        match self.mtp_layer {
            Some(k) if self.mtp_layer_usable() => k,
            _ => self.layer_kind(self.num_layers.saturating_sub(1)),
        }
    }

    /// One MTP depth: the hybrid MTP pattern's layers, or (GPT) [`ModelConfig::mtp_layer_kind`]; plus enorm, hnorm,
    /// eh_proj and the depth's final norm.
    // Source: megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer (enorm, hnorm, eh_proj
    // 2h → h, column-parallel without bias, final_layernorm); gpt_layer_specs.py get_gpt_mtp_block_spec uses
    // spec.layer_specs[-1]; hybrid models build the MTP pattern's layers; mtp_use_repeated_layer shares one depth's
    // weights across depths.
    fn mtp_block(&self, table: &KindTable) -> Mtp {
        let mut layers = KindCounts::default();
        match &self.hybrid_layer_pattern {
            Some(p) => {
                for &(symbol, n) in p.mtp_runs() {
                    if let Some(i) = table.index_of(LayerKind::of_symbol(symbol)) {
                        layers.add(i, n);
                    }
                }
            }
            None => {
                if let Some(i) = table.index_of(self.mtp_layer_kind()) {
                    layers.add(i, 1);
                }
            }
        }
        let h = self.hidden_size as u128;
        let mut params = LayerParams::default();
        for (i, lp) in table.params().iter().enumerate() {
            let n = layers.get(i) as u128;
            params.tp_sharded += n * lp.tp_sharded;
            params.replicated += n * lp.replicated;
            params.routed_experts += n * lp.routed_experts;
            params.per_expert += n * lp.per_expert;
        }
        params.tp_sharded += 2 * h * h;
        params.replicated += 3 * self.norm_params(self.hidden_size) + self.hc_head_params();
        let depths = self.mtp_num_layers;
        let weight_copies = if self.mtp_use_repeated_layer { depths.min(1) } else { depths };
        Mtp { depths, weight_copies, layers, params }
    }
}

#[cfg(test)]
mod edge_tests {
    use super::edge_ranges;

    #[test]
    fn edge_layers_of_a_chunk() {
        // 80 layers, first 1 and last 1 in BF16: chunk 0..4 holds layer 0; chunk 76..80 holds layer 79; 40..44 neither.
        assert_eq!(edge_ranges(0, 4, 80, (1, 1)), [(0, 1), (79, 0)]);
        assert_eq!(edge_ranges(76, 4, 80, (1, 1)), [(76, 0), (79, 1)]);
        assert_eq!(edge_ranges(40, 4, 80, (1, 1)), [(40, 0), (79, 0)]);
        // Start and end ranges overlapping (3 layers, 2 + 2): counted once: layers 0, 1 from the start, 2 from the end.
        let [a, b] = edge_ranges(0, 3, 3, (2, 2));
        assert_eq!(a.1 + b.1, 3);
        // The whole model (the step-time model's call): Nemotron 3 Super's 88 layers, none at the start, 14 at the end.
        assert_eq!(edge_ranges(0, 88, 88, (0, 14)), [(0, 0), (74, 14)]);
    }
}
