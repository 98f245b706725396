/*
** sweep_plot.c -- PNGs from a sweep's results.csv with gnuplot (Debian's
** gnuplot-nox), the plots of every sweep and of `tpusim plot`. For each
** plot a data file (.dat) and a gnuplot script (.gp) are written next to
** the PNG, so a user can restyle the plot and rerun `gnuplot FILE.gp`; the
** PNG is what that script draws.
**
** A line plot is a figure (y) against one axis (x), one line per value of
** another axis (series), one plot per combination of the remaining axes'
** values. The stall plot stacks the columns the caller names (the stall
** shares) per point. Rows that failed are left out.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep/sweep_int.h"

#define MAXCOL 96

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

static tpu_status load(const char *path, table *t, char *err, size_t cap) {
  if (tpu_read_text(path, "a sweep's results.csv (text)", &t->text, err, cap)) return TPU_ERR_INPUT;
  char *save = NULL, *line = strtok_r(t->text, "\n", &save);
  if (!line) return sweep_fail(err, cap, TPU_ERR_INPUT, "%s:1: empty; expected a sweep's results.csv", path);
  t->ncols = split(line, t->head, MAXCOL);
  while (t->naxes + 1 < t->ncols && strcmp(t->head[t->naxes + 1], "status")) t->naxes++;
  if (strcmp(t->head[0], "point") || t->naxes + 1 >= t->ncols)
    return sweep_fail(err, cap, TPU_ERR_INPUT, "%s:1: expected the header of a sweep's results.csv (point, the axes, "
                      "status, ...)", path);
  for (long ln = 2; (line = strtok_r(NULL, "\n", &save)); ln++) {
    char **r = calloc(MAXCOL, sizeof *r);
    char ***rows = r ? realloc(t->rows, (size_t)(t->nrows + 1) * sizeof *rows) : NULL;
    if (!rows) { free(r); return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory"); }
    t->rows = rows;
    t->rows[t->nrows++] = r;
    if (split(line, r, MAXCOL) != t->ncols)
      return sweep_fail(err, cap, TPU_ERR_INPUT, "%s:%ld: expected %d fields like the header", path, ln, t->ncols);
  }
  return TPU_OK;
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
/* Runs `gnuplot NAME.gp` in the script's directory (DIR/NAME.gp). Its
** warnings are kept from the terminal; when it fails, its last line of
** them is the message's. */
static tpu_status gnuplot(const char *gp, bool quiet, char *err, size_t cap) {
  const char *name = strrchr(gp, '/') + 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", (int)(name - 1 - gp), gp);
  char *argv[] = { "gnuplot", (char *)name, NULL };
  int st, pipefd[2], errfd[2];
  if (pipe(pipefd)) return sweep_fail(err, cap, TPU_ERR_IO, "pipe: %s", strerror(errno));
  if (pipe(errfd)) {
    close(pipefd[0]);
    close(pipefd[1]);
    return sweep_fail(err, cap, TPU_ERR_IO, "pipe: %s", strerror(errno));
  }
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {              /* the child: into DIR, then gnuplot; tells a failed exec through the pipe */
    close(pipefd[0]);
    close(errfd[0]);
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
    dup2(errfd[1], STDERR_FILENO);
    if (chdir(dir) == 0) execvp("gnuplot", argv);
    const char e = 1;
    if (write(pipefd[1], &e, 1)) _exit(127);
    _exit(127);
  }
  close(pipefd[1]);
  close(errfd[1]);
  char e, said[4096] = "";
  const bool noexec = pid < 0 || read(pipefd[0], &e, 1) == 1;
  close(pipefd[0]);
  size_t n = 0;                /* gnuplot's stderr, its last 4 KiB */
  for (ssize_t r; (r = read(errfd[0], said + n, sizeof said - 1 - n)) > 0;) {
    n += (size_t)r;
    if (n == sizeof said - 1) { memmove(said, said + n / 2, n - n / 2); n -= n / 2; }
  }
  close(errfd[0]);
  said[n] = 0;
  if (noexec) {
    if (pid > 0) waitpid(pid, &st, 0);
    if (quiet) return TPU_OK;
    return sweep_fail(err, cap, TPU_ERR_IO, "gnuplot not found (make deps installs gnuplot-nox); the script is %s", gp);
  }
  if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
    while (n && (said[n - 1] == '\n' || said[n - 1] == ' ')) said[--n] = 0;
    const char *last = strrchr(said, '\n');
    return sweep_fail(err, cap, TPU_ERR_IO, "gnuplot %s failed%s%s", gp, n ? ": " : "", last ? last + 1 : said);
  }
  return TPU_OK;
}

