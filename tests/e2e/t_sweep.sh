# tpusim sweep: a point equals the single command; the CSV is the same bytes
# for -j 1 and -j 2, after a kill -9 and a rerun, after a torn journal line,
# and from merged shards; a failing point is recorded; bad input exits 2.
TR="train --model mlp,cnn --batch 32,64 --cores 1,2 --level timing --data synthetic --steps-per-epoch 2"
expect_status 0 "$TPUSIM" sweep --out j1 -j 1 $TR
expect_out_contains "8 run, 0 already done, 0 failed"
expect_status 0 "$TPUSIM" sweep --out j2 -j2 $TR
cmp j1/results.csv j2/results.csv || die "-j 1 and -j 2 CSVs differ"
[ "$(wc -l < j1/results.csv)" = 9 ] || die "expected a header and 8 rows"
head -1 j1/results.csv | grep -q '^point,model,batch,cores,status,sim_step_s,sim_step_cycles,images_per_s,mxu_utilization,' \
  || die "CSV header: $(head -1 j1/results.csv)"

# an axis of names only (matmul's --level): both points run, the plot labels them
expect_status 0 "$TPUSIM" sweep --out lv -j 1 matmul --m 8 --n 8 --k 8 --level tile,timing
if command -v gnuplot >/dev/null; then [ -s lv/cycles-vs-level.png ] || die "cycles-vs-level.png: $(ls -l lv)"; fi

