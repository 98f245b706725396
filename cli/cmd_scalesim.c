/*
** cmd_scalesim.c -- `tpusim scalesim`: the options and the report of a
** SCALE-Sim v2 config and topology run layer by layer, whose
** COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv (and DETAILED_ACCESS_REPORT.csv)
** go into LOGDIR/RUN/. The files, the models and the reports are
** scalesim/scalesim.h's; here the models are chosen (docs/SCALESIM.md):
**   --compat scalesim  SCALE-Sim v2's own (TPU_SS_COMPAT): its cycles, and in
**                      CALC bandwidth mode its memory side;
**   --compat none      (the default) tpusim's MXU at the timing level in the
**                      same dataflow (TPU_SS_MXU), the same layers, so the
**                      two can be compared;
**   --chip NAME / --cores N  the chip engine (TPU_SS_CHIP): a tpusim chip
**                      (its MXU given the config's array), each layer's
**                      operands in HBM, M split over N cores (all the
**                      chip's by default).
** SCALE-Sim's short flags -c, -t, -p and -i are accepted as well as the
** long ones.
*/
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "scalesim/scalesim.h"

static const char HELP[] =
  "usage: tpusim scalesim -c FILE.cfg -t TOPOLOGY.csv [-p LOGDIR] [-i conv|gemm]\n"
  "                       [--compat scalesim|none] [--dataflow ws|os|is] [--json]\n"
  "                       [--chip NAME] [--cores N] [--set KEY=VALUE]\n\n"
  "Runs a SCALE-Sim v2 config and topology layer by layer on one systolic\n"
  "array and writes COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv in SCALE-Sim's\n"
  "columns into LOGDIR/RUN/ (LOGDIR defaults to '.'; docs/SCALESIM.md); with\n"
  "--compat scalesim and InterfaceBandwidth CALC also its DRAM columns and\n"
  "DETAILED_ACCESS_REPORT.csv. RUN is the config's run_name with its dataflow\n"
  "ending (_ws, _os, _is) that of --dataflow, and _tpusim or _CHIP_Ncores added\n"
  "when tpusim's own model or chip ran, so no run overwrites another's reports.\n\n"
  "  -c, --config FILE      SCALE-Sim .cfg (array size, dataflow, SRAM sizes, ...)\n"
  "  -t, --topology FILE    topology CSV: conv layers, or GEMMs with -i gemm\n"
  "  -p, --logdir DIR       where the run's directory is made (default .)\n"
  "  -i, --input-type T     conv (default) or gemm (name, M, N, K)\n"
  "  --compat scalesim      SCALE-Sim v2's compute model: its cycles exactly\n"
  "  --compat none          tpusim's double-buffered MXU in the same dataflow (default)\n"
  "  --dataflow ws|os|is    overrides the config's Dataflow\n"
  "  --cores N              with the chip engine, run on N of its cores (default: all;\n"
  "                         alone it means --chip tpu-v2-8)\n";
static const char MORE[] =
  "\nWith --chip (or --cores) the layers run on that chip's engine, the config's\n"
  "array as its MXU: operands in HBM, DMA, several cores; Total Cycles are the\n"
  "engine's and Stall Cycles the time the cores did not compute\n"
  "(docs/SCALESIM.md). --set changes that chip.\n";

enum { OPT_COMPAT = 1, OPT_DATAFLOW, OPT_INPUT };

typedef struct ss_engine {     /* --chip: the chip and the layers' runs on it */
  tpu_chip_config chip;
  tpu_ss_chip_result run;
} ss_engine;

typedef struct ss_opts {
  const char *config, *topology, *logdir;
  bool compat, gemm, df_set;
  bool chip;                   /* --chip or --cores: the chip engine */
  long cores;                  /* --cores, 0: all the chip's */
  tpu_mxu_dataflow df;
  cli_common com;
  const ss_engine *engine;     /* set once the chip engine has run (--chip) */
} ss_opts;

static int on_value(void *ud, int id, const char *v) {
  ss_opts *o = ud;
  if (id == OPT_COMPAT) {
    if (!strcmp(v, "scalesim")) o->compat = true;
    else if (!strcmp(v, "none")) o->compat = false;
    else return cli_usage_error("scalesim", "--compat: expected scalesim or none, got '%s'", v);
  } else if (id == OPT_DATAFLOW) {
    if (!tpu_mxu_dataflow_parse(v, &o->df))
      return cli_usage_error("scalesim", "--dataflow: expected ws, os or is, got '%s'", v);
    o->df_set = true;
  } else {
    return cli_ss_input_type("scalesim", v, &o->gemm);
  }
  return 0;
}