static tpu_status write_pair(const char *base, tpu_text *dat, tpu_text *gp, bool quiet, char *err, size_t cap) {
  char p[4096];
  snprintf(p, sizeof p, "%s.dat", base);
  int bad = dat->oom || gp->oom || tpu_write_atomic(p, dat->s ? dat->s : "", dat->n);
  snprintf(p, sizeof p, "%s.gp", base);
  bad = bad || tpu_write_atomic(p, gp->s, gp->n);
  tpu_free(dat->s);
  tpu_free(gp->s);
  if (bad) return sweep_fail(err, cap, TPU_ERR_IO, "%s: cannot write: %s", p, strerror(errno));
  return gnuplot(p, quiet, err, cap);
}

tpu_status tpu_sweep_gnuplot(const char *base, const char *dat, size_t ndat, const char *gp, size_t ngp, bool quiet,
                             char *err, size_t errcap) {
  if (!strchr(base, '/')) return sweep_fail(err, errcap, TPU_ERR_INPUT, "%s: expected DIR/NAME", base);
  tpu_text d = { 0 }, g = { 0 };
  tpu_text_printf(&d, "%.*s", (int)ndat, dat);
  tpu_text_printf(&g, "%.*s", (int)ngp, gp);
  return write_pair(base, &d, &g, quiet, err, errcap);
}

/* The script's head: PNG terminal, the output beside the script (gnuplot
** runs in its directory), labels. */
static void gp_head(tpu_text *gp, const char *base, const char *title, const char *xl, const char *yl, long width) {
  const char *name = strrchr(base, '/') + 1;     /* base is DIR/NAME */
  tpu_text_printf(gp, "# gnuplot script written by tpusim plot; edit it and rerun `gnuplot %s.gp` in its directory\n"
                  "set terminal pngcairo size %ld,600 noenhanced\nset output '%s.png'\n"
                  "set title '%s'\nset xlabel '%s'\nset ylabel '%s'\nset grid\nset key outside right\n",
                  name, width, name, title, xl, yl);
}
/* }================================================================== */

