/*
** program.c -- building engine programs: buffers, ops, dependencies,
** infeed queues. Every check on a program's shape happens here, once, so
** the engine's loop only asserts.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

void sim_seterr(tpu_sim_program *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err, sizeof p->err, fmt, ap);
  va_end(ap);
}

int64_t sim_buf_bytes(const sim_buf *b) {
  return b->rows * b->cols * (b->dtype == TPU_SIM_BF16 ? 2 : 4);
}

#define X(id, name, json, unit, track, row) name,
static const char *const KIND_NAMES[TPU_SIM_NKINDS] = {
#include "sim/ops.def"
};
#undef X
#define X(id, name, json, unit, track, row) unit,
static const char *const KIND_UNITS[TPU_SIM_NKINDS] = {
#include "sim/ops.def"
};
#undef X
static const char *const COLL_NAMES[] = { "all_reduce", "all_gather", "reduce_scatter", "broadcast" };

const char *tpu_sim_kind_name(tpu_sim_kind k) {
  return (unsigned)k < TPU_SIM_NKINDS ? KIND_NAMES[k] : "?";
}
const char *tpu_sim_kind_unit(tpu_sim_kind k) {
  return (unsigned)k < TPU_SIM_NKINDS ? KIND_UNITS[k] : "?";
}
const char *tpu_sim_coll_name(tpu_sim_coll c) {
  return (unsigned)c < 4 ? COLL_NAMES[c] : "?";
}

/* {==================================================================
** The stall table's columns (sim/stall.def)
** ================================================================== */
#define X(id, name, kind, busy, color, report) name,
static const char *const STALL_NAMES[TPU_SIM_NSTALL] = {
#include "sim/stall.def"
};
#undef X
#define X(id, name, kind, busy, color, report) kind,
static const int STALL_KIND[TPU_SIM_NSTALL] = {
#include "sim/stall.def"
};
#undef X
#define X(id, name, kind, busy, color, report) busy,
static const bool STALL_BUSY[TPU_SIM_NSTALL] = {
#include "sim/stall.def"
};
#undef X
#define X(id, name, kind, busy, color, report) report,
static const int STALL_REPORT[TPU_SIM_NSTALL] = {
#include "sim/stall.def"
};
#undef X

const char *tpu_sim_stall_name(int s) {
  return s >= 0 && s < TPU_SIM_NSTALL ? STALL_NAMES[s] : "?";
}
int tpu_sim_stall_of_kind(tpu_sim_kind k) {
  for (int s = 0; s < TPU_SIM_NSTALL; s++)
    if (STALL_KIND[s] == (int)k) return s;
  return TPU_SIM_IDLE;
}
int sim_stall_unit(int s) {
  return s >= 0 && s < TPU_SIM_NSTALL ? STALL_KIND[s] : -1;
}
bool tpu_sim_stall_busy(int s) {
  return s >= 0 && s < TPU_SIM_NSTALL && STALL_BUSY[s];
}
int tpu_sim_stall_in_report_order(int i) {
  for (int s = 0; s < TPU_SIM_NSTALL; s++)
    if (STALL_REPORT[s] == i) return s;
  return -1;
}
/* }================================================================== */

const char *sim_op_label(const sim_core_prog *cp, int op, char *buf, size_t cap) {
  const sim_op *o = &cp->ops[op];
  snprintf(buf, cap, "op %d ('%s', %s)", op, o->name, tpu_sim_kind_name(o->o.kind));
  return buf;
}

tpu_status tpu_sim_program_create(int cores, tpu_sim_program **out) {
  *out = NULL;
  if (cores < 1 || cores > TPU_MAX_CORES) return TPU_ERR_CONFIG;
  tpu_sim_program *p = tpu_calloc(1, sizeof *p);
  if (!p) return TPU_ERR_NOMEM;
  p->core = tpu_calloc((size_t)cores, sizeof *p->core);
  if (!p->core) { tpu_free(p); return TPU_ERR_NOMEM; }
  p->cores = cores;
  *out = p;
  return TPU_OK;
}

