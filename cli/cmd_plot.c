/*
** cmd_plot.c -- `tpusim plot`: PNGs from a sweep's results.csv with gnuplot
** (Debian's gnuplot-nox). For each plot a data file (.dat) and a gnuplot
** script (.gp) are written next to the PNG, so a user can restyle the plot
** and rerun `gnuplot FILE.gp`; the PNG is what that script draws.
**
** A line plot is a figure (--y) against one axis (--x), one line per value
** of another axis (--series), one plot per combination of the remaining
** axes' values. The stall plot stacks the stall shares per point. Rows
** that failed are left out.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_int.h"

#define CMD "plot"
#define MAXCOL 96

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

/* {==================================================================
** The table
** ================================================================== */
typedef struct table {
  char *text;
  int ncols, naxes;            /* columns; axes are columns 1..naxes */
  char *head[MAXCOL];
  char ***rows;                /* nrows x ncols */
  long nrows;
} table;

/* Splits one CSV line in place (RFC 4180 quotes); returns the fields. */
static int split(char *line, char **f, int cap) {
  int n = 0;
  char *w = line, *r = line;
  while (n < cap) {
    f[n++] = w;
    bool q = *r == '"';
    if (q) r++;
    for (; *r; r++) {
      if (q && *r == '"' && r[1] == '"') { *w++ = '"'; r++; continue; }
      if (q && *r == '"') { q = false; continue; }
      if (!q && *r == ',') break;
      *w++ = *r;
    }
    const bool more = *r == ',';
    *w++ = 0;
    if (!more) break;
    r++;
  }
  return n;
}

static int load(const char *path, table *t) {
  char err[1024];
  if (tpu_read_text(path, "a sweep's results.csv (text)", &t->text, err, sizeof err)) return cli_usage_error(CMD, "%s", err);
  char *save = NULL, *line = strtok_r(t->text, "\n", &save);
  if (!line) return cli_usage_error(CMD, "%s:1: empty; expected a sweep's results.csv", path);
  t->ncols = split(line, t->head, MAXCOL);
  while (t->naxes + 1 < t->ncols && strcmp(t->head[t->naxes + 1], "status")) t->naxes++;
  if (strcmp(t->head[0], "point") || t->naxes + 1 >= t->ncols)
    return cli_usage_error(CMD, "%s:1: expected the header of a sweep's results.csv (point, the axes, status, ...)", path);
  for (long ln = 2; (line = strtok_r(NULL, "\n", &save)); ln++) {
    char **r = calloc(MAXCOL, sizeof *r);
    char ***rows = r ? realloc(t->rows, (size_t)(t->nrows + 1) * sizeof *rows) : NULL;
    if (!rows) { free(r); return cli_runtime_error(CMD, "out of memory"); }
    t->rows = rows;
    t->rows[t->nrows++] = r;
    if (split(line, r, MAXCOL) != t->ncols)
      return cli_usage_error(CMD, "%s:%ld: expected %d fields like the header", path, ln, t->ncols);
  }
  return 0;
}

static void table_free(table *t) {
  for (long i = 0; i < t->nrows; i++) free(t->rows[i]);
  free(t->rows);
  tpu_free(t->text);
}

static int col(const table *t, const char *name) {
  for (int c = 0; c < t->ncols; c++)
    if (!strcmp(t->head[c], name)) return c;
  return -1;
}

static bool numeric(const char *s) {
  char *e;
  strtod(s, &e);
  return *s && !*e;
}

static bool ok(const table *t, long i) { return !strcmp(t->rows[i][t->naxes + 1], "ok"); }

/* Distinct values of column c, in first-seen order (into v, cap); count. */
static int distinct(const table *t, int c, const char **v, int cap) {
  int n = 0;
  for (long i = 0; i < t->nrows; i++) {
    int k = 0;
    while (k < n && strcmp(v[k], t->rows[i][c])) k++;
    if (k == n && n < cap) v[n++] = t->rows[i][c];
  }
  return n;
}
/* }================================================================== */

/* {==================================================================
** gnuplot
** ================================================================== */
/* Runs `gnuplot NAME.gp` in the script's directory (DIR/NAME.gp). */
static int gnuplot(const char *gp, bool quiet) {
  const char *name = strrchr(gp, '/') + 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", (int)(name - 1 - gp), gp);
  char *argv[] = { "gnuplot", (char *)name, NULL };
  int st, pipefd[2];
  if (pipe(pipefd)) return cli_runtime_error(CMD, "pipe: %s", strerror(errno));
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {              /* the child: into DIR, then gnuplot; tells a failed exec through the pipe */
    close(pipefd[0]);
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
    if (chdir(dir) == 0) execvp("gnuplot", argv);
    const char e = 1;
    if (write(pipefd[1], &e, 1)) _exit(127);
    _exit(127);
  }
  close(pipefd[1]);
  char e;
  const bool noexec = pid < 0 || read(pipefd[0], &e, 1) == 1;
  close(pipefd[0]);
  if (noexec) {
    if (pid > 0) waitpid(pid, &st, 0);
    if (quiet) return 0;
    return cli_runtime_error(CMD, "gnuplot not found (make deps installs gnuplot-nox); the script is %s", gp);
  }
  if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
    return cli_runtime_error(CMD, "gnuplot %s failed", gp);
  return 0;
}

