/*
** fe.h -- the training front-end: a model description becomes one step
** plan, which both computes a data-parallel training step's values and
** lowers it into chip-engine programs for its timing. This is the
** library's one public header (what cli/ uses); frontend/fe_int.h holds
** the plan, the layers and the matmul backend for the front-end's .c files
** and white-box tests.
**
** Model. A model (native JSON, docs/MODELS.md; a built-in name; a zoo
** name, frontend/zoo.c, which writes the same JSON; or Keras'
** model.to_json(), which frontend/keras.c translates into the same JSON
** object, or an ONNX file, which frontend/onnx.c translates likewise, its
** initializers becoming the starting weights; so one loader checks them
** all) is a
** graph of layers -- dense (on the last axis of any input, as Keras'),
** conv2d, depthwise_conv2d and separable_conv2d
** (depthwise then pointwise; on the MXU as block-diagonal GEMMs, see
** fe_int.h), max/avgpool, flatten, relu (optionally capped: Keras'
** max_value, relu6), tanh, sigmoid, gelu (exact or tanh), swish,
** leaky_relu, dropout, global_avgpool, zero_padding,
** batch_normalization (per-core batch statistics, moving averages in the
** parameter vector), layer_normalization (over each position's channels),
** embedding (token ids, the model's input, to vectors), position_embedding
** (a learned vector added at each position), take (one position of a
** sequence: BERT's and ViT's first token), reshape (a view), permute (a
** transpose of the axes), rescaling (x*scale + offset, per channel or
** all), normalization (Keras': (x - mean)/max(sqrt(variance), 1e-7) per
** channel), class_token
** (ViT's learned token before the patches),
** multi_head_attention (self-attention over a sequence's positions: the
** query, key, value and output projections as GEMMs, the scores and the
** weighted sum as batched GEMMs per sample and head, a masked softmax on
** the VPU), softmax (the output only: folded into the loss), and
** the merges add, multiply (equal shapes, or a 1x1xC gate times an
** HxWxC map: squeeze-and-excite) and concatenate -- listed so that
** every layer comes after its inputs (by default the layer before it), the
** last layer's output feeding softmax cross-entropy (binary cross-entropy
** for one sigmoid unit; several outputs' weighted losses summed), with an sgd,
** momentum or adam optimizer. Loading checks every field and infers every
** shape once; nothing later re-validates. A sample is H x W x C row-major
** (NHWC); a flat vector is 1 x 1 x N; a sequence of L positions of C
** features is 1 x L x C; all parameters are one flat f32
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
  TPU_FE_GLOBAL_AVGPOOL, TPU_FE_SOFTMAX, TPU_FE_ZERO_PADDING, TPU_FE_BATCHNORM, TPU_FE_DEPTHWISE,
  TPU_FE_SEPARABLE, TPU_FE_GELU, TPU_FE_SWISH, TPU_FE_LEAKY_RELU, TPU_FE_LAYERNORM, TPU_FE_MULTIPLY,
  TPU_FE_MHA, TPU_FE_EMBEDDING, TPU_FE_POS_EMBEDDING, TPU_FE_TAKE, TPU_FE_RESHAPE, TPU_FE_CLASS_TOKEN,
  TPU_FE_PERMUTE, TPU_FE_RESCALING, TPU_FE_NORMALIZATION, TPU_FE_NKINDS
} tpu_fe_layer_kind;
const char *tpu_fe_layer_kind_name(tpu_fe_layer_kind k);   /* "dense", ... */

typedef struct tpu_fe_shape { int h, w, c; } tpu_fe_shape;  /* flat: h = w = 1 */

#define TPU_FE_MAX_INPUTS 8    /* inputs of one merge layer */
#define TPU_FE_MAX_VEC 4       /* per-channel values rescaling and normalization hold (an image's RGBA) */
typedef struct tpu_fe_layer {
  tpu_fe_layer_kind kind;
  char name[32];               /* "name" in the JSON, or "" */
  int nin;                     /* inputs: 1, or 2..TPU_FE_MAX_INPUTS for add/concatenate */
  int inputs[TPU_FE_MAX_INPUTS];   /* producing layers' indexes, all < this one's; -1: the model input */
  int units;                   /* dense: output width */
  int tied;                    /* dense: 1 + the index of the embedding whose input_dim x output_dim
                                  table it reads transposed as its kernel ("tied_to"; no parameters of
                                  its own, no bias; the table's gradient sums both uses); 0: its own */
  bool no_bias;                /* dense, the convs: "use_bias": false (nb = 0) */
  tpu_fe_layer_kind act;       /* dense, the convs: "activation": TPU_FE_RELU, _TANH, _SIGMOID or
                                  _SOFTMAX; TPU_FE_DENSE (0) for linear */
  bool capped;                 /* relu (the layer, or act): capped at max_value (Keras' ReLU
                                  max_value; "relu6" is 6) */
  double max_value;            /* ... >= 0 */
  int filters, kh, kw;         /* conv2d, separable_conv2d (filters: the pointwise's); kernel of
                                  the convs */
  int depth_multiplier;        /* depthwise_conv2d, separable_conv2d: outputs per input channel */
  int groups;                  /* conv2d: Keras' groups (0 or 1: one); > 1: in.c and filters divisible
                                  by it, kernel kh x kw x in.c/groups x filters, output channel f
                                  reading input channels of group f/(filters/groups) only */
  int stride;                  /* the convs, pools */
  bool same;                   /* the convs, pools: 'same' padding (else 'valid') */
  int pad_top, pad_left;       /* the convs (derived), zero_padding */
  int pad_bottom, pad_right;   /* zero_padding */
  int pool;                    /* pools: window (square) */
  double rate;                 /* dropout, multi_head_attention (on the attention weights): fraction
                                  dropped, [0, 1) */
  bool per_sample;             /* dropout: whole samples dropped (Keras' noise_shape (None, 1, 1, 1):
                                  EfficientNet's stochastic depth) */
  double momentum, epsilon;    /* batch_normalization: Keras' defaults 0.99, 1e-3;
                                  layer_normalization: epsilon (1e-3) */
  bool no_center, no_scale;    /* batch_normalization, layer_normalization: "center" / "scale":
                                  false (no beta / gamma) */
  bool approximate;            /* gelu: the tanh approximation (Keras' approximate=True) */
  double negative_slope;       /* leaky_relu: Keras' LeakyReLU negative_slope (0.3), >= 0 */
  int num_heads, key_dim, value_dim;   /* multi_head_attention: H, d (query and key), dv */
  bool causal;                 /* multi_head_attention: each position attends to itself and those
                                  before it (Keras' use_causal_mask) */
  int input_dim, output_dim;   /* embedding: vocabulary, width */
  int token_types;             /* embedding: rows of a token-type table (BERT's segments; 0: none),
                                  every token of type 0 */
  int max_length;              /* position_embedding: positions it has (>= the input's) */
  int position;                /* take: the position taken */
  int ntarget, target[3];      /* reshape: the output's shape as given ([n], [length, channels] or
                                  [h, w, c]; one entry may be -1: inferred); permute: Keras' dims,
                                  1-based over a sequence's 2 or an image's 3 axes */
  int nvec;                    /* rescaling: values in vec (1: every channel, or C); normalization:
                                  1 or C given, 0: adapted (mean, variance, count in the state) */
  float vec[2][TPU_FE_MAX_VEC];   /* rescaling: scale, offset; normalization: mean, variance */
  tpu_fe_shape in, out;        /* derived by shape inference (in: of inputs[0]) */
  bool image;                  /* derived: the output is an image (Keras' rank 4), 1x1 ones included
                                  (EfficientNet's se_reshape and the 1x1 convs after it); false: a
                                  vector or a sequence (tpusim model prints the rank) */
  size_t woff, nw, boff, nb;   /* offsets and counts in the parameter vector (batch_normalization:
                                  gamma, beta; depthwise kernel kh x kw x C x depth_multiplier as
                                  Keras', separable_conv2d's then followed by its pointwise one) */
  size_t nw2;                  /* separable_conv2d: the last nw2 of the nw weights are the pointwise
                                  kernel (C*depth_multiplier x filters) */
  size_t soff, ns;             /* batch_normalization: moving mean then moving variance (ns = 2C),
                                  non-trainable: no gradient, updated by the plan's BN_MOVING step;
                                  normalization (adapted): mean, variance, count (ns = 2C + 1, Keras'
                                  weights), not updated */
} tpu_fe_layer;

