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
    HfConfigUnmappable "hf-config-unmappable" E "The Hugging Face config lacks the fields needed to size a transformer (exit status 2)." "meshplan input";
    HfConfigFamilyUnknown "hf-config-family-unknown" W "The Hugging Face model_type is not a mapped family; it was read as a Llama-style decoder." "meshplan input";
    AddBiasLinearDefault "add-bias-linear-default" I "add_bias_linear was not given for a gated (SwiGLU) model: read as False, while Megatron defaults to True." "megatron/core/transformer/transformer_config.py (add_bias_linear = True)";
    MoeLayerFreqLength "moe-layer-freq-length" E "moe_layer_freq as a list must have one 0/1 entry per layer." "megatron/core/transformer/transformer_config.py (moe_layer_freq)";
    SearchWorker "search-worker" E "The page's search worker failed to load or replied with something that is not a search result." "meshplan page (src/browser.rs)";
    WorldNotDivisibleDense "world-not-divisible-dense" E "The world size must be a multiple of TP·PP·CP (dense data parallelism must be whole)." "megatron/core/parallel_state.py initialize_model_parallel";
    WorldNotDivisibleExpert "world-not-divisible-expert" E "The world size must be a multiple of ETP·EP·PP (expert data parallelism must be whole)." "megatron/core/parallel_state.py initialize_model_parallel";
    WorldTooLargeToLayOut "world-too-large-to-lay-out" E "The world is too large to list every rank group." "meshplan limit";
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
    InterleavedMicrobatches "interleaved-microbatches" E "With virtual pipeline stages the microbatch count M must be at least N = microbatch_group_size_per_vp_stage (default PP), and M mod N must be 0 or at least PP (with N = PP: M a multiple of PP)." "megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving (ValueError / RuntimeError at the first step)";
    VppMicrobatchGroupBelowPp "vpp-microbatch-group-below-pp" E "microbatch_group_size_per_vp_stage must be at least pipeline_model_parallel_size." "megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving (ValueError: range [PP, M])";
    VppPp2NeedsOverlapP2p "vpp-pp2-needs-overlap-p2p" W "Interleaving with PP = 2 fails under Megatron-LM without --overlap-p2p-communication; Megatron Bridge enables it itself." "megatron/training/arguments.py validate_args (PP > 2 unless overlap_p2p_comm); Megatron Bridge training/comm_overlap.py (overlap_p2p_comm = True when PP > 1 and VPP > 1)";
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
    LowMemoryHeadroom "low-memory-headroom" W "The plan fits but leaves under 10% of the GPU's memory free." "meshplan memory model";
    HostMemoryExceeded "host-memory-exceeded" W "Optimizer or activation offloading needs more host memory per node than the node has." "meshplan memory model (host bytes of optimizer offload: megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py; activation offload: fine_grained_activation_offload.py) against cluster.host_memory_per_node_gb";
    TpCrossesNvlink "tp-crosses-nvlink" W "A tensor-parallel group spans more than one NVLink domain." "seed: Decision by Hardware Topology, Pitfall 1";
    EpCrossesNvlink "ep-crosses-nvlink" W "An expert-parallel (EP·ETP) group spans more than one NVLink domain." "seed: Decision by Hardware Topology";
    CpCrossesNvlink "cp-crosses-nvlink" I "A context-parallel group spans more than one NVLink domain." "seed: Decision by Hardware Topology";
    WorldExceedsNeed "world-exceeds-need" I "The cluster is larger than the layout needs at DP = 1; the extra GPUs become data parallelism." "seed: Scaling above the minimum";
    MinGpus "min-gpus" I "The minimum GPU count is PP·max(TP·CP, EP·ETP), not the full product PP·TP·CP·EP·ETP." "seed: Minimum GPU Count";
    MinGpusLcm "min-gpus-lcm" W "PP·max(TP·CP, EP·ETP) is not a valid world size here: Megatron needs a multiple of PP·lcm(TP·CP, EP·ETP)." "shared/seed/NOTES.md; megatron/core/parallel_state.py";
    SeqLengthAdvice "seq-length-advice" I "The source guide's sequence-length table: SP from 2K, CP = 2 from 8K, CP 4–8 from 32K." "seed: Decision by Sequence Length";
    ModelSizeAdvice "model-size-advice" I "The source guide's model-size tables: a starting point for this model's size." "seed: Decision by Model Size";
    PpWithoutVpp "pp-without-vpp" I "PP > 1 without interleaving has a large pipeline bubble." "seed Pitfall 2";
    FewMicrobatches "few-microbatches" W "Fewer microbatches than pipeline stages: the pipeline never fills." "Narayanan 2021 §2.2";
    CudaDeviceMaxConnections "cuda-device-max-connections" I "TP/SP communication overlap needs CUDA_DEVICE_MAX_CONNECTIONS=1." "seed Pitfall 7";
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
