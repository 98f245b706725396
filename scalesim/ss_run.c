/*
** ss_run.c -- a network layer by layer on one array (scalesim.h, The runs):
** SCALE-Sim's compute model and, in its CALC bandwidth mode, its memory
** side (TPU_SS_COMPAT), or tpusim's MXU at the timing level in the same
** dataflow (TPU_SS_MXU); and the name of the run's report directory.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scalesim/scalesim.h"

static tpu_status fail(tpu_status st, char *err, size_t errcap, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static tpu_status fail(tpu_status st, char *err, size_t errcap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errcap, fmt, ap);
  va_end(ap);
  return st;
}

/* SCALE-Sim's memory side of one layer (compat mode, CALC bandwidth): its
** DRAM traffic, and the stalls its OFMAP buffer adds to the cycles and so
** to the figures divided by them. */
static tpu_status run_mem(const tpu_ss_config *cfg, const char *cfg_path, const char *tp_path, const tpu_ss_layer *ly,
                          tpu_ss_result *r, char *err, size_t errcap) {
  const tpu_ss_conv c = { (uint64_t)ly->ifmap_h, (uint64_t)ly->ifmap_w, (uint64_t)ly->filter_h,
    (uint64_t)ly->filter_w, (uint64_t)ly->channels, (uint64_t)ly->filters, (uint64_t)ly->stride_h,
    (uint64_t)ly->stride_w, ly->ofmap_h, ly->ofmap_w };
  const uint64_t words[3] = { (uint64_t)cfg->ifmap_kib * 1024, (uint64_t)cfg->filter_kib * 1024,
                              (uint64_t)cfg->ofmap_kib * 1024 };
  tpu_status st = tpu_ss_mem_layer((int)cfg->rows, (int)cfg->cols, cfg->dataflow, &c, words, false, &r->mem);
  if (st != TPU_OK) return fail(st, err, errcap, "layer '%s': %s", ly->name, tpu_status_str(st));
  if (r->mem.unsupported)
    return fail(TPU_ERR_INPUT, err, errcap, "layer '%s' of %s with %s: SCALE-Sim's memory model is not reproduced "
                "for %s", ly->name, tp_path, cfg_path, r->mem.unsupported);
  r->has_mem = true;
  r->cycles = r->s.total_cycles = r->mem.total_cycles;
  r->s.overall_util_pct = (double)(r->s.macs * 100) / ((double)r->cycles * (double)cfg->rows * (double)cfg->cols);
  return TPU_OK;
}

/* One layer: SCALE-Sim's figures, and outside compat mode tpusim's cycles
** and the utilization they give. */
static tpu_status run_layer(const tpu_ss_config *cfg, const char *cfg_path, const char *tp_path, bool compat,
                            const tpu_ss_layer *ly, tpu_ss_result *r, char *err, size_t errcap) {
  tpu_ss_compute_layer((int)cfg->rows, (int)cfg->cols, cfg->dataflow, ly->m, ly->n, ly->k, &r->s);
  r->cycles = r->s.total_cycles;
  if (compat) return cfg->user_bandwidth ? TPU_OK : run_mem(cfg, cfg_path, tp_path, ly, r, err, errcap);
  const uint64_t max = (uint64_t)TPU_MXU_MAX_GEMM_DIM;
  if (ly->m > max || ly->n > max || ly->k > max)
    return fail(TPU_ERR_INPUT, err, errcap, "%s: layer '%s' has M = %llu, N = %llu, K = %llu; tpusim's MXU takes at "
                "most %llu", tp_path, ly->name, (unsigned long long)ly->m, (unsigned long long)ly->n,
                (unsigned long long)ly->k, (unsigned long long)max);
  const tpu_mxu_config mc = { .rows = (int)cfg->rows, .cols = (int)cfg->cols, .double_buffer = true,
                              .dataflow = cfg->dataflow };
  tpu_mxu_gemm_result g;
  tpu_status st = tpu_mxu_gemm(&mc, 1, TPU_FIDELITY_TIMING, TPU_PREC_BF16, ly->m, ly->n, ly->k,
                               NULL, NULL, NULL, &g);
  if (st == TPU_ERR_RANGE)
    return fail(st, err, errcap, "%s:%d: layer '%s' (GEMM %llu x %llu x %llu): its %.4g multiply-adds or its cycles on "
                "a %dx%d array pass what tpusim's MXU counts (2^62)", tp_path, ly->line, ly->name,
                (unsigned long long)ly->m, (unsigned long long)ly->n, (unsigned long long)ly->k,
                (double)ly->m * (double)ly->n * (double)ly->k, (int)cfg->rows, (int)cfg->cols);
  if (st != TPU_OK) return fail(st, err, errcap, "%s:%d: layer '%s': %s", tp_path, ly->line, ly->name,
                                tpu_status_str(st));
  r->cycles = g.cycles;
  const double pes = (double)cfg->rows * (double)cfg->cols;
  r->s.overall_util_pct = (double)(r->s.macs * 100) / ((double)g.cycles * pes);
  r->s.compute_util_pct = r->s.overall_util_pct;   /* one array, no stalls: every cycle counts */
  return TPU_OK;
}

tpu_status tpu_ss_run_layers(const tpu_ss_config *cfg, const char *cfg_path, const tpu_ss_topology *tp,
                             const char *tp_path, bool compat, tpu_ss_result *rows, uint64_t *total, char *err,
                             size_t errcap) {
  tpu_status st = TPU_OK;
  *total = 0;
  for (int i = 0; i < tp->n && !st; i++) {
    st = run_layer(cfg, cfg_path, tp_path, compat, &tp->layers[i], &rows[i], err, errcap);
    *total += rows[i].cycles;
  }
  return st;
}

void tpu_ss_run_dir_name(const tpu_ss_config *cfg, tpu_mxu_dataflow file_df, tpu_ss_model model,
                         const tpu_chip_config *chip, char *out, size_t size) {
  const char *name = cfg->run_name;
  size_t n = strlen(name);
  if (cfg->dataflow != file_df) {
    const char *df = tpu_mxu_dataflow_name(file_df);
    if (n > 3 && name[n - 3] == '_' && !strcmp(name + n - 2, df)) n -= 3;
    snprintf(out, size, "%.*s_%s", (int)n, name, tpu_mxu_dataflow_name(cfg->dataflow));
  } else {
    snprintf(out, size, "%s", name);
  }
  n = strlen(out);
  if (model == TPU_SS_CHIP)
    snprintf(out + n, size - n, "_%s_%dcores", chip->name, chip->cores);
  else if (model == TPU_SS_MXU)
    snprintf(out + n, size - n, "_tpusim");
  for (char *c = out; *c; c++)     /* a chip's name may come from a file */
    if (*c == '/' || *c == '\\' || *c == ' ') *c = '_';
}
