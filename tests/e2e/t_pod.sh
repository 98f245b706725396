# Pod slices (issue #34; docs/CHIPS.md "Pod slices", docs/TRAINING.md
# "Pod slices", docs/SWEEPS.md "Scaling to a pod"): the presets' layouts
# and hosts, a 2048-core step at the timing level, every core's results
# with and without the folding of alike cores, each host feeding its own
# chips, scaling sweeps and their plots, and a sub-slice's checkpoint.
PY=/usr/bin/python3

# {== the presets: cores, layout, wraparound, hosts (docs/CHIPS.md's table)
while read -r name cores x y wx wy hosts; do
  expect_status 0 "$TPUSIM" info --chip "$name" --json
  echo "$OUT" > "i_$name.json"
  $PY - "i_$name.json" "$cores" "$x" "$y" "$wx" "$wy" "$hosts" <<'PY' || die "preset $name"
import json, sys
c = json.load(open(sys.argv[1]))["chip"]
cores, x, y, hosts = (int(v) for v in (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[7]))
ici = c["ici"]
assert c["cores"] == cores and c["cores_per_chip"] == 2 and c["hosts"] == hosts, c
assert (ici["torus_x"], ici["torus_y"]) == (x, y) and x * y * 2 == cores, ici
assert (ici["wrap_x"], ici["wrap_y"]) == (sys.argv[5] == "yes", sys.argv[6] == "yes"), ici
PY
done <<'TABLE'
tpu-v2-32 32 4 4 no no 4
tpu-v2-128 128 8 8 no no 16
tpu-v2-256 256 16 8 yes no 32
tpu-v2-512 512 16 16 yes yes 64
tpu-v3-32 32 4 4 no no 4
tpu-v3-64 64 8 4 no no 8
tpu-v3-128 128 8 8 no no 16
tpu-v3-256 256 16 8 no no 32
tpu-v3-512 512 16 16 no no 64
tpu-v3-1024 1024 32 16 yes no 128
tpu-v3-2048 2048 32 32 yes yes 256
TABLE
# the table in the docs is the presets'
for name in tpu-v2-256 tpu-v3-1024 tpu-v3-2048; do
  grep -q "^| \`$name\`" "$TPU_ROOT/docs/CHIPS.md" || die "docs/CHIPS.md lacks $name's row"
done
expect_status 0 "$TPUSIM" info --chip tpu-v3-1024
expect_out_contains "1024 cores on 512 chips (2 per chip), torus ICI 32x16 (x by y; wraparound along x yes, along y no), 128 hosts"
# }==

# {== a ResNet-50 step on the whole v3 pod, at the timing level
expect_status 0 timeout 60 "$TPUSIM" train --model resnet50 --chip tpu-v3-2048 --batch-per-core 32 --level timing \
  --data synthetic --synthetic-n 131072 --steps-per-epoch 1 --json
echo "$OUT" > r50.json
$PY - r50.json <<'PY' || die "resnet50 on tpu-v3-2048"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cores"] == 2048 and d["global_batch"] == 65536 and d["per_core_batch"] == 32, d["cores"]
assert "32x32 2-D torus of 1024 chips" in d["all_reduce_algorithm"], d["all_reduce_algorithm"]
assert len(d["per_core"]) == 2048 and d["sim_step_cycles"] > 0
assert 0 < d["stall"]["collective_wait"] < 0.5, d["stall"]
PY
# }==

# {== every core's results: folded (alike cores simulated once) and not (a
# trace keeps every core's events, so every core is simulated)
for chip in tpu-v3-32 tpu-v2-128; do
  expect_status 0 "$TPUSIM" train --model mlp --chip "$chip" --batch-per-core 8 --level timing --data synthetic \
    --synthetic-n 4096 --steps-per-epoch 2 --json
  echo "$OUT" > fold.json
  expect_status 0 "$TPUSIM" train --model mlp --chip "$chip" --batch-per-core 8 --level timing --data synthetic \
    --synthetic-n 4096 --steps-per-epoch 2 --trace tr.json --json
  echo "$OUT" > all.json
  $PY - fold.json all.json <<'PY' || die "$chip: folded and unfolded runs differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("sim_step_cycles", "stall_cycles", "per_core", "per_core_steps"):
    assert a[k] == b[k], k
PY
done
# }==

