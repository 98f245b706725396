/*
** onnx.c -- ONNX import: a ModelProto, as torch.onnx.export writes it
** (opsets 11 to 17), translated into the native model JSON object
** (docs/MODELS.md), which model.c then checks and shapes like any native
** file, plus the file's initializers as the model's starting weights in the
** native parameter layout. docs/MODELS.md, "ONNX import", is the user's
** account of what maps to what and what is refused.
**
** Reading. The file is parsed by protobuf-c against ONNX's own onnx.proto
** (Debian's libonnx-dev; the bindings are generated at build time into
** $(B)/gen/onnx, frontend/frontend.mk): no protobuf is decoded by hand.
** protobuf-c allocates through tpu_alloc, so the allocation-failure sweep
** covers it.
**
** Layout. PyTorch's tensors are NCHW and tpusim's samples HWC: the input
** [N, C, H, W] becomes [H, W, C], a Concat on axis 1 concatenates
** channels, Conv weights OIHW become HWIO (a depthwise one, [C*dm, 1, kh,
** kw], kh x kw x C x dm), and a Flatten of a C x H x W tensor, which ONNX
** orders C,H,W and tpusim H,W,C, is followed through element-wise layers to
** the Gemm (or MatMul) that reads it, whose weight rows are permuted to
** H,W,C order; any other reader of such a tensor is refused. Gemm's transB
** is undone (native dense weights are in x out), BatchNormalization's scale,
** B, mean and var go to gamma, beta and the moving statistics.
**
** Shapes. Each tensor's shape (NCHW, or a vector) is followed here as far
** as the translation needs it (a Conv's group against its channels, a
** padding against 'same', the Flatten permutation); the native loader then
** infers every layer's shape again and checks them, once.
**
** Transformers. A sequence [N, L, C] is the native 1 x L x C, token ids
** [N, L] the native [L] input of an embedding (a Gather), and 4-D heads
** keep ONNX's order (otensor.direct). The layers PyTorch exports as
** several nodes (LayerNormalization before opset 17, Gelu, a MatMul and its
** bias, a position table, attention written by hand) are found before the
** translation by fuse(), tried at each node as their last one, and read as
** one native layer there; the other nodes of a match are skipped.
**
** Not modelled: dilations, ceil_mode, grouped convolutions other than
** depthwise, constant folding (a Shape/Gather chain computing a Reshape's
** shape is refused as its operators), external data, nn.MultiheadAttention
** as exported (its projection is sliced and its batch transposed),
** attention masks other than causal.
*/
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/fe_int.h"
#include "onnx/onnx.pb-c.h"

/* Messages are built into fixed buffers; one too long is cut short. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define ONAME 32               /* tpu_fe_layer.name */
#define OMAX_NODES (4 * TPU_FE_MAX_LAYERS)
#define S(s) ((s) ? (s) : "")

enum { OW_NONE = 0, OW_CONV, OW_DW, OW_DENSE, OW_BN, OW_EMB, OW_POS, OW_LN, OW_MHA };

typedef struct otensor {       /* a value of the graph, as far as the translation follows it */
  const char *name;            /* borrowed from the proto */
  char nat[ONAME];             /* the native layer producing it ("input": the model input) */
  const Onnx__TensorProto *k;  /* a constant (initializer or Constant node), else NULL */
  int rank;                    /* 4 (N, C, H, W) or 2 (N, F) */
  int c, h, w;                 /* rank 2: c = F, h = w = 1 */
  bool vec;                    /* the native model sees a vector (h = w = 1 by construction) */
  bool direct;                 /* rank 4 not an image: [N, h, w, c] in the native order (a sequence reshaped
                                  to heads); rank 3 is always [N, L, C]: h = 1, w = L */
  bool ids;                    /* the model's input of token ids [N, L] (c = L), read by a Gather only */
  bool cfirst;                 /* an image reshaped to [N, C, H*W] (h, w, c still the image's), read by a
                                  Transpose [0, 2, 1] only: ViT's patches x.flatten(2).transpose(1, 2) */
  bool nonneg;                 /* its values are >= 0 (after a relu): zero padding before a max pool is exact */
  int pc, ph, pw;              /* flattened from C x H x W in ONNX's order (ph * pw > 1): a dense reading it
                                  permutes its weight rows */
} otensor;

typedef struct olayer {        /* where a native layer's parameters come from */
  int node;                    /* the ONNX node (-1: none) */
  int kind;                    /* OW_* */
  const Onnx__TensorProto *w, *b, *mean, *var;
  const Onnx__TensorProto *mha[8];   /* multi_head_attention: the kernels and biases of Q, K, V, O */
  int moff[4];                 /* their first columns (Q, K and V may be parts of one packed kernel) */
  bool trans_b;                /* dense: the weight is [units, in] */
  int pc, ph, pw;              /* dense: rows in C,H,W order to permute */
} olayer;

enum { FZ_NONE = 0, FZ_SKIP, FZ_GELU, FZ_LN, FZ_DENSE, FZ_POS, FZ_MHA };

typedef struct ofuse {         /* a subgraph read as one native layer, at its last node (the root) */
  int kind;                    /* FZ_*; FZ_SKIP: a node inside another's subgraph */
  const char *x;               /* the subgraph's one input value */
  const Onnx__TensorProto *k[8];   /* LN: gamma, beta; DENSE: W, b; POS: the table; MHA: Wq bq Wk bk Wv bv Wo bo */
  double eps;                  /* LN */
  bool tanh_form;              /* GELU */
  int heads, kd, vd;           /* MHA */
  int mask_len;                /* MHA: a causal mask's L x L (0: none) */
  int off[4];                  /* MHA: the first column of Q, K, V, O in its kernel and bias (a packed one) */
} ofuse;

typedef struct oname { const char *name; int prod, uses; } oname;   /* a value: its producer and readers */

struct fe_onnx {
  const char *where;
  char *err; size_t errcap;
  Onnx__ModelProto *mp;
  const Onnx__GraphProto *g;
  ProtobufCAllocator alloc;
  int opset;
  json_t *native, *layers;
  otensor *t; int nt, tcap;
  olayer *l; int nl, lcap;
  char format[64];
  int fail_layer;               /* the native layer of the native loader's error, -1 none */
  ofuse *fz;                    /* per node */
  oname *hx; unsigned hcap;     /* the values by name (open addressing, hcap a power of 2) */
};

static void *pb_alloc(void *ud, size_t n) { (void)ud; return tpu_malloc(n ? n : 1); }
static void pb_free(void *ud, void *p) { (void)ud; tpu_free(p); }

static tpu_status failf(fe_onnx *O, tpu_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tpu_status failf(fe_onnx *O, tpu_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (st == TPU_ERR_NOMEM) snprintf(O->err, O->errcap, "%s: out of memory", O->where);
  else snprintf(O->err, O->errcap, "%s: %s", O->where, msg);
  return st;
}
#define NOMEM(O) failf(O, TPU_ERR_NOMEM, "out of memory")

/* "node 3 'conv1' (Conv)" */
static const char *who(const fe_onnx *O, int i, char *buf, size_t cap) {
  const Onnx__NodeProto *n = O->g->node[i];
  snprintf(buf, cap, "node %d%s%.60s%s (%s)", i, n->name && *n->name ? " '" : "", S(n->name),
           n->name && *n->name ? "'" : "", S(n->op_type));
  return buf;
}
static tpu_status node_fail(fe_onnx *O, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tpu_status node_fail(fe_onnx *O, int i, const char *fmt, ...) {
  char msg[768], w[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(O->err, O->errcap, "%s: %s: %s", O->where, who(O, i, w, sizeof w), msg);
  return TPU_ERR_CONFIG;
}

/* {==================================================================
** Tensors, constants and attributes
** ================================================================== */
static otensor *find(fe_onnx *O, const char *name) {
  for (int k = O->nt - 1; k >= 0; k--)
    if (!strcmp(O->t[k].name, name)) return &O->t[k];
  return NULL;
}

/* Room for one more element in the array *p of *cap (n in use): false when
** out of memory (the array is kept). */
static bool grow(void **p, int *cap, int n, size_t size) {
  if (n < *cap) return true;
  const int c = *cap ? 2 * *cap : 64;
  void *q = tpu_realloc(*p, (size_t)c * size);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static otensor *add_tensor(fe_onnx *O, const char *name) {
  if (!grow((void **)&O->t, &O->tcap, O->nt, sizeof *O->t)) return NULL;
  otensor *t = &O->t[O->nt++];
  memset(t, 0, sizeof *t);
  t->name = name;
  return t;
}

static size_t numel(const Onnx__TensorProto *k) {
  size_t n = 1;
  for (size_t d = 0; d < k->n_dims; d++) {
    if (k->dims[d] < 0 || k->dims[d] > (1 << 30)) return (size_t)-1;
    n *= (size_t)k->dims[d];
    if (n > ((size_t)1 << 31)) return (size_t)-1;
  }
  return n;
}

/* Whether k holds n values of type 'dt' (FLOAT or INT64) inside the file. */
static bool holds(const Onnx__TensorProto *k, int dt, size_t n) {
  if (!k || k->data_type != dt || numel(k) != n) return false;
  if (k->has_data_location && k->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) return false;
  const size_t sz = dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? 4 : 8;
  if (k->has_raw_data && k->raw_data.len) return k->raw_data.len == n * sz;
  return dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? k->n_float_data == n : k->n_int64_data == n;
}
static float fval(const Onnx__TensorProto *k, size_t i) {
  if (k->has_raw_data && k->raw_data.len) {
    float v;
    memcpy(&v, k->raw_data.data + 4 * i, 4);   /* little-endian, as ONNX stores it and our hosts are */
    return v;
  }
  return k->float_data[i];
}
static int64_t ival(const Onnx__TensorProto *k, size_t i) {
  if (k->has_raw_data && k->raw_data.len) {
    int64_t v;
    memcpy(&v, k->raw_data.data + 8 * i, 8);
    return v;
  }
  return k->int64_data[i];
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t a = 0; a < n->n_attribute; a++)
    if (!strcmp(S(n->attribute[a]->name), name)) return n->attribute[a];
  return NULL;
}
static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_i ? a->i : dflt;
}
static double attr_float(const Onnx__NodeProto *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_f ? a->f : dflt;
}
/* The INTS attribute 'name' into v[0..want) (absent: dflt each); false when
** its length is not 'want'. */
static bool attr_ints(const Onnx__NodeProto *n, const char *name, size_t want, int64_t dflt, int64_t *v) {
  const Onnx__AttributeProto *a = attr(n, name);
  for (size_t k = 0; k < want; k++) v[k] = dflt;
  if (!a) return true;
  if (a->n_ints != want) return false;
  for (size_t k = 0; k < want; k++) v[k] = a->ints[k];
  return true;
}
static const char *attr_str(const Onnx__NodeProto *n, const char *name, char *buf, size_t cap) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a || !a->has_s) return "";
  snprintf(buf, cap, "%.*s", (int)a->s.len, (const char *)a->s.data);
  return buf;
}

