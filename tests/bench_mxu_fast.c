/*
** bench_mxu_fast.c -- tile-level GEMM numerics vs OpenBLAS sgemm, one
** thread, side by side in one run.
**
** For each shape (M x N x K) it times tpu_mxu_gemm at the tile level in bf16
** (operand rounding, tiling, the fast kernel: everything a `tpusim matmul
** --level tile` run computes) on every SIMD path this host supports, and
** cblas_sgemm on the same f32 operands, run alternately with it, and prints
** GFLOP/s (2*M*N*K over the best of at least 5 runs, in CPU seconds of the
** one thread both use) and the ratio tile/sgemm against the goal of
** issue 3 (0.6x on 1024^3 and 256x256x784). It also checks that every path
** gave the same bits, and fails (exit 1) if not or if the auto-selected path
** misses the goal on a goal shape.
**
**   make bench      or   OPENBLAS_NUM_THREADS=1 build/release/tests/bench_mxu_fast
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mxu/mxu.h"
#include "mxu/mxu_fast_int.h"
#include "tests/test_util.h"

#define GOAL 0.6

typedef void (*run_fn)(void *ctx);
/* Times are CPU seconds of the calling thread (tu_cpu_now): both contenders
** run on this one thread, so time the host's other processes take from it
** doesn't count against either (the machine this runs on is often shared).
** Runs a and b alternately (so both see the same conditions) at least
** min_reps times and for about budget_s; the best time of each. */
static void best_pair(run_fn a, run_fn b, void *ctx, int min_reps, double budget_s,
                      double *best_a, double *best_b) {
  const double start = tu_now();
  for (int i = 0; ; i++) {
    double t0 = tu_cpu_now();
    a(ctx);
    double t1 = tu_cpu_now();
    b(ctx);
    double t2 = tu_cpu_now();
    if (t1 - t0 < *best_a) *best_a = t1 - t0;
    if (t2 - t1 < *best_b) *best_b = t2 - t1;
    if (i + 1 >= min_reps && tu_now() - start > budget_s) break;
  }
}

typedef struct job {
  int M, N, K;
  const float *A, *B;
  float *C;
  tpu_status st;
} job;

static void run_sgemm(void *p) {
  job *j = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->M, j->N, j->K, 1.0f,
              j->A, j->K, j->B, j->N, 0.0f, j->C, j->N);
}
static void run_tile(void *p) {
  job *j = p;
  tpu_mxu_config cfg = tpu_mxu_config_default();
  j->st = tpu_mxu_gemm(&cfg, 1, TPU_FIDELITY_TILE, TPU_PREC_BF16, j->M, j->N, j->K,
                       j->A, j->B, j->C, NULL);
}

/* OpenBLAS picks its kernels by CPU model, and on models it doesn't know
** (AMD Zen 4/5 in the Debian 12 build) it takes the Haswell AVX2 kernel even
** where AVX-512 runs: the tile kernel would then be compared with half of
** what sgemm can do. So when the host has AVX-512, OpenBLAS chose an AVX2
** core and nobody set OPENBLAS_CORETYPE, run again with its AVX-512 kernel
** (SkylakeX); the header line names the core measured. */
static void prefer_avx512_blas(char **argv) {
#if defined(__GNUC__) && defined(__x86_64__)
  const char *core = openblas_get_corename();
  if (getenv("OPENBLAS_CORETYPE") || !__builtin_cpu_supports("avx512f") || !core) return;
  if (strcasecmp(core, "haswell") != 0 && strcasecmp(core, "zen") != 0) return;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");         /* exec failed: measure what we have */
#else
  (void)argv;
#endif
}

typedef struct pair_ctx { job *tile, *blas; } pair_ctx;
static void pair_tile(void *p) { run_tile(((pair_ctx *)p)->tile); }
static void pair_blas(void *p) { run_sgemm(((pair_ctx *)p)->blas); }

