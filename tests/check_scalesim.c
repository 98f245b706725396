/*
** check_scalesim.c -- SCALE-Sim v2 compatibility (scalesim/scalesim.h):
** the compute model against hand counts on 4x4, 8x8 and 128x128 arrays
** with partial folds, a small PE-level model of each dataflow stepped cycle
** by cycle on random sizes, and SCALE-Sim's own published report for its
** test run; the memory model's hand counts, its closed forms against the
** walk over every request, and the published report; the readers and the
** lowering (messages naming file, line and column; depthwise layers; every
** allocation failing in turn); the report files' bytes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scalesim/scalesim.h"
#include "tests/test_util.h"

/* {==================================================================
** A PE-level model of one fold, as SCALE-Sim's documentation describes the
** three dataflows. The array is R x C; a fold always occupies all of it
** (SCALE-Sim pads a partial fold with idle PEs), T is the temporal size.
**   ws/is: the stationary operand shifts in from the top, one array row per
**          cycle (cycles 0..R-1); element t of the streamed operand meets
**          PE(r,c) at cycle R + t + r + c; the partial sum of (t, c)
**          is written in the cycle PE(R-1,c) adds into it.
**   os:    both operands stream in skewed; MAC k of PE(r,c) happens at
**          cycle k + r + c and its result is written in the cycle of its
**          last MAC (outputs leave by a separate path, no drain charged).
** The model steps cycles and asks every PE whether anything happens there
** this cycle; the fold ends after the last such cycle. Folds run end to
** end; SCALE-Sim reports the last cycle's index (count - 1).
** ================================================================== */
static bool pe_busy(tpu_mxu_dataflow df, int R, uint64_t T, int r, int c, uint64_t cy) {
  if (df == TPU_MXU_OS) return cy >= (uint64_t)(r + c) && cy - (uint64_t)(r + c) < T;
  if (cy < (uint64_t)R) return r <= (int)cy;                    /* loading: row r filled by cycle r */
  const uint64_t s = (uint64_t)R + (uint64_t)(r + c);           /* first element at PE(r,c) */
  return cy >= s && cy - s < T;                                 /* MAC */
}

static uint64_t pe_fold_cycles(tpu_mxu_dataflow df, int R, int C, uint64_t T) {
  uint64_t last = 0;
  for (uint64_t cy = 0; cy < 4 * (uint64_t)(R + C) + 2 * T + 8; cy++)
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++)
        if (pe_busy(df, R, T, r, c, cy)) last = cy;
  return last + 1;
}

static uint64_t pe_total(tpu_mxu_dataflow df, int R, int C, uint64_t M, uint64_t N, uint64_t K) {
  const uint64_t sr = df == TPU_MXU_OS ? M : K, sc = df == TPU_MXU_IS ? M : N;
  const uint64_t t = df == TPU_MXU_WS ? M : df == TPU_MXU_OS ? K : N;
  uint64_t total = 0;
  for (uint64_t fr = 0; fr < sr; fr += (uint64_t)R)
    for (uint64_t fc = 0; fc < sc; fc += (uint64_t)C) total += pe_fold_cycles(df, R, C, t);
  return total - 1;
}
/* }================================================================== */

