/*
** viz.c -- the visualizer's session: the workload laid out on the chip, the
** per-core timelines, the PE model of the selected core, and the drawing of
** every shape into a pixel buffer (no SDL here; see viz.h for the model).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_int.h"

#define X(id, name, kind, busy, color, report) color,
static const uint32_t STALL_COLORS[TPU_SIM_NSTALL] = {
#include "sim/stall.def"
};
#undef X
/* Each op kind's unit row (the op table's row column); -1: none (the
** infeed, drawn as its queue). */
#define X(id, name, json, unit, track, row) row,
static const int KIND_ROW[TPU_SIM_NKINDS] = {
#include "sim/ops.def"
};
#undef X
#define X(id, name, json, unit, track, row) \
  _Static_assert((row) < TPU_VIZ_NUNIT, "sim/ops.def: the row of " #id " is not a tpu_viz_unit");
#include "sim/ops.def"
#undef X

/* The op kind unit row u shows; -1 none. */
static int kind_of_row(int u) {
  for (int k = 0; k < TPU_SIM_NKINDS; k++)
    if (KIND_ROW[k] == u) return k;
  return -1;
}

uint32_t tpu_viz_stall_color(int stall) {
  return stall >= 0 && stall < TPU_SIM_NSTALL ? STALL_COLORS[stall] : 0xff000000u;
}
const char *tpu_viz_unit_name(tpu_viz_unit u) {
  return (unsigned)u < TPU_VIZ_NUNIT ? tpu_sim_kind_unit((tpu_sim_kind)kind_of_row(u)) : "?";
}

uint32_t tpu_viz_value_color(float value, float scale) {
  float x = scale > 0 ? value / scale : 0.0f;
  if (!(x == x)) x = 0;                                /* NaN: neutral */
  x = x > 1 ? 1 : x < -1 ? -1 : x;
  /* near-white at 0 (so a computing cell never looks idle), red or blue at +-1 */
  const float base = 236.0f;
  float r, g, b;
  if (x >= 0) { r = base + (200 - base) * x; g = base + (30 - base) * x; b = base + (30 - base) * x; }
  else { x = -x; r = base + (30 - base) * x; g = base + (70 - base) * x; b = base + (210 - base) * x; }
  return 0xff000000u | ((uint32_t)lrintf(r) << 16) | ((uint32_t)lrintf(g) << 8) | (uint32_t)lrintf(b);
}

static void free_pipe(viz_pipe *pp);

/* {==================================================================
** Classifying cycles
** ================================================================== */
static size_t seg_index(const viz_core *vc, uint64_t c) {
  size_t lo = 0, hi = vc->nseg;                  /* last seg with at <= c */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (vc->seg[mid].at <= c) lo = mid; else hi = mid;
  }
  return lo;
}
int tpu_viz_core_cat_at(const tpu_viz *v, int core, uint64_t c) {
  const viz_core *vc = &v->core[core];
  if (!vc->nseg || c < vc->seg[0].at || c >= vc->end) return TPU_SIM_IDLE;
  return vc->seg[seg_index(vc, c)].core;
}
int tpu_viz_unit_cat_at(const tpu_viz *v, int core, tpu_viz_unit u, uint64_t c) {
  const viz_core *vc = &v->core[core];
  if (!vc->nseg || c < vc->seg[0].at || c >= vc->end) return TPU_SIM_IDLE;
  return vc->seg[seg_index(vc, c)].unit[u];
}
/* Entries of a nondecreasing array that are <= c. */
static int64_t count_le(const uint64_t *a, int64_t n, uint64_t c) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= c) lo = mid + 1; else hi = mid;
  }
  return lo;
}
int tpu_viz_infeed_at(const tpu_viz *v, int core, uint64_t c) {
  if (core < 0 || core >= v->ncores) return 0;
  const viz_core *vc = &v->core[core];
  int64_t q = count_le(vc->inf_ready, vc->ninf, c) - count_le(vc->inf_deq, vc->ndeq, c);
  return q > 0 ? (q > 1000000 ? 1000000 : (int)q) : 0;
}
int tpu_viz_infeed_max(const tpu_viz *v, int core) {
  return core >= 0 && core < v->ncores ? v->core[core].inf_max : 0;
}

void tpu_viz_totals(const tpu_viz *v, int core, uint64_t out[TPU_SIM_NSTALL]) {
  memcpy(out, v->core[core].totals, sizeof v->core[core].totals);
}
/* }================================================================== */

/* {==================================================================
** Laying a program's run out (the engine's events)
** ================================================================== */
/* The timeline row of an op kind; -1 for the infeed (no row of its own). */
static int unit_of_kind(tpu_sim_kind k) { return (unsigned)k < TPU_SIM_NKINDS ? KIND_ROW[k] : -1; }
static bool is_op(const tpu_sim_event *e) { return e->type != TPU_SIM_EV_TILE && e->type != TPU_SIM_EV_STALL; }
/* Where an op keeps its unit busy: a matmul from its first weight load. */
static uint64_t busy_start(const tpu_sim_event *e) { return e->type == TPU_SIM_EV_MATMUL ? e->mid : e->start; }

/* Allocates a core's per-unit op lists, matmul names, infeed dequeues and
** array-0 tiles for its events ev[0..n). */
static tpu_status alloc_ops(viz_core *vc, const tpu_sim_event *ev, size_t n) {
  size_t nmm = 0, nt0 = 0, ninf = 0, nunit[TPU_VIZ_NUNIT] = { 0 };
  for (size_t j = 0; j < n; j++) {
    const tpu_sim_event *e = &ev[j];
    if (e->type == TPU_SIM_EV_TILE) { nt0 += e->tile.array == 0; continue; }
    if (!is_op(e)) continue;
    const int u = unit_of_kind((tpu_sim_kind)e->type);
    if (u >= 0) nunit[u]++;
    nmm += e->type == TPU_SIM_EV_MATMUL;
    ninf += e->type == TPU_SIM_EV_INFEED;
  }
  for (int u = 0; u < TPU_VIZ_NUNIT; u++)
    if (!(vc->opiv[u] = tpu_malloc((nunit[u] + 1) * sizeof *vc->opiv[u]))) return TPU_ERR_NOMEM;
  vc->inf_deq = tpu_malloc((ninf + 1) * sizeof *vc->inf_deq);
  vc->opname = tpu_calloc(nmm + 1, sizeof *vc->opname);
  vc->tiles = tpu_malloc((nt0 + 1) * sizeof *vc->tiles);
  vc->times = tpu_malloc((nt0 + 1) * sizeof *vc->times);
  vc->tsrc = tpu_malloc((nt0 + 1) * sizeof *vc->tsrc);
  return vc->inf_deq && vc->opname && vc->tiles && vc->times && vc->tsrc ? TPU_OK : TPU_ERR_NOMEM;
}

/* Array-0 tile event e of the current matmul (o, which started at
** op_start) joins core vc's replay, held back to the op's start as the
** engine held it. Its value pointers are left for the caller (by tsrc). */
static void add_tile(tpu_viz *v, viz_core *vc, const tpu_sim_event *e, const tpu_sim_op *o, uint64_t op_start,
                     int *max_m, int *max_k) {
  const tpu_mxu_walk_tile *w = &e->tile;
  vc->tiles[vc->ntiles] = (tpu_mxu_tile){ .m = w->m, .k = w->k, .n = w->n, .lda = v->rows, .ldw = v->cols,
                                          .ldo = v->cols, .accumulate = o->accumulate || !w->first,
                                          .earliest = op_start };
  vc->times[vc->ntiles] = (tpu_mxu_tile_times){ e->start, e->mid, e->end - 1 };
  vc->tsrc[vc->ntiles++] = (viz_tsrc){ vc->nopname - 1, *w };
  if (w->m > *max_m) *max_m = w->m;
  if (w->k > *max_k) *max_k = w->k;
}

/* Core p's ops from its events: each op's interval on its unit's row, the
** infeed dequeues, the matmuls' names and the tiles the engine ran on
** array 0. */
static tpu_status collect_ops(tpu_viz *v, int p, const tpu_sim_program *prog, const tpu_sim_event *ev, size_t n,
                              int *max_m, int *max_k) {
  viz_core *vc = &v->core[p];
  tpu_status st = alloc_ops(vc, ev, n);
  if (st != TPU_OK) return st;
  tpu_sim_op o = { 0 };                          /* the last op seen: a tile's matmul */
  uint64_t op_start = 0;
  for (size_t j = 0; j < n; j++) {
    const tpu_sim_event *e = &ev[j];
    if (e->type == TPU_SIM_EV_TILE && e->tile.array == 0) add_tile(v, vc, e, &o, op_start, max_m, max_k);
    if (!is_op(e)) continue;
    tpu_sim_program_op(prog, p, e->op, &o);
    op_start = e->start;
    if (e->type == TPU_SIM_EV_INFEED) vc->inf_deq[vc->ndeq++] = e->end;
    char gname[96];
    if (e->type == TPU_SIM_EV_MATMUL && !v->prog && (size_t)vc->nopname < vc->nplaces) {   /* where the lowering put it */
      const tpu_sim_gemm_place *pl = &vc->places[vc->nopname];
      snprintf(gname, sizeof gname, "C@%lld,%lld += A@%lld,%lld . B@%lld,%lld", (long long)pl->m0,
               (long long)pl->n0, (long long)pl->m0, (long long)pl->k0, (long long)pl->k0, (long long)pl->n0);
      o.name = gname;
    }
    const int unit = unit_of_kind(o.kind);
    if (unit >= 0) {
      char *nm = tpu_strdup(o.name ? o.name : tpu_sim_kind_name(o.kind));
      if (!nm) return TPU_ERR_NOMEM;
      vc->opiv[unit][vc->nopiv[unit]++] = (viz_opiv){ busy_start(e), e->end, nm };
    }
    if (e->type == TPU_SIM_EV_MATMUL &&
        !(vc->opname[vc->nopname++] = tpu_strdup(o.name ? o.name : tpu_sim_kind_name(o.kind))))
      return TPU_ERR_NOMEM;
  }
  return TPU_OK;
}

