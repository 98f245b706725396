/*
** vpu.c -- the vector unit: the op table, the cost formula and the f32
** kernels. The contract (operands, formula, numerics, error bounds) is in
** vpu.h; this file says how.
**
** Timing and function are separate: tpu_vpu_cycles looks at shapes and the
** config only; tpu_vpu_exec computes values and knows nothing of cycles.
** Kernels are plain loops over row-major arrays. Element-wise loops have no
** branches the compiler cannot if-convert, so they vectorize at -O3; the
** order of every floating-point operation is the one written (we build with
** -ffp-contract=off and never reassociate), which is what makes results
** independent of threads, of the host's vector width and of the config.
*/
#include "vpu/vpu.h"

#include <math.h>

/* {==================================================================
** The op table
** ================================================================== */
enum {
  O_X = TPU_VPU_O_X, O_Y = TPU_VPU_O_Y, O_L = TPU_VPU_O_LABELS, O_OUT = TPU_VPU_O_OUT,
  O_OUT2 = TPU_VPU_O_OUT2, O_IDX = TPU_VPU_O_IDX, O_P = TPU_VPU_O_PARAM,
  O_G = TPU_VPU_O_GRAD, O_M = TPU_VPU_O_M, O_V = TPU_VPU_O_V
};
/* The READS / WRITES shorthands of vpu_ops.def. */
#define OPS_X        (O_X)
#define OPS_XY       (O_X | O_Y)
#define OPS_XL       (O_X | O_L)
#define OPS_PG       (O_P | O_G)
#define OPS_PGM      (O_P | O_G | O_M)
#define OPS_PGMV     (O_P | O_G | O_M | O_V)
#define OPS_OUT      (O_OUT)
#define OPS_OUT_OUT2 (O_OUT | O_OUT2)
#define OPS_IDX      (O_IDX)
#define OPS_P        (O_P)
#define OPS_PM       (O_P | O_M)
#define OPS_PMV      (O_P | O_M | O_V)

typedef struct op_info {
  const char *name;
  tpu_vpu_class cls;
  unsigned reads, writes;
  uint8_t e, d, t, rr, cr, ve, vt, vs;   /* cost counts, see vpu_ops.def */
} op_info;

