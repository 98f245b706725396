# tpusim train on small synthetic runs: JSON keys, CSV rows, trace, resume
# bit-identity, thread-count identity, and bad input (exit 2 with the layer,
# field and shapes named).
S="--data synthetic --synthetic-n 256 --batch 64"
TINY='{ "input": [28, 28, 1], "layers": [ { "type": "conv2d", "filters": 4, "kernel": 3, "stride": 2 },
  { "type": "relu" }, { "type": "maxpool", "size": 2 }, { "type": "flatten" },
  { "type": "dropout", "rate": 0.2 }, { "type": "dense", "units": 10 } ],
  "optimizer": { "type": "momentum", "learning_rate": 0.05, "momentum": 0.9 }, "seed": 3 }'
echo "$TINY" > tiny.json

# JSON report: keys, stall parts summing to 1, learnt something
expect_status 0 "$TPUSIM" train --model mlp $S --epochs 2 --json --csv steps.csv --trace tr.json
echo "$OUT" > r.json
/usr/bin/python3 - r.json <<'PY' || die "json report"
import json,sys
d=json.load(open(sys.argv[1]))
for k in ["val_accuracy","val_loss","test_accuracy","test_loss","sim_step_s","sim_step_cycles","images_per_s","mxu_utilization","stall","wall_s","history","params_hash","input_verdict"]:
    assert k in d, k
st=d["stall"]
assert sorted(st)==sorted(["mxu_busy","vpu_busy","weight_load","memory_wait","infeed_wait","collective_wait","idle"]), st
assert abs(sum(st.values())-1) < 1e-6, st
assert d["test_accuracy"] > 0.5, d["test_accuracy"]
assert 0 < d["mxu_utilization"] <= 1 and d["sim_step_s"] > 0
assert len(d["history"]) == 2 and d["steps_per_epoch"] == 4
PY
[ "$(wc -l < steps.csv)" = 9 ] || die "csv rows: $(wc -l < steps.csv)"
head -1 steps.csv | grep -q '^epoch,step,loss,accuracy,sim_step_s,infeed_wait_s,sim_time_s$' || die "csv header"
/usr/bin/python3 -c 'import json,sys; t=json.load(open("tr.json"))["traceEvents"]; x=[e for e in t if e["ph"]=="X"]; assert len(x) > 8; assert any(e["name"]=="all_reduce gradients" and e["tid"]==400 for e in x); assert any(e["name"]=="fwd 1 dense matmul" and e["tid"]==100 for e in x)' || die "trace"

# --steps-per-epoch cuts each epoch short and the next starts at its own first batch
expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 3 --steps-per-epoch 2 --csv short.csv --json
[ "$(wc -l < short.csv)" = 7 ] || die "steps-per-epoch rows: $(wc -l < short.csv)"
[ "$(cut -d, -f1 short.csv | tail -n +2 | tr '\n' ' ')" = "1 1 2 2 3 3 " ] || die "epochs in csv"

# text output when stdout is not a terminal: progress lines, no control characters
expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 1 --backend reference
expect_out_contains "4/4 [==============================] - 5s 1.15s/step - loss: "
expect_out_contains "val_accuracy: "
expect_out_contains "  simulated 4.6s: chip "
expect_out_contains "; host wall "
expect_out_contains "collective_wait"
expect_out_contains "  simulated fit     "
! grep -q $'[\r\x1b]' "$T/out.txt" || die "control characters in non-tty output"

# the host side of a fit (docs/TRAINING.md): calls of --steps-per-execution
# steps, XLA's compile in the first epoch, validation after each; --host
# picks the setup, --set changes one key; the parts add up to each epoch
expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 2 --level timing --host colab --steps-per-execution 3 --json
echo "$OUT" > fit.json
/usr/bin/python3 - fit.json <<'PY' || die "the fit's split"
import json, sys
r = json.load(open(sys.argv[1])); f = r["fit"]; h = r["history"]
parts = ("chip_s", "input_s", "dispatch_s", "validation_s", "compile_s")
for e in h:
    assert abs(sum(e["fit"][k] for k in parts) - e["fit"]["time_s"]) <= 1e-9 * e["fit"]["time_s"], e
    assert abs(e["fit"]["chip_s"] + e["fit"]["input_s"] - e["sim_s"]) <= 1e-9 * e["sim_s"], e
