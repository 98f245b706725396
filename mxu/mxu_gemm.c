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

#include "mxu/mxu_int.h"

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
                       .passes = tpu_precision_passes(prec), .df = cfg->dataflow };
  for (int i = 0; i < w->passes; i++) {
    int a, b;
    tpu_precision_pass(prec, i, &a, &b);
    w->a_part[i] = (int8_t)a;
    w->b_part[i] = (int8_t)b;
  }
}

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ws and is: groups of 'cols' along N (ws) or M (is), then passes, then
** K-tiles; the other of M and N streams whole. */
static bool walk_next_ws(tpu_mxu_walk *w, tpu_mxu_walk_tile *t) {
  const bool is = w->df == TPU_MXU_IS;
  const int64_t g0 = w->nt * w->cols, G = is ? w->M : w->N;
  if (g0 >= G) return false;
  const int64_t width = min_i64(G - g0, w->cols);
  /* k0, g0 and (is) N fit an int: the walk runs only where values are held
  ** (dimensions up to INT_MAX) and, in ws, in the engine (M may be larger) */
  *t = (tpu_mxu_walk_tile){ .m = is ? width : w->M, .k = (int)min_i64(w->K - w->k0, w->rows),
                            .n = (int)(is ? w->N : width), .k0 = (int)w->k0, .n0 = is ? 0 : (int)g0,
                            .m0 = is ? (int)g0 : 0, .pass = w->pass, .a_part = w->a_part[w->pass],
                            .b_part = w->b_part[w->pass], .array = (int)(w->nt % w->arrays),
                            .first = w->k0 == 0 && w->pass == 0 };
  /* advance: K-tiles innermost, then passes, then groups */
  if ((w->k0 += w->rows) >= w->K) {
    w->k0 = 0;
    if (++w->pass >= w->passes) { w->pass = 0; w->nt++; }
  }
  return true;
}

/* os: N-tiles of 'cols', then M-tiles of 'rows', then passes; K streams whole. */
static bool walk_next_os(tpu_mxu_walk *w, tpu_mxu_walk_tile *t) {
  const int64_t n0 = w->nt * w->cols;
  if (n0 >= w->N) return false;
  *t = (tpu_mxu_walk_tile){ .m = min_i64(w->M - w->m0, w->rows), .k = (int)w->K, .n = (int)min_i64(w->N - n0, w->cols),
                            .k0 = 0, .n0 = (int)n0, .m0 = (int)w->m0,
                            .pass = w->pass, .a_part = w->a_part[w->pass], .b_part = w->b_part[w->pass],
                            .array = (int)(w->nt % w->arrays), .first = w->pass == 0 };
  if (++w->pass >= w->passes) {
    w->pass = 0;
    if ((w->m0 += w->rows) >= w->M) { w->m0 = 0; w->nt++; }
  }
  return true;
}

bool tpu_mxu_walk_next(tpu_mxu_walk *w, tpu_mxu_walk_tile *t) {
  return w->df == TPU_MXU_OS ? walk_next_os(w, t) : walk_next_ws(w, t);
}
/* }================================================================== */

/* What to do with each tile of the walk. */
typedef struct gemm_run {
  const tpu_mxu_config *cfg;
  tpu_fidelity level;
  int mxus;
  tpu_mxu_sched sched[TPU_MXU_MAX_ARRAYS];   /* timing and tile levels: one per array */
  tpu_mxu *pe[TPU_MXU_MAX_ARRAYS];            /* PE level (ws, is) */
  tpu_mxu_tile *os_tiles;      /* PE level, os: array a's tiles from a * os_cap */
  size_t os_cap;
  int os_n[TPU_MXU_MAX_ARRAYS];
  tpu_mxu_gemm_result res;
} gemm_run;

static tpu_status do_tile(gemm_run *w, int array, const tpu_mxu_tile *t) {
  w->res.tiles++;
  w->res.weight_loads += w->cfg->dataflow != TPU_MXU_OS;
  w->res.macs += (uint64_t)t->m * (uint64_t)t->k * (uint64_t)t->n;
  if (w->level == TPU_FIDELITY_PE && w->os_tiles) {   /* run when the walk is done (gemm_values) */
    w->os_tiles[(size_t)array * w->os_cap + (size_t)w->os_n[array]++] = *t;
    return TPU_OK;
  }
  if (w->level == TPU_FIDELITY_PE) return tpu_mxu_push(w->pe[array], t);
  tpu_mxu_sched_tile(&w->sched[array], t->m, t->k, t->n, 0, NULL);
  /* os sums all of K inside one PE: no pass-through rows (mxu.h, Numerics) */
  if (w->level == TPU_FIDELITY_TILE) tpu_mxu_tile_compute(w->cfg->dataflow == TPU_MXU_OS ? t->k : w->cfg->rows, t);
  return TPU_OK;
}

