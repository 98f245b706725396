/*
** layers.c -- the value path of training: the matmul backend (fe_gemm),
** the initializer, the executor that runs a step plan's forward, loss and
** backward steps on one core's workspace, the data movement (im2col,
** col2im, pools, dropout masks) and the optimizers. fe_int.h describes the
** plan (frontend/plan.c builds it); fe.h the data-parallel contract.
**
** Every GEMM step goes through fe_gemm(), every VPU step through
** tpu_vpu_exec(); data movement (and the depthwise kernels' expansion to
** their block-diagonal GEMM operand, fe_int.h) is plain C in a fixed order
** (so results do not depend on threads). The step's timing is not here:
** train_lower.c lowers the same plan into chip-engine programs
** (tpu_fe_time_step).
*/
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "frontend/fe_int.h"

/* [0, 1) with 24 bits, exact in f32. */
static float unit_f32(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

/* {==================================================================
** Backend
** ================================================================== */
void fe_scratch_free(fe_scratch *s) {
  tpu_free(s->buf);
  s->buf = NULL;
  s->cap = 0;
}
static float *scratch_get(fe_scratch *s, size_t n) {
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

bool fe_gemm_swapped(tpu_precision prec, bool ta, bool tb, int M, int N, int K) {
  /* with several bf16 passes the pass order would change with the roles
  ** of A and B (mxu_gemm.c), and with it the bits: swap only for bf16 */
  if (prec != TPU_PREC_BF16) return false;
  const double mk = (double)M * K, kn = (double)K * N, mn = (double)M * N;
  double direct = (ta ? mk : 0) + (tb ? kn : 0), swapped = (tb ? 0 : kn) + (ta ? 0 : mk) + mn;
  return swapped < direct;
}

static fe_gemm_observer gemm_observer;
static void *gemm_observer_ud;
void fe_gemm_observe(fe_gemm_observer fn, void *ud) {
  gemm_observer = fn;
  gemm_observer_ud = ud;
}

tpu_status fe_gemm(const tpu_fe_backend *be, fe_scratch *s, bool ta, bool tb,
                   int M, int N, int K, const float *A, const float *B, float *C, bool acc) {
  if (gemm_observer) {
    const bool sw = be->kind == TPU_FE_BACKEND_SIM && fe_gemm_swapped(be->prec, ta, tb, M, N, K);
    gemm_observer(gemm_observer_ud, &(fe_gemm_call){ .M = M, .N = N, .K = K, .ta = ta, .tb = tb, .acc = acc,
                                                     .swapped = sw, .prec = be->prec });
  }
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
  const bool sw = fe_gemm_swapped(be->prec, ta, tb, M, N, K);
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
tpu_status fe_ws_create(const tpu_fe_model *m, int rows, fe_core_ws *ws) {
  memset(ws, 0, sizeof *ws);
  ws->rows = rows;
  size_t r = (size_t)rows;
  ws->act = tpu_calloc((size_t)m->nlayers + 1, sizeof *ws->act);
  ws->dact = tpu_calloc((size_t)m->nlayers + 1, sizeof *ws->dact);
  ws->mask = tpu_calloc((size_t)m->nlayers, sizeof *ws->mask);
  ws->argmax = tpu_calloc((size_t)m->nlayers, sizeof *ws->argmax);
  ws->mid = tpu_calloc((size_t)m->nlayers, sizeof *ws->mid);
  ws->dmid = tpu_calloc((size_t)m->nlayers, sizeof *ws->dmid);
  ws->att = tpu_calloc((size_t)m->nlayers, sizeof *ws->att);
  ws->datt = tpu_calloc((size_t)m->nlayers, sizeof *ws->datt);
  if (!ws->act || !ws->dact || !ws->mask || !ws->argmax || !ws->mid || !ws->dmid || !ws->att || !ws->datt) goto fail;
  ws->act[0] = tpu_malloc(r * tpu_fe_shape_size(m->input) * sizeof(float));
  if (!ws->act[0]) goto fail;
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    size_t out = r * tpu_fe_shape_size(L->out);
    if (!(ws->act[i + 1] = tpu_malloc(out * sizeof(float)))) goto fail;
    if (!(ws->dact[i + 1] = tpu_malloc(out * sizeof(float)))) goto fail;
    if (L->kind == TPU_FE_DROPOUT && !(ws->mask[i] = tpu_malloc(out * sizeof(float)))) goto fail;
    if (L->kind == TPU_FE_MHA) {   /* its parts, their gradients and the attention weights' dropout mask */
      size_t all = 0;
      for (int q = 0; q < FE_ATT_NPARTS; q++) all += r * fe_att_elems(L, q);
      if (!(ws->att[i] = tpu_malloc(all * sizeof(float))) || !(ws->datt[i] = tpu_malloc(all * sizeof(float))))
        goto fail;
      if (L->rate > 0 && !(ws->mask[i] = tpu_malloc(r * fe_att_elems(L, FE_ATT_P) * sizeof(float)))) goto fail;
    }
    if (L->kind == TPU_FE_MAXPOOL && !(ws->argmax[i] = tpu_malloc(out * sizeof(int)))) goto fail;
    if (L->kind == TPU_FE_SEPARABLE) {   /* the depthwise half's output */
      const size_t mid = r * (size_t)L->out.h * (size_t)L->out.w * (size_t)L->in.c * (size_t)L->depth_multiplier;
      if (!(ws->mid[i] = tpu_malloc(mid * sizeof(float))) || !(ws->dmid[i] = tpu_malloc(mid * sizeof(float))))
        goto fail;
    }
  }
  if (m->max_wx && !(ws->wx = tpu_malloc(m->max_wx * sizeof(float)))) goto fail;
  size_t cols = r * (m->max_cols ? m->max_cols : 1);
  ws->cols = tpu_malloc(cols * sizeof(float));
  ws->dtmp = tpu_malloc(r * m->max_act * sizeof(float));
  ws->grad = tpu_calloc(m->nparams ? m->nparams : 1, sizeof(float));   /* non-trainable slots stay 0 */
  if (m->nstate && !(ws->stat = tpu_calloc(m->nparams, sizeof(float)))) goto fail;
  /* loss rows a sample: its tokens' (the next-token loss); each output's
  ** per-sample loss, then a mean-squared-error target (several outputs) */
  const size_t per = m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT ? (size_t)m->input.c : 1;
  const size_t nrow = (size_t)(m->nout > 1 ? m->nout : 1) + 1;
  ws->lab = tpu_malloc(r * per * sizeof *ws->lab);
  ws->rowloss = tpu_malloc(r * (per > nrow ? per : nrow) * sizeof *ws->rowloss);
  if (!ws->cols || !ws->dtmp || !ws->grad || !ws->lab || !ws->rowloss) goto fail;
  return TPU_OK;
fail:
  fe_ws_destroy(m, ws);
  return TPU_ERR_NOMEM;
}

void fe_ws_destroy(const tpu_fe_model *m, fe_core_ws *ws) {
  if (ws->act) for (int i = 0; i <= m->nlayers; i++) tpu_free(ws->act[i]);
  if (ws->dact) for (int i = 0; i <= m->nlayers; i++) tpu_free(ws->dact[i]);
  if (ws->mask) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->mask[i]);
  if (ws->argmax) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->argmax[i]);
  if (ws->mid) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->mid[i]);
  if (ws->dmid) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->dmid[i]);
  if (ws->att) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->att[i]);
  if (ws->datt) for (int i = 0; i < m->nlayers; i++) tpu_free(ws->datt[i]);
  void *bufs[] = { ws->act, ws->dact, ws->mask, ws->argmax, ws->mid, ws->dmid, ws->att, ws->datt, ws->cols, ws->dtmp,
                   ws->grad,
                   ws->stat, ws->wx, ws->lab, ws->rowloss };
  for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) tpu_free(bufs[k]);
  fe_scratch_free(&ws->scratch);
  memset(ws, 0, sizeof *ws);
}

