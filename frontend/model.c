/*
** model.c -- the native JSON model description: parsing, checking, shape
** inference and the built-in models. The format is documented in
** docs/MODELS.md. Every error names the file, line:column, the layer index
** and kind, the field, and the shapes involved.
*/
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/fe_int.h"

static const char *const KIND_NAMES[TPU_FE_NKINDS] = {
  "dense", "conv2d", "maxpool", "avgpool", "flatten", "relu", "tanh", "sigmoid", "dropout", "add", "concatenate", "global_avgpool", "softmax", "zero_padding",
  "batch_normalization", "depthwise_conv2d", "separable_conv2d", "gelu", "swish", "leaky_relu", "layer_normalization",
  "multiply", "multi_head_attention", "embedding", "position_embedding", "take", "reshape", "class_token", "permute",
  "rescaling", "normalization"
};
#define KIND_LIST "dense, conv2d, maxpool, avgpool, flatten, relu, tanh, sigmoid, dropout, add, concatenate, " \
  "global_avgpool, softmax, zero_padding, batch_normalization, depthwise_conv2d, separable_conv2d, gelu, swish, " \
  "leaky_relu, layer_normalization, multiply, multi_head_attention, embedding, position_embedding, take, reshape, " \
  "class_token, permute, rescaling, normalization"

const char *tpu_fe_layer_kind_name(tpu_fe_layer_kind k) {
  return (unsigned)k < TPU_FE_NKINDS ? KIND_NAMES[k] : "?";
}

static const char *const POLICY_NAMES[] = { "mixed_bfloat16", "float32" };
const char *tpu_fe_dtype_policy_name(tpu_fe_dtype_policy p) {
  return (unsigned)p <= TPU_FE_FLOAT32 ? POLICY_NAMES[p] : "?";
}
int tpu_fe_dtype_policy_parse(const char *s, tpu_fe_dtype_policy *out) {
  for (int i = 0; i <= TPU_FE_FLOAT32; i++)
    if (!strcmp(s, POLICY_NAMES[i])) { *out = (tpu_fe_dtype_policy)i; return 1; }
  return 0;
}

/* The built-in models share their frame: a 28x28x1 input, softmax
** cross-entropy, adam at 0.001, seed 1. */
#define BUILTIN_JSON(name, layers)                                                     \
  "{\n"                                                                                \
  "  \"name\": \"" name "\",\n"                                                        \
  "  \"input\": [28, 28, 1],\n"                                                        \
  "  \"layers\": [\n" layers "  ],\n"                                                  \
  "  \"loss\": \"softmax_cross_entropy\",\n"                                           \
  "  \"optimizer\": { \"type\": \"adam\", \"learning_rate\": 0.001 },\n"               \
  "  \"seed\": 1\n"                                                                    \
  "}\n"

static const char MLP_JSON[] = BUILTIN_JSON("mlp",
  "    { \"type\": \"flatten\" },\n"
  "    { \"type\": \"dense\", \"units\": 256 },\n"
  "    { \"type\": \"relu\" },\n"
  "    { \"type\": \"dense\", \"units\": 128 },\n"
  "    { \"type\": \"relu\" },\n"
  "    { \"type\": \"dense\", \"units\": 10 }\n");

static const char CNN_JSON[] = BUILTIN_JSON("cnn",
  "    { \"type\": \"conv2d\", \"filters\": 32, \"kernel\": 5, \"padding\": \"same\" },\n"
  "    { \"type\": \"relu\" },\n"
  "    { \"type\": \"maxpool\", \"size\": 2 },\n"
  "    { \"type\": \"conv2d\", \"filters\": 64, \"kernel\": 5, \"padding\": \"same\" },\n"
  "    { \"type\": \"relu\" },\n"
  "    { \"type\": \"maxpool\", \"size\": 2 },\n"
  "    { \"type\": \"flatten\" },\n"
  "    { \"type\": \"dense\", \"units\": 1024 },\n"
  "    { \"type\": \"relu\" },\n"
  "    { \"type\": \"dense\", \"units\": 10 }\n");

static const char *const BUILTIN_NAMES[] = { "mlp", "cnn", NULL };
const char *const *tpu_fe_model_builtin_names(void) { return BUILTIN_NAMES; }
const char *tpu_fe_model_builtin_json(const char *name) {
  if (!strcmp(name, "mlp")) return MLP_JSON;
  if (!strcmp(name, "cnn")) return CNN_JSON;
  return NULL;
}

int tpu_fe_model_predictions(const tpu_fe_model *m) {
  return m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT ? m->input.c - 1 : 1;
}

int tpu_fe_model_label_classes(const tpu_fe_model *m) {
  if (m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT || m->loss == TPU_FE_LOSS_BINARY_XENT) return 2;
  return m->layers[m->out[0].layer].out.c;
}

int tpu_fe_model_vocab(const tpu_fe_model *m) {
  int v = 0;
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    if (L->kind == TPU_FE_EMBEDDING && L->inputs[0] == -1 && (v == 0 || L->input_dim < v)) v = L->input_dim;
  }
  return v;
}

size_t tpu_fe_shape_size(tpu_fe_shape s) { return (size_t)s.h * (size_t)s.w * (size_t)s.c; }
const char *tpu_fe_shape_str(tpu_fe_shape s, char *buf, size_t cap) {
  if (s.h == 1 && s.w == 1) snprintf(buf, cap, "%d", s.c);
  else snprintf(buf, cap, "%dx%dx%d", s.h, s.w, s.c);
  return buf;
}

/* {==================================================================
** Reading fields (base.h's JSON documents). Messages give the position of
** the value (or of its object, when it is missing) and name the field
** after what holds it: "layers[2] (dense): field 'units': ...".
** ================================================================== */
#define OBJ(c, o, path, what) (&(tpu_json_obj){ (c), (o), (path), (what) })

/* Reads an integer field in [lo, hi]; 'dflt' < lo means required. */
static tpu_status get_int(tpu_json *c, json_t *obj, const char *path, const char *what,
                          const char *key, long lo, long hi, long dflt, int *out) {
  int64_t v = dflt;
  tpu_status st = tpu_json_int(OBJ(c, obj, path, what), key, lo, hi, dflt < lo ? TPU_JSON_REQUIRED : 0, &v);
  if (st == TPU_OK) *out = (int)v;
  return st;
}
static tpu_status get_num(tpu_json *c, json_t *obj, const char *path, const char *what,
                          const char *key, double lo, double hi, bool hi_open, double dflt,
                          bool required, double *out) {
  *out = dflt;
  return tpu_json_num(OBJ(c, obj, path, what), key, lo, hi,
                      (hi_open ? TPU_JSON_HI_OPEN : 0) | (required ? TPU_JSON_REQUIRED : 0), out);
}
/* Rejects keys not in 'allowed' (NULL-terminated). */
static tpu_status check_keys(tpu_json *c, json_t *obj, const char *path, const char *what,
                             const char *const *allowed) {
  return tpu_json_keys(OBJ(c, obj, path, what), allowed);
}
/* }================================================================== */

/* conv2d and pools: "padding", "valid" (default) or "same". */
static tpu_status parse_padding(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  json_t *pd = json_object_get(jl, "padding");
  const char *ps = pd && json_is_string(pd) ? json_string_value(pd) : pd ? "" : "valid";
  if (strcmp(ps, "same") && strcmp(ps, "valid"))
    return tpu_json_fail_member(OBJ(c, jl, path, what), "padding", "expected \"same\" or \"valid\"");
  L->same = !strcmp(ps, "same");
  return TPU_OK;
}

/* dense and the convs: "use_bias" (default true) and "activation" (Keras'
** names; "relu6" is Keras 3's, relu capped at 6). */
static tpu_status parse_bias_act(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  bool use_bias = true;
  const char *a = "linear";
  tpu_status st = tpu_json_bool(OBJ(c, jl, path, what), "use_bias", &use_bias);
  if (st || (st = tpu_json_str(OBJ(c, jl, path, what), "activation", 0, &a))) return st;
  L->no_bias = !use_bias;
  static const struct { const char *name; tpu_fe_layer_kind k; } ACTS[] = {
    { "linear", TPU_FE_DENSE }, { "relu", TPU_FE_RELU }, { "relu6", TPU_FE_RELU }, { "tanh", TPU_FE_TANH },
    { "sigmoid", TPU_FE_SIGMOID }, { "softmax", TPU_FE_SOFTMAX } };
  for (size_t k = 0; k < sizeof ACTS / sizeof ACTS[0]; k++)
    if (!strcmp(a, ACTS[k].name)) {
      L->act = ACTS[k].k;
      if (!strcmp(a, "relu6")) { L->capped = true; L->max_value = 6.0; }
      return TPU_OK;
    }
  return tpu_json_fail_member(OBJ(c, jl, path, what), "activation", "unknown activation '%s'; expected linear, "
                              "relu, relu6, tanh, sigmoid or softmax", a);
}

/* The convs' "kernel": an integer or [height, width], 1..64 (required),
** read as 64-bit values so that one past 2^32 is refused as itself. */
static tpu_status parse_kernel(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  json_t *k = json_object_get(jl, "kernel");
  if (!k) return tpu_json_missing(OBJ(c, jl, path, what), "kernel", "an integer or [height, width] in 1..64");
  int64_t v[2];
  if (json_is_integer(k)) v[0] = v[1] = json_integer_value(k);
  else if (json_is_array(k) && json_array_size(k) == 2 && json_is_integer(json_array_get(k, 0)) &&
           json_is_integer(json_array_get(k, 1))) {
    v[0] = json_integer_value(json_array_get(k, 0));
    v[1] = json_integer_value(json_array_get(k, 1));
  } else {
    return tpu_json_fail_member(OBJ(c, jl, path, what), "kernel", "expected an integer or [height, width] in 1..64");
  }
  for (int i = 0; i < 2; i++)
    if (v[i] < 1 || v[i] > 64)
      return tpu_json_fail_member(OBJ(c, jl, path, what), "kernel", "expected an integer or [height, width] in "
                                  "1..64, got %lld", (long long)v[i]);
  L->kh = (int)v[0];
  L->kw = (int)v[1];
  return TPU_OK;
}

/* conv2d, depthwise_conv2d and separable_conv2d: Keras' Conv2D,
** DepthwiseConv2D and SeparableConv2D fields (filters for the first and
** the last; depth_multiplier, default 1, for the last two; groups, default
** 1, for conv2d). */
static tpu_status parse_conv(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const KS[3][11] = {
    { "type", "name", "inputs", "filters", "kernel", "stride", "padding", "use_bias", "activation", "groups", NULL },
    { "type", "name", "inputs", "kernel", "stride", "padding", "depth_multiplier", "use_bias", "activation", NULL },
    { "type", "name", "inputs", "filters", "kernel", "stride", "padding", "depth_multiplier", "use_bias",
      "activation", NULL } };
  const int v = L->kind == TPU_FE_CONV2D ? 0 : L->kind == TPU_FE_DEPTHWISE ? 1 : 2;
  tpu_status st = check_keys(c, jl, path, what, KS[v]);
  if (st || (st = parse_bias_act(c, jl, path, what, L))) return st;
  if (v != 1 && (st = get_int(c, jl, path, what, "filters", 1, 1 << 16, 0, &L->filters))) return st;
  if (v == 0 && (st = get_int(c, jl, path, what, "groups", 1, 1 << 16, 1, &L->groups))) return st;
  if (v != 0 && (st = get_int(c, jl, path, what, "depth_multiplier", 1, 1 << 12, 1, &L->depth_multiplier)))
    return st;
  if ((st = get_int(c, jl, path, what, "stride", 1, 64, 1, &L->stride))) return st;
  if ((st = parse_kernel(c, jl, path, what, L))) return st;
  return parse_padding(c, jl, path, what, L);
}

