//! Where the failing allocation ran: the Python traceback a log prints before the message (`File "…/experts.py",
//! line 250, in forward`), its innermost frame in Megatron-Core, Transformer Engine or PyTorch's optimizer read against
//! one table of code locations, each with the tensors an allocation there can be. A size alone can name the wrong
//! tensor (a 3.5 GiB request the size of the Adam moments, raised in the experts' forward); the frame says which kinds
//! to name it among.
//!
//! Bounded: the traceback is read from at most [`FRAME_WINDOW`] bytes before the message, line by line.

use crate::memory::TensorKind;
use serde::{Deserialize, Serialize};

/// The most bytes before a message its traceback is read from (a deep traceback of 60 frames at ~200 bytes a frame
/// with `[rankN]:` prefixes is ~12 KB).
pub const FRAME_WINDOW: usize = 32 * 1024;

/// One frame of a traceback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The file as printed (`/opt/megatron-lm/megatron/core/transformer/moe/experts.py`).
    pub file: String,
    pub line: u64,
    pub function: String,
    /// What runs there, from [`LOCATIONS`] (empty for a frame the table does not know).
    #[serde(default)]
    pub what: String,
}

/// (path fragment, function, what runs there, the tensors an allocation there can be), most specific first; a row
/// with an empty function matches any function of the file. Paths are Megatron-Core's, Megatron-LM's and Transformer
/// Engine's modules (NVIDIA/Megatron-LM @ d98e8a64dd), PyTorch's optimizers and CUDA graphs.
const LOCATIONS: &[(&str, &str, &str, &[TensorKind])] = &[
    // A checkpoint's load or save (Megatron-LM megatron/training/checkpointing.py load_checkpoint / save_checkpoint,
    // training.py checkpoint_and_decide_exit / save_checkpoint_and_time, dist_checkpointing/serialization.py load /
    // save @ NVIDIA/Megatron-LM d98e8a64dd; Megatron Bridge's training/checkpointing.py has the same names).
    ("checkpointing.py", "load_checkpoint", CHECKPOINT_LOAD, &[]),
    ("checkpointing.py", "_load_base_checkpoint", CHECKPOINT_LOAD, &[]),
    ("megatron/core/dist_checkpointing/serialization.py", "load", CHECKPOINT_LOAD, &[]),
    ("checkpointing.py", "save_checkpoint", CHECKPOINT_SAVE, &[]),
    ("megatron/training/training.py", "save_checkpoint_and_time", CHECKPOINT_SAVE, &[]),
    ("megatron/training/training.py", "checkpoint_and_decide_exit", CHECKPOINT_SAVE, &[]),
    ("megatron/core/dist_checkpointing/serialization.py", "save", CHECKPOINT_SAVE, &[]),
    ("megatron/core/models/common/language_module/language_module.py", "compute_language_model_loss", "the loss over the output layer's logits", &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("cross_entropy", "", "the vocabulary-parallel cross entropy over the logits", &[TensorKind::LogitsFp32, TensorKind::Logits]),
    // Constructors run in the set-up: the optimizer's fp32 main copies (optimizer.py Float16OptimizerWithFloat16Params,
    // distrib_optimizer.py DistributedOptimizer), the DDP buffers (param_and_grad_buffer.py _ParamAndGradBuffer).
    ("megatron/core/optimizer/", "__init__", SETUP, SETUP_KINDS),
    ("megatron/core/optimizer/", "get_megatron_optimizer", SETUP, SETUP_KINDS),
    ("megatron/core/distributed/", "__init__", SETUP, SETUP_KINDS),
    ("megatron/core/optimizer/", "", "the optimizer (its state, fp32 master weights and gradient copies)", &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]),
    // Megatron-LM before Megatron-Core (2023 and earlier: megatron/optimizer/, megatron/model/distributed.py).
    ("megatron/optimizer/", "__init__", SETUP, SETUP_KINDS),
    ("megatron/optimizer/", "get_megatron_optimizer", SETUP, SETUP_KINDS),
    ("megatron/optimizer/", "", "the optimizer (its state, fp32 master weights and gradient copies)", &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]),
    ("megatron/model/distributed.py", "", "the data-parallel gradient buffers (all-reduce)", &[TensorKind::GradBucket]),
    // The set-up, before the first step: the weights moved to the GPU, the DDP buffers, the optimizer's fp32 copies
    // (megatron/training/training.py get_model l.2465 `model_module.cuda`, setup_model_and_optimizer l.2800
    // get_megatron_optimizer; Megatron Bridge training/setup.py `setup`; megatron/training.py before the package split).
    ("megatron/training/training.py", "setup_model_and_optimizer", SETUP, SETUP_KINDS),
    ("megatron/training/training.py", "get_model", SETUP, SETUP_KINDS),
    ("megatron/training.py", "setup_model_and_optimizer", SETUP, SETUP_KINDS),
    ("megatron/training.py", "get_model", SETUP, SETUP_KINDS),
    ("megatron/bridge/training/setup.py", "", SETUP, SETUP_KINDS),
    ("torch/optim/", "", "the optimizer (its state, fp32 master weights and gradient copies)", &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]),
    // The fused Adams Megatron-Core builds its optimizer on (optimizer/__init__.py: Transformer Engine's FusedAdam, else
    // Apex's).
    ("transformer_engine/pytorch/optimizers/", "", "the optimizer (its state, fp32 master weights and gradient copies)", &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]),
    ("apex/optimizers/", "", "the optimizer (its state, fp32 master weights and gradient copies)", &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]),
    ("megatron/core/distributed/fsdp/", "", "Megatron-FSDP's parameter all-gather and gradient reduce-scatter", &[TensorKind::ParamAllGather, TensorKind::GradBucket]),
    ("megatron/core/distributed/", "", "the data-parallel gradient and parameter buffers (reduce-scatter, all-gather)", &[TensorKind::GradBucket, TensorKind::ParamAllGather]),
    ("megatron/core/transformer/cuda_graphs.py", "", "CUDA graph capture", &[TensorKind::CudaGraphs]),
    ("transformer_engine/pytorch/graph.py", "", "CUDA graph capture", &[TensorKind::CudaGraphs]),
    ("torch/cuda/graphs.py", "", "CUDA graph capture", &[TensorKind::CudaGraphs]),
    // Constructors of the model's modules run while the model is built (get_model), placing its weights: Megatron-Core's
    // layers and models, its Transformer Engine wrappers, spec_utils.build_module, and Transformer Engine's modules
    // (grouped_linear.py's experts allocate their weights in `__init__`); after the CUDA-graph
    // rows, whose runners are built in the first training forward.
    ("megatron/core/transformer/spec_utils.py", "build_module", BUILD, SETUP_KINDS),
    ("megatron/core/transformer/", "__init__", BUILD, SETUP_KINDS),
    ("megatron/core/models/", "__init__", BUILD, SETUP_KINDS),
    ("megatron/core/tensor_parallel/layers.py", "__init__", BUILD, SETUP_KINDS),
    ("megatron/core/extensions/transformer_engine.py", "__init__", BUILD, SETUP_KINDS),
    ("transformer_engine/pytorch/module/", "__init__", BUILD, SETUP_KINDS),
    ("megatron/core/transformer/moe/", "", "the MoE layer (routing, token dispatch, the experts)", &[TensorKind::MoeDispatch, TensorKind::LayerActivations]),
    ("megatron/core/transformer/dot_product_attention.py", "", "core attention", &[TensorKind::AttentionScores, TensorKind::LayerActivations]),
    ("transformer_engine/pytorch/attention", "", "core attention (Transformer Engine)", &[TensorKind::AttentionScores, TensorKind::LayerActivations]),
    ("flash_attn", "", "core attention (flash-attn)", &[TensorKind::AttentionScores, TensorKind::LayerActivations]),
    ("megatron/core/tensor_parallel/random.py", "", "activation recompute in the backward pass", &[TensorKind::LayerActivations]),
    // Megatron-Core's own linear layers: a transformer layer's (the local spec) and the output layer, which is always
    // tensor_parallel.ColumnParallelLinear (gpt_model.py output_layer), so its logits are raised here.
    ("megatron/core/tensor_parallel/layers.py", "", "a linear layer's forward or backward (a layer's output, or the output layer's logits)", &[TensorKind::LayerActivations, TensorKind::Logits]),
    // Transformer Engine's linear modules (linear.py, layernorm_linear.py, layernorm_mlp.py, grouped_linear.py for the
    // experts) under the TE spec.
    ("transformer_engine/pytorch/module/", "", "a Transformer Engine linear layer's forward or backward", &[TensorKind::LayerActivations, TensorKind::MoeDispatch]),
    ("megatron/core/pipeline_parallel/", "", "the pipeline schedule (a microbatch's forward or backward)", &[TensorKind::LayerActivations, TensorKind::MoeDispatch, TensorKind::AttentionScores, TensorKind::Logits, TensorKind::LogitsFp32]),
    // Float16Module's forward upcasts the last stage's output to fp32 (megatron/core/transformer/module.py
    // float16_to_fp32 → conversion_helper → float_conversion @ d98e8a64dd; megatron/model/module.py before the package
    // split): the whole [s, b, V/TP] logits when the model is called without labels, as RL frameworks (slime, verl,
    // NeMo-RL) do to take log-probs themselves. Before the catch-all row below.
    ("megatron/core/transformer/module.py", "float_conversion", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/core/transformer/module.py", "conversion_helper", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/core/transformer/module.py", "float16_to_fp32", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/model/module.py", "float_conversion", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/model/module.py", "conversion_helper", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/model/module.py", "float16_to_fp32", FP32_OUTPUT, &[TensorKind::LogitsFp32, TensorKind::Logits]),
    ("megatron/core/transformer/", "", "a transformer layer's forward or backward", &[TensorKind::LayerActivations, TensorKind::MoeDispatch, TensorKind::AttentionScores]),
    // The data's attention mask, a [b, 1, s, s] tensor (megatron/core/datasets/gpt_dataset.py
    // _get_ltor_masks_and_position_ids, megatron/training/utils/common_utils.py get_ltor_masks_and_position_ids; before
    // the package split and in Megatron-DeepSpeed, megatron/utils.py).
    ("gpt_dataset.py", "_get_ltor_masks_and_position_ids", "the data's attention mask (b·s·s elements, built from the batch the data loader gives)", &[]),
    ("utils.py", "get_ltor_masks_and_position_ids", "the data's attention mask (b·s·s elements, built from the batch the data loader gives)", &[]),
    ("megatron/core/dist_checkpointing/", "", "loading or saving a checkpoint (its buffers are not in the training step's prediction)", &[]),
    ("megatron/training/checkpointing.py", "", "loading or saving a checkpoint (its buffers are not in the training step's prediction)", &[]),
];

