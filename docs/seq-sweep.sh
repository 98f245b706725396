#!/usr/bin/env bash
# BERT-base's training step against its sequence length (docs/MODELS.md,
# "Attention and sequence length"): bert_base@SEQ for SEQ 128..4096, one
# data-parallel step of batch 8 (1 sample per core) on tpu-v3-8 at the timing
# level, each split by `tpusim model --json` into attention's quadratic parts
# (scores QK^T with scale and mask, softmax, weighted sum PV: O(SEQ^2)), its
# projections and the rest of the step (feed-forward, layer norms,
# embeddings, optimizer: O(SEQ)). Writes OUT.dat (a row per SEQ, times in ms)
# and OUT.png (gnuplot), and prints the table.
# Usage: docs/seq-sweep.sh [OUT[.png]] (default docs/sweep-seq); TPUSIM names the
# binary (default ./tpusim); CHIP and BATCH override tpu-v3-8 and 8.
set -euo pipefail
TPUSIM=${TPUSIM:-./tpusim}
out=${1:-docs/sweep-seq}
out=${out%.png}
chip=${CHIP:-tpu-v3-8}
batch=${BATCH:-8}
{
  echo "# seq step_ms quadratic_ms projections_ms other_ms quadratic_share ($chip, batch $batch)"
  for seq in 128 256 512 1024 2048 4096; do
    "$TPUSIM" model "bert_base@$seq" --batch "$batch" --chip "$chip" --json |
      /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["step"]
parts = {"projections": 0.0, "scores": 0.0, "softmax": 0.0, "weighted sum": 0.0}
for l in d["layers"]:
    for p in l.get("attention_parts", []):
        parts[p["part"]] += p["cycles"]
step = d["step_cycles"]
t = sum(l["time_s"] for l in d["layers"]) / sum(l["cycles"] for l in d["layers"]) * 1e3   # ms per cycle
quad = parts["scores"] + parts["softmax"] + parts["weighted sum"]
print(sys.argv[1], "%.3f %.3f %.3f %.3f %.3f" % (step * t, quad * t, parts["projections"] * t,
      (step - quad - parts["projections"]) * t, quad / step))
' "$seq"
  done
} > "$out.dat"
cat "$out.dat"
gnuplot -e "set terminal pngcairo size 900,560 noenhanced; set output '$out.png';
  set title 'bert_base, one training step on $chip (batch $batch): time against sequence length';
  set xlabel 'sequence length (tokens)'; set ylabel 'simulated time per step (ms)';
  set logscale xy 2; set grid; set key top left;
  plot '$out.dat' using 1:2 with linespoints lw 2 title 'whole step',
       '' using 1:3 with linespoints lw 2 title 'attention: scores, softmax, weighted sum (SEQ^2)',
       '' using 1:4 with linespoints lw 2 title 'attention: projections (SEQ)',
       '' using 1:5 with linespoints lw 2 title 'everything else (SEQ)'"
