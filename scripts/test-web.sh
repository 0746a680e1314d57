#!/usr/bin/env bash
# The web planner's tests: its native unit tests, the wasm-bindgen-test component tests in
# headless chromium, then the release build and the playwright-core end-to-end tests against it.
# Installs whatever is missing first (scripts/install-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-tools.sh
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

echo "test-web: native unit tests (cargo test -p meshplan-web)" >&2
cargo test --quiet -p meshplan-web

echo "test-web: component tests in headless chromium (wasm-bindgen-test)" >&2
LOG=$(mktemp -t meshplan-wasm-test.XXXXXX)
trap 'rm -f "$LOG"' EXIT
# The runner takes no --quiet; keep its summary lines, and all of it when it fails.
if CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver)} \
    cargo test -p meshplan-web --target wasm32-unknown-unknown --tests >"$LOG" 2>&1; then
  grep -E "^test result" "$LOG" || true
else
  cat "$LOG" >&2
  echo "test-web: component tests FAILED" >&2
  exit 1
fi

scripts/build-web.sh

echo "test-web: end-to-end tests against dist/ in headless chromium (playwright-core)" >&2
node --test --test-concurrency=1 tests/e2e/
