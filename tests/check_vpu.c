/*
** check_vpu.c -- the vector unit: op table, cost formula against hand counts,
** numerics against double-precision C math with the ulp bounds stated in
** vpu/vpu.h, the documented summation orders bit for bit, special values,
** optimizer steps against hand-computed values, and argument errors.
** Random inputs come from a fixed seed.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test_util.h"
#include "vpu/vpu.h"

#define N_RAND 20000

/* ulp of the exact result 'ref' in f32 (subnormal spacing below 2^-126). */
static double ulp_of(double ref) {
  int e;
  frexp(ref, &e);                     /* ref = f * 2^e, 0.5 <= |f| < 1 */
  if (e - 1 < -126) e = -125;
  return ldexp(1.0, e - 1 - 23);
}
/* Error of 'got' in ulps of 'ref'; 0 when both are the same special value,
** huge when one is special and the other is not. */
static double ulp_err(float got, double ref) {
  if (isnan(ref) || isnan(got)) return (isnan(ref) && isnan(got)) ? 0 : 1e30;
  if (isinf(ref) || isinf(got)) return ((double)got == ref || got == (float)ref) ? 0 : 1e30;
  if (ref == 0) return got == 0 ? 0 : fabs((double)got) / ldexp(1.0, -149);
  return fabs((double)got - ref) / ulp_of(ref);
}
/* The worst error seen per op name, printed when VPU_PRINT_ULPS is set
** (the figures quoted in docs/VPU.md). */
static struct { const char *name; double worst; } g_worst[16];
static void note_ulp(const char *name, double e) {
  for (int i = 0; i < 16; i++) {
    if (!g_worst[i].name) g_worst[i].name = name;
    if (strcmp(g_worst[i].name, name) == 0) { if (e > g_worst[i].worst) g_worst[i].worst = e; return; }
  }
}
static void print_ulps(void) {
  if (!getenv("VPU_PRINT_ULPS")) return;
  for (int i = 0; i < 16 && g_worst[i].name; i++)
    printf("max ulp %-13s %.3f\n", g_worst[i].name, g_worst[i].worst);
}
/* Both check macros call libcheck only on failure: a passing ck_assert
** writes to the parent through a pipe, which dominates a loop of millions. */
#define TU_ULP(got, ref, bound, what, in) do { \
  double e__ = ulp_err((got), (ref)); \
  note_ulp((what), e__); \
  if (!(e__ <= (bound))) ck_assert_msg(e__ <= (bound), "%s(%a): error %.3f ulp > %g\n  Expected: %.17g\n  Actual:   %a", \
                (what), (double)(in), e__, (double)(bound), (double)(ref), (double)(got)); } while (0)

#define EQ_BITS(expected, actual, what) do { \
  float ee_ = (expected), aa_ = (actual); \
  if (tpu_f32_bits(ee_) != tpu_f32_bits(aa_)) TU_EQ_BITS(ee_, aa_, what); } while (0)

/* A float of random sign and magnitude 2^[lo, hi). */
static float wide(tu_rng *r, int lo, int hi) {
  double m = 1.0 + tu_uniform(r);
  int e = lo + (int)(tu_uniform(r) * (hi - lo));
  float v = (float)ldexp(m, e - 1);
  return (tu_next(r) & 1) ? -v : v;
}
static float uni(tu_rng *r, double lo, double hi) { return (float)(lo + (hi - lo) * tu_uniform(r)); }

static tpu_vpu_args args_xy(int rows, int cols, const float *x, const float *y, float *out) {
  tpu_vpu_args a = { .rows = rows, .cols = cols, .x = x, .y = y, .out = out,
                     .p = tpu_vpu_params_default() };
  return a;
}

/* Runs a unary op over x (n values) into out with rows = 1. */
static void run1(tpu_vpu_op op, const float *x, float *out, int n) {
  tpu_vpu_args a = args_xy(1, n, x, NULL, out);
  ck_assert_int_eq(tpu_vpu_exec(op, &a), TPU_OK);
}
static void run2(tpu_vpu_op op, const float *x, const float *y, float *out, int n) {
  tpu_vpu_args a = args_xy(1, n, x, y, out);
  ck_assert_int_eq(tpu_vpu_exec(op, &a), TPU_OK);
}

/* {==================================================================
** The op table
** ================================================================== */
START_TEST(Every_op_name_parses_back_to_its_op) {
  for (int i = 0; i < TPU_VPU_OP_COUNT; i++) {
    tpu_vpu_op op;
    const char *name = tpu_vpu_op_name((tpu_vpu_op)i);
    ck_assert_msg(tpu_vpu_op_parse(name, &op) == 1, "%s", name);
    ck_assert_int_eq(op, i);
    for (int j = 0; j < i; j++) ck_assert_str_ne(name, tpu_vpu_op_name((tpu_vpu_op)j));
    ck_assert_str_ne(tpu_vpu_class_name(tpu_vpu_op_class((tpu_vpu_op)i)), "?");
    ck_assert_uint_ne(tpu_vpu_op_writes((tpu_vpu_op)i), 0);
  }
  tpu_vpu_op op = TPU_VPU_ADD;
  ck_assert_int_eq(tpu_vpu_op_parse("Add", &op), 0);
  ck_assert_int_eq(tpu_vpu_op_parse("", &op), 0);
  ck_assert_int_eq(tpu_vpu_op_parse(NULL, &op), 0);
  ck_assert_int_eq(op, TPU_VPU_ADD);
  ck_assert_str_eq(tpu_vpu_op_name(TPU_VPU_OP_COUNT), "?");
  ck_assert_str_eq(tpu_vpu_op_name(TPU_VPU_SOFTMAX_XENT), "softmax_xent");
  ck_assert(tpu_vpu_op_parse("cast_f32_bf16", &op) && op == TPU_VPU_CAST_BF16);
  ck_assert(tpu_vpu_op_parse("sigmoid_bce", &op) && op == TPU_VPU_SIGMOID_BCE);
  ck_assert(tpu_vpu_op_parse("binary_accuracy", &op) && op == TPU_VPU_BINARY_ACCURACY);
  ck_assert(tpu_vpu_op_parse("mse", &op) && op == TPU_VPU_MSE);
  ck_assert_int_eq(TPU_VPU_OP_COUNT, 47);
}
END_TEST

