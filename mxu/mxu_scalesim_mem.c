/*
** mxu_scalesim_mem.c -- SCALE-Sim v2's memory side in its CALC bandwidth
** mode (mxu.h states the model, docs/SCALESIM.md the behaviour it was
** learned from): the IFMAP and filter read buffers that count a DRAM read
** for every address not fetched in the current epoch of 50 sets, the OFMAP
** write buffer that drains half its size in lines of `cols` words, and the
** stalls the write buffer can cause.
**
** The demand matrices are never built. Each fold's rows are walked once;
** a row's OFMAP writes are a count (the write buffer ignores addresses), and
** the read operands' addresses of the row are generated in SCALE-Sim's
** order (column by column) and looked up in a per-address epoch stamp, so a
** layer costs O(cycles + SRAM reads) with a few integer operations each.
*/
#include <string.h>

#include "mxu/mxu.h"

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
  tpu_mxu_ss_access sram;
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
static void rd_finish(const rd_buf *b, tpu_mxu_ss_access *dram) {
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
  tpu_mxu_ss_access dram;
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

/* ---- the demand of one fold, row by row ---- */

typedef struct layer_geo {     /* the lowering's address arithmetic */
  int64_t M, N, K, H, W, C, fw, sh, sw, ow;
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

/* How an operand's block lies in a fold's demand rows: skewed (column c
** delayed by c rows after `pre` empty rows, `t` rows deep) or flat (the
** block's rows upside down in the fold's first `rows` rows). */
typedef struct lay {
  bool skew;
  int64_t pre, t, used;        /* skew: prefix rows, depth, used columns */
  int64_t rows, ub, uc;        /* flat: array rows, used block rows, used columns */
} lay;

typedef struct fold_ctx {
  const layer_geo *g;
  tpu_mxu_dataflow df;
  int64_t R, C, fr, fc, ur, uc;
} fold_ctx;

/* Operand op (0 IFMAP, 1 filter) element at block coordinates (a, c):
** a is the skew's depth index or the flat block's row. */
static int64_t elem_addr(const fold_ctx *f, int op, int64_t a, int64_t c) {
  const layer_geo *g = f->g;
  switch (f->df) {
  case TPU_MXU_OS:
    return op ? filter_addr(g, a, f->fc * f->C + c) : ifmap_addr(g, f->fr * f->R + c, a);
  case TPU_MXU_IS:
    return op ? filter_addr(g, f->fr * f->R + c, a) : ifmap_addr(g, f->fc * f->C + c, f->fr * f->R + a);
  default:
    return op ? filter_addr(g, f->fr * f->R + a, f->fc * f->C + c) : ifmap_addr(g, a, f->fr * f->R + c);
  }
}

/* The read operand's requests of fold row rho, in SCALE-Sim's order. */
static void read_row(const fold_ctx *f, int op, const lay *l, int64_t rho, int64_t cycle, rd_buf *b) {
  int64_t a0, step, c0, c1;  /* elements (a, c) for c in [c0, c1], a = a0 + step * (c - c0) */
  if (l->skew) {
    const int64_t u = rho - l->pre;
    c0 = max64(0, u - l->t + 1);
    c1 = min64(l->used - 1, u);
    a0 = u - c0, step = -1;
  } else {
    const int64_t blk = l->rows - 1 - rho;
    if (rho >= l->rows || blk >= l->ub) return;
    c0 = 0, c1 = l->uc - 1, a0 = blk, step = 0;
  }
  for (int64_t c = c0; c <= c1; c++) {
    const int64_t addr = elem_addr(f, op, a0 + step * (c - c0), c);
    if (addr < 0) continue;
    if (!b->seen) { b->seen = true; b->first_req = cycle; b->sram.start = cycle + 1; }
    b->sram.stop = cycle + 1;
    rd_access(b, addr, cycle);
  }
}

/* OFMAP writes in fold row rho. */
static int64_t ofmap_count(const fold_ctx *f, int64_t rho, int64_t t) {
  if (f->df == TPU_MXU_OS) {   /* block rows upside down, then skewed, after t - 1 rows */
    const int64_t u = rho - (t - 1);
    return max64(0, min64(f->uc - 1, u - f->R + f->ur) - max64(0, u - f->R + 1) + 1);
  }
  const int64_t u = rho - (2 * f->R - 1);
  return max64(0, min64(f->uc - 1, u) - max64(0, u - t + 1) + 1);
}

static void fold_lays(const fold_ctx *f, int64_t t, lay *in, lay *fl) {
  const lay skew_r = { .skew = true, .pre = f->R, .t = t, .used = f->ur };
  const lay flat = { .skew = false, .rows = f->R, .ub = f->ur, .uc = f->uc };
  switch (f->df) {
  case TPU_MXU_OS:
    *in = (lay){ .skew = true, .pre = 0, .t = t, .used = f->ur };
    *fl = (lay){ .skew = true, .pre = 0, .t = t, .used = f->uc };
    break;
  case TPU_MXU_IS: *in = flat; *fl = skew_r; break;
  default:         *in = skew_r; *fl = flat; break;
  }
}

typedef struct run_state {
  rd_buf rd[2];
  wr_buf wr;
  int64_t row, stalls;         /* demand rows issued, stall cycles so far */
  int64_t last_out;            /* the last row's OFMAP service cycle */
  tpu_mxu_ss_access ofmap_sram;
  bool ofmap_seen;
} run_state;

static void run_fold(const fold_ctx *f, const tpu_mxu_scalesim *s, run_state *st) {
  lay l[2];
  fold_lays(f, (int64_t)s->t, &l[0], &l[1]);
  for (int64_t rho = 0; rho < (int64_t)s->cycles_per_fold; rho++) {
    const int64_t cycle = st->row + st->stalls;
    for (int op = 0; op < 2; op++) read_row(f, op, &l[op], rho, cycle, &st->rd[op]);
    const int64_t n = ofmap_count(f, rho, (int64_t)s->t);
    int64_t out = cycle;
    if (n > 0) {
      out += wr_row(&st->wr, n, cycle);
      if (!st->ofmap_seen) { st->ofmap_seen = true; st->ofmap_sram.start = out; }
      st->ofmap_sram.stop = out;
    }
    st->stalls += out - cycle;
    st->last_out = out;
    st->row++;
  }
}

static tpu_status rd_init(rd_buf *b, uint64_t words, uint64_t naddr) {
  memset(b, 0, sizeof *b);
  b->set_words = (int64_t)(words / 100);
  b->epoch_words = SETS_ACTIVE * b->set_words;
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

static void run_layer(const layer_geo *g, int rows, int cols, tpu_mxu_dataflow df, const tpu_mxu_scalesim *s,
                      run_state *st) {
  fold_ctx f = { .g = g, .df = df, .R = rows, .C = cols };
  st->last_out = -1;
  for (f.fc = 0; f.fc < (int64_t)s->col_folds; f.fc++)
    for (f.fr = 0; f.fr < (int64_t)s->row_folds; f.fr++) {
      f.ur = min64(f.R, (int64_t)s->sr - f.fr * f.R);
      f.uc = min64(f.C, (int64_t)s->sc - f.fc * f.C);
      run_fold(&f, s, st);
      if (st->wr.oom) return;
    }
}

static double words_a_cycle(const tpu_mxu_ss_access *a) { return (double)a->count / (double)(a->stop - a->start + 1); }

tpu_status tpu_mxu_scalesim_mem(int rows, int cols, tpu_mxu_dataflow df, const tpu_mxu_ss_conv *ly,
                                const uint64_t sram_words[3], tpu_mxu_ss_mem *out) {
  memset(out, 0, sizeof *out);
  const layer_geo g = { .M = (int64_t)(ly->ofmap_h * ly->ofmap_w), .N = (int64_t)ly->filters,
    .K = (int64_t)(ly->filter_h * ly->filter_w * ly->channels), .H = (int64_t)ly->ifmap_h,
    .W = (int64_t)ly->ifmap_w, .C = (int64_t)ly->channels, .fw = (int64_t)ly->filter_w,
    .sh = (int64_t)ly->stride_h, .sw = (int64_t)ly->stride_w, .ow = (int64_t)ly->ofmap_w };
  tpu_mxu_scalesim s;
  tpu_mxu_scalesim_layer(rows, cols, df, (uint64_t)g.M, (uint64_t)g.N, (uint64_t)g.K, &s);
  if (sram_words[0] < 100 || sram_words[1] < 100 || sram_words[2] < 2) {
    out->unsupported = "an SRAM smaller than 100 words (SCALE-Sim's buffers have no sets then)";
    return TPU_OK;
  }
  run_state st;
  memset(&st, 0, sizeof st);
  tpu_status rc = rd_init(&st.rd[0], sram_words[0], ly->ifmap_h * ly->ifmap_w * ly->channels);
  if (!rc) rc = rd_init(&st.rd[1], sram_words[1], (uint64_t)(g.K * g.N));
  wr_init(&st.wr, sram_words[2], cols);
  if (!rc) {
    run_layer(&g, rows, cols, df, &s, &st);
    wr_finish(&st.wr, st.last_out);
    if (st.wr.oom) rc = TPU_ERR_NOMEM;
  }
  if (!rc) {
    for (int op = 0; op < 2; op++) {
      rd_finish(&st.rd[op], &out->dram[op]);
      out->sram[op] = st.rd[op].sram;
      if (st.rd[op].zero_window) out->unsupported = "two prefetch epochs that end in one cycle (SCALE-Sim "
                                                    "divides by a window of zero cycles)";
    }
    out->dram[2] = st.wr.dram;
    out->sram[2] = st.ofmap_sram;
    if (st.wr.no_lines) out->unsupported = "an OFMAP drain with no lines (SCALE-Sim indexes an empty chunk)";
    out->sram[0].count = s.ifmap_sram_reads;
    out->sram[1].count = s.filter_sram_reads;
    out->sram[2].count = s.ofmap_sram_writes;
    out->total_cycles = (uint64_t)st.last_out;
    out->stall_cycles = (uint64_t)st.stalls;
    for (int k = 0; k < 3; k++) out->dram_bw[k] = words_a_cycle(&out->dram[k]);
  }
  for (int op = 0; op < 2; op++) tpu_free(st.rd[op].stamp);
  tpu_free(st.wr.pidx);
  tpu_free(st.wr.pfill);
  return rc;
}
