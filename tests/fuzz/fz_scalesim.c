/* Fuzz target: SCALE-Sim v2 files (scalesim/ss_read.c). The first byte
** chooses the reader for the rest: 0 mod 3 the .cfg, 1 a conv topology, 2
** a GEMM topology. */
#include "tests/fuzz/fuzz.h"
#include "scalesim/scalesim.h"

static char msg[1024];   /* the readers' messages */

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *path = fz_scratch(0, data + 1, size - 1);
  if (data[0] % 3 == 0) {
    tpu_ss_config c;
    fz_status(tpu_ss_config_read(path, &c, msg, sizeof msg));
  } else {
    tpu_ss_topology t = { 0 };
    fz_status(tpu_ss_topology_read(path, data[0] % 3 == 2, &t, msg, sizeof msg));
    tpu_ss_topology_free(&t);
  }
  return 0;
}
