/*
** matmul_cores.c -- `tpusim matmul --cores C`: one GEMM split across C cores
** along M, with the operands starting in HBM, run on the chip engine.
**
** The program is built by tpu_sim_gemm_program (sim/gemm.c, with the one
** GEMM lowering of sim.h, "The lowering"; tpusim viz shows the same one).
** Each core gets rows [i*M/C, (i+1)*M/C) of A and C and all of B. HBM holds
** the operands in blocks of the lowering's tiles, so every DMA moves one
** tile. Per core, for each result tile (mb, nb), for each k slice: DMA A's
** and B's tiles into one of two VMEM slots (double buffering: the next
** tile's DMA overlaps this tile's matmul; an operand small enough stays in
** VMEM, loaded once), matmul-accumulate into a C tile, whose DMA back to
** HBM is queued after the next tile's first loads. The report puts
** the run on the roofline: arithmetic intensity = 2MNK / HBM bytes the
** program moves, against the chip's ridge point (peak FLOP/s / HBM bytes/s);
** and it says which resource the simulation found bounding
** (tpu_sim_result_bound: transfers in flight plus weight_load, or mxu_busy).
** The chip is cut to C cores (chips of min(cores_per_chip, C) cores, the
** largest divisor of C that fits), so idle cores do not dilute the report.
*/
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "sim/sim.h"

#define CMD "matmul"

/* The run: the chip cut to the cores, the program, its result, and C
** gathered from every core's C tiles. */
typedef struct mc_run {
  tpu_chip_config chip;
  int cores;
  tpu_fidelity level;          /* tile or timing */
  tpu_sim_tiling t;            /* core 0's tiles (its block rows are the fewest) */
  float *A, *B, *C;            /* NULL at the timing level */
  tpu_sim_program *p;
  tpu_sim_result *res;
  double bytes;                /* HBM traffic of the program */
  tpu_sim_gemm_info info;      /* whole or extended (tpu_sim_gemm_run) */
  double max_abs, max_rel;
} mc_run;

static int run(const cli_matmul_opts *o, mc_run *r) {
  const bool values = r->level != TPU_FIDELITY_TIMING;
  if (values && (!cli_matmul_seeded(o->seed, o->m, o->n, o->k, &r->A, &r->B) ||  /* the one-core inputs */
                 !(r->C = tpu_malloc((size_t)(o->m * o->n) * sizeof *r->C))))
    return cli_runtime_error(CMD, "out of memory for %ld x %ld x %ld", o->m, o->n, o->k);
  char err[1024];
  tpu_sim_options opt = { .level = r->level, .threads = (int)o->threads, .trace = o->trace != NULL };
  tpu_status st = tpu_sim_gemm_run(&r->chip, r->cores, o->m, o->n, o->k, o->precision, r->A, r->B, &opt, 0, &r->p,
                                   &r->res, &r->info, err, sizeof err);
  /* a shape beyond what the engine can time is bad input, with its figure */
  if (st != TPU_OK) return cli_fail(CMD, st, "%s", err);
  r->bytes = r->info.hbm_bytes;
  if (o->trace && cli_sim_write_trace(r->res, o->trace))
    return cli_runtime_error(CMD, "--trace %s: cannot write: %s", o->trace, strerror(errno));
  return 0;
}

/* C from every core's C blocks (the lowering knows their names), then its
** error against the f64 reference. */
static int gather(const cli_matmul_opts *o, mc_run *r) {
  tpu_status st = tpu_sim_gemm_result(r->res, r->p, &r->chip, o->m, o->n, o->k, r->C);
  if (st) return cli_fail(CMD, st, "the result's C blocks are not in the run: %s", tpu_status_str(st));
  cli_matmul_error(o->m, o->n, o->k, r->A, r->B, r->C, &r->max_abs, &r->max_rel);
  return 0;
}

