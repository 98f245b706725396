/*
** check_mxu_fast.c -- the fast tile kernel, every SIMD path this host can
** run, against a scalar reference written from mxu.h's Numerics paragraph.
**
** The reference below is independent of mxu_fast.c: one result at a time,
** every row of the array in order (an fmaf per row inside the tile, +0.0 per
** row below it), then the accumulator add. Bits must match exactly, except
** that any NaN equals any NaN (NaN sign and payload are unspecified).
** Random tiles use a fixed seed and cover edge shapes (m, k, n = 1, sizes
** that are not multiples of any block, K < rows and K == rows, leading
** dimensions wider than the tile, several row chunks), accumulate and
** overwrite, and operands with NaN, inf, -0, subnormals, overflow and
** underflow; a guard checks nothing outside the tile is written.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mxu/mxu.h"
#include "mxu/mxu_fast_int.h"
#include "tests/test_util.h"

/* {==================================================================
** Reference
** ================================================================== */
static void ref_tile(int rows, const tpu_mxu_tile *t) {
  for (int m = 0; m < t->m; m++)
    for (int n = 0; n < t->n; n++) {
      float psum = 0.0f;
      for (int r = 0; r < rows; r++) {
        if (r < t->k) {
          float a = tpu_bf16_round(t->act[(size_t)m * (size_t)t->lda + (size_t)r]);
          float w = tpu_bf16_round(t->w[(size_t)r * (size_t)t->ldw + (size_t)n]);
          psum = fmaf(a, w, psum);
        } else {
          psum = psum + 0.0f;             /* a pass-through row: weight +0, act +0 */
        }
      }
      float *o = &t->out[(size_t)m * (size_t)t->ldo + (size_t)n];
      *o = t->accumulate ? *o + psum : psum;
    }
}

static bool same_bits(float a, float b) {
  if (isnan(a) && isnan(b)) return true;
  return tpu_f32_bits(a) == tpu_f32_bits(b);
}
/* }================================================================== */

/* {==================================================================
** Random tiles
** ================================================================== */
typedef enum vals { V_BF16, V_F32, V_SPECIAL, V_TINY } vals;

/* One operand value of the given kind. */
static float draw(tu_rng *r, vals kind) {
  switch (kind) {
  case V_BF16: return tpu_bf16_round(tu_normal(r));
  case V_F32:  return tu_normal(r);                 /* the kernel must round it */
  case V_TINY: {                                    /* products underflow: -0, subnormals */
    float x = tpu_f32_from_bits((uint32_t)tu_range(r, 1, 0x00ff) << 16);   /* bf16 subnormal */
    if (tu_range(r, 0, 3) == 0) x = ldexpf(tu_normal(r), -tu_range(r, 60, 75));
    return tu_range(r, 0, 1) ? -x : x;
  }
  case V_SPECIAL: default: {
    switch (tu_range(r, 0, 13)) {
    case 0: return NAN;
    case 1: return tu_range(r, 0, 1) ? INFINITY : -INFINITY;
    case 2: return -0.0f;
    case 3: return 0.0f;
    case 4: return tpu_f32_from_bits((uint32_t)tu_range(r, 1, 0x7f) << 16);  /* subnormal */
    case 5: return tpu_bf16_round(3.0e38f) * (tu_range(r, 0, 1) ? 1.0f : -1.0f); /* overflow */
    case 6: return tpu_f32_from_bits(0x7fc00001u | ((uint32_t)tu_range(r, 0, 1) << 31)); /* NaN, low payload */
    case 7: return tpu_f32_from_bits(0x7f800001u | ((uint32_t)tu_range(r, 0, 1) << 31)); /* NaN that naive rounding makes inf */
    case 8: return tpu_f32_from_bits(0x7f7fffffu | ((uint32_t)tu_range(r, 0, 1) << 31)); /* f32 max: rounds to inf */
    default: return tu_normal(r);
    }
  }
  }
}

typedef struct rt {           /* one random tile and its buffers */
  int rows;
  tpu_mxu_tile t;
  float *act, *w, *out0;      /* out0: the accumulators before the call */
  size_t n_act, n_w, n_out;
} rt;

static void rt_free(rt *x) { free(x->act); free(x->w); free(x->out0); }

