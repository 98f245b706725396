#!/usr/bin/env bash
# The stall breakdowns of docs/COMPILER.md, before and after the step
# compiler, from one binary: "before" is every mechanism off and the float32
# policy (the lowering as it was before them: the same cycles, checked by the
# golden record tr-resnet50-off), "after" the defaults. One timing-level step
# per row on synthetic data.
#   bash docs/compiler/before_after.sh [./tpusim]
set -eu
TPUSIM=${1:-./tpusim}
OFF="--dtype-policy float32 --set compiler.fusion=false --set compiler.implicit_conv=false --set compiler.memory_planning=false"
echo "| model | chip | batch | compiler | step (ms) | images/s | MXU util | mxu_busy | vpu_busy | weight_load | memory_wait | collective_wait | HBM GB/core |"
echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
while read -r model chip batch; do
  for mode in before after; do
    extra=""; [ $mode = before ] && extra=$OFF
    # shellcheck disable=SC2086
    "$TPUSIM" train --model "$model" --chip "$chip" --level timing --data synthetic --synthetic-n "$batch" \
      --batch "$batch" --steps-per-epoch 1 --epochs 1 --json $extra > /tmp/ba.$$.json 2>/tmp/ba.$$.err || {
      echo "| $model | $chip | $batch | $mode | refused: $(tr '|' '/' < /tmp/ba.$$.err | cut -c1-160) | | | | | | | | |"; continue; }
    python3 - "$model" "$chip" "$batch" "$mode" /tmp/ba.$$.json <<'PY'
import json, sys
m, c, b, mode, f = sys.argv[1:]
d = json.load(open(f))
s = d["stall"]
gb = d["step"]["hbm_bytes"] / 1e9
print(f"| {m} | {c} | {b} | {mode} | {d['sim_step_s']*1e3:.3f} | {d['images_per_s']:.0f} | {d['mxu_utilization']*100:.1f}% | "
      f"{s['mxu_busy']*100:.1f}% | {s['vpu_busy']*100:.1f}% | {s['weight_load']*100:.1f}% | {s['memory_wait']*100:.1f}% | "
      f"{s['collective_wait']*100:.1f}% | {gb:.2f} |")
PY
  done
done <<'ROWS'
mlp tpu-v2-8 128
cnn tpu-v2-8 128
resnet50 tpu-v2-8 128
resnet50 tpu-v3-8 256
resnet50 tpu-v2-8 1024
resnet50 tpu-v3-8 1024
vgg19 tpu-v2-8 128
xception tpu-v2-8 128
xception tpu-v3-8 128
resnet152v2 tpu-v3-8 128
ROWS
rm -f /tmp/ba.$$.json /tmp/ba.$$.err
