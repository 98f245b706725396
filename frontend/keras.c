/*
** keras.c -- Keras import: the JSON Keras writes with model.to_json() --
** tf.keras 2.x and Keras 3, Sequential and Functional, with models nested
** in models -- translated into the native model JSON object (docs/MODELS.md),
** which model.c then checks and shapes like any native file, so there is
** one model checker. docs/MODELS.md, "Keras import", is the user's account
** of what maps to what, what is ignored and what is refused.
**
** The two formats. tf.keras 2 (and Keras 2.0-2.3): a model is
** {"class_name": "Sequential" | "Functional" | "Model", "config": ...,
** "keras_version", "backend"}; a Sequential's config is its layer list (2.0)
** or {"name", "layers": [...]}, the first layer an InputLayer with
** "batch_input_shape" or carrying that key itself; a Functional's layers
** each have "name" and "inbound_nodes", a list of calls, each a list of
** [layer, node index, tensor index, kwargs]; "input_layers" and
** "output_layers" list [layer, node, tensor]. Keras 3
** (keras/src/models/functional.py, saving/serialization_lib.py): the same
** objects with "module" and "registered_name", InputLayer's "batch_shape",
** dtype policies as objects, and each call {"args": [...], "kwargs": {...}}
** whose tensors are {"class_name": "__keras_tensor__", "config":
** {"keras_history": [layer, node, tensor]}}; a Sequential lists its
** InputLayer; the compiled model's "compile_config" holds the optimizer
** and the loss.
**
** How. Every Keras layer becomes a node of one graph (a nested model's
** layers included: its InputLayers stand for the tensors the outer model
** feeds it, its own node for its output); the graph is walked from the
** model's output (a layer not on the way is an unused branch, a layer never
** reached a cycle), in an order where each layer comes after its inputs;
** each layer is translated into zero (InputLayer, a linear Activation), one
** or two (an activation the native field lacks: relu6, gelu, swish,
** leaky_relu) native layers, its Keras name kept, every input named. Ranks
** (2: a vector, 3: a sequence, 4: an image) are followed so that axes can be
** checked (a Dense applies to the last at every position);
** shapes are the native loader's. Every option of a layer's config is
** either translated, checked to be at a value that changes nothing, refused
** when it changes the math, or listed as ignored (grouped, once each).
*/
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "frontend/fe_int.h"

/* Paths and messages are built into fixed buffers; one too long for them is
** cut short, which is harmless. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define KPATH 192              /* a layer's path in the file */
#define KNAME 32               /* native names: tpu_fe_layer.name */
#define KMAX_DEPTH 8           /* models nested in models */
/* Keras layers read at most (nested models' included), decided by the class
** check before any other work: the native model holds TPU_FE_MAX_LAYERS,
** and a Keras layer may become none (InputLayer, a linear Activation), so
** the bound leaves room for those. */
#define KMAX_LAYERS (4 * TPU_FE_MAX_LAYERS)

enum { K_LAYER, K_INPUT, K_MODEL };

typedef struct knode {
  const char *name, *cls;      /* Keras name and class */
  json_t *obj, *cfg;           /* the layer object and its config */
  char path[KPATH];            /* of obj in the file */
  int kind;                    /* K_LAYER; K_INPUT: an InputLayer; K_MODEL: a nested model */
  int nin, in[TPU_FE_MAX_INPUTS];  /* inputs: nodes, or -1 for the model input; K_MODEL: its output node */
  int rank;                    /* of its output, batch included: 2 (vector), 3, 4 (image) */
  char nat[KNAME];             /* name of its (first) native layer */
  char out[KNAME];             /* name of its output in the native model ("input": the model input) */
  bool causal;                 /* MultiHeadAttention called with use_causal_mask true */
  bool reached, done;
} knode;

/* A name in the hash table: Keras layer 'idx' of the model whose layers
** start at node 'scope', or (scope -1) native name K->names[idx]. The name
** is read through the index, as both arrays move when they grow. */
typedef struct kslot { int scope, idx; } kslot;

typedef struct knote {         /* an option not modelled, grouped by option and value */
  char what[160];
  char why[120];
  char names[96];
  int count;
} knote;

struct fe_keras {
  tpu_json *doc;               /* the Keras document: where, text, err */
  knode *n;
  int nn, ncap;
  json_t *native, *layers;     /* the translation and its "layers" */
  int *src;                    /* per native layer: its Keras node */
  int nsrc, srccap;
  char (*names)[KNAME];        /* native names given out */
  int nnames, namecap;
  int nlisted;                 /* layers the class check has seen, up to KMAX_LAYERS */
  kslot *tab;                  /* names -> nodes or native names, hashed (tabcap a power of 2) */
  size_t tabn, tabcap;
  knote *notes;
  int nnotes, notecap;
  bool oom;
  /* the model input */
  bool have_input;
  int in_rank, in_dims[3];
  char in_path[KPATH];
  const char *shape_arg;
  char layers_path[KPATH];     /* the top model's layer list */
  char opt_path[KPATH];        /* compile_config's optimizer, when translated */
  char format[64];
  int fail_layer;              /* the native layer of the kept error, -1 none */
  struct { const char *cls, *name; char path[KPATH + 16]; } bad[16];  /* unsupported classes, each with */
  int nbad;                    /* its first layer, in file order (check_classes; at most 16 listed) */
  int nouts, outs[TPU_FE_MAX_OUTPUTS];   /* the top model's outputs (nodes) */
};

static const char *const CLASSES[] = {
  "Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Dense", "BatchNormalization", "Activation", "ReLU",
  "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "ZeroPadding2D", "Flatten", "Dropout", "Add",
  "Concatenate", "InputLayer", "Softmax", "LayerNormalization", "Multiply", "LeakyReLU", "GlobalAveragePooling1D",
  "MultiHeadAttention", "Reshape", "Permute", "Rescaling", "Normalization", NULL
};
#define CLASS_LIST "Conv2D, DepthwiseConv2D, SeparableConv2D, Dense, BatchNormalization, Activation, ReLU, " \
  "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, ZeroPadding2D, Flatten, Dropout, Add, Concatenate, " \
  "InputLayer, Softmax, LayerNormalization, Multiply, LeakyReLU, GlobalAveragePooling1D, MultiHeadAttention, " \
  "Reshape, Permute, Rescaling, Normalization " \
  "(and Sequential and " \
  "Functional models nested in the model)"

static bool is_model_class(const char *c) {
  return !strcmp(c, "Sequential") || !strcmp(c, "Functional") || !strcmp(c, "Model");
}
static const char *str_or(json_t *v, const char *dflt) { return json_is_string(v) ? json_string_value(v) : dflt; }

/* {==================================================================
** Errors, notes, names
** ================================================================== */
/* "layer 'NAME' (CLASS): [field 'KEY': ]MSG" at the key (or the layer). */
static tpu_status kfail(fe_keras *K, int node, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tpu_status kfail(fe_keras *K, int node, const char *key, const char *fmt, ...) {
  char msg[768], path[KPATH + 64], field[96] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (node < 0) return tpu_json_fail(K->doc, "", "%s", msg);
  const knode *n = &K->n[node];
  if (key && json_object_get(n->cfg, key)) {
    snprintf(path, sizeof path, "%s.config.%s", n->path, key);
    snprintf(field, sizeof field, "field '%s': ", key);
  } else if (key && json_object_get(n->obj, key)) {
    snprintf(path, sizeof path, "%s.%s", n->path, key);
  } else {
    snprintf(path, sizeof path, "%s", n->path);
    if (key) snprintf(field, sizeof field, "field '%s': ", key);
  }
  return tpu_json_fail(K->doc, path, "layer '%s' (%s): %s%s", n->name, n->cls, field, msg);
}

static tpu_status oom(fe_keras *K) {
  K->oom = true;
  if (!K->doc->failed) {
    snprintf(K->doc->err, K->doc->errcap, "%s: out of memory", K->doc->where);
    K->doc->failed = true;
  }
  return TPU_ERR_NOMEM;
}

static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
  const size_t n = strlen(buf);
  if (n + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, cap - n, fmt, ap);
  va_end(ap);
}

/* A short text of a JSON value for the notes: "L2(l2=0.0005)",
** "VarianceScaling(scale=2, mode=fan_in)", "[null, 1, 1, 1]", "mixed_float16". */
static void describe_into(json_t *v, char *buf, size_t cap, int depth) {
  if (!v) { append(buf, cap, "(missing)"); return; }
  if (depth > 3) { append(buf, cap, "..."); return; }
  switch (json_typeof(v)) {
  case JSON_STRING: append(buf, cap, "%s", json_string_value(v)); break;
  case JSON_INTEGER: append(buf, cap, "%lld", (long long)json_integer_value(v)); break;
  case JSON_REAL: append(buf, cap, "%g", json_real_value(v)); break;
  case JSON_TRUE: append(buf, cap, "true"); break;
  case JSON_FALSE: append(buf, cap, "false"); break;
  case JSON_NULL: append(buf, cap, "null"); break;
  case JSON_ARRAY: {
    append(buf, cap, "[");
    for (size_t i = 0; i < json_array_size(v); i++) {
      if (i) append(buf, cap, ", ");
      describe_into(json_array_get(v, i), buf, cap, depth + 1);
    }
    append(buf, cap, "]");
    break;
  }
  case JSON_OBJECT: {
    json_t *cn = json_object_get(v, "class_name"), *cf = json_object_get(v, "config");
    if (json_is_string(cn)) {
      /* a serialized Keras object: Class(key=value, ...), nulls and dtypes left out */
      append(buf, cap, "%s", json_string_value(cn));
      if (json_is_string(cf)) { append(buf, cap, "(%s)", json_string_value(cf)); break; }
      v = json_is_object(cf) ? cf : NULL;
    }
    if (!v) break;
    const char *k;
    json_t *e;
    bool first = true;
    append(buf, cap, json_is_string(cn) ? "(" : "{");
    json_object_foreach(v, k, e) {
      if (json_is_null(e) || !strcmp(k, "dtype")) continue;
      append(buf, cap, "%s%s=", first ? "" : ", ", k);
      describe_into(e, buf, cap, depth + 1);
      first = false;
    }
    append(buf, cap, json_is_string(cn) ? ")" : "}");
    break;
  }
  }
}
static void describe(json_t *v, char *buf, size_t cap) {
  buf[0] = '\0';
  describe_into(v, buf, cap, 0);
  if (strlen(buf) + 1 >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
}

/* Notes an option not modelled: 'what' (option and value) on layer 'node'
** (-1: the model), with 'why' (what tpusim does instead). */
static void note(fe_keras *K, int node, const char *what, const char *why) {
  knote *t = NULL;
  for (int i = 0; i < K->nnotes && !t; i++)
    if (!strcmp(K->notes[i].what, what) && !strcmp(K->notes[i].why, why)) t = &K->notes[i];
  if (!t) {
    if (K->nnotes == K->notecap) {
      const int cap = K->notecap ? 2 * K->notecap : 16;
      knote *p = tpu_realloc(K->notes, (size_t)cap * sizeof *p);
      if (!p) { oom(K); return; }
      K->notes = p;
      K->notecap = cap;
    }
    t = &K->notes[K->nnotes++];
    memset(t, 0, sizeof *t);
    snprintf(t->what, sizeof t->what, "%s", what);
    snprintf(t->why, sizeof t->why, "%s", why);
  }
  t->count++;
  if (node < 0) return;
  if (t->count <= 3) append(t->names, sizeof t->names, "%s%s", t->count > 1 ? ", " : "", K->n[node].name);
  else if (t->count == 4) append(t->names, sizeof t->names, ", ...");
}
/* note() with "KEY VALUE" as 'what'. */
static void note_kv(fe_keras *K, int node, const char *key, json_t *v, const char *why) {
  char d[128], what[160];
  describe(v, d, sizeof d);
  snprintf(what, sizeof what, "%s %s", key, d);
  note(K, node, what, why);
}

/* {==================================================================
** Names, hashed: a model's layers by name, and the native names given
** out, so that resolving every input and naming every layer is linear in
** the layers (a chain of 100k layers took minutes with a scan per name).
** ================================================================== */
static const char *slot_name(const fe_keras *K, kslot s) { return s.scope < 0 ? K->names[s.idx] : K->n[s.idx].name; }
static size_t name_hash(int scope, const char *s) {
  uint32_t h = 2166136261u ^ (uint32_t)scope;       /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}
/* The index under (scope, name), or -1. */
static int tab_find(const fe_keras *K, int scope, const char *name) {
  for (size_t i = name_hash(scope, name); K->tabcap; i++) {
    const kslot e = K->tab[i & (K->tabcap - 1)];
    if (e.idx < 0) break;
    if (e.scope == scope && !strcmp(slot_name(K, e), name)) return e.idx;
  }
  return -1;
}
/* Adds (scope, idx), whose name is not in the table yet. */
static tpu_status tab_put(fe_keras *K, int scope, int idx) {
  if (2 * (K->tabn + 1) > K->tabcap) {         /* at most half full */
    const size_t cap = K->tabcap ? 2 * K->tabcap : 256;
    kslot *t = tpu_realloc(NULL, cap * sizeof *t), *old = K->tab;
    if (!t) return oom(K);
    for (size_t i = 0; i < cap; i++) t[i].idx = -1;
    const size_t oldcap = K->tabcap;
    K->tab = t;
    K->tabcap = cap;
    K->tabn = 0;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i].idx >= 0) tab_put(K, old[i].scope, old[i].idx);   /* cannot grow again */
    tpu_free(old);
  }
  size_t i = name_hash(scope, scope < 0 ? K->names[idx] : K->n[idx].name);
  while (K->tab[i & (K->tabcap - 1)].idx >= 0) i++;
  K->tab[i & (K->tabcap - 1)] = (kslot){ scope, idx };
  K->tabn++;
  return TPU_OK;
}
/* }================================================================== */

