# The worked example of docs/MODELS.md parses, has the documented parameter
# count, and trains a few steps; the built-in cnn's shapes hold.
EX="$TPU_ROOT/docs/examples/small-cnn.json"
expect_status 0 "$TPUSIM" train --model "$EX" --data synthetic --synthetic-n 128 --batch 32 --backend reference --json
echo "$OUT" > r.json
[ "$(json_get parameters r.json)" = 79242 ] || die "small-cnn parameters: $(json_get parameters r.json)"
[ "$(json_get model r.json)" = small-cnn ] || die "name"
expect_status 0 "$TPUSIM" train --model cnn --level timing --json
echo "$OUT" > c.json
[ "$(json_get parameters c.json)" = 3274634 ] || die "cnn parameters"

# The graph example (add, concatenate) has its documented parameter count and
# learns the same on both backends (test accuracy within 2 points of 256).
RES="$TPU_ROOT/docs/examples/small-resnet.json"
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model "$RES" --data synthetic --synthetic-n 1024 --batch 64 --epochs 2 \
    --backend $be --json
  echo "$OUT" > res_$be.json
  [ "$(json_get parameters res_$be.json)" = 16706 ] || die "small-resnet parameters: $(json_get parameters res_$be.json)"
done
/usr/bin/python3 -c 'import json; a=json.load(open("res_reference.json"))["test_accuracy"]; b=json.load(open("res_sim.json"))["test_accuracy"]; assert a > 0.8 and abs(a-b) <= 0.02, (a, b)' || die "small-resnet accuracies"

# A bad graph: exit 2, the layers and the shapes named (docs/MODELS.md's example)
sed 's/"name": "res_b", "filters": 16/"name": "res_b", "filters": 32/' "$RES" > r32.json
expect_status 2 "$TPUSIM" train --model r32.json --level timing
expect_err_contains "r32.json:11:5: layers[6] (add 'res_sum'): input shapes do not match: layers[5] (conv2d 'res_b') gives 14x14x32, layers[2] (maxpool 'pool1') gives 14x14x16; add needs equal shapes"

# The residual network with batch normalization (docs/examples/small-resnet-bn.json,
# docs/MODELS.md "A residual network on both backends"): its documented parameter
# count, and the two backends learn the same, test accuracies within 1 point. The
# docs' run is 2 epochs of Fashion-MNIST (minutes); this one is 2 epochs of a
# synthetic set of its shape, 64 steps: enough for the moving statistics
# (momentum 0.9) to follow the weights.
RBN="$TPU_ROOT/docs/examples/small-resnet-bn.json"
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model "$RBN" --data synthetic --synthetic-n 512 --batch 16 --epochs 2 \
    --backend $be --json
  echo "$OUT" > rbn_$be.json
  [ "$(json_get parameters rbn_$be.json)" = 78426 ] || die "small-resnet-bn parameters: $(json_get parameters rbn_$be.json)"
done
/usr/bin/python3 -c 'import json; a=json.load(open("rbn_reference.json"))["test_accuracy"]; b=json.load(open("rbn_sim.json"))["test_accuracy"]; assert a > 0.8 and abs(a-b) <= 0.01, (a, b)' || die "small-resnet-bn accuracies"
