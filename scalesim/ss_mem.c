/*
** ss_mem.c -- SCALE-Sim v2's memory side in its CALC bandwidth
** mode (scalesim.h states the model, docs/SCALESIM.md the behaviour it was
** learned from): the IFMAP and filter read buffers that count a DRAM read
** for every address not fetched in the current epoch of 50 sets, the OFMAP
** write buffer that drains half its size in lines of `cols` words, and the
** stalls the write buffer can cause.
**
** The demand matrices are never built. Every operand's block lies in a
** fold's rows as a skewed parallelogram or a flat rectangle, so the words of
** a row, the row of a word and the fold of a word are closed forms.
**   OFMAP: a count per row (the write buffer ignores addresses); runs of
**     rows that neither start a drain nor stall are taken in one step, so a
**     layer costs O(folds x (rows + cols) + drains).
**   IFMAP, filter, fast paths: an operand with fewer distinct addresses
**     than an epoch never fills one (DRAM reads = distinct addresses); one
**     whose addresses are all distinct in its operand matrix (GEMMs, the
**     filters, convolutions whose windows do not overlap) is re-read as
**     whole passes in the same order, and each pass is all misses, misses
**     then hits, or all hits by the epoch arithmetic below: O(folds).
**   Otherwise (overlapping windows and an operand larger than an epoch):
**     every request's address is looked up in a per-address epoch stamp,
**     row by row, O(cycles + SRAM reads). That walk also checks the fast
**     paths (tests/check_scalesim.c runs both on random layers).
*/
#include <string.h>

#include "scalesim/scalesim.h"

enum { SETS_ACTIVE = 50 };     /* active_buf_frac 0.5 of 100 sets */
enum { RD_BW = 10 };           /* SCALE-Sim's "arbitrary" 10 words a cycle in CALC mode */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* SCALE-Sim's ReadBufferEstimateBw: addresses are fetched in sets of
** size/100 words; the last 50 sets fetched (the current epoch) are the
** ones it checks for a hit, and when the 50th set of an epoch fills, the
** epoch is prefetched and a new, empty one starts. */
typedef struct rd_buf {
  uint32_t *stamp;             /* per address: 1 + the epoch that fetched it, 0 never */
  uint32_t epoch;
  int64_t set_words, epoch_words, in_epoch;
  uint64_t fetched;            /* DRAM reads */
  uint64_t triggers;           /* epochs filled */
  int64_t first_req, c_last;   /* first cycle with a request; cycle of the last fill */
  bool seen, zero_window;
  tpu_ss_access sram;
} rd_buf;

static void rd_access(rd_buf *b, int64_t addr, int64_t cycle) {
  uint32_t *s = &b->stamp[addr];
  if (*s == b->epoch + 1) return;                 /* hit */
  *s = b->epoch + 1;
  b->fetched++;
  if (++b->in_epoch < b->epoch_words) return;
  /* two fills in one cycle make SCALE-Sim prefetch over a window of zero
  ** cycles (it divides by the window's length) */
  if (b->triggers && cycle == b->c_last) b->zero_window = true;
  b->triggers++;
  b->c_last = cycle;
  b->epoch++;
  b->in_epoch = 0;
}

/* The DRAM side of a read buffer once every request is in: the reads and
** the first and last cycle of its prefetch trace. */
static void rd_finish(const rd_buf *b, tpu_ss_access *dram) {
  dram->count = b->fetched;
  if (!b->triggers) {          /* everything in one prefetch before cycle 0 */
    const int64_t sets = ceil_div((int64_t)b->fetched, b->set_words);
    dram->start = -ceil_div(sets * b->set_words, RD_BW);
    dram->stop = -1;
  } else {                     /* the first epoch ends the cycle before the first request */
    dram->start = b->first_req - ceil_div(SETS_ACTIVE * b->set_words, RD_BW);
    dram->stop = b->c_last + 1;
  }
}

