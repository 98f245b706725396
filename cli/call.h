/*
** call.h -- the tpusim commands as function calls in this process, for a
** binding (the Python module, python/; docs/PYTHON.md).
**
** A call is exactly `tpusim COMMAND ARGS...`: the same option parser, the
** same run and the same report, built from the same sources as the
** program. What the program would print goes to the call instead: the
** --json report as the text the program prints (the same jansson flags, so
** the same numbers to the last digit), and the message it would print on
** stderr as "tpusim COMMAND: ...", the exit status telling bad input (2)
** from a runtime failure (1). Nothing here exits the process, and nothing is
** printed on stdout while a call runs with --json (tpusim sweep's summary
** line becomes its report).
**
** Threads: a call runs on the caller's thread (its messages and report are
** routed per thread). Option parsing uses getopt_long's globals, so calls
** must not overlap: the caller serializes them (the Python module holds one
** lock per call). A long call stops early, as a runtime failure that writes
** no output, once tpu_cancel_request (base.h) is raised: training before a
** step, a sweep before a point.
**
** Not here: viz's window and the plots' PNGs are the program's (they run,
** but their output is files, not a report).
*/
#ifndef TPU_CLI_CALL_H
#define TPU_CLI_CALL_H
#include <stddef.h>

/* Called after each training step (tpusim train) with the step as compact
** JSON: {"epoch", "step", "global_step", "samples", "loss", "accuracy",
** "epoch_loss", "epoch_accuracy", "sim_step_s", "infeed_wait_s",
** "sim_time_s", "epoch_end"}, and at an epoch's end (tile level)
** "val_loss" and "val_accuracy". Non-zero stops the run (a runtime
** failure: no output written). On the call's thread. */
typedef int (*tpu_cli_step_fn)(void *ud, const char *step_json);

typedef struct tpu_cli_call {
  int argc;                    /* in: COMMAND and its options, as typed after `tpusim` */
  char **argv;                 /* borrowed for the call */
  tpu_cli_step_fn on_step;     /* in: or NULL */
  void *ud;                    /* in: on_step's */
  char *report;                /* out: the report's JSON text (free() it), or NULL (no --json, or failed) */
  char err[4096];              /* out: the message the program would print on stderr, or "" */
} tpu_cli_call;

/* Runs the call: returns the program's exit status (0 ok, 1 runtime
** failure, 2 bad input, an unknown command included). A report can come
** with status 1 (a sweep some of whose points failed). */
int tpu_cli_run(tpu_cli_call *c);
#endif /* TPU_CLI_CALL_H */