# {== each host feeds its own chips: a v3-32 (4 hosts) waits on its input
# as a v3-8 does at the same per-core batch; one host for all 16 chips
# makes each step about 4 times as long (docs/TRAINING.md "Pod slices")
step_us() { json_get sim_step_s "$1" | $PY -c 'import sys; print(float(sys.stdin.read()) * 1e6)'; }
for run in "v8 --chip tpu-v3-8" "v32 --chip tpu-v3-32" "h1 --chip tpu-v3-32 --set hosts=1"; do
  set -- $run
  tag=$1; shift
  expect_status 0 "$TPUSIM" train --model mlp "$@" --batch-per-core 128 --pipeline "$TPU_ROOT/docs/examples/train-pod.json" \
    --level timing --steps-per-epoch 8 --json
  echo "$OUT" > "p_$tag.json"
done
$PY - p_v8.json p_v32.json p_h1.json <<'PY' || die "per-host input"
import json, sys
v8, v32, h1 = (json.load(open(f)) for f in sys.argv[1:])
assert abs(v32["sim_step_s"] / v8["sim_step_s"] - 1) < 0.01, (v8["sim_step_s"], v32["sim_step_s"])
assert 3.5 < h1["sim_step_s"] / v32["sim_step_s"] < 4.5, (v32["sim_step_s"], h1["sim_step_s"])
assert h1["input_wait_fraction"] > v32["input_wait_fraction"] > 0.5
assert round(v8["sim_step_s"] * 1e6) == 2318 and round(v32["sim_step_s"] * 1e6) == 2322 and round(h1["sim_step_s"] * 1e6) == 9234
PY
# }==

# {== weak and strong scaling sweeps with their plots (docs/SWEEPS.md)
expect_status 0 "$TPUSIM" sweep --out weak -j 2 train --model resnet50 --chip tpu-v3-2048 --cores 8,32,128,512,2048 \
  --batch-per-core 32 --level timing --data synthetic --synthetic-n 131072 --steps-per-epoch 1
expect_status 0 "$TPUSIM" plot weak/results.csv --y collective_wait_share
[ -s weak/images_per_s-vs-cores.png ] && [ -s weak/collective_wait_share-vs-cores.png ] || die "weak scaling plots: $(ls weak)"
expect_status 0 "$TPUSIM" sweep --out strong -j 2 train --model resnet50 --chip tpu-v3-2048 --cores 16,64,256,1024 \
  --batch 2048 --level timing --data synthetic --synthetic-n 4096 --steps-per-epoch 1
$PY - weak/results.csv strong/results.csv <<'PY' || die "scaling"
import csv, sys
weak, strong = (list(csv.DictReader(open(f))) for f in sys.argv[1:])
ips = [float(r["images_per_s"]) for r in weak]
assert all(r["status"] == "ok" for r in weak + strong)
assert all(b > 3.5 * a for a, b in zip(ips, ips[1:])), ips          # weak scaling: near linear
share = [float(r["collective_wait_share"]) for r in strong]
assert all(b > a for a, b in zip(share, share[1:])), share          # strong: the all-reduce's share grows
PY
# }==

# {== the tile level on a sub-slice, checkpointed and resumed (format 4 holds its 32 cores)
expect_status 0 "$TPUSIM" train --model mlp --chip tpu-v3-128 --cores 32 --batch-per-core 4 --data synthetic \
  --synthetic-n 512 --epochs 1 --checkpoint ck --json
head -c 8 ck/checkpoint.bin | grep -q TPUSIMC4 || die "checkpoint format"
expect_status 0 "$TPUSIM" train --model mlp --chip tpu-v3-128 --cores 32 --batch-per-core 4 --data synthetic \
  --synthetic-n 512 --epochs 2 --checkpoint ck --resume --json
echo "$OUT" > res.json
[ "$(json_get cores res.json)" = 32 ] && [ "$(json_get epochs_run res.json)" = 1 ] || die "resume on a sub-slice"
# too much for this host's memory at the tile level: refused before it starts, with the figure
expect_status 2 "$TPUSIM" train --model cnn --chip tpu-v3-2048 --batch 1048576 --data synthetic --synthetic-n 1048576 --level tile
expect_err_contains "computes every core's values on this host: 705 GiB for the global batch of 1048576 on 2048 cores"
# }==
