/*
** sweep_run.c -- a sweep's points on host threads: every pending point
** parsed and checked before anything is written, then run by -j workers,
** each point journaled by its own thread as it finishes and the journal
** fdatasync'd by one group-commit thread; then results.csv. The design is
** at the top of sweep.h.
*/
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sweep/sweep_int.h"

typedef struct sweep_run {
  const tpu_sweep_def *d;
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
  FILE *progress;              /* or NULL */
} sweep_run;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(sweep_run *r, bool final) {
  if (!r->progress) return;
  const double el = now_s() - r->t0;
  const double eta = r->done ? el / (double)r->done * (double)(r->ntodo - r->done) : 0;
  fprintf(r->progress, "\r%ld/%ld points, %ld failed, %.0f s elapsed, ETA %.0f s   %s", r->done, r->ntodo, r->failed,
          el, eta, final ? "\n" : "");
}

/* Point p's journal entry: its axes, status, report and row (NULL when
** out of memory). */
static json_t *entry_of(const tpu_sweep_def *d, long p, int rc, const char *err, json_t *rep, json_t *row) {
  json_t *axes = json_object();
  for (int a = 0; a < d->naxes; a++)
    json_object_set_new(axes, d->axes[a].name, json_string(tpu_sweep_point_value(d, p, a)));
  json_t *e = json_pack("{s:I,s:o,s:s}", "point", (json_int_t)p, "axes", axes, "status", rc ? "failed" : "ok");
  if (rc) {
    json_object_set_new(e, "exit", json_integer(rc));
    json_object_set_new(e, "error", json_string(err));
  }
  json_object_set_new(e, "report", rep ? rep : json_null());
  json_object_set_new(e, "row", row ? row : json_null());
  return e;
}

/* Runs point p and records it in the journal. A run that succeeds but
** gives no report, or leaves a column of its row without a value, fails
** the point (1). */
static void run_point(sweep_run *r, long p, void *opts) {
  const tpu_sweep_env *env = r->d->env;
  char err[2048];
  json_t *rep = NULL, *row = NULL;
  tpu_sweep_row *values = sweep_row_new(r->d->cmd);
  sweep_capture(env, err, sizeof err);
  int rc = values ? r->d->cmd->run(opts, &rep, values) : 1;
  const int end = env->report_end ? env->report_end(r->d->cmd->name, rc ? NULL : rep) : 0;
  sweep_capture(env, NULL, 0);
  if (rc && tpu_cancel_requested()) {   /* interrupted, not failed: no entry, so a rerun runs it */
    json_decref(rep);
    sweep_row_free(values);
    return;
  }
  if (!values || (!rc && rep && end)) {
    rc = 1;
    snprintf(err, sizeof err, "out of memory");
  }
  if (!rc && !rep) {             /* every point runs with --json: the journal holds its report */
    rc = 1;
    snprintf(err, sizeof err, "%s's run gave no report", r->d->cmd->name);
  }
  if (!rc && !(row = sweep_row_json(values, err, sizeof err))) rc = 1;
  sweep_row_free(values);
  json_t *e = entry_of(r->d, p, rc, err, rep, row);
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
  /* tpu_cancel_requested (base.h): no new point starts */
  for (long i; !tpu_cancel_requested() && (i = atomic_fetch_add(&r->next, 1)) < r->ntodo;)
    run_point(r, r->todo[i], r->popts[i]);
  return NULL;
}

/* Point p's options parsed into opts (opts_size zeroed bytes), argv's
** values into buf (cap bytes); a refusal is bad input naming the point. */
static tpu_status parse_point(const tpu_sweep_def *d, long p, void *opts, char *buf, size_t cap, char *err,
                              size_t errcap) {
  char *argv[TPU_SWEEP_MAX_ARGS + 8], msg[2048];
  const int argc = tpu_sweep_point_argv(d, p, argv, TPU_SWEEP_MAX_ARGS + 8, buf, cap);
  sweep_capture(d->env, msg, sizeof msg);
  const int rc = d->cmd->parse(argc, argv, opts);
  sweep_capture(d->env, NULL, 0);
  if (rc == TPU_SWEEP_GO) return TPU_OK;
  /* from a sweep file, its options and axes are the command's options */
  return sweep_fail(err, errcap, TPU_ERR_INPUT, "%s%s%s, point %ld: %s", d->file ? d->file : "", d->file ? ": " : "",
                    d->cmd->name, p, msg);
}

/* Parses every pending point's options on this thread (getopt_long is not
** reentrant), so a bad option stops the sweep before anything runs. */
static tpu_status parse_points(sweep_run *r, char *err, size_t errcap) {
  const size_t cap = 4096;
  tpu_status st = TPU_OK;
  for (long i = 0; i < r->ntodo && !st; i++) {
    if (!(r->pbufs[i] = malloc(cap)) || !(r->popts[i] = calloc(1, r->d->cmd->opts_size)))
      return sweep_fail(err, errcap, TPU_ERR_NOMEM, "out of memory");
    st = parse_point(r->d, r->todo[i], r->popts[i], r->pbufs[i], cap, err, errcap);
  }
  return st;
}

