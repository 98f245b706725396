/*
** base.h -- the foundation every tpusim module may include: status codes,
** the allocation hook, bf16 conversion and JSON error positions.
**
** The bottom floor of the include graph: it depends on nothing of tpusim,
** and every module (mxu, vpu, datafeed, sim, frontend, viz, the command
** line) may include it. Nothing here knows of chips, models or pipelines.
**
** bf16 is the top 16 bits of an IEEE-754 binary32. Conversion from f32
** rounds to nearest, ties to even. NaN stays NaN (quiet, sign kept), +-inf and
** signed zero are kept, subnormals are rounded like any other value (never
** flushed). Finite values that round past the largest bf16 become +-inf, as
** IEEE rounding requires.
*/
#ifndef TPU_BASE_H
#define TPU_BASE_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum tpu_status {
  TPU_OK = 0,
  TPU_ERR_NOMEM,      /* an allocation failed */
  TPU_ERR_CONFIG,     /* a configuration value is missing, ill-typed or out of range */
  TPU_ERR_INPUT,      /* a data file or argument is malformed */
  TPU_ERR_IO,         /* a file could not be opened, read or written */
  TPU_ERR_BUSY,       /* a unit's queue is full; retry after a tick */
  TPU_ERR_RANGE,      /* a simulated program exceeded a capacity (VMEM, HBM) */
  TPU_ERR_RUNTIME     /* a simulated program faulted */
} tpu_status;

/* Static text for a status code; never NULL. This function can't fail. */
const char *tpu_status_str(tpu_status s);

/* Exit status for a command that failed with 's': 2 for bad input
** (CONFIG, INPUT, and IO on an input file is the caller's call), else 1. */
int tpu_status_exit_code(tpu_status s);

/* {==================================================================
** Allocation. Every allocation in the library goes through one hook shaped
** like lua_Alloc: realloc semantics, nsize == 0 frees and returns NULL.
** The default hook is the C library's. Tests install a hook that fails the
** Nth call to sweep out-of-memory paths. The hook is process-global; set it
** before creating any object and do not change it while objects are alive.
** ================================================================== */
typedef void *(*tpu_alloc_fn)(void *ud, void *ptr, size_t nsize);
void  tpu_set_alloc(tpu_alloc_fn fn, void *ud);        /* NULL restores the default */
void *tpu_malloc(size_t n);                            /* NULL on failure */
void *tpu_calloc(size_t count, size_t size);           /* NULL on failure or overflow */
void *tpu_realloc(void *p, size_t n);                  /* NULL on failure, p untouched */
void  tpu_free(void *p);                               /* NULL is a no-op */
char *tpu_strdup(const char *s);                       /* NULL on failure; tpu_free it */
/* Aligned buffers for SIMD kernels (64-byte). Free with tpu_free_aligned. */
void *tpu_malloc_aligned(size_t n);
void  tpu_free_aligned(void *p);
/* A growing text buffer (traces, CSV). Start it zeroed; tpu_text_printf
** appends. On allocation failure 'oom' is set and later appends do
** nothing. s is NUL-terminated once anything was appended; the caller
** frees it with tpu_free(b.s). */
typedef struct tpu_text { char *s; size_t n, cap; int oom; } tpu_text;
void tpu_text_printf(tpu_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* }================================================================== */

/* {==================================================================
** bf16
** ================================================================== */
typedef uint16_t tpu_bf16;

static inline uint32_t tpu_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float tpu_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline tpu_bf16 tpu_bf16_from_f32(float f) {
  uint32_t u = tpu_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep sign, force quiet */
    return (tpu_bf16)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);              /* round to nearest even */
  return (tpu_bf16)(u >> 16);
}
static inline float tpu_bf16_to_f32(tpu_bf16 h) { return tpu_f32_from_bits((uint32_t)h << 16); }
/* f32 -> nearest bf16, held in an f32 (low 16 bits zero). */
static inline float tpu_bf16_round(float f) { return tpu_bf16_to_f32(tpu_bf16_from_f32(f)); }
/* Round n floats in place to bf16 values. This function can't fail. */
void tpu_bf16_round_array(float *x, size_t n);
/* }================================================================== */

/* How much a simulation computes (DESIGN.md, fidelity levels). All three
** give the same cycle counts for the same program. */
typedef enum tpu_fidelity {
  TPU_FIDELITY_PE = 0,     /* every cell, every cycle, real values */
  TPU_FIDELITY_TILE,       /* cycles by formula, values by the fast kernel */
  TPU_FIDELITY_TIMING      /* cycles by formula, no values */
} tpu_fidelity;
const char *tpu_fidelity_name(tpu_fidelity f);           /* "pe", "tile", "timing" */
int tpu_fidelity_parse(const char *s, tpu_fidelity *out); /* 1 if known */

/* Find the line and column (1-based) of the value at 'path' in JSON 'text'.
** Path syntax: keys joined by '.', array indices as [i]: "mxu.rows",
** "layers[2].units". Returns 1 and sets *line,*col when found, else 0 (and
** sets the position of the deepest enclosing value found, if any). Used to
** point error messages at the offending value; never fails otherwise. */
int tpu_json_locate(const char *text, const char *path, int *line, int *col);

/* {==================================================================
** Seeded generators (one family for the whole project: splitmix64)
** ================================================================== */
/* The splitmix64 finalizer of x + golden gamma: a stateless hash, used to key
** initializers and dropout masks by (seed, step, index). Can't fail. */
uint64_t tpu_mix64(uint64_t x);
/* The splitmix64 stream: advances *state and returns the next value. */
uint64_t tpu_splitmix64(uint64_t *state);
/* Fills x[0..n) with N(0,1) samples (Box-Muller on splitmix64), continuing
** the stream in *state (start it at the seed); the same bits on every
** platform with IEEE doubles. Can't fail. */
void tpu_normal_fill(uint64_t *state, float *x, size_t n);
/* }================================================================== */

/* {==================================================================
** Files
** ================================================================== */
/* Writes 'n' bytes to 'path' through a temporary file in the same directory
** and rename(2), so readers see the old file or the whole new one. Returns 0,
** or -1 with errno set (nothing left behind). */
int tpu_write_atomic(const char *path, const void *data, size_t n);
/* Reads a whole file into a NUL-terminated buffer (tpu_free it). Returns
** NULL with errno set on failure; *len gets the byte count when non-NULL. */
char *tpu_read_file(const char *path, size_t *len);
/* }================================================================== */

#endif /* TPU_BASE_H */
