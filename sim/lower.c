/*
** lower.c -- the lowering: one core's program built from tensors in HBM
** and tiles of them streamed through VMEM, with THE one GEMM lowering
** (sim.h, "The lowering", states the tiling, the order and the two ways a
** tensor's tiles are addressed). Every builder of chip programs from
** shapes goes through here: the GEMM program (gemm.c: matmul --cores, run
** --topology, viz) and the training step (frontend/train_lower.c).
**
** Counting. A lowering made without a program runs the same code and only
** counts: ops, bytes its DMAs move, multiply-adds, and the bytes of the
** distinct tensors it declares. Its handles are then placeholders (1) and
** its op indices what they would be. One shortcut keeps the count of a
** GEMM of 2^31 rows cheap: a GEMM's block rows 1 .. MB-2 add the same ops
** and bytes (only row 0 loads cached B blocks, the bias and db's first
** sums; only the last may be partial), so row 1 is counted and its counts
** added MB-3 more times. tests/check_sim.c compares counts with programs
** built on random shapes.
**
** Not modelled here (sim.h says the rest): strided gathers (a tile is one
** transfer of its bytes), ordering between tiles of one tensor beyond
** program order.
*/
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

static const char *const ROLE[TPU_SIM_R_NROLES] = { "a", "b", "c", "ca", "cb", "bias", "db", "part", "x", "y",
                                                    "o", "mask", "lab", "loss", "acc", "p", "g", "m", "v", "st", "sq", "w" };

/* A buffer by key and shape: key is (role, slot) in VMEM, (view group, 0)
** in HBM; and its dtype. */
typedef struct cbuf { int key, slot; int64_t r, c; int h; tpu_sim_dtype dt; } cbuf;
/* The buffers made so far, and an index of them by key (open addressing:
** 1 + the position in v, 0 empty), so that finding one costs O(1) however
** many a section has (a GEMM keeps one cached block per slot). */
typedef struct bufcache { cbuf *v; int n, cap; int *idx; int idxcap; } bufcache;
/* An op name: "<section label> <what>", made once per section and 'what'. */
typedef struct opname { const char *what; char name[112]; } opname;
enum { NAMES = 16, MAX_GROUPS = 8, PEND = 4 };

typedef struct lw_tensor {
  char name[64];
  int64_t rows, cols;
  tpu_sim_dtype dt;            /* its values in HBM */
  tpu_sim_tensor_class cls;    /* what its DMAs' bytes count as */
  int group;                   /* view group, or -1: blocks */
  int whole;                   /* views: the capacity buffer (0 counting) */
  const float *init;           /* blocks: the values, or NULL */
} lw_tensor;

typedef struct pend { int v, t; int64_t r0, c0, r, c; const char *what; } pend;

struct tpu_sim_lowering {
  tpu_sim_program *p;          /* NULL: counting */
  int core;
  tpu_chip_config chip;
  int64_t vmem, Q, S;          /* VMEM bytes, values in a streamed tile, square tile edge */
  int sec;                     /* section number (VMEM names) */
  char label[64];              /* section label: "fwd 1 dense" */
  opname names[NAMES];         /* this section's op names */
  int nnames;
  bufcache vmem_bufs;          /* this section's VMEM buffers */
  bufcache hbm_views;          /* HBM tiles by group and shape */
  char groups[MAX_GROUPS][16];
  tpu_sim_dtype group_dt[MAX_GROUPS];
  int ngroups;
  lw_tensor *t;                /* tensors by handle - 1 */
  int nt, capt;
  int *tidx;                   /* index of t by name (as bufcache's) */
  int tidxcap;
  int after;                   /* 1 + op the next DMA must wait for, or 0 */
  int last_dma, last_op, step;
  tpu_sim_lower_counts n;
  pend pend[PEND];
  int npend;
  tpu_status st;
  char err[512];
  float *scratch;              /* a block's values on their way into the program */
  size_t scratch_cap;
  void (*on_matmul)(void *ud, int op, const tpu_sim_gemm_place *pl);   /* gemm.c's places */
  void *on_matmul_ud;
};

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t esize(tpu_sim_dtype dt) { return dt == TPU_SIM_BF16 ? 2 : 4; }
int64_t tpu_sim_lower_extent(int64_t n, int64_t lim) {
  int64_t e = min64(n, max64(1, lim));
  if (e < n && e > 8) e -= e % 8;
  return e;
}

static void lw_fail(tpu_sim_lowering *L, tpu_status st, const char *msg) {
  if (L->st) return;
  L->st = st;
  snprintf(L->err, sizeof L->err, "%s: %s", L->label[0] ? L->label : "lowering", msg);
}

/* The tile budget of a chip (sim.h, "Tiles"): VMEM bytes, Q, and the
** GEMM's square tile edge S. */
static void budget(const tpu_chip_config *chip, int64_t *vmem, int64_t *Q, int64_t *S) {
  *vmem = chip->vmem_capacity_kib * 1024;
  *Q = *vmem / 256;
  int64_t s = 1;
  while (2 * s <= 1024 && 48 * (2 * s) * (2 * s) <= *vmem) s *= 2;
  *S = s;
}

