/*
** train_lower.c -- the timing path: the step plan of a model's training
** step (or inference pass; fe_int.h, frontend/plan.c) lowered into one
** chip-engine program per core (tpu_fe_step_program), and the step timing
** on top of it (tpu_fe_time_step, tpu_fe_step_timer). Shapes only: the
** program is meant for TPU_FIDELITY_TIMING; values never enter the timing.
**
** Every core runs the same program on its shard of 'rows' samples: core
** 0's is built and the others share it (tpu_sim_program_share). Before
** anything is built, the step's size is counted from the shapes (n_step:
** the ops each lowering below adds, in closed form; n_tensors) and a step
** the engine or the HBM cannot take is refused (check_size).
** lower_step() turns each plan step into ops, in the plan's order:
**
**   INFEED      the shard (and its labels) lands in HBM when the host-time
**               model says it is ready (one infeed entry per core)
**   GEMM        tiled on the MXU (run_gemm); the steps the plan marks
**               'fused' after it form its epilogue on the result tile
**               before it goes back to HBM: bias_add and a directly
**               following relu/tanh/sigmoid (forward), db = col_sum of dY
**               (dW). Conv2d's GEMM reads the im2col matrix
**               [rows*OH*OW x KH*KW*C]: the DMA gathers each receptive
**               field, so the input is read once per tap and IM2COL costs
**               nothing of its own
**   VPU         unfused relu/tanh/sigmoid, their gradients (nin 2), dropout
**               'mul' by a mask made on chip (its generation, the plan's
**               DROPOUT_MASK step, is not modelled), element-wise over tiles
**   POOL        KH*KW-1 'max' (avgpool, global_avgpool: 'add', then 'scale') over
**               output-shaped tiles, one per window tap; POOL_BWD routes dY
**               with a select per input (relu_grad's cost), avgpool scales it
**   COL2IM      conv2d's dcols = dY.W^T summed back into dX by KH*KW
**               tap-wise 'add's
**   VIEW        nothing (flatten, inactive dropout, add's dY passed on:
**               the same bytes)
**   CONCAT      concatenate: each input's channels 'copy'd into the output
**   SPLIT       (and back, per input, for the gradient), element-wise tiles;
**               add and the sum of a tensor's several gradients are VPU
**               'add's (nin 2)
**   PAD, CROP   zero_padding and its gradient: a 'copy' over the output's
**               tiles (XLA would often fold the padding into the next
**               conv's im2col; this is the unfused cost)
**   loss        softmax_xent (loss and gradient) and accuracy per row tile
**   ALLREDUCE   ONE all-reduce of every f32 gradient at the end of the
**               backward pass (see below why one)
**   BN, BN_BWD  batch_normalization, unfused: one element-wise VPU pass over
**               the R x C tiles per op (lower_bn lists them: training
**               col_sum, bias_add, mul, col_sum, mul, bias_add, with rsqrt
**               and mul over the 1 x C vectors; inference mul, bias_add;
**               backward col_sum, bias_add, mul, mul, col_sum and for dX
**               mul, sub, bias_add, mul)
**   BN_MOVING   the moving mean and variance: scale, scale, add over 2 x C
**               after the update
**   depthwise   a depthwise GEMM (depthwise_conv2d, separable_conv2d's first
**               half; fe_int.h) as its blocks of the MXU's width: per block
**               of kg = cols/dm channels the dense product of their T*kg
**               im2col columns with their kg*dm outputs (dW, dX likewise),
**               so each array row holds dm useful weights of its cols and the
**               array is used at most dm/cols; the MACs counted are the
**               model's. DW_EXPAND / DW_COMPACT: a 'mul' against an on-chip
**               mask over each block's T*kg x kg*dm weights (the zeros put
**               in, the diagonal taken out)
**   UPDATE      sgd / momentum / adam on the VPU over the parameters as one
**               flat f32 vector, with their state, streamed through VMEM
**
** Sections. A step that starts a layer of a phase (or col2im, or a phase
** without layers) starts a section: its label names the ops in traces
** ("fwd 1 dense matmul", "bwd 0 conv2d dW dma", "all_reduce gradients")
** and its VMEM buffers live only within it.
**
** Memory. Every tensor (activations, parameters, gradients, optimizer
** state) lives in HBM in f32; each op streams tiles into VMEM by DMA and
** its results back, with two VMEM slots per operand so that the next tile's
** DMA overlaps this tile's compute (double buffering: the engine's
** write-after-read dependencies on a slot hold a DMA back until the op that
** read the slot's previous tile is done). An operand of a GEMM that is
** reused across output tiles and small enough (<= VMEM/8) is kept in VMEM
** for the GEMM (loaded once) instead of being fetched again per tile.
**
** Tiles. A GEMM's streamed tile holds at most Q = VMEM/256 f32 values: its
** a, b and c operands have two slots each, and each slot may meet up to 4
** edge shapes, so 6 * 4 * 4 Q bytes < VMEM/2; the two reuse caches take at
** most VMEM/4; the rest is for bias and db tiles. Element-wise passes (up
** to 6 slots of 4 shapes) use tiles of 2Q values (3/4 of VMEM at most); the
** optimizer (8 slots: param, grad, m, v, twice; only the row count varies,
** so 2 shapes each) tiles of 3Q (3/4 of VMEM); the loss, tiles of Q. VMEM
** buffers are named per section, so each is live only within its section
** (the engine checks liveness and would refuse a program that overflows).
**
** HBM views. At the timing level a buffer is only a size, so HBM tiles are
** buffers named by their shape ("hbm 16x256"), shared by every tile of that
** shape: dependencies between DMAs through them are harmless, since a
** core's DMA unit runs its transfers in program order anyway (which is also
** what orders a tile's write before a later read of it). Labels get views
** of their own, never written, so that the program also runs at the tile
** level (values are then meaningless but valid). Whole tensors are
** declared too, so that HBM capacity is checked. The three links the DMA
** order cannot give -- infeed before the first read of the shard, the last
** gradient write before the all-reduce, the all-reduce before the first
** optimizer read -- are explicit (tpu_sim_op.after).
**
** Why one all-reduce. The engine charges each collective the ring's hop
** latency 2(n-1)h: 9800 cycles on tpu-v2-8. There the built-in mlp's
** backward pass takes about 14000 cycles and its one all-reduce 28400;
** one bucket per dense layer (issued as each layer's gradient is done)
** would pay the latency three times on the core's one collective queue and
** end about 8000 cycles later by the same formula. XLA's all-reduce
** combiner makes the same choice for small models. Not modelled:
** overlapping the reduction with the backward pass (buckets), and the HBM
** traffic of the collective itself (the engine does not model it).
**
** Not modelled: bf16 storage of activations (everything is f32 in HBM),
** layout changes beyond free views (flatten, im2col's gather is charged as
** the bytes it reads), the RNG of dropout masks, exact col2im bytes for
** strided or 'valid' convolutions (the tap-wise sum is over dX-shaped tiles,
** exact for stride 1 'same'), padding of the flat optimizer vector to whole
** rows of lanes (at most lanes-1 values).
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_int.h"

enum { R_A = 0, R_B, R_C, R_CA, R_CB, R_BIAS, R_DB, R_PART, R_X, R_Y, R_O, R_MASK, R_LAB, R_LOSS, R_ACC,
       R_P, R_G, R_M, R_V, R_NROLES };
static const char *const ROLE[R_NROLES] = { "a", "b", "c", "ca", "cb", "bias", "db", "part", "x", "y", "o",
                                            "mask", "lab", "loss", "acc", "p", "g", "m", "v" };

typedef struct cbuf { int role, slot; int64_t r, c; int h; } cbuf;   /* a buffer by role, slot and shape */
/* The buffers made so far, and an index of them by key (open addressing:
** 1 + the position in v, 0 empty), so that finding one costs O(1) however
** many a section has (a GEMM keeps one cached block per slot). */
typedef struct bufcache { cbuf *v; int n, cap; int *idx; int idxcap; } bufcache;
/* An op name: "<section label> <what>", made once per section and 'what'. */
typedef struct opname { const char *what; char name[112]; } opname;
enum { NAMES = 16 };

