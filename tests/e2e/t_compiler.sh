# The step compiler (docs/COMPILER.md): the yardstick, batch 1024 on a v2-8
# and a v3-8, the switches, the per-layer report and the roofline.

# {== The compiled ResNet-50 step moves at most 1.5x the hand-derived least traffic
expect_status 0 "$TPUSIM" model resnet50 --batch 128 --chip tpu-v2-8 --json
echo "$OUT" > r50.json
/usr/bin/python3 "$TPU_ROOT/docs/compiler/yardstick.py" "$TPUSIM" resnet50 16 --json > yard.json \
  || die "yardstick.py failed"
/usr/bin/python3 - r50.json yard.json <<'PY' || die "the compiled step against the yardstick"
import json, sys
step = json.load(open(sys.argv[1]))["step"]
y = json.load(open(sys.argv[2]))
ratio = step["hbm_bytes"] / y["total"]
print(f"compiled {step['hbm_bytes']/1e9:.2f} GB, yardstick {y['total']/1e9:.2f} GB per core: {ratio:.2f}x")
assert ratio <= 1.5, ratio
assert ratio >= 1.0, ratio       # a yardstick the step beats is a wrong yardstick
by = step["hbm_bytes_by_class"]
assert abs(sum(by.values()) - step["hbm_bytes"]) <= 1e-6 * step["hbm_bytes"], by
assert sum(l["cycles"] for l in step["layers"]) == step["step_cycles"]
assert {l["bound"] for l in step["layers"]} <= {"MXU", "VPU", "HBM", "ICI", None}
PY
# }==

# {== gpt2's tied lm_head: each GEMM reads A once per block column and B once
# per block row of its 512 x 512 tiles (docs/COMPILER.md, the table)
expect_status 0 "$TPUSIM" model gpt2 --batch 64 --chip tpu-v3-8 --json
echo "$OUT" > gpt2.json
/usr/bin/python3 - gpt2.json <<'PY' || die "gpt2's lm_head row against docs/COMPILER.md's table"
import json, sys
row = [l for l in json.load(open(sys.argv[1]))["step"]["layers"] if l["name"] == "lm_head"][0]
R, V, D, t = 8192, 50257, 768, 512
nb = lambda n: -(-n // t)
x, w, y = R * D * 2, V * D * 4, R * V * 4          # X bf16, the table f32, the logits (and dY) f32
fwd = x * nb(V) + w * nb(R) + y                    # Y = X W^T: M=R, N=V, K=D
dw = y * nb(D) + x * nb(V) + w                     # dW = dY^T X: M=V, N=D, K=R
dx = y * nb(D) + w * nb(R) + x                     # dX = dY W: M=R, N=D, K=V (dX bf16)
assert row["hbm_bytes"] == fwd + dw + dx == 15832960000, (row["hbm_bytes"], fwd, dw, dx)
assert row["bound"] == "MXU", row["bound"]
PY
# }==

# {== ResNet-50 at a global batch of 1024 fits a v2-8 and a v3-8 (128 per core)
for chip in tpu-v2-8 tpu-v3-8; do
  expect_status 0 "$TPUSIM" train --model resnet50 --chip $chip --level timing --data synthetic \
    --synthetic-n 1024 --batch 1024 --steps-per-epoch 1 --json
  # each tensor kept apart, as before memory planning, it does not
  expect_status 2 "$TPUSIM" train --model resnet50 --chip $chip --level timing --data synthetic \
    --synthetic-n 1024 --batch 1024 --steps-per-epoch 1 --set compiler.memory_planning=false
  expect_err_contains "each tensor its own space: compiler.memory_planning is off"
done
# }==

# {== The switches: each lowers fewer bytes; all off is the lowering before them
bytes() {   # the step's HBM bytes per core for the extra arguments
  "$TPUSIM" model mobilenetv2 --batch 8 --chip tpu-v2-8 --json "$@" | /usr/bin/python3 -c \
    'import json,sys; print(int(json.load(sys.stdin)["step"]["hbm_bytes"]))'
}
all=$(bytes) || die "model mobilenetv2 --chip"
for off in "--set compiler.fusion=false" "--set compiler.implicit_conv=false" "--dtype-policy float32"; do
  b=$(bytes $off) || die "model mobilenetv2 $off"
  [ "$b" -gt "$all" ] || die "$off: $b bytes, not more than $all with every mechanism"
done
# }==

# {== The per-layer table, and the roofline drawn by gnuplot
expect_status 2 "$TPUSIM" model resnet50 --batch 128 --chip tpu-v2-8 --roofline roof/r50.png
expect_err_contains "roof/r50.gp: cannot write"
mkdir roof
expect_status 0 "$TPUSIM" model resnet50 --batch 128 --chip tpu-v2-8 --roofline roof/r50.png
expect_out_contains "Training step on tpu-v2-8: batch 128 (16 per core), dtype policy mixed_bfloat16"
expect_out_contains "conv2_block1_2_conv"
expect_out_contains "HBM bytes per core"
[ -s roof/r50.png ] && [ -s roof/r50.dat ] && [ -s roof/r50.gp ] || die "the roofline's files"
# one point per layer with MXU work: ResNet-50's 53 convolutions and its dense head
[ "$(grep -vc '^#' roof/r50.dat)" = 54 ] || die "roofline points: $(grep -vc '^#' roof/r50.dat)"
# }==

# {== One sweep measures each mechanism: string axes, plotted with their names
expect_status 0 "$TPUSIM" sweep --out sw -j 1 train --model mobilenetv2@64x64x3:10 --data synthetic --synthetic-n 32 --batch 32 \
  --level timing --steps-per-epoch 1 --dtype-policy float32,mixed_bfloat16 --set compiler.fusion=false,true
/usr/bin/python3 - sw/results.csv <<'PY' || die "the sweep over the switches"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4 and all(r["status"] == "ok" for r in rows), rows
c = {(r["dtype-policy"], r["compiler.fusion"]): int(r["sim_step_cycles"]) for r in rows}
assert c[("mixed_bfloat16", "true")] < c[("float32", "true")] < c[("float32", "false")], c
assert c[("mixed_bfloat16", "true")] < c[("mixed_bfloat16", "false")], c
PY
ls sw/images_per_s-vs-dtype-policy-by-compiler.fusion*.png > /dev/null || die "the sweep's plot of a name axis"
# }==

# {== A planned arena of more than 2^31 values (12 GB of Xception's activations
# on one core) is a buffer the engine takes: rows of 4096 values
expect_status 0 "$TPUSIM" train --model xception@192x192x3:5 --batch 256 --cores 1 --chip tpu-v2-8 --level timing \
  --data synthetic --synthetic-n 256 --steps-per-epoch 1
# }==
