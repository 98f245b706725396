/*
** mxu_fast.c -- the tile-level numerics: one tile's values, bit for bit as
** the PE model computes them, fast.
**
** What must hold (mxu.h, Numerics): for result (m,n) of a tile,
**   psum = +0.0
**   psum = fmaf(act[m][r], w[r][n], psum)   for r = 0 .. K-1, in that order
**   psum = psum + 0.0f                      once, when K < rows (the rows
**                                           below the tile pass psum through
**                                           adding +0.0; once is enough, the
**                                           add is idempotent after that)
**   out  = accumulate ? out + psum : psum
** A vector FMA rounds once per lane exactly as fmaf does, and IEEE add is
** the same in every lane width, so each path below only reorders *which*
** results are computed together, never the steps of one result.
**
** How it is fast. Per tile: the weights are copied once into column panels
** of K x NR (zero-padded to NR columns, 64-byte aligned) so the inner loop
** loads whole vectors. The activations are walked in chunks of MC rows
** (about 128 KiB, L2-resident), each copied to a scratch block whose row
** stride is not a multiple of 4 KiB: with lda = 1024 floats, as in a
** 1024-wide GEMM, the rows of a block would otherwise all map to one L1 set
** and evict each other. For each panel and chunk, a register-blocked
** micro-kernel keeps an MR x NR block of partial sums in registers for the
** whole K loop: each step broadcasts MR activations and does MR * NR/width
** vector FMAs, with the panel in L1. Tiles come with all M rows
** (tpu_mxu_gemm), so both copies are amortized. Edges: a short last row
** block uses a micro-kernel specialized for its height (every height is
** instantiated, so its sums still live in registers); a narrow last panel
** uses masked loads and stores, so nothing outside the tile is touched.
**
**   path     block (MR x NR)   vector FMAs per step
**   avx512   12 x 32 (2 zmm)   24
**   avx2      6 x 16 (2 ymm)   12
**   generic   4 x 16 scalar    (fmaf; for valgrind and non-x86 hosts)
**
** Operands are rounded to bf16 as they are copied (tpu_bf16_round, lane by
** lane; a no-op on values that are bf16 already, which is all the contract
** promises). So tpu_mxu_gemm can hand a bf16 GEMM's f32 A and B straight to
** the kernel instead of making rounded copies first.
**
** Limits: scratch (the panels and one chunk) comes from tpu_malloc_aligned,
** about K*N + 32K floats; if that fails the tile runs on the generic path,
** which needs none, so the function still can't fail. Non-x86 hosts get the
** generic path only.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "mxu/mxu_fast_int.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MXU_X86 1
#include <immintrin.h>
#endif

/* Activation rows per chunk: about this many floats (128 KiB, in L2). */
#define CHUNK_FLOATS 32768u
/* Activation rows fetched ahead while a chunk is copied. */
#define PREFETCH_ROWS 8

/* {==================================================================
** Generic path: portable C, fmaf per step, a 4 x 16 block of sums.
** ================================================================== */
enum { G_MR = 4, G_NR = 16 };

static void tile_generic(int rows, const tpu_mxu_tile *t) {
  const size_t lda = (size_t)t->lda, ldw = (size_t)t->ldw, ldo = (size_t)t->ldo;
  const bool pass = t->k < rows;
  for (int n0 = 0; n0 < t->n; n0 += G_NR) {
    const int nr = t->n - n0 < G_NR ? t->n - n0 : G_NR;
    for (int m0 = 0; m0 < t->m; m0 += G_MR) {
      const int mr = t->m - m0 < G_MR ? t->m - m0 : G_MR;
      float acc[G_MR][G_NR] = { { 0.0f } };
      const float *a = t->act + (size_t)m0 * lda;
      for (int r = 0; r < t->k; r++) {
        const float *w = t->w + (size_t)r * ldw + (size_t)n0;
        float wr[G_NR];
        for (int j = 0; j < nr; j++) wr[j] = tpu_bf16_round(w[j]);
        for (int i = 0; i < mr; i++) {
          const float av = tpu_bf16_round(a[(size_t)i * lda + (size_t)r]);
          for (int j = 0; j < nr; j++) acc[i][j] = fmaf(av, wr[j], acc[i][j]);
        }
      }
      for (int i = 0; i < mr; i++) {
        float *o = t->out + (size_t)(m0 + i) * ldo + (size_t)n0;
        for (int j = 0; j < nr; j++) {
          float p = acc[i][j];
          if (pass) p = p + 0.0f;
          o[j] = t->accumulate ? o[j] + p : p;
        }
      }
    }
  }
}
/* }================================================================== */

