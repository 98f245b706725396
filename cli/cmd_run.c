/*
** cmd_run.c -- `tpusim run`: runs a hand-written JSON program (the format
** of docs/PROGRAMS.md), or a SCALE-Sim topology's layers as GEMMs
** (--topology, run_topology.c), on the chip engine and reports where every
** core's cycles went.
*/
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim run --program FILE.json [options]\n"
  "       tpusim run --topology FILE.csv [--input-type conv|gemm] [--cores C] [options]\n\n"
  "Runs a program (buffers and ops per core, see docs/PROGRAMS.md) on the chip and\n"
  "reports the cycles and, for every core, the stall breakdown: mxu_busy,\n"
  "vpu_busy, weight_load, infeed_wait, memory_wait, collective_wait, idle.\n"
  "With --topology, each layer of a SCALE-Sim topology is one GEMM with its\n"
  "operands in HBM, split along M over the cores, the layers one after another\n"
  "(docs/SCALESIM.md); reported per layer and in total.\n\n"
  "  --program FILE     the JSON program\n"
  "  --topology FILE    a SCALE-Sim topology CSV instead of a program\n"
  "  --input-type T     with --topology: conv (default) or gemm (name, M, N, K)\n"
  "  --cores C          with --topology: run on C cores of the chip (default: all)\n"
  "  --level L          tile (default for programs: cycles and values) or timing (cycles\n"
  "                     only; the default with --topology, whose layers carry no values)\n"
  "  --threads N        host threads (default: the host's cores); results do not depend on it\n"
  "  --trace FILE       write a Chrome/Perfetto trace (open in ui.perfetto.dev or chrome://tracing)\n"
  "  --print NAME       print buffer NAME's final values on every core (repeatable; tile level)\n";

#define CMD "run"
#define MAX_PRINT 16

enum { OPT_PRINT = 1, OPT_LEVEL, OPT_INPUT };

typedef struct run_opts {
  cli_common com;
  const char *program, *trace, *topology;
  tpu_fidelity level;
  bool level_set, gemm, input_set;   /* --level given; --input-type gemm; --input-type given */
  long threads, cores;
  int nprint;
  const char *prints[MAX_PRINT];     /* --print NAME, in order */
} run_opts;

static int option(void *ud, int id, const char *v) {
  run_opts *o = ud;
  if (id == OPT_PRINT && o->nprint == MAX_PRINT) return cli_usage_error(CMD, "--print: at most %d buffers", MAX_PRINT);
  if (id == OPT_PRINT) o->prints[o->nprint++] = v;
  if (id == OPT_INPUT) { o->input_set = true; return cli_ss_input_type(CMD, v, &o->gemm); }
  if (id == OPT_LEVEL) o->level_set = true;
  if (id == OPT_LEVEL && (!tpu_fidelity_parse(v, &o->level) || o->level == TPU_FIDELITY_PE))
    return cli_usage_error(CMD, "--level: expected tile or timing, got '%s'", v);
  return 0;
}

static int parse(int argc, char **argv, run_opts *o) {
  *o = (run_opts){ .level = TPU_FIDELITY_TILE };
  const cli_opt opts[] = {
    CLI_STR("program", &o->program, "--program needs a file name"),
    CLI_STR("trace", &o->trace, "--trace needs a file name"),
    CLI_ID("print", OPT_PRINT, "--print needs a buffer name"),
    CLI_LONG("threads", &o->threads, 1, 1024),
    CLI_ID("level", OPT_LEVEL, NULL),
    CLI_STR("topology", &o->topology, "--topology needs a topology .csv file"),
    CLI_ID("input-type", OPT_INPUT, NULL),
    CLI_LONG("cores", &o->cores, 1, TPU_SIM_GEMM_MAX_CORES),
  };
  const int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), &o->com, option, o);
  if (rc) return rc;
  if (o->com.help) return cli_help(HELP, NULL);
  if (!o->program == !o->topology)
    return cli_usage_error(CMD, "give --program FILE.json or --topology FILE.csv, one of them (tpusim run --help)");
  if (o->topology && o->nprint) return cli_usage_error(CMD, "--print: a topology's layers have no named buffers");
  if (o->program && (o->input_set || o->cores))
    return cli_usage_error(CMD, "--input-type and --cores go with --topology (a program says its own cores)");
  if (o->topology && !o->level_set) o->level = TPU_FIDELITY_TIMING;
  if (o->nprint && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--print: the timing level computes no values; use --level tile");
  return CLI_RUN;
}

