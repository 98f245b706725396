/*
** sweep.h -- a sweep: one command run over a grid of its options, on host
** threads, resumably, into a tidy CSV and JSON lines; shards, their merge,
** GNU parallel and Slurm scripts, and the plots (docs/SWEEPS.md).
**
** The grid. A sweep is a command and its options, where an option whose
** value holds commas is an axis: `--batch 32,64 --cores 1,2` is four
** points, the first axis outermost (point 0 is batch 32 cores 1, point 1
** batch 32 cores 2, ...); `--set KEY=V1,V2` is the axis KEY. Each point is
** the command's own parse and run functions (tpu_sweep_cmd) on the argv
** the user would have typed, plus --json, so a point's figures are the
** single command's. A sweep file (tpu_sweep_file_load) is turned into that
** very argv, so a file sweep and the same command-line sweep are one
** definition.
**
** The commands. This module knows no command: its caller hands it the one
** table of the commands a sweep can run (tpu_sweep_env), each with its
** option parser, its check, its run function and its CSV columns (a table
** of typed fields). A point's run fills its row (tpu_sweep_row) from its
** own results, beside its JSON report; the row is what the CSV is made of,
** and a declared column the run left without a value fails the point
** (null is a value: "this point has none").
**
** The results directory holds
**   sweep.json    the definition (command, arguments, axes, points) and the
**                 shard; a different sweep in the same directory is refused;
**   points.jsonl  the journal: one line per finished point, {"point",
**                 "axes", "status", "exit" and "error" when failed,
**                 "report" (an object when ok), "row"}, appended with
**                 one write(2) to the O_APPEND file (by the point's
**                 thread, no lock held) in completion order and
**                 fdatasync'd by a group-commit thread; a torn last line
**                 (the process was killed mid-write) is dropped on
**                 reload, any other line that is not such an entry is
**                 refused naming the file and the line;
**   results.csv   the tidy table, one row per point in point order, rebuilt
**                 whole (tpu_write_atomic) from the journal's rows: so it is
**                 the same bytes for every -j, completion order, resume or
**                 merge of shards. Wall times are not in it (they differ
**                 from run to run); they are in the journal's reports.
** CSV columns: point, one per axis (as given), status, the command's
** fields, error. Integers print as %lld, reals with %.10g (non-finite
** ones, and null, as an empty field), strings quoted when they hold a
** comma, quote or newline.
**
** Shards and engines. Shard I of N runs the points p with p % N == I-1 into
** its own directory; tpu_sweep_merge joins the shards' journals into the
** results.csv one process would write. tpu_sweep_emit writes the shards as
** a GNU parallel job list or a Slurm job array with a dependent merge: the
** engines only start processes, and a shard rerun resumes from its journal.
**
** Not done here: running on other machines (the engines do), retrying a
** failed point within one run (a rerun of the sweep does), drawing without
** gnuplot (the plots' scripts and data are still written).
**
** Errors: functions that can fail return a tpu_status and write the
** message into err (errcap bytes): TPU_ERR_INPUT for bad input (a bad
** option or file, another sweep in the directory, a shard directory
** merge cannot read), TPU_ERR_IO or TPU_ERR_NOMEM for what could not be
** written or allocated (the results directory: --out naming a regular
** file is TPU_ERR_IO, an output problem, which `tpusim sweep` exits 1 on).
*/
#ifndef TPU_SWEEP_H
#define TPU_SWEEP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"

struct json_t;

#define TPU_SWEEP_MAX_AXES 16
#define TPU_SWEEP_MAX_ARGS 128
/* What a command's parse returns to let the point run (anything else is
** the exit status after a message). */
#define TPU_SWEEP_GO (-1)

/* {==================================================================
** A command's CSV columns, and one point's values of them
** ================================================================== */
typedef enum tpu_sweep_type { TPU_SWEEP_INT, TPU_SWEEP_REAL, TPU_SWEEP_STR } tpu_sweep_type;
typedef struct tpu_sweep_field {
  const char *name;            /* the CSV column */
  tpu_sweep_type type;
} tpu_sweep_field;

typedef struct tpu_sweep_row tpu_sweep_row;   /* opaque: made by the sweep for each point */

/* Sets column 'name' of the row (NULL: nothing to do, for a run that is no
** sweep point). A real that is not finite is null. These functions can't
** fail: a name the command does not declare, a value of another type, or
** running out of memory is kept in the row and fails the point. */
void tpu_sweep_row_int(tpu_sweep_row *row, const char *name, int64_t v);
void tpu_sweep_row_real(tpu_sweep_row *row, const char *name, double v);
void tpu_sweep_row_str(tpu_sweep_row *row, const char *name, const char *s, size_t len);   /* s[0..len) */
void tpu_sweep_row_null(tpu_sweep_row *row, const char *name);   /* the point has no such value */
/* }================================================================== */

