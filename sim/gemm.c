/*
** gemm.c -- the chip program of one GEMM split across cores along M: what
** `tpusim matmul --cores`, `run --topology`, `scalesim --chip` and `tpusim
** viz` run (sim.h states its layout). Each core's part is lowered by the one
** GEMM lowering (lower.c) over block tensors A (its rows), B and C (its
** rows), so the sizes that refuse a program before it is built are the
** lowering's own counts, and the places viz shows are the lowering's.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

void tpu_sim_gemm_rows(int64_t M, int cores, int c, int64_t *m0, int64_t *mi) {
  /* M <= 2^31 and c < 16: the products fit */
  *m0 = M * c / cores;
  *mi = M * (c + 1) / cores - *m0;
}

/* Core c's part: rows [m0, m0 + mi) of the GEMM, lowered onto core c of p
** (p NULL: counted into *n) with the tiling t of the core's whole part.
** 'on' (may be NULL) hears every matmul. 0, or -1 with err set. */
typedef struct gemm_part {
  int64_t m0, mi, N, K;
  tpu_precision prec;
  const float *A, *B;          /* NULL at the timing level */
  const tpu_sim_tiling *t;
  void (*on)(void *, int, const tpu_sim_gemm_place *);
  void *on_ud;
} gemm_part;

static tpu_status lower_part(const tpu_chip_config *cfg, tpu_sim_program *p, int core, const gemm_part *g,
                             tpu_sim_lower_counts *n, char *err, size_t errcap) {
  tpu_sim_lowering *L;
  tpu_status st = tpu_sim_lower_create(cfg, p, core, &L, err, errcap);
  if (st) return st;
  if (g->on) sim_lower_on_matmul(L, g->on, g->on_ud);
  tpu_sim_lower_section(L, "gemm");
  const int a = tpu_sim_lower_tensor(L, "A", NULL, TPU_SIM_T_ACTIVATION, TPU_SIM_F32, g->mi, g->K,
                                     g->A ? g->A + g->m0 * g->K : NULL);
  const int b = tpu_sim_lower_tensor(L, "B", NULL, TPU_SIM_T_PARAMETER, TPU_SIM_F32, g->K, g->N, g->B);
  const int c = tpu_sim_lower_tensor(L, "C", NULL, TPU_SIM_T_ACTIVATION, TPU_SIM_F32, g->mi, g->N, NULL);
  tpu_sim_lower_gemm_add(L, &(tpu_sim_lower_gemm){ .what = "matmul", .M = g->mi, .N = g->N, .K = g->K, .a = a,
                                                    .b = b, .c = c, .prec = g->prec, .tiling = g->t });
  if ((st = tpu_sim_lower_status(L)) != TPU_OK)
    snprintf(err, errcap, "cannot build core %d's program: %s", core, tpu_sim_lower_error(L));
  if (n) tpu_sim_lower_counts_of(L, n);
  tpu_sim_lower_destroy(L);
  return st;
}

/* The tiling of core c's whole part. */
static tpu_sim_tiling part_tiling(const tpu_chip_config *cfg, int cores, int c, int64_t M, int64_t N, int64_t K) {
  int64_t m0, mi;
  tpu_sim_gemm_rows(M, cores, c, &m0, &mi);
  return tpu_sim_gemm_tiling(cfg, mi > 0 ? mi : 1, N, K);
}

/* What a program with 'drop' rows taken off the top of every core's share
** holds (0: the whole GEMM): its ops (as a double: it may pass 2^63), the
** bytes it moves and, per chip, its HBM tensors' bytes. */
typedef struct gemm_size { double ops, bytes, chip_bytes[TPU_SIM_GEMM_MAX_CORES]; } gemm_size;

