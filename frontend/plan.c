/*
** plan.c -- the step plan: one walk over the model that lists, in order,
** every GEMM, VPU op, data movement, the all-reduce and the update of one
** core's training step (or inference pass). fe_int.h describes the plan;
** layers.c runs it for values, train_lower.c lowers it for timing.
**
** Shapes. A tensor of 'rows' samples of H x W x C is rows*H*W pixels x C
** channels for the VPU and the data movement (a flat vector: rows x N).
** Dense is the GEMM [rows x K] . [K x units]; conv2d the GEMM on its im2col
** matrix [rows*OH*OW x KH*KW*C] . [KH*KW*C x F], whose rows are the
** receptive fields in (ky, kx, c) order -- the one place conv lowering is
** written down (conv_window, and the IM2COL/COL2IM steps that carry it).
*/
#include <limits.h>
#include <assert.h>
#include <math.h>
#include <string.h>

#include "frontend/fe_int.h"

/* Steps per layer at most (conv2d backward: im2col, dW, col_sum, dX,
** col2im, the sum of a second gradient; forward: im2col, GEMM, bias_add),
** 3 more per input (a merge's add or copy, split and sum), plus the fixed
** ones; separable_conv2d: forward im2col, DW_EXPAND, two GEMMs, bias_add,
** activation; backward the activation's gradient, three GEMMs and col_sum
** of the pointwise, im2col, DW_COMPACT, DW_EXPAND, two GEMMs, col2im and
** the sum. */
enum { STEPS_PER_LAYER = 8, STEPS_PER_DW_LAYER = 14, STEPS_PER_MHA = 48, STEPS_FIXED = 8 };

static const char *const PHASE_NAMES[] = { "infeed", "fwd", "loss", "bwd", "all_reduce", "update" };
const char *fe_phase_name(fe_phase ph) {
  return (unsigned)ph <= FE_UPDATE ? PHASE_NAMES[ph] : "?";
}

static fe_tensor T(fe_tensor_kind k, int layer) { return (fe_tensor){ k, layer, 0 }; }
static fe_tensor TP(fe_tensor_kind k, int layer, int part) { return (fe_tensor){ k, layer, part }; }

size_t fe_att_elems(const tpu_fe_layer *l, int part) {
  const size_t L = (size_t)l->in.h * (size_t)l->in.w, H = (size_t)l->num_heads;
  switch (part) {
  case FE_ATT_Q: case FE_ATT_K: case FE_ATT_QH: case FE_ATT_KH: return L * H * (size_t)l->key_dim;
  case FE_ATT_V: case FE_ATT_VH: case FE_ATT_OH: case FE_ATT_O: return L * H * (size_t)l->value_dim;
  default: return H * L * L;   /* P, PD */
  }
}
size_t fe_att_woff(const tpu_fe_layer *l, int part) {
  const size_t C = (size_t)l->in.c, hd = (size_t)l->num_heads * (size_t)l->key_dim;
  return part == 0 ? 0 : part == 1 ? C * hd : part == 2 ? 2 * C * hd : 2 * C * hd + C * (size_t)l->num_heads * l->value_dim;
}
size_t fe_att_boff(const tpu_fe_layer *l, int part) {
  const size_t hd = (size_t)l->num_heads * (size_t)l->key_dim;
  return part == 0 ? 0 : part == 1 ? hd : part == 2 ? 2 * hd : 2 * hd + (size_t)l->num_heads * l->value_dim;
}

tpu_sim_dtype fe_tensor_dtype(const fe_plan *p, fe_tensor t) {
  if (p->model->policy != TPU_FE_MIXED_BFLOAT16) return TPU_SIM_F32;
  switch (t.kind) {   /* the outputs' values (the logits) and their gradients stay f32 */
  case FE_T_ACT: return t.layer > 0 && !fe_is_output(p->model, t.layer - 1) ? TPU_SIM_BF16 : TPU_SIM_F32;
  case FE_T_DACT: return t.layer < 1 || !fe_is_output(p->model, t.layer - 1) ? TPU_SIM_BF16 : TPU_SIM_F32;
  case FE_T_DTMP: case FE_T_MID: case FE_T_DMID: case FE_T_ATT: case FE_T_DATT: return TPU_SIM_BF16;
  default: return TPU_SIM_F32;
  }
}
static int64_t pix(int rows, tpu_fe_shape s) { return (int64_t)rows * s.h * s.w; }
static bool has_params(const tpu_fe_layer *l) { return l->nw || l->nb; }   /* trainable ones */
static bool is_dw(const tpu_fe_layer *l) { return l->kind == TPU_FE_DEPTHWISE || l->kind == TPU_FE_SEPARABLE; }
static bool is_gemm(const tpu_fe_layer *l) { return l->kind == TPU_FE_DENSE || l->kind == TPU_FE_CONV2D || is_dw(l); }
int fe_dw_groups(const tpu_fe_layer *l) {
  if (is_dw(l)) return l->in.c;
  return l->kind == TPU_FE_CONV2D && l->groups > 1 ? l->groups : 0;
}

/* the convs' taps and pools' windows over the layer's input */
static fe_window window_of(const tpu_fe_layer *l) {
  const bool conv = l->kind == TPU_FE_CONV2D || is_dw(l), global = l->kind == TPU_FE_GLOBAL_AVGPOOL;
  return (fe_window){ .h = l->in.h, .w = l->in.w, .c = l->in.c, .oh = l->out.h, .ow = l->out.w,
                      .kh = conv ? l->kh : global ? l->in.h : l->pool, .kw = conv ? l->kw : global ? l->in.w : l->pool,
                      .stride = global ? 1 : l->stride,
                      .pad_top = l->pad_top, .pad_left = l->pad_left };
}

typedef struct builder {
  fe_plan *p;
  int cap;                     /* steps allocated */
  unsigned char *needs;        /* [nlayers+1]: tensor j needs a gradient (a layer with parameters made it) */
  unsigned char *has_grad;     /* [nlayers+1]: the backward steps so far wrote DACT j */
  int *uses;                   /* [nlayers+1]: inputs reading tensor j */
  fe_phase phase;
  int layer;
} builder;