void tpu_sim_program_destroy(tpu_sim_program *p) {
  if (!p) return;
  for (int c = 0; c < p->cores; c++) {
    sim_core_prog *cp = &p->core[c];
    tpu_free(cp->infeed_ready);
    if (cp->share) continue;             /* the arrays are another core's */
    for (int b = 0; b < cp->nbufs; b++) {
      tpu_free(cp->bufs[b].init);
      tpu_free(cp->bufs[b].readers);
    }
    tpu_free(cp->bufs);
    tpu_free(cp->bidx);
    tpu_free(cp->ops);
    tpu_free(cp->deps);
    for (int u = 0; u < SIM_NUNITS; u++) tpu_free(cp->uq[u]);
  }
  for (void *ch = p->names.chunks; ch;) {
    void *prev;
    memcpy(&prev, ch, sizeof prev);
    tpu_free(ch);
    ch = prev;
  }
  tpu_free(p->names.slot);
  tpu_free(p->names.hash);
  tpu_free(p->core);
  tpu_free(p);
}

/* {==================================================================
** Names: interned strings (sim_names) and each core's buffer index
** ================================================================== */
uint32_t sim_hash(const char *s) {
  uint32_t h = 2166136261u;                    /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* Room for n more bytes in the current chunk (a new chunk of 64 KiB, or of
** n bytes for a longer string); false when out of memory. */
static bool names_room(sim_names *t, size_t n) {
  if (n <= t->left) return true;
  const size_t size = n > 65536 - sizeof(void *) ? n + sizeof(void *) : 65536;
  char *ch = tpu_malloc(size);
  if (!ch) return false;
  memcpy(ch, &t->chunks, sizeof t->chunks);
  t->chunks = ch;
  t->chunk = ch + sizeof(void *);
  t->left = size - sizeof(void *);
  return true;
}

static bool names_rehash(sim_names *t) {
  const size_t cap = t->cap ? 2 * t->cap : 256;
  const char **slot = tpu_calloc(cap, sizeof *slot);
  uint32_t *hash = tpu_malloc(cap * sizeof *hash);
  if (!slot || !hash) { tpu_free(slot); tpu_free(hash); return false; }
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slot[i]) continue;
    size_t j = t->hash[i] & (cap - 1);
    while (slot[j]) j = (j + 1) & (cap - 1);
    slot[j] = t->slot[i];
    hash[j] = t->hash[i];
  }
  tpu_free(t->slot);
  tpu_free(t->hash);
  t->slot = slot;
  t->hash = hash;
  t->cap = cap;
  return true;
}

const char *sim_intern(tpu_sim_program *p, const char *s, uint32_t h) {
  sim_names *t = &p->names;
  if (2 * (t->n + 1) > t->cap && !names_rehash(t)) return NULL;
  size_t i = h & (t->cap - 1);
  for (; t->slot[i]; i = (i + 1) & (t->cap - 1))
    if (t->hash[i] == h && !strcmp(t->slot[i], s)) return t->slot[i];
  const size_t n = strlen(s) + 1;
  if (!names_room(t, n)) return NULL;
  char *copy = memcpy(t->chunk, s, n);
  t->chunk += n;
  t->left -= n;
  t->slot[i] = copy;
  t->hash[i] = h;
  t->n++;
  return copy;
}

/* sim_intern for an op's name or VPU op, through the recent names (sim_names). */
static const char *intern_recent(tpu_sim_program *p, const char *s) {
  sim_names *t = &p->names;
  const size_t k = ((uintptr_t)s >> 4) & 15u;
  if (t->recent_src[k] == s && !strcmp(t->recent[k], s)) return t->recent[k];
  const char *c = sim_intern(p, s, sim_hash(s));
  if (c) t->recent_src[k] = s, t->recent[k] = c;
  return c;
}

/* The handle of the buffer named s (hash h) on cp, or 0. */
static int buf_lookup(const sim_core_prog *cp, const char *s, uint32_t h) {
  if (!cp->bidxcap) return 0;
  const int mask = cp->bidxcap - 1;
  for (int i = (int)(h & (uint32_t)mask); cp->bidx[i]; i = (i + 1) & mask) {
    const sim_buf *b = &cp->bufs[cp->bidx[i] - 1];
    if (b->hash == h && !strcmp(b->name, s)) return cp->bidx[i];
  }
  return 0;
}

