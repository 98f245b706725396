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

# Trains example $1 (tag $2, $3 parameters) with "$@" after them on both
# backends: its parameter count, and test accuracies above 0.8 and within $4.
both_backends() {
  local ex=$1 tag=$2 params=$3 tol=$4 be; shift 4
  for be in reference sim; do
    expect_status 0 "$TPUSIM" train --model "$TPU_ROOT/docs/examples/$ex" --backend $be --json "$@"
    echo "$OUT" > ${tag}_$be.json
    [ "$(json_get parameters ${tag}_$be.json)" = "$params" ] || die "$ex parameters: $(json_get parameters ${tag}_$be.json)"
  done
  /usr/bin/python3 -c 'import json, sys; a=json.load(open(sys.argv[1]))["test_accuracy"]; b=json.load(open(sys.argv[2]))["test_accuracy"]; assert a > 0.8 and abs(a-b) <= float(sys.argv[3]), (a, b)' \
    ${tag}_reference.json ${tag}_sim.json "$tol" || die "$ex accuracies"
}

# The graph example (add, concatenate) has its documented parameter count and
# learns the same on both backends (test accuracy within 2 points of 256).
RES="$TPU_ROOT/docs/examples/small-resnet.json"
both_backends small-resnet.json res 16706 0.02 --data synthetic --synthetic-n 1024 --batch 64 --epochs 2

# A bad graph: exit 2, the layers and the shapes named (docs/MODELS.md's example)
sed 's/"name": "res_b", "filters": 16/"name": "res_b", "filters": 32/' "$RES" > r32.json
expect_status 2 "$TPUSIM" train --model r32.json --level timing
expect_err_contains "r32.json:11:5: layers[6] (add 'res_sum'): input shapes do not match: layers[5] (conv2d 'res_b') gives 14x14x32, layers[2] (maxpool 'pool1') gives 14x14x16; add needs equal shapes"

# The residual network with batch normalization (docs/examples/small-resnet-bn.json,
# docs/MODELS.md "A residual network, on both backends"): its documented parameter
# count, and the two backends learn the same, test accuracies within 1 point. The
# docs' run is 2 epochs of Fashion-MNIST (minutes); this one is 2 epochs of a
# synthetic set of its shape, 64 steps: enough for the moving statistics
# (momentum 0.9) to follow the weights.
both_backends small-resnet-bn.json rbn 78426 0.01 --data synthetic --synthetic-n 512 --batch 16 --epochs 2
