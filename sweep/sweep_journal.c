/*
** sweep_journal.c -- a sweep's results directory: sweep.json (the
** definition, checked on every rerun), the journal points.jsonl (appended
** a line a point, reloaded on resume, a torn last line dropped) and the
** merge of shards' journals into one directory; the design is at the top
** of sweep.h.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sweep/sweep_int.h"

/* {==================================================================
** sweep.json
** ================================================================== */
/* tpu_json_decode, telling an allocation that failed (jansson may report
** it as a syntax error) from bad text: NULL with *oom set then. */
static json_t *loads(const char *text, json_error_t *e, bool *oom) {
  const unsigned long failed = tpu_alloc_failures();
  json_t *o = tpu_json_decode(text, 0, e);
  *oom = tpu_alloc_failures() != failed || (!o && json_error_code(e) == json_error_out_of_memory);
  if (*oom) {
    json_decref(o);
    o = NULL;
  }
  return o;
}

tpu_status sweep_json_load(const char *path, bool absent_ok, json_t **out, char *err, size_t cap) {
  char *text = NULL;
  *out = NULL;
  const tpu_status st = tpu_read_text(path, "JSON text", &text, err, cap);
  if (st == TPU_ERR_IO && errno == ENOENT && absent_ok) return TPU_OK;
  if (st) return st;
  json_error_t e;
  bool oom;
  *out = loads(text, &e, &oom);
  tpu_free(text);
  if (oom) return sweep_fail(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
  return *out ? TPU_OK : sweep_fail(err, cap, TPU_ERR_INPUT, "%s:%d:%d: %s", path, e.line, e.column, e.text);
}

tpu_status sweep_make_dir(const char *dir, char *err, size_t cap) {
  if (mkdir(dir, 0777) && errno != EEXIST)
    return sweep_fail(err, cap, TPU_ERR_IO, "--out %s: cannot create: %s", dir, strerror(errno));
  struct stat sb;                /* EEXIST may be a regular file, or a link to one */
  const int e = stat(dir, &sb) ? errno : S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
  return e ? sweep_fail(err, cap, TPU_ERR_IO, "--out %s: cannot be the results directory: %s", dir, strerror(e))
           : TPU_OK;
}

tpu_status sweep_open_dir(const char *dir, const tpu_sweep_def *d, char *err, size_t cap) {
  char path[4096], want_shard[32];
  const tpu_status made = sweep_make_dir(dir, err, cap);
  if (made) return made;
  snprintf(want_shard, sizeof want_shard, "%d/%d", d->shard, d->nshards);
  const unsigned long failed = tpu_alloc_failures();   /* a definition built short is no definition */
  json_t *want = json_pack("{s:o,s:s}", "definition", sweep_def_json(d), "shard", want_shard);
  if (!want || tpu_alloc_failures() != failed) {
    json_decref(want);
    return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
  }
  sweep_path(path, sizeof path, dir, "sweep.json");
  json_t *have = NULL;
  tpu_status st = sweep_json_load(path, true, &have, err, cap);
  if (!st && have && !json_equal(have, want))
    st = sweep_fail(err, cap, TPU_ERR_INPUT, "%s holds a different sweep (%s); use another --out, or remove it to "
                    "start over", path, json_equal(json_object_get(have, "definition"),
                                                   json_object_get(want, "definition")) ? "another shard"
                                                                                        : "other options or axes");
  else if (!st && !have) {
    char *s = json_dumps(want, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s) st = sweep_fail(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
    else if (tpu_write_atomic(path, s, strlen(s)))
      st = sweep_fail(err, cap, errno == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO, "%s: cannot write: %s", path,
                      strerror(errno));
    free(s);
  }
  json_decref(have);
  json_decref(want);
  return st;
}
/* }================================================================== */

/* {==================================================================
** The journal
** ================================================================== */
/* What is wrong with entry o, whose point is in range, as sweep_run writes
** entries (sweep.h): NULL when nothing. An "ok" entry carries its report
** (an object) and its row (an object; absent or null in a journal of a
** tpusim before rows, whose points a rerun runs again); a "failed" one its
** exit status and error. */
static const char *entry_problem(const json_t *o) {
  const char *status = json_string_value(json_object_get(o, "status"));
  const json_t *row = json_object_get(o, "row"), *ex = json_object_get(o, "exit");
  if (!json_is_object(json_object_get(o, "axes"))) return "field 'axes': expected an object";
  if (!status || (strcmp(status, "ok") && strcmp(status, "failed")))
    return "field 'status': expected \"ok\" or \"failed\"";
  if (!strcmp(status, "failed"))
    return !json_is_integer(ex) || json_integer_value(ex) < 1 || json_integer_value(ex) > 255
             ? "field 'exit': expected the failed point's exit status, 1..255"
             : !json_is_string(json_object_get(o, "error")) ? "field 'error': expected the failed point's message"
                                                              : NULL;
  if (!json_is_object(json_object_get(o, "report")))
    return "field 'report': expected the point's report (an object) with status \"ok\"";
  return row && !json_is_object(row) && !json_is_null(row) ? "field 'row': expected an object of CSV values" : NULL;
}

/* One line of the journal into j. */
static tpu_status journal_line(const char *path, long lineno, const char *line, sweep_journal *j, char *err,
                               size_t cap) {
  json_error_t e;
  bool oom;
  json_t *o = loads(line, &e, &oom);
  if (oom) return sweep_fail(err, cap, TPU_ERR_NOMEM, "%s:%ld: out of memory", path, lineno);
  const json_t *pt = json_object_get(o, "point");
  const bool in_range = json_is_integer(pt) && json_integer_value(pt) >= 0 && json_integer_value(pt) < j->npoints;
  const char *why = !o ? e.text : !in_range ? "no 'point' in 0..points-1" : entry_problem(o);
  if (why) {
    const tpu_status st = sweep_fail(err, cap, TPU_ERR_INPUT, "%s:%ld: not a journal entry of this sweep (%s)", path,
                                     lineno, why);
    json_decref(o);                /* after: e.text is in e, why may point into o */
    return st;
  }
  const long p = (long)json_integer_value(pt);
  if (!j->entry[p]) j->nfinished++;
  json_decref(j->entry[p]);
  j->entry[p] = o;               /* the last entry wins: a failed point rerun */
  return TPU_OK;
}

tpu_status sweep_journal_load(const char *dir, long npoints, sweep_journal *j, char *err, size_t cap) {
  char path[4096];
  sweep_path(path, sizeof path, dir, "points.jsonl");
  j->npoints = npoints;
  j->nfinished = 0;
  if (!(j->entry = calloc((size_t)npoints, sizeof *j->entry)))
    return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
  /* the one text reader: a NUL byte is bad input naming its line:column */
  char *text = NULL;
  tpu_status st = tpu_read_text(path, "a journal of JSON lines (docs/SWEEPS.md)", &text, err, cap);
  if (st == TPU_ERR_IO && errno == ENOENT) return TPU_OK;
  if (st) return st;
  const size_t len = strlen(text);
  size_t good = 0;
  long lineno = 0;
  for (char *s = text, *nl; !st && (nl = memchr(s, '\n', len - (size_t)(s - text))); s = nl + 1) {
    *nl = 0;
    st = journal_line(path, ++lineno, s, j, err, cap);
    good = (size_t)(nl + 1 - text);
  }
  tpu_free(text);
  /* a line without its newline was cut by a kill mid-write: drop it */
  if (!st && good < len && truncate(path, (off_t)good))
    st = sweep_fail(err, cap, TPU_ERR_IO, "%s: cannot drop the torn last line: %s", path, strerror(errno));
  return st;
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

bool sweep_entry_done(const json_t *e) {
  const char *status = json_string_value(json_object_get(e, "status"));
  return e && status && !strcmp(status, "ok") && json_is_object(json_object_get(e, "row"));
}
/* }================================================================== */

/* {==================================================================
** merge: the shards' journals into one directory
** ================================================================== */
/* DIR/points.jsonl (the entries in point order, written whole) and
** DIR/results.csv. */
static tpu_status write_merged(const char *dir, const tpu_sweep_def *d, const sweep_journal *j, char *err, size_t cap) {
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
  const int e = errno;
  tpu_free(t.s);
  if (bad)
    return sweep_fail(err, cap, t.oom || e == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO, "%s: cannot write: %s", path,
                      t.oom ? "out of memory" : strerror(e));
  return sweep_write_csv(dir, d, j, err, cap);
}

/* The definition of shard directory 'dir' parsed into d; *defjson holds
** the strings d borrows (the caller's, also on failure). */
static tpu_status load_def(const tpu_sweep_env *env, const char *dir, tpu_sweep_def *d, json_t **defjson, char *err,
                           size_t cap) {
  char path[4096];
  json_t *top = NULL;
  memset(d, 0, sizeof *d);
  const tpu_status st = sweep_json_load(sweep_path(path, sizeof path, dir, "sweep.json"), false, &top, err, cap);
  if (st) return st == TPU_ERR_IO ? TPU_ERR_INPUT : st;   /* a shard directory is input: exit 2 */
  json_t *def = json_incref(json_object_get(top, "definition"));
  json_decref(top);
  const json_t *args = json_object_get(def, "args");
  char *argv[TPU_SWEEP_MAX_ARGS + 1];
  int argc = 0;
  argv[argc++] = (char *)json_string_value(json_object_get(def, "command"));
  for (size_t i = 0; i < json_array_size(args) && argc <= TPU_SWEEP_MAX_ARGS; i++)
    argv[argc++] = (char *)json_string_value(json_array_get(args, i));
  if (!argv[0]) {
    json_decref(def);
    return sweep_fail(err, cap, TPU_ERR_INPUT, "%s: field 'definition': missing or not a sweep", path);
  }
  *defjson = def;               /* argv's strings live in it */
  return tpu_sweep_def_parse(d, env, argc, argv, err, cap);
}

/* Shard directory 'dir' (the same sweep as d, def) into 'all'. */
static tpu_status merge_one(const tpu_sweep_env *env, const char *dir, const char *first, const json_t *def,
                            sweep_journal *all, char *err, size_t cap) {
  tpu_sweep_def dk;
  json_t *defk = NULL;
  sweep_journal j = { 0 };
  tpu_status st = load_def(env, dir, &dk, &defk, err, cap);
  if (!st && !json_equal(def, defk))
    st = sweep_fail(err, cap, TPU_ERR_INPUT, "%s/sweep.json: a different sweep from %s's", dir, first);
  if (!st && (st = sweep_journal_load(dir, all->npoints, &j, err, cap)) == TPU_ERR_IO) st = TPU_ERR_INPUT;
  for (long p = 0; !st && p < all->npoints; p++)
    if (j.entry[p] && !all->entry[p]) {
      all->entry[p] = json_incref(j.entry[p]);
      all->nfinished++;
    }
  sweep_journal_free(&j);
  tpu_sweep_def_free(&dk);
  json_decref(defk);
  return st;
}

tpu_status tpu_sweep_merge(const tpu_sweep_env *env, const char *dir, char *const *dirs, int ndirs, long *npoints,
                           char *err, size_t errcap) {
  tpu_sweep_def d;
  json_t *def = NULL;
  sweep_journal all = { 0 };
  tpu_status st = load_def(env, dirs[0], &d, &def, err, errcap);
  *npoints = d.npoints;
  if (!st && !(all.entry = calloc((size_t)d.npoints, sizeof *all.entry)))
    st = sweep_fail(err, errcap, TPU_ERR_NOMEM, "out of memory");
  all.npoints = d.npoints;
  for (int k = 0; !st && k < ndirs; k++) st = merge_one(env, dirs[k], dirs[0], def, &all, err, errcap);
  if (!st && all.nfinished < d.npoints)
    st = sweep_fail(err, errcap, TPU_ERR_INPUT, "merge: the shards hold %ld of the %ld points; run the missing "
                    "shards first", all.nfinished, d.npoints);
  d.shard = d.nshards = 1;
  if (!st) st = sweep_open_dir(dir, &d, err, errcap);
  if (!st) st = write_merged(dir, &d, &all, err, errcap);
  sweep_journal_free(&all);
  tpu_sweep_def_free(&d);
  json_decref(def);
  return st;
}
/* }================================================================== */