typedef struct lower {
  tpu_sim_program *p;
  int core;
  const tpu_chip_config *chip;
  tpu_precision prec;
  int64_t vmem;                /* bytes */
  int64_t Q;                   /* values in one streamed tile */
  int64_t S;                   /* square tile edge, S*S <= Q */
  int sec;                     /* section number (VMEM names) */
  char label[64];              /* section label: "fwd 1 dense" */
  opname names[NAMES];         /* this section's op names (add) */
  int nnames;
  bufcache vmem_bufs;          /* this section's VMEM buffers */
  bufcache hbm_views;          /* HBM tiles by shape */
  int after;                   /* 1 + op the next DMA must wait for, or 0 */
  int last_dma;                /* index of the last DMA added */
  int step;                    /* the training step being lowered (tpu_sim_op.step) */
  int last_op;                 /* index of the last op added, -1 before the first */
  uint64_t hbm_bytes, macs;
  int grads;                   /* the gradients' HBM tensor (the all-reduce's operand) */
  struct { int v; int64_t r, c; const char *what; } pend[4];   /* deferred stores */
  int npend;
  tpu_status st;
  char *err; size_t errcap;
} lower;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* a tile extent: at most 'lim', whole sublane groups when it splits 'n' */
static int64_t extent(int64_t n, int64_t lim) {
  int64_t e = min64(n, max64(1, lim));
  if (e < n && e > 8) e -= e % 8;
  return e;
}

static void lw_fail(lower *L, tpu_status st, const char *msg) {
  if (L->st) return;
  L->st = st;
  snprintf(L->err, L->errcap, "%s: %s", L->label, msg);
}

/* Starts a section: "what" alone, or "what I KIND" for layer i >= 0. */
static void section(lower *L, const char *what, int i, const char *kind) {
  L->sec++;
  L->vmem_bufs.n = 0;
  if (L->vmem_bufs.idx) memset(L->vmem_bufs.idx, 0, (size_t)L->vmem_bufs.idxcap * sizeof *L->vmem_bufs.idx);
  L->nnames = 0;
  if (i >= 0) snprintf(L->label, sizeof L->label, "%s %d %s", what, i, kind);
  else snprintf(L->label, sizeof L->label, "%s", what);
}

/* Room for element n of arr (capacity *cap, doubled from 'first'): the
** array, moved or not, or NULL (and L failed) when out of memory. */
static void *grow(lower *L, void *arr, int n, int *cap, int first, size_t size) {
  if (n < *cap) return arr;
  int c = *cap ? 2 * *cap : first;
  void *p = tpu_realloc(arr, (size_t)c * size);
  if (!p) { lw_fail(L, TPU_ERR_NOMEM, "out of memory"); return NULL; }
  *cap = c;
  return p;
}

/* The buffer of cache bc for (role, slot) with shape r x c, added to the
** program at its first use: in VMEM, this section's "s3 a0 16x256"; in
** HBM, the view "hbm 16x256" shared by every tile of that shape. Labels
** (R_LAB) get HBM views of their own: nothing writes them, so when the
** program is run at the tile level they stay valid class indices (zeros). */
static uint32_t cbuf_hash(int role, int slot, int64_t r, int64_t c) {
  uint64_t h = (uint64_t)role * 0x9e3779b97f4a7c15ull ^ (uint64_t)slot * 0xc2b2ae3d27d4eb4full;
  h ^= (uint64_t)r * 0x165667b19e3779f9ull ^ (uint64_t)c * 0xd6e8feb86659fd93ull;
  return (uint32_t)(tpu_mix64(h) >> 32);
}
/* Inserts v[n-1] into bc's index (grown to twice the entries); false when
** out of memory (L failed). */
static bool cache_index(lower *L, bufcache *bc) {
  if (2 * bc->n > bc->idxcap) {
    const int cap = bc->idxcap ? 2 * bc->idxcap : 64;
    int *idx = tpu_calloc((size_t)cap, sizeof *idx);
    if (!idx) { lw_fail(L, TPU_ERR_NOMEM, "out of memory"); return false; }
    tpu_free(bc->idx);
    bc->idx = idx;
    bc->idxcap = cap;
    for (int k = 0; k < bc->n - 1; k++) {   /* the others again */
      const cbuf *v = &bc->v[k];
      int i = (int)(cbuf_hash(v->role, v->slot, v->r, v->c) & (uint32_t)(cap - 1));
      while (idx[i]) i = (i + 1) & (cap - 1);
      idx[i] = k + 1;
    }
  }
  const cbuf *v = &bc->v[bc->n - 1];
  int i = (int)(cbuf_hash(v->role, v->slot, v->r, v->c) & (uint32_t)(bc->idxcap - 1));
  while (bc->idx[i]) i = (i + 1) & (bc->idxcap - 1);
  bc->idx[i] = bc->n;
  return true;
}

static int cached(lower *L, bufcache *bc, tpu_sim_space space, int role, int slot, int64_t r, int64_t c) {
  if (L->st) return 0;
  if (bc->idxcap) {
    const int mask = bc->idxcap - 1;
    for (int i = (int)(cbuf_hash(role, slot, r, c) & (uint32_t)mask); bc->idx[i]; i = (i + 1) & mask) {
      const cbuf *v = &bc->v[bc->idx[i] - 1];
      if (v->role == role && v->slot == slot && v->r == r && v->c == c) return v->h;
    }
  }
  cbuf *v = grow(L, bc->v, bc->n, &bc->cap, 32, sizeof *v);
  if (!v) return 0;
  bc->v = v;
  char name[80];
  if (space == TPU_SIM_VMEM)
    snprintf(name, sizeof name, "s%d %s%d %lldx%lld", L->sec, ROLE[role], slot, (long long)r, (long long)c);
  else
    snprintf(name, sizeof name, "%s %lldx%lld", role == R_LAB ? "labels" : "hbm", (long long)r, (long long)c);
  int h = tpu_sim_buffer(L->p, L->core, name, space, TPU_SIM_F32, r, c);
  if (!h) { lw_fail(L, TPU_ERR_NOMEM, tpu_sim_program_error(L->p)); return 0; }
  bc->v[bc->n++] = (cbuf){ role, slot, r, c, h };
  return cache_index(L, bc) ? h : 0;
}
static int vbuf(lower *L, int role, int slot, int64_t r, int64_t c) {
  return cached(L, &L->vmem_bufs, TPU_SIM_VMEM, role, slot, r, c);
}
static int hbuf(lower *L, int role, int64_t r, int64_t c) {
  return cached(L, &L->hbm_views, TPU_SIM_HBM, role == R_LAB ? R_LAB : 0, 0, r, c);
}

/* A whole tensor in HBM (for the capacity check; 'what' names it). */
static int tensor(lower *L, const char *what, int i, int64_t r, int64_t c) {
  if (L->st) return 0;
  char name[64];
  snprintf(name, sizeof name, "%s%d", what, i);
  int h = tpu_sim_buffer_find(L->p, L->core, name);   /* a later step: the same tensor */
  if (h) return h;
  h = tpu_sim_buffer(L->p, L->core, name, TPU_SIM_HBM, TPU_SIM_F32, r, c);
  if (!h) lw_fail(L, TPU_ERR_NOMEM, tpu_sim_program_error(L->p));
  return h;
}

/* Appends op with the name "<section> <what>"; returns its index or -1. */
static int add(lower *L, tpu_sim_op *op, const char *what) {
  if (L->st) return -1;
  /* the name, made once per section and 'what' (a literal or a VPU op's
  ** name: the same pointer is the same text; a full table starts over) */
  int k = 0;
  while (k < L->nnames && L->names[k].what != what) k++;
  if (k == L->nnames) {
    if (k == NAMES) k = L->nnames = 0;
    L->names[k].what = what;
    snprintf(L->names[k].name, sizeof L->names[k].name, "%s %s", L->label, what);
    L->nnames++;
  }
  op->name = L->names[k].name;
  op->step = L->step;
  int idx = -1;
  tpu_status st = tpu_sim_add_op(L->p, L->core, op, &idx);
  if (st) { lw_fail(L, st, tpu_sim_program_error(L->p)); return -1; }
  L->last_op = idx;
  return idx;
}

