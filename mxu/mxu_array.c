/*
** mxu_array.c -- the PE-level model of the MXU: every cell, every cycle.
**
** What is modelled (see mxu.h for the contract). A rows x cols grid of
** cells, each with an active weight register, a shadow weight register, the
** activation it holds and the partial sum it passes down. Per cycle t:
**
**   1. control: the streamer starts the next loaded tile once its weights
**      are in place and the previous tile's last vector has entered; then
**      the loader starts the next queued tile once the port is free, the
**      tile's 'earliest' has come and the shadow may be overwritten (double
**      buffering: the previous tile has begun streaming; single: its last
**      vector has entered). Both are greedy, cycle by cycle, so L_i and s_i
**      come out as the smallest values the header's constraints allow.
**   2. feed: row r receives activation (t - r - s_i) of the tile whose band
**      covers it (+0.0 for rows >= K, and when no tile does).
**   3. swap: cells on the anti-diagonal r + c == t - s_i take tile i's
**      weight from their shadow (+0.0 outside the K x N block).
**   4. shift: every column loading tile i shifts its shadow chain down one
**      row, from the top to the load front (which moves one row per cycle),
**      and takes the next weight row (last row first) at the top; column c
**      runs c cycles behind column 0. Swaps read the shadow before shifts
**      write it, as registers clocked on the same edge would.
**   5. compute: psum(r,c) = fmaf(act(r,c), w(r,c), psum(r-1,c) of cycle t-1),
**      +0.0 entering row 0, for every cell.
**   6. drain: the bottom row's psums that belong to a tile's N columns are
**      written into its accumulators (acc + psum, or psum).
**
** Representation (why it is fast). State is structure-of-arrays, row-major:
** psum and active weight per cell. Psums are updated in place bottom-up, so
** row r reads row r-1 before row r-1 is overwritten: no second copy. Shift
** registers whose contents only move are kept as delay lines, which hold the
** same register contents without moving them every cycle:
**   - the activation registers of a row only move right: row r's cells hold
**     line[r][pos .. pos+cols); each cycle 'pos' moves one place left and the
**     new activation is written at line[r][pos] (the window is copied back to
**     the far end now and then);
**   - a shadow chain only moves down (from the top to the load front): column
**     c's chain keeps every weight that entered it, by entry number, and row
**     r's register is the entry r places before the newest that reached it;
**     the swap reads exactly that register (see shift() and swap()).
** Only the state a step changes is written: one activation per row, one
** weight entry per loading column, one weight per swapping cell, and the
** psum of every cell (a real fmaf, every cell, every cycle). The cell update is then one contiguous fmaf loop per row that the
** compiler vectorizes; it is built for AVX-512, AVX2+FMA and portable C and
** picked at run time (AVX2 when the host has it: as fast as AVX-512 where
** measured, and the wide units can lower the clock; TPU_SIMD forces any
** path, as it does the fast kernel's), all giving the same bits (IEEE fma is
** exactly rounded). Columns >= N of a tile see the activation +0.0 (mxu.h):
** those cells are recomputed with +0.0 right after their row's pass, before
** the row below reads them.
**
** Skipped work, and why it changes nothing: when no tile has been in flight
** for rows + cols + 2 cycles, every activation register holds +0.0 and every
** psum has reached its fixed point, so a cycle leaves all state and the view
** as they were; tpu_mxu_tick() then only advances time, and tpu_mxu_run()
** jumps over such gaps (a tile waiting for 'earliest').
**
** Not modelled: what a physical array does with values in idle cells beyond
** computing with activation +0.0; wire delay; power.
*/
#include <math.h>
#include <string.h>

#include "mxu/mxu_int.h"

#define NOT_YET UINT64_MAX

typedef struct mxu_job {
  tpu_mxu_tile t;              /* borrowed pointers, as pushed */
  uint64_t index;              /* push order, from 0 */
  uint64_t load;               /* L_i, NOT_YET until the loader takes it */
  uint64_t stream;             /* s_i, NOT_YET until the streamer takes it */
  uint64_t entry0;             /* entry number of this tile's first weight row */
  uint64_t last;               /* cycle the last result is written */
  uint64_t gone;               /* last cycle the band is inside the array */
  bool done;
} mxu_job;

