/*
** mxu.h -- the systolic matrix unit (MXU): weight-, input- or
** output-stationary.
**
** Geometry. rows x cols processing elements (PEs), 128x128 by default,
** 1..1024 per side. PE(r,c) holds one weight. A *tile* multiplies an M x K
** block of activations by a K x N block of weights (K <= rows, N <= cols,
** M >= 1) into M x N f32 accumulators, overwriting or accumulating.
**
** Timing (cycle 0 is the first cycle; all times are cycle indices). For tile
** i with weights loaded from cycle L_i and streaming from cycle s_i:
**   - Weight load: K_i rows enter the top of every column, one row per cycle,
**     last row first, shifting down a shadow chain; column c is skewed by c
**     cycles (as activations are skewed by row). The loader is one port:
**     L_i >= L_{i-1} + K_{i-1}.
**   - Double-buffered: the shadow chain may take tile i's weights while tile
**     i-1 still computes, once tile i-1 has begun streaming: L_i >= s_{i-1}.
**     Single-buffered: the weights shift straight into the PEs, right behind
**     tile i-1's last activations: L_i >= s_{i-1} + M_{i-1}.
**   - Streaming: s_i >= L_i + K_i (all weights in place) and
**     s_i >= s_{i-1} + M_{i-1} (one activation vector enters per cycle).
**     L_i and s_i also respect the tile's 'earliest' cycle (operands ready):
**     L_i >= earliest.
**   - Activation m of tile i reaches PE(r,c) at cycle s_i + m + r + c; the
**     active weight of PE(r,c) switches to tile i's at cycle s_i + r + c (the
**     swap travels with the wavefront, so tiles follow each other with no
**     bubble). Partial sums flow down one row per cycle through all rows; the
**     result (m,n) leaves the bottom of column n at cycle s_i+m+(rows-1)+n and
**     is written into the accumulator in that same cycle.
**   - Tile i is done after cycle s_i + (M_i-1) + (rows-1) + (N_i-1); a
**     sequence's cycle count is 1 + the latest such cycle.
**   So a full tile costs max(M, K) cycles per tile in steady state when
**   double-buffered (M + K when not), plus a fill/drain of rows+cols-2 once.
**
** Dataflows (cfg.dataflow). The timing above is weight-stationary (ws,
** the default, and the only one the chip engine runs).
** Two more run on the same array (docs/MXU_FAST.md has a table of each):
**   - is (input-stationary): the ws array with the operands' roles swapped.
**     PE(r,c) holds A[m0+c][k0+r] (a K x M block of the transposed
**     activations, K <= rows, M <= cols); the N columns of B stream in, one
**     per cycle, as the activation vectors do in ws; result (m,n) leaves the
**     bottom of column m. Every rule above holds with the stream length N
**     for M and the block's M for N: the input tile loads in K cycles into
**     the shadow buffer (double-buffered: while the previous tile streams),
**     and the last result is at s_i + (N_i-1) + (rows-1) + (M_i-1).
**   - os (output-stationary): PE(r,c) accumulates result (m0+r, n0+c) of
**     an M x N block (M <= rows, N <= cols) over all K. A[m0+r][k] enters
**     row r at the left at cycle s_i+k+r and moves right a PE a cycle;
**     B[k][n0+c] enters column c at the top at s_i+k+c and moves down; so
**     MAC k of PE(r,c) is at cycle s_i+k+r+c. Nothing is loaded. Each PE
**     has two accumulator banks (tile i uses bank i mod 2; a second bank is
**     required, double_buffer must be true) and each column an output
**     shift chain moving down a row a cycle into the accumulators under the
**     array; a finished result boards the chain at its row in the first
**     cycle the slot passing there is empty. So result (r,c), finished at
**     s_i+K_i-1+r+c, waits r cycles and is written at cycle
**     s_i + K_i + r + (rows-1) + c. Streaming: s_i >= earliest, and
**     s_i >= s_{i-1} + K_{i-1} (one A and one B vector enter per cycle);
**     the chain takes a column's results one per cycle, so the sequencer
**     starts tile i no earlier than the cycle that puts its first result
**     right behind tile i-1's last: s_i + K_i >= s_{i-1} + K_{i-1} +
**     M_{i-1} (which also frees tile i-2's bank in time). The last result is at
**     s_i + K_i + (M_i-1) + (rows-1) + (N_i-1).
**   So a full tile costs max(M, K) (ws), max(N, K) (is) or max(K, M) (os)
**   cycles in steady state, and a tile that fills the array the same in
**   all three (a 128x128x128 GEMM on a 128x128 array: 510 cycles).
**
** Numerics. Operands are f32 values that are already bf16 (low 16 bits zero;
** the GEMM driver rounds them). Each PE computes psum_out = fmaf(a, w, psum_in):
** the bf16 x bf16 product is exact and the add rounds once, as in a fused
** MAC. psum enters row 0 as +0.0. PEs outside the tile's K x N block hold the
** weight +0.0 and see the activation +0.0, so rows K..rows-1 add +0.0 (which
** turns a -0.0 partial sum into +0.0, as the hardware would). The result
** leaving column n is added into the accumulator as acc + psum (accumulate)
** or stored (overwrite). The fast kernel reproduces this order bit for bit.
** is computes every result as ws does (the same products in the same k
** order down a column; fmaf is symmetric in its factors), so its bits are
** ws's. os: a result's bank starts at +0.0 and takes psum = fmaf(a, b,
** psum) for k = 0..K-1 in order inside one PE; the result rides the chain
** unchanged and enters the accumulator as in ws. So os equals ws bit for
** bit when K <= rows, except that a zero result keeps its sign (ws's
** pass-through rows turn -0.0 into +0.0 when K < rows); when K > rows ws
** rounds each K-tile's partial sum and adds it into the accumulator while
** os carries one chain over all of K, and the last bits can differ.
** The sign and payload of a NaN result are unspecified (any NaN equals any
** NaN in bit comparisons between models).
**
** Fidelity. The PE model (tpu_mxu) steps every cell every cycle with real
** values and exposes each cell's state for the visualizer. The tile model
** gives the same cycles by formula (tpu_mxu_sched) and the same bits by a
** blocked kernel (tpu_mxu_tile_compute). Tests prove both agree. The os
** array has a PE model of its own (mxu_os.c, internal: tpu_mxu_gemm runs
** it), checked the same way.
**
** The tile walk. A GEMM larger than one tile is folded into tiles in one
** order, written once (tpu_mxu_walk): N-tiles dealt round-robin to the
** core's arrays, within each the bf16 passes, within each the K-tiles in K
** order; M is never cut. The first tile of an N-tile overwrites the
** accumulators, the rest add, so every result element is summed in one
** fixed order. tpu_mxu_gemm (every fidelity) and the chip engine walk it;
** the visualizer gets the engine's tiles from its events. Invariant: each
** (N-tile, pass, K-tile) is visited exactly once, and an array's tiles come
** in walk order (its schedule sees them so).
**
** K-split. A GEMM whose K exceeds the array is K-tiles summed into the same
** accumulators one after another without a drain in between (the walk
** below); a product split into several calls over K folds does the same
** with tpu_mxu_gemm_acc (every tile adds), as the chip engine's K-fold
** matmuls do. The timing level computes a GEMM's cycles in closed form
** (mxu_gemm.c), equal to feeding every tile, at a cost independent of the
** shape, so M, N and K go up to TPU_MXU_MAX_GEMM_DIM (2^31) there; its 64-bit
** counters are checked (a GEMM whose cycles or multiply-adds would pass
** TPU_MXU_MAX_COUNT fails with TPU_ERR_RANGE instead of wrapping). The PE
** and tile levels hold the values and take up to INT_MAX.
**
** Not modelled: power, clock gating, wire delay, accumulator capacity (the
** accumulators hold any M), weight FIFO depth beyond double buffering, a
** single-bank os array, os and is in the PE model's cell view (is runs on
** it as ws with the roles swapped; os has its own PE model, mxu_os.c,
** without one) and in the chip engine (ws only).
*/
#ifndef TPU_MXU_H
#define TPU_MXU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/base.h"

