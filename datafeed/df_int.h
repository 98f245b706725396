/*
** df_int.h -- internals of datafeed shared by its .c files and white-box tests.
**
** Design. A description (tpu_df_spec) is a source plus an ordered list of
** stages. The real pipeline (df_pipe.c) compiles it into index arithmetic:
**   - the order of source element ids in epoch e is a pure function of the
**     seeds and e: interleave over files, shard, buffered shuffle (whose seed
**     is mixed with e, or with 0 when the shuffle sits before cache(): a
**     cached stream is frozen, as in tf.data);
**   - the value of element id in epoch e is the source row, then the maps
**     before cache() (random ones keyed by (seed, 0, id), memoized in the
**     cache), then the maps after it (keyed by (seed, e, id));
**   - batch b of epoch e holds positions [b*B, b*B+B) of the epoch's order.
** Workers claim global batch numbers in order, fill a ring slot each, and the
** consumer takes slots in order, so bytes never depend on threads or timing.
**
** The model (df_model.c) reads the same stage list and the cost fields.
**
** Limits (checked when a description is validated): shuffle, shard, take,
** skip, filter and interleave must come before batch (take, skip, filter,
** shard and shuffle may appear several times, in any order among the index
** stages); repeat must come after shuffle, shard, cache and batch (a batch
** never spans two epochs); at most one batch, cache, repeat and workers
** stage.
*/
#ifndef TPU_DF_INT_H
#define TPU_DF_INT_H
#include "datafeed/df.h"

typedef enum df_op {
  DF_SHUFFLE = 0, DF_MAP, DF_BATCH, DF_CACHE, DF_PREFETCH, DF_INTERLEAVE, DF_SHARD,
  DF_REPEAT, DF_WORKERS, DF_TAKE, DF_SKIP, DF_FILTER
} df_op;

#define DF_FILTER_MAX_LABELS 16

typedef enum df_worker_kind { DF_WK_THREAD = 0, DF_WK_PROCESS, DF_WK_SHM } df_worker_kind;

typedef struct df_stage {
  df_op op;
  int64_t n;                 /* buffer_size, batch_size, num_shards, cycle_length, count, workers */
  int64_t index;             /* shard index */
  int64_t block;             /* interleave block_length (>= 1) */
  int par;                   /* num_parallel_calls (map, interleave); AUTOTUNE = -1 */
  bool async;                /* map: num_parallel_calls was given (1 too): a map of its
                                own thread, ahead of its consumer, as tf.data's
                                ParallelMapDataset; a plain map runs in its caller */
  uint64_t seed;             /* shuffle, random maps */
  bool drop_remainder;       /* batch */
  tpu_df_map_fn fn;
  tpu_df_map_args args;
  /* filter: keep elements whose label is (keep) or is not (!keep) one of these */
  int32_t labels[DF_FILTER_MAX_LABELS];
  int nlabels;
  bool keep;
  double keep_fraction;      /* filter, model only: share of elements kept (default 1) */
  /* modeled costs (seconds) */
  double cost_per_call_s;    /* map: per call (per element before batch, per batch after) */
  double cost_per_element_s; /* map, batch, shuffle, cache (read from memory) */
  /* workers stage (the Ray article's generator workers) */
  df_worker_kind wkind;
  bool gil;                  /* threads share one interpreter lock */
  int64_t queue_size;        /* items held in the queue to the consumer; AUTOTUNE = -1 */
  double serialize_s_per_byte, deserialize_s_per_byte, shm_s_per_byte, shm_get_s;
} df_stage;

typedef struct df_source_costs {
  int64_t files;             /* files the elements are spread over (model) */
  int64_t elements;          /* elements per epoch before shard (model; 0 = from source) */
  int64_t element_bytes;     /* 0 = features of the source (u8 images) */
  double open_latency_s;     /* time to first byte of each file */
  double read_latency_s;     /* per element */
  double read_bandwidth_bytes_per_s; /* 0 = infinite */
} df_source_costs;

#define DF_MAX_STAGES 32
struct tpu_df_spec {
  tpu_df_source src;
  char *src_strs[6];         /* owned copies of dir, images, labels, path, image_feature,
                                label_feature */
  char **src_files;          /* owned copies of src.files (src.nfiles) */
  df_source_costs cost;
  df_stage st[DF_MAX_STAGES];
  char *json_text;           /* the text parsed, for line:col (owned, may be NULL) */
  char *name;                /* file name for messages (owned, may be NULL) */
  int nst;
  double step_time_s;        /* consumer (JSON "consumer") */
  int64_t steps;
  int host_cores;
  int64_t epochs;            /* fresh iterations of the whole pipeline (JSON consumer.epochs) */
  double iterator_overhead_s;/* per iterator made: each epoch, each repeat pass (JSON host) */
  double element_overhead_s; /* per item handed out by an asynchronous stage (JSON host) */
  char err[512];
};

