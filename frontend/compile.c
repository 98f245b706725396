/*
** compile.c -- the step compiler's decisions over a step plan (fe_int.h,
** "The step compiler"; docs/COMPILER.md has the rules as a table): which
** plan steps run as one fused element-wise kernel, which GEMM reduces the
** following batch norm's statistics in its epilogue, and which
** convolution GEMMs read (or write) their im2col matrix implicitly, as a
** share of the input's window. train_lower.c lowers what this decides;
** the value path is not concerned (fusion changes no value: a fused
** kernel stores what the unfused steps would have, and what it does not
** store nobody reads).
**
** Fusion. A kernel is a run of consecutive element-wise plan steps (VPU
** steps other than the loss and the GEMM epilogues, batch norm forward
** and backward, views, dropout masks) over one R x C shape, in one phase,
** each after the first reading a tensor an earlier member wrote. It loads
** each tensor it reads from outside once per pass, stores only the
** tensors a step outside it reads, and keeps the rest in VMEM. A member
** that needs a reduction over the whole batch before its element-wise
** part (batch norm backward; batch norm forward when its statistics were
** not reduced in the producer) gives the kernel a first pass that reads
** only what the reduction needs; a kernel holds at most one such member.
** A relu's gradient is taken from the relu's output (y > 0 exactly when
** x > 0), so a relu's input that only its gradient read stays on chip.
**
** Implicit convolution. A conv2d (or depthwise) GEMM's im2col operand is
** formed in VMEM from the input's window: a block of P consecutive output
** pixels needs the input rows under them (whole images when P covers one:
** the halo is the kernel's extra rows), ratio = window pixels / P. The
** forward's and dW's A tiles then move ratio / taps of their values (the
** window, once per block, spread over its K slices) when the window of
** all the input's channels fits an eighth of VMEM; otherwise each K slice
** loads its channels' window (ratio * min(C, kt) / kt). dX's taps are
** summed into the window in VMEM (col2im on chip) and the window stored
** once per block row; when it does not fit, dX keeps col2im through HBM.
*/
#include <stdlib.h>
#include <string.h>

#include "frontend/fe_int.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* {==================================================================
** Tensors: keys, views, readers
** ================================================================== */
/* A tensor's key (kind, layer); layers run to nlayers + 1. */
static int key_of(const fe_plan *p, fe_tensor t) {
  return ((int)t.kind * FE_ATT_NPARTS + t.part) * (p->model->nlayers + 2) + t.layer + 1;
}

/* What step s reads (up to 4; NONE, MASK and on-chip state skipped), a
** relu's gradient reading the relu's output. */
static int step_reads(const fe_plan *p, const fe_step *s, fe_tensor r[4]) {
  int n = 0;
  const tpu_fe_model *m = p->model;
  switch (s->kind) {
  case FE_STEP_GEMM:
    r[n++] = s->gemm.a;
    r[n++] = s->gemm.b;
    if (s->gemm.acc) r[n++] = s->gemm.c;
    break;
  case FE_STEP_VPU: {
    fe_tensor x = s->vpu.x;
    const tpu_vpu_op op = s->vpu.op;
    if ((op == TPU_VPU_RELU_GRAD || op == TPU_VPU_RELU_CAP_GRAD) && s->layer >= 0 &&
        m->layers[s->layer].kind == TPU_FE_RELU)
      x = (fe_tensor){ FE_T_ACT, s->layer + 1, 0 };
    if (x.kind) r[n++] = x;
    if (s->vpu.y.kind && s->vpu.y.kind != FE_T_MASK) r[n++] = s->vpu.y;
    break;
  }
  case FE_STEP_BN_BWD: case FE_STEP_POOL_BWD: case FE_STEP_LN_BWD:   /* and the forward input */
    r[n++] = s->in;
    if (s->layer >= 0) r[n++] = (fe_tensor){ FE_T_ACT, m->layers[s->layer].inputs[0] + 1, 0 };
    break;
  case FE_STEP_GATE: case FE_STEP_GATE_GRAD: {   /* and the gate, or the map */
    const tpu_fe_layer *l = &m->layers[s->layer];
    const int g = fe_gate_input(m, l);
    r[n++] = s->in;
    r[n++] = (fe_tensor){ FE_T_ACT, l->inputs[s->kind == FE_STEP_GATE ? g : 1 - g] + 1, 0 };
    break;
  }
  case FE_STEP_DROPOUT_MASK: case FE_STEP_BN_MOVING: case FE_STEP_ALLREDUCE: case FE_STEP_UPDATE:
  case FE_STEP_INFEED: case FE_STEP_DW_EXPAND: case FE_STEP_DW_COMPACT:
    break;
  default:
    if (s->in.kind) r[n++] = s->in;
    break;
  }
  return n;
}

