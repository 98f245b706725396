/*
** df_read.c -- readers: IDX (MNIST, Fashion-MNIST; gzip or plain), CIFAR-10
** binary, TFRecord (tf.train.Example; raw, JPEG or PNG images), a directory
** of class folders of images (Keras' image_dataset_from_directory: its
** order, numpy's shuffle, the validation split), CSV, .npy and a seeded
** synthetic source. Each decodes into a df_data held in memory (encoded
** images decoded on a few threads by df_image.c). Headers, dimensions,
** sizes and labels are validated when the source is opened; every message
** names the file (and the record).
**
** Large IDX image files load in a thread: the compressed file is read
** whole, then a loader thread inflates it straight into the image array (no
** extra copy) while the workers waiting for it touch the pages ahead. For
** gzip the expected size is checked at open against the ISIZE trailer (so a
** truncated .gz is caught before any thread starts), and the images are
** published only once the whole stream has inflated and its trailer (CRC-32
** and length) checks out with nothing after it: a corrupt file is reported
** by the tpu_df_next that waits for it, and no batch is made of its bytes.
** Plain files are published as they are read (their size was checked at
** open). Label files are inflated and checked whole at open.
*/
#include "datafeed/df_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define ferr tpu_errorf   /* base.h: the message into err, then the status */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads a whole file. NULL with a message on failure. */
static unsigned char *slurp(const char *path, size_t *len, tpu_status *st, char *err, size_t cap) {
  int fd = open(path, O_RDONLY | O_NONBLOCK);   /* a FIFO does not block the open; fstat refuses it */
  if (fd < 0) { *st = ferr(err, cap, TPU_ERR_IO, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    *st = ferr(err, cap, TPU_ERR_IO, "%s: not a regular file", path);
    return NULL;
  }
  size_t n = (size_t)sb.st_size;
  unsigned char *buf = tpu_malloc(n ? n : 1);
  if (!buf) { close(fd); *st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, n); return NULL; }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { close(fd); tpu_free(buf); *st = ferr(err, cap, TPU_ERR_IO, "%s: read error", path); return NULL; }
    got += (size_t)r;
  }
  close(fd);
  *len = n;
  return buf;
}