typedef enum tpu_fe_opt_kind { TPU_FE_SGD = 0, TPU_FE_MOMENTUM, TPU_FE_ADAM } tpu_fe_opt_kind;
typedef struct tpu_fe_optimizer {
  tpu_fe_opt_kind kind;
  double lr;                   /* learning_rate */
  double momentum;             /* momentum (momentum) */
  double beta1, beta2, eps;    /* adam */
} tpu_fe_optimizer;

/* Layers of one model at most: ResNet152V2 has 564 Keras layers. The
** model stays a plain value (copied by assignment) at about 256 KiB. */
#define TPU_FE_MAX_LAYERS 1024
/* Keras' dtype policies (tf.keras.mixed_precision): where a step keeps its
** values. mixed_bfloat16, the one TPU training uses and the default: each
** layer's output and its gradient are bf16 (in HBM, and rounded so in the
** value path), the last layer's output (the logits the loss reads) f32 as
** Keras' mixed-precision guide has it; weights, their gradients and the
** optimizer state f32. float32: everything f32. docs/COMPILER.md. */
typedef enum tpu_fe_dtype_policy { TPU_FE_MIXED_BFLOAT16 = 0, TPU_FE_FLOAT32 } tpu_fe_dtype_policy;
const char *tpu_fe_dtype_policy_name(tpu_fe_dtype_policy p);   /* "mixed_bfloat16", "float32"; "?" */
/* Parses a policy name; 1 and *out set, or 0 (unknown) leaving *out. */
int tpu_fe_dtype_policy_parse(const char *s, tpu_fe_dtype_policy *out);

/* The loss of the model's output ("loss" in the native JSON; by default
** the head's, docs/MODELS.md "Losses"): softmax cross-entropy over the
** last layer's class scores (a softmax there is folded into it), or binary
** cross-entropy of one sigmoid unit, taken from its logit (the sigmoid
** folded in, as Keras' binary_crossentropy does on a sigmoid's output),
** with 0/1 labels and accuracy as sigmoid > 0.5; or, for a further output
** of a model with several, mean squared error of one value against a
** target made from the sample's label (docs/MODELS.md "Several outputs");
** or a causal language model's next-token loss (GPT-2's; one output only):
** a 1 x L x V output of a model whose input, L token ids, feeds an
** embedding; position t's logits against the input's id at t+1, the last
** position left out; the mean over the samples' L-1 tokens (the samples'
** own labels are not read). */
typedef enum tpu_fe_loss {
  TPU_FE_LOSS_SOFTMAX_XENT = 0, TPU_FE_LOSS_BINARY_XENT, TPU_FE_LOSS_MSE, TPU_FE_LOSS_NEXT_TOKEN_XENT
} tpu_fe_loss;
/* "softmax_cross_entropy", "binary_cross_entropy", "mean_squared_error",
** "next_token_softmax_cross_entropy"; "?" */
const char *tpu_fe_loss_name(tpu_fe_loss l);
/* The model's outputs ("outputs" in the native JSON; Keras' output_layers):
** the loss trained is the sum of each output's mean loss times its weight,
** Keras' compile(loss=[...], loss_weights=[...]). Output 0 takes the data's
** labels as they are (softmax or binary cross-entropy: its classes are the
** data's); an output trained with mean_squared_error takes the target
** 2*label/(classes-1) - 1 in [-1, 1]. */
#define TPU_FE_MAX_OUTPUTS 4
typedef struct tpu_fe_output {
  int layer;                   /* the layer whose values it is */
  tpu_fe_loss loss;
  double weight;               /* >= 0, finite; 1 unless given */
} tpu_fe_output;

