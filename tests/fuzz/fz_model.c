/* Fuzz target: model descriptions (frontend/model.c; Keras' to_json files
** go through the same entry) and, for inputs starting "zoo:", the zoo's
** NAME@HxWxC:CLASSES knobs (frontend/zoo.c). A model that loads is also
** planned: its per-layer GEMMs for a 2-sample step. */
#include "tests/fuzz/fuzz.h"
#include "frontend/fe.h"

#include <stdlib.h>
#include <string.h>

static tpu_fe_model *model;   /* about 200 KiB: not on the stack */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  model = malloc(sizeof *model);
  if (!model) abort();

  return 0;
}

static void planned(const tpu_fe_model *m) {
  tpu_fe_layer_gemms *g = calloc((size_t)m->nlayers, sizeof *g);
  if (g) fz_status(tpu_fe_model_gemms(m, 2, g));
  free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fz_text(data, size), err[2048];
  if (size >= 4 && !memcmp(text, "zoo:", 4)) {
    char *json = NULL;
    if (fz_status(tpu_fe_model_zoo_json(text + 4, &json, err, sizeof err)) == TPU_OK && json)
      if (fz_status(tpu_fe_model_parse(json, text + 4, model, err, sizeof err)) == TPU_OK) planned(model);
    tpu_free(json);
  } else if (fz_status(tpu_fe_model_load(fz_scratch(0, data, size), model, err, sizeof err)) == TPU_OK) {
    planned(model);
  }
  free(text);
  return 0;
}
