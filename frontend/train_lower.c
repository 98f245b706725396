/*
** train_lower.c -- the timing path: the step plan of a model's training
** step (or inference pass; fe_int.h, frontend/plan.c) lowered into one
** chip-engine program per core (tpu_fe_step_program), and the step timing
** on top of it (tpu_fe_time_step, tpu_fe_step_timer). Shapes only: the
** program is meant for TPU_FIDELITY_TIMING; values never enter the timing.
**
** Every core runs the same program on its shard of 'rows' samples: core
** 0's is built and the others share it (tpu_sim_program_share). The ops,
** tiles and buffers come from sim's lowering (sim.h, "The lowering": the
** tile budget, the one GEMM lowering, element-wise tile walks, sections,
** tensors in HBM); this file says what each plan step is made of. Before
** anything is built, the same lowering runs over the step in its counting
** mode (size_of) and a step the engine or the HBM cannot take is refused
** (check_size). lower_step() turns each plan step into ops, in the plan's
** order:
**
**   INFEED      the shard (and its labels) lands in HBM when the host-time
**               model says it is ready (one infeed entry per core)
**   GEMM        tiled on the MXU (sim's GEMM lowering); the steps the plan marks
**               'fused' after it form its epilogue on the result tile
**               before it goes back to HBM: bias_add and a directly
**               following relu/tanh/sigmoid (forward), db = col_sum of dY
**               (dW). Conv2d's GEMM reads the im2col matrix
**               [rows*OH*OW x KH*KW*C]: the DMA gathers each receptive
**               field, so the input is read once per tap and IM2COL costs
**               nothing of its own
**   VPU         unfused relu/tanh/sigmoid, their gradients (nin 2), dropout
**               'mul' by a mask made on chip (its generation, the plan's
**               DROPOUT_MASK step, is not modelled), element-wise over tiles
**   POOL        KH*KW-1 'max' (avgpool, global_avgpool: 'add', then 'scale') over
**               output-shaped tiles, one per window tap; POOL_BWD routes dY
**               with a select per input (relu_grad's cost), avgpool scales it
**   COL2IM      conv2d's dcols = dY.W^T summed back into dX by KH*KW
**               tap-wise 'add's
**   VIEW        nothing (flatten, inactive dropout, add's dY passed on:
**               the same bytes)
**   CONCAT      concatenate: each input's channels 'copy'd into the output
**   SPLIT       (and back, per input, for the gradient), element-wise tiles;
**               add and the sum of a tensor's several gradients are VPU
**               'add's (nin 2)
**   HEADS       multi_head_attention's heads split or merged
**   MERGE_HEADS (a 'copy' over the tiles); its batched GEMMs (scores,
**               context, per sample and head) each product on its own;
**   CAUSAL      the causal mask, an 'add' of a mask made on chip
**   GATHER      embedding: the rows gathered, a 'copy' over [rows*L x D];
**   SCATTER     its backward an 'add' of dY into the rows (nin 2)
**   TAKE, PUT   take and its backward: a 'copy' of one position
**   PAD, CROP   zero_padding and its gradient: a 'copy' over the output's
**               tiles (XLA would often fold the padding into the next
**               conv's im2col; this is the unfused cost)
**   loss        softmax_xent (loss and gradient) and accuracy per row tile
**               (sigmoid_bce and binary_accuracy: binary cross-entropy)
**   ALLREDUCE   ONE all-reduce of every f32 gradient at the end of the
**               backward pass (see below why one)
**   BN, BN_BWD  batch_normalization, unfused: one element-wise VPU pass over
**               the R x C tiles per op (lower_bn lists them: training
**               col_sum, bias_add, mul, col_sum, mul, bias_add, with rsqrt
**               and mul over the 1 x C vectors; inference mul, bias_add;
**               backward col_sum, bias_add, mul, mul, col_sum and for dX
**               mul, sub, bias_add, mul)
**   LN, LN_BWD  layer_normalization, unfused, in the same way over rows
**               (lower_bn's LN tables: row_sum for the statistics)
**   BN_MOVING   the moving mean and variance: scale, scale, add over 2 x C
**               after the update
**   depthwise   a depthwise GEMM (depthwise_conv2d, separable_conv2d's first
**               half; fe_int.h) as its blocks of the MXU's width: per block
**               of kg = cols/dm channels the dense product of their T*kg
**               im2col columns with their kg*dm outputs (dW, dX likewise),
**               so each array row holds dm useful weights of its cols and the
**               array is used at most dm/cols; the MACs counted are the
**               model's. DW_EXPAND / DW_COMPACT: a 'mul' against an on-chip
**               mask over each block's T*kg x kg*dm weights (the zeros put
**               in, the diagonal taken out). A grouped conv2d likewise, a
**               block holding kg = cols/(F/G) groups of T*C/G rows and F/G
**               columns each (at least one group: F/G >= cols fills the
**               array, and a block of one group needs no expansion pass)
**   UPDATE      sgd / momentum / adam on the VPU over the parameters as one
**               flat f32 vector, with their state, streamed through VMEM
**
** Sections. A step that starts a layer of a phase (or col2im, or a phase
** without layers) starts a section: its label names the ops in traces
** ("fwd 1 dense matmul", "bwd 0 conv2d dW dma", "all_reduce gradients")
** and its VMEM buffers live only within it.
**
** Memory. Every tensor (activations, parameters, gradients, optimizer
** state) lives in HBM, f32 or bf16 by the dtype policy, declared whole in
** the lowering's view group "hbm" (its bf16 twin for bf16 tensors; handles
** of the f32 group count parameters, gradients and state apart) (the labels in "labels": nothing writes those views, so when the
** program is run at the tile level they stay valid class indices, zeros);
** each op streams tiles into VMEM by DMA and its results back (sim.h: the
** tile budget, double buffering, operands kept in VMEM). The loss walks
** tiles of Q values, the optimizer tiles of 3Q (8 slots: param, grad, m,
** v, twice; only the row count varies, so 2 shapes each: 3/4 of VMEM).
** The three links the DMA order cannot give -- infeed before the first
** read of the shard, the last gradient write before the all-reduce, the
** all-reduce before the first optimizer read -- are explicit
** (tpu_sim_op.after).
**
** Why one all-reduce. The engine charges each collective the ring's hop
** latency 2(n-1)h: 9800 cycles on tpu-v2-8. There the built-in mlp's
** backward pass takes about 14000 cycles and its one all-reduce 28400;
** one bucket per dense layer (issued as each layer's gradient is done)
** would pay the latency three times on the core's one collective queue and
** end about 8000 cycles later by the same formula. XLA's all-reduce
** combiner makes the same choice for small models. Not modelled:
** overlapping the reduction with the backward pass (buckets), and the HBM
** traffic of the collective itself (the engine does not model it).
**
** The step compiler (compile.c, docs/COMPILER.md) changes what the table
** above says, each mechanism a chip switch: with compiler.fusion a run of
** element-wise steps (BN, BN_BWD, unfused VPU steps, views) is one kernel
** (lower_kernel: per tile its loads once, its members' VPU ops, its
** stores of what is read after it; BN_BWD in two passes), and a forward
** GEMM whose result a training BN reads reduces its statistics in the
** epilogue; with compiler.implicit_conv a convolution's A tiles move their
** share of the input's window and dX sums its taps in VMEM (COL2IM
** skipped); with compiler.memory_planning the activations are one arena of
** their liveness peak. Storage follows the model's dtype policy: a bf16
** tensor's tiles are in the bf16 view group (2 bytes a value). With all
** off and float32, the table above is the whole story.
**
** Not modelled: layout changes beyond free views (flatten, im2col's gather is charged as
** the bytes it reads), the RNG of dropout masks, exact col2im bytes for
** strided or 'valid' convolutions (the tap-wise sum is over dX-shaped tiles,
** exact for stride 1 'same'), padding of the flat optimizer vector to whole
** rows of lanes (at most lanes-1 values).
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_int.h"

/* The step lowering over sim's lowering: the plan being lowered and the
** handles its steps share. */
typedef struct lower {
  tpu_sim_lowering *L;
  const tpu_chip_config *chip;
  tpu_precision prec;
  const fe_plan *p;
  const fe_compiled *cc;       /* the compiler's decisions (compile.c) */
  int hbm, bf, labels;         /* the view groups of the step's f32 and bf16 activations and of its labels */
  int wt, gr, os;              /* "hbm" f32 again, its bytes counted as parameters, gradients, optimizer state */
  int grads;                   /* the gradients' tensor (the all-reduce's operand) */
  int step;                    /* the training step being lowered */
} lower;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool failed(const lower *w) { return tpu_sim_lower_status(w->L) != TPU_OK; }
static void vpu(lower *w, tpu_vpu_op fn, int x, int y, int z, int o0, int o1, int o2, const tpu_vpu_params *prm) {
  tpu_sim_lower_vpu(w->L, fn, (const int[3]){ x, y, z }, (const int[3]){ o0, o1, o2 }, prm);
}
/* A whole tensor "WHATi" of the step in HBM (declared once; 'cls' counts it). */
static int tensor(lower *w, const char *what, int i, tpu_sim_tensor_class cls, tpu_sim_dtype dt, int64_t r,
                  int64_t c) {
  char name[64];
  snprintf(name, sizeof name, "%s%d", what, i);
  return tpu_sim_lower_tensor(w->L, name, "hbm", cls, dt, r, c, NULL);
}
/* The view group a plan tensor's tiles are in: its dtype's. */
static int group(const lower *w, tpu_sim_dtype dt) { return dt == TPU_SIM_BF16 ? w->bf : w->hbm; }
static int view(const lower *w, fe_tensor t) {
  switch (t.kind) {
  case FE_T_W: case FE_T_B: case FE_T_W2: case FE_T_WX: case FE_T_PARAMS: return w->wt;
  case FE_T_DW: case FE_T_DB: case FE_T_DW2: case FE_T_DWX: case FE_T_GRADS: return w->gr;
  case FE_T_OPT: return w->os;
  default: return group(w, fe_tensor_dtype(w->p, t));
  }
}
static fe_tensor ft(fe_tensor_kind k, int layer) { return (fe_tensor){ k, layer, 0 }; }

