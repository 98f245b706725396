# tpusim matmul --cores: a GEMM split along M over cores with operands in HBM.
# Runs once cmd_matmul.c passes --cores to fe_matmul_cores (its --help then
# lists --cores); until then there is nothing to test here.
"$TPUSIM" matmul --help | grep -q -- '--cores' || exit 0
check() {  # check FILE PYTHON-EXPR
  /usr/bin/python3 - "$1" "$2" <<'PY' || die "$2 in $(cat "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["mxu_busy", "vpu_busy", "weight_load", "infeed_wait", "memory_wait", "collective_wait", "idle"]
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
# flags that go with --cores, refused with a reason when misused
expect_status 2 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8
expect_err_contains "--cores needs --m, --n and --k"
expect_status 2 "$TPUSIM" matmul --chip teach --cores 0 --m 8 --n 8 --k 8
expect_err_contains "--cores: expected an integer in 1..16, got '0'"
expect_status 2 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8 --k 8 --threads 0
expect_err_contains "--threads: expected an integer in 1..1024"
expect_status 2 "$TPUSIM" matmul --chip teach --threads 2 --m 8 --n 8 --k 8
expect_err_contains "--trace and --threads go with --cores"
expect_status 2 "$TPUSIM" matmul --chip teach --trace t.json --m 8 --n 8 --k 8
expect_err_contains "--trace and --threads go with --cores"
expect_status 2 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8 --k 8 --out c.npy
expect_err_contains "--a, --b and --out are for one core"
[ ! -e c.npy ] && [ ! -e t.json ] || die "a refused run wrote a file"
# the same seed gives the same report on 1 and 2 host threads
expect_status 0 "$TPUSIM" matmul --chip teach --cores 4 --m 40 --n 24 --k 50 --threads 1 --json
echo "$OUT" | grep -v wall_s > t1.json
expect_status 0 "$TPUSIM" matmul --chip teach --cores 4 --m 40 --n 24 --k 50 --threads 2 --json
echo "$OUT" | grep -v wall_s > t2.json
cmp -s t1.json t2.json || die "matmul --cores differs between 1 and 2 threads: $(diff t1.json t2.json | head)"
expect_status 1 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8 --k 8 --trace "$T/no/such/dir/t.json"
expect_err_contains "cannot write: No such file or directory"
# --level pe steps every cell of one core's MXU; the chip engine runs the
# cores at the tile or timing level, so pe with --cores is refused (it used
# to run the tile level silently), saying why and what to use instead
expect_status 2 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8 --k 8 --level pe --trace pe.json --json
expect_err_contains "--level pe does not go with --cores"
expect_err_contains "use --level tile (the same cycles and bits as pe) with --cores"
[ -z "$OUT" ] && [ ! -e pe.json ] || die "a refused pe run printed a report or wrote its trace"
expect_status 2 "$TPUSIM" matmul --chip=teach --cores=2 --m=8 --n=8 --k=8 --level=pe
expect_err_contains "--level pe does not go with --cores"
# what the message offers runs: tile with --cores (it says so), pe on one core
expect_status 0 "$TPUSIM" matmul --chip teach --cores 2 --m 8 --n 8 --k 8 --level tile --json
echo "$OUT" > tile.json
check tile.json 'd["level"] == "tile" and d["max_rel_err"] < 1e-2'
expect_status 0 "$TPUSIM" matmul --chip teach --m 8 --n 8 --k 8 --level pe --json
# the tile level holds the values (the operands, the program's HBM blocks and
# their values in the run): refused before anything is allocated, with the figure
expect_status 2 timeout 10 "$TPUSIM" matmul --cores 8 --m 2147483647 --n 4096 --k 4096 --level tile --mem-limit 4096
expect_err_contains "2147483647 x 4096 x 4096 at --level tile needs 1.64e+05 GiB (A, B and C in f32, the program's HBM blocks"
expect_err_contains "more than the limit of 4 GiB (--mem-limit)"
expect_status 0 "$TPUSIM" matmul --chip teach --cores 2 --m 64 --n 32 --k 48 --level tile --mem-limit 1
# a trace needs the whole program: beyond the engine's op limit it is refused, saying so
expect_status 2 timeout 10 "$TPUSIM" matmul --cores 8 --m 2147483648 --n 4096 --k 4096 --level timing \
  --set hbm.capacity_gib=65536 --trace bigtrace.json
expect_err_contains "the program would hold 8.389e+08 ops (tiles of 512 x 512 x 512), more than the engine's limit of 16777216"
expect_err_contains "a trace or event log needs the whole program"
[ ! -e bigtrace.json ] || die "a refused run wrote its trace"
# a GEMM split along M has no collective: no all-reduce line (#32)
expect_status 0 "$TPUSIM" matmul --cores 4 --m 64 --n 64 --k 64 --chip teach
! grep -q "all-reduce" "$T/out.txt" || die "matmul --cores printed an all-reduce line for a run without a collective"