typedef struct gate { int64_t s, m; int n; } gate;   /* a streaming tile with N < cols */

typedef void (*compute_fn)(tpu_mxu *m, int ng, int64_t t);

struct tpu_mxu {
  tpu_mxu_config cfg;
  int rows, cols;
  uint64_t cycle;              /* index of the next cycle to run */
  float *psum;                 /* rows x cols: psum leaving each cell this cycle */
  float *weight;               /* rows x cols: active weights */
  float *chain;                /* cols x chain_len: what entered each shadow chain */
  int chain_len;               /* power of 2 >= 2 * rows */
  uint64_t entries;            /* weight rows entered so far (every column) */
  float *line;                 /* rows x line_len: activation delay lines */
  int line_len, pos;           /* row r's cells hold line[r*line_len + pos + c] */
  gate *gates;                 /* scratch, rows + cols + 1 entries */
  mxu_job *q;                  /* [head, load) in flight, [load, len) queued */
  size_t q_cap, q_head, q_stream, q_load, q_len;
  uint64_t pushed, pending;    /* tiles pushed; tiles pushed but not done */
  uint64_t loader_free;        /* first cycle the weight port is free */
  uint64_t stream_free;        /* first cycle the next tile may stream (s + M of the last) */
  uint64_t quiet;              /* cycles in a row with no tile in flight */
  bool no_skip;                /* tests: step fixed-point cycles anyway */
  mxu_simd kernel;
  compute_fn compute;
  tpu_mxu_stats stats;
};

static const float ZERO_ROW[TPU_MXU_MAX_DIM];   /* +0.0 entering row 0 */

/* {==================================================================
** The cell update (step 5), one build per instruction set
** ================================================================== */

static inline __attribute__((always_inline)) void
row_fma(int n, const float *restrict x, const float *restrict w,
        const float *restrict above, float *restrict p) {
  for (int c = 0; c < n; c++) p[c] = fmaf(x[c], w[c], above[c]);
}
static inline __attribute__((always_inline)) void
row_fma0(int n, const float *restrict w, const float *restrict above, float *restrict p) {
  for (int c = 0; c < n; c++) p[c] = fmaf(0.0f, w[c], above[c]);
}

/* Step 5, rows bottom-up, so row r reads row r-1's psum of the previous
** cycle before it is overwritten. */
static inline __attribute__((always_inline)) void
compute_body(tpu_mxu *m, int ng, int64_t t) {
  const int rows = m->rows, cols = m->cols, pos = m->pos;
  const size_t C = (size_t)cols, L = (size_t)m->line_len;
  const float *line = m->line, *w = m->weight;
  float *psum = m->psum;
  const gate *g = m->gates;
  for (int r = rows - 1; r >= 0; r--) {
    const float *above = r ? psum + (size_t)(r - 1) * C : ZERO_ROW;
    const float *wr = w + (size_t)r * C;
    float *p = psum + (size_t)r * C;
    row_fma(cols, line + (size_t)r * L + (size_t)pos, wr, above, p);
    for (int i = 0; i < ng; i++) {      /* columns >= N see activation +0.0 */
      int64_t hi = t - r - g[i].s, lo = hi - g[i].m + 1;
      if (lo < g[i].n) lo = g[i].n;
      if (hi > cols - 1) hi = cols - 1;
      if (lo <= hi) row_fma0((int)(hi - lo + 1), wr + lo, above + lo, p + lo);
    }
  }
}

static void compute_generic(tpu_mxu *m, int ng, int64_t t) { compute_body(m, ng, t); }

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_KERNELS 1
__attribute__((target("avx2,fma")))
static void compute_avx2(tpu_mxu *m, int ng, int64_t t) { compute_body(m, ng, t); }
__attribute__((target("avx512f,fma,prefer-vector-width=512")))
static void compute_avx512(tpu_mxu *m, int ng, int64_t t) { compute_body(m, ng, t); }
#endif

mxu_simd mxu_array_kernel(const tpu_mxu *m) { return m->kernel; }
void mxu_array_set_skip(tpu_mxu *m, bool skip) { m->no_skip = !skip; }

