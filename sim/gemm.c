/*
** gemm.c -- the chip program of one GEMM split across cores along M: what
** `tpusim matmul --cores` runs and `tpusim viz` shows (one builder, so their
** figures agree). The layout and op order are documented at
** tpu_sim_gemm_program in sim.h.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

/* A VMEM tile buffer of shape r x c for slot s, created on first use. */
static int vtile(tpu_sim_program *p, int core, const char *what, long r, long c, int s) {
  char name[64];
  snprintf(name, sizeof name, "%s_%ldx%ld_%d", what, r, c, s);
  int h = tpu_sim_buffer_find(p, core, name);
  return h ? h : tpu_sim_buffer(p, core, name, TPU_SIM_VMEM, TPU_SIM_F32, r, c);
}

static long minl(long a, long b) { return a < b ? a : b; }

/* The HBM block "WHAT_I_J" of r x c, holding the r x c values at src (row
** stride ld) when src is set (copied through scratch). 0 or -1. */
static int hbm_block(tpu_sim_program *p, int core, const char *what, long i, long j, long r, long c,
                     const float *src, long ld, float *scratch) {
  char name[64];
  snprintf(name, sizeof name, "%s_%ld_%ld", what, i, j);
  int h = tpu_sim_buffer(p, core, name, TPU_SIM_HBM, TPU_SIM_F32, r, c);
  if (!h) return -1;
  if (!src) return 0;
  for (long k = 0; k < r; k++) memcpy(scratch + k * c, src + k * ld, (size_t)c * sizeof *src);
  return tpu_sim_buffer_init(p, core, h, scratch) == TPU_OK ? 0 : -1;
}

/* Builds core 'core's program for rows [m0, m0+mi); adds its HBM traffic to
** *bytes. A, B hold values (or NULL at the timing level). Returns 0 or -1
** (message in tpu_sim_program_error). */
static int build_core(tpu_sim_program *p, int core, long m0, long mi, long N, long K, long T,
                      tpu_precision prec, const float *A, const float *B, float *scratch, double *bytes) {
  const long MB = (mi + T - 1) / T, NB = (N + T - 1) / T, KB = (K + T - 1) / T;
  char name[64];
  /* HBM blocks */
  for (long mb = 0; mb < MB; mb++)
    for (long kb = 0; kb < KB; kb++)
      if (hbm_block(p, core, "A", mb, kb, minl(T, mi - mb * T), minl(T, K - kb * T),
                    A ? A + (m0 + mb * T) * K + kb * T : NULL, K, scratch)) return -1;
  for (long kb = 0; kb < KB; kb++)
    for (long nb = 0; nb < NB; nb++)
      if (hbm_block(p, core, "B", kb, nb, minl(T, K - kb * T), minl(T, N - nb * T),
                    B ? B + (kb * T) * N + nb * T : NULL, N, scratch)) return -1;
  for (long mb = 0; mb < MB; mb++)
    for (long nb = 0; nb < NB; nb++) {
      snprintf(name, sizeof name, "C_%ld_%ld", mb, nb);
      if (!tpu_sim_buffer(p, core, name, TPU_SIM_HBM, TPU_SIM_F32, minl(T, mi - mb * T), minl(T, N - nb * T))) return -1;
    }
  /* The C tile's write-back is queued on the (in-order) DMA unit after the
  ** next block's first loads, not before them: otherwise it would wait for
  ** the block's last matmul and hold back the prefetch behind it. */
  int wb_src = 0, wb_dst = 0;
  long slot = 0, cslot = 0;
  for (long mb = 0; mb < MB; mb++)
    for (long nb = 0; nb < NB; nb++, cslot ^= 1) {
      const long r = minl(T, mi - mb * T), c = minl(T, N - nb * T);
      const int vc = vtile(p, core, "c", r, c, (int)cslot);
      if (!vc) return -1;
      for (long kb = 0; kb < KB; kb++, slot ^= 1) {
        const long kk = minl(T, K - kb * T);
        const int va = vtile(p, core, "a", r, kk, (int)slot), vb = vtile(p, core, "b", kk, c, (int)slot);
        if (!va || !vb) return -1;
        snprintf(name, sizeof name, "A_%ld_%ld", mb, kb);
        tpu_sim_op op = { .kind = TPU_SIM_DMA, .src = tpu_sim_buffer_find(p, core, name), .dst = va };
        if (tpu_sim_add_op(p, core, &op, NULL) != TPU_OK) return -1;
        snprintf(name, sizeof name, "B_%ld_%ld", kb, nb);
        op = (tpu_sim_op){ .kind = TPU_SIM_DMA, .src = tpu_sim_buffer_find(p, core, name), .dst = vb };
        if (tpu_sim_add_op(p, core, &op, NULL) != TPU_OK) return -1;
        if (wb_src) {
          op = (tpu_sim_op){ .kind = TPU_SIM_DMA, .src = wb_src, .dst = wb_dst };
          if (tpu_sim_add_op(p, core, &op, NULL) != TPU_OK) return -1;
          wb_src = 0;
        }
        op = (tpu_sim_op){ .kind = TPU_SIM_MATMUL, .a = va, .b = vb, .dst = vc, .accumulate = kb > 0, .precision = prec };
        if (tpu_sim_add_op(p, core, &op, NULL) != TPU_OK) return -1;
        *bytes += 4.0 * (double)(r * kk + kk * c);
      }
      snprintf(name, sizeof name, "C_%ld_%ld", mb, nb);
      wb_src = vc;
      wb_dst = tpu_sim_buffer_find(p, core, name);
      *bytes += 4.0 * (double)(r * c);
    }
  tpu_sim_op op = { .kind = TPU_SIM_DMA, .src = wb_src, .dst = wb_dst };
  return tpu_sim_add_op(p, core, &op, NULL) == TPU_OK ? 0 : -1;
}

