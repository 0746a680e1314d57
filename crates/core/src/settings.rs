//! The run settings: one table, [`SETTINGS`], where each memory-relevant setting Megatron-Core, Megatron-LM and
//! Megatron Bridge turn is one row — its plan key (the Megatron / Bridge field name), its value kind, Megatron-Core's
//! default and where Bridge's or Megatron-LM's differs, its Bridge config path(s), its Megatron-LM flag form, a label
//! and one line of help for the page, its group and its source. The same rows generate the typed [`Settings`] struct
//! (a field of [`crate::plan::Training`], serialised flat into the plan's `training` section), its generic reader
//! ([`Settings::read`]), and the rows exports and `meshplan explain` walk. A setting is written once, here.
//!
//! Sources cited in the rows: ML = NVIDIA/Megatron-LM @ d98e8a64ddf3, MB = NVIDIA-NeMo/Megatron-Bridge @
//! 067f987df03b.
//!
//! It imports `codes`, `diag`, `fields` and `presets` (a GPU's default FP8 recipe); `plan` builds on it.

use crate::fields::Fields;
pub use crate::presets::Fp8Recipe;
use crate::presets::GpuSpec;
use crate::{Code, Diagnostic};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

/// The page's and the explain command's grouping of the settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    OptimizerGradients,
    LowPrecision,
    Recompute,
    Offloading,
    FsdpBuffers,
    CudaGraphs,
    MoeDispatch,
    CommOverlap,
    Measured,
    Attention,
    Peft,
    VisionEncoder,
}

impl Group {
    pub const ALL: [Group; 12] = [
        Group::OptimizerGradients,
        Group::LowPrecision,
        Group::Recompute,
        Group::Offloading,
        Group::FsdpBuffers,
        Group::CudaGraphs,
        Group::MoeDispatch,
        Group::CommOverlap,
        Group::Measured,
        Group::Attention,
        Group::Peft,
        Group::VisionEncoder,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Group::OptimizerGradients => "Optimizer & gradients",
            Group::LowPrecision => "Low precision",
            Group::Recompute => "Recompute",
            Group::Offloading => "Offloading",
            Group::FsdpBuffers => "FSDP & buffers",
            Group::CudaGraphs => "CUDA graphs",
            Group::MoeDispatch => "MoE dispatch",
            Group::CommOverlap => "Communication overlap",
            Group::Measured => "Measured throughput",
            Group::Attention => "Attention and loss kernels",
            Group::Peft => "LoRA (PEFT)",
            Group::VisionEncoder => "Vision encoder",
        }
    }
}

/// The plan section a setting lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Training,
    Cluster,
}

impl Section {
    pub fn key(self) -> &'static str {
        match self {
            Section::Training => "training",
            Section::Cluster => "cluster",
        }
    }
}

/// What values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    Bool,
    /// A non-negative integer within the row's `bounds`.
    UInt,
    /// A number within the row's `bounds`.
    Float,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// A list of these strings.
    List(&'static [&'static str]),
}

/// How Megatron-LM (`pretrain_gpt.py`) takes a setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mlm {
    /// A `store_true` flag: written when the setting is true.
    Flag(&'static str),
    /// Two flags: the first written when true, the second when false (`None`: nothing to write).
    Switch(Option<&'static str>, Option<&'static str>),
    /// `--flag VALUE` (a list: `--flag V1 V2 …`), in the plan's spelling.
    Value(&'static str),
    /// No command-line flag: the field of this config class must be set in code.
    Config(&'static str),
    /// meshplan's own input, not a Megatron setting.
    Meshplan,
    /// Written by the export itself (precision picks several flags).
    Export,
}

/// One row of the settings table.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The plan key, in its section (Megatron's / Bridge's field name).
    pub key: &'static str,
    pub section: Section,
    pub group: Group,
    pub ty: Ty,
    /// Whether JSON null is a value (it then means the default stated in `default`).
    pub nullable: bool,
    /// Inclusive bounds of a number.
    pub bounds: Option<(f64, f64)>,
    /// meshplan's default, and how it is resolved when it depends on other settings.
    pub default: &'static str,
    /// The plan's spelling of Megatron's None (exports write None / no flag for it).
    pub null_spelling: Option<&'static str>,
    /// Whether Bridge holds the value as a `torch.dtype` (the plan spells it as Megatron-LM does: fp32, bf16, …).
    pub torch_dtype: bool,
    // Its label, help, source, Megatron-Core field, differing defaults and names in Bridge and Megatron-LM: `doc()`.
}

/// A row's documentation and its names in Megatron Bridge and Megatron-LM: what `meshplan explain`, the exports, the
/// imports and the tools module's settings form read. Kept apart from [`Setting`] (in [`SETTING_DOCS`], row for row)
/// so that code that only reads and checks settings, such as the page's first render, does not link these texts;
/// [`Setting::doc`] finds a row's.
#[derive(Clone, Copy, Debug)]
pub struct SettingDoc {
    /// Megatron Bridge `ConfigContainer` paths (first: the one that decides).
    pub bridge: &'static [&'static str],
    /// Deprecated Bridge paths the exports set to None beside `bridge`, so a recipe's old spelling cannot clash.
    pub bridge_clears: &'static [&'static str],
    pub mlm: Mlm,
    /// Megatron-LM's default as plan JSON, where it differs from the row's (None: the same).
    pub mlm_default: Option<&'static str>,
    pub label: &'static str,
    /// Megatron-Core's field and default.
    pub megatron_core: &'static str,
    /// Where Megatron-LM's or Bridge's default differs, and which meshplan follows ("" if it does not differ).
    pub differs: &'static str,
    pub help: &'static str,
    pub source: &'static str,
}

/// A row as the table writes it: [`Setting`] and [`SettingDoc`] in one, split at compile time.
#[derive(Clone, Copy)]
struct Full {
    key: &'static str,
    section: Section,
    group: Group,
    ty: Ty,
    nullable: bool,
    bounds: Option<(f64, f64)>,
    default: &'static str,
    megatron_core: &'static str,
    differs: &'static str,
    bridge: &'static [&'static str],
    bridge_clears: &'static [&'static str],
    null_spelling: Option<&'static str>,
    torch_dtype: bool,
    mlm: Mlm,
    mlm_default: Option<&'static str>,
    label: &'static str,
    help: &'static str,
    source: &'static str,
}

impl Full {
    const fn row(self) -> Setting {
        let Full { key, section, group, ty, nullable, bounds, default, null_spelling, torch_dtype, .. } = self;
        Setting { key, section, group, ty, nullable, bounds, default, null_spelling, torch_dtype }
    }

    const fn doc(self) -> SettingDoc {
        let Full { bridge, bridge_clears, mlm, mlm_default, label, megatron_core, differs, help, source, .. } = self;
        SettingDoc { bridge, bridge_clears, mlm, mlm_default, label, megatron_core, differs, help, source }
    }
}

impl Setting {
    /// The row's documentation (help, source, Megatron-Core's field and default, where defaults differ).
    pub fn doc(&self) -> &'static SettingDoc {
        if self.section == HOST_MEMORY.section && self.key == HOST_MEMORY.key {
            return &HOST_MEMORY_DOC;
        }
        SETTINGS.iter().position(|r| r.key == self.key).map_or(&NO_DOC, |i| &SETTING_DOCS[i])
    }

    /// `training.grad_reduce_in_fp32`.
    pub fn path(&self) -> String {
        format!("{}.{}", self.section.key(), self.key)
    }

    /// The values it takes, as `meshplan explain` and the page show them.
    pub fn values(&self) -> String {
        let range = |int: bool| match self.bounds {
            Some((lo, hi)) if int => format!("{} to {}", lo as u64, hi as u64),
            Some((lo, hi)) => format!("{lo} to {hi}"),
            None => "any".into(),
        };
        let base = match self.ty {
            Ty::Bool => "true or false".to_string(),
            Ty::UInt => format!("an integer, {}", range(true)),
            Ty::Float => format!("a number, {}", range(false)),
            Ty::Choice(c) => format!("one of {}", c.join(", ")),
            Ty::List(c) => format!("a list of {}", c.join(", ")),
        };
        if self.nullable { format!("{base}, or null (the default)") } else { base }
    }
}

impl Setting {
    /// How Megatron-LM takes it, in words.
    pub fn mlm_text(&self) -> String {
        match self.doc().mlm {
            Mlm::Flag(f) => format!("{f} (when true)"),
            Mlm::Switch(on, off) => {
                let side = |f: Option<&str>, when: &str| f.map(|f| format!("{f} ({when})"));
                [side(on, "true"), side(off, "false")].into_iter().flatten().collect::<Vec<_>>().join(" / ")
            }
            Mlm::Value(f) => match self.ty {
                Ty::List(_) => format!("{f} V1 V2 …"),
                _ => format!("{f} VALUE"),
            },
            Mlm::Config(field) => format!("no flag: set {field}"),
            Mlm::Meshplan => "none (meshplan's own input)".into(),
            Mlm::Export => "--bf16 / --fp16, --fp8-format, --fp4-format … (the precision's flags)".into(),
        }
    }

    /// The row as `meshplan explain` prints it: names in each tool, default, values, help and source.
    pub fn explain(&self) -> String {
        let doc = self.doc();
        let bridge = if doc.bridge.is_empty() { "none".into() } else { doc.bridge.iter().map(|b| format!("cfg.{b}")).collect::<Vec<_>>().join(", ") };
        crate::fields::explain_text(
            &format!("{} (setting, {})\n\n{}: {}", self.path(), self.group.label(), doc.label, doc.help),
            &[
                ("Values:", self.values()),
                ("Default:", self.default.to_string()),
                ("Megatron-Core:", doc.megatron_core.to_string()),
                ("Defaults differ:", doc.differs.to_string()),
                ("Megatron Bridge:", bridge),
                ("Megatron-LM:", self.mlm_text()),
                ("Source:", doc.source.to_string()),
            ],
        )
    }
}