#define TPU_MXU_DIM 128
#define TPU_MXU_MAX_DIM 1024
/* The arrays one GEMM may run on at once (tpu_mxu_gemm's 'mxus'; a core's
** mxu.per_core in sim). */
#define TPU_MXU_MAX_ARRAYS 8

/* Which operand stays in the PEs (see Dataflows above). */
typedef enum tpu_mxu_dataflow { TPU_MXU_WS = 0, TPU_MXU_OS, TPU_MXU_IS } tpu_mxu_dataflow;
const char *tpu_mxu_dataflow_name(tpu_mxu_dataflow d);             /* "ws", "os", "is" */
int  tpu_mxu_dataflow_parse(const char *s, tpu_mxu_dataflow *out); /* 1 if known */

typedef struct tpu_mxu_config {
  int rows, cols;              /* PE grid, 1..TPU_MXU_MAX_DIM each */
  bool double_buffer;          /* shadow buffer of the stationary operand (ws, is) or
                               ** second accumulator bank (os; required) */
  tpu_mxu_dataflow dataflow;   /* TPU_MXU_WS (0, the default) */
} tpu_mxu_config;

/* 128 x 128, double-buffered, weight-stationary. This function can't fail. */
tpu_mxu_config tpu_mxu_config_default(void);
/* TPU_OK if usable, else TPU_ERR_CONFIG (also for os without double_buffer:
** a single-bank output-stationary array is not modelled). */
tpu_status tpu_mxu_config_check(const tpu_mxu_config *cfg);

