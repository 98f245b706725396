/*
** check_datafeed.c -- the datafeed module: readers (good, truncated,
** corrupt, bad magic, labels out of range), stage semantics as in tf.data,
** bytes independent of threads and buffers, seek/resume, JSON errors, and the
** host-time model against hand-computed timelines.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "datafeed/df_int.h"
#include "tests/test_util.h"

static char tmpdir[256];
static char errbuf[1024];

static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/check_df.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}
static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) { /* best effort */ }
}
static const char *tpath(const char *name) {
  static char p[4][400];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
  return p[k];
}

static void put_be32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v; }

/* Writes n images of h x w (pixel = (i*7 + j) & 255) and labels i % 10. */
static void write_idx(const char *ip, const char *lp, int n, int h, int w, bool gz, int truncate_bytes, uint32_t magic) {
  size_t isz = 16 + (size_t)n * h * w, lsz = 8 + (size_t)n;
  unsigned char *im = malloc(isz), *lb = malloc(lsz);
  put_be32(im, magic); put_be32(im + 4, (uint32_t)n); put_be32(im + 8, (uint32_t)h); put_be32(im + 12, (uint32_t)w);
  for (size_t i = 0; i < (size_t)n * h * w; i++) im[16 + i] = (unsigned char)((i / ((size_t)h * w)) * 7 + i % ((size_t)h * w));
  put_be32(lb, 0x801); put_be32(lb + 4, (uint32_t)n);
  for (int i = 0; i < n; i++) lb[8 + i] = (unsigned char)(i % 10);
  if (gz) {
    gzFile f = gzopen(ip, "wb");
    gzwrite(f, im, (unsigned)isz);
    gzclose(f);
    f = gzopen(lp, "wb");
    gzwrite(f, lb, (unsigned)lsz);
    gzclose(f);
    if (truncate_bytes) {
      FILE *g = fopen(ip, "rb");
      fseek(g, 0, SEEK_END);
      long l = ftell(g);
      fclose(g);
      ck_assert_int_eq(truncate(ip, l - truncate_bytes), 0);
    }
  } else {
    FILE *f = fopen(ip, "wb");
    fwrite(im, 1, isz - (size_t)truncate_bytes, f);
    fclose(f);
    f = fopen(lp, "wb");
    fwrite(lb, 1, lsz, f);
    fclose(f);
  }
  free(im); free(lb);
}

/* Sources: images and labels files (IDX or NPY), a CSV file or directory,
** or n synthetic images of h x w x c in 'classes' classes. */
static tpu_df_source files_source(tpu_df_source_kind kind, const char *images, const char *labels) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = kind; src.images = images; src.labels = labels;
  return src;
}
static tpu_df_source csv_source(const char *path) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_CSV; src.path = path;
  return src;
}
static tpu_df_source synthetic(int64_t n, int h, int w, int c, int classes) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_SYNTHETIC; src.n = n; src.height = h; src.width = w; src.channels = c; src.classes = classes;
  return src;
}
/* A spec that reads src, no stages yet. */
static tpu_df_spec *spec_of(tpu_df_source src) {
  tpu_df_spec *s;
  ck_assert_int_eq(tpu_df_spec_create(&s), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_source(s, &src), TPU_OK);
  return s;
}
static tpu_df_spec *idx_spec(const char *ip, const char *lp, int batch) {
  tpu_df_spec *s = spec_of(files_source(TPU_DF_SRC_IDX, ip, lp));
  ck_assert_int_eq(tpu_df_spec_batch(s, batch, false), TPU_OK);
  return s;
}

/* s opened with options o (NULL: the defaults), which must succeed. */
static tpu_df *open_ok(const tpu_df_spec *s, const tpu_df_options *o) {
  tpu_df *df;
  ck_assert_msg(tpu_df_open(s, o, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  return df;
}

static tpu_df_info info_of(const tpu_df *df) {
  tpu_df_info in;
  tpu_df_get_info(df, &in);
  return in;
}

/* Opens and drains; returns the first error status. */
static tpu_status drain(tpu_df_spec *s, int64_t *images) {
  tpu_df *df;
  tpu_status st = tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf);
  *images = 0;
  if (st != TPU_OK) return st;
  tpu_df_batch b;
  while ((st = tpu_df_next(df, &b)) == TPU_OK && b.size) *images += b.size;
  if (st != TPU_OK) snprintf(errbuf, sizeof errbuf, "%s", tpu_df_errmsg(df));
  tpu_df_close(df);
  return st;
}

/* {==================================================================
** Readers
** ================================================================== */
START_TEST(Idx_plain_and_gzip_decode_to_the_same_pixels_and_labels) {
  for (int gz = 0; gz < 2; gz++) {
    const char *ip = tpath(gz ? "i.gz" : "i"), *lp = tpath(gz ? "l.gz" : "l");
    write_idx(ip, lp, 1000, 5, 3, gz, 0, 0x803);
    tpu_df_spec *s = idx_spec(ip, lp, 64);
    tpu_df *df = open_ok(s, NULL);
    const tpu_df_info in = info_of(df);
    TU_EQ_U64(1000, in.elements);
    TU_EQ_U64(15, in.features);
    TU_EQ_U64(10, in.classes);
    TU_EQ_U64(16, in.batches_per_epoch);
    tpu_df_batch b;
    int64_t seen = 0;
    while (tpu_df_next(df, &b) == TPU_OK && b.size) {
      for (int r = 0; r < b.size; r++) {
        int64_t id = seen + r;
        TU_EQ_U64(id % 10, b.y[r]);
        for (int j = 0; j < 15; j++) TU_EQ_BITS((float)((unsigned char)(id * 7 + j)), b.x[r * 15 + j], "pixel");
      }
      seen += b.size;
    }
    TU_EQ_U64(1000, seen);
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

/* Draining the idx files ip, lp in batches of 'batch' is an input error
** whose message names ip and says 'what'. */
static void expect_bad_images(const char *ip, const char *lp, int batch, const char *what) {
  tpu_df_spec *s = idx_spec(ip, lp, batch);
  int64_t n;
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, ip) && strstr(errbuf, what), "%s", errbuf);
  tpu_df_spec_destroy(s);
}

/* Images files that write_idx spoils: plain and truncated, gzip and
** truncated, with a bad magic number. */
static const struct spoiled_idx {
  const char *images, *labels;
  int n, side, gz, cut;
  uint32_t magic;
  const char *says;
} SPOILED[] = {
  { "i", "l", 100, 4, false, 5, 0x803, "truncated" },
  { "i.gz", "l.gz", 2000, 8, true, 30, 0x803, "" },
  { "i", "l", 10, 4, false, 0, 0x12345678, "bad magic" },
};

/* An IDX image file of rank 'rank' (dims after N in dims[]), value of
** byte k of element i = i*31 + k, plain or gzip; labels i % 3. */
static void write_idx_rank(int rank, int n, const uint32_t *dims, bool gz) {
  size_t d = 1, hl = 4 + 4 * (size_t)rank;
  for (int k = 0; k < rank - 1; k++) d *= dims[k];
  unsigned char *im = malloc(hl + n * d), lb[8 + 64];
  put_be32(im, 0x800u | (uint32_t)rank); put_be32(im + 4, (uint32_t)n);
  for (int k = 0; k < rank - 1; k++) put_be32(im + 8 + 4 * k, dims[k]);
  for (size_t i = 0; i < (size_t)n * d; i++) im[hl + i] = (unsigned char)((i / d) * 31 + i % d);
  put_be32(lb, 0x801); put_be32(lb + 4, (uint32_t)n);
  for (int i = 0; i < n; i++) lb[8 + i] = (unsigned char)(i % 3);
  gzFile f = gzopen(tpath("r.idx"), gz ? "wb" : "wbT");
  gzwrite(f, im, (unsigned)(hl + n * d));
  gzclose(f);
  FILE *g = fopen(tpath("r.lab"), "wb");
  fwrite(lb, 1, 8 + (size_t)n, g);
  fclose(g);
  free(im);
}

START_TEST(Idx_of_rank_2_3_and_4_reads_rows_grey_and_colour_images) {
  static const struct { int rank; uint32_t dims[3]; int h, w, c; } cases[] = {
    { 2, { 6 }, 1, 6, 1 }, { 3, { 2, 3 }, 2, 3, 1 }, { 4, { 2, 3, 3 }, 2, 3, 3 },
  };
  for (size_t k = 0; k < 6; k++) {
    const int n = 7;
    write_idx_rank(cases[k / 2].rank, n, cases[k / 2].dims, k % 2);
    tpu_df_spec *s = spec_of(files_source(TPU_DF_SRC_IDX, tpath("r.idx"), tpath("r.lab")));
    tpu_df_spec_batch(s, n, false);
    tpu_df *df = open_ok(s, NULL);
    tpu_df_info info;
    tpu_df_get_info(df, &info);
    ck_assert_msg(info.height == cases[k / 2].h && info.width == cases[k / 2].w && info.channels == cases[k / 2].c,
                  "rank %d: %dx%dx%d", cases[k / 2].rank, info.height, info.width, info.channels);
    tpu_df_batch b;
    ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == n);
    for (int i = 0; i < n; i++) {
      TU_EQ_U64(i % 3, b.y[i]);
      for (int j = 0; j < b.features; j++) ck_assert(b.x[i * b.features + j] == (float)(unsigned char)(i * 31 + j));
    }
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
  uint32_t dims[4] = { 1, 1, 1, 1 };
  write_idx_rank(5, 2, dims, false);
  tpu_df_spec *s = spec_of(files_source(TPU_DF_SRC_IDX, tpath("r.idx"), tpath("r.lab")));
  tpu_df_spec_batch(s, 2, false);
  tpu_df *df;
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "r.idx: bad magic number") && strstr(errbuf, "rank 02, 03 or 04"), "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

/* CIFAR-10 binary files in tmpdir/cifar: data_batch_f.bin holds 'per'
** records (label (f*per + r) % 10, pixel byte k of plane ch = r*7 + ch*3 + k)
** and test_batch.bin one. */
static const char *write_cifar(int per) {
  static char dir[400];
  snprintf(dir, sizeof dir, "%s/cifar", tmpdir);
  mkdir(dir, 0700);
  unsigned char rec[3073];
  for (int f = 0; f <= 5; f++) {
    char p[450];
    if (f == 5) snprintf(p, sizeof p, "%s/test_batch.bin", dir); else snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, f + 1);
    FILE *fp = fopen(p, "wb");
    for (int r = 0; r < (f == 5 ? 1 : per); r++) {
      rec[0] = (unsigned char)((f * per + r) % 10);
      for (int k = 0; k < 3072; k++) rec[1 + k] = (unsigned char)(r * 7 + (k / 1024) * 3 + k % 1024);
      fwrite(rec, 1, sizeof rec, fp);
    }
    fclose(fp);
  }
  return dir;
}

