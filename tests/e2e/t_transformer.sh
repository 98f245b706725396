# Transformers (#29): the zoo's bert_base and vit_b16 at their reference
# parameter counts, attention's parts in the step table, and a small ViT
# (docs/examples/small-vit.json) trained a few steps on Fashion-MNIST on both
# backends with the same accuracy (the 5-epoch run and its figures are in
# docs/MODELS.md).
expect_status 0 "$TPUSIM" model bert_base
expect_out_contains "Total params: 109,483,778"
# gpt2 is GPT2LMHeadModel: its lm_head is the token table, tied (no
# parameters of its own), one GEMM of SEQ x 768 x 50257 a sample; with
# classes GPT2ForSequenceClassification's score
expect_status 0 "$TPUSIM" model gpt2
expect_out_contains "Total params: 124,439,808"
echo "$OUT" | grep -Eq '^lm_head \(dense\) +\(None, 1024, 50257\) +0 +1024 x 768 x 50257 ' || die "gpt2's lm_head row: $OUT"
expect_status 0 "$TPUSIM" model gpt2@128:3
expect_out_contains "Total params: 124,442,112"
expect_status 0 "$TPUSIM" model gpt2 --chip tpu-v3-8 --batch 64
echo "$OUT" | grep -Eq '^lm_head +- +[0-9.]+ +[0-9.]+ +MXU' || die "gpt2's lm_head in the step table: $OUT"
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
# Synthetic data for a model whose input feeds an embedding is token ids in
# [0, the vocabulary) (docs/DATAFEED.md): docs/examples/small-bert.json learns
# its classes in 3 epochs, on both backends (before, the ids were pixels
# scaled to [0, 1], fractions the embedding read as zero rows: chance).
BERT="$TPU_ROOT/docs/examples/small-bert.json"
for be in reference sim; do
  expect_status 0 "$TPUSIM" train --model "$BERT" --data synthetic --synthetic-n 512 --batch 32 --epochs 3 \
    --backend $be --json
  echo "$OUT" > bert_$be.json
  /usr/bin/python3 -c 'import json,math,sys; d=json.load(open(sys.argv[1])); h=d["history"]
assert all(math.isfinite(e["loss"]) for e in h) and h[-1]["loss"] < h[0]["loss"], h
assert d["test_accuracy"] >= 0.95, d["test_accuracy"]' bert_$be.json || die "small-bert on synthetic tokens ($be)"
done
