# docs/TEACHING.md's six exercises: each command runs (the pictures' exactly as quoted) and
# shows what its exercise teaches.
j() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# pic NAME: runs the exercise's picture command exactly as docs/TEACHING.md
# quotes it (the line writing docs/teaching/NAME.png), into $T, with --json
# kept in NAME.json: what the picture shows, for its "look for" sentence.
pic() {
  local line
  line=$(grep -m1 -- "--png docs/teaching/$1.png" "$TPU_ROOT/docs/TEACHING.md") || die "TEACHING.md has no picture $1"
  line=${line#*./tpusim }
  # shellcheck disable=SC2086
  (cd "$TPU_ROOT" && SDL_VIDEODRIVER=dummy "$TPUSIM" ${line/--png docs\/teaching\/$1.png/--png $T/$1.png} --json) > "$1.json" \
    || die "exercise picture $1: '$line' failed"
}
# look NAME 'ASSERTION' 'WHAT': the assertion (python, d = the picture's
# --json, m = its moment, s = its stall_spans, share(k) = stall kind k's
# share of the run's core-cycles) holds, or the sentence WHAT is false.
look() {
  /usr/bin/python3 - "$1.json" "$2" <<'PY' || die "$1: the picture does not show what TEACHING.md says: $3"
import json, sys
d = json.load(open(sys.argv[1])); m = d["moment"]; s = d["stall_spans"]
share = lambda k: d["stall"][k] / (d["total_cycles"] * d["cores"])
assert eval(sys.argv[2]), (m, {k: round(share(k), 3) for k in d["stall"]}, s)
PY
}
# 1. batch size: utilization grows with M
expect_status 0 "$TPUSIM" matmul --m 8 --n 256 --k 256 --json;   u8=$(echo "$OUT" | j 'd["mxu_utilization"]')
expect_status 0 "$TPUSIM" matmul --m 512 --n 256 --k 256 --json; u512=$(echo "$OUT" | j 'd["mxu_utilization"]')
/usr/bin/python3 -c "import sys; assert float(sys.argv[1]) < 0.1 < 0.8 < float(sys.argv[2])" "$u8" "$u512" || die "batch 8 vs 512: $u8 $u512"
pic ex1-batch8; pic ex1-batch512
look ex1-batch8 'm["cells_computing"] == 996 and m["cells"] == 16384 and m["cells_loading"] > 0' \
  "batch 8: a thin diagonal band, 996 of 16384 cells, the next tile loading behind it"
look ex1-batch8 'round(share("weight_load"), 2) == 0.24 and round(share("mxu_busy"), 2) == 0.14' \
  "batch 8: weight_load 24% of the run against mxu_busy's 14%"
look ex1-batch512 'm["computing_fraction"] == 1' "batch 512: the whole array is lit"
# 2. N = 130: two more tiles than N = 128, lower utilization
expect_status 0 "$TPUSIM" matmul --chip teach --m 64 --n 128 --k 16 --json; a=$(echo "$OUT" | j 'd["tiles"], d["mxu_utilization"]')
expect_status 0 "$TPUSIM" matmul --chip teach --m 64 --n 130 --k 16 --json; b=$(echo "$OUT" | j 'd["tiles"], d["mxu_utilization"]')
/usr/bin/python3 -c "import sys; a=eval(sys.argv[1]); b=eval(sys.argv[2]); assert b[0] == a[0] + 2 and b[1] < a[1]" "$a" "$b" || die "N=130: $a $b"
pic ex2-n130
look ex2-n130 'm["cols_computing"] == 2 and m["rows_computing"] == 8 and m["cells_computing"] == 16' \
  "only columns 0 and 1 compute"
look ex2-n130 '{b["stream_start"] - a["stream_start"] for a, b in zip(d["tiles"], d["tiles"][1:]) if a.get("op") == b.get("op")} == {32}' \
  "the 2-column tile takes as long as a full one (the next streams 32 cycles after it, as after a full one)"
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
pic ex3-bf16x3
look ex3-bf16x3 'm["cells_computing"] > 0 and len(d["tiles"]) == 384' "a pass visible; 384 tiles"
expect_status 0 "$TPUSIM" viz --chip teach --cores 1 --m 64 --n 64 --k 64 --headless --png ex3-bf16.png --json
[ "$(echo "$OUT" | j 'len(d["tiles"])')" = 128 ] || die "exercise 3: bf16 is not 128 tiles"
# 4. the naive pipeline waits more for input than the prefetching one
expect_status 0 "$TPUSIM" train --model mlp --level timing --steps-per-epoch 60 --pipeline "$TPU_ROOT/docs/examples/train-naive.json" --json
n=$(echo "$OUT" | j 'd["input_wait_fraction"]')
expect_status 0 "$TPUSIM" train --model mlp --level timing --steps-per-epoch 60 --pipeline "$TPU_ROOT/docs/examples/train-prefetch.json" --json
f=$(echo "$OUT" | j 'd["input_wait_fraction"]')
/usr/bin/python3 -c "import sys; assert float(sys.argv[2]) < float(sys.argv[1]) * 0.8" "$n" "$f" || die "prefetch did not cut the wait: $n -> $f"
pic ex4-infeed
look ex4-infeed 'm["core_stall"] == "infeed_wait" and s["infeed_wait"] == {"first": 0, "end": 2000000} and d["total_cycles"] == 8250133' \
  "the red infeed_wait band opens the step: 2,000,000 of its 8,250,133 cycles"
look ex4-infeed 'round(share("infeed_wait"), 3) == 0.242 and all(t["load_start"] >= 2000000 for t in d["tiles"])' \
  "24.2% of the step, before any of its work"
pic ex4-pipeline-naive; pic ex4-pipeline-prefetch     # the naive one waits at every step, prefetch only at the first
look ex4-pipeline-naive 'd["pipeline"]["infeed_wait_cycles"] == [1440230] + [40230] * 23 and round(share("infeed_wait"), 3) == 0.663' \
  "naive: 40230 cycles before every step after the first; 66.3% over the 24 steps"
look ex4-pipeline-prefetch 'd["pipeline"]["infeed_wait_cycles"] == [1440230] + [0] * 23 and round(share("infeed_wait"), 3) == 0.545' \
  "prefetch: no wait after the first step; 54.5% over the 24 steps"
# 5. all-reduce: fixed batch gets no faster with cores, a growing batch scales
ips() { expect_status 0 "$TPUSIM" train --model mlp --data synthetic --synthetic-n 512 --level timing --steps-per-epoch 2 --cores $1 --batch $2 --json; echo "$OUT" | j 'd["images_per_s"], d["stall"]["collective_wait"]'; }
f1=$(ips 1 128); f8=$(ips 8 128); g8=$(ips 8 256)
/usr/bin/python3 -c "import sys; f1, f8, g8 = (eval(a) for a in sys.argv[1:]); assert f8[0] < f1[0] < g8[0] and f1[1] == 0 < f8[1]" "$f1" "$f8" "$g8" \
  || die "all-reduce scaling: 1 core $f1, 8 cores $f8, 8 cores growing batch $g8"
pic ex5-allreduce
look ex5-allreduce 'm["core_stall"] == "collective_wait" and s["collective_wait"] == {"first": 1424129, "end": 2835605} and d["total_cycles"] == 6250133' \
  "the band runs from cycle 1,424,129 to 2,835,605 of 6,250,133"
look ex5-allreduce 'round(s["collective_wait"]["first"] / d["total_cycles"], 2) == 0.23 and round(s["collective_wait"]["end"] / d["total_cycles"], 2) == 0.45' \
  "the band runs from 23% to 45% of the step"
look ex5-allreduce 's["mxu_busy"]["end"] <= s["collective_wait"]["first"] and s["vpu_busy"]["end"] > s["collective_wait"]["end"] + 0.5 * d["total_cycles"]' \
  "after the backward pass (the last matmul ends before it), before the update that runs for the rest of the step"
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
