/*
** layers.c -- the numerics of training: the matmul backend, initializer,
** forward and backward of every layer, softmax cross-entropy and the
** optimizers. See fe.h for the layout and the data-parallel contract.
**
** Every matmul goes through tpu_fe_gemm(); everything else is plain f32 C in a
** fixed order (so results do not depend on threads). Conv2d is im2col +
** GEMM; its backward recomputes the im2col buffer instead of keeping one per
** layer (memory over time). The step's timing is not here: train_lower.c lowers
** the step into chip-engine programs (tpu_fe_time_step).
*/
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "frontend/fe.h"
#include "vpu/vpu.h"

/* Runs one VPU op (numerics only; the timing model charges its cycles). A
** failure means a shape or hyper-parameter the model checks already
** excluded, or a label out of range. */
static tpu_status vpu(tpu_vpu_op op, int rows, int cols, const float *x, const float *y, float *out) {
  tpu_vpu_args a = { .rows = rows, .cols = cols, .x = x, .y = y, .out = out, .p = tpu_vpu_params_default() };
  return tpu_vpu_exec(op, &a);
}

/* [0, 1) with 24 bits, exact in f32. */
static float unit_f32(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

/* {==================================================================
** Backend
** ================================================================== */
void tpu_fe_scratch_free(tpu_fe_scratch *s) {
  tpu_free(s->buf);
  s->buf = NULL;
  s->cap = 0;
}
static float *scratch_get(tpu_fe_scratch *s, size_t n) {
  if (n > s->cap) {
    float *b = tpu_realloc(s->buf, n * sizeof *b);
    if (!b) return NULL;
    s->buf = b;
    s->cap = n;
  }
  return s->buf;
}
/* dst[c x r] = src[r x c]^T, in 32x32 blocks to stay in cache */
static void transpose(const float *src, int r, int c, float *dst) {
  for (int i0 = 0; i0 < r; i0 += 32)
    for (int j0 = 0; j0 < c; j0 += 32) {
      int i1 = i0 + 32 < r ? i0 + 32 : r, j1 = j0 + 32 < c ? j0 + 32 : c;
      for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++) dst[(size_t)j * (size_t)r + (size_t)i] = src[(size_t)i * (size_t)c + (size_t)j];
    }
}

bool tpu_fe_gemm_swapped(tpu_precision prec, bool ta, bool tb, int M, int N, int K) {
  /* with several bf16 passes the pass order would change with the roles
  ** of A and B (mxu_gemm.c), and with it the bits: swap only for bf16 */
  if (prec != TPU_PREC_BF16) return false;
  const double mk = (double)M * K, kn = (double)K * N, mn = (double)M * N;
  double direct = (ta ? mk : 0) + (tb ? kn : 0), swapped = (tb ? 0 : kn) + (ta ? 0 : mk) + mn;
  return swapped < direct;
}

