/*
** fe.h -- the training front-end: a model description becomes one step
** plan, which both computes a data-parallel training step's values and
** lowers it into chip-engine programs for its timing. This is the
** library's one public header (what cli/ uses); frontend/fe_int.h holds
** the plan, the layers and the matmul backend for the front-end's .c files
** and white-box tests.
**
** Model. A model (native JSON, docs/MODELS.md; a built-in name; or a zoo
** name, frontend/zoo.c, which writes the same JSON) is a
** graph of layers -- dense, conv2d, max/avgpool, flatten, relu, tanh,
** sigmoid, dropout, global_avgpool, zero_padding, batch_normalization (per-core
** batch statistics, moving averages in the parameter vector), softmax (the output only: folded into
** the loss), and the merges add and concatenate -- listed so that
** every layer comes after its inputs (by default the layer before it), the
** last layer's output feeding softmax cross-entropy, with an sgd,
** momentum or adam optimizer. Loading checks every field and infers every
** shape once; nothing later re-validates. A sample is H x W x C row-major
** (NHWC); a flat vector is 1 x 1 x N; all parameters are one flat f32
** vector (tpu_fe_layer.woff/boff).
**
** The step plan (fe_int.h, frontend/plan.c). One training step of a
** core's shard of 'rows' samples is described once, as a list of steps in
** execution order: the GEMMs (M, N, K, transposes, whether the sim backend
** swaps the operands, precision passes, the tensors read and written), the
** VPU ops (name and shape), the data movement (im2col, col2im, pooling,
** views), the softmax cross-entropy, ONE all-reduce of every gradient and
** the optimizer update. Conv2d is lowered there, by im2col, to one GEMM
** [rows*OH*OW x KH*KW*C] . [KH*KW*C x F]. Two consumers walk the same plan,
** so they cannot drift apart:
**   values  frontend/layers.c (fe_forward, fe_backward) calls fe_gemm() for
**           each GEMM step -- the backend: OpenBLAS f32 (reference) or the
**           MXU's tile-level model with bf16 operands (sim) -- and
**           tpu_vpu_exec() for each VPU step, on both backends;
**   timing  frontend/train_lower.c (tpu_fe_step_program) lowers each step
**           into DMAs and engine ops on every core, shapes only.
** tests/check_train.c checks, for every built-in model and the shipped
** small-cnn, that the GEMMs the value path executes and the engine's
** matmuls are exactly the plan's.
**
** Data parallelism. The global batch is split into 'cores' equal shards in
** order; each core runs forward and backward on its shard with its own
** buffers, producing the gradient of the *global* mean loss restricted to
** its samples. The all-reduce then sums the cores' gradients in core order
** 0..C-1 -- tpu_sim_sum_cores(), the one order shared with the engine's
** all_reduce -- and the optimizer updates the one copy of the parameters.
** No core reads another's buffers and dropout masks are a hash of (seed,
** step, layer, global sample, element), so the bits do not depend on the
** host thread count.
**
** Not modelled: bf16 storage of activations (f32 everywhere), the dropout
** mask's generation on chip, overlapping the all-reduce with the backward
** pass (one bucket), the operand swap of the sim backend in the timing (the
** engine takes transposed operands at no cost); train_lower.c lists the
** lowering's own limits.
*/
#ifndef TPU_FE_H
#define TPU_FE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mxu/mxu.h"
#include "sim/sim.h"

/* {==================================================================
** Model description
** ================================================================== */
typedef enum tpu_fe_layer_kind {
  TPU_FE_DENSE = 0, TPU_FE_CONV2D, TPU_FE_MAXPOOL, TPU_FE_AVGPOOL, TPU_FE_FLATTEN,
  TPU_FE_RELU, TPU_FE_TANH, TPU_FE_SIGMOID, TPU_FE_DROPOUT, TPU_FE_ADD, TPU_FE_CONCAT,
  TPU_FE_GLOBAL_AVGPOOL, TPU_FE_SOFTMAX, TPU_FE_ZERO_PADDING, TPU_FE_BATCHNORM, TPU_FE_NKINDS
} tpu_fe_layer_kind;
const char *tpu_fe_layer_kind_name(tpu_fe_layer_kind k);   /* "dense", ... */

typedef struct tpu_fe_shape { int h, w, c; } tpu_fe_shape;  /* flat: h = w = 1 */

