# tpusim matmul: levels agree on cycles, pe and tile agree on bits, .npy in
# and out, closed-form cycles, JSON keys, and bad input.
PY=/usr/bin/python3
cyc() { echo "$OUT" | $PY -c 'import json,sys; print(json.load(sys.stdin)["cycles"])'; }

# One full tile on a 128x128 array: load 128 + stream 128 + fill 127 + drain 127.
expect_status 0 "$TPUSIM" matmul --m 128 --n 128 --k 128 --json --level timing
[ "$(cyc)" = 510 ] || die "128^3 cycles $(cyc), expected 510"

for shape in "--m 37 --n 19 --k 23" "--m 1 --n 9 --k 17" "--m 20 --n 16 --k 8"; do
  for lvl in pe tile timing; do
    expect_status 0 "$TPUSIM" matmul --chip teach $shape --level $lvl --json --seed 7 \
      $( [ $lvl = timing ] || echo --out c_$lvl.npy )
    eval "c_$lvl=$(cyc)"
  done
  [ "$c_pe" = "$c_tile" ] && [ "$c_tile" = "$c_timing" ] || die "$shape: cycles pe $c_pe tile $c_tile timing $c_timing"
  $PY - <<'PY' || die "$shape: pe and tile bits differ"
import numpy as np
a=np.load("c_pe.npy"); b=np.load("c_tile.npy")
assert a.dtype==np.float32 and a.shape==b.shape
assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
PY
done

# .npy inputs: integer values are exact in bf16 and in f32 sums, so C == A.B.
$PY - <<'PY'
import numpy as np
rng=np.random.default_rng(3)
np.save("a.npy", rng.integers(-8,9,(70,150)).astype(np.float32))
np.save("b.npy", rng.integers(-8,9,(150,130)).astype(np.float32))
np.save("a64.npy", np.zeros((3,3)))
np.save("af.npy", np.asfortranarray(np.zeros((3,4),dtype=np.float32)))
np.save("a3d.npy", np.zeros((2,3,4),dtype=np.float32))
PY
for lvl in pe tile; do
  for p in bf16 bf16x3 bf16x6; do
    expect_status 0 "$TPUSIM" matmul --a a.npy --b b.npy --out c.npy --level $lvl --precision $p --json
    $PY -c '
import numpy as np
a=np.load("a.npy"); b=np.load("b.npy"); c=np.load("c.npy")
assert c.shape==(70,130), c.shape
assert np.array_equal(c, a@b)' || die "npy result $lvl $p"
  done
done
echo "$OUT" > m.json
for key in cycles mxu_utilization flops_per_s max_abs_err max_rel_err tiles; do
  json_get $key m.json >/dev/null || die "json key $key"
done
[ "$(json_get max_abs_err m.json)" = 0.0 ] || die "integer inputs not exact"

# more passes, smaller error; more passes, more cycles
for p in bf16 bf16x3 bf16x6; do
  expect_status 0 "$TPUSIM" matmul --m 64 --n 64 --k 256 --precision $p --json
  echo "$OUT" > $p.json
done
$PY - <<'PY' || die "precision ordering"
import json
e=[json.load(open(p+".json")) for p in ("bf16","bf16x3","bf16x6")]
assert e[0]["max_rel_err"] > e[1]["max_rel_err"] > e[2]["max_rel_err"], [x["max_rel_err"] for x in e]
assert e[2]["max_rel_err"] < 1e-5
assert e[0]["cycles"] < e[1]["cycles"] < e[2]["cycles"]
PY

# text report
expect_status 0 "$TPUSIM" matmul --m 256 --n 256 --k 256
expect_out_contains "mxu utilization"
expect_status 0 "$TPUSIM" matmul --help

