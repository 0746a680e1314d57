//! The table of every diagnostic code: [`RULES`] lists each code once, with its severity, what it means and where
//! it comes from, and the same table generates [`Code`], the type every diagnostic carries. A code with no row
//! cannot be written, and a diagnostic's severity is its row's, never the emit site's choice.
//!
//! This module is the bottom of the core's module graph: it imports nothing from the crate.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// One rule: its typed id, its stable code, severity, a one-line summary, and the source it enforces.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub id: Code,
    pub code: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
    pub source: &'static str,
}

const E: Severity = Severity::Error;
const W: Severity = Severity::Warning;
const I: Severity = Severity::Info;

/// Whether `text` starts with `prefix`, in a const context.
const fn starts_with(text: &str, prefix: &str) -> bool {
    let (t, p) = (text.as_bytes(), prefix.as_bytes());
    if t.len() < p.len() {
        return false;
    }
    let mut i = 0;
    while i < p.len() {
        if t[i] != p[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Each row `Ident "kebab-code" SEVERITY "summary" "source";` becomes a [`Code`] variant and a [`RULES`] entry,
/// in the same order, so `RULES[code as usize]` is the code's row.
macro_rules! rules {
    ($($id:ident $code:literal $sev:ident $summary:literal $source:literal;)*) => {
        /// A diagnostic code: one variant per row of [`RULES`]. Serialized as its kebab-case string.
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum Code {
            $($id),*
        }

        pub const RULES: &[Rule] = &[$(Rule { id: Code::$id, code: $code, severity: $sev, summary: $summary, source: $source }),*];

        impl Code {
            /// Every code, in table order.
            pub const ALL: &[Code] = &[$(Code::$id),*];

            /// The stable kebab-case code, as the JSON and `meshplan explain` spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$id => $code),*
                }
            }

            /// The severity every diagnostic with this code has.
            pub const fn severity(self) -> Severity {
                match self {
                    $(Code::$id => $sev),*
                }
            }

            /// Whether the code judges the input itself (its source is "meshplan input": a typo, a key no table
            /// has), not a setting Megatron rejects. Decided at compile time: reading the sources at run time would
            /// put every rule's source text into the page's wasm (+14.7 KB gzipped, measured).
            pub const fn is_input(self) -> bool {
                match self {
                    $(Code::$id => const { starts_with($source, "meshplan input") }),*
                }
            }
        }
    };
}

rules! {
    InvalidJson "invalid-json" E "The plan file is not valid JSON (exit status 2)." "meshplan input";
    InvalidPlan "invalid-plan" E "The plan is not a JSON object (exit status 2)." "meshplan input";
    InvalidSection "invalid-section" E "A plan section is not a JSON object." "meshplan input";
    InvalidValue "invalid-value" E "A field has the wrong type or is out of range; the default was used instead." "meshplan input";
    UnknownField "unknown-field" W "A field meshplan does not know; it was ignored (check for a typo)." "meshplan input";
    MissingModel "missing-model" E "The plan has no model (exit status 2)." "meshplan input";
    InvalidModel "invalid-model" E "The model is neither a preset key nor an object (exit status 2)." "meshplan input";
    UnknownModelPreset "unknown-model-preset" E "No model preset has this key (exit status 2)." "meshplan input";
    MissingCluster "missing-cluster" E "The plan has no cluster (exit status 2)." "meshplan input";
    UnknownGpu "unknown-gpu" E "No GPU in the catalogue has this key (exit status 2)." "meshplan input";
    GpuNameRead "gpu-name-read" I "The cluster's GPU is named another way than by the catalogue's key (torch's or nvidia-smi's device name, a system's name); the plan reads it as the one entry it names." "meshplan input";
    UnknownRecipe "unknown-recipe" E "No Megatron Bridge recipe meshplan knows has this name; the plan was read without one." "meshplan input (data/bridge_recipes.json, read from Megatron Bridge src/megatron/bridge/recipes)";
    RecipesLoading "recipes-loading" E "The plan names a Megatron Bridge recipe and this build has not loaded the recipes yet (the page fetches them when a plan names one); the plan is planned once they are there." "meshplan page (bridge-recipes.json, crates/core/src/recipes.rs install)";
    RecipeModelDiffers "recipe-model-differs" W "The plan names a Bridge recipe and gives a different model: the plan's model is planned with the recipe's parallelism and settings." "meshplan input (data/bridge_recipes.json)";
    RecipeUnresolved "recipe-unresolved" I "The named Bridge recipe sets something its data could not carry (an optimizer meshplan does not size, a value known only at run time); meshplan's default is planned there." "meshplan input (data/bridge_recipes.json `unresolved`)";
    HfConfigUnmappable "hf-config-unmappable" E "The Hugging Face config lacks the fields needed to size a transformer (exit status 2)." "meshplan input";
    HfConfigLoading "hf-config-loading" E "The model is a Hugging Face config.json and this build has not loaded its config.json reader yet (the page's tools module carries it); the plan is planned once it is there." "meshplan page (src/state/hf.rs, crates/core/src/hf.rs install)";
    // tracing a run back to its configuration (issue 13): import, oom, schedule, and the search's own input
    ImportNoModel "import-no-model" E "The imported launch command or config names no model (no recipe, model class, Hugging Face id, or num_layers / hidden_size) and none was given with --model (exit status 2)." "meshplan input (imports/: Megatron-LM arguments, Megatron Bridge overrides and config YAML)";
    NoOomMessage "no-oom-message" E "The text holds no CUDA out-of-memory message meshplan reads: PyTorch's \"Tried to allocate X GiB. GPU N has a total capacity of …\" or its pre-2.1 form (exit status 2)." "meshplan input (oom.rs); the message: PyTorch c10/cuda/CUDACachingAllocator.cpp (torch.OutOfMemoryError)";
    ScheduleTooLarge "schedule-too-large" E "The pipeline schedule has more operations (2·PP·VPP·microbatches) than meshplan lays out (exit status 2)." "meshplan limit (limits.rs MAX_SCHEDULE_OPS: 2^16)";
    ScheduleWithoutStepTime "schedule-without-step-time" E "The plan has no step-time estimate to time its schedule with: its meshes do not divide the world or its batch gives no microbatch (exit status 2)." "meshplan (schedule.rs; report.rs plans the step time only for a whole DP, expert DP and microbatch count)";
    SearchNeedsBatch "search-needs-batch" E "The layout search needs training.global_batch_size and training.seq_length (given, or from the plan's Bridge recipe) (exit status 2)." "meshplan input (search.rs: the batch sets the microbatches every layout is sized and timed with)";
    // the cluster sizing's own input (issue 25, size.rs)
    SizeNeedsTokens "size-needs-tokens" E "The cluster sizing needs what to train: the tokens (--tokens 15T) or the training steps (--steps), one of them (exit status 2)." "meshplan input (size.rs: time to train = steps × step time)";
    SizeInvalidValue "size-invalid-value" E "A sizing option is not a value meshplan reads (tokens 15T, steps 100000, deadline 30d, GPU-hours 500k, nodes 16..512, batch tokens 4M..16M, efficiency 0.8), or a combination it cannot size: steps with a batch range (exit status 2)." "meshplan input (size.rs SizeRequest)";
    SizeZeroTokens "size-zero-tokens" E "The tokens or steps to train are 0: there is nothing to size (exit status 2)." "meshplan input (size.rs)";
    SizeZeroDeadline "size-zero-deadline" E "The deadline or the GPU-hour budget is 0: no run meets it (exit status 2)." "meshplan input (size.rs)";
    SizeNodesOutOfRange "size-nodes-out-of-range" E "The node range is empty, starts at 0, or reaches past the 2^24 GPUs the layout search lays out (exit status 2)." "meshplan limit (limits.rs MAX_SEARCH_WORLD)";
    SizeBatchIndivisible "size-batch-indivisible" E "No GPU count of the node range has a layout whose micro-batch × data-parallel size divides the global batch (exit status 2)." "megatron/core/num_microbatches_calculator.py (global batch divisible by micro-batch × DP), for every count tried (size.rs)";
    HfConfigFamilyUnknown "hf-config-family-unknown" W "The Hugging Face model_type is not a mapped family; it was read as a Llama-style decoder." "meshplan input";
    HfConfigPartApproximated "hf-config-part-approximated" W "A part of the Hugging Face config is sized approximately: DSA indexers the config shares between layers (GLM-5.2's index_topk_freq / indexer_types \"shared\") are built on every layer, so the parameters, FLOPs and activations of the sharing layers' indexers are counted over." "meshplan input (hf.rs variant_fields); Megatron Bridge models/glm_moe_dsa/glm5_bridge.py (dsa_indexer_topk_freq, dsa_indexer_skip_topk_offset)";
    HfConfigPartExcluded "hf-config-part-excluded" I "A part of the Hugging Face config is not counted: an encoder meshplan does not size (audio towers, vision towers of families other than Llama 4, Qwen3-VL / Qwen3.5, Gemma 3, Gemma 4 and Kimi-K2.5)." "meshplan input (hf/families.rs unwrap_text_config, hf.rs)";
    AddBiasLinearDefault "add-bias-linear-default" I "add_bias_linear was not given for a gated (SwiGLU) model: read as False, while Megatron defaults to True." "megatron/core/transformer/transformer_config.py (add_bias_linear = True)";
    MoeLayerFreqLength "moe-layer-freq-length" E "moe_layer_freq as a list must have one 0/1 entry per layer." "megatron/core/transformer/transformer_config.py (moe_layer_freq)";
    HybridPatternSymbol "hybrid-pattern-symbol" E "A hybrid layer pattern character is not a layer symbol (M G * D + - E, and | between pipeline segments of the main pattern)." "megatron/core/models/hybrid/hybrid_layer_allocation.py _validate_pattern (In main pattern, '…' is not a valid layer symbol. Valid symbols are: …)";
    HybridPatternAttentionMlaMix "hybrid-pattern-attention-mla-mix" E "A hybrid layer pattern cannot mix * (attention) with + (MLA) or D (DSA)." "megatron/core/models/hybrid/hybrid_layer_allocation.py _validate_pattern (Not supported to have both Attention and MLA/DSA in one model)";
    HybridMtpPatternsDiffer "hybrid-mtp-patterns-differ" E "Every MTP depth after / in a hybrid layer pattern must be the same pattern." "megatron/core/models/hybrid/hybrid_layer_allocation.py parse_hybrid_pattern (All MTP patterns must be identical. Pattern 1 is '…', but pattern … is '…'.)";
    HybridPatternNamesBoth "hybrid-pattern-names-both" E "hybrid_layer_pattern and its deprecated name hybrid_override_pattern cannot both be set." "megatron/core/models/hybrid/hybrid_model.py HybridModel.__init__ (hybrid_override_pattern and hybrid_layer_pattern cannot both be set.); megatron/training/arguments.py; Megatron Bridge hybrid_provider.py finalize";
    HybridOverridePatternDeprecated "hybrid-override-pattern-deprecated" I "hybrid_override_pattern is deprecated; it is read as hybrid_layer_pattern." "megatron/training/arguments.py validate_args (copies --hybrid-override-pattern with a deprecation warning); Megatron Bridge hybrid_provider.py finalize";
    HybridNumLayersMismatch "hybrid-num-layers-mismatch" W "num_layers differs from the hybrid pattern's layer count: Megatron-LM warns and uses the pattern's, Megatron Bridge refuses." "megatron/training/arguments.py validate_args (ignoring --num-layers … and using the layer count derived from the pattern); Megatron Bridge hybrid_provider.py finalize (num_layers (…) does not match the number of layers derived from hybrid_layer_pattern (…))";
    HybridMtpDepthsMismatch "hybrid-mtp-depths-mismatch" W "mtp_num_layers differs from the number of MTP depths (/ parts) of the hybrid pattern; Megatron-LM uses the pattern's." "megatron/training/arguments.py validate_args (--mtp-num-layers (…) conflicts with MTP depth count (…) in pattern '…'. Using the inferred value (…).)";
    LayerKindUnsized "layer-kind-unsized" E "The model has a layer kind meshplan cannot size (named in the message); those layers are counted with no parameters or activations." "meshplan model (model/kinds.rs)";
    SearchWorker "search-worker" E "The page's search worker failed to load or replied with something that is not a search result." "meshplan page (src/browser.rs)";
    WorldNotDivisibleDense "world-not-divisible-dense" E "The world size must be a multiple of TP·PP·CP (dense data parallelism must be whole)." "megatron/core/parallel_state.py initialize_model_parallel";
    WorldNotDivisibleExpert "world-not-divisible-expert" E "The world size must be a multiple of ETP·EP·PP (expert data parallelism must be whole)." "megatron/core/parallel_state.py initialize_model_parallel";
    WorldTooLargeToLayOut "world-too-large-to-lay-out" W "The world is too large to list every rank group: the layout keeps its order and (up to 2^24 GPUs) NVLink crossings, without the group lists." "meshplan limit (limits.rs MAX_LAYOUT_WORLD, MAX_CROSSING_WORLD)";
    OrderInvalid "order-invalid" E "The rank order string is not one Megatron accepts." "megatron/core/parallel_state.py RankGenerator";
    OrderMissingDimension "order-missing-dimension" E "The order string leaves out a dimension whose size is above 1." "megatron/core/parallel_state.py RankGenerator.__init__";
    OrderPpNotLast "order-pp-not-last" E "An order not ending in pp needs dense DP to equal expert DP." "megatron/core/parallel_state.py initialize_model_parallel (expert decoder order)";
    OrderPpGroupsDiffer "order-pp-groups-differ" E "With this order the dense and expert rank generators build different PP groups." "megatron/core/parallel_state.py initialize_model_parallel (assert on PP groups)";
    MeshSizeZero "mesh-size-zero" E "A parallel size is zero." "megatron/core/parallel_state.py initialize_model_parallel";
    RankOutOfRange "rank-out-of-range" E "A rank outside the world was asked for." "meshplan layout";
    HeadsNotDivisibleByTp "heads-not-divisible-by-tp" E "num_attention_heads must be divisible by tensor_model_parallel_size." "megatron/core/transformer/attention.py (divide(num_attention_heads, world_size))";
    QueryGroupsNotDivisibleByTp "query-groups-not-divisible-by-tp" E "num_query_groups must be a multiple or a divisor of tensor_model_parallel_size." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: must be a multiple or divisor)";
    QueryGroupsReplicated "query-groups-replicated" I "Fewer query groups than TP ranks: each KV head is replicated TP/num_query_groups times." "megatron/core/transformer/attention.py (num_query_groups < world_size: one KV group per rank)";
    HeadsNotDivisibleByQueryGroups "heads-not-divisible-by-query-groups" E "num_attention_heads must be a multiple of num_query_groups." "megatron/core/transformer/attention.py";
    FfnNotDivisibleByTp "ffn-not-divisible-by-tp" E "ffn_hidden_size (and the shared-expert width) must be divisible by TP." "megatron/core/tensor_parallel/layers.py ColumnParallelLinear (divide)";
    MoeFfnNotDivisibleByEtp "moe-ffn-not-divisible-by-etp" E "moe_ffn_hidden_size must be divisible by expert_tensor_parallel_size." "megatron/core/transformer/moe/experts.py (divide)";
    VocabNotDivisibleByTp "vocab-not-divisible-by-tp" W "vocab_size is not divisible by TP: Megatron-LM pads it to a multiple of make_vocab_size_divisible_by·TP (as meshplan sizes it); Megatron Bridge builds an explicitly set vocab_size unpadded, and VocabParallelEmbedding asserts." "megatron/training/vocab_utils.py calculate_padded_vocab_size (Megatron-LM, always); Megatron Bridge training/setup.py _validate_and_set_vocab_size (should_pad_vocab = False for a set vocab_size), models/gpt_provider.py provide; megatron/core/tensor_parallel/utils.py VocabUtility (divide)";
    MambaHeadsNotDivisibleByTp "mamba-heads-not-divisible-by-tp" E "mamba_num_heads must be divisible by tensor_model_parallel_size." "megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ (nheads must be evenly divisble by tp_size)";
    MambaGroupsNotDivisibleByTp "mamba-groups-not-divisible-by-tp" E "mamba_num_groups must be divisible by tensor_model_parallel_size." "megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ (ngroups must be evenly divisible by tp_size)";
    MambaHeadsNotDivisibleByGroups "mamba-heads-not-divisible-by-groups" E "mamba_num_heads must be divisible by mamba_num_groups." "megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ (nheads must be evenly divisible by ngroups)";
    MambaHeadsNotDivisibleByTpCp "mamba-heads-not-divisible-by-tp-cp" E "With context parallelism, Mamba's heads per TP rank must divide by context_parallel_size (heads are split over CP ranks)." "megatron/core/ssm/mamba_context_parallel.py MambaContextParallel.__init__ (nheads must be evenly divisible by tp_size * cp_size)";
    MambaGroupsNotDivisibleByCp "mamba-groups-not-divisible-by-cp" E "With context parallelism, Mamba's B/C groups per TP rank must divide by CP, or (when fewer) divide CP." "megatron/core/ssm/mamba_context_parallel.py MambaContextParallel.__init__ (cp_size must be evenly divisible by ngroups/tp_size; ngroups must be evenly divisible by tp_size * cp_size)";
    GdnNeedsLinearAttentionFreq "gdn-needs-linear-attention-freq" E "experimental_attention_variant gated_delta_net needs linear_attention_freq." "megatron/core/transformer/transformer_config.py __post_init__ (linear_attention_freq must be set for linear gdn.)";
    GdnValueHeadsNotMultipleOfKeyHeads "gdn-value-heads-not-multiple-of-key-heads" E "linear_num_value_heads must be a multiple of linear_num_key_heads." "megatron/core/transformer/transformer_config.py __post_init__ (linear_num_value_heads (…) must be a multiple of linear_num_key_heads (…).)";
    GdnKeyHeadsNotDivisibleByTpCp "gdn-key-heads-not-divisible-by-tp-cp" E "Gated DeltaNet's linear_num_key_heads must be a multiple of TP·CP." "megatron/core/transformer/transformer_config.py __post_init__ (linear_num_key_heads=… must be a multiple of (tensor_model_parallel_size=… * context_parallel_size=…).)";
    GdnValueHeadsNotDivisibleByTpCp "gdn-value-heads-not-divisible-by-tp-cp" E "Gated DeltaNet's linear_num_value_heads must be a multiple of TP·CP." "megatron/core/transformer/transformer_config.py __post_init__ (linear_num_value_heads=… must be a multiple of (tensor_model_parallel_size=… * context_parallel_size=…).)";
    SpRequiresTp "sp-requires-tp" E "sequence_parallel needs tensor_model_parallel_size > 1." "seed Pitfall 3; megatron/core/model_parallel_config.py __post_init__";
    MoeTpRequiresSp "moe-tp-requires-sp" E "An MoE model with TP > 1 must enable sequence_parallel, whatever EP is." "megatron/core/transformer/moe/moe_layer.py MoELayer.forward (ValueError in training; model_parallel_config.py only warns, for EP > 1)";
    CpSeqNotDivisible "cp-seq-not-divisible" E "seq_length must be divisible by 2·context_parallel_size." "seed Pitfall 4; megatron/training/arguments.py validate_args";
    SpSeqNotDivisible "sp-seq-not-divisible" E "With sequence_parallel, seq_length must be a multiple of CP·TP (each CP rank's share splits over TP); with CP > 1 as well, of CP·lcm(2, TP)." "megatron/core/tensor_parallel/mappings.py _split_along_first_dim (asserts at the first forward; Megatron-LM has no config check, Bridge checks only SFT datasets: config.py lcm(2·CP, CP·TP))";
    EpRequiresMoe "ep-requires-moe" E "expert_model_parallel_size > 1 needs an MoE model (num_moe_experts)." "seed Pitfall 5; megatron/core/transformer/transformer_config.py";
    EtpWithoutMoe "etp-without-moe" I "expert_tensor_parallel_size has no effect on a dense model." "megatron/core/parallel_state.py";
    ExpertsNotDivisibleByEp "experts-not-divisible-by-ep" E "num_moe_experts must be divisible by expert_model_parallel_size." "megatron/core/transformer/moe/moe_layer.py (num_local_experts)";
    TopkExceedsExperts "topk-exceeds-experts" E "moe_router_topk cannot exceed num_moe_experts." "Megatron does not check; the router's topk fails at the first step";
    TopkOneNeedsPreSoftmax "topk-one-needs-pre-softmax" E "moe_router_topk = 1 with softmax scoring needs moe_router_pre_softmax." "megatron/core/transformer/transformer_config.py __post_init__";
    MoeBiasNeedsEtp1 "moe-bias-needs-etp1" E "An MoE model with linear biases needs expert_tensor_parallel_size = 1." "megatron/core/transformer/transformer_config.py __post_init__";
    EtpDefault "etp-default" I "expert_tensor_parallel_size was not given: megatron-core defaults it to TP, Megatron Bridge to 1 when EP > 1." "megatron/core/model_parallel_config.py; Megatron Bridge model provider";
    VppRequiresPp "vpp-requires-pp" E "virtual_pipeline_model_parallel_size needs pipeline_model_parallel_size > 1." "megatron/training/arguments.py validate_args";
    LayersNotDivisibleByPp "layers-not-divisible-by-pp" E "num_layers (or the layers between uneven first/last stages) must divide evenly over the pipeline stages." "megatron/training/arguments.py validate_args; transformer_block.py get_num_layers_to_build";
    LayersNotDivisibleByVpp "layers-not-divisible-by-vpp" E "Each stage's layers must divide evenly into its virtual pipeline chunks." "megatron/training/arguments.py validate_args";
    UnevenStagesTooManyLayers "uneven-stages-too-many-layers" E "num_layers_in_first/last_pipeline_stage add up to more than num_layers." "megatron/training/arguments.py validate_args";
    UnevenStageZeroLayers "uneven-stage-zero-layers" E "num_layers_in_first/last_pipeline_stage must be larger than 0." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError)";
    UnevenStagesEmptyMiddle "uneven-stages-empty-middle" E "Uneven first/last stages leave no layers for the middle pipeline stages." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: Mismatch … middle layers … middle PP stages)";
    UnevenStagesNeedPp "uneven-stages-need-pp" E "Uneven first/last pipeline stages need pipeline_model_parallel_size > 1." "megatron/training/arguments.py validate_args";
    AccountForWithUnevenStages "account-for-with-uneven-stages" E "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split cannot be combined with num_layers_in_first/last_pipeline_stage." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same time with account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split); transformer_block.py get_num_layers_to_build (assert)";
    // pipeline_model_parallel_layout (megatron/core/transformer/pipeline_parallel_layer_layout.py, transformer_config.py)
    LayoutWithUnevenStages "layout-with-uneven-stages" E "pipeline_model_parallel_layout cannot be combined with num_layers_in_first/last_pipeline_stage or account_for_embedding/loss_in_pipeline_split." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: pipeline_model_parallel_layout cannot be set with other pipeline layout arguments.)";
    LayoutTooLarge "layout-too-large" E "The pipeline layout (or a hybrid pattern's | segments) is larger than the model can use: more characters, entries or stages than meshplan reads. Counted from the repetition counts; nothing was unrolled." "meshplan limit (limits.rs MAX_LAYOUT_CHARS, MAX_PIPELINE_STAGES; entries at most num_layers + mtp_num_layers + 2 + stages − 1)";
    LayoutListForm "layout-list-form" E "The list form of pipeline_model_parallel_layout is a flat list of stages, each a list of LayerType names (strings)." "megatron/core/transformer/pipeline_parallel_layer_layout.py __init__ (must be a list of lists; elements … must be LayerType or str)";
    LayoutChar "layout-char" E "A layout entry is not a layer: the string form takes E, t, m, L (case-sensitive), the list form the LayerType names embedding, decoder, mtp, loss." "megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list (Invalid layer character: …), __init__ (… is not a valid LayerType)";
    LayoutStagesNotDivisibleByPp "layout-stages-not-divisible-by-pp" E "The layout's stage count (PP·VPP) must be a multiple of pipeline_model_parallel_size." "megatron/core/transformer/pipeline_parallel_layer_layout.py __init__ (pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size); megatron/training/arguments.py validate_args (The length of pipeline_model_parallel_layout must be divisible …)";
    LayoutVppConflict "layout-vpp-conflict" E "An explicit virtual_pipeline_model_parallel_size must equal the layout's stages / PP." "megatron/core/transformer/transformer_config.py __post_init__ (virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout)";
    LayoutEmpty "layout-empty" E "The layout has no entries at all (Megatron fails with an IndexError)." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (flatten_layout[0] of an empty layout)";
    LayoutFirstNotEmbedding "layout-first-not-embedding" E "The layout's first entry must be the embedding (E)." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (The first layer must be embedding, but got …)";
    LayoutLastNotLoss "layout-last-not-loss" E "The layout's last entry must be the loss (L)." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (The last layer must be loss, but got …)";
    LayoutEmbeddingCount "layout-embedding-count" E "The layout must name the embedding (E) exactly once." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (Embedding must be specified exactly once)";
    LayoutLossCount "layout-loss-count" E "The layout must name the loss (L) exactly once." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (Loss must be specified exactly once)";
    LayoutDecoderCount "layout-decoder-count" E "The layout's decoder layers (t) must number num_layers." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (Number of decoder layers …must match num_layers …)";
    LayoutMtpCount "layout-mtp-count" E "The layout's MTP layers (m) must number mtp_num_layers." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (Number of mtp layers in layout must match mtp_num_layers)";
    LayoutMtpBeforeDecoder "layout-mtp-before-decoder" E "Every MTP layer (m) must come after every decoder layer (t) in the layout's order." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (decoder layers must be placed before MTP layers)";
    LayoutMtpNotLastChunk "layout-mtp-not-last-chunk" E "MTP layers (m) may sit only in a pipeline rank's last virtual chunk." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (Currently we restrict that the MTP should be always in the last )";
    LayoutMtpSplit "layout-mtp-split" E "All MTP layers (m) must sit in one virtual chunk." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (All of the MTP layers must be in the same one virtual pipeline stage)";
    LayoutEncoder "layout-encoder" E "Encoder entries are not supported in a pipeline layout." "megatron/core/transformer/pipeline_parallel_layer_layout.py validate_layer_layout (NotImplementedError: Encoder layer is not supported for flexible pipeline layout)";
    LayoutMarkerOnEmptyStage "layout-marker-on-empty-stage" W "The layout's E is not in its first stage (or L not in its last): Megatron builds the embedding on pp 0, vpp 0 and the output layer and loss on the last chunk of the last rank whatever the markers say, in stages the layout leaves empty." "megatron/core/models/gpt/gpt_model.py (pre_process / post_process from is_pipeline_first_stage / is_pipeline_last_stage); validate_layer_layout accepts leading and trailing empty stages";
    // hybrid layer patterns' | segments on the pipeline (megatron/core/models/hybrid/hybrid_layer_allocation.py)
    HybridSegmentsNotDivisibleByPp "hybrid-segments-not-divisible-by-pp" E "A hybrid pattern's | segments (PP·VPP of them) must be a multiple of pipeline_model_parallel_size." "megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment (The number of pipe-delimited segments … must be evenly divisible by pipeline_model_parallel_size); megatron/training/arguments.py validate_args";
    HybridPipesWithFirstLastStage "hybrid-pipes-with-first-last-stage" E "A hybrid pattern with | segments cannot take num_layers_in_first/last_pipeline_stage: the segments are the stages." "megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment (Cannot specify num_layers_in_first_pipeline_stage or num_layers_in_last_pipeline_stage when hybrid_layer_pattern contains pipe ('|') separators.)";
    HybridVppNeedsPipes "hybrid-vpp-needs-pipes" E "Virtual pipeline stages with a hybrid pattern need | segments: VPP = segments / PP." "megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment (Virtual pipeline parallelism (vp_stage != None) is not supported when hybrid_layer_pattern has no pipe ('|') separators.)";
    HybridVppConflict "hybrid-vpp-conflict" E "An explicit virtual_pipeline_model_parallel_size must equal the hybrid pattern's segments / PP." "megatron/training/arguments.py validate_args (--num-virtual-stages-per-pipeline-rank should not be used with --hybrid-layer-pattern); hybrid_layer_allocation.py select_pipeline_segment (Pipeline segment index … is out of range)";
    HybridLegacySplitUneven "hybrid-legacy-split-uneven" E "A hybrid pattern without | on PP > 1 is split evenly: its layers (or the middle layers between first/last stages) must divide over the stages." "megatron/core/models/hybrid/hybrid_layer_allocation.py select_pipeline_segment (Number of layers (…) must be evenly divisible by pipeline-model-parallel-size …; Middle layers (…) must be evenly divisible by middle pipeline stages)";
    HybridVppUnsupportedInBridge "hybrid-vpp-unsupported-in-bridge" W "Megatron Bridge rejects virtual pipeline stages for hybrid models (with VPP unset it builds only the first PP segments); Megatron-LM runs them." "Megatron Bridge src/megatron/bridge/models/hybrid/hybrid_provider.py provide (Virtual pipeline model parallelism is temporarily unsupported in Hybrid models …)";
    HybridPatternWithLayout "hybrid-pattern-with-layout" E "A hybrid pattern's | segments replace pipeline_model_parallel_layout and account_for_*_in_pipeline_split." "megatron/training/arguments.py validate_args (--pipeline-model-parallel-layout / --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split should not be used with --hybrid-layer-pattern.)";
    InterleavedMicrobatches "interleaved-microbatches" E "With virtual pipeline stages the microbatch count M must be at least N = microbatch_group_size_per_vp_stage (default PP), and M mod N must be 0 or at least PP (with N = PP: M a multiple of PP)." "megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving (ValueError / RuntimeError at the first step)";
    VppMicrobatchGroupBelowPp "vpp-microbatch-group-below-pp" E "microbatch_group_size_per_vp_stage must be at least pipeline_model_parallel_size." "megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving (ValueError: range [PP, M])";
    VppPp2NeedsOverlapP2p "vpp-pp2-needs-overlap-p2p" W "Interleaving with PP = 2 and overlap_p2p_comm off (--no-overlap-p2p-communication) fails under Megatron-LM; both launchers run it on by default." "megatron/training/arguments.py validate_args (PP > 2 unless overlap_p2p_comm; --no-overlap-p2p-communication turns the default off); Megatron Bridge training/comm_overlap.py (overlap_p2p_comm = True when PP > 1 and VPP > 1)";
    GbsDefault "gbs-default" I "global_batch_size was not given: Megatron-LM defaults it to micro_batch_size·DP (one microbatch per step); Megatron Bridge asserts it is set." "megatron/training/arguments.py validate_args (global_batch_size = micro_batch_size * data_parallel_size); Megatron Bridge training/config.py ConfigContainer (train.global_batch_size must be set unless eval_global_batch_size is)";
    GbsNotDivisible "gbs-not-divisible" E "global_batch_size must be divisible by micro_batch_size × data_parallel_size." "megatron/core/num_microbatches_calculator.py";
    SeqExceedsMaxPosition "seq-exceeds-max-position" E "seq_length exceeds max_position_embeddings." "megatron/training/arguments.py validate_args";
    SeqExceedsMaxPositionMlm "seq-exceeds-max-position-mlm" W "seq_length exceeds max_position_embeddings with RoPE: Megatron-LM asserts, Megatron Bridge does not check." "megatron/training/arguments.py validate_args (max_position_embeddings required and ≥ seq_length); Bridge GPTModelProvider has no such field";
    FullRecomputeNeedsMethod "full-recompute-needs-method" E "Full recompute needs recompute_method (uniform or block) and recompute_num_layers." "megatron/core/transformer/transformer_config.py __post_init__";
    SelectiveRecomputeForbidsMethod "selective-recompute-forbids-method" E "Selective recompute takes no recompute_num_layers." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: recompute_num_layers must be None)";
    SelectiveRecomputeMethodMlm "selective-recompute-method-mlm" W "Selective recompute with recompute_method: Megatron-LM asserts, megatron-core and Bridge ignore it." "megatron/training/arguments.py validate_args (recompute method is not yet supported for selective recomputing granularity)";
    RecomputeNumLayersRange "recompute-num-layers-range" E "recompute_num_layers = 0 with uniform full recompute never advances (the first forward hangs)." "megatron/core/recompute.py (uniform: layer_idx += recompute_num_layers)";
    RecomputeNumLayersClipped "recompute-num-layers-clipped" W "recompute_num_layers above every model chunk's layer count (or 0 with block) is accepted but does not run as written: uniform clips the unit to the chunk, block recomputes the whole chunk (0: nothing)." "megatron/core/recompute.py checkpointed_forward (was transformer_block.py _checkpointed_forward; uniform: min() clip, block: layer_idx < recompute_num_layers); TransformerConfig and validate_args check only that it is set";
    MtpPositionEmbeddingMlm "mtp-position-embedding-mlm" W "Multi-token prediction with position_embedding_type other than rope or none: Megatron-LM asserts, Megatron Bridge does not check." "megatron/training/arguments.py validate_args (MTP validation: rope or none); Bridge checks only in training/mlm_compat/model.py";
    MtpBlockRecomputeSkipped "mtp-block-recompute-skipped" W "Multi-token prediction with full block recompute: megatron-core does not recompute the MTP layers (it warns and runs them plainly)." "megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer._checkpointed_forward (recompute_method == 'block': Skipping recompute)";
    MtpRecomputeUniformNeedsOne "mtp-recompute-uniform-needs-one" E "Multi-token prediction with full uniform recompute needs recompute_num_layers = 1." "megatron/core/transformer/multi_token_prediction.py _checkpointed_forward (assert)";
    PrecisionUnsupported "precision-unsupported" E "The GPU has no tensor cores for this precision." "GPU catalogue";
    Fp8DimsNotDivisible "fp8-dims-not-divisible" E "FP8 GEMMs need the rank-local token count divisible by 8 and each weight's local input width by 16 (output width by 8)." "transformer_engine/pytorch/utils.py assert_dim_for_fp8_exec (ValueError at the first forward)";
    OutOfMemory "out-of-memory" E "Peak memory of some pipeline stage exceeds the GPU's memory." "meshplan memory model";
    OutOfMemoryAssumed "out-of-memory-assumed" W "The out-of-memory verdict rests on a memory setting the plan leaves unstated: the assumed value is named, and the value that fits with what it saves." "meshplan memory model, each unstated setting flipped (report.rs `verdict`; tuned defaults: tuned.rs)";
    LowMemoryHeadroom "low-memory-headroom" W "The plan fits but leaves under 10% of the GPU's memory free." "meshplan memory model";
    HostMemoryExceeded "host-memory-exceeded" W "Optimizer or activation offloading needs more host memory per node than the node has." "meshplan memory model (host bytes of optimizer offload: megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py; activation offload: fine_grained_activation_offload.py) against cluster.host_memory_per_node_gb";
    TpCrossesNvlink "tp-crosses-nvlink" W "A tensor-parallel group spans more than one NVLink domain." "seed: Decision by Hardware Topology, Pitfall 1";
    EpCrossesNvlink "ep-crosses-nvlink" W "An expert-parallel group spans more than one NVLink domain: the token all-to-all leaves NVLink." "seed: Decision by Hardware Topology";
    EtpCrossesNvlink "etp-crosses-nvlink" W "An expert-tensor-parallel group spans more than one NVLink domain: each expert GEMM's collectives leave NVLink (like TP across nodes)." "seed: Decision by Hardware Topology, Pitfall 1 (applied to the expert mesh's TP)";
    CpCrossesNvlink "cp-crosses-nvlink" I "A context-parallel group spans more than one NVLink domain." "seed: Decision by Hardware Topology";
    WorldExceedsNeed "world-exceeds-need" I "The cluster is larger than the layout needs at DP = 1; the extra GPUs become data parallelism." "seed: Scaling above the minimum";
    MinGpus "min-gpus" I "The minimum GPU count is PP·max(TP·CP, EP·ETP), not the full product PP·TP·CP·EP·ETP." "seed: Minimum GPU Count";
    MinGpusLcm "min-gpus-lcm" W "PP·max(TP·CP, EP·ETP) is not a valid world size here: Megatron needs a multiple of PP·lcm(TP·CP, EP·ETP)." "shared/seed/NOTES.md; megatron/core/parallel_state.py";
    SeqLengthAdvice "seq-length-advice" I "The source guide's sequence-length table: SP from 2K, CP = 2 from 8K, CP 4–8 from 32K." "seed: Decision by Sequence Length";
    ModelSizeAdvice "model-size-advice" I "The source guide's model-size tables: a starting point for this model's size." "seed: Decision by Model Size";
    PpWithoutVpp "pp-without-vpp" I "PP > 1 without interleaving has a large pipeline bubble." "seed Pitfall 2";
    FewMicrobatches "few-microbatches" W "Fewer microbatches than pipeline stages: the pipeline never fills." "Narayanan 2021 §2.2";
    CudaDeviceMaxConnections "cuda-device-max-connections" I "TP/SP communication overlap needs CUDA_DEVICE_MAX_CONNECTIONS=1." "seed Pitfall 7";
    PrecisionAwareNeedsAdam "precision-aware-optimizer-needs-adam" E "use_precision_aware_optimizer works only with optimizer = adam." "megatron/core/optimizer/optimizer_config.py OptimizerConfig.__post_init__ (assert: --use-precision-aware-optimizer only supported with adam)";
    PrecisionAwareNeedsDistributedOptimizer "precision-aware-optimizer-needs-distributed-optimizer" E "use_precision_aware_optimizer needs the distributed optimizer." "megatron/core/optimizer/__init__.py get_megatron_optimizer (ValueError: --use-precision-aware-optimizer only supported with distributed optimizer)";
    OptimizerDtypeNeedsPrecisionAware "optimizer-dtype-needs-precision-aware" E "main_params_dtype, main_grads_dtype, exp_avg_dtype and exp_avg_sq_dtype other than fp32 need use_precision_aware_optimizer." "megatron/core/optimizer/optimizer_config.py OptimizerConfig.__post_init__ (assert: … can only be fp32 when not using precision-aware optimizer)";
    MainGradsBf16Fp32GradsMlm "main-grads-bf16-fp32-grads-mlm" W "main_grads_dtype = bf16 with fp32 gradient reduction: Megatron-LM asserts with --accumulate-allreduce-grads-in-fp32 (and otherwise reduces in bf16); Megatron Bridge's bf16 recipes keep the fp32 grad buffer." "megatron/training/arguments.py validate_args (--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set); Megatron Bridge training/mixed_precision.py bf16_mixed";
    CrossEntropyTeMlm "cross-entropy-te-mlm" I "cross_entropy_fusion_impl = te with cross_entropy_loss_fusion: Megatron-LM's argument validation refuses it (Transformer Engine's fused loss, disabled there for stability); Megatron-Core warns and Megatron Bridge's performance recipes run it." "megatron/training/arguments.py validate_args (Transformer Engine cross entropy loss fusion is disabled due to stability issues); megatron/core/model_parallel_config.py __post_init__ (UserWarning)";
    OptimizerOffloadPrecisionAwareMlm "optimizer-offload-precision-aware-mlm" W "optimizer_cpu_offload without use_precision_aware_optimizer: Megatron-LM asserts; Megatron Bridge runs it with the fp32 master weights left on the GPU." "megatron/training/arguments.py validate_args (The optimizer cpu offload must be used in conjunction with --use-precision-aware-optimizer); Megatron Bridge training/optim.py (HybridDeviceOptimizer over MCore's fp32 shards)";
    OptimizerOffloadFp8DelayedMlm "optimizer-offload-fp8-delayed-mlm" W "optimizer_cpu_offload with FP8 weights needs the delayed FP8 recipe under Megatron-LM; Megatron Bridge does not check." "megatron/training/arguments.py validate_args (When --fp8-param-gather is enabled, the optimizer cpu offload must be used in conjunction with --fp8-recipe delayed)";
    OffloadFractionWithoutOffload "offload-fraction-without-offload" I "optimizer_offload_fraction has no effect without optimizer_cpu_offload." "megatron/core/optimizer/__init__.py (the fraction is read only on the CPU-offload path)";
    OptimizerInstancesNotDivisible "optimizer-instances-not-divisible" E "num_distributed_optimizer_instances must divide DP·CP and the expert data-parallel size." "megatron/core/parallel_state.py initialize_model_parallel (assert: Data parallel size should be divisible by partial DistOpt shard factor; Expert data parallel size …)";
    OverlapParamGatherDistributedOptimizerMlm "overlap-param-gather-distributed-optimizer-mlm" W "overlap_param_gather without the distributed optimizer or Megatron-FSDP: Megatron-LM asserts; without sharded weights there is no all-gather to overlap." "megatron/training/arguments.py validate_args (--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon)";
    OverlapParamGatherGradReduceMlm "overlap-param-gather-grad-reduce-mlm" W "overlap_param_gather without overlap_grad_reduce: Megatron-LM asserts; Megatron Bridge does not check." "megatron/training/arguments.py validate_args (Must use --overlap-param-gather with --overlap-grad-reduce)";
    ShardingStrategyWithoutFsdp "sharding-strategy-without-fsdp" I "data_parallel_sharding_strategy takes effect only with use_megatron_fsdp." "megatron/core/distributed/distributed_data_parallel_config.py (data_parallel_sharding_strategy: Megatron-FSDP only)";
    MegatronFsdpDistributedOptimizer "megatron-fsdp-distributed-optimizer" I "Megatron-FSDP turns the distributed optimizer on (Megatron-LM and Megatron Bridge both do, with a warning)." "megatron/training/arguments.py validate_args (Megatron-FSDP v1 is only compatible with --use-distributed-optimizer); Megatron Bridge training/config.py (use_distributed_optimizer=True is required for Megatron-FSDP. Activating...)";
    Fp8ParamGatherWithoutFp8 "fp8-param-gather-without-fp8" E "fp8_param_gather needs precision fp8." "megatron/core/transformer/transformer_config.py __post_init__ (fp8_param must be used together with fp8 mode.)";
    Fp4ParamGatherWithoutFp4 "fp4-param-gather-without-fp4" E "fp4_param_gather needs precision fp4." "megatron/core/transformer/transformer_config.py __post_init__ (fp4_param must be used together with fp4 mode.); megatron/training/arguments.py (--fp4-param-gather must be used together with --fp4-format.)";
    ParamGatherDistributedOptimizerMlm "param-gather-distributed-optimizer-mlm" W "fp8_param_gather / fp4_param_gather without the distributed optimizer or Megatron-FSDP: Megatron-LM asserts; Megatron Bridge does not check." "megatron/training/arguments.py validate_args (--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode)";
    Mxfp8ParamGatherReuseBridge "mxfp8-param-gather-reuse-bridge" W "MXFP8 weights (fp8_param_gather with fp8_recipe mxfp8) without reuse_grad_buf_for_mxfp8_param_ag: Megatron Bridge asserts; Megatron-LM runs with a separate parameter buffer." "Megatron Bridge training/config.py ConfigContainer.validate (When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be set to True)";
    ReuseGradBufNeedsParamGather "reuse-grad-buf-needs-param-gather" E "reuse_grad_buf_for_mxfp8_param_ag needs fp8_param_gather." "megatron/core/distributed/distributed_data_parallel_config.py __post_init__ (assert: Reuse grad buffer only when keeping params in MXFP8.)";
    Mxfp8WithoutParamGather "mxfp8-without-param-gather" W "The mxfp8 recipe without FP8 weights in the reused grad buffer keeps extra weight copies (megatron-core warns)." "megatron/core/optimizer/optimizer_config.py __post_init__ (warning: mxfp8 without using reuse_grad_buf_for_mxfp8_param_ag and fp8_param_gather will use significant amount additional GPU memory)";
    FirstLastBf16WithDelayed "first-last-bf16-with-delayed" E "first_last_layers_bf16 does not work with the delayed FP8 recipe." "megatron/core/transformer/transformer_config.py __post_init__ (Delayed scaling does not support first / last layer in BF16.)";
    Bf16LayersOutOfRange "bf16-layers-out-of-range" E "num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16 must be at most num_layers // PP." "megatron/core/transformer/transformer_config.py __post_init__ (must be between 0 and number of layers per pipeline stage)";
    Fp8RecipeWithoutFp8 "fp8-recipe-without-fp8" I "fp8_recipe has no effect unless precision is fp8." "megatron/core/transformer/transformer_config.py (fp8_recipe is read only with fp8)";
    RecomputeModulesNeedSelective "recompute-modules-need-selective" W "recompute_modules is read only with recompute_granularity = selective." "megatron/core/transformer/transformer_config.py __post_init__ (recompute_modules checked and used under selective); Megatron Bridge perf harness sets selective with recompute_modules";
    MlaUpProjNeedsMla "mla-up-proj-needs-mla" E "mla_up_proj recompute needs multi-latent attention." "megatron/core/transformer/transformer_config.py __post_init__ (ValueError: mla_up_proj in recompute_modules is only supported with multi_latent_attention.)";
    RecomputeModuleNoLayer "recompute-module-no-layer" W "A recompute_modules entry names a layer part the model does not have; it recomputes nothing." "megatron/core/transformer/transformer_layer.py, moe/moe_layer.py, moe/experts.py (each entry wraps its own module)";
    DelayedFp8RecomputeModules "delayed-fp8-recompute-modules" E "moe_act and layernorm recompute do not work with the delayed FP8 recipe." "megatron/core/transformer/transformer_config.py __post_init__ (Delayed scaling does not support moe_act and layernorm recompute for fp8.)";
    DistributeSavedActivationsInvalid "distribute-saved-activations-invalid" E "distribute_saved_activations needs TP > 1, full recompute with a method, and no sequence parallelism." "megatron/core/transformer/transformer_config.py __post_init__ (must be false when sequence parallel is enabled); megatron/training/arguments.py validate_args (TP > 1, full granularity, a recompute method)";
    FullRecomputeCudaGraphs "full-recompute-cuda-graphs" E "Full recompute works only with the full_iteration CUDA graph (or none)." "megatron/core/transformer/transformer_config.py __post_init__ (full recompute is only supported with full iteration CUDA graph.)";
    CpuOffloadLayersRange "cpu-offload-layers-range" E "cpu_offloading_num_layers must be less than num_layers." "megatron/core/transformer/transformer_config.py __post_init__ l.1884-1889 (CPU offloading can be done only for layers less than num_layers)";
    CpuOffloadWithPipeline "cpu-offload-with-pipeline" E "cpu_offloading does not work with pipeline parallelism (PP > 1)." "megatron/core/transformer/transformer_config.py __post_init__ l.1891-1894 (Currently there is no support for Pipeline parallelism with CPU offloading)";
    CpuOffloadWithRecompute "cpu-offload-with-recompute" E "cpu_offloading does not work with activation recompute." "megatron/core/transformer/transformer_config.py __post_init__ l.1896-1899 (CPU offloading does not work when activation recomputation is enabled)";
    CpuOffloadWithFineGrained "cpu-offload-with-fine-grained" E "cpu_offloading and fine_grained_activation_offloading exclude each other." "megatron/core/transformer/transformer_config.py __post_init__ l.2129-2130 (fine_grained_activation_offloading cannot be enabled with cpu_offloading.)";
    CpuOffloadWithCudaGraphs "cpu-offload-with-cuda-graphs" E "cpu_offloading works only with the full_iteration CUDA graph (or none)." "megatron/core/transformer/transformer_config.py __post_init__ l.2800-2801 (CUDA graphs not supported with CPU offloading.)";
    CpuOffloadLayersWithoutOffloading "cpu-offload-layers-without-offloading" W "cpu_offloading_num_layers has no effect without cpu_offloading." "megatron/core/transformer/transformer_block.py l.306 (the offload context is built only with cpu_offloading); megatron/training/arguments.py l.1950 (Megatron-LM turns cpu_offloading on for num_layers > 0)";
    ActivationOffloadNeedsModules "activation-offload-needs-modules" E "fine_grained_activation_offloading needs at least one offload_modules entry." "megatron/core/transformer/transformer_config.py __post_init__ (assert offload_modules is not None and len(offload_modules) > 0)";
    OffloadModulesWithoutOffloading "offload-modules-without-offloading" W "offload_modules has no effect without fine_grained_activation_offloading." "megatron/core/transformer/transformer_config.py (offload_modules read only with fine_grained_activation_offloading)";
    AttnProjOffloadNeedsCoreAttn "attn-proj-offload-needs-core-attn" E "Offloading attn_proj needs core_attn offloaded too." "megatron/core/transformer/transformer_config.py __post_init__ (attn_proj cannot be set to offload_modules alone without core_attn)";
    ActivationOffloadMoeRecompute "activation-offload-moe-recompute" E "Offloading moe_act, expert_fc1 or fused_group_mlp does not work while moe recompute wraps the MoE layer." "megatron/core/transformer/transformer_config.py __post_init__ (Cannot offload … while recomputing the entire MoE layer.)";
    ActivationOffloadEnv "activation-offload-env" I "Fine-grained activation offloading needs NVTE_CPU_OFFLOAD_V1=1 in the launch environment (Transformer Engine 2.10 and later), so that weights are not offloaded." "Megatron Bridge src/megatron/bridge/training/config.py _validate_fine_grained_activation_offloading (ValueError: NVTE_CPU_OFFLOAD_V1 environment variable should be set to 1 to avoid offloading weights); megatron/training/arguments.py validate_args (the same assert, TE >= 2.10.0)";
    CudaGraphScopeWithoutImpl "cuda-graph-scope-without-impl" I "cuda_graph_scope has no effect with cuda_graph_impl = none." "megatron/core/transformer/transformer_config.py (graph modules read only with an implementation); Megatron Bridge perf_recipes/_common.py _benchmark_common (clears cuda_graph_scope when impl is none)";
    CudaGraphScopeInvalid "cuda-graph-scope-invalid" E "cuda_graph_scope does not fit the model or the implementation (full_iteration takes none; moe and moe_router exclude each other; moe_preprocess needs moe_router; moe needs MoE layers with drop-padding; mlp needs dense layers)." "megatron/core/transformer/transformer_config.py __post_init__ (cuda_graph_modules asserts)";
    CudaGraphLocalBridge "cuda-graph-local-bridge" W "Megatron Bridge runs cuda_graph_impl = local only as a full-iteration graph; per-layer (scoped) graphs need transformer_engine." "Megatron Bridge src/megatron/bridge/utils/cuda_graph.py validate_cuda_graph_configuration (ValueError: supports cuda_graph_impl=\"local\" only for full-iteration CUDA graphs), called from ConfigContainer.validate";
    EpOverlapInvalid "ep-overlap-invalid" E "overlap_moe_expert_parallel_comm needs EP > 1, the alltoall or flex dispatcher, bf16 or fp16, VPP when PP > 1, no full recompute (method, layers) and no moe recompute, and at most one MTP layer." "megatron/core/transformer/transformer_config.py __post_init__ (the overlap_moe_expert_parallel_comm asserts); Megatron Bridge src/megatron/bridge/training/comm_overlap.py (the same checks at comm-overlap setup)";
    PadToCapacityNeedsCapacityFactor "pad-to-capacity-needs-capacity-factor" E "moe_pad_expert_input_to_capacity needs moe_expert_capacity_factor." "megatron/core/transformer/transformer_config.py __post_init__ (moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity)";
    DeepepPadToCapacity "deepep-pad-to-capacity" E "The flex dispatcher's DeepEP backend does not pad experts to capacity." "megatron/core/transformer/transformer_config.py __post_init__ (Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity)";
    FlexDispatcherNeedsTpEp "flex-dispatcher-needs-tp-ep" E "The flex dispatcher needs expert TP × EP > 1: with one expert rank there is nothing to dispatch." "megatron/core/transformer/moe/token_dispatcher.py MoEFlexTokenDispatcher.__init__ (assert self.tp_size * self.ep_size > 1, \"Flex token dispatcher requires TPxEP > 1\"; tp_size is the expert tensor-parallel group's)";
    FlexBackendWithoutFlex "flex-backend-without-flex" I "moe_flex_dispatcher_backend is read only with moe_token_dispatcher_type = flex." "megatron/core/transformer/moe/token_dispatcher.py (MoEFlexTokenDispatcher reads the backend)";
    FlexBackendGpuBridge "flex-backend-gpu-bridge" W "The flex dispatcher's backend does not run on this GPU: Megatron Bridge rejects it; Megatron-LM leaves it to DeepEP / HybridEP to fail." "Megatron Bridge training/flex_dispatcher_backend.py validate_flex_dispatcher_backend (DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs; HybridEP for GB200, GB300 with NVL72 and Ampere, Hopper, B200 and B300)";
    TpCommOverlapNeedsSp "tp-comm-overlap-needs-sp" W "tp_comm_overlap needs TP > 1 and sequence parallelism: Megatron-LM asserts, Megatron Bridge turns it off with a warning." "megatron/training/arguments.py validate_args (Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled); Megatron Bridge training/comm_overlap.py (disables tp_comm_overlap for TP < 2 or without SP)";
    // input limits
    PlanTooLarge "plan-too-large" E "The plan text is larger than meshplan reads (exit status 2)." "meshplan limit (limits.rs MAX_PLAN_BYTES)";
    PipelineExceedsLayers "pipeline-exceeds-layers" E "pipeline_model_parallel_size exceeds num_layers: every pipeline stage builds at least one layer; PP = 1 was used instead." "megatron/core/transformer/transformer_config.py __post_init__ and megatron/training/arguments.py validate_args (num_layers divisible by PP; uneven stages larger than 0, middle stages not empty)";
    ListTooLong "list-too-long" E "A list is longer than the model it describes (more entries than layers); it was ignored." "meshplan limit (limits.rs MAX_LAYERS)";
    SearchTooLarge "search-too-large" E "The layout search would enumerate more than it sizes in about a second: over 2^24 GPUs, or more than 10^8 units of candidate work (exit status 2)." "meshplan limit (limits.rs MAX_SEARCH_WORLD, MAX_SEARCH_WORK)";
    SizeTooLarge "size-too-large" E "The cluster sizing's first GPU count alone would take more than the 10^8 units of work it does in about a second (exit status 2)." "meshplan limit (limits.rs MAX_SIZE_WORK)";
    MeasuredAbovePeak "measured-above-peak" W "The measured model TFLOP/s per GPU is above the GPU's dense peak in the training precision: the run did less work than the plan says, typically a parallelism silently disabled (context parallelism with a cp_comm_type that turns it off) or FLOPs counted differently." "meshplan sanity alarm (issue 12 item 5); peak: the GPU catalogue's dense TFLOP/s of the precision";
    MeasuredBelowPrediction "measured-below-prediction" W "The measured throughput is below 0.6 of meshplan's estimate: the largest non-compute terms of the step-time breakdown (exposed communication, bubble, recompute, MoE routing, launches) are where to look." "meshplan sanity alarm (issue 12 item 5); the step-time model (perf.rs, docs/calibration.md: leave-one-group-out median error 8.8%)";
    VisionImageTokensUnset "vision-image-tokens-unset" I "The model has a vision encoder but training.image_tokens_per_sample is 0: its weights are counted, its activations and FLOPs are not." "meshplan input (memory/vision.rs, perf.rs vision_flops)";
    VisionImageTokensExceedSequence "vision-image-tokens-exceed-sequence" E "training.image_tokens_per_sample is more than seq_length: image tokens take places in the language model's sequence." "megatron/core/models/multimodal/llava_model.py (image embeddings placed into the language model's sequence)";
    VisionSettingsWithoutEncoder "vision-settings-without-encoder" W "A vision-encoder setting (image_tokens_per_sample, images_per_sample, freeze_vision_model, freeze_vision_projection) is set on a model without a vision_config: it is ignored." "Megatron Bridge src/megatron/bridge/models/qwen_vl/qwen3_vl_provider.py (freeze_* act on a VLM's modules)";
    SlidingAttentionSettingUnused "sliding-attention-setting-unused" W "model.sliding_attention_setting (the window layers' own heads, query groups and head width) is set on a model without a sliding window (window_size), or whose attention is MLA or Gated DeltaNet: it is ignored." "Megatron Bridge src/megatron/bridge/models/stepfun/step35_provider.py Step35DecoderLayer (the setting applies to the \"sliding_attention\" layers of a GQA model only)";
    Gemma4DensePipeline "gemma4-dense-pipeline" E "A dense Gemma 4 model (per-layer embeddings, KV-shared layers, or keys as values without MoE: E2B, E4B, 31B) with pipeline_model_parallel_size above 1: Megatron Bridge builds these with Gemma4DenseProvider, which supports PP = 1 only (the per-layer inputs are computed on the first stage and every layer reads them; KV-shared layers read earlier layers' keys and values)." "Megatron Bridge src/megatron/bridge/models/gemma/gemma4_provider.py Gemma4DenseProvider.provide (NotImplementedError unless pipeline_model_parallel_size is 1 and vp_stage is None)";
    Gemma4MoeUnsupportedSetting "gemma4-moe-unsupported-setting" E "A Gemma 4 MoE model (keys as values with routed experts: 26B-A4B) with a setting its custom MoE forward bypasses: CUDA graphs, selective recompute of layernorm, or offloading mlp_norm activations. Megatron Bridge's Gemma4ModelProvider raises for each." "Megatron Bridge src/megatron/bridge/models/gemma/gemma4_provider.py _validate_gemma4_moe_orchestration (cuda_graph_impl != 'none', selective 'layernorm' recompute, 'mlp_norm' activation offloading)";
    MtpLayerUnavailable "mtp-layer-unavailable" W "model.mtp_layer names an MTP layer kind the model has no layers of (a window-attention mixer without the window layers' own shape, MoE without experts, Gated DeltaNet without its layers), or the model is hybrid (its MTP pattern gives the MTP layers): it is ignored and each MTP depth is sized like the last decoder layer." "Megatron Bridge src/megatron/bridge/models/stepfun/step35_bridge.py _MTPDenseLayerSpecsList (an MTP layer spec built from the model's own layer specs); megatron/core/models/gpt/gpt_layer_specs.py get_gpt_mtp_block_spec";
    Dsv4TensorParallel "dsv4-tensor-parallel" E "DeepSeek-V4's hybrid attention (experimental_attention_variant \"dsv4_hybrid\") runs at tensor_model_parallel_size = 1 in Megatron Bridge; Megatron-Core also asserts o_groups divides by TP." "Megatron Bridge src/megatron/bridge/recipes/deepseek/h100/deepseek_v4.py (\"DSv4 hybrid attention requires TP=1\"); Megatron-LM experimental_attention_variant/deepseek_v4_hybrid_attention.py (o_groups must be divisible by tp_size)";
    Dsv4HashLayersNeedLayout "dsv4-hash-layers-need-layout" E "DeepSeek-V4 with hash-routed layers (moe_n_hash_layers) on PP > 1 needs an explicit pipeline_model_parallel_layout that builds them with the embedding on the first stage." "Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py set_deepseek_v4_pipeline_model_parallel_layout (hash-routed MoE layers must co-locate with the embedding; a layout is required whenever PP > 1)";
    HyperConnectionsFullRecompute "hyper-connections-full-recompute" E "Hyper-connections (enable_hyper_connections) do not work with recompute_granularity = full: use selective recompute with mhc." "megatron/core/transformer/transformer_config.py __post_init__ (enable_mhc_connections is not yet compatible with full activation recompute)";
}

