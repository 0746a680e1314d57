#!/usr/bin/env python3
"""Extract Megatron Bridge's library and performance recipes into crates/core/data/bridge_recipes.json.

Usage:
    scripts/extract-bridge-recipes.py GIT_DIR [COMMIT] > crates/core/data/bridge_recipes.json

GIT_DIR is a bare checkout of github:NVIDIA-NeMo/Megatron-Bridge (the `fetch` tool's mirror); files are read with
`git --git-dir=GIT_DIR show COMMIT:PATH`, nothing is imported or run. Each recipe function is read statically: a
small interpreter walks the function's statements (assignments to `cfg.<section>.<field>`, local variables, calls to
other functions of the recipe packages and of training/mixed_precision.py, dataclass constructors with their
defaults, lists, dicts, `if` on known values, `try`/`except`) and records the values the recipe leaves in its
ConfigContainer. A value it cannot know statically (a field read from the Hugging Face config, a branch on the GPU
found at run time, an unknown helper) is left out and listed under the recipe's `unresolved` with the reason.

Two helpers are modelled by hand, because they read the machine they run on:
- `apply_flex_dispatcher_backend(model, backend)` (src/megatron/bridge/training/flex_dispatcher_backend.py): on a MoE
  model, `deepep` runs on compute capability 8.x/9.x and B200/B300, `hybridep` on 8.x/9.x/10.x; there the dispatcher
  becomes `flex` with that backend, elsewhere it falls back to `alltoall` with no backend. It is evaluated for the GPU
  the recipe's name states (h100: 9.0; gb200/gb300/b200/b300: 10.x).
- `get_mixed_precision_config(name)` (training/mixed_precision.py): the registered recipe function of that name.
- `set_deepseek_v4_pipeline_model_parallel_layout(model)` (models/deepseek/deepseek_v4_bridge.py): with PP > 1 the
  even split of the preset's num_layers, the embedding first, mtp_num_layers MTP layers and the loss last (list form);
  with PP 1 none. num_layers and mtp_num_layers are the recipe's where it sets them, else the preset's (the provider
  reads them from the HF config).
- `set_cuda_graph_modules`, `clear_cuda_graph_modules`, `set_full_iteration_cuda_graph` (utils/cuda_graph.py, outside
  the recipe packages): the module names go to `cuda_graph_modules` (the current Megatron-Core API).
Any other function from outside the packages read here that is handed a config object is listed under `unresolved`
as a `(helper)` whose changes are not read. Model providers: the Hugging Face bridges of the covered MoE families set
`moe_token_dispatcher_type = "alltoall"` (models/*/..._bridge.py), and every covered MoE recipe sets the dispatcher
itself; no covered provider sets another settings-table row, so a row a recipe leaves alone is Megatron-Core's default.

The mixed-precision fields kept are those the recipe changes relative to the Bridge mixed-precision recipe that
meshplan's precision (and FP8 recipe) selects (crates/core/data/mixed_precision.json), so that a plan which changes
the precision runs that precision's own recipe.

A library recipe's model is the preset whose `hf_id` (crates/core/data/models.json) is the Hugging Face id the recipe's
AutoBridge.from_hf_pretrained(path) call names (`stated_hf_id`: a first reading of the function records the call's
argument, its `hf_path` default followed through helpers; HF_RENAMED maps a renamed repository to its current name),
one mechanism for every family. PRESET_PREFIXES (recipe-name prefix -> preset) is used only where the recipe states no
Hugging Face id (a model provider class built in the recipe, e.g. GPTModelProvider175B). Every recipe carries the id it
states as `hf_model_id`. A pretrain or SFT recipe whose id is no preset's is read all the same, with no `model`: a plan
naming it must give the model (its config.json as model.hf_config, or a preset key), and gets an input error naming the
id otherwise. Without a preset, whether the model is MoE is unknown, so what apply_flex_dispatcher_backend would set is
`unresolved`. PEFT recipes (kind "peft") are read too: cfg.peft = LoRA(...) (default_peft_config("lora")) is the
plan's `peft: "lora"`, its dim and target_modules the lora_dim / lora_target_modules rows (targets meshplan does not
size, Mamba's in_proj / out_proj, are dropped and listed), and another PEFT (VLMLoRA, DoRA) or a LoRA field that
changes sizes meshplan does not model (dropout, ...) is `unresolved`. String methods of known strings
(`peft_scheme.lower()`) are evaluated, and `isinstance` of a plain value against a class is False. A recipe that states
no id and has no prefix (diffusion models, models built from a provider class) is listed under `skipped` with its
reason; the recipe packages' own helpers (recipes/utils) are not recipes. Legacy aliases (`from ...h100.x
import A as B` in the family modules) are listed with `alias_of`, their name and source only (the target's entry holds the reading; the
reader fills it in).

The performance recipes (src/megatron/bridge/perf_recipes/<family>/<gpu>/<model>.py: the flat functions Bridge's
performance tables run, each starting from a library recipe) are read the same way, kind "perf", named
`perf.<function>` (some of their functions repeat a library recipe's name); their pre-training functions only, for the
GPUs meshplan's catalogue holds. Their older spelling of a full-iteration CUDA graph (cuda_graph_impl "local" with
"full_iteration" in the scope) is written as cuda_graph_impl "full_iteration" with no modules. A performance recipe
that the performance summary of the pinned commit's release (26.08) measured carries the row under `published`
(`attach_published`: shown beside the prediction, never fitted to).
"""

import ast
import json
import re
import subprocess
import sys

RECIPES = "src/megatron/bridge/recipes"
# Bridge's performance recipes (the flat functions its performance tables run; each starts from a library recipe).
PERF = "src/megatron/bridge/perf_recipes"
MIXED = "src/megatron/bridge/training/mixed_precision.py"
COMM = "src/megatron/bridge/training/comm_overlap.py"

