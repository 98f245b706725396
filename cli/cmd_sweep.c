/*
** cmd_sweep.c -- `tpusim sweep` and `tpusim sweep merge`: their options
** and what they print. The sweep itself (definition, journal, points on
** host threads, CSV, shards, scripts) is sweep/sweep.h's; the commands it
** can run are cli_sweep_env's (sweep_cmds.c).
*/
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_int.h"

#define CMD "sweep"

static const char HELP[] =
  "usage: tpusim sweep [--out DIR] [-j N] [--shard I/N] COMMAND [options of COMMAND]\n"
  "       tpusim sweep [--out DIR] [-j N] [--shard I/N] --file SWEEP.json\n"
  "       tpusim sweep merge [--no-plot] --out DIR SHARD_DIR...\n\n"
  "Runs COMMAND (train, matmul, run or pipeline) once per point of a grid: an option whose value\n"
  "is a comma list is an axis (--batch 32,64,128 --cores 1,2,4; --set KEY=V1,V2 is\n"
  "the axis KEY); the others are fixed. The first axis is outermost. Each point is\n"
  "exactly `tpusim COMMAND ... --json`, run in this process on a host thread.\n\n"
  "  --out DIR      results directory (default sweep-out): sweep.json, points.jsonl\n"
  "                 (each point's full report, appended as it finishes) and\n"
  "                 results.csv (one row per point, in point order); docs/SWEEPS.md\n"
  "  --file F       the sweep as JSON: command, options, axes (docs/SWEEPS.md)\n"
  "  -j N           points run at once (default: CPUs online); results identical for every N\n"
  "  --no-plot      no plots (default: tpusim plot's default set, beside results.csv)\n"
  "  --shard I/N    run only points p with p % N == I-1 (a deterministic split);\n"
  "                 `sweep merge` joins the shards' directories into one\n"
  "  --emit parallel|slurm  run nothing; write DIR/parallel-jobs.txt (GNU parallel, one\n"
  "                 line per shard) or DIR/slurm-array.sh, slurm-merge.sh and\n"
  "                 slurm-submit.sh (a job array over the shards and a dependent merge)\n"
  "  --shards N     shards for --emit (default 8, at most one per point); each shard\n"
  "                 runs -j N points at once (default 1 with --emit)\n\n"
  "Rerunning a sweep into the same DIR skips its finished points (and retries failed\n"
  "ones); a different sweep in an existing DIR is refused. A failing point is\n"
  "recorded with its error and does not stop the others; the exit status is then 1.\n";

typedef struct sweep_opts {
  const char *out, *emit, *file;      /* --emit parallel|slurm, or NULL */
  long jobs, shards;           /* -j; --shards (with --emit) */
  int shard, nshards;
  int first;                   /* argv index of COMMAND */
  bool jobs_given, no_plot;
} sweep_opts;

/* {==================================================================
** Options (before COMMAND; the rest belongs to COMMAND)
** ================================================================== */
static int parse_shard(const char *v, sweep_opts *o) {
  char tail;
  if (sscanf(v, "%d/%d%c", &o->shard, &o->nshards, &tail) != 2 || o->nshards < 1 || o->nshards > 100000 ||
      o->shard < 1 || o->shard > o->nshards)
    return cli_usage_error(CMD, "--shard %s: expected I/N with 1 <= I <= N, e.g. 2/4", v);
  return 0;
}

static int parse_long(const char *flag, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  const long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    return cli_usage_error(CMD, "%s: expected a whole number in %ld..%ld, got '%s'", flag, lo, hi, v);
  *out = x;
  return 0;
}

