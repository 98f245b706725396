# tpusim model: the Keras-style summary of a zoo model, its totals from the
# step plan, and bad names.
expect_status 0 "$TPUSIM" model vgg16
expect_out_contains "Model: \"vgg16\""
expect_out_contains "block1_conv2 (conv2d)"
expect_out_contains "(None, 224, 224, 64)"
expect_out_contains "50176 x 576 x 64"
expect_out_contains "Total params: 138,357,544"
# VGG16's forward pass is 15.47 GMACs (30,940,528,640 FLOPs); the training
# step adds dW for every layer and dX for all but the first
expect_out_contains "Forward FLOPs: 30,940,528,640"
expect_out_contains "Training step FLOPs: 92,648,177,664"
expect_status 0 "$TPUSIM" model vgg16 --batch 8 --json
echo "$OUT" > v.json
[ "$(json_get parameters v.json)" = 138357544 ] || die "vgg16 parameters: $(json_get parameters v.json)"
[ "$(json_get forward_flops v.json)" = $((8 * 30940528640)) ] || die "vgg16 forward flops at batch 8"
[ "$(json_get step_flops v.json)" = $((8 * 92648177664)) ] || die "vgg16 step flops at batch 8"
/usr/bin/python3 - v.json <<'PY' || die "vgg16 layers"
import json, sys
r = json.load(open(sys.argv[1]))
L = {l["name"]: l for l in r["layers"]}
assert len(r["layers"]) == 22, len(r["layers"])
g = L["block1_conv2"]["gemms"]
assert [(x["what"], x["m"], x["k"], x["n"]) for x in g] == \
    [("matmul", 8 * 50176, 576, 64), ("dW", 576, 8 * 50176, 64), ("dX", 8 * 50176, 64, 576)], g
assert [x["what"] for x in L["block1_conv1"]["gemms"]] == ["matmul", "dW"]   # no dX into the input
assert L["fc1"]["params"] == 25088 * 4096 + 4096 and L["fc1"]["output_shape"] == [1, 1, 4096]
assert sum(l["params"] for l in r["layers"]) == r["parameters"]
assert sum(l["step_flops"] for l in r["layers"]) == r["step_flops"]
PY
# the seed's VGG19 and the knobs
expect_status 0 "$TPUSIM" model vgg19@192x192x3:5
expect_out_contains "Total params: 112,327,749"
expect_out_contains "predictions (dense)                (None, 5)"
# the ResNets (Keras' counts and split) and the seed's custom CNN
expect_status 0 "$TPUSIM" model resnet50
expect_out_contains "conv2_block1_1_bn (batch_normalization)"
expect_out_contains "conv1_conv (conv2d)                     (None, 112, 112, 64)           9,472  12544 x 147 x 64"
expect_out_contains "Total params: 25,636,712"
expect_out_contains "Trainable params: 25,583,592"
expect_out_contains "Non-trainable params: 53,120"
expect_status 0 "$TPUSIM" model resnet152v2@192x192x3:5
expect_out_contains "Total params: 58,341,893"
expect_out_contains "max_pooling2d_2 (maxpool)"
expect_status 0 "$TPUSIM" model seed_cnn
expect_out_contains "Model: \"seed_cnn\""
expect_out_contains "Total params: 78,263"
expect_out_contains "(None, 192, 192, 32)"
expect_status 0 "$TPUSIM" model efficientnetb0
expect_out_contains "Total params: 5,330,571"
expect_out_contains "Non-trainable params: 42,023"
# a 1x1 image keeps Keras' rank 4 (the squeeze-excitation's reshape and
# 1x1 convs), a pooled vector has rank 2, as Keras' own summary prints them
expect_out_contains "block1a_se_reshape (reshape)             (None, 1, 1, 32)                   0"
expect_out_contains "block1a_se_reduce (conv2d)               (None, 1, 1, 8)                  264"
expect_out_contains "block1a_se_expand (conv2d)               (None, 1, 1, 32)                 288"
expect_out_contains "avg_pool (global_avgpool)                (None, 1280)                       0"
expect_out_contains "normalization (normalization)"
# a conv to 1x1 and a dense on it stay images; flatten makes a vector, a
# reshape to [1, 1, C] an image again
cat > r1.json <<'EOF'
{ "input": [3, 3, 2], "layers": [ { "type": "conv2d", "name": "c", "filters": 4, "kernel": 3 },
  { "type": "dense", "name": "d", "units": 5 }, { "type": "flatten", "name": "f" },
  { "type": "reshape", "name": "i", "target_shape": [1, 1, 5] }, { "type": "dense", "name": "o", "units": 3 } ] }
