/*
** mxu_gemm.c -- a GEMM of any shape through the MXU, at any fidelity.
**
** C (M x N) = A (M x K) . B (K x N). The operands are split into bf16 parts
** (one part for bf16, two for bf16x3, three for bf16x6: x = x0 + x1 + x2,
** each part the bf16 rounding of what the previous parts left). Work is
** dealt as tiles in the order of the tile walk (tpu_mxu_walk, mxu.h: N-tiles
** round-robin over the arrays, then passes, then K-tiles), so each result
** element is summed in one fixed order at every fidelity: the passes'
** K-tiles one after another in the f32 accumulators. The three levels share
** the walk; only what happens to a tile differs (formula only, formula +
** fast kernel, or the PE model).
*/
#include <limits.h>
#include <math.h>
#include <string.h>

#include "mxu/mxu.h"

void tpu_precision_split(tpu_precision p, const float *x, size_t n, float *out) {
  const int parts = tpu_precision_parts(p);
  for (size_t i = 0; i < n; i++) {
    float rest = x[i];
    for (int j = 0; j < parts; j++) {
      float part = tpu_bf16_round(rest);
      out[(size_t)j * n + i] = part;
      rest = isfinite(part) ? rest - part : 0.0f;
    }
  }
}

/* {==================================================================
** The tile walk
** ================================================================== */
void tpu_mxu_walk_init(tpu_mxu_walk *w, const tpu_mxu_config *cfg, int arrays, tpu_precision prec,
                       int64_t M, int64_t N, int64_t K) {
  *w = (tpu_mxu_walk){ .M = M, .N = N, .K = K, .rows = cfg->rows, .cols = cfg->cols, .arrays = arrays,
                       .passes = tpu_precision_passes(prec) };
  for (int i = 0; i < w->passes; i++) {
    int a, b;
    tpu_precision_pass(prec, i, &a, &b);
    w->a_part[i] = (int8_t)a;
    w->b_part[i] = (int8_t)b;
  }
}

bool tpu_mxu_walk_next(tpu_mxu_walk *w, tpu_mxu_walk_tile *t) {
  const int64_t n0 = w->nt * w->cols;
  if (n0 >= w->N) return false;
  /* k0 < K and n0 < N, each at most 2^31: they fit an int */
  *t = (tpu_mxu_walk_tile){ .m = w->M, .k = (int)(w->K - w->k0 < w->rows ? w->K - w->k0 : w->rows),
                            .n = (int)(w->N - n0 < w->cols ? w->N - n0 : w->cols), .k0 = (int)w->k0,
                            .n0 = (int)n0, .pass = w->pass, .a_part = w->a_part[w->pass],
                            .b_part = w->b_part[w->pass], .array = (int)(w->nt % w->arrays),
                            .first = w->k0 == 0 && w->pass == 0 };
  /* advance: K-tiles innermost, then passes, then N-tiles */
  if ((w->k0 += w->rows) >= w->K) {
    w->k0 = 0;
    if (++w->pass >= w->passes) { w->pass = 0; w->nt++; }
  }
  return true;
}
/* }================================================================== */

/* What to do with each tile of the walk. */
typedef struct gemm_run {
  const tpu_mxu_config *cfg;
  tpu_fidelity level;
  int mxus;
  tpu_mxu_sched sched[8];      /* timing and tile levels: one per array */
  tpu_mxu *pe[8];              /* PE level */
  tpu_mxu_gemm_result res;
} gemm_run;

static tpu_status do_tile(gemm_run *w, int array, const tpu_mxu_tile *t) {
  w->res.tiles++;
  w->res.weight_loads++;
  w->res.macs += (uint64_t)t->m * (uint64_t)t->k * (uint64_t)t->n;
  if (w->level == TPU_FIDELITY_PE) return tpu_mxu_push(w->pe[array], t);
  tpu_mxu_sched_tile(&w->sched[array], t->m, t->k, t->n, 0, NULL);
  if (w->level == TPU_FIDELITY_TILE) tpu_mxu_tile_compute(w->cfg->rows, t);
  return TPU_OK;
}

