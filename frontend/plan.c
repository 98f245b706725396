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
#include <assert.h>
#include <string.h>

#include "frontend/fe_int.h"

/* Steps per layer at most (conv2d backward: im2col, dW, col_sum, dX,
** col2im; forward: im2col, GEMM, bias_add) plus the fixed ones. */
enum { STEPS_PER_LAYER = 8, STEPS_FIXED = 8 };

static const char *const PHASE_NAMES[] = { "infeed", "fwd", "loss", "bwd", "all_reduce", "update" };
const char *fe_phase_name(fe_phase ph) {
  return (unsigned)ph <= FE_UPDATE ? PHASE_NAMES[ph] : "?";
}

static fe_tensor T(fe_tensor_kind k, int layer) { return (fe_tensor){ k, layer }; }
static int64_t pix(int rows, tpu_fe_shape s) { return (int64_t)rows * s.h * s.w; }
static bool has_params(const tpu_fe_layer *l) { return l->kind == TPU_FE_DENSE || l->kind == TPU_FE_CONV2D; }

/* conv2d's taps and pools' windows over the layer's input */
static fe_window window_of(const tpu_fe_layer *l) {
  const bool conv = l->kind == TPU_FE_CONV2D;
  return (fe_window){ .h = l->in.h, .w = l->in.w, .c = l->in.c, .oh = l->out.h, .ow = l->out.w,
                      .kh = conv ? l->kh : l->pool, .kw = conv ? l->kw : l->pool, .stride = l->stride,
                      .pad_top = conv ? l->pad_top : 0, .pad_left = conv ? l->pad_left : 0 };
}

