/*
** base.h -- the foundation every tpusim module may include: status codes,
** the allocation hook, bf16 conversion, seeded generators, whole-file I/O,
** the JSON loader every file format uses, and .npy arrays.
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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The release (semantic versioning, https://semver.org): the one version of
** `tpusim --version`, of every --json report ("tpusim_version"), of the
** pkg-config file (the Makefile reads it from this line) and of
** CHANGELOG.md's newest entry. tpu_version() is the library's, for a
** program linked against an installed libtpusim.a to check at run time. */
#define TPU_VERSION "0.2.0"
const char *tpu_version(void);

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

/* How a function fails with a message: writes it into err (errcap bytes,
** truncated; err NULL: nowhere) and returns st. */
tpu_status tpu_errorf(char *err, size_t errcap, tpu_status st, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

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
/* How many tpu_malloc/tpu_realloc calls of this thread have failed so far:
** a caller whose library reports failures vaguely (jansson's parser turns
** some into syntax errors) compares it before and after the call. */
unsigned long tpu_alloc_failures(void);
/* json_loads, with jansson's decoder kept out of reach of the allocation
** hook (base.c says why): use it for every decode. */
struct json_error_t;
struct json_t *tpu_json_decode(const char *text, size_t flags, struct json_error_t *e);
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

/* {==================================================================
** JSON documents. Every JSON format of tpusim (chips, programs, pipelines,
** models) loads through here: jansson parses (base.h does not include it;
** the functions below take its json_t), and every error is one message
**   WHERE:LINE:COL: [field 'PATH': ]what was wrong; what is allowed
** whose position is that of the value at fault (or of the nearest
** enclosing value that exists, for a missing one). The first error reported
** is the one kept. Paths join keys with '.' and indices as [i]:
** "stages[2].buffer_size".
** ================================================================== */
struct json_t;
typedef struct tpu_json {
  const char *where;           /* file name or label: the start of every message */
  const char *noun;            /* what the format calls a member ("field" [default] or "key") */
  tpu_status code;             /* what errors return (TPU_ERR_CONFIG [default] or TPU_ERR_INPUT) */
  bool field_prefix;           /* tpu_json_fail starts its text "field 'PATH': " */
  bool generated;              /* the text is tpusim's own (a zoo model's), not the user's: no line:col */
  char *err; size_t errcap;    /* the message */
  const char *text;            /* set by tpu_json_parse */
  struct json_t *root;         /* set by tpu_json_parse; released by tpu_json_free */
  bool failed;                 /* an error has been written */
  /* Optional, for a document translated from another one (frontend/keras.c):
  ** 'text' is then the original's, and map_path turns a path of 'root' into
  ** the path of the original's value to point at (written into buf, or a
  ** static string). Called once, for the error that is kept. */
  const char *(*map_path)(void *ud, const char *path, char *buf, size_t cap);
  void *map_ud;
} tpu_json;
/* Reads the JSON file 'path' whole into *text, NUL-terminated (tpu_free
** it), for tpu_json_parse. A file holding a NUL byte is refused, since
** the parser would stop there and ignore the rest: TPU_ERR_INPUT with
** "PATH:LINE:COL: contains a NUL byte; expected JSON text". Else TPU_OK,
** TPU_ERR_IO ("PATH: cannot read: REASON", errno kept) or TPU_ERR_NOMEM.
** Every JSON file tpusim reads (chips, programs, pipelines, models, sweeps)
** is read through here. On failure *text is NULL. */
tpu_status tpu_json_read_file(const char *path, char **text, char *err, size_t errcap);
/* The same for any text format: "...: contains a NUL byte; expected WHAT". */
tpu_status tpu_read_text(const char *path, const char *what, char **text, char *err, size_t errcap);
/* Parses 'text' (kept by reference until tpu_json_free) into j->root, which
** must be an object: else "expected a JSON object (WHAT)". Fill in where,
** err, errcap (and noun, code, field_prefix) first. Returns TPU_OK or j->code
** with the message written (TPU_ERR_NOMEM if jansson ran out of memory). */
tpu_status tpu_json_parse(tpu_json *j, const char *text, const char *what);
void tpu_json_free(tpu_json *j);                           /* NULL root is fine */
/* Writes "WHERE:LINE:COL: MSG" with the position of 'path' ("" the root,
** NULL none), the "field 'PATH': " prefix when j->field_prefix and path is
** not empty; returns j->code. Does nothing after the first error. */
tpu_status tpu_json_fail(tpu_json *j, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "an object", "an array", "a string", "an integer", "a real number",
** "a boolean", "null": for "got ..." in messages. */
const char *tpu_json_type(const struct json_t *v);

/* Readers of an object's members. A member is named in messages by its
** path, "field 'stages[2].seed'", or, when the object has a label, by its
** key after the label, "layers[2] (dense): field 'units'". A member that is
** absent leaves *out alone unless it is required ("LABEL: missing; expected
** an integer in 1..64", at the object's position). A bad value gets "LABEL:
** expected ..., got ...". Each returns TPU_OK or the document's code. */
typedef struct tpu_json_obj {
  tpu_json *doc;
  struct json_t *v;            /* the object */
  const char *path;            /* its path ("" for the root) */
  const char *label;           /* NULL: name members by path; else "layers[2] (dense): " */
} tpu_json_obj;
enum { TPU_JSON_REQUIRED = 1, TPU_JSON_HI_OPEN = 2 };     /* 'flags' below */
/* Every key must be one of 'allowed' (NULL-terminated): "LABEL: unknown
** NOUN; allowed here: a, b, c". */
tpu_status tpu_json_keys(const tpu_json_obj *o, const char *const *allowed);
/* An integer in [lo, hi]; with 'word' non-NULL the string WORD is also
** accepted and gives 'word_value' ("an integer in 1..256 or \"autotune\""). */
tpu_status tpu_json_int(const tpu_json_obj *o, const char *key, int64_t lo, int64_t hi, int flags, int64_t *out);
tpu_status tpu_json_int_or(const tpu_json_obj *o, const char *key, int64_t lo, int64_t hi, const char *word,
                           int64_t word_value, int flags, int64_t *out);
/* A number in [lo, hi] (lo or hi may be +-INFINITY); TPU_JSON_HI_OPEN
** excludes hi, also after rounding to f32 (values meant for f32 math). */
tpu_status tpu_json_num(const tpu_json_obj *o, const char *key, double lo, double hi, int flags, double *out);
tpu_status tpu_json_bool(const tpu_json_obj *o, const char *key, bool *out);
tpu_status tpu_json_str(const tpu_json_obj *o, const char *key, int flags, const char **out);
/* "LABEL: missing; expected WHAT" at the object, for members with a
** richer description than a type ("one of thread, process, shared_memory"). */
tpu_status tpu_json_missing(const tpu_json_obj *o, const char *key, const char *what);
/* "LABEL: MSG" at the member 'key' (at the object when key is absent). */
tpu_status tpu_json_fail_member(const tpu_json_obj *o, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Find the line and column (1-based) of the value at 'path' in JSON 'text'.
** Path syntax: keys joined by '.', array indices as [i]: "mxu.rows",
** "layers[2].units". Returns 1 and sets *line,*col when found, else 0 (and
** sets the position of the deepest enclosing value found, if any). Used to
** point error messages at the offending value; never fails otherwise. */
int tpu_json_locate(const char *text, const char *path, int *line, int *col);
/* }================================================================== */

/* {==================================================================
** Names
** ================================================================== */
/* The candidate closest to 's' in edit distance (insertions, deletions,
** substitutions and swaps of two neighbours, case ignored), for a message's
** "did you mean": NULL when none is within max(1, strlen(s) / 3) edits, or
** s itself is one. cands has n entries (NULL entries are skipped); s and
** the candidates longer than 63 bytes never match. Can't fail. */
const char *tpu_nearest(const char *s, const char *const *cands, int n);
/* }================================================================== */

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
/* Cancellation: one process-wide flag that a front end raises (the Python
** module, on KeyboardInterrupt) and the long loops poll between units of
** work: the training run before each step (cli/cmd_train.c), a sweep before
** each point (sweep/sweep_run.c). A loop that sees it stops as a failure
** ("interrupted") before writing any output, so nothing is half-written;
** whoever raised the flag clears it. The command line never raises it.
** These functions can't fail and are safe from any thread. */
void tpu_cancel_request(void);
void tpu_cancel_clear(void);
bool tpu_cancel_requested(void);

/* Writes 'n' bytes to 'path'. Symlinks are followed first (the link stays,
** its target gets the bytes). A regular file or a new path is written
** through a temporary file in the target's directory and rename(2), so
** readers see the old file or the whole new one; an existing file that is
** not regular (a device, a FIFO) is written directly, every error reported
** (ENOSPC from a full device). The one way every output is written.
** Returns 0, or -1 with errno set (nothing left behind). */
int tpu_write_atomic(const char *path, const void *data, size_t n);
/* Reads a whole file into a NUL-terminated buffer (tpu_free it). Returns
** NULL with errno set on failure; *len gets the byte count when non-NULL. */
char *tpu_read_file(const char *path, size_t *len);

/* .npy arrays (NumPy format versions 1.0 to 3.0, C order, little-endian).
** tpu_npy_parse reads the header of the file held in buf[0..len): the
** dtype as NumPy writes it ("<f4", "|u1", "<i8"), the shape (at most
** TPU_NPY_MAX_DIMS dimensions) and where the elements start; the file must
** hold exactly count * itemsize bytes of them. 'path' only names the file in
** messages ("PATH: not a .npy file (bad magic) ...", "PATH: header field
** 'fortran_order' must be False ...", "PATH: truncated: ..."). Returns
** TPU_ERR_INPUT with the message, or TPU_ERR_NOMEM. */
#define TPU_NPY_MAX_DIMS 8
typedef struct tpu_npy {
  char descr[16];
  size_t itemsize;                    /* bytes per element, from descr */
  int ndim;
  int64_t shape[TPU_NPY_MAX_DIMS];
  size_t count;                       /* elements: the product of the shape */
  const unsigned char *data;          /* the first element, inside buf */
} tpu_npy;
tpu_status tpu_npy_parse(const char *path, const void *buf, size_t len, tpu_npy *out, char *err, size_t errcap);
/* Reads a float32 ('<f4') .npy: the header into *hdr (its data pointer is
** left NULL) and the elements into a new buffer *data (tpu_free it). IO when
** the file cannot be read ("PATH: cannot read: ..."), INPUT for a bad file
** or another dtype, NOMEM. On failure *data is NULL. */
tpu_status tpu_npy_read_f32(const char *path, tpu_npy *hdr, float **data, char *err, size_t errcap);
/* Writes a float32 .npy (version 1.0) atomically (tpu_write_atomic).
** Returns 0, or -1 with errno set. */
int tpu_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);
/* }================================================================== */

#endif /* TPU_BASE_H */
