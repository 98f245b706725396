# The findings of the outside bad-input sweep (#18), one section each: the
# input that went wrong, and what it gives now. Each failed on the release
# before the fix (see the commit that added it). The corpus of every other
# bad input is tests/e2e/t_badinput.sh.
S="--data synthetic --synthetic-n 256 --batch 64"
PY=/usr/bin/python3
# idx DIR H W TEST_H TEST_W [gz]: the four MNIST-style IDX files, 256
# training and 64 test images of random pixels, labels 0..9
idx() {
  $PY - "$@" <<'PY'
import gzip, os, random, struct, sys
d, h, w, th, tw = sys.argv[1], *map(int, sys.argv[2:6])
gz = len(sys.argv) > 6
os.makedirs(d, exist_ok=True)
r = random.Random(0)
for pre, n, hh, ww in (("train", 256, h, w), ("t10k", 64, th, tw)):
    img = struct.pack(">BBBBIII", 0, 0, 8, 3, n, hh, ww) + bytes(r.randrange(256) for _ in range(n * hh * ww))
    lab = struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes(r.randrange(10) for _ in range(n))
    for kind, data in (("images-idx3", img), ("labels-idx1", lab)):
        p = "%s/%s-%s-ubyte" % (d, pre, kind)
        open(p + (".gz" if gz else ""), "wb").write(gzip.compress(data) if gz else data)
PY
}
# no report prints nan or inf, and every JSON number is finite
no_nan() { ! grep -qiE '(^|[^a-z0-9_.])-?(nan|inf|infinity)([^a-z0-9_.]|$)' "$T/out.txt" || die "nan or inf in the output: $OUT"; }

# {== Crashes (1): every split of a data source is checked against the model.
# The test split of another image size was read past its buffer (ASan: heap
# over-read in fe_forward; the release build exited 0 with garbage accuracy).
idx d1 28 28 32 32
expect_status 2 "$TPUSIM" train --model mlp --data d1 --batch 64 --cores 2
expect_err_contains "--data d1 (test split): d1/t10k-images-idx3-ubyte: the test split has samples of 32x32x1 and 10 classes; the model takes input 28x28x1"
# IDX files carry no class count: a 5-unit model takes labels 0..4 (it was
# refused: "the training split has samples of 32x32x3 and 10 classes"), and a
# label past the model's units is named with its file and element (#33)
$PY - <<'PY'
import os, random, struct
os.makedirs("d5", exist_ok=True)
r = random.Random(1)
for pre, n in (("train", 128), ("t10k", 32)):
    img = struct.pack(">BBBBIIII", 0, 0, 8, 4, n, 32, 32, 3) + bytes(r.randrange(256) for _ in range(n * 32 * 32 * 3))
    lab = struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes(r.randrange(5) for _ in range(n))
    open("d5/%s-images-idx3-ubyte" % pre, "wb").write(img)
    open("d5/%s-labels-idx1-ubyte" % pre, "wb").write(lab)