bool mxu_array_set_kernel(tpu_mxu *m, mxu_simd k) {
  if (!mxu_simd_supported(k)) return false;
  m->kernel = k;
  m->compute = compute_generic;
#ifdef HAVE_X86_KERNELS
  if (k == MXU_SIMD_AVX2) m->compute = compute_avx2;
  if (k == MXU_SIMD_AVX512) m->compute = compute_avx512;
#endif
  return true;
}
/* }================================================================== */

/* {==================================================================
** Life cycle and queue
** ================================================================== */

tpu_status tpu_mxu_create(const tpu_mxu_config *cfg, tpu_mxu **out) {
  *out = NULL;
  if (!cfg || tpu_mxu_config_check(cfg) != TPU_OK) return TPU_ERR_CONFIG;
  if (cfg->dataflow != TPU_MXU_WS) return TPU_ERR_CONFIG;   /* this is the ws array (is: tpu_mxu_gemm transposes) */
  tpu_mxu *m = tpu_calloc(1, sizeof *m);
  if (!m) return TPU_ERR_NOMEM;
  const size_t R = (size_t)cfg->rows, C = (size_t)cfg->cols;
  m->cfg = *cfg;
  m->rows = cfg->rows;
  m->cols = cfg->cols;
  /* the window slides left 2*cols+32 times between copies back */
  m->line_len = 3 * cfg->cols + 32;
  m->pos = m->line_len - cfg->cols;
  m->psum = tpu_calloc(R * C, sizeof(float));
  m->weight = tpu_calloc(R * C, sizeof(float));
  m->chain_len = 2;
  while (m->chain_len < 2 * cfg->rows) m->chain_len *= 2;
  m->chain = tpu_calloc(C * (size_t)m->chain_len, sizeof(float));
  m->line = tpu_calloc(R * (size_t)m->line_len, sizeof(float));
  m->gates = tpu_calloc(R + C + 1, sizeof(gate));
  if (!m->psum || !m->weight || !m->chain || !m->line || !m->gates) goto fail;
  if (!mxu_array_set_kernel(m, mxu_simd_pe_default())) mxu_array_set_kernel(m, MXU_SIMD_GENERIC);
  *out = m;
  return TPU_OK;
fail:
  tpu_mxu_destroy(m);
  return TPU_ERR_NOMEM;
}

void tpu_mxu_destroy(tpu_mxu *m) {
  if (!m) return;
  tpu_free(m->q);
  tpu_free(m->gates);
  tpu_free(m->line);
  tpu_free(m->chain);
  tpu_free(m->weight);
  tpu_free(m->psum);
  tpu_free(m);
}

tpu_status tpu_mxu_push(tpu_mxu *m, const tpu_mxu_tile *t) {
  if (t->m < 1 || t->k < 1 || t->k > m->rows || t->n < 1 || t->n > m->cols) return TPU_ERR_CONFIG;
  if (!t->act || !t->w || !t->out) return TPU_ERR_CONFIG;
  if (t->lda < t->k || t->ldw < t->n || t->ldo < t->n) return TPU_ERR_CONFIG;
  if (m->q_len == m->q_cap) {
    if (m->q_head >= m->q_cap / 2 && m->q_head > 0) {   /* slide the live part down */
      size_t h = m->q_head;
      memmove(m->q, m->q + h, (m->q_len - h) * sizeof *m->q);
      m->q_len -= h; m->q_load -= h; m->q_stream -= h; m->q_head = 0;
    } else {
      size_t cap = m->q_cap ? 2 * m->q_cap : 16;
      mxu_job *q = tpu_realloc(m->q, cap * sizeof *q);
      if (!q) return TPU_ERR_NOMEM;
      m->q = q;
      m->q_cap = cap;
    }
  }
  m->q[m->q_len++] = (mxu_job){ .t = *t, .index = m->pushed++, .load = NOT_YET,
                                .stream = NOT_YET, .last = NOT_YET };
  m->pending++;
  return TPU_OK;
}

bool tpu_mxu_idle(const tpu_mxu *m) { return m->pending == 0; }
const tpu_mxu_config *tpu_mxu_get_config(const tpu_mxu *m) { return &m->cfg; }
void tpu_mxu_get_stats(const tpu_mxu *m, tpu_mxu_stats *out) { *out = m->stats; }
/* }================================================================== */

