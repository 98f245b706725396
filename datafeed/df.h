/*
** df.h -- the host input pipeline (datafeed): what feeds a training job its
** batches, in two halves that share one description.
**
** Description. A pipeline is described once (tpu_df_spec): a source (IDX,
** MNIST-style directories, CIFAR-10 binary, TFRecord files of
** tf.train.Example, a directory of class folders of JPEG/PNG images, CSV,
** .npy or seeded synthetic images or token sequences), then
** stages named and meaning as in tf.data -- shuffle(buffer_size, seed),
** map(fn, num_parallel_calls), batch(batch_size, drop_remainder), cache(),
** prefetch(buffer_size), interleave(cycle_length, num_parallel_calls),
** shard(num_shards, index), take(count), skip(count), filter(label_in |
** label_not_in), repeat(count) -- and workers(kind, count) for Ray-style
** thread, process or shared-memory workers. Epochs are fresh iterations of
** the whole pipeline, as in Keras' fit (tpu_df_spec_set_epochs); repeat is
** one iterator over several passes, each remaking its input's iterator. A
** map given num_parallel_calls (1 included) is asynchronous, as tf.data's. It comes from JSON
** (tpu_df_spec_load; errors name file, line:column and field) or is built in
** code (tpu_df_spec_create and the tpu_df_spec_* stage functions). Every
** stage may carry modeled costs (seconds, bytes), used only by the model.
**
** The two halves.
**   - The real pipeline (tpu_df_open/next/seek/close) reads the files and
**     produces batches of f32 images and int32 labels (optionally one-hot),
**     made by worker threads in a ring of slots and handed out in order.
**     Every epoch reads the source again, except what stands before cache():
**     the decoded source and the maps before it run once and stay in memory.
**   - The host-time model (tpu_df_model_*) is a discrete-event simulation of
**     the same description with its costs: when each batch would be in the
**     consumer's hands, how long the consumer waited, a per-worker timeline,
**     and AUTOTUNE's choices. It reads no data (sources whose size is not
**     known from the description need source.elements). The trainer asks it
**     once per step, at the engine's simulated time.
**
** Invariants.
**   - Output order and bytes depend only on the description and its seeds:
**     never on thread counts, buffer sizes, prefetch depth or timing. The
**     order of the elements in epoch e is a pure function of (seeds, e);
**     random maps draw from a generator keyed by (seed, epoch, position in
**     the epoch). Batches come out in order, as tf.data's deterministic mode.
**   - tpu_df_seek(epoch, index) resumes with the bytes an uninterrupted run
**     gives from there (checkpoints).
**   - The model is deterministic too: the same description, costs and
**     consumer give the same times.
**
** Not modelled. The real pipeline runs workers of every kind as threads of
** its own pool (no processes, no serialization) and ignores the costs. The
** model leaves out contention for host cores beyond the stated parallelism
** (the AUTOTUNE budget bounds it), memory bandwidth shared between stages,
** variance of costs, and the reading of what a shard, skip or filter drops
** (taken to read only the elements kept; filter keeps its keep_fraction).
*/
#ifndef TPU_DF_H
#define TPU_DF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/base.h"

/* Any parallelism or buffer size may be TPU_DF_AUTOTUNE: the real pipeline
** then uses tpu_df_options.autotune_threads / a buffer of 2; the model picks
** the value (tpu_df_model_autotune). */
#define TPU_DF_AUTOTUNE (-1)
/* repeat(count) with count TPU_DF_FOREVER repeats without end. */
#define TPU_DF_FOREVER (-1)

typedef struct tpu_df_spec tpu_df_spec;     /* a pipeline description (opaque) */
typedef struct tpu_df tpu_df;               /* a running real pipeline (opaque) */
typedef struct tpu_df_model tpu_df_model;   /* a host-time model run (opaque) */