/// The fields every row shares unless it says otherwise.
const FULL_ROW: Full = Full {
    key: "",
    section: Section::Training,
    group: Group::OptimizerGradients,
    ty: Ty::Bool,
    nullable: false,
    bounds: None,
    default: "",
    megatron_core: "",
    differs: "",
    bridge: &[],
    bridge_clears: &[],
    null_spelling: None,
    torch_dtype: false,
    mlm: Mlm::Meshplan,
    mlm_default: None,
    label: "",
    help: "",
    source: "",
};
const ROW: Setting = FULL_ROW.row();
const NO_DOC: SettingDoc = FULL_ROW.doc();

// ---------------------------------------------------------------------------------------------------
// Value types
// ---------------------------------------------------------------------------------------------------

/// A Rust type a setting is stored as: how it reads from and writes to the plan's JSON.
pub trait SettingType: Sized {
    const TY: Ty;
    const NULLABLE: bool = false;
    /// The value of `v` (never null), or what it must be.
    fn read(v: &Value, row: &Setting) -> Result<Self, String>;
    fn to_json(&self) -> Value;
}

fn within(x: f64, row: &Setting) -> bool {
    row.bounds.is_none_or(|(lo, hi)| x >= lo && x <= hi)
}

impl SettingType for bool {
    const TY: Ty = Ty::Bool;
    fn read(v: &Value, _: &Setting) -> Result<Self, String> {
        v.as_bool().ok_or_else(|| "true or false".into())
    }
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl SettingType for u64 {
    const TY: Ty = Ty::UInt;
    fn read(v: &Value, row: &Setting) -> Result<Self, String> {
        crate::fields::as_uint(v).filter(|&n| within(n as f64, row)).ok_or_else(|| row.values())
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl SettingType for f64 {
    const TY: Ty = Ty::Float;
    fn read(v: &Value, row: &Setting) -> Result<Self, String> {
        v.as_f64().filter(|x| x.is_finite() && within(*x, row)).ok_or_else(|| row.values())
    }
    fn to_json(&self) -> Value {
        serde_json::Number::from_f64(*self).map_or(Value::Null, Value::Number)
    }
}

impl<T: SettingType> SettingType for Option<T> {
    const TY: Ty = T::TY;
    const NULLABLE: bool = true;
    fn read(v: &Value, row: &Setting) -> Result<Self, String> {
        T::read(v, row).map(Some)
    }
    fn to_json(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_json)
    }
}

/// A setting whose value is one of a fixed set of strings.
pub trait Choice: Copy + 'static {
    const NAMES: &'static [&'static str];
    fn as_str(self) -> &'static str;
    /// The value spelled `s` (case and surrounding spaces ignored).
    fn parse(s: &str) -> Option<Self>;
}

impl<T: Choice> SettingType for Vec<T> {
    const TY: Ty = Ty::List(T::NAMES);
    fn read(v: &Value, row: &Setting) -> Result<Self, String> {
        let items = v.as_array().ok_or_else(|| row.values())?;
        // Bounded by the choices: a list longer than every distinct choice twice over is not a setting.
        if items.len() > 2 * T::NAMES.len() {
            return Err(row.values());
        }
        let mut out: Vec<T> = Vec::with_capacity(items.len());
        for item in items {
            let c = item.as_str().and_then(T::parse).ok_or_else(|| row.values())?;
            if !out.iter().any(|o| o.as_str() == c.as_str()) {
                out.push(c);
            }
        }
        Ok(out)
    }
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(|c| Value::from(c.as_str())).collect())
    }
}

/// An enum of string choices, serialised as its strings, usable as a setting's type.
macro_rules! choice {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }
        choice_impl!($name { $($variant = $text),+ });
    };
}

/// The setting-type impls of an enum of string choices defined elsewhere in the crate (serialised as these strings).
macro_rules! choice_impl {
    ($name:ident { $($variant:ident = $text:literal),+ }) => {
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The spelling Megatron (and the plan) uses.
            pub const fn key(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl Choice for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
            fn as_str(self) -> &'static str {
                self.key()
            }
            fn parse(s: &str) -> Option<Self> {
                let s = s.trim();
                $name::ALL.iter().copied().find(|c| c.key().eq_ignore_ascii_case(s))
            }
        }

        impl SettingType for $name {
            const TY: Ty = Ty::Choice(<$name as Choice>::NAMES);
            fn read(v: &Value, row: &Setting) -> Result<Self, String> {
                v.as_str().and_then(<$name as Choice>::parse).ok_or_else(|| row.values())
            }
            fn to_json(&self) -> Value {
                Value::from(self.key())
            }
        }
    };
}

choice! {
    /// `recompute_granularity`; `none` is Megatron's None (no recompute).
    Recompute { None = "none", Selective = "selective", Full = "full" }
}
choice! {
    RecomputeMethod { Uniform = "uniform", Block = "block" }
}
choice! {
    /// The training precision: meshplan's switch, which picks Megatron-LM's flags and Bridge's mixed-precision recipe.
    Precision { Fp32 = "fp32", Fp16 = "fp16", Bf16 = "bf16", Fp8 = "fp8", Fp4 = "fp4" }
}
choice! {
    /// `optimizer`. Muon is left out: its layer-wise distributed optimizer assigns whole tensors to ranks, and the
    /// per-rank bytes depend on an assignment meshplan cannot state (ML megatron/core/optimizer/layer_wise_optimizer.py).
    Optimizer { Adam = "adam", Sgd = "sgd" }
}
choice! {
    /// `main_params_dtype` (Megatron-LM `--main-params-dtype` choices).
    MainParamsDtype { Fp32 = "fp32", Fp16 = "fp16" }
}
choice! {
    /// `main_grads_dtype` (Megatron-LM `--main-grads-dtype` choices).
    MainGradsDtype { Fp32 = "fp32", Bf16 = "bf16" }
}
choice! {
    /// `exp_avg_dtype` / `exp_avg_sq_dtype` (Megatron-LM choices; fp8 is stored as torch.uint8).
    MomentDtype { Fp32 = "fp32", Fp16 = "fp16", Bf16 = "bf16", Fp8 = "fp8" }
}
// `fp8_recipe`: the GPU catalogue's type (each GPU's default recipe), spelled as Megatron-Core's Fp8Recipe.
choice_impl!(Fp8Recipe { Delayed = "delayed", Tensorwise = "tensorwise", Blockwise = "blockwise", Mxfp8 = "mxfp8" });
choice! {
    /// `recompute_modules` entries (ML transformer_config.py `__post_init__` allowed_modules).
    RecomputeModule {
        CoreAttn = "core_attn",
        Mlp = "mlp",
        Moe = "moe",
        MoeAct = "moe_act",
        SharedExperts = "shared_experts",
        Layernorm = "layernorm",
        MlaUpProj = "mla_up_proj",
        GdnNormOut = "gdn_norm_out",
        GdpInProj = "gdp_in_proj",
        GdpQkv = "gdp_qkv",
        Mhc = "mhc",
    }
}
choice! {
    /// `offload_modules` entries (ML transformer_config.py `__post_init__`, fine-grained activation offloading).
    OffloadModule {
        AttnNorm = "attn_norm",
        QkvLinear = "qkv_linear",
        CoreAttn = "core_attn",
        AttnProj = "attn_proj",
        MlpNorm = "mlp_norm",
        ExpertFc1 = "expert_fc1",
        MoeAct = "moe_act",
        FusedGroupMlp = "fused_group_mlp",
        GdpQkv = "gdp_qkv",
    }
}
choice! {
    /// `data_parallel_sharding_strategy` (Megatron-FSDP).
    ShardingStrategy { NoShard = "no_shard", Optim = "optim", OptimGrads = "optim_grads", OptimGradsParams = "optim_grads_params" }
}
choice! {
    /// `cuda_graph_impl`.
    CudaGraphImpl { None = "none", Local = "local", TransformerEngine = "transformer_engine", FullIteration = "full_iteration" }
}
choice! {
    /// `cuda_graph_scope` entries (Megatron-Core's `cuda_graph_modules` values; an empty list graphs the whole layer).
    CudaGraphScope { Attn = "attn", Mlp = "mlp", Moe = "moe", MoeRouter = "moe_router", MoePreprocess = "moe_preprocess", Mamba = "mamba" }
}
choice! {
    /// `moe_token_dispatcher_type`.
    DispatcherType { Allgather = "allgather", Alltoall = "alltoall", Flex = "flex" }
}
choice! {
    /// `moe_flex_dispatcher_backend` (Megatron-Core also has `ncclep`, whose buffers meshplan does not describe).
    FlexBackend { Deepep = "deepep", Hybridep = "hybridep" }
}
choice! {
    /// `transformer_impl` (Megatron-Core's TransformerConfig literal; `inference_optimized` is for inference only).
    TransformerImpl { TransformerEngine = "transformer_engine", Local = "local" }
}
choice! {
    /// `cross_entropy_fusion_impl` (ModelParallelConfig: Megatron-Core's own fused kernel or Transformer Engine's).
    CrossEntropyFusionImpl { Native = "native", Te = "te" }
}
choice! {
    /// `attention_backend` (Megatron-Core's AttnBackend, megatron/core/transformer/enums.py l.51-58).
    AttnBackend { Auto = "auto", Flash = "flash", Fused = "fused", Unfused = "unfused", Local = "local" }
}
choice! {
    /// `peft`: parameter-efficient fine-tuning, Megatron Bridge's `cfg.peft` (a LoRA object) or a wrapper's
    /// `--train_type lora`; `none` trains every parameter.
    Peft { None = "none", Lora = "lora" }
}
choice! {
    /// `lora_target_modules` entries (Megatron Bridge's LoRA.target_modules names, peft/lora.py l.101-105).
    LoraTarget { LinearQkv = "linear_qkv", LinearProj = "linear_proj", LinearFc1 = "linear_fc1", LinearFc2 = "linear_fc2" }
}
choice! {
    /// `cp_comm_type` (one type for every layer; Megatron-Core also takes a list per layer).
    CpCommType { P2p = "p2p", AllGather = "all_gather", A2a = "a2a", A2aP2p = "a2a+p2p" }
}

