/*
** npy.c -- .npy arrays (base.h): the header is a Python dict literal; we
** read the three keys NumPy writes ('descr', 'fortran_order', 'shape') and
** reject anything we cannot honour, naming the file and what was wrong.
** Read by tpusim matmul (--a, --b) and by datafeed's npy source; written by
** tpusim matmul --out.
*/
#include "base/base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static tpu_status fail(char *err, size_t cap, tpu_status st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static tpu_status fail(char *err, size_t cap, tpu_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && cap) vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return st;
}

/* Finds 'key' in the header dict and returns a pointer just past its ':'. */
static const char *dict_value(const char *hdr, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(hdr, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p != ':') return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

/* 'descr': byte order ('<', '|', '=' or '>'), a kind letter and the item
** size, e.g. '<f4'. Big-endian data with items wider than a byte is refused. */
static tpu_status parse_descr(const char *path, const char *d, tpu_npy *a, char *err, size_t cap) {
  char got[16] = "?";
  if (d && *d == '\'') {
    size_t n = strcspn(d + 1, "'");
    if (d[1 + n] == '\'' && n < sizeof a->descr) {
      memcpy(a->descr, d + 1, n);
      a->descr[n] = 0;
      const char *p = a->descr;
      bool big = *p == '>';
      if (strchr("<>|=", *p)) p++;
      if (*p && strchr("biufc", *p) && p[1] >= '1' && p[1] <= '9') {
        char *end;
        a->itemsize = (size_t)strtoul(p + 1, &end, 10);
        if (!*end && a->itemsize <= 16 && !(big && a->itemsize > 1)) return TPU_OK;
      }
    }
  }
  if (d) { size_t n = strcspn(d, ","); snprintf(got, sizeof got, "%.*s", (int)(n < 12 ? n : 12), d); }
  return fail(err, cap, TPU_ERR_INPUT, "%s: header field 'descr' is %s; expected a little-endian numeric dtype "
              "such as '<f4'", path, got);
}

static tpu_status parse_shape(const char *path, const char *sh, tpu_npy *a, char *err, size_t cap) {
  if (!sh || *sh != '(') return fail(err, cap, TPU_ERR_INPUT, "%s: header field 'shape' missing or not a tuple", path);
  sh++;
  int64_t count = 1;
  for (;;) {
    while (*sh == ' ' || *sh == ',') sh++;
    if (*sh == ')') break;
    char *end;
    errno = 0;
    long long v = strtoll(sh, &end, 10);
    if (end == sh || errno || v < 0 || v > (1ll << 40))
      return fail(err, cap, TPU_ERR_INPUT, "%s: header field 'shape' has a bad dimension", path);
    if (a->ndim == TPU_NPY_MAX_DIMS)
      return fail(err, cap, TPU_ERR_INPUT, "%s: header field 'shape' has more than %d dimensions", path,
                  TPU_NPY_MAX_DIMS);
    a->shape[a->ndim++] = v;
    if (v && count > (INT64_C(1) << 40) / v) return fail(err, cap, TPU_ERR_INPUT, "%s: array too large", path);
    count *= v;
    sh = end;
  }
  a->count = (size_t)count;
  return TPU_OK;
}

tpu_status tpu_npy_parse(const char *path, const void *buf, size_t len, tpu_npy *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  const unsigned char *u = buf;
  size_t hl, off;
  if (len < 10 || memcmp(u, "\x93NUMPY", 6) != 0)
    return fail(err, cap, TPU_ERR_INPUT, "%s: not a .npy file (bad magic); expected NumPy's format", path);
  if (u[6] == 1) {
    hl = (size_t)u[8] | (size_t)u[9] << 8;
    off = 10;
  } else if ((u[6] == 2 || u[6] == 3) && len >= 12) {
    hl = (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24;
    off = 12;
  } else {
    return fail(err, cap, TPU_ERR_INPUT, "%s: .npy version %d.%d; expected 1.0, 2.0 or 3.0", path, u[6], u[7]);
  }
  if (hl > len - off) return fail(err, cap, TPU_ERR_INPUT, "%s: truncated header", path);
  char *hdr = tpu_malloc(hl + 1);
  if (!hdr) return fail(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
  memcpy(hdr, u + off, hl);
  hdr[hl] = 0;
  tpu_status st = parse_descr(path, dict_value(hdr, "descr"), out, err, cap);
  const char *fo = dict_value(hdr, "fortran_order");
  if (st == TPU_OK && (!fo || strncmp(fo, "False", 5) != 0))
    st = fail(err, cap, TPU_ERR_INPUT, "%s: header field 'fortran_order' must be False (C order)", path);
  if (st == TPU_OK) st = parse_shape(path, dict_value(hdr, "shape"), out, err, cap);
  tpu_free(hdr);
  if (st != TPU_OK) return st;
  const size_t need = out->count * out->itemsize, have = len - off - hl;
  if (have != need)
    return fail(err, cap, TPU_ERR_INPUT, "%s: %s: shape says %zu bytes of data, the file holds %zu", path,
                have < need ? "truncated" : "trailing bytes", need, have);
  out->data = u + off + hl;
  return TPU_OK;
}

tpu_status tpu_npy_read_f32(const char *path, tpu_npy *hdr, float **data, char *err, size_t cap) {
  *data = NULL;
  memset(hdr, 0, sizeof *hdr);
  size_t len;
  char *buf = tpu_read_file(path, &len);
  if (!buf)
    return fail(err, cap, errno == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  tpu_status st = tpu_npy_parse(path, buf, len, hdr, err, cap);
  if (st == TPU_OK && strcmp(hdr->descr, "<f4") != 0)
    st = fail(err, cap, TPU_ERR_INPUT, "%s: header field 'descr' is '%s'; expected '<f4' (little-endian float32)",
              path, hdr->descr);
  if (st == TPU_OK && !(*data = tpu_malloc(hdr->count * sizeof(float))))
    st = fail(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
  if (st == TPU_OK) memcpy(*data, hdr->data, hdr->count * sizeof(float));  /* the host is little-endian */
  hdr->data = NULL;
  tpu_free(buf);
  return st;
}

int tpu_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape) {
  char dict[256];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
  int64_t count = 1;
  for (int i = 0; i < ndim; i++) {
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i], i + 1 < ndim ? " " : "");
    count *= shape[i];
  }
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  size_t total_hdr = 10 + (size_t)n + 1;          /* magic..len + dict + '\n' */
  size_t pad = (64 - total_hdr % 64) % 64;
  size_t hl = (size_t)n + pad + 1;
  size_t bytes = 10 + hl + (size_t)count * 4;
  unsigned char *buf = tpu_malloc(bytes);
  if (!buf) { errno = ENOMEM; return -1; }
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)(hl & 0xff);
  buf[9] = (unsigned char)(hl >> 8);
  memcpy(buf + 10, dict, (size_t)n);
  memset(buf + 10 + n, ' ', pad);
  buf[10 + hl - 1] = '\n';
  memcpy(buf + 10 + hl, data, (size_t)count * 4);
  int rc = tpu_write_atomic(path, buf, bytes);
  int e = errno;
  tpu_free(buf);
  errno = e;
  return rc;
}