/* {==================================================================
** Sources
** ================================================================== */
typedef enum tpu_df_source_kind {
  TPU_DF_SRC_FASHION_MNIST = 0, /* IDX files in dir (default /usr/share/datasets/fashion-mnist) */
  TPU_DF_SRC_MNIST,             /* IDX files in dir (no default directory: set dir) */
  TPU_DF_SRC_IDX,               /* explicit images + labels IDX paths (.gz or plain); images
                                   of rank 2..4: N x D, N x H x W, N x H x W x C */
  TPU_DF_SRC_CSV,               /* path: a .csv file or a directory of *.csv (one file each) */
  TPU_DF_SRC_NPY,               /* images .npy (u1 or f4, N x ...) + labels .npy (integer, N) */
  TPU_DF_SRC_SYNTHETIC,         /* seeded random images (or token sequences: vocab) and labels */
  TPU_DF_SRC_CIFAR10,           /* CIFAR-10 binary files in dir: data_batch_1..5.bin (train)
                                   or test_batch.bin; 32x32x3 images, labels 0..9 */
  TPU_DF_SRC_TFRECORD,          /* TFRecord files of tf.train.Example records: 'files' (in
                                   order) or 'path' (a file, a directory of files or a glob
                                   pattern); an image feature of raw uint8 bytes (height x
                                   width x channels) or JPEG/PNG-encoded, and an int64 label */
  TPU_DF_SRC_IMAGES             /* a directory of class folders of JPEG/PNG images, as Keras'
                                   image_dataset_from_directory reads it: dir, the image size
                                   (height, width; 0: 256) and channels (1 grayscale, 3 rgb
                                   (0), 4 rgba) */
} tpu_df_source_kind;

typedef struct tpu_df_source {
  tpu_df_source_kind kind;
  const char *dir;              /* MNIST-style directory (NULL = default) */
  bool test_split;              /* MNIST-style: t10k-* instead of train-*; CIFAR-10: test_batch;
                                   images, TFRecord: the "validation" subset */
  const char *images, *labels;  /* IDX / NPY paths */
  const char *path;             /* CSV file or directory: label,f1,f2,... per line */
  int64_t n;                    /* synthetic: number of elements */
  int height, width, channels;  /* synthetic (and CSV: shape of the features; 0 = flat) */
  int classes;                  /* synthetic: labels in [0, classes); others: 0 = infer (max+1, >= 2) */
  int vocab;                    /* synthetic: 0 = images (u8 pixels); 1..2^24 = sequences of
                                   height*width*channels token ids in [0, vocab), exact integers
                                   in the f32 the pipeline carries (an embedding's input) */
  uint64_t seed;                /* synthetic; images and TFRecord: the split's shuffle (numpy's
                                   RandomState(seed), as Keras) */
  const char *const *files;     /* TFRecord: nfiles paths, read in order (NULL: path) */
  int nfiles;
  const char *image_feature, *label_feature; /* TFRecord feature names (NULL: "image"; "label",
                                   or "class" when the Example has no int64 "label") */
  bool resize;                  /* TFRecord: encoded images of another size are resized to
                                   height x width (bilinear, as tf.image.resize); else refused.
                                   Images: always resized (Keras' image_size) */
  /* images */
  const char *const *class_names; /* the classes in label order (NULL: the sorted folders) */
  int nclass_names;
  bool no_shuffle;              /* keep class-then-name order (Keras' shuffle=False); by default
                                   the file list is shuffled with 'seed' as Keras does */
  bool follow_links;            /* descend into linked folders (Keras' follow_links) */
  /* images and TFRecord: Keras' validation_split (0: none, else in (0, 1)); test_split
  ** takes the "validation" subset, else the "training" one */
  double validation_split;
} tpu_df_source;
/* Fashion-MNIST train split, the default source. This function can't fail. */
tpu_df_source tpu_df_source_default(void);
/* }================================================================== */

/* {==================================================================
** Descriptions
** ================================================================== */
typedef enum tpu_df_map_fn {
  TPU_DF_MAP_NORMALIZE = 0,     /* x = (x - mean) / std; defaults mean 0, std 255 => [0,1] */
  TPU_DF_MAP_ONE_HOT,           /* labels -> one-hot f32 rows of 'classes' (tpu_df_batch.y_onehot) */
  TPU_DF_MAP_RANDOM_FLIP,       /* mirror left-right with probability 1/2 */
  TPU_DF_MAP_RANDOM_CROP,       /* zero-pad by 'padding' on each side, crop HxW at a random offset */
  TPU_DF_MAP_NONE               /* identity (costs only; for the model) */
} tpu_df_map_fn;

typedef struct tpu_df_map_args {
  double mean, std;             /* NORMALIZE */
  int padding;                  /* RANDOM_CROP */
} tpu_df_map_args;

