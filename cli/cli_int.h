/*
** cli_int.h -- internals of the tpusim command line shared by the command
** files (cli/cmd_*.c). Not a public header.
**
** Conventions every command follows:
**   - `tpusim CMD --help` prints usage on stdout and exits 0.
**   - Bad input (unknown flag, bad value, malformed file) prints one message
**     on stderr, "tpusim CMD: FILE:LINE:COL: field 'x': what was wrong; what
**     is allowed" (the parts that are known), and exits 2. Runtime failures
**     exit 1.
**   - `--json` prints exactly one JSON object on stdout and nothing else
**     there; human output goes to stdout otherwise.
**   - Files are written whole or not at all (tpu_write_atomic).
*/
#ifndef TPU_CLI_INT_H
#define TPU_CLI_INT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"

/* A subcommand: argv[0] is the subcommand name; returns the exit status. */
typedef int (*cli_cmd_fn)(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_matmul(int argc, char **argv);
int cli_cmd_pipeline(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_train(int argc, char **argv);
int cli_cmd_viz(int argc, char **argv);

/* Prints "tpusim CMD: <message>\n" on stderr; returns 2 (bad input). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same, returns 1 (runtime failure). */
int cli_runtime_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a whole decimal integer in [lo, hi] (no trailing junk, no overflow).
** On failure writes a message naming 'flag' and the range into err. */
bool cli_parse_long(const char *s, long lo, long hi, long *out, const char *flag,
                   char *err, size_t errcap);
bool cli_parse_double(const char *s, double lo, double hi, double *out, const char *flag,
                     char *err, size_t errcap);


/* {===========================================================** Argument parsing. Commands walk argv themselves:
**   for (int i = 1; i < argc; i++) {
**     const char *v;
**     int r = cli_opt(argc, argv, &i, "--m", &v);   // "--m 8" or "--m=8"
**     if (r < 0) return cli_usage_error(...missing value...);
**     if (r) { ...; continue; }
**     r = cli_common_opt(argc, argv, &i, &common, cmd); ...
** ================================================================== */
/* 1 if argv[*i] is 'name' (value in the next argument, *i advanced) or
** 'name=value'; 0 if it is another argument; -1 if the value is missing.
** Pass val == NULL for a flag without a value. */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **val);

#define CLI_MAX_SETS 64
typedef struct cli_common {
  const char *chip;                  /* --chip, default "tpu-v2-8" */
  const char *sets[CLI_MAX_SETS];     /* --set KEY=VALUE, in order */
  int nsets;
  bool json;                         /* --json */
  bool help;                         /* --help / -h */
} cli_common;
void cli_common_init(cli_common *c);
/* Consumes --chip, --set, --json, --help. Returns 1 if consumed, 0 if not
** one of them, or an exit status >= 2 after printing a message. */
int cli_common_opt(int argc, char **argv, int *i, cli_common *c, const char *cmd);
/* The common options' lines for a command's --help. */
extern const char CLI_COMMON_HELP[];

struct tpu_chip_config;
/* Loads --chip and applies every --set; prints the error and returns 2 on
** bad input, 0 on success. */
int cli_load_chip(const char *cmd, const cli_common *c, struct tpu_chip_config *out);
int cli_matmul_cores(const struct tpu_chip_config *chip, int cores, long m, long n, long k, int precision, int level, long seed, int threads, bool json, const char *trace_path);
/* }================================================================== */


/* True when stdout is a terminal (progress bars, colors). */
bool cli_stdout_is_tty(void);
#endif
