/*
** train_feed.c -- the training input through datafeed: the real pipeline
** (tpu_df) gives each step's global batch, its host-time model
** (tpu_df_model) says when that batch reaches the cores' infeed.
**
** Without --pipeline the description is built here from --data: source,
** shuffle over the whole set (seeded), normalize to [0, 1] (not token ids:
** synthetic data for a model whose input feeds an embedding), batch (global;
** the last batch partial, as Keras' fit batches arrays: ceil(n / batch)
** steps an epoch), prefetch(2), with no modeled costs (so the input is
** free: infeed waits are zero). With --pipeline FILE it is the user's
** datafeed JSON (docs/DATAFEED.md); the global batch (--batch) replaces
** its batch stage's batch_size.
**
** Epochs as Keras' fit makes them: a pipeline without repeat is iterated
** afresh for each of the --epochs (tpu_df_spec_set_epochs: files reopened,
** buffers refilled, in the model too), and an epoch cut short by
** --steps-per-epoch drops the rest of its iteration (tpu_df_model_restart);
** a pipeline with repeat is one iterator over all epochs, which its repeat
** count must cover. The test set is
** always the --data source's test split (synthetic: the elements after the
** training ones, so they share the class prototypes), read whole.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "datafeed/df.h"
#include "frontend/fe_int.h"

/* The share of images:DIR and tfrecord:FILES held out as the test set
** (Keras' validation_split of its image classification tutorial). */
#define FE_VALIDATION_SPLIT 0.2

struct tpu_fe_feed {
  tpu_df *df;
  tpu_df_model *model;
  int batch;
  int64_t per_epoch;           /* batches per epoch */
  int64_t elements;            /* per epoch (the host-time model alone: the last batch's size) */
  bool fresh;                  /* each epoch a fresh iteration (no repeat stage) */
  int epoch, index;            /* position of the next batch */
  int epochs;                  /* fresh iterations (without the real pipeline: the model's) */
  int32_t *y;                  /* labels of the current batch */
};

void tpu_fe_dataset_free(tpu_fe_dataset *d) {
  tpu_free(d->x);
  tpu_free(d->y);
  memset(d, 0, sizeof *d);
}

/* IDX files say nothing of their classes: labels in [0, the model's units)
** are taken, as Keras' sparse categorical cross-entropy takes them (a set
** of 5 classes for a 5-unit model; MNIST's 10 when no model says). */
static void idx_classes(const tpu_fe_feed_opts *o, tpu_df_source *src) {
  if (o->model_classes > 0) src->classes = o->model_classes;
}

static tpu_status source_of(const tpu_fe_feed_opts *o, bool test, tpu_df_source *src, char *err, size_t errcap) {
  const char *data = o->data;
  *src = tpu_df_source_default();
  src->test_split = test;
  if (!strcmp(data, "fashion-mnist")) return TPU_OK;
  if (!strcmp(data, "mnist")) {
    /* No Debian package ships MNIST (dataset-fashion-mnist is Fashion-MNIST):
    ** the name works once the files are where a package would put them. */
    src->kind = TPU_DF_SRC_MNIST;
    src->dir = "/usr/share/datasets/mnist";
    idx_classes(o, src);
    if (access("/usr/share/datasets/mnist/train-labels-idx1-ubyte.gz", R_OK) != 0 &&
        access("/usr/share/datasets/mnist/train-labels-idx1-ubyte", R_OK) != 0) {
      snprintf(err, errcap, "MNIST is not installed (no Debian package ships it; "
               "dataset-fashion-mnist is Fashion-MNIST, the default). Download the four IDX files "
               "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
               "t10k-labels-idx1-ubyte.gz (e.g. from https://storage.googleapis.com/cvdf-datasets/mnist/) "
               "into a directory D and give --data D, or into /usr/share/datasets/mnist for --data mnist");
      return TPU_ERR_INPUT;
    }
    return TPU_OK;
  }
  if (!strcmp(data, "synthetic")) {
    src->kind = TPU_DF_SRC_SYNTHETIC;
    src->n = test ? o->synthetic_n + o->synthetic_n / 4 : o->synthetic_n;
    src->height = 28; src->width = 28; src->channels = 1; src->classes = 10;
    if (o->input_shape.h > 0) {
      src->height = o->input_shape.h; src->width = o->input_shape.w; src->channels = o->input_shape.c;
    }
    if (o->synthetic_classes > 0) src->classes = o->synthetic_classes;
    src->vocab = o->vocab;
    src->seed = o->seed;
    return TPU_OK;
  }
  static const char *const with_path[] = { "cifar10:", "images:", "tfrecord:" };
  for (size_t i = 0; i < sizeof with_path / sizeof *with_path; i++)
    if (!strcmp(data, with_path[i])) {   /* an empty path would read "/data_batch_1.bin" or the current directory */
      snprintf(err, errcap, "expected %s%s, got nothing after the colon", with_path[i], i == 2 ? "FILE" : "DIR");
      return TPU_ERR_INPUT;
    }
  if (!strncmp(data, "cifar10:", 8)) { src->kind = TPU_DF_SRC_CIFAR10; src->dir = data + 8; return TPU_OK; }
  if (!strncmp(data, "images:", 7) || !strncmp(data, "tfrecord:", 9)) {
    /* as Keras' image_dataset_from_directory(validation_split=0.2, subset=...,
    ** seed=the run's, image_size and channels of the model's input); the
    ** TFRecord images are decoded and resized the same way */
    const bool img = data[0] == 'i';
    const tpu_fe_shape in = o->input_shape;
    src->kind = img ? TPU_DF_SRC_IMAGES : TPU_DF_SRC_TFRECORD;
    if (img) src->dir = data + 7;
    else src->path = data + 9;
    src->height = in.h; src->width = in.w; src->channels = in.c;
    src->resize = true;
    src->validation_split = FE_VALIDATION_SPLIT;
    src->seed = o->seed & 0xffffffffu;
    if (img && in.c != 1 && in.c != 3 && in.c != 4) {
      snprintf(err, errcap, "the model's input has %d channels; images decode to 1 (grayscale), 3 (rgb) or 4 (rgba)", in.c);
      return TPU_ERR_CONFIG;
    }
    return TPU_OK;
  }
  src->kind = TPU_DF_SRC_MNIST;      /* a directory of the four IDX files */
  src->dir = data;
  idx_classes(o, src);
  (void)err; (void)errcap;
  return TPU_OK;
}

