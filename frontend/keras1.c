/*
** keras1.c -- Keras 1 files (keras_version 1.x) brought to the Keras 2
** form keras.c reads, as Keras 2's own legacy converter does
** (keras/legacy/interfaces.py: the legacy_*_support decorators rename the
** Keras 1 arguments of each layer; Convolution2D became Conv2D, Merge the
** merge layers). docs/MODELS.md, "Keras 1 files".
**
** What changes, in place in the parsed document, before keras.c reads it:
** - classes: Convolution2D -> Conv2D, SeparableConvolution2D ->
**   SeparableConv2D, Merge(mode "concat") -> Concatenate (its concat_axis the
**   axis), Merge(mode "sum") -> Add; other modes, and a Merge of models
**   (Keras 1's Sequential branches), stay Merge and are refused as a class;
** - options: nb_filter -> filters, nb_row and nb_col -> kernel_size,
**   subsample -> strides, border_mode -> padding, bias -> use_bias,
**   output_dim -> units, p -> rate (Dropout), init -> kernel_initializer,
**   W_/b_regularizer and _constraint -> kernel_/bias_, dim_ordering ->
**   data_format, a first Dense's input_dim -> batch_input_shape [null, N];
**   BatchNormalization's mode must be 0 (1 and 2 normalize per sample);
** - calls: Keras 1.0's 3-element inbound nodes [layer, node, tensor] get
**   Keras 2's empty kwargs;
** - dim_ordering "th" (channels first): tpusim stores activations channels
**   last, so a model whose layers order their images channels first is
**   translated to the same model channels last, as Keras 2 itself runs a
**   converted Theano model on TensorFlow: each 4-D batch_input_shape
**   [N, C, H, W] becomes [N, H, W, C] and a channel axis 1
**   (BatchNormalization's axis, a Merge's concat_axis) becomes -1. The
**   architecture, its shapes (channels last) and its parameter count are
**   the same; only a Flatten's feature order differs (C,H,W against
**   H,W,C), which changes nothing without weights (keras.c notes it).
*/
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "frontend/fe_int.h"

/* Paths are built into fixed buffers; one too long is cut short, which is
** harmless (it only positions a message). */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* Renames key 'from' to 'to' in obj (when present); -1 when out of memory. */
static int rename_key(json_t *obj, const char *from, const char *to) {
  json_t *v = json_object_get(obj, from);
  if (!v) return 0;
  if (json_object_set(obj, to, v)) return -1;
  return json_object_del(obj, from);
}

static const char *str_of(json_t *v) { return json_is_string(v) ? json_string_value(v) : ""; }

/* The options of one layer's config c; -1 when out of memory. */
static int layer_options(json_t *c, bool th, int *nth) {
  static const char *const REN[][2] = {
    { "nb_filter", "filters" }, { "subsample", "strides" }, { "border_mode", "padding" }, { "bias", "use_bias" },
    { "output_dim", "units" }, { "init", "kernel_initializer" }, { "W_regularizer", "kernel_regularizer" },
    { "b_regularizer", "bias_regularizer" }, { "W_constraint", "kernel_constraint" },
    { "b_constraint", "bias_constraint" } };
  for (size_t k = 0; k < sizeof REN / sizeof REN[0]; k++)
    if (rename_key(c, REN[k][0], REN[k][1])) return -1;
  json_t *r = json_object_get(c, "nb_row"), *cl = json_object_get(c, "nb_col");
  if (r && cl) {
    if (json_object_set_new(c, "kernel_size", json_pack("[OO]", r, cl))) return -1;
    json_object_del(c, "nb_row");
    json_object_del(c, "nb_col");
  }
  json_t *d = json_object_get(c, "dim_ordering");
  if (d) {
    if (!strcmp(str_of(d), "th")) ++*nth;
    if (json_object_set_new(c, "data_format", json_string("channels_last"))) return -1;
    json_object_del(c, "dim_ordering");
  }
  json_t *s = json_object_get(c, "batch_input_shape");
  if (th && json_is_array(s) && json_array_size(s) == 4) {   /* [N, C, H, W] -> [N, H, W, C] */
    json_t *p = json_pack("[OOOO]", json_array_get(s, 0), json_array_get(s, 2), json_array_get(s, 3),
                          json_array_get(s, 1));
    if (!p || json_object_set_new(c, "batch_input_shape", p)) return -1;
  }
  return 0;
}

/* Whether any layer config of the file says dim_ordering "th". */
static bool any_th(json_t *v, int depth) {
  if (depth > 64) return false;
  if (json_is_object(v)) {
    if (!strcmp(str_of(json_object_get(v, "dim_ordering")), "th")) return true;
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e) if (any_th(e, depth + 1)) return true;
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) if (any_th(json_array_get(v, i), depth + 1)) return true;
  }
  return false;
}