START_TEST(Operand_sizes_follow_the_table) {
  const int R = 5, C = 7;
  static const struct { tpu_vpu_op op; unsigned operand; int rows; size_t elems; } SIZE[] = {
    { TPU_VPU_ADD, TPU_VPU_O_Y, 5, 35 },              { TPU_VPU_BIAS_ADD, TPU_VPU_O_Y, 5, 7 },
    { TPU_VPU_ROW_SUM, TPU_VPU_O_OUT, 5, 5 },         { TPU_VPU_COL_MAX, TPU_VPU_O_OUT, 5, 7 },
    { TPU_VPU_SOFTMAX_XENT, TPU_VPU_O_OUT, 5, 5 },    { TPU_VPU_SOFTMAX_XENT, TPU_VPU_O_OUT2, 5, 35 },
    { TPU_VPU_SOFTMAX_XENT, TPU_VPU_O_LABELS, 5, 5 }, { TPU_VPU_ACCURACY, TPU_VPU_O_OUT, 5, 1 },
    { TPU_VPU_ARGMAX, TPU_VPU_O_IDX, 5, 5 },          { TPU_VPU_ADAM, TPU_VPU_O_V, 5, 35 },
    { TPU_VPU_MOMENTUM, TPU_VPU_O_V, 5, 0 },          { TPU_VPU_RELU, TPU_VPU_O_Y, 5, 0 },
    { TPU_VPU_ADD, TPU_VPU_O_X, 0, 0 },               { TPU_VPU_ADD, TPU_VPU_O_X | TPU_VPU_O_Y, 5, 0 },
    { TPU_VPU_SIGMOID_BCE, TPU_VPU_O_OUT, 5, 5 },     { TPU_VPU_SIGMOID_BCE, TPU_VPU_O_LABELS, 5, 5 },
    { TPU_VPU_BINARY_ACCURACY, TPU_VPU_O_OUT, 5, 1 }, { TPU_VPU_MSE, TPU_VPU_O_OUT, 5, 5 },
    { TPU_VPU_MSE, TPU_VPU_O_OUT2, 5, 35 },
  };
  for (size_t i = 0; i < sizeof SIZE / sizeof SIZE[0]; i++)
    ck_assert_msg(tpu_vpu_operand_elems(SIZE[i].op, SIZE[i].operand, SIZE[i].rows, C) == SIZE[i].elems,
                  "%s operand 0x%x of %dx%d: %zu elements, expected %zu", tpu_vpu_op_name(SIZE[i].op), SIZE[i].operand,
                  SIZE[i].rows, C, tpu_vpu_operand_elems(SIZE[i].op, SIZE[i].operand, SIZE[i].rows, C), SIZE[i].elems);
  /* the optimizer state is read and written; the inputs are only read */
  ck_assert_uint_eq(tpu_vpu_op_reads(TPU_VPU_ADAM) & tpu_vpu_op_writes(TPU_VPU_ADAM),
                    TPU_VPU_O_PARAM | TPU_VPU_O_M | TPU_VPU_O_V);
  ck_assert_uint_eq(tpu_vpu_op_reads(TPU_VPU_SOFTMAX_XENT), TPU_VPU_O_X | TPU_VPU_O_LABELS);
  ck_assert_uint_eq(tpu_vpu_op_reads(TPU_VPU_OP_COUNT), 0);
  /* every operand an op uses has a size */
  for (int i = 0; i < TPU_VPU_OP_COUNT; i++) {
    unsigned all = tpu_vpu_op_reads((tpu_vpu_op)i) | tpu_vpu_op_writes((tpu_vpu_op)i);
    for (unsigned b = 1; b <= TPU_VPU_O_V; b <<= 1)
      ck_assert_msg((tpu_vpu_operand_elems((tpu_vpu_op)i, b, R, C) != 0) == ((all & b) != 0),
                    "%s operand %u", tpu_vpu_op_name((tpu_vpu_op)i), b);
  }
}
END_TEST
START_TEST(Positional_operands_and_scalars_follow_bit_order) {
  unsigned l[4];
  ck_assert_int_eq(tpu_vpu_op_inputs(TPU_VPU_SUB, l), 2);
  ck_assert_uint_eq(l[0], TPU_VPU_O_X);
  ck_assert_uint_eq(l[1], TPU_VPU_O_Y);
  ck_assert_int_eq(tpu_vpu_op_outputs(TPU_VPU_SOFTMAX_XENT, l), 2);
  ck_assert_uint_eq(l[0], TPU_VPU_O_OUT);
  ck_assert_uint_eq(l[1], TPU_VPU_O_OUT2);
  ck_assert_int_eq(tpu_vpu_op_inputs(TPU_VPU_ADAM, l), 4);
  ck_assert(l[0] == TPU_VPU_O_PARAM && l[1] == TPU_VPU_O_GRAD && l[2] == TPU_VPU_O_M && l[3] == TPU_VPU_O_V);
  ck_assert_int_eq(tpu_vpu_op_outputs(TPU_VPU_ADAM, l), 3);
  ck_assert(l[0] == TPU_VPU_O_PARAM && l[1] == TPU_VPU_O_M && l[2] == TPU_VPU_O_V);
  ck_assert_int_eq(tpu_vpu_op_inputs(TPU_VPU_OP_COUNT, l), 0);
  for (int i = 0; i < TPU_VPU_OP_COUNT; i++) {
    int ni = tpu_vpu_op_inputs((tpu_vpu_op)i, l);
    ck_assert(ni >= 1 && ni <= 4);
    unsigned m = 0;
    for (int k = 0; k < ni; k++) { ck_assert(k == 0 || l[k] > l[k - 1]); m |= l[k]; }
    ck_assert_uint_eq(m, tpu_vpu_op_reads((tpu_vpu_op)i));
    int no = tpu_vpu_op_outputs((tpu_vpu_op)i, l);
    m = 0;
    for (int k = 0; k < no; k++) m |= l[k];
    ck_assert_uint_eq(m, tpu_vpu_op_writes((tpu_vpu_op)i));
  }
  /* scalars */
  ck_assert_ptr_null(tpu_vpu_op_scalars(TPU_VPU_ADD)[0]);
  ck_assert_ptr_null(tpu_vpu_op_scalars(TPU_VPU_OP_COUNT)[0]);
  ck_assert_str_eq(tpu_vpu_op_scalars(TPU_VPU_ADAM)[4], "step");
  tpu_vpu_params p = tpu_vpu_params_default(), q;
  const float sa[] = { 0.001f, 0.8f, 0.99f, 1e-8f, 7 };
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADAM, sa, 5, &q), TPU_OK);
  ck_assert(q.lr == 0.001f && q.beta1 == 0.8f && q.beta2 == 0.99f && q.eps == 1e-8f && q.step == 7);
  ck_assert(q.alpha == p.alpha && q.momentum == p.momentum);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_MOMENTUM, sa, 2, &q), TPU_OK);
  ck_assert(q.lr == 0.001f && q.momentum == 0.8f);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_SCALE, sa + 2, 1, &q), TPU_OK);
  ck_assert(q.alpha == 0.99f);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADD, NULL, 0, &q), TPU_OK);
  q.lr = 5;
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADAM, sa, 4, &q), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADD, sa, 1, &q), TPU_ERR_CONFIG);
  const float bad_step[] = { 0.001f, 0.8f, 0.99f, 1e-8f, 2.5f }, zero_step[] = { 0.001f, 0.8f, 0.99f, 1e-8f, 0 };
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADAM, bad_step, 5, &q), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_ADAM, zero_step, 5, &q), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_params_from_scalars(TPU_VPU_OP_COUNT, NULL, 0, &q), TPU_ERR_CONFIG);
  ck_assert(q.lr == 5);                       /* untouched on failure */
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Timing
** ================================================================== */
START_TEST(Default_config_matches_the_v2_preset_and_checks) {
  char err[256];
  tpu_chip_config c;
  ck_assert(tpu_chip_config_load("tpu-v2-8", &c, err, sizeof err) == TPU_OK);
  tpu_vpu_config d = tpu_vpu_config_default();
  ck_assert(memcmp(&c.vpu, &d, sizeof d) == 0);
  ck_assert_int_eq(tpu_vpu_config_check(&d), TPU_OK);
  for (const char *const *p = tpu_chip_preset_names(); *p; p++) {
    ck_assert(tpu_chip_config_load(*p, &c, err, sizeof err) == TPU_OK);
    ck_assert_int_eq(tpu_vpu_config_check(&c.vpu), TPU_OK);
  }
  tpu_vpu_config b = d; b.sublanes = 0;
  ck_assert_int_eq(tpu_vpu_config_check(&b), TPU_ERR_CONFIG);
  b = d; b.lanes = 4097;
  ck_assert_int_eq(tpu_vpu_config_check(&b), TPU_ERR_CONFIG);
  b = d; b.cycles_transcendental = 0;
  ck_assert_int_eq(tpu_vpu_config_check(&b), TPU_ERR_CONFIG);
  b = d; b.cycles_cross_sublane = 100001;
  ck_assert_int_eq(tpu_vpu_config_check(&b), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_config_check(NULL), TPU_ERR_CONFIG);
  ck_assert_uint_eq(tpu_vpu_cycles(&b, TPU_VPU_ADD, 8, 128), 0);
  ck_assert_uint_eq(tpu_vpu_registers(&b, 8, 128), 0);
}
END_TEST

START_TEST(Cycles_match_hand_counts_for_8x128_registers) {
  tpu_vpu_config c = tpu_vpu_config_default();   /* ew 1, div 4, tr 4, xl 4, xs 2 */
  /* element-wise: one cycle per register, partial registers count whole */
  TU_EQ_U64(1, tpu_vpu_cycles(&c, TPU_VPU_ADD, 8, 128));
  TU_EQ_U64(1, tpu_vpu_cycles(&c, TPU_VPU_ADD, 1, 1));
  TU_EQ_U64(2, tpu_vpu_cycles(&c, TPU_VPU_ADD, 9, 128));
  TU_EQ_U64(2, tpu_vpu_cycles(&c, TPU_VPU_MUL, 8, 129));
  TU_EQ_U64(4, tpu_vpu_cycles(&c, TPU_VPU_ADD, 9, 129));
  TU_EQ_U64(256, tpu_vpu_cycles(&c, TPU_VPU_ADD, 256, 1000));     /* 32 x 8 registers */
  TU_EQ_U64(256, tpu_vpu_registers(&c, 256, 1000));
  TU_EQ_U64(2, tpu_vpu_cycles(&c, TPU_VPU_RELU_GRAD, 8, 128));
  TU_EQ_U64(4, tpu_vpu_cycles(&c, TPU_VPU_DIV, 8, 128));
  TU_EQ_U64(4, tpu_vpu_cycles(&c, TPU_VPU_EXP, 3, 5));
  TU_EQ_U64(8, tpu_vpu_cycles(&c, TPU_VPU_RSQRT, 16, 100));
  /* row_sum: per row block, cb-1 adds then 7 cross-lane passes of 4 */
  TU_EQ_U64(28, tpu_vpu_cycles(&c, TPU_VPU_ROW_SUM, 8, 128));
  TU_EQ_U64(28, tpu_vpu_cycles(&c, TPU_VPU_ROW_MAX, 1, 1));
  TU_EQ_U64(32 * (7 + 28), tpu_vpu_cycles(&c, TPU_VPU_ROW_SUM, 256, 1000));
  /* col_sum: per column block, rb-1 adds then 3 cross-sublane passes of 2 */
  TU_EQ_U64(6, tpu_vpu_cycles(&c, TPU_VPU_COL_SUM, 8, 128));
  TU_EQ_U64(2 * (1 + 6), tpu_vpu_cycles(&c, TPU_VPU_COL_SUM, 16, 256));
  TU_EQ_U64(8 * (31 + 6), tpu_vpu_cycles(&c, TPU_VPU_COL_MAX, 256, 1000));
  /* softmax of 8x128: sub, exp, divide (1+4+4) plus two row reductions */
  TU_EQ_U64(9 + 2 * 28, tpu_vpu_cycles(&c, TPU_VPU_SOFTMAX, 8, 128));
  /* softmax_xent 8x10: 5 ew + div + exp, 3 row reductions, log and 2 adds per row block */
  TU_EQ_U64(13 + 3 * 28 + 6, tpu_vpu_cycles(&c, TPU_VPU_SOFTMAX_XENT, 8, 10));
  TU_EQ_U64(32 * 13 + 3 * 32 * 28 + 32 * 6, tpu_vpu_cycles(&c, TPU_VPU_SOFTMAX_XENT, 256, 10));  /* 3296 */
  /* argmax 16x10: 2 ew per register (2 regs), 2 row reductions per row block (2) */
  TU_EQ_U64(4 + 2 * 2 * 28, tpu_vpu_cycles(&c, TPU_VPU_ARGMAX, 16, 10));
  /* accuracy 16x10: argmax + compare per row block + sum of 2 row blocks */
  TU_EQ_U64(4 + 2 * 2 * 28 + 2 + (1 + 6), tpu_vpu_cycles(&c, TPU_VPU_ACCURACY, 16, 10));
  /* sigmoid_bce 256x1 (32 registers of one lane): 7 ew, a divide, exp and log1p */
  TU_EQ_U64(32 * (7 + 4 + 2 * 4), tpu_vpu_cycles(&c, TPU_VPU_SIGMOID_BCE, 256, 1));
  /* binary_accuracy 256x1: sigmoid (exp, divide), compare, equal, then the 32 registers summed */
  TU_EQ_U64(32 * (2 + 4 + 4) + (31 + 3 * 2), tpu_vpu_cycles(&c, TPU_VPU_BINARY_ACCURACY, 256, 1));
  /* mse 256x1: sub, square, gradient scale; a row sum (7 lane passes of 4) and a scale per row block */
  TU_EQ_U64(32 * 3 + 32 * 28 + 32, tpu_vpu_cycles(&c, TPU_VPU_MSE, 256, 1));
  TU_EQ_U64(2, tpu_vpu_cycles(&c, TPU_VPU_SGD, 8, 128));
  TU_EQ_U64(4 * 4, tpu_vpu_cycles(&c, TPU_VPU_MOMENTUM, 32, 128));
  TU_EQ_U64(12 + 2 * 4, tpu_vpu_cycles(&c, TPU_VPU_ADAM, 8, 128));
  /* the teach preset's 2 x 8 registers, cross_lane 2, cross_sublane 1 */
  tpu_vpu_config t = { 2, 8, 1, 4, 4, 2, 1 };
  TU_EQ_U64(2 * (1 + 3 * 2), tpu_vpu_cycles(&t, TPU_VPU_ROW_SUM, 3, 9));
  TU_EQ_U64(2 * (1 + 1 * 1), tpu_vpu_cycles(&t, TPU_VPU_COL_SUM, 3, 9));
  TU_EQ_U64(4, tpu_vpu_cycles(&t, TPU_VPU_ADD, 3, 9));
  /* one lane, one sublane: no tree at all */
  tpu_vpu_config one = { 1, 1, 1, 1, 1, 1, 1 };
  TU_EQ_U64(4, tpu_vpu_cycles(&one, TPU_VPU_ROW_SUM, 1, 5));
  TU_EQ_U64(0, tpu_vpu_cycles(&one, TPU_VPU_COL_SUM, 1, 5));
}
END_TEST

