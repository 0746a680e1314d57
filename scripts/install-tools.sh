#!/usr/bin/env bash
# Installs what the web planner needs to build and test, skipping whatever is already there:
#   the wasm32 target, trunk 0.21.14, wasm-bindgen-cli 0.2.130, npm's binaryen 132 and
#   playwright-core and axe-core (npm ci), and, unless --build-only, Debian's chromium and chromium-driver.
# Versions and why they are pinned: ../shared/toolchain.md. Quiet: one line per install;
# a failing step prints the end of its log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_ONLY=0
[[ "${1:-}" == "--build-only" ]] && BUILD_ONLY=1

TRUNK_VERSION=0.21.14
WASM_BINDGEN_VERSION=0.2.130
LOG=$(mktemp -t meshplan-install.XXXXXX)
trap 'rm -f "$LOG"' EXIT

step() { # step "what" command...
  local what=$1; shift
  echo "install-tools: $what" >&2
  if ! "$@" >"$LOG" 2>&1; then
    echo "install-tools: FAILED: $what" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

# A registry that stalls (seen in CI: npm's "EIDLETIMEOUT Idle timeout reached for host
# registry.npmjs.org:443") fails one attempt, not the run: network steps are tried three times.
step_retry() { # step_retry "what" command...
  local what=$1; shift
  local attempt
  for attempt in 1 2 3; do
    echo "install-tools: $what (attempt $attempt of 3)" >&2
    if "$@" >"$LOG" 2>&1; then return 0; fi
    echo "install-tools: attempt $attempt failed: $what" >&2
    tail -n 5 "$LOG" >&2
    [[ $attempt -lt 3 ]] && sleep $((attempt * 15))
  done
  echo "install-tools: FAILED after 3 attempts: $what" >&2
  tail -n 40 "$LOG" >&2
  exit 1
}

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  step "rustup target add wasm32-unknown-unknown" rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen-cli without --locked: its lockfile pins a webpki-roots the registry no longer has.
if [[ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]]; then
  step_retry "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 1.5 min)" \
    cargo install --quiet --debug wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# trunk 0.22 needs a newer rustc than 1.95. Both tools are built unoptimised (--debug): that takes
# a quarter of the time on two cores (trunk: 4 min against 17), and neither is a bottleneck.
if [[ "$(trunk --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]]; then
  step_retry "cargo install trunk $TRUNK_VERSION (about 4 min)" \
    cargo install --quiet --debug trunk --version "$TRUNK_VERSION" --locked --force
fi

apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

if ! command -v npm >/dev/null; then
  step_retry "apt-get install nodejs npm" apt_install nodejs npm
fi

if [[ $BUILD_ONLY -eq 0 ]] && ! { [[ -x /usr/bin/chromium ]] && command -v chromedriver >/dev/null; }; then
  step_retry "apt-get install chromium chromium-driver (about 70 s)" apt_install chromium chromium-driver
fi

# npm ci again whenever package-lock.json is newer than the installed tree.
if [[ ! -x node_modules/.bin/wasm-opt || ! -d node_modules/playwright-core \
      || package-lock.json -nt node_modules/.package-lock.json ]]; then
  step_retry "npm ci (binaryen 132, playwright-core, axe-core)" \
    npm ci --no-audit --no-fund --loglevel=error --fetch-retries=5 --fetch-retry-mintimeout=5000 --fetch-timeout=120000
fi

# Debian's binaryen 108 breaks wasm-bindgen 0.2.130's output; make sure npm's is the one used.
if [[ "$("$ROOT/node_modules/.bin/wasm-opt" --version)" != *version_132* ]]; then
  echo "install-tools: node_modules/.bin/wasm-opt is not binaryen 132" >&2
  exit 1
fi
