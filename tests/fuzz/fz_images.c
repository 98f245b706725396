/* Fuzz target: an image folder (datafeed's images source, as Keras'
** image_dataset_from_directory reads one) and its JPEG and PNG decoding,
** read to the end through a real pipeline with batch 2, resized to 8x8x3.
** The first byte chooses the file's name (x.png, x.jpg or x.gif: a kind
** Keras allows that is not decoded here); the rest is the file, in class
** folder 'a' beside class 'b' holding the same bytes as y.png. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "datafeed/df.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const NAMES[] = { "x.png", "x.jpg", "x.gif" };
  static char dir[4096];
  if (size < 1) return 0;
  char p[4300];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/images", fz_dir());
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/a", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/b", dir);
    mkdir(p, 0700);
  }
  for (size_t k = 0; k < sizeof NAMES / sizeof NAMES[0]; k++) {   /* the last input's file goes */
    snprintf(p, sizeof p, "%s/a/%s", dir, NAMES[k]);
    remove(p);
  }
  snprintf(p, sizeof p, "%s/a/%s", dir, NAMES[data[0] % 3]);
  fz_write(p, data + 1, size - 1);
  snprintf(p, sizeof p, "%s/b/y.png", dir);
  fz_write(p, data + 1, size - 1);
  tpu_df_source src = { .kind = TPU_DF_SRC_IMAGES, .dir = dir, .height = 8, .width = 8, .channels = 3,
                        .resize = true, .no_shuffle = true };
  fz_read_all(&src);
  return 0;
}
