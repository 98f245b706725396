/*
** cmd_plot.c -- `tpusim plot`: the options of the plots of a sweep's
** results.csv, drawn by sweep/sweep.h's tpu_sweep_plot (gnuplot), and the
** default plots every sweep draws beside its CSV (cli_plot_sweep).
*/
#include <string.h>

#include "cli/cli_int.h"

#define CMD "plot"

static const char HELP[] =
  "usage: tpusim plot CSV [--x AXIS] [--y COLUMN] [--series AXIS] [--out DIR]\n\n"
  "Draws PNGs from a sweep's results.csv (docs/SWEEPS.md) with gnuplot: COLUMN\n"
  "against AXIS, one line per value of the series axis, one plot per value of the\n"
  "other axes; and, for train sweeps, the stall shares stacked per point. Each PNG\n"
  "has its gnuplot script (.gp) and data (.dat) beside it.\n\n"
  "  --x AXIS        default: the first axis with numeric values\n"
  "  --y COLUMN      default: images_per_s (train) or cycles (matmul)\n"
  "  --series AXIS   default: the next axis with more than one value\n"
  "  --out DIR       default: the CSV's directory\n";

/* The plots of o, the stall shares stacked. 0, or the exit status after a
** message. */
static int plot(tpu_sweep_plot_opts *o, bool quiet) {
  char err[4200];
  o->stack = cli_stall_shares(&o->nstack, &o->stack_rgb);
  const tpu_status st = tpu_sweep_plot(o, quiet, err, sizeof err);
  return st ? cli_fail(CMD, st, "%s", err) : 0;
}

int cli_plot_sweep(const char *csv) {
  tpu_sweep_plot_opts o = { .csv = csv };
  return plot(&o, true);
}

/* True when argv[i] is the value of the option before it. */
static bool is_value(char **argv, int i) {
  static const char *const with_value[] = { "--x", "--y", "--series", "--out", "--chip", "--set" };
  for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
    if (!strcmp(argv[i - 1], with_value[k])) return true;
  return false;
}

int cli_cmd_plot(int argc, char **argv) {
  tpu_sweep_plot_opts o = { .csv = NULL };
  cli_common com;
  const cli_opt opts[] = {
    CLI_STR("x", &o.x, NULL), CLI_STR("y", &o.y, NULL), CLI_STR("series", &o.series, NULL), CLI_STR("out", &o.out, NULL),
  };
  /* the CSV is the one argument: take it out before cli_parse sees it */
  char *args[64];
  int n = 0;
  for (int i = 0; i < argc && n < 63; i++)
    if (i > 0 && !o.csv && argv[i][0] != '-' && !is_value(argv, i)) o.csv = argv[i];
    else args[n++] = argv[i];
  args[n] = NULL;
  const int rc = cli_parse(CMD, n, args, opts, CLI_NOPTS(opts), &com, NULL, NULL);
  if (rc) return rc;
  if (com.help) return cli_help(HELP, NULL);
  if (!o.csv) return cli_usage_error(CMD, "give the CSV: tpusim plot DIR/results.csv (tpusim plot --help)");
  return plot(&o, false);
}