static fe_step *push(builder *b, fe_step_kind kind) {
  assert(b->p->nsteps < b->cap);   /* STEPS_PER_LAYER bounds every layer's steps */
  fe_step *s = &b->p->steps[b->p->nsteps++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->phase = b->phase;
  s->layer = b->layer;
  return s;
}
static fe_step *move(builder *b, fe_step_kind kind, int64_t rows, int64_t cols, fe_tensor in, fe_tensor out) {
  fe_step *s = push(b, kind);
  s->rows = rows;
  s->cols = cols;
  s->in = in;
  s->out = out;
  if (b->layer >= 0) {
    const tpu_fe_layer *l = &b->p->model->layers[b->layer];
    s->win = window_of(l);
    s->pool = l->kind;
  }
  return s;
}
static fe_gemm_step *gemm(builder *b, const char *what, int M, int N, int K, bool ta, bool tb, fe_tensor a,
                          fe_tensor bb, fe_tensor c) {
  fe_step *s = push(b, FE_STEP_GEMM);
  const tpu_precision prec = b->p->prec;
  s->gemm = (fe_gemm_step){ .what = what, .M = M, .N = N, .K = K, .ta = ta, .tb = tb, .acc = false,
                            .swapped = fe_gemm_swapped(prec, ta, tb, M, N, K),
                            .passes = tpu_precision_passes(prec), .a = a, .b = bb, .c = c };
  if (b->layer >= 0) s->win = window_of(&b->p->model->layers[b->layer]);   /* a convolution's geometry */
  return &s->gemm;
}
static fe_step *vpu(builder *b, tpu_vpu_op op, int64_t rows, int64_t cols, fe_tensor x, fe_tensor y, fe_tensor out,
                    bool fused) {
  fe_step *s = push(b, FE_STEP_VPU);
  s->fused = fused;
  s->vpu = (fe_vpu_step){ .op = op, .rows = rows, .cols = cols, .alpha = 1.0f, .weight = 1.0f, .x = x, .y = y,
                          .out = out };
  return s;
}

/* The activation layers: their VPU op and its gradient's (the forward op,
** then the gradient's, by kind; relu capped and gelu's tanh form apart). */
static const struct { tpu_fe_layer_kind kind; tpu_vpu_op op, grad; } ACTS[] = {
  { TPU_FE_RELU, TPU_VPU_RELU, TPU_VPU_RELU_GRAD }, { TPU_FE_TANH, TPU_VPU_TANH, TPU_VPU_TANH_GRAD },
  { TPU_FE_SIGMOID, TPU_VPU_SIGMOID, TPU_VPU_SIGMOID_GRAD }, { TPU_FE_GELU, TPU_VPU_GELU, TPU_VPU_GELU_GRAD },
  { TPU_FE_SWISH, TPU_VPU_SWISH, TPU_VPU_SWISH_GRAD },
  { TPU_FE_LEAKY_RELU, TPU_VPU_LEAKY_RELU, TPU_VPU_LEAKY_RELU_GRAD } };

/* Activation k of layer l (an activation layer, or l's "activation"), or
** its gradient, as one VPU step; a capped relu is relu_cap at l's
** max_value, leaky_relu's slope its alpha, gelu with 'approximate' the tanh
** form. */
static fe_step *act(builder *b, tpu_fe_layer_kind k, const tpu_fe_layer *l, bool grad, int64_t rows, int64_t cols,
                    fe_tensor x, fe_tensor y, fe_tensor out, bool fused) {
  const bool cap = k == TPU_FE_RELU && l->capped;
  tpu_vpu_op op = TPU_VPU_RELU;
  for (size_t q = 0; q < sizeof ACTS / sizeof ACTS[0]; q++) if (ACTS[q].kind == k) op = grad ? ACTS[q].grad : ACTS[q].op;
  if (cap) op = grad ? TPU_VPU_RELU_CAP_GRAD : TPU_VPU_RELU_CAP;
  if (k == TPU_FE_GELU && l->approximate) op = grad ? TPU_VPU_GELU_TANH_GRAD : TPU_VPU_GELU_TANH;
  fe_step *s = vpu(b, op, rows, cols, x, y, out, fused);
  if (cap) s->vpu.alpha = (float)l->max_value;
  if (k == TPU_FE_LEAKY_RELU) s->vpu.alpha = (float)l->negative_slope;
  return s;
}

/* Layer i's "activation" is folded into the loss: the output's softmax,
** or its sigmoid under binary cross-entropy. */
static bool act_folded(const tpu_fe_model *m, int i) {
  return m->layers[i].act == TPU_FE_SOFTMAX || fe_sigmoid_folded(m, i);
}

static fe_tensor in_act(const tpu_fe_layer *l, int k) { return T(FE_T_ACT, l->inputs[k] + 1); }
static tpu_fe_shape tensor_shape(const tpu_fe_model *m, int t) { return t ? m->layers[t - 1].out : m->input; }

/* A depthwise GEMM of layer l: G = fe_dw_groups(l) groups of C/G input
** channels each. */
static void dw_gemm(fe_gemm_step *g, const tpu_fe_layer *l) {
  g->dw = fe_dw_groups(l);
  g->dwc = l->in.c / g->dw;
}
/* DW_EXPAND or DW_COMPACT of layer l between in and out, T*C x Cm. */
static void dw_move(builder *b, fe_step_kind k, const tpu_fe_layer *l, int64_t TC, int Cm, fe_tensor in, fe_tensor out) {
  move(b, k, TC, Cm, in, out)->coff = fe_dw_groups(l);
}
/* The output channels of layer l's depthwise GEMM: C*dm (a grouped conv2d:
** its filters). */
static int dw_cols(const tpu_fe_layer *l) { return l->kind == TPU_FE_CONV2D ? l->filters : l->in.c * l->depth_multiplier; }

/* The depthwise half of layer i (depthwise_conv2d, separable_conv2d; a
** grouped conv2d whole) from x into 'out': im2col, the kernel expanded to
** its block-diagonal operand (fe_int.h), and the depthwise GEMM [R x T*C] .
** [T*C x Cm]. A grouped conv2d's are its own "matmul", "dW" and "dX". */
static void depthwise_forward(builder *b, const tpu_fe_layer *l, int i, fe_tensor x, fe_tensor out) {
  const int64_t R = pix(b->p->rows, l->out);
  const int C = l->in.c, taps = l->kh * l->kw, Cm = dw_cols(l);
  const bool grouped = l->kind == TPU_FE_CONV2D;
  move(b, FE_STEP_IM2COL, R, (int64_t)taps * C, x, T(FE_T_COLS, i));
  dw_move(b, FE_STEP_DW_EXPAND, l, (int64_t)taps * C, Cm, T(FE_T_W, i), T(FE_T_WX, i));
  dw_gemm(gemm(b, grouped ? "matmul" : "dw matmul", (int)R, Cm, taps * C, false, false, T(FE_T_COLS, i),
               T(FE_T_WX, i), out), l);
}

/* Its backward from dy (DACT, or separable's DMID): the kernel's gradient
** (DWX's block diagonal), db when 'bias', and dX into dx unless NONE. */
static void depthwise_backward(builder *b, const tpu_fe_layer *l, int i, fe_tensor x, fe_tensor dy, bool bias,
                               fe_tensor dx) {
  const int64_t R = pix(b->p->rows, l->out);
  const int C = l->in.c, taps = l->kh * l->kw, Cm = dw_cols(l);
  const bool grouped = l->kind == TPU_FE_CONV2D;
  move(b, FE_STEP_IM2COL, R, (int64_t)taps * C, x, T(FE_T_COLS, i));   /* recomputed: memory over time */
  dw_gemm(gemm(b, grouped ? "dW" : "dw dW", taps * C, Cm, (int)R, true, false, T(FE_T_COLS, i), dy, T(FE_T_DWX, i)),
          l);
  if (bias) vpu(b, TPU_VPU_COL_SUM, R, Cm, dy, T(FE_T_NONE, 0), T(FE_T_DB, i), true);
  dw_move(b, FE_STEP_DW_COMPACT, l, (int64_t)taps * C, Cm, T(FE_T_DWX, i), T(FE_T_DW, i));
  if (dx.kind == FE_T_NONE) return;
  dw_move(b, FE_STEP_DW_EXPAND, l, (int64_t)taps * C, Cm, T(FE_T_W, i), T(FE_T_WX, i));
  dw_gemm(gemm(b, grouped ? "dX" : "dw dX", (int)R, taps * C, Cm, false, true, dy, T(FE_T_WX, i), T(FE_T_COLS, i)), l);
  move(b, FE_STEP_COL2IM, pix(b->p->rows, l->in), C, T(FE_T_COLS, i), dx);
}

/* {==================================================================
** multi_head_attention (fe_int.h): R = rows*L positions, G = rows*H
** products of each batched GEMM
** ================================================================== */
static fe_gemm_step *batched(builder *b, const char *what, int G, int M, int N, int K, bool ta, bool tb, fe_tensor a,
                             fe_tensor bb, fe_tensor c) {
  fe_gemm_step *g = gemm(b, what, M, N, K, ta, tb, a, bb, c);
  g->batch = G;
  return g;
}
static fe_tensor att(int i, int part) { return TP(FE_T_ATT, i, part); }
static fe_tensor datt(int i, int part) { return TP(FE_T_DATT, i, part); }
static bool att_dropout(const builder *b, const tpu_fe_layer *l) { return b->p->train && l->rate > 0; }

static void att_forward(builder *b, const tpu_fe_layer *l, int i, fe_tensor x, fe_tensor y) {
  const int rows = b->p->rows, L = l->in.h * l->in.w, H = l->num_heads, d = l->key_dim, dv = l->value_dim;
  const int R = rows * L, G = rows * H, C = l->in.c;
  static const char *const WHAT[] = { "q matmul", "k matmul", "v matmul" };
  for (int q = 0; q < 3; q++) {   /* the projections, each with its bias */
    const int n = H * (q == 2 ? dv : d);
    gemm(b, WHAT[q], R, n, C, false, false, x, TP(FE_T_W, i, q), att(i, q));
    if (!l->no_bias) vpu(b, TPU_VPU_BIAS_ADD, R, n, att(i, q), TP(FE_T_B, i, q), att(i, q), true);
    move(b, FE_STEP_HEADS, R, n, att(i, q), att(i, FE_ATT_QH + q))->coff = H;
  }
  batched(b, "scores", G, L, L, d, false, true, att(i, FE_ATT_QH), att(i, FE_ATT_KH), att(i, FE_ATT_P));
  vpu(b, TPU_VPU_SCALE, (int64_t)G * L, L, att(i, FE_ATT_P), T(FE_T_NONE, 0), att(i, FE_ATT_P), false)->vpu.alpha =
    (float)(1.0 / sqrt((double)d));
  if (l->causal) move(b, FE_STEP_CAUSAL, (int64_t)G * L, L, att(i, FE_ATT_P), att(i, FE_ATT_P));
  vpu(b, TPU_VPU_SOFTMAX, (int64_t)G * L, L, att(i, FE_ATT_P), T(FE_T_NONE, 0), att(i, FE_ATT_P), false);
  fe_tensor p = att(i, FE_ATT_P);
  if (att_dropout(b, l)) {
    move(b, FE_STEP_DROPOUT_MASK, (int64_t)G * L, L, p, T(FE_T_MASK, i));
    vpu(b, TPU_VPU_MUL, (int64_t)G * L, L, p, T(FE_T_MASK, i), att(i, FE_ATT_PD), false);
    p = att(i, FE_ATT_PD);
  }
  batched(b, "context", G, L, dv, L, false, false, p, att(i, FE_ATT_VH), att(i, FE_ATT_OH));
  move(b, FE_STEP_MERGE_HEADS, R, H * dv, att(i, FE_ATT_OH), att(i, FE_ATT_O))->coff = H;
  gemm(b, "out matmul", R, C, H * dv, false, false, att(i, FE_ATT_O), TP(FE_T_W, i, 3), y);
  if (!l->no_bias) vpu(b, TPU_VPU_BIAS_ADD, R, C, y, TP(FE_T_B, i, 3), y, true);
}

/* Its backward from dY to the four kernels' (and biases') gradients and,
** when dx is not NONE, dX = dQ.Wq^T + dK.Wk^T + dV.Wv^T. */
static void att_backward(builder *b, const tpu_fe_layer *l, int i, fe_tensor x, fe_tensor dy, fe_tensor dx) {
  const int rows = b->p->rows, L = l->in.h * l->in.w, H = l->num_heads, d = l->key_dim, dv = l->value_dim;
  const int R = rows * L, G = rows * H, C = l->in.c;
  const fe_tensor none = T(FE_T_NONE, 0);
  gemm(b, "out dW", H * dv, C, R, true, false, att(i, FE_ATT_O), dy, TP(FE_T_DW, i, 3));
  if (!l->no_bias) vpu(b, TPU_VPU_COL_SUM, R, C, dy, none, TP(FE_T_DB, i, 3), true);
  gemm(b, "out dX", R, H * dv, C, false, true, dy, TP(FE_T_W, i, 3), datt(i, FE_ATT_O));
  move(b, FE_STEP_HEADS, R, H * dv, datt(i, FE_ATT_O), datt(i, FE_ATT_OH))->coff = H;
  const bool drop = att_dropout(b, l);
  const fe_tensor p = att(i, drop ? FE_ATT_PD : FE_ATT_P), dp = datt(i, FE_ATT_P);
  batched(b, "context dP", G, L, L, dv, false, true, datt(i, FE_ATT_OH), att(i, FE_ATT_VH),
          drop ? datt(i, FE_ATT_PD) : dp);
  batched(b, "context dV", G, L, dv, L, true, false, p, datt(i, FE_ATT_OH), datt(i, FE_ATT_VH));
  if (drop) vpu(b, TPU_VPU_MUL, (int64_t)G * L, L, datt(i, FE_ATT_PD), T(FE_T_MASK, i), dp, false);
  vpu(b, TPU_VPU_SOFTMAX_GRAD, (int64_t)G * L, L, att(i, FE_ATT_P), dp, dp, false);
  vpu(b, TPU_VPU_SCALE, (int64_t)G * L, L, dp, none, dp, false)->vpu.alpha = (float)(1.0 / sqrt((double)d));
  batched(b, "scores dQ", G, L, d, L, false, false, dp, att(i, FE_ATT_KH), datt(i, FE_ATT_QH));
  batched(b, "scores dK", G, L, d, L, true, false, dp, att(i, FE_ATT_QH), datt(i, FE_ATT_KH));
  static const char *const DW[] = { "q dW", "k dW", "v dW" }, *const DX[] = { "q dX", "k dX", "v dX" };
  for (int q = 0; q < 3; q++) {
    const int n = H * (q == 2 ? dv : d);
    move(b, FE_STEP_MERGE_HEADS, R, n, datt(i, FE_ATT_QH + q), datt(i, q))->coff = H;
    gemm(b, DW[q], C, n, R, true, false, x, datt(i, q), TP(FE_T_DW, i, q));
    if (!l->no_bias) vpu(b, TPU_VPU_COL_SUM, R, n, datt(i, q), none, TP(FE_T_DB, i, q), true);
  }
  for (int q = 0; q < 3 && dx.kind != FE_T_NONE; q++)
    gemm(b, DX[q], R, C, H * (q == 2 ? dv : d), false, true, datt(i, q), TP(FE_T_W, i, q), dx)->acc = q > 0;
}
/* }================================================================== */

/* Forward of layer i: its output is ACT i+1. */
static void forward_layer(builder *b, int i) {
  const fe_plan *p = b->p;
  const tpu_fe_layer *l = &p->model->layers[i];
  const int rows = p->rows;
  const int64_t R = pix(rows, l->out), C = l->out.c;
  const fe_tensor x = in_act(l, 0), y = T(FE_T_ACT, i + 1);
  b->layer = i;
  switch (l->kind) {
  case TPU_FE_DENSE: case TPU_FE_CONV2D: case TPU_FE_DEPTHWISE: case TPU_FE_SEPARABLE:
    if (l->kind == TPU_FE_DENSE && l->tied) {   /* the embedding's table [units x C], transposed */
      gemm(b, "matmul", (int)R, l->units, l->in.c, false, true, x, T(FE_T_W, l->tied - 1), y);
    } else if (l->kind == TPU_FE_DENSE) {   /* every position of the input: R rows */
      gemm(b, "matmul", (int)R, l->units, l->in.c, false, false, x, T(FE_T_W, i), y);
    } else if (l->kind == TPU_FE_CONV2D && fe_dw_groups(l)) {   /* grouped: block-diagonal */
      depthwise_forward(b, l, i, x, y);
    } else if (l->kind == TPU_FE_CONV2D) {
      const int K = l->kh * l->kw * l->in.c;
      move(b, FE_STEP_IM2COL, R, K, x, T(FE_T_COLS, i));
      gemm(b, "matmul", (int)R, l->filters, K, false, false, T(FE_T_COLS, i), T(FE_T_W, i), y);
    } else if (l->kind == TPU_FE_DEPTHWISE) {
      depthwise_forward(b, l, i, x, y);
    } else {   /* separable: depthwise into MID, then the pointwise GEMM */
      const int Cm = l->in.c * l->depth_multiplier;
      depthwise_forward(b, l, i, x, T(FE_T_MID, i));
      gemm(b, "matmul", (int)R, l->filters, Cm, false, false, T(FE_T_MID, i), T(FE_T_W2, i), y);
    }
    if (!l->no_bias) vpu(b, TPU_VPU_BIAS_ADD, R, C, y, T(FE_T_B, i), y, true);
    if (l->act && !act_folded(p->model, i))   /* "activation": on the result tile, in place */
      act(b, l->act, l, false, R, C, y, T(FE_T_NONE, 0), y, true);
    break;
  case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL: case TPU_FE_GLOBAL_AVGPOOL:
    move(b, FE_STEP_POOL, R, C, x, y);
    break;
  case TPU_FE_RELU: case TPU_FE_TANH: case TPU_FE_SIGMOID: case TPU_FE_GELU: case TPU_FE_SWISH:
  case TPU_FE_LEAKY_RELU: {
    if (fe_sigmoid_folded(p->model, i)) {   /* the output's, folded into binary cross-entropy: a view */
      move(b, FE_STEP_VIEW, R, C, x, y);
      break;
    }
    /* right after a GEMM layer whose result only it reads, the timing
    ** applies it to the result tile (gelu, swish and leaky_relu stay apart: their gradient reads the
    ** GEMM's result, which must then be stored as well) */
    const int j = l->inputs[0];
    const bool own = l->kind == TPU_FE_GELU || l->kind == TPU_FE_SWISH || l->kind == TPU_FE_LEAKY_RELU;
    const bool fused = !own && j == i - 1 && j >= 0 && is_gemm(&p->model->layers[j]) && b->uses[j + 1] == 1;
    act(b, l->kind, l, false, R, C, x, T(FE_T_NONE, 0), y, fused);
    break;
  }
  case TPU_FE_ZERO_PADDING:
    move(b, FE_STEP_PAD, R, C, x, y);
    break;
  case TPU_FE_BATCHNORM:
    move(b, FE_STEP_BN, R, C, x, y);
    break;
  case TPU_FE_LAYERNORM:
    move(b, FE_STEP_LN, R, C, x, y);
    break;
  case TPU_FE_MHA:
    att_forward(b, l, i, x, y);
    break;
  case TPU_FE_EMBEDDING:
    move(b, FE_STEP_GATHER, R, C, x, y);
    break;
  case TPU_FE_POS_EMBEDDING:   /* the first L*C of the table, added to each sample as a bias */
    vpu(b, TPU_VPU_BIAS_ADD, rows, (int64_t)tpu_fe_shape_size(l->out), x, T(FE_T_W, i), y, false);
    break;
  case TPU_FE_CLASS_TOKEN:
    move(b, FE_STEP_CLS, R, C, x, y);
    break;
  case TPU_FE_PERMUTE:
    move(b, FE_STEP_PERMUTE, R, C, x, y);
    break;
  case TPU_FE_SOFTMAX:   /* the output's is folded into the loss: a view */
    if (fe_softmax_folded(p->model, i)) move(b, FE_STEP_VIEW, R, C, x, y);
    else vpu(b, TPU_VPU_SOFTMAX, R, C, x, T(FE_T_NONE, 0), y, false);
    break;
  case TPU_FE_TAKE: {
    fe_step *s = move(b, FE_STEP_TAKE, rows, C, x, y);
    s->coff = l->position;
    s->ctot = l->in.w;
    break;
  }
  case TPU_FE_MULTIPLY: {
    const int g = fe_gate_input(p->model, l);
    if (g < 0) vpu(b, TPU_VPU_MUL, R, C, x, in_act(l, 1), y, false);
    else move(b, FE_STEP_GATE, R, C, in_act(l, 1 - g), y);
    break;
  }
  case TPU_FE_RESCALING: case TPU_FE_NORMALIZATION:
    move(b, FE_STEP_AFFINE, R, C, x, y);
    break;
  case TPU_FE_ADD:
    vpu(b, TPU_VPU_ADD, R, C, x, in_act(l, 1), y, false);
    for (int k = 2; k < l->nin; k++) vpu(b, TPU_VPU_ADD, R, C, y, in_act(l, k), y, false);
    break;
  case TPU_FE_CONCAT:
    for (int k = 0, off = 0; k < l->nin; k++) {
      const int c = tensor_shape(p->model, l->inputs[k] + 1).c;
      fe_step *s = move(b, FE_STEP_CONCAT, R, c, in_act(l, k), y);
      s->coff = off;
      s->ctot = (int)C;
      off += c;
    }
    break;
  case TPU_FE_DROPOUT:
    if (p->train && l->rate > 0) {
      move(b, FE_STEP_DROPOUT_MASK, R, C, x, T(FE_T_MASK, i));
      vpu(b, TPU_VPU_MUL, R, C, x, T(FE_T_MASK, i), y, false);
      break;
    }
    /* fall through */   /* inactive: a view */
  default:   /* flatten */
    move(b, FE_STEP_VIEW, R, C, x, y);
    break;
  }
}

/* Where the gradient of tensor t goes: DACT t for its first producer (in
** backward order), DTMP t for the next ones, which grad_end sums in. */
static fe_tensor grad_to(builder *b, int t) {
  return T(b->has_grad[t] ? FE_T_DTMP : FE_T_DACT, t);
}
static void grad_end(builder *b, int t, fe_tensor dx) {
  if (dx.kind == FE_T_DTMP) {
    const tpu_fe_shape s = tensor_shape(b->p->model, t);
    vpu(b, TPU_VPU_ADD, pix(b->p->rows, s), s.c, T(FE_T_DACT, t), dx, T(FE_T_DACT, t), false);
  }
  b->has_grad[t] = 1;
}

int fe_gate_input(const tpu_fe_model *m, const tpu_fe_layer *l) {
  for (int k = 0; l->kind == TPU_FE_MULTIPLY && k < 2; k++) {
    const tpu_fe_shape s = tensor_shape(m, l->inputs[k] + 1);
    if (s.h * s.w == 1 && l->out.h * l->out.w != 1) return k;
  }
  return -1;
}

/* add, multiply and concatenate: dY to every input that needs a gradient
** (multiply's: dY times the other input; a gate's: GATE_GRAD). */
static void backward_merge(builder *b, const tpu_fe_layer *l, int i) {
  const int rows = b->p->rows, g = fe_gate_input(b->p->model, l);
  const fe_tensor dy = T(FE_T_DACT, i + 1);
  for (int k = 0, off = 0; k < l->nin; k++) {
    const int t = l->inputs[k] + 1;
    const tpu_fe_shape s = tensor_shape(b->p->model, t);
    if (b->needs[t] && l->kind == TPU_FE_MULTIPLY) {
      const fe_tensor dx = grad_to(b, t);
      if (g < 0) vpu(b, TPU_VPU_MUL, pix(rows, s), s.c, dy, in_act(l, 1 - k), dx, false);
      else move(b, k == g ? FE_STEP_GATE_GRAD : FE_STEP_GATE, pix(rows, l->out), l->out.c, dy, dx);
      grad_end(b, t, dx);
    } else if (b->needs[t] && l->kind == TPU_FE_ADD) {   /* the same bytes; a second one is summed in */
      if (b->has_grad[t]) vpu(b, TPU_VPU_ADD, pix(rows, s), s.c, T(FE_T_DACT, t), dy, T(FE_T_DACT, t), false);
      else move(b, FE_STEP_VIEW, pix(rows, s), s.c, dy, T(FE_T_DACT, t));
      b->has_grad[t] = 1;
    } else if (b->needs[t]) {
      const fe_tensor dx = grad_to(b, t);
      fe_step *st = move(b, FE_STEP_SPLIT, pix(rows, s), s.c, dy, dx);
      st->coff = off;
      st->ctot = l->out.c;
      grad_end(b, t, dx);
    }
    off += s.c;
  }
}

/* Backward of layer i: from DACT i+1 to the parameter gradients and (when a
** layer upstream needs it) its input's gradient. */
static void backward_layer(builder *b, int i) {
  const fe_plan *p = b->p;
  const tpu_fe_layer *l = &p->model->layers[i];
  const int rows = p->rows, t = l->inputs[0] + 1;
  const bool need_dx = b->needs[t];
  const int64_t Rout = pix(rows, l->out), Cout = l->out.c;
  const fe_tensor dy = T(FE_T_DACT, i + 1), x = T(FE_T_ACT, t), none = T(FE_T_NONE, 0);
  b->layer = i;
  if (l->kind == TPU_FE_ADD || l->kind == TPU_FE_CONCAT || l->kind == TPU_FE_MULTIPLY) {
    backward_merge(b, l, i);
    return;
  }
  const fe_tensor dx = need_dx ? grad_to(b, t) : none;
  if (l->act && !act_folded(p->model, i))   /* "activation": its gradient from the output, in place */
    act(b, l->act, l, true, Rout, Cout, T(FE_T_ACT, i + 1), dy, dy, false);
  switch (l->kind) {
  case TPU_FE_DENSE:   /* over every position: Rout rows */
    if (l->tied) {   /* into the table's gradient [units x C] = dY^T X, before the embedding adds its own */
      gemm(b, "dW", l->units, l->in.c, (int)Rout, true, false, dy, x, T(FE_T_DW, l->tied - 1))->acc =
        fe_tied_after(p->model, i);
      if (need_dx) gemm(b, "dX", (int)Rout, l->in.c, l->units, false, false, dy, T(FE_T_W, l->tied - 1), dx);
      break;
    }
    gemm(b, "dW", l->in.c, l->units, (int)Rout, true, false, x, dy, T(FE_T_DW, i));
    if (!l->no_bias) vpu(b, TPU_VPU_COL_SUM, Rout, l->units, dy, none, T(FE_T_DB, i), true);
    if (need_dx) gemm(b, "dX", (int)Rout, l->in.c, l->units, false, true, dy, T(FE_T_W, i), dx);
    break;
  case TPU_FE_CONV2D: {
    const int K = l->kh * l->kw * l->in.c;
    if (fe_dw_groups(l)) {   /* grouped: block-diagonal */
      depthwise_backward(b, l, i, x, dy, !l->no_bias, dx);
      break;
    }
    move(b, FE_STEP_IM2COL, Rout, K, x, T(FE_T_COLS, i));   /* recomputed: memory over time */
    gemm(b, "dW", K, l->filters, (int)Rout, true, false, T(FE_T_COLS, i), dy, T(FE_T_DW, i));
    if (!l->no_bias) vpu(b, TPU_VPU_COL_SUM, Rout, l->filters, dy, none, T(FE_T_DB, i), true);
    if (need_dx) {
      gemm(b, "dX", (int)Rout, K, l->filters, false, true, dy, T(FE_T_W, i), T(FE_T_COLS, i));
      move(b, FE_STEP_COL2IM, pix(rows, l->in), l->in.c, T(FE_T_COLS, i), dx);
    }
    break;
  }
  case TPU_FE_DEPTHWISE:
    depthwise_backward(b, l, i, x, dy, !l->no_bias, dx);
    break;
  case TPU_FE_SEPARABLE: {   /* the pointwise GEMM's dW, db and dMID, then the depthwise half's */
    const int Cm = l->in.c * l->depth_multiplier;
    gemm(b, "dW", Cm, l->filters, (int)Rout, true, false, T(FE_T_MID, i), dy, T(FE_T_DW2, i));
    if (!l->no_bias) vpu(b, TPU_VPU_COL_SUM, Rout, l->filters, dy, none, T(FE_T_DB, i), true);
    gemm(b, "dX", (int)Rout, Cm, l->filters, false, true, dy, T(FE_T_W2, i), T(FE_T_DMID, i));
    depthwise_backward(b, l, i, x, T(FE_T_DMID, i), false, dx);
    break;
  }
  case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL: case TPU_FE_GLOBAL_AVGPOOL:
    move(b, FE_STEP_POOL_BWD, Rout, Cout, dy, dx);
    break;
  case TPU_FE_ZERO_PADDING:
    move(b, FE_STEP_CROP, pix(rows, l->in), l->in.c, dy, dx);
    break;
  case TPU_FE_BATCHNORM:
    move(b, FE_STEP_BN_BWD, Rout, Cout, dy, dx);
    break;
  case TPU_FE_LAYERNORM:
    move(b, FE_STEP_LN_BWD, Rout, Cout, dy, dx);
    break;
  case TPU_FE_MHA:
    att_backward(b, l, i, x, dy, dx);
    break;
  case TPU_FE_EMBEDDING:   /* the ids take no gradient */
    move(b, FE_STEP_SCATTER, Rout, Cout, dy, none);
    break;
  case TPU_FE_POS_EMBEDDING:
    vpu(b, TPU_VPU_COL_SUM, rows, (int64_t)tpu_fe_shape_size(l->out), dy, none, T(FE_T_DW, i), false);
    if (need_dx) move(b, FE_STEP_VIEW, Rout, Cout, dy, dx);
    break;
  case TPU_FE_CLASS_TOKEN:
    move(b, FE_STEP_CLS_BWD, Rout, Cout, dy, dx);
    break;
  case TPU_FE_PERMUTE:   /* the inverse permutation */
    move(b, FE_STEP_PERMUTE, Rout, Cout, dy, dx)->coff = 1;
    break;
  case TPU_FE_RESCALING: case TPU_FE_NORMALIZATION:
    move(b, FE_STEP_AFFINE, Rout, Cout, dy, dx)->coff = 1;
    break;
  case TPU_FE_SOFTMAX:   /* from its output */
    if (fe_softmax_folded(p->model, i)) move(b, FE_STEP_VIEW, Rout, Cout, dy, dx);
    else vpu(b, TPU_VPU_SOFTMAX_GRAD, Rout, Cout, T(FE_T_ACT, i + 1), dy, dx, false);
    break;
  case TPU_FE_TAKE:
    if (need_dx) {
      fe_step *s = move(b, FE_STEP_PUT, rows, Cout, dy, dx);
      s->coff = l->position;
      s->ctot = l->in.w;
    }
    break;
  case TPU_FE_RELU:       /* relu_grad (relu_cap_grad) looks at the forward input, */
  case TPU_FE_GELU: case TPU_FE_SWISH: case TPU_FE_LEAKY_RELU:   /* as these do */
    act(b, l->kind, l, true, Rout, Cout, x, dy, dx, false);
    break;
  case TPU_FE_TANH: case TPU_FE_SIGMOID:   /* these look at the forward output */
    if (fe_sigmoid_folded(p->model, i)) move(b, FE_STEP_VIEW, Rout, Cout, dy, dx);   /* the loss's gradient */
    else act(b, l->kind, l, true, Rout, Cout, T(FE_T_ACT, i + 1), dy, dx, false);
    break;
  case TPU_FE_DROPOUT:
    if (l->rate > 0) {
      vpu(b, TPU_VPU_MUL, Rout, Cout, dy, T(FE_T_MASK, i), dx, false);
      break;
    }
    /* fall through */   /* inactive: a view */
  default:   /* flatten */
    move(b, FE_STEP_VIEW, Rout, Cout, dy, dx);
    break;
  }
  if (need_dx) grad_end(b, t, dx);
}

/* The loss over 'rows' rows of logits (a sample's, or a position's for the
** next-token loss: every position is computed, the last one's masked out
** by the value path, as a masked loss runs on a TPU), its gradient scaled
** to the mean over the global batch's predictions. */
static void loss_steps(builder *b) {
  const fe_plan *p = b->p;
  const int n = p->model->nlayers, ncls = p->model->layers[n - 1].out.c;
  const int per = p->model->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT ? p->model->input.c : 1;   /* rows a sample */
  const int64_t rows = (int64_t)p->rows * per;
  b->phase = FE_LOSS;
  b->layer = -1;
  fe_step *s = vpu(b, TPU_VPU_SOFTMAX_XENT, rows, ncls, T(FE_T_ACT, n), T(FE_T_LABELS, 0), T(FE_T_LOSS, 0), false);
  if (p->train) s->vpu.out2 = T(FE_T_DACT, n);
  s->vpu.alpha = (float)(1.0 / ((double)p->global_batch * tpu_fe_model_predictions(p->model)));
  vpu(b, TPU_VPU_ACCURACY, rows, ncls, T(FE_T_ACT, n), T(FE_T_LABELS, 0), T(FE_T_HITS, 0), true);
}

/* binary cross-entropy and binary accuracy of the one logit a sample
** (the head's sigmoid folded in), as loss_steps does softmax_xent's. */
static void binary_loss_steps(builder *b) {
  const fe_plan *p = b->p;
  const int n = p->model->nlayers;
  const fe_tensor logit = T(FE_T_ACT, n), lab = T(FE_T_LABELS, 0);
  b->phase = FE_LOSS;
  b->layer = -1;
  fe_step *s = vpu(b, TPU_VPU_SIGMOID_BCE, p->rows, 1, logit, lab, T(FE_T_LOSS, 0), false);
  s->vpu.alpha = (float)(1.0 / p->global_batch);
  if (p->train) s->vpu.out2 = T(FE_T_DACT, n);
  vpu(b, TPU_VPU_BINARY_ACCURACY, p->rows, 1, logit, lab, T(FE_T_HITS, 0), true);
}

/* The losses of a model with several outputs (fe.h, tpu_fe_output): each
** output's loss (part k of LOSS) with alpha = weight / global batch, its
** gradient into its tensor's DACT; output 0's accuracy. A mean squared
** error reads its target (TARGET k, made from the labels). */
static void outputs_loss_steps(builder *b) {
  static const tpu_vpu_op OP[] = { TPU_VPU_SOFTMAX_XENT, TPU_VPU_SIGMOID_BCE, TPU_VPU_MSE };
  const fe_plan *p = b->p;
  const tpu_fe_model *m = p->model;
  b->phase = FE_LOSS;
  b->layer = -1;
  for (int k = 0; k < m->nout; k++) {
    const tpu_fe_output *o = &m->out[k];
    const int t = o->layer + 1, cols = (int)tpu_fe_shape_size(m->layers[o->layer].out);
    const fe_tensor y = o->loss == TPU_FE_LOSS_MSE ? TP(FE_T_TARGET, 0, k) : T(FE_T_LABELS, 0);
    fe_step *s = vpu(b, OP[o->loss], p->rows, cols, T(FE_T_ACT, t), y, TP(FE_T_LOSS, 0, k), false);
    s->vpu.alpha = (float)(o->weight / p->global_batch);
    s->vpu.weight = (float)o->weight;
    if (p->train) s->vpu.out2 = T(FE_T_DACT, t);
    if (k == 0)
      vpu(b, o->loss == TPU_FE_LOSS_BINARY_XENT ? TPU_VPU_BINARY_ACCURACY : TPU_VPU_ACCURACY, p->rows, cols,
          T(FE_T_ACT, t), T(FE_T_LABELS, 0), T(FE_T_HITS, 0), true);
  }
}

/* Which tensors need a gradient (made by a layer with parameters, or by a
** layer reading one that does) and how many inputs read each. */
static void graph_facts(const tpu_fe_model *m, builder *b) {
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *l = &m->layers[i];
    bool need = has_params(l);
    for (int k = 0; k < l->nin; k++) {
      b->uses[l->inputs[k] + 1]++;
      need = need || b->needs[l->inputs[k] + 1];
    }
    b->needs[i + 1] = need;
  }
}