impl Precision {
    /// Whether weights and activations go through FP8 or FP4 GEMMs.
    pub fn is_low(self) -> bool {
        matches!(self, Precision::Fp8 | Precision::Fp4)
    }
}

// ---------------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------------

/// Each row `key: Type = default, Setting { … };` becomes a field of [`Settings`] with that type and default, and an
/// entry of [`SETTINGS`] (in the same order) whose key, value kind and nullability come from the field.
macro_rules! settings {
    ($($(#[$doc:meta])* $key:ident : $ty:ty = $default:expr, { $($field:ident : $value:expr),* $(,)? };)*) => {
        /// Every run setting of the plan's `training` section that [`SETTINGS`] lists, typed.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Settings {
            $($(#[$doc])* pub $key: $ty,)*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $($key: $default,)* }
            }
        }

        /// The settings table: one row per field of [`Settings`], in field order.
        pub const SETTINGS: &[Setting] = &[$(Full {
            key: stringify!($key),
            ty: <$ty as SettingType>::TY,
            nullable: <$ty as SettingType>::NULLABLE,
            $($field: $value,)*
            ..FULL_ROW
        }.row()),*];

        /// Each row's documentation, in [`SETTINGS`]' order ([`Setting::doc`]).
        pub const SETTING_DOCS: &[SettingDoc] = &[$(Full {
            key: stringify!($key),
            $($field: $value,)*
            ..FULL_ROW
        }.doc()),*];

        impl Settings {
            /// Reads every row from the `training` section; a wrong type or an out-of-range value is an
            /// `invalid-value` diagnostic and the default.
            pub fn read(f: &mut Fields) -> Settings {
                let mut s = Settings::default();
                let mut rows = SETTINGS.iter();
                $(
                    let row: &'static Setting = rows.next().unwrap_or(&ROW);
                    if let Some(v) = read_value::<$ty>(f, row) {
                        s.$key = v;
                    }
                )*
                s
            }

            /// The value of row `key` as plan JSON (None for a key that is not a row).
            pub fn get(&self, key: &str) -> Option<Value> {
                match key {
                    $(stringify!($key) => Some(SettingType::to_json(&self.$key)),)*
                    _ => None,
                }
            }

            /// Sets row `key` from plan JSON (as the plan file spells it); Err says what it must be.
            pub fn set(&mut self, key: &str, v: &Value) -> Result<(), String> {
                let row = setting(key).ok_or_else(|| format!("no setting {key:?}"))?;
                match key {
                    $(stringify!($key) => {
                        self.$key = if v.is_null() && row.nullable { $default } else { <$ty as SettingType>::read(v, row)? };
                        Ok(())
                    })*
                    _ => Err(format!("no setting {key:?}")),
                }
            }
        }
    };
}

/// Reads one row from its section's fields: None when absent (or null) or invalid (with a diagnostic).
pub fn read_value<T: SettingType>(f: &mut Fields, row: &'static Setting) -> Option<T> {
    let v = f.raw(row.key)?;
    match T::read(v, row) {
        Ok(x) => Some(x),
        Err(what) => {
            let path = row.path();
            f.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`{path}` must be {what}, found {}", shown(v)),
                format!("set `{path}` to {what} (using the default, {}, meanwhile)", row.default),
            ).with_field(&path));
            None
        }
    }
}

/// A JSON value clipped for a message.
fn shown(v: &Value) -> String {
    let mut s = v.to_string();
    if s.chars().count() > 40 {
        s = s.chars().take(40).collect::<String>() + "…";
    }
    s
}

const ML_TC: &str = "ML megatron/core/transformer/transformer_config.py (TransformerConfig)";
const ML_MPC: &str = "ML megatron/core/model_parallel_config.py (ModelParallelConfig)";
const ML_OC: &str = "ML megatron/core/optimizer/optimizer_config.py (OptimizerConfig)";
const ML_DDP: &str = "ML megatron/core/distributed/distributed_data_parallel_config.py (DistributedDataParallelConfig)";
const MB_MP: &str = "MB src/megatron/bridge/training/mixed_precision.py (MixedPrecisionConfig and its recipes; setup copies every field onto the model, optimizer and ddp configs, so mixed_precision.X wins over model./ddp.X)";

