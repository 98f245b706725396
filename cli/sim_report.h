/*
** sim_report.h -- reporting helpers shared by the commands that run the
** chip engine (tpusim run, tpusim matmul --cores, training). Not public.
*/
#ifndef TPU_CLI_SIM_REPORT_H
#define TPU_CLI_SIM_REPORT_H
#include <jansson.h>
#include <stdio.h>

#include "sim/sim.h"

/* Adds "cycles", "time_s", "stall" (the six parts in cycles, summed over
** cores), "per_core" (the same per core, with "core") and "steps" (per step,
** summed over cores) to 'o'. Returns 0, or -1 on out-of-memory. */
int cli_sim_report_json(json_t *o, const tpu_sim_result *r, const tpu_chip_config *chip);
/* The seven stall kinds of 's' as {"mxu_busy": cycles, ...}; NULL when
** out of memory. */
json_t *cli_sim_stalls_json(const tpu_sim_stalls *s);
/* The text table: one row per core and a total row, percentages of the
** core's cycles. This function can't fail. */
void cli_sim_report_text(FILE *to, const tpu_sim_result *r, const tpu_chip_config *chip);
/* Writes the trace to 'path' atomically; 0 or -1 with errno set. */
int cli_sim_write_trace(const tpu_sim_result *r, const char *path);
#endif