/* {==================================================================
** The plan's steps, lowered one by one
** ================================================================== */
/* Whole tensors, for the HBM capacity check (the shard, activations,
** parameters, gradients, optimizer state), then the infeed's dequeue. */
static void lower_infeed(lower *w, const fe_plan *p) {
  const tpu_fe_model *m = p->model;
  const int n = m->nlayers, rows = p->rows, chip_cols = w->chip->mxu.cols;
  const tpu_sim_tensor_class A = TPU_SIM_T_ACTIVATION;
  const tpu_sim_dtype F = TPU_SIM_F32, mid = fe_tensor_dtype(p, ft(FE_T_MID, 0));
  int x0 = tensor(w, "x", 0, A, F, rows, (int64_t)tpu_fe_shape_size(m->input) + 1);   /* + the label */
  /* planned: one arena of the activations' peak by liveness (compile.c),
  ** the shard's part of it declared above */
  const bool plan = w->chip->compiler_memory_planning;
  const double arena = w->cc->act_peak_bytes - 4.0 * rows * (double)tpu_fe_shape_size(m->input);
  if (plan && arena > 0) {   /* past 2^31 values, rows of 4096 (< 16 KiB more): the engine's bound per dimension */
    const int64_t vals = ((int64_t)arena + 3) / 4, cols = vals < INT32_MAX ? 1 : 4096;
    tensor(w, "activations", 0, A, F, (vals + cols - 1) / cols, cols);
  }
  for (int i = 0; i < n; i++) {
    const tpu_fe_layer *l = &m->layers[i];
    if (!plan) tensor(w, "x", i + 1, A, fe_tensor_dtype(p, ft(FE_T_ACT, i + 1)), rows, (int64_t)tpu_fe_shape_size(l->out));
    if (!fe_dw_groups(l)) continue;
    /* and its block-diagonal weights (depthwise, separable, grouped conv2d) */
    const int64_t cm = l->kind == TPU_FE_CONV2D ? l->filters : (int64_t)l->in.c * l->depth_multiplier;
    const fe_gemm_step g = { .M = 1, .N = (int)cm, .K = l->kh * l->kw * l->in.c, .dw = fe_dw_groups(l) };
    int64_t M, N, K, wx = 0;
    for (int b = 0; fe_gemm_dw_block(&g, chip_cols, b, &M, &N, &K); b++) wx += N * K;
    tensor(w, "wx", i + 1, A, F, wx, 1);   /* a working tensor of the step, counted with the activations */
    if (plan) continue;
    if (l->kind == TPU_FE_SEPARABLE) tensor(w, "mid", i + 1, A, mid, rows, (int64_t)l->out.h * l->out.w * cm);
    if (l->kind == TPU_FE_SEPARABLE && p->train)
      tensor(w, "gmid", i + 1, A, mid, rows, (int64_t)l->out.h * l->out.w * cm);
  }
  for (int i = 0; i < n && !plan; i++)   /* attention's projections, heads and scores (and gradients) */
    for (int q = 0; m->layers[i].kind == TPU_FE_MHA && q < FE_ATT_NPARTS; q++) {
      const int64_t e = (int64_t)fe_att_elems(&m->layers[i], q);
      if (q == FE_ATT_PD && !(p->train && m->layers[i].rate > 0)) continue;
      tensor(w, "att", (i + 1) * FE_ATT_NPARTS + q, A, fe_tensor_dtype(p, ft(FE_T_ATT, i + 1)), rows, e);
      if (p->train) tensor(w, "gatt", (i + 1) * FE_ATT_NPARTS + q, A, fe_tensor_dtype(p, ft(FE_T_DATT, i)), rows, e);
    }
  w->grads = 0;
  if (p->train) {
    for (int i = 0; i < n && !plan; i++)
      tensor(w, "g", i + 1, A, fe_tensor_dtype(p, ft(FE_T_DACT, i + 1)), rows,
             (int64_t)tpu_fe_shape_size(m->layers[i].out));
    tensor(w, "params", 0, TPU_SIM_T_PARAMETER, F, (int64_t)m->nparams, 1);
    w->grads = tensor(w, "grads", 0, TPU_SIM_T_GRADIENT, F, (int64_t)m->nparams, 1);
    int state = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
    for (int k = 0; k < state; k++) tensor(w, "opt_state", k, TPU_SIM_T_OPTIMIZER, F, (int64_t)m->nparams, 1);
  } else {
    tensor(w, "params", 0, TPU_SIM_T_PARAMETER, F, (int64_t)m->nparams, 1);
  }
  /* a later step asks for its batch when the step before has ended (its
  ** last op: the optimizer's last store), as a training loop does */
  const int last = tpu_sim_lower_last_op(w->L);
  tpu_sim_op inf = { .kind = TPU_SIM_INFEED, .dst = tpu_sim_lower_buffer(w->L, x0),
                     .after = w->step > 0 ? last + 1 : 0 };
  int ii = tpu_sim_lower_op(w->L, &inf, "dequeue");
  if (ii >= 0) tpu_sim_lower_dma_after(w->L, ii);
}

/* A GEMM step with its fused followers as the epilogue: bias_add and an
** activation on the result tile (forward), db = col_sum of dY (dW). A
** depthwise GEMM runs as its blocks of the MXU's width (fe_gemm_dw_block),
** the only products with a non-zero weight; each counts its channels'
** multiply-adds as useful, not the zeros the array multiplies. */
static tpu_sim_lower_gemm gemm_of(const lower *w, const fe_plan *p, int k) {
  const fe_gemm_step *s = &p->steps[k].gemm;
  const fe_step_compiled *c = &w->cc->step[k];
  /* an im2col matrix is its source's: the input's (forward, dW), or dX's
  ** dcols, a gradient of the input */
  const fe_tensor src = { FE_T_ACT, p->model->layers[p->steps[k].layer].inputs[0] + 1, 0 },
                  dsrc = { FE_T_DACT, src.layer, 0 };
  tpu_sim_lower_gemm g = { .what = s->what, .M = s->M, .N = s->N, .K = s->K, .ta = s->ta, .tb = s->tb,
                           .a = view(w, s->a.kind == FE_T_COLS ? src : s->a), .b = view(w, s->b),
                           .c = view(w, s->c.kind == FE_T_COLS ? dsrc : s->c), .prec = w->prec,
                           .stats = c->stats ? w->hbm : 0, .a_share = c->a_share,
                           .c_window = (int64_t)ceil(c->c_window_pixels * p->steps[k].win.c) };
  for (int j = k + 1; j < p->nsteps && p->steps[j].fused && p->steps[j].kind == FE_STEP_VPU; j++) {
    const tpu_vpu_op op = p->steps[j].vpu.op;
    if (op == TPU_VPU_BIAS_ADD) g.bias = w->wt;
    else if (op == TPU_VPU_COL_SUM) g.db = w->gr;
    else g.act = op, g.has_act = true;
  }
  return g;
}
static void lower_gemm(lower *w, const fe_plan *p, int k) {
  tpu_sim_lower_gemm g = gemm_of(w, p, k);
  const fe_gemm_step *s = &p->steps[k].gemm;
  if (!s->dw) {   /* a batch of products (attention's): each on its own, in order */
    for (int q = 0; q < (s->batch > 1 ? s->batch : 1) && !failed(w); q++) tpu_sim_lower_gemm_add(w->L, &g);
    return;
  }
  int64_t M, N, K, kg;
  for (int b = 0; !failed(w) && (kg = fe_gemm_dw_block(s, w->chip->mxu.cols, b, &M, &N, &K)) > 0; b++) {
    g.M = M;
    g.N = N;
    g.K = K;
    g.useful = (uint64_t)M * (uint64_t)N * (uint64_t)K / (uint64_t)kg;
    g.c_window = (int64_t)ceil(w->cc->step[k].c_window_pixels * (double)(kg * s->dwc));   /* the block's channels */
    tpu_sim_lower_gemm_add(w->L, &g);
  }
}

