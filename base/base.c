/*
** base.c -- status strings, the allocation hook, bf16 arrays, the seeded
** generators and whole-file I/O. JSON is in json.c, .npy in npy.c.
*/
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tpu_version(void) { return TPU_VERSION; }

/* Relaxed is enough: the flag orders nothing else, and a loop that reads it
** one step late only stops one step later. */
static atomic_int cancel_flag;
void tpu_cancel_request(void) { atomic_store_explicit(&cancel_flag, 1, memory_order_relaxed); }
void tpu_cancel_clear(void) { atomic_store_explicit(&cancel_flag, 0, memory_order_relaxed); }
bool tpu_cancel_requested(void) { return atomic_load_explicit(&cancel_flag, memory_order_relaxed) != 0; }

const char *tpu_status_str(tpu_status s) {
  static const char *const text[] = {
    [TPU_OK] = "ok", [TPU_ERR_NOMEM] = "out of memory", [TPU_ERR_CONFIG] = "bad configuration",
    [TPU_ERR_INPUT] = "bad input", [TPU_ERR_IO] = "i/o error", [TPU_ERR_BUSY] = "unit busy",
    [TPU_ERR_RANGE] = "capacity exceeded", [TPU_ERR_RUNTIME] = "runtime fault" };
  return (unsigned)s < sizeof text / sizeof text[0] ? text[s] : "unknown status";
}

tpu_status tpu_errorf(char *err, size_t errcap, tpu_status st, const char *fmt, ...) {
  if (!err || !errcap) return st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errcap, fmt, ap);
  va_end(ap);
  return st;
}

int tpu_status_exit_code(tpu_status s) {
  switch (s) {
    case TPU_OK: return 0;
    case TPU_ERR_CONFIG: case TPU_ERR_INPUT: case TPU_ERR_IO: case TPU_ERR_RANGE: return 2;
    default: return 1;
  }
}

const char *tpu_fidelity_name(tpu_fidelity f) {
  static const char *const names[] = { [TPU_FIDELITY_PE] = "pe", [TPU_FIDELITY_TILE] = "tile",
                                       [TPU_FIDELITY_TIMING] = "timing" };
  return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}
int tpu_fidelity_parse(const char *s, tpu_fidelity *out) {
  static const tpu_fidelity all[] = { TPU_FIDELITY_PE, TPU_FIDELITY_TILE, TPU_FIDELITY_TIMING };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(s, tpu_fidelity_name(all[i])) == 0) { *out = all[i]; return 1; }
  return 0;
}

/* {==================================================================
** Allocation
** ================================================================== */
static void *default_alloc(void *ud, void *ptr, size_t nsize) {
  (void)ud;
  if (nsize == 0) { free(ptr); return NULL; }
  return realloc(ptr, nsize);
}
static tpu_alloc_fn g_alloc = default_alloc;
static void *g_alloc_ud;

/* jansson allocates through the hook too, so an allocation-failure sweep
** reaches the JSON values we build and the reports; both ends are
** realloc/free, so values made before a hook change are freed correctly
** after it. Its decoder is the exception: jansson 2.14's lexer ignores a
** failed grow of its token buffer (load.c, lex_save) and then copies the
** string past the end of a buffer sized for the shorter token, corrupting
** the heap. So while tpu_json_decode runs, jansson allocates from the C
** library directly, which a test's failing hook cannot reach; a real
** out-of-memory inside the decoder stays jansson's to handle. */
static _Thread_local bool g_decoding;
static void *json_alloc(size_t n) { return g_decoding ? default_alloc(NULL, NULL, n ? n : 1) : tpu_malloc(n); }

json_t *tpu_json_decode(const char *text, size_t flags, json_error_t *e) {
  g_decoding = true;
  json_t *o = json_loads(text, flags, e);
  g_decoding = false;
  return o;
}

void tpu_set_alloc(tpu_alloc_fn fn, void *ud) {
  g_alloc = fn ? fn : default_alloc;
  g_alloc_ud = fn ? ud : NULL;
  json_set_alloc_funcs(json_alloc, tpu_free);
}
static _Thread_local unsigned long g_failures;
unsigned long tpu_alloc_failures(void) { return g_failures; }
void *tpu_malloc(size_t n) {
  void *p = g_alloc(g_alloc_ud, NULL, n ? n : 1);
  if (!p) g_failures++;
  return p;
}
void *tpu_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  size_t n = count * size;
  void *p = tpu_malloc(n);
  if (p) memset(p, 0, n ? n : 1);
  return p;
}
void *tpu_realloc(void *p, size_t n) {
  void *q = g_alloc(g_alloc_ud, p, n ? n : 1);
  if (!q) g_failures++;
  return q;
}
void tpu_free(void *p) { if (p) g_alloc(g_alloc_ud, p, 0); }
char *tpu_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = tpu_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* Aligned blocks come from the hook too: over-allocate, align, and keep the
** original pointer just below the aligned address. */
void *tpu_malloc_aligned(size_t n) {
  if (n > SIZE_MAX - 64 - sizeof(void *)) return NULL;
  char *raw = tpu_malloc(n + 64 + sizeof(void *));
  if (!raw) return NULL;
  uintptr_t a = ((uintptr_t)(raw + sizeof(void *)) + 63u) & ~(uintptr_t)63u;
  ((void **)a)[-1] = raw;
  return (void *)a;
}
void tpu_free_aligned(void *p) { if (p) tpu_free(((void **)p)[-1]); }
/* }================================================================== */

