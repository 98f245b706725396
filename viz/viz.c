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

static const char *const CAT_NAMES[TPU_VIZ_NCAT] = {
  [TPU_VIZ_MXU_BUSY] = "mxu_busy", [TPU_VIZ_VPU_BUSY] = "vpu_busy", [TPU_VIZ_INFEED_WAIT] = "infeed_wait",
  [TPU_VIZ_MEMORY_WAIT] = "memory_wait", [TPU_VIZ_COLLECTIVE_WAIT] = "collective_wait", [TPU_VIZ_IDLE] = "idle" };
static const uint32_t CAT_COLORS[TPU_VIZ_NCAT] = {
  [TPU_VIZ_MXU_BUSY] = 0xff2ca02cu, [TPU_VIZ_VPU_BUSY] = 0xff1f77b4u, [TPU_VIZ_INFEED_WAIT] = 0xffd62728u,
  [TPU_VIZ_MEMORY_WAIT] = 0xffff7f0eu, [TPU_VIZ_COLLECTIVE_WAIT] = 0xff9467bdu, [TPU_VIZ_IDLE] = 0xff505050u };
static const char *const UNIT_NAMES[TPU_VIZ_NUNIT] = { "MXU", "VPU", "DMA", "ICI" };

const char *tpu_viz_cat_name(tpu_viz_cat c) { return (unsigned)c < TPU_VIZ_NCAT ? CAT_NAMES[c] : "?"; }
uint32_t tpu_viz_cat_color(tpu_viz_cat c) { return (unsigned)c < TPU_VIZ_NCAT ? CAT_COLORS[c] : 0xff000000u; }
const char *tpu_viz_unit_name(tpu_viz_unit u) { return (unsigned)u < TPU_VIZ_NUNIT ? UNIT_NAMES[u] : "?"; }

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

/* One N(0,1) sample of base.h's stream: the inputs of `tpusim matmul --seed S`. */
static float normal(uint64_t *s) {
  float x;
  tpu_normal_fill(s, &x, 1);
  return x;
}

