/*
** cli.c -- what the tpusim subcommands share (see cli_int.h): messages and
** exit codes, option parsing on getopt_long, the chip and its --set
** overrides.
*/
#include "cli/cli_int.h"
#include "frontend/fe.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* {==================================================================
** Messages and exit codes
** ================================================================== */
static _Thread_local char *cap_buf;
static _Thread_local size_t cap_size;
void cli_capture_errors(char *buf, size_t cap) {
  cap_buf = buf;
  cap_size = cap;
  if (buf && cap) buf[0] = 0;
}

/* A sweep's capture of its points' messages, inside a capture of the
** sweep's own (tpu_cli_run's): NULL goes back to the outer one, not stderr. */
static _Thread_local char *outer_buf;
static _Thread_local size_t outer_size;
void cli_capture_point_errors(char *buf, size_t cap) {
  if (buf) {
    outer_buf = cap_buf;
    outer_size = cap_size;
    cli_capture_errors(buf, cap);
  } else {
    cap_buf = outer_buf;
    cap_size = outer_size;
    outer_buf = NULL;
  }
}

static int report(int code, const char *cmd, const char *fmt, va_list ap) {
  if (cap_buf) {
    vsnprintf(cap_buf, cap_size, fmt, ap);
    return code;
  }
  fprintf(stderr, "tpusim %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  return code;
}
#define REPORT(code, cmd, fmt) do { va_list ap; va_start(ap, fmt); int rc_ = report((code), (cmd), (fmt), ap); \
                                    va_end(ap); return rc_; } while (0)
int cli_usage_error(const char *cmd, const char *fmt, ...) { REPORT(2, cmd, fmt); }
int cli_runtime_error(const char *cmd, const char *fmt, ...) { REPORT(1, cmd, fmt); }
int cli_fail(const char *cmd, tpu_status st, const char *fmt, ...) { REPORT(tpu_status_exit_code(st), cmd, fmt); }
/* }================================================================== */

/* {==================================================================
** Options
** ================================================================== */
static const char COMMON_HELP[] =
  "  --chip NAME|FILE   chip preset (tpu-v2-8 [default], tpu-v3-8, teach; pod slices\n"
  "                     tpu-v2-32 .. tpu-v2-512, tpu-v3-32 .. tpu-v3-2048) or a JSON file\n"
  "  --set KEY=VALUE    override one configuration key (repeatable), e.g. --set mxu.rows=8\n"
  "  --json             print one JSON object on stdout instead of the text report\n"
  "  --help             this text\n";

bool cli_chip_given(int argc, char **argv, const cli_common *c) {
  for (int i = 1; i < argc; i++)
    if (c->chip == argv[i] || (!strncmp(argv[i], "--chip=", 7) && c->chip == argv[i] + 7)) return true;
  return false;
}

int cli_help(const char *text, const char *more) {
  fputs(text, stdout);
  if (more) { fputs(more, stdout); fputs("\n", stdout); }
  fputs(COMMON_HELP, stdout);
  return 0;
}

/* The parser's state: the command's table and the common options, and
** getopt_long's table made of both (option i has val 256 + i). */
typedef struct cli_args {
  const char *cmd;
  const cli_opt *opts;
  int nopts;
  cli_opt common[4];                 /* --chip, --set, --json, --help */
  cli_common *com;
  struct option lopts[CLI_MAX_OPTS + 5];
} cli_args;

static const cli_opt *opt_at(const cli_args *a, int i) {
  return i < a->nopts ? &a->opts[i] : &a->common[i - a->nopts];
}

