/*
** check_mxu.c -- the MXU: the PE-level model against hand-computed cycles,
** its per-cell view against the header's wavefront, and the PE model against
** the tile model (tpu_mxu_sched + tpu_mxu_tile_compute) on random tile
** sequences: equal cycles, equal result bits. Also GEMM at the three levels
** and the tile walk. (SCALE-Sim's models: tests/check_scalesim.c.)
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mxu/mxu_int.h"
#include "tests/test_util.h"


static tpu_mxu_config cfg_of(int rows, int cols, bool dbl) {
  return (tpu_mxu_config){ .rows = rows, .cols = cols, .double_buffer = dbl };
}

static tpu_mxu *make(int rows, int cols, bool dbl) {
  tpu_mxu_config c = cfg_of(rows, cols, dbl);
  tpu_mxu *m = NULL;
  ck_assert_int_eq(tpu_mxu_create(&c, &m), TPU_OK);
  ck_assert_ptr_nonnull(m);
  return m;
}

/* A tile over caller buffers; shapes only matter for timing tests. */
static float BUF_A[128 * 128], BUF_W[128 * 128], BUF_O[128 * 128];
static tpu_mxu_tile tile_of(int m, int k, int n, uint64_t earliest) {
  return (tpu_mxu_tile){ .m = m, .k = k, .n = n, .act = BUF_A, .lda = k, .w = BUF_W, .ldw = n,
                         .out = BUF_O, .ldo = n, .accumulate = false, .earliest = earliest };
}

/* Pushes shapes[i] = {m, k, n, earliest} to a PE model and a scheduler;
** both cycle counts must equal 'expected'. CYCLES_ARE lists the shapes. */
static void cycles_are(int rows, int cols, bool dbl, const int (*shapes)[4], int count,
                       uint64_t expected) {
  tpu_mxu *m = make(rows, cols, dbl);
  tpu_mxu_config c = cfg_of(rows, cols, dbl);
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &c);
  for (int i = 0; i < count; i++) {
    tpu_mxu_tile t = tile_of(shapes[i][0], shapes[i][1], shapes[i][2], (uint64_t)shapes[i][3]);
    ck_assert_int_eq(tpu_mxu_push(m, &t), TPU_OK);
    tpu_mxu_sched_tile(&s, t.m, t.k, t.n, t.earliest, NULL);
  }
  TU_EQ_U64(expected, s.done);
  TU_EQ_U64(expected, tpu_mxu_run(m));
  ck_assert(tpu_mxu_idle(m));
  tpu_mxu_stats st;
  tpu_mxu_get_stats(m, &st);
  TU_EQ_U64(expected, st.cycles);
  TU_EQ_U64(s.macs, st.macs);
  TU_EQ_U64((uint64_t)count, st.tiles_done);
  TU_EQ_U64((uint64_t)count, st.weight_loads);
  tpu_mxu_destroy(m);
}
#define CYCLES_ARE(rows, cols, dbl, expected, ...) \
  cycles_are((rows), (cols), (dbl), (const int[][4]){ __VA_ARGS__ }, \
             (int)(sizeof((const int[][4]){ __VA_ARGS__ }) / sizeof(int[4])), (expected))

/* {==================================================================
** timing: hand-computed cycle counts
** ================================================================== */

/* The passes of each precision: every product of parts whose exponent sum
** is within the kept range, each once, in non-increasing order of part sum
** (smallest products first). */
START_TEST(Precision_passes_are_the_kept_products_smallest_first) {
  const tpu_precision ps[3] = { TPU_PREC_BF16, TPU_PREC_BF16X3, TPU_PREC_BF16X6 };
  const int keep[3] = { 0, 1, 2 };            /* largest a+b kept */
  for (int q = 0; q < 3; q++) {
    int seen[3][3] = { { 0 } }, a, b, prev = 99;
    const int n = tpu_precision_passes(ps[q]);
    for (int i = 0; i < n; i++) {
      ck_assert_int_eq(tpu_precision_pass(ps[q], i, &a, &b), 0);
      ck_assert_int_le(a + b, keep[q]);
      ck_assert_int_le(a + b, prev);
      prev = a + b;
      ck_assert_int_eq(seen[a][b]++, 0);
    }
    ck_assert_int_eq(n, (keep[q] + 1) * (keep[q] + 2) / 2);
    ck_assert_int_eq(tpu_precision_pass(ps[q], n, &a, &b), -1);
    ck_assert_int_eq(tpu_precision_pass(ps[q], -1, &a, &b), -1);
  }
}
END_TEST

START_TEST(One_by_one_array_takes_load_plus_stream_cycles) {
  /* L=0 (1 cycle), s=1, last result at s+(M-1) */
  CYCLES_ARE(1, 1, true, 2, { 1, 1, 1, 0 });
  CYCLES_ARE(1, 1, true, 6, { 5, 1, 1, 0 });
  /* two tiles, double-buffered: L1 = max(1, s0=1) = 1, s1 = max(2, 1+5) = 6, last 6+2 */
  CYCLES_ARE(1, 1, true, 9, { 5, 1, 1, 0 }, { 3, 1, 1, 0 });
  /* single: L1 >= s0+M0 = 6, s1 = 7, last 7+2 */
  CYCLES_ARE(1, 1, false, 10, { 5, 1, 1, 0 }, { 3, 1, 1, 0 });
}
END_TEST