START_TEST(Cifar10_binary_files_read_channels_last_and_bad_records_are_named) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_CIFAR10;
  src.dir = write_cifar(3);
  tpu_df_spec *s = spec_of(src);
  tpu_df_spec_batch(s, 15, false);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 15 && b.features == 3072);
  for (int i = 0; i < 15; i++) {
    TU_EQ_U64(i % 10, b.y[i]);
    for (int p = 0; p < 1024; p += 97)        /* pixel p, channel ch: plane ch's byte p */
      for (int ch = 0; ch < 3; ch++)
        ck_assert(b.x[i * 3072 + p * 3 + ch] == (float)(unsigned char)((i % 3) * 7 + ch * 3 + p));
  }
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  char p[450];
  snprintf(p, sizeof p, "%s/data_batch_2.bin", src.dir);
  ck_assert_int_eq(truncate(p, 3073 + 100), 0);
  s = spec_of(src);
  tpu_df_spec_batch(s, 5, false);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "data_batch_2.bin: record 1: truncated (100 of 3073 bytes)") != NULL, "%s", errbuf);
  FILE *fp = fopen(p, "wb");
  unsigned char rec[3073] = { 3 };
  fwrite(rec, 1, sizeof rec, fp);
  rec[0] = 12;
  fwrite(rec, 1, sizeof rec, fp);
  fclose(fp);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "data_batch_2.bin: record 1: label 12 out of range 0..9") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

/* {==================================================================
** TFRecord: a writer of its own (bitwise CRC-32C, protobuf by hand)
** ================================================================== */
static uint32_t t_mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

typedef struct tbuf { unsigned char b[4096]; size_t n; } tbuf;
static void t_byte(tbuf *t, unsigned v) { t->b[t->n++] = (unsigned char)v; }
static void t_varint(tbuf *t, uint64_t v) { while (v >= 0x80) { t_byte(t, (unsigned)(v & 0x7f) | 0x80); v >>= 7; } t_byte(t, (unsigned)v); }
static void t_len(tbuf *t, int field, const void *p, size_t n) {
  t_varint(t, (uint64_t)field << 3 | 2);
  t_varint(t, n);
  memcpy(t->b + t->n, p, n);
  t->n += n;
}
/* One map entry of Features: key and a Feature with 'list' (1 bytes, 2
** float, 3 int64) holding 'body' (the list message). */
static void t_feature(tbuf *feats, const char *key, int list, const tbuf *body) {
  tbuf f = { .n = 0 }, e = { .n = 0 };
  t_len(&f, list, body->b, body->n);
  t_len(&e, 1, key, strlen(key));
  t_len(&e, 2, f.b, f.n);
  t_len(feats, 1, e.b, e.n);
}

enum { TF_GOOD, TF_WIRE_TYPE, TF_NO_LABEL, TF_SHORT_IMAGE, TF_JPEG, TF_FLOAT_LABEL };
#define TF_D 12   /* 2 x 3 x 2 */
static unsigned char tf_pixel(int i, int k) { return (unsigned char)(i * 13 + k * 5); }

/* The Example of element i: image TF_D bytes, label i % 4 (packed for odd
** i, unpacked for even), and a float feature "weight" to be skipped. */
static void t_example(tbuf *ex, int i, int bad, const char *img_key, const char *lab_key) {
  tbuf feats = { .n = 0 }, l = { .n = 0 };
  unsigned char px[TF_D + 8] = { 0 };
  for (int k = 0; k < TF_D; k++) px[k] = tf_pixel(i, k);
  if (bad == TF_JPEG) { px[0] = 0xff; px[1] = 0xd8; px[2] = 0xff; px[3] = 0xe0; }   /* a JPEG's SOI and APP0 */
  t_len(&l, 1, px, bad == TF_SHORT_IMAGE ? TF_D - 1 : bad == TF_JPEG ? TF_D + 8 : TF_D);
  t_feature(&feats, img_key, 1, &l);
  l.n = 0;
  float w = 0.5f;
  t_varint(&l, 1 << 3 | 5);
  memcpy(l.b + l.n, &w, 4);
  l.n += 4;
  t_feature(&feats, "weight", 2, &l);
  l.n = 0;
  if (i % 2) { tbuf v = { .n = 0 }; t_varint(&v, (uint64_t)(i % 4)); t_len(&l, 1, v.b, v.n); }
  else { t_varint(&l, 1 << 3 | 0); t_varint(&l, (uint64_t)(i % 4)); }
  if (bad != TF_NO_LABEL) t_feature(&feats, lab_key, bad == TF_FLOAT_LABEL ? 2 : 3, &l);
  ex->n = 0;
  if (bad == TF_WIRE_TYPE) { t_varint(ex, 1 << 3 | 0); t_varint(ex, 7); return; }
  t_len(ex, 1, feats.b, feats.n);
}

/* Writes tmpdir/NAME holding elements first..first+count-1; record 'bad_at'
** is spoiled with 'bad'. Returns the path. */
static const char *write_tfrecord(const char *name, int first, int count, int bad_at, int bad, const char *img_key, const char *lab_key) {
  const char *path = tpath(name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  for (int r = 0; r < count; r++) {
    tbuf ex;
    t_example(&ex, first + r, r == bad_at ? bad : TF_GOOD, img_key, lab_key);
    unsigned char h[12], t[4];
    uint64_t len = ex.n;
    for (int k = 0; k < 8; k++) h[k] = (unsigned char)(len >> (8 * k));
    uint32_t c = t_mask(tu_crc32c(h, 8)), dc = t_mask(tu_crc32c(ex.b, ex.n));
    for (int k = 0; k < 4; k++) { h[8 + k] = (unsigned char)(c >> (8 * k)); t[k] = (unsigned char)(dc >> (8 * k)); }
    fwrite(h, 1, 12, f); fwrite(ex.b, 1, ex.n, f); fwrite(t, 1, 4, f);
  }
  fclose(f);
  return path;
}

static tpu_df_source tfrecord_source(const char *const *files, int nfiles) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_TFRECORD;
  src.files = files; src.nfiles = nfiles;
  src.height = 2; src.width = 3; src.channels = 2;
  return src;
}

/* Every element of the batch: label i % 4 and pixels tf_pixel(i, k), for
** the element ids 'ids'. */
static void expect_tf_elements(const tpu_df_batch *b, const int *ids, int n) {
  ck_assert_int_eq(b->size, n);
  ck_assert_int_eq(b->features, TF_D);
  for (int j = 0; j < n; j++) {
    TU_EQ_U64(ids[j] % 4, b->y[j]);
    for (int k = 0; k < TF_D; k++) ck_assert(b->x[j * TF_D + k] == (float)tf_pixel(ids[j], k));
  }
}

START_TEST(Tfrecord_files_of_examples_read_every_record_in_order_and_interleaved) {
  TU_EQ_U64(0xe3069283u, tu_crc32c((const unsigned char *)"123456789", 9));   /* the CRC-32C check value */
  const char *files[2] = { write_tfrecord("a.tfrecord", 0, 3, -1, 0, "image", "label"),
                           write_tfrecord("b.tfrecord", 3, 4, -1, 0, "image", "label") };
  tpu_df_source src = tfrecord_source(files, 2);
  tpu_df_spec *s = spec_of(src);
  tpu_df_spec_batch(s, 7, false);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert(tpu_df_next(df, &b) == TPU_OK);
  expect_tf_elements(&b, (const int[]){ 0, 1, 2, 3, 4, 5, 6 }, 7);
  ck_assert_int_eq(info_of(df).classes, 4);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  /* interleave over the two files, as tf.data's interleave of TFRecordDatasets */
  s = spec_of(src);
  tpu_df_spec_interleave(s, 2, 1);
  tpu_df_spec_batch(s, 7, false);
  df = open_ok(s, NULL);
  ck_assert(tpu_df_next(df, &b) == TPU_OK);
  expect_tf_elements(&b, (const int[]){ 0, 3, 1, 4, 2, 5, 6 }, 7);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  /* other feature names; the files found by a glob pattern, in name order */
  src = tfrecord_source(NULL, 0);
  src.path = tpath("g/*.tfrecord");
  src.image_feature = "img"; src.label_feature = "y";
  mkdir(tpath("g"), 0700);
  write_tfrecord("g/x.tfrecord", 0, 2, -1, 0, "img", "y");
  write_tfrecord("g/y.tfrecord", 2, 1, -1, 0, "img", "y");
  s = spec_of(src);
  tpu_df_spec_batch(s, 3, false);
  df = open_ok(s, NULL);
  ck_assert(tpu_df_next(df, &b) == TPU_OK);
  expect_tf_elements(&b, (const int[]){ 0, 1, 2 }, 3);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
}
END_TEST

static const struct spoiled_tfr {
  int bad;          /* TF_*, or -1: flip a length CRC byte, -2: flip a data byte, -3: cut inside the data */
  const char *says;
} SPOILED_TFR[] = {
  { -1, "t1.tfrecord: record 1: corrupt length (masked CRC-32C mismatch)" },
  { -2, "t1.tfrecord: record 1: corrupt data (masked CRC-32C mismatch)" },
  { -3, "t1.tfrecord: record 1: truncated (" },
  { TF_WIRE_TYPE, "t1.tfrecord: record 1: bad tf.train.Example: Example field 1 (features) has wire type 0, expected 2" },
  { TF_NO_LABEL, "t1.tfrecord: record 1: bad tf.train.Example: the Example has no feature 'label'" },
  { TF_SHORT_IMAGE, "t1.tfrecord: record 1: bad tf.train.Example: feature 'image' has 11 bytes; source.shape 2x3x2 needs 12" },
  /* JPEG bytes are decoded, to the channels of source.shape: 2 is not a decoder's count */
  { TF_JPEG, "t1.tfrecord: record 1: feature 'image': JPEG and PNG images decode to 1, 3 or 4 channels, not 2" },
  { TF_FLOAT_LABEL, "t1.tfrecord: record 1: bad tf.train.Example: feature 'label' is a float_list; expected an int64_list" },
};

