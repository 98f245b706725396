/*
** sim_report.c -- the stall report of an engine run as JSON and as text.
*/
#include "cli/sim_report.h"

#include <errno.h>
#include <string.h>

#include "cli/cli_int.h"

json_t *cli_sim_stalls_json(const tpu_sim_stalls *s) {
  json_t *o = json_object();
  for (int k = 0; o && k < TPU_SIM_NSTALL; k++)
    if (json_object_set_new(o, tpu_sim_stall_name(k), json_integer((json_int_t)s->cycles[k]))) {
      json_decref(o);
      return NULL;
    }
  return o;
}

int cli_sim_report_json(json_t *o, const tpu_sim_result *r, const tpu_chip_config *chip) {
  const uint64_t cyc = tpu_sim_result_cycles(r);
  tpu_sim_stalls s;
  tpu_sim_result_stalls(r, -1, -1, &s);
  int bad = json_object_set_new(o, "cycles", json_integer((json_int_t)cyc));
  bad |= json_object_set_new(o, "time_s", cli_json_real((double)cyc / (chip->clock_mhz * 1e6)));
  bad |= json_object_set_new(o, "stall", cli_sim_stalls_json(&s));
  json_t *pc = json_array();
  for (int c = 0; pc && c < tpu_sim_result_cores(r); c++) {
    tpu_sim_result_stalls(r, c, -1, &s);
    json_t *e = cli_sim_stalls_json(&s);
    if (!e) { bad = 1; break; }
    bad |= json_object_set_new(e, "core", json_integer(c));
    bad |= json_object_set_new(e, "cycles", json_integer((json_int_t)cyc));
    bad |= json_array_append_new(pc, e);
  }
  bad |= json_object_set_new(o, "per_core", pc);
  json_t *st = json_array();
  for (int k = 0; st && k < tpu_sim_result_steps(r); k++) {
    tpu_sim_result_stalls(r, -1, k, &s);
    json_t *e = cli_sim_stalls_json(&s);
    if (!e) { bad = 1; break; }
    bad |= json_object_set_new(e, "step", json_integer(k));
    bad |= json_array_append_new(st, e);
  }
  bad |= json_object_set_new(o, "steps", st);
  char alg[512];
  bad |= json_object_set_new(o, "all_reduce_algorithm",
                             json_string(tpu_sim_collective_algorithm(chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg)));
  return bad ? -1 : 0;
}

void cli_sim_report_text(FILE *to, const tpu_sim_result *r, const tpu_chip_config *chip) {
  const uint64_t cyc = tpu_sim_result_cycles(r);
  fprintf(to, "  cycles            %llu (%.3f us at %.0f MHz)\n", (unsigned long long)cyc,
          (double)cyc / chip->clock_mhz, chip->clock_mhz);
  fprintf(to, "  %-6s", "core");
  for (int k = 0; k < TPU_SIM_NSTALL; k++) fprintf(to, " %16s", tpu_sim_stall_name(k));
  fputc('\n', to);
  tpu_sim_stalls s;
  for (int c = 0; c < tpu_sim_result_cores(r); c++) {
    tpu_sim_result_stalls(r, c, -1, &s);
    const double tot = (double)cyc;
    fprintf(to, "  %-6d", c);
    for (int k = 0; k < TPU_SIM_NSTALL; k++)
      fprintf(to, " %9llu %5.1f%%", (unsigned long long)s.cycles[k], tot > 0 ? 100.0 * (double)s.cycles[k] / tot : 0);
    fputc('\n', to);
  }
  tpu_sim_result_stalls(r, -1, -1, &s);
  const double tot = (double)cyc * tpu_sim_result_cores(r);
  fprintf(to, "  %-6s", "all");
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    fprintf(to, " %9llu %5.1f%%", (unsigned long long)s.cycles[k], tot > 0 ? 100.0 * (double)s.cycles[k] / tot : 0);
  fputc('\n', to);
  char alg[512];
  if (chip->cores > 1)
    fprintf(to, "  all-reduce        %s\n", tpu_sim_collective_algorithm(chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
}

int cli_sim_write_trace(const tpu_sim_result *r, const char *path) {
  char *t = tpu_sim_result_trace_json(r);
  if (!t) { errno = ENOMEM; return -1; }
  int rc = tpu_write_atomic(path, t, strlen(t));
  int e = errno;
  tpu_free(t);
  errno = e;
  return rc;
}
