/*
** bench_mxu_pe.c -- PE-level MXU model speed: cell-updates per second.
**
** A 128x128 double-buffered array streams a long sequence of full tiles
** (M = K = N = 128, bf16 values, accumulating); cell-updates = rows * cols *
** cycles. Each kernel build the host supports is timed (best of 3, thread CPU time), and the
** tile model (formula + fast kernel) runs the same sequence for scale. The
** goal (issue 3): >= 4e9 cell-updates per second on one host core.
**
**   make bench   or   build/release/tests/bench_mxu_pe [tiles]
*/
#include <stdlib.h>
#include <string.h>

#include "mxu/mxu_int.h"
#include "tests/test_util.h"

#define GOAL 4e9

/* Times are CPU time of this thread (tu_cpu_now): the goal is per host core,
** and the machine may be shared, so wall time would charge us for other
** processes. */
int main(int argc, char **argv) {
  const int D = TPU_MXU_DIM, tiles = argc > 1 ? atoi(argv[1]) : 200;
  if (tiles < 1) { fprintf(stderr, "usage: bench_mxu_pe [tiles >= 1]\n"); return 2; }
  tpu_mxu_config cfg = tpu_mxu_config_default();
  float *a = malloc(sizeof(float) * D * D), *w = malloc(sizeof(float) * D * D);
  float *o1 = calloc((size_t)D * D, sizeof(float)), *o2 = calloc((size_t)D * D, sizeof(float));
  if (!a || !w || !o1 || !o2) return 1;
  tu_rng rng = { 42 };
  tu_fill(&rng, a, (size_t)D * D, 1);
  tu_fill(&rng, w, (size_t)D * D, 1);
  tpu_mxu_tile t = { .m = D, .k = D, .n = D, .act = a, .lda = D, .w = w, .ldw = D,
                     .out = o1, .ldo = D, .accumulate = true };

  printf("\n## PE-level MXU model, %dx%d, %d full tiles (M=K=N=%d), double-buffered\n\n", D, D, tiles, D);
  printf("| model | kernel | cycles | cpu s | cell-updates/s | goal | ok |\n");
  printf("| --- | --- | ---: | ---: | ---: | ---: | --- |\n");

  /* tile model on the same sequence: same cycles (checked below) */
  tpu_mxu_sched s;
  tpu_mxu_sched_init(&s, &cfg);
  t.out = o2;
  double t0 = tu_cpu_now();
  for (int i = 0; i < tiles; i++) {
    tpu_mxu_sched_tile(&s, t.m, t.k, t.n, 0, NULL);
    tpu_mxu_tile_compute(cfg.rows, &t);
  }
  double tile_s = tu_cpu_now() - t0;
  double cells = (double)D * D * (double)s.done;
  printf("| tile | - | %llu | %.3f | %.3g (equivalent) | - | - |\n",
         (unsigned long long)s.done, tile_s, cells / tile_s);

  int rc = 0;
  for (int k = MXU_SIMD_AVX512; k >= MXU_SIMD_GENERIC; k--) {
    if (!mxu_simd_supported((mxu_simd)k)) continue;
    double best = 1e30;
    uint64_t cycles = 0;
    for (int rep = 0; rep < 3; rep++) {
      tpu_mxu *m;
      if (tpu_mxu_create(&cfg, &m) != TPU_OK) return 1;
      mxu_array_set_kernel(m, (mxu_simd)k);
      memset(o1, 0, sizeof(float) * D * D);
      t.out = o1;
      for (int i = 0; i < tiles; i++)
        if (tpu_mxu_push(m, &t) != TPU_OK) return 1;
      t0 = tu_cpu_now();
      cycles = tpu_mxu_run(m);
      double el = tu_cpu_now() - t0;
      if (el < best) best = el;
      tpu_mxu_destroy(m);
    }
    double rate = (double)D * D * (double)cycles / best;
    bool ok = rate >= GOAL;
    printf("| pe | %s | %llu | %.3f | %.3g | %.0e | %s |\n", mxu_simd_name((mxu_simd)k),
           (unsigned long long)cycles, best, rate, GOAL, ok ? "yes" : "no");
    if (cycles != s.done) { printf("cycle mismatch: pe %llu, tile %llu\n",
                                   (unsigned long long)cycles, (unsigned long long)s.done); rc = 1; }
    if (memcmp(o1, o2, sizeof(float) * D * D)) { printf("result bits differ\n"); rc = 1; }
  }
  printf("\ntpu_mxu_create picks avx2 when the host has it (else generic); the goal applies to that row.\n");
  free(a); free(w); free(o1); free(o2);
  return rc;
}