/* Makes room in cp's index for one more buffer; false when out of memory. */
static bool buf_index_room(sim_core_prog *cp) {
  if (2 * (cp->nbufs + 1) <= cp->bidxcap) return true;
  const int cap = cp->bidxcap ? 2 * cp->bidxcap : 64;
  int *idx = tpu_calloc((size_t)cap, sizeof *idx);
  if (!idx) return false;
  for (int b = 0; b < cp->nbufs; b++) {
    int i = (int)(cp->bufs[b].hash & (uint32_t)(cap - 1));
    while (idx[i]) i = (i + 1) & (cap - 1);
    idx[i] = b + 1;
  }
  tpu_free(cp->bidx);
  cp->bidx = idx;
  cp->bidxcap = cap;
  return true;
}

static void buf_index_add(sim_core_prog *cp, int handle) {
  const int mask = cp->bidxcap - 1;
  int i = (int)(cp->bufs[handle - 1].hash & (uint32_t)mask);
  while (cp->bidx[i]) i = (i + 1) & mask;
  cp->bidx[i] = handle;
}
/* }================================================================== */

int tpu_sim_program_cores(const tpu_sim_program *p) { return p->cores; }
int tpu_sim_program_ops(const tpu_sim_program *p, int core) {
  return core >= 0 && core < p->cores ? p->core[core].nops : 0;
}
const char *tpu_sim_program_error(const tpu_sim_program *p) { return p->err; }

bool tpu_sim_program_op(const tpu_sim_program *p, int core, int index, tpu_sim_op *out) {
  memset(out, 0, sizeof *out);
  if (core < 0 || core >= p->cores || index < 0 || index >= p->core[core].nops) return false;
  const sim_op *so = &p->core[core].ops[index];
  *out = so->o;
  out->name = so->name;
  out->params = NULL;
  return true;
}

bool tpu_sim_buffer_shape(const tpu_sim_program *p, int core, int buf, int64_t *rows, int64_t *cols) {
  *rows = *cols = 0;
  if (core < 0 || core >= p->cores || buf < 1 || buf > p->core[core].nbufs) return false;
  *rows = p->core[core].bufs[buf - 1].rows;
  *cols = p->core[core].bufs[buf - 1].cols;
  return true;
}

int64_t tpu_sim_program_infeed(const tpu_sim_program *p, int core, const uint64_t **ready_cycles) {
  *ready_cycles = NULL;
  if (core < 0 || core >= p->cores) return 0;
  *ready_cycles = p->core[core].infeed_ready;
  return p->core[core].ninfeed;
}

/* Grows *arr (of elements 'size') so it holds at least need; 0 or -1 (NOMEM). */
static int grow(void **arr, int *cap, int need, size_t size) {
  if (need <= *cap) return 0;
  int nc = *cap ? *cap * 2 : 8;
  while (nc < need) nc *= 2;
  void *a = tpu_realloc(*arr, (size_t)nc * size);
  if (!a) return -1;
  *arr = a;
  *cap = nc;
  return 0;
}

static bool core_ok(tpu_sim_program *p, int core) {
  if (core >= 0 && core < p->cores) return true;
  sim_seterr(p, "core %d out of range 0..%d", core, p->cores - 1);
  return false;
}

/* core_ok, and the core's program may still change (it shares none). */
static bool core_open(tpu_sim_program *p, int core) {
  if (!core_ok(p, core)) return false;
  const sim_core_prog *cp = &p->core[core];
  if (cp->share) {
    sim_seterr(p, "core %d runs core %d's program (tpu_sim_program_share); it takes no buffers, values or ops "
               "of its own", core, cp->share - 1);
    return false;
  }
  if (cp->nsharers) {
    sim_seterr(p, "core %d's program is shared with %d other core(s) (tpu_sim_program_share); it can no longer "
               "change", core, cp->nsharers);
    return false;
  }
  return true;
}

tpu_status tpu_sim_program_reserve(tpu_sim_program *p, int core, int64_t ops) {
  if (!core_open(p, core)) return TPU_ERR_INPUT;
  if (ops < 0 || ops > TPU_SIM_MAX_OPS) {
    sim_seterr(p, "core %d: cannot reserve %lld ops (0..%lld)", core, (long long)ops, (long long)TPU_SIM_MAX_OPS);
    return TPU_ERR_INPUT;
  }
  sim_core_prog *cp = &p->core[core];
  if (ops <= cp->capops) return TPU_OK;
  sim_op *o = tpu_realloc(cp->ops, (size_t)ops * sizeof *o);
  if (!o) { sim_seterr(p, "out of memory"); return TPU_ERR_NOMEM; }
  cp->ops = o;
  cp->capops = (int)ops;
  return TPU_OK;
}

