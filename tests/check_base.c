/*
** check_base.c -- bf16 conversion, the allocation hook, the JSON locator,
** the JSON member readers, the .npy reader and tpu_write_atomic.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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

/* One document, read the way every format reads it: the first error is the
** one kept, with the value's line:column and the field named by path (or,
** for an object with a label, by key after the label). */
static tpu_status read_err(const char *text, bool labelled, char *err, size_t cap) {
  tpu_json j = { .where = "t.json", .noun = "key", .err = err, .errcap = cap };
  tpu_status st = tpu_json_parse(&j, text, "a test");
  if (st == TPU_OK) {
    tpu_json_obj o = { &j, j.root, "", labelled ? "thing: " : NULL };
    static const char *const keys[] = { "n", "x", "b", "s", NULL };
    int64_t n = 0;
    double x = 0;
    bool b = false;
    const char *str = NULL;
    st = tpu_json_keys(&o, keys);
    if (!st) st = tpu_json_int_or(&o, "n", 1, 8, "auto", -1, TPU_JSON_REQUIRED, &n);
    if (!st) st = tpu_json_num(&o, "x", 0, 1, TPU_JSON_HI_OPEN, &x);
    if (!st) st = tpu_json_bool(&o, "b", &b);
    if (!st) st = tpu_json_str(&o, "s", 0, &str);
    if (!st) st = tpu_json_fail(&j, "n", "all read");
    tpu_json_fail(&j, "x", "a second error is not kept");
  }
  tpu_json_free(&j);
  return st;
}