assert f["host"]["dispatch_s"] == 0.01 and r["configuration"]["chip"]["host"]["dispatch_s"] == 0.01
assert f["steps_per_execution"] == 3 and r["steps_per_epoch"] == 4
assert f["validation_samples"] == 64 and f["validation_steps"] == 1
assert f["executions"] == 2 * (2 + 1), f              # calls of 3 and 1 steps, one for validation
assert h[0]["fit"]["dispatch_s"] == 2 * 0.01 and h[1]["fit"]["compile_s"] == 0
assert h[0]["fit"]["compile_s"] == 2 * 2.0 + 0.02 * (f["kernels"]["train"] + f["kernels"]["eval"])
assert f["programs"] == 2 and abs(f["time_s"] - h[0]["fit"]["time_s"] - h[1]["fit"]["time_s"]) < 1e-9
PY
expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 1 --level timing --host colab --set host.dispatch_s=0.5 --json
echo "$OUT" > fit2.json
[ "$(json_get fit.host.dispatch_s fit2.json)" = 0.5 ] || die "--set after --host"
expect_status 2 "$TPUSIM" train --model tiny.json $S --host nosuch
expect_err_contains "--host: expected tpu-vm or colab, got 'nosuch'"
expect_status 2 "$TPUSIM" train --model tiny.json $S --steps-per-execution 0
expect_err_contains "--steps-per-execution"
expect_status 2 "$TPUSIM" train --model tiny.json $S --set host.dispatch_s=61
expect_err_contains "host.dispatch_s"
# Keras' step count: ceil(n / batch), the last batch partial
expect_status 0 "$TPUSIM" train --model tiny.json --data synthetic --synthetic-n 300 --batch 64 --level timing --json
echo "$OUT" > ceil.json
[ "$(json_get steps_per_epoch ceil.json)" = 5 ] || die "ceil(300 / 64) steps"

# resume is bit-identical to an uninterrupted run (both backends)
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 3 --backend $be --json
  echo "$OUT" > full.json
  rm -rf ck
  expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 1 --backend $be --checkpoint ck --json
  [ -f ck/checkpoint.bin ] || die "no checkpoint written"
  expect_status 0 "$TPUSIM" train --model tiny.json $S --epochs 3 --backend $be --checkpoint ck --resume --json
  echo "$OUT" > resumed.json
  [ "$(json_get params_hash full.json)" = "$(json_get params_hash resumed.json)" ] || die "$be: resume differs"
  [ "$(json_get test_loss full.json)" = "$(json_get test_loss resumed.json)" ] || die "$be: resume test_loss differs"
done
# a resume with another batch is refused
expect_status 2 "$TPUSIM" train --model tiny.json --data synthetic --synthetic-n 256 --batch 32 --epochs 3 --checkpoint ck --resume
expect_err_contains "--batch 64"

# thread count does not change results: the whole report but wall times is identical
for t in 1 2 8; do
  expect_status 0 "$TPUSIM" train --model tiny.json $S --threads $t --json
  echo "$OUT" > t$t.json
done
[ "$(json_get params_hash t1.json)" = "$(json_get params_hash t8.json)" ] || die "threads change results"
/usr/bin/python3 - t1.json t2.json t8.json <<'PY' || die "train --json differs between --threads 1, 2 and 8"
import json,sys
def strip(d):
    if isinstance(d, dict): return {k: strip(v) for k, v in d.items() if k != "wall_s"}
    if isinstance(d, list): return [strip(v) for v in d]
    return d
a=[strip(json.load(open(f))) for f in sys.argv[1:]]
assert a[0]==a[1]==a[2], "differ"
PY

# a VMEM too small for the lowering's tiles is bad input, named with the bytes
expect_status 2 "$TPUSIM" train --model tiny.json $S --chip teach --set vmem.capacity_kib=2 --level timing
expect_err_contains "a row of 10 logits does not fit one VMEM tile of 8 values (2048 bytes of VMEM)"
expect_status 2 "$TPUSIM" train --model tiny.json $S --chip teach --set vmem.capacity_kib=1 --level timing
expect_err_contains "VMEM of 1024 bytes cannot hold the lowering's tiles"

