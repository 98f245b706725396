/*
** df_spec.c -- pipeline descriptions: the builders of df.h, validation of
** stage order, and the JSON format (docs/DATAFEED.md). Every JSON error
** names the file, line:column and the field ("stages[2].buffer_size").
*/
#include "datafeed/df_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *df_op_name(df_op op) {
  static const char *n[] = { "shuffle", "map", "batch", "cache", "prefetch", "interleave",
                             "shard", "repeat", "workers", "take", "skip", "filter" };
  return (unsigned)op < sizeof n / sizeof n[0] ? n[op] : "?";
}
const char *df_map_name(tpu_df_map_fn fn) {
  static const char *n[] = { "normalize", "one_hot", "random_flip", "random_crop", "none" };
  return (unsigned)fn < sizeof n / sizeof n[0] ? n[fn] : "?";
}

tpu_df_source tpu_df_source_default(void) {
  tpu_df_source s;
  memset(&s, 0, sizeof s);
  s.kind = TPU_DF_SRC_FASHION_MNIST;
  return s;
}

int64_t df_source_known_elements(const tpu_df_source *src) {
  switch (src->kind) {
  case TPU_DF_SRC_FASHION_MNIST: case TPU_DF_SRC_MNIST: return src->test_split ? 10000 : 60000;
  case TPU_DF_SRC_SYNTHETIC: return src->n;
  case TPU_DF_SRC_CIFAR10: return src->test_split ? 10000 : 50000;
  default: return 0;
  }
}

tpu_status df_source_size(const tpu_df_spec *s, int64_t *elements, int64_t *files, int64_t *bytes, char *err,
                          size_t errcap) {
  const tpu_df_source *src = &s->src;
  const df_source_costs *c = &s->cost;
  *elements = c->elements ? c->elements : df_source_known_elements(src);
  *files = c->files;
  *bytes = c->element_bytes;
  tpu_status st = TPU_OK;
  if (src->kind == TPU_DF_SRC_TFRECORD && (!*elements || !*files || !*bytes)) {
    char **names;
    int nn;
    int64_t recs;
    uint64_t total;
    if ((st = df_tfrecord_files(src, &names, &nn, err, errcap)) != TPU_OK) return st;
    df_free_names(names, nn);
    if (!*files) *files = nn;
    if ((!*elements || !*bytes) && (st = df_tfrecord_count(src, &recs, &total, err, errcap)) != TPU_OK) return st;
    if (!*elements) *elements = recs;
    if (!*bytes && recs > 0) *bytes = (int64_t)((total + (uint64_t)recs / 2) / (uint64_t)recs);
  }
  if (src->kind == TPU_DF_SRC_IMAGES && (!*elements || !*files || !*bytes)) {
    df_img_index ix;
    if ((st = df_images_index(src, &ix, err, errcap)) != TPU_OK) return st;
    if (!*elements) *elements = ix.n;
    if (!*files) *files = ix.n;       /* a file per image */
    if (!*bytes && ix.n > 0) *bytes = (int64_t)((ix.bytes + (uint64_t)ix.n / 2) / (uint64_t)ix.n);
    df_images_index_free(&ix);
  }
  if (*elements < 1) {
    snprintf(err, errcap, "source.elements: the model needs the number of elements for a %s source; set source.elements",
             src->kind == TPU_DF_SRC_CSV ? "csv" : src->kind == TPU_DF_SRC_NPY ? "npy"
             : src->kind == TPU_DF_SRC_TFRECORD ? "tfrecord" : "idx");
    return TPU_ERR_CONFIG;
  }
  if (*files < 1) *files = 1;
  if (*bytes < 1) {     /* u8 pixels (a CIFAR-10 record has its label byte); int32 token ids */
    *bytes = src->kind == TPU_DF_SRC_SYNTHETIC ? (int64_t)src->height * src->width * src->channels * (src->vocab ? 4 : 1)
           : src->kind == TPU_DF_SRC_FASHION_MNIST || src->kind == TPU_DF_SRC_MNIST ? 784
           : src->kind == TPU_DF_SRC_CIFAR10 ? 3073
           : src->kind == TPU_DF_SRC_TFRECORD ? (int64_t)src->height * src->width * (src->channels ? src->channels : 1) + 16
           : 0;
  }
  return TPU_OK;
}