START_TEST(Json_readers_name_the_file_position_and_field) {
  char err[512];
  static const struct { const char *text; bool labelled; const char *want; } cases[] = {
    { "{ \"n\": 3,\n  \"x\": 0.5 }", false, "t.json:1:8: all read" },
    { "{ \"n\": \"auto\" }", false, "t.json:1:8: all read" },
    { "{ \"n\": 9 }", false, "t.json:1:8: field 'n': expected an integer in 1..8 or \"auto\", got 9" },
    { "{ \"n\": [] }", false, "t.json:1:8: field 'n': expected an integer in 1..8 or \"auto\", got an array" },
    { "{ }", false, "t.json:1:1: field 'n': missing; expected an integer in 1..8 or \"auto\"" },
    { "{ \"n\": 1,\n \"x\": 1.0 }", false, "t.json:2:7: field 'x': expected a number in [0, 1), got 1" },
    { "{ \"n\": 1, \"b\": 0 }", false, "field 'b': expected true or false, got an integer" },
    { "{ \"n\": 1, \"s\": null }", false, "field 's': expected a string, got null" },
    { "{ \"n\": 1, \"q\": 2 }", false, "t.json:1:16: field 'q': unknown key; allowed here: n, x, b, s" },
    { "{ \"n\": 0 }", true, "t.json:1:8: thing: field 'n': expected an integer in 1..8" },
    { "{ \"n\": 1,\n \"n\": 2 }", false, "t.json:2:" },
    { "[1]", false, "t.json:1:1: expected a JSON object (a test)" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    err[0] = 0;
    ck_assert_int_eq(read_err(cases[i].text, cases[i].labelled, err, sizeof err), TPU_ERR_CONFIG);
    ck_assert_msg(strstr(err, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err, cases[i].want);
  }
  ck_assert(strstr(err, "malformed") == NULL);
  read_err("{ \"n\": 1,\n \"n\": 2 }", false, err, sizeof err);
  ck_assert_msg(strstr(err, "malformed JSON") != NULL, "%s", err);
}
END_TEST

/* A .npy header of NumPy's layout around 'dict', then 'data'. */
static size_t npy_file(unsigned char *buf, const char *dict, const void *data, size_t n) {
  const size_t dl = strlen(dict), hl = dl + (64 - (10 + dl + 1) % 64) % 64 + 1;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)hl; buf[9] = (unsigned char)(hl >> 8);
  memset(buf + 10, ' ', hl);
  memcpy(buf + 10, dict, dl);
  buf[10 + hl - 1] = '\n';
  memcpy(buf + 10 + hl, data, n);
  return 10 + hl + n;
}

START_TEST(Npy_files_round_trip_and_bad_ones_are_named) {
  char path[] = "/tmp/tpusim_npyXXXXXX", err[256];
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  const float x[6] = { 1.5f, -2.0f, 0.0f, 3.25f, 1e-8f, -0.0f };
  const int64_t shape[2] = { 2, 3 };
  ck_assert_int_eq(tpu_npy_write_f32(path, x, 2, shape), 0);
  tpu_npy h;
  float *y;
  ck_assert_int_eq(tpu_npy_read_f32(path, &h, &y, err, sizeof err), TPU_OK);
  ck_assert_int_eq(h.ndim, 2);
  ck_assert(h.shape[0] == 2 && h.shape[1] == 3 && h.count == 6);
  ck_assert_int_eq(memcmp(x, y, sizeof x), 0);
  tpu_free(y);
  remove(path);
  ck_assert_int_eq(tpu_npy_read_f32(path, &h, &y, err, sizeof err), TPU_ERR_IO);
  ck_assert_ptr_null(y);
  ck_assert_msg(strstr(err, "cannot read") != NULL, "%s", err);

  unsigned char buf[256];
  const uint8_t u[4] = { 1, 2, 3, 4 };
  size_t n = npy_file(buf, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }", u, 4);
  ck_assert_int_eq(tpu_npy_parse("u.npy", buf, n, &h, err, sizeof err), TPU_OK);
  ck_assert(!strcmp(h.descr, "|u1") && h.itemsize == 1 && h.count == 4 && h.data[3] == 4);
  buf[1] = 'X';
  ck_assert_int_eq(tpu_npy_parse("u.npy", buf, n, &h, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "u.npy: not a .npy file (bad magic)") == err, "%s", err);
  static const struct { const char *dict, *want; } bad[] = {
    { "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2), }", "u.npy: header field 'fortran_order'" },
    { "{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", "u.npy: header field 'descr' is '>i4'" },
    { "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", "u.npy: truncated" },
    { "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", "u.npy: trailing bytes" },
    { "{'descr': '|u1', 'fortran_order': False, 'shape': 4, }", "u.npy: header field 'shape'" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    n = npy_file(buf, bad[i].dict, u, 4);
    ck_assert_int_eq(tpu_npy_parse("u.npy", buf, n, &h, err, sizeof err), TPU_ERR_INPUT);
    ck_assert_msg(strstr(err, bad[i].want) == err, "case %zu: %s", i, err);
  }
}
END_TEST

/* #18: the header was searched with strstr as a C string, so a NUL byte
** and anything after it, other keys, a key twice or text after the dict
** went unnoticed. It is read as NumPy reads it. */
START_TEST(Npy_headers_are_read_as_numpy_reads_them) {
  static const struct { const char *dict; size_t len; const char *want; } cases[] = {
#define C(lit, want) { lit, sizeof lit - 1, want }
    C("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\0garbage", "u.npy: header byte 57 is a NUL byte"),
    C("{'descr': '|u1', 'fortran_order': False, 'shape': (4,)}\0", "u.npy: header byte 55 is a NUL byte"),
    C("{'descr': '|u1', 'fortran_\0order': False, 'shape': (4,)}", "u.npy: header byte 26 is a NUL byte"),
    C("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), 'x': 1}", "u.npy: header has a key 'x'"),
    C("{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (4,)}", "u.npy: header field 'descr' given twice"),
    C("{'descr': '|u1', 'shape': (4,)}", "u.npy: header field 'fortran_order' missing"),
    C("{'descr': '|u1', 'fortran_order': False, 'shape': (4,)} junk", "u.npy: header byte 56 is 'j'"),
    C("{'descr': '|u1', 'fortran_order': Falsey, 'shape': (4,)}", "u.npy: header byte 39 is 'y'"),
    C("{'descr': '|u1' 'fortran_order': False, 'shape': (4,)}", "u.npy: header byte 16 is '''"),
    C("{'descr': '|u1', 'fortran_order': False, 'shape': (4 4)}", "u.npy: header byte 53 is '4'"),
    C("['descr', '|u1']", "u.npy: header byte 0 is '['"),
#undef C
  };
  const uint8_t u[4] = { 1, 2, 3, 4 };
  char err[256];
  tpu_npy h;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unsigned char buf[256];
    const size_t hl = cases[i].len + 1;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)hl; buf[9] = 0;
    memcpy(buf + 10, cases[i].dict, cases[i].len);
    buf[10 + hl - 1] = '\n';
    memcpy(buf + 10 + hl, u, 4);
    ck_assert_int_eq(tpu_npy_parse("u.npy", buf, 10 + hl + 4, &h, err, sizeof err), TPU_ERR_INPUT);
    ck_assert_msg(strstr(err, cases[i].want) == err, "case %zu: %s", i, err);
  }
  /* what NumPy writes, keys in any order and double quotes too, still reads */
  static const char *const good[] = { "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }",
                                      "{\"shape\": (2, 2), \"descr\": \"|u1\", \"fortran_order\": False}" };
  for (size_t i = 0; i < 2; i++) {
    unsigned char buf[256];
    size_t n = npy_file(buf, good[i], u, 4);
    ck_assert_msg(tpu_npy_parse("u.npy", buf, n, &h, err, sizeof err) == TPU_OK, "%s", err);
    ck_assert(h.count == 4 && h.data[3] == 4);
  }
}
END_TEST

/* Reads 'path' and checks it holds exactly 'want'. */
static void file_is(const char *path, const char *want) {
  size_t n = 0;
  char *got = tpu_read_file(path, &n);
  ck_assert_msg(got != NULL, "%s: %s", path, strerror(errno));
  ck_assert_msg(n == strlen(want) && !memcmp(got, want, n), "%s holds '%s', not '%s'", path, got, want);
  tpu_free(got);
}