void tpu_bf16_round_array(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = tpu_bf16_round(x[i]);
}

void tpu_text_printf(tpu_text *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if (b->s && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
    size_t nc = b->cap ? b->cap * 2 : 65536;
    while (nc < b->n + (size_t)k + 1) nc *= 2;
    char *q = tpu_realloc(b->s, nc);
    if (!q) { b->oom = 1; return; }
    b->s = q;
    b->cap = nc;
  }
}

/* {==================================================================
** Seeded generators and files
** ================================================================== */
uint64_t tpu_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t tpu_splitmix64(uint64_t *state) {
  *state += 0x9e3779b97f4a7c15ull;
  return tpu_mix64(*state - 0x9e3779b97f4a7c15ull);
}

void tpu_normal_fill(uint64_t *state, float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const double u1 = (double)((tpu_splitmix64(state) >> 11) + 1) * (1.0 / 9007199254740993.0);
    const double u2 = (double)(tpu_splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
    x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
}

/* The file a write to 'path' lands in: symlinks followed (up to 40, like the
** kernel), a relative link taken from the link's directory. A new string
** (tpu_free it), or NULL with errno set. */
static char *write_target(const char *path) {
  char *p = tpu_malloc(strlen(path) + 1);
  if (!p) { errno = ENOMEM; return NULL; }
  strcpy(p, path);
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    char link[4096];
    ssize_t k = hops < 40 ? readlink(p, link, sizeof link - 1) : -1;
    if (k < 0 || k == (ssize_t)sizeof link - 1) {
      int e = hops >= 40 ? ELOOP : k < 0 ? errno : ENAMETOOLONG;
      tpu_free(p);
      errno = e;
      return NULL;
    }
    link[k] = 0;
    const char *slash = strrchr(p, '/');
    size_t dir = link[0] != '/' && slash ? (size_t)(slash - p) + 1 : 0;
    char *q = tpu_malloc(dir + (size_t)k + 1);
    if (!q) { tpu_free(p); errno = ENOMEM; return NULL; }
    memcpy(q, p, dir);
    memcpy(q + dir, link, (size_t)k + 1);
    tpu_free(p);
    p = q;
  }
}

/* Writes straight into an existing file that is not a regular one (a
** device, a pipe, a socket): no temporary, every error reported. */
static int write_direct(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_NOCTTY);
  if (fd < 0) return -1;
  const char *s = data;
  int e = 0;
  while (n > 0 && !e) {
    ssize_t k = write(fd, s, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { e = k < 0 ? errno : EIO; break; }
    s += k; n -= (size_t)k;
  }
  if (!e && fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) e = errno;
  if (close(fd) != 0 && !e && errno != EINTR) e = errno;
  if (e) { errno = e; return -1; }
  return 0;
}

/* A new regular file through a temporary beside it and rename(2). */
static int write_renamed(const char *path, const void *data, size_t n) {
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

int tpu_write_atomic(const char *path, const void *data, size_t n) {
  char *target = write_target(path);
  if (!target) return -1;
  struct stat st;
  int rc;
  if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EISDIR; rc = -1; }
  else if (stat(target, &st) == 0 && !S_ISREG(st.st_mode)) rc = write_direct(target, data, n);
  else rc = write_renamed(target, data, n);
  int e = errno;
  tpu_free(target);
  errno = e;
  return rc;
}

char *tpu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;   /* fopen opens a directory; reading it would say only "Input/output error" */
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    errno = EISDIR;
    return NULL;
  }
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
/* }================================================================== */

/* {==================================================================
** Names
** ================================================================== */
/* The optimal-string-alignment distance of a and b (each < 64 bytes), case
** ignored. */
static int edit_distance(const char *a, const char *b) {
  enum { M = 64 };
  const int la = (int)strlen(a), lb = (int)strlen(b);
  int d[M + 1][M + 1];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      const int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

const char *tpu_nearest(const char *s, const char *const *cands, int n) {
  const size_t ls = strlen(s);
  if (ls >= 64) return NULL;
  const int limit = ls / 3 > 1 ? (int)(ls / 3) : 1;
  const char *best = NULL;
  int bd = limit + 1;
  for (int i = 0; i < n; i++) {
    if (!cands[i] || strlen(cands[i]) >= 64) continue;
    const int dist = edit_distance(s, cands[i]);
    if (dist == 0) return NULL;
    if (dist < bd) { bd = dist; best = cands[i]; }
  }
  return best;
}
/* }================================================================== */