#define TPU_FE_MAX_INPUTS 8    /* inputs of one merge layer */
typedef struct tpu_fe_layer {
  tpu_fe_layer_kind kind;
  char name[32];               /* "name" in the JSON, or "" */
  int nin;                     /* inputs: 1, or 2..TPU_FE_MAX_INPUTS for add/concatenate */
  int inputs[TPU_FE_MAX_INPUTS];   /* producing layers' indexes, all < this one's; -1: the model input */
  int units;                   /* dense: output width */
  bool no_bias;                /* dense, conv2d: "use_bias": false (nb = 0) */
  tpu_fe_layer_kind act;       /* dense, conv2d: "activation": TPU_FE_RELU, _TANH, _SIGMOID or
                                  _SOFTMAX; TPU_FE_DENSE (0) for linear */
  int filters, kh, kw;         /* conv2d */
  int stride;                  /* conv2d, pools */
  bool same;                   /* conv2d: 'same' padding (else 'valid') */
  int pad_top, pad_left;       /* conv2d (derived), zero_padding */
  int pad_bottom, pad_right;   /* zero_padding */
  int pool;                    /* pools: window (square) */
  double rate;                 /* dropout: fraction dropped, [0, 1) */
  double momentum, epsilon;    /* batch_normalization: Keras' defaults 0.99, 1e-3 */
  bool no_center, no_scale;    /* batch_normalization: "center" / "scale": false (no beta / gamma) */
  tpu_fe_shape in, out;        /* derived by shape inference (in: of inputs[0]) */
  size_t woff, nw, boff, nb;   /* offsets and counts in the parameter vector (batch_normalization:
                                  gamma, beta) */
  size_t soff, ns;             /* batch_normalization: moving mean then moving variance (ns = 2C),
                                  non-trainable: no gradient, updated by the plan's BN_MOVING step */
} tpu_fe_layer;

typedef enum tpu_fe_opt_kind { TPU_FE_SGD = 0, TPU_FE_MOMENTUM, TPU_FE_ADAM } tpu_fe_opt_kind;
typedef struct tpu_fe_optimizer {
  tpu_fe_opt_kind kind;
  double lr;                   /* learning_rate */
  double momentum;             /* momentum (momentum) */
  double beta1, beta2, eps;    /* adam */
} tpu_fe_optimizer;

/* Layers of one model at most: ResNet152V2 has 564 Keras layers. The
** model stays a plain value (copied by assignment) at about 200 KiB. */
#define TPU_FE_MAX_LAYERS 1024
typedef struct tpu_fe_model {
  char name[64];
  tpu_fe_shape input;
  int nlayers;
  tpu_fe_layer layers[TPU_FE_MAX_LAYERS];
  tpu_fe_optimizer opt;
  uint64_t seed;               /* initializer (and dropout) seed */
  size_t nparams;              /* total weights + biases + non-trainable state (Keras' Total params) */
  size_t nstate;               /* of which non-trainable (batch_normalization's moving statistics) */
  size_t max_act;              /* largest per-sample activation (floats) */
  size_t max_cols;             /* largest per-sample im2col buffer (floats) */
} tpu_fe_model;

/* Names of the built-in models, NULL-terminated. */
const char *const *tpu_fe_model_builtin_names(void);
const char *tpu_fe_model_builtin_json(const char *name);  /* NULL if none */
/* The model zoo's names (frontend/zoo.c lists its models), NULL-terminated.
** A zoo model is named NAME[@HxWxC][:CLASSES] (Keras applications'
** input_shape and classes; default 224x224x3 and 1000, seed_cnn's
** 192x192x3 and 5). */
const char *const *tpu_fe_model_zoo_names(void);
/* The native JSON of zoo model 'spec' in *json (the caller's, tpu_free);
** *json NULL and TPU_OK when spec names no zoo model; TPU_ERR_CONFIG with
** a message for bad knobs. */
tpu_status tpu_fe_model_zoo_json(const char *spec, char **json, char *err, size_t errcap);
/* Loads a model: a built-in or zoo name, else a JSON file. Parses, checks every
** field and infers every shape. On failure returns TPU_ERR_CONFIG (or
** TPU_ERR_IO) with a message naming the file, line:column, the layer index,
** the field and the shapes involved. 'out' is written only on success. */
tpu_status tpu_fe_model_load(const char *name_or_file, tpu_fe_model *out, char *err, size_t errcap);
/* Same, from JSON text; 'where' names it in messages. */
tpu_status tpu_fe_model_parse(const char *text, const char *where, tpu_fe_model *out,
                          char *err, size_t errcap);
size_t tpu_fe_shape_size(tpu_fe_shape s);