# timing level: no values, same step time
expect_status 0 "$TPUSIM" train --model tiny.json $S --level timing --json
echo "$OUT" > tm.json
[ "$(json_get test_accuracy tm.json)" = None ] || die "timing level has accuracy"
[ "$(json_get sim_step_cycles tm.json)" = "$(json_get sim_step_cycles t1.json)" ] || die "timing level step differs"

# a datafeed pipeline feeds the cores; its host-time model decides the infeed waits:
# the naive pipeline waits more than the prefetching one, and both report it
for kind in naive prefetch; do
  pf=""; [ $kind = prefetch ] && pf=', { "op": "prefetch", "buffer_size": 2 }'; par=1; [ $kind = prefetch ] && par=2
  cat > p_$kind.json <<JSON
{ "source": { "kind": "synthetic", "n": 1024, "shape": [28, 28, 1], "classes": 10, "seed": 1,
              "files": 1, "open_latency_s": 0.001, "read_latency_s": 2e-7 },
  "stages": [ { "op": "batch", "batch_size": 64, "drop_remainder": true },
              { "op": "map", "fn": "normalize", "num_parallel_calls": $par, "cost_per_element_s": 2e-7 },
              { "op": "repeat", "count": -1 } $pf ] }
JSON
  expect_status 0 "$TPUSIM" train --model tiny.json --pipeline p_$kind.json --batch 64 --data synthetic --synthetic-n 256 --epochs 2 --json --csv c_$kind.csv
  echo "$OUT" > r_$kind.json
done
/usr/bin/python3 - r_naive.json r_prefetch.json <<'PY' || die "pipeline infeed waits"
import json,sys
n=json.load(open(sys.argv[1])); p=json.load(open(sys.argv[2]))
assert n["stall"]["infeed_wait"] > p["stall"]["infeed_wait"] > 0, (n["stall"], p["stall"])
assert n["sim_step_s"] > p["sim_step_s"]
assert n["test_accuracy"] == p["test_accuracy"]          # same batches, same values
assert n["steps_per_epoch"] == 16
PY
awk -F, 'NR>1 && $6 > 0 {w++} END {exit !(w > 0)}' c_naive.csv || die "csv has no infeed waits"
# --epochs the tf.data way: a pipeline without repeat is iterated afresh each
# epoch (file reopened, prefetch buffer empty: epoch 2's first step waits the
# whole open + read again), one with repeat is one iterator (prefetch reads
# the next pass during the last step, so that wait is shorter); same values
for rep in fresh repeat; do
  r=""; [ $rep = repeat ] && r=', { "op": "repeat", "count": -1 }'
  cat > q_$rep.json <<JSON
{ "source": { "kind": "synthetic", "n": 256, "shape": [28, 28, 1], "classes": 10, "seed": 1,
              "files": 1, "open_latency_s": 0.01, "read_latency_s": 2e-7 },
  "stages": [ { "op": "batch", "batch_size": 64, "drop_remainder": true } $r,
              { "op": "prefetch", "buffer_size": 2 } ] }
JSON
  expect_status 0 "$TPUSIM" train --model tiny.json --pipeline q_$rep.json --batch 64 --data synthetic --synthetic-n 256 --epochs 2 --csv e_$rep.csv