/* Image buffers. Large ones are aligned to 2 MiB and marked for transparent
** huge pages where the kernel offers them: a fault per 2 MiB instead of per
** 4 KiB (faults cost as much as inflating on virtualized hosts). The raw
** pointer is kept for tpu_free. */
#define HUGE_ALIGN ((size_t)2 << 20)
static uint8_t *alloc_u8(df_data *d, size_t n) {
  if (n < 2 * HUGE_ALIGN) {
    d->u8_raw = tpu_malloc(n + 64);
    return d->u8_raw ? (uint8_t *)(((uintptr_t)d->u8_raw + 63) & ~(uintptr_t)63) : NULL;
  }
  d->u8_raw = tpu_malloc(n + HUGE_ALIGN);
  if (!d->u8_raw) return NULL;
  uint8_t *p = (uint8_t *)(((uintptr_t)d->u8_raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
#ifdef MADV_HUGEPAGE
  (void)madvise(p, n & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE);   /* advice only: failure is harmless */
#endif
  return p;
}

static bool is_gzip(const unsigned char *b, size_t n) { return n >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

/* Deflate expands at most 1032:1 (a 258-byte match costs at least two
** bits), and a gzip member spends at least 18 bytes on its header and
** trailer: a file of n bytes cannot inflate to more. A size field beyond
** this is corrupt, found before anything is allocated for it. */
#define GZIP_MAX_RATIO 1032u
static uint64_t gzip_max_out(size_t n) { return n < 18 ? 0 : (uint64_t)GZIP_MAX_RATIO * (n - 18); }

/* The uncompressed size a gzip file's trailer states (mod 2^32). */
static uint32_t gzip_isize(const unsigned char *b, size_t n) {
  return (uint32_t)b[n - 4] | (uint32_t)b[n - 3] << 8 | (uint32_t)b[n - 2] << 16 | (uint32_t)b[n - 1] << 24;
}

/* zlib's message for a bad trailer, in words that say which. */
static const char *gzip_why(const z_stream *z) {
  if (z->msg && !strcmp(z->msg, "incorrect data check")) return "the CRC-32 in its trailer does not match the data";
  if (z->msg && !strcmp(z->msg, "incorrect length check")) return "the length in its trailer does not match the data";
  return z->msg ? z->msg : "corrupt gzip data";
}

/* After the last wanted byte of a gzip stream: the stream must end there,
** its trailer (CRC-32 and length, which zlib checks on Z_STREAM_END) must
** match, and no byte may follow it. */
static const char *gzip_end(z_stream *z, int r) {
  unsigned char extra;
  z->next_out = &extra;
  z->avail_out = 1;
  while (r == Z_OK && z->avail_out > 0) r = inflate(z, Z_FINISH);
  if (r == Z_BUF_ERROR && z->avail_out > 0 && z->avail_in == 0) return "truncated gzip data (the trailer is missing)";
  if (r != Z_STREAM_END) return z->avail_out == 0 ? "more data than the header says" : gzip_why(z);
  if (z->avail_in > 0) return "trailing data after the gzip stream";
  return NULL;
}

/* Inflates the first 'want' bytes of a gzip buffer into 'dst'; with
** 'whole', they must be all of it: the trailer is checked and nothing may
** follow (gzip_end). */
static tpu_status gunzip(const unsigned char *gz, size_t n, unsigned char *dst, size_t want, bool whole,
                         const char *path, char *err, size_t cap) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return ferr(err, cap, TPU_ERR_NOMEM, "%s: zlib init failed", path);
  z.next_in = (unsigned char *)gz; z.avail_in = (uInt)n;
  z.next_out = dst; z.avail_out = (uInt)want;
  int r = Z_OK;
  while (z.avail_out > 0 && r == Z_OK) r = inflate(&z, whole ? Z_NO_FLUSH : Z_SYNC_FLUSH);
  const char *why = z.avail_out > 0 ? (r == Z_STREAM_END ? "less data than its size field says"
                                      : z.msg ? gzip_why(&z) : "truncated gzip data")
                  : whole ? gzip_end(&z, r) : NULL;
  inflateEnd(&z);
  return why ? ferr(err, cap, TPU_ERR_INPUT, "%s: corrupt gzip file: %s", path, why) : TPU_OK;
}

/* Fresh pages cost a fault on first touch, which on some hosts costs as
** much as inflating into them. Workers that would otherwise sleep waiting
** for the loader touch the pages ahead of it (df_data_wait); the loader takes
** ownership of a range before writing it, so the two never write the same
** bytes. Returns when [0, end) may be written by the loader. */
static bool loader_claim(df_data *d, size_t end) {
  pthread_mutex_lock(&d->mu);
  while (d->fault_end < end && d->pf_busy_end > d->fault_end) pthread_cond_wait(&d->cv, &d->mu);
  if (d->fault_end < end) d->fault_end = d->pf_busy_end = end;
  bool go = !d->cancel;
  pthread_mutex_unlock(&d->mu);
  return go;
}

/* The loader thread: inflates (or reads) the image body in chunks and
** publishes progress. */
static void *loader_main(void *arg) {
  df_data *d = arg;
  const size_t row = (size_t)d->d, total = (size_t)d->n * row;
  const size_t chunk = row * 512;
  char msg[512] = "";
  tpu_status st = TPU_OK;
  size_t done = 0;
  if (d->gz) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) { st = TPU_ERR_NOMEM; snprintf(msg, sizeof msg, "%s: zlib init failed", d->img_path); goto out; }
    unsigned char hdr[64];
    z.next_in = d->gz; z.avail_in = (uInt)d->gz_len;
    z.next_out = hdr; z.avail_out = (uInt)d->body_off;      /* skip the header, checked at open */
    int r = Z_OK;
    while (z.avail_out > 0 && r == Z_OK) r = inflate(&z, Z_SYNC_FLUSH);
    while (st == TPU_OK && done < total) {
      size_t want = total - done < chunk ? total - done : chunk;
      if (!loader_claim(d, done + want)) { st = TPU_ERR_RUNTIME; snprintf(msg, sizeof msg, "%s: reading cancelled", d->img_path); break; }
      z.next_out = d->u8 + done; z.avail_out = (uInt)want;
      while (z.avail_out > 0 && r == Z_OK) r = inflate(&z, Z_NO_FLUSH);
      done += want - z.avail_out;
      if (z.avail_out > 0) {
        st = TPU_ERR_INPUT;
        snprintf(msg, sizeof msg, "%s: corrupt gzip file: truncated or corrupt data after %zu images (%s)", d->img_path,
                 done / row, z.msg ? z.msg : "data ended early");
        break;
      }
      /* nothing is published yet: until the trailer's CRC checks out, no
      ** byte of a compressed file is known to be right (waiting workers
      ** touch the pages ahead meanwhile, df_data_wait) */
    }
    const char *why = st == TPU_OK ? gzip_end(&z, r) : NULL;
    if (why) {
      st = TPU_ERR_INPUT;
      snprintf(msg, sizeof msg, "%s: corrupt gzip file: %s", d->img_path, why);
    }
    inflateEnd(&z);
  } else {
    while (done < total) {
      size_t want = total - done < chunk ? total - done : chunk;
      if (!loader_claim(d, done + want)) { st = TPU_ERR_RUNTIME; snprintf(msg, sizeof msg, "%s: reading cancelled", d->img_path); break; }
      ssize_t r = pread(d->fd, d->u8 + done, want, (off_t)(d->body_off + (int64_t)done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) { st = TPU_ERR_INPUT; snprintf(msg, sizeof msg, "%s: truncated after %zu images", d->img_path, done / row); break; }
      done += (size_t)r;
      pthread_mutex_lock(&d->mu);
      d->ready = (int64_t)(done / row);
      pthread_cond_broadcast(&d->cv);
      pthread_mutex_unlock(&d->mu);
    }
  }
out:
  pthread_mutex_lock(&d->mu);
  d->load_status = st;
  if (st != TPU_OK) snprintf(d->load_err, sizeof d->load_err, "%s", msg);
  else d->ready = d->n;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

tpu_status df_data_wait(df_data *d, int64_t id, char *err, size_t errcap) {
  pthread_mutex_lock(&d->mu);
  const size_t total = d->u8 ? (size_t)d->n * (size_t)d->d : 0, range = (size_t)1 << 20;
  while (d->ready <= id && d->load_status == TPU_OK && d->loader_running) {
    if (d->pf_busy_end == d->fault_end && d->fault_end < total) {
      /* touch the next pages ahead of the loader instead of sleeping */
      size_t a = d->fault_end, b = a + range < total ? a + range : total;
      d->pf_busy_end = b;
      pthread_mutex_unlock(&d->mu);
      volatile uint8_t *p = d->u8;
      for (size_t o = a; o < b; o += 4096) p[o] = 0;
      pthread_mutex_lock(&d->mu);
      d->fault_end = b;
      pthread_cond_broadcast(&d->cv);
      continue;
    }
    pthread_cond_wait(&d->cv, &d->mu);
  }
  tpu_status st = d->ready > id ? TPU_OK : d->load_status != TPU_OK ? d->load_status : TPU_ERR_RUNTIME;
  if (st != TPU_OK && err) snprintf(err, errcap, "%s", d->load_status != TPU_OK ? d->load_err : "loader stopped");
  pthread_mutex_unlock(&d->mu);
  return st;
}

static df_data *data_new(void) {
  df_data *d = tpu_calloc(1, sizeof *d);
  if (!d) return NULL;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  d->fd = -1;
  return d;
}

void df_data_close(df_data *d) {
  if (!d) return;
  if (d->loader_running) {
    pthread_mutex_lock(&d->mu);
    d->cancel = true;
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->loader, NULL);
  }
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  tpu_free(d->u8_raw);
  tpu_free(d->f32);
  tpu_free(d->labels);
  tpu_free(d->file_start);
  tpu_free(d->gz);
  tpu_free(d->img_path);
  if (d->fd >= 0) close(d->fd);
  tpu_free(d);
}

static tpu_status set_files(df_data *d, int nfiles) {
  d->nfiles = nfiles;
  d->file_start = tpu_calloc((size_t)nfiles + 1, sizeof *d->file_start);
  if (!d->file_start) return TPU_ERR_NOMEM;
  d->file_start[nfiles] = d->n;
  return TPU_OK;
}

/* Labels are validated against 'classes' (0 = infer: max+1, at least 2). */
static tpu_status check_labels(df_data *d, int classes, const char *path, char *err, size_t cap) {
  int32_t mx = 0;
  for (int64_t i = 0; i < d->n; i++) {
    int32_t y = d->labels[i];
    if (y < 0 || (classes > 0 && y >= classes))
      return ferr(err, cap, TPU_ERR_INPUT, "%s: label %d of element %lld is out of range; allowed 0..%d",
                  path, (int)y, (long long)i, classes > 0 ? classes - 1 : 65535);
    if (y > mx) mx = y;
  }
  if (classes <= 0 && mx > 65535) return ferr(err, cap, TPU_ERR_INPUT, "%s: label %d is out of range 0..65535", path, (int)mx);
  d->classes = classes > 0 ? classes : (mx + 1 < 2 ? 2 : mx + 1);
  return TPU_OK;
}

/* {==================================================================
** IDX
** ================================================================== */

/* The header of an IDX image file of unsigned bytes and any rank from 2 to
** 4: N x D (a row of D values, taken as 1 x D), N x H x W (grey) or
** N x H x W x C (colour, channels last). *hlen is its length (4 + 4 x rank). */
static tpu_status idx_image_header(const unsigned char *ib, size_t ilen, bool gz, const char *ipath, unsigned char hdr[20],
                                   size_t *hlen, uint32_t *n, uint32_t *h, uint32_t *w, uint32_t *c, char *err, size_t cap) {
  static const char *want = "an IDX image file starts with 00 00 08 and its rank 02, 03 or 04 (N x D, N x H x W, N x H x W x C)";
  tpu_status st;
  unsigned char m[4];
  if (gz) {
    if (ilen < 18) return ferr(err, cap, TPU_ERR_INPUT, "%s: truncated gzip file", ipath);
    if ((st = gunzip(ib, ilen, m, 4, false, ipath, err, cap)) != TPU_OK) return st;
  } else {
    if (ilen < 4) return ferr(err, cap, TPU_ERR_INPUT, "%s: bad magic (file too short); %s", ipath, want);
    memcpy(m, ib, 4);
  }
  if (m[0] || m[1] || m[2] != 8 || m[3] < 2 || m[3] > 4) return ferr(err, cap, TPU_ERR_INPUT, "%s: bad magic number; %s", ipath, want);
  const int rank = m[3];
  *hlen = 4 + 4 * (size_t)rank;
  if (gz) {
    if ((st = gunzip(ib, ilen, hdr, *hlen, false, ipath, err, cap)) != TPU_OK) return st;
  } else {
    if (ilen < *hlen) return ferr(err, cap, TPU_ERR_INPUT, "%s: truncated: the header of a rank-%d IDX file has %zu bytes", ipath, rank, *hlen);
    memcpy(hdr, ib, *hlen);
  }
  uint32_t dim[3] = { 1, 1, 1 };
  for (int k = 1; k < rank; k++) dim[k - 1] = be32(hdr + 4 + 4 * k);
  *n = be32(hdr + 4);
  if (rank == 2) { *h = 1; *w = dim[0]; *c = 1; } else { *h = dim[0]; *w = dim[1]; *c = dim[2]; }
  if (*h < 1 || *w < 1 || *c < 1 || *h > 65536 || *w > 65536 || *c > 4096 || (uint64_t)*h * *w * *c > (1u << 24))
    return ferr(err, cap, TPU_ERR_INPUT, "%s: element shape %ux%ux%u out of range (each side 1..65536, at most 2^24 values)", ipath, *h, *w, *c);
  return TPU_OK;
}

static tpu_status open_idx(const char *ipath, const char *lpath, int classes, df_data *d, char *err, size_t cap) {
  tpu_status st = TPU_OK;
  size_t llen = 0;
  unsigned char *lb = slurp(lpath, &llen, &st, err, cap);
  if (!lb) return st;
  unsigned char *lraw = lb;
  size_t lrawlen = llen;
  if (is_gzip(lb, llen)) {
    if (llen < 18) { tpu_free(lb); return ferr(err, cap, TPU_ERR_INPUT, "%s: truncated gzip file", lpath); }
    uint32_t isz = gzip_isize(lb, llen);
    if (isz < 8 || isz > (1u << 30) || isz > gzip_max_out(llen)) {
      tpu_free(lb);
      return ferr(err, cap, TPU_ERR_INPUT, "%s: truncated or corrupt gzip file (size field %u; %zu compressed bytes hold 8..%llu)",
                  lpath, isz, llen, (unsigned long long)(gzip_max_out(llen) < (1u << 30) ? gzip_max_out(llen) : (1u << 30)));
    }
    lraw = tpu_malloc(isz);
    if (!lraw) { tpu_free(lb); return ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", lpath); }
    st = gunzip(lb, llen, lraw, isz, true, lpath, err, cap);
    tpu_free(lb);
    lb = lraw;
    lrawlen = isz;
    if (st != TPU_OK) { tpu_free(lb); return st; }
  }
  if (lrawlen < 8 || be32(lraw) != 0x00000801u) {
    tpu_free(lb);
    return ferr(err, cap, TPU_ERR_INPUT, "%s: bad magic %s; an IDX label file starts with 00 00 08 01",
                lpath, lrawlen < 8 ? "(file too short)" : "number");
  }
  uint32_t nl = be32(lraw + 4);
  if (lrawlen != 8 + (size_t)nl) {
    tpu_free(lb);
    return ferr(err, cap, TPU_ERR_INPUT, "%s: %s: header says %u labels, file holds %zu", lpath,
                lrawlen < 8 + (size_t)nl ? "truncated" : "trailing data", nl, lrawlen - 8);
  }
  /* images: header */
  size_t ilen = 0;
  unsigned char *ib = slurp(ipath, &ilen, &st, err, cap);
  if (!ib) { tpu_free(lb); return st; }
  unsigned char hdr[20];
  uint32_t n = 0, h = 0, w = 0, c = 0;
  size_t hlen = 0;
  bool gz = is_gzip(ib, ilen);
  if ((st = idx_image_header(ib, ilen, gz, ipath, hdr, &hlen, &n, &h, &w, &c, err, cap)) != TPU_OK) goto fail;
  if (n != nl) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: %u images but %s has %u labels", ipath, n, lpath, nl); goto fail; }
  if (n < 1) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: no images", ipath); goto fail; }
  uint64_t body = (uint64_t)n * h * w * c;
  if (gz) {
    uint32_t isz = gzip_isize(ib, ilen);
    if (hlen + body > gzip_max_out(ilen)) {
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: corrupt gzip file: %u images of %ux%ux%u need %llu bytes, more than its %zu bytes can inflate to (deflate expands at most %u:1)",
                ipath, n, h, w, c, (unsigned long long)(hlen + body), ilen, GZIP_MAX_RATIO);
      goto fail;
    }
    if (isz != (uint32_t)(hlen + body)) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: truncated or corrupt gzip file: expected %llu bytes uncompressed, size field says %u", ipath, (unsigned long long)(hlen + body), isz); goto fail; }
  } else if ((uint64_t)ilen != hlen + body) {
    st = ferr(err, cap, TPU_ERR_INPUT, "%s: %s: %u images of %ux%ux%u need %llu bytes, file has %zu", ipath,
              (uint64_t)ilen < hlen + body ? "truncated" : "trailing data", n, h, w, c, (unsigned long long)(hlen + body), ilen);
    goto fail;
  }
  d->n = n; d->h = (int)h; d->w = (int)w; d->c = (int)c; d->d = (int)(h * w * c);
  d->labels = tpu_malloc((size_t)n * sizeof *d->labels);
  d->u8 = alloc_u8(d, (size_t)body);
  d->img_path = tpu_strdup(ipath);
  if (!d->labels || !d->u8 || !d->img_path) { st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", ipath); goto fail; }
  for (uint32_t i = 0; i < n; i++) d->labels[i] = lraw[8 + i];
  tpu_free(lb); lb = NULL;
  if ((st = check_labels(d, classes > 0 ? classes : 10, lpath, err, cap)) != TPU_OK) goto fail;
  if ((st = set_files(d, 1)) != TPU_OK) { ferr(err, cap, st, "%s: out of memory", ipath); goto fail; }
  d->body_off = (int64_t)hlen;
  if (gz) { d->gz = ib; d->gz_len = ilen; ib = NULL; }
  else {
    tpu_free(ib); ib = NULL;   /* plain files stream with pread, in the loader */
    d->fd = open(ipath, O_RDONLY);
    if (d->fd < 0) { st = ferr(err, cap, TPU_ERR_IO, "%s: cannot open: %s", ipath, strerror(errno)); goto fail; }
  }
  if (pthread_create(&d->loader, NULL, loader_main, d) != 0) { st = ferr(err, cap, TPU_ERR_RUNTIME, "%s: cannot start the loader thread", ipath); goto fail; }
  d->loader_running = true;
  return TPU_OK;
fail:
  tpu_free(lb);
  tpu_free(ib);
  return st;
}

/* {==================================================================
** CSV: label,f1,f2,... per line; '#' lines and a non-numeric first line
** (a header) are skipped.
** ================================================================== */
typedef struct fbuf { float *v; int32_t *y; int64_t n, cap; int d; } fbuf;

static tpu_status csv_file(const char *path, fbuf *b, char *err, size_t cap) {
  tpu_status st = TPU_OK;
  size_t len = 0;
  unsigned char *txt = slurp(path, &len, &st, err, cap);
  if (!txt) return st;
  char *p = (char *)txt, *end = p + len;
  int line = 0;
  float *row = NULL;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *le = nl ? nl : end;
    line++;
    char *q = p;
    p = nl ? nl + 1 : end;
    if (le > q && le[-1] == '\r') le--;
    if (le == q || *q == '#') continue;
    if (line == 1 && !(*q == '-' || *q == '+' || (*q >= '0' && *q <= '9'))) continue;   /* header */
    int cols = 0;
    double lab = 0;
    if (b->d > 0 && !row) { row = tpu_malloc((size_t)b->d * sizeof *row); if (!row) { st = TPU_ERR_NOMEM; break; } }
    int dcap = b->d > 0 ? b->d : 1 << 24;
    while (q < le) {
      char *e;
      char save = *le; *le = 0;
      double v = strtod(q, &e);
      *le = save;
      if (e == q || (e < le && *e != ',')) {
        st = ferr(err, cap, TPU_ERR_INPUT, "%s:%d: column %d: expected a number", path, line, cols + 1);
        goto out;
      }
      if (cols == 0) lab = v;
      else if (cols - 1 < dcap) {
        row[cols - 1] = (float)v;
      }
      cols++;
      q = e < le ? e + 1 : le;
    }
    if (cols - 1 != b->d) { st = ferr(err, cap, TPU_ERR_INPUT, "%s:%d: expected %d features, got %d", path, line, b->d, cols - 1); goto out; }
    if (lab != (double)(int32_t)lab || lab < 0) { st = ferr(err, cap, TPU_ERR_INPUT, "%s:%d: label %g is not an integer >= 0", path, line, lab); goto out; }
    if (b->n == b->cap) {
      int64_t nc = b->cap ? b->cap * 2 : 1024;
      float *nv = tpu_realloc(b->v, (size_t)nc * (size_t)b->d * sizeof *nv);
      if (!nv) { st = TPU_ERR_NOMEM; goto out; }
      b->v = nv;
      int32_t *ny = tpu_realloc(b->y, (size_t)nc * sizeof *ny);
      if (!ny) { st = TPU_ERR_NOMEM; goto out; }
      b->y = ny;
      b->cap = nc;
    }
    memcpy(b->v + (size_t)b->n * (size_t)b->d, row, (size_t)b->d * sizeof *row);
    b->y[b->n++] = (int32_t)lab;
  }
out:
  if (st == TPU_ERR_NOMEM) ferr(err, cap, st, "%s: out of memory", path);
  tpu_free(row);
  tpu_free(txt);
  return st;
}

/* The width of a CSV file: the column count of its first data line, minus 1. */
static int csv_width(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  int c, cols = 1, seen = 0, first = 1, skip = 0;
  while ((c = fgetc(f)) != EOF) {
    if (first) {
      first = 0;
      if (c == '#' || !(c == '-' || c == '+' || (c >= '0' && c <= '9'))) skip = 1;
    }
    if (c == '\n') {
      if (!skip && seen) break;
      skip = 0; cols = 1; seen = 0;
      int nx = fgetc(f);
      if (nx == EOF) break;
      if (nx == '#') skip = 1;
      ungetc(nx, f);
      continue;
    }
    if (!skip) { seen = 1; if (c == ',') cols++; }
  }
  fclose(f);
  return seen || cols > 1 ? cols - 1 : 0;
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static tpu_status open_csv(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  struct stat sb;
  if (stat(src->path, &sb) != 0) return ferr(err, cap, TPU_ERR_IO, "%s: cannot open: %s", src->path, strerror(errno));
  char **names = NULL;
  int nn = 0;
  tpu_status st = TPU_OK;
  if (S_ISDIR(sb.st_mode)) {
    DIR *dir = opendir(src->path);
    if (!dir) return ferr(err, cap, TPU_ERR_IO, "%s: cannot open directory", src->path);
    struct dirent *e;
    while ((e = readdir(dir))) {
      size_t l = strlen(e->d_name);
      if (l < 5 || strcmp(e->d_name + l - 4, ".csv")) continue;
      char **nv = tpu_realloc(names, (size_t)(nn + 1) * sizeof *names);
      if (!nv) { st = TPU_ERR_NOMEM; break; }
      names = nv;
      size_t pl = strlen(src->path) + l + 2;
      names[nn] = tpu_malloc(pl);
      if (!names[nn]) { st = TPU_ERR_NOMEM; break; }
      snprintf(names[nn++], pl, "%s/%s", src->path, e->d_name);
    }
    closedir(dir);
    if (st == TPU_OK && nn == 0) st = ferr(err, cap, TPU_ERR_INPUT, "%s: no .csv files in the directory", src->path);
    if (st == TPU_OK) qsort(names, (size_t)nn, sizeof *names, cmpstr);
  } else {
    names = tpu_malloc(sizeof *names);
    if (names) names[0] = tpu_strdup(src->path);
    if (!names || !names[0]) st = TPU_ERR_NOMEM;
    else nn = 1;
  }
  fbuf b = { 0 };
  int64_t *starts = NULL;
  if (st == TPU_OK) {
    starts = tpu_calloc((size_t)nn + 1, sizeof *starts);
    if (!starts) st = TPU_ERR_NOMEM;
  }
  for (int i = 0; st == TPU_OK && i < nn; i++) {
    if (b.d == 0) {
      b.d = csv_width(names[i]);
      if (b.d < 1) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: no data line with a label and features", names[i]); break; }
    }
    starts[i] = b.n;
    st = csv_file(names[i], &b, err, cap);
    if (st == TPU_OK && b.n == starts[i]) st = ferr(err, cap, TPU_ERR_INPUT, "%s: no data lines", names[i]);
  }
  if (st == TPU_OK) {
    d->n = b.n; d->f32 = b.v; d->labels = b.y; d->d = b.d;
    b.v = NULL; b.y = NULL;
    int hh = src->height, ww = src->width, cc = src->channels ? src->channels : 1;
    if (hh > 0 && ww > 0 && (int64_t)hh * ww * cc != d->d)
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: source.shape %dx%dx%d does not match the %d features per line", src->path, hh, ww, cc, d->d);
    else if (hh > 0 && ww > 0) { d->h = hh; d->w = ww; d->c = cc; }
    else { d->h = 1; d->w = d->d; d->c = 1; }
    if (st == TPU_OK) st = check_labels(d, src->classes, src->path, err, cap);
    if (st == TPU_OK) {
      d->nfiles = nn;
      starts[nn] = d->n;
      d->file_start = starts;
      starts = NULL;
    }
  }
  if (st == TPU_ERR_NOMEM && !*err) ferr(err, cap, st, "%s: out of memory", src->path);
  tpu_free(b.v); tpu_free(b.y); tpu_free(starts);
  for (int i = 0; i < nn; i++) tpu_free(names[i]);
  tpu_free(names);
  d->ready = d->n;
  return st;
}

/* {==================================================================
** .npy (base.h's reader, version 1-3, C order): images u1 or f4 with shape
** (N, ...), labels integer (u1, i4, i8, <u4...) with shape (N,).
** ================================================================== */
static tpu_status open_npy(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  tpu_status st = TPU_OK;
  size_t il = 0, ll = 0;
  unsigned char *ib = slurp(src->images, &il, &st, err, cap), *lb = NULL;
  if (!ib) return st;
  lb = slurp(src->labels, &ll, &st, err, cap);
  if (!lb) { tpu_free(ib); return st; }
  tpu_npy im, lab;
  if ((st = tpu_npy_parse(src->images, ib, il, &im, err, cap)) != TPU_OK) goto out;
  if ((st = tpu_npy_parse(src->labels, lb, ll, &lab, err, cap)) != TPU_OK) goto out;
  bool u1 = !strcmp(im.descr, "|u1") || !strcmp(im.descr, "<u1"), f4 = !strcmp(im.descr, "<f4");
  if (!u1 && !f4) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: dtype '%s' not supported; images must be uint8 (|u1) or float32 (<f4)", src->images, im.descr); goto out; }
  if (im.ndim < 2 || im.ndim > 4) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: images need shape (N, features...) with 2 to 4 dimensions", src->images); goto out; }
  if (lab.ndim != 1 || lab.shape[0] != im.shape[0]) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: labels must have shape (%lld,) to match the images", src->labels, (long long)im.shape[0]); goto out; }
  d->n = im.shape[0];
  if (d->n < 1) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: no elements", src->images); goto out; }
  d->h = (int)im.shape[1];
  d->w = im.ndim > 2 ? (int)im.shape[2] : 1;
  d->c = im.ndim > 3 ? (int)im.shape[3] : 1;
  if (im.ndim == 2) { d->w = d->h; d->h = 1; }
  d->d = d->h * d->w * d->c;
  d->labels = tpu_malloc((size_t)d->n * sizeof *d->labels);
  if (!d->labels) { st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", src->labels); goto out; }
  const char *ld = lab.descr;
  for (int64_t i = 0; i < d->n; i++) {
    const unsigned char *q = lab.data;
    int64_t v;
    if (!strcmp(ld, "|u1") || !strcmp(ld, "<u1") || !strcmp(ld, "|i1")) v = ld[1] == 'i' ? (int8_t)q[i] : q[i];
    else if (!strcmp(ld, "<i4")) { int32_t t; memcpy(&t, q + 4 * i, 4); v = t; }
    else if (!strcmp(ld, "<u4")) { uint32_t t; memcpy(&t, q + 4 * i, 4); v = t; }
    else if (!strcmp(ld, "<i8")) { int64_t t; memcpy(&t, q + 8 * i, 8); v = t; }
    else if (!strcmp(ld, "<i2")) { int16_t t; memcpy(&t, q + 2 * i, 2); v = t; }
    else { st = ferr(err, cap, TPU_ERR_INPUT, "%s: dtype '%s' not supported; labels must be an integer type", src->labels, ld); goto out; }
    if (v < 0 || v > 65535) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: label %lld of element %lld is out of range 0..65535", src->labels, (long long)v, (long long)i); goto out; }
    d->labels[i] = (int32_t)v;
  }
  if ((st = check_labels(d, src->classes, src->labels, err, cap)) != TPU_OK) goto out;
  size_t bytes = (size_t)d->n * (size_t)d->d * (u1 ? 1 : 4);
  if (u1) { d->u8 = alloc_u8(d, bytes); if (d->u8) memcpy(d->u8, im.data, bytes); }
  else { d->f32 = tpu_malloc(bytes); if (d->f32) memcpy(d->f32, im.data, bytes); }
  if (!d->u8 && !d->f32) { st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", src->images); goto out; }
  if ((st = set_files(d, 1)) != TPU_OK) ferr(err, cap, st, "out of memory");
out:
  tpu_free(ib); tpu_free(lb);
  d->ready = d->n;
  return st;
}

/* {==================================================================
** Synthetic: each class has a random prototype image; an element is 70% its
** class prototype and 30% noise, so a model can learn it. With a vocabulary
** each class has a prototype sequence of token ids instead, and each
** position of an element keeps its prototype's id with probability 7/10,
** else takes a uniform id in [0, vocab): the ids are integers, held in f32
** (exact up to 2^24), so no stage scales them into fractions.
** ================================================================== */
static tpu_status open_synth_tokens(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  const size_t dd = (size_t)d->d, V = (size_t)src->vocab;
  d->f32 = tpu_malloc((size_t)d->n * dd * sizeof *d->f32);
  d->labels = tpu_malloc((size_t)d->n * sizeof *d->labels);
  uint32_t *proto = tpu_malloc((size_t)d->classes * dd * sizeof *proto);
  if (!d->f32 || !d->labels || !proto) { tpu_free(proto); return ferr(err, cap, TPU_ERR_NOMEM, "synthetic source: out of memory"); }
  const uint64_t s = src->seed;
  for (size_t i = 0; i < (size_t)d->classes * dd; i++) proto[i] = (uint32_t)(tpu_mix64(s ^ (0x2000000000ull + i)) % V);
  for (int64_t i = 0; i < d->n; i++) {
    uint64_t r = tpu_mix64(s + (uint64_t)i * 0x9e37u);
    const int y = (int)(r % (uint64_t)d->classes);
    d->labels[i] = y;
    const uint32_t *pr = proto + (size_t)y * dd;
    float *o = d->f32 + (size_t)i * dd;
    for (size_t j = 0; j < dd; j++) {
      r = tpu_mix64(r);
      o[j] = (float)((r & 0xffff) % 10 < 7 ? pr[j] : (uint32_t)((r >> 16) % V));
    }
  }
  tpu_free(proto);
  d->ready = d->n;
  if (set_files(d, 1) != TPU_OK) return ferr(err, cap, TPU_ERR_NOMEM, "synthetic source: out of memory");
  return TPU_OK;
}

static tpu_status open_synth(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  d->n = src->n; d->h = src->height; d->w = src->width; d->c = src->channels;
  d->d = d->h * d->w * d->c; d->classes = src->classes;
  if (src->vocab > 0) return open_synth_tokens(src, d, err, cap);
  size_t dd = (size_t)d->d;
  d->u8 = alloc_u8(d, (size_t)d->n * dd);
  d->labels = tpu_malloc((size_t)d->n * sizeof *d->labels);
  uint8_t *proto = tpu_malloc((size_t)d->classes * dd);
  if (!d->u8 || !d->labels || !proto) { tpu_free(proto); return ferr(err, cap, TPU_ERR_NOMEM, "synthetic source: out of memory"); }
  uint64_t s = src->seed;
  for (size_t i = 0; i < (size_t)d->classes * dd; i++) proto[i] = (uint8_t)(tpu_mix64(s ^ (0x1000000000ull + i)) >> 56);
  for (int64_t i = 0; i < d->n; i++) {
    uint64_t r = tpu_mix64(s + (uint64_t)i * 0x9e37u);
    int y = (int)(r % (uint64_t)d->classes);
    d->labels[i] = y;
    const uint8_t *pr = proto + (size_t)y * dd;
    uint8_t *o = d->u8 + (size_t)i * dd;
    for (size_t j = 0; j < dd; j++) {
      if ((j & 7) == 0) r = tpu_mix64(r);
      unsigned noise = (unsigned)(r >> ((j & 7) * 8)) & 0xff;
      o[j] = (uint8_t)((pr[j] * 7u + noise * 3u) / 10u);
    }
  }
  tpu_free(proto);
  d->ready = d->n;
  if (set_files(d, 1) != TPU_OK) return ferr(err, cap, TPU_ERR_NOMEM, "synthetic source: out of memory");
  return TPU_OK;
}

/* {==================================================================
** CIFAR-10 binary: records of 1 label byte and 3072 pixel bytes (the red,
** green and blue 32x32 planes), turned channels-last. One file per batch
** file; a size that is not whole records, or a label above 9, is named by
** file and record.
** ================================================================== */
#define CIFAR_REC 3073
/* The nf batch files' paths, and their sizes checked to be whole records
** before any is read (a 9 GB file of a wrong size is refused from its size,
** not read whole first). What cannot be opened is left to the read. */
static tpu_status cifar_files(const tpu_df_source *src, int nf, char path[][4096], char *err, size_t cap) {
  if (!src->dir[0])      /* not "/data_batch_1.bin" */
    return ferr(err, cap, TPU_ERR_INPUT, "cifar10: the directory of the CIFAR-10 binary files is empty (\"\")");
  for (int f = 0; f < nf; f++) {
    if (src->test_split) snprintf(path[f], 4096, "%s/test_batch.bin", src->dir);
    else snprintf(path[f], 4096, "%s/data_batch_%d.bin", src->dir, f + 1);
    struct stat sb;
    if (stat(path[f], &sb) || !S_ISREG(sb.st_mode)) continue;
    const uint64_t len = (uint64_t)sb.st_size;
    if (len == 0 || len % CIFAR_REC)
      return ferr(err, cap, TPU_ERR_INPUT, "%s: record %llu: truncated (%llu of %d bytes); a CIFAR-10 file holds "
                  "records of 1 label byte and 3072 pixel bytes", path[f], (unsigned long long)(len / CIFAR_REC),
                  (unsigned long long)(len % CIFAR_REC), CIFAR_REC);
  }
  return TPU_OK;
}

static tpu_status open_cifar(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  const int nf = src->test_split ? 1 : 5;
  unsigned char *buf[5] = { 0 };
  size_t len[5] = { 0 };
  char path[5][4096];
  tpu_status st = cifar_files(src, nf, path, err, cap);
  d->n = 0;
  for (int f = 0; f < nf && st == TPU_OK; f++) {
    if (!(buf[f] = slurp(path[f], &len[f], &st, err, cap))) break;
    if (len[f] == 0 || len[f] % CIFAR_REC)   /* changed since the check */
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: record %zu: truncated (%zu of %d bytes); a CIFAR-10 file holds records "
                "of 1 label byte and 3072 pixel bytes", path[f], len[f] / CIFAR_REC, len[f] % CIFAR_REC, CIFAR_REC);
    d->n += (int64_t)(len[f] / CIFAR_REC);
  }
  d->h = 32; d->w = 32; d->c = 3; d->d = 3072; d->classes = 10;
  if (st == TPU_OK) {
    d->labels = tpu_malloc((size_t)d->n * sizeof *d->labels);
    d->u8 = alloc_u8(d, (size_t)d->n * 3072);
    if (!d->labels || !d->u8 || set_files(d, nf) != TPU_OK) st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", src->dir);
  }
  for (int f = 0, i = 0; f < nf && st == TPU_OK; f++) {
    d->file_start[f] = i;
    for (size_t r = 0; r < len[f] / CIFAR_REC && st == TPU_OK; r++, i++) {
      const unsigned char *rec = buf[f] + r * CIFAR_REC;
      if (rec[0] > 9) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: record %zu: label %d out of range 0..9", path[f], r, rec[0]); break; }
      d->labels[i] = rec[0];
      uint8_t *o = d->u8 + (size_t)i * 3072;
      for (int p = 0; p < 1024; p++)
        for (int ch = 0; ch < 3; ch++) o[p * 3 + ch] = rec[1 + ch * 1024 + p];
    }
  }
  for (int f = 0; f < nf; f++) tpu_free(buf[f]);
  d->ready = d->n;
  return st;
}

/* {==================================================================
** TFRecord files of tf.train.Example records. A record is a little-endian
** uint64 length, the masked CRC-32C of those 8 bytes, the data, and the
** masked CRC-32C of the data; the data is a tf.train.Example in protobuf's
** wire format: Example.features (1) -> Features.feature (1, a map entry of
** key (1) and Feature (2)) -> Feature.bytes_list (1) / float_list (2) /
** int64_list (3), each a repeated field 1. The image feature must be one
** bytes value of raw uint8 pixels (H x W x C, channels last); the label
** feature one int64. Every error names the file and the record index.
** ================================================================== */
static uint32_t crc32c_table[256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc32c_table[i] = c;
  }
}
/* CRC-32C (Castagnoli) masked as TFRecord does. */
static uint32_t tfr_masked_crc(const unsigned char *p, size_t n) {
  pthread_once(&crc32c_once, crc32c_init);
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) c = crc32c_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  c ^= 0xffffffffu;
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
static uint64_t le_n(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Protobuf wire format: a cursor over a message's bytes. */
typedef struct pbuf { const unsigned char *p, *end; } pbuf;
static bool pb_varint(pbuf *b, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && b->p < b->end; sh += 7) {
    unsigned char x = *b->p++;
    *v |= (uint64_t)(x & 0x7f) << sh;
    if (!(x & 0x80)) return true;
  }
  return false;
}
/* The next field: 1 with its number, wire type and value (a varint, or the
** bytes of a length-delimited field in *sub; fixed32/64 are skipped), 0 at
** the end, -1 when malformed (why says what). */
static int pb_next(pbuf *b, uint64_t *field, int *wt, uint64_t *v, pbuf *sub, const char **why) {
  if (b->p >= b->end) return 0;
  uint64_t key;
  if (!pb_varint(b, &key)) { *why = "a field key runs past the end"; return -1; }
  *field = key >> 3; *wt = (int)(key & 7);
  switch (*wt) {
  case 0: if (!pb_varint(b, v)) { *why = "a varint runs past the end"; return -1; } return 1;
  case 1: case 5: {
    size_t k = *wt == 1 ? 8 : 4;
    if ((size_t)(b->end - b->p) < k) { *why = "a fixed-size field runs past the end"; return -1; }
    sub->p = b->p; sub->end = b->p + k; b->p += k;
    return 1;
  }
  case 2:
    if (!pb_varint(b, v) || *v > (uint64_t)(b->end - b->p)) { *why = "a length-delimited field runs past the end"; return -1; }
    sub->p = b->p; sub->end = b->p + *v; b->p += *v;
    return 1;
  default: *why = "a field has wire type 3, 4, 6 or 7 (groups are not part of tf.train.Example)"; return -1;
  }
}

/* A label candidate: the list kind its feature holds (0: absent, 1 bytes,
** 2 float, 3 int64) and, for int64, its values. */
typedef struct tfr_lab { int kind, values; int64_t v; } tfr_lab;

typedef struct tfr_ex {
  const char *image_key, *label_key;   /* label_key NULL: "label", or "class" (lab[1]) */
  pbuf image; bool has_image; int image_values;
  tfr_lab lab[2];
  char why[256];
} tfr_ex;

#define PB_WANT(cond, ...) do { if (!(cond)) { snprintf(ex->why, sizeof ex->why, __VA_ARGS__); return false; } } while (0)
static const char *const a_kind[] = { "absent", "a bytes_list", "a float_list", "an int64_list" };

/* The values of one Feature (the map entry's value) under 'key': the image
** (slot < 0) or a label candidate (slot 0 or 1). */
static bool tfr_feature(pbuf f, const char *key, int slot, tfr_ex *ex) {
  static const char *const kinds[] = { "", "bytes_list", "float_list", "int64_list" };
  const bool img = slot < 0;
  uint64_t fld, v; int wt, r; pbuf sub; const char *why = "";
  while ((r = pb_next(&f, &fld, &wt, &v, &sub, &why)) == 1) {
    if (fld < 1 || fld > 3) continue;
    PB_WANT(wt == 2, "feature '%s': field %d (%s) has wire type %d, expected 2 (length-delimited)", key, (int)fld, kinds[fld], wt);
    if (img) PB_WANT(fld == 1, "feature '%s' is %s; expected a bytes_list", key, a_kind[fld]);
    else {
      ex->lab[slot].kind = (int)fld;
      if (fld != 3) continue;       /* judged when the label is chosen (tfr_check) */
    }
    pbuf list = sub, val;
    while ((r = pb_next(&list, &fld, &wt, &v, &val, &why)) == 1) {
      if (fld != 1) continue;
      tfr_lab *l = img ? NULL : &ex->lab[slot];
      if (img) {
        PB_WANT(wt == 2, "feature '%s': bytes_list value has wire type %d, expected 2", key, wt);
        ex->image = val; ex->has_image = true; ex->image_values++;
      } else if (wt == 0) {
        l->v = (int64_t)v; l->values++;
      } else {
        PB_WANT(wt == 2, "feature '%s': int64_list value has wire type %d, expected 0 or 2 (packed)", key, wt);
        while (val.p < val.end) {
          PB_WANT(pb_varint(&val, &v), "feature '%s': a packed int64 runs past the end", key);
          l->v = (int64_t)v; l->values++;
        }
      }
    }
    PB_WANT(r == 0, "feature '%s': %s", key, why);
  }
  PB_WANT(r == 0, "feature '%s': %s", key, why);
  return true;
}

/* Example -> Features -> map entries; the features wanted are read. */
static bool tfr_example(pbuf b, tfr_ex *ex) {
  uint64_t fld, v; int wt, r; pbuf feats; const char *why = "";
  while ((r = pb_next(&b, &fld, &wt, &v, &feats, &why)) == 1) {
    if (fld != 1) continue;
    PB_WANT(wt == 2, "Example field 1 (features) has wire type %d, expected 2 (length-delimited)", wt);
    pbuf ent;
    while ((r = pb_next(&feats, &fld, &wt, &v, &ent, &why)) == 1) {
      if (fld != 1) continue;
      PB_WANT(wt == 2, "Features field 1 (feature) has wire type %d, expected 2 (length-delimited)", wt);
      pbuf kv, key = { 0, 0 }, val = { 0, 0 };
      bool has_val = false;
      while ((r = pb_next(&ent, &fld, &wt, &v, &kv, &why)) == 1) {
        if (fld == 1 || fld == 2) PB_WANT(wt == 2, "a feature map entry's field %d has wire type %d, expected 2", (int)fld, wt);
        if (fld == 1) key = kv;
        else if (fld == 2) { val = kv; has_val = true; }
      }
      PB_WANT(r == 0, "a feature map entry: %s", why);
      size_t kl = (size_t)(key.end - key.p);
      char name[128];
      if (!has_val || kl >= sizeof name) continue;
      memcpy(name, key.p, kl);
      name[kl] = 0;
      int slot = !strcmp(name, ex->image_key) ? -1
               : ex->label_key ? (!strcmp(name, ex->label_key) ? 0 : 2)
               : !strcmp(name, "label") ? 0 : !strcmp(name, "class") ? 1 : 2;
      if (slot < 2 && !tfr_feature(val, name, slot, ex)) return false;
    }
    PB_WANT(r == 0, "Features: %s", why);
  }
  PB_WANT(r == 0, "Example: %s", why);
  return true;
}

/* Checks one Example's features against the source: one image and one
** label in range. *encoded: the image is not the raw bytes of the shape
** (it is to be decoded as JPEG or PNG). */
static bool tfr_check(tfr_ex *ex, const tpu_df_source *src, int d, bool *encoded) {
  PB_WANT(ex->has_image, "the Example has no feature '%s' (source.image_feature)", ex->image_key);
  /* the label: the named feature, or "label" unless it is not an int64 one and "class" is */
  const tfr_lab *l = &ex->lab[0];
  const char *lname = ex->label_key ? ex->label_key : "label";
  if (!ex->label_key && l->kind != 3 && ex->lab[1].kind == 3) { l = &ex->lab[1]; lname = "class"; }
  PB_WANT(l->kind != 0, ex->label_key ? "the Example has no feature '%s' (source.label_feature)"
          : "the Example has no feature '%s' (nor 'class'; source.label_feature names another)", lname);
  PB_WANT(l->kind == 3, "feature '%s' is %s; expected an int64_list", lname, a_kind[l->kind]);
  PB_WANT(ex->image_values == 1, "feature '%s' holds %d values; expected one", ex->image_key, ex->image_values);
  PB_WANT(l->values == 1, "feature '%s' holds %d values; expected one", lname, l->values);
  const unsigned char *p = ex->image.p;
  size_t n = (size_t)(ex->image.end - p);
  df_img_kind k = df_image_sniff(p, n);
  *encoded = n != (size_t)d && (k == DF_IMG_JPEG || k == DF_IMG_PNG);
  PB_WANT(n == (size_t)d || *encoded, "feature '%s' has %zu bytes; source.shape %dx%dx%d needs %d raw uint8 bytes (or "
          "JPEG or PNG data%s%s%s)", ex->image_key, n, src->height, src->width, src->channels ? src->channels : 1, d,
          k != DF_IMG_UNKNOWN ? "; these begin as a " : "", k != DF_IMG_UNKNOWN ? df_image_kind_name(k) : "",
          k != DF_IMG_UNKNOWN ? " image, which is not decoded here" : "");
  int mx = src->classes > 0 ? src->classes - 1 : 65535;
  PB_WANT(l->v >= 0 && l->v <= mx, "label %lld is out of range; allowed 0..%d", (long long)l->v, mx);
  ex->lab[0] = *l;           /* the label chosen */
  return true;
}

/* A record's header h (its first min(left, 12) bytes; 'left' bytes from it
** to the file's end; 'off' its offset): true and the data's length in *L
** when the length (and, with 'crc', its CRC) is sound and the data and its
** CRC fit, else the message. The one check of the framing the reader and
** the record count share. */
static bool tfr_head(const unsigned char *h, uint64_t left, uint64_t off, bool crc, uint64_t *L, char *why,
                     size_t cap) {
  if (left < 12) {
    snprintf(why, cap, "truncated (the length and its CRC need 12 bytes, %llu left)", (unsigned long long)left);
    return false;
  }
  if (crc && tfr_masked_crc(h, 8) != (uint32_t)le_n(h + 8, 4)) {
    const bool gz = off == 0 && h[0] == 0x1f && h[1] == 0x8b;   /* TFRecordDataset's compression_type="GZIP" */
    snprintf(why, cap, "corrupt length (masked CRC-32C mismatch)%s",
             gz ? "; the file is gzip data: decompress it first (TFRecord files with compression_type GZIP are not "
                  "read)" : "");
    return false;
  }
  *L = le_n(h, 8);
  if (*L > left - 12 || left - 12 - *L < 4) {
    snprintf(why, cap, "truncated (%llu data bytes and a 4-byte CRC announced, %llu bytes left)", (unsigned long long)*L,
             (unsigned long long)(left - 12));
    return false;
  }
  return true;
}

/* One record's framing at b + off (len bytes in all): 0 and the data's
** length in *L when sound, else the message (the CRCs are checked only when
** 'crc'). */
static bool tfr_frame(const unsigned char *b, size_t len, size_t off, bool crc, uint64_t *L, char *why, size_t cap) {
  const unsigned char *h = b + off;
  if (!tfr_head(h, len - off, off, crc, L, why, cap)) return false;
  if (crc && tfr_masked_crc(h + 12, *L) != (uint32_t)le_n(h + 12 + *L, 4)) { snprintf(why, cap, "corrupt data (masked CRC-32C mismatch)"); return false; }
  return true;
}

/* Reading TFRecord files into d: the records kept (keep[global record],
** NULL: all), their raw images copied and their encoded ones decoded on a
** few threads, file by file. */
typedef struct tfr_read {
  const tpu_df_source *src;
  df_data *d;
  int64_t cap_n;             /* elements d has room for */
  int64_t rec0;              /* global index of the file's first record */
  const bool *keep;
  int64_t nkeep;             /* records in keep (bounds the global index) */
  df_img_job *jobs;          /* the file's encoded images */
  int64_t *job_rec, *job_elem, njobs, jobs_cap;
} tfr_read;

static tpu_status tfr_grow(tfr_read *t, const char *path, char *err, size_t cap) {
  df_data *d = t->d;
  if (d->n == t->cap_n) {
    int64_t nc = t->cap_n ? t->cap_n * 2 : 256;
    uint8_t *nu = tpu_realloc(d->u8_raw, (size_t)nc * (size_t)d->d);
    if (nu) d->u8_raw = d->u8 = nu;
    int32_t *nl = nu ? tpu_realloc(d->labels, (size_t)nc * sizeof *nl) : NULL;
    if (nl) d->labels = nl;
    if (!nu || !nl) return ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
    t->cap_n = nc;
  }
  if (t->njobs == t->jobs_cap) {
    int64_t nc = t->jobs_cap ? t->jobs_cap * 2 : 64;
    df_img_job *nj = tpu_realloc(t->jobs, (size_t)nc * sizeof *nj);
    if (nj) t->jobs = nj;
    int64_t *nr = nj ? tpu_realloc(t->job_rec, (size_t)nc * sizeof *nr) : NULL;
    if (nr) t->job_rec = nr;
    int64_t *ne = nr ? tpu_realloc(t->job_elem, (size_t)nc * sizeof *ne) : NULL;
    if (ne) t->job_elem = ne;
    if (!nj || !nr || !ne) return ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory", path);
    t->jobs_cap = nc;
  }
  return TPU_OK;
}

/* Appends the kept records of one file to t->d. */
static tpu_status tfr_file(const char *path, tfr_read *t, char *err, size_t cap) {
  const tpu_df_source *src = t->src;
  df_data *d = t->d;
  tpu_status st = TPU_OK;
  size_t len = 0, off = 0;
  unsigned char *b = slurp(path, &len, &st, err, cap);
  if (!b) return st;
  t->njobs = 0;
  int64_t r = 0;
  for (; off < len && st == TPU_OK; r++) {
    uint64_t L;
    char why[160];
    if (!tfr_frame(b, len, off, true, &L, why, sizeof why)) { st = ferr(err, cap, TPU_ERR_INPUT, "%s: record %lld: %s", path, (long long)r, why); break; }
    const unsigned char *h = b + off;
    off += 16 + L;
    tfr_ex ex = { .image_key = src->image_feature ? src->image_feature : "image", .label_key = src->label_feature };
    bool encoded = false;
    if (!tfr_example((pbuf){ h + 12, h + 12 + L }, &ex) || !tfr_check(&ex, src, d->d, &encoded)) {
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: record %lld: bad tf.train.Example: %s", path, (long long)r, ex.why);
      break;
    }
    int64_t g = t->rec0 + r;
    if (t->keep && (g >= t->nkeep || !t->keep[g])) continue;
    if ((st = tfr_grow(t, path, err, cap)) != TPU_OK) break;
    if (encoded) {
      t->jobs[t->njobs] = (df_img_job){ .p = ex.image.p, .n = (size_t)(ex.image.end - ex.image.p) };
      t->job_rec[t->njobs] = r;
      t->job_elem[t->njobs++] = d->n;
    } else {
      memcpy(d->u8 + (size_t)d->n * (size_t)d->d, ex.image.p, (size_t)d->d);
    }
    d->labels[d->n++] = (int32_t)ex.lab[0].v;
  }
  t->rec0 += r;
  if (st == TPU_OK && t->njobs > 0) {   /* the file's encoded images, decoded where they go */
    for (int64_t j = 0; j < t->njobs; j++) t->jobs[j].dst = d->u8 + (size_t)t->job_elem[j] * (size_t)d->d;
    int64_t bad;
    st = df_image_load_all(t->jobs, t->njobs, d->h, d->w, d->c, src->resize, df_image_threads(), &bad);
    if (st != TPU_OK)
      ferr(err, cap, st, "%s: record %lld: feature '%s': %s", path, (long long)t->job_rec[bad],
           src->image_feature ? src->image_feature : "image", t->jobs[bad].why);
  }
  tpu_free(b);
  return st;
}

void df_free_names(char **names, int n) {
  for (int i = 0; names && i < n; i++) tpu_free(names[i]);
  tpu_free(names);
}

static tpu_status add_name(char ***names, int *n, const char *a, const char *b) {
  char **nv = tpu_realloc(*names, (size_t)(*n + 1) * sizeof *nv);
  if (!nv) return TPU_ERR_NOMEM;
  *names = nv;
  size_t l = strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
  if (!(nv[*n] = tpu_malloc(l))) return TPU_ERR_NOMEM;
  snprintf(nv[(*n)++], l, b ? "%s/%s" : "%s", a, b ? b : "");
  return TPU_OK;
}

tpu_status df_tfrecord_files(const tpu_df_source *src, char ***names, int *n, char *err, size_t cap) {
  *names = NULL; *n = 0;
  tpu_status st = TPU_OK;
  struct stat sb;
  const char *p = src->path;
  for (int i = 0; src->files && i < src->nfiles && st == TPU_OK; i++) st = add_name(names, n, src->files[i], NULL);
  if (!src->files && p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    DIR *dir = opendir(p);
    if (!dir) return ferr(err, cap, TPU_ERR_IO, "%s: cannot open directory: %s", p, strerror(errno));
    for (struct dirent *e; st == TPU_OK && (e = readdir(dir));) {
      char full[4096];
      snprintf(full, sizeof full, "%s/%s", p, e->d_name);
      if (e->d_name[0] != '.' && stat(full, &sb) == 0 && S_ISREG(sb.st_mode)) st = add_name(names, n, p, e->d_name);
    }
    closedir(dir);
    if (st == TPU_OK && *n > 1) qsort(*names, (size_t)*n, sizeof **names, cmpstr);
  } else if (!src->files && p && strpbrk(p, "*?[")) {
    glob_t g;
    if (glob(p, 0, NULL, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc && st == TPU_OK; i++) st = add_name(names, n, g.gl_pathv[i], NULL);
    globfree(&g);
  } else if (!src->files && p) st = add_name(names, n, p, NULL);
  if (st == TPU_OK && *n == 0) st = ferr(err, cap, TPU_ERR_IO, "%s: no TFRecord files there", p ? p : "source.files");
  if (st == TPU_ERR_NOMEM) ferr(err, cap, st, "out of memory");
  if (st != TPU_OK) { df_free_names(*names, *n); *names = NULL; *n = 0; }
  return st;
}

static tpu_status open_tfrecord(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  char **names;
  int nn;
  tpu_status st = df_tfrecord_files(src, &names, &nn, err, cap);
  if (st != TPU_OK) return st;
  d->h = src->height; d->w = src->width; d->c = src->channels ? src->channels : 1;
  d->d = d->h * d->w * d->c;
  tfr_read t = { .src = src, .d = d };
  bool *keep = NULL;
  int64_t *ids = NULL;
  if ((st = set_files(d, nn)) != TPU_OK) ferr(err, cap, st, "out of memory");
  if (st == TPU_OK && src->validation_split > 0) {   /* the records of the subset, in file order */
    int64_t n = 0;
    uint64_t bytes;
    tpu_df_source all = *src;
    all.validation_split = 0;
    if ((st = df_tfrecord_count(&all, &n, &bytes, err, cap)) == TPU_OK) {
      keep = tpu_calloc((size_t)n + 1, sizeof *keep);
      ids = tpu_malloc(((size_t)n + 1) * sizeof *ids);
      if (!keep || !ids) st = ferr(err, cap, TPU_ERR_NOMEM, "out of memory");
    }
    int64_t k = st == TPU_OK ? df_split(n, src->validation_split, src->test_split, true, (uint32_t)src->seed, ids) : 0;
    if (st == TPU_OK && k < 0)
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: validation_split %g of %lld records leaves the %s subset empty", names[0],
                src->validation_split, (long long)n, src->test_split ? "validation" : "training");
    for (int64_t i = 0; st == TPU_OK && i < k; i++) keep[ids[i]] = true;
    t.keep = keep;
    t.nkeep = n;
  }
  for (int i = 0; i < nn && st == TPU_OK; i++) {
    d->file_start[i] = d->n;
    st = tfr_file(names[i], &t, err, cap);
  }
  if (st == TPU_OK && d->n == 0) st = ferr(err, cap, TPU_ERR_INPUT, "%s: no records in the TFRecord files", names[0]);
  if (st == TPU_OK) {
    d->file_start[nn] = d->n;
    st = check_labels(d, src->classes, names[0], err, cap);
  }
  tpu_free(t.jobs); tpu_free(t.job_rec); tpu_free(t.job_elem);
  tpu_free(keep);
  tpu_free(ids);
  df_free_names(names, nn);
  d->ready = d->n;
  return st;
}

tpu_status df_tfrecord_count(const tpu_df_source *src, int64_t *records, uint64_t *bytes, char *err, size_t cap) {
  char **names;
  int nn;
  *records = 0; *bytes = 0;
  tpu_status st = df_tfrecord_files(src, &names, &nn, err, cap);
  if (st != TPU_OK) return st;
  for (int i = 0; i < nn && st == TPU_OK; i++) {
    int fd = open(names[i], O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) { st = ferr(err, cap, TPU_ERR_IO, "%s: cannot open: %s", names[i], strerror(errno)); if (fd >= 0) close(fd); break; }
    *bytes += (uint64_t)sb.st_size;
    /* the framing as the reader checks it (the data's CRCs aside): a bad
    ** file gives the reader's message here, not a count that stops short */
    for (off_t off = 0, r = 0; off < sb.st_size && st == TPU_OK; r++) {
      unsigned char h[12];
      const uint64_t left = (uint64_t)(sb.st_size - off);
      uint64_t L;
      char why[256];
      if (pread(fd, h, left < 12 ? (size_t)left : 12, off) != (ssize_t)(left < 12 ? left : 12)) {
        st = ferr(err, cap, TPU_ERR_IO, "%s: cannot read: %s", names[i], strerror(errno));
        break;
      }
      if (!tfr_head(h, left, (uint64_t)off, true, &L, why, sizeof why)) {
        st = ferr(err, cap, TPU_ERR_INPUT, "%s: record %lld: %s", names[i], (long long)r, why);
        break;
      }
      off += (off_t)(16 + L);
      ++*records;
    }
    close(fd);
  }
  df_free_names(names, nn);
  if (st == TPU_OK && src->validation_split > 0) {
    int64_t nval = (int64_t)(src->validation_split * (double)*records);
    int64_t k = src->test_split ? nval : *records - nval;
    *bytes = *records ? (uint64_t)((double)*bytes * (double)k / (double)*records) : 0;
    *records = k;
  }
  return st;
}

/* {==================================================================
** Keras' order of files: numpy's legacy RandomState shuffle and the
** validation split (keras.utils.image_dataset_from_directory).
** ================================================================== */
typedef struct mt19937 { uint32_t s[624]; int i; } mt19937;
/* MT19937 seeded as numpy's RandomState(int) seeds it (init_genrand). */
static void mt_seed(mt19937 *m, uint32_t seed) {
  m->s[0] = seed;
  for (int i = 1; i < 624; i++) m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
  m->i = 624;
}
static uint32_t mt_next(mt19937 *m) {
  if (m->i >= 624) {
    for (int k = 0; k < 624; k++) {
      uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % 624] & 0x7fffffffu);
      m->s[k] = m->s[(k + 397) % 624] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0);
    }
    m->i = 0;
  }
  uint32_t y = m->s[m->i++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

void df_numpy_shuffle(int64_t *ids, int64_t n, uint32_t seed) {
  mt19937 *m = tpu_malloc(sizeof *m);
  mt19937 local;
  if (!m) m = &local;       /* 2.5 KB: the stack will do when the heap will not */
  mt_seed(m, seed);
  for (int64_t i = n - 1; i >= 1; i--) {
    /* numpy's random_interval(i): draws masked to the smallest 2^k - 1 >= i until one is <= i */
    uint64_t mask = (uint64_t)i, v;
    for (int sh = 1; sh < 64; sh <<= 1) mask |= mask >> sh;
    if ((uint64_t)i <= 0xffffffffu) {
      do v = mt_next(m) & mask; while (v > (uint64_t)i);
    } else {
      do { uint64_t hi = mt_next(m); v = ((hi << 32) | mt_next(m)) & mask; } while (v > (uint64_t)i);
    }
    int64_t t = ids[i]; ids[i] = ids[v]; ids[v] = t;
  }
  if (m != &local) tpu_free(m);
}

int64_t df_split(int64_t n, double split, bool validation, bool shuffle, uint64_t seed, int64_t *ids) {
  for (int64_t i = 0; i < n; i++) ids[i] = i;
  if (shuffle) df_numpy_shuffle(ids, n, (uint32_t)seed);
  if (!(split > 0)) return n;
  const int64_t nval = (int64_t)(split * (double)n);     /* Python's int(split * n) */
  if (nval <= 0 || nval >= n) return -1;                 /* Keras' samples[:-0] is empty too */
  if (!validation) return n - nval;
  memmove(ids, ids + (n - nval), (size_t)nval * sizeof *ids);
  return nval;
}

/* {==================================================================
** A directory of class folders of images (Keras' image_dataset_from_directory)
** ================================================================== */
/* One file found: its folder (the walk's root) and name, and its class. */
typedef struct img_ent { char *root, *name; int32_t label; } img_ent;
typedef struct img_list { img_ent *v; int64_t n, cap; } img_list;

static int cmp_ent(const void *a, const void *b) {
  const img_ent *x = a, *y = b;
  int c = strcmp(x->root, y->root);
  return c ? c : strcmp(x->name, y->name);
}

/* Keras' ALLOWLIST_FORMATS, matched on the lower-cased name. */
static bool image_ext(const char *name) {
  static const char *const ext[] = { ".bmp", ".gif", ".jpeg", ".jpg", ".png" };
  size_t l = strlen(name);
  for (size_t k = 0; k < sizeof ext / sizeof ext[0]; k++) {
    size_t e = strlen(ext[k]);
    if (l >= e && !strcasecmp(name + l - e, ext[k])) return true;
  }
  return false;
}

/* os.walk(top, followlinks): every folder's allowed files; folders that are
** links are entered only with follow_links (a file that is a link counts). */
static tpu_status walk(const char *top, int32_t label, bool follow, int depth, img_list *L, char *err, size_t cap) {
  if (depth > 64) return ferr(err, cap, TPU_ERR_INPUT, "%s: folders nested too deep (a link loop?)", top);
  DIR *dir = opendir(top);
  if (!dir) return ferr(err, cap, TPU_ERR_IO, "%s: cannot open directory: %s", top, strerror(errno));
  char *root = tpu_strdup(top);
  tpu_status st = root ? TPU_OK : TPU_ERR_NOMEM;
  bool root_used = false;
  char **subs = NULL;
  int nsub = 0;
  for (struct dirent *e; st == TPU_OK && (e = readdir(dir));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", top, e->d_name) >= (int)sizeof full) continue;
    struct stat sb, lb;
    const bool found = stat(full, &sb) == 0;
    if (found && S_ISDIR(sb.st_mode)) {
      bool link = lstat(full, &lb) == 0 && S_ISLNK(lb.st_mode);
      if (!link || follow) st = add_name(&subs, &nsub, full, NULL);
      continue;
    }
    /* only regular files (or links to them): a FIFO named x.png would block
    ** the read forever, a dangling link or a device is no image */
    if (!found || !S_ISREG(sb.st_mode) || !image_ext(e->d_name)) continue;
    if (L->n == L->cap) {
      int64_t nc = L->cap ? L->cap * 2 : 256;
      img_ent *nv = tpu_realloc(L->v, (size_t)nc * sizeof *nv);
      if (!nv) { st = TPU_ERR_NOMEM; break; }
      L->v = nv; L->cap = nc;
    }
    char *nm = tpu_strdup(e->d_name);
    if (!nm) { st = TPU_ERR_NOMEM; break; }
    L->v[L->n++] = (img_ent){ root, nm, label };
    root_used = true;
  }
  closedir(dir);
  for (int i = 0; i < nsub && st == TPU_OK; i++) st = walk(subs[i], label, follow, depth + 1, L, err, cap);
  df_free_names(subs, nsub);
  if (!root_used) tpu_free(root);
  if (st == TPU_ERR_NOMEM) ferr(err, cap, st, "%s: out of memory", top);
  return st;
}

void df_images_index_free(df_img_index *ix) {
  df_free_names(ix->paths, (int)ix->n);
  tpu_free(ix->labels);
  memset(ix, 0, sizeof *ix);
}

/* The class folders: the sorted subfolders of dir (not dot ones), or the
** names given (each must be one of them). */
static tpu_status class_dirs(const tpu_df_source *src, char ***names, int *n, char *err, size_t cap) {
  *names = NULL; *n = 0;
  DIR *dir = opendir(src->dir);
  if (!dir) return ferr(err, cap, TPU_ERR_IO, "%s: cannot open directory: %s", src->dir, strerror(errno));
  tpu_status st = TPU_OK;
  for (struct dirent *e; st == TPU_OK && (e = readdir(dir));) {
    char full[4096];
    struct stat sb;
    if (e->d_name[0] == '.') continue;
    if (snprintf(full, sizeof full, "%s/%s", src->dir, e->d_name) >= (int)sizeof full) continue;
    if (stat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) st = add_name(names, n, e->d_name, NULL);
  }
  closedir(dir);
  if (st != TPU_OK) { df_free_names(*names, *n); *names = NULL; *n = 0; return ferr(err, cap, st, "%s: out of memory", src->dir); }
  if (*n > 1) qsort(*names, (size_t)*n, sizeof **names, cmpstr);
  if (!src->class_names) return TPU_OK;
  for (int i = 0; i < src->nclass_names; i++) {
    bool found = false;
    for (int k = 0; k < *n && !found; k++) found = !strcmp((*names)[k], src->class_names[i]);
    if (!found) {
      ferr(err, cap, TPU_ERR_INPUT, "%s: source.class_names: '%s' is not a class folder there (%d folders%s%s)", src->dir,
           src->class_names[i], *n, *n ? ", the first " : "", *n ? (*names)[0] : "");
      df_free_names(*names, *n); *names = NULL; *n = 0;
      return TPU_ERR_INPUT;
    }
  }
  df_free_names(*names, *n);
  *names = NULL; *n = 0;
  for (int i = 0; i < src->nclass_names && st == TPU_OK; i++) st = add_name(names, n, src->class_names[i], NULL);
  if (st != TPU_OK) { df_free_names(*names, *n); *names = NULL; *n = 0; return ferr(err, cap, st, "out of memory"); }
  return TPU_OK;
}

tpu_status df_images_index(const tpu_df_source *src, df_img_index *ix, char *err, size_t cap) {
  memset(ix, 0, sizeof *ix);
  char **cls;
  int ncls;
  tpu_status st = class_dirs(src, &cls, &ncls, err, cap);
  if (st != TPU_OK) return st;
  img_list L = { 0 };
  /* each class folder walked, its files in Keras' order (roots, then names) */
  for (int c = 0; c < ncls && st == TPU_OK; c++) {
    char top[4096];
    snprintf(top, sizeof top, "%s/%s", src->dir, cls[c]);
    int64_t first = L.n;
    st = walk(top, c, src->follow_links, 0, &L, err, cap);
    if (st == TPU_OK && L.n > first) qsort(L.v + first, (size_t)(L.n - first), sizeof *L.v, cmp_ent);
  }
  int64_t *ids = st == TPU_OK ? tpu_malloc(((size_t)L.n + 1) * sizeof *ids) : NULL;
  if (st == TPU_OK && !ids) st = ferr(err, cap, TPU_ERR_NOMEM, "out of memory");
  int64_t k = 0;
  if (st == TPU_OK && L.n == 0)
    st = ferr(err, cap, TPU_ERR_INPUT, "%s: no images found in %d class folders (the allowed formats: .bmp, .gif, .jpeg, "
              ".jpg, .png)", src->dir, ncls);
  if (st == TPU_OK) {
    k = df_split(L.n, src->validation_split, src->test_split, !src->no_shuffle, src->seed, ids);
    if (k < 0)
      st = ferr(err, cap, TPU_ERR_INPUT, "%s: validation_split %g of %lld images leaves the %s subset empty", src->dir,
                src->validation_split, (long long)L.n, src->test_split ? "validation" : "training");
  }
  if (st == TPU_OK) {
    ix->paths = tpu_calloc((size_t)k + 1, sizeof *ix->paths);
    ix->labels = tpu_malloc(((size_t)k + 1) * sizeof *ix->labels);
    if (!ix->paths || !ix->labels) st = ferr(err, cap, TPU_ERR_NOMEM, "out of memory");
  }
  for (int64_t i = 0; st == TPU_OK && i < k; i++) {
    const img_ent *e = &L.v[ids[i]];
    size_t l = strlen(e->root) + strlen(e->name) + 2;
    if (!(ix->paths[i] = tpu_malloc(l))) { st = ferr(err, cap, TPU_ERR_NOMEM, "out of memory"); break; }
    snprintf(ix->paths[i], l, "%s/%s", e->root, e->name);
    ix->labels[i] = e->label;
    ix->n = i + 1;
    struct stat sb;
    if (stat(ix->paths[i], &sb) == 0) ix->bytes += (uint64_t)sb.st_size;
  }
  ix->classes = ncls;
  /* the roots are shared by the files of a folder: each freed once */
  for (int64_t i = 0; i < L.n; i++) {    /* a root's files are contiguous: its last one frees it */
    if (i + 1 == L.n || L.v[i + 1].root != L.v[i].root) tpu_free(L.v[i].root);
    tpu_free(L.v[i].name);
  }
  tpu_free(L.v);
  tpu_free(ids);
  df_free_names(cls, ncls);
  if (st != TPU_OK) df_images_index_free(ix);
  return st;
}

/* The images, decoded and resized on a few threads; one file per element
** (an open each in the model, a file each for interleave). */
static tpu_status open_images(const tpu_df_source *src, df_data *d, char *err, size_t cap) {
  df_img_index ix;
  tpu_status st = df_images_index(src, &ix, err, cap);
  if (st != TPU_OK) return st;
  d->h = src->height > 0 ? src->height : 256;
  d->w = src->width > 0 ? src->width : 256;
  d->c = src->channels > 0 ? src->channels : 3;
  d->d = d->h * d->w * d->c;
  d->n = ix.n;
  df_img_job *jobs = tpu_calloc((size_t)ix.n, sizeof *jobs);
  d->u8 = alloc_u8(d, (size_t)ix.n * (size_t)d->d);
  d->labels = tpu_malloc((size_t)ix.n * sizeof *d->labels);
  if (!jobs || !d->u8 || !d->labels) st = ferr(err, cap, TPU_ERR_NOMEM, "%s: out of memory for %lld images of %dx%dx%d",
                                                src->dir, (long long)ix.n, d->h, d->w, d->c);
  if (st == TPU_OK && (st = set_files(d, (int)ix.n)) != TPU_OK) ferr(err, cap, st, "out of memory");
  if (st == TPU_OK) {
    for (int64_t i = 0; i < ix.n; i++) {
      jobs[i] = (df_img_job){ .path = ix.paths[i], .dst = d->u8 + (size_t)i * (size_t)d->d };
      d->labels[i] = ix.labels[i];
      d->file_start[i] = i;
    }
    int64_t bad;
    st = df_image_load_all(jobs, ix.n, d->h, d->w, d->c, true, df_image_threads(), &bad);
    if (st != TPU_OK) ferr(err, cap, st, "%s: %s", ix.paths[bad], jobs[bad].why);
  }
  if (st == TPU_OK) st = check_labels(d, src->classes > 0 ? src->classes : ix.classes, src->dir, err, cap);
  tpu_free(jobs);
  df_images_index_free(&ix);
  d->ready = d->n;
  return st;
}

tpu_status df_data_open(const tpu_df_source *src, df_data **out, char *err, size_t cap) {
  *out = NULL;
  if (cap) err[0] = 0;
  df_data *d = data_new();
  if (!d) return ferr(err, cap, TPU_ERR_NOMEM, "out of memory");
  tpu_status st;
  char ip[4096], lp[4096];
  switch (src->kind) {
  case TPU_DF_SRC_FASHION_MNIST:
  case TPU_DF_SRC_MNIST: {
    const char *dir = src->dir ? src->dir : "/usr/share/datasets/fashion-mnist";
    const char *pre = src->test_split ? "t10k" : "train";
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, pre);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, pre);
    if (access(ip, R_OK) != 0) snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte", dir, pre);
    if (access(lp, R_OK) != 0) snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte", dir, pre);
    st = open_idx(ip, lp, src->classes, d, err, cap);
    break;
  }
  case TPU_DF_SRC_IDX: st = open_idx(src->images, src->labels, src->classes, d, err, cap); break;
  case TPU_DF_SRC_CSV: st = open_csv(src, d, err, cap); break;
  case TPU_DF_SRC_NPY: st = open_npy(src, d, err, cap); break;
  case TPU_DF_SRC_SYNTHETIC: st = open_synth(src, d, err, cap); break;
  case TPU_DF_SRC_CIFAR10: st = open_cifar(src, d, err, cap); break;
  case TPU_DF_SRC_TFRECORD: st = open_tfrecord(src, d, err, cap); break;
  case TPU_DF_SRC_IMAGES: st = open_images(src, d, err, cap); break;
  default: st = ferr(err, cap, TPU_ERR_CONFIG, "unknown source kind %d", (int)src->kind);
  }
  if (st == TPU_OK && !d->img_path) {   /* the name messages give the source by */
    const char *name = "synthetic source";
    if (src->kind == TPU_DF_SRC_NPY) name = src->images;
    else if (src->kind == TPU_DF_SRC_IMAGES) name = src->dir;   /* its class folders */
    else if (src->kind == TPU_DF_SRC_CSV || src->kind == TPU_DF_SRC_TFRECORD) name = src->path ? src->path : src->files[0];
    else if (src->kind == TPU_DF_SRC_CIFAR10) {
      snprintf(ip, sizeof ip, "%s/%s", src->dir, src->test_split ? "test_batch.bin" : "data_batch_*.bin");
      name = ip;
    }
    if (!(d->img_path = tpu_strdup(name))) st = ferr(err, cap, TPU_ERR_NOMEM, "out of memory");
  }
  if (st != TPU_OK) { df_data_close(d); return st; }
  *out = d;
  return TPU_OK;
}

void df_buffered_shuffle(int64_t *ids, int64_t n, int64_t buf, uint64_t seed, int64_t *tmp) {
  if (buf > n) buf = n;
  if (buf <= 1) return;
  int64_t fill = 0, in = 0, outp = 0;
  while (fill < buf) tmp[fill++] = ids[in++];
  uint64_t r = seed;
  while (fill > 0) {
    r = tpu_mix64(r);
    int64_t j = (int64_t)(r % (uint64_t)fill);
    ids[outp++] = tmp[j];              /* outp < in always, so ids[in] is still unread */
    if (in < n) tmp[j] = ids[in++];
    else tmp[j] = tmp[--fill];
  }
}
