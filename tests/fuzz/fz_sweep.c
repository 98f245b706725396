/* Fuzz target: sweep files (sweep/sweep_file.c), then the sweep definition
** they give (sweep/sweep_def.c: axes, their product, the point list), over
** the command line's table of sweepable commands (cli/sweep_cmds.c). */
#include "tests/fuzz/fuzz.h"
#include "cli/cli_int.h"

static char msg[1024];   /* the messages */

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const tpu_sweep_env *env = cli_sweep_env();
  tpu_sweep_file f = { .argc = 0 };
  if (fz_status(tpu_sweep_file_load(fz_scratch(0, data, size), env, &f, msg, sizeof msg)) == TPU_OK) {
    tpu_sweep_def d;
    if (fz_status(tpu_sweep_def_parse(&d, env, f.argc, f.argv, msg, sizeof msg)) == TPU_OK) {
      char *argv[TPU_SWEEP_MAX_ARGS + 8], bufs[4096];
      for (long p = 0; p < d.npoints && p < 4; p++)
        (void)tpu_sweep_point_argv(&d, p, argv, TPU_SWEEP_MAX_ARGS + 8, bufs, sizeof bufs);
    }
    tpu_sweep_def_free(&d);
  }
  tpu_sweep_file_free(&f);
  return 0;
}