int64_t tpu_sim_gemm_block(const tpu_chip_config *cfg) {
  long T = 1;
  while (T < 1024 && 12.0 * (double)(2 * T) * (double)(2 * T) * 4.0 <= (double)cfg->vmem_capacity_kib * 1024.0) T *= 2;
  return T;
}

/* Core c's first row and row count: rows [M*c/cores, M*(c+1)/cores). */
static void core_rows(int64_t M, int cores, int c, int64_t *m0, int64_t *mi) {
  /* M <= 2^31 and c < 16: the products fit */
  *m0 = M * c / cores;
  *mi = M * (c + 1) / cores - *m0;
}

/* The ops of the whole program (as a double: it may pass 2^63) and the
** bytes it moves, in closed form: per core and block (mb, nb), KB pairs of
** A and B loads, KB matmuls and one write-back; A's rows once per block
** column, B once per block row, C once. */
static double gemm_ops(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, double *bytes) {
  const double T = (double)tpu_sim_gemm_block(cfg), NB = ceil((double)N / T), KB = ceil((double)K / T);
  double ops = 0, b = 0;
  for (int c = 0; c < cores; c++) {
    int64_t m0, mi;
    core_rows(M, cores, c, &m0, &mi);
    const double MB = ceil((double)mi / T);
    ops += MB * NB * (3.0 * KB + 1.0);
    b += 4.0 * ((double)mi * (double)K * NB + MB * (double)K * (double)N + (double)mi * (double)N);
  }
  if (bytes) *bytes = b;
  return ops;
}

/* The program with 'drop' rows taken off the top of every core's share
** (0: the whole GEMM). */
static tpu_status build(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t drop,
                        tpu_precision prec, const float *A, const float *B, tpu_sim_program **out, char *err,
                        size_t errcap) {
  const long T = (long)tpu_sim_gemm_block(cfg);
  tpu_sim_program *p = NULL;
  float *scratch = NULL;
  if (tpu_sim_program_create(cores, &p) != TPU_OK) goto nomem;
  if (A && !(scratch = tpu_malloc((size_t)(T * T) * sizeof *scratch))) goto nomem;
  double bytes = 0;
  for (int c = 0; c < cores; c++) {
    int64_t m0, mi;
    core_rows(M, cores, c, &m0, &mi);
    if (mi - drop > 0 && build_core(p, c, (long)(m0 + drop), (long)(mi - drop), (long)N, (long)K, T, prec, A, B,
                                    scratch, &bytes)) {
      snprintf(err, errcap, "cannot build core %d's program: %s", c, tpu_sim_program_error(p));
      tpu_status st = strstr(tpu_sim_program_error(p), "out of memory") ? TPU_ERR_NOMEM : TPU_ERR_INPUT;
      tpu_free(scratch);
      tpu_sim_program_destroy(p);
      return st;
    }
  }
  tpu_free(scratch);
  *out = p;
  return TPU_OK;
nomem:
  tpu_free(scratch);
  tpu_sim_program_destroy(p);
  snprintf(err, errcap, "out of memory for the program of a %lld x %lld x %lld GEMM", (long long)M, (long long)N,
           (long long)K);
  return TPU_ERR_NOMEM;
}

