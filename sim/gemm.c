/*
** gemm.c -- the chip program of one GEMM split across cores along M: what
** `tpusim matmul --cores` runs and `tpusim viz` shows (one builder, so their
** figures agree). The layout and op order are documented at
** tpu_sim_gemm_program in sim.h.
*/
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

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

tpu_status tpu_sim_gemm_program(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                                tpu_precision prec, const float *A, const float *B, tpu_sim_program **out,
                                double *hbm_bytes, char *err, size_t errcap) {
  *out = NULL;
  if (hbm_bytes) *hbm_bytes = 0;
  if (cores < 1 || cores > TPU_MAX_CORES || M < 1 || N < 1 || K < 1 || M > 65536 || N > 65536 || K > 65536) {
    snprintf(err, errcap, "GEMM %lld x %lld x %lld on %d cores: shapes must be 1..65536 and cores 1..%d",
             (long long)M, (long long)N, (long long)K, cores, TPU_MAX_CORES);
    return TPU_ERR_CONFIG;
  }
  const long T = (long)tpu_sim_gemm_block(cfg);
  tpu_sim_program *p = NULL;
  float *scratch = NULL;
  if (tpu_sim_program_create(cores, &p) != TPU_OK) goto nomem;
  if (A && !(scratch = tpu_malloc((size_t)(T * T) * sizeof *scratch))) goto nomem;
  double bytes = 0;
  for (int c = 0; c < cores; c++) {
    const long m0 = (long)(M * c / cores), mi = (long)(M * (c + 1) / cores) - m0;
    if (mi > 0 && build_core(p, c, m0, mi, (long)N, (long)K, T, prec, A, B, scratch, &bytes)) {
      snprintf(err, errcap, "cannot build core %d's program: %s", c, tpu_sim_program_error(p));
      tpu_status st = strstr(tpu_sim_program_error(p), "out of memory") ? TPU_ERR_NOMEM : TPU_ERR_INPUT;
      tpu_free(scratch);
      tpu_sim_program_destroy(p);
      return st;
    }
  }
  tpu_free(scratch);
  if (hbm_bytes) *hbm_bytes = bytes;
  *out = p;
  return TPU_OK;
nomem:
  tpu_free(scratch);
  tpu_sim_program_destroy(p);
  snprintf(err, errcap, "out of memory for the program of a %lld x %lld x %lld GEMM", (long long)M, (long long)N,
           (long long)K);
  return TPU_ERR_NOMEM;
}