/* DW_EXPAND / DW_COMPACT: the kernel to the block-diagonal weights of the
** depthwise GEMM's blocks, or their diagonal back out of its gradient: a
** select against an on-chip mask (XLA's filter expansion), one element-wise
** pass over each block's T*kg x kg*dm weights through VMEM. A block of one
** group (a grouped conv2d's with filters/G >= the MXU's width) has no zeros:
** it is a strided slice of the kernel (of its gradient), which the GEMM's
** DMA reads (writes) as it is, with no pass. */
static void lower_dw_expand(lower *w, const fe_step *s) {
  const fe_gemm_step g = { .M = 1, .N = (int)s->cols, .K = (int)s->rows, .dw = s->coff };   /* a forward's */
  int64_t M, N, K, kg;
  for (int b = 0; !failed(w) && (kg = fe_gemm_dw_block(&g, w->chip->mxu.cols, b, &M, &N, &K)) > 0; b++)
    if (kg > 1)
      tpu_sim_lower_ewise_add(w->L, s->kind == FE_STEP_DW_EXPAND ? w->wt : w->gr,
                              &(tpu_sim_lower_ewise){ .fn = TPU_VPU_MUL, .nin = 1, .mask = true }, K, N);
}

/* softmax_xent (loss, and the gradient in training) and accuracy, per row
** tile of the logits (Q values a tile); sigmoid_bce and binary_accuracy
** likewise on one logit a row; mse on one value a row against its target,
** which comes in as the labels do. acc: the accuracy op after it, or -1
** (a further output of a model with several). */
static void lower_loss(lower *w, const fe_plan *p, const fe_vpu_step *v, int acc_op) {
  tpu_sim_lowering *L = w->L;
  const int64_t rows = v->rows, ncls = v->cols, Q = tpu_sim_lower_tile_values(L);
  const int n = v->x.layer;   /* the output's tensor: its layer is n - 1 */
  if (ncls > Q) {
    char msg[256];
    snprintf(msg, sizeof msg, "layer %d (%s): a row of %lld logits does not fit one VMEM tile of %lld values "
             "(%lld bytes of VMEM)", n - 1, tpu_fe_layer_kind_name(p->model->layers[n - 1].kind), (long long)ncls,
             (long long)Q, (long long)w->chip->vmem_capacity_kib * 1024);
    tpu_sim_lower_fail(L, TPU_ERR_CONFIG, msg);
    return;
  }
  tpu_vpu_params xent = tpu_vpu_params_default();
  xent.alpha = v->alpha;
  const int64_t rt = tpu_sim_lower_extent(rows, Q / ncls);
  int slot = 0;
  for (int64_t r0 = 0; r0 < rows && !failed(w); r0 += rt, slot ^= 1) {
    const int64_t ri = min64(rt, rows - r0);
    int x = tpu_sim_lower_load(L, w->hbm, TPU_SIM_R_X, slot, r0, 0, ri, ncls, "dma");
    int lab = tpu_sim_lower_load(L, w->labels, TPU_SIM_R_LAB, slot, r0, 0, ri, 1, "labels dma");
    tpu_sim_lower_flush(L);
    int loss = tpu_sim_lower_vmem(L, TPU_SIM_R_LOSS, slot, ri, 1);
    int acc = acc_op >= 0 ? tpu_sim_lower_vmem(L, TPU_SIM_R_ACC, slot, 1, 1) : 0;
    int grad = p->train ? tpu_sim_lower_vmem(L, TPU_SIM_R_O, slot, ri, ncls) : 0;
    vpu(w, v->op, x, lab, 0, loss, grad, 0, &xent);
    if (acc_op >= 0) vpu(w, (tpu_vpu_op)acc_op, x, lab, 0, acc, 0, 0, NULL);
    if (p->train) tpu_sim_lower_defer(L, grad, w->hbm, r0, 0, ri, ncls, "dma");
    tpu_sim_lower_defer(L, loss, w->hbm, r0, 0, ri, 1, "loss dma");
    if (acc_op >= 0) tpu_sim_lower_defer(L, acc, w->hbm, 0, 0, 1, 1, "accuracy dma");
  }
  tpu_sim_lower_flush(L);
}

/* One all-reduce of every gradient, once the last one is in HBM. */
static void lower_allreduce(lower *w) {
  tpu_sim_op ar = { .kind = TPU_SIM_COLLECTIVE, .coll = TPU_SIM_ALL_REDUCE,
                    .src = tpu_sim_lower_buffer(w->L, w->grads), .dst = tpu_sim_lower_buffer(w->L, w->grads),
                    .after = tpu_sim_lower_last_dma(w->L) + 1 };
  int ai = tpu_sim_lower_op(w->L, &ar, "gradients");
  if (ai >= 0) tpu_sim_lower_dma_after(w->L, ai);
}

/* The optimizer over the flat parameter vector, 'lanes' wide. */
static void lower_update(lower *w, const tpu_fe_model *m) {
  tpu_sim_lowering *L = w->L;
  const int64_t Qo = 3 * tpu_sim_lower_tile_values(L);   /* 8 slots, 2 shapes each (see the top of this file) */
  const int64_t ct = min64(w->chip->vpu.lanes, Qo);
  const int64_t totrows = ((int64_t)m->nparams + ct - 1) / ct, rt = tpu_sim_lower_extent(totrows, Qo / ct);
  const int state = m->opt.kind == TPU_FE_ADAM ? 2 : m->opt.kind == TPU_FE_MOMENTUM ? 1 : 0;
  const tpu_vpu_op fn = m->opt.kind == TPU_FE_ADAM ? TPU_VPU_ADAM : m->opt.kind == TPU_FE_MOMENTUM ? TPU_VPU_MOMENTUM
                                                                                       : TPU_VPU_SGD;
  tpu_vpu_params op = tpu_vpu_params_default();
  op.lr = (float)m->opt.lr;
  op.momentum = (float)m->opt.momentum;
  op.beta1 = (float)m->opt.beta1;
  op.beta2 = (float)m->opt.beta2;
  op.eps = (float)m->opt.eps;
  op.step = 1;
  int slot = 0;
  for (int64_t r0 = 0; r0 < totrows && !failed(w); r0 += rt, slot ^= 1) {
    const int64_t ri = min64(rt, totrows - r0);
    int pp = tpu_sim_lower_load(L, w->wt, TPU_SIM_R_P, slot, r0, 0, ri, ct, "params dma");
    int gg = tpu_sim_lower_load(L, w->gr, TPU_SIM_R_G, slot, r0, 0, ri, ct, "grads dma");
    int mm = state >= 1 ? tpu_sim_lower_load(L, w->os, TPU_SIM_R_M, slot, r0, 0, ri, ct, "state dma") : 0;
    int vv = state >= 2 ? tpu_sim_lower_load(L, w->os, TPU_SIM_R_V, slot, r0, 0, ri, ct, "state dma") : 0;
    tpu_sim_lower_flush(L);
    vpu(w, fn, gg, 0, 0, pp, mm, vv, &op);
    tpu_sim_lower_defer(L, pp, w->wt, r0, 0, ri, ct, "params dma");
    if (mm) tpu_sim_lower_defer(L, mm, w->os, r0, 0, ri, ct, "state dma");
    if (vv) tpu_sim_lower_defer(L, vv, w->os, r0, 0, ri, ct, "state dma");
  }
  tpu_sim_lower_flush(L);
}

/* Pool backward: for each output tile, dY once, then per tap: maxpool a
** select against the forward input's tap (relu_grad's cost), avgpool the
** scaled dY; each result goes to its tap of dX. */
static void lower_pool_bwd(lower *w, int hbm, bool maxpool, int taps, int64_t R, int64_t C,
                           const tpu_vpu_params *scale) {
  tpu_sim_lowering *L = w->L;
  int slot = 0;
  for (tpu_sim_lower_walk t = tpu_sim_lower_walk_of(L, R, C); tpu_sim_lower_walk_next(L, &t);) {
    const int64_t ri = t.ri, ci = t.ci;
    int dy = tpu_sim_lower_load(L, hbm, TPU_SIM_R_Y, t.n & 1, t.r0, t.c0, ri, ci, "dma");
    tpu_sim_lower_flush(L);
    if (!maxpool) {
      vpu(w, TPU_VPU_SCALE, dy, 0, 0, dy, 0, 0, scale);
      for (int j = 0; j < taps; j++) tpu_sim_lower_store(L, dy, hbm, t.r0, t.c0, ri, ci, "dma");
      continue;
    }
    for (int j = 0; j < taps; j++, slot ^= 1) {
      int x = tpu_sim_lower_load(L, hbm, TPU_SIM_R_X, slot, t.r0, t.c0, ri, ci, "dma");
      tpu_sim_lower_flush(L);
      int o = tpu_sim_lower_vmem(L, TPU_SIM_R_O, slot, ri, ci);
      vpu(w, TPU_VPU_RELU_GRAD, x, dy, 0, o, 0, 0, NULL);
      tpu_sim_lower_defer(L, o, hbm, t.r0, t.c0, ri, ci, "dma");
    }
  }
  tpu_sim_lower_flush(L);
}

/* Pools: P*P-1 'max' (avgpool: 'add', then 'scale') forward; backward, a
** select per tap (maxpool) or the scaled dY to every tap (avgpool). */
static void lower_pool(lower *w, const fe_step *s) {
  const int taps = s->win.kh * s->win.kw;
  const bool max = s->pool == TPU_FE_MAXPOOL;
  tpu_vpu_params sc = tpu_vpu_params_default();
  sc.alpha = (float)(1.0 / taps);
  if (s->kind == FE_STEP_POOL)
    tpu_sim_lower_fold_add(w->L, view(w, s->out), max ? TPU_VPU_MAX : TPU_VPU_ADD, taps, s->rows, s->cols,
                           max ? NULL : &sc);
  else
    lower_pool_bwd(w, view(w, s->out), max, taps, s->rows, s->cols, &sc);
}

