/*
** npy.c -- read and write .npy (f32, little-endian, C order). The header is
** a Python dict literal; we parse the three keys NumPy writes ('descr',
** 'fortran_order', 'shape') and reject anything else we cannot honour.
*/
#include "cli/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "base/base.h"

void cli_npy_free(cli_npy *a) {
  if (!a) return;
  tpu_free(a->data);
  a->data = NULL;
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

int cli_npy_read_f32(const char *path, cli_npy *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  size_t len;
  char *buf = tpu_read_file(path, &len);
  if (!buf) { snprintf(err, errcap, "%s: cannot read: %s", path, strerror(errno)); return -1; }
  const unsigned char *u = (const unsigned char *)buf;
  size_t hl, off;
  char *hdr = NULL;
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
    snprintf(err, errcap, "%s: not a .npy file (bad magic); expected NumPy's format", path);
    goto fail;
  }
  if (u[6] == 1) { hl = (size_t)u[8] | (size_t)u[9] << 8; off = 10; }
  else if ((u[6] == 2 || u[6] == 3) && len >= 12) {
    hl = (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24; off = 12;
  } else {
    snprintf(err, errcap, "%s: .npy version %d.%d; expected 1.0, 2.0 or 3.0", path, u[6], u[7]);
    goto fail;
  }
  if (off + hl > len) { snprintf(err, errcap, "%s: truncated header", path); goto fail; }
  hdr = tpu_malloc(hl + 1);
  if (!hdr) { snprintf(err, errcap, "%s: out of memory", path); goto fail; }
  memcpy(hdr, buf + off, hl);
  hdr[hl] = 0;
  const char *d = dict_value(hdr, "descr");
  if (!d || strncmp(d, "'<f4'", 5) != 0) {
    char got[16] = "?";
    if (d) { size_t n = strcspn(d, ","); snprintf(got, sizeof got, "%.*s", (int)(n < 12 ? n : 12), d); }
    snprintf(err, errcap, "%s: header field 'descr' is %s; expected '<f4' (little-endian float32)", path, got);
    goto fail;
  }
  const char *fo = dict_value(hdr, "fortran_order");
  if (!fo || strncmp(fo, "False", 5) != 0) {
    snprintf(err, errcap, "%s: header field 'fortran_order' must be False (C order)", path);
    goto fail;
  }
  const char *sh = dict_value(hdr, "shape");
  if (!sh || *sh != '(') { snprintf(err, errcap, "%s: header field 'shape' missing or not a tuple", path); goto fail; }
  sh++;
  int64_t count = 1;
  for (;;) {
    while (*sh == ' ' || *sh == ',') sh++;
    if (*sh == ')') break;
    char *end;
    errno = 0;
    long long v = strtoll(sh, &end, 10);
    if (end == sh || errno || v < 0 || v > (1ll << 40)) {
      snprintf(err, errcap, "%s: header field 'shape' has a bad dimension", path);
      goto fail;
    }
    if (out->ndim == TPU_FE_NPY_MAX_DIMS) {
      snprintf(err, errcap, "%s: header field 'shape' has more than %d dimensions", path, TPU_FE_NPY_MAX_DIMS);
      goto fail;
    }
    out->shape[out->ndim++] = v;
    if (v && count > (INT64_C(1) << 40) / v) { snprintf(err, errcap, "%s: array too large", path); goto fail; }
    count *= v;
    sh = end;
  }
  size_t need = (size_t)count * 4, data_off = off + hl;
  if (len - data_off != need) {
    snprintf(err, errcap, "%s: %s: shape says %zu bytes of data, the file holds %zu", path,
             len - data_off < need ? "truncated" : "trailing bytes", need, len - data_off);
    goto fail;
  }
  out->data = tpu_malloc(need ? need : 4);
  if (!out->data) { snprintf(err, errcap, "%s: out of memory", path); goto fail; }
  memcpy(out->data, buf + data_off, need);  /* host is little-endian (x86-64, arm64) */
  tpu_free(hdr);
  tpu_free(buf);
  return 0;
fail:
  tpu_free(hdr);
  tpu_free(buf);
  out->ndim = 0;
  return -1;
}

int cli_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape) {
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
