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
**              bias_add; multi_head_attention = the Q, K, V GEMMs
**              (+ bias_add), HEADS, the batched scores GEMM QH.KH^T,
**              scale, CAUSAL, softmax, dropout (mask, mul), the batched
**              context GEMM P.VH, MERGE_HEADS, the output GEMM (+
**              bias_add); its backward in reverse, softmax_grad on the VPU
**              (dense on a sequence or an image: every position
**              a row of the GEMM); layer_normalization = one LN step;
**              multiply = a VPU mul (its backward: dY times the other
**              input, per input), or with a 1x1xC gate a GATE step (its
**              backward: GATE on dY, GATE_GRAD for the gate); rescaling
**              and normalization = one AFFINE step each way; the GEMM on the im2col matrix, whose geometry --
**              padding, stride, taps -- is the step's fe_window); a relu,
**              tanh or sigmoid right after a GEMM layer is marked 'fused'
**              (the timing runs it on the GEMM's result tile); pools;
**              dropout (mask + mul, training only); flatten and inactive
**              dropout are views (copies in the value path); add = VPU
**              adds; concatenate = one channel-strided copy per input;
**              depthwise_conv2d = im2col + DW_EXPAND + a depthwise GEMM
**              (below) + bias_add; separable_conv2d = the same into MID,
**              then the pointwise GEMM [pixels x C*dm] . [C*dm x filters]
**              + bias_add
**   loss       softmax_xent (the loss, and in training its gradient scaled
**              by 1/global_batch) and accuracy; under binary cross-entropy
**              sigmoid_bce and binary_accuracy on the one logit a sample
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
** Depthwise convolution (depthwise_conv2d, separable_conv2d's first half).
** Output channel c*dm+m reads only input channel c, so on the MXU (128x128
** weights, one column per output) it is a GEMM on the im2col matrix whose
** weight operand is block-diagonal: DW_EXPAND scatters the kernel
** kh x kw x C x dm into WX [kh*kw*C x C*dm], row t*C+c holding channel c's
** tap t in columns c*dm..c*dm+dm-1 and zeros elsewhere (XLA's filter
** expansion, a select against a mask). The plan's depthwise GEMM steps
** (fe_gemm_step.dw = C) have those full shapes, and the value path runs them
** so (the zeros add exactly nothing); dW is the same product's block
** diagonal (DW_COMPACT takes it back out of DWX). The timing cuts a
** depthwise GEMM into blocks of the MXU's width (fe_gemm_dw_block) and
** issues only those: each 128-column block meets only its own channels'
** kh*kw*128/dm rows, so every row of the array carries dm useful weights
** of its 128 -- the use is at most dm/128 whatever the packing, and the
** MACs counted as useful are the model's (M*N*K/C), not the zeros.
**
** Grouped convolution (conv2d with groups G, 1 < G) is the same structure
** with G blocks of T*C/G rows by F/G columns: DW_EXPAND (coff = G) scatters
** the kernel kh x kw x C/G x F into WX [T*C x F], row t*C + c (group g =
** c/(C/G)) holding the kernel's (t, c mod C/G, .) in g's columns; its GEMM
** steps have dw = G, dwc = C/G. Its blocks hold max(1, width/(F/G)) groups,
** so the MXU's use is at most (F/G)/width when F/G < width (the zeros are
** multiplied, not counted) and whole when F/G fills the array.
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

/* {===========================================================** The step plan (plan.c)
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
  FE_STEP_DW_EXPAND,           /* W (a depthwise kernel) -> WX, its block-diagonal GEMM operand;
                                  rows x cols: kh*kw*C x C*dm (grouped conv2d: x F), coff: groups */
  FE_STEP_DW_COMPACT,          /* DWX's block diagonal -> DW (the kernel's gradient) */
  FE_STEP_ALLREDUCE,           /* GRADS = sum over cores, in core order */
  FE_STEP_UPDATE,              /* the optimizer: PARAMS, OPT state from GRADS */
  FE_STEP_BN_MOVING,           /* after it: a layer's moving mean and variance from the cores' STAT,
                                  averaged in core order (rows = 2, cols = C) */
  FE_STEP_LN,                  /* layer_normalization forward over rows x C: each row (position)
                                  normalized over its C channels, then gamma, beta */
  FE_STEP_LN_BWD,              /* its backward: dgamma, dbeta and (out not NONE) dX from dY (in),
                                  the row statistics recomputed from the forward input */
  FE_STEP_HEADS,               /* multi_head_attention: [R x H*c] (R = rows*L positions) to the heads'
                                  [rows*H*L x c] (each sample's heads one after another); rows x cols:
                                  R x H*c, coff: H */
  FE_STEP_MERGE_HEADS,         /* and back */
  FE_STEP_CAUSAL,              /* the scores [rows*H*L x L]: -1e9 added where a key comes after its
                                  query (Keras' masked softmax), in place */
  FE_STEP_GATHER,              /* embedding: the table's row of each token id (in) to out, rows x
                                  cols: rows*L x output_dim (plus the token-type table's row 0) */
  FE_STEP_SCATTER,             /* its backward: each position's dY (in) added to its id's row of DW */
  FE_STEP_TAKE,                /* take: position coff of each sample's ctot (in) to out, rows x cols:
                                  rows x C */
  FE_STEP_PUT,                 /* its backward: dY (in) to that position of a zeroed dX (out) */
  FE_STEP_CLS,                 /* class_token: its W before each sample's L positions (in) to out;
                                  rows x cols: rows*(L+1) x C */
  FE_STEP_CLS_BWD,             /* its backward: DW = the sum of dY's (in) first positions, dX (out,
                                  or NONE) = the others */
  FE_STEP_PERMUTE,             /* permute (forward: the layer's dims; coff 1: backward, the inverse)
                                  of each sample's axes, in to out; rows x cols: pixels x channels */
  FE_STEP_AFFINE,              /* rescaling, normalization: per channel, in to out over rows x cols
                                  (coff 1: backward, dX = dY times the channel's factor) */
  FE_STEP_GATE,                /* multiply by a 1x1xC gate (fe_gate_input): in (rows x cols: pixels x
                                  C, the map or its dY) times each sample's gate row, to out */
  FE_STEP_GATE_GRAD            /* the gate's gradient: per sample and channel the sum over its pixels
                                  of dY (in, rows x cols) times the map (the forward input), to out */
} fe_step_kind;