START_TEST(Eight_by_eight_single_vector_tile_costs_K_plus_fill_and_drain) {
  /* s = K = 8, last = 8 + 0 + 7 + 7 = 22 */
  CYCLES_ARE(8, 8, true, 23, { 1, 8, 8, 0 });
  /* K=3, N=2: s = 3, last = 3 + 0 + 7 + 1 = 11 (rows-1 always: psums pass all rows) */
  CYCLES_ARE(8, 8, true, 12, { 1, 3, 2, 0 });
}
END_TEST

START_TEST(Double_buffering_hides_the_next_load_single_does_not) {
  /* M=4, K=8: double: L1 = 8, s1 = 16, last = 16+3+7+7 = 33;
  ** single: L1 = s0+M0 = 12, s1 = 20, last = 37 */
  CYCLES_ARE(8, 8, true, 34, { 4, 8, 8, 0 }, { 4, 8, 8, 0 });
  CYCLES_ARE(8, 8, false, 38, { 4, 8, 8, 0 }, { 4, 8, 8, 0 });
  /* M=16 >= K: back to back with no bubble when double-buffered: s1 = s0+16 = 24 */
  CYCLES_ARE(8, 8, true, 8 + 48 + 14, { 16, 8, 8, 0 }, { 16, 8, 8, 0 }, { 16, 8, 8, 0 });
  /* single: each tile waits M+K: s = 8, 32, 56; last = 56+15+14 */
  CYCLES_ARE(8, 8, false, 86, { 16, 8, 8, 0 }, { 16, 8, 8, 0 }, { 16, 8, 8, 0 });
}
END_TEST

START_TEST(Earliest_delays_the_load_and_nothing_else) {
  CYCLES_ARE(8, 8, true, 100 + 8 + 1 + 14 + 1, { 2, 8, 8, 100 });
  /* the second tile's earliest is already past: no effect */
  CYCLES_ARE(8, 8, true, 108 + 8 + 1 + 14 + 1, { 2, 8, 8, 100 }, { 2, 8, 8, 5 });
  /* a far 'earliest' on a big array: the idle gap is skipped, same count */
  CYCLES_ARE(128, 128, true, 1000000000ull + 1 + 0 + 127 + 0 + 1, { 3, 128, 128, 0 }, { 1, 1, 1, 1000000000 });
}
END_TEST

/* }================================================================== */

/* {==================================================================
** view: the wavefront, cycle by cycle
** ================================================================== */

typedef struct shape { int m, k, n; uint64_t L, s; } shape;

/* Ticks a model through 'count' tiles and checks every cell's state, tile
** index, activation and weight at every cycle against the header's formula. */
static void check_view(int R, int C, bool dbl, const shape *sh, int count) {
  tpu_mxu *m = make(R, C, dbl);
  tpu_mxu_config cfg = cfg_of(R, C, dbl);
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &cfg);
  enum { MAXT = 4 };
  float act[MAXT][64 * 64], w[MAXT][64 * 64], out[MAXT][64 * 64];
  tu_rng rng = { 7 };
  shape t[MAXT];
  ck_assert_int_le(count, MAXT);
  for (int i = 0; i < count; i++) {
    t[i] = sh[i];
    tu_fill(&rng, act[i], 64 * 64, 1);
    tu_fill(&rng, w[i], 64 * 64, 1);
    act[i][1] = INFINITY;     /* inf x +0.0 in columns >= N would be NaN: they must see +0.0 */
    tpu_mxu_tile tl = { .m = t[i].m, .k = t[i].k, .n = t[i].n, .act = act[i], .lda = t[i].k,
                        .w = w[i], .ldw = t[i].n, .out = out[i], .ldo = t[i].n };
    ck_assert_int_eq(tpu_mxu_push(m, &tl), TPU_OK);
    tpu_mxu_tile_times tt;
    tpu_mxu_sched_tile(&s, tl.m, tl.k, tl.n, 0, &tt);
    t[i].L = tt.load_start;
    t[i].s = tt.stream_start;
  }
  const size_t cells = (size_t)R * (size_t)C;
  uint8_t *state = malloc(cells);
  int8_t *tix = malloc(cells);
  float *va = malloc(cells * sizeof(float)), *vw = malloc(cells * sizeof(float));
  float *vp = malloc(cells * sizeof(float));
  tpu_mxu_view v = { .state = state, .tile = tix, .act = va, .weight = vw, .psum = vp };
  tpu_mxu_view_cells(m, &v);            /* before the first tick: all idle */
  for (size_t i = 0; i < cells; i++) ck_assert_int_eq(state[i], TPU_MXU_CELL_IDLE);
  int computing_seen = 0, loading_seen = 0;
  for (uint64_t cyc = 0; cyc < s.done; cyc++) {
    tpu_mxu_tick(m);
    tpu_mxu_view_cells(m, &v);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        int want = TPU_MXU_CELL_IDLE, want_tile = -1;
        float want_act = 0.0f;
        size_t at = (size_t)r * (size_t)C + (size_t)c;
        for (int i = 0; i < count; i++) {
          int64_t band = (int64_t)cyc - (int64_t)t[i].s - r - c;   /* activation index */
          if (band >= 0 && band < t[i].m) {   /* psum: the column's chain so far */
            float p = 0.0f;
            for (int rr = 0; rr <= r; rr++)
              p = (rr < t[i].k && c < t[i].n)
                ? fmaf(act[i][band * t[i].k + rr], w[i][rr * t[i].n + c], p) : p + 0.0f;
            if (!tu_same_f32(p, vp[at])) TU_EQ_BITS(p, vp[at], "psum in the band");
            if (c >= t[i].n) TU_EQ_BITS(0.0f, va[at], "activation right of N");
            if (r >= t[i].k) TU_EQ_BITS(0.0f, va[at], "activation below K");
          }
          if (band >= 0 && band < t[i].m && r < t[i].k && c < t[i].n) {
            want = TPU_MXU_CELL_COMPUTING;
            want_tile = i;
            want_act = act[i][band * t[i].k + r];
          }
          int64_t step = (int64_t)cyc - (int64_t)t[i].L - c;         /* load step of column c */
          if (want == TPU_MXU_CELL_IDLE && r < t[i].k && step >= r && step <= t[i].k - 1)
            want = TPU_MXU_CELL_LOADING;
        }
        ck_assert_msg(state[at] == want, "cycle %llu cell (%d,%d): state %d, want %d",
                      (unsigned long long)cyc, r, c, state[at], want);
        ck_assert_int_eq(tix[at], want_tile);
        if (want == TPU_MXU_CELL_COMPUTING) {
          computing_seen++;
          TU_EQ_BITS(want_act, va[at], "activation held");
          TU_EQ_BITS(w[want_tile][r * t[want_tile].n + c], vw[at], "active weight");
        }
        if (want == TPU_MXU_CELL_LOADING) loading_seen++;
      }
  }
  ck_assert(tpu_mxu_idle(m));
  int64_t macs = 0;
  for (int i = 0; i < count; i++) macs += (int64_t)t[i].m * t[i].k * t[i].n;
  ck_assert_int_eq(computing_seen, macs);
  ck_assert_int_gt(loading_seen, 0);
  free(state); free(tix); free(va); free(vw); free(vp);
  tpu_mxu_destroy(m);
}