static bool name_used(const fe_keras *K, const char *s) {
  return !strcmp(s, "input") || tab_find(K, -1, s) >= 0;
}
/* A native name for 'want': itself when it fits and is free, else a cut
** and numbered one ("a_very_long_keras_layer_nam~2"). */
static tpu_status give_name(fe_keras *K, const char *want, char out[KNAME]) {
  if (strlen(want) < KNAME && *want && !name_used(K, want)) snprintf(out, KNAME, "%s", want);
  else
    for (int k = 1;; k++) {
      char suf[16];
      const int sl = snprintf(suf, sizeof suf, "~%d", k);
      snprintf(out, KNAME, "%.*s%s", KNAME - 1 - sl, *want ? want : "layer", suf);
      if (!name_used(K, out)) break;
    }
  if (K->nnames == K->namecap) {
    const int cap = K->namecap ? 2 * K->namecap : 64;
    char (*p)[KNAME] = tpu_realloc(K->names, (size_t)cap * sizeof *p);
    if (!p) return oom(K);
    K->names = p;
    K->namecap = cap;
  }
  snprintf(K->names[K->nnames], KNAME, "%s", out);
  return tab_put(K, -1, K->nnames++);
}
/* }================================================================== */

/* {==================================================================
** Reading option values
** ================================================================== */
/* An integer, or an [a, b] pair of integers (a = b for a single one),
** read as 64-bit values into p[2]; false for anything else. */
static bool int_pair64(json_t *v, int64_t p[2]) {
  if (json_is_integer(v)) { p[0] = p[1] = json_integer_value(v); return true; }
  const size_t n = json_is_array(v) ? json_array_size(v) : 0;
  if (n != 1 && n != 2) return false;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_integer(e)) return false;
    p[i] = json_integer_value(e);
  }
  if (n == 1) p[1] = p[0];
  return true;
}

/* Option 'key' (value v; NULL: absent, an error) as an integer or an [a, b]
** pair, each in lo..hi, into *a, *b: TPU_OK, or the failure with the range
** and the value given (a value past 2^32 is that value, not what it wraps to). */
static tpu_status take_pair(fe_keras *K, int node, const char *key, json_t *v, const char *form, long lo, long hi,
                            int *a, int *b) {
  int64_t p[2];
  if (!v) return kfail(K, node, key, "missing");
  if (!int_pair64(v, p)) return kfail(K, node, key, "expected %s, integers in %ld..%ld", form, lo, hi);
  for (int i = 0; i < 2; i++)
    if (p[i] < lo || p[i] > hi) return kfail(K, node, key, "expected %s, integers in %ld..%ld, got %lld", form, lo, hi,
                                             (long long)p[i]);
  *a = (int)p[0];
  *b = (int)p[1];
  return TPU_OK;
}

/* An initializer at Keras' default for its key: GlorotUniform for the
** weights (VarianceScaling(1, fan_avg, uniform) is the same), Zeros for
** biases, beta and the moving mean, Ones for gamma and the moving
** variance; a seed makes it a different one (tpusim seeds its own). */
static bool init_is_default(const char *key, json_t *v) {
  const char *want = !strcmp(key, "gamma_initializer") || !strcmp(key, "moving_variance_initializer") ? "Ones"
                     : !strcmp(key, "bias_initializer") || !strcmp(key, "beta_initializer") ||
                       !strcmp(key, "moving_mean_initializer") ? "Zeros" : "GlorotUniform";
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    return !strcmp(want, "Ones") ? !strcmp(s, "ones") || !strcmp(s, "Ones")
           : !strcmp(want, "Zeros") ? !strcmp(s, "zeros") || !strcmp(s, "Zeros")
           : !strcmp(s, "glorot_uniform") || !strcmp(s, "GlorotUniform");
  }
  if (!json_is_object(v)) return false;
  const char *cn = str_or(json_object_get(v, "class_name"), "");
  json_t *cf = json_object_get(v, "config");
  json_t *seed = json_object_get(cf, "seed");
  if (seed && !json_is_null(seed)) return false;
  if (!strcmp(cn, want)) return true;
  if (!strcmp(want, "GlorotUniform") && !strcmp(cn, "VarianceScaling")) {
    json_t *sc = json_object_get(cf, "scale");
    return json_is_number(sc) && json_number_value(sc) == 1.0 &&
           !strcmp(str_or(json_object_get(cf, "mode"), ""), "fan_avg") &&
           !strcmp(str_or(json_object_get(cf, "distribution"), ""), "uniform");
  }
  return false;
}
/* A regularizer that adds nothing: null, or L1/L2/L1L2 with zero factors. */
static bool reg_is_none(json_t *v) {
  if (!v || json_is_null(v)) return true;
  if (!json_is_object(v)) return false;
  const char *cn = str_or(json_object_get(v, "class_name"), "");
  if (strcmp(cn, "L1L2") && strcmp(cn, "L1") && strcmp(cn, "L2")) return false;
  const char *k;
  json_t *e, *cf = json_object_get(v, "config");
  json_object_foreach(cf, k, e)
    if (strcmp(k, "dtype") && !(json_is_number(e) && json_number_value(e) == 0.0)) return false;
  return true;
}
/* A dtype policy of f32 values: "float32", null, or a policy named float32. */
static bool dtype_is_f32(json_t *v) {
  if (!v || json_is_null(v)) return true;
  if (json_is_string(v)) return !strcmp(json_string_value(v), "float32");
  return json_is_object(v) && !strcmp(str_or(json_object_get(json_object_get(v, "config"), "name"), ""), "float32");
}
/* }================================================================== */

/* {==================================================================
** Translating one layer
** ================================================================== */
typedef struct lctx {
  fe_keras *K;
  int node;
  json_t *cfg;
  const char *taken[48];       /* config keys dealt with */
  int ntaken;
  char last[KNAME];            /* the native layer emitted last */
  int emitted;
} lctx;

static json_t *take(lctx *x, const char *key) {
  if (x->ntaken < (int)(sizeof x->taken / sizeof x->taken[0])) x->taken[x->ntaken++] = key;
  return json_object_get(x->cfg, key);
}
static bool was_taken(const lctx *x, const char *key) {
  for (int i = 0; i < x->ntaken; i++) if (!strcmp(x->taken[i], key)) return true;
  return false;
}
static knode *N(lctx *x) { return &x->K->n[x->node]; }

static void put(fe_keras *K, json_t *o, const char *key, json_t *v) {
  if (!v || json_object_set_new(o, key, v)) K->oom = true;
}

/* A native layer of 'type' for this node, appended to the translation: the
** first takes the node's inputs and its name, a later one the layer before
** it and a name of its own ("conv1_relu6"). NULL when out of memory. */
static json_t *emit(lctx *x, const char *type, const char *suffix) {
  fe_keras *K = x->K;
  knode *n = N(x);
  json_t *L = json_object();
  if (!L) { oom(K); return NULL; }
  put(K, L, "type", json_string(type));
  char nm[KNAME];
  if (x->emitted == 0) snprintf(nm, sizeof nm, "%s", n->nat);
  else {
    char want[2 * KNAME];
    snprintf(want, sizeof want, "%s_%s", n->nat, suffix);
    if (give_name(K, want, nm)) { json_decref(L); return NULL; }
  }
  put(K, L, "name", json_string(nm));
  json_t *ins = json_array();
  if (!ins) K->oom = true;
  for (int k = 0; ins && k < (x->emitted ? 1 : n->nin); k++) {
    const char *s = x->emitted ? x->last : n->in[k] < 0 ? "input" : K->n[n->in[k]].out;
    if (json_array_append_new(ins, json_string(s))) K->oom = true;
  }
  put(K, L, "inputs", ins);
  if (K->nsrc == K->srccap) {
    const int cap = K->srccap ? 2 * K->srccap : 64;
    int *p = tpu_realloc(K->src, (size_t)cap * sizeof *p);
    if (!p) { json_decref(L); oom(K); return NULL; }
    K->src = p;
    K->srccap = cap;
  }
  if (json_array_append_new(K->layers, L)) { oom(K); return NULL; }
  K->src[K->nsrc++] = x->node;
  snprintf(x->last, sizeof x->last, "%s", nm);
  x->emitted++;
  if (K->oom) { oom(K); return NULL; }
  return L;
}

static int in_rank(lctx *x, int k) {
  const int j = N(x)->in[k];
  return j < 0 ? x->K->in_rank : x->K->n[j].rank;
}
static tpu_status need_rank(lctx *x, int want, const char *hint) {
  const int rk = in_rank(x, 0);
  if (rk == want) return TPU_OK;
  return kfail(x->K, x->node, NULL, "its input is %d-D (batch included); %s needs a %d-D one (an image)%s", rk,
               N(x)->cls, want, hint);
}
/* An axis option that must be the last (channel) axis: -1, rank-1, or a
** one-element list of either. */
static tpu_status last_axis(lctx *x, const char *key, int rank) {
  json_t *v = take(x, key);
  if (!v) return TPU_OK;   /* Keras' default, -1 */
  json_t *a = json_is_array(v) && json_array_size(v) == 1 ? json_array_get(v, 0) : v;
  if (json_is_integer(a) && (json_integer_value(a) == -1 || json_integer_value(a) == rank - 1)) return TPU_OK;
  char d[64];
  describe(v, d, sizeof d);
  return kfail(x->K, x->node, key, "%s is not the last axis of its %d-D input; only the channel axis (-1 or %d) "
               "is supported, as tpusim stores channels last", d, rank, rank - 1);
}

/* "activation": the native field's value (NULL: linear), or a native layer
** after the layer ('post'): relu6 (a relu with max_value 6), gelu (Keras'
** gelu: approximate=False), swish (silu too), leaky_relu (Keras'
** activations.leaky_relu: negative_slope 0.2). */
static tpu_status take_act(lctx *x, const char **act, const char **post) {
  json_t *v = take(x, "activation");
  *act = NULL;
  *post = NULL;
  if (json_is_object(v) && json_is_string(json_object_get(v, "config")))   /* {"class_name": "function", "config": "relu"} */
    v = json_object_get(v, "config");
  if (!v || json_is_null(v)) return TPU_OK;
  const char *a = json_is_string(v) ? json_string_value(v) : NULL;
  if (a && !strcmp(a, "linear")) return TPU_OK;
  if (a && (!strcmp(a, "relu") || !strcmp(a, "tanh") || !strcmp(a, "sigmoid") || !strcmp(a, "softmax"))) {
    *act = a;
    return TPU_OK;
  }
  static const char *const POST[][2] = { { "relu6", "relu6" }, { "gelu", "gelu" }, { "swish", "swish" },
                                         { "silu", "swish" }, { "leaky_relu", "leaky_relu" } };
  for (size_t k = 0; a && k < sizeof POST / sizeof POST[0]; k++)
    if (!strcmp(a, POST[k][0])) { *post = POST[k][1]; return TPU_OK; }
  char d[96];
  describe(v, d, sizeof d);
  return kfail(x->K, x->node, "activation", "activation '%s' is not supported; the importer takes linear, relu, "
               "relu6, tanh, sigmoid, softmax, gelu, swish, silu and leaky_relu", d);
}
/* The native layer of a 'post' activation, with its option; after the
** layer ('suffix' names it) or for an Activation layer itself (NULL). */
static json_t *emit_post(lctx *x, const char *post, const char *suffix) {
  const bool r6 = !strcmp(post, "relu6");
  json_t *R = emit(x, r6 ? "relu" : post, suffix);
  if (R && r6) put(x->K, R, "max_value", json_real(6.0));
  if (R && !strcmp(post, "leaky_relu")) put(x->K, R, "negative_slope", json_real(0.2));
  return R;
}
static tpu_status put_act(lctx *x, json_t *L, const char *act, const char *post) {
  if (act) put(x->K, L, "activation", json_string(act));
  if (post && !emit_post(x, post, post)) return TPU_ERR_NOMEM;
  return x->K->oom ? oom(x->K) : TPU_OK;
}

