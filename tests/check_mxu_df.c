/*
** check_mxu_df.c -- tpusim's own output- and input-stationary dataflows
** (mxu.h, Dataflows): hand counts; the PE-level model of the os array
** (mxu_os.c, every PE stepped every cycle with values) against the tile level
** (tpu_mxu_sched + tpu_mxu_tile_compute) on random tile sequences and on
** the tile walk of random GEMMs; is at the PE level (the ws array with the
** operands' roles swapped, tpu_mxu_gemm) against the tile level; the
** timing level's closed form against feeding every tile, several hundred
** shapes; the walk's order; and the values: is and os against ws, bit for
** bit where mxu.h says they agree, os against its own fmaf chain where not.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mxu/mxu_int.h"
#include "tests/test_util.h"


static tpu_mxu_config cfg_df(int rows, int cols, tpu_mxu_dataflow df) {
  return (tpu_mxu_config){ .rows = rows, .cols = cols, .double_buffer = true, .dataflow = df };
}

/* The os PE model (mxu_os.c, every PE every cycle with values) on tiles
** t[0..n): its cycle count, with its self-checks (no bank restarted early,
** no operands of two tiles meeting, every result written at the header's
** cycle) asserted. */
static uint64_t os_pe_run(int R, int C, const tpu_mxu_tile *t, int n, uint64_t *s) {
  const tpu_mxu_config cfg = { .rows = R, .cols = C, .double_buffer = true, .dataflow = TPU_MXU_OS };
  mxu_os_stats st;
  ck_assert_int_eq(mxu_os_run(&cfg, t, n, s, &st), TPU_OK);
  ck_assert_msg(st.hazards == 0 && st.mismatches == 0 && st.late == 0,
                "os PE model %dx%d: %llu bank hazards, %llu operand mismatches, %llu results off the formula", R, C,
                (unsigned long long)st.hazards, (unsigned long long)st.mismatches, (unsigned long long)st.late);
  uint64_t macs = 0;
  for (int j = 0; j < n; j++) macs += (uint64_t)t[j].m * (uint64_t)t[j].k * (uint64_t)t[j].n;
  TU_EQ_U64(macs, st.macs);
  return st.cycles;
}

/* {==================================================================
** Hand counts
** ================================================================== */
static uint64_t sched_cycles(int R, int C, tpu_mxu_dataflow df, const int (*sh)[3], int n) {
  const tpu_mxu_config cfg = cfg_df(R, C, df);
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &cfg);
  for (int i = 0; i < n; i++) tpu_mxu_sched_tile(&s, sh[i][0], sh[i][1], sh[i][2], 0, NULL);
  return s.done;
}
#define SCHED(R, C, df, ...) sched_cycles((R), (C), (df), (const int[][3]){ __VA_ARGS__ }, \
                                          (int)(sizeof((const int[][3]){ __VA_ARGS__ }) / sizeof(int[3])))

START_TEST(Hand_counts_for_os_and_is_tiles) {
  /* os, shapes (m, k, n): 1x1 array, K = 5: MACs at 0..4, written at 5 */
  TU_EQ_U64(6, SCHED(1, 1, TPU_MXU_OS, { 1, 5, 1 }));
  /* 4x4, 4 x 3 x 4: last = s + K + (M-1) + (rows-1) + (N-1) = 0 + 3 + 3 + 3 + 3 */
  TU_EQ_U64(13, SCHED(4, 4, TPU_MXU_OS, { 4, 3, 4 }));
  /* 8x8, 2 x 3 x 5: rows - 1 always (the chain runs to the bottom): 3 + 1 + 7 + 4 */
  TU_EQ_U64(16, SCHED(8, 8, TPU_MXU_OS, { 2, 3, 5 }));
  /* two 4 x 3 x 4 tiles: s1 = max(3, 0 + 3 + 4 - 3) = 4 (the chain), last 4 + 12 */
  TU_EQ_U64(17, SCHED(4, 4, TPU_MXU_OS, { 4, 3, 4 }, { 4, 3, 4 }));
  /* K = 10 > M = 4: the edges bind, s1 = 10, last 10 + 10 + 9 */
  TU_EQ_U64(30, SCHED(4, 4, TPU_MXU_OS, { 4, 10, 4 }, { 4, 10, 4 }));
  /* is, shapes (m, k, n): stationary k x m, n streams. 8x8, 3 x 8 x 5: load 0..7,
  ** s = 8, last = 8 + (N-1) + 7 + (M-1) = 8 + 4 + 7 + 2 */
  TU_EQ_U64(22, SCHED(8, 8, TPU_MXU_IS, { 3, 8, 5 }));
  /* two: L1 = s0 = 8 (shadow), s1 = max(16, 8 + 5) = 16, last 16 + 4 + 7 + 2 */
  TU_EQ_U64(30, SCHED(8, 8, TPU_MXU_IS, { 3, 8, 5 }, { 3, 8, 5 }));
  /* 128^3 on 128x128 costs 510 in all three dataflows */
  for (int d = 0; d < 3; d++) TU_EQ_U64(510, SCHED(128, 128, (tpu_mxu_dataflow)d, { 128, 128, 128 }));
}
END_TEST