/* SCALE-Sim's write_buffer: words go into lines of `bw` words; when more
** than half the buffer is taken and no drain is running, the open line is
** closed (padded) and the next ceil(half / bw) lines drain, one a cycle;
** a write that finds the buffer full while a drain runs stalls until the
** drain ends. A drained chunk counts its lines as full except for the pad
** of its last line (so pads in the middle of a chunk count as writes). */
typedef struct wr_buf {
  int64_t active, bw, chunk;   /* words that may be held before a drain; line width; lines a drain */
  int64_t free;                /* SCALE-Sim's free_space (credited with what a drain counts) */
  int64_t fill;                /* words in the open line */
  int64_t lines, drained;      /* lines closed, lines drained */
  int64_t drain_end;
  int64_t *pidx, *pfill;       /* padded lines not yet drained, oldest first */
  size_t ph, pn, pcap;
  bool oom, no_lines;
  tpu_ss_access dram;
} wr_buf;

static void wr_store(wr_buf *w, int64_t k) {
  w->free -= k;
  w->fill += k;
  w->lines += w->fill / w->bw;
  w->fill %= w->bw;
}

static void wr_close_line(wr_buf *w) {
  if (!w->fill) return;
  if (w->ph + w->pn == w->pcap) {
    if (w->ph) {               /* slide the queue to the front */
      memmove(w->pidx, w->pidx + w->ph, w->pn * sizeof *w->pidx);
      memmove(w->pfill, w->pfill + w->ph, w->pn * sizeof *w->pfill);
      w->ph = 0;
    } else {
      const size_t cap = w->pcap ? 2 * w->pcap : 64;
      int64_t *a = tpu_realloc(w->pidx, cap * sizeof *a);
      if (a) w->pidx = a;
      int64_t *f = a ? tpu_realloc(w->pfill, cap * sizeof *f) : NULL;
      if (!f) { w->oom = true; return; }
      w->pfill = f;
      w->pcap = cap;
    }
  }
  w->pidx[w->ph + w->pn] = w->lines;
  w->pfill[w->ph + w->pn] = w->fill;
  w->pn++;
  w->lines++;
  w->fill = 0;
}

static void wr_drain(wr_buf *w, int64_t cycle) {
  const int64_t nl = min64(w->chunk, w->lines - w->drained);
  if (nl <= 0) { w->no_lines = true; return; }   /* SCALE-Sim indexes an empty chunk */
  const int64_t last = w->drained + nl - 1;
  int64_t words = nl * w->bw;
  while (w->pn && w->pidx[w->ph] <= last) {
    if (w->pidx[w->ph] == last) words -= w->bw - w->pfill[w->ph];
    w->ph++;
    w->pn--;
  }
  if (!w->pn) w->ph = 0;
  if (w->drained == 0) w->dram.start = cycle;
  w->dram.count += (uint64_t)words;
  w->dram.stop = cycle + nl - 1;
  w->free += words;
  w->drain_end = cycle + nl - 1;
  w->drained += nl;
}

/* n OFMAP writes in the row issued at `cycle`; returns the stall. */
static int64_t wr_row(wr_buf *w, int64_t n, int64_t cycle) {
  int64_t cur = cycle;
  while (n > 0 && !w->oom) {
    int64_t k;
    if (cur < w->drain_end) {  /* a drain runs: stall on the write that fills the buffer */
      k = w->free >= 1 ? min64(n, w->free) : 1;
      wr_store(w, k);
      if (w->free <= 0) cur = w->drain_end;
    } else {                   /* drain when more than half is taken */
      k = w->free > w->active ? min64(n, w->free - w->active + 1) : 1;
      wr_store(w, k);
      if (w->free < w->active) {
        wr_close_line(w);
        wr_drain(w, cur);
      }
    }
    n -= k;
  }
  return cur - cycle;
}

static void wr_finish(wr_buf *w, int64_t cycle) {
  wr_close_line(w);
  while (w->drained < w->lines && !w->oom && !w->no_lines) {
    wr_drain(w, cycle);
    cycle = w->drain_end + 1;
  }
}

/* ---- shapes: where an operand's block lies in a fold's rows ---- */

