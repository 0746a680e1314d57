#!/usr/bin/env python3
"""Record the speed settings of Megatron Bridge's performance recipes of each 26.x release into
reference/bridge_perf_settings_26x.json, for the calibrate example to run each validation row (the 26.x performance
tables) with the settings of ITS OWN release.

    python3 scripts/extract-bridge-perf-recipes-26x.py PATH/TO/Megatron-Bridge-git-dir > reference/bridge_perf_settings_26x.json

Each validation row (reference/validation_runs.json) is matched to the entry of its release with its model x GPU x
precision x layout; else the nearest other tag's; else the preset at the commit nearest the table's date among the
commits of main and the release branches that changed scripts/performance/configs; else it falls back (the reason kept).

Where each release's recipes are (RELEASES below: the release tag whose docs/performance-summary.md first carries the
release's table, and the other tags of the same container): up to v0.5.1 (26.06.01) they are the workload presets of
scripts/performance/configs/<family>/*workload_base_configs.py, read as scripts/extract-bridge-perf-settings.py reads
v0.2.0's (each file is executed with the WorkloadBaseConfig dataclass taken from the same tag's
scripts/performance/utils/utils.py, nothing else of Bridge imported); from v0.6.0 (26.08) they are the flat recipe
functions of src/megatron/bridge/perf_recipes/<family>/<gpu>/<model>.py, read statically by the interpreter of
scripts/extract-bridge-recipes.py (ast: assignments to cfg.<section>.<field>, calls to the recipe packages' helpers,
nothing imported or run). Every entry carries its source path@commit (and the function's line for the flat recipes).

Per entry: the layout (GPUs, TP/PP/VP/CP/EP/ETP, GBS/MBS, pipeline layout) and the settings meshplan's step-time model
reads (crates/core/src/settings.rs): recompute modules / layers, CUDA-graph implementation and scope, the MoE
dispatcher and flex backend, the EP all-to-all overlap, Megatron-FSDP, CPU / fine-grained activation offloading, FP8
parameter gather; and, noted but not modelled, the HybridEP topology and the fused grouped MLP.
"""
import ast, dataclasses, importlib.util, json, os, re, subprocess, sys, typing

# Release -> the Bridge tags of that container, the first whose docs/performance-summary.md carries the release's
# table first (git log -S "## <release> NeMo Container" -- docs/performance-summary.md; tag dates in brackets).
RELEASES = [
    ("26.02", ["v0.3.0"]),  # 2026-02-26
    ("26.02.01", ["v0.3.1", "v0.4.0"]),  # 2026-03-20; the 26.02.01 table appears on main 2026-03-21, v0.4.0 carries it
    ("26.04", ["v0.4.0", "v0.4.1"]),  # 2026-04-16
    ("26.04.01", ["v0.4.2", "v0.4.1"]),  # table added 2026-05-16; v0.4.2 2026-05-28, v0.4.1 2026-05-06
    ("26.06", ["v0.5.0"]),  # 2026-06-16
    ("26.06.01", ["v0.5.1"]),  # 2026-07-20; table added 2026-07-22
    ("26.08", ["v0.6.0", "067f987df03b"]),  # 2026-08-19; the pinned commit after it
]
# The date each release's table was added (the first commit of `git log -S "## <release> NeMo Container"`): a row no
# tag matches is looked for in the history of scripts/performance/configs nearest that date.
TABLE_DATES = {"26.02": "2026-02-23", "26.02.01": "2026-03-19", "26.04": "2026-04-17", "26.04.01": "2026-05-14",
               "26.06": "2026-06-12", "26.06.01": "2026-07-21", "26.08": "2026-08-11"}
# Branches whose history holds the workload presets (main and the release branches of the 26.x containers).
HISTORY_REFS = ["067f987df03b", "r0.3.0", "r0.4.0", "r0.4.1", "r0.5.0"]
GPU_TOKENS = ["GB300", "GB200", "B300", "B200", "H100", "VR200", "R100"]
PRECISIONS = {"BF16": "BF16", "FP8_CS": "FP8_CS", "FP8_MX": "FP8_MX", "FP8_SC": "FP8_SC", "NVFP4": "NVFP4",
              "fp8cs": "FP8_CS", "fp8mx": "FP8_MX", "fp8sc": "FP8_SC", "bf16": "BF16", "nvfp4": "NVFP4"}
