#!/usr/bin/env bash
# The release build of the planner into dist/: trunk with npm's wasm-opt (binaryen 132) first
# on PATH. Quiet unless the build fails. Assumes scripts/install-tools.sh has run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
LOG=$(mktemp -t meshplan-build.XXXXXX)
trap 'rm -f "$LOG"' EXIT
echo "build-web: trunk build --release" >&2
if ! trunk build --release >"$LOG" 2>&1; then
  cat "$LOG" >&2
  echo "build-web: FAILED" >&2
  exit 1
fi