START_TEST(Hand_counts_on_small_and_full_arrays_with_partial_folds) {
  static const struct {
    int rows, cols; tpu_mxu_dataflow df; uint64_t m, n, k, folds, cycles;
  } cases[] = {
    /* ws: (2R + C + T - 2) a fold, T = M */
    { 4, 4, TPU_MXU_WS, 4, 4, 4, 1, 2 * 4 + 4 + 4 - 2 - 1 },          /* 13 */
    { 8, 8, TPU_MXU_WS, 10, 9, 17, 6, 6 * (16 + 8 + 10 - 2) - 1 },     /* K: 3 folds, N: 2 */
    { 128, 128, TPU_MXU_WS, 128, 128, 128, 1, 509 },                   /* tpusim counts 510 */
    { 128, 128, TPU_MXU_WS, 1000, 300, 129, 6, 6 * (256 + 128 + 1000 - 2) - 1 },
    /* os: (R + C + T - 2) a fold, S_r = M, T = K */
    { 4, 4, TPU_MXU_OS, 5, 4, 3, 2, 2 * (4 + 4 + 3 - 2) - 1 },         /* 17 */
    { 8, 8, TPU_MXU_OS, 64, 17, 100, 24, 24 * (8 + 8 + 100 - 2) - 1 },
    { 128, 128, TPU_MXU_OS, 128, 128, 128, 1, 128 + 128 + 128 - 2 - 1 },
    /* is: like ws with S_c = M, T = N */
    { 8, 8, TPU_MXU_IS, 9, 3, 8, 2, 2 * (16 + 8 + 3 - 2) - 1 },        /* 49 */
    { 4, 4, TPU_MXU_IS, 4, 4, 4, 1, 13 },
    { 128, 128, TPU_MXU_IS, 3025, 64, 147, 48, 48 * (256 + 128 + 64 - 2) - 1 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tpu_ss_compute s;
    tpu_ss_compute_layer(cases[i].rows, cases[i].cols, cases[i].df, cases[i].m, cases[i].n, cases[i].k, &s);
    TU_EQ_U64(cases[i].folds, s.row_folds * s.col_folds);
    TU_EQ_U64(cases[i].cycles, s.total_cycles);
    TU_EQ_U64(cases[i].m * cases[i].n * cases[i].k, s.macs);
  }
}
END_TEST

START_TEST(Every_dataflow_matches_its_pe_model_on_random_sizes) {
  uint64_t seed = 16;
  for (int trial = 0; trial < 300; trial++) {
    const int R = 1 + (int)(tpu_splitmix64(&seed) % 9), C = 1 + (int)(tpu_splitmix64(&seed) % 9);
    const uint64_t M = 1 + tpu_splitmix64(&seed) % 30, N = 1 + tpu_splitmix64(&seed) % 30;
    const uint64_t K = 1 + tpu_splitmix64(&seed) % 30;
    const tpu_mxu_dataflow df = (tpu_mxu_dataflow)(trial % 3);
    tpu_ss_compute s;
    tpu_ss_compute_layer(R, C, df, M, N, K, &s);
    const uint64_t pe = pe_total(df, R, C, M, N, K);
    ck_assert_msg(pe == s.total_cycles, "trial %d: %s %dx%d M %llu N %llu K %llu: formula %llu, PE model %llu",
                  trial, tpu_mxu_dataflow_name(df), R, C, (unsigned long long)M, (unsigned long long)N,
                  (unsigned long long)K, (unsigned long long)s.total_cycles, (unsigned long long)pe);
  }
}
END_TEST

/* SCALE-Sim v2's own test: configs/scale.cfg (32x32) with Dataflow ws,
** topologies/conv_nets/alexnet_part.csv (Conv1: 224x224, 11x11x3, 96
** filters, stride 4 -> 55x55 outputs), its test/golden_trace reports:
**   0, 112283, 0, 91.68309650614964, 94.53125, 90.78000992063492,
**   0, 29.338590881967885, 0.31035864734643714, 31.035864734643713, ... */
START_TEST(Alexnet_conv1_on_32x32_reproduces_scalesims_published_report) {
  tpu_ss_compute s;
  tpu_ss_compute_layer(32, 32, TPU_MXU_WS, 55 * 55, 96, 11 * 11 * 3, &s);
  TU_EQ_U64(112283, s.total_cycles);
  ck_assert_double_eq(91.68309650614964, s.overall_util_pct);
  ck_assert_double_eq(94.53125, s.mapping_eff_pct);
  ck_assert_double_eq_tol(90.78000992063492, s.compute_util_pct, 1e-12);
  ck_assert_double_eq(29.338590881967885, (double)s.ifmap_sram_reads / (double)s.total_cycles);
  ck_assert_double_eq(0.31035864734643714, (double)s.filter_sram_reads / (double)s.total_cycles);
  ck_assert_double_eq(31.035864734643713, (double)s.ofmap_sram_writes / (double)s.total_cycles);
}
END_TEST

/* A GEMM as SCALE-Sim lowers it: an M x K input, N filters of 1 x K. */
static tpu_ss_conv gemm_layer(uint64_t M, uint64_t N, uint64_t K) {
  return (tpu_ss_conv){ M, K, 1, K, 1, N, 1, 1, M, 1 };
}

static void check_access(const tpu_ss_access *a, int64_t start, int64_t stop, uint64_t count) {
  ck_assert_int_eq(start, a->start);
  ck_assert_int_eq(stop, a->stop);
  TU_EQ_U64(count, a->count);
}

/* 4x4 ws, M = N = K = 4: one fold of 14 rows (2R + C + T - 2). 16 IFMAP and 16 filter words
** fill 2 sets of 10 and no epoch, so each is one prefetch of 20 words at
** 10 a cycle before cycle 0 (-2 .. -1: 8 words a cycle). The 16 OFMAP
** words never fill half of 1024, so all 4 lines drain after the last row
** (cycle 13), one a cycle. */
START_TEST(Memory_hand_counts_one_fold_without_drains) {
  const tpu_ss_conv g = gemm_layer(4, 4, 4);
  const uint64_t words[3] = { 1024, 1024, 1024 };
  tpu_ss_mem m;
  ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(4, 4, TPU_MXU_WS, &g, words, false, &m));
  ck_assert_ptr_null(m.unsupported);
  TU_EQ_U64(13, m.total_cycles);
  TU_EQ_U64(0, m.stall_cycles);
  check_access(&m.sram[0], 5, 11, 16);      /* rows 4..10 (R + t + c), served a cycle later */
  check_access(&m.sram[1], 1, 4, 16);       /* rows 0..3, the weights upside down */
  check_access(&m.sram[2], 7, 13, 16);      /* rows 7..13 (2R - 1 + t + c) */
  check_access(&m.dram[0], -2, -1, 16);
  check_access(&m.dram[1], -2, -1, 16);
  check_access(&m.dram[2], 13, 16, 16);
  ck_assert_double_eq(8.0, m.dram_bw[0]);
  ck_assert_double_eq(4.0, m.dram_bw[2]);
}
END_TEST