#define TRY(x) do { if ((st = (x)) != TPU_OK) goto fail; } while (0)

/* A split's samples against the model's input and classes: the value path
** reads exactly the model's input size per sample and indexes its outputs by
** label, so a split of another shape is refused before anything runs. */
static tpu_status check_split(const tpu_fe_feed_opts *o, const tpu_df_info *di, const char *split, char *err,
                              size_t errcap) {
  const tpu_fe_shape got = { di->height, di->width, di->channels };
  if (o->model_classes <= 0 || (tpu_fe_shape_size(got) == tpu_fe_shape_size(o->model_shape) &&
                                di->classes == o->model_classes))
    return TPU_OK;
  char a[48], b[48];
  if (o->model_binary && tpu_fe_shape_size(got) == tpu_fe_shape_size(o->model_shape)) {
    snprintf(err, errcap, "%s: the %s split has %d classes; the model's binary head (one sigmoid unit, "
             "binary_cross_entropy) takes 2, labels 0 and 1: give it data of two classes (a directory of IDX "
             "files, images:DIR of two folders, synthetic), or the model one output per class and softmax",
             di->source ? di->source : "the data", split, di->classes);
    return TPU_ERR_INPUT;
  }
  snprintf(err, errcap, "%s: the %s split has samples of %s and %d classes; the model takes input %s and gives %d "
           "classes", di->source ? di->source : "the data", split, tpu_fe_shape_str(got, a, sizeof a), di->classes,
           tpu_fe_shape_str(o->model_shape, b, sizeof b), o->model_classes);
  return TPU_ERR_INPUT;
}

/* The training pipeline's description, batching 'batch' elements: the
** --pipeline file, or the built-in one over the --data source (reading
** shard 0 of 'shards' of it when shards > 1), with the run's epochs. */
static tpu_status spec_of(const tpu_fe_feed_opts *o, int batch, int shards, tpu_df_spec **out, char *err,
                          size_t errcap) {
  tpu_df_spec *spec = NULL;
  tpu_status st;
  if (o->pipeline) {
    if ((st = tpu_df_spec_load(o->pipeline, &spec, err, errcap)) != TPU_OK) return st;
    /* the run's --batch is the batch: it replaces the file's batch_size */
    if (tpu_df_spec_set_batch_size(spec, batch) != TPU_OK) {
      snprintf(err, errcap, "%s: the pipeline has no batch stage; training takes the global batch (%d, --batch) "
               "from a batch stage", o->pipeline, o->global_batch);
      tpu_df_spec_destroy(spec);
      return TPU_ERR_CONFIG;
    }
  } else {
    tpu_df_source src;
    if ((st = source_of(o, false, &src, err, errcap))) return st;
    if ((st = tpu_df_spec_create(&spec)) != TPU_OK) { snprintf(err, errcap, "out of memory"); return st; }
    const int64_t n = src.kind == TPU_DF_SRC_SYNTHETIC ? src.n : 60000;
    TRY(tpu_df_spec_set_source(spec, &src));
    if (shards > 1) TRY(tpu_df_spec_shard(spec, shards, 0));
    TRY(tpu_df_spec_shuffle(spec, shards > 1 ? (n + shards - 1) / shards : n, o->seed));
    if (!src.vocab) TRY(tpu_df_spec_map(spec, TPU_DF_MAP_NORMALIZE, NULL, 0));   /* token ids stay ids */
    TRY(tpu_df_spec_batch(spec, batch, false));
    TRY(tpu_df_spec_prefetch(spec, 2));
  }
  if (tpu_df_spec_repeat_count(spec) == 0) TRY(tpu_df_spec_set_epochs(spec, o->epochs));
  *out = spec;
  return TPU_OK;
fail:
  snprintf(err, errcap, "%s", tpu_df_spec_errmsg(spec));
  tpu_df_spec_destroy(spec);
  return st;
}

