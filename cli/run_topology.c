/*
** run_topology.c -- `tpusim run --topology FILE.csv`: a SCALE-Sim topology
** (conv or GEMM) on the chip engine, each layer a GEMM with its operands in
** HBM, split along M over the cores (scalesim.h's tpu_ss_chip_run runs it). Reports per
** layer and in total: cycles, simulated seconds, MXU utilization (the
** layer's M*N*K over rows x cols x arrays x cores x cycles, docs/JSON.md),
** the seven stall kinds (sim/stall.def) and the bound verdict
** (tpu_sim_result_bound). The JSON is a `run` report (docs/JSON.md):
** "stall" and "per_core" summed over the layers, "steps" one entry per
** layer, and "layers" with each layer's figures.
*/
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "scalesim/scalesim.h"
#include "sim/sim.h"

#define CMD "run"

/* The MXU utilization of m MACs in 'cycles' cycles of the chip's cores. */
static double utilization(const tpu_chip_config *chip, double macs, uint64_t cycles) {
  const double cap = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core * chip->cores * (double)cycles;
  return cap > 0 ? macs / cap : 0;
}

static double macs_of(const tpu_ss_layer *L) { return (double)L->m * (double)L->n * (double)L->k; }

static json_t *layer_json(const tpu_chip_config *chip, const tpu_ss_layer *L, const tpu_ss_chip_layer *ly) {
  json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:s}", "name", L->name, "line", L->line,
    "m", (json_int_t)L->m, "n", (json_int_t)L->n, "k", (json_int_t)L->k, "cycles", (json_int_t)ly->cycles,
    "time_s", cli_json_real((double)ly->cycles / (chip->clock_mhz * 1e6)),
    "mxu_utilization", cli_json_real(utilization(chip, macs_of(L), ly->cycles)),
    "stall", cli_sim_stalls_json(&ly->stall), "hbm_bytes", cli_json_real(ly->hbm_bytes), "bound", ly->bound);
  if (j && cli_ss_operand_json(j, ly)) { json_decref(j); return NULL; }
  return j;
}

/* "per_core" (each core over the layers) and "steps" (each layer over the
** cores) as `run` reports them; -1 when out of memory. */
static int tables_json(json_t *j, const tpu_chip_config *chip, const tpu_ss_topology *tp, const tpu_ss_chip_result *r) {
  json_t *pc = json_array(), *st = json_array(), *ls = json_array();
  int bad = !pc || !st || !ls;
  for (int c = 0; !bad && c < chip->cores; c++) {
    json_t *e = cli_sim_stalls_json(&r->core[c]);
    bad = !e || json_object_set_new(e, "core", json_integer(c)) ||
          json_object_set_new(e, "cycles", json_integer((json_int_t)r->cycles)) || json_array_append_new(pc, e);
  }
  for (int i = 0; !bad && i < r->n; i++) {
    json_t *e = cli_sim_stalls_json(&r->layers[i].stall);
    bad = !e || json_object_set_new(e, "step", json_integer(i)) ||
          json_object_set_new(e, "layer", json_string(tp->layers[i].name)) || json_array_append_new(st, e) ||
          json_array_append_new(ls, layer_json(chip, &tp->layers[i], &r->layers[i]));
  }
  bad |= json_object_set_new(j, "per_core", pc);
  bad |= json_object_set_new(j, "steps", st);
  bad |= json_object_set_new(j, "layers", ls);
  return bad ? -1 : 0;
}

static json_t *report_json(const tpu_chip_config *chip, const cli_run_topology_opts *o, const tpu_ss_topology *tp,
                           const tpu_ss_chip_result *r) {
  char alg[512];
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:o, s:o, s:o, s:o, s:s, s:s}", "chip", chip->name,
    "topology", o->path, "input_type", o->gemm ? "gemm" : "conv", "level", tpu_fidelity_name(o->level),
    "cores", chip->cores, "layer_count", r->n, "cycles", (json_int_t)r->cycles,
    "time_s", cli_json_real((double)r->cycles / (chip->clock_mhz * 1e6)),
    "mxu_utilization", cli_json_real(utilization(chip, r->macs, r->cycles)),
    "stall", cli_sim_stalls_json(&r->stall), "hbm_bytes", cli_json_real(r->hbm_bytes),
    "bound", tpu_ss_chip_bound(r),
    "all_reduce_algorithm", tpu_sim_collective_algorithm(chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
  if (!j || tables_json(j, chip, tp, r) || json_object_set_new(j, "wall_s", cli_json_real(r->wall_s)) ||
      (o->trace && json_object_set_new(j, "trace", json_string(o->trace)))) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* The width of stall kind k's column: its name, at least 6. */
static int width(int k) {
  const int w = (int)strlen(tpu_sim_stall_name(k));
  return w < 6 ? 6 : w;
}

/* One row of the text table: cycles, utilization (macs < 0: not shown)
** and each stall kind's share of the row's core-cycles (cycles x cores). */
static void row(const tpu_chip_config *chip, const char *id, const char *name, uint64_t cycles, int cores,
                double macs, const tpu_sim_stalls *s, const char *bound) {
  printf("  %-4s %-22s %12llu %10.3f", id, name, (unsigned long long)cycles, (double)cycles / chip->clock_mhz);
  if (macs >= 0) printf(" %6.1f", 100.0 * utilization(chip, macs, cycles));
  else printf(" %6s", "-");
  const double tot = (double)cycles * cores;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) printf(" %*.1f", width(k), tot > 0 ? 100.0 * (double)s->cycles[k] / tot : 0);
  printf("  %s\n", bound);
}

