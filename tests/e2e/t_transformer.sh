# Transformers (#29): the zoo's bert_base and vit_b16 at their reference
# parameter counts, attention's parts in the step table, and a small ViT
# (docs/examples/small-vit.json) trained a few steps on Fashion-MNIST on both
# backends with the same accuracy (the 5-epoch run and its figures are in
# docs/MODELS.md).
expect_status 0 "$TPUSIM" model bert_base
expect_out_contains "Total params: 109,483,778"
expect_status 0 "$TPUSIM" model vit_b16
expect_out_contains "Total params: 86,567,656"
expect_status 0 "$TPUSIM" model bert_base@256 --batch 16 --chip tpu-v2-8
expect_out_contains "  scores "
expect_out_contains "  weighted sum "
echo "$OUT" | grep -Eq '^  softmax +[0-9.]+ +[0-9.]+ +VPU' || die "attention's softmax row: $OUT"
EX="$TPU_ROOT/docs/examples/small-vit.json"
expect_status 0 "$TPUSIM" model "$EX"
expect_out_contains "Total params: 71,946"
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model "$EX" --data fashion-mnist --epochs 1 --steps-per-epoch 25 --batch 128 \
    --backend $be --json
  echo "$OUT" > vit_$be.json
done
/usr/bin/python3 -c 'import json; a=json.load(open("vit_reference.json"))["test_accuracy"]; b=json.load(open("vit_sim.json"))["test_accuracy"]; assert a > 0.3 and abs(a-b) <= 0.02, (a, b)' || die "small-vit accuracies"
