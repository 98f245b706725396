# make test passes on every x86-64 host (docs/TESTING.md, "What a record may
# hold"): the golden set, and the tests that reach OpenBLAS (the reference
# backend), replayed under every sgemm kernel this host's OpenBLAS can be
# forced to (OPENBLAS_CORETYPE), and the golden set under every SIMD path of
# tpusim's own kernels (TPU_SIMD: the tile kernel and the PE model's). A
# kernel the host cannot run, or that this OpenBLAS lacks, is skipped with a
# message; so is one that is the host's own choice (t_golden.sh ran it).
# The release build only: the sanitizer run checks memory, not kernels, and
# would spend its time on the same records.
if [ "${MODE:-release}" != release ]; then echo "t_portable: SKIP: MODE=$MODE (kernels are checked in the release run)"; exit 0; fi
GOLDEN="/usr/bin/python3 $TPU_ROOT/tests/golden/golden.py $TPUSIM check -j 2"
CHECKS=$TPU_ROOT/build/release/tests
# the e2e tests that train on the reference backend
BLAS_E2E="t_train t_keras t_batchnorm t_sepconv t_train_models"
e2e() {  # e2e NAME: one end-to-end test in a directory of its own
  local d; d=$(mktemp -d "$T/e2e.XXXX")
  (cd "$d" && T=$d bash "$TPU_ROOT/tests/e2e/lib.sh" "$TPU_ROOT/tests/e2e/$1.sh") > "$d.log" 2>&1 \
    || { tail -20 "$d.log"; return 1; }
}

# The kernel OpenBLAS picks here, as OPENBLAS_VERBOSE=2 names it.
probe() {  # probe [CORETYPE]: runs an sgemm, prints the kernel's name, or fails with tpusim's status
  local rc=0
  env ${1:+OPENBLAS_CORETYPE=$1} OPENBLAS_VERBOSE=2 OPENBLAS_NUM_THREADS=1 "$TPUSIM" train --model mlp \
    --data synthetic --synthetic-n 64 --batch 64 --epochs 1 --backend reference --json > probe.out 2> probe.err \
    || rc=$?
  [ "$rc" = 0 ] || return "$rc"
  grep -q "Core not found" probe.err && return 1
  sed -n 's/^Core: //p' probe.err | head -1
}
own=$(probe) || die "OpenBLAS does not run here: $(tail -3 probe.err)"
ran=0
# SSE3, AVX, AVX2 (Intel's and AMD's), AVX-512 (two generations and AMX)
for c in Prescott Sandybridge Haswell Zen SkylakeX Cooperlake SapphireRapids; do
  set +e; got=$(probe "$c"); rc=$?; set -e
  if [ "$rc" != 0 ]; then
    if grep -q "Core not found" probe.err; then
      echo "t_portable: SKIP: OPENBLAS_CORETYPE=$c: this OpenBLAS has no such kernel"
    else
      echo "t_portable: SKIP: OPENBLAS_CORETYPE=$c: this host cannot run it (an sgemm ended with status $rc$([ "$rc" = 132 ] && echo ', SIGILL'))"
    fi
    continue
  fi
  [ "$got" = "$c" ] || die "OPENBLAS_CORETYPE=$c ran kernel '$got'"
  if [ "$c" = "$own" ]; then echo "t_portable: SKIP: OPENBLAS_CORETYPE=$c: the host's own kernel (t_golden.sh)"; continue; fi
  export OPENBLAS_CORETYPE=$c
  $GOLDEN > "golden-$c.txt" 2>&1 || { cat "golden-$c.txt"; die "golden set under OPENBLAS_CORETYPE=$c"; }
  (cd "$TPU_ROOT" && OPENBLAS_NUM_THREADS=1 CK_DEFAULT_TIMEOUT=600 "$CHECKS/check_train") > "check-$c.txt" 2>&1 \
    || { tail -20 "check-$c.txt"; die "check_train under OPENBLAS_CORETYPE=$c"; }
  for t in $BLAS_E2E; do e2e "$t" || die "$t under OPENBLAS_CORETYPE=$c"; done
  unset OPENBLAS_CORETYPE
  ran=$((ran + 1))
done
[ "$ran" -ge 1 ] || die "no OpenBLAS kernel but the host's own could be forced"

# tpusim's own kernels: the tile kernel's and the PE model's SIMD paths.
# The generic path computes each fmaf in C, about 40 times slower than AVX2:
# the two CNN training records (about 15 s each on AVX2) are left to the
# vector paths, and tr-smallcnn keeps convolutions on the generic one.
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
for s in generic avx2 avx512; do
  case "$s" in
    avx2) case "$flags" in *" avx2 "*" fma "*|*" fma "*" avx2 "*) ;; *) echo "t_portable: SKIP: TPU_SIMD=avx2: the host lacks AVX2 or FMA"; continue ;; esac ;;
    avx512) case "$flags" in *" avx512f "*) ;; *) echo "t_portable: SKIP: TPU_SIMD=avx512: the host lacks AVX-512F"; continue ;; esac ;;
  esac
  # without TPU_SIMD both kernels take AVX2 on a host whose best is AVX2
  if [ "$s" = avx2 ] && case "$flags" in *" avx512f "*) false ;; *) true ;; esac; then
    echo "t_portable: SKIP: TPU_SIMD=avx2: the host's own choice (t_golden.sh)"; continue
  fi
  skip=; [ "$s" = generic ] && skip="--except tr-cnn-tile,tr-cnn-tile-2t"
  TPU_SIMD=$s $GOLDEN $skip > "golden-$s.txt" 2>&1 || { cat "golden-$s.txt"; die "golden set under TPU_SIMD=$s"; }
  ! grep -q "not supported here" "golden-$s.txt" || die "TPU_SIMD=$s fell back"
done