PY
echo '{ "input": [32, 32, 3], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 5 } ] }' > five.json
echo '{ "input": [32, 32, 3], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 4 } ] }' > four.json
expect_status 0 "$TPUSIM" train --model five.json --data d5 --batch 32 --cores 2
expect_status 2 "$TPUSIM" train --model four.json --data d5 --batch 32 --cores 2
expect_err_contains "d5/train-labels-idx1-ubyte: label 4 of element "
expect_err_contains "is out of range; allowed 0..3"
# TFRecord: one reader, one message. A record whose length runs past the
# file (its CRC valid), or a gzip'd file, gave "validation_split 0.2 of 2
# records leaves the training subset empty" where the reader says what is
# wrong (#33); the record count now checks the framing as the reader does
PYTHONPATH="$TPU_ROOT/tests/e2e" $PY - <<'PY'
import gzip, struct
from tfrecord_write import record, example, masked
recs = b"".join(record(example(bytes(range(12)), k % 2)) for k in range(2))
n = struct.pack("<Q", 1 << 63)
open("long.tfrecord", "wb").write(recs + n + struct.pack("<I", masked(n)) + b"xxxx")
open("gz.tfrecord", "wb").write(gzip.compress(recs))
PY
echo '{ "input": [2, 2, 3], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 2 } ] }' > m223.json
expect_status 2 "$TPUSIM" train --model m223.json --data tfrecord:long.tfrecord --batch 2 --cores 1
expect_err_contains "long.tfrecord: record 2: truncated (9223372036854775808 data bytes and a 4-byte CRC announced, 4 bytes left)"
expect_status 2 "$TPUSIM" train --model m223.json --data tfrecord:gz.tfrecord --batch 2 --cores 1
expect_err_contains "gz.tfrecord: record 0: corrupt length (masked CRC-32C mismatch); the file is gzip data: decompress it first"
idx d2 32 32 28 28
expect_status 2 "$TPUSIM" train --model mlp --data d2 --batch 64 --cores 2 --level timing
expect_err_contains "d2/train-images-idx3-ubyte: the training split has samples of 32x32x1"
# a pipeline's source fits the model, but --data's test split does not
printf '{ "source": { "kind": "synthetic", "n": 128, "shape": [32, 32, 3], "classes": 10 },\n  "stages": [ { "op": "batch", "batch_size": 64, "drop_remainder": true } ] }' > rgb.json
printf '{ "input": [32, 32, 3], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 10 } ] }' > rgbm.json
expect_status 2 "$TPUSIM" train --model rgbm.json --pipeline rgb.json --batch 64
expect_err_contains "t10k-images-idx3-ubyte.gz: the test split has samples of 28x28x1 and 10 classes; the model takes input 32x32x3"
# synthetic data too small for a test split
expect_status 2 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 3 --batch 1 --cores 1
expect_err_contains "synthetic source: the test split has no samples"
# }==

# {== Crashes (2): every checkpoint field is range-checked (an optimizer step
# count of 2^63 or 2^64-1 aborted on an assert in the optimizer update).
# ckpatch FILE FIELD VALUE: a header field (u64) or a run sum / history
# value (f64), or a per-core sum (u64), of a format-4 checkpoint, its CRC
# made valid again.
ckpatch() {
  $PY - "$@" <<'PY'
import struct, sys, zlib
path, field, val = sys.argv[1:4]
b = bytearray(open(path, "rb").read())
u64 = ["parameters", "optimizer", "seed", "global_batch", "epochs_done", "step", "optimizer_steps", "steps_timed"]
f64 = ["run.cycles", "run.macs", "run.mxu_capacity", "run.sim_time_s"] + ["run.stall.%d" % k for k in range(7)]
hist = ["loss", "accuracy", "val_loss", "val_accuracy", "sim_s"]
assert b[:8] == b"TPUSIMC4"
if field in u64:
    struct.pack_into("<Q", b, 8 + 8 * u64.index(field), int(val) % (1 << 64))
elif field in f64:
    struct.pack_into("<d", b, 8 + 8 * len(u64) + 8 * f64.index(field), float(val))
elif field.startswith(("core", "cores")):   # cores, core_cycles, core[C].K (K a stall kind's index)
    at = 8 + 8 * (len(u64) + len(f64)) + 8 * len(hist) * struct.unpack_from("<Q", b, 8 + 8 * 4)[0]
    if field == "cores": i = 0
    elif field == "core_cycles": i = 1
    else: i = 2 + 7 * int(field[5:field.index("]")]) + int(field[field.index(".") + 1:])
    struct.pack_into("<Q", b, at + 8 * i, int(val) % (1 << 64))
else:                                   # history[E].KEY
    e, key = int(field[8:field.index("]")]), field[field.index(".") + 1:]
    struct.pack_into("<d", b, 8 + 8 * (len(u64) + len(f64)) + 8 * (len(hist) * e + hist.index(key)), float(val))
struct.pack_into("<I", b, len(b) - 4, zlib.crc32(bytes(b[:-4])))
open(path, "wb").write(bytes(b))
PY
}
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 1 --checkpoint ck
cp ck/checkpoint.bin good.bin
while IFS='|' read -r field value says; do
  cp good.bin ck/checkpoint.bin
  ckpatch ck/checkpoint.bin "$field" "$value"
  expect_status 2 "$TPUSIM" train --model mlp $S --epochs 2 --checkpoint ck --resume
  expect_err_contains "ck/checkpoint.bin: field '$says"
