/*
** mxu_config.c -- MXU geometry defaults and checks; precision names.
*/
#include <string.h>

#include "mxu/mxu.h"

tpu_mxu_config tpu_mxu_config_default(void) {
  return (tpu_mxu_config){ .rows = TPU_MXU_DIM, .cols = TPU_MXU_DIM, .double_buffer = true };
}

tpu_status tpu_mxu_config_check(const tpu_mxu_config *cfg) {
  if (cfg->rows < 1 || cfg->rows > TPU_MXU_MAX_DIM) return TPU_ERR_CONFIG;
  if (cfg->cols < 1 || cfg->cols > TPU_MXU_MAX_DIM) return TPU_ERR_CONFIG;
  return TPU_OK;
}

static const char *const PREC_NAMES[] = { "bf16", "bf16x3", "bf16x6" };

const char *tpu_precision_name(tpu_precision p) {
  return (unsigned)p < 3 ? PREC_NAMES[p] : "?";
}

int tpu_precision_parse(const char *s, tpu_precision *out) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, PREC_NAMES[i])) { *out = (tpu_precision)i; return 1; }
  return 0;
}

int tpu_precision_passes(tpu_precision p) {
  return p == TPU_PREC_BF16X6 ? 6 : p == TPU_PREC_BF16X3 ? 3 : 1;
}

int tpu_precision_parts(tpu_precision p) {
  return p == TPU_PREC_BF16X6 ? 3 : p == TPU_PREC_BF16X3 ? 2 : 1;
}

int tpu_precision_pass(tpu_precision p, int i, int *a_part, int *b_part) {
  static const signed char P1[][2] = { { 0, 0 } };
  static const signed char P3[][2] = { { 1, 0 }, { 0, 1 }, { 0, 0 } };
  static const signed char P6[][2] = { { 2, 0 }, { 1, 1 }, { 0, 2 }, { 1, 0 }, { 0, 1 }, { 0, 0 } };
  const signed char (*t)[2] = p == TPU_PREC_BF16X6 ? P6 : p == TPU_PREC_BF16X3 ? P3 : P1;
  if (i < 0 || i >= tpu_precision_passes(p)) return -1;
  *a_part = t[i][0];
  *b_part = t[i][1];
  return 0;
}
