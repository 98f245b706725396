/*
** trace.c -- the trace writer: Chrome/Perfetto trace-event JSON built from
** the runs' event logs (sim.h). Every trace the tree writes comes from here
** (tpusim run, matmul --cores, train --trace), in one layout:
**
**   - a process per core ("CHIP core N (chip K)");
**   - its "core (stalls)" track (tid 0): the core's waiting states, the
**     stall kinds that are not busy, named after the stall table;
**   - per unit (MXU, VPU, DMA, ICI, infeed: the op table's unit and track
**     columns, sim/ops.def) one track or more: an op is a
**     slice over [start, end) (a matmul from its first weight load: the
**     cycles its ready-to-busy wait are the stall track's); ops of one unit
**     that overlap (DMAs in flight together, a matmul streaming while the
**     next one loads its weights) go to the unit's next track ("DMA #2",
**     ...: lane k is the first whose last slice has ended), so every
**     track's slices follow one another and never overlap, which is what
**     Perfetto needs (it drops slices that overlap without nesting);
**   - counters: the DMA transfers in flight and the HBM bandwidth they use
**     (GB/s, each transfer's bytes spread evenly over its interval);
**   - flow arrows from each DMA to the matmul that waits for it.
** A training trace appends one run per step, shifted by the step's start.
**
** Times: microseconds, printed from integer picoseconds (each cycle stamp
** rounded once), so a slice that starts where another ends starts exactly
** there, and ts + dur is the end the next slice sees.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

/* Names are user text: escape what JSON needs. */
static void json_str(tpu_text *b, const char *s) {
  tpu_text_printf(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') tpu_text_printf(b, "\\%c", ch);
    else if (ch < 0x20) tpu_text_printf(b, "\\u%04x", ch);
    else tpu_text_printf(b, "%c", ch);
  }
  tpu_text_printf(b, "\"");
}

/* {==================================================================
** Tracks
** ================================================================== */
/* The units' tracks, one unit per op kind, in display order (the op
** table's track column): lane k of unit u is tid TR_BASE(u) + k for the
** first 99 lanes, and beyond (more transfers in flight: dma.outstanding
** goes to 4096) 100000 * (u + 1) + k, so no two units' lanes share a tid. */
#define X(id, name, json, unit, track, row) track,
static const int TRACK[TPU_SIM_NKINDS] = {
#include "sim/ops.def"
};
#undef X
#define TR_NUNITS TPU_SIM_NKINDS
#define TR_STALLS 0
#define TR_BASE(u) (100 * ((u) + 1))
static int lane_tid(int u, int lane) { return lane < 99 ? TR_BASE(u) + lane : 100000 * (u + 1) + lane; }

/* The track of an op's events; -1 for the other events (tiles, stalls). */
static int track_of(tpu_sim_event_type t) { return (unsigned)t < TPU_SIM_NKINDS ? TRACK[t] : -1; }
/* The unit whose tracks are at place u. */
static const char *track_name(int u) {
  for (int k = 0; k < TPU_SIM_NKINDS; k++)
    if (TRACK[k] == u) return tpu_sim_kind_unit((tpu_sim_kind)k);
  return "?";
}

/* A waiting state worth a slice: a kind that is not busy, not empty. */
static bool is_wait(const tpu_sim_event *e) {
  return e->type == TPU_SIM_EV_STALL && !tpu_sim_stall_busy(e->stall) && e->end > e->start;
}
static const sim_op *op_of(const tpu_sim_result *r, const tpu_sim_event *e) { return &r->core[e->core].cp->ops[e->op]; }
/* Where an op's slice starts: a matmul at its first weight load. */
static uint64_t shown_start(const tpu_sim_event *e) { return e->type == TPU_SIM_EV_MATMUL ? e->mid : e->start; }

/* Picoseconds from cycles, one rounding, with the run's offset in whole
** cycles (a step starts on the cycle grid of the steps before it, so it
** starts exactly where the previous one ended). */
typedef struct clock_ps { double ps_per_cycle; uint64_t t0; } clock_ps;
static long long ps_of(const clock_ps *k, uint64_t cycle) { return llround((double)(k->t0 + cycle) * k->ps_per_cycle); }
static void put_us(tpu_text *b, const char *key, long long ps) {
  tpu_text_printf(b, ",\"%s\":%lld.%06lld", key, ps / 1000000, ps % 1000000);
}

