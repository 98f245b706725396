/*
** df_model.c -- the host-time model: a discrete-event simulation of a
** pipeline description with its modeled costs (seconds of host time).
**
** The pipeline is a chain of nodes from the source to the consumer. Items are
** elements before the batch node and batches after it. Each node is either
**   - synchronous: it runs in the thread that pulls from it, one item at a
**     time (a lock: item i starts after item i-1 is done), or
**   - asynchronous: k workers of its own and a limit L of items outstanding
**     (in flight or done and not yet taken): item i is pulled at
**     max(a worker free, item i-L taken, item i-1 pulled); its output is
**     delivered in order (tf.data's deterministic order).
** prefetch(n) is asynchronous with k = 1, L = n; map given num_parallel_calls
** k (1 included) has L = k; interleave with num_parallel_calls P > 1 reads each file
** of the cycle on lane (file mod P) with L = 2 x cycle_length; workers(count,
** queue_size) has L = count + queue_size, and the stages above it run inside
** each worker (replicated, no lock), as a generator does in a Ray worker.
** Thread workers with "gil" share one interpreter lock: a worker's whole
** item (its generator included) runs only while it holds the lock.
**
** Iterations: the consumer's first request of each epoch (a fresh iteration,
** consumer.epochs) makes the whole pipeline afresh after
** iterator_overhead_s: no asynchronous node pulls an item of that epoch
** before it (epoch_floor). Below repeat, the request of a pass's first batch
** does the same for the nodes of repeat's input (pass_floor). Every item an
** asynchronous node hands out costs element_overhead_s more.
**
** Costs: the source charges open_latency_s at the first element of each file
** it reads in an epoch, then read_latency_s + element_bytes/bandwidth per
** element; map charges cost_per_call_s per call plus cost_per_element_s per
** element (a map after batch is one call per batch: the vectorized map);
** batch, shuffle and cache charge cost_per_element_s per element (cache: per
** element read back from memory in epochs after the first, when nothing above
** it runs). Process workers pay serialize_s_per_byte per batch byte and the
** consumer pays deserialize_s_per_byte before its step; shared memory pays
** shm_s_per_byte in the worker (one copy into the store) and shm_get_s in the
** consumer (zero-copy).
**
** Not modelled: contention for host cores beyond the stated parallelism (the
** AUTOTUNE budget bounds it), memory bandwidth shared between stages,
** variance of costs (every cost is deterministic), shard skipping reads (a
** shard is taken to read only its own elements).
*/
#include "datafeed/df_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum nkind { N_SRC, N_SYNC, N_ASYNC, N_BATCH, N_CACHE } nkind;

typedef struct node {
  nkind kind;
  const df_stage *st;        /* NULL for the source */
  bool batch_level, replicated, gil;
  int k, L;                  /* async: workers, outstanding limit */
  int lanes;                 /* async source: P lanes by file */
  char name[24];
  int row0;                  /* first timeline row */
  /* state */
  double last_done, last_pull, last_out;
  double *free_t;            /* k worker free times */
  double *taken;             /* per item (growable) */
  int64_t cap, next;
  char kind_ch;
} node;

#define MAX_ROWS 160
struct tpu_df_model {
  tpu_df_spec *spec;
  node nd[DF_MAX_STAGES + 2];
  int nn;
  int64_t epoch_len, bpe, total_batches, B;
  int64_t elem_bytes, files;
  int64_t per_file;
  int cycle, par_il;
  int64_t block;             /* interleave block_length */
  double deser_s_per_byte, shm_get_s;
  bool has_workers_process, has_workers_shm;
  double gil_free;
  int consumer_row;
  /* iterations: the pipeline is made afresh every iter_batches batches (an
  ** epoch), repeat's input every bpe batches (a pass); nothing asynchronous
  ** starts an item of an iteration before it was made (epoch_floor), nor an
  ** item below repeat before its pass was made (pass_floor) */
  int64_t iter_batches;
  int below_repeat;          /* nodes [0, below_repeat) are repeat's input */
  double epoch_floor, pass_floor;
  double iterator_s, element_s;   /* overheads: per iterator made, per async hand-off */
  /* consumer */
  int64_t step;
  double prev_end;
  /* timeline */
  char *row_names[MAX_ROWS];
  int nrows;
  tpu_df_interval *iv;
  size_t niv, ivcap;
  double record_until;       /* record intervals starting before this; <0 = by steps */
  int64_t timeline_steps;
  bool oom, recording;
  int row_override;          /* >= 0 while a worker runs its generator */
};

