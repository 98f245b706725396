/*
** df_pipe.c -- the real pipeline: worker threads fill a ring of batch slots
** in batch order; the consumer takes them in order (df_int.h explains how a
** description becomes index arithmetic, which is why the bytes never depend
** on the thread count or the buffer sizes).
**
** Threads: 'threads' workers (the map stages' num_parallel_calls) plus the
** source's loader thread while a gzip file is still being inflated. Slots:
** threads + prefetch + 1 (the one the consumer holds), so a worker can claim
** batch g only when batch g - slots has been released.
*/
#include "datafeed/df_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct slot {
  int64_t g;                 /* absolute batch number held */
  int state;                 /* 0 free, 1 being made, 2 ready */
  tpu_status st;
  int size;
  float *x, *oh;
  int32_t *y;
} slot;

#define MAX_EPOCH_MEMO 4
struct tpu_df {
  tpu_df_spec *spec;
  df_data *gens[2];          /* without cache(): the source read again for each epoch, by parity */
  int64_t gen_epoch[2];      /* epoch whose read gens[i] holds; -1 none */
  bool gen_loading[2];
  bool reread;               /* no cache(): every epoch reads the files again */
  int H, W, C, D, K;         /* element shape and classes (the same in every read) */
  int64_t n;                 /* source elements */
  int nfiles;
  int64_t *file_start;       /* nfiles+1 element offsets (owned copy) */
  char *source;              /* the source's name for messages (owned copy; info.source) */
  tpu_df_info info;
  /* compiled description */
  const df_stage *pre[DF_MAX_STAGES], *post[DF_MAX_STAGES];
  int npre, npost;
  bool has_cache, onehot, fuse_lut;   /* fuse_lut: the first map is normalize of u8 data */
  float lut[256];
  const df_stage *idx_stage[DF_MAX_STAGES];   /* shard/shuffle in order */
  bool idx_frozen[DF_MAX_STAGES];              /* before cache: same in every epoch */
  int nidx;
  int cycle;                 /* interleave cycle_length (0 = none) */
  int64_t block;             /* interleave block_length */
  int64_t epoch_len, bpe, total;  /* elements per epoch, batches per epoch, batches in all */
  int B;
  float *cache;              /* n x d memo of the maps before cache (NULL if none) */
  _Atomic unsigned char *cache_state;  /* 0 empty, 1 being written, 2 valid */
  /* order memo */
  int64_t memo_epoch[MAX_EPOCH_MEMO];
  int64_t *memo_ids[MAX_EPOCH_MEMO];
  int memo_next;
  int64_t *shuf_tmp;
  int32_t *labels;           /* n labels (owned copy), for filter */
  /* threads and ring */
  int threads, prefetch, nslots;
  slot *slots;
  pthread_t *th;
  int nth;
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_done;
  int64_t next_claim, released, head, origin;
  bool stop;
  tpu_status fatal;          /* a worker could not run (out of memory) */
  char err[512];
};

tpu_df_options tpu_df_options_default(void) {
  tpu_df_options o = { -1, -1, 2 };
  return o;
}

/* {==================================================================
** Order of elements in an epoch
** ================================================================== */
static int64_t build_order(tpu_df *df, int64_t epoch, int64_t *ids) {
  /* the file layout is the same in every read (checked when re-reading) */
  int64_t n = 0;
  if (df->cycle > 1 && df->nfiles > 1) {
    /* interleave: groups of 'cycle' files, one element from each in turn */
    for (int g = 0; g < df->nfiles; g += df->cycle) {
      int ge = g + df->cycle < df->nfiles ? g + df->cycle : df->nfiles;
      int64_t pos[4096];
      for (int f = g; f < ge; f++) pos[f - g] = df->file_start[f];
      bool any = true;
      while (any) {       /* block_length elements of each file in turn */
        any = false;
        for (int f = g; f < ge; f++)
          for (int64_t k = 0; k < df->block && pos[f - g] < df->file_start[f + 1]; k++) { ids[n++] = pos[f - g]++; any = true; }
      }
    }
  } else {
    for (int64_t i = 0; i < df->n; i++) ids[i] = i;
    n = df->n;
  }
  for (int k = 0; k < df->nidx; k++) {
    const df_stage *t = df->idx_stage[k];
    if (t->op == DF_SHARD) {
      int64_t m = 0;
      for (int64_t p = 0; p < n; p++) if (p % t->n == t->index) ids[m++] = ids[p];
      n = m;
    } else if (t->op == DF_TAKE) {
      if (t->n >= 0 && t->n < n) n = t->n;
    } else if (t->op == DF_SKIP) {
      int64_t drop = t->n < 0 || t->n > n ? n : t->n;
      memmove(ids, ids + drop, (size_t)(n - drop) * sizeof *ids);
      n -= drop;
    } else if (t->op == DF_FILTER) {
      int64_t m = 0;
      for (int64_t p = 0; p < n; p++) {
        bool in = false;
        for (int j = 0; j < t->nlabels; j++) in |= df->labels[ids[p]] == t->labels[j];
        if (in == t->keep) ids[m++] = ids[p];
      }
      n = m;
    } else {
      uint64_t ekey = df->idx_frozen[k] ? 0 : (uint64_t)epoch;
      df_buffered_shuffle(ids, n, t->n, tpu_mix64(t->seed ^ tpu_mix64(ekey + 1)), df->shuf_tmp);
    }
  }
  return n;
}

