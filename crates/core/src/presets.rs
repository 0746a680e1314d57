//! The model presets, the GPU catalogue and the Megatron Bridge recipe of each preset: data files embedded at
//! build time (`data/models.json`, `data/gpus.json`, `data/recipes.json`), each entry with its source.

use crate::model::ModelConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

/// A model preset as stored in `data/models.json`: Megatron TransformerConfig fields plus provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelPreset {
    pub key: String,
    pub name: String,
    /// The model family the page groups presets by ("Llama 3", "Qwen3", "DeepSeek", "Nemotron-H", …); required.
    pub family: String,
    pub hf_id: String,
    pub source: String,
    /// TransformerConfig fields; missing ones take Megatron's defaults. (A preset's `notes` in the file are prose for
    /// the reviewer: no reader reads them, and build.rs leaves them out of the compiled-in copy.)
    pub config: Value,
}

impl ModelPreset {
    /// The preset's resolved TransformerConfig.
    pub fn model_config(&self) -> ModelConfig {
        let mut ignored = Vec::new();
        crate::model_fields::model_from_fields(Some(&self.config), None, "model", &mut ignored)
    }

    /// Whether the preset is a mixture of experts ([`ModelConfig::is_moe`]), read from its `num_moe_experts` without
    /// building the config: the tuned defaults ask it of every perf recipe's model on each plan.
    pub fn is_moe(&self) -> bool {
        self.config.get("num_moe_experts").and_then(Value::as_u64).is_some_and(|e| e > 0)
    }
}

/// One accelerator from `data/gpus.json`. Bandwidths: HBM in TB/s, scale-up in GB/s per GPU per direction,
/// scale-out in Gb/s per GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub key: String,
    pub name: String,
    pub memory_gb: f64,
    pub memory_type: String,
    pub hbm_bandwidth_tbps: f64,
    pub dense_bf16_tflops: f64,
    pub dense_fp8_tflops: Option<f64>,
    pub dense_fp4_tflops: Option<f64>,
    pub scale_up: String,
    pub scale_up_bw_gbps: Option<f64>,
    pub nvlink_domain_size: u64,
    pub gpus_per_node: u64,
    pub scale_out_gbit_per_gpu: Option<f64>,
    pub measured_bf16_matmul_tflops: Option<f64>,
    pub measured_fp8_matmul_tflops: Option<f64>,
    /// Streaming multiprocessors, and the M extent of the tensor-core tile one CTA (Blackwell: a CTA pair) computes:
    /// how wide a GEMM must be to fill the GPU (perf.rs `gemm_width_half`). Absent: the H100's 132 × 128 is assumed.
    #[serde(default)]
    pub sm_count: Option<u64>,
    #[serde(default)]
    pub mma_tile_width: Option<u64>,
    /// Host (CPU) memory per node of the GPU's reference system, in GiB (null: not stated).
    #[serde(default)]
    pub host_memory_per_node_gb: Option<f64>,
    /// The GPU architecture ("Ampere", "Hopper", "Blackwell", …).
    #[serde(default)]
    pub generation: String,
    /// The FP8 recipe Megatron Bridge trains this GPU with; `None` for a GPU without FP8 tensor cores.
    #[serde(default)]
    pub fp8_recipe: Option<Fp8Recipe>,
    /// Whether Transformer Engine keeps a transposed (column-wise) copy of each FP8 weight: GPUs before Blackwell run
    /// only TN FP8 GEMMs. Absent: assumed true (the larger footprint).
    #[serde(default)]
    pub fp8_gemm_needs_transpose: Option<bool>,
    /// A Grace CPU paired with Blackwell GPUs (GB200, GB300): the device name Megatron Bridge's DeepEP check reads is
    /// not B200/B300 (rules/model_settings.rs `flex-backend-gpu-bridge`). Absent: false.
    #[serde(default)]
    pub grace_blackwell: bool,
    /// A GPU without BF16 tensor cores (Volta: FP16 only; Megatron runs `--fp16` there): a plan in bf16 is
    /// `precision-unsupported`. Absent: false.
    #[serde(default)]
    pub no_bf16_tensor_cores: bool,
    /// The GPU a plan without `cluster.gpu` is sized on; exactly one entry of the catalogue carries it ([`default_gpu`]).
    #[serde(default)]
    pub default: bool,
    #[serde(default)]
    pub sources: Value,
    #[serde(default)]
    pub notes: String,
}

