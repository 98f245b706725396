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