typedef struct layer_geo {     /* the lowering's address arithmetic */
  int64_t M, N, K, H, W, C, fh, fw, sh, sw, oh, ow;
} layer_geo;

/* SCALE-Sim's IFMAP operand matrix: output pixel m, window element k; -1
** where a window runs past the input's edge. Offsets are left out: they
** shift every address of an operand alike. */
static int64_t ifmap_addr(const layer_geo *g, int64_t m, int64_t k) {
  const int64_t ir = m / g->ow * g->sh, ic = m % g->ow * g->sw;
  const int64_t fwc = g->fw * g->C;
  const int64_t cr = k / fwc, cc = k % fwc / g->C, ch = k % g->C;
  if (cr + ir >= g->H || cc + ic >= g->W) return -1;
  return ((cr + ir) * g->W + cc + ic) * g->C + ch;
}

static int64_t filter_addr(const layer_geo *g, int64_t k, int64_t n) { return n * g->K + k; }

/* A block in a fold's rows: skewed (w columns, column c delayed by c rows,
** d deep, after `pre` empty rows: row pre + v holds trap(v) words) or flat
** (ub rows of uc words, upside down at the end of the first `rows` rows). */
typedef struct lay {
  bool skew;
  int64_t pre, w, d;
  int64_t rows, ub, uc;
} lay;

static int64_t trap(int64_t v, int64_t w, int64_t d) {
  if (v < 0 || v > w + d - 2) return 0;
  return min64(w - 1, v) - max64(0, v - d + 1) + 1;
}

static int64_t trap_before(int64_t v, int64_t w, int64_t d) {   /* words in rows [0, v) */
  v = max64(0, min64(v, w + d - 1));
  const int64_t a = v <= w ? v * (v + 1) / 2 : w * (w + 1) / 2 + (v - w) * w;
  const int64_t b = v <= d ? 0 : (v - d) * (v - d + 1) / 2;
  return a - b;
}

static int64_t lay_words(const lay *l) { return l->skew ? l->w * l->d : l->ub * l->uc; }
static int64_t lay_first(const lay *l) { return l->skew ? l->pre : l->rows - l->ub; }
static int64_t lay_last(const lay *l) { return l->skew ? l->pre + l->w + l->d - 2 : l->rows - 1; }

/* The fold row of the block's word e (0-based, SCALE-Sim's order). */
static int64_t lay_row_of(const lay *l, int64_t e) {
  if (!l->skew) return l->rows - l->ub + e / l->uc;
  int64_t lo = 0, hi = l->w + l->d - 2;          /* the smallest v with e < trap_before(v + 1) */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (e < trap_before(mid + 1, l->w, l->d)) hi = mid; else lo = mid + 1;
  }
  return l->pre + lo;
}

typedef struct lctx {          /* one layer on one array */
  layer_geo g;
  tpu_mxu_dataflow df;
  int64_t R, C, T, sr, sc, rf, cf, L;
} lctx;

typedef struct fold_ctx {
  const lctx *x;
  int64_t fr, fc, ur, uc;
} fold_ctx;

static fold_ctx fold_at(const lctx *x, int64_t fi) {
  fold_ctx f = { x, fi % x->rf, fi / x->rf, 0, 0 };
  f.ur = min64(x->R, x->sr - f.fr * x->R);
  f.uc = min64(x->C, x->sc - f.fc * x->C);
  return f;
}

/* The layout of operand op (0 IFMAP, 1 filter, 2 OFMAP) in fold f. */
static lay op_lay(const fold_ctx *f, int op) {
  const lctx *x = f->x;
  const lay skew_r = { .skew = true, .pre = x->R, .w = f->ur, .d = x->T };
  const lay flat = { .skew = false, .rows = x->R, .ub = f->ur, .uc = f->uc };
  if (op == 2)                 /* os: the block upside down, then skewed, after T - 1 rows */
    return x->df == TPU_MXU_OS ? (lay){ .skew = true, .pre = x->T - 1 + x->R - f->ur, .w = f->uc, .d = f->ur }
                               : (lay){ .skew = true, .pre = 2 * x->R - 1, .w = f->uc, .d = x->T };
  switch (x->df) {
  case TPU_MXU_OS: return (lay){ .skew = true, .pre = 0, .w = op ? f->uc : f->ur, .d = x->T };
  case TPU_MXU_IS: return op ? skew_r : flat;
  default:         return op ? flat : skew_r;
  }
}

