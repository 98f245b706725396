/*
** cmd_sweep.c -- `tpusim sweep`: run a command over a grid of its options on
** host threads, resumably, into a tidy CSV and JSON lines; `tpusim sweep
** merge` joins shards. The definition, journal and CSV are in sweep.c; the
** design is at the top of sweep.h.
*/
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/sweep.h"

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

/* {==================================================================
** The results directory
** ================================================================== */
/* DIR and sweep.json: created, or checked to hold this very sweep. */
static int open_dir(const char *dir, const sweep_def *d) {
  char path[4096], want_shard[32];
  if (mkdir(dir, 0777) && errno != EEXIST) return cli_runtime_error(CMD, "--out %s: cannot create: %s", dir, strerror(errno));
  snprintf(want_shard, sizeof want_shard, "%d/%d", d->shard, d->nshards);
  json_t *want = json_pack("{s:o,s:s}", "definition", sweep_def_json(d), "shard", want_shard);
  if (!want) return cli_runtime_error(CMD, "out of memory");
  sweep_path(path, sizeof path, dir, "sweep.json");
  json_t *have = NULL;
  int rc = sweep_json_load(path, true, &have);
  if (!rc && have && !json_equal(have, want))
    rc = cli_usage_error(CMD, "%s holds a different sweep (%s); use another --out, or remove it to start over", path,
                         json_equal(json_object_get(have, "definition"), json_object_get(want, "definition"))
                           ? "another shard" : "other options or axes");
  else if (!rc && !have) {
    char *s = json_dumps(want, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s || tpu_write_atomic(path, s, strlen(s))) rc = cli_runtime_error(CMD, "%s: cannot write: %s", path, strerror(errno));
    free(s);
  }
  json_decref(have);
  json_decref(want);
  return rc;
}
/* }================================================================== */

/* {==================================================================
** The points, on host threads
** ================================================================== */
typedef struct sweep_run {
  const sweep_def *d;
  void **popts;                /* parsed options of every pending point */
  char **pbufs;                /* the axis values their argv points into */
  long *todo, ntodo;           /* pending points, in point order */
  atomic_long next;
  pthread_mutex_t mu;          /* the journal's fd, the counters and progress */
  pthread_cond_t wrote;        /* to the syncer: a new line in the journal */
  int fd;
  long written, synced;        /* journal lines appended, and known on disk */
  bool stop;                   /* the workers are done: the syncer's last round */
  long done, failed, io_errors;
  double t0;
  bool tty;
} sweep_run;

static void progress(sweep_run *r, bool final) {
  if (!r->tty) return;
  const double el = cli_now_s() - r->t0;
  const double eta = r->done ? el / (double)r->done * (double)(r->ntodo - r->done) : 0;
  fprintf(stderr, "\r%ld/%ld points, %ld failed, %.0f s elapsed, ETA %.0f s   %s", r->done, r->ntodo, r->failed,
          el, eta, final ? "\n" : "");
}

/* Runs point p and records it in the journal. */
static void run_point(sweep_run *r, long p, void *opts) {
  char err[2048];
  json_t *rep = NULL, *axes = json_object();
  cli_capture_errors(err, sizeof err);
  int rc = r->d->cmd->run(opts, &rep);
  const int env = cli_report_envelope(r->d->cmd->name, rc ? NULL : rep);   /* also forgets this point's chip */
  if (!rc && rep && env) rc = cli_runtime_error(CMD, "out of memory");
  cli_capture_errors(NULL, 0);
  for (int a = 0; a < r->d->naxes; a++)
    json_object_set_new(axes, r->d->axes[a].name, json_string(sweep_point_value(r->d, p, a)));
  json_t *e = json_pack("{s:I,s:o,s:s}", "point", (json_int_t)p, "axes", axes, "status", rc ? "failed" : "ok");
  if (rc) {
    json_object_set_new(e, "exit", json_integer(rc));
    json_object_set_new(e, "error", json_string(err));
  }
  json_object_set_new(e, "report", rep ? rep : json_null());
  /* Encoded and appended outside the lock: one write(2) to an O_APPEND file
  ** lands whole, and other points need not wait for this one's JSON. The
  ** line counts as written (for the syncer) only once write(2) returned. */
  const int bad = !e || sweep_journal_append(r->fd, e);
  pthread_mutex_lock(&r->mu);
  r->io_errors += bad;
  r->written++;
  pthread_cond_signal(&r->wrote);
  r->done++;
  r->failed += rc != 0;
  progress(r, false);
  pthread_mutex_unlock(&r->mu);
  json_decref(e);
}

