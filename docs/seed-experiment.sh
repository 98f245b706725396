#!/usr/bin/env bash
# The seed article's TPU experiment (../shared/seeds/002_*, docs/SEED_EXPERIMENT.md)
# as one sweep: its four models on a TPUv2-8 (tpu-v2-8, 8 cores), Flowers-shaped
# data (3,670 images of 192x192x3 in 5 classes: 2,936 to train, 734 to validate,
# the 80/20 split; synthetic, no files needed), batch 32 and 128, one epoch at the
# timing level; then the table of docs/SEED_EXPERIMENT.md on stdout, beside the
# article's own figures. Usage: docs/seed-experiment.sh [OUTDIR] (default
# build/seed-experiment); TPUSIM names the binary (default ./tpusim).
set -euo pipefail
TPUSIM=${TPUSIM:-./tpusim}
out=${1:-build/seed-experiment}
rm -rf "$out"
"$TPUSIM" sweep --out "$out" --no-plot train \
  --model seed_cnn,vgg19@192x192x3:5,xception@192x192x3:5,resnet152v2@192x192x3:5 \
  --batch 32,128 --chip tpu-v2-8 --level timing --data synthetic --synthetic-n 2936 --epochs 1 >&2
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
print("| model (parameters) | batch | steps/epoch | simulated step | simulated epoch | 25 epochs | article, 25 epochs | MXU util. | mxu_busy | weight_load | memory_wait | collective_wait | vpu_busy |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for m in ARTICLE:
    for i, b in enumerate((32, 128)):
        r = pts[(m, b)]
        s = r["stall"]
        ep = r["sim_time_s"]
        print("| %s | %d | %d | %.1f ms | %.2f s | %.1f s | %.1f s | %.1f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% |" % (
            NAMES[m], b, r["steps_per_epoch"], 1e3 * r["sim_step_s"], ep, 25 * ep, ARTICLE[m][i],
            100 * r["mxu_utilization"], 100 * s["mxu_busy"], 100 * s["weight_load"], 100 * s["memory_wait"],
            100 * s["collective_wait"], 100 * s["vpu_busy"]))
print()
print("| model | speed-up 32 -> 128, simulated | article |")
print("| --- | ---: | ---: |")
for m in ARTICLE:
    print("| %s | %.2fx | %.2fx |" % (NAMES[m], pts[(m, 32)]["sim_time_s"] / pts[(m, 128)]["sim_time_s"],
                                    ARTICLE[m][0] / ARTICLE[m][1]))
PY