START_TEST(Computing_cells_form_the_diagonal_band_of_the_formula) {
  static const shape one[] = { { 3, 5, 6, 0, 0 } };
  check_view(8, 8, true, one, 1);
  static const shape two[] = { { 4, 8, 8, 0, 0 }, { 2, 3, 5, 0, 0 }, { 6, 8, 2, 0, 0 } };
  check_view(8, 8, true, two, 3);
  check_view(8, 8, false, two, 3);
  static const shape rect[] = { { 5, 4, 16, 0, 0 }, { 1, 2, 9, 0, 0 } };
  check_view(4, 16, true, rect, 2);
  static const shape tall[] = { { 2, 16, 4, 0, 0 }, { 7, 9, 3, 0, 0 } };
  check_view(16, 4, true, tall, 2);
}
END_TEST

START_TEST(Single_tile_view_at_chosen_cycles_matches_hand_figures) {
  /* 8x8, M=1, K=8, N=8: load cycles 0..14 (column 7 ends at 7+7), s = 8.
  ** At cycle 8 only PE(0,0) computes; at cycle 10 the anti-diagonal r+c=2. */
  tpu_mxu *m = make(8, 8, true);
  tpu_mxu_tile t = tile_of(1, 8, 8, 0);
  ck_assert_int_eq(tpu_mxu_push(m, &t), TPU_OK);
  uint8_t st[64];
  tpu_mxu_view v = { .state = st };
  for (int cyc = 0; cyc <= 10; cyc++) {
    tpu_mxu_tick(m);
    tpu_mxu_view_cells(m, &v);
    int comp = 0, load = 0;
    for (int i = 0; i < 64; i++) {
      comp += st[i] == TPU_MXU_CELL_COMPUTING;
      load += st[i] == TPU_MXU_CELL_LOADING;
    }
    if (cyc == 0) { ck_assert_int_eq(load, 1); ck_assert_int_eq(st[0], TPU_MXU_CELL_LOADING); }
    if (cyc == 7) { ck_assert_int_eq(comp, 0); ck_assert_int_eq(st[7 * 8 + 0], TPU_MXU_CELL_LOADING); }
    if (cyc == 8) { ck_assert_int_eq(comp, 1); ck_assert_int_eq(st[0], TPU_MXU_CELL_COMPUTING); }
    if (cyc == 10) {
      ck_assert_int_eq(comp, 3);
      for (int r = 0; r <= 2; r++) ck_assert_int_eq(st[r * 8 + (2 - r)], TPU_MXU_CELL_COMPUTING);
    }
  }
  TU_EQ_U64(23, tpu_mxu_run(m));
  tpu_mxu_stats sts;
  tpu_mxu_get_stats(m, &sts);
  TU_EQ_U64(23, sts.cycles);
  TU_EQ_U64(64, sts.macs);
  TU_EQ_U64(1 + 8 + 8 - 2, sts.busy_cycles);   /* cycles 8 .. 8+7+7: the band crosses the array */
  TU_EQ_U64(1, sts.weight_loads);
  tpu_mxu_destroy(m);
}
END_TEST