typedef struct tpu_fe_model {
  char name[64];
  tpu_fe_shape input;
  int nlayers;
  tpu_fe_layer layers[TPU_FE_MAX_LAYERS];
  tpu_fe_optimizer opt;
  tpu_fe_loss loss;            /* output 0's */
  int nout;                    /* outputs: 1 (the last layer, weight 1) unless "outputs" lists more */
  tpu_fe_output out[TPU_FE_MAX_OUTPUTS];
  uint64_t seed;               /* initializer (and dropout) seed */
  size_t nparams;              /* total weights + biases + non-trainable state (Keras' Total params) */
  size_t nstate;               /* of which non-trainable (batch_normalization's moving statistics) */
  size_t max_act;              /* largest per-sample activation (floats) */
  size_t max_cols;             /* largest per-sample im2col buffer (floats) */
  size_t max_wx;               /* largest depthwise (or grouped conv2d) kernel expanded to its
                                  block-diagonal GEMM operand, kh*kw*C x C*depth_multiplier (grouped:
                                  kh*kw*C x filters) (floats; 0: none) */
  tpu_fe_dtype_policy policy;  /* not from the file: the run's (--dtype-policy), mixed_bfloat16 unless set */
} tpu_fe_model;

/* The vocabulary of the model's token ids: the least input_dim of the
** embeddings reading the model's input (every id below it is in range of
** each); 0 when no embedding reads it (an image model). Can't fail. */
int tpu_fe_model_vocab(const tpu_fe_model *m);
/* The predictions the loss scores per sample: 1, or L-1 tokens for the
** next-token loss (accuracy is over these). Can't fail. */
int tpu_fe_model_predictions(const tpu_fe_model *m);
/* The classes of the samples' labels the data must carry: output 0's
** width (softmax cross-entropy), 2 for binary cross-entropy (labels 0 and
** 1), or 2 for the next-token loss, which reads no sample label (its labels
** are the input's ids), so that any labelled split feeds it. */
int tpu_fe_model_label_classes(const tpu_fe_model *m);

/* Names of the built-in models, NULL-terminated. */
const char *const *tpu_fe_model_builtin_names(void);
const char *tpu_fe_model_builtin_json(const char *name);  /* NULL if none */
/* The model zoo's names (frontend/zoo.c lists its models), NULL-terminated.
** A zoo model is named NAME[@HxWxC][:CLASSES] (Keras applications'
** input_shape and classes; default 224x224x3 and 1000, xception's
** 299x299x3, seed_cnn's 192x192x3 and 5). */
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

/* Keras import (frontend/keras.c, docs/MODELS.md "Keras import"). A file
** (or text) may also be the JSON Keras writes with model.to_json() --
** tf.keras 2.x or Keras 3, Sequential or Functional, nested models
** included -- which is translated into the native format and checked by the
** same loader. "FILE@HxWxC" gives such a file's input shape where the file
** leaves it unspecified (null). What a load reports besides errors: */
typedef struct tpu_fe_model_notes {
  char format[64];             /* "native", "Keras 2.1.6-tf Functional", "Keras 3 Sequential", ... */
  int nignored;                /* Keras options not modelled, reported once each ... */
  char *ignored;               /* ... as nignored lines, each ending in '\n' (NULL when none; tpu_free) */
  float *weights;              /* the file's starting weights, the model's nparams values in its parameter
                                  layout (an ONNX file's initializers), or NULL: the initializer draws them
                                  (native and Keras files); tpu_fe_model_notes_free frees them */
} tpu_fe_model_notes;
/* tpu_fe_model_load and tpu_fe_model_parse with the notes (NULL: none
** wanted); 'input_shape' is the "HxWxC" after '@' (NULL: none). On failure
** *notes is left empty. */
tpu_status tpu_fe_model_load_notes(const char *name_or_file, tpu_fe_model *out, tpu_fe_model_notes *notes,
                                   char *err, size_t errcap);
tpu_status tpu_fe_model_parse_notes(const char *text, const char *where, const char *input_shape,
                                    tpu_fe_model *out, tpu_fe_model_notes *notes, char *err, size_t errcap);
void tpu_fe_model_notes_free(tpu_fe_model_notes *n);   /* NULL is a no-op; leaves it empty */
/* ONNX import (frontend/onnx.c, docs/MODELS.md "ONNX import"). A file
** whose name ends in ".onnx" is read as an ONNX model (opsets 11..17, as
** torch.onnx.export writes it): its graph is translated into the native
** format, NCHW into tpusim's HWC, and checked by the same loader; its
** initializers become notes->weights. This is the same from bytes; 'where'
** names them in messages (TPU_ERR_INPUT: not ONNX; TPU_ERR_CONFIG: refused,
** every unsupported operator type named with its first node). */
tpu_status tpu_fe_model_parse_onnx(const void *buf, size_t len, const char *where, tpu_fe_model *out,
                                   tpu_fe_model_notes *notes, char *err, size_t errcap);
size_t tpu_fe_shape_size(tpu_fe_shape s);

/* A layer's part of one training step, read off the step plan (plan.c) of
** a 'batch'-sample step on one core: its GEMMs on the MXU in plan order
** (forward "matmul", then backward "dW" and "dX" where the plan has them;
** M x K x N, the product [M x K] . [K x N]; a depthwise one, "dw matmul",
** "dw dW", "dw dX", is 'groups' = C independent products of that shape, one
** per channel) and its FLOPs, 2*groups*M*N*K over those GEMMs (the model's
** multiply-adds; VPU ops are not counted, nor the zeros the MXU multiplies
** in a depthwise GEMM's block-diagonal operand). multi_head_attention's
** "scores" and "context" GEMMs (and their gradients') are 'groups' =
** batch x heads products too, one per sample and head. */
#define TPU_FE_LAYER_GEMMS 18   /* multi_head_attention: 6 forward, 12 backward */
typedef struct tpu_fe_layer_gemms {
  int ngemms;
  struct { const char *what; bool forward; int64_t groups, m, k, n; } gemm[TPU_FE_LAYER_GEMMS];
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
** infeed_ready_cycles (one infeed entry per core). Core 0's program is built
** and the other cores share it (tpu_sim_program_share). On success *out is
** the caller's (tpu_sim_program_destroy); on failure err says why (layer
** index, op, bytes when VMEM cannot hold a tile: TPU_ERR_CONFIG; a step too
** large for the engine or the chip's HBM, from its shapes, before anything
** is built: TPU_ERR_RANGE, see tpu_fe_step_size_of). */
tpu_status tpu_fe_step_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                           int rows, bool train, uint64_t infeed_ready_cycles,
                           tpu_sim_program **out, char *err, size_t errcap);

