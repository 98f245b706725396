/* Fuzz target: SCALE-Sim v2 files (cli/scalesim_read.c). The first byte
** chooses the reader for the rest: 0 mod 3 the .cfg, 1 a conv topology, 2
** a GEMM topology. */
#include "tests/fuzz/fuzz.h"
#include "cli/cli_int.h"

static char msg[1024];   /* the readers' messages, kept off stderr */

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cli_capture_errors(msg, sizeof msg);
  if (size < 1) return 0;
  const char *path = fz_scratch(0, data + 1, size - 1);
  if (data[0] % 3 == 0) {
    cli_ss_config c;
    fz_exit(cli_ss_read_config("scalesim", path, &c));
  } else {
    cli_ss_topology t = { 0 };
    fz_exit(cli_ss_read_topology("scalesim", path, data[0] % 3 == 2, &t));
    cli_ss_topology_free(&t);
  }
  return 0;
}