/* {==================================================================
** The plots
** ================================================================== */
/* One line plot for the rows whose other axes equal row 'fix's. */
static tpu_status line_plot(const table *t, int x, int y, int s, long fix, const char *dir, bool quiet, char *err,
                            size_t cap) {
  char base[4200], title[1024];
  int n = snprintf(base, sizeof base, "%s/%s-vs-%s%s%s", dir, t->head[y], t->head[x], s > 0 ? "-by-" : "", s > 0 ? t->head[s] : "");
  int m = snprintf(title, sizeof title, "%s", t->head[y]);
  for (int a = 1; a <= t->naxes; a++)
    if (a != x && a != s) {
      n += snprintf(base + n, sizeof base - (size_t)n, "-%s=%s", t->head[a], t->rows[fix][a]);
      m += snprintf(title + m, sizeof title - (size_t)m, " %s=%s", t->head[a], t->rows[fix][a]);
    }
  for (char *c = base + strlen(dir) + 1; *c; c++) if (*c == '/' || *c == ' ') *c = '_';
  const char *sv[256], *xv[256];
  const int ns = s > 0 ? distinct(t, s, sv, 256) : 1;
  /* an axis of names (models, policies, true/false): its values at 0, 1, ... labelled */
  bool xnum = true;
  for (long i = 0; i < t->nrows; i++) xnum &= numeric(t->rows[i][x]);
  const int nx = xnum ? 0 : distinct(t, x, xv, 256);
  tpu_text dat = { 0 }, gp = { 0 };
  gp_head(&gp, base, title, t->head[x], t->head[y], 960);
  if (!xnum) tpu_text_printf(&gp, "set xrange [-0.5:%d.5]\n", nx - 1);
  /* an axis over two orders of magnitude and more (cores 8 .. 2048): log 2 */
  double lo = INFINITY, hi = 0;
  for (long i = 0; xnum && i < t->nrows; i++) {
    const double v = strtod(t->rows[i][x], NULL);
    lo = v < lo ? v : lo, hi = v > hi ? v : hi;
  }
  if (xnum && lo > 0 && hi >= 64 * lo) tpu_text_printf(&gp, "set logscale x 2\n");
  tpu_text_printf(&gp, "plot");
  for (int k = 0; k < ns; k++) {
    tpu_text_printf(&dat, "# %s=%s\n", s > 0 ? t->head[s] : "all", s > 0 ? sv[k] : "");
    for (long i = 0; i < t->nrows; i++) {
      bool same = ok(t, i) && (s <= 0 || !strcmp(t->rows[i][s], sv[k])) && numeric(t->rows[i][y]);
      for (int a = 1; a <= t->naxes && same; a++) same = a == x || a == s || !strcmp(t->rows[i][a], t->rows[fix][a]);
      if (!same) continue;
      if (xnum) {
        tpu_text_printf(&dat, "%s %s\n", t->rows[i][x], t->rows[i][y]);
        continue;
      }
      int at = 0;
      while (at < nx - 1 && strcmp(xv[at], t->rows[i][x])) at++;
      tpu_text_printf(&dat, "%d \"%s\" %s\n", at, t->rows[i][x], t->rows[i][y]);
    }
    tpu_text_printf(&dat, "\n\n");
    tpu_text_printf(&gp, "%s '%s.dat' index %d using %s with linespoints lw 2 title '%s%s%s'", k ? ", \\\n     " : " ",
                    strrchr(base, '/') + 1, k, xnum ? "1:2" : "1:3:xtic(2)", s > 0 ? t->head[s] : t->head[y],
                    s > 0 ? "=" : "", s > 0 ? sv[k] : "");
  }
  tpu_text_printf(&gp, "\n");
  return write_pair(base, &dat, &gp, quiet, err, cap);
}

/* Every combination of the axes other than x and s: one plot each. */
static tpu_status line_plots(const table *t, int x, int y, int s, const char *dir, bool quiet, char *err, size_t cap) {
  tpu_status st = TPU_OK;
  for (long i = 0; i < t->nrows && !st; i++) {
    bool first = true;               /* the first row of its combination */
    for (long j = 0; j < i && first; j++) {
      bool same = true;
      for (int a = 1; a <= t->naxes && same; a++) same = a == x || a == s || !strcmp(t->rows[i][a], t->rows[j][a]);
      first = !same;
    }
    if (first) st = line_plot(t, x, y, s, i, dir, quiet, err, cap);
  }
  return st;
}

/* The stall shares of every point (the columns o->stack names), stacked. */
static tpu_status stall_plot(const table *t, const tpu_sweep_plot_opts *o, const char *dir, bool quiet, char *err,
                             size_t cap) {
  int sc[MAXCOL], si[MAXCOL], n = 0;
  for (int i = 0; i < o->nstack && n < MAXCOL; i++)
    if ((sc[n] = col(t, o->stack[i])) > 0) si[n++] = i;
  if (!n) return TPU_OK;
  char base[4200];
  snprintf(base, sizeof base, "%s/stall-shares", dir);
  tpu_text dat = { 0 }, gp = { 0 };
  long pts = 0;
  for (long i = 0; i < t->nrows; i++) pts += ok(t, i);
  /* every point's bar and label legible: 20 pixels a point past 40 of them */
  gp_head(&gp, base, "share of the step per stall part", "point", "share of the step",
          pts <= 40 ? 960 : pts * 20 + 160 > 8192 ? 8192 : pts * 20 + 160);
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
  for (int k = 0; k < n; k++) {
    char lc[32] = "";   /* the window's colour of the part (sim/stall.def) */
    if (o->stack_rgb) snprintf(lc, sizeof lc, " lc rgb '#%06x'", (unsigned)(o->stack_rgb[si[k]] & 0xffffffu));
    tpu_text_printf(&gp, "%s 'stall-shares.dat' using %d%s%s title '%.*s'", k ? ", \\\n    " : " ", k + 2,
                    k ? "" : ":xticlabels(1)", lc, (int)(strstr(t->head[sc[k]], "_share") - t->head[sc[k]]),
                    t->head[sc[k]]);
  }
  tpu_text_printf(&gp, "\n");
  return write_pair(base, &dat, &gp, quiet, err, cap);
}
/* }================================================================== */

