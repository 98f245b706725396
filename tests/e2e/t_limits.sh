# The Hangs finding of issue 18: an input whose size follows from its
# shapes is refused from the shapes, at once, with the figure and the limit
# (exit 2), instead of being built for minutes first. Each command runs under
# a bounded timeout, so that a regression fails (exit 124) instead of hanging.

# A program whose repeat expands past the engine's op limit: 8 ops x repeat
# 1000000 x 4 cores (it used to be re-parsed once per iteration and core:
# still parsing after 20 s, at 1.7 GB).
/usr/bin/python3 - "$TPU_ROOT/docs/examples/train_step.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["repeat"] = 1000000
p["infeed"] = {"first": 0, "interval": 30000, "batches": 1000000}
json.dump(p, open("big.json", "w"))
p["repeat"] = 2000
p["infeed"] = {"first": 0, "interval": 30000, "batches": 2000}
json.dump(p, open("rep.json", "w"))
PY
expect_status 2 timeout 10 "$TPUSIM" run --chip teach --level timing --program big.json
expect_err_contains "field 'repeat': the program expands to 32000000 ops (8 ops x repeat 1000000 x 4 cores)"
expect_err_contains "more than the engine's limit of 16777216 ops"
# within the limit a repeat is read once and added as often: 2000 steps
expect_status 0 timeout 20 "$TPUSIM" run --chip teach --level timing --program rep.json --json
echo "$OUT" > rep.out
/usr/bin/python3 -c 'import json,sys; d=json.load(open("rep.out")); assert d["cycles"] > 2000 * 1000, d["cycles"]' \
  || die "repeat 2000: $(head -c 300 rep.out)"

# A huge dense layer on teach (64 KiB of VMEM: GEMM tiles of 32 x 32): 784 ->
# 1048576 -> 128 lowers to 17 million ops per core, refused from the
# lowering's count before anything is built (the cores share one program:
# one core's ops count); 784 -> 65536 -> 10 needs 3.3 GB of HBM on a 1 GiB
# chip.
echo '{ "name": "wide", "input": [784], "layers": [ { "type": "dense", "units": 1048576 }, { "type": "dense", "units": 128 } ] }' > wide.json
echo '{ "name": "wide", "input": [784], "layers": [ { "type": "dense", "units": 65536 }, { "type": "dense", "units": 10 } ] }' > hbm.json
T1="--chip teach --data synthetic --synthetic-n 64 --batch 64 --steps-per-epoch 1"
expect_status 2 timeout 10 "$TPUSIM" train --model wide.json $T1 --level timing
expect_err_contains "wide on teach at 16 samples per core: the step lowers to 16952070 engine ops per core, 16952070 in the program"
expect_err_contains "64 KiB of VMEM gives GEMM tiles of 32 x 32 and element-wise tiles of 512 values"
expect_err_contains "more than the engine's limit of 16777216 ops"
expect_status 2 timeout 10 "$TPUSIM" train --model hbm.json $T1 --level timing
expect_err_contains "the step's tensors need 3343067008 bytes of HBM per chip"
expect_err_contains "more than its capacity of 1073741824 bytes (hbm.capacity_gib 1)"
# the same at the tile level (the step is timed before any value is made)
expect_status 2 timeout 10 "$TPUSIM" train --model hbm.json $T1
expect_err_contains "3343067008 bytes of HBM per chip"

# At the timing level synthetic data is never made (only the host-time
# model runs): the report equals the one through an equivalent pipeline
# file, which makes every batch (the fit aside: a pipeline file at the
# timing level has no validation split to time).
cat > pipe.json <<'PJ'
{ "source": { "kind": "synthetic", "n": 700, "shape": [12, 12, 3], "classes": 5, "seed": 1 },
  "stages": [ { "op": "shuffle", "buffer_size": 700, "seed": 1 }, { "op": "map", "fn": "normalize" },
              { "op": "batch", "batch_size": 64 }, { "op": "prefetch", "buffer_size": 2 } ] }
PJ
M='{ "input": [12, 12, 3], "layers": [ { "type": "conv2d", "filters": 8, "kernel": 3 }, { "type": "relu" },
  { "type": "flatten" }, { "type": "dense", "units": 5 } ] }'
echo "$M" > m5.json
for how in "--data synthetic --synthetic-n 700" "--pipeline pipe.json"; do
  expect_status 0 timeout 20 "$TPUSIM" train --model m5.json $how --level timing --epochs 3 --batch 64 --json
  echo "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("wall_s"); d.pop("data"); d.pop("fit")
for h in d["history"]: h.pop("wall_s"); h.pop("fit")
print(json.dumps(d, sort_keys=True))' >> reports.txt
done
[ "$(sort -u reports.txt | wc -l)" = 1 ] || die "timing-level reports differ between built-in synthetic data and a pipeline file: $(cat reports.txt)"
grep -q '"steps_per_epoch": 11' reports.txt || die "steps per epoch: $(cat reports.txt)"

# Sizes of real workloads (issue 15): M, N, K up to and including 2^31 at
# the timing level, 2^31 + 1 refused naming the option and the range.
expect_status 0 timeout 10 "$TPUSIM" matmul --m 2147483648 --n 4096 --k 4096 --level timing --json
echo "$OUT" > big1.json
expect_status 0 "$TPUSIM" matmul --m 2147483647 --n 4096 --k 4096 --level timing --json
echo "$OUT" > big0.json
# one row more streams through each of the 1024 tiles: 1024 cycles more
/usr/bin/python3 -c 'import json; a, b = json.load(open("big1.json")), json.load(open("big0.json")); assert a["m"] == 2**31 and a["tiles"] == 1024 and a["cycles"] - b["cycles"] == 1024, (a, b)' \
  || die "2^31 rows: $(head -c 300 big1.json)"
