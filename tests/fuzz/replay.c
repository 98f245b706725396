/*
** The fuzz targets without libFuzzer (see fuzz.h): runs
** LLVMFuzzerTestOneInput once on each file named on the command line (a
** directory: each file in it, sorted), and prints how many it ran. Built
** by make for every target as build/MODE/tests/fuzz/NAME-replay.
**
** With FUZZ_OOM=1 each input is also run with its 1st, 2nd, ... allocation
** failing (tests/test_util.c's failing allocator), until a run makes no
** more allocations than the one that fails: each such run must end as the
** input's run without failures did, or in TPU_ERR_NOMEM (fuzz.h). ASan or
** valgrind see the leaks and crashes. Exit 1 on a wrong outcome.
** FUZZ_VERBOSE=1 prints each input's outcome (which seeds get deep).
*/
#include "tests/fuzz/fuzz.h"
#include "tests/test_util.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static long ran, oom_runs, wrong;
static bool oom;

static void run_input(const char *path, const unsigned char *buf, size_t n) {
  fz_reset();
  LLVMFuzzerTestOneInput(buf, n);
  const int want = fz_outcome();
  if (getenv("FUZZ_VERBOSE")) printf("%s: %s\n", path, tpu_status_str(want));
  for (int k = 1; oom && k < 1000000; k++) {
    fz_reset();
    tu_alloc_fail(k);
    LLVMFuzzerTestOneInput(buf, n);
    const int calls = tu_alloc_restore();
    oom_runs++;
    const int got = fz_outcome();
    if (got != want && got != TPU_ERR_NOMEM) {
      printf("%s: allocation %d failing: outcome %s, without failures %s\n", path, k, tpu_status_str(got),
             tpu_status_str(want));
      wrong++;
    }
    if (calls < k) break;
  }
}

static void run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { printf("replay: cannot read %s\n", path); exit(2); }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) { fprintf(stdout, "replay: out of memory\n"); exit(1); }
  run_input(path, buf, n);
  free(buf);
  ran++;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) { printf("replay: cannot read %s\n", path); exit(2); }
  if (!S_ISDIR(st.st_mode)) { run_file(path); return; }
  DIR *d = opendir(path);
  if (!d) { printf("replay: cannot read %s\n", path); exit(2); }
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (n + 1) * sizeof *names);
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) { run_file(names[i]); free(names[i]); }
  free(names);
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  const char *e = getenv("FUZZ_OOM");
  oom = e && *e && strcmp(e, "0");
  for (int i = 1; i < argc; i++) run_path(argv[i]);
  if (oom) printf("%s: %ld inputs, no crash; %ld runs with one allocation failing, %ld wrong outcomes\n",
                  argv[0], ran, oom_runs, wrong);
  else printf("%s: %ld inputs, no crash\n", argv[0], ran);
  return wrong ? 1 : 0;
}
