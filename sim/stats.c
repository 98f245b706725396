/*
** stats.c -- stall accounting, result accessors and the trace.
**
** Accounting is a sweep over five interval lists per core, one per busy or
** waiting state, each sorted by start because its unit runs in order:
** MXU busy (first weight load to last result of each matmul), VPU busy,
** infeed wait, DMA in flight, collective (arrival to end). Every cycle gets
** the first state that covers it in that priority; a cycle covered by none
** is idle. The sweep is linear in the number of ops and splits at step
** boundaries, so the per-step parts and the whole-run parts are the same
** count split differently.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

typedef struct cursor {
  const sim_core_rt *c;
  const int *q; int n, i;
  int cat;
  uint64_t a, b;               /* current merged interval; a = UINT64_MAX when none is left */
} cursor;

static void iv_of(const cursor *k, int j, uint64_t *a, uint64_t *b) {
  const int op = k->q[j];
  *a = k->cat == TPU_SIM_MXU_BUSY ? k->c->busy[op] : k->c->start[op];
  *b = k->c->end[op];
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

tpu_status sim_account(tpu_sim_result *r, int core) {
  sim_core_rt *c = &r->core[core];
  static const int UNIT_OF[5] = { SIM_U_MXU, SIM_U_VPU, SIM_U_INFEED, SIM_U_DMA, SIM_U_COLL };
  cursor k[5];
  for (int j = 0; j < 5; j++) {
    k[j] = (cursor){ .c = c, .q = c->q[UNIT_OF[j]], .n = c->qn[UNIT_OF[j]], .cat = j };
    next_merged(&k[j]);
  }
  /* step ends: a prefix maximum of op ends by step */
  for (int s = 0; s < r->nsteps; s++) c->step_end[s] = 0;
  for (int i = 0; i < c->cp->nops; i++) {
    const int s = c->cp->ops[i].o.step;
    if (c->end[i] > c->step_end[s]) c->step_end[s] = c->end[i];
  }
  for (int s = 1; s < r->nsteps; s++)
    if (c->step_end[s - 1] > c->step_end[s]) c->step_end[s] = c->step_end[s - 1];
  memset(&c->total, 0, sizeof c->total);
  c->nslices = 0;
  uint64_t t = 0;
  for (int s = 0; s < r->nsteps; s++) {
    const uint64_t hi = s == r->nsteps - 1 ? r->cycles : c->step_end[s];
    memset(&c->steps[s], 0, sizeof c->steps[s]);
    while (t < hi) {
      int cat = TPU_SIM_IDLE;
      uint64_t next = hi;
      for (int j = 0; j < 5; j++) {
        while (k[j].b <= t) next_merged(&k[j]);
        if (k[j].a <= t) {                       /* covers t */
          if (cat == TPU_SIM_IDLE) cat = j;
          if (k[j].b < next) next = k[j].b;
        } else if (k[j].a < next) {
          next = k[j].a;
        }
      }
      c->steps[s].cycles[cat] += next - t;
      c->total.cycles[cat] += next - t;
      if (r->opt.trace && cat >= TPU_SIM_INFEED_WAIT && add_slice(c, t, next, cat)) return TPU_ERR_NOMEM;
      t = next;
    }
  }
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

uint64_t tpu_sim_result_op_busy(const tpu_sim_result *r, int core, int index) {
  if (core < 0 || core >= r->cores || index < 0 || index >= r->core[core].cp->nops) return 0;
  return r->core[core].busy[index];
}

const float *tpu_sim_result_buffer(const tpu_sim_result *r, int core, int buf) {
  if (core < 0 || core >= r->cores || !r->core[core].val) return NULL;
  if (buf < 1 || buf > r->core[core].cp->nbufs) return NULL;
  return r->core[core].val[buf - 1];
}
/* }================================================================== */

/* {==================================================================
** Trace: Chrome trace-event JSON. One process per core, one thread per
** unit plus a "stalls" thread whose slices are named after the stall kind.
** Timestamps are microseconds of simulated time (cycles / clock MHz).
** ================================================================== */
/* op names are user text: escape what JSON needs */
static void sb_str(tpu_text *b, const char *s) {
  tpu_text_printf(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') tpu_text_printf(b, "\\%c", ch);
    else if (ch < 0x20) tpu_text_printf(b, "\\u%04x", ch);
    else tpu_text_printf(b, "%c", ch);
  }
  tpu_text_printf(b, "\"");
}

static const char *const UNIT_NAMES[SIM_NUNITS] = { "DMA", "MXU", "VPU", "infeed", "collective" };

char *tpu_sim_result_trace_json(const tpu_sim_result *r) {
  if (!r->opt.trace) return NULL;
  tpu_text b = { 0 };
  const double us = 1.0 / r->cfg.clock_mhz;
  tpu_text_printf(&b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"chip\":");
  sb_str(&b, r->cfg.name);
  tpu_text_printf(&b, ",\"cycles\":%llu,\"clock_mhz\":%g},\"traceEvents\":[\n", (unsigned long long)r->cycles,
            r->cfg.clock_mhz);
  bool first = true;
  for (int c = 0; c < r->cores; c++) {
    const sim_core_rt *k = &r->core[c];
    tpu_text_printf(&b, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"core %d (chip %d)\"}}",
              first ? "" : ",\n", c, c, k->chip);
    first = false;
    tpu_text_printf(&b, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", c, c);
    for (int u = 0; u <= SIM_NUNITS; u++)
      tpu_text_printf(&b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", c, u,
                u < SIM_NUNITS ? UNIT_NAMES[u] : "stalls");
    for (int u = 0; u < SIM_NUNITS; u++) {
      uint64_t shown = 0;        /* consecutive matmuls overlap (the next one's weights load while
                                 ** this one streams); slices on one track must not, so each is
                                 ** drawn from the previous one's end; args keep the true cycles */
      for (int j = 0; j < k->qn[u]; j++) {
        const int i = k->q[u][j];
        const sim_op *so = &k->cp->ops[i];
        const uint64_t a = k->busy[i], e = k->end[i];
        const uint64_t da = a > shown ? a : shown, de = e > da ? e : da;
        shown = de;
        tpu_text_printf(&b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"name\":", c, u,
                  (double)da * us, (double)(de - da) * us);
        sb_str(&b, so->name);
        tpu_text_printf(&b, ",\"args\":{\"op\":%d,\"kind\":\"%s\",\"step\":%d,\"start_cycle\":%llu,\"end_cycle\":%llu",
                  i, tpu_sim_kind_name(so->o.kind), so->o.step, (unsigned long long)a, (unsigned long long)e);
        if (so->o.kind == TPU_SIM_VPU) { tpu_text_printf(&b, ",\"vpu_op\":"); sb_str(&b, so->vpu_op); }
        if (so->o.kind == TPU_SIM_COLLECTIVE) tpu_text_printf(&b, ",\"collective\":\"%s\"", tpu_sim_coll_name(so->o.coll));
        if (so->bytes) tpu_text_printf(&b, ",\"bytes\":%lld", (long long)so->bytes);
        tpu_text_printf(&b, "}}");
      }
    }
    for (int j = 0; j < k->nslices; j++) {
      const sim_slice *s = &k->slices[j];
      tpu_text_printf(&b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"name\":\"%s\","
                "\"args\":{\"start_cycle\":%llu,\"end_cycle\":%llu}}", c, SIM_NUNITS, (double)s->a * us,
                (double)(s->b - s->a) * us, tpu_sim_stall_name(s->cat), (unsigned long long)s->a,
                (unsigned long long)s->b);
    }
  }
  tpu_text_printf(&b, "\n]}\n");
  if (b.oom) { tpu_free(b.s); return NULL; }
  return b.s;
}
/* }================================================================== */