static int dma(lower *L, int src, int dst, int64_t bytes, const char *what) {
  tpu_sim_op op = { .kind = TPU_SIM_DMA, .src = src, .dst = dst, .after = L->after };
  int idx = add(L, &op, what);
  if (idx >= 0) { L->after = 0; L->last_dma = idx; L->hbm_bytes += (uint64_t)bytes; }
  return idx;
}
/* DMA of an r x c tile from HBM into (role, slot); returns the VMEM buffer. */
static int load(lower *L, int role, int slot, int64_t r, int64_t c, const char *what) {
  int v = vbuf(L, role, slot, r, c), h = hbuf(L, role, r, c);
  if (!L->st) dma(L, h, v, r * c * 4, what);
  return v;
}
static void store(lower *L, int v, int64_t r, int64_t c, const char *what) {
  int h = hbuf(L, R_O, r, c);
  if (!L->st) dma(L, v, h, r * c * 4, what);
}
/* A store issued after the next tile's loads (flush), so that the DMA unit
** fetches ahead instead of waiting behind a store for the op it drains. */
static void flush(lower *L) {
  for (int i = 0; i < L->npend; i++) store(L, L->pend[i].v, L->pend[i].r, L->pend[i].c, L->pend[i].what);
  L->npend = 0;
}
static void defer(lower *L, int v, int64_t r, int64_t c, const char *what) {
  if (L->npend == 4) flush(L);
  L->pend[L->npend].v = v;
  L->pend[L->npend].r = r;
  L->pend[L->npend].c = c;
  L->pend[L->npend].what = what;
  L->npend++;
}
static void lw_vpu(lower *L, tpu_vpu_op fn, int x, int y, int z, int o0, int o1, int o2, const tpu_vpu_params *prm) {
  tpu_sim_op op = { .kind = TPU_SIM_VPU, .vpu_op = fn, .in = { x, y, z }, .out = { o0, o1, o2 }, .params = prm };
  add(L, &op, tpu_vpu_op_name(fn));
}

/* {==================================================================
** GEMM: C[M x N] = op(A) . op(B), operands and result in HBM, tiled.
** ================================================================== */
typedef struct gemm {
  const char *what;            /* op name: "matmul", "dW", "dX" */
  int64_t M, N, K;
  bool ta, tb;                 /* A stored K x M, B stored N x K */
  bool bias;                   /* epilogue: bias_add of a 1 x N bias */
  bool has_act;                /* epilogue: an activation ... */
  tpu_vpu_op act;              /* ... this one */
  bool colsum_b;               /* also db = col_sum of B (stored K x N) */
  uint64_t useful;             /* the model's multiply-adds in it, when not M*N*K (a depthwise
                                  block: M*N*K over its channels) */
} gemm;

/* The DMA label of a GEMM's transfers (a literal: deferred stores keep it). */
static const char *dma_label(const char *what) {
  return !strcmp(what, "dW") ? "dW dma" : !strcmp(what, "dX") ? "dX dma" : "matmul dma";
}

/* A GEMM's tiles: mt x nt results over kt-deep slices, MB x NB x KB of
** them; which operands stay in VMEM for the whole GEMM. */
typedef struct tiling { int64_t mt, nt, kt, MB, NB, KB; bool cache_a, cache_b; } tiling;
static tiling tiling_of(const lower *L, int64_t M, int64_t N, int64_t K) {
  tiling t;
  t.nt = min64(N, L->S);
  t.kt = min64(K, L->S);
  t.mt = extent(M, L->Q / max64(t.nt, t.kt));
  t.kt = extent(K, L->Q / max64(t.mt, t.nt));
  t.MB = (M + t.mt - 1) / t.mt;
  t.NB = (N + t.nt - 1) / t.nt;
  t.KB = (K + t.kt - 1) / t.kt;
  t.cache_a = t.NB > 1 && M * K * 4 <= L->vmem / 8;
  t.cache_b = t.MB > 1 && K * N * 4 <= L->vmem / 8;
  return t;
}

static void run_gemm(lower *L, const gemm *g) {
  const int64_t M = g->M, N = g->N, K = g->K;
  const tiling t = tiling_of(L, M, N, K);
  const int64_t mt = t.mt, nt = t.nt, kt = t.kt, MB = t.MB, NB = t.NB, KB = t.KB;
  const bool cache_a = t.cache_a, cache_b = t.cache_b;
  const int passes = tpu_precision_passes(L->prec);
  const char *w = dma_label(g->what);
  int slot = 0, cslot = 0;
  L->macs += (g->useful ? g->useful : (uint64_t)M * (uint64_t)N * (uint64_t)K) * (uint64_t)passes;
  for (int64_t mb = 0; mb < MB && !L->st; mb++)
    for (int64_t nb = 0; nb < NB && !L->st; nb++, cslot ^= 1) {
      const int64_t mi = min64(mt, M - mb * mt), ni = min64(nt, N - nb * nt);
      const int c = vbuf(L, R_C, cslot, mi, ni);
      int db = 0;
      for (int64_t kb = 0; kb < KB && !L->st; kb++, slot ^= 1) {
        const int64_t ki = min64(kt, K - kb * kt);
        const int64_t ar = g->ta ? ki : mi, ac = g->ta ? mi : ki;
        const int64_t br = g->tb ? ni : ki, bc = g->tb ? ki : ni;
        int a, b;
        if (cache_a) {
          /* one buffer per block, loaded at its first use (nb == 0) */
          a = vbuf(L, R_CA, (int)(mb * KB + kb), ar, ac);
          if (nb == 0) load(L, R_CA, (int)(mb * KB + kb), ar, ac, w);
        } else {
          a = load(L, R_A, slot, ar, ac, w);
        }
        if (cache_b) {
          b = vbuf(L, R_CB, (int)(kb * NB + nb), br, bc);
          if (mb == 0) load(L, R_CB, (int)(kb * NB + nb), br, bc, w);
        } else {
          b = load(L, R_B, slot, br, bc, w);
        }
        if (kb == 0) flush(L);
        tpu_sim_op op = { .kind = TPU_SIM_MATMUL, .a = a, .b = b, .dst = c, .trans_a = g->ta,
                          .trans_b = g->tb, .accumulate = kb > 0, .precision = L->prec };
        add(L, &op, g->what);
        if (g->colsum_b && mb == 0) {   /* db: column sums of dY, accumulated over its row tiles */
          /* a one-row tile is its own column sum (and sim_vpu.c refuses a
          ** col_sum of one row: its check costs it at 0 cycles) */
          if (kb == 0) {
            db = vbuf(L, R_DB, (int)(nb & 1), 1, ni);
            lw_vpu(L, ki > 1 ? TPU_VPU_COL_SUM : TPU_VPU_COPY, b, 0, 0, db, 0, 0, NULL);
          } else if (ki == 1) {
            lw_vpu(L, TPU_VPU_ADD, db, b, 0, db, 0, 0, NULL);
          } else {
            int part = vbuf(L, R_PART, 0, 1, ni);
            lw_vpu(L, TPU_VPU_COL_SUM, b, 0, 0, part, 0, 0, NULL);
            lw_vpu(L, TPU_VPU_ADD, db, part, 0, db, 0, 0, NULL);
          }
        }
      }
      if (db) defer(L, db, 1, ni, "db dma");
      if (g->bias) {
        int bias = vbuf(L, R_BIAS, (int)nb, 1, ni);
        if (mb == 0) load(L, R_BIAS, (int)nb, 1, ni, "bias dma");
        lw_vpu(L, TPU_VPU_BIAS_ADD, c, bias, 0, c, 0, 0, NULL);
      }
      if (g->has_act) lw_vpu(L, g->act, c, 0, 0, c, 0, 0, NULL);
      defer(L, c, mi, ni, w);
    }
  flush(L);
}
/* }================================================================== */

/* {==================================================================
** Element-wise passes over an R x C tensor in HBM
** ================================================================== */
typedef struct ewise {
  tpu_vpu_op fn;               /* the VPU op */
  int nin;                     /* inputs read from HBM (1 or 2) */
  bool mask;                   /* second operand on chip: the dropout mask, batch_normalization's
                                  per-channel vector */
  bool yvec;                   /* ... a 1 x ci vector (bias_add's per-channel operand) */
  bool reduce;                 /* col_sum: a 1 x ci result per tile, not a tile */
  const tpu_vpu_params *prm;
} ewise;

