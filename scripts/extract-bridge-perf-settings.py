#!/usr/bin/env python3
"""Record the speed-relevant settings of Megatron Bridge's performance recipes per (model, GPU, precision) into
reference/bridge_perf_settings.json, for the calibrate example to apply to the Bridge table rows it maps.

    python3 scripts/extract-bridge-perf-settings.py PATH/TO/Megatron-Bridge-git-dir [REV]

REV defaults to v0.2.0 (2025-11-26), the tag nearest the 25.11 container; the 25.09 recipes were YAML files
whose speed settings the same tag's Python configs carry forward. Each configs/<family>/workload_base_configs.py is
executed with a stand-in WorkloadBaseConfig dataclass (the fields of scripts/performance/utils/utils.py), and every
<MODEL>_<GPU>_<PRECISION>_BASE_CONFIG is written with the fields that change speed."""
import dataclasses, json, subprocess, sys, types

FIELDS = ["num_gpus", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
          "virtual_pipeline_model_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size",
          "global_batch_size", "micro_batch_size", "use_megatron_fsdp", "cuda_graph_impl", "cuda_graph_scope",
          "cpu_offloading_num_layers", "recompute_num_layers", "recompute_modules", "moe_flex_dispatcher_backend",
          "moe_a2a_overlap", "peft"]


@dataclasses.dataclass
class WorkloadBaseConfig:
    num_gpus: int = 1
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: object = None
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: object = None
    global_batch_size: int = 1
    micro_batch_size: int = 1
    use_megatron_fsdp: object = None
    cuda_graph_impl: object = None
    cuda_graph_scope: object = None
    cpu_offloading_num_layers: object = None
    recompute_num_layers: object = None
    recompute_modules: object = None
    moe_flex_dispatcher_backend: object = None
    moe_a2a_overlap: object = False
    peft: object = None


def main():
    git_dir, rev = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "v0.2.0")
    files = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev, "scripts/performance/configs"],
                           check=True, capture_output=True, text=True).stdout.split()
    utils = types.ModuleType("utils.utils")
    utils.WorkloadBaseConfig = WorkloadBaseConfig
    sys.modules["utils"] = types.ModuleType("utils")
    sys.modules["utils.utils"] = utils
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "--short=12", rev], check=True, capture_output=True, text=True).stdout.strip()
    out = []
    for path in files:
        if not path.endswith("workload_base_configs.py"):
            continue
        src = subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True, capture_output=True, text=True).stdout
        ns = {}
        exec(compile(src, path, "exec"), ns)
        for name, v in ns.items():
            if isinstance(v, WorkloadBaseConfig) and name.endswith("_BASE_CONFIG") and not name.startswith("BASE_"):
                row = {"name": name[: -len("_BASE_CONFIG")], "source": f"github:NVIDIA-NeMo/Megatron-Bridge@{commit}:{path} ({rev})"}
                row.update({f: getattr(v, f) for f in FIELDS})
                out.append(row)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
