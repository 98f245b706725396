/* Fuzz target: chip configuration files (sim/config.c), then one override
** through the same validation (tpu_chip_config_set). */
#include "tests/fuzz/fuzz.h"
#include "sim/sim.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tpu_chip_config cfg;
  char err[1024];
  if (fz_status(tpu_chip_config_load(fz_scratch(0, data, size), &cfg, err, sizeof err)) == TPU_OK)
    fz_status(tpu_chip_config_set(&cfg, "mxu.rows=64", err, sizeof err));
  return 0;
}