/* batch_normalization, unfused: each VPU op one pass over the R x C tiles
** (C: over the 1 x C per-channel vectors) through VMEM. The per-channel
** operand is on chip (bias_add's a 1 x ci vector, mul's broadcast to the
** tile); col_sum writes one 1 x ci row per tile. */
enum { BN_C = 1, BN_ONCHIP = 2, BN_NIN2 = 4, BN_REDUCE = 8, BN_DX = 16, BN_VEC = 32 | BN_ONCHIP };
typedef struct bn_pass { tpu_vpu_op fn; int flags; } bn_pass;   /* a table ends with END */
#define END TPU_VPU_OP_COUNT
static const bn_pass BN_TRAIN[] = {   /* mean, x - mean, its square, variance, 1/sqrt(var+eps), scale, shift */
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_BIAS_ADD, BN_VEC }, { TPU_VPU_MUL, BN_ONCHIP },
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_RSQRT, BN_C }, { TPU_VPU_MUL, BN_C | BN_ONCHIP },
  { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC }, { END, 0 } };
static const bn_pass BN_INFER[] = {   /* gamma/sqrt(moving var+eps), the shift, then scale and shift */
  { TPU_VPU_RSQRT, BN_C }, { TPU_VPU_MUL, BN_C | BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_C | BN_VEC },
  { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC }, { END, 0 } };
static const bn_pass BN_BWD[] = {     /* dbeta, xhat, dY.xhat, dgamma, then dX */
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_BIAS_ADD, BN_VEC }, { TPU_VPU_MUL, BN_ONCHIP },
  { TPU_VPU_MUL, BN_NIN2 }, { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP },
  { TPU_VPU_SUB, BN_DX | BN_NIN2 }, { TPU_VPU_BIAS_ADD, BN_DX | BN_VEC }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP },
  { END, 0 } };
static const bn_pass BN_MOVE[] = {    /* moving * momentum + batch * (1 - momentum) */
  { TPU_VPU_SCALE, 0 }, { TPU_VPU_SCALE, 0 }, { TPU_VPU_ADD, BN_NIN2 }, { END, 0 } };

/* layer_normalization: per row (position), over its C channels. Forward
** row_sum (the mean), sub of it, mul (the square), row_sum (the variance),
** rsqrt over the R x 1 column, mul by it, then gamma (mul) and beta
** (bias_add) as 1 x C vectors on chip; backward: xhat again (row_sum, sub,
** mul, row_sum, rsqrt, mul), dbeta and dgamma (col_sum, mul, col_sum) and
** for dX g.dY, its two row sums and mul, sub, sub, mul. Each op one pass
** over R x C tiles through VMEM, a row sum storing one column per tile. */
enum { LN_ROWS1 = 128 };   /* a pass over the R x 1 column of per-row values */
static const bn_pass LN_FWD[] = {
  { TPU_VPU_ROW_SUM, 0 }, { TPU_VPU_SUB, BN_NIN2 }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_ROW_SUM, 0 },
  { TPU_VPU_RSQRT, LN_ROWS1 }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC },
  { END, 0 } };
static const bn_pass LN_BWDP[] = {
  { TPU_VPU_ROW_SUM, 0 }, { TPU_VPU_SUB, BN_NIN2 }, { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_ROW_SUM, 0 },
  { TPU_VPU_RSQRT, LN_ROWS1 }, { TPU_VPU_MUL, BN_ONCHIP },
  { TPU_VPU_COL_SUM, BN_REDUCE }, { TPU_VPU_MUL, BN_NIN2 }, { TPU_VPU_COL_SUM, BN_REDUCE },
  { TPU_VPU_MUL, BN_DX | BN_ONCHIP }, { TPU_VPU_ROW_SUM, BN_DX }, { TPU_VPU_MUL, BN_DX | BN_NIN2 },
  { TPU_VPU_ROW_SUM, BN_DX }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP }, { TPU_VPU_SUB, BN_DX | BN_NIN2 },
  { TPU_VPU_SUB, BN_DX | BN_NIN2 }, { TPU_VPU_MUL, BN_DX | BN_ONCHIP }, { END, 0 } };

/* rescaling, normalization: a per-channel scale and shift (backward: the
** scale) on chip; multiply by a gate: mul by each sample's 1 x C row on
** chip; the gate's gradient: dY times the map, summed over the pixels. */
static const bn_pass AFFINE_FWD[] = { { TPU_VPU_MUL, BN_ONCHIP }, { TPU_VPU_BIAS_ADD, BN_VEC }, { END, 0 } };
static const bn_pass AFFINE_BWD[] = { { TPU_VPU_MUL, BN_ONCHIP }, { END, 0 } };
static const bn_pass GATE_GRAD[] = { { TPU_VPU_MUL, BN_NIN2 }, { TPU_VPU_COL_SUM, BN_REDUCE }, { END, 0 } };

static const bn_pass *passes_of(const fe_plan *p, const fe_step *s) {
  switch (s->kind) {
  case FE_STEP_BN_MOVING: return BN_MOVE;
  case FE_STEP_BN_BWD: return BN_BWD;
  case FE_STEP_LN: return LN_FWD;
  case FE_STEP_LN_BWD: return LN_BWDP;
  case FE_STEP_AFFINE: return s->coff ? AFFINE_BWD : AFFINE_FWD;
  case FE_STEP_GATE: return AFFINE_BWD;
  case FE_STEP_GATE_GRAD: return GATE_GRAD;
  default: return p->train ? BN_TRAIN : BN_INFER;
  }
}

static void lower_bn(lower *w, const fe_plan *p, const fe_step *s) {
  const bn_pass *t = passes_of(p, s);
  const bool dx = s->out.kind != FE_T_NONE;
  const int hbm = s->kind == FE_STEP_BN_MOVING ? w->wt : view(w, s->in);
  for (; t->fn != END; t++)
    if (dx || !(t->flags & BN_DX))
      tpu_sim_lower_ewise_add(w->L, t->flags & BN_C ? w->wt : hbm, &(tpu_sim_lower_ewise){ .fn = t->fn, .nin = t->flags & BN_NIN2 ? 2 : 1,
                                                                    .mask = t->flags & BN_ONCHIP,
                                                                    .yvec = (t->flags & BN_VEC) == BN_VEC,
                                                                    .reduce = t->flags & BN_REDUCE,
                                                                    .reduce_rows = t->fn == TPU_VPU_ROW_SUM },
                              t->flags & BN_C ? 1 : s->rows, t->flags & LN_ROWS1 ? 1 : s->cols);
}

/* {==================================================================
** A fused element-wise kernel (compile.c): per tile, its loads once, its
** members' VPU ops on VMEM, its stores of what is read outside it
** ================================================================== */
typedef struct ktile {
  tpu_sim_lowering *L;
  int in[FE_KERNEL_MAX_IO];    /* the tile's loads */
  int vec, mask, tmp, part;    /* on-chip per-channel operands, a scratch tile and a partial sum row */
  int sums[2];                 /* the reduction's running column sums */
  int64_t ri;
  bool first_tile;
} ktile;

static void op2(ktile *t, tpu_vpu_op fn, int x, int y, int o) {
  tpu_sim_lower_vpu(t->L, fn, (const int[3]){ x, y, 0 }, (const int[3]){ o, 0, 0 }, NULL);
}
/* A column sum of tile x added into running sum i (a one-row tile is its own). */
static void colsum_into(ktile *t, int x, int i) {
  const tpu_vpu_op sum = t->ri > 1 ? TPU_VPU_COL_SUM : TPU_VPU_COPY;
  if (t->first_tile) { op2(t, sum, x, 0, t->sums[i]); return; }
  op2(t, sum, x, 0, t->part);
  op2(t, TPU_VPU_ADD, t->sums[i], t->part, t->sums[i]);
}

/* Member s's ops on the tile: cur its chain input, y its other input (0:
** none loaded), into dst; 'reduce' the reduction part of the member that
** has one, else its element-wise part. */
static void member_ops(ktile *t, const fe_step *s, int cur, int y, int dst, bool reduce) {
  if (s->kind == FE_STEP_VPU) {
    const bool two = s->vpu.y.kind != FE_T_NONE || s->vpu.op == TPU_VPU_RELU_GRAD ||
                     s->vpu.op == TPU_VPU_RELU_CAP_GRAD || s->vpu.op == TPU_VPU_TANH_GRAD ||
                     s->vpu.op == TPU_VPU_SIGMOID_GRAD;
    const int second = !two ? 0 : y ? y : s->vpu.y.kind == FE_T_MASK ? t->mask : cur;
    op2(t, s->vpu.op, cur, second, dst);
  } else if (s->kind == FE_STEP_BN && reduce) {             /* the batch's mean and variance */
    colsum_into(t, cur, 0);
    op2(t, TPU_VPU_MUL, cur, cur, t->tmp);
    colsum_into(t, t->tmp, 1);
  } else if (s->kind == FE_STEP_BN) {                       /* scale and shift */
    op2(t, TPU_VPU_MUL, cur, t->mask, dst);
    op2(t, TPU_VPU_BIAS_ADD, dst, t->vec, dst);
  } else if (s->kind == FE_STEP_BN_BWD) {                   /* xhat from x, then dbeta, dgamma or dX */
    const int x = y ? y : cur;
    op2(t, TPU_VPU_BIAS_ADD, x, t->vec, t->tmp);
    op2(t, TPU_VPU_MUL, t->tmp, t->mask, t->tmp);
    if (reduce) {
      op2(t, TPU_VPU_MUL, cur, t->tmp, t->tmp);
      colsum_into(t, cur, 0);
      colsum_into(t, t->tmp, 1);
    } else if (s->out.kind) {
      op2(t, TPU_VPU_MUL, t->tmp, t->mask, t->tmp);
      op2(t, TPU_VPU_SUB, cur, t->tmp, dst);
      op2(t, TPU_VPU_BIAS_ADD, dst, t->vec, dst);
      op2(t, TPU_VPU_MUL, dst, t->mask, dst);
    }
  }
}