done
/usr/bin/python3 - e_fresh.csv e_repeat.csv <<'PY' || die "fresh epochs"
import csv,sys
f=list(csv.DictReader(open(sys.argv[1]))); r=list(csv.DictReader(open(sys.argv[2])))
w=lambda rows,i: float(rows[i]["infeed_wait_s"])
assert len(f) == len(r) == 8
assert abs(w(f,4) - w(f,0)) < 1e-9 and w(f,0) > 0.01, (w(f,0), w(f,4))
assert 0 < w(r,4) < w(f,4), (w(r,4), w(f,4))
assert [x["loss"] for x in f] == [x["loss"] for x in r]
PY
# the run's --batch replaces the file's batch_size (64 there): batches of 32
expect_status 0 "$TPUSIM" train --model tiny.json --pipeline p_naive.json --batch 32 --data synthetic --epochs 1 --json
echo "$OUT" > r_b32.json
[ "$(json_get steps_per_epoch r_b32.json)" = 32 ] || die "--batch 32 over a file batching 64: $(json_get steps_per_epoch r_b32.json) steps"
[ "$(json_get global_batch r_b32.json)" = 32 ] || die "global_batch of --batch 32"
printf '{ "source": { "kind": "synthetic", "n": 64, "shape": [28, 28, 1], "classes": 10 },\n  "stages": [ { "op": "prefetch", "buffer_size": 2 } ] }' > p_nobatch.json
expect_status 2 "$TPUSIM" train --model tiny.json --pipeline p_nobatch.json --batch 32
expect_err_contains "p_nobatch.json:2:13: field 'stages': a batch stage is required"
printf '{ "source": { "kind": "synthetic", "n": 64, "shape": [28, 28, 1], "classes": 10 },\n  "stages": [ { "op": "batch", "batch_size": -4 } ] }' > p_bad.json
expect_status 2 "$TPUSIM" train --model tiny.json --pipeline p_bad.json --batch 64
expect_err_contains "p_bad.json:2:"

# CIFAR-10 binary files (written here: 5 train files of 40 records, a test
# file) train a colour model; a truncated file is named with its record
mkdir cif
/usr/bin/python3 - <<'PY'
for f in range(6):
    name = 'cif/test_batch.bin' if f == 5 else 'cif/data_batch_%d.bin' % (f + 1)
    with open(name, 'wb') as o:
        for r in range(40):
            o.write(bytes([(f * 40 + r) % 10]) + bytes((r * 7 + k) % 256 for k in range(3072)))
PY
echo "$TINY" | sed 's/"input": \[28, 28, 1\]/"input": [32, 32, 3]/' > tiny_rgb.json
expect_status 0 "$TPUSIM" train --model tiny_rgb.json --data cifar10:cif --batch 16 --epochs 1 --steps-per-epoch 2
truncate -s 5000 cif/data_batch_3.bin
expect_status 2 "$TPUSIM" train --model tiny_rgb.json --data cifar10:cif --batch 16 --epochs 1 --steps-per-epoch 2
expect_err_contains "cif/data_batch_3.bin: record 1: truncated (1927 of 3073 bytes)"

# TFRecord files of tf.train.Example (tests/e2e/tfrecord_write.py) train
# through a pipeline file: 2 files of 24 raw 28x28 grey images
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
from tfrecord_write import example, record
for f in range(2):
    open("t%d.tfrecord" % f, "wb").write(b"".join(record(example(bytes((i * 5 + k) % 256 for k in range(784)), i % 10))
                                                  for i in range(f * 24, f * 24 + 24)))
PY
printf '{ "source": { "kind": "tfrecord", "files": "t*.tfrecord", "shape": [28, 28, 1], "classes": 10, "elements": 48 },\n  "stages": [ { "op": "interleave", "cycle_length": 2 }, { "op": "batch", "batch_size": 16, "drop_remainder": true } ] }' > p_tfr.json
expect_status 0 "$TPUSIM" train --model tiny.json --pipeline p_tfr.json --batch 16 --epochs 1 --steps-per-epoch 3

# --data images:DIR (class folders of PNGs and JPEGs, resized to the model's
# 32x32x3 input; the validation subset of validation_split 0.2 with the
# run's seed is the test set) and --data tfrecord:DIR (Examples of those
# JPEGs in the Flowers layout: the int64 'class' is the label)
mkdir -p pics/a pics/b pics/c
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
import numpy as np
from image_write import png, ppm
for i in range(30):
    y, x = np.mgrid[0:20, 0:24]
    im = np.stack([(x * (3 + i % 3) + y * (i % 5) + 70 * k) % 256 for k in range(3)], -1).astype(np.uint8)
    (png if i % 2 else ppm)("pics/%s/p%02d.%s" % ("abc"[i % 3], i, "png" if i % 2 else "ppm"), im)