START_TEST(Tfrecord_corrupt_crc_truncation_and_bad_examples_name_file_and_record) {
  const struct spoiled_tfr *c = &SPOILED_TFR[_i];
  const char *files[2] = { write_tfrecord("t0.tfrecord", 0, 2, -1, 0, "image", "label"),
                           write_tfrecord("t1.tfrecord", 2, 3, 1, c->bad < 0 ? TF_GOOD : c->bad, "image", "label") };
  if (c->bad < 0) {
    FILE *f = fopen(files[1], "r+b");
    long rec = 0;                                 /* record 1 starts after record 0 */
    unsigned char h[8];
    ck_assert_int_eq(fread(h, 1, 8, f), 8);
    rec = 16 + (long)h[0];
    long at = c->bad == -1 ? rec + 9 : rec + 12 + 5;
    if (c->bad == -3) { fclose(f); ck_assert_int_eq(truncate(files[1], rec + 12 + 5), 0); }
    else {
      fseek(f, at, SEEK_SET);
      int v = fgetc(f);
      fseek(f, at, SEEK_SET);
      fputc(v ^ 0x20, f);
      fclose(f);
    }
  }
  tpu_df_spec *s = spec_of(tfrecord_source(files, 2));
  tpu_df_spec_batch(s, 2, false);
  tpu_df *df;
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, c->says) != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Truncated_or_bad_magic_idx_is_an_input_error_naming_the_file) {
  const struct spoiled_idx *c = &SPOILED[_i];
  write_idx(tpath(c->images), tpath(c->labels), c->n, c->side, c->side, c->gz, c->cut, c->magic);
  expect_bad_images(tpath(c->images), tpath(c->labels), 10, c->says);
}
END_TEST

START_TEST(Corrupt_gzip_data_is_reported_naming_the_file) {
  write_idx(tpath("i.gz"), tpath("l.gz"), 3000, 8, 8, true, 0, 0x803);
  FILE *f = fopen(tpath("i.gz"), "r+b");
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  for (long p = l / 3; p < l / 3 + 40; p++) { fseek(f, p, SEEK_SET); fputc(0x55 ^ (int)p, f); }
  fclose(f);
  expect_bad_images(tpath("i.gz"), tpath("l.gz"), 100, "");
}
END_TEST

/* Flips byte 'from_end' bytes before the end of 'path' (1: the last). */
static void flip_from_end(const char *path, long from_end) {
  FILE *f = fopen(path, "r+b");
  fseek(f, -from_end, SEEK_END);
  int c = fgetc(f);
  fseek(f, -from_end, SEEK_END);
  fputc(c ^ 1, f);
  fclose(f);
}
/* Appends 'junk' and then the file's own last 4 bytes (its ISIZE again). */
static void append_junk_keeping_isize(const char *path, const char *junk) {
  FILE *f = fopen(path, "r+b");
  unsigned char isz[4];
  fseek(f, -4, SEEK_END);
  ck_assert(fread(isz, 1, 4, f) == 4);
  fseek(f, 0, SEEK_END);
  fputs(junk, f);
  fwrite(isz, 1, 4, f);
  fclose(f);
}

/* #18: the image file's CRC was checked after its images were published
** (a batch came out of a corrupt file and the error was never delivered),
** and a label file's trailer was never read. Every gzip input's trailer
** (CRC-32, length) is checked before any of its bytes is used, and nothing
** may follow the stream. */
START_TEST(A_gzip_trailer_is_checked_before_any_batch_is_made) {
  write_idx(tpath("i.gz"), tpath("l.gz"), 3000, 8, 8, true, 0, 0x803);
  flip_from_end(tpath("i.gz"), 6);                         /* a CRC-32 byte of the images */
  tpu_df_spec *s = idx_spec(tpath("i.gz"), tpath("l.gz"), 100);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert_int_eq(tpu_df_next(df, &b), TPU_ERR_INPUT);   /* the first batch: nothing published */
  ck_assert_msg(strstr(tpu_df_errmsg(df), "i.gz: corrupt gzip file: the CRC-32 in its trailer does not match"),
                "%s", tpu_df_errmsg(df));
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  write_idx(tpath("i.gz"), tpath("l.gz"), 3000, 8, 8, true, 0, 0x803);
  flip_from_end(tpath("l.gz"), 6);                         /* a CRC-32 byte of the labels */
  s = idx_spec(tpath("i.gz"), tpath("l.gz"), 100);
  ck_assert_int_eq(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "l.gz: corrupt gzip file: the CRC-32 in its trailer does not match"), "%s", errbuf);
  write_idx(tpath("i.gz"), tpath("l.gz"), 3000, 8, 8, true, 0, 0x803);
  append_junk_keeping_isize(tpath("l.gz"), "junk");
  ck_assert_int_eq(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "l.gz: corrupt gzip file: trailing data after the gzip stream"), "%s", errbuf);
  write_idx(tpath("i.gz"), tpath("l.gz"), 3000, 8, 8, true, 0, 0x803);
  append_junk_keeping_isize(tpath("i.gz"), "junk");
  int64_t n;
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_int_eq(n, 0);
  ck_assert_msg(strstr(errbuf, "i.gz: corrupt gzip file: trailing data after the gzip stream"), "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Labels_out_of_range_and_missing_files_are_errors) {
  write_idx(tpath("i"), tpath("l"), 20, 2, 2, false, 0, 0x803);
  tpu_df_source src = files_source(TPU_DF_SRC_IDX, tpath("i"), tpath("l"));
  src.classes = 5;
  tpu_df_spec *s = spec_of(src);
  tpu_df_spec_batch(s, 4, false);
  int64_t n;
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, tpath("l")) && strstr(errbuf, "out of range"), "%s", errbuf);
  src.images = tpath("nope");
  tpu_df_spec_set_source(s, &src);
  ck_assert_int_eq(drain(s, &n), TPU_ERR_IO);
  ck_assert_msg(strstr(errbuf, tpath("nope")) != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Csv_reads_rows_and_rejects_ragged_lines_with_line_numbers) {
  FILE *f = fopen(tpath("a.csv"), "w");
  fprintf(f, "label,a,b,c\n1,0.5,2,3\n0,1,1,1\n2,7,8,9\n");
  fclose(f);
  tpu_df_spec *s = spec_of(csv_source(tpath("a.csv")));
  tpu_df_spec_batch(s, 3, false);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert_int_eq(tpu_df_next(df, &b), TPU_OK);
  TU_EQ_U64(3, b.size);
  TU_EQ_U64(3, b.features);
  TU_EQ_U64(3, b.classes);
  TU_EQ_BITS(0.5f, b.x[0], "x[0]");
  TU_EQ_BITS(9.0f, b.x[8], "x[8]");
  TU_EQ_U64(2, b.y[2]);
  tpu_df_close(df);
  f = fopen(tpath("a.csv"), "w");
  fprintf(f, "1,0.5,2,3\n0,1,1\n");
  fclose(f);
  int64_t n;
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "a.csv:2: expected 3 features, got 2") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

