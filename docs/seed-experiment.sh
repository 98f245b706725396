#!/usr/bin/env bash
# The seed article's TPU experiment (../shared/seeds/002_*, docs/SEED_EXPERIMENT.md)
# as one sweep: its four models on a TPUv2-8 (tpu-v2-8, 8 cores) driven from a
# Colab TPU node (--host colab: each call a network round trip, docs/CHIPS.md,
# "The host"), Flowers-shaped data (3,670 images of 192x192x3 in 5 classes: 2,936
# to train, 734 to validate, the 80/20 split; synthetic, no files needed), batch
# 32 and 128, 25 epochs at the timing level, as Keras' fit runs them (ceil(n/B)
# steps, validation after each epoch, XLA's compile in the first); then the
# tables of docs/SEED_EXPERIMENT.md on stdout, beside the article's own figures.
# Usage: docs/seed-experiment.sh [OUTDIR] [train options...] (default OUTDIR
# build/seed-experiment; options are added to every point, e.g. --host tpu-vm or
# --steps-per-execution 32); TPUSIM names the binary (default ./tpusim).
set -euo pipefail
TPUSIM=${TPUSIM:-./tpusim}
out=${1:-build/seed-experiment}
shift || true
rm -rf "$out"
"$TPUSIM" sweep --out "$out" --no-plot train \
  --model seed_cnn,vgg19@192x192x3:5,xception@192x192x3:5,resnet152v2@192x192x3:5 \
  --batch 32,128 --chip tpu-v2-8 --host colab --level timing --data synthetic --synthetic-n 2936 --epochs 25 \
  "$@" >&2
/usr/bin/python3 - "$out/points.jsonl" <<'PY'
import json, sys
# The article's Table 1 (batch 32) and Table 2 (batch 128): seconds for 25
# epochs on Colab's TPUv2-8, the first epoch including XLA's compilation.
ARTICLE = {"seed_cnn": (90.5885, 67.78), "vgg19": (213.0066, 127.82),
           "xception": (211.558, 132.0539), "resnet152v2": (532.368, 295.56)}
NAMES = {"seed_cnn": "custom CNN (78,263)", "vgg19": "VGG19 (112,327,749)",
         "xception": "Xception (20,871,725)", "resnet152v2": "ResNet152V2 (58,341,893)"}
pts = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    m = e["axes"]["model"].split("@")[0]
    pts[(m, int(e["axes"]["batch"]))] = e["report"]
def total(r):
    return r["fit"]["time_s"]
print("| model (parameters) | batch | steps/epoch | simulated step | first epoch | later epochs | 25 epochs | article, 25 epochs | chip | input | dispatch | validation | compile |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for m in ARTICLE:
    for i, b in enumerate((32, 128)):
        r = pts[(m, b)]
        f, h = r["fit"], r["history"]
        print("| %s | %d | %d | %.1f ms | %.1f s | %.2f s | %.1f s | %.1f s | %.1f s | %.2f s | %.1f s | %.1f s | %.1f s |" % (
            NAMES[m], b, r["steps_per_epoch"], 1e3 * r["sim_step_s"], h[0]["fit"]["time_s"], h[-1]["fit"]["time_s"],
            total(r), ARTICLE[m][i], f["chip_s"], f["input_s"], f["dispatch_s"], f["validation_s"], f["compile_s"]))
print()
print("| model | speed-up 32 -> 128, simulated fit | chip alone | article |")
print("| --- | ---: | ---: | ---: |")
for m in ARTICLE:
    a, b = pts[(m, 32)], pts[(m, 128)]
    print("| %s | %.2fx | %.2fx | %.2fx |" % (NAMES[m], total(a) / total(b), a["fit"]["chip_s"] / b["fit"]["chip_s"],
                                             ARTICLE[m][0] / ARTICLE[m][1]))
print()
print("| model | batch | MXU util. | mxu_busy | weight_load | memory_wait | collective_wait | vpu_busy | kernels (train, eval) |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for m in ARTICLE:
    for b in (32, 128):
        r = pts[(m, b)]
        s, k = r["stall"], r["fit"]["kernels"]
        print("| %s | %d | %.1f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %d, %d |" % (
            NAMES[m], b, 100 * r["mxu_utilization"], 100 * s["mxu_busy"], 100 * s["weight_load"],
            100 * s["memory_wait"], 100 * s["collective_wait"], 100 * s["vpu_busy"], k["train"], k["eval"]))
print()
# A separate analysis, not the default: what the article's own totals say
# about the costs left out. For the small CNN the chip is almost nothing, so
# its residual per epoch (article minus simulated, over 25 epochs) is the
# host's: solve residual = calls x d + images x p for a per-call cost d and a
# per-image cost p from its two batch sizes (calls: training and validation
# steps at steps_per_execution 1; images: 3,670 read a epoch), then see how
# much of the other models' residuals the same d and p account for.
N_TRAIN, N_VAL = 2936, 734
def calls(b):
    return -(-N_TRAIN // b) - (-N_VAL // b)
res = {k: (ARTICLE[k[0]][0 if k[1] == 32 else 1] - total(pts[k])) / 25 for k in pts}
c32, c128 = calls(32), calls(128)
d = (res[("seed_cnn", 32)] - res[("seed_cnn", 128)]) / (c32 - c128)
p = (res[("seed_cnn", 128)] - c128 * d) / (N_TRAIN + N_VAL)
print("Fitted to the small CNN's residuals (not used by any default): %.1f ms more per call, %.2f ms per image." % (1e3 * d, 1e3 * p))
print()
print("| model | batch | residual per epoch (article - simulated) | explained by the fit | left |")
print("| --- | ---: | ---: | ---: | ---: |")
for m in ARTICLE:
    for b in (32, 128):
        e = calls(b) * d + (N_TRAIN + N_VAL) * p
        print("| %s | %d | %.2f s | %.2f s | %.2f s |" % (NAMES[m], b, res[(m, b)], e, res[(m, b)] - e))
PY
