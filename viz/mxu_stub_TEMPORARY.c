/*
** mxu_stub_TEMPORARY.c -- a TEMPORARY stand-in for the PE-level MXU model
** (mxu/mxu_array.c), so the visualizer can be built and tested while that
** file is being written. DELETE THIS FILE when mxu/mxu_array.c lands.
**
** It can never be linked together with the real model: the whole body is
** compiled only while mxu/mxu_array.c does not exist. (It replaced the
** placeholder mxu/mxu_array_TEMPORARY.c, which only returned errors.) An
** incremental build does not notice the file appearing (the .d file cannot
** list a file that did not exist): `touch viz/mxu_stub_TEMPORARY.c` or
** delete this file; clean builds (CI) are always right.
**
** What it does: steps every cell every cycle with real values, following the
** timing and numerics contract of mxu.h. Tile times come from the tile-level
** formula (tpu_mxu_sched) at push time; each cycle, the cell (r,c) works on
** anti-diagonal d = t - r - c: activation m = d - s_i of the tile whose
** stream window [s_i, s_i + M_i) holds d, with that tile's weight (the swap
** travels with the wavefront). Partial sums are double-buffered and move one
** row down per cycle; the bottom row writes the accumulators.
** Cell states: COMPUTING = a real activation of a tile inside its K x N block;
** LOADING = the tile's weight row is shifting through the cell's shadow
** (column c sees the load of tile j during [L_j + c, L_j + c + K_j), and row r
** once r rows have entered); IDLE otherwise.
*/
#if !__has_include("mxu/mxu_array.c")
#include <math.h>
#include <string.h>

#include "mxu/mxu.h"

typedef struct stub_tile { tpu_mxu_tile t; tpu_mxu_tile_times tt; int64_t results_left; } stub_tile;

struct tpu_mxu {
  tpu_mxu_config cfg;
  tpu_mxu_sched sched;
  stub_tile *tiles; size_t ntiles, cap, first_live;
  uint64_t cycle;                 /* ticks done; the view shows cycle-1 */
  float *psum[2]; int cur;        /* psum leaving each cell, last cycle / this cycle */
  float *act, *weight;            /* this cycle's activation and active weight */
  uint8_t *state; int8_t *tile;
  int64_t *diag_tile, *diag_wtile, *col_load; /* per-cycle lookups */
  tpu_mxu_stats st;
};

tpu_status tpu_mxu_create(const tpu_mxu_config *cfg, tpu_mxu **out) {
  *out = NULL;
  if (tpu_mxu_config_check(cfg) != TPU_OK) return TPU_ERR_CONFIG;
  tpu_mxu *m = tpu_calloc(1, sizeof *m);
  if (!m) return TPU_ERR_NOMEM;
  m->cfg = *cfg;
  tpu_mxu_sched_init(&m->sched, cfg);
  size_t n = (size_t)cfg->rows * (size_t)cfg->cols, nd = (size_t)(cfg->rows + cfg->cols);
  m->psum[0] = tpu_calloc(n, sizeof(float));
  m->psum[1] = tpu_calloc(n, sizeof(float));
  m->act = tpu_calloc(n, sizeof(float));
  m->weight = tpu_calloc(n, sizeof(float));
  m->state = tpu_calloc(n, 1);
  m->tile = tpu_malloc(n);
  m->diag_tile = tpu_malloc(nd * sizeof(int64_t));
  m->diag_wtile = tpu_malloc(nd * sizeof(int64_t));
  m->col_load = tpu_malloc((size_t)cfg->cols * sizeof(int64_t));
  if (!m->psum[0] || !m->psum[1] || !m->act || !m->weight || !m->state || !m->tile ||
      !m->diag_tile || !m->diag_wtile || !m->col_load) {
    tpu_mxu_destroy(m);
    return TPU_ERR_NOMEM;
  }
  memset(m->tile, 0xff, n);
  *out = m;
  return TPU_OK;
}

void tpu_mxu_destroy(tpu_mxu *m) {
  if (!m) return;
  tpu_free(m->psum[0]); tpu_free(m->psum[1]); tpu_free(m->act); tpu_free(m->weight);
  tpu_free(m->state); tpu_free(m->tile); tpu_free(m->diag_tile); tpu_free(m->diag_wtile);
  tpu_free(m->col_load); tpu_free(m->tiles); tpu_free(m);
}

tpu_status tpu_mxu_push(tpu_mxu *m, const tpu_mxu_tile *t) {
  if (t->m < 1 || t->k < 1 || t->n < 1 || t->k > m->cfg.rows || t->n > m->cfg.cols ||
      !t->act || !t->w || !t->out)
    return TPU_ERR_CONFIG;
  if (m->ntiles == m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 16;
    stub_tile *p = tpu_realloc(m->tiles, nc * sizeof *p);
    if (!p) return TPU_ERR_NOMEM;
    m->tiles = p; m->cap = nc;
  }
  stub_tile *s = &m->tiles[m->ntiles++];
  s->t = *t;
  s->results_left = (int64_t)t->m * t->n;
  uint64_t earliest = t->earliest > m->cycle ? t->earliest : m->cycle;
  tpu_mxu_sched_tile(&m->sched, t->m, t->k, t->n, earliest, &s->tt);
  m->st.weight_loads++;
  return TPU_OK;
}

bool tpu_mxu_idle(const tpu_mxu *m) { return m->first_live == m->ntiles; }

