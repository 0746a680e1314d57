#!/usr/bin/env bash
# The contract checks: every CHECKS/*.py driven against the meshplan binary, as an outside user would.
#   scripts/contract-checks.sh BINARY [CHECKS]      (CHECKS defaults to ../shared/checks)
# A check fails the run when it exits non-zero, prints a FAIL line, or raises (a Python traceback):
# a check that crashed has checked nothing.
set -euo pipefail
BINARY=${1:?usage: scripts/contract-checks.sh BINARY [CHECKS]}
CHECKS=${2:-../shared/checks}
shopt -s nullglob
checks=("$CHECKS"/*.py)
if (( ${#checks[@]} == 0 )); then
  echo "contract-checks: no *.py checks in $CHECKS" >&2
  exit 1
fi
failed=0
for check in "${checks[@]}"; do
  status=0
  out=$(python3 "$check" "$BINARY" 2>&1) || status=$?
  echo "$(basename "$check"): $(tail -n 1 <<<"$out")"
  if (( status != 0 )) || grep -qE '^(FAIL|Traceback \(most recent call last\):)' <<<"$out"; then
    echo "$out" >&2
    echo "contract-checks: $check failed (exit status $status)" >&2
    failed=1
  fi
done
exit "$failed"