/* {==================================================================
** The commands a sweep runs, handed in by the caller
** ================================================================== */
typedef struct tpu_sweep_cmd {
  const char *name;            /* argv[0] of its points, and COMMAND in a sweep */
  size_t opts_size;            /* bytes of its parsed options */
  bool threads;                /* takes --threads in every mode: its points get --threads 1 (theirs wins) */
  /* Reads argv (argv[0] the name) into opts (opts_size zeroed bytes):
  ** TPU_SWEEP_GO, or an exit status after a message. It may use
  ** getopt_long's globals: the sweep calls it on one thread. */
  int (*parse)(int argc, char **argv, void *opts);
  /* NULL, or checks parsed options as their run will find them (their chip
  ** and its --set overrides) before any point runs: 0, or an exit status
  ** after a message. memo (memocap bytes, "" when a sweep starts) is the
  ** check's own between the points of one sweep: what it last checked. */
  int (*check)(const void *opts, char *memo, size_t memocap);
  /* Runs parsed options: 0, or an exit status after a message. The report
  ** into *report (the caller's; NULL unless the options say --json), the
  ** CSV columns into row (NULL: not a sweep point). A point (always
  ** --json) that succeeds without a report fails. Its state is on its
  ** own stack: several points run at once, on host threads. */
  int (*run)(const void *opts, struct json_t **report, tpu_sweep_row *row);
  const tpu_sweep_field *fields;   /* its CSV columns, in order, ... */
  int nfields;
  const tpu_sweep_field *more;     /* ... then these (NULL: none), columns commands share */
  int nmore;
} tpu_sweep_cmd;

typedef struct tpu_sweep_env {
  const tpu_sweep_cmd *const *cmds;  /* the commands a sweep can run, in the order messages list them */
  int ncmds;
  /* Routes this thread's messages into buf (cap bytes, the last message
  ** wins) while buf is set; NULL: back. The sweep captures each point's
  ** parse, check and run so as to record or report its message. */
  void (*capture)(char *buf, size_t cap);
  /* Adds the keys every report ends with to a point's report (NULL when the
  ** point failed: nothing to add, but called, for per-thread state): 0, or
  ** -1 when out of memory. NULL: nothing. */
  int (*report_end)(const char *cmd, struct json_t *report);
} tpu_sweep_env;
/* }================================================================== */

/* {==================================================================
** The definition
** ================================================================== */
typedef struct tpu_sweep_axis {
  const char *name;            /* the CSV column: "batch", or the key of --set KEY=... */
  const char *flag;            /* "--batch" or "--set" */
  const char *prefix;          /* "" or "KEY=" (for --set) */
  char **values;               /* nvalues strings, as given */
  int nvalues;
} tpu_sweep_axis;

typedef struct tpu_sweep_def {
  const tpu_sweep_env *env;    /* borrowed: must outlive the definition */
  const tpu_sweep_cmd *cmd;
  const char *args[TPU_SWEEP_MAX_ARGS];   /* the command's options as given (fixed and axes) */
  bool owned[TPU_SWEEP_MAX_ARGS];         /* args[i] is this definition's copy (freed with it) */
  int nargs;
  const char *fixed[TPU_SWEEP_MAX_ARGS];  /* the fixed options, as argv tokens */
  int nfixed;
  tpu_sweep_axis axes[TPU_SWEEP_MAX_AXES];
  int naxes;
  long npoints;
  int shard, nshards;          /* this run's share: points p with p % nshards == shard - 1 (1/1 after parse) */
  const char *file;            /* the sweep file it came from (messages name it), or NULL */
} tpu_sweep_def;

/* Parses COMMAND and its options (argv[0] the command's name) into *d
** (zeroed first; d->env = env). argv's strings are borrowed: they must
** outlive d. TPU_OK, or TPU_ERR_INPUT (TPU_ERR_NOMEM) with the message;
** free d with tpu_sweep_def_free either way. */
tpu_status tpu_sweep_def_parse(tpu_sweep_def *d, const tpu_sweep_env *env, int argc, char **argv, char *err,
                               size_t errcap);
void tpu_sweep_def_free(tpu_sweep_def *d);    /* a zeroed one is fine */
/* Point p's value of axis a. This function can't fail. */
const char *tpu_sweep_point_value(const tpu_sweep_def *d, long p, int a);
/* Point p's argv (argv[0] the command's name, then --threads 1 where the
** command always takes it, the fixed options, the axes' values and
** --json; NULL-terminated) into argv (cap entries), the axes' values
** written into bufs (bufcap bytes). Returns argc; can't fail. */
int tpu_sweep_point_argv(const tpu_sweep_def *d, long p, char **argv, int cap, char *bufs, size_t bufcap);

