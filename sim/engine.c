/*
** engine.c -- runs a program on a chip: units, the HBM share, the
** collectives' barrier, the rounds of chips on host threads (sim/pool.c).
** The design (and why it is exact and thread-independent) is at the top of
** sim/sim_int.h; how long a collective lasts is sim/collective.c. This file
** is the timing: at the tile level each op's values are computed, once it
** is timed, by the functional layer (sim/values.c); none of them is read
** here.
**
** Units and their models (times in core cycles):
**   DMA        issued at max(inputs ready, the previous DMA's issue) once
**              the core has fewer than dma.outstanding in flight (else when
**              one completes). The transfer joins its chip's HBM pool after
**              the HBM latency; the cores with transfers in the pool share
**              the bandwidth fairly (each at most dma.request_bytes a
**              cycle), a core's transfers its share evenly; it ends at the
**              first whole cycle by which it has all its bytes.
**   MXU        each tile of the op's walk (tpu_mxu_walk, as tpu_mxu_gemm:
**              N-tiles dealt round-robin to the core's arrays, passes,
**              K-tiles) goes through that array's tpu_mxu_sched with
**              'earliest' = inputs ready; the op is busy from its first
**              weight load to one past its last result. A later K fold
**              (k_fold) does not wait for the previous fold's drain.
**   VPU        start = max(inputs ready, unit free); cycles from the VPU.
**   INFEED     start = max(inputs ready, unit free); ends at max(start, the
**              batch's ready cycle); [start, end) is an infeed stall.
**   COLL       arrives at max(inputs ready, unit free); starts when the last
**              core arrives; lasts tpu_sim_collective_cycles(): the
**              hierarchical alpha-beta forms of sim/collective.c.
** Not modelled: sim_int.h lists it (the end of its design note).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>

#include "sim/sim_int.h"

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* {==================================================================
** One chip's advance (runs on a worker thread; touches only its cores)
** ================================================================== */
static void chip_fail(sim_chip_rt *ch, tpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void chip_fail(sim_chip_rt *ch, tpu_status st, const char *fmt, ...) {
  if (ch->st != TPU_OK) return;
  ch->st = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ch->err, sizeof ch->err, fmt, ap);
  va_end(ap);
}

/* Records a tile of op i for the event log; false when out of memory. */
static bool record_tile(sim_core_rt *c, int i, const tpu_mxu_walk_tile *t, const tpu_mxu_tile_times *tt) {
  if (c->ntiles == c->captiles) {
    const size_t nc = c->captiles ? 2 * c->captiles : 256;
    tpu_sim_event *a = tpu_realloc(c->tiles, nc * sizeof *a);
    if (!a) return false;
    c->tiles = a;
    c->captiles = nc;
  }
  c->tiles[c->ntiles++] = (tpu_sim_event){ .type = TPU_SIM_EV_TILE, .core = c->id, .op = i,
                                           .start = tt->load_start, .mid = tt->stream_start,
                                           .end = tt->last_result + 1, .tile = *t };
  return true;
}

/* Times matmul op i, whose inputs are ready at 'start': its tiles in walk
** order through their arrays' schedules (the arrays keep their state from
** op to op). From shapes only: try_start computes the values next
** (sim_matmul_values, sim/values.c). */
static void mxu_start(tpu_sim_result *r, sim_chip_rt *ch, sim_core_rt *c, int i, uint64_t start) {
  const sim_op *so = &c->cp->ops[i];
  const tpu_sim_op *o = &so->o;
  const sim_buf *A = &c->cp->bufs[o->a - 1], *D = &c->cp->bufs[o->dst - 1];
  tpu_mxu_walk w;
  tpu_mxu_walk_tile t;
  tpu_mxu_walk_init(&w, &r->cfg.mxu, r->cfg.mxus_per_core, o->precision, D->rows, D->cols,
                    o->trans_a ? A->rows : A->cols);
  uint64_t first = UINT64_MAX, last = 0, streamed_end = 0, streaming[TPU_MAX_MXUS_PER_CORE] = { 0 };
  while (tpu_mxu_walk_next(&w, &t)) {
    tpu_mxu_tile_times tt;
    tpu_mxu_sched_tile(&c->mxu[t.array], t.m, t.k, t.n, start, &tt);
    first = min_u64(first, tt.load_start);
    last = max_u64(last, tt.last_result + 1);
    streaming[t.array] += (uint64_t)t.m;
    streamed_end = max_u64(streamed_end, tt.stream_start + (uint64_t)t.m);
    if (r->events && !record_tile(c, i, &t, &tt))
      chip_fail(ch, TPU_ERR_NOMEM, "core %d: op %d ('%s'): out of memory for the event log", c->id, i, so->name);
  }
  c->busy[i] = c->mid[i] = first;
  c->end[i] = last;
  /* Weight loads not hidden: from the first load to the last streamed row,
  ** the cycles in which the busiest array was not streaming rows (each gap
  ** in its streaming waits for a weight load; the fill and drain after the
  ** last row count as computing). */
  uint64_t most = 0;
  for (int a = 0; a < r->cfg.mxus_per_core; a++) most = max_u64(most, streaming[a]);
  c->wl[i] = streamed_end - first > most ? streamed_end - first - most : 0;
}

