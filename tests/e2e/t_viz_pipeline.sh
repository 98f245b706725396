# tpusim viz --pipeline: training steps of a model fed by a datafeed pipeline,
# the pipeline's rows drawn above the cores' timeline (docs/VIZ.md).
here=$(dirname "$(readlink -f "$1")")
ex=$TPU_ROOT/docs/examples
j() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
for f in naive prefetch; do
  expect_status 0 "$TPUSIM" viz --pipeline "$ex/train-$f.json" --steps 6 --headless --png $f.png --json
  echo "$OUT" > $f.json
  expect_status 0 "$TPUSIM" pipeline --pipeline "$ex/train-$f.json" --json --steps 6
  echo "$OUT" > $f-model.json
done
/usr/bin/python3 - "$here" <<'PY' || die "viz --pipeline: rows, waits or pixels are not as the pipeline and the engine say"
import json, sys
sys.path.insert(0, sys.argv[1]); import png_read
for f in ("naive", "prefetch"):
    d = json.load(open(f + ".json")); m = json.load(open(f + "-model.json"))
    p, L = d["pipeline"], d["layout"]
    # one row per stage or worker of the host-time model, as tpusim pipeline draws them
    assert p["rows"] == m["timeline"]["rows"], (p["rows"], m["timeline"]["rows"])
    # the engine's infeed_wait on every core is exactly the steps' waits as train times them
    waits = p["infeed_wait_cycles"]
    assert len(waits) == 6 and waits[0] > 0, waits
    assert all(c["infeed_wait"] == sum(waits) for c in d["stall_cycles_per_core"]), (waits, d["stall_cycles_per_core"])
    # why prefetch helps: after the first batch the naive pipeline makes every step wait, the prefetching one none
    assert all(w > 0 for w in waits[1:]) if f == "naive" else all(w == 0 for w in waits[1:]), (f, waits)
    # the frame: every row with intervals has pixels of their kinds' colors, the others none
    img = png_read.read(f + ".png", L["pipeline_y"] + len(p["rows"]) * L["pipeline_row_h"])
    cols = {tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in p["colors"].values()}
    busy = {iv[0] for iv in m["timeline"]["intervals"] if iv[3] != "T"}
    for r in range(len(p["rows"])):
        y = L["pipeline_y"] + r * L["pipeline_row_h"] + L["pipeline_row_h"] // 2
        n = sum(png_read.pixel(img, L["pipeline_x"] + x, y)[:3] in cols for x in range(L["pipeline_w"]))
        assert (n > 0) == (r in busy), (f, p["rows"][r], n, r in busy)
PY
# bad uses exit 2 with a message
expect_status 2 "$TPUSIM" viz --pipeline "$ex/train-naive.json" --program "$ex/train_step.json" --headless --png x.png
expect_err_contains "--pipeline feeds training steps"
expect_status 2 "$TPUSIM" viz --steps 4 --headless --png x.png
expect_err_contains "--steps goes with --pipeline"
expect_status 2 "$TPUSIM" viz --pipeline "$ex/train-naive.json" --batch 100 --headless --png x.png
expect_err_contains "does not divide across 8 cores"
printf '{ "source": { "kind": "synthetic", "n": 256, "shape": [28, 28, 1], "classes": 10 }, "stages": [ { "op": "batch", "batch_size": 8, "drop_remainder": true } ] }' > short.json
expect_status 2 "$TPUSIM" viz --pipeline short.json --steps 5 --headless --png x.png
expect_err_contains "the data ends after 2 batches"
printf '{ "source": ' > broken.json
expect_status 2 "$TPUSIM" viz --pipeline broken.json --headless --png x.png
expect_err_contains "broken.json:1:"
printf '{ "source": { "kind": "synthetic", "n": 4096, "shape": [28, 28, 1], "classes": 10 }, "stages": [ { "op": "map", "fn": "normalize", "num_parallel_calls": 100, "cost_per_element_s": 1e-6 }, { "op": "batch", "batch_size": 8 } ] }' > wide.json
expect_status 2 "$TPUSIM" viz --pipeline wide.json --steps 2 --headless --png x.png
expect_err_contains "the viewer draws at most 64"
# each step's wait is the one tpusim train --pipeline times (its --csv, in seconds at 700 MHz)
expect_status 0 "$TPUSIM" train --model mlp --level timing --pipeline "$ex/train-naive.json" --steps-per-epoch 6 --csv train.csv
/usr/bin/python3 - <<'PY' || die "viz --pipeline's waits are not train --pipeline's: $(cat train.csv)"
import csv, json
viz = json.load(open("naive.json"))["pipeline"]["infeed_wait_cycles"]
train = [round(float(r["infeed_wait_s"]) * 700e6) for r in csv.DictReader(open("train.csv"))]
assert viz == train, (viz, train)
PY
