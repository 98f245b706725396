/*
** test_util.h -- helpers shared by the libcheck suites and benchmarks.
*/
#ifndef TPU_TEST_UTIL_H
#define TPU_TEST_UTIL_H
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "sim/sim.h"

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
/* Installs tu_failing_alloc with the count at 0 and allocation k failing
** (k <= 0: none fails, the calls are only counted). */
void tu_alloc_fail(int k);
/* Back to the default allocator; returns the allocations made since
** tu_alloc_fail. */
int  tu_alloc_restore(void);
/* The out-of-memory sweep: calls run(ctx) with allocation 1, then 2, 3, ...
** failing, until a run returns TPU_OK without having reached the failing
** allocation (limit - 1 runs at most, then the test fails). Every run must
** return TPU_OK or TPU_ERR_NOMEM, never crash or leak (ASan and valgrind
** check the leaks); run releases what it made and may check more. Returns
** the number of runs, the last one included. */
int  tu_oom_sweep(int limit, tpu_status (*run)(void *ctx), void *ctx);

/* A preset chip ("teach", "tpu-v2-8", ...); with cores > 0, that many
** cores, all on one chip. Fails the test if either is refused. */
tpu_chip_config tu_chip(const char *preset, int cores);

/* The data-parallel loop of bench_sim and check_sim: per core c, 'iters'
** times, DMA a (rows + 8c) x 128 bf16 tile in from HBM, multiply it by a
** 128 x 128 weight, relu, DMA the result out, double-buffered, with an
** all-reduce every 'allreduce_every' iterations. With after_seed, each op
** also waits, one time in two, for a random earlier op of its core
** ('after'), drawn from a generator seeded with *after_seed + c % 3 (cores
** differ, collectives agree). NULL if the program cannot be made. */
tpu_sim_program *tu_dp_program(int cores, int rows, int iters, int allreduce_every, const uint64_t *after_seed);

/* fn(p) runs after the test, in its teardown, last deferred first: for what
** a test's helpers make and the test need not free by hand. */
void tu_defer(void (*fn)(void *), void *p);

/* CRC-32C (Castagnoli), bit by bit: the tests' own, for the TFRecord files
** they write (TFRecord masks it). */
uint32_t tu_crc32c(const void *data, size_t n);

/* f32 results compared bit for bit, any NaN equal to any NaN (the MXU
** leaves a NaN's sign and payload unspecified): tu_same_f32 says whether
** a and b agree; tu_assert_same_f32 fails the test at the first element
** of e[0..n) and a[0..n) that does not, naming 'what'. */
bool tu_same_f32(float a, float b);
void tu_assert_same_f32(const float *e, const float *a, size_t n, const char *what);

/* A fresh directory /tmp/TAG.XXXXXX for the running test, removed with
** what it holds after the test (tu_defer); tu_path(name) is a path in it
** (eight rotating buffers). */
const char *tu_scratch(const char *tag);
const char *tu_path(const char *name);

/* Wall-clock seconds (monotonic); tu_cpu_now: CPU seconds of this thread,
** for goals per host core on a machine other processes share. */
double tu_now(void);
double tu_cpu_now(void);

/* Suites. TU_CASE adds to s a test case of the given tests (NULL: none, for
** a case of loop tests), with a timeout in seconds (0: check's default), and
** returns it, for fixtures and loop tests. After every test the default
** allocator is back and what the test deferred has run. TU_SLOW_CASE adds a
** case tagged "slow" only when TPU_SLOW is set (make test-all) and returns
** NULL otherwise. tu_main runs s with CK_ENV verbosity and gives main's exit
** status: 0 when every test passed, 1 otherwise. */
#define TU_CASE(s, name, timeout, ...) \
  tu_case((s), (name), (timeout), false, (const TTest *const[]){ __VA_ARGS__, NULL })
#define TU_SLOW_CASE(s, name, timeout, ...) \
  tu_case((s), (name), (timeout), true, (const TTest *const[]){ __VA_ARGS__, NULL })
TCase *tu_case(Suite *s, const char *name, int timeout, bool slow, const TTest *const *tests);
int tu_main(Suite *s);
#endif