#ifdef MXU_X86
/* dst[0..n) = the bf16 rounding of src[0..n) (tpu_bf16_round, lane by lane). */
typedef void (*round_fn)(float *dst, const float *src, int n);

/* Defines 'name', which runs the blocks of one chunk of rows (ac: mc x K,
** row stride lds) against every packed panel of bp: whole MR-row blocks
** through the path's micro-kernel, the rest through its block switch; the
** panel's columns are masked by MASK0(nr) and MASK1(nr). One frame for
** every SIMD path (each gives its target, widths, mask type and kernels). */
#define CHUNK(name, target, NR, MR, mask_t, MASK0, MASK1, ukr, block)                                    \
  static target void name(const tpu_mxu_tile *t, int mc, const float *ac, size_t lds, const float *bp,   \
                          float *o, bool pass) {                                                         \
    const size_t ldo = (size_t)t->ldo;                                                                   \
    const int K = t->k;                                                                                  \
    const bool acc = t->accumulate;                                                                      \
    for (int n0 = 0; n0 < t->n; n0 += NR, bp += (size_t)K * NR) {                                        \
      const int nr = t->n - n0 < NR ? t->n - n0 : NR;                                                    \
      const mask_t k0 = MASK0(nr), k1 = MASK1(nr);                                                       \
      int m0 = 0;                                                                                        \
      for (; m0 + MR <= mc; m0 += MR)                                                                    \
        ukr(MR, K, ac + (size_t)m0 * lds, lds, bp, o + (size_t)m0 * ldo + (size_t)n0, ldo, k0, k1, pass, \
            acc);                                                                                        \
      if (m0 < mc)                                                                                       \
        block(mc - m0, K, ac + (size_t)m0 * lds, lds, bp, o + (size_t)m0 * ldo + (size_t)n0, ldo, k0, k1, \
              pass, acc);                                                                                \
    }                                                                                                    \
  }

/* {==================================================================
** AVX-512F path: 12 x 32 block, 24 zmm accumulators.
** ================================================================== */
#define T512 __attribute__((target("avx512f")))
enum { Z_MR = 12, Z_NR = 32 };

/* tpu_bf16_round on 16 lanes: round to nearest even on the top 16 bits; a
** NaN keeps its sign and top payload bits and is made quiet. */
static inline __attribute__((always_inline)) T512 __m512i round_bf16_512(__m512i u) {
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd);
  __m512i q = _mm512_or_si512(u, _mm512_set1_epi32(0x00400000));
  return _mm512_and_si512(_mm512_mask_blend_epi32(nan, r, q), hi);
}
static T512 void round_avx512(float *dst, const float *src, int n) {
  int j = 0;
  for (; j + 16 <= n; j += 16)
    _mm512_storeu_si512(dst + j, round_bf16_512(_mm512_loadu_si512(src + j)));
  if (j < n) {
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    _mm512_mask_storeu_epi32(dst + j, k, round_bf16_512(_mm512_maskz_loadu_epi32(k, src + j)));
  }
}