/* Operand op's address at block coordinates (a, c): a is the skew's depth
** index or the flat block's row. */
static int64_t elem_addr(const fold_ctx *f, int op, int64_t a, int64_t c) {
  const lctx *x = f->x;
  switch (x->df) {
  case TPU_MXU_OS:
    return op ? filter_addr(&x->g, a, f->fc * x->C + c) : ifmap_addr(&x->g, f->fr * x->R + c, a);
  case TPU_MXU_IS:
    return op ? filter_addr(&x->g, f->fr * x->R + c, a) : ifmap_addr(&x->g, f->fc * x->C + c, f->fr * x->R + a);
  default:
    return op ? filter_addr(&x->g, f->fr * x->R + a, f->fc * x->C + c) : ifmap_addr(&x->g, a, f->fr * x->R + c);
  }
}

/* Calls fn for each valid address of fold row rho, in SCALE-Sim's order;
** stops early when fn returns false. */
static void row_words(const fold_ctx *f, int op, const lay *l, int64_t rho, bool (*fn)(void *, int64_t),
                      void *ud) {
  int64_t a0, step, c0, c1;    /* words (a, c) for c in [c0, c1], a = a0 + step (c - c0) */
  if (l->skew) {
    const int64_t v = rho - l->pre;
    c0 = max64(0, v - l->d + 1);
    c1 = min64(l->w - 1, v);
    a0 = v - c0, step = -1;
  } else {
    const int64_t blk = l->rows - 1 - rho;
    if (rho >= l->rows || blk >= l->ub) return;
    c0 = 0, c1 = l->uc - 1, a0 = blk, step = 0;
  }
  for (int64_t c = c0; c <= c1; c++) {
    const int64_t addr = elem_addr(f, op, a0 + step * (c - c0), c);
    if (addr >= 0 && !fn(ud, addr)) return;
  }
}

/* ---- the OFMAP side: a cursor over the layer's rows ---- */

typedef struct run_state {
  const lctx *x;
  wr_buf wr;
  bool bulk;                   /* take quiet runs of rows in one step */
  int64_t row, stalls;         /* the next row; stall cycles before it */
  tpu_ss_access ofmap_sram;
  bool ofmap_seen;
} run_state;

/* k rows of n OFMAP writes each, from st->row. */
static void ofmap_rows(run_state *st, int64_t n, int64_t k) {
  wr_buf *w = &st->wr;
  while (k > 0 && !w->oom) {
    const int64_t cur = st->row + st->stalls;
    int64_t q = 0, out;        /* rows that neither start a drain nor stall */
    if (st->bulk && cur < w->drain_end) q = min64(w->drain_end - cur, w->free >= 1 ? (w->free - 1) / n : 0);
    else if (st->bulk) q = w->free >= w->active ? (w->free - w->active) / n : 0;
    q = min64(q, k);
    if (q > 0) {
      wr_store(w, q * n);
      out = cur + q - 1;
    } else {
      q = 1;
      out = cur + wr_row(w, n, cur);
      st->stalls += out - cur;
    }
    if (!st->ofmap_seen) { st->ofmap_seen = true; st->ofmap_sram.start = cur + (q > 1 ? 0 : out - cur); }
    st->ofmap_sram.stop = out;
    st->row += q;
    k -= q;
  }
}