/* {==================================================================
** The timing level in closed form. An array's tiles in walk order are its
** N-tiles one after another, each the passes' K-tiles: runs of identical
** tiles. The schedule (mxu_sched.c) is a max-plus recurrence that, once
** past the first tile (after which 'earliest' no longer binds), is shift
** invariant: if feeding a block of tiles moved every time of the state by
** the same D as feeding the same block before, every further copy of the
** block moves it by D again. So a run of identical tiles, or a row of
** identical N-tiles, is fed a few times until two copies move the state
** alike, then the rest are added as multiples of D. The cycles are those
** of feeding every tile (tests/check_mxu.c compares the two); the cost is
** independent of the GEMM's size.
** ================================================================== */
typedef struct sched_mark { uint64_t loader_free, prev_stream, done; } sched_mark;
static sched_mark mark_of(const tpu_mxu_sched *s) { return (sched_mark){ s->loader_free, s->prev_stream, s->done }; }
/* The shift D when b - a == c - b on every field (and D > 0), else 0. */
static uint64_t same_shift(sched_mark a, sched_mark b, sched_mark c) {
  const uint64_t d = b.loader_free - a.loader_free;
  if (d == 0 || c.loader_free - b.loader_free != d || b.prev_stream - a.prev_stream != d ||
      c.prev_stream - b.prev_stream != d || b.done - a.done != d || c.done - b.done != d)
    return 0;
  return d;
}
/* *x += a * b, saturated at TPU_MXU_MAX_COUNT (which sets *ovf): the
** counters stay far from wrapping whatever the shape, and a GEMM that gets
** there fails (tpu_mxu_gemm_acc). */
static void add_mul(uint64_t *x, uint64_t a, uint64_t b, bool *ovf) {
  uint64_t p, r;
  if (__builtin_mul_overflow(a, b, &p) || __builtin_add_overflow(*x, p, &r) || r > TPU_MXU_MAX_COUNT) {
    *x = TPU_MXU_MAX_COUNT;
    *ovf = true;
  } else {
    *x = r;
  }
}
static void shift(tpu_mxu_sched *s, uint64_t d, uint64_t copies, bool *ovf) {
  add_mul(&s->loader_free, d, copies, ovf);
  add_mul(&s->prev_stream, d, copies, ovf);
  add_mul(&s->done, d, copies, ovf);
}

/* 'count' identical tiles (m, k, n) through s. */
static void sched_run(tpu_mxu_sched *s, int64_t m, int k, int n, uint64_t count, bool *ovf) {
  sched_mark h[3] = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
  uint64_t i = 0;
  for (; i < count; i++) {
    tpu_mxu_sched_tile(s, m, k, n, 0, NULL);
    h[0] = h[1]; h[1] = h[2]; h[2] = mark_of(s);
    uint64_t d;
    if (i >= 2 && (d = same_shift(h[0], h[1], h[2])) != 0) {
      const uint64_t rest = count - i - 1, tile_macs = (uint64_t)m * (uint64_t)k * (uint64_t)n;
      shift(s, d, rest, ovf);
      s->tiles += rest;
      add_mul(&s->macs, rest, tile_macs, ovf);
      add_mul(&s->useful_cells_cycles, rest, tile_macs, ovf);
      return;
    }
  }
}

/* One N-tile of width n: every pass's K-tiles (full ones, then the rest). */
static void sched_ntile(tpu_mxu_sched *s, int rows, int passes, int64_t M, int64_t K, int n, bool *ovf) {
  for (int p = 0; p < passes; p++) {
    if (K / rows) sched_run(s, M, rows, n, (uint64_t)(K / rows), ovf);
    if (K % rows) sched_run(s, M, (int)(K % rows), n, 1, ovf);
  }
}