/* One tile of pass ps (pass 0: up to the reducing member g->red). */
static void kernel_tile(lower *w, ktile *t, const fe_kernel *g, const fe_kernel_pass *ps, bool reduction,
                        const tpu_sim_lower_walk *wk) {
  const fe_plan *p = w->p;
  tpu_sim_lowering *L = w->L;
  const int par = wk->n & 1;
  for (int i = 0; i < ps->nload; i++)
    t->in[i] = tpu_sim_lower_load(L, group(w, ps->load_dt[i]), TPU_SIM_R_X, 2 * i + par, wk->r0, wk->c0, wk->ri,
                                  wk->ci, "dma");
  tpu_sim_lower_flush(L);
  t->ri = wk->ri;
  t->vec = tpu_sim_lower_vmem(L, TPU_SIM_R_MASK, 0, 1, wk->ci);
  t->mask = tpu_sim_lower_vmem(L, TPU_SIM_R_MASK, 1, wk->ri, wk->ci);
  t->tmp = tpu_sim_lower_vmem(L, TPU_SIM_R_Y, par, wk->ri, wk->ci);
  t->part = tpu_sim_lower_vmem(L, TPU_SIM_R_PART, 0, 1, wk->ci);
  t->sums[0] = tpu_sim_lower_vmem(L, TPU_SIM_R_ST, 0, 1, wk->ci);
  t->sums[1] = tpu_sim_lower_vmem(L, TPU_SIM_R_ST, 1, 1, wk->ci);
  t->first_tile = wk->r0 == 0;
  int cur = ps->chain >= 0 ? t->in[ps->chain] : 0, oj = 0;
  for (int k = ps->from; k <= ps->to && !failed(w); k++) {
    const fe_step *s = &p->steps[k];
    if (s->kind == FE_STEP_VIEW || s->kind == FE_STEP_DROPOUT_MASK) continue;
    const int y = ps->other[k - ps->from] >= 0 ? t->in[ps->other[k - ps->from]] : 0;
    if (reduction && k == g->red) { member_ops(t, s, cur, y, 0, true); break; }
    const bool stored = oj < ps->nstore && ps->store_step[oj] == k;
    const int dst = stored ? tpu_sim_lower_vmem(L, TPU_SIM_R_O, 2 * oj + par, wk->ri, wk->ci) : cur;
    member_ops(t, s, cur, y, dst, false);
    cur = dst;
    for (; oj < ps->nstore && ps->store_step[oj] == k; oj++)
      tpu_sim_lower_defer(L, dst, group(w, ps->store_dt[oj]), wk->r0, wk->c0, wk->ri, wk->ci, "dma");
  }
}

static void lower_kernel(lower *w, const fe_plan *p, const fe_kernel *g) {
  ktile t = { .L = w->L };
  for (int k = g->first; k <= g->last; k++)   /* a batch norm's per-channel factors, once */
    if (p->steps[k].kind == FE_STEP_BN || p->steps[k].kind == FE_STEP_BN_BWD) {
      const int v = tpu_sim_lower_vmem(w->L, TPU_SIM_R_ST, 2, 1, g->cols);
      op2(&t, TPU_VPU_RSQRT, v, 0, v);
      op2(&t, TPU_VPU_MUL, v, v, v);
    }
  for (int pass = g->red >= 0 ? 0 : 1; pass <= 1; pass++) {
    for (tpu_sim_lower_walk wk = tpu_sim_lower_walk_of(w->L, g->rows, g->cols); tpu_sim_lower_walk_next(w->L, &wk);)
      kernel_tile(w, &t, g, &g->pass[pass], pass == 0, &wk);
    tpu_sim_lower_flush(w->L);
  }
}
/* }================================================================== */

/* Starts a section where a step begins a new part of the program: a layer
** of a phase (fused steps stay in their GEMM's or the loss's), col2im, or a
** phase without layers. The labels name the trace's intervals. */
static void step_section(lower *w, const fe_plan *p, const fe_step *s, const fe_step *prev) {
  if (s->fused || (prev && prev->phase == s->phase && prev->layer == s->layer && s->kind != FE_STEP_COL2IM)) return;
  static const char *const LABEL[] = { "infeed", "fwd", "softmax_xent", "bwd", "all_reduce", "optimizer" };
  char label[64];   /* "fwd 1 conv2d", or "bwd 1 conv2d col2im" (depthwise_conv2d, separable_conv2d likewise) */
  if (s->layer < 0)   /* the loss's section: its op's name (softmax_xent, sigmoid_bce) */
    snprintf(label, sizeof label, "%s", s->phase == FE_LOSS && s->kind == FE_STEP_VPU ? tpu_vpu_op_name(s->vpu.op)
                                                                                       : LABEL[s->phase]);
  else snprintf(label, sizeof label, "%s %d %s%s", LABEL[s->phase], s->layer,
                tpu_fe_layer_kind_name(p->model->layers[s->layer].kind), s->kind == FE_STEP_COL2IM ? " col2im" : "");
  tpu_sim_lower_section(w->L, label);
}

/* Step k of the plan into engine ops. Views, im2col (the GEMM's DMAs
** gather the receptive fields) and the dropout mask cost nothing here. */
static void lower_step(lower *w, const fe_plan *p, int k) {
  const fe_step *s = &p->steps[k];
  const fe_step_compiled *c = &w->cc->step[k];
  if (c->skip || (c->kernel >= 0 && w->cc->kernels[c->kernel].first != k)) return;
  step_section(w, p, s, k > 0 ? &p->steps[k - 1] : NULL);
  if (c->kernel >= 0) { lower_kernel(w, p, &w->cc->kernels[c->kernel]); return; }
  switch (s->kind) {
  case FE_STEP_INFEED: lower_infeed(w, p); break;
  case FE_STEP_GEMM: lower_gemm(w, p, k); break;
  case FE_STEP_VPU: {
    const bool vec = s->vpu.op == TPU_VPU_BIAS_ADD;   /* its 1 x C operand (position_embedding's) on chip */
    const fe_step *nx = k + 1 < p->nsteps ? &p->steps[k + 1] : NULL;   /* the loss's accuracy, if any */
    const bool acc = nx && nx->kind == FE_STEP_VPU && (nx->vpu.op == TPU_VPU_ACCURACY || nx->vpu.op == TPU_VPU_BINARY_ACCURACY);
    if (s->vpu.op == TPU_VPU_SOFTMAX_XENT || s->vpu.op == TPU_VPU_SIGMOID_BCE || s->vpu.op == TPU_VPU_MSE)
      lower_loss(w, p, &s->vpu, acc ? (int)nx->vpu.op : -1);
    else if (!s->fused)
      tpu_sim_lower_ewise_add(w->L, view(w, s->vpu.out), &(tpu_sim_lower_ewise){ .fn = s->vpu.op,
                              .nin = s->vpu.y.kind && s->vpu.y.kind != FE_T_MASK && !vec ? 2 : 1,
                              .mask = s->vpu.y.kind == FE_T_MASK || vec, .yvec = vec,
                              .reduce = s->vpu.op == TPU_VPU_COL_SUM },
                              s->vpu.rows, s->vpu.cols);
    break;
  }
  case FE_STEP_POOL: case FE_STEP_POOL_BWD: lower_pool(w, s); break;
  case FE_STEP_COL2IM:   /* dcols summed back into dX by KH*KW tap-wise adds */
    tpu_sim_lower_fold_add(w->L, view(w, s->out), TPU_VPU_ADD, s->win.kh * s->win.kw, s->rows, s->cols, NULL);
    break;
  case FE_STEP_CAUSAL:   /* the mask made on chip (as dropout's), added */
    tpu_sim_lower_ewise_add(w->L, view(w, s->out), &(tpu_sim_lower_ewise){ .fn = TPU_VPU_ADD, .nin = 1, .mask = true },
                            s->rows, s->cols);
    break;
  case FE_STEP_SCATTER:   /* each position's dY added into its row of the table's gradient */
    tpu_sim_lower_ewise_add(w->L, view(w, s->in), &(tpu_sim_lower_ewise){ .fn = TPU_VPU_ADD, .nin = 2 }, s->rows,
                            s->cols);
    break;
  case FE_STEP_GATHER:   /* the table's rows gathered by the DMAs: a copy */
  case FE_STEP_TAKE: case FE_STEP_PUT:   /* one position of each sample, or back */
  case FE_STEP_CLS: case FE_STEP_CLS_BWD:   /* the class token before the positions, or dX after it */
  case FE_STEP_PERMUTE:   /* a transpose through VMEM, charged as a copy */
  case FE_STEP_HEADS: case FE_STEP_MERGE_HEADS:   /* attention's heads split or merged: a copy */
  case FE_STEP_CONCAT: case FE_STEP_SPLIT:   /* one input's channels, copied through VMEM */
  case FE_STEP_PAD: case FE_STEP_CROP:       /* the padded (cropped) tensor, written whole */
    tpu_sim_lower_ewise_add(w->L, view(w, s->out), &(tpu_sim_lower_ewise){ .fn = TPU_VPU_COPY, .nin = 1 }, s->rows,
                            s->cols);
    break;
  case FE_STEP_ALLREDUCE: lower_allreduce(w); break;
  case FE_STEP_UPDATE: lower_update(w, p->model); break;
  case FE_STEP_BN: case FE_STEP_BN_BWD: case FE_STEP_BN_MOVING: case FE_STEP_LN: case FE_STEP_LN_BWD:
  case FE_STEP_AFFINE: case FE_STEP_GATE: case FE_STEP_GATE_GRAD:
    lower_bn(w, p, s);
    break;
  case FE_STEP_DW_EXPAND: case FE_STEP_DW_COMPACT: lower_dw_expand(w, s); break;
  default: break;
  }
}