static void build(builder *b, bool train) {
  fe_plan *p = b->p;
  const tpu_fe_model *m = p->model;
  while (p->first_param < m->nlayers && !has_params(&m->layers[p->first_param])) p->first_param++;
  graph_facts(m, b);
  move(b, FE_STEP_INFEED, p->rows, (int64_t)tpu_fe_shape_size(m->input), T(FE_T_X, 0), T(FE_T_ACT, 0));
  b->phase = FE_FORWARD;
  for (int i = 0; i < m->nlayers; i++) forward_layer(b, i);
  if (m->nout > 1 || (m->nout == 1 && m->out[0].weight != 1.0)) outputs_loss_steps(b);
  else if (m->loss == TPU_FE_LOSS_BINARY_XENT) binary_loss_steps(b);
  else loss_steps(b);
  if (!train) return;
  b->phase = FE_BACKWARD;
  b->has_grad[m->nlayers] = 1;   /* the loss's gradient */
  for (int k = 0; k < m->nout; k++) b->has_grad[m->out[k].layer + 1] = 1;   /* each output's */
  for (int i = m->nlayers - 1; i >= 0; i--) if (b->needs[i + 1]) backward_layer(b, i);
  b->layer = -1;
  b->phase = FE_ALLREDUCE;
  move(b, FE_STEP_ALLREDUCE, (int64_t)m->nparams, 1, T(FE_T_GRADS, 0), T(FE_T_GRADS, 0));
  b->phase = FE_UPDATE;
  move(b, FE_STEP_UPDATE, (int64_t)m->nparams, 1, T(FE_T_GRADS, 0), T(FE_T_PARAMS, 0));
  for (int i = 0; i < m->nlayers; i++)
    if (m->layers[i].kind == TPU_FE_BATCHNORM) {
      b->layer = i;
      move(b, FE_STEP_BN_MOVING, 2, m->layers[i].out.c, T(FE_T_NONE, 0), T(FE_T_PARAMS, 0));
    }
}