/* True when matmul 'so' adds into the accumulators that the earlier matmul
** 'prev' writes (and reads nothing else of it, nor orders after it): a later K fold of one product. Its tiles may then load and
** stream while prev still drains, without waiting for prev's results: the
** MXU runs them in order and each N-tile goes to the same array in both
** (tpu_mxu_walk), so every result lands after prev's in its accumulator. */
static bool k_fold(const sim_core_prog *cp, const sim_op *so, int prev) {
  const tpu_sim_op *p = &cp->ops[prev].o;
  return so->o.kind == TPU_SIM_MATMUL && so->o.accumulate && p->kind == TPU_SIM_MATMUL && p->dst == so->o.dst &&
         so->o.a != p->dst && so->o.b != p->dst && so->o.after != prev + 1;
}

/* A started op's successor this many places down its unit's queue is
** fetched into the cache: in a large program (31 MB of ops for ResNet-50)
** an op's first look-up was a miss to memory. */
#define PREFETCH_OPS 6
/* Tries to start the head op of unit u; true if it resolved or started. */
static bool try_start(tpu_sim_result *r, sim_chip_rt *ch, sim_core_rt *c, int u) {
  if (c->head[u] >= c->qn[u]) return false;
  if (u == SIM_U_DMA && c->nxf >= r->cfg.dma_outstanding) return false;
  if (u == SIM_U_COLL && c->coll_arrived >= 0) return false;
  if (c->waits[u] && c->end[c->waits[u] - 1] == SIM_UNRESOLVED) return false;   /* still waiting on it */
  const int i = c->q[u][c->head[u]];
  const sim_core_prog *cp = c->cp;
  const sim_op *so = &cp->ops[i];
  uint64_t ready = 0;
  for (int d = 0; d < so->ndeps; d++) {
    const int j = cp->deps[so->dep0 + d];
    uint64_t e = c->end[j];
    if (e == SIM_UNRESOLVED) { c->waits[u] = j + 1; return false; }
    if (k_fold(cp, so, j)) e = c->start[j];
    if (e > ready) ready = e;
  }
  const bool values = r->opt.level != TPU_FIDELITY_TIMING;
  uint64_t start = max_u64(ready, c->unit_free[u]);
  c->head[u]++;
  c->waits[u] = 0;
  if (c->head[u] + PREFETCH_OPS < c->qn[u]) {
    const sim_op *nx = &cp->ops[c->q[u][c->head[u] + PREFETCH_OPS]];
    __builtin_prefetch(nx);
    __builtin_prefetch(&nx->ndeps);
  }
  c->start[i] = c->busy[i] = c->mid[i] = start;
  switch (u) {
  case SIM_U_MXU:
    mxu_start(r, ch, c, i, start);
    if (values) {
      const tpu_status ms = sim_matmul_values(&r->cfg, c, so);
      if (ms != TPU_OK)
        chip_fail(ch, ms, "core %d: op %d ('%s'): out of memory for the matmul's values", c->id, i, so->name);
    }
    break;
  case SIM_U_VPU: {
    const uint64_t cyc = sim_vpu_cycles(&r->cfg.vpu, so, cp);
    c->end[i] = c->unit_free[u] = sim_add_cyc(start, cyc);
    if (values) {
      const tpu_status vs = sim_vpu_values(c, so);
      if (vs != TPU_OK)
        chip_fail(ch, vs == TPU_ERR_NOMEM ? TPU_ERR_NOMEM : TPU_ERR_INPUT, "core %d: op %d ('%s'): the VPU "
                  "rejected its operands: %s (labels must lie in [0, cols))", c->id, i, so->name, tpu_status_str(vs));
    }
    break;
  }
  case SIM_U_INFEED: {
    const int64_t b = c->infeed_next++;
    if (b >= cp->ninfeed) {
      chip_fail(ch, TPU_ERR_INPUT, "core %d: op %d ('%s'): infeed dequeue of batch %lld, but core %d's infeed "
                "queue holds %lld batch(es)", c->id, i, so->name, (long long)b, c->id, (long long)cp->ninfeed);
      c->end[i] = start;
      break;
    }
    c->end[i] = c->unit_free[u] = max_u64(start, cp->infeed_ready[b]);
    if (values) sim_infeed_values(r, c, so, b);
    break;
  }
  case SIM_U_DMA: {
    sim_xfer *x = &c->xf[c->nxf++];
    c->unit_free[u] = start;             /* issued in program order */
    *x = (sim_xfer){ .op = i, .enter = sim_add_cyc(start, sim_ceil_cyc(r->hbm_lat - 1e-9)) };
    if (x->enter < ch->tlast) x->enter = ch->tlast;   /* proven not to happen; stay safe */
    c->mid[i] = x->enter;
    if (values) sim_dma_values(c, so);
    break;
  }
  case SIM_U_COLL:
    if (r->cores == 1) {                 /* nothing to wait for or move */
      c->end[i] = c->unit_free[u] = start;
      if (values) {
        int one[1] = { i };
        if (sim_coll_values(r, one) != TPU_OK) chip_fail(ch, TPU_ERR_NOMEM, "out of memory in a collective");
      }
    } else {
      c->head[u]--;                      /* stays at the head until resolved */
      c->coll_arrived = i;
      c->coll_arrival = start;
      const uint64_t lb = sim_add_cyc(start, tpu_sim_collective_cycles(&r->cfg, so->o.coll, so->bytes));
      ch->horizon = ch->horizon == SIM_UNRESOLVED ? lb : max_u64(ch->horizon, lb);
    }
    break;
  }
  return true;
}

