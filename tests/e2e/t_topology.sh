# SCALE-Sim topologies beyond `tpusim scalesim`: matmul --topology (each
# layer one matmul; its cycles are scalesim --compat none's), run --topology
# (each layer a GEMM on the chip engine; its cycles are matmul --cores's)
# and scalesim --chip (the same runs in SCALE-Sim's reports); bad input.
D=$TPU_ROOT/docs/scalesim
# the shipped 128x128 config cut to a 32x32 array named run32
sed -e 's/^run_name = .*/run_name = run32/' -e 's/^\(Array[A-Za-z]*\): *128/\1: 32/' "$D/tpu_128.cfg" > s32.cfg
grep -q '^ArrayWidth: 32' s32.cfg || die "s32.cfg"
printf 'Layer, M, N, K,\nG1, 300, 70, 129,\nG2, 1, 513, 40,\nG3, 65, 65, 65,\n' > g.csv
# per layer, the one-array cycles of matmul --topology are scalesim --compat none's
same_layers() {   # same_layers A.json B.json: equal "cycles" layer by layer
  /usr/bin/python3 - "$1" "$2" <<'PY' || die "layers differ: $1 $2"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ca, cb = [l["cycles"] for l in a["layers"]], [l["cycles"] for l in b["layers"]]
assert ca == cb and len(ca) > 0, (ca, cb)
PY
}
for net in alexnet resnet18; do
  expect_status 0 "$TPUSIM" scalesim -c "$D/tpu_128.cfg" -t "$D/$net.csv" -p logs --json
  printf '%s\n' "$OUT" > ss.json
  expect_status 0 "$TPUSIM" matmul --topology "$D/$net.csv" --json
  printf '%s\n' "$OUT" > mm.json
  same_layers ss.json mm.json
  [ "$(json_get cycles mm.json)" = "$(json_get total_cycles ss.json)" ] || die "$net total"
done
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm -p logs --json
printf '%s\n' "$OUT" > ss.json
expect_status 0 "$TPUSIM" matmul --topology g.csv --input-type gemm --chip teach --set mxu.rows=32 --set mxu.cols=32 --json
printf '%s\n' "$OUT" > mm.json
same_layers ss.json mm.json
# the tile and pe levels compute values and give the same cycles
for lv in tile pe; do
  expect_status 0 "$TPUSIM" matmul --topology g.csv --input-type gemm --chip teach --set mxu.rows=32 --set mxu.cols=32 --level $lv --json
  printf '%s\n' "$OUT" > mm_$lv.json
  same_layers mm.json mm_$lv.json
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(0 <= l["max_rel_err"] < 0.01 for l in d["layers"])' mm_$lv.json ||
    die "$lv errors"
done
expect_out_contains '"level": "pe"'

# run --topology: each layer is the GEMM program matmul --cores runs, its stall parts add up
expect_status 0 "$TPUSIM" run --topology g.csv --input-type gemm --cores 4 --json
printf '%s\n' "$OUT" > run.json
i=0
for mnk in "300 70 129" "1 513 40" "65 65 65"; do
  set -- $mnk
  expect_status 0 "$TPUSIM" matmul --cores 4 --m $1 --n $2 --k $3 --level timing --json
  printf '%s\n' "$OUT" > mc.json
  [ "$(json_get layers.$i.cycles run.json)" = "$(json_get cycles mc.json)" ] || die "layer $i is not matmul --cores's"
  [ "$(json_get layers.$i.bound run.json)" = "$(json_get bound mc.json)" ] || die "layer $i bound"
  i=$((i + 1))
done
/usr/bin/python3 - run.json <<'PY' || die "run --topology totals"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cores"] == 4 and d["layer_count"] == 3 and d["level"] == "timing"
assert d["cycles"] == sum(l["cycles"] for l in d["layers"])
for l, s in zip(d["layers"], d["steps"]):
    assert sum(l["stall"].values()) == 4 * l["cycles"], l
    # the traffic by operand adds up to the program's, and every result is written once (f32)
    assert l["hbm_ifmap_bytes"] + l["hbm_filter_bytes"] + l["hbm_ofmap_bytes"] == l["hbm_bytes"], l
    assert l["hbm_ofmap_bytes"] == 4 * l["m"] * l["n"] and l["hbm_ifmap_bytes"] >= 4 * l["m"] * l["k"], l
    assert {k: v for k, v in s.items() if k not in ("step", "layer")} == l["stall"]
for c in d["per_core"]:
    assert sum(v for k, v in c.items() if k not in ("core", "cycles")) == d["cycles"]
