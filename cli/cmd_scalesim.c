/*
** cmd_scalesim.c -- `tpusim scalesim`: runs a SCALE-Sim v2 config and
** topology, layer by layer on one array, and writes SCALE-Sim's
** COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv into LOGDIR/RUN/ (RUN is the
** config's run_name, named for the dataflow and model run: run_dir_name).
**
** Two models (docs/SCALESIM.md):
**   --compat scalesim  SCALE-Sim v2's own compute model (mxu.h's
**                      tpu_mxu_scalesim_layer): folds end to end, each a
**                      full fold, ws, os or is. Its cycles are SCALE-Sim's;
**                      in CALC bandwidth mode so is its memory side
**                      (tpu_mxu_scalesim_mem: DRAM columns, stalls,
**                      DETAILED_ACCESS_REPORT.csv).
**   --compat none      (the default) tpusim's MXU at the timing level
**                      (tpu_mxu_gemm) in the same dataflow (mxu.h,
**                      Dataflows): the next stationary tile loads while one
**                      streams (os: a second accumulator bank), a partial
**                      fold charged for what it uses; the same layers, so
**                      the two can be compared.
**   --chip NAME / --cores N  the layers on the chip engine (topology.c): a
**                      tpusim chip (its MXU given the config's array), each
**                      layer's operands in HBM, M split over N cores (all
**                      the chip's by default); Total Cycles are the engine's
**                      and Stall Cycles the time the cores did not compute.
** SCALE-Sim's short flags -c, -t, -p and -i are accepted as well as the
** long ones.
*/
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"

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
  cli_topo_run run;
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

typedef struct ss_row {        /* one layer's report */
  tpu_mxu_scalesim s;          /* SCALE-Sim's figures (cycles replaced outside compat) */
  uint64_t cycles;             /* the Total Cycles reported */
  uint64_t stall;              /* the Stall Cycles reported (0 but on the chip engine) */
  bool has_mem;                /* compat, CALC: SCALE-Sim's memory side in mem */
  tpu_mxu_ss_mem mem;
} ss_row;

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
    CLI_ID("dataflow", OPT_DATAFLOW, NULL), CLI_LONG("cores", &o->cores, 1, TPU_MAX_CORES) };
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

/* SCALE-Sim's memory side of one layer (compat mode, CALC bandwidth): its
** DRAM traffic, and the stalls its OFMAP buffer adds to the cycles and so
** to the figures divided by them. 0, or the exit status after a message. */
static int run_mem(const cli_ss_config *cfg, const ss_opts *o, const cli_ss_layer *ly, ss_row *r) {
  const tpu_mxu_ss_conv c = { (uint64_t)ly->ifmap_h, (uint64_t)ly->ifmap_w, (uint64_t)ly->filter_h,
    (uint64_t)ly->filter_w, (uint64_t)ly->channels, (uint64_t)ly->filters, (uint64_t)ly->stride_h,
    (uint64_t)ly->stride_w, ly->ofmap_h, ly->ofmap_w };
  const uint64_t words[3] = { (uint64_t)cfg->ifmap_kib * 1024, (uint64_t)cfg->filter_kib * 1024,
                              (uint64_t)cfg->ofmap_kib * 1024 };
  tpu_status st = tpu_mxu_scalesim_mem((int)cfg->rows, (int)cfg->cols, cfg->dataflow, &c, words, false, &r->mem);
  if (st != TPU_OK) return cli_fail("scalesim", st, "layer '%s': %s", ly->name, tpu_status_str(st));
  if (r->mem.unsupported)
    return cli_usage_error("scalesim", "layer '%s' of %s with %s: SCALE-Sim's memory model is not "
                           "reproduced for %s", ly->name, o->topology, o->config, r->mem.unsupported);
  r->has_mem = true;
  r->cycles = r->s.total_cycles = r->mem.total_cycles;
  r->s.overall_util_pct = (double)(r->s.macs * 100) / ((double)r->cycles * (double)cfg->rows * (double)cfg->cols);
  return 0;
}

