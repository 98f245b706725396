/*
** sweep.c -- a sweep's definition (axes and points), its journal and its
** tidy CSV; the design is at the top of sweep.h.
*/
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/sweep.h"

#define CMD "sweep"

/* {==================================================================
** The definition
** ================================================================== */
static const cli_point_cmd *const POINT_CMDS[] = { &cli_train_point, &cli_matmul_point, &cli_run_point,
                                                    &cli_pipeline_point };

/* Splits "a,b,c" into a new axis (values are copies). */
static int add_axis(sweep_def *d, const char *flag, const char *name, size_t namelen, const char *prefix,
                    const char *list) {
  if (d->naxes == SWEEP_MAX_AXES) return cli_usage_error(CMD, "at most %d axes", SWEEP_MAX_AXES);
  sweep_axis *a = &d->axes[d->naxes];
  int n = 1;
  for (const char *c = list; *c; c++) n += *c == ',';
  a->name = strndup(name, namelen);
  a->prefix = prefix;
  a->flag = flag;
  a->values = calloc((size_t)n, sizeof *a->values);
  if (!a->name || !a->values) return cli_runtime_error(CMD, "out of memory");
  d->naxes++;
  for (const char *c = list;; c++) {
    const char *e = strchr(c, ',');
    const size_t len = e ? (size_t)(e - c) : strlen(c);
    if (!len) return cli_usage_error(CMD, "%s %s: an empty value in the list", flag, list);
    if (!(a->values[a->nvalues++] = strndup(c, len))) return cli_runtime_error(CMD, "out of memory");
    if (!e) break;
    c = e;
  }
  for (int i = 0; i < d->naxes - 1; i++)
    if (!strcmp(d->axes[i].name, a->name)) return cli_usage_error(CMD, "axis '%s' is given twice", a->name);
  if (d->npoints > 100000000L / a->nvalues) return cli_usage_error(CMD, "more than 100000000 points");
  d->npoints *= a->nvalues;
  return 0;
}

/* One option of the command: "--name", "--name=value" or "--name value". */
static int add_option(sweep_def *d, int argc, char **argv, int *i) {
  const char *tok = argv[*i], *eq = strchr(tok, '=');
  if (strncmp(tok, "--", 2) || tok[2] == 0)
    return cli_usage_error(CMD, "'%s': expected an option of %s (--NAME VALUE or --NAME V1,V2,...)", tok, d->cmd->name);
  if (!strcmp(tok, "--json") || !strcmp(tok, "--help"))
    return cli_usage_error(CMD, "%s is not a point's option (every point runs with --json)", tok);
  if (d->nargs + 2 > SWEEP_MAX_ARGS) return cli_usage_error(CMD, "too many options (at most %d)", SWEEP_MAX_ARGS);
  const char *value = NULL;
  char *flag = eq ? strndup(tok, (size_t)(eq - tok)) : strdup(tok);
  if (!flag) return cli_runtime_error(CMD, "out of memory");
  if (eq) value = eq + 1;
  else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2)) value = argv[++*i];
  d->owned[d->nargs] = true;   /* the flag is a copy; the value points into argv */
  d->args[d->nargs++] = flag;
  if (value) d->args[d->nargs++] = value;
  if (value && strchr(value, ',')) {
    if (!strcmp(flag, "--set")) {
      const char *keq = strchr(value, '=');
      if (!keq || strchr(value, ',') < keq) return cli_usage_error(CMD, "--set %s: expected KEY=V1,V2,...", value);
      char *prefix = strndup(value, (size_t)(keq - value) + 1);
      if (!prefix) return cli_runtime_error(CMD, "out of memory");
      return add_axis(d, flag, value, (size_t)(keq - value), prefix, keq + 1);
    }
    return add_axis(d, flag, flag + 2, strlen(flag + 2), "", value);
  }
  d->fixed[d->nfixed++] = flag;
  if (value) d->fixed[d->nfixed++] = value;
  return 0;
}

int sweep_def_parse(sweep_def *d, int argc, char **argv) {
  d->npoints = 1;
  if (argc < 1) return cli_usage_error(CMD, "give the command to sweep: train, matmul, run or pipeline (tpusim sweep --help)");
  for (size_t k = 0; k < sizeof POINT_CMDS / sizeof POINT_CMDS[0]; k++)
    if (!strcmp(argv[0], POINT_CMDS[k]->name)) d->cmd = POINT_CMDS[k];
  if (!d->cmd) return cli_usage_error(CMD, "'%s': expected the command to sweep, train, matmul, run or pipeline", argv[0]);
  for (int i = 1; i < argc; i++) {
    const int rc = add_option(d, argc, argv, &i);
    if (rc) return rc;
  }
  return 0;
}