static tpu_status take_use_bias(lctx *x, json_t *L) {
  json_t *v = take(x, "use_bias");
  if (!v) return TPU_OK;
  if (!json_is_boolean(v)) return kfail(x->K, x->node, "use_bias", "expected true or false");
  put(x->K, L, "use_bias", json_boolean(json_is_true(v)));
  return TPU_OK;
}

/* "padding": "valid" or "same". */
static tpu_status take_padding(lctx *x, json_t *L) {
  json_t *v = take(x, "padding");
  const char *p = json_is_string(v) ? json_string_value(v) : v ? "" : "valid";
  if (strcmp(p, "valid") && strcmp(p, "same"))
    return kfail(x->K, x->node, "padding", "expected \"valid\" or \"same\"%s", !strcmp(p, "causal") ?
                 " (\"causal\" is Conv1D's)" : "");
  put(x->K, L, "padding", json_string(p));
  return TPU_OK;
}
/* "strides": equal along height and width (the native layers have one). */
static tpu_status take_strides(lctx *x, json_t *L, int dflt) {
  json_t *v = take(x, "strides");
  int a = dflt, b = dflt;
  tpu_status st;
  if (v && !json_is_null(v) && (st = take_pair(x->K, x->node, "strides", v, "an integer or [sh, sw]", 1, 64, &a, &b)))
    return st;
  if (a != b)
    return kfail(x->K, x->node, "strides", "[%d, %d]: unequal strides are not supported (one stride for height "
                 "and width)", a, b);
  if (L && v && !json_is_null(v)) put(x->K, L, "stride", json_integer(a));
  return TPU_OK;
}

static tpu_status x_conv(lctx *x) {
  fe_keras *K = x->K;
  const char *cls = N(x)->cls;
  const bool dw = !strcmp(cls, "DepthwiseConv2D"), sep = !strcmp(cls, "SeparableConv2D");
  tpu_status st = need_rank(x, 4, "; Conv1D and Conv3D inputs are not supported");
  if (st) return st;
  json_t *v;
  int kh, kw;
  int64_t dr[2];
  if ((st = take_pair(K, x->node, "kernel_size", take(x, "kernel_size"), "an integer or [kh, kw]", 1, 64, &kh, &kw)))
    return st;
  if ((v = take(x, "dilation_rate")) && (!int_pair64(v, dr) || dr[0] != 1 || dr[1] != 1)) {
    char d[48];
    describe(v, d, sizeof d);
    return kfail(K, x->node, "dilation_rate", "%s: dilated convolutions are not supported (only 1)", d);
  }
  json_t *groups = take(x, "groups");   /* Conv2D's (TF >= 2.3): checked against the channels by the model */
  if (groups && !(json_is_integer(groups) && json_integer_value(groups) >= 1 && json_integer_value(groups) <= 65536))
    return kfail(K, x->node, "groups", "expected an integer in 1..65536");
  if (groups && (dw || sep) && json_integer_value(groups) != 1)
    return kfail(K, x->node, "groups", "%s takes groups 1 only", cls);
  const char *act, *post;
  if ((st = take_act(x, &act, &post))) return st;
  json_t *L = emit(x, dw ? "depthwise_conv2d" : sep ? "separable_conv2d" : "conv2d", NULL);
  if (!L) return TPU_ERR_NOMEM;
  if (!dw) {
    v = take(x, "filters");
    if (!json_is_integer(v)) return kfail(K, x->node, "filters", v ? "expected an integer" : "missing");
    put(K, L, "filters", json_integer(json_integer_value(v)));
  }
  json_t *kk = kh == kw ? json_integer(kh) : json_array();   /* "kernel": k, or [kh, kw] */
  if (kk && kh != kw && (json_array_append_new(kk, json_integer(kh)) || json_array_append_new(kk, json_integer(kw))))
    K->oom = true;
  put(K, L, "kernel", kk);
  if ((st = take_strides(x, L, 1)) || (st = take_padding(x, L))) return st;
  if (!dw && !sep && groups && json_integer_value(groups) > 1) put(K, L, "groups", json_integer(json_integer_value(groups)));
  if (dw || sep) {
    v = take(x, "depth_multiplier");
    if (v && !json_is_integer(v)) return kfail(K, x->node, "depth_multiplier", "expected an integer");
    if (v) put(K, L, "depth_multiplier", json_integer(json_integer_value(v)));
  }
  if ((st = take_use_bias(x, L))) return st;
  if ((v = take(x, "lora_rank")) && !json_is_null(v)) note_kv(K, x->node, "lora_rank", v, "LoRA is not modelled: the whole kernel is trained");
  take(x, "lora_alpha");
  return put_act(x, L, act, post);
}

/* Dense: along the last axis, at every position of a sequence or an image. */
static tpu_status x_dense(lctx *x) {
  fe_keras *K = x->K;
  const char *act, *post;
  tpu_status st = take_act(x, &act, &post);
  if (st) return st;
  json_t *L = emit(x, "dense", NULL), *v;
  if (!L) return TPU_ERR_NOMEM;
  v = take(x, "units");
  if (!json_is_integer(v)) return kfail(K, x->node, "units", v ? "expected an integer" : "missing");
  put(K, L, "units", json_integer(json_integer_value(v)));
  if ((st = take_use_bias(x, L))) return st;
  if ((v = take(x, "lora_rank")) && !json_is_null(v)) note_kv(K, x->node, "lora_rank", v, "LoRA is not modelled: the whole kernel is trained");
  take(x, "lora_alpha");
  if ((v = take(x, "quantization_config")) && !json_is_null(v))
    note_kv(K, x->node, "quantization_config", v, "values are f32 (reference) or bf16 on the MXU (sim)");
  return put_act(x, L, act, post);
}

/* The normalizations' numbers ("momentum" for batch normalization,
** "epsilon") and switches ("center", "scale"), copied to native layer L. */
static tpu_status take_norm_options(lctx *x, json_t *L, bool momentum) {
  fe_keras *K = x->K;
  json_t *v;
  static const char *const nums[] = { "epsilon", "momentum" }, *const bools[] = { "center", "scale" };
  for (int k = 0; k < (momentum ? 2 : 1); k++) {
    if (!(v = take(x, nums[k]))) continue;
    if (!json_is_number(v)) return kfail(K, x->node, nums[k], "expected a number");
    put(K, L, nums[k], json_real(json_number_value(v)));
  }
  for (int k = 0; k < 2; k++) {
    if (!(v = take(x, bools[k]))) continue;
    if (!json_is_boolean(v)) return kfail(K, x->node, bools[k], "expected true or false");
    put(K, L, bools[k], json_boolean(json_is_true(v)));
  }
  return K->oom ? oom(K) : TPU_OK;
}

/* BatchNormalization and LayerNormalization: the last axis only; not batch
** renormalization, ghost batches or an adjustment (BatchNormalization), not
** RMS scaling (LayerNormalization). */
static tpu_status x_norm(lctx *x) {
  fe_keras *K = x->K;
  const bool bn = !strcmp(N(x)->cls, "BatchNormalization");
  tpu_status st = last_axis(x, "axis", in_rank(x, 0));
  if (st) return st;
  json_t *v;
  if (!bn && (v = take(x, "rms_scaling")) && json_is_true(v))
    return kfail(K, x->node, "rms_scaling", "RMS normalization (no mean subtracted) is not supported");
  if (bn && (v = take(x, "renorm")) && json_is_true(v))
    return kfail(K, x->node, "renorm", "batch renormalization is not supported");
  if (bn) {
    take(x, "renorm_clipping");
    take(x, "renorm_momentum");
    if ((v = take(x, "virtual_batch_size")) && !json_is_null(v))
      return kfail(K, x->node, "virtual_batch_size", "ghost batch normalization is not supported");
    if ((v = take(x, "adjustment")) && !json_is_null(v))
      return kfail(K, x->node, "adjustment", "an adjustment function is not supported");
    take(x, "fused");   /* which kernel runs it, not what it computes */
    if ((v = take(x, "synchronized")) && json_is_true(v))
      note(K, x->node, "synchronized true", "batch statistics are per core (per replica), not synchronized");
  }
  json_t *L = emit(x, bn ? "batch_normalization" : "layer_normalization", NULL);
  if (!L) return TPU_ERR_NOMEM;
  return take_norm_options(x, L, bn);
}

/* MultiHeadAttention as self-attention: query, value (and key) the same
** tensor; num_heads, key_dim, value_dim (null: key_dim), dropout, use_bias
** and the call's use_causal_mask. Keras' default output_shape (null: the
** query's last axis) and attention_axes (null: every position) only. */
static tpu_status x_mha(lctx *x) {
  fe_keras *K = x->K;
  knode *n = N(x);
  for (int k = 1; k < n->nin; k++)
    if (n->in[k] != n->in[0])
      return kfail(K, x->node, "inbound_nodes", "cross-attention (its query and its value or key from different "
                   "layers) is not supported; self-attention (one tensor for all three) is");
  n->nin = 1;
  static const char *const nulls[] = { "output_shape", "attention_axes" };
  json_t *v;
  const int rank = in_rank(x, 0);
  for (int k = 0; k < 2; k++) {
    if (!(v = take(x, nulls[k])) || json_is_null(v)) continue;
    bool every = k == 1 && json_is_array(v) && (int)json_array_size(v) == rank - 2;   /* axes 1..rank-2 listed: */
    for (int a = 0; every && a < rank - 2; a++)                                        /* the default's */
      every = json_is_integer(json_array_get(v, (size_t)a)) && json_integer_value(json_array_get(v, (size_t)a)) == a + 1;
    if (!every)
      return kfail(K, x->node, nulls[k], "only Keras' default (null%s) is supported", k ? ": every axis but the "
                   "batch and the features" : "");
  }
  json_t *L = emit(x, "multi_head_attention", NULL);
  if (!L) return TPU_ERR_NOMEM;
  static const char *const ints[] = { "num_heads", "key_dim", "value_dim" };
  for (int k = 0; k < 3; k++) {
    if (!(v = take(x, ints[k])) || (k == 2 && json_is_null(v))) continue;
    if (!json_is_integer(v)) return kfail(K, x->node, ints[k], "expected an integer");
    put(K, L, ints[k], json_integer(json_integer_value(v)));
  }
  if ((v = take(x, "dropout"))) {
    if (!json_is_number(v)) return kfail(K, x->node, "dropout", "expected a number");
    put(K, L, "dropout", json_real(json_number_value(v)));
  }
  if (n->causal) put(K, L, "causal", json_true());
  take(x, "flash_attention");   /* how it is computed, not what */
  if ((v = take(x, "seed")) && !json_is_null(v))
    note_kv(K, x->node, "seed", v, "dropout masks come from the model's seed");
  return take_use_bias(x, L);
}

/* A Permute that swaps axis a (1-based, batch left out) with the last of
** rank-1 axes, an involution. */
static json_t *emit_swap(lctx *x, int a, int rank, const char *suffix) {
  json_t *L = emit(x, "permute", suffix), *d = json_array();
  for (int k = 1; d && k < rank; k++)
    if (json_array_append_new(d, json_integer(k == a ? rank - 1 : k == rank - 1 ? a : k))) x->K->oom = true;
  if (L) put(x->K, L, "dims", d);
  else json_decref(d);
  return L;
}
/* Softmax on the last axis; on another axis of a sequence or an image it
** is permute (that axis last), softmax, permute back. */
static tpu_status x_softmax(lctx *x) {
  fe_keras *K = x->K;
  const int rank = in_rank(x, 0);
  json_t *v = take(x, "axis"), *a = json_is_array(v) && json_array_size(v) == 1 ? json_array_get(v, 0) : v;
  int ax = !v ? rank - 1 : json_is_integer(a) ? (int)json_integer_value(a) : 0;
  if (ax < 0) ax += rank;
  if (ax < 1 || ax > rank - 1) {
    char d[64];
    describe(v, d, sizeof d);
    return kfail(K, x->node, "axis", "%s is not an axis of its %d-D input (batch included)", d, rank);
  }
  if (ax == rank - 1) return emit(x, "softmax", NULL) ? TPU_OK : TPU_ERR_NOMEM;
  if (!emit_swap(x, ax, rank, NULL) || !emit(x, "softmax", "softmax") || !emit_swap(x, ax, rank, "back"))
    return TPU_ERR_NOMEM;
  return K->oom ? oom(K) : TPU_OK;
}