/* 4x2 ws, M = 6, N = 2, K = 4, an 8-word OFMAP buffer: lines of 2 words,
** a drain takes 2 lines once more than 4 words are held. Rows 7..13 write
** 1, 2, 2, 2, 2, 2, 1 words. Row 9 closes a padded line (1 word) and drains
** lines 0-1 (cycles 9-10); row 11 drains lines 2-3 (cycles 11-12), line 2
** being the padded one, counted full because it is not the chunk's last;
** after the last row lines 4-5 drain at 13-14 and the padded line 6 at 15,
** its pad not counted: 13 DRAM writes for 12 SRAM writes. */
START_TEST(Memory_hand_counts_ofmap_drains_and_padded_lines) {
  const tpu_ss_conv g = gemm_layer(6, 2, 4);
  const uint64_t words[3] = { 1024, 1024, 8 };
  tpu_ss_mem m;
  ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(4, 2, TPU_MXU_WS, &g, words, false, &m));
  TU_EQ_U64(13, m.total_cycles);
  TU_EQ_U64(0, m.stall_cycles);
  check_access(&m.dram[2], 9, 15, 13);
  ck_assert_double_eq(13.0 / 7.0, m.dram_bw[2]);
}
END_TEST

/* An IFMAP buffer of 100 words: sets of 1 word, epochs of 50. A 10 x 10 x 10
** GEMM on 8x8 ws reads its 100 IFMAP words twice (two column folds); the
** second pass finds none of them in the current epoch (each epoch is 50
** words of the same order), so the DRAM reads are 200. */
START_TEST(Memory_epochs_forget_what_they_did_not_just_fetch) {
  const tpu_ss_conv g = gemm_layer(10, 10, 10);
  const uint64_t words[3] = { 100, 1024, 1024 }, big[3] = { 1024, 1024, 1024 };
  tpu_ss_mem m;
  ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(8, 8, TPU_MXU_WS, &g, words, false, &m));
  TU_EQ_U64(200, m.dram[0].count);
  TU_EQ_U64(200, m.sram[0].count);       /* 2 column folds x M x K */
  ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(8, 8, TPU_MXU_WS, &g, big, false, &m));
  TU_EQ_U64(100, m.dram[0].count);       /* 1024 words: all in one epoch, read once */
}
END_TEST