/* Under df->mu: the ids of epoch 'e', computed if not memoized. */
static const int64_t *epoch_ids(tpu_df *df, int64_t e) {
  for (int i = 0; i < MAX_EPOCH_MEMO; i++)
    if (df->memo_ids[i] && df->memo_epoch[i] == e) return df->memo_ids[i];
  int i = df->memo_next;
  df->memo_next = (i + 1) % MAX_EPOCH_MEMO;
  build_order(df, e, df->memo_ids[i]);
  df->memo_epoch[i] = e;
  return df->memo_ids[i];
}

/* {==================================================================
** Map functions (on one element, f32, H x W x C row-major)
** ================================================================== */
static uint64_t elem_key(const df_stage *t, uint64_t ekey, int64_t id) {
  return tpu_mix64(t->seed ^ tpu_mix64(ekey * 0x9e3779b97f4a7c15ull ^ (uint64_t)id));
}

static void apply_map(const tpu_df *df, const df_stage *t, uint64_t ekey, int64_t id, float *x, float *scratch) {
  const int H = df->H, W = df->W, C = df->C, D = df->D;
  switch (t->fn) {
  case TPU_DF_MAP_NORMALIZE: {
    const float m = (float)t->args.mean, s = (float)t->args.std;
    for (int i = 0; i < D; i++) x[i] = (x[i] - m) / s;
    break;
  }
  case TPU_DF_MAP_RANDOM_FLIP:
    if (elem_key(t, ekey, id) & 1) {
      for (int y = 0; y < H; y++) {
        float *row = x + (size_t)y * W * C;
        for (int a = 0, b = W - 1; a < b; a++, b--)
          for (int c = 0; c < C; c++) { float tmp = row[a * C + c]; row[a * C + c] = row[b * C + c]; row[b * C + c] = tmp; }
      }
    }
    break;
  case TPU_DF_MAP_RANDOM_CROP: {
    const int p = t->args.padding;
    if (p == 0) break;
    uint64_t r = elem_key(t, ekey, id);
    const int dy = (int)(r % (uint64_t)(2 * p + 1)) - p, dx = (int)((r >> 32) % (uint64_t)(2 * p + 1)) - p;
    memcpy(scratch, x, (size_t)D * sizeof *x);
    for (int y = 0; y < H; y++)
      for (int xx = 0; xx < W; xx++) {
        int sy = y + dy, sx = xx + dx;
        bool in = sy >= 0 && sy < H && sx >= 0 && sx < W;
        for (int c = 0; c < C; c++) x[(y * W + xx) * C + c] = in ? scratch[(sy * W + sx) * C + c] : 0.0f;
      }
    break;
  }
  default:   /* one_hot acts on labels; none is the identity */
    break;
  }
}

/* The source row of 'id' as f32, through the LUT when 'lut'. */
static void source_row(const tpu_df *df, const df_data *d, int64_t id, bool lut, float *x) {
  const size_t D = (size_t)d->d;
  if (d->u8) {
    const uint8_t *s = d->u8 + (size_t)id * D;
    if (lut) { const float *L = df->lut; for (size_t i = 0; i < D; i++) x[i] = L[s[i]]; }
    else for (size_t i = 0; i < D; i++) x[i] = (float)s[i];
  } else {
    memcpy(x, d->f32 + (size_t)id * D, D * sizeof *x);
  }
}