START_TEST(Os_without_a_second_bank_is_refused) {
  tpu_mxu_config cfg = cfg_df(8, 8, TPU_MXU_OS);
  ck_assert_int_eq(tpu_mxu_config_check(&cfg), TPU_OK);
  cfg.double_buffer = false;
  ck_assert_int_eq(tpu_mxu_config_check(&cfg), TPU_ERR_CONFIG);
  cfg.double_buffer = true;
  cfg.dataflow = (tpu_mxu_dataflow)3;
  ck_assert_int_eq(tpu_mxu_config_check(&cfg), TPU_ERR_CONFIG);
  tpu_mxu *m = NULL;
  cfg.dataflow = TPU_MXU_IS;
  ck_assert_int_eq(tpu_mxu_create(&cfg, &m), TPU_ERR_CONFIG);
  ck_assert_ptr_null(m);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The os PE model against the tile level
** ================================================================== */
/* One random sequence of os tiles on R x C: the PE model and the tile
** level (tpu_mxu_sched, tpu_mxu_tile_compute with no pass-through) must
** give the same cycles, start cycles and bits. */
static void os_sequence_check(tu_rng *rng, int R, int C, bool specials) {
  enum { MAXT = 6, MAXK = 40 };
  const int n = tu_range(rng, 1, MAXT);
  tpu_mxu_tile t[MAXT] = { { 0 } };
  float *A[MAXT], *W[MAXT];
  float *o_pe = malloc(sizeof(float) * (size_t)(R * C)), *o_tile = malloc(sizeof(float) * (size_t)(R * C));
  tu_fill(rng, o_pe, (size_t)(R * C), 0);
  memcpy(o_tile, o_pe, sizeof(float) * (size_t)(R * C));
  const tpu_mxu_config cfg = cfg_df(R, C, TPU_MXU_OS);
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &cfg);
  uint64_t want_s[MAXT], got_s[MAXT];
  for (int i = 0; i < n; i++) {
    const int pick = tu_range(rng, 0, 7);
    const int m = pick == 0 ? 1 : pick == 1 ? R : tu_range(rng, 1, R);
    const int k = pick == 2 ? 1 : pick == 3 ? tu_range(rng, 1, 3) : tu_range(rng, 1, MAXK);
    const int nn = pick == 4 ? 1 : pick == 5 ? C : tu_range(rng, 1, C);
    A[i] = malloc(sizeof(float) * (size_t)(m * k));
    W[i] = malloc(sizeof(float) * (size_t)(k * nn));
    tu_fill(rng, A[i], (size_t)(m * k), 1);
    tu_fill(rng, W[i], (size_t)(k * nn), 1);
    if (specials && tu_range(rng, 0, 2) == 0) A[i][tu_range(rng, 0, m * k - 1)] = -0.0f;
    if (specials && tu_range(rng, 0, 3) == 0) W[i][tu_range(rng, 0, k * nn - 1)] = INFINITY;
    const uint64_t earliest = tu_range(rng, 0, 3) == 0 ? (uint64_t)tu_range(rng, 0, 4 * (R + C)) : 0;
    t[i] = (tpu_mxu_tile){ .m = m, .k = k, .n = nn, .act = A[i], .lda = k, .w = W[i], .ldw = nn, .out = o_pe,
                           .ldo = C, .accumulate = tu_range(rng, 0, 1) == 1, .earliest = earliest };
    tpu_mxu_tile_times tt;
    tpu_mxu_sched_tile(&s, m, k, nn, earliest, &tt);
    want_s[i] = tt.stream_start;
    tpu_mxu_tile x = t[i];
    x.out = o_tile;
    tpu_mxu_tile_compute(k, &x);
  }
  const uint64_t cycles = os_pe_run(R, C, t, n, got_s);
  ck_assert_msg(cycles == s.done, "os %dx%d, %d tiles: PE model %llu cycles, tile level %llu", R, C, n,
                (unsigned long long)cycles, (unsigned long long)s.done);
  for (int i = 0; i < n; i++) TU_EQ_U64(want_s[i], got_s[i]);
  tu_assert_same_f32(o_tile, o_pe, (size_t)(R * C), "os accumulators, PE model vs tile level");
  for (int i = 0; i < n; i++) { free(A[i]); free(W[i]); }
  free(o_pe);
  free(o_tile);
}

