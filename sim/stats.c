/*
** stats.c -- stall accounting, the event log and the result accessors.
**
** Accounting is a sweep over one interval list per busy or waiting kind of
** the stall table (sim/stall.def), each the busy intervals of the kind's
** unit, sorted by start because the unit runs in order: MXU busy (first
** weight load to last result of each matmul), VPU busy, infeed wait, DMA in
** flight, collective (arrival to end). Every cycle gets the first kind
** that covers it in the table's priority; a cycle covered by none is idle.
** The sweep is linear in the number of ops and splits at step boundaries,
** so the per-step parts and the whole-run parts are the same count split
** differently. With the event log it also keeps the states, merged into
** maximal runs of one kind.
*/
#include <string.h>

#include "sim/sim_int.h"

typedef struct cursor {
  const sim_core_rt *c;
  const int *q; int n, i;
  int cat;
  uint64_t a, b;               /* current merged interval; a = UINT64_MAX when none is left */
} cursor;

/* Op j's interval for the cursor's kind: a matmul's [busy, end) is split
** into its weight-load part [busy, busy + wl) and its mxu_busy rest. */
static void iv_of(const cursor *k, int j, uint64_t *a, uint64_t *b) {
  const int op = k->q[j];
  *a = k->c->busy[op];
  *b = k->c->end[op];
  if (k->cat == TPU_SIM_WEIGHT_LOAD) *b = *a + k->c->wl[op];
  else if (k->cat == TPU_SIM_MXU_BUSY) *a += k->c->wl[op];
}

/* Moves to the next non-empty merged interval. */
static void next_merged(cursor *k) {
  uint64_t a, b;
  for (;;) {
    if (k->i >= k->n) { k->a = k->b = UINT64_MAX; return; }
    iv_of(k, k->i++, &a, &b);
    if (b > a) break;
  }
  for (;;) {
    if (k->i >= k->n) break;
    uint64_t a2, b2;
    iv_of(k, k->i, &a2, &b2);
    if (a2 > b) break;
    if (b2 > b) b = b2;
    k->i++;
  }
  k->a = a;
  k->b = b;
}

static int add_slice(sim_core_rt *c, uint64_t a, uint64_t b, int cat) {
  if (c->nslices && c->slices[c->nslices - 1].cat == cat && c->slices[c->nslices - 1].b == a) {
    c->slices[c->nslices - 1].b = b;
    return 0;
  }
  if (c->nslices == c->capslices) {
    int nc = c->capslices ? c->capslices * 2 : 64;
    sim_slice *s = tpu_realloc(c->slices, (size_t)nc * sizeof *s);
    if (!s) return -1;
    c->slices = s;
    c->capslices = nc;
  }
  c->slices[c->nslices++] = (sim_slice){ a, b, cat };
  return 0;
}

/* Step ends: a prefix maximum of op ends by step. */
static void step_ends(const tpu_sim_result *r, sim_core_rt *c) {
  for (int s = 0; s < r->nsteps; s++) c->step_end[s] = 0;
  for (int i = 0; i < c->cp->nops; i++) {
    const int s = c->cp->ops[i].o.step;
    if (c->end[i] > c->step_end[s]) c->step_end[s] = c->end[i];
  }
  for (int s = 1; s < r->nsteps; s++)
    if (c->step_end[s - 1] > c->step_end[s]) c->step_end[s] = c->step_end[s - 1];
}

tpu_status sim_account(tpu_sim_result *r, int core) {
  sim_core_rt *c = &r->core[core];
  cursor k[TPU_SIM_NSTALL];    /* the kinds a unit makes true, in priority order */
  int nk = 0;
  for (int s = 0; s < TPU_SIM_NSTALL; s++) {
    const int u = sim_stall_unit(s);
    if (u < 0) continue;
    k[nk] = (cursor){ .c = c, .q = c->q[u], .n = c->qn[u], .cat = s };
    next_merged(&k[nk++]);
  }
  step_ends(r, c);
  cursor dma = { .c = c, .q = c->q[SIM_U_DMA], .n = c->qn[SIM_U_DMA], .cat = TPU_SIM_MEMORY_WAIT };
  c->memory_busy = 0;
  for (next_merged(&dma); dma.a != UINT64_MAX; next_merged(&dma)) c->memory_busy += dma.b - dma.a;
  memset(&c->total, 0, sizeof c->total);
  c->nslices = 0;
  uint64_t t = 0;
  for (int s = 0; s < r->nsteps; s++) {
    const uint64_t hi = s == r->nsteps - 1 ? r->cycles : c->step_end[s];
    memset(&c->steps[s], 0, sizeof c->steps[s]);
    while (t < hi) {
      int cat = TPU_SIM_IDLE;
      uint64_t next = hi;
      bool covered = false;
      for (int j = 0; j < nk; j++) {
        while (k[j].b <= t) next_merged(&k[j]);
        if (k[j].a <= t) {                       /* covers t */
          if (!covered) cat = k[j].cat;
          covered = true;
          if (k[j].b < next) next = k[j].b;
        } else if (k[j].a < next) {
          next = k[j].a;
        }
      }
      c->steps[s].cycles[cat] += next - t;
      c->total.cycles[cat] += next - t;
      if (r->events && add_slice(c, t, next, cat)) return TPU_ERR_NOMEM;
      t = next;
    }
  }
  return TPU_OK;
}