/* An edge of the timeline: at cycle t, unit row 'row' gets one busy op more
** or less (d = +1, -1), or (row -1) the core enters state d. */
typedef struct edge { uint64_t t; int8_t row, d; } edge;
static int edge_cmp(const void *a, const void *b) {
  const edge *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* Core p's segments: its strip shows the engine's states (the STALL
** events), each unit's row whether an op of its kind is busy. */
static tpu_status build_segments(tpu_viz *v, int p, const tpu_sim_event *ev, size_t n) {
  viz_core *vc = &v->core[p];
  edge *eg = tpu_malloc((2 * n + 1) * sizeof *eg);
  if (!eg) return TPU_ERR_NOMEM;
  size_t ne = 0;
  for (size_t j = 0; j < n; j++) {
    const tpu_sim_event *e = &ev[j];
    const int row = is_op(e) ? unit_of_kind((tpu_sim_kind)e->type) : -1;
    if (e->type == TPU_SIM_EV_STALL) {
      eg[ne++] = (edge){ e->start, -1, (int8_t)e->stall };
    } else if (row >= 0 && e->end > busy_start(e)) {
      eg[ne++] = (edge){ busy_start(e), (int8_t)row, 1 };
      eg[ne++] = (edge){ e->end, (int8_t)row, -1 };
    }
  }
  qsort(eg, ne, sizeof *eg, edge_cmp);
  vc->seg = tpu_malloc((ne + 1) * sizeof *vc->seg);
  if (!vc->seg) { tpu_free(eg); return TPU_ERR_NOMEM; }
  int cnt[TPU_VIZ_NUNIT] = { 0 }, core = TPU_SIM_IDLE, busy[TPU_VIZ_NUNIT];
  for (int u = 0; u < TPU_VIZ_NUNIT; u++) busy[u] = tpu_sim_stall_of_kind((tpu_sim_kind)kind_of_row(u));
  for (size_t i = 0; i < ne;) {
    const uint64_t t = eg[i].t;
    for (; i < ne && eg[i].t == t; i++) {
      if (eg[i].row < 0) core = eg[i].d;
      else cnt[eg[i].row] += eg[i].d;
    }
    if (t >= v->total) break;
    viz_seg sg = { .at = t, .core = (uint8_t)core };
    for (int u = 0; u < TPU_VIZ_NUNIT; u++)
      sg.unit[u] = (uint8_t)(cnt[u] > 0 ? busy[u] : TPU_SIM_IDLE);
    if (vc->nseg && !memcmp(&vc->seg[vc->nseg - 1].core, &sg.core, 1 + TPU_VIZ_NUNIT)) continue;
    vc->seg[vc->nseg++] = sg;
  }
  tpu_free(eg);
  return TPU_OK;
}

/* Core p's timeline, totals, infeed queue and array-0 tiles from the run. */
static tpu_status build_prog_core(tpu_viz *v, int p, const tpu_sim_program *prog, const tpu_sim_result *res,
                                  int *max_m, int *max_k) {
  viz_core *vc = &v->core[p];
  vc->end = v->total;
  tpu_sim_stalls tot;
  tpu_sim_result_stalls(res, p, -1, &tot);
  memcpy(vc->totals, tot.cycles, sizeof vc->totals);
  const uint64_t *ready;
  vc->ninf = tpu_sim_program_infeed(prog, p, &ready);
  if (vc->ninf > 0) {
    if (!(vc->inf_ready = tpu_malloc((size_t)vc->ninf * sizeof *vc->inf_ready))) return TPU_ERR_NOMEM;
    memcpy(vc->inf_ready, ready, (size_t)vc->ninf * sizeof *ready);
  }
  const tpu_sim_event *ev;
  const size_t n = tpu_sim_result_events(res, p, &ev);
  tpu_status st = collect_ops(v, p, prog, ev, n, max_m, max_k);
  if (st == TPU_OK) st = build_segments(v, p, ev, n);
  if (st != TPU_OK) return st;
  /* the largest infeed occupancy: it only rises at a ready cycle */
  for (int64_t b = 0; b < vc->ninf; b++) {
    int q = tpu_viz_infeed_at(v, p, vc->inf_ready[b]);
    if (q > vc->inf_max) vc->inf_max = q;
  }
  return TPU_OK;
}

/* Runs prog on the engine and lays the run out on v's cores (v->chip,
** rows, cols, ncores set). err is set on failure. */
static tpu_status run_program(tpu_viz *v, tpu_sim_program *prog, int *max_m, int *max_k, char *err, size_t errcap) {
  tpu_sim_options opt = { .level = TPU_FIDELITY_TIMING, .threads = 0, .events = true };   /* threads: results do not depend on it */
  tpu_sim_result *res = NULL;
  tpu_status st = tpu_sim_run(&v->chip, prog, &opt, &res);
  if (st != TPU_OK) {
    snprintf(err, errcap, "%s", tpu_sim_program_error(prog));
    return st;
  }
  v->total = tpu_sim_result_cycles(res);
  if (v->total == 0) {
    snprintf(err, errcap, "nothing to show: the program runs for 0 cycles");
    tpu_sim_result_destroy(res);
    return TPU_ERR_INPUT;
  }
  for (int p = 0; p < v->ncores; p++)
    if ((st = build_prog_core(v, p, prog, res, max_m, max_k)) != TPU_OK) break;
  tpu_sim_result_destroy(res);
  if (st == TPU_ERR_NOMEM) snprintf(err, errcap, "out of memory for the visualizer's timeline");
  return st;
}

/* The visualizer draws each core's strip: a board's cores at most. */
static tpu_status check_cores(const tpu_chip_config *chip, char *err, size_t errcap) {
  if (chip->cores <= TPU_SIM_GEMM_MAX_CORES) return TPU_OK;
  snprintf(err, errcap, "the chip '%s' has %d cores; the visualizer shows at most %d (a board): use --cores N to "
           "watch N of them", chip->name, chip->cores, TPU_SIM_GEMM_MAX_CORES);
  return TPU_ERR_CONFIG;
}

/* A session with the chip set and the cell views allocated, or NULL. */
static tpu_viz *new_session(const tpu_chip_config *chip) {
  tpu_viz *v = tpu_calloc(1, sizeof *v);
  if (!v) return NULL;
  v->chip = *chip;
  v->rows = chip->mxu.rows; v->cols = chip->mxu.cols; v->ncores = chip->cores;
  v->sel = -1;
  v->text_scale = 1;
  v->shade_psum = v->rows > 16 || v->cols > 16;   /* large arrays: partial-sum magnitude */
  const size_t cells = (size_t)v->rows * (size_t)v->cols;
  v->state = tpu_calloc(cells, 1);
  v->weight = tpu_calloc(cells, sizeof(float));
  v->act = tpu_calloc(cells, sizeof(float));
  v->psum = tpu_calloc(cells, sizeof(float));
  v->shadow = tpu_calloc(cells, 1);
  if (!v->state || !v->weight || !v->act || !v->psum || !v->shadow) { tpu_viz_destroy(v); return NULL; }
  return v;
}

tpu_status tpu_viz_create_program(const tpu_chip_config *chip, tpu_sim_program *prog, const char *title,
                                  uint64_t seed, tpu_viz **out, char *err, size_t errcap) {
  *out = NULL;
  if (check_cores(chip, err, errcap) != TPU_OK) return TPU_ERR_CONFIG;
  if (tpu_sim_program_cores(prog) != chip->cores) {
    snprintf(err, errcap, "the program is for %d cores, the chip '%s' has %d", tpu_sim_program_cores(prog),
             chip->name, chip->cores);
    return TPU_ERR_INPUT;
  }
  tpu_viz *v = new_session(chip);
  tpu_status st = TPU_ERR_NOMEM;
  if (!v) goto fail;
  v->prog = true;
  snprintf(v->title, sizeof v->title, "%s", title ? title : "program");
  int max_m = 1, max_k = 1;
  if ((st = run_program(v, prog, &max_m, &max_k, err, errcap)) != TPU_OK) goto fail;
  /* replayed operands: N(0,1) bf16 pools; tile j reads them at an offset of
  ** a few rows so that consecutive tiles differ */
  enum { SHIFT = 61 };
  const size_t na = ((size_t)max_m + SHIFT) * (size_t)v->rows, nw = ((size_t)v->rows + SHIFT) * (size_t)v->cols;
  v->A = tpu_malloc(na * sizeof(float));
  v->B = tpu_malloc(nw * sizeof(float));
  v->C = tpu_calloc((size_t)max_m * (size_t)v->cols, sizeof(float));
  st = TPU_ERR_NOMEM;
  if (!v->A || !v->B || !v->C) goto fail;
  uint64_t sd = seed;
  float amax = 0;
  tpu_normal_fill(&sd, v->A, na);
  tpu_normal_fill(&sd, v->B, nw);
  tpu_bf16_round_array(v->A, na);
  tpu_bf16_round_array(v->B, nw);
  for (size_t i = 0; i < na; i++) amax = fmaxf(amax, fabsf(v->A[i]));
  for (int p = 0; p < v->ncores; p++)
    for (size_t j = 0; j < v->core[p].ntiles; j++) {
      tpu_mxu_tile *t = &v->core[p].tiles[j];
      t->act = v->A + (j * 17 % SHIFT) * (size_t)v->rows; t->lda = v->rows;
      t->w = v->B + (j * 29 % SHIFT) * (size_t)v->cols; t->ldw = v->cols;
      t->out = v->C; t->ldo = v->cols;
    }
  v->act_scale = amax > 0 ? amax : 1;
  v->psum_scale = 2.0f * sqrtf((float)max_k);
  if ((st = tpu_viz_select_core(v, 0)) != TPU_OK) goto fail;
  *out = v;
  return TPU_OK;
fail:
  tpu_viz_destroy(v);
  if (st == TPU_ERR_NOMEM) snprintf(err, errcap, "out of memory for the visualizer's timeline of the program");
  return st;
}
/* }================================================================== */

/* {==================================================================
** Session
** ================================================================== */
/* The inputs of `tpusim matmul --seed S` (N(0,1), A then B), split into
** the precision's bf16 parts as tpu_mxu_gemm splits them. false when out of
** memory. */
static bool gemm_inputs(tpu_viz *v, const tpu_viz_workload *w) {
  const size_t mk = (size_t)w->m * (size_t)w->k, kn = (size_t)w->k * (size_t)w->n;
  const int parts = tpu_precision_parts(w->precision);
  float *x = tpu_malloc((mk + kn) * sizeof *x);
  v->A = tpu_malloc(mk * (size_t)parts * sizeof(float));
  v->B = tpu_malloc(kn * (size_t)parts * sizeof(float));
  v->C = tpu_calloc((size_t)w->m * (size_t)w->n, sizeof(float));
  if (!x || !v->A || !v->B || !v->C) { tpu_free(x); return false; }
  uint64_t s = w->seed;
  tpu_normal_fill(&s, x, mk + kn);
  tpu_precision_split(w->precision, x, mk, v->A);
  tpu_precision_split(w->precision, x + mk, kn, v->B);
  tpu_free(x);
  float amax = 0;
  for (size_t i = 0; i < mk; i++) amax = fmaxf(amax, fabsf(v->A[i]));
  v->act_scale = amax > 0 ? amax : 1;
  /* partial sums of N(0,1) products grow like sqrt(k): shade by 2 sigma */
  v->psum_scale = 2.0f * sqrtf((float)(w->k < v->rows ? w->k : v->rows));
  return true;
}

/* Each array-0 tile reads its block of the real operands: tile j of core p
** belongs to the core's matmul op tsrc.op, whose place in the GEMM the
** lowering published (tpu_sim_gemm_places), at its walk's offsets and bf16
** parts. */
static void place_gemm_tiles(tpu_viz *v, const tpu_viz_workload *w) {
  const size_t mk = (size_t)w->m * (size_t)w->k, kn = (size_t)w->k * (size_t)w->n;
  for (int p = 0; p < v->ncores; p++) {
    viz_core *vc = &v->core[p];
    int64_t m0, mi;
    tpu_sim_gemm_rows(w->m, v->ncores, p, &m0, &mi);
    vc->m0 = (int)m0;
    vc->mrows = (int)mi;
    for (size_t j = 0; j < vc->ntiles; j++) {
      const viz_tsrc *ts = &vc->tsrc[j];
      const tpu_sim_gemm_place *pl = &vc->places[ts->op];
      const size_t row = (size_t)pl->m0, k0 = (size_t)pl->k0 + (size_t)ts->walk.k0,
                   n0 = (size_t)pl->n0 + (size_t)ts->walk.n0;
      tpu_mxu_tile *t = &vc->tiles[j];
      t->act = v->A + (size_t)ts->walk.a_part * mk + row * (size_t)w->k + k0; t->lda = w->k;
      t->w = v->B + (size_t)ts->walk.b_part * kn + k0 * (size_t)w->n + n0; t->ldw = w->n;
      t->out = v->C + row * (size_t)w->n + n0; t->ldo = w->n;
    }
  }
}

tpu_status tpu_viz_create(const tpu_chip_config *chip, const tpu_viz_workload *w,
                          tpu_viz **out, char *err, size_t errcap) {
  *out = NULL;
  if (w->m < 1 || w->n < 1 || w->k < 1 || w->m > 65536 || w->n > 65536 || w->k > 65536) {
    snprintf(err, errcap, "GEMM shape %d x %d x %d out of range (1..65536 each)", w->m, w->n, w->k);
    return TPU_ERR_CONFIG;
  }
  if ((unsigned)w->precision > TPU_PREC_BF16X6) {
    snprintf(err, errcap, "unknown precision %d", (int)w->precision);
    return TPU_ERR_CONFIG;
  }
  if (check_cores(chip, err, errcap) != TPU_OK) return TPU_ERR_CONFIG;
  tpu_sim_program *prog = NULL;
  tpu_viz *v = new_session(chip);
  tpu_status st = TPU_ERR_NOMEM;
  if (!v || !gemm_inputs(v, w)) goto fail;
  v->w = *w;
  snprintf(v->title, sizeof v->title, "GEMM %d x %d x %d", w->m, w->n, w->k);
  /* the program tpusim matmul --cores runs, on every core of the chip */
  if ((st = tpu_sim_gemm_program(chip, chip->cores, w->m, w->n, w->k, w->precision, NULL, NULL, &prog, NULL,
                                 err, errcap)) != TPU_OK) goto fail;
  for (int c = 0; c < chip->cores; c++)
    if ((st = tpu_sim_gemm_places(chip, chip->cores, w->m, w->n, w->k, w->precision, c, &v->core[c].places,
                                  &v->core[c].nplaces, err, errcap)) != TPU_OK) goto fail;
  int max_m = 1, max_k = 1;
  if ((st = run_program(v, prog, &max_m, &max_k, err, errcap)) != TPU_OK) goto fail;
  place_gemm_tiles(v, w);
  if ((st = tpu_viz_select_core(v, 0)) != TPU_OK) goto fail;
  tpu_sim_program_destroy(prog);
  *out = v;
  return TPU_OK;
fail:
  tpu_sim_program_destroy(prog);
  tpu_viz_destroy(v);
  if (st == TPU_ERR_NOMEM) snprintf(err, errcap, "out of memory for a %d x %d x %d GEMM", w->m, w->n, w->k);
  return st;
}

void tpu_viz_destroy(tpu_viz *v) {
  if (!v) return;
  for (int p = 0; p < TPU_SIM_GEMM_MAX_CORES; p++) {
    viz_core *vc = &v->core[p];
    tpu_free(vc->seg); tpu_free(vc->tiles); tpu_free(vc->times); tpu_free(vc->tsrc); tpu_free(vc->places);
    for (int i = 0; vc->opname && i < vc->nopname; i++) tpu_free(vc->opname[i]);
    tpu_free(vc->opname); tpu_free(vc->inf_ready); tpu_free(vc->inf_deq);
    for (int u = 0; u < TPU_VIZ_NUNIT; u++) {
      for (size_t i = 0; i < vc->nopiv[u]; i++) tpu_free(vc->opiv[u][i].name);
      tpu_free(vc->opiv[u]);
    }
  }
  tpu_mxu_destroy(v->pe);
  tpu_free(v->A); tpu_free(v->B); tpu_free(v->C);
  tpu_free(v->state); tpu_free(v->weight); tpu_free(v->act); tpu_free(v->psum); tpu_free(v->shadow);
  tpu_free(v->tl_cache);
  tpu_free(v->tl_px);
  free_pipe(&v->pipe);
  tpu_free(v);
}

const tpu_chip_config *tpu_viz_chip(const tpu_viz *v) { return &v->chip; }
bool tpu_viz_is_program(const tpu_viz *v) { return v->prog; }
const char *tpu_viz_title(const tpu_viz *v) { return v->title; }
const char *tpu_viz_tile_op(const tpu_viz *v, size_t i) {
  const viz_core *vc = &v->core[v->sel];
  return i < vc->ntiles ? vc->opname[vc->tsrc[i].op] : NULL;
}
const char *tpu_viz_op_at(const tpu_viz *v, int core, tpu_viz_unit u, uint64_t c) {
  if (core < 0 || core >= v->ncores || (unsigned)u >= TPU_VIZ_NUNIT) return NULL;
  const viz_core *vc = &v->core[core];
  const viz_opiv *iv = vc->opiv[u];
  size_t lo = 0, hi = vc->nopiv[u];              /* first op with a > c */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (iv[mid].a <= c) lo = mid + 1; else hi = mid;
  }
  /* intervals of one unit overlap only a little (the MXU loads the next
  ** op's weights while the last streams): look back a few ops */
  for (size_t i = lo, n = 0; i > 0 && n < 16; i--, n++)
    if (iv[i - 1].b > c && iv[i - 1].b > iv[i - 1].a) return iv[i - 1].name;
  return NULL;
}

