/*
** mxu_array_TEMPORARY.c -- placeholder so main links while the PE-level model
** (mxu/mxu_array.c) is being written. DELETE THIS FILE when mxu_array.c lands.
** Every entry point reports that the PE level is not available yet.
*/
#include "mxu/mxu.h"

tpu_status tpu_mxu_create(const tpu_mxu_config *cfg, tpu_mxu **out) {
  (void)cfg;
  *out = NULL;
  return TPU_ERR_RUNTIME;
}
void tpu_mxu_destroy(tpu_mxu *m) { (void)m; }
tpu_status tpu_mxu_push(tpu_mxu *m, const tpu_mxu_tile *t) { (void)m; (void)t; return TPU_ERR_RUNTIME; }
void tpu_mxu_tick(tpu_mxu *m) { (void)m; }
bool tpu_mxu_idle(const tpu_mxu *m) { (void)m; return true; }
uint64_t tpu_mxu_run(tpu_mxu *m) { (void)m; return 0; }
void tpu_mxu_get_stats(const tpu_mxu *m, tpu_mxu_stats *out) { (void)m; *out = (tpu_mxu_stats){ 0 }; }
const tpu_mxu_config *tpu_mxu_get_config(const tpu_mxu *m) { (void)m; return NULL; }
void tpu_mxu_view_cells(const tpu_mxu *m, tpu_mxu_view *out) { (void)m; (void)out; }
