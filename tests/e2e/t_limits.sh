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

# A huge dense layer on teach (64 KiB of VMEM: 256-value tiles): 784 ->
# 262144 -> 10 lowers to 8 million ops per core (it used to be lowered for
# 82 s before a capacity check failed), 784 -> 65536 -> 10 needs 3.4 GB of
# HBM on a 1 GiB chip (11 s before the engine said so).
echo '{ "name": "wide", "input": [784], "layers": [ { "type": "dense", "units": 262144 }, { "type": "dense", "units": 10 } ] }' > wide.json
echo '{ "name": "wide", "input": [784], "layers": [ { "type": "dense", "units": 65536 }, { "type": "dense", "units": 10 } ] }' > hbm.json
T1="--chip teach --data synthetic --synthetic-n 64 --batch 64 --steps-per-epoch 1"
expect_status 2 timeout 10 "$TPUSIM" train --model wide.json $T1 --level timing
expect_err_contains "wide on teach at 16 samples per core: the step lowers to 8019992 engine ops per core, 32079968 on the 4 cores"
expect_err_contains "more than the engine's limit of 16777216 ops"
expect_status 2 timeout 10 "$TPUSIM" train --model hbm.json $T1 --level timing
expect_err_contains "the step's tensors need 3368232832 bytes of HBM per chip"
expect_err_contains "more than its capacity of 1073741824 bytes (hbm.capacity_gib 1)"
# the same at the tile level (the step is timed before any value is made)
expect_status 2 timeout 10 "$TPUSIM" train --model hbm.json $T1
expect_err_contains "3368232832 bytes of HBM per chip"

# At the timing level synthetic data is never made (only the host-time
# model runs): the report equals the one through an equivalent pipeline
# file, which makes every batch.
cat > pipe.json <<'PJ'
{ "source": { "kind": "synthetic", "n": 700, "shape": [12, 12, 3], "classes": 5, "seed": 1 },
  "stages": [ { "op": "shuffle", "buffer_size": 700, "seed": 1 }, { "op": "map", "fn": "normalize" },
              { "op": "batch", "batch_size": 64, "drop_remainder": true }, { "op": "prefetch", "buffer_size": 2 } ] }
PJ
M='{ "input": [12, 12, 3], "layers": [ { "type": "conv2d", "filters": 8, "kernel": 3 }, { "type": "relu" },
  { "type": "flatten" }, { "type": "dense", "units": 5 } ] }'
echo "$M" > m5.json
for how in "--data synthetic --synthetic-n 700" "--pipeline pipe.json"; do
  expect_status 0 timeout 20 "$TPUSIM" train --model m5.json $how --level timing --epochs 3 --batch 64 --json
  echo "$OUT" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("wall_s"); d.pop("data")
for h in d["history"]: h.pop("wall_s")
print(json.dumps(d, sort_keys=True))' >> reports.txt
done
[ "$(sort -u reports.txt | wc -l)" = 1 ] || die "timing-level reports differ between built-in synthetic data and a pipeline file: $(cat reports.txt)"
grep -q '"steps_per_epoch": 10' reports.txt || die "steps per epoch: $(cat reports.txt)"