const char *tpu_viz_mxu_op(const tpu_viz *v) {
  const viz_core *vc = &v->core[v->sel];
  size_t lo = 0, hi = vc->ntiles;                /* first tile with load_start > shown */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (vc->times[mid].load_start <= v->shown) lo = mid + 1; else hi = mid;
  }
  return lo ? vc->opname[vc->tsrc[lo - 1].op] : NULL;
}
int tpu_viz_core(const tpu_viz *v) { return v->sel; }
uint64_t tpu_viz_cycle(const tpu_viz *v) { return v->shown; }
uint64_t tpu_viz_total_cycles(const tpu_viz *v) { return v->total; }
void tpu_viz_set_shade_psum(tpu_viz *v, bool psum) { v->shade_psum = psum; }
bool tpu_viz_shade_psum(const tpu_viz *v) { return v->shade_psum; }
float tpu_viz_shade_scale(const tpu_viz *v) { return v->shade_psum ? v->psum_scale : v->act_scale; }

static void refresh_view(tpu_viz *v) {
  tpu_mxu_view view = { .state = v->state, .weight = v->weight, .act = v->act, .psum = v->psum, .shadow = v->shadow };
  if (v->pe && v->ticks > 0) { tpu_mxu_view_cells(v->pe, &view); return; }
  size_t n = (size_t)v->rows * (size_t)v->cols;
  memset(v->state, 0, n);
  memset(v->shadow, 0, n);
  memset(v->weight, 0, n * sizeof(float));
  memset(v->act, 0, n * sizeof(float));
  memset(v->psum, 0, n * sizeof(float));
}

