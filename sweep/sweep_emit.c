/*
** sweep_emit.c -- `tpusim sweep --emit parallel|slurm`: the sweep as shards
** for GNU parallel (a job list) or Slurm (a job array and a dependent merge
** job), written into the results directory; docs/SWEEPS.md shows both.
**
** Every shard I of N is `tpusim sweep --out DIR/shard-I --shard I/N -j J
** COMMAND ...`, so the engines only start processes: a shard killed or
** failed is rerun by them (parallel --resume-failed, a requeue) and resumes
** from its own journal; `tpusim sweep merge --out DIR DIR/shard-*` then
** writes DIR/results.csv, the same bytes as a single-machine sweep's.
*/
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sweep/sweep_int.h"

/* 's' quoted for the shell: 'it'\''s'. */
static void shq(tpu_text *t, const char *s) {
  if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@%") == strlen(s)) {
    tpu_text_printf(t, "%s", s);
    return;
  }
  tpu_text_printf(t, "'");
  for (; *s; s++) tpu_text_printf(t, *s == '\'' ? "'\\''" : "%c", *s);
  tpu_text_printf(t, "'");
}

/* The tpusim binary (absolute) and DIR (absolute): jobs may start elsewhere. */
static tpu_status paths(const char *dir, char *exe, char *adir, char *err, size_t cap) {
  const ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);
  if (n < 0) return sweep_fail(err, cap, TPU_ERR_IO, "/proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  const tpu_status made = sweep_make_dir(dir, err, cap);
  if (made) return made;
  if (!realpath(dir, adir)) return sweep_fail(err, cap, TPU_ERR_IO, "--out %s: %s", dir, strerror(errno));
  return TPU_OK;
}

/* One shard's command; 'shard' is a number or a shell variable. */
static void shard_cmd(tpu_text *t, const char *exe, const char *adir, const tpu_sweep_def *d, const char *shard,
                      long jobs) {
  shq(t, exe);
  tpu_text_printf(t, " sweep --out ");
  shq(t, adir);
  tpu_text_printf(t, "/shard-%s --shard %s/%d -j %ld ", shard, shard, d->nshards, jobs);
  shq(t, d->cmd->name);
  for (int i = 0; i < d->nargs; i++) {
    tpu_text_printf(t, " ");
    shq(t, d->args[i]);
  }
}

static void merge_cmd(tpu_text *t, const char *exe, const char *adir, int nshards) {
  shq(t, exe);
  tpu_text_printf(t, " sweep merge --out ");
  shq(t, adir);
  for (int s = 1; s <= nshards; s++) {
    tpu_text_printf(t, " ");
    shq(t, adir);
    tpu_text_printf(t, "/shard-%d", s);
  }
  tpu_text_printf(t, "\n");
}

static tpu_status write_file(const char *adir, const char *name, tpu_text *t, mode_t mode, char *err, size_t cap) {
  char path[PATH_MAX + 64];
  sweep_path(path, sizeof path, adir, name);
  const bool oom = t->oom;
  const int bad = oom || tpu_write_atomic(path, t->s, t->n) || chmod(path, mode);
  const int e = errno;
  tpu_free(t->s);
  *t = (tpu_text){ 0 };
  return bad ? sweep_fail(err, cap, oom ? TPU_ERR_NOMEM : TPU_ERR_IO, "%s: cannot write: %s", path,
                          oom ? "out of memory" : strerror(e)) : TPU_OK;
}