done <<'CASES'
optimizer_steps|9223372036854775808|optimizer_steps' is 9223372036854775808; expected 0..9007199254740992
optimizer_steps|18446744073709551615|optimizer_steps
epochs_done|-1|epochs_done' is 18446744073709551615; expected 0..1000000
step|0|step' is 0 with step 0 and epochs_done 1
optimizer_steps|3|optimizer_steps' is 3 with step 4
steps_timed|5|steps_timed' is 5 with step 4
run.cycles|nan|run.cycles' is nan
run.stall.2|-1|run.stall.weight_load' is -1
run.sim_time_s|inf|run.sim_time_s' is inf
history[0].accuracy|2|history[0].accuracy' is 2
history[0].val_loss|-1|history[0].val_loss' is -1
history[0].sim_s|nan|history[0].sim_s
cores|3000|cores' is 3000; expected 0..2048
core_cycles|5|core_cycles' is 5
core[0].0|0|core[0].stall'
core[7].6|1|core[7].stall' is 1
CASES
cp good.bin ck/checkpoint.bin
# its per-core sums are of its cores: resuming on others is refused
expect_status 2 "$TPUSIM" train --model mlp $S --cores 4 --epochs 2 --checkpoint ck --resume
expect_err_contains "ck/checkpoint.bin: written with --cores 8; resume with the same (got --cores 4)"
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 2 --checkpoint ck --resume
# }==

# {== Physically impossible values: ranges checked at load time, cycle sums
# checked for overflow, no key dropped and no nan in any report.
# (A 1e-300 GB/s HBM looked faster than 8 GB/s; a huge infeed wait made
# sim_step_cycles -9223372036854775808; costs of 1e308 dropped total_s from
# --json and printed -nan.)
expect_status 2 "$TPUSIM" matmul --cores 4 --chip teach --m 64 --n 64 --k 64 --set hbm.bandwidth_gb_per_s=1e-300
expect_err_contains "--set hbm.bandwidth_gb_per_s: expected a number in [0.01, 1000000] GB/s, got '1e-300'"
printf '{ "base": "teach",\n  "ici": { "link_gbit_per_s": 1e-300 } }' > slow.json
expect_status 2 "$TPUSIM" info --chip slow.json
expect_err_contains "slow.json:2:31: key 'ici.link_gbit_per_s': expected a number in [0.01, 10000000] Gbit/s, got 1e-300"
# at the ends of the ranges every report is whole and finite
for set in hbm.bandwidth_gb_per_s=0.01 ici.link_gbit_per_s=0.01 clock_mhz=10000 hbm.latency_ns=1000000; do
  expect_status 0 "$TPUSIM" matmul --cores 4 --chip teach --m 64 --n 64 --k 64 --level timing --set $set --json
  no_nan