/* One MR x 32 block of results (MR a constant after inlining, so the sums
** stay in registers). Columns are masked by k0 (0..15) and k1 (16..31). */
static inline __attribute__((always_inline)) T512
void ukr_avx512(const int MR, int K, const float *a, size_t lda, const float *bp,
                float *o, size_t ldo, __mmask16 k0, __mmask16 k1, bool pass, bool acc) {
  __m512 c0[Z_MR], c1[Z_MR];
  for (int i = 0; i < MR; i++) { c0[i] = _mm512_setzero_ps(); c1[i] = _mm512_setzero_ps(); }
  for (int r = 0; r < K; r++) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
    bp += Z_NR;
    for (int i = 0; i < MR; i++) {
      const __m512 av = _mm512_set1_ps(a[(size_t)i * lda + (size_t)r]);
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int i = 0; i < MR; i++) {
    float *oi = o + (size_t)i * ldo;
    __m512 p0 = c0[i], p1 = c1[i];
    if (pass) { p0 = _mm512_add_ps(p0, zero); p1 = _mm512_add_ps(p1, zero); }
    if (acc) {
      p0 = _mm512_add_ps(_mm512_maskz_loadu_ps(k0, oi), p0);
      p1 = _mm512_add_ps(_mm512_maskz_loadu_ps(k1, oi + 16), p1);
    }
    _mm512_mask_storeu_ps(oi, k0, p0);
    _mm512_mask_storeu_ps(oi + 16, k1, p1);
  }
}

#define Z_CASE(h) case h: ukr_avx512(h, K, a, lda, bp, o, ldo, k0, k1, pass, acc); break;
static T512 void block_avx512(int mr, int K, const float *a, size_t lda, const float *bp,
                              float *o, size_t ldo, __mmask16 k0, __mmask16 k1,
                              bool pass, bool acc) {
  switch (mr) {
  Z_CASE(1) Z_CASE(2) Z_CASE(3) Z_CASE(4) Z_CASE(5) Z_CASE(6)
  Z_CASE(7) Z_CASE(8) Z_CASE(9) Z_CASE(10) Z_CASE(11)
  default: ukr_avx512(Z_MR, K, a, lda, bp, o, ldo, k0, k1, pass, acc); break;
  }
}

#define Z_MASK0(nr) ((__mmask16)((nr) >= 16 ? 0xffffu : (1u << (nr)) - 1u))
#define Z_MASK1(nr) ((__mmask16)((nr) >= 32 ? 0xffffu : (nr) <= 16 ? 0u : (1u << ((nr) - 16)) - 1u))
CHUNK(chunk_avx512, T512, Z_NR, Z_MR, __mmask16, Z_MASK0, Z_MASK1, ukr_avx512, block_avx512)
/* }================================================================== */

/* {==================================================================
** AVX2 + FMA path: 6 x 16 block, 12 ymm accumulators.
** ================================================================== */
#define T256 __attribute__((target("avx2,fma")))
enum { Y_MR = 6, Y_NR = 16 };

static inline __attribute__((always_inline)) T256 __m256i round_bf16_256(__m256i u) {
  const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
  /* both sides are below 2^31, so a signed compare is an unsigned one */
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd);
  __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  return _mm256_and_si256(_mm256_blendv_epi8(r, q, nan), hi);
}
/* Lane j of the result is all-ones when j < count (count clamped to 0..8). */
static T256 __m256i lanes_below(int count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), idx);
}
static T256 void round_avx2(float *dst, const float *src, int n) {
  int j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_si256((__m256i *)(void *)(dst + j),
                        round_bf16_256(_mm256_loadu_si256((const __m256i *)(const void *)(src + j))));
  if (j < n) {
    const __m256i k = lanes_below(n - j);
    __m256i v = _mm256_castps_si256(_mm256_maskload_ps(src + j, k));
    _mm256_maskstore_ps(dst + j, k, _mm256_castsi256_ps(round_bf16_256(v)));
  }
}

static inline __attribute__((always_inline)) T256
void ukr_avx2(const int MR, int K, const float *a, size_t lda, const float *bp,
              float *o, size_t ldo, __m256i k0, __m256i k1, bool pass, bool acc) {
  __m256 c0[Y_MR], c1[Y_MR];
  for (int i = 0; i < MR; i++) { c0[i] = _mm256_setzero_ps(); c1[i] = _mm256_setzero_ps(); }
  for (int r = 0; r < K; r++) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    bp += Y_NR;
    for (int i = 0; i < MR; i++) {
      const __m256 av = _mm256_broadcast_ss(a + (size_t)i * lda + (size_t)r);
      c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
    }
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int i = 0; i < MR; i++) {
    float *oi = o + (size_t)i * ldo;
    __m256 p0 = c0[i], p1 = c1[i];
    if (pass) { p0 = _mm256_add_ps(p0, zero); p1 = _mm256_add_ps(p1, zero); }
    if (acc) {
      p0 = _mm256_add_ps(_mm256_maskload_ps(oi, k0), p0);
      p1 = _mm256_add_ps(_mm256_maskload_ps(oi + 8, k1), p1);
    }
    _mm256_maskstore_ps(oi, k0, p0);
    _mm256_maskstore_ps(oi + 8, k1, p1);
  }
}