PY
for f in pics/*/*.ppm; do cjpeg -quality 85 "$f" > "${f%.ppm}.jpg" && rm "$f"; done
sed 's/"units": 10/"units": 3/' tiny_rgb.json > tiny3.json         # three classes: a, b, c
expect_status 0 "$TPUSIM" train --model tiny3.json --data images:pics --batch 8 --epochs 2 --json
echo "$OUT" > img.json
/usr/bin/python3 -c 'import json; d=json.load(open("img.json")); assert d["steps_per_epoch"] == 3 and len(d["history"]) == 2, d' \
  || die "train on images: 24 training images make 3 batches of 8"
mkdir tfr
PYTHONPATH=$TPU_ROOT/tests/e2e /usr/bin/python3 - <<'PY'
import glob
from tfrecord_write import flowers_example, record
files = sorted(glob.glob("pics/*/*.jpg"))
for f in range(3):
    open("tfr/flowers%02d-5.tfrec" % f, "wb").write(b"".join(
        record(flowers_example(open(p, "rb").read(), i % 3, b"abc"[i % 3:i % 3 + 1], (20, 24)))
        for i, p in enumerate(files) if i % 3 == f))
PY
expect_status 0 "$TPUSIM" train --model tiny3.json --data tfrecord:tfr --batch 8 --epochs 1
head -c 400 pics/b/p01.png > cut.png && mv cut.png pics/b/p01.png
expect_status 2 "$TPUSIM" train --model tiny3.json --data images:pics --batch 8 --epochs 1
expect_err_contains "pics/b/p01.png: undecodable PNG data"

# one core: no all-reduce to wait for
expect_status 0 "$TPUSIM" train --model tiny.json $S --cores 1 --level timing --json
echo "$OUT" > one.json
[ "$(json_get stall.collective_wait one.json)" = 0.0 ] || die "1 core waits on a collective"

# bad input
expect_status 2 "$TPUSIM" train --model mlp $S --batch 100
expect_err_contains "--batch 100 does not divide across 8 cores"
expect_status 2 "$TPUSIM" train --model nosuch.json $S
expect_err_contains "nosuch.json: not a built-in model"
bad_inputs "$TPUSIM" train $S --model <<'CASES'
flat.json|{ "input": [28, 28, 1],\n  "layers": [ { "type": "dense", "units": 10 } ] }|flat.json:2:13: the last layer's output 28x28x10 is not flat
miss.json|{ "input": [28, 28, 1],\n  "layers": [ { "type": "flatten" }, { "type": "dense" } ] }|layers[1] (dense): field 'units': missing
unk.json|{ "input": [28, 28, 1],\n  "layers": [ { "type": "flatten" }, { "type": "densse", "units": 3 } ] }|layers[1]: field 'type': unknown layer 'densse'
CASES
# synthetic data takes the model's shape and classes; a real data set must fit the model
printf '{ "input": [16, 16, 1],\n  "layers": [ { "type": "flatten" }, { "type": "dense", "units": 10 } ] }' > wrong.json
expect_status 2 "$TPUSIM" train --model wrong.json --data fashion-mnist --level timing
expect_err_contains "train-images-idx3-ubyte.gz: the training split has samples of 28x28x1 and 10 classes; the model takes input 16x16x1 and gives 10 classes"
expect_status 0 "$TPUSIM" train --model wrong.json $S --level timing
expect_status 2 "$TPUSIM" train --model mlp --data /nonexistent
expect_err_contains "--data /nonexistent: /nonexistent/train-"
expect_status 2 "$TPUSIM" train --model mlp --backend gpu
expect_status 2 "$TPUSIM" train --model mlp --resume
expect_status 2 "$TPUSIM" train
expect_status 0 "$TPUSIM" train --help
expect_out_contains "--checkpoint DIR"
# --data mnist without MNIST installed (no Debian package ships it): exit 2,
# saying where to get the files
if [ ! -e /usr/share/datasets/mnist/train-labels-idx1-ubyte.gz ] && [ ! -e /usr/share/datasets/mnist/train-labels-idx1-ubyte ]; then
  expect_status 2 "$TPUSIM" train --model mlp --data mnist --steps-per-epoch 1
  expect_err_contains "no Debian package ships it"; expect_err_contains "--data D"
fi