tpu_df_model_options tpu_df_model_options_default(void) {
  tpu_df_model_options o = { .host_cores = 8, .timeline_steps = 0, .epochs = 0 };
  return o;
}

static void rec(tpu_df_model *m, int row, double a, double b, char kind) {
  if (!m->recording || b <= a || m->oom) return;
  if (m->row_override >= 0) row = m->row_override;   /* inside a worker: its own row */
  if (m->niv == m->ivcap) {
    size_t nc = m->ivcap ? m->ivcap * 2 : 1024;
    if (nc > 4000000) return;
    tpu_df_interval *n = tpu_realloc(m->iv, nc * sizeof *n);
    if (!n) { m->oom = true; return; }
    m->iv = n; m->ivcap = nc;
  }
  m->iv[m->niv++] = (tpu_df_interval){ row, a, b, kind };
}

static bool ensure(node *n, int64_t i) {
  if (i < n->cap) return true;
  int64_t nc = n->cap ? n->cap * 2 : 1024;
  while (nc <= i) nc *= 2;
  double *t = tpu_realloc(n->taken, (size_t)nc * sizeof *t);
  if (!t) return false;
  memset(t + n->cap, 0, (size_t)(nc - n->cap) * sizeof *t);
  n->taken = t; n->cap = nc;
  return true;
}

static double mx(double a, double b) { return a > b ? a : b; }

/* Items of a batch-level node: the size of batch b. */
static int64_t batch_size(const tpu_df_model *m, int64_t b) {
  int64_t pos = (b % m->bpe) * m->B;
  return m->epoch_len - pos < m->B ? m->epoch_len - pos : m->B;
}

/* Cost of one item at a non-source node. */
static double node_cost(const tpu_df_model *m, const node *n, int64_t i) {
  const df_stage *t = n->st;
  if (!t) return 0;
  int64_t elems = n->batch_level ? batch_size(m, i) : 1;
  switch (t->op) {
  case DF_MAP: return t->cost_per_call_s + t->cost_per_element_s * (double)elems;
  case DF_SHUFFLE: case DF_BATCH: return t->cost_per_call_s + t->cost_per_element_s * (double)elems;
  case DF_WORKERS: {
    double bytes = (double)(elems * m->elem_bytes);
    if (t->wkind == DF_WK_PROCESS) return t->serialize_s_per_byte * bytes;
    if (t->wkind == DF_WK_SHM) return t->shm_s_per_byte * bytes;
    return 0;
  }
  default: return 0;
  }
}

static double deliver(tpu_df_model *m, int s, int64_t i, double req);

/* The source: element i (global over epochs). */
static double src_cost(const tpu_df_model *m, int64_t i, double *open_s) {
  const df_source_costs *c = &m->spec->cost;
  int64_t pos = i % m->epoch_len;
  bool first;
  if (m->cycle > 1 && m->files > 1) {
    /* groups of 'cycle' files read in turn, 'block' elements at a time: a
    ** file's first element is at block * (its place in the cycle) */
    int64_t pg = pos % (m->per_file * m->cycle);
    first = pg < m->cycle * m->block && pg % m->block == 0;
  } else {
    first = pos % m->per_file == 0;
  }
  *open_s = first ? c->open_latency_s : 0;
  double r = c->read_latency_s + c->decode_cost_per_element_s;
  if (c->read_bandwidth_bytes_per_s > 0) r += (double)m->elem_bytes / c->read_bandwidth_bytes_per_s;
  return r;
}

