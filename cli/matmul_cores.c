/*
** matmul_cores.c -- `tpusim matmul --cores C`: one GEMM split across C cores
** along M, with the operands starting in HBM, run on the chip engine.
**
** The program is built by tpu_sim_gemm_program (sim/gemm.c; tpusim viz shows
** the same one). Each core gets rows [i*M/C, (i+1)*M/C) of A and C and all of B. HBM holds
** the operands in a blocked layout (one buffer per T x T block, as a TPU
** compiler would lay them out), so every DMA moves one block. Per core:
**
**   for each block row mb, for each block column nb:
**     for each kb:  DMA A[mb][kb] and B[kb][nb] into one of two VMEM slots
**                   (double buffering: the next block's DMA overlaps this
**                   block's matmul), matmul-accumulate into a C tile
**     DMA the C tile back to HBM (C tiles alternate between two slots)
**
** T is the largest power of two whose worst-case working set (six T x T f32
** tiles, twice over for edge shapes) fits the core's VMEM. The report puts
** the run on the roofline: arithmetic intensity = 2MNK / HBM bytes the
** program moves, against the chip's ridge point (peak FLOP/s / HBM bytes/s);
** and it says which the simulation found dominant, memory_wait or mxu_busy.
** The chip is cut to C cores (chips of min(cores_per_chip, C) cores, the
** largest divisor of C that fits), so idle cores do not dilute the report.
*/
#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "sim/sim.h"

static long minl(long a, long b) { return a < b ? a : b; }

