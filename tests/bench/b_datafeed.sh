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

# The host's own overheads in these runs, for host.iterator_overhead_s and
# host.element_overhead_s: with every cost 0, 2000 epochs of one element
# behind a prefetch (a fresh iteration each: its thread made and joined)
# and 20000 elements through a prefetch (a hand-off each), less the same
# 20000 elements without the prefetch (the run's own bookkeeping); medians
# of 3.
zero() {   # zero N_ELEMENTS EPOCHS PREFETCH(0/1): the median measured total
  local st='{ "op": "batch", "batch_size": 1 }'
  [ "$3" = 1 ] && st="$st, { \"op\": \"prefetch\", \"buffer_size\": 1 }"
  printf '{ "source": { "kind": "synthetic", "n": %d, "shape": [1], "classes": 2 },\n  "stages": [ %s ],\n  "consumer": { "step_time_s": 0, "epochs": %d } }' "$1" "$st" "$2" > "$D/zero.json"
  for k in 1 2 3; do "$TPUSIM" pipeline --pipeline "$D/zero.json" --measure --json; done |
    /usr/bin/python3 -c 'import json,sys; d=json.JSONDecoder(); t=sys.stdin.read(); v=[]
while t.strip():
    o,i=d.raw_decode(t.strip()); v.append(o["measured"]["total_s"]); t=t.strip()[i:]
print(sorted(v)[1])'
}
it=$(zero 1 2000 1); el=$(zero 20000 1 1); sy=$(zero 20000 1 0)
/usr/bin/python3 -c "print('overheads: an iterator (an epoch made and ended) %.0f us, a hand-off through an asynchronous stage %.1f us, the run\'s own per element %.2f us' % (($it - $el / 20000) / 2000 * 1e6, ($el - $sy) / 20000 * 1e6, $sy / 20000 * 1e6))"

# What decoding costs here, for source.decode_cost_per_element_s: 200 JPEGs
# of 192x192 (quality 90, cjpeg) in two class folders, read by `tpusim
# pipeline --real` (decoding at open on the online CPUs, up to 8), as they
# are and resized to 180x180; best of 3.
mkdir -p "$D/img/a" "$D/img/b"
PYTHONPATH=tests/e2e /usr/bin/python3 - "$D" <<'PY'
import sys
import numpy as np
from image_write import ppm
rng = np.random.RandomState(0)
for i in range(200):
    y, x = np.mgrid[0:192, 0:192]
    im = np.stack([(x * (1 + i % 3) + y * (i % 5) + 70 * k + rng.randint(0, 30, (192, 192))) % 256 for k in range(3)], -1)
    ppm("%s/p%03d.ppm" % (sys.argv[1], i), im.astype(np.uint8))
PY
for i in $(seq 0 199); do f=$(printf p%03d $i); cjpeg -quality 90 "$D/$f.ppm" > "$D/img/$([ $((i % 2)) = 0 ] && echo a || echo b)/$f.jpg"; done
for size in 192 180; do
  printf '{ "source": { "kind": "images", "dir": "%s", "image_size": [%d, %d], "shuffle": false },\n  "stages": [ { "op": "batch", "batch_size": 20 } ] }' "$D/img" $size $size > "$D/dec.json"
  best=
  for k in 1 2 3; do
    s=$("$TPUSIM" pipeline --pipeline "$D/dec.json" --real --epochs 1 --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["real"]["seconds"])')
    best=$(/usr/bin/python3 -c "print(min(float('$s'), float('${best:-1e9}')))")
  done
  /usr/bin/python3 -c "print('decode 200 JPEGs of 192x192 to %dx%d: %.3f s, %.2f ms per image (wall, %d threads)' % ($size, $size, $best, $best / 200 * 1e3, min(8, $(nproc))))"
done
exit $rc