tpu_status tpu_fe_feed_open(const tpu_fe_feed_opts *o, tpu_fe_feed **out, tpu_fe_feed_info *info, char *err, size_t errcap) {
  *out = NULL;
  tpu_df_spec *spec = NULL, *host = NULL;   /* the global pipeline; the busiest host's (several hosts) */
  tpu_status st;
  tpu_fe_feed *f = tpu_calloc(1, sizeof *f);
  if (!f) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  /* Timing only, synthetic data, the built-in pipeline: its shape, classes
  ** and size are known without making a sample (the samples, n x H x W x C
  ** bytes, are most of the time and memory of a timing-level run); the
  ** host-time model alone says when each batch is ready. */
  const bool model_only = o->no_values && !o->pipeline && !strcmp(o->data, "synthetic");
  if ((st = spec_of(o, o->global_batch, 1, &spec, err, errcap))) goto out;
  if (o->hosts > 1 && o->host_batch > 0 && (st = spec_of(o, o->host_batch, o->hosts, &host, err, errcap))) goto out;
  f->fresh = tpu_df_spec_repeat_count(spec) == 0;
  tpu_df_info di;
  if (model_only) {
    tpu_df_source src;
    if ((st = source_of(o, false, &src, err, errcap))) goto out;
    di = (tpu_df_info){ .elements = src.n, .batches_per_epoch = (src.n + o->global_batch - 1) / o->global_batch,
                        .epochs = o->epochs,
                        .features = src.height * src.width * src.channels, .height = src.height, .width = src.width,
                        .channels = src.channels, .classes = src.classes, .batch_size = o->global_batch };
  } else {
    /* A run that reads no values still opens a real pipeline (its files
    ** are checked, its sizes known) but starts no worker threads (each
    ** would be started, handed every batch and joined for nothing; in a
    ** sweep they compete with the other points for the host's cores) and
    ** makes no batches. */
    tpu_df_options dopt = tpu_df_options_default();
    if (o->no_values) { dopt.threads = 0; dopt.prefetch = 0; }
    if ((st = tpu_df_open(spec, &dopt, &f->df, err, errcap)) != TPU_OK) goto out;
    tpu_df_get_info(f->df, &di);
  }
  if ((st = check_split(o, &di, "training", err, errcap)) != TPU_OK) goto out;
  if (di.epochs != TPU_DF_FOREVER && di.epochs < o->epochs) {
    snprintf(err, errcap, "%s: the pipeline repeats %lld times; training for %d epochs needs a repeat stage of at "
             "least that count", o->pipeline ? o->pipeline : "pipeline", (long long)di.epochs, o->epochs);
    st = TPU_ERR_CONFIG;
    goto out;
  }
  tpu_df_model_options mo = tpu_df_model_options_default();
  mo.timeline_steps = o->timeline_steps;
  if ((st = tpu_df_model_create(host ? host : spec, &mo, &f->model, err, errcap)) != TPU_OK) goto out;
  f->batch = o->global_batch;
  f->per_epoch = di.batches_per_epoch;
  f->elements = di.elements;
  f->epochs = o->epochs;
  if (!(f->y = tpu_malloc((size_t)f->batch * sizeof *f->y))) { snprintf(err, errcap, "out of memory"); st = TPU_ERR_NOMEM; goto out; }
  info->shape = (tpu_fe_shape){ di.height, di.width, di.channels };
  info->classes = di.classes;
  info->batches_per_epoch = di.batches_per_epoch;
  info->elements = di.elements;
  *out = f;
  f = NULL;
out:
  tpu_df_spec_destroy(spec);
  tpu_df_spec_destroy(host);
  tpu_fe_feed_close(f);
  return st;
}

const struct tpu_df_model *fe_feed_host_model(const tpu_fe_feed *f) {
  return f->model;
}

void tpu_fe_feed_close(tpu_fe_feed *f) {
  if (!f) return;
  tpu_df_close(f->df);
  tpu_df_model_destroy(f->model);
  tpu_free(f->y);
  tpu_free(f);
}