/// What Float16Module's upcast of the model's output allocates.
const FP32_OUTPUT: &str = "Float16Module's fp32 copy of the last stage's output: the logits (b·s·V/TP × 4 B) when the model is called without labels, as RL frameworks call it";
/// What runs in the set-up frames of [`LOCATIONS`].
const SETUP: &str = "the set-up before the first step (weights on the GPU, gradient buffers, the optimizer's fp32 copies)";
/// What runs in a module's constructor: the set-up's first allocations.
const BUILD: &str = "building the model, its weights placed on the GPU (the set-up, before the first step)";
const SETUP_KINDS: &[TensorKind] = &[TensorKind::MasterWeights, TensorKind::GradBucket, TensorKind::ParamAllGather];
/// What runs in a checkpoint's load and save frames.
const CHECKPOINT_LOAD: &str = "loading a checkpoint (what it reads is held beside the state it fills: not in the training step's prediction)";
const CHECKPOINT_SAVE: &str = "saving a checkpoint (the state it gathers or stages for the file: not in the training step's prediction)";

/// Whether the frame is in the set-up before the first step (building the model, its buffers and its optimizer).
pub fn is_setup(frame: &Frame) -> bool {
    location(&frame.file, &frame.function).is_some_and(|l| l.2 == SETUP || l.2 == BUILD)
}

