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
# the pipeline runs on the host: --chip and --set are refused, not ignored
expect_status 2 "$TPUSIM" pipeline --pipeline "$EX/cache.json" --set hbm.bandwidth_gb_per_s=1
expect_err_contains "--set: the pipeline runs on the host and simulates no chip"
expect_status 2 "$TPUSIM" pipeline --chip=teach --pipeline "$EX/cache.json"
expect_err_contains "--chip: the pipeline runs on the host"
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
# The tf.data guide's exact setups (datafeed/examples/guide/), the ideal
# timeline (no overheads), against the mechanism's closed forms, derived by
# hand from the guide's costs (open
# 30 ms, read 15 ms per sample, 3 samples per file, train 10 ms, 2 epochs):
#   naive: 2 x (0.03 + 3 x (0.015 + 0.01))                  = 0.21 s
#   prefetch: the reads hide all but each epoch's last train step
#             (each epoch is a fresh iteration):
#             2 x (0.03 + 3 x 0.015 + 0.01)                  = 0.17 s
#   sequential interleave of 2 files: 2 x (2 x 0.03 + 6 x 0.025) = 0.42 s
#   sequential 30 ms map: 2 x (0.03 + 3 x (0.015 + 0.03 + 0.01)) = 0.39 s
#   scalar map: 20000 calls x 10 us, no training            = 0.20 s
#   parallel interleave of 2 files (2 lanes, both opened at 0): the first
#             elements at 45 ms, then 2 reads per 15 ms against 2 steps
#             per 20 ms: 2 x (0.03 + 0.015 + 6 x 0.01)          = 0.21 s
#   parallel 30 ms map (reads stay in order, maps overlap): the last map
#             ends at 0.03 + 3 x 0.015 + 0.03, then one step:
#             2 x (0.03 + 3 x 0.015 + 0.03 + 0.01)            = 0.23 s
#   cache, 5 epochs: the first as the sequential map, 0.03 + 3 x 0.055,
#             the other 4 read the cache: 4 x 3 x 0.01       = 0.315 s
#   vectorized map: 40 batches of 256 (the last of 16) a call each,
#             2 epochs x 40 x 10 us                          = 0.0008 s
G=$TPU_ROOT/datafeed/examples/guide
for pair in naive:0.21 prefetch:0.17 interleave_sequential:0.42 map_sequential:0.39 map_scalar:0.2 \
            interleave_parallel:0.21 map_parallel:0.23 cache:0.315 map_vectorized:0.0008; do
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
# model: 2 opens of 10 ms, 5 records of 56 bytes (the files' mean: 16 of
# framing and a 40-byte Example) at 1e5 B/s = 2.8 ms, one 1 ms step
/usr/bin/python3 -c 'import json; d=json.load(open("tfr.out")); assert d["steps"] == 1 and d["real"]["images"] == 5 and abs(d["total_s"] - 0.0238) < 1e-9, d' || die "tfrecord pipeline"
tfr '"*.tfrecord"' glob.json        # a glob pattern takes bad.tfrecord too (name order: a, b, bad)
expect_status 2 "$TPUSIM" pipeline --pipeline glob.json --real
expect_err_contains "bad.tfrecord: record 1: corrupt data (masked CRC-32C mismatch)"
tfr '["png.tfrecord"]' png.json
expect_status 2 "$TPUSIM" pipeline --pipeline png.json --real
expect_err_contains "png.tfrecord: record 0: feature 'image': undecodable PNG data"
tfr '3' num.json
expect_status 2 "$TPUSIM" pipeline --pipeline num.json
expect_err_contains "field 'source.files': expected a list of 1 to 256 TFRecord file paths"
printf '{ "source": { "kind": "tfrecord", "files": ["a.tfrecord"], "elements": 3 },\n  "stages": [ { "op": "batch", "batch_size": 3 } ] }' > noshape.json
expect_status 2 "$TPUSIM" pipeline --pipeline noshape.json
expect_err_contains "source.shape"
tfr '"nothing-*.tfrecord"' none.json
expect_status 2 "$TPUSIM" pipeline --pipeline none.json
expect_err_contains "nothing-*.tfrecord: no TFRecord files there"