/* The closed forms (distinct-address operands, passes, quiet OFMAP runs)
** against the walk over every request and row, on random GEMMs and
** convolutions (overlapping windows, windows past the edge), small SRAMs
** (100 words up: epochs of 50 words, drains of a few lines) and all three
** dataflows: every figure equal. */
START_TEST(Memory_closed_forms_equal_the_walk_over_every_request) {
  uint64_t seed = 1616;
  int fast_paths = 0, epochs_filled = 0;
  for (int trial = 0; trial < 400; trial++) {
    const int R = 1 + (int)(tpu_splitmix64(&seed) % 9), C = 1 + (int)(tpu_splitmix64(&seed) % 9);
    const tpu_mxu_dataflow df = (tpu_mxu_dataflow)(trial % 3);
    tpu_ss_conv g;
    if (trial % 2) {
      g = gemm_layer(1 + tpu_splitmix64(&seed) % 40, 1 + tpu_splitmix64(&seed) % 40, 1 + tpu_splitmix64(&seed) % 40);
    } else {
      const uint64_t H = 2 + tpu_splitmix64(&seed) % 12, W = 2 + tpu_splitmix64(&seed) % 12;
      const uint64_t fh = 1 + tpu_splitmix64(&seed) % H, fw = 1 + tpu_splitmix64(&seed) % W;
      const uint64_t sh = 1 + tpu_splitmix64(&seed) % 3, sw = 1 + tpu_splitmix64(&seed) % 3;
      g = (tpu_ss_conv){ H, W, fh, fw, 1 + tpu_splitmix64(&seed) % 3, 1 + tpu_splitmix64(&seed) % 12, sh, sw,
                             (H - fh + sh + sh - 1) / sh, (W - fw + sw + sw - 1) / sw };
    }
    const uint64_t words[3] = { 100 + tpu_splitmix64(&seed) % 400, 100 + tpu_splitmix64(&seed) % 400,
                                2 + tpu_splitmix64(&seed) % 60 };
    tpu_ss_mem a, b;
    ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(R, C, df, &g, words, false, &a));
    ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(R, C, df, &g, words, true, &b));
    ck_assert_msg((a.unsupported == NULL) == (b.unsupported == NULL), "trial %d: unsupported differs", trial);
    if (a.unsupported) continue;
    fast_paths++;
    epochs_filled += a.dram[0].stop >= 0 && a.dram[1].stop >= 0;
    ck_assert_msg(a.total_cycles == b.total_cycles && a.stall_cycles == b.stall_cycles, "trial %d: cycles", trial);
    for (int k = 0; k < 3; k++) {
      ck_assert_msg(a.sram[k].start == b.sram[k].start && a.sram[k].stop == b.sram[k].stop &&
                    a.sram[k].count == b.sram[k].count, "trial %d: %s SRAM %d: %lld..%lld %llu, walk %lld..%lld %llu",
                    trial, tpu_mxu_dataflow_name(df), k, (long long)a.sram[k].start, (long long)a.sram[k].stop,
                    (unsigned long long)a.sram[k].count, (long long)b.sram[k].start, (long long)b.sram[k].stop,
                    (unsigned long long)b.sram[k].count);
      ck_assert_msg(a.dram[k].start == b.dram[k].start && a.dram[k].stop == b.dram[k].stop &&
                    a.dram[k].count == b.dram[k].count, "trial %d: %s %dx%d DRAM %d: %lld..%lld %llu, walk %lld..%lld %llu",
                    trial, tpu_mxu_dataflow_name(df), R, C, k, (long long)a.dram[k].start, (long long)a.dram[k].stop,
                    (unsigned long long)a.dram[k].count, (long long)b.dram[k].start, (long long)b.dram[k].stop,
                    (unsigned long long)b.dram[k].count);
    }
  }
  ck_assert_int_gt(fast_paths, 300);
  ck_assert_int_gt(epochs_filled, 100);          /* the pass arithmetic and the drains both matter */
}
END_TEST