impl Code {
    /// This code's row of [`RULES`].
    pub fn rule(self) -> &'static Rule {
        // The macro lists variants and rows in the same order.
        &RULES[self as usize]
    }

    /// The code spelled `code`, if the table has it.
    pub fn parse(code: &str) -> Option<Code> {
        rule(code).map(|r| r.id)
    }
}

/// The rule entry for `code`.
pub fn rule(code: &str) -> Option<&'static Rule> {
    // Looked up for every code a plan file or a worker's reply names: a sorted index, built once.
    static BY_CODE: std::sync::OnceLock<Vec<&'static Rule>> = std::sync::OnceLock::new();
    let index = BY_CODE.get_or_init(|| {
        let mut v: Vec<&'static Rule> = RULES.iter().collect();
        v.sort_by_key(|r| r.code);
        v
    });
    index.binary_search_by(|r| r.code.cmp(code)).ok().map(|i| index[i])
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Debug prints the code as the string it stands for, so test messages read as they did when codes were strings.
impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Code> for str {
    fn eq(&self, other: &Code) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Code> for &str {
    fn eq(&self, other: &Code) -> bool {
        *self == other.as_str()
    }
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Code::parse(&s).ok_or_else(|| serde::de::Error::custom(format_args!("unknown diagnostic code {s:?}")))
    }
}