START_TEST(Cycles_reject_invalid_shapes_and_ops) {
  tpu_vpu_config c = tpu_vpu_config_default();
  TU_EQ_U64(0, tpu_vpu_cycles(&c, TPU_VPU_ADD, 0, 128));
  TU_EQ_U64(0, tpu_vpu_cycles(&c, TPU_VPU_ADD, 8, -1));
  TU_EQ_U64(0, tpu_vpu_cycles(&c, TPU_VPU_OP_COUNT, 8, 128));
  TU_EQ_U64(0, tpu_vpu_cycles(&c, (tpu_vpu_op)-1, 8, 128));
  TU_EQ_U64(0, tpu_vpu_cycles(NULL, TPU_VPU_ADD, 8, 128));
  TU_EQ_U64(0, tpu_vpu_cycles(&c, TPU_VPU_ADD, 2000000000, 2000000000));  /* > 2^40 */
  /* the largest shapes stay exact: 2^40 elements on 1x1 registers at max cost */
  tpu_vpu_config big = { 1, 1, 100000, 100000, 100000, 100000, 100000 };
  uint64_t cy = tpu_vpu_cycles(&big, TPU_VPU_ADAM, 1 << 20, 1 << 20);
  TU_EQ_U64((uint64_t)14 * 100000 << 40, cy);
}
END_TEST

/* Properties over random shapes and configs: element-wise ops cost
** registers x cost; every cost scales linearly with the config's costs. */
START_TEST(Cycles_scale_with_registers_and_costs) {
  tu_rng r = { 11 };
  for (int it = 0; it < 2000; it++) {
    tpu_vpu_config c = { tu_range(&r, 1, 16), tu_range(&r, 1, 256), tu_range(&r, 1, 9),
                         tu_range(&r, 1, 9), tu_range(&r, 1, 9), tu_range(&r, 1, 9),
                         tu_range(&r, 1, 9) };
    int rows = tu_range(&r, 1, 3000), cols = tu_range(&r, 1, 3000);
    uint64_t regs = tpu_vpu_registers(&c, rows, cols);
    TU_EQ_U64((uint64_t)((rows + c.sublanes - 1) / c.sublanes) * (uint64_t)((cols + c.lanes - 1) / c.lanes), regs);
    TU_EQ_U64(regs * (uint64_t)c.cycles_elementwise, tpu_vpu_cycles(&c, TPU_VPU_SUB, rows, cols));
    TU_EQ_U64(regs * (uint64_t)c.cycles_divide, tpu_vpu_cycles(&c, TPU_VPU_RECIPROCAL, rows, cols));
    TU_EQ_U64(regs * (uint64_t)c.cycles_transcendental, tpu_vpu_cycles(&c, TPU_VPU_TANH, rows, cols));
    tpu_vpu_config c3 = c;
    c3.cycles_elementwise *= 3; c3.cycles_divide *= 3; c3.cycles_transcendental *= 3;
    c3.cycles_cross_lane *= 3; c3.cycles_cross_sublane *= 3;
    for (int op = 0; op < TPU_VPU_OP_COUNT; op++) {
      uint64_t a = tpu_vpu_cycles(&c, (tpu_vpu_op)op, rows, cols);
      ck_assert_uint_gt(a, 0);
      TU_EQ_U64(3 * a, tpu_vpu_cycles(&c3, (tpu_vpu_op)op, rows, cols));
      /* softmax costs at least its row_max + row_sum; reductions cost more than a pass */
      if (op == TPU_VPU_SOFTMAX)
        ck_assert_uint_ge(a, 2 * tpu_vpu_cycles(&c, TPU_VPU_ROW_SUM, rows, cols));
    }
  }
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Numerics: element-wise against double
** ================================================================== */
START_TEST(Binary_ops_are_correctly_rounded) {
  tu_rng r = { 1 };
  static float x[N_RAND], y[N_RAND], o[N_RAND];
  for (int i = 0; i < N_RAND; i++) { x[i] = wide(&r, -60, 60); y[i] = wide(&r, -60, 60); }
  for (int i = 0; i < 1000; i++) y[i] = x[i] * uni(&r, 0.5, 2);   /* cancellation */
  const tpu_vpu_op ops[] = { TPU_VPU_ADD, TPU_VPU_SUB, TPU_VPU_MUL, TPU_VPU_DIV };
  for (size_t k = 0; k < 4; k++) {
    run2(ops[k], x, y, o, N_RAND);
    for (int i = 0; i < N_RAND; i++) {
      double a = x[i], b = y[i], ref = k == 0 ? a + b : k == 1 ? a - b : k == 2 ? a * b : a / b;
      EQ_BITS((float)ref, o[i], tpu_vpu_op_name(ops[k]));   /* double then f32 rounds once */
    }
  }
  run2(TPU_VPU_MAX, x, y, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) EQ_BITS(x[i] > y[i] ? x[i] : y[i], o[i], "max");
  run2(TPU_VPU_MIN, x, y, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) EQ_BITS(x[i] < y[i] ? x[i] : y[i], o[i], "min");
  run1(TPU_VPU_RECIPROCAL, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) EQ_BITS((float)(1.0 / x[i]), o[i], "reciprocal");
}
END_TEST

START_TEST(Transcendentals_meet_their_ulp_bounds) {
  tu_rng r = { 2 };
  static float x[N_RAND], o[N_RAND];
  /* exp over its whole finite range, including subnormal results */
  for (int i = 0; i < N_RAND; i++) x[i] = uni(&r, -103, 88.7);
  run1(TPU_VPU_EXP, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) {
    double ref = exp((double)x[i]);
    TU_ULP(o[i], ref, 1, "exp", x[i]);
  }
  for (int i = 0; i < N_RAND; i++) x[i] = fabsf(wide(&r, -149, 128));
  run1(TPU_VPU_LOG, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) TU_ULP(o[i], log((double)x[i]), 1, "log", x[i]);
  run1(TPU_VPU_RSQRT, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) TU_ULP(o[i], 1.0 / sqrt((double)x[i]), 2, "rsqrt", x[i]);
  for (int i = 0; i < N_RAND; i++) x[i] = (i & 1) ? uni(&r, -12, 12) : wide(&r, -40, 3);
  run1(TPU_VPU_TANH, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) {
    TU_ULP(o[i], tanh((double)x[i]), 3, "tanh", x[i]);
  }
  for (int i = 0; i < N_RAND; i++) x[i] = (i & 1) ? uni(&r, -110, 100) : wide(&r, -40, 4);
  run1(TPU_VPU_SIGMOID, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) {
    double ref = 1.0 / (1.0 + exp(-(double)x[i]));
    TU_ULP(o[i], ref, 3, "sigmoid", x[i]);
  }
  print_ulps();
}
END_TEST

/* Slow (TPU_SLOW=1, make test-all): every 127th f32 bit pattern, about 34
** million inputs covering every exponent, through each transcendental. */
START_TEST(Transcendentals_meet_their_bounds_across_all_floats) {
  enum { CH = 1 << 16 };
  static float x[CH], o[6][CH];
  const tpu_vpu_op ops[6] = { TPU_VPU_EXP, TPU_VPU_LOG, TPU_VPU_TANH, TPU_VPU_SIGMOID,
                              TPU_VPU_RSQRT, TPU_VPU_RECIPROCAL };
  uint64_t u = 0;
  while (u <= 0xffffffffu) {
    int n = 0;
    for (; n < CH && u <= 0xffffffffu; n++, u += 127) x[n] = tpu_f32_from_bits((uint32_t)u);
    for (int k = 0; k < 6; k++) run1(ops[k], x, o[k], n);
    for (int i = 0; i < n; i++) {
      double d = x[i];
      TU_ULP(o[0][i], exp(d), 1, "exp", x[i]);
      TU_ULP(o[1][i], log(d), 1, "log", x[i]);
      TU_ULP(o[2][i], tanh(d), 3, "tanh", x[i]);
      TU_ULP(o[3][i], 1.0 / (1.0 + exp(-d)), 3, "sigmoid", x[i]);
      TU_ULP(o[4][i], 1.0 / sqrt(d), 2, "rsqrt", x[i]);
      EQ_BITS((float)(1.0 / d), o[5][i], "reciprocal");
    }
  }
  print_ulps();
}
END_TEST

START_TEST(Activations_and_gradients_meet_their_bounds) {
  tu_rng r = { 3 };
  static float x[N_RAND], y[N_RAND], o[N_RAND];
  for (int i = 0; i < N_RAND; i++) { x[i] = tu_normal(&r) * 3; y[i] = tu_normal(&r); }
  run1(TPU_VPU_RELU, x, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) EQ_BITS(x[i] > 0 ? x[i] : 0.0f, o[i], "relu");
  run2(TPU_VPU_RELU_GRAD, x, y, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) EQ_BITS(x[i] > 0 ? y[i] : 0.0f, o[i], "relu_grad");
  /* tanh_grad and sigmoid_grad take the forward output */
  for (int i = 0; i < N_RAND; i++) x[i] = (i & 1) ? uni(&r, -1, 1) : tanhf(uni(&r, -9, 9));
  run2(TPU_VPU_TANH_GRAD, x, y, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) {
    double t = x[i];
    TU_ULP(o[i], (double)y[i] * (1 - t * t), 3, "tanh_grad", x[i]);
  }
  for (int i = 0; i < N_RAND; i++) x[i] = (i & 1) ? uni(&r, 0, 1) : 1.0f / (1.0f + expf(uni(&r, -17, 17)));
  run2(TPU_VPU_SIGMOID_GRAD, x, y, o, N_RAND);
  for (int i = 0; i < N_RAND; i++) {
    double s = x[i];
    TU_ULP(o[i], (double)y[i] * (s * (1 - s)), 3, "sigmoid_grad", x[i]);
  }
  print_ulps();
  /* scale, add_scalar and bias_add are single correctly rounded operations */
  tpu_vpu_args a = args_xy(100, 200, x, y, o);
  a.p.alpha = 0.3f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SCALE, &a), TPU_OK);
  for (int i = 0; i < 20000; i++) EQ_BITS((float)(0.3f * (double)x[i]), o[i], "scale");
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD_SCALAR, &a), TPU_OK);
  for (int i = 0; i < 20000; i++) EQ_BITS((float)(0.3f + (double)x[i]), o[i], "add_scalar");
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_BIAS_ADD, &a), TPU_OK);   /* y[0..199] is the bias */
  for (int i = 0; i < 20000; i++) EQ_BITS((float)((double)x[i] + y[i % 200]), o[i], "bias_add");
}
END_TEST