static uint64_t next_pool_event(const tpu_sim_result *r, const sim_chip_rt *ch) {
  uint64_t t = SIM_UNRESOLVED;
  for (int k = 0; k < ch->n; k++) {
    const sim_core_rt *c = &r->core[ch->first + k];
    for (int j = 0; j < c->nxf; j++) t = min_u64(t, c->xf[j].in_pool ? c->xf[j].fin : c->xf[j].enter);
  }
  return t;
}

/* Processes every pool event at cycle t: the bytes received since the
** last event, completions, entries; then the new rates. HBM is shared
** fairly by the cores with transfers in the pool (each gets bandwidth /
** cores, at most its engine's request rate), and a core's share evenly by
** its transfers in the pool. */
static void pool_events(tpu_sim_result *r, sim_chip_rt *ch, uint64_t t) {
  const double dt = (double)(t - ch->tlast);
  ch->tlast = t;
  ch->nactive = 0;
  for (int k = 0; k < ch->n; k++) {
    sim_core_rt *c = &r->core[ch->first + k];
    int w = 0;
    for (int j = 0; j < c->nxf; j++) {
      sim_xfer *x = &c->xf[j];
      if (x->in_pool) x->rem -= x->rate * dt;
      if (x->in_pool && x->fin <= t) {   /* done: its slot is free from t */
        c->end[x->op] = t;
        c->unit_free[SIM_U_DMA] = max_u64(c->unit_free[SIM_U_DMA], t);
        continue;
      }
      if (!x->in_pool && x->enter <= t) {
        x->in_pool = true;
        x->rem = (double)c->cp->ops[x->op].bytes;
      }
      c->xf[w++] = *x;                   /* keeps issue order */
    }
    c->nxf = w;
    c->npool = 0;
    for (int j = 0; j < c->nxf; j++) c->npool += c->xf[j].in_pool;
    if (c->npool > 0) ch->nactive += ch->weight;   /* a simulated core stands for 'weight' alike */
  }
  if (!ch->nactive) return;
  const double core_rate = fmin(r->bytes_per_cycle / ch->nactive, r->core_bytes_per_cycle);
  for (int k = 0; k < ch->n; k++) {
    sim_core_rt *c = &r->core[ch->first + k];
    for (int j = 0; j < c->nxf; j++) {
      sim_xfer *x = &c->xf[j];
      if (!x->in_pool) continue;
      x->rate = core_rate / c->npool;
      const double cyc = x->rem / x->rate;
      x->fin = sim_add_cyc(t, cyc <= 1e-9 ? 0 : sim_ceil_cyc(cyc - 1e-9 * cyc));
    }
  }
}

static void chip_advance(void *ctx, int task) {
  tpu_sim_result *r = ctx;
  sim_chip_rt *ch = &r->chip[r->simchip[task]];
  ch->progressed = false;
  for (;;) {
    bool progress = true;
    while (progress && ch->st == TPU_OK) {
      progress = false;
      for (int k = 0; k < ch->n; k++) {
        sim_core_rt *c = &r->core[ch->first + k];
        for (int u = 0; u < SIM_NUNITS; u++)
          while (try_start(r, ch, c, u)) progress = ch->progressed = true;
      }
    }
    if (ch->st != TPU_OK) return;
    const uint64_t t = next_pool_event(r, ch);
    if (t == SIM_UNRESOLVED || (ch->horizon != SIM_UNRESOLVED && t >= ch->horizon)) return;
    pool_events(r, ch, t);
    ch->progressed = true;
  }
}
/* }================================================================== */

/* {==================================================================
** Checks before running: capacities and collective agreement
** ================================================================== */
/* Core c issues the same collectives (kind, bytes, root) as core 0, in the
** same order. Walks the programs' collective queues only (cheap: runs on
** the calling thread). */
static tpu_status check_colls(const tpu_sim_program *p, int c, char *err, size_t cap) {
  char lab[160];
  if (c == 0) return TPU_OK;
  const sim_core_prog *cp = &p->core[c], *c0 = &p->core[0];
  if (cp->ops == c0->ops) return TPU_OK;   /* core 0's program, shared (tpu_sim_program_share) */
  const int n = cp->uqn[SIM_U_COLL], ncoll0 = c0->uqn[SIM_U_COLL];
  for (int k = 0; k < n; k++) {
    const int i = cp->uq[SIM_U_COLL][k];
    if (k >= ncoll0) {
      snprintf(err, cap, "core %d: %s: collective #%d has no counterpart on core 0 (which issues %d); every core "
                 "must issue the same collectives in the same order", c, sim_op_label(cp, i, lab, sizeof lab), k, ncoll0);
      return TPU_ERR_INPUT;
    }
    const sim_op *a = &cp->ops[i], *b = &c0->ops[c0->uq[SIM_U_COLL][k]];
    if (a->o.coll != b->o.coll || a->bytes != b->bytes || a->o.root != b->o.root) {
      snprintf(err, cap, "core %d: %s: collective #%d is %s of %lld bytes (root %d), but core 0's is %s of %lld "
                 "bytes (root %d); every core must issue the same collectives in the same order", c,
                 sim_op_label(cp, i, lab, sizeof lab), k, tpu_sim_coll_name(a->o.coll), (long long)a->bytes,
                 a->o.root, tpu_sim_coll_name(b->o.coll), (long long)b->bytes, b->o.root);
      return TPU_ERR_INPUT;
    }
  }
  if (n != ncoll0) {
    snprintf(err, cap, "core %d issues %d collective(s) and core 0 issues %d; every core must issue the same "
               "collectives in the same order", c, n, ncoll0);
    return TPU_ERR_INPUT;
  }
  return TPU_OK;
}

