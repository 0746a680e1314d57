//! Exports of a planned layout: Megatron Bridge Python overrides, a Bridge launch command in
//! the form of the source guide's Verification section, Megatron-LM flags, slurm sizing, and
//! the plan file itself. Pure functions of the resolved plan, so the CLI and the web app print
//! the same text.

use crate::plan::{Plan, Precision, Recompute};
use crate::report::Report;

/// A Python literal for a value.
fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `(Bridge config path, value as Python)` for every parallelism, batch and memory setting.
// Names: Megatron Bridge ConfigContainer (`cfg.model` is the model provider, a TransformerConfig;
// `cfg.train` holds the batch sizes), as in ../shared/seed/parallelism-strategies.md.
fn bridge_settings(p: &Plan) -> Vec<(&'static str, String)> {
    let par = &p.parallelism;
    let tr = &p.training;
    let mut out = vec![
        ("model.tensor_model_parallel_size", par.tp().to_string()),
        ("model.pipeline_model_parallel_size", par.pp().to_string()),
    ];
    if let Some(v) = par.virtual_pipeline_model_parallel_size {
        out.push(("model.virtual_pipeline_model_parallel_size", v.to_string()));
    }
    out.push(("model.context_parallel_size", par.cp().to_string()));
    if p.model.is_moe() || par.ep() > 1 {
        out.push(("model.expert_model_parallel_size", par.ep().to_string()));
        out.push(("model.expert_tensor_parallel_size", par.etp().to_string()));
    }
    out.push(("model.sequence_parallel", py_bool(par.sequence_parallel).to_string()));
    if let Some(n) = par.num_layers_in_first_pipeline_stage {
        out.push(("model.num_layers_in_first_pipeline_stage", n.to_string()));
    }
    if let Some(n) = par.num_layers_in_last_pipeline_stage {
        out.push(("model.num_layers_in_last_pipeline_stage", n.to_string()));
    }
    out.push(("model.seq_length", tr.seq_length.to_string()));
    match tr.recompute_granularity {
        Recompute::None => {}
        Recompute::Selective => out.push(("model.recompute_granularity", "\"selective\"".into())),
        Recompute::Full => {
            out.push(("model.recompute_granularity", "\"full\"".into()));
            out.push(("model.recompute_method", "\"uniform\"".into()));
            out.push(("model.recompute_num_layers", tr.recompute_num_layers.unwrap_or(1).to_string()));
        }
    }
    out.push(("train.micro_batch_size", tr.micro_batch_size.to_string()));
    if let Some(g) = tr.global_batch_size {
        out.push(("train.global_batch_size", g.to_string()));
    }
    out.push(("ddp.use_distributed_optimizer", py_bool(tr.use_distributed_optimizer).to_string()));
    out.push(("optimizer.use_distributed_optimizer", py_bool(tr.use_distributed_optimizer).to_string()));
    out
}

/// Megatron Bridge Python overrides: `cfg.model.tensor_model_parallel_size = 4` …
pub fn bridge_overrides(p: &Plan) -> String {
    let mut s = format!("# {} on {} × {} — meshplan\n", p.model_name, p.world_size(), p.gpu.name);
    for (path, value) in bridge_settings(p) {
        s.push_str(&format!("cfg.{path} = {value}\n"));
    }
    s
}

/// A launch command in the form of the source guide's Verification section: torchrun over
/// `scripts/training/run_recipe.py` with the Bridge dotted overrides. `RECIPE` is left for the
/// user: meshplan does not know which recipe their model uses.
pub fn bridge_launch_command(p: &Plan) -> String {
    let nodes = p.cluster.num_nodes;
    let mut lines = vec![format!(
        "# {}: pick the Megatron Bridge recipe for this model (e.g. llama32_1b_pretrain_config)",
        p.model_name
    )];
    lines.push(format!(
        "RECIPE=${{RECIPE:?set RECIPE}} CUDA_DEVICE_MAX_CONNECTIONS=1 uv run python -m torch.distributed.run --nproc_per_node={}",
        p.cluster.gpus_per_node
    ));
    if nodes > 1 {
        lines.push(format!(
            "  --nnodes={nodes} --node_rank=${{NODE_RANK:?}} --master_addr=${{MASTER_ADDR:?}} --master_port=${{MASTER_PORT:-29500}}"
        ));
    }
    lines.push("  scripts/training/run_recipe.py".into());
    lines.push("  --recipe \"$RECIPE\"".into());
    for (path, value) in bridge_settings(p) {
        // Dotted overrides take Python literals; strings lose their quotes on the command line.
        lines.push(format!("  {path}={}", value.trim_matches('"')));
    }
    lines.join(" \\\n") + "\n"
}

