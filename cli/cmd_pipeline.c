/*
** cmd_pipeline.c -- `tpusim pipeline`: runs the host-time model of an input
** pipeline description against a consumer of a given step time and prints
** the total time, the consumer's wait per step, the input-bound share and a
** text timeline (one row per stage or worker, like the tf.data guide's
** diagrams). With --real it also runs the real pipeline for the same number
** of steps and reports its measured images/s.
*/
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datafeed/df.h"
#include "cli/cli_int.h"

static const char HELP[] =
  "usage: tpusim pipeline --config FILE.json [--steps N] [--step-time S] [--host-cores N]\n"
  "                       [--timeline-steps N] [--width COLS] [--real] [--json]\n\n"
  "Simulates the input pipeline described in FILE.json (docs/DATAFEED.md) with its\n"
  "modeled costs against a consumer (the accelerator) whose step takes S seconds,\n"
  "and prints the total time, the consumer's mean and maximum wait per step, the\n"
  "share of time input-bound and a timeline of the first steps. Values given as\n"
  "\"autotune\" are chosen by the model within the host-core budget and reported.\n\n"
  "  --config FILE       the pipeline description (required)\n"
  "  --steps N           consumer steps (default: consumer.steps of the file, else 20)\n"
  "  --step-time S       consumer step time in seconds (default: consumer.step_time_s)\n"
  "  --host-cores N      core budget for autotune (default: host.cores, else 8)\n"
  "  --timeline-steps N  steps drawn in the timeline (default 4, 0 = none)\n"
  "  --width COLS        timeline width in columns (default 72)\n"
  "  --real              also run the real pipeline for the same steps (reads the data)\n\n";

static const char LEGEND[] =
  "legend: O open  R read  M map  X shuffle  B batch  C cache read  P prefetch  S serialize/put\n"
  "        W consumer waits  D deserialize/get  T train step  . idle\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Draws rows x width characters: each column shows the interval covering
** most of it. */
static void draw(const tpu_df_model *m, const tpu_df_interval *extra, size_t nextra, double t_end, int width, FILE *to) {
  int rows = tpu_df_model_rows(m);
  size_t n;
  const tpu_df_interval *iv = tpu_df_model_intervals(m, &n);
  if (t_end <= 0 || rows <= 0) return;
  char *cell = tpu_malloc((size_t)rows * (size_t)width);
  double *cov = tpu_calloc((size_t)rows * (size_t)width, sizeof *cov);
  if (!cell || !cov) { tpu_free(cell); tpu_free(cov); return; }
  memset(cell, '.', (size_t)rows * (size_t)width);
  double dt = t_end / width;
  for (size_t j = 0; j < n + nextra; j++) {
    const tpu_df_interval *x = j < n ? &iv[j] : &extra[j - n];
    if (x->start_s >= t_end) continue;
    int c0 = (int)(x->start_s / dt), c1 = (int)(x->end_s / dt);
    if (c1 >= width) c1 = width - 1;
    for (int c = c0 < 0 ? 0 : c0; c <= c1; c++) {
      double a = fmax(x->start_s, c * dt), b = fmin(x->end_s, (c + 1) * dt);
      size_t k = (size_t)x->row * (size_t)width + (size_t)c;
      if (b - a > cov[k]) { cov[k] = b - a; cell[k] = x->kind; }
    }
  }
  for (int r = 0; r < rows; r++) {
    /* rows that did nothing in the window (zero-cost stages) are left out */
    bool any = r == rows - 1;
    for (int c = 0; c < width && !any; c++) any = cell[(size_t)r * (size_t)width + (size_t)c] != '.';
    if (any) fprintf(to, "  %-18s|%.*s|\n", tpu_df_model_row_name(m, r), width, cell + (size_t)r * (size_t)width);
  }
  tpu_free(cell);
  tpu_free(cov);
}