/* The size of that program, from the shapes alone (nothing is built): its
** ops on each core (every core runs the same program) and the bytes of HBM
** its whole tensors take on each core (activations and their gradients
** with the step's working tensors -- a depthwise kernel expanded,
** separable_conv2d's middle --, the parameters, their gradients and the
** optimizer state, all f32; the tiles' views come on top), counted by the
** lowering itself, run without a program (sim.h, "The lowering"). tpu_fe_step_program refuses, with
** TPU_ERR_RANGE and these figures, before building anything, a step whose
** ops over all the cores exceed TPU_SIM_MAX_OPS or whose tensors exceed a
** chip's HBM. Errors: TPU_ERR_INPUT (no model, rows < 1), TPU_ERR_CONFIG
** (VMEM too small for a tile), TPU_ERR_NOMEM. */
typedef struct tpu_fe_step_size {
  double ops_per_core;
  double hbm_tensor_bytes_per_core;    /* the sum of the four below */
  double activation_bytes, parameter_bytes, gradient_bytes, optimizer_state_bytes;
} tpu_fe_step_size;
tpu_status tpu_fe_step_size_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                               bool train, tpu_fe_step_size *out);

/* The kernels of one step's compiled program (a training step, or an
** inference pass when !train): what XLA would compile, each fused kernel
** once (docs/TRAINING.md, "Compilation"). TPU_ERR_INPUT (no model, rows <
** 1), TPU_ERR_NOMEM, or TPU_OK with *out set. */
tpu_status tpu_fe_program_kernels(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                  bool train, int *out);

/* The engine program of 'steps' training steps (1..1000) one after another,
** the batch of step s ready at ready_cycles[s] (cycles from the run's start,
** nondecreasing; one infeed entry per core and step). A step's infeed asks
** for its batch once the step before's last op (in program order) has
** ended, as the dequeue in a training loop's program does; a DMA of that
** step still in flight (the DMA engines keep several) overlaps the request,
** and the stall table counts those cycles as infeed_wait. Every op carries
** its step (tpu_sim_op.step), so the engine's per-step stall breakdown is
** per training step. Errors as
** tpu_fe_step_program's, and TPU_ERR_INPUT for a step count out of range. */
tpu_status tpu_fe_steps_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                int steps, const uint64_t *ready_cycles, tpu_sim_program **out, char *err,
                                size_t errcap);

typedef struct tpu_fe_step_timing {
  uint64_t step_cycles;        /* the step's length (the engine run's cycles) */
  double stall[TPU_SIM_NSTALL];/* cycles per stall kind (TPU_SIM_MXU_BUSY ...), mean over cores */
  uint64_t core_stall[TPU_MAX_CORES][TPU_SIM_NSTALL];   /* the same on each core of the chip timed (each
                                  core's add up to step_cycles; entries past its cores are 0) */
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
/* Where one step's time and bytes go, layer by layer (the report of
** `tpusim model NAME --batch B --chip C` and of train --json): the step
** lowered and run once at the timing level on core 0's program (every
** core runs the same), each plan step's ops attributed to its layer. */
/* The parts of a multi_head_attention layer's step (forward and backward
** each): the query, key, value and output projections (with their biases
** and the heads' split and merge), the scores (QK^T, the scale, the causal
** mask), the softmax (and the weights' dropout), the weighted sum (PV). */
typedef enum tpu_fe_att_part {
  TPU_FE_ATT_PROJECTIONS = 0, TPU_FE_ATT_SCORES, TPU_FE_ATT_SOFTMAX, TPU_FE_ATT_WEIGHTED_SUM, TPU_FE_ATT_NPARTS
} tpu_fe_att_part;
const char *tpu_fe_att_part_name(tpu_fe_att_part p);   /* "projections", ...; "?" */
typedef struct tpu_fe_layer_cost {
  int layer;                   /* model layer, or -1: the step's own parts (infeed, loss, all-reduce, optimizer) */
  int part;                    /* in tpu_fe_step_costs.att: its tpu_fe_att_part; else -1 */
  double cycles;               /* how far its ops moved the step's end (the entries add up to the step) */
  double mxu_cycles;           /* its units' work: the matmuls' MXU time, ... */
  double vpu_cycles;           /* ... the VPU ops', ... */
  double hbm_cycles;           /* ... its bytes at the core's share of the chip's HBM bandwidth, ... */
  double ici_cycles;           /* ... and the collectives' */
  double flops;                /* 2 x the multiply-adds it asks of the MXU (one pass) */
  double hbm_bytes;            /* moved by its DMAs */
  int group;                   /* the first fused kernel (docs/COMPILER.md) it is part of, or -1 */
  const char *bound;           /* "MXU", "VPU", "HBM" or "ICI": the largest of its four units' work; NULL
                                  when it has none of its own (a view; a layer whose work runs in the
                                  fused kernel of an earlier one, which the kernel's first layer reports) */
} tpu_fe_layer_cost;
typedef struct tpu_fe_step_costs {
  uint64_t step_cycles;
  int n;                       /* entries of layer: the model's layers + 1 */
  tpu_fe_layer_cost *layer;    /* layer i at i, the step's own parts last (owned; tpu_fe_step_costs_free) */
  int natt;                    /* entries of att: TPU_FE_ATT_NPARTS per multi_head_attention layer */
  tpu_fe_layer_cost *att;      /* those layers' entries split by part, in layer then part order (owned) */
  double hbm_bytes;            /* the step's, per core */
  double class_bytes[TPU_SIM_T_NCLASS];   /* the same by what they move (tpu_sim_tensor_class: activations and
                                             their gradients, parameters, gradients, optimizer state) */
} tpu_fe_step_costs;
/* Errors: those of tpu_fe_time_step. */
tpu_status tpu_fe_step_costs_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                bool train, tpu_fe_step_costs *out, char *err, size_t errcap);
void tpu_fe_step_costs_free(tpu_fe_step_costs *c);             /* frees what it owns; NULL is a no-op */