/* Keras' ReLU(max_value): relu_cap clips to [0, alpha], relu_cap_grad passes
** dy strictly inside; the cap must be >= 0 (+inf is plain relu). */
/* gelu (both forms), swish and leaky_relu against their formulas in
** double; the smooth gradients within 1 ulp plus 2^-50 |dy| (they cross
** zero), leaky_relu exact, its bad slopes refused. */
START_TEST(Transformer_activations_match_their_formulas) {
  tu_rng r = { 29 };
  enum { n = 4000 };
  static float x[n], dy[n], o[n];
  for (int i = 0; i < n; i++) { x[i] = (float)uni(&r, -9, 9); dy[i] = tu_normal(&r); }
  const double k = 0.7978845608028654, c = 0.044715;
  const tpu_vpu_op ops[] = { TPU_VPU_GELU, TPU_VPU_GELU_GRAD, TPU_VPU_GELU_TANH, TPU_VPU_GELU_TANH_GRAD,
                             TPU_VPU_SWISH, TPU_VPU_SWISH_GRAD };
  for (size_t q = 0; q < sizeof ops / sizeof ops[0]; q++) {
    tpu_vpu_args a = args_xy(1, n, x, dy, o);
    ck_assert_int_eq(tpu_vpu_exec(ops[q], &a), TPU_OK);
    for (int i = 0; i < n; i++) {
      const double v = x[i], d = dy[i], t = tanh(k * (v + c * v * v * v)), s = 1 / (1 + exp(-v));
      const double ref = q == 0 ? 0.5 * v * (1 + erf(v / sqrt(2.0)))
                       : q == 1 ? d * (0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-v * v / 2) / sqrt(2 * M_PI))
                       : q == 2 ? 0.5 * v * (1 + t)
                       : q == 3 ? d * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * c * v * v))
                       : q == 4 ? v * s : d * (s + v * s * (1 - s));
      const double err = fabs((double)o[i] - ref), tol = ulp_of(ref) + (q % 2 ? 0x1p-50 * fabs(d) : 0) + 1e-300;
      if (!(err <= tol)) ck_assert_msg(0, "%s(%a, %a): %a, want %.17g", tpu_vpu_op_name(ops[q]), x[i], dy[i], o[i], ref);
    }
  }
  tpu_vpu_args a = args_xy(1, n, x, dy, o);
  a.p.alpha = 0.3f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_LEAKY_RELU, &a), TPU_OK);
  for (int i = 0; i < n; i++) EQ_BITS(x[i] > 0 ? x[i] : 0.3f * x[i], o[i], "leaky_relu");
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_LEAKY_RELU_GRAD, &a), TPU_OK);
  for (int i = 0; i < n; i++) EQ_BITS(x[i] > 0 ? dy[i] : 0.3f * dy[i], o[i], "leaky_relu_grad");
  const float bad[] = { -0.1f, INFINITY, NAN };   /* slopes refused */
  for (int b = 0; b < 6; b++) {
    a.p.alpha = bad[b % 3];
    ck_assert_int_eq(tpu_vpu_exec(b < 3 ? TPU_VPU_LEAKY_RELU : TPU_VPU_LEAKY_RELU_GRAD, &a), TPU_ERR_CONFIG);
  }
  ck_assert_str_eq(tpu_vpu_op_scalars(TPU_VPU_LEAKY_RELU_GRAD)[0], "alpha");
}
END_TEST

START_TEST(Capped_relu_clips_and_its_gradient_passes_inside_the_cap) {
  const float nan = NAN;
  float x[] = { -1.0f, -0.0f, 0.0f, 0x1p-149f, 3.0f, 6.0f, 6.5f, INFINITY, nan };
  float y[] = { 2, 2, 2, 2, 2, 2, 2, 2, 2 };
  const float want[] = { 0, 0, 0, 0x1p-149f, 3, 6, 6, 6 }, dwant[] = { 0, 0, 0, 2, 2, 0, 0, 0 };
  enum { K = 9 };
  float o[K];
  tpu_vpu_args a = args_xy(1, K, x, y, o);
  a.p.alpha = 6.0f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP, &a), TPU_OK);
  for (int i = 0; i < K - 1; i++) EQ_BITS(want[i], o[i], "relu_cap");
  ck_assert(isnan(o[K - 1]));
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP_GRAD, &a), TPU_OK);
  for (int i = 0; i < K - 1; i++) EQ_BITS(dwant[i], o[i], "relu_cap_grad");
  ck_assert(isnan(o[K - 1]));
  /* the gradient from the forward output agrees (relu_cap's output in x) */
  float fo[K];
  a.out = fo;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP, &a), TPU_OK);
  a.x = fo;
  a.out = o;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP_GRAD, &a), TPU_OK);
  for (int i = 0; i < K - 1; i++) EQ_BITS(dwant[i], o[i], "relu_cap_grad of the output");
  /* +inf: plain relu */
  a.x = x;
  a.p.alpha = INFINITY;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP, &a), TPU_OK);
  EQ_BITS(6.5f, o[6], "relu_cap inf");
  a.p.alpha = -1.0f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP, &a), TPU_ERR_CONFIG);
  a.p.alpha = nan;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU_CAP_GRAD, &a), TPU_ERR_CONFIG);
  ck_assert_str_eq(tpu_vpu_op_scalars(TPU_VPU_RELU_CAP)[0], "alpha");
}
END_TEST

