# tpusim pipeline: every shipped example runs, the model's figures for the
# hand-checkable cases, the Ray ordering, autotune reporting, --real, and bad
# configurations (exit 2 naming file, field and line:col).
EX=$TPU_ROOT/datafeed/examples
[ -d "$EX" ] || die "examples not found under $EX"
n=0
for f in "$EX"/*.json; do
  expect_status 0 "$TPUSIM" pipeline --config "$f" --json
  echo "$OUT" > r.json
  /usr/bin/python3 -c 'import json,sys; d=json.load(open("r.json")); assert d["total_s"]>0 and d["steps"]>0 and 0<=d["input_bound_share"]<=1, d' || die "$f: bad JSON result"
  expect_status 0 "$TPUSIM" pipeline --config "$f"
  expect_out_contains "total time"
  expect_out_contains "train (consumer)"
  n=$((n + 1))
done
[ $n -ge 12 ] || die "expected at least 12 examples, found $n"
# naive: 24 steps of (read 15 ms + train 10 ms) and 8 opens of 30 ms = 0.84 s
expect_status 0 "$TPUSIM" pipeline --config "$EX/naive.json" --json
echo "$OUT" > n.json
/usr/bin/python3 -c 'import json; d=json.load(open("n.json")); assert abs(d["total_s"]-0.84)<1e-9, d["total_s"]' || die "naive total"
# prefetch: reading is the bottleneck, train overlaps it; each of the 2
# epochs is a fresh iteration, so its last step is not hidden:
# 2 x (12*0.015 + 4*0.03 + 0.01) = 0.62 s
expect_status 0 "$TPUSIM" pipeline --config "$EX/prefetch.json" --json
echo "$OUT" > p.json
/usr/bin/python3 -c 'import json; d=json.load(open("p.json")); assert abs(d["total_s"]-0.62)<1e-9, d["total_s"]; assert "stages[1].buffer_size" in d["autotune"]; assert d["input_verdict"].startswith("highly input-bound:")' || die "prefetch total/autotune/verdict"
# --pipeline and --config are the same option (train takes --pipeline too)
"$TPUSIM" pipeline --config "$EX/cache.json" --json > c1.json || die "--config"
"$TPUSIM" pipeline --pipeline "$EX/cache.json" --json > c2.json || die "--pipeline"
cmp -s c1.json c2.json || die "--pipeline and --config differ"
expect_status 0 "$TPUSIM" pipeline --pipeline "$EX/map_vectorized.json"
expect_out_contains "of the time waiting for input: "
# each fix of the guide removes wait
w() { "$TPUSIM" pipeline --config "$EX/$1.json" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["wait_mean_s"])'; }
/usr/bin/python3 - "$(w naive)" "$(w prefetch)" "$(w interleave_parallel)" "$(w map_sequential)" "$(w map_parallel)" "$(w cache)" "$(w map_scalar)" "$(w map_vectorized)" "$(w ray_one_generator)" "$(w ray_processes)" "$(w ray_shared_memory)" <<'PY' || die "wait ordering"
import sys
naive, pf, pil, mseq, mpar, cache, msc, mvec, rt, rp, rs = map(float, sys.argv[1:])
assert pf < naive and pil < pf, (naive, pf, pil)
assert mpar < mseq and cache < mseq, (mseq, mpar, cache)
assert mvec < msc, (msc, mvec)
assert rt > rp > rs, (rt, rp, rs)
PY
# flags override the file; the timeline has one row per worker
expect_status 0 "$TPUSIM" pipeline --config "$EX/map_parallel.json" --host-cores 4 --steps 10 --step-time 0.005 --timeline-steps 2 --width 40
expect_out_contains "consumer     10 steps of 0.005 s"
expect_out_contains "map #"
# the real pipeline runs the same description
expect_status 0 "$TPUSIM" pipeline --config "$EX/map_parallel.json" --real
expect_out_contains "real run     24 images"

# --epochs: fresh iterations; the guide's prefetch case for 3 epochs is
# 3 x (0.03 + 3 x 0.015 + 0.01) = 0.255 s; a pipeline repeating forever needs --steps
expect_status 0 "$TPUSIM" pipeline --pipeline "$TPU_ROOT/datafeed/examples/guide/prefetch.json" --epochs 3 --json
echo "$OUT" > ep.json
/usr/bin/python3 -c 'import json; d=json.load(open("ep.json")); assert d["steps"] == 9 and abs(d["total_s"] - 0.255) < 1e-9, d["total_s"]' || die "--epochs 3"
expect_status 2 "$TPUSIM" pipeline --pipeline "$TPU_ROOT/docs/examples/train-prefetch.json" --epochs 2
expect_err_contains "repeats forever; give --steps too"
# take, skip and filter: the model counts what they keep, the real run reads it
printf '{ "source": { "kind": "synthetic", "n": 40, "shape": [2,2], "classes": 4 },\n  "stages": [ { "op": "skip", "count": 4 }, { "op": "filter", "label_in": [1, 2], "keep_fraction": 0.5 },\n    { "op": "take", "count": 10 }, { "op": "batch", "batch_size": 5 } ], "consumer": { "epochs": 2 } }' > tsf.json
expect_status 0 "$TPUSIM" pipeline --pipeline tsf.json --json --real
echo "$OUT" > tsf.out
/usr/bin/python3 -c 'import json; d=json.load(open("tsf.out")); assert d["steps"] == 4 and d["real"]["images"] == 20, d["steps"]' || die "take/skip/filter counts"

# bad input: exit 2 and a message with file, field, line:col
bad_inputs "$TPUSIM" pipeline --config <<'CASES'
neg.json|{ "source": { "kind": "synthetic", "n": 10, "shape": [2,2], "classes": 2 },\n  "stages": [ { "op": "batch", "batch_size": -4 } ] }|neg.json:2:46: field 'stages[0].batch_size': expected an integer in 1..1048576, got -4
unk.json|{ "source": { "kind": "synthetic", "n": 10, "shape": [2,2], "classes": 2 },\n  "stages": [ { "op": "prefetch", "bufer_size": 2 } ] }|unk.json:2:|field 'stages[0].bufer_size': unknown key; allowed here: op, buffer_size
trunc.json|{ "source": { "kind": "synthetic", "n": 10,\n|trunc.json:2:|malformed JSON
wk.json|{ "source": { "kind": "synthetic", "n": 10, "shape": [2,2], "classes": 2 },\n  "stages": [ { "op": "workers", "kind": "fork", "count": 2 } ] }|wk.json:2:42: field 'stages[0].kind': expected thread, process or shared_memory, got 'fork'
flt.json|{ "source": { "kind": "synthetic", "n": 10, "shape": [2,2], "classes": 2 },\n  "stages": [ { "op": "filter", "label_in": ["a"] } ] }|flt.json:2:|field 'stages[0].label_in': expected labels
csv.json|{ "source": { "kind": "csv", "path": "x.csv" }, "stages": [ { "op": "batch", "batch_size": 2 } ] }|source.elements
CASES
expect_status 2 "$TPUSIM" pipeline --config no-such.json
expect_err_contains "no-such.json: cannot open"
expect_status 2 "$TPUSIM" pipeline
expect_err_contains "--pipeline FILE.json is required"
expect_status 2 "$TPUSIM" pipeline --config neg.json --steps 0
# a truncated data file is reported by --real with its name
/usr/bin/python3 - <<'PY'
import struct
open("img", "wb").write(struct.pack(">IIII", 0x803, 50, 4, 4) + bytes(50 * 16 - 7))
open("lab", "wb").write(struct.pack(">II", 0x801, 50) + bytes(50))
PY
printf '{ "source": { "kind": "idx", "images": "img", "labels": "lab", "elements": 50 },\n  "stages": [ { "op": "batch", "batch_size": 5 } ] }' > idx.json
expect_status 2 "$TPUSIM" pipeline --config idx.json --real
expect_err_contains "img: truncated"
expect_status 0 "$TPUSIM" pipeline --help
expect_out_contains "--pipeline FILE"
# The tf.data guide's exact setups (datafeed/examples/guide/) against the
# mechanism's closed forms, derived by hand from the guide's costs (open
# 30 ms, read 15 ms per sample, 3 samples per file, train 10 ms, 2 epochs):
#   naive: 2 x (0.03 + 3 x (0.015 + 0.01))                  = 0.21 s
#   prefetch: the reads hide all but each epoch's last train step
#             (each epoch is a fresh iteration):
#             2 x (0.03 + 3 x 0.015 + 0.01)                  = 0.17 s
#   sequential interleave of 2 files: 2 x (2 x 0.03 + 6 x 0.025) = 0.42 s
#   sequential 30 ms map: 2 x (0.03 + 3 x (0.015 + 0.03 + 0.01)) = 0.39 s
#   scalar map: 20000 calls x 10 us, no training            = 0.20 s
G=$TPU_ROOT/datafeed/examples/guide
for pair in naive:0.21 prefetch:0.17 interleave_sequential:0.42 map_sequential:0.39 map_scalar:0.2; do
  name=${pair%%:*}; want=${pair#*:}
  expect_status 0 "$TPUSIM" pipeline --config "$G/$name.json" --json
  echo "$OUT" > g.json
  /usr/bin/python3 -c 'import json,sys; t=json.load(open("g.json"))["total_s"]; w=float(sys.argv[1]); assert abs(t-w) < 1e-9, (sys.argv[2], t, w)' "$want" "$name" \
    || die "guide $name: total_s is not $want"
done

# TFRecord files of tf.train.Example (written here by tfrecord_write.py: its
# own CRC-32C and protobuf encoding): 2 files of 3 and 2 records, 2x2x3 raw images, the
# label feature named "y"; --real reads them all, a spoiled record is named.
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
from tfrecord_write import example as ex, record
def example(i, img=None):
    return ex(bytes((i * 11 + k) & 255 for k in range(12)) if img is None else img, i % 3, label_key=b"y")
open("a.tfrecord", "wb").write(b"".join(record(example(i)) for i in range(3)))
open("b.tfrecord", "wb").write(b"".join(record(example(i)) for i in range(3, 5)))
bad = bytearray(open("b.tfrecord", "rb").read()); bad[-3] ^= 1      # record 1's data CRC
open("bad.tfrecord", "wb").write(bytes(bad))
open("png.tfrecord", "wb").write(record(example(0, b"\x89PNG\r\n\x1a\n" + bytes(30))))
PY
tfr() { printf '{ "source": { "kind": "tfrecord", "files": %s, "shape": [2, 2, 3], "label_feature": "y", "elements": 5,\n  "open_latency_s": 0.01, "read_bandwidth_bytes_per_s": 1e5 },\n  "stages": [ { "op": "batch", "batch_size": 5 } ], "consumer": { "step_time_s": 0.001 } }' "$1" > "$2"; }
tfr '["a.tfrecord", "b.tfrecord"]' tfr.json
expect_status 0 "$TPUSIM" pipeline --pipeline tfr.json --json --real
echo "$OUT" > tfr.out
# model: 2 opens of 10 ms, 5 x 28 bytes at 1e5 B/s = 1.4 ms, one 1 ms step
/usr/bin/python3 -c 'import json; d=json.load(open("tfr.out")); assert d["steps"] == 1 and d["real"]["images"] == 5 and abs(d["total_s"] - 0.0224) < 1e-9, d' || die "tfrecord pipeline"
tfr '"*.tfrecord"' glob.json        # a glob pattern takes bad.tfrecord too (name order: a, b, bad)
expect_status 2 "$TPUSIM" pipeline --pipeline glob.json --real
expect_err_contains "bad.tfrecord: record 1: corrupt data (masked CRC-32C mismatch)"
tfr '["png.tfrecord"]' png.json
expect_status 2 "$TPUSIM" pipeline --pipeline png.json --real
expect_err_contains "png.tfrecord: record 0: bad tf.train.Example: feature 'image' holds a PNG-encoded image"
tfr '3' num.json
expect_status 2 "$TPUSIM" pipeline --pipeline num.json
expect_err_contains "field 'source.files': expected a list of 1 to 256 TFRecord file paths"
printf '{ "source": { "kind": "tfrecord", "files": ["a.tfrecord"], "elements": 3 },\n  "stages": [ { "op": "batch", "batch_size": 3 } ] }' > noshape.json
expect_status 2 "$TPUSIM" pipeline --pipeline noshape.json
expect_err_contains "source.shape"
tfr '"nothing-*.tfrecord"' none.json
expect_status 2 "$TPUSIM" pipeline --pipeline none.json
expect_err_contains "nothing-*.tfrecord: no TFRecord files there"