done
printf '{ "source": { "kind": "synthetic", "n": 64, "shape": [28, 28, 1], "classes": 10, "read_latency_s": 1e308 },\n  "stages": [ { "op": "batch", "batch_size": 8 } ] }' > huge.json
expect_status 2 "$TPUSIM" pipeline --pipeline huge.json --json
expect_err_contains "huge.json:1:100: field 'source.read_latency_s': expected a number in [0, 3600], got 1e+308"
# the largest costs allowed keep every key of the report, finite
printf '{ "source": { "kind": "synthetic", "n": 64, "shape": [28, 28, 1], "classes": 10, "read_latency_s": 3600, "open_latency_s": 3600 },\n  "stages": [ { "op": "map", "fn": "normalize", "cost_per_element_s": 3600 }, { "op": "batch", "batch_size": 8, "cost_per_call_s": 3600 } ],\n  "consumer": { "step_time_s": 3600 }, "host": { "iterator_overhead_s": 3600, "element_overhead_s": 3600 } }' > max.json
expect_status 0 "$TPUSIM" pipeline --pipeline max.json --json
no_nan
echo "$OUT" > max.out
$PY -c 'import json; d=json.load(open("max.out")); missing=[k for k in ("total_s","wait_mean_s","wait_max_s","input_bound_share","step_time_s") if not isinstance(d.get(k), float)]; assert not missing, missing' || die "pipeline report lost keys"
expect_status 0 "$TPUSIM" pipeline --pipeline max.json
no_nan
# an infeed wait past 2^53 cycles: exit 2 naming the pipeline, not a negative step
printf '{ "source": { "kind": "synthetic", "n": 4096, "shape": [28, 28, 1], "classes": 10, "read_latency_s": 3600 },\n  "stages": [ { "op": "batch", "batch_size": 64, "drop_remainder": true } ] }' > wait.json
expect_status 2 "$TPUSIM" train --model mlp --pipeline wait.json --data synthetic --batch 4096 --steps-per-epoch 1 --level timing --json
expect_err_contains "wait.json: epoch 1, step 1: the batch is ready 1.475e+07 s after the cores ask for it"
expect_err_contains "longer than the engine times (2^53 cycles)"
# a program's infeed, by list or by first + interval, past 2^53 cycles
bad_inputs "$TPUSIM" run --chip teach --program <<'CASES'
inf1.json|{ "ops": [], "infeed": { "batches": 100000000, "interval": 1099511627776 } }|inf1.json:1:60: field 'infeed.interval': the last of 100000000 batches would be ready at cycle 1.1e+20
inf2.json|{ "ops": [], "infeed": { "ready_cycles": [0, 9007199254740993] } }|field 'infeed.ready_cycles[1]': expected a cycle count in 0..2^53
CASES
# a run of exactly 2^53 cycles is timed, its report finite
printf '{ "ops": [ { "op": "infeed", "dst": "x" } ], "buffers": [ { "name": "x", "space": "vmem", "shape": [1, 1] } ],\n  "infeed": { "ready_cycles": [9007199254740992] } }' > inf3.json
expect_status 0 "$TPUSIM" run --chip teach --program inf3.json --json
no_nan
# headless frames --every a huge step stay at the run's end (they wrapped back into it)
expect_status 0 "$TPUSIM" viz --chip teach --headless --out vf --frames 3 --every 9223372036854775807 --m 8 --n 8 --k 8
last=$(grep -o '(cycle [0-9]*)' "$T/out.txt" | tail -n 1)
[ -n "$last" ] && [ "$(grep -cF "$last" "$T/out.txt")" = 2 ] || die "frames past the end: $OUT"
expect_status 2 "$TPUSIM" viz --chip teach --headless --png v.png --model mlp --batch 64 --infeed-ready 9007199254740993
expect_err_contains "--infeed-ready: expected an integer in 0..9007199254740992"
# }==

