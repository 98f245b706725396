/*
** sim_report.h -- reporting helpers shared by the commands that run the
** chip engine (tpusim run, tpusim matmul --cores, training). Not public.
*/
#ifndef TPU_CLI_SIM_REPORT_H
#define TPU_CLI_SIM_REPORT_H
#include <jansson.h>
#include <stdio.h>

#include "frontend/fe.h"
#include "sim/sim.h"

/* Adds "cycles", "time_s", "stall" (the six parts in cycles, summed over
** cores), "per_core" (the same per core, with "core") and "steps" (per step,
** summed over cores) to 'o'. Returns 0, or -1 on out-of-memory. */
int cli_sim_report_json(json_t *o, const tpu_sim_result *r, const tpu_chip_config *chip);
/* The seven stall kinds of 's' as {"mxu_busy": cycles, ...}; NULL when
** out of memory. */
json_t *cli_sim_stalls_json(const tpu_sim_stalls *s);
/* The text table: one row per core and a total row, percentages of the
** core's cycles; then, on several cores and when the run has a collective,
** how its all-reduce runs. This function can't fail. */
void cli_sim_report_text(FILE *to, const tpu_sim_result *r, const tpu_chip_config *chip, bool collective);
/* Whether program p has a collective op on any core. Can't fail. */
bool cli_sim_has_collective(const tpu_sim_program *p);
/* Writes the trace to 'path' atomically; 0 or -1 with errno set. */
int cli_sim_write_trace(const tpu_sim_result *r, const char *path);

/* Layer i's name, or "<kind>_<i>" for a layer without one, in buf. */
const char *cli_layer_name(const tpu_fe_model *m, int i, char *buf, size_t cap);
/* One training step's costs (tpu_fe_step_costs_of) on 'chip' for a global
** batch of 'batch': the per-layer table (time, bound, FLOPs, HBM bytes,
** intensity, fused kernel) and the step's HBM bytes by class, as text on
** stdout or as the "step" JSON object (NULL when out of memory). */
void cli_step_costs_text(const tpu_fe_model *m, const tpu_chip_config *chip, long batch, const tpu_fe_step_costs *k);
json_t *cli_step_costs_json(const tpu_fe_model *m, const tpu_chip_config *chip, long batch,
                            const tpu_fe_step_costs *k);
#endif