static const op_info OPS[TPU_VPU_OP_COUNT] = {
#define X(en, name, cls, rd, wr, E, D, T, RR, CR, VE, VT, VS) \
  { name, TPU_VPU_CLASS_##cls, OPS_##rd, OPS_##wr, E, D, T, RR, CR, VE, VT, VS },
#include "vpu/vpu_ops.def"
#undef X
};

static int op_ok(tpu_vpu_op op) { return (unsigned)op < (unsigned)TPU_VPU_OP_COUNT; }

const char *tpu_vpu_op_name(tpu_vpu_op op) { return op_ok(op) ? OPS[op].name : "?"; }

int tpu_vpu_op_parse(const char *s, tpu_vpu_op *out) {
  if (!s) return 0;
  for (int i = 0; i < TPU_VPU_OP_COUNT; i++)
    if (strcmp(s, OPS[i].name) == 0) { *out = (tpu_vpu_op)i; return 1; }
  return 0;
}

tpu_vpu_class tpu_vpu_op_class(tpu_vpu_op op) {
  return op_ok(op) ? OPS[op].cls : TPU_VPU_CLASS_ELEMENTWISE;
}

const char *tpu_vpu_class_name(tpu_vpu_class c) {
  switch (c) {
    case TPU_VPU_CLASS_ELEMENTWISE: return "elementwise";
    case TPU_VPU_CLASS_DIVIDE: return "divide";
    case TPU_VPU_CLASS_TRANSCENDENTAL: return "transcendental";
    case TPU_VPU_CLASS_CROSS_LANE: return "cross_lane";
    case TPU_VPU_CLASS_CROSS_SUBLANE: return "cross_sublane";
    case TPU_VPU_CLASS_FUSED: return "fused";
    case TPU_VPU_CLASS_OPTIMIZER: return "optimizer";
  }
  return "?";
}

unsigned tpu_vpu_op_reads(tpu_vpu_op op) { return op_ok(op) ? OPS[op].reads : 0; }
unsigned tpu_vpu_op_writes(tpu_vpu_op op) { return op_ok(op) ? OPS[op].writes : 0; }

static int bit_list(unsigned mask, unsigned list[4]) {
  int n = 0;
  for (unsigned b = 1; b <= (unsigned)O_V; b <<= 1)
    if (mask & b) list[n++] = b;            /* at most 4 bits set per mask */
  return n;
}
int tpu_vpu_op_inputs(tpu_vpu_op op, unsigned list[4]) {
  return op_ok(op) ? bit_list(OPS[op].reads, list) : 0;
}
int tpu_vpu_op_outputs(tpu_vpu_op op, unsigned list[4]) {
  return op_ok(op) ? bit_list(OPS[op].writes, list) : 0;
}

static const char *const SC_NONE[] = { NULL };
static const char *const SC_ALPHA[] = { "alpha", NULL };
static const char *const SC_SGD[] = { "lr", NULL };
static const char *const SC_MOMENTUM[] = { "lr", "momentum", NULL };
static const char *const SC_ADAM[] = { "lr", "beta1", "beta2", "eps", "step", NULL };

const char *const *tpu_vpu_op_scalars(tpu_vpu_op op) {
  switch (op) {
    case TPU_VPU_SCALE: case TPU_VPU_ADD_SCALAR: case TPU_VPU_SOFTMAX_XENT: case TPU_VPU_RELU_CAP:
    case TPU_VPU_RELU_CAP_GRAD: case TPU_VPU_LEAKY_RELU: case TPU_VPU_LEAKY_RELU_GRAD:
    case TPU_VPU_SIGMOID_BCE: case TPU_VPU_MSE: return SC_ALPHA;
    case TPU_VPU_SGD: return SC_SGD;
    case TPU_VPU_MOMENTUM: return SC_MOMENTUM;
    case TPU_VPU_ADAM: return SC_ADAM;
    default: return SC_NONE;
  }
}

tpu_status tpu_vpu_params_from_scalars(tpu_vpu_op op, const float *s, int n, tpu_vpu_params *p) {
  const char *const *names = tpu_vpu_op_scalars(op);
  int want = 0;
  while (names[want]) want++;
  if (!op_ok(op) || !p || n != want || (n > 0 && !s)) return TPU_ERR_CONFIG;
  tpu_vpu_params q = tpu_vpu_params_default();
  switch (op) {
    case TPU_VPU_SCALE: case TPU_VPU_ADD_SCALAR: case TPU_VPU_SOFTMAX_XENT: case TPU_VPU_RELU_CAP:
    case TPU_VPU_RELU_CAP_GRAD: case TPU_VPU_LEAKY_RELU: case TPU_VPU_LEAKY_RELU_GRAD:
    case TPU_VPU_SIGMOID_BCE: case TPU_VPU_MSE: q.alpha = s[0]; break;
    case TPU_VPU_SGD: q.lr = s[0]; break;
    case TPU_VPU_MOMENTUM: q.lr = s[0]; q.momentum = s[1]; break;
    case TPU_VPU_ADAM:
      if (!(s[4] >= 1.0f && s[4] <= 0x1p24f) || s[4] != floorf(s[4])) return TPU_ERR_CONFIG;
      q.lr = s[0]; q.beta1 = s[1]; q.beta2 = s[2]; q.eps = s[3]; q.step = (int64_t)s[4];
      break;
    default: break;
  }
  *p = q;
  return TPU_OK;
}

static int shape_ok(int rows, int cols) {
  return rows >= 1 && cols >= 1 && (int64_t)rows * cols <= TPU_VPU_MAX_ELEMS;
}

size_t tpu_vpu_operand_elems(tpu_vpu_op op, unsigned operand, int rows, int cols) {
  if (!op_ok(op) || !shape_ok(rows, cols)) return 0;
  if (!((OPS[op].reads | OPS[op].writes) & operand)) return 0;
  size_t n = (size_t)rows * (size_t)cols;
  switch (operand) {
    case TPU_VPU_O_Y: return op == TPU_VPU_BIAS_ADD ? (size_t)cols : n;
    case TPU_VPU_O_LABELS: case TPU_VPU_O_IDX: return (size_t)rows;
    case TPU_VPU_O_OUT:
      switch (op) {
        case TPU_VPU_ROW_SUM: case TPU_VPU_ROW_MAX: case TPU_VPU_SOFTMAX_XENT: case TPU_VPU_SIGMOID_BCE:
        case TPU_VPU_MSE:
          return (size_t)rows;
        case TPU_VPU_COL_SUM: case TPU_VPU_COL_MAX: return (size_t)cols;
        case TPU_VPU_ACCURACY: case TPU_VPU_BINARY_ACCURACY: return 1;
        default: return n;
      }
    case TPU_VPU_O_X: case TPU_VPU_O_OUT2: case TPU_VPU_O_PARAM: case TPU_VPU_O_GRAD:
    case TPU_VPU_O_M: case TPU_VPU_O_V:
      return n;
  }
  return 0;   /* not a single operand bit */
}
/* }================================================================== */

/* {==================================================================
** Config and cost
** ================================================================== */
tpu_vpu_config tpu_vpu_config_default(void) {
  tpu_vpu_config c = {
    .sublanes = 8, .lanes = 128, .cycles_elementwise = 1, .cycles_divide = 4,
    .cycles_transcendental = 4, .cycles_cross_lane = 4, .cycles_cross_sublane = 2,
  };
  return c;
}

static int in_range(int v, int lo, int hi) { return v >= lo && v <= hi; }

tpu_status tpu_vpu_config_check(const tpu_vpu_config *cfg) {
  if (!cfg) return TPU_ERR_CONFIG;
  if (!in_range(cfg->sublanes, 1, 1024) || !in_range(cfg->lanes, 1, 4096)) return TPU_ERR_CONFIG;
  const int costs[] = { cfg->cycles_elementwise, cfg->cycles_divide, cfg->cycles_transcendental,
                        cfg->cycles_cross_lane, cfg->cycles_cross_sublane };
  for (size_t i = 0; i < sizeof costs / sizeof costs[0]; i++)
    if (!in_range(costs[i], 1, 100000)) return TPU_ERR_CONFIG;
  return TPU_OK;
}

/* ceil(log2(n)) for n >= 1: the passes of a halving tree over n lanes. */
static uint64_t ceil_log2(int n) {
  uint64_t k = 0;
  while (((int64_t)1 << k) < n) k++;
  return k;
}

uint64_t tpu_vpu_registers(const tpu_vpu_config *cfg, int rows, int cols) {
  if (tpu_vpu_config_check(cfg) != TPU_OK || !shape_ok(rows, cols)) return 0;
  uint64_t rb = ((uint64_t)rows + (uint64_t)cfg->sublanes - 1) / (uint64_t)cfg->sublanes;
  uint64_t cb = ((uint64_t)cols + (uint64_t)cfg->lanes - 1) / (uint64_t)cfg->lanes;
  return rb * cb;
}

/* Bounds: regs <= 2^40, each per-register factor <= 255*3*100000 < 2^27, and
** the reduction terms are smaller, so no sum below can reach 2^64. */
uint64_t tpu_vpu_cycles(const tpu_vpu_config *cfg, tpu_vpu_op op, int rows, int cols) {
  if (!op_ok(op) || tpu_vpu_config_check(cfg) != TPU_OK || !shape_ok(rows, cols)) return 0;
  const op_info *o = &OPS[op];
  const uint64_t ew = (uint64_t)cfg->cycles_elementwise, dv = (uint64_t)cfg->cycles_divide,
                 tr = (uint64_t)cfg->cycles_transcendental, xl = (uint64_t)cfg->cycles_cross_lane,
                 xs = (uint64_t)cfg->cycles_cross_sublane;
  const uint64_t rb = ((uint64_t)rows + (uint64_t)cfg->sublanes - 1) / (uint64_t)cfg->sublanes;
  const uint64_t cb = ((uint64_t)cols + (uint64_t)cfg->lanes - 1) / (uint64_t)cfg->lanes;
  const uint64_t lg_s = ceil_log2(cfg->sublanes), lg_l = ceil_log2(cfg->lanes);
  uint64_t c = rb * cb * (o->e * ew + o->d * dv + o->t * tr);
  c += o->rr * rb * ((cb - 1) * ew + lg_l * xl);
  c += o->cr * cb * ((rb - 1) * ew + lg_s * xs);
  c += rb * (o->ve * ew + o->vt * tr);
  c += o->vs * ((rb - 1) * ew + lg_s * xs);
  return c;
}
/* }================================================================== */

/* {==================================================================
** Kernels. n is rows*cols. Each is a plain loop; see the file comment.
** ================================================================== */
/* IEEE 754-2019 maximum/minimum: NaN if either is NaN, +0 > -0. For equal
** values the bitwise AND (max) or OR (min) picks +0 over -0 and is the
** value itself otherwise. */
static inline float max2(float a, float b) {
  if (a > b) return a;
  if (a < b) return b;
  if (a == b) return tpu_f32_from_bits(tpu_f32_bits(a) & tpu_f32_bits(b));
  return a + b;                                  /* a NaN is involved */
}
static inline float min2(float a, float b) {
  if (a < b) return a;
  if (a > b) return b;
  if (a == b) return tpu_f32_from_bits(tpu_f32_bits(a) | tpu_f32_bits(b));
  return a + b;
}

/* GELU (exact: x*Phi(x), Phi the normal CDF through erf; the tanh
** approximation of Hendrycks & Gimpel, Keras' approximate=True) and swish
** (x*sigmoid(x), Keras' silu), and their gradients from the forward input
** x and dy, in double then rounded once to f32. */
static float smooth_act(tpu_vpu_op op, float xf, float dyf) {
  const double x = xf, dy = dyf, k = 0.7978845608028654, c = 0.044715;   /* sqrt(2/pi) */
  switch (op) {
  case TPU_VPU_GELU: return (float)(0.5 * x * (1.0 + erf(x * 0.7071067811865476)));
  case TPU_VPU_GELU_GRAD:
    return (float)(dy * (0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x)));
  case TPU_VPU_GELU_TANH: return (float)(0.5 * x * (1.0 + tanh(k * (x + c * x * x * x))));
  case TPU_VPU_GELU_TANH_GRAD: {
    const double t = tanh(k * (x + c * x * x * x));
    return (float)(dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t) * (1.0 + t) * k * (1.0 + 3.0 * c * x * x)));
  }
  case TPU_VPU_SWISH: return (float)(x / (1.0 + exp(-x)));
  default: {   /* TPU_VPU_SWISH_GRAD */
    const double s = 1.0 / (1.0 + exp(-x));
    return (float)(dy * (s + x * s * (1.0 - s)));
  }
  }
}
static float sigmoid1(float x) {
  /* Two forms so that neither overflows, with one exp and no branch:
  ** e = exp(-|x|) <= 1; x >= 0 gives 1/(1+e), x < 0 gives e/(1+e), which
  ** keeps subnormal results. NaN stays NaN through e. */
  float e = expf(-fabsf(x));
  float num = x >= 0.0f ? 1.0f : e;
  return num / (1.0f + e);
}