int cli_cmd_pipeline(int argc, char **argv) {
  const char *cmd = "pipeline";
  cli_common c;
  cli_common_init(&c);
  const char *config = NULL;
  long steps = -1, host_cores = -1, tl_steps = 4, width = 72;
  double step_time = -1;
  bool real = false;
  char e[256];
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(argc, argv, &i, &c, cmd);
    if (r > 1) return r;
    if (r == 1) continue;
    const char *v;
    if ((r = cli_opt(argc, argv, &i, "--config", &v))) { if (r < 0) return cli_usage_error(cmd, "--config: missing value (a JSON file)"); config = v; continue; }
    if ((r = cli_opt(argc, argv, &i, "--steps", &v))) {
      if (r < 0 || !cli_parse_long(v, 1, 10000000, &steps, "--steps", e, sizeof e)) return cli_usage_error(cmd, "%s", r < 0 ? "--steps: missing value" : e);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--host-cores", &v))) {
      if (r < 0 || !cli_parse_long(v, 1, 1024, &host_cores, "--host-cores", e, sizeof e)) return cli_usage_error(cmd, "%s", r < 0 ? "--host-cores: missing value" : e);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--timeline-steps", &v))) {
      if (r < 0 || !cli_parse_long(v, 0, 1000, &tl_steps, "--timeline-steps", e, sizeof e)) return cli_usage_error(cmd, "%s", r < 0 ? "--timeline-steps: missing value" : e);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--width", &v))) {
      if (r < 0 || !cli_parse_long(v, 10, 1000, &width, "--width", e, sizeof e)) return cli_usage_error(cmd, "%s", r < 0 ? "--width: missing value" : e);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--step-time", &v))) {
      if (r < 0 || !cli_parse_double(v, 0, 1e6, &step_time, "--step-time", e, sizeof e)) return cli_usage_error(cmd, "%s", r < 0 ? "--step-time: missing value" : e);
      continue;
    }
    if (cli_opt(argc, argv, &i, "--real", NULL) == 1) { real = true; continue; }
    return cli_usage_error(cmd, "unknown option '%s' (tpusim pipeline --help)", argv[i]);
  }
  if (c.help) { fputs(HELP, stdout); fputs(CLI_COMMON_HELP, stdout); return 0; }
  if (!config) return cli_usage_error(cmd, "--config FILE.json is required (tpusim pipeline --help)");
  char err[1024];
  tpu_df_spec *spec;
  tpu_status st = tpu_df_spec_load(config, &spec, err, sizeof err);
  if (st != TPU_OK) return st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
  /* the file's consumer and host blocks, overridden by the flags */
  tpu_df_model_options mo = tpu_df_model_options_default();
  tpu_df_model_result res;
  double step_s;
  int64_t nsteps;
  int cores;
  tpu_df_spec_consumer(spec, &step_s, &nsteps, &cores);
  if (step_time >= 0) step_s = step_time;
  if (steps > 0) nsteps = steps;
  if (host_cores > 0) cores = (int)host_cores;
  mo.host_cores = cores;
  mo.timeline_steps = tl_steps;
  char report[2048] = "";
  int rc = 0;
  tpu_df_model *m = NULL;
  json_t *o = NULL;
  if ((st = tpu_df_model_autotune(spec, &mo, step_s, nsteps, report, sizeof report, err, sizeof err)) != TPU_OK ||
      (st = tpu_df_model_create(spec, &mo, &m, err, sizeof err)) != TPU_OK) {
    rc = st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s: %s", config, err);
    goto out;
  }
  /* the same run as tpu_df_model_run, kept here to draw the timeline */
  double t = 0, wsum = 0, wmax = 0, tl_end = 0;
  tpu_df_interval tsteps[1000];
  int64_t k = 0;
  for (; k < nsteps; k++) {
    double got = tpu_df_model_next(m, t);
    if (got < 0) break;
    double w = got - t;
    wsum += w;
    if (w > wmax) wmax = w;
    if (k < tl_steps) {
      tsteps[k] = (tpu_df_interval){ tpu_df_model_rows(m) - 1, got, got + step_s, 'T' };
      tl_end = got + step_s;
    }
    t = got + step_s;
  }
  res.total_s = t; res.steps = k; res.wait_mean_s = k ? wsum / (double)k : 0; res.wait_max_s = wmax;
  res.input_bound_share = t > 0 ? wsum / t : 0;
  double real_ips = -1, real_s = 0;
  int64_t real_images = 0;
  if (real) {
    tpu_df *df;
    double t0 = now_s();
    if ((st = tpu_df_open(spec, NULL, &df, err, sizeof err)) != TPU_OK) {
      rc = st == TPU_ERR_NOMEM || st == TPU_ERR_RUNTIME ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
      goto out;
    }
    tpu_df_batch b;
    for (int64_t j = 0; j < nsteps; j++) {
      if ((st = tpu_df_next(df, &b)) != TPU_OK) {
        rc = cli_usage_error(cmd, "%s", tpu_df_errmsg(df));
        tpu_df_close(df);
        goto out;
      }
      if (b.size == 0) break;
      real_images += b.size;
    }
    real_s = now_s() - t0;
    tpu_df_close(df);
    real_ips = real_s > 0 ? (double)real_images / real_s : 0;
  }
  if (c.json) {
    o = json_object();
    json_object_set_new(o, "config", json_string(config));
    json_object_set_new(o, "steps", json_integer(res.steps));
    json_object_set_new(o, "step_time_s", json_real(step_s));
    json_object_set_new(o, "total_s", json_real(res.total_s));
    json_object_set_new(o, "wait_mean_s", json_real(res.wait_mean_s));
    json_object_set_new(o, "wait_max_s", json_real(res.wait_max_s));
    json_object_set_new(o, "input_bound_share", json_real(res.input_bound_share));
    json_object_set_new(o, "host_cores", json_integer(cores));
    json_t *at = json_object();
    for (char *line = report; *line;) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = 0;
      char key[128];
      long long val;
      if (sscanf(line, "%127s = %lld", key, &val) == 2) json_object_set_new(at, key, json_integer(val));
      if (!nl) break;
      line = nl + 1;
    }
    json_object_set_new(o, "autotune", at);
    json_t *rows = json_array(), *ivs = json_array();
    for (int r = 0; r < tpu_df_model_rows(m); r++) json_array_append_new(rows, json_string(tpu_df_model_row_name(m, r)));
    size_t n;
    const tpu_df_interval *iv = tpu_df_model_intervals(m, &n);
    size_t nt = (size_t)(res.steps < tl_steps ? res.steps : tl_steps);
    for (size_t i = 0; i < n + nt; i++) {
      const tpu_df_interval *x = i < n ? &iv[i] : &tsteps[i - n];
      char kch[2] = { x->kind, 0 };
      json_array_append_new(ivs, json_pack("[i,f,f,s]", x->row, x->start_s, x->end_s, kch));
    }
    json_object_set_new(o, "timeline", json_pack("{s:o,s:o}", "rows", rows, "intervals", ivs));
    if (real) json_object_set_new(o, "real", json_pack("{s:I,s:f,s:f}", "images", (json_int_t)real_images, "seconds", real_s, "images_per_s", real_ips));
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    putchar('\n');
  } else {
    printf("pipeline     %s\n", config);
    printf("consumer     %lld steps of %.6g s\n", (long long)res.steps, step_s);
    if (*report) {
      printf("autotune     (host-core budget %d)\n", cores);
      for (char *line = report; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        printf("  %s\n", line);
        if (!nl) break;
        line = nl + 1;
      }
    }
    printf("total time   %.6g s\n", res.total_s);
    printf("wait/step    mean %.6g s, max %.6g s\n", res.wait_mean_s, res.wait_max_s);
    printf("input-bound  %.1f %% of the time\n", 100.0 * res.input_bound_share);
    if (real) printf("real run     %lld images in %.3f s: %.0f images/s\n", (long long)real_images, real_s, real_ips);
    if (tl_steps > 0 && tl_end > 0) {
      printf("timeline     first %ld steps, 0 .. %.6g s, one column = %.3g s\n", tl_steps, tl_end, tl_end / (double)width);
      draw(m, tsteps, (size_t)(res.steps < tl_steps ? res.steps : tl_steps), tl_end, (int)width, stdout);
      fputs(LEGEND, stdout);
    }
  }
out:
  json_decref(o);
  tpu_df_model_destroy(m);
  tpu_df_spec_destroy(spec);
  return rc;
}
