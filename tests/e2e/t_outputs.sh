# Several outputs (docs/MODELS.md, "Several outputs"): the loss trained is
# the sum of each output's mean loss times its weight, Keras'
# compile(loss=[...], loss_weights=[...]). A native policy + value model on
# Fashion-MNIST on both backends (the value head's target made from the
# label), a Keras Functional with two outputs, the timing level, and the
# real AlphaGo Zero file in t_keras.sh.
cat > two.json <<'JSON'
{ "name": "two_heads", "input": [28, 28, 1],
  "layers": [ { "type": "conv2d", "filters": 8, "kernel": 3, "stride": 2, "activation": "relu", "name": "trunk" },
              { "type": "flatten", "name": "f" },
              { "type": "dense", "units": 10, "name": "policy" },
              { "type": "dense", "units": 16, "activation": "relu", "inputs": "f", "name": "v1" },
              { "type": "dense", "units": 1, "activation": "tanh", "name": "value" } ],
  "outputs": [ { "layer": "policy", "loss": "softmax_cross_entropy", "weight": 1 },
               { "layer": "value", "loss": "mean_squared_error", "weight": 0.5 } ] }
JSON
expect_status 0 "$TPUSIM" model two.json
expect_out_contains "Outputs: policy softmax_cross_entropy x 1, value mean_squared_error x 0.5 (the loss trained: their sum)"
# 100 steps of 64: the policy's test accuracy is 0.7363 on the MXU in bf16
# and 0.7359 on the reference backend (measured); at least 0.7 is asked
for be in sim reference; do
  expect_status 0 "$TPUSIM" train --model two.json --batch 64 --steps-per-epoch 100 --backend $be --json
  cp out.txt "two_$be.json"
  acc=$(json_get test_accuracy "two_$be.json")
  /usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.7 else 1)" "$acc" ||
    die "backend $be: test accuracy $acc, expected >= 0.7"
  # each output's own mean loss (unweighted), as Keras' History keys it
  # (<output>_loss): finite, and the loss is their weighted sum
  /usr/bin/python3 - "two_$be.json" <<'PY' || die "backend $be: per-output losses missing or not summing to the loss"
import json, math, sys
r = json.load(open(sys.argv[1]))
W = {"policy_loss": 1.0, "value_loss": 0.5}
def check(total, parts):
    assert sorted(parts) == sorted(W), parts
    assert all(math.isfinite(v) and v >= 0 for v in parts.values()), parts
    s = sum(W[k] * v for k, v in parts.items())
    assert abs(total - s) <= 1e-6 * max(1.0, total), (total, s)
h = r["history"][-1]
check(h["loss"], h["output_losses"])
check(h["val_loss"], h["val_output_losses"])
check(r["train_loss"], r["train_output_losses"])
check(r["val_loss"], r["val_output_losses"])
PY
done
# the progress line: Keras' order, loss, each output's loss, accuracy; the
# --csv rows gain a column per output
expect_status 0 "$TPUSIM" train --model two.json --batch 64 --steps-per-epoch 5 --backend reference --csv two.csv
expect_out_contains "] - "
grep -Eq -- ' - loss: [0-9.]+ - policy_loss: [0-9.]+ - value_loss: [0-9.]+ - accuracy: [0-9.]+ - val_loss: [0-9.]+ - val_policy_loss: [0-9.]+ - val_value_loss: [0-9.]+ - val_accuracy: [0-9.]+$' out.txt ||
  die "the progress line lacks the outputs' losses"
/usr/bin/python3 - two.csv <<'PY' || die "--csv: per-output loss columns missing or not summing to the loss"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 5 and list(rows[0])[-2:] == ["policy_loss", "value_loss"], list(rows[0])
for r in rows:
    s = float(r["policy_loss"]) + 0.5 * float(r["value_loss"])
    assert abs(float(r["loss"]) - s) <= 1e-6 * max(1.0, s), r
PY
/usr/bin/python3 - two_sim.json two_reference.json <<'PY' || die "sim and reference losses differ"
import json, sys
a, b = (json.load(open(f))["test_loss"] for f in sys.argv[1:])
sys.exit(0 if abs(a - b) <= 0.02 * max(a, b) else 1)
PY
expect_status 0 "$TPUSIM" train --model two.json --batch 64 --steps-per-epoch 3 --level timing
expect_out_contains "simulated step"
# the timing level computes no values: the outputs' losses are null
expect_status 0 "$TPUSIM" train --model two.json --batch 64 --steps-per-epoch 3 --level timing --json
[ "$(json_get val_output_losses out.txt)" = None ] && [ "$(json_get history.0.output_losses out.txt)" = None ] ||
  die "timing level: the outputs' losses should be null"

# a Keras Functional with two outputs: each takes its head's loss (softmax:
# cross-entropy; tanh: squared error), weight 1
/usr/bin/python3 - <<'PY'
import json
def L(cls, name, cfg, ins):
    c = {"name": name}; c.update(cfg)
    return {"class_name": cls, "name": name, "config": c, "inbound_nodes": [[[i, 0, 0, {}] for i in ins]] if ins else []}
layers = [L("InputLayer", "in", {"batch_input_shape": [None, 28, 28, 1]}, None),
          L("Conv2D", "c", {"filters": 4, "kernel_size": [3, 3], "strides": [2, 2], "activation": "relu"}, ["in"]),
          L("Flatten", "f", {}, ["c"]),
          L("Dense", "pi", {"units": 10, "activation": "softmax"}, ["f"]),
          L("Dense", "v", {"units": 1, "activation": "tanh"}, ["f"])]
json.dump({"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "k2", "input_layers": [["in", 0, 0]],
           "output_layers": [["pi", 0, 0], ["v", 0, 0]], "layers": layers}}, open("k2.json", "w"))
PY
expect_status 0 "$TPUSIM" model k2.json
expect_out_contains "Outputs: pi softmax_cross_entropy x 1, v mean_squared_error x 1"
expect_status 0 "$TPUSIM" train --model k2.json --batch 64 --steps-per-epoch 5 --backend reference
expect_out_contains " - accuracy: "
