/*
** mxu_fast.c -- tile numerics (scalar reference for now; a SIMD kernel with
** the same bits replaces the inner loops).
**
** For result (m,n): psum = +0.0; psum = fmaf(act[m][r], w[r][n], psum) for
** r < K (the order partial sums travel down the column); + 0.0f when K < rows
** (the pass-through rows); then out = out + psum or out = psum.
*/
#include <math.h>

#include "mxu/mxu.h"

void tpu_mxu_tile_compute(int rows, const tpu_mxu_tile *t) {
  float psum[TPU_MXU_MAX_DIM];
  const bool pass = t->k < rows;
  for (int m = 0; m < t->m; m++) {
    const float *a = t->act + (size_t)m * (size_t)t->lda;
    float *o = t->out + (size_t)m * (size_t)t->ldo;
    for (int n = 0; n < t->n; n++) psum[n] = 0.0f;
    for (int r = 0; r < t->k; r++) {
      const float *w = t->w + (size_t)r * (size_t)t->ldw;
      for (int n = 0; n < t->n; n++) psum[n] = fmaf(a[r], w[n], psum[n]);
    }
    if (pass)
      for (int n = 0; n < t->n; n++) psum[n] += 0.0f;
    if (t->accumulate)
      for (int n = 0; n < t->n; n++) o[n] += psum[n];
    else
      for (int n = 0; n < t->n; n++) o[n] = psum[n];
  }
}