/* {==================================================================
** The timing level in closed form. An array's tiles in walk order are its
** groups (N-tiles in ws and os, M-tiles in is) one after another, each
** runs of identical tiles (ws, is: the passes' K-tiles; os: the full
** M-tiles' passes, then the last M-tile's). The schedule (mxu_sched.c) is
** a max-plus recurrence that, once past the first tile (after which
** 'earliest' no longer binds), is shift invariant: if feeding a block of
** tiles moved every time of the state by the same D as feeding the same
** block before, every further copy of the block moves it by D again. So a
** run of identical tiles, or a row of identical groups, is fed a few
** times until two copies move the state alike, then the rest are added as
** multiples of D. The cycles are those of feeding every tile
** (tests/check_mxu.c and check_mxu_df.c compare the two); the cost is
** independent of the GEMM's size.
** ================================================================== */
typedef struct sched_mark { uint64_t loader_free, prev_stream, done, out_free; } sched_mark;
/* out_free moves only in os; elsewhere prev_stream stands in for it */
static sched_mark mark_of(const tpu_mxu_sched *s) {
  return (sched_mark){ s->loader_free, s->prev_stream, s->done,
                       s->cfg.dataflow == TPU_MXU_OS ? s->out_free : s->prev_stream };
}
/* The shift D when b - a == c - b on every field (and D > 0), else 0. */
static uint64_t same_shift(sched_mark a, sched_mark b, sched_mark c) {
  const uint64_t d = b.loader_free - a.loader_free;
  if (d == 0 || c.loader_free - b.loader_free != d || b.prev_stream - a.prev_stream != d ||
      c.prev_stream - b.prev_stream != d || b.done - a.done != d || c.done - b.done != d ||
      b.out_free - a.out_free != d || c.out_free - b.out_free != d)
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
  if (s->cfg.dataflow == TPU_MXU_OS) add_mul(&s->out_free, d, copies, ovf);
}

/* 'count' identical tiles of the GEMM shape (m, k, n) through s. */
static void sched_run(tpu_mxu_sched *s, int64_t m, int64_t k, int64_t n, uint64_t count, bool *ovf) {
  sched_mark h[3] = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } };
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

/* One group of width w (mxu.h's walk): its tiles in walk order. */
static void sched_group(tpu_mxu_sched *s, int passes, int64_t M, int64_t N, int64_t K, int w, bool *ovf) {
  const int rows = s->cfg.rows;
  if (s->cfg.dataflow == TPU_MXU_OS) {
    if (M / rows) sched_run(s, rows, K, w, (uint64_t)(M / rows) * (uint64_t)passes, ovf);
    if (M % rows) sched_run(s, M % rows, K, w, (uint64_t)passes, ovf);
    return;
  }
  const bool is = s->cfg.dataflow == TPU_MXU_IS;
  for (int p = 0; p < passes; p++) {
    if (K / rows) sched_run(s, is ? w : M, rows, is ? N : w, (uint64_t)(K / rows), ovf);
    if (K % rows) sched_run(s, is ? w : M, K % rows, is ? N : w, 1, ovf);
  }
}

/* Array a's cycles: its full groups (fast-forwarded by copies), then the
** partial last group when it falls to a. */
static void sched_array(tpu_mxu_sched *s, int mxus, int a, int passes, int64_t M, int64_t N, int64_t K,
                        bool *ovf) {
  const int cols = s->cfg.cols;
  const int64_t G = s->cfg.dataflow == TPU_MXU_IS ? M : N;
  const int64_t full = G / cols, groups = (G + cols - 1) / cols;
  const int64_t mine = full > a ? (full - a + mxus - 1) / mxus : 0;   /* full groups g = a, a + mxus, ... */
  sched_mark h[3] = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } };
  for (int64_t i = 0; i < mine; i++) {
    const uint64_t tiles0 = s->tiles, macs0 = s->macs;
    sched_group(s, passes, M, N, K, cols, ovf);
    h[0] = h[1]; h[1] = h[2]; h[2] = mark_of(s);
    uint64_t d;
    if (i >= 2 && (d = same_shift(h[0], h[1], h[2])) != 0) {
      const uint64_t rest = (uint64_t)(mine - i - 1);
      shift(s, d, rest, ovf);
      s->tiles += rest * (s->tiles - tiles0);     /* at most 6 * 2^31 * 2^31: no overflow */
      add_mul(&s->macs, rest, s->macs - macs0, ovf);
      s->useful_cells_cycles = s->macs;
      break;
    }
  }
  if (groups > full && (groups - 1) % mxus == a) sched_group(s, passes, M, N, K, (int)(G % cols), ovf);
}
/* }================================================================== */