/* VMEM liveness of one core: a buffer is live from its first to its last
** use in program order. Live bytes change only where a buffer's life starts
** or ends, so the sweep visits those points (sorted) instead of every op.
** Writes its message into 'err'. */
typedef struct vmem_ev { int op; int64_t d; } vmem_ev;
static int vmem_ev_cmp(const void *x, const void *y) {
  const vmem_ev *a = x, *b = y;
  return (a->op > b->op) - (a->op < b->op);
}

static tpu_status check_vmem(const tpu_chip_config *cfg, const sim_core_prog *cp, int c, char *err, size_t cap) {
  char lab[160];
  const int64_t vcap = cfg->vmem_capacity_kib * 1024;
  vmem_ev *ev = tpu_malloc(2 * ((size_t)cp->nbufs + 1) * sizeof *ev);
  if (!ev) { snprintf(err, cap, "out of memory"); return TPU_ERR_NOMEM; }
  int nev = 0;
  for (int b = 0; b < cp->nbufs; b++) {
    const sim_buf *B = &cp->bufs[b];
    if (B->space != TPU_SIM_VMEM || B->first_use < 0) continue;
    ev[nev++] = (vmem_ev){ B->first_use, sim_buf_bytes(B) };
    ev[nev++] = (vmem_ev){ B->last_use + 1, -sim_buf_bytes(B) };
  }
  qsort(ev, (size_t)nev, sizeof *ev, vmem_ev_cmp);
  int64_t live = 0;
  for (int e = 0; e < nev && ev[e].op < cp->nops;) {
    const int i = ev[e].op;
    for (; e < nev && ev[e].op == i; e++) live += ev[e].d;
    if (live > vcap) {
      tpu_free(ev);
      snprintf(err, cap, "core %d: %s: needs %lld bytes of VMEM live at once (the buffers used from their first "
               "to their last op), more than the core's %lld bytes (vmem.capacity_kib %lld); split the "
               "work into smaller tiles or reuse buffers", c, sim_op_label(cp, i, lab, sizeof lab),
               (long long)live, (long long)vcap, (long long)cfg->vmem_capacity_kib);
      return TPU_ERR_RANGE;
    }
  }
  tpu_free(ev);
  return TPU_OK;
}

/* A matmul streams its M rows once per tile on its busiest array, so it
** lasts at least that many cycles: one beyond the engine's range is refused
** before its tiles are walked (their count could pass 2^40). */
static tpu_status check_matmuls(const tpu_chip_config *cfg, tpu_sim_program *p) {
  char lab[160];
  for (int c = 0; c < p->cores; c++) {
    const sim_core_prog *cp = &p->core[c];
    for (int i = 0; i < cp->nops && !cp->share; i++) {   /* a shared program is its owner's, checked there */
      const tpu_sim_op *o = &cp->ops[i].o;
      if (o->kind != TPU_SIM_MATMUL) continue;
      const sim_buf *A = &cp->bufs[o->a - 1], *D = &cp->bufs[o->dst - 1];
      const double M = (double)D->rows, N = (double)D->cols, K = (double)(o->trans_a ? A->rows : A->cols);
      const double least = ceil(ceil(N / cfg->mxu.cols) / cfg->mxus_per_core) * ceil(K / cfg->mxu.rows) *
                           tpu_precision_passes(o->precision) * M;
      if (least > (double)TPU_SIM_MAX_CYCLES) {
        sim_seterr(p, "core %d: %s: %.0f x %.0f x %.0f streams its rows for at least %.4g cycles, longer than the "
                   "engine times (2^53 = %llu cycles)", c, sim_op_label(cp, i, lab, sizeof lab), M, N, K, least,
                   (unsigned long long)TPU_SIM_MAX_CYCLES);
        return TPU_ERR_RANGE;
      }
    }
  }
  return TPU_OK;
}

static tpu_status check_program(const tpu_chip_config *cfg, tpu_sim_program *p) {
  if (check_matmuls(cfg, p) != TPU_OK) return TPU_ERR_RANGE;
  const double hcap = cfg->hbm_capacity_gib * 1073741824.0;
  double *own = tpu_calloc((size_t)p->cores, sizeof *own);   /* each owner's HBM bytes */
  if (!own) { sim_seterr(p, "out of memory"); return TPU_ERR_NOMEM; }
  for (int c = 0; c < p->cores; c++)
    for (int b = 0; b < p->core[c].nbufs && !p->core[c].share; b++)
      if (p->core[c].bufs[b].space == TPU_SIM_HBM) own[c] += (double)sim_buf_bytes(&p->core[c].bufs[b]);
  for (int chip = 0; chip < cfg->cores / cfg->cores_per_chip; chip++) {
    double used = 0;
    for (int c = chip * cfg->cores_per_chip; c < (chip + 1) * cfg->cores_per_chip; c++)
      used += own[p->core[c].share ? p->core[c].share - 1 : c];
    if (used <= hcap) continue;
    used = 0;                            /* over: find the buffer that makes it so */
    for (int c = chip * cfg->cores_per_chip; c < (chip + 1) * cfg->cores_per_chip; c++)
      for (int b = 0; b < p->core[c].nbufs; b++) {
        const sim_buf *B = &p->core[c].bufs[b];
        if (B->space != TPU_SIM_HBM) continue;
        used += (double)sim_buf_bytes(B);
        if (used > hcap) {
          sim_seterr(p, "core %d: buffer '%s' (%lld bytes): the HBM buffers of chip %d need %.0f bytes, more "
                     "than its capacity of %.0f bytes (hbm.capacity_gib %g)", c, B->name,
                     (long long)sim_buf_bytes(B), chip, used, hcap, cfg->hbm_capacity_gib);
          tpu_free(own);
          return TPU_ERR_RANGE;
        }
      }
  }
  tpu_free(own);
  return TPU_OK;
}
/* }================================================================== */