static double run_async(tpu_df_model *m, int s, int64_t i, double req, bool is_src) {
  node *n = &m->nd[s];
  int w = 0;
  if (is_src) {
    int64_t pos = i % m->epoch_len;
    int64_t file_in_cycle = m->cycle > 1 ? (pos % (m->per_file * m->cycle)) / m->block % m->cycle : 0;
    w = (int)(file_in_cycle % n->k);
  } else {
    for (int j = 1; j < n->k; j++) if (n->free_t[j] < n->free_t[w]) w = j;
  }
  double pull = mx(mx(n->free_t[w], n->last_pull), m->epoch_floor);
  if (s < m->below_repeat) pull = mx(pull, m->pass_floor);
  if (i >= n->L) pull = mx(pull, n->taken[i - n->L]);
  n->last_pull = pull;
  double start = pull;
  if (n->gil) start = mx(start, m->gil_free);
  double done;
  if (is_src) {
    double open_s, rd = src_cost(m, i, &open_s);
    rec(m, n->row0 + w, start, start + open_s, 'O');
    rec(m, n->row0 + w, start + open_s, start + open_s + rd, 'R');
    done = start + open_s + rd;
  } else {
    if (n->st && n->st->op == DF_WORKERS) m->row_override = n->row0 + w;
    double in = deliver(m, s - 1, i, start);
    m->row_override = -1;
    double c = node_cost(m, n, i);
    rec(m, n->row0 + w, in, in + c, n->kind_ch);
    done = in + c;
  }
  done += m->element_s;      /* the hand-off to the consumer's thread */
  if (n->gil) m->gil_free = done;
  n->free_t[w] = done;
  double out = mx(done, n->last_out);
  n->last_out = out;
  double got = mx(out, req);
  n->taken[i] = got;
  return got;
}

static double deliver(tpu_df_model *m, int s, int64_t i, double req) {
  node *n = &m->nd[s];
  if (m->oom || !ensure(n, i)) { m->oom = true; return req; }   /* the run is void once memory failed */
  n->next = i + 1;
  if (s == m->below_repeat - 1 && i % m->bpe == 0 && i % m->iter_batches != 0) {
    req += m->iterator_s;    /* repeat makes its input's iterator again */
    m->pass_floor = req;
  }
  double r = n->replicated ? req : mx(req, n->last_done);
  double done;
  switch (n->kind) {
  case N_SRC: {
    if (n->k > 1) return run_async(m, s, i, req, true);
    double open_s, rd = src_cost(m, i, &open_s);
    rec(m, n->row0, r, r + open_s, 'O');
    rec(m, n->row0, r + open_s, r + open_s + rd, 'R');
    done = r + open_s + rd;
    break;
  }
  case N_ASYNC:
    return run_async(m, s, i, req, false);
  case N_BATCH: {
    int64_t size = batch_size(m, i), e = i / m->bpe, pos = (i % m->bpe) * m->B;
    double t = r;
    for (int64_t j = 0; j < size; j++) t = deliver(m, s - 1, e * m->epoch_len + pos + j, t);
    double c = node_cost(m, n, i);
    rec(m, n->row0, t, t + c, 'B');
    done = t + c;
    break;
  }
  case N_CACHE: {
    int64_t limit = n->batch_level ? m->bpe : m->epoch_len;
    double c = n->st->cost_per_element_s * (double)(n->batch_level ? batch_size(m, i) : 1);
    if (i >= limit) { rec(m, n->row0, r, r + c, 'C'); done = r + c; }
    else done = deliver(m, s - 1, i, r);
    break;
  }
  default: {
    double in = deliver(m, s - 1, i, r);
    double c = node_cost(m, n, i);
    rec(m, n->row0, in, in + c, n->kind_ch);
    done = in + c;
  }
  }
  if (!n->replicated) n->last_done = done;
  n->taken[i] = done;
  return done;
}

static int add_row(tpu_df_model *m, const char *name) {
  if (m->nrows >= MAX_ROWS) return MAX_ROWS - 1;
  m->row_names[m->nrows] = tpu_strdup(name);
  if (!m->row_names[m->nrows]) m->oom = true;
  return m->nrows++;
}

void tpu_df_model_destroy(tpu_df_model *m) {
  if (!m) return;
  for (int i = 0; i < m->nn; i++) { tpu_free(m->nd[i].free_t); tpu_free(m->nd[i].taken); }
  for (int i = 0; i < m->nrows; i++) tpu_free(m->row_names[i]);
  tpu_free(m->iv);
  tpu_df_spec_destroy(m->spec);
  tpu_free(m);
}