tpu_status fe_plan_create(const tpu_fe_model *m, int rows, int global_batch, tpu_precision prec, bool train,
                          fe_plan **out) {
  *out = NULL;
  /* a GEMM's rows (samples x output pixels) are ints: larger is refused */
  if (pix(rows, m->input) > INT_MAX) return TPU_ERR_RANGE;
  for (int i = 0; i < m->nlayers; i++)
    if (pix(rows, m->layers[i].out) > INT_MAX) return TPU_ERR_RANGE;
  int cap = STEPS_FIXED;
  for (int i = 0; i < m->nlayers; i++)
    cap += (m->layers[i].kind == TPU_FE_MHA ? STEPS_PER_MHA : fe_dw_groups(&m->layers[i]) ? STEPS_PER_DW_LAYER
            : STEPS_PER_LAYER) + 3 * m->layers[i].nin;
  fe_plan *p = tpu_calloc(1, sizeof *p);
  fe_step *steps = tpu_calloc((size_t)cap, sizeof *steps);
  const size_t nt = (size_t)m->nlayers + 1;
  builder b = { .p = p, .cap = cap, .phase = FE_INFEED, .layer = -1, .needs = tpu_calloc(nt, 1),
                .has_grad = tpu_calloc(nt, 1), .uses = tpu_calloc(nt, sizeof(int)) };
  tpu_status st = TPU_ERR_NOMEM;
  if (p && steps && b.needs && b.has_grad && b.uses) {
    *p = (fe_plan){ .model = m, .rows = rows, .global_batch = global_batch, .prec = prec, .train = train,
                    .steps = steps };
    build(&b, train);
    *out = p;
    p = NULL;
    steps = NULL;
    st = TPU_OK;
  }
  tpu_free(b.needs);
  tpu_free(b.has_grad);
  tpu_free(b.uses);
  tpu_free(steps);
  tpu_free(p);
  return st;
}