/* }================================================================== */

/* {==================================================================
** functional: PE model == tile model on random sequences
** ================================================================== */

static int kernel_turn;   /* rotates the PE kernel builds across sequences */

/* One random sequence of tiles on an R x C array; returns tiles run. */
static int random_sequence(tu_rng *rng, int R, int C, bool dbl, int max_tiles, int max_m,
                           bool specials) {
  const int ntiles = tu_range(rng, 1, max_tiles);
  const int ldo = C;
  const int out_rows = max_m;
  float *A[8], *W[8];
  float *o_pe = malloc(sizeof(float) * (size_t)out_rows * (size_t)ldo);
  float *o_tile = malloc(sizeof(float) * (size_t)out_rows * (size_t)ldo);
  tu_fill(rng, o_pe, (size_t)out_rows * (size_t)ldo, 0);
  memcpy(o_tile, o_pe, sizeof(float) * (size_t)out_rows * (size_t)ldo);
  tpu_mxu *m = make(R, C, dbl);
  int nk = 0;
  for (int k = 0; k < MXU_SIMD_COUNT; k++) if (mxu_simd_supported((mxu_simd)k)) nk++;
  ck_assert(mxu_array_set_kernel(m, (mxu_simd)(kernel_turn++ % nk)));
  tpu_mxu_config cfg = cfg_of(R, C, dbl);
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &cfg);
  tpu_mxu_tile tl[8];
  uint64_t macs = 0;
  for (int i = 0; i < ntiles; i++) {
    int pick = tu_range(rng, 0, 9);
    int mm = pick == 0 ? 1 : tu_range(rng, 1, max_m);
    int kk = pick == 1 ? 1 : pick == 2 ? R : tu_range(rng, 1, R);
    int nn = pick == 3 ? 1 : pick == 4 ? C : tu_range(rng, 1, C);
    int lda = kk + tu_range(rng, 0, 2), ldw = nn + tu_range(rng, 0, 2);
    A[i] = malloc(sizeof(float) * (size_t)mm * (size_t)lda);
    W[i] = malloc(sizeof(float) * (size_t)kk * (size_t)ldw);
    tu_fill(rng, A[i], (size_t)mm * (size_t)lda, 1);
    tu_fill(rng, W[i], (size_t)kk * (size_t)ldw, 1);
    if (specials) {
      static const float sp[] = { NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -1e-40f,
                                  0x1p-126f, 3.0e38f, -3.0e38f };
      const int nsp = (int)(sizeof sp / sizeof sp[0]);
      for (int j = tu_range(rng, 0, 4); j > 0; j--)
        A[i][tu_range(rng, 0, mm * lda - 1)] = tpu_bf16_round(sp[tu_range(rng, 0, nsp - 1)]);
      for (int j = tu_range(rng, 0, 4); j > 0; j--)
        W[i][tu_range(rng, 0, kk * ldw - 1)] = tpu_bf16_round(sp[tu_range(rng, 0, nsp - 1)]);
      if (tu_range(rng, 0, 2) == 0)     /* all -0.0 products: -0.0 sums meet the pass-through */
        for (int j = 0; j < mm * lda; j++) A[i][j] = -0.0f;
    }
    uint64_t earliest = tu_range(rng, 0, 3) == 0 ? (uint64_t)tu_range(rng, 0, 3 * (R + C)) : 0;
    tl[i] = (tpu_mxu_tile){ .m = mm, .k = kk, .n = nn, .act = A[i], .lda = lda, .w = W[i],
                            .ldw = ldw, .out = o_pe, .ldo = ldo,
                            .accumulate = tu_range(rng, 0, 1) == 1, .earliest = earliest };
    ck_assert_int_eq(tpu_mxu_push(m, &tl[i]), TPU_OK);
    tpu_mxu_sched_tile(&s, mm, kk, nn, earliest, NULL);
    macs += (uint64_t)mm * (uint64_t)kk * (uint64_t)nn;
  }
  for (int i = 0; i < ntiles; i++) {
    tpu_mxu_tile t = tl[i];
    t.out = o_tile;
    tpu_mxu_tile_compute(R, &t);
  }
  uint64_t cycles = tpu_mxu_run(m);
  ck_assert_msg(cycles == s.done, "%dx%d %s, %d tiles: pe %llu cycles, tile %llu", R, C,
                dbl ? "double" : "single", ntiles, (unsigned long long)cycles,
                (unsigned long long)s.done);
  tu_assert_same_f32(o_tile, o_pe, (size_t)out_rows * (size_t)ldo, "accumulator bits, pe vs tile");
  tpu_mxu_stats st;
  tpu_mxu_get_stats(m, &st);
  TU_EQ_U64(macs, st.macs);
  TU_EQ_U64(ntiles, st.tiles_done);
  ck_assert_uint_le(st.busy_cycles, st.cycles);
  tpu_mxu_destroy(m);
  for (int i = 0; i < ntiles; i++) { free(A[i]); free(W[i]); }
  free(o_pe);
  free(o_tile);
  return ntiles;
}

static const int SMALL_ARRAYS[][2] = { { 1, 1 }, { 8, 8 }, { 4, 16 }, { 16, 4 }, { 3, 5 }, { 1, 7 }, { 9, 1 } };