/* batch_normalization: Keras' "momentum" (0.99), "epsilon" (1e-3),
** "center" and "scale" (true); the channel axis only (Keras' axis=-1).
** layer_normalization: the same without "momentum" (Keras'
** LayerNormalization on the last axis). */
static tpu_status parse_batchnorm(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const ks[] = { "type", "name", "inputs", "momentum", "epsilon", "center", "scale", NULL };
  static const char *const lk[] = { "type", "name", "inputs", "epsilon", "center", "scale", NULL };
  const bool bn = L->kind == TPU_FE_BATCHNORM;
  bool center = true, scale = true;
  tpu_status st = check_keys(c, jl, path, what, bn ? ks : lk);
  if (st || (bn && (st = get_num(c, jl, path, what, "momentum", 0.0, 1.0, true, 0.99, false, &L->momentum))))
    return st;
  if ((st = get_num(c, jl, path, what, "epsilon", 1e-12, 1.0, false, 1e-3, false, &L->epsilon))) return st;
  if ((st = tpu_json_bool(OBJ(c, jl, path, what), "center", &center))) return st;
  if ((st = tpu_json_bool(OBJ(c, jl, path, what), "scale", &scale))) return st;
  L->no_center = !center;
  L->no_scale = !scale;
  return TPU_OK;
}



/* gelu ("approximate", default false: Keras' gelu) and leaky_relu
** ("negative_slope", default 0.3: Keras' LeakyReLU layer). */
static tpu_status parse_act_layer(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const gk[] = { "type", "name", "inputs", "approximate", NULL };
  static const char *const lk[] = { "type", "name", "inputs", "negative_slope", NULL };
  const bool gelu = L->kind == TPU_FE_GELU;
  tpu_status st = check_keys(c, jl, path, what, gelu ? gk : lk);
  if (st) return st;
  if (gelu) return tpu_json_bool(OBJ(c, jl, path, what), "approximate", &L->approximate);
  return get_num(c, jl, path, what, "negative_slope", 0.0, 1e6, false, 0.3, false, &L->negative_slope);
}

/* Field 'key' of rescaling or normalization into L->vec[row]: a number
** (every channel) or an array of 1..TPU_FE_MAX_VEC numbers (one a
** channel, checked against the input at shape inference); absent: dflt. */
static tpu_status get_vec(tpu_json *c, json_t *jl, const char *path, const char *what, const char *key, int row,
                          double dflt, double lo, tpu_fe_layer *L) {
  json_t *v = json_object_get(jl, key);
  const int n = !v ? 1 : json_is_number(v) ? 1 : json_is_array(v) ? (int)json_array_size(v) : 0;
  bool ok = n >= 1 && n <= TPU_FE_MAX_VEC && (row == 0 || n == L->nvec || n == 1 || L->nvec == 1);
  for (int k = 0; ok && k < TPU_FE_MAX_VEC; k++) {
    json_t *e = !v ? NULL : json_is_array(v) ? json_array_get(v, k < n ? (size_t)k : 0) : v;
    const double x = !e ? dflt : json_is_number(e) ? json_number_value(e) : NAN;
    ok = x >= lo && x <= 3.4e38;
    L->vec[row][k] = (float)x;
  }
  if (!ok)
    return tpu_json_fail_member(OBJ(c, jl, path, what), key, "expected a number or an array of 1..%d numbers (one "
                                "per channel%s)%s", TPU_FE_MAX_VEC, row ? ", as many as the first field's" : "",
                                lo >= 0 ? ", each >= 0" : ", finite");
  if (n > L->nvec) L->nvec = n;
  return TPU_OK;
}

/* rescaling: "scale" (required) and "offset" (0), Keras' Rescaling;
** normalization: "mean" and "variance" given together (constants, no
** parameters), or neither (adapted: Keras' weights mean 0, variance 1 and
** count 0, non-trainable, 2C+1 of them). */
static tpu_status parse_affine(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const rk[] = { "type", "name", "inputs", "scale", "offset", NULL };
  static const char *const nk[] = { "type", "name", "inputs", "mean", "variance", NULL };
  const bool resc = L->kind == TPU_FE_RESCALING;
  const char *k0 = resc ? "scale" : "mean", *k1 = resc ? "offset" : "variance";
  tpu_status st = check_keys(c, jl, path, what, resc ? rk : nk);
  if (st) return st;
  const bool has0 = json_object_get(jl, k0) != NULL, has1 = json_object_get(jl, k1) != NULL;
  if (resc && !has0) return tpu_json_missing(OBJ(c, jl, path, what), "scale", "a number or an array of numbers");
  if (!resc && has0 != has1)
    return tpu_json_missing(OBJ(c, jl, path, what), has0 ? "variance" : "mean", "\"mean\" and \"variance\" together "
                            "(or neither: adapted statistics in the parameters)");
  if (!resc && !has0) return TPU_OK;
  if ((st = get_vec(c, jl, path, what, k0, 0, 0.0, -3.4e38, L))) return st;
  return get_vec(c, jl, path, what, k1, 1, 0.0, resc ? -3.4e38 : 0.0, L);
}

/* multi_head_attention: Keras' MultiHeadAttention as self-attention,
** "num_heads" and "key_dim" (required), "value_dim" (key_dim), "use_bias"
** (true), "dropout" on the attention weights (0), "causal" (false: Keras'
** use_causal_mask). */
static tpu_status parse_mha(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const ks[] = { "type", "name", "inputs", "num_heads", "key_dim", "value_dim", "use_bias",
                                    "dropout", "causal", NULL };
  bool use_bias = true;
  tpu_status st = check_keys(c, jl, path, what, ks);
  if (st || (st = get_int(c, jl, path, what, "num_heads", 1, 1024, 0, &L->num_heads))) return st;
  if ((st = get_int(c, jl, path, what, "key_dim", 1, 1 << 16, 0, &L->key_dim))) return st;
  if ((st = get_int(c, jl, path, what, "value_dim", 1, 1 << 16, L->key_dim, &L->value_dim))) return st;
  if ((st = tpu_json_bool(OBJ(c, jl, path, what), "use_bias", &use_bias))) return st;
  if ((st = tpu_json_bool(OBJ(c, jl, path, what), "causal", &L->causal))) return st;
  L->no_bias = !use_bias;
  return get_num(c, jl, path, what, "dropout", 0.0, 1.0, true, 0.0, false, &L->rate);
}

/* embedding ("input_dim", "output_dim" required, "token_types" 0),
** position_embedding ("max_length" required), take ("position", 0). */
static tpu_status parse_seq_layer(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const ek[] = { "type", "name", "inputs", "input_dim", "output_dim", "token_types", NULL };
  static const char *const pk[] = { "type", "name", "inputs", "max_length", NULL };
  static const char *const tk[] = { "type", "name", "inputs", "position", NULL };
  const tpu_fe_layer_kind k = L->kind;
  tpu_status st = check_keys(c, jl, path, what, k == TPU_FE_EMBEDDING ? ek : k == TPU_FE_TAKE ? tk : pk);
  if (st) return st;
  if (k == TPU_FE_TAKE) return get_int(c, jl, path, what, "position", 0, 65535, 0, &L->position);
  if (k == TPU_FE_POS_EMBEDDING) return get_int(c, jl, path, what, "max_length", 1, 65536, 0, &L->max_length);
  if ((st = get_int(c, jl, path, what, "input_dim", 1, 1 << 24, 0, &L->input_dim))) return st;
  if ((st = get_int(c, jl, path, what, "output_dim", 1, 1 << 16, 0, &L->output_dim))) return st;
  return get_int(c, jl, path, what, "token_types", 0, 16, 0, &L->token_types);
}

/* reshape's "target_shape": [n], [length, channels] or [h, w, c], integers
** 1..2^26, one of them may be -1 (Keras' Reshape); permute's "dims": a
** permutation of 1..2 (a sequence) or 1..3 (an image), Keras' Permute. */
static tpu_status parse_axes(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  static const char *const rk[] = { "type", "name", "inputs", "target_shape", NULL };
  static const char *const pk[] = { "type", "name", "inputs", "dims", NULL };
  const bool perm = L->kind == TPU_FE_PERMUTE;
  const char *key = perm ? "dims" : "target_shape";
  tpu_status st = check_keys(c, jl, path, what, perm ? pk : rk);
  if (st) return st;
  json_t *t = json_object_get(jl, key);
  const size_t n = json_is_array(t) ? json_array_size(t) : 0;
  unsigned seen = 0;   /* permute: the axes taken; reshape: bit 0, a -1 */
  bool ok = perm ? n == 2 || n == 3 : n >= 1 && n <= 3;
  for (size_t k = 0; ok && k < n; k++) {
    json_t *e = json_array_get(t, k);
    const json_int_t v = json_is_integer(e) ? json_integer_value(e) : 0;
    if (perm) ok = v >= 1 && v <= (json_int_t)n && !(seen & (1u << v));
    else ok = (v >= 1 && v <= (1 << 26)) || (v == -1 && !(seen & 1u));
    seen |= !ok ? 0 : perm ? 1u << v : v == -1 ? 1u : 0;
    L->target[k] = (int)v;
  }
  if (!t) return tpu_json_missing(OBJ(c, jl, path, what), key, perm ? "a permutation of [1, 2] or [1, 2, 3]"
                                  : "[n], [length, channels] or [h, w, c]");
  if (!ok)
    return tpu_json_fail_member(OBJ(c, jl, path, what), key, perm ? "expected a permutation of [1, 2] (a sequence) "
                                "or [1, 2, 3] (an image)" : "expected [n], [length, channels] or [h, w, c], integers in "
                                "1..67108864 and at most one -1");
  L->ntarget = (int)n;
  return TPU_OK;
}