/* Glorot-uniform weights w[0..n) of layer i's kernel 'which' (1, or 2 for
** separable_conv2d's pointwise) from the seed. */
static void glorot(const tpu_fe_model *m, int i, int which, float *w, size_t n, double fan_in, double fan_out) {
  const float limit = (float)sqrt(6.0 / (fan_in + fan_out));
  uint64_t key = tpu_mix64(m->seed ^ tpu_mix64((uint64_t)i + 1));
  if (which > 1) key = tpu_mix64(key ^ (uint64_t)which);
  for (size_t k = 0; k < n; k++) w[k] = (2.0f * unit_f32(tpu_mix64(key + k)) - 1.0f) * limit;
}

void fe_params_init(const tpu_fe_model *m, float *params) {
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    if (L->kind == TPU_FE_BATCHNORM || L->kind == TPU_FE_LAYERNORM) {   /* Keras: gamma 1, beta 0, moving
                                                                        ** mean 0, moving variance 1 */
      for (size_t k = 0; k < L->nw; k++) params[L->woff + k] = 1.0f;
      memset(params + L->boff, 0, L->nb * sizeof(float));
      for (size_t k = 0; k < L->ns; k++) params[L->soff + k] = k < L->ns / 2 ? 0.0f : 1.0f;
      continue;
    }
    if (L->kind == TPU_FE_NORMALIZATION) {   /* Keras' adapted weights before adapt(): mean 0, variance 1,
                                             ** count 0 */
      for (size_t k = 0; k < L->ns; k++) params[L->soff + k] = k >= L->ns / 2 && k + 1 < L->ns ? 1.0f : 0.0f;
      continue;
    }
    if (!L->nw) continue;
    if (L->kind == TPU_FE_EMBEDDING) {   /* Keras' Embedding: uniform in [-0.05, 0.05) */
      uint64_t key = tpu_mix64(m->seed ^ tpu_mix64((uint64_t)i + 1));
      for (size_t k = 0; k < L->nw; k++) params[L->woff + k] = (2.0f * unit_f32(tpu_mix64(key + k)) - 1.0f) * 0.05f;
      continue;
    }
    if (L->kind == TPU_FE_CLASS_TOKEN) {   /* zeros, as torchvision's and the ViT paper's code */
      memset(params + L->woff, 0, L->nw * sizeof(float));
      continue;
    }
    if (L->kind == TPU_FE_POS_EMBEDDING) {   /* Glorot-uniform over max_length x C, as keras_hub's */
      glorot(m, i, 1, params + L->woff, L->nw, L->max_length, L->in.c);
      continue;
    }
    if (L->kind == TPU_FE_MHA) {   /* Keras' fans of the kernels (C, H, d) and (H, dv, C): the last
                                   ** two dimensions times the product of the others */
      const double C = L->in.c, H = L->num_heads, d = L->key_dim, dv = L->value_dim;
      const double fin[4] = { H * C, H * C, H * C, dv * H }, fout[4] = { d * C, d * C, dv * C, C * H };
      for (int q = 0; q < 4; q++)
        glorot(m, i, q + 1, params + L->woff + fe_att_woff(L, q),
               (q < 3 ? fe_att_woff(L, q + 1) : L->nw) - fe_att_woff(L, q), fin[q], fout[q]);
      memset(params + L->boff, 0, L->nb * sizeof(float));
      continue;
    }
    /* Keras' fans: a conv kernel kh x kw x in x out has fan_in kh*kw*in and
    ** fan_out kh*kw*out (a depthwise kernel: out = depth_multiplier) */
    const double taps = (double)L->kh * L->kw;
    double fan_in, fan_out;
    if (L->kind == TPU_FE_DENSE) { fan_in = L->in.c; fan_out = L->units; }
    else if (L->kind == TPU_FE_CONV2D) {   /* grouped: kh x kw x C/G x F */
      fan_in = taps * L->in.c / (L->groups > 1 ? L->groups : 1);
      fan_out = taps * L->filters;
    }
    else { fan_in = taps * L->in.c; fan_out = taps * L->depth_multiplier; }
    const size_t n1 = L->nw - L->nw2;   /* the (depthwise) kernel; separable's pointwise follows */
    glorot(m, i, 1, params + L->woff, n1, fan_in, fan_out);
    if (L->nw2) glorot(m, i, 2, params + L->woff + n1, L->nw2, (double)L->in.c * L->depth_multiplier, L->filters);
    memset(params + L->boff, 0, L->nb * sizeof(float));
  }
}
/* }================================================================== */

