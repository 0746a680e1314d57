#!/usr/bin/env python3
"""Issue 23's Advisor figures from advisor_ranks' output: the share of published runs whose tuned layout is in the top 5
or predicted within 10% of the best pick (the issue's "top 5, or within 10% of the best"), and in the top 5 or tied
with #1 (predicted within the step-time model's median error on how two runs compare, the band the Advisor marks as a
tie: crates/core/data/perf_constants.json median_abs_ratio_error; `--band tflops` uses the in-sample median |error|
median_abs_tflops_error, the band before the ninth session).

    cargo run -p meshplan-core --example advisor_ranks -- reference/validation_runs.json | python3 scripts/advisor-hit-rate.py
"""
import json
import os
import re
import sys

key = "median_abs_tflops_error" if sys.argv[1:] == ["--band", "tflops"] else "median_abs_ratio_error"
band = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "core", "data", "perf_constants.json")))[key]
rows = hits = tied_hits = 0
for line in sys.stdin:
    f = line.split()
    if len(f) < 10 or not f[0].startswith(("mbval-", "mbridge-")) or "skipped" in line:
        continue
    rank, ratio = f[7], f[8]
    rows += 1
    top5 = rank.isdigit() and int(rank) <= 5
    close = re.fullmatch(r"\d+\.\d+", ratio) is not None and float(ratio) >= 0.9
    hits += top5 or close
    # The ratio is the published layout's predicted throughput over the best pick's: tied when the best's step is
    # at most (1 + band) times faster.
    tied = re.fullmatch(r"\d+\.\d+", ratio) is not None and float(ratio) >= 1.0 / (1.0 + band)
    tied_hits += top5 or tied
print(f"{rows} runs: published layout in the top 5 or within 10% of the best predicted: {hits} ({100.0 * hits / max(rows, 1):.0f}%)")
print(f"{rows} runs: published layout in the top 5 or tied with #1 (within {100 * band:.1f}%): {tied_hits} ({100.0 * tied_hits / max(rows, 1):.0f}%)")