START_TEST(Os_pe_model_and_tile_level_agree_on_random_sequences) {
  tu_rng rng = { 1616 };
  static const int arrays[][2] = { { 1, 1 }, { 1, 7 }, { 7, 1 }, { 4, 4 }, { 8, 8 }, { 3, 9 }, { 9, 2 } };
  for (int rep = 0; rep < 350; rep++) {
    const int R = rep % 2 ? arrays[rep % 7][0] : tu_range(&rng, 1, 9);
    const int C = rep % 2 ? arrays[rep % 7][1] : tu_range(&rng, 1, 9);
    os_sequence_check(&rng, R, C, rep % 5 == 0);
  }
}
END_TEST

/* A random GEMM's os walk through one PE model per array (each array's
** tiles in walk order), against tpu_mxu_gemm at the tile and timing levels
** (and at the PE level). */
static void os_gemm_check(tu_rng *rng, int R, int C, int mxus, tpu_precision prec, int M, int N, int K) {
  const tpu_mxu_config cfg = cfg_df(R, C, TPU_MXU_OS);
  const int parts = tpu_precision_parts(prec);
  float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
  float *Ap = malloc(sizeof(float) * (size_t)(M * K * parts)), *Bp = malloc(sizeof(float) * (size_t)(K * N * parts));
  float *Cpe = malloc(sizeof(float) * (size_t)(M * N)), *Ct = malloc(sizeof(float) * (size_t)(M * N));
  tu_fill(rng, A, (size_t)(M * K), 0);
  tu_fill(rng, B, (size_t)(K * N), 0);
  tpu_precision_split(prec, A, (size_t)(M * K), Ap);
  tpu_precision_split(prec, B, (size_t)(K * N), Bp);
  int count[3] = { 0, 0, 0 }, total = 0;
  tpu_mxu_walk w;
  tpu_mxu_walk_tile wt;
  tpu_mxu_walk_init(&w, &cfg, mxus, prec, M, N, K);
  while (tpu_mxu_walk_next(&w, &wt)) total++;
  tpu_mxu_tile *t = malloc(sizeof *t * (size_t)total * 3);
  uint64_t *s = malloc(sizeof *s * (size_t)total), cycles = 0;
  tpu_mxu_walk_init(&w, &cfg, mxus, prec, M, N, K);
  while (tpu_mxu_walk_next(&w, &wt))
    t[wt.array * total + count[wt.array]++] = (tpu_mxu_tile){
      .m = wt.m, .k = wt.k, .n = wt.n, .act = Ap + (size_t)(wt.a_part * M * K + wt.m0 * K), .lda = K,
      .w = Bp + (size_t)(wt.b_part * K * N + wt.n0), .ldw = N, .out = Cpe + (size_t)(wt.m0 * N + wt.n0), .ldo = N,
      .accumulate = !wt.first };
  for (int a = 0; a < mxus; a++) {
    const uint64_t c = os_pe_run(R, C, t + a * total, count[a], s);
    if (c > cycles) cycles = c;
  }
  tpu_mxu_gemm_result rt, rx;
  ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TILE, prec, M, N, K, A, B, Ct, &rt), TPU_OK);
  ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TIMING, prec, M, N, K, NULL, NULL, NULL, &rx), TPU_OK);
  ck_assert_msg(cycles == rt.cycles && cycles == rx.cycles, "os gemm %dx%d x%d %d x %d x %d %s: PE %llu, tile %llu, "
                "timing %llu", R, C, mxus, M, N, K, tpu_precision_name(prec), (unsigned long long)cycles,
                (unsigned long long)rt.cycles, (unsigned long long)rx.cycles);
  TU_EQ_U64((uint64_t)total, rt.tiles);
  TU_EQ_U64((uint64_t)total, rx.tiles);
  TU_EQ_U64(0, rx.weight_loads);
  tu_assert_same_f32(Ct, Cpe, (size_t)(M * N), "os gemm C, PE model vs tile level");
  /* and tpu_mxu_gemm's own PE level, which runs the same model over its walk */
  tpu_mxu_gemm_result rp;
  ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_PE, prec, M, N, K, A, B, Cpe, &rp), TPU_OK);
  TU_EQ_U64(cycles, rp.cycles);
  TU_EQ_U64(rt.macs, rp.macs);
  tu_assert_same_f32(Ct, Cpe, (size_t)(M * N), "os gemm C, pe vs tile level");
  free(A); free(B); free(Ap); free(Bp); free(Cpe); free(Ct); free(t); free(s);
}

