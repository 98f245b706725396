#!/usr/bin/env bash
# tpusim sweep: 128 timing-level points (mlp and cnn x batch 32..256 x cores
# 1..8 x bf16, bf16x3), run with -j 1 and with -j 2; the CSVs must be the
# same bytes and -j 2 should take about half the time. docs/BENCHMARKS.md.
set -eu
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
args="train --model mlp,cnn --batch 32,64,128,256 --cores 1,2,4,8 --precision bf16,bf16x3 --chip tpu-v2-8,tpu-v3-8 --level timing --data synthetic --steps-per-epoch 2"
t() { local s=$(date +%s.%N); "$TPUSIM" sweep --no-plot --out "$d/$1" -j "$2" $args > /dev/null; /usr/bin/python3 -c "import sys; print(float(sys.argv[1]) - float(sys.argv[2]))" "$(date +%s.%N)" "$s"; }
t1=$(t j1 1); t2=$(t j2 2)
cmp -s "$d/j1/results.csv" "$d/j2/results.csv" || { echo "sweep: -j 1 and -j 2 CSVs differ"; exit 1; }
n=$(($(wc -l < "$d/j1/results.csv") - 1))
printf 'sweep   %d timing points   -j 1 %.2f s   -j 2 %.2f s   ratio j2/j1 %.2f\n' "$n" "$t1" "$t2" "$(/usr/bin/python3 -c "import sys; print(float(sys.argv[1]) / float(sys.argv[2]))" "$t2" "$t1")"
