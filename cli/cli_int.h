/*
** cli_int.h -- internals of the tpusim command line shared by the command
** files (cli/cmd_*.c). Not a public header.
**
** Design. The command line owns three things and nothing else:
**   - options: each command declares its options in a table of cli_opt and
**     parses argv with getopt_long through cli_parse, which adds the options
**     every command takes (--chip, --set, --json, --help);
**   - reports: a text report on stdout, or with --json exactly one JSON
**     object there and nothing else;
**   - exit codes: 0 ok, 1 runtime failure, 2 bad input. A library status
**     becomes an exit code only through tpu_status_exit_code (cli_fail).
**     An output that cannot be written (--trace, --csv, --out, --png,
**     --gif, a checkpoint, a sweep's files) is a runtime failure (1), its
**     message naming the path and the reason.
** It calls the modules only through their public headers (base.h, mxu.h,
** sim.h, df.h, fe.h, viz.h, scalesim.h, sweep.h): simulation, numerics,
** file formats and the sweep engine live there, never here. Each command
** is a file: parse its options into a struct, load its inputs, run, report
** (JSON or text).
**
** Conventions every command follows:
**   - `tpusim CMD --help` prints usage on stdout and exits 0.
**   - Bad input (unknown flag, bad value, malformed file) prints one message
**     on stderr, "tpusim CMD: FILE:LINE:COL: field 'x': what was wrong; what
**     is allowed" (the parts that are known), and exits 2.
**   - Every output file goes through tpu_write_atomic: whole or not at all
**     (regular files), directly into devices and FIFOs, through symlinks.
*/
#ifndef TPU_CLI_INT_H
#define TPU_CLI_INT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "frontend/fe.h"
#include "sim/sim.h"
#include "sweep/sweep.h"

