/*
** vpu.h -- the vector unit (VPU): element-wise math, activations and their
** gradients, reductions, softmax and its cross-entropy, argmax/accuracy,
** casts and the optimizer updates, with real f32 numerics and a cycle cost
** per register of work.
**
** Layout. An operand is a row-major rows x cols f32 array. On the chip it
** occupies ceil(rows/sublanes) x ceil(cols/lanes) vector registers (rows on
** sublanes, columns on lanes, 8 x 128 by default); a partial register costs
** as much as a full one. For the optimizer updates only the element count
** rows*cols matters to the numerics (the shape still sets the cost).
**
** Timing (tpu_vpu_cycles): from the shape and the config only, never from
** data. With S = sublanes, L = lanes, rb = ceil(rows/S), cb = ceil(cols/L),
** regs = rb*cb, lgS = ceil(log2 S), lgL = ceil(log2 L) and the per-op counts
** E D T RR CR VE VT VS of vpu_ops.def:
**
**   cycles = regs * (E*ew + D*div + T*tr)
**          + RR * rb * ((cb-1)*ew + lgL*xl)       reduce each row: add the cb
**                                                  registers of a row block,
**                                                  then a log2 tree across lanes
**          + CR * cb * ((rb-1)*ew + lgS*xs)       reduce each column: add the rb
**                                                  registers, then a tree across
**                                                  sublanes
**          + rb * (VE*ew + VT*tr)                 work on the per-row results
**          + VS * ((rb-1)*ew + lgS*xs)            per-row results to a scalar
**
** where ew, div, tr, xl, xs are cycles_elementwise, _divide, _transcendental,
** _cross_lane and _cross_sublane. Example, 8x128 registers, v2 costs: add of
** 256 x 1000 is 32*8 = 256 registers = 256 cycles; row_sum of it is
** 32*(7*1 + 7*4) = 1120 cycles. Not modelled: moving operands between VMEM
** and vector registers (the load/store slots run beside the ALUs), issue
** limits of the VLIW bundle, pipelining between ops, register pressure.
**
** Numerics (tpu_vpu_exec). Every op computes in f32, one IEEE operation at a
** time (no fused multiply-add, no reassociation), with the C library's
** expf/logf/tanhf/sqrtf. Results do not depend on threads or on the chip
** config. Summation order is fixed: row_sum adds x[r][0], x[r][1], ... left
** to right; col_sum adds x[0][c], x[1][c], ... top to bottom; softmax and
** softmax_xent sum their exponentials left to right; accuracy counts exactly.
** With args.round_bf16 set, every float the op writes to out, out2 and param
** is rounded to the nearest bf16 (base/base.h) after the f32 computation;
** optimizer state m and v always stay f32.
**
** Error bounds against a double-precision evaluation of the same formula
** on the same f32 inputs, for finite normal results (ulp = of the exact
** result; checked by tests/check_vpu.c on random and edge inputs):
**   exact (0 ulp, correctly rounded or exact): add sub mul div max min relu
**     relu_grad relu_cap relu_cap_grad bias_add scale add_scalar reciprocal row_max col_max
**     argmax accuracy copy cast_f32_bf16 cast_bf16_f32
**   <= 1 ulp: exp log          <= 2 ulp: rsqrt
**   <= 3 ulp: tanh (glibc's tanhf reaches 2.13), sigmoid, tanh_grad,
**     sigmoid_grad (tanh_grad is computed as dy*((1-y)*(1+y)))
**   gelu gelu_tanh swish and their gradients: evaluated in double and
**     rounded once: <= 1 ulp, plus 2^-50 * |dy| absolute for a gradient
**     (which crosses zero: gelu's near x = -0.75, swish's near x = -1.28)
**   softmax_grad: p*(dy - sum(dy*p)) per row, the sum left to right in f32
**   row_sum/col_sum over n terms: |err| <= (n-1) * 2^-24 * sum|x|
**   softmax, element c of a row with max m:
**     rel err <= 2^-24 * (|x_c - m| + cols + 3)
**   softmax_xent loss: |err| <= 2^-24 * (cols + 4 + |x_label - m|) * max(1, loss)
**     gradient: |err| <= |alpha| * (softmax bound on p_c) + 1 ulp of the result
**   sigmoid_bce (one logit x a row, label z 0 or 1): loss max(x,0) - x*z +
**     log1p(exp(-|x|)) in f32, |err| <= 2^-22 * max(1, loss); gradient
**     alpha*(sigmoid(x) - z), |err| <= 4 ulp of sigmoid(x) times |alpha|
**     plus 1 ulp of the result
**   mse (Keras' mean_squared_error: the row's mean of (x - y)^2, summed
**     left to right): the row_sum bound on the squares, then one division;
**     gradient (2*alpha/cols)*(x - y): three roundings, relative error
**     <= 3 * 2^-24
**   sgd/momentum/adam: each step as written below, in f32; tests compare
**     with hand-computed values, and 50 steps with a double reference
**     (within 50 * 2^-22 relative).
**
** Special values: NaN propagates through every arithmetic op (max/min return
** NaN if either input is NaN, unlike fmaxf); relu(-0) = +0, relu(NaN) = NaN;
** exp(-inf) = 0, log(0) = -inf, log(<0) = NaN, rsqrt(+0) = +inf,
** reciprocal(-0) = -inf; sigmoid saturates to 0 and 1 without overflow;
** relu_grad is x > 0 ? dy : +0 (x = 0 gives 0). relu_cap is min(max(x, 0),
** alpha) (Keras' ReLU(max_value=alpha), relu6 for alpha 6) and relu_cap_grad
** 0 < x < alpha ? dy : +0, x the forward input or output (they agree there);
** NaN x stays NaN in both. leaky_relu is x > 0 ? x : alpha*x (Keras'
** LeakyReLU, negative_slope alpha: finite, >= 0) and leaky_relu_grad
** x > 0 ? dy : alpha*dy, x the forward input or output. gelu is x*Phi(x)
** (Keras' gelu, approximate=False), gelu_tanh Keras' approximate=True form
** 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), swish x*sigmoid(x) (silu);
** their gradients read the forward input x and dy. cast_bf16_f32 widens bf16
** values held in f32, which is exact: a copy.
** argmax takes the first maximum; a NaN counts as larger than any number
** (the first NaN wins). binary_accuracy counts rows where
** sigmoid(x) > 0.5 (Keras' binary_accuracy threshold, on sigmoid1's f32
** value) equals label == 1. Softmax subtracts the row max first, so large logits
** neither overflow nor lose the distribution; a row holding +inf, or only
** -inf, gives NaN.
*/
#ifndef TPU_VPU_H
#define TPU_VPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/base.h"

