/*
** mxu_fast_int.h -- the fast tile kernel's SIMD paths, for mxu_fast.c and
** white-box tests and benchmarks.
**
** tpu_mxu_tile_compute() (mxu.h) runs the widest path the host supports,
** chosen once at the first call: AVX-512F, else AVX2+FMA, else the portable
** scalar path. The environment variable TPU_SIMD=generic|avx2|avx512|auto
** overrides the choice (a path the host lacks falls back to the best one
** it has, with a note on stderr), for this kernel and the PE model's alike,
** so a run can be replayed on each path; TPU_VALGRIND=1 (set by `make valgrind`)
** caps the choice at AVX2, which valgrind can run. Every path computes the
** Numerics paragraph of mxu.h exactly, so all give the same bits.
*/
#ifndef TPU_MXU_FAST_INT_H
#define TPU_MXU_FAST_INT_H
#include <stdbool.h>

#include "mxu/mxu.h"

typedef enum mxu_simd {
  MXU_SIMD_GENERIC = 0,        /* portable C, fmaf() per step */
  MXU_SIMD_AVX2,               /* AVX2 + FMA3, 6 x 16 register block */
  MXU_SIMD_AVX512,             /* AVX-512F, 14 x 32 register block */
  MXU_SIMD_COUNT
} mxu_simd;

/* "generic", "avx2", "avx512"; "?" for anything else. Can't fail. */
const char *mxu_simd_name(mxu_simd s);
/* Parses a TPU_SIMD value ("auto" gives the best supported path). Returns 1
** and sets *out if known, else 0 and leaves *out alone. */
int mxu_simd_parse(const char *s, mxu_simd *out);
/* True if this host (and valgrind, under TPU_VALGRIND=1) can run path s. */
bool mxu_simd_supported(mxu_simd s);
/* The path tpu_mxu_tile_compute() uses (resolving TPU_SIMD on first use). */
mxu_simd mxu_simd_active(void);
/* Makes s the active path for every later tpu_mxu_tile_compute() call, for
** benchmarks that compare paths in one run. Returns false (and changes
** nothing) if s is not supported. Don't call it while another thread
** computes tiles. */
bool mxu_simd_set(mxu_simd s);
/* The PE model's kernel for a new array: TPU_SIMD's path when the variable
** names one the host supports, else the best up to AVX2 (as fast as AVX-512
** for the PE model where measured, and the wide units can lower the clock;
** mxu_array.c). */
mxu_simd mxu_simd_pe_default(void);
/* Computes tile t with path s, which must be supported. Can't fail. */
void mxu_tile_compute_with(mxu_simd s, int rows, const tpu_mxu_tile *t);

#endif /* TPU_MXU_FAST_INT_H */