static tpu_sim_tiling tiling_of(int64_t vmem, int64_t S, int64_t M, int64_t N, int64_t K) {
  tpu_sim_tiling t;
  const int64_t Qg = S * S;    /* values in one GEMM tile */
  t.nt = min64(N, S);
  t.kt = min64(K, S);
  t.mt = tpu_sim_lower_extent(M, Qg / max64(t.nt, t.kt));
  t.kt = tpu_sim_lower_extent(K, Qg / max64(t.mt, t.nt));
  t.MB = (M + t.mt - 1) / t.mt;
  t.NB = (N + t.nt - 1) / t.nt;
  t.KB = (K + t.kt - 1) / t.kt;
  t.cache_a = t.NB > 1 && 4.0 * (double)M * (double)K <= (double)(vmem / 8);   /* doubles: M, K up to 2^31 */
  t.cache_b = t.MB > 1 && 4.0 * (double)K * (double)N <= (double)(vmem / 8);
  return t;
}

tpu_sim_tiling tpu_sim_gemm_tiling(const tpu_chip_config *cfg, int64_t M, int64_t N, int64_t K) {
  int64_t vmem, Q, S;
  budget(cfg, &vmem, &Q, &S);
  return tiling_of(vmem, S, M, N, K);
}

/* {==================================================================
** Life cycle
** ================================================================== */
tpu_status tpu_sim_lower_create(const tpu_chip_config *cfg, tpu_sim_program *p, int core, tpu_sim_lowering **out,
                                char *err, size_t errcap) {
  *out = NULL;
  int64_t vmem, Q, S;
  budget(cfg, &vmem, &Q, &S);
  if (Q < 8) {
    snprintf(err, errcap, "VMEM of %lld bytes cannot hold the lowering's tiles: it needs at least %d bytes "
             "(8 values per streamed tile)", (long long)vmem, 8 * 256);
    return TPU_ERR_CONFIG;
  }
  tpu_sim_lowering *L = tpu_calloc(1, sizeof *L);
  if (!L) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  L->p = p;
  L->core = core;
  L->chip = *cfg;
  L->vmem = vmem;
  L->Q = Q;
  L->S = S;
  L->last_dma = L->last_op = -1;
  *out = L;
  return TPU_OK;
}

void tpu_sim_lower_destroy(tpu_sim_lowering *L) {
  if (!L) return;
  tpu_free(L->vmem_bufs.v);
  tpu_free(L->vmem_bufs.idx);
  tpu_free(L->hbm_views.v);
  tpu_free(L->hbm_views.idx);
  tpu_free(L->t);
  tpu_free(L->tidx);
  tpu_free(L->scratch);
  tpu_free(L);
}

tpu_status tpu_sim_lower_status(const tpu_sim_lowering *L) { return L->st; }
void tpu_sim_lower_fail(tpu_sim_lowering *L, tpu_status st, const char *msg) { lw_fail(L, st, msg); }
const char *tpu_sim_lower_error(const tpu_sim_lowering *L) { return L->err; }
void tpu_sim_lower_counts_of(const tpu_sim_lowering *L, tpu_sim_lower_counts *out) { *out = L->n; }
int64_t tpu_sim_lower_tile_values(const tpu_sim_lowering *L) { return L->Q; }
void tpu_sim_lower_set_step(tpu_sim_lowering *L, int step) { L->step = step; }
int tpu_sim_lower_last_op(const tpu_sim_lowering *L) { return L->last_op; }
int tpu_sim_lower_last_dma(const tpu_sim_lowering *L) { return L->last_dma; }
void tpu_sim_lower_dma_after(tpu_sim_lowering *L, int index) { L->after = index + 1; }

void sim_lower_on_matmul(tpu_sim_lowering *L, void (*fn)(void *, int, const tpu_sim_gemm_place *), void *ud) {
  L->on_matmul = fn;
  L->on_matmul_ud = ud;
}

void tpu_sim_lower_section(tpu_sim_lowering *L, const char *label) {
  L->sec++;
  L->vmem_bufs.n = 0;
  if (L->vmem_bufs.idx) memset(L->vmem_bufs.idx, 0, (size_t)L->vmem_bufs.idxcap * sizeof *L->vmem_bufs.idx);
  L->nnames = 0;
  snprintf(L->label, sizeof L->label, "%s", label);
}
/* }================================================================== */

/* {==================================================================
** Buffers: VMEM by role, slot and shape; HBM views by group and shape
** ================================================================== */
/* Room for element n of arr (capacity *cap, doubled from 'first'): the
** array, moved or not, or NULL (and L failed) when out of memory. */
static void *grow(tpu_sim_lowering *L, void *arr, int n, int *cap, int first, size_t size) {
  if (n < *cap) return arr;
  int c = *cap ? 2 * *cap : first;
  void *p = tpu_realloc(arr, (size_t)c * size);
  if (!p) { lw_fail(L, TPU_ERR_NOMEM, "out of memory"); return NULL; }
  *cap = c;
  return p;
}

static uint32_t cbuf_hash(int key, int slot, int64_t r, int64_t c, tpu_sim_dtype dt) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull ^ (uint64_t)slot * 0xc2b2ae3d27d4eb4full ^
               (uint64_t)dt * 0x94d049bb133111ebull;
  h ^= (uint64_t)r * 0x165667b19e3779f9ull ^ (uint64_t)c * 0xd6e8feb86659fd93ull;
  return (uint32_t)(tpu_mix64(h) >> 32);
}

