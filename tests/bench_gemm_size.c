/*
** bench_gemm_size.c -- `tpusim matmul --cores` at the sizes of real
** workloads (issue 15), measured side by side in one run:
**   1. one GEMM on tpu-v2-8's 8 cores run whole (every op of its program
**      built and run) and extended (tpu_sim_gemm_run: a few block rows,
**      their growth added up), checked to give the same cycles and stalls;
**      the ratio of their wall times;
**   2. the extended run of M = 2^31 x 4096 x 4096 (goal: well under 1 s).
** Best of 5 runs each, alternating. HBM is raised to hold the operands.
*/
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim.h"
#include "tests/test_util.h"

/* One run of tpu_sim_gemm_run; returns its wall time, *cycles its cycles,
** *mxu its mxu_busy over the cores. Exits when a run asked to be extended
** (whole_ops 1 or 0) ran whole. */
static double timed(const tpu_chip_config *cfg, int64_t M, int64_t N, int64_t K, int64_t whole_ops,
                    uint64_t *cycles, uint64_t *mxu) {
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 2 };
  tpu_sim_program *p;
  tpu_sim_result *r;
  tpu_sim_gemm_info info;
  char err[1024];
  const double t0 = tu_now();
  if (tpu_sim_gemm_run(cfg, cfg->cores, M, N, K, TPU_PREC_BF16, NULL, NULL, &o, whole_ops, &p, &r, &info, err,
                       sizeof err) != TPU_OK) {
    fprintf(stderr, "bench_gemm_size: %s\n", err);
    exit(1);
  }
  const double t = tu_now() - t0;
  if (whole_ops != INT64_MAX && info.rows_run == 0) {
    fprintf(stderr, "bench_gemm_size: %lld x %lld x %lld was not extended\n", (long long)M, (long long)N, (long long)K);
    exit(1);
  }
  tpu_sim_stalls s;
  tpu_sim_result_stalls(r, -1, -1, &s);
  *cycles = tpu_sim_result_cycles(r);
  *mxu = s.cycles[TPU_SIM_MXU_BUSY];
  tpu_sim_result_destroy(r);
  tpu_sim_program_destroy(p);
  return t;
}

int main(void) {
  tpu_chip_config cfg;
  char err[256];
  if (tpu_chip_config_load("tpu-v2-8", &cfg, err, sizeof err) != TPU_OK ||
      tpu_chip_config_set(&cfg, "hbm.capacity_gib=65536", err, sizeof err) != TPU_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  const int64_t M = (int64_t)1 << 23, N = 1024, K = 1024;
  double whole = 1e9, ext = 1e9, big = 1e9;
  uint64_t cw = 0, mw = 0, cx = 0, mx = 0, cb = 0, mb = 0;
  for (int rep = 0; rep < 5; rep++) {
    const double a = timed(&cfg, M, N, K, INT64_MAX, &cw, &mw), b = timed(&cfg, M, N, K, 1, &cx, &mx);
    const double c = timed(&cfg, (int64_t)1 << 31, 4096, 4096, 0, &cb, &mb);
    if (a < whole) whole = a;
    if (b < ext) ext = b;
    if (c < big) big = c;
  }
  if (cw != cx || mw != mx) {
    fprintf(stderr, "bench_gemm_size: whole and extended runs differ: %llu vs %llu cycles\n",
            (unsigned long long)cw, (unsigned long long)cx);
    return 1;
  }
  printf("\n## bench_gemm_size: matmul --cores 8 on tpu-v2-8, timing level, best of 5\n");
  printf("| GEMM | run | cycles | wall s |\n| --- | --- | ---: | ---: |\n");
  printf("| %lld x %lld x %lld | whole | %llu | %.3f |\n", (long long)M, (long long)N, (long long)K,
         (unsigned long long)cw, whole);
  printf("| %lld x %lld x %lld | extended | %llu | %.3f |\n", (long long)M, (long long)N, (long long)K,
         (unsigned long long)cx, ext);
  printf("| 2147483648 x 4096 x 4096 | extended | %llu | %.3f |\n", (unsigned long long)cb, big);
  printf("extended vs whole: %.1fx faster, the same cycles and mxu_busy\n", whole / ext);
  return 0;
}