# {== Corrupt gzip: every .gz input's trailer (CRC-32, length) is checked and
# nothing may follow it; an image file's data is used only after the check.
# (An image file's CRC error was found after its images were published and
# never delivered: exit 0; a label file's trailer was never read.)
flip() { $PY -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-int(sys.argv[2])]^=1; open(p,"wb").write(b)' "$1" "$2"; }
junk() { $PY -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b+b"junk"+b[-4:])' "$1"; }
idx g 28 28 28 28 gz
flip g/train-images-idx3-ubyte.gz 6
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_out_contains "Epoch 1/1"                 # found mid-training
expect_err_contains "the pipeline g/train-images-idx3-ubyte.gz: corrupt gzip file: the CRC-32 in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
flip g/t10k-labels-idx1-ubyte.gz 6
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/t10k-labels-idx1-ubyte.gz: corrupt gzip file: the CRC-32 in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
flip g/train-labels-idx1-ubyte.gz 2               # the length field
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-labels-idx1-ubyte.gz: corrupt gzip file: the length in its trailer does not match the data"
rm -r g; idx g 28 28 28 28 gz
junk g/train-labels-idx1-ubyte.gz
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-labels-idx1-ubyte.gz: corrupt gzip file: trailing data after the gzip stream"
rm -r g; idx g 28 28 28 28 gz
junk g/train-images-idx3-ubyte.gz
expect_status 2 "$TPUSIM" train --model mlp --data g --batch 64 --cores 2
expect_err_contains "g/train-images-idx3-ubyte.gz: corrupt gzip file: trailing data after the gzip stream"
# }==

# {== Resume: a finished run says there is nothing left to do and reports the
# whole run; a resumed run's report and history cover the whole run;
# --checkpoint at --level timing is refused. (A finished run's resume
# dropped test_* and train_* from --json and printed "test accuracy nan".)
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 3 --json
echo "$OUT" > full.json
rm -rf ck
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 1 --checkpoint ck
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 3 --checkpoint ck --resume --json
echo "$OUT" > resumed.json
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 3 --checkpoint ck --resume --json
no_nan
echo "$OUT" > again.json
expect_err_contains "nothing left to do: ck/checkpoint.bin has 3 epoch(s) done and --epochs is 3"
$PY - full.json resumed.json again.json <<'PY' || die "a resumed run does not report the whole run"
import json, sys
full, resumed, again = (json.load(open(f)) for f in sys.argv[1:])
def same(d):   # all but this invocation's wall times, epoch count and fit (its own epochs')
    d = dict(d); d.pop("wall_s"); d.pop("epochs_run"); d.pop("fit")
    d["history"] = [{k: v for k, v in h.items() if k not in ("wall_s", "fit")} for h in d["history"]]
    return d
assert same(full) == same(resumed), "resume"
assert same(full) == same(again), "nothing left"
assert [resumed["epochs_run"], again["epochs_run"]] == [2, 0]
assert [h["wall_s"] is None for h in resumed["history"]] == [True, False, False]
# the fit's split is not checkpointed either; a resumed run compiles again, a finished one runs nothing
assert [h["fit"]["time_s"] is None for h in resumed["history"]] == [True, False, False]
assert resumed["history"][1]["fit"]["compile_s"] == full["history"][0]["fit"]["compile_s"] > 0
assert abs(resumed["fit"]["time_s"] - resumed["history"][1]["fit"]["time_s"] - resumed["history"][2]["fit"]["time_s"]) < 1e-9
assert again["fit"]["time_s"] == 0 and again["fit"]["executions"] == 0
for d in (resumed, again):
    for k in ("test_loss", "test_accuracy", "val_loss", "val_accuracy", "train_loss", "train_accuracy"):
        assert isinstance(d[k], float), k
PY
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 3 --checkpoint ck --resume
expect_out_contains "test accuracy     "
no_nan
# a larger --epochs continues
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 4 --checkpoint ck --resume --json
echo "$OUT" > four.json
[ "$(json_get epochs four.json)" = 4 ] && [ "$(json_get epochs_run four.json)" = 1 ] && [ "$(json_get history.3.epoch four.json)" = 4 ] || die "--epochs 4 after 3"
expect_status 2 "$TPUSIM" train --model mlp $S --level timing --checkpoint ck2
expect_err_contains "--checkpoint ck2: --level timing computes no weights to save or resume"
[ ! -e ck2 ] || die "a refused run made its checkpoint directory"
# }==