/* Puts entry n-1 (hash h(k)) into an open-addressing index of 1 + positions,
** grown to twice the entries (rehashing the first n-1 with hash_at); false
** when out of memory (L failed). */
static bool index_add(tpu_sim_lowering *L, int **idx, int *idxcap, int n, uint32_t (*hash_at)(const void *, int),
                      const void *arr) {
  if (2 * n > *idxcap) {
    const int cap = *idxcap ? 2 * *idxcap : 64;
    int *x = tpu_calloc((size_t)cap, sizeof *x);
    if (!x) { lw_fail(L, TPU_ERR_NOMEM, "out of memory"); return false; }
    tpu_free(*idx);
    *idx = x;
    *idxcap = cap;
    for (int k = 0; k < n - 1; k++) {
      int i = (int)(hash_at(arr, k) & (uint32_t)(cap - 1));
      while (x[i]) i = (i + 1) & (cap - 1);
      x[i] = k + 1;
    }
  }
  int i = (int)(hash_at(arr, n - 1) & (uint32_t)(*idxcap - 1));
  while ((*idx)[i]) i = (i + 1) & (*idxcap - 1);
  (*idx)[i] = n;
  return true;
}

static uint32_t cbuf_hash_at(const void *arr, int k) {
  const cbuf *v = (const cbuf *)arr + k;
  return cbuf_hash(v->key, v->slot, v->r, v->c, v->dt);
}

/* The buffer of cache bc for (key, slot) with shape r x c and dtype dt,
** added to the program at its first use: in VMEM, this section's "s3 a0
** 16x256" ("s3 a0 bf16 16x256"); in HBM, the view "<group> 16x256" shared
** by every tile of that shape. */
static int cached(tpu_sim_lowering *L, bufcache *bc, tpu_sim_space space, int key, int slot, int64_t r, int64_t c,
                  tpu_sim_dtype dt) {
  if (L->st) return 0;
  if (!L->p) return 1;
  if (bc->idxcap) {
    const int mask = bc->idxcap - 1;
    for (int i = (int)(cbuf_hash(key, slot, r, c, dt) & (uint32_t)mask); bc->idx[i]; i = (i + 1) & mask) {
      const cbuf *v = &bc->v[bc->idx[i] - 1];
      if (v->key == key && v->slot == slot && v->r == r && v->c == c && v->dt == dt) return v->h;
    }
  }
  cbuf *v = grow(L, bc->v, bc->n, &bc->cap, 32, sizeof *v);
  if (!v) return 0;
  bc->v = v;
  char name[80];
  const char *dts = dt == TPU_SIM_BF16 ? "bf16 " : "";
  if (space == TPU_SIM_VMEM)
    snprintf(name, sizeof name, "s%d %s%d %s%lldx%lld", L->sec, ROLE[key], slot, dts, (long long)r, (long long)c);
  else
    snprintf(name, sizeof name, "%s %s%lldx%lld", L->groups[key], dts, (long long)r, (long long)c);
  int h = tpu_sim_buffer(L->p, L->core, name, space, dt, r, c);
  if (!h) { lw_fail(L, TPU_ERR_NOMEM, tpu_sim_program_error(L->p)); return 0; }
  bc->v[bc->n++] = (cbuf){ key, slot, r, c, h, dt };
  return index_add(L, &bc->idx, &bc->idxcap, bc->n, cbuf_hash_at, bc->v) ? h : 0;
}

int tpu_sim_lower_vmem(tpu_sim_lowering *L, tpu_sim_lower_role role, int slot, int64_t r, int64_t c) {
  return cached(L, &L->vmem_bufs, TPU_SIM_VMEM, (int)role, slot, r, c, TPU_SIM_F32);
}
/* }================================================================== */

/* {==================================================================
** Tensors
** ================================================================== */
static uint32_t name_hash(const char *s) {   /* FNV-1a, mixed */
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return (uint32_t)(tpu_mix64(h) >> 32);
}
static uint32_t tensor_hash_at(const void *arr, int k) { return name_hash(((const lw_tensor *)arr)[k].name); }

static int group_of(tpu_sim_lowering *L, const char *group, tpu_sim_dtype dt) {
  for (int g = 0; g < L->ngroups; g++)
    if (!strcmp(L->groups[g], group) && L->group_dt[g] == dt) return g;
  if (L->ngroups == MAX_GROUPS || strlen(group) >= sizeof L->groups[0]) {
    lw_fail(L, TPU_ERR_INPUT, "too many view groups, or a name too long");
    return -1;
  }
  snprintf(L->groups[L->ngroups], sizeof L->groups[0], "%s", group);
  L->group_dt[L->ngroups] = dt;
  return L->ngroups++;
}

/* The handle of the tensor named 'name', or 0. */
static int find_tensor(const tpu_sim_lowering *L, const char *name) {
  if (!L->tidxcap) return 0;
  const int mask = L->tidxcap - 1;
  for (int i = (int)(name_hash(name) & (uint32_t)mask); L->tidx[i]; i = (i + 1) & mask)
    if (!strcmp(L->t[L->tidx[i] - 1].name, name)) return L->tidx[i];
  return 0;
}