/* A sweep file: { "command": ..., "options": {...}, "axes": [...] }
** (docs/SWEEPS.md) as the argv of the command line (COMMAND and its
** options; each string owned by f: tpu_sweep_file_free, also on failure).
** TPU_OK, or TPU_ERR_INPUT with "FILE:LINE:COL: field '...': ..." in err. */
typedef struct tpu_sweep_file { char *argv[TPU_SWEEP_MAX_ARGS]; int argc; } tpu_sweep_file;
tpu_status tpu_sweep_file_load(const char *path, const tpu_sweep_env *env, tpu_sweep_file *f, char *err,
                               size_t errcap);
void tpu_sweep_file_free(tpu_sweep_file *f);
/* }================================================================== */

/* {==================================================================
** Running, merging, emitting, plotting
** ================================================================== */
typedef struct tpu_sweep_counts {
  long points;                 /* of this shard */
  long run, done_before;       /* run now; finished in the journal already */
  long failed;                 /* of those run now */
} tpu_sweep_counts;

/* Runs d's shard into DIR: parses every pending point and checks its chip
** (a bad one: TPU_ERR_INPUT before anything is written), creates or checks
** DIR/sweep.json, runs the points not finished in DIR's journal on 'jobs'
** host threads (progress on 'progress' when not NULL), journals each, and
** writes DIR/results.csv. TPU_OK (failed points are counted in *out, not
** an error), or the status and message of what stopped it. Once
** tpu_cancel_requested (base.h), no point starts, a point that fails then is
** left out of the journal (a rerun runs it), results.csv is not rewritten,
** and the run ends TPU_ERR_RUNTIME ("interrupted ..."). */
tpu_status tpu_sweep_run(const tpu_sweep_def *d, const char *dir, long jobs, FILE *progress, tpu_sweep_counts *out,
                         char *err, size_t errcap);
/* Joins the shard directories dirs[0..ndirs) (the same sweep, every point
** among them) into DIR: its sweep.json, its journal in point order and its
** results.csv. *npoints gets the sweep's points. TPU_OK, or the status
** and message. */
tpu_status tpu_sweep_merge(const tpu_sweep_env *env, const char *dir, char *const *dirs, int ndirs, long *npoints,
                           char *err, size_t errcap);

typedef enum tpu_sweep_engine { TPU_SWEEP_PARALLEL, TPU_SWEEP_SLURM } tpu_sweep_engine;
/* Writes d as d->nshards shards of -j 'jobs' into DIR's scripts for the
** engine (absolute paths: the tpusim binary, DIR), and into note (notecap
** bytes) what was written and how to run it. Every point is parsed and
** checked first, as tpu_sweep_run checks its shard's: a bad one is
** TPU_ERR_INPUT before anything is written. TPU_OK, or the status (also
** TPU_ERR_IO, TPU_ERR_NOMEM) with the message. */
tpu_status tpu_sweep_emit(const tpu_sweep_def *d, tpu_sweep_engine engine, const char *dir, long jobs, char *note,
                          size_t notecap, char *err, size_t errcap);

/* The plots of a results.csv (gnuplot, Debian's gnuplot-nox): for each a
** data file (.dat) and a script (.gp) beside the PNG the script draws.
** A line plot is the figure y against the axis x, a line per value of the
** axis 'series', a plot per combination of the other axes' values; the
** stacked plot (stall-shares) stacks the columns 'stack' names, a bar per
** point. Failed rows are left out. NULL x, y, series pick defaults (the
** first numeric axis; images_per_s or cycles; the next axis with more
** than one value, a numeric one first); NULL out: the CSV's directory. */
typedef struct tpu_sweep_plot_opts {
  const char *csv, *x, *y, *series, *out;
  const char *const *stack;    /* nstack columns stacked in stall-shares (those the CSV has) */
  const uint32_t *stack_rgb;   /* their colours, 0xRRGGBB (NULL: gnuplot's) */
  int nstack;
} tpu_sweep_plot_opts;
/* TPU_OK, or the status and message: TPU_ERR_INPUT for a CSV that is not a
** sweep's or an axis or column it does not have; TPU_ERR_IO when a file
** cannot be written, gnuplot fails or (unless 'quiet') is not installed. */
tpu_status tpu_sweep_plot(const tpu_sweep_plot_opts *o, bool quiet, char *err, size_t errcap);
/* How every plot here is drawn, for other figures (the roofline of
** `tpusim model --roofline`): writes BASE.dat and BASE.gp (base is
** DIR/NAME; the script draws NAME.png beside them) and runs gnuplot in
** DIR. TPU_OK, or TPU_ERR_IO with the message (gnuplot missing: unless
** quiet), TPU_ERR_INPUT for a base without a directory. */
tpu_status tpu_sweep_gnuplot(const char *base, const char *dat, size_t ndat, const char *gp, size_t ngp, bool quiet,
                             char *err, size_t errcap);
/* }================================================================== */
#endif /* TPU_SWEEP_H */