static void make_row(tpu_df *df, const df_data *d, int64_t id, int64_t e, float *x, float *scratch) {
  const size_t D = (size_t)df->D;
  int post0 = 0;
  if (df->npre > 0) {
    unsigned char s = df->cache ? atomic_load_explicit(&df->cache_state[id], memory_order_acquire) : 0;
    if (s == 2) {
      memcpy(x, df->cache + (size_t)id * D, D * sizeof *x);
    } else {
      source_row(df, d, id, df->fuse_lut, x);
      for (int k = df->fuse_lut ? 1 : 0; k < df->npre; k++) apply_map(df, df->pre[k], 0, id, x, scratch);
      unsigned char zero = 0;
      if (df->cache && atomic_compare_exchange_strong(&df->cache_state[id], &zero, 1)) {
        memcpy(df->cache + (size_t)id * D, x, D * sizeof *x);
        atomic_store_explicit(&df->cache_state[id], 2, memory_order_release);
      }
    }
  } else {
    source_row(df, d, id, df->fuse_lut, x);
    post0 = df->fuse_lut ? 1 : 0;
  }
  for (int k = post0; k < df->npost; k++) apply_map(df, df->post[k], (uint64_t)e, id, x, scratch);
}

/* Makes absolute batch g into 's' from the ids given. Called without the lock. */
static tpu_status make_batch(tpu_df *df, df_data *d, const int64_t *ids, int size, int64_t e, slot *s, float *scratch, char *err, size_t errcap) {
  int64_t mx = 0;
  for (int r = 0; r < size; r++) if (ids[r] > mx) mx = ids[r];
  tpu_status st = df_data_wait(d, mx, err, errcap);
  if (st != TPU_OK) return st;
  const size_t D = (size_t)df->D;
  const int K = df->K;
  for (int r = 0; r < size; r++) {
    make_row(df, d, ids[r], e, s->x + (size_t)r * D, scratch);
    s->y[r] = d->labels[ids[r]];
  }
  if (df->onehot) {
    memset(s->oh, 0, (size_t)size * (size_t)K * sizeof *s->oh);
    for (int r = 0; r < size; r++) s->oh[(size_t)r * K + s->y[r]] = 1.0f;
  }
  s->size = size;
  return TPU_OK;
}

/* Under the lock: copies the ids of absolute batch g into 'ids'; returns its size. */
static int batch_ids(tpu_df *df, int64_t g, int64_t *ids, int64_t *epoch) {
  int64_t e = g / df->bpe, b = g % df->bpe;
  const int64_t *all = epoch_ids(df, e);
  int64_t start = b * df->B, size = df->epoch_len - start < df->B ? df->epoch_len - start : df->B;
  memcpy(ids, all + start, (size_t)size * sizeof *ids);
  *epoch = e;
  return (int)size;
}

/* Under df->mu: the source read for epoch e. With cache() it is the one read
** at open. Without, epoch e reads the files again into gens[e % 2], once every
** batch of epoch e-2 (which used that slot) has been released. The lock is
** dropped while the files are opened. On failure returns NULL with err set. */
static df_data *data_for_epoch(tpu_df *df, int64_t e, char *err, size_t errcap) {
  if (!df->reread) return df->gens[0];
  int i = (int)(e % 2);
  for (;;) {
    if (df->gen_epoch[i] == e && !df->gen_loading[i]) return df->gens[i];
    int64_t need = (e - 1) * df->bpe;          /* batches before epoch e-1 all released */
    if (!df->gen_loading[i] && (df->released >= need || df->origin >= need) && !df->stop) break;
    if (df->stop) { snprintf(err, errcap, "stopped"); return NULL; }
    pthread_cond_wait(&df->cv_done, &df->mu);
  }
  df->gen_loading[i] = true;
  df_data *old = df->gens[i];
  df->gens[i] = NULL;
  df->gen_epoch[i] = -1;
  pthread_mutex_unlock(&df->mu);
  df_data_close(old);
  df_data *nd = NULL;
  tpu_status st = df_data_open(&df->spec->src, &nd, err, errcap);
  if (st == TPU_OK && (nd->n != df->n || nd->d != df->D || nd->nfiles != df->nfiles ||
                       memcmp(nd->file_start, df->file_start, ((size_t)df->nfiles + 1) * sizeof *df->file_start))) {
    snprintf(err, errcap, "the source files changed between epochs (%lld elements of %d values, now %lld of %d)",
             (long long)df->n, df->D, (long long)nd->n, nd->d);
    df_data_close(nd);
    nd = NULL;
  }
  pthread_mutex_lock(&df->mu);
  df->gens[i] = nd;
  df->gen_epoch[i] = nd ? e : -1;
  df->gen_loading[i] = false;
  pthread_cond_broadcast(&df->cv_done);
  return nd;
}