static int resolved(int64_t v) { return v == TPU_DF_AUTOTUNE ? 1 : (int)v; }

/* {==================================================================
** Building the model: the steps of tpu_df_model_create
** ================================================================== */
/* Elements, files and bytes per element of the source. */
static tpu_status size_source(tpu_df_model *m, char *err, size_t errcap) {
  int64_t n, files, bytes;
  tpu_status st = df_source_size(m->spec, &n, &files, &bytes, err, errcap);
  if (st != TPU_OK) return st;
  m->elem_bytes = bytes;
  m->files = files > n ? n : files;
  m->per_file = (n + m->files - 1) / m->files;
  m->epoch_len = n;
  return TPU_OK;
}

/* Stages that shape the source and the counts and make no node: shard,
** take, skip, filter, repeat, interleave. */
static bool makes_node(df_op op) {
  return op != DF_SHARD && op != DF_TAKE && op != DF_SKIP && op != DF_FILTER && op != DF_REPEAT && op != DF_INTERLEAVE;
}

/* Nodes made for stages [0, i) (build_nodes). */
static int nodes_before(const tpu_df_spec *spec, int i) {
  int k = 0;
  for (int j = 0; j < i; j++) k += makes_node(spec->st[j].op);
  return k;
}

/* Elements left by an index stage from 'len'. */
static int64_t index_stage_len(const df_stage *t, int64_t len) {
  switch (t->op) {
  case DF_SHARD: return len > t->index ? (len - t->index + t->n - 1) / t->n : 0;
  case DF_TAKE: return t->n >= 0 && t->n < len ? t->n : len;
  case DF_SKIP: return t->n < 0 ? 0 : len > t->n ? len - t->n : 0;
  case DF_FILTER: return (int64_t)floor((double)len * t->keep_fraction + 1e-9);
  default: return len;
  }
}

/* An epoch's elements after the shards, the batches it gives and in all;
** the interleave; *iworkers, the index of the workers stage (-1: none). */
static tpu_status count_batches(tpu_df_model *m, int64_t fresh, int *iworkers, char *err, size_t errcap) {
  const tpu_df_spec *spec = m->spec;
  int64_t epochs = 1;
  bool drop = false;
  *iworkers = -1;
  for (int i = 0; i < spec->nst; i++) {
    const df_stage *t = &spec->st[i];
    m->epoch_len = index_stage_len(t, m->epoch_len);
    if (t->op == DF_BATCH) { m->B = t->n; drop = t->drop_remainder; }
    if (t->op == DF_REPEAT) { epochs = t->n; m->below_repeat = 1 + nodes_before(spec, i);   /* the source is node 0 */ }
    if (t->op == DF_INTERLEAVE) { m->cycle = (int)t->n; m->block = t->block; m->par_il = resolved(t->par); }
    if (t->op == DF_WORKERS) *iworkers = i;
  }
  if (m->epoch_len < 1) { snprintf(err, errcap, "shard, take, skip or filter leaves no elements"); return TPU_ERR_CONFIG; }
  m->bpe = drop ? m->epoch_len / m->B : (m->epoch_len + m->B - 1) / m->B;
  if (m->bpe < 1) {
    snprintf(err, errcap, "batch: batch_size %lld with drop_remainder leaves no batch (an epoch has %lld elements)",
             (long long)m->B, (long long)m->epoch_len);
    return TPU_ERR_CONFIG;
  }
  m->iter_batches = epochs == TPU_DF_FOREVER ? INT64_MAX : epochs * m->bpe;
  m->total_batches = epochs == TPU_DF_FOREVER ? INT64_MAX : fresh * m->iter_batches;
  return TPU_OK;
}

