/* Scratch files and a pipeline reader for the fuzz targets (see fuzz.h). */
#include "tests/fuzz/fuzz.h"

#include "datafeed/df.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static void cleanup(void) {
  char cmd[300];
  if (!dir[0]) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) { /* nothing to do: a leftover scratch dir in $TMPDIR */ }
}

/* The scratch files live in memory (/dev/shm) where the system has it,
** else in $TMPDIR ($FUZZ_SCRATCH chooses). A target rewrites them for every
** input, and on a disk file system that is the whole cost of a fast target:
** ext4 writes a file truncated and rewritten out at its close
** (auto_da_alloc), about a millisecond (fz_ckpt ran 741 inputs a second
** in build/, 29,000 in /dev/shm). */
static const char *scratch_base(void) {
  const char *s = getenv("FUZZ_SCRATCH");
  if (s && *s) return s;
  if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  s = getenv("TMPDIR");
  return s && *s ? s : "/tmp";
}

const char *fz_dir(void) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/tpusim-fuzz-XXXXXX", scratch_base());
    if (!mkdtemp(dir)) { perror("fuzz: mkdtemp"); abort(); }
    atexit(cleanup);
  }
  return dir;
}

void fz_write(const char *path, const void *data, size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) { perror("fuzz: scratch"); abort(); }
  const char *p = data;
  while (size > 0) {
    ssize_t w = write(fd, p, size);
    if (w <= 0) { perror("fuzz: write"); abort(); }
    p += w; size -= (size_t)w;
  }
  close(fd);
}

const char *fz_scratch(int slot, const void *data, size_t size) {
  static char path[8][320];
  if (slot < 0 || slot >= 8) abort();
  if (!path[slot][0]) snprintf(path[slot], sizeof path[slot], "%s/in%d", fz_dir(), slot);
  fz_write(path[slot], data, size);
  return path[slot];
}

char *fz_text(const uint8_t *data, size_t size) {
  char *t = malloc(size + 1);
  if (!t) abort();
  if (size) memcpy(t, data, size);
  t[size] = 0;
  return t;
}

static int outcome;

int fz_status(int st) {
  if (outcome != TPU_ERR_NOMEM) outcome = st;
  return st;
}
int fz_outcome(void) { return outcome; }
void fz_reset(void) { outcome = TPU_OK; }

void fz_read_all(const tpu_df_source *src) {
  tpu_df_spec *s = NULL;
  tpu_df *df = NULL;
  char err[1024];
  tpu_status st = tpu_df_spec_create(&s);
  if (!st) st = tpu_df_spec_set_source(s, src);
  if (!st) st = tpu_df_spec_batch(s, 2, false);
  tpu_df_options o = tpu_df_options_default();
  o.threads = 0;
  if (!st) st = tpu_df_open(s, &o, &df, err, sizeof err);
  fz_status(st);
  if (st) goto done;
  tpu_df_batch b;
  for (int i = 0; i < 1 << 16; i++) {
    st = tpu_df_next(df, &b);
    fz_status(st);
    if (st || b.size == 0) break;
  }
done:
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
}