tpu_status tpu_sim_program_share(tpu_sim_program *p, int from, int to) {
  if (!core_ok(p, from) || !core_ok(p, to)) return TPU_ERR_INPUT;
  sim_core_prog *src = &p->core[from], *dst = &p->core[to];
  if (src->share) { from = src->share - 1; src = &p->core[from]; }
  if (from == to || dst->share || dst->nsharers || dst->nbufs || dst->nops) {
    sim_seterr(p, "core %d cannot run core %d's program: it %s", to, from,
               from == to ? "is that core" : dst->share ? "already runs another core's"
               : dst->nsharers ? "is shared itself" : "has buffers or ops of its own");
    return TPU_ERR_INPUT;
  }
  uint64_t *r = NULL;
  if (src->ninfeed > 0) {
    if (!(r = tpu_malloc((size_t)src->ninfeed * sizeof *r))) { sim_seterr(p, "out of memory"); return TPU_ERR_NOMEM; }
    memcpy(r, src->infeed_ready, (size_t)src->ninfeed * sizeof *r);
  }
  tpu_free(dst->bufs); tpu_free(dst->bidx); tpu_free(dst->ops); tpu_free(dst->deps);   /* empty, maybe allocated */
  for (int u = 0; u < SIM_NUNITS; u++) tpu_free(dst->uq[u]);
  tpu_free(dst->infeed_ready);
  *dst = *src;
  dst->infeed_ready = r;
  dst->share = from + 1;
  dst->nsharers = 0;
  src->nsharers++;
  return TPU_OK;
}

int tpu_sim_buffer(tpu_sim_program *p, int core, const char *name, tpu_sim_space space,
                   tpu_sim_dtype dtype, int64_t rows, int64_t cols) {
  if (!core_open(p, core)) return 0;
  sim_core_prog *cp = &p->core[core];
  if (!name || !*name) { sim_seterr(p, "core %d: a buffer needs a name", core); return 0; }
  const uint32_t h = sim_hash(name);
  if (buf_lookup(cp, name, h)) {
    sim_seterr(p, "core %d: buffer '%s' is defined twice", core, name);
    return 0;
  }
  if (rows < 1 || cols < 1 || rows > TPU_SIM_MAX_DIM || cols > TPU_SIM_MAX_DIM || rows * cols > TPU_SIM_MAX_ELEMS) {
    sim_seterr(p, "core %d: buffer '%s': shape %lld x %lld out of range (each 1..2^31, at most 2^48 elements)",
               core, name, (long long)rows, (long long)cols);
    return 0;
  }
  if ((unsigned)space > TPU_SIM_VMEM || (unsigned)dtype > TPU_SIM_BF16) {
    sim_seterr(p, "core %d: buffer '%s': bad space or dtype", core, name);
    return 0;
  }
  if (grow((void **)&cp->bufs, &cp->capbufs, cp->nbufs + 1, sizeof *cp->bufs) || !buf_index_room(cp)) goto nomem;
  const char *nm = sim_intern(p, name, h);
  if (!nm) goto nomem;
  cp->bufs[cp->nbufs] = (sim_buf){ .name = nm, .hash = h, .space = space, .dtype = dtype, .rows = rows,
                                   .cols = cols, .last_writer = -1, .first_use = -1, .last_use = -1 };
  buf_index_add(cp, ++cp->nbufs);
  return cp->nbufs;
nomem:
  sim_seterr(p, "out of memory");
  return 0;
}

int tpu_sim_buffer_find(const tpu_sim_program *p, int core, const char *name) {
  if (core < 0 || core >= p->cores || !name) return 0;
  return buf_lookup(&p->core[core], name, sim_hash(name));
}

int64_t tpu_sim_buffer_elems(const tpu_sim_program *p, int core, int buf) {
  if (core < 0 || core >= p->cores || buf < 1 || buf > p->core[core].nbufs) return 0;
  return p->core[core].bufs[buf - 1].rows * p->core[core].bufs[buf - 1].cols;
}

static sim_buf *buf_of(tpu_sim_program *p, int core, int h) {
  sim_core_prog *cp = &p->core[core];
  return h >= 1 && h <= cp->nbufs ? &cp->bufs[h - 1] : NULL;
}