/* The node of stage t (not shard, repeat or interleave, which shape the
** source and the counts): synchronous by default; parallel maps, prefetch
** and workers are asynchronous with k servers and room for L elements,
** unless they run inside workers (replicated). */
static void stage_node(tpu_df_model *m, node *nd, const df_stage *t) {
  nd->st = t;
  nd->kind = N_SYNC;
  nd->k = 1;
  switch (t->op) {
  case DF_MAP: {
    int p = resolved(t->par);
    if ((p > 1 || t->async) && !nd->replicated) { nd->kind = N_ASYNC; nd->k = p; nd->L = p; }
    nd->kind_ch = 'M';
    snprintf(nd->name, sizeof nd->name, nd->batch_level ? "map(batch)" : "map");
    break;
  }
  case DF_BATCH: nd->kind = N_BATCH; snprintf(nd->name, sizeof nd->name, "batch"); break;
  case DF_CACHE: nd->kind = N_CACHE; snprintf(nd->name, sizeof nd->name, "cache"); break;
  case DF_SHUFFLE: nd->kind_ch = 'X'; snprintf(nd->name, sizeof nd->name, "shuffle"); break;
  case DF_PREFETCH:
    if (!nd->replicated) { nd->kind = N_ASYNC; nd->k = 1; nd->L = resolved(t->n); }
    nd->kind_ch = 'P';
    snprintf(nd->name, sizeof nd->name, "prefetch");
    break;
  case DF_WORKERS:
    nd->kind = N_ASYNC; nd->k = resolved(t->n); nd->L = nd->k + resolved(t->queue_size);
    nd->gil = t->wkind == DF_WK_THREAD && t->gil;
    nd->kind_ch = 'S';
    snprintf(nd->name, sizeof nd->name, "%s", t->wkind == DF_WK_THREAD ? "thread" : t->wkind == DF_WK_PROCESS ? "process" : "shm-proc");
    if (t->wkind == DF_WK_PROCESS) m->deser_s_per_byte = t->deserialize_s_per_byte;
    if (t->wkind == DF_WK_SHM) m->shm_get_s = t->shm_get_s;
    break;
  default: break;
  }
}

/* The nodes: the source ("read", as parallel as the interleave), then one
** per stage in order. */
static void build_nodes(tpu_df_model *m, int iworkers) {
  node *src = &m->nd[m->nn++];
  src->kind = N_SRC;
  src->k = m->cycle > 1 && m->par_il > 1 ? (m->par_il < m->cycle ? m->par_il : m->cycle) : 1;
  src->L = 2 * (m->cycle > 0 ? m->cycle : 1);
  snprintf(src->name, sizeof src->name, "read");
  src->replicated = iworkers >= 0;
  bool batch_level = false;
  for (int i = 0; i < m->spec->nst; i++) {
    const df_stage *t = &m->spec->st[i];
    if (!makes_node(t->op)) continue;
    node *nd = &m->nd[m->nn++];
    nd->batch_level = batch_level;
    nd->replicated = i < iworkers;
    stage_node(m, nd, t);
    if (t->op == DF_BATCH) batch_level = true;
  }
}

/* The timeline's rows: one per sync node, one per worker of an async node,
** none for nodes that run inside the workers (drawn on their rows), and the
** consumer's. Sets m->oom if a node's server times cannot be allocated. */
static void lay_out_rows(tpu_df_model *m) {
  for (int i = 0; i < m->nn; i++) {
    node *nd = &m->nd[i];
    nd->row0 = nd->replicated ? -1 : m->nrows;
    nd->free_t = tpu_calloc((size_t)nd->k, sizeof *nd->free_t);
    if (!nd->free_t) m->oom = true;
    if (nd->replicated) continue;
    if (nd->k > 1) {
      for (int w = 0; w < nd->k; w++) {
        char nm[40];
        snprintf(nm, sizeof nm, "%s #%d", nd->name, w + 1);
        add_row(m, nm);
      }
    } else {
      add_row(m, nd->name);
    }
  }
  m->consumer_row = add_row(m, "train (consumer)");
}

