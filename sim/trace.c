/*
** trace.c -- the trace writer: Chrome/Perfetto trace-event JSON built from
** the runs' event logs (sim.h). Every trace the tree writes comes from here,
** in one of two layouts:
**
**   units  one run (tpusim run, tpusim matmul --cores): per core a process
**          with a thread per unit and a "stalls" thread;
**   steps  training (tpusim train): per core a process with a stall track
**          and the MXU, VPU, DMA and ICI tracks; each run appended is a step.
**
** Both draw the same events: ops on their unit's track, the core's waiting
** states (the stall kinds that are not busy) on its stall track, named
** after the stall table. The layouts keep the key order and time precision
** each had when it was first written (the golden set hashes trace files).
*/
#include <stdio.h>
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

static bool is_op(const tpu_sim_event *e) { return e->type != TPU_SIM_EV_TILE && e->type != TPU_SIM_EV_STALL; }
/* A waiting state worth a slice: a kind that is not busy, not empty. */
static bool is_wait(const tpu_sim_event *e) {
  return e->type == TPU_SIM_EV_STALL && !tpu_sim_stall_busy(e->stall) && e->end > e->start;
}
static const sim_op *op_of(const tpu_sim_result *r, const tpu_sim_event *e) { return &r->core[e->core].cp->ops[e->op]; }
/* Microseconds per cycle. */
static double us_per_cycle(const tpu_sim_result *r) { return 1.0 / r->cfg.clock_mhz; }

/* {==================================================================
** The units layout: one run
** ================================================================== */
static const char *const UNIT_NAMES[SIM_NUNITS] = { "DMA", "MXU", "VPU", "infeed", "collective" };

static void units_meta(tpu_text *b, const tpu_sim_result *r, int c) {
  tpu_text_printf(b, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"core %d (chip %d)\"}}",
                  c ? ",\n" : "", c, c, r->core[c].chip);
  tpu_text_printf(b, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}}", c, c);
  for (int u = 0; u <= SIM_NUNITS; u++)
    tpu_text_printf(b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", c, u,
                    u < SIM_NUNITS ? UNIT_NAMES[u] : "stalls");
}

/* Op event e on its unit's track (the unit's number is the op's kind). It
** is drawn from its busy cycle (a matmul's first weight load), but not
** before *shown: consecutive matmuls overlap (the next one's weights load
** while this one streams) and slices on one track must not, so each is
** drawn from the previous one's end; args keep the true cycles. */
static void units_op(tpu_text *b, const tpu_sim_result *r, const tpu_sim_event *e, uint64_t *shown) {
  const double us = us_per_cycle(r);
  const sim_op *so = op_of(r, e);
  const uint64_t a = e->type == TPU_SIM_EV_MATMUL ? e->mid : e->start;
  const uint64_t da = a > *shown ? a : *shown, de = e->end > da ? e->end : da;
  *shown = de;
  tpu_text_printf(b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"name\":", e->core, (int)e->type,
                  (double)da * us, (double)(de - da) * us);
  json_str(b, so->name);
  tpu_text_printf(b, ",\"args\":{\"op\":%d,\"kind\":\"%s\",\"step\":%d,\"start_cycle\":%llu,\"end_cycle\":%llu",
                  e->op, tpu_sim_kind_name(so->o.kind), so->o.step, (unsigned long long)a, (unsigned long long)e->end);
  if (so->o.kind == TPU_SIM_VPU) { tpu_text_printf(b, ",\"vpu_op\":"); json_str(b, so->vpu_op); }
  if (so->o.kind == TPU_SIM_COLLECTIVE) tpu_text_printf(b, ",\"collective\":\"%s\"", tpu_sim_coll_name(so->o.coll));
  if (so->bytes) tpu_text_printf(b, ",\"bytes\":%lld", (long long)so->bytes);
  tpu_text_printf(b, "}}");
}

static void units_wait(tpu_text *b, const tpu_sim_result *r, const tpu_sim_event *e) {
  const double us = us_per_cycle(r);
  tpu_text_printf(b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,\"name\":\"%s\","
                  "\"args\":{\"start_cycle\":%llu,\"end_cycle\":%llu}}", e->core, SIM_NUNITS, (double)e->start * us,
                  (double)(e->end - e->start) * us, tpu_sim_stall_name(e->stall), (unsigned long long)e->start,
                  (unsigned long long)e->end);
}

