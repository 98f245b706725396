/* Fuzz target: pipeline files (datafeed/df_spec.c). A pipeline that
** parses is also run through the host-time model for a few steps when its
** source is small (the model's cost is the pipeline's size). */
#include "tests/fuzz/fuzz.h"
#include "datafeed/df.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tpu_df_spec *s = NULL;
  char err[1024];
  if (fz_status(tpu_df_spec_load(fz_scratch(0, data, size), &s, err, sizeof err)) == TPU_OK) {
    tpu_df_model_options o = tpu_df_model_options_default();
    tpu_df_model_result r;
    fz_status(tpu_df_model_run(s, &o, 1e-3, NULL, NULL, 4, NULL, &r, err, sizeof err));
  }
  tpu_df_spec_destroy(s);
  return 0;
}