# bad input: exit 2 with a message naming the problem
expect_status 2 "$TPUSIM" matmul --m 4 --n 4
expect_err_contains "give --m, --n and --k"
expect_status 2 "$TPUSIM" matmul --m 0 --n 4 --k 4
expect_err_contains "--m: expected an integer in 1..2147483648, got '0'"
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 99999999999999999999
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --precision fp8
expect_err_contains "--precision: expected bf16, bf16x3 or bf16x6"
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --level cycle
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k
expect_status 2 "$TPUSIM" matmul --a a.npy
expect_err_contains "--a and --b go together"
expect_status 2 "$TPUSIM" matmul --a a64.npy --b b.npy
expect_err_contains "a64.npy: header field 'descr' is '<f8'"
expect_status 2 "$TPUSIM" matmul --a af.npy --b b.npy
expect_err_contains "fortran_order"
expect_status 2 "$TPUSIM" matmul --a a3d.npy --b b.npy
expect_err_contains "expected 2-D arrays"
expect_status 2 "$TPUSIM" matmul --a b.npy --b b.npy
expect_err_contains "inner dimensions differ"
head -c 300 a.npy > trunc.npy
expect_status 2 "$TPUSIM" matmul --a trunc.npy --b b.npy
expect_err_contains "trunc.npy: truncated"
echo "not numpy" > junk.npy
expect_status 2 "$TPUSIM" matmul --a junk.npy --b b.npy
expect_err_contains "junk.npy: not a .npy file"
expect_status 2 "$TPUSIM" matmul --a missing.npy --b b.npy
expect_err_contains "missing.npy: cannot read"
expect_status 2 "$TPUSIM" matmul --a a.npy --b b.npy --m 5
expect_err_contains "--m 5 disagrees"
expect_status 1 "$TPUSIM" matmul --m 4 --n 4 --k 4 --out no/such/dir/c.npy
expect_err_contains "no/such/dir/c.npy: cannot write"
[ ! -e no/such/dir/c.npy ] || die "partial output"
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --level timing --out x.npy
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --chip teach --set mxu.rows=2000
# sizes as large as real training GEMMs: the timing level times 2^31 - 1 rows
# in closed form; the tile level computes what it would hold first and
# refuses, with the figure, beyond the limit (--mem-limit, default: the
# machine's available memory)
expect_status 0 "$TPUSIM" matmul --m 2147483647 --n 4096 --k 4096 --level timing --json
echo "$OUT" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d['cycles'] == 128 + 1024 * 2147483647 + 127 + 127, d['cycles']" \
  || die "2^31 - 1 rows: cycles not the first load, 1024 tiles of M rows, the drain: $OUT"
expect_status 2 "$TPUSIM" matmul --m 100000 --n 1000 --k 1000 --mem-limit 100
expect_err_contains "needs 0.749 GiB"
expect_err_contains "more than the limit of 0.0977 GiB (--mem-limit)"
expect_status 2 "$TPUSIM" matmul --m 2147483647 --n 65536 --k 65536
expect_err_contains "the machine's available memory; --mem-limit MIB sets another"
expect_status 2 "$TPUSIM" matmul --m 2147483649 --n 8 --k 8 --level timing
expect_err_contains "--m: expected an integer in 1..2147483648, got '2147483649'"
expect_status 2 "$TPUSIM" matmul --m 8 --n 2147483649 --k 8 --cores 2 --level timing
expect_err_contains "--n: expected an integer in 1..2147483648, got '2147483649'"
# dataflows (mxu.h, Dataflows; docs/MXU_FAST.md): the three levels agree on cycles in each, pe and tile on
# bits; is gives ws's bits, os ws's bits when K <= rows (here K = 8 on the 8x8 teach array)
for shape in "--m 40 --n 24 --k 20" "--m 13 --n 9 --k 8"; do
  for df in ws is os; do
    for lv in timing tile pe; do
      o=""; [ $lv = timing ] || o="--out c_${df}_$lv.npy"
      expect_status 0 "$TPUSIM" matmul $shape --chip teach --dataflow $df --level $lv $o --json
      echo "$OUT" > mm_${df}_$lv.json
      [ "$(json_get dataflow mm_${df}_$lv.json)" = $df ] || die "$df $lv: dataflow not in the report"
      [ "$(json_get cycles mm_${df}_$lv.json)" = "$(json_get cycles mm_${df}_timing.json)" ] || die "$df $lv: cycles"
    done
  done
  cmp -s c_ws_tile.npy c_is_tile.npy && cmp -s c_ws_tile.npy c_is_pe.npy && cmp -s c_ws_tile.npy c_ws_pe.npy ||
    die "$shape: is and ws bits differ"
  cmp -s c_os_tile.npy c_os_pe.npy || die "$shape: os pe and tile bits differ"
done
cmp -s c_ws_tile.npy c_os_tile.npy || die "os and ws bits differ at K <= rows"
expect_status 0 "$TPUSIM" matmul --m 40 --n 24 --k 20 --chip teach --dataflow os
expect_out_contains "dataflow os"
expect_out_contains "nothing loaded"
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --dataflow xs
expect_err_contains "--dataflow: expected ws, os or is, got 'xs'"
expect_status 2 "$TPUSIM" matmul --m 64 --n 64 --k 64 --cores 2 --dataflow is
expect_err_contains "the chip engine runs weight-stationary MXUs"
expect_status 2 "$TPUSIM" matmul --m 4 --n 4 --k 4 --chip teach --set mxu.double_buffer=false --dataflow os
expect_err_contains "needs the second accumulator bank"