/* {==================================================================
** One cycle
** ================================================================== */

/* Cells (r,c), r < K, c < N, with r + c <= x. */
static int64_t cells_upto(int64_t x, int64_t K, int64_t N) {
  if (x < 0) return 0;
  int64_t total = 0, r_full = x - N + 1;      /* rows r <= r_full have all N cells */
  if (r_full > K - 1) r_full = K - 1;
  if (r_full >= 0) total += (r_full + 1) * N;
  int64_t a = r_full + 1 > 0 ? r_full + 1 : 0, b = x < K - 1 ? x : K - 1;
  if (a <= b) total += (b - a + 1) * (x + 1) - (a + b) * (b - a + 1) / 2;   /* sum of x-r+1 */
  return total;
}

static void control(tpu_mxu *m, uint64_t t) {
  if (m->q_stream < m->q_load) {
    mxu_job *j = &m->q[m->q_stream];
    if (t >= j->load + (uint64_t)j->t.k && t >= m->stream_free) {
      j->stream = t;
      j->last = t + (uint64_t)(j->t.m - 1) + (uint64_t)(m->rows - 1) + (uint64_t)(j->t.n - 1);
      j->gone = t + (uint64_t)(j->t.m - 1) + (uint64_t)(m->rows - 1) + (uint64_t)(m->cols - 1);
      m->stream_free = t + (uint64_t)j->t.m;
      m->q_stream++;
    }
  }
  if (m->q_load < m->q_len && m->q_stream == m->q_load) {
    mxu_job *j = &m->q[m->q_load];
    if (t >= j->t.earliest && t >= m->loader_free && (m->cfg.double_buffer || t >= m->stream_free)) {
      j->load = t;
      j->entry0 = m->entries;
      m->entries += (uint64_t)j->t.k;
      m->loader_free = t + (uint64_t)j->t.k;
      m->q_load++;
      m->stats.weight_loads++;
    }
  }
}

/* Step 2: the activations entering column 0 of every row this cycle. */
static void feed(tpu_mxu *m, uint64_t t) {
  const int R = m->rows;
  float *line = m->line;
  const size_t L = (size_t)m->line_len;
  if (m->pos == 0) {      /* copy the live window back to the far end */
    const int keep = m->cols - 1;
    for (int r = 0; r < R; r++)
      memmove(line + (size_t)r * L + (L - (size_t)keep), line + (size_t)r * L,
              (size_t)keep * sizeof(float));
    m->pos = (int)L - keep;
  }
  m->pos--;
  const size_t pos = (size_t)m->pos;
  for (int r = 0; r < R; r++) line[(size_t)r * L + pos] = 0.0f;
  for (size_t i = m->q_head; i < m->q_stream; i++) {
    const mxu_job *j = &m->q[i];
    int64_t d = (int64_t)(t - j->stream);
    int64_t lo = d - j->t.m + 1, hi = d;        /* rows whose slot t - r is in the band */
    if (lo < 0) lo = 0;
    if (hi > R - 1) hi = R - 1;
    if (hi > j->t.k - 1) hi = j->t.k - 1;       /* rows >= K keep +0.0 */
    for (int64_t r = lo; r <= hi; r++)
      line[(size_t)r * L + pos] = j->t.act[(size_t)(d - r) * (size_t)j->t.lda + (size_t)r];
  }
}

/* Step 3: the anti-diagonal t - s_i takes tile i's weights from the shadow.
** Row r of column c's chain then holds entry entry0 + K - 1 - r (the chain
** was fed last row first); no later entry has reached row r yet, since the
** next load's front arrives there no earlier than this swap (L_{i+1} >= s_i). */
static void swap(tpu_mxu *m, uint64_t t) {
  const int R = m->rows, C = m->cols;
  const size_t len = (size_t)m->chain_len, mask = len - 1;
  for (size_t i = m->q_head; i < m->q_stream; i++) {
    const mxu_job *j = &m->q[i];
    int64_t d = (int64_t)(t - j->stream);
    if (d > R + C - 2) continue;
    const uint64_t top = j->entry0 + (uint64_t)j->t.k - 1;
    int64_t lo = d - C + 1 > 0 ? d - C + 1 : 0, hi = d < R - 1 ? d : R - 1;
    for (int64_t r = lo; r <= hi; r++) {
      int64_t c = d - r;
      size_t at = (size_t)r * (size_t)C + (size_t)c;
      m->weight[at] = (r < j->t.k && c < j->t.n)
        ? m->chain[(size_t)c * len + ((size_t)(top - (uint64_t)r) & mask)] : 0.0f;
    }
  }
}

