/*
** sweep_csv.c -- a point's row of typed values and the tidy CSV made of
** the rows (docs/SWEEPS.md names the columns). A command declares its
** columns (tpu_sweep_cmd's fields, then its shared 'more' ones); its run
** sets each, by name, from what it computed; the sweep keeps the row in
** the point's journal entry and writes results.csv from the journal's
** rows alone, never from the reports, so a column is never emptied by a
** renamed report key, and a column the run did not set is an error.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_int.h"

/* {==================================================================
** The row
** ================================================================== */
static const char *const TYPE[] = { "an integer", "a real", "a string" };

/* Column i of the command (its fields, then its shared ones). */
static const tpu_sweep_field *column(const tpu_sweep_cmd *c, int i) {
  return i < c->nfields ? &c->fields[i] : &c->more[i - c->nfields];
}

static int ncolumns(const tpu_sweep_cmd *c) { return c->nfields + (c->more ? c->nmore : 0); }

tpu_sweep_row *sweep_row_new(const tpu_sweep_cmd *cmd) {
  tpu_sweep_row *r = calloc(1, sizeof *r);
  if (r && !(r->values = json_object())) {
    free(r);
    return NULL;
  }
  if (r) r->cmd = cmd;
  return r;
}

void sweep_row_free(tpu_sweep_row *row) {
  if (!row) return;
  json_decref(row->values);
  free(row);
}

/* Stores v (stolen; NULL when out of memory) as column 'name' of type t
** (-1: null, which any column takes); a misuse is kept in the row. */
static void set(tpu_sweep_row *row, const char *name, int t, json_t *v) {
  if (!row) return;            /* not a sweep point: v is NULL */
  int i = 0;
  while (i < ncolumns(row->cmd) && strcmp(column(row->cmd, i)->name, name)) i++;
  char why[96] = "";
  if (i == ncolumns(row->cmd)) snprintf(why, sizeof why, "is not one of its columns");
  else if (t >= 0 && (int)column(row->cmd, i)->type != t)
    snprintf(why, sizeof why, "holds %s; the run gave %s", TYPE[column(row->cmd, i)->type], TYPE[t]);
  else if (!v || json_object_set(row->values, name, v))
    snprintf(why, sizeof why, "could not be stored (out of memory, or not UTF-8)");
  json_decref(v);
  if (why[0] && !row->err[0]) snprintf(row->err, sizeof row->err, "%s's CSV column '%s' %s", row->cmd->name, name, why);
}

void tpu_sweep_row_int(tpu_sweep_row *row, const char *name, int64_t v) {
  set(row, name, TPU_SWEEP_INT, row ? json_integer((json_int_t)v) : NULL);
}

void tpu_sweep_row_real(tpu_sweep_row *row, const char *name, double v) {
  if (!isfinite(v)) tpu_sweep_row_null(row, name);
  else set(row, name, TPU_SWEEP_REAL, row ? json_real(v) : NULL);
}

void tpu_sweep_row_str(tpu_sweep_row *row, const char *name, const char *s, size_t len) {
  set(row, name, TPU_SWEEP_STR, row ? json_stringn(s, len) : NULL);
}

void tpu_sweep_row_null(tpu_sweep_row *row, const char *name) { set(row, name, -1, row ? json_null() : NULL); }

json_t *sweep_row_json(const tpu_sweep_row *row, char *err, size_t cap) {
  if (row->err[0]) {
    snprintf(err, cap, "%s", row->err);
    return NULL;
  }
  json_t *o = json_object();
  for (int i = 0; o && i < ncolumns(row->cmd); i++) {
    const char *name = column(row->cmd, i)->name;
    json_t *v = json_object_get(row->values, name);
    if (!v) {
      snprintf(err, cap, "%s's run gave no value for the CSV column '%s' (null if it has none)", row->cmd->name, name);
      json_decref(o);
      return NULL;
    }
    if (json_object_set(o, name, v)) {
      json_decref(o);
      o = NULL;
    }
  }
  if (!o) snprintf(err, cap, "out of memory");
  return o;
}
/* }================================================================== */