# Recipe-name prefix -> meshplan model preset key (crates/core/data/models.json), for the recipes that state no Hugging
# Face id (and for the performance recipes, which keep meshplan's validation mapping). Longest prefix wins; EXCLUDE lists
# prefixes of other models that share a preset's prefix.
PRESET_PREFIXES = {
    "llama31_8b_": "llama-3.1-8b",
    "llama31_70b_": "llama-3.1-70b",
    "llama31_405b_": "llama-3.1-405b",
    "qwen3_8b_": "qwen3-8b",
    "qwen3_32b_": "qwen3-32b",
    "qwen3_30b_a3b_": "qwen3-30b-a3b",
    "qwen3_235b_a22b_": "qwen3-235b-a22b",
    "qwen3_next_80b_a3b_": "qwen3-next-80b-a3b",
    "deepseek_v2_": "deepseek-v2",
    "deepseek_v3_": "deepseek-v3",
    "deepseek_v4_flash_": "deepseek-v4-flash",
    "deepseek_v4_pro_": "deepseek-v4-pro",
    "olmoe_7b_": "olmoe-1b-7b",
    "glm45_355b_": "glm-4.5",
    "glm45_air_106b_": "glm-4.5-air",
    "kimi_k2_": "kimi-k2",
    "moonlight_16b_": "moonlight-16b-a3b",
    "gpt3_175b_": "gpt3-175b",
    "nemotronh_8b_": "nemotron-h-8b",
    "nemotronh_47b_": "nemotron-h-47b",
    "nemotronh_56b_": "nemotron-h-56b",
    "nemotron_nano_9b_v2_": "nemotron-nano-9b-v2",
    "nemotron_nano_12b_v2_": "nemotron-nano-12b-v2",
    "nemotron_3_nano_": "nemotron-3-nano-30b-a3b",
    "nemotron_3_super_": "nemotron-3-super-120b-a12b",
    "nemotron_3_ultra_": "nemotron-3-ultra-550b-a55b",
    "step35_196b_a11b_": "step-3.5-flash",
    "gemma4_e4b_": "gemma-4-e4b",
    "gemma3_1b_": "gemma-3-1b",
}
EXCLUDE = ("deepseek_v2_lite_", "nemotron_3_nano_4b_")
# Hugging Face ids the recipes name whose repositories were renamed since (the old name redirects to the new one):
# models.json holds the current name. meta-llama renamed its Llama 3.1 repositories from Meta-Llama-3.1-* to
# Llama-3.1-* (huggingface.co/meta-llama/Meta-Llama-3.1-8B redirects to huggingface.co/meta-llama/Llama-3.1-8B).
HF_RENAMED = {
    "meta-llama/Meta-Llama-3.1-8B": "meta-llama/Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B": "meta-llama/Llama-3.1-70B",
    "meta-llama/Meta-Llama-3.1-405B": "meta-llama/Llama-3.1-405B",
}
# The performance recipes' own model prefixes (their Llama 3 8B / 70B are Llama 3.1's shapes: meshplan's validation
# mapping, scripts/extract-bridge-perf-recipes-26x.py MODEL_TOKENS, reads them so too).
PERF_PREFIXES = {"llama3_8b_": "llama-3.1-8b", "llama3_70b_": "llama-3.1-70b", "gpt_oss_20b_": "gpt-oss-20b",
                 "gpt_oss_120b_": "gpt-oss-120b"}

# The GPU a recipe name states -> meshplan GPU key (crates/core/data/gpus.json) and CUDA compute capability major.
GPUS = {"h100": ("h100-sxm-80gb", 9), "b200": ("b200", 10), "b300": ("b300", 10), "gb200": ("gb200", 10), "gb300": ("gb300", 10)}

PARALLELISM = [
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
    "pipeline_model_parallel_layout", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
    "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
]
TORCH_DTYPES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "uint8": "fp8"}
MAX_STEPS = 200_000
STR_METHODS = ("lower", "upper", "strip")
CUDA_GRAPH_HELPERS = ("set_cuda_graph_modules", "clear_cuda_graph_modules", "set_full_iteration_cuda_graph")
# crates/core/data/mixed_precision.json: the Bridge mixed-precision recipe meshplan selects for each precision.
MESHPLAN_MP = []
# Settings whose recipe values meshplan's settings table (crates/core/src/settings.rs) does not take: the values it
# takes, and why the others are left out.
UNSUPPORTED = {
    "optimizer": (("adam", "sgd"), "meshplan sizes the adam and sgd optimizers only (Muon's layer-wise sharding is not modelled)"),
}


def git_show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True).stdout


def git_ls(git_dir, commit, path):
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit, path], check=True, capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p.endswith(".py")]


# ---------------------------------------------------------------------------------------------------------------
# The interpreter's values
# ---------------------------------------------------------------------------------------------------------------

class Unknown:
    """A value the static reading cannot know, with the reason."""

    def __init__(self, why):
        self.why = why


class Obj:
    """A config object: its fields as the recipe leaves them. `opaque`: fields not set are unknown (a model provider
    built from a Hugging Face config); otherwise unset fields are the class defaults (known) or missing."""

    def __init__(self, kind, fields=None, opaque=False):
        self.kind, self.fields, self.opaque = kind, dict(fields or {}), opaque

    def get(self, name):
        if name in self.fields:
            return self.fields[name]
        if self.kind == "model":
            return Unknown(f"model.{name} comes from the model provider (the Hugging Face config), read at run time")
        return Unknown(f"{self.kind}.{name} is not set by the recipe")


class Ext:
    """A name from outside the recipe packages (torch, megatron.core, ...), by dotted path."""

    def __init__(self, path):
        self.path = path


class Func:
    def __init__(self, module, node):
        self.module, self.node = module, node


class Klass:
    def __init__(self, name, defaults):
        self.name, self.defaults = name, defaults


class Raised(Exception):
    pass


class Return(Exception):
    def __init__(self, value):
        self.value = value


class Module:
    def __init__(self, name, path, tree):
        self.name, self.path, self.tree = name, path, tree
        self.globals = {}  # name -> value, or ("import", module, attr)


def dtype_name(v):
    if isinstance(v, Ext) and v.path.startswith("torch."):
        return TORCH_DTYPES.get(v.path.split(".", 1)[1])
    return None