/* Parses points first, first + step, ... once, and checks each (its chip), before
** anything is written to the results directory: a bad value in the
** options or axes, or a chip configuration the point would refuse, is
** bad input and leaves no sweep.json behind that a corrected rerun would
** not match. */
tpu_status sweep_check_points(const tpu_sweep_def *d, long first, long step, char *err, size_t errcap) {
  char msg[2048];
  const size_t cap = 4096;
  char *buf = malloc(cap), *memo = calloc(1, cap);
  void *opts = calloc(1, d->cmd->opts_size);
  tpu_status st = buf && memo && opts ? TPU_OK : sweep_fail(err, errcap, TPU_ERR_NOMEM, "out of memory");
  for (long p = first; !st && p < d->npoints; p += step) {
    memset(opts, 0, d->cmd->opts_size);
    if ((st = parse_point(d, p, opts, buf, cap, err, errcap)) || !d->cmd->check) continue;
    sweep_capture(d->env, msg, sizeof msg);
    const int rc = d->cmd->check(opts, memo, cap);
    sweep_capture(d->env, NULL, 0);
    if (rc)
      st = sweep_fail(err, errcap, rc == 2 ? TPU_ERR_INPUT : TPU_ERR_RUNTIME, "%s%s%s, point %ld: %s (found before "
                      "any point ran)", d->file ? d->file : "", d->file ? ": " : "", d->cmd->name, p, msg);
  }
  free(buf);
  free(memo);
  free(opts);
  return st;
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

static tpu_status run_points(sweep_run *r, long jobs, char *err, size_t errcap) {
  tpu_status st = parse_points(r, err, errcap);
  if (st) return st;
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  r->t0 = now_s();
  if (jobs > r->ntodo) jobs = r->ntodo > 0 ? r->ntodo : 1;
  pthread_t th[1024], sy;
  long started = 0;
  const bool sync_thread = pthread_create(&sy, NULL, syncer, r) == 0;
  for (; started < jobs - 1 && started < 1024; started++)
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
  return TPU_OK;
}

/* The pending points of this shard: not finished in the journal. */
static tpu_status pending(const tpu_sweep_def *d, const sweep_journal *j, sweep_run *r, char *err, size_t errcap) {
  if (!(r->todo = calloc((size_t)d->npoints, sizeof *r->todo)) || !(r->popts = calloc((size_t)d->npoints, sizeof *r->popts)) ||
      !(r->pbufs = calloc((size_t)d->npoints, sizeof *r->pbufs)))
    return sweep_fail(err, errcap, TPU_ERR_NOMEM, "out of memory");
  for (long p = d->shard - 1; p < d->npoints; p += d->nshards)
    if (!sweep_entry_done(j->entry[p])) r->todo[r->ntodo++] = p;
  return TPU_OK;
}

static void run_free(sweep_run *r) {
  for (long i = 0; r->popts && i < r->ntodo; i++) {
    free(r->popts[i]);
    free(r->pbufs[i]);
  }
  free(r->popts);
  free(r->pbufs);
  free(r->todo);
  if (r->fd >= 0) close(r->fd);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->wrote);
}

tpu_status tpu_sweep_run(const tpu_sweep_def *d, const char *dir, long jobs, FILE *progress_to, tpu_sweep_counts *out,
                         char *err, size_t errcap) {
  char path[4096];
  sweep_journal j = { 0 };
  sweep_run r = { .d = d, .fd = -1, .progress = progress_to };
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.wrote, NULL);
  tpu_status st = sweep_check_points(d, d->shard - 1, d->nshards, err, errcap);
  if (!st) st = sweep_open_dir(dir, d, err, errcap);
  if (!st) st = sweep_journal_load(dir, d->npoints, &j, err, errcap);
  if (!st) st = pending(d, &j, &r, err, errcap);
  out->points = (d->npoints - d->shard + d->nshards) / d->nshards;
  out->done_before = out->points - r.ntodo;
  if (!st && (r.fd = open(sweep_path(path, sizeof path, dir, "points.jsonl"), O_WRONLY | O_APPEND | O_CREAT, 0666)) < 0)
    st = sweep_fail(err, errcap, TPU_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!st) st = run_points(&r, jobs, err, errcap);
  /* cancelled: the journal holds the points that finished, and no results.csv is written */
  if (!st && tpu_cancel_requested() && r.done < r.ntodo)
    st = sweep_fail(err, errcap, TPU_ERR_RUNTIME, "interrupted after %ld of %ld points; rerun the sweep to resume",
                    r.done, r.ntodo);
  if (!st && r.io_errors)
    st = sweep_fail(err, errcap, TPU_ERR_IO, "%s: %ld points could not be written", path, r.io_errors);
  if (!st) {
    sweep_journal_free(&j);
    st = sweep_journal_load(dir, d->npoints, &j, err, errcap);
  }
  if (!st) st = sweep_write_csv(dir, d, &j, err, errcap);
  out->run = r.ntodo;
  out->failed = r.failed;
  run_free(&r);
  sweep_journal_free(&j);
  return st;
}