typedef enum fe_tensor_kind {
  FE_T_NONE = 0, FE_T_X, FE_T_ACT, FE_T_DACT, FE_T_DTMP, FE_T_W, FE_T_B, FE_T_DW, FE_T_DB, FE_T_COLS, FE_T_MASK,
  FE_T_ARGMAX, FE_T_LABELS, FE_T_LOSS, FE_T_HITS, FE_T_PARAMS, FE_T_GRADS, FE_T_OPT,
  FE_T_W2, FE_T_DW2,           /* separable_conv2d's pointwise kernel and its gradient */
  FE_T_WX, FE_T_DWX,           /* a depthwise kernel expanded (block-diagonal), and that
                                  product's gradient */
  FE_T_MID, FE_T_DMID,         /* separable_conv2d: the depthwise half's output and its gradient */
  FE_T_ATT, FE_T_DATT,         /* multi_head_attention's tensors (part: fe_att_part) and their
                                  gradients */
  FE_T_TARGET                  /* output 'part''s mean-squared-error target, made from the labels */
} fe_tensor_kind;
/* multi_head_attention's tensors per sample (L positions, H heads, key_dim
** d, value_dim dv): the projections Q, K (L x H*d), V (L x H*dv); the same
** split by head, QH, KH (H*L x d), VH (H*L x dv); the scores, scaled,
** masked and softmaxed in place, P (H*L x L); PD, P after dropout (only
** with dropout in training); the weighted sum OH (H*L x dv) and merged, O
** (L x H*dv). Its kernels and biases (W, B, DW, DB) take parts 0..3:
** query, key, value, output. */
enum fe_att_part { FE_ATT_Q = 0, FE_ATT_K, FE_ATT_V, FE_ATT_QH, FE_ATT_KH, FE_ATT_VH, FE_ATT_P, FE_ATT_PD,
                   FE_ATT_OH, FE_ATT_O, FE_ATT_NPARTS };