int main(int argc, char **argv) {
  (void)argc;
  prefer_avx512_blas(argv);
  static const struct { int M, N, K; bool goal; } shapes[] = {
    { 1024, 1024, 1024, true }, { 256, 256, 784, true }, { 256, 784, 256, false } };
  openblas_set_num_threads(1);
  const mxu_simd best = mxu_simd_active();
  int fail = 0;

  printf("\n## Tile-level numerics (tpu_mxu_gemm, level tile, bf16) vs OpenBLAS sgemm, 1 thread\n\n");
  printf("OpenBLAS core: %s%s; tile kernel paths on this host:", openblas_get_corename(),
         getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE)" : " (detected)");
  for (int p = MXU_SIMD_COUNT - 1; p >= 0; p--)
    if (mxu_simd_supported((mxu_simd)p)) printf(" %s", mxu_simd_name((mxu_simd)p));
  printf("\n");
  const char *core = openblas_get_corename();
  if (core && mxu_simd_supported(MXU_SIMD_AVX512) &&
      (strcasecmp(core, "haswell") == 0 || strcasecmp(core, "zen") == 0))
    printf("note: OpenBLAS runs its AVX2 kernel (%s) on this AVX-512 host; "
           "OPENBLAS_CORETYPE=SkylakeX measures its AVX-512 one\n", core);
  printf("\n");
  printf("| M x N x K | path | tile GFLOP/s | sgemm GFLOP/s | ratio | goal | bits |\n");
  printf("| --- | --- | ---: | ---: | ---: | ---: | --- |\n");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
    const double flop = 2.0 * M * N * K;
    float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
    float *C = malloc((size_t)M * N * sizeof *C), *C0 = malloc((size_t)M * N * sizeof *C0);
    if (!A || !B || !C || !C0) { fprintf(stderr, "bench_mxu_fast: out of memory\n"); return 1; }
    tu_rng r = { 42 + s };
    tu_fill(&r, A, (size_t)M * K, 0);
    tu_fill(&r, B, (size_t)K * N, 0);
    job j = { M, N, K, A, B, C, TPU_OK };
    float *Cb = malloc((size_t)M * N * sizeof *Cb);
    if (!Cb) { fprintf(stderr, "bench_mxu_fast: out of memory\n"); return 1; }
    job jb = j;
    jb.C = Cb;
    double t_blas = 1e30;
    bool have_ref = false;
    for (int p = MXU_SIMD_COUNT - 1; p >= 0; p--) {
      if (!mxu_simd_set((mxu_simd)p)) continue;
      /* the scalar path is slow: one run is enough to show it */
      double t = 1e30;
      if (p == MXU_SIMD_GENERIC) {
        double t0 = tu_cpu_now();
        run_tile(&j);
        t = tu_cpu_now() - t0;
      } else {
        pair_ctx pc = { &j, &jb };
        t_blas = 1e30;                    /* sgemm's best from this path's pairs */
        best_pair(pair_tile, pair_blas, &pc, 5, 1.0, &t, &t_blas);
      }
      if (j.st != TPU_OK) { fprintf(stderr, "bench_mxu_fast: gemm failed\n"); return 1; }
      bool same = true;
      if (!have_ref) { memcpy(C0, C, (size_t)M * N * sizeof *C); have_ref = true; }
      else same = memcmp(C0, C, (size_t)M * N * sizeof *C) == 0;
      const double ratio = t_blas / t;
      const bool goal = shapes[s].goal && (mxu_simd)p == best;
      if (!same || (goal && ratio < GOAL)) fail = 1;
      printf("| %d x %d x %d | %s%s | %.1f | %.1f | %.2fx | %s | %s |\n", M, N, K,
             mxu_simd_name((mxu_simd)p), (mxu_simd)p == best ? " (auto)" : "",
             flop / t * 1e-9, flop / t_blas * 1e-9, ratio,
             goal ? (ratio >= GOAL ? ">= 0.6x: met" : ">= 0.6x: MISSED") : "-",
             same ? "same" : "DIFFER");
      fflush(stdout);
    }
    mxu_simd_set(best);
    free(A); free(B); free(C); free(C0); free(Cb);
  }
  printf("\nbits: every path's C compared bit for bit with the widest path's.\n");
  return fail;
}