/* {==================================================================
** results.csv
** ================================================================== */
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

static void csv_header(tpu_text *t, const tpu_sweep_def *d) {
  tpu_text_printf(t, "point");
  for (int a = 0; a < d->naxes; a++) tpu_text_printf(t, ",%s", d->axes[a].name);
  tpu_text_printf(t, ",status");
  for (int c = 0; c < ncolumns(d->cmd); c++) tpu_text_printf(t, ",%s", column(d->cmd, c)->name);
  tpu_text_printf(t, ",error\n");
}

/* Column f's value v of a finished point's row; false when v is not of
** f's type (or absent). */
static bool csv_value(tpu_text *t, const tpu_sweep_field *f, const json_t *v) {
  if (json_is_null(v)) return true;
  switch (f->type) {
  case TPU_SWEEP_INT:
    if (json_is_integer(v)) tpu_text_printf(t, "%lld", (long long)json_integer_value(v));
    return json_is_integer(v);
  case TPU_SWEEP_REAL:
    if (json_is_real(v)) tpu_text_printf(t, "%.10g", json_real_value(v));
    return json_is_real(v);
  default:
    if (json_is_string(v)) csv_str(t, json_string_value(v));
    return json_is_string(v);
  }
}

/* Point p's line: its entry e is ok with a row, or failed (no figures). */
static tpu_status csv_row(tpu_text *t, const tpu_sweep_def *d, long p, const json_t *e, const char *path, char *err,
                          size_t cap) {
  const json_t *row = json_object_get(e, "row");
  const char *status = json_string_value(json_object_get(e, "status"));
  const bool done = status && !strcmp(status, "ok");
  if (done && !json_is_object(row))   /* a journal of a tpusim before rows: a rerun into its directory redoes it */
    return sweep_fail(err, cap, TPU_ERR_INPUT, "%s: point %ld: 'ok' without its 'row' of CSV values (rerun the sweep "
                      "into its directory to run it again)", path, p);
  tpu_text_printf(t, "%ld", p);
  for (int a = 0; a < d->naxes; a++) {
    tpu_text_printf(t, ",");
    csv_str(t, tpu_sweep_point_value(d, p, a));
  }
  tpu_text_printf(t, ",%s", status ? status : "");
  for (int c = 0; c < ncolumns(d->cmd); c++) {
    const tpu_sweep_field *f = column(d->cmd, c);
    tpu_text_printf(t, ",");
    if (done && !csv_value(t, f, json_object_get(row, f->name)))
      return sweep_fail(err, cap, TPU_ERR_INPUT, "%s: point %ld: column '%s': expected %s or null in its row, "
                        "got %s", path, p, f->name, TYPE[f->type],
                        json_object_get(row, f->name) ? tpu_json_type(json_object_get(row, f->name)) : "none");
  }
  const json_t *e_err = json_object_get(e, "error");
  tpu_text_printf(t, ",");
  if (json_is_string(e_err)) csv_str(t, json_string_value(e_err));
  tpu_text_printf(t, "\n");
  return TPU_OK;
}

tpu_status sweep_write_csv(const char *dir, const tpu_sweep_def *d, const sweep_journal *j, char *err, size_t cap) {
  char path[4096], jpath[4096];
  tpu_text t = { 0 };
  tpu_status st = TPU_OK;
  sweep_path(jpath, sizeof jpath, dir, "points.jsonl");
  csv_header(&t, d);
  for (long p = 0; p < j->npoints && !st; p++)
    if (j->entry[p]) st = csv_row(&t, d, p, j->entry[p], jpath, err, cap);
  sweep_path(path, sizeof path, dir, "results.csv");
  const int bad = !st && (t.oom || tpu_write_atomic(path, t.s, t.n));
  const int e = errno;
  tpu_free(t.s);
  if (bad)
    st = sweep_fail(err, cap, t.oom || e == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO, "%s: cannot write: %s", path,
                    t.oom ? "out of memory" : strerror(e));
  return st;
}
/* }================================================================== */