tpu_status tpu_sim_buffer_init(tpu_sim_program *p, int core, int buf, const float *values) {
  if (!core_open(p, core)) return TPU_ERR_INPUT;
  sim_buf *b = buf_of(p, core, buf);
  if (!b || !values) { sim_seterr(p, "core %d: no buffer %d", core, buf); return TPU_ERR_INPUT; }
  size_t n = (size_t)(b->rows * b->cols);
  if (!b->init && !(b->init = tpu_malloc(n * sizeof(float)))) {
    sim_seterr(p, "out of memory for the values of '%s'", b->name);
    return TPU_ERR_NOMEM;
  }
  memcpy(b->init, values, n * sizeof(float));
  if (b->dtype == TPU_SIM_BF16) tpu_bf16_round_array(b->init, n);
  return TPU_OK;
}

tpu_status tpu_sim_infeed(tpu_sim_program *p, int core, int64_t n, const uint64_t *ready_cycles) {
  if (!core_ok(p, core)) return TPU_ERR_INPUT;
  if (n < 0 || (n > 0 && !ready_cycles)) { sim_seterr(p, "core %d: bad infeed queue", core); return TPU_ERR_INPUT; }
  if (n > 0 && ready_cycles[n - 1] > TPU_SIM_MAX_CYCLES) {
    sim_seterr(p, "core %d: infeed batch %lld is ready at cycle %llu, past the longest run the engine times "
               "(2^53 cycles)", core, (long long)(n - 1), (unsigned long long)ready_cycles[n - 1]);
    return TPU_ERR_INPUT;
  }
  for (int64_t i = 1; i < n; i++)
    if (ready_cycles[i] < ready_cycles[i - 1]) {
      sim_seterr(p, "core %d: infeed batch %lld is ready at cycle %llu, before batch %lld (%llu); "
                 "ready cycles must not decrease", core, (long long)i, (unsigned long long)ready_cycles[i],
                 (long long)(i - 1), (unsigned long long)ready_cycles[i - 1]);
      return TPU_ERR_INPUT;
    }
  sim_core_prog *cp = &p->core[core];
  uint64_t *r = NULL;
  if (n > 0) {
    if (!(r = tpu_malloc((size_t)n * sizeof *r))) { sim_seterr(p, "out of memory"); return TPU_ERR_NOMEM; }
    memcpy(r, ready_cycles, (size_t)n * sizeof *r);
  }
  tpu_free(cp->infeed_ready);
  cp->infeed_ready = r;
  cp->ninfeed = n;
  return TPU_OK;
}

void tpu_sim_infeed_set_fill(tpu_sim_program *p, tpu_sim_infeed_fill fill, void *ud) {
  p->fill = fill;
  p->fill_ud = ud;
}

/* {==================================================================
** Adding an op: operand checks (a plan of what it reads and writes),
** then dependencies.
** ================================================================== */
/* The op being added and what its checks found. */
typedef struct op_plan {
  tpu_sim_program *p;
  sim_core_prog *cp;
  int core, idx;
  const char *nm;              /* its name (or "<kind>#<index>") */
  int reads[TPU_SIM_MAX_IN + 3], writes[TPU_SIM_MAX_OUT + 1], nr, nw;
  int64_t bytes;               /* DMA and COLL: bytes per core */
  int unit;
  tpu_vpu_params prm;
} op_plan;