/* What lowering plan step k made (of the first training step): ops
** [op0, op1) of core 0, the bytes its DMAs move, its multiply-adds, its
** fused kernel (-1). */
typedef struct fe_mark { int op0, op1, kernel, part; double bytes, macs; } fe_mark;   /* part: fe_step_att_part */

static void lower_marked(lower *w, const fe_plan *plan, int k, fe_mark *mark) {
  tpu_sim_lower_counts a, b;
  if (mark) tpu_sim_lower_counts_of(w->L, &a);
  const int op0 = tpu_sim_lower_last_op(w->L) + 1;
  lower_step(w, plan, k);
  if (!mark) return;
  tpu_sim_lower_counts_of(w->L, &b);
  const int kern = w->cc->step[k].kernel;
  *mark = (fe_mark){ op0, tpu_sim_lower_last_op(w->L) + 1, kern, fe_step_att_part(plan, k), b.hbm_bytes - a.hbm_bytes,
                     b.macs - a.macs };
}

/* Lowers 'nsteps' steps of plan onto core 0 of prog (NULL: counts them),
** step s's... into *counts, and each plan step's part of the first into
** marks[k] (NULL: not wanted). TPU_OK, or the lowering's failure (err). */
static tpu_status lower_plan(const fe_plan *plan, const tpu_chip_config *chip, tpu_precision prec,
                             tpu_sim_program *prog, int nsteps, tpu_sim_lower_counts *counts, fe_mark *marks,
                             char *err, size_t errcap) {
  lower w = { .chip = chip, .prec = prec, .p = plan };
  fe_compiled *cc = NULL;
  tpu_status st = fe_compile(plan, chip, &cc);
  if (st) { snprintf(err, errcap, "out of memory"); return st; }
  w.cc = cc;
  if ((st = tpu_sim_lower_create(chip, prog, 0, &w.L, err, errcap)) != TPU_OK) { fe_compiled_destroy(cc); return st; }
  const tpu_sim_dtype F = TPU_SIM_F32;
  w.hbm = tpu_sim_lower_views(w.L, "hbm", F, TPU_SIM_T_ACTIVATION);
  w.bf = tpu_sim_lower_views(w.L, "hbm", TPU_SIM_BF16, TPU_SIM_T_ACTIVATION);
  w.wt = tpu_sim_lower_views(w.L, "hbm", F, TPU_SIM_T_PARAMETER);
  w.gr = tpu_sim_lower_views(w.L, "hbm", F, TPU_SIM_T_GRADIENT);
  w.os = tpu_sim_lower_views(w.L, "hbm", F, TPU_SIM_T_OPTIMIZER);
  w.labels = tpu_sim_lower_views(w.L, "labels", F, TPU_SIM_T_ACTIVATION);
  for (w.step = 0; w.step < nsteps && !failed(&w); w.step++) {
    tpu_sim_lower_set_step(w.L, w.step);
    for (int k = 0; k < plan->nsteps && !failed(&w); k++) lower_marked(&w, plan, k, marks && !w.step ? &marks[k] : NULL);
  }
  if ((st = tpu_sim_lower_status(w.L)) != TPU_OK) snprintf(err, errcap, "%s", tpu_sim_lower_error(w.L));
  if (counts) tpu_sim_lower_counts_of(w.L, counts);
  tpu_sim_lower_destroy(w.L);
  fe_compiled_destroy(cc);
  return st;
}
/* }================================================================== */

/* {==================================================================
** The step's size, and the program
** ================================================================== */
/* The step's size: the lowering of one step, counted. */
static tpu_status size_of(const fe_plan *plan, const tpu_chip_config *chip, tpu_precision prec,
                          tpu_fe_step_size *out, char *err, size_t errcap) {
  tpu_sim_lower_counts n;
  tpu_status st = lower_plan(plan, chip, prec, NULL, 1, &n, NULL, err, errcap);
  if (st) return st;
  const double *t = n.tensor_bytes;
  *out = (tpu_fe_step_size){ .ops_per_core = n.ops,
                             .hbm_tensor_bytes_per_core = t[TPU_SIM_T_ACTIVATION] + t[TPU_SIM_T_PARAMETER] +
                                                          t[TPU_SIM_T_GRADIENT] + t[TPU_SIM_T_OPTIMIZER],
                             .activation_bytes = t[TPU_SIM_T_ACTIVATION], .parameter_bytes = t[TPU_SIM_T_PARAMETER],
                             .gradient_bytes = t[TPU_SIM_T_GRADIENT], .optimizer_state_bytes = t[TPU_SIM_T_OPTIMIZER] };
  return TPU_OK;
}

/* TPU_ERR_RANGE with the figures and the limit when the engine would
** refuse the program of nsteps steps of size z (its op limit, a chip's HBM). */
static tpu_status check_size(const tpu_fe_step_size *z, const fe_plan *plan, int nsteps, const tpu_fe_model *m,
                             const tpu_chip_config *chip, char *err, size_t errcap) {
  /* the cores share one program (build): it holds one core's ops */
  const double ops = z->ops_per_core * nsteps;
  if (ops > (double)TPU_SIM_MAX_OPS) {
    const int64_t S = tpu_sim_gemm_tiling(chip, TPU_SIM_MAX_DIM, TPU_SIM_MAX_DIM, TPU_SIM_MAX_DIM).nt;
    snprintf(err, errcap, "%s on %s at %d samples per core: the step lowers to %.0f engine ops per core, %.0f in "
             "the program, more than the engine's limit of %lld ops in a program (the tiles are VMEM-sized: "
             "%lld KiB of VMEM gives GEMM tiles of %lld x %lld and element-wise tiles of %lld values); use a smaller "
             "batch or a chip with more VMEM", m->name, chip->name, plan->rows, z->ops_per_core, ops,
             (long long)TPU_SIM_MAX_OPS, (long long)chip->vmem_capacity_kib, (long long)S, (long long)S,
             (long long)(chip->vmem_capacity_kib * 1024 / 128));
    return TPU_ERR_RANGE;
  }
  const double per_chip = z->hbm_tensor_bytes_per_core * chip->cores_per_chip;
  const double hcap = chip->hbm_capacity_gib * 1073741824.0;
  if (per_chip > hcap) {
    snprintf(err, errcap, "%s on %s at %d samples per core: the step's tensors need %.0f bytes of HBM per chip "
             "(%d cores per chip, each holding activations and their gradients %.0f%s, parameters %.0f, gradients "
             "%.0f, optimizer state %.0f), more than its capacity of %.0f bytes (hbm.capacity_gib %g)", m->name,
             chip->name, plan->rows, per_chip, chip->cores_per_chip, z->activation_bytes,
             chip->compiler_memory_planning ? " at their planned peak" : " (each tensor its own space: "
             "compiler.memory_planning is off)", z->parameter_bytes, z->gradient_bytes, z->optimizer_state_bytes, hcap,
             chip->hbm_capacity_gib);
    return TPU_ERR_RANGE;
  }
  return TPU_OK;
}

/* The plan of a step, or the refusal of a shard whose GEMMs pass INT_MAX rows. */
static tpu_status plan_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                          bool train, fe_plan **plan, char *err, size_t errcap) {
  tpu_status st = fe_plan_create(m, rows, rows * chip->cores, prec, train, plan);
  if (st == TPU_ERR_RANGE)
    snprintf(err, errcap, "%s at %d samples per core: a layer's GEMM would have more than %d rows (samples x output "
             "pixels); use a smaller batch or more cores", m->name, rows, INT_MAX);
  else if (st)
    snprintf(err, errcap, "out of memory");
  return st;
}

