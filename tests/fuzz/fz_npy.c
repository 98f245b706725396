/* Fuzz target: .npy files (base/npy.c): the header parser on the bytes,
** then the float32 reader on the file. */
#include "tests/fuzz/fuzz.h"
#include "base/base.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tpu_npy h;
  char err[1024];
  if (fz_status(tpu_npy_parse("fuzz.npy", data, size, &h, err, sizeof err)) != TPU_OK) return 0;
  float *x = NULL;
  if (fz_status(tpu_npy_read_f32(fz_scratch(0, data, size), &h, &x, err, sizeof err)) == TPU_OK) tpu_free(x);
  return 0;
}
