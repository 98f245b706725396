# tpusim matmul --cores: a GEMM split along M over cores with operands in HBM.
# Runs once cmd_matmul.c passes --cores to fe_matmul_cores (its --help then
# lists --cores); until then there is nothing to test here.
"$TPUSIM" matmul --help | grep -q -- '--cores' || exit 0
check() {  # check FILE PYTHON-EXPR
  /usr/bin/python3 - "$1" "$2" <<'PY' || die "$2 in $(cat "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["mxu_busy", "vpu_busy", "infeed_wait", "memory_wait", "collective_wait", "idle"]
assert sum(d["stall"][k] for k in keys) == d["cycles"] * d["cores"]
assert len(d["per_core"]) == d["cores"]
assert eval(sys.argv[2]), sys.argv[2]
PY
}
# small M: memory-bound on the roofline and in the simulation
expect_status 0 "$TPUSIM" matmul --chip teach --cores 4 --m 16 --n 64 --k 64 --json
echo "$OUT" > a.json
check a.json 'd["roofline_bound"] == "memory" and d["bound"] == "memory" and d["stall"]["memory_wait"] > d["stall"]["mxu_busy"]'
check a.json 'd["arithmetic_intensity"] < d["ridge_flops_per_byte"] and d["max_rel_err"] < 1e-2'
# large M: compute-bound
expect_status 0 "$TPUSIM" matmul --cores 8 --m 65536 --n 1024 --k 1024 --level timing --json
echo "$OUT" > b.json
check b.json 'd["roofline_bound"] == "compute" and d["bound"] == "compute" and d["max_abs_err"] is None'
# f32 through six bf16 passes is close to sgemm
expect_status 0 "$TPUSIM" matmul --chip teach --cores 2 --m 40 --n 24 --k 50 --precision bf16x6 --json
echo "$OUT" > c.json
check c.json 'd["max_rel_err"] < 1e-5'
expect_status 0 "$TPUSIM" matmul --chip teach --cores 4 --m 64 --n 32 --k 32
expect_out_contains "roofline"
expect_status 2 "$TPUSIM" matmul --chip teach --cores 9 --m 64 --n 32 --k 32
expect_err_contains "--cores: expected 1..4"