START_TEST(Special_values_follow_ieee) {
  const float inf = INFINITY, nan = NAN;
  float x[] = { nan, inf, -inf, 0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, 3.4e38f };
  float y[] = { 1.0f, 1.0f, 1.0f, -0.0f, 0.0f, nan, -inf, 0.0f, 3.4e38f };
  enum { K = 9 };
  float o[K];
  run2(TPU_VPU_MAX, x, y, o, K);
  ck_assert(isnan(o[0]) && isnan(o[5]));
  EQ_BITS(inf, o[1], "max(inf,1)");
  EQ_BITS(1.0f, o[2], "max(-inf,1)");
  EQ_BITS(0.0f, o[3], "max(+0,-0)");
  EQ_BITS(0.0f, o[4], "max(-0,+0)");
  EQ_BITS(-1.0f, o[6], "max(-1,-inf)");
  run2(TPU_VPU_MIN, x, y, o, K);
  ck_assert(isnan(o[0]) && isnan(o[5]));
  EQ_BITS(-0.0f, o[3], "min(+0,-0)");
  EQ_BITS(-0.0f, o[4], "min(-0,+0)");
  EQ_BITS(-inf, o[6], "min(-1,-inf)");
  run2(TPU_VPU_ADD, x, y, o, K);
  ck_assert(isnan(o[0]));
  EQ_BITS(inf, o[8], "add overflows to inf");
  run1(TPU_VPU_RELU, x, o, K);
  ck_assert(isnan(o[0]));
  EQ_BITS(inf, o[1], "relu(inf)");
  EQ_BITS(0.0f, o[2], "relu(-inf)");
  EQ_BITS(0.0f, o[4], "relu(-0)");
  run2(TPU_VPU_RELU_GRAD, x, y, o, K);
  ck_assert(isnan(o[0]));
  EQ_BITS(0.0f, o[2], "relu_grad(-inf)");
  EQ_BITS(0.0f, o[6], "relu_grad(-1, dy=-inf)");
  ck_assert(isnan(o[5]));                     /* x = 1 passes dy = NaN */
  float zx[] = { 0.0f, -0.0f, 0x1p-149f }, zdy[] = { 5.0f, 5.0f, 5.0f };
  run2(TPU_VPU_RELU_GRAD, zx, zdy, o, 3);
  EQ_BITS(0.0f, o[0], "relu_grad at +0 is 0");
  EQ_BITS(0.0f, o[1], "relu_grad at -0 is 0");
  EQ_BITS(5.0f, o[2], "relu_grad at the smallest positive passes dy");
  run1(TPU_VPU_EXP, x, o, K);
  ck_assert(isnan(o[0]));
  EQ_BITS(inf, o[1], "exp(inf)");
  EQ_BITS(0.0f, o[2], "exp(-inf)");
  EQ_BITS(1.0f, o[4], "exp(-0)");
  EQ_BITS(inf, o[8], "exp(huge)");
  run1(TPU_VPU_LOG, x, o, K);
  EQ_BITS(-inf, o[3], "log(+0)");
  EQ_BITS(-inf, o[4], "log(-0)");
  ck_assert(isnan(o[6]));
  EQ_BITS(inf, o[1], "log(inf)");
  EQ_BITS((float)log(0x1p-149), o[7], "log(min subnormal)");
  run1(TPU_VPU_RECIPROCAL, x, o, K);
  EQ_BITS(-inf, o[4], "1/-0");
  EQ_BITS(0.0f, o[1], "1/inf");
  EQ_BITS(inf, o[7], "1/min subnormal");
  run1(TPU_VPU_RSQRT, x, o, K);
  EQ_BITS(inf, o[3], "rsqrt(+0)");
  EQ_BITS(0.0f, o[1], "rsqrt(inf)");
  ck_assert(isnan(o[6]));
  run1(TPU_VPU_TANH, x, o, K);
  EQ_BITS(1.0f, o[1], "tanh(inf)");
  EQ_BITS(-1.0f, o[2], "tanh(-inf)");
  EQ_BITS(-0.0f, o[4], "tanh(-0)");
  ck_assert(isnan(o[0]));
  run1(TPU_VPU_SIGMOID, x, o, K);
  EQ_BITS(1.0f, o[1], "sigmoid(inf)");
  EQ_BITS(0.0f, o[2], "sigmoid(-inf)");
  EQ_BITS(0.5f, o[3], "sigmoid(0)");
  EQ_BITS(0.5f, o[4], "sigmoid(-0)");
  ck_assert(isnan(o[0]));
  /* sigmoid keeps tiny results instead of overflowing exp(-x) */
  float big[] = { -100.0f, -90.0f, 100.0f };
  run1(TPU_VPU_SIGMOID, big, o, 3);
  TU_ULP(o[0], 1.0 / (1.0 + exp(100.0)), 1, "sigmoid", -100.0f);
  TU_ULP(o[1], 1.0 / (1.0 + exp(90.0)), 1, "sigmoid", -90.0f);
  EQ_BITS(1.0f, o[2], "sigmoid(100)");
  /* casts: round to nearest even, NaN stays NaN, inf stays inf */
  float c[] = { 1.00390625f, 1.01171875f, 0x1.fffffep127f, nan, -0.0f, 1.0f + 0x1p-8f + 0x1p-20f };
  run1(TPU_VPU_CAST_BF16, c, o, 6);
  EQ_BITS(1.0f, o[0], "tie to even, down");
  EQ_BITS(1.015625f, o[1], "tie to even, up");
  EQ_BITS(inf, o[2], "f32 max rounds to inf");
  ck_assert(isnan(o[3]));
  EQ_BITS(-0.0f, o[4], "-0");
  EQ_BITS(1.0078125f, o[5], "above the tie rounds up");
  float w[] = { 1.5f, -0.0f, nan, 0x1p-133f };
  run1(TPU_VPU_COPY, w, o, 4);
  for (int i = 0; i < 4; i++) ck_assert(memcmp(&w[i], &o[i], 4) == 0);
  run1(TPU_VPU_CAST_F32, w, o, 4);
  for (int i = 0; i < 4; i++) EQ_BITS(w[i], o[i], "widening is exact");
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Reductions, softmax, cross-entropy, argmax
** ================================================================== */
START_TEST(Reductions_follow_the_documented_order_bit_for_bit) {
  tu_rng r = { 4 };
  const int sizes[] = { 1, 2, 7, 127, 128, 129, 300 };
  static float x[300 * 300], o[300], ref[300];
  for (size_t si = 0; si < 7; si++)
    for (size_t sj = 0; sj < 7; sj++) {
      int R = sizes[si], C = sizes[sj];
      for (int i = 0; i < R * C; i++) x[i] = tu_normal(&r) * (float)(1 + (i % 5) * 1000);
      tpu_vpu_args a = args_xy(R, C, x, NULL, o);
      ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ROW_SUM, &a), TPU_OK);
      for (int i = 0; i < R; i++) {
        float s = x[i * C];
        double d = x[i * C], ab = fabs(x[i * C]);
        for (int j = 1; j < C; j++) { s += x[i * C + j]; d += x[i * C + j]; ab += fabs(x[i * C + j]); }
        EQ_BITS(s, o[i], "row_sum is left to right");
        ck_assert(fabs(o[i] - d) <= (C - 1) * 0x1p-24 * ab);
      }
      ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_COL_SUM, &a), TPU_OK);
      for (int j = 0; j < C; j++) {
        float s = x[j];
        double d = x[j], ab = fabs(x[j]);
        for (int i = 1; i < R; i++) { s += x[i * C + j]; d += x[i * C + j]; ab += fabs(x[i * C + j]); }
        EQ_BITS(s, o[j], "col_sum is top to bottom");
        ck_assert(fabs(o[j] - d) <= (R - 1) * 0x1p-24 * ab);
      }
      ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ROW_MAX, &a), TPU_OK);
      for (int i = 0; i < R; i++) {
        ref[0] = x[i * C];
        for (int j = 1; j < C; j++) ref[0] = fmaxf(ref[0], x[i * C + j]);
        EQ_BITS(ref[0], o[i], "row_max");
      }
      ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_COL_MAX, &a), TPU_OK);
      for (int j = 0; j < C; j++) {
        ref[j] = x[j];
        for (int i = 1; i < R; i++) ref[j] = fmaxf(ref[j], x[i * C + j]);
        EQ_BITS(ref[j], o[j], "col_max");
      }
    }
  /* a NaN anywhere in a row or column poisons its max */
  float z[] = { 1, NAN, 3, 4, 5, 6 };
  tpu_vpu_args a = args_xy(2, 3, z, NULL, o);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ROW_MAX, &a), TPU_OK);
  ck_assert(isnan(o[0]) && o[1] == 6);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_COL_MAX, &a), TPU_OK);
  ck_assert(o[0] == 4 && isnan(o[1]) && o[2] == 6);
}
END_TEST

/* Double softmax of a row and its bound check. */
static void check_softmax_row(const float *x, const float *got, int C) {
  double m = -INFINITY, s = 0;
  for (int j = 0; j < C; j++) m = fmax(m, x[j]);
  for (int j = 0; j < C; j++) s += exp(x[j] - m);
  for (int j = 0; j < C; j++) {
    double ref = exp(x[j] - m) / s;
    double bound = fabs(x[j] - m) + C + 3;          /* rel. error in 2^-24 units */
    ck_assert_msg(fabs(got[j] - ref) <= bound * 0x1p-24 * ref + 0x1p-149,
                  "softmax[%d] of %d: %a vs %.17g", j, C, (double)got[j], ref);
  }
}

START_TEST(Softmax_meets_its_bound_and_is_stable_for_large_logits) {
  tu_rng r = { 5 };
  static float x[64 * 300], o[64 * 300];
  const int sizes[] = { 1, 2, 10, 128, 300 };
  for (size_t k = 0; k < 5; k++) {
    int R = 64, C = sizes[k];
    for (int i = 0; i < R * C; i++) x[i] = tu_normal(&r) * (float)(1 << (i % 6)) + (float)(i % 3) * 500;
    tpu_vpu_args a = args_xy(R, C, x, NULL, o);
    ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX, &a), TPU_OK);
    for (int i = 0; i < R; i++) {
      check_softmax_row(x + i * C, o + i * C, C);
      /* the documented f32 evaluation, bit for bit */
      const float *xr = x + i * C;
      float m = xr[0], s = 0, e[300];
      for (int j = 1; j < C; j++) m = fmaxf(m, xr[j]);
      for (int j = 0; j < C; j++) { e[j] = expf(xr[j] - m); s += e[j]; }
      for (int j = 0; j < C; j++) EQ_BITS(e[j] / s, o[i * C + j], "softmax order");
    }
  }
  /* logits far beyond exp's range: no overflow, the distribution survives */
  float big[] = { 1e4f, 1e4f - 1, 1e4f - 2, -1e30f, 3e38f, 3e38f, -3e38f, 0 };
  tpu_vpu_args a = args_xy(2, 4, big, NULL, o);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX, &a), TPU_OK);
  check_softmax_row(big, o, 4);
  EQ_BITS(0.0f, o[3], "tiny probability underflows to 0");
  ck_assert_float_eq_tol(o[4], 0.5f, 1e-7f);
  ck_assert_float_eq_tol(o[5], 0.5f, 1e-7f);
  EQ_BITS(0.0f, o[6], "");
  EQ_BITS(0.0f, o[7], "");
  /* a row holding +inf, or only -inf, has no distribution: NaN */
  float inf_rows[] = { 1, INFINITY, 2, -INFINITY, -INFINITY, -INFINITY };
  float io[6];
  tpu_vpu_args ia = args_xy(2, 3, inf_rows, NULL, io);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX, &ia), TPU_OK);
  for (int i = 0; i < 6; i++) ck_assert_msg(isnan(io[i]), "softmax element %d", i);
  /* in place gives the same bits */
  float c[8];
  memcpy(c, big, sizeof c);
  a.x = c; a.out = c;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX, &a), TPU_OK);
  for (int i = 0; i < 8; i++) EQ_BITS(o[i], c[i], "in place");
}
END_TEST

