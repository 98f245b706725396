/*
** vpu.h -- the vector unit. (Being written: config only so far.)
*/
#ifndef TPU_VPU_H
#define TPU_VPU_H
#include "sim/base.h"

/* Register shape and per-op cycle costs, per register of work (one register
** is sublanes x lanes f32). Values come from the chip configuration. */
typedef struct tpu_vpu_config {
  int sublanes, lanes;             /* register shape, default 8 x 128 */
  int cycles_elementwise;          /* add sub mul max min relu select cast */
  int cycles_divide;               /* div reciprocal rsqrt */
  int cycles_transcendental;       /* exp log tanh sigmoid */
  int cycles_cross_lane;           /* one pass of a reduction across lanes */
  int cycles_cross_sublane;        /* one pass of a reduction across sublanes */
} tpu_vpu_config;

tpu_vpu_config tpu_vpu_config_default(void);
#endif