void fe_plan_destroy(fe_plan *p) {
  if (!p) return;
  tpu_free(p->steps);
  tpu_free(p);
}

bool fe_tied_after(const tpu_fe_model *m, int i) {
  const tpu_fe_layer *L = &m->layers[i];
  const int table = L->kind == TPU_FE_EMBEDDING ? i : L->tied - 1;
  for (int k = i + 1; table >= 0 && k < m->nlayers; k++)
    if (m->layers[k].kind == TPU_FE_DENSE && m->layers[k].tied - 1 == table) return true;
  return false;
}

int fe_head_of(const tpu_fe_model *m, int o) {
  int h = o;
  while (h > 0 && (m->layers[h].kind == TPU_FE_RESHAPE || m->layers[h].kind == TPU_FE_FLATTEN) &&
         m->layers[h].inputs[0] == h - 1)
    h--;
  return h;
}

bool fe_softmax_folded(const tpu_fe_model *m, int i) {
  for (int k = 0; k < (m->nout ? m->nout : 1); k++) {   /* an output's head, or a layer between it and it */
    const int o = m->nout ? m->out[k].layer : m->nlayers - 1;
    if (i <= o && i >= fe_head_of(m, o)) return true;
  }
  return false;
}

static bool is_sigmoid(const tpu_fe_layer *l) {
  return l->kind == TPU_FE_SIGMOID || (is_gemm(l) && l->act == TPU_FE_SIGMOID);
}
static bool is_tanh(const tpu_fe_layer *l) {
  return l->kind == TPU_FE_TANH || (is_gemm(l) && l->act == TPU_FE_TANH);
}