/// A checkpoint's load or save, when the frame is in one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    Load,
    Save,
}

/// Whether the frame loads or saves a checkpoint.
pub fn checkpoint(frame: &Frame) -> Option<Checkpoint> {
    match location(&frame.file, &frame.function)?.2 {
        CHECKPOINT_LOAD => Some(Checkpoint::Load),
        CHECKPOINT_SAVE => Some(Checkpoint::Save),
        _ => None,
    }
}

/// The row of [`LOCATIONS`] a frame falls in.
fn location(file: &str, function: &str) -> Option<&'static (&'static str, &'static str, &'static str, &'static [TensorKind])> {
    let file = file.replace('\\', "/");
    LOCATIONS.iter().find(|(path, func, _, _)| file.contains(path) && (func.is_empty() || *func == function))
}

/// The tensor kinds an allocation at `frame` can be (empty: any, or the frame is outside the training step).
pub fn kinds(frame: &Frame) -> &'static [TensorKind] {
    location(&frame.file, &frame.function).map_or(&[], |l| l.3)
}

/// `  File "/x/y.py", line 12, in forward` (after any `[rank3]:` prefix) → the frame.
fn frame_of(line: &str) -> Option<Frame> {
    let rest = &line[line.find("File \"")? + 6..];
    let (file, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(", line ")?;
    let digits = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
    let line_no = digits.get(..digits.len().min(9))?.parse().ok()?;
    let function = rest.split_once(", in ").map_or("", |(_, f)| f.trim()).chars().take(120).collect();
    Some(Frame { file: file.chars().take(300).collect(), line: line_no, function, what: String::new() })
}

/// The innermost frame of the traceback printed before `end` in `text`, after `begin` (the previous message), on the
/// lines of rank `rank` when the log prefixes them: the innermost one [`LOCATIONS`] knows, else the innermost in
/// Megatron or Transformer Engine. None when there is no such frame.
/// With no global rank, the lines of local rank `local` when torchrun prefixes them `[defaultN]:`.
pub fn innermost(text: &str, begin: usize, end: usize, rank: Option<u64>, local: Option<u64>) -> Option<Frame> {
    read(text, begin, end, rank, local).0
}

/// The traceback before `end`: its innermost frame (as [`innermost`]) and the outer frames that place the failure in
/// a phase of its own whatever runs inside them — the innermost checkpoint load or save, else the innermost set-up
/// frame — when the innermost frame is not already in it (a checkpoint load in the set-up gives both). A load calls
/// the optimizer's `load_state_dict`, a save the distributed optimizer's state gathering: the inner frame names the
/// tensors, the outer one says when.
pub fn read(text: &str, begin: usize, end: usize, rank: Option<u64>, local: Option<u64>) -> (Option<Frame>, Vec<Frame>) {
    let frames = frames_of(text, begin, end, rank, local);
    let known = |f: &Frame| location(&f.file, &f.function).map(|l| Frame { what: l.2.to_string(), ..f.clone() });
    let inner = frames.iter().rev().find_map(known);
    let innermost = inner.clone().or_else(|| frames.iter().rev().find(|f| f.file.contains("megatron") || f.file.contains("transformer_engine")).cloned());
    let mut context = Vec::new();
    let already = |test: &dyn Fn(&Frame) -> bool| inner.as_ref().is_some_and(test);
    if !already(&|f| checkpoint(f).is_some()) {
        context.extend(frames.iter().rev().find(|f| checkpoint(f).is_some()).and_then(known));
    }
    if !already(&is_setup) {
        context.extend(frames.iter().rev().find(|f| is_setup(f)).and_then(known));
    }
    (innermost, context)
}

/// The frames printed between `begin` and `end` on the lines of the rank (outermost first, as Python prints them).
fn frames_of(text: &str, begin: usize, end: usize, rank: Option<u64>, local: Option<u64>) -> Vec<Frame> {
    let mut from = begin.max(end.saturating_sub(FRAME_WINDOW)).min(end);
    while from < end && !text.is_char_boundary(from) {
        from += 1;
    }
    let Some(window) = text.get(from..end) else { return Vec::new() };
    let tagged = |line: &str, tag: &str, want: Option<u64>| match (want, line.find(tag)) {
        (Some(r), Some(i)) => line[i + tag.len()..].split(']').next().and_then(|n| n.parse::<u64>().ok()) == Some(r),
        _ => true,
    };
    let own = |line: &str| tagged(line, "[rank", rank) && (rank.is_some() || tagged(line, "[default", local));
    // The message's own traceback: the frames after the last "Traceback (most recent call last):" header of the rank
    // (an earlier, handled exception's traceback in the same window is another failure's).
    let lines: Vec<&str> = window.lines().filter(|l| own(l)).collect();
    let from = lines.iter().rposition(|l| l.contains("Traceback (most recent call last)")).map_or(0, |i| i + 1);
    lines[from..].iter().filter_map(|l| frame_of(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_known_frame_of_the_rank() {
        let log = "[rank1]:   File \"/w/megatron/core/optimizer/distrib_optimizer.py\", line 9, in step\n\
                   [rank0]:   File \"/w/megatron/core/pipeline_parallel/schedules.py\", line 400, in forward_step\n\
                   [rank0]:   File \"/w/megatron/core/transformer/moe/experts.py\", line 250, in forward\n\
                   [rank0]:   File \"/usr/lib/python3/site-packages/torch/nn/functional.py\", line 2000, in silu\n\
                   [rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.";
        let end = log.find("torch.OutOfMemoryError").unwrap();
        let f = innermost(log, 0, end, Some(0), None).unwrap();
        assert_eq!((f.file.ends_with("moe/experts.py"), f.line, f.function.as_str()), (true, 250, "forward"));
        assert_eq!(kinds(&f), &[TensorKind::MoeDispatch, TensorKind::LayerActivations]);
        let f = innermost(log, 0, end, Some(1), None).unwrap();
        assert_eq!(kinds(&f), &[TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies]);
        assert!(innermost("no traceback here", 0, 17, None, None).is_none());
        // torchrun's `[defaultN]:` prefixes (local ranks) when the message has no global rank.
        let log = "[default1]:   File \"/w/megatron/core/optimizer/optimizer.py\", line 5, in step\n\
                   [default0]:   File \"/w/megatron/core/transformer/moe/experts.py\", line 7, in forward\n";
        assert_eq!(innermost(log, 0, log.len(), None, Some(1)).map(|f| f.line), Some(5));
        assert_eq!(innermost(log, 0, log.len(), None, Some(0)).map(|f| f.line), Some(7));
    }

    #[test]
    fn set_up_frames_of_every_layout() {
        // Megatron-LM today, before the package split (megatron/training.py, megatron/optimizer/), and Bridge.
        for (file, function) in [
            ("/w/megatron/training/training.py", "setup_model_and_optimizer"),
            ("/w/megatron/training/training.py", "get_model"),
            ("/w/megatron/core/optimizer/optimizer.py", "__init__"),
            ("/w/megatron/core/distributed/param_and_grad_buffer.py", "__init__"),
            ("/w/megatron/training.py", "setup_model_and_optimizer"),
            ("/w/megatron/optimizer/__init__.py", "get_megatron_optimizer"),
            ("/w/src/megatron/bridge/training/setup.py", "setup"),
        ] {
            let f = Frame { file: file.into(), line: 1, function: function.into(), what: String::new() };
            assert!(is_setup(&f), "{file} {function}");
        }
        // A linear layer of Megatron-Core can be the output layer; Transformer Engine's are the layers'.
        let at = |file: &str| kinds(&Frame { file: file.into(), line: 1, function: "forward".into(), what: String::new() });
        assert!(at("/w/megatron/core/tensor_parallel/layers.py").contains(&TensorKind::Logits));
        assert!(at("/usr/lib/python3/site-packages/transformer_engine/pytorch/module/grouped_linear.py").contains(&TensorKind::MoeDispatch));
        // The training loop's own frames are not the set-up.
        for (file, function) in [("/w/megatron/training/training.py", "train_step"), ("/w/megatron/core/optimizer/optimizer.py", "step")] {
            let f = Frame { file: file.into(), line: 1, function: function.into(), what: String::new() };
            assert!(!is_setup(&f), "{file} {function}");
        }
    }
}