/* zero_padding's "padding", as Keras' ZeroPadding2D: p (all sides), [h, w]
** (top and bottom h, left and right w) or [[top, bottom], [left, right]]. */
static tpu_status parse_zero_padding(tpu_json *c, json_t *jl, const char *path, const char *what, tpu_fe_layer *L) {
  json_t *pd = json_object_get(jl, "padding");
  int64_t v[4] = { -1, -1, -1, -1 };   /* top, bottom, left, right; 64-bit: 2^32 + 1 is not 1 */
  bool shape = true;
  if (!pd) v[0] = v[1] = v[2] = v[3] = 1;
  else if (json_is_integer(pd)) v[0] = v[1] = v[2] = v[3] = json_integer_value(pd);
  else if (json_is_array(pd) && json_array_size(pd) == 2) {
    for (size_t a = 0; a < 2; a++) {
      json_t *e = json_array_get(pd, a);
      if (json_is_integer(e)) v[2 * a] = v[2 * a + 1] = json_integer_value(e);
      else if (json_is_array(e) && json_array_size(e) == 2 && json_is_integer(json_array_get(e, 0)) &&
               json_is_integer(json_array_get(e, 1))) {
        v[2 * a] = json_integer_value(json_array_get(e, 0));
        v[2 * a + 1] = json_integer_value(json_array_get(e, 1));
      } else {
        shape = false;
      }
    }
  } else {
    shape = false;
  }
  for (int k = 0; k < 4; k++)
    if (!shape || v[k] < 0 || v[k] > 1024) {
      char got[48] = "";
      if (shape) snprintf(got, sizeof got, ", got %lld", (long long)v[k]);
      return tpu_json_fail_member(OBJ(c, jl, path, what), "padding", "expected p, [h, w] or [[top, bottom], "
                                  "[left, right]], integers in 0..1024%s", got);
    }
  L->pad_top = (int)v[0]; L->pad_bottom = (int)v[1]; L->pad_left = (int)v[2]; L->pad_right = (int)v[3];
  return TPU_OK;
}

static tpu_status parse_layer(tpu_json *c, json_t *jl, int i, tpu_fe_layer *L) {
  char path[48], what[64];
  snprintf(path, sizeof path, "layers[%d]", i);
  if (!json_is_object(jl)) return tpu_json_fail(c, path, "layers[%d]: expected an object with a \"type\"", i);
  snprintf(what, sizeof what, "layers[%d]: ", i);
  json_t *jt = json_object_get(jl, "type");
  const char *t = json_is_string(jt) ? json_string_value(jt) : "";
  int kind = -1;
  for (int k = 0; k < TPU_FE_NKINDS; k++) if (!strcmp(t, KIND_NAMES[k])) kind = k;
  if (!jt)
    return tpu_json_missing(OBJ(c, jl, path, what), "type", "one of " KIND_LIST);
  if (kind < 0)
    return tpu_json_fail_member(OBJ(c, jl, path, what), "type", "unknown layer '%s'; expected one of " KIND_LIST,
                                json_is_string(jt) ? t : "(not a string)");
  memset(L, 0, sizeof *L);
  L->kind = (tpu_fe_layer_kind)kind;
  snprintf(what, sizeof what, "layers[%d] (%s): ", i, t);
  const char *name = "";
  tpu_status st = tpu_json_str(OBJ(c, jl, path, what), "name", 0, &name);
  if (st) return st;
  size_t nl = strlen(name);
  if (json_object_get(jl, "name") && (nl < 1 || nl >= sizeof L->name || !strcmp(name, "input")))
    return tpu_json_fail_member(OBJ(c, jl, path, what), "name", "expected 1..%d characters other than \"input\" "
                                "(which names the model's input)", (int)sizeof L->name - 1);
  snprintf(L->name, sizeof L->name, "%s", name);
  switch (L->kind) {
  case TPU_FE_DENSE: {
    static const char *const ks[] = { "type", "name", "inputs", "units", "use_bias", "activation", "tied_to", NULL };
    if ((st = check_keys(c, jl, path, what, ks)) || (st = parse_bias_act(c, jl, path, what, L))) return st;
    if (json_object_get(jl, "tied_to")) {   /* the units are the table's rows (resolve_tied); no bias */
      if (json_object_get(jl, "use_bias") && !L->no_bias)
        return tpu_json_fail_member(OBJ(c, jl, path, what), "use_bias", "a dense tied to an embedding's table has no "
                                    "bias (GPT-2's language-model head); leave use_bias out or false");
      L->no_bias = true;
      return get_int(c, jl, path, what, "units", 1, 1 << 24, 1, &L->units);
    }
    return get_int(c, jl, path, what, "units", 1, 1 << 20, 0, &L->units);
  }
  case TPU_FE_CONV2D: case TPU_FE_DEPTHWISE: case TPU_FE_SEPARABLE: return parse_conv(c, jl, path, what, L);
  case TPU_FE_RELU: {   /* Keras' ReLU(max_value): optional, >= 0 */
    static const char *const ks[] = { "type", "name", "inputs", "max_value", NULL };
    if ((st = check_keys(c, jl, path, what, ks))) return st;
    L->capped = json_object_get(jl, "max_value") != NULL;
    return get_num(c, jl, path, what, "max_value", 0.0, 3.4e38, false, 0.0, false, &L->max_value);
  }
  case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL: {
    static const char *const ks[] = { "type", "name", "inputs", "size", "stride", "padding", NULL };
    if ((st = check_keys(c, jl, path, what, ks))) return st;
    if ((st = get_int(c, jl, path, what, "size", 1, 64, 2, &L->pool))) return st;
    if ((st = get_int(c, jl, path, what, "stride", 1, 64, L->pool, &L->stride))) return st;
    return parse_padding(c, jl, path, what, L);
  }
  case TPU_FE_ZERO_PADDING: {
    static const char *const ks[] = { "type", "name", "inputs", "padding", NULL };
    if ((st = check_keys(c, jl, path, what, ks))) return st;
    return parse_zero_padding(c, jl, path, what, L);
  }
  case TPU_FE_BATCHNORM: return parse_batchnorm(c, jl, path, what, L);
  case TPU_FE_LAYERNORM: return parse_batchnorm(c, jl, path, what, L);
  case TPU_FE_MHA: return parse_mha(c, jl, path, what, L);
  case TPU_FE_EMBEDDING: case TPU_FE_POS_EMBEDDING: case TPU_FE_TAKE: return parse_seq_layer(c, jl, path, what, L);
  case TPU_FE_RESHAPE: case TPU_FE_PERMUTE: return parse_axes(c, jl, path, what, L);
  case TPU_FE_GELU: case TPU_FE_LEAKY_RELU: return parse_act_layer(c, jl, path, what, L);
  case TPU_FE_RESCALING: case TPU_FE_NORMALIZATION: return parse_affine(c, jl, path, what, L);
  case TPU_FE_DROPOUT: {   /* "per_sample": the whole sample kept or dropped */
    static const char *const ks[] = { "type", "name", "inputs", "rate", "per_sample", NULL };
    if ((st = check_keys(c, jl, path, what, ks))) return st;
    if ((st = tpu_json_bool(OBJ(c, jl, path, what), "per_sample", &L->per_sample))) return st;
    return get_num(c, jl, path, what, "rate", 0.0, 1.0, true, 0, true, &L->rate);
  }
  default: {
    static const char *const ks[] = { "type", "name", "inputs", NULL };
    return check_keys(c, jl, path, what, ks);
  }
  }
}


/* {==================================================================
** The graph: names, inputs, order, use
** ================================================================== */
/* "layers[3] (add 'sum')" or "layers[3] (add)" */
static const char *who(const tpu_fe_model *m, int i, char *buf, size_t cap) {
  if (i < 0) { snprintf(buf, cap, "the model input"); return buf; }
  const tpu_fe_layer *L = &m->layers[i];
  if (L->name[0]) snprintf(buf, cap, "layers[%d] (%s '%s')", i, KIND_NAMES[L->kind], L->name);
  else snprintf(buf, cap, "layers[%d] (%s)", i, KIND_NAMES[L->kind]);
  return buf;
}
static bool is_merge(tpu_fe_layer_kind k) { return k == TPU_FE_ADD || k == TPU_FE_CONCAT || k == TPU_FE_MULTIPLY; }

/* Resolves layer i's "inputs" (names; "input" is the model's input) into
** indexes; without it, the layer before (the model input for layer 0). */
static tpu_status resolve_inputs(tpu_json *c, json_t *jl, tpu_fe_model *m, int i) {
  tpu_fe_layer *L = &m->layers[i];
  char path[48], w[80], what[96];
  snprintf(path, sizeof path, "layers[%d]", i);
  snprintf(what, sizeof what, "%s: ", who(m, i, w, sizeof w));
  tpu_json_obj *o = OBJ(c, jl, path, what);
  json_t *ji = json_object_get(jl, "inputs");
  const bool merge = is_merge(L->kind);
  if (!ji) {
    if (merge) return tpu_json_missing(o, "inputs", L->kind == TPU_FE_MULTIPLY ? "an array of 2 layer names (or "
                                       "\"input\")" : "an array of 2..8 layer names (or \"input\")");
    L->nin = 1;
    L->inputs[0] = i - 1;
    return TPU_OK;
  }
  size_t n = json_is_string(ji) ? 1 : json_is_array(ji) ? json_array_size(ji) : 0;
  const bool mul = L->kind == TPU_FE_MULTIPLY;   /* its backward is the product of the other input */
  if (merge ? n < 2 || n > (mul ? 2 : TPU_FE_MAX_INPUTS) : n != 1)
    return tpu_json_fail_member(o, "inputs", mul ? "expected an array of 2 layer names (or \"input\")"
                                : merge ? "expected an array of 2..8 layer names (or \"input\")"
                                : "expected one layer name (or \"input\"), as a string or a one-element array");
  L->nin = (int)n;
  for (size_t k = 0; k < n; k++) {
    json_t *e = json_is_string(ji) ? ji : json_array_get(ji, k);
    const char *nm = json_is_string(e) ? json_string_value(e) : NULL;
    if (!nm) return tpu_json_fail_member(o, "inputs", "element %zu is not a string (a layer name)", k);
    int j = -2;
    if (!strcmp(nm, "input")) j = -1;
    for (int q = 0; q < m->nlayers && j == -2; q++) if (!strcmp(m->layers[q].name, nm)) j = q;
    if (j == -2)
      return tpu_json_fail_member(o, "inputs", "unknown input '%s': no layer has that \"name\" (\"input\" names "
                                  "the model's input)", nm);
    L->inputs[k] = j;
  }
  return TPU_OK;
}

/* A dense's "tied_to": an embedding before it, whose input_dim x output_dim
** table it reads transposed as its kernel (GPT-2's language-model head);
** its units are the table's rows (a "units" given must say the same). */
static tpu_status resolve_tied(tpu_json *c, json_t *jl, tpu_fe_model *m, int i) {
  tpu_fe_layer *L = &m->layers[i];
  json_t *jt = json_object_get(jl, "tied_to");
  if (L->kind != TPU_FE_DENSE || !jt) return TPU_OK;
  char path[48], w[80], what[96];
  snprintf(path, sizeof path, "layers[%d]", i);
  snprintf(what, sizeof what, "%s: ", who(m, i, w, sizeof w));
  tpu_json_obj *o = OBJ(c, jl, path, what);
  const char *nm = json_is_string(jt) ? json_string_value(jt) : NULL;
  int j = -1;
  for (int q = 0; nm && q < i && j < 0; q++) if (!strcmp(m->layers[q].name, nm)) j = q;
  if (j < 0 || m->layers[j].kind != TPU_FE_EMBEDDING)
    return tpu_json_fail_member(o, "tied_to", "expected the name of an embedding layer before this one, got %s%s%s",
                                nm ? "'" : "", nm ? nm : "a value that is not a string", nm ? "'" : "");
  const tpu_fe_layer *E = &m->layers[j];
  if (json_object_get(jl, "units") && L->units != E->input_dim)
    return tpu_json_fail_member(o, "units", "%d, but the table of '%s' has %d rows (its input_dim); a tied dense "
                                "gives one output per row", L->units, nm, E->input_dim);
  L->units = E->input_dim;
  L->tied = j + 1;
  return TPU_OK;
}