static bool all_numeric(const table *t, int c) {
  bool num = true;
  for (long i = 0; i < t->nrows && num; i++) num = numeric(t->rows[i][c]);
  return num;
}

/* No point ran: no figure to draw; the first failures say why. */
static tpu_status all_failed(const table *t, const char *csv, char *err, size_t cap) {
  for (long i = 0; i < t->nrows; i++)
    if (ok(t, i)) return TPU_OK;
  const int ec = col(t, "error");
  size_t n = (size_t)snprintf(err, cap, "%s: no point ran (%ld failed), nothing to plot; the first failures:", csv,
                              t->nrows);
  for (long i = 0; i < t->nrows && i < 3 && n < cap; i++)
    n += (size_t)snprintf(err + n, cap - n, "%s point %s: %s", i ? ";" : "", t->rows[i][0],
                          ec > 0 && *t->rows[i][ec] ? t->rows[i][ec] : "(no message)");
  return TPU_ERR_INPUT;
}

/* Every figure drawn, of every point that ran: a number, or empty (not
** measured: left out). A text would be dropped without a word. */
static tpu_status check_figures(const table *t, const tpu_sweep_plot_opts *o, int y, char *err, size_t cap) {
  for (long i = 0; i < t->nrows; i++) {
    if (!ok(t, i)) continue;
    for (int k = -1; k < o->nstack; k++) {
      const int c = k < 0 ? y : col(t, o->stack[k]);
      const char *v = c > 0 ? t->rows[i][c] : "";
      if (*v && !numeric(v))
        return sweep_fail(err, cap, TPU_ERR_INPUT, "%s:%ld: column '%s' of point %s: '%s' is not a number (a figure "
                          "column holds numbers, or nothing for a figure not measured)", o->csv, i + 2, t->head[c],
                          t->rows[i][0], v);
    }
  }
  return TPU_OK;
}

/* The defaults: x the first numeric axis, series the next axis with more
** than one value, y images_per_s or cycles. */
static tpu_status pick(const table *t, const tpu_sweep_plot_opts *o, int *x, int *y, int *s, char *err, size_t cap) {
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
  if (*x < 1 || *x > t->naxes) return sweep_fail(err, cap, TPU_ERR_INPUT, "--x %s: not an axis of %s", o->x, o->csv);
  if (o->series && (*s < 1 || *s > t->naxes || *s == *x))
    return sweep_fail(err, cap, TPU_ERR_INPUT, "--series %s: not an axis of %s other than --x", o->series, o->csv);
  if (*y <= t->naxes + 1)
    return sweep_fail(err, cap, TPU_ERR_INPUT, "--y %s: not a figure column of %s", o->y ? o->y : "images_per_s",
                      o->csv);
  return TPU_OK;
}

tpu_status tpu_sweep_plot(const tpu_sweep_plot_opts *o, bool quiet, char *err, size_t errcap) {
  table t = { 0 };
  int x, y, s;
  tpu_status st = load(o->csv, &t, err, errcap);
  char dir[4096];
  if (o->out) snprintf(dir, sizeof dir, "%s", o->out);
  else {
    const char *sl = strrchr(o->csv, '/');
    snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - o->csv) : 1, sl ? o->csv : ".");
  }
  if (!st && t.nrows == 0)   /* a header only: nothing to draw is an answer, not a plot */
    st = sweep_fail(err, errcap, TPU_ERR_INPUT, "%s: no points (only the header); nothing to plot", o->csv);
  if (!st) st = all_failed(&t, o->csv, err, errcap);
  if (!st && t.naxes == 0)   /* one point, no axis: nothing to draw it against */
    st = sweep_fail(err, errcap, TPU_ERR_INPUT, "%s: the sweep has no axis (a single point); nothing to plot against",
                    o->csv);
  if (!st) st = pick(&t, o, &x, &y, &s, err, errcap);
  if (!st) st = check_figures(&t, o, y, err, errcap);
  if (!st) st = line_plots(&t, x, y, s, dir, quiet, err, errcap);
  if (!st) st = stall_plot(&t, o, dir, quiet, err, errcap);
  table_free(&t);
  return st;
}