settings! {
    // The rows that were Training's own fields come first, in their old order, so the plan JSON keeps its key order.
    recompute_granularity: Recompute = Recompute::None, {
        group: Group::Recompute,
        default: "none",
        megatron_core: "TransformerConfig.recompute_granularity = None",
        differs: "meshplan spells Megatron's None as \"none\"",
        bridge: &["model.recompute_granularity"],
        null_spelling: Some("none"),
        mlm: Mlm::Value("--recompute-granularity"),
        label: "Recompute",
        help: "activation recomputation: none, selective (the modules in recompute_modules) or full (whole layers)",
        source: ML_TC,
    };
    recompute_method: Option<RecomputeMethod> = None, {
        group: Group::Recompute,
        default: "null (full recompute needs uniform or block)",
        megatron_core: "TransformerConfig.recompute_method = None",
        bridge: &["model.recompute_method"],
        mlm: Mlm::Value("--recompute-method"),
        label: "Recompute method",
        help: "with full recompute: uniform (groups of recompute_num_layers) or block (the first recompute_num_layers of each chunk)",
        source: ML_TC,
    };
    recompute_num_layers: Option<u64> = None, {
        group: Group::Recompute,
        bounds: Some((0.0, (1u64 << 20) as f64)),
        default: "null",
        megatron_core: "TransformerConfig.recompute_num_layers = None",
        bridge: &["model.recompute_num_layers"],
        mlm: Mlm::Value("--recompute-num-layers"),
        label: "Recompute layers",
        help: "with full recompute: layers per recompute unit (uniform) or recomputed layers per model chunk (block)",
        source: ML_TC,
    };
    use_distributed_optimizer: bool = false, {
        group: Group::OptimizerGradients,
        default: "false",
        megatron_core: "OptimizerConfig.use_distributed_optimizer = False and DistributedDataParallelConfig.use_distributed_optimizer = False",
        differs: "Bridge's _pretrain_common turns it on; Bridge syncs the optimizer and ddp fields (either True makes both True)",
        bridge: &["optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer"],
        mlm: Mlm::Flag("--use-distributed-optimizer"),
        label: "Distributed optimizer",
        help: "shards the fp32 master weights and optimizer states over the data-parallel ranks (ZeRO-1)",
        source: "ML megatron/core/optimizer/optimizer_config.py, distributed_data_parallel_config.py; MB training/config.py _validate_and_sync_distributed_optimizer_settings",
    };
    precision: Precision = Precision::Bf16, {
        group: Group::LowPrecision,
        default: "bf16",
        megatron_core: "TransformerConfig.bf16 / fp16 / fp8 (format) / fp4 (format), all off (fp32)",
        differs: "meshplan's switch: bf16 and fp16 are Megatron-LM's --bf16 / --fp16 and Bridge's bf16_mixed / fp16_mixed; fp8 and fp4 train in bf16 with FP8 (fp8_recipe) or NVFP4 GEMMs, as Bridge's bf16_with_*_mixed recipes do",
        bridge: &["mixed_precision"],
        mlm: Mlm::Export,
        label: "Precision",
        help: "bf16, fp16, fp8 or fp4 training (Bridge mixed_precision recipe; Megatron-LM --bf16, --fp8-format …)",
        source: MB_MP,
    };

    // Optimizer & gradients
    optimizer: Optimizer = Optimizer::Adam, {
        group: Group::OptimizerGradients,
        default: "adam",
        megatron_core: "OptimizerConfig.optimizer = 'adam'",
        bridge: &["optimizer.optimizer"],
        mlm: Mlm::Value("--optimizer"),
        label: "Optimizer",
        help: "adam keeps two moments per parameter; sgd one momentum buffer",
        source: "ML megatron/core/optimizer/optimizer_config.py; megatron/training/arguments.py --optimizer",
    };
    grad_reduce_in_fp32: Option<bool> = None, {
        group: Group::OptimizerGradients,
        default: "null: true for bf16, fp8 and fp4 (Megatron-LM and Bridge's bf16 recipes), false for fp16 (fp16_mixed); fp32 grads are fp32 either way",
        megatron_core: "DistributedDataParallelConfig.grad_reduce_in_fp32 = False",
        differs: "Megatron-LM with --bf16 forces fp32 grads unless --grad-reduce-in-bf16; Bridge's mixed_precision.grad_reduce_in_fp32 (True in bf16_mixed, False in fp16_mixed) overrides ddp.grad_reduce_in_fp32; meshplan follows both",
        bridge: &["mixed_precision.grad_reduce_in_fp32", "ddp.grad_reduce_in_fp32"],
        mlm: Mlm::Switch(Some("--accumulate-allreduce-grads-in-fp32"), Some("--grad-reduce-in-bf16")),
        label: "Reduce grads in fp32",
        help: "the main-gradient buffer (one per parameter, unsharded) in fp32 (4 B) or in the parameter dtype (2 B)",
        source: "ML megatron/core/distributed/param_and_grad_buffer.py (grad_dtype); megatron/training/arguments.py validate_args (bf16); MB training/mixed_precision.py",
    };
    use_precision_aware_optimizer: bool = false, {
        group: Group::OptimizerGradients,
        default: "false",
        megatron_core: "OptimizerConfig.use_precision_aware_optimizer = False",
        bridge: &["optimizer.use_precision_aware_optimizer"],
        mlm: Mlm::Flag("--use-precision-aware-optimizer"),
        label: "Precision-aware optimizer",
        help: "Transformer Engine's FusedAdam keeps master weights and moments in the dtypes below (needs adam and the distributed optimizer)",
        source: ML_OC,
    };
    main_params_dtype: MainParamsDtype = MainParamsDtype::Fp32, {
        group: Group::OptimizerGradients,
        default: "fp32",
        megatron_core: "OptimizerConfig.main_params_dtype = torch.float32",
        torch_dtype: true,
        bridge: &["optimizer.main_params_dtype"],
        mlm: Mlm::Value("--main-params-dtype"),
        label: "Master weights dtype",
        help: "precision-aware optimizer: fp32 master weights (stored as 16-bit remainders with store_param_remainders) or fp16",
        source: ML_OC,
    };
    main_grads_dtype: MainGradsDtype = MainGradsDtype::Fp32, {
        group: Group::OptimizerGradients,
        default: "fp32",
        megatron_core: "OptimizerConfig.main_grads_dtype = torch.float32",
        torch_dtype: true,
        bridge: &["optimizer.main_grads_dtype"],
        mlm: Mlm::Value("--main-grads-dtype"),
        label: "Main grads dtype",
        help: "precision-aware optimizer: dtype of the gradients the optimizer reads",
        source: ML_OC,
    };
    exp_avg_dtype: MomentDtype = MomentDtype::Fp32, {
        group: Group::OptimizerGradients,
        default: "fp32",
        megatron_core: "OptimizerConfig.exp_avg_dtype = torch.float32",
        differs: "fp8 is torch.uint8 in Megatron-Core (Megatron-LM maps \"fp8\" to it); Bridge's override parser reads \"fp8\" as float8_e4m3fn, so the Bridge exports write torch.uint8 in Python",
        torch_dtype: true,
        bridge: &["optimizer.exp_avg_dtype"],
        mlm: Mlm::Value("--exp-avg-dtype"),
        label: "Adam m dtype",
        help: "precision-aware optimizer: dtype of Adam's first moment (4, 2, 2 or 1 byte per sharded parameter)",
        source: ML_OC,
    };
    exp_avg_sq_dtype: MomentDtype = MomentDtype::Fp32, {
        group: Group::OptimizerGradients,
        default: "fp32",
        megatron_core: "OptimizerConfig.exp_avg_sq_dtype = torch.float32",
        differs: "as exp_avg_dtype",
        torch_dtype: true,
        bridge: &["optimizer.exp_avg_sq_dtype"],
        mlm: Mlm::Value("--exp-avg-sq-dtype"),
        label: "Adam v dtype",
        help: "precision-aware optimizer: dtype of Adam's second moment",
        source: ML_OC,
    };
    store_param_remainders: bool = true, {
        group: Group::OptimizerGradients,
        default: "true",
        megatron_core: "OptimizerConfig.store_param_remainders = True",
        bridge: &["optimizer.store_param_remainders"],
        mlm: Mlm::Config("OptimizerConfig.store_param_remainders"),
        label: "16-bit master remainders",
        help: "precision-aware optimizer with fp32 master weights over bf16 params: keep only the 16-bit remainders (2 B instead of 4)",
        source: "ML megatron/core/optimizer/optimizer_config.py; TE transformer_engine/pytorch/optimizers/fused_adam.py",
    };
    num_distributed_optimizer_instances: u64 = 1, {
        group: Group::OptimizerGradients,
        bounds: Some((1.0, (1u64 << 24) as f64)),
        default: "1",
        megatron_core: "DistributedDataParallelConfig.num_distributed_optimizer_instances = 1",
        bridge: &["ddp.num_distributed_optimizer_instances"],
        mlm: Mlm::Value("--num-distributed-optimizer-instances"),
        label: "Optimizer instances",
        help: "copies of the distributed optimizer across data parallelism: each shards over DP·CP / instances",
        source: ML_DDP,
    };

    // Low precision
    fp8_recipe: Option<Fp8Recipe> = None, {
        group: Group::LowPrecision,
        default: "null: the GPU generation's recipe with precision fp8 (Hopper tensorwise, Blackwell mxfp8)",
        megatron_core: "TransformerConfig.fp8_recipe = 'delayed'",
        differs: "Bridge's MixedPrecisionConfig defaults to 'tensorwise'; meshplan picks the recipe Bridge's perf configs run on the GPU",
        bridge: &["mixed_precision.fp8_recipe"],
        mlm: Mlm::Value("--fp8-recipe"),
        mlm_default: Some("\"delayed\""),
        label: "FP8 recipe",
        help: "FP8 scaling: delayed (amax history), tensorwise (current scaling), blockwise (Hopper), mxfp8 (Blackwell)",
        source: MB_MP,
    };
    first_last_layers_bf16: Option<bool> = None, {
        group: Group::LowPrecision,
        default: "null: true with the tensorwise recipe (Bridge's current-scaling recipe), else false",
        megatron_core: "TransformerConfig.first_last_layers_bf16 = False",
        bridge: &["mixed_precision.first_last_layers_bf16"],
        mlm: Mlm::Flag("--first-last-layers-bf16"),
        label: "First/last layers in BF16",
        help: "run the first and last layers (counts below) in BF16 instead of FP8/FP4",
        source: ML_TC,
    };
    num_layers_at_start_in_bf16: Option<u64> = None, {
        group: Group::LowPrecision,
        bounds: Some((0.0, (1u64 << 20) as f64)),
        default: "null: 1 when first_last_layers_bf16 (Bridge's current-scaling recipe)",
        megatron_core: "TransformerConfig.num_layers_at_start_in_bf16 = 1",
        differs: "Bridge's MixedPrecisionConfig defaults to 0 and its current-scaling recipe sets 1",
        bridge: &["mixed_precision.num_layers_at_start_in_bf16"],
        mlm: Mlm::Value("--num-layers-at-start-in-bf16"),
        mlm_default: Some("1"),
        label: "BF16 layers at start",
        help: "with first_last_layers_bf16: layers at the start of the model kept in BF16",
        source: ML_TC,
    };
    num_layers_at_end_in_bf16: Option<u64> = None, {
        group: Group::LowPrecision,
        bounds: Some((0.0, (1u64 << 20) as f64)),
        default: "null: 1 when first_last_layers_bf16 (Bridge's current-scaling recipe)",
        megatron_core: "TransformerConfig.num_layers_at_end_in_bf16 = 1",
        differs: "Bridge's MixedPrecisionConfig defaults to 0 and its current-scaling recipe sets 1",
        bridge: &["mixed_precision.num_layers_at_end_in_bf16"],
        mlm: Mlm::Value("--num-layers-at-end-in-bf16"),
        mlm_default: Some("1"),
        label: "BF16 layers at end",
        help: "with first_last_layers_bf16: layers at the end of the model kept in BF16",
        source: ML_TC,
    };
    fp8_param_gather: Option<bool> = None, {
        group: Group::LowPrecision,
        default: "null: the Bridge recipe's value (true for delayed, tensorwise and mxfp8; false for blockwise) when the distributed optimizer is on",
        megatron_core: "DistributedDataParallelConfig.fp8_param_gather = False (with TransformerConfig.fp8_param)",
        differs: "Megatron-LM's default is off; Bridge's FP8 recipes turn it on",
        bridge: &["mixed_precision.fp8_param_gather"],
        mlm: Mlm::Flag("--fp8-param-gather"),
        label: "FP8 weights (param gather)",
        help: "keep the weights in FP8 (the parameter buffer in 1 byte) and all-gather them in FP8",
        source: "ML megatron/core/distributed/distributed_data_parallel_config.py; MB training/mixed_precision.py",
    };
    fp4_param_gather: Option<bool> = None, {
        group: Group::LowPrecision,
        default: "null: true with precision fp4 and the distributed optimizer (Bridge's bf16_with_nvfp4_mixed)",
        megatron_core: "DistributedDataParallelConfig.fp4_param_gather = False (with TransformerConfig.fp4_param)",
        differs: "Megatron-LM's default is off; Bridge's NVFP4 recipe turns it on (since Bridge PR #3364)",
        bridge: &["mixed_precision.fp4_param_gather"],
        mlm: Mlm::Flag("--fp4-param-gather"),
        label: "FP4 weights (param gather)",
        help: "keep the weights in NVFP4 (packed half bytes) instead of bf16",
        source: "ML megatron/core/distributed/distributed_data_parallel_config.py; MB training/mixed_precision.py",
    };
    reuse_grad_buf_for_mxfp8_param_ag: Option<bool> = None, {
        group: Group::LowPrecision,
        default: "null: true with mxfp8 and FP8 weights (Bridge's bf16_with_mxfp8_mixed)",
        megatron_core: "DistributedDataParallelConfig.reuse_grad_buf_for_mxfp8_param_ag = False",
        differs: "Bridge's mxfp8 recipe turns it on",
        bridge: &["mixed_precision.reuse_grad_buf_for_mxfp8_param_ag"],
        mlm: Mlm::Flag("--reuse-grad-buf-for-mxfp8-param-ag"),
        label: "MXFP8 gather into grad buffer",
        help: "MXFP8 weights all-gather into the gradient buffer instead of a separate parameter buffer",
        source: "ML megatron/core/distributed/param_and_grad_buffer.py; MB training/mixed_precision.py",
    };
    fp8_amax_history_len: Option<u64> = None, {
        group: Group::LowPrecision,
        bounds: Some((1.0, 1_048_576.0)),
        default: "null: 1024 with the delayed recipe (Bridge's delayed-scaling recipe), else 1",
        megatron_core: "TransformerConfig.fp8_amax_history_len = 1",
        bridge: &["mixed_precision.fp8_amax_history_len"],
        mlm: Mlm::Value("--fp8-amax-history-len"),
        mlm_default: Some("1"),
        label: "FP8 amax history",
        help: "delayed scaling: amax values kept per quantizer (a few KB per layer)",
        source: ML_TC,
    };
    disable_parameter_transpose_cache: bool = false, {
        group: Group::LowPrecision,
        default: "false",
        megatron_core: "TransformerConfig.disable_parameter_transpose_cache = False",
        bridge: &["model.disable_parameter_transpose_cache"],
        mlm: Mlm::Config("TransformerConfig.disable_parameter_transpose_cache (excluded from Megatron-LM's generated arguments)"),
        label: "No FP8 weight cache",
        help: "bf16 weights under FP8/FP4: re-quantize every microbatch instead of caching one quantized copy per module",
        source: "ML megatron/core/extensions/transformer_engine.py (is_first_microbatch); megatron/training/arguments.py exclude list",
    };

    // Recompute
    recompute_modules: Option<Vec<RecomputeModule>> = None, {
        group: Group::Recompute,
        default: "null: [\"core_attn\"] (Megatron-Core's default) with selective recompute",
        megatron_core: "TransformerConfig.recompute_modules = None (→ [\"core_attn\"] in __post_init__)",
        bridge: &["model.recompute_modules"],
        mlm: Mlm::Value("--recompute-modules"),
        label: "Recompute modules",
        help: "selective recompute: core_attn, mlp, moe, shared_experts (checkpoints); moe_act, layernorm, mla_up_proj (output-discarding); gdn_norm_out, gdp_in_proj, gdp_qkv, mhc (hybrid layers)",
        source: ML_TC,
    };
    distribute_saved_activations: bool = false, {
        group: Group::Recompute,
        default: "false",
        megatron_core: "TransformerConfig.distribute_saved_activations = False",
        bridge: &["model.distribute_saved_activations"],
        mlm: Mlm::Flag("--distribute-saved-activations"),
        label: "Distribute saved activations",
        help: "full recompute without sequence parallelism: split each checkpointed layer input over TP",
        source: ML_TC,
    };

    // Attention kernel: which core attention runs decides whether the s² scores are saved.
    transformer_impl: TransformerImpl = TransformerImpl::TransformerEngine, {
        group: Group::Attention,
        default: "transformer_engine",
        megatron_core: "TransformerConfig.transformer_impl = 'transformer_engine'",
        bridge: &["model.transformer_impl"],
        mlm: Mlm::Value("--transformer-impl"),
        label: "Transformer implementation",
        help: "transformer_engine (TE modules, fused/flash attention) or local (Megatron-Core's own modules: DotProductAttention saves the b·heads·s² attention probabilities of every layer)",
        source: "ML megatron/core/transformer/transformer_config.py l.1314 (transformer_impl); megatron/core/transformer/dot_product_attention.py l.160-220 (the local core attention)",
    };
    attention_backend: AttnBackend = AttnBackend::Auto, {
        group: Group::Attention,
        default: "auto",
        megatron_core: "TransformerConfig.attention_backend = AttnBackend.auto",
        bridge: &["model.attention_backend"],
        mlm: Mlm::Value("--attention-backend"),
        label: "Attention backend",
        help: "auto, flash or fused keep no s² scores; unfused (TE's UnfusedDotProductAttention) and local (Megatron-Core's DotProductAttention, with --transformer-impl local) save the attention probabilities of every layer",
        source: "ML megatron/core/transformer/enums.py l.51-58 (AttnBackend); megatron/core/models/common/language_module/language_module.py l.129-147 (NVTE_FLASH_ATTN / NVTE_FUSED_ATTN / NVTE_UNFUSED_ATTN per backend)",
    };
    attention_dropout: f64 = 0.1, {
        group: Group::Attention,
        bounds: Some((0.0, 1.0)),
        default: "0.1",
        megatron_core: "TransformerConfig.attention_dropout = 0.1",
        bridge: &["model.attention_dropout"],
        mlm: Mlm::Value("--attention-dropout"),
        label: "Attention dropout",
        help: "with unfused attention, a dropout above 0 also saves its mask (1 B) and its output for every s² score; flash and fused attention regenerate it",
        source: "ML megatron/core/transformer/transformer_config.py l.191; megatron/core/transformer/dot_product_attention.py l.114-120, 210-220",
    };

    // The loss kernel: what the last stage keeps of each microbatch's logits.
    cross_entropy_loss_fusion: bool = false, {
        group: Group::Attention,
        default: "false",
        megatron_core: "ModelParallelConfig.cross_entropy_loss_fusion = False",
        differs: "Megatron Bridge's GPTModelProvider and MambaModelProvider default it to True (models/gpt_provider.py:205 @ 067f987df03b); with the native kernel the logits cost the same either way",
        bridge: &["model.cross_entropy_loss_fusion"],
        mlm: Mlm::Flag("--cross-entropy-loss-fusion"),
        label: "Fused cross-entropy loss",
        help: "a fused loss kernel; with cross_entropy_fusion_impl = te the last stage keeps only the bf16 logits (the gradient is written over them), not an fp32 copy",
        source: "ML megatron/core/model_parallel_config.py l.320-328; megatron/core/models/common/language_module/language_module.py compute_language_model_loss",
    };
    cross_entropy_fusion_impl: CrossEntropyFusionImpl = CrossEntropyFusionImpl::Native, {
        group: Group::Attention,
        default: "native",
        megatron_core: "ModelParallelConfig.cross_entropy_fusion_impl = 'native'",
        bridge: &["model.cross_entropy_fusion_impl"],
        mlm: Mlm::Value("--cross-entropy-fusion-impl"),
        label: "Cross-entropy kernel",
        help: "native (Megatron-Core's fused kernel: an fp32 copy of the logits, as unfused) or te (Transformer Engine's parallel_cross_entropy: the gradient in place of the bf16 logits); Megatron-LM refuses te, Bridge's performance recipes run it",
        source: "ML megatron/core/fusions/fused_cross_entropy.py (saves the fp32 exp_logits); TE transformer_engine/pytorch/cross_entropy.py (saves its input, overwritten with the gradient); megatron/training/arguments.py l.1697-1702",
    };

    // Offloading
    optimizer_cpu_offload: bool = false, {
        group: Group::Offloading,
        default: "false",
        megatron_core: "OptimizerConfig.optimizer_cpu_offload = False",
        bridge: &["optimizer.optimizer_cpu_offload"],
        mlm: Mlm::Flag("--optimizer-cpu-offload"),
        label: "Optimizer CPU offload",
        help: "move the optimizer step (fp32 master, moments, fp32 grads) of a fraction of the shard to host memory",
        source: "ML megatron/core/optimizer/__init__.py, cpu_offloading/hybrid_optimizer.py",
    };
    optimizer_offload_fraction: Option<f64> = None, {
        group: Group::Offloading,
        bounds: Some((0.0, 1.0)),
        default: "null: 1.0 (Megatron-LM's default) when optimizer_cpu_offload is on",
        megatron_core: "OptimizerConfig.optimizer_offload_fraction = 0.0",
        differs: "Megatron-LM's --optimizer-offload-fraction defaults to 1.0; Megatron-Core's and Bridge's 0.0 offloads nothing; meshplan takes 1.0 and the Bridge exports write it",
        bridge: &["optimizer.optimizer_offload_fraction"],
        mlm: Mlm::Value("--optimizer-offload-fraction"),
        mlm_default: Some("1.0"),
        label: "Offload fraction",
        help: "share of the optimizer shard moved to the host (whole tensors, greedily by size)",
        source: "ML megatron/core/optimizer/optimizer_config.py; megatron/training/arguments.py --optimizer-offload-fraction",
    };
    cpu_offloading: bool = false, {
        group: Group::Offloading,
        default: "false",
        megatron_core: "TransformerConfig.cpu_offloading = False",
        differs: "Megatron-LM has no --cpu-offloading flag (excluded from its generated arguments): validate_args turns it on when --cpu-offloading-num-layers > 0, as the Megatron-LM import does; Megatron Bridge's perf harness sets it with cpu_offloading_num_layers",
        bridge: &["model.cpu_offloading"],
        mlm: Mlm::Config("TransformerConfig.cpu_offloading (--cpu-offloading-num-layers above 0 turns it on)"),
        label: "Layer CPU offload",
        help: "offload the saved activations of the first cpu_offloading_num_layers layers to host memory after their forward, reload them for backward (PP 1, no recompute)",
        source: "ML megatron/core/transformer/transformer_config.py l.1884-1899 (the range, PP and recompute checks), transformer_block.py l.306 (get_cpu_offload_context); megatron/training/arguments.py l.1950 (cpu_offloading on when num_layers > 0)",
    };
    cpu_offloading_num_layers: u64 = 0, {
        group: Group::Offloading,
        bounds: Some((0.0, (1u64 << 20) as f64)),
        default: "0",
        megatron_core: "TransformerConfig.cpu_offloading_num_layers = 0",
        bridge: &["model.cpu_offloading_num_layers"],
        mlm: Mlm::Value("--cpu-offloading-num-layers"),
        label: "Offloaded layers",
        help: "with cpu_offloading: layers whose saved activations go to host memory (fewer than num_layers)",
        source: "ML megatron/core/transformer/transformer_config.py l.1884 (0 ≤ n < num_layers); TE cpu_offload_v1.py get_cpu_offload_context (num_offload_group = n of model_layers)",
    };
    fine_grained_activation_offloading: bool = false, {
        group: Group::Offloading,
        default: "false",
        megatron_core: "TransformerConfig.fine_grained_activation_offloading = False",
        bridge: &["model.fine_grained_activation_offloading"],
        mlm: Mlm::Flag("--fine-grained-activation-offloading"),
        label: "Activation offloading",
        help: "offload the inputs of the modules in offload_modules to host memory in forward, reload them for backward",
        source: ML_TC,
    };
    offload_modules: Vec<OffloadModule> = Vec::new(), {
        group: Group::Offloading,
        default: "[]",
        megatron_core: "TransformerConfig.offload_modules = []",
        bridge: &["model.offload_modules"],
        mlm: Mlm::Value("--offload-modules"),
        label: "Offloaded modules",
        help: "with activation offloading: attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, fused_group_mlp, gdp_qkv",
        source: ML_TC,
    };

    // FSDP & buffers
    use_megatron_fsdp: bool = false, {
        group: Group::FsdpBuffers,
        default: "false",
        megatron_core: "DistributedDataParallelConfig.use_megatron_fsdp = False",
        differs: "Bridge also has dist.use_megatron_fsdp (either turns it on)",
        bridge: &["ddp.use_megatron_fsdp", "dist.use_megatron_fsdp"],
        mlm: Mlm::Flag("--use-megatron-fsdp"),
        label: "Megatron-FSDP",
        help: "shard optimizer state, gradients and (optim_grads_params) weights over data parallelism",
        source: ML_DDP,
    };
    data_parallel_sharding_strategy: ShardingStrategy = ShardingStrategy::NoShard, {
        group: Group::FsdpBuffers,
        default: "no_shard",
        megatron_core: "DistributedDataParallelConfig.data_parallel_sharding_strategy = 'no_shard'",
        differs: "Megatron-LM's --data-parallel-sharding-strategy defaults to optim_grads_params, and Bridge's _pretrain_common sets it (both matter only with Megatron-FSDP); meshplan follows Megatron-Core, and the Megatron-LM export writes it whenever Megatron-FSDP is on",
        bridge: &["ddp.data_parallel_sharding_strategy"],
        mlm: Mlm::Value("--data-parallel-sharding-strategy"),
        mlm_default: Some("\"optim_grads_params\""),
        label: "FSDP sharding",
        help: "Megatron-FSDP: no_shard, optim (ZeRO-1), optim_grads (ZeRO-2), optim_grads_params (ZeRO-3)",
        source: "ML megatron/core/distributed/distributed_data_parallel_config.py; megatron/training/arguments.py",
    };
    overlap_grad_reduce: bool = false, {
        group: Group::FsdpBuffers,
        default: "false",
        megatron_core: "DistributedDataParallelConfig.overlap_grad_reduce = False",
        differs: "Bridge's _pretrain_common turns it on",
        bridge: &["ddp.overlap_grad_reduce"],
        mlm: Mlm::Flag("--overlap-grad-reduce"),
        label: "Overlap grad reduce",
        help: "reduce gradients bucket by bucket during backward (buckets are views of the one grad buffer)",
        source: ML_DDP,
    };
    overlap_param_gather: bool = false, {
        group: Group::FsdpBuffers,
        default: "false",
        megatron_core: "DistributedDataParallelConfig.overlap_param_gather = False",
        differs: "Bridge's _pretrain_common turns it on and syncs optimizer.overlap_param_gather",
        bridge: &["ddp.overlap_param_gather", "optimizer.overlap_param_gather"],
        mlm: Mlm::Flag("--overlap-param-gather"),
        label: "Overlap param gather",
        help: "distributed optimizer: all-gather the updated weights bucket by bucket during the next forward",
        source: ML_DDP,
    };

    // CUDA graphs
    cuda_graph_impl: CudaGraphImpl = CudaGraphImpl::None, {
        group: Group::CudaGraphs,
        default: "none",
        megatron_core: "TransformerConfig.cuda_graph_impl = 'none'",
        bridge: &["model.cuda_graph_impl"],
        mlm: Mlm::Value("--cuda-graph-impl"),
        label: "CUDA graphs",
        help: "none, local (Megatron-Core's graphs), transformer_engine (TE's per-layer graphs) or full_iteration",
        source: ML_TC,
    };
    cuda_graph_scope: Vec<CudaGraphScope> = Vec::new(), {
        group: Group::CudaGraphs,
        default: "[] (the whole layer)",
        megatron_core: "TransformerConfig.cuda_graph_modules = [] (cuda_graph_scope is its deprecated name, migrated in __post_init__)",
        differs: "Bridge recipes still write model.cuda_graph_scope, which megatron-core migrates and which cannot be set together with cuda_graph_modules: the Bridge exports write model.cuda_graph_modules and clear model.cuda_graph_scope; Megatron-LM's flag is --cuda-graph-modules (--cuda-graph-scope is hidden)",
        bridge: &["model.cuda_graph_modules"],
        bridge_clears: &["model.cuda_graph_scope"],
        mlm: Mlm::Value("--cuda-graph-modules"),
        label: "CUDA graph scope",
        help: "which parts of each layer are graphed: attn, mlp, moe, moe_router, moe_preprocess, mamba (empty: the whole layer)",
        source: "ML megatron/core/transformer/transformer_config.py; megatron/training/arguments.py --cuda-graph-modules",
    };

    // MoE dispatch
    moe_token_dispatcher_type: DispatcherType = DispatcherType::Allgather, {
        group: Group::MoeDispatch,
        default: "allgather",
        megatron_core: "TransformerConfig.moe_token_dispatcher_type = 'allgather'",
        differs: "Bridge MoE recipes set alltoall, and apply_flex_dispatcher_backend turns it into flex on GPUs the backend supports",
        bridge: &["model.moe_token_dispatcher_type"],
        mlm: Mlm::Value("--moe-token-dispatcher-type"),
        label: "Token dispatcher",
        help: "how tokens reach their experts: allgather, alltoall or flex (DeepEP / HybridEP)",
        source: ML_TC,
    };
    moe_flex_dispatcher_backend: FlexBackend = FlexBackend::Deepep, {
        group: Group::MoeDispatch,
        default: "deepep",
        megatron_core: "TransformerConfig.moe_flex_dispatcher_backend = 'deepep'",
        bridge: &["model.moe_flex_dispatcher_backend"],
        mlm: Mlm::Value("--moe-flex-dispatcher-backend"),
        label: "Flex backend",
        help: "with the flex dispatcher: deepep or hybridep (their buffers are allocated outside PyTorch)",
        source: ML_TC,
    };
    moe_expert_capacity_factor: Option<f64> = None, {
        group: Group::MoeDispatch,
        bounds: Some((0.0, 1024.0)),
        default: "null (dropless)",
        megatron_core: "TransformerConfig.moe_expert_capacity_factor = None",
        bridge: &["model.moe_expert_capacity_factor"],
        mlm: Mlm::Value("--moe-expert-capacity-factor"),
        label: "Expert capacity factor",
        help: "tokens each expert takes, relative to a balanced share; null keeps every token (dropless)",
        source: ML_TC,
    };
    moe_pad_expert_input_to_capacity: bool = false, {
        group: Group::MoeDispatch,
        default: "false",
        megatron_core: "TransformerConfig.moe_pad_expert_input_to_capacity = False",
        bridge: &["model.moe_pad_expert_input_to_capacity"],
        mlm: Mlm::Flag("--moe-pad-expert-input-to-capacity"),
        label: "Pad to capacity",
        help: "with a capacity factor: pad every expert's input to its capacity (fixed buffer sizes)",
        source: ML_TC,
    };
    moe_router_force_load_balancing: bool = false, {
        group: Group::MoeDispatch,
        default: "false",
        megatron_core: "TransformerConfig.moe_router_force_load_balancing = False",
        differs: "Bridge's performance configs turn it on",
        bridge: &["model.moe_router_force_load_balancing"],
        mlm: Mlm::Flag("--moe-router-force-load-balancing"),
        label: "Force balanced routing",
        help: "benchmarking: route tokens uniformly at random, so every rank gets the mean token count",
        source: ML_TC,
    };
    moe_routing_imbalance_factor: f64 = 1.0, {
        group: Group::MoeDispatch,
        bounds: Some((1.0, 64.0)),
        default: "1.0: uniform routing, what moe_router_force_load_balancing and capacity padding guarantee; no published derivation gives a hotter rank a larger factor, so set it from your logs",
        megatron_core: "none: meshplan's input, not a Megatron setting",
        bridge: &[],
        mlm: Mlm::Meshplan,
        label: "Routing imbalance (meshplan)",
        help: "meshplan's input: tokens the busiest expert rank receives, relative to the mean (1.0 = balanced)",
        source: "meshplan; MB skills/nemo-mbridge-perf-activation-recompute/SKILL.md (hot ranks above rank 0's peak)",
    };

    // Communication overlap
    cp_comm_type: Option<CpCommType> = None, {
        group: Group::CommOverlap,
        default: "null: p2p (Megatron-LM's --cp-comm-type default; Transformer Engine's for Megatron-Core's None)",
        megatron_core: "TransformerConfig.cp_comm_type = None (a string for every layer or a list per layer: p2p, all_gather, a2a, a2a+p2p)",
        differs: "Megatron-LM's --cp-comm-type defaults to p2p; meshplan takes one type for every layer",
        bridge: &["model.cp_comm_type"],
        mlm: Mlm::Value("--cp-comm-type"),
        label: "CP communication",
        help: "context parallelism's exchange: p2p (KV ring, overlapped with attention), all_gather (KV gathered first, not overlapped), a2a (Ulysses: heads scattered over CP), a2a+p2p (hierarchical)",
        source: ML_TC,
    };
    tp_comm_overlap: bool = false, {
        group: Group::CommOverlap,
        default: "false",
        megatron_core: "ModelParallelConfig.tp_comm_overlap = False",
        differs: "Bridge sets it through comm_overlap (CommOverlapConfig), which turns it off when TP < 2 or without sequence parallelism",
        bridge: &["comm_overlap.tp_comm_overlap"],
        mlm: Mlm::Flag("--tp-comm-overlap"),
        label: "TP comm overlap",
        help: "overlap TP all-gather / reduce-scatter with GEMMs through Transformer Engine userbuffers (needs sequence parallelism)",
        source: "ML megatron/core/model_parallel_config.py; MB training/comm_overlap.py",
    };
    overlap_moe_expert_parallel_comm: bool = false, {
        group: Group::CommOverlap,
        default: "false",
        megatron_core: "ModelParallelConfig.overlap_moe_expert_parallel_comm = False",
        differs: "Bridge sets it through comm_overlap.overlap_moe_expert_parallel_comm (its perf recipes' moe_a2a_overlap)",
        bridge: &["comm_overlap.overlap_moe_expert_parallel_comm"],
        mlm: Mlm::Flag("--overlap-moe-expert-parallel-comm"),
        label: "EP all-to-all overlap",
        help: "overlap the MoE all-to-all of one micro-batch with the compute of another (1F1B schedule); the step-time model hides a share of the EP communication",
        source: "ML megatron/core/model_parallel_config.py; MB training/comm_overlap.py",
    };
    defer_embedding_wgrad_compute: bool = false, {
        group: Group::CommOverlap,
        default: "false",
        megatron_core: "ModelParallelConfig.defer_embedding_wgrad_compute = False",
        bridge: &["comm_overlap.defer_embedding_wgrad_compute"],
        mlm: Mlm::Flag("--defer-embedding-wgrad-compute"),
        label: "Defer output-layer wgrad",
        help: "last stage: keep the output layer's inputs and gradients for up to wgrad_deferral_limit microbatches",
        source: ML_MPC,
    };
    wgrad_deferral_limit: u64 = 0, {
        group: Group::CommOverlap,
        bounds: Some((0.0, (1u64 << 20) as f64)),
        default: "0 (no limit: every microbatch of the step)",
        megatron_core: "ModelParallelConfig.wgrad_deferral_limit = 0",
        bridge: &["comm_overlap.wgrad_deferral_limit"],
        mlm: Mlm::Value("--wgrad-deferral-limit"),
        label: "Wgrad deferral limit",
        help: "with deferred output-layer wgrad: microbatches deferred at most (0: all)",
        source: ML_MPC,
    };

    // Measured throughput (meshplan's input: the sanity alarm compares it with the peak and the estimate)
    measured_tflops_per_gpu: Option<f64> = None, {
        group: Group::Measured,
        bounds: Some((0.0, 1.0e6)),
        default: "null (not measured)",
        megatron_core: "none: meshplan's input; Megatron-LM logs it as \"throughput per GPU (TFLOP/s/GPU)\"",
        bridge: &[],
        mlm: Mlm::Meshplan,
        label: "Measured TFLOP/s per GPU",
        help: "the model TFLOP/s per GPU your run logged: above the GPU's peak or far below the estimate, meshplan says what could explain it",
        source: "meshplan; ML megatron/training/training.py training_log (throughput per GPU (TFLOP/s/GPU))",
    };
    measured_tokens_per_s_per_gpu: Option<f64> = None, {
        group: Group::Measured,
        bounds: Some((0.0, 1.0e9)),
        default: "null (not measured)",
        megatron_core: "none: meshplan's input; Megatron Bridge's performance tables report Tokens / sec / GPU",
        bridge: &[],
        mlm: Mlm::Meshplan,
        label: "Measured tokens/s per GPU",
        help: "the tokens per second per GPU your run achieved (used when no TFLOP/s is given; converted with meshplan's model FLOPs per token)",
        source: "meshplan; MB docs/performance-summary.md (Tokens / sec / GPU)",
    };
    // LoRA (PEFT): a frozen base and trained adapters.
    peft: Peft = Peft::None, {
        group: Group::Peft,
        default: "none",
        megatron_core: "none: Megatron Bridge's ConfigContainer.peft (a LoRA object) freezes the base model and adds adapters",
        differs: "wrappers spell it --train_type lora (ms-swift's Megatron trainer); Megatron-LM has no PEFT",
        bridge: &[],
        mlm: Mlm::Config("Megatron Bridge's ConfigContainer.peft = LoRA(...) (Megatron-LM has no PEFT)"),
        label: "PEFT",
        help: "lora: the base weights are frozen (weights only: no gradients, master weights or optimizer state) and low-rank adapters on lora_target_modules are trained",
        source: "MB src/megatron/bridge/peft/base.py l.176-193 (freeze_model: requires_grad = False), peft/lora.py l.92-160 (LoRA)",
    };
    lora_dim: u64 = 32, {
        group: Group::Peft,
        bounds: Some((1.0, 65536.0)),
        default: "32",
        megatron_core: "none: Megatron Bridge LoRA.dim = 32",
        differs: "ms-swift's --lora_rank defaults to 8",
        bridge: &["peft.dim"],
        mlm: Mlm::Config("Megatron Bridge's LoRA(dim=...) (Megatron-LM has no PEFT)"),
        label: "LoRA rank",
        help: "the adapters' rank r: each targeted linear of in × out gains r·(in + out) trained parameters (MoE experts on one EP rank share one adapter, Bridge's share_expert_adapters)",
        source: "MB src/megatron/bridge/peft/lora.py l.146 (dim = 32), l.131-133 (share_expert_adapters = True)",
    };
    lora_target_modules: Vec<LoraTarget> = vec![LoraTarget::LinearQkv, LoraTarget::LinearProj, LoraTarget::LinearFc1, LoraTarget::LinearFc2], {
        group: Group::Peft,
        default: "[\"linear_qkv\", \"linear_proj\", \"linear_fc1\", \"linear_fc2\"]",
        megatron_core: "none: Megatron Bridge LoRA.target_modules",
        bridge: &["peft.target_modules"],
        mlm: Mlm::Config("Megatron Bridge's LoRA(target_modules=...) (Megatron-LM has no PEFT)"),
        label: "LoRA targets",
        help: "the linears that get adapters: linear_qkv, linear_proj (attention), linear_fc1, linear_fc2 (MLP and experts)",
        source: "MB src/megatron/bridge/peft/lora.py l.143-145",
    };
    // Vision encoder (a model with a vision_config: built on the first pipeline stage)
    freeze_vision_model: bool = false, {
        group: Group::VisionEncoder,
        default: "false",
        megatron_core: "none in TransformerConfig: LLaVAModel.freeze(freeze_vision_model=…) / Qwen3VLModel.freeze sets requires_grad = False",
        bridge: &["model.freeze_vision_model"],
        mlm: Mlm::Config("LLaVAModel.freeze(freeze_vision_model=True) (examples/multimodal: --freeze-ViT)"),
        label: "Freeze vision encoder",
        help: "a frozen encoder keeps its weights only (no gradients, no optimizer state) and runs forward only",
        source: "MB src/megatron/bridge/models/qwen_vl/qwen3_vl_provider.py (freeze_vision_model, model.freeze); ML megatron/core/models/multimodal/llava_model.py freeze",
    };
    freeze_vision_projection: bool = false, {
        group: Group::VisionEncoder,
        default: "false",
        megatron_core: "none in TransformerConfig: LLaVAModel.freeze(freeze_vision_projection=…)",
        bridge: &["model.freeze_vision_projection"],
        mlm: Mlm::Config("LLaVAModel.freeze(freeze_vision_projection=True)"),
        label: "Freeze vision projection",
        help: "a frozen projector (patch merger / adapter into the language model's width) keeps its weights only",
        source: "MB src/megatron/bridge/models/qwen_vl/qwen3_vl_provider.py (freeze_vision_projection); ML megatron/core/models/multimodal/llava_model.py freeze",
    };
    image_tokens_per_sample: u64 = 0, {
        group: Group::VisionEncoder,
        bounds: Some((0.0, (1u64 << 24) as f64)),
        default: "0 (no images: the encoder's weights are counted, its activations and FLOPs are not)",
        megatron_core: "none: meshplan's input (Megatron-LM's MIMO example estimates FLOPs from --avg-vit-tokens-per-batch)",
        bridge: &[],
        mlm: Mlm::Meshplan,
        label: "Image tokens per sample",
        help: "language-model tokens per sequence that come from images (after the patch merge); the encoder runs patches_per_token patches for each",
        source: "meshplan; ML examples/mimo (--avg-vit-tokens-per-batch, for FLOPs)",
    };
    images_per_sample: u64 = 1, {
        group: Group::VisionEncoder,
        bounds: Some((1.0, (1u64 << 20) as f64)),
        default: "1",
        megatron_core: "none: meshplan's input",
        bridge: &[],
        mlm: Mlm::Meshplan,
        label: "Images per sample",
        help: "images the image tokens of a sequence come from: each image's patches attend to each other only",
        source: "meshplan; transformers Qwen3VLVisionModel / Llama4VisionModel (attention within one image or tile)",
    };
}

