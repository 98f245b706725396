/*
** bench_mxu_fast.c -- tile-level GEMM numerics vs OpenBLAS sgemm, one
** thread, side by side in one run.
**
** For each shape (M x N x K) it times tpu_mxu_gemm at the tile level in bf16
** (operand rounding, tiling, the fast kernel: everything a `tpusim matmul
** --level tile` run computes) on every SIMD path this host supports, and
** cblas_sgemm on the same f32 operands, and prints GFLOP/s (2*M*N*K over
** the best of several runs) and the ratio tile/sgemm against the goal of
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

#include "mxu/mxu.h"
#include "mxu/mxu_fast_int.h"
#include "tests/test_util.h"

#define GOAL 0.6

/* Best wall time of fn over at least 'min_reps' runs and ~'budget_s'. */
typedef void (*run_fn)(void *ctx);
static double best_time(run_fn fn, void *ctx, int min_reps, double budget_s) {
  double best = 1e30, start = tu_now();
  for (int i = 0; ; i++) {
    double t0 = tu_now();
    fn(ctx);
    double dt = tu_now() - t0;
    if (dt < best) best = dt;
    if (i + 1 >= min_reps && tu_now() - start > budget_s) break;
  }
  return best;
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

int main(void) {
  static const struct { int M, N, K; bool goal; } shapes[] = {
    { 1024, 1024, 1024, true }, { 256, 256, 784, true }, { 256, 784, 256, false } };
  openblas_set_num_threads(1);
  const mxu_simd best = mxu_simd_active();
  int fail = 0;

  printf("\n## Tile-level numerics (tpu_mxu_gemm, level tile, bf16) vs OpenBLAS sgemm, 1 thread\n\n");
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
    const double t_blas = best_time(run_sgemm, &j, 3, 0.5);
    bool have_ref = false;
    for (int p = MXU_SIMD_COUNT - 1; p >= 0; p--) {
      if (!mxu_simd_set((mxu_simd)p)) continue;
      /* the scalar path is slow: one run is enough to show it */
      const double t = best_time(run_tile, &j, p == MXU_SIMD_GENERIC ? 1 : 3,
                                 p == MXU_SIMD_GENERIC ? 0.0 : 0.5);
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
    free(A); free(B); free(C); free(C0);
  }
  printf("\nbits: every path's C compared bit for bit with the widest path's.\n");
  return fail;
}