/* On success *out owns a new description with the default source and no
** stages; free with tpu_df_spec_destroy. TPU_ERR_NOMEM otherwise. */
tpu_status tpu_df_spec_create(tpu_df_spec **out);
void       tpu_df_spec_destroy(tpu_df_spec *s);            /* NULL is a no-op */
/* Parses a JSON description (docs/DATAFEED.md). 'name' is used in messages
** (usually the file name). On failure *out is NULL and err holds
** "NAME:LINE:COL: field 'stages[2].buffer_size': what was wrong; what is
** allowed" (TPU_ERR_CONFIG, or TPU_ERR_IO / TPU_ERR_NOMEM). */
tpu_status tpu_df_spec_parse(const char *json_text, const char *name, tpu_df_spec **out,
                             char *err, size_t errcap);
tpu_status tpu_df_spec_load(const char *path, tpu_df_spec **out, char *err, size_t errcap);

/* Builders: each appends one stage and returns TPU_ERR_CONFIG for a value out
** of range (message in tpu_df_spec_errmsg) or TPU_ERR_NOMEM. Strings are copied. */
tpu_status tpu_df_spec_set_source(tpu_df_spec *s, const tpu_df_source *src);
tpu_status tpu_df_spec_shard(tpu_df_spec *s, int num_shards, int index);
tpu_status tpu_df_spec_shuffle(tpu_df_spec *s, int64_t buffer_size, uint64_t seed);
tpu_status tpu_df_spec_map(tpu_df_spec *s, tpu_df_map_fn fn, const tpu_df_map_args *args,
                           int num_parallel_calls);     /* args NULL = defaults */
tpu_status tpu_df_spec_batch(tpu_df_spec *s, int batch_size, bool drop_remainder);
tpu_status tpu_df_spec_cache(tpu_df_spec *s);
tpu_status tpu_df_spec_prefetch(tpu_df_spec *s, int buffer_size);
tpu_status tpu_df_spec_interleave(tpu_df_spec *s, int cycle_length, int num_parallel_calls);
/* block_length of the interleave just added (default 1): that many
** consecutive elements of a file before the next file's turn. */
tpu_status tpu_df_spec_interleave_block(tpu_df_spec *s, int block_length);
tpu_status tpu_df_spec_repeat(tpu_df_spec *s, int64_t count);   /* TPU_DF_FOREVER or >= 1 */
/* take(count) and skip(count): the first count elements of the stream so
** far, or all but them (-1: all). filter: keeps the elements whose label is
** one of 'labels' (keep) or none of them (!keep), the predicate vocabulary
** of the JSON's label_in / label_not_in. Before batch, anywhere among
** shuffle, shard and each other, several times. */
tpu_status tpu_df_spec_take(tpu_df_spec *s, int64_t count);
tpu_status tpu_df_spec_skip(tpu_df_spec *s, int64_t count);
tpu_status tpu_df_spec_filter_labels(tpu_df_spec *s, const int32_t *labels, int nlabels, bool keep);
/* Sets a modeled cost on the last stage added (or on the source when no stage
** was added), e.g. "cost_per_element_s", "open_latency_s" (docs/DATAFEED.md
** lists them). TPU_ERR_CONFIG for an unknown key or a bad value. */
tpu_status tpu_df_spec_set_cost(tpu_df_spec *s, const char *key, double value);
const char *tpu_df_spec_errmsg(const tpu_df_spec *s);   /* last builder error; "" if none */
/* The seed of every shuffle and random map stage is replaced by a value
** derived from 'seed' (for runs that vary only the seed). Can't fail. */
void tpu_df_spec_reseed(tpu_df_spec *s, uint64_t seed);
/* The consumer and host blocks of a JSON description (defaults 0.01 s,
** 20 steps, 8 cores). Can't fail. */
void tpu_df_spec_consumer(const tpu_df_spec *s, double *step_time_s, int64_t *steps, int *host_cores);
/* Epochs as tf.data users make them (Keras' fit, the guide's benchmark): a
** fresh iteration of the whole pipeline each, the JSON's consumer.epochs.
** The real pipeline gives their batches one after another (epoch numbers
** run on, so shuffles differ); the model restarts everything at each (files
** reopened, buffers empty, host.iterator_overhead_s paid). TPU_ERR_CONFIG
** unless 1 <= epochs <= 1000000. */
tpu_status tpu_df_spec_set_epochs(tpu_df_spec *s, int64_t epochs);
/* Count of the spec's repeat stage: 0 without one, TPU_DF_FOREVER, or >= 1.
** Can't fail. */
int64_t tpu_df_spec_repeat_count(const tpu_df_spec *s);
/* Batch size of the spec's batch stage, 0 if none. Can't fail. */
int tpu_df_spec_batch_size(const tpu_df_spec *s);
/* Sets the batch stage's batch_size to n (1..2^30), keeping its
** drop_remainder: how a run's --batch overrides the file's, so one pipeline
** file serves every batch size of a sweep. TPU_ERR_CONFIG when the spec has
** no batch stage or n is out of range (nothing changed then). */
tpu_status tpu_df_spec_set_batch_size(tpu_df_spec *s, int n);
/* }================================================================== */

