/* Fuzz target: ONNX files (frontend/onnx.c through
** tpu_fe_model_parse_onnx: protobuf-c's reader of onnx.proto, then the
** translation and the native loader). A model that loads has its starting
** weights laid out and is planned: its per-layer GEMMs for a 2-sample
** step. */
#include "tests/fuzz/fuzz.h"
#include "frontend/fe.h"

#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[2048];
  tpu_fe_model_notes notes;
  tpu_fe_model *m = malloc(sizeof *m);   /* about 200 KiB: not on the stack */
  if (!m) abort();
  if (fz_status(tpu_fe_model_parse_onnx(data, size, "fuzz.onnx", m, &notes, err, sizeof err)) == TPU_OK) {
    if (!notes.weights) abort();   /* an ONNX model always brings its weights */
    tpu_fe_layer_gemms *g = calloc((size_t)m->nlayers, sizeof *g);
    if (g) fz_status(tpu_fe_model_gemms(m, 2, g));
    free(g);
  }
  tpu_fe_model_notes_free(&notes);
  free(m);
  return 0;
}
