/*
** mxu_config.c -- MXU geometry defaults and checks; precision and dataflow
** names.
*/
#include <string.h>

#include "mxu/mxu.h"

tpu_mxu_config tpu_mxu_config_default(void) {
  return (tpu_mxu_config){ .rows = TPU_MXU_DIM, .cols = TPU_MXU_DIM, .double_buffer = true };
}

tpu_status tpu_mxu_config_check(const tpu_mxu_config *cfg) {
  if (cfg->rows < 1 || cfg->rows > TPU_MXU_MAX_DIM) return TPU_ERR_CONFIG;
  if (cfg->cols < 1 || cfg->cols > TPU_MXU_MAX_DIM) return TPU_ERR_CONFIG;
  if ((unsigned)cfg->dataflow > TPU_MXU_IS) return TPU_ERR_CONFIG;
  if (cfg->dataflow == TPU_MXU_OS && !cfg->double_buffer) return TPU_ERR_CONFIG;   /* one bank: not modelled */
  return TPU_OK;
}

static const char *const PREC_NAMES[] = { "bf16", "bf16x3", "bf16x6" };
static const char *const DF_NAMES[] = { "ws", "os", "is" };

/* The index of s in names[0..3), or -1: both name tables have three. */
static int name_index(const char *const *names, const char *s) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

const char *tpu_precision_name(tpu_precision p) { return (unsigned)p < 3 ? PREC_NAMES[p] : "?"; }
const char *tpu_mxu_dataflow_name(tpu_mxu_dataflow d) { return (unsigned)d < 3 ? DF_NAMES[d] : "?"; }

int tpu_precision_parse(const char *s, tpu_precision *out) {
  const int i = name_index(PREC_NAMES, s);
  if (i >= 0) *out = (tpu_precision)i;
  return i >= 0;
}

int tpu_mxu_dataflow_parse(const char *s, tpu_mxu_dataflow *out) {
  const int i = name_index(DF_NAMES, s);
  if (i >= 0) *out = (tpu_mxu_dataflow)i;
  return i >= 0;
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