/* Array a's cycles: its full N-tiles (fast-forwarded by copies), then the
** partial last N-tile when it falls to a. */
static void sched_array(tpu_mxu_sched *s, const tpu_mxu_config *cfg, int mxus, int a, int passes, int64_t M,
                        int64_t N, int64_t K, bool *ovf) {
  const int64_t full = N / cfg->cols, ntiles = (N + cfg->cols - 1) / cfg->cols;
  const int64_t mine = full > a ? (full - a + mxus - 1) / mxus : 0;   /* full N-tiles nt = a, a + mxus, ... */
  sched_mark h[3] = { { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
  for (int64_t i = 0; i < mine; i++) {
    sched_ntile(s, cfg->rows, passes, M, K, cfg->cols, ovf);
    h[0] = h[1]; h[1] = h[2]; h[2] = mark_of(s);
    uint64_t d;
    if (i >= 2 && (d = same_shift(h[0], h[1], h[2])) != 0) {
      const uint64_t rest = (uint64_t)(mine - i - 1);
      const uint64_t per = (uint64_t)passes * (uint64_t)((K + cfg->rows - 1) / cfg->rows);
      shift(s, d, rest, ovf);
      s->tiles += rest * per;                      /* at most 6 * 2^31 * 2^31: no overflow */
      add_mul(&s->macs, rest * (uint64_t)passes, (uint64_t)M * (uint64_t)K * (uint64_t)cfg->cols, ovf);
      s->useful_cells_cycles = s->macs;
      break;
    }
  }
  if (ntiles > full && (ntiles - 1) % mxus == a) sched_ntile(s, cfg->rows, passes, M, K, (int)(N % cfg->cols), ovf);
}
/* }================================================================== */

tpu_status tpu_mxu_gemm(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                        tpu_precision prec, int64_t M, int64_t N, int64_t K,
                        const float *A, const float *B, float *C,
                        tpu_mxu_gemm_result *out) {
  return tpu_mxu_gemm_acc(cfg, mxus, level, prec, M, N, K, A, B, C, false, out);
}

tpu_status tpu_mxu_gemm_acc(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                            tpu_precision prec, int64_t M, int64_t N, int64_t K,
                            const float *A, const float *B, float *C, bool accumulate,
                            tpu_mxu_gemm_result *out) {
  if (tpu_mxu_config_check(cfg) != TPU_OK || mxus < 1 || mxus > 8) return TPU_ERR_CONFIG;
  if (M < 1 || N < 1 || K < 1 || (unsigned)prec > TPU_PREC_BF16X6) return TPU_ERR_CONFIG;
  const int64_t maxdim = level == TPU_FIDELITY_TIMING ? TPU_MXU_MAX_GEMM_DIM : INT_MAX;
  if (M > maxdim || N > maxdim || K > maxdim) return TPU_ERR_CONFIG;
  if (level != TPU_FIDELITY_TIMING && (!A || !B || !C)) return TPU_ERR_CONFIG;

  const int parts = tpu_precision_parts(prec);
  const size_t nA = (size_t)M * (size_t)K, nB = (size_t)K * (size_t)N;
  float *Ap = NULL, *Bp = NULL;
  gemm_run w = { .cfg = cfg, .level = level, .mxus = mxus };
  tpu_status st = TPU_OK;

  /* A bf16 GEMM at the tile level needs no rounded copies: the fast kernel
  ** rounds its operands as it packs them (mxu.h), so A and B go in as they
  ** are (saving two M*K + K*N copies, which cost as much as the kernel). */
  const bool direct = level == TPU_FIDELITY_TILE && prec == TPU_PREC_BF16;
  if (level != TPU_FIDELITY_TIMING && !direct) {
    Ap = tpu_malloc(nA * (size_t)parts * sizeof *Ap);
    Bp = tpu_malloc(nB * (size_t)parts * sizeof *Bp);
    if (!Ap || !Bp) { st = TPU_ERR_NOMEM; goto done; }
    tpu_precision_split(prec, A, nA, Ap);
    tpu_precision_split(prec, B, nB, Bp);
  }
  for (int a = 0; a < mxus; a++) {
    tpu_mxu_sched_init(&w.sched[a], cfg);
    if (level == TPU_FIDELITY_PE && (st = tpu_mxu_create(cfg, &w.pe[a])) != TPU_OK) goto done;
  }

  if (level == TPU_FIDELITY_TIMING) {   /* the same cycles as the walk below, in closed form */
    bool ovf = false;
    for (int a = 0; a < mxus; a++) {
      sched_array(&w.sched[a], cfg, mxus, a, tpu_precision_passes(prec), M, N, K, &ovf);
      w.res.tiles += w.sched[a].tiles;
      add_mul(&w.res.macs, w.sched[a].macs, 1, &ovf);
      if (w.sched[a].done >= TPU_MXU_MAX_COUNT) ovf = true;
    }
    if (ovf) { st = TPU_ERR_RANGE; goto done; }
    w.res.weight_loads = w.res.tiles;
    goto cycles;
  }
  tpu_mxu_walk wk;
  tpu_mxu_walk_tile wt;
  tpu_mxu_walk_init(&wk, cfg, mxus, prec, M, N, K);
  while (tpu_mxu_walk_next(&wk, &wt)) {
    const float *Aq = direct ? A : Ap ? Ap + (size_t)wt.a_part * nA : NULL;
    const float *Bq = direct ? B : Bp ? Bp + (size_t)wt.b_part * nB : NULL;
    tpu_mxu_tile t = {
      .m = wt.m, .k = wt.k, .n = wt.n,
      .act = Aq ? Aq + wt.k0 : NULL, .lda = K,
      .w = Bq ? Bq + (size_t)wt.k0 * (size_t)N + (size_t)wt.n0 : NULL, .ldw = N,
      .out = C ? C + wt.n0 : NULL, .ldo = N,
      .accumulate = accumulate || !wt.first,
    };
    if ((st = do_tile(&w, wt.array, &t)) != TPU_OK) goto done;
  }

cycles:;
  uint64_t cycles = 0;
  for (int a = 0; a < mxus; a++) {
    uint64_t c = level == TPU_FIDELITY_PE ? tpu_mxu_run(w.pe[a]) : w.sched[a].done;
    if (c > cycles) cycles = c;
  }
  w.res.cycles = cycles;
  if (out) *out = w.res;
done:
  for (int a = 0; a < mxus; a++) tpu_mxu_destroy(w.pe[a]);
  tpu_free(Ap);
  tpu_free(Bp);
  return st;
}
