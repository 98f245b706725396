/*
** ss_chip.c -- a SCALE-Sim topology on the chip engine: every layer's GEMM
** (the reader's lowering, ss_read.c) built by tpu_sim_gemm_program,
** the builder `matmul --cores` uses, and run on the engine, layer after
** layer. `tpusim run --topology` reports it with the full stall table;
** `tpusim scalesim --chip` turns it into SCALE-Sim's figures
** (tpu_ss_chip_results, at the end of the file).
**
** What it models: each layer's operands start in HBM and its result goes
** back there; M is split over the cores; within a layer, blocks are double
** buffered and weight loads overlap the previous tile (the engine's model,
** docs/PROGRAMS.md). Not modelled: overlap between layers (a layer's first
** loads wait for the previous layer's last write-back, as if each layer
** were a separate program launch), the activation between layers (no VPU
** op), the layout change of an im2col lowering (the GEMM's A is taken as
** already laid out in HBM, SCALE-Sim's convention too).
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "scalesim/scalesim.h"

static void add_stalls(tpu_sim_stalls *to, const tpu_sim_stalls *s) {
  for (int k = 0; k < TPU_SIM_NSTALL; k++) to->cycles[k] += s->cycles[k];
}

/* The layer's HBM traffic by operand, from its program's ops: a DMA into
** a matmul's A tile reads the ifmap, into a B tile the filter, out of a C
** tile writes the ofmap (the GEMM program's buffers are f32: 4 bytes a
** value). Linear in the ops. false when out of memory. */
static bool traffic(const tpu_sim_program *p, int cores, double bytes[3]) {
  bytes[0] = bytes[1] = bytes[2] = 0;
  for (int c = 0; c < cores; c++) {
    const int n = tpu_sim_program_ops(p, c);
    int top = 0;                                  /* the largest handle an op names */
    tpu_sim_op op;
    for (int i = 0; i < n; i++)
      if (tpu_sim_program_op(p, c, i, &op)) {
        const int h[5] = { op.src, op.dst, op.a, op.b, top };
        for (int k = 0; k < 5; k++) top = h[k] > top ? h[k] : top;
      }
    signed char *role = tpu_calloc((size_t)top + 1, 1);   /* 1 A tile, 2 B tile, 3 C tile */
    if (!role) return false;
    for (int i = 0; i < n; i++)
      if (tpu_sim_program_op(p, c, i, &op) && op.kind == TPU_SIM_MATMUL) {
        role[op.a] = 1; role[op.b] = 2; role[op.dst] = 3;
      }
    for (int i = 0; i < n; i++) {
      if (!tpu_sim_program_op(p, c, i, &op) || op.kind != TPU_SIM_DMA) continue;
      const int which = role[op.src] == 3 ? 2 : role[op.dst] == 1 ? 0 : role[op.dst] == 2 ? 1 : -1;
      if (which >= 0) bytes[which] += 4.0 * (double)tpu_sim_buffer_elems(p, c, which == 2 ? op.src : op.dst);
    }
    tpu_free(role);
  }
  return true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One layer's program run; its figures into *ly and the totals of *r,
** its trace slices (as step 'i', from t0_us) into *tr when tracing. */
static tpu_status run_layer(const char *path, const tpu_ss_layer *L, int i, const tpu_chip_config *chip,
                            const tpu_sim_options *opt, tpu_text *tr, tpu_ss_chip_result *r, char *err,
                            size_t errcap) {
  tpu_ss_chip_layer *ly = &r->layers[i];
  char why[512];
  tpu_sim_program *p = NULL;
  tpu_sim_result *res = NULL;
  if (L->m > INT64_MAX || L->n > INT64_MAX || L->k > INT64_MAX) {
    snprintf(err, errcap, "%s:%d: layer '%s': a dimension beyond 2^63", path, L->line, L->name);
    return TPU_ERR_INPUT;
  }
  tpu_status st = tpu_sim_gemm_program(chip, chip->cores, (int64_t)L->m, (int64_t)L->n, (int64_t)L->k,
                                       TPU_PREC_BF16, NULL, NULL, &p, &ly->hbm_bytes, why, sizeof why);
  if (st != TPU_OK) {
    snprintf(err, errcap, "%s:%d: layer '%s' (GEMM %llu x %llu x %llu): %s", path, L->line, L->name,
             (unsigned long long)L->m, (unsigned long long)L->n, (unsigned long long)L->k, why);
    return st;
  }
  if ((st = tpu_sim_run(chip, p, opt, &res)) != TPU_OK) {
    snprintf(err, errcap, "%s:%d: layer '%s': %s", path, L->line, L->name, tpu_sim_program_error(p));
    tpu_sim_program_destroy(p);
    return st;
  }
  ly->cycles = tpu_sim_result_cycles(res);
  tpu_sim_result_stalls(res, -1, -1, &ly->stall);
  for (int c = 0; c < chip->cores; c++) {
    tpu_sim_result_stalls(res, c, -1, &ly->core[c]);
    add_stalls(&r->core[c], &ly->core[c]);
  }
  ly->memory_busy = tpu_sim_result_memory_busy(res, -1);
  if (!traffic(p, chip->cores, ly->hbm_operand_bytes)) st = TPU_ERR_NOMEM;
  ly->bound = tpu_sim_result_bound(res);
  if (tr && st == TPU_OK) st = tpu_sim_trace_steps_add(tr, res, i, (double)r->cycles / chip->clock_mhz);
  r->cycles += ly->cycles;
  add_stalls(&r->stall, &ly->stall);
  r->memory_busy += ly->memory_busy;
  r->hbm_bytes += ly->hbm_bytes;
  r->macs += (double)L->m * (double)L->n * (double)L->k;
  tpu_sim_result_destroy(res);
  tpu_sim_program_destroy(p);
  if (st != TPU_OK) snprintf(err, errcap, "out of memory");
  return st;
}

tpu_status tpu_ss_chip_run(const char *path, const tpu_ss_topology *tp, const tpu_chip_config *chip,
                           tpu_fidelity level, int threads, tpu_text *trace, tpu_ss_chip_result *out, char *err,
                           size_t errcap) {
  memset(out, 0, sizeof *out);
  if (!(out->layers = tpu_calloc((size_t)tp->n, sizeof *out->layers))) {
    snprintf(err, errcap, "out of memory");
    return TPU_ERR_NOMEM;
  }
  out->n = tp->n;
  const tpu_sim_options opt = { .level = level, .threads = threads, .trace = trace != NULL };
  if (trace) tpu_sim_trace_steps_begin(trace, chip->name, chip->cores);
  const double t0 = now_s();
  tpu_status st = TPU_OK;
  for (int i = 0; i < tp->n && !st; i++) st = run_layer(path, &tp->layers[i], i, chip, &opt, trace, out, err, errcap);
  out->wall_s = now_s() - t0;
  if (trace && !st) tpu_sim_trace_steps_end(trace);
  if (st) tpu_ss_chip_result_free(out);
  return st;
}

void tpu_ss_chip_result_free(tpu_ss_chip_result *r) {
  tpu_free(r->layers);
  memset(r, 0, sizeof *r);
}

const char *tpu_ss_chip_bound(const tpu_ss_chip_result *r) {
  return r->memory_busy + r->stall.cycles[TPU_SIM_WEIGHT_LOAD] > r->stall.cycles[TPU_SIM_MXU_BUSY] ? "memory"
                                                                                                      : "compute";
}

void tpu_ss_chip_results(const tpu_ss_config *cfg, const tpu_ss_topology *tp, const tpu_chip_config *chip,
                         const tpu_ss_chip_result *run, tpu_ss_result *rows) {
  const double pes = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core;
  for (int i = 0; i < tp->n; i++) {
    const tpu_ss_chip_layer *ly = &run->layers[i];
    uint64_t busy = 0;
    for (int k = 0; k < TPU_SIM_NSTALL; k++) busy += tpu_sim_stall_busy(k) ? ly->stall.cycles[k] : 0;
    tpu_ss_result *r = &rows[i];
    tpu_ss_compute_layer((int)cfg->rows, (int)cfg->cols, cfg->dataflow, tp->layers[i].m, tp->layers[i].n,
                         tp->layers[i].k, &r->s);
    r->cycles = ly->cycles;
    r->stall = ly->cycles - busy / (uint64_t)chip->cores;
    r->s.overall_util_pct = 100.0 * (double)r->s.macs / ((double)ly->cycles * pes * chip->cores);
    r->s.compute_util_pct = busy ? 100.0 * (double)r->s.macs / ((double)busy * pes) : 0;
  }
}