/* A step timer: the timing of one step for any number of infeed waits,
** the step lowered and run on the engine once. The step's program does not
** depend on the wait (its infeed queue does), and every op in it follows
** the infeed: the first DMA waits for it, the DMA unit runs in program
** order, and every other op reads what a DMA brought. So a batch ready W
** cycles late delays the whole step by W, which every core spends in
** infeed_wait: the timer runs the step once with the batch ready at once
** and gives every other wait from that run, without running it again
** (tests/check_train.c checks that this equals tpu_fe_time_step at that
** wait, bit for bit, over models, chips and waits). A traced step is run
** (the trace needs its events), reusing the program. The model must
** outlive the timer. Errors: those of tpu_fe_time_step. */
typedef struct tpu_fe_step_timer tpu_fe_step_timer;
tpu_status tpu_fe_step_timer_create(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                    bool train, int threads, tpu_fe_step_timer **out, char *err, size_t errcap);
tpu_status tpu_fe_step_timer_time(tpu_fe_step_timer *t, uint64_t infeed_ready_cycles, const tpu_fe_step_trace *trace,
                                  tpu_fe_step_timing *out, char *err, size_t errcap);
void tpu_fe_step_timer_destroy(tpu_fe_step_timer *t);          /* NULL is a no-op */
/* The per-layer split of the timer's own run (tpu_fe_step_costs_of's, at
** no wait) into *out, the caller's (tpu_fe_step_costs_free). TPU_OK or
** TPU_ERR_NOMEM. */
tpu_status tpu_fe_step_timer_costs(const tpu_fe_step_timer *t, tpu_fe_step_costs *out);
/* }================================================================== */

/* {==================================================================
** Data: datafeed's pipeline and host-time model (train_feed.c)
** ================================================================== */
/* The most classes a run takes: labels are int32 on the value path, and
** the datafeed's sources take 2..65536 classes (df_spec.c source.classes). */
#define TPU_FE_MAX_LABEL_CLASSES 65536

typedef struct tpu_fe_dataset {    /* a whole split in memory (the test set) */
  int n;                       /* samples */
  tpu_fe_shape shape;              /* per sample */
  int classes;
  float *x;                    /* n x size, scaled to [0, 1] (token ids: as they are) */
  int32_t *y;                  /* n labels, in [0, classes) */
} tpu_fe_dataset;
void tpu_fe_dataset_free(tpu_fe_dataset *d);

typedef struct tpu_fe_feed tpu_fe_feed;
typedef struct tpu_fe_feed_opts {
  const char *data;            /* fashion-mnist, mnist, synthetic, cifar10:DIR, images:DIR,
                                  tfrecord:FILES or an IDX directory */
  const char *pipeline;        /* a datafeed JSON file, or NULL for the built-in one */
  int global_batch, epochs, synthetic_n;
  uint64_t seed;               /* shuffle and synthetic data */
  tpu_fe_shape input_shape;    /* the model's input: the shape of synthetic samples (zero:
                                  28x28x1), the size and channels images and TFRecord images
                                  are decoded and resized to */
  int synthetic_classes;       /* synthetic: classes, 2..65536 (0: 10), e.g. the model's outputs */
  int vocab;                   /* synthetic: 0, images; else token sequences of input_shape's size,
                                  ids in [0, vocab) (the vocabulary of the embedding reading the
                                  model's input, tpu_fe_model_vocab), not normalized */
  bool no_values;              /* nothing will read the batches' values (--level timing): a synthetic
                                  source without a pipeline file then makes none, only the host-time
                                  model runs and tpu_fe_feed_next gives *x and *y NULL; another
                                  pipeline is opened (files checked, sizes known) without worker
                                  threads or prefetch, its batches made in the caller */
  tpu_fe_shape model_shape;    /* the model's input and classes: every split (training and test) */
  int model_classes;           /* must match them, else TPU_ERR_INPUT naming the file (0: not checked) */
  bool model_binary;           /* the model's loss is binary cross-entropy (model_classes 2): the
                                  message says its head takes labels 0 and 1 */
  int timeline_steps;          /* the host-time model records its first N batches' intervals (0: none) */
  /* A pod slice's hosts (tpu_chip_config.hosts; 0 or 1: one host feeds
  ** every chip): each host runs its own pipeline, as tf.data's
  ** distribute_datasets_from_function does, and the host-time model is the
  ** busiest host's: batches of host_batch elements (its chips' share of the
  ** global batch), the built-in pipeline reading its shard (shard(hosts,
  ** 0)) of the source, a --pipeline file as written (its own shard stage,
  ** if any) with its batch_size host_batch. The values stay the global
  ** batch's. */
  int hosts, host_batch;
} tpu_fe_feed_opts;
typedef struct tpu_fe_feed_info {
  tpu_fe_shape shape;
  int classes;
  int64_t batches_per_epoch;
  int64_t elements;            /* the training split's samples */
} tpu_fe_feed_info;
/* Opens the training pipeline and its host-time model. On failure *out is
** NULL and err names the file and field (TPU_ERR_CONFIG / INPUT / IO). */
tpu_status tpu_fe_feed_open(const tpu_fe_feed_opts *o, tpu_fe_feed **out, tpu_fe_feed_info *info, char *err, size_t errcap);
void tpu_fe_feed_close(tpu_fe_feed *f);                                  /* NULL is a no-op */
/* Positions the pipeline at the first batch of 'epoch'. */
tpu_status tpu_fe_feed_seek(tpu_fe_feed *f, int epoch, char *err, size_t errcap);
/* The next global batch (borrowed until the next call; NULL from the
** host-time model alone, see no_values), its size *n (the
** global batch, or less for the last batch of an epoch of a pipeline
** without drop_remainder) and the simulated host time it is ready, for a
** consumer asking at 'request_s' (request_s itself when the pipeline had
** it ready: a prefetched batch). The labels are int32 in [0, classes)
** (the datafeed's: at most 65536 classes). */
tpu_status tpu_fe_feed_next(tpu_fe_feed *f, double request_s, const float **x, const int32_t **y, int *n,
                            double *ready_s, char *err, size_t errcap);