/// `cluster.host_memory_per_node_gb`: a cluster field, read with the cluster (Megatron has no name for it).
pub const HOST_MEMORY: Setting = HOST_MEMORY_FULL.row();
const HOST_MEMORY_DOC: SettingDoc = HOST_MEMORY_FULL.doc();
const HOST_MEMORY_FULL: Full = Full {
    key: "host_memory_per_node_gb",
    section: Section::Cluster,
    group: Group::Offloading,
    ty: Ty::Float,
    nullable: true,
    bounds: Some((0.0, 1_048_576.0)),
    default: "the GPU catalogue's system: host memory per node of that GPU's reference system (null: unknown, not checked)",
    megatron_core: "none: Megatron has no such setting",
    bridge: &[],
    bridge_clears: &[],
    torch_dtype: false,
    mlm: Mlm::Meshplan,
    mlm_default: None,
    label: "Host memory per node (GiB)",
    help: "meshplan's input: CPU memory of one node, in GiB as GPU memory is, for optimizer and activation offloading",
    source: "meshplan; crates/core/data/gpus.json (host_memory_per_node_gb, with its source per system)",
    ..FULL_ROW
};

/// Rows of sections other than `training`.
pub const CLUSTER_SETTINGS: &[Setting] = &[HOST_MEMORY];