/* Runs the OFMAP side up to (not including) row target. */
static void ofmap_advance(run_state *st, int64_t target) {
  const lctx *x = st->x;
  while (st->row < target && !st->wr.oom) {
    const int64_t rho = st->row % x->L;
    const fold_ctx f = fold_at(x, st->row / x->L);
    const lay o = op_lay(&f, 2);
    const int64_t v = rho - o.pre, lo = min64(o.w, o.d) - 1, hi = max64(o.w, o.d) - 1;
    int64_t k = min64(target - st->row, x->L - rho);
    if (v < 0) k = min64(k, -v);
    else if (v <= o.w + o.d - 2) {
      if (v < lo || v > hi || !st->bulk) k = 1;  /* a ramp row: its own count */
      else k = min64(k, hi - v + 1);             /* the plateau: min(w, d) a row */
      ofmap_rows(st, trap(v, o.w, o.d), k);
      continue;
    }
    st->row += k;              /* rows without writes never stall */
  }
}

/* ---- the read side ---- */

typedef struct query {         /* a cycle wanted: row + the stalls before it + add */
  int64_t row, add;
  int64_t *out;
} query;

typedef struct queries { query q[4]; int n; } queries;

static void ask(queries *qs, int64_t row, int64_t add, int64_t *out) {
  qs->q[qs->n++] = (query){ row, add, out };
  for (int i = qs->n - 1; i > 0 && qs->q[i].row < qs->q[i - 1].row; i--) {
    const query t = qs->q[i];
    qs->q[i] = qs->q[i - 1];
    qs->q[i - 1] = t;
  }
}

enum { PATH_DISTINCT, PATH_PASSES, PATH_WALK };

/* Distinct valid IFMAP addresses: input rows under some window x columns
** under some window x channels (a window past the edge covers its part).
** Windows that overlap (f > stride) cover one run from 0; disjoint ones
** cover f each but the last that starts inside, which covers what is left
** of the input (windows starting past it, as SCALE-Sim's ceil makes when
** stride > f, cover nothing): O(1) however many outputs. */
static int64_t covered(int64_t outs, int64_t stride, int64_t f, int64_t in) {
  if (f > stride) return min64((outs - 1) * stride + f, in);
  const int64_t k = min64(outs, (in + stride - 1) / stride);   /* windows that start inside */
  return (k - 1) * f + min64(f, in - (k - 1) * stride);
}

/* Every IFMAP address distinct and valid: windows neither overlap nor
** run past the edge (GEMM layers, 1x1 stride-1 convolutions, ...). */
static bool ifmap_distinct(const layer_geo *g) {
  return g->fh <= g->sh && g->fw <= g->sw && (g->oh - 1) * g->sh + g->fh <= g->H &&
         (g->ow - 1) * g->sw + g->fw <= g->W;
}

/* The operand's folds as G groups of P passes of F folds: a pass re-reads
** the previous pass's addresses in the same order, groups share none. */
static void pass_shape(const lctx *x, int op, int64_t *G, int64_t *P, int64_t *F) {
  *G = 1, *P = 1, *F = x->rf * x->cf;                        /* ws filter, is IFMAP: all distinct */
  if (x->df == TPU_MXU_OS && op == 1) *G = x->cf, *P = x->rf, *F = 1;   /* a column block per fc */
  else if (op == (x->df == TPU_MXU_IS)) *P = x->cf, *F = x->rf;       /* the blocks of fr, per fc */
}

static int64_t fold_words(const lctx *x, int op, int64_t fi) {
  const fold_ctx f = fold_at(x, fi);
  const lay l = op_lay(&f, op);
  return lay_words(&l);
}

/* DRAM reads of a distinct-address operand, pass by pass: the first pass
** misses all S words; a later one finds the last (reads mod E) words of
** the previous pass in the epoch, so it misses all of them (the previous
** pass was all misses and S >= E: the epoch turns over before the tail),
** its head up to that tail (S < E: then the epoch holds the whole pass) or
** none (the epoch already held the whole pass). With target >= 1 it also
** finds the fold and fold word of the target-th read. */
static int64_t pass_reads(const lctx *x, int op, int64_t E, int64_t target, int64_t *fold, int64_t *word) {
  int64_t G, P, F, reads = 0;
  pass_shape(x, op, &G, &P, &F);
  for (int64_t g = 0; g < G; g++) {
    int64_t S = 0;
    for (int64_t i = 0; i < F; i++) S += fold_words(x, op, g * P * F + i);
    bool all = true;
    for (int64_t p = 0; p < P; p++) {
      const int64_t r = reads % E;
      const int64_t miss = p == 0 ? S : !all || r >= S ? 0 : S >= E ? S : S - r;
      if (!miss) break;
      all = miss == S;
      for (int64_t i = 0, j = target - reads - 1; j >= 0 && j < miss && i < F; i++) {
        const int64_t fi = g * P * F + p * F + i, n = fold_words(x, op, fi);
        if (j < n) { *fold = fi, *word = j; break; }
        j -= n;
      }
      reads += miss;
    }
  }
  return reads;
}