/* Register shape and per-op cycle costs, per register of work (one register
** is sublanes x lanes f32). Values come from the chip configuration. */
typedef struct tpu_vpu_config {
  int sublanes, lanes;             /* register shape, default 8 x 128 */
  int cycles_elementwise;          /* add sub mul max min relu select cast */
  int cycles_divide;               /* div reciprocal rsqrt */
  int cycles_transcendental;       /* exp log tanh sigmoid */
  int cycles_cross_lane;           /* one pass of a reduction across lanes */
  int cycles_cross_sublane;        /* one pass of a reduction across sublanes */
} tpu_vpu_config;

/* 8 x 128; costs 1, 4, 4, 4, 2 (as the tpu-v2-8 preset). This function
** can't fail. */
tpu_vpu_config tpu_vpu_config_default(void);
/* TPU_OK if every field is in range (sublanes 1..1024, lanes 1..4096, costs
** 1..100000, as sim/config.c allows), else TPU_ERR_CONFIG. */
tpu_status tpu_vpu_config_check(const tpu_vpu_config *cfg);

/* {==================================================================
** Operations
** ================================================================== */
typedef enum tpu_vpu_op {
#define X(e, name, cls, rd, wr, E, D, T, RR, CR, VE, VT, VS) TPU_VPU_##e,
#include "vpu/vpu_ops.def"
#undef X
  TPU_VPU_OP_COUNT
} tpu_vpu_op;

typedef enum tpu_vpu_class {
  TPU_VPU_CLASS_ELEMENTWISE = 0,
  TPU_VPU_CLASS_DIVIDE,
  TPU_VPU_CLASS_TRANSCENDENTAL,
  TPU_VPU_CLASS_CROSS_LANE,
  TPU_VPU_CLASS_CROSS_SUBLANE,
  TPU_VPU_CLASS_FUSED,             /* softmax, softmax_xent: several kinds */
  TPU_VPU_CLASS_OPTIMIZER
} tpu_vpu_class;