tpu_status tpu_fe_gemm(const tpu_fe_backend *be, tpu_fe_scratch *s, bool ta, bool tb,
                   int M, int N, int K, const float *A, const float *B, float *C, bool acc) {
  if (be->kind == TPU_FE_BACKEND_REFERENCE) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, acc ? 1.0f : 0.0f, C, N);
    return TPU_OK;
  }
  /* The MXU takes row-major A (M x K) and B (K x N). Transposed operands
  ** are laid out in scratch first -- or, when that is less data, the
  ** product is computed as C^T = op(B)^T . op(A)^T and transposed back.
  ** Both give the same bits: each result is the same exact bf16 products
  ** summed in the same K order. */
  const bool sw = tpu_fe_gemm_swapped(be->prec, ta, tb, M, N, K);
  const float *x = sw ? B : A, *y = sw ? A : B;       /* first and second operand */
  const bool tx = sw ? !tb : ta, ty = sw ? !ta : tb;  /* do they need a transpose? */
  const int R = sw ? N : M, Q = sw ? M : N;           /* result rows x cols */
  size_t nx = tx ? (size_t)R * (size_t)K : 0, ny = ty ? (size_t)K * (size_t)Q : 0;
  size_t nc = (sw || acc) ? (size_t)M * (size_t)N : 0;
  float *buf = scratch_get(s, nx + ny + nc);
  if (!buf && nx + ny + nc) return TPU_ERR_NOMEM;
  /* x is stored R x K when not transposed, else K x R (so is y: K x Q / Q x K) */
  if (tx) { transpose(x, K, R, buf); x = buf; }
  if (ty) { transpose(y, Q, K, buf + nx); y = buf + nx; }
  float *c = nc ? buf + nx + ny : C;
  tpu_status st = tpu_mxu_gemm(&be->mxu, be->mxus, TPU_FIDELITY_TILE, be->prec, R, Q, K, x, y, c, NULL);
  if (st != TPU_OK) return st;
  if (sw && acc) {
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(size_t)i * (size_t)N + (size_t)j] += c[(size_t)j * (size_t)M + (size_t)i];
  } else if (sw) {
    transpose(c, N, M, C);
  } else if (acc) {
    for (size_t i = 0; i < nc; i++) C[i] += c[i];
  }
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Workspace and initializer
** ================================================================== */
tpu_status tpu_fe_ws_create(const tpu_fe_model *m, int rows, tpu_fe_core_ws *ws) {
  memset(ws, 0, sizeof *ws);
  ws->rows = rows;
  size_t r = (size_t)rows;
  ws->act = tpu_calloc((size_t)m->nlayers + 1, sizeof *ws->act);
  ws->mask = tpu_calloc((size_t)m->nlayers, sizeof *ws->mask);
  ws->argmax = tpu_calloc((size_t)m->nlayers, sizeof *ws->argmax);
  if (!ws->act || !ws->mask || !ws->argmax) goto fail;
  ws->act[0] = tpu_malloc(r * tpu_fe_shape_size(m->input) * sizeof(float));
  if (!ws->act[0]) goto fail;
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    size_t out = r * tpu_fe_shape_size(L->out);
    if (!(ws->act[i + 1] = tpu_malloc(out * sizeof(float)))) goto fail;
    if (L->kind == TPU_FE_DROPOUT && !(ws->mask[i] = tpu_malloc(out * sizeof(float)))) goto fail;
    if (L->kind == TPU_FE_MAXPOOL && !(ws->argmax[i] = tpu_malloc(out * sizeof(int)))) goto fail;
  }
  size_t cols = r * (m->max_cols ? m->max_cols : 1);
  ws->cols = tpu_malloc(cols * sizeof(float));
  ws->g0 = tpu_malloc(r * m->max_act * sizeof(float));
  ws->g1 = tpu_malloc(r * m->max_act * sizeof(float));
  ws->grad = tpu_malloc((m->nparams ? m->nparams : 1) * sizeof(float));
  ws->lab = tpu_malloc(r * sizeof *ws->lab);
  ws->rowloss = tpu_malloc(r * sizeof *ws->rowloss);
  if (!ws->cols || !ws->g0 || !ws->g1 || !ws->grad || !ws->lab || !ws->rowloss) goto fail;
  return TPU_OK;
fail:
  tpu_fe_ws_destroy(m, ws);
  return TPU_ERR_NOMEM;
}

void tpu_fe_ws_destroy(const tpu_fe_model *m, tpu_fe_core_ws *ws) {
  if (ws->act) for (int i = 0; i <= m->nlayers; i++) tpu_free(ws->act[i]);
  if (ws->mask) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->mask[i]);
  if (ws->argmax) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->argmax[i]);
  tpu_free(ws->act);
  tpu_free(ws->mask);
  tpu_free(ws->argmax);
  tpu_free(ws->cols);
  tpu_free(ws->g0);
  tpu_free(ws->g1);
  tpu_free(ws->grad);
  tpu_free(ws->lab);
  tpu_free(ws->rowloss);
  tpu_fe_scratch_free(&ws->scratch);
  memset(ws, 0, sizeof *ws);
}

void tpu_fe_params_init(const tpu_fe_model *m, float *params) {
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    if (!L->nw) continue;
    double fan_in, fan_out;
    if (L->kind == TPU_FE_DENSE) { fan_in = L->in.c; fan_out = L->units; }
    else { fan_in = (double)L->kh * L->kw * L->in.c; fan_out = (double)L->kh * L->kw * L->filters; }
    float limit = (float)sqrt(6.0 / (fan_in + fan_out));
    uint64_t key = tpu_mix64(m->seed ^ tpu_mix64((uint64_t)i + 1));
    for (size_t k = 0; k < L->nw; k++)
      params[L->woff + k] = (2.0f * unit_f32(tpu_mix64(key + k)) - 1.0f) * limit;
    memset(params + L->boff, 0, L->nb * sizeof(float));
  }
}
/* }================================================================== */