/* {==================================================================
** The real pipeline
** ================================================================== */
typedef struct tpu_df_options {
  int threads;                  /* -1: from the spec (map num_parallel_calls); 0: no
                                   threads (batches made in the caller); >= 1 workers */
  int prefetch;                 /* -1: from the spec; else ready batches held ahead (>= 1) */
  int autotune_threads;         /* workers for num_parallel_calls = AUTOTUNE (default 2) */
} tpu_df_options;
tpu_df_options tpu_df_options_default(void);   /* all -1 / 2; can't fail */

typedef struct tpu_df_info {
  int64_t elements;             /* per epoch, after shard */
  int64_t batches_per_epoch;
  int64_t epochs;               /* repeat's count (1 without repeat, or TPU_DF_FOREVER)
                                   times the fresh iterations (tpu_df_spec_set_epochs) */
  int features;                 /* floats per image row = height*width*channels */
  int height, width, channels;
  int classes;
  int batch_size;
  const char *source;           /* the file (or directory) the elements come from, for
                                   messages ("synthetic source"); valid while df is open */
} tpu_df_info;

typedef struct tpu_df_batch {
  int64_t step;                 /* batches returned before this one since open/seek origin */
  int64_t epoch, index;         /* epoch and batch index within the epoch */
  int size;                     /* rows; 0 at end of data */
  int features, classes;
  const float *x;               /* size x features f32, row-major; borrowed */
  const int32_t *y;             /* size labels in [0, classes); borrowed */
  const float *y_onehot;        /* size x classes when one_hot was mapped, else NULL */
} tpu_df_batch;

/* Opens the source files (validating them) and starts the workers. On
** failure *out is NULL, nothing is left running, and err names the file and
** what is wrong (TPU_ERR_IO: cannot open/read; TPU_ERR_INPUT: malformed,
** truncated, bad magic, label out of range; TPU_ERR_CONFIG; TPU_ERR_NOMEM).
** The spec is copied; opt NULL = defaults. */
tpu_status tpu_df_open(const tpu_df_spec *spec, const tpu_df_options *opt, tpu_df **out,
                       char *err, size_t errcap);
/* Stops the workers and frees everything; NULL is a no-op. */
void       tpu_df_close(tpu_df *df);
void       tpu_df_get_info(const tpu_df *df, tpu_df_info *out);   /* can't fail */
/* The next batch, in order. The arrays stay valid until the next call of
** tpu_df_next, tpu_df_seek or tpu_df_close on df. At the end of the data
** (repeat count reached) returns TPU_OK with out->size == 0. */
tpu_status tpu_df_next(tpu_df *df, tpu_df_batch *out);
/* Restarts at batch 'index' of epoch 'epoch' (checkpoint/resume): the batches
** that follow are byte-identical to those an uninterrupted run gives there.
** TPU_ERR_CONFIG if the position is past the end. */
tpu_status tpu_df_seek(tpu_df *df, int64_t epoch, int64_t index);
const char *tpu_df_errmsg(const tpu_df *df);
/* }================================================================== */

/* {==================================================================
** The host-time model (discrete-event simulation of the same description
** with its modeled costs; seconds of simulated host time from 0).
** ================================================================== */
/* Consumer step time for step 'step' (seconds), e.g. the engine's simulated
** step. */
typedef double (*tpu_df_step_fn)(void *ud, int64_t step);

typedef struct tpu_df_model_options {
  int host_cores;               /* budget for AUTOTUNE (threads + processes); default 8 */
  int64_t timeline_steps;       /* record timeline intervals for this many first steps */
  int64_t epochs;               /* fresh iterations of the pipeline; 0 = the spec's
                                   consumer.epochs (default 1) */
} tpu_df_model_options;
tpu_df_model_options tpu_df_model_options_default(void);