bool fe_output_binary(const tpu_fe_model *m, int o) {
  return tpu_fe_shape_size(m->layers[o].out) == 1 && is_sigmoid(&m->layers[fe_head_of(m, o)]);
}
bool fe_binary_head(const tpu_fe_model *m) { return fe_output_binary(m, m->nlayers - 1); }

tpu_fe_loss fe_head_loss(const tpu_fe_model *m, int o) {
  const tpu_fe_layer *h = &m->layers[fe_head_of(m, o)];
  if (fe_output_binary(m, o)) return TPU_FE_LOSS_BINARY_XENT;
  return is_tanh(h) || tpu_fe_shape_size(m->layers[o].out) == 1 ? TPU_FE_LOSS_MSE : TPU_FE_LOSS_SOFTMAX_XENT;
}

bool fe_sigmoid_folded(const tpu_fe_model *m, int i) {
  for (int k = 0; k < (m->nout ? m->nout : 1); k++) {   /* a model made without the loader: its last layer */
    const int o = m->nout ? m->out[k].layer : m->nlayers - 1;
    const tpu_fe_loss l = m->nout ? m->out[k].loss : m->loss;
    if (l == TPU_FE_LOSS_BINARY_XENT && i == fe_head_of(m, o) && is_sigmoid(&m->layers[i])) return true;
  }
  return false;
}