/// An FP8 scaling recipe, in Megatron-Core's spelling (`megatron/core/enums.py` `Fp8Recipe`; `--fp8-recipe`); Megatron
/// also has `custom`, which needs a quantizer factory in code. A GPU of the catalogue defaults to tensorwise or mxfp8;
/// a plan may choose any (`training.fp8_recipe`, a row of the settings table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fp8Recipe {
    /// Delayed scaling from an amax history (Megatron Bridge `bf16_with_fp8_delayed_scaling_mixed`).
    Delayed,
    /// Per-tensor current scaling (Megatron Bridge `bf16_with_fp8_current_scaling_mixed`).
    Tensorwise,
    /// 128x128 weight / 1x128 activation blocks (Megatron Bridge `bf16_with_fp8_subchannel_scaling_mixed`); Hopper.
    Blockwise,
    /// MXFP8 block scaling, 32 values per scale (Megatron Bridge `bf16_with_mxfp8_mixed`); needs Blackwell.
    Mxfp8,
}

impl GpuSpec {
    /// Device memory in bytes. Capacities are sold in GiB-sized HBM stacks (an 80 GB H100 reports 81,559 MiB).
    pub fn memory_bytes(&self) -> u64 {
        (self.memory_gb * (1u64 << 30) as f64) as u64
    }
}

/// The Megatron Bridge library recipe of one model preset, from `data/recipes.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BridgeRecipe {
    /// The model preset's key.
    pub model: String,
    /// The recipe function, importable as `from megatron.bridge.recipes import NAME`.
    pub recipe: String,
    /// The Megatron Bridge module that defines or re-exports it.
    pub source: String,
}

static MODELS: OnceLock<Vec<ModelPreset>> = OnceLock::new();
static GPUS: OnceLock<Vec<GpuSpec>> = OnceLock::new();
static RECIPES: OnceLock<Vec<BridgeRecipe>> = OnceLock::new();

pub fn models() -> &'static [ModelPreset] {
    // The data files are checked by tests; a broken file yields an empty catalogue, never a panic.
    MODELS.get_or_init(|| read::each(include_str!(concat!(env!("OUT_DIR"), "/models.json")), None, ModelPreset::read))
}

pub fn gpus() -> &'static [GpuSpec] {
    GPUS.get_or_init(|| read::each(include_str!(concat!(env!("OUT_DIR"), "/gpus.json")), None, GpuSpec::read))
}

pub fn bridge_recipes() -> &'static [BridgeRecipe] {
    RECIPES.get_or_init(|| read::each(include_str!(concat!(env!("OUT_DIR"), "/recipes.json")), Some("recipes"), BridgeRecipe::read))
}

/// The catalogue files read by hand from a [`Value`], as serde's derived readers read them (tests/catalogue_read.rs
/// checks each file against them): the page parses plans as `Value` anyway, so it then carries no serde reader of
/// these structs nor serde_json's typed deserializer. A field a struct requires that is missing or of the wrong type
/// makes the whole file unreadable (an empty catalogue), as serde's error did; keys no field names are ignored.
pub(crate) mod read {
    use serde_json::{Map, Value};

    pub type Obj = Map<String, Value>;

    /// Each element of the file's array (or of the array at `key` of the file's object) read with `f`; nothing if
    /// the file or any element is unreadable.
    pub fn each<T>(text: &str, key: Option<&str>, f: impl Fn(&Obj) -> Option<T>) -> Vec<T> {
        let v: Value = serde_json::from_str(text).unwrap_or_default();
        let list = match key {
            Some(k) => v.get(k),
            None => Some(&v),
        };
        list.and_then(Value::as_array).and_then(|a| a.iter().map(|x| f(x.as_object()?)).collect()).unwrap_or_default()
    }

