/*
** cmd_matmul.c -- `tpusim matmul`: one GEMM on one core's MXU(s).
**
** Reports cycles, MXU utilization (MACs done by the array over
** cells x cycles), achieved FLOP/s at the configured clock (2*M*N*K over the
** simulated time; extra bf16 passes cost time but add no FLOPs), and the
** error against OpenBLAS sgemm on the unrounded f32 inputs:
**   max_abs_err = max |C - ref|
**   max_rel_err = max |C - ref| / max |ref|   (normwise: near-zero entries of
**                 ref would make an elementwise ratio meaningless)
** The three levels give the same cycles; pe and tile give the same bits.
*/
#include <cblas.h>
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_int.h"
#include "cli/npy.h"
#include "mxu/mxu.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim matmul --m M --n N --k K [options]\n"
  "       tpusim matmul --a A.npy --b B.npy [options]\n\n"
  "Runs C = A.B (A is M x K, B is K x N, f32) through one core's MXU and reports\n"
  "cycles, MXU utilization, FLOP/s and the error against OpenBLAS sgemm.\n\n"
  "  --m, --n, --k N        GEMM shape (1..65536 each; taken from --a/--b when given)\n"
  "  --precision P          bf16 (1 pass, default), bf16x3 or bf16x6 (f32 via 3 or 6 passes)\n"
  "  --level L              pe (every cell, every cycle), tile (default: exact cycles by\n"
  "                         formula, bits by the fast kernel) or timing (cycles only)\n"
  "  --seed S               seed for random N(0,1) inputs (default 1)\n"
  "  --a FILE, --b FILE     inputs as .npy (float32, C order, 2-D)\n"
  "  --out FILE             write C as .npy (float32)\n"
  "  --cores C              split along M over C cores (1..16), operands starting in HBM;\n"
  "                         reports the stall breakdown and the roofline position\n"
  "                         (docs/PROGRAMS.md)\n"
  "  --threads N            host threads with --cores (default: the host's cores)\n"
  "  --trace FILE           with --cores: write a Chrome/Perfetto trace\n";