tpu_status tpu_mxu_gemm(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                        tpu_precision prec, int64_t M, int64_t N, int64_t K,
                        const float *A, const float *B, float *C,
                        tpu_mxu_gemm_result *out) {
  return tpu_mxu_gemm_acc(cfg, mxus, level, prec, M, N, K, A, B, C, false, out);
}

/* {==================================================================
** The tile and PE levels: the walk's tiles with values
** ================================================================== */
/* The operands as the tiles read them: each bf16 part of A (M x K) and of
** B (K x N) one after another, or A and B as they are (a bf16 GEMM at the
** tile level: the kernel rounds them). For is at the PE level the ws array
** holds the transposed activations: 'swap' makes At (K x M per part), Bt
** (N x K per part) and Ct (N x M), the tile's roles exchanged. */
typedef struct gemm_ops {
  const float *a, *b;          /* parts of A and B (At and Bt when swap) */
  float *c;                    /* C (Ct when swap) */
  size_t na, nb;               /* elements per part */
  int M, N, K;
  bool swap;
} gemm_ops;

static tpu_mxu_tile tile_of(const gemm_ops *o, const tpu_mxu_walk_tile *wt, bool accumulate) {
  const float *a = o->a + (size_t)wt->a_part * o->na, *b = o->b + (size_t)wt->b_part * o->nb;
  const size_t M = (size_t)o->M, N = (size_t)o->N, K = (size_t)o->K;
  if (o->swap)   /* B^T streams, A^T stays: C^T (N x M) = B^T . A^T */
    return (tpu_mxu_tile){ .m = wt->n, .k = wt->k, .n = wt->m, .act = b + wt->k0, .lda = (int)K,
                           .w = a + (size_t)wt->k0 * M + (size_t)wt->m0, .ldw = (int)M, .out = o->c + wt->m0,
                           .ldo = (int)M, .accumulate = accumulate || !wt->first };
  return (tpu_mxu_tile){ .m = wt->m, .k = wt->k, .n = wt->n, .act = a + (size_t)wt->m0 * K + (size_t)wt->k0,
                         .lda = (int)K, .w = b + (size_t)wt->k0 * N + (size_t)wt->n0, .ldw = (int)N,
                         .out = o->c + (size_t)wt->m0 * N + (size_t)wt->n0, .ldo = (int)N,
                         .accumulate = accumulate || !wt->first };
}

/* dst (count blocks of cols x rows) = each of count blocks of src (rows x cols) transposed. */
static void transpose(const float *src, float *dst, size_t rows, size_t cols, size_t count) {
  for (size_t p = 0; p < count; p++, src += rows * cols, dst += rows * cols)
    for (size_t i = 0; i < rows; i++)
      for (size_t j = 0; j < cols; j++) dst[j * rows + i] = src[i * cols + j];
}

/* Fills o from A, B, C (buf gets what must be freed). TPU_ERR_NOMEM if
** scratch can't be had. */
static tpu_status ops_make(gemm_ops *o, const gemm_run *w, tpu_precision prec, const float *A, const float *B,
                           float *C, bool accumulate, float **buf) {
  const size_t parts = (size_t)tpu_precision_parts(prec), na = o->na, nb = o->nb;
  const size_t mn = (size_t)o->M * (size_t)o->N;
  /* A bf16 GEMM at the tile level needs no rounded copies: the fast kernel
  ** rounds its operands as it packs them (mxu.h), so A and B go in as they
  ** are (saving two M*K + K*N copies, which cost as much as the kernel). */
  if (w->level == TPU_FIDELITY_TILE && prec == TPU_PREC_BF16) {
    o->a = A;
    o->b = B;
    o->c = C;
    return TPU_OK;
  }
  o->swap = w->level == TPU_FIDELITY_PE && w->cfg->dataflow == TPU_MXU_IS;
  const size_t n = (na + nb) * parts * (o->swap ? 2 : 1) + (o->swap ? mn : 0);
  float *p = *buf = tpu_malloc(n * sizeof *p);
  if (!p) return TPU_ERR_NOMEM;
  tpu_precision_split(prec, A, na, p);
  tpu_precision_split(prec, B, nb, p + na * parts);
  o->a = p;
  o->b = p + na * parts;
  o->c = C;
  if (o->swap) {
    float *at = p + (na + nb) * parts, *bt = at + na * parts;
    transpose(p, at, (size_t)o->M, (size_t)o->K, parts);
    transpose(p + na * parts, bt, (size_t)o->K, (size_t)o->N, parts);
    o->a = at;
    o->b = bt;
    o->c = bt + nb * parts;
    if (accumulate) transpose(C, o->c, (size_t)o->M, (size_t)o->N, 1);
  }
  return TPU_OK;
}