/* A loss op (a: its full call, which wrote loss and g) gives the same
** bits without its gradient, and with the gradient written over the
** logits (loss2: rows, x2: rows x cols of scratch). */
static void loss_alone_and_in_place(tpu_vpu_op op, tpu_vpu_args a, const float *loss, const float *g, float *loss2,
                                    float *x2) {
  const int n = a.rows * a.cols;
  a.out = loss2; a.out2 = NULL;
  ck_assert_int_eq(tpu_vpu_exec(op, &a), TPU_OK);
  for (int i = 0; i < a.rows; i++) EQ_BITS(loss[i], loss2[i], "loss without gradient");
  memcpy(x2, a.x, (size_t)n * sizeof *x2);
  a.x = x2; a.out2 = x2;
  ck_assert_int_eq(tpu_vpu_exec(op, &a), TPU_OK);
  for (int i = 0; i < n; i++) EQ_BITS(g[i], x2[i], "in place gradient");
  for (int i = 0; i < a.rows; i++) EQ_BITS(loss[i], loss2[i], "in place loss");
}

START_TEST(Cross_entropy_matches_double_and_its_gradient) {
  tu_rng r = { 6 };
  enum { R = 256, C = 10 };
  static float x[R * C], loss[R], g[R * C], g2[R * C];
  int32_t lab[R];
  for (int i = 0; i < R * C; i++) x[i] = tu_normal(&r) * (float)(1 << (i % 4));
  for (int i = 0; i < R; i++) lab[i] = tu_range(&r, 0, C - 1);
  tpu_vpu_args a = args_xy(R, C, x, NULL, loss);
  a.labels = lab; a.out2 = g; a.p.alpha = 1.0f / R;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &a), TPU_OK);
  for (int i = 0; i < R; i++) {
    const float *xr = x + i * C;
    double m = -INFINITY, s = 0;
    for (int j = 0; j < C; j++) m = fmax(m, xr[j]);
    for (int j = 0; j < C; j++) s += exp(xr[j] - m);
    double ref = log(s) - (xr[lab[i]] - m);
    double bound = 0x1p-24 * (C + 4 + fabs(xr[lab[i]] - m)) * fmax(1, ref);
    ck_assert_msg(fabs(loss[i] - ref) <= bound, "loss %d: %a vs %.17g", i, (double)loss[i], ref);
    for (int j = 0; j < C; j++) {
      double p = exp(xr[j] - m) / s, gref = (p - (j == lab[i])) / R;
      double gb = (fabs(xr[j] - m) + C + 3) * 0x1p-24 * p / R + ulp_of(gref);
      ck_assert_msg(fabs(g[i * C + j] - gref) <= gb, "grad %d,%d: %a vs %.17g", i, j,
                    (double)g[i * C + j], gref);
    }
  }
  float loss2[R];
  loss_alone_and_in_place(TPU_VPU_SOFTMAX_XENT, a, loss, g, loss2, g2);
}
END_TEST

START_TEST(Confident_correct_prediction_has_zero_loss) {
  float x[] = { 50, 0, 0, 0, -3e38f, 3e38f, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f };
  int32_t lab[] = { 0, 1, 2 };
  float loss[3], g[12];
  tpu_vpu_args a = args_xy(3, 4, x, NULL, loss);
  a.labels = lab; a.out2 = g; a.p.alpha = 1.0f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &a), TPU_OK);
  EQ_BITS(0.0f, loss[0], "margin 50: 1 + 3e^-50 rounds to 1, log 1 = 0");
  ck_assert(loss[1] >= 0 && loss[1] < 1e-30f);   /* huge logits: no overflow */
  ck_assert_float_eq_tol(loss[2], logf(4), 1e-6f);  /* uniform: log C */
  for (int j = 0; j < 4; j++) ck_assert(fabsf(g[j]) < 1e-20f);
  ck_assert_float_eq_tol(g[8 + 2], 0.25f - 1, 1e-7f);
  ck_assert_float_eq_tol(g[8 + 0], 0.25f, 1e-7f);
}
END_TEST

START_TEST(Binary_cross_entropy_matches_double_and_its_gradient) {
  tu_rng r = { 11 };
  enum { R = 512 };
  static float x[R], loss[R], g[R], g2[R], loss2[R];
  int32_t lab[R];
  for (int i = 0; i < R; i++) {   /* logits from 2^-20 to 2^10 in size, and both signs */
    x[i] = tu_normal(&r) * ldexpf(1.0f, (i % 31) - 20);
    lab[i] = tu_range(&r, 0, 1);
  }
  tpu_vpu_args a = args_xy(R, 1, x, NULL, loss);
  a.labels = lab; a.out2 = g; a.p.alpha = 1.0f / R;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SIGMOID_BCE, &a), TPU_OK);
  for (int i = 0; i < R; i++) {
    const double v = x[i], z = lab[i];
    const double ref = fmax(v, 0) - v * z + log1p(exp(-fabs(v))), p = 1 / (1 + exp(-v)), gref = (p - z) / R;
    ck_assert_msg(fabs(loss[i] - ref) <= 0x1p-22 * fmax(1, ref), "loss %d (x %a, z %d): %a vs %.17g", i,
                  (double)x[i], lab[i], (double)loss[i], ref);
    ck_assert_msg(fabs(g[i] - gref) <= 4 * ulp_of(p) / R + ulp_of(gref), "grad %d (x %a, z %d): %a vs %.17g", i,
                  (double)x[i], lab[i], (double)g[i], gref);
  }
  loss_alone_and_in_place(TPU_VPU_SIGMOID_BCE, a, loss, g, loss2, g2);
  /* the tails: no overflow, exact where the formula is */
  float t[] = { 100, -100, 3e38f, -3e38f, 0, NAN }, tl[6], tg[6];
  int32_t tz[] = { 1, 1, 0, 1, 0, 1 };
  tpu_vpu_args b = args_xy(6, 1, t, NULL, tl);
  b.labels = tz; b.out2 = tg; b.p.alpha = 1.0f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SIGMOID_BCE, &b), TPU_OK);
  EQ_BITS(expf(-100), tl[0], "confident and right: log1p(e^-100), subnormal, not 0");
  EQ_BITS(100.0f, tl[1], "confident and wrong: -x");
  EQ_BITS(3e38f, tl[2], "x 3e38, label 0: x, no overflow");
  EQ_BITS(3e38f, tl[3], "x -3e38, label 1: -x");
  EQ_BITS(logf(2), tl[4], "x 0: log 2");
  ck_assert(isnan(tl[5]) && isnan(tg[5]));
  EQ_BITS(0.0f, tg[0] + 0.0f, "sigmoid(100) - 1 rounds to 0");
  EQ_BITS(-1.0f, tg[1], "sigmoid(-100) - 1");
  EQ_BITS(1.0f, tg[2], "sigmoid(3e38)");
  EQ_BITS(0.5f, tg[4], "sigmoid(0)");
  /* binary accuracy: sigmoid(x) > 0.5 (in f32) against label == 1 */
  float bx[] = { 2, -1, 0, 1e-9f, NAN, 3e-7f }, count = -1;
  int32_t bl[] = { 1, 0, 0, 1, 1, 1 };
  tpu_vpu_args c = args_xy(6, 1, bx, NULL, &count);
  c.labels = bl;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_BINARY_ACCURACY, &c), TPU_OK);
  EQ_BITS(4.0f, count, "rows 0, 1, 2 and 5: sigmoid(1e-9) rounds to 0.5 (predicts 0), NaN predicts 0");
}
END_TEST

START_TEST(Mean_squared_error_matches_double_and_its_gradient) {
  tu_rng r = { 12 };
  enum { R = 64, C = 5 };
  static float x[R * C], t[R * C], loss[R], g[R * C], loss2[R], x2[R * C];
  for (int i = 0; i < R * C; i++) { x[i] = tu_normal(&r); t[i] = tu_normal(&r); }
  tpu_vpu_args a = args_xy(R, C, x, t, loss);
  a.out2 = g; a.p.alpha = 0.25f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_MSE, &a), TPU_OK);
  for (int i = 0; i < R; i++) {
    double s = 0, sa = 0;
    for (int j = 0; j < C; j++) {
      const double d = (double)x[i * C + j] - t[i * C + j], gref = 0.25 * 2 / C * d;
      s += d * d;
      sa += fabs(d * d);
      ck_assert_msg(fabs(g[i * C + j] - gref) <= 3 * 0x1p-24 * fabs(gref) + 1e-45, "grad %d,%d: %a vs %.17g", i, j,
                    (double)g[i * C + j], gref);
    }
    ck_assert_msg(fabs(loss[i] - s / C) <= (C + 2) * 0x1p-24 * sa / C, "loss %d: %a vs %.17g", i, (double)loss[i], s / C);
  }
  loss_alone_and_in_place(TPU_VPU_MSE, a, loss, g, loss2, x2);
  /* equal values: no loss, no gradient */
  tpu_vpu_args b = args_xy(R, C, x, x, loss);
  b.out2 = g;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_MSE, &b), TPU_OK);
  for (int i = 0; i < R; i++) EQ_BITS(0.0f, loss[i], "x = y");
}
END_TEST