/* A row-major walk over the tiles of an R x C tensor, 2Q values a tile:
** tile n is rows [r0, r0+ri) x columns [c0, c0+ci). Stops when L fails. */
typedef struct ew_walk { int64_t R, C, rt, ct, r0, c0, ri, ci; int n; } ew_walk;
static ew_walk ew_walk_of(const lower *L, int64_t R, int64_t C) {
  ew_walk w = { .R = R, .C = C, .n = -1 };
  w.ct = min64(C, 2 * L->Q);
  w.rt = extent(R, 2 * L->Q / w.ct);
  return w;
}
static bool ew_next(const lower *L, ew_walk *w) {
  if (w->n >= 0 && (w->c0 += w->ct) >= w->C) { w->c0 = 0; w->r0 += w->rt; }
  w->n++;
  if (L->st || w->r0 >= w->R) return false;
  w->ri = min64(w->rt, w->R - w->r0);
  w->ci = min64(w->ct, w->C - w->c0);
  return true;
}

static void run_ewise(lower *L, const ewise *e, int64_t R, int64_t C) {
  for (ew_walk w = ew_walk_of(L, R, C); ew_next(L, &w);) {
    const int slot = w.n & 1;
    const int64_t ri = w.ri, ci = w.ci;
    int x = load(L, R_X, slot, ri, ci, "dma");
    int y = e->nin > 1 ? load(L, R_Y, slot, ri, ci, "dma") : e->mask ? vbuf(L, R_MASK, 0, e->yvec ? 1 : ri, ci) : 0;
    flush(L);
    const int64_t ro = e->reduce ? 1 : ri;
    int o = vbuf(L, R_O, slot, ro, ci);
    lw_vpu(L, e->fn, x, y, 0, o, 0, 0, e->prm);
    defer(L, o, ro, ci, "dma");
  }
  flush(L);
}

/* out = fn(tap 0, tap 1, ..., tap n-1) folded left, over R x C tiles, each
** tap a view of the same shape (pool windows, col2im taps); 'scale' then
** multiplies by prm->alpha. */
static void run_fold(lower *L, tpu_vpu_op fn, int taps, int64_t R, int64_t C, const tpu_vpu_params *scale) {
  int slot = 0;
  for (ew_walk w = ew_walk_of(L, R, C); ew_next(L, &w);) {
    const int64_t ri = w.ri, ci = w.ci;
    int acc = load(L, R_O, w.n & 1, ri, ci, "dma");
    for (int j = 1; j < taps; j++, slot ^= 1) {
      int x = load(L, R_X, slot, ri, ci, "dma");
      if (j == 1) flush(L);
      lw_vpu(L, fn, acc, x, 0, acc, 0, 0, NULL);
    }
    flush(L);
    if (scale) lw_vpu(L, TPU_VPU_SCALE, acc, 0, 0, acc, 0, 0, scale);
    defer(L, acc, ri, ci, "dma");
  }
  flush(L);
}

/* Pool backward: for each output tile, dY once, then per tap: maxpool a
** select against the forward input's tap (relu_grad's cost), avgpool the
** scaled dY; each result goes to its tap of dX. */
static void run_pool_bwd(lower *L, bool maxpool, int taps, int64_t R, int64_t C, const tpu_vpu_params *scale) {
  int slot = 0;
  for (ew_walk w = ew_walk_of(L, R, C); ew_next(L, &w);) {
    const int64_t ri = w.ri, ci = w.ci;
    int dy = load(L, R_Y, w.n & 1, ri, ci, "dma");
    flush(L);
    if (!maxpool) {
      lw_vpu(L, TPU_VPU_SCALE, dy, 0, 0, dy, 0, 0, scale);
      for (int j = 0; j < taps; j++) store(L, dy, ri, ci, "dma");
      continue;
    }
    for (int j = 0; j < taps; j++, slot ^= 1) {
      int x = load(L, R_X, slot, ri, ci, "dma");
      flush(L);
      int o = vbuf(L, R_O, slot, ri, ci);
      lw_vpu(L, TPU_VPU_RELU_GRAD, x, dy, 0, o, 0, 0, NULL);
      defer(L, o, ri, ci, "dma");
    }
  }
  flush(L);
}
/* }================================================================== */

/* {==================================================================
** The plan's steps, lowered one by one
** ================================================================== */
/* Whole tensors, for the HBM capacity check (the shard, activations,
** parameters, gradients, optimizer state), then the infeed's dequeue. */
static void lower_infeed(lower *L, const fe_plan *p) {
  const tpu_fe_model *m = p->model;
  const int n = m->nlayers, rows = p->rows, chip_cols = L->chip->mxu.cols;
  int x0 = tensor(L, "x", 0, rows, (int64_t)tpu_fe_shape_size(m->input) + 1);   /* + the label */
  for (int i = 0; i < n; i++) {
    const tpu_fe_layer *l = &m->layers[i];
    tensor(L, "x", i + 1, rows, (int64_t)tpu_fe_shape_size(l->out));
    if (l->kind != TPU_FE_DEPTHWISE && l->kind != TPU_FE_SEPARABLE) continue;
    const int64_t cm = (int64_t)l->in.c * l->depth_multiplier;   /* and its block-diagonal weights */
    const fe_gemm_step g = { .M = 1, .N = (int)cm, .K = l->kh * l->kw * l->in.c, .dw = l->in.c };
    int64_t M, N, K, wx = 0;
    for (int b = 0; fe_gemm_dw_block(&g, chip_cols, b, &M, &N, &K); b++) wx += N * K;
    tensor(L, "wx", i + 1, wx, 1);
    if (l->kind == TPU_FE_SEPARABLE) tensor(L, "mid", i + 1, rows, (int64_t)l->out.h * l->out.w * cm);
    if (l->kind == TPU_FE_SEPARABLE && p->train) tensor(L, "gmid", i + 1, rows, (int64_t)l->out.h * l->out.w * cm);
  }
  L->grads = 0;
  if (p->train) {
    for (int i = 0; i < n; i++) tensor(L, "g", i + 1, rows, (int64_t)tpu_fe_shape_size(m->layers[i].out));
    tensor(L, "params", 0, (int64_t)m->nparams, 1);
    L->grads = tensor(L, "grads", 0, (int64_t)m->nparams, 1);
    int state = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
    for (int k = 0; k < state; k++) tensor(L, "opt_state", k, (int64_t)m->nparams, 1);
  } else {
    tensor(L, "params", 0, (int64_t)m->nparams, 1);
  }
  /* a later step asks for its batch when the step before has ended (its
  ** last op: the optimizer's last store), as a training loop does */
  tpu_sim_op inf = { .kind = TPU_SIM_INFEED, .dst = x0, .after = L->step > 0 ? L->last_op + 1 : 0 };
  int ii = add(L, &inf, "dequeue");
  L->after = ii + 1;
}

/* A GEMM step with its fused followers as the epilogue: bias_add and an
** activation on the result tile (forward), db = col_sum of dY (dW). A
** depthwise GEMM runs as its blocks of the MXU's width (fe_gemm_dw_block),
** the only products with a non-zero weight; each counts its channels'
** multiply-adds as useful, not the zeros the array multiplies. */
static gemm gemm_of(const fe_plan *p, int k) {
  const fe_gemm_step *s = &p->steps[k].gemm;
  gemm g = { .what = s->what, .M = s->M, .N = s->N, .K = s->K, .ta = s->ta, .tb = s->tb };
  for (int j = k + 1; j < p->nsteps && p->steps[j].fused && p->steps[j].kind == FE_STEP_VPU; j++) {
    const tpu_vpu_op op = p->steps[j].vpu.op;
    if (op == TPU_VPU_BIAS_ADD) g.bias = true;
    else if (op == TPU_VPU_COL_SUM) g.colsum_b = true;
    else g.act = op, g.has_act = true;
  }
  return g;
}
/* Block b of depthwise GEMM step s as g's shape; 0 past the last block. */
static int64_t dw_block(const lower *L, const fe_gemm_step *s, int b, gemm *g) {
  int64_t M, N, K, kg = fe_gemm_dw_block(s, L->chip->mxu.cols, b, &M, &N, &K);
  if (!kg) return 0;
  g->M = M;
  g->N = N;
  g->K = K;
  g->useful = (uint64_t)M * (uint64_t)N * (uint64_t)K / (uint64_t)kg;
  return kg;
}
static void lower_gemm(lower *L, const fe_plan *p, int k) {
  gemm g = gemm_of(p, k);
  const fe_gemm_step *s = &p->steps[k].gemm;
  if (!s->dw) {
    run_gemm(L, &g);
    return;
  }
  for (int b = 0; !L->st && dw_block(L, s, b, &g); b++) run_gemm(L, &g);
}

