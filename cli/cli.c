/*
** cli.c -- helpers shared by the tpusim subcommands (see cli_int.h).
*/
#include "cli/cli_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"

static void vreport(const char *cmd, const char *fmt, va_list ap) {
  fprintf(stderr, "tpusim %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}
int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cmd, fmt, ap);
  va_end(ap);
  return 2;
}
int cli_runtime_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cmd, fmt, ap);
  va_end(ap);
  return 1;
}

bool cli_parse_long(const char *s, long lo, long hi, long *out, const char *flag, char *err, size_t errcap) {
  char *end;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || v < lo || v > hi) {
    snprintf(err, errcap, "%s: expected an integer in %ld..%ld, got '%s'", flag, lo, hi, s ? s : "");
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_double(const char *s, double lo, double hi, double *out, const char *flag, char *err, size_t errcap) {
  char *end;
  errno = 0;
  double v = s ? strtod(s, &end) : 0;
  if (!s || !*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
    snprintf(err, errcap, "%s: expected a number in %g..%g, got '%s'", flag, lo, hi, s ? s : "");
    return false;
  }
  *out = v;
  return true;
}



bool cli_stdout_is_tty(void) { return isatty(STDOUT_FILENO) == 1; }

int cli_opt(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == 0) {
    if (!val) return 1;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
  }
  if (a[n] == '=' && val) { *val = a + n + 1; return 1; }
  return 0;
}

const char CLI_COMMON_HELP[] =
  "  --chip NAME|FILE   chip preset (tpu-v2-8 [default], tpu-v3-8, teach) or a JSON file\n"
  "  --set KEY=VALUE    override one configuration key (repeatable), e.g. --set mxu.rows=8\n"
  "  --json             print one JSON object on stdout instead of the text report\n"
  "  --help             this text\n";

void cli_common_init(cli_common *c) {
  memset(c, 0, sizeof *c);
  c->chip = "tpu-v2-8";
}

int cli_common_opt(int argc, char **argv, int *i, cli_common *c, const char *cmd) {
  const char *v;
  int r;
  if ((r = cli_opt(argc, argv, i, "--chip", &v))) {
    if (r < 0) return cli_usage_error(cmd, "--chip needs a preset name or a file");
    c->chip = v;
    return 1;
  }
  if ((r = cli_opt(argc, argv, i, "--set", &v))) {
    if (r < 0) return cli_usage_error(cmd, "--set needs KEY=VALUE, e.g. --set mxu.rows=8");
    if (c->nsets == CLI_MAX_SETS) return cli_usage_error(cmd, "--set: at most %d overrides", CLI_MAX_SETS);
    c->sets[c->nsets++] = v;
    return 1;
  }
  if (cli_opt(argc, argv, i, "--json", NULL) == 1) { c->json = true; return 1; }
  if (cli_opt(argc, argv, i, "--help", NULL) == 1 || !strcmp(argv[*i], "-h")) { c->help = true; return 1; }
  return 0;
}

int cli_load_chip(const char *cmd, const cli_common *c, tpu_chip_config *out) {
  char err[1024];
  if (tpu_chip_config_load(c->chip, out, err, sizeof err) != TPU_OK)
    return cli_usage_error(cmd, "%s", err);
  for (int k = 0; k < c->nsets; k++)
    if (tpu_chip_config_set(out, c->sets[k], err, sizeof err) != TPU_OK)
      return cli_usage_error(cmd, "%s", err);
  return 0;
}