/* True when layer 'from' reaches layer 'to' through inputs (depth-first,
** 'seen' marks visited layers). */
static bool reaches(const tpu_fe_model *m, int from, int to, unsigned char *seen) {
  if (from < 0 || seen[from]) return false;
  if (from == to) return true;
  seen[from] = 1;
  for (int k = 0; k < m->layers[from].nin; k++)
    if (reaches(m, m->layers[from].inputs[k], to, seen)) return true;
  return false;
}

/* Every layer after its inputs (a later input is a cycle or a listing out
** of order, said apart) and unique names. */
static tpu_status check_graph_order(tpu_json *c, const tpu_fe_model *m) {
  char a[80], b[80], path[48];
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *L = &m->layers[i];
    snprintf(path, sizeof path, "layers[%d]", i);
    for (int q = 0; q < i && L->name[0]; q++)
      if (!strcmp(m->layers[q].name, L->name))
        return tpu_json_fail(c, path, "%s: field 'name': '%s' is already the name of layers[%d]; names must be unique",
                             who(m, i, a, sizeof a), L->name, q);
    for (int k = 0; k < L->nin; k++) {
      const int j = L->inputs[k];
      if (j < i) continue;
      unsigned char seen[TPU_FE_MAX_LAYERS] = { 0 };
      if (reaches(m, j, i, seen))
        return tpu_json_fail(c, path, "%s: field 'inputs': a cycle: it takes its input from %s, which depends on "
                             "it; a model must be a graph without cycles", who(m, i, a, sizeof a), who(m, j, b, sizeof b));
      return tpu_json_fail(c, path, "%s: field 'inputs': %s is listed after it; list every layer after its inputs",
                           who(m, i, a, sizeof a), who(m, j, b, sizeof b));
    }
  }
  return TPU_OK;
}

/* Every layer but the outputs (by default the last layer) feeds a later one. */
static tpu_status check_graph_use(tpu_json *c, const tpu_fe_model *m) {
  char a[80], b[48], path[48];
  unsigned char used[TPU_FE_MAX_LAYERS] = { 0 };
  for (int i = 0; i < m->nlayers; i++)
    for (int k = 0; k < m->layers[i].nin; k++) if (m->layers[i].inputs[k] >= 0) used[m->layers[i].inputs[k]] = 1;
  for (int k = 0; k < m->nout; k++) used[m->out[k].layer] = 1;   /* by default the last layer */
  int unused = -1;
  for (int i = 0; i < m->nlayers && unused < 0; i++) if (!used[i]) unused = i;
  if (unused >= 0) {
    snprintf(path, sizeof path, "layers[%d]", unused);
    return tpu_json_fail(c, path, "%s: an unused branch: no later layer takes its output %s as an input, and %s",
                         who(m, unused, a, sizeof a), tpu_fe_shape_str(m->layers[unused].out, b, sizeof b),
                         m->nout > 1 ? "it is not one of the model's \"outputs\""
                         : "only the last layer is the model's output");
  }
  return TPU_OK;
}

/* add: equal shapes; multiply: equal shapes, or one input 1x1xC and the
** other HxWxC (the gate broadcast over height and width); concatenate:
** equal height and width, channels summed. */
static tpu_status merge_shape(tpu_json *c, const tpu_fe_model *m, int i, tpu_fe_shape *out) {
  const tpu_fe_layer *L = &m->layers[i];
  char a[80], b[80], d[80], x[48], y[48], path[48];
  snprintf(path, sizeof path, "layers[%d]", i);
  const int j0 = L->inputs[0];
  tpu_fe_shape s0 = j0 < 0 ? m->input : m->layers[j0].out, o = s0;
  for (int k = 1; k < L->nin; k++) {
    const int j = L->inputs[k];
    tpu_fe_shape s = j < 0 ? m->input : m->layers[j].out;
    bool ok = L->kind != TPU_FE_CONCAT ? s.h == s0.h && s.w == s0.w && s.c == s0.c : s.h == s0.h && s.w == s0.w;
    if (!ok && L->kind == TPU_FE_MULTIPLY && s.c == s0.c && (s.h * s.w == 1 || s0.h * s0.w == 1)) {
      if (s0.h * s0.w == 1) o = s;   /* the gate first */
      continue;
    }
    if (!ok)
      return tpu_json_fail(c, path, "%s: input shapes do not match: %s gives %s, %s gives %s; %s", who(m, i, a, sizeof a),
                           who(m, j0, b, sizeof b), tpu_fe_shape_str(s0, x, sizeof x), who(m, j, d, sizeof d),
                           tpu_fe_shape_str(s, y, sizeof y), L->kind == TPU_FE_ADD ? "add needs equal shapes"
                           : L->kind == TPU_FE_MULTIPLY ? "multiply needs equal shapes, or a 1x1xC gate and an HxWxC map of the same channels"
                           : "concatenate joins channels and needs equal height and width");
    if (L->kind == TPU_FE_CONCAT) o.c += s.c;
  }
  *out = o;
  return TPU_OK;
}
/* }================================================================== */

/* 'same' padding as TensorFlow: out = ceil(in / stride), the padding split
** with the extra row (column) at the bottom (right). Sets out's h and w. */
static void same_out(tpu_fe_shape s, int kh, int kw, tpu_fe_layer *L) {
  const int oh = (s.h + L->stride - 1) / L->stride, ow = (s.w + L->stride - 1) / L->stride;
  const int ph = (oh - 1) * L->stride + kh - s.h, pw = (ow - 1) * L->stride + kw - s.w;
  L->pad_top = ph > 0 ? ph / 2 : 0;
  L->pad_left = pw > 0 ? pw / 2 : 0;
  L->out = (tpu_fe_shape){ oh, ow, s.c };
}

/* The convs' output shape, parameter counts and buffers: conv2d an im2col
** GEMM to 'filters' channels (with groups G, kernel kh x kw x C/G x
** filters, expanded to its block-diagonal operand, max_wx); depthwise_conv2d its depthwise GEMM to
** C*depth_multiplier (the kernel kh x kw x C x dm, expanded to its
** block-diagonal operand, max_wx); separable_conv2d that, then a pointwise
** C*dm -> filters (Keras' SeparableConv2D: kh*kw*C*dm + C*dm*filters
** weights, filters biases). */
static tpu_status conv_shape(tpu_json *c, tpu_fe_model *m, int i, bool in_vec, size_t *max_cols, size_t *max_wx) {
  tpu_fe_layer *L = &m->layers[i];
  const tpu_fe_shape s = L->in;
  const char *kn = tpu_fe_layer_kind_name(L->kind);
  char path[48], a[48];
  snprintf(path, sizeof path, "layers[%d]", i);
  if (in_vec)   /* a vector (flatten, dense, ...), not a 1x1 image */
    return tpu_json_fail(c, path, "layers[%d] (%s): input shape %s is flat; %s needs height x width x "
                         "channels (remove any flatten before it, or give \"input\" as [h, w, c])", i, kn,
                         tpu_fe_shape_str(s, a, sizeof a), kn);
  int oh, ow;
  if (L->same) {
    same_out(s, L->kh, L->kw, L);
    oh = L->out.h;
    ow = L->out.w;
  } else {
    if (L->kh > s.h || L->kw > s.w)
      return tpu_json_fail(c, path, "layers[%d] (%s): field 'kernel': %dx%d does not fit the input shape %s "
                           "with padding \"valid\"", i, kn, L->kh, L->kw, tpu_fe_shape_str(s, a, sizeof a));
    oh = (s.h - L->kh) / L->stride + 1;
    ow = (s.w - L->kw) / L->stride + 1;
  }
  const size_t taps = (size_t)L->kh * (size_t)L->kw, C = (size_t)s.c, dm = (size_t)L->depth_multiplier;
  const size_t cols = (size_t)oh * (size_t)ow * taps * C;
  if (cols > *max_cols) *max_cols = cols;
  if (L->kind == TPU_FE_CONV2D) {
    const size_t G = L->groups > 1 ? (size_t)L->groups : 1, F = (size_t)L->filters;
    if (C % G || F % G)
      return tpu_json_fail(c, path, "layers[%d] (%s): field 'groups': %d does not divide the %d input channels "
                           "and the %d filters (both must be multiples of it)", i, kn, L->groups, s.c, L->filters);
    if (G > 1 && taps * C * F > ((size_t)1 << 28))
      return tpu_json_fail(c, path, "layers[%d] (%s): %d channels to %d filters: the grouped kernel's "
                           "block-diagonal GEMM operand (%zu x %zu) is too large (at most 2^28 values)", i, kn, s.c,
                           L->filters, taps * C, F);
    if (G > 1 && taps * C * F > *max_wx) *max_wx = taps * C * F;   /* the expanded kernel, for the value path */
    L->out = (tpu_fe_shape){ oh, ow, L->filters };
    L->nw = taps * (C / G) * F;
    L->nb = L->no_bias ? 0 : F;
    return TPU_OK;
  }
  if (C * dm > ((size_t)1 << 16) || (size_t)oh * (size_t)ow * C * dm > ((size_t)1 << 26))
    return tpu_json_fail(c, path, "layers[%d] (%s): field 'depth_multiplier': %d x %d channels of %dx%d make the "
                         "depthwise output too large (at most 65536 channels and 2^26 values per sample)", i, kn,
                         (int)dm, s.c, oh, ow);
  const size_t wx = taps * C * C * dm;   /* the expanded kernel, for the value path */
  if (wx > ((size_t)1 << 28))
    return tpu_json_fail(c, path, "layers[%d] (%s): %d channels: the depthwise kernel's block-diagonal GEMM operand "
                         "(%zu x %zu) is too large (at most 2^28 values)", i, kn, s.c, taps * C, C * dm);
  if (wx > *max_wx) *max_wx = wx;
  L->nw = taps * C * dm;
  if (L->kind == TPU_FE_DEPTHWISE) {
    L->out = (tpu_fe_shape){ oh, ow, (int)(C * dm) };
    L->nb = L->no_bias ? 0 : C * dm;
    return TPU_OK;
  }
  L->out = (tpu_fe_shape){ oh, ow, L->filters };
  L->nw2 = C * dm * (size_t)L->filters;
  L->nw += L->nw2;
  L->nb = L->no_bias ? 0 : (size_t)L->filters;
  return TPU_OK;
}