#define Y_CASE(h) case h: ukr_avx2(h, K, a, lda, bp, o, ldo, k0, k1, pass, acc); break;
static T256 void block_avx2(int mr, int K, const float *a, size_t lda, const float *bp,
                            float *o, size_t ldo, __m256i k0, __m256i k1, bool pass, bool acc) {
  switch (mr) {
  Y_CASE(1) Y_CASE(2) Y_CASE(3) Y_CASE(4) Y_CASE(5)
  default: ukr_avx2(Y_MR, K, a, lda, bp, o, ldo, k0, k1, pass, acc); break;
  }
}

#define Y_MASK0(nr) lanes_below(nr)
#define Y_MASK1(nr) lanes_below((nr) - 8)
CHUNK(chunk_avx2, T256, Y_NR, Y_MR, __m256i, Y_MASK0, Y_MASK1, ukr_avx2, block_avx2)
/* }================================================================== */

typedef void (*chunk_fn)(const tpu_mxu_tile *t, int mc, const float *ac, size_t lds,
                         const float *bp, float *o, bool pass);

/* The SIMD paths' common frame: pack every weight panel once (K x NR each,
** zero-padded), then walk the rows in chunks of MC, copying each chunk of
** activations to a scratch block whose row stride avoids 4 KiB aliasing
** (with lda a multiple of 1024 floats, as in a 1024-wide GEMM, the rows of
** a block would all fall into one L1 set), and run every panel on it.
** Scratch comes from the heap; without it the tile runs on the generic
** path (same bits), so this can't fail. */
static void tile_panels(int rows, const tpu_mxu_tile *t, int MR, int NR, chunk_fn chunk,
                        round_fn round) {
  const int K = t->k;
  const size_t npanel = (size_t)(t->n + NR - 1) / (size_t)NR;
  size_t lds = ((size_t)K + 15u) & ~(size_t)15u;
  if (lds % 1024u == 0) lds += 16u;
  size_t mc = CHUNK_FLOATS / lds / (size_t)MR * (size_t)MR;
  if (mc < (size_t)MR) mc = (size_t)MR;
  if (mc > (size_t)t->m) mc = (size_t)t->m;
  const size_t nb = npanel * (size_t)K * (size_t)NR;
  float *bp = tpu_malloc_aligned((nb + mc * lds) * sizeof *bp);
  if (!bp) { tile_generic(rows, t); return; }
  float *ac = bp + nb;
  for (size_t p = 0; p < npanel; p++) {
    const int n0 = (int)p * NR, nr = t->n - n0 < NR ? t->n - n0 : NR;
    float *dst = bp + p * (size_t)K * (size_t)NR;
    for (int r = 0; r < K; r++, dst += NR) {
      round(dst, t->w + (size_t)r * (size_t)t->ldw + (size_t)n0, nr);
      for (int j = nr; j < NR; j++) dst[j] = 0.0f;
    }
  }
  const bool pass = K < rows;
  for (int m0 = 0; m0 < t->m; m0 += (int)mc) {
    const int h = t->m - m0 < (int)mc ? t->m - m0 : (int)mc;
    for (int i = 0; i < h; i++) {
      const float *src = t->act + (size_t)(m0 + i) * (size_t)t->lda;
      if (i + PREFETCH_ROWS < t->m - m0)        /* short rows far apart: the hardware */
        for (int j = 0; j < K; j += 16)         /* prefetcher alone falls behind */
          __builtin_prefetch(src + PREFETCH_ROWS * (size_t)t->lda + (size_t)j);
      round(ac + (size_t)i * lds, src, K);
    }
    chunk(t, h, ac, lds, bp, t->out + (size_t)m0 * (size_t)t->ldo, pass);
  }
  tpu_free_aligned(bp);
}
#endif /* MXU_X86 */