/* One layer: SCALE-Sim's figures, and outside compat mode tpusim's cycles
** and the utilization they give. 0, or the exit status after a message. */
static int run_layer(const cli_ss_config *cfg, const ss_opts *o, const cli_ss_layer *ly, ss_row *r) {
  tpu_mxu_scalesim_layer((int)cfg->rows, (int)cfg->cols, cfg->dataflow, ly->m, ly->n, ly->k, &r->s);
  r->cycles = r->s.total_cycles;
  if (o->compat) return cfg->user_bandwidth ? 0 : run_mem(cfg, o, ly, r);
  const uint64_t max = (uint64_t)TPU_MXU_MAX_GEMM_DIM;
  if (ly->m > max || ly->n > max || ly->k > max)
    return cli_usage_error("scalesim", "%s: layer '%s' has M = %llu, N = %llu, K = %llu; tpusim's MXU takes at most %llu",
                           o->topology, ly->name, (unsigned long long)ly->m, (unsigned long long)ly->n,
                           (unsigned long long)ly->k, (unsigned long long)max);
  const tpu_mxu_config mc = { .rows = (int)cfg->rows, .cols = (int)cfg->cols, .double_buffer = true,
                              .dataflow = cfg->dataflow };
  tpu_mxu_gemm_result g;
  tpu_status st = tpu_mxu_gemm(&mc, 1, TPU_FIDELITY_TIMING, TPU_PREC_BF16, ly->m, ly->n, ly->k,
                               NULL, NULL, NULL, &g);
  if (st != TPU_OK) return cli_fail("scalesim", st, "layer '%s': %s", ly->name, tpu_status_str(st));
  r->cycles = g.cycles;
  const double pes = (double)cfg->rows * (double)cfg->cols;
  r->s.overall_util_pct = (double)(r->s.macs * 100) / ((double)g.cycles * pes);
  r->s.compute_util_pct = r->s.overall_util_pct;   /* one array, no stalls: every cycle counts */
  return 0;
}

