//! The parallelism table: one row per field of the plan's `parallelism` section — its plan key (Megatron-Core's
//! field name), value kind and bounds, default and where Megatron Bridge's or Megatron-LM's differs, its Bridge config
//! path, its Megatron-LM flag, a short label and one line of help for the page, and its source. One macro turns the
//! rows into the typed [`Parallelism`] struct (the plan's, serialised in row order), its reader
//! ([`Parallelism::read`]) and the table [`PARALLELISM`]; the names ([`crate::names`]), the exports, the importers,
//! the page's fields and the Advisor's edits walk the rows. Each row is split at compile time into [`PARALLELISM`]
//! (what reading and the page's controls need) and [`PARALLELISM_DOCS`] (Megatron names, differing defaults, source;
//! [`ParSetting::doc`]), as [`crate::settings`] splits its rows, so the page's first render links no Bridge or
//! Megatron-LM name.
//!
//! Sources cited in the rows: ML = NVIDIA/Megatron-LM @ d98e8a64ddf3, MB = NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b.
//!
//! It imports `codes`, `diag`, `fields`, `layout` (the default order), `limits` and `pipeline::layout` (the layout's
//! spec); `plan` and `names` build on it.

use crate::fields::{Fields, short};
use crate::layout::{DEFAULT_ORDER, TP_PP_DP_ORDER};
use crate::limits::{MAX_LAYERS, MAX_LAYOUT_CHARS, MAX_PARALLEL};
use crate::pipeline::layout::LayoutSpec;
use crate::{Code, Diagnostic};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a Megatron-LM flag carries its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// `--flag VALUE`.
    Value,
    /// A `store_true` flag: the plan field is true when present.
    Flag,
    /// A `store_true` flag that sets the plan field false (`--disable-bias-linear`).
    FlagFalse,
}

/// One plan field and its names in Megatron Bridge and Megatron-LM.
#[derive(Clone, Copy, Debug)]
pub struct Name {
    /// The plan path, `section.field`.
    pub plan: &'static str,
    /// Megatron Bridge ConfigContainer paths, the first deciding when several are given.
    pub bridge: &'static [&'static str],
    /// The Megatron-LM flag and how it carries its value.
    pub mlm: Option<(&'static str, Arg)>,
}

/// What values a parallelism field takes (from the field's Rust type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer within the row's bounds.
    UInt,
    /// An integer within the row's bounds, or null (Megatron's None).
    OptUInt,
    Bool,
    /// true, false, or null (not given: the launcher decides).
    OptBool,
    /// Megatron-Core's rank order, a string.
    Order,
    /// Megatron-Core's `pipeline_model_parallel_layout`: its string form or its list of stage lists.
    Layout,
}

/// A boolean switch of Bridge and Megatron-LM that selects one value of a row (the row itself has no flag).
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// The value it selects, as the plan spells it.
    pub value: &'static str,
    pub bridge: &'static str,
    pub mlm: &'static str,
}

/// One row: what reading a plan and the page's controls need.
#[derive(Clone, Copy, Debug)]
pub struct ParSetting {
    /// The plan key in `parallelism` (Megatron-Core's field name).
    pub key: &'static str,
    /// `parallelism.<key>`.
    pub path: &'static str,
    pub kind: Kind,
    /// Inclusive bounds of an integer.
    pub bounds: Option<(u64, u64)>,
    /// Megatron-Core's default, as the plan spells it (what meshplan uses when the plan leaves the field out).
    pub default: &'static str,
    /// The short label the page and the exports' headers use (TP, PP, …).
    pub label: &'static str,
    /// One line on what Megatron does with it (the page's tooltip).
    pub help: &'static str,
    /// Whether the layout search chooses it (a candidate states it; the Advisor's Apply writes it), rather than keeping
    /// the plan's.
    pub searched: bool,
    // Its names in Megatron Bridge and Megatron-LM, differing defaults and source: `doc()`.
}