static tpu_status fail(tpu_df_spec *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tpu_status fail(tpu_df_spec *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return TPU_ERR_CONFIG;
}

tpu_status tpu_df_spec_create(tpu_df_spec **out) {
  tpu_df_spec *s = tpu_calloc(1, sizeof *s);
  *out = s;
  if (!s) return TPU_ERR_NOMEM;
  s->src = tpu_df_source_default();
  s->step_time_s = 0.01;
  s->steps = 20;
  s->host_cores = 8;
  s->epochs = 1;
  return TPU_OK;
}

void tpu_df_spec_destroy(tpu_df_spec *s) {
  if (!s) return;
  for (int i = 0; i < 6; i++) tpu_free(s->src_strs[i]);
  df_free_names(s->src_files, s->src.nfiles);
  df_free_names(s->src_classes, s->src.nclass_names);
  tpu_free(s->json_text);
  tpu_free(s->name);
  tpu_free(s);
}

const char *tpu_df_spec_errmsg(const tpu_df_spec *s) { return s ? s->err : "no description"; }

static char *dup_or_null(const char *p, bool *oom) {
  if (!p) return NULL;
  char *d = tpu_strdup(p);
  if (!d) *oom = true;
  return d;
}

tpu_status tpu_df_spec_set_source(tpu_df_spec *s, const tpu_df_source *src) {
  bool oom = false;
  char *c[6] = { dup_or_null(src->dir, &oom), dup_or_null(src->images, &oom),
                 dup_or_null(src->labels, &oom), dup_or_null(src->path, &oom),
                 dup_or_null(src->image_feature, &oom), dup_or_null(src->label_feature, &oom) };
  int nf = src->files ? src->nfiles : 0, nc = src->class_names ? src->nclass_names : 0;
  char **f = nf ? tpu_calloc((size_t)nf, sizeof *f) : NULL, **cn = nc ? tpu_calloc((size_t)nc, sizeof *cn) : NULL;
  if ((nf && !f) || (nc && !cn)) oom = true;
  for (int i = 0; i < nf && f; i++) f[i] = dup_or_null(src->files[i], &oom);
  for (int i = 0; i < nc && cn; i++) cn[i] = dup_or_null(src->class_names[i], &oom);
  if (oom) {
    for (int i = 0; i < 6; i++) tpu_free(c[i]);
    df_free_names(f, nf);
    df_free_names(cn, nc);
    return TPU_ERR_NOMEM;
  }
  for (int i = 0; i < 6; i++) { tpu_free(s->src_strs[i]); s->src_strs[i] = c[i]; }
  df_free_names(s->src_files, s->src.nfiles);
  df_free_names(s->src_classes, s->src.nclass_names);
  s->src_files = f;
  s->src_classes = cn;
  s->src = *src;
  s->src.dir = c[0]; s->src.images = c[1]; s->src.labels = c[2]; s->src.path = c[3];
  s->src.image_feature = c[4]; s->src.label_feature = c[5];
  s->src.files = (const char *const *)f; s->src.nfiles = nf;
  s->src.class_names = (const char *const *)cn; s->src.nclass_names = nc;
  if (!(src->validation_split >= 0 && src->validation_split < 1))
    return fail(s, "source.validation_split: expected a share in (0, 1), or 0 for none, got %g", src->validation_split);
  if (src->validation_split > 0 && src->kind != TPU_DF_SRC_IMAGES && src->kind != TPU_DF_SRC_TFRECORD)
    return fail(s, "source.validation_split: only an images or tfrecord source is split");
  if (src->kind == TPU_DF_SRC_IMAGES) {
    if (!src->dir) return fail(s, "source.dir: an images source needs the directory of its class folders");
    if (src->height < 0 || src->width < 0 || src->height > 65536 || src->width > 65536 ||
        (src->channels != 0 && src->channels != 1 && src->channels != 3 && src->channels != 4))
      return fail(s, "source.image_size: expected [height, width] of 1..65536 and 1 (grayscale), 3 (rgb) or 4 (rgba) "
                  "channels");
    int64_t h = src->height ? src->height : 256, w = src->width ? src->width : 256, ch = src->channels ? src->channels : 3;
    if (h * w * ch > (1 << 24)) return fail(s, "source.image_size: %lldx%lldx%lld is more than 2^24 values per image",
                                            (long long)h, (long long)w, (long long)ch);
    if ((!src->no_shuffle || src->validation_split > 0) && src->seed > 0xffffffffu)
      return fail(s, "source.seed: numpy's RandomState takes seeds 0..2^32-1, got %llu", (unsigned long long)src->seed);
  }
  if (src->kind == TPU_DF_SRC_TFRECORD && src->validation_split > 0 && src->seed > 0xffffffffu)
    return fail(s, "source.seed: numpy's RandomState takes seeds 0..2^32-1, got %llu", (unsigned long long)src->seed);
  if (src->kind == TPU_DF_SRC_TFRECORD) {
    if (!nf && !src->path) return fail(s, "source.files: a TFRecord source needs its files (a list, a directory or a glob pattern)");
    if (src->height < 1 || src->width < 1 || src->channels < 0 || (int64_t)src->height * src->width * (src->channels ? src->channels : 1) > (1 << 24))
      return fail(s, "source.shape: a TFRecord source of raw images needs [height, width, channels] with at most 2^24 values");
  }
  if (src->kind == TPU_DF_SRC_SYNTHETIC) {
    if (src->n < 1 || src->n > ((int64_t)1 << 31)) return fail(s, "source.n: expected 1..2^31 elements, got %lld", (long long)src->n);
    if (src->height < 1 || src->width < 1 || src->channels < 1 ||
        (int64_t)src->height * src->width * src->channels > (1 << 24))
      return fail(s, "source.shape: expected positive height, width, channels with at most 2^24 values");
    if (src->classes < 2 || src->classes > 65536) return fail(s, "source.classes: expected 2..65536, got %d", src->classes);
    if (src->vocab < 0 || src->vocab > (1 << 24))   /* f32 holds every id exactly */
      return fail(s, "source.vocab: expected 1..16777216 token ids (0: images), got %d", src->vocab);
  }
  return TPU_OK;
}

tpu_df_spec *df_spec_clone(const tpu_df_spec *s) {
  tpu_df_spec *c = tpu_malloc(sizeof *c);
  if (!c) return NULL;
  *c = *s;
  memset(c->src_strs, 0, sizeof c->src_strs);
  c->src_files = NULL; c->src.nfiles = 0;
  c->src_classes = NULL; c->src.nclass_names = 0;
  c->json_text = NULL; c->name = NULL;
  bool oom = false;
  c->json_text = dup_or_null(s->json_text, &oom);
  c->name = dup_or_null(s->name, &oom);
  if (oom || tpu_df_spec_set_source(c, &s->src) == TPU_ERR_NOMEM) { tpu_df_spec_destroy(c); return NULL; }
  return c;
}

static df_stage *push(tpu_df_spec *s, df_op op) {
  if (s->nst >= DF_MAX_STAGES) { fail(s, "stages: at most %d stages", DF_MAX_STAGES); return NULL; }
  df_stage *t = &s->st[s->nst];
  memset(t, 0, sizeof *t);
  t->op = op;
  t->par = 1;
  return t;
}
#define PUSH(op) df_stage *t = push(s, op); if (!t) return TPU_ERR_CONFIG

static bool par_ok(int p) { return p == TPU_DF_AUTOTUNE || (p >= 1 && p <= 256); }

tpu_status tpu_df_spec_shard(tpu_df_spec *s, int num_shards, int index) {
  if (num_shards < 1 || num_shards > 65536) return fail(s, "shard: num_shards: expected 1..65536, got %d", num_shards);
  if (index < 0 || index >= num_shards) return fail(s, "shard: index: expected 0..%d, got %d", num_shards - 1, index);
  PUSH(DF_SHARD);
  t->n = num_shards; t->index = index; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_shuffle(tpu_df_spec *s, int64_t buffer_size, uint64_t seed) {
  if (buffer_size < 1 || buffer_size > ((int64_t)1 << 31)) return fail(s, "shuffle: buffer_size: expected 1..2^31, got %lld", (long long)buffer_size);
  PUSH(DF_SHUFFLE);
  t->n = buffer_size; t->seed = seed; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_map(tpu_df_spec *s, tpu_df_map_fn fn, const tpu_df_map_args *args, int num_parallel_calls) {
  if ((unsigned)fn > TPU_DF_MAP_NONE) return fail(s, "map: fn: unknown function %d", (int)fn);
  if (num_parallel_calls != 0 && !par_ok(num_parallel_calls))
    return fail(s, "map: num_parallel_calls: expected 0 (none: a plain map), 1..256 or autotune, got %d", num_parallel_calls);
  tpu_df_map_args a = { 0.0, 255.0, 0 };
  if (args) a = *args;
  if (fn == TPU_DF_MAP_NORMALIZE && (!isfinite(a.mean) || !isfinite(a.std) || a.std == 0))
    return fail(s, "map: normalize: std must be a finite non-zero number and mean finite");
  if (fn == TPU_DF_MAP_RANDOM_CROP && (a.padding < 0 || a.padding > 1024))
    return fail(s, "map: random_crop: padding: expected 0..1024, got %d", a.padding);
  PUSH(DF_MAP);
  t->fn = fn; t->args = a;
  t->par = num_parallel_calls ? num_parallel_calls : 1;
  t->async = num_parallel_calls != 0;
  t->seed = 0x5eed0000u + (uint64_t)s->nst;
  s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_batch(tpu_df_spec *s, int batch_size, bool drop_remainder) {
  if (batch_size < 1 || batch_size > (1 << 20)) return fail(s, "batch: batch_size: expected 1..1048576, got %d", batch_size);
  PUSH(DF_BATCH);
  t->n = batch_size; t->drop_remainder = drop_remainder; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_cache(tpu_df_spec *s) { PUSH(DF_CACHE); s->nst++; return TPU_OK; }
tpu_status tpu_df_spec_prefetch(tpu_df_spec *s, int buffer_size) {
  if (!par_ok(buffer_size)) return fail(s, "prefetch: buffer_size: expected 1..256 or autotune, got %d", buffer_size);
  PUSH(DF_PREFETCH);
  t->n = buffer_size; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_interleave(tpu_df_spec *s, int cycle_length, int num_parallel_calls) {
  if (cycle_length < 1 || cycle_length > 4096) return fail(s, "interleave: cycle_length: expected 1..4096, got %d", cycle_length);
  if (!par_ok(num_parallel_calls)) return fail(s, "interleave: num_parallel_calls: expected 1..256 or autotune, got %d", num_parallel_calls);
  PUSH(DF_INTERLEAVE);
  t->n = cycle_length; t->par = num_parallel_calls; t->block = 1; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_interleave_block(tpu_df_spec *s, int block_length) {
  if (s->nst == 0 || s->st[s->nst - 1].op != DF_INTERLEAVE) return fail(s, "block_length: the last stage is not an interleave");
  if (block_length < 1 || block_length > 1000000)
    return fail(s, "interleave: block_length: expected 1..1000000, got %d", block_length);
  s->st[s->nst - 1].block = block_length;
  return TPU_OK;
}
tpu_status tpu_df_spec_repeat(tpu_df_spec *s, int64_t count) {
  if (count != TPU_DF_FOREVER && (count < 1 || count > ((int64_t)1 << 40)))
    return fail(s, "repeat: count: expected -1 (forever) or >= 1, got %lld", (long long)count);
  PUSH(DF_REPEAT);
  t->n = count; s->nst++;
  return TPU_OK;
}

tpu_status tpu_df_spec_take(tpu_df_spec *s, int64_t count) {
  if (count < -1 || count > ((int64_t)1 << 40)) return fail(s, "take: count: expected -1 (all) or 0..2^40, got %lld", (long long)count);
  PUSH(DF_TAKE);
  t->n = count; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_skip(tpu_df_spec *s, int64_t count) {
  if (count < -1 || count > ((int64_t)1 << 40)) return fail(s, "skip: count: expected -1 (all) or 0..2^40, got %lld", (long long)count);
  PUSH(DF_SKIP);
  t->n = count; s->nst++;
  return TPU_OK;
}
tpu_status tpu_df_spec_filter_labels(tpu_df_spec *s, const int32_t *labels, int nlabels, bool keep) {
  if (nlabels < 1 || nlabels > DF_FILTER_MAX_LABELS)
    return fail(s, "filter: expected 1..%d labels, got %d", DF_FILTER_MAX_LABELS, nlabels);
  for (int i = 0; i < nlabels; i++)
    if (labels[i] < 0 || labels[i] > 65535) return fail(s, "filter: labels: expected 0..65535, got %d", (int)labels[i]);
  PUSH(DF_FILTER);
  memcpy(t->labels, labels, (size_t)nlabels * sizeof *labels);
  t->nlabels = nlabels; t->keep = keep; t->keep_fraction = 1; s->nst++;
  return TPU_OK;
}

/* The physical range of every modeled cost, checked at load time (JSON
** and tpu_df_spec_set_cost) with the key named, and stated in
** docs/DATAFEED.md: a time above an hour per element, call or step, a
** per-byte cost above a second or a bandwidth below a byte per second
** describes no real host, and inside these ranges every sum the model
** makes stays finite. A new cost is one row here. */
static const df_cost_range COST_RANGES[] = {
  /* key                      lo  hi     unit          zero_ok_below zero_means */
  { "cost_per_call_s",         0, 3600,  "s",          0, NULL },
  { "cost_per_element_s",      0, 3600,  "s",          0, NULL },
  { "open_latency_s",          0, 3600,  "s",          0, NULL },
  { "read_latency_s",          0, 3600,  "s",          0, NULL },
  { "decode_cost_per_element_s", 0, 3600, "s",         0, NULL },
  { "read_bandwidth_bytes_per_s", 0, 1e13, "bytes/s",  1, "no limit" },
  { "serialize_s_per_byte",    0, 1,     "s/byte",     0, NULL },
  { "deserialize_s_per_byte",  0, 1,     "s/byte",     0, NULL },
  { "shm_s_per_byte",          0, 1,     "s/byte",     0, NULL },
  { "shm_get_s",               0, 3600,  "s",          0, NULL },
  { "step_time_s",             0, 3600,  "s",          0, NULL },
  { "iterator_overhead_s",     0, 3600,  "s",          0, NULL },
  { "element_overhead_s",      0, 3600,  "s",          0, NULL },
};
const df_cost_range *df_cost_range_of(const char *key) {
  for (size_t i = 0; i < sizeof COST_RANGES / sizeof COST_RANGES[0]; i++)
    if (!strcmp(COST_RANGES[i].key, key)) return &COST_RANGES[i];
  return NULL;
}

tpu_status tpu_df_spec_set_cost(tpu_df_spec *s, const char *key, double v) {
  if (!isfinite(v) || v < 0) return fail(s, "%s: expected a finite number >= 0, got %g", key, v);
  const df_cost_range *r = df_cost_range_of(key);
  if (r && (v > r->hi || (v > 0 && v < r->zero_ok_below)))
    return fail(s, "%s: expected %s%s%sa number in [%g, %g] %s, got %g", key, r->zero_ok_below > 0 ? "0 (" : "",
                r->zero_ok_below > 0 ? r->zero_means : "", r->zero_ok_below > 0 ? ") or " : "",
                r->zero_ok_below > 0 ? r->zero_ok_below : r->lo, r->hi, r->unit, v);
  if (s->nst == 0) {
    df_source_costs *c = &s->cost;
    if (!strcmp(key, "open_latency_s")) c->open_latency_s = v;
    else if (!strcmp(key, "read_latency_s")) c->read_latency_s = v;
    else if (!strcmp(key, "read_bandwidth_bytes_per_s")) c->read_bandwidth_bytes_per_s = v;
    else if (!strcmp(key, "files")) { if (v < 1 || v > 1e6 || v != floor(v)) return fail(s, "files: expected an integer 1..1000000"); c->files = (int64_t)v; }
    else if (!strcmp(key, "elements")) { if (v > 1e9 || v != floor(v)) return fail(s, "elements: expected an integer 0..1e9"); c->elements = (int64_t)v; }
    else if (!strcmp(key, "element_bytes")) { if (v > 1e10 || v != floor(v)) return fail(s, "element_bytes: expected an integer 0..1e10"); c->element_bytes = (int64_t)v; }
    else if (!strcmp(key, "decode_cost_per_element_s")) c->decode_cost_per_element_s = v;
    else return fail(s, "unknown source cost '%s'; allowed: open_latency_s, read_latency_s, read_bandwidth_bytes_per_s, "
                     "decode_cost_per_element_s, files, elements, element_bytes", key);
    return TPU_OK;
  }
  df_stage *t = &s->st[s->nst - 1];
  if (!strcmp(key, "cost_per_call_s")) t->cost_per_call_s = v;
  else if (!strcmp(key, "cost_per_element_s")) t->cost_per_element_s = v;
  else if (t->op == DF_FILTER && !strcmp(key, "keep_fraction")) {
    if (v > 1) return fail(s, "keep_fraction: expected a share 0..1, got %g", v);
    t->keep_fraction = v;
  }
  else if (t->op == DF_WORKERS && !strcmp(key, "serialize_s_per_byte")) t->serialize_s_per_byte = v;
  else if (t->op == DF_WORKERS && !strcmp(key, "deserialize_s_per_byte")) t->deserialize_s_per_byte = v;
  else if (t->op == DF_WORKERS && !strcmp(key, "shm_s_per_byte")) t->shm_s_per_byte = v;
  else if (t->op == DF_WORKERS && !strcmp(key, "shm_get_s")) t->shm_get_s = v;
  else return fail(s, "unknown cost '%s' for a %s stage; allowed: cost_per_call_s, cost_per_element_s%s", key,
                   df_op_name(t->op), t->op == DF_WORKERS ? ", serialize_s_per_byte, deserialize_s_per_byte, shm_s_per_byte, shm_get_s" : "");
  return TPU_OK;
}

tpu_status tpu_df_spec_set_epochs(tpu_df_spec *s, int64_t epochs) {
  if (epochs < 1 || epochs > 1000000) return fail(s, "epochs: expected 1..1000000, got %lld", (long long)epochs);
  s->epochs = epochs;
  return TPU_OK;
}

int64_t tpu_df_spec_repeat_count(const tpu_df_spec *s) {
  for (int i = 0; i < s->nst; i++) if (s->st[i].op == DF_REPEAT) return s->st[i].n;
  return 0;
}

void tpu_df_spec_reseed(tpu_df_spec *s, uint64_t seed) {
  for (int i = 0; i < s->nst; i++) s->st[i].seed = tpu_mix64(seed ^ tpu_mix64((uint64_t)i + 1));
}

void tpu_df_spec_consumer(const tpu_df_spec *s, double *step_time_s, int64_t *steps, int *host_cores) {
  *step_time_s = s->step_time_s;
  *steps = s->steps;
  *host_cores = s->host_cores;
}

int tpu_df_spec_batch_size(const tpu_df_spec *s) {
  for (int i = 0; i < s->nst; i++) if (s->st[i].op == DF_BATCH) return (int)s->st[i].n;
  return 0;
}

tpu_status tpu_df_spec_set_batch_size(tpu_df_spec *s, int n) {
  if (n < 1 || n > (1 << 30)) return TPU_ERR_CONFIG;
  for (int i = 0; i < s->nst; i++)
    if (s->st[i].op == DF_BATCH) { s->st[i].n = n; return TPU_OK; }
  return TPU_ERR_CONFIG;
}

tpu_status df_spec_validate(const tpu_df_spec *s, char *err, size_t errcap) {
  int ibatch = -1, icache = -1, irepeat = -1, iworkers = -1;   /* several shuffles are fine */
  for (int i = 0; i < s->nst; i++) {
    const df_stage *t = &s->st[i];
    int *slot = t->op == DF_BATCH ? &ibatch : t->op == DF_CACHE ? &icache
              : t->op == DF_REPEAT ? &irepeat : t->op == DF_WORKERS ? &iworkers : NULL;
    if (slot) {
      if (*slot >= 0) { snprintf(err, errcap, "stages[%d]: a second %s stage; at most one is supported", i, df_op_name(t->op)); return TPU_ERR_CONFIG; }
      *slot = i;
    }
    if ((t->op == DF_SHUFFLE || t->op == DF_SHARD || t->op == DF_INTERLEAVE || t->op == DF_TAKE || t->op == DF_SKIP ||
         t->op == DF_FILTER) && ibatch >= 0) {
      snprintf(err, errcap, "stages[%d]: %s after batch is not supported; place it before batch", i, df_op_name(t->op));
      return TPU_ERR_CONFIG;
    }
    if (t->op == DF_INTERLEAVE && i > 0) {
      snprintf(err, errcap, "stages[%d]: interleave reads the source files, so it must be the first stage", i);
      return TPU_ERR_CONFIG;
    }
    if (irepeat >= 0 && t->op != DF_REPEAT && t->op != DF_PREFETCH && t->op != DF_MAP && t->op != DF_WORKERS) {
      snprintf(err, errcap, "stages[%d]: %s after repeat is not supported (a batch never spans two epochs); place repeat after batch", i, df_op_name(t->op));
      return TPU_ERR_CONFIG;
    }
    if (t->op == DF_MAP && t->fn == TPU_DF_MAP_NORMALIZE && s->src.kind == TPU_DF_SRC_SYNTHETIC && s->src.vocab) {
      snprintf(err, errcap, "stages[%d]: map normalize would scale the source's token ids (source.vocab %d) into "
               "fractions, which an embedding cannot look up; leave it out", i, s->src.vocab);
      return TPU_ERR_CONFIG;
    }
    if (t->op == DF_WORKERS && ibatch < 0) {
      snprintf(err, errcap, "stages[%d]: workers produce whole batches; place it after batch", i);
      return TPU_ERR_CONFIG;
    }
  }
  if (ibatch < 0) { snprintf(err, errcap, "stages: a batch stage is required"); return TPU_ERR_CONFIG; }
  if (irepeat >= 0 && irepeat < ibatch) {
    snprintf(err, errcap, "stages[%d]: repeat before batch is not supported (a batch never spans two epochs); place repeat after batch", irepeat);
    return TPU_ERR_CONFIG;
  }
  return TPU_OK;
}

/* {==================================================================
** JSON
** ================================================================== */
/* The document (base.h's JSON loader) and the readers parse_source and
** parse_stage use: members named by path ("field 'stages[2].seed'"),
** unknown ones called keys. */
typedef struct jctx { tpu_json *doc; } jctx;

#define TRY(x) do { tpu_status st_ = (x); if (st_ != TPU_OK) return st_; } while (0)

#define jerr(c, path, ...) tpu_json_fail((c)->doc, (path), __VA_ARGS__)
#define jtype tpu_json_type
#define OBJ(c, o, path) (&(tpu_json_obj){ (c)->doc, (o), (path), NULL })

static tpu_status check_keys(const jctx *c, const char *path, json_t *obj, const char *const *allowed) {
  return tpu_json_keys(OBJ(c, obj, path), allowed);
}
/* An integer in [lo, hi], or "autotune" (TPU_DF_AUTOTUNE) when autotune_ok. */
static tpu_status get_int(const jctx *c, json_t *obj, const char *path, const char *key, int64_t lo, int64_t hi,
                          bool autotune_ok, bool required, int64_t *out) {
  return tpu_json_int_or(OBJ(c, obj, path), key, lo, hi, autotune_ok ? "autotune" : NULL, TPU_DF_AUTOTUNE,
                         required ? TPU_JSON_REQUIRED : 0, out);
}
/* Costs: seconds, bytes or bytes/s, each in a range checked at load time
** (df_cost_range). */
static tpu_status get_num(const jctx *c, json_t *obj, const char *path, const char *key, double *out) {
  const df_cost_range *r = df_cost_range_of(key);
  TRY(tpu_json_num(OBJ(c, obj, path), key, r ? r->lo : 0, r ? r->hi : INFINITY, 0, out));
  if (r && r->zero_ok_below > 0 && *out > 0 && *out < r->zero_ok_below)
    return tpu_json_fail_member(OBJ(c, obj, path), key, "expected 0 (%s) or a number in [%g, %g] %s, got %g",
                                r->zero_means, r->zero_ok_below, r->hi, r->unit, *out);
  return TPU_OK;
}
static tpu_status get_str(const jctx *c, json_t *obj, const char *path, const char *key, const char **out) {
  return tpu_json_str(OBJ(c, obj, path), key, 0, out);
}
static tpu_status get_bool(const jctx *c, json_t *obj, const char *path, const char *key, bool *out) {
  return tpu_json_bool(OBJ(c, obj, path), key, out);
}

/* A TFRecord source's "files": a list of paths (read in that order), or one
** string: a file, a directory or a glob pattern; and its "shape". */
static tpu_status tfrecord_files(const jctx *c, json_t *o, tpu_df_source *src, const char *files[256]) {
  json_t *f = json_object_get(o, "files");
  if (!f) return tpu_json_missing(OBJ(c, o, "source"), "files", "a list of TFRecord files, a directory or a glob pattern");
  if (json_is_string(f)) src->path = json_string_value(f);
  else if (json_is_array(f) && json_array_size(f) >= 1 && json_array_size(f) <= 256) {
    for (size_t i = 0; i < json_array_size(f); i++) {
      char p[64];
      snprintf(p, sizeof p, "source.files[%zu]", i);
      if (!json_is_string(json_array_get(f, i))) return jerr(c, p, "expected a file path (a string), got %s", jtype(json_array_get(f, i)));
      files[i] = json_string_value(json_array_get(f, i));
    }
    src->files = files;
    src->nfiles = (int)json_array_size(f);
  } else return jerr(c, "source.files", "expected a list of 1 to 256 TFRecord file paths, or a directory or glob pattern (a string)");
  if (!json_object_get(o, "shape"))
    return tpu_json_missing(OBJ(c, o, "source"), "shape", "[height, width, channels] of the raw uint8 images");
  return TPU_OK;
}

/* The model's file count of a TFRecord source: the files it names. */
static tpu_status tfrecord_count(const jctx *c, tpu_df_spec *s) {
  char **names, e[512];
  int n;
  if (df_tfrecord_files(&s->src, &names, &n, e, sizeof e) != TPU_OK) return jerr(c, "source.files", "%s", e);
  df_free_names(names, n);
  s->cost.files = n;
  return TPU_OK;
}

/* "path.key", for an error about one key. */
static const char *subpath(char p[64], const char *path, const char *key) {
  snprintf(p, 64, "%s.%s", path, key);
  return p;
}

/* The keys only some kinds take (the others are common or harmless). */
static tpu_status kind_keys(const jctx *c, json_t *o, tpu_df_source_kind kind) {
  static const struct { const char *key; unsigned kinds; const char *hint; } only[] = {
    { "image_size", 1u << TPU_DF_SRC_IMAGES, "an images source (a tfrecord source takes shape)" },
    { "color_mode", 1u << TPU_DF_SRC_IMAGES, "an images source (a tfrecord source takes shape)" },
    { "interpolation", 1u << TPU_DF_SRC_IMAGES, "an images source" },
    { "class_names", 1u << TPU_DF_SRC_IMAGES, "an images source" },
    { "shuffle", 1u << TPU_DF_SRC_IMAGES, "an images source (a shuffle stage shuffles the others)" },
    { "follow_links", 1u << TPU_DF_SRC_IMAGES, "an images source" },
    { "resize", 1u << TPU_DF_SRC_TFRECORD, "a tfrecord source (an images source always resizes to image_size)" },
    { "validation_split", 1u << TPU_DF_SRC_IMAGES | 1u << TPU_DF_SRC_TFRECORD, "an images or tfrecord source" },
    { "subset", 1u << TPU_DF_SRC_IMAGES | 1u << TPU_DF_SRC_TFRECORD, "an images or tfrecord source" },
    { "vocab", 1u << TPU_DF_SRC_SYNTHETIC, "a synthetic source (token ids in [0, vocab))" },
    { "shape", ~(1u << TPU_DF_SRC_IMAGES), "sources other than images (an images source takes image_size and color_mode)" },
    { "split", ~(1u << TPU_DF_SRC_IMAGES | 1u << TPU_DF_SRC_TFRECORD),
      "the mnist, fashion-mnist and cifar10 sources (images and tfrecord take validation_split and subset, as Keras)" },
  };
  char p[64];
  for (size_t i = 0; i < sizeof only / sizeof only[0]; i++)
    if (json_object_get(o, only[i].key) && !(only[i].kinds & (1u << kind)))
      return jerr(c, subpath(p, "source", only[i].key), "is for %s", only[i].hint);
  return TPU_OK;
}

/* An images source's own keys, named as image_dataset_from_directory's
** arguments: image_size, color_mode, interpolation, class_names, shuffle,
** follow_links. */
static tpu_status images_keys(const jctx *c, json_t *o, tpu_df_source *src, const char *names[256]) {
  char p[64];
  json_t *sz = json_object_get(o, "image_size");
  src->height = src->width = 256;
  if (sz) {
    if (!json_is_array(sz) || json_array_size(sz) != 2 || !json_is_integer(json_array_get(sz, 0)) ||
        !json_is_integer(json_array_get(sz, 1)) || json_integer_value(json_array_get(sz, 0)) < 1 ||
        json_integer_value(json_array_get(sz, 1)) < 1 || json_integer_value(json_array_get(sz, 0)) > 65536 ||
        json_integer_value(json_array_get(sz, 1)) > 65536)
      return jerr(c, "source.image_size", "expected [height, width], two integers in 1..65536");
    src->height = (int)json_integer_value(json_array_get(sz, 0));
    src->width = (int)json_integer_value(json_array_get(sz, 1));
  }
  const char *mode = NULL, *interp = NULL;
  TRY(get_str(c, o, "source", "color_mode", &mode));
  src->channels = 3;
  if (mode) {
    src->channels = !strcmp(mode, "grayscale") ? 1 : !strcmp(mode, "rgb") ? 3 : !strcmp(mode, "rgba") ? 4 : 0;
    if (!src->channels) return jerr(c, "source.color_mode", "expected \"grayscale\", \"rgb\" or \"rgba\", got '%s'", mode);
  }
  TRY(get_str(c, o, "source", "interpolation", &interp));
  if (interp && strcmp(interp, "bilinear"))
    return jerr(c, "source.interpolation", "only \"bilinear\" (Keras' default, tf.image.resize's) is implemented, got '%s'",
                interp);
  json_t *cn = json_object_get(o, "class_names");
  if (cn) {
    if (!json_is_array(cn) || json_array_size(cn) < 1 || json_array_size(cn) > 256)
      return jerr(c, "source.class_names", "expected a list of 1 to 256 class folder names");
    for (size_t i = 0; i < json_array_size(cn); i++) {
      json_t *v = json_array_get(cn, i);
      snprintf(p, sizeof p, "source.class_names[%zu]", i);
      if (!json_is_string(v) || !*json_string_value(v) || strchr(json_string_value(v), '/'))
        return jerr(c, p, "expected a folder name (a non-empty string without '/')");
      names[i] = json_string_value(v);
    }
    src->class_names = names;
    src->nclass_names = (int)json_array_size(cn);
  }
  bool shuffle = true;
  TRY(get_bool(c, o, "source", "shuffle", &shuffle));
  src->no_shuffle = !shuffle;
  TRY(get_bool(c, o, "source", "follow_links", &src->follow_links));
  return TPU_OK;
}

/* Keras' validation_split and subset (and the seed they need), for the
** images and tfrecord sources. */
static tpu_status split_keys(const jctx *c, json_t *o, tpu_df_source *src) {
  const char *subset = NULL;
  TRY(get_str(c, o, "source", "subset", &subset));
  json_t *vs = json_object_get(o, "validation_split");
  if (vs) {
    if (!json_is_number(vs) || !(json_number_value(vs) > 0 && json_number_value(vs) < 1))
      return jerr(c, "source.validation_split", "expected a share between 0 and 1 (exclusive)");
    src->validation_split = json_number_value(vs);
  }
  if (!vs != !subset)
    return vs ? tpu_json_missing(OBJ(c, o, "source"), "subset", "\"training\" or \"validation\" (with validation_split, as Keras)")
              : tpu_json_missing(OBJ(c, o, "source"), "validation_split", "a share in (0, 1) (with subset, as Keras)");
  if (subset && strcmp(subset, "training") && strcmp(subset, "validation"))
    return jerr(c, "source.subset", "expected \"training\" or \"validation\", got '%s'", subset);
  src->test_split = subset && !strcmp(subset, "validation");
  bool shuffled = src->kind == TPU_DF_SRC_TFRECORD || !src->no_shuffle;
  if (vs && shuffled && !json_object_get(o, "seed"))
    return tpu_json_missing(OBJ(c, o, "source"), "seed", "an integer in 0..4294967295: the split's shuffle (Keras asks for it "
                            "too, so that the training and validation subsets do not overlap)");
  int64_t v = 0;
  TRY(get_int(c, o, "source", "seed", 0, 0xffffffffLL, false, false, &v));
  src->seed = (uint64_t)v;
  return TPU_OK;
}

/* The model's sizes of a TFRecord or images source, found once here (the
** files' record headers, the folders' listings), unless given. */
static tpu_status resolve_sizes(const jctx *c, tpu_df_spec *s) {
  if (s->src.kind != TPU_DF_SRC_TFRECORD && s->src.kind != TPU_DF_SRC_IMAGES) return TPU_OK;
  int64_t n, files, bytes;
  char e[512];
  if (df_source_size(s, &n, &files, &bytes, e, sizeof e) != TPU_OK)
    return jerr(c, s->src.kind == TPU_DF_SRC_TFRECORD ? "source.files" : "source.dir", "%s", e);
  s->cost.elements = n;
  s->cost.files = files;
  s->cost.element_bytes = bytes;
  return TPU_OK;
}

static tpu_status parse_source(const jctx *c, json_t *o, tpu_df_spec *s) {
  static const char *const keys[] = { "kind", "split", "dir", "images", "labels", "path", "n", "shape", "classes",
    "vocab", "seed", "files", "image_feature", "label_feature", "resize", "image_size", "color_mode", "interpolation",
    "class_names", "shuffle", "follow_links", "validation_split", "subset", "elements", "element_bytes",
    "open_latency_s", "read_latency_s", "read_bandwidth_bytes_per_s", "decode_cost_per_element_s", NULL };
  if (!json_is_object(o)) return jerr(c, "source", "expected an object, got %s", jtype(o));
  TRY(check_keys(c, "source", o, keys));
  tpu_df_source src = tpu_df_source_default();
  const char *kind = NULL, *split = NULL;
  TRY(get_str(c, o, "source", "kind", &kind));
  static const char *const kinds[] = { "fashion-mnist", "mnist", "idx", "csv", "npy", "synthetic", "cifar10", "tfrecord",
                                       "images" };
  if (!kind)
    return tpu_json_missing(OBJ(c, o, "source"), "kind", "one of fashion-mnist, mnist, idx, csv, npy, synthetic, cifar10, "
                            "tfrecord, images");
  int k = -1;
  for (int i = 0; i < 9; i++) if (!strcmp(kind, kinds[i])) k = i;
  if (k < 0)
    return jerr(c, "source.kind", "expected one of fashion-mnist, mnist, idx, csv, npy, synthetic, cifar10, tfrecord, "
                "images, got '%s'", kind);
  src.kind = (tpu_df_source_kind)k;
  TRY(kind_keys(c, o, src.kind));
  TRY(get_str(c, o, "source", "split", &split));
  if (split && strcmp(split, "train") && strcmp(split, "test"))
    return jerr(c, "source.split", "expected \"train\" or \"test\", got '%s'", split);
  src.test_split = split && !strcmp(split, "test");
  TRY(get_str(c, o, "source", "dir", &src.dir));
  TRY(get_str(c, o, "source", "images", &src.images));
  TRY(get_str(c, o, "source", "labels", &src.labels));
  TRY(get_str(c, o, "source", "path", &src.path));
  TRY(get_str(c, o, "source", "image_feature", &src.image_feature));
  TRY(get_str(c, o, "source", "label_feature", &src.label_feature));
  if (src.kind == TPU_DF_SRC_MNIST && !src.dir) return tpu_json_missing(OBJ(c, o, "source"), "dir", "the directory of the MNIST IDX files");
  if (src.kind == TPU_DF_SRC_CIFAR10 && !src.dir)
    return tpu_json_missing(OBJ(c, o, "source"), "dir", "the directory of the CIFAR-10 binary files");
  if (src.kind == TPU_DF_SRC_IMAGES && !src.dir)
    return tpu_json_missing(OBJ(c, o, "source"), "dir", "the directory of the class folders of images");
  if ((src.kind == TPU_DF_SRC_IDX || src.kind == TPU_DF_SRC_NPY) && (!src.images || !src.labels))
    return tpu_json_missing(OBJ(c, o, "source"), src.images ? "labels" : "images", "a file path");
  if (src.kind == TPU_DF_SRC_CSV && !src.path) return tpu_json_missing(OBJ(c, o, "source"), "path", "a .csv file or a directory of them");
  int64_t v = 0;
  json_t *shape = json_object_get(o, "shape");
  if (shape) {
    if (!json_is_array(shape) || json_array_size(shape) < 1 || json_array_size(shape) > 3)
      return jerr(c, "source.shape", "expected [height, width, channels] (1 to 3 positive integers)");
    int dims[3] = { 1, 1, 1 };
    for (size_t i = 0; i < json_array_size(shape); i++) {
      json_t *d = json_array_get(shape, i);
      char p[64];
      snprintf(p, sizeof p, "source.shape[%zu]", i);
      if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > 65536)
        return jerr(c, p, "expected an integer in 1..65536");
      dims[i] = (int)json_integer_value(d);
    }
    src.height = dims[0]; src.width = dims[1]; src.channels = dims[2];
  }
  const char *files[256], *names[256];
  if (src.kind == TPU_DF_SRC_TFRECORD) {
    TRY(tfrecord_files(c, o, &src, files));
    const char *rs = NULL;
    TRY(get_str(c, o, "source", "resize", &rs));
    if (rs && strcmp(rs, "bilinear") && strcmp(rs, "none"))
      return jerr(c, "source.resize", "expected \"bilinear\" (tf.image.resize's default) or \"none\", got '%s'", rs);
    src.resize = rs && !strcmp(rs, "bilinear");
  }
  if (src.kind == TPU_DF_SRC_IMAGES) TRY(images_keys(c, o, &src, names));
  if (src.kind == TPU_DF_SRC_IMAGES || src.kind == TPU_DF_SRC_TFRECORD) TRY(split_keys(c, o, &src));
  if (src.kind == TPU_DF_SRC_SYNTHETIC) {
    TRY(get_int(c, o, "source", "n", 1, (int64_t)1 << 31, false, true, &src.n));
    if (!shape) return tpu_json_missing(OBJ(c, o, "source"), "shape", "[height, width, channels]");
    TRY(get_int(c, o, "source", "classes", 2, 65536, false, true, &v));
    src.classes = (int)v;
    v = 0;
    TRY(get_int(c, o, "source", "vocab", 1, 1 << 24, false, false, &v));
    src.vocab = (int)v;
    v = 0;
    TRY(get_int(c, o, "source", "seed", 0, INT64_MAX, false, false, &v));
    src.seed = (uint64_t)v;
  } else {
    v = 0;
    TRY(get_int(c, o, "source", "classes", 2, 65536, false, false, &v));
    src.classes = (int)v;
  }
  tpu_status st = tpu_df_spec_set_source(s, &src);
  if (st == TPU_ERR_CONFIG) return jerr(c, "source", "%s", s->err);
  TRY(st);
  df_source_costs *cc = &s->cost;
  if (src.kind == TPU_DF_SRC_TFRECORD) TRY(tfrecord_count(c, s));
  else TRY(get_int(c, o, "source", "files", 1, 1000000, false, false, &cc->files));
  TRY(get_int(c, o, "source", "elements", 1, 1000000000, false, false, &cc->elements));
  TRY(get_int(c, o, "source", "element_bytes", 1, (int64_t)1 << 40, false, false, &cc->element_bytes));
  TRY(get_num(c, o, "source", "open_latency_s", &cc->open_latency_s));
  TRY(get_num(c, o, "source", "read_latency_s", &cc->read_latency_s));
  TRY(get_num(c, o, "source", "read_bandwidth_bytes_per_s", &cc->read_bandwidth_bytes_per_s));
  TRY(get_num(c, o, "source", "decode_cost_per_element_s", &cc->decode_cost_per_element_s));
  return resolve_sizes(c, s);
}

/* Stages of the JSON description. Each parser reads its stage's keys (the
** caller has checked that no other key is there) and adds the stage to s;
** the caller then reads the costs every stage may carry. */
typedef tpu_status (*stage_parser)(const jctx *c, json_t *o, const char *path, tpu_df_spec *s);


/* What a tpu_df_spec_* builder returned: its own errors name the stage. */
static tpu_status added(const jctx *c, const char *path, const tpu_df_spec *s, tpu_status st) {
  return st == TPU_ERR_CONFIG ? jerr(c, path, "%s", s->err) : st;
}

static tpu_status parse_shuffle(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t size = 0, seed = 0;
  TRY(get_int(c, o, path, "buffer_size", 1, (int64_t)1 << 31, false, true, &size));
  TRY(get_int(c, o, path, "seed", 0, INT64_MAX, false, false, &seed));
  return added(c, path, s, tpu_df_spec_shuffle(s, size, (uint64_t)seed));
}

/* A map's function, and the arguments normalize and random_crop take. */
static tpu_status map_args(const jctx *c, json_t *o, const char *path, int *fn, tpu_df_map_args *args) {
  const char *name = NULL;
  char p[64];
  TRY(get_str(c, o, path, "fn", &name));
  if (!name) return jerr(c, path, "missing key 'fn' (normalize, one_hot, random_flip, random_crop, none)");
  *fn = -1;
  for (int j = 0; j <= TPU_DF_MAP_NONE; j++) if (!strcmp(name, df_map_name((tpu_df_map_fn)j))) *fn = j;
  if (*fn < 0)
    return jerr(c, subpath(p, path, "fn"), "expected one of normalize, one_hot, random_flip, random_crop, none, got '%s'",
                name);
  /* (x - mean) / std of 8-bit pixels or CSV features stays finite in f32 */
  TRY(tpu_json_num(OBJ(c, o, path), "mean", -1e6, 1e6, 0, &args->mean));
  TRY(tpu_json_num(OBJ(c, o, path), "std", -1e6, 1e6, 0, &args->std));
  if (fabs(args->std) < 1e-6)
    return jerr(c, subpath(p, path, "std"), "expected a number in [-1e+06, -1e-06] or [1e-06, 1e+06], got %g", args->std);
  int64_t pad = 0;
  TRY(get_int(c, o, path, "padding", 0, 1024, false, *fn == TPU_DF_MAP_RANDOM_CROP, &pad));
  args->padding = (int)pad;
  return TPU_OK;
}

static tpu_status parse_map(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int fn = TPU_DF_MAP_NONE;
  tpu_df_map_args args = { 0.0, 255.0, 0 };
  int64_t par = 0, seed = 0;      /* 0: no num_parallel_calls, a plain map */
  TRY(map_args(c, o, path, &fn, &args));
  TRY(get_int(c, o, path, "num_parallel_calls", 1, 256, true, false, &par));
  TRY(added(c, path, s, tpu_df_spec_map(s, (tpu_df_map_fn)fn, &args, (int)par)));
  if (json_object_get(o, "seed")) {
    TRY(get_int(c, o, path, "seed", 0, INT64_MAX, false, false, &seed));
    s->st[s->nst - 1].seed = (uint64_t)seed;
  }
  return TPU_OK;
}

static tpu_status parse_batch(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t size = 0;
  bool drop = false;
  TRY(get_int(c, o, path, "batch_size", 1, 1 << 20, false, true, &size));
  TRY(get_bool(c, o, path, "drop_remainder", &drop));
  return added(c, path, s, tpu_df_spec_batch(s, (int)size, drop));
}

static tpu_status parse_cache(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  (void)o;
  return added(c, path, s, tpu_df_spec_cache(s));
}

static tpu_status parse_prefetch(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t size = 0;
  TRY(get_int(c, o, path, "buffer_size", 1, 256, true, true, &size));
  return added(c, path, s, tpu_df_spec_prefetch(s, (int)size));
}

static tpu_status parse_interleave(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t cycle = 0, par = 1, block = 1;
  TRY(get_int(c, o, path, "cycle_length", 1, 4096, false, true, &cycle));
  TRY(get_int(c, o, path, "num_parallel_calls", 1, 256, true, false, &par));
  TRY(get_int(c, o, path, "block_length", 1, 1000000, false, false, &block));
  TRY(added(c, path, s, tpu_df_spec_interleave(s, (int)cycle, (int)par)));
  return added(c, path, s, tpu_df_spec_interleave_block(s, (int)block));
}

static tpu_status parse_shard(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t shards = 0, index = 0;
  TRY(get_int(c, o, path, "num_shards", 1, 65536, false, true, &shards));
  TRY(get_int(c, o, path, "index", 0, shards - 1, false, true, &index));
  return added(c, path, s, tpu_df_spec_shard(s, (int)shards, (int)index));
}

static tpu_status parse_repeat(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t count = TPU_DF_FOREVER;
  char p[64];
  TRY(get_int(c, o, path, "count", -1, (int64_t)1 << 40, false, false, &count));
  if (count == 0) return jerr(c, subpath(p, path, "count"), "expected -1 (forever) or >= 1, got 0");
  return added(c, path, s, tpu_df_spec_repeat(s, count));
}

static tpu_status parse_take(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t count = 0;
  TRY(get_int(c, o, path, "count", -1, (int64_t)1 << 40, false, true, &count));
  return added(c, path, s, tpu_df_spec_take(s, count));
}

static tpu_status parse_skip(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  int64_t count = 0;
  TRY(get_int(c, o, path, "count", -1, (int64_t)1 << 40, false, true, &count));
  return added(c, path, s, tpu_df_spec_skip(s, count));
}

/* filter's predicate: exactly one of label_in / label_not_in, a list of
** 1..16 labels; keep_fraction (model only) is the share the model keeps. */
static tpu_status parse_filter(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  json_t *in = json_object_get(o, "label_in"), *out = json_object_get(o, "label_not_in");
  char p[64];
  if (!in == !out) return jerr(c, path, "expected exactly one predicate: label_in or label_not_in (a list of labels)");
  json_t *list = in ? in : out;
  subpath(p, path, in ? "label_in" : "label_not_in");
  if (!json_is_array(list) || json_array_size(list) < 1 || json_array_size(list) > DF_FILTER_MAX_LABELS)
    return jerr(c, p, "expected a list of 1..%d labels", DF_FILTER_MAX_LABELS);
  int32_t labels[DF_FILTER_MAX_LABELS];
  for (size_t i = 0; i < json_array_size(list); i++) {
    json_t *v = json_array_get(list, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535)
      return jerr(c, p, "expected labels, integers in 0..65535");
    labels[i] = (int32_t)json_integer_value(v);
  }
  TRY(added(c, path, s, tpu_df_spec_filter_labels(s, labels, (int)json_array_size(list), in != NULL)));
  double f = 1;
  json_t *kf = json_object_get(o, "keep_fraction");
  if (kf && (!json_is_number(kf) || json_number_value(kf) < 0 || json_number_value(kf) > 1))
    return jerr(c, subpath(p, path, "keep_fraction"), "expected a share 0..1");
  if (kf) f = json_number_value(kf);
  s->st[s->nst - 1].keep_fraction = f;
  return TPU_OK;
}

/* Workers (threads, processes or shared-memory processes) have no builder
** of their own: the stage is filled in here. */
static tpu_status parse_workers(const jctx *c, json_t *o, const char *path, tpu_df_spec *s) {
  const char *wk = NULL;
  char p[64];
  TRY(get_str(c, o, path, "kind", &wk));
  if (!wk) return jerr(c, path, "missing key 'kind' (thread, process, shared_memory)");
  df_worker_kind w = !strcmp(wk, "thread") ? DF_WK_THREAD : !strcmp(wk, "process") ? DF_WK_PROCESS
                   : !strcmp(wk, "shared_memory") ? DF_WK_SHM : (df_worker_kind)-1;
  if ((int)w < 0) return jerr(c, subpath(p, path, "kind"), "expected thread, process or shared_memory, got '%s'", wk);
  int64_t cnt = 1, q = 1;
  TRY(get_int(c, o, path, "count", 1, 256, true, true, &cnt));
  TRY(get_int(c, o, path, "queue_size", 1, 256, true, false, &q));
  df_stage *t = push(s, DF_WORKERS);
  if (!t) return jerr(c, path, "%s", s->err);
  t->wkind = w; t->n = cnt; t->queue_size = q; t->par = (int)cnt;
  TRY(get_bool(c, o, path, "gil", &t->gil));
  if (t->gil && w != DF_WK_THREAD) return jerr(c, path, "gil applies to thread workers only");
  TRY(get_num(c, o, path, "serialize_s_per_byte", &t->serialize_s_per_byte));
  TRY(get_num(c, o, path, "deserialize_s_per_byte", &t->deserialize_s_per_byte));
  TRY(get_num(c, o, path, "shm_s_per_byte", &t->shm_s_per_byte));
  TRY(get_num(c, o, path, "shm_get_s", &t->shm_get_s));
  s->nst++;
  return TPU_OK;
}

static const char *const SHUFFLE_KEYS[] = { "op", "buffer_size", "seed", "cost_per_element_s", NULL };
static const char *const MAP_KEYS[] = { "op", "fn", "num_parallel_calls", "mean", "std", "padding", "seed",
                                        "cost_per_call_s", "cost_per_element_s", NULL };
static const char *const BATCH_KEYS[] = { "op", "batch_size", "drop_remainder", "cost_per_element_s", "cost_per_call_s",
                                          NULL };
static const char *const CACHE_KEYS[] = { "op", "cost_per_element_s", NULL };
static const char *const PREFETCH_KEYS[] = { "op", "buffer_size", NULL };
static const char *const INTERLEAVE_KEYS[] = { "op", "cycle_length", "num_parallel_calls", "block_length", NULL };
static const char *const SHARD_KEYS[] = { "op", "num_shards", "index", NULL };
static const char *const REPEAT_KEYS[] = { "op", "count", NULL };
static const char *const COUNT_KEYS[] = { "op", "count", NULL };
static const char *const FILTER_KEYS[] = { "op", "label_in", "label_not_in", "keep_fraction", NULL };
static const char *const WORKERS_KEYS[] = { "op", "kind", "count", "gil", "queue_size", "serialize_s_per_byte",
                                            "deserialize_s_per_byte", "shm_s_per_byte", "shm_get_s", NULL };

static const struct stage_syntax {
  const char *op;
  const char *const *keys;        /* the keys allowed, "op" first */
  stage_parser parse;
} STAGES[] = {
  { "shuffle", SHUFFLE_KEYS, parse_shuffle },          { "map", MAP_KEYS, parse_map },
  { "batch", BATCH_KEYS, parse_batch },                { "cache", CACHE_KEYS, parse_cache },
  { "prefetch", PREFETCH_KEYS, parse_prefetch },       { "interleave", INTERLEAVE_KEYS, parse_interleave },
  { "shard", SHARD_KEYS, parse_shard },                { "repeat", REPEAT_KEYS, parse_repeat },
  { "workers", WORKERS_KEYS, parse_workers },
  { "take", COUNT_KEYS, parse_take },                  { "skip", COUNT_KEYS, parse_skip },
  { "filter", FILTER_KEYS, parse_filter },
};

static tpu_status parse_stage(const jctx *c, json_t *o, int i, tpu_df_spec *s) {
  char path[32], p[64];
  snprintf(path, sizeof path, "stages[%d]", i);
  if (!json_is_object(o)) return jerr(c, path, "expected an object like {\"op\": \"batch\", \"batch_size\": 32}, got %s", jtype(o));
  const char *op = NULL;
  TRY(get_str(c, o, path, "op", &op));
  if (!op)
    return jerr(c, path, "missing key 'op' (shuffle, map, batch, cache, prefetch, interleave, shard, repeat, workers, "
                "take, skip, filter)");
  const struct stage_syntax *syn = NULL;
  for (size_t k = 0; k < sizeof STAGES / sizeof STAGES[0]; k++) if (!strcmp(op, STAGES[k].op)) syn = &STAGES[k];
  if (!syn)
    return jerr(c, subpath(p, path, "op"),
                "expected one of shuffle, map, batch, cache, prefetch, interleave, shard, repeat, workers, take, skip, "
                "filter, got '%s'", op);
  TRY(check_keys(c, path, o, syn->keys));
  TRY(syn->parse(c, o, path, s));
  df_stage *t = &s->st[s->nst - 1];      /* a key the stage does not allow was refused above */
  TRY(get_num(c, o, path, "cost_per_call_s", &t->cost_per_call_s));
  TRY(get_num(c, o, path, "cost_per_element_s", &t->cost_per_element_s));
  return TPU_OK;
}

/* The consumer block: step time, steps, and epochs (fresh iterations of the
** whole pipeline, as Keras' fit and the tf.data guide's benchmark make them).
** Without steps, epochs run until the data ends (a pipeline that repeats
** forever then needs steps). */
static tpu_status parse_consumer(const jctx *c, json_t *root, tpu_df_spec *s) {
  json_t *cons = json_object_get(root, "consumer");
  if (!cons) return TPU_OK;
  static const char *const ck[] = { "step_time_s", "steps", "epochs", NULL };
  if (!json_is_object(cons)) return jerr(c, "consumer", "expected an object");
  TRY(check_keys(c, "consumer", cons, ck));
  TRY(get_num(c, cons, "consumer", "step_time_s", &s->step_time_s));
  TRY(get_int(c, cons, "consumer", "epochs", 1, 1000000, false, false, &s->epochs));
  if (json_object_get(cons, "epochs") && !json_object_get(cons, "steps")) {
    for (int i = 0; i < s->nst; i++)
      if (s->st[i].op == DF_REPEAT && s->st[i].n == TPU_DF_FOREVER)
        return tpu_json_missing(OBJ(c, cons, "consumer"), "steps", "a step count: the pipeline repeats forever");
    s->steps = 10000000;       /* until the data ends */
  }
  return get_int(c, cons, "consumer", "steps", 1, 10000000, false, false, &s->steps);
}

/* The host block: the core budget and the overheads of a real runtime
** (0 = the ideal timeline). */
static tpu_status parse_host(const jctx *c, json_t *root, tpu_df_spec *s) {
  json_t *host = json_object_get(root, "host");
  if (!host) return TPU_OK;
  static const char *const hk[] = { "cores", "iterator_overhead_s", "element_overhead_s", NULL };
  int64_t cores = s->host_cores;
  if (!json_is_object(host)) return jerr(c, "host", "expected an object");
  TRY(check_keys(c, "host", host, hk));
  TRY(get_int(c, host, "host", "cores", 1, 1024, false, false, &cores));
  s->host_cores = (int)cores;
  TRY(get_num(c, host, "host", "iterator_overhead_s", &s->iterator_overhead_s));
  return get_num(c, host, "host", "element_overhead_s", &s->element_overhead_s);
}

tpu_status tpu_df_spec_parse(const char *text, const char *name, tpu_df_spec **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_json doc = { .where = name ? name : "<pipeline>", .noun = "key", .field_prefix = true, .err = err,
                   .errcap = errcap };
  jctx c = { &doc };
  tpu_df_spec *s = NULL;
  tpu_status st = tpu_json_parse(&doc, text, "a pipeline with source and stages, docs/DATAFEED.md");
  if (st != TPU_OK) goto done;
  json_t *root = doc.root;
  if ((st = tpu_df_spec_create(&s)) != TPU_OK) { snprintf(err, errcap, "%s: out of memory", doc.where); goto done; }
  static const char *const keys[] = { "source", "stages", "consumer", "host", "comment", NULL };
  if ((st = check_keys(&c, "", root, keys)) != TPU_OK) goto done;
  const char *comment;
  if ((st = get_str(&c, root, "", "comment", &comment)) != TPU_OK) goto done;
  json_t *src = json_object_get(root, "source");
  if (!src) { st = tpu_json_missing(OBJ(&c, root, ""), "source", "an object (the data source)"); goto done; }
  if ((st = parse_source(&c, src, s)) != TPU_OK) goto done;
  json_t *stages = json_object_get(root, "stages");
  if (!stages) { st = tpu_json_missing(OBJ(&c, root, ""), "stages", "an array of stages"); goto done; }
  if (!json_is_array(stages)) { st = jerr(&c, "stages", "expected an array of stages, got %s", jtype(stages)); goto done; }
  for (size_t i = 0; i < json_array_size(stages); i++)
    if ((st = parse_stage(&c, json_array_get(stages, i), (int)i, s)) != TPU_OK) goto done;
  if ((st = parse_consumer(&c, root, s)) != TPU_OK || (st = parse_host(&c, root, s)) != TPU_OK) goto done;
  if ((st = df_spec_validate(s, err, errcap)) != TPU_OK) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", err);
    char fld[32] = "";
    int idx;
    if (sscanf(tmp, "stages[%d]", &idx) == 1) snprintf(fld, sizeof fld, "stages[%d]", idx);
    const char *rest = strchr(tmp, ':');
    st = jerr(&c, *fld ? fld : "stages", "%s", rest ? rest + 2 : tmp);
    goto done;
  }
  s->json_text = tpu_strdup(text);
  s->name = tpu_strdup(doc.where);
  if (!s->json_text || !s->name) { st = TPU_ERR_NOMEM; snprintf(err, errcap, "%s: out of memory", doc.where); }
done:
  tpu_json_free(&doc);
  if (st != TPU_OK) { tpu_df_spec_destroy(s); s = NULL; }
  *out = s;
  return st;
}

tpu_status tpu_df_spec_load(const char *path, tpu_df_spec **out, char *err, size_t errcap) {
  *out = NULL;
  char *text;
  tpu_status st = tpu_json_read_file(path, &text, err, errcap);
  if (st == TPU_ERR_IO) snprintf(err, errcap, "%s: cannot open: %s", path, strerror(errno));
  if (st) return st == TPU_ERR_INPUT ? TPU_ERR_CONFIG : st;   /* a NUL byte: the message says so */
  st = tpu_df_spec_parse(text, path, out, err, errcap);
  tpu_free(text);
  return st;
}