tpu_status tpu_df_model_create(const tpu_df_spec *spec, const tpu_df_model_options *opt, tpu_df_model **out,
                               char *err, size_t errcap) {
  *out = NULL;
  tpu_df_model_options o = opt ? *opt : tpu_df_model_options_default();
  tpu_status st = df_spec_validate(spec, err, errcap);
  if (st != TPU_OK) return st;
  tpu_df_model *m = tpu_calloc(1, sizeof *m);
  if (!m) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  m->spec = df_spec_clone(spec);
  if (!m->spec) { tpu_free(m); snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  m->timeline_steps = o.timeline_steps;
  m->row_override = -1;
  m->iterator_s = spec->iterator_overhead_s;
  m->element_s = spec->element_overhead_s;
  int iworkers;
  if ((st = size_source(m, err, errcap)) != TPU_OK ||
      (st = count_batches(m, o.epochs > 0 ? o.epochs : spec->epochs, &iworkers, err, errcap)) != TPU_OK) {
    tpu_df_model_destroy(m);
    return st;
  }
  build_nodes(m, iworkers);
  lay_out_rows(m);
  if (m->oom) { tpu_df_model_destroy(m); snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  *out = m;
  return TPU_OK;
}

double tpu_df_model_next(tpu_df_model *m, double request_s) {
  if (m->step >= m->total_batches) return -1;
  int64_t b = m->step;
  m->recording = b < m->timeline_steps;
  if (b % m->iter_batches == 0) {
    /* a fresh iteration (an epoch): made when the consumer asks for its first
    ** batch; nothing of it was read or buffered before */
    rec(m, m->consumer_row, request_s, request_s + m->iterator_s, 'I');
    request_s += m->iterator_s;
    m->epoch_floor = request_s;
  }
  double got = deliver(m, m->nn - 1, b, request_s);
  double extra = m->deser_s_per_byte * (double)(batch_size(m, b) * m->elem_bytes) + m->shm_get_s;
  rec(m, m->consumer_row, request_s, got, 'W');
  rec(m, m->consumer_row, got, got + extra, 'D');
  m->step++;
  return got + extra;
}

void tpu_df_model_restart(tpu_df_model *m) {
  if (m->iter_batches == INT64_MAX || m->step % m->iter_batches == 0) return;
  int64_t next = (m->step / m->iter_batches + 1) * m->iter_batches;
  m->step = next < m->total_batches ? next : m->total_batches;
}

/* {==================================================================
** The plan, for the real-cost run (df_costrun.c): the same chain, items
** and costs, spent there on threads instead of summed here.
** ================================================================== */
tpu_status df_model_plan(const tpu_df_model *m, df_plan *p, char *err, size_t errcap) {
  memset(p, 0, sizeof *p);
  for (int s = 0; s < m->nn; s++) {
    const node *n = &m->nd[s];
    if (n->replicated || (n->st && n->st->op == DF_WORKERS)) {
      snprintf(err, errcap, "a workers stage is not run for real (its processes and serialization are modelled only)");
      return TPU_ERR_CONFIG;
    }
    p->node[s] = (df_plan_node){ .kind = n->kind == N_SRC ? DF_PN_SOURCE : n->kind == N_ASYNC ? DF_PN_ASYNC
                                         : n->kind == N_BATCH ? DF_PN_BATCH : n->kind == N_CACHE ? DF_PN_CACHE : DF_PN_SYNC,
                                 .k = n->k, .L = n->L, .batch_level = n->batch_level };
  }
  if (m->below_repeat > 0) {
    snprintf(err, errcap, "a repeat stage is not run for real; give the epochs as consumer.epochs (--epochs)");
    return TPU_ERR_CONFIG;
  }
  p->n = m->nn;
  p->epoch_len = m->epoch_len;
  p->bpe = m->bpe;
  p->B = m->B;
  p->total_batches = m->total_batches;
  return TPU_OK;
}

double df_model_item_cost(const tpu_df_model *m, int s, int64_t i, double *open_s) {
  const node *n = &m->nd[s];
  *open_s = 0;
  if (n->kind == N_SRC) return src_cost(m, i, open_s);
  if (n->kind == N_CACHE) return n->st->cost_per_element_s * (double)(n->batch_level ? batch_size(m, i) : 1);
  return node_cost(m, n, i);
}

int df_model_source_lane(const tpu_df_model *m, int64_t i) {
  const node *n = &m->nd[0];
  int64_t pos = i % m->epoch_len;
  int64_t file_in_cycle = m->cycle > 1 ? (pos % (m->per_file * m->cycle)) / m->block % m->cycle : 0;
  return (int)(file_in_cycle % n->k);
}

int64_t df_model_batch_elements(const tpu_df_model *m, int64_t b) { return batch_size(m, b); }

int tpu_df_model_rows(const tpu_df_model *m) { return m->nrows; }
const char *tpu_df_model_row_name(const tpu_df_model *m, int row) {
  return row >= 0 && row < m->nrows ? m->row_names[row] : "";
}
const tpu_df_interval *tpu_df_model_intervals(const tpu_df_model *m, size_t *n) { *n = m->niv; return m->iv; }

const char *tpu_df_verdict(double wait_share) {
  if (wait_share >= 0.20) return "highly input-bound: the cores wait for the host pipeline for much of each step";
  if (wait_share >= 0.05) return "moderately input-bound: improving the input pipeline would pay a little";
  return "not input-bound: the host pipeline keeps up with the cores";
}

/* Run with a model already created (records consumer steps too). */
static void run_model(tpu_df_model *m, double step_s, tpu_df_step_fn fn, void *ud, int64_t steps,
                      double *ready, tpu_df_model_result *res) {
  double t = 0, wsum = 0, wmax = 0;
  int64_t k = 0;
  for (; k < steps; k++) {
    int64_t s = m->step;
    double got = tpu_df_model_next(m, t);
    if (got < 0) break;
    double w = got - t;
    wsum += w;
    if (w > wmax) wmax = w;
    if (ready) ready[k] = got;
    double dt = fn ? fn(ud, k) : step_s;
    m->recording = s < m->timeline_steps;
    rec(m, m->consumer_row, got, got + dt, 'T');
    t = got + dt;
  }
  res->total_s = t;
  res->steps = k;
  res->wait_mean_s = k ? wsum / (double)k : 0;
  res->wait_max_s = wmax;
  res->input_bound_share = t > 0 ? wsum / t : 0;
}

tpu_status tpu_df_model_run(const tpu_df_spec *spec, const tpu_df_model_options *opt, double step_s,
                            tpu_df_step_fn fn, void *ud, int64_t steps, double *ready,
                            tpu_df_model_result *res, char *err, size_t errcap) {
  tpu_df_model *m;
  tpu_status st = tpu_df_model_create(spec, opt, &m, err, errcap);
  if (st != TPU_OK) return st;
  run_model(m, step_s, fn, ud, steps, ready, res);
  bool oom = m->oom;
  tpu_df_model_destroy(m);
  if (oom) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  return TPU_OK;
}

/* {==================================================================
** AUTOTUNE: coordinate descent over the autotuned values.
** ================================================================== */
typedef struct knob { int stage; int field; const char *name; } knob;   /* field 0 par, 1 n, 2 queue */

static int64_t *knob_ptr(tpu_df_spec *s, const knob *k) {
  df_stage *t = &s->st[k->stage];
  return k->field == 1 ? &t->n : k->field == 2 ? &t->queue_size : NULL;
}
static int64_t knob_get(tpu_df_spec *s, const knob *k) {
  if (k->field == 0) return s->st[k->stage].par;
  return *knob_ptr(s, k);
}
static void knob_set(tpu_df_spec *s, const knob *k, int64_t v) {
  if (k->field == 0) { s->st[k->stage].par = (int)v; if (s->st[k->stage].op == DF_WORKERS) s->st[k->stage].n = v; }
  else *knob_ptr(s, k) = v;
}

/* Host cores used: each asynchronous worker, plus the consumer's thread. */
static int cores_used(const tpu_df_spec *s) {
  int c = 1, iw = -1;
  for (int i = 0; i < s->nst; i++) if (s->st[i].op == DF_WORKERS) iw = i;
  for (int i = 0; i < s->nst; i++) {
    const df_stage *t = &s->st[i];
    if (i < iw) continue;
    if (t->op == DF_MAP && resolved(t->par) > 1) c += resolved(t->par);
    if (t->op == DF_PREFETCH) c += 1;
    if (t->op == DF_INTERLEAVE && resolved(t->par) > 1) c += resolved(t->par);
    if (t->op == DF_WORKERS) c += (int)resolved(t->n);
  }
  return c;
}

static tpu_status score(const tpu_df_spec *s, const tpu_df_model_options *o, double step_s, int64_t steps,
                        double *wait, char *err, size_t errcap) {
  tpu_df_model_options oo = *o;
  oo.timeline_steps = 0;
  tpu_df_model_result r;
  tpu_status st = tpu_df_model_run(s, &oo, step_s, NULL, NULL, steps, NULL, &r, err, errcap);
  *wait = r.wait_mean_s * (double)r.steps;
  return st;
}

tpu_status tpu_df_model_autotune(tpu_df_spec *spec, const tpu_df_model_options *opt, double step_s, int64_t steps,
                                 char *report, size_t reportcap, char *err, size_t errcap) {
  tpu_df_model_options o = opt ? *opt : tpu_df_model_options_default();
  if (spec->src.kind == TPU_DF_SRC_TFRECORD || spec->src.kind == TPU_DF_SRC_IMAGES) {
    /* the source's sizes found once, not in every trial model */
    int64_t n, files, bytes;
    tpu_status st = df_source_size(spec, &n, &files, &bytes, err, errcap);
    if (st != TPU_OK) return st;
    spec->cost.elements = n; spec->cost.files = files; spec->cost.element_bytes = bytes;
  }
  knob ks[DF_MAX_STAGES * 2];
  int nk = 0;
  static const char *pname[] = { "num_parallel_calls", "buffer_size", "queue_size" };
  for (int i = 0; i < spec->nst; i++) {
    df_stage *t = &spec->st[i];
    if ((t->op == DF_MAP || t->op == DF_INTERLEAVE) && t->par == TPU_DF_AUTOTUNE) ks[nk++] = (knob){ i, 0, pname[0] };
    if (t->op == DF_PREFETCH && t->n == TPU_DF_AUTOTUNE) ks[nk++] = (knob){ i, 1, pname[1] };
    if (t->op == DF_WORKERS && t->n == TPU_DF_AUTOTUNE) ks[nk++] = (knob){ i, 0, "count" };
    if (t->op == DF_WORKERS && t->queue_size == TPU_DF_AUTOTUNE) ks[nk++] = (knob){ i, 2, pname[2] };
  }
  if (reportcap) report[0] = 0;
  for (int i = 0; i < nk; i++) knob_set(spec, &ks[i], 1);
  if (nk == 0) return TPU_OK;
  if (cores_used(spec) > o.host_cores) {
    snprintf(err, errcap, "host.cores: %d cores cannot run this pipeline even with every autotuned value at 1 (it needs %d)",
             o.host_cores, cores_used(spec));
    return TPU_ERR_CONFIG;
  }
  static const int bufs[] = { 1, 2, 4, 8, 16, 32, 64 };
  double best;
  tpu_status st = score(spec, &o, step_s, steps, &best, err, errcap);
  if (st != TPU_OK) return st;
  for (int round = 0; round < 3; round++) {
    bool changed = false;
    for (int i = 0; i < nk; i++) {
      int64_t cur = knob_get(spec, &ks[i]), bestv = cur;
      int ncand = ks[i].field == 0 ? o.host_cores : (int)(sizeof bufs / sizeof bufs[0]);
      for (int c = 0; c < ncand; c++) {
        int64_t v = ks[i].field == 0 ? c + 1 : bufs[c];
        if (v == cur) continue;
        knob_set(spec, &ks[i], v);
        if (cores_used(spec) > o.host_cores) continue;
        double w;
        if ((st = score(spec, &o, step_s, steps, &w, err, errcap)) != TPU_OK) return st;
        /* strictly less wait (beyond rounding) wins; ties keep the smaller value */
        if (w < best - 1e-12 * (1 + best) || (fabs(w - best) <= 1e-12 * (1 + best) && v < bestv)) { best = w; bestv = v; }
      }
      knob_set(spec, &ks[i], bestv);
      if (bestv != cur) changed = true;
    }
    if (!changed) break;
  }
  for (int i = 0; i < nk; i++) {
    size_t l = strlen(report);
    if (l < reportcap)
      snprintf(report + l, reportcap - l, "stages[%d].%s = %lld\n", ks[i].stage, ks[i].name, (long long)knob_get(spec, &ks[i]));
  }
  size_t l = strlen(report);
  if (l < reportcap) snprintf(report + l, reportcap - l, "host cores used: %d of %d\n", cores_used(spec), o.host_cores);
  return TPU_OK;
}