/* A fresh PE model of the selected core's array 0 with all its tiles queued. */
static tpu_status restart_pe(tpu_viz *v, int core) {
  tpu_mxu *pe;
  tpu_status st = tpu_mxu_create(&v->chip.mxu, &pe);
  if (st != TPU_OK) return st;
  const viz_core *vc = &v->core[core];
  for (size_t i = 0; i < vc->ntiles; i++)
    if ((st = tpu_mxu_push(pe, &vc->tiles[i])) != TPU_OK) { tpu_mxu_destroy(pe); return st; }
  tpu_mxu_destroy(v->pe);
  v->pe = pe;
  v->ticks = 0;
  return TPU_OK;
}

/* The view shows cycle c after c + 1 ticks. */
static void advance_to(tpu_viz *v, uint64_t c) {
  while (v->ticks < c + 1) { tpu_mxu_tick(v->pe); v->ticks++; }
  v->shown = c;
  refresh_view(v);
}

tpu_status tpu_viz_select_core(tpu_viz *v, int core) {
  if (core < 0 || core >= v->ncores) return TPU_ERR_INPUT;
  tpu_status st = restart_pe(v, core);
  if (st != TPU_OK) return st;
  v->sel = core;
  advance_to(v, v->shown);
  return TPU_OK;
}

tpu_status tpu_viz_seek(tpu_viz *v, uint64_t c) {
  if (c >= v->total) c = v->total - 1;
  if (c + 1 < v->ticks) {
    tpu_status st = restart_pe(v, v->sel);
    if (st != TPU_OK) return st;
  }
  advance_to(v, c);
  return TPU_OK;
}

uint64_t tpu_viz_next_tile_cycle(const tpu_viz *v) {
  const viz_core *vc = &v->core[v->sel];
  for (size_t i = 0; i < vc->ntiles; i++)
    if (vc->times[i].stream_start > v->shown) return vc->times[i].stream_start;
  return v->total - 1;
}

uint64_t tpu_viz_first_event_cycle(const tpu_viz *v) {
  const viz_core *vc = &v->core[v->sel];
  return vc->ntiles ? vc->times[0].load_start : 0;
}

/* Event cycles of the selected core: each tile's first weight load, first
** streamed row, first full wavefront (the diagonal reaching the last row)
** and first result; each change of the core's stall kind. Returns the
** nearest one after (dir > 0) or before (dir < 0) the cycle shown, or the
** run's last cycle / 0 when there is none; 'what' (when not NULL) gets
** what happens there, "" when there is none. Ties go to the tile event. */
uint64_t tpu_viz_event_step(const tpu_viz *v, int dir, char *what, size_t cap) {
  static const char *const TILE_EV[4] = { "weights start loading", "first row streams in", "full wavefront",
                                          "results written" };
  const viz_core *vc = &v->core[v->sel];
  const uint64_t at = v->shown;
  uint64_t best = dir > 0 ? v->total - 1 : 0;
  bool found = false;
  size_t btile = 0;
  int bkind = -1;                     /* 0..3: a tile event; 4 + stall kind: a stall begins */
#define CONSIDER(c, kind, tile) do { uint64_t c_ = (c); \
    if ((dir > 0 ? c_ > at : c_ < at) && c_ < v->total && \
        (!found || (dir > 0 ? c_ < best : c_ > best))) { best = c_; found = true; bkind = (kind); btile = (tile); } } while (0)
  for (size_t i = 0; i < vc->ntiles; i++) {
    const tpu_mxu_tile_times *t = &vc->times[i];
    CONSIDER(t->load_start, 0, i);
    CONSIDER(t->stream_start, 1, i);
    CONSIDER(t->stream_start + (uint64_t)(vc->tiles[i].k - 1), 2, i);
    CONSIDER(t->last_result, 3, i);
  }
  for (size_t i = 1; i < vc->nseg; i++)
    if (vc->seg[i].core != vc->seg[i - 1].core) CONSIDER(vc->seg[i].at, 4 + vc->seg[i].core, 0);
#undef CONSIDER
  if (what && cap) {
    if (bkind < 0) what[0] = 0;
    else if (bkind < 4) snprintf(what, cap, "tile %zu of %zu: %s", btile + 1, vc->ntiles, TILE_EV[bkind]);
    else snprintf(what, cap, "the core's %s begins", tpu_sim_stall_name(bkind - 4));
  }
  return best;
}
uint64_t tpu_viz_next_event_cycle(const tpu_viz *v) { return tpu_viz_event_step(v, 1, NULL, 0); }
uint64_t tpu_viz_prev_event_cycle(const tpu_viz *v) { return tpu_viz_event_step(v, -1, NULL, 0); }

/* A stall kind a class watches for: the skip stops where one begins or ends. */
static bool is_teaching_stall(int k) { return k == TPU_SIM_INFEED_WAIT || k == TPU_SIM_COLLECTIVE_WAIT; }

uint64_t tpu_viz_wait_end(const tpu_viz *v, int *stall) {
  const viz_core *vc = &v->core[v->sel];
  const uint64_t now = v->shown;
  *stall = tpu_viz_core_cat_at(v, v->sel, now);
  const size_t cells = (size_t)v->rows * (size_t)v->cols;
  for (size_t x = 0; x < cells; x++)
    if (v->state[x] != TPU_MXU_CELL_IDLE) return now;          /* the array shows something */
  uint64_t end = v->total - 1;
  for (size_t i = 0; i < vc->ntiles; i++)
    if (vc->times[i].load_start > now) { end = vc->times[i].load_start; break; }
  if (!vc->nseg || now < vc->seg[0].at || now >= vc->end) return end;
  /* the segments from now to end: stop at an infeed wait or all-reduce
  ** beginning or ending; the kind covering the most cycles names the skip */
  uint64_t most = 0, by[TPU_SIM_NSTALL] = { 0 };
  for (size_t i = seg_index(vc, now); i < vc->nseg && vc->seg[i].at < end; i++) {
    const uint64_t a = vc->seg[i].at > now ? vc->seg[i].at : now;
    const uint64_t b = i + 1 < vc->nseg && vc->seg[i + 1].at < end ? vc->seg[i + 1].at : end;
    if (i > 0 && vc->seg[i].at > now && vc->seg[i].core != vc->seg[i - 1].core &&
        (is_teaching_stall(vc->seg[i].core) || is_teaching_stall(vc->seg[i - 1].core))) { end = vc->seg[i].at; break; }
    if (b > a) by[vc->seg[i].core] += b - a;
  }
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    if (by[k] > most) { most = by[k]; *stall = k; }
  return end;
}

const char *tpu_viz_event_name(tpu_viz_event e) {
  static const char *const N[TPU_VIZ_NEVENT] = { "weight-load", "wavefront", "result", "partial-tile", "infeed-wait",
                                                 "all-reduce", "full-array" };
  return (unsigned)e < TPU_VIZ_NEVENT ? N[e] : NULL;
}