/* DW_EXPAND / DW_COMPACT: the kernel to the block-diagonal weights of the
** depthwise GEMM's blocks, or their diagonal back out of its gradient: a
** select against an on-chip mask (XLA's filter expansion), one element-wise
** pass over each block's T*kg x kg*dm weights through VMEM. */
static fe_gemm_step dw_forward_of(const fe_step *s) {
  return (fe_gemm_step){ .M = 1, .N = (int)s->cols, .K = (int)s->rows, .dw = s->win.c };   /* a forward's */
}
static void lower_dw_expand(lower *L, const fe_step *s) {
  const fe_gemm_step g = dw_forward_of(s);
  int64_t M, N, K;
  for (int b = 0; !L->st && fe_gemm_dw_block(&g, L->chip->mxu.cols, b, &M, &N, &K); b++)
    run_ewise(L, &(ewise){ .fn = TPU_VPU_MUL, .nin = 1, .mask = true }, K, N);
}

/* softmax_xent (loss, and the gradient in training) and accuracy, per row
** tile of the logits. */
static void lower_loss(lower *L, const fe_plan *p, const fe_vpu_step *v) {
  const int64_t rows = v->rows, ncls = v->cols;
  const int n = p->model->nlayers;
  if (ncls > L->Q) {
    char msg[256];
    snprintf(msg, sizeof msg, "layer %d (%s): a row of %lld logits does not fit one VMEM tile of %lld values "
             "(%lld bytes of VMEM)", n - 1, tpu_fe_layer_kind_name(p->model->layers[n - 1].kind), (long long)ncls,
             (long long)L->Q, (long long)L->vmem);
    lw_fail(L, TPU_ERR_CONFIG, msg);
    return;
  }
  tpu_vpu_params xent = tpu_vpu_params_default();
  xent.alpha = v->alpha;
  const int64_t rt = extent(rows, L->Q / ncls);
  int slot = 0;
  for (int64_t r0 = 0; r0 < rows && !L->st; r0 += rt, slot ^= 1) {
    const int64_t ri = min64(rt, rows - r0);
    int x = load(L, R_X, slot, ri, ncls, "dma");
    int lab = load(L, R_LAB, slot, ri, 1, "labels dma");
    flush(L);
    int loss = vbuf(L, R_LOSS, slot, ri, 1), acc = vbuf(L, R_ACC, slot, 1, 1);
    int grad = p->train ? vbuf(L, R_O, slot, ri, ncls) : 0;
    lw_vpu(L, TPU_VPU_SOFTMAX_XENT, x, lab, 0, loss, grad, 0, &xent);
    lw_vpu(L, TPU_VPU_ACCURACY, x, lab, 0, acc, 0, 0, NULL);
    if (p->train) defer(L, grad, ri, ncls, "dma");
    defer(L, loss, ri, 1, "loss dma");
    defer(L, acc, 1, 1, "accuracy dma");
  }
  flush(L);
}

/* One all-reduce of every gradient, once the last one is in HBM. */
static void lower_allreduce(lower *L) {
  tpu_sim_op ar = { .kind = TPU_SIM_COLLECTIVE, .coll = TPU_SIM_ALL_REDUCE, .src = L->grads, .dst = L->grads,
                    .after = L->last_dma + 1 };
  int ai = add(L, &ar, "gradients");
  L->after = ai + 1;
}

/* The optimizer over the flat parameter vector, 'lanes' wide. */
static void lower_update(lower *L, const tpu_fe_model *m) {
  const int64_t Qo = 3 * L->Q;   /* 8 slots, 2 shapes each (see the top of this file) */
  const int64_t ct = min64(L->chip->vpu.lanes, Qo);
  const int64_t totrows = ((int64_t)m->nparams + ct - 1) / ct, rt = extent(totrows, Qo / ct);
  const int state = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
  const tpu_vpu_op fn = m->opt.kind == TPU_FE_ADAM ? TPU_VPU_ADAM : m->opt.kind == TPU_FE_MOMENTUM ? TPU_VPU_MOMENTUM
                                                                                       : TPU_VPU_SGD;
  tpu_vpu_params op = tpu_vpu_params_default();
  op.lr = (float)m->opt.lr;
  op.momentum = (float)m->opt.momentum;
  op.beta1 = (float)m->opt.beta1;
  op.beta2 = (float)m->opt.beta2;
  op.eps = (float)m->opt.eps;
  op.step = 1;
  int slot = 0;
  for (int64_t r0 = 0; r0 < totrows && !L->st; r0 += rt, slot ^= 1) {
    const int64_t ri = min64(rt, totrows - r0);
    int pp = load(L, R_P, slot, ri, ct, "params dma");
    int gg = load(L, R_G, slot, ri, ct, "grads dma");
    int mm = state >= 1 ? load(L, R_M, slot, ri, ct, "state dma") : 0;
    int vv = state >= 2 ? load(L, R_V, slot, ri, ct, "state dma") : 0;
    flush(L);
    lw_vpu(L, fn, gg, 0, 0, pp, mm, vv, &op);
    defer(L, pp, ri, ct, "params dma");
    if (mm) defer(L, mm, ri, ct, "state dma");
    if (vv) defer(L, vv, ri, ct, "state dma");
  }
  flush(L);
}

/* Pools: P*P-1 'max' (avgpool: 'add', then 'scale') forward; backward, a
** select per tap (maxpool) or the scaled dY to every tap (avgpool). */
static void lower_pool(lower *L, const fe_step *s) {
  const int taps = s->win.kh * s->win.kw;
  const bool max = s->pool == TPU_FE_MAXPOOL;
  tpu_vpu_params sc = tpu_vpu_params_default();
  sc.alpha = (float)(1.0 / taps);
  if (s->kind == FE_STEP_POOL) run_fold(L, max ? TPU_VPU_MAX : TPU_VPU_ADD, taps, s->rows, s->cols, max ? NULL : &sc);
  else run_pool_bwd(L, max, taps, s->rows, s->cols, &sc);
}

/* batch_normalization, unfused: each VPU op one pass over the R x C tiles
** (C: over the 1 x C per-channel vectors) through VMEM. The per-channel
** operand is on chip (bias_add's a 1 x ci vector, mul's broadcast to the
** tile); col_sum writes one 1 x ci row per tile. */
enum { BN_C = 1, BN_ONCHIP = 2, BN_NIN2 = 4, BN_REDUCE = 8, BN_DX = 16, BN_VEC = 32 | BN_ONCHIP };
typedef struct bn_pass { tpu_vpu_op fn; int flags; } bn_pass;   /* a table ends with END */
#define END TPU_VPU_OP_COUNT
static const bn_pass BN_TRAIN[] = {   /* mean, x - mean, its square, variance, 1/sqrt(var+eps), scale, shift */
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_BIAS_ADD, BN_VEC }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_COL_SUM, BN_REDUCE },
  { TPU_VPU_RSQRT, BN_C }, { TPU_VPU_MUL, BN_C | BN_ONCHIP }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC }, { END, 0 } };
static const bn_pass BN_INFER[] = {   /* gamma/sqrt(moving var+eps), the shift, then scale and shift */
  { TPU_VPU_RSQRT, BN_C }, { TPU_VPU_MUL, BN_C | BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_C | BN_VEC },
  { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC }, { END, 0 } };
static const bn_pass BN_BWD[] = {     /* dbeta, xhat, dY.xhat, dgamma, then dX */
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_BIAS_ADD, BN_VEC }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_MUL, BN_NIN2 },
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP }, { TPU_VPU_SUB, BN_DX | BN_NIN2 },
  { TPU_VPU_BIAS_ADD, BN_DX | BN_VEC }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP }, { END, 0 } };
static const bn_pass BN_MOVE[] = {    /* moving * momentum + batch * (1 - momentum) */
  { TPU_VPU_SCALE, 0 }, { TPU_VPU_SCALE, 0 }, { TPU_VPU_ADD, BN_NIN2 }, { END, 0 } };