/* One tile of work. All pointers are borrowed: they must stay valid until
** the tile is done (PE model) or the call returns (fast kernel). Leading
** dimensions are in elements; matrices are row-major. */
typedef struct tpu_mxu_tile {
  int m, k, n;                 /* 1 <= k <= rows, 1 <= n <= cols, m >= 1 (the
                               ** ws array's; the tile level computes any k) */
  const float *act; int lda;   /* m x k activations (bf16 values) */
  const float *w;   int ldw;   /* k x n weights (bf16 values) */
  float *out;       int ldo;   /* m x n f32 accumulators */
  bool accumulate;             /* true: out += result; false: out = result */
  uint64_t earliest;           /* weight load may not start before this cycle */
} tpu_mxu_tile;

/* {==================================================================
** Tile-level timing: the formula above, one tile at a time, so a caller
** (the chip engine) can feed tiles as their operands become ready. O(1) per
** tile; data values never enter it.
** ================================================================== */
typedef struct tpu_mxu_sched {
  tpu_mxu_config cfg;
  uint64_t loader_free;        /* first cycle the weight port is free (os: the operand edges) */
  uint64_t prev_stream;        /* s of the previous tile */
  uint64_t prev_m;             /* stream length of the previous tile (0: none yet) */
  uint64_t out_free;           /* os: s + K + M of the previous tile (the output chain) */
  uint64_t done;               /* cycle count: 1 + last result cycle so far */
  uint64_t tiles, macs, useful_cells_cycles;
} tpu_mxu_sched;

typedef struct tpu_mxu_tile_times {
  uint64_t load_start;         /* L_i */
  uint64_t stream_start;       /* s_i */
  uint64_t last_result;        /* cycle the last result is written */
} tpu_mxu_tile_times;

