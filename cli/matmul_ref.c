/*
** matmul_ref.c -- the inputs and the reference of `tpusim matmul`, one core
** (cmd_matmul.c) and several (matmul_cores.c) alike: the seeded operands
** (cli_matmul_seeded) and the error of C against the product in double
** precision (cli_matmul_error). Both commands' files call these; neither
** calls the other back (cmd_matmul.c -> matmul_cores.c -> matmul_ref.c).
*/
#include <math.h>
#include <stdint.h>

#include "cli/cli_int.h"

bool cli_matmul_seeded(long seed, long m, long n, long k, float **a, float **b) {
  const size_t mk = (size_t)m * (size_t)k, kn = (size_t)k * (size_t)n;
  *a = tpu_malloc(mk * sizeof **a);
  *b = tpu_malloc(kn * sizeof **b);
  if (!*a || !*b) {
    tpu_free(*a); tpu_free(*b);
    *a = *b = NULL;
    return false;
  }
  uint64_t r = (uint64_t)seed;
  tpu_normal_fill(&r, *a, mk);
  tpu_normal_fill(&r, *b, kn);
  return true;
}

/* The reference is A.B in double precision, each entry summed in k order:
** a product of two f32 values is exact in double, and the k-order sum is a
** fixed sequence of IEEE double additions (the build has -ffp-contract=off,
** so nothing is fused), so the reference and the errors measured against it
** are the same bits on every x86-64 host. An sgemm would not be: OpenBLAS
** picks its kernel, and with it the order of the sums, by CPU
** (docs/TESTING.md, "What a record may hold"). The rows are taken RB_I at a
** time and the columns RB_J at a time, so one row of B serves RB_I rows of A
** from the cache and the accumulators stay in L1; the errors are gathered as
** the blocks finish, and no M x N reference is ever held. */
enum { RB_I = 4, RB_J = 512 };

__attribute__((target_clones("avx2", "default")))
static void ref_block(long n, long k, const float *a, const float *b, long i0, long ni, long j0, long nj,
                      double acc[RB_I][RB_J]) {
  for (long r = 0; r < ni; r++)
    for (long j = 0; j < nj; j++) acc[r][j] = 0.0;
  for (long kk = 0; kk < k; kk++) {
    const float *brow = b + (size_t)kk * (size_t)n + (size_t)j0;
    for (long r = 0; r < ni; r++) {
      const double av = (double)a[(size_t)(i0 + r) * (size_t)k + (size_t)kk];
      double *ar = acc[r];
      for (long j = 0; j < nj; j++) ar[j] += av * (double)brow[j];
    }
  }
}

void cli_matmul_error(long m, long n, long k, const float *a, const float *b, const float *c, double *max_abs,
                      double *max_rel) {
  double acc[RB_I][RB_J];          /* 16 KiB: sweeps run points on several threads */
  double mx = 0, max_ref = 0;
  for (long i0 = 0; i0 < m; i0 += RB_I) {
    const long ni = m - i0 < RB_I ? m - i0 : RB_I;
    for (long j0 = 0; j0 < n; j0 += RB_J) {
      const long nj = n - j0 < RB_J ? n - j0 : RB_J;
      ref_block(n, k, a, b, i0, ni, j0, nj, acc);
      for (long r = 0; r < ni; r++)
        for (long j = 0; j < nj; j++) {
          const double ref = acc[r][j], got = (double)c[(size_t)(i0 + r) * (size_t)n + (size_t)(j0 + j)];
          const double d = fabs(got - ref);
          if (!(d <= mx)) mx = d;                    /* NaN propagates */
          if (fabs(ref) > max_ref) max_ref = fabs(ref);
        }
    }
  }
  *max_abs = mx;
  *max_rel = max_ref > 0 ? mx / max_ref : mx;
}