/* Permute: Keras' dims (the native permute checks them). */
static tpu_status x_permute(lctx *x) {
  json_t *v = take(x, "dims"), *L = emit(x, "permute", NULL);
  if (!L) return TPU_ERR_NOMEM;
  if (v) put(x->K, L, "dims", json_deep_copy(v));
  return x->K->oom ? oom(x->K) : TPU_OK;
}

/* Rescaling (scale, offset) and Normalization (the last axis; mean and
** variance given, or both null: adapted, Keras' weights) to the native
** layers, which check the values; not Normalization's invert. */
static tpu_status x_affine(lctx *x) {
  fe_keras *K = x->K;
  const bool resc = !strcmp(N(x)->cls, "Rescaling");
  const char *k0 = resc ? "scale" : "mean", *k1 = resc ? "offset" : "variance";
  json_t *v;
  if (!resc) {
    tpu_status st = last_axis(x, "axis", in_rank(x, 0));
    if (st) return st;
    if ((v = take(x, "invert")) && json_is_true(v))
      return kfail(K, x->node, "invert", "the inverse normalization (x*sqrt(variance) + mean) is not supported");
  }
  json_t *a = take(x, k0), *b = take(x, k1);
  const bool na = !a || json_is_null(a), nb = !b || json_is_null(b);
  if (resc && na) return kfail(K, x->node, "scale", "missing: a number or a list of numbers");
  if (!resc && na != nb)
    return kfail(K, x->node, na ? "mean" : "variance", "null while %s is given; give both (or neither: adapted "
                 "statistics)", na ? "variance" : "mean");
  json_t *L = emit(x, resc ? "rescaling" : "normalization", NULL);
  if (!L) return TPU_ERR_NOMEM;
  if (!na) put(K, L, k0, json_deep_copy(a));
  if (!nb) put(K, L, k1, json_deep_copy(b));
  return K->oom ? oom(K) : TPU_OK;
}

/* Activation, ReLU, LeakyReLU, Softmax. */
static tpu_status x_activation(lctx *x) {
  fe_keras *K = x->K;
  knode *n = N(x);
  const char *type = "relu";
  json_t *v, *maxv = NULL;
  if (!strcmp(n->cls, "Activation")) {
    const char *act, *post;
    tpu_status st = take_act(x, &act, &post);
    if (st) return st;
    if (!act && !post) {   /* linear: the identity, no native layer */
      snprintf(n->out, sizeof n->out, "%s", n->in[0] < 0 ? "input" : K->n[n->in[0]].out);
      return TPU_OK;
    }
    if (post) return emit_post(x, post, NULL) ? TPU_OK : TPU_ERR_NOMEM;
    type = act;
  } else if (!strcmp(n->cls, "LeakyReLU")) {   /* Keras 3's negative_slope, tf.keras' alpha; 0.3 */
    json_t *L = emit(x, "leaky_relu", NULL);
    if (!L) return TPU_ERR_NOMEM;
    static const char *const slope[] = { "negative_slope", "alpha" };
    for (int k = 0; k < 2; k++) {
      if (!(v = take(x, slope[k])) || json_is_null(v)) continue;
      if (!json_is_number(v)) return kfail(K, x->node, slope[k], "expected a number");
      put(K, L, "negative_slope", json_real(json_number_value(v)));
    }
    return K->oom ? oom(K) : TPU_OK;
  } else if (!strcmp(n->cls, "Softmax")) {
    return x_softmax(x);
  } else {   /* ReLU */
    static const char *const zero[] = { "negative_slope", "threshold" };
    for (int k = 0; k < 2; k++)
      if ((v = take(x, zero[k])) && !(json_is_number(v) && json_number_value(v) == 0.0))
        return kfail(K, x->node, zero[k], "a ReLU with a %s other than 0 is not supported", zero[k]);
    if ((v = take(x, "max_value")) && !json_is_null(v)) {
      if (!json_is_number(v)) return kfail(K, x->node, "max_value", "expected a number or null");
      if (!(maxv = json_real(json_number_value(v)))) return oom(K);
    }
  }
  json_t *L = emit(x, type, NULL);
  if (!L) { json_decref(maxv); return TPU_ERR_NOMEM; }
  if (maxv) put(K, L, "max_value", maxv);
  return K->oom ? oom(K) : TPU_OK;
}

static tpu_status x_pool(lctx *x) {
  fe_keras *K = x->K;
  tpu_status st = need_rank(x, 4, "; 1-D and 3-D pooling are not supported");
  if (st) return st;
  int a = 2, b = 2;
  json_t *v = take(x, "pool_size");
  if (v && (st = take_pair(K, x->node, "pool_size", v, "an integer or [ph, pw]", 1, 64, &a, &b))) return st;
  if (a != b) return kfail(K, x->node, "pool_size", "[%d, %d]: only square windows are supported", a, b);
  json_t *L = emit(x, !strcmp(N(x)->cls, "MaxPooling2D") ? "maxpool" : "avgpool", NULL);
  if (!L) return TPU_ERR_NOMEM;
  put(K, L, "size", json_integer(a));
  if ((st = take_strides(x, L, a)) || (st = take_padding(x, L))) return st;
  return K->oom ? oom(K) : TPU_OK;
}

static tpu_status need_seq(lctx *x) {
  const int rk = in_rank(x, 0);
  if (rk == 3) return TPU_OK;
  return kfail(x->K, x->node, NULL, "its input is %d-D (batch included); %s needs a 3-D one (a sequence)", rk,
               N(x)->cls);
}

/* Reshape: "target_shape" of 1 to 3 dimensions (batch left out), one may
** be -1; the native reshape checks that it holds the input. */
static tpu_status x_reshape(lctx *x) {
  fe_keras *K = x->K;
  json_t *v = take(x, "target_shape");
  const size_t n = json_is_array(v) ? json_array_size(v) : 0;
  if (n < 1 || n > 3) {
    char d[64];
    describe(v, d, sizeof d);
    return kfail(K, x->node, "target_shape", "%s: expected 1 to 3 dimensions (a vector, a sequence or an image)", d);
  }
  json_t *L = emit(x, "reshape", NULL);
  if (!L) return TPU_ERR_NOMEM;
  put(K, L, "target_shape", json_deep_copy(v));
  N(x)->rank = (int)n + 1;
  return K->oom ? oom(K) : TPU_OK;
}

static tpu_status x_simple(lctx *x) {
  fe_keras *K = x->K;
  const char *cls = N(x)->cls;
  json_t *v;
  tpu_status st;
  if (!strcmp(cls, "GlobalAveragePooling2D") || !strcmp(cls, "GlobalAveragePooling1D")) {
    const bool one = !strcmp(cls, "GlobalAveragePooling1D");   /* over a sequence's positions */
    if ((st = one ? need_seq(x) : need_rank(x, 4, ""))) return st;
    if ((v = take(x, "keepdims")) && json_is_true(v))
      return kfail(K, x->node, "keepdims", "keepdims true (a 1x1xC image) is not supported; the native "
                   "global_avgpool gives a vector");
    return emit(x, "global_avgpool", NULL) ? TPU_OK : TPU_ERR_NOMEM;
  }
  if (!strcmp(cls, "ZeroPadding2D")) {
    if ((st = need_rank(x, 4, ""))) return st;
    json_t *L = emit(x, "zero_padding", NULL);
    if (!L) return TPU_ERR_NOMEM;
    if ((v = take(x, "padding"))) put(K, L, "padding", json_deep_copy(v));
    return K->oom ? oom(K) : TPU_OK;
  }
  if (!strcmp(cls, "Flatten")) return emit(x, "flatten", NULL) ? TPU_OK : TPU_ERR_NOMEM;
  /* Dropout */
  v = take(x, "rate");
  if (!json_is_number(v)) return kfail(K, x->node, "rate", v ? "expected a number" : "missing");
  bool per_sample = false;   /* (None, 1, ..., 1): whole samples (stochastic depth) */
  if ((v = take(x, "noise_shape")) && !json_is_null(v)) {
    per_sample = json_is_array(v) && json_array_size(v) >= 2 && json_is_null(json_array_get(v, 0));
    for (size_t k = 1; per_sample && k < json_array_size(v); k++)
      per_sample = json_is_integer(json_array_get(v, k)) && json_integer_value(json_array_get(v, k)) == 1;
    char d[64];
    describe(v, d, sizeof d);
    if (!per_sample)
      return kfail(K, x->node, "noise_shape", "%s: a mask shared along some axes (spatial dropout) is not supported; "
                   "null (every element) and [null, 1, ...] (whole samples) are", d);
  }
  if ((v = take(x, "seed")) && !json_is_null(v))
    note_kv(K, x->node, "seed", v, "dropout masks come from the model's seed");
  json_t *L = emit(x, "dropout", NULL);
  if (!L) return TPU_ERR_NOMEM;
  put(K, L, "rate", json_real(json_number_value(json_object_get(x->cfg, "rate"))));
  if (per_sample) put(K, L, "per_sample", json_true());
  return K->oom ? oom(K) : TPU_OK;
}

static tpu_status x_merge(lctx *x) {
  fe_keras *K = x->K;
  knode *n = N(x);
  const bool cat = !strcmp(n->cls, "Concatenate"), mul = !strcmp(n->cls, "Multiply");
  if (n->nin < 2) return kfail(K, x->node, NULL, "has %d input; %s needs 2 or more", n->nin, n->cls);
  if (mul && n->nin > 2) return kfail(K, x->node, NULL, "has %d inputs; a Multiply of 2 is supported", n->nin);
  for (int k = 1; k < n->nin; k++)
    if (in_rank(x, k) != in_rank(x, 0))
      return kfail(K, x->node, NULL, "its inputs have %d and %d dimensions", in_rank(x, 0), in_rank(x, k));
  if (cat) {
    tpu_status st = last_axis(x, "axis", in_rank(x, 0));
    if (st) return st;
  }
  return emit(x, cat ? "concatenate" : mul ? "multiply" : "add", NULL) ? TPU_OK : TPU_ERR_NOMEM;
}

/* What every layer's config may hold: name, trainable, dtype, data_format,
** the vestigial input shape of a layer that is not first, initializers,
** regularizers and constraints. */
static tpu_status common_options(lctx *x) {
  fe_keras *K = x->K;
  const char *k;
  json_t *v;
  take(x, "name");
  take(x, "batch_input_shape");
  take(x, "batch_shape");
  take(x, "input_dtype");
  if ((v = take(x, "trainable")) && json_is_false(v))
    note(K, x->node, "trainable false", "the layer is trained (tpusim trains every layer, and BatchNormalization "
         "uses batch statistics in training)");
  if (!dtype_is_f32(v = take(x, "dtype")))
    note_kv(K, x->node, "dtype", v, "a layer's own policy is not modelled: every layer follows the run's "
            "--dtype-policy (mixed_bfloat16 unless given)");
  v = take(x, "data_format");
  if (v && !json_is_null(v) && strcmp(str_or(v, ""), "channels_last"))
    return kfail(K, x->node, "data_format", "'%s' is not supported: tpusim stores activations channels last "
                 "(height x width x channels); only channels_last", str_or(v, "?"));
  json_object_foreach(x->cfg, k, v) {
    const size_t kl = strlen(k);
    const bool init = kl > 12 && !strcmp(k + kl - 12, "_initializer");
    const bool reg = kl > 12 && !strcmp(k + kl - 12, "_regularizer");
    const bool con = kl > 11 && !strcmp(k + kl - 11, "_constraint");
    if (!init && !reg && !con) continue;
    take(x, k);
    if (init && !init_is_default(k, v))
      note_kv(K, x->node, k, v, "weights start Glorot-uniform from the model's seed, biases and beta at 0, gamma "
              "at 1, moving statistics at 0 and 1");
    else if (reg && !reg_is_none(v))
      note_kv(K, x->node, k, v, "no regularization term is added to the loss");
    else if (con && !json_is_null(v))
      note_kv(K, x->node, k, v, "weights are not constrained");
  }
  return TPU_OK;
}