/* embedding: the model's input, [L] token ids, to 1 x L x output_dim (its
** table input_dim x output_dim, then token_types x output_dim);
** position_embedding: max_length x C added to the first H*W positions; take:
** 1 x L x C to the vector at 'position'. */
static tpu_status seq_shape(tpu_json *c, tpu_fe_model *m, int i) {
  tpu_fe_layer *L = &m->layers[i];
  const tpu_fe_shape s = L->in;
  const int len = s.h * s.w;
  char path[48], a[48];
  snprintf(path, sizeof path, "layers[%d]", i);
  if (L->kind == TPU_FE_EMBEDDING) {
    if (L->inputs[0] != -1 || s.h != 1 || s.w != 1)
      return tpu_json_fail(c, path, "layers[%d] (embedding): its input must be the model's input, given as [length] "
                           "(the token ids)", i);
    L->out = (tpu_fe_shape){ 1, s.c, L->output_dim };
    L->nw = ((size_t)L->input_dim + (size_t)L->token_types) * (size_t)L->output_dim;
    return TPU_OK;
  }
  if (L->kind == TPU_FE_POS_EMBEDDING) {
    if (len > L->max_length)   /* a sequence's positions, or an image's pixels (ViT's patches) */
      return tpu_json_fail(c, path, "layers[%d] (position_embedding): field 'max_length': %d positions cannot take "
                           "the input shape %s (%d positions: height x width)", i, L->max_length,
                           tpu_fe_shape_str(s, a, sizeof a), len);
    L->out = s;
    L->nw = (size_t)L->max_length * (size_t)s.c;
    return TPU_OK;
  }
  if (L->kind == TPU_FE_PERMUTE) {   /* a sequence's (length, channels) or an image's (h, w, c), permuted */
    const int ax[3] = { s.h, s.w, s.c }, off = 3 - L->ntarget;
    if (L->ntarget == 2 && s.h != 1)
      return tpu_json_fail(c, path, "layers[%d] (permute): field 'dims': two dims permute a sequence (1 x length x "
                           "channels), not the input shape %s", i, tpu_fe_shape_str(s, a, sizeof a));
    int d[3] = { 1, 1, 1 };
    for (int k = 0; k < L->ntarget; k++) d[off + k] = ax[off + L->target[k] - 1];
    L->out = (tpu_fe_shape){ d[0], d[1], d[2] };
    return TPU_OK;
  }
  if (L->kind == TPU_FE_CLASS_TOKEN) {   /* one more position, first */
    L->out = (tpu_fe_shape){ 1, len + 1, s.c };
    L->nw = (size_t)s.c;
    return TPU_OK;
  }
  if (L->kind == TPU_FE_RESHAPE) {
    const size_t all = tpu_fe_shape_size(s);
    size_t known = 1;
    for (int k = 0; k < L->ntarget; k++) known *= L->target[k] > 0 ? (size_t)L->target[k] : 1;
    int d[3] = { 1, 1, 1 };
    for (int k = 0; k < L->ntarget; k++)
      d[3 - L->ntarget + k] = L->target[k] > 0 ? L->target[k] : known && all % known == 0 ? (int)(all / known) : 0;
    if ((size_t)d[0] * (size_t)d[1] * (size_t)d[2] != all)
      return tpu_json_fail(c, path, "layers[%d] (reshape): field 'target_shape': it does not hold the input shape %s "
                           "(%zu values)", i, tpu_fe_shape_str(s, a, sizeof a), all);
    L->out = (tpu_fe_shape){ d[0], d[1], d[2] };
    return TPU_OK;
  }
  if (s.h != 1 || L->position >= s.w)   /* take */
    return tpu_json_fail(c, path, "layers[%d] (take): field 'position': %d is not a position of the input shape %s "
                         "(a sequence 1 x length x channels)", i, L->position, tpu_fe_shape_str(s, a, sizeof a));
  L->out = (tpu_fe_shape){ 1, 1, s.c };
  return TPU_OK;
}

/* Layer L's place in the parameter vector from 'off'; returns the next
** offset. batch_normalization: gamma, beta, moving mean and variance
** (Keras' 4*C, the moving ones non-trainable); layer_normalization: gamma,
** beta (Keras' 2*C); an adapted normalization: mean, variance, count
** (Keras' 2*C + 1, non-trainable). */
static size_t layout(tpu_fe_model *m, tpu_fe_layer *L, size_t off) {
  if (L->kind == TPU_FE_BATCHNORM || L->kind == TPU_FE_LAYERNORM) {
    L->nw = L->no_scale ? 0 : (size_t)L->out.c;
    L->nb = L->no_center ? 0 : (size_t)L->out.c;
    L->ns = L->kind == TPU_FE_BATCHNORM ? 2 * (size_t)L->out.c : 0;
  }
  if (L->kind == TPU_FE_NORMALIZATION && L->nvec == 0) L->ns = 2 * (size_t)L->out.c + 1;
  L->woff = off; off += L->nw;
  L->boff = off; off += L->nb;
  L->soff = off; off += L->ns;
  m->nstate += L->ns;
  return off;
}

/* The next-token loss's model: its input L token ids (L >= 2) feeding an
** embedding, its output 1 x L x V logits with every id of the vocabulary
** below V (the labels are the input's ids). */
static tpu_status check_next_token(tpu_json *c, const tpu_fe_model *m) {
  const tpu_fe_shape o = m->layers[m->nlayers - 1].out;
  const int vocab = tpu_fe_model_vocab(m), L = m->input.c;
  char a[48];
  if (m->input.h != 1 || m->input.w != 1 || vocab < 1 || L < 2)
    return tpu_json_fail(c, "loss", "next_token_softmax_cross_entropy scores each position against the next token id "
                         "of the input: the model's input must be [length] of at least 2 token ids read by an "
                         "embedding");
  if (o.h != 1 || o.w != L || o.c < vocab)
    return tpu_json_fail(c, "loss", "next_token_softmax_cross_entropy needs the last layer's output to be the logits "
                         "of each of the %d positions over the %d token ids (1 x %d x V, V >= %d), not %s", L, vocab,
                         L, vocab, tpu_fe_shape_str(o, a, sizeof a));
  return TPU_OK;
}

/* Shape inference: sets in/out of every layer and the parameter layout.
** A 1x1xC image is a shape like a C vector; what tells them apart for
** conv2d and zero_padding is where it comes from: 'input_vec' (the input
** given as [size]), flatten, dense and global_avgpool make vectors, the
** layers that keep the shape keep the kind. */
/* A dense layer's shape and sizes: along the last axis at every position,
** as Keras' Dense; a dense tied to an embedding has no kernel of its own
** (the table, which must be as wide as its input). */
static tpu_status dense_shape(tpu_json *c, tpu_fe_model *m, int i, const char *path) {
  tpu_fe_layer *L = &m->layers[i];
  const tpu_fe_shape s = L->in;
  char a[48];
  L->out = (tpu_fe_shape){ s.h, s.w, L->units };
  L->nw = (size_t)s.c * (size_t)L->units;
  if (L->tied) {
    const tpu_fe_layer *E = &m->layers[L->tied - 1];
    if (E->output_dim != s.c)
      return tpu_json_fail(c, path, "layers[%d] (dense): field 'tied_to': the table of '%s' is %d x %d; its "
                           "transpose takes inputs of %d channels, not the input shape %s", i, E->name,
                           E->input_dim, E->output_dim, E->output_dim, tpu_fe_shape_str(s, a, sizeof a));
    L->nw = 0;
  }
  L->nb = L->no_bias ? 0 : (size_t)L->units;
  return TPU_OK;
}

/* Keras' rank of L's output, for printing (tpu_fe_layer.image): the layers
** that make images, or keep their input's (a dense acts on the last axis,
** so keeps it even where the loader takes its 1x1 output as a vector);
** 'input_image': the input given as [h, w, c] (not [size] or [L, C]). */
static bool keras_image(const tpu_fe_model *m, const tpu_fe_layer *L, bool vec, bool input_image) {
  const bool in_image = L->inputs[0] < 0 ? input_image : m->layers[L->inputs[0]].image;
  if (L->kind == TPU_FE_DENSE) return in_image;
  return !vec && (L->kind == TPU_FE_CONV2D || L->kind == TPU_FE_DEPTHWISE || L->kind == TPU_FE_SEPARABLE ||
                  L->kind == TPU_FE_MAXPOOL || L->kind == TPU_FE_AVGPOOL || L->kind == TPU_FE_ZERO_PADDING ||
                  (L->kind == TPU_FE_RESHAPE && L->ntarget == 3) || (L->kind != TPU_FE_RESHAPE && in_image));
}