/* Sets the program's message, "core C: op I ('NAME'): " then fmt; returns
** TPU_ERR_INPUT. */
static tpu_status op_err(const op_plan *pl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tpu_status op_err(const op_plan *pl, const char *fmt, ...) {
  char m[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  sim_seterr(pl->p, "core %d: op %d ('%s'): %s", pl->core, pl->idx, pl->nm, m);
  return TPU_ERR_INPUT;
}

static const char *space_name(int s) { return s == TPU_SIM_HBM ? "hbm" : "vmem"; }

/* Checks one operand handle, field 'field' (with index >= 0: 'field[index]');
** requires a space unless want < 0. */
static sim_buf *opnd_at(const op_plan *pl, const char *field, int index, int h, int want) {
  sim_buf *b = buf_of(pl->p, pl->core, h);
  if (b && (want < 0 || (int)b->space == want)) return b;
  char f[48];
  if (index >= 0) snprintf(f, sizeof f, "%s[%d]", field, index);
  else snprintf(f, sizeof f, "%s", field);
  if (!b) op_err(pl, "field '%s': %s", f, h ? "no such buffer" : "missing (a buffer is required)");
  else op_err(pl, "field '%s': buffer '%s' is in %s; it must be in %s", f, b->name, space_name(b->space),
              space_name(want));
  return NULL;
}
static sim_buf *opnd_buf(const op_plan *pl, const char *field, int h, int want) {
  return opnd_at(pl, field, -1, h, want);
}

static tpu_status plan_dma(op_plan *pl, const tpu_sim_op *op) {
  sim_buf *s = opnd_buf(pl, "src", op->src, -1);
  sim_buf *d = s ? opnd_buf(pl, "dst", op->dst, -1) : NULL;
  if (!d) return TPU_ERR_INPUT;
  if (s->space == d->space)
    return op_err(pl, "a dma moves between hbm and vmem; '%s' and '%s' are both in %s", s->name, d->name,
                  space_name(s->space));
  if (s->rows * s->cols != d->rows * d->cols)
    return op_err(pl, "src '%s' has %lld elements, dst '%s' %lld; they must be equal", s->name,
                  (long long)(s->rows * s->cols), d->name, (long long)(d->rows * d->cols));
  pl->bytes = sim_buf_bytes(s->space == TPU_SIM_HBM ? s : d);
  pl->reads[pl->nr++] = op->src;
  pl->writes[pl->nw++] = op->dst;
  return TPU_OK;
}

static tpu_status plan_matmul(op_plan *pl, const tpu_sim_op *op) {
  sim_buf *a = opnd_buf(pl, "a", op->a, TPU_SIM_VMEM);
  sim_buf *b = a ? opnd_buf(pl, "b", op->b, TPU_SIM_VMEM) : NULL;
  sim_buf *d = b ? opnd_buf(pl, "dst", op->dst, TPU_SIM_VMEM) : NULL;
  if (!d) return TPU_ERR_INPUT;
  int64_t M = op->trans_a ? a->cols : a->rows, K = op->trans_a ? a->rows : a->cols;
  int64_t K2 = op->trans_b ? b->cols : b->rows, N = op->trans_b ? b->rows : b->cols;
  if (K != K2 || d->rows != M || d->cols != N)
    return op_err(pl, "shapes do not agree: a%s is %lld x %lld, b%s is %lld x %lld, dst is %lld x %lld (need a: "
                  "M x K, b: K x N, dst: M x N)", op->trans_a ? "^T" : "", (long long)M, (long long)K,
                  op->trans_b ? "^T" : "", (long long)K2, (long long)N, (long long)d->rows, (long long)d->cols);
  /* the buffers' shapes bound M, N and K by TPU_SIM_MAX_DIM (2^31) */
  if ((unsigned)op->precision > TPU_PREC_BF16X6) return op_err(pl, "field 'precision': unknown");
  pl->reads[pl->nr++] = op->a;
  pl->reads[pl->nr++] = op->b;
  if (op->accumulate) pl->reads[pl->nr++] = op->dst;
  pl->writes[pl->nw++] = op->dst;
  return TPU_OK;
}

static tpu_status plan_vpu(op_plan *pl, const tpu_sim_op *op) {
  if ((unsigned)op->vpu_op >= (unsigned)TPU_VPU_OP_COUNT)
    return op_err(pl, "field 'vpu_op': unknown op %d; the VPU knows %s", (int)op->vpu_op, sim_vpu_names());
  for (int i = 0; i < TPU_SIM_MAX_IN && op->in[i]; i++) {
    if (!opnd_at(pl, "in", i, op->in[i], TPU_SIM_VMEM)) return TPU_ERR_INPUT;
    pl->reads[pl->nr++] = op->in[i];
  }
  for (int i = 0; i < TPU_SIM_MAX_OUT && op->out[i]; i++) {
    if (!opnd_at(pl, "out", i, op->out[i], TPU_SIM_VMEM)) return TPU_ERR_INPUT;
    pl->writes[pl->nw++] = op->out[i];
  }
  char e[512];
  pl->prm = op->params ? *op->params : tpu_vpu_params_default();
  if (!sim_vpu_check(op, &pl->prm, pl->cp, e, sizeof e)) return op_err(pl, "%s", e);
  return TPU_OK;
}

static tpu_status plan_infeed(op_plan *pl, const tpu_sim_op *op) {
  if (!opnd_buf(pl, "dst", op->dst, -1)) return TPU_ERR_INPUT;
  pl->writes[pl->nw++] = op->dst;
  return TPU_OK;
}

static tpu_status plan_collective(op_plan *pl, const tpu_sim_op *op) {
  sim_buf *s = opnd_buf(pl, "src", op->src, -1);
  sim_buf *d = s ? opnd_buf(pl, "dst", op->dst, -1) : NULL;
  if (!d) return TPU_ERR_INPUT;
  int64_t ns = s->rows * s->cols, nd = d->rows * d->cols, n = pl->p->cores;
  int64_t want = op->coll == TPU_SIM_ALL_GATHER ? ns * n : op->coll == TPU_SIM_REDUCE_SCATTER ? ns / n : ns;
  if ((unsigned)op->coll > TPU_SIM_BROADCAST) return op_err(pl, "field 'collective': unknown");
  if (op->coll == TPU_SIM_REDUCE_SCATTER && ns % n)
    return op_err(pl, "reduce_scatter of '%s' (%lld elements) over %lld cores: the size must be a multiple of the "
                  "core count", s->name, (long long)ns, (long long)n);
  if (nd != want)
    return op_err(pl, "%s of '%s' (%lld elements) over %lld cores needs a dst of %lld elements; '%s' has %lld",
                  tpu_sim_coll_name(op->coll), s->name, (long long)ns, (long long)n, (long long)want, d->name,
                  (long long)nd);
  if (op->coll == TPU_SIM_BROADCAST && (op->root < 0 || op->root >= pl->p->cores))
    return op_err(pl, "field 'root': %d out of range 0..%d", op->root, pl->p->cores - 1);
  pl->reads[pl->nr++] = op->src;
  pl->writes[pl->nw++] = op->dst;
  pl->bytes = sim_buf_bytes(s);
  return TPU_OK;
}

/* Checks op (step, operands by kind, 'after') into pl. */
static tpu_status plan_op(op_plan *pl, const tpu_sim_op *op) {
  if (op->step < 0 || op->step < pl->cp->maxstep)
    return op_err(pl, "field 'step': %d; steps must be >= 0 and must not decrease along a core's program (the "
                  "previous op has step %d)", op->step, pl->cp->maxstep);
  if (op->step >= TPU_SIM_MAX_STEPS)
    return op_err(pl, "field 'step': %d; steps are 0..%d", op->step, TPU_SIM_MAX_STEPS - 1);
  tpu_status st;
  switch (op->kind) {
  case TPU_SIM_DMA: st = plan_dma(pl, op); break;
  case TPU_SIM_MATMUL: st = plan_matmul(pl, op); break;
  case TPU_SIM_VPU: st = plan_vpu(pl, op); break;
  case TPU_SIM_INFEED: st = plan_infeed(pl, op); break;
  case TPU_SIM_COLLECTIVE: st = plan_collective(pl, op); break;
  default: return op_err(pl, "unknown kind %d", (int)op->kind);
  }
  if (st != TPU_OK) return st;
  pl->unit = (int)op->kind;                      /* a unit's number is its ops' kind (sim_int.h) */
  if (op->after < 0 || op->after > pl->idx)
    return op_err(pl, "field 'after': %d; expected 0 (none) or 1 + the index of an earlier op (1..%d)", op->after,
                  pl->idx);
  return TPU_OK;
}

static int add_dep(sim_core_prog *cp, int dep) {
  if (grow((void **)&cp->deps, &cp->capdeps, cp->ndeps + 1, sizeof *cp->deps)) return -1;
  cp->deps[cp->ndeps++] = dep;
  return 0;
}

/* Duplicates would be harmless (an op waits for the latest end of its
** deps); the scan is bounded so that a buffer read by many ops and then
** written stays linear. */
static bool has_dep(const sim_core_prog *cp, int from, int dep) {
  if (cp->ndeps - from > 16) from = cp->ndeps - 16;
  for (int i = from; i < cp->ndeps; i++)
    if (cp->deps[i] == dep) return true;
  return false;
}

/* Adds dep to the op whose deps start at dep0 unless it is there; -1 on
** out-of-memory. */
static int need(sim_core_prog *cp, int dep0, int dep) {
  return has_dep(cp, dep0, dep) ? 0 : add_dep(cp, dep);
}

/* The dependencies of the planned op: RAW on the last writer of every
** read; WAW and WAR for every write; its 'after'. Readers lists (and the
** unit's queue) are grown before anything is committed, so on failure
** (-1, out of memory) only cp->ndeps needs rolling back. */
static int plan_deps(const op_plan *pl, int after, int dep0) {
  sim_core_prog *cp = pl->cp;
  if (grow((void **)&cp->uq[pl->unit], &cp->uqcap[pl->unit], cp->uqn[pl->unit] + 1, sizeof *cp->uq[pl->unit]))
    return -1;
  for (int i = 0; i < pl->nr; i++) {
    sim_buf *b = &cp->bufs[pl->reads[i] - 1];
    if (grow((void **)&b->readers, &b->capreaders, b->nreaders + 1, sizeof *b->readers)) return -1;
  }
  for (int i = 0; i < pl->nr; i++) {
    const sim_buf *b = &cp->bufs[pl->reads[i] - 1];
    if (b->last_writer >= 0 && need(cp, dep0, b->last_writer)) return -1;
  }
  for (int i = 0; i < pl->nw; i++) {
    const sim_buf *b = &cp->bufs[pl->writes[i] - 1];
    if (b->last_writer >= 0 && need(cp, dep0, b->last_writer)) return -1;
    for (int j = 0; j < b->nreaders; j++)
      if (need(cp, dep0, b->readers[j])) return -1;
  }
  return after && need(cp, dep0, after - 1) ? -1 : 0;
}

/* Commits the planned op 'so': buffers' readers, writers and liveness, the
** unit's queue, the core's step. */
static void commit_op(const op_plan *pl, sim_op *so) {
  sim_core_prog *cp = pl->cp;
  const int idx = pl->idx;
  for (int i = 0; i < pl->nr; i++) {
    sim_buf *b = &cp->bufs[pl->reads[i] - 1];
    if (b->nreaders == 0 || b->readers[b->nreaders - 1] != idx) b->readers[b->nreaders++] = idx;
  }
  for (int i = 0; i < pl->nw; i++) {
    sim_buf *b = &cp->bufs[pl->writes[i] - 1];
    b->last_writer = idx;
    b->nreaders = 0;
  }
  for (int i = 0; i < pl->nr + pl->nw; i++) {
    sim_buf *b = &cp->bufs[(i < pl->nr ? pl->reads[i] : pl->writes[i - pl->nr]) - 1];
    if (b->first_use < 0) b->first_use = idx;
    b->last_use = idx;
  }
  so->ndeps = cp->ndeps - so->dep0;
  cp->uq[pl->unit][cp->uqn[pl->unit]++] = idx;
  cp->maxstep = so->o.step;
  cp->nops++;
}

tpu_status tpu_sim_add_op(tpu_sim_program *p, int core, const tpu_sim_op *op, int *index) {
  if (!core_open(p, core)) return TPU_ERR_INPUT;
  sim_core_prog *cp = &p->core[core];
  char defname[48];
  const char *nm = op->name;
  if (!nm || !*nm) {
    snprintf(defname, sizeof defname, "%s#%d", tpu_sim_kind_name(op->kind), cp->nops);
    nm = defname;
  }
  op_plan pl = { .p = p, .cp = cp, .core = core, .idx = cp->nops, .nm = nm,
                 .prm = tpu_vpu_params_default() };
  if (p->nops >= TPU_SIM_MAX_OPS) {
    op_err(&pl, "the program already holds %lld ops (all cores), the engine's limit", (long long)p->nops);
    return TPU_ERR_RANGE;
  }
  tpu_status st = plan_op(&pl, op);
  if (st != TPU_OK) return st;
  if (grow((void **)&cp->ops, &cp->capops, pl.idx + 1, sizeof *cp->ops)) goto nomem;
  const char *iname = intern_recent(p, nm);
  if (!iname) goto nomem;
  sim_op *so = &cp->ops[pl.idx];
  *so = (sim_op){ .o = *op, .name = iname, .unit = pl.unit, .bytes = pl.bytes, .params = pl.prm,
                  .dep0 = cp->ndeps };
  so->o.name = iname;
  so->o.params = NULL;
  if (plan_deps(&pl, op->after, so->dep0)) { cp->ndeps = so->dep0; goto nomem; }
  commit_op(&pl, so);
  p->nops++;
  if (index) *index = pl.idx;
  return TPU_OK;
nomem:
  sim_seterr(p, "out of memory");
  return TPU_ERR_NOMEM;
}
/* }================================================================== */