# {== Pipeline end of data: a pipeline without drop_remainder trains on its
# partial last batch, as Keras does (it failed at the last step with "ran out
# of batches").
printf '{ "source": { "kind": "synthetic", "n": 200, "shape": [28, 28, 1], "classes": 10, "seed": 1 },\n  "stages": [ { "op": "map", "fn": "normalize" }, { "op": "batch", "batch_size": 64 } ] }' > nd.json
expect_status 0 "$TPUSIM" train --model mlp --pipeline nd.json --data synthetic --batch 64 --epochs 2 --csv nd.csv --json
no_nan
$PY - nd.csv <<'PY' || die "partial batch steps"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8, len(rows)                     # 2 epochs of 64 + 64 + 64 + 8
assert all(float(r["accuracy"]) * 8 == int(float(r["accuracy"]) * 8) for r in rows[3::4]), rows[3]
PY
# the last batch (130 = 128 + 2) is smaller than one core's shard: its step is shorter
printf '{ "source": { "kind": "synthetic", "n": 130, "shape": [28, 28, 1], "classes": 10, "seed": 1 },\n  "stages": [ { "op": "batch", "batch_size": 128 } ] }' > nd2.json
expect_status 0 "$TPUSIM" train --model mlp --pipeline nd2.json --data synthetic --batch 128 --csv nd2.csv
$PY - nd2.csv <<'PY' || die "the partial step is timed with its own shard"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2 and float(rows[1]["sim_step_s"]) < float(rows[0]["sim_step_s"]), rows
assert float(rows[1]["accuracy"]) in (0.0, 0.5, 1.0), rows[1]
PY
expect_status 0 "$TPUSIM" train --model mlp --pipeline nd2.json --data synthetic --batch 128 --level timing --json
no_nan
# }==

# {== Malformed input accepted: a NUL byte and garbage after the JSON, in
# every JSON file and in a .npy header; a program description that is not a
# string; an infeed with both ready_cycles and batches.
bad_inputs "$TPUSIM" run --chip teach --program <<'CASES'
nul.json|{ "ops": [] }\0garbage|nul.json:1:14: contains a NUL byte; expected JSON text
desc.json|{ "description": 5, "ops": [] }|desc.json:1:18: field 'description': expected a string, got an integer
both.json|{ "ops": [], "infeed": { "ready_cycles": [0, 10], "batches": 2 } }|both.json:1:62: field 'infeed.batches': give either "ready_cycles"
CASES
printf '{ "source": { "kind": "synthetic", "n": 8, "shape": [2, 2], "classes": 2 },\n  "stages": [ { "op": "batch", "batch_size": 2 } ] }\0{' > nulp.json
expect_status 2 "$TPUSIM" pipeline --pipeline nulp.json
expect_err_contains "nulp.json:2:53: contains a NUL byte"
expect_status 2 "$TPUSIM" train --model mlp --pipeline nulp.json
expect_err_contains "nulp.json:2:53: contains a NUL byte"
printf '{ "input": [4], "layers": [ { "type": "dense", "units": 2 } ] }\0x' > nulm.json
expect_status 2 "$TPUSIM" model nulm.json
expect_err_contains "nulm.json:1:64: contains a NUL byte"
printf '{ "base": "teach" }\0x' > nulc.json
expect_status 2 "$TPUSIM" info --chip nulc.json
expect_err_contains "nulc.json:1:20: contains a NUL byte"
printf '{ "command": "matmul", "axes": [] }\0x' > nuls.json
expect_status 2 "$TPUSIM" sweep --no-plot --out sw --file nuls.json
expect_err_contains "nuls.json:1:36: contains a NUL byte"
$PY - <<'PY'
import struct
def npy(name, header, data=struct.pack("<4f", 1, 2, 3, 4)):
    h = header + b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    open(name, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)
npy("a.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }")
npy("nul.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\0garbage")
npy("extra.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}")
PY
expect_status 0 "$TPUSIM" matmul --a a.npy --b a.npy
expect_status 2 "$TPUSIM" matmul --a nul.npy --b a.npy
expect_err_contains "nul.npy: header byte 59 is a NUL byte"
expect_status 2 "$TPUSIM" matmul --a a.npy --b extra.npy
expect_err_contains "extra.npy: header has a key 'x'"
# }==