bool tpu_viz_event_cycle(const tpu_viz *v, tpu_viz_event e, uint64_t *c) {
  const viz_core *vc = &v->core[v->sel];
  const tpu_mxu_tile *t = vc->tiles;
  const tpu_mxu_tile_times *tt = vc->times;
  switch (e) {
  case TPU_VIZ_AT_WEIGHT_LOAD: if (!vc->ntiles) return false; *c = tt[0].load_start; return true;
  case TPU_VIZ_AT_WAVEFRONT: if (!vc->ntiles) return false; *c = tt[0].stream_start + (uint64_t)(t[0].k - 1); return true;
  case TPU_VIZ_AT_RESULT: if (!vc->ntiles) return false; *c = tt[0].last_result; return true;
  case TPU_VIZ_AT_PARTIAL_TILE:
    for (size_t i = 0; i < vc->ntiles; i++)
      if (t[i].k < v->rows || t[i].n < v->cols) {
        *c = tt[i].stream_start + (uint64_t)(t[i].k - 1);
        /* the tile before it still draining: once it has, if this one still streams */
        if (i > 0 && tt[i - 1].last_result + 1 > *c && tt[i - 1].last_result + 1 < tt[i].stream_start + (uint64_t)t[i].m)
          *c = tt[i - 1].last_result + 1;
        return true;
      }
    return false;
  case TPU_VIZ_AT_FULL_ARRAY:
    for (size_t i = 0; i < vc->ntiles; i++)
      if (t[i].m >= t[i].k + t[i].n - 1) { *c = tt[i].stream_start + (uint64_t)(t[i].k + t[i].n - 2); return true; }
    return false;
  case TPU_VIZ_AT_INFEED_WAIT: case TPU_VIZ_AT_ALL_REDUCE: {
    const int want = e == TPU_VIZ_AT_INFEED_WAIT ? TPU_SIM_INFEED_WAIT : TPU_SIM_COLLECTIVE_WAIT;
    for (size_t i = 0; i < vc->nseg; i++)
      if (vc->seg[i].core == want && vc->seg[i].at < v->total) { *c = vc->seg[i].at; return true; }
    return false;
  }
  default: return false;
  }
}