/* The op's name as in vpu_ops.def ("add", "softmax_xent"...); "?" for an
** out-of-range value. */
const char *tpu_vpu_op_name(tpu_vpu_op op);
/* 1 and *out set if 's' names an op, else 0 and *out untouched. */
int tpu_vpu_op_parse(const char *s, tpu_vpu_op *out);
tpu_vpu_class tpu_vpu_op_class(tpu_vpu_op op);
const char *tpu_vpu_class_name(tpu_vpu_class c);   /* "elementwise", ... */

/* Operands. Sizes for an op on a rows x cols shape (n = rows*cols):
**   X       n      first input: a, logits, forward input (relu_grad, gelu_grad,
**                  gelu_tanh_grad, swish_grad, leaky_relu_grad) or
**                  forward output y (tanh_grad, sigmoid_grad)
**   Y       n      second input: b, or upstream gradient dy (*_grad);
**                  bias_add: cols (the bias, added to every row)
**   LABELS  rows   int32 class of each row, 0 <= label < cols; sigmoid_bce,
**                  binary_accuracy (cols = 1): 0 or 1
**   OUT     n      element-wise ops, softmax, copy, casts
**           rows   row_sum, row_max, softmax_xent, sigmoid_bce, mse (loss of each row)
**           cols   col_sum, col_max
**           1      accuracy (count of rows whose argmax equals the label),
**                  binary_accuracy (of rows whose prediction does)
**   OUT2    n      softmax_xent, sigmoid_bce, mse: gradient of the loss wrt the logits
**                  (mse: wrt x; y is the target)
**                  (optional: NULL computes the loss only)
**   IDX     rows   argmax: int32 column of each row's maximum
**   PARAM   n      optimizer: weights, updated in place
**   GRAD    n      optimizer: gradient
**   M, V    n      optimizer state, updated in place (momentum buffer;
**                  Adam first and second moments); start them at 0
*/
enum {
  TPU_VPU_O_X = 1u << 0, TPU_VPU_O_Y = 1u << 1, TPU_VPU_O_LABELS = 1u << 2,
  TPU_VPU_O_OUT = 1u << 3, TPU_VPU_O_OUT2 = 1u << 4, TPU_VPU_O_IDX = 1u << 5,
  TPU_VPU_O_PARAM = 1u << 6, TPU_VPU_O_GRAD = 1u << 7, TPU_VPU_O_M = 1u << 8,
  TPU_VPU_O_V = 1u << 9
};
/* Masks of TPU_VPU_O_* bits the op reads and writes (for dependencies);
** 0 for an out-of-range op. */
unsigned tpu_vpu_op_reads(tpu_vpu_op op);
unsigned tpu_vpu_op_writes(tpu_vpu_op op);
/* Elements of 'operand' (one TPU_VPU_O_* bit) for op on rows x cols, as in
** the table above; 0 if the op does not use it or the shape is invalid. */
size_t tpu_vpu_operand_elems(tpu_vpu_op op, unsigned operand, int rows, int cols);

/* Operands by position, for callers that pass buffers as arrays (the
** engine's in[] and out[]): the op's inputs, then its outputs, as single
** TPU_VPU_O_* bits in ascending bit order (x, y, labels, out, out2, idx,
** param, grad, m, v). PARAM, M and V are both inputs and outputs. Writes
** up to 4 bits to 'list' and returns how many; 0 for an out-of-range op. */
int tpu_vpu_op_inputs(tpu_vpu_op op, unsigned list[4]);
int tpu_vpu_op_outputs(tpu_vpu_op op, unsigned list[4]);

/* Largest rows*cols accepted (keeps every cycle count far from overflow). */
#define TPU_VPU_MAX_ELEMS ((int64_t)1 << 40)

/* Cycles for op on a rows x cols operand, by the formula at the top of this
** file. O(1), deterministic, data-independent. Returns 0 if cfg fails
** tpu_vpu_config_check, op is out of range, rows or cols < 1, or
** rows*cols > TPU_VPU_MAX_ELEMS. */
uint64_t tpu_vpu_cycles(const tpu_vpu_config *cfg, tpu_vpu_op op, int rows, int cols);
/* Registers of work for one pass: ceil(rows/sublanes) * ceil(cols/lanes);
** 0 on the same invalid inputs as tpu_vpu_cycles. */
uint64_t tpu_vpu_registers(const tpu_vpu_config *cfg, int rows, int cols);
/* }================================================================== */