class Interp:
    def __init__(self, modules, context):
        self.modules = modules  # dotted name -> Module
        self.ctx = context  # {"gpu_major": int, "moe": bool}
        self.steps = 0
        self.opaque_calls = []  # helpers outside the packages read here that were handed a config
        self.hf_ids = []  # the Hugging Face ids AutoBridge.from_hf_pretrained was called with, in call order

    # -- names ------------------------------------------------------------------------------------------------
    def global_value(self, module, name):
        g = module.globals.get(name)
        if isinstance(g, tuple) and g and g[0] == "import":
            _, mod, attr = g
            target = self.modules.get(mod)
            if target is None:
                return Ext(f"{mod}.{attr}" if attr else mod)
            if attr is None:
                return Ext(mod)
            return self.global_value(target, attr)
        if name in module.globals:
            return g
        builtins = {"None": None, "True": True, "False": False}
        if name in builtins:
            return builtins[name]
        if name in ("int", "float", "str", "bool", "len", "getattr", "isinstance", "range", "list", "dict", "max", "min", "setattr", "hasattr"):
            return Ext(f"builtins.{name}")
        return Ext(name)

    # -- expressions ----------------------------------------------------------------------------------------------
    def ev(self, node, env, module):
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Raised("step budget exceeded")
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is None:
            return Unknown(f"expression `{ast.unparse(node)[:60]}` is not read statically")
        return m(node, env, module)

    def ev_Constant(self, n, env, mod):
        return n.value

    def ev_Name(self, n, env, mod):
        if n.id in env:
            return env[n.id]
        return self.global_value(mod, n.id)

    def ev_Attribute(self, n, env, mod):
        base = self.ev(n.value, env, mod)
        if isinstance(base, Obj):
            return base.get(n.attr)
        if isinstance(base, Ext):
            return Ext(f"{base.path}.{n.attr}")
        if isinstance(base, Unknown):
            return base
        return Unknown(f"attribute {n.attr} of a {type(base).__name__}")

    def ev_List(self, n, env, mod):
        return [self.ev(e, env, mod) for e in n.elts]

    def ev_Tuple(self, n, env, mod):
        return tuple(self.ev(e, env, mod) for e in n.elts)

    def ev_Dict(self, n, env, mod):
        out = {}
        for k, v in zip(n.keys, n.values):
            val = self.ev(v, env, mod)
            if k is None:
                if isinstance(val, dict):
                    out.update(val)
                continue
            key = self.ev(k, env, mod)
            if isinstance(key, (str, int, tuple)):
                out[key] = val
        return out

    def ev_UnaryOp(self, n, env, mod):
        v = self.ev(n.operand, env, mod)
        if isinstance(n.op, ast.Not):
            return Unknown("negation of an unknown") if isinstance(v, Unknown) else (not v)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(n.op, ast.USub) else v
        return Unknown(f"`{ast.unparse(n)[:60]}`")

    def ev_BinOp(self, n, env, mod):
        a, b = self.ev(n.left, env, mod), self.ev(n.right, env, mod)
        for x in (a, b):
            if isinstance(x, Unknown):
                return x
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.FloorDiv: lambda: a // b,
               ast.Mod: lambda: a % b, ast.Div: lambda: a / b}
        f = ops.get(type(n.op))
        try:
            return f() if f else Unknown(f"`{ast.unparse(n)[:60]}`")
        except Exception:
            return Unknown(f"`{ast.unparse(n)[:60]}`")

    def ev_BoolOp(self, n, env, mod):
        is_and = isinstance(n.op, ast.And)
        v = None
        for e in n.values:
            v = self.ev(e, env, mod)
            if isinstance(v, Unknown):
                return v
            if is_and and not v:
                return v
            if not is_and and v:
                return v
        return v

    def ev_Compare(self, n, env, mod):
        left = self.ev(n.left, env, mod)
        for op, right_n in zip(n.ops, n.comparators):
            right = self.ev(right_n, env, mod)
            if isinstance(left, (Unknown, Obj, Ext)) or isinstance(right, (Unknown, Obj, Ext)):
                if isinstance(op, (ast.Is, ast.IsNot)) and right is None and isinstance(left, (Obj, Ext)):
                    ok = isinstance(op, ast.IsNot)
                else:
                    return Unknown(f"comparison `{ast.unparse(n)[:60]}`")
            else:
                fns = {ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right, ast.Lt: lambda: left < right,
                       ast.LtE: lambda: left <= right, ast.Gt: lambda: left > right, ast.GtE: lambda: left >= right,
                       ast.Is: lambda: left is right, ast.IsNot: lambda: left is not right,
                       ast.In: lambda: left in right, ast.NotIn: lambda: left not in right}
                try:
                    ok = fns[type(op)]()
                except Exception:
                    return Unknown(f"comparison `{ast.unparse(n)[:60]}`")
            if not ok:
                return False
            left = right
        return True

    def ev_IfExp(self, n, env, mod):
        c = self.ev(n.test, env, mod)
        if isinstance(c, Unknown):
            return Unknown(f"`{ast.unparse(n.test)[:60]}` is known only at run time")
        return self.ev(n.body if c else n.orelse, env, mod)

    def ev_ListComp(self, n, env, mod):
        if len(n.generators) != 1:
            return Unknown(f"`{ast.unparse(n)[:60]}`")
        g = n.generators[0]
        it = self.ev(g.iter, env, mod)
        if not isinstance(it, (list, tuple)):
            return Unknown(f"`{ast.unparse(n)[:60]}` over an unknown")
        out, local = [], dict(env)
        for x in it:
            self.assign(g.target, x, local, mod)
            if all(self.ev(c, local, mod) is True for c in g.ifs):
                out.append(self.ev(n.elt, local, mod))
        return out

    def ev_Subscript(self, n, env, mod):
        base, key = self.ev(n.value, env, mod), self.ev(n.slice, env, mod)
        if isinstance(base, Unknown) or isinstance(key, Unknown):
            return Unknown(f"`{ast.unparse(n)[:60]}`")
        try:
            return base[key]
        except (KeyError, IndexError, TypeError):
            raise Raised(f"lookup `{ast.unparse(n)[:60]}` fails")

    def ev_Call(self, n, env, mod):
        if isinstance(n.func, ast.Attribute) and n.func.attr in STR_METHODS and not n.args and not n.keywords:
            # A string method of a known string (`peft_scheme.lower()`).
            base = self.ev(n.func.value, env, mod)
            if isinstance(base, str):
                return getattr(base, n.func.attr)()
        f = self.ev(n.func, env, mod)
        args = [self.ev(a, env, mod) for a in n.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.ev(k.value, env, mod) for k in n.keywords if k.arg is not None}
        return self.call(f, args, kwargs, n)

    def call(self, f, args, kwargs, node=None):
        name = f.node.name if isinstance(f, Func) else f.path.rsplit(".", 1)[-1] if isinstance(f, Ext) else None
        if name == "from_hf_pretrained":
            # AutoBridge.from_hf_pretrained(path, ...) (models/conversion/auto_bridge.py:529): the model the recipe trains.
            hf = args[0] if args else kwargs.get("path")
            if isinstance(hf, str):
                self.hf_ids.append(hf)
        if name in ("apply_flex_dispatcher_backend", "get_mixed_precision_config"):
            if name == "apply_flex_dispatcher_backend":
                return self.flex_dispatcher(args, kwargs)
            if name == "get_mixed_precision_config":
                target = args[0] if args else kwargs.get("name")
                if isinstance(target, str):
                    return self.call(self.global_value(self.modules["megatron.bridge.training.mixed_precision"], target.replace("-", "_")), [], {})
            return target if isinstance(target, Obj) else Unknown("get_mixed_precision_config of an unknown name")
        if isinstance(f, Ext) and f.path in ("typing.cast", "cast") and len(args) == 2:
            return args[1]
        if name in CUDA_GRAPH_HELPERS:
            return self.cuda_graph_helper(name, args, kwargs)
        if name == "set_deepseek_v4_pipeline_model_parallel_layout":
            return self.dsv4_layout(args, kwargs)
        if isinstance(f, Func):
            return self.run_function(f, args, kwargs)
        def is_config(a):
            return isinstance(a, Obj) and (a.kind == "model" or a.kind[:1].isupper())

        callee = f.path.rsplit(".", 1)[-1] if isinstance(f, Ext) else ""
        if isinstance(f, Ext) and callee[:1].islower() and not f.path.startswith("builtins.") and any(is_config(a) for a in list(args) + list(kwargs.values())):
            # A helper outside the packages read here is handed a config: what it changes is not known.
            self.opaque_calls.append(f.path)
        if isinstance(f, Klass):
            fields = dict(f.defaults)
            fields.update(kwargs)
            return Obj(f.name, fields)
        if isinstance(f, Ext):
            b = f.path.rsplit(".", 1)[-1]
            if f.path.startswith("builtins."):
                return self.builtin(b, args, kwargs)
            # A constructor or factory from outside: an object holding the keyword arguments it was given.
            return Obj(b, kwargs, opaque=True)
        if isinstance(f, Unknown):
            # e.g. AutoBridge.from_hf_pretrained(...).to_megatron_provider(...): a model provider read from HF.
            return Obj("model", {}, opaque=True)
        return Unknown("call of a value that is not a function")

    def builtin(self, name, args, kwargs):
        if any(isinstance(a, Unknown) for a in args):
            return next(a for a in args if isinstance(a, Unknown))
        try:
            if name in ("int", "float", "str", "bool", "len", "max", "min", "list"):
                return {"int": int, "float": float, "str": str, "bool": bool, "len": len, "max": max, "min": min, "list": list}[name](*args)
            if name == "range":
                return list(range(*args))
            if name == "dict":
                return dict(*args, **kwargs)
            if name == "getattr":
                obj, attr = args[0], args[1]
                if isinstance(obj, Obj):
                    if attr in obj.fields:
                        return obj.fields[attr]
                    if len(args) > 2 and not obj.opaque:
                        return args[2]
                    return obj.get(attr)
                return Unknown("getattr on a non-object")
            if name == "hasattr":
                return Unknown("hasattr")
            if name == "setattr":
                if isinstance(args[0], Obj):
                    args[0].fields[args[1]] = args[2]
                return None
            if name == "isinstance":
                types = {"builtins.int": int, "builtins.str": str, "builtins.bool": bool, "builtins.list": list, "builtins.float": float}
                t = args[1]
                ts = t if isinstance(t, tuple) else (t,)
                if all(isinstance(x, Ext) and x.path in types for x in ts) and not isinstance(args[0], (Obj, Ext)):
                    return isinstance(args[0], tuple(types[x.path] for x in ts))
                if all(isinstance(x, Ext) and x.path in types for x in ts) and isinstance(args[0], Obj) and not args[0].opaque:
                    # A config built by a class or factory read here is no str / int / list: perf_recipes/_common.py:72
                    # @ 067f987df03b guards its `grad_reduce_in_fp32 = False` with `not isinstance(cfg.mixed_precision, str)`.
                    return False
                if isinstance(args[0], (str, int, float, bool)) and all(isinstance(x, (Ext, Klass)) and not (isinstance(x, Ext) and x.path.startswith("builtins.")) for x in ts):
                    # A plain value is no instance of a class of the recipe packages or beyond (`isinstance("lora", PEFT)`).
                    return False
                return Unknown("isinstance")
        except Exception:
            raise Raised(f"{name}() fails")
        return Unknown(f"builtin {name}")

    def cuda_graph_helper(self, name, args, kwargs):
        """utils/cuda_graph.py: set_cuda_graph_modules(config, modules) writes the module names to
        config.cuda_graph_modules and clears cuda_graph_scope; clear_cuda_graph_modules sets []; 
        set_full_iteration_cuda_graph sets cuda_graph_impl "full_iteration" and no modules (current Megatron-Core API)."""
        config = args[0] if args else kwargs.get("config")
        if not isinstance(config, Obj):
            return None
        if name == "set_full_iteration_cuda_graph":
            config.fields.update(cuda_graph_impl="full_iteration", cuda_graph_modules=[], cuda_graph_scope=None)
            return None
        modules = [] if name == "clear_cuda_graph_modules" else (args[1] if len(args) > 1 else kwargs.get("modules"))
        if isinstance(modules, Unknown):
            config.fields["cuda_graph_modules"] = modules
            return None
        items = [] if modules is None else (modules.split(",") if isinstance(modules, str) and modules not in ("", "full") else [] if isinstance(modules, str) else list(modules) if isinstance(modules, (list, tuple)) else [modules])
        names = [x.path.rsplit(".", 1)[-1] if isinstance(x, Ext) else str(x).rsplit(".", 1)[-1] for x in items]
        config.fields.update(cuda_graph_modules=names, cuda_graph_scope=None)
        return None

    def dsv4_layout(self, args, kwargs):
        """models/deepseek/deepseek_v4_bridge.py set_deepseek_v4_pipeline_model_parallel_layout: PP ≤ 1 → None; else
        per rank the embedding (rank 0), num_layers // PP decoders (+1 on the first num_layers % PP ranks), and on the
        last rank mtp_num_layers MTP layers and the loss."""
        model = args[0] if args else kwargs.get("model_cfg")
        if not isinstance(model, Obj):
            return None
        pp = model.fields.get("pipeline_model_parallel_size") or 1
        # What the recipe set on the provider wins over the preset's (the no-MTP recipe sets mtp_num_layers = None).
        layers = model.fields.get("num_layers", self.ctx.get("num_layers", 0))
        mtp = model.fields.get("mtp_num_layers", self.ctx.get("mtp_num_layers", 0)) or 0
        if isinstance(layers, Unknown) or isinstance(mtp, Unknown):
            model.fields["pipeline_model_parallel_layout"] = Unknown("set_deepseek_v4_pipeline_model_parallel_layout with unknown layer counts")
            return None
        if isinstance(pp, Unknown) or not layers:
            model.fields["pipeline_model_parallel_layout"] = Unknown("set_deepseek_v4_pipeline_model_parallel_layout without a known PP")
            return None
        if pp <= 1:
            model.fields["pipeline_model_parallel_layout"] = None
            return None
        base, extra = divmod(layers, pp)
        layout = []
        for rank in range(pp):
            stage = (["embedding"] if rank == 0 else []) + ["decoder"] * (base + int(rank < extra))
            if rank == pp - 1:
                stage += ["mtp"] * mtp + ["loss"]
            layout.append(stage)
        model.fields["pipeline_model_parallel_layout"] = layout
        return None

    def flex_dispatcher(self, args, kwargs):
        model = args[0] if args else kwargs.get("model_config")
        backend = args[1] if len(args) > 1 else kwargs.get("moe_flex_dispatcher_backend")
        if isinstance(model, Obj) and self.ctx["moe"] is None and not isinstance(backend, Unknown):
            why = "apply_flex_dispatcher_backend: whether the model is MoE is known from its config only (no preset)"
            model.fields.update(moe_token_dispatcher_type=Unknown(why), moe_flex_dispatcher_backend=Unknown(why))
            return None
        if not isinstance(model, Obj) or not self.ctx["moe"] or isinstance(backend, Unknown):
            return None
        major = self.ctx["gpu_major"]
        if backend == "deepep":
            ok = major in (8, 9) or self.ctx["gpu"] in ("b200", "b300")
        elif backend == "hybridep":
            ok = major in (8, 9, 10)
        else:
            return None
        if ok:
            model.fields.update(moe_token_dispatcher_type="flex", moe_flex_dispatcher_backend=backend, moe_shared_expert_overlap=False)
        else:
            model.fields.update(moe_token_dispatcher_type="alltoall", moe_flex_dispatcher_backend=None)
        return None

    def run_function(self, f, args, kwargs):
        a = f.node.args
        env = {}
        params = a.posonlyargs + a.args
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        for i, (p, d) in enumerate(zip(params, defaults)):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kwargs:
                env[p.arg] = kwargs[p.arg]
            elif d is not None:
                env[p.arg] = self.ev(d, {}, f.module)
            else:
                env[p.arg] = Unknown(f"argument {p.arg} not given")
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            env[p.arg] = kwargs.get(p.arg, self.ev(d, {}, f.module) if d is not None else Unknown(f"argument {p.arg}"))
        try:
            self.block(f.node.body, env, f.module)
        except Return as r:
            return r.value
        return None

    # -- statements ----------------------------------------------------------------------------------------------
    def block(self, stmts, env, mod):
        for s in stmts:
            self.stmt(s, env, mod)

    def stmt(self, s, env, mod):
        t = type(s).__name__
        if t == "Assign":
            v = self.ev(s.value, env, mod)
            for target in s.targets:
                self.assign(target, v, env, mod)
        elif t == "AnnAssign" and s.value is not None:
            self.assign(s.target, self.ev(s.value, env, mod), env, mod)
        elif t == "AugAssign":
            v = self.ev(ast.BinOp(left=s.target, op=s.op, right=s.value), env, mod)
            self.assign(s.target, v, env, mod)
        elif t == "Expr":
            self.ev(s.value, env, mod)
        elif t == "Return":
            raise Return(self.ev(s.value, env, mod) if s.value is not None else None)
        elif t == "If":
            c = self.ev(s.test, env, mod)
            if isinstance(c, Unknown):
                self.taint(s.body + s.orelse, env, mod, f"set under `if {ast.unparse(s.test)[:70]}`, known only at run time")
            else:
                self.block(s.body if c else s.orelse, env, mod)
        elif t == "For":
            it = self.ev(s.iter, env, mod)
            if isinstance(it, (list, tuple, dict)) and len(it) <= 10_000:
                for x in list(it):
                    self.assign(s.target, x, env, mod)
                    self.block(s.body, env, mod)
            else:
                self.taint(s.body, env, mod, f"set in a loop over `{ast.unparse(s.iter)[:60]}`")
        elif t == "Try":
            try:
                self.block(s.body, env, mod)
            except Raised:
                if s.handlers:
                    self.block(s.handlers[0].body, env, mod)
                else:
                    raise
            else:
                self.block(s.orelse, env, mod)
            self.block(s.finalbody, env, mod)
        elif t == "Raise":
            raise Raised(ast.unparse(s)[:80])
        elif t in ("ImportFrom", "Import"):
            self.bind_imports(s, env, mod)
        elif t == "FunctionDef":
            env[s.name] = Func(mod, s)
        elif t == "With":
            self.block(s.body, env, mod)
        elif t in ("While",):
            self.taint(s.body, env, mod, "set in a while loop")
        # Pass, Assert, Delete, Global: nothing the config keeps.

    def bind_imports(self, s, env, mod):
        if isinstance(s, ast.ImportFrom):
            for a in s.names:
                src = resolve_from(mod, s)
                tmp = Module("tmp", "", None)
                tmp.globals[a.asname or a.name] = ("import", src, a.name)
                env[a.asname or a.name] = self.global_value(tmp, a.asname or a.name)

    def assign(self, target, v, env, mod):
        if isinstance(target, ast.Name):
            env[target.id] = v
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value, env, mod)
            if isinstance(base, Obj):
                base.fields[target.attr] = v
        elif isinstance(target, ast.Subscript):
            base, key = self.ev(target.value, env, mod), self.ev(target.slice, env, mod)
            if isinstance(base, (dict, list)) and not isinstance(key, Unknown):
                try:
                    base[key] = v
                except Exception:
                    pass
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(v, (tuple, list)) and len(v) == len(target.elts):
                for t, x in zip(target.elts, v):
                    self.assign(t, x, env, mod)
            else:
                for t in target.elts:
                    self.assign(t, Unknown(f"unpacking `{ast.unparse(target)[:40]}`"), env, mod)

    def taint(self, stmts, env, mod, why):
        """Every attribute a branch of unknown condition could set becomes unknown (and every helper it calls with
        the config may have changed anything: those calls are named)."""
        for s in stmts:
            for n in ast.walk(s):
                targets = []
                if isinstance(n, ast.Assign):
                    targets = n.targets
                elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                    targets = [n.target]
                for t in targets:
                    if isinstance(t, ast.Attribute):
                        base = self.ev(t.value, env, mod)
                        if isinstance(base, Obj):
                            base.fields[t.attr] = Unknown(why)
                    elif isinstance(t, ast.Name):
                        env[t.id] = Unknown(why)