/* The test split of o->data (synthetic: synthetic_n/4 samples after the
** training ones, of o's input shape and classes; images:DIR and
** tfrecord:FILES: the "validation" subset of validation_split 0.2 with
** o->seed, as Keras' image_dataset_from_directory makes it), whole, scaled
** to [0, 1]; int32 labels in [0, classes). */
tpu_status tpu_fe_feed_test_set(const tpu_fe_feed_opts *o, tpu_fe_dataset *out, char *err, size_t errcap);
/* }================================================================== */


/* {==================================================================
** Trainer: the data-parallel step over the cores (train.c)
** ================================================================== */
typedef struct tpu_fe_trainer {
  const tpu_fe_model *model;       /* borrowed; must outlive the trainer */
  tpu_fe_backend be;
  int cores, rows;             /* samples per core: the global batch's split (tpu_fe_batch_split) */
  int threads;                 /* host threads running the cores (1..cores) */
  struct fe_core_ws *ws;       /* [cores]; fe_int.h */
  struct fe_plan *plan;        /* the training step's plan; fe_int.h */
  float *params, *grad;        /* nparams each */
  tpu_fe_opt_state opt;
  double output_loss[TPU_FE_MAX_OUTPUTS];   /* the last step's or eval's mean loss of each of the model's
                                               nout outputs, unweighted (Keras' <output>_loss) */
} tpu_fe_trainer;

/* A trainer of m (borrowed: it must outlive the trainer) on 'cores' cores,
** the global batch split by tpu_fe_batch_split. TPU_ERR_CONFIG when it does
** not split, TPU_ERR_NOMEM; *t is zeroed then (destroying it is a no-op). */
tpu_status tpu_fe_trainer_create(const tpu_fe_model *m, const tpu_fe_backend *be, int cores, int global_batch,
                             int threads, tpu_fe_trainer *t);
void tpu_fe_trainer_destroy(tpu_fe_trainer *t);
/* One step on global batch x (global_batch x input size) with labels y:
** forward and backward on every core, gradient sum in core order, update.
** *loss and *correct get the batch's mean loss and number right;
** t->output_loss each output's mean loss. */
tpu_status tpu_fe_trainer_step(tpu_fe_trainer *t, const float *x, const int32_t *y, uint64_t step,
                           uint64_t first_sample, double *loss, int *correct);
/* The same on a batch of n samples, 1 <= n <= the global batch (a
** pipeline's partial last batch, as Keras trains on it): whole shards of
** the per-core batch on the first cores, the rest on the next one, the
** others idle; the loss is the mean over the n samples, the gradient the
** sum over the cores that had samples (in core order). TPU_ERR_INPUT for
** another n. */
tpu_status tpu_fe_trainer_step_n(tpu_fe_trainer *t, const float *x, const int32_t *y, int n, uint64_t step,
                                 uint64_t first_sample, double *loss, int *correct);
/* Mean loss and accuracy over a whole dataset (forward only, all cores);
** t->output_loss each output's mean loss.
** TPU_ERR_INPUT for an empty dataset or one whose sample size or classes
** are not the model's (nothing is read then). */
tpu_status tpu_fe_trainer_eval(tpu_fe_trainer *t, const tpu_fe_dataset *d, double *loss, double *acc);
/* FNV-1a of the parameters' bits: a fingerprint for bit-identity checks. */
uint64_t tpu_fe_params_hash(const float *p, size_t n);

/* Checkpoint: DIR/checkpoint.bin (format 3), written atomically: the
** model's parameter count, seed, batch and optimizer kind to check on
** resume, the data position, what the run measured so far and its history
** (so a resumed run reports the whole run), the weights and optimizer
** state, and a CRC-32 of it all. */
/* The simulated wall time of a Keras fit, split by where it went
** (docs/TRAINING.md, "The host side of a fit"): the parts add up to fit_s. */
typedef struct tpu_fe_fit_time {
  double fit_s;                    /* the whole: what Keras' progress bar shows */
  double chip_s;                   /* the training steps on the chip, less their input waits */
  double input_s;                  /* the training steps' waits for their batch on the device */
  double dispatch_s;               /* the host's calls to the TPU (steps_per_execution steps each) */
  double validation_s;             /* the validation pass: its steps, their input and their calls */
  double compile_s;                /* XLA's compile of each program the first time it runs */
} tpu_fe_fit_time;
typedef struct tpu_fe_epoch_log {  /* one epoch of the history (Keras' History) */
  double loss, accuracy;           /* the epoch's running means over its steps */
  double val_loss, val_accuracy;   /* on the test split after the epoch */
  double sim_s;                    /* the epoch's simulated time on the chip (fit.chip_s + fit.input_s) */
  double wall_s;                   /* and its wall time: not saved (identical runs write identical
                                      checkpoints), NaN after a load */
  tpu_fe_fit_time fit;             /* the epoch's simulated wall time, split: not saved (NaN after a
                                      load) */
  double output_loss[TPU_FE_MAX_OUTPUTS];       /* each of the model's nout outputs' mean loss, unweighted */
  double val_output_loss[TPU_FE_MAX_OUTPUTS];   /* (Keras' <output>_loss, val_<output>_loss): not saved
                                                   (NaN after a load), 0 at the timing level */
} tpu_fe_epoch_log;
typedef struct tpu_fe_run_log {    /* sums over the steps timed so far */
  uint64_t steps;
  double cycles, macs, mxu_capacity;   /* tpu_fe_step_timing's, summed */
  double stall[TPU_SIM_NSTALL];        /* cycles per stall kind, summed (they sum to 'cycles') */
  double sim_time_s;                   /* simulated time of the epochs done */
  int cores;                           /* the cores of the per-core sums (0 before the first step) */
  uint64_t core_cycles;                /* the steps' cycles summed, and each core's stall parts over */
  uint64_t core_stall[TPU_MAX_CORES][TPU_SIM_NSTALL];   /* them (each core's add up to core_cycles) */
} tpu_fe_run_log;
typedef struct tpu_fe_ckpt_info {
  uint64_t seed;
  int global_batch;
  int epochs_done;             /* data position: next epoch to run */
  uint64_t step;               /* global step count so far */
  tpu_fe_run_log run;
  tpu_fe_epoch_log *history;   /* epochs_done entries. Save reads them (NULL: zeros); load
                                  fills a new array (tpu_free it; NULL when epochs_done is 0) */
} tpu_fe_ckpt_info;
tpu_status tpu_fe_ckpt_save(const char *dir, const tpu_fe_trainer *t, const tpu_fe_ckpt_info *info,
                        char *err, size_t errcap);
