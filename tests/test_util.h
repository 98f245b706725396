/*
** test_util.h -- helpers shared by the libcheck suites and benchmarks.
*/
#ifndef TPU_TEST_UTIL_H
#define TPU_TEST_UTIL_H
#include <check.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Expected/Actual failure messages (Kunquat's KT_VALUES). */
#define TU_EQ_U64(expected, actual) do { \
  uint64_t e_ = (uint64_t)(expected), a_ = (uint64_t)(actual); \
  ck_assert_msg(e_ == a_, "%s\n  Expected: %llu\n  Actual:   %llu", #actual, \
                (unsigned long long)e_, (unsigned long long)a_); } while (0)
#define TU_EQ_BITS(expected, actual, what) do { \
  float e_ = (expected), a_ = (actual); uint32_t eb_, ab_; \
  memcpy(&eb_, &e_, 4); memcpy(&ab_, &a_, 4); \
  ck_assert_msg(eb_ == ab_, "%s\n  Expected: %a (0x%08x)\n  Actual:   %a (0x%08x)", \
                (what), (double)e_, eb_, (double)a_, ab_); } while (0)

/* splitmix64: a tiny seeded generator, identical on every platform. */
typedef struct tu_rng { uint64_t s; } tu_rng;
uint64_t tu_next(tu_rng *r);
double   tu_uniform(tu_rng *r);                 /* [0, 1) */
int      tu_range(tu_rng *r, int lo, int hi);   /* [lo, hi] */
float    tu_normal(tu_rng *r);                  /* N(0,1), Box-Muller */
/* Fills x with N(0,1) values rounded to bf16 when 'bf16' is set. */
void     tu_fill(tu_rng *r, float *x, size_t n, int bf16);

/* An allocator for tpu_set_alloc() that fails its tu_fail_at-th call
** (counting from 1 in tu_alloc_calls; any other value never fails), for
** sweeps that make every allocation fail in turn. Atomic, so pipelines
** with worker threads count every call. */
extern _Atomic int tu_fail_at, tu_alloc_calls;
void *tu_failing_alloc(void *ud, void *p, size_t n);

/* Wall-clock seconds (monotonic). */
double tu_now(void);
/* Runs a suite with CK_ENV verbosity; returns the number of failures. */
int tu_run_suite(Suite *s);
#endif