/* Step 4: every column loading tile i takes weight row K-1-step at the top
** of its shadow chain (step = t - L_i - c) and the chain shifts down one row
** from the top to the load front. A chain that only ever shifts its upper
** part down is kept as a delay line, like the activations: chain[c] holds
** every entry by number (entry0 + step), and row r's register is the entry
** r places before the newest one that has reached it (swap() reads it). The
** line is 2*rows long: an entry is read at most rows cycles after the next
** load begins, so at most K + rows <= 2*rows entries are ever live. */
static void shift(tpu_mxu *m, uint64_t t) {
  const int C = m->cols;
  const size_t len = (size_t)m->chain_len, mask = len - 1;
  for (size_t i = m->q_head; i < m->q_load; i++) {
    const mxu_job *j = &m->q[i];
    int64_t e = (int64_t)(t - j->load), K = j->t.k;
    if (e > K - 1 + C - 1) continue;
    int64_t c_lo = e - K + 1 > 0 ? e - K + 1 : 0, c_hi = e < C - 1 ? e : C - 1;
    for (int64_t c = c_lo; c <= c_hi; c++) {
      int64_t step = e - c, row = K - 1 - step;
      m->chain[(size_t)c * len + ((size_t)(j->entry0 + (uint64_t)step) & mask)] =
        c < j->t.n ? j->t.w[(size_t)row * (size_t)j->t.ldw + (size_t)c] : 0.0f;
    }
  }
}

/* Step 6 and the counters: results leaving the bottom row. */
static void drain(tpu_mxu *m, uint64_t t) {
  const int R = m->rows;
  const float *bottom = m->psum + (size_t)(R - 1) * (size_t)m->cols;
  bool busy = false;
  for (size_t i = m->q_head; i < m->q_stream; i++) {
    mxu_job *j = &m->q[i];
    if (j->done) continue;
    int64_t d = (int64_t)(t - j->stream), M = j->t.m;
    int64_t useful = cells_upto(d, j->t.k, j->t.n) - cells_upto(d - M, j->t.k, j->t.n);
    if (useful > 0) { busy = true; m->stats.macs += (uint64_t)useful; }
    int64_t b = d - (R - 1);                    /* result (b - n, n) leaves column n */
    int64_t lo = b - M + 1 > 0 ? b - M + 1 : 0, hi = b < j->t.n - 1 ? b : j->t.n - 1;
    float *out = j->t.out;
    const size_t ldo = (size_t)j->t.ldo;
    if (j->t.accumulate)
      for (int64_t n = lo; n <= hi; n++) out[(size_t)(b - n) * ldo + (size_t)n] += bottom[n];
    else
      for (int64_t n = lo; n <= hi; n++) out[(size_t)(b - n) * ldo + (size_t)n] = bottom[n];
    if (t == j->last) {
      j->done = true;
      m->pending--;
      m->stats.tiles_done++;
    }
  }
  if (busy) m->stats.busy_cycles++;
}

void tpu_mxu_tick(tpu_mxu *m) {
  const uint64_t t = m->cycle;
  /* retire finished tiles whose band (columns >= N included: they gate those
  ** cells) left the array before the last cycle (the view shows that one) */
  while (m->q_head < m->q_stream && m->q[m->q_head].done && m->q[m->q_head].gone < t) m->q_head++;
  control(m, t);
  const bool in_flight = m->q_head < m->q_load;
  m->quiet = in_flight ? 0 : m->quiet + 1;
  if (m->quiet > (uint64_t)(m->rows + m->cols + 2) && !m->no_skip) {
    /* Fixed point: all activations +0.0, psums settled, nothing loading. A
    ** cycle would rewrite every value with itself (see the top comment). */
    m->cycle++;
    m->stats.cycles++;
    return;
  }
  feed(m, t);
  swap(m, t);                 /* reads the shadow before this cycle's shift */
  int ng = 0;
  for (size_t i = m->q_head; i < m->q_stream; i++) {
    const mxu_job *j = &m->q[i];
    if (j->t.n < m->cols && t <= j->gone)
      m->gates[ng++] = (gate){ (int64_t)j->stream, j->t.m, j->t.n };
  }
  shift(m, t);
  m->compute(m, ng, (int64_t)t);
  drain(m, t);
  m->cycle++;
  m->stats.cycles++;
}

