#!/usr/bin/env bash
# End-to-end tests of the tpusim binary: every tests/e2e/t_*.sh is run with
# $TPUSIM set and a scratch directory in $T; each prints nothing on success.
# Prints "N passed, N failed" at the end and exits non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${TPUSIM:?set TPUSIM to the tpusim binary}"
export TPUSIM=$(cd "$(dirname "$TPUSIM")" && pwd)/$(basename "$TPUSIM")
# The repository root, for tests that read shipped files (examples, docs).
export TPU_ROOT=$(cd "$here/../.." && pwd)
pass=0; fail=0
for t in "$here"/t_*.sh; do
  [ -e "$t" ] || continue
  T=$(mktemp -d); export T
  if out=$(cd "$T" && bash "$here/lib.sh" "$t" 2>&1); then
    pass=$((pass + 1))
    # a test that skips part of itself says so: "NAME: SKIP: why"
    echo "$out" | grep -F 'SKIP' || true
  else
    fail=$((fail + 1)); echo "e2e FAIL: $(basename "$t")"; echo "$out" | sed 's/^/    /' | tail -40
  fi
  rm -rf "$T"
done
echo "e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