/* Every tile of the walk through do_tile, values included. */
static tpu_status gemm_values(gemm_run *w, tpu_precision prec, int64_t M, int64_t N, int64_t K, const float *A,
                              const float *B, float *C, bool accumulate) {
  gemm_ops o = { .na = (size_t)M * (size_t)K, .nb = (size_t)K * (size_t)N, .M = (int)M, .N = (int)N, .K = (int)K };
  float *buf = NULL;
  tpu_status st = ops_make(&o, w, prec, A, B, C, accumulate, &buf);
  tpu_mxu_walk wk;
  tpu_mxu_walk_tile wt;
  tpu_mxu_walk_init(&wk, w->cfg, w->mxus, prec, M, N, K);
  while (st == TPU_OK && tpu_mxu_walk_next(&wk, &wt)) {
    const tpu_mxu_tile t = tile_of(&o, &wt, accumulate);
    st = do_tile(w, wt.array, &t);
  }
  for (int a = 0; a < w->mxus && st == TPU_OK && w->level == TPU_FIDELITY_PE; a++) {
    mxu_os_stats os;
    if (w->os_tiles) st = mxu_os_run(w->cfg, w->os_tiles + (size_t)a * w->os_cap, w->os_n[a], NULL, &os);
    w->sched[a].done = w->os_tiles ? os.cycles : tpu_mxu_run(w->pe[a]);
  }
  if (st == TPU_OK && o.swap) transpose(o.c, C, (size_t)N, (size_t)M, 1);
  tpu_free(buf);
  return st;
}
/* }================================================================== */

tpu_status tpu_mxu_gemm_acc(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                            tpu_precision prec, int64_t M, int64_t N, int64_t K,
                            const float *A, const float *B, float *C, bool accumulate,
                            tpu_mxu_gemm_result *out) {
  if (tpu_mxu_config_check(cfg) != TPU_OK || mxus < 1 || mxus > TPU_MXU_MAX_ARRAYS) return TPU_ERR_CONFIG;
  if (M < 1 || N < 1 || K < 1 || (unsigned)prec > TPU_PREC_BF16X6) return TPU_ERR_CONFIG;
  const int64_t maxdim = level == TPU_FIDELITY_TIMING ? TPU_MXU_MAX_GEMM_DIM : INT_MAX;
  if (M > maxdim || N > maxdim || K > maxdim) return TPU_ERR_CONFIG;
  if (level != TPU_FIDELITY_TIMING && (!A || !B || !C)) return TPU_ERR_CONFIG;

  gemm_run w = { .cfg = cfg, .level = level, .mxus = mxus };
  tpu_mxu_config ws = *cfg;    /* the PE model is the ws array; is runs on it transposed */
  ws.dataflow = TPU_MXU_WS;
  tpu_status st = TPU_OK;
  const bool os_pe = level == TPU_FIDELITY_PE && cfg->dataflow == TPU_MXU_OS;
  for (int a = 0; a < mxus; a++) {
    tpu_mxu_sched_init(&w.sched[a], cfg);
    if (level == TPU_FIDELITY_PE && !os_pe && (st = tpu_mxu_create(&ws, &w.pe[a])) != TPU_OK) goto done;
  }
  if (os_pe) {   /* room for every tile of the walk on each array */
    w.os_cap = (size_t)((M + cfg->rows - 1) / cfg->rows) * (size_t)((N + cfg->cols - 1) / cfg->cols) *
               (size_t)tpu_precision_passes(prec);
    if (!(w.os_tiles = tpu_calloc(w.os_cap * (size_t)mxus, sizeof *w.os_tiles))) { st = TPU_ERR_NOMEM; goto done; }
  }
  if (level == TPU_FIDELITY_TIMING) {   /* the same cycles as the walk, in closed form */
    bool ovf = false;
    for (int a = 0; a < mxus; a++) {
      sched_array(&w.sched[a], mxus, a, tpu_precision_passes(prec), M, N, K, &ovf);
      w.res.tiles += w.sched[a].tiles;
      add_mul(&w.res.macs, w.sched[a].macs, 1, &ovf);
      if (w.sched[a].done >= TPU_MXU_MAX_COUNT) ovf = true;
    }
    if (ovf) { st = TPU_ERR_RANGE; goto done; }
    w.res.weight_loads = cfg->dataflow == TPU_MXU_OS ? 0 : w.res.tiles;
  } else if ((st = gemm_values(&w, prec, M, N, K, A, B, C, accumulate)) != TPU_OK) {
    goto done;
  }
  for (int a = 0; a < mxus; a++)
    if (w.sched[a].done > w.res.cycles) w.res.cycles = w.sched[a].done;
  if (out) *out = w.res;
done:
  for (int a = 0; a < mxus; a++) tpu_mxu_destroy(w.pe[a]);
  tpu_free(w.os_tiles);
  return st;
}