static void lower_bn(lower *L, const fe_plan *p, const fe_step *s) {
  const bn_pass *t = s->kind == FE_STEP_BN_MOVING ? BN_MOVE : s->kind == FE_STEP_BN_BWD ? BN_BWD
                   : p->train ? BN_TRAIN : BN_INFER;
  const bool dx = s->out.kind != FE_T_NONE;
  for (; t->fn != END; t++)
    if (dx || !(t->flags & BN_DX))
      run_ewise(L, &(ewise){ .fn = t->fn, .nin = t->flags & BN_NIN2 ? 2 : 1, .mask = t->flags & BN_ONCHIP,
                             .yvec = (t->flags & BN_VEC) == BN_VEC, .reduce = t->flags & BN_REDUCE }, t->flags & BN_C ? 1 : s->rows, s->cols);
}

/* Starts a section where a step begins a new part of the program: a layer
** of a phase (fused steps stay in their GEMM's or the loss's), col2im, or a
** phase without layers. The labels name the trace's intervals. */
static void step_section(lower *L, const fe_plan *p, const fe_step *s, const fe_step *prev) {
  if (s->fused || (prev && prev->phase == s->phase && prev->layer == s->layer && s->kind != FE_STEP_COL2IM)) return;
  static const char *const LABEL[] = { "infeed", "fwd", "softmax_xent", "bwd", "all_reduce", "optimizer" };
  if (s->layer < 0) { section(L, LABEL[s->phase], -1, NULL); return; }
  char kind[48];   /* "conv2d", or "conv2d col2im" (depthwise_conv2d, separable_conv2d likewise) */
  snprintf(kind, sizeof kind, "%s%s", tpu_fe_layer_kind_name(p->model->layers[s->layer].kind),
           s->kind == FE_STEP_COL2IM ? " col2im" : "");
  section(L, LABEL[s->phase], s->layer, kind);
}

/* Step k of the plan into engine ops. Views, im2col (the GEMM's DMAs
** gather the receptive fields) and the dropout mask cost nothing here. */
static void lower_step(lower *L, const fe_plan *p, int k) {
  const fe_step *s = &p->steps[k];
  step_section(L, p, s, k > 0 ? &p->steps[k - 1] : NULL);
  switch (s->kind) {
  case FE_STEP_INFEED: lower_infeed(L, p); break;
  case FE_STEP_GEMM: lower_gemm(L, p, k); break;
  case FE_STEP_VPU:
    if (s->vpu.op == TPU_VPU_SOFTMAX_XENT) lower_loss(L, p, &s->vpu);
    else if (!s->fused)
      run_ewise(L, &(ewise){ .fn = s->vpu.op, .nin = s->vpu.y.kind && s->vpu.y.kind != FE_T_MASK ? 2 : 1,
                             .mask = s->vpu.y.kind == FE_T_MASK }, s->vpu.rows, s->vpu.cols);
    break;
  case FE_STEP_POOL: case FE_STEP_POOL_BWD: lower_pool(L, s); break;
  case FE_STEP_COL2IM:   /* dcols summed back into dX by KH*KW tap-wise adds */
    run_fold(L, TPU_VPU_ADD, s->win.kh * s->win.kw, s->rows, s->cols, NULL);
    break;
  case FE_STEP_CONCAT: case FE_STEP_SPLIT:   /* one input's channels, copied through VMEM */
  case FE_STEP_PAD: case FE_STEP_CROP:       /* the padded (cropped) tensor, written whole */
    run_ewise(L, &(ewise){ .fn = TPU_VPU_COPY, .nin = 1 }, s->rows, s->cols);
    break;
  case FE_STEP_ALLREDUCE: lower_allreduce(L); break;
  case FE_STEP_UPDATE: lower_update(L, p->model); break;
  case FE_STEP_BN: case FE_STEP_BN_BWD: case FE_STEP_BN_MOVING: lower_bn(L, p, s); break;
  case FE_STEP_DW_EXPAND: case FE_STEP_DW_COMPACT: lower_dw_expand(L, s); break;
  default: break;
  }
}
/* }================================================================== */

/* {==================================================================
** The step's size from its shapes, before anything is built: the ops each
** lowering above adds (counted in closed form from its tiles, op for op;
** tests/check_train.c checks the count against the programs built) and
** the HBM its whole tensors take. Doubles: exact below 2^53, and no
** overflow for absurd shapes.
** ================================================================== */
static double ceil_div(int64_t a, int64_t b) { return (double)((a + b - 1) / b); }

/* run_ewise: per tile, the loads, the op and the store. */
static double n_ewise(const lower *L, int nin, int64_t R, int64_t C) {
  if (R < 1 || C < 1) return 0;
  const ew_walk w = ew_walk_of(L, R, C);
  return ceil_div(R, w.rt) * ceil_div(C, w.ct) * (nin > 1 ? 4 : 3);
}
/* run_fold: per tile, the first tap, (load, op) for each other tap, the scale, the store. */
static double n_fold(const lower *L, int taps, int64_t R, int64_t C, bool scale) {
  if (R < 1 || C < 1) return 0;
  const ew_walk w = ew_walk_of(L, R, C);
  return ceil_div(R, w.rt) * ceil_div(C, w.ct) * (2.0 + 2.0 * (taps - 1) + (scale ? 1 : 0));
}
/* run_pool_bwd: per tile, dY, then (load, select, store) per tap, or a scale and a store per tap. */
static double n_pool_bwd(const lower *L, bool maxpool, int taps, int64_t R, int64_t C) {
  if (R < 1 || C < 1) return 0;
  const ew_walk w = ew_walk_of(L, R, C);
  return ceil_div(R, w.rt) * ceil_div(C, w.ct) * (maxpool ? 1.0 + 3.0 * taps : 2.0 + taps);
}
/* run_gemm: the matmuls, the operand loads (once per block when cached),
** the result stores, the bias (loaded once per column block), the
** activation, and db: per column block a col_sum (or copy), then per
** further k block col_sum and add (a one-row slice: one add), and its store. */
static double n_gemm(const lower *L, const gemm *g) {
  const tiling t = tiling_of(L, g->M, g->N, g->K);
  const double MB = (double)t.MB, NB = (double)t.NB, KB = (double)t.KB, tiles = MB * NB;
  double n = tiles * KB + (t.cache_a ? MB * KB : tiles * KB) + (t.cache_b ? NB * KB : tiles * KB) + tiles;
  if (g->bias) n += NB + tiles;
  if (g->has_act) n += tiles;
  if (g->colsum_b) {
    const double one_row = t.kt == 1 ? KB - 1 : t.KB > 1 && g->K - (t.KB - 1) * t.kt == 1 ? 1 : 0;
    n += NB * (2.0 + 2.0 * (KB - 1) - one_row);
  }
  return n;
}
static double n_loss(const lower *L, const fe_plan *p, const fe_vpu_step *v) {
  const int64_t rt = extent(v->rows, L->Q / v->cols);
  return ceil_div(v->rows, rt) * (p->train ? 7 : 6);
}
static double n_update(const lower *L, const tpu_fe_model *m) {
  const int64_t Qo = 3 * L->Q, ct = min64(L->chip->vpu.lanes, Qo);
  const int64_t totrows = ((int64_t)m->nparams + ct - 1) / ct;
  if (totrows < 1) return 0;
  const int state = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
  return ceil_div(totrows, extent(totrows, Qo / ct)) * (4.0 + 2.0 * state);
}
static double n_bn(const lower *L, const fe_plan *p, const fe_step *s) {
  const bn_pass *t = s->kind == FE_STEP_BN_MOVING ? BN_MOVE : s->kind == FE_STEP_BN_BWD ? BN_BWD
                   : p->train ? BN_TRAIN : BN_INFER;
  const bool dx = s->out.kind != FE_T_NONE;
  double n = 0;
  for (; t->fn != END; t++)
    if (dx || !(t->flags & BN_DX)) n += n_ewise(L, t->flags & BN_NIN2 ? 2 : 1, t->flags & BN_C ? 1 : s->rows, s->cols);
  return n;
}