assert d["stall"]["mxu_busy"] > 0 and d["stall"]["memory_wait"] > 0
PY
# tile level: the same cycles; threads do not change anything
expect_status 0 "$TPUSIM" run --topology g.csv --input-type gemm --cores 4 --level tile --threads 2 --json
printf '%s\n' "$OUT" > run_tile.json
same_layers run.json run_tile.json
expect_status 0 "$TPUSIM" run --topology "$D/alexnet.csv" --threads 1 --json
printf '%s\n' "$OUT" | grep -v wall_s > a1.json
expect_status 0 "$TPUSIM" run --topology "$D/alexnet.csv" --threads 2 --json
printf '%s\n' "$OUT" | grep -v wall_s > a2.json
cmp -s a1.json a2.json || die "threads change run --topology"
# one trace of every layer, one after another, as Perfetto reads it
expect_status 0 "$TPUSIM" run --topology g.csv --input-type gemm --cores 2 --trace t.json
expect_out_contains "trace             t.json"
/usr/bin/python3 "$TPU_ROOT/tests/e2e/trace_check.py" t.json || die "trace"
/usr/bin/python3 - t.json <<'PY' || die "trace steps"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
steps = {e["args"]["step"] for e in ev if e.get("ph") == "X" and "step" in e.get("args", {})}
assert steps == {0, 1, 2}, steps
PY
# a sweep over the cores runs the same points
expect_status 0 "$TPUSIM" sweep --out sw --no-plot run --topology g.csv --input-type gemm --cores 1,4
/usr/bin/python3 - sw/results.csv run.json <<'PY' || die "sweep of run --topology"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["cores"] for r in rows] == ["1", "4"] and all(r["status"] == "ok" for r in rows), rows
assert int(rows[1]["cycles"]) == json.load(open(sys.argv[2]))["cycles"]
assert int(rows[0]["cycles"]) > int(rows[1]["cycles"])
PY
# text report
expect_status 0 "$TPUSIM" run --topology "$D/resnet18.csv" --chip tpu-v3-8
expect_out_contains "(21 layers, conv) on tpu-v3-8 (8 cores"
expect_out_contains "memory_wait"

# scalesim --chip: the same engine runs in SCALE-Sim's reports, with the config's array
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm -p logs --chip tpu-v2-8 --cores 4 --json
printf '%s\n' "$OUT" > ssc.json
expect_status 0 "$TPUSIM" run --topology g.csv --input-type gemm --cores 4 --set mxu.rows=32 --set mxu.cols=32 --json
printf '%s\n' "$OUT" > run32.json
same_layers ssc.json run32.json
/usr/bin/python3 - ssc.json logs/run32_tpu-v2-8_4cores/COMPUTE_REPORT.csv <<'PY' || die "scalesim --chip report"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["configuration"]["chip"]
assert c["mxu"]["rows"] == 32 and c["mxu"]["cols"] == 32 and c["cores"] == 4 and d["cores"] == 4
rows = [l.split(",") for l in open(sys.argv[2]).read().splitlines()[1:]]
assert len(rows) == 3
for l, r in zip(d["layers"], rows):
    busy = l["stall"]["mxu_busy"] + l["stall"]["vpu_busy"]
    assert int(r[1]) == l["cycles"] and int(r[2]) == l["stall_cycles"] == l["cycles"] - busy // 4, (l, r)
    assert 0 < l["stall_cycles"] < l["cycles"]
    assert abs(float(r[3]) - 100.0 * l["macs"] / (l["cycles"] * 32 * 32 * 4)) < 1e-9
    assert l["scalesim_cycles"] < 10 ** 9 and l["bound"] in ("memory", "compute")
PY
expect_status 0 "$TPUSIM" scalesim -c "$D/tpu_128.cfg" -t "$D/alexnet.csv" -p logs --chip tpu-v2-8
expect_out_contains "chip engine: tpu-v2-8, 8 cores"
expect_status 0 "$TPUSIM" scalesim -c "$D/tpu_128.cfg" -t "$D/alexnet.csv" -p logs --cores 1 --json
printf '%s\n' "$OUT" > one.json
[ "$(json_get cores one.json)" = 1 ] && [ "$(json_get chip one.json)" = tpu-v2-8 ] || die "--cores alone"

