/*
** train_data.c -- a minimal dataset loader for training: IDX files (gzip or
** raw, through zlib) and a seeded synthetic set. Temporary: it goes away
** when datafeed's readers (datafeed/df.h) land; it does no pipelining.
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "frontend/fe_train.h"

void fe_dataset_free(fe_dataset *d) {
  tpu_free(d->x);
  tpu_free(d->y);
  memset(d, 0, sizeof *d);
}

static uint32_t be32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Reads an IDX file whose magic is 0x0000080N (unsigned bytes, N dims). */
static tpu_status read_idx(const char *path, int want_dims, uint32_t dims[3], unsigned char **data,
                           char *err, size_t errcap) {
  gzFile f = gzopen(path, "rb");
  if (!f) { snprintf(err, errcap, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT)); return TPU_ERR_IO; }
  unsigned char hdr[16];
  int hn = 4 + 4 * want_dims;
  tpu_status st = TPU_OK;
  *data = NULL;
  if (gzread(f, hdr, (unsigned)hn) != hn) {
    snprintf(err, errcap, "%s: truncated IDX header", path); st = TPU_ERR_INPUT; goto done;
  }
  if (hdr[0] || hdr[1] || hdr[2] != 0x08 || hdr[3] != want_dims) {
    snprintf(err, errcap, "%s: not an IDX file of unsigned bytes with %d dimensions (magic %02x%02x%02x%02x)",
             path, want_dims, hdr[0], hdr[1], hdr[2], hdr[3]);
    st = TPU_ERR_INPUT; goto done;
  }
  size_t n = 1;
  for (int d = 0; d < want_dims; d++) {
    dims[d] = be32(hdr + 4 + 4 * d);
    if (dims[d] == 0 || dims[d] > (1u << 24)) {
      snprintf(err, errcap, "%s: dimension %d is %u; expected 1..2^24", path, d, dims[d]);
      st = TPU_ERR_INPUT; goto done;
    }
    n *= dims[d];
  }
  if (n > ((size_t)1 << 32)) { snprintf(err, errcap, "%s: too large", path); st = TPU_ERR_INPUT; goto done; }
  if (!(*data = tpu_malloc(n))) { snprintf(err, errcap, "%s: out of memory", path); st = TPU_ERR_NOMEM; goto done; }
  size_t got = 0;
  while (got < n) {
    unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
    int r = gzread(f, *data + got, chunk);
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got != n) {
    snprintf(err, errcap, "%s: truncated: %zu of %zu data bytes", path, got, n);
    tpu_free(*data); *data = NULL; st = TPU_ERR_INPUT;
  }
done:
  gzclose(f);
  return st;
}

static tpu_status load_idx_pair(const char *dir, bool test, fe_dataset *out, char *err, size_t errcap) {
  const char *pre = test ? "t10k" : "train";
  char ip[1024], lp[1024];
  const char *sfx[2] = { ".gz", "" };
  FILE *probe = NULL;
  int s = 0;
  for (s = 0; s < 2; s++) {
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte%s", dir, pre, sfx[s]);
    if ((probe = fopen(ip, "rb"))) break;
  }
  if (!probe) {
    snprintf(err, errcap, "%s: no %s-images-idx3-ubyte(.gz) there; expected the four IDX files of "
             "(Fashion-)MNIST", dir, pre);
    return TPU_ERR_IO;
  }
  fclose(probe);
  snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte%s", dir, pre, sfx[s]);
  uint32_t di[3], dl[3];
  unsigned char *img = NULL, *lab = NULL;
  tpu_status st;
  if ((st = read_idx(ip, 3, di, &img, err, errcap))) return st;
  if ((st = read_idx(lp, 1, dl, &lab, err, errcap))) { tpu_free(img); return st; }
  if (di[0] != dl[0]) {
    snprintf(err, errcap, "%s: %u labels for %u images in %s", lp, dl[0], di[0], ip);
    tpu_free(img); tpu_free(lab);
    return TPU_ERR_INPUT;
  }
  size_t per = (size_t)di[1] * di[2], n = di[0];
  out->n = (int)n;
  out->shape = (fe_shape){ (int)di[1], (int)di[2], 1 };
  out->classes = 10;
  out->x = tpu_malloc(n * per * sizeof(float));
  out->y = lab;
  if (!out->x) { tpu_free(img); fe_dataset_free(out); snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  for (size_t k = 0; k < n * per; k++) out->x[k] = (float)img[k] * (1.0f / 255.0f);
  for (size_t k = 0; k < n; k++)
    if (lab[k] >= 10) {
      snprintf(err, errcap, "%s: label %u of sample %zu is out of range 0..9", lp, lab[k], k);
      tpu_free(img); fe_dataset_free(out);
      return TPU_ERR_INPUT;
    }
  tpu_free(img);
  return TPU_OK;
}

/* Ten seeded prototype images; a sample is its class's prototype plus
** uniform noise, clipped to [0, 1]. Learnable to high accuracy in an epoch. */
static tpu_status synthetic(bool test, int n, uint64_t seed, fe_dataset *out) {
  const int per = 28 * 28;
  out->n = n;
  out->shape = (fe_shape){ 28, 28, 1 };
  out->classes = 10;
  out->x = tpu_malloc((size_t)n * per * sizeof(float));
  out->y = tpu_malloc((size_t)n);
  if (!out->x || !out->y) { fe_dataset_free(out); return TPU_ERR_NOMEM; }
  uint64_t base = fe_mix64(seed ^ 0x5157u), key = fe_mix64(base + (test ? 2 : 1));
  for (int i = 0; i < n; i++) {
    int y = (int)(fe_mix64(key + (uint64_t)i * 2) % 10);
    out->y[i] = (uint8_t)y;
    uint64_t nk = fe_mix64(key + (uint64_t)i * 2 + 1);
    for (int e = 0; e < per; e++) {
      float proto = (float)(fe_mix64(base * 31 + (uint64_t)y * per + (uint64_t)e) >> 40) / 16777216.0f;
      float noise = (float)(fe_mix64(nk + (uint64_t)e) >> 40) / 16777216.0f - 0.5f;
      float v = proto + 0.8f * noise;
      out->x[(size_t)i * per + (size_t)e] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
  }
  return TPU_OK;
}

tpu_status fe_dataset_load(const char *what, bool test, int synthetic_n, uint64_t seed,
                           fe_dataset *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  if (!strcmp(what, "synthetic")) {
    tpu_status st = synthetic(test, synthetic_n, seed, out);
    if (st) snprintf(err, errcap, "synthetic data: out of memory");
    return st;
  }
  if (!strcmp(what, "fashion-mnist")) what = "/usr/share/datasets/fashion-mnist";
  else if (!strcmp(what, "mnist")) what = "/usr/share/datasets/mnist";
  return load_idx_pair(what, test, out, err, errcap);
}