void tpu_sim_result_destroy(tpu_sim_result *r) {
  if (!r) return;
  for (int c = 0; r->core && c < r->cores; c++) {
    sim_core_rt *k = &r->core[c];
    sim_values_free(k);
    tpu_free(k->steps);
    tpu_free(k->step_end);
    tpu_free(k->slices);
    tpu_free(k->tiles);
    tpu_free(k->log);
  }
  tpu_free_aligned(r->opmem);
  tpu_free(r->xfmem);
  tpu_free_aligned(r->core);
  tpu_free_aligned(r->chip);
  tpu_free(r);
}

/* The per-op arrays (start, end, busy, mid) of every core are one block,
** allocated by the calling thread, each core's part on its own cache lines.
** One large block is reused by malloc from run to run, where many smaller
** ones (or ones allocated in a pool thread's arena) go back to the system
** when freed and each run pays ~2,400 page faults again (about 10 ms on a
** virtual machine, as long as the rest of the run). The pages are first
** touched by the pool (setup_core). False when out of memory. */
static bool alloc_ops(tpu_sim_result *r) {
  size_t total = 0;
  for (int s = 0; s < r->nsim; s++) total += 5 * (((size_t)r->p->core[r->sim[s]].nops + 8) & ~(size_t)7);
  r->xfmem = tpu_calloc((size_t)r->cores * (size_t)r->cfg.dma_outstanding, sizeof *r->xfmem);
  if (!(r->opmem = tpu_malloc_aligned(total * sizeof *r->opmem))) return false;
  uint64_t *m = r->opmem;
  for (int c = 0; c < r->cores; c++) {
    sim_core_rt *k = &r->core[c];
    if (k->rep != c) {                   /* a lower core's: set already */
      const sim_core_rt *s = &r->core[k->rep];
      k->start = s->start, k->end = s->end, k->busy = s->busy, k->mid = s->mid, k->wl = s->wl;
      continue;
    }
    const size_t n = ((size_t)r->p->core[c].nops + 8) & ~(size_t)7;   /* nops + 1, rounded up to 64 bytes */
    k->start = m;
    k->end = m + n;
    k->busy = m + 2 * n;
    k->mid = m + 3 * n;
    k->wl = m + 4 * n;
    m += 5 * n;
  }
  return true;
}

/* Runs on the pool. A core that is not simulated gets its result arrays
** only. */
static tpu_status setup_core(tpu_sim_result *r, int id) {
  sim_core_rt *c = &r->core[id];
  const sim_core_prog *cp = &r->p->core[id];
  c->id = id;
  c->chip = id / r->cfg.cores_per_chip;
  c->cp = cp;
  c->xf = r->xfmem + (size_t)id * (size_t)r->cfg.dma_outstanding;
  c->coll_arrived = -1;
  c->steps = tpu_calloc((size_t)r->nsteps, sizeof *c->steps);
  c->step_end = tpu_calloc((size_t)r->nsteps, sizeof *c->step_end);
  if (!c->start || !r->xfmem || !c->steps || !c->step_end) return TPU_ERR_NOMEM;
  if (c->rep != id) return TPU_OK;
  for (int i = 0; i < cp->nops; i++) c->end[i] = SIM_UNRESOLVED;
  for (int u = 0; u < SIM_NUNITS; u++) { c->q[u] = cp->uq[u]; c->qn[u] = cp->uqn[u]; }
  for (int a = 0; a < r->cfg.mxus_per_core; a++) tpu_mxu_sched_init(&c->mxu[a], &r->cfg.mxu);
  return r->opt.level != TPU_FIDELITY_TIMING ? sim_values_alloc(c) : TPU_OK;
}

static void setup_task(void *ctx, int core) {
  tpu_sim_result *r = ctx;
  sim_core_rt *c = &r->core[core];
  /* a core that is not simulated runs a lower core's program: that core's check is its own */
  if (c->rep == core) c->setup_st = check_vmem(&r->cfg, &r->p->core[core], core, c->setup_err, sizeof c->setup_err);
  if (c->setup_st == TPU_OK && setup_core(r, core) != TPU_OK) {
    c->setup_st = TPU_ERR_NOMEM;
    snprintf(c->setup_err, sizeof c->setup_err, "out of memory");
  }
}

static void maxend_task(void *ctx, int task) {
  tpu_sim_result *r = ctx;
  sim_core_rt *c = &r->core[r->sim[task]];
  c->maxend = 0;
  for (int i = 0; i < c->cp->nops; i++) c->maxend = max_u64(c->maxend, c->end[i]);
}

static void account_task(void *ctx, int task) {
  tpu_sim_result *r = ctx;
  const int core = r->sim[task];
  r->core[core].oom = sim_account(r, core) != TPU_OK || (r->events && sim_build_log(r, core) != TPU_OK);
}