# A directory of class folders of JPEG and PNG images, read as Keras'
# image_dataset_from_directory reads it (tests/e2e/image_write.py writes the
# PNGs with zlib and holds Keras' index_directory and tf.image.resize written
# out with numpy; cjpeg encodes the JPEGs and djpeg -dct fast decodes them as
# TensorFlow's decoder does). --real --npy gives what the pipeline made:
# every value is checked, PNGs exactly, JPEGs against djpeg, resized ones
# against the numpy resize.
mkdir -p flowers/roses flowers/daisy/more flowers/tulips flowers/.thumbs
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
import numpy as np
from image_write import png, ppm
rng = np.random.RandomState(1)
def img(h, w, c=3):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([(40 + 5 * x + 3 * y + 60 * k + rng.randint(0, 4, (h, w))) % 256 for k in range(c)], -1).astype(np.uint8)
for i in range(3):
    png("flowers/roses/r%d.png" % i, img(12, 16))
    ppm("j%d.ppm" % i, img(12, 16))
png("flowers/daisy/d0.png", img(12, 16, 4))          # RGBA: the alpha goes (color_mode rgb)
png("flowers/daisy/more/d1.png", img(6, 8))          # resized to 12x16
png("flowers/tulips/t0.png", img(12, 16, 1))         # grey: replicated to RGB
png("flowers/.thumbs/x.png", img(2, 2))              # not a class
open("flowers/daisy/notes.txt", "w").write("not an image")
PY
for i in 0 1 2; do cjpeg -quality 90 j$i.ppm > flowers/tulips/j$i.JPG; djpeg -dct fast -pnm flowers/tulips/j$i.JPG > j$i.ref.ppm; done
img_json() { printf '{ "source": { "kind": "images", "dir": "flowers", "image_size": [12, 16]%s },\n  "stages": [ { "op": "batch", "batch_size": 4 } ] }' "$1" > "$2"; }
img_json ', "shuffle": false' img.json
expect_status 0 "$TPUSIM" pipeline --pipeline img.json --real --npy all --epochs 1
img_json ', "validation_split": 0.3, "subset": "training", "seed": 123' tr.json
expect_status 0 "$TPUSIM" pipeline --pipeline tr.json --real --npy tr --epochs 1 --json
echo "$OUT" > tr.out
img_json ', "validation_split": 0.3, "subset": "validation", "seed": 123' va.json
expect_status 0 "$TPUSIM" pipeline --pipeline va.json --real --npy va --epochs 1
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY' || die "images source values"
import json, os, zlib, struct
import numpy as np
from image_write import keras_index, tf_resize_bilinear, to_u8, read_pnm
def png_read(path):          # our own PNG reader for the 8-bit files written above
    d = open(path, "rb").read(); pos = 8; idat = b""
    while pos < len(d):
        n, t = struct.unpack(">I4s", d[pos:pos + 8]); body = d[pos + 8:pos + 8 + n]; pos += 12 + n
        if t == b"IHDR": w, h, _, ct = struct.unpack(">IIBB", body[:10])
        if t == b"IDAT": idat += body
    c = {0: 1, 4: 2, 2: 3, 6: 4}[ct]; raw = zlib.decompress(idat)
    return np.frombuffer(b"".join(raw[y * (w * c + 1) + 1:(y + 1) * (w * c + 1)] for y in range(h)), np.uint8).reshape(h, w, c)
def expected(path):
    if path.lower().endswith(".jpg"):
        return read_pnm(path.split("/")[-1].replace(".JPG", ".ref.ppm"))
    p = png_read(path)
    p = np.repeat(p, 3, -1) if p.shape[2] == 1 else p[:, :, :3]
    return to_u8(tf_resize_bilinear(p, 12, 16))
for prefix, kw in [("all", dict(shuffle=False)), ("tr", dict(seed=123, validation_split=0.3, subset="training")),
                   ("va", dict(seed=123, validation_split=0.3, subset="validation"))]:
    paths, labels, classes = keras_index("flowers", **kw)
    assert classes == ["daisy", "roses", "tulips"], classes
    x, y = np.load(prefix + "_x.npy"), np.load(prefix + "_y.npy")
    assert x.shape == (len(paths), 12, 16, 3), (prefix, x.shape, len(paths))
    assert list(y.astype(int)) == labels, (prefix, y, labels)
    for i, p in enumerate(paths):
        assert (x[i] == expected(p)).all(), (prefix, p, np.abs(x[i] - expected(p)).max())
assert len(keras_index("flowers", seed=123, validation_split=0.3, subset="validation")[0]) == 2
d = json.load(open("tr.out"))       # the model's sizes: 7 images, one file each
assert d["steps"] == 2, d["steps"]
PY
# an undecodable image is named by its path; so is a corrupt record of JPEGs in a TFRecord
cp flowers/tulips/j1.JPG keep.jpg
head -c 300 keep.jpg > flowers/tulips/j1.JPG
expect_status 2 "$TPUSIM" pipeline --pipeline img.json --real
expect_err_contains "flowers/tulips/j1.JPG: undecodable JPEG data: Premature end of JPEG file"
printf 'GIF89a\001\000\001\000' > flowers/tulips/j1.JPG
expect_status 2 "$TPUSIM" pipeline --pipeline img.json --real
expect_err_contains "flowers/tulips/j1.JPG: a GIF image: tpusim decodes JPEG and PNG only"
cp keep.jpg flowers/tulips/j1.JPG