int cli_matmul_cores(const struct tpu_chip_config *chip_in, int cores, long M, long N, long K, int precision,
                    int level, long seed, int threads, bool json, const char *trace_path) {
  const char *cmd = "matmul";
  if (cores < 1 || cores > chip_in->cores)
    return cli_usage_error(cmd, "--cores: expected 1..%d (the cores of %s), got %d", chip_in->cores, chip_in->name, cores);
  tpu_chip_config chip = *chip_in;
  int cpc = chip.cores_per_chip < cores ? chip.cores_per_chip : cores;
  while (cores % cpc) cpc--;
  chip.cores = cores;
  chip.cores_per_chip = cpc;
  const tpu_precision prec = (tpu_precision)precision;
  tpu_fidelity lv = (tpu_fidelity)level;
  if (lv == TPU_FIDELITY_PE) lv = TPU_FIDELITY_TILE;
  const bool values = lv != TPU_FIDELITY_TIMING;
  const long T = (long)tpu_sim_gemm_block(&chip);

  float *A = NULL, *B = NULL, *Cm = NULL, *ref = NULL;
  tpu_sim_program *p = NULL;
  tpu_sim_result *res = NULL;
  json_t *o = NULL;
  int rc = 1;
  if (values) {
    A = tpu_malloc((size_t)(M * K) * sizeof *A);
    B = tpu_malloc((size_t)(K * N) * sizeof *B);
    Cm = tpu_malloc((size_t)(M * N) * sizeof *Cm);
    ref = tpu_malloc((size_t)(M * N) * sizeof *ref);
    if (!A || !B || !Cm || !ref) { rc = cli_runtime_error(cmd, "out of memory for %ld x %ld x %ld", M, N, K); goto out; }
    uint64_t r = (uint64_t)seed;   /* the same inputs as the one-core matmul */
    tpu_normal_fill(&r, A, (size_t)(M * K));
    tpu_normal_fill(&r, B, (size_t)(K * N));
  }
  double bytes = 0;
  char err[512];
  if (tpu_sim_gemm_program(&chip, cores, M, N, K, prec, A, B, &p, &bytes, err, sizeof err) != TPU_OK) {
    rc = cli_runtime_error(cmd, "%s", err);
    goto out;
  }
  tpu_sim_options opt = { .level = lv, .threads = threads, .trace = trace_path != NULL };
  tpu_status st = tpu_sim_run(&chip, p, &opt, &res);
  if (st != TPU_OK) {
    rc = st == TPU_ERR_NOMEM || st == TPU_ERR_RUNTIME ? cli_runtime_error(cmd, "%s", tpu_sim_program_error(p))
                                                      : cli_usage_error(cmd, "%s", tpu_sim_program_error(p));
    goto out;
  }
  if (trace_path && cli_sim_write_trace(res, trace_path)) {
    rc = cli_runtime_error(cmd, "--trace %s: cannot write: %s", trace_path, strerror(errno));
    goto out;
  }
  double max_abs = 0, max_ref = 0;
  if (values) {
    for (int c = 0; c < cores; c++) {
      const long m0 = M * c / cores, mi = M * (c + 1) / cores - m0;
      char name[64];
      for (long mb = 0; mb * T < mi; mb++)
        for (long nb = 0; nb * T < N; nb++) {
          snprintf(name, sizeof name, "C_%ld_%ld", mb, nb);
          const float *v = tpu_sim_result_buffer(res, c, tpu_sim_buffer_find(p, c, name));
          const long r = minl(T, mi - mb * T), w = minl(T, N - nb * T);
          for (long i = 0; i < r; i++) memcpy(Cm + (m0 + mb * T + i) * N + nb * T, v + i * w, (size_t)w * sizeof *v);
        }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N,
                0.0f, ref, (int)N);
    for (long i = 0; i < M * N; i++) {
      const double d = fabs((double)Cm[i] - (double)ref[i]);
      if (!(d <= max_abs)) max_abs = d;
      if (fabs((double)ref[i]) > max_ref) max_ref = fabs((double)ref[i]);
    }
  }
  tpu_chip_peaks pk;
  tpu_chip_peaks_of(&chip, &pk);
  const uint64_t cyc = tpu_sim_result_cycles(res);
  const double time_s = (double)cyc / pk.clock_hz, flops = 2.0 * (double)M * (double)N * (double)K;
  const double intensity = flops / bytes, ridge = pk.ridge_flops_per_byte;
  const int chips_used = cores / cpc;
  const double peak = pk.bf16_flops_per_core * cores / tpu_precision_passes(prec);
  const double attainable = fmin(peak, intensity * pk.hbm_bytes_per_s_per_chip * chips_used);
  tpu_sim_stalls s;
  tpu_sim_result_stalls(res, -1, -1, &s);
  const bool mem_bound_sim = s.cycles[TPU_SIM_MEMORY_WAIT] > s.cycles[TPU_SIM_MXU_BUSY];
  const char *roof = intensity < ridge ? "memory" : "compute";
  if (json) {
    o = json_pack("{s:s, s:i, s:I, s:I, s:I, s:s, s:s, s:I}", "chip", chip.name, "cores", cores, "m", (json_int_t)M,
                  "n", (json_int_t)N, "k", (json_int_t)K, "precision", tpu_precision_name(prec), "level",
                  tpu_fidelity_name(lv), "block", (json_int_t)T);
    if (!o || cli_sim_report_json(o, res, &chip)) { rc = cli_runtime_error(cmd, "out of memory"); goto out; }
    json_object_set_new(o, "flops", json_real(flops));
    json_object_set_new(o, "hbm_bytes", json_real(bytes));
    json_object_set_new(o, "arithmetic_intensity", json_real(intensity));
    json_object_set_new(o, "ridge_flops_per_byte", json_real(ridge));
    json_object_set_new(o, "roofline_bound", json_string(roof));
    json_object_set_new(o, "bound", json_string(mem_bound_sim ? "memory" : "compute"));
    json_object_set_new(o, "attainable_flops_per_s", json_real(attainable));
    json_object_set_new(o, "achieved_flops_per_s", json_real(flops / time_s));
    json_object_set_new(o, "peak_flops_per_s", json_real(peak));
    json_object_set_new(o, "max_abs_err", values ? json_real(max_abs) : json_null());
    json_object_set_new(o, "max_rel_err", values ? json_real(max_ref > 0 ? max_abs / max_ref : max_abs) : json_null());
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    putchar('\n');
  } else {
    printf("matmul %ld x %ld x %ld (M x N x K) split along M over %d core%s of %s, %s, level %s\n", M, N, K, cores,
           cores > 1 ? "s" : "", chip.name, tpu_precision_name(prec), tpu_fidelity_name(lv));
    printf("  operands start in HBM in %ld x %ld blocks, double-buffered into VMEM\n", T, T);
    cli_sim_report_text(stdout, res, &chip);
    printf("  HBM traffic       %.0f bytes\n", bytes);
    printf("  intensity         %.2f FLOP/byte vs ridge point %.2f FLOP/byte: %s-bound on the roofline\n",
           intensity, ridge, roof);
    printf("  attainable        %.3f TFLOP/s (peak %.3f); achieved %.3f TFLOP/s\n", attainable / 1e12, peak / 1e12,
           flops / time_s / 1e12);
    printf("  simulation        %s-bound (memory_wait %llu vs mxu_busy %llu cycles over the cores)\n",
           mem_bound_sim ? "memory" : "compute", (unsigned long long)s.cycles[TPU_SIM_MEMORY_WAIT],
           (unsigned long long)s.cycles[TPU_SIM_MXU_BUSY]);
    if (values)
      printf("  error vs sgemm    max abs %.3g, max rel %.3g (normwise)\n", max_abs, max_ref > 0 ? max_abs / max_ref : max_abs);
    if (trace_path) printf("  trace             %s\n", trace_path);
  }
  rc = 0;
out:
  json_decref(o);
  tpu_sim_result_destroy(res);
  tpu_sim_program_destroy(p);
  tpu_free(A); tpu_free(B); tpu_free(Cm); tpu_free(ref);
  return rc;
}