/* What step s writes (up to 2). */
static int step_writes(const fe_step *s, fe_tensor w[2]) {
  int n = 0;
  if (s->kind == FE_STEP_GEMM) w[n++] = s->gemm.c;
  else if (s->kind == FE_STEP_VPU) {
    if (s->vpu.out.kind) w[n++] = s->vpu.out;
    if (s->vpu.out2.kind) w[n++] = s->vpu.out2;
  } else if (s->out.kind && s->kind != FE_STEP_DROPOUT_MASK) {
    w[n++] = s->out;
  }
  return n;
}
/* }================================================================== */

/* {==================================================================
** Fused element-wise kernels
** ================================================================== */
static bool ewise(const fe_step *s) {
  switch (s->kind) {
  case FE_STEP_VPU:   /* not a bias_add of its own (position_embedding's: a 1 x C operand), nor a
                       ** softmax (attention's: row-wise, its own pass) */
    return !s->fused && s->vpu.op != TPU_VPU_SOFTMAX_XENT && s->vpu.op != TPU_VPU_SIGMOID_BCE && s->vpu.op != TPU_VPU_MSE &&
           s->vpu.op != TPU_VPU_COL_SUM &&
           s->vpu.op != TPU_VPU_BIAS_ADD && s->vpu.op != TPU_VPU_SOFTMAX && s->vpu.op != TPU_VPU_SOFTMAX_GRAD;
  case FE_STEP_BN: case FE_STEP_BN_BWD: case FE_STEP_VIEW: case FE_STEP_DROPOUT_MASK: return true;
  default: return false;
  }
}
static void shape_of(const fe_step *s, int64_t *R, int64_t *C) {
  *R = s->kind == FE_STEP_VPU ? s->vpu.rows : s->rows;
  *C = s->kind == FE_STEP_VPU ? s->vpu.cols : s->cols;
}

typedef struct cstate {
  const fe_plan *p;
  fe_compiled *c;
  int *alias;                  /* key -> the key it is a view of (itself) */
  int *last_read;              /* key -> the last step reading it (views resolved), -1 */
  int nkeys;
} cstate;

static int resolve(const cstate *s, int k) {
  while (s->alias[k] != k) k = s->alias[k];
  return k;
}

/* A member's reduction before its element-wise part: batch norm backward,
** and batch norm forward in training whose statistics no GEMM reduced. */
static bool needs_reduction(const cstate *s, int k) {
  const fe_step *st = &s->p->steps[k];
  return st->kind == FE_STEP_BN_BWD || (st->kind == FE_STEP_BN && s->p->train && !s->c->step[k].stats_fused);
}