/* {==================================================================
** The run
** ================================================================== */
/* A result for p on cfg with its cores and chips allocated (not yet set
** up), or NULL (out of memory; nothing left allocated). */
static tpu_sim_result *new_result(const tpu_chip_config *cfg, tpu_sim_program *p, const tpu_sim_options *opt) {
  tpu_sim_result *r = tpu_calloc(1, sizeof *r);
  if (!r) return NULL;
  r->cfg = *cfg;
  r->p = p;
  r->opt = *opt;
  if (r->opt.level == TPU_FIDELITY_PE) r->opt.level = TPU_FIDELITY_TILE;
  r->events = opt->events || opt->trace;
  r->cores = cfg->cores;
  r->chips = cfg->cores / cfg->cores_per_chip;
  r->bytes_per_cycle = cfg->hbm_bandwidth_gb_per_s * 1e9 / (cfg->clock_mhz * 1e6);
  r->hbm_lat = cfg->hbm_latency_ns * cfg->clock_mhz / 1000.0;
  r->core_bytes_per_cycle = (double)cfg->dma_request_bytes;
  r->nsteps = 1;
  for (int c = 0; c < p->cores; c++)
    if (p->core[c].maxstep + 1 > r->nsteps) r->nsteps = p->core[c].maxstep + 1;
  /* cache-line aligned: neighbours are written by different threads */
  r->core = tpu_malloc_aligned((size_t)r->cores * sizeof *r->core);
  r->chip = tpu_malloc_aligned((size_t)r->chips * sizeof *r->chip);
  if (r->core) memset(r->core, 0, (size_t)r->cores * sizeof *r->core);
  if (r->chip) memset(r->chip, 0, (size_t)r->chips * sizeof *r->chip);
  if (!r->core || !r->chip) { tpu_sim_result_destroy(r); return NULL; }
  for (int k = 0; k < r->chips; k++)
    r->chip[k] = (sim_chip_rt){ .first = k * cfg->cores_per_chip, .n = cfg->cores_per_chip, .weight = 1,
                                .horizon = SIM_UNRESOLVED };
  return r;
}

/* The core whose arrays core c runs (tpu_sim_program_share). */
static int owner(const tpu_sim_program *p, int c) { return p->core[c].share ? p->core[c].share - 1 : c; }

/* Cores a and b run alike: one program and the same infeed ready cycles. */
static bool alike(const tpu_sim_program *p, int a, int b) {
  const sim_core_prog *x = &p->core[a], *y = &p->core[b];
  return owner(p, a) == owner(p, b) && x->ninfeed == y->ninfeed &&
         (x->ninfeed == 0 || !memcmp(x->infeed_ready, y->infeed_ready, (size_t)x->ninfeed * sizeof *x->infeed_ready));
}

/* Which cores and chips are simulated (sim_int.h, "Identical cores run
** once"). At the timing level without the event log: a chip alike, core
** for core, to an earlier simulated chip takes that chip's results; a
** chip whose cores are all alike simulates its first core, with the
** weight of all. Otherwise (and at the tile level, where each core has
** values of its own) every core is simulated. */
static void plan_cores(tpu_sim_result *r) {
  const int n = r->cfg.cores_per_chip;
  const bool fold = r->opt.level == TPU_FIDELITY_TIMING && !r->events;
  for (int k = 0; k < r->chips; k++) {
    sim_chip_rt *ch = &r->chip[k];
    const int f = ch->first;
    int like = -1;                       /* the first core of an earlier simulated chip alike to this one */
    for (int j = 0; fold && j < r->nsimchips && like < 0; j++) {
      const int g = r->chip[r->simchip[j]].first;
      bool same = true;
      for (int i = 0; i < n && same; i++) same = alike(r->p, g + i, f + i);
      if (same) like = g;
    }
    if (like >= 0) {
      for (int i = 0; i < n; i++) r->core[f + i].rep = r->core[like + i].rep;
      continue;
    }
    bool all = fold;
    for (int i = 1; i < n && all; i++) all = alike(r->p, f, f + i);
    if (all) ch->n = 1, ch->weight = n;
    for (int i = 0; i < n; i++) r->core[f + i].rep = all ? f : f + i;
    for (int i = 0; i < ch->n; i++) r->sim[r->nsim++] = f + i;
    r->simchip[r->nsimchips++] = k;
  }
}

/* The ops the run simulates, over its simulated cores, within the engine's
** bound (each costs the run about 40 bytes): a pod slice's data-parallel
** step at the timing level simulates one core; at the tile level, or with
** the event log, every core. */
static tpu_status check_simulated(tpu_sim_result *r) {
  int64_t ops = 0;
  for (int s = 0; s < r->nsim; s++) ops += r->p->core[r->sim[s]].nops;
  if (ops <= TPU_SIM_MAX_OPS) return TPU_OK;
  const bool fold = r->opt.level == TPU_FIDELITY_TIMING && !r->events;
  sim_seterr(r->p, "the run simulates %d of the %d cores, %lld ops in all, more than the engine's limit of %lld: %s",
             r->nsim, r->cores, (long long)ops, (long long)TPU_SIM_MAX_OPS,
             fold ? "its cores are not alike (each its own program or infeed)"
                  : r->events ? "the event log (a trace, the visualizer) keeps every core's; run without it, or on fewer cores"
                              : "the tile level computes every core's values; use the timing level, or fewer cores");
  return TPU_ERR_RANGE;
}