static int write_pair(const char *base, tpu_text *dat, tpu_text *gp, bool quiet) {
  char p[4096];
  snprintf(p, sizeof p, "%s.dat", base);
  int bad = dat->oom || gp->oom || tpu_write_atomic(p, dat->s ? dat->s : "", dat->n);
  snprintf(p, sizeof p, "%s.gp", base);
  bad = bad || tpu_write_atomic(p, gp->s, gp->n);
  tpu_free(dat->s);
  tpu_free(gp->s);
  if (bad) return cli_runtime_error(CMD, "%s: cannot write: %s", p, strerror(errno));
  return gnuplot(p, quiet);
}

/* The script's head: PNG terminal, the output beside the script (gnuplot
** runs in its directory), labels. */
static void gp_head(tpu_text *gp, const char *base, const char *title, const char *xl, const char *yl) {
  const char *name = strrchr(base, '/') + 1;     /* base is DIR/NAME */
  tpu_text_printf(gp, "# gnuplot script written by tpusim plot; edit it and rerun `gnuplot %s.gp` in its directory\n"
                  "set terminal pngcairo size 960,600 noenhanced\nset output '%s.png'\n"
                  "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n",
                  name, name, title, xl, yl);
}
/* }================================================================== */

/* {==================================================================
** The plots
** ================================================================== */
typedef struct plot_opts { const char *csv, *x, *y, *series, *out; } plot_opts;

/* One line plot for the rows whose other axes equal row 'fix's. */
static int line_plot(const table *t, int x, int y, int s, long fix, const char *dir, bool quiet) {
  char base[4200], title[1024];
  int n = snprintf(base, sizeof base, "%s/%s-vs-%s%s%s", dir, t->head[y], t->head[x], s > 0 ? "-by-" : "", s > 0 ? t->head[s] : "");
  int m = snprintf(title, sizeof title, "%s", t->head[y]);
  for (int a = 1; a <= t->naxes; a++)
    if (a != x && a != s) {
      n += snprintf(base + n, sizeof base - (size_t)n, "-%s=%s", t->head[a], t->rows[fix][a]);
      m += snprintf(title + m, sizeof title - (size_t)m, " %s=%s", t->head[a], t->rows[fix][a]);
    }
  for (char *c = base + strlen(dir) + 1; *c; c++) if (*c == '/' || *c == ' ') *c = '_';
  const char *sv[256];
  const int ns = s > 0 ? distinct(t, s, sv, 256) : 1;
  tpu_text dat = { 0 }, gp = { 0 };
  gp_head(&gp, base, title, t->head[x], t->head[y]);
  tpu_text_printf(&gp, "plot");
  for (int k = 0; k < ns; k++) {
    tpu_text_printf(&dat, "# %s=%s\n", s > 0 ? t->head[s] : "all", s > 0 ? sv[k] : "");
    for (long i = 0; i < t->nrows; i++) {
      bool same = ok(t, i) && (s <= 0 || !strcmp(t->rows[i][s], sv[k])) && numeric(t->rows[i][y]);
      for (int a = 1; a <= t->naxes && same; a++) same = a == x || a == s || !strcmp(t->rows[i][a], t->rows[fix][a]);
      if (same) tpu_text_printf(&dat, "%s %s\n", t->rows[i][x], t->rows[i][y]);
    }
    tpu_text_printf(&dat, "\n\n");
    tpu_text_printf(&gp, "%s '%s.dat' index %d using 1:2 with linespoints lw 2 title '%s%s%s'", k ? ", \\\n     " : " ",
                    strrchr(base, '/') + 1, k, s > 0 ? t->head[s] : t->head[y], s > 0 ? "=" : "", s > 0 ? sv[k] : "");
  }
  tpu_text_printf(&gp, "\n");
  return write_pair(base, &dat, &gp, quiet);
}

