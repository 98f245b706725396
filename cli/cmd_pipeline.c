/*
** cmd_pipeline.c -- `tpusim pipeline`: runs the host-time model of an input
** pipeline description against a consumer of a given step time and prints
** the total time, the consumer's wait per step, the input-bound share and a
** text timeline (one row per stage or worker, like the tf.data guide's
** diagrams). With --real it also runs the real pipeline for the same number
** of steps and reports its measured images/s.
*/
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datafeed/df.h"
#include "cli/cli_int.h"

static const char HELP[] =
  "usage: tpusim pipeline --pipeline FILE.json [--steps N] [--epochs E] [--step-time S]\n"
  "                         [--host-cores N] [--timeline-steps N] [--width COLS] [--real]\n"
  "                         [--npy PREFIX] [--measure] [--json]\n\n"
  "Simulates the input pipeline described in FILE.json (docs/DATAFEED.md) with its\n"
  "modeled costs against a consumer (the accelerator) whose step takes S seconds,\n"
  "and prints the total time, the consumer's mean and maximum wait per step, the\n"
  "share of time input-bound with the profiler's verdict (as train prints it) and a\n"
  "timeline of the first steps. Values given as \"autotune\" are chosen by the\n"
  "model within the host-core budget and reported.\n\n"
  "  --pipeline FILE     the pipeline description (required; --config is an alias)\n"
  "  --steps N           consumer steps (default: consumer.steps of the file, else 20;\n"
  "                      with epochs, until the data ends)\n"
  "  --epochs E          fresh iterations of the pipeline, as Keras' fit makes epochs\n"
  "                      (default: consumer.epochs of the file, else 1)\n"
  "  --step-time S       consumer step time in seconds (default: consumer.step_time_s)\n"
  "  --host-cores N      core budget for autotune (default: host.cores, else 8)\n"
  "  --timeline-steps N  steps drawn in the timeline (default 4, 0 = none)\n"
  "  --width COLS        timeline width in columns (default 72)\n"
  "  --real              also run the real pipeline for the same steps (reads the data)\n"
  "  --npy PREFIX        with --real, write what it gave: PREFIX_x.npy (images, N x H x W\n"
  "                      x C) and PREFIX_y.npy (labels, N), float32, in batch order\n"
  "  --measure           also run the stages on host threads spending each modeled cost\n"
  "                      (sleeps, as the tf.data guide's ArtificialDataset) and report\n"
  "                      the measured time beside the model's\n\n";
static const char NOCHIP[] =
  "The pipeline runs on the host: --chip and --set do not apply here (exit 2).";

static const char LEGEND[] =
  "legend: O open  R read  M map  X shuffle  B batch  C cache read  P prefetch  S serialize/put\n"
  "        I iterator made  W consumer waits  D deserialize/get  T train step  . idle\n";

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

#define CMD "pipeline"

typedef struct pl_opts {
  const char *config;
  long steps, epochs, host_cores, tl_steps, width;   /* -1: the file's */
  double step_time;                          /* -1: the file's */
  bool real;
  const char *npy;                           /* --npy PREFIX */
  bool measure;
  cli_common com;
} pl_opts;