/* {==================================================================
** Forward
** ================================================================== */
/* Builds the im2col rows of 'rows' samples: row (b, oy, ox) holds the
** receptive field in (ky, kx, c) order, zero where it falls in the padding. */
static void im2col(const tpu_fe_layer *L, int rows, const float *x, float *cols) {
  const int H = L->in.h, W = L->in.w, C = L->in.c, OH = L->out.h, OW = L->out.w;
  const size_t kkc = (size_t)L->kh * (size_t)L->kw * (size_t)C;
  for (int b = 0; b < rows; b++) {
    const float *xb = x + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        float *row = cols + (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * kkc;
        for (int ky = 0; ky < L->kh; ky++) {
          int iy = oy * L->stride + ky - L->pad_top;
          for (int kx = 0; kx < L->kw; kx++) {
            int ix = ox * L->stride + kx - L->pad_left;
            float *dst = row + ((size_t)ky * (size_t)L->kw + (size_t)kx) * (size_t)C;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) memset(dst, 0, (size_t)C * sizeof(float));
            else memcpy(dst, xb + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C, (size_t)C * sizeof(float));
          }
        }
      }
  }
}
/* The adjoint of im2col: adds each column entry back to its input pixel. */
static void col2im(const tpu_fe_layer *L, int rows, const float *cols, float *dx) {
  const int H = L->in.h, W = L->in.w, C = L->in.c, OH = L->out.h, OW = L->out.w;
  const size_t kkc = (size_t)L->kh * (size_t)L->kw * (size_t)C;
  memset(dx, 0, (size_t)rows * (size_t)H * (size_t)W * (size_t)C * sizeof(float));
  for (int b = 0; b < rows; b++) {
    float *xb = dx + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        const float *row = cols + (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * kkc;
        for (int ky = 0; ky < L->kh; ky++) {
          int iy = oy * L->stride + ky - L->pad_top;
          if (iy < 0 || iy >= H) continue;
          for (int kx = 0; kx < L->kw; kx++) {
            int ix = ox * L->stride + kx - L->pad_left;
            if (ix < 0 || ix >= W) continue;
            const float *src = row + ((size_t)ky * (size_t)L->kw + (size_t)kx) * (size_t)C;
            float *d = xb + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C;
            for (int c = 0; c < C; c++) d[c] += src[c];
          }
        }
      }
  }
}