/// A row's names and documentation, kept apart from [`ParSetting`] (in [`PARALLELISM_DOCS`], row for row) so the
/// page's first render does not link them.
#[derive(Clone, Copy, Debug)]
pub struct ParDoc {
    /// The plan path and its Bridge path and Megatron-LM flag (the importers' mapping, the exports' names).
    pub name: Name,
    /// Whether the Bridge exports write None when the plan leaves the field unset (clearing a recipe's value).
    pub bridge_none: bool,
    /// A switch that selects a value of a row without a flag of its own (the order).
    pub switch: Option<Switch>,
    /// Whether the plan-file export leaves the field out at its default (a field later plans added: the files written
    /// before it keep reading the same).
    pub written_when_set: bool,
    /// Megatron-Core's field and default.
    pub megatron_core: &'static str,
    /// Where Megatron Bridge's or Megatron-LM's default differs, and which meshplan follows ("" if none).
    pub differs: &'static str,
    pub source: &'static str,
}

/// A row as the table writes it: [`ParSetting`] and [`ParDoc`] in one, split at compile time.
#[derive(Clone, Copy)]
struct Full {
    key: &'static str,
    path: &'static str,
    kind: Kind,
    bounds: Option<(u64, u64)>,
    default: &'static str,
    label: &'static str,
    help: &'static str,
    searched: bool,
    bridge: &'static [&'static str],
    bridge_none: bool,
    mlm: Option<(&'static str, Arg)>,
    switch: Option<Switch>,
    written_when_set: bool,
    megatron_core: &'static str,
    differs: &'static str,
    source: &'static str,
}

impl Full {
    const fn row(self) -> ParSetting {
        let Full { key, path, kind, bounds, default, label, help, searched, .. } = self;
        ParSetting { key, path, kind, bounds, default, label, help, searched }
    }

    const fn doc(self) -> ParDoc {
        let Full { path, bridge, mlm, bridge_none, switch, written_when_set, megatron_core, differs, source, .. } = self;
        ParDoc { name: Name { plan: path, bridge, mlm }, bridge_none, switch, written_when_set, megatron_core, differs, source }
    }
}

/// The fields every row shares unless it says otherwise.
const FULL_ROW: Full = Full {
    key: "",
    path: "",
    kind: Kind::UInt,
    bounds: None,
    default: "",
    label: "",
    help: "",
    searched: true,
    bridge: &[],
    bridge_none: false,
    mlm: None,
    switch: None,
    written_when_set: false,
    megatron_core: "",
    differs: "",
    source: "",
};

impl ParSetting {
    /// The row's names and documentation.
    pub fn doc(&self) -> &'static ParDoc {
        let i = PARALLELISM.iter().position(|r| r.key == self.key).unwrap_or(0);
        &PARALLELISM_DOCS[i]
    }

    /// The values it takes, in words.
    pub fn values(&self) -> String {
        let range = self.bounds.map_or(String::new(), |(lo, hi)| format!(", {lo} to {hi}"));
        match self.kind {
            Kind::UInt => format!("an integer{range}"),
            Kind::OptUInt => format!("an integer{range}, or null (Megatron's None)"),
            Kind::Bool => "true or false".into(),
            Kind::OptBool => "true, false or null".into(),
            Kind::Order => "a rank order such as tp-cp-ep-dp-pp".into(),
            Kind::Layout => "a layout string or a list of stage lists".into(),
        }
    }
}

/// The row of plan key `key` (in `parallelism`), or of its path `parallelism.<key>`.
pub fn row(key: &str) -> Option<&'static ParSetting> {
    PARALLELISM.iter().find(|r| r.key == key || r.path == key)
}

impl ParSetting {
    /// The row as `meshplan explain` prints it, as a setting's is printed (`settings::SettingRow::explain`): label and
    /// help, values, default, Megatron-Core's field, where a launcher's default differs, its Bridge and Megatron-LM
    /// names, and the source.
    pub fn explain(&self) -> String {
        let doc = self.doc();
        let bridge = doc.name.bridge.iter().map(|b| format!("cfg.{b}")).chain(doc.switch.map(|s| format!("cfg.{} (selects {})", s.bridge, s.value)));
        let bridge: Vec<String> = bridge.collect();
        let mlm = match doc.name.mlm {
            Some((f, Arg::Value)) => format!("{f} VALUE"),
            Some((f, Arg::Flag)) => format!("{f} (sets it true)"),
            Some((f, Arg::FlagFalse)) => format!("{f} (sets it false)"),
            None => doc.switch.map_or("none".into(), |s| format!("{} (selects {})", s.mlm, s.value)),
        };
        crate::fields::explain_text(
            &format!("{} (parallelism)\n\n{}: {}", self.path, self.label, self.help),
            &[
                ("Values:", self.values()),
                ("Default:", self.default.to_string()),
                ("Megatron-Core:", doc.megatron_core.to_string()),
                ("Defaults differ:", doc.differs.to_string()),
                ("Megatron Bridge:", if bridge.is_empty() { "none".into() } else { bridge.join(", ") }),
                ("Megatron-LM:", mlm),
                ("Source:", doc.source.to_string()),
            ],
        )
    }
}

