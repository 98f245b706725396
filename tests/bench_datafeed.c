/*
** bench_datafeed.c -- one pass over the 60,000 Fashion-MNIST training
** images (gunzip, decode, normalize to [0,1], buffered shuffle of 10,000,
** batch 128) by the datafeed pipeline with 2 worker threads, side by side
** with a plain single-threaded loop doing the same work.
**
** Goals (issue 5): the pipeline's first epoch at least as fast as the loop
** (>= 1.0x), an epoch from cache at least 3x the loop. The loop and the
** pipeline produce the same bytes (checked by a checksum), so the work is
** the same. Each side runs 3 times; the best time counts (the host is shared).
** Exit status 1 if a goal is missed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "datafeed/df_int.h"
#include "tests/test_util.h"

#define DIR "/usr/share/datasets/fashion-mnist"
#define SEED 7u
#define BATCH 128
#define SHUF 10000

static unsigned char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) { perror(p); exit(2); }
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)l);
  if (!b || fread(b, 1, (size_t)l, f) != (size_t)l) { perror(p); exit(2); }
  fclose(f);
  *n = (size_t)l;
  return b;
}
static unsigned char *gunzip(const char *p, size_t want) {
  size_t n;
  unsigned char *gz = slurp(p, &n), *out = malloc(want);
  z_stream z;
  memset(&z, 0, sizeof z);
  inflateInit2(&z, 16 + MAX_WBITS);
  z.next_in = gz; z.avail_in = (uInt)n; z.next_out = out; z.avail_out = (uInt)want;
  int r = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  free(gz);
  if (r != Z_STREAM_END) { fprintf(stderr, "%s: inflate failed\n", p); exit(2); }
  return out;
}
static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* The plain loop: returns a checksum of every batch in order. */
static double plain_loop(int64_t *images) {
  unsigned char *im = gunzip(DIR "/train-images-idx3-ubyte.gz", 16 + 60000u * 784u);
  unsigned char *lb = gunzip(DIR "/train-labels-idx1-ubyte.gz", 8 + 60000u);
  int64_t n = be32(im + 4);
  int d = (int)(be32(im + 8) * be32(im + 12));
  int64_t *ids = malloc((size_t)n * sizeof *ids), *tmp = malloc((size_t)n * sizeof *tmp);
  for (int64_t i = 0; i < n; i++) ids[i] = i;
  df_buffered_shuffle(ids, n, SHUF, tpu_mix64(tpu_mix64(SEED) ^ tpu_mix64(1)), tmp);
  float *x = malloc((size_t)BATCH * (size_t)d * sizeof *x);
  int32_t y[BATCH];
  double sum = 0;
  for (int64_t b = 0; b * BATCH < n; b++) {
    int size = n - b * BATCH < BATCH ? (int)(n - b * BATCH) : BATCH;
    for (int r = 0; r < size; r++) {
      const unsigned char *s = im + 16 + (size_t)ids[b * BATCH + r] * (size_t)d;
      for (int j = 0; j < d; j++) x[(size_t)r * d + j] = ((float)s[j] - 0.0f) / 255.0f;
      y[r] = lb[8 + ids[b * BATCH + r]];
    }
    sum += x[0] + x[(size_t)(size - 1) * d + d / 2] + y[size - 1];
  }
  *images = n;
  free(im); free(lb); free(ids); free(tmp); free(x);
  return sum;
}

static tpu_df_spec *make_spec(bool cache) {
  tpu_df_spec *s;
  if (tpu_df_spec_create(&s) != TPU_OK) exit(1);
  tpu_df_source src = tpu_df_source_default();
  src.dir = DIR;
  tpu_df_spec_set_source(s, &src);
  if (cache) tpu_df_spec_cache(s);                    /* the decoded dataset, once */
  tpu_df_spec_shuffle(s, SHUF, tpu_mix64(SEED));
  tpu_df_spec_map(s, TPU_DF_MAP_NORMALIZE, NULL, 2);
  tpu_df_spec_batch(s, BATCH, false);
  tpu_df_spec_prefetch(s, 2);
  tpu_df_spec_repeat(s, 2);
  return s;
}

int main(void) {
  double loop_best = 1e30, ep1_best = 1e30, ep2_best = 1e30, nocache_best = 1e30, loop_sum = 0, sum1 = 0;
  int64_t n = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = tu_now();
    loop_sum = plain_loop(&n);
    double t = tu_now() - t0;
    if (t < loop_best) loop_best = t;

    for (int cache = 1; cache >= 0; cache--) {
      tpu_df_spec *s = make_spec(cache);
      char err[512];
      tpu_df *df;
      t0 = tu_now();
      if (tpu_df_open(s, NULL, &df, err, sizeof err) != TPU_OK) { fprintf(stderr, "bench_datafeed: %s\n", err); return 2; }
      tpu_df_batch b;
      double t1 = 0, tl = t0, s1 = 0, s2 = 0;
      int64_t ep = 0;
      /* an epoch ends when its last batch has been taken: the wait for the
      ** next epoch's first batch (its files read again, without cache) is
      ** the next epoch's */
      while (tpu_df_next(df, &b) == TPU_OK && b.size) {
        if (b.epoch != ep) { t1 = tl; ep = b.epoch; }
        double v = b.x[0] + b.x[(size_t)(b.size - 1) * b.features + b.features / 2] + b.y[b.size - 1];
        if (b.epoch == 0) s1 += v; else s2 += v;
        tl = tu_now();
      }
      double t2 = tu_now();
      tpu_df_close(df);
      tpu_df_spec_destroy(s);
      if (cache) {
        sum1 = s1; (void)s2;
        if (t1 - t0 < ep1_best) ep1_best = t1 - t0;
        if (t2 - t1 < ep2_best) ep2_best = t2 - t1;
      } else if (t2 - t1 < nocache_best) {
        nocache_best = t2 - t1;
      }
    }
  }
  double r1 = loop_best / ep1_best, r2 = loop_best / ep2_best;
  printf("\n## datafeed: one pass over Fashion-MNIST train (60000 images: gunzip, decode, normalize, shuffle 10000, batch 128)\n\n");
  printf("| run | seconds | images/s | vs loop | goal |\n|---|---|---|---|---|\n");
  printf("| plain single-threaded loop | %.3f | %.0f | 1.00x | |\n", loop_best, (double)n / loop_best);
  printf("| datafeed, 2 workers + inflate thread, first epoch | %.3f | %.0f | %.2fx | >= 1.0x %s |\n",
         ep1_best, (double)n / ep1_best, r1, r1 >= 1.0 ? "ok" : "MISSED");
  printf("| datafeed, 2 workers, epoch from cache | %.3f | %.0f | %.2fx | >= 3x %s |\n",
         ep2_best, (double)n / ep2_best, r2, r2 >= 3.0 ? "ok" : "MISSED");
  printf("| datafeed, 2 workers, second epoch without cache (reads the file again) | %.3f | %.0f | %.2fx | |\n",
         nocache_best, (double)n / nocache_best, loop_best / nocache_best);
  printf("\nsame bytes as the loop: %s (checksum %.6f vs %.6f)\n", loop_sum == sum1 ? "yes" : "NO", sum1, loop_sum);
  return (r1 >= 1.0 && r2 >= 3.0 && loop_sum == sum1) ? 0 : 1;
}