/* SCALE-Sim's golden_trace (its test/golden_trace, Conv1 on 32x32 ws, 64 KiB
** SRAMs): the DRAM columns of BANDWIDTH_REPORT.csv and the whole of
** DETAILED_ACCESS_REPORT.csv. */
START_TEST(Alexnet_conv1_memory_reproduces_scalesims_published_report) {
  const tpu_ss_conv g = { 224, 224, 11, 11, 3, 96, 4, 4, 55, 55 };
  const uint64_t words[3] = { 65536, 65536, 65536 };
  tpu_ss_mem m;
  ck_assert_int_eq(TPU_OK, tpu_ss_mem_layer(32, 32, TPU_MXU_WS, &g, words, false, &m));
  TU_EQ_U64(112283, m.total_cycles);
  check_access(&m.sram[0], 33, 112176, 3294225);
  check_access(&m.sram[1], 1, 109197, 34848);
  check_access(&m.sram[2], 63, 112283, 3484800);
  check_access(&m.dram[0], -3243, 111824, 1805023);
  check_access(&m.dram[1], -3275, 102937, 34848);
  check_access(&m.dram[2], 1102, 112639, 3484831);
  ck_assert_double_eq(15.686576632947475, m.dram_bw[0]);
  ck_assert_double_eq(0.3280954308794592, m.dram_bw[1]);
  ck_assert_double_eq(31.243441697000126, m.dram_bw[2]);
}
END_TEST

