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
** The real-cost run (df_costrun.c) runs the model's plan on threads,
** spending each item's cost, so the model can be checked against a run.
** The readers (df_read.c) decode every source into memory at open; encoded
** images go through df_image.c (TensorFlow's decoding and resize).
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
  int64_t files;             /* files the elements are spread over (model; 0 = from the
                                source: 1, a TFRecord source's files, an image each) */
  int64_t elements;          /* elements per epoch before shard (model; 0 = from source) */
  int64_t element_bytes;     /* 0 = from the source: u8 pixels, the files' mean bytes per
                                record or image */
  double open_latency_s;     /* time to first byte of each file */
  double read_latency_s;     /* per element */
  double read_bandwidth_bytes_per_s; /* 0 = infinite */
  double decode_cost_per_element_s;  /* decoding (and resizing) an element as it is read */
} df_source_costs;

#define DF_MAX_STAGES 32
struct tpu_df_spec {
  tpu_df_source src;
  char *src_strs[6];         /* owned copies of dir, images, labels, path, image_feature,
                                label_feature */
  char **src_files;          /* owned copies of src.files (src.nfiles) */
  char **src_classes;        /* owned copies of src.class_names (src.nclass_names) */
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
/* The model's size of the source: the costs given, else what the source
** says: elements (known, or counted from TFRecord headers or the image
** folders), files (1, the TFRecord files, an image each) and bytes per
** element (u8 pixels, or the files' bytes per record or image). Reads
** directories and record headers, never image data. TPU_ERR_CONFIG when
** the elements cannot be known (csv, npy, idx without source.elements),
** or the source's error. */
tpu_status df_source_size(const tpu_df_spec *s, int64_t *elements, int64_t *files, int64_t *bytes, char *err,
                          size_t errcap);
const char *df_op_name(df_op op);
const char *df_map_name(tpu_df_map_fn fn);

/* {==================================================================
** The model's plan (df_model.c), for the real-cost run (df_costrun.c):
** the chain of nodes from the source (node 0) to the consumer's (the last),
** their kinds, workers and limits, and the cost of each item, so the run
** spends exactly what the model sums.
** ================================================================== */
typedef enum df_pn_kind { DF_PN_SOURCE, DF_PN_SYNC, DF_PN_ASYNC, DF_PN_BATCH, DF_PN_CACHE } df_pn_kind;
typedef struct df_plan_node {
  df_pn_kind kind;
  int k, L;                  /* asynchronous (and a source of k > 1 lanes): workers, items outstanding */
  bool batch_level;          /* items are batches (else elements) */
} df_plan_node;
typedef struct df_plan {
  df_plan_node node[DF_MAX_STAGES + 2];
  int n;
  int64_t epoch_len, bpe;    /* elements and batches of an epoch (a fresh iteration) */
  int64_t B;                 /* batch size */
  int64_t total_batches;
} df_plan;
/* TPU_ERR_CONFIG (and why) for what is modelled only: workers, repeat. */
tpu_status df_model_plan(const tpu_df_model *m, df_plan *p, char *err, size_t errcap);
/* Seconds item i (elements or batches, counted over the whole run) costs
** at node s; for the source *open_s is the file's open when i is a file's
** first element, and a cache node's is the read back (from the second
** epoch). */
double df_model_item_cost(const tpu_df_model *m, int s, int64_t i, double *open_s);
/* The lane of element i on a source of k > 1 lanes (its file in the cycle). */
int df_model_source_lane(const tpu_df_model *m, int64_t i);
/* Elements in batch b. */
int64_t df_model_batch_elements(const tpu_df_model *m, int64_t b);

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

/* {==================================================================
** Encoded images (df_image.c): JPEG and PNG decoded as TensorFlow's
** tf.io.decode_image(channels=C) decodes them, resized as tf.image.resize
** (bilinear, half-pixel centers), on a few threads.
** ================================================================== */
typedef enum df_img_kind { DF_IMG_UNKNOWN = 0, DF_IMG_JPEG, DF_IMG_PNG, DF_IMG_GIF, DF_IMG_BMP, DF_IMG_WEBP } df_img_kind;
/* The format by its first bytes (tf.io.decode_image's magic numbers). */
df_img_kind df_image_sniff(const unsigned char *p, size_t n);
const char *df_image_kind_name(df_img_kind k);
/* Decodes a JPEG or PNG image to 8-bit pixels of c channels (1, 3 or 4),
** row-major, channels last: *out (tpu_malloc'd) of *h x *w x c. Otherwise
** TPU_ERR_INPUT with 'why' saying what is wrong (other formats are named;
** a c of 2 is refused too), or TPU_ERR_NOMEM. */
tpu_status df_image_decode(const unsigned char *p, size_t n, int c, uint8_t **out, int *h, int *w, char *why, size_t cap);
/* tf.image.resize(bilinear) of an ih x iw x c image to oh x ow, rounded to
** uint8 (halves up); a copy when the size is the same. TPU_ERR_NOMEM only. */
tpu_status df_image_resize(const uint8_t *in, int ih, int iw, int c, uint8_t *out, int oh, int ow);
/* Decodes into out (oh x ow x c), resizing when 'resize' (else another
** size is an input error). */
tpu_status df_image_load(const unsigned char *p, size_t n, int oh, int ow, int c, bool resize, uint8_t *out, char *why,
                         size_t cap);
/* One image to load: its bytes (p, n) or, when path is set, the file. */
typedef struct df_img_job {
  const char *path;
  const unsigned char *p;
  size_t n;
  uint8_t *dst;              /* oh x ow x c bytes */
  tpu_status st;
  char why[200];
} df_img_job;
/* Loads every job on 'threads' threads (the caller's included). On failure
** returns the status of the lowest failing job and its index in *bad (the
** same job for any thread count); jobs after it may not have run. */
tpu_status df_image_load_all(df_img_job *jobs, int64_t n, int oh, int ow, int c, bool resize, int threads, int64_t *bad);
/* Threads for decoding: the online CPUs, 1..8. */
int df_image_threads(void);

/* A directory of class folders as Keras' image_dataset_from_directory
** indexes it (df_read.c): the class names (sorted folder names, dot folders
** left out, or src->class_names in their order), each folder's files of the
** allowed extensions walked recursively (roots sorted, then names), then
** numpy's legacy RandomState(seed).shuffle unless src->no_shuffle, then the
** validation split. */
typedef struct df_img_index {
  int64_t n;
  char **paths;              /* n paths (owned) */
  int32_t *labels;           /* n */
  int classes;
  uint64_t bytes;            /* total size of the n files */
} df_img_index;
tpu_status df_images_index(const tpu_df_source *src, df_img_index *ix, char *err, size_t errcap);
void df_images_index_free(df_img_index *ix);
/* Records and bytes of a TFRecord source's files, from the record headers
** alone (the model's defaults), after the validation split. */
tpu_status df_tfrecord_count(const tpu_df_source *src, int64_t *records, uint64_t *bytes, char *err, size_t errcap);
/* The elements a validation split keeps of n (Keras' rule: the last
** int(split * n) of the shuffled order are the validation subset): ids of
** the subset in *ids (n entries of room) in the shuffled order; returns the
** count, or -1 when the subset would be empty. split 0: all, in order. */
int64_t df_split(int64_t n, double split, bool validation, bool shuffle, uint64_t seed, int64_t *ids);
/* numpy's legacy RandomState(seed).shuffle of a list of n ids (MT19937
** seeded by init_genrand, Fisher-Yates from the end with rejection-sampled
** bounded draws), as Keras shuffles its file list. */
void df_numpy_shuffle(int64_t *ids, int64_t n, uint32_t seed);

/* Buffered shuffle of 'ids' (n) in place, tf.data semantics: a buffer of
** 'buf' elements is filled from the input; each output is a uniformly chosen
** buffer entry, replaced by the next input. Uses 'tmp' (buf entries). */
void df_buffered_shuffle(int64_t *ids, int64_t n, int64_t buf, uint64_t seed, int64_t *tmp);
#endif