    /// A required string.
    pub fn string(o: &Obj, k: &str) -> Option<String> {
        o.get(k)?.as_str().map(str::to_string)
    }

    /// A string with `#[serde(default)]`: absent is empty.
    pub fn string_or_empty(o: &Obj, k: &str) -> Option<String> {
        or_default(o, k, |v| v.as_str().map(str::to_string))
    }

    /// A field with `#[serde(default)]`: absent is `T::default()`, a value `f` cannot read (null included) `None`.
    pub fn or_default<T: Default>(o: &Obj, k: &str, f: impl Fn(&Value) -> Option<T>) -> Option<T> {
        match o.get(k) {
            None => Some(T::default()),
            Some(v) => f(v),
        }
    }

    /// An optional field: absent or null is `Some(None)`, a value `f` cannot read `None`.
    pub fn opt<T>(o: &Obj, k: &str, f: impl Fn(&Value) -> Option<T>) -> Option<Option<T>> {
        match o.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(v) => f(v).map(Some),
        }
    }

    pub fn f64(o: &Obj, k: &str) -> Option<f64> {
        o.get(k)?.as_f64()
    }

    pub fn u64(o: &Obj, k: &str) -> Option<u64> {
        o.get(k)?.as_u64()
    }

    pub fn bool(o: &Obj, k: &str) -> Option<bool> {
        o.get(k)?.as_bool()
    }

    pub fn opt_string(o: &Obj, k: &str) -> Option<Option<String>> {
        opt(o, k, |v| v.as_str().map(str::to_string))
    }

    pub fn opt_f64(o: &Obj, k: &str) -> Option<Option<f64>> {
        opt(o, k, Value::as_f64)
    }

    pub fn opt_u64(o: &Obj, k: &str) -> Option<Option<u64>> {
        opt(o, k, Value::as_u64)
    }
}

impl ModelPreset {
    fn read(o: &read::Obj) -> Option<ModelPreset> {
        use read::*;
        Some(ModelPreset {
            key: string(o, "key")?,
            name: string(o, "name")?,
            family: string(o, "family")?,
            hf_id: string(o, "hf_id")?,
            // Required, except in a build without `catalogue-sources` (the page's), whose copy has none (build.rs).
            source: if cfg!(feature = "catalogue-sources") { string(o, "source")? } else { string(o, "source").unwrap_or_default() },
            config: o.get("config")?.clone(),
        })
    }
}

impl Fp8Recipe {
    /// The recipe named as serde's `rename_all = "lowercase"` spells it (exactly, as the data files do).
    pub(crate) fn read(v: &Value) -> Option<Fp8Recipe> {
        Some(match v.as_str()? {
            "delayed" => Fp8Recipe::Delayed,
            "tensorwise" => Fp8Recipe::Tensorwise,
            "blockwise" => Fp8Recipe::Blockwise,
            "mxfp8" => Fp8Recipe::Mxfp8,
            _ => return None,
        })
    }
}