/* {==================================================================
** --chip: the layers on the chip engine
** ================================================================== */
/* The chip: --chip (default tpu-v2-8) with the config's array as its MXU
** (mxu.rows and mxu.cols set before the user's --set, which may change
** them), cut to --cores. 0, or the exit status after a message. */
static int engine_chip(const cli_ss_config *cfg, const ss_opts *o, tpu_chip_config *chip) {
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

/* Runs every layer on the chip and puts its figures in rows[]: Total
** Cycles the engine's, Stall Cycles those in which the cores computed
** nothing (mean over the cores), Overall Util the MACs over every PE of
** the cores in Total Cycles, Compute Util over the PEs in the cycles they
** computed; Mapping Efficiency stays SCALE-Sim's (shapes only). */
static int engine_rows(const cli_ss_config *cfg, const ss_opts *o, const cli_ss_topology *tp, ss_engine *e,
                       ss_row *rows) {
  int rc = engine_chip(cfg, o, &e->chip);
  if (rc || (rc = cli_topo_chip_run("scalesim", o->topology, tp, &e->chip, TPU_FIDELITY_TIMING, 0, NULL, &e->run)))
    return rc;
  const tpu_chip_config *c = &e->chip;
  const double pes = (double)c->mxu.rows * c->mxu.cols * c->mxus_per_core;
  for (int i = 0; i < tp->n; i++) {
    const cli_topo_layer *ly = &e->run.layers[i];
    uint64_t busy = 0;
    for (int k = 0; k < TPU_SIM_NSTALL; k++) busy += tpu_sim_stall_busy(k) ? ly->stall.cycles[k] : 0;
    ss_row *r = &rows[i];
    tpu_mxu_scalesim_layer((int)cfg->rows, (int)cfg->cols, cfg->dataflow, tp->layers[i].m, tp->layers[i].n,
                           tp->layers[i].k, &r->s);
    r->cycles = ly->cycles;
    r->stall = ly->cycles - busy / (uint64_t)c->cores;
    r->s.overall_util_pct = 100.0 * (double)r->s.macs / ((double)ly->cycles * pes * c->cores);
    r->s.compute_util_pct = busy ? 100.0 * (double)r->s.macs / ((double)busy * pes) : 0;
  }
  return 0;
}

/* The engine's figures added to the --json report: the chip, its cores,
** the stall table per layer and in total, HBM bytes and the bound. 0 or -1. */
static int engine_json(json_t *j, const ss_engine *e) {
  const cli_topo_run *r = &e->run;
  json_t *layers = json_object_get(j, "layers");
  int bad = json_object_set_new(j, "chip", json_string(e->chip.name)) ||
            json_object_set_new(j, "cores", json_integer(e->chip.cores)) ||
            json_object_set_new(j, "stall", cli_sim_stalls_json(&r->stall)) ||
            json_object_set_new(j, "hbm_bytes", cli_json_real(r->hbm_bytes)) ||
            json_object_set_new(j, "bound", json_string(cli_topo_bound(r)));
  for (int i = 0; !bad && i < r->n; i++) {
    json_t *l = json_array_get(layers, (size_t)i);
    bad = !l || json_object_set_new(l, "stall", cli_sim_stalls_json(&r->layers[i].stall)) ||
          json_object_set_new(l, "hbm_bytes", cli_json_real(r->layers[i].hbm_bytes)) ||
          json_object_set_new(l, "bound", json_string(r->layers[i].bound)) ||
          cli_topo_operand_json(l, &r->layers[i]);
  }
  return bad ? -1 : 0;
}

/* The text report's lines on the engine: where the core-cycles went. */
static void engine_text(const ss_engine *e) {
  const cli_topo_run *r = &e->run;
  printf("chip engine: %s, %d core%s (HBM, DMA, double-buffered VMEM); core-cycles:", e->chip.name, e->chip.cores,
         e->chip.cores > 1 ? "s" : "");
  const double tot = (double)r->cycles * e->chip.cores;
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    if (r->stall.cycles[k]) printf(" %s %.1f%%", tpu_sim_stall_name(k), 100.0 * (double)r->stall.cycles[k] / tot);
  printf("; %s-bound\n", cli_topo_bound(r));
}
/* }================================================================== */

/* Python's repr of a float (the shortest text that reads back the same),
** as SCALE-Sim writes its percentages. */
static void py_float(tpu_text *t, double x) {
  char buf[40];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    if (strtod(buf, NULL) == x) break;
  }
  const int e10 = x == 0.0 ? 0 : atoi(strchr(buf, 'e') + 1);
  if (e10 < -4 || e10 >= 16) { tpu_text_printf(t, "%s", buf); return; }
  const int places = p - 1 - e10 > 0 ? p - 1 - e10 : 0;
  snprintf(buf, sizeof buf, "%.*f", places, x);
  tpu_text_printf(t, "%s%s", buf, strchr(buf, '.') ? "" : ".0");
}

/* SCALE-Sim's DRAM columns of BANDWIDTH_REPORT.csv (header when r is
** NULL), before the row's end. */
static void dram_columns(tpu_text *bw, const ss_row *r) {
  if (!r) {
    tpu_text_printf(bw, " Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,");
    return;
  }
  for (int k = 0; k < 3; k++) { tpu_text_printf(bw, " "); py_float(bw, r->mem.dram_bw[k]); tpu_text_printf(bw, ","); }
}