/* The ops lower_step(L, p, k) adds. */
static double n_step(const lower *L, const fe_plan *p, int k) {
  const fe_step *s = &p->steps[k];
  const int taps = s->win.kh * s->win.kw;
  switch (s->kind) {
  case FE_STEP_INFEED: case FE_STEP_ALLREDUCE: return 1;
  case FE_STEP_GEMM: {
    gemm g = gemm_of(p, k);
    if (!s->gemm.dw) return n_gemm(L, &g);
    double n = 0;
    for (int b = 0; dw_block(L, &s->gemm, b, &g); b++) n += n_gemm(L, &g);
    return n;
  }
  case FE_STEP_DW_EXPAND: case FE_STEP_DW_COMPACT: {
    const fe_gemm_step g = dw_forward_of(s);
    int64_t M, N, K;
    double n = 0;
    for (int b = 0; fe_gemm_dw_block(&g, L->chip->mxu.cols, b, &M, &N, &K); b++) n += n_ewise(L, 1, K, N);
    return n;
  }
  case FE_STEP_VPU:
    if (s->vpu.op == TPU_VPU_SOFTMAX_XENT) return n_loss(L, p, &s->vpu);
    return s->fused ? 0 : n_ewise(L, s->vpu.y.kind && s->vpu.y.kind != FE_T_MASK ? 2 : 1, s->vpu.rows, s->vpu.cols);
  case FE_STEP_POOL: return n_fold(L, taps, s->rows, s->cols, s->pool != TPU_FE_MAXPOOL);
  case FE_STEP_POOL_BWD: return n_pool_bwd(L, s->pool == TPU_FE_MAXPOOL, taps, s->rows, s->cols);
  case FE_STEP_COL2IM: return n_fold(L, taps, s->rows, s->cols, false);
  case FE_STEP_CONCAT: case FE_STEP_SPLIT: case FE_STEP_PAD: case FE_STEP_CROP: return n_ewise(L, 1, s->rows, s->cols);
  case FE_STEP_UPDATE: return n_update(L, p->model);
  case FE_STEP_BN: case FE_STEP_BN_BWD: case FE_STEP_BN_MOVING: return n_bn(L, p, s);
  default: return 0;
  }
}

/* The bytes of the whole tensors lower_infeed declares on each core. */
static void n_tensors(const fe_plan *p, double *act, double *params, double *grads, double *state) {
  const tpu_fe_model *m = p->model;
  double a = (double)p->rows * ((double)tpu_fe_shape_size(m->input) + 1);
  for (int i = 0; i < m->nlayers; i++) a += (p->train ? 2.0 : 1.0) * p->rows * (double)tpu_fe_shape_size(m->layers[i].out);
  const int st = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
  *act = 4 * a;
  *params = 4.0 * (double)m->nparams;
  *grads = p->train ? *params : 0;
  *state = p->train ? st * *params : 0;
}
/* }================================================================== */

/* The tile budget of a chip (see the top of this file). */
static void budget(const tpu_chip_config *chip, int64_t *vmem, int64_t *Q, int64_t *S) {
  *vmem = chip->vmem_capacity_kib * 1024;
  *Q = *vmem / 256;
  int64_t s = 1;
  while ((2 * s) * (2 * s) <= *Q) s *= 2;
  *S = s;
}

/* The step's size from its shapes (the ops, the HBM tensors), before
** anything is built; TPU_ERR_RANGE with the figures and the limit when the
** engine would refuse it (its op limit, a chip's HBM). */
static void size_of(const lower *L, const fe_plan *plan, tpu_fe_step_size *out) {
  double ops = 0, act, par, gr, stt;
  for (int k = 0; k < plan->nsteps; k++) ops += n_step(L, plan, k);
  n_tensors(plan, &act, &par, &gr, &stt);
  *out = (tpu_fe_step_size){ .ops_per_core = ops, .hbm_tensor_bytes_per_core = act + par + gr + stt,
                             .activation_bytes = act, .parameter_bytes = par, .gradient_bytes = gr,
                             .optimizer_state_bytes = stt };
}

static tpu_status check_size(const lower *L, const fe_plan *plan, int nsteps, const tpu_fe_model *m,
                             const tpu_chip_config *chip, char *err, size_t errcap) {
  tpu_fe_step_size z;
  size_of(L, plan, &z);
  const double ops = z.ops_per_core * chip->cores * nsteps;
  if (ops > (double)TPU_SIM_MAX_OPS) {
    snprintf(err, errcap, "%s on %s at %d samples per core: the step lowers to %.0f engine ops per core, %.0f on "
             "the %d cores, more than the engine's limit of %lld ops in a program (the tiles are VMEM-sized: "
             "%lld KiB of VMEM gives tiles of %lld values); use a smaller batch or a chip with more VMEM",
             m->name, chip->name, plan->rows, z.ops_per_core, ops, chip->cores, (long long)TPU_SIM_MAX_OPS,
             (long long)chip->vmem_capacity_kib, (long long)L->Q);
    return TPU_ERR_RANGE;
  }
  const double per_chip = z.hbm_tensor_bytes_per_core * chip->cores_per_chip;
  const double hcap = chip->hbm_capacity_gib * 1073741824.0;
  if (per_chip > hcap) {
    snprintf(err, errcap, "%s on %s at %d samples per core: the step's tensors need %.0f bytes of HBM per chip "
             "(%d cores per chip, each holding activations and their gradients %.0f, parameters %.0f, gradients "
             "%.0f, optimizer state %.0f), more than its capacity of %.0f bytes (hbm.capacity_gib %g)", m->name,
             chip->name, plan->rows, per_chip, chip->cores_per_chip, z.activation_bytes, z.parameter_bytes,
             z.gradient_bytes, z.optimizer_state_bytes, hcap, chip->hbm_capacity_gib);
    return TPU_ERR_RANGE;
  }
  return TPU_OK;
}

/* Builds the program of 'nsteps' steps into *out, step s's batch ready at
** ready[s]; core 0's per-core figures go to L. */
static tpu_status build(lower *L, const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                        bool train, int nsteps, const uint64_t *ready, tpu_sim_program **out, char *err, size_t errcap) {
  *out = NULL;
  if (!m || !chip || rows < 1 || m->nlayers < 1 || chip->cores < 1 || chip->cores > TPU_MAX_CORES) {
    snprintf(err, errcap, "the step program needs a model, a chip of 1..%d cores and rows >= 1 (got %d)",
             TPU_MAX_CORES, rows);
    return TPU_ERR_INPUT;
  }
  L->chip = chip;
  L->prec = prec;
  L->err = err;
  L->errcap = errcap;
  budget(chip, &L->vmem, &L->Q, &L->S);
  if (L->Q < 8) {
    snprintf(err, errcap, "VMEM of %lld bytes cannot hold the lowering's tiles: it needs at least %d bytes "
             "(8 values per streamed tile)", (long long)L->vmem, 8 * 256);
    return TPU_ERR_CONFIG;
  }
  fe_plan *plan = NULL;
  tpu_status st = fe_plan_create(m, rows, rows * chip->cores, prec, train, &plan);
  if (st == TPU_ERR_RANGE) {
    snprintf(err, errcap, "%s at %d samples per core: a layer's GEMM would have more than %d rows (samples x output "
             "pixels); use a smaller batch or more cores", m->name, rows, INT_MAX);
    return st;
  }
  if (!st && (st = check_size(L, plan, nsteps, m, chip, err, errcap)) != TPU_OK) { fe_plan_destroy(plan); return st; }
  if (!st) st = tpu_sim_program_create(chip->cores, &L->p);
  if (st) { fe_plan_destroy(plan); snprintf(err, errcap, "out of memory"); return st; }
  /* Every core runs the same program on its own shard: core 0's is built,
  ** and the others share it (tpu_sim_program_share: one copy in memory,
  ** each core its own copy of the infeed queue). Steps follow one another
  ** in the one program, each op tagged with its step. */
  L->core = 0;
  L->last_dma = -1;
  L->last_op = -1;
  tpu_fe_step_size z;
  size_of(L, plan, &z);
  if ((st = tpu_sim_program_reserve(L->p, 0, (int64_t)z.ops_per_core * nsteps)))
    lw_fail(L, st, tpu_sim_program_error(L->p));
  for (L->step = 0; L->step < nsteps && !L->st; L->step++)
    for (int k = 0; k < plan->nsteps && !L->st; k++) lower_step(L, plan, k);
  if (!L->st && (st = tpu_sim_infeed(L->p, 0, nsteps, ready))) lw_fail(L, st, tpu_sim_program_error(L->p));
  for (int c = 1; c < chip->cores && !L->st; c++)
    if ((st = tpu_sim_program_share(L->p, 0, c))) lw_fail(L, st, tpu_sim_program_error(L->p));
  fe_plan_destroy(plan);
  tpu_free(L->vmem_bufs.v);
  tpu_free(L->vmem_bufs.idx);
  tpu_free(L->hbm_views.v);
  tpu_free(L->hbm_views.idx);
  L->vmem_bufs = L->hbm_views = (bufcache){ 0 };
  if (L->st) {
    tpu_sim_program_destroy(L->p);
    L->p = NULL;
    return L->st;
  }
  *out = L->p;
  return TPU_OK;
}