/* Partial products (part of A, part of B), smallest first, from
** tpu_precision_pass(): the walk of mxu/mxu_gemm.c, so the tiles are the
** ones `tpusim matmul` runs. */
typedef struct pass { int a, b; } pass;
static int parts_of(tpu_precision p) { return p == TPU_PREC_BF16X6 ? 3 : p == TPU_PREC_BF16X3 ? 2 : 1; }

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
tpu_viz_cat tpu_viz_core_cat_at(const tpu_viz *v, int core, uint64_t c) {
  const viz_core *vc = &v->core[core];
  if (!vc->nseg || c < vc->seg[0].at || c >= vc->end) return TPU_VIZ_IDLE;
  return (tpu_viz_cat)vc->seg[seg_index(vc, c)].core;
}
tpu_viz_cat tpu_viz_unit_cat_at(const tpu_viz *v, int core, tpu_viz_unit u, uint64_t c) {
  const viz_core *vc = &v->core[core];
  if (!vc->nseg || c < vc->seg[0].at || c >= vc->end) return TPU_VIZ_IDLE;
  return (tpu_viz_cat)vc->seg[seg_index(vc, c)].unit[u];
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

void tpu_viz_totals(const tpu_viz *v, int core, uint64_t out[TPU_VIZ_NCAT]) {
  memcpy(out, v->core[core].totals, sizeof v->core[core].totals);
}

static void compute_totals(tpu_viz *v) {
  for (int p = 0; p < v->ncores; p++) {
    viz_core *vc = &v->core[p];
    memset(vc->totals, 0, sizeof vc->totals);
    uint64_t covered = 0;
    for (size_t i = 0; i < vc->nseg; i++) {
      uint64_t b = i + 1 < vc->nseg ? vc->seg[i + 1].at : vc->end;
      vc->totals[vc->seg[i].core] += b - vc->seg[i].at;
      covered += b - vc->seg[i].at;
    }
    vc->totals[TPU_VIZ_IDLE] += v->total - covered;
  }
}
/* }================================================================== */

/* {==================================================================
** Laying a program's run out (the engine's times)
** ================================================================== */
typedef struct pev { uint64_t t; int8_t cat, d; } pev;
static int pev_cmp(const void *a, const void *b) {
  const pev *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* The stall category whose interval an op of this kind fills (as
** sim/stats.c counts it). */
static int cat_of_kind(tpu_sim_kind k) {
  switch (k) {
  case TPU_SIM_MATMUL: return TPU_VIZ_MXU_BUSY;
  case TPU_SIM_VPU: return TPU_VIZ_VPU_BUSY;
  case TPU_SIM_INFEED: return TPU_VIZ_INFEED_WAIT;
  case TPU_SIM_DMA: return TPU_VIZ_MEMORY_WAIT;
  case TPU_SIM_COLLECTIVE: return TPU_VIZ_COLLECTIVE_WAIT;
  }
  return TPU_VIZ_IDLE;
}

/* The timeline row of an op's unit; -1 for the infeed (no row of its own). */
static int unit_of_kind(tpu_sim_kind k) {
  return k == TPU_SIM_MATMUL ? TPU_VIZ_UNIT_MXU : k == TPU_SIM_VPU ? TPU_VIZ_UNIT_VPU
       : k == TPU_SIM_DMA ? TPU_VIZ_UNIT_DMA : k == TPU_SIM_COLLECTIVE ? TPU_VIZ_UNIT_ICI : -1;
}

/* Core p's segments, infeed queue and array-0 tiles from the run. Tiles'
** value pointers are left as offsets (act, w, out set by place_tiles). */
static tpu_status build_prog_core(tpu_viz *v, int p, const tpu_sim_program *prog, const tpu_sim_result *res,
                                  int *max_m, int *max_k) {
  viz_core *vc = &v->core[p];
  const int nops = tpu_sim_program_ops(prog, p);
  const int rows = v->rows, cols = v->cols, mx = v->chip.mxus_per_core;
  vc->end = v->total;
  /* infeed queue */
  const uint64_t *ready;
  vc->ninf = tpu_sim_program_infeed(prog, p, &ready);
  if (vc->ninf > 0) {
    if (!(vc->inf_ready = tpu_malloc((size_t)vc->ninf * sizeof *vc->inf_ready))) return TPU_ERR_NOMEM;
    memcpy(vc->inf_ready, ready, (size_t)vc->ninf * sizeof *ready);
  }
  /* count what to allocate: events, matmul ops, array-0 tiles */
  size_t nmm = 0, nt0 = 0, ninf_ops = 0, nunit[TPU_VIZ_NUNIT] = { 0 };
  for (int i = 0; i < nops; i++) {
    tpu_sim_op o;
    tpu_sim_program_op(prog, p, i, &o);
    if (o.kind == TPU_SIM_INFEED) ninf_ops++;
    const int un = unit_of_kind(o.kind);
    if (un >= 0) nunit[un]++;
    if (o.kind != TPU_SIM_MATMUL) continue;
    int64_t dr, dc;
    tpu_sim_buffer_shape(prog, p, o.dst, &dr, &dc);
    int64_t ar, ac;
    tpu_sim_buffer_shape(prog, p, o.a, &ar, &ac);
    const int64_t K = o.trans_a ? ar : ac, ntn = (dc + cols - 1) / cols, ntk = (K + rows - 1) / rows;
    nmm++;
    nt0 += (size_t)((ntn + mx - 1) / mx * ntk * tpu_precision_passes(o.precision));
  }
  for (int u = 0; u < TPU_VIZ_NUNIT; u++)
    if (!(vc->opiv[u] = tpu_malloc((nunit[u] + 1) * sizeof *vc->opiv[u]))) return TPU_ERR_NOMEM;
  pev *evs = tpu_malloc(((size_t)nops * 2 + 1) * sizeof *evs);
  vc->inf_deq = tpu_malloc((ninf_ops + 1) * sizeof *vc->inf_deq);
  vc->opname = tpu_calloc(nmm + 1, sizeof *vc->opname);
  vc->tiles = tpu_malloc((nt0 + 1) * sizeof *vc->tiles);
  vc->times = tpu_malloc((nt0 + 1) * sizeof *vc->times);
  vc->tsrc = tpu_malloc((nt0 + 1) * sizeof *vc->tsrc);
  if (!evs || !vc->inf_deq || !vc->opname || !vc->tiles || !vc->times || !vc->tsrc) goto nomem;
  tpu_mxu_sched sched[8];
  for (int a = 0; a < mx; a++) tpu_mxu_sched_init(&sched[a], &v->chip.mxu);
  size_t ne = 0;
  for (int i = 0; i < nops; i++) {
    tpu_sim_op o;
    tpu_sim_program_op(prog, p, i, &o);
    uint64_t a, b;
    tpu_sim_result_op_times(res, p, i, &a, &b);
    const uint64_t start = a;
    if (o.kind == TPU_SIM_MATMUL) a = tpu_sim_result_op_busy(res, p, i);
    if (o.kind == TPU_SIM_INFEED) vc->inf_deq[vc->ndeq++] = b;
    if (b > a) {
      const int8_t cat = (int8_t)cat_of_kind(o.kind);
      evs[ne++] = (pev){ a, cat, 1 };
      evs[ne++] = (pev){ b, cat, -1 };
    }
    char gname[96];
    if (o.kind == TPU_SIM_MATMUL && !v->prog) {  /* tpu_sim_gemm_program's j-th matmul: block (mb, nb, kb) */
      const long nb_ = v->gemm_nb, kb_ = v->gemm_kb, j = vc->nopname;
      snprintf(gname, sizeof gname, "C_%ld_%ld += A_%ld_%ld . B_%ld_%ld", j / (nb_ * kb_), j / kb_ % nb_,
               j / (nb_ * kb_), j % kb_, j % kb_, j / kb_ % nb_);
      o.name = gname;
    }
    const int unit = unit_of_kind(o.kind);
    if (unit >= 0) {
      char *nm = tpu_strdup(o.name ? o.name : tpu_sim_kind_name(o.kind));
      if (!nm) goto nomem;
      vc->opiv[unit][vc->nopiv[unit]++] = (viz_opiv){ a, b, nm };
    }
    if (o.kind != TPU_SIM_MATMUL) continue;
    /* the engine's tiles of this op (sim/engine.c), held back to its start */
    const int opi = vc->nopname;
    if (!(vc->opname[vc->nopname++] = tpu_strdup(o.name ? o.name : "matmul"))) goto nomem;
    int64_t dr, dc, ar, ac;
    tpu_sim_buffer_shape(prog, p, o.dst, &dr, &dc);
    tpu_sim_buffer_shape(prog, p, o.a, &ar, &ac);
    const int M = (int)dr, N = (int)dc, K = (int)(o.trans_a ? ar : ac);
    const int passes = tpu_precision_passes(o.precision);
    for (int n0 = 0, nt = 0; n0 < N; n0 += cols, nt++) {
      const int nn = N - n0 < cols ? N - n0 : cols;
      for (int ps = 0; ps < passes; ps++)
        for (int k0 = 0; k0 < K; k0 += rows) {
          const int kk = K - k0 < rows ? K - k0 : rows;
          tpu_mxu_tile_times tt;
          tpu_mxu_sched_tile(&sched[nt % mx], M, kk, nn, start, &tt);
          if (nt % mx) continue;
          vc->tiles[vc->ntiles] = (tpu_mxu_tile){ .m = M, .k = kk, .n = nn, .lda = rows, .ldw = cols, .ldo = cols,
                                                  .accumulate = o.accumulate || k0 > 0 || ps > 0, .earliest = start };
          vc->times[vc->ntiles] = tt;
          vc->tsrc[vc->ntiles++] = (viz_tsrc){ opi, k0, n0, ps };
          if (M > *max_m) *max_m = M;
          if (kk > *max_k) *max_k = kk;
        }
    }
  }
  qsort(evs, ne, sizeof *evs, pev_cmp);
  vc->seg = tpu_malloc((ne + 1) * sizeof *vc->seg);
  if (!vc->seg) goto nomem;
  int cnt[TPU_VIZ_NCAT] = { 0 };
  for (size_t i = 0; i < ne;) {
    const uint64_t t = evs[i].t;
    while (i < ne && evs[i].t == t) { cnt[evs[i].cat] += evs[i].d; i++; }
    viz_seg sg = { .at = t, .core = TPU_VIZ_IDLE };
    for (int c = 0; c < TPU_VIZ_IDLE; c++) if (cnt[c] > 0) { sg.core = (uint8_t)c; break; }   /* engine priority */
    sg.unit[TPU_VIZ_UNIT_MXU] = cnt[TPU_VIZ_MXU_BUSY] > 0 ? TPU_VIZ_MXU_BUSY : TPU_VIZ_IDLE;
    sg.unit[TPU_VIZ_UNIT_VPU] = cnt[TPU_VIZ_VPU_BUSY] > 0 ? TPU_VIZ_VPU_BUSY : TPU_VIZ_IDLE;
    sg.unit[TPU_VIZ_UNIT_DMA] = cnt[TPU_VIZ_MEMORY_WAIT] > 0 ? TPU_VIZ_MEMORY_WAIT : TPU_VIZ_IDLE;
    sg.unit[TPU_VIZ_UNIT_ICI] = cnt[TPU_VIZ_COLLECTIVE_WAIT] > 0 ? TPU_VIZ_COLLECTIVE_WAIT : TPU_VIZ_IDLE;
    if (t >= v->total) break;
    if (vc->nseg && !memcmp(&vc->seg[vc->nseg - 1].core, &sg.core, 1 + TPU_VIZ_NUNIT)) continue;
    vc->seg[vc->nseg++] = sg;
  }
  tpu_free(evs);
  /* the largest infeed occupancy: it only rises at a ready cycle */
  for (int64_t b = 0; b < vc->ninf; b++) {
    int q = tpu_viz_infeed_at(v, p, vc->inf_ready[b]);
    if (q > vc->inf_max) vc->inf_max = q;
  }
  return TPU_OK;
nomem:
  tpu_free(evs);
  return TPU_ERR_NOMEM;
}

/* Runs prog on the engine and lays the run out on v's cores (v->chip,
** rows, cols, ncores set). err is set on failure. */
static tpu_status run_program(tpu_viz *v, tpu_sim_program *prog, int *max_m, int *max_k, char *err, size_t errcap) {
  tpu_sim_options opt = { .level = TPU_FIDELITY_TIMING, .threads = 0 };   /* results do not depend on it */
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
  if (st == TPU_OK) compute_totals(v);
  return st;
}

/* A session with the chip set and the cell views allocated, or NULL. */
static tpu_viz *new_session(const tpu_chip_config *chip) {
  tpu_viz *v = tpu_calloc(1, sizeof *v);
  if (!v) return NULL;
  v->chip = *chip;
  v->rows = chip->mxu.rows; v->cols = chip->mxu.cols; v->ncores = chip->cores;
  v->sel = -1;
  const size_t cells = (size_t)v->rows * (size_t)v->cols;
  v->state = tpu_calloc(cells, 1);
  v->weight = tpu_calloc(cells, sizeof(float));
  v->act = tpu_calloc(cells, sizeof(float));
  v->psum = tpu_calloc(cells, sizeof(float));
  if (!v->state || !v->weight || !v->act || !v->psum) { tpu_viz_destroy(v); return NULL; }
  return v;
}

tpu_status tpu_viz_create_program(const tpu_chip_config *chip, tpu_sim_program *prog, const char *title,
                                  uint64_t seed, tpu_viz **out, char *err, size_t errcap) {
  *out = NULL;
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
  for (size_t i = 0; i < na; i++) { v->A[i] = tpu_bf16_round(normal(&sd)); amax = fmaxf(amax, fabsf(v->A[i])); }
  for (size_t i = 0; i < nw; i++) v->B[i] = tpu_bf16_round(normal(&sd));
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
  tpu_sim_program *prog = NULL;
  tpu_viz *v = new_session(chip);
  tpu_status st = TPU_ERR_NOMEM;
  if (!v) goto fail;
  v->w = *w;
  snprintf(v->title, sizeof v->title, "GEMM %d x %d x %d", w->m, w->n, w->k);
  const size_t mk = (size_t)w->m * (size_t)w->k, kn = (size_t)w->k * (size_t)w->n;
  const int parts = parts_of(w->precision);
  v->A = tpu_malloc(mk * (size_t)parts * sizeof(float));
  v->B = tpu_malloc(kn * (size_t)parts * sizeof(float));
  v->C = tpu_calloc((size_t)w->m * (size_t)w->n, sizeof(float));
  if (!v->A || !v->B || !v->C) goto fail;
  uint64_t s = w->seed;
  float amax = 0;
  /* the inputs of `tpusim matmul --seed S`, split into bf16 parts as mxu_gemm.c does */
  for (size_t i = 0; i < mk + kn; i++) {
    float *dst = i < mk ? v->A + i : v->B + (i - mk);
    const size_t stride = i < mk ? mk : kn;
    float rest = normal(&s);
    for (int p = 0; p < parts; p++) {
      float part = tpu_bf16_round(rest);
      dst[(size_t)p * stride] = part;
      rest = isfinite(part) ? rest - part : 0.0f;
    }
    if (i < mk) amax = fmaxf(amax, fabsf(dst[0]));
  }
  v->act_scale = amax > 0 ? amax : 1;
  /* partial sums of N(0,1) products grow like sqrt(k): shade by 2 sigma */
  int kk = w->k < v->rows ? w->k : v->rows;
  v->psum_scale = 2.0f * sqrtf((float)kk);
  /* the program tpusim matmul --cores runs, on every core of the chip */
  if ((st = tpu_sim_gemm_program(chip, chip->cores, w->m, w->n, w->k, w->precision, NULL, NULL, &prog, NULL,
                                 err, errcap)) != TPU_OK) goto fail;
  const int64_t T = tpu_sim_gemm_block(chip);
  v->gemm_block = (long)T;
  v->gemm_nb = (long)((w->n + T - 1) / T);
  v->gemm_kb = (long)((w->k + T - 1) / T);
  int max_m = 1, max_k = 1;
  if ((st = run_program(v, prog, &max_m, &max_k, err, errcap)) != TPU_OK) goto fail;
  tpu_sim_program_destroy(prog);
  prog = NULL;
  /* each array-0 tile reads its block of the real operands (the pass's bf16 parts) */
  pass passes[6];
  for (int i_ = 0; i_ < tpu_precision_passes(w->precision); i_++)
    tpu_precision_pass(w->precision, i_, &passes[i_].a, &passes[i_].b);
  for (int p = 0; p < v->ncores; p++) {
    viz_core *vc = &v->core[p];
    vc->m0 = (int)((int64_t)w->m * p / v->ncores);
    vc->mrows = (int)((int64_t)w->m * (p + 1) / v->ncores) - vc->m0;
    for (size_t j = 0; j < vc->ntiles; j++) {
      const viz_tsrc *ts = &vc->tsrc[j];
      const long mb = ts->op / (v->gemm_nb * v->gemm_kb), nb = ts->op / v->gemm_kb % v->gemm_nb,
                 kb = ts->op % v->gemm_kb;
      const size_t row = (size_t)vc->m0 + (size_t)(mb * T), k0 = (size_t)(kb * T) + (size_t)ts->k0,
                   n0 = (size_t)(nb * T) + (size_t)ts->n0;
      tpu_mxu_tile *t = &vc->tiles[j];
      t->act = v->A + (size_t)passes[ts->pass].a * mk + row * (size_t)w->k + k0; t->lda = w->k;
      t->w = v->B + (size_t)passes[ts->pass].b * kn + k0 * (size_t)w->n + n0; t->ldw = w->n;
      t->out = v->C + row * (size_t)w->n + n0; t->ldo = w->n;
    }
  }
  if ((st = tpu_viz_select_core(v, 0)) != TPU_OK) goto fail;
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
  for (int p = 0; p < TPU_MAX_CORES; p++) {
    viz_core *vc = &v->core[p];
    tpu_free(vc->seg); tpu_free(vc->tiles); tpu_free(vc->times); tpu_free(vc->tsrc);
    for (int i = 0; vc->opname && i < vc->nopname; i++) tpu_free(vc->opname[i]);
    tpu_free(vc->opname); tpu_free(vc->inf_ready); tpu_free(vc->inf_deq);
    for (int u = 0; u < TPU_VIZ_NUNIT; u++) {
      for (size_t i = 0; i < vc->nopiv[u]; i++) tpu_free(vc->opiv[u][i].name);
      tpu_free(vc->opiv[u]);
    }
  }
  tpu_mxu_destroy(v->pe);
  tpu_free(v->A); tpu_free(v->B); tpu_free(v->C);
  tpu_free(v->state); tpu_free(v->weight); tpu_free(v->act); tpu_free(v->psum);
  tpu_free(v->tl_cache);
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
  tpu_mxu_view view = { .state = v->state, .weight = v->weight, .act = v->act, .psum = v->psum };
  if (v->pe && v->ticks > 0) { tpu_mxu_view_cells(v->pe, &view); return; }
  size_t n = (size_t)v->rows * (size_t)v->cols;
  memset(v->state, 0, n);
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
** Layout
** ================================================================== */
void tpu_viz_layout_of(const tpu_viz *v, int width, int height, tpu_viz_layout *l) {
  memset(l, 0, sizeof *l);
  l->width = width; l->height = height;
  l->header = (tpu_viz_rect){ 0, 0, width, 28 };
  const int lw = width / 2, acc_h = 40, top = 40;
  l->queue_cols = v->rows < 16 ? v->rows : 16;
  int cw = (lw - 24) / (v->cols + l->queue_cols), chh = (height - top - acc_h - 30) / v->rows;
  l->cell = cw < chh ? cw : chh;
  if (l->cell < 1) l->cell = 1;
  l->queue = (tpu_viz_rect){ 10, top, l->queue_cols * l->cell, v->rows * l->cell };
  l->array = (tpu_viz_rect){ 10 + l->queue.w + 4, top, v->cols * l->cell, v->rows * l->cell };
  l->acc = (tpu_viz_rect){ l->array.x, top + l->array.h + 6, l->array.w, acc_h };
  const int tx = lw + 110;
  const int avail = height * 55 / 100;
  l->row_h = (avail / v->ncores - 4) / 5;
  if (l->row_h > 12) l->row_h = 12;
  if (l->row_h < 2) l->row_h = 2;
  l->strip_h = l->row_h;
  l->core_h = l->strip_h + TPU_VIZ_NUNIT * l->row_h + 4;
  l->timeline = (tpu_viz_rect){ tx, top, width - tx - 12, v->ncores * l->core_h };
  l->infeed = (tpu_viz_rect){ tx, l->timeline.y + l->timeline.h + 10, l->timeline.w, 30 };
  l->legend = (tpu_viz_rect){ lw + 10, l->infeed.y + l->infeed.h + 12, width - lw - 22, 7 * 17 };
  l->info = (tpu_viz_rect){ lw + 10, l->legend.y + l->legend.h + 8, width - lw - 22,
                            height - (l->legend.y + l->legend.h + 8) };
}

int tpu_viz_core_y(const tpu_viz_layout *l, int core) { return l->timeline.y + core * l->core_h; }

uint64_t tpu_viz_cycle_at_x(const tpu_viz *v, const tpu_viz_layout *l, int x) {
  int px = x - l->timeline.x;
  if (px < 0) px = 0;
  if (px >= l->timeline.w) px = l->timeline.w - 1;
  uint64_t c = (uint64_t)((double)px * (double)v->total / (double)l->timeline.w);
  return c < v->total ? c : v->total - 1;
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

static void draw_cells(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const int cell = l->cell, inner = cell >= 6 ? cell - 1 : cell;
  const float scale = tpu_viz_shade_scale(v);
  const float *val = v->shade_psum ? v->psum : v->act;
  for (int r = 0; r < v->rows; r++) {
    const int y = l->array.y + r * cell;
    if (y >= l->height) break;
    for (int c = 0; c < v->cols; c++) {
      const size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
      uint32_t col = v->state[x] == TPU_MXU_CELL_COMPUTING ? tpu_viz_value_color(val[x], scale)
                   : v->state[x] == TPU_MXU_CELL_LOADING ? TPU_VIZ_COLOR_LOADING : TPU_VIZ_COLOR_IDLE;
      fill(px, pitch, l, l->array.x + c * cell, y, inner, inner, col);
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
  if (v->tl_cache && v->tl_w == w && v->tl_total == v->total) return;
  tpu_free(v->tl_cache);
  v->tl_cache = tpu_malloc((size_t)w * (size_t)v->ncores * (size_t)per);
  v->tl_w = w; v->tl_total = v->total;
  if (!v->tl_cache) return;                      /* drawn without the cache */
  for (int p = 0; p < v->ncores; p++)
    for (int x = 0; x < w; x++) {
      uint64_t c = tpu_viz_cycle_at_x(v, l, l->timeline.x + x);
      uint8_t *o = v->tl_cache + ((size_t)p * (size_t)w + (size_t)x) * (size_t)per;
      o[0] = (uint8_t)tpu_viz_core_cat_at(v, p, c);
      for (int u = 0; u < TPU_VIZ_NUNIT; u++) o[1 + u] = (uint8_t)tpu_viz_unit_cat_at(v, p, (tpu_viz_unit)u, c);
    }
}

static void draw_timeline(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  const int w = l->timeline.w, per = 1 + TPU_VIZ_NUNIT;
  build_tl_cache(v, l);
  for (int p = 0; p < v->ncores; p++) {
    const int y0 = tpu_viz_core_y(l, p);
    if (p == v->sel) fill(px, pitch, l, l->timeline.x - 106, y0, 4, l->core_h - 4, 0xffffffffu);
    for (int x = 0; x < w; x++) {
      uint8_t cats[1 + TPU_VIZ_NUNIT];
      if (v->tl_cache) memcpy(cats, v->tl_cache + ((size_t)p * (size_t)w + (size_t)x) * (size_t)per, (size_t)per);
      else {
        uint64_t c = tpu_viz_cycle_at_x(v, l, l->timeline.x + x);
        cats[0] = (uint8_t)tpu_viz_core_cat_at(v, p, c);
        for (int u = 0; u < TPU_VIZ_NUNIT; u++) cats[1 + u] = (uint8_t)tpu_viz_unit_cat_at(v, p, (tpu_viz_unit)u, c);
      }
      fill(px, pitch, l, l->timeline.x + x, y0, 1, l->strip_h, tpu_viz_cat_color(cats[0]));
      for (int u = 0; u < TPU_VIZ_NUNIT; u++) {
        uint32_t col = cats[1 + u] == TPU_VIZ_IDLE ? 0xff262626u : tpu_viz_cat_color(cats[1 + u]);
        fill(px, pitch, l, l->timeline.x + x, y0 + l->strip_h + u * l->row_h, 1, l->row_h - 1, col);
      }
    }
  }
  /* infeed occupancy (batches queued at the selected core), full height = the run's largest */
  fill(px, pitch, l, l->infeed.x, l->infeed.y, l->infeed.w, l->infeed.h, 0xff202020u);
  const int qmax = tpu_viz_infeed_max(v, v->sel);
  for (int x = 0; qmax > 0 && x < l->infeed.w; x++) {
    int occ = tpu_viz_infeed_at(v, v->sel, tpu_viz_cycle_at_x(v, l, l->timeline.x + x));
    int h = (int)((int64_t)occ * l->infeed.h / qmax);
    if (h) fill(px, pitch, l, l->infeed.x + x, l->infeed.y + l->infeed.h - h, 1, h, tpu_viz_cat_color(TPU_VIZ_INFEED_WAIT));
  }
  /* a tick where each batch becomes ready (so an always-empty queue still shows its arrivals) */
  const viz_core *sc = &v->core[v->sel];
  for (int64_t b = 0; b < sc->ninf; b++) {
    if (sc->inf_ready[b] >= v->total) break;
    int x = l->infeed.x + (int)((double)sc->inf_ready[b] * (double)w / (double)v->total);
    fill(px, pitch, l, x, l->infeed.y, 1, 4, 0xffc0c0c0u);
  }
  /* cursor at the shown cycle */
  int cx = l->timeline.x + (int)((double)v->shown * (double)w / (double)v->total);
  fill(px, pitch, l, cx, l->timeline.y - 4, 1, l->infeed.y + l->infeed.h - l->timeline.y + 4, 0xffffffffu);
  /* legend swatches (the text is drawn by the SDL layer) */
  for (int k = 0; k < TPU_VIZ_NCAT; k++)
    fill(px, pitch, l, l->legend.x, l->legend.y + 17 + k * 17 + 3, 12, 11, tpu_viz_cat_color((tpu_viz_cat)k));
}

void tpu_viz_render(tpu_viz *v, const tpu_viz_layout *l, uint32_t *px, int pitch) {
  fill(px, pitch, l, 0, 0, l->width, l->height, TPU_VIZ_COLOR_BG);
  fill(px, pitch, l, 0, 0, l->width, l->header.h, 0xff000000u);
  draw_cells(v, l, px, pitch);
  draw_timeline(v, l, px, pitch);
}
/* }================================================================== */
