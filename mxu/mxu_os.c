/*
** mxu_os.c -- the PE-level model of the output-stationary array (mxu.h,
** Dataflows), written from the header's paragraph: every PE every cycle,
** with values. Each cycle, in this order:
**   1. the sequencer starts the next tile if t >= earliest, the operand
**      edges are free (previous s + K) and its first result will leave
**      behind the previous tile's last (t + K >= previous s + K + M);
**   2. every column's output chain shifts down a row; a PE whose bank
**      holds a finished result boards it where the slot is empty (oldest
**      tile first); the slot at the bottom row is written into the
**      accumulators (overwrite or add) and leaves;
**   3. the A operands move right a PE and the B operands down a PE, the
**      edges taking A[r][k] (k = t - s - r) and B[k][c] (k = t - s - c);
**   4. every PE holding an A and a B (of one tile and one k) does
**      bank = fmaf(a, b, k == 0 ? +0.0 : bank) in bank tile % 2.
** It also counts what must never happen (a bank restarted before its
** result boarded, operands of two tiles meeting, a result written off the
** formula's cycle); tests/check_mxu_df.c asserts they stay 0 and that the
** cycles, start cycles and bits equal the tile level's.
*/
#include <math.h>

#include "mxu/mxu_int.h"

typedef struct os_op { float v; int tile, k; } os_op;          /* tile -1: empty */
typedef struct os_slot { float v; int tile, r; } os_slot;     /* tile -1: empty */

typedef struct os_pe {
  int R, C, n;
  const tpu_mxu_tile *t;       /* the tiles, in order */
  uint64_t *s;                 /* their start cycles */
  os_op *a, *b;                /* R*C: the operands each PE holds */
  float *bank;                 /* 2 per PE */
  int *bank_tile;              /* 2 per PE: -1 free */
  bool *bank_done;             /* 2 per PE: finished, waiting to board */
  os_slot *chain;              /* R*C */
  int issued, feed_head;       /* tiles started; first tile still feeding */
  uint64_t port_free, out_free, last_write, written, results;
  mxu_os_stats st;
} os_pe;

static void os_sequence(os_pe *p, uint64_t t) {
  if (p->issued >= p->n) return;
  const tpu_mxu_tile *x = &p->t[p->issued];
  const uint64_t K = (uint64_t)x->k;
  if (t < x->earliest || t < p->port_free || (p->issued > 0 && t + K < p->out_free)) return;
  p->s[p->issued++] = t;
  p->port_free = t + K;
  p->out_free = t + K + (uint64_t)x->m;
}

/* The oldest finished bank of PE i, or -1. */
static int os_ready_bank(const os_pe *p, size_t i) {
  int best = -1;
  for (int q = 0; q < 2; q++)
    if (p->bank_done[2 * i + (size_t)q] &&
        (best < 0 || p->bank_tile[2 * i + (size_t)q] < p->bank_tile[2 * i + (size_t)best]))
      best = q;
  return best;
}

static void os_write(os_pe *p, const os_slot *o, int c, uint64_t t) {
  const tpu_mxu_tile *x = &p->t[o->tile];
  float *dst = x->out + (size_t)o->r * (size_t)x->ldo + (size_t)c;
  *dst = x->accumulate ? *dst + o->v : o->v;
  const uint64_t want = p->s[o->tile] + (uint64_t)x->k + (uint64_t)o->r + (uint64_t)(p->R - 1) + (uint64_t)c;
  p->st.late += t != want;
  p->written++;
  p->last_write = t;
}

static void os_drain(os_pe *p, uint64_t t) {
  const int R = p->R, C = p->C;
  for (int c = 0; c < C; c++) {
    for (int r = R - 1; r > 0; r--) p->chain[r * C + c] = p->chain[(r - 1) * C + c];
    p->chain[c] = (os_slot){ 0.0f, -1, 0 };
    for (int r = 0; r < R; r++) {
      const size_t i = (size_t)(r * C + c);
      const int q = os_ready_bank(p, i);
      if (p->chain[i].tile >= 0 || q < 0) continue;
      p->chain[i] = (os_slot){ p->bank[2 * i + (size_t)q], p->bank_tile[2 * i + (size_t)q], r };
      p->bank_tile[2 * i + (size_t)q] = -1;
      p->bank_done[2 * i + (size_t)q] = false;
    }
    os_slot *bottom = &p->chain[(R - 1) * C + c];
    if (bottom->tile >= 0) os_write(p, bottom, c, t);
    bottom->tile = -1;
  }
}