static void args_init(cli_args *a, const char *cmd, const cli_opt *opts, int nopts, cli_common *c) {
  memset(c, 0, sizeof *c);
  c->chip = "tpu-v2-8";
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  a->opts = opts;
  a->nopts = nopts < CLI_MAX_OPTS ? nopts : CLI_MAX_OPTS;
  a->com = c;
  const cli_opt common[4] = {
    CLI_STR("chip", &c->chip, "--chip needs a preset name or a file"),
    { .name = "set", .kind = CLI_KSET, .missing = "--set needs KEY=VALUE, e.g. --set mxu.rows=8" },
    CLI_FLAG("json", &c->json), CLI_FLAG("help", &c->help) };
  memcpy(a->common, common, sizeof common);
  const int n = a->nopts + 4;
  for (int i = 0; i < n; i++) {
    const cli_opt *o = opt_at(a, i);
    a->lopts[i] = (struct option){ o->name, o->kind == CLI_KFLAG ? no_argument : required_argument, NULL, 256 + i };
  }
  a->lopts[n] = (struct option){ 0, 0, 0, 0 };
  optind = 0;                        /* a fresh scan (glibc) */
  opterr = 0;                        /* our messages, not getopt's */
}

static int unknown(const cli_args *a, const char *arg) {
  char want[72];
  const char *names[CLI_MAX_OPTS + 5];
  int n = 0;
  for (const struct option *o = a->lopts; o->name; o++) names[n++] = o->name;
  /* the nearest option name to what was given, for "--epoch" or "--heedless" */
  snprintf(want, sizeof want, "%.*s", (int)strcspn(arg + strspn(arg, "-"), "="), arg + strspn(arg, "-"));
  const char *near = arg[0] == '-' ? tpu_nearest(want, names, n) : NULL;
  if (near) return cli_usage_error(a->cmd, "unknown option '%s'; did you mean '--%s'? (tpusim %s --help)", arg, near,
                                   a->cmd);
  return cli_usage_error(a->cmd, "unknown option '%s' (tpusim %s --help)", arg, a->cmd);
}

/* True unless 'arg' starts with '-' and is not "-h", "--NAME" or
** "--NAME=VALUE" of an option of the table spelled out in full (with a value
** only if it takes one). Others are left to getopt_long. */
static bool spelled_out(const cli_args *a, const char *arg) {
  if (arg[0] != '-' || !strcmp(arg, "-h")) return true;
  if (arg[1] != '-') return false;
  const char *name = arg + 2;
  const size_t n = strcspn(name, "=");
  for (const struct option *o = a->lopts; o->name; o++)
    if (strlen(o->name) == n && !strncmp(o->name, name, n) && (!name[n] || o->has_arg)) return true;
  return false;
}

/* Stores the value of a table option; 0, or 2 after a message. */
static int store(const cli_args *a, const cli_opt *o, const char *v) {
  char *end;
  errno = 0;
  switch (o->kind) {
  case CLI_KFLAG:
    *(bool *)o->dst = true;
    return 0;
  case CLI_KSTR:
    *(const char **)o->dst = v;
    return 0;
  case CLI_KLONG: {
    const long x = strtol(v, &end, 10);
    if (*v && !*end && !errno && x >= o->lo && x <= o->hi) { *(long *)o->dst = x; return 0; }
    return cli_usage_error(a->cmd, "--%s: expected an integer in %ld..%ld, got '%s'", o->name, o->lo, o->hi, v);
  }
  case CLI_KDOUBLE: {
    const double x = strtod(v, &end);
    if (*v && !*end && !errno && isfinite(x) && x >= o->dlo && x <= o->dhi) { *(double *)o->dst = x; return 0; }
    return cli_usage_error(a->cmd, "--%s: expected a number in %g..%g, got '%s'", o->name, o->dlo, o->dhi, v);
  }
  case CLI_KSET:
    if (a->com->nsets == CLI_MAX_SETS) return cli_usage_error(a->cmd, "--set: at most %d overrides", CLI_MAX_SETS);
    a->com->sets[a->com->nsets++] = v;
    return 0;
  default:
    return 0;
  }
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts, cli_common *c,
              cli_value_fn fn, void *ud) {
  cli_args a;
  args_init(&a, cmd, opts, nopts, c);
  for (;;) {
    const int at = optind ? optind : 1;
    if (at < argc && !spelled_out(&a, argv[at])) return unknown(&a, argv[at]);
    const int g = getopt_long(argc, argv, "-:h", a.lopts, NULL);
    if (g == -1) return 0;
    if (g == 1) return unknown(&a, optarg);                  /* a stray argument */
    if (g == 'h') { c->help = true; continue; }
    const int i = (g == ':' ? optopt : g) - 256;
    if (i < 0 || i >= a.nopts + 4) return unknown(&a, argv[at]);
    const cli_opt *o = opt_at(&a, i);
    const char *v = optarg;
    if (g == ':') {                                          /* the value is missing */
      if (o->missing) return cli_usage_error(cmd, "%s", o->missing);
      if (o->kind != CLI_KID) return cli_usage_error(cmd, "--%s needs a value", o->name);
      v = "";
    }
    const int rc = o->kind == CLI_KID ? (fn ? fn(ud, o->id, v) : 0) : store(&a, o, v);
    if (rc) return rc;
  }
}
/* }================================================================== */