impl GpuSpec {
    fn read(o: &read::Obj) -> Option<GpuSpec> {
        use read::*;
        Some(GpuSpec {
            key: string(o, "key")?,
            name: string(o, "name")?,
            memory_gb: f64(o, "memory_gb")?,
            memory_type: string(o, "memory_type")?,
            hbm_bandwidth_tbps: f64(o, "hbm_bandwidth_tbps")?,
            dense_bf16_tflops: f64(o, "dense_bf16_tflops")?,
            dense_fp8_tflops: opt_f64(o, "dense_fp8_tflops")?,
            dense_fp4_tflops: opt_f64(o, "dense_fp4_tflops")?,
            scale_up: string(o, "scale_up")?,
            scale_up_bw_gbps: opt_f64(o, "scale_up_bw_gbps")?,
            nvlink_domain_size: u64(o, "nvlink_domain_size")?,
            gpus_per_node: u64(o, "gpus_per_node")?,
            scale_out_gbit_per_gpu: opt_f64(o, "scale_out_gbit_per_gpu")?,
            measured_bf16_matmul_tflops: opt_f64(o, "measured_bf16_matmul_tflops")?,
            measured_fp8_matmul_tflops: opt_f64(o, "measured_fp8_matmul_tflops")?,
            sm_count: opt_u64(o, "sm_count")?,
            mma_tile_width: opt_u64(o, "mma_tile_width")?,
            host_memory_per_node_gb: opt_f64(o, "host_memory_per_node_gb")?,
            generation: string_or_empty(o, "generation")?,
            fp8_recipe: opt(o, "fp8_recipe", Fp8Recipe::read)?,
            fp8_gemm_needs_transpose: opt(o, "fp8_gemm_needs_transpose", Value::as_bool)?,
            grace_blackwell: or_default(o, "grace_blackwell", Value::as_bool)?,
            no_bf16_tensor_cores: or_default(o, "no_bf16_tensor_cores", Value::as_bool)?,
            default: or_default(o, "default", Value::as_bool)?,
            sources: o.get("sources").cloned().unwrap_or_default(),
            notes: string_or_empty(o, "notes")?,
        })
    }
}

impl BridgeRecipe {
    fn read(o: &read::Obj) -> Option<BridgeRecipe> {
        use read::*;
        Some(BridgeRecipe { model: string(o, "model")?, recipe: string(o, "recipe")?, source: string(o, "source")? })
    }
}

/// The Megatron Bridge recipe of the model preset `model_key` (exactly as the plan resolved it), if Bridge ships one.
pub fn bridge_recipe(model_key: &str) -> Option<&'static BridgeRecipe> {
    bridge_recipes().iter().find(|r| r.model == model_key)
}

fn normalise(key: &str) -> String {
    key.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase()
}

/// A model preset by key (case and punctuation ignored) or by Hugging Face id.
pub fn model(key: &str) -> Option<&'static ModelPreset> {
    let k = normalise(key);
    models().iter().find(|m| normalise(&m.key) == k || normalise(&m.hf_id) == k)
}

/// Words a checkpoint's name adds to its base model's for a post-training variant or a packaging of the same
/// architecture (`Qwen3-8B-Base`, `Llama-3.1-8B-Instruct`, `gemma-2-9b-it`, ms-swift's `…-mcore` conversions), and
/// 4-digit release dates (`-2507`): dropped from the end of a name to find its base model.
const VARIANT_WORDS: &[&str] = &["base", "instruct", "chat", "it", "hf", "mcore", "megatron", "thinking", "sft", "dpo", "rlhf", "grpo"];

/// The model a checkpoint's name or path means: [`model`] of the name as given, else of its last path component
/// (`/root/Qwen3-8B`, `$HOME/models/Qwen3-8B`), else of that component with [`VARIANT_WORDS`] and release dates
/// dropped from its end (`Qwen/Qwen3-4B-Instruct-2507` → Qwen3-4B), with the words dropped — fine-tuning and
/// conversion keep the architecture, which is all a plan sizes. Bounded: names of at most 200 bytes.
pub fn model_named(name: &str) -> Option<(&'static ModelPreset, Vec<String>)> {
    if name.len() > 200 {
        return None;
    }
    if let Some(p) = model(name) {
        return Some((p, Vec::new()));
    }
    let last = name.trim_end_matches('/').rsplit(['/', '\\']).next().unwrap_or(name);
    let by_last = |n: &str| {
        let k = normalise(n);
        (!k.is_empty()).then(|| models().iter().find(|m| normalise(&m.key) == k || normalise(m.hf_id.rsplit('/').next().unwrap_or(&m.hf_id)) == k)).flatten()
    };
    let mut rest = last;
    let mut dropped = Vec::new();
    loop {
        if let Some(p) = by_last(rest) {
            return Some((p, dropped));
        }
        let cut = rest.rfind(['-', '_', '.'])?;
        let word = &rest[cut + 1..];
        let date = word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit());
        if !date && !VARIANT_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            return None;
        }
        dropped.push(word.to_string());
        rest = &rest[..cut];
    }
}