/* {==================================================================
** The readers and the lowering
** ================================================================== */
/* Writes text to a scratch file NAME and returns its path. */
static const char *file_of(const char *name, const char *text) {
  tu_scratch("ss");
  const char *p = tu_path(name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return p;
}

static const char CFG[] =
  "[general]\nrun_name = t_os\n\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 4\nIfmapSramSzkB: 64\n"
  "FilterSramSzkB: 64\nOfmapSramSzkB: 32\nIfmapOffset: 0\nFilterOffset: 10000000\nOfmapOffset: 20000000\n"
  "Dataflow: os\nBandwidth: 10, 10\n\n[run_presets]\nInterfaceBandwidth: CALC\n";

START_TEST(The_config_reader_takes_scalesims_file_and_names_a_bad_field) {
  char err[512];
  tpu_ss_config c;
  ck_assert_int_eq(TPU_OK, tpu_ss_config_read(file_of("a.cfg", CFG), &c, err, sizeof err));
  ck_assert_str_eq(c.run_name, "t_os");
  ck_assert_int_eq(c.rows, 8);
  ck_assert_int_eq(c.cols, 4);
  ck_assert_int_eq(c.ofmap_kib, 32);
  ck_assert_int_eq(c.banks, 1);
  ck_assert_int_eq(c.bandwidth, 10);
  ck_assert_int_eq(c.dataflow, TPU_MXU_OS);
  ck_assert(!c.user_bandwidth);
  char bad[sizeof CFG + 16];
  snprintf(bad, sizeof bad, "%s", CFG);
  memcpy(strstr(bad, "Width: 4"), "Width: x", 8);
  const char *p = file_of("b.cfg", bad);
  ck_assert_int_eq(TPU_ERR_INPUT, tpu_ss_config_read(p, &c, err, sizeof err));
  char want[600];
  snprintf(want, sizeof want, "%s:6:13: field 'ArrayWidth': expected an integer in 1..1024, got 'x'", p);
  ck_assert_str_eq(err, want);
  ck_assert_int_eq(TPU_ERR_INPUT, tpu_ss_config_read(file_of("c.cfg", "[general]\nrun_name = r\n"), &c, err,
                                                     sizeof err));
  ck_assert_msg(strstr(err, "missing key 'ArrayHeight'") != NULL, "%s", err);
  ck_assert_int_eq(TPU_ERR_IO, tpu_ss_config_read(tu_path("none.cfg"), &c, err, sizeof err));
}
END_TEST

START_TEST(Conv_layers_lower_as_scalesim_and_depthwise_ones_split_per_channel) {
  char err[512];
  tpu_ss_topology t;
  const char *p = file_of("t.csv", "Layer, IFMAP H, IFMAP W, Fh, Fw, C, F, S,\n"
                                   "conv1, 224, 224, 11, 11, 3, 96, 4,\n,,,,\n"
                                   "DPconv, 9, 9, 3, 3, 3, 3, 2, 1, note,\n");
  ck_assert_int_eq(TPU_OK, tpu_ss_topology_read(p, false, &t, err, sizeof err));
  ck_assert_int_eq(t.n, 4);
  /* ceil((224 - 11 + 4) / 4) = 55: the window past the edge counts */
  TU_EQ_U64(55, t.layers[0].ofmap_h);
  TU_EQ_U64(55 * 55, t.layers[0].m);
  TU_EQ_U64(96, t.layers[0].n);
  TU_EQ_U64(11 * 11 * 3, t.layers[0].k);
  ck_assert_int_eq(t.layers[0].line, 2);
  for (int c = 0; c < 3; c++) {
    char name[64];
    snprintf(name, sizeof name, "DPconvChannel_%d", c);
    ck_assert_str_eq(t.layers[1 + c].name, name);
    TU_EQ_U64(4, t.layers[1 + c].ofmap_h);      /* stride 2 down, 1 across */
    TU_EQ_U64(7, t.layers[1 + c].ofmap_w);
    TU_EQ_U64(9, t.layers[1 + c].k);            /* one channel */
  }
  tpu_ss_topology_free(&t);
  ck_assert_int_eq(TPU_OK, tpu_ss_topology_read(file_of("g.csv", "L, M, N, K\nqkv, 512, 2304, 768,\n"), true, &t,
                                                err, sizeof err));
  TU_EQ_U64(512, t.layers[0].m);
  TU_EQ_U64(2304, t.layers[0].n);
  TU_EQ_U64(768, t.layers[0].k);
  tpu_ss_topology_free(&t);
  p = file_of("bad.csv", "L, H, W, Fh, Fw, C, F, S\nc, 4, 4, 5, 1, 1, 1, 1\n");
  ck_assert_int_eq(TPU_ERR_INPUT, tpu_ss_topology_read(p, false, &t, err, sizeof err));
  char want[600];
  snprintf(want, sizeof want, "%s:2:10: field 'Filter Height': 5 is larger than the IFMAP height 4", p);
  ck_assert_str_eq(err, want);
  ck_assert_ptr_null(t.layers);
}
END_TEST

static tpu_status read_topology(void *path) {
  char err[512];
  tpu_ss_topology t;
  const tpu_status st = tpu_ss_topology_read(path, false, &t, err, sizeof err);
  if (st == TPU_OK) ck_assert_int_eq(t.n, 130);
  else ck_assert_msg(strstr(err, "out of memory") != NULL, "%s", err);
  tpu_ss_topology_free(&t);
  return st;
}

START_TEST(The_topology_reader_survives_every_allocation_failure) {
  char text[8192];
  int n = snprintf(text, sizeof text, "L, H, W, Fh, Fw, C, F, S\n");
  for (int i = 0; i < 129; i++) n += snprintf(text + n, sizeof text - (size_t)n, "c%d, 8, 8, 3, 3, 2, 4, 1,\n", i);
  snprintf(text + n, sizeof text - (size_t)n, "DPc, 8, 8, 3, 3, 1, 4, 1,\n");
  tu_oom_sweep(16, read_topology, (void *)file_of("oom.csv", text));
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The runs and the report files
** ================================================================== */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  static char buf[4096];
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

START_TEST(Compat_reports_are_scalesims_bytes) {
  char err[512];
  tpu_ss_config c;
  tpu_ss_topology t;
  ck_assert_int_eq(TPU_OK, tpu_ss_config_read(file_of("a.cfg", CFG), &c, err, sizeof err));
  c.dataflow = TPU_MXU_WS;
  ck_assert_int_eq(TPU_OK, tpu_ss_topology_read(file_of("g.csv", "L, M, N, K\ng, 4, 4, 4,\n"), true, &t, err,
                                                sizeof err));
  tpu_ss_result r[1];
  memset(r, 0, sizeof r);
  uint64_t total;
  ck_assert_int_eq(TPU_OK, tpu_ss_run_layers(&c, "a.cfg", &t, "g.csv", true, r, &total, err, sizeof err));
  TU_EQ_U64(r[0].cycles, total);
  ck_assert(r[0].has_mem);
  char dir[256];
  tpu_ss_run_dir_name(&c, TPU_MXU_OS, TPU_SS_COMPAT, NULL, dir, sizeof dir);
  ck_assert_str_eq(dir, "t_ws");                 /* ws differs from the file's os: its ending replaced */
  tpu_ss_run_dir_name(&c, TPU_MXU_OS, TPU_SS_MXU, NULL, dir, sizeof dir);
  ck_assert_str_eq(dir, "t_ws_tpusim");
  snprintf(c.run_name, sizeof c.run_name, "net");
  tpu_ss_run_dir_name(&c, TPU_MXU_OS, TPU_SS_COMPAT, NULL, dir, sizeof dir);
  ck_assert_str_eq(dir, "net_ws");               /* no ending: one added */
  tpu_ss_run_dir_name(&c, TPU_MXU_WS, TPU_SS_COMPAT, NULL, dir, sizeof dir);
  ck_assert_str_eq(dir, "net");                  /* the file's dataflow: SCALE-Sim's own name */
  ck_assert_int_eq(TPU_OK, tpu_ss_write_reports(tu_path("logs"), "t_ws", &t, r, err, sizeof err));
  /* one 4x4x4 fold on 8x4: (2*8 + 4 + 4 - 2) - 1 = 21 cycles; 4x4 of 32 PEs
  ** mapped (50%); 64 MACs over 21 x 32 and over 32 x (22 + 4 - 1) PE-cycles */
  ck_assert_str_eq(slurp(tu_path("logs/t_ws/COMPUTE_REPORT.csv")),
                   "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n"
                   "0, 21, 0, 9.523809523809524, 50.0, 8.0,\n");
  ck_assert_msg(strstr(slurp(tu_path("logs/t_ws/BANDWIDTH_REPORT.csv")), "Avg OFMAP DRAM BW,\n0, ") != NULL,
                "%s", slurp(tu_path("logs/t_ws/BANDWIDTH_REPORT.csv")));
  ck_assert_msg(!strncmp(slurp(tu_path("logs/t_ws/DETAILED_ACCESS_REPORT.csv")), "LayerID, SRAM IFMAP Start Cycle",
                         31), "%s", slurp(tu_path("logs/t_ws/DETAILED_ACCESS_REPORT.csv")));
  tpu_ss_topology_free(&t);
}
END_TEST
/* }================================================================== */

int main(void) {
  Suite *s = suite_create("scalesim");
  TU_CASE(s, "compute", 60, Hand_counts_on_small_and_full_arrays_with_partial_folds,
          Every_dataflow_matches_its_pe_model_on_random_sizes, Alexnet_conv1_on_32x32_reproduces_scalesims_published_report);
  TU_CASE(s, "memory", 60, Memory_hand_counts_one_fold_without_drains, Memory_hand_counts_ofmap_drains_and_padded_lines,
          Memory_epochs_forget_what_they_did_not_just_fetch, Alexnet_conv1_memory_reproduces_scalesims_published_report,
          Memory_closed_forms_equal_the_walk_over_every_request);
  TU_CASE(s, "files", 60, The_config_reader_takes_scalesims_file_and_names_a_bad_field,
          Conv_layers_lower_as_scalesim_and_depthwise_ones_split_per_channel, Compat_reports_are_scalesims_bytes,
          The_topology_reader_survives_every_allocation_failure);
  return tu_main(s);
}