/* The shape's checks: sizes, and the program within the engine's limit. */
static tpu_status check_shape(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                              double max_ops, char *err, size_t errcap) {
  if (cores < 1 || cores > TPU_MAX_CORES || M < 1 || N < 1 || K < 1 || M > TPU_SIM_MAX_DIM ||
      N > TPU_SIM_MAX_DIM || K > TPU_SIM_MAX_DIM) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: shapes must be 1..2147483648 (2^31) and cores 1..%d",
             (long long)M, (long long)N, (long long)K, cores, TPU_MAX_CORES);
    return TPU_ERR_CONFIG;
  }
  const double ops = gemm_ops(cfg, cores, M, N, K, NULL);
  if (ops > max_ops) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the program would hold %.4g ops (blocks of %lld), "
             "more than the engine's limit of %.0f", (long long)M, (long long)N, (long long)K, cores, ops,
             (long long)tpu_sim_gemm_block(cfg), max_ops);
    return TPU_ERR_RANGE;
  }
  return TPU_OK;
}

tpu_status tpu_sim_gemm_program(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                                tpu_precision prec, const float *A, const float *B, tpu_sim_program **out,
                                double *hbm_bytes, char *err, size_t errcap) {
  *out = NULL;
  if (hbm_bytes) *hbm_bytes = 0;
  tpu_status st = check_shape(cfg, cores, M, N, K, (double)TPU_SIM_MAX_OPS, err, errcap);
  if (st == TPU_OK && (st = build(cfg, cores, M, N, K, 0, prec, A, B, out, err, errcap)) == TPU_OK && hbm_bytes)
    gemm_ops(cfg, cores, M, N, K, hbm_bytes);
  return st;
}

/* {==================================================================
** The run, whole or extended (tpu_sim_gemm_run)
** ================================================================== */
#define XCORE (TPU_SIM_NSTALL + 2)         /* per core: the stall kinds, memory_busy, its end */
#define XMAX (1 + TPU_MAX_CORES * XCORE)
#define JMAX 24                            /* block rows tried for the pattern */
#define JVER 64                            /* block rows of the run that checks it */

/* A run's figures: its cycles, then per core its stall kinds, memory_busy
** and the end of its last op. */
static int figures_of(const tpu_sim_result *r, int cores, uint64_t *x) {
  int n = 0;
  x[n++] = tpu_sim_result_cycles(r);
  for (int c = 0; c < cores; c++) {
    tpu_sim_stalls s;
    tpu_sim_result_stalls(r, c, -1, &s);
    for (int k = 0; k < TPU_SIM_NSTALL; k++) x[n++] = s.cycles[k];
    x[n++] = tpu_sim_result_memory_busy(r, c);
    x[n++] = tpu_sim_result_step_end(r, c, 0);
  }
  return n;
}

/* Writes figures x into r (a run of one step, no event log). */
static void set_figures(tpu_sim_result *r, const uint64_t *x) {
  int n = 0;
  r->cycles = x[n++];
  for (int c = 0; c < r->cores; c++) {
    sim_core_rt *k = &r->core[c];
    for (int s = 0; s < TPU_SIM_NSTALL; s++) k->total.cycles[s] = k->steps[0].cycles[s] = x[n++];
    k->memory_busy = x[n++];
    k->step_end[0] = k->maxend = x[n++];
  }
}

/* y = x + q * d on every figure, where d is the figures' growth over one
** period; false when any passes TPU_SIM_MAX_CYCLES (*cycles gets the run's
** length as a double for the message) or goes negative. */
static bool extend(const uint64_t *x, const int64_t *d, int n, uint64_t q, uint64_t *y, double *cycles) {
  *cycles = (double)x[0] + (double)q * (double)d[0];
  for (int i = 0; i < n; i++) {
    int64_t p;
    if (__builtin_mul_overflow((int64_t)q, d[i], &p) || __builtin_add_overflow((int64_t)x[i], p, &p) || p < 0 ||
        (uint64_t)p > TPU_SIM_MAX_CYCLES)
      return false;
    y[i] = (uint64_t)p;
  }
  return true;
}

