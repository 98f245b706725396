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
# bad_inputs CMD...: for each line "FILE|TEXT|MESSAGE[|MESSAGE...]" on stdin
# (blank lines skipped), writes TEXT to FILE (printf %b: \n is a newline)
# and runs CMD FILE, which must exit 2 with each MESSAGE in its stderr.
bad_inputs() {
  local line file text msgs m
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    IFS='|' read -r file text msgs <<<"$line"
    printf '%b' "$text" > "$file"
    expect_status 2 "$@" "$file" </dev/null
    while :; do
      m=${msgs%%|*}; expect_err_contains "$m"
      [ "$m" = "$msgs" ] && break
      msgs=${msgs#*|}
    done
  done
}
# json_get KEY FILE: value of a top-level or dotted key via python3's json.
json_get() { /usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1" "$2"; }
. "$1"