/* That program, each part lowered with its whole part's tiling, built into
** *out, or (out NULL) counted into *z. */
static tpu_status lower(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t drop,
                        tpu_precision prec, const float *A, const float *B, tpu_sim_program **out, gemm_size *z,
                        char *err, size_t errcap) {
  tpu_sim_program *p = NULL;
  if (z) memset(z, 0, sizeof *z);
  if (out && tpu_sim_program_create(cores, &p) != TPU_OK) {
    snprintf(err, errcap, "out of memory for the program of a %lld x %lld x %lld GEMM", (long long)M, (long long)N,
             (long long)K);
    return TPU_ERR_NOMEM;
  }
  for (int c = 0; c < cores; c++) {
    int64_t m0, mi;
    tpu_sim_gemm_rows(M, cores, c, &m0, &mi);
    if (mi - drop <= 0) continue;
    const tpu_sim_tiling t = part_tiling(cfg, cores, c, M, N, K);
    tpu_sim_lower_counts n;
    tpu_status st = lower_part(cfg, p, c, &(gemm_part){ m0 + drop, mi - drop, N, K, prec, A, B, &t, NULL, NULL },
                               &n, err, errcap);
    if (st) {
      tpu_sim_program_destroy(p);
      return st == TPU_ERR_NOMEM || !out ? st : TPU_ERR_INPUT;
    }
    if (!z) continue;
    z->ops += n.ops;
    z->bytes += n.hbm_bytes;
    for (int k = 0; k < TPU_SIM_T_NCLASS; k++) z->chip_bytes[c / cfg->cores_per_chip] += n.tensor_bytes[k];
  }
  if (out) *out = p;
  return TPU_OK;
}

/* The shape's checks: sizes, and the program within the engine's limit
** max_ops, its size counted by the lowering (into *z when not NULL).
** Counting visits a few block rows of each core (lower.c), each NB x KB
** tiles, every tile a matmul op: a block row of every core beyond the
** engine's limit is refused before it is counted. */
static tpu_status check_shape(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                              tpu_precision prec, double max_ops, gemm_size *z, char *err, size_t errcap) {
  if (cores < 1 || cores > TPU_SIM_GEMM_MAX_CORES || M < 1 || N < 1 || K < 1 || M > TPU_SIM_MAX_DIM ||
      N > TPU_SIM_MAX_DIM || K > TPU_SIM_MAX_DIM) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: shapes must be 1..2147483648 (2^31) and cores 1..%d",
             (long long)M, (long long)N, (long long)K, cores, TPU_SIM_GEMM_MAX_CORES);
    return TPU_ERR_CONFIG;
  }
  const tpu_sim_tiling t = part_tiling(cfg, cores, 0, M, N, K);
  const double row = (double)t.NB * (double)t.KB * cores;
  if (row > (double)TPU_SIM_MAX_OPS) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: one block row of every core holds %.4g matmul ops "
             "(tiles of %lld x %lld x %lld), more than the engine's limit of %lld: N and K are too large for the chip "
             "engine's GEMM program", (long long)M, (long long)N, (long long)K, cores, row, (long long)t.mt,
             (long long)t.nt, (long long)t.kt, (long long)TPU_SIM_MAX_OPS);
    return TPU_ERR_RANGE;
  }
  gemm_size zz;
  if (!z) z = &zz;
  tpu_status st = lower(cfg, cores, M, N, K, 0, prec, NULL, NULL, NULL, z, err, errcap);
  if (st) return st;
  if (z->ops > max_ops) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the program would hold %.4g ops (tiles of %lld x "
             "%lld x %lld), more than the engine's limit of %.0f", (long long)M, (long long)N, (long long)K, cores,
             z->ops, (long long)t.mt, (long long)t.nt, (long long)t.kt, max_ops);
    return TPU_ERR_RANGE;
  }
  return TPU_OK;
}

/* The HBM the whole GEMM's tensors take on each chip (z: its count, from
** the shape): checked before any program is built (the engine checks the
** programs it runs too, but only once they are built, and an extended
** run's whole program never is). */
static tpu_status check_hbm(const tpu_chip_config *cfg, int cores, const gemm_size *z, char *err, size_t errcap) {
  const double cap = cfg->hbm_capacity_gib * 1073741824.0;
  for (int chip = 0; chip * cfg->cores_per_chip < cores; chip++)
    if (z->chip_bytes[chip] > cap) {
      snprintf(err, errcap, "the GEMM's HBM buffers (A's rows, B and C's rows of each core) need %.0f bytes on chip "
               "%d, more than its capacity of %.0f bytes (hbm.capacity_gib %g)", z->chip_bytes[chip], chip, cap,
               cfg->hbm_capacity_gib);
      return TPU_ERR_RANGE;
    }
  return TPU_OK;
}