void sweep_def_free(sweep_def *d) {
  for (int i = 0; i < d->nargs; i++)
    if (d->owned[i]) free((char *)d->args[i]);   /* not by its "--": a value may start so too */
  for (int a = 0; a < d->naxes; a++) {
    for (int v = 0; v < d->axes[a].nvalues; v++) free(d->axes[a].values[v]);
    free(d->axes[a].values);
    free((char *)d->axes[a].name);
    if (d->axes[a].prefix[0]) free((char *)d->axes[a].prefix);
  }
}

const char *sweep_point_value(const sweep_def *d, long p, int a) {
  long stride = 1;
  for (int b = d->naxes - 1; b > a; b--) stride *= d->axes[b].nvalues;
  return d->axes[a].values[(p / stride) % d->axes[a].nvalues];
}

int sweep_point_argv(const sweep_def *d, long p, char **argv, int cap, char *bufs, size_t bufcap) {
  int n = 0;
  argv[n++] = (char *)d->cmd->name;
  if (d->cmd->threads) {         /* the points are the parallelism; a point's own --threads wins */
    argv[n++] = "--threads";
    argv[n++] = "1";
  }
  for (int i = 0; i < d->nfixed && n < cap - 1; i++) argv[n++] = (char *)d->fixed[i];
  size_t used = 0;
  for (int a = 0; a < d->naxes && n < cap - 3; a++) {
    argv[n++] = (char *)d->axes[a].flag;
    const int w = snprintf(bufs + used, bufcap - used, "%s%s", d->axes[a].prefix, sweep_point_value(d, p, a));
    argv[n++] = bufs + used;
    used += (size_t)w + 1 < bufcap - used ? (size_t)w + 1 : 0;
  }
  argv[n++] = "--json";
  argv[n] = NULL;
  return n;
}

json_t *sweep_def_json(const sweep_def *d) {
  json_t *args = json_array(), *axes = json_array();
  for (int i = 0; i < d->nargs; i++) json_array_append_new(args, json_string(d->args[i]));
  for (int a = 0; a < d->naxes; a++) json_array_append_new(axes, json_string(d->axes[a].name));
  return json_pack("{s:s,s:o,s:o,s:I}", "command", d->cmd->name, "args", args, "axes", axes,
                   "points", (json_int_t)d->npoints);
}
/* }================================================================== */

/* {==================================================================
** The journal
** ================================================================== */
const char *sweep_path(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
  return buf;
}

int sweep_json_load(const char *path, bool absent_ok, json_t **out) {
  char *text = NULL, err[4200];
  *out = NULL;
  const tpu_status st = tpu_read_text(path, "JSON text", &text, err, sizeof err);
  if (st == TPU_ERR_IO && errno == ENOENT && absent_ok) return 0;
  if (st) return cli_fail(CMD, st, "%s", err);
  json_error_t e;
  *out = json_loads(text, 0, &e);
  tpu_free(text);
  return *out ? 0 : cli_usage_error(CMD, "%s:%d:%d: %s", path, e.line, e.column, e.text);
}

/* One line of the journal into j; 0, or 2 after a message. */
static int journal_line(const char *path, long lineno, const char *line, sweep_journal *j) {
  json_error_t e;
  json_t *o = json_loads(line, 0, &e);
  const json_t *pt = json_object_get(o, "point");
  if (!o || !json_is_integer(pt) || json_integer_value(pt) < 0 || json_integer_value(pt) >= j->npoints) {
    json_decref(o);
    return cli_usage_error(CMD, "%s:%ld: not a journal entry of this sweep (%s)", path, lineno,
                           o ? "no 'point' in 0..points-1" : e.text);
  }
  const long p = (long)json_integer_value(pt);
  if (!j->entry[p]) j->nfinished++;
  json_decref(j->entry[p]);
  j->entry[p] = o;               /* the last entry wins: a failed point rerun */
  return 0;
}

int sweep_journal_load(const char *dir, long npoints, sweep_journal *j) {
  char path[4096];
  sweep_path(path, sizeof path, dir, "points.jsonl");
  j->npoints = npoints;
  j->nfinished = 0;
  if (!(j->entry = calloc((size_t)npoints, sizeof *j->entry))) return cli_runtime_error(CMD, "out of memory");
  /* the one text reader: a NUL byte is bad input naming its line:column */
  char *text = NULL, err[4200];
  const tpu_status st = tpu_read_text(path, "a journal of JSON lines (docs/SWEEPS.md)", &text, err, sizeof err);
  if (st == TPU_ERR_IO && errno == ENOENT) return 0;
  if (st) return cli_fail(CMD, st, "%s", err);
  const size_t len = strlen(text);
  size_t good = 0;
  long lineno = 0;
  int rc = 0;
  for (char *s = text, *nl; !rc && (nl = memchr(s, '\n', len - (size_t)(s - text))); s = nl + 1) {
    *nl = 0;
    rc = journal_line(path, ++lineno, s, j);
    good = (size_t)(nl + 1 - text);
  }
  tpu_free(text);
  /* a line without its newline was cut by a kill mid-write: drop it */
  if (!rc && good < len && truncate(path, (off_t)good))
    rc = cli_runtime_error(CMD, "%s: cannot drop the torn last line: %s", path, strerror(errno));
  return rc;
}