/* Creates a model of 'spec' (copied). AUTOTUNE values must have been
** resolved (tpu_df_model_autotune) or they are taken as 1. */
tpu_status tpu_df_model_create(const tpu_df_spec *spec, const tpu_df_model_options *opt,
                               tpu_df_model **out, char *err, size_t errcap);
void       tpu_df_model_destroy(tpu_df_model *m);       /* NULL is a no-op */
/* The consumer asks for its next batch at simulated time 'request_s' (>= the
** previous return value): returns the time the batch is in the consumer's
** hands (>= request_s), including consumer-side deserialization. Returns a
** negative value when the data is exhausted. This function can't fail. */
double tpu_df_model_next(tpu_df_model *m, double request_s);

/* The next batch begins a fresh iteration of the pipeline (the rest of the
** current one is dropped), as a trainer that starts each epoch anew after
** steps_per_epoch steps. No effect at an iteration's start, or when the
** pipeline repeats forever. This function can't fail. */
void tpu_df_model_restart(tpu_df_model *m);

typedef struct tpu_df_model_result {
  double total_s;               /* end of the last step */
  double wait_mean_s, wait_max_s; /* consumer wait per step */
  double input_bound_share;     /* total wait / total time */
  int64_t steps;
} tpu_df_model_result;
/* Runs 'steps' steps of a consumer whose step s takes step_fn(ud, s) seconds
** (or the constant step_s when step_fn is NULL). When ready_s is non-NULL it
** receives the time each batch was ready (steps entries, caller-owned). */
tpu_status tpu_df_model_run(const tpu_df_spec *spec, const tpu_df_model_options *opt,
                            double step_s, tpu_df_step_fn step_fn, void *ud, int64_t steps,
                            double *ready_s, tpu_df_model_result *res, char *err, size_t errcap);

/* Resolves every AUTOTUNE value of 'spec' in place: tries values within
** opt->host_cores and keeps those with the least total consumer wait over
** 'steps' steps (ties: fewer cores, then smaller buffers). 'report' gets one
** line per choice ("stages[1].num_parallel_calls = 4"). */
tpu_status tpu_df_model_autotune(tpu_df_spec *spec, const tpu_df_model_options *opt,
                                 double step_s, int64_t steps, char *report, size_t reportcap,
                                 char *err, size_t errcap);

/* The real-cost run: the stages run on host threads as the model plans
** them (the same nodes, items and costs), each cost spent for real (a
** sleep, then a spin for its last 0.3 ms) instead of reading data, as the
** tf.data guide's ArtificialDataset sleeps, against a consumer spending
** step_s per step, for 'steps' steps (AUTOTUNE values must be resolved).
** *res holds what was measured (wall time). TPU_ERR_CONFIG for what is
** modelled only (workers, repeat), TPU_ERR_NOMEM, TPU_ERR_RUNTIME. */
tpu_status tpu_df_costrun(const tpu_df_spec *spec, const tpu_df_model_options *opt, double step_s, int64_t steps,
                          tpu_df_model_result *res, char *err, size_t errcap);

/* The profiler's verdict on a share of consumer time spent waiting for
** input (the same words as `tpusim train`): "highly input-bound" from 0.20
** on, "moderately input-bound" from 0.05 on, else "not input-bound" (each
** followed by ": " and a reason). This function can't fail. */
const char *tpu_df_verdict(double wait_share);

/* Timeline rows recorded by a model (tpu_df_model_create's timeline_steps). */
typedef struct tpu_df_interval {
  int row;                      /* index into the row names */
  double start_s, end_s;
  char kind;                    /* 'O' open, 'R' read, 'M' map, 'B' batch, 'S' serialize,
                                   'D' deserialize, 'T' consumer step, 'W' consumer wait,
                                   'I' iterator made (host.iterator_overhead_s) */
} tpu_df_interval;
int tpu_df_model_rows(const tpu_df_model *m);                  /* can't fail */
const char *tpu_df_model_row_name(const tpu_df_model *m, int row);
/* Borrowed array of intervals, valid until the next model call. */
const tpu_df_interval *tpu_df_model_intervals(const tpu_df_model *m, size_t *n);
/* }================================================================== */
#endif /* TPU_DF_H */