static int parse(int argc, char **argv, pl_opts *o) {
  *o = (pl_opts){ .steps = -1, .epochs = -1, .host_cores = -1, .tl_steps = 4, .width = 72, .step_time = -1 };
  const cli_opt opts[] = {
    CLI_STR("pipeline", &o->config, "--pipeline: missing value (a JSON file)"),
    CLI_STR("config", &o->config, "--config: missing value (a JSON file)"),
    { .name = "steps", .kind = CLI_KLONG, .dst = &o->steps, .lo = 1, .hi = 10000000, .missing = "--steps: missing value" },
    CLI_LONG("epochs", &o->epochs, 1, 1000000),
    { .name = "host-cores", .kind = CLI_KLONG, .dst = &o->host_cores, .lo = 1, .hi = 1024,
      .missing = "--host-cores: missing value" },
    { .name = "timeline-steps", .kind = CLI_KLONG, .dst = &o->tl_steps, .lo = 0, .hi = 1000,
      .missing = "--timeline-steps: missing value" },
    { .name = "width", .kind = CLI_KLONG, .dst = &o->width, .lo = 10, .hi = 1000, .missing = "--width: missing value" },
    { .name = "step-time", .kind = CLI_KDOUBLE, .dst = &o->step_time, .dlo = 0, .dhi = 1e6,
      .missing = "--step-time: missing value" },
    CLI_FLAG("real", &o->real),
    CLI_STR("npy", &o->npy, "--npy: missing value (a file name prefix)"),
    CLI_FLAG("measure", &o->measure),
  };
  const int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), &o->com, NULL, NULL);
  if (rc) return rc;
  if (o->com.help) return cli_help(HELP, NOCHIP);
  if (o->com.nsets || cli_chip_given(argc, argv, &o->com))
    return cli_usage_error(CMD, "%s: the pipeline runs on the host and simulates no chip; the consumer's step is "
                           "--step-time (or consumer.step_time_s in the file; tpusim train runs a pipeline against "
                           "a simulated chip)", o->com.nsets ? "--set" : "--chip");
  if (!o->config) return cli_usage_error(CMD, "--pipeline FILE.json is required (tpusim pipeline --help)");
  if (o->npy && !o->real) return cli_usage_error(CMD, "--npy writes what the real pipeline gives: add --real");
  return CLI_RUN;
}

/* The simulated run (and the real one with --real). */
typedef struct pl_run {
  tpu_df_spec *spec;
  tpu_df_model *m;
  double step_s;               /* the consumer: step time, steps, host-core budget */
  int64_t nsteps;
  int cores;
  char report[2048];           /* autotune's choices, "key = value" lines */
  tpu_df_model_result res;
  tpu_df_interval tsteps[1000];   /* the consumer's first steps, for the timeline */
  int ntl;
  double tl_end;
  int64_t real_images;
  double real_s, real_ips;
  tpu_df_model_result measured;   /* --measure */
} pl_run;

/* The description, its consumer and host blocks overridden by the flags,
** autotuned and built into the host-time model. */
static int load(const pl_opts *o, pl_run *r) {
  char err[1024];
  tpu_status st = tpu_df_spec_load(o->config, &r->spec, err, sizeof err);
  if (st != TPU_OK) return cli_fail(CMD, st, "%s", err);
  tpu_df_spec_consumer(r->spec, &r->step_s, &r->nsteps, &r->cores);
  if (o->epochs > 0) {
    tpu_df_spec_set_epochs(r->spec, o->epochs);      /* in range: checked by the option */
    if (tpu_df_spec_repeat_count(r->spec) == TPU_DF_FOREVER && o->steps < 0)
      return cli_usage_error(CMD, "--epochs: %s repeats forever; give --steps too", o->config);
    r->nsteps = 10000000;                            /* until the data ends */
  }
  if (o->step_time >= 0) r->step_s = o->step_time;
  if (o->steps > 0) r->nsteps = o->steps;
  if (o->host_cores > 0) r->cores = (int)o->host_cores;
  tpu_df_model_options mo = tpu_df_model_options_default();
  mo.host_cores = r->cores;
  mo.timeline_steps = o->tl_steps;
  if ((st = tpu_df_model_autotune(r->spec, &mo, r->step_s, r->nsteps, r->report, sizeof r->report, err,
                                  sizeof err)) != TPU_OK ||
      (st = tpu_df_model_create(r->spec, &mo, &r->m, err, sizeof err)) != TPU_OK)
    return cli_fail(CMD, st, "%s: %s", o->config, err);
  return 0;
}

