/* Fuzz target: the CIFAR-10 binary reader (datafeed's), read to the end
** through a real pipeline with batch 2. The input is data_batch_1.bin of a
** directory whose other four batch files hold one valid record each. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "datafeed/df.h"

enum { REC = 3073 };

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[4096];
  if (!dir[0]) {
    static unsigned char rec[REC];
    snprintf(dir, sizeof dir, "%s/cifar", fz_dir());
    mkdir(dir, 0700);
    for (int i = 0; i < REC; i++) rec[i] = (unsigned char)(i * 7);
    rec[0] = 3;   /* the label */
    for (int f = 2; f <= 5; f++) {
      char p[4200];
      snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, f);
      fz_write(p, rec, sizeof rec);
    }
  }
  char p[4200];
  snprintf(p, sizeof p, "%s/data_batch_1.bin", dir);
  fz_write(p, data, size);
  tpu_df_source src = { .kind = TPU_DF_SRC_CIFAR10, .dir = dir };
  fz_read_all(&src);
  return 0;
}
