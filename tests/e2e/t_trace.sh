# Traces as Perfetto reads them (tests/e2e/trace_check.py): on every track
# slices follow one another or nest, flows join slices, counters are
# numbers; for each command that writes a trace. The checker itself is
# shown to fail on a trace whose DMAs overlap on one track (the layout of
# the writer of 0.2.0: about 8.5% of a training trace's slices lost).
CHECK="/usr/bin/python3 $TPU_ROOT/tests/e2e/trace_check.py"
expect_status 0 "$TPUSIM" run --program "$TPU_ROOT/docs/examples/train_step.json" --chip teach --trace run.json
expect_status 0 "$TPUSIM" matmul --cores 4 --m 512 --n 256 --k 384 --chip teach --level tile --trace mm.json
expect_status 0 "$TPUSIM" matmul --cores 8 --m 4096 --n 1024 --k 2048 --chip tpu-v2-8 --level timing --trace mm8.json
expect_status 0 "$TPUSIM" train --model cnn --level timing --data synthetic --steps-per-epoch 3 --trace cnn.json
expect_status 0 "$TPUSIM" train --model mlp --data synthetic --steps-per-epoch 2 --epochs 2 --trace mlp.json
for f in run mm mm8 cnn mlp; do
  out=$($CHECK $f.json) || die "$f.json is not a valid trace: $out"
done
# the pieces Perfetto shows: a second track where a unit's ops overlap,
# counters of DMAs in flight and HBM GB/s, flows from a DMA to a matmul
/usr/bin/python3 - cnn.json <<'PY' || die "trace content"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert any(" #2" in n for n in names.values()), sorted(set(names.values()))
counters = {e["name"] for e in ev if e["ph"] == "C"}
assert counters == {"DMA in flight", "HBM GB/s"}, counters
flows = [e for e in ev if e["ph"] in "sf"]
assert flows and {names[(e["pid"], e["tid"])].split(" #")[0] for e in flows} == {"DMA", "MXU"}
steps = {e["args"]["step"] for e in ev if e["ph"] == "X"}
assert steps == {0, 1, 2}, steps
PY
# the checker fails on overlapping slices of one track
cat > bad.json <<'J'
{"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 3, "args": {"name": "DMA"}},
 {"ph": "X", "pid": 0, "tid": 3, "ts": 1.0, "dur": 2.0, "name": "a"},
 {"ph": "X", "pid": 0, "tid": 3, "ts": 2.0, "dur": 2.0, "name": "b"}]}
J
out=$($CHECK bad.json) && die "the checker accepted overlapping slices"
case "$out" in *"'b' [2.0, 4.0) overlaps 'a' [1.0, 3.0)"*) ;; *) die "checker message: $out" ;; esac
# more transfers in flight than the first 99 lanes of a unit (dma.outstanding
# goes to 4096): each still gets a track of its own, none shared with
# another unit's (the writer once piled the rest onto lane 99)
/usr/bin/python3 - <<'PY'
import json
n = 300
bufs = [{"name": "h%d" % i, "space": "hbm", "shape": [8, 8]} for i in range(n)]
bufs += [{"name": "v%d" % i, "space": "vmem", "shape": [8, 8]} for i in range(n)]
json.dump({"cores": 4, "buffers": bufs, "ops": [{"op": "dma", "src": "h%d" % i, "dst": "v%d" % i} for i in range(n)]},
          open("manydma.json", "w"))
PY
expect_status 0 "$TPUSIM" run --program manydma.json --chip teach --set dma.outstanding=1000 --level timing --trace md.json
out=$($CHECK md.json) || die "md.json is not a valid trace: $out"
/usr/bin/python3 - md.json <<'PY' || die "lanes past 99"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
d = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e["ph"] == "X" and e["pid"] == 0 and e["name"].startswith("dma")]
edges = sorted([(a, 1) for a, b in d] + [(b, -1) for a, b in d], key=lambda x: (x[0], x[1]))
c = m = 0
for _, k in edges:
    c += k
    m = max(m, c)
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 0}
dma = [t for t, nm in names.items() if nm.split(" #")[0] == "DMA"]
assert m > 99 and len(dma) == m, (m, len(dma))
assert len(names) == len(set(names)), "tids shared"
PY