/* The run of the program with j + 1 block rows on its smallest core (the
** first b - 1 - j dropped from every core), its figures into x. */
static tpu_status run_rows(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t drop,
                           tpu_precision prec, const tpu_sim_options *opt, tpu_sim_program **p, tpu_sim_result **r,
                           uint64_t *x, char *err, size_t errcap) {
  tpu_status st = build(cfg, cores, M, N, K, drop, prec, NULL, NULL, p, err, errcap);
  if (st != TPU_OK) return st;
  if ((st = tpu_sim_run(cfg, *p, opt, r)) != TPU_OK) {
    snprintf(err, errcap, "%s", tpu_sim_program_error(*p));
    tpu_sim_program_destroy(*p);
    *p = NULL;
    return st;
  }
  figures_of(*r, cores, x);
  return TPU_OK;
}

/* The HBM the whole GEMM's buffers take on each chip (the engine checks the
** programs it runs; an extended run's whole program is never built). */
static tpu_status check_hbm(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, char *err,
                            size_t errcap) {
  const double cap = cfg->hbm_capacity_gib * 1073741824.0;
  for (int chip = 0; chip * cfg->cores_per_chip < cores; chip++) {
    double used = 0;
    for (int c = chip * cfg->cores_per_chip; c < (chip + 1) * cfg->cores_per_chip && c < cores; c++) {
      int64_t m0, mi;
      core_rows(M, cores, c, &m0, &mi);
      if (mi > 0) used += 4.0 * ((double)mi * (double)K + (double)K * (double)N + (double)mi * (double)N);
    }
    if (used > cap) {
      snprintf(err, errcap, "the GEMM's HBM buffers (A's rows, B and C's rows of each core) need %.0f bytes on chip "
               "%d, more than its capacity of %.0f bytes (hbm.capacity_gib %g)", used, chip, cap,
               cfg->hbm_capacity_gib);
      return TPU_ERR_RANGE;
    }
  }
  return TPU_OK;
}

/* The figures' growth from run a to run b into d; true when it equals e's
** (or e is NULL). */
static bool growth(const uint64_t *a, const uint64_t *b, int n, int64_t *d, const int64_t *e) {
  bool same = true;
  for (int i = 0; i < n; i++) {
    d[i] = (int64_t)(b[i] - a[i]);
    same &= !e || d[i] == e[i];
  }
  return same;
}

/* The smallest j0 and period p (1..4) with three equal growths over p block
** rows from run j0 on, among runs 0..j; d gets the growth. false if none. */
static bool find_period(uint64_t (*x)[XMAX], int j, int n, int *j0, int *p, int64_t *d) {
  int64_t e[XMAX], f[XMAX];
  for (int q = 1; q <= 4; q++) {
    const int a = j - 3 * q;
    if (a < 0) break;
    growth(x[a], x[a + q], n, e, NULL);
    if (growth(x[a + q], x[a + 2 * q], n, f, e) && growth(x[a + 2 * q], x[a + 3 * q], n, d, e)) {
      *j0 = a;
      *p = q;
      return true;
    }
  }
  return false;
}

/* Runs of 1, 2, ... block rows on the smallest core (of b) into x until
** their figures grow alike over three periods: *j0, *p and d then describe
** the pattern; *p is 0 when none showed within JMAX + 1 runs. */
static tpu_status find_pattern(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t b,
                               tpu_precision prec, const tpu_sim_options *opt, uint64_t (*x)[XMAX], int *j0, int *p,
                               int64_t *d, char *err, size_t errcap) {
  const int64_t T = tpu_sim_gemm_block(cfg);
  const int n = 1 + cores * XCORE;
  *p = 0;
  for (int j = 0; j <= JMAX && j < b; j++) {
    tpu_sim_program *pr;
    tpu_sim_result *r;
    tpu_status st = run_rows(cfg, cores, M, N, K, (b - 1 - j) * T, prec, opt, &pr, &r, x[j], err, errcap);
    if (st != TPU_OK) return st;
    tpu_sim_result_destroy(r);
    tpu_sim_program_destroy(pr);
    if (find_period(x, j, n, j0, p, d)) break;
  }
  return TPU_OK;
}