/* The physical range of a modeled cost (df_spec.c's table): [lo, hi] in
** 'unit'; when zero_ok_below > 0, 0 means 'zero_means' and the values
** between 0 and zero_ok_below are refused. NULL for a key without one. */
typedef struct df_cost_range {
  const char *key;
  double lo, hi;
  const char *unit;
  double zero_ok_below;
  const char *zero_means;
} df_cost_range;
const df_cost_range *df_cost_range_of(const char *key);

/* Copies a description (strings included). NULL on allocation failure. */
tpu_df_spec *df_spec_clone(const tpu_df_spec *s);
/* Checks stage order and values; TPU_ERR_CONFIG with a message naming
** "stages[i]" in err. */
tpu_status df_spec_validate(const tpu_df_spec *s, char *err, size_t errcap);
/* Elements per epoch of a source known without reading it (0 if unknown). */
int64_t df_source_known_elements(const tpu_df_source *src);
const char *df_op_name(df_op op);
const char *df_map_name(tpu_df_map_fn fn);

/* {==================================================================
** Data (df_read.c): a decoded source held in memory. Images are u8 (IDX,
** .npy u1, synthetic) or f32 (CSV, .npy f4). Large gzip files are inflated by
** a loader thread while workers consume: 'ready' counts decoded elements.
** ================================================================== */
#include <pthread.h>
typedef struct df_data {
  int64_t n;
  int h, w, c, d;            /* d = h*w*c */
  int classes;
  uint8_t *u8;               /* n*d or NULL (aligned, inside u8_raw) */
  void *u8_raw;              /* owned allocation holding u8 */
  float *f32;                /* n*d or NULL */
  int32_t *labels;           /* n */
  int nfiles;
  int64_t *file_start;       /* nfiles+1 element offsets */
  /* streaming */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t ready;             /* elements decoded (under mu) */
  bool loader_running;
  pthread_t loader;
  tpu_status load_status;    /* of the loader (under mu) */
  char load_err[512];
  /* page prefaulting by waiting workers (under mu): bytes [0, fault_end) of
  ** u8 are touched or owned by the loader; a worker touching a range sets
  ** pf_busy_end beyond fault_end until it is done */
  size_t fault_end, pf_busy_end;
  bool cancel;               /* df_data_close: the loader stops at its next chunk */
  /* the loader's input */
  unsigned char *gz;         /* compressed file (owned) */
  size_t gz_len;
  char *img_path;            /* owned: the file (or directory) the elements come from, for messages */
  int64_t body_off;          /* first image byte in the (inflated) stream */
  int fd;                    /* plain IDX streamed with read(2); -1 otherwise */
} df_data;

/* Opens and validates the source; large image files keep loading in a
** thread. On failure *out is NULL and err names the file. */
tpu_status df_data_open(const tpu_df_source *src, df_data **out, char *err, size_t errcap);
/* Waits until element 'id' is decoded; returns the loader's error if it
** failed (message in err). */
tpu_status df_data_wait(df_data *d, int64_t id, char *err, size_t errcap);
void       df_data_close(df_data *d);              /* joins the loader; NULL ok */

/* The TFRecord files of a source, in reading order: src->files, or the
** file, the directory's regular files (sorted, dot files left out) or the
** glob pattern's matches (sorted) of src->path. *names (n entries, each and
** the array owned by the caller, tpu_free) on success; TPU_ERR_IO naming the
** path when nothing is there, TPU_ERR_NOMEM. */
tpu_status df_tfrecord_files(const tpu_df_source *src, char ***names, int *n, char *err, size_t errcap);
void df_free_names(char **names, int n);

/* Buffered shuffle of 'ids' (n) in place, tf.data semantics: a buffer of
** 'buf' elements is filled from the input; each output is a uniformly chosen
** buffer entry, replaced by the next input. Uses 'tmp' (buf entries). */
void df_buffered_shuffle(int64_t *ids, int64_t n, int64_t buf, uint64_t seed, int64_t *tmp);
#endif
