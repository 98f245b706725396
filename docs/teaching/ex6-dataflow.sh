#!/usr/bin/env bash
# Exercise 6 of docs/TEACHING.md: AlexNet's layers on one 128x128 array in
# each of SCALE-Sim's dataflows -- weight-, output- and input-stationary --
# with `tpusim scalesim --compat scalesim` (SCALE-Sim v2's cycles exactly,
# docs/SCALESIM.md), and a bar chart of the cycles per layer, one bar per
# dataflow, drawn by gnuplot (Debian's gnuplot-nox).
#
#   ex6-dataflow.sh TPUSIM OUT.png
#
# Writes OUT.png and, beside it, OUT.dat (layer, M, N, K, then cycles in ws,
# os and is) and OUT.gp (the gnuplot script: edit it and rerun `gnuplot
# OUT.gp` to restyle the chart).
set -eu
tpusim=$1 out=$2
base=${out%.png}
docs=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in ws os is; do
  "$tpusim" scalesim -c "$docs/scalesim/tpu_128.cfg" -t "$docs/scalesim/alexnet.csv" \
    --compat scalesim --dataflow "$d" -p "$tmp" --json > "$tmp/$d.json"
done
/usr/bin/python3 - "$tmp" > "$base.dat" <<'PY'
import json, sys
r = {d: json.load(open("%s/%s.json" % (sys.argv[1], d)))["layers"] for d in ("ws", "os", "is")}
print("# layer M N K ws_cycles os_cycles is_cycles")
for i, l in enumerate(r["ws"]):
    print(l["name"], l["m"], l["n"], l["k"], *(r[d][i]["cycles"] for d in ("ws", "os", "is")))
PY
cat > "$base.gp" <<GP
set terminal pngcairo size 960,540 noenhanced
set output '$base.png'
set title 'AlexNet on one 128x128 array: cycles per layer by dataflow (SCALE-Sim v2 model)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [5000:*]
set ylabel 'cycles (log scale)'
set key top left
set grid ytics
plot '$base.dat' using 5:xtic(1) title 'weight-stationary (ws)' lc rgb '#e0b000', \\
     '' using 6 title 'output-stationary (os)' lc rgb '#3cb371', \\
     '' using 7 title 'input-stationary (is)' lc rgb '#6fa8dc'
GP
gnuplot "$base.gp"