/* The roofline and what the simulation found. */
typedef struct mc_figures {
  tpu_chip_peaks pk;
  double time_s, flops, intensity, ridge, peak, attainable;
  tpu_sim_stalls s;
  bool mem_bound_sim;
  uint64_t memory_busy;        /* cycles with a transfer in flight, over the cores */
  const char *roof;            /* "memory" or "compute" */
} mc_figures;

static mc_figures figures(const cli_matmul_opts *o, const mc_run *r) {
  mc_figures f;
  tpu_chip_peaks_of(&r->chip, &f.pk);
  f.time_s = (double)tpu_sim_result_cycles(r->res) / f.pk.clock_hz;
  f.flops = 2.0 * (double)o->m * (double)o->n * (double)o->k;
  f.intensity = f.flops / r->bytes;
  f.ridge = f.pk.ridge_flops_per_byte;
  const int chips_used = r->cores / r->chip.cores_per_chip;
  f.peak = f.pk.bf16_flops_per_core * r->cores / tpu_precision_passes(o->precision);
  f.attainable = fmin(f.peak, f.intensity * f.pk.hbm_bytes_per_s_per_chip * chips_used);
  tpu_sim_result_stalls(r->res, -1, -1, &f.s);
  f.mem_bound_sim = !strcmp(tpu_sim_result_bound(r->res), "memory");
  f.memory_busy = tpu_sim_result_memory_busy(r->res, -1);
  f.roof = f.intensity < f.ridge ? "memory" : "compute";
  return f;
}

/* The --json report into *out; 0, or 1 after a message when out of memory. */
static int report_json(const cli_matmul_opts *o, const mc_run *r, json_t **out) {
  const mc_figures f = figures(o, r);
  const bool values = r->A != NULL;
  json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:I, s:s, s:s, s:I}", "chip", r->chip.name, "cores", r->cores,
                        "m", (json_int_t)o->m, "n", (json_int_t)o->n, "k", (json_int_t)o->k, "precision",
                        tpu_precision_name(o->precision), "level", tpu_fidelity_name(r->level), "block",
                        (json_int_t)r->t.mt);
  if (!j || cli_sim_report_json(j, r->res, &r->chip)) {
    json_decref(j);
    return cli_runtime_error(CMD, "out of memory");
  }
  json_object_set_new(j, "tiling", json_pack("{s:I, s:I, s:I, s:b, s:b}", "mt", (json_int_t)r->t.mt, "nt",
                                              (json_int_t)r->t.nt, "kt", (json_int_t)r->t.kt, "cache_a",
                                              r->t.cache_a, "cache_b", r->t.cache_b));
  json_object_set_new(j, "flops", cli_json_real(f.flops));
  json_object_set_new(j, "hbm_bytes", cli_json_real(r->bytes));
  json_object_set_new(j, "arithmetic_intensity", cli_json_real(f.intensity));
  json_object_set_new(j, "ridge_flops_per_byte", cli_json_real(f.ridge));
  json_object_set_new(j, "roofline_bound", json_string(f.roof));
  json_object_set_new(j, "bound", json_string(f.mem_bound_sim ? "memory" : "compute"));
  json_object_set_new(j, "attainable_flops_per_s", cli_json_real(f.attainable));
  json_object_set_new(j, "achieved_flops_per_s", cli_json_real(f.flops / f.time_s));
  json_object_set_new(j, "peak_flops_per_s", cli_json_real(f.peak));
  json_object_set_new(j, "max_abs_err", values ? cli_json_real(r->max_abs) : json_null());
  json_object_set_new(j, "max_rel_err", values ? cli_json_real(r->max_rel) : json_null());
  *out = j;
  return 0;
}