void tpu_mxu_sched_init(tpu_mxu_sched *s, const tpu_mxu_config *cfg);
/* Schedules one tile of the GEMM shape (m, k, n) in cfg's dataflow (for is
** the stationary block is k x m and n streams; for os m x n, k streams)
** that may not start loading (os: streaming) before 'earliest'. In os,
** load_start = stream_start (nothing is loaded). 'out' may be NULL. This
** function can't fail (shapes were validated). */
void tpu_mxu_sched_tile(tpu_mxu_sched *s, int64_t m, int64_t k, int64_t n, uint64_t earliest,
                        tpu_mxu_tile_times *out);
/* }================================================================== */

/* Fast kernel: computes one tile's values exactly as the PE model would
** (see Numerics). Uses the widest SIMD the host has (chosen at run time);
** every path gives the same bits. 'rows' is the array height (it decides
** whether the +0.0 pass-through applies; os passes k: none). It rounds act and w to bf16 as
** it reads them (a no-op on bf16 values), so a caller may pass f32 operands
** for a bf16 product. This function can't fail. */
void tpu_mxu_tile_compute(int rows, const tpu_mxu_tile *t);

/* {==================================================================
** PE-level model
** ================================================================== */
typedef struct tpu_mxu tpu_mxu;   /* opaque */

typedef enum tpu_mxu_cell_state {
  TPU_MXU_CELL_IDLE = 0,
  TPU_MXU_CELL_LOADING,        /* weight shifting through this cell's shadow */
  TPU_MXU_CELL_COMPUTING       /* holds a real activation of some tile */
} tpu_mxu_cell_state;

typedef struct tpu_mxu_stats {   /* plain counters; derived metrics at report time */
  uint64_t cycles;             /* ticks so far */
  uint64_t busy_cycles;        /* cycles with any cell computing */
  uint64_t macs;               /* useful multiply-adds (cells inside a tile's K x N) */
  uint64_t weight_loads;       /* tiles whose weights were loaded */
  uint64_t tiles_done;
} tpu_mxu_stats;

/* A read-only snapshot for the visualizer; every array is caller-owned and
** holds rows*cols entries (row-major), or NULL to skip it. */
typedef struct tpu_mxu_view {
  uint8_t *state;              /* tpu_mxu_cell_state per cell */
  float *weight;               /* active weight per cell */
  float *act;                  /* activation held this cycle */
  float *psum;                 /* partial sum leaving the cell this cycle */
  int8_t *tile;                /* index (mod 128) of the tile whose activation is held, -1 none */
  /* 1 where the cell's shadow register holds, or is receiving, a weight of
  ** a tile not yet swapped into its active register, whatever the cell's
  ** state: the next tile loading (double buffering) while this cell may
  ** still compute the current one. Cell (r, c) of tile i with r < K and
  ** c < N, from the load front reaching it (L_i + c + r) until the tile's
  ** first activation does (s_i + r + c, the swap); else 0. */
  uint8_t *shadow;
} tpu_mxu_view;

/* On success *out owns a new unit; free with tpu_mxu_destroy(). On failure
** *out is NULL and nothing is allocated. The PE model is the ws array:
** cfg->dataflow must be TPU_MXU_WS (else TPU_ERR_CONFIG; tpu_mxu_gemm runs
** an is GEMM on it with the operands' roles swapped, and an os GEMM on the
** os array's own PE model, mxu_os.c). */
tpu_status tpu_mxu_create(const tpu_mxu_config *cfg, tpu_mxu **out);
void       tpu_mxu_destroy(tpu_mxu *m);                           /* NULL is a no-op */
/* Queues a tile (shape checked: TPU_ERR_CONFIG if out of range). Pointers in
** the tile are borrowed until tpu_mxu_idle() or the tile is done. */
tpu_status tpu_mxu_push(tpu_mxu *m, const tpu_mxu_tile *t);
void       tpu_mxu_tick(tpu_mxu *m);                              /* one clock; can't fail */
bool       tpu_mxu_idle(const tpu_mxu *m);                        /* no tile queued or in flight */
/* Ticks until idle; returns the cycle count (== tpu_mxu_sched's 'done'). */
uint64_t   tpu_mxu_run(tpu_mxu *m);
void       tpu_mxu_get_stats(const tpu_mxu *m, tpu_mxu_stats *out);
const tpu_mxu_config *tpu_mxu_get_config(const tpu_mxu *m);
void       tpu_mxu_view_cells(const tpu_mxu *m, tpu_mxu_view *out);
/* }================================================================== */