/* Restores params and optimizer state; checks that 'want' (seed, batch)
** and the model match and that every field is in range (epochs_done at
** most TPU_FE_CKPT_MAX_EPOCHS, step and optimizer_steps at most
** TPU_FE_CKPT_MAX_STEPS, step >= epochs_done, one optimizer update per
** step, adam's second moments >= 0, steps timed <= step, every time and sum
** finite and >= 0 with the stall parts summing to the cycles, each core's
** too, accuracies in [0, 1]); fills info. TPU_ERR_INPUT with a message
** naming the file and the field otherwise (a damaged file, or one of format
** 1, which kept no history: tpusim 0.2.0 and older, or 2, which kept no
** per-core sums: development builds after 0.2.0). */
#define TPU_FE_CKPT_MAX_EPOCHS 1000000ull
#define TPU_FE_CKPT_MAX_STEPS  (1ull << 53)      /* exact in a double */
tpu_status tpu_fe_ckpt_load(const char *dir, tpu_fe_trainer *t, const tpu_fe_ckpt_info *want, tpu_fe_ckpt_info *info,
                        char *err, size_t errcap);
/* }================================================================== */

/* {==================================================================
** The training run (run.c): what `tpusim train` does, as an object
**
** A run owns the input feed, the step timer, the trainer (at the tile
** level) and the running totals, and runs one step a call:
**
**   tpu_fe_run_config c = tpu_fe_run_config_default();
**   c.model = &model; c.chip = chip; c.data = "synthetic";
**   tpu_fe_run *run;
**   if (tpu_fe_run_create(&c, &run, err, sizeof err)) ...;   // nothing to destroy
**   while (tpu_fe_run_next(run, &epoch, &step))
**     if (tpu_fe_run_step(run, &rec, err, sizeof err)) ...;  // rec: the step's figures
**   tpu_fe_run_get_totals(run, &tot);                        // the whole run's
**   tpu_fe_run_destroy(run);
**
** Step s asks for its batch when step s-1 has ended on the simulated clock;
** the feed's host-time model says when the batch is ready, and the cores
** wait on infeed until then. The step's time is the step timer's at that
** wait (a partial last batch's step is timed on its own, the busiest
** core's shard on every core); at the tile level the trainer computes its
** values (tpu_fe_trainer_step_n). An epoch's last step also moves the feed
** to the next epoch, evaluates the test split (tile level) and adds the
** epoch to the history. tpu_fe_run_save writes a checkpoint between epochs;
** a run created with resume_dir continues it and computes, bit for bit,
** what the uninterrupted run would have (data order and dropout masks are
** functions of the seed, the epoch and the step).
**
** Nothing here prints or reads the command line; messages name the option
** a value came from as tpusim spells it (--batch, --data, --pipeline,
** --resume). A run keeps its state on the heap, so runs may go on several
** host threads at once (tpusim sweep). After a step fails the run only
** reports that failure again.
** ================================================================== */
/* The data-parallel split of a global batch over 'cores' cores, as
** TPUStrategy and MirroredStrategy split it: each core gets global_batch /
** cores samples, in core order. TPU_OK with *per_core set, or
** TPU_ERR_CONFIG with a message naming --batch (when err is not NULL) if
** the batch does not divide across the cores or either is < 1. The one
** place the split is made: the run, the trainer and the viewer use it. */
tpu_status tpu_fe_batch_split(int global_batch, int cores, int *per_core, char *err, size_t errcap);

typedef struct tpu_fe_run tpu_fe_run;

typedef struct tpu_fe_run_config {
  const tpu_fe_model *model;   /* read by tpu_fe_run_create only: the run keeps a copy */
  const char *model_label;     /* the model as messages name it (the file or name given); NULL: its name */
  const float *init_params;    /* the starting weights (model->nparams, the parameter layout: an ONNX
                                  file's, tpu_fe_model_notes.weights), read by tpu_fe_run_create only;
                                  NULL (default): the initializer draws them from the seed */
  tpu_chip_config chip;        /* the chip simulated, every core of it taking part (cut it first to
                                  use fewer) */
  int global_batch;            /* default 128; split over the cores by tpu_fe_batch_split */
  int64_t seed;                /* initializer, dropout and data order; -1 (default): the model's */
  tpu_fe_backend_kind backend; /* where the tile level's matmuls run (default sim) */
  tpu_fidelity level;          /* TILE (default): values and time; TIMING: time only */
  tpu_precision prec;          /* MXU passes a matmul (default bf16) */
  int threads;                 /* host threads running the cores (default 1); results do not depend on it */
  int epochs;                  /* default 1 */
  long steps_per_epoch;        /* stop each epoch after this many steps; 0 (default): the whole set */
  const char *data;            /* tpu_fe_feed_opts.data (default "fashion-mnist") */
  const char *pipeline;        /* a datafeed JSON file; NULL (default): the built-in pipeline */
  int synthetic_n;             /* synthetic data's training samples (default 2048; the test set N/4) */
  const char *resume_dir;      /* continue the checkpoint in this directory (tile level); NULL: a
                                  fresh run */
  tpu_text *trace;             /* the first trace_steps steps' events go here, a trace begun with
                                  tpu_sim_trace_steps_begin (the caller ends it); NULL: none */
  int trace_steps;             /* default 20 */
  int timeline_steps;          /* the host-time model records the intervals of its first N batches
                                  (tpu_fe_run_host_model; default 0) */
  int steps_per_execution;     /* Keras' steps_per_execution: steps run by one call from the host
                                  (default 1); the host's costs are the chip's host.* keys */
} tpu_fe_run_config;
/* The strings and 'trace' of a config are borrowed: they must outlive the
** run. */
tpu_fe_run_config tpu_fe_run_config_default(void);

