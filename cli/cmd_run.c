/*
** cmd_run.c -- `tpusim run`: runs a hand-written JSON program (the format
** of docs/PROGRAMS.md) on the chip engine and reports where every core's
** cycles went.
*/
#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim run --program FILE.json [options]\n\n"
  "Runs a program (buffers and ops per core, see docs/PROGRAMS.md) on the chip and\n"
  "reports the cycles and, for every core, the stall breakdown: mxu_busy,\n"
  "vpu_busy, infeed_wait, memory_wait, collective_wait, idle.\n\n"
  "  --program FILE     the JSON program (required)\n"
  "  --level L          tile (default: cycles and values) or timing (cycles only)\n"
  "  --threads N        host threads (default: the host's cores); results do not depend on it\n"
  "  --trace FILE       write a Chrome/Perfetto trace (open in ui.perfetto.dev or chrome://tracing)\n"
  "  --print NAME       print buffer NAME's final values on every core (repeatable; tile level)\n";

#define MAX_PRINT 16

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_cmd_run(int argc, char **argv) {
  const char *cmd = "run";
  cli_common c;
  cli_common_init(&c);
  const char *prog_path = NULL, *trace_path = NULL, *prints[MAX_PRINT];
  int nprint = 0;
  long threads = 0;
  tpu_fidelity level = TPU_FIDELITY_TILE;
  char err[2048];
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(argc, argv, &i, &c, cmd);
    if (r > 1) return r;
    if (r == 1) continue;
    const char *v;
    if ((r = cli_opt(argc, argv, &i, "--program", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--program needs a file name");
      prog_path = v;
    } else if ((r = cli_opt(argc, argv, &i, "--trace", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--trace needs a file name");
      trace_path = v;
    } else if ((r = cli_opt(argc, argv, &i, "--print", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--print needs a buffer name");
      if (nprint == MAX_PRINT) return cli_usage_error(cmd, "--print: at most %d buffers", MAX_PRINT);
      prints[nprint++] = v;
    } else if ((r = cli_opt(argc, argv, &i, "--threads", &v))) {
      if (r < 0 || !cli_parse_long(v, 1, 1024, &threads, "--threads", err, sizeof err))
        return cli_usage_error(cmd, "%s", r < 0 ? "--threads needs a value" : err);
    } else if ((r = cli_opt(argc, argv, &i, "--level", &v))) {
      if (r < 0 || !tpu_fidelity_parse(v, &level) || level == TPU_FIDELITY_PE)
        return cli_usage_error(cmd, "--level: expected tile or timing, got '%s'", r < 0 ? "" : v);
    } else {
      return cli_usage_error(cmd, "unknown option '%s' (tpusim run --help)", argv[i]);
    }
  }
  if (c.help) { fputs(HELP, stdout); fputs(CLI_COMMON_HELP, stdout); return 0; }
  if (!prog_path) return cli_usage_error(cmd, "--program FILE.json is required (tpusim run --help)");
  if (nprint && level == TPU_FIDELITY_TIMING)
    return cli_usage_error(cmd, "--print: the timing level computes no values; use --level tile");
  tpu_chip_config chip;
  int rc = cli_load_chip(cmd, &c, &chip);
  if (rc) return rc;
  char *text = tpu_read_file(prog_path, NULL);
  if (!text) return cli_usage_error(cmd, "%s: cannot read: %s", prog_path, strerror(errno));
  tpu_sim_program *p = NULL;
  tpu_sim_result *res = NULL;
  json_t *o = NULL;
  tpu_status st = tpu_sim_program_parse(text, prog_path, chip.cores, &p, err, sizeof err);
  tpu_free(text);
  if (st != TPU_OK) {
    rc = st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
    goto out;
  }
  for (int k = 0; k < nprint; k++)
    for (int core = 0; core < chip.cores; core++)
      if (!tpu_sim_buffer_find(p, core, prints[k])) {
        rc = cli_usage_error(cmd, "--print %s: no buffer of that name on core %d of %s", prints[k], core, prog_path);
        goto out;
      }
  tpu_sim_options opt = { .level = level, .threads = (int)threads, .trace = trace_path != NULL };
  double t0 = now_s();
  st = tpu_sim_run(&chip, p, &opt, &res);
  double wall = now_s() - t0;
  if (st != TPU_OK) {
    /* a program that does not fit the chip or is inconsistent is bad input */
    if (st == TPU_ERR_NOMEM || st == TPU_ERR_RUNTIME)
      rc = cli_runtime_error(cmd, "%s: %s", prog_path, tpu_sim_program_error(p));
    else
      rc = cli_usage_error(cmd, "%s: %s", prog_path, tpu_sim_program_error(p));
    goto out;
  }
  if (trace_path && cli_sim_write_trace(res, trace_path)) {
    rc = cli_runtime_error(cmd, "--trace %s: cannot write: %s", trace_path, strerror(errno));
    goto out;
  }
  int ops = 0;
  for (int core = 0; core < chip.cores; core++) ops += tpu_sim_program_ops(p, core);
  if (c.json) {
    o = json_pack("{s:s, s:s, s:s, s:i, s:i}", "chip", chip.name, "program", prog_path, "level",
                  tpu_fidelity_name(level), "cores", chip.cores, "ops", ops);
    if (!o || cli_sim_report_json(o, res, &chip)) { rc = cli_runtime_error(cmd, "out of memory"); goto out; }
    json_object_set_new(o, "wall_s", json_real(wall));
    if (nprint) {
      json_t *bufs = json_object();
      for (int k = 0; k < nprint; k++) {
        json_t *per = json_array();
        for (int core = 0; core < chip.cores; core++) {
          int h = tpu_sim_buffer_find(p, core, prints[k]);
          const float *v = tpu_sim_result_buffer(res, core, h);
          json_t *a = json_array();
          const size_t n = (size_t)tpu_sim_buffer_elems(p, core, h);
          for (size_t e = 0; e < n; e++) json_array_append_new(a, json_real((double)v[e]));
          json_array_append_new(per, a);
        }
        json_object_set_new(bufs, prints[k], per);
      }
      json_object_set_new(o, "buffers", bufs);
    }
    if (trace_path) json_object_set_new(o, "trace", json_string(trace_path));
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    putchar('\n');
  } else {
    printf("run %s on %s (%d core%s, level %s, %d ops)\n", prog_path, chip.name, chip.cores,
           chip.cores > 1 ? "s" : "", tpu_fidelity_name(level), ops);
    cli_sim_report_text(stdout, res, &chip);
    for (int k = 0; k < nprint; k++)
      for (int core = 0; core < chip.cores; core++) {
        int h = tpu_sim_buffer_find(p, core, prints[k]);
        const float *v = tpu_sim_result_buffer(res, core, h);
        int64_t n = tpu_sim_buffer_elems(p, core, h);
        printf("  %s[core %d] =", prints[k], core);
        for (int64_t e = 0; e < n && e < 8; e++) printf(" %.9g", (double)v[e]);
        printf("%s\n", n > 8 ? " ..." : "");
      }
    if (trace_path) printf("  trace             %s\n", trace_path);
    printf("  wall time         %.3f s\n", wall);
  }
  rc = 0;
out:
  json_decref(o);
  tpu_sim_result_destroy(res);
  tpu_sim_program_destroy(p);
  return rc;
}