/// Every row, training first.
pub fn all() -> impl Iterator<Item = &'static Setting> {
    SETTINGS.iter().chain(CLUSTER_SETTINGS)
}

/// The row whose key is `key` (with or without its section: `training.fp8_recipe` or `fp8_recipe`).
pub fn setting(key: &str) -> Option<&'static Setting> {
    let key = key.trim();
    all().find(|r| r.key == key || r.path() == key)
}

// ---------------------------------------------------------------------------------------------------
// Resolution: the defaults that depend on other settings
// ---------------------------------------------------------------------------------------------------

/// One Megatron Bridge mixed-precision recipe: the fields of `MixedPrecisionConfig` it sets that meshplan reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MixedPrecisionRecipe {
    /// The recipe's registered name, e.g. `bf16_with_fp8_current_scaling_mixed`.
    pub name: String,
    /// The plan precision it serves.
    pub precision: Precision,
    /// The FP8 recipe it sets (null: not an FP8 recipe).
    pub fp8_recipe: Option<Fp8Recipe>,
    /// `fp8` (format) / `fp4` (format).
    pub fp8: Option<String>,
    pub fp4: Option<String>,
    pub grad_reduce_in_fp32: bool,
    pub fp8_param_gather: bool,
    pub fp4_param_gather: bool,
    pub reuse_grad_buf_for_mxfp8_param_ag: bool,
    pub fp8_amax_history_len: u64,
    pub first_last_layers_bf16: bool,
    pub num_layers_at_start_in_bf16: u64,
    pub num_layers_at_end_in_bf16: u64,
    pub source: String,
}