static tpu_status translate_layer(fe_keras *K, int node) {
  lctx x = { .K = K, .node = node, .cfg = K->n[node].cfg };
  knode *n = &K->n[node];
  tpu_status st = common_options(&x);
  if (st) return st;
  const char *c = n->cls;
  if (!strcmp(c, "Conv2D") || !strcmp(c, "DepthwiseConv2D") || !strcmp(c, "SeparableConv2D")) st = x_conv(&x);
  else if (!strcmp(c, "Dense")) st = x_dense(&x);
  else if (!strcmp(c, "BatchNormalization") || !strcmp(c, "LayerNormalization")) st = x_norm(&x);
  else if (!strcmp(c, "MultiHeadAttention")) st = x_mha(&x);
  else if (!strcmp(c, "Reshape")) st = x_reshape(&x);
  else if (!strcmp(c, "Permute")) st = x_permute(&x);
  else if (!strcmp(c, "Rescaling") || !strcmp(c, "Normalization")) st = x_affine(&x);
  else if (!strcmp(c, "Activation") || !strcmp(c, "ReLU") || !strcmp(c, "Softmax") || !strcmp(c, "LeakyReLU"))
    st = x_activation(&x);
  else if (!strcmp(c, "MaxPooling2D") || !strcmp(c, "AveragePooling2D")) st = x_pool(&x);
  else if (!strcmp(c, "Add") || !strcmp(c, "Concatenate") || !strcmp(c, "Multiply")) st = x_merge(&x);
  else st = x_simple(&x);   /* GlobalAveragePooling1D/2D, ZeroPadding2D, Flatten, Dropout */
  if (st) return st;
  if (x.emitted) snprintf(n->out, sizeof n->out, "%s", x.last);
  /* the rank of its output */
  const int r = n->nin ? in_rank(&x, 0) : 0;
  n->rank = !strcmp(c, "Flatten") || !strcmp(c, "GlobalAveragePooling2D") || !strcmp(c, "GlobalAveragePooling1D") ? 2
            : strstr(c, "Conv2D") || strstr(c, "Pooling2D") || !strcmp(c, "ZeroPadding2D") ? 4
            : !strcmp(c, "Reshape") ? n->rank : r;
  /* what is left of its config is not modelled */
  const char *k;
  json_t *v;
  json_object_foreach(x.cfg, k, v) {
    if (was_taken(&x, k)) continue;
    char what[96];
    snprintf(what, sizeof what, "%s option '%s'", c, k);
    note_kv(K, node, what, v, "not modelled");
  }
  return K->oom ? oom(K) : TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** The graph: nodes of every (nested) model, their inputs
** ================================================================== */
static int new_node(fe_keras *K, json_t *obj, const char *path) {
  if (K->nn == K->ncap) {
    const int cap = K->ncap ? 2 * K->ncap : 64;
    knode *p = tpu_realloc(K->n, (size_t)cap * sizeof *p);
    if (!p) { oom(K); return -1; }
    K->n = p;
    K->ncap = cap;
  }
  knode *n = &K->n[K->nn];
  memset(n, 0, sizeof *n);
  n->obj = obj;
  n->cfg = json_object_get(obj, "config");
  n->cls = str_or(json_object_get(obj, "class_name"), "?");
  n->name = str_or(json_object_get(obj, "name"), str_or(json_object_get(n->cfg, "name"), ""));
  n->kind = !strcmp(n->cls, "InputLayer") ? K_INPUT : is_model_class(n->cls) ? K_MODEL : K_LAYER;
  snprintf(n->path, sizeof n->path, "%s", path);
  return K->nn++;
}

/* A layer class check over the whole file, in listing order (nested
** models' layers where they sit), before anything else: the first class
** the importer does not take is the one named. */
static tpu_status check_classes(fe_keras *K, json_t *model, const char *path, int depth) {
  json_t *cfg = json_object_get(model, "config");
  json_t *layers = json_is_array(cfg) ? cfg : json_object_get(cfg, "layers");
  char lp[KPATH];
  if (depth > KMAX_DEPTH) return tpu_json_fail(K->doc, path, "models nested more than %d deep", KMAX_DEPTH);
  for (size_t i = 0; i < json_array_size(layers); i++) {
    json_t *l = json_array_get(layers, i);
    snprintf(lp, sizeof lp, "%s.config%s[%zu]", path, json_is_array(cfg) ? "" : ".layers", i);
    if (!json_is_object(l) || !json_is_object(json_object_get(l, "config")) ||
        !json_is_string(json_object_get(l, "class_name")))
      return tpu_json_fail(K->doc, lp, "expected a layer: an object with \"class_name\" and \"config\"");
    const char *c = json_string_value(json_object_get(l, "class_name"));
    const char *nm = str_or(json_object_get(l, "name"), str_or(json_object_get(json_object_get(l, "config"), "name"), "?"));
    if (++K->nlisted > KMAX_LAYERS)
      return tpu_json_fail(K->doc, lp, "layer '%s' (%s): the model has more than %d layers (nested models' "
                           "included); the native model it becomes holds at most %d", nm, c, KMAX_LAYERS,
                           TPU_FE_MAX_LAYERS);
    if (is_model_class(c)) {
      tpu_status st = check_classes(K, l, lp, depth + 1);
      if (st) return st;
      continue;
    }
    bool ok = false;
    for (int k = 0; CLASSES[k] && !ok; k++) ok = !strcmp(CLASSES[k], c);
    if (ok) continue;
    char cp[KPATH + 16];
    snprintf(cp, sizeof cp, "%s.class_name", lp);
    bool seen = false;   /* listed once, with its first layer */
    for (int k = 0; k < K->nbad && k < 16 && !seen; k++) seen = !strcmp(K->bad[k].cls, c);
    if (!seen && K->nbad < 16) {
      K->bad[K->nbad].cls = c;
      K->bad[K->nbad].name = nm;
      snprintf(K->bad[K->nbad].path, sizeof K->bad[0].path, "%s", cp);
    }
    K->nbad += !seen;
  }
  return TPU_OK;
}

/* Why a class is refused beyond not being in the table: Lambda's function
** is Python bytecode; Keras 1's Merge is read in two modes (keras1.c). */
static const char *why_refused(const char *cls) {
  return !strcmp(cls, "Lambda") ? ": its function is marshalled Python bytecode, which tpusim cannot run"
       : !strcmp(cls, "Merge") ? ": Keras 1's Merge is read in modes concat (Concatenate) and sum (Add), of layers, "
                                 "not of models" : "";
}

/* After the class check: every unsupported class of the file at once, each
** with its first layer, positioned at the first of them. */
static tpu_status refuse_classes(fe_keras *K) {
  if (!K->nbad) return TPU_OK;
  char more[1024] = "";
  size_t n = 0;
  const int listed = K->nbad < 16 ? K->nbad : 16;
  if (K->nbad > 1)
    n = (size_t)snprintf(more, sizeof more, "; %d more class%s of the file %s not: ", K->nbad - 1,
                         K->nbad == 2 ? "" : "es", K->nbad == 2 ? "is" : "are");
  for (int k = 1; k < listed && n < sizeof more; k++)
    n += (size_t)snprintf(more + n, sizeof more - n, "%s%s (first: layer '%s'%s)", k > 1 ? ", " : "",
                          K->bad[k].cls, K->bad[k].name, why_refused(K->bad[k].cls));
  if (K->nbad > listed && n < sizeof more) snprintf(more + n, sizeof more - n, ", ...");
  return tpu_json_fail(K->doc, K->bad[0].path, "layer '%s' (%s): class %s is not supported%s%s; the importer "
                       "takes " CLASS_LIST, K->bad[0].name, K->bad[0].cls, K->bad[0].cls, why_refused(K->bad[0].cls),
                       more);
}

/* The model input from an input shape value [batch, dims...]; 'node' the
** layer that gives it. */
static tpu_status set_input(fe_keras *K, int node, json_t *shape, const char *path) {
  char who[96];   /* "layer 'conv1' (Conv2D)", or the model's own shape */
  if (node >= 0) snprintf(who, sizeof who, "layer '%s' (%s)", K->n[node].name, K->n[node].cls);
  else snprintf(who, sizeof who, "the Sequential model");
  const size_t r = json_array_size(shape);
  char d[96];
  describe(shape, d, sizeof d);
  if (!json_is_array(shape) || r < 2 || r > 4)
    return tpu_json_fail(K->doc, path, "%s: input shape %s: expected [batch, size], [batch, length, "
                         "channels] or [batch, height, width, channels]", who, d);
  int given[3] = { 0, 0, 0 }, ng = 0;
  if (K->shape_arg) {
    const char *p = K->shape_arg;
    while (*p && ng < 3) {
      char *e;
      long v = strtol(p, &e, 10);
      if (e == p || v < 1 || v > 65536 || (*e && *e != 'x') || (*e == 'x' && !e[1])) { ng = -1; break; }   /* "28x" */
      given[ng++] = (int)v;
      p = *e ? e + 1 : e;
    }
    if (*p || ng != (int)r - 1)
      return tpu_json_fail(K->doc, path, "@%s: expected %zu dimensions (%s) for the input shape %s of %s",
                           K->shape_arg, r - 1, r == 4 ? "HxWxC" : r == 3 ? "LxC" : "N", d, who);
  }
  int dims[3] = { 0, 0, 0 };
  bool unknown = false;
  for (size_t k = 1; k < r; k++) {
    json_t *e = json_array_get(shape, k);
    if (json_is_null(e)) { unknown = true; dims[k - 1] = given[k - 1]; continue; }
    if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > 65536)
      return tpu_json_fail(K->doc, path, "%s: input shape %s: dimensions must be integers in 1..65536 "
                           "or null", who, d);
    dims[k - 1] = (int)json_integer_value(e);
    if (K->shape_arg && given[k - 1] != dims[k - 1])
      return tpu_json_fail(K->doc, path, "%s: the file fixes the input shape at %s; @%s differs", who, d,
                           K->shape_arg);
  }
  if (unknown && !K->shape_arg)
    return tpu_json_fail(K->doc, path, "%s: the input shape %s is unspecified (null); give it after "
                         "the file name: FILE@%s, e.g. %s@%s", who, d, r == 4 ? "HxWxC" : r == 3 ? "LxC" : "N",
                         K->doc->where, r == 4 ? "224x224x3" : r == 3 ? "100x8" : "784");
  json_t *b = json_array_get(shape, 0);
  if (json_is_integer(b))
    note_kv(K, node, "batch size", b, "the input's fixed batch size is not kept: the run's --batch is used");
  K->have_input = true;
  K->in_rank = (int)r;
  K->in_dims[0] = dims[0];
  K->in_dims[1] = dims[1];
  K->in_dims[2] = dims[2];
  snprintf(K->in_path, sizeof K->in_path, "%s", path);
  return TPU_OK;
}

/* An InputLayer of the top model: the model input. */
static tpu_status input_layer(fe_keras *K, int node) {
  knode *n = &K->n[node];
  const char *key = json_object_get(n->cfg, "batch_shape") ? "batch_shape" : "batch_input_shape";
  char path[KPATH + 32];
  snprintf(path, sizeof path, "%s.config.%s", n->path, key);
  if (K->have_input)
    return kfail(K, node, NULL, "a second input; models with one input are supported");
  json_t *v;
  if ((v = json_object_get(n->cfg, "sparse")) && json_is_true(v))
    note(K, node, "sparse true", "the input is dense");
  if ((v = json_object_get(n->cfg, "ragged")) && json_is_true(v))
    return kfail(K, node, "ragged", "a ragged input is not supported");
  if (!dtype_is_f32(v = json_object_get(n->cfg, "dtype")))
    note_kv(K, node, "dtype", v, "the input is f32");
  return set_input(K, node, json_object_get(n->cfg, key), path);
}

static tpu_status build_model(fe_keras *K, json_t *m, const char *path, bool top, int nin, const int *ins, int *out,
                              int depth);

/* A nested model's node: built, its output its own. */
static tpu_status nested(fe_keras *K, int node, int depth) {
  int out = -1;
  char path[KPATH];
  snprintf(path, sizeof path, "%s", K->n[node].path);
  const int nin = K->n[node].nin;
  int ins[TPU_FE_MAX_INPUTS];
  memcpy(ins, K->n[node].in, sizeof ins);
  tpu_status st = build_model(K, K->n[node].obj, path, false, nin, ins, &out, depth + 1);
  if (st) return st;
  knode *n = &K->n[node];
  n->nin = 1;
  n->in[0] = out;
  if (json_is_false(json_object_get(n->cfg, "trainable")))
    note(K, node, "trainable false", "the layer is trained (tpusim trains every layer, and BatchNormalization "
         "uses batch statistics in training)");
  return TPU_OK;
}

/* [null, null...], one null per dimension of an "HxWxC" (or "N", "LxC")
** given after the file name, for set_input to fill from it (and check
** it: 4-D when it has more than 3 parts); NULL when out of memory. */
static json_t *shape_of_arg(const char *arg) {
  int parts = 1;
  for (const char *p = arg; *p; p++) parts += *p == 'x';
  json_t *a = json_array();
  for (int k = 0; a && k <= (parts > 3 ? 3 : parts); k++)
    if (json_array_append_new(a, json_null())) { json_decref(a); a = NULL; }
  return a;
}

