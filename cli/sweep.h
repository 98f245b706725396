/*
** sweep.h -- internals of `tpusim sweep` (cli/sweep.c: the definition, the
** journal and the CSV; cli/cmd_sweep.c: the command, the workers, merge).
** Not a public header.
**
** Design. A sweep is a command (train, matmul, run or pipeline) and its options, where an
** option whose value holds commas is an axis: `--batch 32,64 --cores 1,2`
** is four points, the first axis outermost (point 0 is batch 32 cores 1,
** point 1 batch 32 cores 2, ...). Each point is the single command's own
** parse and run functions (cli_point_cmd) on the argv the user would have
** typed, plus --json, so a point's figures are the single command's.
**
** The results directory holds
**   sweep.json    the definition (command, arguments, axes, points) and the
**                 shard; a different sweep in the same directory is refused;
**   points.jsonl  the journal: one line per finished point, appended with one
**                 write(2) to the O_APPEND file (by the point's thread, no lock
**                 held) in completion order and fdatasync'd by a group-commit
**                 thread (cmd_sweep.c's syncer); a torn last line
**                 (the process was killed mid-write) is dropped on reload;
**   results.csv   the tidy table, one row per point in point order, rebuilt
**                 whole (tpu_write_atomic) from the journal: so it is the
**                 same bytes for every -j, completion order, resume or merge
**                 of shards. Wall times are not in it (they differ from run
**                 to run); they are in the journal's reports.
*/
#ifndef TPU_CLI_SWEEP_H
#define TPU_CLI_SWEEP_H
#include <stdbool.h>
#include <stddef.h>

#include "cli/cli_int.h"

#define SWEEP_MAX_AXES 16
#define SWEEP_MAX_ARGS 128

typedef struct sweep_axis {
  const char *name;            /* the CSV column: "batch", or the key of --set KEY=... */
  const char *flag;            /* "--batch" or "--set" */
  const char *prefix;          /* "" or "KEY=" (for --set) */
  char **values;               /* nvalues strings, as given */
  int nvalues;
} sweep_axis;

typedef struct sweep_def {
  const cli_point_cmd *cmd;
  const char *args[SWEEP_MAX_ARGS];   /* the command's options as given (fixed and axes) */
  bool owned[SWEEP_MAX_ARGS];         /* args[i] is this definition's copy (freed with it) */
  int nargs;
  const char *fixed[SWEEP_MAX_ARGS];  /* the fixed options, as argv tokens */
  int nfixed;
  sweep_axis axes[SWEEP_MAX_AXES];
  int naxes;
  long npoints;
  int shard, nshards;          /* this run's share: points p with p % nshards == shard - 1 */
  const char *file;            /* the --file it came from (its messages name it), or NULL */
} sweep_def;

/* Parses the command's options (argv after the command name) into d's
** fixed options and axes; 0, or 2 after a message. d->cmd is set. */
int sweep_def_parse(sweep_def *d, int argc, char **argv);
void sweep_def_free(sweep_def *d);
/* Point p's value of axis a. */
const char *sweep_point_value(const sweep_def *d, long p, int a);
/* Point p's argv (argv[0] the command's name, then --threads 1 where the
** command always takes it, the fixed
** options, the axes' values and --json) into argv (cap entries); argc. */
int sweep_point_argv(const sweep_def *d, long p, char **argv, int cap, char *bufs, size_t bufcap);
/* The definition as JSON (what sweep.json compares). */
struct json_t *sweep_def_json(const sweep_def *d);

/* Reads 'path' as one JSON document through the one text reader (a NUL
** byte is bad input at its line:column) into *out; with 'absent_ok' a file
** that does not exist gives *out NULL. 0, or the exit status after a
** message. */
int sweep_json_load(const char *path, bool absent_ok, struct json_t **out);

/* The journal: the last entry of every point (NULL when none). */
typedef struct sweep_journal {
  struct json_t **entry;       /* npoints */
  long npoints, nfinished;
} sweep_journal;
/* Loads DIR/points.jsonl (absent: empty), dropping a torn last line (and
** cutting the file there). 0, or the exit status after a message. */
int sweep_journal_load(const char *dir, long npoints, sweep_journal *j);
void sweep_journal_free(sweep_journal *j);
/* Appends one entry (one line, one write(2)) to fd; the caller syncs. 0
** or -1. */
int sweep_journal_append(int fd, struct json_t *entry);
/* Writes DIR/results.csv from the journal's entries, in point order. 0, or
** 1 after a message. */
int sweep_write_csv(const char *dir, const sweep_def *d, const sweep_journal *j);
/* DIR/points.jsonl (the entries in point order, written whole) and
** DIR/results.csv, as `sweep merge` leaves them. 0, or 1 after a message. */
int sweep_write_merged(const char *dir, const sweep_def *d, const sweep_journal *j);
/* --emit ENGINE (parallel or slurm): d->nshards shards of -j 'jobs' into
** DIR's scripts (sweep_emit.c). 0, or the exit status after a message. */
int sweep_emit(const char *engine, const char *dir, sweep_def *d, long jobs);
/* --file FILE: a JSON sweep as the argv of the command line (COMMAND and
** its options; sweep_file.c). 0, or 2 after a message naming line:col. */
typedef struct sweep_file { char *argv[SWEEP_MAX_ARGS]; int argc; } sweep_file;
int sweep_file_load(const char *path, sweep_file *f);
void sweep_file_free(sweep_file *f);
/* "DIR/NAME" into buf. */
const char *sweep_path(char *buf, size_t cap, const char *dir, const char *name);
#endif
