/*
** cli.c -- helpers shared by the tpusim subcommands (see fe_int.h).
*/
#include "frontend/fe_int.h"

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
int fe_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cmd, fmt, ap);
  va_end(ap);
  return 2;
}
int fe_runtime_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(cmd, fmt, ap);
  va_end(ap);
  return 1;
}

bool fe_parse_long(const char *s, long lo, long hi, long *out, const char *flag, char *err, size_t errcap) {
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

bool fe_parse_double(const char *s, double lo, double hi, double *out, const char *flag, char *err, size_t errcap) {
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

int fe_write_atomic(const char *path, const void *data, size_t n) {
  size_t len = strlen(path);
  char *tmp = tpu_malloc(len + 32);
  if (!tmp) { errno = ENOMEM; return -1; }
  snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) { int e = errno; tpu_free(tmp); errno = e; return -1; }
  bool ok = fwrite(data, 1, n, f) == n;
  ok = (fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0 || errno == EINVAL) && ok;
  int e = errno;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) != 0) { e = errno; ok = false; }
  if (!ok) { remove(tmp); tpu_free(tmp); errno = e ? e : EIO; return -1; }
  tpu_free(tmp);
  return 0;
}

char *fe_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 65536, n = 0;
  char *buf = tpu_malloc(cap);
  while (buf) {
    if (cap - n < 2) {
      char *b = cap > SIZE_MAX / 2 ? NULL : tpu_realloc(buf, cap * 2);
      if (!b) { tpu_free(buf); buf = NULL; break; }
      buf = b; cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  int e = ferror(f) ? EIO : 0;
  fclose(f);
  if (!buf) { errno = ENOMEM; return NULL; }
  if (e) { tpu_free(buf); errno = e; return NULL; }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

bool fe_stdout_is_tty(void) { return isatty(STDOUT_FILENO) == 1; }

int fe_opt(int argc, char **argv, int *i, const char *name, const char **val) {
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

const char FE_COMMON_HELP[] =
  "  --chip NAME|FILE   chip preset (tpu-v2-8 [default], tpu-v3-8, teach) or a JSON file\n"
  "  --set KEY=VALUE    override one configuration key (repeatable), e.g. --set mxu.rows=8\n"
  "  --json             print one JSON object on stdout instead of the text report\n"
  "  --help             this text\n";

void fe_common_init(fe_common *c) {
  memset(c, 0, sizeof *c);
  c->chip = "tpu-v2-8";
}

int fe_common_opt(int argc, char **argv, int *i, fe_common *c, const char *cmd) {
  const char *v;
  int r;
  if ((r = fe_opt(argc, argv, i, "--chip", &v))) {
    if (r < 0) return fe_usage_error(cmd, "--chip needs a preset name or a file");
    c->chip = v;
    return 1;
  }
  if ((r = fe_opt(argc, argv, i, "--set", &v))) {
    if (r < 0) return fe_usage_error(cmd, "--set needs KEY=VALUE, e.g. --set mxu.rows=8");
    if (c->nsets == FE_MAX_SETS) return fe_usage_error(cmd, "--set: at most %d overrides", FE_MAX_SETS);
    c->sets[c->nsets++] = v;
    return 1;
  }
  if (fe_opt(argc, argv, i, "--json", NULL) == 1) { c->json = true; return 1; }
  if (fe_opt(argc, argv, i, "--help", NULL) == 1 || !strcmp(argv[*i], "-h")) { c->help = true; return 1; }
  return 0;
}

int fe_load_chip(const char *cmd, const fe_common *c, tpu_chip_config *out) {
  char err[1024];
  if (tpu_chip_config_load(c->chip, out, err, sizeof err) != TPU_OK)
    return fe_usage_error(cmd, "%s", err);
  for (int k = 0; k < c->nsets; k++)
    if (tpu_chip_config_set(out, c->sets[k], err, sizeof err) != TPU_OK)
      return fe_usage_error(cmd, "%s", err);
  return 0;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void fe_normal_fill(uint64_t *state, float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const double u1 = (double)((splitmix64(state) >> 11) + 1) * (1.0 / 9007199254740993.0);
    const double u2 = (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
    x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
}