static tpu_status infer(tpu_json *c, tpu_fe_model *m, bool input_vec, bool input_image) {
  tpu_fe_shape s = m->input;
  size_t off = 0, max_act = tpu_fe_shape_size(s), max_cols = 0, max_wx = 0;
  char a[48], b[48];
  unsigned char vec[TPU_FE_MAX_LAYERS];
  for (int i = 0; i < m->nlayers; i++) {
    tpu_fe_layer *L = &m->layers[i];
    char path[48];
    snprintf(path, sizeof path, "layers[%d]", i);
    const char *kn = KIND_NAMES[L->kind];
    s = L->inputs[0] < 0 ? m->input : m->layers[L->inputs[0]].out;
    L->in = s;
    bool flat = s.h == 1 && s.w == 1;
    const bool in_vec = L->inputs[0] < 0 ? input_vec : vec[L->inputs[0]];
    vec[i] = (L->kind == TPU_FE_DENSE && flat) || L->kind == TPU_FE_FLATTEN || L->kind == TPU_FE_GLOBAL_AVGPOOL ||
             L->kind == TPU_FE_TAKE || (L->kind == TPU_FE_RESHAPE && L->ntarget == 1) ||
             (in_vec && L->kind != TPU_FE_CONV2D && L->kind != TPU_FE_DEPTHWISE && L->kind != TPU_FE_SEPARABLE &&
              L->kind != TPU_FE_RESHAPE && L->kind != TPU_FE_PERMUTE &&
              L->kind != TPU_FE_MAXPOOL && L->kind != TPU_FE_AVGPOOL && L->kind != TPU_FE_ZERO_PADDING);
    L->image = keras_image(m, L, vec[i], input_image);
    switch (L->kind) {
    case TPU_FE_DENSE: {
      tpu_status st = dense_shape(c, m, i, path);
      if (st) return st;
      break;
    }
    case TPU_FE_CONV2D: case TPU_FE_DEPTHWISE: case TPU_FE_SEPARABLE: {
      tpu_status st = conv_shape(c, m, i, in_vec, &max_cols, &max_wx);
      if (st) return st;
      break;
    }
    case TPU_FE_MAXPOOL: case TPU_FE_AVGPOOL:
      if (L->same) {
        same_out(s, L->pool, L->pool, L);
        break;
      }
      if (L->pool > s.h || L->pool > s.w)
        return tpu_json_fail(c, path, "layers[%d] (%s): field 'size': window %dx%d does not fit the input shape %s",
                    i, kn, L->pool, L->pool, tpu_fe_shape_str(s, a, sizeof a));
      L->out = (tpu_fe_shape){ (s.h - L->pool) / L->stride + 1, (s.w - L->pool) / L->stride + 1, s.c };
      break;
    case TPU_FE_FLATTEN:
      L->out = (tpu_fe_shape){ 1, 1, (int)tpu_fe_shape_size(s) };
      break;
    case TPU_FE_GLOBAL_AVGPOOL:
      L->out = (tpu_fe_shape){ 1, 1, s.c };
      break;
    case TPU_FE_MHA: {   /* every position attends to every other (h*w of them) */
      const size_t C = (size_t)s.c, H = (size_t)L->num_heads, d = (size_t)L->key_dim, dv = (size_t)L->value_dim;
      const size_t P = (size_t)s.h * (size_t)s.w;
      if (H * P * P > ((size_t)1 << 30) || H * (d > dv ? d : dv) > ((size_t)1 << 20))
        return tpu_json_fail(c, path, "layers[%d] (multi_head_attention): %zu heads over %zu positions of %s make "
                             "the attention too large (at most 2^30 scores and 2^20 projected values per sample)",
                             i, H, P, tpu_fe_shape_str(s, a, sizeof a));
      L->out = s;
      L->nw = 2 * C * H * d + C * H * dv + H * dv * C;   /* query, key, value, output kernels (Keras') */
      L->nb = L->no_bias ? 0 : 2 * H * d + H * dv + C;
      break;
    }
    case TPU_FE_EMBEDDING: case TPU_FE_POS_EMBEDDING: case TPU_FE_TAKE: case TPU_FE_RESHAPE:
    case TPU_FE_CLASS_TOKEN: case TPU_FE_PERMUTE: {
      tpu_status st = seq_shape(c, m, i);
      if (st) return st;
      break;
    }
    case TPU_FE_ZERO_PADDING:
      if (in_vec)
        return tpu_json_fail(c, path, "layers[%d] (zero_padding): input shape %s is flat; zero_padding needs height x "
                             "width x channels", i, tpu_fe_shape_str(s, a, sizeof a));
      L->out = (tpu_fe_shape){ s.h + L->pad_top + L->pad_bottom, s.w + L->pad_left + L->pad_right, s.c };
      break;
    case TPU_FE_RESCALING: case TPU_FE_NORMALIZATION:
      if (L->nvec > 1 && L->nvec != s.c)
        return tpu_json_fail(c, path, "layers[%d] (%s): field '%s': %d values for the %d channels of the input shape "
                             "%s; give one, or one per channel", i, kn, L->kind == TPU_FE_RESCALING ? "scale" : "mean",
                             L->nvec, s.c, tpu_fe_shape_str(s, a, sizeof a));
      L->out = s;
      break;
    case TPU_FE_ADD: case TPU_FE_CONCAT: case TPU_FE_MULTIPLY: {
      tpu_status st = merge_shape(c, m, i, &L->out);
      if (st) return st;
      break;
    }
    default:
      L->out = s;
      break;
    }
    if (L->act == TPU_FE_SOFTMAX && !fe_softmax_folded(m, i))
      return tpu_json_fail(c, path, "layers[%d] (%s): an \"activation\": \"softmax\" is supported only at the "
                           "model's output (the last layer, or before reshape or flatten layers that end the model), "
                           "where it is folded into softmax_cross_entropy; elsewhere use a softmax layer", i, kn);
    if (tpu_fe_shape_size(L->out) > ((size_t)1 << 26))
      return tpu_json_fail(c, path, "layers[%d] (%s): output shape %s is too large (at most 2^26 values per sample)",
                  i, kn, tpu_fe_shape_str(L->out, b, sizeof b));
    off = layout(m, L, off);
    if (tpu_fe_shape_size(L->out) > max_act) max_act = tpu_fe_shape_size(L->out);
    s = L->out;
  }
  if (m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT) {
    tpu_status st = check_next_token(c, m);
    if (st) return st;
  } else if (!(s.h == 1 && s.w == 1)) {
    return tpu_json_fail(c, "layers", "the last layer's output %s is not flat; softmax_cross_entropy needs a vector "
                "of class scores (end with flatten and dense)", tpu_fe_shape_str(s, a, sizeof a));
  }
  /* a head of one value loads: one sigmoid unit (Keras' binary classifier)
  ** trains with binary cross-entropy (pick_loss); any other one only shows
  ** in tpusim model (a run refuses it: run.c, check_head) */
  if (off > ((size_t)1 << 30))
    return tpu_json_fail(c, "layers", "the model has %zu parameters; at most 2^30 are supported", off);
  m->nparams = off;
  m->max_act = max_act;
  m->max_cols = max_cols;
  m->max_wx = max_wx;
  return TPU_OK;
}

static tpu_status parse_optimizer(tpu_json *c, json_t *jo, tpu_fe_optimizer *o) {
  const char *what = "optimizer: ";
  memset(o, 0, sizeof *o);
  if (!jo) { o->kind = TPU_FE_ADAM; o->lr = 0.001; o->beta1 = 0.9; o->beta2 = 0.999; o->eps = 1e-7; return TPU_OK; }
  if (!json_is_object(jo)) return tpu_json_fail(c, "optimizer", "field 'optimizer': expected an object with a \"type\"");
  tpu_json_obj *ob = OBJ(c, jo, "optimizer", what);
  json_t *jt = json_object_get(jo, "type");
  const char *t = jt && json_is_string(jt) ? json_string_value(jt) : "";
  tpu_status st;
  if (!strcmp(t, "sgd")) {
    static const char *const ks[] = { "type", "learning_rate", NULL };
    o->kind = TPU_FE_SGD;
    if ((st = check_keys(c, jo, "optimizer", what, ks))) return st;
    return get_num(c, jo, "optimizer", what, "learning_rate", 0, 100, false, 0.01, false, &o->lr);
  }
  if (!strcmp(t, "momentum")) {
    static const char *const ks[] = { "type", "learning_rate", "momentum", NULL };
    o->kind = TPU_FE_MOMENTUM;
    if ((st = check_keys(c, jo, "optimizer", what, ks))) return st;
    if ((st = get_num(c, jo, "optimizer", what, "learning_rate", 0, 100, false, 0.01, false, &o->lr))) return st;
    return get_num(c, jo, "optimizer", what, "momentum", 0, 1, true, 0.9, false, &o->momentum);
  }
  if (!strcmp(t, "adam")) {
    static const char *const ks[] = { "type", "learning_rate", "beta1", "beta2", "epsilon", NULL };
    o->kind = TPU_FE_ADAM;
    if ((st = check_keys(c, jo, "optimizer", what, ks))) return st;
    if ((st = get_num(c, jo, "optimizer", what, "learning_rate", 0, 100, false, 0.001, false, &o->lr))) return st;
    if ((st = get_num(c, jo, "optimizer", what, "beta1", 0, 1, true, 0.9, false, &o->beta1))) return st;
    if ((st = get_num(c, jo, "optimizer", what, "beta2", 0, 1, true, 0.999, false, &o->beta2))) return st;
    if ((st = get_num(c, jo, "optimizer", what, "epsilon", 0, 1, false, 1e-7, false, &o->eps))) return st;
    if (!((float)o->eps > 0.0f))
      return tpu_json_fail_member(ob, "epsilon", "expected a number > 0 (and > 1e-45)");
    return TPU_OK;
  }
  return tpu_json_fail_member(ob, "type", "expected \"sgd\", \"momentum\" or \"adam\"");
}

/* The loss: as "loss" names it, else the head's -- binary cross-entropy
** for one sigmoid unit (Keras' binary classifier; its to_json() has no
** loss), softmax cross-entropy otherwise. binary_cross_entropy reads the
** logit under that sigmoid (fe_sigmoid_folded), so it needs one. */
static tpu_status pick_loss(tpu_json_obj *root, const char *name, tpu_fe_model *m) {
  if (m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT) {   /* parse_root's, checked by infer */
    m->out[0].loss = m->loss;
    return TPU_OK;
  }
  const bool bin = fe_binary_head(m);
  m->loss = (name ? !strcmp(name, "binary_cross_entropy") : bin) ? TPU_FE_LOSS_BINARY_XENT : TPU_FE_LOSS_SOFTMAX_XENT;
  m->out[0].loss = m->loss;
  if (m->loss != TPU_FE_LOSS_BINARY_XENT || bin) return TPU_OK;
  const tpu_fe_layer *L = &m->layers[m->nlayers - 1];
  char a[48];
  return tpu_json_fail_member(root, "loss", "binary_cross_entropy takes one sigmoid unit at the output; the last "
                              "layer%s%s%s (%s) gives %s%s; end with a dense of 1 unit and \"activation\": "
                              "\"sigmoid\" (or a sigmoid layer after it)", *L->name ? " '" : "", L->name,
                              *L->name ? "'" : "", tpu_fe_layer_kind_name(L->kind),
                              tpu_fe_shape_str(L->out, a, sizeof a),
                              tpu_fe_shape_size(L->out) == 1 ? " value, not under a sigmoid" : " values");
}

static const char *const LOSS_NAMES[] = { "softmax_cross_entropy", "binary_cross_entropy", "mean_squared_error",
                                          "next_token_softmax_cross_entropy" };
const char *tpu_fe_loss_name(tpu_fe_loss l) {
  return (unsigned)l <= TPU_FE_LOSS_NEXT_TOKEN_XENT ? LOSS_NAMES[l] : "?";
}

/* "outputs" (fe.h, tpu_fe_output): each a layer by name, its loss (by
** default its head's: fe_head_loss) and weight. Without it, one output:
** the last layer, weight 1, its loss from pick_loss. Read once the layers'
** names are; check_outputs checks the heads once shapes are known. */
static tpu_status parse_outputs(tpu_json *c, tpu_json_obj *root, json_t *jo, const char *lname, tpu_fe_model *m) {
  m->nout = 1;
  m->out[0] = (tpu_fe_output){ .layer = m->nlayers - 1, .loss = TPU_FE_LOSS_SOFTMAX_XENT, .weight = 1.0 };
  if (!jo) return TPU_OK;
  if (lname) return tpu_json_fail_member(root, "loss", "with \"outputs\", each output names its loss");
  const size_t n = json_is_array(jo) ? json_array_size(jo) : 0;
  if (n < 1 || n > TPU_FE_MAX_OUTPUTS)
    return tpu_json_fail_member(root, "outputs", "expected an array of 1..%d objects {\"layer\": NAME, \"loss\": "
                                "LOSS, \"weight\": W}", TPU_FE_MAX_OUTPUTS);
  m->nout = (int)n;
  for (int k = 0; k < m->nout; k++) {
    static const char *const ks[] = { "layer", "loss", "weight", NULL };
    char path[32], what[40];
    snprintf(path, sizeof path, "outputs[%d]", k);
    snprintf(what, sizeof what, "outputs[%d]: ", k);
    json_t *e = json_array_get(jo, (size_t)k);
    if (!json_is_object(e)) return tpu_json_fail(c, path, "outputs[%d]: expected an object", k);
    tpu_json_obj *o = OBJ(c, e, path, what);
    const char *nm = NULL, *ls = NULL;
    tpu_fe_output *out = &m->out[k];
    out->weight = 1.0;
    out->layer = -1;
    tpu_status st;
    if ((st = tpu_json_keys(o, ks)) || (st = tpu_json_str(o, "layer", TPU_JSON_REQUIRED, &nm)) ||
        (st = tpu_json_str(o, "loss", 0, &ls)) || (st = tpu_json_num(o, "weight", 0, 1e6, 0, &out->weight)))
      return st;
    for (int i = 0; i < m->nlayers && out->layer < 0; i++) if (!strcmp(m->layers[i].name, nm)) out->layer = i;
    for (int q = 0; q < k && out->layer >= 0; q++)
      if (m->out[q].layer == out->layer) return tpu_json_fail_member(o, "layer", "'%s' is already outputs[%d]", nm, q);
    if (out->layer < 0) return tpu_json_fail_member(o, "layer", "unknown layer '%s': no layer has that \"name\"", nm);
    out->loss = (tpu_fe_loss)-1;   /* the head's (check_outputs) */
    for (int q = 0; ls && q <= TPU_FE_LOSS_MSE; q++) if (!strcmp(ls, LOSS_NAMES[q])) out->loss = (tpu_fe_loss)q;
    if (ls && (int)out->loss < 0)
      return tpu_json_fail_member(o, "loss", "expected \"softmax_cross_entropy\", \"binary_cross_entropy\" or "
                                  "\"mean_squared_error\"");
  }
  return TPU_OK;
}