typedef struct found { bool yes; } found;
static bool found_one(void *ud, int64_t addr) { (void)addr; ((found *)ud)->yes = true; return false; }

/* The last row with a request of operand op (a window past the edge
** requests nothing). */
static int64_t last_request_row(const lctx *x, int op) {
  for (int64_t fi = x->rf * x->cf - 1; fi >= 0; fi--) {
    const fold_ctx f = fold_at(x, fi);
    const lay l = op_lay(&f, op);
    for (int64_t rho = lay_last(&l); rho >= lay_first(&l); rho--) {
      found y = { false };
      row_words(&f, op, &l, rho, found_one, &y);
      if (y.yes) return fi * x->L + rho;
    }
  }
  return 0;
}

/* A read operand by a closed form (PATH_DISTINCT, PATH_PASSES); the cycles
** that depend on stalls are left as queries. */
static void fast_read(const lctx *x, int op, int path, int64_t distinct, rd_buf *b, queries *qs) {
  const fold_ctx f0 = fold_at(x, 0);
  const lay l0 = op_lay(&f0, op);
  b->seen = true;              /* the first request (a window at the origin) precedes any write */
  b->first_req = lay_first(&l0);
  b->sram.start = b->first_req + 1;
  ask(qs, last_request_row(x, op), 1, &b->sram.stop);
  if (path == PATH_DISTINCT) { b->fetched = (uint64_t)distinct; return; }
  int64_t fold = 0, word = 0;
  b->fetched = (uint64_t)pass_reads(x, op, b->epoch_words, -1, &fold, &word);
  b->triggers = b->fetched / (uint64_t)b->epoch_words;
  if (!b->triggers) return;
  pass_reads(x, op, b->epoch_words, (int64_t)b->triggers * b->epoch_words, &fold, &word);
  const fold_ctx f = fold_at(x, fold);
  const lay l = op_lay(&f, op);
  ask(qs, fold * x->L + lay_row_of(&l, word), 0, &b->c_last);
}

typedef struct walk_rd { rd_buf *b; int64_t cycle; } walk_rd;

static bool walk_one(void *ud, int64_t addr) {
  walk_rd *w = ud;
  rd_buf *b = w->b;
  if (!b->seen) { b->seen = true; b->first_req = w->cycle; b->sram.start = w->cycle + 1; }
  b->sram.stop = w->cycle + 1;
  rd_access(b, addr, w->cycle);
  return true;
}

/* Row by row: the walked operands' requests, the OFMAP side, the queries. */
static void walk_rows(run_state *st, rd_buf rd[2], const int path[2], queries *qs) {
  const lctx *x = st->x;
  const int64_t rows = x->rf * x->cf * x->L;
  int qi = 0;
  for (int64_t r = 0; r < rows && !st->wr.oom; r++) {
    for (; qi < qs->n && qs->q[qi].row == r; qi++) *qs->q[qi].out = r + st->stalls + qs->q[qi].add;
    const fold_ctx f = fold_at(x, r / x->L);
    for (int op = 0; op < 2; op++) {
      if (path[op] != PATH_WALK) continue;
      const lay l = op_lay(&f, op);
      walk_rd w = { &rd[op], r + st->stalls };
      row_words(&f, op, &l, r % x->L, walk_one, &w);
    }
    ofmap_advance(st, r + 1);
  }
}