/* The same run as tpu_df_model_run, kept here to draw the timeline. */
static void simulate(const pl_opts *o, pl_run *r) {
  double t = 0, wsum = 0, wmax = 0;
  int64_t k = 0;
  for (; k < r->nsteps; k++) {
    const double got = tpu_df_model_next(r->m, t);
    if (got < 0) break;
    const double w = got - t;
    wsum += w;
    if (w > wmax) wmax = w;
    if (k < o->tl_steps) {
      r->tsteps[r->ntl++] = (tpu_df_interval){ tpu_df_model_rows(r->m) - 1, got, got + r->step_s, 'T' };
      r->tl_end = got + r->step_s;
    }
    t = got + r->step_s;
  }
  r->res = (tpu_df_model_result){ .total_s = t, .steps = k, .wait_mean_s = k ? wsum / (double)k : 0,
                                  .wait_max_s = wmax, .input_bound_share = t > 0 ? wsum / t : 0 };
}

/* --npy: the batches the real pipeline gave, gathered. */
typedef struct pl_npy { float *x, *y; int64_t n, cap; } pl_npy;

static bool npy_add(pl_npy *a, const tpu_df_batch *b) {
  if (a->n + b->size > a->cap) {
    int64_t nc = (a->n + b->size) * 2;
    float *nx = tpu_realloc(a->x, (size_t)nc * (size_t)b->features * sizeof *nx);
    if (nx) a->x = nx;
    float *ny = nx ? tpu_realloc(a->y, (size_t)nc * sizeof *ny) : NULL;
    if (ny) a->y = ny;
    if (!nx || !ny) return false;
    a->cap = nc;
  }
  memcpy(a->x + (size_t)a->n * (size_t)b->features, b->x, (size_t)b->size * (size_t)b->features * sizeof *a->x);
  for (int i = 0; i < b->size; i++) a->y[a->n + i] = (float)b->y[i];
  a->n += b->size;
  return true;
}

static int npy_write(const char *prefix, const pl_npy *a, const tpu_df_info *in) {
  char path[4096];
  const int64_t sx[4] = { a->n, in->height, in->width, in->channels }, sy[1] = { a->n };
  snprintf(path, sizeof path, "%s_x.npy", prefix);
  if (tpu_npy_write_f32(path, a->x, 4, sx)) return cli_runtime_error(CMD, "--npy %s: cannot write: %s", path, strerror(errno));
  snprintf(path, sizeof path, "%s_y.npy", prefix);
  if (tpu_npy_write_f32(path, a->y, 1, sy)) return cli_runtime_error(CMD, "--npy %s: cannot write: %s", path, strerror(errno));
  return 0;
}

/* --real: the real pipeline for the same steps, timed (and with --npy, what
** it gave written out, after the timing). */
static int run_real(const pl_opts *o, pl_run *r) {
  char err[1024];
  tpu_df *df;
  const double t0 = cli_now_s();
  tpu_status st = tpu_df_open(r->spec, NULL, &df, err, sizeof err);
  if (st != TPU_OK) return cli_fail(CMD, st, "%s", err);
  tpu_df_info in;
  tpu_df_get_info(df, &in);
  pl_npy keep = { 0 };
  tpu_df_batch b;
  int rc = 0;
  for (int64_t j = 0; j < r->nsteps && !rc; j++) {
    if ((st = tpu_df_next(df, &b)) != TPU_OK) rc = cli_fail(CMD, st, "%s", tpu_df_errmsg(df));
    else if (b.size == 0) break;
    else if (o->npy && !npy_add(&keep, &b)) rc = cli_runtime_error(CMD, "--npy: out of memory");
    else r->real_images += b.size;
  }
  r->real_s = cli_now_s() - t0;
  tpu_df_close(df);
  r->real_ips = r->real_s > 0 ? (double)r->real_images / r->real_s : 0;
  if (!rc && o->npy) rc = npy_write(o->npy, &keep, &in);
  tpu_free(keep.x);
  tpu_free(keep.y);
  return rc;
}

