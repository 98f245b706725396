#!/usr/bin/env bash
# make fuzz: runs each libFuzzer target (build/fuzz/tests/fuzz/NAME-fuzz)
# for $FUZZ_SECONDS from a working copy of its seed corpus, then writes
# build/fuzz/report.md ($FUZZ_REPORT): executions, executions per second, corpus size,
# coverage and findings per target. Exit 1 if any target found anything
# (its reproducer is in build/fuzz/crashes/: copy it into tests/fuzz/NAME/
# as crash-DESCRIPTION once fixed, so make test replays it for ever).
set -u
: "${FUZZ_SECONDS:=600}"
out=build/fuzz; mkdir -p "$out/crashes" "$out/logs"
report=${FUZZ_REPORT:-$out/report.md}   # FUZZ_REPORT: for runs side by side
{
  echo "| target | seconds | executions | exec/s | corpus | coverage (edges) | findings |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$report.tmp"
bad=0
for name in "$@"; do
  bin=$out/tests/fuzz/$name-fuzz
  work=$out/corpus/$name; mkdir -p "$work"
  log=$out/logs/$name.log
  echo "fuzz: $name for ${FUZZ_SECONDS}s"
  # -timeout: an input that takes 10 s is a hang (a finding); -rss_limit_mb:
  # one that needs 2 GiB is one too. Leaks are findings (-detect_leaks=1).
  TMPDIR=$out "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$out/crashes/$name-" "$work" "tests/fuzz/$name" > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(ls "$work" | wc -l)
  found=$(ls "$out/crashes" | grep -c "^$name-" || true)
  [ "$rc" = 0 ] && [ "$found" = 0 ] || bad=1
  echo "| $name | $FUZZ_SECONDS | ${runs:-?} | ${eps:-?} | $corp | ${cov:-?} | $found$([ "$rc" = 0 ] || echo " (exit $rc, see $log)") |" >> "$report.tmp"
done
mv "$report.tmp" "$report"
cat "$report"
exit $bad
