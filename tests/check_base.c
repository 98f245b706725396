/*
** check_base.c -- bf16 conversion, the allocation hook, the JSON locator.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tests/test_util.h"

/* An independent bf16 reference: pick the nearer of the two bf16 neighbours
** by exact distance in double, ties to the even one. */
static uint16_t ref_bf16(float f) {
  if (isnan(f)) return 0;                        /* caller checks NaN separately */
  uint32_t u = tpu_f32_bits(f);
  uint32_t lo = u & 0xffff0000u;                 /* toward zero */
  if (lo == u) return (uint16_t)(u >> 16);
  uint32_t hi = lo + 0x10000u;                   /* away from zero (may be inf) */
  double d = fabs((double)f);
  double dlo = fabs((double)tpu_f32_from_bits(lo & 0x7fffffffu));
  double dhi = (hi & 0x7fffffffu) >= 0x7f800000u
                   ? 3.4028235677973366e38 + 0.5 * (3.4028235677973366e38 - 3.3895313892515355e38)
                   : fabs((double)tpu_f32_from_bits(hi & 0x7fffffffu));
  /* For the top binade, 'hi' is inf: the rounding boundary is the midpoint
  ** between the largest bf16 and 2^128, which dhi above encodes. */
  if ((hi & 0x7fffffffu) >= 0x7f800000u) {
    double maxbf = 3.3895313892515355e38, two128 = 3.4028236692093846e38;
    double mid = 0.5 * (maxbf + two128);
    if (d < mid) return (uint16_t)(lo >> 16);
    if (d > mid) return (uint16_t)(hi >> 16);
    return (uint16_t)(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
  }
  if (d - dlo < dhi - d) return (uint16_t)(lo >> 16);
  if (d - dlo > dhi - d) return (uint16_t)(hi >> 16);
  return (uint16_t)(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}

START_TEST(Every_bf16_value_round_trips_through_f32) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = tpu_bf16_to_f32((tpu_bf16)h);
    tpu_bf16 back = tpu_bf16_from_f32(f);
    if (isnan(f)) {
      ck_assert_msg(isnan(tpu_bf16_to_f32(back)), "NaN 0x%04x lost", h);
      ck_assert_uint_eq(back & 0x8000u, h & 0x8000u);
    } else {
      ck_assert_msg(back == h, "0x%04x -> %a -> 0x%04x", h, (double)f, back);
    }
  }
}
END_TEST

START_TEST(Rounding_matches_an_independent_reference_on_random_and_edge_values) {
  static const uint32_t edges[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x80000001, 0x00008000,
    0x00018000, 0x007fffff, 0x00800000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x3f807fff,
    0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, 0x7f7e8000, 0x3f800001, 0x33800000 };
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    float f = tpu_f32_from_bits(edges[i]);
    ck_assert_msg(tpu_bf16_from_f32(f) == ref_bf16(f), "edge 0x%08x: got 0x%04x want 0x%04x",
                  edges[i], tpu_bf16_from_f32(f), ref_bf16(f));
  }
  tu_rng r = { 12345 };
  for (long i = 0; i < 10000000; i++) {
    uint32_t u = (uint32_t)tu_next(&r);
    float f = tpu_f32_from_bits(u);
    if (isnan(f)) {
      ck_assert(isnan(tpu_bf16_round(f)));
      ck_assert_uint_eq(tpu_bf16_from_f32(f) & 0x8000u, (u >> 16) & 0x8000u);
      continue;
    }
    uint16_t got = tpu_bf16_from_f32(f), want = ref_bf16(f);
    if (got != want)
      ck_abort_msg("f32 0x%08x: Expected bf16 0x%04x, Actual 0x%04x", u, want, got);
  }
}
END_TEST

START_TEST(Nan_inf_and_signed_zero_are_kept) {
  ck_assert(isnan(tpu_bf16_round(NAN)));
  ck_assert(isnan(tpu_bf16_round(tpu_f32_from_bits(0x7f800001u)))); /* payload only in low bits */
  ck_assert(isinf(tpu_bf16_round(INFINITY)) && tpu_bf16_round(INFINITY) > 0);
  ck_assert(isinf(tpu_bf16_round(-INFINITY)) && tpu_bf16_round(-INFINITY) < 0);
  ck_assert_uint_eq(tpu_bf16_from_f32(-0.0f), 0x8000u);
  ck_assert_uint_eq(tpu_bf16_from_f32(0.0f), 0x0000u);
  /* subnormals are rounded, not flushed */
  ck_assert_uint_eq(tpu_bf16_from_f32(tpu_f32_from_bits(0x00010000u)), 0x0001u);
}
END_TEST

/* tpu_text grows past its first 64 KiB exactly, and an allocation failure
** sets oom, keeps what was there and drops later appends. */
START_TEST(Text_buffer_grows_and_reports_running_out_of_memory) {
  tpu_text b = { 0 };
  for (int i = 0; i < 20000; i++) tpu_text_printf(&b, "%05d,", i);
  ck_assert_int_eq(b.oom, 0);
  ck_assert_uint_eq(b.n, 20000u * 6);
  ck_assert_uint_eq(strlen(b.s), b.n);
  ck_assert_int_eq(strncmp(b.s + 6 * 12345, "12345,", 6), 0);
  tu_alloc_fail(1);
  for (int i = 0; i < 20000; i++) tpu_text_printf(&b, "%05d,", i);   /* needs to grow: fails */
  tu_alloc_restore();
  ck_assert_int_eq(b.oom, 1);
  ck_assert_uint_le(b.n, b.cap);
  ck_assert_int_eq(strncmp(b.s + 6 * 19999, "19999,", 6), 0);         /* the first pass is intact */
  tpu_free(b.s);
}
END_TEST

START_TEST(Allocation_goes_through_the_hook) {
  tu_alloc_fail(2);
  void *a = tpu_malloc(10);
  void *b = tpu_malloc_aligned(100);
  void *c = tpu_calloc(SIZE_MAX / 2, 4);
  tu_alloc_restore();
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_null(b);                          /* the second call failed */
  ck_assert_ptr_null(c);                          /* overflow refused */
  tpu_free(a);
  float *x = tpu_malloc_aligned(1000);
  ck_assert_uint_eq((uintptr_t)x % 64, 0);
  tpu_free_aligned(x);
}
END_TEST

START_TEST(Json_locator_finds_nested_values) {
  const char *t = "{\n  \"a\": 1,\n  \"mxu\": {\"rows\": 8,\n     \"cols\": [1, {\"x\": true}]}\n}";
  int l, c;
  ck_assert(tpu_json_locate(t, "a", &l, &c)); ck_assert_int_eq(l, 2); ck_assert_int_eq(c, 8);
  ck_assert(tpu_json_locate(t, "mxu.rows", &l, &c)); ck_assert_int_eq(l, 3); ck_assert_int_eq(c, 19);
  ck_assert(tpu_json_locate(t, "mxu.cols[1].x", &l, &c)); ck_assert_int_eq(l, 4); ck_assert_int_eq(c, 24);
  ck_assert(!tpu_json_locate(t, "mxu.nope", &l, &c));
}
END_TEST

int main(void) {
  Suite *s = suite_create("base");
  TU_CASE(s, "bf16", 120, Every_bf16_value_round_trips_through_f32,
          Rounding_matches_an_independent_reference_on_random_and_edge_values,
          Nan_inf_and_signed_zero_are_kept);
  TU_CASE(s, "alloc_json", 0, Allocation_goes_through_the_hook,
          Text_buffer_grows_and_reports_running_out_of_memory, Json_locator_finds_nested_values);
  return tu_main(s);
}