/* Whether the pattern's growth d is the MXU's alone: per period no core
** waits for anything (only mxu_busy and weight_load grow). Then every core
** runs at its arrays' pace, a max-plus recurrence in whole cycles that
** repeats shifted once its inputs no longer bind (mxu_gemm.c), and the DMAs
** it paces repeat with it. A core that waits for HBM in the steady state is
** paced by the fair share between cores instead, whose fractional rates can
** drift for hundreds of block rows without repeating: not extended. */
static bool mxu_bound(const int64_t *d, int cores) {
  for (int c = 0; c < cores; c++)
    for (int k = 0; k < TPU_SIM_NSTALL; k++)
      if (k != TPU_SIM_MXU_BUSY && k != TPU_SIM_WEIGHT_LOAD && d[1 + c * XCORE + k] != 0) return false;
  return true;
}

/* The extended run (see sim.h): the pattern of find_pattern, checked on a
** run of about JVER block rows (the figures it predicts there must be the
** run's, exactly), then the run of the base length with its figures moved
** on by the remaining periods. *res stays NULL when the runs show no
** pattern that holds (the engine's HBM sharing can drift for hundreds of
** block rows): the caller then runs the whole program or refuses. */
static tpu_status run_extended(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t b,
                               tpu_precision prec, const tpu_sim_options *opt, tpu_sim_program **prog,
                               tpu_sim_result **res, tpu_sim_gemm_info *info, char *err, size_t errcap) {
  const int64_t T = tpu_sim_gemm_block(cfg);
  const int n = 1 + cores * XCORE;
  uint64_t (*x)[XMAX] = tpu_malloc((JMAX + 1) * sizeof *x), y[XMAX] = { 0 }, v[XMAX] = { 0 };
  if (!x) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  int64_t d[XMAX];
  int j0 = 0, p = 0;
  double cyc;
  tpu_status st = find_pattern(cfg, cores, M, N, K, b, prec, opt, x, &j0, &p, d, err, errcap);
  if (st != TPU_OK || !p || !mxu_bound(d, cores)) goto out;
  const int jb = j0 + (int)((b - 1 - j0) % p), jv = jb + (JVER - jb) / p * p;
  /* the check: the run of jv + 1 block rows has the figures the pattern gives */
  tpu_sim_program *pv;
  tpu_sim_result *rv;
  if ((st = run_rows(cfg, cores, M, N, K, (b - 1 - jv) * T, prec, opt, &pv, &rv, v, err, errcap)) != TPU_OK) goto out;
  tpu_sim_result_destroy(rv);
  tpu_sim_program_destroy(pv);
  if (!extend(x[jb], d, n, (uint64_t)((jv - jb) / p), y, &cyc) || memcmp(y, v, (size_t)n * sizeof *y)) goto out;
  const uint64_t q = (uint64_t)((b - 1 - jb) / p);
  if (!extend(x[jb], d, n, q, y, &cyc)) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the run lasts %.4g cycles (%.3g s at %g MHz), "
             "longer than the engine times (2^53 = %llu cycles)", (long long)M, (long long)N, (long long)K, cores,
             cyc, cyc / (cfg->clock_mhz * 1e6), cfg->clock_mhz, (unsigned long long)TPU_SIM_MAX_CYCLES);
    st = TPU_ERR_RANGE;
  } else if ((st = run_rows(cfg, cores, M, N, K, (b - 1 - jb) * T, prec, opt, prog, res, x[jb], err, errcap)) ==
             TPU_OK) {
    set_figures(*res, y);
    *info = (tpu_sim_gemm_info){ .block = info->block, .hbm_bytes = info->hbm_bytes, .rows_run = jb + 1,
                                 .period = p, .periods = q };
  }
out:
  tpu_free(x);
  return st;
}

