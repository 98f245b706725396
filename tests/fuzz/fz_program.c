/* Fuzz target: JSON programs (sim/program_json.c). A program that parses
** is also run at the timing level on a preset of its core count, when it
** is small enough to run in a moment. */
#include "tests/fuzz/fuzz.h"
#include "sim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tpu_chip_config chip[17];  /* tpu-v2-8 with 1..16 cores */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  char err[512], set[32];
  for (int c = 1; c <= 16; c++) {
    snprintf(set, sizeof set, "cores=%d", c);
    if (tpu_chip_config_load("tpu-v2-8", &chip[c], err, sizeof err) ||
        tpu_chip_config_set(&chip[c], set, err, sizeof err)) chip[c].cores = 0;
  }

  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fz_text(data, size), err[1024];
  /* the program's own "cores" when it says one the chip can have */
  const char *k = strstr(text, "\"cores\"");
  long n = k && (k = strchr(k, ':')) ? strtol(k + 1, NULL, 10) : 1;
  const tpu_chip_config *c = &chip[n >= 1 && n <= 16 && chip[n].cores ? n : 1];
  tpu_sim_program *p = NULL;
  if (fz_status(tpu_sim_program_parse(text, "fuzz.json", c->cores, &p, err, sizeof err)) == TPU_OK && size < 4096) {
    tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 1, .events = true };
    tpu_sim_result *r = NULL;
    if (fz_status(tpu_sim_run(c, p, &o, &r)) == TPU_OK) (void)tpu_sim_result_cycles(r);
    tpu_sim_result_destroy(r);
  }
  tpu_sim_program_destroy(p);
  free(text);
  return 0;
}