/* A core that is not simulated takes its stall parts from the one that is. */
static void copy_results(tpu_sim_result *r) {
  for (int c = 0; c < r->cores; c++) {
    sim_core_rt *k = &r->core[c];
    const sim_core_rt *s = &r->core[k->rep];
    if (k->rep == c) continue;
    k->maxend = s->maxend;
    k->total = s->total;
    k->memory_busy = s->memory_busy;
    memcpy(k->steps, s->steps, (size_t)r->nsteps * sizeof *k->steps);
    memcpy(k->step_end, s->step_end, (size_t)r->nsteps * sizeof *k->step_end);
  }
}

/* Every core has arrived at its collective ops[c]; the last at 'last'. Ends
** it on every core, with its values, and opens the next round. */
static tpu_status resolve_collective(tpu_sim_result *r, const int *ops, uint64_t last) {
  const sim_op *so = &r->core[0].cp->ops[ops[0]];
  const uint64_t end = sim_add_cyc(last, tpu_sim_collective_cycles(&r->cfg, so->o.coll, so->bytes));
  if (r->opt.level != TPU_FIDELITY_TIMING && sim_coll_values(r, ops) != TPU_OK) {
    sim_seterr(r->p, "out of memory in a collective");
    return TPU_ERR_NOMEM;
  }
  for (int s = 0; s < r->nsim; s++) {
    const int c = r->sim[s];
    sim_core_rt *k = &r->core[c];
    k->mid[ops[c]] = last;
    k->end[ops[c]] = k->unit_free[SIM_U_COLL] = end;
    k->head[SIM_U_COLL]++;
    k->coll_arrived = -1;
  }
  for (int k = 0; k < r->chips; k++) r->chip[k].horizon = SIM_UNRESOLVED;
  r->coll_index++;
  return TPU_OK;
}

/* Some cores wait at a collective (the last arrival so far at 'last'): one
** that has not arrived waits on its chip's next transfer event, so it
** arrives no earlier than that. Raises *glb, the global lower bound on the
** collective's end, and the horizons of the chips waiting; true if *glb
** rose. */
static bool bound_collective(tpu_sim_result *r, uint64_t last, uint64_t *glb) {
  const sim_op *so = NULL;
  for (int s = 0; s < r->nsim && !so; s++) {
    const sim_core_rt *c = &r->core[r->sim[s]];
    if (c->coll_arrived >= 0) so = &c->cp->ops[c->coll_arrived];
  }
  uint64_t lb = last;
  for (int s = 0; s < r->nsimchips; s++) {   /* a chip not simulated is one of these */
    const int k = r->simchip[s];
    bool missing = false;
    for (int j = 0; j < r->chip[k].n; j++) missing |= r->core[r->chip[k].first + j].coll_arrived < 0;
    if (missing) {
      const uint64_t t = next_pool_event(r, &r->chip[k]);
      if (t != SIM_UNRESOLVED) lb = max_u64(lb, t);
    }
  }
  lb = sim_add_cyc(lb, tpu_sim_collective_cycles(&r->cfg, so->o.coll, so->bytes));
  const bool raised = lb > *glb;
  *glb = max_u64(*glb, lb);
  for (int s = 0; s < r->nsimchips; s++) {
    const int k = r->simchip[s];
    bool any = false;
    for (int j = 0; j < r->chip[k].n; j++) any |= r->core[r->chip[k].first + j].coll_arrived >= 0;
    if (any) r->chip[k].horizon = max_u64(r->chip[k].horizon == SIM_UNRESOLVED ? 0 : r->chip[k].horizon, *glb);
  }
  return raised;
}

/* Rounds: every chip advances until blocked, then the collective at the
** barrier is resolved or bounded, until nothing moves. */
static tpu_status run_rounds(tpu_sim_result *r, sim_pool *pl) {
  uint64_t glb = 0;                      /* global lower bound on the pending collective's end */
  for (;;) {
    sim_pool_run(pl, r->nsimchips, chip_advance, r);
    bool progressed = false;
    for (int k = 0; k < r->chips; k++) {
      if (r->chip[k].st != TPU_OK) { sim_seterr(r->p, "%s", r->chip[k].err); return r->chip[k].st; }
      progressed |= r->chip[k].progressed;
    }
    int arrived = 0, ops[TPU_MAX_CORES];
    uint64_t last = 0;
    for (int c = 0; c < r->cores; c++) {
      const sim_core_rt *k = &r->core[r->core[c].rep];
      ops[c] = k->coll_arrived;
      if (ops[c] >= 0) { arrived++; last = max_u64(last, k->coll_arrival); }
    }
    if (arrived == r->cores) {
      tpu_status st = resolve_collective(r, ops, last);
      if (st != TPU_OK) return st;
      glb = 0;
    } else if (!(arrived > 0 ? bound_collective(r, last, &glb) || progressed : progressed)) {
      return TPU_OK;
    }
  }
}

/* Everything must have resolved; else the program deadlocks. */
static tpu_status check_resolved(tpu_sim_result *r) {
  for (int s = 0; s < r->nsim; s++) {
    const int c = r->sim[s];
    const sim_core_rt *k = &r->core[c];
    for (int u = 0; u < SIM_NUNITS; u++)
      if (k->head[u] < k->qn[u] || k->nxf > 0) {
        char lab[160];
        int i = k->nxf > 0 ? k->xf[0].op : k->q[u][k->head[u]];
        sim_seterr(r->p, "core %d: %s never started: the program deadlocks (a collective that some core "
                   "cannot reach?)", c, sim_op_label(k->cp, i, lab, sizeof lab));
        return TPU_ERR_RUNTIME;
      }
  }
  return TPU_OK;
}