tpu_status tpu_sim_gemm_program(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                                tpu_precision prec, const float *A, const float *B, tpu_sim_program **out,
                                double *hbm_bytes, char *err, size_t errcap) {
  *out = NULL;
  if (hbm_bytes) *hbm_bytes = 0;
  gemm_size z;
  tpu_status st = check_shape(cfg, cores, M, N, K, prec, (double)TPU_SIM_MAX_OPS, &z, err, errcap);
  if (st == TPU_OK) st = check_hbm(cfg, cores, &z, err, errcap);   /* from the shape, before building */
  if (st == TPU_OK && (st = lower(cfg, cores, M, N, K, 0, prec, A, B, out, NULL, err, errcap)) == TPU_OK && hbm_bytes)
    *hbm_bytes = z.bytes;
  return st;
}

tpu_status tpu_sim_gemm_result(const tpu_sim_result *r, const tpu_sim_program *p, const tpu_chip_config *cfg,
                               int64_t M, int64_t N, int64_t K, float *C) {
  const int cores = tpu_sim_program_cores(p);
  char name[96];
  for (int c = 0; c < cores; c++) {
    int64_t m0, mi;
    tpu_sim_gemm_rows(M, cores, c, &m0, &mi);
    if (mi < 1) continue;
    const tpu_sim_tiling t = tpu_sim_gemm_tiling(cfg, mi, N, K);
    for (int64_t mb = 0; mb < t.MB; mb++)
      for (int64_t nb = 0; nb < t.NB; nb++) {
        sim_lower_block_name("C", mb * t.mt, nb * t.nt, name, sizeof name);
        const float *v = tpu_sim_result_buffer(r, c, tpu_sim_buffer_find(p, c, name));
        if (!v) return TPU_ERR_INPUT;
        const int64_t rows = mi - mb * t.mt < t.mt ? mi - mb * t.mt : t.mt;
        const int64_t w = N - nb * t.nt < t.nt ? N - nb * t.nt : t.nt;
        for (int64_t i = 0; i < rows; i++)
          memcpy(C + (m0 + mb * t.mt + i) * N + nb * t.nt, v + i * w, (size_t)w * sizeof *v);
      }
  }
  return TPU_OK;
}

typedef struct places { tpu_sim_gemm_place *v; size_t n, cap; int64_t m0; bool oom; } places;
static void on_place(void *ud, int op, const tpu_sim_gemm_place *pl) {
  places *ps = ud;
  if (ps->oom) return;
  if (ps->n == ps->cap) {
    const size_t cap = ps->cap ? 2 * ps->cap : 64;
    tpu_sim_gemm_place *v = tpu_realloc(ps->v, cap * sizeof *v);
    if (!v) { ps->oom = true; return; }
    ps->v = v;
    ps->cap = cap;
  }
  ps->v[ps->n] = *pl;
  ps->v[ps->n].op = op;
  ps->v[ps->n].m0 += ps->m0;
  ps->n++;
}

tpu_status tpu_sim_gemm_places(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                               tpu_precision prec, int c, tpu_sim_gemm_place **out, size_t *n, char *err,
                               size_t errcap) {
  *out = NULL;
  *n = 0;
  tpu_status st = check_shape(cfg, cores, M, N, K, prec, (double)TPU_SIM_MAX_OPS, NULL, err, errcap);
  if (st) return st;
  if (c < 0 || c >= cores) { snprintf(err, errcap, "core %d of %d", c, cores); return TPU_ERR_INPUT; }
  places ps = { 0 };
  int64_t mi;
  tpu_sim_gemm_rows(M, cores, c, &ps.m0, &mi);
  if (mi < 1) return TPU_OK;
  const tpu_sim_tiling t = part_tiling(cfg, cores, c, M, N, K);
  st = lower_part(cfg, NULL, c, &(gemm_part){ ps.m0, mi, N, K, prec, NULL, NULL, &t, on_place, &ps }, NULL, err,
                  errcap);
  if (!st && ps.oom) { snprintf(err, errcap, "out of memory"); st = TPU_ERR_NOMEM; }
  if (st) { tpu_free(ps.v); return st; }
  *out = ps.v;
  *n = ps.n;
  return TPU_OK;
}