static float row_max(const float *x, int cols) {
  float m = x[0];
  for (int c = 1; c < cols; c++) m = max2(m, x[c]);
  return m;
}

/* First column holding the row maximum; a NaN beats every number and the
** first NaN wins. */
static int32_t row_argmax(const float *x, int cols) {
  float best = x[0];
  int32_t bi = 0;
  if (best != best) return 0;
  for (int c = 1; c < cols; c++) {
    float v = x[c];
    if (v != v) return c;
    if (v > best) { best = v; bi = c; }
  }
  return bi;
}

static void softmax_rows(const float *x, float *out, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * cols;
    float *o = out + (size_t)r * cols;
    float m = row_max(xr, cols), s = 0.0f;
    for (int c = 0; c < cols; c++) { float e = expf(xr[c] - m); o[c] = e; s += e; }
    for (int c = 0; c < cols; c++) o[c] = o[c] / s;
  }
}

/* Loss log(sum exp(x - m)) - (x[label] - m); gradient alpha*(p - onehot).
** x[label] is read before out2 (which may be x) is written. */
static void softmax_xent_rows(const float *x, const int32_t *labels, float *loss, float *grad,
                              float alpha, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * cols;
    float m = row_max(xr, cols), s = 0.0f;
    int32_t lab = labels[r];
    float dl = xr[lab] - m;
    if (grad) {
      float *g = grad + (size_t)r * cols;
      for (int c = 0; c < cols; c++) { float e = expf(xr[c] - m); g[c] = e; s += e; }
      for (int c = 0; c < cols; c++) g[c] = alpha * (g[c] / s - (c == lab ? 1.0f : 0.0f));
    } else {
      for (int c = 0; c < cols; c++) s += expf(xr[c] - m);
    }
    loss[r] = logf(s) - dl;
  }
}