/// A GPU by key, case and punctuation ignored ("H100-SXM-80GB" = "h100_sxm_80gb").
pub fn gpu(key: &str) -> Option<&'static GpuSpec> {
    let k = normalise(key);
    gpus().iter().find(|g| normalise(&g.key) == k)
}

/// The catalogue's GPUs a name people write for one can mean ("NVIDIA H100 80GB HBM3", torch's device name;
/// "A100-SXM4-80GB", nvidia-smi's; "h800-sxm-80gb"; "gb200-nvl72", the system): the entries whose family (their key's
/// first part: h100, gb200, mi300x) is a word of the name, or starts a word followed by a letter ("H100SXM5"), and
/// whose memory size, where the key states one, is the size the name gives, if it gives one. A PCIe card or an H100
/// NVL is none of the catalogue's (SXM and NVL72 parts, other clocks and power). Bounded: the name's first 120 chars.
pub fn gpus_named(name: &str) -> Vec<&'static GpuSpec> {
    let lower: String = name.chars().take(120).collect::<String>().to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if words.iter().any(|w| *w == "pcie" || *w == "nvl") {
        return Vec::new();
    }
    let size = words.iter().find(|w| w.len() > 2 && w.ends_with("gb") && w[..w.len() - 2].bytes().all(|c| c.is_ascii_digit()));
    gpus()
        .iter()
        .filter(|g| {
            let mut parts = g.key.split('-');
            let family = parts.next().unwrap_or("");
            let named = !family.is_empty()
                && words.iter().any(|w| *w == family || (w.starts_with(family) && w[family.len()..].starts_with(|c: char| c.is_ascii_alphabetic())));
            let key_size = parts.find(|p| p.ends_with("gb"));
            named && key_size.zip(size).is_none_or(|(k, s)| k == *s)
        })
        .collect()
}

/// The catalogue's default GPU: the entry marked `"default": true` in `data/gpus.json` (tests/catalogue_read.rs
/// checks there is exactly one); its key is what a plan without `cluster.gpu` and an import naming no GPU take.
/// `None` only for an unreadable catalogue.
pub fn default_gpu() -> Option<&'static GpuSpec> {
    gpus().iter().find(|g| g.default)
}

/// The default GPU's key ("" for an unreadable catalogue, which every GPU look-up then refuses).
pub fn default_gpu_key() -> &'static str {
    default_gpu().map_or("", |g| g.key.as_str())
}

/// What `meshplan presets` lists: every model with its parameter counts, and every GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub models: Vec<ModelSummary>,
    pub gpus: Vec<GpuSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    pub key: String,
    pub name: String,
    /// The preset's model family (`family` in `data/models.json`).
    pub family: String,
    pub hf_id: String,
    pub source: String,
    pub moe: bool,
    pub total_parameters: u64,
    pub active_parameters: u64,
    pub num_layers: u64,
    pub hidden_size: u64,
    pub num_moe_experts: Option<u64>,
    pub moe_router_topk: Option<u64>,
    /// The preset's TransformerConfig, with Megatron's defaults filled in.
    pub config: ModelConfig,
}

pub fn catalog() -> Catalog {
    let models = models()
        .iter()
        .map(|p| {
            let c = p.model_config();
            let counts = c.param_counts();
            ModelSummary {
                key: p.key.clone(),
                name: p.name.clone(),
                family: p.family.clone(),
                hf_id: p.hf_id.clone(),
                source: p.source.clone(),
                moe: c.is_moe(),
                total_parameters: u64::try_from(counts.total).unwrap_or(u64::MAX),
                active_parameters: u64::try_from(counts.active).unwrap_or(u64::MAX),
                num_layers: c.num_layers,
                hidden_size: c.hidden_size,
                num_moe_experts: c.num_moe_experts,
                moe_router_topk: c.is_moe().then_some(c.moe_router_topk),
                config: c,
            }
        })
        .collect();
    Catalog { models, gpus: gpus().to_vec() }
}