static int parse_sweep_opts(int argc, char **argv, sweep_opts *o) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  *o = (sweep_opts){ .out = "sweep-out", .jobs = ncpu > 0 ? ncpu : 1, .shard = 1, .nshards = 1 };
  int i = 1, rc = 0;
  for (; i < argc && !rc && argv[i][0] == '-'; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return fputs(HELP, stdout) < 0;
    if (!strcmp(a, "--no-plot")) { o->no_plot = true; continue; }
    const bool jn = !strncmp(a, "-j", 2) && a[2];      /* -j4 */
    const char *eq = jn ? a + 1 : strchr(a, '=');          /* the value follows eq */
    const size_t nlen = jn ? 2 : eq ? (size_t)(eq - a) : strlen(a);
    const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return cli_usage_error(CMD, "%s needs a value", a);
    if (!eq) i++;
    if (nlen == 5 && !strncmp(a, "--out", 5)) o->out = v;
    else if ((nlen == 2 && !strncmp(a, "-j", 2)) || (nlen == 6 && !strncmp(a, "--jobs", 6))) {
      rc = parse_long("-j", v, 1, 1024, &o->jobs);
      o->jobs_given = true;
    }
    else if (nlen == 7 && !strncmp(a, "--shard", 7)) rc = parse_shard(v, o);
    else if (nlen == 6 && !strncmp(a, "--file", 6)) o->file = v;
    else if (nlen == 8 && !strncmp(a, "--shards", 8)) rc = parse_long("--shards", v, 1, 100000, &o->shards);
    else if (nlen == 6 && !strncmp(a, "--emit", 6)) {
      if (strcmp(v, "parallel") && strcmp(v, "slurm"))
        return cli_usage_error(CMD, "--emit: expected parallel or slurm, got '%s'", v);
      o->emit = v;
    }
    else return cli_usage_error(CMD, "unknown option '%.*s' before the command (tpusim sweep --help)", (int)nlen, a);
  }
  o->first = i;
  if (!rc && o->shards && !o->emit) return cli_usage_error(CMD, "--shards goes with --emit parallel|slurm");
  if (!rc && o->emit && o->nshards > 1) return cli_usage_error(CMD, "--emit writes every shard; drop --shard");
  return rc ? rc : CLI_RUN;
}
/* }================================================================== */

/* A point refused for an option of the sweep's own, given after the
** command: where it goes. "" otherwise. */
static const char *own_option_hint(const char *err) {
  static const char *const OWN[] = { "--out", "--jobs", "-j", "--no-plot", "--shard", "--shards", "--emit", "--file" };
  const char *u = strstr(err, "unknown option '");   /* the command's parser, or the axes' */
  u = u ? u + 15 : strstr(err, "': expected an option of ") ? strchr(err, '\'') : NULL;
  if (!u) return "";
  const size_t n = strcspn(++u, "'=");   /* the option as given, to its quote or '=' */
  for (size_t i = 0; i < sizeof OWN / sizeof OWN[0]; i++)
    if (strlen(OWN[i]) == n && !strncmp(u, OWN[i], n))
      return "; it is an option of tpusim sweep: give it before the command (tpusim sweep --out DIR train ...)";
  return "";
}

/* The exit status after the sweep's message: what could not be written
** (TPU_ERR_IO: the results directory, its files, the scripts) is a
** runtime failure, 1, as for every command's outputs; bad input is 2. */
static int sweep_failed(tpu_status st, const char *err) {
  return st == TPU_ERR_IO ? cli_runtime_error(CMD, "%s", err) : cli_fail(CMD, st, "%s%s", err, own_option_hint(err));
}

/* The sweep's plots beside DIR/results.csv. 0, or the exit status after a message. */
static int plots(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/results.csv", dir);
  return cli_plot_sweep(path);
}