START_TEST(Argmax_takes_the_first_maximum_and_accuracy_counts) {
  float x[] = { 1, 3, 3, 2,   NAN, 9, 1, 1,   -1, -1, -1, -1,   0, 7, NAN, 8,   -INFINITY, -INFINITY, -5, 4 };
  int32_t idx[5], lab[] = { 1, 0, 3, 2, 3 };
  tpu_vpu_args a = args_xy(5, 4, x, NULL, NULL);
  a.idx = idx;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ARGMAX, &a), TPU_OK);
  const int32_t want[] = { 1, 0, 0, 2, 3 };
  for (int i = 0; i < 5; i++) ck_assert_int_eq(idx[i], want[i]);
  float count = -1;
  a.out = &count; a.labels = lab;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ACCURACY, &a), TPU_OK);
  EQ_BITS(4.0f, count, "rows 0, 1, 3, 4 match");
  /* randomized against a plain loop */
  tu_rng r = { 7 };
  enum { R = 1000, C = 10 };
  static float y[R * C];
  int32_t l2[R], id2[R];
  for (int i = 0; i < R * C; i++) y[i] = (float)tu_range(&r, 0, 5);   /* many ties */
  int hits = 0;
  for (int i = 0; i < R; i++) {
    l2[i] = tu_range(&r, 0, C - 1);
    int b = 0;
    for (int j = 1; j < C; j++) if (y[i * C + j] > y[i * C + b]) b = j;
    hits += b == l2[i];
    id2[i] = b;
  }
  tpu_vpu_args b = args_xy(R, C, y, NULL, &count);
  b.labels = l2;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ACCURACY, &b), TPU_OK);
  TU_EQ_U64(hits, (uint64_t)count);
  b.idx = idx;
  int32_t got[R];
  b.idx = got;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ARGMAX, &b), TPU_OK);
  ck_assert(memcmp(got, id2, sizeof got) == 0);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Optimizers
** ================================================================== */
START_TEST(Optimizer_steps_match_hand_computed_values) {
  float w[2] = { 1.0f, -2.0f }, g[2] = { 0.5f, -1.0f }, m[2] = { 0, 0 }, v[2] = { 0, 0 };
  tpu_vpu_args a = { .rows = 1, .cols = 2, .param = w, .grad = g, .m = m, .v = v,
                     .p = tpu_vpu_params_default() };
  a.p.lr = 0.25f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SGD, &a), TPU_OK);
  EQ_BITS(0.875f, w[0], "sgd 1 - 0.25*0.5");
  EQ_BITS(-1.75f, w[1], "sgd -2 + 0.25");
  /* momentum 0.5: m = 0.5, w = 1 - 0.125; then m = 0.75, w = 0.875 - 0.1875 */
  w[0] = 1; w[1] = -2; a.p.momentum = 0.5f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_MOMENTUM, &a), TPU_OK);
  EQ_BITS(0.5f, m[0], "m after 1");
  EQ_BITS(0.875f, w[0], "w after 1");
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_MOMENTUM, &a), TPU_OK);
  EQ_BITS(0.75f, m[0], "m after 2");
  EQ_BITS(0.6875f, w[0], "w after 2");
  EQ_BITS(-1.5f, m[1], "m[1] after 2");
  EQ_BITS(-2.0f + 0.25f + 0.375f, w[1], "w[1] after 2");
  /* Adam, beta1 0.5, beta2 0.75, lr 0.125, eps 1, g = 1: step 1 gives
  ** m = 0.5, v = 0.25, mh = vh = 1, w = 1 - 0.125/(1+1) = 0.9375 */
  w[0] = 1; g[0] = 1; m[0] = m[1] = v[0] = v[1] = 0;
  a.p.beta1 = 0.5f; a.p.beta2 = 0.75f; a.p.lr = 0.125f; a.p.eps = 1.0f; a.p.step = 1;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADAM, &a), TPU_OK);
  EQ_BITS(0.5f, m[0], "adam m");
  EQ_BITS(0.25f, v[0], "adam v");
  EQ_BITS(0.9375f, w[0], "adam w");
  /* step 2, g = 1: m = 0.75, v = 0.4375, mh = 0.75/0.75 = 1, vh = 0.4375/0.4375 = 1
  ** up to the rounding of c1 = 4/3 and c2 = 16/7 in f32 */
  a.p.step = 2;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADAM, &a), TPU_OK);
  EQ_BITS(0.75f, m[0], "adam m 2");
  EQ_BITS(0.4375f, v[0], "adam v 2");
  ck_assert_float_eq_tol(w[0], 0.875f, 1e-7f);
  /* the default hyper-parameters at t = 1 move every weight by ~lr * sign(g) */
  float w3[3] = { 1, 1, 1 }, g3[3] = { 3e-3f, -40, 0 }, m3[3] = { 0 }, v3[3] = { 0 };
  tpu_vpu_args b = { .rows = 3, .cols = 1, .param = w3, .grad = g3, .m = m3, .v = v3,
                     .p = tpu_vpu_params_default() };
  b.p.lr = 0.001f;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADAM, &b), TPU_OK);
  ck_assert_float_eq_tol(w3[0], 0.999f, 1e-6f);
  ck_assert_float_eq_tol(w3[1], 1.001f, 1e-6f);
  EQ_BITS(1.0f, w3[2], "zero gradient leaves the weight");
}
END_TEST

START_TEST(Optimizers_track_a_double_reference_over_many_steps) {
  tu_rng r = { 8 };
  enum { N = 1000, STEPS = 50 };
  static float w[3][N], m[3][N], v[N], g[N];
  static double dw[3][N], dm[3][N], dv[N];
  for (int i = 0; i < N; i++)
    for (int k = 0; k < 3; k++) { dw[k][i] = w[k][i] = tu_normal(&r); dm[k][i] = m[k][i] = 0; }
  memset(v, 0, sizeof v); memset(dv, 0, sizeof dv);
  tpu_vpu_params p = tpu_vpu_params_default();
  p.lr = 0.01f;
  for (int t = 1; t <= STEPS; t++) {
    for (int i = 0; i < N; i++) g[i] = tu_normal(&r);
    p.step = t;
    tpu_vpu_args a = { .rows = 10, .cols = 100, .grad = g, .p = p };
    for (int k = 0; k < 3; k++) {
      a.param = w[k]; a.m = m[k]; a.v = v;
      ck_assert_int_eq(tpu_vpu_exec(k == 0 ? TPU_VPU_SGD : k == 1 ? TPU_VPU_MOMENTUM : TPU_VPU_ADAM, &a), TPU_OK);
    }
    double lr = p.lr, mu = p.momentum, b1 = p.beta1, b2 = p.beta2, eps = p.eps;
    for (int i = 0; i < N; i++) {
      dw[0][i] -= lr * g[i];
      dm[1][i] = mu * dm[1][i] + g[i];
      dw[1][i] -= lr * dm[1][i];
      dm[2][i] = b1 * dm[2][i] + (1 - b1) * g[i];
      dv[i] = b2 * dv[i] + (1 - b2) * (double)g[i] * g[i];
      dw[2][i] -= lr * (dm[2][i] / (1 - pow(b1, t))) / (sqrt(dv[i] / (1 - pow(b2, t))) + eps);
    }
  }
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < N; i++)
      ck_assert_msg(fabs(w[k][i] - dw[k][i]) <= 0x1p-22 * STEPS * fmax(1, fabs(dw[k][i])),
                    "optimizer %d weight %d: %a vs %.17g", k, i, (double)w[k][i], dw[k][i]);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** bf16 outputs and argument errors
** ================================================================== */
START_TEST(Bf16_outputs_are_the_rounded_f32_results) {
  tu_rng r = { 9 };
  enum { R = 16, C = 40 };
  static float x[R * C], y[R * C], o1[R * C], o2[R * C], g1[R * C], g2[R * C];
  int32_t lab[R];
  for (int i = 0; i < R * C; i++) { x[i] = tu_normal(&r); y[i] = tu_normal(&r); }
  for (int i = 0; i < R; i++) lab[i] = tu_range(&r, 0, C - 1);
  int32_t blab[R];   /* the binary ops': 0 or 1, on one logit a row */
  for (int i = 0; i < R; i++) blab[i] = lab[i] & 1;
  for (int op = 0; op < TPU_VPU_OP_COUNT; op++) {
    if (op == TPU_VPU_ARGMAX) continue;               /* writes indices */
    const bool bin = op == TPU_VPU_SIGMOID_BCE || op == TPU_VPU_BINARY_ACCURACY;
    float w1[R * C], w2[R * C], m1[R * C], m2[R * C], v1[R * C], v2[R * C];
    for (int i = 0; i < R * C; i++) { w1[i] = w2[i] = x[i]; m1[i] = m2[i] = 0.1f; v1[i] = v2[i] = 0.2f; }
    float *xs = x;
    float pos[R * C];
    if (op == TPU_VPU_LOG || op == TPU_VPU_RSQRT) {
      for (int i = 0; i < R * C; i++) pos[i] = fabsf(x[i]);
      xs = pos;
    }
    const int cols = bin ? 1 : C;
    tpu_vpu_args a = { .rows = R, .cols = cols, .x = xs, .y = y, .labels = bin ? blab : lab, .out = o1, .out2 = g1,
                       .param = w1, .grad = y, .m = m1, .v = v1, .p = tpu_vpu_params_default() };
    ck_assert_int_eq(tpu_vpu_exec((tpu_vpu_op)op, &a), TPU_OK);
    a.out = o2; a.out2 = g2; a.param = w2; a.m = m2; a.v = v2; a.round_bf16 = true;
    ck_assert_int_eq(tpu_vpu_exec((tpu_vpu_op)op, &a), TPU_OK);
    size_t no = tpu_vpu_operand_elems((tpu_vpu_op)op, TPU_VPU_O_OUT, R, cols);
    for (size_t i = 0; i < no; i++) EQ_BITS(tpu_bf16_round(o1[i]), o2[i], tpu_vpu_op_name((tpu_vpu_op)op));
    if (op == TPU_VPU_SOFTMAX_XENT || op == TPU_VPU_SIGMOID_BCE || op == TPU_VPU_MSE)
      for (int i = 0; i < R * cols; i++) EQ_BITS(tpu_bf16_round(g1[i]), g2[i], "xent gradient");
    if (tpu_vpu_op_writes((tpu_vpu_op)op) & TPU_VPU_O_PARAM)
      for (int i = 0; i < R * C; i++) {
        EQ_BITS(tpu_bf16_round(w1[i]), w2[i], "param");
        EQ_BITS(m1[i], m2[i], "state stays f32");
        EQ_BITS(v1[i], v2[i], "state stays f32");
      }
  }
}
END_TEST