# TFRecord files of JPEG Examples in the Flowers layout (image JPEG bytes, an
# int64 'class', the name in 'label'): decoded as djpeg decodes them; a
# record whose image is cut short, and a record cut short, are named
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
from tfrecord_write import flowers_example, record
jpg = [open("flowers/tulips/j%d.JPG" % i, "rb").read() for i in range(3)]
names = [b"daisy", b"dandelion", b"roses", b"sunflowers", b"tulips"]
recs = [record(flowers_example(jpg[i % 3], i % 5, names[i % 5], (12, 16))) for i in range(5)]
open("fl00.tfrec", "wb").write(b"".join(recs[:3]))
open("fl01.tfrec", "wb").write(b"".join(recs[3:]))
open("cut.tfrec", "wb").write(b"".join(recs[:2]) + record(flowers_example(jpg[0][:250], 0, b"daisy", (12, 16))))
open("short.tfrec", "wb").write(b"".join(recs)[:-40])
PY
fl_json() { printf '{ "source": { "kind": "tfrecord", "files": %s, "shape": [12, 16, 3], "classes": 5,\n  "open_latency_s": 0.01, "decode_cost_per_element_s": 0.002 },\n  "stages": [ { "op": "batch", "batch_size": 5 } ], "consumer": { "step_time_s": 0.001 } }' "$1" > "$2"; }
fl_json '"fl0*.tfrec"' fl.json
expect_status 0 "$TPUSIM" pipeline --pipeline fl.json --real --npy fl --json
echo "$OUT" > fl.out
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY' || die "tfrecord jpeg values"
import json
import numpy as np
from image_write import read_pnm
x, y = np.load("fl_x.npy"), np.load("fl_y.npy")
assert x.shape == (5, 12, 16, 3) and list(y.astype(int)) == [0, 1, 2, 3, 4], (x.shape, y)
for i in range(5):
    assert (x[i] == read_pnm("j%d.ref.ppm" % (i % 3))).all(), i
# the model: 2 files opened (10 ms each), 5 records decoded (2 ms each), the records' bytes at no cost
d = json.load(open("fl.out"))
assert abs(d["total_s"] - (0.02 + 5 * 0.002 + 0.001)) < 1e-9, d["total_s"]
PY
fl_json '["cut.tfrec"]' cut.json
expect_status 2 "$TPUSIM" pipeline --pipeline cut.json --real
expect_err_contains "cut.tfrec: record 2: feature 'image': undecodable JPEG data: Premature end of JPEG file"
fl_json '["short.tfrec"]' short.json
expect_status 2 "$TPUSIM" pipeline --pipeline short.json --real
expect_err_contains "short.tfrec: record 4: truncated ("

# --measure runs the stages on threads spending the costs (sleeps): never
# faster than the ideal timeline (that would be more concurrency than
# tf.data's semantics allow), and not far from it; what is modelled only
# (workers) is refused. The 10 % comparison on a quiet machine is
# tests/bench/b_datafeed.sh (make bench).
for name in naive prefetch interleave_parallel map_parallel cache; do
  expect_status 0 "$TPUSIM" pipeline --pipeline "$G/$name.json" --measure --json
  echo "$OUT" > m.json
  /usr/bin/python3 -c 'import json,sys; d=json.load(open("m.json")); m=d["measured"]; assert m["steps"] == d["steps"] and d["total_s"] - 0.001 <= m["total_s"] <= 2 * d["total_s"] + 0.05, (sys.argv[1], d["total_s"], m)' "$name" \
    || die "measured $name"
done
# a run that ends inside an epoch stops a parallel map and the prefetch behind it
expect_status 0 "$TPUSIM" pipeline --pipeline "$TPU_ROOT/datafeed/examples/map_parallel.json" --measure --steps 3
expect_status 2 "$TPUSIM" pipeline --pipeline "$TPU_ROOT/datafeed/examples/ray_processes.json" --measure --steps 2
expect_err_contains "--measure: a workers stage is not run for real"
expect_status 2 "$TPUSIM" pipeline --pipeline "$G/naive.json" --npy x
expect_err_contains "--npy writes what the real pipeline gives: add --real"
