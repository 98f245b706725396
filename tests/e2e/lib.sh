#!/usr/bin/env bash
# Helpers for end-to-end tests, then runs the test file given as $1.
set -euo pipefail
die() { echo "FAIL: $*" >&2; exit 1; }
# expect_status CODE cmd...: runs cmd, checks its exit status, keeps stderr in $ERR.
expect_status() {
  local want=$1; shift
  set +e; "$@" >"$T/out.txt" 2>"$T/err.txt"; local got=$?; set -e
  OUT=$(cat "$T/out.txt"); ERR=$(cat "$T/err.txt")
  [ "$got" = "$want" ] || die "'$*' exited $got, expected $want; stderr: $ERR"
}
# expect_err_contains TEXT: the last expect_status's stderr has TEXT.
expect_err_contains() { grep -qF -- "$1" "$T/err.txt" || die "stderr lacks '$1': $ERR"; }
expect_out_contains() { grep -qF -- "$1" "$T/out.txt" || die "stdout lacks '$1': $OUT"; }
# json_get KEY FILE: value of a top-level or dotted key via python3's json.
json_get() { /usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1" "$2"; }
. "$1"