/* A layer's part of one training step, read off the step plan (plan.c) of
** a 'batch'-sample step on one core: its GEMMs on the MXU in plan order
** (forward "matmul", then backward "dW" and "dX" where the plan has them;
** M x K x N, the product [M x K] . [K x N]) and its FLOPs, 2*M*N*K over
** those GEMMs (the MXU's work; VPU ops are not counted). */
#define TPU_FE_LAYER_GEMMS 3
typedef struct tpu_fe_layer_gemms {
  int ngemms;
  struct { const char *what; bool forward; int64_t m, k, n; } gemm[TPU_FE_LAYER_GEMMS];
  uint64_t forward_flops, step_flops;
} tpu_fe_layer_gemms;
/* Fills out[0..m->nlayers) for a training step of 'batch' samples.
** TPU_ERR_NOMEM, or TPU_OK. */
tpu_status tpu_fe_model_gemms(const tpu_fe_model *m, int batch, tpu_fe_layer_gemms *out);
/* "28x28x1" or "784". */
const char *tpu_fe_shape_str(tpu_fe_shape s, char *buf, size_t cap);
/* }================================================================== */

/* {==================================================================
** Backend: where the matmuls run (the value path; see fe_int.h)
** ================================================================== */
typedef enum tpu_fe_backend_kind { TPU_FE_BACKEND_REFERENCE = 0, TPU_FE_BACKEND_SIM } tpu_fe_backend_kind;
typedef struct tpu_fe_backend {
  tpu_fe_backend_kind kind;
  tpu_mxu_config mxu;          /* sim */
  int mxus;                    /* sim: arrays per core */
  tpu_precision prec;          /* sim */
} tpu_fe_backend;

/* Optimizer state (part of a trainer and of its checkpoints). */
typedef struct tpu_fe_opt_state {
  float *m, *v;                /* first / second moments (v: adam only), or NULL */
  uint64_t t;                  /* updates done */
} tpu_fe_opt_state;
/* }================================================================== */

/* {==================================================================
** Step timing on the chip engine (train_lower.c)
**
** One training step on 'cores' cores with a per-core shard of 'rows'
** samples is lowered into each core's engine program and run at the timing
** level. Stall parts sum to step_cycles on every core; reported averaged.
** ================================================================== */
/* The engine program of one training step (train) or inference pass (!train)
** of model m, data-parallel over chip->cores cores with 'rows' samples per core,
** shapes only (run it at TPU_FIDELITY_TIMING). Every core's batch is ready at
** infeed_ready_cycles (one infeed entry per core). On success *out is the
** caller's (tpu_sim_program_destroy); on failure err says why (layer index,
** op, bytes when VMEM cannot hold a tile). */
tpu_status tpu_fe_step_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                           int rows, bool train, uint64_t infeed_ready_cycles,
                           tpu_sim_program **out, char *err, size_t errcap);

typedef struct tpu_fe_step_timing {
  uint64_t step_cycles;        /* the step's length (the engine run's cycles) */
  double stall[TPU_SIM_NSTALL];/* cycles per stall kind (TPU_SIM_MXU_BUSY ...), mean over cores */
  uint64_t macs;               /* multiply-adds per core (all bf16 passes) */
  uint64_t mxu_cycles_capacity;/* rows*cols*mxus*step_cycles */
  uint64_t hbm_bytes;          /* per core, moved by its DMAs */
  uint64_t allreduce_bytes;    /* gradient bytes per core */
} tpu_fe_step_timing;

/* Where a timed step's trace goes: appended to 'out' (a trace begun with
** tpu_sim_trace_steps_begin) as step 'step', 't0_us' microseconds of
** simulated time into the trace. */
typedef struct tpu_fe_step_trace {
  tpu_text *out;
  long step;
  double t0_us;
} tpu_fe_step_trace;

/* Times one step (or one inference pass when !train): tpu_fe_step_program, then
** tpu_sim_run at the timing level on 'threads' host threads (results do not
** depend on it). 'infeed_ready_cycles' is how long after the step's start
** the batch is ready (0: already there). When 'trace' is not NULL the run's
** events go to the trace (tpu_sim_trace_steps_add). Errors: those of
** tpu_fe_step_program, and TPU_ERR_RANGE when the engine refuses the program. */
tpu_status tpu_fe_time_step(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                        int rows, bool train, uint64_t infeed_ready_cycles, int threads,
                        tpu_fe_step_timing *out, const tpu_fe_step_trace *trace,
                        char *err, size_t errcap);
/* }================================================================== */

/* {==================================================================
** Data: datafeed's pipeline and host-time model (train_feed.c)
** ================================================================== */
typedef struct tpu_fe_dataset {    /* a whole split in memory (the test set) */
  int n;                       /* samples */
  tpu_fe_shape shape;              /* per sample */
  int classes;
  float *x;                    /* n x size, scaled to [0, 1] */
  uint8_t *y;                  /* n labels */
} tpu_fe_dataset;
void tpu_fe_dataset_free(tpu_fe_dataset *d);

