#!/usr/bin/env bash
# The table of docs/SCALESIM.md "What a TPU core adds": the shipped networks
# on docs/scalesim/tpu_128.cfg in SCALE-Sim v2's model (--compat scalesim),
# on tpusim's one array (--compat none), and on the chip engine of tpu-v2-8
# with one core and with all 8 (--chip tpu-v2-8 [--cores 1]), each with the
# shares of the cores' cycles by stall kind (sim/stall.def). Run from the
# repository root: bash docs/scalesim/chip-table.sh [./tpusim]
set -eu
TPUSIM=${1:-./tpusim}
/usr/bin/python3 - "$TPUSIM" <<'PY'
import json, subprocess, sys, tempfile
tpusim = sys.argv[1]
cfg = "docs/scalesim/tpu_128.cfg"
nets = [("AlexNet", "alexnet.csv", "conv"), ("ResNet-18", "resnet18.csv", "conv"),
        ("ResNet-50", "resnet50.csv", "conv"), ("BERT-base layer", "bert_base_layer.csv", "gemm")]
kinds = [("mxu_busy", "mxu"), ("weight_load", "wl"), ("memory_wait", "mem"), ("idle", "idle")]
def run(d, topo, kind, *extra):
    args = [tpusim, "scalesim", "-c", cfg, "-t", "docs/scalesim/" + topo, "-i", kind, "-p", d, "--json", *extra]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
def shares(j):
    core_cycles = j["total_cycles"] * j["cores"]
    other = core_cycles - sum(j["stall"][k] for k, _ in kinds)
    assert other == 0, "a stall kind outside the table's columns: %r" % j["stall"]
    return " / ".join("%.0f" % (100.0 * j["stall"][k] / core_cycles) for k, _ in kinds)
print("| network | SCALE-Sim v2 (compat) | one array (tpusim) | tpu-v2-8, 1 core | shares %s | tpu-v2-8, 8 cores | shares %s | stall cycles, 8 cores |"
      % ((" / ".join(s for _, s in kinds),) * 2))
print("| --- | ---: | ---: | ---: | --- | ---: | --- | ---: |")
with tempfile.TemporaryDirectory() as d:
    for name, topo, kind in nets:
        compat = run(d, topo, kind, "--compat", "scalesim")
        own = run(d, topo, kind)
        one = run(d, topo, kind, "--chip", "tpu-v2-8", "--cores", "1")
        eight = run(d, topo, kind, "--chip", "tpu-v2-8")
        stall8 = sum(l["stall_cycles"] for l in eight["layers"])
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name, format(compat["total_cycles"], ","),
              format(own["total_cycles"], ","), format(one["total_cycles"], ","), shares(one),
              format(eight["total_cycles"], ","), shares(eight), format(stall8, ",")))
PY