# bad input: exit 2, naming the file, line and field or layer
printf 'L, M, N, K,\nok, 8, 8, 8,\nbig, 70000, 8, 8,\n' > big.csv
printf 'L, M, N, K,\nok, 8, 8, x,\n' > badk.csv
printf 'h\nhuge, 65536, 65536, 1, 1, 1, 1, 1,\n' > huge.csv
# a layer too big for the chip: the GEMM builder's shape limit refuses M = 70000 today and
# the HBM capacity would once that limit is lifted; 60000 rows overflow the HBM either way,
# decided from the shape before a program is built (#33)
printf 'L, M, N, K,\nok, 8, 8, 8,\nbig, 60000, 8, 8,\n' > b60.csv
small="--cores 1 --set hbm.capacity_gib=0.001"
expect_status 2 "$TPUSIM" run --topology big.csv --input-type gemm $small
expect_err_contains "big.csv:3: layer 'big'"
expect_status 2 "$TPUSIM" run --topology b60.csv --input-type gemm $small
expect_err_contains "b60.csv:3: layer 'big' (GEMM 60000 x 8 x 8): the GEMM's HBM buffers (A's rows, B and C's rows of each core) need 3840256 bytes on chip 0"
expect_err_contains "more than its capacity"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t big.csv -i gemm -p logs --chip teach $small
expect_err_contains "big.csv:3: layer 'big'"
expect_status 2 "$TPUSIM" matmul --topology huge.csv
expect_err_contains "huge.csv:2: layer 'huge': GEMM 4294967296 x 1 x 1"
expect_status 2 "$TPUSIM" matmul --topology big.csv --input-type gemm --level tile --mem-limit 1
expect_err_contains "big.csv:3: layer 'big': 70000 x 8 x 8 at --level tile"
for cmd in "run --topology" "matmul --topology"; do
  expect_status 2 "$TPUSIM" $cmd badk.csv --input-type gemm
  expect_err_contains "badk.csv:2:11: field 'K'"
  expect_status 2 "$TPUSIM" $cmd g.csv --input-type gem
  expect_err_contains "--input-type: expected conv or gemm, got 'gem'"
  expect_status 2 "$TPUSIM" $cmd missing.csv
  expect_err_contains "missing.csv"
done
expect_status 2 "$TPUSIM" run --topology g.csv --program x.json
expect_err_contains "one of them"
expect_status 2 "$TPUSIM" run --topology g.csv --input-type gemm --cores 9
expect_err_contains "--cores: expected 1..8"
expect_status 2 "$TPUSIM" run --topology g.csv --print C
expect_status 2 "$TPUSIM" matmul --topology g.csv --m 8
expect_err_contains "do not go with it"
expect_status 2 "$TPUSIM" matmul --m 8 --n 8 --k 8 --input-type gemm
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm --chip teach --compat scalesim
expect_err_contains "do not go with --compat scalesim"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm --set mxu.rows=8
expect_err_contains "--set goes with --chip or --cores"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm --chip nosuchchip
expect_err_contains "nosuchchip"
# the chip engine is weight-stationary: os and is with --chip are refused, not run as ws
sed 's/^Dataflow.*/Dataflow : os/' s32.cfg > s32os.cfg
grep -q "Dataflow : os" s32os.cfg || die "s32os.cfg"
expect_status 2 "$TPUSIM" scalesim -c s32os.cfg -t g.csv -i gemm -p logs --chip teach
expect_err_contains "the chip engine is weight-stationary, the dataflow is os"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm -p logs --chip teach --dataflow is
expect_err_contains "the dataflow is is"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t g.csv -i gemm -p logs --chip teach --cores 99
expect_err_contains "--cores"
# one array at the timing level takes a layer of 2^31 rows, not one more
printf 'L, M, N, K,\nm, 2147483648, 8, 8,\n' > m31.csv
printf 'L, M, N, K,\nm, 2147483649, 8, 8,\n' > m31p.csv
expect_status 0 "$TPUSIM" matmul --topology m31.csv --input-type gemm --json
expect_status 0 "$TPUSIM" scalesim -c s32.cfg -t m31.csv -i gemm -p logs --json
expect_status 2 "$TPUSIM" matmul --topology m31p.csv --input-type gemm
expect_err_contains "m31p.csv:2:4: field 'M': expected an integer in 1..2147483648, got '2147483649'"
expect_status 2 "$TPUSIM" matmul --topology huge.csv --level timing
expect_err_contains "a matmul at --level timing takes M, N and K of 1..2147483648"
expect_status 2 "$TPUSIM" scalesim -c s32.cfg -t huge.csv -p logs
expect_err_contains "layer 'huge' has M = 4294967296, N = 1, K = 1; tpusim's MXU takes at most 2147483648"