static tpu_status build_sequential(fe_keras *K, json_t *m, const char *path, bool top, int in, int *out, int depth) {
  json_t *cfg = json_object_get(m, "config");
  json_t *layers = json_is_array(cfg) ? cfg : json_object_get(cfg, "layers");
  char lp[KPATH];
  snprintf(lp, sizeof lp, "%s.config%s", path, json_is_array(cfg) ? "" : ".layers");
  if (top) snprintf(K->layers_path, sizeof K->layers_path, "%s", lp);
  if (!json_is_array(layers) || !json_array_size(layers))
    return tpu_json_fail(K->doc, lp, "a Sequential model without layers");
  int prev = in;
  for (size_t i = 0; i < json_array_size(layers); i++) {
    char p[KPATH];
    snprintf(p, sizeof p, "%s[%zu]", lp, i);
    const int id = new_node(K, json_array_get(layers, i), p);
    if (id < 0) return TPU_ERR_NOMEM;
    knode *n = &K->n[id];
    tpu_status st;
    if (n->kind == K_INPUT) {
      if (top && (st = input_layer(K, id))) return st;
      if (!top) { n->nin = 1; n->in[0] = prev; }
      prev = id;
      continue;
    }
    if (top && !K->have_input) {
      /* tf.keras 2 puts the input shape on the first layer; Keras 3 (and a built
      ** Sequential) on the model */
      json_t *s = json_object_get(n->cfg, "batch_input_shape");
      char sp[KPATH + 32];
      snprintf(sp, sizeof sp, "%s.config.batch_input_shape", n->path);
      if (!s) {
        s = json_object_get(cfg, "build_input_shape");
        snprintf(sp, sizeof sp, "%s.config.build_input_shape", path);
      }
      if (!s) {
        s = json_object_get(json_object_get(m, "build_config"), "input_shape");
        snprintf(sp, sizeof sp, "%s.build_config.input_shape", path);
      }
      json_t *given = NULL;   /* none in the file: the one after '@' */
      if (!json_is_array(s) && K->shape_arg) {
        if (!(s = given = shape_of_arg(K->shape_arg))) return oom(K);
        snprintf(sp, sizeof sp, "%s", path);
      }
      if (!json_is_array(s))
        return kfail(K, id, NULL, "the model's input shape is not in the file (no InputLayer, batch_input_shape or "
                     "build_input_shape); give it after the file name: FILE@HxWxC (or FILE@N for a vector)");
      st = set_input(K, s == json_object_get(n->cfg, "batch_input_shape") ? id : -1, s, sp);
      json_decref(given);
      if (st) return st;
    }
    n->nin = 1;
    n->in[0] = prev;
    if (n->kind == K_MODEL && (st = nested(K, id, depth))) return st;
    prev = id;
  }
  *out = prev;
  return TPU_OK;
}

/* A [layer, node, tensor] reference (legacy, or a keras_history) within
** the scope first..last of a Functional's nodes: the node. */
static tpu_status resolve_ref(fe_keras *K, int node, json_t *ref, int first, int last, const char *what, int *out) {
  json_t *nm = json_array_get(ref, 0), *ni = json_array_get(ref, 1), *ti = json_array_get(ref, 2);
  if (!json_is_array(ref) || json_array_size(ref) < 3 || !json_is_string(nm) || !json_is_integer(ni) ||
      !json_is_integer(ti))
    return node >= 0 ? kfail(K, node, "inbound_nodes", "expected [layer name, node index, tensor index]")
                     : tpu_json_fail(K->doc, what, "expected [layer name, node index, tensor index]");
  const int j = tab_find(K, first, json_string_value(nm));
  if (j >= first && j < last) {
    /* A layer is called once (a shared layer is refused), so its one node
    ** is 0; tf.keras 2 numbers a nested model's call 1 when the model's own
    ** construction (from its InputLayer) is its node 0. */
    const int maxnode = K->n[j].kind == K_MODEL ? 1 : 0;
    if (json_integer_value(ni) < 0 || json_integer_value(ni) > maxnode)
      return kfail(K, node >= 0 ? node : j, node >= 0 ? "inbound_nodes" : NULL, "takes node %lld of layer '%s'; "
                   "node index out of range 0..%d (each layer is called once)", (long long)json_integer_value(ni),
                   json_string_value(nm), maxnode);
    if (json_integer_value(ti) != 0)
      return kfail(K, node >= 0 ? node : j, node >= 0 ? "inbound_nodes" : NULL, "takes output %lld of layer '%s'; "
                   "layers with one output are supported", (long long)json_integer_value(ti), json_string_value(nm));
    *out = j;
    return TPU_OK;
  }
  if (node >= 0)
    return kfail(K, node, "inbound_nodes", "its input '%s' is not a layer of the model", json_string_value(nm));
  return tpu_json_fail(K->doc, what, "'%s' is not a layer of the model", json_string_value(nm));
}

/* The tensors of a Keras 3 call's args (lists nested any way). */
static tpu_status k3_tensors(fe_keras *K, int node, json_t *v, int first, int last, int depth) {
  knode *n = &K->n[node];
  if (depth > 4) return TPU_OK;
  if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) {
      tpu_status st = k3_tensors(K, node, json_array_get(v, i), first, last, depth + 1);
      if (st) return st;
    }
    return TPU_OK;
  }
  if (!json_is_object(v) || strcmp(str_or(json_object_get(v, "class_name"), ""), "__keras_tensor__")) return TPU_OK;
  if (n->nin == TPU_FE_MAX_INPUTS)
    return kfail(K, node, "inbound_nodes", "more than %d inputs are not supported", TPU_FE_MAX_INPUTS);
  json_t *h = json_object_get(json_object_get(v, "config"), "keras_history");
  return resolve_ref(K, node, h, first, last, NULL, &n->in[n->nin++]);
}
static bool holds_tensor(json_t *v, int depth) {
  if (depth > 6) return false;
  if (json_is_object(v) && !strcmp(str_or(json_object_get(v, "class_name"), ""), "__keras_tensor__")) return true;
  if (json_is_array(v) && json_array_size(v) == 3 && json_is_string(json_array_get(v, 0)) &&
      json_is_integer(json_array_get(v, 1)))
    return true;   /* a legacy [layer, node, tensor] */
  const char *k;
  json_t *e;
  if (json_is_object(v)) json_object_foreach(v, k, e) if (holds_tensor(e, depth + 1)) return true;
  if (json_is_array(v)) for (size_t i = 0; i < json_array_size(v); i++) if (holds_tensor(json_array_get(v, i), depth + 1)) return true;
  return false;
}
/* A call's keyword arguments: none may be a tensor; "mask": null is what
** Keras writes; others (training=False) are noted. */
static tpu_status resolve_ref(fe_keras *K, int node, json_t *ref, int first, int last, const char *what, int *out);
/* A call's keyword arguments: MultiHeadAttention's value and key tensors
** become inputs (tf.keras 2 writes them as [layer, node, tensor, kwargs],
** Keras 3 as tensors) and its use_causal_mask the layer's causal flag; any
** other tensor is refused, any other value noted. */
static tpu_status call_kwargs(fe_keras *K, int node, json_t *kw, int first, int last) {
  const char *k;
  json_t *v;
  knode *n = &K->n[node];
  const bool mha = !strcmp(n->cls, "MultiHeadAttention");
  json_object_foreach(kw, k, v) {
    tpu_status st;
    if (mha && (!strcmp(k, "value") || !strcmp(k, "key")) && holds_tensor(v, 0)) {
      if (n->nin == TPU_FE_MAX_INPUTS) return kfail(K, node, "inbound_nodes", "too many inputs");
      if (json_is_array(v) && (st = resolve_ref(K, node, v, first, last, NULL, &n->in[n->nin++]))) return st;
      if (json_is_object(v) && (st = k3_tensors(K, node, v, first, last, 0))) return st;
      continue;
    }
    if (mha && !strcmp(k, "use_causal_mask")) { n->causal = json_is_true(v); continue; }
    if (mha && !strcmp(k, "return_attention_scores") && json_is_true(v))
      return kfail(K, node, "inbound_nodes", "called with return_attention_scores=True (a second output); not "
                   "supported");
    if (holds_tensor(v, 0))
      return kfail(K, node, "inbound_nodes", "takes a tensor as its keyword argument '%s'; not supported", k);
    if (json_is_null(v)) continue;
    char d[64], what[128];
    describe(v, d, sizeof d);
    snprintf(what, sizeof what, "called with %s=%s", k, d);
    note(K, node, what, "every layer runs in training mode when training, in inference mode when evaluating");
  }
  return TPU_OK;
}

/* A Functional layer's inputs from its one call ("inbound_nodes"). */
static tpu_status inbound(fe_keras *K, int node, int first, int last) {
  knode *n = &K->n[node];
  json_t *nodes = json_object_get(n->obj, "inbound_nodes");
  if (!json_is_array(nodes) || json_array_size(nodes) == 0)
    return kfail(K, node, "inbound_nodes", "has no inbound node: a layer other than an InputLayer needs an input");
  if (json_array_size(nodes) > 1)
    return kfail(K, node, "inbound_nodes", "is called %zu times (a shared layer); layers called once are supported",
                 json_array_size(nodes));
  json_t *call = json_array_get(nodes, 0);
  tpu_status st;
  if (json_is_array(call)) {   /* tf.keras 2: [[layer, node, tensor, kwargs], ...] */
    for (size_t i = 0; i < json_array_size(call); i++) {
      json_t *r = json_array_get(call, i);
      if (n->nin == TPU_FE_MAX_INPUTS)
        return kfail(K, node, "inbound_nodes", "more than %d inputs are not supported", TPU_FE_MAX_INPUTS);
      if ((st = resolve_ref(K, node, r, first, last, NULL, &n->in[n->nin++]))) return st;
      if ((st = call_kwargs(K, node, json_array_get(r, 3), first, last))) return st;
    }
  } else if (json_is_object(call)) {   /* Keras 3: {"args": [...], "kwargs": {...}} */
    if ((st = k3_tensors(K, node, json_object_get(call, "args"), first, last, 0))) return st;
    if ((st = call_kwargs(K, node, json_object_get(call, "kwargs"), first, last))) return st;
  } else return kfail(K, node, "inbound_nodes", "expected a list of calls");
  if (n->nin == 0) return kfail(K, node, "inbound_nodes", "its call has no input tensor");
  return TPU_OK;
}

/* "input_layers" / "output_layers": a [layer, node, tensor] or a list (or
** dict) of them. */
static tpu_status io_refs(fe_keras *K, json_t *v, const char *path, int first, int last, int *ids, int cap, int *n) {
  *n = 0;
  if (json_is_array(v) && json_array_size(v) == 3 && json_is_string(json_array_get(v, 0)))
    return resolve_ref(K, -1, v, first, last, path, &ids[(*n)++]);
  size_t i;
  const char *k;
  json_t *e;
  if (json_is_object(v)) {
    json_object_foreach(v, k, e) {
      if (*n == cap) return TPU_OK;
      tpu_status st = resolve_ref(K, -1, e, first, last, path, &ids[(*n)++]);
      if (st) return st;
    }
    return TPU_OK;
  }
  json_array_foreach(v, i, e) {
    if (*n == cap) { (*n)++; continue; }
    tpu_status st = resolve_ref(K, -1, e, first, last, path, &ids[(*n)++]);
    if (st) return st;
  }
  return TPU_OK;
}

