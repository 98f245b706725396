# docs/TEACHING.md's five exercises at small sizes: each command runs and
# shows what its exercise teaches.
j() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# 1. batch size: utilization grows with M
expect_status 0 "$TPUSIM" matmul --m 8 --n 256 --k 256 --json;   u8=$(echo "$OUT" | j 'd["mxu_utilization"]')
expect_status 0 "$TPUSIM" matmul --m 512 --n 256 --k 256 --json; u512=$(echo "$OUT" | j 'd["mxu_utilization"]')
/usr/bin/python3 -c "import sys; assert float(sys.argv[1]) < 0.1 < 0.8 < float(sys.argv[2])" "$u8" "$u512" || die "batch 8 vs 512: $u8 $u512"
expect_status 0 "$TPUSIM" viz --cores 1 --m 8 --n 256 --k 256 --headless --cycle 1300 --png ex1.png
expect_status 0 "$TPUSIM" viz --cores 1 --m 512 --n 256 --k 256 --headless --cycle 2400 --png ex1-512.png --json
echo "$OUT" | j '[t for t in d["tiles"] if t["stream_start"] + t["k"] + t["n"] - 2 <= 2400 < t["stream_start"] + t["m"]]' | grep -q "'m': 512" \
  || die "exercise 1's batch-512 picture is not while a tile's rows fill the whole array"
# 2. N = 130: two more tiles than N = 128, lower utilization
expect_status 0 "$TPUSIM" matmul --chip teach --m 64 --n 128 --k 16 --json; a=$(echo "$OUT" | j 'd["tiles"], d["mxu_utilization"]')
expect_status 0 "$TPUSIM" matmul --chip teach --m 64 --n 130 --k 16 --json; b=$(echo "$OUT" | j 'd["tiles"], d["mxu_utilization"]')
/usr/bin/python3 -c "import sys; a=eval(sys.argv[1]); b=eval(sys.argv[2]); assert b[0] == a[0] + 2 and b[1] < a[1]" "$a" "$b" || die "N=130: $a $b"
expect_status 0 "$TPUSIM" viz --chip teach --cores 1 --m 64 --n 130 --k 16 --headless --cycle 7115 --png ex2.png --json
echo "$OUT" | j '[t for t in d["tiles"] if t["stream_start"] <= 7115 < t["last_result"]]' | grep -q "'n': 2" \
  || die "exercise 2's picture is not during a 2-column tile"
[ "$(echo "$OUT" | j 'len([t for t in d["tiles"] if t["n"] != 2 and t["load_start"] <= 7115 < t["last_result"]])')" = 0 ] \
  || die "exercise 2's picture shows a full tile beside the 2-column one"
# 3. precision passes: cycles x3 and x6, error falls
for p in bf16 bf16x3 bf16x6; do
  expect_status 0 "$TPUSIM" matmul --chip teach --m 64 --n 64 --k 64 --precision $p --json
  echo "$OUT" | j 'd["cycles"], d["max_rel_err"]' > $p.txt
done
/usr/bin/python3 - <<'PY' || die "precision passes: cycles or error not as exercise 3 says"
c = {p: eval(open(p + ".txt").read()) for p in ("bf16", "bf16x3", "bf16x6")}
assert 2.5 < c["bf16x3"][0] / c["bf16"][0] < 3.5 and 5 < c["bf16x6"][0] / c["bf16"][0] < 7, c
assert c["bf16x6"][1] < c["bf16x3"][1] < c["bf16"][1] / 100, c
PY
expect_status 0 "$TPUSIM" viz --chip teach --cores 1 --m 64 --n 64 --k 64 --precision bf16x3 --headless --cycle 2240 --png ex3.png --json
echo "$OUT" | j '[t for t in d["tiles"] if t["stream_start"] <= 2240 < t["last_result"]]' | grep -q "'m': 32" \
  || die "exercise 3's picture is not while the array computes"
# 4. the naive pipeline waits more for input than the prefetching one
expect_status 0 "$TPUSIM" train --model mlp --level timing --steps-per-epoch 60 --pipeline "$TPU_ROOT/docs/examples/train-naive.json" --json
n=$(echo "$OUT" | j 'd["input_wait_fraction"]')
expect_status 0 "$TPUSIM" train --model mlp --level timing --steps-per-epoch 60 --pipeline "$TPU_ROOT/docs/examples/train-prefetch.json" --json
f=$(echo "$OUT" | j 'd["input_wait_fraction"]')
/usr/bin/python3 -c "import sys; assert float(sys.argv[2]) < float(sys.argv[1]) * 0.8" "$n" "$f" || die "prefetch did not cut the wait: $n -> $f"
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --infeed-ready 50000 --headless --png ex4.png
for f in naive prefetch; do      # the pipeline pictures: the naive one waits at every step, prefetch only at the first
  expect_status 0 "$TPUSIM" viz --pipeline "$TPU_ROOT/docs/examples/train-$f.json" --steps 4 --headless --png ex4-$f.png --json
  echo "$OUT" | j 'd["pipeline"]["infeed_wait_cycles"]' > ex4-$f.txt
done
/usr/bin/python3 -c "import sys; n=eval(open('ex4-naive.txt').read()); p=eval(open('ex4-prefetch.txt').read()); assert min(n) > 0 and p[0] > 0 and p[1:] == [0, 0, 0], (n, p)" \
  || die "pipeline pictures: naive $(cat ex4-naive.txt), prefetch $(cat ex4-prefetch.txt)"
# 5. all-reduce: fixed batch gets no faster with cores, a growing batch scales
ips() { expect_status 0 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 512 --level timing --steps-per-epoch 2 --cores $1 --batch $2 --json; echo "$OUT" | j 'd["images_per_s"], d["stall"]["collective_wait"]'; }
f1=$(ips 1 128); f8=$(ips 8 128); g8=$(ips 8 256)
/usr/bin/python3 -c "import sys; f1, f8, g8 = (eval(a) for a in sys.argv[1:]); assert f8[0] < f1[0] < g8[0] and f1[1] == 0 < f8[1]" "$f1" "$f8" "$g8" \
  || die "all-reduce scaling: 1 core $f1, 8 cores $f8, 8 cores growing batch $g8"
expect_status 0 "$TPUSIM" viz --chip teach --model mlp --batch 64 --headless --png ex5.png
# 6. dataflows: weight-stationary wins conv1 (M large) and loses every fc layer (M = 1) to output-stationary
expect_status 0 bash "$TPU_ROOT/docs/teaching/ex6-dataflow.sh" "$TPUSIM" "$T/ex6.png"
[ -s "$T/ex6.png" ] && [ -s "$T/ex6.gp" ] || die "exercise 6's script wrote no chart"
/usr/bin/python3 - "$T/ex6.dat" <<'PY' || die "dataflows: the cycles are not as exercise 6 says: $(cat "$T/ex6.dat")"
import sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
c = {r[0]: tuple(int(x) for x in r[4:7]) for r in rows}        # ws, os, is
assert len(rows) == 8 and c["conv1"][0] < min(c["conv1"][1:]), c
assert all(c[f][0] > 2 * c[f][1] for f in ("fc6", "fc7", "fc8")), c
assert c["conv1"] == (10220, 14807, 34415) and c["fc6"] == (882431, 303039, 322415), c
PY
