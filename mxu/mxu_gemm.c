/*
** mxu_gemm.c -- a GEMM of any shape through the MXU, at any fidelity.
**
** C (M x N) = A (M x K) . B (K x N). The operands are split into bf16 parts
** (one part for bf16, two for bf16x3, three for bf16x6: x = x0 + x1 + x2,
** each part the bf16 rounding of what the previous parts left). Work is
** dealt as tiles of M x k x n (k <= rows, n <= cols) in this order:
**
**   for each N-tile (outer; round-robin over the core's arrays)
**     for each pass p (partial product A_i . B_j, smallest first)
**       for each K-tile (in K order)
**         tile: accumulate unless it is the first of this N-tile
**
** so each result element is summed in one fixed order at every fidelity:
** the passes' K-tiles one after another in the f32 accumulators. The three
** levels share this walk; only what happens to a tile differs (formula only,
** formula + fast kernel, or the PE model).
*/
#include <math.h>
#include <string.h>

#include "mxu/mxu.h"

/* Partial products (part of A, part of B), smallest first, from
** tpu_precision_pass(). */
typedef struct pass { int a, b; } pass;
static int parts_of(tpu_precision p) {
  return p == TPU_PREC_BF16X6 ? 3 : p == TPU_PREC_BF16X3 ? 2 : 1;
}

/* Splits x[0..n) into 'parts' bf16 arrays out[p*n ..]. A non-finite value
** goes whole into the first part (the rest are zero), so inf stays inf. */
static void split_bf16(const float *x, size_t n, int parts, float *out) {
  for (size_t i = 0; i < n; i++) {
    float rest = x[i];
    for (int p = 0; p < parts; p++) {
      float part = tpu_bf16_round(rest);
      out[(size_t)p * n + i] = part;
      rest = isfinite(part) ? rest - part : 0.0f;
    }
  }
}

/* What to do with each tile of the walk. */
typedef struct walk {
  const tpu_mxu_config *cfg;
  tpu_fidelity level;
  int mxus;
  tpu_mxu_sched sched[8];      /* timing and tile levels: one per array */
  tpu_mxu *pe[8];              /* PE level */
  tpu_mxu_gemm_result res;
} walk;

static tpu_status do_tile(walk *w, int array, const tpu_mxu_tile *t) {
  w->res.tiles++;
  w->res.weight_loads++;
  w->res.macs += (uint64_t)t->m * (uint64_t)t->k * (uint64_t)t->n;
  if (w->level == TPU_FIDELITY_PE) return tpu_mxu_push(w->pe[array], t);
  tpu_mxu_sched_tile(&w->sched[array], t->m, t->k, t->n, 0, NULL);
  if (w->level == TPU_FIDELITY_TILE) tpu_mxu_tile_compute(w->cfg->rows, t);
  return TPU_OK;
}

tpu_status tpu_mxu_gemm(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                        tpu_precision prec, int M, int N, int K,
                        const float *A, const float *B, float *C,
                        tpu_mxu_gemm_result *out) {
  if (tpu_mxu_config_check(cfg) != TPU_OK || mxus < 1 || mxus > 8) return TPU_ERR_CONFIG;
  if (M < 1 || N < 1 || K < 1 || (unsigned)prec > TPU_PREC_BF16X6) return TPU_ERR_CONFIG;
  if (level != TPU_FIDELITY_TIMING && (!A || !B || !C)) return TPU_ERR_CONFIG;

  const int parts = parts_of(prec), npass = tpu_precision_passes(prec);
  pass passes[6];
  for (int i_ = 0; i_ < tpu_precision_passes(prec); i_++)
    tpu_precision_pass(prec, i_, &passes[i_].a, &passes[i_].b);
  const size_t nA = (size_t)M * (size_t)K, nB = (size_t)K * (size_t)N;
  float *Ap = NULL, *Bp = NULL;
  walk w = { .cfg = cfg, .level = level, .mxus = mxus };
  tpu_status st = TPU_OK;

  /* A bf16 GEMM at the tile level needs no rounded copies: the fast kernel
  ** rounds its operands as it packs them (mxu.h), so A and B go in as they
  ** are (saving two M*K + K*N copies, which cost as much as the kernel). */
  const bool direct = level == TPU_FIDELITY_TILE && prec == TPU_PREC_BF16;
  if (level != TPU_FIDELITY_TIMING && !direct) {
    Ap = tpu_malloc(nA * (size_t)parts * sizeof *Ap);
    Bp = tpu_malloc(nB * (size_t)parts * sizeof *Bp);
    if (!Ap || !Bp) { st = TPU_ERR_NOMEM; goto done; }
    split_bf16(A, nA, parts, Ap);
    split_bf16(B, nB, parts, Bp);
  }
  for (int a = 0; a < mxus; a++) {
    tpu_mxu_sched_init(&w.sched[a], cfg);
    if (level == TPU_FIDELITY_PE && (st = tpu_mxu_create(cfg, &w.pe[a])) != TPU_OK) goto done;
  }

  const int rows = cfg->rows, cols = cfg->cols;
  for (int n0 = 0, nt = 0; n0 < N; n0 += cols, nt++) {
    const int nn = N - n0 < cols ? N - n0 : cols;
    bool first = true;
    for (int p = 0; p < npass; p++) {
      const float *Aq = direct ? A : Ap ? Ap + (size_t)passes[p].a * nA : NULL;
      const float *Bq = direct ? B : Bp ? Bp + (size_t)passes[p].b * nB : NULL;
      for (int k0 = 0; k0 < K; k0 += rows) {
        const int kk = K - k0 < rows ? K - k0 : rows;
        tpu_mxu_tile t = {
          .m = M, .k = kk, .n = nn,
          .act = Aq ? Aq + k0 : NULL, .lda = K,
          .w = Bq ? Bq + (size_t)k0 * (size_t)N + (size_t)n0 : NULL, .ldw = N,
          .out = C ? C + n0 : NULL, .ldo = N,
          .accumulate = !first,
        };
        first = false;
        if ((st = do_tile(&w, nt % mxus, &t)) != TPU_OK) goto done;
      }
    }
  }

  uint64_t cycles = 0;
  for (int a = 0; a < mxus; a++) {
    uint64_t c = level == TPU_FIDELITY_PE ? tpu_mxu_run(w.pe[a]) : w.sched[a].done;
    if (c > cycles) cycles = c;
  }
  w.res.cycles = cycles;
  if (out) *out = w.res;
done:
  for (int a = 0; a < mxus; a++) tpu_mxu_destroy(w.pe[a]);
  tpu_free(Ap);
  tpu_free(Bp);
  return st;
}
