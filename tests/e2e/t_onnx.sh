# ONNX import (docs/MODELS.md, "ONNX import"): files built with Debian's
# python3-onnx helper API (tests/e2e/onnx_write.py) through the binary --
# the parameter count and every layer's output shape against ONNX's own
# shape inference (a small CNN, a ResNet-style graph, a ResNeXt block with grouped Convs, transformers in opset
# 17 and in opset 13's decompositions), the refusal of a graph naming every
# operator type it lacks at once, first training steps whose loss is numpy's
# from the file's weights (a CNN, the opset-13 transformer), and a step at
# the timing level and in the viewer. The refusals of bad files are
# t_badinput.sh's corpus.
PY=/usr/bin/python3
$PY "$TPU_ROOT/tests/e2e/onnx_write.py" make .

for f in small_cnn resnet loss transformer transformer13 seqops vit resnext; do
  expect_status 0 "$TPUSIM" model "$f.onnx" --json
  echo "$OUT" > "$f.json"
  $PY "$TPU_ROOT/tests/e2e/onnx_write.py" check "$f.onnx" "$f.json" || die "$f.onnx against ONNX shape inference"
done
expect_status 0 "$TPUSIM" model resnet.onnx
expect_out_contains 'Model: "small_resnet"'
expect_out_contains "stem_pad (zero_padding)            (None, 34, 34, 3)"
expect_out_contains "dw (depthwise_conv2d)              (None, 8, 8, 32)"
expect_out_contains "Total params: 6,549"

# grouped Convs (ResNeXt's group 4 with bias, a strided group 8 without): conv2d with groups, the
# weight [F, C/group, kh, kw] read as kh x kw x C/group x F
expect_status 0 "$TPUSIM" model resnext.onnx
expect_out_contains "grouped (conv2d)                   (None, 8, 8, 16)                 592  4 x (64 x 36 x 4)"
expect_out_contains "down (conv2d)                      (None, 4, 4, 32)                 576  8 x (16 x 18 x 4)"
expect_out_contains "Total params: 2,170"

# the transformer operators: opset 17's LayerNormalization, a Gather embedding, a position table, attention
# and Gelu's Erf form (transformer.onnx); opset 13's decompositions (transformer13.onnx)
expect_status 0 "$TPUSIM" model transformer.onnx
expect_out_contains "embed (embedding)                  (None, 8, 16)                    800"
expect_out_contains "pos_add (position_embedding)       (None, 8, 16)                    256"
expect_out_contains "attn (multi_head_attention)        (None, 8, 16)                  1,088"
expect_out_contains "gelu (gelu)                        (None, 8, 32)"
expect_out_contains "Total params: 3,450"
expect_status 0 "$TPUSIM" model transformer13.onnx
expect_out_contains "ln1 (layer_normalization)          (None, 4, 8)                      16"
expect_out_contains "to_cl (permute)                    (None, 8, 4)"
expect_out_contains "gate (multiply)                    (None, 4, 12)"
expect_out_contains "Total params: 926"

# every operator type tpusim does not read, at once, each with its first node
expect_status 2 "$TPUSIM" model refused.onnx
expect_err_contains "refused.onnx: 5 operator types are not supported: Elu (first: node 0 'elu'), Div (first: node 1 'div'), Erf (first: node 2 'erf'), Where (first: node 3 'where'), com.microsoft.FusedGelu (first: node 5 'fused')"
expect_err_contains "; Div, Sub, Pow, Sqrt and Erf only inside a Gelu, a LayerNormalization decomposition or attention's scale"

# the first step starts from the file's weights: its loss is numpy's, in f32
# exactly (float32 policy, reference backend) and within bf16's error on the MXU
want=$(cat loss.txt)
for be in "--backend reference --dtype-policy float32:1e-6" ":1e-2"; do
  expect_status 0 "$TPUSIM" train --model loss.onnx --data idx --batch 64 --steps-per-epoch 1 ${be%:*} --csv l.csv
  got=$(sed -n 2p l.csv | cut -d, -f3)
  $PY -c "import sys; g, w, tol = map(float, sys.argv[1:]); sys.exit(abs(g - w) > tol * w)" "$got" "$want" "${be#*:}" \
    || die "loss.onnx ${be%:*}: first loss $got, numpy's from the file's weights $want"
done

# the first loss from the file's weights (numpy, f64), in f32 on the reference backend (and within bf16's
# error on the MXU), of: the opset-17
# transformer (a Gather embedding of token ids, read raw by a pipeline without normalize; the position
# table, LayerNormalization, attention, Gelu's Erf form, ReduceMean), the opset-13 one (LayerNormalization's
# decomposition, attention scaled by Mul, Gelu's tanh form, Mul, Transpose, Reshape) and the sequence
# operators' graph (Softmax over positions, Reshape to 4-D, a Transpose to NCHW, Concat, ReduceMean) and
# ViT's front and head (a Conv of patches, x.flatten(2).transpose(1, 2), x[:, 0]) and a ResNeXt block
# (grouped Convs)
for f in "transformer:loss_tok:--pipeline tok.json --data tok" "transformer13:loss13:--data idx" \
         "seqops:loss_seqops:--data idx64" "vit:loss_vit:--data idx88" "resnext:loss_resnext:--data idx88"; do
  IFS=: read -r m l args <<< "$f"
  want=$(cat $l.txt)
  for be in "--backend reference --dtype-policy float32:1e-6" ":1e-2"; do
    expect_status 0 "$TPUSIM" train --model $m.onnx $args --batch 64 --steps-per-epoch 1 ${be%:*} --csv $m.csv
    got=$(sed -n 2p $m.csv | cut -d, -f3)
    $PY -c "import sys; g, w, tol = map(float, sys.argv[1:]); sys.exit(abs(g - w) > tol * w)" "$got" "$want" \
      "${be#*:}" || die "$m.onnx ${be%:*}: first loss $got, numpy's from the file's weights $want"
  done
done
expect_status 0 "$TPUSIM" train --model transformer.onnx --level timing --data synthetic --synthetic-n 64 --batch 64 \
  --steps-per-epoch 1
expect_out_contains "Training tiny_transformer (3450 parameters)"

# a step at the timing level, and the viewer's picture of one
expect_status 0 "$TPUSIM" train --model resnet.onnx --level timing --data synthetic --synthetic-n 64 --batch 64 \
  --steps-per-epoch 1
expect_out_contains "Training small_resnet (6549 parameters)"
expect_status 0 env SDL_VIDEODRIVER=dummy "$TPUSIM" viz --model small_cnn.onnx --batch 8 --headless --png v.png
[ -s v.png ] || die "viz --model small_cnn.onnx wrote no picture"