static tpu_status build_functional(fe_keras *K, json_t *m, const char *path, bool top, int nin, const int *ins,
                                   int *out, int depth) {
  json_t *cfg = json_object_get(m, "config");
  json_t *layers = json_object_get(cfg, "layers");
  char lp[KPATH], ip[KPATH], op[KPATH];
  snprintf(lp, sizeof lp, "%s.config.layers", path);
  snprintf(ip, sizeof ip, "%s.config.input_layers", path);
  snprintf(op, sizeof op, "%s.config.output_layers", path);
  if (top) snprintf(K->layers_path, sizeof K->layers_path, "%s", lp);
  if (!json_is_array(layers) || !json_array_size(layers) || !json_object_get(cfg, "input_layers") ||
      !json_object_get(cfg, "output_layers"))
    return tpu_json_fail(K->doc, path, "model '%s' (%s): no \"layers\", \"input_layers\" and \"output_layers\" in "
                         "its config (a subclassed model cannot be imported)", str_or(json_object_get(cfg, "name"), "?"),
                         str_or(json_object_get(m, "class_name"), "?"));
  const int first = K->nn;
  for (size_t i = 0; i < json_array_size(layers); i++) {
    char p[KPATH];
    snprintf(p, sizeof p, "%s[%zu]", lp, i);
    if (new_node(K, json_array_get(layers, i), p) < 0) return TPU_ERR_NOMEM;
  }
  const int last = K->nn;
  for (int j = first; j < last; j++) {
    const int q = tab_find(K, first, K->n[j].name);
    if (q >= 0) return kfail(K, j, NULL, "its name is already that of layer %d of the model", q - first);
    if (tab_put(K, first, j)) return TPU_ERR_NOMEM;
  }
  /* inputs */
  int io[TPU_FE_MAX_INPUTS], nio;
  tpu_status st = io_refs(K, json_object_get(cfg, "input_layers"), ip, first, last, io, TPU_FE_MAX_INPUTS, &nio);
  if (st) return st;
  if (top ? nio != 1 : nio != nin)
    return tpu_json_fail(K->doc, ip, top ? "the model has %d inputs; models with one input are supported"
                         : "the nested model takes %d inputs but is called with %d", nio, nin);
  for (int k = 0; k < nio; k++) {
    knode *n = &K->n[io[k]];
    if (n->kind != K_INPUT) return kfail(K, io[k], NULL, "a model input that is not an InputLayer");
    if (top && (st = input_layer(K, io[k]))) return st;
    if (!top) { n->nin = 1; n->in[0] = ins[k]; }
  }
  for (int j = first; j < last; j++) {
    knode *n = &K->n[j];
    if (n->kind == K_INPUT) {
      if (!n->nin && !(top && io[0] == j))
        return kfail(K, j, NULL, "an InputLayer that is not the model's input; one input is supported");
      continue;
    }
    if ((st = inbound(K, j, first, last))) return st;
  }
  for (int j = first; j < last; j++)
    if (K->n[j].kind == K_MODEL && (st = nested(K, j, depth))) return st;
  /* the output */
  if ((st = io_refs(K, json_object_get(cfg, "output_layers"), op, first, last, io, TPU_FE_MAX_INPUTS, &nio))) return st;
  if (nio != 1 && !(top && nio <= TPU_FE_MAX_OUTPUTS)) {   /* the top model's outputs: "outputs" (native_root) */
    char names[160] = "";
    for (int k = 0; k < nio && k < TPU_FE_MAX_INPUTS; k++)
      append(names, sizeof names, "%s'%s'", k ? ", " : "", K->n[io[k]].name);
    return tpu_json_fail(K->doc, op, "the model has %d outputs (%s); %s", nio, names,
                         top ? "models with up to 4 outputs are supported"
                             : "a nested model with one output is supported");
  }
  if (top) {
    K->nouts = nio;
    memcpy(K->outs, io, (size_t)nio * sizeof *io);
  }
  *out = io[0];
  return TPU_OK;
}

static tpu_status build_model(fe_keras *K, json_t *m, const char *path, bool top, int nin, const int *ins, int *out,
                              int depth) {
  const char *c = str_or(json_object_get(m, "class_name"), "");
  json_t *cfg = json_object_get(m, "config");
  if (depth > KMAX_DEPTH) return tpu_json_fail(K->doc, path, "models nested more than %d deep", KMAX_DEPTH);
  if (!strcmp(c, "Sequential")) {
    if (!top && nin != 1) return tpu_json_fail(K->doc, path, "a nested Sequential called with %d inputs", nin);
    return build_sequential(K, m, path, top, top ? -1 : ins[0], out, depth);
  }
  if (json_is_object(cfg) && json_object_get(cfg, "layers"))
    return build_functional(K, m, path, top, nin, ins, out, depth);
  return tpu_json_fail(K->doc, path, "model '%s' (%s): no layers in its config (a subclassed model cannot be "
                       "imported)", str_or(json_object_get(cfg, "name"), "?"), c);
}
/* }================================================================== */

/* {==================================================================
** Order and translation
** ================================================================== */
/* Marks what the outputs depend on (an explicit stack: models are deep). */
static tpu_status reach(fe_keras *K, int nout, const int *outs) {
  int *stack = tpu_malloc(((size_t)K->nn * (TPU_FE_MAX_INPUTS + 1) + TPU_FE_MAX_OUTPUTS) * sizeof *stack);
  if (!stack) return oom(K);
  int sp = 0;
  for (int k = 0; k < nout; k++) stack[sp++] = outs[k];
  while (sp) {
    const int j = stack[--sp];
    if (j < 0 || K->n[j].reached) continue;
    K->n[j].reached = true;
    for (int k = 0; k < K->n[j].nin; k++) stack[sp++] = K->n[j].in[k];
  }
  tpu_free(stack);
  for (int j = 0; j < K->nn; j++)
    if (!K->n[j].reached && K->n[j].kind == K_LAYER)
      return kfail(K, j, NULL, "does not lead to the model's output (an unused branch)");
  return TPU_OK;
}

static bool ready(const fe_keras *K, int j) {
  for (int k = 0; k < K->n[j].nin; k++) if (K->n[j].in[k] >= 0 && !K->n[K->n[j].in[k]].done) return false;
  return true;
}

/* Translates the nodes in an order where each comes after its inputs. */
static tpu_status walk(fe_keras *K) {
  tpu_status st;
  int left = 0;
  for (int j = 0; j < K->nn; j++) left += K->n[j].reached;
  while (left) {
    bool progress = false;
    for (int j = 0; j < K->nn; j++) {
      knode *n = &K->n[j];
      if (!n->reached || n->done || !ready(K, j)) continue;
      if (n->kind == K_LAYER) {
        if ((st = translate_layer(K, j))) return st;
      } else if (n->nin && n->in[0] >= 0) {   /* a nested model's input or output */
        n->rank = K->n[n->in[0]].rank;
        snprintf(n->out, sizeof n->out, "%s", K->n[n->in[0]].out);
      } else {   /* the model input */
        n->rank = K->in_rank;
        snprintf(n->out, sizeof n->out, "input");
      }
      n = &K->n[j];
      n->done = true;
      left--;
      progress = true;
    }
    if (progress) continue;
    /* a cycle: from a node left, follow inputs left until one repeats */
    int j = 0;
    while (!(K->n[j].reached && !K->n[j].done)) j++;
    for (int steps = 0; steps <= K->nn; steps++) {
      int nx = -1;
      for (int k = 0; k < K->n[j].nin && nx < 0; k++)
        if (K->n[j].in[k] >= 0 && !K->n[K->n[j].in[k]].done) nx = K->n[j].in[k];
      j = nx;
    }
    int from = -1;
    for (int k = 0; k < K->n[j].nin && from < 0; k++)
      if (K->n[j].in[k] >= 0 && !K->n[K->n[j].in[k]].done) from = K->n[j].in[k];
    return kfail(K, j, "inbound_nodes", "a cycle: it takes its input from '%s' (%s), which depends on it; a model "
                 "must be a graph without cycles", K->n[from].name, K->n[from].cls);
  }
  return TPU_OK;
}

/* The native loss of a Keras loss (a name, or a Loss object), or NULL. */
static const char *native_loss(json_t *l) {
  const char *n = json_is_string(l) ? json_string_value(l) : str_or(json_object_get(l, "class_name"), "");
  static const char *const MAP[][2] = {
    { "categorical_crossentropy", "softmax_cross_entropy" }, { "CategoricalCrossentropy", "softmax_cross_entropy" },
    { "sparse_categorical_crossentropy", "softmax_cross_entropy" },
    { "SparseCategoricalCrossentropy", "softmax_cross_entropy" }, { "binary_crossentropy", "binary_cross_entropy" },
    { "BinaryCrossentropy", "binary_cross_entropy" }, { "mean_squared_error", "mean_squared_error" },
    { "mse", "mean_squared_error" }, { "MeanSquaredError", "mean_squared_error" } };
  for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++) if (!strcmp(n, MAP[i][0])) return MAP[i][1];
  return NULL;
}

/* compile_config of a model with several outputs: its losses (a list in
** output order, or an object by output name) and loss_weights (likewise)
** into the native "outputs"; a loss tpusim has not is noted, and that
** output keeps its head's. */
static void compile_outputs(fe_keras *K, json_t *loss, json_t *lw) {
  json_t *outs = json_object_get(K->native, "outputs");
  for (int q = 0; q < K->nouts; q++) {
    json_t *o = json_array_get(outs, (size_t)q);
    const char *name = K->n[K->outs[q]].name;
    json_t *lq = json_is_array(loss) ? json_array_get(loss, (size_t)q)
                 : json_is_object(loss) && !json_object_get(loss, "class_name") ? json_object_get(loss, name) : loss;
    json_t *wq = json_is_array(lw) ? json_array_get(lw, (size_t)q) : json_is_object(lw) ? json_object_get(lw, name) : NULL;
    const char *nl = lq && !json_is_null(lq) ? native_loss(lq) : NULL;
    if (nl) put(K, o, "loss", json_string(nl));
    else if (lq && !json_is_null(lq)) {
      char what[96];
      snprintf(what, sizeof what, "loss of output '%s'", name);
      note_kv(K, -1, what, lq, "its head's loss is used (docs/MODELS.md, \"Several outputs\")");
    }
    if (json_is_number(wq) && json_number_value(wq) >= 0) put(K, o, "weight", json_real(json_number_value(wq)));
    else if (wq && !json_is_null(wq)) note_kv(K, -1, "loss_weights", wq, "not a number >= 0: weight 1 is used");
  }
}

/* compile_config (Keras 3): the optimizer and the loss. */
static void compile_options(fe_keras *K, json_t *cc) {
  json_t *o = json_object_get(cc, "optimizer"), *v;
  const char *k;
  const char *const rest = "tpusim trains with its head's loss (softmax cross-entropy; binary cross-entropy for one "
                           "sigmoid unit) and the model's optimizer";
  if (o && !json_is_null(o)) {
    const char *cls = json_is_string(o) ? json_string_value(o) : str_or(json_object_get(o, "class_name"), "?");
    json_t *oc = json_object_get(o, "config");
    const bool adam = !strcasecmp(cls, "Adam"), sgd = !strcasecmp(cls, "SGD");
    json_t *opt = adam || sgd ? json_object() : NULL;
    if (!opt && (adam || sgd)) { oom(K); return; }
    json_t *lr = json_object_get(oc, "learning_rate");
    if (opt && lr && !json_is_number(lr)) {
      note_kv(K, -1, "optimizer learning_rate", lr, "a learning-rate schedule is not modelled: the default rate is used");
      lr = NULL;
    }
    if (adam) {
      put(K, opt, "type", json_string("adam"));
      if (lr) put(K, opt, "learning_rate", json_real(json_number_value(lr)));
      static const char *const ks[][2] = { { "beta_1", "beta1" }, { "beta_2", "beta2" }, { "epsilon", "epsilon" } };
      for (int i = 0; i < 3; i++)
        if (json_is_number(v = json_object_get(oc, ks[i][0]))) put(K, opt, ks[i][1], json_real(json_number_value(v)));
    } else if (sgd) {
      v = json_object_get(oc, "momentum");
      const bool mom = json_is_number(v) && json_number_value(v) > 0;
      put(K, opt, "type", json_string(mom ? "momentum" : "sgd"));
      if (lr) put(K, opt, "learning_rate", json_real(json_number_value(lr)));
      if (mom) put(K, opt, "momentum", json_real(json_number_value(v)));
      if (json_is_true(json_object_get(oc, "nesterov")))
        note(K, -1, "optimizer SGD nesterov true", "the momentum is not Nesterov's");
    } else {
      char what[128];
      snprintf(what, sizeof what, "optimizer %s", cls);
      note(K, -1, what, "the native default is used: adam, learning rate 0.001");
    }
    if (opt) {
      put(K, K->native, "optimizer", opt);
      snprintf(K->opt_path, sizeof K->opt_path, "compile_config.optimizer.config");
      json_object_foreach(oc, k, v) {   /* what the native optimizers lack */
        if (!strcmp(k, "name") || !strcmp(k, "learning_rate") || !strcmp(k, "beta_1") || !strcmp(k, "beta_2") ||
            !strcmp(k, "epsilon") || !strcmp(k, "momentum") || !strcmp(k, "nesterov") || json_is_null(v) ||
            json_is_false(v) || !strcmp(k, "ema_momentum") || !strcmp(k, "ema_overwrite_frequency"))
          continue;
        char what[96];
        snprintf(what, sizeof what, "optimizer %s", k);
        note_kv(K, -1, what, v, "not modelled by the native optimizer");
      }
    }
  }
  json_t *loss = json_object_get(cc, "loss");
  if (K->nouts > 1) compile_outputs(K, loss, json_object_get(cc, "loss_weights"));
  else if (loss && !json_is_null(loss)) {
    const char *ln = json_is_string(loss) ? json_string_value(loss)
                     : json_is_string(json_object_get(loss, "config")) ? json_string_value(json_object_get(loss, "config"))
                     : str_or(json_object_get(loss, "class_name"), "?");
    const bool xent = !strcmp(ln, "categorical_crossentropy") || !strcmp(ln, "sparse_categorical_crossentropy") ||
                      !strcmp(ln, "CategoricalCrossentropy") || !strcmp(ln, "SparseCategoricalCrossentropy") ||
                      !strcmp(ln, "binary_crossentropy") || !strcmp(ln, "BinaryCrossentropy");
    json_t *ls = json_object_get(json_object_get(loss, "config"), "label_smoothing");
    if (!xent) note_kv(K, -1, "loss", loss, rest);
    else if (json_is_number(ls) && json_number_value(ls) != 0)
      note_kv(K, -1, "loss label_smoothing", ls, "no label smoothing");
  }
  json_object_foreach(cc, k, v) {
    /* jit_compile, run_eagerly: on a TPU, XLA compiles the step anyway */
    if (!strcmp(k, "optimizer") || !strcmp(k, "loss") || !strcmp(k, "jit_compile") || !strcmp(k, "run_eagerly") ||
        (K->nouts > 1 && !strcmp(k, "loss_weights")) || json_is_null(v) || json_is_false(v))
      continue;
    if (!strcmp(k, "steps_per_execution") && json_is_integer(v) && json_integer_value(v) == 1) continue;
    if (!strcmp(k, "metrics") && json_is_array(v) && json_array_size(v) <= 1 &&
        (json_array_size(v) == 0 || !strcmp(str_or(json_array_get(v, 0), ""), "accuracy")))
      continue;
    char what[96];
    snprintf(what, sizeof what, "compile_config %s", k);
    note_kv(K, -1, what, v, "a setting of Keras' training loop, not modelled (tpusim reports loss and accuracy, "
            "one step per host call)");
  }
}
/* }================================================================== */

