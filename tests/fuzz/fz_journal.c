/* Fuzz target: a sweep's journal (sweep/sweep_journal.c), read as `tpusim
** sweep merge` reads a shard's: DIR/points.jsonl is the input, beside the
** sweep.json of a 2-point matmul sweep; the merge writes its own journal
** and results.csv in another scratch directory. */
#include <stdio.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "cli/cli_int.h"

static const char SWEEP[] =
  "{ \"definition\": { \"command\": \"matmul\", \"args\": [\"--m\", \"8,16\", \"--n\", \"8\", \"--k\", \"8\"], "
  "\"axes\": [\"m\"], \"points\": 2 }, \"shard\": \"1/1\" }\n";

static char msg[1024];

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char shard[4096], out[4096];
  char p[4200];
  if (!shard[0]) {
    snprintf(shard, sizeof shard, "%s/shard", fz_dir());
    snprintf(out, sizeof out, "%s/merged", fz_dir());
    mkdir(shard, 0700);
    snprintf(p, sizeof p, "%s/sweep.json", shard);
    fz_write(p, SWEEP, sizeof SWEEP - 1);
  }
  snprintf(p, sizeof p, "%s/points.jsonl", shard);
  fz_write(p, data, size);
  static const char *const OUT[] = { "sweep.json", "points.jsonl", "results.csv" };
  for (size_t k = 0; k < sizeof OUT / sizeof OUT[0]; k++) {   /* each input merges afresh */
    snprintf(p, sizeof p, "%s/%s", out, OUT[k]);
    remove(p);
  }
  char *dirs[] = { shard };
  long n = 0;
  fz_status(tpu_sweep_merge(cli_sweep_env(), out, dirs, 1, &n, msg, sizeof msg));
  return 0;
}