void tpu_mxu_tick(tpu_mxu *m) {
  const int R = m->cfg.rows, C = m->cfg.cols;
  const int64_t t = (int64_t)m->cycle;
  const int64_t d0 = t - (R - 1) - (C - 1);       /* lowest diagonal in the array */
  /* per diagonal: the tile streaming on it (or -1) and the tile whose weights are active */
  size_t i = m->first_live;
  int64_t wt = i > 0 ? (int64_t)i - 1 : -1;
  for (int64_t d = d0; d <= t; d++) {
    while (i < m->ntiles && (int64_t)m->tiles[i].tt.stream_start <= d) { wt = (int64_t)i; i++; }
    int64_t on = -1;
    if (wt >= 0) {
      const stub_tile *s = &m->tiles[wt];
      if (d < (int64_t)s->tt.stream_start + s->t.m) on = wt;
    }
    m->diag_tile[d - d0] = on;
    m->diag_wtile[d - d0] = wt;
  }
  /* per column: the tile whose weights are being loaded (skewed by column) */
  for (int c = 0; c < C; c++) {
    int64_t tc = t - c, ld = -1;
    for (size_t j = m->first_live; j < m->ntiles; j++) {
      int64_t L = (int64_t)m->tiles[j].tt.load_start;
      if (L > tc) break;
      if (tc < L + m->tiles[j].t.k && c < m->tiles[j].t.n) { ld = (int64_t)j; break; }
    }
    m->col_load[c] = ld;
  }
  const float *old = m->psum[m->cur];
  float *nw = m->psum[m->cur ^ 1];
  bool any = false;
  for (int r = 0; r < R; r++) {
    for (int c = 0; c < C; c++) {
      const size_t x = (size_t)r * (size_t)C + (size_t)c;
      const int64_t d = t - r - c;
      float a = 0.0f, w = 0.0f;
      uint8_t state = TPU_MXU_CELL_IDLE;
      int8_t tix = -1;
      if (d >= 0) {
        int64_t on = m->diag_tile[d - d0], wi = m->diag_wtile[d - d0];
        if (wi >= 0) {
          const tpu_mxu_tile *wtile = &m->tiles[wi].t;
          if (r < wtile->k && c < wtile->n) w = wtile->w[(size_t)r * (size_t)wtile->ldw + (size_t)c];
        }
        if (on >= 0) {
          const tpu_mxu_tile *tl = &m->tiles[on].t;
          int64_t mi = d - (int64_t)m->tiles[on].tt.stream_start;
          tix = (int8_t)(on % 128);
          if (r < tl->k && c < tl->n) {
            a = tl->act[(size_t)mi * (size_t)tl->lda + (size_t)r];
            state = TPU_MXU_CELL_COMPUTING;
            any = true;
            m->st.macs++;
          }
        }
      }
      if (state == TPU_MXU_CELL_IDLE && m->col_load[c] >= 0) {
        const stub_tile *s = &m->tiles[m->col_load[c]];
        if (r <= t - c - (int64_t)s->tt.load_start) state = TPU_MXU_CELL_LOADING;
      }
      const float above = r == 0 ? 0.0f : old[x - (size_t)C];
      nw[x] = fmaf(a, w, above);
      m->act[x] = a;
      m->weight[x] = w;
      m->state[x] = state;
      m->tile[x] = tix;
    }
  }
  /* the bottom row writes the accumulators */
  for (int c = 0; c < C; c++) {
    const int64_t d = t - (R - 1) - c;
    if (d < 0) continue;
    int64_t on = m->diag_tile[d - d0];
    if (on < 0) continue;
    stub_tile *s = &m->tiles[on];
    if (c >= s->t.n) continue;
    int64_t mi = d - (int64_t)s->tt.stream_start;
    float *o = &s->t.out[(size_t)mi * (size_t)s->t.ldo + (size_t)c];
    float v = nw[(size_t)(R - 1) * (size_t)C + (size_t)c];
    *o = s->t.accumulate ? *o + v : v;
    if (--s->results_left == 0) m->st.tiles_done++;
  }
  while (m->first_live < m->ntiles && m->tiles[m->first_live].results_left == 0) m->first_live++;
  m->cur ^= 1;
  m->cycle++;
  m->st.cycles++;
  if (any) m->st.busy_cycles++;
}

uint64_t tpu_mxu_run(tpu_mxu *m) {
  while (!tpu_mxu_idle(m)) tpu_mxu_tick(m);
  return m->cycle;
}

void tpu_mxu_get_stats(const tpu_mxu *m, tpu_mxu_stats *out) { *out = m->st; }
const tpu_mxu_config *tpu_mxu_get_config(const tpu_mxu *m) { return &m->cfg; }

void tpu_mxu_view_cells(const tpu_mxu *m, tpu_mxu_view *out) {
  size_t n = (size_t)m->cfg.rows * (size_t)m->cfg.cols;
  if (out->state) memcpy(out->state, m->state, n);
  if (out->weight) memcpy(out->weight, m->weight, n * sizeof(float));
  if (out->act) memcpy(out->act, m->act, n * sizeof(float));
  if (out->psum) memcpy(out->psum, m->psum[m->cur], n * sizeof(float));
  if (out->tile) memcpy(out->tile, m->tile, n);
}
#else
/* The real PE model exists: this stand-in compiles to nothing. Delete it. */
typedef int tpu_mxu_stub_unused;
#endif