typedef struct builder {
  fe_plan *p;
  int cap;                     /* steps allocated */
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
static fe_step *move(builder *b, fe_step_kind kind, int64_t rows, int64_t cols) {
  fe_step *s = push(b, kind);
  s->rows = rows;
  s->cols = cols;
  if (b->layer >= 0) {
    const tpu_fe_layer *l = &b->p->model->layers[b->layer];
    s->win = window_of(l);
    s->pool = l->kind;
  }
  return s;
}
static void gemm(builder *b, const char *what, int M, int N, int K, bool ta, bool tb, fe_tensor a, fe_tensor bb,
                 fe_tensor c) {
  fe_step *s = push(b, FE_STEP_GEMM);
  const tpu_precision prec = b->p->prec;
  s->gemm = (fe_gemm_step){ .what = what, .M = M, .N = N, .K = K, .ta = ta, .tb = tb, .acc = false,
                            .swapped = fe_gemm_swapped(prec, ta, tb, M, N, K),
                            .passes = tpu_precision_passes(prec), .a = a, .b = bb, .c = c };
}
static fe_step *vpu(builder *b, tpu_vpu_op op, int64_t rows, int64_t cols, fe_tensor x, fe_tensor y, fe_tensor out,
                    bool fused) {
  fe_step *s = push(b, FE_STEP_VPU);
  s->fused = fused;
  s->vpu = (fe_vpu_step){ .op = op, .rows = rows, .cols = cols, .alpha = 1.0f, .x = x, .y = y, .out = out };
  return s;
}

static tpu_vpu_op act_op(tpu_fe_layer_kind k, bool grad) {
  if (k == TPU_FE_RELU) return grad ? TPU_VPU_RELU_GRAD : TPU_VPU_RELU;
  if (k == TPU_FE_TANH) return grad ? TPU_VPU_TANH_GRAD : TPU_VPU_TANH;
  return grad ? TPU_VPU_SIGMOID_GRAD : TPU_VPU_SIGMOID;
}

/* Forward of layer i: its output is ACT i+1. */
static void forward_layer(builder *b, int i) {
  const fe_plan *p = b->p;
  const tpu_fe_layer *l = &p->model->layers[i];
  const int rows = p->rows;
  const int64_t R = pix(rows, l->out), C = l->out.c;
  b->layer = i;
  switch (l->kind) {
  case TPU_FE_DENSE:
    gemm(b, "matmul", rows, l->units, l->in.c, false, false, T(FE_T_ACT, i), T(FE_T_W, i), T(FE_T_ACT, i + 1));
    vpu(b, TPU_VPU_BIAS_ADD, rows, l->units, T(FE_T_ACT, i + 1), T(FE_T_B, i), T(FE_T_ACT, i + 1), true);
    break;
  case TPU_FE_CONV2D: {
    const int K = l->kh * l->kw * l->in.c;
    move(b, FE_STEP_IM2COL, R, K);
    gemm(b, "matmul", (int)R, l->filters, K, false, false, T(FE_T_COLS, i), T(FE_T_W, i), T(FE_T_ACT, i + 1));
    vpu(b, TPU_VPU_BIAS_ADD, R, l->filters, T(FE_T_ACT, i + 1), T(FE_T_B, i), T(FE_T_ACT, i + 1), true);
    break;
  }
  case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL:
    move(b, FE_STEP_POOL, R, C);
    break;
  case TPU_FE_RELU: case TPU_FE_TANH: case TPU_FE_SIGMOID: {
    /* right after a GEMM layer, the timing applies it to the result tile */
    const bool fused = i > 0 && has_params(&p->model->layers[i - 1]);
    vpu(b, act_op(l->kind, false), R, C, T(FE_T_ACT, i), T(FE_T_NONE, 0), T(FE_T_ACT, i + 1), fused);
    break;
  }
  case TPU_FE_DROPOUT:
    if (p->train && l->rate > 0) {
      move(b, FE_STEP_DROPOUT_MASK, R, C);
      vpu(b, TPU_VPU_MUL, R, C, T(FE_T_ACT, i), T(FE_T_MASK, i), T(FE_T_ACT, i + 1), false);
      break;
    }
    /* fall through */   /* inactive: a view */
  default:   /* flatten */
    move(b, FE_STEP_VIEW, R, C);
    break;
  }
}

/* Backward of layer i: from DACT i+1 to the parameter gradients and (when a
** layer upstream needs it) DACT i. */
static void backward_layer(builder *b, int i) {
  const fe_plan *p = b->p;
  const tpu_fe_layer *l = &p->model->layers[i];
  const int rows = p->rows;
  const bool need_dx = i > p->first_param;
  const int64_t Rout = pix(rows, l->out), Cout = l->out.c;
  const fe_tensor dy = T(FE_T_DACT, i + 1), dx = T(FE_T_DACT, i), none = T(FE_T_NONE, 0);
  b->layer = i;
  switch (l->kind) {
  case TPU_FE_DENSE:
    gemm(b, "dW", l->in.c, l->units, rows, true, false, T(FE_T_ACT, i), dy, T(FE_T_DW, i));
    vpu(b, TPU_VPU_COL_SUM, rows, l->units, dy, none, T(FE_T_DB, i), true);
    if (need_dx) gemm(b, "dX", rows, l->in.c, l->units, false, true, dy, T(FE_T_W, i), dx);
    break;
  case TPU_FE_CONV2D: {
    const int K = l->kh * l->kw * l->in.c;
    move(b, FE_STEP_IM2COL, Rout, K);   /* recomputed: memory over time */
    gemm(b, "dW", K, l->filters, (int)Rout, true, false, T(FE_T_COLS, i), dy, T(FE_T_DW, i));
    vpu(b, TPU_VPU_COL_SUM, Rout, l->filters, dy, none, T(FE_T_DB, i), true);
    if (need_dx) {
      gemm(b, "dX", (int)Rout, K, l->filters, false, true, dy, T(FE_T_W, i), T(FE_T_COLS, i));
      move(b, FE_STEP_COL2IM, pix(rows, l->in), l->in.c);
    }
    break;
  }
  case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL:
    move(b, FE_STEP_POOL_BWD, Rout, Cout);
    break;
  case TPU_FE_RELU:       /* relu_grad looks at the forward input */
    vpu(b, TPU_VPU_RELU_GRAD, Rout, Cout, T(FE_T_ACT, i), dy, dx, false);
    break;
  case TPU_FE_TANH: case TPU_FE_SIGMOID:   /* these look at the forward output */
    vpu(b, act_op(l->kind, true), Rout, Cout, T(FE_T_ACT, i + 1), dy, dx, false);
    break;
  case TPU_FE_DROPOUT:
    if (l->rate > 0) {
      vpu(b, TPU_VPU_MUL, Rout, Cout, dy, T(FE_T_MASK, i), dx, false);
      break;
    }
    /* fall through */   /* inactive: a view */
  default:   /* flatten */
    move(b, FE_STEP_VIEW, Rout, Cout);
    break;
  }
}

static void loss_steps(builder *b) {
  const fe_plan *p = b->p;
  const int n = p->model->nlayers, ncls = p->model->layers[n - 1].out.c;
  b->phase = FE_LOSS;
  b->layer = -1;
  fe_step *s = vpu(b, TPU_VPU_SOFTMAX_XENT, p->rows, ncls, T(FE_T_ACT, n), T(FE_T_LABELS, 0), T(FE_T_LOSS, 0), false);
  if (p->train) s->vpu.out2 = T(FE_T_DACT, n);
  s->vpu.alpha = (float)(1.0 / p->global_batch);
  vpu(b, TPU_VPU_ACCURACY, p->rows, ncls, T(FE_T_ACT, n), T(FE_T_LABELS, 0), T(FE_T_HITS, 0), true);
}

tpu_status fe_plan_create(const tpu_fe_model *m, int rows, int global_batch, tpu_precision prec, bool train,
                          fe_plan **out) {
  *out = NULL;
  fe_plan *p = tpu_calloc(1, sizeof *p);
  if (!p) return TPU_ERR_NOMEM;
  const int cap = m->nlayers * STEPS_PER_LAYER + STEPS_FIXED;
  p->steps = tpu_calloc((size_t)cap, sizeof *p->steps);
  if (!p->steps) { tpu_free(p); return TPU_ERR_NOMEM; }
  *p = (fe_plan){ .model = m, .rows = rows, .global_batch = global_batch, .prec = prec, .train = train,
                  .steps = p->steps };
  while (p->first_param < m->nlayers && !has_params(&m->layers[p->first_param])) p->first_param++;
  builder b = { .p = p, .cap = cap, .phase = FE_INFEED, .layer = -1 };
  move(&b, FE_STEP_INFEED, rows, (int64_t)tpu_fe_shape_size(m->input));
  b.phase = FE_FORWARD;
  for (int i = 0; i < m->nlayers; i++) forward_layer(&b, i);
  loss_steps(&b);
  if (train) {
    b.phase = FE_BACKWARD;
    for (int i = m->nlayers - 1; i >= p->first_param; i--) backward_layer(&b, i);
    b.layer = -1;
    b.phase = FE_ALLREDUCE;
    move(&b, FE_STEP_ALLREDUCE, (int64_t)m->nparams, 1);
    b.phase = FE_UPDATE;
    move(&b, FE_STEP_UPDATE, (int64_t)m->nparams, 1);
  }
  *out = p;
  return TPU_OK;
}

void fe_plan_destroy(fe_plan *p) {
  if (!p) return;
  tpu_free(p->steps);
  tpu_free(p);
}