def resolve_from(mod, s):
    if s.level == 0:
        return s.module
    parts = mod.name.split(".")
    base = parts[: len(parts) - s.level]
    return ".".join(base + ([s.module] if s.module else []))


def dataclass_defaults(cls):
    out = {}
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
            try:
                out[s.target.id] = ast.literal_eval(s.value)
            except Exception:
                if isinstance(s.value, ast.Attribute) and isinstance(s.value.value, ast.Name) and s.value.value.id == "torch":
                    out[s.target.id] = Ext(f"torch.{s.value.attr}")
    return out


def bind_globals(m):
    """A module's top-level functions, classes, imports and literal constants as its globals."""
    for s in m.tree.body:
        if isinstance(s, ast.FunctionDef):
            m.globals[s.name] = Func(m, s)
        elif isinstance(s, ast.ClassDef):
            m.globals[s.name] = Klass(s.name, dataclass_defaults(s))
        elif isinstance(s, ast.ImportFrom):
            src = resolve_from(m, s)
            for a in s.names:
                if a.name == "*":
                    continue
                m.globals[a.asname or a.name] = ("import", src, a.name)
        elif isinstance(s, ast.Import):
            for a in s.names:
                m.globals[a.asname or a.name.split(".")[0]] = ("import", a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else getattr(s, "target", None)
            if isinstance(target, ast.Name) and s.value is not None:
                try:
                    m.globals[target.id] = ast.literal_eval(s.value)
                except Exception:
                    pass


def load_modules(git_dir, commit):
    paths = git_ls(git_dir, commit, RECIPES) + git_ls(git_dir, commit, PERF) + [MIXED, COMM]
    modules = {}
    for p in paths:
        name = p[len("src/"):-3].replace("/", ".")
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        tree = ast.parse(git_show(git_dir, commit, p))
        modules[name] = Module(name, p, tree)
    for m in modules.values():
        bind_globals(m)
    return modules


# ---------------------------------------------------------------------------------------------------------------
# From a ConfigContainer to a meshplan recipe
# ---------------------------------------------------------------------------------------------------------------

def settings_rows(settings_rs):
    """Each settings.rs row: plan key -> (bridge paths, null spelling, torch dtype), read from the SETTINGS macro."""
    rows = {}
    body = settings_rs.split("settings! {", 1)[1]
    for m in re.finditer(r"\n    (\w+): [^=]+= [^{]*\{(.*?)\n    \};", body, re.S):
        key, text = m.group(1), m.group(2)
        bridge = re.search(r"bridge: &\[(.*?)\]", text)
        paths = re.findall(r'"([^"]+)"', bridge.group(1)) if bridge else []
        clears = re.search(r"bridge_clears: &\[(.*?)\]", text)
        paths += re.findall(r'"([^"]+)"', clears.group(1)) if clears else []
        null = re.search(r'null_spelling: Some\("([^"]+)"\)', text)
        rows[key] = (paths, null.group(1) if null else None, "torch_dtype: true" in text)
    return rows


def to_json(v):
    """A Python value as plan JSON; None when it is not representable (objects, unknowns)."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v, True
    d = dtype_name(v)
    if d:
        return d, True
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            j, ok = to_json(x)
            if not ok:
                return None, False
            out.append(j)
        return out, True
    return None, False


def lookup(cfg, path):
    cur = cfg
    for part in path.split("."):
        if not isinstance(cur, Obj):
            return Unknown(f"cfg.{path}: its section is not a config object")
        if part not in cur.fields:
            return None if not cur.opaque else Unknown(f"cfg.{path} is not set by the recipe")
        cur = cur.fields[part]
    return cur


def was_set(cfg, path):
    cur = cfg
    for part in path.split("."):
        if not isinstance(cur, Obj) or part not in cur.fields:
            return False
        cur = cur.fields[part]
    return True


def mixed_precision_of(interp, cfg):
    mp = cfg.fields.get("mixed_precision")
    if isinstance(mp, str):
        mp = interp.call(interp.global_value(interp.modules["megatron.bridge.training.mixed_precision"], mp.replace("-", "_")), [], {})
    return mp


def precision_of(mp):
    """The plan precision a MixedPrecisionConfig trains in (fp4 / fp8 GEMMs on bf16, else bf16 / fp16 / fp32)."""
    f = mp.fields
    if f.get("fp4"):
        return "fp4"
    if f.get("fp8"):
        return "fp8"
    if f.get("bf16"):
        return "bf16"
    if f.get("fp16"):
        return "fp16"
    return "fp32"


def recipe_entry(name, model_key, kind, gpu, gpus, module, cfg, interp, rows, alias_of=None, hf=None):
    unresolved = []

    def val(path, key):
        if not was_set(cfg, path):
            return None, False
        v = lookup(cfg, path)
        if isinstance(v, Unknown):
            unresolved.append({"field": key, "path": f"cfg.{path}", "reason": v.why})
            return None, False
        j, ok = to_json(v)
        if not ok:
            unresolved.append({"field": key, "path": f"cfg.{path}", "reason": f"a {type(v).__name__} value, not a plain one"})
        return j, ok

    par = {}
    for k in PARALLELISM:
        j, ok = val(f"model.{k}", k)
        if ok and j is not None:
            par[k] = j
    training = {}
    for k, paths in (("seq_length", ["model.seq_length", "dataset.seq_length"]), ("micro_batch_size", ["train.micro_batch_size"]),
                     ("global_batch_size", ["train.global_batch_size"])):
        for p in paths:
            if was_set(cfg, p):
                j, ok = val(p, k)
                if ok and j is not None:
                    training[k] = j
                break
    mp = mixed_precision_of(interp, cfg)
    mp_name = None
    base_mp = None
    if isinstance(mp, Obj):
        mp_name = mp.fields.get("__recipe__")
        training["precision"] = precision_of(mp)
        fp8_recipe = mp.fields.get("fp8_recipe") if mp.fields.get("fp8") else None
        base_mp = next((m for m in MESHPLAN_MP if m["precision"] == training["precision"] and m["fp8_recipe"] == fp8_recipe), None)
    else:
        unresolved.append({"field": "precision", "path": "cfg.mixed_precision", "reason": "the mixed-precision config is not known statically"})
    for key, (paths, null, _torch) in rows.items():
        if key in ("precision",) or not paths:
            continue
        first = paths[0]
        if first.startswith("mixed_precision."):
            if not isinstance(mp, Obj):
                continue
            field = first.split(".", 1)[1]
            v = mp.fields.get(field)
            if field == "fp8_recipe" and not mp.fields.get("fp8"):
                continue
            if isinstance(v, Unknown):
                unresolved.append({"field": key, "path": f"cfg.{first}", "reason": v.why})
                continue
            j, ok = to_json(v)
            # Only what differs from the mixed-precision recipe meshplan's precision (and FP8 recipe) selects: a plan
            # that changes the precision then gets that precision's recipe, not this one's fields.
            if ok and j is not None and (field == "fp8_recipe" or base_mp is None or base_mp.get(field) != j):
                training[key] = j
            continue
        chosen = None
        for p in paths:
            if was_set(cfg, p):
                chosen = p
                break
        if chosen is None:
            continue
        j, ok = val(chosen, key)
        if key == "use_distributed_optimizer":
            # Bridge's _validate_and_sync_distributed_optimizer_settings: either True makes both True.
            j = any(lookup(cfg, p) is True for p in paths)
        if not ok:
            continue
        if j is None:
            if null:
                training[key] = null
            continue
        if key in UNSUPPORTED and j not in UNSUPPORTED[key][0]:
            unresolved.append({"field": key, "path": f"cfg.{chosen}", "reason": f"{j!r}: {UNSUPPORTED[key][1]}"})
            continue
        if key == "cuda_graph_scope":
            # Megatron-Core's old spelling "full" is the whole layer (cuda_graph_modules = []).
            j = [] if j == "full" else ([j] if isinstance(j, str) else j)
        training[key] = j
    peft_entry(cfg, training, unresolved)
    # The older spelling of a full-iteration graph, cuda_graph_impl "local" with "full_iteration" in the scope (the
    # performance recipes still write it), is meshplan's (and the current Megatron-Core API's) cuda_graph_impl
    # "full_iteration" with no modules, as set_full_iteration_cuda_graph writes it (utils/cuda_graph.py).
    if "full_iteration" in (training.get("cuda_graph_scope") or []):
        training["cuda_graph_impl"] = "full_iteration"
        training["cuda_graph_scope"] = []
    # The layout is meshplan's parallelism key; an empty list / None means none.
    if par.get("pipeline_model_parallel_layout") in (None, []):
        par.pop("pipeline_model_parallel_layout", None)
    entry = {"name": name}
    if model_key:
        entry["model"] = model_key
    if hf:
        entry["hf_model_id"] = hf
    entry["kind"] = kind
    if alias_of:
        entry["alias_of"] = alias_of
    entry.update({
        "source": f"{module.path}:{'?'}",
        "cluster": {"gpu": gpu[0], "gpus": gpus} if gpu and gpus else ({"gpu": gpu[0]} if gpu else {}),
        "mixed_precision_recipe": mp_name,
        "parallelism": par,
        "training": training,
        "unresolved": unresolved,
    })
    return entry


# Megatron Bridge's LoRA dataclass (src/megatron/bridge/peft/lora.py:143-147 @ 067f987df03b: target_modules, dim 32,
# alpha 32, dropout 0.0): the fields that change no size meshplan computes. dim and target_modules are settings-table
# rows (lora_dim, lora_target_modules: their `peft.*` Bridge paths are read with the other rows).
LORA_TARGETS = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")  # settings.rs LoraTarget
LORA_SIZELESS = ("dim", "target_modules", "alpha", "lora_A_init_method", "lora_B_init_method")


def peft_entry(cfg, training, unresolved):
    """The recipe's cfg.peft as the plan's `peft`: a LoRA object (default_peft_config("lora"),
    recipes/utils/dataset_utils.py:71-72) is "lora"; any other PEFT (DoRA) or a LoRA field that changes sizes meshplan
    does not model (dropout, normalize_moe_lora, share_expert_adapters, ...) is listed under `unresolved`."""
    peft = cfg.fields.get("peft")
    if peft is None:
        return
    if isinstance(peft, Obj) and peft.kind == "LoRA":
        training["peft"] = "lora"
        targets = training.get("lora_target_modules")
        if isinstance(targets, list) and any(t not in LORA_TARGETS for t in targets):
            # Adapters on linears meshplan's LoRA model does not name (Mamba's in_proj / out_proj): the ones it names are
            # kept, the others listed.
            others = [t for t in targets if t not in LORA_TARGETS]
            training["lora_target_modules"] = [t for t in targets if t in LORA_TARGETS]
            unresolved.append({"field": "lora_target_modules", "path": "cfg.peft.target_modules", "reason": f"adapters on {', '.join(others)} are not modelled (meshplan sizes linear_qkv, linear_proj, linear_fc1, linear_fc2)"})
        for k in sorted(peft.fields):
            if k not in LORA_SIZELESS:
                unresolved.append({"field": "peft", "path": f"cfg.peft.{k}", "reason": f"LoRA.{k} is not modelled (meshplan sizes LoRA's dim and target_modules)"})
        return
    what = f"a {peft.kind} PEFT config" if isinstance(peft, Obj) else "a PEFT config not known statically"
    unresolved.append({"field": "peft", "path": "cfg.peft", "reason": f"{what}: meshplan sizes LoRA only (planned as full training)"})


def mark_mixed_precision_names(modules):
    """Every registered mixed-precision recipe function tags the object it returns with its name."""
    mpm = modules["megatron.bridge.training.mixed_precision"]
    for name, g in list(mpm.globals.items()):
        if isinstance(g, Func) and any(isinstance(d, ast.Name) and d.id == "register" for d in g.node.decorator_list):
            mpm.globals[name] = Tagged(g, name)


class Tagged(Func):
    def __init__(self, func, tag):
        super().__init__(func.module, func.node)
        self.tag = tag


def attach_published(out, here):
    """Each performance recipe that Bridge's performance summary measured in the release of the pinned commit (26.08):
    the table row's model TFLOP/s and tokens/s per GPU, with the row's source. A row is the recipe's when
    reference/bridge_perf_settings_26x.json matched it to the recipe's function at that release (same model, GPU,
    precision and layout) and the pinned recipe still runs that layout (GPUs, TP, PP, VP, CP, EP, GBS, MBS)."""
    try:
        rows = {r["id"]: r for r in json.load(open(f"{here}/reference/validation_runs.json"))}
        matched = json.load(open(f"{here}/reference/bridge_perf_settings_26x.json"))["rows"]
    except OSError:
        return
    by_name = {e["name"]: e for e in out if e.get("kind") == "perf"}
    for row_id, m in sorted(matched.items()):
        row = rows.get(row_id)
        e = by_name.get("perf." + str(m.get("name")))
        if row is None or e is None or row["release"] != "26.08" or m.get("fallback"):
            continue
        par, tr = e["parallelism"], e["training"]
        recipe_layout = (e["cluster"].get("gpus"), par.get("tensor_model_parallel_size", 1), par.get("pipeline_model_parallel_size", 1),
                         par.get("virtual_pipeline_model_parallel_size") or 1, par.get("context_parallel_size", 1),
                         par.get("expert_model_parallel_size", 1), tr.get("global_batch_size"), tr.get("micro_batch_size", 1))
        row_layout = (row["num_gpus"], row["tp"] or 1, row["pp"] or 1, row["vp"] or 1, row["cp"] or 1, row["ep"] or 1, row["gbs"], row["mbs"] or 1)
        if recipe_layout != row_layout:
            continue
        e.setdefault("published", []).append({"release": row["release"], "model_tflops_per_gpu": row["model_tflops_per_gpu"],
                                              "tokens_per_s_per_gpu": row["tokens_per_s_per_gpu"], "source": row["source"]})


def hf_id_of(node):
    """The first Hugging Face id ("ORG/NAME") a recipe function's body names, or None."""
    for n in ast.walk(node):
        v = getattr(n, "value", None) if isinstance(n, ast.Constant) else None
        if isinstance(v, str) and re.fullmatch(r"[A-Za-z][\w.-]*/[\w.-]+", v) and "path" not in v and not v.endswith((".py", ".json", ".yaml")):
            return v
    return None


