#!/usr/bin/env bash
# The host-time model against the real thing: each of the tf.data guide's
# scenarios in datafeed/examples/ (naive, prefetch, sequential and parallel
# interleave, sequential and parallel map, cache, scalar and vectorized map)
# run by `tpusim pipeline --measure` on host threads that spend the declared
# costs (sleeps, as the guide's ArtificialDataset), the median of 3 runs,
# beside the model's ideal timeline (overheads 0). Goal (issue 20): the
# model within 10 % of the measured time for every scenario. The guide's
# exact setups (datafeed/examples/guide/) follow, for information.
set -u
TPUSIM=${TPUSIM:-./tpusim}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
rc=0
row() {   # row FILE: the model's total, the median measured total, the error
  for k in 1 2 3; do
    "$TPUSIM" pipeline --pipeline "$1" --measure --json > "$D/r$k.json" || { echo "b_datafeed: $1 failed" >&2; return 1; }
  done
  /usr/bin/python3 - "$1" "$D"/r1.json "$D"/r2.json "$D"/r3.json <<'PY'
import json, os, sys
runs = [json.load(open(f)) for f in sys.argv[2:]]
model = runs[0]["total_s"]
meas = sorted(r["measured"]["total_s"] for r in runs)[1]
err = (model - meas) / meas
name = os.path.basename(sys.argv[1])[:-5]
print("| %s | %.4f | %.4f | %+.1f %% | %s |" % (name, model, meas, 100 * err, "yes" if abs(err) <= 0.10 else "NO"))
sys.exit(0 if abs(err) <= 0.10 else 3)
PY
}
echo "datafeed: model vs measured (tpusim pipeline --measure, median of 3; load average $(cut -d' ' -f1 /proc/loadavg))"
echo "| case | model (s) | measured (s) | model error | within 10 % |"
echo "| --- | ---: | ---: | ---: | --- |"
for c in naive prefetch interleave_sequential interleave_parallel map_sequential map_parallel cache map_scalar map_vectorized; do
  row datafeed/examples/$c.json || rc=1
done
echo "the guide's exact setups (for information):"
for f in datafeed/examples/guide/*.json; do row "$f"; done
exit $rc