/* Whether step k joins the kernel [first, k-1]: the same shape and phase,
** reading something the kernel wrote, at most one reduction. */
static bool joins(const cstate *s, int first, int k, bool has_red) {
  const fe_plan *p = s->p;
  const fe_step *a = &p->steps[first], *b = &p->steps[k];
  int64_t R0, C0, R1, C1;
  shape_of(a, &R0, &C0);
  shape_of(b, &R1, &C1);
  if (!ewise(b) || a->phase != b->phase || R0 != R1 || C0 != C1 || (has_red && needs_reduction(s, k)) ||
      k - first >= FE_KERNEL_MAX_MEMBERS)
    return false;
  if (b->kind == FE_STEP_DROPOUT_MASK) return true;
  fe_tensor r[4], w[2];
  const int nr = step_reads(p, b, r);
  for (int j = first; j < k; j++) {
    const int nw = step_writes(&p->steps[j], w);
    for (int x = 0; x < nw; x++)
      for (int y = 0; y < nr; y++)
        if (resolve(s, key_of(p, w[x])) == resolve(s, key_of(p, r[y]))) return true;
  }
  return false;
}

/* A member's reads from outside the kernel: keys and dtypes (at most 2). */
static int outside_reads(const cstate *s, const fe_kernel *g, int k, int key[2], tpu_sim_dtype dt[2]) {
  const fe_plan *p = s->p;
  fe_tensor r[4], w[2];
  int n = 0;
  const int nr = step_reads(p, &p->steps[k], r);
  for (int y = 0; y < nr && n < 2; y++) {
    const int kk = resolve(s, key_of(p, r[y]));
    bool inside = false;
    for (int j = g->first; j < k && !inside; j++) {
      const int nw = step_writes(&p->steps[j], w);
      for (int x = 0; x < nw; x++) inside |= resolve(s, key_of(p, w[x])) == kk;
    }
    if (!inside) key[n] = kk, dt[n++] = fe_tensor_dtype(p, r[y]);
  }
  return n;
}

/* Member k's result when a step after the kernel reads it: its key (and
** dtype), else -1. */
static int stored_result(const cstate *s, const fe_kernel *g, int k, tpu_sim_dtype *dt) {
  const fe_plan *p = s->p;
  fe_tensor w[2];
  if (p->steps[k].kind == FE_STEP_VIEW || p->steps[k].kind == FE_STEP_DROPOUT_MASK) return -1;
  const int nw = step_writes(&p->steps[k], w);
  for (int x = 0; x < nw; x++) {
    const int key = resolve(s, key_of(p, w[x]));
    if (s->last_read[key] > g->last) { *dt = fe_tensor_dtype(p, w[x]); return key; }
  }
  return -1;
}

/* Plans pass ps over members [from, to]: its loads (each key once) and
** stores; the chain input 'ckey' (>= 0) loaded first when the pass starts
** from a result an earlier pass stored. false when it needs more than
** FE_KERNEL_MAX_IO loads or stores. */
static bool plan_pass(const cstate *s, const fe_kernel *g, fe_kernel_pass *ps, int from, int to, int ckey,
                      tpu_sim_dtype cdt, bool stores) {
  int keys[FE_KERNEL_MAX_IO];
  *ps = (fe_kernel_pass){ .from = from, .to = to, .chain = -1 };
  if (ckey >= 0) keys[0] = ckey, ps->load_dt[0] = cdt, ps->chain = 0, ps->nload = 1;
  for (int k = from; k <= to; k++) {
    int key[2];
    tpu_sim_dtype dt[2];
    const int n = outside_reads(s, g, k, key, dt);
    ps->other[k - from] = -1;
    for (int y = 0; y < n; y++) {
      int at = -1;
      for (int i = 0; i < ps->nload; i++) if (keys[i] == key[y]) at = i;
      if (at < 0) {
        if (ps->nload == FE_KERNEL_MAX_IO) return false;
        keys[at = ps->nload] = key[y], ps->load_dt[ps->nload++] = dt[y];
      }
      if (k == from && y == 0 && ps->chain < 0) ps->chain = at;
      else if (ps->other[k - from] < 0) ps->other[k - from] = at;
    }
    tpu_sim_dtype odt;
    if (!stores || stored_result(s, g, k, &odt) < 0) continue;
    if (ps->nstore == FE_KERNEL_MAX_IO) return false;
    ps->store_dt[ps->nstore] = odt, ps->store_step[ps->nstore++] = k;
  }
  return true;
}