/* Builds a tile for an array of 'rows' rows; sizes exactly as large as the
** leading dimensions require, so an over-read shows up under ASan. */
static void rt_make(rt *x, tu_rng *r, int rows, int m, int k, int n, vals kind) {
  x->rows = rows;
  const int lda = k + (tu_range(r, 0, 2) ? 0 : tu_range(r, 1, 17));
  const int ldw = n + (tu_range(r, 0, 2) ? 0 : tu_range(r, 1, 17));
  const int ldo = n + (tu_range(r, 0, 2) ? 0 : tu_range(r, 1, 17));
  x->n_act = (size_t)(m - 1) * (size_t)lda + (size_t)k;
  x->n_w = (size_t)(k - 1) * (size_t)ldw + (size_t)n;
  x->n_out = (size_t)m * (size_t)ldo;
  x->act = malloc(x->n_act * sizeof *x->act);
  x->w = malloc(x->n_w * sizeof *x->w);
  x->out0 = malloc(x->n_out * sizeof *x->out0);
  ck_assert(x->act && x->w && x->out0);
  for (size_t i = 0; i < x->n_act; i++) x->act[i] = draw(r, kind);
  for (size_t i = 0; i < x->n_w; i++) x->w[i] = draw(r, kind);
  for (size_t i = 0; i < x->n_out; i++) x->out0[i] = draw(r, kind == V_SPECIAL ? V_SPECIAL : V_F32);
  x->t = (tpu_mxu_tile){ .m = m, .k = k, .n = n, .act = x->act, .lda = lda, .w = x->w, .ldw = ldw,
                         .out = NULL, .ldo = ldo, .accumulate = tu_range(r, 0, 1) };
}

/* Runs path s (or the dispatcher, s < 0) and the reference on x; checks
** every element, the guard columns included. Returns the elements compared. */
static long rt_check(const rt *x, int s, const char *what) {
  float *want = malloc(x->n_out * sizeof *want), *got = malloc(x->n_out * sizeof *got);
  ck_assert(want && got);
  memcpy(want, x->out0, x->n_out * sizeof *want);
  memcpy(got, x->out0, x->n_out * sizeof *got);
  tpu_mxu_tile t = x->t;
  t.out = want;
  ref_tile(x->rows, &t);
  t.out = got;
  if (s < 0) tpu_mxu_tile_compute(x->rows, &t);
  else mxu_tile_compute_with((mxu_simd)s, x->rows, &t);
  for (size_t i = 0; i < x->n_out; i++)
    if (!same_bits(want[i], got[i]))
      ck_abort_msg("%s, path %s: rows %d, m %d k %d n %d, lda %d ldw %d ldo %d, %s: "
                   "element (%zu,%zu)\n  Expected: %a (0x%08x)\n  Actual:   %a (0x%08x)",
                   what, s < 0 ? "dispatch" : mxu_simd_name((mxu_simd)s), x->rows, t.m, t.k,
                   t.n, t.lda, t.ldw, t.ldo, t.accumulate ? "accumulate" : "overwrite",
                   i / (size_t)t.ldo, i % (size_t)t.ldo, (double)want[i], tpu_f32_bits(want[i]),
                   (double)got[i], tpu_f32_bits(got[i]));
  free(want);
  free(got);
  return (long)x->n_out;
}

/* A size in 1..hi, often at the edges and around the block sizes. */
static int pick(tu_rng *r, int hi) {
  static const int near[] = { 1, 2, 5, 6, 7, 11, 12, 13, 15, 16, 17, 31, 32, 33, 64 };
  int v;
  switch (tu_range(r, 0, 3)) {
  case 0: v = near[tu_range(r, 0, (int)(sizeof near / sizeof near[0]) - 1)]; break;
  case 1: v = hi; break;
  default: v = tu_range(r, 1, hi); break;
  }
  return v < 1 ? 1 : v > hi ? hi : v;
}
/* }================================================================== */

static long tiles_checked, elements_checked;

/* Checked fixtures run in each test's own process: say what was compared. */
static void counts_reset(void) { tiles_checked = elements_checked = 0; }
static void counts_print(void) {
  if (tiles_checked)
    fprintf(stderr, "check_mxu_fast: %ld tiles, %ld result elements compared\n", tiles_checked,
            elements_checked);
}

