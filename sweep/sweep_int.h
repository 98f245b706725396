/*
** sweep_int.h -- what the sweep module's files share (sweep.h has the
** design). Not a public header.
**
**   sweep_def.c      the definition (axes, points, argv), the command table
**   sweep_file.c     sweep files into argv
**   sweep_journal.c  the journal, the results directory, merge
**   sweep_csv.c      the rows and results.csv
**   sweep_run.c      the points on host threads, the group commit
**   sweep_emit.c     GNU parallel and Slurm scripts
**   sweep_plot.c     the plots (gnuplot)
*/
#ifndef TPU_SWEEP_INT_H
#define TPU_SWEEP_INT_H
#include <jansson.h>

#include "sweep/sweep.h"

/* Writes the message into err (cap bytes) and returns st. */
tpu_status sweep_fail(char *err, size_t cap, tpu_status st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* "DIR/NAME" into buf. */
const char *sweep_path(char *buf, size_t cap, const char *dir, const char *name);
/* The command of env named 'name', or NULL. */
const tpu_sweep_cmd *sweep_cmd_find(const tpu_sweep_env *env, const char *name);
/* "train, matmul, run or pipeline": env's commands for messages, into buf. */
const char *sweep_cmd_list(const tpu_sweep_env *env, char *buf, size_t cap);
/* The definition as JSON (what sweep.json compares); NULL out of memory. */
json_t *sweep_def_json(const tpu_sweep_def *d);
/* Calls env's capture hook, if any. */
void sweep_capture(const tpu_sweep_env *env, char *buf, size_t cap);

/* Parses and checks (the command's check: its chip) points first,
** first + step, ... of d before anything is written: TPU_OK, or
** TPU_ERR_INPUT naming the point, the option and what is allowed (the
** sweep run checks its shard, emit every point). */
tpu_status sweep_check_points(const tpu_sweep_def *d, long first, long step, char *err, size_t errcap);

/* Reads 'path' as one JSON document through the one text reader (a NUL
** byte is bad input at its line:column) into *out; with 'absent_ok' a file
** that does not exist gives *out NULL. */
tpu_status sweep_json_load(const char *path, bool absent_ok, json_t **out, char *err, size_t cap);
/* DIR created, or checked to be a directory: TPU_OK, or TPU_ERR_IO
** naming --out DIR (an output that cannot be written; the caller exits 1). */
tpu_status sweep_make_dir(const char *dir, char *err, size_t cap);
/* DIR and DIR/sweep.json: created, or checked to hold this very sweep. */
tpu_status sweep_open_dir(const char *dir, const tpu_sweep_def *d, char *err, size_t cap);

/* The journal: the last entry of every point (NULL when none). */
typedef struct sweep_journal {
  json_t **entry;              /* npoints */
  long npoints, nfinished;
} sweep_journal;
/* Loads DIR/points.jsonl (absent: empty), dropping a torn last line (and
** cutting the file there). */
tpu_status sweep_journal_load(const char *dir, long npoints, sweep_journal *j, char *err, size_t cap);
void sweep_journal_free(sweep_journal *j);
/* Appends one entry (one line, one write(2)) to fd; the caller syncs. 0
** or -1. */
int sweep_journal_append(int fd, json_t *entry);
/* Whether entry e is a finished point: status "ok" with its row (a journal
** written before rows existed has none: its points run again). */
bool sweep_entry_done(const json_t *e);

/* One point's row (tpu_sweep_row): the values set so far, by column. */
struct tpu_sweep_row {
  const tpu_sweep_cmd *cmd;
  json_t *values;              /* column -> value (null, integer, real or string) */
  char err[256];               /* the first misuse of the row ("" when none) */
};
/* A new row for cmd's columns; NULL out of memory. */
tpu_sweep_row *sweep_row_new(const tpu_sweep_cmd *cmd);
void sweep_row_free(tpu_sweep_row *row);   /* NULL is fine */
/* The row's values as a JSON object in cmd's column order (the journal
** entry's "row"; the caller's), or NULL with the message when a column
** was left without a value, set wrong, or memory ran out. */
json_t *sweep_row_json(const tpu_sweep_row *row, char *err, size_t cap);
/* DIR/results.csv from the journal's entries (their rows), in point order. */
tpu_status sweep_write_csv(const char *dir, const tpu_sweep_def *d, const sweep_journal *j, char *err, size_t cap);
#endif