/* The run's length, the stall accounting and the event logs; checks that
** the stall parts sum to the run's cycles on every core and step. */
/* "core C: op I ('NAME', kind)": of the ops that end past the engine's
** range, the one that starts first (the lowest core and index on a tie). */
static const char *first_past(const tpu_sim_result *r, char *buf, size_t cap) {
  int bc = -1, bi = -1;
  for (int c = 0; c < r->cores; c++) {
    const sim_core_rt *k = &r->core[c];
    for (int i = 0; i < k->cp->nops; i++)
      if (k->end[i] > TPU_SIM_MAX_CYCLES && (bc < 0 || k->start[i] < r->core[bc].start[bi])) { bc = c; bi = i; }
  }
  char lab[160];
  snprintf(buf, cap, "core %d: %s", bc, bc < 0 ? "?" : sim_op_label(r->core[bc].cp, bi, lab, sizeof lab));
  return buf;
}

static tpu_status account(tpu_sim_result *r, sim_pool *pl) {
  sim_pool_run(pl, r->nsim, maxend_task, r);
  for (int s = 0; s < r->nsim; s++) r->cycles = max_u64(r->cycles, r->core[r->sim[s]].maxend);
  if (r->cycles > TPU_SIM_MAX_CYCLES) {
    char at[224];
    sim_seterr(r->p, "%s ends the run past the engine's range: the run lasts %s%llu cycles, longer than the engine times "
               "(2^53 = %llu cycles, %.3g s at %g MHz): the chip's bandwidths, latencies or clock, the program's "
               "sizes or its infeed are out of proportion", first_past(r, at, sizeof at),
               r->cycles >= SIM_CYCLE_CAP ? "more than " : "", (unsigned long long)r->cycles,
               (unsigned long long)TPU_SIM_MAX_CYCLES, (double)TPU_SIM_MAX_CYCLES / (r->cfg.clock_mhz * 1e6),
               r->cfg.clock_mhz);
    return TPU_ERR_RANGE;
  }
  sim_pool_run(pl, r->nsim, account_task, r);
  for (int s = 0; s < r->nsim; s++)
    if (r->core[r->sim[s]].oom) { sim_seterr(r->p, "out of memory in the stall accounting"); return TPU_ERR_NOMEM; }
  copy_results(r);
  for (int c = 0; c < r->cores; c++) {
    uint64_t sum = 0, stepsum = 0;
    for (int s = 0; s < TPU_SIM_NSTALL; s++) sum += r->core[c].total.cycles[s];
    for (int t = 0; t < r->nsteps; t++)
      for (int s = 0; s < TPU_SIM_NSTALL; s++) stepsum += r->core[c].steps[t].cycles[s];
    if (sum != r->cycles || stepsum != r->cycles) {
      sim_seterr(r->p, "internal error: core %d's stall parts sum to %llu (steps %llu), not %llu cycles", c,
                 (unsigned long long)sum, (unsigned long long)stepsum, (unsigned long long)r->cycles);
      return TPU_ERR_RUNTIME;
    }
  }
  return TPU_OK;
}

tpu_status tpu_sim_run(const tpu_chip_config *cfg, tpu_sim_program *p, const tpu_sim_options *opt,
                       tpu_sim_result **out) {
  *out = NULL;
  char e[512];
  if (tpu_chip_config_validate(cfg, e, sizeof e) != TPU_OK) { sim_seterr(p, "%s", e); return TPU_ERR_CONFIG; }
  if (cfg->cores != p->cores) {
    sim_seterr(p, "the program is for %d core(s) but the chip '%s' has %d", p->cores, cfg->name, cfg->cores);
    return TPU_ERR_INPUT;
  }
  tpu_status st = check_program(cfg, p);
  if (st != TPU_OK) return st;
  tpu_sim_result *r = new_result(cfg, p, opt);
  if (!r) { sim_seterr(p, "out of memory"); return TPU_ERR_NOMEM; }
  int nthreads = opt->threads > 0 ? opt->threads : sim_host_cores();
  plan_cores(r);
  if ((st = check_simulated(r)) != TPU_OK) { tpu_sim_result_destroy(r); return st; }
  if (nthreads > r->nsimchips) nthreads = r->nsimchips;
  if (nthreads > 64) nthreads = 64;
  sim_pool pl;
  sim_pool_start(&pl, nthreads);
  alloc_ops(r);                          /* a failure is reported by setup_core */
  sim_pool_run(&pl, r->cores, setup_task, r);
  for (int c = 0; c < r->cores && st == TPU_OK; c++) {   /* the lowest core's error, whatever the threads */
    if ((st = check_colls(p, c, e, sizeof e)) != TPU_OK) sim_seterr(p, "%s", e);
    else if ((st = r->core[c].setup_st) != TPU_OK) sim_seterr(p, "%s", r->core[c].setup_err);
  }
  if (st == TPU_OK) st = run_rounds(r, &pl);
  if (st == TPU_OK) st = check_resolved(r);
  if (st == TPU_OK) st = account(r, &pl);
  sim_pool_stop(&pl);
  if (st != TPU_OK) { tpu_sim_result_destroy(r); return st; }
  *out = r;
  return TPU_OK;
}
/* }================================================================== */
