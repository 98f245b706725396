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

void cli_sim_report_text(FILE *to, const tpu_sim_result *r, const tpu_chip_config *chip, bool collective) {
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
  if (chip->cores > 1 && collective)
    fprintf(to, "  all-reduce        %s\n", tpu_sim_collective_algorithm(chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
}

bool cli_sim_has_collective(const tpu_sim_program *p) {
  tpu_sim_op op;
  for (int c = 0; c < tpu_sim_program_cores(p); c++)
    for (int i = 0; tpu_sim_program_op(p, c, i, &op); i++)
      if (op.kind == TPU_SIM_COLLECTIVE) return true;
  return false;
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

const char *cli_layer_name(const tpu_fe_model *m, int i, char *buf, size_t cap) {
  const tpu_fe_layer *l = &m->layers[i];
  if (l->name[0]) snprintf(buf, cap, "%s", l->name);
  else snprintf(buf, cap, "%s_%d", tpu_fe_layer_kind_name(l->kind), i);
  return buf;
}

/* The step's table (--chip): per layer its share of the step. */
void cli_step_costs_text(const tpu_fe_model *m, const tpu_chip_config *chip, long batch, const tpu_fe_step_costs *k) {
  char nm[64];
  const double us = 1e6 / (chip->clock_mhz * 1e6), step = (double)k->step_cycles;
  printf("\nTraining step on %s: batch %ld (%ld per core), dtype policy %s, fusion %s, implicit convolution %s\n",
         chip->name, batch, batch / chip->cores, tpu_fe_dtype_policy_name(m->policy), chip->compiler_fusion ? "on" : "off",
         chip->compiler_implicit_conv ? "on" : "off");
  printf("%-34s %7s %11s %6s %5s %12s %12s %9s\n", "Layer", "Kernel", "Time (us)", "%", "Bound", "GFLOP", "HBM MB",
         "FLOP/B");
  for (int i = 0; i < k->n; i++) {
    const tpu_fe_layer_cost *c = &k->layer[i];
    char g[16] = "-";
    if (c->group >= 0) snprintf(g, sizeof g, "k%d", c->group);
    printf("%-34s %7s %11.1f %6.2f %5s %12.3f %12.3f %9.1f\n", i < m->nlayers ? cli_layer_name(m, i, nm, sizeof nm)
           : "(infeed, loss, all-reduce, update)", g, c->cycles * us, 100.0 * c->cycles / step, c->bound ? c->bound : "-",
           c->flops / 1e9, c->hbm_bytes / 1e6, c->hbm_bytes > 0 ? c->flops / c->hbm_bytes : 0.0);
    for (int q = 0; q < k->natt; q++) {   /* an attention layer's parts, under it */
      const tpu_fe_layer_cost *a = &k->att[q];
      if (a->layer != i || i >= m->nlayers) continue;
      char pn[40];
      snprintf(pn, sizeof pn, "  %s", tpu_fe_att_part_name((tpu_fe_att_part)a->part));
      printf("%-34s %7s %11.1f %6.2f %5s %12.3f %12.3f %9.1f\n", pn, "", a->cycles * us, 100.0 * a->cycles / step,
             a->bound ? a->bound : "-", a->flops / 1e9, a->hbm_bytes / 1e6, a->hbm_bytes > 0 ? a->flops / a->hbm_bytes : 0.0);
    }
  }
  const double *b = k->class_bytes;
  printf("Step: %llu cycles (%.3f ms); HBM bytes per core %.1f MB: activations %.1f, parameters %.1f, gradients "
         "%.1f, optimizer state %.1f\n", (unsigned long long)k->step_cycles, step * us / 1000.0, k->hbm_bytes / 1e6,
         b[TPU_SIM_T_ACTIVATION] / 1e6, b[TPU_SIM_T_PARAMETER] / 1e6, b[TPU_SIM_T_GRADIENT] / 1e6,
         b[TPU_SIM_T_OPTIMIZER] / 1e6);
}

json_t *cli_step_costs_json(const tpu_fe_model *m, const tpu_chip_config *chip, long batch, const tpu_fe_step_costs *k) {
  char nm[64];
  json_t *a = json_array();
  for (int i = 0; a && i < k->n; i++) {
    const tpu_fe_layer_cost *c = &k->layer[i];
    json_t *o = json_pack("{s:s?, s:i, s:f, s:f, s:s?, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "name",
                          i < m->nlayers ? cli_layer_name(m, i, nm, sizeof nm) : NULL, "kernel", c->group, "cycles",
                          c->cycles, "time_s", c->cycles / (chip->clock_mhz * 1e6), "bound", c->bound, "flops", c->flops,
                          "hbm_bytes", c->hbm_bytes, "intensity", c->hbm_bytes > 0 ? c->flops / c->hbm_bytes : 0.0,
                          "mxu_cycles", c->mxu_cycles, "vpu_cycles", c->vpu_cycles, "hbm_cycles", c->hbm_cycles,
                          "ici_cycles", c->ici_cycles);
    json_t *parts = NULL;   /* an attention layer's parts */
    for (int q = 0; o && q < k->natt; q++) {
      const tpu_fe_layer_cost *x = &k->att[q];
      if (x->layer != i || i >= m->nlayers) continue;
      json_t *e = json_pack("{s:s, s:f, s:s?, s:f, s:f}", "part", tpu_fe_att_part_name((tpu_fe_att_part)x->part),
                            "cycles", x->cycles, "bound", x->bound, "flops", x->flops, "hbm_bytes", x->hbm_bytes);
      if (!parts) parts = json_array();
      if (!e || !parts || json_array_append_new(parts, e)) { json_decref(o); o = NULL; }
    }
    if (o && parts && json_object_set_new(o, "attention_parts", parts)) { json_decref(o); o = NULL; }
    else if (!o) json_decref(parts);
    if (!o || json_array_append_new(a, o)) { json_decref(a); a = NULL; }
  }
  const double *b = k->class_bytes;
  return json_pack("{s:s, s:I, s:s, s:b, s:b, s:I, s:f, s:{s:f, s:f, s:f, s:f}, s:o*}", "chip", chip->name,
                   "batch", (json_int_t)batch, "dtype_policy", tpu_fe_dtype_policy_name(m->policy), "fusion",
                   chip->compiler_fusion, "implicit_conv", chip->compiler_implicit_conv, "step_cycles",
                   (json_int_t)k->step_cycles, "hbm_bytes", k->hbm_bytes, "hbm_bytes_by_class", "activations",
                   b[TPU_SIM_T_ACTIVATION], "parameters", b[TPU_SIM_T_PARAMETER], "gradients", b[TPU_SIM_T_GRADIENT],
                   "optimizer_state", b[TPU_SIM_T_OPTIMIZER], "layers", a);
}