bool fe_is_output(const tpu_fe_model *m, int i) {
  for (int k = 0; k < m->nout; k++) if (m->out[k].layer == i) return true;
  return i == m->nlayers - 1;
}

static const char *const ATT_PART_NAMES[] = { "projections", "scores", "softmax", "weighted sum" };
const char *tpu_fe_att_part_name(tpu_fe_att_part p) {
  return (unsigned)p < TPU_FE_ATT_NPARTS ? ATT_PART_NAMES[p] : "?";
}

int fe_step_att_part(const fe_plan *p, int k) {
  const fe_step *s = &p->steps[k];
  if (s->layer < 0 || p->model->layers[s->layer].kind != TPU_FE_MHA) return -1;
  switch (s->kind) {
  case FE_STEP_GEMM:
    return !strncmp(s->gemm.what, "scores", 6) ? TPU_FE_ATT_SCORES
         : !strncmp(s->gemm.what, "context", 7) ? TPU_FE_ATT_WEIGHTED_SUM : TPU_FE_ATT_PROJECTIONS;
  case FE_STEP_VPU:
    return s->vpu.op == TPU_VPU_SCALE ? TPU_FE_ATT_SCORES
         : s->vpu.op == TPU_VPU_BIAS_ADD || s->vpu.op == TPU_VPU_COL_SUM ? TPU_FE_ATT_PROJECTIONS
         : TPU_FE_ATT_SOFTMAX;   /* softmax, its gradient, the dropout's mul */
  case FE_STEP_CAUSAL: return TPU_FE_ATT_SCORES;
  case FE_STEP_DROPOUT_MASK: return TPU_FE_ATT_SOFTMAX;
  default: return TPU_FE_ATT_PROJECTIONS;   /* the heads' split and merge */
  }
}