static void report_text(const tpu_chip_config *chip, const cli_run_topology_opts *o, const tpu_ss_topology *tp,
                        const tpu_ss_chip_result *r) {
  printf("run %s (%d layers, %s) on %s (%d core%s, level %s): each layer a GEMM, operands in HBM, M split over "
         "the cores\n", o->path, r->n, o->gemm ? "gemm" : "conv", chip->name, chip->cores, chip->cores > 1 ? "s" : "",
         tpu_fidelity_name(o->level));
  printf("  %-4s %-22s %12s %10s %6s", "id", "layer", "cycles", "us", "util%");
  for (int k = 0; k < TPU_SIM_NSTALL; k++) printf(" %*s", width(k), tpu_sim_stall_name(k));
  printf("  bound   (stall kinds in %% of the layer's core-cycles)\n");
  char id[16];
  for (int i = 0; i < r->n; i++) {
    snprintf(id, sizeof id, "%d", i);
    row(chip, id, tp->layers[i].name, r->layers[i].cycles, chip->cores, macs_of(&tp->layers[i]), &r->layers[i].stall,
        r->layers[i].bound);
  }
  row(chip, "all", "", r->cycles, chip->cores, r->macs, &r->stall, tpu_ss_chip_bound(r));
  printf("  total             %llu cycles (%.3f us at %.0f MHz), HBM traffic %.0f bytes\n",
         (unsigned long long)r->cycles, (double)r->cycles / chip->clock_mhz, chip->clock_mhz, r->hbm_bytes);
  for (int c = 0; c < chip->cores; c++) {
    snprintf(id, sizeof id, "c%d", c);
    row(chip, id, "(core, all layers)", r->cycles, 1, -1, &r->core[c], "");
  }
  if (o->trace) printf("  trace             %s\n", o->trace);
  printf("  wall time         %.3f s\n", r->wall_s);
}

int cli_run_topology(const tpu_chip_config *chip_in, const cli_run_topology_opts *o, json_t **report,
                     tpu_sweep_row *row) {
  tpu_chip_config chip = *chip_in;
  if (o->cores > chip.cores)
    return cli_usage_error(CMD, "--cores: expected 1..%d (the cores of %s), got %d", chip.cores, chip.name, o->cores);
  cli_chip_cut(&chip, o->cores ? o->cores : chip.cores);
  tpu_ss_topology tp;
  tpu_ss_chip_result r = { 0 };
  tpu_text trace = { 0 };
  char err[1024];
  tpu_status st = tpu_ss_topology_read(o->path, o->gemm, &tp, err, sizeof err);
  if (st) return cli_fail(CMD, st, "%s", err);
  st = tpu_ss_chip_run(o->path, &tp, &chip, o->level, o->threads, o->trace ? &trace : NULL, &r, err, sizeof err);
  int rc = st ? cli_fail(CMD, st, "%s", err) : 0;
  if (!rc && o->trace && trace.oom) rc = cli_runtime_error(CMD, "out of memory for the trace");
  else if (!rc && o->trace && tpu_write_atomic(o->trace, trace.s, trace.n))
    rc = cli_runtime_error(CMD, "--trace %s: cannot write: %s", o->trace, strerror(errno));
  if (!rc) cli_run_row(row, &chip, r.cycles, -1, &r.stall);
  if (!rc && !o->json) report_text(&chip, o, &tp, &r);
  else if (!rc && !(*report = report_json(&chip, o, &tp, &r))) rc = cli_runtime_error(CMD, "out of memory");
  tpu_free(trace.s);
  tpu_ss_chip_result_free(&r);
  tpu_ss_topology_free(&tp);
  return rc;
}

int cli_ss_operand_json(struct json_t *o, const tpu_ss_chip_layer *ly) {
  static const char *const key[3] = { "hbm_ifmap_bytes", "hbm_filter_bytes", "hbm_ofmap_bytes" };
  for (int k = 0; k < 3; k++)
    if (json_object_set_new(o, key[k], cli_json_real(ly->hbm_operand_bytes[k]))) return -1;
  return 0;
}