/* Builds the program of 'nsteps' steps into *out, step s's batch ready at
** ready[s]; *counts (may be NULL) gets core 0's ops, bytes and MACs; with
** 'marks' not NULL, *marks gets each plan step's marks (fe_mark; the
** caller's, tpu_free) and *layers their layers. */
static tpu_status build(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows, bool train,
                        int nsteps, const uint64_t *ready, tpu_sim_program **out, tpu_sim_lower_counts *counts,
                        fe_mark **marks, int **layers, char *err, size_t errcap) {
  *out = NULL;
  if (!m || !chip || rows < 1 || m->nlayers < 1 || chip->cores < 1 || chip->cores > TPU_MAX_CORES) {
    snprintf(err, errcap, "the step program needs a model, a chip of 1..%d cores and rows >= 1 (got %d)",
             TPU_MAX_CORES, rows);
    return TPU_ERR_INPUT;
  }
  fe_plan *plan = NULL;
  tpu_sim_program *p = NULL;
  tpu_fe_step_size z;
  tpu_status st = plan_of(m, chip, prec, rows, train, &plan, err, errcap);
  if (!st) st = size_of(plan, chip, prec, &z, err, errcap);
  if (!st) st = check_size(&z, plan, nsteps, m, chip, err, errcap);
  if (!st && (st = tpu_sim_program_create(chip->cores, &p)) != TPU_OK) snprintf(err, errcap, "out of memory");
  /* Every core runs the same program on its own shard: core 0's is built,
  ** and the others share it (tpu_sim_program_share: one copy in memory,
  ** each core its own copy of the infeed queue). Steps follow one another
  ** in the one program, each op tagged with its step. */
  if (!st && (st = tpu_sim_program_reserve(p, 0, (int64_t)z.ops_per_core * nsteps)) != TPU_OK)
    snprintf(err, errcap, "%s", tpu_sim_program_error(p));
  if (!st && marks) {
    *marks = tpu_calloc((size_t)plan->nsteps + 1, sizeof **marks);
    *layers = tpu_calloc((size_t)plan->nsteps + 1, sizeof **layers);
    if (!*marks || !*layers) { st = TPU_ERR_NOMEM; snprintf(err, errcap, "out of memory"); }
    for (int k = 0; !st && k < plan->nsteps; k++) (*layers)[k] = plan->steps[k].layer;
    if (!st) (*layers)[plan->nsteps] = INT_MIN;   /* the end */
  }
  if (!st) st = lower_plan(plan, chip, prec, p, nsteps, counts, marks ? *marks : NULL, err, errcap);
  if (!st && (st = tpu_sim_infeed(p, 0, nsteps, ready)) != TPU_OK) snprintf(err, errcap, "%s", tpu_sim_program_error(p));
  for (int c = 1; c < chip->cores && !st; c++)
    if ((st = tpu_sim_program_share(p, 0, c)) != TPU_OK) snprintf(err, errcap, "%s", tpu_sim_program_error(p));
  fe_plan_destroy(plan);
  if (st) {
    tpu_sim_program_destroy(p);
    return st;
  }
  *out = p;
  return TPU_OK;
}

tpu_status tpu_fe_step_size_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                               bool train, tpu_fe_step_size *out) {
  memset(out, 0, sizeof *out);
  if (!m || !chip || rows < 1 || m->nlayers < 1) return TPU_ERR_INPUT;
  char err[512];
  fe_plan *plan = NULL;
  tpu_status st = fe_plan_create(m, rows, rows * chip->cores, prec, train, &plan);
  if (!st) st = size_of(plan, chip, prec, out, err, sizeof err);
  fe_plan_destroy(plan);
  return st;
}

tpu_status tpu_fe_program_kernels(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                  bool train, int *out) {
  *out = 0;
  if (!m || !chip || rows < 1 || m->nlayers < 1) return TPU_ERR_INPUT;
  fe_plan *plan = NULL;
  fe_compiled *cc = NULL;
  tpu_status st = fe_plan_create(m, rows, rows * chip->cores, prec, train, &plan);
  if (!st) st = fe_compile(plan, chip, &cc);
  if (!st) *out = fe_compiled_kernels(plan, cc);
  fe_compiled_destroy(cc);
  fe_plan_destroy(plan);
  return st;
}

tpu_status tpu_fe_step_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                           int rows, bool train, uint64_t infeed_ready_cycles,
                           tpu_sim_program **out, char *err, size_t errcap) {
  return build(m, chip, prec, rows, train, 1, &infeed_ready_cycles, out, NULL, NULL, NULL, err, errcap);
}

tpu_status tpu_fe_steps_program(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                int steps, const uint64_t *ready_cycles, tpu_sim_program **out, char *err,
                                size_t errcap) {
  *out = NULL;
  if (steps < 1 || steps > 1000 || !ready_cycles) {
    snprintf(err, errcap, "steps: expected 1..1000 training steps with their ready cycles, got %d", steps);
    return TPU_ERR_INPUT;
  }
  return build(m, chip, prec, rows, true, steps, ready_cycles, out, NULL, NULL, NULL, err, errcap);
}
/* }================================================================== */

/* {==================================================================
** Step timing on the engine
** ================================================================== */
/* The timing of a step from its run's figures: its cycles and each core's
** stall cycles, core[0..chip->cores) (the one place both paths below
** compute it, so that they give the same bits). */
static void fill_timing(tpu_fe_step_timing *out, const tpu_fe_model *m, const tpu_chip_config *chip, bool train,
                        uint64_t macs, uint64_t hbm_bytes, uint64_t cyc, const tpu_sim_stalls *core) {
  out->step_cycles = cyc;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) {
    uint64_t sum = 0;
    for (int c = 0; c < chip->cores; c++) sum += out->core_stall[c][k] = core[c].cycles[k];
    out->stall[k] = (double)sum / (double)chip->cores;
  }
  out->macs = macs;
  out->mxu_cycles_capacity = (uint64_t)chip->mxu.rows * (uint64_t)chip->mxu.cols * (uint64_t)chip->mxus_per_core * cyc;
  out->hbm_bytes = hbm_bytes;
  out->allreduce_bytes = train ? (uint64_t)m->nparams * 4 : 0;
}

/* Runs p at the timing level into out (and the trace); err gets the
** engine's message. 'stalls' (NULL, or TPU_MAX_CORES entries) gets each
** core's stall cycles. */
static tpu_status run_timing(tpu_sim_program *p, const tpu_fe_model *m, const tpu_chip_config *chip, bool train,
                             uint64_t macs, uint64_t hbm_bytes, int threads, tpu_fe_step_timing *out,
                             tpu_sim_stalls *stalls, const tpu_fe_step_trace *trace, tpu_sim_result **keep, char *err,
                             size_t errcap) {
  tpu_sim_result *r = NULL;
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = threads < 1 ? 1 : threads, .trace = trace != NULL };
  tpu_status st = tpu_sim_run(chip, p, &o, &r);
  if (st) {
    snprintf(err, errcap, "%s", tpu_sim_program_error(p));
    return st;
  }
  tpu_sim_stalls s[TPU_MAX_CORES] = { { { 0 } } };
  for (int c = 0; c < chip->cores; c++) tpu_sim_result_stalls(r, c, -1, &s[c]);
  fill_timing(out, m, chip, train, macs, hbm_bytes, tpu_sim_result_cycles(r), s);
  if (stalls) memcpy(stalls, s, sizeof s);
  if (trace) tpu_sim_trace_steps_add(trace->out, r, trace->step, trace->t0_us);
  if (keep) *keep = r;
  else tpu_sim_result_destroy(r);
  return TPU_OK;
}

tpu_status tpu_fe_time_step(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                        int rows, bool train, uint64_t infeed_ready_cycles, int threads,
                        tpu_fe_step_timing *out, const tpu_fe_step_trace *trace,
                        char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  tpu_sim_lower_counts n;
  tpu_sim_program *p = NULL;
  tpu_status st = build(m, chip, prec, rows, train, 1, &infeed_ready_cycles, &p, &n, NULL, NULL, err, errcap);
  if (!st) st = run_timing(p, m, chip, train, (uint64_t)n.macs, (uint64_t)n.hbm_bytes, threads, out, NULL, trace, NULL,
                           err, errcap);
  tpu_sim_program_destroy(p);
  return st;
}

static tpu_status costs_from(const tpu_sim_program *p, const tpu_sim_result *r, const fe_mark *mk, const int *lay,
                             const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                             const tpu_sim_lower_counts *n, tpu_fe_step_costs *out);   /* below */

/* The step timer (fe.h): the program, and its run at wait 0. */
struct tpu_fe_step_timer {
  const tpu_fe_model *m;
  tpu_chip_config chip;
  bool train;
  int threads;
  tpu_sim_program *p;
  uint64_t macs, hbm_bytes;
  uint64_t cycles0;            /* the step at wait 0 ... */
  tpu_sim_stalls stalls0[TPU_MAX_CORES];   /* ... and each core's stall cycles */
  tpu_fe_step_costs costs;     /* that run's per-layer split (tpu_fe_step_timer_costs) */
};

tpu_status tpu_fe_step_timer_create(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                    bool train, int threads, tpu_fe_step_timer **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_fe_step_timer *t = tpu_calloc(1, sizeof *t);
  if (!t) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  tpu_sim_lower_counts n;
  const uint64_t ready0 = 0;
  fe_mark *mk = NULL;
  int *lay = NULL;
  tpu_status st = build(m, chip, prec, rows, train, 1, &ready0, &t->p, &n, &mk, &lay, err, errcap);
  if (st) { tpu_free(mk); tpu_free(lay); tpu_free(t); return st; }
  *t = (tpu_fe_step_timer){ .m = m, .chip = *chip, .train = train, .threads = threads, .p = t->p,
                            .macs = (uint64_t)n.macs, .hbm_bytes = (uint64_t)n.hbm_bytes };
  tpu_fe_step_timing tm;
  tpu_sim_result *r = NULL;
  st = run_timing(t->p, m, chip, train, t->macs, t->hbm_bytes, threads, &tm, t->stalls0, NULL, &r, err, errcap);
  if (!st && (st = costs_from(t->p, r, mk, lay, m, chip, prec, &n, &t->costs)) != TPU_OK)
    snprintf(err, errcap, "out of memory");
  tpu_sim_result_destroy(r);
  tpu_free(mk);
  tpu_free(lay);
  if (st) { tpu_fe_step_timer_destroy(t); return st; }
  t->cycles0 = tm.step_cycles;
  *out = t;
  return TPU_OK;
}

