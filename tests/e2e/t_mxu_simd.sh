# The fast kernel's SIMD paths give the same bits through `tpusim matmul`
# (TPU_SIMD picks the path; one the host lacks falls back with a note), and
# a bad TPU_SIMD value is reported, not silently taken.
PY=/usr/bin/python3
for shape in "--m 300 --n 200 --k 333" "--m 1 --n 1 --k 1" "--m 13 --n 129 --k 257 --chip teach"; do
  for prec in bf16 bf16x3; do
    for s in generic avx2 avx512; do
      expect_status 0 env TPU_SIMD=$s "$TPUSIM" matmul $shape --precision $prec --level tile \
        --seed 5 --out "c_$s.npy" --json
    done
    $PY - <<'PY' || die "$shape $prec: SIMD paths differ"
import numpy as np
g=np.load("c_generic.npy")
for s in ("avx2", "avx512"):
    c=np.load("c_%s.npy" % s)
    assert c.dtype==np.float32 and c.shape==g.shape
    assert np.array_equal(c.view(np.uint32), g.view(np.uint32)), s
PY
  done
done
expect_status 0 env TPU_SIMD=sse9 "$TPUSIM" matmul --m 4 --n 4 --k 4 --level tile --out c_bad.npy
expect_err_contains "TPU_SIMD=sse9 is not one of generic, avx2, avx512, auto"
