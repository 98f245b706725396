/*
** fe_int.h -- the front-end's internals, for the front-end's .c files and white-box
** tests: the step plan, the matmul backend, the per-core workspace, the
** value path (forward, backward, optimizer). The public API is fe.h.
**
** The step plan (plan.c) is THE description of a training step (or of an
** inference pass). fe_plan_create() walks the model once and lists, in
** execution order, what one core does with its shard of 'rows' samples:
**
**   infeed     the shard lands in act[0] (one step)
**   forward    per layer, each reading its inputs' tensors (the graph);
**              a dense/conv2d "activation" is one more fused VPU step and
**              its gradient one VPU step on dY, in place; no bias, no
**              bias_add / db; global_avgpool is a pool over the whole input: dense = GEMM + bias_add; conv2d = im2col + GEMM +
**              bias_add (the GEMM on the im2col matrix, whose geometry --
**              padding, stride, taps -- is the step's fe_window); a relu,
**              tanh or sigmoid right after a GEMM layer is marked 'fused'
**              (the timing runs it on the GEMM's result tile); pools;
**              dropout (mask + mul, training only); flatten and inactive
**              dropout are views (copies in the value path); add = VPU
**              adds; concatenate = one channel-strided copy per input
**   loss       softmax_xent (the loss, and in training its gradient scaled
**              by 1/global_batch) and accuracy
**   backward   per layer in reverse down to the first layer with
**              parameters: dW = X^T.dY, db = col_sum dY (fused into dW), dX
**              = dY.W^T only where a layer upstream needs it; conv2d
**              recomputes its im2col and sums dcols back with col2im;
**              activation gradients, dropout, pool routing; add passes dY
**              on, concatenate splits it; a tensor feeding several layers
**              sums their gradients with a VPU add
**   all-reduce one sum of every core's gradient, in core order
**   update     the optimizer over the flat parameter vector
**
** Tensors are named, not pointed at (fe_tensor: ACT j is the input of layer
** j, DACT j its gradient, W/B/DW/DB of a layer, ...), so a plan is shapes
** only and serves every core: the value path maps names to a workspace's
** buffers, the timing path to HBM tiles. The plan never allocates per step
** and is read-only once built, so cores on several threads share it.
*/
#ifndef TPU_FE_INT_H
#define TPU_FE_INT_H
#include "frontend/fe.h"
#include "vpu/vpu.h"

/* {==================================================================
** The step plan (plan.c)
** ================================================================== */
typedef enum fe_phase { FE_INFEED = 0, FE_FORWARD, FE_LOSS, FE_BACKWARD, FE_ALLREDUCE, FE_UPDATE } fe_phase;

typedef enum fe_step_kind {
  FE_STEP_INFEED,              /* x -> ACT 0 */
  FE_STEP_GEMM,                /* c = op(a).op(b) (+ c when acc), fe_gemm_step */
  FE_STEP_VPU,                 /* one VPU op over rows x cols, fe_vpu_step */
  FE_STEP_IM2COL,              /* ACT layer -> COLS, win */
  FE_STEP_COL2IM,              /* COLS -> DACT layer (summed), win */
  FE_STEP_POOL,                /* max/avg pool forward (max keeps ARGMAX), win */
  FE_STEP_POOL_BWD,            /* routes DACT layer+1 to DACT layer, win */
  FE_STEP_VIEW,                /* a copy (flatten, inactive dropout, add's dY): no cost */
  FE_STEP_CONCAT,              /* forward concatenate: one input's channels into the output at coff */
  FE_STEP_SPLIT,               /* backward concatenate: dY's channels at coff to one input's gradient */
  FE_STEP_PAD,                 /* zero_padding: in placed in a zeroed out at (pad_top, pad_left), win */
  FE_STEP_CROP,                /* its backward: the window of in at (pad_top, pad_left) to out, win */
  FE_STEP_DROPOUT_MASK,        /* MASK layer from the seeded hash (not timed) */
  FE_STEP_BN,                  /* batch_normalization forward over rows x C: training, this core's
                                  batch statistics (kept in STAT); inference, the moving ones */
  FE_STEP_BN_BWD,              /* its backward: dgamma, dbeta and (out not NONE) dX from dY (in) */
  FE_STEP_ALLREDUCE,           /* GRADS = sum over cores, in core order */
  FE_STEP_UPDATE,              /* the optimizer: PARAMS, OPT state from GRADS */
  FE_STEP_BN_MOVING            /* after it: a layer's moving mean and variance from the cores' STAT,
                                  averaged in core order (rows = 2, cols = C) */
} fe_step_kind;