/* SCALE-Sim's short flags become the long ones (cli_parse takes long ones). */
static void long_flags(int argc, char **argv, char **out) {
  static const char *const map[][2] = { { "-c", "--config" }, { "-t", "--topology" }, { "-p", "--logdir" },
                                        { "-i", "--input-type" } };
  for (int i = 0; i < argc; i++) {
    out[i] = argv[i];
    for (int k = 0; k < 4; k++)
      if (!strcmp(argv[i], map[k][0])) out[i] = (char *)map[k][1];
  }
  out[argc] = NULL;
}

static int parse(int argc, char **argv, ss_opts *o) {
  memset(o, 0, sizeof *o);
  o->logdir = ".";
  const cli_opt opts[] = {
    CLI_STR("config", &o->config, "--config needs a SCALE-Sim .cfg file"),
    CLI_STR("topology", &o->topology, "--topology needs a topology .csv file"),
    CLI_STR("logdir", &o->logdir, "--logdir needs a directory"),
    CLI_ID("input-type", OPT_INPUT, NULL), CLI_ID("compat", OPT_COMPAT, NULL),
    CLI_ID("dataflow", OPT_DATAFLOW, NULL), CLI_LONG("cores", &o->cores, 1, TPU_SIM_GEMM_MAX_CORES) };
  char **args = tpu_malloc((size_t)(argc + 1) * sizeof *args);
  if (!args) return cli_runtime_error("scalesim", "out of memory");
  long_flags(argc, argv, args);
  int rc = cli_parse("scalesim", argc, args, opts, CLI_NOPTS(opts), &o->com, on_value, o);
  o->chip = o->cores || cli_chip_given(argc, args, &o->com);
  tpu_free(args);
  if (rc) return rc;
  if (o->com.help) return cli_help(HELP, MORE);
  if (!o->config) return cli_usage_error("scalesim", "-c FILE.cfg is required (tpusim scalesim --help)");
  if (!o->topology) return cli_usage_error("scalesim", "-t TOPOLOGY.csv is required (tpusim scalesim --help)");
  if (o->com.nsets && !o->chip) return cli_usage_error("scalesim", "--set goes with --chip or --cores (the chip engine)");
  if (o->chip && o->compat)
    return cli_usage_error("scalesim", "--chip and --cores run tpusim's chip engine; they do not go with --compat scalesim");
  return CLI_RUN;
}

/* {==================================================================
** --chip: the layers on the chip engine
** ================================================================== */
/* The chip: --chip (default tpu-v2-8) with the config's array as its MXU
** (mxu.rows and mxu.cols set before the user's --set, which may change
** them), cut to --cores. 0, or the exit status after a message. */
static int engine_chip(const tpu_ss_config *cfg, const ss_opts *o, tpu_chip_config *chip) {
  if (cfg->dataflow != TPU_MXU_WS)
    return cli_usage_error("scalesim", "--chip and --cores: the chip engine is weight-stationary, the dataflow is %s "
                           "(the config's Dataflow or --dataflow; use ws, or drop --chip for tpusim's own %s model)",
                           tpu_mxu_dataflow_name(cfg->dataflow), tpu_mxu_dataflow_name(cfg->dataflow));
  if (o->com.nsets + 2 > CLI_MAX_SETS) return cli_usage_error("scalesim", "--set: at most %d overrides", CLI_MAX_SETS - 2);
  char rows[40], cols[40];
  snprintf(rows, sizeof rows, "mxu.rows=%ld", cfg->rows);
  snprintf(cols, sizeof cols, "mxu.cols=%ld", cfg->cols);
  cli_common com = o->com;
  com.sets[0] = rows;
  com.sets[1] = cols;
  memcpy(com.sets + 2, o->com.sets, (size_t)o->com.nsets * sizeof *com.sets);
  com.nsets = o->com.nsets + 2;
  int rc = cli_load_chip("scalesim", &com, chip);
  if (rc) return rc;
  if (o->cores > chip->cores)
    return cli_usage_error("scalesim", "--cores: expected 1..%d (the cores of %s), got %ld", chip->cores, chip->name,
                           o->cores);
  cli_chip_cut(chip, o->cores ? (int)o->cores : chip->cores);
  return 0;
}

/* Runs every layer on the chip and puts SCALE-Sim's figures of it in
** rows[] (tpu_ss_chip_results). 0, or the exit status after a message. */
static int engine_rows(const tpu_ss_config *cfg, const ss_opts *o, const tpu_ss_topology *tp, ss_engine *e,
                       tpu_ss_result *rows) {
  char err[1024];
  int rc = engine_chip(cfg, o, &e->chip);
  if (rc) return rc;
  tpu_status st = tpu_ss_chip_run(o->topology, tp, &e->chip, TPU_FIDELITY_TIMING, 0, NULL, &e->run, err, sizeof err);
  if (st) return cli_fail("scalesim", st, "%s", err);
  tpu_ss_chip_results(cfg, tp, &e->chip, &e->run, rows);
  return 0;
}