START_TEST(Os_pe_model_agrees_with_tile_and_timing_levels_on_random_gemms) {
  tu_rng rng = { 2016 };
  for (int rep = 0; rep < 120; rep++) {
    const int R = rep % 6 == 0 ? 1 : tu_range(&rng, 1, 8), C = rep % 6 == 1 ? 1 : tu_range(&rng, 1, 8);
    os_gemm_check(&rng, R, C, tu_range(&rng, 1, 3), (tpu_precision)(rep % 3), tu_range(&rng, 1, 25),
                  tu_range(&rng, 1, 25), rep % 4 == 0 ? tu_range(&rng, 1, 3) : tu_range(&rng, 1, 30));
  }
}
END_TEST

/* is at the PE level (the ws array, operands' roles swapped) against the
** tile and timing levels: cycles, tiles and bits. */
START_TEST(Is_pe_tile_and_timing_levels_agree_on_random_gemms) {
  tu_rng rng = { 2017 };
  for (int rep = 0; rep < 80; rep++) {
    const int R = rep % 6 == 0 ? 1 : tu_range(&rng, 1, 9), C = rep % 6 == 1 ? 1 : tu_range(&rng, 1, 9);
    const tpu_mxu_config cfg = cfg_df(R, C, TPU_MXU_IS);
    const int M = tu_range(&rng, 1, 30), N = tu_range(&rng, 1, 30), K = tu_range(&rng, 1, 30);
    const int mxus = tu_range(&rng, 1, 3);
    const tpu_precision prec = (tpu_precision)(rep % 3);
    const bool acc = rep % 4 == 3;
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *Cp = malloc(sizeof(float) * (size_t)(M * N)), *Ct = malloc(sizeof(float) * (size_t)(M * N));
    tu_fill(&rng, A, (size_t)(M * K), 0);
    tu_fill(&rng, B, (size_t)(K * N), 0);
    tu_fill(&rng, Cp, (size_t)(M * N), 0);
    memcpy(Ct, Cp, sizeof(float) * (size_t)(M * N));
    tpu_mxu_gemm_result rp, rt, rx;
    ck_assert_int_eq(tpu_mxu_gemm_acc(&cfg, mxus, TPU_FIDELITY_PE, prec, M, N, K, A, B, Cp, acc, &rp), TPU_OK);
    ck_assert_int_eq(tpu_mxu_gemm_acc(&cfg, mxus, TPU_FIDELITY_TILE, prec, M, N, K, A, B, Ct, acc, &rt), TPU_OK);
    ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TIMING, prec, M, N, K, NULL, NULL, NULL, &rx), TPU_OK);
    ck_assert_msg(rp.cycles == rt.cycles && rt.cycles == rx.cycles, "is %dx%d x%d %d x %d x %d: pe %llu tile %llu "
                  "timing %llu", R, C, mxus, M, N, K, (unsigned long long)rp.cycles, (unsigned long long)rt.cycles,
                  (unsigned long long)rx.cycles);
    TU_EQ_U64(rt.tiles, rx.tiles);
    TU_EQ_U64(rt.macs, rp.macs);
    TU_EQ_U64(rt.weight_loads, rx.weight_loads);
    tu_assert_same_f32(Ct, Cp, (size_t)(M * N), "is gemm C, pe vs tile");
    free(A); free(B); free(Cp); free(Ct);
  }
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The timing level's closed form, the walk and the values
** ================================================================== */
/* The walk's tiles fed one by one to one schedule per array: the cycles
** (the slowest array's), tiles, MACs and loads the tile level counts. */
static tpu_mxu_gemm_result fed(const tpu_mxu_config *cfg, int mxus, tpu_precision prec, int M, int N, int K) {
  tpu_mxu_sched s[3];
  tpu_mxu_gemm_result r = { 0 };
  for (int a = 0; a < mxus; a++) tpu_mxu_sched_init(&s[a], cfg);
  tpu_mxu_walk w;
  tpu_mxu_walk_tile t;
  for (tpu_mxu_walk_init(&w, cfg, mxus, prec, M, N, K); tpu_mxu_walk_next(&w, &t); r.tiles++) {
    tpu_mxu_sched_tile(&s[t.array], t.m, t.k, t.n, 0, NULL);
    r.macs += (uint64_t)t.m * (uint64_t)t.k * (uint64_t)t.n;
    r.weight_loads += cfg->dataflow != TPU_MXU_OS;
    if (s[t.array].done > r.cycles) r.cycles = s[t.array].done;
  }
  return r;
}