uint64_t tpu_mxu_run(tpu_mxu *m) {
  while (m->pending > 0) {
    /* nothing in flight, state at its fixed point, next tile not yet allowed
    ** to load: jump to its 'earliest' (identical to ticking there) */
    if (m->q_head == m->q_load && m->quiet > (uint64_t)(m->rows + m->cols + 2) && !m->no_skip) {
      uint64_t go = m->q[m->q_load].t.earliest;
      if (go > m->cycle) {
        m->stats.cycles += go - m->cycle;
        m->cycle = go;
      }
    }
    tpu_mxu_tick(m);
  }
  return m->cycle;
}
/* }================================================================== */

/* {==================================================================
** View
** ================================================================== */

void tpu_mxu_view_cells(const tpu_mxu *m, tpu_mxu_view *out) {
  const int R = m->rows, C = m->cols;
  const size_t cells = (size_t)R * (size_t)C;
  if (out->weight) memcpy(out->weight, m->weight, cells * sizeof(float));
  if (out->psum) memcpy(out->psum, m->psum, cells * sizeof(float));
  if (out->act)
    for (int r = 0; r < R; r++)
      memcpy(out->act + (size_t)r * (size_t)C, m->line + (size_t)r * (size_t)m->line_len + m->pos,
             (size_t)C * sizeof(float));
  if (out->state) memset(out->state, TPU_MXU_CELL_IDLE, cells);
  if (out->tile) memset(out->tile, -1, cells);
  if (out->shadow) memset(out->shadow, 0, cells);
  if (m->cycle == 0) return;
  const int64_t t = (int64_t)m->cycle - 1;     /* the cycle last run */
  for (size_t i = m->q_head; i < m->q_load; i++) {
    const mxu_job *j = &m->q[i];
    const int64_t K = j->t.k, N = j->t.n, M = j->t.m;
    /* shadow: r < K, c < N and L + c + r <= t < s + r + c */
    for (int64_t r = 0; out->shadow && r < K; r++)
      for (int64_t c = 0; c < N && (int64_t)j->load + c + r <= t; c++)
        if (j->stream == NOT_YET || t < (int64_t)j->stream + r + c) out->shadow[(size_t)r * (size_t)C + (size_t)c] = 1;
    /* loading: r < K and L + c + r <= t <= L + c + K - 1 */
    int64_t e = t - (int64_t)j->load;
    if (out->state && e >= 0 && e <= K - 1 + C - 1)
      for (int64_t r = 0; r < K && r <= e; r++)
        for (int64_t c = (e - K + 1 > 0 ? e - K + 1 : 0); c <= e - r && c < C; c++) {
          uint8_t *st = &out->state[(size_t)r * (size_t)C + (size_t)c];
          if (*st == TPU_MXU_CELL_IDLE) *st = TPU_MXU_CELL_LOADING;
        }
    if (j->stream == NOT_YET || (int64_t)j->stream > t) continue;
    /* band: s <= t - r - c < s + M; columns >= N and rows >= K see +0.0 */
    int64_t d = t - (int64_t)j->stream;
    for (int64_t r = 0; r < R && r <= d; r++) {
      int64_t c_lo = d - r - M + 1 > 0 ? d - r - M + 1 : 0, c_hi = d - r < C - 1 ? d - r : C - 1;
      for (int64_t c = c_lo; c <= c_hi; c++) {
        size_t at = (size_t)r * (size_t)C + (size_t)c;
        if (c >= N) {
          if (out->act) out->act[at] = 0.0f;
          continue;
        }
        if (r >= K) continue;
        if (out->state) out->state[at] = TPU_MXU_CELL_COMPUTING;
        if (out->tile) out->tile[at] = (int8_t)(j->index % 128);
      }
    }
  }
}
/* }================================================================== */