def main():
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    here = __file__.rsplit("/scripts/", 1)[0]
    rows = settings_rows(open(f"{here}/crates/core/src/settings.rs").read())
    models = {m["key"]: m for m in json.load(open(f"{here}/crates/core/data/models.json"))}
    MESHPLAN_MP.extend(json.load(open(f"{here}/crates/core/data/mixed_precision.json")))
    modules = load_modules(git_dir, commit)
    mark_mixed_precision_names(modules)

    # Wrap run_function so a tagged mixed-precision factory names its result.
    base_run = Interp.run_function

    def run_function(self, f, args, kwargs):
        out = base_run(self, f, args, kwargs)
        if isinstance(f, Tagged) and isinstance(out, Obj):
            out.fields["__recipe__"] = f.tag
        return out

    Interp.run_function = run_function

    def preset_of(name):
        perf = name.startswith("perf.")
        name = name[len("perf."):] if perf else name
        if name.startswith(EXCLUDE):
            return None
        prefixes = {**PRESET_PREFIXES, **PERF_PREFIXES} if perf else PRESET_PREFIXES
        best = max((p for p in prefixes if name.startswith(p)), key=len, default=None)
        return prefixes.get(best)

    found = {}  # name -> (module, func node, alias_of)
    for mname, m in sorted(modules.items()):
        if not mname.startswith("megatron.bridge.recipes.") or mname.startswith("megatron.bridge.recipes.utils."):
            continue
        for s in m.tree.body:
            if isinstance(s, ast.FunctionDef) and not s.name.startswith("_") and s.name.endswith("_config"):
                found.setdefault(s.name, (m, s, None))
    # The performance recipes, named "perf.<function>" (their functions' names repeat some library recipes' names).
    for mname, m in sorted(modules.items()):
        if not mname.startswith("megatron.bridge.perf_recipes."):
            continue
        for s in m.tree.body:
            if isinstance(s, ast.FunctionDef) and not s.name.startswith("_") and s.name.endswith("_config"):
                found.setdefault("perf." + s.name, (m, s, None))
    for mname, m in sorted(modules.items()):
        if not mname.startswith("megatron.bridge.recipes."):
            continue
        for s in m.tree.body:
            if isinstance(s, ast.ImportFrom):
                for a in s.names:
                    if a.asname and a.asname != a.name and a.asname.endswith("_config") and a.name in found:
                        found.setdefault(a.asname, (m, None, a.name))

    by_hf = {}
    for k, v in models.items():
        hf = str(v.get("hf_id", ""))
        if "/" in hf:
            by_hf[hf.lower()] = k

    def stated_hf_id(name):
        """The Hugging Face id a library recipe builds its model from: the first AutoBridge.from_hf_pretrained call
        a run of the function makes (its `hf_path` default followed through helpers), else the first id its body
        names; None when it names none (a model provider class, e.g. GPTModelProvider175B)."""
        _, _, alias_of = found[name]
        tm, tnode, _ = found[alias_of or name]
        if tnode is None:
            return None
        mm = re.search(r"_(h100|b200|b300|gb200|gb300)_", alias_of or name)
        gpu = GPUS.get(mm.group(1)) if mm else GPUS["h100"]
        interp = Interp(modules, {"gpu_major": gpu[1], "gpu": mm.group(1) if mm else "h100", "moe": False, "num_layers": 0, "mtp_num_layers": 0})
        try:
            interp.run_function(Func(tm, tnode), [], {})
        except Raised:
            pass
        return interp.hf_ids[0] if interp.hf_ids else hf_id_of(tnode)

    def library_model(name):
        """(preset key or None, Hugging Face id or None) of a library recipe: the preset whose hf_id is the id its
        AutoBridge.from_hf_pretrained call names (HF_RENAMED: the current name of a renamed repository); where no id
        is stated, the recipe-name prefix (PRESET_PREFIXES)."""
        hf = stated_hf_id(name)
        if hf is None:
            return preset_of(name), None
        key = by_hf.get(HF_RENAMED.get(hf, hf).lower())
        by_prefix = preset_of(name)
        if by_prefix is not None and by_prefix != key:
            print(f"note: {name}: its model {hf} is preset {key}, not {by_prefix} as its name prefix says; the id wins", file=sys.stderr)
        return key, hf

    out = []
    skipped = []
    for name in sorted(found):
        hf = None
        if name.startswith("perf."):
            model_key = preset_of(name)
        else:
            model_key, hf = library_model(name)
        # A pretrain or SFT library recipe whose model has no preset but a Hugging Face id is read like the others,
        # with no `model` and its `hf_model_id`: planning it needs that model's config.json.
        readable_without_preset = hf is not None and not name.startswith("perf.") and re.search(r"_(pretrain|sft|peft)_", name)
        if model_key is None and not readable_without_preset:
            # Any other library recipe of a model meshplan has no preset for is listed, never dropped: with the
            # Hugging Face id its model is built from where it states one, which is what an import of it lacks.
            if not name.startswith("perf.") and re.search(r"_(pretrain|sft|peft|finetune)(_|$)", name):
                _, node, alias_of = found[name]
                tm, tnode, _ = found[alias_of or name]
                said = f" ({hf}, built by AutoBridge.from_hf_pretrained)" if hf else ""
                why = (f"its model{said} has no meshplan preset: give the model (its config.json, or meshplan import --model KEY) to plan this recipe's run" if hf
                       else "its model is built in the recipe (a model provider class, no Hugging Face id) and has no meshplan preset (PRESET_PREFIXES)")
                entry = {"name": name, "reason": why}
                if tnode is not None:
                    entry["source"] = f"{tm.path}:{tnode.lineno}"
                if hf:
                    entry["hf_model_id"] = hf
                skipped.append(entry)
            continue
        m, node, alias_of = found[name]
        kind = "pretrain" if "_pretrain_" in name else "sft" if "_sft_" in name else "peft" if "_peft_" in name else "other"
        if name.startswith("perf.") and kind != "pretrain":
            skipped.append({"name": name, "reason": "a performance recipe that does not pretrain (the performance tables meshplan reads are pre-training runs)"})
            continue
        kind = "perf" if name.startswith("perf.") else kind
        if kind == "other":
            skipped.append({"name": name, "reason": "not a pretrain, SFT or PEFT recipe"})
            continue
        target = alias_of or name
        tm, tnode, _ = found[target]
        mm = re.search(r"_(\d+)gpu_(h100|b200|b300|gb200|gb300)_", target)
        gpu = GPUS.get(mm.group(2)) if mm else None
        gpus = int(mm.group(1)) if mm else None
        if kind == "perf" and not mm:
            skipped.append({"name": name, "reason": "a performance recipe for a GPU meshplan's catalogue does not hold (VR200, R100)"})
            continue
        gpu_word = mm.group(2) if mm else "h100"
        preset = models[model_key]["config"] if model_key else {}
        # Whether the model is MoE decides apply_flex_dispatcher_backend; without a preset it is known only from the
        # model's config (None: the dispatcher fields it would set are unresolved).
        moe = (bool(preset.get("num_moe_experts")) or "E" in str(preset.get("hybrid_layer_pattern", preset.get("hybrid_override_pattern", "")))) if model_key else None
        interp = Interp(modules, {"gpu_major": (gpu or GPUS["h100"])[1], "gpu": gpu_word, "moe": moe,
                                  "num_layers": preset.get("num_layers", 0), "mtp_num_layers": preset.get("mtp_num_layers", 0)})
        try:
            cfg = interp.run_function(Func(tm, tnode), [], {})
        except Raised as e:
            skipped.append({"name": name, "reason": f"the static reading stopped: {e}"})
            continue
        if not isinstance(cfg, Obj):
            skipped.append({"name": name, "reason": "the function does not return a config the static reading knows"})
            continue
        entry = recipe_entry(name, model_key, kind, gpu, gpus, tm, cfg, interp, rows, alias_of, hf)
        # A DeepSeek-V4 recipe that changes the model's MTP depth trains another model than the preset: said, since
        # the recipes carry no model fields (the no-MTP SFT sets mtp_num_layers = None; its layout then has no MTP).
        # Kept to DeepSeek-V4: other families' recipes that set mtp_num_layers are listed in the zoo-dsv4 report.
        model_obj = cfg.fields.get("model") if isinstance(cfg, Obj) else None
        if model_key and model_key.startswith("deepseek-v4") and isinstance(model_obj, Obj) and "mtp_num_layers" in model_obj.fields:
            mtp_set = model_obj.fields["mtp_num_layers"]
            mtp_set = 0 if mtp_set is None else mtp_set
            if not isinstance(mtp_set, Unknown) and mtp_set != preset.get("mtp_num_layers", 0):
                entry["unresolved"].append({"field": "mtp_num_layers", "path": "cfg.model.mtp_num_layers", "reason": f"the recipe trains {mtp_set} MTP layers, the preset has {preset.get('mtp_num_layers', 0)}; recipes carry no model fields (set model.mtp_num_layers in the plan)"})
        for call in dict.fromkeys(interp.opaque_calls):
            entry["unresolved"].append({"field": "(helper)", "path": call, "reason": "a helper outside the recipe packages is handed the config; what it changes is not read"})
        entry["source"] = f"{tm.path}:{tnode.lineno}" + (f" (alias in {m.path})" if alias_of else "")
        if not mm:
            entry["unresolved"].append({"field": "cluster", "path": "(recipe name)", "reason": "the recipe's name states no GPU count and type"})
        out.append(entry)
    # A legacy alias runs its target's function: it is written as its name, target and source only, and
    # crates/core/src/recipes.rs fills in the target's reading (a third of the file otherwise repeats).
    by_name = {e["name"]: e for e in out}
    for i, e in enumerate(out):
        target = by_name.get(e.get("alias_of"))
        if target is not None and all(e.get(k) == target.get(k) for k in e if k not in ("name", "alias_of", "source")):
            out[i] = {"name": e["name"], "alias_of": e["alias_of"], "source": e["source"]}

    attach_published(out, here)
    doc = {
        "comment": "Megatron Bridge library recipes (pretrain, SFT and LoRA PEFT; model: the meshplan preset, found by the Hugging Face "
                   "id hf_model_id the recipe builds its model from; no model: a model without a preset, which the plan "
                   "must give) and performance recipes (skipped: every other recipe, with its reason), read statically by "
                   "scripts/extract-bridge-recipes.py from the source at the commit below (source = file:line of the "
                   "recipe function). parallelism and training use meshplan's plan keys; training holds every "
                   "settings.rs row the recipe sets, the mixed-precision recipe's fields included. unresolved: what the "
                   "static reading could not know, with the reason. Regenerate: scripts/extract-bridge-recipes.py "
                   "GIT_DIR COMMIT > crates/core/data/bridge_recipes.json",
        "source_repository": f"github:NVIDIA-NeMo/Megatron-Bridge@{commit}",
        "recipes": out,
        "skipped": skipped,
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