/* Several hundred shapes per dataflow: partial folds, K-split, 1 x N and
** N x 1 arrays, 1..3 arrays, every precision; the closed form must give
** the cycles, tiles and MACs of feeding every tile of the walk. */
START_TEST(The_timing_closed_form_equals_feeding_every_tile_in_os_and_is) {
  tu_rng r = { 1617 };
  for (int it = 0; it < 600; it++) {
    const tpu_mxu_dataflow df = it % 2 ? TPU_MXU_IS : TPU_MXU_OS;
    const int pick = it % 7;
    const tpu_mxu_config cfg = cfg_df(pick == 0 ? 1 : tu_range(&r, 1, 9), pick == 1 ? 1 : tu_range(&r, 1, 9), df);
    const int mxus = tu_range(&r, 1, 3);
    const int M = pick == 2 ? tu_range(&r, 1, 3) : tu_range(&r, 1, 400);
    const int N = pick == 3 ? tu_range(&r, 1, 3) : tu_range(&r, 1, 400);
    const int K = pick == 4 ? tu_range(&r, 1, 3) : tu_range(&r, 1, 400);
    const tpu_precision prec = (tpu_precision)(it / 2 % 3);
    const tpu_mxu_gemm_result f = fed(&cfg, mxus, prec, M, N, K);
    tpu_mxu_gemm_result g;
    ck_assert(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TIMING, prec, M, N, K, NULL, NULL, NULL, &g) == TPU_OK);
    ck_assert_msg(g.cycles == f.cycles && g.tiles == f.tiles && g.macs == f.macs && g.weight_loads == f.weight_loads,
                  "%s %dx%d x%d, %d x %d x %d %s: closed form %llu cycles %llu tiles, fed %llu %llu",
                  tpu_mxu_dataflow_name(df), cfg.rows, cfg.cols, mxus, M, N, K, tpu_precision_name(prec),
                  (unsigned long long)g.cycles, (unsigned long long)g.tiles, (unsigned long long)f.cycles,
                  (unsigned long long)f.tiles);
  }
  /* huge shapes are timed at once: one full os tile row streams K = 2^31 - 1 */
  const tpu_mxu_config os = cfg_df(128, 128, TPU_MXU_OS);
  tpu_mxu_gemm_result g;
  ck_assert(tpu_mxu_gemm(&os, 1, TPU_FIDELITY_TIMING, TPU_PREC_BF16, 128, 128, 2147483647, NULL, NULL, NULL, &g) == TPU_OK);
  TU_EQ_U64(2147483647ull + 127 + 127 + 127 + 1, g.cycles);
  const tpu_mxu_config is = cfg_df(128, 128, TPU_MXU_IS);
  ck_assert(tpu_mxu_gemm(&is, 1, TPU_FIDELITY_TIMING, TPU_PREC_BF16, 128, 2147483647, 128, NULL, NULL, NULL, &g) == TPU_OK);
  TU_EQ_U64(128 + 2147483647ull + 127 + 127, g.cycles);
}
END_TEST