/* One layer object l (class and config); 'path' names it for messages. */
static tpu_status layer(tpu_json *doc, json_t *l, const char *path, bool th, int *nth) {
  json_t *c = json_object_get(l, "config"), *cls = json_object_get(l, "class_name");
  if (!json_is_object(c) || !json_is_string(cls)) return TPU_OK;   /* keras.c says what a layer must be */
  const char *cn = json_string_value(cls), *to = NULL;
  if (!strcmp(cn, "Convolution2D")) to = "Conv2D";
  else if (!strcmp(cn, "SeparableConvolution2D")) to = "SeparableConv2D";
  else if (!strcmp(cn, "Merge") && !json_object_get(c, "layers")) {
    const char *mode = str_of(json_object_get(c, "mode"));
    to = !strcmp(mode, "concat") ? "Concatenate" : !strcmp(mode, "sum") ? "Add" : NULL;
    if (to && !strcmp(to, "Concatenate")) {
      json_t *ax = json_object_get(c, "concat_axis");
      json_int_t a = json_is_integer(ax) ? json_integer_value(ax) : -1;
      if (th && a == 1) a = -1;   /* the channels, channels last */
      if (json_object_set_new(c, "axis", json_integer(a))) return TPU_ERR_NOMEM;
      json_object_del(c, "concat_axis");
    }
    json_object_del(c, "mode");
  }
  if (to && json_object_set_new(l, "class_name", json_string(to))) return TPU_ERR_NOMEM;
  cn = json_string_value(json_object_get(l, "class_name"));
  if (!strcmp(cn, "Dropout") && rename_key(c, "p", "rate")) return TPU_ERR_NOMEM;
  if (!strcmp(cn, "BatchNormalization")) {
    json_t *mode = json_object_get(c, "mode");
    if (mode && !(json_is_integer(mode) && json_integer_value(mode) == 0))
      return tpu_json_fail(doc, path, "layer '%s' (BatchNormalization): Keras 1's mode %s normalizes each sample; "
                           "only mode 0 (feature-wise, as Keras 2) is supported",
                           str_of(json_object_get(c, "name")), json_is_integer(mode) ? "1 or 2" : "(not 0)");
    json_object_del(c, "mode");
    json_t *ax = json_object_get(c, "axis");
    if (th && json_is_integer(ax) && json_integer_value(ax) == 1 && json_object_set_new(c, "axis", json_integer(-1)))
      return TPU_ERR_NOMEM;
  }
  return layer_options(c, th, nth) ? TPU_ERR_NOMEM : TPU_OK;
}

/* Keras 1.0's 3-element inbound nodes get Keras 2's kwargs. */
static tpu_status inbound(json_t *l) {
  json_t *calls = json_object_get(l, "inbound_nodes");
  for (size_t i = 0; i < json_array_size(calls); i++) {
    json_t *call = json_array_get(calls, i);
    for (size_t j = 0; j < json_array_size(call); j++) {
      json_t *ref = json_array_get(call, j);
      if (json_is_array(ref) && json_array_size(ref) == 3 && json_array_append_new(ref, json_object()))
        return TPU_ERR_NOMEM;
    }
  }
  return TPU_OK;
}

static tpu_status model(tpu_json *doc, json_t *m, const char *path, bool th, int *nth, int depth) {
  json_t *cfg = json_object_get(m, "config");
  json_t *layers = json_is_array(cfg) ? cfg : json_object_get(cfg, "layers");
  if (depth > 8) return TPU_OK;   /* keras.c refuses the nesting */
  for (size_t i = 0; i < json_array_size(layers); i++) {
    json_t *l = json_array_get(layers, i);
    char lp[192];
    snprintf(lp, sizeof lp, "%s.config%s[%zu]", path, json_is_array(cfg) ? "" : ".layers", i);
    const char *cn = str_of(json_object_get(l, "class_name"));
    tpu_status st = !strcmp(cn, "Sequential") || !strcmp(cn, "Model") ? model(doc, l, lp, th, nth, depth + 1)
                  : layer(doc, l, lp, th, nth);
    if (!st) st = inbound(l);
    /* a first Dense's input_dim is the model's input */
    json_t *c = json_object_get(l, "config"), *dim = json_object_get(c, "input_dim");
    if (!st && i == 0 && json_is_integer(dim) && !json_object_get(c, "batch_input_shape") &&
        json_object_set_new(c, "batch_input_shape", json_pack("[nO]", dim)))
      st = TPU_ERR_NOMEM;
    if (!st && dim) json_object_del(c, "input_dim");
    if (st) return st;
  }
  return TPU_OK;
}

tpu_status fe_keras1_upgrade(tpu_json *doc, int *nth) {
  *nth = 0;
  const bool th = any_th(doc->root, 0);
  const unsigned long failed = tpu_alloc_failures();
  tpu_status st = model(doc, doc->root, "", th, nth, 0);
  if (st == TPU_ERR_NOMEM || tpu_alloc_failures() != failed) {
    snprintf(doc->err, doc->errcap, "%s: out of memory", doc->where);
    doc->failed = true;
    return TPU_ERR_NOMEM;
  }
  return st;
}
