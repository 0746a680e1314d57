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
  # trunk's own backtrace follows cargo's message and can push it out of a CI log's tail: the
  # compiler's errors and any disk or signal failure are repeated last, with the disk's free space.
  echo "build-web: the build's errors, again:" >&2
  grep -E '^(error|warning: unused)|No space left|signal: |could not compile|LLVM ERROR' "$LOG" | head -40 >&2 || true
  df -h . >&2 || true
  echo "build-web: FAILED" >&2
  exit 1
fi
