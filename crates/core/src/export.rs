//! Exports: the resolved plan as text a user pastes into a launcher — Megatron Bridge Python overrides,
//! a Megatron Bridge launch command, Megatron-LM arguments, a Slurm header, and the plan file itself.
//!
//! Every function is pure and total. Nothing typed by a user is interpolated into code: model names and
//! rank orders appear only in comments, after [`comment_text`] has removed anything that could end the
//! comment line (control characters, Unicode line separators, bidirectional overrides); numbers and
//! the fixed spellings below are the only things written as code.
//!
//! Upstream names were checked against NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b and NVIDIA/Megatron-LM
//! @ d98e8a64ddf3; each group of names cites the file it comes from.

use crate::layout::{DEFAULT_ORDER, TP_PP_DP_ORDER};
use crate::names;
use crate::parallelism::{Arg, Kind, PARALLELISM, ParSetting};
use crate::model::{ModelConfig, MoeLayerFreq};
use crate::pipeline::layout::{self, LayoutSpec};
use crate::plan::{Cluster, Plan, Precision};
use crate::settings::{CudaGraphImpl, Fp8Recipe, Group, Mlm, SETTINGS, Setting as SettingRow, Settings};
use crate::report::Report;
use serde::{Deserialize, Serialize};

/// The exports, each with a copy button in the web app and a `--kind` in `meshplan export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExportKind {
    /// `cfg.model.tensor_model_parallel_size = 4` … for a Megatron Bridge `ConfigContainer`.
    Bridge,
    /// A `torch.distributed.run … scripts/training/run_recipe.py --recipe … key=value` command.
    BridgeCli,
    /// `pretrain_gpt.py` arguments as a bash array.
    MegatronLm,
    /// `#SBATCH` sizing with the mesh arithmetic and an `srun` line.
    Slurm,
    /// The plan file `meshplan plan` reads, every field explicit.
    Plan,
}

impl ExportKind {
    pub const ALL: [ExportKind; 5] = [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm, ExportKind::Slurm, ExportKind::Plan];

    /// The `--kind` spelling.
    pub fn key(self) -> &'static str {
        match self {
            ExportKind::Bridge => "bridge",
            ExportKind::BridgeCli => "bridge-cli",
            ExportKind::MegatronLm => "megatron-lm",
            ExportKind::Slurm => "slurm",
            ExportKind::Plan => "plan",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ExportKind::Bridge => "Megatron Bridge (Python overrides)",
            ExportKind::BridgeCli => "Megatron Bridge (launch command)",
            ExportKind::MegatronLm => "Megatron-LM arguments",
            ExportKind::Slurm => "Slurm sizing",
            ExportKind::Plan => "Plan file (JSON)",
        }
    }

    /// The language of the text, for syntax highlighting and file names.
    pub fn language(self) -> &'static str {
        match self {
            ExportKind::Bridge => "python",
            ExportKind::BridgeCli | ExportKind::MegatronLm | ExportKind::Slurm => "bash",
            ExportKind::Plan => "json",
        }
    }

    pub fn from_key(key: &str) -> Option<ExportKind> {
        ExportKind::ALL.into_iter().find(|k| k.key() == key)
    }
}

/// One export of a planned run. `plan` is the resolved plan and `report` what [`crate::plan_resolved`] made of it.
pub fn export(kind: ExportKind, plan: &Plan, report: &Report) -> String {
    match kind {
        ExportKind::Bridge => bridge_python(plan, report),
        ExportKind::BridgeCli => bridge_launch(plan, report),
        ExportKind::MegatronLm => megatron_lm(plan, report),
        ExportKind::Slurm => slurm(plan, report),
        ExportKind::Plan => plan_json(plan),
    }
}

// ---------------------------------------------------------------------------------------------------
// Safe text
// ---------------------------------------------------------------------------------------------------

/// `s` made safe for a `#` comment in Python or shell: every character that could end the line or
/// reorder what is shown (controls, U+2028/U+2029, bidirectional embeddings/overrides/isolates, BOM)
/// becomes a space; the result is trimmed and clipped to 80 characters.
pub fn comment_text(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            let unsafe_char = c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{FEFF}')
                || ('\u{202A}'..='\u{202E}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c);
            if unsafe_char { ' ' } else { c }
        })
        .collect();
    let trimmed = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = trimmed.chars().take(80).collect();
    if trimmed.chars().count() > 80 {
        out.push('…');
    }
    if out.is_empty() { "(unnamed)".into() } else { out }
}

/// A lowercase `[a-z0-9-]` slug of at most 40 characters, for job names.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "custom".into() } else { out }
}

/// A shell word: bare when it is made only of characters no shell treats specially, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.,/:=+@%".contains(c));
    if plain { s.to_string() } else { format!("'{}'", s.replace('\'', "'\\''")) }
}

/// The plan's string field, if it is one of the spellings meshplan knows (a `Plan` deserialized from
/// elsewhere could hold anything; only these are ever written as code).
fn known(value: &str, choices: &[&'static str]) -> Option<&'static str> {
    choices.iter().copied().find(|c| *c == value)
}

const ACTIVATIONS: &[&str] = &["silu", "gelu", "squared_relu", "relu"];
const NORMALIZATIONS: &[&str] = &["LayerNorm", "RMSNorm"];
const POSITION_EMBEDDINGS: &[&str] = &["learned_absolute", "rope", "yarn", "mrope", "none"];

/// The rank order, lowercased, if it is Megatron's default or its `--use-tp-pp-dp-mapping` order.
#[derive(Clone, Copy, PartialEq)]
enum Order {
    Default,
    TpPpDp,
    Other,
}

/// The Bridge / Megatron-LM switch that selects the tp-cp-ep-pp-dp order (the order row's, [`crate::parallelism`]).
fn order_switch() -> crate::parallelism::Switch {
    const NONE: crate::parallelism::Switch = crate::parallelism::Switch { value: "", bridge: "", mlm: "" };
    crate::parallelism::row("order").and_then(|r| r.doc().switch).unwrap_or(NONE)
}

fn order_of(p: &Plan) -> Order {
    let o = p.parallelism.order.trim().to_ascii_lowercase();
    if o.is_empty() || o == DEFAULT_ORDER {
        Order::Default
    } else if o == TP_PP_DP_ORDER {
        Order::TpPpDp
    } else {
        Order::Other
    }
}

// ---------------------------------------------------------------------------------------------------
// Shared facts
// ---------------------------------------------------------------------------------------------------

fn opt(v: Option<u64>) -> String {
    v.map_or("none".into(), |v| v.to_string())
}

/// `Llama 3.1 70B — TP=4 PP=4 VPP=none CP=1 EP=1 ETP=4 SP=on, 64 GPUs (8 nodes × 8 h100-sxm-80gb)`.
fn summary(p: &Plan) -> String {
    let par = &p.parallelism;
    format!(
        "{} — TP={} PP={} VPP={} CP={} EP={} ETP={} SP={}, {} GPUs ({} nodes × {} {})",
        comment_text(&p.model_name),
        par.tp(),
        par.pp(),
        opt(par.virtual_pipeline_model_parallel_size),
        par.cp(),
        par.ep(),
        par.etp(),
        if par.sequence_parallel { "on" } else { "off" },
        p.world_size(),
        p.cluster.num_nodes,
        p.cluster.gpus_per_node,
        comment_text(&p.cluster.gpu),
    )
}

/// Comment lines shared by the code exports: what the plan is, whether it is valid, the data-parallel sizes.
fn header(p: &Plan, r: &Report, what: &str) -> Vec<String> {
    let d = &r.derived;
    let par = &p.parallelism;
    let mut lines = vec![format!("# {what} — meshplan plan for {}", summary(p))];
    let errors: Vec<String> = r.diagnostics.iter().filter(|x| x.is_error()).map(|x| slug(x.code.as_str())).collect();
    if !errors.is_empty() {
        let mut shown = errors.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
        if errors.len() > 6 {
            shown.push_str(", …");
        }
        lines.push(format!(
            "# WARNING: meshplan finds {} error(s) in this plan ({shown}); Megatron will reject or fail it. Run `meshplan plan` and fix them first.",
            errors.len()
        ));
    }
    lines.push(format!(
        "# dense DP = W/(TP·PP·CP) = {}/({}·{}·{}) = {}; expert DP = W/(PP·EP·ETP) = {}/({}·{}·{}) = {}; {} microbatches of {} per step (global batch {})",
        d.world_size,
        par.tp(),
        par.pp(),
        par.cp(),
        dp_text(d.data_parallel_size),
        d.world_size,
        par.pp(),
        par.ep(),
        par.etp(),
        dp_text(d.expert_data_parallel_size),
        d.num_microbatches,
        p.training.micro_batch_size,
        d.global_batch_size,
    ));
    lines
}

fn dp_text(dp: u64) -> String {
    if dp == 0 { "not whole".into() } else { dp.to_string() }
}

/// `CUDA_DEVICE_MAX_CONNECTIONS=1` is needed for TP/CP communication overlap (seed Pitfall 7).
fn needs_max_connections(p: &Plan) -> bool {
    p.parallelism.tp() > 1 || p.parallelism.cp() > 1
}

/// The launch environment the plan needs, each `VAR=value` with why: CUDA_DEVICE_MAX_CONNECTIONS=1 for TP/CP
/// communication overlap; NVTE_CPU_OFFLOAD_V1=1 for fine-grained activation offloading (Megatron Bridge's
/// `_validate_fine_grained_activation_offloading` raises without it on Transformer Engine 2.10 and later, which would
/// otherwise offload the weights too).
fn launch_env(p: &Plan) -> Vec<(&'static str, &'static str)> {
    let mut env = Vec::new();
    if needs_max_connections(p) {
        env.push(("CUDA_DEVICE_MAX_CONNECTIONS=1", "TP/CP communication overlap"));
    }
    let s = &p.training.settings;
    if s.fine_grained_activation_offloading && !s.offload_modules.is_empty() {
        env.push(("NVTE_CPU_OFFLOAD_V1=1", "fine-grained activation offloading"));
    }
    env
}

/// What the Bridge recipe the launch names (the preset's, [`bridge_recipe`]) sets at `section.key`, when meshplan has
/// that recipe's values (data/bridge_recipes.json): an override must restate the plan's value where the recipe's differs.
fn named_recipe_value(p: &Plan, section: &str, key: &str) -> Option<&'static serde_json::Value> {
    let recipe = crate::recipes::find(bridge_recipe(&p.model_key)?)?;
    match section {
        "parallelism" => recipe.parallelism.get(key),
        _ => recipe.training.get(key),
    }
}

/// A Megatron Bridge library recipe for the preset, or None: `data/recipes.json`, each name with the Bridge module
/// that defines it.
pub fn bridge_recipe(model_key: &str) -> Option<&'static str> {
    crate::presets::bridge_recipe(model_key).map(|r| r.recipe.as_str())
}

