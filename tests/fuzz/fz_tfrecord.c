/* Fuzz target: TFRecord files of tf.train.Example records (datafeed's
** reader: record framing, masked CRC-32C, Example parsing, the image
** bytes), read to the end through a real pipeline with batch 2. */
#include "tests/fuzz/fuzz.h"
#include "datafeed/df.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tpu_df_source src = { .kind = TPU_DF_SRC_TFRECORD };
  src.path = fz_scratch(0, data, size);
  src.height = 2, src.width = 2, src.channels = 3;
  fz_read_all(&src);
  return 0;
}