/* The walk visits every tile once in mxu.h's order for is and os. */
START_TEST(The_walk_covers_every_output_once_in_the_documented_order) {
  tu_rng rng = { 1618 };
  for (int trial = 0; trial < 300; trial++) {
    const tpu_mxu_dataflow df = trial % 2 ? TPU_MXU_IS : TPU_MXU_OS;
    const tpu_mxu_config cfg = cfg_df(tu_range(&rng, 1, 9), tu_range(&rng, 1, 9), df);
    const int M = tu_range(&rng, 1, 40), N = tu_range(&rng, 1, 40), K = tu_range(&rng, 1, 40);
    const int arrays = tu_range(&rng, 1, 8);
    const tpu_precision prec = (tpu_precision)tu_range(&rng, 0, 2);
    const int passes = tpu_precision_passes(prec);
    int *macs = calloc((size_t)(M * N), sizeof *macs);   /* products per output, every pass */
    tpu_mxu_walk w;
    tpu_mxu_walk_tile t, prev = { 0 };
    tpu_mxu_walk_init(&w, &cfg, arrays, prec, M, N, K);
    int count = 0;
    for (; tpu_mxu_walk_next(&w, &t); prev = t, count++) {
      if (df == TPU_MXU_IS) {
        ck_assert(t.n == N && t.n0 == 0 && t.m <= cfg.cols && t.k <= cfg.rows && t.m0 % cfg.cols == 0);
        ck_assert_int_eq(t.array, t.m0 / cfg.cols % arrays);
        ck_assert(t.first == (t.pass == 0 && t.k0 == 0));
      } else {
        ck_assert(t.k == K && t.k0 == 0 && t.m <= cfg.rows && t.n <= cfg.cols && t.m0 % cfg.rows == 0);
        ck_assert_int_eq(t.array, t.n0 / cfg.cols % arrays);
        ck_assert(t.first == (t.pass == 0));
      }
      if (count > 0) {   /* the documented nesting: the later tile comes after in (group, ..., innermost) */
        const long a = df == TPU_MXU_IS ? ((long)prev.m0 * passes + prev.pass) * K + prev.k0
                                        : ((long)prev.n0 * M + prev.m0) * passes + prev.pass;
        const long b = df == TPU_MXU_IS ? ((long)t.m0 * passes + t.pass) * K + t.k0
                                        : ((long)t.n0 * M + t.m0) * passes + t.pass;
        ck_assert_msg(b > a, "trial %d tile %d out of order", trial, count);
      }
      for (int i = 0; i < t.m; i++)
        for (int j = 0; j < t.n; j++) macs[(t.m0 + i) * N + t.n0 + j] += t.k;
    }
    ck_assert_int_eq(count, df == TPU_MXU_IS ? (M + cfg.cols - 1) / cfg.cols * passes * ((K + cfg.rows - 1) / cfg.rows)
                                            : (N + cfg.cols - 1) / cfg.cols * ((M + cfg.rows - 1) / cfg.rows) * passes);
    for (int i = 0; i < M * N; i++) ck_assert_int_eq(macs[i], K * passes);
    ck_assert(!tpu_mxu_walk_next(&w, &t));
    free(macs);
  }
}
END_TEST

/* One output of os: passes added in order, each an fmaf chain over all of K from +0.0. */
static float os_reference(tpu_precision prec, const float *Ap, const float *Bp, int M, int N, int K, int m, int n) {
  float acc = 0.0f;
  for (int p = 0; p < tpu_precision_passes(prec); p++) {
    int a, b;
    tpu_precision_pass(prec, p, &a, &b);
    float psum = 0.0f;
    for (int k = 0; k < K; k++)
      psum = fmaf(Ap[(size_t)(a * M * K + m * K + k)], Bp[(size_t)(b * K * N + k * N + n)], psum);
    acc = p == 0 ? psum : acc + psum;
  }
  return acc;
}