/* Values of multi_head_attention l's tensor 'part' per sample. */
size_t fe_att_elems(const tpu_fe_layer *l, int part);
/* Offsets of its kernel and bias 'part' (0..3) from woff and boff. */
size_t fe_att_woff(const tpu_fe_layer *l, int part);
size_t fe_att_boff(const tpu_fe_layer *l, int part);
/* ACT j / DACT j: tensor j of the graph (0: the model input, j > 0: layer
** j-1's output) and its gradient; DTMP j: a second gradient of tensor j
** that a following 'add' step sums into DACT j (a tensor that feeds
** several layers gets one gradient from each). */
typedef struct fe_tensor { fe_tensor_kind kind; int layer; int part; } fe_tensor;   /* part: FE_T_ATT's,
                                                                                   ** a kernel's (0: one) */

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
  int batch;                   /* > 1: that many independent products of this shape, operand g at
                                  g*M*K, g*K*N, g*M*N (attention's per sample and head); else one */
  int dw;                      /* a depthwise GEMM: its groups G (depthwise: the channels C; 0:
                                  dense). Forward [R x T*C] . WX [T*C x F], dW [T*C x R] . [R x F]
                                  (ta), dX [R x F] . WX^T (tb), T taps: group g's rows (channels
                                  g*dwc .. g*dwc+dwc-1 of each tap) and columns (g*F/G ..) meet alone */
  int dwc;                     /* ... its input channels per group (depthwise: 1) */
  fe_tensor a, b, c;
} fe_gemm_step;

/* Block b (0, 1, ...) of depthwise GEMM g cut for an MXU 'width' columns
** wide: its groups [c0, c0 + kg) (a depthwise GEMM's: channels), kg =
** max(1, width/dm), dm = F/G columns a group (fewer in the last block), as
** a dense M x N x K product of those groups' rows and columns only
** (forward R x kg*dm x T*kg, dW T*kg x kg*dm x R, dX R x T*kg x kg*dm, T
** = the rows of a group: taps*dwc), of which M*N*K/kg are the model's
** multiply-adds. Returns the block's groups, 0 past the last block. The
** blocks' products are all the MXU need run. */
int64_t fe_gemm_dw_block(const fe_gemm_step *g, int width, int b, int64_t *M, int64_t *N, int64_t *K);

typedef struct fe_vpu_step {
  tpu_vpu_op op;
  int64_t rows, cols;          /* the op's shape: pixels x channels of the tensor */
  float alpha;                 /* scale, softmax_xent's (sigmoid_bce's, mse's) gradient scale */
  float weight;                /* a loss step: its output's weight in the summed loss (1: one output) */
  fe_tensor x, y, out, out2;   /* y: a second operand (MASK: made on chip), or none */
} fe_vpu_step;