/* An output whose head's softmax or sigmoid is folded into its loss (the
** loss reads the logits) gives them to no other layer: it would read
** logits for probabilities. A softmax head takes softmax cross-entropy. */
static tpu_status check_folded(tpu_json *c, const tpu_fe_model *m) {
  char a[80], b[80], path[32];
  for (int k = 0; k < m->nout; k++) {
    const int o = m->out[k].layer, h = fe_head_of(m, o);
    const tpu_fe_layer *H = &m->layers[h];
    const bool softmax = H->kind == TPU_FE_SOFTMAX || H->act == TPU_FE_SOFTMAX;
    snprintf(path, sizeof path, "outputs[%d]", k);
    if (softmax && m->out[k].loss != TPU_FE_LOSS_SOFTMAX_XENT)
      return tpu_json_fail(c, path, "outputs[%d]: %s ends in a softmax, which is folded into softmax_cross_entropy; "
                           "%s needs the head without it", k, who(m, h, a, sizeof a), tpu_fe_loss_name(m->out[k].loss));
    if (!softmax && !fe_sigmoid_folded(m, h)) continue;
    for (int j = 0; j < m->nlayers; j++)
      for (int q = 0; q < m->layers[j].nin && !(j > h && j <= o); q++)
        if (m->layers[j].inputs[q] >= h && m->layers[j].inputs[q] <= o)
          return tpu_json_fail(c, path, "outputs[%d]: %s's %s is folded into the loss, so its values are logits; %s "
                               "reads them (give it the layer before the activation, or an activation layer of its "
                               "own)", k, who(m, h, a, sizeof a), softmax ? "softmax" : "sigmoid", who(m, j, b, sizeof b));
  }
  return TPU_OK;
}

/* Each output's head against its loss (its head's by default), once the
** shapes are known. Output 0 takes the data's labels, so its loss is a
** classifier's; an output under mean squared error is one value (its
** target made from the label); a further classifier takes the same labels. */
static tpu_status check_outputs(tpu_json *c, tpu_fe_model *m) {
  char a[80], b[48], path[32];
  for (int k = 0; k < m->nout; k++) {
    tpu_fe_output *o = &m->out[k];
    const tpu_fe_layer *L = &m->layers[o->layer];
    const size_t n = tpu_fe_shape_size(L->out);
    const bool bin = fe_output_binary(m, o->layer);
    if ((int)o->loss < 0) o->loss = fe_head_loss(m, o->layer);
    snprintf(path, sizeof path, "outputs[%d]", k);
    const char *why = NULL;
    if (L->out.h != 1 || L->out.w != 1) why = "an output is a vector (end it with flatten or global_avgpool)";
    else if (o->loss == TPU_FE_LOSS_BINARY_XENT && !bin) why = "binary_cross_entropy takes one sigmoid unit";
    else if (o->loss == TPU_FE_LOSS_SOFTMAX_XENT && n < 2) why = "softmax_cross_entropy takes one score per class (>= 2)";
    else if (o->loss == TPU_FE_LOSS_MSE && n != 1)
      why = "mean_squared_error takes one value (its target is made from the sample's label)";
    else if (k == 0 && o->loss == TPU_FE_LOSS_MSE)
      why = "outputs[0] takes the data's labels: its loss is softmax_cross_entropy or binary_cross_entropy";
    else if (k > 0 && o->loss != TPU_FE_LOSS_MSE && (o->loss == TPU_FE_LOSS_BINARY_XENT ? 2 : (int)n) !=
             (m->out[0].loss == TPU_FE_LOSS_BINARY_XENT ? 2 : m->layers[m->out[0].layer].out.c))
      why = "a further classifier takes the labels of outputs[0]: it needs as many classes";
    if (why)
      return tpu_json_fail(c, path, "outputs[%d]: %s gives %s value%s under %s: %s", k, who(m, o->layer, a, sizeof a),
                           tpu_fe_shape_str(L->out, b, sizeof b), n == 1 ? "" : "s", tpu_fe_loss_name(o->loss), why);
  }
  m->loss = m->out[0].loss;
  return check_folded(c, m);
}

/* The model of document c (parsed, its root an object) into *out. */
static tpu_status parse_root(tpu_json *c, tpu_fe_model *out) {
  tpu_fe_model *m = tpu_calloc(1, sizeof *m);
  tpu_status st;
  if (!m) { snprintf(c->err, c->errcap, "%s: out of memory", c->where); return TPU_ERR_NOMEM; }
  tpu_json_obj *root = OBJ(c, c->root, "", "");
  static const char *const ks[] = { "name", "input", "layers", "loss", "outputs", "optimizer", "seed", NULL };
  const char *name = "model";
  if ((st = tpu_json_keys(root, ks)) || (st = tpu_json_str(root, "name", 0, &name))) goto done;
  snprintf(m->name, sizeof m->name, "%s", name);

  json_t *ji = json_object_get(c->root, "input");
  if (!ji) { st = tpu_json_missing(root, "input", "[height, width, channels], [length, channels] or [size]"); goto done; }
  size_t ni = json_is_array(ji) ? json_array_size(ji) : 0;
  int dims[3] = { 1, 1, 1 };
  bool ok = ni >= 1 && ni <= 3;   /* [L, C]: a sequence, 1 x L x C */
  for (size_t k = 0; ok && k < ni; k++) {
    json_t *d = json_array_get(ji, k);
    ok = json_is_integer(d) && json_integer_value(d) >= 1 && json_integer_value(d) <= 65536;
    if (ok) dims[3 - ni + k] = (int)json_integer_value(d);
  }
  if (!ok) {
    st = tpu_json_fail_member(root, "input", "expected [height, width, channels], [length, channels] or [size], "
                              "integers in 1..65536");
    goto done;
  }
  m->input = (tpu_fe_shape){ dims[0], dims[1], dims[2] };

  json_t *jl = json_object_get(c->root, "layers");
  if (!jl || !json_is_array(jl) || json_array_size(jl) == 0 || json_array_size(jl) > TPU_FE_MAX_LAYERS) {
    st = tpu_json_fail_member(root, "layers", "%s; expected an array of 1..%d layer objects",
                              !jl ? "missing" : json_is_array(jl) && json_array_size(jl) ? "too many layers"
                              : "bad value", TPU_FE_MAX_LAYERS);
    goto done;
  }
  m->nlayers = (int)json_array_size(jl);
  for (int i = 0; i < m->nlayers; i++)
    if ((st = parse_layer(c, json_array_get(jl, (size_t)i), i, &m->layers[i]))) goto done;
  for (int i = 0; i < m->nlayers; i++)
    if ((st = resolve_inputs(c, json_array_get(jl, (size_t)i), m, i)) ||
        (st = resolve_tied(c, json_array_get(jl, (size_t)i), m, i))) goto done;

  json_t *jloss = json_object_get(c->root, "loss");
  const char *lname = json_is_string(jloss) ? json_string_value(jloss) : NULL;
  if (jloss && !(lname && (!strcmp(lname, "softmax_cross_entropy") || !strcmp(lname, "binary_cross_entropy") ||
                           !strcmp(lname, "next_token_softmax_cross_entropy")))) {
    st = tpu_json_fail_member(root, "loss", "expected \"softmax_cross_entropy\", \"binary_cross_entropy\" or "
                              "\"next_token_softmax_cross_entropy\"");
    goto done;
  }
  /* the next-token loss is known before the shapes are: infer checks the
  ** language model's output against it */
  const bool next_token = lname && !strcmp(lname, "next_token_softmax_cross_entropy");
  if (next_token) m->loss = TPU_FE_LOSS_NEXT_TOKEN_XENT;
  if ((st = parse_optimizer(c, json_object_get(c->root, "optimizer"), &m->opt))) goto done;
  json_t *js = json_object_get(c->root, "seed");
  if (js && (!json_is_integer(js) || json_integer_value(js) < 0)) {
    st = tpu_json_fail_member(root, "seed", "expected a non-negative integer");
    goto done;
  }
  m->seed = js ? (uint64_t)json_integer_value(js) : 1;
  json_t *jout = json_object_get(c->root, "outputs");
  if (next_token && jout) {
    st = tpu_json_fail_member(root, "outputs", "a model with \"loss\": \"next_token_softmax_cross_entropy\" "
                              "has one output (its last layer); leave out \"outputs\"");
    goto done;
  }
  if ((st = parse_outputs(c, root, jout, lname, m)) || (st = check_graph_order(c, m)) ||
      (st = infer(c, m, ni == 1, ni == 3)) ||
      (st = check_graph_use(c, m)) || (st = jout ? check_outputs(c, m) : pick_loss(root, lname, m)))
    goto done;
  *out = *m;
done:
  tpu_free(m);
  return st;
}

/* A Keras document: translated (keras.c), then the native loader on the
** translation, its positions and layers mapped back to the Keras file. */
static tpu_status parse_keras(tpu_json *kdoc, const char *input_shape, tpu_fe_model *out, tpu_fe_model_notes *notes) {
  fe_keras *k = NULL;
  tpu_status st = fe_keras_translate(kdoc, input_shape, &k);
  if (st) return st;
  tpu_json ndoc = { .where = kdoc->where, .err = kdoc->err, .errcap = kdoc->errcap, .code = TPU_ERR_CONFIG,
                    .noun = "field", .text = kdoc->text, .root = fe_keras_native(k),
                    .map_path = fe_keras_map_path, .map_ud = k };
  st = parse_root(&ndoc, out);
  if (st == TPU_ERR_CONFIG) fe_keras_explain(k, kdoc->where, kdoc->err, kdoc->errcap);
  if (!st) st = fe_keras_check_inputs(k, out);
  if (!st && notes && (st = fe_keras_notes(k, notes)))
    snprintf(kdoc->err, kdoc->errcap, "%s: out of memory", kdoc->where);
  fe_keras_free(k);
  return st;
}