/* Every combination of the axes other than x and s: one plot each. */
static int line_plots(const table *t, int x, int y, int s, const char *dir, bool quiet) {
  int rc = 0;
  for (long i = 0; i < t->nrows && !rc; i++) {
    bool first = true;               /* the first row of its combination */
    for (long j = 0; j < i && first; j++) {
      bool same = true;
      for (int a = 1; a <= t->naxes && same; a++) same = a == x || a == s || !strcmp(t->rows[i][a], t->rows[j][a]);
      first = !same;
    }
    if (first) rc = line_plot(t, x, y, s, i, dir, quiet);
  }
  return rc;
}

/* The stall shares of every point, stacked. */
static int stall_plot(const table *t, const char *dir, bool quiet) {
  int sc[TPU_SIM_NSTALL], n = 0;
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s_share", tpu_sim_stall_name(tpu_sim_stall_in_report_order(i)));
    if ((sc[n] = col(t, name)) > 0) n++;
  }
  if (!n) return 0;
  char base[4200];
  snprintf(base, sizeof base, "%s/stall-shares", dir);
  tpu_text dat = { 0 }, gp = { 0 };
  gp_head(&gp, base, "share of the step per stall part", "point", "share of the step");
  tpu_text_printf(&gp, "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.9 border -1\n"
                  "set boxwidth 0.8\nset yrange [0:1]\nset xtics rotate by -60 font ',7'\nplot");
  for (long i = 0; i < t->nrows; i++) {
    if (!ok(t, i)) continue;
    tpu_text_printf(&dat, "\"");
    for (int a = 1; a <= t->naxes; a++) tpu_text_printf(&dat, "%s%s", a > 1 ? " " : "", t->rows[i][a]);
    tpu_text_printf(&dat, "\"");
    for (int k = 0; k < n; k++) tpu_text_printf(&dat, " %s", t->rows[i][sc[k]]);
    tpu_text_printf(&dat, "\n");
  }
  for (int k = 0; k < n; k++)
    tpu_text_printf(&gp, "%s 'stall-shares.dat' using %d%s title '%.*s'", k ? ", \\\n    " : " ", k + 2,
                    k ? "" : ":xticlabels(1)", (int)(strstr(t->head[sc[k]], "_share") - t->head[sc[k]]), t->head[sc[k]]);
  tpu_text_printf(&gp, "\n");
  return write_pair(base, &dat, &gp, quiet);
}
/* }================================================================== */

static bool all_numeric(const table *t, int c) {
  bool num = true;
  for (long i = 0; i < t->nrows && num; i++) num = numeric(t->rows[i][c]);
  return num;
}

/* The defaults: x the first numeric axis, series the next axis with more
** than one value, y images_per_s or cycles. */
static int pick(const table *t, const plot_opts *o, int *x, int *y, int *s) {
  const char *v[2];
  *x = o->x ? col(t, o->x) : -1;
  for (int a = 1; a <= t->naxes && !o->x && *x < 0; a++)
    if (all_numeric(t, a) && distinct(t, a, v, 2) > 1) *x = a;
  if (!o->x && *x < 0) *x = 1;
  *y = col(t, o->y ? o->y : col(t, "images_per_s") > 0 ? "images_per_s" : "cycles");
  *s = o->series ? col(t, o->series) : -1;
  for (int pass = 0; pass < 2; pass++)        /* a numeric axis first (cores), then any */
    for (int a = 1; a <= t->naxes && !o->series && *s < 0; a++)
      if (a != *x && distinct(t, a, v, 2) > 1 && (pass || all_numeric(t, a))) *s = a;
  if (*x < 1 || *x > t->naxes) return cli_usage_error(CMD, "--x %s: not an axis of %s", o->x, o->csv);
  if (o->series && (*s < 1 || *s > t->naxes || *s == *x))
    return cli_usage_error(CMD, "--series %s: not an axis of %s other than --x", o->series, o->csv);
  if (*y <= t->naxes + 1) return cli_usage_error(CMD, "--y %s: not a figure column of %s", o->y ? o->y : "images_per_s", o->csv);
  return 0;
}

static int plot(const plot_opts *o, bool quiet) {
  table t = { 0 };
  int x, y, s, rc = load(o->csv, &t);
  char dir[4096];
  if (o->out) snprintf(dir, sizeof dir, "%s", o->out);
  else {
    const char *sl = strrchr(o->csv, '/');
    snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - o->csv) : 1, sl ? o->csv : ".");
  }
  if (!rc) rc = pick(&t, o, &x, &y, &s);
  if (!rc) rc = line_plots(&t, x, y, s, dir, quiet);
  if (!rc) rc = stall_plot(&t, dir, quiet);
  table_free(&t);
  return rc;
}

int cli_plot_sweep(const char *csv) {
  const plot_opts o = { .csv = csv };
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
  plot_opts o = { 0 };
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