static void *worker_main(void *arg) {
  tpu_df *df = arg;
  int64_t *ids = tpu_malloc((size_t)df->B * sizeof *ids);
  float *scratch = tpu_malloc((size_t)df->D * sizeof *scratch);
  char err[512];
  pthread_mutex_lock(&df->mu);
  if (!ids || !scratch) {
    snprintf(df->err, sizeof df->err, "out of memory in a worker thread");
    df->fatal = TPU_ERR_NOMEM;
    pthread_cond_broadcast(&df->cv_done);
  }
  while (!df->stop && ids && scratch) {
    if (df->next_claim < df->total && df->next_claim < df->released + df->nslots) {
      int64_t g = df->next_claim++, e;
      slot *s = &df->slots[g % df->nslots];
      s->g = g; s->state = 1;
      int size = batch_ids(df, g, ids, &e);
      df_data *d = data_for_epoch(df, e, err, sizeof err);
      pthread_mutex_unlock(&df->mu);
      tpu_status st = d ? make_batch(df, d, ids, size, e, s, scratch, err, sizeof err) : TPU_ERR_INPUT;
      pthread_mutex_lock(&df->mu);
      s->st = st;
      s->state = 2;
      if (st != TPU_OK && !df->err[0]) snprintf(df->err, sizeof df->err, "%s", err);
      pthread_cond_broadcast(&df->cv_done);
      continue;
    }
    pthread_cond_wait(&df->cv_work, &df->mu);
  }
  pthread_mutex_unlock(&df->mu);
  tpu_free(ids);
  tpu_free(scratch);
  return NULL;
}

static void stop_threads(tpu_df *df) {
  pthread_mutex_lock(&df->mu);
  df->stop = true;
  pthread_cond_broadcast(&df->cv_work);
  pthread_cond_broadcast(&df->cv_done);
  pthread_mutex_unlock(&df->mu);
  for (int i = 0; i < df->nth; i++) pthread_join(df->th[i], NULL);
  df->nth = 0;
  df->stop = false;
}

static tpu_status start_threads(tpu_df *df) {
  for (int i = 0; i < df->threads; i++) {
    if (pthread_create(&df->th[i], NULL, worker_main, df) != 0) {
      stop_threads(df);
      snprintf(df->err, sizeof df->err, "cannot start worker thread %d", i);
      return TPU_ERR_RUNTIME;
    }
    df->nth = i + 1;
  }
  return TPU_OK;
}

/* {==================================================================
** Opening: the steps of tpu_df_open
** ================================================================== */
static tpu_status out_of_memory(char *err, size_t errcap) {
  snprintf(err, errcap, "out of memory");
  return TPU_ERR_NOMEM;
}

/* Opens the source (generation 0) and takes its shape and file bounds. */
static tpu_status open_source(tpu_df *df, char *err, size_t errcap) {
  tpu_status st = df_data_open(&df->spec->src, &df->gens[0], err, errcap);
  if (st != TPU_OK) return st;
  const df_data *d = df->gens[0];
  df->gen_epoch[0] = 0;
  df->gen_epoch[1] = -1;
  df->H = d->h; df->W = d->w; df->C = d->c; df->D = d->d; df->K = d->classes; df->n = d->n;
  df->nfiles = d->nfiles;
  df->file_start = tpu_malloc(((size_t)d->nfiles + 1) * sizeof *df->file_start);
  if (!df->file_start) return out_of_memory(err, errcap);
  memcpy(df->file_start, d->file_start, ((size_t)d->nfiles + 1) * sizeof *df->file_start);
  if (!(df->source = tpu_strdup(d->img_path))) return out_of_memory(err, errcap);
  return TPU_OK;
}

