/* Fuzz target: sweep files (cli/sweep_file.c), then the sweep definition
** they give (cli/sweep.c: axes, their product, the point list). */
#include "tests/fuzz/fuzz.h"
#include "cli/sweep.h"

static char msg[1024];   /* the readers' messages, kept off stderr */

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cli_capture_errors(msg, sizeof msg);
  sweep_file f = { 0 };
  if (fz_exit(sweep_file_load(fz_scratch(0, data, size), &f)) == 0) {
    sweep_def d = { 0 };
    if (fz_exit(sweep_def_parse(&d, f.argc, f.argv)) == 0) {
      char *argv[SWEEP_MAX_ARGS + 8], bufs[4096];
      for (long p = 0; p < d.npoints && p < 4; p++)
        (void)sweep_point_argv(&d, p, argv, SWEEP_MAX_ARGS + 8, bufs, sizeof bufs);
    }
    sweep_def_free(&d);
  }
  sweep_file_free(&f);
  return 0;
}
