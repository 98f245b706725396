# ONNX import (docs/MODELS.md, "ONNX import"): files built with Debian's
# python3-onnx helper API (tests/e2e/onnx_write.py) through the binary --
# the parameter count and every layer's output shape against ONNX's own
# shape inference (a small CNN, a ResNet-style graph), the refusal of a
# transformer-style graph naming every operator type it lacks at once, a
# first training step whose loss is numpy's from the file's weights, and a
# step at the timing level and in the viewer. The refusals of bad files are
# t_badinput.sh's corpus.
PY=/usr/bin/python3
$PY "$TPU_ROOT/tests/e2e/onnx_write.py" make .

for f in small_cnn resnet loss; do
  expect_status 0 "$TPUSIM" model "$f.onnx" --json
  echo "$OUT" > "$f.json"
  $PY "$TPU_ROOT/tests/e2e/onnx_write.py" check "$f.onnx" "$f.json" || die "$f.onnx against ONNX shape inference"
done
expect_status 0 "$TPUSIM" model resnet.onnx
expect_out_contains 'Model: "small_resnet"'
expect_out_contains "stem_pad (zero_padding)            (None, 34, 34, 3)"
expect_out_contains "dw (depthwise_conv2d)              (None, 8, 8, 32)"
expect_out_contains "Total params: 6,549"

# every operator type the transformer-style graph needs, at once, each with its first node
expect_status 2 "$TPUSIM" model transformer.onnx
expect_err_contains "transformer.onnx: 7 operator types are not supported: Gather (first: node 0 'embed'), LayerNormalization (first: node 1 'ln1'), Transpose (first: node 3 'k_t'), Div (first: node 6 'gelu_div'), Erf (first: node 7 'gelu_erf'), Mul (first: node 9 'gelu_mul'), com.microsoft.FusedGelu (first: node 11 'fused')"
expect_err_contains "are not mapped from ONNX yet (the native layers exist: docs/MODELS.md)"

# the first step starts from the file's weights: its loss is numpy's, in f32
# exactly (float32 policy, reference backend) and within bf16's error on the MXU
want=$(cat loss.txt)
for be in "--backend reference --dtype-policy float32:1e-6" ":1e-2"; do
  expect_status 0 "$TPUSIM" train --model loss.onnx --data idx --batch 64 --steps-per-epoch 1 ${be%:*} --csv l.csv
  got=$(sed -n 2p l.csv | cut -d, -f3)
  $PY -c "import sys; g, w, tol = map(float, sys.argv[1:]); sys.exit(abs(g - w) > tol * w)" "$got" "$want" "${be#*:}" \
    || die "loss.onnx ${be%:*}: first loss $got, numpy's from the file's weights $want"
done

# a step at the timing level, and the viewer's picture of one
expect_status 0 "$TPUSIM" train --model resnet.onnx --level timing --data synthetic --synthetic-n 64 --batch 64 \
  --steps-per-epoch 1
expect_out_contains "Training small_resnet (6549 parameters)"
expect_status 0 env SDL_VIDEODRIVER=dummy "$TPUSIM" viz --model small_cnn.onnx --batch 8 --headless --png v.png
[ -s v.png ] || die "viz --model small_cnn.onnx wrote no picture"