/* What one step did (tpu_fe_run_step). */
typedef struct tpu_fe_step_record {
  int epoch;                   /* 0-based */
  long step;                   /* 0-based, within the epoch */
  uint64_t global_step;        /* 0-based, over the whole run (a resumed run's steps included) */
  int samples;                 /* the batch's: the global batch, or fewer (a partial last batch) */
  double loss;                 /* the batch's mean loss; NaN at the timing level */
  int correct;                 /* its predictions right (samples; tokens for the next-token loss); 0 at
                                  the timing level */
  int predictions;             /* of them: samples x tpu_fe_model_predictions */
  uint64_t infeed_wait_cycles; /* how long the cores waited for the batch */
  uint64_t step_cycles;        /* the step's length, the wait included */
  double infeed_wait_s, sim_step_s;    /* the same in seconds of the chip's clock */
  double sim_time_s;           /* the run's simulated time after the step */
  double epoch_loss;           /* the epoch's running mean loss so far (each batch weighed by its
                                  size, as Keras'); NaN at the timing level */
  double epoch_accuracy;       /* and accuracy (0 at the timing level) */
  double epoch_sim_s;          /* the epoch's simulated time so far */
  double output_loss[TPU_FE_MAX_OUTPUTS];         /* the batch's mean loss of each of the model's nout
                                                     outputs, unweighted; NaN at the timing level */
  double epoch_output_loss[TPU_FE_MAX_OUTPUTS];   /* and the epoch's running means of them */
  bool epoch_end;              /* the epoch's last step: the test split evaluated (tile level) and */
  tpu_fe_epoch_log epoch_log;  /* the epoch's history entry (losses and accuracies 0 at the timing
                                  level, as the history keeps them) */
} tpu_fe_step_record;

/* The run's figures so far, the derived ones computed when asked. */
typedef struct tpu_fe_run_totals {
  int cores, per_core_batch;   /* the split */
  long steps_per_epoch;        /* steps an epoch runs */
  int first_epoch;             /* epochs done before this run (a resumed checkpoint's) */
  int epochs_done;             /* entries in history */
  const tpu_fe_epoch_log *history;     /* borrowed: valid until the next step or destroy */
  uint64_t global_step;        /* steps done, a resumed run's included */
  long steps_run;              /* of which this run's */
  tpu_fe_run_log sums;         /* over every step timed (a resumed run's included); before any, the
                                  step at no infeed wait, once */
  double stall_fraction[TPU_SIM_NSTALL];   /* sums.stall / sums.cycles */
  double mxu_utilization;      /* useful MACs (one bf16 pass) over the MXUs' capacity */
  double sim_step_cycles, sim_step_s;      /* the mean step */
  double images_per_s;         /* global batch / sim_step_s */
  double train_loss, train_accuracy;   /* the last epoch's history entry (NaN at the timing level */
  double val_loss, val_accuracy;       /* or before an epoch ended) */
  tpu_fe_fit_time fit;         /* this run's simulated wall time (a resumed run: its own epochs) */
  long executions;             /* this run's calls from the host (training and validation) */
  long val_samples, val_steps; /* the validation pass after each epoch (the test split at the batch) */
  int kernels_train, kernels_eval;     /* the kernels of the two compiled programs */
  int programs;                /* programs this run compiled (whole and partial batches) */
} tpu_fe_run_totals;

/* Creates a run: checks the config (the split, the data against the model,
** a timing level without a checkpoint), opens the feed and, at the tile
** level, the test split, times the step at no infeed wait, makes the
** trainer and, with resume_dir, restores the checkpoint. On success *out
** owns a new run (tpu_fe_run_destroy); on failure *out is NULL, nothing is
** left allocated and err names the option, file and field at fault:
** TPU_ERR_CONFIG / INPUT / IO / RANGE for bad input, TPU_ERR_NOMEM. */
tpu_status tpu_fe_run_create(const tpu_fe_run_config *cfg, tpu_fe_run **out, char *err, size_t errcap);
void tpu_fe_run_destroy(tpu_fe_run *r);                          /* NULL is a no-op */
/* Whether a step is left; *epoch and *step (either may be NULL) get the
** next one's position (0-based), or the end's. This function can't fail. */
bool tpu_fe_run_next(const tpu_fe_run *r, int *epoch, long *step);
/* Runs the next step and fills *rec. Errors name the epoch and step:
** those of the feed (a corrupt file met while training: TPU_ERR_INPUT /
** IO), TPU_ERR_INPUT for a batch ready later than the engine times or a
** run whose cycles pass 2^63, the timer's and trainer's, TPU_ERR_INPUT
** when no step is left. */
tpu_status tpu_fe_run_step(tpu_fe_run *r, tpu_fe_step_record *rec, char *err, size_t errcap);
/* This function can't fail. */
void tpu_fe_run_get_totals(const tpu_fe_run *r, tpu_fe_run_totals *out);
/* Writes DIR/checkpoint.bin (tpu_fe_ckpt_save): the weights, the optimizer
** state, the data position, the sums and the history. Only between epochs
** (before the first step or after an epoch's last); TPU_ERR_CONFIG within
** an epoch or at the timing level, else tpu_fe_ckpt_save's errors (an
** output: TPU_ERR_IO names the path and the reason). */
tpu_status tpu_fe_run_save(const tpu_fe_run *r, const char *dir, char *err, size_t errcap);
/* The parameters (*n of them; borrowed, changed by each step), or NULL at
** the timing level. */
const float *tpu_fe_run_params(const tpu_fe_run *r, size_t *n);
/* The whole-batch step's per-layer split, from the run's own timing of it
** (tpu_fe_step_timer_costs): *out is the caller's. TPU_OK or TPU_ERR_NOMEM. */
tpu_status tpu_fe_run_step_costs(const tpu_fe_run *r, tpu_fe_step_costs *out);
/* The engine program of 'steps' whole-batch steps of the run's model on its
** chip, step s's batch ready at ready_cycles[s] (tpu_fe_steps_program),
** for a viewer that runs it with its events; the caller owns *out. */
tpu_status tpu_fe_run_program(const tpu_fe_run *r, int steps, const uint64_t *ready_cycles, tpu_sim_program **out,
                              char *err, size_t errcap);
/* The feed's host-time model (datafeed/df.h; borrowed), which records
** timeline_steps batches' intervals. */
const struct tpu_df_model *tpu_fe_run_host_model(const tpu_fe_run *r);
/* }================================================================== */

#endif