/* Input k of node i: a graph value (not a constant) into *out. */
static tpu_status value_in(fe_onnx *O, int i, size_t k, otensor **out) {
  const Onnx__NodeProto *n = O->g->node[i];
  if (k >= n->n_input || !*S(n->input[k])) return node_fail(O, i, "input %zu is missing", k);
  otensor *t = find(O, n->input[k]);
  if (!t) return node_fail(O, i, "input '%.60s' is computed by no earlier node (the nodes must be in "
                           "topological order, as ONNX requires)", n->input[k]);
  if (t->k) return node_fail(O, i, "input '%.60s' is a constant; tpusim reads an operand computed from the model's "
                             "input here", n->input[k]);
  if (t->ids && strcmp(S(n->op_type), "Gather"))
    return node_fail(O, i, "reads the model's token ids '%.60s'; only a Gather of a table (an embedding) reads them",
                     n->input[k]);
  if (t->cfirst && strcmp(S(n->op_type), "Transpose"))
    return node_fail(O, i, "reads '%.60s', an image reshaped to [N, C, H*W]; only a Transpose [0, 2, 1] reads it "
                     "(to the sequence of pixels [N, H*W, C])", n->input[k]);
  *out = t;
  return TPU_OK;
}
/* Input k of node i as a constant (NULL when the input is absent or ""). */
static tpu_status const_in(fe_onnx *O, int i, size_t k, const Onnx__TensorProto **out) {
  const Onnx__NodeProto *n = O->g->node[i];
  *out = NULL;
  if (k >= n->n_input || !*S(n->input[k])) return TPU_OK;
  otensor *t = find(O, n->input[k]);
  if (!t || !t->k)
    return node_fail(O, i, "input %zu '%.60s' is not an initializer or a Constant; tpusim needs it constant", k,
                     n->input[k]);
  *out = t->k;
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Subgraphs read as one layer (torch.onnx.export's decompositions)
**
** Before the translation, each node from the last to the first is tried
** as the last node (the root) of: a hand-written attention block, a
** LayerNormalization decomposition, a Gelu (exact or tanh form, however
** its elementwise nodes are ordered), a MatMul plus a bias Add, an Add of
** a position table. A match marks its other nodes FZ_SKIP; it needs every
** intermediate value read inside the subgraph only.
** ================================================================== */
static int op_index(const char *const *tab, const char *op) {
  for (int k = 0; tab[k]; k++) if (!strcmp(tab[k], op)) return k;
  return -1;
}
static bool std_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }
static bool std_domain_node(const Onnx__NodeProto *n) { return std_domain(n->domain); }

static unsigned hstr(const char *s) {
  unsigned h = 2166136261u;
  while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
  return h;
}
static oname *slot(const fe_onnx *O, const char *s) {
  for (unsigned k = hstr(s) & (O->hcap - 1);; k = (k + 1) & (O->hcap - 1))
    if (!O->hx[k].name || !strcmp(O->hx[k].name, s)) return &O->hx[k];
}
static void note_name(fe_onnx *O, const char *s, int prod, int use) {
  if (!s || !*s) return;
  oname *e = slot(O, s);
  if (!e->name) *e = (oname){ .name = s, .prod = -1 };
  if (prod >= 0 && e->prod < 0) e->prod = prod;
  e->uses += use;
}
static tpu_status index_names(fe_onnx *O) {
  const Onnx__GraphProto *g = O->g;
  size_t n = g->n_output + 16;
  for (size_t i = 0; i < g->n_node; i++) n += g->node[i]->n_input + g->node[i]->n_output;
  O->hcap = 64;
  while (O->hcap < 2 * n) O->hcap *= 2;
  O->hx = tpu_calloc(O->hcap, sizeof *O->hx);
  O->fz = tpu_calloc(g->n_node, sizeof *O->fz);
  if (!O->hx || !O->fz) return NOMEM(O);
  for (size_t i = 0; i < g->n_node; i++) {
    for (size_t k = 0; k < g->node[i]->n_output; k++) note_name(O, g->node[i]->output[k], (int)i, 0);
    for (size_t k = 0; k < g->node[i]->n_input; k++) note_name(O, g->node[i]->input[k], -1, 1);
  }
  for (size_t k = 0; k < g->n_output; k++) note_name(O, g->output[k]->name, -1, 1);
  return TPU_OK;
}
static const oname *value(const fe_onnx *O, const char *s) {
  const oname *e = s && *s ? slot(O, s) : NULL;
  return e && e->name ? e : NULL;
}
static const char *op_of(const fe_onnx *O, int i) { return S(O->g->node[i]->op_type); }
static const char *in_of(const fe_onnx *O, int i, size_t k) {
  return k < O->g->node[i]->n_input ? S(O->g->node[i]->input[k]) : "";
}
/* The node computing value s if its operator is 'op' and it is not in a
** subgraph yet; else -1. */
static int made_by(const fe_onnx *O, const char *s, const char *op) {
  const oname *e = value(O, s);
  if (!e || e->prod < 0 || O->fz[e->prod].kind || strcmp(op_of(O, e->prod), op)) return -1;
  return std_domain_node(O->g->node[e->prod]) ? e->prod : -1;
}
/* Value s as a constant: an initializer or a Constant node's tensor. */
static const Onnx__TensorProto *kof(fe_onnx *O, const char *s) {
  if (!s || !*s) return NULL;
  const otensor *t = find(O, s);
  if (t && t->k) return t->k;
  const oname *e = value(O, s);
  if (!e || e->prod < 0 || strcmp(op_of(O, e->prod), "Constant")) return NULL;
  const Onnx__AttributeProto *a = attr(O->g->node[e->prod], "value");
  return a ? a->t : NULL;
}
static bool kscalar(fe_onnx *O, const char *s, double *v) {
  const Onnx__TensorProto *k = kof(O, s);
  if (!k || !holds(k, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1)) return false;
  *v = fval(k, 0);
  return true;
}
static bool near(double a, double b) { return fabs(a - b) <= 1e-5 * (1 + fabs(b)); }
/* Node i's operands as (value, constant): false unless exactly one of its
** two inputs is a constant. */
static bool split_k(fe_onnx *O, int i, const char **x, const Onnx__TensorProto **k) {
  if (O->g->node[i]->n_input != 2) return false;
  for (size_t a = 0; a < 2; a++)
    if ((*k = kof(O, in_of(O, i, a))) && !kof(O, in_of(O, i, 1 - a))) { *x = in_of(O, i, 1 - a); return true; }
  return false;
}

/* Whether the nodes set[0..n) (set[0] the root) read their intermediate
** values only among themselves, and are free; then marks them. */
static bool claim(fe_onnx *O, const int *all, int nall, const ofuse *f) {
  int set[40], n = 0;   /* all without repeats (a node several paths reach: a packed projection) */
  for (int a = 0; a < nall && n < 40; a++) {
    int b = 0;
    while (b < n && set[b] != all[a]) b++;
    if (b == n) set[n++] = all[a];
  }
  if (!n) return false;
  for (int a = 0; a < n; a++) {
    const Onnx__NodeProto *nd = O->g->node[set[a]];
    if (O->fz[set[a]].kind || nd->n_output < 1) return false;
    for (size_t o = 0; a > 0 && o < nd->n_output; o++) {
      int inside = 0;
      for (int b = 0; b < n; b++)
        for (size_t k = 0; k < O->g->node[set[b]]->n_input; k++) inside += !strcmp(in_of(O, set[b], k), S(nd->output[o]));
      const oname *e = value(O, nd->output[o]);
      if ((e ? e->uses : 0) != inside || (o == 0 && !e)) return false;
    }
  }
  O->fz[set[0]] = *f;
  for (int a = 1; a < n; a++) O->fz[set[a]].kind = FZ_SKIP;
  return true;
}

/* Gelu: the elementwise nodes from value x to the root, evaluated at a few
** points against x*Phi(x) and its tanh form. */
#define ISL 24
static bool ew_op(const char *op) {
  static const char *const E[] = { "Mul", "Add", "Sub", "Div", "Pow", "Erf", "Tanh", "Sqrt", NULL };
  return op_index(E, op) >= 0;
}
static double ew_eval(const char *op, double a, double b) {
  switch (op[0]) {
  case 'M': return a * b;
  case 'A': return a + b;
  case 'S': return op[1] == 'u' ? a - b : sqrt(a);
  case 'D': return a / b;
  case 'P': return pow(a, b);
  case 'E': return erf(a);
  default: return tanh(a);
  }
}
/* f(x) at 'pt' over the nodes sub[0..n) (ascending), or NAN when an input
** is neither x, a scalar constant nor computed in sub. */
static double island_at(fe_onnx *O, const int *sub, int n, const char *x, double pt) {
  double v[ISL];
  for (int a = 0; a < n; a++) {
    double arg[2] = { 0, 0 };
    const size_t nin = O->g->node[sub[a]]->n_input;
    if (nin < 1 || nin > 2) return NAN;
    for (size_t k = 0; k < nin; k++) {
      const char *s = in_of(O, sub[a], k);
      int b = 0;
      while (b < a && strcmp(S(O->g->node[sub[b]]->output[0]), s)) b++;
      if (!strcmp(s, x)) arg[k] = pt;
      else if (b < a) arg[k] = v[b];
      else if (!kscalar(O, s, &arg[k])) return NAN;
    }
    v[a] = ew_eval(op_of(O, sub[a]), arg[0], arg[1]);
  }
  return v[n - 1];
}
static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static bool fuse_gelu(fe_onnx *O, int r) {
  int anc[ISL], na = 1;
  anc[0] = r;
  for (int q = 0; q < na; q++)
    for (size_t k = 0; k < O->g->node[anc[q]]->n_input; k++) {
      const oname *e = value(O, in_of(O, anc[q], k));
      bool seen = false;
      for (int b = 0; e && b < na; b++) seen = seen || anc[b] == e->prod;
      if (e && e->prod >= 0 && !seen && na < ISL && !O->fz[e->prod].kind && ew_op(op_of(O, e->prod)) &&
          O->g->node[e->prod]->n_output == 1)
        anc[na++] = e->prod;
    }
  bool curve = false;   /* both forms end in a Mul and hold an Erf or a Tanh */
  for (int a = 0; a < na; a++) curve = curve || !strcmp(op_of(O, anc[a]), "Erf") || !strcmp(op_of(O, anc[a]), "Tanh");
  if (!curve || strcmp(op_of(O, r), "Mul")) return false;
  qsort(anc, (size_t)na, sizeof *anc, cmp_int);
  static const double pts[] = { -2.7, -1.1, -0.3, 0.2, 0.9, 1.7, 3.1 };
  for (int q = 0; q < na; q++)
    for (size_t k = 0; k < O->g->node[anc[q]]->n_input; k++) {
      const char *x = in_of(O, anc[q], k);
      if (kof(O, x)) continue;
      int sub[ISL], ns = 0;   /* the nodes of anc that depend on x */
      for (int a = 0; a < na; a++) {
        bool dep = false;
        for (size_t j = 0; j < O->g->node[anc[a]]->n_input && !dep; j++) {
          const char *s = in_of(O, anc[a], j);
          dep = !strcmp(s, x);
          for (int b = 0; b < ns && !dep; b++) dep = !strcmp(S(O->g->node[sub[b]]->output[0]), s);
        }
        if (dep) sub[ns++] = anc[a];
      }
      if (ns < 3 || sub[ns - 1] != r) continue;
      bool exact = true, tnh = true;
      for (size_t p = 0; p < sizeof pts / sizeof *pts; p++) {
        const double t = pts[p], y = island_at(O, sub, ns, x, t);
        exact = exact && near(y, 0.5 * t * (1 + erf(t / sqrt(2.0))));
        tnh = tnh && near(y, 0.5 * t * (1 + tanh(sqrt(2 / M_PI) * (t + 0.044715 * t * t * t))));
      }
      if (!exact && !tnh) continue;
      int set[ISL];   /* the root first */
      set[0] = r;
      for (int a = 0; a < ns - 1; a++) set[a + 1] = sub[a];
      const ofuse f = { .kind = FZ_GELU, .x = x, .tanh_form = tnh && !exact };
      return claim(O, set, ns, &f);
    }
  return false;
}

static bool reduce_last(fe_onnx *O, int i) {
  int64_t ax;
  return i >= 0 && attr_ints(O->g->node[i], "axes", 1, 0, &ax) && ax == -1 && attr_int(O->g->node[i], "keepdims", 1);
}
/* LayerNormalization before opset 17: ReduceMean, Sub, Pow 2, ReduceMean,
** Add eps, Sqrt, Div, [Mul gamma], [Add beta] on the last axis. */
static bool fuse_ln(fe_onnx *O, int r) {
  int set[9], n = 1, i = r;
  ofuse f = { .kind = FZ_LN };
  const char *x;
  const Onnx__TensorProto *k;
  set[0] = r;
  if (!strcmp(op_of(O, i), "Add") && split_k(O, i, &x, &k) && k->n_dims == 1) {
    f.k[1] = k;
    if ((i = made_by(O, x, "Mul")) < 0 && (i = made_by(O, x, "Div")) < 0) return false;
    set[n++] = i;
  }
  if (!strcmp(op_of(O, i), "Mul") && split_k(O, i, &x, &k) && k->n_dims == 1) {
    f.k[0] = k;
    if ((i = made_by(O, x, "Div")) < 0) return false;
    set[n++] = i;
  }
  if (strcmp(op_of(O, i), "Div") || O->g->node[i]->n_input != 2) return false;
  const int s = made_by(O, in_of(O, i, 0), "Sub"), q = made_by(O, in_of(O, i, 1), "Sqrt");
  const int m1 = s < 0 ? -1 : made_by(O, in_of(O, s, 1), "ReduceMean");
  int e = q < 0 ? -1 : made_by(O, in_of(O, q, 0), "Add");
  if (m1 < 0 || e < 0 || strcmp(in_of(O, m1, 0), in_of(O, s, 0)) || !reduce_last(O, m1) || !split_k(O, e, &x, &k) ||
      !holds(k, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1))
    return false;
  f.eps = fval(k, 0);
  const int v = made_by(O, x, "ReduceMean"), p = v < 0 ? -1 : made_by(O, in_of(O, v, 0), "Pow");
  double two;
  if (!reduce_last(O, v) || p < 0 || strcmp(in_of(O, p, 0), S(O->g->node[s]->output[0])) ||
      !kscalar(O, in_of(O, p, 1), &two) || two != 2.0)
    return false;
  if (set[n - 1] != i) set[n++] = i;
  set[n++] = s; set[n++] = m1; set[n++] = q; set[n++] = e; set[n++] = v; set[n++] = p;
  f.x = in_of(O, s, 0);
  return claim(O, set, n, &f);
}

/* MatMul(x, W) + b, b a vector: one dense with its bias. */
static bool fuse_dense(fe_onnx *O, int r) {
  const char *x;
  const Onnx__TensorProto *k;
  if (strcmp(op_of(O, r), "Add") || !split_k(O, r, &x, &k) || k->n_dims != 1) return false;
  const int m = made_by(O, x, "MatMul");
  if (m < 0 || !kof(O, in_of(O, m, 1)) || kof(O, in_of(O, m, 0))) return false;
  const int set[2] = { r, m };
  const ofuse f = { .kind = FZ_DENSE, .x = in_of(O, m, 0), .k = { kof(O, in_of(O, m, 1)), k } };
  return claim(O, set, 2, &f);
}

/* x + P, P an [L, C] or [1, L, C] table, or Gather(table, 0..L-1): the
** native position_embedding. */
static bool fuse_pos(fe_onnx *O, int r) {
  const char *x;
  const Onnx__TensorProto *k;
  if (strcmp(op_of(O, r), "Add") || O->g->node[r]->n_input != 2) return false;
  if (split_k(O, r, &x, &k)) {
    if (k->n_dims != 2 && !(k->n_dims == 3 && k->dims[0] == 1)) return false;
    const int set[1] = { r };
    const ofuse f = { .kind = FZ_POS, .x = x, .k = { k } };
    return claim(O, set, 1, &f);
  }
  for (size_t a = 0; a < 2; a++) {
    const int g = made_by(O, in_of(O, r, a), "Gather");
    const Onnx__TensorProto *t = g < 0 ? NULL : kof(O, in_of(O, g, 0)), *ix = g < 0 ? NULL : kof(O, in_of(O, g, 1));
    if (!t || !ix || t->n_dims != 2 || attr_int(O->g->node[g], "axis", 0) != 0 || kof(O, in_of(O, r, 1 - a)) ||
        !holds(ix, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, numel(ix)))
      continue;
    bool seq = ix->n_dims == 1 || (ix->n_dims == 2 && ix->dims[0] == 1);
    for (size_t j = 0; seq && j < numel(ix); j++) seq = ival(ix, j) == (int64_t)j;
    const int set[2] = { r, g };
    const ofuse f = { .kind = FZ_POS, .x = in_of(O, r, 1 - a), .k = { t } };
    if (seq) return claim(O, set, 2, &f);
  }
  return false;
}

/* Which part of a Split on the last axis value s is: its first column
** into *off and its width into *width; false when not one. */
static bool split_part(fe_onnx *O, int sp, const char *s, int *off, int *width) {
  const Onnx__NodeProto *nd = O->g->node[sp];
  const Onnx__TensorProto *k = O->opset >= 13 ? kof(O, in_of(O, sp, 1)) : NULL;
  const Onnx__AttributeProto *a = attr(nd, "split");
  const int64_t axis = attr_int(nd, "axis", 0);
  size_t j = 0;
  while (j < nd->n_output && strcmp(S(nd->output[j]), s)) j++;
  if ((axis != -1 && axis != 2) || j == nd->n_output || nd->n_output > 8) return false;
  if (k ? !holds(k, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, nd->n_output) : !a || a->n_ints != nd->n_output)
    return false;   /* equal parts of an unknown width: not read */
  int64_t o = 0;
  for (size_t q = 0; q <= j; q++) {
    const int64_t v = k ? ival(k, q) : a->ints[q];
    if (v < 1 || v > (1 << 20)) return false;
    if (q < j) o += v;
    else *width = (int)v;
  }
  *off = (int)o;
  return true;
}

/* A projection x W (+ b) for attention: the MatMul (and Add) into set; or
** a part of a packed one split on the last axis (nanoGPT's
** c_attn(x).split(C, dim=2)): its columns from *off, *width of them. */
static bool proj(fe_onnx *O, const char *s, const char **x, const Onnx__TensorProto **w,
                 const Onnx__TensorProto **b, int *set, int *n, int *off, int *width) {
  const char *y = s;
  int m;
  *b = NULL;
  *off = 0;
  *width = -1;
  const int sp = made_by(O, s, "Split");
  if (sp >= 0) {
    if (!split_part(O, sp, s, off, width)) return false;
    set[(*n)++] = sp;
    s = y = in_of(O, sp, 0);
  }
  const int a = made_by(O, s, "Add");
  if (a >= 0) {
    if (!split_k(O, a, &y, b) || (*b)->n_dims != 1) return false;
    set[(*n)++] = a;
  }
  if ((m = made_by(O, y, "MatMul")) < 0 || !(*w = kof(O, in_of(O, m, 1))) || (*w)->n_dims != 2 ||
      kof(O, in_of(O, m, 0)))
    return false;
  set[(*n)++] = m;
  *x = in_of(O, m, 0);
  if (*width < 0) *width = (int)(*w)->dims[1];
  return *off + (int64_t)*width <= (*w)->dims[1];
}
static bool perm_is(fe_onnx *O, int t, int a, int b, int c, int d) {
  int64_t p[4];
  return t >= 0 && attr_ints(O->g->node[t], "perm", 4, -1, p) && p[0] == a && p[1] == b && p[2] == c && p[3] == d;
}
/* A reshape target [batch, L or 0, H, d]: H and d, else false. */
static bool heads_of(fe_onnx *O, int rs, int *h, int *d) {
  const Onnx__TensorProto *k = rs < 0 ? NULL : kof(O, in_of(O, rs, 1));
  if (!k || !holds(k, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 4) || ival(k, 2) < 1 || ival(k, 2) > 1024 ||
      ival(k, 3) < 1 || ival(k, 3) > 65536)
    return false;
  *h = (int)ival(k, 2);
  *d = (int)ival(k, 3);
  return true;
}
/* One head input of attention: Transpose(Reshape(proj(x), [b, L, H, d]),
** perm), with perm [0,2,1,3] (Q, V) or [0,2,3,1] (K^T, also written as
** [0,2,1,3] then [0,1,3,2]). */
static bool head(fe_onnx *O, const char *s, bool kt, const char **x, const Onnx__TensorProto **w,
                 const Onnx__TensorProto **b, int *h, int *d, int *set, int *n, int *off) {
  int t = made_by(O, s, "Transpose");
  if (kt && perm_is(O, t, 0, 1, 3, 2)) {
    set[(*n)++] = t;
    t = made_by(O, in_of(O, t, 0), "Transpose");
    kt = false;
  }
  if (!(kt ? perm_is(O, t, 0, 2, 3, 1) : perm_is(O, t, 0, 2, 1, 3))) return false;
  const int rs = made_by(O, in_of(O, t, 0), "Reshape");
  if (!heads_of(O, rs, h, d)) return false;
  set[(*n)++] = t;
  set[(*n)++] = rs;
  int width;
  return proj(O, in_of(O, rs, 0), x, w, b, set, n, off, &width) && width == *h * *d;
}
/* A causal mask on the scores, square [L, L] or [1, 1, L, L]: Where(j > i,
** fill, s), Where(j <= i, s, fill) (masked_fill, torch.where) with fill <=
** -1e4 or -inf, or Add(s, M), M 0 on and below the diagonal and <= -1e4
** above. Its length into *len, the scores' value into *s. */
static bool mask_sq(const Onnx__TensorProto *k, int dt, int *len) {
  const size_t nd = k ? k->n_dims : 0;
  if (!k || k->data_type != dt || (nd != 2 && !(nd == 4 && k->dims[0] == 1 && k->dims[1] == 1)) ||
      k->dims[nd - 1] != k->dims[nd - 2] || k->dims[nd - 1] < 1 || k->dims[nd - 1] > 4096)
    return false;
  const size_t n = numel(k);
  *len = (int)k->dims[nd - 1];
  if (k->has_data_location && k->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) return false;
  if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return holds(k, dt, n);
  return k->has_raw_data && k->raw_data.len ? k->raw_data.len == n : k->n_int32_data == n;
}
static bool causal_mask(fe_onnx *O, int i, const char **s, int *len) {
  const bool where = !strcmp(op_of(O, i), "Where");
  const Onnx__TensorProto *k;
  double fill = 0;
  if (where) {
    k = O->g->node[i]->n_input == 3 ? kof(O, in_of(O, i, 0)) : NULL;
    const bool above = kscalar(O, in_of(O, i, 1), &fill);   /* Where(j > i, fill, s) */
    if (!mask_sq(k, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, len) || !(above || kscalar(O, in_of(O, i, 2), &fill)) ||
        !(fill <= -1e4) || kof(O, in_of(O, i, above ? 2 : 1)))
      return false;
    *s = in_of(O, i, above ? 2 : 1);
    for (int r = 0; r < *len; r++)
      for (int c = 0; c < *len; c++) {
        const size_t j = (size_t)r * (size_t)*len + (size_t)c;
        const bool v = k->has_raw_data && k->raw_data.len ? k->raw_data.data[j] != 0 : k->int32_data[j] != 0;
        if (v != (above ? c > r : c <= r)) return false;
      }
    return true;
  }
  if (!split_k(O, i, s, &k) || !mask_sq(k, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, len)) return false;
  for (int r = 0; r < *len; r++)
    for (int c = 0; c < *len; c++) {
      const float v = fval(k, (size_t)r * (size_t)*len + (size_t)c);
      if (c <= r ? v != 0.0f : !(v <= -1e4f)) return false;
    }
  return true;
}

/* Attention as written by hand in PyTorch (and exported): Q, K, V
** projections split into heads, Softmax(Q K^T / sqrt(d)) V, heads merged
** (Transpose [0,2,1,3], Reshape [b, L, H*dv]), the output projection. */
static bool fuse_mha(fe_onnx *O, int r) {
  int set[40], n = 0, h[3], d[3], off[4], wo;
  const char *x[4];
  const Onnx__TensorProto *w[4], *b[4];
  if (!proj(O, S(O->g->node[r]->output[0]), &x[3], &w[3], &b[3], set, &n, &off[3], &wo) || set[0] != r || off[3])
    return false;
  const int rs = made_by(O, x[3], "Reshape"), t = rs < 0 ? -1 : made_by(O, in_of(O, rs, 0), "Transpose");
  const int cm = t < 0 || !perm_is(O, t, 0, 2, 1, 3) ? -1 : made_by(O, in_of(O, t, 0), "MatMul");
  const int sm = cm < 0 ? -1 : made_by(O, in_of(O, cm, 0), "Softmax");
  if (sm < 0 || (attr_int(O->g->node[sm], "axis", -1) != -1 && attr_int(O->g->node[sm], "axis", -1) != 3)) return false;
  set[n++] = rs; set[n++] = t; set[n++] = cm; set[n++] = sm;
  const char *s0, *si = in_of(O, sm, 0);
  const Onnx__TensorProto *k;
  int cw = made_by(O, si, "Where"), len = 0;
  if (cw < 0) cw = made_by(O, si, "Add");
  if (cw >= 0 && causal_mask(O, cw, &si, &len)) set[n++] = cw;
  int sc = made_by(O, si, "Div");   /* the scale: on the scores, or on Q before the product (timm) */
  bool div = sc >= 0;
  if (sc < 0) sc = made_by(O, si, "Mul");
  if (sc < 0 || !split_k(O, sc, &s0, &k)) { sc = -1; s0 = si; div = false; }
  const int qk = made_by(O, s0, "MatMul");
  const char *q = qk < 0 ? "" : in_of(O, qk, 0);
  if (qk >= 0 && sc < 0 && ((sc = made_by(O, q, "Mul")) >= 0 || (div = (sc = made_by(O, q, "Div")) >= 0)) &&
      !split_k(O, sc, &q, &k))
    sc = -1;
  if (qk < 0 || sc < 0 || !holds(k, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1) || (div && kof(O, in_of(O, sc, 1)) != k))
    return false;   /* a Div by the constant, not of it */
  set[n++] = sc;
  set[n++] = qk;
  if (!head(O, q, false, &x[0], &w[0], &b[0], &h[0], &d[0], set, &n, &off[0]) ||
      !head(O, in_of(O, qk, 1), true, &x[1], &w[1], &b[1], &h[1], &d[1], set, &n, &off[1]) ||
      !head(O, in_of(O, cm, 1), false, &x[2], &w[2], &b[2], &h[2], &d[2], set, &n, &off[2]))
    return false;
  const Onnx__TensorProto *m = kof(O, in_of(O, rs, 1));
  const double want = div ? sqrt((double)d[0]) : 1 / sqrt((double)d[0]);
  if (strcmp(x[0], x[1]) || strcmp(x[0], x[2]) || h[0] != h[1] || h[0] != h[2] || d[0] != d[1] ||
      !near(fval(k, 0), want) || !m || !holds(m, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3) ||
      (ival(m, 2) != -1 && ival(m, 2) != (int64_t)h[2] * d[2]) || (!b[0] != !b[1] || !b[0] != !b[2] || !b[0] != !b[3]))
    return false;
  ofuse f = { .kind = FZ_MHA, .x = x[0], .heads = h[0], .kd = d[0], .vd = d[2], .mask_len = len };
  for (int a = 0; a < 4; a++) { f.k[2 * a] = w[a]; f.k[2 * a + 1] = b[a]; f.off[a] = off[a]; }
  return claim(O, set, n, &f);
}

static tpu_status fuse(fe_onnx *O) {
  tpu_status st = index_names(O);
  if (st) return st;
  for (int r = (int)O->g->n_node - 1; r >= 0; r--) {
    const char *op = op_of(O, r);
    if (O->fz[r].kind || !std_domain_node(O->g->node[r]) || O->g->node[r]->n_output < 1) continue;
    if ((!strcmp(op, "Add") || !strcmp(op, "MatMul")) && fuse_mha(O, r)) continue;
    if ((!strcmp(op, "Add") || !strcmp(op, "Mul") || !strcmp(op, "Div")) && fuse_ln(O, r)) continue;
    if (ew_op(op) && fuse_gelu(O, r)) continue;
    if (fuse_dense(O, r)) continue;
    fuse_pos(O, r);
  }
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** Native layers
** ================================================================== */
static bool name_used(const fe_onnx *O, const char *s) {
  if (!strcmp(s, "input")) return true;
  for (size_t k = 0; k < json_array_size(O->layers); k++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(O->layers, k), "name")), s)) return true;
  return false;
}