typedef struct tpu_fe_feed tpu_fe_feed;
typedef struct tpu_fe_feed_opts {
  const char *data;            /* fashion-mnist, mnist, synthetic or an IDX directory */
  const char *pipeline;        /* a datafeed JSON file, or NULL for the built-in one */
  int global_batch, epochs, synthetic_n;
  uint64_t seed;               /* shuffle and synthetic data */
  tpu_fe_shape synthetic_shape;/* synthetic: a sample's shape (zero: 28x28x1), e.g. the model's input */
  int synthetic_classes;       /* synthetic: classes, 2..65536 (0: 10), e.g. the model's outputs */
} tpu_fe_feed_opts;
typedef struct tpu_fe_feed_info {
  tpu_fe_shape shape;
  int classes;
  int64_t batches_per_epoch;
} tpu_fe_feed_info;
/* Opens the training pipeline and its host-time model. On failure *out is
** NULL and err names the file and field (TPU_ERR_CONFIG / INPUT / IO). */
tpu_status tpu_fe_feed_open(const tpu_fe_feed_opts *o, tpu_fe_feed **out, tpu_fe_feed_info *info, char *err, size_t errcap);
void tpu_fe_feed_close(tpu_fe_feed *f);                                  /* NULL is a no-op */
/* Positions the pipeline at the first batch of 'epoch'. */
tpu_status tpu_fe_feed_seek(tpu_fe_feed *f, int epoch, char *err, size_t errcap);
/* The next global batch (borrowed until the next call) and the simulated
** host time it is ready, for a consumer asking at 'request_s'. The labels
** are bytes: *y is NULL when the data has more than 256 classes (then only
** the timing, which never reads values, can use the batch). */
tpu_status tpu_fe_feed_next(tpu_fe_feed *f, double request_s, const float **x, const uint8_t **y, double *ready_s,
                        char *err, size_t errcap);
/* The test split of o->data (synthetic: synthetic_n/4 samples after the
** training ones, of o's synthetic shape and classes), whole, scaled to
** [0, 1]; at most 256 classes (byte labels). */
tpu_status tpu_fe_feed_test_set(const tpu_fe_feed_opts *o, tpu_fe_dataset *out, char *err, size_t errcap);
/* }================================================================== */


/* {==================================================================
** Trainer: the data-parallel step over the cores (train.c)
** ================================================================== */
typedef struct tpu_fe_trainer {
  const tpu_fe_model *model;       /* borrowed; must outlive the trainer */
  tpu_fe_backend be;
  int cores, rows;             /* rows per core = global batch / cores */
  int threads;                 /* host threads running the cores (1..cores) */
  struct fe_core_ws *ws;       /* [cores]; fe_int.h */
  struct fe_plan *plan;        /* the training step's plan; fe_int.h */
  float *params, *grad;        /* nparams each */
  tpu_fe_opt_state opt;
} tpu_fe_trainer;

tpu_status tpu_fe_trainer_create(const tpu_fe_model *m, const tpu_fe_backend *be, int cores, int global_batch,
                             int threads, tpu_fe_trainer *t);
void tpu_fe_trainer_destroy(tpu_fe_trainer *t);
/* One step on global batch x (global_batch x input size) with labels y:
** forward and backward on every core, gradient sum in core order, update.
** *loss and *correct get the batch's mean loss and number right. */
tpu_status tpu_fe_trainer_step(tpu_fe_trainer *t, const float *x, const uint8_t *y, uint64_t step,
                           uint64_t first_sample, double *loss, int *correct);
/* Mean loss and accuracy over a whole dataset (forward only, all cores). */
tpu_status tpu_fe_trainer_eval(tpu_fe_trainer *t, const tpu_fe_dataset *d, double *loss, double *acc);
/* FNV-1a of the parameters' bits: a fingerprint for bit-identity checks. */
uint64_t tpu_fe_params_hash(const float *p, size_t n);

/* Checkpoint: DIR/checkpoint.bin, written atomically, with the model's
** parameter count, seed, batch and optimizer kind to check on resume. */
typedef struct tpu_fe_ckpt_info {
  uint64_t seed;
  int global_batch;
  int epochs_done;             /* data position: next epoch to run */
  uint64_t step;               /* global step count so far */
} tpu_fe_ckpt_info;
tpu_status tpu_fe_ckpt_save(const char *dir, const tpu_fe_trainer *t, const tpu_fe_ckpt_info *info,
                        char *err, size_t errcap);
/* Restores params and optimizer state; checks that 'want' (seed, batch)
** and the model match; fills info. TPU_ERR_INPUT with a message otherwise. */
tpu_status tpu_fe_ckpt_load(const char *dir, tpu_fe_trainer *t, const tpu_fe_ckpt_info *want, tpu_fe_ckpt_info *info,
                        char *err, size_t errcap);
/* }================================================================== */

#endif
