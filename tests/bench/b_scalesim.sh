#!/usr/bin/env bash
# tpusim scalesim on the shipped networks (docs/scalesim/) on a 128x128
# weight-stationary array (and tpusim's own os and is on the shipped
# ones): wall time and peak memory of the whole process, in compat mode
# (SCALE-Sim's cycles), with tpusim's own MXU timing level, and on the
# chip engine of tpu-v2-8 (--chip, 8 cores, HBM). SCALE-Sim v2's own times (the issue's figures, one core of a
# machine like this one) are printed beside them; docs/BENCHMARKS.md and
# docs/SCALESIM.md record a run.
set -u
TPUSIM=${TPUSIM:-./tpusim}
/usr/bin/python3 - "$TPUSIM" <<'PY'
import resource, subprocess, sys, tempfile, time
tpusim = sys.argv[1]
cfg = "docs/scalesim/tpu_128.cfg"
# network, topology, input type, SCALE-Sim v2 wall seconds (None: not published)
nets = [("AlexNet", "docs/scalesim/alexnet.csv", "conv", 25.0),
        ("ResNet-18", "docs/scalesim/resnet18.csv", "conv", 69.0),
        ("ResNet-50", "docs/scalesim/resnet50.csv", "conv", 135.0),
        ("BERT-base layer", "docs/scalesim/bert_base_layer.csv", "gemm", None)]
# SCALE-Sim's own topology files, when the shared copy is there (not shipped)
import os
sh = "../shared/scalesim-topologies"
if os.path.isdir(sh):
    nets += [("SCALE-Sim alexnet.csv", sh + "/alexnet.csv", "conv", 25.0),
             ("SCALE-Sim Resnet18.csv", sh + "/Resnet18.csv", "conv", 69.0),
             ("SCALE-Sim Resnet50.csv", sh + "/Resnet50.csv", "conv", 135.0)]
reps = 20
import json


def best_of(args):
    """The best wall time of reps runs of args, and the last run's JSON report."""
    best = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        best = min(best, time.perf_counter() - t0)
    return best, json.loads(out)


print("\n## tpusim scalesim (%d runs each, best wall; peak RSS of the process)" % reps)
print("| network | mode | layers | cycles | wall ms | peak RSS MiB | SCALE-Sim v2 s | speed-up |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
with tempfile.TemporaryDirectory() as d:
    base = lambda topo, kind: [tpusim, "scalesim", "-c", cfg, "-t", topo, "-i", kind, "-p", d, "--json"]
    for name, topo, kind, ss in nets:
        for mode, flags in (("scalesim", ["--compat", "scalesim"]), ("none", ["--compat", "none"]),
                            ("chip tpu-v2-8", ["--chip", "tpu-v2-8"])):
            best, j = best_of(base(topo, kind) + flags)
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
            sp = "%.0fx" % (ss / best) if ss else "-"
            print("| %s | %s | %d | %d | %.2f | %.1f | %s | %s |" % (name, mode, len(j["layers"]),
                  j["total_cycles"], best * 1e3, rss, "%g" % ss if ss else "-", sp))
    # tpusim's own model in the other two dataflows (mxu.h, Dataflows), shipped networks
    print("\n## tpusim scalesim --dataflow os|is, own model (%d runs each, best wall)" % reps)
    print("| network | dataflow | layers | cycles | wall ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, topo, kind, ss in nets[:4]:
        for df in ("os", "is"):
            best, j = best_of(base(topo, kind) + ["--dataflow", df])
            print("| %s | %s | %d | %d | %.2f |" % (name, df, len(j["layers"]), j["total_cycles"], best * 1e3))
PY