/* An ONNX file: translated (onnx.c), then the native loader on the
** translation; the initializers become the notes' weights. */
tpu_status tpu_fe_model_parse_onnx(const void *buf, size_t len, const char *where, tpu_fe_model *out,
                                   tpu_fe_model_notes *notes, char *err, size_t errcap) {
  if (notes) memset(notes, 0, sizeof *notes);
  fe_onnx *o = NULL;
  tpu_status st = fe_onnx_translate(buf, len, where, &o, err, errcap);
  if (st) return st;
  tpu_fe_model *m = tpu_malloc(sizeof *m);
  tpu_json ndoc = { .where = where, .err = err, .errcap = errcap, .code = TPU_ERR_CONFIG, .noun = "field",
                    .generated = true, .root = fe_onnx_native(o), .map_path = fe_onnx_map_path, .map_ud = o };
  float *w = NULL;
  if (!m) st = TPU_ERR_NOMEM;
  else if ((st = parse_root(&ndoc, m)) == TPU_ERR_CONFIG) fe_onnx_explain(o, err, errcap);
  if (!st && notes && (st = fe_onnx_weights(o, m, &w)) == TPU_OK)
    snprintf(notes->format, sizeof notes->format, "%s", fe_onnx_format(o));
  if (st == TPU_ERR_NOMEM) snprintf(err, errcap, "%s: out of memory", where);
  if (!st) {
    *out = *m;
    if (notes) notes->weights = w;
  }
  tpu_free(m);
  fe_onnx_free(o);
  return st;
}

void tpu_fe_model_notes_free(tpu_fe_model_notes *n) {
  if (!n) return;
  tpu_free(n->ignored);
  tpu_free(n->weights);
  memset(n, 0, sizeof *n);
}

/* A double-encoded file: json.dump(model.to_json()) writes a JSON string
** holding the model's JSON. *inner gets the string's text (the caller's,
** tpu_free; positions in messages are then in it), or NULL when 'text' is
** not one well-formed JSON string (the parser then says why it is not a
** model) or the string holds a NUL character. The string is unescaped
** here, not by jansson: under an allocation failure jansson's lexer can
** drop a character of a long string and then assert on the escape that
** follows. TPU_ERR_NOMEM or TPU_OK. */
static tpu_status double_encoded(const char *text, char **inner) {
  *inner = NULL;
  const char *p = text + strspn(text, " \t\r\n");
  if (*p++ != '"') return TPU_OK;
  char *o = tpu_malloc(strlen(p) + 1), *q = o;   /* unescaped is never longer */
  if (!o) return TPU_ERR_NOMEM;
  unsigned long hi = 0;   /* a high surrogate waiting for its low half */
  for (; *p && *p != '"'; p++) {
    unsigned long u = (unsigned char)*p;
    if (u < 0x20 || (hi && u != '\\')) goto not_one;
    if (u != '\\') { *q++ = *p; continue; }   /* UTF-8 bytes as they are */
    static const char ESC[] = "\"\"\\\\//b\bf\fn\nr\rt\t";   /* pairs: escape, value */
    const char *e = *++p ? strchr(ESC, *p) : NULL;
    if (*p == 'u') {
      char hex[5] = { 0 };
      for (int k = 0; k < 4; k++)
        if (!isxdigit((unsigned char)(hex[k] = *++p))) goto not_one;
      u = strtoul(hex, NULL, 16);
    } else if (e && (e - ESC) % 2 == 0) {
      u = (unsigned char)e[1];
    } else {
      goto not_one;
    }
    if (u >= 0xD800 && u < 0xDC00) { if (hi) goto not_one; hi = u; continue; }
    if (u >= 0xDC00 && u < 0xE000) {
      if (!hi) goto not_one;
      u = 0x10000 + ((hi - 0xD800) << 10) + (u - 0xDC00);
    } else if (hi || u == 0) {
      goto not_one;
    }
    hi = 0;
    if (u < 0x80) { *q++ = (char)u; continue; }
    if (u < 0x800) {
      *q++ = (char)(0xC0 | (u >> 6));
    } else if (u < 0x10000) {
      *q++ = (char)(0xE0 | (u >> 12));
      *q++ = (char)(0x80 | ((u >> 6) & 0x3F));
    } else {
      *q++ = (char)(0xF0 | (u >> 18));
      *q++ = (char)(0x80 | ((u >> 12) & 0x3F));
      *q++ = (char)(0x80 | ((u >> 6) & 0x3F));
    }
    *q++ = (char)(0x80 | (u & 0x3F));
  }
  if (*p != '"' || hi || p[1 + strspn(p + 1, " \t\r\n")]) goto not_one;
  *q = '\0';
  *inner = o;
  return TPU_OK;
not_one:
  tpu_free(o);
  return TPU_OK;
}

/* tpu_fe_model_parse_notes; 'generated': the text is tpusim's own (a zoo
** model's or a built-in one's), so messages name 'where' (the spec) without
** a line:col of a text the user never saw ("vgg19@8x8x3:5:5" would read as
** a class count). */
static tpu_status parse_text(const char *text, const char *where, bool generated, const char *input_shape,
                             tpu_fe_model *out, tpu_fe_model_notes *notes, char *err, size_t errcap) {
  tpu_json doc = { .where = where, .err = err, .errcap = errcap, .generated = generated }, *c = &doc;
  if (notes) memset(notes, 0, sizeof *notes);
  char *inner = NULL;
  tpu_status st = double_encoded(text, &inner);
  if (st) snprintf(err, errcap, "%s: out of memory", where);
  else st = tpu_json_parse(c, inner ? inner : text, "see docs/MODELS.md");
  if (st == TPU_OK) {
    if (fe_keras_is_keras(doc.root)) st = parse_keras(c, input_shape, out, notes);
    else if (input_shape)
      st = tpu_json_fail(c, "input", "an input shape after '@' (@%s) is for Keras files that leave theirs "
                         "unspecified; a native model gives \"input\"", input_shape);
    else if ((st = parse_root(c, out)) == TPU_OK && notes) snprintf(notes->format, sizeof notes->format, "native");
    if (st == TPU_OK && inner && notes) {
      const size_t n = strlen(notes->format);
      snprintf(notes->format + n, sizeof notes->format - n, ", double-encoded");
    }
  }
  tpu_json_free(&doc);
  tpu_free(inner);
  return st;
}

tpu_status tpu_fe_model_parse_notes(const char *text, const char *where, const char *input_shape,
                                    tpu_fe_model *out, tpu_fe_model_notes *notes, char *err, size_t errcap) {
  return parse_text(text, where, false, input_shape, out, notes, err, errcap);
}

tpu_status tpu_fe_model_parse(const char *text, const char *where, tpu_fe_model *out, char *err, size_t errcap) {
  return tpu_fe_model_parse_notes(text, where, NULL, out, NULL, err, errcap);
}

/* "FILE@HxWxC": the shape part when 'spec' ends in one (digits and 'x'). */
static const char *shape_suffix(const char *spec) {
  const char *at = strrchr(spec, '@');
  if (!at || at == spec || !at[1]) return NULL;
  for (const char *p = at + 1; *p; p++)
    if (!((*p >= '0' && *p <= '9') || *p == 'x')) return NULL;
  return at;
}

static tpu_status load_onnx(const char *path, tpu_fe_model *out, tpu_fe_model_notes *notes, char *err,
                            size_t errcap) {
  size_t n = 0;
  char *buf = tpu_read_file(path, &n);
  if (!buf) {
    const int e = errno;
    snprintf(err, errcap, e == ENOMEM ? "%s: out of memory" : "%s: cannot read: %s", path, strerror(e));
    return e == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO;
  }
  tpu_status st = tpu_fe_model_parse_onnx(buf, n, path, out, notes, err, errcap);
  tpu_free(buf);
  return st;
}

tpu_status tpu_fe_model_load_notes(const char *name_or_file, tpu_fe_model *out, tpu_fe_model_notes *notes,
                                   char *err, size_t errcap) {
  if (notes) memset(notes, 0, sizeof *notes);
  const char *b = tpu_fe_model_builtin_json(name_or_file);
  tpu_status st;
  if (b) {
    if ((st = parse_text(b, name_or_file, true, NULL, out, NULL, err, errcap)) == TPU_OK && notes)
      snprintf(notes->format, sizeof notes->format, "built-in");
    return st;
  }
  char *text = NULL;
  if ((st = tpu_fe_model_zoo_json(name_or_file, &text, err, errcap))) return st;
  if (text) {
    if ((st = parse_text(text, name_or_file, true, NULL, out, NULL, err, errcap)) == TPU_OK && notes)
      snprintf(notes->format, sizeof notes->format, "zoo");
    tpu_free(text);
    return st;
  }
  const size_t nl = strlen(name_or_file);
  if (nl > 5 && !strcmp(name_or_file + nl - 5, ".onnx")) return load_onnx(name_or_file, out, notes, err, errcap);
  const char *shape = NULL;
  char *file = NULL;
  char rerr[512];
  st = tpu_json_read_file(name_or_file, &text, rerr, sizeof rerr);   /* refuses a NUL byte */
  if (st == TPU_ERR_IO) {
    const int e = errno;
    const char *at = e == ENOENT ? shape_suffix(name_or_file) : NULL;
    if (at && (file = tpu_malloc((size_t)(at - name_or_file) + 1))) {
      memcpy(file, name_or_file, (size_t)(at - name_or_file));
      file[at - name_or_file] = '\0';
      shape = at + 1;
      st = tpu_json_read_file(file, &text, rerr, sizeof rerr);
    }
    if (st == TPU_ERR_IO) {
      const int why = file ? errno : e;
      char names[256] = "";   /* the built-in and zoo names, from their tables */
      const char *all[64];
      size_t n = 0;
      int na = 0;
      for (int t = 0; t < 2; t++)
        for (const char *const *q = t ? tpu_fe_model_zoo_names() : tpu_fe_model_builtin_names(); *q; q++) {
          if (n < sizeof names) n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", *q);
          if (na < 64) all[na++] = *q;
        }
      const char *given = file ? file : name_or_file;
      char base[64];   /* a zoo spec's name: what comes before '@' or ':' */
      snprintf(base, sizeof base, "%.*s", (int)strcspn(given, "@:"), given);
      const char *near = strchr(given, '/') || strstr(given, ".json") ? NULL : tpu_nearest(base, all, na);
      snprintf(err, errcap, "%s: not a built-in model (%s%s%s%s) and cannot be read: %s", given, near ? "did you mean " : "",
               near ? near : "", near ? "? the models are " : "", names, strerror(why));
      tpu_free(file);
      return TPU_ERR_IO;
    }
  }
  if (st) {   /* a NUL byte (TPU_ERR_INPUT, the message says where) or out of memory */
    snprintf(err, errcap, "%s", rerr);
    tpu_free(file);
    return st;
  }
  st = tpu_fe_model_parse_notes(text, file ? file : name_or_file, shape, out, notes, err, errcap);
  tpu_free(text);
  tpu_free(file);
  return st;
}

tpu_status tpu_fe_model_load(const char *name_or_file, tpu_fe_model *out, char *err, size_t errcap) {
  return tpu_fe_model_load_notes(name_or_file, out, NULL, err, errcap);
}