static int run(const sweep_opts *o, tpu_sweep_def *d) {
  char err[4200];
  tpu_sweep_counts n;
  const bool quiet = cli_reports_captured();   /* in-process (call.h): no progress, a report for the summary */
  tpu_status st = tpu_sweep_run(d, o->out, o->jobs, !quiet && isatty(STDERR_FILENO) == 1 ? stderr : NULL, &n, err,
                                sizeof err);
  if (st) return sweep_failed(st, err);
  /* a single point draws no line; with every point failed, plot says why instead */
  const int rc = o->no_plot || d->naxes == 0 || (n.failed && n.failed == n.points) ? 0 : plots(o->out);
  if (n.failed && n.failed == n.points && !o->no_plot) {
    char path[4200], why[4200];
    snprintf(path, sizeof path, "%s/results.csv", o->out);
    const tpu_sweep_plot_opts po = { .csv = path };
    if (tpu_sweep_plot(&po, true, why, sizeof why)) fprintf(stderr, "tpusim sweep: %s\n", why);
  }
  if (rc) return rc;
  if (quiet) {
    char csv[4200];
    snprintf(csv, sizeof csv, "%s/results.csv", o->out);
    const int prc = cli_print_json(CMD, json_pack("{s:I,s:I,s:i,s:i,s:I,s:I,s:I,s:s}", "points", (json_int_t)n.points,
                                       "sweep_points", (json_int_t)d->npoints, "shard", d->shard, "shards", d->nshards,
                                       "run", (json_int_t)n.run, "done_before", (json_int_t)n.done_before,
                                       "failed", (json_int_t)n.failed, "results_csv", csv), JSON_COMPACT);
    return prc ? prc : n.failed ? 1 : 0;
  }
  printf("sweep: %ld points of %ld (shard %d/%d): %ld run, %ld already done, %ld failed; %s/results.csv\n", n.points,
         d->npoints, d->shard, d->nshards, n.run, n.done_before, n.failed, o->out);
  return n.failed ? 1 : 0;
}

static int merge(int argc, char **argv) {
  const char *out = NULL;
  bool no_plot = false;
  int i = 1;
  for (; i < argc && !strncmp(argv[i], "--", 2); i++)
    if (!strcmp(argv[i], "--no-plot")) no_plot = true;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strncmp(argv[i], "--out=", 6)) out = argv[i] + 6;
    else return cli_usage_error(CMD, "merge: unknown option '%s' (tpusim sweep merge --out DIR SHARD_DIR...)", argv[i]);
  if (!out || i == argc) return cli_usage_error(CMD, "merge: expected --out DIR and the shards' directories");
  char err[4200];
  long npoints;
  const tpu_status st = tpu_sweep_merge(cli_sweep_env(), out, argv + i, argc - i, &npoints, err, sizeof err);
  if (st) return sweep_failed(st, err);
  const int rc = no_plot ? 0 : plots(out);
  if (!rc) printf("sweep merge: %ld points from %d shard directories; %s/results.csv\n", npoints, argc - i, out);
  return rc;
}

int cli_cmd_sweep(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "merge")) return merge(argc - 1, argv + 1);
  sweep_opts o;
  int rc = parse_sweep_opts(argc, argv, &o);
  if (rc != CLI_RUN) return rc;
  if (o.file && o.first < argc)
    return cli_usage_error(CMD, "--file %s holds the command and its options; '%s' is one too many", o.file, argv[o.first]);
  const tpu_sweep_env *env = cli_sweep_env();
  tpu_sweep_def d = { .npoints = 0 };
  tpu_sweep_file f = { .argc = 0 };
  char err[4200];
  tpu_status st = o.file ? tpu_sweep_file_load(o.file, env, &f, err, sizeof err) : TPU_OK;
  rc = 0;
  if (st) rc = cli_fail(CMD, st, "%s", err);   /* names the file itself */
  else if ((st = o.file ? tpu_sweep_def_parse(&d, env, f.argc, f.argv, err, sizeof err)
                        : tpu_sweep_def_parse(&d, env, argc - o.first, argv + o.first, err, sizeof err)))
    rc = cli_fail(CMD, st, "%s%s%s%s", o.file ? o.file : "", o.file ? ": " : "", err, own_option_hint(err));
  d.shard = o.shard;
  d.nshards = o.nshards;
  d.file = o.file;
  if (!rc && o.emit) {
    /* default: 8 shards of one job each, at most one per point */
    d.nshards = (int)(o.shards ? o.shards : 8);
    if (d.nshards > d.npoints) d.nshards = (int)d.npoints;
    char note[8 * 4096];   /* a few absolute paths */
    st = tpu_sweep_emit(&d, strcmp(o.emit, "parallel") ? TPU_SWEEP_SLURM : TPU_SWEEP_PARALLEL, o.out,
                        o.jobs_given ? o.jobs : 1, note, sizeof note, err, sizeof err);
    if (st) rc = sweep_failed(st, err);
    else fputs(note, stdout);
  } else if (!rc) rc = run(&o, &d);
  tpu_sweep_def_free(&d);
  tpu_sweep_file_free(&f);
  return rc;
}