/// What to launch with for each precision.
struct PrecisionChoice {
    /// Megatron Bridge mixed-precision recipe name; None for fp32 (Bridge has no fp32 recipe).
    bridge: Option<&'static str>,
    /// The precision's own Megatron-LM flags (the FP8 recipe and weight settings are rows of the settings table).
    mlm: Vec<(&'static str, Option<&'static str>)>,
    note: Option<String>,
}

// Sources: Megatron-Bridge src/megatron/bridge/training/mixed_precision.py (the `@register` recipes, as data in
// data/mixed_precision.json: fp8 format hybrid or e4m3, fp4 format e2m1). Megatron-LM: transformer_config.py fields
// bf16, fp16, fp8 (argparse name --fp8-format), fp4 (--fp4-format), fp4_recipe, built into flags by
// megatron/training/argument_utils.py.
fn precision_choice(p: &Plan) -> PrecisionChoice {
    let s = &p.training.settings;
    let recipe = s.mixed_precision_recipe(&p.gpu);
    let bridge = recipe.map(|r| r.name.as_str());
    match s.precision {
        Precision::Fp32 => PrecisionChoice {
            bridge: None,
            mlm: Vec::new(),
            note: Some("fp32: Megatron-LM's default (neither the bf16 nor the fp16 flag); Bridge has no fp32 recipe, so check the recipe's params_dtype/pipeline_dtype".into()),
        },
        Precision::Fp16 => PrecisionChoice { bridge, mlm: vec![("--fp16", None)], note: None },
        Precision::Bf16 => PrecisionChoice { bridge, mlm: vec![("--bf16", None)], note: None },
        Precision::Fp8 => {
            let format = recipe.and_then(|r| known(r.fp8.as_deref().unwrap_or(""), &["hybrid", "e4m3"])).unwrap_or("hybrid");
            let note = match recipe.and_then(|r| r.fp8_recipe) {
                Some(Fp8Recipe::Mxfp8) => format!("fp8 on {}: MXFP8 block scaling", comment_text(&p.gpu.generation)),
                Some(Fp8Recipe::Delayed) => "fp8: delayed scaling (scales from an amax history)".into(),
                Some(Fp8Recipe::Blockwise) => "fp8: blockwise (sub-channel) scaling, 128x128 weight blocks".into(),
                _ => "fp8: per-tensor current scaling (E4M3 forward, E5M2 gradients), first and last layer in BF16".into(),
            };
            PrecisionChoice { bridge, mlm: vec![("--bf16", None), ("--fp8-format", Some(format))], note: Some(note) }
        }
        Precision::Fp4 => PrecisionChoice {
            bridge,
            mlm: vec![("--bf16", None), ("--fp4-format", Some("e2m1")), ("--fp4-recipe", Some("nvfp4"))],
            note: Some("fp4: NVFP4".into()),
        },
    }
}

