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
# corpus CMD...: the bad-input corpus format, one line each on stdin:
#   >FILE TEXT                   writes TEXT (printf %b: \n, \0, \xHH) to FILE
#   =FILE...                     files made otherwise, to be named like those
#   STATUS|ARGS|MESSAGE[|...]    runs CMD ARGS (ARGS split on spaces) and
#                                checks its exit status and that stderr has
#                                every MESSAGE; when ARGS names a file written
#                                by a '>' line, stderr must name that file too
#                                (the file, and the field in MESSAGE). A run
#                                that succeeds prints no nan or inf.
# Blank lines and lines starting with # are skipped. Adds the cases run to
# CORPUS_CASES.
CORPUS_CASES=0
corpus() {
  local line want args msgs m f files="" named
  while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;;
      '>'*) f=${line%% *}; f=${f#>}; printf '%b' "${line#* }" > "$f"; files="$files $f"; continue ;;
      '='*) files="$files ${line#=}"; continue ;;
    esac
    IFS='|' read -r want args msgs <<<"$line"
    # shellcheck disable=SC2086
    expect_status "$want" "$@" $args </dev/null
    CORPUS_CASES=$((CORPUS_CASES + 1))
    if [ "$want" = 0 ]; then
      ! grep -qiE '(^|[^a-z0-9_.])-?(nan|inf|infinity)([^a-z0-9_.]|$)' "$T/out.txt" || die "'$*' $args printed nan or inf: $OUT"
    else
      [ -n "$msgs" ] || die "corpus case '$line' names no message"
    fi
    while [ -n "$msgs" ]; do
      m=${msgs%%|*}; expect_err_contains "$m"
      [ "$m" = "$msgs" ] && break
      msgs=${msgs#*|}
    done
    named=""
    for f in $args; do case " $files " in *" ${f#*=} "*) named=${f#*=} ;; esac; done
    [ -z "$named" ] || [ "$want" = 0 ] || expect_err_contains "$named"
  done
}
# json_get KEY FILE: value of a top-level or dotted key via python3's json.
json_get() { /usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[2]))
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1" "$2"; }
. "$1"
