# batch_normalization: Keras' parameter counts in tpusim model (4*C, of
# which the moving statistics are non-trainable), training on both backends
# with the same results for 1 and 2 threads, and a bad field.
cat > bn.json <<'JSON'
{ "name": "bn", "input": [12, 12, 1], "layers": [
  { "type": "conv2d", "name": "c", "filters": 64, "kernel": 3, "use_bias": false },
  { "type": "batch_normalization", "name": "bn", "momentum": 0.9 }, { "type": "relu" },
  { "type": "global_avgpool" }, { "type": "dense", "units": 10 } ] }
JSON
expect_status 0 "$TPUSIM" model bn.json
expect_out_contains "bn (batch_normalization)           (None, 10, 10, 64)               256"
expect_out_contains "Total params: 1,482"
expect_out_contains "Trainable params: 1,354"
expect_out_contains "Non-trainable params: 128"
expect_status 0 "$TPUSIM" model bn.json --json
echo "$OUT" > m.json
/usr/bin/python3 - m.json <<'PY' || die "bn layer params"
import json, sys
r = json.load(open(sys.argv[1]))
assert [l["params"] for l in r["layers"] if l["name"] == "bn"] == [256]
assert sum(l["params"] for l in r["layers"]) == r["parameters"] == 1482
PY
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model bn.json --data synthetic --synthetic-n 256 --batch 32 --backend $be --threads 1
  a=$(echo "$OUT" | grep "test accuracy"); [ -n "$a" ] || die "$be: no test accuracy"
  expect_status 0 "$TPUSIM" train --model bn.json --data synthetic --synthetic-n 256 --batch 32 --backend $be --threads 2
  [ "$a" = "$(echo "$OUT" | grep "test accuracy")" ] || die "$be: 1 and 2 threads differ: $a"
  expect_out_contains "simulated step"
done
sed 's/"momentum": 0.9/"momentum": 1.5/' bn.json > bad.json
expect_status 2 "$TPUSIM" model bad.json
expect_err_contains "momentum"