void sweep_journal_free(sweep_journal *j) {
  for (long p = 0; j->entry && p < j->npoints; p++) json_decref(j->entry[p]);
  free(j->entry);
  j->entry = NULL;
}

int sweep_journal_append(int fd, json_t *entry) {
  char *s = json_dumps(entry, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  if (!s) return -1;
  const size_t n = strlen(s);
  s[n] = '\n';                   /* json_dumps' NUL becomes the newline: one write(2) */
  ssize_t w = write(fd, s, n + 1);
  free(s);
  return w == (ssize_t)(n + 1) ? 0 : -1;
}
/* }================================================================== */

/* {==================================================================
** The CSV (docs/SWEEPS.md names the columns)
** ================================================================== */
typedef struct csv_col { const char *name, *key; } csv_col;
static const csv_col TRAIN_COLS[] = {
  { "sim_step_s", "sim_step_s" }, { "sim_step_cycles", "sim_step_cycles" }, { "images_per_s", "images_per_s" },
  { "mxu_utilization", "mxu_utilization" }, { "input_wait_fraction", "input_wait_fraction" },
  { "input_verdict", "input_verdict" }, { "test_accuracy", "test_accuracy" }, { "test_loss", "test_loss" },
};
static const csv_col MATMUL_COLS[] = {
  { "cycles", "cycles" }, { "time_s", "time_s" }, { "mxu_utilization", "mxu_utilization" },
  { "flops_per_s", "flops_per_s" }, { "achieved_flops_per_s", "achieved_flops_per_s" }, { "tiles", "tiles" },
  { "macs", "macs" }, { "hbm_bytes", "hbm_bytes" }, { "bound", "bound" }, { "max_abs_err", "max_abs_err" },
  { "max_rel_err", "max_rel_err" },
};
static const csv_col RUN_COLS[] = { { "cycles", "cycles" }, { "time_s", "time_s" }, { "ops", "ops" } };
static const csv_col PIPELINE_COLS[] = {
  { "steps", "steps" }, { "step_time_s", "step_time_s" }, { "total_s", "total_s" },
  { "wait_mean_s", "wait_mean_s" }, { "wait_max_s", "wait_max_s" }, { "input_bound_share", "input_bound_share" },
  { "host_cores", "host_cores" },
};
/* A command's figures: its columns, and its stall parts (train: shares of
** the step; run: cycles summed over the cores; NONE: no stall columns). */
typedef enum { STALL_NONE, STALL_SHARES, STALL_CYCLES } stall_kind;
typedef struct csv_layout { const cli_point_cmd *cmd; const csv_col *cols; size_t ncols; stall_kind stalls; } csv_layout;
#define LAYOUT(c, t, k) { &(c), (t), sizeof (t) / sizeof *(t), (k) }
static const csv_layout LAYOUTS[] = {
  LAYOUT(cli_train_point, TRAIN_COLS, STALL_SHARES), LAYOUT(cli_matmul_point, MATMUL_COLS, STALL_NONE),
  LAYOUT(cli_run_point, RUN_COLS, STALL_CYCLES), LAYOUT(cli_pipeline_point, PIPELINE_COLS, STALL_NONE),
};

static const csv_layout *layout(const sweep_def *d) {
  for (size_t i = 0; i < sizeof LAYOUTS / sizeof *LAYOUTS; i++)
    if (LAYOUTS[i].cmd == d->cmd) return &LAYOUTS[i];
  return &LAYOUTS[0];          /* not reached: every point command has a layout */
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_str(tpu_text *t, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    tpu_text_printf(t, "%s", s);
    return;
  }
  tpu_text_printf(t, "\"");
  for (; *s; s++) tpu_text_printf(t, *s == '"' ? "\"\"" : "%c", *s);
  tpu_text_printf(t, "\"");
}

static void csv_value(tpu_text *t, const json_t *v) {
  if (json_is_integer(v)) tpu_text_printf(t, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) tpu_text_printf(t, "%.10g", json_real_value(v));
  else if (json_is_string(v)) csv_str(t, json_string_value(v));
}

static void csv_header(tpu_text *t, const sweep_def *d) {
  const csv_layout *L = layout(d);
  tpu_text_printf(t, "point");
  for (int a = 0; a < d->naxes; a++) tpu_text_printf(t, ",%s", d->axes[a].name);
  tpu_text_printf(t, ",status");
  for (size_t c = 0; c < L->ncols; c++) tpu_text_printf(t, ",%s", L->cols[c].name);
  if (L->stalls != STALL_NONE)
    for (int i = 0; i < TPU_SIM_NSTALL; i++) {
      const char *s = tpu_sim_stall_name(tpu_sim_stall_in_report_order(i));
      tpu_text_printf(t, ",%s_cycles,%s_share", s, s);
    }
  tpu_text_printf(t, ",error\n");
}

/* The stall parts: cycles (train: per step) and share. */
static void csv_stalls(tpu_text *t, const json_t *rep, stall_kind kind) {
  const json_t *st = json_object_get(rep, "stall");
  double cyc = (double)json_integer_value(json_object_get(rep, "sim_step_cycles")), sum = 0;
  for (int i = 0; i < TPU_SIM_NSTALL; i++)
    sum += json_number_value(json_object_get(st, tpu_sim_stall_name(i)));
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    const json_t *v = json_object_get(st, tpu_sim_stall_name(tpu_sim_stall_in_report_order(i)));
    const double x = json_number_value(v);
    if (!v) tpu_text_printf(t, ",,");
    else if (kind == STALL_SHARES) tpu_text_printf(t, ",%.10g,%.10g", x * cyc, x);
    else tpu_text_printf(t, ",%.10g,%.10g", x, sum > 0 ? x / sum : 0.0);
  }
}