/// `moe_layer_freq` as run lengths: `[(0, 3), (1, 58)]`.
fn runs(pattern: &[u8]) -> Vec<(u8, usize)> {
    let mut out: Vec<(u8, usize)> = Vec::new();
    for &b in pattern {
        let b = u8::from(b != 0);
        match out.last_mut() {
            Some((v, n)) if *v == b => *n += 1,
            _ => out.push((b, 1)),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// Megatron Bridge: one list of settings, rendered as Python or as Hydra overrides
// ---------------------------------------------------------------------------------------------------

/// A value as Python and as a Hydra override (`run_recipe.py` parses overrides with Hydra's grammar:
/// `null`, `True`/`False`, bare identifiers, `[0,1]` lists).
#[derive(Clone)]
enum Val {
    Int(u64),
    OptInt(Option<u64>),
    Bool(bool),
    Str(&'static str),
    OptStr(Option<&'static str>),
    /// `moe_layer_freq` pattern.
    Pattern(Vec<u8>),
    /// A string read from the plan and validated (a hybrid layer pattern: only `MG*D+-E|/`).
    Text(String),
    /// A settings-table value as the plan spells it (bool, number, string, list, null).
    Json(serde_json::Value),
    /// A `torch.dtype` given by its Megatron-LM name (fp32, fp16, bf16; fp8 is torch.uint8).
    Dtype(&'static str),
    /// A layout string made only of the characters Megatron's layout parser reads (see [`layout_text`]).
    LayoutText(String),
    /// A layout's list form, as `LayerType` names.
    LayoutList(Vec<Vec<&'static str>>),
    /// A JSON document written as one Python string literal; a Hydra override cannot carry it.
    JsonText(String),
}

impl Val {
    fn py(&self) -> String {
        match self {
            Val::Int(n) | Val::OptInt(Some(n)) => n.to_string(),
            Val::OptInt(None) | Val::OptStr(None) => "None".into(),
            Val::Bool(b) => if *b { "True" } else { "False" }.into(),
            Val::Str(s) | Val::OptStr(Some(s)) => format!("\"{s}\""),
            Val::Pattern(p) => runs(p).iter().map(|(v, n)| format!("[{v}] * {n}")).collect::<Vec<_>>().join(" + "),
            Val::Text(t) => format!("\"{t}\""),
            Val::Json(v) => json_py(v),
            Val::Dtype(d) => format!("torch.{}", torch_dtype(d)),
            Val::LayoutText(t) => format!("\"{t}\""),
            Val::LayoutList(rows) => {
                let rows: Vec<String> = rows.iter().map(|r| format!("[{}]", r.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", "))).collect();
                format!("[{}]", rows.join(", "))
            }
            // A single-quoted Python literal: compact JSON of numbers, booleans and ASCII keys has no quote or backslash to
            // escape ([`heterogeneous_json`] writes only those).
            Val::JsonText(t) => format!("'{}'", t.replace('\\', "\\\\").replace('\'', "\\'")),
        }
    }
    /// The Hydra override value; None when the launch command cannot express it.
    fn hydra(&self) -> Option<String> {
        Some(match self {
            Val::Int(n) | Val::OptInt(Some(n)) => n.to_string(),
            Val::OptInt(None) | Val::OptStr(None) => "null".into(),
            Val::Bool(b) => if *b { "True" } else { "False" }.into(),
            Val::Str(s) | Val::OptStr(Some(s)) => (*s).to_string(),
            Val::Pattern(p) => format!("[{}]", p.iter().map(|b| u8::from(*b != 0).to_string()).collect::<Vec<_>>().join(",")),
            // Hydra's quoted string: * | / are not allowed unquoted.
            Val::Text(t) => format!("\"{t}\""),
            Val::Json(v) => json_hydra(v),
            // Bridge's override parser turns a dtype name back into a torch.dtype with str_to_dtype, which reads "fp8"
            // as torch.float8_e4m3fn and has no name for torch.uint8.
            Val::Dtype("fp8") => return None,
            Val::Dtype(d) => (*d).to_string(),
            // Quoted: Hydra's grammar reads `(`, `)` and `*` outside quotes as its own syntax.
            Val::LayoutText(t) => format!("\"{t}\""),
            Val::LayoutList(rows) => format!("[{}]", rows.iter().map(|r| format!("[{}]", r.join(","))).collect::<Vec<_>>().join(",")),
            Val::JsonText(_) => return None,
        })
    }
}

/// `torch.<name>` of a Megatron-LM dtype name (megatron/training/arguments.py dtype_map: fp8 is torch.uint8).
fn torch_dtype(name: &str) -> &'static str {
    match name {
        "fp16" => "float16",
        "bf16" => "bfloat16",
        "fp8" => "uint8",
        _ => "float32",
    }
}

/// A settings value as Python. Strings come only from the settings table's choices (never from the user's text).
fn json_py(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::Null => "None".into(),
        J::Bool(b) => if *b { "True" } else { "False" }.into(),
        J::Number(n) => n.to_string(),
        J::String(s) => format!("\"{s}\""),
        J::Array(a) => format!("[{}]", a.iter().map(json_py).collect::<Vec<_>>().join(", ")),
        J::Object(_) => "None".into(),
    }
}

/// A settings value in Hydra's override grammar.
fn json_hydra(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::Null | J::Object(_) => "null".into(),
        J::Bool(b) => if *b { "True" } else { "False" }.into(),
        J::Number(n) => n.to_string(),
        J::String(s) => s.clone(),
        J::Array(a) => format!("[{}]", a.iter().map(json_hydra).collect::<Vec<_>>().join(",")),
    }
}

/// What the exports say of heterogeneous layers, which they do not write as a setting: Megatron-Core takes them as the
/// model's whole config.json (heterogeneous_layers_config_encoded_json), which the plan does not keep.
// Source: megatron/core/transformer/heterogeneous/heterogeneous_config.py (heterogeneous_layers_config_path /
// heterogeneous_layers_config_encoded_json).
/// What the exports say of the parts of a model no GPT / hybrid export setting expresses (each export adds them to its
/// model notes): a vision encoder, chunked attention, window layers with their own attention shape and a head-wise gate.
// Sources: Megatron Bridge src/megatron/bridge/models/qwen_vl/qwen3_vl_provider.py (a VLM is its own provider with a
// vision_config); megatron/core/models/multimodal/llava_model.py; Megatron-Core TransformerConfig has no chunked-attention
// field (Megatron-LM's FLOPs count reads args.chunk_attention_size, tests/unit_tests/test_training.py).
fn unexpressed_notes(m: &ModelConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(e) = &m.vision_config {
        notes.push(format!(
            "the {}-layer vision encoder and its projector are not written: train the model with its VLM provider (Megatron Bridge: e.g. Qwen3VLModelProvider with its vision_config; Megatron-LM: examples/multimodal's LLaVAModel), which builds them on the first pipeline stage",
            e.num_layers
        ));
    }
    if let Some(c) = m.chunk_attention_size {
        notes.push(format!("chunked attention (chunks of {c} tokens on the RoPE layers) is not a Megatron-Core setting and is not written: the exported model attends over the whole sequence on every layer"));
    }
    // Megatron Bridge src/megatron/bridge/models/stepfun/step35_provider.py: sliding_attention_setting and the head-wise
    // gate are Step35ModelProvider's (its Step35DecoderLayer), not GPTModelProvider settings nor Megatron-LM flags.
    if let Some(w) = m.sliding_attention_setting.filter(|_| m.window_shape_differs()) {
        notes.push(format!(
            "the window layers' own attention shape (sliding_attention_setting: {} heads, {} query groups of {}) is not written: it is Megatron Bridge's Step35ModelProvider field, which Step-3.5's bridge sets (AutoBridge.from_hf_pretrained of its checkpoint; Gemma 4's Gemma4DenseProvider / Gemma4ModelProvider take the full layers' as global_kv_channels and num_global_query_groups instead); the exported GPT model gives every layer the full layers' shape",
            w.num_attention_heads, w.num_query_groups, w.kv_channels
        ));
    }
    // Megatron Bridge src/megatron/bridge/models/gemma/gemma4_provider.py (@067f987df03b): attention_k_eq_v,
    // per_layer_embed_dim, per_layer_embed_vocab_size, num_kv_shared_layers and use_double_wide_mlp are Gemma 4
    // providers' fields, set by gemma4_bridge.py from the checkpoint; Megatron-Core and Megatron-LM have none of them.
    let gemma4: Vec<String> = [
        m.attention_k_eq_v.then(|| "attention_k_eq_v (keys as values on the full-attention layers)".to_string()),
        m.per_layer_embed_dim.map(|d| format!("per_layer_embed_dim = {d} (per-layer embeddings)")),
        (m.num_kv_shared_layers > 0).then(|| format!("num_kv_shared_layers = {}", m.num_kv_shared_layers)),
        m.use_double_wide_mlp.then(|| "use_double_wide_mlp".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !gemma4.is_empty() {
        notes.push(format!(
            "{} not written: they are Megatron Bridge's Gemma 4 provider fields (Gemma4DenseProvider, Gemma4ModelProvider), which AutoBridge.from_hf_pretrained of the Gemma 4 checkpoint sets (recipe gemma4_e4b_pretrain_config for E4B); a GPT model or Megatron-LM run has none of them",
            gemma4.join(", ")
        ));
    }
    // Megatron Bridge step35_bridge.py _MTPDenseLayerSpecsList: the MTP layers' own kind is the bridge's layer spec.
    if let Some(k) = m.mtp_layer.filter(|_| m.mtp_num_layers > 0 && m.mtp_layer_usable()) {
        notes.push(format!(
            "the MTP layers' own kind (mtp_layer: {}) is not written: Megatron Bridge's model bridge builds it (Step-3.5: _MTPDenseLayerSpecsList); Megatron-Core's default builds each MTP layer like the last decoder layer ({})",
            k.name(),
            m.layer_kind(m.num_layers.saturating_sub(1)).name()
        ));
    }
    if m.head_wise_attn_gate {
        notes.push("the head-wise attention output gate (head_wise_attn_gate) is not written: Megatron Bridge's Step-3.5 bridge sets it where Megatron-Core has it (else attention_output_gate)".to_string());
    }
    notes
}

/// DeepSeek-V4's fields as Megatron Bridge's DeepSeekV4Bridge sets them on its provider (Bridge names, no Megatron-LM
/// flags: the Megatron-LM export says so), only for a DeepSeek-V4 model.
// Source: Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py provider_bridge
// (experimental_attention_variant "dsv4_hybrid", csa_compress_ratios, csa_window_size, dsa_indexer_*, o_groups,
// o_lora_rank, enable_hyper_connections, num_residual_streams, moe_n_hash_layers).
fn dsv4_fields(m: &ModelConfig) -> Vec<(&'static str, Val)> {
    let Some(ratios) = m.dsv4_ratios() else { return Vec::new() };
    let json = |v: serde_json::Value| Some(Val::Json(v));
    let opt = |v: Option<u64>| v.map(|v| Val::Json(serde_json::json!(v)));
    [
        ("model.experimental_attention_variant", Some(Val::Str("dsv4_hybrid"))),
        ("model.csa_compress_ratios", json(serde_json::json!(ratios))),
        ("model.csa_window_size", opt(m.csa_window_size)),
        ("model.dsa_indexer_n_heads", opt(m.dsa_indexer_n_heads)),
        ("model.dsa_indexer_head_dim", opt(m.dsa_indexer_head_dim)),
        ("model.dsa_indexer_topk", opt(m.dsa_indexer_topk)),
        ("model.o_groups", opt(m.o_groups)),
        ("model.o_lora_rank", opt(m.o_lora_rank)),
        ("model.enable_hyper_connections", m.enable_hyper_connections.then_some(Val::Bool(true))),
        ("model.num_residual_streams", opt(m.num_residual_streams.filter(|_| m.enable_hyper_connections))),
        ("model.moe_n_hash_layers", opt(m.moe_n_hash_layers)),
    ]
    .into_iter()
    .filter_map(|(path, v)| v.map(|v| (path, v)))
    .collect()
}

/// The Megatron-LM export's note on a DeepSeek-V4 model: its fields are Megatron Bridge provider fields.
fn dsv4_mlm_note(m: &ModelConfig) -> Option<String> {
    m.is_dsv4().then(|| "DeepSeek-V4's hybrid attention (experimental_attention_variant dsv4_hybrid, csa_compress_ratios, o_groups, o_lora_rank, hyper-connections, moe_n_hash_layers) is not written: they are the fields Megatron Bridge's DeepSeekV4Bridge sets on its provider, which the Bridge exports write; this Megatron-LM command describes an MLA model without them".to_string())
}

const HETEROGENEOUS_NOTE: &str = "heterogeneous layers are not a flag's value: write this block_configs JSON to heterogeneous_layers.json and add --heterogeneous-layers-config-path heterogeneous_layers.json";

/// The heterogeneous layers as Megatron-Core's HeterogeneousTransformerConfig reads them: `{"block_configs": [...]}`,
/// each block's attention (no_op, or its num_query_groups) and ffn (no_op, or its ffn_hidden_size) in Megatron-Core's
/// own keys (it also reads DeciLM's n_heads_in_group / ffn_mult), so the exported widths are the planned ones exactly.
// Source: megatron/core/transformer/heterogeneous/heterogeneous_config.py (AttentionConfig num_query_groups, MLPConfig
// ffn_hidden_size, replace_with_linear; heterogeneous_layers_config_encoded_json / _path).
fn heterogeneous_json(m: &ModelConfig) -> Option<String> {
    let layers = m.heterogeneous_layers.as_ref()?;
    let blocks: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| {
            serde_json::json!({
                "attention": {"no_op": !l.attention, "replace_with_linear": false, "num_query_groups": if l.attention { Some(m.num_query_groups) } else { None }},
                "ffn": {"no_op": l.ffn_hidden_size.is_none(), "replace_with_linear": false, "ffn_hidden_size": l.ffn_hidden_size},
            })
        })
        .collect();
    Some(serde_json::json!({"block_configs": blocks}).to_string())
}

/// The hybrid-layer, state-space and gated-block fields of a model (TransformerConfig names, and the Megatron-LM flag
/// ArgumentGroupFactory derives from each: `--` + the name with dashes), only those the model uses.
// Source: megatron/core/transformer/transformer_config.py (hybrid_layer_pattern is HybridModel's; mamba_state_dim,
// mamba_head_dim, mamba_num_groups, mamba_num_heads, experimental_attention_variant, linear_attention_freq, linear_*,
// attention_output_gate, moe_shared_expert_gate, moe_latent_size, mtp_use_repeated_layer, window_size,
// window_attn_skip_freq, softmax_type); megatron/training/arguments.py (--hybrid-layer-pattern, --linear-attention-freq,
// --window-size as tuple_type "left,right", --window-attn-skip-freq; the rest from ArgumentGroupFactory).
fn layer_kind_fields(m: &ModelConfig) -> Vec<(&'static str, Val)> {
    let mut f: Vec<(&'static str, Val)> = Vec::new();
    if let Some(p) = &m.hybrid_layer_pattern {
        f.push(("model.hybrid_layer_pattern", Val::Text(p.as_str().to_string())));
    }
    let opt = |v: Option<u64>| v.map(Val::Int);
    for (path, v) in [
        ("model.mamba_state_dim", opt(m.mamba_state_dim)),
        ("model.mamba_head_dim", opt(m.mamba_head_dim)),
        ("model.mamba_num_groups", opt(m.mamba_num_groups)),
        ("model.mamba_num_heads", opt(m.mamba_num_heads)),
        (
            "model.experimental_attention_variant",
            if m.gated_delta_net_variant() {
                Some(Val::Str("gated_delta_net"))
            } else if m.dsa().is_some() && m.experimental_attention_variant.as_deref() == Some("dsa") {
                Some(Val::Str("dsa"))
            } else {
                None
            },
        ),
        ("model.dsa_indexer_n_heads", m.dsa().and(opt(m.dsa_indexer_n_heads))),
        ("model.dsa_indexer_head_dim", m.dsa().and(opt(m.dsa_indexer_head_dim))),
        ("model.dsa_indexer_topk", m.dsa().and(opt(m.dsa_indexer_topk))),
        ("model.dsa_indexer_loss_coeff", m.dsa().and(m.dsa_indexer_loss_coeff).map(|c| Val::Json(serde_json::json!(c)))),
        (
            "model.no_rope_freq",
            m.no_rope_freq.as_ref().map(|l| match l {
                MoeLayerFreq::Every(n) => Val::Int(*n),
                MoeLayerFreq::Pattern(p) => Val::Pattern(p.clone()),
            }),
        ),
        (
            "model.linear_attention_freq",
            m.linear_attention_freq.as_ref().map(|l| match l {
                MoeLayerFreq::Every(n) => Val::Int(*n),
                MoeLayerFreq::Pattern(p) => Val::Pattern(p.clone()),
            }),
        ),
        ("model.linear_key_head_dim", opt(m.linear_key_head_dim)),
        ("model.linear_value_head_dim", opt(m.linear_value_head_dim)),
        ("model.linear_num_key_heads", opt(m.linear_num_key_heads)),
        ("model.linear_num_value_heads", opt(m.linear_num_value_heads)),
        ("model.linear_conv_kernel_dim", opt(m.linear_conv_kernel_dim)),
        ("model.attention_output_gate", m.attention_output_gate.then_some(Val::Bool(true))),
        ("model.moe_shared_expert_gate", m.moe_shared_expert_gate.then_some(Val::Bool(true))),
        ("model.moe_latent_size", opt(m.moe_latent_size)),
        ("model.mtp_use_repeated_layer", m.mtp_use_repeated_layer.then_some(Val::Bool(true))),
        ("model.softmax_type", m.softmax_type.as_deref().and_then(|t| ["off-by-one", "learnable"].into_iter().find(|k| *k == t)).map(Val::Str)),
        // Sliding-window attention: --window-size takes "left,right" (arguments.py tuple_type).
        ("model.window_size", m.window_size.map(|[l, r]| Val::Json(serde_json::json!([l, r])))),
        (
            "model.window_attn_skip_freq",
            m.window_attn_skip_freq.as_ref().filter(|_| m.window_size.is_some()).map(|l| match l {
                MoeLayerFreq::Every(n) => Val::Int(*n),
                MoeLayerFreq::Pattern(p) => Val::Pattern(p.clone()),
            }),
        ),
    ] {
        if let Some(v) = v {
            f.push((path, v));
        }
    }
    f
}

struct Setting {
    /// Dotted ConfigContainer path, e.g. `model.tensor_model_parallel_size`.
    path: &'static str,
    value: Val,
    note: Option<String>,
}

fn set(path: &'static str, value: Val) -> Setting {
    Setting { path, value, note: None }
}

fn set_note(path: &'static str, value: Val, note: impl Into<String>) -> Setting {
    Setting { path, value, note: Some(note.into()) }
}

struct Section {
    title: &'static str,
    settings: Vec<Setting>,
    /// Python-only lines after the settings (a Hydra override cannot express them); when present they
    /// replace the Python line of the setting at `python_replaces`.
    python_after: Vec<String>,
    python_replaces: Option<&'static str>,
    /// Python-only lines before the settings (imports).
    python_before: Vec<String>,
    /// Comment lines for both forms.
    notes: Vec<String>,
    /// Comment lines for the launch command only (what its overrides cannot say).
    launch_notes: Vec<String>,
}

fn section(title: &'static str, settings: Vec<Setting>) -> Section {
    Section { title, settings, python_after: Vec::new(), python_replaces: None, python_before: Vec::new(), notes: Vec::new(), launch_notes: Vec::new() }
}

/// The plan's layout if it can be written as code: its string form when every character is one Megatron's layout
/// parser reads, its list form as `LayerType` names. Anything else is refused by the rules anyway, and never written.
fn layout_text(spec: &LayoutSpec) -> Option<String> {
    let text = layout::as_text(spec)?;
    text.chars().all(|c| "EtmL|()*,".contains(c) || c.is_ascii_digit()).then_some(text)
}

/// `model.pipeline_model_parallel_layout`: the plan's layout in the form it was given; without one, None, which also
/// clears a recipe's layout so the split below is the one planned.
// Source: Megatron Bridge models/model_provider.py (pipeline_model_parallel_layout: list[list[str]] | None; recipes also
// assign strings, which TransformerConfig.__post_init__ parses).
fn layout_setting(p: &Plan) -> Setting {
    let path = names::bridge("parallelism.pipeline_model_parallel_layout");
    match &p.parallelism.pipeline_model_parallel_layout {
        None => set_note(path, Val::OptInt(None), "meshplan plans the split from the first/last stage sizes below"),
        Some(spec @ LayoutSpec::List(_)) => match layout::list_names(spec) {
            Some(rows) => set(path, Val::LayoutList(rows)),
            None => set_note(path, Val::OptInt(None), "the plan's layout has entries Megatron rejects; it is not written"),
        },
        Some(spec) => match layout_text(spec) {
            Some(text) => set(path, Val::LayoutText(text)),
            None => set_note(path, Val::OptInt(None), "the plan's layout has characters Megatron rejects; it is not written"),
        },
    }
}

/// The rows of the parallelism table in an export's order: the table's, with the rows of `group` (in `group`'s order)
/// moved together to where `at` stands in the table.
fn rows_grouped(at: &str, group: &[&str]) -> Vec<&'static ParSetting> {
    let mut out = Vec::with_capacity(PARALLELISM.len());
    for row in PARALLELISM.iter().filter(|r| !group.contains(&r.key) || r.key == at) {
        if row.key == at {
            out.extend(group.iter().filter_map(|k| crate::parallelism::row(k)));
        } else {
            out.push(row);
        }
    }
    out
}

/// The layout and the fields that decide the split with it: the Bridge export writes them together, the layout first
/// (its note points at the stage sizes below).
const SPLIT_ROWS: [&str; 5] = [
    "pipeline_model_parallel_layout",
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
];

/// The Bridge settings of the parallelism rows, each at its deciding Bridge path ([`crate::parallelism`]); the rank
/// order, which Bridge takes as a switch, is the caller's.
// Field names: megatron/core/model_parallel_config.py and transformer_config.py, which Megatron Bridge's
// GPTModelProvider inherits; overlap_p2p_comm: Bridge training/comm_overlap.py CommOverlapConfig.
fn bridge_parallel(p: &Plan) -> Vec<Setting> {
    let par = &p.parallelism;
    // Written when the plan sets them, beside a layout (a recipe may set them; Megatron rejects them with one), and
    // where the recipe the launch names sets them otherwise.
    let recipe_differs = |key: &str, ours: bool| named_recipe_value(p, "parallelism", key).is_some_and(|v| v.as_bool() != Some(ours));
    let accounted = par.account_for_embedding_in_pipeline_split
        || par.account_for_loss_in_pipeline_split
        || par.pipeline_model_parallel_layout.is_some()
        || recipe_differs("account_for_embedding_in_pipeline_split", par.account_for_embedding_in_pipeline_split)
        || recipe_differs("account_for_loss_in_pipeline_split", par.account_for_loss_in_pipeline_split);
    let mut out = Vec::new();
    for row in rows_grouped(SPLIT_ROWS[1], &SPLIT_ROWS) {
        let doc = row.doc();
        let Some(&path) = doc.name.bridge.first() else { continue };
        let value = par.get(row.key).unwrap_or(serde_json::Value::Null);
        out.extend(match (row.kind, row.key) {
            (Kind::Layout, _) => Some(layout_setting(p)),
            (_, "expert_tensor_parallel_size") if par.expert_tensor_parallel_size_defaulted && par.ep() > 1 => Some(set_note(
                path,
                Val::Int(par.etp()),
                "the plan left ETP unset: megatron-core's default (= TP) is written out; Bridge alone would use 1 with EP > 1",
            )),
            (Kind::Bool, "account_for_embedding_in_pipeline_split" | "account_for_loss_in_pipeline_split") => {
                accounted.then(|| set(path, Val::Json(value)))
            }
            (Kind::UInt | Kind::Bool, _) => Some(set(path, Val::Json(value))),
            (Kind::OptUInt, _) if doc.bridge_none => Some(set(path, Val::OptInt(value.as_u64()))),
            (Kind::OptUInt | Kind::OptBool, _) => (!value.is_null()).then(|| set(path, Val::Json(value))),
            (Kind::Order, _) => None,
        });
    }
    out
}

/// Every Megatron Bridge setting the plan decides.
// Field names: megatron/core/model_parallel_config.py (tensor/pipeline/virtual_pipeline/context/expert/
// expert_tensor_parallel_size, sequence_parallel, microbatch_group_size_per_vp_stage) and
// transformer_config.py (pipeline_model_parallel_layout, num_layers_in_first/last_pipeline_stage,
// recompute_granularity/method/num_layers), which Megatron Bridge's GPTModelProvider
// (src/megatron/bridge/models/gpt_provider.py, `seq_length`) inherits; TrainingConfig micro/global_batch_size
// (megatron/training/config/training_config.py, Bridge training/config.py TrainingConfig); GPTDatasetConfig
// seq_length and ConfigContainer fields optimizer, ddp, dist, mixed_precision (Bridge training/config.py).
fn bridge_sections(p: &Plan, r: &Report) -> Vec<Section> {
    let par = &p.parallelism;
    let t = &p.training;
    let mut out = Vec::new();

    let parallel = bridge_parallel(p);
    let mut par_section = section("Parallelism", parallel);
    // Source: megatron/training/config/common_config.py DistributedInitConfig.use_tp_pp_dp_mapping; Bridge
    // training/initialize.py passes order "tp-cp-ep-dp-pp" or, with it, "tp-cp-ep-pp-dp".
    match order_of(p) {
        Order::Default => {}
        Order::TpPpDp => par_section.settings.push(set_note(order_switch().bridge, Val::Bool(true), "rank order tp-cp-ep-pp-dp")),
        Order::Other => par_section.notes.push(format!(
            "rank order {}: Bridge builds only tp-cp-ep-dp-pp or (dist.use_tp_pp_dp_mapping) tp-cp-ep-pp-dp",
            comment_text(&par.order)
        )),
    }
    out.push(par_section);

    out.push(section(
        "Batch and sequence",
        vec![
            set(names::bridge("training.global_batch_size"), Val::Int(r.derived.global_batch_size)),
            set(names::bridge("training.micro_batch_size"), Val::Int(t.micro_batch_size)),
            // ConfigContainer.validate asserts model.seq_length == dataset.seq_length.
            set("model.seq_length", Val::Int(t.seq_length)),
            set(names::bridge("training.seq_length"), Val::Int(t.seq_length)),
        ],
    ));

    for group in Group::ALL {
        let mut sec = settings_section(p, group);
        if group == Group::LowPrecision {
            mixed_precision_section(p, &mut sec);
        }
        if !sec.settings.is_empty() || !sec.python_after.is_empty() {
            out.push(sec);
        }
    }

    if bridge_recipe(&p.model_key).is_none() {
        out.push(bridge_model_section(&p.model));
    }
    out
}

/// Row `row`'s resolved value as an export value: a torch dtype, Megatron's None for the plan's "none", or as is.
fn export_value(p: &Plan, row: &SettingRow) -> Option<Val> {
    let value = p.training.settings.resolved(row.key, &p.gpu)?;
    if row.null_spelling.is_some() && value.as_str() == row.null_spelling {
        return Some(Val::Json(serde_json::Value::Null));
    }
    if row.torch_dtype {
        let name = known(value.as_str().unwrap_or(""), &["fp32", "fp16", "bf16", "fp8"])?;
        return Some(Val::Dtype(name));
    }
    Some(Val::Json(value))
}

/// One settings group as Bridge settings: every row with a Bridge path, at its resolved value, so the run does not
/// depend on what the recipe sets. The precision's mixed-precision fields are [`mixed_precision_section`]'s.
// Paths and values: the settings table (settings.rs), each row citing its Megatron-Core / Bridge source.
fn settings_section(p: &Plan, group: Group) -> Section {
    let mut sec = section(group.label(), Vec::new());
    // A dense model's dispatcher settings do nothing; written only over a named recipe that sets them otherwise.
    let recipe_differs = |row: &SettingRow| named_recipe_value(p, "training", row.key).is_some_and(|v| Some(v.clone()) != p.training.settings.get(row.key));
    let dense_dispatch = group == Group::MoeDispatch && !p.model.is_moe();
    if (dense_dispatch && !SETTINGS.iter().filter(|r| r.group == group).any(recipe_differs))
        || (group == Group::VisionEncoder && p.model.vision_config.is_none())
    {
        return sec;
    }
    let defaults = Settings::default();
    for row in SETTINGS.iter().filter(|r| r.group == group) {
        let Some(&first) = row.doc().bridge.first() else { continue };
        if row.doc().mlm == Mlm::Export || first.starts_with("mixed_precision") {
            continue;
        }
        let Some(val) = export_value(p, row) else { continue };
        // Recipes often leave cfg.comm_overlap None, whose fields an override cannot reach: write only what turns
        // something on. The other communication settings (cp_comm_type) likewise: only a value the plan gives, so a
        // recipe's own choice is not overwritten with Megatron's default.
        // Unless the recipe the launch names sets it otherwise: then the plan's value is written over the recipe's.
        let recipe_sets_other = recipe_differs(row);
        // The attention kernel and PEFT rows likewise: a recipe's own model provider and PEFT choice stand unless the
        // plan says otherwise.
        let only_when_set = first.starts_with("comm_overlap.") || matches!(row.group, Group::CommOverlap | Group::Attention | Group::Peft);
        if only_when_set && p.training.settings.get(row.key) == defaults.get(row.key) && !recipe_sets_other {
            continue;
        }
        if let Val::Dtype(d) = val {
            if val.hydra().is_none() {
                sec.launch_notes.push(format!("{} = {d} is torch.{} in Bridge, which a launch override cannot spell (Bridge's override parser reads \"fp8\" as float8_e4m3fn): set cfg.{first} = torch.{} in Python", row.key, torch_dtype(d), torch_dtype(d)));
            }
            if sec.python_before.is_empty() {
                sec.python_before.push("import torch".into());
            }
        }
        sec.settings.extend(row.doc().bridge.iter().map(|&path| set(path, val.clone())));
        sec.settings.extend(row.doc().bridge_clears.iter().map(|&path| set_note(path, Val::Json(serde_json::Value::Null), format!("deprecated spelling of {first}"))));
    }
    // Source: Megatron-Bridge training/config.py ConfigContainer.validate ("check_for_nan_in_loss must be disabled
    // when using full_iteration CUDA graph").
    if group == Group::CudaGraphs && p.training.settings.cuda_graph_impl == CudaGraphImpl::FullIteration {
        sec.settings.push(set_note(FULL_GRAPH_NAN_CHECK, Val::Bool(false), "full_iteration CUDA graphs: ConfigContainer.validate asserts it"));
    }
    sec
}

/// The NaN check a full-iteration CUDA graph cannot capture, off in Bridge's name (Megatron-LM:
/// `--no-check-for-nan-in-loss-and-grad`, which validate_args asserts with `--cuda-graph-impl full_iteration`).
const FULL_GRAPH_NAN_CHECK: &str = "rerun_state_machine.check_for_nan_in_loss";

/// The precision's Bridge mixed-precision recipe and every field of it the plan changes. A recipe named by a string
/// cannot take field overrides, so the Python form builds it with get_mixed_precision_config and sets the fields;
/// the launch command keeps the recipe's values and names the difference.
// Source: Megatron-Bridge training/mixed_precision.py (MixedPrecisionConfig.setup copies every field onto the model,
// optimizer and ddp configs, so mixed_precision.X wins over model./ddp.X); training/config.py (a str mixed_precision
// is resolved with get_mixed_precision_config at setup).
fn mixed_precision_section(p: &Plan, sec: &mut Section) {
    let s = &p.training.settings;
    let pc = precision_choice(p);
    sec.settings.insert(0, set("mixed_precision", Val::OptStr(pc.bridge)));
    if let Some(n) = pc.note {
        sec.notes.push(n.to_string());
    }
    if s.precision == Precision::Fp32 {
        sec.settings.insert(1, set("model.bf16", Val::Bool(false)));
        sec.settings.insert(2, set("model.fp16", Val::Bool(false)));
    }
    let Some(recipe) = s.mixed_precision_recipe(&p.gpu) else { return };
    let recipe_json = serde_json::to_value(recipe).unwrap_or_default();
    let mut changed = Vec::new();
    for row in SETTINGS.iter().filter(|r| r.doc().bridge.first().is_some_and(|b| b.starts_with("mixed_precision."))) {
        let field = &row.doc().bridge[0]["mixed_precision.".len()..];
        let Some(Val::Json(value)) = export_value(p, row) else { continue };
        let given = s.get(row.key).is_some_and(|v| !v.is_null());
        // fp8_recipe picks the recipe itself; on NVFP4 Bridge keeps MixedPrecisionConfig's own fp8_recipe.
        if row.key == "fp8_recipe" || (!given && recipe_json.get(field) == Some(&value)) {
            continue;
        }
        changed.push((row, field, value));
    }
    if changed.is_empty() {
        return;
    }
    let recipe_name = recipe.name.as_str();
    sec.python_after.push("from megatron.bridge.training.mixed_precision import get_mixed_precision_config".into());
    sec.python_after.push(format!("cfg.mixed_precision = get_mixed_precision_config(\"{recipe_name}\")"));
    sec.python_replaces = Some("mixed_precision");
    for (row, field, value) in changed {
        let note = (row.key.ends_with("param_gather") && !(s.use_distributed_optimizer || s.use_megatron_fsdp))
            .then_some("  # parameter all-gather in FP8/FP4 needs the distributed optimizer")
            .unwrap_or("");
        sec.python_after.push(format!("cfg.mixed_precision.{field} = {}{note}", json_py(&value)));
        let was = recipe_json.get(field).map_or("unset".into(), json_hydra);
        if recipe_json.get(field) != Some(&value) {
            sec.launch_notes.push(format!(
                "{recipe_name} sets {field}={was}; the plan runs {field}={}: a launch override cannot reach a field of a recipe named by string — use the Python form (cfg.mixed_precision.{field})",
                json_hydra(&value)
            ));
        }
    }
}

/// The architecture, for models without a Bridge recipe (TransformerConfig / GPTModelProvider names).
// Source: megatron/core/transformer/transformer_config.py (num_layers … mtp_num_layers, num_moe_experts,
// moe_*, multi_latent_attention), MLATransformerConfig (q_lora_rank, kv_lora_rank, qk_head_dim,
// qk_pos_emb_head_dim, v_head_dim); Bridge models/gpt_provider.py (vocab_size, make_vocab_size_divisible_by,
// share_embeddings_and_output_weights, position_embedding_type) and models/transformer_config.py
// `_resolve_string_fields` (activation_func given as a name such as "silu").
fn bridge_model_section(m: &ModelConfig) -> Section {
    let mut s = vec![
        set("model.num_layers", Val::Int(m.num_layers)),
        set("model.hidden_size", Val::Int(m.hidden_size)),
        set("model.ffn_hidden_size", Val::Int(m.ffn_hidden_size)),
        set("model.num_attention_heads", Val::Int(m.num_attention_heads)),
    ];
    if !m.multi_latent_attention {
        s.push(set("model.num_query_groups", Val::Int(m.num_query_groups)));
        s.push(set("model.kv_channels", Val::Int(m.kv_channels)));
    }
    s.push(set("model.vocab_size", Val::Int(m.vocab_size)));
    s.push(set("model.make_vocab_size_divisible_by", Val::Int(m.make_vocab_size_divisible_by)));
    let mut notes = vec!["no Megatron Bridge recipe for this model: start from one whose model provider matches, then set the architecture".to_string()];
    if let Some(v) = known(&m.position_embedding_type, POSITION_EMBEDDINGS) {
        s.push(set("model.position_embedding_type", Val::Str(v)));
    }
    if let Some(v) = known(&m.normalization, NORMALIZATIONS) {
        s.push(set("model.normalization", Val::Str(v)));
    }
    s.push(set("model.gated_linear_unit", Val::Bool(m.gated_linear_unit)));
    match known(&m.activation_func, ACTIVATIONS) {
        Some(v) => s.push(set("model.activation_func", Val::Str(v))),
        None => notes.push("the activation function is not one meshplan knows and was left out".into()),
    }
    s.push(set("model.add_bias_linear", Val::Bool(m.add_bias_linear)));
    s.push(set("model.add_qkv_bias", Val::Bool(m.add_qkv_bias)));
    s.push(set("model.qk_layernorm", Val::Bool(m.qk_layernorm)));
    s.push(set("model.share_embeddings_and_output_weights", Val::Bool(m.share_embeddings_and_output_weights)));
    if m.is_moe() {
        s.push(set("model.num_moe_experts", Val::Int(m.num_experts())));
        s.push(set("model.moe_router_topk", Val::Int(m.moe_router_topk)));
        s.push(set("model.moe_ffn_hidden_size", Val::Int(m.moe_ffn())));
        s.push(set("model.moe_shared_expert_intermediate_size", Val::OptInt(m.moe_shared_expert_intermediate_size.filter(|&x| x > 0))));
        s.push(match &m.moe_layer_freq {
            MoeLayerFreq::Every(n) => set("model.moe_layer_freq", Val::Int(*n)),
            MoeLayerFreq::Pattern(pat) => set("model.moe_layer_freq", Val::Pattern(pat.clone())),
        });
        s.push(set("model.moe_router_pre_softmax", Val::Bool(m.moe_router_pre_softmax)));
    } else {
        s.push(set("model.num_moe_experts", Val::OptInt(None)));
    }
    if m.multi_latent_attention {
        notes.push("multi-latent attention needs an MLA model provider (Bridge's MLAModelProvider); GPTModelProvider has no q_lora_rank".into());
        s.push(set("model.multi_latent_attention", Val::Bool(true)));
        s.push(set("model.q_lora_rank", Val::OptInt(m.q_lora_rank)));
        s.push(set("model.kv_lora_rank", Val::Int(m.kv_lora_rank)));
        s.push(set("model.qk_head_dim", Val::Int(m.qk_head_dim)));
        s.push(set("model.qk_pos_emb_head_dim", Val::Int(m.qk_pos_emb_head_dim)));
        s.push(set("model.v_head_dim", Val::Int(m.v_head_dim)));
    }
    s.push(set("model.mtp_num_layers", Val::OptInt(Some(m.mtp_num_layers).filter(|&n| n > 0))));
    if m.hybrid_layer_pattern.is_some() {
        notes.push("a hybrid layer pattern needs Bridge's HybridModelProvider (megatron.bridge.models.hybrid.hybrid_provider), not GPTModelProvider".into());
    }
    let mut launch_notes = Vec::new();
    if let Some(json) = heterogeneous_json(m) {
        // Bridge's Llama-Nemotron provider is a HeterogeneousTransformerConfig: the JSON goes in as the encoded field
        // (Python only: a Hydra override cannot carry it).
        s.push(set("model.heterogeneous_layers_config_encoded_json", Val::JsonText(json)));
        launch_notes.push("model.heterogeneous_layers_config_encoded_json (the per-layer blocks) cannot be a launch override: set it in Python, as the Python export writes it".into());
    }
    notes.extend(unexpressed_notes(m));
    for (path, v) in layer_kind_fields(m) {
        s.push(set(path, v));
    }
    for (path, v) in dsv4_fields(m) {
        s.push(set(path, v));
    }
    if m.position_embedding_type == "learned_absolute" {
        notes.push("Bridge sizes learned position embeddings by model.seq_length (it has no max_position_embeddings)".into());
    }
    Section { notes, launch_notes, ..section("Model architecture", s) }
}

/// The Bridge recipe the exports start from: the one the plan names, else the model preset's.
fn recipe_of(p: &Plan) -> Option<&str> {
    p.recipe.as_deref().or_else(|| bridge_recipe(&p.model_key))
}

/// The Bridge settings the exports write: every one the plan decides, or, for a plan that names a recipe, only those
/// whose value differs from what the recipe itself sets (the recipe alone planned on the same cluster, through the
/// same sections).
// Source: data/bridge_recipes.json (each recipe's settings, read from its Bridge source).
fn export_sections(p: &Plan, r: &Report) -> Vec<Section> {
    let mut sections = bridge_sections(p, r);
    let Some(name) = p.recipe.as_deref() else { return sections };
    let alone = serde_json::json!({ "recipe": name, "cluster": &p.cluster });
    let Ok(base) = crate::report::plan_value(&alone) else { return sections };
    let base_sections = bridge_sections(&base.plan, &base);
    let same: std::collections::HashSet<(&str, String)> =
        base_sections.iter().flat_map(|s| s.settings.iter().map(|st| (st.path, st.value.py()))).collect();
    for sec in &mut sections {
        let base_after = base_sections.iter().find(|b| b.title == sec.title).map(|b| &b.python_after);
        if base_after == Some(&sec.python_after) {
            sec.python_after.clear();
            sec.python_replaces = None;
        }
        sec.settings.retain(|st| !same.contains(&(st.path, st.value.py())));
        if sec.settings.is_empty() && sec.python_after.is_empty() {
            sec.python_before.clear();
            sec.notes.clear();
            sec.launch_notes.clear();
        }
    }
    sections.retain(|s| !s.settings.is_empty() || !s.python_after.is_empty());
    sections
}

/// Megatron Bridge Python overrides for the recipe's `ConfigContainer` `cfg`.
pub fn bridge_python(p: &Plan, r: &Report) -> String {
    let mut lines = header(p, r, "Megatron Bridge overrides");
    match recipe_of(p) {
        Some(recipe) if p.recipe.is_some() => {
            lines.push("# The plan starts from this recipe: only what the plan changes is set below.".into());
            lines.push(format!("#   from megatron.bridge.recipes import {recipe}"));
            lines.push(format!("#   cfg = {recipe}()"));
        }
        Some(recipe) => {
            lines.push("# Apply to the ConfigContainer of the recipe; its model architecture is kept:".into());
            lines.push(format!("#   from megatron.bridge.recipes import {recipe}"));
            lines.push(format!("#   cfg = {recipe}()"));
        }
        None => {
            lines.push("# Apply to the ConfigContainer `cfg` of a Megatron Bridge recipe (none ships for this model; see the architecture below):".into());
            lines.push("#   cfg = <recipe for this model>()".into());
        }
    }
    for (var, why) in launch_env(p) {
        lines.push(format!("# Launch with {var} in the environment ({why})."));
    }
    for s in export_sections(p, r) {
        lines.push(String::new());
        lines.push(format!("# {}", s.title));
        for n in &s.notes {
            lines.push(format!("# {n}"));
        }
        lines.extend(s.python_before.iter().cloned());
        for st in s.settings.iter().filter(|st| s.python_after.is_empty() || s.python_replaces != Some(st.path)) {
            let code = format!("cfg.{} = {}", st.path, st.value.py());
            match &st.note {
                Some(n) => lines.push(format!("{code}  # {n}")),
                None => lines.push(code),
            }
        }
        lines.extend(s.python_after.iter().cloned());
    }
    lines.join("\n") + "\n"
}

/// The Hydra overrides of the Bridge launch command, one shell word each.
fn bridge_overrides(p: &Plan, r: &Report) -> Vec<String> {
    export_sections(p, r)
        .iter()
        .flat_map(|s| s.settings.iter().filter_map(|st| Some(shell_word(&format!("{}={}", st.path, st.value.hydra()?)))))
        .collect()
}

/// The `--recipe` argument: the preset's recipe, or a placeholder the shell refuses to run without.
fn recipe_arg(p: &Plan) -> String {
    match recipe_of(p) {
        Some(r) => r.to_string(),
        None => "\"${RECIPE:?set RECIPE to a Megatron Bridge recipe for this model}\"".into(),
    }
}

/// The guide's Verification smoke test: three iterations, no evaluation, no checkpoints.
const SMOKE_TEST: &[&str] = &[
    "train.train_iters=3",
    "scheduler.lr_warmup_iters=0",
    "validation.eval_iters=0 validation.eval_interval=0",
    "checkpoint.save_interval=0",
    "logger.log_interval=1",
];

/// Comment lines both launch exports share.
fn launch_notes(p: &Plan, r: &Report, lines: &mut Vec<String>) {
    for s in export_sections(p, r) {
        for n in s.notes.iter().chain(&s.launch_notes) {
            lines.push(format!("# {}: {n}", s.title));
        }
    }
    if recipe_of(p).is_none() {
        lines.push("# RECIPE is a placeholder: no Megatron Bridge recipe ships for this model (a dense GPT-style model can start from vanilla_gpt_pretrain_config).".into());
    }
}

/// A complete Megatron Bridge launch command, in the form of the guide's Verification section.
// Source: Megatron-Bridge scripts/training/run_recipe.py (`--recipe`, trailing KEY=VALUE ConfigContainer
// overrides, mode inferred from "_pretrain_" in the name) and the guide's Verification section.
pub fn bridge_launch(p: &Plan, r: &Report) -> String {
    let nodes = p.cluster.num_nodes;
    let gpn = p.cluster.gpus_per_node;
    let mut lines = header(p, r, "Megatron Bridge launch");
    launch_notes(p, r, &mut lines);
    if nodes > 1 {
        lines.push(format!(
            "# Run on each of the {nodes} nodes with NODE_RANK = 0..{} and MASTER_ADDR = the address of node 0.",
            nodes - 1
        ));
    }
    lines.push("# The last overrides are the guide's smoke test (3 iterations, no evaluation, no checkpoints); drop them for a real run.".into());
    let env: String = launch_env(p).iter().map(|(var, _)| format!("{var} ")).collect();
    let mut cmd = vec![format!("{env}uv run python -m torch.distributed.run --nproc_per_node={gpn} --nnodes={nodes}")];
    if nodes > 1 {
        cmd.push(format!(
            "--node_rank=\"${{NODE_RANK:?set NODE_RANK to this node's index, 0..{}}}\" --master_addr=\"${{MASTER_ADDR:?set MASTER_ADDR to node 0's address}}\" --master_port=\"${{MASTER_PORT:-29500}}\"",
            nodes - 1
        ));
    }
    cmd.push("scripts/training/run_recipe.py".into());
    cmd.push(format!("--recipe {}", recipe_arg(p)));
    cmd.extend(bridge_overrides(p, r));
    cmd.extend(SMOKE_TEST.iter().map(|s| s.to_string()));
    lines.push(continued(&cmd));
    lines.join("\n") + "\n"
}

/// Shell lines joined with ` \` continuations, all but the first indented.
fn continued(parts: &[String]) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(" \\\n  ");
        }
        out.push_str(part);
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// Megatron-LM
// ---------------------------------------------------------------------------------------------------

/// `pretrain_gpt.py` arguments as a bash array, grouped with comments.
// Flag names, checked against Megatron-LM @ d98e8a64ddf3 by rebuilding the parser's names the way
// megatron/training/argument_utils.py ArgumentGroupFactory does (`--` + field name with `-`; `--no-`/`--disable-`
// for True defaults; `argparse_meta` arg_names win) over megatron/core/model_parallel_config.py,
// transformer_config.py, megatron/training/config/training_config.py and common_config.py, minus the
// `exclude` list of `_add_network_size_args`, plus the literal add_argument names of megatron/training/arguments.py:
//   generated: --tensor-model-parallel-size --pipeline-model-parallel-size --context-parallel-size
//     --expert-model-parallel-size --expert-tensor-parallel-size --sequence-parallel --micro-batch-size
//     --global-batch-size --recompute-granularity --recompute-method --recompute-num-layers --bf16 --fp16
//     --fp8-format --fp8-recipe --first-last-layers-bf16 --fp4-format --fp4-recipe --num-layers --hidden-size
//     --ffn-hidden-size --num-attention-heads --num-query-groups --kv-channels --moe-router-topk
//     --moe-ffn-hidden-size --moe-shared-expert-intermediate-size --moe-router-pre-softmax --multi-latent-attention
//     --mtp-num-layers --normalization --disable-bias-linear (argparse_meta) --add-qkv-bias --qk-layernorm
//     --microbatch-group-size-per-virtual-pipeline-stage --use-tp-pp-dp-mapping --vocab-size --tokenizer-type
//   literal: --num-virtual-stages-per-pipeline-rank --num-layers-per-virtual-pipeline-stage
//     --decoder-first-pipeline-num-layers --decoder-last-pipeline-num-layers --use-distributed-optimizer
//     --seq-length --group-query-attention --num-experts --moe-layer-freq --q-lora-rank --kv-lora-rank
//     --qk-head-dim --qk-pos-emb-head-dim --v-head-dim --swiglu --squared-relu
//     --untie-embeddings-and-output-weights --position-embedding-type --max-position-embeddings
//     --make-vocab-size-divisible-by --fp8-param-gather --fp4-param-gather --reuse-grad-buf-for-mxfp8-param-ag
//     --pipeline-model-parallel-layout
//   generated from transformer_config.py: --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
//   absent: --virtual-pipeline-model-parallel-size (virtual_pipeline_model_parallel_size is excluded; validate_args
//     derives it from --num-virtual-stages-per-pipeline-rank, which, unlike --num-layers-per-virtual-pipeline-stage,
//     also works with uneven first/last stages).
pub fn megatron_lm(p: &Plan, r: &Report) -> String {
    let par = &p.parallelism;
    let t = &p.training;
    let m = &p.model;
    let mut lines = header(p, r, "Megatron-LM arguments");
    // A hybrid layer pattern builds Megatron-Core's HybridModel, which Megatron-LM trains with pretrain_hybrid.py.
    let script = if m.hybrid_layer_pattern.is_some() { "pretrain_hybrid.py" } else { "pretrain_gpt.py" };
    lines.push(format!("# Use: torchrun --nproc_per_node=… --nnodes=… {script} \"${{MEGATRON_ARGS[@]}}\" plus data, tokenizer, optimizer and checkpoint arguments."));
    for (var, _) in launch_env(p) {
        lines.push(format!("export {var}"));
    }
    let mut groups: Vec<(&str, Vec<String>, Vec<String>)> = Vec::new();
    let flag = |f: &str, v: Option<String>| match v {
        Some(v) => format!("{f} {}", shell_word(&v)),
        None => f.to_string(),
    };

    let layout = par.pipeline_model_parallel_layout.as_ref().and_then(layout_text);
    let mut g = megatron_lm_parallel(par, layout.as_deref());
    let mut notes = Vec::new();
    if par.pipeline_model_parallel_layout.is_some() && layout.is_none() {
        notes.push("the plan's pipeline_model_parallel_layout has entries Megatron rejects; it is not written".to_string());
    }
    match order_of(p) {
        Order::Default => {}
        Order::TpPpDp => g.push(flag(order_switch().mlm, None)),
        Order::Other => notes.push(format!(
            "rank order {}: Megatron-LM builds only tp-cp-ep-dp-pp or (--use-tp-pp-dp-mapping) tp-cp-ep-pp-dp",
            comment_text(&par.order)
        )),
    }
    groups.push(("parallelism", g, notes));

    let mut g = vec![
        flag(names::flag("training.micro_batch_size"), Some(t.micro_batch_size.to_string())),
        flag(names::flag("training.global_batch_size"), Some(r.derived.global_batch_size.to_string())),
        flag(names::flag("training.seq_length"), Some(t.seq_length.to_string())),
    ];
    let (flags, notes) = megatron_lm_settings(p);
    g.extend(flags);
    groups.push(("training", g, notes));

    let (g, notes) = megatron_lm_model(m, t.seq_length);
    groups.push(("model", g, notes));

    lines.push("MEGATRON_ARGS=(".into());
    for (title, flags, notes) in groups {
        lines.push(format!("  # {title}"));
        for n in notes {
            lines.push(format!("  # {n}"));
        }
        for f in flags {
            lines.push(format!("  {f}"));
        }
    }
    lines.push(")".into());
    lines.join("\n") + "\n"
}

/// The Megatron-LM flags of the parallelism rows ([`crate::parallelism`]): a size always, an optional value when set,
/// a `store_true` flag when true, a `store_false` one when false. The VPP, the layout and the accounting are written together after PP:
/// validate_args takes at most one of --num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout
/// (whose stages / PP set the VPP). The rank order, a switch, is the caller's.
fn megatron_lm_parallel(par: &crate::plan::Parallelism, layout: Option<&str>) -> Vec<String> {
    const VPP_ROWS: [&str; 4] =
        ["virtual_pipeline_model_parallel_size", "pipeline_model_parallel_layout", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"];
    let mut g = Vec::new();
    for row in rows_grouped(VPP_ROWS[0], &VPP_ROWS) {
        let Some((flag, arg)) = row.doc().name.mlm else { continue };
        let value = par.get(row.key).unwrap_or(serde_json::Value::Null);
        let word = match (row.kind, &value) {
            (Kind::Layout, _) => layout.map(str::to_string),
            (Kind::OptUInt, _) if row.key == VPP_ROWS[0] && layout.is_some() => None,
            (Kind::UInt | Kind::OptUInt, serde_json::Value::Number(n)) => Some(n.to_string()),
            (Kind::Bool | Kind::OptBool, serde_json::Value::Bool(on)) if *on == (arg == Arg::Flag) => {
                g.push(flag.to_string());
                None
            }
            _ => None,
        };
        if let Some(w) = word {
            g.push(format!("{flag} {}", shell_word(&w)));
        }
    }
    g
}

/// Whether a row matters to this plan under Megatron-LM (its switch is on, the model has the layers it acts on).
pub(crate) fn mlm_relevant(p: &Plan, row: &SettingRow) -> bool {
    let s = &p.training.settings;
    match row.key {
        "fp8_recipe" | "fp8_param_gather" | "reuse_grad_buf_for_mxfp8_param_ag" | "fp8_amax_history_len" => s.precision == Precision::Fp8,
        "fp4_param_gather" => s.precision == Precision::Fp4,
        "first_last_layers_bf16" | "num_layers_at_start_in_bf16" | "num_layers_at_end_in_bf16" => {
            s.precision.is_low() && s.low_precision(&p.gpu).first_last_layers_bf16
        }
        "optimizer_offload_fraction" => s.optimizer_cpu_offload,
        "data_parallel_sharding_strategy" => s.use_megatron_fsdp,
        "wgrad_deferral_limit" => s.defer_embedding_wgrad_compute,
        "moe_flex_dispatcher_backend" => p.model.is_moe() && s.moe_token_dispatcher_type == crate::settings::DispatcherType::Flex,
        _ if row.group == Group::MoeDispatch => p.model.is_moe(),
        _ if row.group == Group::VisionEncoder => p.model.vision_config.is_some(),
        _ => true,
    }
}

/// The settings rows as `pretrain_gpt.py` flags: each row whose value differs from Megatron-LM's default, in table
/// order, and a note for each row Megatron-LM has no flag for.
// Flags: the settings table's `mlm` column, checked against megatron/training/arguments.py and the arguments
// megatron/training/argument_utils.py generates from TransformerConfig / ModelParallelConfig / DistributedInitConfig.
fn megatron_lm_settings(p: &Plan) -> (Vec<String>, Vec<String>) {
    let s = &p.training.settings;
    let defaults = Settings::default();
    let (mut flags, mut notes) = (Vec::new(), Vec::new());
    let pc = precision_choice(p);
    for row in SETTINGS.iter().filter(|r| mlm_relevant(p, r)) {
        let Some(value) = s.resolved(row.key, &p.gpu) else { continue };
        let mlm_default = row.doc().mlm_default.and_then(|t| serde_json::from_str(t).ok()).or_else(|| defaults.get(row.key));
        let is_default = Some(&value) == mlm_default.as_ref() || row.null_spelling.is_some_and(|n| value.as_str() == Some(n));
        match row.doc().mlm {
            Mlm::Export => {
                flags.extend(pc.mlm.iter().map(|(f, v)| mlm_flag(f, v.map(str::to_string))));
                notes.extend(pc.note.iter().map(|n| n.to_string()));
            }
            Mlm::Flag(f) if value == serde_json::Value::Bool(true) => flags.push(f.to_string()),
            // --bf16 reduces gradients in fp32 unless --grad-reduce-in-bf16; other precisions in the parameter dtype.
            Mlm::Switch(on, off) => {
                let fp32_by_default = matches!(s.precision, Precision::Bf16 | Precision::Fp8 | Precision::Fp4);
                let want = value == serde_json::Value::Bool(true);
                if s.precision != Precision::Fp32 && want != fp32_by_default {
                    flags.extend(if want { on } else { off }.map(str::to_string));
                }
            }
            Mlm::Value(f) if !is_default && !value.is_null() => match &value {
                serde_json::Value::Array(a) if a.is_empty() => notes.push(format!("{} = []: {f} takes one value or more; leave it out for Megatron-LM's default", row.key)),
                // nargs='+': one shell word per value.
                serde_json::Value::Array(a) => flags.push(format!("{f} {}", a.iter().map(|x| shell_word(&json_hydra(x))).collect::<Vec<_>>().join(" "))),
                other => flags.push(mlm_flag(f, Some(json_hydra(other)))),
            },
            Mlm::Config(field) if !is_default => notes.push(format!("{} = {}: Megatron-LM has no flag; set {field} in code", row.key, json_py(&value))),
            _ => {}
        }
    }
    if s.precision.is_low() && !(s.use_distributed_optimizer || s.use_megatron_fsdp) {
        notes.push("without the distributed optimizer, parameters are not gathered in FP8/FP4 (validate_args requires it)".into());
    }
    // Source: megatron/training/arguments.py validate_args l.1697-1702 (Transformer Engine cross entropy loss fusion is
    // disabled due to stability issues).
    if s.te_fused_loss() {
        notes.push("--cross-entropy-fusion-impl te with --cross-entropy-loss-fusion: Megatron-LM's validate_args refuses it (Transformer Engine's fused loss, disabled for stability); launch with --cross-entropy-fusion-impl native, whose last stage also keeps the loss's fp32 copy of the logits".into());
    }
    // Source: megatron/training/arguments.py validate_args (--no-check-for-nan-in-loss-and-grad should be set with
    // --cuda-graph-impl=full_iteration for training).
    if s.cuda_graph_impl == CudaGraphImpl::FullIteration {
        flags.push("--no-check-for-nan-in-loss-and-grad".into());
    }
    (flags, notes)
}

/// `--flag` or `--flag VALUE` (a shell word).
fn mlm_flag(f: &str, v: Option<String>) -> String {
    match v {
        Some(v) => format!("{f} {}", shell_word(&v)),
        None => f.to_string(),
    }
}


fn megatron_lm_model(m: &ModelConfig, seq_length: u64) -> (Vec<String>, Vec<String>) {
    // Each flag is the model field's in the one names table (names::MODEL), which the importers read back.
    let n = |path: &str, v: u64| format!("{} {v}", names::model_flag(path));
    let on = |path: &str| names::model_flag(path).to_string();
    let mut g = vec![
        n("model.num_layers", m.num_layers),
        n("model.hidden_size", m.hidden_size),
        n("model.ffn_hidden_size", m.ffn_hidden_size),
        n("model.num_attention_heads", m.num_attention_heads),
    ];
    let mut notes = Vec::new();
    if let Some(json) = heterogeneous_json(m) {
        notes.push(format!("{HETEROGENEOUS_NOTE}: {json}"));
    }
    notes.extend(unexpressed_notes(m));
    notes.extend(dsv4_mlm_note(m));
    if !m.multi_latent_attention {
        // core_transformer_config_from_args passes num_query_groups only with --group-query-attention.
        if m.num_query_groups != m.num_attention_heads {
            g.push("--group-query-attention".into());
            g.push(n("model.num_query_groups", m.num_query_groups));
        }
        g.push(n("model.kv_channels", m.kv_channels));
    }
    // validate_args requires --max-position-embeddings and that it is at least --seq-length.
    match m.max_position_embeddings {
        Some(v) => g.push(n("model.max_position_embeddings", v)),
        None => {
            g.push(n("model.max_position_embeddings", seq_length));
            notes.push("max_position_embeddings is not set in the plan; the sequence length is used".into());
        }
    }
    if let Some(v) = known(&m.position_embedding_type, POSITION_EMBEDDINGS) {
        g.push(format!("{} {v}", names::model_flag("model.position_embedding_type")));
    }
    if let Some(v) = known(&m.normalization, NORMALIZATIONS) {
        g.push(format!("{} {v}", names::model_flag("model.normalization")));
    }
    match (m.gated_linear_unit, known(&m.activation_func, ACTIVATIONS)) {
        (true, Some("silu")) => g.push("--swiglu".into()),
        (false, Some("gelu")) => {}
        (false, Some("squared_relu")) => g.push("--squared-relu".into()),
        (gated, act) => notes.push(format!(
            "{}{} activation: Megatron-LM has no flag for it; set it in a custom model provider",
            if gated { "gated " } else { "" },
            act.unwrap_or("an unknown")
        )),
    }
    if !m.add_bias_linear {
        g.push(on("model.add_bias_linear"));
    }
    if m.add_qkv_bias {
        g.push(on("model.add_qkv_bias"));
    }
    if m.qk_layernorm {
        g.push(on("model.qk_layernorm"));
    }
    if !m.share_embeddings_and_output_weights {
        g.push(on("model.share_embeddings_and_output_weights"));
    }
    g.push(n("model.make_vocab_size_divisible_by", m.make_vocab_size_divisible_by));
    notes.push(format!(
        "vocabulary {}: the tokenizer sets it (with --tokenizer-type NullTokenizer pass --vocab-size {})",
        m.vocab_size, m.vocab_size
    ));
    if m.is_moe() {
        g.push(n("model.num_moe_experts", m.num_experts()));
        g.push(n("model.moe_router_topk", m.moe_router_topk));
        g.push(n("model.moe_ffn_hidden_size", m.moe_ffn()));
        if let Some(s) = m.moe_shared_expert_intermediate_size.filter(|&s| s > 0) {
            g.push(n("model.moe_shared_expert_intermediate_size", s));
        }
        match &m.moe_layer_freq {
            MoeLayerFreq::Every(k) => g.push(n("model.moe_layer_freq", *k)),
            // moe_freq_type evaluates a list expression of digits, [ ] ( ) + * and commas (no spaces).
            MoeLayerFreq::Pattern(p) => {
                let expr = runs(p).iter().map(|(v, k)| format!("[{v}]*{k}")).collect::<Vec<_>>().join("+");
                g.push(format!("{} {}", names::model_flag("model.moe_layer_freq"), shell_word(&format!("({expr})"))));
            }
        }
        if m.moe_router_pre_softmax {
            g.push(on("model.moe_router_pre_softmax"));
        }
    }
    if m.multi_latent_attention {
        g.push(on("model.multi_latent_attention"));
        if let Some(q) = m.q_lora_rank {
            g.push(n("model.q_lora_rank", q));
        }
        g.push(n("model.kv_lora_rank", m.kv_lora_rank));
        g.push(n("model.qk_head_dim", m.qk_head_dim));
        g.push(n("model.qk_pos_emb_head_dim", m.qk_pos_emb_head_dim));
        g.push(n("model.v_head_dim", m.v_head_dim));
    }
    if m.mtp_num_layers > 0 {
        g.push(n("model.mtp_num_layers", m.mtp_num_layers));
    }
    for (path, v) in layer_kind_fields(m) {
        let flag = names::model_flag(path);
        g.push(match v {
            Val::Bool(_) => flag.to_string(),
            Val::Text(t) => format!("{flag} {}", shell_word(&t)),
            Val::Json(serde_json::Value::Array(a)) => format!("{flag} {}", a.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")),
            Val::Pattern(p) => {
                let expr = runs(&p).iter().map(|(v, k)| format!("[{v}]*{k}")).collect::<Vec<_>>().join("+");
                format!("{flag} {}", shell_word(&format!("({expr})")))
            }
            other => format!("{flag} {}", other.hydra().unwrap_or_default()),
        });
    }
    (g, notes)
}

// ---------------------------------------------------------------------------------------------------
// Slurm
// ---------------------------------------------------------------------------------------------------

/// `#SBATCH` sizing, the mesh arithmetic as comments, and an `srun` line launching the Bridge recipe.
pub fn slurm(p: &Plan, r: &Report) -> String {
    let par = &p.parallelism;
    let d = &r.derived;
    let nodes = p.cluster.num_nodes;
    let gpn = p.cluster.gpus_per_node;
    let (tp, pp, cp, ep, etp) = (par.tp(), par.pp(), par.cp(), par.ep(), par.etp());
    let job = slug(if p.model_key == "custom" { "custom" } else { &p.model_key });
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!("#SBATCH --job-name=meshplan-{job}"),
        format!("#SBATCH --nodes={nodes}"),
        format!("#SBATCH --ntasks-per-node={gpn}"),
        format!("#SBATCH --gpus-per-node={gpn}"),
        "#SBATCH --exclusive".to_string(),
        "#".to_string(),
    ];
    lines.extend(header(p, r, "Slurm sizing"));
    launch_notes(p, r, &mut lines);
    lines.push(format!("# world size W = {nodes} nodes × {gpn} GPUs = {}", d.world_size));
    let full = (pp as u128) * (tp as u128) * (cp as u128) * (ep as u128) * (etp as u128);
    let over = if full > d.min_gpus as u128 {
        format!("the full product PP·TP·CP·EP·ETP = {full} would over-allocate")
    } else {
        format!("here it equals the full product PP·TP·CP·EP·ETP = {full}")
    };
    lines.push(format!(
        "# min_gpus = PP·max(TP·CP, EP·ETP) = {pp}·max({tp}·{cp}, {ep}·{etp}) = {} ({} node(s) of {gpn}); {over}",
        d.min_gpus, d.nodes_needed
    ));
    if d.min_gpus_lcm != d.min_gpus {
        lines.push(format!(
            "# Megatron needs W to be a multiple of PP·lcm(TP·CP, EP·ETP) = {}, so {} GPUs is the smallest world that works",
            d.min_gpus_lcm, d.min_gpus_lcm
        ));
    }
    let step = d.min_gpus_lcm.max(1);
    if d.world_size % step == 0 {
        lines.push(format!("# W = {} = {} × {step}: the extra multiples become data parallelism (DP and expert DP grow together)", d.world_size, d.world_size / step));
    } else {
        lines.push(format!("# WARNING: W = {} is not a multiple of {step}; use a node count whose GPU total is", d.world_size));
    }
    let m = &r.memory;
    if m.host_bytes_per_node > 0 {
        // Offloading (optimizer state or activations) puts this much on each node's CPU memory; the job needs it.
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let of = match (m.host_memory_per_node_bytes, m.host_fits) {
            (Some(cap), Some(fits)) => format!(" of the node's {:.2} GiB (cluster.host_memory_per_node_gb){}", gib(cap), if fits { "" } else { ": it does not fit" }),
            _ => " (the node's host memory is unknown: set cluster.host_memory_per_node_gb)".into(),
        };
        lines.push(format!("# host memory: offloading holds {:.2} GiB per node on the CPU{of}; request the node's memory (e.g. #SBATCH --mem=0)", gib(m.host_bytes_per_node)));
    }
    lines.push(String::new());
    lines.push("export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"".into());
    lines.push("export MASTER_PORT=29500".into());
    for (var, _) in launch_env(p) {
        lines.push(format!("export {var}"));
    }
    lines.push("# One task per GPU; each task maps Slurm's ids to the variables torch.distributed reads.".into());
    let mut cmd = vec![
        format!("srun --nodes={nodes} --ntasks-per-node={gpn} --gpus-per-node={gpn} --kill-on-bad-exit=1"),
        "bash -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS; exec uv run python scripts/training/run_recipe.py \"$@\"' run_recipe".into(),
        format!("--recipe {}", recipe_arg(p)),
    ];
    cmd.extend(bridge_overrides(p, r));
    lines.push(continued(&cmd));
    lines.join("\n") + "\n"
}

// ---------------------------------------------------------------------------------------------------
// Plan file
// ---------------------------------------------------------------------------------------------------

#[derive(Serialize)]
struct PlanFile<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    recipe: Option<&'a str>,
    model: ModelOut<'a>,
    cluster: &'a Cluster,
    training: &'a crate::plan::Training,
    parallelism: ParallelismOut<'a>,
}

#[derive(Serialize)]
struct ModelOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    preset: Option<&'a str>,
    name: &'a str,
    #[serde(flatten)]
    config: &'a ModelConfig,
}

/// The plan file's `parallelism`: every row of the table in order, ETP null where the plan left Megatron-Core's default
/// (= TP), and the rows [`crate::parallelism::ParDoc::written_when_set`] only when set.
struct ParallelismOut<'a>(&'a crate::plan::Parallelism);

impl Serialize for ParallelismOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (par, defaults) = (self.0, crate::plan::Parallelism::default());
        let mut map = s.serialize_map(None)?;
        for row in PARALLELISM {
            let value = match row.key {
                "expert_tensor_parallel_size" if par.expert_tensor_parallel_size_defaulted => serde_json::Value::Null,
                key => par.get(key).unwrap_or(serde_json::Value::Null),
            };
            if row.doc().written_when_set && Some(&value) == defaults.get(row.key).as_ref() {
                continue;
            }
            map.serialize_entry(row.key, &value)?;
        }
        map.end()
    }
}

/// The plan file `meshplan plan` reads: every field written out (null where the plan takes a default it
/// computes, such as the global batch size), so parsing it gives back the same resolved plan.
pub fn plan_json(p: &Plan) -> String {
    let file = PlanFile {
        recipe: p.recipe.as_deref(),
        model: ModelOut { preset: (p.model_key != "custom").then_some(p.model_key.as_str()), name: &p.model_name, config: &p.model },
        cluster: &p.cluster,
        training: &p.training,
        parallelism: ParallelismOut(&p.parallelism),
    };
    // Serializing these plain structs cannot fail; an empty object is the never-reached fallback.
    serde_json::to_string_pretty(&file).unwrap_or_else(|_| "{}".into()) + "\n"
}
