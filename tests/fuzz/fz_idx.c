/* Fuzz target: IDX image and label files, plain or gzip (datafeed's
** readers), read to the end through a real pipeline with batch 2. The
** first byte chooses which file the rest is: even, the images (beside a
** valid file of 3 labels); odd, the labels (beside 3 valid 2x2 images). */
#include "tests/fuzz/fuzz.h"
#include "datafeed/df.h"

static const unsigned char IMAGES[] = { 0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2,
                                        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
static const unsigned char LABELS[] = { 0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 2 };

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  bool labels = data[0] & 1;
  tpu_df_source src = { .kind = TPU_DF_SRC_IDX };
  src.images = labels ? fz_scratch(0, IMAGES, sizeof IMAGES) : fz_scratch(0, data + 1, size - 1);
  src.labels = labels ? fz_scratch(1, data + 1, size - 1) : fz_scratch(1, LABELS, sizeof LABELS);
  fz_read_all(&src);
  return 0;
}
