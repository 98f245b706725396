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
# has_xvfb: Xvfb and xvfb-run are installed (make deps installs them).
has_xvfb() { command -v xvfb-run >/dev/null && command -v Xvfb >/dev/null; }
# window CMD...: runs CMD in a real window under Xvfb (SDL's own video
# driver, not the dummy one). Under ASan, SDL's dlopen'd modules stay mapped
# so that LeakSanitizer can name what they allocate (keep_dso.c says why),
# and lsan_window.supp's suppressions apply.
E2E_DIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
window() {
  local keep=()
  if [ "${MODE:-}" = asan ]; then
    [ -f "$T/keep_dso.so" ] || cc -shared -fPIC -o "$T/keep_dso.so" "$E2E_DIR/keep_dso.c" \
      || die "cannot build keep_dso.so"
    keep=(LD_PRELOAD="$T/keep_dso.so" ASAN_OPTIONS=verify_asan_link_order=0)
  fi
  xvfb-run -a -s "-screen 0 1400x900x24" env -u SDL_VIDEODRIVER "${keep[@]}" \
    LSAN_OPTIONS=suppressions=$E2E_DIR/lsan_window.supp "$@"
}
. "$1"