// ---------------------------------------------------------------------------------------------------
// Value types
// ---------------------------------------------------------------------------------------------------

/// A Rust type a parallelism field is stored as: how it is read from the plan and written as plan JSON.
pub trait ParType: Sized {
    const KIND: Kind;
    /// The field `row` of `f`, or `default` when absent (an invalid value is a diagnostic and the default).
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self;
    fn to_json(&self) -> Value;
}

fn bounds(row: &ParSetting) -> (u64, u64) {
    row.bounds.unwrap_or((0, MAX_PARALLEL))
}

impl ParType for u64 {
    const KIND: Kind = Kind::UInt;
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        let (lo, hi) = bounds(row);
        f.uint(row.key, default, lo, hi)
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl ParType for Option<u64> {
    const KIND: Kind = Kind::OptUInt;
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        let (lo, hi) = bounds(row);
        f.opt_uint(row.key, lo, hi).or(default)
    }
    fn to_json(&self) -> Value {
        self.map_or(Value::Null, Value::from)
    }
}

impl ParType for bool {
    const KIND: Kind = Kind::Bool;
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        f.boolean(row.key, default)
    }
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ParType for Option<bool> {
    const KIND: Kind = Kind::OptBool;
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        f.opt_bool(row.key).or(default)
    }
    fn to_json(&self) -> Value {
        self.map_or(Value::Null, Value::Bool)
    }
}

impl ParType for String {
    const KIND: Kind = Kind::Order;
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        f.string(row.key).unwrap_or(default)
    }
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl ParType for Option<LayoutSpec> {
    const KIND: Kind = Kind::Layout;
    /// Megatron's string form (at most [`MAX_LAYOUT_CHARS`] characters) or its list of lists, kept as given; its
    /// meaning is checked when the plan is planned.
    fn read(f: &mut Fields, row: &'static ParSetting, default: Self) -> Self {
        let key = row.key;
        match f.raw(key) {
            None => default,
            Some(Value::String(s)) => {
                let chars = s.chars().count();
                if chars > MAX_LAYOUT_CHARS {
                    f.diags.push(Diagnostic::new(
                        Code::LayoutTooLarge,
                        format!("`parallelism.{key}` is {chars} characters long; the longest layout read is {MAX_LAYOUT_CHARS} (it was ignored)"),
                        "write the layout with (…)*n and x*n repetitions: a layout has one t per decoder layer, one m per MTP layer, E, L and | between stages",
                    ));
                    return default;
                }
                Some(LayoutSpec::Text(s.clone()))
            }
            Some(Value::Array(rows)) => Some(LayoutSpec::List(rows.clone())),
            Some(other) => {
                f.diags.push(Diagnostic::new(
                    Code::InvalidValue,
                    format!("`parallelism.{key}` must be a layout string such as \"Et*3|(tt|)*29,m|L\" or a list of stage lists, found {}", short(other)),
                    format!("set `parallelism.{key}` to Megatron's string form or list form (ignored meanwhile)"),
                ));
                default
            }
        }
    }
    fn to_json(&self) -> Value {
        match self {
            None => Value::Null,
            Some(LayoutSpec::Text(s)) => Value::from(s.as_str()),
            Some(LayoutSpec::List(rows)) => Value::Array(rows.clone()),
        }
    }
}