tpu_status tpu_fe_step_size_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                               bool train, tpu_fe_step_size *out) {
  memset(out, 0, sizeof *out);
  if (!m || !chip || rows < 1 || m->nlayers < 1) return TPU_ERR_INPUT;
  lower L = { .chip = chip, .prec = prec };
  budget(chip, &L.vmem, &L.Q, &L.S);
  if (L.Q < 8) return TPU_ERR_CONFIG;
  fe_plan *plan = NULL;
  tpu_status st = fe_plan_create(m, rows, rows * chip->cores, prec, train, &plan);
  if (st) return st;
  size_of(&L, plan, out);
  fe_plan_destroy(plan);
  return TPU_OK;
}

tpu_status tpu_fe_step_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                           int rows, bool train, uint64_t infeed_ready_cycles,
                           tpu_sim_program **out, char *err, size_t errcap) {
  lower L = { 0 };
  return build(&L, m, chip, prec, rows, train, 1, &infeed_ready_cycles, out, err, errcap);
}

tpu_status tpu_fe_steps_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                int steps, const uint64_t *ready_cycles, tpu_sim_program **out, char *err,
                                size_t errcap) {
  *out = NULL;
  if (steps < 1 || steps > 1000 || !ready_cycles) {
    snprintf(err, errcap, "steps: expected 1..1000 training steps with their ready cycles, got %d", steps);
    return TPU_ERR_INPUT;
  }
  lower L = { 0 };
  return build(&L, m, chip, prec, rows, true, steps, ready_cycles, out, err, errcap);
}

/* {==================================================================
** Step timing on the engine
** ================================================================== */
/* The timing of a step from its run's figures: its cycles and each core's
** stall cycles, core[0..chip->cores) (the one place both paths below
** compute it, so that they give the same bits). */
static void fill_timing(tpu_fe_step_timing *out, const tpu_fe_model *m, const tpu_chip_config *chip, bool train,
                        uint64_t macs, uint64_t hbm_bytes, uint64_t cyc, const tpu_sim_stalls *core) {
  out->step_cycles = cyc;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) {
    uint64_t sum = 0;
    for (int c = 0; c < chip->cores; c++) sum += out->core_stall[c][k] = core[c].cycles[k];
    out->stall[k] = (double)sum / (double)chip->cores;
  }
  out->macs = macs;
  out->mxu_cycles_capacity = (uint64_t)chip->mxu.rows * (uint64_t)chip->mxu.cols * (uint64_t)chip->mxus_per_core * cyc;
  out->hbm_bytes = hbm_bytes;
  out->allreduce_bytes = train ? (uint64_t)m->nparams * 4 : 0;
}

/* Runs p at the timing level into out (and the trace); err gets the
** engine's message. 'stalls' (NULL, or TPU_MAX_CORES entries) gets each
** core's stall cycles. */
static tpu_status run_timing(tpu_sim_program *p, const tpu_fe_model *m, const tpu_chip_config *chip, bool train,
                             uint64_t macs, uint64_t hbm_bytes, int threads, tpu_fe_step_timing *out,
                             tpu_sim_stalls *stalls, const tpu_fe_step_trace *trace, char *err, size_t errcap) {
  tpu_sim_result *r = NULL;
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = threads < 1 ? 1 : threads, .trace = trace != NULL };
  tpu_status st = tpu_sim_run(chip, p, &o, &r);
  if (st) {
    snprintf(err, errcap, "%s", tpu_sim_program_error(p));
    return st;
  }
  tpu_sim_stalls s[TPU_MAX_CORES] = { { { 0 } } };
  for (int c = 0; c < chip->cores; c++) tpu_sim_result_stalls(r, c, -1, &s[c]);
  fill_timing(out, m, chip, train, macs, hbm_bytes, tpu_sim_result_cycles(r), s);
  if (stalls) memcpy(stalls, s, sizeof s);
  if (trace) tpu_sim_trace_steps_add(trace->out, r, trace->step, trace->t0_us);
  tpu_sim_result_destroy(r);
  return TPU_OK;
}

tpu_status tpu_fe_time_step(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                        int rows, bool train, uint64_t infeed_ready_cycles, int threads,
                        tpu_fe_step_timing *out, const tpu_fe_step_trace *trace,
                        char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  lower L = { 0 };
  tpu_sim_program *p = NULL;
  tpu_status st = build(&L, m, chip, prec, rows, train, 1, &infeed_ready_cycles, &p, err, errcap);
  if (!st) st = run_timing(p, m, chip, train, L.macs, L.hbm_bytes, threads, out, NULL, trace, err, errcap);
  tpu_sim_program_destroy(p);
  return st;
}

/* The step timer (fe.h): the program, and its run at wait 0. */
struct tpu_fe_step_timer {
  const tpu_fe_model *m;
  tpu_chip_config chip;
  bool train;
  int threads;
  tpu_sim_program *p;
  uint64_t macs, hbm_bytes;
  uint64_t cycles0;            /* the step at wait 0 ... */
  tpu_sim_stalls stalls0[TPU_MAX_CORES];   /* ... and each core's stall cycles */
};

tpu_status tpu_fe_step_timer_create(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                    bool train, int threads, tpu_fe_step_timer **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_fe_step_timer *t = tpu_calloc(1, sizeof *t);
  if (!t) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  lower L = { 0 };
  const uint64_t ready0 = 0;
  tpu_status st = build(&L, m, chip, prec, rows, train, 1, &ready0, &t->p, err, errcap);
  if (st) { tpu_free(t); return st; }
  *t = (tpu_fe_step_timer){ .m = m, .chip = *chip, .train = train, .threads = threads, .p = t->p,
                            .macs = L.macs, .hbm_bytes = L.hbm_bytes };
  tpu_fe_step_timing tm;
  if ((st = run_timing(t->p, m, chip, train, t->macs, t->hbm_bytes, threads, &tm, t->stalls0, NULL, err, errcap))) {
    tpu_fe_step_timer_destroy(t);
    return st;
  }
  t->cycles0 = tm.step_cycles;
  *out = t;
  return TPU_OK;
}

void tpu_fe_step_timer_destroy(tpu_fe_step_timer *t) {
  if (!t) return;
  tpu_sim_program_destroy(t->p);
  tpu_free(t);
}

tpu_status tpu_fe_step_timer_time(tpu_fe_step_timer *t, uint64_t infeed_ready_cycles, const tpu_fe_step_trace *trace,
                                  tpu_fe_step_timing *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  const int cores = t->chip.cores;
  if (trace) {   /* the events are needed: run it, the batch ready at the wait */
    for (int c = 0; c < cores; c++) {
      tpu_status st = tpu_sim_infeed(t->p, c, 1, &infeed_ready_cycles);
      if (st) { snprintf(err, errcap, "%s", tpu_sim_program_error(t->p)); return st; }
    }
    return run_timing(t->p, t->m, &t->chip, t->train, t->macs, t->hbm_bytes, t->threads, out, NULL, trace, err,
                      errcap);
  }
  /* every op follows the infeed: the step at wait 0, later by the wait,
  ** which every core spends in infeed_wait */
  const uint64_t w = infeed_ready_cycles;
  tpu_sim_stalls s[TPU_MAX_CORES];
  for (int c = 0; c < cores; c++) {
    s[c] = t->stalls0[c];
    s[c].cycles[TPU_SIM_INFEED_WAIT] += w;
  }
  fill_timing(out, t->m, &t->chip, t->train, t->macs, t->hbm_bytes, t->cycles0 + w, s);
  return TPU_OK;
}
/* }================================================================== */