tpu_status tpu_fe_feed_seek(tpu_fe_feed *f, int epoch, char *err, size_t errcap) {
  tpu_status st = f->df ? tpu_df_seek(f->df, epoch, 0) : TPU_OK;
  if (st != TPU_OK) snprintf(err, errcap, "cannot seek the pipeline to epoch %d: %s", epoch, tpu_df_errmsg(f->df));
  if (f->fresh) tpu_df_model_restart(f->model);
  f->epoch = epoch;
  f->index = 0;
  return st;
}

tpu_status tpu_fe_feed_next(tpu_fe_feed *f, double request_s, const float **x, const int32_t **y, int *n,
                            double *ready_s, char *err, size_t errcap) {
  *x = NULL;
  *y = NULL;
  if (!f->df) {   /* the host-time model only (no_values, synthetic; the last batch partial) */
    if (f->index == f->per_epoch) { f->epoch++; f->index = 0; }   /* the next fresh iteration */
    if (f->epoch >= f->epochs || f->index >= f->per_epoch) {
      snprintf(err, errcap, "the pipeline ran out of batches");
      return TPU_ERR_INPUT;
    }
    const int64_t left = f->elements - (int64_t)f->index * f->batch;
    *n = left < f->batch ? (int)left : f->batch;
  } else {
    tpu_df_batch b;
    tpu_status st = tpu_df_next(f->df, &b);
    if (st != TPU_OK || b.size < 1 || b.size > f->batch) {
      snprintf(err, errcap, "the pipeline %s", st != TPU_OK ? tpu_df_errmsg(f->df) : "ran out of batches");
      return st != TPU_OK ? st : TPU_ERR_INPUT;
    }
    *n = b.size;
    for (int i = 0; i < b.size; i++) f->y[i] = b.y[i];
    *x = b.x;
    *y = f->y;
  }
  double r = tpu_df_model_next(f->model, request_s);
  *ready_s = r < request_s ? request_s : r;
  f->index++;
  return TPU_OK;
}

tpu_status tpu_fe_feed_test_set(const tpu_fe_feed_opts *o, tpu_fe_dataset *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  tpu_df_source src;
  tpu_df_spec *spec = NULL;
  tpu_df *df = NULL;
  tpu_status st = source_of(o, true, &src, err, errcap);
  if (st) return st;
  const int chunk = 1000;
  if ((st = tpu_df_spec_create(&spec)) != TPU_OK) { snprintf(err, errcap, "out of memory"); return st; }
  if ((st = tpu_df_spec_set_source(spec, &src)) ||
      (!src.vocab && (st = tpu_df_spec_map(spec, TPU_DF_MAP_NORMALIZE, NULL, 0))) ||
      (st = tpu_df_spec_batch(spec, chunk, false))) {
    snprintf(err, errcap, "%s", tpu_df_spec_errmsg(spec));
    goto out;
  }
  if ((st = tpu_df_open(spec, NULL, &df, err, errcap)) != TPU_OK) goto out;
  tpu_df_info di;
  tpu_df_get_info(df, &di);
  if ((st = check_split(o, &di, "test", err, errcap)) != TPU_OK) goto out;
  int64_t first = src.kind == TPU_DF_SRC_SYNTHETIC ? o->synthetic_n : 0;  /* synthetic: the tail */
  int64_t n = di.elements - first;
  if (n < 1) {
    snprintf(err, errcap, "%s: the test split has no samples%s", di.source,
             first ? " (synthetic: a quarter as many as the training samples; give at least 4 of those)" : "");
    st = TPU_ERR_INPUT;
    goto out;
  }
  out->n = (int)n;
  out->shape = (tpu_fe_shape){ di.height, di.width, di.channels };
  out->classes = di.classes;
  out->x = tpu_malloc((size_t)n * (size_t)di.features * sizeof(float) + 1);
  out->y = tpu_malloc(((size_t)n + 1) * sizeof *out->y);
  if (!out->x || !out->y) { snprintf(err, errcap, "out of memory"); st = TPU_ERR_NOMEM; goto out; }
  for (int64_t at = 0;;) {
    tpu_df_batch b;
    if ((st = tpu_df_next(df, &b)) != TPU_OK) { snprintf(err, errcap, "%s", tpu_df_errmsg(df)); goto out; }
    if (b.size == 0) break;
    for (int i = 0; i < b.size; i++, at++) {
      if (at < first) continue;
      memcpy(out->x + (size_t)(at - first) * (size_t)di.features, b.x + (size_t)i * (size_t)b.features,
             (size_t)b.features * sizeof(float));
      out->y[at - first] = b.y[i];
    }
  }
out:
  if (st) tpu_fe_dataset_free(out);
  tpu_df_close(df);
  tpu_df_spec_destroy(spec);
  return st;
}
