/*
** sweep_cmds.c -- what the command line hands the sweep module
** (sweep/sweep.h): the one table of the commands a sweep can run, the hook
** that routes a point's messages into its journal entry, the report's
** closing keys; and what the commands share in their CSV rows: the stall
** columns (<part>_cycles, <part>_share for every part of sim/stall.def, in
** the training report's order) and the check of a point's chip.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"
#include "viz/viz.h"

#define CMD "sweep"

/* The commands a sweep can run: this list and no other (its order is the
** order messages name them in). */
static const tpu_sweep_cmd *const SWEEPABLE[] = { &cli_train_cmd, &cli_matmul_cmd, &cli_run_cmd, &cli_pipeline_cmd };

tpu_sweep_field cli_stall_fields[CLI_STALL_FIELDS];
static const char *stall_shares[TPU_SIM_NSTALL];
static uint32_t stall_rgb[TPU_SIM_NSTALL];    /* their colours (sim/stall.def), 0xRRGGBB */
static char stall_names[CLI_STALL_FIELDS][48];
static pthread_once_t stall_once = PTHREAD_ONCE_INIT;

/* cli_stall_fields and stall_shares from sim/stall.def, once. */
static void stall_init(void) {
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    const char *part = tpu_sim_stall_name(tpu_sim_stall_in_report_order(i));
    for (int k = 0; k < 2; k++) {
      char *name = stall_names[2 * i + k];
      snprintf(name, sizeof stall_names[0], "%s_%s", part, k ? "share" : "cycles");
      cli_stall_fields[2 * i + k] = (tpu_sweep_field){ name, TPU_SWEEP_REAL };
    }
    stall_shares[i] = stall_names[2 * i + 1];
    stall_rgb[i] = tpu_viz_stall_color(tpu_sim_stall_in_report_order(i)) & 0xffffffu;
  }
}

const tpu_sweep_env *cli_sweep_env(void) {
  static const tpu_sweep_env env = { SWEEPABLE, (int)(sizeof SWEEPABLE / sizeof *SWEEPABLE), cli_capture_point_errors,
                                     cli_report_envelope };
  pthread_once(&stall_once, stall_init);
  return &env;
}

const char *const *cli_stall_shares(int *n, const uint32_t **rgb) {
  pthread_once(&stall_once, stall_init);
  *n = TPU_SIM_NSTALL;
  if (rgb) *rgb = stall_rgb;
  return stall_shares;
}

void cli_sweep_stalls(tpu_sweep_row *row, const double cycles[TPU_SIM_NSTALL], const double share[TPU_SIM_NSTALL]) {
  pthread_once(&stall_once, stall_init);
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    const int k = tpu_sim_stall_in_report_order(i);
    tpu_sweep_row_real(row, cli_stall_fields[2 * i].name, cycles[k]);
    tpu_sweep_row_real(row, cli_stall_fields[2 * i + 1].name, share[k]);
  }
}

int cli_sweep_check_chip(const cli_common *c, char *memo, size_t cap) {
  char key[4096], err[1024];
  int n = snprintf(key, sizeof key, "%s", c->chip);
  for (int k = 0; k < c->nsets && n >= 0 && (size_t)n < sizeof key; k++)
    n += snprintf(key + n, sizeof key - (size_t)n, "\n%s", c->sets[k]);
  const bool fits = n >= 0 && (size_t)n < sizeof key && (size_t)n < cap;
  if (fits && !strcmp(key, memo)) return 0;      /* the chip just checked: a sweep whose chip is no axis */
  tpu_chip_config chip;
  tpu_status st = tpu_chip_config_load(c->chip, &chip, err, sizeof err);
  for (int k = 0; st == TPU_OK && k < c->nsets; k++) st = tpu_chip_config_set(&chip, c->sets[k], err, sizeof err);
  if (st != TPU_OK) return cli_fail(CMD, st, "%s", err);
  snprintf(memo, cap, "%s", fits ? key : "");
  return 0;
}