/* Compiles the stage list: maps before a cache() into pre[] (run once),
** after it into post[] (every epoch); shards and shuffles into the index
** stages, frozen when before the cache; the batch size, interleave cycle and
** repeat count; and what the stages ask of the host: *threads (the widest
** map or workers stage) and *prefetch (the sum of the prefetch buffers). */
static tpu_status compile_stages(tpu_df *df, const tpu_df_options *o, int *threads, int *prefetch, int64_t *epochs,
                                 char *err, size_t errcap) {
  const tpu_df_spec *spec = df->spec;
  const df_data *d = df->gens[0];
  int icache = -1;
  for (int i = 0; i < spec->nst; i++) if (spec->st[i].op == DF_CACHE) icache = i;
  df->has_cache = icache >= 0;
  df->reread = !df->has_cache;
  for (int i = 0; i < spec->nst; i++) {
    const df_stage *t = &spec->st[i];
    switch (t->op) {
    case DF_MAP:
      if (i < icache) df->pre[df->npre++] = t; else df->post[df->npost++] = t;
      if (t->fn == TPU_DF_MAP_ONE_HOT) df->onehot = true;
      if ((t->fn == TPU_DF_MAP_RANDOM_CROP || t->fn == TPU_DF_MAP_RANDOM_FLIP) && (d->h < 1 || d->w < 1)) {
        snprintf(err, errcap, "stages[%d]: %s needs images with a height and width", i, df_map_name(t->fn));
        return TPU_ERR_CONFIG;
      }
      { int p = t->par == TPU_DF_AUTOTUNE ? o->autotune_threads : t->par; if (p > *threads) *threads = p; }
      break;
    case DF_WORKERS: { int p = t->n == TPU_DF_AUTOTUNE ? o->autotune_threads : (int)t->n; if (p > *threads) *threads = p; break; }
    case DF_SHARD: case DF_SHUFFLE: case DF_TAKE: case DF_SKIP: case DF_FILTER:
      df->idx_stage[df->nidx] = t;
      df->idx_frozen[df->nidx++] = i < icache;
      break;
    case DF_BATCH: df->B = (int)t->n; break;
    case DF_PREFETCH: *prefetch += t->n == TPU_DF_AUTOTUNE ? 2 : (int)t->n; break;
    case DF_INTERLEAVE: df->cycle = (int)t->n; df->block = t->block; break;
    case DF_REPEAT: *epochs = t->n; break;
    default: break;
    }
  }
  return TPU_OK;
}

/* A normalize first on 8-bit pixels becomes a 256-entry table, applied as the
** pixels are read. */
static void fuse_normalize(tpu_df *df) {
  const df_stage *first = df->npre > 0 ? df->pre[0] : df->npost > 0 ? df->post[0] : NULL;
  df->fuse_lut = df->gens[0]->u8 && first && first->fn == TPU_DF_MAP_NORMALIZE;
  if (df->fuse_lut) {
    const float m = (float)first->args.mean, s = (float)first->args.std;
    for (int v = 0; v < 256; v++) df->lut[v] = ((float)v - m) / s;
  }
}

/* The first epoch's element order (remembered with room for later ones) and
** the batches an epoch gives; a shard or a batch that leaves nothing is an
** error. */
static tpu_status first_epoch(tpu_df *df, char *err, size_t errcap) {
  const int64_t n = df->gens[0]->n;
  for (int i = 0; i < MAX_EPOCH_MEMO; i++) {
    df->memo_ids[i] = tpu_malloc((size_t)n * sizeof(int64_t));
    if (!df->memo_ids[i]) return out_of_memory(err, errcap);
    df->memo_epoch[i] = -1;
  }
  df->shuf_tmp = tpu_malloc((size_t)n * sizeof(int64_t));
  df->labels = tpu_malloc((size_t)n * sizeof *df->labels + 1);
  if (!df->shuf_tmp || !df->labels) return out_of_memory(err, errcap);
  memcpy(df->labels, df->gens[0]->labels, (size_t)n * sizeof *df->labels);
  df->epoch_len = build_order(df, 0, df->memo_ids[0]);
  df->memo_epoch[0] = 0;
  df->memo_next = 1;
  if (df->epoch_len < 1) {
    snprintf(err, errcap, "shard, take, skip or filter leaves no elements (the source has %lld)", (long long)n);
    return TPU_ERR_CONFIG;
  }
  bool drop = false;
  for (int i = 0; i < df->spec->nst; i++) if (df->spec->st[i].op == DF_BATCH) drop = df->spec->st[i].drop_remainder;
  df->bpe = drop ? df->epoch_len / df->B : (df->epoch_len + df->B - 1) / df->B;
  if (df->bpe < 1) {
    snprintf(err, errcap, "batch: batch_size %d with drop_remainder leaves no batch (an epoch has %lld elements)", df->B,
             (long long)df->epoch_len);
    return TPU_ERR_CONFIG;
  }
  return TPU_OK;
}