static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_cmd_matmul(int argc, char **argv) {
  const char *cmd = "matmul";
  cli_common c;
  cli_common_init(&c);
  long m = 0, n = 0, k = 0, seed = 1, cores = 0, threads = 0;
  const char *a_path = NULL, *b_path = NULL, *out_path = NULL, *trace_path = NULL;
  tpu_precision prec = TPU_PREC_BF16;
  tpu_fidelity level = TPU_FIDELITY_TILE;
  char err[1024];
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(argc, argv, &i, &c, cmd);
    if (r > 1) return r;
    if (r == 1) continue;
    const char *v;
    struct { const char *name; long *dst; long lo, hi; } nums[] = {
      { "--m", &m, 1, 65536 }, { "--n", &n, 1, 65536 }, { "--k", &k, 1, 65536 },
      { "--seed", &seed, 0, INT64_MAX > LONG_MAX ? LONG_MAX : INT64_MAX },
      { "--cores", &cores, 1, 16 }, { "--threads", &threads, 1, 1024 } };
    bool done = false;
    for (size_t j = 0; j < sizeof nums / sizeof nums[0] && !done; j++) {
      r = cli_opt(argc, argv, &i, nums[j].name, &v);
      if (r < 0) return cli_usage_error(cmd, "%s needs a value", nums[j].name);
      if (r == 0) continue;
      if (!cli_parse_long(v, nums[j].lo, nums[j].hi, nums[j].dst, nums[j].name, err, sizeof err))
        return cli_usage_error(cmd, "%s", err);
      done = true;
    }
    if (done) continue;
    if ((r = cli_opt(argc, argv, &i, "--precision", &v))) {
      if (r < 0 || !tpu_precision_parse(v, &prec))
        return cli_usage_error(cmd, "--precision: expected bf16, bf16x3 or bf16x6, got '%s'", r < 0 ? "" : v);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--level", &v))) {
      if (r < 0 || !tpu_fidelity_parse(v, &level))
        return cli_usage_error(cmd, "--level: expected pe, tile or timing, got '%s'", r < 0 ? "" : v);
      continue;
    }
    const char **paths[] = { &a_path, &b_path, &out_path, &trace_path };
    const char *pnames[] = { "--a", "--b", "--out", "--trace" };
    for (int j = 0; j < 4 && !done; j++) {
      r = cli_opt(argc, argv, &i, pnames[j], &v);
      if (r < 0) return cli_usage_error(cmd, "%s needs a file name", pnames[j]);
      if (r) { *paths[j] = v; done = true; }
    }
    if (done) continue;
    return cli_usage_error(cmd, "unknown option '%s' (tpusim matmul --help)", argv[i]);
  }
  if (c.help) { fputs(HELP, stdout); fputs(CLI_COMMON_HELP, stdout); return 0; }
  tpu_chip_config chip;
  int rc = cli_load_chip(cmd, &c, &chip);
  if (rc) return rc;
  if (!a_path != !b_path) return cli_usage_error(cmd, "--a and --b go together");
  if (out_path && level == TPU_FIDELITY_TIMING)
    return cli_usage_error(cmd, "--out: the timing level computes no values; use --level tile or pe");
  if (cores) {
    if (!m || !n || !k) return cli_usage_error(cmd, "--cores needs --m, --n and --k");
    if (a_path || out_path)
      return cli_usage_error(cmd, "--cores runs seeded inputs in HBM; --a, --b and --out are for one core");
    return cli_matmul_cores(&chip, (int)cores, m, n, k, (int)prec, (int)level, seed, (int)threads,
                           c.json, trace_path);
  }
  if (trace_path || threads)
    return cli_usage_error(cmd, "--trace and --threads go with --cores (one core runs no engine)");

  cli_npy A = { 0 }, B = { 0 };
  float *a = NULL, *b = NULL, *cm = NULL, *ref = NULL;
  rc = 2;
  if (a_path) {
    if (cli_npy_read_f32(a_path, &A, err, sizeof err) || cli_npy_read_f32(b_path, &B, err, sizeof err)) {
      cli_usage_error(cmd, "%s", err);
      goto out;
    }
    if (A.ndim != 2 || B.ndim != 2) {
      cli_usage_error(cmd, "%s: expected 2-D arrays, got %d-D", A.ndim != 2 ? a_path : b_path,
                     A.ndim != 2 ? A.ndim : B.ndim);
      goto out;
    }
    if (A.shape[1] != B.shape[0]) {
      cli_usage_error(cmd, "inner dimensions differ: %s is %lld x %lld, %s is %lld x %lld", a_path,
                     (long long)A.shape[0], (long long)A.shape[1], b_path, (long long)B.shape[0],
                     (long long)B.shape[1]);
      goto out;
    }
    long dims[3] = { (long)A.shape[0], (long)B.shape[1], (long)A.shape[1] };
    long *given[3] = { &m, &n, &k };
    const char *gn[3] = { "--m", "--n", "--k" };
    for (int j = 0; j < 3; j++) {
      if (dims[j] < 1 || dims[j] > 65536) {
        cli_usage_error(cmd, "%s: dimension %ld out of range 1..65536", j == 1 ? b_path : a_path, dims[j]);
        goto out;
      }
      if (*given[j] && *given[j] != dims[j]) {
        cli_usage_error(cmd, "%s %ld disagrees with the input files (%ld)", gn[j], *given[j], dims[j]);
        goto out;
      }
      *given[j] = dims[j];
    }
    a = A.data; b = B.data;
  } else if (!m || !n || !k) {
    cli_usage_error(cmd, "give --m, --n and --k, or --a and --b (tpusim matmul --help)");
    goto out;
  }
  size_t mk = (size_t)m * (size_t)k, kn = (size_t)k * (size_t)n, mn = (size_t)m * (size_t)n;
  bool values = level != TPU_FIDELITY_TIMING;
  if (values) {
    if (!a) {
      a = tpu_malloc(mk * sizeof *a);
      b = tpu_malloc(kn * sizeof *b);
      if (!a || !b) { rc = cli_runtime_error(cmd, "out of memory for %ld x %ld x %ld", m, n, k); goto out; }
      uint64_t r = (uint64_t)seed;
      tpu_normal_fill(&r, a, mk);
      tpu_normal_fill(&r, b, kn);
    }
    cm = tpu_malloc(mn * sizeof *cm);
    ref = tpu_malloc(mn * sizeof *ref);
    if (!cm || !ref) { rc = cli_runtime_error(cmd, "out of memory for %ld x %ld x %ld", m, n, k); goto out; }
  }
  tpu_mxu_gemm_result res;
  double t0 = now_s();
  tpu_status st = tpu_mxu_gemm(&chip.mxu, chip.mxus_per_core, level, prec, (int)m, (int)n, (int)k,
                               a, b, cm, &res);
  double wall = now_s() - t0;
  if (st != TPU_OK) { rc = cli_runtime_error(cmd, "gemm failed: %s", tpu_status_str(st)); goto out; }
  double max_abs = 0, max_ref = 0;
  if (values) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k,
                b, (int)n, 0.0f, ref, (int)n);
    for (size_t j = 0; j < mn; j++) {
      double d = fabs((double)cm[j] - (double)ref[j]);
      if (!(d <= max_abs)) max_abs = d;            /* NaN propagates */
      if (fabs((double)ref[j]) > max_ref) max_ref = fabs((double)ref[j]);
    }
  }
  double max_rel = max_ref > 0 ? max_abs / max_ref : max_abs;
  if (out_path) {
    int64_t shape[2] = { m, n };
    if (cli_npy_write_f32(out_path, cm, 2, shape)) {
      rc = cli_usage_error(cmd, "--out %s: cannot write: %s", out_path, strerror(errno));
      goto out;
    }
  }
  tpu_chip_peaks pk;
  tpu_chip_peaks_of(&chip, &pk);
  double time_s = (double)res.cycles / pk.clock_hz;
  double cells = (double)chip.mxu.rows * chip.mxu.cols * chip.mxus_per_core;
  double util = (double)res.macs / (cells * (double)res.cycles);
  double flops = 2.0 * (double)m * (double)n * (double)k / time_s;
  if (c.json) {
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f}",
      "chip", chip.name, "m", (int)m, "n", (int)n, "k", (int)k,
      "precision", tpu_precision_name(prec), "level", tpu_fidelity_name(level),
      "cycles", (json_int_t)res.cycles, "time_s", time_s, "mxu_utilization", util,
      "flops_per_s", flops, "peak_flops_per_s", pk.bf16_flops_per_core,
      "tiles", (json_int_t)res.tiles, "macs", (json_int_t)res.macs,
      "weight_loads", (json_int_t)res.weight_loads, "wall_s", wall);
    json_object_set_new(o, "max_abs_err", values ? json_real(max_abs) : json_null());
    json_object_set_new(o, "max_rel_err", values ? json_real(max_rel) : json_null());
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    putchar('\n');
    json_decref(o);
  } else {
    printf("matmul %ld x %ld x %ld (M x N x K), %s, level %s, on one core of %s "
           "(%d MXU%s of %dx%d at %.0f MHz)\n", m, n, k, tpu_precision_name(prec),
           tpu_fidelity_name(level), chip.name, chip.mxus_per_core, chip.mxus_per_core > 1 ? "s" : "",
           chip.mxu.rows, chip.mxu.cols, chip.clock_mhz);
    printf("  cycles            %llu (%.3f us)\n", (unsigned long long)res.cycles, time_s * 1e6);
    printf("  tiles             %llu (%llu weight loads)\n", (unsigned long long)res.tiles,
           (unsigned long long)res.weight_loads);
    printf("  mxu utilization   %.1f%%\n", 100.0 * util);
    printf("  achieved          %.3f TFLOP/s of %.3f peak\n", flops / 1e12, pk.bf16_flops_per_core / 1e12);
    if (values)
      printf("  error vs sgemm    max abs %.3g, max rel %.3g (normwise)\n", max_abs, max_rel);
    else
      printf("  error vs sgemm    (timing level: no values)\n");
    printf("  wall time         %.3f s\n", wall);
    if (out_path) printf("  wrote             %s\n", out_path);
  }
  rc = 0;
out:
  if (a != A.data) tpu_free(a);
  if (b != B.data) tpu_free(b);
  cli_npy_free(&A);
  cli_npy_free(&B);
  tpu_free(cm);
  tpu_free(ref);
  return rc;
}