/* SCALE-Sim's DETAILED_ACCESS_REPORT.csv: per operand the first and last
** cycle and the words, SRAM then DRAM (cycles printed as its floats). */
static void detail_report(const cli_ss_topology *tp, const ss_row *rows, tpu_text *d) {
  static const char *const what[6] = { "SRAM IFMAP", "SRAM Filter", "SRAM OFMAP", "DRAM IFMAP", "DRAM Filter",
                                       "DRAM OFMAP" };
  tpu_text_printf(d, "LayerID,");
  for (int k = 0; k < 6; k++)
    tpu_text_printf(d, " %s Start Cycle, %s Stop Cycle, %s %s,", what[k], what[k], what[k],
                    k % 3 == 2 ? "Writes" : "Reads");
  tpu_text_printf(d, "\n");
  for (int i = 0; i < tp->n; i++) {
    tpu_text_printf(d, "%d,", i);
    for (int k = 0; k < 6; k++) {
      const tpu_mxu_ss_access *a = k < 3 ? &rows[i].mem.sram[k] : &rows[i].mem.dram[k - 3];
      tpu_text_printf(d, " %lld.0, %lld.0, %llu,", (long long)a->start, (long long)a->stop,
                      (unsigned long long)a->count);
    }
    tpu_text_printf(d, "\n");
  }
}

static void reports(const cli_ss_topology *tp, const ss_row *rows, tpu_text *cr, tpu_text *bw) {
  tpu_text_printf(cr, "LayerID, Total Cycles, Stall Cycles, Overall Util %%, Mapping Efficiency %%, "
                  "Compute Util %%,\n");
  tpu_text_printf(bw, "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW,");
  if (tp->n && rows[0].has_mem) dram_columns(bw, NULL);
  tpu_text_printf(bw, "\n");
  for (int i = 0; i < tp->n; i++) {
    const ss_row *r = &rows[i];
    const double c = (double)r->cycles;
    tpu_text_printf(cr, "%d, %llu, %llu, ", i, (unsigned long long)r->cycles,
                    (unsigned long long)(r->has_mem ? r->mem.stall_cycles : r->stall));
    const double pct[3] = { r->s.overall_util_pct, r->s.mapping_eff_pct, r->s.compute_util_pct };
    for (int k = 0; k < 3; k++) { py_float(cr, pct[k]); tpu_text_printf(cr, ", "); }
    cr->n -= 1;                                       /* SCALE-Sim ends a row with "," */
    tpu_text_printf(cr, "\n");
    tpu_text_printf(bw, "%d, ", i);
    const double b[3] = { (double)r->s.ifmap_sram_reads / c, (double)r->s.filter_sram_reads / c,
                          (double)r->s.ofmap_sram_writes / c };
    for (int k = 0; k < 3; k++) { py_float(bw, b[k]); tpu_text_printf(bw, ", "); }
    bw->n -= 2;
    tpu_text_printf(bw, ",");
    if (r->has_mem) dram_columns(bw, r);
    tpu_text_printf(bw, "\n");
  }
}

/* The run's directory, named after what ran, so that runs of one config
** with other dataflows or models sit side by side instead of overwriting
** each other. SCALE-Sim names a run by the config's run_name, which by its
** own convention ends in the dataflow (GoogleTPU_v1_ws,
** scale_example_run_32x32_os; its test script renames the run when it
** changes the dataflow): a --dataflow that differs from the config's
** replaces that ending, or adds one. --compat scalesim then writes where
** SCALE-Sim would; tpusim's own models add theirs: "_tpusim" for its MXU,
** "_CHIP_Ncores" for the chip engine. Can't fail (names are cut at the
** buffer's end). */
static void run_dir_name(const cli_ss_config *cfg, const ss_opts *o, tpu_mxu_dataflow cfg_df, char *out,
                         size_t size) {
  const char *name = cfg->run_name;
  size_t n = strlen(name);
  if (cfg->dataflow != cfg_df) {
    const char *df = tpu_mxu_dataflow_name(cfg_df);
    if (n > 3 && name[n - 3] == '_' && !strcmp(name + n - 2, df)) n -= 3;
    snprintf(out, size, "%.*s_%s", (int)n, name, tpu_mxu_dataflow_name(cfg->dataflow));
  } else {
    snprintf(out, size, "%s", name);
  }
  n = strlen(out);
  if (o->engine)
    snprintf(out + n, size - n, "_%s_%dcores", o->engine->chip.name, o->engine->chip.cores);
  else if (!o->compat)
    snprintf(out + n, size - n, "_tpusim");
  for (char *c = out; *c; c++)     /* a chip's name may come from a file */
    if (*c == '/' || *c == '\\' || *c == ' ') *c = '_';
}

