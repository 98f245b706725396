/* test_util.c -- see test_util.h. */
#include "tests/test_util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

uint64_t tu_next(tu_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double tu_uniform(tu_rng *r) { return (double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0); }
int tu_range(tu_rng *r, int lo, int hi) {
  return lo + (int)(tu_next(r) % (uint64_t)(hi - lo + 1));
}
float tu_normal(tu_rng *r) {
  double u1 = tu_uniform(r), u2 = tu_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
void tu_fill(tu_rng *r, float *x, size_t n, int bf16) {
  for (size_t i = 0; i < n; i++) x[i] = bf16 ? tpu_bf16_round(tu_normal(r)) : tu_normal(r);
}
double tu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
int tu_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_ENV);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf;
}

_Atomic int tu_fail_at, tu_alloc_calls;

void *tu_failing_alloc(void *ud, void *p, size_t n) {
  (void)ud;
  if (n == 0) { free(p); return NULL; }
  if (atomic_fetch_add(&tu_alloc_calls, 1) + 1 == atomic_load(&tu_fail_at)) return NULL;
  return realloc(p, n);
}