/* A new tensor entry (its group and shape set), or 0. */
static int new_tensor(tpu_sim_lowering *L, const char *name, int group, tpu_sim_dtype dt, tpu_sim_tensor_class cls,
                      int64_t rows, int64_t cols) {
  if (strlen(name) >= sizeof L->t[0].name) { lw_fail(L, TPU_ERR_INPUT, "a tensor name too long"); return 0; }
  lw_tensor *t = grow(L, L->t, L->nt, &L->capt, 64, sizeof *t);
  if (!t) return 0;
  L->t = t;
  L->t[L->nt] = (lw_tensor){ .rows = rows, .cols = cols, .dt = dt, .cls = cls, .group = group };
  snprintf(L->t[L->nt].name, sizeof L->t[0].name, "%s", name);
  L->nt++;
  return index_add(L, &L->tidx, &L->tidxcap, L->nt, tensor_hash_at, L->t) ? L->nt : 0;
}

int tpu_sim_lower_tensor(tpu_sim_lowering *L, const char *name, const char *views, tpu_sim_tensor_class cls,
                         tpu_sim_dtype dt, int64_t rows, int64_t cols, const float *init) {
  if (L->st) return 0;
  int h = find_tensor(L, name);
  if (h) {
    const lw_tensor *t = &L->t[h - 1];
    if (t->rows != rows || t->cols != cols || t->dt != dt) {
      char msg[160];
      snprintf(msg, sizeof msg, "tensor '%s' declared again as %lld x %lld (it is %lld x %lld)", name,
               (long long)rows, (long long)cols, (long long)t->rows, (long long)t->cols);
      lw_fail(L, TPU_ERR_INPUT, msg);
      return 0;
    }
    return h;
  }
  const int g = views ? group_of(L, views, dt) : -1;
  if (L->st || !(h = new_tensor(L, name, g, dt, cls, rows, cols))) return 0;
  lw_tensor *t = &L->t[h - 1];
  t->init = views ? NULL : init;
  L->n.tensor_bytes[cls] += (double)esize(dt) * (double)rows * (double)cols;
  if (views && L->p) {
    /* a later program's step may have made it already (tpu_sim_buffer_find) */
    if (!(t->whole = tpu_sim_buffer_find(L->p, L->core, name)) &&
        !(t->whole = tpu_sim_buffer(L->p, L->core, name, TPU_SIM_HBM, dt, rows, cols)))
      lw_fail(L, TPU_ERR_NOMEM, tpu_sim_program_error(L->p));
  }
  return L->st ? 0 : h;
}

int tpu_sim_lower_views(tpu_sim_lowering *L, const char *group, tpu_sim_dtype dt, tpu_sim_tensor_class cls) {
  if (L->st) return 0;
  char name[64];
  snprintf(name, sizeof name, "<%s %d %d>", group, (int)dt, (int)cls);   /* <> never appear in a tensor's name */
  int h = find_tensor(L, name);
  if (h) return h;
  const int g = group_of(L, group, dt);
  return L->st ? 0 : new_tensor(L, name, g, dt, cls, 0, 0);
}

tpu_sim_dtype tpu_sim_lower_tensor_dtype(const tpu_sim_lowering *L, int t) {
  return t >= 1 && t <= L->nt ? L->t[t - 1].dt : TPU_SIM_F32;
}

int tpu_sim_lower_buffer(const tpu_sim_lowering *L, int t) {
  return t >= 1 && t <= L->nt ? L->t[t - 1].whole : 0;
}

/* The HBM buffer of tile (r0, c0) r x c of tensor t: its group's view of
** that shape, or its own block "NAME@r0,c0" (made at first use, with its
** values when the tensor has some). */
static int hbm_tile(tpu_sim_lowering *L, int t, int64_t r0, int64_t c0, int64_t r, int64_t c) {
  if (L->st) return 0;
  if (t < 1 || t > L->nt) { lw_fail(L, TPU_ERR_INPUT, "a tile of no tensor"); return 0; }
  const lw_tensor *T = &L->t[t - 1];
  if (T->group >= 0) return cached(L, &L->hbm_views, TPU_SIM_HBM, T->group, 0, r, c, T->dt);
  if (!L->p) return 1;
  char name[96];
  snprintf(name, sizeof name, "%s@%lld,%lld", T->name, (long long)r0, (long long)c0);
  int h = tpu_sim_buffer_find(L->p, L->core, name);
  if (h) return h;
  if (!(h = tpu_sim_buffer(L->p, L->core, name, TPU_SIM_HBM, T->dt, r, c))) {
    lw_fail(L, TPU_ERR_NOMEM, tpu_sim_program_error(L->p));
    return 0;
  }
  if (!T->init) return h;
  const size_t n = (size_t)(r * c);
  if (n > L->scratch_cap) {
    float *s = tpu_realloc(L->scratch, n * sizeof *s);
    if (!s) { lw_fail(L, TPU_ERR_NOMEM, "out of memory"); return 0; }
    L->scratch = s;
    L->scratch_cap = n;
  }
  for (int64_t i = 0; i < r; i++)
    memcpy(L->scratch + i * c, T->init + (r0 + i) * T->cols + c0, (size_t)c * sizeof *L->scratch);
  if (tpu_sim_buffer_init(L->p, L->core, h, L->scratch) != TPU_OK) {
    lw_fail(L, TPU_ERR_NOMEM, "out of memory");
    return 0;
  }
  return h;
}