static int write_reports(const ss_opts *o, const cli_ss_topology *tp, const ss_row *rows, const char *run_dir) {
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/%s", o->logdir, run_dir);
  if (mkdir(o->logdir, 0777) != 0 && errno != EEXIST)
    return cli_runtime_error("scalesim", "%s: cannot create: %s", o->logdir, strerror(errno));
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return cli_runtime_error("scalesim", "%s: cannot create: %s", dir, strerror(errno));
  tpu_text cr = { 0 }, bw = { 0 }, da = { 0 };
  reports(tp, rows, &cr, &bw);
  const int nfiles = tp->n && rows[0].has_mem ? 3 : 2;
  if (nfiles == 3) detail_report(tp, rows, &da);
  int rc = 0;
  if (cr.oom || bw.oom || da.oom) rc = cli_runtime_error("scalesim", "out of memory");
  const tpu_text *t[3] = { &cr, &bw, &da };
  const char *names[3] = { "COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv" };
  for (int k = 0; k < nfiles && !rc; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    if (tpu_write_atomic(path, t[k]->s, t[k]->n))
      rc = cli_runtime_error("scalesim", "%s: cannot write: %s", path, strerror(errno));
  }
  tpu_free(cr.s);
  tpu_free(bw.s);
  tpu_free(da.s);
  return rc;
}

/* SCALE-Sim's memory side of a layer in --json (compat mode, CALC). */
static json_t *mem_json(json_t *j, const ss_row *r) {
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

static json_t *layer_json(const cli_ss_layer *ly, const ss_row *r) {
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

static int report(const cli_ss_config *cfg, const ss_opts *o, const cli_ss_topology *tp, const ss_row *rows,
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

int cli_cmd_scalesim(int argc, char **argv) {
  ss_opts o;
  cli_ss_config cfg;
  const int parsed = parse(argc, argv, &o);          /* CLI_RUN, or the status (0 after --help) */
  int rc = parsed == CLI_RUN ? cli_ss_read_config("scalesim", o.config, &cfg) : parsed;
  if (parsed != CLI_RUN || rc) return rc;
  const tpu_mxu_dataflow cfg_df = cfg.dataflow;
  if (o.df_set) cfg.dataflow = o.df;
  cli_ss_topology tp;
  if ((rc = cli_ss_read_topology("scalesim", o.topology, o.gemm, &tp))) return rc;
  ss_row *rows = tpu_calloc((size_t)tp.n, sizeof *rows);
  uint64_t total = 0;
  ss_engine e = { .run = { 0 } };
  if (!rows) rc = cli_runtime_error("scalesim", "out of memory");
  else if (o.chip && !(rc = engine_rows(&cfg, &o, &tp, &e, rows))) {
    o.engine = &e;
    total = e.run.cycles;
  }
  for (int i = 0; i < tp.n && !rc && !o.chip; i++) {
    rc = run_layer(&cfg, &o, &tp.layers[i], &rows[i]);
    total += rows[i].cycles;
  }
  char run_dir[256];
  run_dir_name(&cfg, &o, cfg_df, run_dir, sizeof run_dir);
  if (!rc) rc = write_reports(&o, &tp, rows, run_dir);
  if (!rc) rc = report(&cfg, &o, &tp, rows, total, run_dir);
  tpu_free(rows);
  cli_topo_run_free(&e.run);
  cli_ss_topology_free(&tp);
  return rc;
}