static int g_allocs;
static void *counting_alloc(void *ud, void *ptr, size_t nsize) {
  (void)ud;
  if (nsize == 0) { free(ptr); return NULL; }
  g_allocs++;
  return NULL;                                 /* every allocation fails */
}

START_TEST(Exec_never_allocates) {
  enum { R = 8, C = 16 };
  float x[R * C], y[R * C], o[R * C], o2[R * C], w[R * C], m[R * C], v[R * C];
  int32_t lab[R], idx[R];
  tu_rng r = { 10 };
  for (int i = 0; i < R * C; i++) { x[i] = fabsf(tu_normal(&r)); y[i] = tu_normal(&r); w[i] = m[i] = v[i] = 0; }
  for (int i = 0; i < R; i++) lab[i] = i;
  tpu_set_alloc(counting_alloc, NULL);
  g_allocs = 0;
  int32_t blab[R];   /* the binary ops' labels, on one logit a row */
  for (int i = 0; i < R; i++) blab[i] = i & 1;
  for (int op = 0; op < TPU_VPU_OP_COUNT; op++) {
    const bool bin = op == TPU_VPU_SIGMOID_BCE || op == TPU_VPU_BINARY_ACCURACY;
    tpu_vpu_args a = { .rows = R, .cols = bin ? 1 : C, .x = x, .y = y, .labels = bin ? blab : lab, .out = o, .out2 = o2,
                       .idx = idx, .param = w, .grad = y, .m = m, .v = v, .round_bf16 = op & 1,
                       .p = tpu_vpu_params_default() };
    tpu_status st = tpu_vpu_exec((tpu_vpu_op)op, &a);
    if (st != TPU_OK) { tpu_set_alloc(NULL, NULL); ck_abort_msg("%s failed", tpu_vpu_op_name((tpu_vpu_op)op)); }
  }
  tpu_set_alloc(NULL, NULL);
  ck_assert_int_eq(g_allocs, 0);
}
END_TEST

START_TEST(Bad_arguments_are_rejected_and_nothing_is_written) {
  float x[6] = { 1, 2, 3, 4, 5, 6 }, o[6] = { 7, 7, 7, 7, 7, 7 }, w[6] = { 1, 1, 1, 1, 1, 1 };
  float m[6] = { 0 }, v[6] = { 0 };
  int32_t lab[2] = { 0, 3 };
  tpu_vpu_args a = args_xy(2, 3, x, x, o);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_OP_COUNT, &a), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_exec((tpu_vpu_op)-3, &a), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD, NULL), TPU_ERR_CONFIG);
  tpu_vpu_args b = a; b.rows = 0;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD, &b), TPU_ERR_CONFIG);
  b = a; b.cols = -2;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD, &b), TPU_ERR_CONFIG);
  b = a; b.rows = b.cols = 2000000000;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD, &b), TPU_ERR_CONFIG);
  b = a; b.y = NULL;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADD, &b), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_RELU, &b), TPU_OK);       /* relu needs no y */
  memcpy(o, (float[6]){ 7, 7, 7, 7, 7, 7 }, sizeof o);
  b = a; b.out = NULL;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_EXP, &b), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ARGMAX, &b), TPU_ERR_CONFIG);   /* idx missing */
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &a), TPU_ERR_CONFIG);  /* labels missing */
  /* a label outside [0, cols) is bad input */
  b = a; b.labels = lab;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &b), TPU_ERR_INPUT);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ACCURACY, &b), TPU_ERR_INPUT);
  lab[1] = -1;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &b), TPU_ERR_INPUT);
  lab[1] = 2;
  b.out2 = o; b.p.alpha = NAN;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &b), TPU_ERR_CONFIG);
  for (int i = 0; i < 6; i++) EQ_BITS(7.0f, o[i], "nothing written");
  /* the binary ops: one logit a row, labels 0 and 1 */
  lab[0] = 0; lab[1] = 1;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SIGMOID_BCE, &b), TPU_ERR_CONFIG);      /* 3 columns */
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_BINARY_ACCURACY, &b), TPU_ERR_CONFIG);
  b.rows = 6; b.cols = 1; b.out2 = NULL;
  int32_t six[6] = { 0, 1, 1, 0, 2, 0 };
  b.labels = six;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SIGMOID_BCE, &b), TPU_ERR_INPUT);       /* label 2 */
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_BINARY_ACCURACY, &b), TPU_ERR_INPUT);
  six[4] = 1; b.out2 = o; b.p.alpha = INFINITY;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SIGMOID_BCE, &b), TPU_ERR_CONFIG);
  for (int i = 0; i < 6; i++) EQ_BITS(7.0f, o[i], "nothing written");
  /* hyper-parameters */
  tpu_vpu_args p = { .rows = 2, .cols = 3, .param = w, .grad = x, .m = m, .v = v,
                     .p = tpu_vpu_params_default() };
  struct { tpu_vpu_op op; int field; float val; } bad[] = {
    { TPU_VPU_SGD, 0, -0.1f }, { TPU_VPU_SGD, 0, NAN }, { TPU_VPU_SGD, 0, INFINITY },
    { TPU_VPU_MOMENTUM, 1, 1.0f }, { TPU_VPU_MOMENTUM, 1, -0.5f }, { TPU_VPU_MOMENTUM, 1, NAN },
    { TPU_VPU_ADAM, 2, 1.0f }, { TPU_VPU_ADAM, 3, 1.5f }, { TPU_VPU_ADAM, 4, 0.0f },
    { TPU_VPU_ADAM, 4, -1e-8f }, { TPU_VPU_ADAM, 4, INFINITY }, { TPU_VPU_ADAM, 5, 0 },
    { TPU_VPU_ADAM, 0, -1.0f },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tpu_vpu_args q = p;
    switch (bad[i].field) {
      case 0: q.p.lr = bad[i].val; break;
      case 1: q.p.momentum = bad[i].val; break;
      case 2: q.p.beta1 = bad[i].val; break;
      case 3: q.p.beta2 = bad[i].val; break;
      case 4: q.p.eps = bad[i].val; break;
      case 5: q.p.step = 0; break;
    }
    ck_assert_msg(tpu_vpu_exec(bad[i].op, &q) == TPU_ERR_CONFIG, "case %zu", i);
  }
  tpu_vpu_args q = p; q.m = NULL;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_MOMENTUM, &q), TPU_ERR_CONFIG);
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_SGD, &q), TPU_OK);          /* sgd needs no state */
  for (int i = 0; i < 6; i++) ck_assert(w[i] < 1.0f);
  q = p; q.v = NULL;
  ck_assert_int_eq(tpu_vpu_exec(TPU_VPU_ADAM, &q), TPU_ERR_CONFIG);
  for (int i = 0; i < 6; i++) EQ_BITS(0.0f, m[i], "state untouched");
}
END_TEST
/* }================================================================== */

int main(void) {
  Suite *s = suite_create("vpu");
  TU_CASE(s, "table", 30, Every_op_name_parses_back_to_its_op, Operand_sizes_follow_the_table,
          Positional_operands_and_scalars_follow_bit_order);
  TU_CASE(s, "timing", 30, Default_config_matches_the_v2_preset_and_checks,
          Cycles_match_hand_counts_for_8x128_registers, Cycles_reject_invalid_shapes_and_ops,
          Cycles_scale_with_registers_and_costs);
  TU_CASE(s, "numerics", 60, Binary_ops_are_correctly_rounded, Transcendentals_meet_their_ulp_bounds,
          Binary_cross_entropy_matches_double_and_its_gradient, Mean_squared_error_matches_double_and_its_gradient,
          Activations_and_gradients_meet_their_bounds, Capped_relu_clips_and_its_gradient_passes_inside_the_cap,
          Transformer_activations_match_their_formulas,
          Special_values_follow_ieee, Reductions_follow_the_documented_order_bit_for_bit,
          Softmax_meets_its_bound_and_is_stable_for_large_logits, Cross_entropy_matches_double_and_its_gradient,
          Confident_correct_prediction_has_zero_loss, Argmax_takes_the_first_maximum_and_accuracy_counts,
          Optimizer_steps_match_hand_computed_values, Optimizers_track_a_double_reference_over_many_steps,
          Bf16_outputs_are_the_rounded_f32_results);
  TU_SLOW_CASE(s, "slow", 600, Transcendentals_meet_their_bounds_across_all_floats);
  TU_CASE(s, "limits", 30, Bad_arguments_are_rejected_and_nothing_is_written, Exec_never_allocates);
  return tu_main(s);
}