/* The last tile of the selected core's array 0 to start loading by the
** cycle shown, + 1 (0: none). */
static size_t tiles_loaded(const viz_core *vc, uint64_t t) {
  size_t lo = 0, hi = vc->ntiles;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (vc->times[mid].load_start <= t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* An idle cell holding a weight: its register keeps a tile's weight, or a
** tile's weight has finished shifting into its shadow (cycle L + c + k - 1
** of the load) and the tile's first activation has not reached it yet
** (stream_start + r + c). 'nl' is tiles_loaded() at the cycle shown. */
static bool cell_holds(const tpu_viz *v, size_t nl, int r, int c) {
  const size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
  if (v->state[x] != TPU_MXU_CELL_IDLE) return false;
  if (v->weight[x] != 0) return true;
  const viz_core *vc = &v->core[v->sel];
  for (size_t i = nl, seen = 0; i-- > 0 && seen < 2; seen++) {      /* the double buffer: the last two loaded */
    const tpu_mxu_tile *t = &vc->tiles[i];
    if (r < t->k && c < t->n && v->shown > vc->times[i].load_start + (uint64_t)(c + t->k - 1) &&
        v->shown < vc->times[i].stream_start + (uint64_t)(r + c))
      return true;
  }
  return false;
}

bool tpu_viz_cell_shadow(const tpu_viz *v, int r, int c) {
  return r >= 0 && c >= 0 && r < v->rows && c < v->cols && v->shadow[(size_t)r * (size_t)v->cols + (size_t)c];
}

bool tpu_viz_cell_holds(const tpu_viz *v, int r, int c) {
  if (r < 0 || c < 0 || r >= v->rows || c >= v->cols) return false;
  return cell_holds(v, tiles_loaded(&v->core[v->sel], v->shown), r, c);
}

void tpu_viz_moment_of(const tpu_viz *v, tpu_viz_moment *out) {
  *out = (tpu_viz_moment){ .core_stall = tpu_viz_core_cat_at(v, v->sel, v->shown), .cells = v->rows * v->cols };
  int colc[TPU_MXU_MAX_DIM] = { 0 };
  const size_t nl = tiles_loaded(&v->core[v->sel], v->shown);
  for (int r = 0; r < v->rows; r++) {
    int rowc = 0;
    for (int c = 0; c < v->cols; c++) {
      const size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
      const int st = v->state[x];
      out->loading += st == TPU_MXU_CELL_LOADING;
      out->holding += cell_holds(v, nl, r, c);
      if (st == TPU_MXU_CELL_COMPUTING) { out->computing++; rowc = 1; colc[c] = 1; }
    }
    out->rows_computing += rowc;
  }
  for (int c = 0; c < v->cols; c++) out->cols_computing += colc[c];
}

bool tpu_viz_stall_span(const tpu_viz *v, int stall, uint64_t *a, uint64_t *b) {
  const viz_core *vc = &v->core[v->sel];
  bool found = false;
  for (size_t i = 0; i < vc->nseg; i++) {
    const uint64_t end = i + 1 < vc->nseg ? vc->seg[i + 1].at : vc->end;
    if (vc->seg[i].core != stall || vc->seg[i].at >= end) continue;
    if (!found) *a = vc->seg[i].at;
    *b = end;
    found = true;
  }
  return found;
}

/* The tile loading weights into array 0 at the cycle shown (-1 if none). */
static long loading_tile(const tpu_viz *v) {
  const viz_core *vc = &v->core[v->sel];
  for (size_t i = vc->ntiles; i-- > 0;)
    if (vc->times[i].load_start <= v->shown) return v->shown < vc->times[i].stream_start ? (long)i : -1;
  return -1;
}

bool tpu_viz_cell_weight(const tpu_viz *v, int r, int c, float *w) {
  if (r < 0 || c < 0 || r >= v->rows || c >= v->cols) return false;
  const size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
  const long ti = v->state[x] == TPU_MXU_CELL_LOADING ? loading_tile(v) : -1;
  if (ti < 0) { *w = v->weight[x]; return v->state[x] != TPU_MXU_CELL_IDLE || v->weight[x] != 0; }
  const tpu_mxu_tile *t = &v->core[v->sel].tiles[ti];
  *w = r < t->k && c < t->n ? t->w[(size_t)r * (size_t)t->ldw + (size_t)c] : 0;
  return true;
}

void tpu_viz_set_text_scale(tpu_viz *v, double s) { v->text_scale = s > 0 ? s : 1; }

size_t tpu_viz_tiles(const tpu_viz *v, const tpu_mxu_tile **tiles, const tpu_mxu_tile_times **times) {
  const viz_core *vc = &v->core[v->sel];
  if (tiles) *tiles = vc->tiles;
  if (times) *times = vc->times;
  return vc->ntiles;
}

bool tpu_viz_cell_info(const tpu_viz *v, int r, int c, tpu_viz_cell *out) {
  if (r < 0 || c < 0 || r >= v->rows || c >= v->cols) return false;
  size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
  *out = (tpu_viz_cell){ v->state[x], v->weight[x], v->act[x], v->psum[x] };
  return true;
}
/* }================================================================== */

/* {==================================================================
** The input pipeline (tpu_viz_set_pipeline)
** ================================================================== */
/* The span kinds the legend shows, in datafeed's order, with their colors. */
static const struct { char kind; const char *name; uint32_t color; } SPAN_KINDS[] = {
  { 'O', "open", 0xffb07ad8u }, { 'R', "read", 0xff4f9de0u }, { 'M', "map", 0xff3cb371u },
  { 'B', "batch", 0xffe0b000u }, { 'X', "shuffle", 0xff8d6e63u }, { 'C', "cache read", 0xff26a69au },
  { 'P', "prefetch", 0xff9ccc65u }, { 'S', "serialize", 0xffa1887fu }, { 'D', "deserialize", 0xff90a4aeu },
  { 'I', "iterator", 0xffce93d8u }, { 'W', "waits", 0xffd9534fu }, { 'T', "step", 0xffe0e0e0u } };
#define VIZ_NKINDS ((int)(sizeof SPAN_KINDS / sizeof SPAN_KINDS[0]))

uint32_t tpu_viz_span_color(char kind) {
  for (int k = 0; k < VIZ_NKINDS; k++) if (SPAN_KINDS[k].kind == kind) return SPAN_KINDS[k].color;
  return 0xff808080u;
}
const char *tpu_viz_span_name(char kind) {
  for (int k = 0; k < VIZ_NKINDS; k++) if (SPAN_KINDS[k].kind == kind) return SPAN_KINDS[k].name;
  return "other";
}

static void free_pipe(viz_pipe *pp) {
  for (int r = 0; pp->names && r < pp->nrows; r++) tpu_free(pp->names[r]);
  tpu_free(pp->names);
  tpu_free(pp->spans);
  memset(pp, 0, sizeof *pp);
}

tpu_status tpu_viz_set_pipeline(tpu_viz *v, const char *title, int nrows, const char *const *names,
                                const tpu_viz_span *spans, size_t n) {
  if (nrows < 1 || nrows > 64) return TPU_ERR_INPUT;
  for (size_t i = 0; i < n; i++) if (spans[i].row < 0 || spans[i].row >= nrows) return TPU_ERR_INPUT;
  viz_pipe pp = { .nrows = nrows };
  snprintf(pp.title, sizeof pp.title, "%s", title ? title : "");
  pp.names = tpu_calloc((size_t)nrows, sizeof *pp.names);
  pp.spans = tpu_malloc((n + 1) * sizeof *pp.spans);
  bool ok = pp.names && pp.spans;
  for (int r = 0; ok && r < nrows; r++) ok = (pp.names[r] = tpu_strdup(names[r] ? names[r] : "")) != NULL;
  if (!ok) { free_pipe(&pp); return TPU_ERR_NOMEM; }
  if (n) memcpy(pp.spans, spans, n * sizeof *spans);
  pp.nspans = n;
  free_pipe(&v->pipe);
  v->pipe = pp;
  return TPU_OK;
}
int tpu_viz_pipeline_rows(const tpu_viz *v) { return v->pipe.nrows; }
int tpu_viz_pipeline_kinds(const tpu_viz *v, char out[16]) {
  int n = 0;
  for (int k = 0; k < VIZ_NKINDS; k++) {
    bool seen = false;
    for (size_t i = 0; i < v->pipe.nspans && !seen; i++) seen = v->pipe.spans[i].kind == SPAN_KINDS[k].kind;
    if (seen) out[n++] = SPAN_KINDS[k].kind;
  }
  out[n] = 0;
  return n;
}
const char *tpu_viz_pipeline_row_name(const tpu_viz *v, int row) {
  return row >= 0 && row < v->pipe.nrows ? v->pipe.names[row] : NULL;
}
const char *tpu_viz_pipeline_title(const tpu_viz *v) { return v->pipe.title; }
/* }================================================================== */

/* {==================================================================
** Layout
** ================================================================== */
/* Text size: 13 px at 1280x800, growing with the frame's height and the
** session's --scale (18 px at 1920x1080); every text row and label column
** of the layout is measured in it. */
static void layout_text(const tpu_viz *v, int height, tpu_viz_layout *l) {
  int f = (int)(13.0 * v->text_scale * (double)height / 800.0 + 0.5);
  l->font = f < 8 ? 8 : f;
  l->line = l->font + (l->font + 2) / 3;
}

void tpu_viz_layout_of(const tpu_viz *v, int width, int height, tpu_viz_layout *l) {
  memset(l, 0, sizeof *l);
  l->width = width; l->height = height;
  layout_text(v, height, l);
  const int ln = l->line;
  l->header = (tpu_viz_rect){ 0, 0, width, ln + 8 };
  l->arrows = v->rows <= 16 && v->cols <= 16;
  const int lw = width / 2, acc_h = 40, top = l->header.h + ln + 4 + (l->arrows ? ln : 0);
  const int gap = l->arrows ? ln : 4;            /* room for the flow arrows */
  l->queue_cols = v->rows < 16 ? v->rows : 16;
  int cw = (lw - 20 - gap) / (v->cols + l->queue_cols), chh = (height - top - acc_h - gap - (l->arrows ? 4 : 1) * ln - 6) / v->rows;
  l->cell = cw < chh ? cw : chh;
  if (l->cell < 1) l->cell = 1;
  l->queue = (tpu_viz_rect){ 10, top, l->queue_cols * l->cell, v->rows * l->cell };
  l->array = (tpu_viz_rect){ 10 + l->queue.w + gap, top, v->cols * l->cell, v->rows * l->cell };
  l->acc = (tpu_viz_rect){ l->array.x, top + l->array.h + gap + 2, l->array.w, acc_h };
  const int tx = lw + 8 * l->font, np = v->pipe.nrows;
  /* the input pipeline (if any) above the cores: a caption and its rows,
  ** at most 18% of the frame, taken from the cores' share */
  int pipe_h = 0;
  if (np > 0) {
    l->pipe_row_h = (height * 18 / 100 - ln) / np;
    if (l->pipe_row_h > ln) l->pipe_row_h = ln;
    if (l->pipe_row_h < 3) l->pipe_row_h = 3;
    pipe_h = np * l->pipe_row_h + ln + 6;       /* the rows, then the timeline's caption */
    l->pipeline = (tpu_viz_rect){ tx, l->header.h + ln + 4, width - tx - 12, np * l->pipe_row_h };
  }
  const int avail = height * 50 / 100 - ln - pipe_h;
  l->per_col = v->ncores;
  l->row_h = (avail / v->ncores - 4) / 5;
  if (l->row_h < l->font - 2 && v->ncores > 4) {  /* labels too small: two columns of cores */
    l->per_col = (v->ncores + 1) / 2;
    l->row_h = (avail / l->per_col - 4) / 5;
  }
  if (l->row_h > ln) l->row_h = ln;
  if (l->row_h < 2) l->row_h = 2;
  l->strip_h = l->row_h;
  l->core_h = l->strip_h + TPU_VIZ_NUNIT * l->row_h + 4;
  int tw = width - tx - 12;
  if (l->per_col < v->ncores) {                  /* each column: its label gutter, then its bands */
    tw = (width - tx - 12 - 8 * l->font) / 2;
    l->col_dx = tw + 8 * l->font;
  }
  l->timeline = (tpu_viz_rect){ tx, l->header.h + ln + 4 + pipe_h, tw, l->per_col * l->core_h };
  l->axis = (tpu_viz_rect){ tx, l->timeline.y + l->timeline.h + 2, l->timeline.w, ln + 6 };
  l->infeed = (tpu_viz_rect){ tx, l->axis.y + l->axis.h + 6, l->timeline.w, 2 * ln + 4 };
  /* legend: a heading, one row per stall kind, two rows of cell states */
  /* (and one row of the pipeline's span kinds when there is one) */
  l->legend = (tpu_viz_rect){ lw + 10, l->infeed.y + l->infeed.h + 10, width - lw - 22,
                              (TPU_SIM_NSTALL + 3 + (np > 0)) * ln };
  l->info = (tpu_viz_rect){ lw + 10, l->legend.y + l->legend.h + 8, width - lw - 22,
                            height - (l->legend.y + l->legend.h + 8) };
}

void tpu_viz_view_range(const tpu_viz *v, uint64_t *a, uint64_t *b) {
  *a = v->tl_b > v->tl_a ? v->tl_a : 0;
  *b = v->tl_b > v->tl_a ? v->tl_b : v->total;
}

/* Shows [a, b) clamped to the run, at least 16 cycles (or the run). */
static void set_view(tpu_viz *v, double a, double b) {
  const double total = (double)v->total, minw = total < 16 ? total : 16;
  if (b - a < minw) { const double m = (a + b) / 2; a = m - minw / 2; b = m + minw / 2; }
  if (b - a > total) { a = 0; b = total; }
  if (a < 0) { b -= a; a = 0; }
  if (b > total) { a -= b - total; b = total; }
  v->tl_a = (uint64_t)(a + 0.5);
  v->tl_b = (uint64_t)(b + 0.5);
  if (v->tl_b <= v->tl_a || (v->tl_a == 0 && v->tl_b >= v->total)) v->tl_a = v->tl_b = 0;
}

void tpu_viz_zoom(tpu_viz *v, double factor, uint64_t center) {
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  if (factor <= 0) factor = 1;
  const double c = (double)center, w = (double)(b - a) / factor;
  /* the center cycle stays at the same place on the timeline */
  const double frac = b > a ? ((double)center - (double)a) / (double)(b - a) : 0.5;
  set_view(v, c - frac * w, c - frac * w + w);
}

void tpu_viz_pan(tpu_viz *v, double fraction) {
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  const double d = fraction * (double)(b - a);
  set_view(v, (double)a + d, (double)b + d);
}

/* The timeline x of cycle c, or -1 when c is outside the visible range. */
static int x_of_cycle(const tpu_viz *v, const tpu_viz_layout *l, uint64_t c) {
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  if (c < a || c >= b) return -1;
  return l->timeline.x + (int)((double)(c - a) * (double)l->timeline.w / (double)(b - a));
}

int tpu_viz_core_y(const tpu_viz_layout *l, int core) {
  return l->timeline.y + (l->per_col > 0 ? core % l->per_col : core) * l->core_h;
}
int tpu_viz_core_x(const tpu_viz_layout *l, int core) {
  return l->timeline.x + (l->per_col > 0 && core >= l->per_col ? l->col_dx : 0);
}

int tpu_viz_axis_ticks(const tpu_viz *v, const tpu_viz_layout *l, uint64_t *out, int max) {
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  const double gap = 6.0 * l->font, per_px = (double)(b - a) / (l->timeline.w > 0 ? l->timeline.w : 1);
  uint64_t step = 1;
  for (uint64_t p = 1; step * 1.0 / per_px < gap && p < UINT64_C(1) << 60; p *= 10)
    for (int k = 0; k < 3; k++) {
      static const int M[3] = { 1, 2, 5 };
      step = p * (uint64_t)M[k];
      if ((double)step / per_px >= gap) break;
    }
  int n = 0;
  for (uint64_t c = (a + step - 1) / step * step; c < b && n < max; c += step) out[n++] = c;
  return n;
}

void tpu_viz_cycle_label(uint64_t c, char *b, size_t n) {
  if (c < 10000) snprintf(b, n, "%llu", (unsigned long long)c);
  else if (c < 10000000) snprintf(b, n, "%.4gk", (double)c / 1e3);
  else snprintf(b, n, "%.4gM", (double)c / 1e6);
}

uint64_t tpu_viz_cycle_at_x(const tpu_viz *v, const tpu_viz_layout *l, int x) {
  if (l->col_dx > 0 && x >= l->timeline.x + l->timeline.w + 4 * l->font) x -= l->col_dx;   /* the second column */
  int px = x - l->timeline.x;
  if (px < 0) px = 0;
  if (px >= l->timeline.w) px = l->timeline.w - 1;
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  uint64_t c = a + (uint64_t)((double)px * (double)(b - a) / (double)l->timeline.w);
  return c < b ? c : b - 1;
}

bool tpu_viz_cell_at(const tpu_viz *v, const tpu_viz_layout *l, int x, int y, int *r, int *c) {
  if (x < l->array.x || y < l->array.y || x >= l->array.x + l->array.w || y >= l->array.y + l->array.h)
    return false;
  *r = (y - l->array.y) / l->cell;
  *c = (x - l->array.x) / l->cell;
  return *r < v->rows && *c < v->cols;
}
/* }================================================================== */

/* {==================================================================
** Drawing (every pixel write is clipped to the frame)
** ================================================================== */
static void fill(uint32_t *px, int pitch, const tpu_viz_layout *l, int x, int y, int w, int h, uint32_t col) {
  if (x < 0) { w += x; x = 0; }
  if (y < 0) { h += y; y = 0; }
  if (x + w > l->width) w = l->width - x;
  if (y + h > l->height) h = l->height - y;
  for (int j = 0; j < h; j++) {
    uint32_t *row = px + (size_t)(y + j) * (size_t)pitch + x;
    for (int i = 0; i < w; i++) row[i] = col;
  }
}

/* The tile streaming on diagonal d of the selected core's array 0, or -1. */
static long tile_on_diag(const viz_core *vc, int64_t d) {
  size_t lo = 0, hi = vc->ntiles;
  while (lo < hi) {                              /* first tile with stream_start > d */
    size_t mid = (lo + hi) / 2;
    if ((int64_t)vc->times[mid].stream_start <= d) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return -1;
  const size_t i = lo - 1;
  return d < (int64_t)vc->times[i].stream_start + vc->tiles[i].m ? (long)i : -1;
}

/* The shadow mark: a computing cell whose shadow register already takes the
** next tile's weight gets an amber triangle in its top-right corner, its
** legs 2/5 of the cell (at least 2 px), clear of the cell's centre. */
static void shadow_mark(uint32_t *px, int pitch, const tpu_viz_layout *l, int x, int y, int inner) {
  if (inner < 3) return;                         /* too small for a mark */
  const int ts = TPU_VIZ_SHADOW_MARK(inner);
  for (int j = 0; j < ts; j++) fill(px, pitch, l, x + inner - (ts - j), y + j, ts - j, 1, TPU_VIZ_COLOR_LOADING);
}

static void draw_cells(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const int cell = l->cell, inner = cell >= 6 ? cell - 1 : cell;
  const float scale = tpu_viz_shade_scale(v);
  const float *val = v->shade_psum ? v->psum : v->act;
  const size_t nl = tiles_loaded(&v->core[v->sel], v->shown);
  for (int r = 0; r < v->rows; r++) {
    const int y = l->array.y + r * cell;
    if (y >= l->height) break;
    for (int c = 0; c < v->cols; c++) {
      const size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
      uint32_t col = v->state[x] == TPU_MXU_CELL_COMPUTING ? tpu_viz_value_color(val[x], scale)
                   : v->state[x] == TPU_MXU_CELL_LOADING ? TPU_VIZ_COLOR_LOADING
                   : cell_holds(v, nl, r, c) ? TPU_VIZ_COLOR_HOLDING : TPU_VIZ_COLOR_IDLE;
      fill(px, pitch, l, l->array.x + c * cell, y, inner, inner, col);
      if (v->state[x] == TPU_MXU_CELL_COMPUTING && v->shadow[x])
        shadow_mark(px, pitch, l, l->array.x + c * cell, y, inner);
    }
  }
  /* skewed input queue: column q (1 = next to the array) holds what enters row r at cycle t+q */
  const viz_core *vc = &v->core[v->sel];
  for (int q = 1; q <= l->queue_cols; q++) {
    const int x = l->queue.x + l->queue.w - q * cell;
    for (int r = 0; r < v->rows; r++) {
      int64_t d = (int64_t)v->shown + q - r;
      long ti = tile_on_diag(vc, d);
      uint32_t col = TPU_VIZ_COLOR_BG;
      if (ti >= 0) {
        const tpu_mxu_tile *t = &vc->tiles[ti];
        int64_t m = d - (int64_t)vc->times[ti].stream_start;
        col = r < t->k ? tpu_viz_value_color(t->act[(size_t)m * (size_t)t->lda + (size_t)r], v->act_scale)
                       : TPU_VIZ_COLOR_IDLE;
      }
      fill(px, pitch, l, x, l->array.y + r * cell, inner, inner, col);
    }
  }
  /* accumulators: per column, the share of the current tile's M results written */
  fill(px, pitch, l, l->acc.x, l->acc.y, l->acc.w, l->acc.h, 0xff202020u);
  for (int c = 0; c < v->cols; c++) {
    int64_t d = (int64_t)v->shown - (v->rows - 1) - c;
    size_t lo = 0, hi = vc->ntiles;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if ((int64_t)vc->times[mid].stream_start <= d) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) continue;
    const size_t i = lo - 1;
    if (c >= vc->tiles[i].n) continue;
    int64_t done = d - (int64_t)vc->times[i].stream_start + 1, m = vc->tiles[i].m;
    if (done > m) done = m;
    int h = (int)((double)l->acc.h * (double)done / (double)m + 0.5);
    fill(px, pitch, l, l->acc.x + c * cell, l->acc.y + l->acc.h - h, inner, h, 0xff3cb371u);
  }
}

static void build_tl_cache(tpu_viz *v, const tpu_viz_layout *l) {
  const int w = l->timeline.w, per = 1 + TPU_VIZ_NUNIT;
  if (v->tl_cache && v->tl_w == w && v->tl_total == v->total && v->tl_ca == v->tl_a && v->tl_cb == v->tl_b) return;
  tpu_free(v->tl_cache);
  tpu_free(v->tl_px);
  v->tl_px = NULL;
  v->tl_cache = tpu_malloc((size_t)w * (size_t)v->ncores * (size_t)per);
  v->tl_w = w; v->tl_total = v->total; v->tl_ca = v->tl_a; v->tl_cb = v->tl_b;
  if (!v->tl_cache) return;                      /* drawn without the cache */
  for (int p = 0; p < v->ncores; p++)
    for (int x = 0; x < w; x++) {
      uint64_t c = tpu_viz_cycle_at_x(v, l, l->timeline.x + x);
      uint8_t *o = v->tl_cache + ((size_t)p * (size_t)w + (size_t)x) * (size_t)per;
      o[0] = (uint8_t)tpu_viz_core_cat_at(v, p, c);
      for (int u = 0; u < TPU_VIZ_NUNIT; u++) o[1 + u] = (uint8_t)tpu_viz_unit_cat_at(v, p, (tpu_viz_unit)u, c);
    }
}

/* Core p's strip and unit rows at timeline x (its categories 'cats'), in a
** frame or in the timeline's pixel cache (origin x0, y0 of core p's block). */
static void draw_tl_column(uint32_t *px, int pitch, const tpu_viz_layout *l, int x, int y0, const uint8_t *cats) {
  fill(px, pitch, l, x, y0, 1, l->strip_h, tpu_viz_stall_color(cats[0]));
  for (int u = 0; u < TPU_VIZ_NUNIT; u++) {
    uint32_t col = cats[1 + u] == TPU_SIM_IDLE ? 0xff262626u : tpu_viz_stall_color(cats[1 + u]);
    fill(px, pitch, l, x, y0 + l->strip_h + u * l->row_h, 1, l->row_h - 1, col);
  }
}

/* The cores' blocks drawn once into tl_px (background where nothing is
** drawn) for the cached categories; NULL when out of memory. The timeline
** changes only when zoomed, panned or resized, so a frame copies its rows. */
static const uint32_t *tl_pixels(tpu_viz *v, const tpu_viz_layout *l) {
  const int w = l->timeline.w, h = v->ncores * l->core_h, per = 1 + TPU_VIZ_NUNIT;
  if (!v->tl_cache || w < 1 || h < 1) return NULL;
  if (v->tl_px && v->tl_px_key[0] == l->core_h && v->tl_px_key[1] == l->strip_h && v->tl_px_key[2] == l->row_h)
    return v->tl_px;
  tpu_free(v->tl_px);
  if (!(v->tl_px = tpu_malloc((size_t)w * (size_t)h * sizeof *v->tl_px))) return NULL;
  v->tl_px_key[0] = l->core_h; v->tl_px_key[1] = l->strip_h; v->tl_px_key[2] = l->row_h;
  tpu_viz_layout tl = *l;                        /* the cache as a w x h frame of its own */
  tl.width = w; tl.height = h;
  fill(v->tl_px, w, &tl, 0, 0, w, h, TPU_VIZ_COLOR_BG);
  for (int p = 0; p < v->ncores; p++)
    for (int x = 0; x < w; x++)
      draw_tl_column(v->tl_px, w, &tl, x, p * l->core_h, v->tl_cache + ((size_t)p * (size_t)w + (size_t)x) * (size_t)per);
  return v->tl_px;
}

static void draw_timeline(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const int w = l->timeline.w, per = 1 + TPU_VIZ_NUNIT;
  build_tl_cache(v, l);
  const uint32_t *tp = tl_pixels(v, l);
  for (int p = 0; p < v->ncores; p++) {
    const int y0 = tpu_viz_core_y(l, p), x0 = tpu_viz_core_x(l, p);
    if (p == v->sel) fill(px, pitch, l, x0 - 8 * l->font + 4, y0, 4, l->core_h - 4, 0xffffffffu);
    if (tp) {
      const int n = x0 + w > l->width ? l->width - x0 : w;
      for (int j = 0; j < l->core_h && y0 + j < l->height && n > 0; j++)
        if (y0 + j >= 0)
          memcpy(px + (size_t)(y0 + j) * (size_t)pitch + x0, tp + ((size_t)p * (size_t)l->core_h + (size_t)j) * (size_t)w,
                 (size_t)n * sizeof *px);
      continue;
    }
    for (int x = 0; x < w; x++) {
      uint8_t cats[1 + TPU_VIZ_NUNIT];
      if (v->tl_cache) memcpy(cats, v->tl_cache + ((size_t)p * (size_t)w + (size_t)x) * (size_t)per, (size_t)per);
      else {
        uint64_t c = tpu_viz_cycle_at_x(v, l, l->timeline.x + x);
        cats[0] = (uint8_t)tpu_viz_core_cat_at(v, p, c);
        for (int u = 0; u < TPU_VIZ_NUNIT; u++) cats[1 + u] = (uint8_t)tpu_viz_unit_cat_at(v, p, (tpu_viz_unit)u, c);
      }
      draw_tl_column(px, pitch, l, x0 + x, y0, cats);
    }
  }
  /* the cycle axis: a baseline and a tick per round cycle (labels by the SDL layer) */
  uint64_t ticks[64];
  const int nt = tpu_viz_axis_ticks(v, l, ticks, 64);
  for (int dx = 0; dx <= l->col_dx; dx += l->col_dx > 0 ? l->col_dx : 1) {   /* under each column of cores */
    fill(px, pitch, l, l->axis.x + dx, l->axis.y, l->axis.w, 1, 0xff404040u);
    for (int i = 0; i < nt; i++) fill(px, pitch, l, x_of_cycle(v, l, ticks[i]) + dx, l->axis.y, 1, 5, TPU_VIZ_COLOR_TICK);
  }
  /* infeed occupancy (batches queued at the selected core), full height = the run's largest */
  fill(px, pitch, l, l->infeed.x, l->infeed.y, l->infeed.w, l->infeed.h, 0xff202020u);
  const int qmax = tpu_viz_infeed_max(v, v->sel);
  for (int x = 0; qmax > 0 && x < l->infeed.w; x++) {
    int occ = tpu_viz_infeed_at(v, v->sel, tpu_viz_cycle_at_x(v, l, l->timeline.x + x));
    int h = (int)((int64_t)occ * l->infeed.h / qmax);
    if (h) fill(px, pitch, l, l->infeed.x + x, l->infeed.y + l->infeed.h - h, 1, h, tpu_viz_stall_color(TPU_SIM_INFEED_WAIT));
  }
  /* a tick where each batch becomes ready (so an always-empty queue still shows its arrivals) */
  const viz_core *sc = &v->core[v->sel];
  for (int64_t b = 0; b < sc->ninf; b++) {
    if (sc->inf_ready[b] >= v->total) break;
    int x = x_of_cycle(v, l, sc->inf_ready[b]);
    if (x >= 0) fill(px, pitch, l, x, l->infeed.y, 1, 4, 0xffc0c0c0u);
  }
  /* cursor at the shown cycle */
  int cx = x_of_cycle(v, l, v->shown);
  const int top = v->pipe.nrows > 0 ? l->pipeline.y : l->timeline.y - 4;
  if (cx >= 0) fill(px, pitch, l, cx, top, 1, l->infeed.y + l->infeed.h - top, 0xffffffffu);
  if (cx >= 0 && l->col_dx > 0)
    fill(px, pitch, l, cx + l->col_dx, l->timeline.y - 4, 1, l->axis.y + 5 - (l->timeline.y - 4), 0xffffffffu);
}

/* The legend's swatches (its text is drawn by the SDL layer): one per stall
** kind, then the cell states: idle, loading, holding, and the computing scale from
** -1 (blue) through 0 to +1 (red); then a computing cell with the shadow mark. */
static void draw_legend(const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const int ln = l->line, sw = l->font, pad = (ln - sw) / 2;
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    fill(px, pitch, l, l->legend.x, l->legend.y + (k + 1) * ln + pad, sw, sw, tpu_viz_stall_color(k));
  const int y = l->legend.y + (TPU_SIM_NSTALL + 1) * ln + pad;
  fill(px, pitch, l, l->legend.x, y, sw, sw, TPU_VIZ_COLOR_IDLE);
  fill(px, pitch, l, l->legend.x + 9 * l->font / 2, y, sw, sw, TPU_VIZ_COLOR_LOADING);
  fill(px, pitch, l, l->legend.x + 10 * l->font, y, sw, sw, TPU_VIZ_COLOR_HOLDING);
  const int gx = l->legend.x + 16 * l->font, gw = 6 * l->font;
  for (int i = 0; i < gw; i++)
    fill(px, pitch, l, gx + i, y, 1, sw, tpu_viz_value_color((float)(2.0 * i / (gw - 1) - 1.0), 1));
  /* the next row: a computing cell with the shadow mark */
  fill(px, pitch, l, l->legend.x, y + ln, sw, sw, tpu_viz_value_color(0, 1));
  shadow_mark(px, pitch, l, l->legend.x, y + ln, sw);
}

/* A filled triangle pointing down (dir 0) or right (dir 1) in the box. */
static void arrow(uint32_t *px, int pitch, const tpu_viz_layout *l, int x, int y, int w, int h, int dir, uint32_t col) {
  if (dir == 0)
    for (int j = 0; j < h; j++) { int rw = w * (h - j) / h; fill(px, pitch, l, x + (w - rw) / 2, y + j, rw, 1, col); }
  else
    for (int i = 0; i < w; i++) { int ch = h * (w - i) / w; fill(px, pitch, l, x + i, y + (h - ch) / 2, 1, ch, col); }
}

/* Small arrays: the three flows of a weight-stationary array: weights come
** down from the top, activations enter from the left (the queue holds their
** skew), partial sums move down into the accumulators. */
static void draw_arrows(const tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  if (!l->arrows) return;
  const int cell = l->cell, ln = l->line, aw = cell / 3 > 4 ? cell / 3 : 4, ah = ln / 2;
  for (int c = 0; c < v->cols; c++) {
    const int x = l->array.x + c * cell + (cell - aw) / 2;
    arrow(px, pitch, l, x, l->array.y - ah - 2, aw, ah, 0, TPU_VIZ_COLOR_LOADING);
    arrow(px, pitch, l, x, l->array.y + l->array.h + (ln - ah) / 2, aw, ah, 0, 0xff3cb371u);
  }
  const int gap = l->array.x - (l->queue.x + l->queue.w);
  for (int r = 0; r < v->rows; r++)
    arrow(px, pitch, l, l->queue.x + l->queue.w + (gap - ah) / 2, l->array.y + r * cell + (cell - aw) / 2, ah, aw, 1,
          0xff6fa8dcu);
}

/* The input pipeline's rows: each span from its first to its last cycle in
** the timeline's visible range (at least a pixel wide), in its kind's color. */
static void draw_pipeline(const tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const viz_pipe *pp = &v->pipe;
  if (pp->nrows < 1) return;
  uint64_t a, b;
  tpu_viz_view_range(v, &a, &b);
  const double per = (double)l->pipeline.w / (double)(b - a);
  for (int r = 0; r < pp->nrows; r++)
    fill(px, pitch, l, l->pipeline.x, l->pipeline.y + r * l->pipe_row_h, l->pipeline.w, l->pipe_row_h - 1, 0xff202020u);
  for (size_t i = 0; i < pp->nspans; i++) {
    const tpu_viz_span *sp = &pp->spans[i];
    if (sp->b <= a || sp->a >= b) continue;
    const uint64_t s0 = sp->a > a ? sp->a : a, s1 = sp->b < b ? sp->b : b;
    int x0 = (int)((double)(s0 - a) * per), x1 = (int)((double)(s1 - a) * per);
    if (x1 <= x0) x1 = x0 + 1;
    if (x1 > l->pipeline.w) x1 = l->pipeline.w;
    fill(px, pitch, l, l->pipeline.x + x0, l->pipeline.y + sp->row * l->pipe_row_h, x1 - x0, l->pipe_row_h - 1,
         tpu_viz_span_color(sp->kind));
  }
}

void tpu_viz_render(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  fill(px, pitch, l, 0, 0, l->width, l->height, TPU_VIZ_COLOR_BG);
  fill(px, pitch, l, 0, 0, l->width, l->header.h, 0xff000000u);
  draw_cells(v, l, px, pitch);
  draw_pipeline(v, l, px, pitch);
  draw_timeline(v, l, px, pitch);
  draw_legend(l, px, pitch);
  draw_arrows(v, l, px, pitch);
}
/* }================================================================== */