/* The cache of the pre-cache maps' output, the batch slots, the thread handles. */
static tpu_status alloc_buffers(tpu_df *df, char *err, size_t errcap) {
  const df_data *d = df->gens[0];
  if (df->has_cache && df->npre > 0) {
    df->cache = tpu_malloc((size_t)d->n * (size_t)d->d * sizeof(float));
    df->cache_state = tpu_calloc((size_t)d->n, 1);
    if (!df->cache || !df->cache_state) return out_of_memory(err, errcap);
  }
  df->slots = tpu_calloc((size_t)df->nslots, sizeof *df->slots);
  if (!df->slots) return out_of_memory(err, errcap);
  for (int i = 0; i < df->nslots; i++) {
    slot *s = &df->slots[i];
    s->g = -1;
    s->x = tpu_malloc((size_t)df->B * (size_t)d->d * sizeof(float));
    s->y = tpu_malloc((size_t)df->B * sizeof(int32_t));
    s->oh = df->onehot ? tpu_malloc((size_t)df->B * (size_t)d->classes * sizeof(float)) : NULL;
    if (!s->x || !s->y || (df->onehot && !s->oh)) return out_of_memory(err, errcap);
  }
  df->th = tpu_calloc((size_t)(df->threads ? df->threads : 1), sizeof *df->th);
  return df->th ? TPU_OK : out_of_memory(err, errcap);
}

/* {==================================================================
** Public API
** ================================================================== */
void tpu_df_close(tpu_df *df) {
  if (!df) return;
  if (df->th) stop_threads(df);
  if (df->slots)
    for (int i = 0; i < df->nslots; i++) { tpu_free(df->slots[i].x); tpu_free(df->slots[i].y); tpu_free(df->slots[i].oh); }
  tpu_free(df->slots);
  tpu_free(df->th);
  for (int i = 0; i < MAX_EPOCH_MEMO; i++) tpu_free(df->memo_ids[i]);
  tpu_free(df->shuf_tmp);
  tpu_free(df->labels);
  tpu_free(df->cache);
  tpu_free((void *)df->cache_state);
  df_data_close(df->gens[0]);
  df_data_close(df->gens[1]);
  tpu_free(df->file_start);
  tpu_free(df->source);
  tpu_df_spec_destroy(df->spec);
  pthread_mutex_destroy(&df->mu);
  pthread_cond_destroy(&df->cv_work);
  pthread_cond_destroy(&df->cv_done);
  tpu_free(df);
}

tpu_status tpu_df_open(const tpu_df_spec *spec, const tpu_df_options *opt, tpu_df **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_df_options o = opt ? *opt : tpu_df_options_default();
  tpu_status st = df_spec_validate(spec, err, errcap);
  if (st != TPU_OK) return st;
  tpu_df *df = tpu_calloc(1, sizeof *df);
  if (!df) return out_of_memory(err, errcap);
  pthread_mutex_init(&df->mu, NULL);
  pthread_cond_init(&df->cv_work, NULL);
  pthread_cond_init(&df->cv_done, NULL);
  df->spec = df_spec_clone(spec);
  if (!df->spec) { st = out_of_memory(err, errcap); goto fail; }
  int threads = 0, pf = 0;
  int64_t epochs = 1;
  if ((st = open_source(df, err, errcap)) != TPU_OK) goto fail;
  if ((st = compile_stages(df, &o, &threads, &pf, &epochs, err, errcap)) != TPU_OK) goto fail;
  fuse_normalize(df);
  df->threads = o.threads >= 0 ? o.threads : threads;
  df->prefetch = o.prefetch >= 0 ? o.prefetch : pf;
  if (df->threads > 256 || df->prefetch > 4096) {
    st = TPU_ERR_CONFIG;
    snprintf(err, errcap, "threads (max 256) or prefetch (max 4096) out of range");
    goto fail;
  }
  df->nslots = df->threads > 0 ? df->threads + df->prefetch + 1 : 1;
  if ((st = first_epoch(df, err, errcap)) != TPU_OK) goto fail;
  /* fresh iterations (consumer.epochs) follow one another; epoch numbers run
  ** on, so each iteration reshuffles as tf.data's reshuffle_each_iteration */
  if (epochs != TPU_DF_FOREVER) epochs = epochs > INT64_MAX / df->spec->epochs ? TPU_DF_FOREVER : epochs * df->spec->epochs;
  df->total = epochs == TPU_DF_FOREVER ? INT64_MAX : (epochs > INT64_MAX / df->bpe ? INT64_MAX : epochs * df->bpe);
  if ((st = alloc_buffers(df, err, errcap)) != TPU_OK) goto fail;
  const df_data *d = df->gens[0];
  df->info = (tpu_df_info){ .elements = df->epoch_len, .batches_per_epoch = df->bpe, .epochs = epochs,
                            .features = d->d, .height = d->h, .width = d->w, .channels = d->c,
                            .classes = d->classes, .batch_size = df->B, .source = df->source };
  if ((st = start_threads(df)) != TPU_OK) { snprintf(err, errcap, "%s", df->err); goto fail; }
  *out = df;
  return TPU_OK;
fail:
  tpu_df_close(df);
  return st;
}