static void slice_head(tpu_text *b, int pid, int tid, const clock_ps *k, uint64_t a, uint64_t e, const char *name) {
  const long long pa = ps_of(k, a);
  tpu_text_printf(b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d", pid, tid);
  put_us(b, "ts", pa);
  put_us(b, "dur", ps_of(k, e) - pa);
  tpu_text_printf(b, ",\"name\":");
  json_str(b, name);
}
/* }================================================================== */

/* {==================================================================
** One core of one run
** ================================================================== */
typedef struct core_ctx {
  tpu_text *b;
  const tpu_sim_result *r;
  int c;
  long step;                   /* the training step, or -1: the op's own */
  clock_ps k;
  int *lane;                   /* per event: its lane, -1 if not drawn */
  int nlanes[TR_NUNITS];
} core_ctx;

static void op_slice(core_ctx *x, const tpu_sim_event *e, int lane) {
  const sim_op *so = op_of(x->r, e);
  const int u = track_of(e->type);
  slice_head(x->b, x->c, lane_tid(u, lane), &x->k, shown_start(e), e->end, so->name);
  tpu_text_printf(x->b, ",\"args\":{\"op\":%d,\"kind\":\"%s\",\"step\":%ld,\"ready_cycle\":%llu,"
                  "\"start_cycle\":%llu,\"end_cycle\":%llu", e->op, tpu_sim_kind_name(so->o.kind),
                  x->step >= 0 ? x->step : (long)so->o.step, (unsigned long long)e->start,
                  (unsigned long long)shown_start(e), (unsigned long long)e->end);
  if (so->o.kind == TPU_SIM_VPU) { tpu_text_printf(x->b, ",\"vpu_op\":"); json_str(x->b, tpu_vpu_op_name(so->o.vpu_op)); }
  if (so->o.kind == TPU_SIM_COLLECTIVE) tpu_text_printf(x->b, ",\"collective\":\"%s\"", tpu_sim_coll_name(so->o.coll));
  if (so->bytes) tpu_text_printf(x->b, ",\"bytes\":%lld", (long long)so->bytes);
  tpu_text_printf(x->b, "}}");
}

static int by_start(const void *a, const void *b) {
  const tpu_sim_event *const *x = a, *const *y = b;
  const uint64_t sa = shown_start(*x), sb = shown_start(*y);
  if (sa != sb) return sa < sb ? -1 : 1;
  return (*x)->op < (*y)->op ? -1 : (*x)->op > (*y)->op;
}

/* Lanes of one unit's ops: sorted by start, each to the first lane free by
** then (its last slice ended), so a lane's slices never overlap. */
static tpu_status assign_lanes(core_ctx *x, const tpu_sim_event *ev, size_t n, int u, const tpu_sim_event **tmp) {
  size_t m = 0;
  for (size_t j = 0; j < n; j++)
    if (track_of(ev[j].type) == u && ev[j].end > shown_start(&ev[j])) tmp[m++] = &ev[j];
  qsort(tmp, m, sizeof *tmp, by_start);
  uint64_t *free_at = tpu_malloc((m ? m : 1) * sizeof *free_at);   /* at most one lane per op */
  if (!free_at) return TPU_ERR_NOMEM;
  int lanes = 0;
  for (size_t i = 0; i < m; i++) {
    int l = 0;
    while (l < lanes && free_at[l] > shown_start(tmp[i])) l++;
    if (l == lanes) lanes++;
    free_at[l] = tmp[i]->end;
    x->lane[tmp[i] - ev] = l;
  }
  x->nlanes[u] = lanes;
  tpu_free(free_at);
  return TPU_OK;
}

static void core_meta(core_ctx *x) {
  tpu_text *b = x->b;
  for (int u = 0; u < TR_NUNITS; u++)
    for (int l = 0; l < x->nlanes[u]; l++) {
      char name[32];
      if (l) snprintf(name, sizeof name, "%s #%d", track_name(u), l + 1);
      else snprintf(name, sizeof name, "%s", track_name(u));
      tpu_text_printf(b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                      x->c, lane_tid(u, l), name);
      tpu_text_printf(b, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,"
                      "\"args\":{\"sort_index\":%d}}", x->c, lane_tid(u, l), lane_tid(u, l));
    }
}

/* The DMA counters: transfers in flight and GB/s, at every change. */
typedef struct dma_edge { uint64_t t; int d; double rate; } dma_edge;
static int by_time(const void *a, const void *b) {
  const dma_edge *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->d - y->d;   /* ends before starts at one cycle */
}

static tpu_status dma_counters(core_ctx *x, const tpu_sim_event *ev, size_t n) {
  size_t m = 0;
  for (size_t j = 0; j < n; j++) m += ev[j].type == TPU_SIM_EV_DMA && ev[j].end > ev[j].start ? 2 : 0;
  if (!m) return TPU_OK;
  dma_edge *e = tpu_malloc(m * sizeof *e);
  if (!e) return TPU_ERR_NOMEM;
  const double s_per_cycle = 1e-6 / x->r->cfg.clock_mhz;
  m = 0;
  for (size_t j = 0; j < n; j++) {
    if (ev[j].type != TPU_SIM_EV_DMA || ev[j].end <= ev[j].start) continue;
    const double gbs = (double)op_of(x->r, &ev[j])->bytes / ((double)(ev[j].end - ev[j].start) * s_per_cycle) / 1e9;
    e[m++] = (dma_edge){ ev[j].start, +1, gbs };
    e[m++] = (dma_edge){ ev[j].end, -1, -gbs };
  }
  qsort(e, m, sizeof *e, by_time);
  int flight = 0;
  double gbs = 0;
  for (size_t i = 0; i < m; i++) {
    flight += e[i].d;
    gbs += e[i].rate;
    if (i + 1 < m && e[i + 1].t == e[i].t) continue;   /* one sample per cycle */
    if (flight == 0) gbs = 0;                          /* no drift from the sums */
    tpu_text_printf(x->b, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"DMA in flight\"", x->c);
    put_us(x->b, "ts", ps_of(&x->k, e[i].t));
    tpu_text_printf(x->b, ",\"args\":{\"transfers\":%d}}", flight);
    tpu_text_printf(x->b, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"HBM GB/s\"", x->c);
    put_us(x->b, "ts", ps_of(&x->k, e[i].t));
    tpu_text_printf(x->b, ",\"args\":{\"GB/s\":%.3f}}", gbs);
  }
  tpu_free(e);
  return TPU_OK;
}

/* Flow arrows: DMA op -> each matmul that lists it among its dependencies.
** Ids are unique in the trace: (step, core, matmul op, dependency). */
static tpu_status flows(core_ctx *x, const tpu_sim_event *ev, size_t n) {
  const sim_core_prog *cp = x->r->core[x->c].cp;
  int *ev_of = NULL;   /* op index -> its event */
  if (!(ev_of = tpu_malloc((size_t)(cp->nops ? cp->nops : 1) * sizeof *ev_of))) return TPU_ERR_NOMEM;
  for (int i = 0; i < cp->nops; i++) ev_of[i] = -1;
  for (size_t j = 0; j < n; j++)
    if (ev[j].op >= 0 && ev[j].op < cp->nops && track_of(ev[j].type) >= 0) ev_of[ev[j].op] = (int)j;
  for (size_t j = 0; j < n; j++) {
    const tpu_sim_event *mm = &ev[j];
    if (mm->type != TPU_SIM_EV_MATMUL || x->lane[j] < 0) continue;
    const sim_op *so = op_of(x->r, mm);
    for (int d = 0; d < so->ndeps; d++) {
      const int dj = ev_of[cp->deps[so->dep0 + d]];
      if (dj < 0 || ev[dj].type != TPU_SIM_EV_DMA || x->lane[dj] < 0) continue;
      const long long id = ((long long)(x->step < 0 ? 0 : x->step) << 40) + ((long long)x->c << 32) +
                           ((long long)mm->op << 8) + d;
      tpu_text_printf(x->b, ",\n{\"ph\":\"s\",\"cat\":\"dma\",\"name\":\"feeds\",\"id\":%lld,\"pid\":%d,\"tid\":%d", id,
                      x->c, lane_tid(TRACK[TPU_SIM_DMA], x->lane[dj]));
      put_us(x->b, "ts", ps_of(&x->k, ev[dj].start));
      tpu_text_printf(x->b, "}");
      tpu_text_printf(x->b, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"dma\",\"name\":\"feeds\",\"id\":%lld,\"pid\":%d,"
                      "\"tid\":%d", id, x->c, lane_tid(TRACK[TPU_SIM_MATMUL], x->lane[j]));
      put_us(x->b, "ts", ps_of(&x->k, shown_start(mm)));
      tpu_text_printf(x->b, "}");
    }
  }
  tpu_free(ev_of);
  return TPU_OK;
}

static tpu_status emit_core(tpu_text *b, const tpu_sim_result *r, int c, long step, double t0_us) {
  const tpu_sim_event *ev;
  const size_t n = tpu_sim_result_events(r, c, &ev);
  core_ctx x = { b, r, c, step, { 1e6 / r->cfg.clock_mhz, (uint64_t)llround(t0_us * r->cfg.clock_mhz) }, NULL, { 0 } };
  const tpu_sim_event **tmp = tpu_malloc((n ? n : 1) * sizeof *tmp);
  x.lane = tpu_malloc((n ? n : 1) * sizeof *x.lane);
  tpu_status st = tmp && x.lane ? TPU_OK : TPU_ERR_NOMEM;
  for (size_t j = 0; j < n && !st; j++) x.lane[j] = -1;
  for (int u = 0; u < TR_NUNITS && !st; u++) st = assign_lanes(&x, ev, n, u, tmp);
  if (!st) {
    core_meta(&x);
    for (size_t j = 0; j < n; j++) {
      if (x.lane[j] >= 0) op_slice(&x, &ev[j], x.lane[j]);
      else if (is_wait(&ev[j])) {
        slice_head(b, c, TR_STALLS, &x.k, ev[j].start, ev[j].end, tpu_sim_stall_name(ev[j].stall));
        tpu_text_printf(b, ",\"args\":{");
        if (step >= 0) tpu_text_printf(b, "\"step\":%ld,", step);
        tpu_text_printf(b, "\"start_cycle\":%llu,\"end_cycle\":%llu}}", (unsigned long long)ev[j].start,
                        (unsigned long long)ev[j].end);
      }
    }
    st = dma_counters(&x, ev, n);
  }
  if (!st) st = flows(&x, ev, n);
  tpu_free(tmp);
  tpu_free(x.lane);
  return st;
}
/* }================================================================== */

/* {==================================================================
** Whole traces
** ================================================================== */
static void header(tpu_text *b, const char *chip, int cores) {
  tpu_text_printf(b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"chip\":");
  json_str(b, chip);
  tpu_text_printf(b, ",\"writer\":\"tpusim " TPU_VERSION "\"},\"traceEvents\":[\n");
  for (int c = 0; c < cores; c++) {
    char name[160];
    snprintf(name, sizeof name, "%s core %d", chip, c);
    tpu_text_printf(b, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", c ? ",\n" : "", c);
    json_str(b, name);
    tpu_text_printf(b, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
                    c, c);
    tpu_text_printf(b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"core (stalls)\"}}", c, TR_STALLS);
  }
}

char *tpu_sim_result_trace_json(const tpu_sim_result *r) {
  if (!r->opt.trace) return NULL;
  tpu_text b = { 0 };
  header(&b, r->cfg.name, r->cores);
  tpu_status st = TPU_OK;
  for (int c = 0; c < r->cores && !st; c++) st = emit_core(&b, r, c, -1, 0.0);
  tpu_text_printf(&b, "\n]}\n");
  if (st || b.oom) { tpu_free(b.s); return NULL; }
  return b.s;
}

/* For training: one trace, a run appended per step. */
void tpu_sim_trace_steps_begin(tpu_text *out, const char *chip, int cores) { header(out, chip, cores); }

tpu_status tpu_sim_trace_steps_add(tpu_text *out, const tpu_sim_result *r, long step, double t0_us) {
  if (!r->opt.trace) return TPU_ERR_INPUT;
  tpu_status st = TPU_OK;
  for (int c = 0; c < r->cores && !st; c++) st = emit_core(out, r, c, step, t0_us);
  if (st) out->oom = true;
  return st;
}

void tpu_sim_trace_steps_end(tpu_text *out) { tpu_text_printf(out, "\n]}\n"); }
/* }================================================================== */