/* The program on the chip, and what running it gave. */
typedef struct run_state {
  tpu_chip_config chip;
  tpu_sim_program *p;
  tpu_sim_result *res;
  double wall;
} run_state;

static int load(const run_opts *o, run_state *r) {
  int rc = cli_load_chip(CMD, &o->com, &r->chip);
  if (rc || (rc = cli_load_program(CMD, o->program, r->chip.cores, &r->p))) return rc;
  for (int k = 0; k < o->nprint; k++)
    for (int core = 0; core < r->chip.cores; core++)
      if (!tpu_sim_buffer_find(r->p, core, o->prints[k]))
        return cli_usage_error(CMD, "--print %s: no buffer of that name on core %d of %s", o->prints[k], core,
                               o->program);
  return 0;
}

static int run(const run_opts *o, run_state *r) {
  tpu_sim_options opt = { .level = o->level, .threads = (int)o->threads, .trace = o->trace != NULL };
  const double t0 = cli_now_s();
  tpu_status st = tpu_sim_run(&r->chip, r->p, &opt, &r->res);
  r->wall = cli_now_s() - t0;
  /* a program that does not fit the chip or is inconsistent is bad input */
  if (st != TPU_OK) return cli_fail(CMD, st, "%s: %s", o->program, tpu_sim_program_error(r->p));
  if (o->trace && cli_sim_write_trace(r->res, o->trace))
    return cli_runtime_error(CMD, "--trace %s: cannot write: %s", o->trace, strerror(errno));
  return 0;
}

/* --print: each named buffer's final values, one array per core. */
static json_t *buffers_json(const run_opts *o, const run_state *r) {
  json_t *bufs = json_object();
  for (int k = 0; k < o->nprint; k++) {
    json_t *per = json_array();
    for (int core = 0; core < r->chip.cores; core++) {
      const int h = tpu_sim_buffer_find(r->p, core, o->prints[k]);
      const float *v = tpu_sim_result_buffer(r->res, core, h);
      json_t *a = json_array();
      const size_t n = (size_t)tpu_sim_buffer_elems(r->p, core, h);
      for (size_t e = 0; e < n; e++) json_array_append_new(a, cli_json_real((double)v[e]));
      json_array_append_new(per, a);
    }
    json_object_set_new(bufs, o->prints[k], per);
  }
  return bufs;
}

/* The --json report; NULL when out of memory. */
static json_t *report_json(const run_opts *o, const run_state *r, int ops) {
  json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i}", "chip", r->chip.name, "program", o->program, "level",
                        tpu_fidelity_name(o->level), "cores", r->chip.cores, "ops", ops);
  if (!j || cli_sim_report_json(j, r->res, &r->chip)) {
    json_decref(j);
    return NULL;
  }
  json_object_set_new(j, "wall_s", cli_json_real(r->wall));
  if (o->nprint) json_object_set_new(j, "buffers", buffers_json(o, r));
  if (o->trace) json_object_set_new(j, "trace", json_string(o->trace));
  return j;
}