int cli_dtype_policy(const char *cmd, const char *v, tpu_fe_dtype_policy *out) {
  if (tpu_fe_dtype_policy_parse(v, out)) return 0;
  return cli_usage_error(cmd, "--dtype-policy: expected mixed_bfloat16 or float32 (Keras' policy names), got '%s'", v);
}

int cli_precision(const char *cmd, const char *v, tpu_precision *out) {
  if (tpu_precision_parse(v, out)) return 0;
  return cli_usage_error(cmd, "--precision: expected bf16, bf16x3 or bf16x6, got '%s'", v);
}

int cli_ss_input_type(const char *cmd, const char *v, bool *gemm) {
  if (!strcmp(v, "gemm") || !strcmp(v, "conv")) {
    *gemm = v[0] == 'g';
    return 0;
  }
  return cli_usage_error(cmd, "--input-type: expected conv or gemm, got '%s'", v);
}

/* The chip the command simulates, for its report's "config" (docs/JSON.md):
** noted when loaded and when cut to the run's cores, taken by the report.
** Per thread: a sweep runs its points on several. */
static _Thread_local tpu_chip_config report_chip;
static _Thread_local bool report_has_chip;

int cli_load_chip(const char *cmd, const cli_common *c, tpu_chip_config *out) {
  char err[1024];
  tpu_status st = tpu_chip_config_load(c->chip, out, err, sizeof err);
  if (st == TPU_OK && c->host) st = tpu_chip_host_preset(out, c->host, err, sizeof err);
  for (int k = 0; st == TPU_OK && k < c->nsets; k++) st = tpu_chip_config_set(out, c->sets[k], err, sizeof err);
  if (st == TPU_OK) { report_chip = *out; report_has_chip = true; }
  return st == TPU_OK ? 0 : cli_fail(cmd, st, "%s", err);
}

int cli_load_model(const char *cmd, const char *spec, bool json, tpu_fe_model *out, json_t **ignored,
                   float **weights) {
  char err[1024];
  tpu_fe_model_notes notes;
  if (ignored) *ignored = NULL;
  if (weights) *weights = NULL;
  tpu_status st = tpu_fe_model_load_notes(spec, out, &notes, err, sizeof err);
  if (st) return cli_fail(cmd, st, "%s", err);
  if (notes.nignored && !json) {
    fprintf(stderr, "tpusim %s: %s (%s): %d option%s not modelled, ignored (docs/MODELS.md, \"Keras import\"):\n",
            cmd, spec, notes.format, notes.nignored, notes.nignored == 1 ? "" : "s");
    for (const char *p = notes.ignored; *p;) {
      const char *e = strchr(p, '\n');
      fprintf(stderr, "  %.*s\n", (int)(e - p), p);
      p = e + 1;
    }
  } else if (notes.nignored && ignored) {
    json_t *a = json_array();
    for (const char *p = notes.ignored; a && *p;) {
      const char *e = strchr(p, '\n');
      if (json_array_append_new(a, json_stringn(p, (size_t)(e - p)))) { json_decref(a); a = NULL; }
      p = e + 1;
    }
    if (!a) { tpu_fe_model_notes_free(&notes); return cli_runtime_error(cmd, "out of memory"); }
    *ignored = a;
  }
  if (weights) { *weights = notes.weights; notes.weights = NULL; }
  tpu_fe_model_notes_free(&notes);
  return 0;
}

