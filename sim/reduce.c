/*
** reduce.c -- the one order of a data-parallel sum (tpu_sim_sum_cores):
** core 0 first, then 1, 2, ... in f32. The engine's all_reduce and
** reduce_scatter values and the front-end trainer's gradient sum both use
** it, so a gradient has the same bits whichever of them computed it. The
** ring's timing (sim/engine.c) does not depend on this order.
*/
#include "sim/sim.h"

void tpu_sim_sum_cores(int n, const float *const *src, int64_t count, float *dst) {
  for (int64_t e = 0; e < count; e++) {
    float acc = src[0][e];
    for (int q = 1; q < n; q++) acc += src[q][e];
    dst[e] = acc;
  }
}