# the default plots, each with its gnuplot script beside it
if command -v gnuplot >/dev/null; then
  for f in images_per_s-vs-batch-by-cores-model=mlp images_per_s-vs-batch-by-cores-model=cnn stall-shares; do
    [ -s "j1/$f.png" ] && [ -s "j1/$f.gp" ] && [ -s "j1/$f.dat" ] || die "plot $f missing: $(ls j1)"
    head -c 8 "j1/$f.png" | od -An -tx1 | grep -q '89 50 4e 47' || die "$f.png is not a PNG"
  done
  grep -q "^8 " "j1/images_per_s-vs-batch-by-cores-model=cnn.dat" && die "batch 8 is not a point"
  [ "$(grep -c '^[0-9]' "j1/images_per_s-vs-batch-by-cores-model=cnn.dat")" = 4 ] || die "cnn plot: 4 points expected"
  expect_status 0 "$TPUSIM" plot j1/results.csv --x cores --series batch --y sim_step_s --out j1
  [ -s "j1/sim_step_s-vs-cores-by-batch-model=cnn.png" ] || die "tpusim plot --x cores wrote: $(ls j1)"
  rm j1/*.png; (cd j1 && gnuplot stall-shares.gp) && [ -s j1/stall-shares.png ] || die "the script does not redraw the PNG"
fi
expect_status 2 "$TPUSIM" plot j1/results.csv --x nosuch
expect_err_contains "--x nosuch: not an axis"
expect_status 2 "$TPUSIM" plot j1/points.jsonl
expect_err_contains "expected the header of a sweep's results.csv"

# point 7 (cnn, batch 64, cores 2) is the single command's report
expect_status 0 "$TPUSIM" train --model cnn --batch 64 --cores 2 --level timing --data synthetic --steps-per-epoch 2 --json
echo "$OUT" > single.json
/usr/bin/python3 - j2/points.jsonl single.json <<'PY' || die "a point differs from the single command"
import json, sys
pts = [json.loads(l) for l in open(sys.argv[1])]
p = [e for e in pts if e["point"] == 7][0]
assert p["axes"] == {"model": "cnn", "batch": "64", "cores": "2"}, p["axes"]
a, b = p["report"], json.load(open(sys.argv[2]))
def norm(v):   # the single command prints 10 significant digits, the journal 17
    if isinstance(v, float): return float(f"{v:.10g}")
    if isinstance(v, dict): return {k: norm(x) for k, x in v.items() if k != "wall_s"}
    if isinstance(v, list): return [norm(x) for x in v]
    return v
assert norm(a) == norm(b), (a, b)
PY

# rerun: nothing to do, same bytes
expect_status 0 "$TPUSIM" sweep --out j1 -j 2 $TR
expect_out_contains "0 run, 8 already done"
cmp j1/results.csv j2/results.csv || die "rerun changed the CSV"

# a torn last journal line (a kill mid-write) is dropped and the point rerun
mkdir torn && cp j1/sweep.json torn/ && head -n 5 j1/points.jsonl > torn/points.jsonl
printf '{"point":6,"axes":{"mod' >> torn/points.jsonl
expect_status 0 "$TPUSIM" sweep --out torn -j 2 $TR
expect_out_contains "3 run, 5 already done"
cmp torn/results.csv j1/results.csv || die "CSV after a torn line differs"

# a NUL byte in the journal (here after a whole entry, where a C-string
# parse used to stop and take the line) or a cut line before the last is
# bad input: exit 2 naming the file and line
mkdir nul && cp j1/sweep.json nul/ && head -n 2 j1/points.jsonl > nul/points.jsonl
sed -n 3p j1/points.jsonl | tr -d '\n' >> nul/points.jsonl && printf '\0garbage\n' >> nul/points.jsonl
expect_status 2 "$TPUSIM" sweep --out nul -j 2 $TR
expect_err_contains "nul/points.jsonl:3:"
expect_err_contains "contains a NUL byte"
mkdir cut && cp j1/sweep.json cut/
{ head -n 1 j1/points.jsonl; printf '{"point":6,"axes":{"mod\n'; sed -n 2p j1/points.jsonl; } > cut/points.jsonl
expect_status 2 "$TPUSIM" sweep --out cut -j 2 $TR
expect_err_contains "cut/points.jsonl:2: not a journal entry of this sweep"
# sweep.json too goes through the one text reader (run and merge)
mkdir nuldef && cp j1/sweep.json j1/points.jsonl nuldef/ && printf '\0x' >> nuldef/sweep.json
expect_status 2 "$TPUSIM" sweep --out nuldef -j 2 $TR
expect_err_contains "nuldef/sweep.json:"
expect_err_contains "contains a NUL byte"
expect_status 2 "$TPUSIM" sweep merge --no-plot --out nulm nuldef
expect_err_contains "contains a NUL byte"

# a chip configuration a point would refuse is found before any point
# runs: exit 2 with the key, the value and what is allowed, nothing written
expect_status 2 "$TPUSIM" sweep --out badset --no-plot $TR --set hbm.bandwidth_gb_per_s=abc
expect_err_contains "point 0: --set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got 'abc' (found before any point ran)"
[ ! -e badset ] || die "a sweep with a bad --set wrote $(ls badset)"

# kill -9 in the middle, then rerun: byte-identical to the uninterrupted sweep
BIG="train --model mlp --batch 32,64,128,256 --cores 1,2,4,8 --precision bf16,bf16x3,bf16x6 --level timing --data synthetic --steps-per-epoch 2"
expect_status 0 "$TPUSIM" sweep --no-plot --out full -j 2 $BIG
"$TPUSIM" sweep --no-plot --out killed -j 2 $BIG > /dev/null 2>&1 &
pid=$!
for i in $(seq 1 2000); do
  [ -f killed/points.jsonl ] && [ "$(wc -l < killed/points.jsonl)" -ge 3 ] && break
  sleep 0.005
done
kill -9 $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
n=$(wc -l < killed/points.jsonl)
expect_status 0 "$TPUSIM" sweep --no-plot --out killed -j 1 $BIG
cmp killed/results.csv full/results.csv || die "CSV after kill -9 ($n points done) and rerun differs"

# shards and merge: the same bytes
for s in 1 2 3; do expect_status 0 "$TPUSIM" sweep --no-plot --out sh$s --shard $s/3 -j 1 $BIG; done
expect_status 2 "$TPUSIM" sweep merge --out partial sh1 sh2
expect_err_contains "the shards hold 32 of the 48 points"
expect_status 0 "$TPUSIM" sweep merge --no-plot --out merged sh1 sh2 sh3
expect_out_contains "48 points from 3 shard directories"
cmp merged/results.csv full/results.csv || die "merged shards differ from the single sweep"

# a failing point is recorded and the others run; exit 1
expect_status 1 "$TPUSIM" sweep --out fail -j 2 train --model mlp --batch 32,33 --cores 2 --level timing --data synthetic --steps-per-epoch 1
grep -q '^1,33,failed,.*does not divide across 2 cores' fail/results.csv || die "failed point not recorded: $(cat fail/results.csv)"
grep -q '^0,32,ok,' fail/results.csv || die "the good point did not run"

# bad input: exit 2 with a message
expect_status 2 "$TPUSIM" sweep --out j1 -j 2 train --model mlp --batch 32,64 --level timing
expect_err_contains "holds a different sweep"
expect_status 2 "$TPUSIM" sweep --out bad train --model mlp --batch 32,64 --bogus 1
expect_err_contains "point 0: unknown option"
expect_status 2 "$TPUSIM" sweep --out bad --shard 4/3 train --model mlp
expect_err_contains "--shard 4/3"
expect_status 2 "$TPUSIM" sweep --out bad frobnicate --model mlp
expect_err_contains "expected the command to sweep"
expect_status 2 "$TPUSIM" sweep --out bad train --model mlp,,cnn
expect_err_contains "an empty value"

# matmul points (one core: no --threads) equal the single command
expect_status 0 "$TPUSIM" sweep --no-plot --out mm -j 2 matmul --m 64,128 --n 96 --k 32,256 --seed 3
expect_out_contains "4 run, 0 already done, 0 failed"
expect_status 0 "$TPUSIM" matmul --m 128 --n 96 --k 256 --seed 3 --json
echo "$OUT" > mm1.json
/usr/bin/python3 - mm/points.jsonl mm1.json <<'PY' || die "a matmul point differs from the single command"
import json, sys
p = [json.loads(l) for l in open(sys.argv[1])]
a = [e for e in p if e["point"] == 3][0]["report"]; b = json.load(open(sys.argv[2]))
for d in (a, b): d.pop("wall_s"); d.pop("tpusim_version", None)
assert {k: float(f"{v:.10g}") if isinstance(v, float) else v for k, v in a.items()} == b, (a, b)
PY
grep -q '^3,128,256,ok,' mm/results.csv || die "matmul CSV: $(cat mm/results.csv)"

# run and pipeline points: the single commands' figures; stall columns of run
EX="$TPU_ROOT/docs/examples/train_step.json"
expect_status 0 "$TPUSIM" sweep --no-plot --out rn -j 2 run --program "$EX" --chip teach --level tile,timing
expect_status 0 "$TPUSIM" run --program "$EX" --chip teach --level timing --json
c=$(echo "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["cycles"])')
grep -q "^1,timing,ok,$c," rn/results.csv || die "run sweep: $(cat rn/results.csv), single: $c cycles"
head -1 rn/results.csv | grep -q ',mxu_busy_cycles,mxu_busy_share,' || die "run CSV header: $(head -1 rn/results.csv)"
PL="$TPU_ROOT/datafeed/examples/prefetch.json"
expect_status 1 "$TPUSIM" sweep --no-plot --out pl -j 2 pipeline --config "$PL" --step-time 0.001,0.004 --host-cores 1,4 --timeline-steps 0
expect_status 0 "$TPUSIM" pipeline --config "$PL" --step-time 0.004 --host-cores 4 --timeline-steps 0 --json
t=$(echo "$OUT" | /usr/bin/python3 -c 'import json,sys; print("%.10g" % json.load(sys.stdin)["total_s"])')
grep -q "^3,0.004,4,ok,[0-9]*,0.004,$t," pl/results.csv || die "pipeline sweep: $(cat pl/results.csv), single total $t"
grep -q '^0,0.001,1,failed,.*1 cores cannot run this pipeline' pl/results.csv || die "pipeline failure not recorded"

# --file: the same sweep as the command line's, byte for byte; bad files exit 2 with line:col
cat > sw.json <<'JSON'
{ "command": "train",
  "options": { "model": "mlp", "level": "timing", "data": "synthetic", "steps-per-epoch": 2 },
  "axes": [ { "option": "batch", "values": [32, 64] },
            { "option": "cores", "values": [1, 2] },
            { "set": "mxu.rows", "values": [128, 64] } ] }
JSON
expect_status 0 "$TPUSIM" sweep --no-plot --out f1 --file sw.json
expect_status 0 "$TPUSIM" sweep --no-plot --out f2 train --model mlp --level timing --data synthetic --steps-per-epoch 2 --batch 32,64 --cores 1,2 --set mxu.rows=128,64
cmp f1/results.csv f2/results.csv || die "--file and the command line differ"
head -1 f1/results.csv | grep -q '^point,batch,cores,mxu.rows,status,' || die "file sweep header: $(head -1 f1/results.csv)"
bad_inputs "$TPUSIM" sweep --no-plot --out fb --file <<'CASES'
b1.json|{ "command": "train",\n  "axes": [ { "option": "batch", "values": [32, [1]] } ] }|b1.json:2:49: field 'axes[0].values[1]': expected a string or number without commas
b2.json|{ "command": "train", "axes": [ { "option": "batch", "set": "x", "values": [1] } ] }|b2.json:1:|give one of "option" and "set"
b3.json|{ "comand": "train" }|b3.json:1:|unknown field
b4.json|{ "command": "train", "options": { "model": "a,b" } }|field 'options.model': expected a string, number or boolean without commas
b5.json|{ "command": |b5.json:1:|
CASES
expect_status 2 "$TPUSIM" sweep --out fb --file sw.json train
expect_err_contains "holds the command and its options"

# a batch axis over one pipeline file: each point's --batch replaces the
# file's batch_size (train-prefetch.json batches 128)
expect_status 0 "$TPUSIM" sweep --no-plot --out pb -j 2 train --model mlp --pipeline "$TPU_ROOT/docs/examples/train-prefetch.json" \
  --batch 64,256 --steps-per-epoch 2 --level timing
grep -q '^0,64,ok,' pb/results.csv && grep -q '^1,256,ok,' pb/results.csv || die "batch axis over a pipeline: $(cat pb/results.csv)"
/usr/bin/python3 - pb/points.jsonl <<'PY' || die "batch axis over a pipeline: global_batch"
import json, sys
p = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda e: e["point"])
assert [e["report"]["global_batch"] for e in p] == [64, 256], [e["report"]["global_batch"] for e in p]
PY

# a sweep whose points all fail says why, not gnuplot's "x range is invalid";
# gnuplot's warnings (one point left on a line) stay off the terminal (#32)
expect_status 1 "$TPUSIM" sweep --out allf matmul --chip teach --cores 4 --m 8 --n 8 --k 16777216,16777000 --level timing
expect_err_contains "allf/results.csv: no point ran (2 failed), nothing to plot; the first failures: point 0: the GEMM's HBM buffers"
! grep -q "x range" "$T/err.txt" || die "gnuplot's message leaked"
expect_status 1 "$TPUSIM" sweep --out onef matmul --chip teach --cores 4 --m 8 --n 8 --k 8,16777216 --level timing
! grep -qi "warning" "$T/err.txt" || die "gnuplot's warnings leaked: $(cat "$T/err.txt")"
[ -s onef/cycles-vs-k.png ] || die "the point that ran is drawn"
# one palette: the stall-shares plot colours each part as the window does
# (sim/stall.def: mxu_busy green), and widens with the points (#32)
expect_status 0 "$TPUSIM" sweep --out pal -j 2 train --model mlp --data synthetic --synthetic-n 256 --batch 32,64 --level timing --steps-per-epoch 2
grep -qF "lc rgb '#2ca02c' title 'mxu_busy'" pal/stall-shares.gp || die "stall-shares.gp: mxu_busy is not the window's green"
grep -qF "lc rgb '#d62728' title 'infeed_wait'" pal/stall-shares.gp || die "stall-shares.gp: infeed_wait is not the window's red"
/usr/bin/python3 - <<'PY'
import csv
rows = list(csv.reader(open("pal/results.csv")))
h, r = rows[0], rows[1]
w = csv.writer(open("pal60.csv", "w"))
w.writerow(h)
for i in range(60):
    x = list(r); x[0] = str(i); x[h.index("batch")] = str(8 * (i + 1)); w.writerow(x)
PY
mkdir -p p60
expect_status 0 "$TPUSIM" plot pal60.csv --out p60
grep -q "set terminal pngcairo size 1360,600" p60/stall-shares.gp || die "60 points: the stall-shares plot is not widened"