START_TEST(Pe_and_tile_models_agree_on_random_sequences) {
  tu_rng rng = { 2026 };
  int seqs = 0, tiles = 0;
  for (int rep = 0; rep < 40; rep++)
    for (size_t a = 0; a < sizeof SMALL_ARRAYS / sizeof SMALL_ARRAYS[0]; a++, seqs++)
      tiles += random_sequence(&rng, SMALL_ARRAYS[a][0], SMALL_ARRAYS[a][1], (rep & 1) == 0, 8, 24, false);
  for (int rep = 0; rep < 6; rep++, seqs++)     /* the default size: few, they cost most */
    tiles += random_sequence(&rng, 128, 128, rep != 3, 4, rep < 2 ? 140 : 20, false);
  ck_assert_int_ge(seqs, 200);
  fprintf(stderr, "pe vs tile: %d sequences, %d tiles\n", seqs, tiles);
}
END_TEST

START_TEST(Special_values_give_the_same_bits_in_both_models) {
  tu_rng rng = { 99 };
  for (int rep = 0; rep < 20; rep++)
    for (size_t a = 0; a < sizeof SMALL_ARRAYS / sizeof SMALL_ARRAYS[0]; a++)
      random_sequence(&rng, SMALL_ARRAYS[a][0], SMALL_ARRAYS[a][1], (rep & 1) == 0, 6, 12, true);
  random_sequence(&rng, 128, 128, true, 3, 10, true);
}
END_TEST

START_TEST(Every_kernel_build_gives_the_same_bits) {
  tu_rng rng = { 5 };
  enum { R = 37, C = 45, M = 50 };   /* odd sizes: vector tails */
  float *a = malloc(sizeof(float) * M * R), *w = malloc(sizeof(float) * R * C);
  float ref[M * C], got[M * C];
  tu_fill(&rng, a, (size_t)M * R, 1);
  tu_fill(&rng, w, (size_t)R * C, 1);
  a[3] = NAN; w[5] = INFINITY; a[7] = 1e-40f; w[9] = -0.0f;
  for (int k = 0; k < MXU_SIMD_COUNT; k++) {
    if (!mxu_simd_supported((mxu_simd)k)) continue;
    tpu_mxu *m = make(R, C, true);
    ck_assert(mxu_array_set_kernel(m, (mxu_simd)k));
    ck_assert_int_eq(mxu_array_kernel(m), k);
    tpu_mxu_tile t = { .m = M, .k = R - 2, .n = C - 3, .act = a, .lda = R, .w = w, .ldw = C,
                       .out = k ? got : ref, .ldo = C };
    memset(t.out, 0, sizeof ref);
    ck_assert_int_eq(tpu_mxu_push(m, &t), TPU_OK);
    tpu_mxu_run(m);
    if (k) tu_assert_same_f32(ref, got, (size_t)M * C, mxu_simd_name((mxu_simd)k));
    tpu_mxu_destroy(m);
  }
  free(a); free(w);
}
END_TEST

/* Skipping fixed-point cycles must change nothing: the same sequence with
** gaps, ticked with and without the skip, gives the same view every cycle. */
START_TEST(Skipping_idle_cycles_changes_neither_view_nor_results) {
  tu_rng rng = { 11 };
  const int R = 6, C = 5;
  float a[3][40 * 6], w[3][6 * 5], o1[40 * 5] = { 0 }, o2[40 * 5] = { 0 };
  tpu_mxu *m1 = make(R, C, true), *m2 = make(R, C, true);
  mxu_array_set_skip(m2, false);
  static const uint64_t earliest[3] = { 0, 60, 61 };
  for (int i = 0; i < 3; i++) {
    tu_fill(&rng, a[i], 40 * 6, 1);
    tu_fill(&rng, w[i], 6 * 5, 1);
    w[i][2] = INFINITY;                  /* idle cells then compute NaN: still a fixed point */
    tpu_mxu_tile t = { .m = 3 + i, .k = R - i, .n = C - i, .act = a[i], .lda = 6, .w = w[i],
                       .ldw = 5, .out = o1, .ldo = 5, .accumulate = true, .earliest = earliest[i] };
    ck_assert_int_eq(tpu_mxu_push(m1, &t), TPU_OK);
    t.out = o2;
    ck_assert_int_eq(tpu_mxu_push(m2, &t), TPU_OK);
  }
  float p1[30], p2[30], a1[30], a2[30], w1[30], w2[30];
  uint8_t s1[30], s2[30];
  tpu_mxu_view v1 = { s1, w1, a1, p1, NULL, NULL }, v2 = { s2, w2, a2, p2, NULL, NULL };
  for (int cyc = 0; cyc < 150; cyc++) {
    tpu_mxu_tick(m1);
    tpu_mxu_tick(m2);
    tpu_mxu_view_cells(m1, &v1);
    tpu_mxu_view_cells(m2, &v2);
    ck_assert(memcmp(s1, s2, sizeof s1) == 0);
    tu_assert_same_f32(p2, p1, 30, "psum");
    tu_assert_same_f32(a2, a1, 30, "act");
    tu_assert_same_f32(w2, w1, 30, "weight");
  }
  ck_assert(tpu_mxu_idle(m1) && tpu_mxu_idle(m2));
  tu_assert_same_f32(o2, o1, 40 * 5, "results");
  tpu_mxu_destroy(m1);
  tpu_mxu_destroy(m2);
}
END_TEST