typedef struct fe_step {
  fe_step_kind kind;
  fe_phase phase;
  int layer;                   /* model layer, or -1 */
  bool fused;                  /* runs inside the previous step's loop (GEMM epilogue, loss) */
  fe_gemm_step gemm;           /* FE_STEP_GEMM */
  fe_vpu_step vpu;             /* FE_STEP_VPU */
  fe_window win;               /* IM2COL, COL2IM, POOL, POOL_BWD; a layer's GEMMs (a convolution's) */
  tpu_fe_layer_kind pool;      /* POOL, POOL_BWD: TPU_FE_MAXPOOL or TPU_FE_AVGPOOL */
  int64_t rows, cols;          /* VIEW, POOL*, COL2IM, DROPOUT_MASK: the output's pixels x channels;
                                  CONCAT, SPLIT: pixels x the input's channels */
  fe_tensor in, out;           /* data movement: what it reads and writes (the graph's edges) */
  int coff, ctot;              /* CONCAT, SPLIT: channel offset and channels of the concatenation;
                                  DW_EXPAND, DW_COMPACT: coff the groups */
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
/* Whether layer i's softmax (a softmax layer's, or its "activation") is
** the model's output one, folded into softmax_cross_entropy: i is the last
** layer, or only reshape and flatten layers follow it, each reading the one
** before. Any other softmax layer is computed (on the last axis). */
bool fe_softmax_folded(const tpu_fe_model *m, int i);
/* multiply l's input (0 or 1) that is a 1x1xC gate broadcast over the
** other's HxW (squeeze-and-excite), or -1 (equal shapes, or not a
** multiply). */
int fe_gate_input(const tpu_fe_model *m, const tpu_fe_layer *l);
/* Whether a dense after layer i is tied to the table layer i owns (an
** embedding) or reads (a tied dense): the backward, in reverse layer order,
** then has written the table's gradient before layer i adds its part. */
bool fe_tied_after(const tpu_fe_model *m, int i);
/* The model's output is one value under a sigmoid (a sigmoid layer, or a
** dense or convolution's "activation"), before only reshape and flatten
** layers: Keras' binary classifier head. */
bool fe_binary_head(const tpu_fe_model *m);
/* Layer i is that sigmoid and the loss is binary cross-entropy, which
** reads the logit under it: the forward leaves it out (a view) and the
** backward starts from the loss's gradient of the logit. */
bool fe_sigmoid_folded(const tpu_fe_model *m, int i);
/* The groups of convolution l's block-diagonal (depthwise) GEMM: the input
** channels of a depthwise_conv2d or separable_conv2d, a grouped conv2d's
** groups; 0 for any other layer (a conv2d of one group: a dense GEMM). */
int fe_dw_groups(const tpu_fe_layer *l);
/* Output layer o (its values, before only reshape and flatten layers) is
** one sigmoid unit; the loss its head defaults to in a model with several
** outputs: binary cross-entropy for that, mean squared error for a tanh or
** any one value, softmax cross-entropy for scores (docs/MODELS.md). */
bool fe_output_binary(const tpu_fe_model *m, int o);
/* The layer that gives output layer o's values: o, or the one before the
** reshape and flatten layers (each reading the one before) that end in o. */
int fe_head_of(const tpu_fe_model *m, int o);
tpu_fe_loss fe_head_loss(const tpu_fe_model *m, int o);
/* Layer i is one of the model's outputs (the last layer always is one):
** its values and their gradient stay f32 (fe_tensor_dtype). */
bool fe_is_output(const tpu_fe_model *m, int i);
/* The tpu_fe_att_part plan step k belongs to (a multi_head_attention
** layer's), or -1. */
int fe_step_att_part(const fe_plan *p, int k);
/* "fwd", "loss", "bwd", ... */
const char *fe_phase_name(fe_phase ph);
/* Where the model's dtype policy keeps tensor t (fe.h): under
** mixed_bfloat16 a layer's output ACT j (0 < j: not the input as the
** pipeline gives it, not an output's values, the logits) and every
** activation gradient (DACT, DTMP, MID, DMID; not the loss's gradient of
** an output's logits) are bf16,
** everything else f32; under float32 everything. An im2col matrix (COLS)
** is its source's: the caller says which (the forward's, or dX's
** dcols, a gradient). The value path rounds what is bf16 as it is written,
** the timing path stores it so: one program. */
tpu_sim_dtype fe_tensor_dtype(const fe_plan *p, fe_tensor t);
/* }================================================================== */

/* {===========================================================** The step compiler (compile.c; docs/COMPILER.md): what the timing path
** fuses and forms on chip, decided over a plan for a chip's switches
** (compiler.fusion, compiler.implicit_conv)
** ================================================================== */
enum { FE_KERNEL_MAX_IO = 4, FE_KERNEL_MAX_MEMBERS = 12 };
/* A fused element-wise kernel: plan steps [first, last], one R x C walk,
** in one or two passes. Pass 0 (when red >= 0) runs members first..red,
** red's reduction last; pass 1 runs members from..last. Each pass loads
** its tensors once a tile (load[]: dtype, and the member that takes it:
** the pass's first member its chain input, then each member its other
** operand) and stores what a step after the kernel reads (store[]). */
typedef struct fe_kernel_pass {
  int from, to;                /* members (plan steps) it runs */
  int nload, nstore;
  tpu_sim_dtype load_dt[FE_KERNEL_MAX_IO], store_dt[FE_KERNEL_MAX_IO];
  int store_step[FE_KERNEL_MAX_IO];   /* the member whose result each store is */
  int chain;                   /* the load that is the first member's chain input, or -1 */
  int other[FE_KERNEL_MAX_MEMBERS];   /* member from+i's other operand: a load, or -1 */
} fe_kernel_pass;
typedef struct fe_kernel {
  int first, last;
  int red;                     /* the member whose reduction needs a first pass, or -1 */
  int64_t rows, cols;
  fe_kernel_pass pass[2];      /* pass[0] used when red >= 0 */
} fe_kernel;
typedef struct fe_step_compiled {
  int kernel;                  /* the kernel it is part of, or -1 */
  bool stats;                  /* a GEMM reducing the next batch norm's statistics in its epilogue */
  bool stats_fused;            /* a batch norm whose statistics its producer reduced */
  bool skip;                   /* done elsewhere (a col2im summed in its dX GEMM's VMEM) */
  double a_share;              /* a GEMM's implicit A (tpu_sim_lower_gemm.a_share), or 0 */
  double c_window_pixels;      /* a dX GEMM's col2im window: input pixels per block row (x its channels:
                                  tpu_sim_lower_gemm.c_window), or 0 */
} fe_step_compiled;
typedef struct fe_compiled {
  fe_step_compiled *step;      /* [plan->nsteps] */
  fe_kernel *kernels;
  int nkernels;
  double act_peak_bytes;       /* activations and their gradients in HBM: the most live at once ... */
  double act_sum_bytes;        /* ... and all of them (each tensor its own space) */
} fe_compiled;
/* The compiler's decisions over plan p for chip's switches; *out owns
** them (fe_compiled_destroy). TPU_ERR_NOMEM or TPU_OK. */
tpu_status fe_compile(const fe_plan *p, const tpu_chip_config *chip, fe_compiled **out);
void fe_compiled_destroy(fe_compiled *c);                 /* NULL is a no-op */
/* The kernels the compiled step launches: each plan step with work of its
** own (not the infeed, a view, a dropout mask or a step done elsewhere),
** a fused kernel once. This function can't fail. */
int fe_compiled_kernels(const fe_plan *p, const fe_compiled *c);
/* }================================================================== */

/* {===========================================================** Backend: every matmul goes through one function (layers.c)
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

/* {===========================================================** Value path: workspaces, forward and backward over a plan (layers.c)
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
  float *wx;                   /* WX and DWX: a depthwise kernel expanded, or that GEMM's
                                  gradient (one at a time: the plan orders them; max_wx) */
  float **mid, **dmid;         /* separable_conv2d layer i: MID i and DMID i (or NULL) */
  float **att, **datt;         /* multi_head_attention layer i: its ATT parts one after another, each
                                  for 'rows' samples, and their gradients (or NULL) */
  float *stat;                 /* [nparams]: at a batch_normalization's soff, this core's batch
                                  mean then (biased) variance of its last training forward */
  int32_t *lab;                /* labels as the VPU takes them */
  float *rowloss;              /* per-sample loss */
  fe_scratch scratch;
  double loss_sum;             /* sum over the shard of the per-sample loss */
  double out_loss_sum[TPU_FE_MAX_OUTPUTS];   /* the same per output, unweighted (the model's nout) */
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
                      const float *x, const int32_t *labels, uint64_t step, uint64_t first_sample);
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