/* Appends layer 'type' for node i, reading 'in' (one or more tensors), its
** parameters from 'src' (NULL: none); its name is the node's when that
** fits (with 'suffix' for a layer the node needs before its own, its
** padding: NULL for none), and is written to out_name. Returns the layer
** object (borrowed) or NULL (out of memory). */
static json_t *emit_as(fe_onnx *O, int i, const char *suffix, const char *type, otensor *const *in, int nin,
                       const olayer *src, char *out_name) {
  const Onnx__NodeProto *n = O->g->node[i];
  char name[ONAME];
  const char *nn = S(n->name), *sf = suffix ? suffix : "";
  if (*nn && strlen(nn) + strlen(sf) < ONAME) snprintf(name, sizeof name, "%s%s", nn, sf);
  else snprintf(name, sizeof name, "%.20s_%d%s", S(n->op_type), i, sf);
  for (int k = 2; name_used(O, name); k++) snprintf(name, sizeof name, "%.20s_%d_%d", S(n->op_type), i, k);
  if (!grow((void **)&O->l, &O->lcap, O->nl, sizeof *O->l)) return NULL;
  json_t *L = json_object(), *ins = json_array();
  if (!L || !ins || json_object_set_new(L, "type", json_string(type)) || json_object_set_new(L, "name", json_string(name)))
    goto fail;
  for (int k = 0; k < nin; k++)
    if (json_array_append_new(ins, json_string(in[k]->nat))) goto fail;
  if (json_object_set_new(L, "inputs", ins)) { ins = NULL; goto fail; }
  ins = NULL;
  if (json_array_append_new(O->layers, L)) return NULL;
  O->l[O->nl] = src ? *src : (olayer){ .node = i };
  O->l[O->nl++].node = i;
  snprintf(out_name, ONAME, "%s", name);
  return L;
fail:
  json_decref(ins);
  json_decref(L);
  return NULL;
}
static json_t *emit(fe_onnx *O, int i, const char *type, otensor *const *in, int nin, const olayer *src,
                    char *out_name) {
  return emit_as(O, i, NULL, type, in, nin, src, out_name);
}