/* DIR/parallel-jobs.txt: one line per shard; DIR/parallel-merge.sh. */
static tpu_status emit_parallel(const char *exe, const char *adir, const tpu_sweep_def *d, long jobs, char *note,
                                size_t notecap, char *err, size_t cap) {
  tpu_text t = { 0 };
  char s[16];
  for (int i = 1; i <= d->nshards; i++) {
    snprintf(s, sizeof s, "%d", i);
    shard_cmd(&t, exe, adir, d, s, jobs);
    tpu_text_printf(&t, "\n");
  }
  tpu_status st = write_file(adir, "parallel-jobs.txt", &t, 0644, err, cap);
  tpu_text_printf(&t, "#!/bin/sh\n# The shards' results into one results.csv (after parallel-jobs.txt ran).\nexec ");
  merge_cmd(&t, exe, adir, d->nshards);
  if (!st) st = write_file(adir, "parallel-merge.sh", &t, 0755, err, cap);
  tpu_free(t.s);
  snprintf(note, notecap, "wrote %s/parallel-jobs.txt (%d shards of %ld points) and %s/parallel-merge.sh; run\n"
           "  parallel --will-cite --joblog %s/joblog --resume-failed < %s/parallel-jobs.txt && %s/parallel-merge.sh\n",
           adir, d->nshards, d->npoints, adir, adir, adir, adir);
  return st;
}

/* DIR/slurm-array.sh (a job array over the shards), DIR/slurm-merge.sh and
** DIR/slurm-submit.sh (submits the array, then the merge after it). */
static tpu_status emit_slurm(const char *exe, const char *adir, const tpu_sweep_def *d, long jobs, char *note,
                             size_t notecap, char *err, size_t cap) {
  tpu_text t = { 0 };
  tpu_text_printf(&t, "#!/bin/sh\n#SBATCH --job-name=tpusim-sweep\n#SBATCH --array=1-%d\n#SBATCH --cpus-per-task=%ld\n"
                  "#SBATCH --output=%s/slurm-%%A_%%a.out\n# shard $SLURM_ARRAY_TASK_ID of %d; a rerun resumes it\nexec ",
                  d->nshards, jobs, adir, d->nshards);
  shard_cmd(&t, exe, adir, d, "$SLURM_ARRAY_TASK_ID", jobs);
  tpu_text_printf(&t, "\n");
  tpu_status st = write_file(adir, "slurm-array.sh", &t, 0755, err, cap);
  tpu_text_printf(&t, "#!/bin/sh\n#SBATCH --job-name=tpusim-sweep-merge\n#SBATCH --output=%s/slurm-merge-%%j.out\nexec ", adir);
  merge_cmd(&t, exe, adir, d->nshards);
  if (!st) st = write_file(adir, "slurm-merge.sh", &t, 0755, err, cap);
  tpu_text_printf(&t, "#!/bin/sh\n# Submits the shards as a job array and the merge as a job that runs after\n"
                  "# all of them succeeded; prints both job ids.\nset -e\ncd ");
  shq(&t, adir);
  tpu_text_printf(&t, "\narray=$(sbatch --parsable slurm-array.sh)\n"
                  "merge=$(sbatch --parsable --dependency=afterok:${array%%%%;*} slurm-merge.sh)\necho \"$array $merge\"\n");
  if (!st) st = write_file(adir, "slurm-submit.sh", &t, 0755, err, cap);
  tpu_free(t.s);
  snprintf(note, notecap, "wrote %s/slurm-array.sh (--array=1-%d over %ld points), %s/slurm-merge.sh and "
           "%s/slurm-submit.sh; run\n  %s/slurm-submit.sh\n", adir, d->nshards, d->npoints, adir, adir, adir);
  return st;
}

tpu_status tpu_sweep_emit(const tpu_sweep_def *d, tpu_sweep_engine engine, const char *dir, long jobs, char *note,
                          size_t notecap, char *err, size_t errcap) {
  char exe[PATH_MAX], adir[PATH_MAX];
  note[0] = 0;
  /* every point, as the plain sweep checks its own: scripts that would
  ** fail on the cluster are not written */
  tpu_status st = sweep_check_points(d, 0, 1, err, errcap);
  if (!st) st = paths(dir, exe, adir, err, errcap);
  if (st) return st;
  return engine == TPU_SWEEP_PARALLEL ? emit_parallel(exe, adir, d, jobs, note, notecap, err, errcap)
                                      : emit_slurm(exe, adir, d, jobs, note, notecap, err, errcap);
}