tpu_status sim_build_log(tpu_sim_result *r, int core) {
  sim_core_rt *c = &r->core[core];
  const sim_core_prog *cp = c->cp;
  c->log = tpu_malloc(((size_t)cp->nops + c->ntiles + (size_t)c->nslices + 1) * sizeof *c->log);
  if (!c->log) return TPU_ERR_NOMEM;
  size_t e = 0, t = 0;
  int64_t batch = 0;
  for (int i = 0; i < cp->nops; i++) {
    const tpu_sim_kind kind = cp->ops[i].o.kind;
    c->log[e++] = (tpu_sim_event){ .type = (tpu_sim_event_type)kind, .core = core, .op = i, .start = c->start[i],
                                   .mid = c->mid[i], .end = c->end[i], .stall = -1,
                                   .batch = kind == TPU_SIM_INFEED ? batch++ : -1 };
    while (t < c->ntiles && c->tiles[t].op == i) {   /* recorded in program order, walk order within an op */
      c->log[e] = c->tiles[t++];
      c->log[e].stall = -1;
      c->log[e++].batch = -1;
    }
  }
  for (int j = 0; j < c->nslices; j++) {
    const sim_slice *sl = &c->slices[j];
    c->log[e++] = (tpu_sim_event){ .type = TPU_SIM_EV_STALL, .core = core, .op = -1, .start = sl->a, .mid = sl->a,
                                   .end = sl->b, .stall = sl->cat, .batch = -1 };
  }
  c->nlog = e;
  tpu_free(c->tiles);
  c->tiles = NULL;
  c->ntiles = c->captiles = 0;
  return TPU_OK;
}

/* {==================================================================
** Accessors
** ================================================================== */
uint64_t tpu_sim_result_cycles(const tpu_sim_result *r) { return r->cycles; }
int tpu_sim_result_cores(const tpu_sim_result *r) { return r->cores; }
int tpu_sim_result_steps(const tpu_sim_result *r) { return r->nsteps; }

void tpu_sim_result_stalls(const tpu_sim_result *r, int core, int step, tpu_sim_stalls *out) {
  memset(out, 0, sizeof *out);
  if (core < -1 || core >= r->cores || step < -1 || step >= r->nsteps) return;
  for (int c = core < 0 ? 0 : core; c < (core < 0 ? r->cores : core + 1); c++) {
    const tpu_sim_stalls *s = step < 0 ? &r->core[c].total : &r->core[c].steps[step];
    for (int j = 0; j < TPU_SIM_NSTALL; j++) out->cycles[j] += s->cycles[j];
  }
}

uint64_t tpu_sim_result_step_end(const tpu_sim_result *r, int core, int step) {
  if (core < 0 || core >= r->cores || step < 0 || step >= r->nsteps) return 0;
  return r->core[core].step_end[step];
}

void tpu_sim_result_op_times(const tpu_sim_result *r, int core, int index, uint64_t *start, uint64_t *end) {
  *start = *end = 0;
  if (core < 0 || core >= r->cores || index < 0 || index >= r->core[core].cp->nops) return;
  *start = r->core[core].start[index];
  *end = r->core[core].end[index];
}

uint64_t tpu_sim_result_memory_busy(const tpu_sim_result *r, int core) {
  uint64_t sum = 0;
  for (int c = 0; c < r->cores; c++)
    if (core < 0 || core == c) sum += r->core[c].memory_busy;
  return sum;
}

const char *tpu_sim_result_bound(const tpu_sim_result *r) {
  tpu_sim_stalls s;
  tpu_sim_result_stalls(r, -1, -1, &s);
  return tpu_sim_result_memory_busy(r, -1) + s.cycles[TPU_SIM_WEIGHT_LOAD] > s.cycles[TPU_SIM_MXU_BUSY] ? "memory"
                                                                                                        : "compute";
}

uint64_t tpu_sim_result_op_busy(const tpu_sim_result *r, int core, int index) {
  if (core < 0 || core >= r->cores || index < 0 || index >= r->core[core].cp->nops) return 0;
  return r->core[core].busy[index];
}

const float *tpu_sim_result_buffer(const tpu_sim_result *r, int core, int buf) {
  if (core < 0 || core >= r->cores || !r->core[core].val) return NULL;
  if (buf < 1 || buf > r->core[core].cp->nbufs) return NULL;
  return r->core[core].val[buf - 1];
}

size_t tpu_sim_result_events(const tpu_sim_result *r, int core, const tpu_sim_event **ev) {
  *ev = NULL;
  if (core < 0 || core >= r->cores || !r->core[core].log) return 0;
  *ev = r->core[core].log;
  return r->core[core].nlog;
}
/* }================================================================== */