int cli_load_program(const char *cmd, const char *path, int cores, tpu_sim_program **out) {
  *out = NULL;
  char *text, err[2048];
  tpu_status st = tpu_json_read_file(path, &text, err, sizeof err);
  if (st) return cli_fail(cmd, st, "%s", err);
  st = tpu_sim_program_parse(text, path, cores, out, err, sizeof err);
  tpu_free(text);
  return st == TPU_OK ? 0 : cli_fail(cmd, st, "%s", err);
}

void cli_chip_cut(tpu_chip_config *chip, int cores) {
  tpu_chip_config_cut(chip, cores);
  report_chip = *chip;
  report_has_chip = true;
}

int cli_report_envelope(const char *cmd, json_t *o) {
  const bool chip = report_has_chip;
  report_has_chip = false;
  if (!o) return -1;
  json_t *cfg = NULL;
  if (chip) {
    char *cj = tpu_chip_config_to_json(&report_chip);
    json_t *c = cj ? tpu_json_decode(cj, 0, NULL) : NULL;
    tpu_free(cj);
    if (!c || !(cfg = json_pack("{s:o}", "chip", c))) return -1;
  }
  if (json_object_set_new(o, "schema_version", json_integer(CLI_REPORT_SCHEMA)) ||
      json_object_set_new(o, "command", json_string(cmd)) ||
      (cfg && json_object_set_new(o, "configuration", cfg)) ||
      json_object_set_new(o, "tpusim_version", json_string(TPU_VERSION)))
    return -1;
  return 0;
}

json_t *cli_json_real(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* Where this thread's reports go instead of stdout (tpu_cli_run), and its
** training run's step hook. */
static _Thread_local char **cap_report;
static _Thread_local cli_step_fn step_fn;
static _Thread_local void *step_ud;
void cli_capture_report(char **sink) {
  cap_report = sink;
  if (sink) *sink = NULL;
}
bool cli_reports_captured(void) { return cap_report != NULL; }
void cli_on_step(cli_step_fn fn, void *ud) {
  step_fn = fn;
  step_ud = ud;
}
bool cli_step_hooked(void) { return step_fn != NULL; }
int cli_step_hook(const char *cmd, json_t *step) {
  if (!step_fn) return 0;
  char *s = step ? json_dumps(step, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  const int stop = s ? step_fn(step_ud, s) : 1;
  free(s);
  if (!step) return cli_runtime_error(cmd, "out of memory");
  return stop ? cli_runtime_error(cmd, "stopped by the step callback") : 0;
}

int cli_print_json(const char *cmd, json_t *o, size_t flags) {
  if (!o || cli_report_envelope(cmd, o)) { json_decref(o); return cli_runtime_error(cmd, "out of memory"); }
  if (cap_report) {              /* the same text, with the same flags, into the caller's string */
    *cap_report = json_dumps(o, flags);
    json_decref(o);
    return *cap_report ? 0 : cli_runtime_error(cmd, "out of memory");
  }
  json_dumpf(o, stdout, flags);
  putchar('\n');
  json_decref(o);
  return 0;
}

int cli_point_main(const tpu_sweep_cmd *c, int argc, char **argv, size_t flags) {
  void *o = calloc(1, c->opts_size);
  if (!o) return cli_runtime_error(c->name, "out of memory");
  json_t *rep = NULL;
  int rc = c->parse(argc, argv, o);
  if (rc == CLI_RUN) rc = c->run(o, &rep, NULL);
  if (!rc && rep) rc = cli_print_json(c->name, rep, flags);
  free(o);
  return rc;
}

bool cli_stdout_is_tty(void) { return isatty(STDOUT_FILENO) == 1; }

double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
