#!/usr/bin/env bash
# Serves the planner's release build on http://127.0.0.1:${PORT:-8080}/ , installing whatever
# is missing first (scripts/install-tools.sh --build-only). Usage: scripts/serve.sh [PORT]
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${1:-${PORT:-8080}}
scripts/install-tools.sh --build-only
scripts/build-web.sh
echo "serve: meshplan at http://127.0.0.1:$PORT/ (Ctrl-C stops it)" >&2
exec node scripts/static-server.mjs dist "$PORT"