/* The timing level's closed form (runs of identical tiles and rows of
** identical N-tiles fast-forwarded) gives the cycles, tiles and MACs of
** feeding every tile of the walk to the arrays' schedules, on random
** shapes large enough to be fast-forwarded many times, every precision, 1
** to 3 arrays, double-buffered or not; and a GEMM of 2^31 - 1 rows is timed
** at once (its cycles in closed form: K loads, then M rows, then the drain). */
START_TEST(The_timing_closed_form_equals_feeding_every_tile) {
  tu_rng r = { 31 };
  for (int it = 0; it < 40; it++) {
    tpu_mxu_config cfg = { .rows = tu_range(&r, 1, 9), .cols = tu_range(&r, 1, 9), .double_buffer = it % 3 != 0 };
    const int mxus = tu_range(&r, 1, 3), M = it % 4 ? tu_range(&r, 1, 40) : tu_range(&r, 1, 3);
    const int N = tu_range(&r, 1, 400), K = tu_range(&r, 1, 400);
    const tpu_precision prec = (tpu_precision)(it % 3);
    tpu_mxu_sched s[3];
    for (int a = 0; a < mxus; a++) tpu_mxu_sched_init(&s[a], &cfg);
    tpu_mxu_walk w;
    tpu_mxu_walk_tile t;
    uint64_t tiles = 0, macs = 0, cycles = 0;
    tpu_mxu_walk_init(&w, &cfg, mxus, prec, M, N, K);
    while (tpu_mxu_walk_next(&w, &t)) {
      tpu_mxu_sched_tile(&s[t.array], t.m, t.k, t.n, 0, NULL);
      tiles++;
      macs += (uint64_t)t.m * (uint64_t)t.k * (uint64_t)t.n;
    }
    for (int a = 0; a < mxus; a++) if (s[a].done > cycles) cycles = s[a].done;
    tpu_mxu_gemm_result g;
    ck_assert(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TIMING, prec, M, N, K, NULL, NULL, NULL, &g) == TPU_OK);
    ck_assert_msg(g.cycles == cycles && g.tiles == tiles && g.macs == macs,
                  "%dx%d x%d db %d, %d x %d x %d %s: closed form %llu cycles %llu tiles, walk %llu %llu", cfg.rows,
                  cfg.cols, mxus, cfg.double_buffer, M, N, K, tpu_precision_name(prec), (unsigned long long)g.cycles,
                  (unsigned long long)g.tiles, (unsigned long long)cycles, (unsigned long long)tiles);
  }
  const tpu_mxu_config big = tpu_mxu_config_default();
  tpu_mxu_gemm_result g;
  ck_assert(tpu_mxu_gemm(&big, 1, TPU_FIDELITY_TIMING, TPU_PREC_BF16, 2147483647, 128, 128, NULL, NULL, NULL, &g) == TPU_OK);
  TU_EQ_U64(128 + 2147483647ull + 127 + 127, g.cycles);
}
END_TEST

START_TEST(Gemm_levels_agree_on_cycles_and_pe_equals_tile_bits) {
  tu_rng rng = { 314 };
  static const int arrays[][2] = { { 8, 8 }, { 4, 16 }, { 16, 4 }, { 5, 3 } };
  for (int rep = 0; rep < 24; rep++) {
    const int R = arrays[rep % 4][0], C = arrays[rep % 4][1];
    tpu_mxu_config cfg = cfg_of(R, C, rep % 3 != 0);
    int M = tu_range(&rng, 1, 30), N = tu_range(&rng, 1, 40), K = tu_range(&rng, 1, 40);
    int mxus = tu_range(&rng, 1, 3);
    tpu_precision prec = (tpu_precision)(rep % 3);
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *Cp = malloc(sizeof(float) * (size_t)(M * N)), *Ct = malloc(sizeof(float) * (size_t)(M * N));
    tu_fill(&rng, A, (size_t)(M * K), 0);
    tu_fill(&rng, B, (size_t)(K * N), 0);
    tpu_mxu_gemm_result rp, rt, rx;
    ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_PE, prec, M, N, K, A, B, Cp, &rp), TPU_OK);
    ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TILE, prec, M, N, K, A, B, Ct, &rt), TPU_OK);
    ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TIMING, prec, M, N, K, NULL, NULL, NULL, &rx), TPU_OK);
    TU_EQ_U64(rt.cycles, rp.cycles);
    TU_EQ_U64(rt.cycles, rx.cycles);
    TU_EQ_U64(rt.macs, rp.macs);
    TU_EQ_U64(rt.tiles, rx.tiles);
    tu_assert_same_f32(Ct, Cp, (size_t)(M * N), "gemm C, pe vs tile");
    free(A); free(B); free(Cp); free(Ct);
  }
  /* one on the default array, K and N past one tile */
  tpu_mxu_config cfg = tpu_mxu_config_default();
  const int M = 40, N = 150, K = 200;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
  float *Cp = malloc(sizeof(float) * M * N), *Ct = malloc(sizeof(float) * M * N);
  tu_fill(&rng, A, (size_t)M * K, 0);
  tu_fill(&rng, B, (size_t)K * N, 0);
  tpu_mxu_gemm_result rp, rt;
  ck_assert_int_eq(tpu_mxu_gemm(&cfg, 1, TPU_FIDELITY_PE, TPU_PREC_BF16, M, N, K, A, B, Cp, &rp), TPU_OK);
  ck_assert_int_eq(tpu_mxu_gemm(&cfg, 1, TPU_FIDELITY_TILE, TPU_PREC_BF16, M, N, K, A, B, Ct, &rt), TPU_OK);
  TU_EQ_U64(rt.cycles, rp.cycles);
  tu_assert_same_f32(Ct, Cp, (size_t)M * N, "gemm 128x128, pe vs tile");
  free(A); free(B); free(Cp); free(Ct);
}
END_TEST