/* The whole program's run (or the refusal of one too large to build). */
static tpu_status run_whole(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                            tpu_precision prec, const float *A, const float *B, const tpu_sim_options *opt,
                            tpu_sim_program **prog, tpu_sim_result **res, char *err, size_t errcap) {
  tpu_status st = tpu_sim_gemm_program(cfg, cores, M, N, K, prec, A, B, prog, NULL, err, errcap);
  if (st == TPU_OK && (st = tpu_sim_run(cfg, *prog, opt, res)) != TPU_OK) {
    snprintf(err, errcap, "%s", tpu_sim_program_error(*prog));
    tpu_sim_program_destroy(*prog);
    *prog = NULL;
  }
  return st;
}

tpu_status tpu_sim_gemm_run(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                            tpu_precision prec, const float *A, const float *B, const tpu_sim_options *opt,
                            int64_t whole_ops, tpu_sim_program **prog, tpu_sim_result **res,
                            tpu_sim_gemm_info *info, char *err, size_t errcap) {
  *prog = NULL;
  *res = NULL;
  memset(info, 0, sizeof *info);
  const bool can_extend = opt->level == TPU_FIDELITY_TIMING && !opt->events && !opt->trace;
  tpu_status st = check_shape(cfg, cores, M, N, K, can_extend ? INFINITY : (double)TPU_SIM_MAX_OPS, err, errcap);
  if (st == TPU_ERR_RANGE) {   /* why the whole program: values, or the event log */
    const size_t n = strlen(err);
    snprintf(err + n, errcap - n, "; %s needs the whole program (the timing level without a trace runs larger "
             "GEMMs extended)", opt->level != TPU_FIDELITY_TIMING ? "the tile level" : "a trace or event log");
  }
  if (st != TPU_OK) return st;
  info->block = tpu_sim_gemm_block(cfg);
  const double ops = gemm_ops(cfg, cores, M, N, K, &info->hbm_bytes);
  /* the cycles are at least the MACs over every array of the cores */
  const double least = (double)M * (double)N * (double)K * tpu_precision_passes(prec) /
                       ((double)cfg->mxu.rows * cfg->mxu.cols * cfg->mxus_per_core * cores);
  if (least > (double)TPU_SIM_MAX_CYCLES) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the run lasts at least %.4g cycles (its multiply-adds "
             "over the cores' arrays), longer than the engine times (2^53 = %llu cycles)", (long long)M,
             (long long)N, (long long)K, cores, least, (unsigned long long)TPU_SIM_MAX_CYCLES);
    return TPU_ERR_RANGE;
  }
  const int64_t T = info->block, b = (M / cores + T - 1) / T;   /* block rows of the core with the fewest */
  if (!can_extend || ops <= (double)(whole_ops > 0 ? whole_ops : TPU_SIM_GEMM_WHOLE_OPS) || b - 1 <= JVER)
    return run_whole(cfg, cores, M, N, K, prec, A, B, opt, prog, res, err, errcap);
  const double row_ops = gemm_ops(cfg, cores, (int64_t)cores * T, N, K, NULL);   /* one block row per core */
  if (row_ops * (JVER + 1) > (double)TPU_SIM_MAX_OPS) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: one block row of every core is %.4g ops (blocks of "
             "%lld); the runs that find and check the GEMM's repeating pattern take up to %d of them, more than the "
             "engine's limit of %lld ops: N and K are too large for the chip engine's GEMM program", (long long)M,
             (long long)N, (long long)K, cores, row_ops, (long long)T, JVER + 1, (long long)TPU_SIM_MAX_OPS);
    return TPU_ERR_RANGE;
  }
  if ((st = check_hbm(cfg, cores, M, N, K, err, errcap)) != TPU_OK ||
      (st = run_extended(cfg, cores, M, N, K, b, prec, opt, prog, res, info, err, errcap)) != TPU_OK || *res)
    return st;
  if (ops <= (double)TPU_SIM_MAX_OPS) return run_whole(cfg, cores, M, N, K, prec, A, B, opt, prog, res, err, errcap);
  snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the engine's runs of up to %d block rows per core show "
           "no repeating pattern (transfers sharing HBM can drift for hundreds of block rows), so the run cannot be "
           "extended to its %lld block rows, and the whole program, %.4g ops, is more than the engine's limit of "
           "%lld; use a smaller M", (long long)M, (long long)N, (long long)K, cores, JVER + 1, (long long)b, ops,
           (long long)TPU_SIM_MAX_OPS);
  return TPU_ERR_RANGE;
}
/* }================================================================== */