/* {==================================================================
** GEMM through the MXU: C (M x N) = A (M x K) . B (K x N), f32 in and out.
** Tiled over N (outer) and K (inner), K-tiles summed in K order in the f32
** accumulators. Precision decides the bf16 passes: bf16 (1 pass, operands
** rounded to bf16), bf16x3 and bf16x6 (operands split into 2 or 3 bf16
** parts; 3 or 6 partial products, smallest first, each pass a full run
** through the MXU). With 'mxus' > 1 the N-tiles are dealt round-robin to
** independent arrays and the cycle count is the slowest one's.
** ================================================================== */
typedef enum tpu_precision { TPU_PREC_BF16 = 0, TPU_PREC_BF16X3, TPU_PREC_BF16X6 } tpu_precision;
const char *tpu_precision_name(tpu_precision p);            /* "bf16", ... */
int  tpu_precision_parse(const char *s, tpu_precision *out); /* 1 if known */
int  tpu_precision_passes(tpu_precision p);                  /* 1, 3, 6 */
/* Pass i (0-based) of p in the order the MXU runs them, smallest products
** first: which bf16 part of A (*a_part) meets which part of B (*b_part),
** 0 being the high part. bf16x3 drops lo x lo and bf16x6 the terms below
** 2^-24 relative, as TPUs do. Returns 0, or -1 if i is out of range. */
int  tpu_precision_pass(tpu_precision p, int i, int *a_part, int *b_part);
int  tpu_precision_parts(tpu_precision p);                  /* bf16 parts of an operand: 1, 2, 3 */
/* Splits x[0..n) into p's bf16 parts, part j of x[i] at out[j*n + i]: each
** part the bf16 rounding of what the previous parts left. A non-finite
** value goes whole into the first part (the rest are zero), so inf stays
** inf. This function can't fail. */
void tpu_precision_split(tpu_precision p, const float *x, size_t n, float *out);

/* The tile walk: how a GEMM of M x N x K in a precision folds into tiles,
** the one order every user of a GEMM's tiles follows (tpu_mxu_gemm at every
** fidelity, the chip engine's matmul timing, the visualizer through the
** engine's events):
**
**   for each N-tile nt (n0 = nt * cols), dealt to array nt % arrays
**     for each pass p (tpu_precision_pass order, smallest products first)
**       for each K-tile (k0 = 0, rows, 2 rows, ...)
**         tile M x min(rows, K - k0) x min(cols, N - n0); it overwrites the
**         accumulators when it is the first of its N-tile, else adds
**
** M is never cut: a tile streams all M rows of activations. So an N-tile's
** results are summed in one fixed order (the passes' K-tiles one after
** another), and the tiles of one array come in walk order. The other
** dataflows (cfg->dataflow) cut what they hold and never cut what streams:
**
**   is: for each M-tile mt (m0 = mt * cols), dealt to array mt % arrays
**         for each pass, for each K-tile (k0 = 0, rows, ...)
**           tile min(cols, M - m0) x min(rows, K - k0) x N
**   os: for each N-tile nt (n0 = nt * cols), dealt to array nt % arrays
**         for each M-tile (m0 = 0, rows, ...), for each pass
**           tile min(rows, M - m0) x K x min(cols, N - n0)
**
** the first tile of an M-tile (is) or of an output block (os) overwriting. */
typedef struct tpu_mxu_walk_tile {
  int64_t m;                   /* the tile's shape: m (ws: all of M, which may pass INT_MAX at
                               ** the timing level) ... */
  int k, n;                    /* ... x k x n */
  int k0, n0;                  /* where it starts in K and N */
  int m0;                      /* where it starts in M (0 in ws: M is never cut) */
  int pass;                    /* 0 .. tpu_precision_passes - 1 */
  int a_part, b_part;          /* the pass's bf16 parts of A and B (tpu_precision_pass) */
  int array;                   /* the array that runs it: its N-tile index mod arrays */
  bool first;                  /* first of its N-tile: overwrite (the others accumulate) */
} tpu_mxu_walk_tile;