static int set_int(json_t *L, const char *k, json_int_t v) { return json_object_set_new(L, k, json_integer(v)); }

/* The output tensor of node i (its first output), as 'like' with the native
** name 'nat'. */
static otensor *output(fe_onnx *O, int i, const otensor *like, const char *nat) {
  const Onnx__NodeProto *n = O->g->node[i];
  const otensor copy = *like;  /* 'like' may be in the table add_tensor moves */
  otensor *t = add_tensor(O, n->n_output ? S(n->output[0]) : "");
  if (!t) return NULL;
  const char *name = t->name;
  *t = copy;
  t->name = name;
  t->k = NULL;
  snprintf(t->nat, sizeof t->nat, "%s", nat);
  return t;
}
/* }================================================================== */

/* {==================================================================
** Operators
** ================================================================== */
typedef struct owin {          /* a Conv's or a pool's window */
  int kh, kw, s;
  int mode;                    /* 0 valid, 1 same (Keras' padding, ONNX's SAME_UPPER), 2 explicit pads */
  int pad[4];                  /* top, left, bottom, right (ONNX's order) */
} owin;

/* Keras' 'same' pads of an h x w input: top, left, bottom, right. */
static void same_pads(const otensor *x, int kh, int kw, int s, int p[4]) {
  const int oh = (x->h + s - 1) / s, ow = (x->w + s - 1) / s;
  const int ph = (oh - 1) * s + kh - x->h, pw = (ow - 1) * s + kw - x->w;
  p[0] = ph > 0 ? ph / 2 : 0; p[2] = ph > 0 ? ph - p[0] : 0;
  p[1] = pw > 0 ? pw / 2 : 0; p[3] = pw > 0 ? pw - p[1] : 0;
}

static tpu_status window(fe_onnx *O, int i, const otensor *x, owin *w) {
  const Onnx__NodeProto *n = O->g->node[i];
  int64_t st[2], dil[2], pads[4];
  char ap[32];
  if (!attr_ints(n, "strides", 2, 1, st) || st[0] != st[1] || st[0] < 1 || st[0] > 64)
    return node_fail(O, i, "attribute 'strides' must be [s, s] with s in 1..64 (one stride for both axes)");
  if (!attr_ints(n, "dilations", 2, 1, dil) || dil[0] != 1 || dil[1] != 1)
    return node_fail(O, i, "attribute 'dilations' must be [1, 1]; dilated windows are not supported");
  if (!attr_ints(n, "pads", 4, 0, pads))
    return node_fail(O, i, "attribute 'pads' must have 4 values [top, left, bottom, right]");
  w->s = (int)st[0];
  const char *a = attr_str(n, "auto_pad", ap, sizeof ap);
  int same[4];
  same_pads(x, w->kh, w->kw, w->s, same);
  if (!strcmp(a, "VALID")) { w->mode = 0; return TPU_OK; }
  if (!strcmp(a, "SAME_UPPER")) { w->mode = 1; memcpy(w->pad, same, sizeof same); return TPU_OK; }
  if (*a && strcmp(a, "NOTSET"))
    return node_fail(O, i, "attribute 'auto_pad' is \"%s\"; expected NOTSET, VALID or SAME_UPPER", a);
  bool zero = true, eq = true;
  for (int k = 0; k < 4; k++) {
    if (pads[k] < 0 || pads[k] > 1024) return node_fail(O, i, "attribute 'pads' must hold values in 0..1024");
    w->pad[k] = (int)pads[k];
    zero = zero && pads[k] == 0;
    eq = eq && pads[k] == same[k];
  }
  w->mode = zero ? 0 : eq ? 1 : 2;
  return TPU_OK;
}

static void out_hw(const otensor *x, const owin *w, int *oh, int *ow) {
  if (w->mode == 1) { *oh = (x->h + w->s - 1) / w->s; *ow = (x->w + w->s - 1) / w->s; return; }
  const int h = x->h - w->kh, v = x->w - w->kw;
  *oh = h < 0 ? 1 : h / w->s + 1;
  *ow = v < 0 ? 1 : v / w->s + 1;
}

/* A zero_padding layer before node i's window: *x becomes the padded tensor. */
static tpu_status zero_pad(fe_onnx *O, int i, otensor *x, const int p[4]) {
  otensor *in[1] = { x };
  char name[ONAME];
  json_t *L = emit_as(O, i, O->g->node[i]->op_type && !strcmp(O->g->node[i]->op_type, "Pad") ? NULL : "_pad",
                      "zero_padding", in, 1, NULL, name);
  if (!L || json_object_set_new(L, "padding", json_pack("[[ii][ii]]", p[0], p[2], p[1], p[3]))) return NOMEM(O);
  x->h += p[0] + p[2];
  x->w += p[1] + p[3];
  snprintf(x->nat, sizeof x->nat, "%s", name);
  return TPU_OK;
}

static tpu_status image_in(fe_onnx *O, int i, otensor *x) {
  otensor *t;
  tpu_status st = value_in(O, i, 0, &t);
  if (st) return st;
  if (t->rank != 4 || t->vec || t->direct)
    return node_fail(O, i, "expects a 4-D N x C x H x W input; '%.60s' is %s", t->name,
                     t->direct ? "not an image (N x H x W x C)" : t->rank == 4 ?
                     "a vector (N x C x 1 x 1 after a global pool)" : t->rank == 3 ? "a sequence [N, L, C]" : "2-D");
  *x = *t;
  return TPU_OK;
}