/// Bridge's mixed-precision recipes meshplan maps precisions onto, from `data/mixed_precision.json`.
pub fn mixed_precision_recipes() -> &'static [MixedPrecisionRecipe] {
    static RECIPES: OnceLock<Vec<MixedPrecisionRecipe>> = OnceLock::new();
    // The data file is checked by tests; a broken file yields no recipes (every setting then takes Megatron-Core's
    // default), never a panic.
    RECIPES.get_or_init(|| crate::presets::read::each(include_str!(concat!(env!("OUT_DIR"), "/mixed_precision.json")), None, MixedPrecisionRecipe::read))
}

impl MixedPrecisionRecipe {
    /// One recipe read by hand, as serde's derived reader reads it (tests/catalogue_read.rs checks they agree).
    fn read(o: &crate::presets::read::Obj) -> Option<MixedPrecisionRecipe> {
        use crate::presets::read::*;
        let choice = |v: &Value| v.as_str().and_then(|s| Precision::ALL.iter().copied().find(|c| c.key() == s));
        Some(MixedPrecisionRecipe {
            name: string(o, "name")?,
            precision: o.get("precision").and_then(choice)?,
            fp8_recipe: opt(o, "fp8_recipe", Fp8Recipe::read)?,
            fp8: opt_string(o, "fp8")?,
            fp4: opt_string(o, "fp4")?,
            grad_reduce_in_fp32: bool(o, "grad_reduce_in_fp32")?,
            fp8_param_gather: bool(o, "fp8_param_gather")?,
            fp4_param_gather: bool(o, "fp4_param_gather")?,
            reuse_grad_buf_for_mxfp8_param_ag: bool(o, "reuse_grad_buf_for_mxfp8_param_ag")?,
            fp8_amax_history_len: u64(o, "fp8_amax_history_len")?,
            first_last_layers_bf16: bool(o, "first_last_layers_bf16")?,
            num_layers_at_start_in_bf16: u64(o, "num_layers_at_start_in_bf16")?,
            num_layers_at_end_in_bf16: u64(o, "num_layers_at_end_in_bf16")?,
            source: string(o, "source")?,
        })
    }
}