/* The native model's root: name, input, layers, the optimizer of a
** compile_config; what the file's root holds besides is noted. */
static void native_root(fe_keras *K, json_t *root) {
  json_t *cfg = json_object_get(root, "config"), *v;
  const char *k;
  put(K, K->native, "name", json_string(str_or(json_object_get(cfg, "name"), "model")));
  /* [N]; [L, C] as 1 x L x C; [H, W, C] */
  const int n = K->in_rank == 2 ? 1 : 3;
  const int dims[3] = { K->in_rank == 3 ? 1 : K->in_dims[0], K->in_rank == 3 ? K->in_dims[0] : K->in_dims[1],
                        K->in_rank == 3 ? K->in_dims[1] : K->in_dims[2] };
  json_t *in = json_array();
  for (int i = 0; in && i < n; i++)
    if (json_array_append_new(in, json_integer(dims[i]))) K->oom = true;
  put(K, K->native, "input", in);
  if (json_object_set(K->native, "layers", K->layers)) K->oom = true;
  if (K->nouts > 1) {   /* each output's loss its head's (docs/MODELS.md, "Several outputs"), weight 1 */
    json_t *outs = json_array();
    for (int q = 0; outs && q < K->nouts; q++) {
      json_t *o = json_object();
      if (!o || json_array_append_new(outs, o)) { K->oom = true; break; }
      put(K, o, "layer", json_string(K->n[K->outs[q]].out));
    }
    put(K, K->native, "outputs", outs);
  }
  if (json_is_false(json_object_get(cfg, "trainable"))) note(K, -1, "model trainable false", "every layer is trained");
  json_t *cc = json_object_get(root, "compile_config");
  if (json_is_object(cc)) compile_options(K, cc);
  else if (cc && !json_is_null(cc))   /* null: not compiled; anything else is listed, as other keys are */
    note_kv(K, -1, "compile_config", cc, "not an object (Keras 3 writes the compile arguments as one): not read");
  json_object_foreach(root, k, v) {
    static const char *const known[] = { "class_name", "config", "keras_version", "backend", "module",
                                         "registered_name", "build_config", "compile_config", NULL };
    bool ok = false;
    for (int q = 0; known[q] && !ok; q++) ok = !strcmp(known[q], k);
    if (ok) continue;
    char what[96];
    snprintf(what, sizeof what, "model option '%s'", k);
    note_kv(K, -1, what, v, "not modelled");
  }
}

bool fe_keras_is_keras(const json_t *root) {
  return json_is_object(root) && json_object_get(root, "class_name") != NULL;
}

tpu_status fe_keras_translate(tpu_json *kdoc, const char *input_shape, fe_keras **out) {
  *out = NULL;
  fe_keras *K = tpu_calloc(1, sizeof *K);
  if (!K) {
    snprintf(kdoc->err, kdoc->errcap, "%s: out of memory", kdoc->where);
    return TPU_ERR_NOMEM;
  }
  K->doc = kdoc;
  K->shape_arg = input_shape;
  K->fail_layer = -1;
  json_t *root = kdoc->root;
  const char *cls = str_or(json_object_get(root, "class_name"), "");
  const char *ver = str_or(json_object_get(root, "keras_version"), NULL);
  const char *module = str_or(json_object_get(root, "module"), NULL);
  tpu_status st;
  if (ver) snprintf(K->format, sizeof K->format, "Keras %s %s", ver, cls);
  else if (module) snprintf(K->format, sizeof K->format, "Keras 3 %s", cls);
  else snprintf(K->format, sizeof K->format, "Keras %s", cls);
  int nth = 0;
  if (ver && ver[0] == '1' && ver[1] == '.' && (st = fe_keras1_upgrade(kdoc, &nth))) goto fail;   /* keras1.c */
  if (nth)
    note(K, -1, "dim_ordering th", "read channels last: the same shapes and counts, a Flatten's features in "
         "H,W,C order");
  if (!is_model_class(cls)) {
    st = tpu_json_fail(kdoc, "class_name", "class_name '%s': expected a Keras model (Sequential or Functional) as "
                       "model.to_json() writes it", cls);
    goto fail;
  }
  if ((st = check_classes(K, root, "", 0)) || (st = refuse_classes(K))) goto fail;
  if (!(K->native = json_object()) || !(K->layers = json_array())) { st = oom(K); goto fail; }
  int outn = -1;
  /* paths start with '.' (".config.layers[3]"): tpu_json_locate skips it */
  if ((st = build_model(K, root, "", true, 0, NULL, &outn, 0))) goto fail;
  if (!K->have_input) { st = tpu_json_fail(kdoc, "config", "the model has no input"); goto fail; }
  /* native names: the Keras names where they fit, first come first served */
  for (int j = 0; j < K->nn; j++)
    if (K->n[j].kind == K_LAYER && (st = give_name(K, K->n[j].name, K->n[j].nat))) goto fail;
  if (K->nouts < 2) K->outs[0] = outn, K->nouts = 1;   /* a Sequential's, or the one output */
  if ((st = reach(K, K->nouts, K->outs)) || (st = walk(K))) goto fail;
  native_root(K, root);
  if (K->oom) { st = oom(K); goto fail; }
  *out = K;
  return TPU_OK;
fail:
  fe_keras_free(K);
  return st;
}

json_t *fe_keras_native(const fe_keras *k) { return k->native; }

/* The shape a node's output has in the translated model m: the model input,
** or the native layer it names. false when none is found. */
static bool node_shape(const knode *n, const tpu_fe_model *m, tpu_fe_shape *out) {
  if (!strcmp(n->out, "input")) { *out = m->input; return true; }
  for (int i = 0; i < m->nlayers; i++)
    if (!strcmp(m->layers[i].name, n->out)) { *out = m->layers[i].out; return true; }
  return false;
}

tpu_status fe_keras_check_inputs(const fe_keras *K, const tpu_fe_model *m) {
  for (int j = 0; j < K->nn; j++) {
    const knode *n = &K->n[j];
    if (n->kind != K_INPUT || !n->reached || !n->nin || n->in[0] < 0) continue;   /* a nested model's input */
    const char *key = json_object_get(n->cfg, "batch_shape") ? "batch_shape" : "batch_input_shape";
    json_t *s = json_object_get(n->cfg, key);
    const size_t r = json_is_array(s) ? json_array_size(s) - 1 : 0;   /* the batch dimension aside */
    tpu_fe_shape got;
    if ((r != 1 && r != 3) || !node_shape(n, m, &got)) continue;
    const int have[3] = { got.h, got.w, got.c };
    const int flat = got.h * got.w * got.c;
    bool same = true;
    char decl[96] = "[", *p = decl + 1;
    for (size_t k = 0; k < r; k++) {
      json_t *d = json_array_get(s, k + 1);
      const long long v = json_is_integer(d) ? (long long)json_integer_value(d) : -1;
      same &= v < 0 || v == (r == 1 ? flat : have[k]);
      p += snprintf(p, sizeof decl - (size_t)(p - decl), "%s%s", k ? ", " : "", v < 0 ? "None" : "");
      if (v >= 0) p += snprintf(p, sizeof decl - (size_t)(p - decl), "%lld", v);
    }
    snprintf(p, sizeof decl - (size_t)(p - decl), "]");
    if (same) continue;
    char path[KPATH + 32], shp[48];
    snprintf(path, sizeof path, "%s.config.%s", n->path, key);
    return tpu_json_fail(K->doc, path, "layer '%s' (InputLayer) of a nested model declares the input shape %s; it is "
                         "fed %s (the output of %s)", n->name, decl, tpu_fe_shape_str(got, shp, sizeof shp),
                         strcmp(n->out, "input") ? n->out : "the model input");
  }
  return TPU_OK;
}

/* Native field -> Keras config key. */
static const char *keras_key(const char *f) {
  static const char *const MAP[][2] = { { "kernel", "kernel_size" }, { "stride", "strides" }, { "size", "pool_size" },
                                        { "type", "class_name" }, { "inputs", "inbound_nodes" } };
  for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++) if (!strcmp(MAP[i][0], f)) return MAP[i][1];
  return f;
}

const char *fe_keras_map_path(void *ud, const char *path, char *buf, size_t cap) {
  fe_keras *K = ud;
  int i;
  char f[64] = "";
  if (sscanf(path, "layers[%d]", &i) == 1 && i >= 0 && i < K->nsrc) {
    K->fail_layer = i;
    const knode *n = &K->n[K->src[i]];
    const char *dot = strchr(path, '.');
    if (dot) snprintf(f, sizeof f, "%s", dot + 1);
    char *e = strpbrk(f, ".[");
    if (e) *e = '\0';
    if (!*f) snprintf(buf, cap, "%s", n->path);
    else if (!strcmp(f, "type") || !strcmp(f, "inputs")) snprintf(buf, cap, "%s.%s", n->path, keras_key(f));
    else snprintf(buf, cap, "%s.config.%s", n->path, keras_key(f));
  } else if (sscanf(path, "outputs[%d]", &i) == 1 && i >= 0 && i < K->nouts) {   /* an output: its layer */
    snprintf(buf, cap, "%s", K->n[K->outs[i]].path);
  } else if (!strcmp(path, "layers")) snprintf(buf, cap, "%s", K->layers_path);
  else if (!strncmp(path, "input", 5)) snprintf(buf, cap, "%s", K->in_path);
  else if (!strncmp(path, "optimizer", 9)) snprintf(buf, cap, "%s", K->opt_path);
  else if (!strcmp(path, "name")) snprintf(buf, cap, "config.name");
  else snprintf(buf, cap, "%s", "");
  return buf[0] == '.' ? buf + 1 : buf;
}

void fe_keras_explain(const fe_keras *K, const char *where, char *err, size_t errcap) {
  if (K->fail_layer < 0 || !err || !errcap) return;
  const knode *n = &K->n[K->src[K->fail_layer]];
  const size_t wl = strlen(where);
  if (strncmp(err, where, wl)) return;
  const char *p = err + wl;
  for (int k = 0; k < 2 && *p == ':' && isdigit((unsigned char)p[1]); k++)
    for (p++; isdigit((unsigned char)*p); p++) {}
  if (strncmp(p, ": ", 2)) return;
  p += 2;
  char ins[2 * KPATH], rest[1024];
  snprintf(ins, sizeof ins, "Keras layer '%s' (%s), translated to ", n->name, n->cls);
  snprintf(rest, sizeof rest, "%s", p);
  const size_t at = (size_t)(p - err);
  snprintf(err + at, errcap - at, "%s%s", ins, rest);
}

tpu_status fe_keras_notes(const fe_keras *K, tpu_fe_model_notes *notes) {
  memset(notes, 0, sizeof *notes);
  snprintf(notes->format, sizeof notes->format, "%s", K->format);
  tpu_text t = { 0 };
  for (int i = 0; i < K->nnotes; i++) {
    const knote *o = &K->notes[i];
    if (o->names[0])
      tpu_text_printf(&t, "%s: %d layer%s (%s): %s\n", o->what, o->count, o->count == 1 ? "" : "s", o->names, o->why);
    else tpu_text_printf(&t, "%s: %s\n", o->what, o->why);
  }
  if (t.oom) { tpu_free(t.s); return TPU_ERR_NOMEM; }
  notes->ignored = t.s;
  notes->nignored = K->nnotes;
  return TPU_OK;
}

void fe_keras_free(fe_keras *K) {
  if (!K) return;
  json_decref(K->native);
  json_decref(K->layers);
  void *const arrays[] = { K->n, K->src, K->names, K->tab, K->notes, K };
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) tpu_free(arrays[i]);
}