for o in m n k; do
  expect_status 2 "$TPUSIM" matmul --$o 2147483649 --level timing
  expect_err_contains "--$o: expected an integer in 1..2147483648, got '2147483649'"
done
# a shape whose counts would pass 64 bits is refused with the figure, not wrapped
expect_status 2 timeout 10 "$TPUSIM" matmul --m 2147483648 --n 2147483648 --k 2147483648 --level timing
expect_err_contains "the run needs 9.9e+27 multiply-adds, at least 6.04e+23 cycles on 1 MXU of 128x128"
# the tile level holds the values: the memory check names the figure
expect_status 2 "$TPUSIM" matmul --m 2147483647 --n 4096 --k 4096 --level tile --mem-limit 1024
expect_err_contains "more than the limit of 1 GiB (--mem-limit)"
# the engine's GEMM program at 2^31 rows on 8 cores is extended from a few
# block rows (instant); the HBM holding its operands is a real limit
expect_status 2 timeout 10 "$TPUSIM" matmul --cores 8 --m 2147483648 --n 4096 --k 4096 --level timing
expect_err_contains "the GEMM's HBM buffers (A's rows, B and C's rows of each core) need"
expect_status 0 timeout 10 "$TPUSIM" matmul --cores 8 --m 2147483648 --n 4096 --k 4096 --level timing \
  --set hbm.capacity_gib=65536 --json
echo "$OUT" > big8.json
expect_status 0 timeout 10 "$TPUSIM" matmul --m 268435456 --n 4096 --k 4096 --level timing --json
echo "$OUT" > share.json
# each core's MXU time (mxu_busy + weight_load) is the closed form of its share, M/8 rows
/usr/bin/python3 -c '
import json
d, s = json.load(open("big8.json")), json.load(open("share.json"))
assert d["m"] == 2**31 and d["cores"] == 8, d
for c in d["per_core"]:
    assert c["mxu_busy"] + c["weight_load"] == s["cycles"], (c, s["cycles"])
    assert d["cycles"] == s["cycles"] + c["memory_wait"], (d["cycles"], c)
' || die "2^31 x 4096 x 4096 on 8 cores: $(head -c 400 big8.json)"
expect_status 2 "$TPUSIM" matmul --cores 8 --m 2147483649 --n 8 --k 8 --level timing
expect_err_contains "--m: expected an integer in 1..2147483648"
# beyond the engine's 2^53 cycles: refused at once with the figure
expect_status 2 timeout 10 "$TPUSIM" matmul --cores 8 --m 2147483648 --n 2147483648 --k 65536 --level timing
expect_err_contains "longer than the engine times (2^53"

# A program's buffers and matmuls up to 2^31 rows at the timing level: the
# engine times it as the closed form does
cat > p31.json <<'PJ'
{ "cores": 1,
  "buffers": [
    { "name": "x", "space": "vmem", "dtype": "bf16", "shape": [2147483648, 1] },
    { "name": "w", "space": "vmem", "dtype": "bf16", "shape": [1, 1] },
    { "name": "c", "space": "vmem", "dtype": "bf16", "shape": [2147483648, 1] } ],
  "ops": [ { "op": "matmul", "a": "x", "b": "w", "dst": "c" } ] }
PJ
expect_status 0 timeout 10 "$TPUSIM" run --program p31.json --level timing --set cores_per_chip=1 --set cores=1 \
  --set vmem.capacity_kib=16777216 --json
echo "$OUT" > p31.out
expect_status 0 "$TPUSIM" matmul --m 2147483648 --n 1 --k 1 --level timing --json
echo "$OUT" > m31.out
/usr/bin/python3 -c 'import json; a, b = json.load(open("p31.out")), json.load(open("m31.out")); assert a["cycles"] == b["cycles"], (a["cycles"], b["cycles"])' \
  || die "program of 2^31 rows: $(head -c 300 p31.out)"
sed 's/2147483648, 1/2147483649, 1/' p31.json > p32.json
expect_status 2 "$TPUSIM" run --program p32.json --level timing --set cores_per_chip=1 --set cores=1
expect_err_contains "field 'buffers[0].shape[0]': expected an integer in 1..2147483648 (2^31)"

# Training batches: above 65536 on a small model at the timing level; 2^31
# is refused for the training set's size, 2^31 + 1 by the option's range
expect_status 0 timeout 20 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 1048576 --batch 1048576 \
  --level timing --steps-per-epoch 1 --json
echo "$OUT" > tb.json
/usr/bin/python3 -c 'import json; d=json.load(open("tb.json")); assert d["global_batch"] == 1048576, d.keys()' \
  || die "batch 1048576: $(head -c 300 tb.json)"
expect_status 2 "$TPUSIM" train --model mlp --data synthetic --batch 2147483648 --level timing
expect_err_contains "--batch 2147483648 is larger than the training set (synthetic: at most 2147483647 samples"
expect_status 2 "$TPUSIM" train --model mlp --data synthetic --batch 2147483649 --level timing
expect_err_contains "--batch: expected an integer in 1..2147483648, got '2147483649'"
expect_status 2 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 8388608 --batch 64
expect_err_contains "--synthetic-n 8388608: --level tile holds the synthetic set in memory, at most 4194304"
# ResNet-50 at batch 256 (first conv: M = 32 x 112 x 112 per core) times a step
expect_status 0 timeout 60 "$TPUSIM" train --model resnet50 --chip tpu-v3-8 --data synthetic --synthetic-n 256 \
  --batch 256 --level timing --steps-per-epoch 1
