#!/usr/bin/env bash
# The calibration's figures recomputed, not read (docs/calibration.md, "What holds now"): the in-sample and validation
# errors with the embedded constants, and every leave-one-group-out fold refitted on the other groups, each held to
# its bound (crates/core/examples/calibrate.rs, the *_BOUND constants), and data/perf_constants.json's record checked
# against what was computed. Opt-in: the refits take about 20 s in release (minutes in debug), so `cargo test` runs
# only the recorded figures' checks.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
exec cargo test --release --quiet -p meshplan-core --test perf_calibration -- --include-ignored "$@"