/* Mean squared error of each row against its target y (Keras'
** mean_squared_error: the mean over the row's columns, summed left to
** right); gradient alpha*2/cols*(x - y). x[c] is read before grad[c]
** (which may be x) is written. */
static void mse_rows(const float *x, const float *y, float *loss, float *grad, float alpha, int rows, int cols) {
  const float gs = 2.0f * alpha / (float)cols;
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * cols, *yr = y + (size_t)r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; c++) {
      const float d = xr[c] - yr[c];
      s += d * d;
      if (grad) grad[(size_t)r * cols + c] = gs * d;
    }
    loss[r] = s / (float)cols;
  }
}

/* Binary cross-entropy of each row's one logit x against its label z (0
** or 1), from the logit as TF's sigmoid_cross_entropy_with_logits (what
** Keras' binary_crossentropy computes on a sigmoid's output):
** max(x, 0) - x*z + log1p(exp(-|x|)), which neither overflows nor loses
** the tail; gradient alpha*(sigmoid(x) - z), sigmoid from the same
** exp(-|x|) as sigmoid1. x is read before grad (which may be x) is written. */
static void sigmoid_bce_rows(const float *x, const int32_t *labels, float *loss, float *grad, float alpha, int rows) {
  for (int r = 0; r < rows; r++) {
    const float v = x[r], z = (float)labels[r], e = expf(-fabsf(v));
    loss[r] = ((v > 0.0f ? v : 0.0f) - v * z) + log1pf(e);
    if (grad) grad[r] = alpha * ((v >= 0.0f ? 1.0f : e) / (1.0f + e) - z);
  }
}
/* }================================================================== */

