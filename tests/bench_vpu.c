/*
** bench_vpu.c -- host cost of the VPU model, side by side in one run.
**
** Numerics: for each op on a 256 x 1024 f32 operand (a large activation or
** weight block), the best time of tpu_vpu_exec, as ns per element and as a
** ratio to memcpy of the op's input bytes on the same host (a ratio near 1
** means the op runs at memory speed). Timing: tpu_vpu_cycles calls per
** second over every op and a spread of shapes, against a goal of 10^7 (the
** engine's goal is 10^6 operations per second of host time, all costs
** included). Exit 1 if the timing goal is missed.
**
**   make bench      or   build/release/tests/bench_vpu
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test_util.h"
#include "vpu/vpu.h"

#define R 256
#define C 1024
#define CYCLES_GOAL 1e7

typedef struct job { tpu_vpu_op op; tpu_vpu_args a; tpu_status st; size_t bytes; const void *src; void *dst; } job;

static double best_time(void (*fn)(job *), job *j, double budget_s) {
  double best = 1e30, start = tu_now();
  for (int i = 0; ; i++) {
    double t0 = tu_now();
    fn(j);
    double dt = tu_now() - t0;
    if (dt < best) best = dt;
    if (i >= 2 && tu_now() - start > budget_s) break;
  }
  return best;
}
static void run_exec(job *j) { j->st = tpu_vpu_exec(j->op, &j->a); }
static void run_memcpy(job *j) { memcpy(j->dst, j->src, j->bytes); }

int main(void) {
  const size_t n = (size_t)R * C;
  float *x = tpu_malloc_aligned(n * 4), *y = tpu_malloc_aligned(n * 4), *o = tpu_malloc_aligned(n * 4);
  float *o2 = tpu_malloc_aligned(n * 4), *w = tpu_malloc_aligned(n * 4), *m = tpu_malloc_aligned(n * 4);
  float *v = tpu_malloc_aligned(n * 4), *big = tpu_malloc_aligned(8 * n * 4);
  int32_t *lab = tpu_malloc(R * sizeof *lab), *idx = tpu_malloc(R * sizeof *idx);
  if (!x || !y || !o || !o2 || !w || !m || !v || !big || !lab || !idx) {
    fprintf(stderr, "bench_vpu: out of memory\n");
    return 1;
  }
  tu_rng rng = { 99 };
  tu_fill(&rng, x, n, 0);
  tu_fill(&rng, y, n, 0);
  for (size_t i = 0; i < n; i++) { y[i] = fabsf(y[i]) + 0.5f; w[i] = x[i]; m[i] = v[i] = 0; }
  memset(big, 0, 8 * n * 4);
  for (int i = 0; i < R; i++) lab[i] = tu_range(&rng, 0, C - 1);
  tpu_vpu_config cfg = tpu_vpu_config_default();

  printf("\n## VPU numerics on the host: tpu_vpu_exec on %d x %d f32, 1 thread\n\n", R, C);
  printf("| op | ns/element | input MB | memcpy of the inputs, ns/element | ratio op/memcpy | simulated cycles (tpu-v2-8) |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  static const char *const names[] = { "add", "mul", "div", "relu", "relu_grad", "exp", "tanh",
                                       "sigmoid", "bias_add", "row_sum", "col_sum", "softmax",
                                       "softmax_xent", "argmax", "cast_f32_bf16", "sgd", "momentum", "adam" };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    job j = { .a = { .rows = R, .cols = C, .x = x, .y = y, .labels = lab, .out = o, .out2 = o2,
                     .idx = idx, .param = w, .grad = y, .m = m, .v = v,
                     .p = tpu_vpu_params_default() } };
    if (!tpu_vpu_op_parse(names[k], &j.op)) { fprintf(stderr, "bench_vpu: no op %s\n", names[k]); return 1; }
    j.a.p.lr = 1e-6f;                       /* keep the weights sane over many runs */
    /* bytes the op reads: every operand in its read mask */
    unsigned in[4];
    int nin = tpu_vpu_op_inputs(j.op, in);
    size_t bytes = 0;
    for (int i = 0; i < nin; i++) bytes += tpu_vpu_operand_elems(j.op, in[i], R, C) * 4;
    const double t = best_time(run_exec, &j, 0.2);
    if (j.st != TPU_OK) { fprintf(stderr, "bench_vpu: %s failed\n", names[k]); return 1; }
    job c = { .bytes = bytes, .src = big, .dst = (char *)big + bytes };  /* big: 8n floats */
    const double tc = best_time(run_memcpy, &c, 0.1);
    printf("| %s | %.2f | %.1f | %.2f | %.2f | %llu |\n", names[k], t / (double)n * 1e9,
           (double)bytes / 1e6, tc / (double)n * 1e9, t / tc,
           (unsigned long long)tpu_vpu_cycles(&cfg, j.op, R, C));
    fflush(stdout);
  }

  /* timing model: cycles per call over all ops and varied shapes */
  enum { CALLS = 4000000 };
  static int rows[64], cols[64];
  for (int i = 0; i < 64; i++) { rows[i] = tu_range(&rng, 1, 4096); cols[i] = tu_range(&rng, 1, 4096); }
  uint64_t sink = 0;
  double t0 = tu_now();
  for (int i = 0; i < CALLS; i++)
    sink += tpu_vpu_cycles(&cfg, (tpu_vpu_op)(i % TPU_VPU_OP_COUNT), rows[i & 63], cols[(i >> 6) & 63]);
  const double dt = tu_now() - t0, rate = CALLS / dt;
  printf("\n| timing model | calls/s | goal | |\n| --- | ---: | ---: | --- |\n");
  printf("| tpu_vpu_cycles, %d ops x 4096 shapes | %.3g | %.0e | %s |\n", TPU_VPU_OP_COUNT, rate,
         CYCLES_GOAL, rate >= CYCLES_GOAL ? "met" : "MISSED");
  printf("\n(checksum %llu)\n", (unsigned long long)sink);
  tpu_free_aligned(x); tpu_free_aligned(y); tpu_free_aligned(o); tpu_free_aligned(o2);
  tpu_free_aligned(w); tpu_free_aligned(m); tpu_free_aligned(v); tpu_free_aligned(big);
  tpu_free(lab); tpu_free(idx);
  return rate >= CYCLES_GOAL ? 0 : 1;
}