static tpu_status rd_init(rd_buf *b, uint64_t words, uint64_t naddr, bool walk) {
  memset(b, 0, sizeof *b);
  b->set_words = (int64_t)(words / 100);
  b->epoch_words = SETS_ACTIVE * b->set_words;
  if (!walk) return TPU_OK;
  b->stamp = naddr <= SIZE_MAX / sizeof *b->stamp ? tpu_calloc((size_t)naddr, sizeof *b->stamp) : NULL;
  return b->stamp ? TPU_OK : TPU_ERR_NOMEM;
}

static void wr_init(wr_buf *w, uint64_t words, int64_t bw) {
  memset(w, 0, sizeof *w);
  w->free = (int64_t)words;
  w->active = ((int64_t)words + 1) / 2;                 /* ceil(size x 0.5) */
  w->bw = bw;
  w->chunk = ceil_div((int64_t)words - w->active, bw);  /* the drain half, in lines */
}

static lctx layer_ctx(int rows, int cols, tpu_mxu_dataflow df, const tpu_ss_conv *ly, tpu_ss_compute *s) {
  lctx x = { .g = { .M = (int64_t)(ly->ofmap_h * ly->ofmap_w), .N = (int64_t)ly->filters,
    .K = (int64_t)(ly->filter_h * ly->filter_w * ly->channels), .H = (int64_t)ly->ifmap_h,
    .W = (int64_t)ly->ifmap_w, .C = (int64_t)ly->channels, .fh = (int64_t)ly->filter_h,
    .fw = (int64_t)ly->filter_w, .sh = (int64_t)ly->stride_h, .sw = (int64_t)ly->stride_w,
    .oh = (int64_t)ly->ofmap_h, .ow = (int64_t)ly->ofmap_w }, .df = df, .R = rows, .C = cols };
  tpu_ss_compute_layer(rows, cols, df, (uint64_t)x.g.M, (uint64_t)x.g.N, (uint64_t)x.g.K, s);
  x.T = (int64_t)s->t, x.sr = (int64_t)s->sr, x.sc = (int64_t)s->sc;
  x.rf = (int64_t)s->row_folds, x.cf = (int64_t)s->col_folds, x.L = (int64_t)s->cycles_per_fold;
  return x;
}

/* Which way each read operand goes. */
static void choose_paths(const lctx *x, const rd_buf rd[2], bool every_word, int path[2], int64_t distinct[2]) {
  const layer_geo *g = &x->g;
  distinct[0] = covered(g->oh, g->sh, g->fh, g->H) * covered(g->ow, g->sw, g->fw, g->W) * g->C;
  distinct[1] = g->K * g->N;
  for (int op = 0; op < 2; op++) {
    if (every_word) path[op] = PATH_WALK;
    else if (distinct[op] < rd[op].epoch_words) path[op] = PATH_DISTINCT;
    else if ((op || ifmap_distinct(g)) && rd[op].epoch_words > max64(x->R, x->C)) path[op] = PATH_PASSES;
    else path[op] = PATH_WALK;
  }
}

/* The model's work in loop steps, bounded before it starts: a few passes
** over every fold (each up to rows + cols rows), the OFMAP drains (one per
** half buffer of writes) and, when an operand is walked, every cycle. */
#define MEM_MAX_STEPS 0x1p27
static double model_steps(const lctx *x, const int path[2], uint64_t ofmap_words) {
  const double folds = (double)x->rf * (double)x->cf, half = ofmap_words / 2 ? (double)(ofmap_words / 2) : 1.0;
  double steps = 4.0 * folds * (double)(x->R + x->C) + (double)x->g.M * (double)x->g.N / half;
  if (path[0] == PATH_WALK || path[1] == PATH_WALK) steps += folds * (double)x->L;
  return steps;
}

static double words_a_cycle(const tpu_ss_access *a) { return (double)a->count / (double)(a->stop - a->start + 1); }

