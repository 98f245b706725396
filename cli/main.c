/*
** main.c -- the tpusim command: dispatches to a subcommand.
*/
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"


static void usage(FILE *to) {
  fprintf(to,
    "tpusim -- a cycle-level simulator of a TPU-like chip\n\n"
    "usage: tpusim COMMAND [options]      (tpusim COMMAND --help for its options)\n\n"
    "commands:\n");
  for (int i = 0; i < cli_ncommands; i++) fprintf(to, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
  fprintf(to,
    "\noptions every command takes (pipeline, which simulates no chip: --json and --help):\n"
    "  --chip NAME|FILE   chip preset (tpu-v2-8 [default], tpu-v3-8, teach; pod slices\n"
    "                     tpu-v2-32 .. tpu-v2-512, tpu-v3-32 .. tpu-v3-2048) or JSON file\n"
    "  --set KEY=VALUE    override one configuration key (repeatable), e.g. mxu.rows=8\n"
    "  --json             print one JSON object on stdout (for scripts)\n"
    "  --help             this text, or a command's own\n"
    "  --version          the release (tpusim " TPU_VERSION ")\n"
    "  --values OPTION    the values OPTION takes, one a line (chip, model, precision, level,\n"
    "                     dataflow, host, data, dtype-policy, backend, emit): for shell completion\n\n"
    "exit status: 0 ok, 1 runtime failure, 2 bad input\n");
}

/* `tpusim --values OPTION`: the values OPTION takes, one a line, from the
** tables the program itself checks them against (the bash completion reads
** them). 0, or 2 for an option without a fixed set of values. */
static int values(const char *opt) {
  const char *const *list = NULL;
  static const char *const BACKEND[] = { "sim", "reference", NULL };
  static const char *const DATA[] = { "fashion-mnist", "mnist", "synthetic", "cifar10:", "images:", "tfrecord:",
                                      NULL };
  static const char *const EMIT[] = { "parallel", "slurm", NULL };
  if (!strcmp(opt, "chip")) list = tpu_chip_preset_names();
  else if (!strcmp(opt, "host")) list = tpu_chip_host_names();
  else if (!strcmp(opt, "backend")) list = BACKEND;
  else if (!strcmp(opt, "data")) list = DATA;
  else if (!strcmp(opt, "emit")) list = EMIT;
  else if (!strcmp(opt, "model"))
    for (int t = 0; t < 2; t++)
      for (const char *const *q = t ? tpu_fe_model_zoo_names() : tpu_fe_model_builtin_names(); *q; q++) puts(*q);
  else if (!strcmp(opt, "precision"))
    for (int p = TPU_PREC_BF16; p <= TPU_PREC_BF16X6; p++) puts(tpu_precision_name((tpu_precision)p));
  else if (!strcmp(opt, "level"))
    for (int f = TPU_FIDELITY_PE; f <= TPU_FIDELITY_TIMING; f++) puts(tpu_fidelity_name((tpu_fidelity)f));
  else if (!strcmp(opt, "dataflow"))
    for (int d = TPU_MXU_WS; d <= TPU_MXU_IS; d++) puts(tpu_mxu_dataflow_name((tpu_mxu_dataflow)d));
  else if (!strcmp(opt, "dtype-policy"))
    for (int d = TPU_FE_MIXED_BFLOAT16; d <= TPU_FE_FLOAT32; d++) puts(tpu_fe_dtype_policy_name((tpu_fe_dtype_policy)d));
  else {
    fprintf(stderr, "tpusim --values: expected one of backend, chip, data, dataflow, dtype-policy, emit, host, level, "
            "model, precision; got '%s'\n", opt);
    return 2;
  }
  for (; list && *list; list++) puts(*list);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("tpusim %s\n", TPU_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "--values")) return values(argc > 2 ? argv[2] : "");
  const cli_command *c = cli_command_find(argv[1]);
  if (c) return c->fn(argc - 1, argv + 1);
  const char *names[64];   /* more than the commands */
  for (int i = 0; i < cli_ncommands; i++) names[i] = cli_commands[i].name;
  const char *near = tpu_nearest(argv[1], names, cli_ncommands);
  fprintf(stderr, "tpusim: unknown command '%s'%s%s%s; the commands are:", argv[1], near ? " (did you mean '" : "",
          near ? near : "", near ? "'?)" : "");
  for (int i = 0; i < cli_ncommands; i++) fprintf(stderr, " %s", cli_commands[i].name);
  fprintf(stderr, " (tpusim --help)\n");
  return 2;
}