/* The kernel's passes. With a reduction, pass 0 reads what members up to
** it need; pass 1 either runs every member again (reading their inputs
** once more) or, when cheaper, starts at the reducing member from the
** value entering it, which pass 0 then stores (it may be stored anyway: a
** residual's gradient). */
static bool kernel_io(const cstate *s, fe_kernel *g) {
  if (g->red < 0) return plan_pass(s, g, &g->pass[1], g->first, g->last, -1, TPU_SIM_F32, true);
  int prev = -1;   /* the member whose result enters the reducing one */
  for (int k = g->first; k < g->red; k++)
    if (s->p->steps[k].kind != FE_STEP_VIEW && s->p->steps[k].kind != FE_STEP_DROPOUT_MASK) prev = k;
  tpu_sim_dtype cdt = TPU_SIM_F32;
  fe_kernel_pass again, split;
  if (!plan_pass(s, g, &g->pass[0], g->first, g->red, -1, cdt, false) ||
      !plan_pass(s, g, &again, g->first, g->last, -1, cdt, true))
    return false;
  const bool stored = prev >= 0 && stored_result(s, g, prev, &cdt) >= 0;
  int ckey = -1;
  if (prev >= 0) {
    fe_tensor w[2];
    step_writes(&s->p->steps[prev], w);
    ckey = resolve(s, key_of(s->p, w[0]));
    if (!stored) cdt = fe_tensor_dtype(s->p, w[0]);
  }
  if (ckey < 0 || !plan_pass(s, g, &split, g->red, g->last, ckey, cdt, true)) { g->pass[1] = again; return true; }
  /* re-running the prefix loads its inputs again; starting at red loads
  ** the stored value, which costs a store too unless it is stored anyway */
  const int cost_again = again.nload, cost_split = split.nload + (stored ? 0 : 1);
  if (cost_split >= cost_again) { g->pass[1] = again; return true; }
  g->pass[1] = split;
  fe_kernel_pass pre;   /* the prefix's results read after the kernel: pass 0 stores them */
  if (!plan_pass(s, g, &pre, g->first, g->red - 1, -1, TPU_SIM_F32, true)) { g->pass[1] = again; return true; }
  memcpy(g->pass[0].store_dt, pre.store_dt, sizeof pre.store_dt);
  memcpy(g->pass[0].store_step, pre.store_step, sizeof pre.store_step);
  g->pass[0].nstore = pre.nstore;
  if (stored) return true;
  if (g->pass[0].nstore == FE_KERNEL_MAX_IO) { g->pass[1] = again; return true; }
  g->pass[0].store_dt[g->pass[0].nstore] = cdt, g->pass[0].store_step[g->pass[0].nstore++] = prev;
  return true;
}

static tpu_status add_kernel(cstate *s, int first, int last, int red) {
  fe_compiled *c = s->c;
  fe_kernel *v = tpu_realloc(c->kernels, (size_t)(c->nkernels + 1) * sizeof *v);
  if (!v) return TPU_ERR_NOMEM;
  c->kernels = v;
  fe_kernel *g = &v[c->nkernels];
  *g = (fe_kernel){ .first = first, .last = last, .red = red };
  shape_of(&s->p->steps[first], &g->rows, &g->cols);
  if (!kernel_io(s, g)) return TPU_OK;   /* too wide: its steps stay unfused */
  for (int k = first; k <= last; k++) c->step[k].kernel = c->nkernels;
  c->nkernels++;
  return TPU_OK;
}

