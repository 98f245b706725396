#!/usr/bin/env bash
# The shipped networks (docs/scalesim/*.csv) on docs/scalesim/tpu_128.cfg's
# 128x128 array in the three dataflows: SCALE-Sim v2's total cycles
# (--compat scalesim) beside tpusim's own model's (--compat none), as the
# markdown table of docs/SCALESIM.md ("tpusim's own model").
#   bash docs/scalesim/dataflows.sh [TPUSIM]
set -eu
TPUSIM=${1:-./tpusim}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
total() {   # topology input-type dataflow compat -> total cycles
  "$TPUSIM" scalesim -c "$here/tpu_128.cfg" -t "$here/$1" -i "$2" -p "$out" --dataflow "$3" --compat "$4" --json |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["total_cycles"])'
}
echo "| network | dataflow | SCALE-Sim v2 (compat) | tpusim | ratio |"
echo "| --- | --- | ---: | ---: | ---: |"
for net in "AlexNet|alexnet.csv|conv" "ResNet-18|resnet18.csv|conv" "ResNet-50|resnet50.csv|conv" \
           "BERT-base layer|bert_base_layer.csv|gemm"; do
  IFS='|' read -r name file kind <<<"$net"
  for df in ws os is; do
    c=$(total "$file" "$kind" $df scalesim)
    o=$(total "$file" "$kind" $df none)
    /usr/bin/python3 -c "print('| %s | %s | {:,} | {:,} | %.2fx |'.format($c, $o) % ('$name', '$df', $c / $o))"
  done
done