static int report_text(const run_opts *o, const run_state *r, int ops) {
  printf("run %s on %s (%d core%s, level %s, %d ops)\n", o->program, r->chip.name, r->chip.cores,
         r->chip.cores > 1 ? "s" : "", tpu_fidelity_name(o->level), ops);
  cli_sim_report_text(stdout, r->res, &r->chip, cli_sim_has_collective(r->p));
  for (int k = 0; k < o->nprint; k++)
    for (int core = 0; core < r->chip.cores; core++) {
      const int h = tpu_sim_buffer_find(r->p, core, o->prints[k]);
      const float *v = tpu_sim_result_buffer(r->res, core, h);
      const int64_t n = tpu_sim_buffer_elems(r->p, core, h);
      printf("  %s[core %d] =", o->prints[k], core);
      for (int64_t e = 0; e < n && e < 8; e++) printf(" %.9g", (double)v[e]);
      printf("%s\n", n > 8 ? " ..." : "");
    }
  if (o->trace) printf("  trace             %s\n", o->trace);
  printf("  wall time         %.3f s\n", r->wall);
  return 0;
}

/* One run on parsed options (reentrant: sweep points run on several
** threads). With --json *report gets the report, else the text is printed. */
static int run_opts_run(const void *op, json_t **report, tpu_sweep_row *row) {
  const run_opts *o = op;
  *report = NULL;
  run_state r = { .p = NULL };
  int rc;
  if (o->topology) {
    const cli_run_topology_opts t = { o->topology, o->gemm, o->level, (int)o->cores, (int)o->threads, o->trace,
                                      o->com.json };
    return (rc = cli_load_chip(CMD, &o->com, &r.chip)) ? rc : cli_run_topology(&r.chip, &t, report, row);
  }
  if (!(rc = load(o, &r)) && !(rc = run(o, &r))) {
    int ops = 0;
    for (int core = 0; core < r.chip.cores; core++) ops += tpu_sim_program_ops(r.p, core);
    const uint64_t cycles = tpu_sim_result_cycles(r.res);
    tpu_sim_stalls s;
    tpu_sim_result_stalls(r.res, -1, -1, &s);
    cli_run_row(row, &r.chip, cycles, ops, &s);
    if (!o->com.json) rc = report_text(o, &r, ops);
    else if (!(*report = report_json(o, &r, ops))) rc = cli_runtime_error(CMD, "out of memory");
  }
  tpu_sim_result_destroy(r.res);
  tpu_sim_program_destroy(r.p);
  return rc;
}

/* The command as a sweep point (sweep/sweep.h) and as itself: its CSV
** columns (filled by cli_run_row), then the stall parts. */
static const tpu_sweep_field FIELDS[] = {
  { "cycles", TPU_SWEEP_INT }, { "time_s", TPU_SWEEP_REAL }, { "ops", TPU_SWEEP_INT },
};
static int parse_point(int argc, char **argv, void *o) { return parse(argc, argv, o); }
static int check_point(const void *o, char *memo, size_t cap) {
  return cli_sweep_check_chip(&((const run_opts *)o)->com, memo, cap);
}
const tpu_sweep_cmd cli_run_cmd = { CMD, sizeof(run_opts), false, parse_point, check_point, run_opts_run, FIELDS,
                                    (int)(sizeof FIELDS / sizeof *FIELDS), cli_stall_fields, CLI_STALL_FIELDS };

void cli_run_row(tpu_sweep_row *row, const tpu_chip_config *chip, uint64_t cycles, int ops,
                 const tpu_sim_stalls *s) {
  double cyc[TPU_SIM_NSTALL], share[TPU_SIM_NSTALL], sum = 0;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) sum += cyc[k] = (double)s->cycles[k];
  for (int k = 0; k < TPU_SIM_NSTALL; k++) share[k] = sum > 0 ? cyc[k] / sum : 0.0;
  tpu_sweep_row_int(row, "cycles", (int64_t)cycles);
  tpu_sweep_row_real(row, "time_s", (double)cycles / (chip->clock_mhz * 1e6));
  if (ops < 0) tpu_sweep_row_null(row, "ops");
  else tpu_sweep_row_int(row, "ops", ops);
  cli_sweep_stalls(row, cyc, share);
}

int cli_cmd_run(int argc, char **argv) {
  return cli_point_main(&cli_run_cmd, argc, argv, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
}