static int finite_nonneg(float v) { return isfinite(v) && v >= 0.0f; }
static int unit_interval(float v) { return v >= 0.0f && v < 1.0f; }   /* false for NaN */

static tpu_status check_args(tpu_vpu_op op, const tpu_vpu_args *a) {
  if (!op_ok(op) || !a || !shape_ok(a->rows, a->cols)) return TPU_ERR_CONFIG;
  unsigned need = (OPS[op].reads | OPS[op].writes) & ~(unsigned)O_OUT2;
  if (((need & O_X) && !a->x) || ((need & O_Y) && !a->y) || ((need & O_L) && !a->labels) ||
      ((need & O_OUT) && !a->out) || ((need & O_IDX) && !a->idx) ||
      ((need & O_P) && !a->param) || ((need & O_G) && !a->grad) ||
      ((need & O_M) && !a->m) || ((need & O_V) && !a->v))
    return TPU_ERR_CONFIG;
  const tpu_vpu_params *p = &a->p;
  switch (op) {
    case TPU_VPU_SOFTMAX_XENT:
      if (a->out2 && !isfinite(p->alpha)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_MSE:
      if (a->out2 && !isfinite(p->alpha)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_SIGMOID_BCE: case TPU_VPU_BINARY_ACCURACY:   /* one logit a row */
      if (a->cols != 1 || (op == TPU_VPU_SIGMOID_BCE && a->out2 && !isfinite(p->alpha))) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_RELU_CAP: case TPU_VPU_RELU_CAP_GRAD:   /* the cap: >= 0, +inf allowed (plain relu) */
      if (!(p->alpha >= 0.0f)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_LEAKY_RELU: case TPU_VPU_LEAKY_RELU_GRAD:   /* the slope: finite, >= 0 (so the sign of the
                                                              ** output is the input's) */
      if (!finite_nonneg(p->alpha)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_SGD:
      if (!finite_nonneg(p->lr)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_MOMENTUM:
      if (!finite_nonneg(p->lr) || !unit_interval(p->momentum)) return TPU_ERR_CONFIG;
      break;
    case TPU_VPU_ADAM:
      if (!finite_nonneg(p->lr) || !unit_interval(p->beta1) || !unit_interval(p->beta2) ||
          !isfinite(p->eps) || !(p->eps > 0.0f) || p->step < 1)
        return TPU_ERR_CONFIG;
      break;
    default: break;
  }
  if (need & O_L) {   /* a class of cols, or a binary label */
    const int32_t lim = op == TPU_VPU_SIGMOID_BCE || op == TPU_VPU_BINARY_ACCURACY ? 2 : a->cols;
    for (int r = 0; r < a->rows; r++)
      if (a->labels[r] < 0 || a->labels[r] >= lim) return TPU_ERR_INPUT;
  }
  return TPU_OK;
}

tpu_vpu_params tpu_vpu_params_default(void) {
  tpu_vpu_params p = { .alpha = 1.0f, .lr = 0.01f, .momentum = 0.9f, .beta1 = 0.9f,
                       .beta2 = 0.999f, .eps = 1e-7f, .step = 1 };
  return p;
}

/* The element-wise ops (out[i] from x[i], y[i] or a scalar); false for
** any other op. */
static bool exec_elementwise(tpu_vpu_op op, const tpu_vpu_args *a, size_t n) {
  const float *x = a->x, *y = a->y;
  float *o = a->out;
  const float al = a->p.alpha;
  switch (op) {
    case TPU_VPU_ADD: for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i]; break;
    case TPU_VPU_SUB: for (size_t i = 0; i < n; i++) o[i] = x[i] - y[i]; break;
    case TPU_VPU_MUL: for (size_t i = 0; i < n; i++) o[i] = x[i] * y[i]; break;
    case TPU_VPU_DIV: for (size_t i = 0; i < n; i++) o[i] = x[i] / y[i]; break;
    case TPU_VPU_MAX: for (size_t i = 0; i < n; i++) o[i] = max2(x[i], y[i]); break;
    case TPU_VPU_MIN: for (size_t i = 0; i < n; i++) o[i] = min2(x[i], y[i]); break;
    case TPU_VPU_RELU:
      for (size_t i = 0; i < n; i++) { float v = x[i]; o[i] = (v > 0.0f || v != v) ? v : 0.0f; }
      break;
    case TPU_VPU_RELU_GRAD:
      for (size_t i = 0; i < n; i++) {   /* both loads unconditional, so it if-converts */
        float v = x[i], d = y[i], r = v > 0.0f ? d : 0.0f;
        o[i] = v != v ? v : r;
      }
      break;
    case TPU_VPU_RELU_CAP:   /* min(max(x, 0), alpha); NaN stays NaN */
      for (size_t i = 0; i < n; i++) {
        float v = x[i], r = v > 0.0f ? (v < al ? v : al) : 0.0f;
        o[i] = v != v ? v : r;
      }
      break;
    case TPU_VPU_RELU_CAP_GRAD:   /* dy where 0 < x < alpha (x: the input or the output) */
      for (size_t i = 0; i < n; i++) {
        float v = x[i], d = y[i], r = v > 0.0f && v < al ? d : 0.0f;
        o[i] = v != v ? v : r;
      }
      break;
    case TPU_VPU_TANH: for (size_t i = 0; i < n; i++) o[i] = tanhf(x[i]); break;
    case TPU_VPU_TANH_GRAD:   /* (1-t)(1+t): one factor is exact near |t| = 1 */
      for (size_t i = 0; i < n; i++) { float t = x[i]; o[i] = y[i] * ((1.0f - t) * (1.0f + t)); }
      break;
    case TPU_VPU_SIGMOID: for (size_t i = 0; i < n; i++) o[i] = sigmoid1(x[i]); break;
    case TPU_VPU_SIGMOID_GRAD:
      for (size_t i = 0; i < n; i++) { float s = x[i]; o[i] = y[i] * (s * (1.0f - s)); }
      break;
    case TPU_VPU_LEAKY_RELU:   /* x > 0 ? x : alpha*x; NaN stays NaN */
      for (size_t i = 0; i < n; i++) { float v = x[i]; o[i] = v > 0.0f || v != v ? v : al * v; }
      break;
    case TPU_VPU_LEAKY_RELU_GRAD:   /* dy where x > 0, alpha*dy elsewhere (x: the input or the output) */
      for (size_t i = 0; i < n; i++) { float v = x[i], d = y[i]; o[i] = v != v ? v : v > 0.0f ? d : al * d; }
      break;
    case TPU_VPU_GELU: case TPU_VPU_GELU_GRAD: case TPU_VPU_GELU_TANH: case TPU_VPU_GELU_TANH_GRAD:
    case TPU_VPU_SWISH: case TPU_VPU_SWISH_GRAD:
      for (size_t i = 0; i < n; i++) o[i] = smooth_act(op, x[i], y ? y[i] : 0.0f);
      break;
    case TPU_VPU_EXP: for (size_t i = 0; i < n; i++) o[i] = expf(x[i]); break;
    case TPU_VPU_LOG: for (size_t i = 0; i < n; i++) o[i] = logf(x[i]); break;
    case TPU_VPU_RECIPROCAL: for (size_t i = 0; i < n; i++) o[i] = 1.0f / x[i]; break;
    case TPU_VPU_RSQRT: for (size_t i = 0; i < n; i++) o[i] = 1.0f / sqrtf(x[i]); break;
    case TPU_VPU_SCALE: for (size_t i = 0; i < n; i++) o[i] = al * x[i]; break;
    case TPU_VPU_ADD_SCALAR: for (size_t i = 0; i < n; i++) o[i] = x[i] + al; break;
    case TPU_VPU_COPY: if (o != x) memcpy(o, x, n * sizeof *o); break;
    case TPU_VPU_CAST_BF16: for (size_t i = 0; i < n; i++) o[i] = tpu_bf16_round(x[i]); break;
    case TPU_VPU_CAST_F32:    /* bf16 values held in f32 widen exactly: a copy */
      if (o != x) memcpy(o, x, n * sizeof *o);
      break;
    default: return false;
  }
  return true;
}

/* The ops along rows or columns (bias add, reductions, softmax, argmax,
** accuracy); false for any other op. */
static bool exec_rowwise(tpu_vpu_op op, const tpu_vpu_args *a) {
  const int rows = a->rows, cols = a->cols;
  const float *x = a->x, *y = a->y;
  float *o = a->out;
  const float al = a->p.alpha;
  switch (op) {
    case TPU_VPU_BIAS_ADD:
      for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *orow = o + (size_t)r * cols;
        for (int c = 0; c < cols; c++) orow[c] = xr[c] + y[c];
      }
      break;
    case TPU_VPU_ROW_SUM:
      for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float s = xr[0];
        for (int c = 1; c < cols; c++) s += xr[c];
        o[r] = s;
      }
      break;
    case TPU_VPU_ROW_MAX:
      for (int r = 0; r < rows; r++) o[r] = row_max(x + (size_t)r * cols, cols);
      break;
    case TPU_VPU_COL_SUM:   /* accumulates in out: the loop over c vectorizes */
      memcpy(o, x, (size_t)cols * sizeof *o);
      for (int r = 1; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        for (int c = 0; c < cols; c++) o[c] += xr[c];
      }
      break;
    case TPU_VPU_COL_MAX:
      memcpy(o, x, (size_t)cols * sizeof *o);
      for (int r = 1; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        for (int c = 0; c < cols; c++) o[c] = max2(o[c], xr[c]);
      }
      break;
    case TPU_VPU_SOFTMAX: softmax_rows(x, o, rows, cols); break;
    case TPU_VPU_SOFTMAX_GRAD:   /* p (dy - sum(dy p)) per row, the sum left to right in f32 */
      for (int r = 0; r < rows; r++) {
        const float *pr = x + (size_t)r * cols, *dr = a->y + (size_t)r * cols;
        float *orow = o + (size_t)r * cols, s = 0.0f;
        for (int c = 0; c < cols; c++) s += pr[c] * dr[c];
        for (int c = 0; c < cols; c++) orow[c] = pr[c] * (dr[c] - s);
      }
      break;
    case TPU_VPU_SOFTMAX_XENT: softmax_xent_rows(x, a->labels, o, a->out2, al, rows, cols); break;
    case TPU_VPU_SIGMOID_BCE: sigmoid_bce_rows(x, a->labels, o, a->out2, al, rows); break;
    case TPU_VPU_MSE: mse_rows(x, y, o, a->out2, al, rows, cols); break;
    case TPU_VPU_ARGMAX:
      for (int r = 0; r < rows; r++) a->idx[r] = row_argmax(x + (size_t)r * cols, cols);
      break;
    case TPU_VPU_ACCURACY: {
      int64_t hits = 0;
      for (int r = 0; r < rows; r++) hits += row_argmax(x + (size_t)r * cols, cols) == a->labels[r];
      o[0] = (float)hits;
      break;
    }
    case TPU_VPU_BINARY_ACCURACY: {   /* Keras' binary_accuracy: sigmoid(x) > 0.5 predicts 1 */
      int64_t hits = 0;
      for (int r = 0; r < rows; r++) hits += (sigmoid1(x[r]) > 0.5f) == (a->labels[r] == 1);
      o[0] = (float)hits;
      break;
    }
    default: return false;
  }
  return true;
}

/* The optimizer updates of param (and its moments) in place. */
static void exec_optimizer(tpu_vpu_op op, const tpu_vpu_args *a, size_t n) {
  switch (op) {
    case TPU_VPU_SGD: {
      float *w = a->param;
      const float *g = a->grad, lr = a->p.lr;
      for (size_t i = 0; i < n; i++) w[i] = w[i] - lr * g[i];
      break;
    }
    case TPU_VPU_MOMENTUM: {
      float *w = a->param, *m = a->m;
      const float *g = a->grad, lr = a->p.lr, mu = a->p.momentum;
      for (size_t i = 0; i < n; i++) {
        float mi = mu * m[i] + g[i];
        m[i] = mi;
        w[i] = w[i] - lr * mi;
      }
      break;
    }
    case TPU_VPU_ADAM: {
      float *w = a->param, *m = a->m, *v = a->v;
      const float *g = a->grad, lr = a->p.lr, b1 = a->p.beta1, b2 = a->p.beta2, eps = a->p.eps;
      const float ob1 = 1.0f - b1, ob2 = 1.0f - b2;
      const double t = (double)a->p.step;
      const float c1 = (float)(1.0 / (1.0 - pow((double)b1, t)));
      const float c2 = (float)(1.0 / (1.0 - pow((double)b2, t)));
      for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + ob1 * gi;
        float vi = b2 * v[i] + ob2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        float mh = mi * c1, vh = vi * c2;
        w[i] = w[i] - lr * mh / (sqrtf(vh) + eps);
      }
      break;
    }
    default: break;
  }
}

tpu_status tpu_vpu_exec(tpu_vpu_op op, const tpu_vpu_args *a) {
  tpu_status st = check_args(op, a);
  if (st != TPU_OK) return st;
  const size_t n = (size_t)a->rows * (size_t)a->cols;
  if (!exec_elementwise(op, a, n) && !exec_rowwise(op, a)) exec_optimizer(op, a, n);
  if (a->round_bf16) {
    if (OPS[op].writes & O_OUT) tpu_bf16_round_array(a->out, tpu_vpu_operand_elems(op, TPU_VPU_O_OUT, a->rows, a->cols));
    if ((OPS[op].writes & O_OUT2) && a->out2) tpu_bf16_round_array(a->out2, n);
    if (OPS[op].writes & O_P) tpu_bf16_round_array(a->param, n);
  }
  return TPU_OK;
}