/* {==================================================================
** The run, whole or extended (tpu_sim_gemm_run)
** ================================================================== */
#define XCORE (TPU_SIM_NSTALL + 2)         /* per core: the stall kinds, memory_busy, its end */
#define XMAX (1 + TPU_SIM_GEMM_MAX_CORES * XCORE)
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
  tpu_status st = lower(cfg, cores, M, N, K, drop, prec, NULL, NULL, p, NULL, err, errcap);
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
static tpu_status find_pattern(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K, int64_t T,
                               int64_t b, tpu_precision prec, const tpu_sim_options *opt, uint64_t (*x)[XMAX], int *j0,
                               int *p, int64_t *d, char *err, size_t errcap) {
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
  const int64_t T = info->block;
  const int n = 1 + cores * XCORE;
  uint64_t (*x)[XMAX] = tpu_malloc((JMAX + 1) * sizeof *x), y[XMAX] = { 0 }, v[XMAX] = { 0 };
  if (!x) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  int64_t d[XMAX];
  int j0 = 0, p = 0;
  double cyc;
  tpu_status st = find_pattern(cfg, cores, M, N, K, T, b, prec, opt, x, &j0, &p, d, err, errcap);
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
  tpu_status st = lower(cfg, cores, M, N, K, 0, prec, A, B, prog, NULL, err, errcap);
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
  /* the cycles are at least the MACs over every array of the cores */
  const double least = (double)M * (double)N * (double)K * tpu_precision_passes(prec) /
                       ((double)cfg->mxu.rows * cfg->mxu.cols * cfg->mxus_per_core * (cores > 0 ? cores : 1));
  if (least > (double)TPU_SIM_MAX_CYCLES) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: the run lasts at least %.4g cycles (its multiply-adds "
             "over the cores' arrays), longer than the engine times (2^53 = %llu cycles)", (long long)M,
             (long long)N, (long long)K, cores, least, (unsigned long long)TPU_SIM_MAX_CYCLES);
    return TPU_ERR_RANGE;
  }
  gemm_size z;
  tpu_status st = check_shape(cfg, cores, M, N, K, prec, can_extend ? INFINITY : (double)TPU_SIM_MAX_OPS, &z, err,
                              errcap);
  if (st == TPU_ERR_RANGE && strstr(err, "would hold")) {   /* why the whole program: values, or the event log */
    const size_t n = strlen(err);
    snprintf(err + n, errcap - n, "; %s needs the whole program (the timing level without a trace runs larger "
             "GEMMs extended)", opt->level != TPU_FIDELITY_TIMING ? "the tile level" : "a trace or event log");
  }
  /* the HBM the operands need is known from the shape: decided before any
  ** program is built */
  if (st != TPU_OK || (st = check_hbm(cfg, cores, &z, err, errcap)) != TPU_OK) return st;
  const tpu_sim_tiling t0 = part_tiling(cfg, cores, 0, M, N, K);   /* core 0 has the fewest rows */
  info->block = t0.mt;
  info->hbm_bytes = z.bytes;
  const double ops = z.ops;
  const int64_t T = info->block, b = t0.MB;   /* block rows of the core with the fewest */
  if (!can_extend || ops <= (double)(whole_ops > 0 ? whole_ops : TPU_SIM_GEMM_WHOLE_OPS) || b - 1 <= JVER)
    return run_whole(cfg, cores, M, N, K, prec, A, B, opt, prog, res, err, errcap);
  gemm_size zr;   /* the longest run that finds and checks the pattern: JVER + 1 block rows on core 0 */
  if ((st = lower(cfg, cores, M, N, K, (b - 1 - JVER) * T, prec, NULL, NULL, NULL, &zr, err, errcap)) != TPU_OK)
    return st;
  const double row_ops = zr.ops / (JVER + 1);
  if (zr.ops > (double)TPU_SIM_MAX_OPS) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: one block row of every core is %.4g ops (block rows of "
             "%lld); the runs that find and check the GEMM's repeating pattern take up to %d of them, more than the "
             "engine's limit of %lld ops: N and K are too large for the chip engine's GEMM program", (long long)M,
             (long long)N, (long long)K, cores, row_ops, (long long)T, JVER + 1, (long long)TPU_SIM_MAX_OPS);
    return TPU_ERR_RANGE;
  }
  if ((st = run_extended(cfg, cores, M, N, K, b, prec, opt, prog, res, info, err, errcap)) != TPU_OK || *res)
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