static tpu_status op_conv(fe_onnx *O, int i) {
  otensor x;
  const Onnx__TensorProto *W, *B;
  tpu_status st = image_in(O, i, &x);
  if (st || (st = const_in(O, i, 1, &W)) || (st = const_in(O, i, 2, &B))) return st;
  if (!W || W->n_dims != 4 || W->dims[0] < 1 || W->dims[0] > 65536 || W->dims[1] < 1 || W->dims[2] < 1 ||
      W->dims[2] > 64 || W->dims[3] < 1 || W->dims[3] > 64)
    return node_fail(O, i, "input 1 (the weight) must be a 4-D constant [F, C/group, kh, kw], F in 1..65536, "
                     "kh and kw in 1..64");
  const int F = (int)W->dims[0], cg = (int)W->dims[1];
  const int64_t group = attr_int(O->g->node[i], "group", 1);
  int64_t ks[2];
  owin w = { .kh = (int)W->dims[2], .kw = (int)W->dims[3] };
  const bool dw = group == x.c && group != 1;   /* else conv2d, grouped when group > 1 */
  if (group < 1 || group > x.c || x.c % group || F % group || cg != x.c / group)
    return node_fail(O, i, "group %lld with %d input channels and a weight of %d x %d: the group must divide the "
                     "input channels and F, and the weight be [F, channels/group, kh, kw] (group 1: conv2d, 1 < "
                     "group < channels: conv2d with groups, group == channels: depthwise_conv2d)",
                     (long long)group, x.c, F, cg);
  if (!holds(W, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, numel(W)))
    return node_fail(O, i, "the weight must hold its float32 values in the file (no external data)");
  if (B && !holds(B, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, (size_t)F))
    return node_fail(O, i, "input 2 (the bias) must hold %d float32 values", F);
  if (!attr_ints(O->g->node[i], "kernel_shape", 2, 0, ks) || (ks[0] && (ks[0] != w.kh || ks[1] != w.kw)))
    return node_fail(O, i, "attribute 'kernel_shape' differs from the weight's %d x %d", w.kh, w.kw);
  if ((st = window(O, i, &x, &w))) return st;
  if (w.mode == 2 && (st = zero_pad(O, i, &x, w.pad))) return st;
  otensor *in[1] = { &x };
  char name[ONAME];
  const olayer src = { .kind = dw ? OW_DW : OW_CONV, .w = W, .b = B };
  json_t *L = emit(O, i, dw ? "depthwise_conv2d" : "conv2d", in, 1, &src, name);
  if (!L || (!dw && set_int(L, "filters", F)) || (dw && set_int(L, "depth_multiplier", F / x.c)) ||
      (!dw && group > 1 && set_int(L, "groups", (int)group)) ||
      json_object_set_new(L, "kernel", json_pack("[ii]", w.kh, w.kw)) || set_int(L, "stride", w.s) ||
      json_object_set_new(L, "padding", json_string(w.mode == 1 ? "same" : "valid")) ||
      (!B && json_object_set_new(L, "use_bias", json_false())))
    return NOMEM(O);
  otensor y = x;
  out_hw(&x, &w, &y.h, &y.w);
  y.c = F;
  y.nonneg = false;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* The ONNX dims of t after the batch: d[0..rank-1). */
static int onnx_dims(const otensor *t, int64_t *d) {
  if (t->rank == 2) { d[0] = t->c; return 1; }
  if (t->rank == 3) { d[0] = t->w; d[1] = t->c; return 2; }
  if (t->direct) { d[0] = t->h; d[1] = t->w; d[2] = t->c; }
  else { d[0] = t->c; d[1] = t->h; d[2] = t->w; }
  return 3;
}
/* A tensor of ONNX rank 1 + n with dims d after the batch, in the native
** order (rank 4: not an image). */
static otensor shaped(int n, const int64_t *d) {
  otensor y = { .rank = n + 1, .h = 1, .w = 1 };
  if (n == 1) { y.c = (int)d[0]; y.vec = true; }
  else if (n == 2) { y.w = (int)d[0]; y.c = (int)d[1]; }
  else { y.h = (int)d[0]; y.w = (int)d[1]; y.c = (int)d[2]; y.direct = true; }
  return y;
}
static bool is_seq(const otensor *t) { return t->rank == 3 || t->direct; }

/* A dense layer y = x W (+ b) along x's last axis (transposed W: Gemm's
** transB). */
static tpu_status dense_emit(fe_onnx *O, int i, otensor *xp, const Onnx__TensorProto *W, const Onnx__TensorProto *B,
                             bool tb, bool matmul) {
  const otensor x = *xp;
  if (x.rank != 2 && !x.vec && (!matmul || !is_seq(&x)))
    return node_fail(O, i, matmul ? "a MatMul of a %d-D image [N, C, H, W] is not supported; tpusim reads a MatMul "
                     "[N, K] or [N, L, K] (a sequence, or heads [N, a, b, K]) times a constant [K, units]"
                     : "expects a 2-D input [N, K] (%d-D given; Flatten first)", x.rank);
  if (!W || W->n_dims != 2 || W->dims[tb ? 1 : 0] != x.c || W->dims[tb ? 0 : 1] < 1 || W->dims[tb ? 0 : 1] > (1 << 20))
    return node_fail(O, i, "input 1 (the weight) must be a 2-D constant [%d, units]%s, units in 1..2^20", x.c,
                     tb ? " transposed (transB)" : "");
  const int N = (int)W->dims[tb ? 0 : 1];
  if (!holds(W, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, numel(W)))
    return node_fail(O, i, "the weight must hold its float32 values in the file (no external data)");
  if (B && (numel(B) != (size_t)N || !holds(B, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, (size_t)N)))
    return node_fail(O, i, "the bias must hold %d float32 values (one per unit)", N);
  otensor *in[1] = { xp };
  char name[ONAME];
  const olayer src = { .kind = OW_DENSE, .w = W, .b = B, .trans_b = tb, .pc = x.pc, .ph = x.ph, .pw = x.pw };
  json_t *L = emit(O, i, "dense", in, 1, &src, name);
  if (!L || set_int(L, "units", N) || (!B && json_object_set_new(L, "use_bias", json_false()))) return NOMEM(O);
  otensor y = { .rank = 2, .c = N, .h = 1, .w = 1, .vec = true };
  if (x.rank != 2 && !x.vec) { y = x; y.c = N; y.nonneg = false; }
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Gemm (matmul false) and MatMul: a dense layer. */
static tpu_status op_dense(fe_onnx *O, int i, bool matmul) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *xp;
  const Onnx__TensorProto *W, *B = NULL;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  const otensor *w = find(O, in_of(O, i, 1));
  if (matmul && w && !w->k)
    return node_fail(O, i, "a MatMul of two computed tensors; tpusim reads one inside attention only (Softmax(Q K^T "
                     "/ sqrt(d)) V with its projections and heads, docs/MODELS.md, \"ONNX import\")");
  if ((st = const_in(O, i, 1, &W)) || (!matmul && (st = const_in(O, i, 2, &B)))) return st;
  const bool tb = !matmul && attr_int(n, "transB", 0);
  if (!matmul && (attr_int(n, "transA", 0) || attr_float(n, "alpha", 1.0) != 1.0 ||
                  (B && attr_float(n, "beta", 1.0) != 1.0)))
    return node_fail(O, i, "transA must be 0, alpha and beta 1 (the layer y = x W + b)");
  return dense_emit(O, i, xp, W, B, tb, matmul);
}

static tpu_status op_batchnorm(fe_onnx *O, int i) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *xp;
  const Onnx__TensorProto *k[4];
  tpu_status st = value_in(O, i, 0, &xp);
  for (size_t a = 0; !st && a < 4; a++) st = const_in(O, i, a + 1, &k[a]);
  if (st) return st;
  const otensor x = *xp;
  for (int a = 0; a < 4; a++)
    if (!k[a] || numel(k[a]) != (size_t)x.c || !holds(k[a], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, (size_t)x.c))
      return node_fail(O, i, "scale, B, mean and var must be constants of %d float32 values (one per channel)", x.c);
  if (attr_int(n, "training_mode", 0))
    return node_fail(O, i, "training_mode is 1; tpusim reads the inference form (the moving statistics)");
  for (size_t o = 1; o < n->n_output; o++)
    if (*S(n->output[o])) return node_fail(O, i, "output %zu is used; only Y is supported", o);
  const double eps = attr_float(n, "epsilon", 1e-5), mom = attr_float(n, "momentum", 0.9);
  if (!(eps >= 1e-12 && eps <= 1) || !(mom >= 0 && mom <= 1))
    return node_fail(O, i, "epsilon %g, momentum %g; expected epsilon in [1e-12, 1] and momentum in [0, 1]", eps, mom);
  otensor *in[1] = { xp };
  char name[ONAME];
  const olayer src = { .kind = OW_BN, .w = k[0], .b = k[1], .mean = k[2], .var = k[3] };
  json_t *L = emit(O, i, "batch_normalization", in, 1, &src, name);
  if (!L || json_object_set_new(L, "epsilon", json_real(eps)) || json_object_set_new(L, "momentum", json_real(mom)))
    return NOMEM(O);
  otensor y = x;
  y.nonneg = false;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Relu, Sigmoid, Tanh, Clip (a relu capped), Dropout: one-input layers
** that keep the shape (and a Flatten's order). */
static tpu_status op_unary(fe_onnx *O, int i, const char *op) {
  otensor *xp;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  const otensor x = *xp;
  const char *type = !strcmp(op, "Relu") || !strcmp(op, "Clip") ? "relu" : !strcmp(op, "Sigmoid") ? "sigmoid"
                   : !strcmp(op, "Tanh") ? "tanh" : !strcmp(op, "LeakyRelu") ? "leaky_relu" : "dropout";
  double max = -1, rate = 0.5, alpha = attr_float(O->g->node[i], "alpha", 0.01);
  if (!strcmp(op, "LeakyRelu") && !(alpha >= 0 && alpha <= 1e6))
    return node_fail(O, i, "alpha %g; tpusim's leaky_relu takes a slope >= 0", alpha);
  if (!strcmp(op, "Clip")) {
    const Onnx__TensorProto *lo, *hi;
    if ((st = const_in(O, i, 1, &lo)) || (st = const_in(O, i, 2, &hi))) return st;
    const bool lo_ok = lo && holds(lo, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1) && fval(lo, 0) == 0.0f;
    if (!lo_ok || (hi && !(holds(hi, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1) && fval(hi, 0) > 0)))
      return node_fail(O, i, "tpusim reads Clip(min 0, max > 0 or none): a relu, capped (ReLU6 is Clip(0, 6))");
    if (hi) max = fval(hi, 0);
  } else if (!strcmp(op, "Dropout")) {
    const Onnx__TensorProto *r = NULL;
    if (O->opset >= 12 && (st = const_in(O, i, 1, &r))) return st;
    rate = r ? (holds(r, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1) ? fval(r, 0) : -1)
             : attr_float(O->g->node[i], "ratio", 0.5);
    if (!(rate >= 0 && rate < 1)) return node_fail(O, i, "ratio must be a float32 scalar in [0, 1)");
  }
  otensor *in[1] = { xp };
  char name[ONAME];
  json_t *L = emit(O, i, type, in, 1, NULL, name);
  if (!L || (max >= 0 && json_object_set_new(L, "max_value", json_real(max))) ||
      (!strcmp(type, "dropout") && json_object_set_new(L, "rate", json_real(rate))) ||
      (!strcmp(type, "leaky_relu") && json_object_set_new(L, "negative_slope", json_real(alpha))))
    return NOMEM(O);
  otensor y = x;
  y.nonneg = !strcmp(type, "relu") || !strcmp(type, "sigmoid") || (!strcmp(type, "dropout") && x.nonneg);
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

static bool same_perm(const otensor *a, const otensor *b) {
  return a->pc == b->pc && a->ph == b->ph && a->pw == b->pw;
}

/* Add (two operands of one shape) and Concat (channels, or a vector's axis 1). */
static tpu_status op_merge(fe_onnx *O, int i, bool add) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *in[TPU_FE_MAX_INPUTS];
  const int nin = (int)n->n_input;
  if (add ? nin != 2 : nin < 1 || nin > TPU_FE_MAX_INPUTS)
    return node_fail(O, i, "has %d inputs; expected %s", nin, add ? "2" : "1.." "8");
  tpu_status st;
  for (int k = 0; k < nin; k++)
    if ((st = value_in(O, i, (size_t)k, &in[k]))) {
      if (add && find(O, S(n->input[k])) && find(O, S(n->input[k]))->k)
        return node_fail(O, i, "adds a constant tensor; tpusim adds two computed tensors of one shape, a vector "
                         "after a MatMul (its bias) or a table [L, C] to a sequence (a position embedding)");
      return st;
    }
  otensor y = *in[0];
  int64_t axis = attr_int(n, "axis", 1);
  if (!add && axis < 0) axis += y.rank;
  if (!add && axis != (is_seq(&y) ? y.rank - 1 : 1))
    return node_fail(O, i, "axis %lld; tpusim concatenates along axis 1 (channels, or a vector's values) or a "
                     "sequence's last axis", (long long)attr_int(n, "axis", 1));
  for (int k = 1; k < nin; k++) {
    const otensor *t = in[k];
    if (t->rank != y.rank || t->vec != y.vec || t->direct != y.direct || !same_perm(t, &y) || t->h != y.h || t->w != y.w ||
        (add && t->c != y.c))
      return node_fail(O, i, "operands '%.40s' and '%.40s' differ in shape (or one is a flattened image): "
                       "broadcasting is not supported", in[0]->name, t->name);
    if (!add) y.c += t->c;
    y.nonneg = y.nonneg && t->nonneg;
  }
  if (!add && y.ph * y.pw > 1)
    return node_fail(O, i, "concatenates flattened images, whose C,H,W order tpusim (H,W,C) cannot keep");
  char name[ONAME];
  if (!add && nin == 1) return output(O, i, &y, in[0]->nat) ? TPU_OK : NOMEM(O);
  if (!emit(O, i, add ? "add" : "concatenate", in, nin, NULL, name)) return NOMEM(O);
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

static tpu_status op_pool(fe_onnx *O, int i, bool max) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor x;
  int64_t ks[2];
  tpu_status st = image_in(O, i, &x);
  if (st) return st;
  if (!attr_ints(n, "kernel_shape", 2, 0, ks) || ks[0] != ks[1] || ks[0] < 1 || ks[0] > 64)
    return node_fail(O, i, "attribute 'kernel_shape' must be [k, k] with k in 1..64 (square windows)");
  if (attr_int(n, "ceil_mode", 0)) return node_fail(O, i, "ceil_mode is 1; tpusim rounds output sizes down");
  owin w = { .kh = (int)ks[0], .kw = (int)ks[0] };
  if ((st = window(O, i, &x, &w))) return st;
  const bool incl = !max && attr_int(n, "count_include_pad", 0);
  const bool padded = w.mode != 0 && (w.pad[0] || w.pad[1] || w.pad[2] || w.pad[3]);
  if (padded && (incl || (w.mode == 2 && max && x.nonneg))) {   /* zeros counted, or never the maximum */
    if ((st = zero_pad(O, i, &x, w.pad))) return st;
    w.mode = 0;
  } else if (w.mode == 2) {
    return node_fail(O, i, "pads [%d, %d, %d, %d] differ from 'same' ones; tpusim pads a %s only as Keras' "
                     "'same' does%s", w.pad[0], w.pad[1], w.pad[2], w.pad[3], max ? "max pool" : "average pool",
                     max ? " (or with zeros after a Relu)" : " (or with zeros when count_include_pad is 1)");
  }
  otensor *in[1] = { &x };
  char name[ONAME];
  json_t *L = emit(O, i, max ? "maxpool" : "avgpool", in, 1, NULL, name);
  if (!L || set_int(L, "size", w.kh) || set_int(L, "stride", w.s) ||
      json_object_set_new(L, "padding", json_string(w.mode == 1 ? "same" : "valid")))
    return NOMEM(O);
  otensor y = x;
  out_hw(&x, &w, &y.h, &y.w);
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Reshape of a sequence, heads or a vector to a static shape (0 copies the
** input's dim, one -1 is inferred; the first entry is the batch). */
static tpu_status op_reshape(fe_onnx *O, int i, otensor *xp, const Onnx__TensorProto *s) {
  const otensor x = *xp;
  int64_t d[3], e[3], total = (int64_t)x.c * x.h * x.w, known = 1;
  const int nd = onnx_dims(&x, d);
  const size_t r = s ? numel(s) : 0;
  if (!s || s->n_dims != 1 || r < 2 || r > 4 || !holds(s, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, r) ||
      attr_int(O->g->node[i], "allowzero", 0))
    return node_fail(O, i, "the shape must be a constant of 2 to 4 int64 values (batch first), allowzero 0");
  int neg = -1;
  for (size_t k = 1; k < r; k++) {
    e[k - 1] = ival(s, k);
    if (e[k - 1] == 0 && (int)k <= nd) e[k - 1] = d[k - 1];
    if (e[k - 1] == -1 && neg < 0) neg = (int)k - 1;
    else if (e[k - 1] < 1 || e[k - 1] > 65536) return node_fail(O, i, "shape entry %zu is %lld; expected 1..65536, "
                                                               "0 (copied) or one -1", k, (long long)ival(s, k));
    else known *= e[k - 1];
  }
  if (neg >= 0) e[neg] = known && total % known == 0 ? total / known : 0;
  if (neg >= 0 ? !e[neg] : known != total)
    return node_fail(O, i, "shape [batch, ...] does not hold the input's %lld values per sample", (long long)total);
  otensor y = shaped((int)r - 1, e);
  y.nonneg = x.nonneg;
  if (y.rank == x.rank && y.c == x.c && y.h == x.h && y.w == x.w) { y.direct = x.direct; return output(O, i, &y, x.nat) ? TPU_OK : NOMEM(O); }
  otensor *in[1] = { xp };
  char name[ONAME];
  json_t *L = emit(O, i, "reshape", in, 1, NULL, name), *t = json_array();
  for (size_t k = 0; t && k + 1 < r; k++) if (json_array_append_new(t, json_integer(e[k]))) { json_decref(t); t = NULL; }
  if (!L || !t || json_object_set_new(L, "target_shape", t)) { if (!L) json_decref(t); return NOMEM(O); }
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Flatten (axis 1) and the Reshape that flattens ([N or 0 or -1, -1 or C*H*W]). */
static tpu_status op_flatten(fe_onnx *O, int i, bool reshape) {
  otensor *xp;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  const otensor x = *xp;
  const int64_t total = (int64_t)x.c * x.h * x.w;
  if (reshape) {
    const Onnx__TensorProto *s;
    if ((st = const_in(O, i, 1, &s))) return st;
    if (x.rank != 4 || x.direct) {
      if (x.ph * x.pw > 1 && !(s && holds(s, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2)))
        return node_fail(O, i, "reshapes a flattened image, whose C,H,W order tpusim (H,W,C) cannot keep");
      if (x.ph * x.pw <= 1) return op_reshape(O, i, xp, s);
    }
    if (s && s->n_dims == 1 && holds(s, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3) && !x.vec &&
        (ival(s, 1) == x.c || ival(s, 1) == 0) && (ival(s, 2) == (int64_t)x.h * x.w || ival(s, 2) == -1)) {
      otensor y = x;   /* [N, C, H*W]: the pixels, channels first */
      y.cfirst = true;
      y.rank = 3;
      return output(O, i, &y, x.nat) ? TPU_OK : NOMEM(O);
    }
    const bool two = s && holds(s, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2) && s->n_dims == 1;
    const int64_t a = two ? ival(s, 0) : 0, b = two ? ival(s, 1) : 0;
    if (!two || !(a >= -1 && (b == total || (b == -1 && a != -1))))
      return node_fail(O, i, "reshapes an N x C x H x W image other than flattening it, to [N, -1] or [N, %lld] (0 or "
                       "-1 for N); tpusim keeps images H,W,C (Transpose to N x H x W x C first)", (long long)total);
  } else if (attr_int(O->g->node[i], "axis", 1) != 1) {
    return node_fail(O, i, "axis %lld; tpusim flattens from axis 1 (keeping the batch)",
                     (long long)attr_int(O->g->node[i], "axis", 1));
  }
  otensor y = { .rank = 2, .c = (int)total, .h = 1, .w = 1, .vec = true, .nonneg = x.nonneg,
                .pc = x.pc, .ph = x.ph, .pw = x.pw };
  if (x.rank == 2 || x.vec || (x.h == 1 && x.w == 1)) return output(O, i, &y, x.nat) ? TPU_OK : NOMEM(O);
  if (x.c > 1 && !is_seq(&x)) { y.pc = x.c; y.ph = x.h; y.pw = x.w; }
  otensor *in[1] = { xp };
  char name[ONAME];
  if (!emit(O, i, "flatten", in, 1, NULL, name)) return NOMEM(O);
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

static tpu_status op_pad(fe_onnx *O, int i) {
  otensor x;
  const Onnx__TensorProto *pads, *v;
  char mode[32];
  tpu_status st = image_in(O, i, &x);
  if (st || (st = const_in(O, i, 1, &pads)) || (st = const_in(O, i, 2, &v))) return st;
  const char *m = attr_str(O->g->node[i], "mode", mode, sizeof mode);
  if (*m && strcmp(m, "constant")) return node_fail(O, i, "mode \"%s\"; tpusim pads with zeros (mode constant)", m);
  if (v && !(holds(v, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1) && fval(v, 0) == 0.0f))
    return node_fail(O, i, "the padding value must be 0");
  if (O->g->node[i]->n_input > 3) return node_fail(O, i, "the 'axes' input is not supported");
  if (!pads || !holds(pads, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 8))
    return node_fail(O, i, "'pads' must be a constant of 8 int64 values (N, C, H, W begins, then ends)");
  int64_t p[8];
  for (int k = 0; k < 8; k++) p[k] = ival(pads, (size_t)k);
  if (p[0] || p[1] || p[4] || p[5])
    return node_fail(O, i, "pads the batch or channel axis; tpusim pads height and width only");
  for (int k = 0; k < 8; k++)
    if (p[k] < 0 || p[k] > 1024) return node_fail(O, i, "pads must be in 0..1024 (no cropping)");
  const int q[4] = { (int)p[2], (int)p[3], (int)p[6], (int)p[7] };   /* top, left, bottom, right */
  if ((st = zero_pad(O, i, &x, q))) return st;
  return output(O, i, &x, x.nat) ? TPU_OK : NOMEM(O);
}

static tpu_status op_other(fe_onnx *O, int i, const char *op) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *xp;
  if (!strcmp(op, "Constant")) {
    const Onnx__AttributeProto *a = attr(n, "value");
    if (!a || !a->t || n->n_attribute != 1)
      return node_fail(O, i, "tpusim reads a Constant's 'value' tensor only");
    otensor *t = n->n_output ? add_tensor(O, S(n->output[0])) : NULL;
    if (n->n_output && !t) return NOMEM(O);
    if (t) t->k = a->t;
    return TPU_OK;
  }
  if (!strcmp(op, "Identity") && n->n_input && find(O, S(n->input[0])) && find(O, S(n->input[0]))->k) {
    const Onnx__TensorProto *k = find(O, S(n->input[0]))->k;
    otensor *t = n->n_output ? add_tensor(O, S(n->output[0])) : NULL;
    if (n->n_output && !t) return NOMEM(O);
    if (t) t->k = k;
    return TPU_OK;
  }
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  otensor y = *xp;
  char name[ONAME];
  otensor *in[1] = { xp };
  if (!strcmp(op, "Identity")) return output(O, i, &y, y.nat) ? TPU_OK : NOMEM(O);
  if (!strcmp(op, "GlobalAveragePool")) {
    if (y.rank != 4 || y.vec) return node_fail(O, i, "expects a 4-D N x C x H x W input");
    if (!emit(O, i, "global_avgpool", in, 1, NULL, name)) return NOMEM(O);
    y.h = y.w = 1;
    y.vec = true;
    return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
  }
  /* Softmax: over a vector's values (axis 1 or -1 of [N, K]), a sequence's last axis, or (opset 13 on) its
  ** positions: permuted there and back */
  const int64_t axis = attr_int(n, "axis", O->opset >= 13 ? -1 : 1), ax = axis < 0 ? axis + y.rank : axis;
  if (is_seq(&y)) {
    json_t *P;
    const bool pos = y.rank == 3 && ax == 1 && O->opset >= 13;
    if (ax != y.rank - 1 && !pos)
      return node_fail(O, i, "axis %lld of a %d-D tensor; tpusim reads a Softmax over the last axis (or, from opset "
                       "13, a sequence's positions)", (long long)axis, y.rank);
    if (pos && (!(P = emit_as(O, i, "_t", "permute", in, 1, NULL, name)) ||
                json_object_set_new(P, "dims", json_pack("[ii]", 2, 1))))
      return NOMEM(O);
    otensor t = y;
    snprintf(t.nat, sizeof t.nat, "%s", name);
    otensor *tin[1] = { pos ? &t : xp };
    if (!emit_as(O, i, pos ? "_sm" : NULL, "softmax", tin, 1, NULL, name)) return NOMEM(O);
    snprintf(t.nat, sizeof t.nat, "%s", name);
    if (pos && (!(P = emit(O, i, "permute", tin, 1, NULL, name)) || json_object_set_new(P, "dims", json_pack("[ii]", 2, 1))))
      return NOMEM(O);
    y.nonneg = true;
    return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
  }
  if (!(y.rank == 2 || y.vec) || (axis != 1 && axis != -1) || y.ph * y.pw > 1)
    return node_fail(O, i, "tpusim reads a Softmax over the class scores [N, K] (axis 1 or -1)");
  if (!emit(O, i, "softmax", in, 1, NULL, name)) return NOMEM(O);
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}
/* layer_normalization over the last axis, gamma and beta the file's. */
static tpu_status ln_emit(fe_onnx *O, int i, otensor *xp, const Onnx__TensorProto *g, const Onnx__TensorProto *b,
                          double eps) {
  const otensor x = *xp;
  if (x.ph * x.pw > 1 || (!is_seq(&x) && !x.vec))
    return node_fail(O, i, "normalizes a %d-D tensor; tpusim reads a layer normalization of a sequence [N, L, C] "
                     "or a vector over its last axis", x.rank);
  const size_t C = (size_t)x.c;
  if ((g && !holds(g, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, C)) || (b && !holds(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, C)))
    return node_fail(O, i, "the scale and the bias must be constants of %zu float32 values (the last axis)", C);
  if (!(eps >= 1e-12 && eps <= 1)) return node_fail(O, i, "epsilon %g; expected a value in [1e-12, 1]", eps);
  otensor *in[1] = { xp };
  char name[ONAME];
  const olayer src = { .kind = OW_LN, .w = g, .b = b };
  json_t *L = emit(O, i, "layer_normalization", in, 1, &src, name);
  if (!L || json_object_set_new(L, "epsilon", json_real(eps)) || (!g && json_object_set_new(L, "scale", json_false())) ||
      (!b && json_object_set_new(L, "center", json_false())))
    return NOMEM(O);
  otensor y = x;
  y.nonneg = false;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

static tpu_status op_layernorm(fe_onnx *O, int i) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *xp;
  const Onnx__TensorProto *g, *b;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st || (st = const_in(O, i, 1, &g)) || (st = const_in(O, i, 2, &b))) return st;
  const int64_t axis = attr_int(n, "axis", -1);
  if (axis != -1 && axis != xp->rank - 1)
    return node_fail(O, i, "axis %lld; tpusim normalizes over the last axis only (-1)", (long long)axis);
  for (size_t o = 1; o < n->n_output; o++)
    if (*S(n->output[o])) return node_fail(O, i, "output %zu (Mean or InvStdDev) is used; only Y is supported", o);
  if (!g) return node_fail(O, i, "input 1 (the scale) is missing");
  return ln_emit(O, i, xp, g, b, attr_float(n, "epsilon", 1e-5));
}

/* Gather(table, ids): an embedding of the model's token ids. */
/* Gather(x, p, axis 1) of a sequence, p a constant scalar: its position p
** (x[:, 0] of BERT's pooler and ViT's head). */
static tpu_status op_take(fe_onnx *O, int i, otensor *xp) {
  const Onnx__TensorProto *p;
  tpu_status st = const_in(O, i, 1, &p);
  if (st) return st;
  const int64_t L = xp->w, v = p && p->n_dims == 0 && holds(p, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1) ? ival(p, 0) : L;
  if (xp->rank != 3 || attr_int(O->g->node[i], "axis", 0) != 1 || v < -L || v >= L)
    return node_fail(O, i, "tpusim reads a Gather of a computed tensor as one position of a sequence [N, L, C]: axis "
                     "1, the index a constant int64 scalar in -L..L-1");
  otensor *in[1] = { xp };
  char name[ONAME];
  json_t *T = emit(O, i, "take", in, 1, NULL, name);
  if (!T || set_int(T, "position", v < 0 ? v + L : v)) return NOMEM(O);
  const otensor y = { .rank = 2, .c = xp->c, .h = 1, .w = 1, .vec = true, .nonneg = xp->nonneg };
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

static tpu_status op_gather(fe_onnx *O, int i) {
  const Onnx__TensorProto *t;
  otensor *xp;
  const otensor *d = find(O, in_of(O, i, 0));
  if (d && !d->k && !d->ids) {
    tpu_status st = value_in(O, i, 0, &xp);
    return st ? st : op_take(O, i, xp);
  }
  tpu_status st = const_in(O, i, 0, &t);
  if (st) return node_fail(O, i, "tpusim reads a Gather of rows of a constant table (an embedding); input 0 must be "
                           "an initializer");
  const otensor *ix = find(O, in_of(O, i, 1));
  if (!ix || !ix->ids)
    return node_fail(O, i, "tpusim reads a Gather of the model's token ids (its input [N, L] of integers) from a "
                     "table; input 1 is %s", ix && ix->k ? "a constant (a position table is read when an Add "
                     "adds it to a sequence)" : "a computed tensor");
  if ((st = value_in(O, i, 1, &xp))) return st;
  if (attr_int(O->g->node[i], "axis", 0) != 0) return node_fail(O, i, "axis must be 0 (rows of the table)");
  if (t->n_dims != 2 || t->dims[0] < 1 || t->dims[0] > (1 << 24) || t->dims[1] < 1 || t->dims[1] > 65536 ||
      !holds(t, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, numel(t)))
    return node_fail(O, i, "the table must be a 2-D float32 constant [V, D], V in 1..2^24, D in 1..65536");
  otensor *in[1] = { xp };
  char name[ONAME];
  const olayer src = { .kind = OW_EMB, .w = t };
  json_t *L = emit(O, i, "embedding", in, 1, &src, name);
  if (!L || set_int(L, "input_dim", t->dims[0]) || set_int(L, "output_dim", t->dims[1])) return NOMEM(O);
  const otensor y = { .rank = 3, .h = 1, .w = xp->c, .c = (int)t->dims[1] };
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Transpose [0, 2, 1] of an image reshaped to [N, C, H*W]: the pixels as
** a sequence [N, H*W, C], which the native image H x W x C already is in
** memory (a reshape). */
static tpu_status patches(fe_onnx *O, int i, otensor *xp) {
  int64_t p[3];
  if (!attr_ints(O->g->node[i], "perm", 3, -1, p) || p[0] != 0 || p[1] != 2 || p[2] != 1)
    return node_fail(O, i, "transposes an image reshaped to [N, C, H*W] other than with perm [0, 2, 1]");
  otensor *in[1] = { xp };
  char name[ONAME];
  json_t *L = emit(O, i, "reshape", in, 1, NULL, name);
  if (!L || json_object_set_new(L, "target_shape", json_pack("[ii]", xp->h * xp->w, xp->c))) return NOMEM(O);
  const otensor y = { .rank = 3, .h = 1, .w = xp->h * xp->w, .c = xp->c, .nonneg = xp->nonneg };
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Transpose: a permute of a sequence or of heads; an image's NCHW to NHWC
** and back is a change of layout only (no layer). */
static tpu_status op_transpose(fe_onnx *O, int i) {
  otensor *xp;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  otensor y = *xp;
  int64_t p[4] = { -1, -1, -1, -1 };
  const size_t r = (size_t)y.rank;
  if (y.cfirst) return patches(O, i, xp);
  if (y.ph * y.pw > 1 || y.vec || r < 3 || !attr_ints(O->g->node[i], "perm", r, -1, p) || p[0] != 0)
    return node_fail(O, i, "tpusim reads a Transpose of a sequence [N, L, C] or a 4-D tensor that keeps the batch "
                     "first ('perm' given, starting with 0)");
  if (r == 4 && !y.direct && p[1] == 2 && p[2] == 3 && p[3] == 1) { y.direct = true; return output(O, i, &y, y.nat) ? TPU_OK : NOMEM(O); }
  if (r == 4 && y.direct && p[1] == 3 && p[2] == 1 && p[3] == 2) { y.direct = false; return output(O, i, &y, y.nat) ? TPU_OK : NOMEM(O); }
  if (r == 4 && !y.direct)
    return node_fail(O, i, "transposes an N x C x H x W image other than to N x H x W x C; not supported");
  int64_t d[3], e[3];
  bool ok = true, same = true;
  onnx_dims(&y, d);
  for (size_t k = 1; k < r; k++) {
    ok = ok && p[k] >= 1 && p[k] < (int64_t)r;
    for (size_t j = 1; j < k; j++) ok = ok && p[j] != p[k];
    if (ok) e[k - 1] = d[p[k] - 1];
    same = same && p[k] == (int64_t)k;
  }
  if (!ok) return node_fail(O, i, "attribute 'perm' is not a permutation of the axes");
  if (same) return output(O, i, &y, y.nat) ? TPU_OK : NOMEM(O);
  otensor *in[1] = { xp };
  char name[ONAME];
  json_t *L = emit(O, i, "permute", in, 1, NULL, name), *dims = json_array();
  for (size_t k = 1; dims && k < r; k++) if (json_array_append_new(dims, json_integer(p[k]))) { json_decref(dims); dims = NULL; }
  if (!L || !dims || json_object_set_new(L, "dims", dims)) { if (!L) json_decref(dims); return NOMEM(O); }
  y = shaped((int)r - 1, e);
  y.nonneg = xp->nonneg;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* Mul of two computed tensors of one shape: multiply. */
static tpu_status op_mul(fe_onnx *O, int i) {
  otensor *in[2];
  for (size_t k = 0; k < 2; k++) {
    const otensor *t = find(O, in_of(O, i, k));
    if (t && t->k)
      return node_fail(O, i, "multiplies by a constant; tpusim reads a Mul of two computed tensors of one shape "
                       "(multiply), or a constant Mul inside a Gelu, a LayerNormalization or attention's scale "
                       "(docs/MODELS.md, \"ONNX import\")");
  }
  tpu_status st;
  if (O->g->node[i]->n_input != 2) return node_fail(O, i, "expects 2 inputs");
  if ((st = value_in(O, i, 0, &in[0])) || (st = value_in(O, i, 1, &in[1]))) return st;
  const otensor a = *in[0], *b = in[1];
  if (a.rank != b->rank || a.direct != b->direct || a.vec != b->vec || a.c != b->c || a.h != b->h || a.w != b->w ||
      !same_perm(&a, b))
    return node_fail(O, i, "operands '%.40s' and '%.40s' differ in shape: broadcasting is not supported", a.name,
                     b->name);
  char name[ONAME];
  if (!emit(O, i, "multiply", in, 2, NULL, name)) return NOMEM(O);
  otensor y = a;
  y.nonneg = a.nonneg && b->nonneg;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* ReduceMean over a sequence's positions or an image's pixels (keepdims
** 0, or an image's 1): the global average pool. */
static tpu_status op_reducemean(fe_onnx *O, int i) {
  const Onnx__NodeProto *n = O->g->node[i];
  otensor *xp;
  tpu_status st = value_in(O, i, 0, &xp);
  if (st) return st;
  const otensor x = *xp;
  const Onnx__AttributeProto *a = attr(n, "axes");
  const int64_t keep = attr_int(n, "keepdims", 1);
  int64_t ax[2] = { 0, 0 };
  for (size_t k = 0; a && k < a->n_ints && k < 2; k++) ax[k] = a->ints[k] < 0 ? a->ints[k] + x.rank : a->ints[k];
  const bool seq = x.rank == 3 && a && a->n_ints == 1 && ax[0] == 1 && !keep;
  const bool img = x.rank == 4 && !x.direct && !x.vec && a && a->n_ints == 2 && ax[0] + ax[1] == 5 && ax[0] * ax[1] == 6;
  if (!seq && !img)
    return node_fail(O, i, "tpusim reads a ReduceMean over a sequence's positions (axes [1], keepdims 0) or an "
                     "image's pixels (axes [2, 3]): a global average pool; others only inside a LayerNormalization");
  otensor *in[1] = { xp };
  char name[ONAME];
  if (!emit(O, i, "global_avgpool", in, 1, NULL, name)) return NOMEM(O);
  otensor y = { .rank = keep ? 4 : 2, .c = x.c, .h = 1, .w = 1, .vec = true, .nonneg = x.nonneg };
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}

/* A subgraph read as one layer, at its root. */
static tpu_status op_fused(fe_onnx *O, int i) {
  const ofuse *f = &O->fz[i];
  otensor *xp = find(O, f->x);
  if (!xp || xp->k || xp->ids || xp->cfirst)
    return node_fail(O, i, "input '%.60s' is not %s", f->x, xp && xp->cfirst ? "a sequence (an image reshaped to "
                     "[N, C, H*W] is read by a Transpose [0, 2, 1] only)" : "computed from the model's input");
  otensor *in[1] = { xp };
  const otensor x = *xp;
  char name[ONAME];
  if (f->kind == FZ_LN) return ln_emit(O, i, xp, f->k[0], f->k[1], f->eps);
  if (f->kind == FZ_DENSE) return dense_emit(O, i, xp, f->k[0], f->k[1], false, true);
  if (f->kind == FZ_GELU) {
    json_t *L = emit(O, i, "gelu", in, 1, NULL, name);
    if (!L || (f->tanh_form && json_object_set_new(L, "approximate", json_true()))) return NOMEM(O);
    otensor y = x;
    y.nonneg = false;
    return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
  }
  if (!is_seq(&x) || x.rank != 3)
    return node_fail(O, i, "%s reads a sequence [N, L, C]; '%.60s' is %d-D", f->kind == FZ_POS ?
                     "an Add of a position table" : "attention", x.name, x.rank);
  if (f->kind == FZ_POS) {
    const Onnx__TensorProto *t = f->k[0];
    const int64_t rows = t->dims[t->n_dims - 2], C = t->dims[t->n_dims - 1];
    if (C != x.c || rows < x.w || rows > 65536 || !holds(t, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, numel(t)))
      return node_fail(O, i, "the position table must be float32 [L, %d] with L >= the %d positions", x.c, x.w);
    const olayer src = { .kind = OW_POS, .w = t };
    json_t *L = emit(O, i, "position_embedding", in, 1, &src, name);
    if (!L || set_int(L, "max_length", rows)) return NOMEM(O);
    return output(O, i, &x, name) ? TPU_OK : NOMEM(O);
  }
  const int64_t C = x.c, hd = (int64_t)f->heads * f->kd, hv = (int64_t)f->heads * f->vd;
  const int64_t want[4][2] = { { C, hd }, { C, hd }, { C, hv }, { hv, C } };
  for (int a = 0; a < 4; a++) {   /* columns off..off+want of the kernel (all of them unless packed) */
    const Onnx__TensorProto *w = f->k[2 * a], *b = f->k[2 * a + 1];
    const int64_t end = f->off[a] + want[a][1];
    if (w->n_dims != 2 || w->dims[0] != want[a][0] || w->dims[1] < end || (!f->off[a] && a == 3 && w->dims[1] != end) ||
        !holds(w, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, numel(w)) ||
        (b && (b->dims[0] != w->dims[1] || !holds(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, (size_t)w->dims[1]))))
      return node_fail(O, i, "attention's %s projection must be float32 [%lld, %lld] (and a bias of %lld)",
                       &"Q\0K\0V\0O"[2 * a], (long long)want[a][0], (long long)want[a][1], (long long)want[a][1]);
  }
  if (f->mask_len && f->mask_len != x.w)
    return node_fail(O, i, "attention's causal mask is %d x %d; the sequence has %d positions", f->mask_len,
                     f->mask_len, x.w);
  olayer src = { .kind = OW_MHA };
  memcpy(src.mha, f->k, sizeof src.mha);
  memcpy(src.moff, f->off, sizeof src.moff);
  json_t *L = emit(O, i, "multi_head_attention", in, 1, &src, name);
  if (!L || set_int(L, "num_heads", f->heads) || set_int(L, "key_dim", f->kd) || set_int(L, "value_dim", f->vd) ||
      (!f->k[1] && json_object_set_new(L, "use_bias", json_false())) ||
      (f->mask_len && json_object_set_new(L, "causal", json_true())))
    return NOMEM(O);
  otensor y = x;
  y.nonneg = false;
  return output(O, i, &y, name) ? TPU_OK : NOMEM(O);
}
/* }================================================================== */

/* {==================================================================
** The graph
** ================================================================== */
static const char *const OPS[] = {
  "Conv", "Gemm", "MatMul", "BatchNormalization", "Relu", "Clip", "Sigmoid", "Tanh", "Add", "Concat", "MaxPool",
  "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Softmax", "Dropout", "Identity", "Pad", "Constant",
  "LayerNormalization", "Gather", "Transpose", "Mul", "ReduceMean", "LeakyRelu", NULL
};
#define OP_LIST "Conv (grouped too), Gemm, MatMul, BatchNormalization, LayerNormalization, Relu, Clip, " \
  "LeakyRelu, Sigmoid, Tanh, Add, Mul, Concat, MaxPool, AveragePool, GlobalAveragePool, ReduceMean, Flatten, Reshape, " \
  "Transpose, Softmax, Gather, Dropout, Identity, Pad, Constant"
/* Operators read only inside a subgraph read as one layer (a Gelu, a
** LayerNormalization decomposition, attention's scale). */
static const char *const INSIDE[] = { "Div", "Sub", "Pow", "Sqrt", "Erf", NULL };

/* Every operator type of the graph tpusim does not read, each with its
** first node, in one message. */
static tpu_status check_ops(fe_onnx *O) {
  const Onnx__GraphProto *g = O->g;
  char msg[1536] = "";
  size_t len = 0;
  int nbad = 0, ninside = 0;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    if (std_domain(n->domain) && (op_index(OPS, S(n->op_type)) >= 0 || O->fz[i].kind)) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = !strcmp(S(g->node[j]->op_type), S(n->op_type)) && !strcmp(S(g->node[j]->domain), S(n->domain)) &&
             !O->fz[j].kind;
    if (seen) continue;
    nbad++;
    ninside += std_domain(n->domain) && op_index(INSIDE, S(n->op_type)) >= 0;
    if (len < sizeof msg)
      len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s%s%.40s (first: node %zu%s%.60s%s)",
                              nbad > 1 ? ", " : "", std_domain(n->domain) ? "" : S(n->domain),
                              std_domain(n->domain) ? "" : ".", S(n->op_type), i, *S(n->name) ? " '" : "",
                              S(n->name), *S(n->name) ? "'" : "");
  }
  if (!nbad) return TPU_OK;
  return failf(O, TPU_ERR_CONFIG, "%d operator type%s not supported: %s; tpusim reads " OP_LIST
               " (docs/MODELS.md, \"ONNX import\")%s", nbad, nbad == 1 ? " is" : "s are", msg,
               ninside ? "; Div, Sub, Pow, Sqrt and Erf only inside a Gelu, a LayerNormalization decomposition or "
               "attention's scale" : "");
}

static tpu_status node(fe_onnx *O, int i) {
  const char *op = S(O->g->node[i]->op_type);
  if (O->fz[i].kind == FZ_SKIP) return TPU_OK;
  if (O->fz[i].kind) return op_fused(O, i);
  if (!strcmp(op, "Conv")) return op_conv(O, i);
  if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul")) return op_dense(O, i, !strcmp(op, "MatMul"));
  if (!strcmp(op, "BatchNormalization")) return op_batchnorm(O, i);
  if (!strcmp(op, "Add") || !strcmp(op, "Concat")) return op_merge(O, i, !strcmp(op, "Add"));
  if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) return op_pool(O, i, !strcmp(op, "MaxPool"));
  if (!strcmp(op, "Flatten") || !strcmp(op, "Reshape")) return op_flatten(O, i, !strcmp(op, "Reshape"));
  if (!strcmp(op, "Pad")) return op_pad(O, i);
  if (!strcmp(op, "LayerNormalization")) return op_layernorm(O, i);
  if (!strcmp(op, "Gather")) return op_gather(O, i);
  if (!strcmp(op, "Transpose")) return op_transpose(O, i);
  if (!strcmp(op, "Mul")) return op_mul(O, i);
  if (!strcmp(op, "ReduceMean")) return op_reducemean(O, i);
  if (!strcmp(op, "Relu") || !strcmp(op, "Clip") || !strcmp(op, "Sigmoid") || !strcmp(op, "Tanh") ||
      !strcmp(op, "Dropout") || !strcmp(op, "LeakyRelu"))
    return op_unary(O, i, op);
  return op_other(O, i, op);
}

/* The one graph input that is not an initializer: [N, C, H, W] or [N, F]. */
static tpu_status graph_input(fe_onnx *O, json_t **shape) {
  const Onnx__GraphProto *g = O->g;
  const Onnx__ValueInfoProto *in = NULL;
  int n = 0;
  for (size_t k = 0; k < g->n_input; k++) {
    const otensor *t = find(O, S(g->input[k]->name));
    if (t && t->k) continue;   /* an initializer listed as an input (IR version < 4) */
    in = g->input[k];
    n++;
  }
  if (n != 1) return failf(O, TPU_ERR_CONFIG, "the graph has %d inputs besides its initializers; expected 1", n);
  const Onnx__TypeProto *ty = in->type;
  const Onnx__TensorShapeProto *sh = ty && ty->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && ty->tensor_type ?
                                     ty->tensor_type->shape : NULL;
  const int et = ty && ty->tensor_type ? ty->tensor_type->elem_type : 0;
  const bool ids = et == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || et == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
  if (!sh || sh->n_dim < 2 || sh->n_dim > 4 || (et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && !(ids && sh->n_dim == 2)))
    return failf(O, TPU_ERR_CONFIG, "input '%.60s': expected a float32 tensor [N, C, H, W], [N, L, C] or [N, F], or "
                 "token ids (int64 or int32) [N, L]", S(in->name));
  int d[4] = { 1, 1, 1, 1 };
  for (size_t k = 1; k < sh->n_dim; k++) {
    const Onnx__TensorShapeProto__Dimension *dm = sh->dim[k];
    if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || dm->dim_value < 1 ||
        dm->dim_value > 65536)
      return failf(O, TPU_ERR_CONFIG, "input '%.60s': dimension %zu must be a number in 1..65536 (only the batch, "
                   "dimension 0, may be symbolic)", S(in->name), k);
    d[k] = (int)dm->dim_value;
  }
  otensor *t = add_tensor(O, S(in->name));
  if (!t) return NOMEM(O);
  snprintf(t->nat, sizeof t->nat, "input");
  t->rank = (int)sh->n_dim;
  t->c = d[1]; t->h = sh->n_dim == 4 ? d[2] : 1; t->w = sh->n_dim == 4 ? d[3] : 1;
  t->vec = sh->n_dim == 2;
  t->ids = ids;
  if (sh->n_dim == 3) { t->w = d[1]; t->c = d[2]; }
  *shape = sh->n_dim == 4 ? json_pack("[iii]", d[2], d[3], d[1]) : sh->n_dim == 3 ? json_pack("[ii]", d[1], d[2])
         : json_pack("[i]", d[1]);
  return *shape ? TPU_OK : NOMEM(O);
}

static tpu_status header(fe_onnx *O) {
  const Onnx__ModelProto *mp = O->mp;
  for (size_t k = 0; k < mp->n_opset_import; k++)
    if (std_domain(mp->opset_import[k]->domain)) O->opset = (int)mp->opset_import[k]->version;
  if (O->opset < 11 || O->opset > 17)
    return failf(O, TPU_ERR_CONFIG, "field 'opset_import': the default domain's opset is %d; expected 11..17 "
                 "(torch.onnx.export(..., opset_version=17))", O->opset);
  if (!mp->graph || !mp->graph->n_node) return failf(O, TPU_ERR_CONFIG, "field 'graph': missing or without nodes");
  O->g = mp->graph;
  if (O->g->n_node > OMAX_NODES)
    return failf(O, TPU_ERR_CONFIG, "the graph has %zu nodes; at most %d are read", O->g->n_node, OMAX_NODES);
  if (O->g->n_output != 1)
    return failf(O, TPU_ERR_CONFIG, "the graph has %zu outputs; expected 1 (the class scores)", O->g->n_output);
  snprintf(O->format, sizeof O->format, "ONNX opset %d%s%.30s%s%.10s", O->opset, *S(mp->producer_name) ? " (" : "",
           S(mp->producer_name), *S(mp->producer_version) ? " " : "", S(mp->producer_version));
  if (*S(mp->producer_name)) snprintf(O->format + strlen(O->format), sizeof O->format - strlen(O->format), ")");
  for (size_t k = 0; k < O->g->n_initializer; k++) {
    otensor *t = add_tensor(O, S(O->g->initializer[k]->name));
    if (!t) return NOMEM(O);
    t->k = O->g->initializer[k];
  }
  return TPU_OK;
}

static tpu_status translate(fe_onnx *O) {
  json_t *shape = NULL;
  tpu_status st = header(O);
  if (st || (st = fuse(O)) || (st = check_ops(O)) || (st = graph_input(O, &shape))) return st;
  O->native = json_object();
  O->layers = json_array();
  if (!O->native || !O->layers) { json_decref(shape); return NOMEM(O); }
  if (json_object_set_new(O->native, "input", shape) ||
      json_object_set_new(O->native, "name", json_string(*S(O->g->name) ? O->g->name : "onnx")))
    return NOMEM(O);
  for (int i = 0; i < (int)O->g->n_node; i++)
    if ((st = node(O, i))) return st;
  const otensor *out = find(O, S(O->g->output[0]->name));
  const size_t nl = json_array_size(O->layers);
  if (!out || out->k || out->cfirst || !nl ||
      strcmp(out->nat, json_string_value(json_object_get(json_array_get(O->layers, nl - 1), "name"))))
    return failf(O, TPU_ERR_CONFIG, "the graph's output '%.60s' is not the value its last layer computes; tpusim "
                 "trains a chain ending in the class scores", S(O->g->output[0]->name));
  if (json_object_set(O->native, "layers", O->layers)) return NOMEM(O);
  return TPU_OK;
}

tpu_status fe_onnx_translate(const void *buf, size_t len, const char *where, fe_onnx **out, char *err,
                             size_t errcap) {
  *out = NULL;
  fe_onnx *O = tpu_calloc(1, sizeof *O);
  if (!O) { snprintf(err, errcap, "%s: out of memory", where); return TPU_ERR_NOMEM; }
  O->where = where;
  O->fail_layer = -1;
  O->err = err;
  O->errcap = errcap;
  O->alloc = (ProtobufCAllocator){ .alloc = pb_alloc, .free = pb_free };
  const unsigned long nomem0 = tpu_alloc_failures();
  O->mp = onnx__model_proto__unpack(&O->alloc, len, buf);
  tpu_status st;
  if (!O->mp)
    st = tpu_alloc_failures() != nomem0 ? NOMEM(O)
       : failf(O, TPU_ERR_INPUT, "not an ONNX model: protobuf-c cannot read it as onnx.ModelProto (%zu bytes)", len);
  else
    st = translate(O);
  if (st) { fe_onnx_free(O); return st; }
  *out = O;
  return TPU_OK;
}

json_t *fe_onnx_native(const fe_onnx *O) { return O->native; }
const char *fe_onnx_format(const fe_onnx *O) { return O->format; }

/* After the native loader refused the translation: names the ONNX node
** that native layer 'layer' came from. */
const char *fe_onnx_map_path(void *ud, const char *path, char *buf, size_t cap) {
  fe_onnx *O = ud;
  int k;
  if (sscanf(path, "layers[%d]", &k) == 1) O->fail_layer = k;
  snprintf(buf, cap, "%s", path);
  return buf;
}

void fe_onnx_explain(const fe_onnx *O, char *err, size_t errcap) {
  const int layer = O->fail_layer;
  if (layer < 0 || layer >= O->nl) return;
  char w[128], tail[1024];
  snprintf(tail, sizeof tail, "%s", err);
  const size_t n = strlen(O->where);
  const char *rest = !strncmp(tail, O->where, n) && !strncmp(tail + n, ": ", 2) ? tail + n + 2 : tail;
  snprintf(err, errcap, "%s: %s: %s", O->where, who(O, O->l[layer].node, w, sizeof w), rest);
}

void fe_onnx_free(fe_onnx *O) {
  if (!O) return;
  if (O->mp) onnx__model_proto__free_unpacked(O->mp, &O->alloc);
  json_decref(O->native);
  json_decref(O->layers);
  tpu_free(O->t);
  tpu_free(O->l);
  tpu_free(O->fz);
  tpu_free(O->hx);
  tpu_free(O);
}
/* }================================================================== */

/* {==================================================================
** The starting weights
** ================================================================== */
/* Native layer j's parameters from the ONNX tensors it came from (checked
** by the translation: counts and types). */
static void copy_k(const Onnx__TensorProto *k, float *p) {
  for (size_t j = 0, n = k ? numel(k) : 0; j < n; j++) p[j] = fval(k, j);
}
static void layer_weights(const olayer *s, const tpu_fe_layer *L, float *p) {
  if (s->kind == OW_EMB || s->kind == OW_POS || s->kind == OW_LN) {   /* the native layouts are the file's */
    copy_k(s->w, p + L->woff);
    if (s->kind == OW_LN) copy_k(s->b, p + L->boff);
    return;
  }
  if (s->kind == OW_MHA) {   /* Q, K, V: C x H*d, O: H*dv x C, as the native kernels (columns of packed ones) */
    const size_t C = (size_t)L->in.c, hd = (size_t)L->num_heads * (size_t)L->key_dim;
    const size_t hv = (size_t)L->num_heads * (size_t)L->value_dim, rows[4] = { C, C, C, hv }, cols[4] = { hd, hd, hv, C };
    for (int a = 0; a < 4; a++) {
      const Onnx__TensorProto *w = s->mha[2 * a], *b = s->mha[2 * a + 1];
      const size_t ld = (size_t)w->dims[1], o = (size_t)s->moff[a];
      for (size_t r = 0; r < rows[a]; r++)
        for (size_t c = 0; c < cols[a]; c++) p[L->woff + fe_att_woff(L, a) + r * cols[a] + c] = fval(w, r * ld + o + c);
      for (size_t c = 0; b && c < cols[a]; c++) p[L->boff + fe_att_boff(L, a) + c] = fval(b, o + c);
    }
    return;
  }
  if (s->kind == OW_BN) {
    const size_t C = (size_t)L->out.c;
    for (size_t c = 0; c < C; c++) {
      if (L->nw) p[L->woff + c] = fval(s->w, c);
      if (L->nb) p[L->boff + c] = fval(s->b, c);
      p[L->soff + c] = fval(s->mean, c);
      p[L->soff + C + c] = fval(s->var, c);
    }
    return;
  }
  if (s->kind == OW_CONV || s->kind == OW_DW) {   /* OIHW -> HWIO; depthwise [C*dm, 1, kh, kw] -> kh x kw x C*dm */
    const size_t F = (size_t)s->w->dims[0], Ci = (size_t)s->w->dims[1], kh = (size_t)L->kh, kw = (size_t)L->kw;
    for (size_t f = 0; f < F; f++)
      for (size_t c = 0; c < Ci; c++)
        for (size_t y = 0; y < kh; y++)
          for (size_t x = 0; x < kw; x++)
            p[L->woff + ((y * kw + x) * Ci + c) * F + f] = fval(s->w, ((f * Ci + c) * kh + y) * kw + x);
  } else {   /* dense: rows to H,W,C order when they read a flattened C x H x W image */
    const size_t K = (size_t)L->in.c, N = (size_t)L->units;
    for (size_t r = 0; r < K; r++) {
      size_t ro = r;   /* the ONNX row of native row r */
      if (s->ph * s->pw > 1) {
        const size_t C = (size_t)s->pc, W = (size_t)s->pw, c = r % C, yx = r / C;
        ro = (c * (size_t)s->ph + yx / W) * W + yx % W;
      }
      for (size_t u = 0; u < N; u++) p[L->woff + r * N + u] = fval(s->w, s->trans_b ? u * K + ro : ro * N + u);
    }
  }
  for (size_t k = 0; k < L->nb; k++) p[L->boff + k] = fval(s->b, k);
}

/* Whether layer L's parameter counts are those of the tensors it reads
** (the translation followed the shapes as the native loader infers them). */
static bool counts_agree(const olayer *s, const tpu_fe_layer *L) {
  if (s->kind == OW_NONE) return true;
  if (s->kind == OW_EMB || s->kind == OW_POS) return L->nw == numel(s->w) && !L->nb;
  if (s->kind == OW_LN) return L->nw == (s->w ? numel(s->w) : 0) && L->nb == (s->b ? numel(s->b) : 0);
  if (s->kind == OW_MHA)   /* the translation checked every part against C, H, d and dv */
    return s->mha[0]->dims[0] == L->in.c && !L->nb == !s->mha[1];
  if (s->kind == OW_BN)
    return numel(s->w) == (size_t)L->out.c && L->nw == (size_t)L->out.c && L->nb == (size_t)L->out.c;
  if (s->kind == OW_DENSE && (size_t)L->in.c * (size_t)L->units != numel(s->w)) return false;
  return L->nw == numel(s->w) && L->nb == (s->b ? numel(s->b) : 0);
}

tpu_status fe_onnx_weights(const fe_onnx *O, const tpu_fe_model *m, float **out) {
  *out = NULL;
  bool agree = m->nlayers == O->nl;   /* one native layer per emitted one */
  for (int j = 0; agree && j < m->nlayers; j++) agree = counts_agree(&O->l[j], &m->layers[j]);
  if (!agree) {   /* never: a bug here, refused rather than written out of bounds */
    snprintf(O->err, O->errcap, "%s: the translation's shapes differ from the native loader's (a bug in "
             "frontend/onnx.c)", O->where);
    return TPU_ERR_CONFIG;
  }
  float *p = tpu_malloc(m->nparams * sizeof *p + 1);
  if (!p) return TPU_ERR_NOMEM;
  fe_params_init(m, p);
  for (int j = 0; j < m->nlayers; j++)
    if (O->l[j].kind != OW_NONE) layer_weights(&O->l[j], &m->layers[j], p);
  *out = p;
  return TPU_OK;
}
/* }================================================================== */