PRESET_FIELDS = ["num_gpus", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                 "virtual_pipeline_model_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size",
                 "global_batch_size", "micro_batch_size", "use_megatron_fsdp", "cuda_graph_impl", "cuda_graph_scope",
                 "cpu_offloading_num_layers", "recompute_num_layers", "recompute_modules", "moe_flex_dispatcher_backend",
                 "moe_a2a_overlap", "pp_layout", "cutedsl_fused_grouped_mlp", "peft"]


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def recipes_module():
    """scripts/extract-bridge-recipes.py, loaded as a module (its interpreter and helpers)."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("extract_bridge_recipes", os.path.join(here, "extract-bridge-recipes.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_preset_name(name):
    """<MODEL>[_PRETRAIN_CONFIG]_<GPU>_<PRECISION>[_V<n> | _GBS<n> | _LARGE_SCALE] -> (model, gpu, precision, variant), or None."""
    name = re.sub(r"_BASE_CONFIG$", "", name)
    m = re.match(r"^(?P<model>[A-Z0-9_]+?)(?:_PRETRAIN_CONFIG)?_(?P<gpu>%s)_(?P<prec>BF16|FP8_CS|FP8_MX|FP8_SC|NVFP4)(?:_(?P<var>V\d+|GBS\d+|LARGE_SCALE))?$"
                 % "|".join(GPU_TOKENS), name)
    if not m or "_SFT_" in name or "_LORA_" in name or "_FINETUNE_" in name:
        return None
    return m.group("model"), m.group("gpu"), m.group("prec"), m.group("var")


def presets_at(git_dir, rev, commit):
    """The workload presets of scripts/performance/configs at `rev` (executed with that tag's WorkloadBaseConfig)."""
    files = [p for p in git(git_dir, "ls-tree", "-r", "--name-only", rev, "scripts/performance/configs").split()
             if p.endswith("workload_base_configs.py")]
    if not files:
        return None
    utils = ast.parse(git(git_dir, "show", f"{rev}:scripts/performance/utils/utils.py"))
    cls = next(n for n in utils.body if isinstance(n, ast.ClassDef) and n.name == "WorkloadBaseConfig")
    ns = {"dataclass": dataclasses.dataclass, "dataclasses": dataclasses, "field": dataclasses.field, "Optional": typing.Optional,
          "List": typing.List, "Union": typing.Union, "Dict": typing.Dict, "Any": typing.Any}
    exec(compile(ast.Module(body=[cls], type_ignores=[]), "utils.py", "exec"), ns)
    klass = ns["WorkloadBaseConfig"]
    import types
    sys.modules["utils"] = types.ModuleType("utils")
    sys.modules["utils.utils"] = types.ModuleType("utils.utils")
    sys.modules["utils.utils"].WorkloadBaseConfig = klass
    out = []
    for path in files:
        src = git(git_dir, "show", f"{rev}:{path}")
        g = {}
        try:
            exec(compile(src, path, "exec"), g)
        except Exception as err:  # a commit in the middle of a change (history search only; every tag executes)
            print(f"{rev}:{path}: not executed: {err!r}", file=sys.stderr)
            continue
        for name, v in g.items():
            parsed = parse_preset_name(name) if isinstance(v, klass) else None
            if not parsed:
                continue
            model, gpu, prec, var = parsed
            e = {"name": name, "model": model, "gpu": gpu, "precision": prec, "variant": var,
                 "source": f"github:NVIDIA-NeMo/Megatron-Bridge@{commit}:{path} ({rev})"}
            for f in PRESET_FIELDS:
                e[f] = getattr(v, f, None)
            e["moe_a2a_overlap"] = bool(e["moe_a2a_overlap"])
            e["cutedsl_fused_grouped_mlp"] = bool(e["cutedsl_fused_grouped_mlp"])
            out.append(e)
    return out


def flat_name(fname):
    """<model>_pretrain_<N>gpu_<gpu>_<precision>[_suffix]_config -> (MODEL, N, GPU, PRECISION, suffix), or None."""
    m = re.match(r"^(?P<model>[a-z0-9_]+?)_pretrain_(?P<n>\d+)gpu_(?P<gpu>[a-z0-9]+)_(?P<prec>bf16|fp8cs|fp8mx|fp8sc|nvfp4)(?P<rest>_[a-z0-9_]+)?_config$", fname)
    if not m or m.group("gpu").upper() not in GPU_TOKENS:
        return None
    return m.group("model").upper(), int(m.group("n")), m.group("gpu").upper(), PRECISIONS[m.group("prec")], (m.group("rest") or "")[1:] or None


def flat_recipes_at(git_dir, rev, commit, rx):
    """The flat recipe functions of src/megatron/bridge/perf_recipes at `rev`, read by extract-bridge-recipes.py's
    interpreter (the library recipes they start from read with them)."""
    paths = rx.git_ls(git_dir, rev, "src/megatron/bridge/perf_recipes")
    if not paths:
        return None
    rx.RECIPES = "src/megatron/bridge/recipes"
    modules = rx.load_modules(git_dir, rev)
    extra = {}
    for p in paths:
        name = p[len("src/"):-3].replace("/", ".")
        name = name[: -len(".__init__")] if name.endswith(".__init__") else name
        extra[name] = rx.Module(name, p, ast.parse(git(git_dir, "show", f"{rev}:{p}")))
    # Bind the perf modules' globals the way load_modules binds the library's.
    modules.update(extra)
    for m in extra.values():
        rx.bind_globals(m)
    rx.mark_mixed_precision_names(modules)
    out = []
    for mname, m in sorted(extra.items()):
        for s in m.tree.body:
            if not isinstance(s, ast.FunctionDef) or s.name.startswith("_"):
                continue
            parsed = flat_name(s.name)
            if not parsed:
                continue
            model, n, gpu, prec, suffix = parsed
            gpu_word = gpu.lower()
            interp = rx.Interp(modules, {"gpu_major": 9 if gpu == "H100" else 10, "gpu": gpu_word, "moe": True})
            try:
                cfg = interp.run_function(rx.Func(m, s), [], {})
            except rx.Raised as e:
                print(f"{rev}: {s.name}: the static reading stopped: {e}", file=sys.stderr)
                continue
            if not isinstance(cfg, rx.Obj):
                continue
            out.append(flat_entry(rx, cfg, s, m, model, n, gpu, prec, suffix, commit, rev))
    return out


def flat_entry(rx, cfg, fn, module, model, n, gpu, prec, suffix, commit, rev):
    """One flat recipe as an entry of the same shape as a workload preset's (plus what only the flat recipes state)."""
    def get(path):
        if not rx.was_set(cfg, path):
            return None
        v = rx.lookup(cfg, path)
        j, ok = rx.to_json(v)
        return j if ok else None

    env = rx.lookup(cfg, "env_vars") if rx.was_set(cfg, "env_vars") else None
    env = env if isinstance(env, dict) else {}
    e = {"name": fn.name, "model": model, "gpu": gpu, "precision": prec, "variant": suffix,
         "source": f"github:NVIDIA-NeMo/Megatron-Bridge@{commit}:{module.path}:{fn.lineno} ({rev})",
         "num_gpus": n}
    for k, path in [("tensor_model_parallel_size", "model.tensor_model_parallel_size"),
                    ("pipeline_model_parallel_size", "model.pipeline_model_parallel_size"),
                    ("context_parallel_size", "model.context_parallel_size"),
                    ("virtual_pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size"),
                    ("expert_model_parallel_size", "model.expert_model_parallel_size"),
                    ("expert_tensor_parallel_size", "model.expert_tensor_parallel_size"),
                    ("global_batch_size", "train.global_batch_size"), ("micro_batch_size", "train.micro_batch_size"),
                    ("use_megatron_fsdp", "ddp.use_megatron_fsdp"), ("cuda_graph_impl", "model.cuda_graph_impl"),
                    ("cuda_graph_scope", "model.cuda_graph_scope"), ("cpu_offloading_num_layers", "model.cpu_offloading_num_layers"),
                    ("recompute_granularity", "model.recompute_granularity"), ("recompute_num_layers", "model.recompute_num_layers"),
                    ("recompute_modules", "model.recompute_modules"),
                    ("moe_token_dispatcher_type", "model.moe_token_dispatcher_type"),
                    ("moe_flex_dispatcher_backend", "model.moe_flex_dispatcher_backend"),
                    ("moe_a2a_overlap", "comm_overlap.overlap_moe_expert_parallel_comm"),
                    ("pp_layout", "model.pipeline_model_parallel_layout"),
                    ("fine_grained_activation_offloading", "model.fine_grained_activation_offloading"),
                    ("offload_modules", "model.offload_modules"),
                    ("fp8_param_gather", "mixed_precision.fp8_param_gather"),
                    ("cutedsl_fused_grouped_mlp", "model.cutedsl_fused_grouped_mlp")]:
        e[k] = get(path)
    if e["recompute_granularity"] != "full":
        e["recompute_num_layers"] = None
    if e["recompute_granularity"] not in ("selective",):
        e["recompute_modules"] = None if e["recompute_granularity"] != "full" else e["recompute_modules"]
    e["moe_a2a_overlap"] = bool(e["moe_a2a_overlap"])
    e["cutedsl_fused_grouped_mlp"] = bool(e["cutedsl_fused_grouped_mlp"])
    e["hybrid_ep_ranks_per_nvlink_domain"] = env.get("NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN")
    return e


# meshplan preset -> Bridge's model token (workload preset prefix / flat recipe function prefix, upper-cased).
MODEL_TOKENS = {"llama-3.1-405b": "LLAMA31_405B", "llama-3.1-70b": "LLAMA3_70B", "llama-3.1-8b": "LLAMA3_8B",
                "deepseek-v3": "DEEPSEEK_V3", "qwen3-30b-a3b": "QWEN3_30B_A3B", "qwen3-235b-a22b": "QWEN3_235B_A22B",
                "nemotron-3-super-120b-a12b": "NEMOTRON_3_SUPER", "nemotron-3-nano-30b-a3b": "NEMOTRON_3_NANO",
                "nemotron-3-ultra-550b-a55b": "NEMOTRON_3_ULTRA", "kimi-k2": "KIMI_K2", "gpt-oss-120b": "GPT_OSS_120B",
                "deepseek-v4-flash": "DEEPSEEK_V4_FLASH"}
ROW_GPUS = {"H100-SXM-80GB": "H100", "B200": "B200", "B300": "B300", "GB200": "GB200", "GB300": "GB300"}
ROW_PRECISIONS = {"bf16": "BF16", "fp8_current_scaling": "FP8_CS", "mxfp8": "FP8_MX", "fp8_block32x32": "FP8_MX",
                  "fp8_blockwise": "FP8_SC", "nvfp4": "NVFP4"}


def layout_of(e):
    """The layout an entry runs: (GPUs, TP, PP, VP, CP, EP, GBS, MBS); unset VP/CP/EP are 1."""
    return (e["num_gpus"], e["tensor_model_parallel_size"] or 1, e["pipeline_model_parallel_size"] or 1,
            e["virtual_pipeline_model_parallel_size"] or 1, e["context_parallel_size"] or 1,
            e["expert_model_parallel_size"] or 1, e["global_batch_size"], e["micro_batch_size"] or 1)


def row_matches(row, e):
    """Same model x GPU x precision x layout (GPUs, TP, PP, VP, CP, EP, GBS, and MBS where the table prints it)."""
    if (e["model"], e["gpu"], e["precision"]) != (MODEL_TOKENS.get(row.get("model_key")), ROW_GPUS.get(row.get("gpu_type")),
                                                  ROW_PRECISIONS.get(row.get("precision_normalized"))):
        return False
    n, tp, pp, vp, cp, ep, gbs, mbs = layout_of(e)
    vp_row = row.get("vp") if isinstance(row.get("vp"), int) else None
    return (row.get("num_gpus"), row.get("tp") or 1, row.get("pp") or 1, row.get("cp") or 1, row.get("ep") or 1, row.get("gbs")) == (n, tp, pp, cp, ep, gbs) \
        and (vp_row is None or vp_row == vp) and (row.get("mbs") is None or row["mbs"] == mbs)


def history_commits(git_dir):
    """Every commit of HISTORY_REFS that changed scripts/performance/configs: (short hash, date)."""
    out = git(git_dir, "log", "--format=%h %ad", "--date=short", *HISTORY_REFS, "--", "scripts/performance/configs")
    return [tuple(line.split()) for line in out.splitlines() if line.strip()]


def history_match(row, history):
    """The preset matching the row at the commit nearest its table's date (history: a loader of (commit, date) ->
    entries, and the commits)."""
    load, commits = history
    day = TABLE_DATES.get(row.get("release"))
    if not day or not commits:
        return None
    from datetime import date
    d0 = date.fromisoformat(day)
    for c, d in sorted(commits, key=lambda cd: (abs((date.fromisoformat(cd[1]) - d0).days), cd[0])):
        e = next((e for e in load(c) if row_matches(row, e)), None)
        if e:
            return dict(e, rev=c, match=f"history: commit {c} of {d}, nearest the table's date {day} with the row's layout")
    return None


def match_rows(rows, releases, revisions, history=(None, [])):
    """Each validation row -> the entry of its release whose layout matches it; else the matching entry of the nearest
    other tag (by tag order, the row's release first); else a fallback with the reason."""
    order = [r["rev"] for r in revisions]
    out = {}
    for row in rows:
        rel = next((r for r in releases if r["release"] == row.get("release")), None)
        if rel is None or row.get("model_key") not in MODEL_TOKENS:
            continue
        own = rel["revisions"]
        home = order.index(own[0])
        others = sorted((r for r in order if r not in own), key=lambda r: (abs(order.index(r) - home), -order.index(r)))
        found = None
        for rev in own + others:
            revision = next(r for r in revisions if r["rev"] == rev)
            e = next((e for e in revision["entries"] if row_matches(row, e)), None)
            if e:
                found = dict(e, rev=rev, match="own release" if rev in own else f"nearest matching tag {rev} (the release's own: {', '.join(own)})")
                break
        if found is None:
            found = history_match(row, history)
        if found is None:
            same = [e["name"] for rev in own for e in next(r for r in revisions if r["rev"] == rev)["entries"]
                    if (e["model"], e["gpu"], e["precision"]) == (MODEL_TOKENS[row["model_key"]], ROW_GPUS.get(row.get("gpu_type")), ROW_PRECISIONS.get(row.get("precision_normalized")))]
            found = {"fallback": "no recipe of any tag, nor of any commit of the presets' history, has the row's layout" + (f" (its release's: {', '.join(sorted(set(same)))})" if same else " (its release has no recipe for this model x GPU x precision)")}
        out[row["id"]] = found
    return out


def main():
    git_dir = sys.argv[1]
    rx = recipes_module()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rx.MESHPLAN_MP.extend(json.load(open(os.path.join(here, "crates/core/data/mixed_precision.json"))))
    cache = {}
    out = {"comment": "Speed settings of Megatron Bridge's performance recipes per 26.x release, by "
                      "scripts/extract-bridge-perf-recipes-26x.py (see its docstring); source = path@commit per entry. "
                      "The calibrate example runs each validation row with the entry of its release whose layout matches.",
           "releases": []}
    for release, revs in RELEASES:
        rel = {"release": release, "revisions": []}
        for rev in revs:
            if rev not in cache:
                commit = git(git_dir, "rev-parse", "--short=12", f"{rev}^{{commit}}").strip()
                entries = presets_at(git_dir, rev, commit)
                if entries is None:
                    entries = flat_recipes_at(git_dir, rev, commit, rx) or []
                cache[rev] = {"rev": rev, "commit": commit, "entries": entries}
            rel["revisions"].append(rev)
        out["releases"].append(rel)
    revisions = list(cache.values())
    rows = json.load(open(os.path.join(here, "reference/validation_runs.json")))
    memo = {}

    def load(c):
        if c not in memo:
            memo[c] = presets_at(git_dir, c, c) or []
        return memo[c]

    out["rows"] = match_rows(rows, out["releases"], revisions, (load, history_commits(git_dir)))
    out["revisions"] = [{"rev": r["rev"], "commit": r["commit"], "entries": len(r["entries"])} for r in revisions]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