/* n_tiles random tiles on arrays of the given heights, every path. */
static void sweep(uint64_t seed, const int *heights, int nh, int n_tiles, int max_m, vals kind,
                  const char *what) {
  tu_rng r = { seed };
  for (int i = 0; i < n_tiles; i++) {
    const int rows = heights[tu_range(&r, 0, nh - 1)];
    const int cols = tu_range(&r, 0, 1) ? rows : pick(&r, 160);
    const int k = tu_range(&r, 0, 2) ? pick(&r, rows) : rows;
    rt x;
    rt_make(&x, &r, rows, pick(&r, max_m), k, pick(&r, cols), kind);
    for (int s = 0; s < MXU_SIMD_COUNT; s++)
      if (mxu_simd_supported((mxu_simd)s)) elements_checked += rt_check(&x, s, what);
    elements_checked += rt_check(&x, -1, what);
    tiles_checked++;
    rt_free(&x);
  }
}

static const int SMALL[] = { 1, 2, 3, 8, 13, 16, 33 };
static const int BIG[] = { 64, 128, 200 };

/* Random tiles of each kind of operand on small arrays, then on large ones:
** how many tiles, up to how many rows M. */
static const struct {
  vals kind;
  const char *what;
  int small_tiles, small_m, big_tiles, big_m;
} SWEEPS[] = {
  { V_BF16, "bf16 operands", 600, 40, 120, 70 },
  { V_F32, "f32 operands (rounded to bf16 first)", 300, 40, 40, 50 },
  { V_SPECIAL, "nan, inf, signed zero and subnormal operands", 400, 30, 30, 40 },
};

START_TEST(Every_path_matches_the_reference_on_random_tiles_of_bf16_f32_and_special_values) {
  char what[96];
  snprintf(what, sizeof what, "%s, small arrays", SWEEPS[_i].what);
  sweep(101 + 100 * (uint64_t)_i, SMALL, 7, SWEEPS[_i].small_tiles, SWEEPS[_i].small_m, SWEEPS[_i].kind, what);
  snprintf(what, sizeof what, "%s, large arrays", SWEEPS[_i].what);
  sweep(102 + 100 * (uint64_t)_i, BIG, 3, SWEEPS[_i].big_tiles, SWEEPS[_i].big_m, SWEEPS[_i].kind, what);
}
END_TEST

START_TEST(Underflowing_products_leave_minus_zero_only_when_k_equals_rows) {
  sweep(401, SMALL, 7, 300, 30, V_TINY, "tiny values");
  /* And directly: a single negative product below the subnormal range
  ** rounds to -0; the pass-through rows turn it into +0. */
  float a = -tpu_f32_from_bits(0x00010000u), w = tpu_f32_from_bits(0x00010000u), o = 1.0f;
  for (int s = 0; s < MXU_SIMD_COUNT; s++) {
    if (!mxu_simd_supported((mxu_simd)s)) continue;
    tpu_mxu_tile t = { .m = 1, .k = 1, .n = 1, .act = &a, .lda = 1, .w = &w, .ldw = 1,
                       .out = &o, .ldo = 1, .accumulate = false };
    mxu_tile_compute_with((mxu_simd)s, 1, &t);
    ck_assert_msg(tpu_f32_bits(o) == 0x80000000u, "%s: K == rows keeps -0", mxu_simd_name((mxu_simd)s));
    mxu_tile_compute_with((mxu_simd)s, 2, &t);
    ck_assert_msg(tpu_f32_bits(o) == 0x00000000u, "%s: K < rows gives +0", mxu_simd_name((mxu_simd)s));
  }
}
END_TEST

START_TEST(Tall_tiles_and_tall_arrays_span_several_row_chunks) {
  /* Up to 1024 rows of K, so the activations are walked in several chunks
  ** and the weight panels come from the heap. */
  static const int TALL[] = { 300, 1024 };
  sweep(501, TALL, 2, 16, 120, V_BF16, "tall");
  tu_rng r = { 502 };
  rt x;
  rt_make(&x, &r, 128, 700, 128, 128, V_F32);      /* several chunks at K = 128 */
  for (int s = 0; s < MXU_SIMD_COUNT; s++)
    if (mxu_simd_supported((mxu_simd)s)) elements_checked += rt_check(&x, s, "m = 700");
  tiles_checked++;
  rt_free(&x);
}
END_TEST

