/*
** ss_compute.c -- SCALE-Sim v2's compute model in closed form: fold
** counts, cycles, utilization and SRAM traffic of one layer on one array,
** for the ws, os and is dataflows (scalesim.h states the formulas). O(1) a
** layer: SCALE-Sim builds a demand matrix of one row per cycle per operand;
** only its shape matters for the stall-free cycle count, so it is computed,
** never built. tests/check_scalesim.c builds the demand matrices' shapes
** fold by fold (the PE-level view of each dataflow) and checks these
** figures.
*/
#include <string.h>

#include "scalesim/scalesim.h"

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Used PEs summed over the folds of one spatial dimension is that
** dimension's size (every element lands in exactly one fold), so the mean
** over the fold grid of used/(rows x cols) is sr sc / (rows cols folds). */
void tpu_ss_compute_layer(int rows, int cols, tpu_mxu_dataflow df, uint64_t M, uint64_t N, uint64_t K,
                          tpu_ss_compute *out) {
  const uint64_t R = (uint64_t)rows, C = (uint64_t)cols;
  memset(out, 0, sizeof *out);
  switch (df) {
  case TPU_MXU_OS: out->sr = M; out->sc = N; out->t = K; break;
  case TPU_MXU_IS: out->sr = K; out->sc = M; out->t = N; break;
  default:         out->sr = K; out->sc = N; out->t = M; break;
  }
  out->row_folds = ceil_div(out->sr, R);
  out->col_folds = ceil_div(out->sc, C);
  const uint64_t folds = out->row_folds * out->col_folds;
  /* os has no load phase: the operands of both sides stream in skewed */
  out->cycles_per_fold = (df == TPU_MXU_OS ? R : 2 * R) + C + out->t - 2;
  out->total_cycles = folds * out->cycles_per_fold - 1;
  out->macs = M * N * K;
  const double pes = (double)R * (double)C;
  out->overall_util_pct = (double)(out->macs * 100) / ((double)out->total_cycles * pes);
  out->mapping_eff_pct = (double)(out->sr * out->sc) / (pes * (double)folds) * 100.0;
  /* SCALE-Sim times a fold's utilization over its filter (ws), input (is)
  ** or output (os) demand matrix plus its skew: per_fold + cols - 1 rows for
  ** ws and is, per_fold for os */
  const uint64_t util_cycles = df == TPU_MXU_OS ? out->cycles_per_fold : out->cycles_per_fold + C - 1;
  out->compute_util_pct = (double)(out->sr * out->sc) * (double)out->t /
                          (pes * (double)util_cycles * (double)folds) * 100.0;
  /* traffic: the stationary operand once, the streamed ones once per fold
  ** of the other spatial dimension */
  switch (df) {
  case TPU_MXU_OS:
    out->ifmap_sram_reads = out->col_folds * K * M;
    out->filter_sram_reads = out->row_folds * K * N;
    /* SCALE-Sim v2 adds each fold's padded height + width to its OFMAP writes */
    out->ofmap_sram_writes = M * N + folds * (R + C);
    break;
  case TPU_MXU_IS:
    out->ifmap_sram_reads = K * M;
    out->filter_sram_reads = out->col_folds * K * N;
    out->ofmap_sram_writes = out->row_folds * M * N;
    break;
  default:
    out->ifmap_sram_reads = out->col_folds * M * K;
    out->filter_sram_reads = K * N;
    out->ofmap_sram_writes = out->row_folds * M * N;
    break;
  }
}