/* Slow: many more sequences on the default array. */
START_TEST(Pe_and_tile_models_agree_on_many_full_size_sequences) {
  tu_rng rng = { 77 };
  for (int rep = 0; rep < 200; rep++)
    random_sequence(&rng, 128, 128, rep % 2 == 0, 8, 300, rep % 5 == 0);
  for (int rep = 0; rep < 300; rep++)
    random_sequence(&rng, tu_range(&rng, 1, 300), tu_range(&rng, 1, 300), rep % 2 == 0, 8, 80, rep % 3 == 0);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** limits and oom
** ================================================================== */

START_TEST(Push_rejects_bad_shapes_and_leaves_the_queue_alone) {
  tpu_mxu *m = make(8, 4, true);
  const tpu_mxu_tile ok = tile_of(3, 8, 4, 0);
  tpu_mxu_tile bad[12];
  for (int i = 0; i < 12; i++) bad[i] = ok;
  bad[0].m = 0; bad[1].k = 0; bad[2].k = 9; bad[3].n = 0; bad[4].n = 5; bad[5].m = -1;
  bad[6].act = NULL; bad[7].w = NULL; bad[8].out = NULL; bad[9].lda = 7; bad[10].ldw = 3;
  bad[11].ldo = 3;
  for (int i = 0; i < 12; i++) {
    ck_assert_msg(tpu_mxu_push(m, &bad[i]) == TPU_ERR_CONFIG, "bad tile %d accepted", i);
    ck_assert(tpu_mxu_idle(m));
  }
  TU_EQ_U64(0, tpu_mxu_run(m));
  ck_assert_int_eq(tpu_mxu_push(m, &ok), TPU_OK);
  ck_assert(!tpu_mxu_idle(m));
  TU_EQ_U64(8 + 2 + 7 + 3 + 1, tpu_mxu_run(m));
  tpu_mxu_destroy(m);
}
END_TEST

START_TEST(Create_rejects_impossible_geometry) {
  static const int bad[][2] = { { 0, 8 }, { 8, 0 }, { -1, 8 }, { 1025, 8 }, { 8, 1025 } };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tpu_mxu_config c = cfg_of(bad[i][0], bad[i][1], true);
    tpu_mxu *m = (tpu_mxu *)&c;
    ck_assert_int_eq(tpu_mxu_create(&c, &m), TPU_ERR_CONFIG);
    ck_assert_ptr_null(m);
  }
  tpu_mxu_config c = cfg_of(1024, 1, false);
  tpu_mxu *m;
  ck_assert_int_eq(tpu_mxu_create(&c, &m), TPU_OK);
  ck_assert_int_eq(tpu_mxu_get_config(m)->rows, 1024);
  tpu_mxu_destroy(m);
  tpu_mxu_destroy(NULL);
}
END_TEST


static tpu_status create_and_push(void *unused) {
  (void)unused;
  tpu_mxu_config c = cfg_of(8, 8, true);
  tpu_mxu *m = (tpu_mxu *)&c;
  tpu_status st = tpu_mxu_create(&c, &m);
  if (st != TPU_OK) {
    ck_assert_ptr_null(m);
    return st;
  }
  for (int i = 0; i < 40 && st == TPU_OK; i++) {    /* the queue grows past its first block */
    tpu_mxu_tile t = tile_of(1, 1, 1, 0);
    st = tpu_mxu_push(m, &t);
  }
  tpu_mxu_run(m);                      /* what was queued still runs */
  ck_assert(tpu_mxu_idle(m));
  tpu_mxu_destroy(m);
  return st;
}
START_TEST(Create_and_push_survive_every_allocation_failure) {
  tu_oom_sweep(50, create_and_push, NULL);
}
END_TEST

START_TEST(Ticks_allocate_nothing) {
  tpu_mxu *m = make(16, 16, true);
  for (int i = 0; i < 2000; i++) {
    tpu_mxu_tile t = tile_of(5, 16, 16, 0);
    ck_assert_int_eq(tpu_mxu_push(m, &t), TPU_OK);
  }
  tu_alloc_fail(0);
  for (int i = 0; i < 10000; i++) tpu_mxu_tick(m);
  tpu_mxu_view_cells(m, &(tpu_mxu_view){ 0 });
  ck_assert_int_eq(tu_alloc_restore(), 0);
  tpu_mxu_destroy(m);
}
END_TEST
/* }================================================================== */