START_TEST(Gemm_at_the_tile_level_matches_tiles_of_the_reference) {
  /* tpu_mxu_gemm hands f32 operands straight to the kernel in bf16 mode:
  ** the result must be the reference's walk over pre-rounded operands. */
  static const struct { int rows, cols, M, N, K; } cases[] = {
    { 8, 8, 5, 19, 21 }, { 16, 8, 33, 7, 16 }, { 128, 128, 70, 200, 300 }, { 4, 16, 1, 1, 1 },
    { 13, 5, 9, 26, 27 } };
  tu_rng r = { 601 };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int M = cases[c].M, N = cases[c].N, K = cases[c].K, rows = cases[c].rows;
    float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
    float *C = malloc((size_t)M * N * sizeof *C), *R = malloc((size_t)M * N * sizeof *R);
    ck_assert(A && B && C && R);
    tu_fill(&r, A, (size_t)M * K, 0);
    tu_fill(&r, B, (size_t)K * N, 0);
    tpu_mxu_config cfg = { .rows = rows, .cols = cases[c].cols, .double_buffer = true };
    ck_assert_int_eq(tpu_mxu_gemm(&cfg, 1, TPU_FIDELITY_TILE, TPU_PREC_BF16, M, N, K, A, B, C,
                                  NULL), TPU_OK);
    for (int n0 = 0; n0 < N; n0 += cfg.cols)
      for (int k0 = 0; k0 < K; k0 += rows) {
        tpu_mxu_tile t = { .m = M, .k = K - k0 < rows ? K - k0 : rows,
                           .n = N - n0 < cfg.cols ? N - n0 : cfg.cols,
                           .act = A + k0, .lda = K, .w = B + (size_t)k0 * N + n0, .ldw = N,
                           .out = R + n0, .ldo = N, .accumulate = k0 > 0 };
        ref_tile(rows, &t);
      }
    for (int i = 0; i < M * N; i++)
      ck_assert_msg(same_bits(R[i], C[i]), "case %zu element %d: Expected %a, Actual %a", c, i,
                    (double)R[i], (double)C[i]);
    free(A); free(B); free(C); free(R);
  }
}
END_TEST

START_TEST(Simd_names_parse_and_unsupported_paths_are_refused) {
  mxu_simd s;
  for (int i = 0; i < MXU_SIMD_COUNT; i++) {
    ck_assert(mxu_simd_parse(mxu_simd_name((mxu_simd)i), &s));
    ck_assert_int_eq(s, i);
  }
  ck_assert(mxu_simd_parse("auto", &s));
  ck_assert(mxu_simd_supported(s));
  ck_assert(!mxu_simd_parse("sse9", &s));
  ck_assert(!mxu_simd_parse("", &s));
  ck_assert(mxu_simd_supported(MXU_SIMD_GENERIC));
  ck_assert(mxu_simd_supported(mxu_simd_active()));
  const mxu_simd was = mxu_simd_active();
  for (int i = 0; i < MXU_SIMD_COUNT; i++) {
    bool ok = mxu_simd_set((mxu_simd)i);
    ck_assert(ok == mxu_simd_supported((mxu_simd)i));
    if (ok) ck_assert_int_eq(mxu_simd_active(), i);
  }
  ck_assert(mxu_simd_set(was));
  ck_assert_str_eq(mxu_simd_name(MXU_SIMD_COUNT), "?");
}
END_TEST

static void report(void) {
  fprintf(stderr, "check_mxu_fast: paths");
  for (int s = 0; s < MXU_SIMD_COUNT; s++)
    if (mxu_simd_supported((mxu_simd)s)) fprintf(stderr, " %s", mxu_simd_name((mxu_simd)s));
  fprintf(stderr, " (active %s)\n", mxu_simd_name(mxu_simd_active()));
}

int main(void) {
  report();
  Suite *s = suite_create("mxu_fast");
  TCase *tc = TU_CASE(s, "paths_vs_reference", 300, Underflowing_products_leave_minus_zero_only_when_k_equals_rows,
                      Tall_tiles_and_tall_arrays_span_several_row_chunks,
                      Gemm_at_the_tile_level_matches_tiles_of_the_reference,
                      Simd_names_parse_and_unsupported_paths_are_refused);
  tcase_add_loop_test(tc, Every_path_matches_the_reference_on_random_tiles_of_bf16_f32_and_special_values, 0,
                      (int)(sizeof SWEEPS / sizeof SWEEPS[0]));
  tcase_add_checked_fixture(tc, counts_reset, counts_print);
  return tu_main(s);
}