/* The name sim_gemm gathers C from: tile (r0, c0) of tensor 'name'. */
void sim_lower_block_name(const char *name, int64_t r0, int64_t c0, char *buf, size_t cap) {
  snprintf(buf, cap, "%s@%lld,%lld", name, (long long)r0, (long long)c0);
}
/* }================================================================== */

/* {==================================================================
** Ops: named per section, DMAs, deferred stores, VPU ops
** ================================================================== */
int tpu_sim_lower_op(tpu_sim_lowering *L, tpu_sim_op *op, const char *what) {
  if (L->st) return -1;
  L->n.ops += 1;
  if (!L->p) {                 /* the index it would have */
    const double i = L->n.ops - 1;
    L->last_op = i < 2147483646.0 ? (int)i : 2147483646;
    return L->last_op;
  }
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

/* A DMA of tensor t's tile (its bytes counted in t's class). */
static int dma(tpu_sim_lowering *L, int src, int dst, int t, int64_t bytes, const char *what) {
  tpu_sim_op op = { .kind = TPU_SIM_DMA, .src = src, .dst = dst, .after = L->after };
  int idx = tpu_sim_lower_op(L, &op, what);
  if (idx >= 0) {
    L->after = 0;
    L->last_dma = idx;
    L->n.hbm_bytes += (double)bytes;
    L->n.class_bytes[L->t[t - 1].cls] += (double)bytes;
  }
  return idx;
}

int tpu_sim_lower_load(tpu_sim_lowering *L, int t, tpu_sim_lower_role role, int slot, int64_t r0, int64_t c0,
                       int64_t r, int64_t c, const char *what) {
  int v = tpu_sim_lower_vmem(L, role, slot, r, c), h = hbm_tile(L, t, r0, c0, r, c);
  if (!L->st) dma(L, h, v, t, r * c * esize(tpu_sim_lower_tensor_dtype(L, t)), what);
  return v;
}

void tpu_sim_lower_store(tpu_sim_lowering *L, int v, int t, int64_t r0, int64_t c0, int64_t r, int64_t c,
                         const char *what) {
  int h = hbm_tile(L, t, r0, c0, r, c);
  if (!L->st) dma(L, v, h, t, r * c * esize(tpu_sim_lower_tensor_dtype(L, t)), what);
}

void tpu_sim_lower_flush(tpu_sim_lowering *L) {
  for (int i = 0; i < L->npend; i++) {
    const pend *q = &L->pend[i];
    tpu_sim_lower_store(L, q->v, q->t, q->r0, q->c0, q->r, q->c, q->what);
  }
  L->npend = 0;
}

void tpu_sim_lower_defer(tpu_sim_lowering *L, int v, int t, int64_t r0, int64_t c0, int64_t r, int64_t c,
                         const char *what) {
  if (L->npend == PEND) tpu_sim_lower_flush(L);
  L->pend[L->npend++] = (pend){ v, t, r0, c0, r, c, what };
}

void tpu_sim_lower_vpu(tpu_sim_lowering *L, tpu_vpu_op fn, const int in[3], const int out[3],
                       const tpu_vpu_params *prm) {
  tpu_sim_op op = { .kind = TPU_SIM_VPU, .vpu_op = fn, .in = { in[0], in[1], in[2] },
                    .out = { out[0], out[1], out[2] }, .params = prm };
  tpu_sim_lower_op(L, &op, tpu_vpu_op_name(fn));
}

/* A VPU op of one input and one output (and a second input y, or 0). */
static void vpu2(tpu_sim_lowering *L, tpu_vpu_op fn, int x, int y, int o, const tpu_vpu_params *prm) {
  tpu_sim_lower_vpu(L, fn, (const int[3]){ x, y, 0 }, (const int[3]){ o, 0, 0 }, prm);
}
/* }================================================================== */

/* {==================================================================
** The one GEMM lowering
** ================================================================== */
/* The DMA label of a GEMM's transfers (a literal: deferred stores keep it). */
static const char *dma_label(const char *what) {
  return !strcmp(what, "dW") ? "dW dma" : !strcmp(what, "dX") ? "dX dma" : "matmul dma";
}

typedef struct gemm_walk {     /* the state one block row hands the next */
  const tpu_sim_lower_gemm *g;
  tpu_sim_tiling t;
  const char *w;               /* the DMA label */
  int slot, cslot;
  int wdma;                    /* implicit A: the window DMA the next matmul waits for, or -1 */
  int wlast[2];                /* ... and the last matmul that read each window slot, or -1 */
} gemm_walk;

/* db: the column sums of B's tile (ki x ni), accumulated over the k tiles
** of block column nb in row 0; a one-row tile is its own column sum (and
** sim_vpu.c refuses a col_sum of one row: its check costs it at 0 cycles). */
static int colsum(tpu_sim_lowering *L, int b, int db, int64_t kb, int64_t ki, int64_t nb, int64_t ni) {
  if (kb == 0) {
    db = tpu_sim_lower_vmem(L, TPU_SIM_R_DB, (int)(nb & 1), 1, ni);
    vpu2(L, ki > 1 ? TPU_VPU_COL_SUM : TPU_VPU_COPY, b, 0, db, NULL);
  } else if (ki == 1) {
    vpu2(L, TPU_VPU_ADD, db, b, db, NULL);
  } else {
    int part = tpu_sim_lower_vmem(L, TPU_SIM_R_PART, 0, 1, ni);
    vpu2(L, TPU_VPU_COL_SUM, b, 0, part, NULL);
    vpu2(L, TPU_VPU_ADD, db, part, db, NULL);
  }
  return db;
}

/* An implicit A tile (sr x sc, VMEM buffer (role, slot)): its share of
** the input's window lands in window slot gw->slot once the matmul that
** last read that slot has ended; the tile itself is formed on chip (the
** MXU's operand feed reads the window), so the matmul waits for the DMA. */
static int window(tpu_sim_lowering *L, gemm_walk *gw, int tensor, tpu_sim_lower_role role, int slot, int64_t sr,
                  int64_t sc) {
  const double want = (double)sr * (double)sc * gw->g->a_share;
  const int64_t v = max64(1, (int64_t)want + ((double)(int64_t)want < want));
  if (L->st) return 0;
  if (tensor < 1 || tensor > L->nt || L->t[tensor - 1].group < 0) {
    lw_fail(L, TPU_ERR_INPUT, "an implicit operand must be a view tensor");
    return 0;
  }
  const int w = tpu_sim_lower_vmem(L, TPU_SIM_R_W, gw->slot, 1, v), h = hbm_tile(L, tensor, 0, 0, 1, v);
  if (!L->after && gw->wlast[gw->slot] >= 0) L->after = gw->wlast[gw->slot] + 1;
  if (!L->st) gw->wdma = dma(L, h, w, tensor, v * esize(L->t[tensor - 1].dt), gw->w);
  return tpu_sim_lower_vmem(L, role, slot, sr, sc);
}

/* The a (or b) tile of k slice kb for result tile (mb, nb): the cached
** block (loaded at its first use) or a streamed tile. */
static int operand(tpu_sim_lowering *L, gemm_walk *gw, bool is_a, int64_t mb, int64_t nb, int64_t kb) {
  const tpu_sim_lower_gemm *g = gw->g;
  const tpu_sim_tiling *t = &gw->t;
  const int64_t mi = min64(t->mt, g->M - mb * t->mt), ni = min64(t->nt, g->N - nb * t->nt),
                ki = min64(t->kt, g->K - kb * t->kt);
  const bool tr = is_a ? g->ta : g->tb, cache = is_a ? t->cache_a : t->cache_b;
  /* A's tile is mi x ki at (mb*mt, kb*kt), stored transposed when ta; B's ki x ni at (kb*kt, nb*nt) */
  const int64_t rows = is_a ? mi : ki, cols = is_a ? ki : ni, r0 = is_a ? mb * t->mt : kb * t->kt,
                c0 = is_a ? kb * t->kt : nb * t->nt;
  const int64_t sr = tr ? cols : rows, sc = tr ? rows : cols, s0 = tr ? c0 : r0, s1 = tr ? r0 : c0;
  const int tensor = is_a ? g->a : g->b;
  if (is_a && g->a_share > 0 && (!cache || nb == 0)) return window(L, gw, tensor, cache ? TPU_SIM_R_CA : TPU_SIM_R_A,
                                                                  cache ? (int)(mb * t->KB + kb) : gw->slot, sr, sc);
  if (!cache) return tpu_sim_lower_load(L, tensor, is_a ? TPU_SIM_R_A : TPU_SIM_R_B, gw->slot, s0, s1, sr, sc, gw->w);
  const int slot = (int)(is_a ? mb * t->KB + kb : kb * t->NB + nb);
  const tpu_sim_lower_role role = is_a ? TPU_SIM_R_CA : TPU_SIM_R_CB;
  if (is_a ? nb == 0 : mb == 0) return tpu_sim_lower_load(L, tensor, role, slot, s0, s1, sr, sc, gw->w);
  return tpu_sim_lower_vmem(L, role, slot, sr, sc);
}

/* A batch norm's statistics of result tile c (mi x ni) in the epilogue:
** its column sums and those of its square, added into block column nb's
** two 1 x ni rows, which go to rows 0 and 1 of g->stats after the last
** block row (a one-row tile is its own column sum). */
static void stats(tpu_sim_lowering *L, const gemm_walk *gw, int c, int64_t mb, int64_t nb, int64_t mi, int64_t ni) {
  const tpu_vpu_op sum = mi > 1 ? TPU_VPU_COL_SUM : TPU_VPU_COPY;
  const int s0 = tpu_sim_lower_vmem(L, TPU_SIM_R_ST, (int)(2 * nb), 1, ni),
            s1 = tpu_sim_lower_vmem(L, TPU_SIM_R_ST, (int)(2 * nb + 1), 1, ni),
            sq = tpu_sim_lower_vmem(L, TPU_SIM_R_SQ, 1, mi, ni);
  vpu2(L, TPU_VPU_MUL, c, c, sq, NULL);
  if (mb == 0) {
    vpu2(L, sum, c, 0, s0, NULL);
    vpu2(L, sum, sq, 0, s1, NULL);
  } else {
    const int part = tpu_sim_lower_vmem(L, TPU_SIM_R_PART, 1, 1, ni);
    vpu2(L, sum, c, 0, part, NULL);
    vpu2(L, TPU_VPU_ADD, s0, part, s0, NULL);
    vpu2(L, sum, sq, 0, part, NULL);
    vpu2(L, TPU_VPU_ADD, s1, part, s1, NULL);
  }
  if (mb < gw->t.MB - 1) return;
  tpu_sim_lower_defer(L, s0, gw->g->stats, 0, nb * gw->t.nt, 1, ni, "stats dma");
  tpu_sim_lower_defer(L, s1, gw->g->stats, 1, nb * gw->t.nt, 1, ni, "stats dma");
}

/* Result tile (mb, nb): its k slices, its epilogue, its deferred store. */
static void gemm_tile(tpu_sim_lowering *L, gemm_walk *gw, int64_t mb, int64_t nb) {
  const tpu_sim_lower_gemm *g = gw->g;
  const tpu_sim_tiling *t = &gw->t;
  const int64_t mi = min64(t->mt, g->M - mb * t->mt), ni = min64(t->nt, g->N - nb * t->nt);
  const int c = tpu_sim_lower_vmem(L, TPU_SIM_R_C, gw->cslot, mi, ni);
  int db = 0;
  for (int64_t kb = 0; kb < t->KB && !L->st; kb++, gw->slot ^= 1) {
    const int64_t ki = min64(t->kt, g->K - kb * t->kt);
    const int a = operand(L, gw, true, mb, nb, kb), b = operand(L, gw, false, mb, nb, kb);
    if (kb == 0) tpu_sim_lower_flush(L);
    tpu_sim_op op = { .kind = TPU_SIM_MATMUL, .a = a, .b = b, .dst = c, .trans_a = g->ta, .trans_b = g->tb,
                      .accumulate = kb > 0, .precision = g->prec, .after = gw->wdma + 1 };
    const int idx = tpu_sim_lower_op(L, &op, g->what);
    if (gw->wdma >= 0) gw->wlast[gw->slot] = idx;
    gw->wdma = -1;
    if (L->on_matmul && idx >= 0)
      L->on_matmul(L->on_matmul_ud, idx, &(tpu_sim_gemm_place){ idx, mb * t->mt, nb * t->nt, kb * t->kt, mi, ni,
                                                                 ki });
    if (g->db && mb == 0) db = colsum(L, b, db, kb, ki, nb, ni);
  }
  if (db) tpu_sim_lower_defer(L, db, g->db, 0, nb * t->nt, 1, ni, "db dma");
  if (g->bias) {
    const int bias = tpu_sim_lower_vmem(L, TPU_SIM_R_BIAS, (int)nb, 1, ni);
    if (mb == 0) tpu_sim_lower_load(L, g->bias, TPU_SIM_R_BIAS, (int)nb, 0, nb * t->nt, 1, ni, "bias dma");
    vpu2(L, TPU_VPU_BIAS_ADD, c, bias, c, NULL);
  }
  if (g->has_act) vpu2(L, g->act, c, 0, c, NULL);
  if (g->stats) stats(L, gw, c, mb, nb, mi, ni);
  if (!g->c_window) {
    tpu_sim_lower_defer(L, c, g->c, mb * t->mt, nb * t->nt, mi, ni, gw->w);
    return;
  }
  /* col2im in VMEM: the tile added into its block row's window, which is
  ** stored once after the row's last tile (its values: the row's share) */
  const int acc = tpu_sim_lower_vmem(L, TPU_SIM_R_SQ, 0, mi, ni);
  vpu2(L, TPU_VPU_ADD, acc, c, acc, NULL);
  if (nb < t->NB - 1) return;
  const double want = (double)g->c_window * (double)mi / (double)t->mt;
  const int64_t v = max64(1, (int64_t)want + ((double)(int64_t)want < want));
  const int win = tpu_sim_lower_vmem(L, TPU_SIM_R_W, 2 + (int)(mb & 1), 1, v);
  tpu_sim_lower_dma_after(L, L->last_op);
  tpu_sim_lower_store(L, win, g->c, 0, 0, 1, v, gw->w);
}

static void gemm_row(tpu_sim_lowering *L, gemm_walk *gw, int64_t mb) {
  for (int64_t nb = 0; nb < gw->t.NB && !L->st; nb++, gw->cslot ^= 1) gemm_tile(L, gw, mb, nb);
}

void tpu_sim_lower_gemm_add(tpu_sim_lowering *L, const tpu_sim_lower_gemm *g) {
  if (L->st) return;
  if (g->db && g->tb) {
    lw_fail(L, TPU_ERR_INPUT, "db: the column sums of B need B stored K x N (not transposed)");
    return;
  }
  gemm_walk gw = { .g = g, .t = g->tiling ? *g->tiling : tiling_of(L->vmem, L->S, g->M, g->N, g->K),
                   .w = dma_label(g->what), .wdma = -1, .wlast = { -1, -1 } };
  /* a given tiling (a part of a larger GEMM): its tiles over this part's shape */
  gw.t.MB = (g->M + gw.t.mt - 1) / gw.t.mt;
  gw.t.NB = (g->N + gw.t.nt - 1) / gw.t.nt;
  gw.t.KB = (g->K + gw.t.kt - 1) / gw.t.kt;
  const uint64_t passes = (uint64_t)tpu_precision_passes(g->prec);
  L->n.macs += (double)(g->useful ? g->useful : (uint64_t)g->M * (uint64_t)g->N * (uint64_t)g->K) * (double)passes;
  const int64_t MB = gw.t.MB;
  for (int64_t mb = 0; mb < MB && !L->st; mb++) {
    if (!L->p && !L->on_matmul && mb == 2 && MB > 3) {
      /* counting: rows 1 .. MB-2 add alike (see the top); row 1 once more, MB-3 times */
      tpu_sim_lower_counts before = L->n;
      gemm_row(L, &gw, 1);
      const double k = (double)(MB - 3);
      L->n.ops += (L->n.ops - before.ops) * (k - 1);
      L->n.hbm_bytes += (L->n.hbm_bytes - before.hbm_bytes) * (k - 1);
      for (int c = 0; c < TPU_SIM_T_NCLASS; c++)
        L->n.class_bytes[c] += (L->n.class_bytes[c] - before.class_bytes[c]) * (k - 1);
      mb = MB - 1;
    }
    gemm_row(L, &gw, mb);
  }
  tpu_sim_lower_flush(L);
}
/* }================================================================== */

/* {==================================================================
** Element-wise passes over an R x C tensor
** ================================================================== */
tpu_sim_lower_walk tpu_sim_lower_walk_of(const tpu_sim_lowering *L, int64_t R, int64_t C) {
  tpu_sim_lower_walk w = { .R = R, .C = C, .n = -1 };
  w.ct = min64(C, 2 * L->Q);
  w.rt = tpu_sim_lower_extent(R, 2 * L->Q / w.ct);
  return w;
}

bool tpu_sim_lower_walk_next(const tpu_sim_lowering *L, tpu_sim_lower_walk *w) {
  if (w->n >= 0 && (w->c0 += w->ct) >= w->C) { w->c0 = 0; w->r0 += w->rt; }
  w->n++;
  if (L->st || w->r0 >= w->R) return false;
  w->ri = min64(w->rt, w->R - w->r0);
  w->ci = min64(w->ct, w->C - w->c0);
  return true;
}

void tpu_sim_lower_ewise_add(tpu_sim_lowering *L, int t, const tpu_sim_lower_ewise *e, int64_t R, int64_t C) {
  for (tpu_sim_lower_walk w = tpu_sim_lower_walk_of(L, R, C); tpu_sim_lower_walk_next(L, &w);) {
    const int slot = w.n & 1;
    const int64_t ri = w.ri, ci = w.ci;
    int x = tpu_sim_lower_load(L, t, TPU_SIM_R_X, slot, w.r0, w.c0, ri, ci, "dma");
    int y = e->nin > 1 ? tpu_sim_lower_load(L, t, TPU_SIM_R_Y, slot, w.r0, w.c0, ri, ci, "dma")
          : e->mask ? tpu_sim_lower_vmem(L, TPU_SIM_R_MASK, 0, e->yvec ? 1 : ri, ci) : 0;
    tpu_sim_lower_flush(L);
    const int64_t ro = e->reduce ? 1 : ri, co = e->reduce_rows ? 1 : ci;
    int o = tpu_sim_lower_vmem(L, TPU_SIM_R_O, slot, ro, co);
    vpu2(L, e->fn, x, y, o, e->prm);
    tpu_sim_lower_defer(L, o, t, e->reduce ? w.n : w.r0, e->reduce_rows ? w.c0 / w.ct : w.c0, ro, co, "dma");
  }
  tpu_sim_lower_flush(L);
}

void tpu_sim_lower_fold_add(tpu_sim_lowering *L, int t, tpu_vpu_op fn, int taps, int64_t R, int64_t C,
                            const tpu_vpu_params *scale) {
  int slot = 0;
  for (tpu_sim_lower_walk w = tpu_sim_lower_walk_of(L, R, C); tpu_sim_lower_walk_next(L, &w);) {
    const int64_t ri = w.ri, ci = w.ci;
    int acc = tpu_sim_lower_load(L, t, TPU_SIM_R_O, w.n & 1, w.r0, w.c0, ri, ci, "dma");
    for (int j = 1; j < taps; j++, slot ^= 1) {
      int x = tpu_sim_lower_load(L, t, TPU_SIM_R_X, slot, w.r0, w.c0, ri, ci, "dma");
      if (j == 1) tpu_sim_lower_flush(L);
      vpu2(L, fn, acc, x, acc, NULL);
    }
    tpu_sim_lower_flush(L);
    if (scale) vpu2(L, TPU_VPU_SCALE, acc, 0, acc, scale);
    tpu_sim_lower_defer(L, acc, t, w.r0, w.c0, ri, ci, "dma");
  }
  tpu_sim_lower_flush(L);
}
/* }================================================================== */