/// The FP8 recipe a GPU runs by default: its catalogue data's (gpus.json `fp8_recipe`: MXFP8 on Blackwell,
/// per-tensor current scaling on Hopper and others); a GPU without FP8 (the rules flag the plan) gets the per-tensor
/// recipe every FP8 GPU runs.
pub fn default_fp8_recipe(gpu: &GpuSpec) -> Fp8Recipe {
    gpu.fp8_recipe.unwrap_or(Fp8Recipe::Tensorwise)
}

/// The low-precision and gradient settings as they run: the plan's values, or the defaults of the Bridge
/// mixed-precision recipe its precision (and FP8 recipe) selects.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LowPrecision {
    /// The Bridge mixed-precision recipe (None for fp32, which Bridge has no recipe for).
    pub recipe: Option<&'static str>,
    /// Set only when the precision is fp8.
    pub fp8_recipe: Option<Fp8Recipe>,
    pub grad_reduce_in_fp32: bool,
    pub fp8_param_gather: bool,
    pub fp4_param_gather: bool,
    pub reuse_grad_buf_for_mxfp8_param_ag: bool,
    pub fp8_amax_history_len: u64,
    pub first_last_layers_bf16: bool,
    pub num_layers_at_start_in_bf16: u64,
    pub num_layers_at_end_in_bf16: u64,
}

impl LowPrecision {
    /// The first and last layers kept in BF16 as the run has them: the counts under `first_last_layers_bf16`, and none
    /// when the GEMMs are not FP8 / FP4 (`low`).
    // Source: megatron/core/fp8_utils.py:711 is_first_last_bf16_layer (fp4_utils.py:247 alike).
    pub fn bf16_edge_layers(&self, low: bool) -> (u64, u64) {
        if low && self.first_last_layers_bf16 { (self.num_layers_at_start_in_bf16, self.num_layers_at_end_in_bf16) } else { (0, 0) }
    }
}

impl Settings {
    /// Whether the loss is Transformer Engine's fused cross entropy: `cross_entropy_fusion_impl = te` counts only under
    /// `cross_entropy_loss_fusion` (language_module.py compute_language_model_loss reads the impl only then).
    pub fn te_fused_loss(&self) -> bool {
        self.cross_entropy_loss_fusion && self.cross_entropy_fusion_impl == CrossEntropyFusionImpl::Te
    }

    /// The Bridge mixed-precision recipe this plan's precision and FP8 recipe select (None for fp32).
    pub fn mixed_precision_recipe(&self, gpu: &GpuSpec) -> Option<&'static MixedPrecisionRecipe> {
        let fp8 = (self.precision == Precision::Fp8).then(|| self.fp8_recipe.unwrap_or_else(|| default_fp8_recipe(gpu)));
        mixed_precision_recipes().iter().find(|r| r.precision == self.precision && r.fp8_recipe == fp8)
    }

    /// Every low-precision and gradient setting resolved: given values win; the rest come from the mixed-precision
    /// recipe, and the parameter all-gathers in FP8/FP4 only with a sharded optimizer (Megatron-LM's validate_args:
    /// "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp").
    pub fn low_precision(&self, gpu: &GpuSpec) -> LowPrecision {
        let r = self.mixed_precision_recipe(gpu);
        let sharded = self.use_distributed_optimizer || self.use_megatron_fsdp;
        let from = |given: Option<bool>, recipe: fn(&MixedPrecisionRecipe) -> bool| given.unwrap_or_else(|| r.is_some_and(recipe));
        let fp8_param_gather = self.fp8_param_gather.unwrap_or_else(|| sharded && r.is_some_and(|r| r.fp8_param_gather));
        let first_last = from(self.first_last_layers_bf16, |r| r.first_last_layers_bf16);
        // Counts not given: the recipe's when it keeps first/last layers in BF16, else Megatron-Core's and Megatron-LM's
        // default 1 (Bridge's MixedPrecisionConfig default is 0; the Bridge exports write the count).
        let count = |given: Option<u64>, recipe: fn(&MixedPrecisionRecipe) -> u64| {
            given.unwrap_or_else(|| r.filter(|r| r.first_last_layers_bf16).map_or(1, recipe))
        };
        LowPrecision {
            recipe: r.map(|r| r.name.as_str()),
            fp8_recipe: r.and_then(|r| r.fp8_recipe).filter(|_| self.precision == Precision::Fp8),
            // fp32 training: the grads are in the parameter dtype, fp32.
            grad_reduce_in_fp32: self.grad_reduce_in_fp32.unwrap_or_else(|| r.is_none_or(|r| r.grad_reduce_in_fp32)),
            fp8_param_gather,
            fp4_param_gather: self.fp4_param_gather.unwrap_or_else(|| sharded && r.is_some_and(|r| r.fp4_param_gather)),
            reuse_grad_buf_for_mxfp8_param_ag: self
                .reuse_grad_buf_for_mxfp8_param_ag
                .unwrap_or_else(|| fp8_param_gather && r.is_some_and(|r| r.reuse_grad_buf_for_mxfp8_param_ag)),
            fp8_amax_history_len: self.fp8_amax_history_len.unwrap_or_else(|| r.map_or(1, |r| r.fp8_amax_history_len)),
            first_last_layers_bf16: first_last,
            num_layers_at_start_in_bf16: if first_last { count(self.num_layers_at_start_in_bf16, |r| r.num_layers_at_start_in_bf16) } else { 0 },
            num_layers_at_end_in_bf16: if first_last { count(self.num_layers_at_end_in_bf16, |r| r.num_layers_at_end_in_bf16) } else { 0 },
        }
    }

    /// Row `key`'s value as the run uses it, as plan JSON: the given value, or the default resolved from the other
    /// settings (the precision's Bridge recipe for the low-precision fields, Megatron-LM's offload fraction).
    pub fn resolved(&self, key: &str, gpu: &GpuSpec) -> Option<Value> {
        let lp = || self.low_precision(gpu);
        Some(match key {
            "grad_reduce_in_fp32" => Value::Bool(lp().grad_reduce_in_fp32),
            "fp8_recipe" => lp().fp8_recipe.map_or(Value::Null, |r| Value::from(r.key())),
            "fp8_param_gather" => Value::Bool(lp().fp8_param_gather),
            "fp4_param_gather" => Value::Bool(lp().fp4_param_gather),
            "reuse_grad_buf_for_mxfp8_param_ag" => Value::Bool(lp().reuse_grad_buf_for_mxfp8_param_ag),
            "fp8_amax_history_len" => Value::from(lp().fp8_amax_history_len),
            "first_last_layers_bf16" => Value::Bool(lp().first_last_layers_bf16),
            "num_layers_at_start_in_bf16" => Value::from(lp().num_layers_at_start_in_bf16),
            "num_layers_at_end_in_bf16" => Value::from(lp().num_layers_at_end_in_bf16),
            "optimizer_offload_fraction" => SettingType::to_json(&self.offload_fraction()),
            _ => return self.get(key),
        })
    }

    /// The modules selective recompute checkpoints (Megatron-Core's default `["core_attn"]` when none are given);
    /// empty unless the granularity is selective.
    pub fn recompute_modules_run(&self) -> &[RecomputeModule] {
        match (self.recompute_granularity, &self.recompute_modules) {
            (Recompute::Selective, Some(m)) => m,
            (Recompute::Selective, None) => &[RecomputeModule::CoreAttn],
            _ => &[],
        }
    }

    /// The share of the optimizer shard offloaded to the host: 0 without optimizer_cpu_offload, else the given
    /// fraction or Megatron-LM's default 1.0.
    pub fn offload_fraction(&self) -> f64 {
        if self.optimizer_cpu_offload { self.optimizer_offload_fraction.unwrap_or(1.0) } else { 0.0 }
    }
}