tpu_status tpu_fe_model_gemms(const tpu_fe_model *m, int batch, tpu_fe_layer_gemms *out) {
  fe_plan *p;
  tpu_status st = fe_plan_create(m, batch, batch, TPU_PREC_BF16, true, &p);
  if (st) return st;
  memset(out, 0, (size_t)m->nlayers * sizeof *out);
  for (int k = 0; k < p->nsteps; k++) {
    const fe_step *s = &p->steps[k];
    if (s->kind != FE_STEP_GEMM || s->layer < 0) continue;
    tpu_fe_layer_gemms *o = &out[s->layer];
    const fe_gemm_step *g = &s->gemm;
    /* a depthwise GEMM: C products, one per channel, of its channel-indexed
    ** dimensions over C (N always; dW: M, else K) */
    /* a batched GEMM (attention's): 'batch' products of the step's shape */
    const int64_t D = g->dw ? g->dw : 1, G = g->dw ? g->dw : g->batch > 1 ? g->batch : 1;
    const int64_t gm = g->ta ? g->M / D : g->M, gk = g->ta ? g->K : g->K / D, gn = g->N / D;
    const uint64_t flops = 2u * (uint64_t)G * (uint64_t)gm * (uint64_t)gn * (uint64_t)gk;
    const bool fwd = s->phase == FE_FORWARD;
    assert(o->ngemms < TPU_FE_LAYER_GEMMS);   /* matmul, dW, dX (separable: twice; attention: 18) */
    o->gemm[o->ngemms].what = g->what;
    o->gemm[o->ngemms].forward = fwd;
    o->gemm[o->ngemms].groups = G;
    o->gemm[o->ngemms].m = gm;
    o->gemm[o->ngemms].k = gk;
    o->gemm[o->ngemms].n = gn;
    o->ngemms++;
    o->step_flops += flops;
    if (fwd) o->forward_flops += flops;
  }
  fe_plan_destroy(p);
  return TPU_OK;
}

int64_t fe_gemm_dw_block(const fe_gemm_step *g, int width, int b, int64_t *M, int64_t *N, int64_t *K) {
  const int64_t C = g->dw;
  if (C < 1 || b < 0) return 0;
  const int64_t dm = (g->tb ? g->K : g->N) / C, T = (g->ta ? g->M : g->tb ? g->N : g->K) / C;
  const int64_t kg = width / dm > 1 ? width / dm : 1, c0 = (int64_t)b * kg;
  if (c0 >= C) return 0;
  const int64_t k = C - c0 < kg ? C - c0 : kg;
  if (g->ta) { *M = T * k; *N = k * dm; *K = g->K; }        /* dW: the block's taps x its columns, over R */
  else if (g->tb) { *M = g->M; *N = T * k; *K = k * dm; }   /* dX */
  else { *M = g->M; *N = k * dm; *K = T * k; }              /* forward */
  return k;
}