/* The host-time model of a feed (train_feed.c; borrowed). */
const struct tpu_df_model *fe_feed_host_model(const tpu_fe_feed *f);

/* {===========================================================** Keras import (keras.c): Keras JSON -> the native model JSON object
** ================================================================== */
typedef struct fe_keras fe_keras;
/* True when a parsed document is Keras JSON (a "class_name" at its root). */
bool fe_keras_is_keras(const struct json_t *root);
/* Translates the Keras document kdoc (parsed; its where, text and err say
** where errors go) into a native model object. 'input_shape' ("HxWxC" or
** NULL) fills an unspecified input. On success *out is the caller's
** (fe_keras_free); errors (TPU_ERR_CONFIG, TPU_ERR_NOMEM) are written
** through kdoc and name the layer (name and class) at its line:column. */
tpu_status fe_keras_translate(tpu_json *kdoc, const char *input_shape, fe_keras **out);
struct json_t *fe_keras_native(const fe_keras *k);          /* borrowed */
/* A tpu_json.map_path for the native document: its paths to the Keras
** file's (ud: the fe_keras). */
const char *fe_keras_map_path(void *ud, const char *path, char *buf, size_t cap);
/* After the native loader refused the translation: puts the Keras layer
** (name and class) it was translated from into the message. */
void fe_keras_explain(const fe_keras *k, const char *where, char *err, size_t errcap);
/* The format and the options not modelled. TPU_ERR_NOMEM or TPU_OK. */
tpu_status fe_keras_notes(const fe_keras *k, tpu_fe_model_notes *notes);
/* Each nested model's InputLayer against what the outer model feeds it in
** m (the translated model, shapes inferred): TPU_ERR_CONFIG with the
** declared and the fed shape when a dimension the file gives differs. */
tpu_status fe_keras_check_inputs(const fe_keras *k, const tpu_fe_model *m);
void fe_keras_free(fe_keras *k);                            /* NULL is a no-op */
/* A Keras 1 document (keras_version 1.x) rewritten in place into the Keras
** 2 form (keras1.c): classes and options renamed as Keras 2's legacy
** converter does, channels first turned channels last (*nth: the layers
** that said dim_ordering "th"). TPU_ERR_CONFIG (written through doc, a
** layer Keras 2 would not convert either), TPU_ERR_NOMEM or TPU_OK. */
tpu_status fe_keras1_upgrade(tpu_json *doc, int *nth);
/* }================================================================== */