typedef enum fe_tensor_kind {
  FE_T_NONE = 0, FE_T_X, FE_T_ACT, FE_T_DACT, FE_T_DTMP, FE_T_W, FE_T_B, FE_T_DW, FE_T_DB, FE_T_COLS, FE_T_MASK,
  FE_T_ARGMAX, FE_T_LABELS, FE_T_LOSS, FE_T_HITS, FE_T_PARAMS, FE_T_GRADS, FE_T_OPT
} fe_tensor_kind;
/* ACT j / DACT j: tensor j of the graph (0: the model input, j > 0: layer
** j-1's output) and its gradient; DTMP j: a second gradient of tensor j
** that a following 'add' step sums into DACT j (a tensor that feeds
** several layers gets one gradient from each). */
typedef struct fe_tensor { fe_tensor_kind kind; int layer; } fe_tensor;

/* A sliding window over an H x W x C input (conv2d taps, pool windows):
** output pixel (oy, ox) reads input rows oy*stride + ky - pad_top, ...;
** outside the input is zero (conv2d 'same'). */
typedef struct fe_window { int h, w, c, oh, ow, kh, kw, stride, pad_top, pad_left; } fe_window;

typedef struct fe_gemm_step {
  const char *what;            /* "matmul", "dW", "dX" (the engine op's name) */
  int M, N, K;
  bool ta, tb;                 /* A stored K x M, B stored N x K */
  bool acc;                    /* C += product */
  bool swapped;                /* fe_gemm_swapped(prec, ...): the sim backend's choice */
  int passes;                  /* bf16 passes of the precision */
  fe_tensor a, b, c;
} fe_gemm_step;

typedef struct fe_vpu_step {
  tpu_vpu_op op;
  int64_t rows, cols;          /* the op's shape: pixels x channels of the tensor */
  float alpha;                 /* scale, softmax_xent's gradient scale */
  fe_tensor x, y, out, out2;   /* y: a second operand (MASK: made on chip), or none */
} fe_vpu_step;

typedef struct fe_step {
  fe_step_kind kind;
  fe_phase phase;
  int layer;                   /* model layer, or -1 */
  bool fused;                  /* runs inside the previous step's loop (GEMM epilogue, loss) */
  fe_gemm_step gemm;           /* FE_STEP_GEMM */
  fe_vpu_step vpu;             /* FE_STEP_VPU */
  fe_window win;               /* IM2COL, COL2IM, POOL, POOL_BWD */
  tpu_fe_layer_kind pool;      /* POOL, POOL_BWD: TPU_FE_MAXPOOL or TPU_FE_AVGPOOL */
  int64_t rows, cols;          /* VIEW, POOL*, COL2IM, DROPOUT_MASK: the output's pixels x channels;
                                  CONCAT, SPLIT: pixels x the input's channels */
  fe_tensor in, out;           /* data movement: what it reads and writes (the graph's edges) */
  int coff, ctot;              /* CONCAT, SPLIT: channel offset and channels of the concatenation */
} fe_step;

typedef struct fe_plan {
  const tpu_fe_model *model;   /* borrowed; must outlive the plan */
  int rows, global_batch;      /* per-core shard; the loss is the mean over global_batch */
  tpu_precision prec;
  bool train;                  /* false: forward and loss only (inference) */
  int first_param;             /* backward stops here (first layer with parameters) */
  int nsteps;
  fe_step *steps;              /* [nsteps], in execution order */
} fe_plan;

/* Builds the plan of one step of model m on a shard of 'rows' samples, the
** global batch being 'global_batch' (train) -- or of an inference pass
** (!train). On success *out owns a new plan (fe_plan_destroy); TPU_ERR_NOMEM
** otherwise (*out NULL). m must outlive the plan. */
tpu_status fe_plan_create(const tpu_fe_model *m, int rows, int global_batch, tpu_precision prec, bool train,
                          fe_plan **out);
void fe_plan_destroy(fe_plan *p);                    /* NULL is a no-op */
/* "fwd", "loss", "bwd", ... */
const char *fe_phase_name(fe_phase ph);
/* }================================================================== */

/* {==================================================================
** Backend: every matmul goes through one function (layers.c)
** ================================================================== */
/* Per-core scratch of the sim backend (transposed / packed operands). */
typedef struct fe_scratch { float *buf; size_t cap; } fe_scratch;
void fe_scratch_free(fe_scratch *s);

