#!/usr/bin/env bash
# tpusim sweep: 128 timing-level points (mlp and cnn x batch 32..256 x cores
# 1..8 x bf16, bf16x3 x tpu-v2-8, tpu-v3-8), run with -j 1 and with -j 2,
# alternating, ROUNDS times (default 5); the CSVs must be the same bytes and
# -j 2 should take about half the time. Prints the best and the median of
# each (on a shared host the best is the nearest to a quiet machine) and the
# load average. SWEEP_PREFIX runs each sweep under a command, e.g.
# SWEEP_PREFIX="chrt -f 10" (root) to keep other users' processes off the
# cores for the half second a sweep takes. docs/BENCHMARKS.md.
set -eu
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
args="train --model mlp,cnn --batch 32,64,128,256 --cores 1,2,4,8 --precision bf16,bf16x3 --chip tpu-v2-8,tpu-v3-8 --level timing --data synthetic --steps-per-epoch 2"
t() { rm -rf "$d/$1"; local s=$(date +%s.%N); ${SWEEP_PREFIX:-} "$TPUSIM" sweep --no-plot --out "$d/$1" -j "$2" $args > /dev/null; echo "$(date +%s.%N) $s"; }
load0=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "${ROUNDS:-5}"); do
  echo "1 $(t j1 1)" >> "$d/times"; echo "2 $(t j2 2)" >> "$d/times"
  cmp -s "$d/j1/results.csv" "$d/j2/results.csv" || { echo "sweep: -j 1 and -j 2 CSVs differ"; exit 1; }
done
n=$(($(wc -l < "$d/j1/results.csv") - 1))
/usr/bin/python3 - "$d/times" "$n" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import statistics, sys
t = {1: [], 2: []}
for line in open(sys.argv[1]):
    j, end, start = line.split(); t[int(j)].append(float(end) - float(start))
b1, b2, m1, m2 = min(t[1]), min(t[2]), statistics.median(t[1]), statistics.median(t[2])
print("sweep   %s timing points, %d rounds   -j 1 best %.2f s median %.2f s   -j 2 best %.2f s median %.2f s   "
      "ratio j2/j1 best %.2f median %.2f   (load average %s -> %s)"
      % (sys.argv[2], len(t[1]), b1, m1, b2, m2, b2 / b1, m2 / m1, sys.argv[3], sys.argv[4]))
PY