static void pool_forward(const tpu_fe_layer *L, int rows, const float *x, float *y, int *arg) {
  const int H = L->in.h, W = L->in.w, C = L->in.c, OH = L->out.h, OW = L->out.w, P = L->pool;
  const float inv = 1.0f / (float)(P * P);
  for (int b = 0; b < rows; b++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++)
        for (int c = 0; c < C; c++) {
          size_t o = (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * (size_t)C + (size_t)c;
          float best = -INFINITY, sum = 0.0f;
          int bi = -1;
          for (int py = 0; py < P; py++)
            for (int px = 0; px < P; px++) {
              int idx = (((b * H) + oy * L->stride + py) * W + ox * L->stride + px) * C + c;
              float v = x[idx];
              if (bi < 0 || v > best) { best = v; bi = idx; }
              sum += v;
            }
          if (L->kind == TPU_FE_MAXPOOL) { y[o] = best; arg[o] = bi; }
          else y[o] = sum * inv;
        }
}

tpu_status tpu_fe_forward(const tpu_fe_model *m, const tpu_fe_backend *be, const float *params,
                      tpu_fe_core_ws *ws, const float *x, const uint8_t *labels,
                      bool train, uint64_t step, uint64_t first_sample) {
  const int rows = ws->rows;
  tpu_status st;
  memcpy(ws->act[0], x, (size_t)rows * tpu_fe_shape_size(m->input) * sizeof(float));
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    const float *in = ws->act[i];
    float *out = ws->act[i + 1];
    const size_t n_in = (size_t)rows * tpu_fe_shape_size(L->in);
    switch (L->kind) {
    case TPU_FE_DENSE:
      if ((st = tpu_fe_gemm(be, &ws->scratch, false, false, rows, L->units, L->in.c, in,
                        params + L->woff, out, false))) return st;
      if ((st = vpu(TPU_VPU_BIAS_ADD, rows, L->units, out, params + L->boff, out))) return st;
      break;
    case TPU_FE_CONV2D: {
      int Mrows = rows * L->out.h * L->out.w, K = L->kh * L->kw * L->in.c;
      im2col(L, rows, in, ws->cols);
      if ((st = tpu_fe_gemm(be, &ws->scratch, false, false, Mrows, L->filters, K, ws->cols,
                        params + L->woff, out, false))) return st;
      if ((st = vpu(TPU_VPU_BIAS_ADD, Mrows, L->filters, out, params + L->boff, out))) return st;
      break;
    }
    case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL:
      pool_forward(L, rows, in, out, ws->argmax[i]);
      break;
    case TPU_FE_FLATTEN:
      memcpy(out, in, n_in * sizeof(float));
      break;
    case TPU_FE_RELU: case TPU_FE_TANH: case TPU_FE_SIGMOID: {
      tpu_vpu_op op = L->kind == TPU_FE_RELU ? TPU_VPU_RELU : L->kind == TPU_FE_TANH ? TPU_VPU_TANH : TPU_VPU_SIGMOID;
      if ((st = vpu(op, rows, (int)tpu_fe_shape_size(L->out), in, NULL, out))) return st;
      break;
    }
    case TPU_FE_DROPOUT:
      if (!train || L->rate == 0.0) { memcpy(out, in, n_in * sizeof(float)); break; }
      {
        const float keep = (float)(1.0 - L->rate), scale = 1.0f / keep;
        const size_t per = tpu_fe_shape_size(L->in);
        for (int b = 0; b < rows; b++) {
          uint64_t key = tpu_mix64(tpu_mix64(tpu_mix64(m->seed ^ 0xd50u) + step) ^
                                  tpu_mix64((first_sample + (uint64_t)b) * 64u + (uint64_t)i));
          for (size_t e = 0; e < per; e++)
            ws->mask[i][(size_t)b * per + e] = unit_f32(tpu_mix64(key + e)) < keep ? scale : 0.0f;
        }
        if ((st = vpu(TPU_VPU_MUL, rows, (int)per, in, ws->mask[i], out))) return st;
      }
      break;
    default:
      return TPU_ERR_CONFIG;
    }
  }
  /* softmax cross-entropy and accuracy on the VPU, summed in row order */
  ws->loss_sum = 0.0;
  ws->correct = 0;
  if (!labels) return TPU_OK;
  const int ncls = m->layers[m->nlayers - 1].out.c;
  for (int b = 0; b < rows; b++) ws->lab[b] = labels[b];
  float hits = 0.0f;
  tpu_vpu_args a = { .rows = rows, .cols = ncls, .x = ws->act[m->nlayers], .labels = ws->lab,
                     .out = ws->rowloss, .p = tpu_vpu_params_default() };
  if ((st = tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &a))) return st;
  for (int b = 0; b < rows; b++) ws->loss_sum += (double)ws->rowloss[b];
  a.out = &hits;
  if ((st = tpu_vpu_exec(TPU_VPU_ACCURACY, &a))) return st;
  ws->correct = (int)hits;
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Backward
** ================================================================== */
tpu_status tpu_fe_backward(const tpu_fe_model *m, const tpu_fe_backend *be, const float *params,
                       tpu_fe_core_ws *ws, const uint8_t *labels, int global_batch) {
  const int rows = ws->rows;
  const int ncls = m->layers[m->nlayers - 1].out.c;
  const float inv = 1.0f / (float)global_batch;
  float *g = ws->g0, *gn = ws->g1;
  tpu_status st;
  for (int b = 0; b < rows; b++) ws->lab[b] = labels[b];
  tpu_vpu_args a = { .rows = rows, .cols = ncls, .x = ws->act[m->nlayers], .labels = ws->lab,
                     .out = ws->rowloss, .out2 = g, .p = tpu_vpu_params_default() };
  a.p.alpha = inv;
  if ((st = tpu_vpu_exec(TPU_VPU_SOFTMAX_XENT, &a))) return st;
  for (int i = m->nlayers - 1; i >= 0; i--) {
    const tpu_fe_layer *L = &m->layers[i];
    const float *in = ws->act[i], *out = ws->act[i + 1];
    const size_t n_in = (size_t)rows * tpu_fe_shape_size(L->in), n_out = (size_t)rows * tpu_fe_shape_size(L->out);
    const bool need_dx = i > 0;
    switch (L->kind) {
    case TPU_FE_DENSE:
      if ((st = tpu_fe_gemm(be, &ws->scratch, true, false, L->in.c, L->units, rows, in, g,
                        ws->grad + L->woff, false))) return st;
      if ((st = vpu(TPU_VPU_COL_SUM, rows, L->units, g, NULL, ws->grad + L->boff))) return st;
      if (need_dx && (st = tpu_fe_gemm(be, &ws->scratch, false, true, rows, L->in.c, L->units, g,
                                   params + L->woff, gn, false))) return st;
      break;
    case TPU_FE_CONV2D: {
      int Mrows = rows * L->out.h * L->out.w, K = L->kh * L->kw * L->in.c;
      im2col(L, rows, in, ws->cols);
      if ((st = tpu_fe_gemm(be, &ws->scratch, true, false, K, L->filters, Mrows, ws->cols, g,
                        ws->grad + L->woff, false))) return st;
      if ((st = vpu(TPU_VPU_COL_SUM, Mrows, L->filters, g, NULL, ws->grad + L->boff))) return st;
      if (need_dx) {
        if ((st = tpu_fe_gemm(be, &ws->scratch, false, true, Mrows, K, L->filters, g,
                          params + L->woff, ws->cols, false))) return st;
        col2im(L, rows, ws->cols, gn);
      }
      break;
    }
    case TPU_FE_MAXPOOL:
      memset(gn, 0, n_in * sizeof(float));
      for (size_t k = 0; k < n_out; k++) gn[ws->argmax[i][k]] += g[k];
      break;
    case TPU_FE_AVGPOOL: {
      const int H = L->in.h, W = L->in.w, C = L->in.c, OH = L->out.h, OW = L->out.w, P = L->pool;
      const float inv_area = 1.0f / (float)(P * P);
      memset(gn, 0, n_in * sizeof(float));
      for (int b = 0; b < rows; b++)
        for (int oy = 0; oy < OH; oy++)
          for (int ox = 0; ox < OW; ox++)
            for (int c = 0; c < C; c++) {
              float v = g[(((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * (size_t)C + (size_t)c] * inv_area;
              for (int py = 0; py < P; py++)
                for (int px = 0; px < P; px++)
                  gn[(((b * H) + oy * L->stride + py) * W + ox * L->stride + px) * C + c] += v;
            }
      break;
    }
    case TPU_FE_FLATTEN:
      memcpy(gn, g, n_in * sizeof(float));
      break;
    case TPU_FE_RELU:     /* relu_grad looks at the forward input */
      if ((st = vpu(TPU_VPU_RELU_GRAD, rows, (int)tpu_fe_shape_size(L->in), in, g, gn))) return st;
      break;
    case TPU_FE_TANH: case TPU_FE_SIGMOID:   /* these look at the forward output */
      if ((st = vpu(L->kind == TPU_FE_TANH ? TPU_VPU_TANH_GRAD : TPU_VPU_SIGMOID_GRAD, rows,
                    (int)tpu_fe_shape_size(L->in), out, g, gn))) return st;
      break;
    case TPU_FE_DROPOUT:
      if (L->rate == 0.0) memcpy(gn, g, n_in * sizeof(float));
      else if ((st = vpu(TPU_VPU_MUL, rows, (int)tpu_fe_shape_size(L->in), g, ws->mask[i], gn))) return st;
      break;
    default:
      return TPU_ERR_CONFIG;
    }
    float *t = g; g = gn; gn = t;
  }
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Optimizers (Keras' update rules)
** ================================================================== */
tpu_status tpu_fe_opt_create(const tpu_fe_model *m, tpu_fe_opt_state *s) {
  memset(s, 0, sizeof *s);
  size_t n = m->nparams ? m->nparams : 1;
  if (m->opt.kind != TPU_FE_SGD && !(s->m = tpu_calloc(n, sizeof(float)))) return TPU_ERR_NOMEM;
  if (m->opt.kind == TPU_FE_ADAM && !(s->v = tpu_calloc(n, sizeof(float)))) {
    tpu_fe_opt_destroy(s);
    return TPU_ERR_NOMEM;
  }
  return TPU_OK;
}
void tpu_fe_opt_destroy(tpu_fe_opt_state *s) {
  tpu_free(s->m);
  tpu_free(s->v);
  memset(s, 0, sizeof *s);
}

void tpu_fe_opt_apply(const tpu_fe_model *m, tpu_fe_opt_state *s, float *p, const float *g) {
  const tpu_fe_optimizer *o = &m->opt;
  s->t++;
  tpu_vpu_args a = { .rows = 1, .cols = (int)m->nparams, .param = p, .grad = g, .m = s->m, .v = s->v,
                     .p = tpu_vpu_params_default() };
  a.p.lr = (float)o->lr;
  a.p.momentum = (float)o->momentum;
  a.p.beta1 = (float)o->beta1;
  a.p.beta2 = (float)o->beta2;
  a.p.eps = (float)o->eps;
  a.p.step = (int64_t)s->t;
  /* the model loader checked every hyper-parameter against the VPU's ranges */
  tpu_status st = tpu_vpu_exec(o->kind == TPU_FE_SGD ? TPU_VPU_SGD : o->kind == TPU_FE_MOMENTUM ? TPU_VPU_MOMENTUM
                                                                                         : TPU_VPU_ADAM, &a);
  assert(st == TPU_OK);
  (void)st;
}
/* }================================================================== */