/* Group commit: one thread fdatasyncs the journal whenever lines were
** appended since its last sync, so the points never wait for the disk and
** one sync covers every line written before it (a kill -9 loses nothing
** written; an OS crash at most the lines of the sync in flight). */
static void *syncer(void *ud) {
  sweep_run *r = ud;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->stop && r->written == r->synced) pthread_cond_wait(&r->wrote, &r->mu);
    if (r->written == r->synced) break;
    const long target = r->written;
    pthread_mutex_unlock(&r->mu);
    const int bad = fdatasync(r->fd) != 0;
    pthread_mutex_lock(&r->mu);
    r->synced = target;
    r->io_errors += bad;
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void *worker(void *ud) {
  sweep_run *r = ud;
  for (long i; (i = atomic_fetch_add(&r->next, 1)) < r->ntodo;) run_point(r, r->todo[i], r->popts[i]);
  return NULL;
}

/* Parses every pending point's options on this thread (getopt_long is not
** reentrant), so a bad option stops the sweep before anything runs. */
static int parse_points(sweep_run *r) {
  char *argv[SWEEP_MAX_ARGS + 8], err[2048];
  const size_t cap = 4096;
  for (long i = 0; i < r->ntodo; i++) {
    if (!(r->pbufs[i] = malloc(cap)) || !(r->popts[i] = calloc(1, r->d->cmd->opts_size)))
      return cli_runtime_error(CMD, "out of memory");
    const int argc = sweep_point_argv(r->d, r->todo[i], argv, SWEEP_MAX_ARGS + 8, r->pbufs[i], cap);
    cli_capture_errors(err, sizeof err);
    const int rc = r->d->cmd->parse(argc, argv, r->popts[i]);
    cli_capture_errors(NULL, 0);
    if (rc != CLI_RUN)   /* from a --file, its options and axes are the command's options */
      return cli_usage_error(CMD, "%s%s%s, point %ld: %s", r->d->file ? r->d->file : "", r->d->file ? ": " : "",
                             r->d->cmd->name, r->todo[i], err);
  }
  return 0;
}

/* OpenBLAS (Debian's pthreads build) starts its pool of CPUs - 1 threads
** when the library loads, and each spins on sched_yield for about 2^28
** cycles before it sleeps: a tenth of a second of a core, taken from the
** points while a sweep's workers are busy (docs/BENCHMARKS.md, Sweeps:
** -j 2 took 0.67 of -j 1 with the pool, 0.54 without). The points are the
** sweep's parallelism, so the pool is stopped before they start; OpenBLAS
** starts it again, as it was, at the first threaded call (a point on the
** reference backend), so BLAS results are what they would have been.
** Exported by libopenblas's threaded builds (its fork handler calls it);
** not in cblas.h, and absent from a serial build (Debian's
** libopenblas0-serial alternative), hence weak: NULL there, and no pool. */
extern int blas_thread_shutdown_(void) __attribute__((weak));
/* Point p's chip: --chip with its --set overrides, loaded as the point
** will load it; 0, or the exit status after a message (2 for a bad key or
** value, naming it and what is allowed). 'last' (cap bytes) holds the last
** chip checked, so a sweep whose chip is no axis loads it once. */
static int check_chip(const sweep_def *d, long p, const cli_common *c, char *last, size_t cap) {
  char key[4096], err[1024];
  int n = snprintf(key, sizeof key, "%s", c->chip);
  for (int k = 0; k < c->nsets && n >= 0 && (size_t)n < sizeof key; k++)
    n += snprintf(key + n, sizeof key - (size_t)n, "\n%s", c->sets[k]);
  const bool fits = n >= 0 && (size_t)n < sizeof key && (size_t)n < cap;
  if (fits && !strcmp(key, last)) return 0;
  tpu_chip_config chip;
  tpu_status st = tpu_chip_config_load(c->chip, &chip, err, sizeof err);
  for (int k = 0; st == TPU_OK && k < c->nsets; k++) st = tpu_chip_config_set(&chip, c->sets[k], err, sizeof err);
  if (st != TPU_OK)
    return cli_fail(CMD, st, "%s%s%s, point %ld: %s (found before any point ran)", d->file ? d->file : "",
                    d->file ? ": " : "", d->cmd->name, p, err);
  snprintf(last, cap, "%s", fits ? key : "");
  return 0;
}