void tpu_fe_step_timer_destroy(tpu_fe_step_timer *t) {
  if (!t) return;
  tpu_fe_step_costs_free(&t->costs);
  tpu_sim_program_destroy(t->p);
  tpu_free(t);
}

tpu_status tpu_fe_step_timer_time(tpu_fe_step_timer *t, uint64_t infeed_ready_cycles, const tpu_fe_step_trace *trace,
                                  tpu_fe_step_timing *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  const int cores = t->chip.cores;
  if (trace) {   /* the events are needed: run it, the batch ready at the wait */
    for (int c = 0; c < cores; c++) {
      tpu_status st = tpu_sim_infeed(t->p, c, 1, &infeed_ready_cycles);
      if (st) { snprintf(err, errcap, "%s", tpu_sim_program_error(t->p)); return st; }
    }
    return run_timing(t->p, t->m, &t->chip, t->train, t->macs, t->hbm_bytes, t->threads, out, NULL, trace, NULL, err,
                      errcap);
  }
  /* every op follows the infeed: the step at wait 0, later by the wait,
  ** which every core spends in infeed_wait */
  const uint64_t w = infeed_ready_cycles;
  tpu_sim_stalls s[TPU_MAX_CORES];
  for (int c = 0; c < cores; c++) {
    s[c] = t->stalls0[c];
    s[c].cycles[TPU_SIM_INFEED_WAIT] += w;
  }
  fill_timing(out, t->m, &t->chip, t->train, t->macs, t->hbm_bytes, t->cycles0 + w, s);
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Where a step's time and bytes go, layer by layer
** ================================================================== */
/* Adds op i of core 0 to cost c: its unit's work, and the step's end so far. */
static void add_op(const tpu_sim_program *p, const tpu_sim_result *r, int i, tpu_fe_layer_cost *c, uint64_t *end) {
  tpu_sim_op op;
  uint64_t t0, t1;
  if (!tpu_sim_program_op(p, 0, i, &op)) return;
  tpu_sim_result_op_times(r, 0, i, &t0, &t1);
  if (t1 > *end) *end = t1;
  if (op.kind == TPU_SIM_MATMUL) c->mxu_cycles += (double)(t1 - tpu_sim_result_op_busy(r, 0, i));
  else if (op.kind == TPU_SIM_VPU) c->vpu_cycles += (double)(t1 - t0);
  else if (op.kind == TPU_SIM_COLLECTIVE) c->ici_cycles += (double)(t1 - t0);
}

static void finish_costs(tpu_fe_step_costs *out, const tpu_chip_config *chip, tpu_precision prec) {
  const double per_core = chip->hbm_bandwidth_gb_per_s * 1e9 / (chip->clock_mhz * 1e6) / chip->cores_per_chip;
  const double passes = tpu_precision_passes(prec);
  for (int i = 0; i < out->n + out->natt; i++) {
    tpu_fe_layer_cost *c = i < out->n ? &out->layer[i] : &out->att[i - out->n];
    c->hbm_cycles = c->hbm_bytes / per_core;
    c->flops = 2.0 * c->flops / passes;
    const double u[4] = { c->mxu_cycles, c->vpu_cycles, c->hbm_cycles, c->ici_cycles };
    static const char *const NAME[4] = { "MXU", "VPU", "HBM", "ICI" };
    int b = 0;
    for (int k = 1; k < 4; k++) if (u[k] > u[b]) b = k;
    c->bound = u[b] > 0 ? NAME[b] : NULL;   /* no work of its own (a view, or fused into another's kernel) */
  }
}

/* The per-layer split of run r of program p (marks mk, layers lay from
** build), counts n the lowering's. TPU_OK or TPU_ERR_NOMEM. */
static tpu_status costs_from(const tpu_sim_program *p, const tpu_sim_result *r, const fe_mark *mk, const int *lay,
                             const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                             const tpu_sim_lower_counts *n, tpu_fe_step_costs *out) {
  memset(out, 0, sizeof *out);
  int *base = tpu_calloc((size_t)m->nlayers + 1, sizeof *base);   /* a layer's first entry in att */
  for (int i = 0; base && i < m->nlayers; i++) {
    base[i] = out->natt;
    if (m->layers[i].kind == TPU_FE_MHA) out->natt += TPU_FE_ATT_NPARTS;
  }
  out->layer = tpu_calloc((size_t)m->nlayers + 1, sizeof *out->layer);
  out->att = tpu_calloc((size_t)out->natt + 1, sizeof *out->att);
  if (!base || !out->layer || !out->att) { tpu_free(base); tpu_fe_step_costs_free(out); return TPU_ERR_NOMEM; }
  out->n = m->nlayers + 1;
  for (int i = 0; i < out->n; i++)
    out->layer[i] = (tpu_fe_layer_cost){ .layer = i < m->nlayers ? i : -1, .part = -1, .group = -1 };
  for (int i = 0; i < m->nlayers; i++)
    for (int q = 0; m->layers[i].kind == TPU_FE_MHA && q < TPU_FE_ATT_NPARTS; q++)
      out->att[base[i] + q] = (tpu_fe_layer_cost){ .layer = i, .part = q, .group = -1 };
  uint64_t end = 0, prev = 0;
  for (int k = 0; lay[k] != INT_MIN; k++) {
    tpu_fe_layer_cost *c = &out->layer[lay[k] >= 0 ? lay[k] : m->nlayers];
    tpu_fe_layer_cost *a = mk[k].part >= 0 ? &out->att[base[lay[k]] + mk[k].part] : NULL;
    for (int i = mk[k].op0; i < mk[k].op1; i++) add_op(p, r, i, c, &end);
    uint64_t unused = 0;   /* the step's end is the layer's */
    for (int i = mk[k].op0; a && i < mk[k].op1; i++) add_op(p, r, i, a, &unused);
    for (int q = 0; q < (a ? 2 : 1); q++) {   /* the layer, and its part */
      tpu_fe_layer_cost *x = q ? a : c;
      x->cycles += (double)(end - prev);
      x->hbm_bytes += mk[k].bytes;
      x->flops += mk[k].macs;
      if (x->group < 0) x->group = mk[k].kernel;
    }
    prev = end;
  }
  tpu_free(base);
  out->layer[m->nlayers].cycles += (double)(tpu_sim_result_cycles(r) - prev);
  out->step_cycles = tpu_sim_result_cycles(r);
  out->hbm_bytes = n->hbm_bytes;
  memcpy(out->class_bytes, n->class_bytes, sizeof out->class_bytes);
  finish_costs(out, chip, prec);
  return TPU_OK;
}

tpu_status tpu_fe_step_costs_of(const tpu_fe_model *m, const tpu_chip_config *chip, tpu_precision prec, int rows,
                                bool train, tpu_fe_step_costs *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  tpu_sim_lower_counts n;
  tpu_sim_program *p = NULL;
  tpu_sim_result *r = NULL;
  fe_mark *mk = NULL;
  int *lay = NULL;
  const uint64_t ready0 = 0;
  tpu_status st = build(m, chip, prec, rows, train, 1, &ready0, &p, &n, &mk, &lay, err, errcap);
  if (!st && (st = tpu_sim_run(chip, p, &(tpu_sim_options){ .level = TPU_FIDELITY_TIMING, .threads = 1 }, &r)))
    snprintf(err, errcap, "%s", tpu_sim_program_error(p));
  if (!st && (st = costs_from(p, r, mk, lay, m, chip, prec, &n, out)) != TPU_OK) snprintf(err, errcap, "out of memory");
  tpu_sim_result_destroy(r);
  tpu_sim_program_destroy(p);
  tpu_free(mk);
  tpu_free(lay);
  return st;
}

tpu_status tpu_fe_step_timer_costs(const tpu_fe_step_timer *t, tpu_fe_step_costs *out) {
  *out = t->costs;
  out->layer = tpu_malloc((size_t)t->costs.n * sizeof *out->layer);
  out->att = tpu_malloc(((size_t)t->costs.natt + 1) * sizeof *out->att);
  if (!out->layer || !out->att) {
    tpu_free(out->layer);
    tpu_free(out->att);
    memset(out, 0, sizeof *out);
    return TPU_ERR_NOMEM;
  }
  memcpy(out->layer, t->costs.layer, (size_t)t->costs.n * sizeof *out->layer);
  memcpy(out->att, t->costs.att, (size_t)t->costs.natt * sizeof *out->att);
  return TPU_OK;
}

void tpu_fe_step_costs_free(tpu_fe_step_costs *c) {
  if (!c) return;
  tpu_free(c->layer);
  tpu_free(c->att);
  memset(c, 0, sizeof *c);
}
/* }================================================================== */