static tpu_status find_kernels(cstate *s) {
  const fe_plan *p = s->p;
  for (int k = 0; k < p->nsteps;) {
    if (!ewise(&p->steps[k]) || p->steps[k].kind == FE_STEP_VIEW || p->steps[k].kind == FE_STEP_DROPOUT_MASK) {
      k++;
      continue;
    }
    int red = needs_reduction(s, k) ? k : -1, last = k;
    while (last + 1 < p->nsteps && joins(s, k, last + 1, red >= 0)) {
      last++;
      if (red < 0 && needs_reduction(s, last)) red = last;
    }
    tpu_status st = add_kernel(s, k, last, red);
    if (st) return st;
    k = last + 1;
  }
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Batch norm statistics in the producer; implicit convolution
** ================================================================== */
/* A training batch norm whose input a forward GEMM wrote (last, whole,
** not accumulating into it): that GEMM reduces the statistics in its
** epilogue, so the batch norm needs no pass of its own before it
** normalizes. */
static void fuse_stats(cstate *s) {
  const fe_plan *p = s->p;
  if (!p->train) return;
  for (int j = 0; j < p->nsteps; j++) {
    if (p->steps[j].kind != FE_STEP_BN) continue;
    const int key = key_of(p, p->steps[j].in);
    for (int k = j - 1; k >= 0; k--) {
      fe_tensor w[2];
      const int nw = step_writes(&p->steps[k], w);
      bool writes = false;
      for (int x = 0; x < nw; x++) writes |= key_of(p, w[x]) == key;
      if (!writes || p->steps[k].fused) continue;   /* a GEMM's epilogue writes in place: the GEMM's */
      const fe_step *g = &p->steps[k];
      if (g->kind == FE_STEP_GEMM && g->phase == FE_FORWARD && !g->gemm.acc && !g->gemm.dw && !s->c->step[k].stats) {
        s->c->step[k].stats = true;
        s->c->step[j].stats_fused = true;
      }
      break;
    }
  }
}

/* Input pixels under P consecutive output pixels, per output pixel. */
static double window_ratio(const fe_window *w, int64_t P) {
  const int64_t opix = (int64_t)w->oh * w->ow, ipix = (int64_t)w->h * w->w;
  if (P >= opix) return (double)ipix / (double)opix;
  const int64_t orows = (P + w->ow - 1) / w->ow + (P % w->ow != 0);
  const int64_t irows = min64(w->h, (min64(orows, w->oh) - 1) * w->stride + w->kh);
  return (double)(irows * w->w) / (double)P;
}

/* Marks the col2im of layer 'layer' after step k as done in VMEM. */
static void skip_col2im(cstate *s, int k, int layer) {
  for (int j = k + 1; j < s->p->nsteps; j++)
    if (s->p->steps[j].kind == FE_STEP_COL2IM && s->p->steps[j].layer == layer) { s->c->step[j].skip = true; return; }
}

/* The implicit forms of convolution GEMM k (forward, dW, dX; a depthwise
** one per block of its channels, as the lowering cuts it) on chip. */
static void implicit_conv(cstate *s, const tpu_chip_config *chip, int k) {
  const fe_plan *p = s->p;
  const fe_step *st = &p->steps[k];
  const fe_gemm_step *g = &st->gemm;
  const fe_window *w = &st->win;
  const int taps = w->kh * w->kw;
  if (st->layer < 0 || taps < 1 || (g->a.kind != FE_T_COLS && g->c.kind != FE_T_COLS)) return;
  int64_t M = g->M, N = g->N, K = g->K, C = w->c;
  if (g->dw && (C = fe_gemm_dw_block(g, chip->mxu.cols, 0, &M, &N, &K) * g->dwc) <= 0) return;   /* input channels */
  fe_step_compiled *c = &s->c->step[k];
  if (taps == 1 && w->stride == 1) {              /* 1x1: the im2col matrix is the input itself */
    if (g->c.kind == FE_T_COLS) skip_col2im(s, k, st->layer);
    return;
  }
  const tpu_sim_tiling t = tpu_sim_gemm_tiling(chip, M, N, K);
  const double vmem8 = (double)chip->vmem_capacity_kib * 1024.0 / 8.0;
  if (g->a.kind == FE_T_COLS && !g->ta) {         /* forward: A is pixels x taps*C */
    const double r = window_ratio(w, t.mt);
    const bool fits = r * (double)t.mt * (double)C * 4.0 <= vmem8;
    c->a_share = fits ? r / taps : r * (double)min64(C, t.kt) / (double)t.kt;
  } else if (g->a.kind == FE_T_COLS) {            /* dW: A^T's tiles are kt pixels x mt taps*C */
    c->a_share = window_ratio(w, t.kt) * (double)min64(C, t.mt) / (double)t.mt;
  } else {                                        /* dX: dcols summed into the window in VMEM */
    const double pix = window_ratio(w, t.mt) * (double)t.mt;
    if (pix * (double)C * 4.0 > vmem8) return;
    c->c_window_pixels = pix;
    skip_col2im(s, k, st->layer);
  }
  if (c->a_share > 1) c->a_share = 1;
}
/* }================================================================== */

/* {==================================================================
** Memory planning: activations by liveness
** ================================================================== */
/* The bytes of plan tensor t in HBM: activations, their gradients and a
** separable layer's middle tensors (0 for what lives elsewhere: the flat
** parameter, gradient and state vectors, expanded depthwise weights, the
** im2col matrices the DMAs gather, masks made on chip). */
static double tensor_bytes(const fe_plan *p, fe_tensor t) {
  const tpu_fe_model *m = p->model;
  const double e = fe_tensor_dtype(p, t) == TPU_SIM_BF16 ? 2.0 : 4.0, rows = p->rows;
  switch (t.kind) {
  case FE_T_ACT: case FE_T_DACT: case FE_T_DTMP:
    return rows * (double)tpu_fe_shape_size(t.layer ? m->layers[t.layer - 1].out : m->input) * e;
  case FE_T_MID: case FE_T_DMID: {
    const tpu_fe_layer *l = &m->layers[t.layer];
    return rows * l->out.h * l->out.w * (double)l->in.c * l->depth_multiplier * e;
  }
  case FE_T_ATT: case FE_T_DATT: return rows * (double)fe_att_elems(&m->layers[t.layer], t.part) * e;
  default: return 0;
  }
}

/* Whether step k's result t goes to HBM: not when a kernel keeps it. */
static bool stored_at(const fe_compiled *c, int k, const fe_plan *p) {
  const int g = c->step[k].kernel;
  if (g < 0) return p->steps[k].kind != FE_STEP_VIEW;
  for (int ps = 0; ps < 2; ps++)
    for (int i = 0; i < c->kernels[g].pass[ps].nstore; i++)
      if (c->kernels[g].pass[ps].store_step[i] == k) return true;
  return false;
}

typedef struct mem_ev { int at; double d; } mem_ev;   /* at step 'at' (a free just after it) */
static int mem_ev_cmp(const void *x, const void *y) {
  const mem_ev *a = x, *b = y;
  return a->at != b->at ? (a->at < b->at ? -1 : 1) : (a->d < b->d) - (a->d > b->d);   /* allocations first */
}

/* Each stored tensor lives from the step that first writes it (the input
** shard: the infeed) to the last step reading it; the planned peak is the
** most bytes live at once, the sum what every tensor kept apart takes. */
static tpu_status plan_memory(cstate *s) {
  const fe_plan *p = s->p;
  fe_compiled *c = s->c;
  char *born = tpu_calloc((size_t)s->nkeys, 1);
  mem_ev *ev = tpu_malloc(((size_t)p->nsteps * 2 + 2) * sizeof *ev);
  if (!born || !ev) { tpu_free(born); tpu_free(ev); return TPU_ERR_NOMEM; }
  int nev = 0;
  for (int k = 0; k < p->nsteps; k++) {
    fe_tensor w[2];
    const int nw = p->steps[k].kind == FE_STEP_INFEED ? 1 : step_writes(&p->steps[k], w);
    if (p->steps[k].kind == FE_STEP_INFEED) w[0] = (fe_tensor){ FE_T_ACT, 0, 0 };
    for (int x = 0; x < nw; x++) {
      const int key = resolve(s, key_of(p, w[x]));
      const double b = tensor_bytes(p, w[x]);
      if (born[key] || b == 0 || !stored_at(c, k, p)) continue;
      born[key] = 1;
      c->act_sum_bytes += b;
      const int end = s->last_read[key] >= k ? s->last_read[key] : k;
      ev[nev++] = (mem_ev){ k, b };
      ev[nev++] = (mem_ev){ end + 1, -b };
    }
  }
  qsort(ev, (size_t)nev, sizeof *ev, mem_ev_cmp);
  double live = 0;
  for (int i = 0; i < nev; i++) {
    live += ev[i].d;
    if (live > c->act_peak_bytes) c->act_peak_bytes = live;
  }
  tpu_free(born);
  tpu_free(ev);
  return TPU_OK;
}
/* }================================================================== */

tpu_status fe_compile(const fe_plan *p, const tpu_chip_config *chip, fe_compiled **out) {
  *out = NULL;
  const int nkeys = (FE_T_TARGET + 1) * FE_ATT_NPARTS * (p->model->nlayers + 2) + 1;   /* every tensor kind */
  fe_compiled *c = tpu_calloc(1, sizeof *c);
  cstate s = { .p = p, .c = c, .nkeys = nkeys };
  if (c) c->step = tpu_calloc((size_t)p->nsteps + 1, sizeof *c->step);
  s.alias = tpu_malloc((size_t)nkeys * sizeof *s.alias);
  s.last_read = tpu_malloc((size_t)nkeys * sizeof *s.last_read);
  tpu_status st = c && c->step && s.alias && s.last_read ? TPU_OK : TPU_ERR_NOMEM;
  for (int k = 0; !st && k < nkeys; k++) s.alias[k] = k, s.last_read[k] = -1;
  for (int k = 0; !st && k < p->nsteps; k++) {
    c->step[k].kernel = -1;
    const fe_step *x = &p->steps[k];
    if (x->kind == FE_STEP_VIEW) s.alias[key_of(p, x->out)] = resolve(&s, key_of(p, x->in));
  }
  for (int k = 0; !st && k < p->nsteps; k++) {
    fe_tensor r[4];
    const int nr = step_reads(p, &p->steps[k], r);
    for (int y = 0; y < nr; y++) s.last_read[resolve(&s, key_of(p, r[y]))] = k;
  }
  if (!st && chip->compiler_fusion) {
    fuse_stats(&s);
    st = find_kernels(&s);
  }
  for (int k = 0; !st && chip->compiler_implicit_conv && k < p->nsteps; k++)
    if (p->steps[k].kind == FE_STEP_GEMM) implicit_conv(&s, chip, k);
  if (!st) st = plan_memory(&s);
  tpu_free(s.alias);
  tpu_free(s.last_read);
  if (st) { fe_compiled_destroy(c); return st; }
  *out = c;
  return TPU_OK;
}

void fe_compiled_destroy(fe_compiled *c) {
  if (!c) return;
  tpu_free(c->step);
  tpu_free(c->kernels);
  tpu_free(c);
}

int fe_compiled_kernels(const fe_plan *p, const fe_compiled *c) {
  int n = 0;
  for (int k = 0; k < p->nsteps; k++) {
    const fe_step_kind kind = p->steps[k].kind;
    const fe_step_compiled *x = &c->step[k];
    if (kind == FE_STEP_INFEED || kind == FE_STEP_VIEW || kind == FE_STEP_DROPOUT_MASK || x->skip) continue;
    if (x->kernel >= 0 && c->kernels[x->kernel].first != k) continue;   /* counted at its first member */
    n++;
  }
  return n;
}
