#!/usr/bin/env bash
# Every test of meshplan, on a fresh machine or this one: installs what is missing
# (scripts/install-tools.sh), then the core's and the CLI's tests, the contract checks in
# ../shared/checks when they are beside the checkout, the benchmarks' build, and the web tests
# (native, wasm component tests in headless chromium, end-to-end against the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
SECONDS=0
stage() { echo "test-all: [$((SECONDS / 60))m$((SECONDS % 60))s] $*" >&2; }

# A clean build of everything here takes about 11 GB (target/ and the page's); say so before it
# fails halfway with cargo's bare status 101.
FREE_KB=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [[ -n "$FREE_KB" && "$FREE_KB" -lt 14000000 ]]; then
  echo "test-all: warning: only $((FREE_KB / 1048576)) GiB free here; a clean build needs about 11 GiB" >&2
fi

stage "installing what is missing"
scripts/install-tools.sh

stage "core, CLI and search-worker tests (cargo test -p meshplan-core -p meshplan-cli -p meshplan-search-worker)"
cargo test --quiet -p meshplan-core -p meshplan-cli -p meshplan-search-worker

stage "the core builds for wasm32 on its own"
cargo build --quiet -p meshplan-core --target wasm32-unknown-unknown

stage "benchmarks build (cargo bench --no-run; figures come from cargo bench)"
cargo bench --quiet -p meshplan-core --no-run

CHECKS=${MESHPLAN_CHECKS:-../shared/checks}
if [[ -d "$CHECKS" ]]; then
  stage "contract checks in $CHECKS against target/debug/meshplan"
  cargo build --quiet -p meshplan-cli
  scripts/contract-checks.sh target/debug/meshplan "$CHECKS"
else
  stage "no contract checks at $CHECKS (set MESHPLAN_CHECKS to run them)"
fi

stage "web tests"
scripts/test-web.sh
stage "all tests passed"