/* {==================================================================
** Dispatch
** ================================================================== */
static const char *const SIMD_NAMES[MXU_SIMD_COUNT] = { "generic", "avx2", "avx512" };

const char *mxu_simd_name(mxu_simd s) {
  return (unsigned)s < MXU_SIMD_COUNT ? SIMD_NAMES[s] : "?";
}

static bool under_valgrind(void) {
  const char *v = getenv("TPU_VALGRIND");
  return v && *v && strcmp(v, "0") != 0;
}

bool mxu_simd_supported(mxu_simd s) {
  switch (s) {
  case MXU_SIMD_GENERIC: return true;
#ifdef MXU_X86
  case MXU_SIMD_AVX2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case MXU_SIMD_AVX512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma") && !under_valgrind();
#endif
  default: return false;
  }
}

static mxu_simd best_supported(void) {
  for (int s = MXU_SIMD_COUNT - 1; s > 0; s--)
    if (mxu_simd_supported((mxu_simd)s)) return (mxu_simd)s;
  return MXU_SIMD_GENERIC;
}

int mxu_simd_parse(const char *s, mxu_simd *out) {
  if (!s) return 0;
  if (strcmp(s, "auto") == 0) { *out = best_supported(); return 1; }
  for (int i = 0; i < MXU_SIMD_COUNT; i++)
    if (strcmp(s, SIMD_NAMES[i]) == 0) { *out = (mxu_simd)i; return 1; }
  return 0;
}

static atomic_int active_simd = -1;
static bool simd_from_env;     /* TPU_SIMD named a supported path */
static pthread_once_t simd_once = PTHREAD_ONCE_INIT;

/* Reads TPU_SIMD once. A library can't exit on a bad value, so it says on
** stderr what it ignored and what it uses instead. */
static void simd_init(void) {
  mxu_simd s = best_supported();
  const char *env = getenv("TPU_SIMD");
  if (env && *env) {
    mxu_simd want;
    if (!mxu_simd_parse(env, &want))
      fprintf(stderr, "tpusim: TPU_SIMD=%s is not one of generic, avx2, avx512, auto; "
              "using %s\n", env, mxu_simd_name(s));
    else if (!mxu_simd_supported(want))
      fprintf(stderr, "tpusim: TPU_SIMD=%s is not supported here%s; using %s\n", env,
              under_valgrind() ? " (TPU_VALGRIND is set)" : "", mxu_simd_name(s));
    else {
      s = want;
      simd_from_env = strcmp(env, "auto") != 0;
    }
  }
  atomic_store(&active_simd, (int)s);
}

mxu_simd mxu_simd_pe_default(void) {
  const mxu_simd s = mxu_simd_active();
  if (simd_from_env) return s;
  return s > MXU_SIMD_AVX2 ? MXU_SIMD_AVX2 : s;
}

mxu_simd mxu_simd_active(void) {
  pthread_once(&simd_once, simd_init);
  return (mxu_simd)atomic_load_explicit(&active_simd, memory_order_relaxed);
}

bool mxu_simd_set(mxu_simd s) {
  if (!mxu_simd_supported(s)) return false;
  pthread_once(&simd_once, simd_init);
  atomic_store(&active_simd, (int)s);
  return true;
}

void mxu_tile_compute_with(mxu_simd s, int rows, const tpu_mxu_tile *t) {
  switch (s) {
#ifdef MXU_X86
  case MXU_SIMD_AVX512: tile_panels(rows, t, Z_MR, Z_NR, chunk_avx512, round_avx512); break;
  case MXU_SIMD_AVX2:   tile_panels(rows, t, Y_MR, Y_NR, chunk_avx2, round_avx2); break;
#endif
  default: tile_generic(rows, t); break;
  }
}

void tpu_mxu_tile_compute(int rows, const tpu_mxu_tile *t) {
  mxu_tile_compute_with(mxu_simd_active(), rows, t);
}
/* }================================================================== */