/// `expert_tensor_parallel_size`: Megatron-Core's default is TP (ML megatron/core/model_parallel_config.py
/// `__post_init__`: None → tensor_model_parallel_size); whether the plan gave it is kept beside it.
fn read_etp(f: &mut Fields, row: &'static ParSetting, p: &mut Parallelism) -> u64 {
    let given = <Option<u64> as ParType>::read(f, row, None);
    p.expert_tensor_parallel_size_defaulted = given.is_none();
    given.unwrap_or(p.tensor_model_parallel_size)
}

// ---------------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------------

/// One row of the macro: a table row (`{ field: value, … }`) or a field of the struct that is no input (`derived`).
macro_rules! full_row {
    ($key:ident, $ty:ty, derived) => {
        None
    };
    ($key:ident, $ty:ty, { $($field:ident : $value:expr),* $(,)? }) => {
        Some(Full {
            key: stringify!($key),
            path: concat!("parallelism.", stringify!($key)),
            kind: <$ty as ParType>::KIND,
            $($field: $value,)*
            ..FULL_ROW
        })
    };
}

/// Reads one field into `p` (a derived field is set by the reader of the row it derives from).
macro_rules! read_row {
    ($f:ident, $p:ident, $key:ident, $ty:ty, $default:expr, derived) => {};
    ($f:ident, $p:ident, $key:ident, $ty:ty, $default:expr, { $($body:tt)* }, $read:path) => {
        if let Some(r) = row(stringify!($key)) {
            let v: $ty = $read($f, r, &mut $p);
            $p.$key = v;
        }
    };
    ($f:ident, $p:ident, $key:ident, $ty:ty, $default:expr, { $($body:tt)* }) => {
        if let Some(r) = row(stringify!($key)) {
            $p.$key = <$ty as ParType>::read($f, r, $default);
        }
    };
}