static void report(const run_state *st, const rd_buf rd[2], const tpu_ss_compute *s, tpu_ss_mem *out) {
  for (int op = 0; op < 2; op++) {
    rd_finish(&rd[op], &out->dram[op]);
    out->sram[op] = rd[op].sram;
    if (rd[op].zero_window) out->unsupported = "two prefetch epochs that end in one cycle (SCALE-Sim "
                                               "divides by a window of zero cycles)";
  }
  out->dram[2] = st->wr.dram;
  out->sram[2] = st->ofmap_sram;
  if (st->wr.no_lines) out->unsupported = "an OFMAP drain with no lines (SCALE-Sim indexes an empty chunk)";
  out->sram[0].count = s->ifmap_sram_reads;
  out->sram[1].count = s->filter_sram_reads;
  out->sram[2].count = s->ofmap_sram_writes;
  out->total_cycles = (uint64_t)(st->row - 1 + st->stalls);
  out->stall_cycles = (uint64_t)st->stalls;
  for (int k = 0; k < 3; k++) out->dram_bw[k] = words_a_cycle(&out->dram[k]);
}

tpu_status tpu_ss_mem_layer(int rows, int cols, tpu_mxu_dataflow df, const tpu_ss_conv *ly,
                            const uint64_t sram_words[3], bool every_word, tpu_ss_mem *out) {
  memset(out, 0, sizeof *out);
  /* operands of up to 2^50 words keep every product below in int64 */
  if ((double)ly->ifmap_h * (double)ly->ifmap_w * (double)ly->channels > 0x1p50 ||
      (double)ly->filter_h * (double)ly->filter_w * (double)ly->channels * (double)ly->filters > 0x1p50 ||
      (double)ly->ofmap_h * (double)ly->ofmap_w * (double)ly->filters > 0x1p50) {
    out->unsupported = "an operand of more than 2^50 words";
    return TPU_OK;
  }
  tpu_ss_compute s;
  const lctx x = layer_ctx(rows, cols, df, ly, &s);
  if (sram_words[0] < 100 || sram_words[1] < 100 || sram_words[2] < 2) {
    out->unsupported = "an SRAM smaller than 100 words (SCALE-Sim's buffers have no sets then)";
    return TPU_OK;
  }
  run_state st = { .x = &x, .bulk = !every_word };
  wr_init(&st.wr, sram_words[2], cols);
  rd_buf rd[2];
  int path[2];
  int64_t distinct[2];
  queries qs = { .n = 0 };
  tpu_status rc = TPU_OK;
  for (int op = 0; op < 2; op++) rd_init(&rd[op], sram_words[op], 0, false);
  choose_paths(&x, rd, every_word, path, distinct);
  if (model_steps(&x, path, sram_words[2]) > MEM_MAX_STEPS) {
    out->unsupported = "a layer whose model would take more than 2^27 steps (its folds x (rows + cols), "
                       "its OFMAP drains and, where an operand is walked, its cycles)";
    return TPU_OK;
  }
  const uint64_t naddr[2] = { (uint64_t)(x.g.H * x.g.W * x.g.C), (uint64_t)distinct[1] };
  for (int op = 0; op < 2 && !rc; op++) {
    if (path[op] == PATH_WALK) rc = rd_init(&rd[op], sram_words[op], naddr[op], true);
    else fast_read(&x, op, path[op], distinct[op], &rd[op], &qs);
  }
  const int64_t total = x.rf * x.cf * x.L;
  if (!rc && (path[0] == PATH_WALK || path[1] == PATH_WALK)) walk_rows(&st, rd, path, &qs);
  else if (!rc) {
    for (int i = 0; i < qs.n; i++) {
      ofmap_advance(&st, qs.q[i].row);
      *qs.q[i].out = qs.q[i].row + st.stalls + qs.q[i].add;
    }
    ofmap_advance(&st, total);
  }
  if (!rc) wr_finish(&st.wr, total - 1 + st.stalls);
  if (!rc && st.wr.oom) rc = TPU_ERR_NOMEM;
  if (!rc) report(&st, rd, &s, out);
  for (int op = 0; op < 2; op++) tpu_free(rd[op].stamp);
  tpu_free(st.wr.pidx);
  tpu_free(st.wr.pfill);
  return rc;
}
