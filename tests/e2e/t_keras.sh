# Keras import (docs/MODELS.md, "Keras import"): the hand-written Keras
# files of tests/data/keras/ through the binary -- the summary, a 1-step
# train at the timing level, a tiny train on the reference backend that
# ends in the very parameters of the native model written beside them --
# the options not modelled on stderr and in --json, bad files (exit 2, the
# layer and its class named), and the real files of ../shared/keras-models
# that need the command line (an input shape after '@').
K="$TPU_ROOT/tests/data/keras"
S="--data synthetic --synthetic-n 256 --batch 64"

# tpusim model: Keras' summary and counts (tests/check_keras.c derives them)
for f in cnn_seq_tf2 cnn_seq_k3; do
  expect_status 0 "$TPUSIM" model "$K/$f.json"
  expect_out_contains 'Model: "small_cnn"'
  expect_out_contains "conv2 (conv2d)                     (None, 12, 12, 32)             4,608  144 x 144 x 32"
  expect_out_contains "Total params: 79,274"
  expect_out_contains "Trainable params: 79,242"
  expect_out_contains "Non-trainable params: 32"
  expect_err_contains "$f.json (Keras "
  expect_err_contains "1 option not modelled, ignored"
  expect_err_contains "  kernel_regularizer L2(l2=0.0001): 1 layer (conv1): no regularization term is added to the loss"
done
for f in res_func_tf2 res_func_k3; do
  expect_status 0 "$TPUSIM" model "$K/$f.json"
  expect_out_contains 'Model: "small_res"'
  expect_out_contains "res_add (add)                      (None, 14, 14, 16)"
  expect_out_contains "join (concatenate)                 (None, 14, 14, 24)"
  expect_out_contains "Total params: 5,234"
done
# --json: the notes in the report, not on stderr
expect_status 0 "$TPUSIM" model "$K/cnn_seq_k3.json" --json
echo "$OUT" > m.json
[ -z "$ERR" ] || die "model --json wrote on stderr: $ERR"
[ "$(json_get parameters m.json)" = 79274 ] || die "cnn_seq_k3 parameters"
[ "$(json_get keras_ignored.0 m.json)" = "kernel_regularizer L2(l2=0.0001): 1 layer (conv1): no regularization term is added to the loss" ] \
  || die "keras_ignored: $(json_get keras_ignored m.json)"

# one training step at the timing level, each file
for f in cnn_seq_tf2 cnn_seq_k3 res_func_tf2 res_func_k3; do
  expect_status 0 "$TPUSIM" train --model "$K/$f.json" --level timing --data synthetic --synthetic-n 128 --batch 128 \
    --steps-per-epoch 1 --json
  echo "$OUT" > t.json
  [ "$(json_get sim_step_cycles t.json)" -gt 0 ] || die "$f: step cycles"
