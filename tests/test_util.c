/* test_util.c -- see test_util.h. */
#include "tests/test_util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
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
static double seconds_on(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
double tu_now(void) { return seconds_on(CLOCK_MONOTONIC); }
double tu_cpu_now(void) { return seconds_on(CLOCK_THREAD_CPUTIME_ID); }

_Atomic int tu_fail_at, tu_alloc_calls;

void *tu_failing_alloc(void *ud, void *p, size_t n) {
  (void)ud;
  if (n == 0) { free(p); return NULL; }
  if (atomic_fetch_add(&tu_alloc_calls, 1) + 1 == atomic_load(&tu_fail_at)) return NULL;
  return realloc(p, n);
}
void tu_alloc_fail(int k) {
  atomic_store(&tu_fail_at, k);
  atomic_store(&tu_alloc_calls, 0);
  tpu_set_alloc(tu_failing_alloc, NULL);
}
int tu_alloc_restore(void) {
  tpu_set_alloc(NULL, NULL);
  return atomic_load(&tu_alloc_calls);
}

int tu_oom_sweep(int limit, tpu_status (*run)(void *ctx), void *ctx) {
  for (int k = 1; k < limit; k++) {
    tu_alloc_fail(k);
    tpu_status st = run(ctx);
    const int calls = tu_alloc_restore();
    ck_assert_msg(st == TPU_OK || st == TPU_ERR_NOMEM, "allocation %d failing: status %s", k, tpu_status_str(st));
    if (st == TPU_OK && calls < k) return k;
  }
  ck_abort_msg("no run succeeded in %d runs, each with one allocation failing", limit - 1);
  return limit;
}

tpu_chip_config tu_chip(const char *preset, int cores) {
  tpu_chip_config c;
  char err[512], set[64];
  ck_assert_msg(tpu_chip_config_load(preset, &c, err, sizeof err) == TPU_OK, "%s: %s", preset, err);
  if (cores > 0) {        /* cores must stay a multiple of cores_per_chip at every step */
    const char *key[] = { "cores_per_chip", "cores", "cores_per_chip" };
    for (int i = 0; i < 3; i++) {
      snprintf(set, sizeof set, "%s=%d", key[i], i ? cores : 1);
      ck_assert_msg(tpu_chip_config_set(&c, set, err, sizeof err) == TPU_OK, "%s: %s", set, err);
    }
  }
  return c;
}

static tpu_status dp_core(tpu_sim_program *p, int c, int rows, int iters, int allreduce_every,
                          const uint64_t *after_seed) {
  tu_rng r = { after_seed ? *after_seed + (uint64_t)(c % 3) : 0 };
  const int64_t m = rows + 8 * c;
  int hx = tpu_sim_buffer(p, c, "hx", TPU_SIM_HBM, TPU_SIM_BF16, m, 128);
  int hy = tpu_sim_buffer(p, c, "hy", TPU_SIM_HBM, TPU_SIM_BF16, m, 128);
  int x[2] = { tpu_sim_buffer(p, c, "x0", TPU_SIM_VMEM, TPU_SIM_BF16, m, 128),
               tpu_sim_buffer(p, c, "x1", TPU_SIM_VMEM, TPU_SIM_BF16, m, 128) };
  int y[2] = { tpu_sim_buffer(p, c, "y0", TPU_SIM_VMEM, TPU_SIM_F32, m, 128),
               tpu_sim_buffer(p, c, "y1", TPU_SIM_VMEM, TPU_SIM_F32, m, 128) };
  int w = tpu_sim_buffer(p, c, "w", TPU_SIM_VMEM, TPU_SIM_BF16, 128, 128);
  int g = tpu_sim_buffer(p, c, "g", TPU_SIM_VMEM, TPU_SIM_F32, 8, 128);
  tpu_status st = TPU_OK;
  for (int i = 0, n = 0; i < iters && st == TPU_OK; i++) {
    const int q = i & 1;
    tpu_sim_op ops[] = {
      { .kind = TPU_SIM_DMA, .src = hx, .dst = x[q] },
      { .kind = TPU_SIM_MATMUL, .a = x[q], .b = w, .dst = y[q] },
      { .kind = TPU_SIM_VPU, .vpu_op = TPU_VPU_RELU, .in = { y[q] }, .out = { y[q] } },
      { .kind = TPU_SIM_DMA, .src = y[q], .dst = hy },
    };
    for (int k = 0; k < 4 && st == TPU_OK; k++, n++) {
      if (after_seed && n > 0 && tu_range(&r, 0, 1)) ops[k].after = tu_range(&r, 1, n);
      st = tpu_sim_add_op(p, c, &ops[k], NULL);
    }
    if (st == TPU_OK && i % allreduce_every == allreduce_every - 1) {
      tpu_sim_op ar = { .kind = TPU_SIM_COLLECTIVE, .coll = TPU_SIM_ALL_REDUCE, .src = g, .dst = g };
      st = tpu_sim_add_op(p, c, &ar, NULL);
      n++;
    }
  }
  return st;
}

tpu_sim_program *tu_dp_program(int cores, int rows, int iters, int allreduce_every, const uint64_t *after_seed) {
  tpu_sim_program *p;
  if (tpu_sim_program_create(cores, &p) != TPU_OK) return NULL;
  for (int c = 0; c < cores; c++)
    if (dp_core(p, c, rows, iters, allreduce_every, after_seed) != TPU_OK) {
      tpu_sim_program_destroy(p);
      return NULL;
    }
  return p;
}

static struct deferred { void (*fn)(void *); void *p; } *deferred;
static size_t ndeferred;

void tu_defer(void (*fn)(void *), void *p) {
  struct deferred *d = realloc(deferred, (ndeferred + 1) * sizeof *d);
  ck_assert_ptr_nonnull(d);
  deferred = d;
  deferred[ndeferred++] = (struct deferred){ fn, p };
}

uint32_t tu_crc32c(const void *data, size_t n) {
  const unsigned char *p = data;
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

static char scratch[256];

static void remove_scratch(void *dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", (const char *)dir);
  if (system(cmd) != 0) { /* best effort: /tmp is cleaned anyway */ }
  scratch[0] = 0;
}

const char *tu_scratch(const char *tag) {
  snprintf(scratch, sizeof scratch, "/tmp/%s.XXXXXX", tag);
  ck_assert_ptr_nonnull(mkdtemp(scratch));
  tu_defer(remove_scratch, scratch);
  return scratch;
}

const char *tu_path(const char *name) {
  static char p[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", scratch, name);
  return p[k];
}

static void after_test(void) {
  tpu_set_alloc(NULL, NULL);          /* a failed sweep leaves no hook behind */
  while (ndeferred > 0) {
    ndeferred--;
    deferred[ndeferred].fn(deferred[ndeferred].p);
  }
  free(deferred);
  deferred = NULL;
}

TCase *tu_case(Suite *s, const char *name, int timeout, bool slow, const TTest *const *tests) {
  if (slow && !getenv("TPU_SLOW")) return NULL;
  TCase *tc = tcase_create(name);
  if (slow) tcase_set_tags(tc, "slow");
  if (timeout > 0) tcase_set_timeout(tc, timeout);
  tcase_add_checked_fixture(tc, NULL, after_test);
  for (; *tests; tests++) tcase_add_test(tc, *tests);
  suite_add_tcase(s, tc);
  return tc;
}

int tu_main(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_ENV);
  int nf = srunner_ntests_failed(sr);
  srunner_free(sr);
  return nf ? 1 : 0;
}

bool tu_same_f32(float a, float b) {
  if (isnan(a) && isnan(b)) return true;
  return tpu_f32_bits(a) == tpu_f32_bits(b);
}

void tu_assert_same_f32(const float *e, const float *a, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!tu_same_f32(e[i], a[i])) TU_EQ_BITS(e[i], a[i], what);
}