/* {==================================================================
** Data movement: im2col, col2im, pooling, dropout masks
** ================================================================== */
/* Builds the im2col rows of 'rows' samples: row (b, oy, ox) holds the
** receptive field in (ky, kx, c) order, zero where it falls in the padding. */
static void im2col(const fe_window *w, int rows, const float *x, float *cols) {
  const int H = w->h, W = w->w, C = w->c, OH = w->oh, OW = w->ow;
  const size_t kkc = (size_t)w->kh * (size_t)w->kw * (size_t)C;
  for (int b = 0; b < rows; b++) {
    const float *xb = x + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        float *row = cols + (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * kkc;
        for (int ky = 0; ky < w->kh; ky++) {
          int iy = oy * w->stride + ky - w->pad_top;
          for (int kx = 0; kx < w->kw; kx++) {
            int ix = ox * w->stride + kx - w->pad_left;
            float *dst = row + ((size_t)ky * (size_t)w->kw + (size_t)kx) * (size_t)C;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) memset(dst, 0, (size_t)C * sizeof(float));
            else memcpy(dst, xb + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C, (size_t)C * sizeof(float));
          }
        }
      }
  }
}
/* The adjoint of im2col: adds each column entry back to its input pixel. */
static void col2im(const fe_window *w, int rows, const float *cols, float *dx) {
  const int H = w->h, W = w->w, C = w->c, OH = w->oh, OW = w->ow;
  const size_t kkc = (size_t)w->kh * (size_t)w->kw * (size_t)C;
  memset(dx, 0, (size_t)rows * (size_t)H * (size_t)W * (size_t)C * sizeof(float));
  for (int b = 0; b < rows; b++) {
    float *xb = dx + (size_t)b * (size_t)H * (size_t)W * (size_t)C;
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        const float *row = cols + (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * kkc;
        for (int ky = 0; ky < w->kh; ky++) {
          int iy = oy * w->stride + ky - w->pad_top;
          if (iy < 0 || iy >= H) continue;
          for (int kx = 0; kx < w->kw; kx++) {
            int ix = ox * w->stride + kx - w->pad_left;
            if (ix < 0 || ix >= W) continue;
            const float *src = row + ((size_t)ky * (size_t)w->kw + (size_t)kx) * (size_t)C;
            float *d = xb + ((size_t)iy * (size_t)W + (size_t)ix) * (size_t)C;
            for (int c = 0; c < C; c++) d[c] += src[c];
          }
        }
      }
  }
}