/* --measure: the real-cost run for the same steps (after the model's, so
** its autotuned values are the ones measured). */
static int run_measured(pl_run *r) {
  char err[1024];
  tpu_df_model_options mo = tpu_df_model_options_default();
  mo.host_cores = r->cores;
  tpu_status st = tpu_df_costrun(r->spec, &mo, r->step_s, r->nsteps, &r->measured, err, sizeof err);
  return st != TPU_OK ? cli_fail(CMD, st, "--measure: %s", err) : 0;
}

/* (model - measured) / measured of the total time. */
static double model_error(const pl_run *r) {
  return r->measured.total_s > 0 ? (r->res.total_s - r->measured.total_s) / r->measured.total_s : 0;
}

/* The next line of autotune's report (cut in place); NULL after the last. */
static char *next_line(char **p) {
  char *line = *p;
  if (!*line) return NULL;
  char *nl = strchr(line, '\n');
  if (nl) { *nl = 0; *p = nl + 1; } else { *p = line + strlen(line); }
  return line;
}

static json_t *timeline_json(const pl_run *r) {
  json_t *rows = json_array(), *ivs = json_array();
  for (int k = 0; k < tpu_df_model_rows(r->m); k++) json_array_append_new(rows, json_string(tpu_df_model_row_name(r->m, k)));
  size_t n;
  const tpu_df_interval *iv = tpu_df_model_intervals(r->m, &n);
  for (size_t i = 0; i < n + (size_t)r->ntl; i++) {
    const tpu_df_interval *x = i < n ? &iv[i] : &r->tsteps[i - n];
    char kch[2] = { x->kind, 0 };
    json_array_append_new(ivs, json_pack("[i,o,o,s]", x->row, cli_json_real(x->start_s), cli_json_real(x->end_s), kch));
  }
  return json_pack("{s:o,s:o}", "rows", rows, "intervals", ivs);
}

/* The --json report; NULL when out of memory. */
static json_t *report_json(const pl_opts *o, pl_run *r) {
  json_t *j = json_object();
  json_object_set_new(j, "config", json_string(o->config));
  json_object_set_new(j, "steps", json_integer(r->res.steps));
  json_object_set_new(j, "step_time_s", cli_json_real(r->step_s));
  json_object_set_new(j, "total_s", cli_json_real(r->res.total_s));
  json_object_set_new(j, "wait_mean_s", cli_json_real(r->res.wait_mean_s));
  json_object_set_new(j, "wait_max_s", cli_json_real(r->res.wait_max_s));
  json_object_set_new(j, "input_bound_share", cli_json_real(r->res.input_bound_share));
  json_object_set_new(j, "input_verdict", json_string(tpu_df_verdict(r->res.input_bound_share)));
  json_object_set_new(j, "host_cores", json_integer(r->cores));
  json_t *at = json_object();
  char *p = r->report, *line, key[128];
  long long val;
  while ((line = next_line(&p)))
    if (sscanf(line, "%127s = %lld", key, &val) == 2) json_object_set_new(at, key, json_integer(val));
  json_object_set_new(j, "autotune", at);
  json_object_set_new(j, "timeline", timeline_json(r));
  if (o->real)
    json_object_set_new(j, "real", json_pack("{s:I,s:o,s:o}", "images", (json_int_t)r->real_images, "seconds",
                                             cli_json_real(r->real_s), "images_per_s", cli_json_real(r->real_ips)));
  if (o->measure)
    json_object_set_new(j, "measured", json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "steps", (json_int_t)r->measured.steps,
                                                 "total_s", cli_json_real(r->measured.total_s), "wait_mean_s",
                                                 cli_json_real(r->measured.wait_mean_s), "wait_max_s",
                                                 cli_json_real(r->measured.wait_max_s), "input_bound_share",
                                                 cli_json_real(r->measured.input_bound_share), "model_error",
                                                 cli_json_real(model_error(r))));
  return j;
}

/* The CSV columns of a sweep point (sweep/sweep.h), set below. */
static const tpu_sweep_field FIELDS[] = {
  { "steps", TPU_SWEEP_INT }, { "step_time_s", TPU_SWEEP_REAL }, { "total_s", TPU_SWEEP_REAL },
  { "wait_mean_s", TPU_SWEEP_REAL }, { "wait_max_s", TPU_SWEEP_REAL }, { "input_bound_share", TPU_SWEEP_REAL },
  { "host_cores", TPU_SWEEP_INT },
};