EOF
expect_status 0 "$TPUSIM" model r1.json
expect_out_contains "c (conv2d)                         (None, 1, 1, 4)"
expect_out_contains "d (dense)                          (None, 1, 1, 5)"
expect_out_contains "f (flatten)                        (None, 5)"
expect_out_contains "i (reshape)                        (None, 1, 1, 5)"
expect_out_contains "o (dense)                          (None, 1, 1, 3)"
expect_status 0 "$TPUSIM" model efficientnetb0 --chip tpu-v3-8 --batch 64
expect_out_contains "block1a_se_excite"
expect_out_contains "Step: 33529599 cycles"
# bad names and options: exit 2, a clear message
expect_status 2 "$TPUSIM" model nosuch
expect_err_contains "nosuch: not a built-in model (mlp, cnn, alexnet, vgg16, vgg19, "
expect_err_contains "resnet50, resnet152v2, seed_cnn, bert_base, vit_b16, gpt2"
expect_err_contains ") and cannot be read"
expect_status 2 "$TPUSIM" model vgg19@192x192:5
expect_err_contains "vgg19@192x192:5: a zoo model is NAME[@HxWxC][:CLASSES]"
expect_status 2 "$TPUSIM" model vgg16@16x16x3
expect_err_contains "vgg16@16x16x3:"
expect_status 2 "$TPUSIM" model
expect_err_contains "a model is required"
expect_status 2 "$TPUSIM" model vgg16 --batch 0
expect_err_contains "--batch: expected an integer in 1..4096"
expect_status 2 "$TPUSIM" model vgg16 extra
expect_err_contains "unknown option 'extra'"
# a zoo model trains at the timing level on synthetic data of its own shape
# (224x224x3, 1000 classes)
expect_status 0 "$TPUSIM" train --model vgg19 --level timing --data synthetic --synthetic-n 128 --batch 128 \
  --steps-per-epoch 1 --json
echo "$OUT" > t.json
[ "$(json_get parameters t.json)" = 143667240 ] || die "vgg19 parameters in train"
[ "$(json_get sim_step_cycles t.json)" -gt 0 ] || die "vgg19 step cycles"
# 1000 classes train at the tile level too (int32 labels; a small model on
# both backends: the loss starts near ln 1000 = 6.9); more than the data
# pipeline's 65536 are refused at either level
echo '{ "input": [4, 4, 1], "layers": [ { "type": "flatten" }, { "type": "dense", "units": 1000 } ] }' > c1000.json
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model c1000.json --data synthetic --synthetic-n 64 --batch 16 --backend $be --json
  echo "$OUT" > t.json
  /usr/bin/python3 -c "import json, math, sys; d = json.load(open('t.json')); l = d['train_loss']
sys.exit(0 if math.isfinite(l) and 6.0 < l < 8.0 and math.isfinite(d['test_loss']) else 1)" || die "c1000 $be loss"
done
echo '{ "input": [2], "layers": [ { "type": "dense", "units": 70000 } ] }' > c70k.json
for level in tile timing; do
  expect_status 2 "$TPUSIM" train --model c70k.json --data synthetic --synthetic-n 16 --batch 8 --level $level
  expect_err_contains "c70k.json gives 70000 classes; the data pipeline's labels take at most 65536 classes"
done