/// Megatron-LM `pretrain_gpt.py` flags: `--tensor-model-parallel-size 4` …
// Flag names: megatron/training/arguments.py.
pub fn megatron_lm_flags(p: &Plan) -> String {
    let par = &p.parallelism;
    let tr = &p.training;
    let mut f = vec![
        format!("--tensor-model-parallel-size {}", par.tp()),
        format!("--pipeline-model-parallel-size {}", par.pp()),
    ];
    if let Some(v) = par.virtual_pipeline_model_parallel_size {
        f.push(format!("--num-virtual-stages-per-pipeline-rank {v}"));
    }
    if let Some(n) = par.num_layers_in_first_pipeline_stage {
        f.push(format!("--decoder-first-pipeline-num-layers {n}"));
    }
    if let Some(n) = par.num_layers_in_last_pipeline_stage {
        f.push(format!("--decoder-last-pipeline-num-layers {n}"));
    }
    f.push(format!("--context-parallel-size {}", par.cp()));
    if p.model.is_moe() || par.ep() > 1 {
        f.push(format!("--expert-model-parallel-size {}", par.ep()));
        f.push(format!("--expert-tensor-parallel-size {}", par.etp()));
    }
    if par.sequence_parallel {
        f.push("--sequence-parallel".into());
    }
    f.push(format!("--seq-length {}", tr.seq_length));
    f.push(format!("--micro-batch-size {}", tr.micro_batch_size));
    if let Some(g) = tr.global_batch_size {
        f.push(format!("--global-batch-size {g}"));
    }
    match tr.recompute_granularity {
        Recompute::None => {}
        Recompute::Selective => f.push("--recompute-granularity selective".into()),
        Recompute::Full => f.push(format!(
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers {}",
            tr.recompute_num_layers.unwrap_or(1)
        )),
    }
    if tr.use_distributed_optimizer {
        f.push("--use-distributed-optimizer".into());
    }
    match tr.precision {
        Precision::Bf16 => f.push("--bf16".into()),
        Precision::Fp16 => f.push("--fp16".into()),
        Precision::Fp8 => f.push("--bf16 --fp8-format hybrid".into()),
        Precision::Fp4 => f.push("--bf16 --fp4-format e2m1".into()),
        Precision::Fp32 => {}
    }
    f.join(" \\\n") + "\n"
}

/// slurm sizing: nodes, tasks (one per GPU) and GPUs per node, with the minimum in a comment.
pub fn slurm_sizing(r: &Report) -> String {
    let p = &r.plan;
    let d = &r.derived;
    format!(
        "#SBATCH --nodes={}\n#SBATCH --ntasks-per-node={}\n#SBATCH --gpus-per-node={}\n\
         # world size {} = {} nodes × {} GPUs; min_gpus = PP·max(TP·CP, EP·ETP) = {} ({} node{})\n",
        p.cluster.num_nodes,
        p.cluster.gpus_per_node,
        p.cluster.gpus_per_node,
        d.world_size,
        p.cluster.num_nodes,
        p.cluster.gpus_per_node,
        d.min_gpus,
        d.nodes_needed,
        if d.nodes_needed == 1 { "" } else { "s" },
    )
}

/// The plan file `meshplan plan` reads, pretty-printed.
pub fn plan_file(plan: &serde_json::Value) -> String {
    serde_json::to_string_pretty(plan).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(parallelism: serde_json::Value) -> Report {
        let plan = json!({
            "model": "llama-3.1-8b",
            "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
            "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128,
                         "recompute_granularity": "selective", "use_distributed_optimizer": true},
            "parallelism": parallelism,
        });
        crate::plan_value(&plan).unwrap()
    }

    #[test]
    fn bridge_overrides_name_every_parallel_size() {
        let r = report(json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2, "sequence_parallel": true}));
        let s = bridge_overrides(&r.plan);
        assert!(s.contains("cfg.model.tensor_model_parallel_size = 4\n"));
        assert!(s.contains("cfg.model.pipeline_model_parallel_size = 2\n"));
        assert!(s.contains("cfg.model.context_parallel_size = 1\n"));
        assert!(s.contains("cfg.model.sequence_parallel = True\n"));
        assert!(s.contains("cfg.train.global_batch_size = 128\n"));
        assert!(!s.contains("expert_model_parallel_size"), "a dense model has no EP override");
    }

    #[test]
    fn launch_command_has_the_guides_shape() {
        let r = report(json!({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "sequence_parallel": true}));
        let s = bridge_launch_command(&r.plan);
        assert!(s.contains("python -m torch.distributed.run --nproc_per_node=8 \\\n"));
        assert!(s.contains("--nnodes=2"));
        assert!(s.contains("scripts/training/run_recipe.py \\\n"));
        assert!(s.contains("  model.tensor_model_parallel_size=2 \\\n"));
        assert!(s.contains("  model.sequence_parallel=True \\\n"));
        assert!(s.contains("  model.recompute_granularity=selective \\\n"));
        assert!(s.trim_end().ends_with("optimizer.use_distributed_optimizer=True"));
    }

    #[test]
    fn megatron_lm_flags_and_slurm() {
        let r = report(json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2,
                              "virtual_pipeline_model_parallel_size": 2, "sequence_parallel": true}));
        let f = megatron_lm_flags(&r.plan);
        for flag in ["--tensor-model-parallel-size 4", "--pipeline-model-parallel-size 2",
                     "--num-virtual-stages-per-pipeline-rank 2", "--sequence-parallel",
                     "--global-batch-size 128", "--use-distributed-optimizer", "--bf16"] {
            assert!(f.contains(flag), "{flag} in {f}");
        }
        let s = slurm_sizing(&r);
        assert!(s.starts_with("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"));
        assert!(s.contains("min_gpus = PP·max(TP·CP, EP·ETP) = 8 (1 node)"));
    }

    #[test]
    fn moe_exports_carry_the_expert_mesh() {
        let plan = json!({
            "model": "olmoe-1b-7b",
            "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64},
            "parallelism": {"expert_model_parallel_size": 8},
        });
        let r = crate::plan_value(&plan).unwrap();
        assert!(bridge_overrides(&r.plan).contains("cfg.model.expert_model_parallel_size = 8\n"));
        assert!(megatron_lm_flags(&r.plan).contains("--expert-model-parallel-size 8"));
        assert!(plan_file(&plan).contains("\"expert_model_parallel_size\": 8"));
    }
}