/* Pools (kh x kw windows; global_avgpool's is the whole input; 'same'
** padding offsets them by pad_top/pad_left): the flat input index of tap
** (py, px) of output (b, oy, ox, c), or -1 in the padding, which max
** ignores and avg leaves out of the count (as TensorFlow). */
static int pool_tap(const fe_window *w, int b, int oy, int ox, int py, int px, int c) {
  const int iy = oy * w->stride + py - w->pad_top, ix = ox * w->stride + px - w->pad_left;
  if (iy < 0 || iy >= w->h || ix < 0 || ix >= w->w) return -1;
  return (((b * w->h) + iy) * w->w + ix) * w->c + c;
}
/* Taps of output (oy, ox) inside the input. */
static int pool_count(const fe_window *w, int oy, int ox) {
  int n = 0;
  for (int py = 0; py < w->kh; py++)
    for (int px = 0; px < w->kw; px++) n += pool_tap(w, 0, oy, ox, py, px, 0) >= 0;
  return n;
}
static void pool_forward(const fe_window *w, bool max, int rows, const float *x, float *y, int *arg) {
  const int OH = w->oh, OW = w->ow, C = w->c, PH = w->kh, PW = w->kw;
  for (int b = 0; b < rows; b++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        const float inv = 1.0f / (float)pool_count(w, oy, ox);
        for (int c = 0; c < C; c++) {
          size_t o = (((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * (size_t)C + (size_t)c;
          float best = -INFINITY, sum = 0.0f;
          int bi = -1;
          for (int py = 0; py < PH; py++)
            for (int px = 0; px < PW; px++) {
              int idx = pool_tap(w, b, oy, ox, py, px, c);
              if (idx < 0) continue;
              float v = x[idx];
              if (bi < 0 || v > best) { best = v; bi = idx; }
              sum += v;
            }
          if (max) { y[o] = best; arg[o] = bi; }
          else y[o] = sum * inv;
        }
      }
}
/* Max: the gradient goes to each window's winner; avg: spread evenly over
** the taps inside the input. */
static void pool_backward(const fe_window *w, bool max, int rows, const float *g, const int *arg, float *gn) {
  const int OH = w->oh, OW = w->ow, C = w->c, PH = w->kh, PW = w->kw;
  const size_t n_out = (size_t)rows * (size_t)OH * (size_t)OW * (size_t)C;
  memset(gn, 0, (size_t)rows * (size_t)w->h * (size_t)w->w * (size_t)C * sizeof(float));
  if (max) {
    for (size_t k = 0; k < n_out; k++) gn[arg[k]] += g[k];
    return;
  }
  for (int b = 0; b < rows; b++)
    for (int oy = 0; oy < OH; oy++)
      for (int ox = 0; ox < OW; ox++) {
        const float inv_area = 1.0f / (float)pool_count(w, oy, ox);
        for (int c = 0; c < C; c++) {
          float v = g[(((size_t)b * (size_t)OH + (size_t)oy) * (size_t)OW + (size_t)ox) * (size_t)C + (size_t)c] * inv_area;
          for (int py = 0; py < PH; py++)
            for (int px = 0; px < PW; px++) {
              int idx = pool_tap(w, b, oy, ox, py, px, c);
              if (idx >= 0) gn[idx] += v;
            }
        }
      }
}

/* Dropout keeps an element with probability 1 - rate and scales it by
** 1/(1 - rate); the mask is a hash of (seed, step, layer, global sample,
** element), so it does not depend on how the batch is split. */
static void dropout_mask(const tpu_fe_model *m, int layer, int rows, uint64_t step, uint64_t first_sample,
                         float *mask) {
  const tpu_fe_layer *L = &m->layers[layer];
  const float keep = (float)(1.0 - L->rate), scale = 1.0f / keep;
  const size_t per = L->kind == TPU_FE_MHA ? fe_att_elems(L, FE_ATT_P) : tpu_fe_shape_size(L->in);
  for (int b = 0; b < rows; b++) {
    uint64_t key = tpu_mix64(tpu_mix64(tpu_mix64(m->seed ^ 0xd50u) + step) ^
                            tpu_mix64((first_sample + (uint64_t)b) * 64u + (uint64_t)layer));
    for (size_t e = 0; e < per; e++)
      mask[(size_t)b * per + e] = unit_f32(tpu_mix64(key + (L->per_sample ? 0 : e))) < keep ? scale : 0.0f;
  }
}
/* }================================================================== */

/* {==================================================================
** batch_normalization over R pixels x C channels (Keras' BatchNormalization
** on the last axis): sums in f64, pixel order, per channel
** ================================================================== */
typedef struct bn_chan { double mean, inv, g, beta; } bn_chan;
/* Channel c's statistics (training: this core's batch, kept in stat; else
** the moving ones) and its gamma, beta. */
static bn_chan bn_channel(const tpu_fe_layer *l, bool train, int64_t R, int c, const float *params, float *stat,
                          const float *x) {
  const int C = l->out.c;
  double mean, var;
  if (train) {
    double s = 0.0, q = 0.0;
    for (int64_t r = 0; r < R; r++) s += x[r * C + c];
    mean = s / (double)R;
    for (int64_t r = 0; r < R; r++) q += (x[r * C + c] - mean) * (x[r * C + c] - mean);
    var = q / (double)R;   /* biased, as Keras' moments() */
    stat[l->soff + (size_t)c] = (float)mean;
    stat[l->soff + (size_t)C + (size_t)c] = (float)var;
  } else {
    mean = params[l->soff + (size_t)c];
    var = params[l->soff + (size_t)C + (size_t)c];
  }
  return (bn_chan){ mean, 1.0 / sqrt(var + l->epsilon), l->nw ? params[l->woff + (size_t)c] : 1.0,
                    l->nb ? params[l->boff + (size_t)c] : 0.0 };
}

static void bn_forward(const tpu_fe_layer *l, bool train, int64_t R, const float *params, float *stat,
                       const float *x, float *y) {
  const int C = l->out.c;
  for (int c = 0; c < C; c++) {
    const bn_chan k = bn_channel(l, train, R, c, params, stat, x);
    for (int64_t r = 0; r < R; r++) y[r * C + c] = (float)((x[r * C + c] - k.mean) * k.inv * k.g + k.beta);
  }
}

/* From dY: dgamma = sum dY.xhat, dbeta = sum dY into grad; dX (when not
** NULL) = gamma.inv/R (R.dY - dbeta - xhat.dgamma), with the batch
** statistics of the forward. */
static void bn_backward(const tpu_fe_layer *l, int64_t R, const float *params, const float *stat, const float *x,
                        const float *dy, float *grad, float *dx) {
  const int C = l->out.c;
  for (int c = 0; c < C; c++) {
    const double mean = stat[l->soff + (size_t)c], inv = 1.0 / sqrt(stat[l->soff + (size_t)C + (size_t)c] + l->epsilon);
    const double g = l->nw ? params[l->woff + (size_t)c] : 1.0;
    double db = 0.0, dg = 0.0;
    for (int64_t r = 0; r < R; r++) {
      db += dy[r * C + c];
      dg += dy[r * C + c] * (x[r * C + c] - mean) * inv;
    }
    if (l->nw) grad[l->woff + (size_t)c] = (float)dg;
    if (l->nb) grad[l->boff + (size_t)c] = (float)db;
    if (dx)
      for (int64_t r = 0; r < R; r++)
        dx[r * C + c] = (float)(g * inv / (double)R *
                                ((double)R * dy[r * C + c] - db - (x[r * C + c] - mean) * inv * dg));
  }
}
/* }================================================================== */

/* {==================================================================
** layer_normalization over R rows x C channels (Keras' LayerNormalization
** on the last axis): each row's mean and biased variance in f64, channel
** order; the backward recomputes them from the forward input
** ================================================================== */
static void ln_row(const float *x, int C, double eps, double *mean, double *inv) {
  double s = 0.0, q = 0.0;
  for (int c = 0; c < C; c++) s += x[c];
  *mean = s / C;
  for (int c = 0; c < C; c++) q += (x[c] - *mean) * (x[c] - *mean);
  *inv = 1.0 / sqrt(q / C + eps);
}

static void ln_forward(const tpu_fe_layer *l, int64_t R, const float *params, const float *x, float *y) {
  const int C = l->out.c;
  for (int64_t r = 0; r < R; r++) {
    double mean, inv;
    ln_row(x + r * C, C, l->epsilon, &mean, &inv);
    for (int c = 0; c < C; c++) {
      const double g = l->nw ? params[l->woff + (size_t)c] : 1.0, b = l->nb ? params[l->boff + (size_t)c] : 0.0;
      y[r * C + c] = (float)((x[r * C + c] - mean) * inv * g + b);
    }
  }
}

/* dgamma = sum over rows of dY.xhat, dbeta = sum of dY (f64, row order)
** into grad; dX (when not NULL) = inv/C (C.g.dY - sum(g.dY) - xhat.sum(g.dY.xhat))
** per row. TPU_ERR_NOMEM (its C-wide sums), or TPU_OK. */
static tpu_status ln_backward(const tpu_fe_layer *l, int64_t R, const float *params, const float *x, const float *dy,
                        float *grad, float *dx) {
  const int C = l->out.c;
  double *dg = tpu_calloc(2 * (size_t)C, sizeof *dg);
  if (!dg) return TPU_ERR_NOMEM;
  double *db = dg + C;
  for (int64_t r = 0; r < R; r++) {
    double mean, inv, s1 = 0.0, s2 = 0.0;
    const float *xr = x + r * C, *dr = dy + r * C;
    ln_row(xr, C, l->epsilon, &mean, &inv);
    for (int c = 0; c < C; c++) {
      const double xh = (xr[c] - mean) * inv, gd = dr[c] * (l->nw ? params[l->woff + (size_t)c] : 1.0);
      dg[c] += dr[c] * xh;
      db[c] += dr[c];
      s1 += gd;
      s2 += gd * xh;
    }
    if (dx)
      for (int c = 0; c < C; c++) {
        const double xh = (xr[c] - mean) * inv, gd = dr[c] * (l->nw ? params[l->woff + (size_t)c] : 1.0);
        dx[r * C + c] = (float)(inv / C * (C * gd - s1 - xh * s2));
      }
  }
  for (int c = 0; c < C; c++) {
    if (l->nw) grad[l->woff + (size_t)c] = (float)dg[c];
    if (l->nb) grad[l->boff + (size_t)c] = (float)db[c];
  }
  tpu_free(dg);
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** The plan's executor: forward and backward of one core
** ================================================================== */
typedef struct exec {
  const fe_plan *p;
  const tpu_fe_backend *be;
  const float *params;
  fe_core_ws *ws;
  const float *x;              /* the shard */
  const int32_t *labels;
  uint64_t step, first_sample; /* dropout keys */
  float hits;                  /* accuracy's result */
} exec;

/* multi_head_attention's part q in a layer's buffer of parts, each for
** the workspace's rows. */
static float *att_part(const fe_core_ws *ws, const tpu_fe_layer *L, float *buf, int q) {
  size_t off = 0;
  for (int k = 0; k < q; k++) off += (size_t)ws->rows * fe_att_elems(L, k);
  return buf + off;
}

/* Where a tensor of the plan lives in this core's workspace. */
static float *tensor_of(exec *e, fe_tensor t) {
  const tpu_fe_model *m = e->p->model;
  fe_core_ws *ws = e->ws;
  const tpu_fe_layer *L = t.layer >= 0 && t.layer < m->nlayers ? &m->layers[t.layer] : NULL;
  const bool mha = L && L->kind == TPU_FE_MHA;
  const size_t wo = mha ? fe_att_woff(L, t.part) : 0, bo = mha ? fe_att_boff(L, t.part) : 0;
  switch (t.kind) {
  case FE_T_ACT: return ws->act[t.layer];
  case FE_T_DACT: return ws->dact[t.layer];
  case FE_T_DTMP: return ws->dtmp;
  case FE_T_W: return (float *)e->params + L->woff + wo;
  case FE_T_B: return (float *)e->params + L->boff + bo;
  case FE_T_DW: return ws->grad + L->woff + wo;
  case FE_T_DB: return ws->grad + L->boff + bo;
  case FE_T_ATT: return att_part(ws, L, ws->att[t.layer], t.part);
  case FE_T_DATT: return att_part(ws, L, ws->datt[t.layer], t.part);
  case FE_T_COLS: return ws->cols;
  case FE_T_W2: return (float *)e->params + L->woff + (L->nw - L->nw2);
  case FE_T_DW2: return ws->grad + L->woff + (L->nw - L->nw2);
  case FE_T_WX: case FE_T_DWX: return ws->wx;
  case FE_T_MID: return ws->mid[t.layer];
  case FE_T_DMID: return ws->dmid[t.layer];
  case FE_T_MASK: return ws->mask[t.layer];
  case FE_T_LOSS: return ws->rowloss + (size_t)t.part * (size_t)ws->rows;
  case FE_T_TARGET: return ws->rowloss + (size_t)(m->nout > 1 ? m->nout : 1) * (size_t)ws->rows;
  case FE_T_HITS: return &e->hits;
  default: return NULL;
  }
}

/* One GEMM, or a batch of them (operand k of product g at g times its size). */
static tpu_status run_gemm(exec *e, const fe_gemm_step *g) {
  const float *a = tensor_of(e, g->a), *b = tensor_of(e, g->b);
  float *c = tensor_of(e, g->c);
  const size_t mk = (size_t)g->M * (size_t)g->K, kn = (size_t)g->K * (size_t)g->N, mn = (size_t)g->M * (size_t)g->N;
  for (int q = 0; q < (g->batch > 1 ? g->batch : 1); q++) {
    tpu_status st = fe_gemm(e->be, &e->ws->scratch, g->ta, g->tb, g->M, g->N, g->K, a + q * mk, b + q * kn, c + q * mn,
                            g->acc);
    if (st) return st;
  }
  return TPU_OK;
}

/* embedding over n positions: out (gather) gets each id's table row plus
** the token-type table's row 0; or (dy not NULL: scatter) each position's
** dY is added to its id's row of the gradient, in position order, and
** summed into the token-type row 0. An id is its f32 value, which must be
** an integer in [0, input_dim): any other value gives a zero row (and
** no gradient), as a gather out of bounds does on a TPU. */
static void gather(exec *e, const tpu_fe_layer *l, int64_t n, const float *ids, float *out, const float *dy) {
  const size_t D = (size_t)l->output_dim, V = (size_t)l->input_dim;
  const float *w = e->params + l->woff, *type0 = l->token_types ? w + V * D : NULL;
  float *g = e->ws->grad + l->woff, *gtype0 = l->token_types ? g + V * D : NULL;
  /* a dense tied to the table has written its gradient already: add to it */
  const bool tied = dy && fe_tied_after(e->p->model, (int)(l - e->p->model->layers));
  if (dy) memset(tied ? g + V * D : g, 0, (tied ? l->nw - V * D : l->nw) * sizeof *g);
  for (int64_t r = 0; r < n; r++) {
    const float v = ids[r];
    const bool ok = v >= 0.0f && v < (float)V && v == floorf(v);
    const size_t id = ok ? (size_t)v : 0;
    if (dy) {
      for (size_t c = 0; ok && c < D; c++) g[id * D + c] += dy[(size_t)r * D + c];
      for (size_t c = 0; gtype0 && c < D; c++) gtype0[c] += dy[(size_t)r * D + c];
      continue;
    }
    for (size_t c = 0; c < D; c++)
      out[(size_t)r * D + c] = (ok ? w[id * D + c] : 0.0f) + (type0 ? type0[c] : 0.0f);
  }
}
/* take: position s->coff of each sample's s->ctot to a vector (put: back,
** into a zeroed gradient). */
static void take(bool put, const fe_step *s, float *in, float *out) {
  const size_t C = (size_t)s->cols, L = (size_t)s->ctot, p = (size_t)s->coff;
  if (put) memset(out, 0, (size_t)s->rows * L * C * sizeof *out);
  for (int64_t b = 0; b < s->rows; b++) {
    if (put) memcpy(out + ((size_t)b * L + p) * C, in + (size_t)b * C, C * sizeof *out);
    else memcpy(out + (size_t)b * C, in + ((size_t)b * L + p) * C, C * sizeof *out);
  }
}

/* permute: output axis k of each sample is input axis dims[k] (1-based
** over the last ntarget of h, w, c); 'inverse' runs it backward, from a
** tensor of the output's shape to one of the input's. */
static void permute(const tpu_fe_layer *l, bool inverse, int rows, const float *in, float *out) {
  const int off = 3 - l->ntarget;
  const int ia[3] = { l->in.h, l->in.w, l->in.c };
  int perm[3] = { 0, 1, 2 };   /* output axis k reads input axis perm[k] */
  for (int k = 0; k < l->ntarget; k++) perm[off + k] = off + l->target[k] - 1;
  size_t istride[3] = { (size_t)ia[1] * (size_t)ia[2], (size_t)ia[2], 1 };
  const int oa[3] = { ia[perm[0]], ia[perm[1]], ia[perm[2]] };
  const size_t per = (size_t)ia[0] * (size_t)ia[1] * (size_t)ia[2];
  for (int b = 0; b < rows; b++) {
    const float *x = in + (size_t)b * per;
    float *y = out + (size_t)b * per;
    size_t o = 0;
    for (int p = 0; p < oa[0]; p++)
      for (int q = 0; q < oa[1]; q++)
        for (int r = 0; r < oa[2]; r++, o++) {
          const size_t src = (size_t)p * istride[perm[0]] + (size_t)q * istride[perm[1]] + (size_t)r * istride[perm[2]];
          if (inverse) y[src] = x[o];   /* in has the output's shape */
          else y[o] = x[src];
        }
  }
}

/* class_token: each sample's L+1 positions of C are the token (W), then
** its input's L; backward (bwd): DW = the sum over the samples of dY's
** first position (in sample order), dX (NULL: none) = the other L. */
static void class_token(bool bwd, const tpu_fe_layer *l, int rows, const float *params, float *grad, float *in,
                        float *out) {
  const size_t C = (size_t)l->out.c, L1 = (size_t)l->out.w, L = L1 - 1;
  if (bwd) memset(grad + l->woff, 0, C * sizeof *grad);
  for (int b = 0; b < rows; b++) {
    float *big = bwd ? in + (size_t)b * L1 * C : out + (size_t)b * L1 * C;
    if (!bwd) {
      memcpy(big, params + l->woff, C * sizeof *big);
      memcpy(big + C, in + (size_t)b * L * C, L * C * sizeof *big);
      continue;
    }
    for (size_t c = 0; c < C; c++) grad[l->woff + c] += big[c];
    if (out) memcpy(out + (size_t)b * L * C, big + C, L * C * sizeof *out);
  }
}

/* multi_head_attention's heads: [rows*L x H*c] to [rows*H*L x c], each
** sample's heads one after another (merge: back). */
static void heads(bool merge, int rows, int64_t R, int64_t cols, int H, float *wide, float *split) {
  const int64_t L = R / rows, c = cols / H;
  for (int b = 0; b < rows; b++)
    for (int h = 0; h < H; h++)
      for (int64_t p = 0; p < L; p++) {
        float *w = wide + ((size_t)(b * L + p) * (size_t)cols + (size_t)(h * c));
        float *s = split + (((size_t)(b * H + h) * (size_t)L + (size_t)p) * (size_t)c);
        if (merge) memcpy(w, s, (size_t)c * sizeof(float));
        else memcpy(s, w, (size_t)c * sizeof(float));
      }
}
/* The causal mask on scores [n*L x L]: -1e9 added where the key (column)
** comes after the query (the row's position), as Keras' masked softmax. */
static void causal(int64_t rows, int64_t L, float *s) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = r % L + 1; k < L; k++) s[r * L + k] += -1e9f;
}

/* The next-token loss or accuracy over the plan's rows of logits (every
** position of the shard's samples): per sample its first L-1 positions
** against the input's ids at 1..L-1 (an id that is not an integer in
** [0, V) is an input error, as a label out of range); the last position
** takes no loss and a zero gradient. A sample's loss is the mean over its
** L-1 tokens, so the shard's sum over the global batch is the mean over
** every token; the hits count tokens. */
static tpu_status next_token_vpu(exec *e, const fe_vpu_step *v) {
  fe_core_ws *ws = e->ws;
  const int64_t L = e->p->model->input.c, V = v->cols, n = v->rows / L;
  float *x = tensor_of(e, v->x), *dx = tensor_of(e, v->out2);
  double hits = 0.0;
  for (int64_t b = 0; b < n; b++) {
    const float *ids = e->x + b * L;
    int32_t *lab = ws->lab + b * L;
    for (int64_t t = 0; t + 1 < L; t++) {
      const float id = ids[t + 1];
      lab[t] = id >= 0.0f && id < (float)V && id == floorf(id) ? (int32_t)id : -1;
    }
    float h = 0.0f;
    tpu_vpu_args a = { .rows = (int)(L - 1), .cols = (int)V, .x = x + b * L * V, .labels = lab,
                       .out = v->op == TPU_VPU_SOFTMAX_XENT ? ws->rowloss + b * L : &h,
                       .out2 = dx && v->op == TPU_VPU_SOFTMAX_XENT ? dx + b * L * V : NULL,
                       .p = tpu_vpu_params_default() };
    a.p.alpha = v->alpha;
    tpu_status st = tpu_vpu_exec(v->op, &a);
    if (st) return st;
    hits += h;
    if (v->op != TPU_VPU_SOFTMAX_XENT) continue;
    if (a.out2) memset(dx + (b * L + L - 1) * V, 0, (size_t)V * sizeof *dx);
    double s = 0.0;   /* summed in position order */
    for (int64_t t = 0; t + 1 < L; t++) s += (double)ws->rowloss[b * L + t];
    ws->loss_sum += s / (double)(L - 1);
  }
  if (v->op == TPU_VPU_ACCURACY) ws->correct = (int)hits;
  return TPU_OK;
}

/* One VPU op on f32 (numerics only; the timing path charges its cycles). A
** failure means a shape or hyper-parameter the model checks already
** excluded, or a label out of range. */
static tpu_status run_vpu(exec *e, const fe_vpu_step *v) {
  fe_core_ws *ws = e->ws;
  if (v->y.kind == FE_T_LABELS && e->p->model->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT) return next_token_vpu(e, v);
  const int rows = (int)v->rows;
  tpu_vpu_args a = { .rows = rows, .cols = (int)v->cols, .x = tensor_of(e, v->x), .out = tensor_of(e, v->out),
                     .out2 = tensor_of(e, v->out2), .p = tpu_vpu_params_default() };
  if (v->y.kind == FE_T_LABELS) {
    for (int b = 0; b < rows; b++) ws->lab[b] = e->labels[b];
    a.labels = ws->lab;
  } else if (v->y.kind == FE_T_TARGET) {   /* a value head's target from the label, in [-1, 1] */
    float *t = tensor_of(e, v->y);
    const float top = (float)(tpu_fe_model_label_classes(e->p->model) - 1);
    for (int b = 0; b < rows; b++) t[b] = 2.0f * (float)e->labels[b] / top - 1.0f;
    a.y = t;
  } else {
    a.y = tensor_of(e, v->y);
  }
  a.p.alpha = v->alpha;
  tpu_status st = tpu_vpu_exec(v->op, &a);
  if (st) return st;
  if (v->op == TPU_VPU_SOFTMAX_XENT || v->op == TPU_VPU_SIGMOID_BCE || v->op == TPU_VPU_MSE) {
    double s = 0.0;   /* in row order; the sum times its weight, and output k's own */
    for (int b = 0; b < rows; b++) {
      ws->loss_sum += (double)v->weight * (double)a.out[b];
      s += (double)a.out[b];
    }
    if (v->out.part >= 0 && v->out.part < TPU_FE_MAX_OUTPUTS) ws->out_loss_sum[v->out.part] += s;
  }
  if (v->op == TPU_VPU_ACCURACY || v->op == TPU_VPU_BINARY_ACCURACY) ws->correct = (int)e->hits;
  return TPU_OK;
}

/* concatenate: the channels [coff, coff+c) of each of n pixels of a
** ctot-channel tensor from (split: to) a c-channel one */
static void channel_copy(bool split, int64_t n, int c, int coff, int ctot, float *whole, float *part) {
  for (int64_t q = 0; q < n; q++) {
    float *w = whole + (size_t)q * (size_t)ctot + (size_t)coff, *pt = part + (size_t)q * (size_t)c;
    if (split) memcpy(pt, w, (size_t)c * sizeof(float));
    else memcpy(w, pt, (size_t)c * sizeof(float));
  }
}

/* A grouped kernel k of G groups (kh x kw x C/G x F, Keras' order: tap t,
** channel ci of its group, output f at (t*C/G + ci)*F + f; a depthwise
** kernel kh x kw x C x dm is the case G = C, F = C*dm) and its
** block-diagonal GEMM operand wx [T*C x F]: row t*C + c, c in group g =
** c/(C/G), holds k's (t, c mod C/G, .) in g's columns g*F/G .. (g+1)*F/G-1,
** zeros elsewhere. 'compact' takes the block diagonal of wx back into k. */
static void dw_expand(bool compact, int64_t TC, int64_t F, int C, int G, float *k, float *wx) {
  const int64_t dm = F / G, cg = C / G;
  if (!compact) memset(wx, 0, (size_t)(TC * F) * sizeof(float));
  for (int64_t r = 0; r < TC; r++) {
    const int64_t t = r / C, c = r % C, g = c / cg;
    float *row = wx + (size_t)(r * F + g * dm), *kr = k + (size_t)((t * cg + c % cg) * F + g * dm);
    if (compact) memcpy(kr, row, (size_t)dm * sizeof(float));
    else memcpy(row, kr, (size_t)dm * sizeof(float));
  }
}

/* zero_padding: the H x W x C input of each sample at (pad_top, pad_left)
** of the OH x OW x C output (crop: back out of it). */
static void pad_copy(const fe_window *w, bool crop, int rows, float *small, float *big) {
  const size_t C = (size_t)w->c, row = (size_t)w->w * C;
  if (!crop) memset(big, 0, (size_t)rows * (size_t)w->oh * (size_t)w->ow * C * sizeof(float));
  for (int b = 0; b < rows; b++)
    for (int y = 0; y < w->h; y++) {
      float *sm = small + ((size_t)b * (size_t)w->h + (size_t)y) * row;
      float *bg = big + (((size_t)b * (size_t)w->oh + (size_t)(y + w->pad_top)) * (size_t)w->ow + (size_t)w->pad_left) * C;
      if (crop) memcpy(sm, bg, row * sizeof(float));
      else memcpy(bg, sm, row * sizeof(float));
    }
}

/* rescaling (Keras: x*scale + offset) and normalization (Keras: (x -
** mean) / max(sqrt(variance), 1e-7)), per channel in f32, over n pixels x
** C; backward (dy): dX = dY*scale, dY / max(sqrt(variance), 1e-7). */
static void affine(const tpu_fe_layer *l, bool backward, int64_t n, int64_t C, const float *params, const float *in,
                   float *out) {
  const bool resc = l->kind == TPU_FE_RESCALING, adapted = l->nvec == 0;
  for (int64_t c = 0; c < C; c++) {
    const int v = l->nvec > 1 ? (int)c : 0;
    const float a = resc ? l->vec[0][v] : adapted ? params[l->soff + (size_t)c] : l->vec[0][v];
    const float var = resc ? 0.0f : adapted ? params[l->soff + (size_t)C + (size_t)c] : l->vec[1][v];
    const float den = fmaxf(sqrtf(var), 1e-7f), off = resc ? l->vec[1][v] : 0.0f;
    for (int64_t r = 0; r < n; r++) {
      const float x = in[r * C + c];
      float y;
      if (backward) y = resc ? x * a : x / den;
      else if (resc) { y = x * a; y = y + off; }
      else y = (x - a) / den;
      out[r * C + c] = y;
    }
  }
}

/* multiply by a 1x1xC gate: out = in (rows samples of n/rows pixels x C)
** times each sample's gate row; grad: out (rows x C) = the sum over each
** sample's pixels of in (dY) times map, in double, in pixel order. */
static void gate(bool grad, int rows, int64_t n, int64_t C, const float *in, const float *g, const float *map,
                 float *out) {
  const int64_t P = n / rows;
  for (int b = 0; b < rows; b++)
    for (int64_t c = 0; c < C; c++) {
      double sum = 0.0;
      for (int64_t q = 0; q < P; q++) {
        const int64_t k = ((int64_t)b * P + q) * C + c;
        if (grad) sum += (double)in[k] * (double)map[k];
        else out[k] = in[k] * g[(int64_t)b * C + c];
      }
      if (grad) out[(int64_t)b * C + c] = (float)sum;
    }
}

static tpu_status run_step(exec *e, const fe_step *s) {
  const int rows = e->p->rows, L = s->layer;
  fe_core_ws *ws = e->ws;
  /* the tensors a data-movement step reads and writes (the graph's edges) */
  float *in = tensor_of(e, s->in), *out = tensor_of(e, s->out);
  switch (s->kind) {
  case FE_STEP_INFEED:
    memcpy(ws->act[0], e->x, (size_t)(s->rows * s->cols) * sizeof(float));
    return TPU_OK;
  case FE_STEP_GEMM: return run_gemm(e, &s->gemm);
  case FE_STEP_VPU: return run_vpu(e, &s->vpu);
  case FE_STEP_IM2COL: im2col(&s->win, rows, in, ws->cols); return TPU_OK;
  case FE_STEP_COL2IM: col2im(&s->win, rows, ws->cols, out); return TPU_OK;
  case FE_STEP_CONCAT: channel_copy(false, s->rows, (int)s->cols, s->coff, s->ctot, out, in); return TPU_OK;
  case FE_STEP_SPLIT: channel_copy(true, s->rows, (int)s->cols, s->coff, s->ctot, in, out); return TPU_OK;
  case FE_STEP_PAD: pad_copy(&s->win, false, rows, in, out); return TPU_OK;
  case FE_STEP_CROP: pad_copy(&s->win, true, rows, out, in); return TPU_OK;
  case FE_STEP_POOL: pool_forward(&s->win, s->pool == TPU_FE_MAXPOOL, rows, in, out, ws->argmax[L]); return TPU_OK;
  case FE_STEP_POOL_BWD: pool_backward(&s->win, s->pool == TPU_FE_MAXPOOL, rows, in, ws->argmax[L], out); return TPU_OK;
  case FE_STEP_VIEW: memcpy(out, in, (size_t)(s->rows * s->cols) * sizeof(float)); return TPU_OK;
  case FE_STEP_BN:
    bn_forward(&e->p->model->layers[L], e->p->train, s->rows, e->params, ws->stat, in, out);
    return TPU_OK;
  case FE_STEP_BN_BWD:
    bn_backward(&e->p->model->layers[L], s->rows, e->params, ws->stat,
                ws->act[e->p->model->layers[L].inputs[0] + 1], in, ws->grad, out);
    return TPU_OK;
  case FE_STEP_GATHER: gather(e, &e->p->model->layers[L], s->rows, in, out, NULL); return TPU_OK;
  case FE_STEP_SCATTER: gather(e, &e->p->model->layers[L], s->rows, ws->act[0], NULL, in); return TPU_OK;
  case FE_STEP_TAKE: case FE_STEP_PUT: take(s->kind == FE_STEP_PUT, s, in, out); return TPU_OK;
  case FE_STEP_PERMUTE: permute(&e->p->model->layers[L], s->coff == 1, rows, in, out); return TPU_OK;
  case FE_STEP_CLS: case FE_STEP_CLS_BWD:
    class_token(s->kind == FE_STEP_CLS_BWD, &e->p->model->layers[L], rows, e->params, ws->grad, in, out);
    return TPU_OK;
  case FE_STEP_HEADS: heads(false, rows, s->rows, s->cols, s->coff, in, out); return TPU_OK;
  case FE_STEP_MERGE_HEADS: heads(true, rows, s->rows, s->cols, s->coff, out, in); return TPU_OK;
  case FE_STEP_CAUSAL: causal(s->rows, s->cols, out); return TPU_OK;
  case FE_STEP_LN:
    ln_forward(&e->p->model->layers[L], s->rows, e->params, in, out);
    return TPU_OK;
  case FE_STEP_LN_BWD:
    return ln_backward(&e->p->model->layers[L], s->rows, e->params, ws->act[e->p->model->layers[L].inputs[0] + 1],
                       in, ws->grad, out);
  case FE_STEP_DROPOUT_MASK:
    dropout_mask(e->p->model, L, rows, e->step, e->first_sample, ws->mask[L]);
    return TPU_OK;
  case FE_STEP_DW_EXPAND: dw_expand(false, s->rows, s->cols, s->win.c, s->coff, in, out); return TPU_OK;
  case FE_STEP_AFFINE: affine(&e->p->model->layers[L], s->coff == 1, s->rows, s->cols, e->params, in, out); return TPU_OK;
  case FE_STEP_GATE: case FE_STEP_GATE_GRAD: {
    const tpu_fe_layer *l = &e->p->model->layers[L];
    const int g = fe_gate_input(e->p->model, l);
    gate(s->kind == FE_STEP_GATE_GRAD, rows, s->rows, s->cols, in, ws->act[l->inputs[g] + 1],
         ws->act[l->inputs[1 - g] + 1], out);
    return TPU_OK;
  }
  case FE_STEP_DW_COMPACT: dw_expand(true, s->rows, s->cols, s->win.c, s->coff, out, in); return TPU_OK;
  default:
    return TPU_ERR_CONFIG;   /* the all-reduce and the update belong to the trainer */
  }
}

/* Tensor t's values in the workspace, their count (0: not one the policy
** may keep in bf16). */
static size_t policy_elems(exec *e, fe_tensor t) {
  const tpu_fe_model *m = e->p->model;
  const size_t rows = (size_t)e->p->rows;
  switch (t.kind) {
  case FE_T_ACT: case FE_T_DACT: case FE_T_DTMP:
    return rows * tpu_fe_shape_size(t.layer ? m->layers[t.layer - 1].out : m->input);
  case FE_T_ATT: case FE_T_DATT: return rows * fe_att_elems(&m->layers[t.layer], t.part);
  case FE_T_MID: case FE_T_DMID: {
    const tpu_fe_layer *L = &m->layers[t.layer];
    return rows * (size_t)L->out.h * (size_t)L->out.w * (size_t)L->in.c * (size_t)L->depth_multiplier;
  }
  default: return 0;
  }
}
/* What the dtype policy keeps in bf16 is rounded so as a step writes it
** (fe_tensor_dtype), on the simulated chip: its later readers see the
** stored values, as the timing path stores them. The reference backend is
** the f32 baseline and keeps f32. */
static void store_as_policy(exec *e, fe_tensor t) {
  if (e->be->kind != TPU_FE_BACKEND_SIM || fe_tensor_dtype(e->p, t) != TPU_SIM_BF16) return;
  const size_t n = policy_elems(e, t);
  if (n) tpu_bf16_round_array(tensor_of(e, t), n);
}
static void store_outputs(exec *e, const fe_step *s) {
  switch (s->kind) {
  case FE_STEP_GEMM: store_as_policy(e, s->gemm.c); break;
  case FE_STEP_VPU: store_as_policy(e, s->vpu.out); store_as_policy(e, s->vpu.out2); break;
  default: store_as_policy(e, s->out); break;
  }
}

static tpu_status run_phases(exec *e, fe_phase from, fe_phase to) {
  for (int k = 0; k < e->p->nsteps; k++) {
    const fe_step *s = &e->p->steps[k];
    if (s->phase < from || s->phase > to) continue;
    tpu_status st = run_step(e, s);
    if (st) return st;
    store_outputs(e, s);
  }
  return TPU_OK;
}

tpu_status fe_forward(const fe_plan *p, const tpu_fe_backend *be, const float *params, fe_core_ws *ws,
                      const float *x, const int32_t *labels, uint64_t step, uint64_t first_sample) {
  exec e = { .p = p, .be = be, .params = params, .ws = ws, .x = x, .labels = labels, .step = step,
             .first_sample = first_sample };
  ws->loss_sum = 0.0;
  for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) ws->out_loss_sum[k] = 0.0;
  ws->correct = 0;
  return run_phases(&e, FE_INFEED, labels ? FE_LOSS : FE_FORWARD);
}

tpu_status fe_backward(const fe_plan *p, const tpu_fe_backend *be, const float *params, fe_core_ws *ws) {
  exec e = { .p = p, .be = be, .params = params, .ws = ws };
  return run_phases(&e, FE_BACKWARD, FE_BACKWARD);
}
/* }================================================================== */

/* {==================================================================
** Optimizers (Keras' update rules)
** ================================================================== */
tpu_status fe_opt_create(const tpu_fe_model *m, tpu_fe_opt_state *s) {
  memset(s, 0, sizeof *s);
  size_t n = m->nparams ? m->nparams : 1;
  if (m->opt.kind != TPU_FE_SGD && !(s->m = tpu_calloc(n, sizeof(float)))) return TPU_ERR_NOMEM;
  if (m->opt.kind == TPU_FE_ADAM && !(s->v = tpu_calloc(n, sizeof(float)))) {
    fe_opt_destroy(s);
    return TPU_ERR_NOMEM;
  }
  return TPU_OK;
}
void fe_opt_destroy(tpu_fe_opt_state *s) {
  tpu_free(s->m);
  tpu_free(s->v);
  memset(s, 0, sizeof *s);
}

tpu_status fe_opt_apply(const tpu_fe_model *m, tpu_fe_opt_state *s, float *p, const float *g) {
  const tpu_fe_optimizer *o = &m->opt;
  if (s->t >= (uint64_t)INT64_MAX) return TPU_ERR_RANGE;   /* adam's step is an int64_t */
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
  return st;
}
/* }================================================================== */