char *tpu_sim_result_trace_json(const tpu_sim_result *r) {
  if (!r->opt.trace) return NULL;
  tpu_text b = { 0 };
  tpu_text_printf(&b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"chip\":");
  json_str(&b, r->cfg.name);
  tpu_text_printf(&b, ",\"cycles\":%llu,\"clock_mhz\":%g},\"traceEvents\":[\n", (unsigned long long)r->cycles,
                  r->cfg.clock_mhz);
  for (int c = 0; c < r->cores; c++) {
    const tpu_sim_event *ev;
    const size_t n = tpu_sim_result_events(r, c, &ev);
    units_meta(&b, r, c);
    for (int u = 0; u < SIM_NUNITS; u++) {
      uint64_t shown = 0;
      for (size_t j = 0; j < n; j++)
        if (is_op(&ev[j]) && (int)ev[j].type == u) units_op(&b, r, &ev[j], &shown);
    }
    for (size_t j = 0; j < n; j++)
      if (is_wait(&ev[j])) units_wait(&b, r, &ev[j]);
  }
  tpu_text_printf(&b, "\n]}\n");
  if (b.oom) { tpu_free(b.s); return NULL; }
  return b.s;
}
/* }================================================================== */

/* {==================================================================
** The steps layout: training steps
** ================================================================== */
enum { STEP_STALLS = 0, STEP_MXU, STEP_VPU, STEP_DMA, STEP_ICI, STEP_NTRACKS };
static const char *const STEP_TRACKS[STEP_NTRACKS] = { "core (stalls)", "MXU", "VPU", "DMA", "ICI" };

/* The track of event e, or -1 (tiles; an infeed, whose interval is a wait
** the stall track shows; a busy state). */
static int step_track(const tpu_sim_event *e) {
  switch (e->type) {
  case TPU_SIM_EV_MATMUL: return STEP_MXU;
  case TPU_SIM_EV_VPU: return STEP_VPU;
  case TPU_SIM_EV_DMA: return STEP_DMA;
  case TPU_SIM_EV_COLLECTIVE: return STEP_ICI;
  case TPU_SIM_EV_STALL: return is_wait(e) ? STEP_STALLS : -1;
  default: return -1;
  }
}

void tpu_sim_trace_steps_begin(tpu_text *out, const char *chip, int cores) {
  tpu_text_printf(out, "[\n");
  for (int c = 0; c < cores; c++) {
    char name[160];
    snprintf(name, sizeof name, "%s core %d", chip, c);
    tpu_text_printf(out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", c ? ",\n" : "", c);
    json_str(out, name);
    tpu_text_printf(out, "}}");
    for (int u = 0; u < STEP_NTRACKS; u++)
      tpu_text_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                      c, u, STEP_TRACKS[u]);
  }
}

tpu_status tpu_sim_trace_steps_add(tpu_text *out, const tpu_sim_result *r, long step, double t0_us) {
  if (!r->opt.trace) return TPU_ERR_INPUT;
  const double us = us_per_cycle(r);
  for (int c = 0; c < r->cores; c++) {
    const tpu_sim_event *ev;
    const size_t n = tpu_sim_result_events(r, c, &ev);
    for (size_t j = 0; j < n; j++) {
      const tpu_sim_event *e = &ev[j];
      const int track = step_track(e);
      if (track < 0 || e->end <= e->start) continue;
      tpu_text_printf(out, ",\n{\"name\":");
      json_str(out, e->type == TPU_SIM_EV_STALL ? tpu_sim_stall_name(e->stall) : op_of(r, e)->name);
      tpu_text_printf(out, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.4f,\"dur\":%.4f,\"args\":{\"step\":%ld}}", c,
                      track, t0_us + (double)e->start * us, (double)(e->end - e->start) * us, step);
    }
  }
  return TPU_OK;
}

void tpu_sim_trace_steps_end(tpu_text *out) { tpu_text_printf(out, "\n]\n"); }
/* }================================================================== */