typedef struct tpu_mxu_walk {  /* the walk's state; read it only through tpu_mxu_walk_next */
  int64_t M, N, K;
  int rows, cols, arrays, passes;
  int8_t a_part[6], b_part[6];
  int64_t nt, k0;              /* the next tile's N-tile (M-tile in is) and K offset, ... */
  int pass;                    /* ... its pass ... */
  int64_t m0;                  /* ... and (os) its M offset */
  tpu_mxu_dataflow df;
} tpu_mxu_walk;

/* Starts the walk of an M x N x K GEMM (each >= 1) in precision prec over
** 'arrays' arrays (>= 1) of cfg's geometry and dataflow. This function
** can't fail. */
void tpu_mxu_walk_init(tpu_mxu_walk *w, const tpu_mxu_config *cfg, int arrays, tpu_precision prec,
                       int64_t M, int64_t N, int64_t K);
/* Writes the next tile into *t and returns true, or returns false when the
** walk is done (t untouched). */
bool tpu_mxu_walk_next(tpu_mxu_walk *w, tpu_mxu_walk_tile *t);

typedef struct tpu_mxu_gemm_result {
  uint64_t cycles;             /* identical at every fidelity */
  uint64_t tiles;              /* tiles pushed through the array(s) */
  uint64_t macs;               /* multiply-adds done by the array(s), all passes */
  uint64_t weight_loads;       /* loads of the stationary operand: weights (ws), inputs (is), 0 (os) */
} tpu_mxu_gemm_result;

/* The largest M, N or K at the timing level, and the largest cycle or MAC
** count it reports (2^62: far from wrapping, with room for a caller's sums). */
#define TPU_MXU_MAX_GEMM_DIM ((int64_t)1 << 31)
#define TPU_MXU_MAX_COUNT (UINT64_C(1) << 62)
/* A, B, C are row-major, caller-owned. At TPU_FIDELITY_TIMING they may be
** NULL (no values computed); otherwise C is overwritten. Returns
** TPU_ERR_CONFIG for bad shapes (1..TPU_MXU_MAX_GEMM_DIM at the timing level,
** 1..INT_MAX at the others) or config, TPU_ERR_RANGE when the cycles or
** MACs would exceed TPU_MXU_MAX_COUNT (timing level; nothing is written to
** *out), TPU_ERR_NOMEM if scratch space can't be had (C is then
** unspecified). */
tpu_status tpu_mxu_gemm(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                        tpu_precision prec, int64_t M, int64_t N, int64_t K,
                        const float *A, const float *B, float *C,
                        tpu_mxu_gemm_result *out);
/* The same with 'accumulate': C += A.B, the product's tiles added into C
** in the accumulators one after another, every tile of the walk adding
** (none overwrites), as a K-split GEMM's later K folds add into the
** partial sums of the earlier ones without a drain in between. C must then
** hold values at every fidelity but timing. The cycles are tpu_mxu_gemm's. */
tpu_status tpu_mxu_gemm_acc(const tpu_mxu_config *cfg, int mxus, tpu_fidelity level,
                            tpu_precision prec, int64_t M, int64_t N, int64_t K,
                            const float *A, const float *B, float *C, bool accumulate,
                            tpu_mxu_gemm_result *out);
/* }================================================================== */

#endif /* TPU_MXU_H */