done
# a tiny run on the reference backend: the Keras files train to the bits of
# the native models written beside them (same layers, same seed, adam)
for pair in cnn_seq_tf2:cnn_native res_func_tf2:res_native; do
  for f in ${pair%%:*} ${pair##*:}; do
    expect_status 0 "$TPUSIM" train --model "$K/$f.json" $S --epochs 1 --steps-per-epoch 3 --backend reference --json
    echo "$OUT" > "r_$f.json"
  done
  a=$(json_get params_hash "r_${pair%%:*}.json"); b=$(json_get params_hash "r_${pair##*:}.json")
  [ "$a" = "$b" ] || die "${pair%%:*} trains to $a, the native ${pair##*:} to $b"
  /usr/bin/python3 -c 'import json,math,sys; d=json.load(open(sys.argv[1])); assert math.isfinite(d["train_loss"]), d' \
    "r_${pair%%:*}.json" || die "${pair%%:*}: loss"
done
# a compile_config that is not an object is listed as not read, as other
# keys the importer does not use are (null: a model never compiled, silent)
for cc in '"adam"' '[1]' 'null'; do
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["compile_config"]=json.loads(sys.argv[2]); json.dump(d,open("kcc.json","w"))' \
    "$K/cnn_seq_k3.json" "$cc"
  expect_status 0 "$TPUSIM" model kcc.json --json
  echo "$OUT" > kcc_r.json
  n=$(/usr/bin/python3 -c 'import json,sys; print(sum(i.startswith("compile_config ") for i in json.load(open(sys.argv[1]))["keras_ignored"]))' kcc_r.json)
  [ "$n" = "$([ "$cc" = null ] && echo 0 || echo 1)" ] || die "compile_config $cc: keras_ignored $(json_get keras_ignored kcc_r.json)"
done
sed 's/"compile_config": null/"compile_config": "adam"/' kcc.json > kcc2.json
expect_status 0 "$TPUSIM" model kcc2.json
expect_err_contains 'compile_config adam: not an object (Keras 3 writes the compile arguments as one): not read'
# the Keras 3 CNN's compile_config (SGD with momentum) is its optimizer
expect_status 0 "$TPUSIM" train --model "$K/cnn_seq_k3.json" $S --epochs 1 --steps-per-epoch 3 --backend reference --json
echo "$OUT" > r_k3.json
[ "$(json_get params_hash r_k3.json)" != "$(json_get params_hash r_cnn_seq_tf2.json)" ] || die "cnn_seq_k3 trained with adam"

# DepthwiseConv2D, SeparableConv2D and ReLU(max_value): their native layers
# come from another branch; until the native parser knows them, skip
printf '{ "input": [8, 8, 4], "layers": [ { "type": "depthwise_conv2d", "kernel": 3, "padding": "same" },\n  { "type": "separable_conv2d", "filters": 4, "kernel": 3 }, { "type": "relu", "max_value": 6 },\n  { "type": "flatten" }, { "type": "dense", "units": 2 } ] }' > probe.json
if "$TPUSIM" model probe.json >/dev/null 2>&1; then
  expect_status 0 "$TPUSIM" model "$K/mobile_func_k3.json"
  expect_out_contains "dw1 (depthwise_conv2d)"
  expect_out_contains "sep2 (separable_conv2d)"
  expect_out_contains "Total params: 1,370"
  expect_status 0 "$TPUSIM" model "$K/sep_seq_tf2.json"
  expect_out_contains "Total params: 3,143"
  expect_status 0 "$TPUSIM" train --model "$K/mobile_func_k3.json" --level timing --data synthetic --synthetic-n 128 \
    --batch 128 --steps-per-epoch 1
else
  echo "t_keras: SKIP: mobile_func_k3.json and sep_seq_tf2.json: the native parser does not know depthwise_conv2d," \
       "separable_conv2d or relu's max_value yet (another branch adds them)"
  expect_status 2 "$TPUSIM" model "$K/sep_seq_tf2.json"
  expect_err_contains "Keras layer 'dw' (DepthwiseConv2D), translated to layers[0]"
fi

# bad Keras files: exit 2, the layer (name and class) at its line:column
IN='{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 8, 8, 2]}, "inbound_nodes": []}'
F0='{"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [\n'"$IN"
hd() { printf '%s' ',\n{"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["'"$1"'", 0, 0, {}]]]},\n{"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 3}, "inbound_nodes": [[["f", 0, 0, {}]]]}]}}'; }
HD=$(hd c)
CV='{"class_name": "Conv2D", "name": "c", "config": {"name": "c", "filters": 4, "kernel_size": [3, 3]'
bad_inputs "$TPUSIM" train $S --model <<CASES
kunk.json|$F0,\n{"class_name": "LSTM", "name": "c", "config": {"name": "c", "units": 4}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|kunk.json:3:16: layer 'c' (LSTM): class LSTM is not supported
kmiss.json|$F0,\n$CV}, "inbound_nodes": [[["conv9", 0, 0, {}]]]}$HD|kmiss.json:3:118: layer 'c' (Conv2D): its input 'conv9' is not a layer of the model
kcyc.json|$F0,\n{"class_name": "Add", "name": "a", "config": {"name": "a"}, "inbound_nodes": [[["in", 0, 0, {}], ["c", 0, 0, {}]]]},\n$CV, "padding": "same"}, "inbound_nodes": [[["a", 0, 0, {}]]]}$HD|layer 'a' (Add): a cycle: it takes its input from 'c' (Conv2D), which depends on it
kcf.json|$F0,\n$CV, "data_format": "channels_first"}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|kcf.json:3:115: layer 'c' (Conv2D): field 'data_format': 'channels_first' is not supported
kdil.json|$F0,\n$CV, "dilation_rate": [2, 2]}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (Conv2D): field 'dilation_rate': [2, 2]: dilated convolutions are not supported
kshape.json|$F0,\n$CV}, "inbound_nodes": [[["in", 0, 0, {}]]]},\n{"class_name": "Add", "name": "s", "config": {"name": "s"}, "inbound_nodes": [[["c", 0, 0, {}], ["in", 0, 0, {}]]]}$(hd s)|kshape.json:4:1: Keras layer 's' (Add), translated to layers[1] (add 's'): input shapes do not match
k1.json|{"class_name": "Sequential", "keras_version": "1.2.1", "config": [{"class_name": "Merge", "config": {"name": "mm", "mode": "mul"}}]}|k1.json:1:82: layer 'mm' (Merge): class Merge is not supported: Keras 1's Merge is read in modes concat (Concatenate) and sum (Add)
kbigk.json|$F0,\n{"class_name": "Conv2D", "name": "c", "config": {"name": "c", "filters": 4, "kernel_size": 4294967299}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (Conv2D): field 'kernel_size': expected an integer or [kh, kw], integers in 1..64, got 4294967299
kbigs.json|$F0,\n$CV, "strides": [4294967298, 4294967298]}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (Conv2D): field 'strides': expected an integer or [sh, sw], integers in 1..64, got 4294967298
kbigs40.json|$F0,\n$CV, "strides": 1099511627776}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (Conv2D): field 'strides': expected an integer or [sh, sw], integers in 1..64, got 1099511627776
kbigp.json|$F0,\n{"class_name": "MaxPooling2D", "name": "c", "config": {"name": "c", "pool_size": 4294967298}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (MaxPooling2D): field 'pool_size': expected an integer or [ph, pw], integers in 1..64, got 4294967298
kbigps.json|$F0,\n{"class_name": "MaxPooling2D", "name": "c", "config": {"name": "c", "pool_size": 2, "strides": 4294967298}, "inbound_nodes": [[["in", 0, 0, {}]]]}$HD|layer 'c' (MaxPooling2D): field 'strides': expected an integer or [sh, sw], integers in 1..64, got 4294967298
CASES

# an input shape given after the file name is whole dimensions, nothing after them
INU='{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, null, null, 2]}, "inbound_nodes": []}'
printf '%b' '{"class_name": "Functional", "keras_version": "2.15.0", "config": {"name": "m", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [' "$INU" ',' "$CV"'}, "inbound_nodes": [[["in", 0, 0, {}]]]}' "$(hd c)" > kun.json
expect_status 0 "$TPUSIM" model kun.json@8x8x2
for junk in 8x8x2x 8x8x2x3 8xx8x2 x8x8x2; do
  expect_status 2 "$TPUSIM" model "kun.json@$junk"
  expect_err_contains "@$junk: expected 3 dimensions (HxWxC)"
done

# Keras 1: a functional Model channels first (dim_ordering "th"), with
# Merge(mode="concat") and Keras 1.0's 3-element inbound nodes, read as
# Keras 2 reads it and channels last; counts as Keras': 224 + 32 + 32 + 725
L1='{"class_name": "Convolution2D", "name": "c1", "config": {"name": "c1", "nb_filter": 8, "nb_row": 3, "nb_col": 3, "border_mode": "same", "subsample": [2, 2], "dim_ordering": "th", "activation": "relu"}, "inbound_nodes": [[["in", 0, 0]]]}'
L2='{"class_name": "BatchNormalization", "name": "bn", "config": {"name": "bn", "mode": 0, "axis": 1}, "inbound_nodes": [[["c1", 0, 0]]]}'
L3='{"class_name": "Convolution2D", "name": "c2", "config": {"name": "c2", "nb_filter": 4, "nb_row": 1, "nb_col": 1, "dim_ordering": "th", "bias": false}, "inbound_nodes": [[["bn", 0, 0]]]}'
L4='{"class_name": "Merge", "name": "m", "config": {"name": "m", "mode": "concat", "concat_axis": 1}, "inbound_nodes": [[["bn", 0, 0], ["c2", 0, 0]]]}'
L5='{"class_name": "MaxPooling2D", "name": "p", "config": {"name": "p", "pool_size": [2, 2], "border_mode": "valid", "dim_ordering": "th"}, "inbound_nodes": [[["m", 0, 0]]]}'
L6='{"class_name": "Flatten", "name": "f", "config": {"name": "f"}, "inbound_nodes": [[["p", 0, 0]]]}, {"class_name": "Dropout", "name": "dr", "config": {"name": "dr", "p": 0.5}, "inbound_nodes": [[["f", 0, 0]]]}'
L7='{"class_name": "Dense", "name": "d", "config": {"name": "d", "output_dim": 5, "activation": "softmax"}, "inbound_nodes": [[["dr", 0, 0]]]}'
printf '%s\n' '{"class_name": "Model", "keras_version": "1.0.8", "config": {"name": "k1", "input_layers": [["in", 0, 0]], "output_layers": [["d", 0, 0]], "layers": [' \
  '{"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_input_shape": [null, 3, 16, 12]}, "inbound_nodes": []},' \
  "$L1, $L2, $L3, $L4, $L5, $L6, $L7]}}" > k1th.json
expect_status 0 "$TPUSIM" model k1th.json
expect_out_contains "c1 (conv2d)                        (None, 8, 6, 8)                  224"
expect_out_contains "m (concatenate)                    (None, 8, 6, 12)"
expect_out_contains "Total params: 1,013"
expect_err_contains "dim_ordering th: read channels last"
expect_status 0 "$TPUSIM" train --model k1th.json --data synthetic --synthetic-n 64 --batch 32 --steps-per-epoch 1 --backend reference

# a binary head (one sigmoid unit): summarized, and trained with binary
# cross-entropy (t_binary.sh trains real ones)
printf '%s\n' '{"class_name": "Sequential", "keras_version": "2.4.0", "config": {"name": "binary", "layers": [' \
  '{"class_name": "Dense", "config": {"name": "hidden", "units": 8, "activation": "relu", "batch_input_shape": [null, 4]}},' \
  '{"class_name": "Dense", "config": {"name": "out", "units": 1, "activation": "sigmoid"}}]}}' > bin.json
expect_status 0 "$TPUSIM" model bin.json
expect_out_contains "out (dense)                        (None, 1)                          9"
expect_out_contains "Loss: binary_cross_entropy"
expect_status 0 "$TPUSIM" train --model bin.json $S --backend reference
expect_out_contains " - accuracy: "

# a Sequential saved with no input shape takes it after '@'; a double-encoded
# file (json.dump(model.to_json()): a JSON string holding the model) loads
printf '%s\n' '{"class_name": "Sequential", "keras_version": "2.4.0", "config": {"name": "s", "layers": [' \
  '{"class_name": "Conv2D", "config": {"name": "conv", "filters": 4, "kernel_size": [3, 3], "activation": "relu"}},' \
  '{"class_name": "Flatten", "config": {"name": "flat"}},' \
  '{"class_name": "Dense", "config": {"name": "out", "units": 10, "activation": "softmax"}}]}}' > noin.json
expect_status 2 "$TPUSIM" model noin.json
expect_err_contains "noin.json:2:1: layer 'conv' (Conv2D): the model's input shape is not in the file (no InputLayer, batch_input_shape or build_input_shape); give it after the file name: FILE@HxWxC"
expect_status 0 "$TPUSIM" model noin.json@28x28x1
expect_out_contains "Total params: 27,090"
expect_status 2 "$TPUSIM" model noin.json@1x2x3x4
expect_err_contains "@1x2x3x4: expected 3 dimensions (HxWxC) for the input shape [null, null, null, null] of the Sequential model"
/usr/bin/python3 -c 'import json, sys; json.dump(open(sys.argv[1]).read(), open(sys.argv[2], "w"))' noin.json dbl.json
expect_status 0 "$TPUSIM" model dbl.json@28x28x1
expect_out_contains "Total params: 27,090"
/usr/bin/python3 -c 'import json, sys; json.dump(open(sys.argv[1]).read(), open(sys.argv[2], "w"))' "$K/res_func_k3.json" dbl3.json
expect_status 0 "$TPUSIM" train --model dbl3.json --level timing --data synthetic --synthetic-n 128 --batch 128 --steps-per-epoch 1

# real files saved from Keras by others (tests/check_keras.c checks all of them)
R="$TPU_ROOT/../shared/keras-models"
if [ -e "$R/README.md" ]; then
  expect_status 2 "$TPUSIM" model "$R/tfk2.1.6_inception_v3_model.json"
  expect_err_contains "layer 'input_4' (InputLayer): the input shape [null, null, null, 3] is unspecified (null); give it after the file name: FILE@HxWxC"
  expect_status 0 "$TPUSIM" model "$R/tfk2.1.6_inception_v3_model.json@299x299x3"
  expect_out_contains "Total params: 23,851,784"
  expect_status 0 "$TPUSIM" train --model "$R/tfk2.1.6_inception_v3_model.json@299x299x3" --level timing \
    --data synthetic --synthetic-n 32 --batch 32 --steps-per-epoch 1
  expect_status 2 "$TPUSIM" model "$R/INVALID_k3_merge_conflict_markers.json"
  expect_err_contains "INVALID_k3_merge_conflict_markers.json:1:1: malformed JSON"
  expect_status 0 "$TPUSIM" model "$R/k1_mnist_cnn_seq.json"
  expect_out_contains "Total params: 600,810"
  # two outputs (t_outputs.sh): loads, its step is timed, and it trains at
  # the tile level (362 classes; one core keeps it to about 1 GB and 6 s)
  expect_status 0 "$TPUSIM" model "$R/k2.2.0_agz_dual_res_model.json"
  expect_out_contains "Total params: 23,881,170"
  expect_out_contains "Outputs: policy_head_dense softmax_cross_entropy x 1, value_head_output mean_squared_error x 1"
  expect_status 0 "$TPUSIM" train --model "$R/k2.2.0_agz_dual_res_model.json" --level timing --data synthetic \
    --synthetic-n 16 --batch 8 --steps-per-epoch 1
  expect_status 0 "$TPUSIM" train --model "$R/k2.2.0_agz_dual_res_model.json" --data synthetic --synthetic-n 16 \
    --batch 8 --steps-per-epoch 1 --backend reference --cores 1 --json
  echo "$OUT" > agz.json
  /usr/bin/python3 -c "import json, math, sys; d = json.load(open('agz.json'))
sys.exit(0 if math.isfinite(d['train_loss']) and math.isfinite(d['test_loss']) else 1)" || die "agz tile-level loss"
else
  echo "t_keras: SKIP: the real Keras files: $R is not there"
fi