/* Tile-level values: is equals ws bit for bit always; os equals ws when
** K <= rows (random N(0,1) operands: no zero results), and its own fmaf
** chain (os_reference) always. */
START_TEST(Os_and_is_values_match_ws_bits_where_documented) {
  tu_rng rng = { 1619 };
  int os_differs = 0;
  for (int rep = 0; rep < 200; rep++) {
    const int R = tu_range(&rng, 1, 12), C = tu_range(&rng, 1, 12), mxus = tu_range(&rng, 1, 3);
    const int M = tu_range(&rng, 1, 40), N = tu_range(&rng, 1, 40);
    const int K = rep % 2 ? tu_range(&rng, 1, R) : tu_range(&rng, 1, 60);
    const tpu_precision prec = (tpu_precision)(rep % 3);
    const size_t mk = (size_t)(M * K), kn = (size_t)(K * N), mn = (size_t)(M * N);
    float *A = malloc(mk * sizeof *A), *B = malloc(kn * sizeof *B), *C3[3];
    tu_fill(&rng, A, mk, 0);
    tu_fill(&rng, B, kn, 0);
    for (int d = 0; d < 3; d++) {
      const tpu_mxu_config cfg = cfg_df(R, C, (tpu_mxu_dataflow)d);
      C3[d] = malloc(mn * sizeof *C3[d]);
      ck_assert_int_eq(tpu_mxu_gemm(&cfg, mxus, TPU_FIDELITY_TILE, prec, M, N, K, A, B, C3[d], NULL), TPU_OK);
    }
    tu_assert_same_f32(C3[TPU_MXU_WS], C3[TPU_MXU_IS], mn, "is vs ws");
    if (K <= R) tu_assert_same_f32(C3[TPU_MXU_WS], C3[TPU_MXU_OS], mn, "os vs ws, K <= rows");
    const int parts = tpu_precision_parts(prec);
    float *Ap = malloc(mk * (size_t)parts * sizeof *Ap), *Bp = malloc(kn * (size_t)parts * sizeof *Bp);
    tpu_precision_split(prec, A, mk, Ap);
    tpu_precision_split(prec, B, kn, Bp);
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++) {
        const float want = os_reference(prec, Ap, Bp, M, N, K, m, n);
        if (!tu_same_f32(want, C3[TPU_MXU_OS][m * N + n])) TU_EQ_BITS(want, C3[TPU_MXU_OS][m * N + n], "os vs its chain");
        os_differs += !tu_same_f32(C3[TPU_MXU_OS][m * N + n], C3[TPU_MXU_WS][m * N + n]);
      }
    free(A); free(B); free(Ap); free(Bp);
    for (int d = 0; d < 3; d++) free(C3[d]);
  }
  ck_assert_int_gt(os_differs, 0);   /* K > rows: os's one chain does round differently somewhere */
}
END_TEST
/* }================================================================== */

/* One small GEMM in each of os and is at the PE and tile levels, bf16x3
** (the operand parts and, for is at the PE level, their transposes). */
static tpu_status gemm_every_level(void *unused) {
  (void)unused;
  static float A[7 * 11], B[11 * 5], C[7 * 5];
  for (int i = 0; i < 7 * 11; i++) A[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < 11 * 5; i++) B[i] = (float)(i % 3) - 1.0f;
  tpu_status st = TPU_OK;
  for (int d = TPU_MXU_OS; d <= TPU_MXU_IS && st == TPU_OK; d++)
    for (int lv = TPU_FIDELITY_PE; lv <= TPU_FIDELITY_TILE && st == TPU_OK; lv++) {
      const tpu_mxu_config cfg = cfg_df(4, 3, (tpu_mxu_dataflow)d);
      st = tpu_mxu_gemm(&cfg, 2, (tpu_fidelity)lv, TPU_PREC_BF16X3, 7, 5, 11, A, B, C, NULL);
      ck_assert(st == TPU_OK || st == TPU_ERR_NOMEM);
    }
  return st;
}
START_TEST(Os_and_is_gemms_survive_every_allocation_failure) {
  ck_assert_int_eq(TPU_FIDELITY_PE + 1, TPU_FIDELITY_TILE);   /* the loop above walks pe, tile */
  tu_oom_sweep(200, gemm_every_level, NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("mxu_df");
  TU_CASE(s, "timing", 60, Hand_counts_for_os_and_is_tiles, Os_without_a_second_bank_is_refused,
          The_timing_closed_form_equals_feeding_every_tile_in_os_and_is,
          The_walk_covers_every_output_once_in_the_documented_order);
  TU_CASE(s, "pe", 120, Os_pe_model_and_tile_level_agree_on_random_sequences,
          Os_pe_model_agrees_with_tile_and_timing_levels_on_random_gemms,
          Is_pe_tile_and_timing_levels_agree_on_random_gemms);
  TU_CASE(s, "values", 60, Os_and_is_values_match_ws_bits_where_documented);
  TU_CASE(s, "oom", 60, Os_and_is_gemms_survive_every_allocation_failure);
  return tu_main(s);
}