/* {===========================================================** ONNX import (onnx.c): an ONNX ModelProto -> the native model JSON
** object and the starting weights
** ================================================================== */
typedef struct fe_onnx fe_onnx;
/* Parses buf[0..len) (an ONNX file; 'where' names it) and translates its
** graph. On success *out is the caller's (fe_onnx_free); errors are
** written to err naming the file and the node: TPU_ERR_INPUT (not an ONNX
** model), TPU_ERR_CONFIG (refused: every unsupported operator type at
** once, or the first node whose attributes tpusim cannot express),
** TPU_ERR_NOMEM. */
tpu_status fe_onnx_translate(const void *buf, size_t len, const char *where, fe_onnx **out, char *err,
                             size_t errcap);
struct json_t *fe_onnx_native(const fe_onnx *o);            /* borrowed */
const char *fe_onnx_format(const fe_onnx *o);               /* "ONNX opset 17 (pytorch 2.1.0)" */
/* A tpu_json.map_path for the native document (ud: the fe_onnx): notes
** the native layer of the kept error for fe_onnx_explain. */
const char *fe_onnx_map_path(void *ud, const char *path, char *buf, size_t cap);
/* After the native loader refused the translation: names the ONNX node. */
void fe_onnx_explain(const fe_onnx *o, char *err, size_t errcap);
/* The file's initializers in m's parameter layout (m: the translation,
** loaded): m->nparams floats in *out, the caller's (tpu_free).
** TPU_ERR_NOMEM or TPU_OK. */
tpu_status fe_onnx_weights(const fe_onnx *o, const tpu_fe_model *m, float **out);
void fe_onnx_free(fe_onnx *o);                              /* NULL is a no-op */
/* }================================================================== */

#endif /* TPU_FE_INT_H */
