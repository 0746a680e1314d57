#!/usr/bin/env python3
"""Issue 23's Advisor figure from advisor_ranks' output: the share of published runs whose tuned layout is in the top 5
or predicted within 10% of the best pick (the issue's "top 5, or within 10% of the best").

    cargo run -p meshplan-core --example advisor_ranks -- reference/validation_runs.json | python3 scripts/advisor-hit-rate.py
"""
import re
import sys

rows = hits = 0
for line in sys.stdin:
    f = line.split()
    if len(f) < 10 or not f[0].startswith(("mbval-", "mbridge-")) or "skipped" in line:
        continue
    rank, ratio = f[7], f[8]
    rows += 1
    top5 = rank.isdigit() and int(rank) <= 5
    close = re.fullmatch(r"\d+\.\d+", ratio) is not None and float(ratio) >= 0.9
    hits += top5 or close
print(f"{rows} runs: published layout in the top 5 or within 10% of the best predicted: {hits} ({100.0 * hits / max(rows, 1):.0f}%)")