/// Each row `key: Type = default { … };` becomes a field of [`Parallelism`] with that type and default and a row of
/// [`PARALLELISM`] (in the same order) whose kind comes from the type; `=> reader` reads it with a function of its
/// own; a `derived` row is a field of the struct only.
macro_rules! parallelism {
    ($($(#[$attr:meta])* $key:ident : $ty:ty = $default:expr $(=> $read:path)?, $body:tt;)*) => {
        /// The plan's parallel layout: one field per row of [`PARALLELISM`], with Megatron-Core's names.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub struct Parallelism {
            $($(#[$attr])* pub $key: $ty,)*
        }

        impl Default for Parallelism {
            /// Megatron-Core's defaults.
            fn default() -> Self {
                Parallelism { $($key: $default,)* }
            }
        }

        const ALL: &[Option<Full>] = &[$(full_row!($key, $ty, $body)),*];

        impl Parallelism {
            /// Reads every row from the `parallelism` section, in row order; a wrong type or an out-of-range value is
            /// an `invalid-value` diagnostic and the default.
            pub fn read(f: &mut Fields) -> Parallelism {
                let mut p = Parallelism::default();
                $(read_row!(f, p, $key, $ty, $default, $body $(, $read)?);)*
                p
            }

            /// The value of field `key` as plan JSON (None for a key that is not a field).
            pub fn get(&self, key: &str) -> Option<Value> {
                match key {
                    $(stringify!($key) => Some(ParType::to_json(&self.$key)),)*
                    _ => None,
                }
            }
        }
    };
}

/// The number of table rows among `all`.
const fn count(all: &[Option<Full>]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < all.len() {
        if all[i].is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The table rows among `all`, split into their two halves.
const fn split<const N: usize>(all: &[Option<Full>]) -> ([ParSetting; N], [ParDoc; N]) {
    let mut rows = [FULL_ROW.row(); N];
    let mut docs = [FULL_ROW.doc(); N];
    let (mut i, mut j) = (0, 0);
    while i < all.len() {
        if let Some(r) = all[i] {
            rows[j] = r.row();
            docs[j] = r.doc();
            j += 1;
        }
        i += 1;
    }
    (rows, docs)
}

const N: usize = count(ALL);
const SPLIT: ([ParSetting; N], [ParDoc; N]) = split::<N>(ALL);
// Each half a constant of its own: a reference to a field of SPLIT (`&SPLIT.0`) is promoted as the whole tuple, so
// the page's wasm carried every row's documentation beside the rows (about 2 KB gzipped, docs/web.md "What went").
const ROWS: [ParSetting; N] = SPLIT.0;
const DOCS: [ParDoc; N] = SPLIT.1;
/// The parallelism table: one row per input field of [`Parallelism`], in field order.
pub const PARALLELISM: &[ParSetting] = &ROWS;
/// Each row's names and documentation, in [`PARALLELISM`]'s order ([`ParSetting::doc`]).
pub const PARALLELISM_DOCS: &[ParDoc] = &DOCS;

const ML_MPC: &str = "ML megatron/core/model_parallel_config.py (ModelParallelConfig)";
const ML_TC: &str = "ML megatron/core/transformer/transformer_config.py (TransformerConfig)";
const SIZE: Option<(u64, u64)> = Some((1, MAX_PARALLEL));
const LAYERS: Option<(u64, u64)> = Some((0, MAX_LAYERS));

parallelism! {
    tensor_model_parallel_size: u64 = 1, {
        bounds: SIZE,
        default: "1",
        label: "TP",
        help: "tensor parallelism: splits every layer's matrices; keep it inside an NVLink domain",
        bridge: &["model.tensor_model_parallel_size"],
        mlm: Some(("--tensor-model-parallel-size", Arg::Value)),
        megatron_core: "ModelParallelConfig.tensor_model_parallel_size = 1",
        source: ML_MPC,
    };
    pipeline_model_parallel_size: u64 = 1, {
        bounds: SIZE,
        default: "1",
        label: "PP",
        help: "pipeline parallelism: splits the layers into stages",
        bridge: &["model.pipeline_model_parallel_size"],
        mlm: Some(("--pipeline-model-parallel-size", Arg::Value)),
        megatron_core: "ModelParallelConfig.pipeline_model_parallel_size = 1",
        source: ML_MPC,
    };
    virtual_pipeline_model_parallel_size: Option<u64> = None, {
        bounds: SIZE,
        default: "null",
        label: "VPP",
        help: "interleaved schedule: model chunks per pipeline rank (shrinks the bubble)",
        bridge: &["model.virtual_pipeline_model_parallel_size"],
        bridge_none: true,
        // --virtual-pipeline-model-parallel-size is excluded from the generated flags; validate_args derives the
        // field from --num-virtual-stages-per-pipeline-rank, which also works with uneven first/last stages.
        mlm: Some(("--num-virtual-stages-per-pipeline-rank", Arg::Value)),
        megatron_core: "ModelParallelConfig.virtual_pipeline_model_parallel_size = None",
        differs: "a pipeline_model_parallel_layout (or a hybrid pattern's | segments) sets it to stages / PP when it is None",
        source: "ML megatron/core/model_parallel_config.py; megatron/training/arguments.py (--num-virtual-stages-per-pipeline-rank, validate_args)",
    };
    context_parallel_size: u64 = 1, {
        bounds: SIZE,
        default: "1",
        label: "CP",
        help: "context parallelism: splits the sequence; seq_length must divide by 2·CP",
        bridge: &["model.context_parallel_size"],
        mlm: Some(("--context-parallel-size", Arg::Value)),
        megatron_core: "ModelParallelConfig.context_parallel_size = 1",
        source: ML_MPC,
    };
    expert_model_parallel_size: u64 = 1, {
        bounds: SIZE,
        default: "1",
        label: "EP",
        help: "expert parallelism: spreads routed experts over GPUs (MoE only)",
        bridge: &["model.expert_model_parallel_size"],
        mlm: Some(("--expert-model-parallel-size", Arg::Value)),
        megatron_core: "ModelParallelConfig.expert_model_parallel_size = 1",
        source: ML_MPC,
    };
    expert_tensor_parallel_size: u64 = 1 => read_etp, {
        bounds: SIZE,
        default: "TP",
        label: "ETP",
        help: "expert tensor parallelism: splits each expert; defaults to TP",
        bridge: &["model.expert_tensor_parallel_size"],
        mlm: Some(("--expert-tensor-parallel-size", Arg::Value)),
        megatron_core: "ModelParallelConfig.expert_tensor_parallel_size = None, which __post_init__ sets to tensor_model_parallel_size",
        differs: "Megatron-LM takes Megatron-Core's default (TP); Megatron Bridge uses 1 when EP > 1 (the etp-default info); meshplan follows Megatron-Core and the exports write the value out",
        source: "ML megatron/core/model_parallel_config.py __post_init__; MB model provider (codes.rs etp-default)",
    };
    /// Whether ETP was given, or defaulted to TP as megatron-core does.
    expert_tensor_parallel_size_defaulted: bool = true, derived;
    sequence_parallel: bool = false, {
        default: "false",
        label: "Sequence parallel",
        help: "shards LayerNorm/dropout activations over TP; needs TP > 1",
        bridge: &["model.sequence_parallel"],
        mlm: Some(("--sequence-parallel", Arg::Flag)),
        megatron_core: "ModelParallelConfig.sequence_parallel = False",
        source: ML_MPC,
    };
    order: String = DEFAULT_ORDER.to_string(), {
        default: DEFAULT_ORDER,
        label: "Rank order",
        help: "the order in which Megatron-Core lays the dimensions over ranks, fastest first",
        switch: Some(Switch { value: TP_PP_DP_ORDER, bridge: "dist.use_tp_pp_dp_mapping", mlm: "--use-tp-pp-dp-mapping" }),
        megatron_core: "parallel_state.initialize_model_parallel(order=\"tp-cp-ep-dp-pp\")",
        differs: "neither launcher takes an order: both build tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with their switch",
        source: "ML megatron/core/parallel_state.py initialize_model_parallel; megatron/training/config/common_config.py DistributedInitConfig.use_tp_pp_dp_mapping; MB training/initialize.py",
    };
    num_layers_in_first_pipeline_stage: Option<u64> = None, {
        bounds: LAYERS,
        default: "null",
        label: "First-stage layers",
        help: "uneven split: layers on pipeline stage 0",
        bridge: &["model.num_layers_in_first_pipeline_stage"],
        bridge_none: true,
        mlm: Some(("--decoder-first-pipeline-num-layers", Arg::Value)),
        megatron_core: "TransformerConfig.num_layers_in_first_pipeline_stage = None",
        source: "ML megatron/core/transformer/transformer_config.py; megatron/training/arguments.py --decoder-first-pipeline-num-layers",
    };
    num_layers_in_last_pipeline_stage: Option<u64> = None, {
        bounds: LAYERS,
        default: "null",
        label: "Last-stage layers",
        help: "uneven split: layers on the last pipeline stage",
        bridge: &["model.num_layers_in_last_pipeline_stage"],
        bridge_none: true,
        mlm: Some(("--decoder-last-pipeline-num-layers", Arg::Value)),
        megatron_core: "TransformerConfig.num_layers_in_last_pipeline_stage = None",
        source: "ML megatron/core/transformer/transformer_config.py; megatron/training/arguments.py --decoder-last-pipeline-num-layers",
    };
    microbatch_group_size_per_vp_stage: Option<u64> = None, {
        bounds: SIZE,
        default: "null (PP)",
        label: "Microbatch group",
        help: "interleaved schedule: microbatches run on one virtual stage before moving to the next; defaults to PP",
        bridge: &["model.microbatch_group_size_per_vp_stage"],
        mlm: Some(("--microbatch-group-size-per-virtual-pipeline-stage", Arg::Value)),
        megatron_core: "ModelParallelConfig.microbatch_group_size_per_vp_stage = None (PP)",
        source: ML_MPC,
    };
    /// Whether the interleaved schedule overlaps its sends and receives with compute; None: not given, which both
    /// launchers run on with VPP > 1 (Megatron-LM's default since Oct 2023, turned off by `--no-overlap-p2p-communication`;
    /// Megatron Bridge's CommOverlapConfig) and off without (Megatron-LM forces it off for the non-interleaved schedule).
    #[serde(default)]
    overlap_p2p_comm: Option<bool> = None, {
        default: "null",
        label: "Overlap P2P",
        searched: false,
        written_when_set: true,
        help: "overlaps the interleaved pipeline's send/receive with compute; unset: on with virtual stages, as Megatron-LM and Megatron Bridge run it",
        bridge: &["comm_overlap.overlap_p2p_comm", "model.overlap_p2p_comm"],
        mlm: Some(("--no-overlap-p2p-communication", Arg::FlagFalse)),
        megatron_core: "ModelParallelConfig.overlap_p2p_comm = False",
        differs: "Megatron-LM: on unless --no-overlap-p2p-communication, and off without VPP; Megatron Bridge's CommOverlapConfig turns it on when PP > 1 and VPP > 1",
        source: "ML megatron/core/model_parallel_config.py:385, megatron/training/arguments.py:3118 --no-overlap-p2p-communication (store_false, since 4eeff55d1f, Oct 2023) and :1012 (off without VPP); MB training/comm_overlap.py:454-463",
    };
    /// Megatron-Core's explicit split of every (pipeline rank, virtual chunk), as the plan gives it; when it reads, its
    /// stages / PP set the VPP (see [`crate::pipeline::layout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pipeline_model_parallel_layout: Option<LayoutSpec> = None, {
        default: "null",
        label: "Pipeline layout",
        written_when_set: true,
        help: "explicit split: E embedding, t decoder layer, m MTP layer, L loss, | between stages; (…)*n and x*n repeat, commas are \
               ignored. Stage i goes to pipeline rank i mod PP, virtual chunk i div PP, so VPP = stages / PP. \
               E.g. Et*3|(tt|)*29,m|L (DeepSeek-V3 on PP 16). A JSON list of stage lists ([[\"embedding\", \"decoder\"], …]) is the list form",
        bridge: &["model.pipeline_model_parallel_layout"],
        bridge_none: true,
        mlm: Some(("--pipeline-model-parallel-layout", Arg::Value)),
        megatron_core: "TransformerConfig.pipeline_model_parallel_layout = None",
        source: "ML megatron/core/transformer/pipeline_parallel_layer_layout.py (PipelineParallelLayerLayout), transformer_config.py; MB models/model_provider.py",
    };
    /// Count the embedding (the loss) as one more layer of the even split: the first (last) chunk builds one decoder
    /// layer fewer (megatron/core/transformer/transformer_block.py get_num_layers_to_build).
    #[serde(default)]
    account_for_embedding_in_pipeline_split: bool = false, {
        default: "false",
        label: "Embedding counts as a layer",
        written_when_set: true,
        help: "the embedding takes one layer's place in the even split: the first stage builds one decoder layer fewer",
        bridge: &["model.account_for_embedding_in_pipeline_split"],
        mlm: Some(("--account-for-embedding-in-pipeline-split", Arg::Flag)),
        megatron_core: "TransformerConfig.account_for_embedding_in_pipeline_split = False",
        source: ML_TC,
    };
    #[serde(default)]
    account_for_loss_in_pipeline_split: bool = false, {
        default: "false",
        label: "Loss counts as a layer",
        written_when_set: true,
        help: "the loss takes one layer's place in the even split: the last stage builds one decoder layer fewer",
        bridge: &["model.account_for_loss_in_pipeline_split"],
        mlm: Some(("--account-for-loss-in-pipeline-split", Arg::Flag)),
        megatron_core: "TransformerConfig.account_for_loss_in_pipeline_split = False",
        source: ML_TC,
    };
}

impl Parallelism {
    pub fn tp(&self) -> u64 {
        self.tensor_model_parallel_size
    }
    pub fn pp(&self) -> u64 {
        self.pipeline_model_parallel_size
    }
    pub fn cp(&self) -> u64 {
        self.context_parallel_size
    }
    pub fn ep(&self) -> u64 {
        self.expert_model_parallel_size
    }
    pub fn etp(&self) -> u64 {
        self.expert_tensor_parallel_size
    }
    /// Virtual pipeline chunks per stage (1 without interleaving).
    pub fn vpp(&self) -> u64 {
        self.virtual_pipeline_model_parallel_size.unwrap_or(1).max(1)
    }
    /// Whether the pipeline's sends and receives overlap compute: the interleaved schedule with overlap_p2p_comm not
    /// turned off, as both launchers run it (`tuned::LAUNCHER_SOURCE`; Megatron-LM turns it off without VPP).
    pub fn p2p_overlapped(&self) -> bool {
        self.pp() > 1 && self.vpp() > 1 && self.overlap_p2p_comm != Some(false)
    }
}