/* A subcommand: argv[0] is the subcommand name; returns the exit status. */
typedef int (*cli_cmd_fn)(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_matmul(int argc, char **argv);
int cli_cmd_model(int argc, char **argv);
int cli_cmd_pipeline(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_scalesim(int argc, char **argv);
int cli_cmd_train(int argc, char **argv);
int cli_cmd_viz(int argc, char **argv);
int cli_cmd_sweep(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);

/* The commands (commands.c), in the order `tpusim --help` lists them. */
typedef struct cli_command { const char *name; cli_cmd_fn fn; const char *summary; } cli_command;
extern const cli_command cli_commands[];
extern const int cli_ncommands;
const cli_command *cli_command_find(const char *name);   /* NULL: no such command */

/* The plots of a sweep's results.csv, drawn beside it (cmd_plot.c); without
** gnuplot only the scripts are written. 0, or 1 after a message. */
int cli_plot_sweep(const char *csv);

/* Messages on this thread go into 'buf' (cap bytes, the last message wins)
** instead of stderr while 'buf' is set; NULL restores stderr. A sweep
** records a failing point's message this way. */
void cli_capture_errors(char *buf, size_t cap);
/* The same for a sweep's points (cli_sweep_env's capture): NULL goes back
** to the capture that was set before buf, if any (a sweep run in-process,
** call.h), else to stderr. */
void cli_capture_point_errors(char *buf, size_t cap);

/* Reports on this thread go into *sink (json_dumps' text with the
** command's own flags, the caller's to free) instead of stdout while sink
** is set; NULL restores stdout. tpu_cli_run (call.h) sets it. */
void cli_capture_report(char **sink);
/* Whether reports are captured: a command then prints nothing on stdout
** (tpusim sweep's summary line becomes its report). */
bool cli_reports_captured(void);
/* The training run's per-step hook on this thread (call.h's on_step):
** fn(ud, the step as compact JSON) after each step; NULL: none. */
typedef int (*cli_step_fn)(void *ud, const char *step_json);
void cli_on_step(cli_step_fn fn, void *ud);
bool cli_step_hooked(void);   /* a hook is set on this thread */
/* Hands 'step' (borrowed; NULL: out of memory) to the hook, if any: 0, or
** 1 after a message when the hook asked to stop or memory ran out. */
struct json_t;
int cli_step_hook(const char *cmd, struct json_t *step);

/* {==================================================================
** Messages and exit codes
** ================================================================== */
/* Prints "tpusim CMD: <message>\n" on stderr; returns 2 (bad input). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, returns 1 (runtime failure). */
int cli_runtime_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, returns tpu_status_exit_code(st): how a library's failure ends a
** command. */
int cli_fail(const char *cmd, tpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* }================================================================== */

/* {==================================================================
** Options. A command lists its options (long names, without the dashes)
** and parses argv with getopt_long through cli_parse:
**
**   cli_opt opts[] = { CLI_LONG("m", &o->m, 1, 65536), CLI_ID("level", OPT_LEVEL, NULL) };
**   rc = cli_parse("matmul", argc, argv, opts, CLI_NOPTS(opts), &o->com, option, o);
**
** cli_parse adds the options every command takes (--chip, --set, --json,
** --help) to the table. Every option is given as "--m 8" or "--m=8"; names
** must be spelled out (getopt_long's abbreviations are refused). FLAG, STR,
** LONG and DOUBLE options are stored where the table says; each ID option
** is handed to the command's function with its value, in argv order. An
** unknown option, a stray argument, a missing value or a bad number prints
** a message naming the flag (cli_usage_error), and parsing stops there.
** ================================================================== */
typedef enum cli_kind {
  CLI_KFLAG,                   /* no value: *(bool *)dst = true */
  CLI_KSTR,                    /* *(const char **)dst = the value */
  CLI_KLONG,                   /* *(long *)dst = a whole decimal integer in [lo, hi] */
  CLI_KDOUBLE,                 /* *(double *)dst = a finite number in [dlo, dhi] */
  CLI_KID,                     /* handed to the command with its value */
  CLI_KSET                     /* --set (the common options only) */
} cli_kind;
typedef struct cli_opt {
  const char *name;            /* "m" for --m */
  cli_kind kind;
  void *dst;
  long lo, hi;
  double dlo, dhi;
  /* What to say when the value is missing; default "--NAME needs a value".
  ** An ID option without one gets "" as its value instead, so that its own
  ** check reports it ("--level: expected pe, tile or timing, got ''"). */
  const char *missing;
  int id;                      /* CLI_KID: the command's name for it */
} cli_opt;
#define CLI_FLAG(n, p)           { .name = (n), .kind = CLI_KFLAG, .dst = (p) }
#define CLI_STR(n, p, miss)      { .name = (n), .kind = CLI_KSTR, .dst = (p), .missing = (miss) }
#define CLI_LONG(n, p, l, h)     { .name = (n), .kind = CLI_KLONG, .dst = (p), .lo = (l), .hi = (h) }
#define CLI_DOUBLE(n, p, l, h)   { .name = (n), .kind = CLI_KDOUBLE, .dst = (p), .dlo = (l), .dhi = (h) }
#define CLI_ID(n, i, miss)       { .name = (n), .kind = CLI_KID, .id = (i), .missing = (miss) }
#define CLI_NOPTS(a) ((int)(sizeof (a) / sizeof (a)[0]))
#define CLI_MAX_OPTS 32

#define CLI_MAX_SETS 64
typedef struct cli_common {
  const char *chip;                  /* --chip, default "tpu-v2-8" */
  const char *sets[CLI_MAX_SETS];    /* --set KEY=VALUE, in order */
  int nsets;
  bool json;                         /* --json */
  bool help;                         /* --help / -h */
  const char *host;                  /* --host NAME (train's own option): the host setup, applied to the
                                        chip before the --set's; NULL: the chip's */
} cli_common;

/* An ID option's value: returns 0, or the exit status after a message. */
typedef int (*cli_value_fn)(void *ud, int id, const char *value);
/* Parses argv[1..argc) of command 'cmd' (at most CLI_MAX_OPTS options):
** sets *c to the defaults and the common options given, stores the table's
** options and hands the ID ones to fn (NULL when there are none). Returns
** 0, or the exit status (2) after a message. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts, cli_common *c,
              cli_value_fn fn, void *ud);

/* --precision V: bf16, bf16x3 or bf16x6 into *out; 0, or 2 after a message. */
int cli_precision(const char *cmd, const char *v, tpu_precision *out);
/* --dtype-policy V (Keras' names) into *out; 0, or 2 after a message. */
int cli_dtype_policy(const char *cmd, const char *v, tpu_fe_dtype_policy *out);

/* What parse functions return to let the command go on; anything else is
** the exit status (0 after --help, 2 after a usage error). The sweep's
** TPU_SWEEP_GO, so a parse function serves both. */
#define CLI_RUN TPU_SWEEP_GO
/* Prints a command's --help: 'text', then 'more' and a blank line if not
** NULL, then the common options' lines. Returns 0. */
int cli_help(const char *text, const char *more);
/* Whether --chip was given in argv (the argv cli_parse read into c):
** cli_parse leaves its default otherwise, the value then being none of
** argv's (getopt's optarg points into argv). */
bool cli_chip_given(int argc, char **argv, const cli_common *c);
/* }================================================================== */

/* Loads --chip, applies --host (when given) and every --set; prints the error and returns its
** exit status (2 for bad input), or 0. */
int cli_load_chip(const char *cmd, const cli_common *c, tpu_chip_config *out);
/* Loads a model (a built-in or zoo name, a native or Keras JSON file,
** tpu_fe_model_load_notes); prints the error and returns its exit status,
** or 0. A Keras file's options that are not modelled are reported once:
** on stderr, or with 'json' in *ignored (a JSON array of strings, NULL
** when there are none; the caller's) for the command's report. 'weights'
** (NULL: not wanted) gets the file's starting weights (an ONNX file's;
** NULL for the others), the caller's (tpu_free). */
struct tpu_fe_model;
int cli_load_model(const char *cmd, const char *spec, bool json, struct tpu_fe_model *out, struct json_t **ignored,
                   float **weights);
/* Reads and parses a JSON program (docs/PROGRAMS.md) for a chip of 'cores'
** cores; prints the error and returns its exit status, or 0. */
int cli_load_program(const char *cmd, const char *path, int cores, tpu_sim_program **out);
/* Cuts the chip to 'cores' cores, as matmul --cores, train --cores and viz
** --cores do: chips of min(cores_per_chip, cores) cores, the largest
** divisor of 'cores' that fits, so idle cores neither share HBM nor dilute
** the stall report. 1 <= cores <= chip->cores. */
void cli_chip_cut(tpu_chip_config *chip, int cores);

/* {==================================================================
** The commands a sweep runs (sweep/sweep.h). Each of train, matmul, run
** and pipeline is a tpu_sweep_cmd, defined with its single command
** cli_cmd_NAME at the end of its file (cmd_train.c, cmd_matmul.c,
** cmd_run.c, cmd_pipeline.c): the same parse and run functions, and its
** CSV columns, which its run fills from what it computed. sweep_cmds.c
** holds the one table of them that sweeps get.
** ================================================================== */
extern const tpu_sweep_cmd cli_train_cmd, cli_matmul_cmd, cli_run_cmd, cli_pipeline_cmd;
/* The single command: parse, run, and print the --json report with
** jansson's dump 'flags'. Returns the exit status. */
int cli_point_main(const tpu_sweep_cmd *c, int argc, char **argv, size_t flags);
/* What sweeps get: the one table of the commands they run, this thread's
** message capture, the reports' closing keys (cli_report_envelope). Call it
** before any point runs (it fills cli_stall_fields once). */
const tpu_sweep_env *cli_sweep_env(void);
/* The stall columns train and run share (their 'more'): <part>_cycles and
** <part>_share of every part of sim/stall.def, in the report's order. */
#define CLI_STALL_FIELDS (2 * TPU_SIM_NSTALL)
extern tpu_sweep_field cli_stall_fields[CLI_STALL_FIELDS];
/* Sets them from cycles[k] and share[k] (k the TPU_SIM_* part). row NULL:
** nothing. This function can't fail. */
void cli_sweep_stalls(tpu_sweep_row *row, const double cycles[TPU_SIM_NSTALL], const double share[TPU_SIM_NSTALL]);
/* The <part>_share columns, stacked in a sweep's stall plot: *n of them,
** and (rgb not NULL) their colours, the window's (sim/stall.def), 0xRRGGBB. */
const char *const *cli_stall_shares(int *n, const uint32_t **rgb);
/* A sweep point's check (tpu_sweep_cmd.check) of the chip its options
** load: --chip with every --set, loaded as the point will load it; 0, or
** the exit status after a message naming the key, the value and what is
** allowed. memo: the last chip checked, loaded once for all the points of
** a sweep whose chip is no axis. */
int cli_sweep_check_chip(const cli_common *c, char *memo, size_t cap);
/* }================================================================== */

/* {==================================================================
** tpusim matmul (cmd_matmul.c, matmul_cores.c; the inputs and reference: matmul_ref.c)
** ================================================================== */
typedef struct cli_matmul_opts {
  long m, n, k, seed, cores, threads;
  long mem_limit_mib;                /* --mem-limit: 0 means the machine's available memory */
  const char *a, *b, *out, *trace;   /* --a, --b, --out, --trace */
  const char *topology;              /* --topology: a SCALE-Sim topology, each layer a matmul */
  bool gemm, input_set, level_set;   /* --input-type gemm; --input-type given; --level given */
  tpu_precision precision;
  tpu_fidelity level;
  tpu_mxu_dataflow dataflow;         /* --dataflow (default ws) */
  bool dataflow_set;                 /* --dataflow was given: the report names it */
  cli_common com;
} cli_matmul_opts;
struct json_t;
/* --cores: the GEMM split along M over the cores, run on the chip engine.
** With --json *report gets the report, else the text is printed; a sweep
** point's row gets its CSV columns. */
int cli_matmul_cores(const tpu_chip_config *chip, const cli_matmul_opts *o, struct json_t **report,
                     tpu_sweep_row *row);
/* matmul's CSV columns (a sweep point's row; NULL: none), one core,
** --cores or --topology alike; what a run does not have is NAN, -1 or
** NULL (an empty column). This function can't fail. */
typedef struct cli_matmul_figures {
  int64_t cycles;
  double time_s, mxu_utilization, flops_per_s, achieved_flops_per_s;
  int64_t tiles, macs;
  double hbm_bytes;
  const char *bound;
  bool values;                 /* the errors below were measured */
  double max_abs_err, max_rel_err;
} cli_matmul_figures;
void cli_matmul_row(tpu_sweep_row *row, const cli_matmul_figures *f);
/* A and B of `tpusim matmul --seed S`: N(0,1) from base.h's stream, A first.
** NULL (both) when out of memory. */
bool cli_matmul_seeded(long seed, long m, long n, long k, float **a, float **b);
/* C against the product of the same f32 inputs in double precision, summed
** in k order (the same bits on every host): max |C - ref| and the normwise
** max |C - ref| / max |ref|. Allocates nothing; can't fail. */
void cli_matmul_error(long m, long n, long k, const float *a, const float *b, const float *c, double *max_abs,
                      double *max_rel);
/* }================================================================== */

/* {==================================================================
** SCALE-Sim topologies (scalesim/scalesim.h reads and runs them) in
** tpusim scalesim, run --topology and matmul --topology
** ================================================================== */
/* --input-type V: conv or gemm into *gemm; 0, or 2 after a message. */
int cli_ss_input_type(const char *cmd, const char *v, bool *gemm);
/* Adds a chip layer's "hbm_ifmap_bytes", "hbm_filter_bytes" and
** "hbm_ofmap_bytes" to the JSON object o; 0, or -1 out of memory. */
struct tpu_ss_chip_layer;
int cli_ss_operand_json(struct json_t *o, const struct tpu_ss_chip_layer *ly);
/* tpusim run --topology (run_topology.c): the run and its report, as text
** on stdout or with json in *report (the caller's). */
typedef struct cli_run_topology_opts {
  const char *path;            /* --topology */
  bool gemm;                   /* --input-type gemm */
  tpu_fidelity level;
  int cores;                   /* --cores; 0: all the chip's */
  int threads;
  const char *trace;           /* --trace or NULL */
  bool json;
} cli_run_topology_opts;
int cli_run_topology(const tpu_chip_config *chip, const cli_run_topology_opts *o, struct json_t **report,
                     tpu_sweep_row *row);
/* run's CSV columns (a sweep point's row; NULL: none; cmd_run.c): the
** cycles, their time on 'chip', the program's ops (-1: none, a topology)
** and the stall parts s (summed over the cores) in cycles and as shares
** of their sum. This function can't fail. */
void cli_run_row(tpu_sweep_row *row, const tpu_chip_config *chip, uint64_t cycles, int ops, const tpu_sim_stalls *s);
/* }================================================================== */

struct json_t;
/* Prints a report: 'o' on stdout with jansson's dump 'flags', a newline,
** and releases 'o'. Returns 0, or 1 (runtime failure, after a message) when
** o is NULL because building it ran out of memory. */
int cli_print_json(const char *cmd, struct json_t *o, size_t flags);
/* The keys every report ends with (docs/JSON.md, docs/report.schema.json):
** "schema_version", "command", "configuration" {"chip": the chip simulated, every
** value after --set and the run's cores} when the command loaded one, and
** "tpusim_version". cli_print_json adds them; a sweep adds them to each
** point's report. 0, or -1 out of memory (o NULL included). */
#define CLI_REPORT_SCHEMA 1
int cli_report_envelope(const char *cmd, struct json_t *o);
/* A number of a report. jansson has no NaN or infinity: json_real gives
** NULL for them, json_object_set_new then drops the key and json_pack's
** "f" fails the whole object. Every real of a report goes through here, and
** a non-finite one becomes null (as JavaScript's JSON.stringify writes it),
** so no key ever goes missing; NULL only when out of memory. The reports'
** own figures are kept finite at their source (ranges checked at load time,
** empty runs reported as such): null there would be a bug. */
struct json_t *cli_json_real(double v);
/* True when stdout is a terminal (progress bars, colors). */
bool cli_stdout_is_tty(void);
/* Seconds on the monotonic clock, for wall times. */
double cli_now_s(void);
#endif