/* A sweep point's row (NULL: none): the engine's figures, no MXU counts. */
static void sweep_row(const cli_matmul_opts *o, const mc_run *r, tpu_sweep_row *row) {
  const mc_figures f = figures(o, r);
  const uint64_t cycles = tpu_sim_result_cycles(r->res);
  cli_matmul_row(row, &(cli_matmul_figures){ (int64_t)cycles, (double)cycles / (r->chip.clock_mhz * 1e6), NAN, NAN,
                                             f.flops / f.time_s, -1, -1, r->bytes,
                                             f.mem_bound_sim ? "memory" : "compute", r->A != NULL, r->max_abs,
                                             r->max_rel });
}

static int report_text(const cli_matmul_opts *o, const mc_run *r) {
  const mc_figures f = figures(o, r);
  printf("matmul %ld x %ld x %ld (M x N x K) split along M over %d core%s of %s, %s, level %s\n", o->m, o->n, o->k,
         r->cores, r->cores > 1 ? "s" : "", r->chip.name, tpu_precision_name(o->precision),
         tpu_fidelity_name(r->level));
  printf("  operands start in HBM, streamed through VMEM in tiles of %lld x %lld x %lld (M x N x K)%s%s, "
         "double-buffered\n", (long long)r->t.mt, (long long)r->t.nt, (long long)r->t.kt,
         r->t.cache_a ? "; A stays in VMEM" : "", r->t.cache_b ? "; B stays in VMEM" : "");
  if (r->info.rows_run)
    printf("  extended          run of %lld block rows per core (the fewest), its growth over %d block row%s "
           "added %llu times\n", (long long)r->info.rows_run, r->info.period, r->info.period > 1 ? "s" : "",
           (unsigned long long)r->info.periods);
  cli_sim_report_text(stdout, r->res, &r->chip, cli_sim_has_collective(r->p));   /* a GEMM split along M: none */
  printf("  HBM traffic       %.0f bytes\n", r->bytes);
  printf("  intensity         %.2f FLOP/byte vs ridge point %.2f FLOP/byte: %s-bound on the roofline\n",
         f.intensity, f.ridge, f.roof);
  printf("  attainable        %.3f TFLOP/s (peak %.3f); achieved %.3f TFLOP/s\n", f.attainable / 1e12,
         f.peak / 1e12, f.flops / f.time_s / 1e12);
  printf("  simulation        %s-bound (transfers in flight %llu + weight_load %llu vs mxu_busy %llu cycles over "
         "the cores)\n", f.mem_bound_sim ? "memory" : "compute", (unsigned long long)f.memory_busy,
         (unsigned long long)f.s.cycles[TPU_SIM_WEIGHT_LOAD], (unsigned long long)f.s.cycles[TPU_SIM_MXU_BUSY]);
  if (r->A) printf("  error vs f64 ref  max abs %.3g, max rel %.3g (normwise)\n", r->max_abs, r->max_rel);
  if (o->trace) printf("  trace             %s\n", o->trace);
  return 0;
}

int cli_matmul_cores(const tpu_chip_config *chip, const cli_matmul_opts *o, json_t **report, tpu_sweep_row *row) {
  if (o->cores > chip->cores)
    return cli_usage_error(CMD, "--cores: expected 1..%d (the cores of %s), got %ld", chip->cores, chip->name,
                           o->cores);
  mc_run r = { .chip = *chip, .cores = (int)o->cores, .level = o->level };
  cli_chip_cut(&r.chip, r.cores);
  int64_t m0, mi;
  tpu_sim_gemm_rows(o->m, r.cores, 0, &m0, &mi);
  r.t = tpu_sim_gemm_tiling(&r.chip, mi > 0 ? mi : 1, o->n, o->k);
  int rc = run(o, &r);
  if (!rc && r.A) rc = gather(o, &r);
  if (!rc) sweep_row(o, &r, row);
  if (!rc) rc = o->com.json ? report_json(o, &r, report) : report_text(o, &r);
  tpu_sim_result_destroy(r.res);
  tpu_sim_program_destroy(r.p);
  tpu_free(r.A); tpu_free(r.B); tpu_free(r.C);
  return rc;
}