START_TEST(Write_atomic_follows_symlinks_and_writes_devices_directly) {
  char dir[] = "/tmp/tpusim_wrXXXXXX", p[4][300];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(p[0], sizeof p[0], "%s/sub", dir);
  ck_assert_int_eq(mkdir(p[0], 0777), 0);
  snprintf(p[0], sizeof p[0], "%s/link", dir);               /* link -> sub/t (relative, new) */
  snprintf(p[1], sizeof p[1], "%s/sub/t", dir);
  ck_assert_int_eq(symlink("sub/t", p[0]), 0);
  ck_assert_int_eq(tpu_write_atomic(p[0], "abc", 3), 0);
  struct stat st;
  ck_assert(lstat(p[0], &st) == 0 && S_ISLNK(st.st_mode));
  file_is(p[1], "abc");
  ck_assert_int_eq(tpu_write_atomic(p[0], "de", 2), 0);     /* existing target, replaced whole */
  ck_assert(lstat(p[0], &st) == 0 && S_ISLNK(st.st_mode));
  file_is(p[1], "de");
  snprintf(p[2], sizeof p[2], "%s/sub", dir);                 /* a directory is refused */
  ck_assert_int_eq(tpu_write_atomic(p[2], "x", 1), -1);
  ck_assert_int_eq(errno, EISDIR);
  snprintf(p[2], sizeof p[2], "%s/loop", dir);                /* a symlink loop is refused */
  ck_assert_int_eq(symlink("loop", p[2]), 0);
  ck_assert_int_eq(tpu_write_atomic(p[2], "x", 1), -1);
  ck_assert_int_eq(errno, ELOOP);
  snprintf(p[3], sizeof p[3], "%s/full", dir);                /* a private full device: ENOSPC */
  if (mknod(p[3], S_IFCHR | 0666, makedev(1, 7)) == 0) {
    ck_assert_int_eq(tpu_write_atomic(p[3], "x", 1), -1);
    ck_assert_int_eq(errno, ENOSPC);
    ck_assert(stat(p[3], &st) == 0 && S_ISCHR(st.st_mode));
    remove(p[3]);
  } else {
    fprintf(stderr, "check_base: skipped the full-device case: mknod not permitted\n");
  }
  remove(p[2]); remove(p[1]); remove(p[0]);
  snprintf(p[0], sizeof p[0], "%s/sub", dir);
  ck_assert_int_eq(rmdir(p[0]), 0);                           /* no temporary left in sub */
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* "Did you mean": the nearest name within a third of the length in edits
** (a swap of two neighbours is one), case ignored; none for an exact name,
** a far one or a long one. */
START_TEST(The_nearest_name_is_within_a_third_of_the_length) {
  static const char *const CMDS[] = { "info", "matmul", "model", "train", NULL, "viz" };
  ck_assert_str_eq(tpu_nearest("trian", CMDS, 6), "train");       /* a swap */
  ck_assert_str_eq(tpu_nearest("TRAIN2", CMDS, 6), "train");      /* case, an insertion */
  ck_assert_str_eq(tpu_nearest("mdel", CMDS, 6), "model");        /* a deletion */
  ck_assert_ptr_null(tpu_nearest("train", CMDS, 6));              /* exact: nothing to suggest */
  ck_assert_ptr_null(tpu_nearest("sweep", CMDS, 6));              /* too far */
  ck_assert_ptr_null(tpu_nearest("vz", CMDS, 5));                 /* past n */
  ck_assert_str_eq(tpu_nearest("vz", CMDS, 6), "viz");
  static const char *const KEYS[] = { "mxu.rows", "mxu.cols", "hbm.latency_ns" };
  ck_assert_str_eq(tpu_nearest("mxu.row", KEYS, 3), "mxu.rows");
  ck_assert_str_eq(tpu_nearest("hbm.latncy_sn", KEYS, 3), "hbm.latency_ns");   /* two edits in 13 */
  ck_assert_ptr_null(tpu_nearest("hbm.lat", KEYS, 3));          /* 7 edits */
  char long_name[80];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[79] = 0;
  ck_assert_ptr_null(tpu_nearest(long_name, KEYS, 3));
}
END_TEST

int main(void) {
  Suite *s = suite_create("base");
  TU_CASE(s, "bf16", 120, Every_bf16_value_round_trips_through_f32,
          Rounding_matches_an_independent_reference_on_random_and_edge_values,
          Nan_inf_and_signed_zero_are_kept);
  TU_CASE(s, "alloc_json", 0, Allocation_goes_through_the_hook,
          Text_buffer_grows_and_reports_running_out_of_memory, Json_locator_finds_nested_values,
          Json_readers_name_the_file_position_and_field, Npy_files_round_trip_and_bad_ones_are_named,
          Npy_headers_are_read_as_numpy_reads_them,
          Write_atomic_follows_symlinks_and_writes_devices_directly,
          The_nearest_name_is_within_a_third_of_the_length);
  return tu_main(s);
}