/* True when the sim backend computes op(A).op(B) as (op(B)^T.op(A)^T)^T
** because that moves less data into MXU layout; the MXU then streams N rows
** of K against an M-wide result. Only for one bf16 pass (the pass order of
** bf16x3/x6 would change the bits). The plan records the answer. */
bool fe_gemm_swapped(tpu_precision prec, bool ta, bool tb, int M, int N, int K);
/* C[M x N] = op(A) . op(B) (+ C when 'acc'), row-major; op transposes when
** the flag is set (A is then K x M, B is N x K). Returns TPU_OK or
** TPU_ERR_NOMEM. Deterministic for a given backend and shape. */
tpu_status fe_gemm(const tpu_fe_backend *be, fe_scratch *s, bool ta, bool tb,
                   int M, int N, int K, const float *A, const float *B, float *C, bool acc);

/* What one fe_gemm call was asked (for tests: the GEMMs the value path runs). */
typedef struct fe_gemm_call {
  int M, N, K;
  bool ta, tb, acc, swapped;   /* swapped: the sim backend's choice (false for reference) */
  tpu_precision prec;
} fe_gemm_call;
typedef void (*fe_gemm_observer)(void *ud, const fe_gemm_call *call);
/* Every later fe_gemm call is reported to fn (NULL: none). Process-wide and
** not synchronized: set it while no step runs; fn may be called from several
** threads when the cores run on several. */
void fe_gemm_observe(fe_gemm_observer fn, void *ud);
/* }================================================================== */

/* {==================================================================
** Value path: workspaces, forward and backward over a plan (layers.c)
** ================================================================== */
typedef struct fe_core_ws {    /* one core's buffers for a shard of up to 'rows' samples */
  int rows;
  float **act;                 /* act[i]: input of layer i (act[nlayers]: logits) */
  float **mask;                /* dropout masks (per layer, or NULL) */
  int **argmax;                /* maxpool: index of the winner per output (or NULL) */
  float *cols;                 /* im2col buffer */
  float **dact;                /* dact[j]: gradient of tensor j (j >= 1) */
  float *dtmp;                 /* DTMP: a second gradient before its sum */
  float *grad;                 /* this core's parameter gradient (zero at non-trainable state) */
  float *stat;                 /* [nparams]: at a batch_normalization's soff, this core's batch
                                  mean then (biased) variance of its last training forward */
  int32_t *lab;                /* labels as the VPU takes them */
  float *rowloss;              /* per-sample loss */
  fe_scratch scratch;
  double loss_sum;             /* sum over the shard of the per-sample loss */
  int correct;                 /* argmax(logits) == label count */
} fe_core_ws;

tpu_status fe_ws_create(const tpu_fe_model *m, int rows, fe_core_ws *ws);
void fe_ws_destroy(const tpu_fe_model *m, fe_core_ws *ws);

/* Fills params with the seeded initializer (Glorot uniform weights, zero
** biases). Deterministic. This function can't fail. */
void fe_params_init(const tpu_fe_model *m, float *params);

/* The plan's infeed, forward and loss steps on plan->rows (<= ws->rows)
** samples x: fills the logits, and with labels loss_sum (summed, not
** averaged), correct and -- in a training plan -- the loss gradient.
** Dropout is on in a training plan; 'step' and 'first_sample' key its
** masks. labels NULL: no loss. */
tpu_status fe_forward(const fe_plan *p, const tpu_fe_backend *be, const float *params, fe_core_ws *ws,
                      const float *x, const uint8_t *labels, uint64_t step, uint64_t first_sample);
/* The plan's backward steps after fe_forward with labels: writes ws->grad,
** the gradient of (sum of the shard's losses) / global_batch. */
tpu_status fe_backward(const fe_plan *p, const tpu_fe_backend *be, const float *params, fe_core_ws *ws);

tpu_status fe_opt_create(const tpu_fe_model *m, tpu_fe_opt_state *s);
void fe_opt_destroy(tpu_fe_opt_state *s);
/* params -= update(grad); deterministic elementwise f32. TPU_ERR_RANGE when
** the update count would pass INT64_MAX, else the VPU's status (the model
** loader checked the hyper-parameters, so TPU_OK). */
tpu_status fe_opt_apply(const tpu_fe_model *m, tpu_fe_opt_state *s, float *params, const float *grad);
/* }================================================================== */

#endif /* TPU_FE_INT_H */
