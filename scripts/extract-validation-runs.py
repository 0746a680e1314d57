#!/usr/bin/env python3
"""Extract the Megatron Bridge pre-training performance tables of releases 26.02 and later into
reference/validation_runs.json (validation data for the step-time model: never fitted, see docs/calibration.md).

    python3 scripts/extract-validation-runs.py PATH/TO/Megatron-Bridge-git-dir [COMMIT]

Reads docs/performance-summary.md and docs/performance-summary-archive.md at COMMIT (default 067f987df03b, the
snapshot the rest of meshplan cites) with `git show`, keeps the "Pre-Training Performance" tables of every
"NN.NN NeMo Container" section whose release is >= 26.02, and writes rows in the field names of
reference/calibration_runs.json (so the calibrate example maps both the same way)."""
import json, re, subprocess, sys

COMMIT = "067f987df03b"
FILES = ["docs/performance-summary.md", "docs/performance-summary-archive.md"]
MODELS = {  # table name -> meshplan preset (None: no preset, the row is kept and skipped by the mapping)
    "LLAMA3_8B": "llama-3.1-8b", "LLAMA3_70B": "llama-3.1-70b", "LLAMA3.1_405B": "llama-3.1-405b",
    "DeepSeekV3": "deepseek-v3", "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "Kimi_K2": "kimi-k2", "Nemotron_3_Nano": "nemotron-3-nano-30b-a3b", "Nemotron_3_Super": "nemotron-3-super-120b-a12b",
    "Nemotron_3_Ultra": "nemotron-3-ultra-550b-a55b", "GPT OSS 120B": "gpt-oss-120b", "DeepSeekV4 Flash": "deepseek-v4-flash",
}
SYSTEMS = {"DGX-GB300": "GB300", "DGX-GB200": "GB200", "DGX-B300": "B300", "DGX-B200": "B200", "DGX-H100": "H100-SXM-80GB"}
PRECISION = {"BF16": "bf16", "FP8": "fp8_current_scaling", "FP8-CS": "fp8_current_scaling", "MXFP8": "mxfp8",
             "FP8-MX": "mxfp8", "NVFP4": "nvfp4"}


def num(cell):
    """'661[^note]' -> 661, '37556 (36108)' -> 37556, 'n/a' -> None."""
    cell = re.sub(r"\[\^[^\]]*\]", "", cell).strip()
    m = re.match(r"^-?[0-9.]+", cell)
    if not m:
        return None
    x = float(m.group(0))
    return int(x) if x.is_integer() else x


def release_key(rel):
    return tuple(int(p) for p in rel.split("."))


def rows_of(text, path, commit):
    out = []
    release = section = model = None
    header = None
    for line in text.splitlines():
        if m := re.match(r"^## ([0-9.]+) NeMo Container", line):
            release, section, header = m.group(1), None, None
        elif line.startswith("## "):
            release = None
        elif line.startswith("### "):
            section, header = line[4:].strip(), None
        elif m := re.match(r"^#### Model: (.+)$", line):
            model, header = m.group(1).strip(), None
        elif line.startswith("|") and release and section == "Pre-Training Performance":
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("System", "Model"):
                header = cells
                continue
            if header is None or set(cells[0]) <= set("-: "):
                continue
            if release_key(release) < (26, 2):
                continue
            r = dict(zip(header, cells))
            out.append((release, model, r, path))
    return out


def main():
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else COMMIT
    runs = []
    for path in FILES:
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True,
                              capture_output=True, text=True).stdout
        for release, model, r, _ in rows_of(text, path, commit):
            system = r["System"]
            prec = r["Precision"]
            n = num(r["#-GPUs"])
            runs.append({
                "id": f"mbval-{len(runs) + 1:04d}",
                "source": f"github:NVIDIA-NeMo/Megatron-Bridge@{commit}:{path} [{release} NeMo Container > Pre-Training Performance > Model: {model}]",
                "source_type": "vendor_benchmark_table", "reliability": "high",
                "framework": "Megatron-Bridge (NeMo container)", "release": release, "task": "pretrain",
                "model": model, "model_key": MODELS.get(model),
                "gpu_type": SYSTEMS.get(system, system), "system": system, "num_gpus": n,
                "precision": prec, "precision_normalized": PRECISION.get(prec),
                "seq_len": num(r["Sequence Length"]), "gbs": num(r["GBS"]), "mbs": num(r["MBS"]),
                "fsdp": num(r.get("FSDP", "0")) or 0,
                "tp": num(r["TP"]), "pp": num(r["PP"]), "cp": num(r["CP"]), "vp": num(r["VP"]), "ep": num(r["EP"]) or 1,
                "etp": None, "tokens_per_s_per_gpu": num(r["Tokens / sec / GPU"]),
                "model_tflops_per_gpu": num(r["Model TFLOP / sec / GPU"]),
                "notes": "MoE runs force-balance the token distribution and are token-dropless (page footnote)."
                         + (" Footnoted TFLOP/s: " + r["Model TFLOP / sec / GPU"] if "[^" in r["Model TFLOP / sec / GPU"] else ""),
            })
    json.dump(runs, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
