/*
** npy.c -- .npy arrays (base.h): the header is a Python dict literal; we
** read it as NumPy does, the three keys NumPy writes ('descr',
** 'fortran_order', 'shape') and nothing else, and reject anything we cannot
** honour, naming the file and what was wrong.
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

/* The header is read as NumPy reads it (numpy.lib.format): a Python dict
** literal with exactly the keys 'descr', 'fortran_order' and 'shape', in
** any order, padded with spaces and ended by a newline. Anything else in
** it -- another key, a key twice, a NUL byte, text after the dict -- is
** refused, naming the byte at fault. */
typedef struct hcur { const char *path, *p, *end, *start; char *err; size_t cap; } hcur;

static tpu_status hfail(hcur *c, const char *what) {
  const size_t at = (size_t)(c->p - c->start);
  if (c->p < c->end && *c->p == 0)
    return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header byte %zu is a NUL byte; expected %s (the header is "
                "a Python dict literal)", c->path, at, what);
  if (c->p >= c->end)
    return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header ends early; expected %s", c->path, what);
  return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header byte %zu is '%c'; expected %s", c->path, at,
              *c->p >= 32 && *c->p < 127 ? *c->p : '?', what);
}
static void hskip(hcur *c) { while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++; }
static bool hat(hcur *c, char ch) { hskip(c); return c->p < c->end && *c->p == ch; }

/* A quoted string (' or ") of printable characters into buf. */
static tpu_status hstring(hcur *c, char *buf, size_t cap, const char *what) {
  hskip(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return hfail(c, what);
  const char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p < 32 || *c->p > 126 || *c->p == '\\') return hfail(c, "a printable character or the closing quote");
    if (n + 1 < cap) buf[n] = *c->p;
    n++;
    c->p++;
  }
  if (c->p >= c->end) return hfail(c, "the closing quote");
  c->p++;
  if (n >= cap) return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header: a string of %zu characters; expected %s",
                            c->path, n, what);
  buf[n] = 0;
  return TPU_OK;
}

/* 'descr': byte order ('<', '|', '=' or '>'), a kind letter and the item
** size, e.g. '<f4'. Big-endian data with items wider than a byte is refused. */
static tpu_status parse_descr(hcur *c, tpu_npy *a) {
  char d[32];
  hskip(c);
  const bool quoted = c->p < c->end && (*c->p == '\'' || *c->p == '"');
  tpu_status st = quoted ? hstring(c, d, sizeof d, "a dtype string") : TPU_ERR_INPUT;
  if (st == TPU_OK && strlen(d) < sizeof a->descr) {
    memcpy(a->descr, d, strlen(d) + 1);
    const char *p = a->descr;
    bool big = *p == '>';
    if (strchr("<>|=", *p)) p++;
    if (*p && strchr("biufc", *p) && p[1] >= '1' && p[1] <= '9') {
      char *end;
      a->itemsize = (size_t)strtoul(p + 1, &end, 10);
      if (!*end && a->itemsize <= 16 && !(big && a->itemsize > 1)) return TPU_OK;
    }
  }
  char got[16] = "?";
  if (st == TPU_OK) snprintf(got, sizeof got, "'%.12s'", d);
  return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header field 'descr' is %s; expected a little-endian numeric "
              "dtype such as '<f4'", c->path, got);
}

/* 'shape': a tuple of integers, "(2, 3)", "(5,)" or "()". */
static tpu_status parse_shape(hcur *c, tpu_npy *a) {
  static const char *const want = "header field 'shape' as a tuple of integers such as (2, 3)";
  if (!hat(c, '(')) return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header field 'shape' missing or not a tuple", c->path);
  c->p++;
  int64_t count = 1;
  for (bool first = true;; first = false) {
    if (hat(c, ')')) { c->p++; break; }
    if (!first) {
      if (!hat(c, ',')) return hfail(c, want);
      c->p++;
      if (hat(c, ')')) { c->p++; break; }
    }
    hskip(c);
    long long v = 0;
    const char *d0 = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && v <= (1ll << 40)) v = v * 10 + (*c->p++ - '0');
    if (c->p == d0 || v > (1ll << 40))
      return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header field 'shape' has a bad dimension", c->path);
    if (a->ndim == TPU_NPY_MAX_DIMS)
      return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: header field 'shape' has more than %d dimensions", c->path,
                  TPU_NPY_MAX_DIMS);
    a->shape[a->ndim++] = v;
    if (v && count > (INT64_C(1) << 40) / v) return fail(c->err, c->cap, TPU_ERR_INPUT, "%s: array too large", c->path);
    count *= v;
  }
  a->count = (size_t)count;
  return TPU_OK;
}

static tpu_status parse_header(const char *path, const char *h, size_t n, tpu_npy *a, char *err, size_t cap) {
  hcur c = { path, h, h + n, h, err, cap };
  static const char *const keys[3] = { "descr", "fortran_order", "shape" };
  bool seen[3] = { false, false, false };
  tpu_status st;
  if (!hat(&c, '{')) return hfail(&c, "'{'");
  c.p++;
  for (;;) {
    if (hat(&c, '}')) break;
    char key[32];
    if ((st = hstring(&c, key, sizeof key, "a quoted key (descr, fortran_order or shape) or '}'"))) return st;
    int k = -1;
    for (int i = 0; i < 3; i++) if (!strcmp(key, keys[i])) k = i;
    if (k < 0)
      return fail(err, cap, TPU_ERR_INPUT, "%s: header has a key '%s'; expected exactly descr, fortran_order and "
                  "shape", path, key);
    if (seen[k]) return fail(err, cap, TPU_ERR_INPUT, "%s: header field '%s' given twice", path, key);
    seen[k] = true;
    if (!hat(&c, ':')) return hfail(&c, "':' after the key");
    c.p++;
    if (k == 0) st = parse_descr(&c, a);
    else if (k == 2) st = parse_shape(&c, a);
    else {
      hskip(&c);
      st = c.end - c.p >= 5 && !memcmp(c.p, "False", 5) ? TPU_OK
         : fail(err, cap, TPU_ERR_INPUT, "%s: header field 'fortran_order' must be False (C order)", path);
      c.p += 5;
    }
    if (st) return st;
    if (hat(&c, ',')) { c.p++; continue; }
    if (!hat(&c, '}')) return hfail(&c, "',' or '}'");
  }
  c.p++;
  while (c.p < c.end && (*c.p == ' ' || *c.p == '\t' || *c.p == '\n' || *c.p == '\r')) c.p++;
  if (c.p < c.end) return hfail(&c, "only spaces and the newline after the header dict");
  for (int i = 0; i < 3; i++)
    if (!seen[i]) return fail(err, cap, TPU_ERR_INPUT, "%s: header field '%s' missing", path, keys[i]);
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
  tpu_status st = parse_header(path, (const char *)u + off, hl, out, err, cap);
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
