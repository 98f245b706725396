/* Fuzz target: training checkpoints (frontend/train.c), for a small Adam
** model (4 -> dense 3: 15 parameters). The CRC would stop
** almost every mutation at the door, so when the first byte is odd the
** target rewrites the rest's CRC first (a damaged file that passes the
** CRC, as a checkpoint written by a buggy or hostile writer would), and
** it asks for the seed and batch the file says, to get past those checks.
** A checkpoint that loads is then trained on for one step: every field it
** set must be one the trainer can use. */
#include "tests/fuzz/fuzz.h"
#include "frontend/fe.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static const char MODEL[] =
  "{\"input\": [4], \"layers\": [{\"type\": \"dense\", \"units\": 3}], \"optimizer\": {\"type\": \"adam\"}}";
static tpu_fe_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  char err[512];
  model = malloc(sizeof *model);
  if (!model || tpu_fe_model_parse(MODEL, "fuzz-model", model, err, sizeof err)) abort();

  return 0;
}

static uint64_t field(const unsigned char *b, size_t len, int i) {
  uint64_t v = 0;
  if (len >= 8 + 8 * (size_t)(i + 1)) memcpy(&v, b + 8 + 8 * i, 8);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t len = size - 1;
  unsigned char *b = malloc(len ? len : 1);
  if (!b) abort();
  memcpy(b, data + 1, len);
  if ((data[0] & 1) && len >= 4) {
    uint32_t crc = (uint32_t)crc32(0L, b, (uInt)(len - 4));
    memcpy(b + len - 4, &crc, 4);
  }
  /* tpu_fe_ckpt_load reads DIR/checkpoint.bin */
  char ckdir[320], ckfile[360];
  snprintf(ckdir, sizeof ckdir, "%s/ckdir", fz_dir());
  snprintf(ckfile, sizeof ckfile, "%s/checkpoint.bin", ckdir);
  (void)mkdir(ckdir, 0700);
  fz_write(ckfile, b, len);

  tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  tpu_fe_trainer t;
  char err[1024];
  if (fz_status(tpu_fe_trainer_create(model, &be, 1, 2, 1, &t)) != TPU_OK) { free(b); return 0; }
  tpu_fe_ckpt_info want = { .seed = field(b, len, 2), .global_batch = (int)field(b, len, 3) }, got;
  if (fz_status(tpu_fe_ckpt_load(ckdir, &t, &want, &got, err, sizeof err)) == TPU_OK) {
    const float x[8] = { 1, 2, 3, 4, -1, 0, 1, 2 };
    const int32_t y[2] = { 0, 2 };
    double loss;
    int correct;
    fz_status(tpu_fe_trainer_step(&t, x, y, got.step, 0, &loss, &correct));
    tpu_free(got.history);
  }
  tpu_fe_trainer_destroy(&t);
  free(b);
  return 0;
}