/* The tile walk visits every (N-tile, pass, K-tile) of a GEMM exactly once,
** in mxu.h's order (N-tiles outer, then passes, then K-tiles), each tile
** the whole of M, edge tiles cut to what is left, N-tiles dealt round-robin
** to the arrays. */
START_TEST(The_tile_walk_visits_every_tile_once_in_the_documented_order) {
  tu_rng rng = { 77 };
  for (int trial = 0; trial < 300; trial++) {
    const tpu_mxu_config cfg = { .rows = tu_range(&rng, 1, 9), .cols = tu_range(&rng, 1, 9), .double_buffer = true };
    const int M = tu_range(&rng, 1, 40), N = tu_range(&rng, 1, 60), K = tu_range(&rng, 1, 60);
    const int arrays = tu_range(&rng, 1, 8);
    const tpu_precision prec = (tpu_precision)tu_range(&rng, 0, 2);
    const int passes = tpu_precision_passes(prec);
    const int ntn = (N + cfg.cols - 1) / cfg.cols, ntk = (K + cfg.rows - 1) / cfg.rows;
    char *seen = calloc((size_t)(ntn * passes * ntk), 1);
    tpu_mxu_walk w;
    tpu_mxu_walk_tile t;
    tpu_mxu_walk_init(&w, &cfg, arrays, prec, M, N, K);
    int count = 0;
    for (int nt = 0; nt < ntn; nt++)
      for (int p = 0; p < passes; p++)
        for (int kt = 0; kt < ntk; kt++, count++) {
          ck_assert_msg(tpu_mxu_walk_next(&w, &t), "trial %d: the walk stops after %d tiles", trial, count);
          int ap, bp;
          tpu_precision_pass(prec, p, &ap, &bp);
          const int n0 = nt * cfg.cols, k0 = kt * cfg.rows;
          ck_assert_msg(t.n0 == n0 && t.k0 == k0 && t.pass == p, "trial %d tile %d: (n0 %d, pass %d, k0 %d), "
                        "expected (%d, %d, %d)", trial, count, t.n0, t.pass, t.k0, n0, p, k0);
          ck_assert_int_eq(t.m, M);
          ck_assert_int_eq(t.n, N - n0 < cfg.cols ? N - n0 : cfg.cols);
          ck_assert_int_eq(t.k, K - k0 < cfg.rows ? K - k0 : cfg.rows);
          ck_assert_int_eq(t.array, nt % arrays);
          ck_assert_int_eq(t.a_part, ap);
          ck_assert_int_eq(t.b_part, bp);
          ck_assert(t.first == (p == 0 && kt == 0));
          char *s = &seen[(t.n0 / cfg.cols * passes + t.pass) * ntk + t.k0 / cfg.rows];
          ck_assert_msg(!*s, "trial %d: tile (n0 %d, pass %d, k0 %d) twice", trial, t.n0, t.pass, t.k0);
          *s = 1;
        }
    ck_assert_msg(!tpu_mxu_walk_next(&w, &t), "trial %d: the walk goes on after %d tiles", trial, count);
    ck_assert(!tpu_mxu_walk_next(&w, &t));                 /* and stays done */
    free(seen);
  }
}
END_TEST

START_TEST(Dataflow_names_round_trip_and_unknown_ones_are_refused) {
  for (int d = 0; d < 3; d++) {
    tpu_mxu_dataflow out;
    ck_assert(tpu_mxu_dataflow_parse(tpu_mxu_dataflow_name((tpu_mxu_dataflow)d), &out));
    ck_assert_int_eq((int)out, d);
  }
  tpu_mxu_dataflow out;
  ck_assert(!tpu_mxu_dataflow_parse("WS", &out));
  ck_assert(!tpu_mxu_dataflow_parse("", &out));
}
END_TEST

int main(void) {
  Suite *s = suite_create("mxu");
  TU_CASE(s, "timing", 60, Precision_passes_are_the_kept_products_smallest_first,
          The_tile_walk_visits_every_tile_once_in_the_documented_order,
          One_by_one_array_takes_load_plus_stream_cycles,
          Eight_by_eight_single_vector_tile_costs_K_plus_fill_and_drain,
          Double_buffering_hides_the_next_load_single_does_not, Earliest_delays_the_load_and_nothing_else);
  TU_CASE(s, "view", 60, Computing_cells_form_the_diagonal_band_of_the_formula,
          Single_tile_view_at_chosen_cycles_matches_hand_figures);
  TU_CASE(s, "functional", 120, Pe_and_tile_models_agree_on_random_sequences,
          The_timing_closed_form_equals_feeding_every_tile,
          Special_values_give_the_same_bits_in_both_models, Every_kernel_build_gives_the_same_bits,
          Skipping_idle_cycles_changes_neither_view_nor_results,
          Gemm_levels_agree_on_cycles_and_pe_equals_tile_bits);
  TU_CASE(s, "limits", 60, Push_rejects_bad_shapes_and_leaves_the_queue_alone,
          Create_rejects_impossible_geometry, Ticks_allocate_nothing,
          Dataflow_names_round_trip_and_unknown_ones_are_refused);
  TU_CASE(s, "oom", 60, Create_and_push_survive_every_allocation_failure);
  TU_SLOW_CASE(s, "full_size", 600, Pe_and_tile_models_agree_on_many_full_size_sequences);
  return tu_main(s);
}