static void write_npy(const char *p, const char *descr, const char *shape, const void *data, size_t n, const char *magic) {
  char h[128];
  int hl = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  int pad = 64 - (10 + hl + 1) % 64;
  FILE *f = fopen(p, "wb");
  fwrite(magic, 1, 6, f);
  fputc(1, f); fputc(0, f);
  uint16_t tot = (uint16_t)(hl + pad + 1);
  fputc(tot & 255, f); fputc(tot >> 8, f);
  fwrite(h, 1, (size_t)hl, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  fwrite(data, 1, n, f);
  fclose(f);
}

START_TEST(Npy_images_and_labels_load_and_bad_magic_is_named) {
  uint8_t im[6 * 4];
  int32_t lab[6];
  for (int i = 0; i < 24; i++) im[i] = (uint8_t)(i * 3);
  for (int i = 0; i < 6; i++) lab[i] = i % 3;
  write_npy(tpath("x.npy"), "|u1", "(6, 2, 2)", im, sizeof im, "\x93NUMPY");
  write_npy(tpath("y.npy"), "<i4", "(6,)", lab, sizeof lab, "\x93NUMPY");
  tpu_df_spec *s = spec_of(files_source(TPU_DF_SRC_NPY, tpath("x.npy"), tpath("y.npy")));
  tpu_df_spec_batch(s, 6, false);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert_int_eq(tpu_df_next(df, &b), TPU_OK);
  TU_EQ_U64(4, b.features);
  TU_EQ_BITS(69.0f, b.x[23], "x[23]");
  TU_EQ_U64(2, b.y[5]);
  tpu_df_close(df);
  write_npy(tpath("x.npy"), "|u1", "(6, 2, 2)", im, sizeof im, "\x93NUMPX");
  int64_t n;
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "x.npy: not a .npy file (bad magic)") != NULL, "%s", errbuf);
  write_npy(tpath("x.npy"), "|u1", "(6, 2, 2)", im, sizeof im - 3, "\x93NUMPY");
  ck_assert_int_eq(drain(s, &n), TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "x.npy: truncated") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Fashion_mnist_train_has_60000_images_of_28x28_in_10_classes) {
  if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) != 0) return;
  tpu_df_spec *s;
  tpu_df_spec_create(&s);
  tpu_df_spec_map(s, TPU_DF_MAP_NORMALIZE, NULL, 2);
  tpu_df_spec_batch(s, 1000, true);
  tpu_df *df = open_ok(s, NULL);
  const tpu_df_info in = info_of(df);
  TU_EQ_U64(60000, in.elements);
  TU_EQ_U64(28, in.height);
  TU_EQ_U64(10, in.classes);
  tpu_df_batch b;
  int64_t n = 0;
  float lo = 1, hi = 0;
  while (tpu_df_next(df, &b) == TPU_OK && b.size) {
    for (int i = 0; i < b.size * b.features; i++) { if (b.x[i] < lo) lo = b.x[i]; if (b.x[i] > hi) hi = b.x[i]; }
    n += b.size;
  }
  TU_EQ_U64(60000, n);
  TU_EQ_BITS(0.0f, lo, "min");
  TU_EQ_BITS(1.0f, hi, "max");
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Without_cache_each_epoch_reads_the_files_again) {
  for (int cached = 0; cached < 2; cached++) {
    write_idx(tpath("i"), tpath("l"), 30, 2, 2, false, 0, 0x803);
    tpu_df_spec *s = spec_of(files_source(TPU_DF_SRC_IDX, tpath("i"), tpath("l")));
    if (cached) tpu_df_spec_cache(s);      /* right after the source: read once */
    tpu_df_spec_batch(s, 30, false);
    tpu_df_spec_repeat(s, 2);
    tpu_df_options o = tpu_df_options_default();
    o.threads = 0;               /* the read of epoch 1 happens at its first batch */
    tpu_df *df = open_ok(s, &o);
    tpu_df_batch b;
    ck_assert_int_eq(tpu_df_next(df, &b), TPU_OK);
    TU_EQ_BITS(7.0f, b.x[4], "epoch 0, element 1");
    /* the file changes on disk between the epochs */
    FILE *f = fopen(tpath("i"), "r+b");
    fseek(f, 16 + 4, SEEK_SET);
    fputc(200, f);
    fclose(f);
    ck_assert_int_eq(tpu_df_next(df, &b), TPU_OK);
    TU_EQ_U64(1, b.epoch);
    TU_EQ_BITS(cached ? 7.0f : 200.0f, b.x[4], cached ? "cached epoch 1" : "re-read epoch 1");
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

/* {==================================================================
** Stage semantics. The CSV source "ids" has feature 0 = the element id.
** ================================================================== */
static const char *write_ids_csv(int n) {
  const char *p = tpath("ids.csv");
  FILE *f = fopen(p, "w");
  for (int i = 0; i < n; i++) fprintf(f, "%d,%d,%d\n", i % 4, i, i * 2);
  fclose(f);
  return p;
}
static tpu_df_spec *ids_spec(int n) { return spec_of(csv_source(write_ids_csv(n))); }
/* Reads every element id in order (feature 0), -1 separates epochs. */
static int64_t read_ids(tpu_df_spec *s, int64_t *out, int64_t cap, int threads) {
  tpu_df_options o = tpu_df_options_default();
  o.threads = threads;
  tpu_df *df = open_ok(s, &o);
  tpu_df_batch b;
  int64_t n = 0, ep = 0;
  while (tpu_df_next(df, &b) == TPU_OK && b.size) {
    if (b.epoch != ep) { ck_assert(n < cap); out[n++] = -1; ep = b.epoch; }
    for (int r = 0; r < b.size; r++) { ck_assert(n < cap); out[n++] = (int64_t)b.x[r * b.features]; }
  }
  tpu_df_close(df);
  return n;
}

START_TEST(Shuffle_is_a_buffered_shuffle_like_tf_data) {
  enum { N = 500 };
  int64_t ids[N + 10];
  for (int buf = 1; buf <= 1024; buf *= 4) {
    tpu_df_spec *s = ids_spec(N);
    tpu_df_spec_shuffle(s, buf, 99);
    tpu_df_spec_batch(s, 7, false);
    int64_t n = read_ids(s, ids, N + 10, 2);
    TU_EQ_U64(N, n);
    bool seen[N] = { false }, moved = false;
    for (int p = 0; p < N; p++) {
      ck_assert(ids[p] >= 0 && ids[p] < N && !seen[ids[p]]);
      seen[ids[p]] = true;
      /* output p is drawn from a buffer holding inputs < p + buf */
      ck_assert_msg(ids[p] < p + buf, "position %d holds %lld with buffer %d", p, (long long)ids[p], buf);
      if (ids[p] != p) moved = true;
    }
    ck_assert(buf == 1 ? !moved : moved);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

START_TEST(Batch_drop_remainder_keeps_or_drops_the_partial_batch) {
  for (int drop = 0; drop < 2; drop++) {
    tpu_df_spec *s = ids_spec(10);
    tpu_df_spec_batch(s, 4, drop);
    tpu_df *df = open_ok(s, NULL);
    tpu_df_batch b;
    int sizes[4] = { 0 }, nb = 0;
    while (tpu_df_next(df, &b) == TPU_OK && b.size) sizes[nb++] = b.size;
    TU_EQ_U64(drop ? 2 : 3, nb);
    TU_EQ_U64(4, sizes[0]);
    TU_EQ_U64(4, sizes[1]);
    if (!drop) TU_EQ_U64(2, sizes[2]);
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
  tpu_df_spec *s = ids_spec(3);
  tpu_df_spec_batch(s, 4, true);
  tpu_df *df;
  ck_assert_int_eq(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "leaves no batch") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Shard_keeps_every_nth_element_from_index) {
  int64_t ids[100];
  tpu_df_spec *s = ids_spec(20);
  tpu_df_spec_shard(s, 3, 1);
  tpu_df_spec_batch(s, 4, false);
  int64_t n = read_ids(s, ids, 100, 1);
  TU_EQ_U64(7, n);
  for (int i = 0; i < n; i++) TU_EQ_U64(1 + 3 * i, ids[i]);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Interleave_takes_elements_in_turn_from_cycle_length_files) {
  /* a directory of 3 CSV files of 4, 4 and 2 elements; cycle 2 */
  char dir[400];
  snprintf(dir, sizeof dir, "%s/csvdir", tmpdir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  int sizes[3] = { 4, 4, 2 }, id = 0;
  for (int f = 0; f < 3; f++) {
    char p[450];
    snprintf(p, sizeof p, "%s/part%d.csv", dir, f);
    FILE *fp = fopen(p, "w");
    for (int i = 0; i < sizes[f]; i++, id++) fprintf(fp, "%d,%d\n", f, id);
    fclose(fp);
  }
  /* block_length b: b elements of a file before the other's turn */
  static const int64_t want[3][10] = { { 0, 4, 1, 5, 2, 6, 3, 7, 8, 9 }, { 0, 1, 4, 5, 2, 3, 6, 7, 8, 9 },
                                       { 0, 1, 2, 4, 5, 6, 3, 7, 8, 9 } };
  for (int b = 1; b <= 3; b++) {
    tpu_df_spec *s = spec_of(csv_source(dir));
    tpu_df_spec_interleave(s, 2, 2);
    ck_assert(tpu_df_spec_interleave_block(s, b) == TPU_OK);
    tpu_df_spec_batch(s, 3, false);
    int64_t got[20];
    TU_EQ_U64(10, read_ids(s, got, 20, 2));
    for (int i = 0; i < 10; i++) TU_EQ_U64(want[b - 1][i], got[i]);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

START_TEST(Repeat_reshuffles_each_epoch_unless_the_shuffle_is_cached) {
  int64_t a[400];
  for (int cached = 0; cached < 2; cached++) {
    tpu_df_spec *s = ids_spec(50);
    tpu_df_spec_shuffle(s, 50, 5);
    if (cached) tpu_df_spec_cache(s);
    tpu_df_spec_batch(s, 8, false);
    tpu_df_spec_repeat(s, 3);
    int64_t n = read_ids(s, a, 400, 2);
    TU_EQ_U64(3 * 50 + 2, n);          /* two epoch separators */
    TU_EQ_U64(-1, a[50]);
    bool same = memcmp(a, a + 51, 50 * sizeof *a) == 0 && memcmp(a, a + 102, 50 * sizeof *a) == 0;
    ck_assert_msg(cached ? same : !same, "cached=%d same=%d", cached, same);
    int64_t sum = 0;
    for (int i = 51; i < 101; i++) sum += a[i];
    TU_EQ_U64(49 * 50 / 2, sum);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

START_TEST(Cache_freezes_random_maps_before_it_not_after) {
  for (int before = 0; before < 2; before++) {
    tpu_df_source src = synthetic(64, 6, 5, 2, 3);
    src.seed = 4;
    tpu_df_spec *s = spec_of(src);
    if (!before) tpu_df_spec_cache(s);
    tpu_df_spec_map(s, TPU_DF_MAP_RANDOM_FLIP, NULL, 1);
    if (before) tpu_df_spec_cache(s);
    tpu_df_spec_batch(s, 64, false);
    tpu_df_spec_repeat(s, 2);
    tpu_df *df = open_ok(s, NULL);
    tpu_df_batch b;
    static float e0[64 * 60];
    tpu_df_next(df, &b);
    memcpy(e0, b.x, sizeof e0);
    tpu_df_next(df, &b);
    TU_EQ_U64(1, b.epoch);
    bool same = memcmp(e0, b.x, sizeof e0) == 0;
    ck_assert_msg(before ? same : !same, "random_flip %s cache: epochs %s", before ? "before" : "after", same ? "equal" : "differ");
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

/* A synthetic source with a vocabulary gives token sequences: every id an
** exact integer in [0, vocab) in the f32 the batches carry, the labels in
** [0, classes), the same bytes for the same seed and others for another; a
** normalize map, which would scale the ids into fractions, is refused. */
static void token_batch(uint64_t seed, int vocab, float *x, int32_t *y) {
  tpu_df_source src = synthetic(64, 1, 1, 48, 5);
  src.vocab = vocab; src.seed = seed;
  tpu_df_spec *s = spec_of(src);
  ck_assert_int_eq(tpu_df_spec_shuffle(s, 64, 3), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_batch(s, 64, false), TPU_OK);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  ck_assert_int_eq(tpu_df_next(df, &b), TPU_OK);
  TU_EQ_U64(64, b.size);
  TU_EQ_U64(48, b.features);
  memcpy(x, b.x, 64 * 48 * sizeof *x);
  memcpy(y, b.y, 64 * sizeof *y);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
}

START_TEST(Synthetic_tokens_are_integer_ids_below_the_vocabulary) {
  static const int vocabs[] = { 1, 2, 7, 30522, 50257, 1 << 24 };
  static float x[64 * 48], x2[64 * 48];
  int32_t y[64], y2[64];
  for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
    const int V = vocabs[v];
    int distinct_max = 0;
    token_batch(11, V, x, y);
    for (int i = 0; i < 64 * 48; i++) {
      ck_assert_msg(x[i] >= 0.0f && x[i] < (float)V && x[i] == floorf(x[i]), "id %g of vocab %d", (double)x[i], V);
      if ((int)x[i] > distinct_max) distinct_max = (int)x[i];
    }
    for (int i = 0; i < 64; i++) ck_assert(y[i] >= 0 && y[i] < 5);
    if (V > 1000) ck_assert_int_gt(distinct_max, V / 2);   /* the ids spread over the vocabulary */
    token_batch(11, V, x2, y2);
    ck_assert(!memcmp(x, x2, sizeof x) && !memcmp(y, y2, sizeof y));
    token_batch(12, V, x2, y2);
    if (V > 2) ck_assert(memcmp(x, x2, sizeof x) != 0);
  }
  tpu_df_source src = synthetic(8, 1, 1, 4, 2);
  src.vocab = 100;
  tpu_df_spec *s = spec_of(src);
  tpu_df_spec_map(s, TPU_DF_MAP_NORMALIZE, NULL, 0);
  tpu_df_spec_batch(s, 4, false);
  tpu_df *df;
  ck_assert_int_eq(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "stages[0]: map normalize") && strstr(errbuf, "token ids"), "%s", errbuf);
  tpu_df_spec_destroy(s);
  src.vocab = (1 << 24) + 1;
  ck_assert_int_eq(tpu_df_spec_create(&s), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_source(s, &src), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(tpu_df_spec_errmsg(s), "source.vocab"), "%s", tpu_df_spec_errmsg(s));
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Map_functions_normalize_one_hot_flip_and_crop) {
  tpu_df_source src = synthetic(40, 5, 4, 3, 7);
  src.seed = 9;
  tpu_df_spec *s = spec_of(src);
  tpu_df_spec_batch(s, 40, false);
  tpu_df *df = open_ok(s, NULL);
  tpu_df_batch b;
  tpu_df_next(df, &b);
  static float raw[40 * 60];
  int32_t lab[40];
  memcpy(raw, b.x, sizeof raw);
  memcpy(lab, b.y, sizeof lab);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  for (int fn = 0; fn < 4; fn++) {
    s = spec_of(src);
    tpu_df_map_args a = { 0.0, 255.0, 1 };
    tpu_df_spec_batch(s, 40, false);      /* after batch: the vectorized form */
    tpu_df_spec_map(s, (tpu_df_map_fn)fn, &a, 2);
    df = open_ok(s, NULL);
    tpu_df_next(df, &b);
    int flips = 0, shifted = 0;
    for (int r = 0; r < 40; r++) {
      const float *x = b.x + r * 60, *o = raw + r * 60;
      TU_EQ_U64(lab[r], b.y[r]);
      if (fn == TPU_DF_MAP_NORMALIZE) for (int j = 0; j < 60; j++) TU_EQ_BITS(o[j] / 255.0f, x[j], "normalized");
      if (fn == TPU_DF_MAP_ONE_HOT) {
        ck_assert_ptr_nonnull(b.y_onehot);
        for (int k = 0; k < 7; k++) TU_EQ_BITS(k == lab[r] ? 1.0f : 0.0f, b.y_onehot[r * 7 + k], "one-hot");
      }
      if (fn == TPU_DF_MAP_RANDOM_FLIP) {
        bool same = memcmp(x, o, 60 * sizeof *x) == 0, mirror = true;
        for (int y = 0; y < 5; y++) for (int xx = 0; xx < 4; xx++) for (int c = 0; c < 3; c++)
          if (x[(y * 4 + xx) * 3 + c] != o[(y * 4 + 3 - xx) * 3 + c]) mirror = false;
        ck_assert(same || mirror);
        flips += !same;
      }
      if (fn == TPU_DF_MAP_RANDOM_CROP) {
        bool found = false;
        for (int dy = -1; dy <= 1 && !found; dy++) for (int dx = -1; dx <= 1 && !found; dx++) {
          bool ok = true;
          for (int y = 0; y < 5; y++) for (int xx = 0; xx < 4; xx++) for (int c = 0; c < 3; c++) {
            int sy = y + dy, sx = xx + dx;
            float want = sy >= 0 && sy < 5 && sx >= 0 && sx < 4 ? o[(sy * 4 + sx) * 3 + c] : 0.0f;
            if (x[(y * 4 + xx) * 3 + c] != want) ok = false;
          }
          if (ok) { found = true; shifted += dy || dx; }
        }
        ck_assert_msg(found, "row %d is not a padded crop", r);
      }
    }
    if (fn == TPU_DF_MAP_RANDOM_FLIP) ck_assert(flips > 5 && flips < 35);
    if (fn == TPU_DF_MAP_RANDOM_CROP) ck_assert(shifted > 10);
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

/* {==================================================================
** Determinism and resume
** ================================================================== */
/* FNV-1a over a batch's pixels, labels, epoch and index. */
#define FNV_START 1469598103934665603ull
static uint64_t hash_batch(uint64_t h, const tpu_df_batch *b) {
  const unsigned char *p = (const unsigned char *)b->x;
  for (size_t i = 0; i < (size_t)b->size * (size_t)b->features * 4; i++) h = (h ^ p[i]) * 1099511628211ull;
  for (int i = 0; i < b->size; i++) h = (h ^ (uint64_t)b->y[i]) * 1099511628211ull;
  return (h ^ (uint64_t)b->epoch * 131 ^ (uint64_t)b->index) * 1099511628211ull;
}
static uint64_t hash_stream(const tpu_df_spec *s, int threads, int prefetch, int64_t start_epoch, int64_t start_index,
                            int64_t *nbatches) {
  tpu_df_options o = tpu_df_options_default();
  o.threads = threads;
  o.prefetch = prefetch;
  tpu_df *df = open_ok(s, &o);
  if (start_epoch || start_index) ck_assert_int_eq(tpu_df_seek(df, start_epoch, start_index), TPU_OK);
  uint64_t h = FNV_START;
  tpu_df_batch b;
  *nbatches = 0;
  while (tpu_df_next(df, &b) == TPU_OK && b.size) {
    h = hash_batch(h, &b);
    (*nbatches)++;
  }
  tpu_df_close(df);
  return h;
}

static tpu_df_spec *busy_spec(void) {
  tpu_df_source src = synthetic(700, 8, 8, 1, 10);
  src.seed = 3;
  tpu_df_spec *s = spec_of(src);
  tpu_df_map_args crop = { 0, 255, 2 };
  tpu_df_spec_map(s, TPU_DF_MAP_NORMALIZE, NULL, 1);
  tpu_df_spec_cache(s);
  tpu_df_spec_shuffle(s, 100, 11);
  tpu_df_spec_map(s, TPU_DF_MAP_RANDOM_CROP, &crop, TPU_DF_AUTOTUNE);
  tpu_df_spec_batch(s, 33, false);
  tpu_df_spec_map(s, TPU_DF_MAP_RANDOM_FLIP, NULL, 1);
  tpu_df_spec_repeat(s, 3);
  tpu_df_spec_prefetch(s, 2);
  return s;
}

START_TEST(Bytes_do_not_depend_on_threads_or_buffer_sizes) {
  tpu_df_spec *s = busy_spec();
  int64_t nb0, nb;
  uint64_t h0 = hash_stream(s, 0, 0, 0, 0, &nb0);
  TU_EQ_U64(3 * 22, nb0);
  static const int th[] = { 1, 2, 3, 5, 8 }, pf[] = { 0, 1, 2, 7 };
  for (size_t i = 0; i < 5; i++)
    for (size_t j = 0; j < 4; j++) {
      uint64_t h = hash_stream(s, th[i], pf[j], 0, 0, &nb);
      ck_assert_msg(h == h0 && nb == nb0, "threads %d prefetch %d differ", th[i], pf[j]);
    }
  tpu_df_spec *s2 = busy_spec();
  tpu_df_spec_reseed(s2, 12345);
  ck_assert(hash_stream(s2, 2, 2, 0, 0, &nb) != h0);
  tpu_df_spec_destroy(s2);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Seek_resumes_with_the_same_bytes_as_an_uninterrupted_run) {
  tpu_df_spec *s = busy_spec();
  /* the stream from (epoch 1, batch 5) on, made by a fresh pipeline that skipped ahead */
  tpu_df_options o = tpu_df_options_default();
  tpu_df *df = open_ok(s, &o);
  tpu_df_batch b;
  uint64_t h_ref = FNV_START;
  int64_t n_ref = 0;
  while (tpu_df_next(df, &b) == TPU_OK && b.size) {
    if (b.epoch * 22 + b.index < 22 + 5) continue;
    h_ref = hash_batch(h_ref, &b);
    n_ref++;
  }
  ck_assert_int_eq(tpu_df_seek(df, 9, 0), TPU_ERR_CONFIG);
  tpu_df_close(df);
  int64_t nb;
  for (int t = 0; t < 3; t++) {
    uint64_t h = hash_stream(s, t, 1, 1, 5, &nb);
    ck_assert_msg(h == h_ref && nb == n_ref, "threads %d: resume differs", t);
  }
  tpu_df_spec_destroy(s);
}
END_TEST

/* {==================================================================
** JSON descriptions
** ================================================================== */
static tpu_status parse(const char *text) {
  tpu_df_spec *s;
  tpu_status st = tpu_df_spec_parse(text, "p.json", &s, errbuf, sizeof errbuf);
  tpu_df_spec_destroy(s);
  return st;
}

START_TEST(Json_errors_name_the_file_field_and_line_column) {
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"},\n \"stages\": [ {\"op\": \"batch\", \"batch_size\": 8} ] }"), TPU_OK);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"},\n \"stages\": [ {\"op\": \"batch\", \"batch_size\": 0} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "p.json:2:44: field 'stages[0].batch_size': expected an integer in 1..1048576, got 0") != NULL, "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"},\n \"stages\": [ {\"op\": \"shuffle\", \"bufer_size\": 8} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "p.json:2:") && strstr(errbuf, "'stages[0].bufer_size': unknown key"), "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"},\n \"stages\": [ {\"op\": \"batch\", \"batch_size\": 8}, "), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "p.json:2:") && strstr(errbuf, "malformed JSON"), "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"tape\"}, \"stages\": [] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "field 'source.kind': expected one of") != NULL, "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"}, \"stages\": [ {\"op\": \"batch\", \"batch_size\": 8}, {\"op\": \"shuffle\", \"buffer_size\": 8} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "field 'stages[1]'") && strstr(errbuf, "shuffle after batch"), "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"}, \"stages\": [ {\"op\": \"map\", \"fn\": \"normalize\", \"num_parallel_calls\": \"many\"}, {\"op\": \"batch\", \"batch_size\": 8} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "or \"autotune\", got a string") != NULL, "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\", \"open_latency_s\": -1}, \"stages\": [ {\"op\": \"batch\", \"batch_size\": 8} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "field 'source.open_latency_s': expected a number in [0, 3600], got -1") != NULL, "%s", errbuf);
  ck_assert_int_eq(parse("{ \"source\": {\"kind\": \"fashion-mnist\"}, \"stages\": [ {\"op\": \"map\", \"fn\": \"normalize\"} ] }"), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "a batch stage is required") != NULL, "%s", errbuf);
}
END_TEST

/* {==================================================================
** The host-time model vs hand-computed timelines
** ================================================================== */
static tpu_df_spec *model_spec(int64_t n, int64_t files, double open_s, double read_s, int prefetch) {
  tpu_df_spec *s = spec_of(synthetic(n, 2, 2, 1, 2));
  tpu_df_spec_set_cost(s, "files", (double)files);
  tpu_df_spec_set_cost(s, "open_latency_s", open_s);
  tpu_df_spec_set_cost(s, "read_latency_s", read_s);
  tpu_df_spec_batch(s, 1, false);
  if (prefetch) tpu_df_spec_prefetch(s, prefetch);
  return s;
}

/* The model's run of s for 12 steps of step_s each (or of fn's step times):
** its result, and when each step's batch was ready in ready[]. */
static tpu_df_model_result model_12(const tpu_df_spec *s, double step_s, tpu_df_step_fn fn, double ready[12]) {
  tpu_df_model_result r;
  ck_assert_msg(tpu_df_model_run(s, NULL, step_s, fn, NULL, 12, ready, &r, errbuf, sizeof errbuf) == TPU_OK, "%s",
                errbuf);
  return r;
}

#define NEAR(want, got) ck_assert_msg(fabs((want) - (got)) < 1e-9, "%s\n  Expected: %.9f\n  Actual:   %.9f", #got, (double)(want), (double)(got))

START_TEST(Naive_model_alternates_open_read_and_train) {
  /* 12 elements in 4 files; open 30 ms, read 15 ms, train 10 ms, no overlap:
  ** step i waits for read (+ open at each file's first element) */
  tpu_df_spec *s = model_spec(12, 4, 0.03, 0.015, 0);
  double ready[12];
  tpu_df_model_result r = model_12(s, 0.01, NULL, ready);
  double t = 0;
  for (int i = 0; i < 12; i++) {
    t += (i % 3 == 0 ? 0.03 : 0) + 0.015;
    NEAR(t, ready[i]);
    t += 0.01;
  }
  NEAR(12 * 0.025 + 4 * 0.03, r.total_s);
  NEAR((12 * 0.015 + 4 * 0.03) / 12, r.wait_mean_s);
  NEAR(0.045, r.wait_max_s);
  NEAR((12 * 0.015 + 4 * 0.03) / r.total_s, r.input_bound_share);
  TU_EQ_U64(12, r.steps);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Prefetch_model_overlaps_reading_with_training) {
  /* producer-bound: reads back to back, ready(i) = sum of reads and opens */
  tpu_df_spec *s = model_spec(12, 4, 0.03, 0.015, 1);
  double ready[12];
  tpu_df_model_result r = model_12(s, 0.01, NULL, ready);
  double t = 0;
  for (int i = 0; i < 12; i++) { t += (i % 3 == 0 ? 0.03 : 0) + 0.015; NEAR(t, ready[i]); }
  NEAR(12 * 0.015 + 4 * 0.03 + 0.01, r.total_s);
  tpu_df_spec_destroy(s);
  /* consumer-bound: read 5 ms, train 10 ms, no opens: only the first step waits */
  s = model_spec(12, 1, 0, 0.005, 1);
  r = model_12(s, 0.01, NULL, ready);
  NEAR(0.005, ready[0]);
  for (int i = 1; i < 12; i++) NEAR(0.005 + 0.01 * i, ready[i]);
  NEAR(0.005 + 12 * 0.01, r.total_s);
  NEAR(0.005, r.wait_max_s);
  tpu_df_spec_destroy(s);
}
END_TEST

static double slow_then_fast(void *ud, int64_t step) { (void)ud; return step < 3 ? 0.05 : 0.001; }

START_TEST(Model_next_follows_a_consumer_with_varying_step_times) {
  tpu_df_spec *s = model_spec(12, 1, 0, 0.01, 2);
  double ready[12];
  model_12(s, 0, slow_then_fast, ready);
  /* the buffer (2) fills during the slow steps; the fast steps then drain it */
  NEAR(0.01, ready[0]);
  NEAR(0.06, ready[1]);
  NEAR(0.11, ready[2]);
  NEAR(0.16, ready[3]);
  NEAR(0.161, ready[4]);
  /* past the end of the data the model says so */
  tpu_df_model *m;
  ck_assert(tpu_df_model_create(s, NULL, &m, errbuf, sizeof errbuf) == TPU_OK);
  for (int i = 0; i < 12; i++) ck_assert(tpu_df_model_next(m, 0) >= 0);
  ck_assert(tpu_df_model_next(m, 1) < 0);
  tpu_df_model_destroy(m);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Autotune_picks_enough_parallel_map_calls_within_the_core_budget) {
  /* a map of 30 ms per element before batch, step 10 ms */
  tpu_df_spec *s = spec_of(synthetic(200, 2, 2, 1, 2));
  tpu_df_spec_map(s, TPU_DF_MAP_NONE, NULL, TPU_DF_AUTOTUNE);
  tpu_df_spec_set_cost(s, "cost_per_element_s", 0.03);
  tpu_df_spec_batch(s, 1, false);
  tpu_df_spec_prefetch(s, TPU_DF_AUTOTUNE);
  tpu_df_model_options o = tpu_df_model_options_default();
  o.host_cores = 6;
  char report[512];
  ck_assert(tpu_df_model_autotune(s, &o, 0.01, 100, report, sizeof report, errbuf, sizeof errbuf) == TPU_OK);
  ck_assert_msg(strstr(report, "stages[0].num_parallel_calls = ") != NULL, "%s", report);
  int par = s->st[0].par;
  ck_assert_msg(par >= 3 && par <= 4, "chose %d:\n%s", par, report);   /* 30 ms / 10 ms per step, 6 cores - consumer - prefetch */
  tpu_df_model_result r1, r;
  ck_assert(tpu_df_model_run(s, &o, 0.01, NULL, NULL, 100, NULL, &r, errbuf, sizeof errbuf) == TPU_OK);
  s->st[0].par = 1;
  ck_assert(tpu_df_model_run(s, &o, 0.01, NULL, NULL, 100, NULL, &r1, errbuf, sizeof errbuf) == TPU_OK);
  ck_assert(r.wait_mean_s < r1.wait_mean_s / 5);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Ray_examples_order_threads_then_processes_then_shared_memory) {
  const char *f[3] = { "datafeed/examples/ray_one_generator.json", "datafeed/examples/ray_processes.json",
                       "datafeed/examples/ray_shared_memory.json" };
  double w[3];
  for (int i = 0; i < 3; i++) {
    tpu_df_spec *s;
    ck_assert_msg(tpu_df_spec_load(f[i], &s, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
    tpu_df_model_result r;
    ck_assert(tpu_df_model_run(s, NULL, 0.25, NULL, NULL, 24, NULL, &r, errbuf, sizeof errbuf) == TPU_OK);
    w[i] = r.wait_mean_s;
    tpu_df_spec_destroy(s);
  }
  ck_assert_msg(w[0] > 3 * w[1] && w[1] > w[2], "waits %g %g %g", w[0], w[1], w[2]);
}
END_TEST

/* {==================================================================
** Allocation failures: every allocation of open/next/close and of the model
** fails in turn; each must give an error (never a crash, hang or leak).
** ================================================================== */

static tpu_status open_next_and_model(void *spec) {
  tpu_df *df = NULL;
  tpu_status st = tpu_df_open(spec, NULL, &df, errbuf, sizeof errbuf);
  if (st == TPU_OK) {
    tpu_df_batch b;
    for (int i = 0; i < 3 && st == TPU_OK; i++) st = tpu_df_next(df, &b);
    tpu_df_close(df);
  }
  tpu_df_model_result r;
  tpu_status st2 = tpu_df_model_run(spec, NULL, 0.01, NULL, NULL, 30, NULL, &r, errbuf, sizeof errbuf);
  ck_assert(st == TPU_OK || st == TPU_ERR_NOMEM);
  ck_assert(st2 == TPU_OK || st2 == TPU_ERR_NOMEM);
  return st == TPU_OK ? st2 : st;
}
START_TEST(Open_next_and_model_survive_every_allocation_failure) {
  tpu_df_spec *s = busy_spec();
  tu_oom_sweep(2000, open_next_and_model, s);
  tpu_df_spec_destroy(s);
}
END_TEST

/* {==================================================================
** tf.data's iteration semantics: epochs, asynchronous map, repeat passes,
** overheads, the verdict
** ================================================================== */
/* The model of s for 'steps' steps of 10 ms, with o (NULL = defaults). */
static tpu_df_model_result model_n(const tpu_df_spec *s, const tpu_df_model_options *o, int64_t steps, double *ready) {
  tpu_df_model_result r;
  ck_assert_msg(tpu_df_model_run(s, o, 0.01, NULL, NULL, steps, ready, &r, errbuf, sizeof errbuf) == TPU_OK, "%s",
                errbuf);
  return r;
}

/* The model of s (destroyed here) gives these ready times and this total. */
static void expect_timeline(tpu_df_spec *s, int64_t steps, const double *want, double total_s) {
  double ready[16];
  ck_assert(steps <= 16);
  tpu_df_model_result r = model_n(s, NULL, steps, ready);
  TU_EQ_U64(steps, r.steps);
  for (int64_t i = 0; i < steps; i++) NEAR(want[i], ready[i]);
  NEAR(total_s, r.total_s);
  tpu_df_spec_destroy(s);
}

START_TEST(Each_epoch_is_a_fresh_iteration_that_reopens_files_and_refills_prefetch) {
  /* the guide's ArtificialDataset (3 elements, 1 file, open 30 ms, read
  ** 15 ms), prefetch(1), train 10 ms, 2 epochs, by hand: the prefetch thread
  ** reads element i once the consumer took i-1; epoch 2's iterator is made
  ** when the consumer asks for its first batch (85 ms), so it opens the file
  ** again and nothing was read ahead: 85 + 30 + 15 = 130 ms */
  static const double fresh[6] = { 0.045, 0.060, 0.075, 0.130, 0.145, 0.160 };
  /* repeat(2) inside is one iterator: prefetch reads across the pass (the
  ** reopen starts at 75 ms, when the consumer took element 2) */
  static const double repeated[6] = { 0.045, 0.060, 0.075, 0.120, 0.135, 0.150 };
  tpu_df_spec *s = model_spec(3, 1, 0.03, 0.015, 1);
  ck_assert(tpu_df_spec_set_epochs(s, 2) == TPU_OK);
  double ready[6];
  tpu_df_model_result r = model_n(s, NULL, 6, ready);
  for (int i = 0; i < 6; i++) NEAR(fresh[i], ready[i]);
  NEAR(0.170, r.total_s);
  TU_EQ_U64(6, r.steps);                 /* and no more: two epochs of 3 */
  /* the timeline shows the two opens, the second at the second epoch's start */
  tpu_df_model_options o = tpu_df_model_options_default();
  o.timeline_steps = 6;
  tpu_df_model *m;
  ck_assert(tpu_df_model_create(s, &o, &m, errbuf, sizeof errbuf) == TPU_OK);
  for (double t = 0, got; (got = tpu_df_model_next(m, t)) >= 0;) t = got + 0.01;
  size_t n, opens = 0;
  const tpu_df_interval *iv = tpu_df_model_intervals(m, &n);
  static const double open_at[2] = { 0, 0.085 };
  for (size_t i = 0; i < n; i++)
    if (iv[i].kind == 'O') { ck_assert(opens < 2); NEAR(open_at[opens], iv[i].start_s); opens++; }
  TU_EQ_U64(2, opens);
  tpu_df_model_destroy(m);
  tpu_df_spec_destroy(s);
  s = model_spec(3, 1, 0.03, 0.015, 0);
  tpu_df_spec_repeat(s, 2);
  tpu_df_spec_prefetch(s, 1);
  expect_timeline(s, 6, repeated, 0.160);
}
END_TEST

START_TEST(Fresh_iterations_give_the_elements_of_repeat_passes_reshuffled) {
  int64_t a[200], b[200], n[2];
  for (int repeat = 0; repeat < 2; repeat++) {   /* 3 fresh epochs, then repeat(3) */
    tpu_df_spec *s = ids_spec(20);
    tpu_df_spec_shuffle(s, 20, 7);
    tpu_df_spec_batch(s, 6, false);
    ck_assert((repeat ? tpu_df_spec_repeat(s, 3) : tpu_df_spec_set_epochs(s, 3)) == TPU_OK);
    n[repeat] = read_ids(s, repeat ? b : a, 200, repeat ? 0 : 2);
    tpu_df_spec_destroy(s);
  }
  int64_t na = n[0], nb = n[1];
  tpu_df_spec *s;
  TU_EQ_U64(3 * 20 + 2, na);
  TU_EQ_U64(nb, na);
  for (int64_t i = 0; i < na; i++) TU_EQ_U64(b[i], a[i]);
  ck_assert(memcmp(a, a + 21, 20 * sizeof *a) != 0);   /* each epoch reshuffled */
  ck_assert(tpu_df_spec_set_epochs(s = ids_spec(4), 0) == TPU_ERR_CONFIG);
  ck_assert_msg(strstr(tpu_df_spec_errmsg(s), "epochs: expected 1..1000000") != NULL, "%s", tpu_df_spec_errmsg(s));
  tpu_df_spec_destroy(s);
}
END_TEST

/* 4 elements read in 1 ms each (no open), a 15 ms map with the given
** num_parallel_calls (0: none, a plain map), batch 1. */
static tpu_df_spec *map_spec(int par) {
  tpu_df_spec *s = model_spec(4, 1, 0, 0.001, 0);
  s->nst = 0;                            /* the map goes before model_spec's batch */
  tpu_df_spec_map(s, TPU_DF_MAP_NONE, NULL, par);
  tpu_df_spec_set_cost(s, "cost_per_element_s", 0.015);
  tpu_df_spec_batch(s, 1, false);
  return s;
}

START_TEST(A_map_with_one_parallel_call_runs_ahead_of_its_consumer) {
  /* plain map: read and map in the consumer's call, 16 ms after each request */
  static const double plain[4] = { 0.016, 0.042, 0.068, 0.094 };
  /* num_parallel_calls=1: one call in flight ahead: element i starts when
  ** the consumer took i-1, so ready(i) = ready(i-1) + 16 ms */
  static const double async[4] = { 0.016, 0.032, 0.048, 0.064 };
  expect_timeline(map_spec(0), 4, plain, 0.104);
  expect_timeline(map_spec(1), 4, async, 0.074);
}
END_TEST

START_TEST(Stages_before_repeat_restart_with_each_pass) {
  /* 2 elements, map(num_parallel_calls=2) of 15 ms, batch 1, repeat 2: the
  ** map reads both elements of pass 1 at once (16, 17 ms) but starts pass 2
  ** only when repeat is asked for it (36 ms): 36+1+15 = 52, then the second
  ** element's read waits for the first's (37+1+15 = 53) */
  static const double want[4] = { 0.016, 0.026, 0.052, 0.062 };
  tpu_df_spec *s = model_spec(2, 1, 0, 0.001, 0);
  s->nst = 0;
  tpu_df_spec_map(s, TPU_DF_MAP_NONE, NULL, 2);
  tpu_df_spec_set_cost(s, "cost_per_element_s", 0.015);
  tpu_df_spec_batch(s, 1, false);
  tpu_df_spec_repeat(s, 2);
  expect_timeline(s, 4, want, 0.072);
}
END_TEST

START_TEST(Overheads_add_per_iterator_and_per_asynchronous_hand_off) {
  /* the first test's fresh epochs with 5 ms per iterator made and 1 ms per
  ** element handed out by prefetch: each epoch starts 5 ms later, each
  ** element arrives 1 ms later and so delays the next read by 1 ms */
  static const double want[6] = { 0.051, 0.067, 0.083, 0.144, 0.160, 0.176 };
  tpu_df_spec *s = model_spec(3, 1, 0.03, 0.015, 1);
  tpu_df_spec_set_epochs(s, 2);
  s->iterator_overhead_s = 0.005;
  s->element_overhead_s = 0.001;
  expect_timeline(s, 6, want, 0.186);
}
END_TEST

START_TEST(Interleave_block_length_opens_each_file_at_its_first_block) {
  /* 12 elements in 4 files of 3, cycle 2, block 2, one thread, no prefetch:
  ** a group of two files reads f0[0,1] f1[0,1] f0[2] f1[2], so files open at
  ** positions 0 and 2 of each group of 6; each step waits its read (+ open) */
  tpu_df_spec *s = model_spec(12, 4, 0.03, 0.015, 0);
  s->nst = 0;
  tpu_df_spec_interleave(s, 2, 1);
  tpu_df_spec_interleave_block(s, 2);
  tpu_df_spec_batch(s, 1, false);
  double ready[12], t = 0;
  model_n(s, NULL, 12, ready);
  for (int i = 0; i < 12; i++) {
    t += (i % 6 == 0 || i % 6 == 2 ? 0.03 : 0) + 0.015;
    NEAR(t, ready[i]);
    t += 0.01;
  }
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Two_shuffles_compose_as_two_buffered_shuffles) {
  int64_t want[30], tmp[30];
  for (int i = 0; i < 30; i++) want[i] = i;
  df_buffered_shuffle(want, 30, 4, tpu_mix64(11 ^ tpu_mix64(1)), tmp);   /* epoch 0's keys, as build_order */
  df_buffered_shuffle(want, 30, 30, tpu_mix64(12 ^ tpu_mix64(1)), tmp);
  tpu_df_spec *s = ids_spec(30);
  tpu_df_spec_shuffle(s, 4, 11);
  tpu_df_spec_shuffle(s, 30, 12);
  tpu_df_spec_batch(s, 7, false);
  int64_t got[40];
  TU_EQ_U64(30, read_ids(s, got, 40, 1));
  for (int i = 0; i < 30; i++) TU_EQ_U64(want[i], got[i]);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(The_verdict_changes_at_five_and_twenty_percent_waiting) {
  static const struct { double share; const char *starts; } cases[] = {
    { 0.0, "not input-bound" }, { 0.0499999, "not input-bound" }, { 0.05, "moderately input-bound" },
    { 0.1999999, "moderately input-bound" }, { 0.20, "highly input-bound" }, { 1.0, "highly input-bound" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *v = tpu_df_verdict(cases[i].share);
    ck_assert_msg(strncmp(v, cases[i].starts, strlen(cases[i].starts)) == 0 && v[strlen(cases[i].starts)] == ':',
                  "%g: %s", cases[i].share, v);
  }
}
END_TEST

START_TEST(Json_epochs_and_overheads_parse_and_forever_needs_steps) {
  const char *ok = "{ \"source\": {\"kind\": \"synthetic\", \"n\": 3, \"shape\": [1], \"classes\": 2},"
                   " \"stages\": [ {\"op\": \"batch\", \"batch_size\": 1} ], \"consumer\": {\"epochs\": 4},"
                   " \"host\": {\"iterator_overhead_s\": 0.002, \"element_overhead_s\": 1e-5} }";
  tpu_df_spec *s;
  ck_assert_msg(tpu_df_spec_parse(ok, "e.json", &s, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  TU_EQ_U64(4, s->epochs);
  NEAR(0.002, s->iterator_overhead_s);
  NEAR(1e-5, s->element_overhead_s);
  tpu_df_model_result r;
  ck_assert(tpu_df_model_run(s, NULL, 0.01, NULL, NULL, s->steps, NULL, &r, errbuf, sizeof errbuf) == TPU_OK);
  TU_EQ_U64(12, r.steps);                /* until the data ends: 4 epochs of 3 */
  tpu_df_spec_destroy(s);
  const char *bad = "{ \"source\": {\"kind\": \"synthetic\", \"n\": 3, \"shape\": [1], \"classes\": 2},\n"
                    " \"stages\": [ {\"op\": \"batch\", \"batch_size\": 1}, {\"op\": \"repeat\"} ],\n"
                    " \"consumer\": {\"epochs\": 2} }";
  ck_assert(tpu_df_spec_parse(bad, "f.json", &s, errbuf, sizeof errbuf) == TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "f.json:3:") && strstr(errbuf, "'consumer.steps'") && strstr(errbuf, "repeats forever"),
                "%s", errbuf);
}
END_TEST

/* A stage of the take/skip/filter/shard list below: op, two numbers. */
typedef struct ix_stage { char op; int64_t a, b; } ix_stage;

static void add_ix(tpu_df_spec *s, ix_stage x) {
  int32_t labels[2] = { (int32_t)x.a, (int32_t)x.b };
  tpu_status st = x.op == 't' ? tpu_df_spec_take(s, x.a) : x.op == 's' ? tpu_df_spec_skip(s, x.a)
                : x.op == 'h' ? tpu_df_spec_shard(s, (int)x.a, (int)x.b)
                : tpu_df_spec_filter_labels(s, labels, x.b >= 0 ? 2 : 1, x.op == 'f');
  ck_assert_msg(st == TPU_OK, "%s", tpu_df_spec_errmsg(s));
}

/* s (destroyed here) read with 'threads' workers gives exactly these ids. */
static void expect_stream(tpu_df_spec *s, const int64_t *want, int64_t nwant, int threads) {
  int64_t got[64];
  const int64_t n = read_ids(s, got, 64, threads);
  tpu_df_spec_destroy(s);
  TU_EQ_U64(nwant, n);
  for (int64_t i = 0; i < n; i++) ck_assert_msg(got[i] == want[i], "element %lld: %lld", (long long)i, (long long)got[i]);
}

START_TEST(Take_skip_filter_and_shard_compose_in_any_order_before_batch) {
  /* 20 elements, id i has label i % 4; 't' take(a), 's' skip(a), 'h'
  ** shard(a, b), 'f' filter label_in [a] (or [a, b]), 'n' label_not_in;
  ** each expected stream derived by hand */
  static const struct { ix_stage st[4]; int n; int64_t want[10]; int nwant; } cases[] = {
    { { { 's', 3, 0 }, { 't', 5, 0 } }, 2, { 3, 4, 5, 6, 7 }, 5 },
    { { { 't', 5, 0 }, { 's', 3, 0 } }, 2, { 3, 4 }, 2 },
    { { { 'f', 1, -1 }, { 't', 3, 0 } }, 2, { 1, 5, 9 }, 3 },
    { { { 't', 3, 0 }, { 'f', 1, -1 } }, 2, { 1 }, 1 },
    { { { 'h', 2, 0 }, { 'n', 2, -1 } }, 2, { 0, 4, 8, 12, 16 }, 5 },
    { { { 'f', 0, 1 }, { 't', 4, 0 }, { 's', 1, 0 }, { 't', -1, 0 } }, 4, { 1, 4, 5 }, 3 },
    { { { 's', 2, 0 }, { 'h', 3, 1 }, { 'n', 1, 3 } }, 3, { 6, 12, 18 }, 3 },
    { { { 's', -1, 0 }, { 't', 1, 0 } }, 2, { 0 }, 0 },          /* nothing left: an error */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tpu_df_spec *s = ids_spec(20);
    for (int k = 0; k < cases[c].n; k++) add_ix(s, cases[c].st[k]);
    tpu_df_spec_batch(s, 2, false);
    if (cases[c].nwant == 0) {
      tpu_df *df;
      ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_CONFIG);
      ck_assert_msg(strstr(errbuf, "leaves no elements") != NULL, "%s", errbuf);
      tpu_df_spec_destroy(s);
      continue;
    }
    expect_stream(s, cases[c].want, cases[c].nwant, (int)(c % 3));
  }
}
END_TEST

START_TEST(Take_before_shuffle_keeps_one_set_take_after_a_new_one_each_epoch) {
  int64_t a[64];
  for (int after = 0; after < 2; after++) {
    tpu_df_spec *s = ids_spec(20);
    if (!after) tpu_df_spec_take(s, 5);
    tpu_df_spec_shuffle(s, 20, 3);
    if (after) tpu_df_spec_take(s, 5);
    tpu_df_spec_batch(s, 5, false);
    tpu_df_spec_repeat(s, 3);
    TU_EQ_U64(3 * 5 + 2, read_ids(s, a, 64, 2));
    bool first_five = true, same_sets = true;
    for (int e = 0; e < 3; e++) {
      int64_t sum = 0;
      for (int i = 0; i < 5; i++) { sum += a[e * 6 + i]; first_five &= a[e * 6 + i] < 5; }
      if (e && sum != a[0] + a[1] + a[2] + a[3] + a[4]) same_sets = false;
    }
    ck_assert_msg(after ? !(first_five && same_sets) : first_five, "after=%d", after);
    tpu_df_spec_destroy(s);
  }
}
END_TEST

START_TEST(The_model_counts_what_take_skip_and_filter_keep) {
  static const struct { const char *stage; int64_t steps; } cases[] = {
    { "{\"op\": \"take\", \"count\": 5}", 5 }, { "{\"op\": \"skip\", \"count\": 5}", 7 },
    { "{\"op\": \"filter\", \"label_in\": [0], \"keep_fraction\": 0.25}", 3 },
    { "{\"op\": \"filter\", \"label_not_in\": [0, 1]}", 12 },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char text[512];
    snprintf(text, sizeof text, "{ \"source\": {\"kind\": \"synthetic\", \"n\": 12, \"shape\": [1], \"classes\": 4},"
             " \"stages\": [ %s, {\"op\": \"batch\", \"batch_size\": 1} ] }", cases[c].stage);
    tpu_df_spec *s;
    ck_assert_msg(tpu_df_spec_parse(text, "m.json", &s, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
    tpu_df_model_result r;
    ck_assert(tpu_df_model_run(s, NULL, 0.01, NULL, NULL, 100, NULL, &r, errbuf, sizeof errbuf) == TPU_OK);
    TU_EQ_U64(cases[c].steps, r.steps);
    tpu_df_spec_destroy(s);
  }
  tpu_df_spec *s;
  ck_assert(tpu_df_spec_parse("{ \"source\": {\"kind\": \"synthetic\", \"n\": 12, \"shape\": [1], \"classes\": 4},\n"
                              " \"stages\": [ {\"op\": \"filter\", \"label_in\": [0], \"label_not_in\": [1]},"
                              " {\"op\": \"batch\", \"batch_size\": 1} ] }", "g.json", &s, errbuf, sizeof errbuf)
            == TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "g.json:2:") && strstr(errbuf, "'stages[0]'") && strstr(errbuf, "exactly one predicate"),
                "%s", errbuf);
  ck_assert(tpu_df_spec_parse("{ \"source\": {\"kind\": \"synthetic\", \"n\": 12, \"shape\": [1], \"classes\": 4},\n"
                              " \"stages\": [ {\"op\": \"batch\", \"batch_size\": 1}, {\"op\": \"take\", \"count\": 2} ] }",
                              "h.json", &s, errbuf, sizeof errbuf) == TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "take after batch is not supported") != NULL, "%s", errbuf);
}
END_TEST

/* {==================================================================
** The real-cost run (tpu_df_costrun)
** ================================================================== */
/* A pipeline of every kind of node the run makes threads for: a parallel
** interleave (lanes), a parallel map, a prefetch; 2 epochs. */
static tpu_df_spec *costed_spec(double scale) {
  tpu_df_spec *s = spec_of(synthetic(8, 1, 1, 1, 2));
  tpu_df_spec_set_cost(s, "files", 2);
  tpu_df_spec_set_cost(s, "open_latency_s", 0.010 * scale);
  tpu_df_spec_set_cost(s, "read_latency_s", 0.002 * scale);
  tpu_df_spec_interleave(s, 2, 2);
  tpu_df_spec_map(s, TPU_DF_MAP_NONE, NULL, 2);
  tpu_df_spec_set_cost(s, "cost_per_element_s", 0.004 * scale);
  tpu_df_spec_batch(s, 2, false);
  tpu_df_spec_prefetch(s, 1);
  tpu_df_spec_set_epochs(s, 2);
  return s;
}

START_TEST(The_real_cost_run_is_never_faster_than_the_model_and_refuses_what_is_modelled_only) {
  tpu_df_spec *s = costed_spec(1);
  tpu_df_model_result model, meas;
  ck_assert(tpu_df_model_run(s, NULL, 0.005, NULL, NULL, 100, NULL, &model, errbuf, sizeof errbuf) == TPU_OK);
  ck_assert_msg(tpu_df_costrun(s, NULL, 0.005, 100, &meas, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  TU_EQ_U64(8, model.steps);
  TU_EQ_U64(model.steps, meas.steps);
  /* sleeping every cost, the run cannot beat the ideal timeline (it would
  ** then overlap more than the semantics allow). How close it comes is a
  ** measurement of the host (a busy one slows it): make bench's
  ** tests/bench/b_datafeed.sh, not a bound here. */
  ck_assert_msg(meas.total_s >= model.total_s - 1e-3, "model %.4f s, measured %.4f s", model.total_s, meas.total_s);
  /* a run that ends inside an epoch stops every thread */
  ck_assert(tpu_df_costrun(s, NULL, 0.005, 3, &meas, errbuf, sizeof errbuf) == TPU_OK);
  TU_EQ_U64(3, meas.steps);
  tpu_df_spec_destroy(s);
  s = spec_of(synthetic(8, 1, 1, 1, 2));
  tpu_df_spec_batch(s, 2, false);
  tpu_df_spec_repeat(s, 2);
  ck_assert(tpu_df_costrun(s, NULL, 0.001, 4, &meas, errbuf, sizeof errbuf) == TPU_ERR_CONFIG);
  ck_assert_msg(strstr(errbuf, "a repeat stage is not run for real") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

static tpu_status costrun_once(void *ctx) {
  tpu_df_model_result r;
  return tpu_df_costrun(ctx, NULL, 0, 100, &r, errbuf, sizeof errbuf);
}
START_TEST(The_real_cost_run_survives_every_allocation_failure) {
  tpu_df_spec *s = costed_spec(0);
  tu_oom_sweep(500, costrun_once, s);
  tpu_df_spec_destroy(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("datafeed");
  TCase *tc = TU_CASE(s, "readers", 60, Idx_plain_and_gzip_decode_to_the_same_pixels_and_labels,
          Corrupt_gzip_data_is_reported_naming_the_file, A_gzip_trailer_is_checked_before_any_batch_is_made,
          Labels_out_of_range_and_missing_files_are_errors,
          Csv_reads_rows_and_rejects_ragged_lines_with_line_numbers, Npy_images_and_labels_load_and_bad_magic_is_named,
          Fashion_mnist_train_has_60000_images_of_28x28_in_10_classes, Without_cache_each_epoch_reads_the_files_again,
          Idx_of_rank_2_3_and_4_reads_rows_grey_and_colour_images,
          Cifar10_binary_files_read_channels_last_and_bad_records_are_named,
          Tfrecord_files_of_examples_read_every_record_in_order_and_interleaved);
  tcase_add_loop_test(tc, Tfrecord_corrupt_crc_truncation_and_bad_examples_name_file_and_record, 0,
                      (int)(sizeof SPOILED_TFR / sizeof SPOILED_TFR[0]));
  tcase_add_loop_test(tc, Truncated_or_bad_magic_idx_is_an_input_error_naming_the_file, 0,
                      (int)(sizeof SPOILED / sizeof SPOILED[0]));
  tcase_add_checked_fixture(tc, setup, teardown);
  tc = TU_CASE(s, "stages", 60, Shuffle_is_a_buffered_shuffle_like_tf_data,
               Batch_drop_remainder_keeps_or_drops_the_partial_batch, Shard_keeps_every_nth_element_from_index,
               Interleave_takes_elements_in_turn_from_cycle_length_files,
               Repeat_reshuffles_each_epoch_unless_the_shuffle_is_cached, Cache_freezes_random_maps_before_it_not_after,
               Map_functions_normalize_one_hot_flip_and_crop, Bytes_do_not_depend_on_threads_or_buffer_sizes,
               Synthetic_tokens_are_integer_ids_below_the_vocabulary,
               Seek_resumes_with_the_same_bytes_as_an_uninterrupted_run, Json_errors_name_the_file_field_and_line_column);
  tcase_add_checked_fixture(tc, setup, teardown);
  TU_CASE(s, "model", 60, Naive_model_alternates_open_read_and_train,
          Prefetch_model_overlaps_reading_with_training, Model_next_follows_a_consumer_with_varying_step_times,
          Autotune_picks_enough_parallel_map_calls_within_the_core_budget,
          Ray_examples_order_threads_then_processes_then_shared_memory);
  tc = TU_CASE(s, "iteration", 60, Each_epoch_is_a_fresh_iteration_that_reopens_files_and_refills_prefetch,
               Fresh_iterations_give_the_elements_of_repeat_passes_reshuffled,
               A_map_with_one_parallel_call_runs_ahead_of_its_consumer, Stages_before_repeat_restart_with_each_pass,
               Overheads_add_per_iterator_and_per_asynchronous_hand_off,
               The_verdict_changes_at_five_and_twenty_percent_waiting,
               Interleave_block_length_opens_each_file_at_its_first_block, Two_shuffles_compose_as_two_buffered_shuffles,
               Json_epochs_and_overheads_parse_and_forever_needs_steps,
               Take_skip_filter_and_shard_compose_in_any_order_before_batch,
               Take_before_shuffle_keeps_one_set_take_after_a_new_one_each_epoch,
               The_model_counts_what_take_skip_and_filter_keep);
  tcase_add_checked_fixture(tc, setup, teardown);
  TU_CASE(s, "oom", 120, Open_next_and_model_survive_every_allocation_failure,
          The_real_cost_run_survives_every_allocation_failure);
  TU_CASE(s, "costrun", 60, The_real_cost_run_is_never_faster_than_the_model_and_refuses_what_is_modelled_only);
  return tu_main(s);
}