/* The engine's figures added to the --json report: the chip, its cores,
** the stall table per layer and in total, HBM bytes and the bound. 0 or -1. */
static int engine_json(json_t *j, const ss_engine *e) {
  const tpu_ss_chip_result *r = &e->run;
  json_t *layers = json_object_get(j, "layers");
  int bad = json_object_set_new(j, "chip", json_string(e->chip.name)) ||
            json_object_set_new(j, "cores", json_integer(e->chip.cores)) ||
            json_object_set_new(j, "stall", cli_sim_stalls_json(&r->stall)) ||
            json_object_set_new(j, "hbm_bytes", cli_json_real(r->hbm_bytes)) ||
            json_object_set_new(j, "bound", json_string(tpu_ss_chip_bound(r)));
  for (int i = 0; !bad && i < r->n; i++) {
    json_t *l = json_array_get(layers, (size_t)i);
    bad = !l || json_object_set_new(l, "stall", cli_sim_stalls_json(&r->layers[i].stall)) ||
          json_object_set_new(l, "hbm_bytes", cli_json_real(r->layers[i].hbm_bytes)) ||
          json_object_set_new(l, "bound", json_string(r->layers[i].bound)) ||
          cli_ss_operand_json(l, &r->layers[i]);
  }
  return bad ? -1 : 0;
}

/* The text report's lines on the engine: where the core-cycles went. */
static void engine_text(const ss_engine *e) {
  const tpu_ss_chip_result *r = &e->run;
  printf("chip engine: %s, %d core%s (HBM, DMA, double-buffered VMEM); core-cycles:", e->chip.name, e->chip.cores,
         e->chip.cores > 1 ? "s" : "");
  const double tot = (double)r->cycles * e->chip.cores;
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    if (r->stall.cycles[k]) printf(" %s %.1f%%", tpu_sim_stall_name(k), 100.0 * (double)r->stall.cycles[k] / tot);
  printf("; %s-bound\n", tpu_ss_chip_bound(r));
}
/* }================================================================== */

/* SCALE-Sim's memory side of a layer in --json (compat mode, CALC). */
static json_t *mem_json(json_t *j, const tpu_ss_result *r) {
  if (!j || !r->has_mem) return j;
  static const char *const op[3] = { "ifmap", "filter", "ofmap" };
  char key[40];
  for (int k = 0; k < 3; k++) {
    snprintf(key, sizeof key, "%s_dram_%s", op[k], k == 2 ? "writes" : "reads");
    json_object_set_new(j, key, json_integer((json_int_t)r->mem.dram[k].count));
    snprintf(key, sizeof key, "%s_dram_bw", op[k]);
    json_object_set_new(j, key, cli_json_real(r->mem.dram_bw[k]));
  }
  json_object_set_new(j, "stall_cycles", json_integer((json_int_t)r->mem.stall_cycles));
  return j;
}

static json_t *layer_json(const tpu_ss_layer *ly, const tpu_ss_result *r) {
  return mem_json(json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
    "name", ly->name, "m", (json_int_t)ly->m, "n", (json_int_t)ly->n, "k", (json_int_t)ly->k,
    "cycles", (json_int_t)r->cycles, "stall_cycles", (json_int_t)r->stall,
    "overall_util_pct", cli_json_real(r->s.overall_util_pct), "mapping_eff_pct", cli_json_real(r->s.mapping_eff_pct),
    "compute_util_pct", cli_json_real(r->s.compute_util_pct), "row_folds", (json_int_t)r->s.row_folds,
    "col_folds", (json_int_t)r->s.col_folds, "scalesim_cycles", (json_int_t)r->s.total_cycles,
    "macs", (json_int_t)r->s.macs, "ifmap_sram_reads", (json_int_t)r->s.ifmap_sram_reads,
    "filter_sram_reads", (json_int_t)r->s.filter_sram_reads,
    "ofmap_sram_writes", (json_int_t)r->s.ofmap_sram_writes), r);
}

