# depthwise_conv2d, separable_conv2d and relu's max_value: Keras' parameter
# counts in tpusim model (docs/examples/small-sepconv.json, Xception,
# MobileNetV2), the depthwise GEMMs shown per channel, a short Fashion-MNIST
# training on both backends with the same accuracy (the 2-epoch run and its
# figures are in docs/MODELS.md), the zoo models at the timing level, and a
# bad field.
EX="$TPU_ROOT/docs/examples/small-sepconv.json"
expect_status 0 "$TPUSIM" model "$EX"
expect_out_contains "sep1 (separable_conv2d)            (None, 14, 14, 32)               688  16 x (196 x 9 x 1) + 196 x 16 x 32"
expect_out_contains "dw2 (depthwise_conv2d)             (None, 7, 7, 64)                 576  32 x (49 x 9 x 2)"
expect_out_contains "Total params: 19,194"
expect_status 0 "$TPUSIM" model "$EX" --batch 4 --json
echo "$OUT" > s.json
/usr/bin/python3 - s.json <<'PY' || die "small-sepconv gemms"
import json, sys
r = json.load(open(sys.argv[1]))
L = {l["name"]: l for l in r["layers"]}
g = [(x["what"], x["groups"], x["m"], x["k"], x["n"]) for x in L["sep1"]["gemms"]]
assert g == [("dw matmul", 16, 4 * 196, 9, 1), ("matmul", 1, 4 * 196, 16, 32), ("dW", 1, 16, 4 * 196, 32),
             ("dX", 1, 4 * 196, 32, 16), ("dw dW", 16, 9, 4 * 196, 1), ("dw dX", 16, 4 * 196, 1, 9)], g
assert sum(l["params"] for l in r["layers"]) == r["parameters"] == 19194
PY
# Keras applications' counts
expect_status 0 "$TPUSIM" model xception
expect_out_contains "Total params: 22,910,480"
expect_out_contains "Non-trainable params: 54,528"
echo "$OUT" | grep -Eq '^block14_sepconv2_act \(relu\) +\(None, 10, 10, 2048\)' || die "block14_sepconv2_act: $OUT"
expect_status 0 "$TPUSIM" model xception@192x192x3:5
expect_out_contains "Total params: 20,871,725"
expect_status 0 "$TPUSIM" model mobilenetv2
expect_out_contains "Total params: 3,538,984"
echo "$OUT" | grep -Eq '^block_1_pad \(zero_padding\) +\(None, 113, 113, 96\)' || die "block_1_pad: $OUT"
# the same learning on both backends: 2 x 30 steps of 128 Fashion-MNIST images
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model "$EX" --data fashion-mnist --epochs 2 --steps-per-epoch 30 --batch 128 \
    --backend $be --json
  echo "$OUT" > sc_$be.json
done
/usr/bin/python3 -c 'import json; a=json.load(open("sc_reference.json"))["test_accuracy"]; b=json.load(open("sc_sim.json"))["test_accuracy"]; assert a > 0.55 and abs(a-b) <= 0.01, (a, b)' || die "small-sepconv accuracies"
# a zoo model with depthwise convs and relu6 runs at the timing level
expect_status 0 "$TPUSIM" train --model mobilenetv2@96x96x3:5 --level timing --data synthetic --synthetic-n 64 \
  --batch 64 --steps-per-epoch 1 --json
echo "$OUT" > mb.json
[ "$(json_get parameters mb.json)" = $((3538984 - 1281 * 995)) ] || die "mobilenetv2 parameters in train"
# a bad field: exit 2, the layer and the field named
sed 's/"depth_multiplier": 2/"depth_multiplier": 0/' "$EX" > bad.json
expect_status 2 "$TPUSIM" model bad.json
expect_err_contains "layers[4] (depthwise_conv2d): field 'depth_multiplier': expected an integer in 1..4096"
