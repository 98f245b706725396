/*
** check_config.c -- chip configuration: presets, files, overrides, errors,
** and an out-of-memory sweep over loading.
*/
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test_util.h"

START_TEST(Every_preset_loads_and_validates) {
  char err[512];
  int n = 0;
  for (const char *const *p = tpu_chip_preset_names(); *p; p++, n++) {
    tpu_chip_config c;
    ck_assert_msg(tpu_chip_config_load(*p, &c, err, sizeof err) == TPU_OK, "%s: %s", *p, err);
    ck_assert_str_eq(c.name, *p);
    ck_assert(tpu_chip_config_validate(&c, err, sizeof err) == TPU_OK);
    /* a slice preset: its cores in its name, its layout holding its chips, a host per 4 chips */
    const char *dash = strrchr(*p, '-');
    if (!strncmp(*p, "tpu-v", 5) && atoi(dash + 1) > 8) {
      int x, y;
      tpu_chip_torus(&c, &x, &y);
      ck_assert_int_eq(c.cores, atoi(dash + 1));
      ck_assert_int_eq(x * y * c.cores_per_chip, c.cores);
      ck_assert(x >= y && c.hosts * 4 == x * y);
    }
  }
  ck_assert_int_eq(n, 14);   /* the boards, teach, 4 v2 and 7 v3 pod slices */
  ck_assert_str_eq(tpu_chip_preset_names()[0], "tpu-v2-8");
}
END_TEST

START_TEST(Published_peaks_follow_from_the_presets) {
  char err[512];
  tpu_chip_config c;
  tpu_chip_peaks pk;
  ck_assert(tpu_chip_config_load("tpu-v2-8", &c, err, sizeof err) == TPU_OK);
  tpu_chip_peaks_of(&c, &pk);
  /* 45 TFLOP/s per v2 chip (Jouppi et al. 2020) */
  ck_assert_double_eq_tol(pk.bf16_flops_per_chip / 1e12, 45.9, 0.1);
  ck_assert_int_eq(pk.chips, 4);
  ck_assert(tpu_chip_config_load("tpu-v3-8", &c, err, sizeof err) == TPU_OK);
  tpu_chip_peaks_of(&c, &pk);
  /* 123 TFLOP/s per v3 chip */
  ck_assert_double_eq_tol(pk.bf16_flops_per_chip / 1e12, 123.2, 0.2);
}
END_TEST

START_TEST(Json_writer_output_loads_back_identically) {
  char err[512];
  for (const char *const *p = tpu_chip_preset_names(); *p; p++) {
    tpu_chip_config a, b;
    ck_assert(tpu_chip_config_load(*p, &a, err, sizeof err) == TPU_OK);
    ck_assert(tpu_chip_config_set(&a, "mxu.rows=17", err, sizeof err) == TPU_OK);
    char *js = tpu_chip_config_to_json(&a);
    ck_assert_ptr_nonnull(js);
    char path[] = "/tmp/tpusim_cfgXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(js, f);
    fclose(f);
    tpu_free(js);
    ck_assert_msg(tpu_chip_config_load(path, &b, err, sizeof err) == TPU_OK, "%s", err);
    remove(path);
    ck_assert_int_eq(b.mxu.rows, 17);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
  }
}
END_TEST

START_TEST(Set_rejects_bad_values_and_leaves_the_config_unchanged) {
  char err[512];
  tpu_chip_config c, before;
  ck_assert(tpu_chip_config_load("teach", &c, err, sizeof err) == TPU_OK);
  before = c;
  static const char *bad[] = { "mxu.rows=0", "mxu.rows=1025", "mxu.rows=-1", "mxu.rows=8x",
    "mxu.rows=", "=3", "cores=5", "clock_mhz=0", "clock_mhz=inf", "hbm.latency_ns=-1",
    "ici.topology=mesh", "mxu.double_buffer=1", "nokey=1", "mxu.rows" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(tpu_chip_config_set(&c, bad[i], err, sizeof err) == TPU_ERR_CONFIG, "%s accepted", bad[i]);
    ck_assert_msg(memcmp(&c, &before, sizeof c) == 0, "%s changed the config", bad[i]);
  }
  ck_assert(tpu_chip_config_set(&c, "cores=2", err, sizeof err) == TPU_ERR_CONFIG); /* 4 per chip */
  ck_assert(tpu_chip_config_set(&c, "cores_per_chip=2", err, sizeof err) == TPU_OK);
  ck_assert(tpu_chip_config_set(&c, "cores=2", err, sizeof err) == TPU_OK);
}
END_TEST


/* Every allocation made while loading a file fails in turn: the loader must
** return an error, never crash or leak (ASan/valgrind check the leak). */
static tpu_status load_rows_16(void *path) {
  char err[512];
  tpu_chip_config c;
  tpu_status st = tpu_chip_config_load(path, &c, err, sizeof err);
  if (st == TPU_OK) ck_assert_int_eq(c.mxu.rows, 16);
  return st;
}
START_TEST(Loading_survives_every_allocation_failure) {
  char path[] = "/tmp/tpusim_cfgXXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fputs("{ \"base\": \"teach\", \"mxu\": { \"rows\": 16 } }", f);
  fclose(f);
  tu_oom_sweep(200, load_rows_16, path);
  remove(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("config");
  TU_CASE(s, "functional", 60, Every_preset_loads_and_validates, Published_peaks_follow_from_the_presets,
          Json_writer_output_loads_back_identically);
  TU_CASE(s, "limits", 0, Set_rejects_bad_values_and_leaves_the_config_unchanged);
  TU_CASE(s, "oom", 60, Loading_survives_every_allocation_failure);
  return tu_main(s);
}