/* Parses every point of this shard once, and loads its chip, before
** anything is written to the results directory: a bad value in the
** options or axes, or a chip configuration the point would refuse, is
** exit 2 and leaves no sweep.json behind that a corrected rerun would not
** match. */
static int check_points(const sweep_def *d) {
  char *argv[SWEEP_MAX_ARGS + 8], err[2048];
  const size_t cap = 4096;
  char *buf = malloc(cap), *last = calloc(1, cap);
  void *opts = calloc(1, d->cmd->opts_size);
  int rc = buf && last && opts ? 0 : cli_runtime_error(CMD, "out of memory");
  for (long p = d->shard - 1; !rc && p < d->npoints; p += d->nshards) {
    const int argc = sweep_point_argv(d, p, argv, SWEEP_MAX_ARGS + 8, buf, cap);
    memset(opts, 0, d->cmd->opts_size);
    cli_capture_errors(err, sizeof err);
    const int prc = d->cmd->parse(argc, argv, opts);
    cli_capture_errors(NULL, 0);
    if (prc != CLI_RUN)   /* from a --file, its options and axes are the command's options */
      rc = cli_usage_error(CMD, "%s%s%s, point %ld: %s", d->file ? d->file : "", d->file ? ": " : "", d->cmd->name,
                           p, err);
    else if (d->cmd->chip)
      rc = check_chip(d, p, (const cli_common *)((const char *)opts + d->cmd->com_offset), last, cap);
  }
  free(buf);
  free(last);
  free(opts);
  return rc;
}

static int run_points(sweep_run *r, long jobs) {
  int rc = parse_points(r);
  if (rc) return rc;
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  r->t0 = cli_now_s();
  r->tty = isatty(STDERR_FILENO) == 1;
  if (jobs > r->ntodo) jobs = r->ntodo > 0 ? r->ntodo : 1;
  pthread_t th[1024], sy;
  long started = 0;
  const bool sync_thread = pthread_create(&sy, NULL, syncer, r) == 0;
  for (; started < jobs - 1; started++)
    if (pthread_create(&th[started], NULL, worker, r)) break;
  worker(r);                   /* this thread is one of the workers */
  for (long k = 0; k < started; k++) pthread_join(th[k], NULL);
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_signal(&r->wrote);
  pthread_mutex_unlock(&r->mu);
  if (sync_thread) pthread_join(sy, NULL);
  else if (fdatasync(r->fd)) r->io_errors++;
  progress(r, true);
  return 0;
}

/* The pending points of this shard: not in the journal, or failed there. */
static int pending(const sweep_def *d, const sweep_journal *j, sweep_run *r) {
  if (!(r->todo = calloc((size_t)d->npoints, sizeof *r->todo)) || !(r->popts = calloc((size_t)d->npoints, sizeof *r->popts)) ||
      !(r->pbufs = calloc((size_t)d->npoints, sizeof *r->pbufs)))
    return cli_runtime_error(CMD, "out of memory");
  for (long p = d->shard - 1; p < d->npoints; p += d->nshards) {
    const json_t *e = j->entry[p];
    if (!e || strcmp(json_string_value(json_object_get(e, "status")), "ok")) r->todo[r->ntodo++] = p;
  }
  return 0;
}
/* }================================================================== */

static int sweep(const sweep_opts *o, sweep_def *d) {
  char path[4096];
  sweep_journal j = { 0 };
  sweep_run r = { .d = d, .fd = -1 };
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.wrote, NULL);
  int rc = check_points(d);
  if (!rc) rc = open_dir(o->out, d);
  if (!rc) rc = sweep_journal_load(o->out, d->npoints, &j);
  if (!rc) rc = pending(d, &j, &r);
  const long skipped = (d->npoints - d->shard + d->nshards) / d->nshards - r.ntodo;
  if (!rc && (r.fd = open(sweep_path(path, sizeof path, o->out, "points.jsonl"), O_WRONLY | O_APPEND | O_CREAT, 0666)) < 0)
    rc = cli_runtime_error(CMD, "%s: cannot open: %s", path, strerror(errno));
  if (!rc) rc = run_points(&r, o->jobs);
  if (!rc && r.io_errors) rc = cli_runtime_error(CMD, "%s: %ld points could not be written", path, r.io_errors);
  if (!rc) {
    sweep_journal_free(&j);
    rc = sweep_journal_load(o->out, d->npoints, &j);
  }
  if (!rc) rc = sweep_write_csv(o->out, d, &j);
  if (!rc && !o->no_plot) rc = cli_plot_sweep(sweep_path(path, sizeof path, o->out, "results.csv"));
  if (!rc)
    printf("sweep: %ld points of %ld (shard %d/%d): %ld run, %ld already done, %ld failed; %s/results.csv\n",
           r.ntodo + skipped, d->npoints, d->shard, d->nshards, r.ntodo, skipped, r.failed, o->out);
  if (!rc && r.failed) rc = 1;
  for (long i = 0; r.popts && i < r.ntodo; i++) {
    free(r.popts[i]);
    free(r.pbufs[i]);
  }
  free(r.popts);
  free(r.pbufs);
  free(r.todo);
  if (r.fd >= 0) close(r.fd);
  pthread_mutex_destroy(&r.mu);
  pthread_cond_destroy(&r.wrote);
  sweep_journal_free(&j);
  return rc;
}