static int report(const tpu_ss_config *cfg, const ss_opts *o, const tpu_ss_topology *tp, const tpu_ss_result *rows,
                  uint64_t total, const char *run_dir) {
  if (o->com.json) {
    json_t *arr = json_array();
    for (int i = 0; i < tp->n; i++) json_array_append_new(arr, layer_json(&tp->layers[i], &rows[i]));
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:o}", "run_name", cfg->run_name,
      "report_dir", run_dir, "compat", o->compat ? "scalesim" : "none", "dataflow", tpu_mxu_dataflow_name(cfg->dataflow),
      "rows", (int)cfg->rows, "cols", (int)cfg->cols, "total_cycles", (json_int_t)total, "layers", arr);
    if (j && o->engine && engine_json(j, o->engine)) { json_decref(j); j = NULL; }
    return cli_print_json("scalesim", j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  }
  printf("%s: %ldx%ld array, %s dataflow, %s model\n", cfg->run_name, cfg->rows, cfg->cols,
         tpu_mxu_dataflow_name(cfg->dataflow),
         o->compat ? "SCALE-Sim v2 (--compat scalesim)" : o->engine ? "tpusim chip engine" : "tpusim");
  printf("%-4s %-20s %12s %10s %10s %10s\n", "id", "layer", "cycles", "util %", "mapping %", "compute %");
  for (int i = 0; i < tp->n; i++)
    printf("%-4d %-20s %12llu %10.2f %10.2f %10.2f\n", i, tp->layers[i].name, (unsigned long long)rows[i].cycles,
           rows[i].s.overall_util_pct, rows[i].s.mapping_eff_pct, rows[i].s.compute_util_pct);
  if (o->engine) engine_text(o->engine);
  printf("total %llu cycles; reports in %s/%s/\n", (unsigned long long)total, o->logdir, run_dir);
  return 0;
}

/* When the file that failed to read as a .cfg (or, with 'topology', as a
** topology) looks like the other kind: how to give them. "" otherwise. */
static const char *swapped_hint(const ss_opts *o, bool topology) {
  const tpu_ss_looks c = tpu_ss_looks_like(o->config), t = tpu_ss_looks_like(o->topology);
  if (!topology && c == TPU_SS_LOOKS_TOPOLOGY && t == TPU_SS_LOOKS_CFG)
    return "; -c and -t look swapped: the -c file looks like a topology CSV and the -t file like a .cfg (-c takes "
           "the .cfg, -t the topology)";
  if (!topology && c == TPU_SS_LOOKS_TOPOLOGY)
    return "; the -c file looks like a topology CSV: give it with -t, and the .cfg with -c";
  if (topology && t == TPU_SS_LOOKS_CFG)
    return "; the -t file looks like a SCALE-Sim .cfg: give it with -c, and the topology with -t";
  return "";
}

int cli_cmd_scalesim(int argc, char **argv) {
  ss_opts o;
  tpu_ss_config cfg;
  char err[1024];
  const int parsed = parse(argc, argv, &o);          /* CLI_RUN, or the status (0 after --help) */
  if (parsed != CLI_RUN) return parsed;
  tpu_status st = tpu_ss_config_read(o.config, &cfg, err, sizeof err);
  if (st) return cli_fail("scalesim", st, "%s%s", err, swapped_hint(&o, false));
  const tpu_mxu_dataflow cfg_df = cfg.dataflow;
  if (o.df_set) cfg.dataflow = o.df;
  tpu_ss_topology tp;
  if ((st = tpu_ss_topology_read(o.topology, o.gemm, &tp, err, sizeof err)))
    return cli_fail("scalesim", st, "%s%s", err, swapped_hint(&o, true));
  tpu_ss_result *rows = tpu_calloc((size_t)tp.n, sizeof *rows);
  uint64_t total = 0;
  ss_engine e = { .run = { 0 } };
  int rc = 0;
  if (!rows) rc = cli_runtime_error("scalesim", "out of memory");
  else if (o.chip && !(rc = engine_rows(&cfg, &o, &tp, &e, rows))) {
    o.engine = &e;
    total = e.run.cycles;
  } else if (!o.chip && (st = tpu_ss_run_layers(&cfg, o.config, &tp, o.topology, o.compat, rows, &total, err,
                                                sizeof err)))
    rc = cli_fail("scalesim", st, "%s", err);
  char run_dir[256];
  tpu_ss_run_dir_name(&cfg, cfg_df, o.engine ? TPU_SS_CHIP : o.compat ? TPU_SS_COMPAT : TPU_SS_MXU, &e.chip, run_dir,
                      sizeof run_dir);
  if (!rc && (st = tpu_ss_write_reports(o.logdir, run_dir, &tp, rows, err, sizeof err)))
    rc = cli_fail("scalesim", st, "%s", err);
  if (!rc) rc = report(&cfg, &o, &tp, rows, total, run_dir);
  tpu_free(rows);
  tpu_ss_chip_result_free(&e.run);
  tpu_ss_topology_free(&tp);
  return rc;
}