static void csv_row(tpu_text *t, const sweep_def *d, long p, const json_t *e) {
  const csv_layout *L = layout(d);
  const json_t *rep = json_object_get(e, "report");
  const char *status = json_string_value(json_object_get(e, "status"));
  tpu_text_printf(t, "%ld", p);
  for (int a = 0; a < d->naxes; a++) {
    tpu_text_printf(t, ",");
    csv_str(t, sweep_point_value(d, p, a));
  }
  tpu_text_printf(t, ",%s", status ? status : "");
  for (size_t c = 0; c < L->ncols; c++) {
    const json_t *v = json_object_get(rep, L->cols[c].key);
    tpu_text_printf(t, ",");
    if (!strcmp(L->cols[c].key, "input_verdict") && json_is_string(v))   /* the verdict's words before ':' */
      tpu_text_printf(t, "%.*s", (int)strcspn(json_string_value(v), ":"), json_string_value(v));
    else csv_value(t, v);
  }
  if (L->stalls != STALL_NONE) {
    if (rep) csv_stalls(t, rep, L->stalls);
    else for (int i = 0; i < TPU_SIM_NSTALL; i++) tpu_text_printf(t, ",,");
  }
  tpu_text_printf(t, ",");
  csv_value(t, json_object_get(e, "error"));
  tpu_text_printf(t, "\n");
}

int sweep_write_csv(const char *dir, const sweep_def *d, const sweep_journal *j) {
  char path[4096];
  tpu_text t = { 0 };
  csv_header(&t, d);
  for (long p = 0; p < j->npoints; p++)
    if (j->entry[p]) csv_row(&t, d, p, j->entry[p]);
  sweep_path(path, sizeof path, dir, "results.csv");
  const int bad = t.oom || tpu_write_atomic(path, t.s, t.n);
  const int err = errno;
  tpu_free(t.s);
  return bad ? cli_runtime_error(CMD, "%s: cannot write: %s", path, t.oom ? "out of memory" : strerror(err)) : 0;
}
/* }================================================================== */

int sweep_write_merged(const char *dir, const sweep_def *d, const sweep_journal *j) {
  char path[4096];
  tpu_text t = { 0 };
  for (long p = 0; p < j->npoints; p++) {
    char *s = j->entry[p] ? json_dumps(j->entry[p], JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    if (j->entry[p] && !s) t.oom = 1;
    if (s) tpu_text_printf(&t, "%s\n", s);
    free(s);
  }
  sweep_path(path, sizeof path, dir, "points.jsonl");
  const int bad = t.oom || tpu_write_atomic(path, t.s ? t.s : "", t.n);
  const int err = errno;
  tpu_free(t.s);
  if (bad) return cli_runtime_error(CMD, "%s: cannot write: %s", path, t.oom ? "out of memory" : strerror(err));
  return sweep_write_csv(dir, d, j);
}