/* {==================================================================
** Numerics
** ================================================================== */
/* Scalars. The optimizer formulas, in this order, all in f32:
**   sgd:      w = w - lr*g
**   momentum: m = momentum*m + g;  w = w - lr*m          (PyTorch / TF1 form)
**   adam:     m = beta1*m + (1-beta1)*g
**             v = beta2*v + (1-beta2)*(g*g)
**             mh = m * c1, vh = v * c2 with c1 = 1/(1-beta1^step) and
**             c2 = 1/(1-beta2^step) computed once in double, then rounded
**             w = w - lr*mh / (sqrtf(vh) + eps)             (Kingma & Ba, Alg. 1)
*/
typedef struct tpu_vpu_params {
  float alpha;      /* scale: out = alpha*x; add_scalar: out = x + alpha;
                    ** softmax_xent, sigmoid_bce, mse: gradient scale, usually 1/global batch;
                    ** relu_cap, relu_cap_grad: the cap, >= 0 (+inf: none);
                    ** leaky_relu, leaky_relu_grad: the slope, finite, >= 0 */
  float lr;         /* sgd momentum adam: learning rate, finite and >= 0 */
  float momentum;   /* momentum: 0 <= momentum < 1 */
  float beta1, beta2; /* adam: 0 <= beta < 1 */
  float eps;        /* adam: finite, > 0 */
  int64_t step;     /* adam: 1-based step t; >= 1 */
} tpu_vpu_params;

/* Scalar operands by position (the engine's scalars[]): the names of the
** op's scalars in order, NULL-terminated; an empty list for ops without.
**   scale, add_scalar, softmax_xent, relu_cap, relu_cap_grad, leaky_relu,
**   leaky_relu_grad, sigmoid_bce, mse: alpha
**   sgd: lr
**   momentum: lr momentum                      adam: lr beta1 beta2 eps step
** Never NULL. */
const char *const *tpu_vpu_op_scalars(tpu_vpu_op op);
/* *p = tpu_vpu_params_default() with the op's scalars taken from s[0..n-1]
** in the order above. TPU_ERR_CONFIG, *p untouched, if n is not the op's
** count or adam's step is not an integer >= 1 (range checks of the other
** values happen in tpu_vpu_exec). */
tpu_status tpu_vpu_params_from_scalars(tpu_vpu_op op, const float *s, int n, tpu_vpu_params *p);

/* alpha 1, lr 0.01, momentum 0.9, beta1 0.9, beta2 0.999, eps 1e-7 (Keras),
** step 1. This function can't fail. */
tpu_vpu_params tpu_vpu_params_default(void);

/* One op's operands; unused fields are ignored (leave them NULL). All
** pointers are borrowed for the call. An output may be the same pointer as
** an input of the same size (in place: out == x or out == y for element-wise
** ops, softmax, copy, casts; out2 == x for softmax_xent, sigmoid_bce and mse); any other overlap is
** undefined. */
typedef struct tpu_vpu_args {
  int rows, cols;           /* shape, >= 1 each, rows*cols <= TPU_VPU_MAX_ELEMS */
  const float *x, *y;       /* inputs (see the operand table) */
  const int32_t *labels;
  float *out, *out2;
  int32_t *idx;
  float *param;
  const float *grad;
  float *m, *v;
  tpu_vpu_params p;
  bool round_bf16;          /* round floats written to out, out2, param to bf16 */
} tpu_vpu_args;

/* Runs op on a. Returns TPU_ERR_CONFIG, writing nothing, if op is out of
** range, the shape is invalid (sigmoid_bce, binary_accuracy: cols other
** than 1), an operand the op uses is NULL (except the optional out2) or a
** hyper-parameter is out of range; TPU_ERR_INPUT, writing nothing, if a
** label is outside [0, cols) ([0, 2) for those two). Never allocates. */
tpu_status tpu_vpu_exec(tpu_vpu_op op, const tpu_vpu_args *a);
/* }================================================================== */
#endif /* TPU_VPU_H */