/* A sweep point's row (NULL: none): the consumer's figures. */
static void sweep_row(const pl_run *r, tpu_sweep_row *row) {
  tpu_sweep_row_int(row, "steps", r->res.steps);
  tpu_sweep_row_real(row, "step_time_s", r->step_s);
  tpu_sweep_row_real(row, "total_s", r->res.total_s);
  tpu_sweep_row_real(row, "wait_mean_s", r->res.wait_mean_s);
  tpu_sweep_row_real(row, "wait_max_s", r->res.wait_max_s);
  tpu_sweep_row_real(row, "input_bound_share", r->res.input_bound_share);
  tpu_sweep_row_int(row, "host_cores", r->cores);
}

static int report_text(const pl_opts *o, pl_run *r) {
  printf("pipeline     %s\n", o->config);
  printf("consumer     %lld steps of %.6g s\n", (long long)r->res.steps, r->step_s);
  if (*r->report) {
    printf("autotune     (host-core budget %d)\n", r->cores);
    char *p = r->report, *line;
    while ((line = next_line(&p))) printf("  %s\n", line);
  }
  printf("total time   %.6g s\n", r->res.total_s);
  printf("wait/step    mean %.6g s, max %.6g s\n", r->res.wait_mean_s, r->res.wait_max_s);
  printf("input-bound  %.1f %% of the time waiting for input: %s\n", 100.0 * r->res.input_bound_share,
         tpu_df_verdict(r->res.input_bound_share));
  if (o->real)
    printf("real run     %lld images in %.3f s: %.0f images/s\n", (long long)r->real_images, r->real_s, r->real_ips);
  if (o->measure)
    printf("measured     %.6g s on host threads spending the costs, waiting %.1f %%; the model is %+.1f %% off\n",
           r->measured.total_s, 100.0 * r->measured.input_bound_share, 100.0 * model_error(r));
  if (o->tl_steps > 0 && r->tl_end > 0) {
    printf("timeline     first %ld steps, 0 .. %.6g s, one column = %.3g s\n", o->tl_steps, r->tl_end,
           r->tl_end / (double)o->width);
    draw(r->m, r->tsteps, (size_t)r->ntl, r->tl_end, (int)o->width, stdout);
    fputs(LEGEND, stdout);
  }
  return 0;
}

/* One run on parsed options (reentrant: sweep points run on several
** threads). With --json *report gets the report, else the text is printed. */
static int pipeline_run(const void *op, json_t **report, tpu_sweep_row *row) {
  const pl_opts *o = op;
  *report = NULL;
  pl_run r;
  memset(&r, 0, sizeof r);
  int rc;
  if (!(rc = load(o, &r))) {
    simulate(o, &r);
    if ((!o->real || !(rc = run_real(o, &r))) && (!o->measure || !(rc = run_measured(&r)))) {
      sweep_row(&r, row);
      if (!o->com.json) rc = report_text(o, &r);
      else if (!(*report = report_json(o, &r))) rc = cli_runtime_error(CMD, "out of memory");
    }
  }
  tpu_df_model_destroy(r.m);
  tpu_df_spec_destroy(r.spec);
  return rc;
}

/* The command as a sweep point (sweep/sweep.h) and as itself: it
** simulates no chip, so nothing to check before its points run. */
static int parse_point(int argc, char **argv, void *o) { return parse(argc, argv, o); }
const tpu_sweep_cmd cli_pipeline_cmd = { CMD, sizeof(pl_opts), false, parse_point, NULL, pipeline_run, FIELDS,
                                         (int)(sizeof FIELDS / sizeof *FIELDS), NULL, 0 };

int cli_cmd_pipeline(int argc, char **argv) {
  return cli_point_main(&cli_pipeline_cmd, argc, argv, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
}