/* {==================================================================
** merge: the shards' journals into one directory
** ================================================================== */
/* The definition of shard directory 'dir' parsed into d (d zeroed). */
static int load_def(const char *dir, sweep_def *d, json_t **defjson) {
  char path[4096];
  json_t *top = NULL;
  const int rc = sweep_json_load(sweep_path(path, sizeof path, dir, "sweep.json"), false, &top);
  if (rc) return rc;
  json_t *def = json_incref(json_object_get(top, "definition"));
  json_decref(top);
  const json_t *args = json_object_get(def, "args");
  char *argv[SWEEP_MAX_ARGS + 1];
  int argc = 0;
  argv[argc++] = (char *)json_string_value(json_object_get(def, "command"));
  for (size_t i = 0; i < json_array_size(args) && argc <= SWEEP_MAX_ARGS; i++)
    argv[argc++] = (char *)json_string_value(json_array_get(args, i));
  if (!argv[0]) { json_decref(def); return cli_usage_error(CMD, "%s: field 'definition': missing or not a sweep", path); }
  *defjson = def;               /* argv's strings live in it */
  return sweep_def_parse(d, argc, argv);
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
  sweep_def d = { 0 };
  json_t *def = NULL;
  int rc = load_def(argv[i], &d, &def);
  sweep_journal all = { 0 };
  if (!rc && !(all.entry = calloc((size_t)d.npoints, sizeof *all.entry))) rc = cli_runtime_error(CMD, "out of memory");
  all.npoints = d.npoints;
  for (int k = i; !rc && k < argc; k++) {
    sweep_def dk = { 0 };
    json_t *defk = NULL;
    sweep_journal j = { 0 };
    rc = load_def(argv[k], &dk, &defk);
    if (!rc && !json_equal(def, defk)) rc = cli_usage_error(CMD, "%s/sweep.json: a different sweep from %s's", argv[k], argv[i]);
    if (!rc) rc = sweep_journal_load(argv[k], d.npoints, &j);
    for (long p = 0; !rc && p < d.npoints; p++)
      if (j.entry[p] && !all.entry[p]) { all.entry[p] = json_incref(j.entry[p]); all.nfinished++; }
    sweep_journal_free(&j);
    sweep_def_free(&dk);
    json_decref(defk);
  }
  if (!rc && all.nfinished < d.npoints)
    rc = cli_usage_error(CMD, "merge: the shards hold %ld of the %ld points; run the missing shards first",
                         all.nfinished, d.npoints);
  d.shard = d.nshards = 1;
  if (!rc) rc = open_dir(out, &d);
  if (!rc) rc = sweep_write_merged(out, &d, &all);
  char path[4096];
  if (!rc && !no_plot) rc = cli_plot_sweep(sweep_path(path, sizeof path, out, "results.csv"));
  if (!rc) printf("sweep merge: %ld points from %d shard directories; %s/results.csv\n", d.npoints, argc - i, out);
  sweep_journal_free(&all);
  sweep_def_free(&d);
  json_decref(def);
  return rc;
}
/* }================================================================== */

int cli_cmd_sweep(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "merge")) return merge(argc - 1, argv + 1);
  sweep_opts o;
  int rc = parse_sweep_opts(argc, argv, &o);
  if (rc != CLI_RUN) return rc;
  sweep_def d = { 0 };
  sweep_file f = { .argc = 0 };
  if (o.file && o.first < argc)
    return cli_usage_error(CMD, "--file %s holds the command and its options; '%s' is one too many", o.file, argv[o.first]);
  if (o.file && (rc = sweep_file_load(o.file, &f))) {
    sweep_file_free(&f);
    return rc;
  }
  rc = o.file ? sweep_def_parse(&d, f.argc, f.argv) : sweep_def_parse(&d, argc - o.first, argv + o.first);
  d.shard = o.shard;
  d.nshards = o.nshards;
  d.file = o.file;
  if (!rc && o.emit) {
    /* default: 8 shards of one job each, at most one per point */
    d.nshards = (int)(o.shards ? o.shards : 8);
    if (d.nshards > d.npoints) d.nshards = (int)d.npoints;
    rc = sweep_emit(o.emit, o.out, &d, o.jobs_given ? o.jobs : 1);
  } else if (!rc) rc = sweep(&o, &d);
  sweep_def_free(&d);
  sweep_file_free(&f);
  return rc;
}