/* What enters row r (A) or column c (B) at cycle t: only tiles whose
** operands are still entering (from feed_head on) can feed an edge. */
static os_op os_edge(const os_pe *p, bool is_a, int i, uint64_t t) {
  for (int j = p->feed_head; j < p->issued; j++) {
    const tpu_mxu_tile *x = &p->t[j];
    if (p->s[j] + (uint64_t)i > t || i >= (is_a ? x->m : x->n)) continue;
    const uint64_t k = t - p->s[j] - (uint64_t)i;
    if (k >= (uint64_t)x->k) continue;
    const float v = is_a ? x->act[(size_t)i * (size_t)x->lda + k] : x->w[k * (size_t)x->ldw + (size_t)i];
    return (os_op){ tpu_bf16_round(v), j, (int)k };
  }
  return (os_op){ 0.0f, -1, 0 };
}

static void os_mac(os_pe *p, size_t i) {
  const os_op a = p->a[i], b = p->b[i];
  if (a.tile < 0 || b.tile < 0) return;
  if (a.tile != b.tile || a.k != b.k) { p->st.mismatches++; return; }
  const size_t q = 2 * i + (size_t)(a.tile % 2);
  if (a.k == 0) {
    p->st.hazards += p->bank_tile[q] >= 0;
    p->bank[q] = fmaf(a.v, b.v, 0.0f);
    p->bank_tile[q] = a.tile;
  } else {
    p->bank[q] = fmaf(a.v, b.v, p->bank[q]);
  }
  p->st.macs++;
  if (a.k == p->t[a.tile].k - 1) p->bank_done[q] = true;
}

static void os_compute(os_pe *p, uint64_t t) {
  const int R = p->R, C = p->C;
  for (int r = 0; r < R; r++) {
    for (int c = C - 1; c > 0; c--) p->a[r * C + c] = p->a[r * C + c - 1];
    p->a[r * C] = os_edge(p, true, r, t);
  }
  for (int c = 0; c < C; c++) {
    for (int r = R - 1; r > 0; r--) p->b[r * C + c] = p->b[(r - 1) * C + c];
    p->b[c] = os_edge(p, false, c, t);
  }
  for (size_t i = 0; i < (size_t)(R * C); i++) os_mac(p, i);
  /* a tile has fed its edges once its last A (row m-1) and B (column n-1) entered */
  while (p->feed_head < p->issued) {
    const tpu_mxu_tile *x = &p->t[p->feed_head];
    const int wide = x->m > x->n ? x->m : x->n;
    if (p->s[p->feed_head] + (uint64_t)x->k + (uint64_t)wide - 1 > t) break;
    p->feed_head++;
  }
}

static void os_free(os_pe *p) {
  tpu_free(p->a); tpu_free(p->b); tpu_free(p->chain); tpu_free(p->bank); tpu_free(p->bank_tile);
  tpu_free(p->bank_done); tpu_free(p->s);
}

static tpu_status os_alloc(os_pe *p) {
  const size_t cells = (size_t)p->R * (size_t)p->C;
  p->a = tpu_malloc(cells * sizeof *p->a);
  p->b = tpu_malloc(cells * sizeof *p->b);
  p->chain = tpu_malloc(cells * sizeof *p->chain);
  p->bank = tpu_calloc(2 * cells, sizeof *p->bank);
  p->bank_tile = tpu_malloc(2 * cells * sizeof *p->bank_tile);
  p->bank_done = tpu_calloc(2 * cells, sizeof *p->bank_done);
  p->s = tpu_calloc((size_t)p->n + 1, sizeof *p->s);
  if (!p->a || !p->b || !p->chain || !p->bank || !p->bank_tile || !p->bank_done || !p->s) return TPU_ERR_NOMEM;
  for (size_t i = 0; i < cells; i++) {
    p->a[i] = p->b[i] = (os_op){ 0.0f, -1, 0 };
    p->chain[i] = (os_slot){ 0.0f, -1, 0 };
    p->bank_tile[2 * i] = p->bank_tile[2 * i + 1] = -1;
  }
  return TPU_OK;
}

tpu_status mxu_os_run(const tpu_mxu_config *cfg, const tpu_mxu_tile *t, int n, uint64_t *starts,
                      mxu_os_stats *out) {
  os_pe p = { .R = cfg->rows, .C = cfg->cols, .n = n, .t = t };
  tpu_status st = os_alloc(&p);
  for (int j = 0; j < n; j++) p.results += (uint64_t)t[j].m * (uint64_t)t[j].n;
  /* every tile in order starts within its K + M + rows + cols of the previous one's end, or never: a bound */
  uint64_t bound = 4;
  for (int j = 0; j < n; j++) bound += t[j].earliest + 2 * ((uint64_t)t[j].k + (uint64_t)(t[j].m + p.R + p.C));
  for (uint64_t cy = 0; st == TPU_OK && (p.issued < n || p.written < p.results); cy++) {
    if (cy > bound) { st = TPU_ERR_RUNTIME; break; }
    os_sequence(&p, cy);
    os_drain(&p, cy);
    os_compute(&p, cy);
  }
  p.st.cycles = p.results ? p.last_write + 1 : 0;
  if (starts && st == TPU_OK)
    for (int j = 0; j < n; j++) starts[j] = p.s[j];
  if (out) *out = p.st;
  os_free(&p);
  return st;
}