void tpu_df_get_info(const tpu_df *df, tpu_df_info *out) { *out = df->info; }
const char *tpu_df_errmsg(const tpu_df *df) { return df ? df->err : "no pipeline"; }

tpu_status tpu_df_next(tpu_df *df, tpu_df_batch *out) {
  memset(out, 0, sizeof *out);
  out->features = df->D;
  out->classes = df->K;
  pthread_mutex_lock(&df->mu);
  df->released = df->head;
  int64_t g = df->head;
  out->step = g - df->origin;
  if (g >= df->total) { pthread_mutex_unlock(&df->mu); return TPU_OK; }
  slot *s = &df->slots[g % df->nslots];
  tpu_status st;
  if (df->threads == 0) {
    int64_t *ids = tpu_malloc((size_t)df->B * sizeof *ids);
    float *scratch = tpu_malloc((size_t)df->D * sizeof *scratch);
    if (!ids || !scratch) {
      tpu_free(ids); tpu_free(scratch);
      pthread_mutex_unlock(&df->mu);
      snprintf(df->err, sizeof df->err, "out of memory");
      return TPU_ERR_NOMEM;
    }
    int64_t e;
    int size = batch_ids(df, g, ids, &e);
    df_data *d = data_for_epoch(df, e, df->err, sizeof df->err);
    pthread_mutex_unlock(&df->mu);
    st = d ? make_batch(df, d, ids, size, e, s, scratch, df->err, sizeof df->err) : TPU_ERR_INPUT;
    tpu_free(ids); tpu_free(scratch);
    pthread_mutex_lock(&df->mu);
    s->g = g;
  } else {
    pthread_cond_broadcast(&df->cv_work);
    pthread_cond_broadcast(&df->cv_done);     /* a worker may wait for releases to re-read the source */
    while (!(s->g == g && s->state == 2) && df->fatal == TPU_OK) pthread_cond_wait(&df->cv_done, &df->mu);
    st = s->g == g && s->state == 2 ? s->st : df->fatal;
  }
  if (st == TPU_OK) {
    df->head = g + 1;
    out->epoch = g / df->bpe;
    out->index = g % df->bpe;
    out->size = s->size;
    out->x = s->x;
    out->y = s->y;
    out->y_onehot = df->onehot ? s->oh : NULL;
  }
  pthread_mutex_unlock(&df->mu);
  return st;
}

tpu_status tpu_df_seek(tpu_df *df, int64_t epoch, int64_t index) {
  if (epoch < 0 || index < 0 || index >= df->bpe || (df->info.epochs != TPU_DF_FOREVER && epoch >= df->info.epochs)) {
    snprintf(df->err, sizeof df->err, "seek: position epoch %lld batch %lld is past the end (%lld epochs of %lld batches)",
             (long long)epoch, (long long)index, (long long)df->info.epochs, (long long)df->bpe);
    return TPU_ERR_CONFIG;
  }
  stop_threads(df);
  int64_t g = epoch * df->bpe + index;
  df->head = df->next_claim = df->released = df->origin = g;
  for (int i = 0; i < df->nslots; i++) { df->slots[i].state = 0; df->slots[i].g = -1; }
  df->err[0] = 0;
  df->fatal = TPU_OK;
  return start_threads(df);
}
