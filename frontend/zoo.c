/*
** zoo.c -- the model zoo: built-in networks written out as native model
** JSON (docs/MODELS.md) for an input shape and a class count, the knobs of
** Keras applications. A zoo name is NAME[@HxWxC][:CLASSES], e.g.
** "vgg19@192x192x3:5"; without them the network's published input
** (224x224x3) and 1000 classes. The JSON then goes through the one loader
** (model.c), so shapes are checked and inferred there.
**
**   vgg16, vgg19  Keras applications' VGG16 / VGG19 with include_top: conv
**                 blocks of 3x3 'same' relu convolutions, each closed by a
**                 2x2 maxpool; flatten, fc1 4096 relu, fc2 4096 relu,
**                 predictions (softmax).
**   alexnet       torchvision's AlexNet (Krizhevsky's "One weird trick"
**                 single-column variant, 2014): 61,100,840 parameters at
**                 224x224x3, 1000 classes. Its adaptive 6x6 average pool is
**                 the identity at 224x224 and is left out.
**   xception      Keras applications' Xception (default input 299x299x3):
**                 entry, middle (8 blocks) and exit flows of
**                 separable_conv2d + batch_normalization with 1x1 stride-2
**                 residual convs; Keras' layer names (its automatic ones,
**                 conv2d_1, batch_normalization_1, add_1, for the unnamed).
**   mobilenetv2   Keras applications' MobileNetV2, alpha 1.0: inverted
**                 residual blocks (1x1 expand, 3x3 depthwise, 1x1 project,
**                 batch_normalization momentum 0.999, relu capped at 6),
**                 stride-2 depthwise convs after Keras' correct_pad zero
**                 padding, which follows the input size.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe.h"

static const char *const ZOO_NAMES[] = { "alexnet", "vgg16", "vgg19",
  "xception",
  "mobilenetv2",
  NULL };
const char *const *tpu_fe_model_zoo_names(void) { return ZOO_NAMES; }

static void conv(tpu_text *t, const char *name, int filters, int k, int stride, const char *pad) {
  tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"%s\", \"filters\": %d, \"kernel\": %d, \"stride\": %d, "
                  "\"padding\": \"%s\", \"activation\": \"relu\" },\n", name, filters, k, stride, pad);
}
static void dense(tpu_text *t, const char *name, int units, const char *act) {
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"%s\", \"units\": %d, \"activation\": \"%s\" },\n",
                  name, units, act);
}

/* Keras' VGG: blocks of convs per block ('per'), 64..512 filters. */
static void vgg(tpu_text *t, const int per[5], int classes) {
  char nm[32];
  for (int b = 0; b < 5; b++) {
    const int f = b < 4 ? 64 << b : 512;
    for (int k = 0; k < per[b]; k++) {
      snprintf(nm, sizeof nm, "block%d_conv%d", b + 1, k + 1);
      conv(t, nm, f, 3, 1, "same");
    }
    tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"block%d_pool\", \"size\": 2 },\n", b + 1);
  }
  tpu_text_printf(t, "    { \"type\": \"flatten\", \"name\": \"flatten\" },\n");
  dense(t, "fc1", 4096, "relu");
  dense(t, "fc2", 4096, "relu");
  dense(t, "predictions", classes, "softmax");
}

/* torchvision's AlexNet. */
static void alexnet(tpu_text *t, int classes) {
  tpu_text_printf(t, "    { \"type\": \"zero_padding\", \"name\": \"pad1\", \"padding\": 2 },\n");
  conv(t, "conv1", 64, 11, 4, "valid");
  tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"pool1\", \"size\": 3, \"stride\": 2 },\n");
  conv(t, "conv2", 192, 5, 1, "same");
  tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"pool2\", \"size\": 3, \"stride\": 2 },\n");
  conv(t, "conv3", 384, 3, 1, "same");
  conv(t, "conv4", 256, 3, 1, "same");
  conv(t, "conv5", 256, 3, 1, "same");
  tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"pool5\", \"size\": 3, \"stride\": 2 },\n");
  tpu_text_printf(t, "    { \"type\": \"flatten\", \"name\": \"flatten\" },\n"
                     "    { \"type\": \"dropout\", \"name\": \"drop1\", \"rate\": 0.5 },\n");
  dense(t, "fc1", 4096, "relu");
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"drop2\", \"rate\": 0.5 },\n");
  dense(t, "fc2", 4096, "relu");
  dense(t, "predictions", classes, "softmax");
}

/* {==================================================================
** Xception and MobileNetV2 (Keras applications): graphs of named layers
** ================================================================== */
/* batch_normalization 'name' (momentum: Keras' default 0.99 when 0) */
static void xm_bn(tpu_text *t, const char *name, double momentum) {
  if (momentum > 0)
    tpu_text_printf(t, "    { \"type\": \"batch_normalization\", \"name\": \"%s\", \"momentum\": %g },\n", name,
                    momentum);
  else tpu_text_printf(t, "    { \"type\": \"batch_normalization\", \"name\": \"%s\" },\n", name);
}
/* relu 'name' reading 'in' (NULL: the layer before), capped when max > 0 */
static void xm_relu(tpu_text *t, const char *name, const char *in, double max) {
  tpu_text_printf(t, "    { \"type\": \"relu\", \"name\": \"%s\"", name);
  if (in) tpu_text_printf(t, ", \"inputs\": \"%s\"", in);
  if (max > 0) tpu_text_printf(t, ", \"max_value\": %g", max);
  tpu_text_printf(t, " },\n");
}
/* a convolution without bias: 'type' conv2d (filters), separable_conv2d
** (filters) or depthwise_conv2d (filters 0), reading 'in' (NULL: the layer
** before) */
static void xm_conv(tpu_text *t, const char *type, const char *name, const char *in, int filters, int k, int stride,
                    const char *pad) {
  tpu_text_printf(t, "    { \"type\": \"%s\", \"name\": \"%s\"", type, name);
  if (in) tpu_text_printf(t, ", \"inputs\": \"%s\"", in);
  if (filters) tpu_text_printf(t, ", \"filters\": %d", filters);
  tpu_text_printf(t, ", \"kernel\": %d, \"stride\": %d, \"padding\": \"%s\", \"use_bias\": false },\n", k,
                  stride, pad);
}
static void xm_add(tpu_text *t, const char *name, const char *a, const char *b) {
  tpu_text_printf(t, "    { \"type\": \"add\", \"name\": \"%s\", \"inputs\": [\"%s\", \"%s\"] },\n", name, a, b);
}
/* Keras' automatic name of the n-th (0-based) unnamed layer of a kind:
** "add", "add_1", ... */
static const char *xm_auto(char *buf, size_t cap, const char *kind, int n) {
  if (n) snprintf(buf, cap, "%s_%d", kind, n);
  else snprintf(buf, cap, "%s", kind);
  return buf;
}

/* Keras' Xception. The stride-2 residual of blocks 2-4 and 13 is a 1x1
** conv2d + batch_normalization off the block's input, added to the block's
** 3x3/2 'same' maxpool; the middle flow adds its input back. */
static void xception(tpu_text *t, int classes) {
  char prev[32], a[32], b[32], c[32], p[32];
  int nres = 0, nadd = 0;
  xm_conv(t, "conv2d", "block1_conv1", NULL, 32, 3, 2, "valid");
  xm_bn(t, "block1_conv1_bn", 0);
  xm_relu(t, "block1_conv1_act", NULL, 0);
  xm_conv(t, "conv2d", "block1_conv2", NULL, 64, 3, 1, "valid");
  xm_bn(t, "block1_conv2_bn", 0);
  xm_relu(t, "block1_conv2_act", NULL, 0);
  snprintf(prev, sizeof prev, "block1_conv2_act");
  static const int BLOCKS[][3] = { { 2, 128, 128 }, { 3, 256, 256 }, { 4, 728, 728 }, { 13, 728, 1024 } };
  for (int k = 0; k < 4; k++) {
    const int bl = BLOCKS[k][0];
    if (k == 3)   /* the middle flow: three relu + separable + batch_normalization, added to its input */
      for (int mb = 5; mb <= 12; mb++) {
        for (int j = 1; j <= 3; j++) {
          snprintf(a, sizeof a, "block%d_sepconv%d_act", mb, j);
          xm_relu(t, a, j == 1 ? prev : NULL, 0);
          snprintf(a, sizeof a, "block%d_sepconv%d", mb, j);
          xm_conv(t, "separable_conv2d", a, NULL, 728, 3, 1, "same");
          snprintf(a, sizeof a, "block%d_sepconv%d_bn", mb, j);
          xm_bn(t, a, 0);
        }
        xm_add(t, xm_auto(b, sizeof b, "add", nadd++), a, prev);
        snprintf(prev, sizeof prev, "%s", b);
      }
    xm_conv(t, "conv2d", xm_auto(a, sizeof a, "conv2d", nres), prev, BLOCKS[k][2], 1, 2, "same");
    xm_bn(t, xm_auto(c, sizeof c, "batch_normalization", nres++), 0);
    for (int j = 1; j <= 2; j++) {
      snprintf(a, sizeof a, "block%d_sepconv%d_act", bl, j);
      if (j == 2 || bl != 2) xm_relu(t, a, j == 1 ? prev : NULL, 0);   /* block 2 starts from an activation */
      snprintf(a, sizeof a, "block%d_sepconv%d", bl, j);
      xm_conv(t, "separable_conv2d", a, j == 1 && bl == 2 ? prev : NULL, BLOCKS[k][j], 3, 1, "same");
      snprintf(a, sizeof a, "block%d_sepconv%d_bn", bl, j);
      xm_bn(t, a, 0);
    }
    snprintf(p, sizeof p, "block%d_pool", bl);
    tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"%s\", \"size\": 3, \"stride\": 2, "
                    "\"padding\": \"same\" },\n", p);
    xm_add(t, xm_auto(b, sizeof b, "add", nadd++), p, c);
    snprintf(prev, sizeof prev, "%s", b);
  }
  static const int EXIT[2] = { 1536, 2048 };
  for (int j = 1; j <= 2; j++) {
    snprintf(a, sizeof a, "block14_sepconv%d", j);
    xm_conv(t, "separable_conv2d", a, NULL, EXIT[j - 1], 3, 1, "same");
    snprintf(a, sizeof a, "block14_sepconv%d_bn", j);
    xm_bn(t, a, 0);
    snprintf(a, sizeof a, "block14_sepconv%d_act", j);
    xm_relu(t, a, NULL, 0);
  }
  tpu_text_printf(t, "    { \"type\": \"global_avgpool\", \"name\": \"avg_pool\" },\n");
  dense(t, "predictions", classes, "softmax");
}

/* Keras' MobileNetV2 (alpha 1.0) on an h x w input: its 17 inverted
** residual blocks (filters, stride, expansion) and Keras' layer names. */
static void mobilenetv2(tpu_text *t, int h, int w, int classes) {
  static const int CFG[17][3] = { { 16, 1, 1 }, { 24, 2, 6 }, { 24, 1, 6 }, { 32, 2, 6 }, { 32, 1, 6 }, { 32, 1, 6 },
                                  { 64, 2, 6 }, { 64, 1, 6 }, { 64, 1, 6 }, { 64, 1, 6 }, { 96, 1, 6 }, { 96, 1, 6 },
                                  { 96, 1, 6 }, { 160, 2, 6 }, { 160, 1, 6 }, { 160, 1, 6 }, { 320, 1, 6 } };
  const double MOM = 0.999;
  char pre[32], a[48], in[48];
  xm_conv(t, "conv2d", "Conv1", NULL, 32, 3, 2, "same");
  xm_bn(t, "bn_Conv1", MOM);
  xm_relu(t, "Conv1_relu", NULL, 6);
  h = (h + 1) / 2;
  w = (w + 1) / 2;
  snprintf(in, sizeof in, "Conv1_relu");
  int cin = 32;
  for (int id = 0; id < 17; id++) {
    const int f = CFG[id][0], st = CFG[id][1], e = CFG[id][2];   /* filters are multiples of 8 already */
    if (id) snprintf(pre, sizeof pre, "block_%d_", id);
    else snprintf(pre, sizeof pre, "expanded_conv_");
    if (id) {
      snprintf(a, sizeof a, "%sexpand", pre);
      xm_conv(t, "conv2d", a, NULL, e * cin, 1, 1, "same");
      snprintf(a, sizeof a, "%sexpand_BN", pre);
      xm_bn(t, a, MOM);
      snprintf(a, sizeof a, "%sexpand_relu", pre);
      xm_relu(t, a, NULL, 6);
    }
    if (st == 2) {   /* correct_pad(x, 3): ((h%2, 1), (w%2, 1)) before a 'valid' 3x3/2 */
      tpu_text_printf(t, "    { \"type\": \"zero_padding\", \"name\": \"%spad\", \"padding\": [[%d, 1], [%d, 1]] },\n",
                      pre, h % 2, w % 2);
      h = (h + 1) / 2;
      w = (w + 1) / 2;
    }
    snprintf(a, sizeof a, "%sdepthwise", pre);
    xm_conv(t, "depthwise_conv2d", a, NULL, 0, 3, st, st == 1 ? "same" : "valid");
    snprintf(a, sizeof a, "%sdepthwise_BN", pre);
    xm_bn(t, a, MOM);
    snprintf(a, sizeof a, "%sdepthwise_relu", pre);
    xm_relu(t, a, NULL, 6);
    snprintf(a, sizeof a, "%sproject", pre);
    xm_conv(t, "conv2d", a, NULL, f, 1, 1, "same");
    snprintf(a, sizeof a, "%sproject_BN", pre);
    xm_bn(t, a, MOM);
    if (cin == f && st == 1) {
      char s[48];
      snprintf(s, sizeof s, "%sadd", pre);
      xm_add(t, s, in, a);
      snprintf(in, sizeof in, "%s", s);
    } else {
      snprintf(in, sizeof in, "%s", a);
    }
    cin = f;
  }
  xm_conv(t, "conv2d", "Conv_1", NULL, 1280, 1, 1, "valid");
  xm_bn(t, "Conv_1_bn", MOM);
  xm_relu(t, "out_relu", NULL, 6);
  tpu_text_printf(t, "    { \"type\": \"global_avgpool\", \"name\": \"global_average_pooling2d\" },\n");
  dense(t, "predictions", classes, "softmax");
}
/* }================================================================== */

/* Parses "[@HxWxC][:CLASSES]" after a zoo name. */
static bool parse_knobs(const char *s, int *h, int *w, int *c, int *classes) {
  char *e;
  if (*s == '@') {
    long v[3];
    s++;
    for (int k = 0; k < 3; k++) {
      if (*s < '0' || *s > '9') return false;
      v[k] = strtol(s, &e, 10);
      if (v[k] < 1 || v[k] > 65536 || (k < 2 && *e != 'x')) return false;
      s = k < 2 ? e + 1 : e;
    }
    *h = (int)v[0]; *w = (int)v[1]; *c = (int)v[2];
  }
  if (*s == ':') {
    if (s[1] < '0' || s[1] > '9') return false;
    long v = strtol(s + 1, &e, 10);
    if (v < 1 || v > 1 << 20) return false;
    *classes = (int)v;
    s = e;
  }
  return *s == '\0';
}

tpu_status tpu_fe_model_zoo_json(const char *spec, char **json, char *err, size_t errcap) {
  *json = NULL;
  int z = -1;
  size_t nl = 0;
  for (int k = 0; ZOO_NAMES[k]; k++) {
    const size_t n = strlen(ZOO_NAMES[k]);
    if (!strncmp(spec, ZOO_NAMES[k], n) && (spec[n] == '\0' || spec[n] == '@' || spec[n] == ':')) { z = k; nl = n; }
  }
  if (z < 0) return TPU_OK;
  int h = 224, w = 224, c = 3, classes = 1000;
  if (!strcmp(ZOO_NAMES[z], "xception")) h = w = 299;
  if (!parse_knobs(spec + nl, &h, &w, &c, &classes)) {
    snprintf(err, errcap, "%s: a zoo model is NAME[@HxWxC][:CLASSES], e.g. %s@192x192x3:5 (height, width and "
             "channels 1..65536, classes 1..1048576)", spec, ZOO_NAMES[z]);
    return TPU_ERR_CONFIG;
  }
  tpu_text t = { 0 };
  tpu_text_printf(&t, "{\n  \"name\": \"%.63s\",\n  \"input\": [%d, %d, %d],\n  \"layers\": [\n", spec, h, w, c);
  if (!strcmp(ZOO_NAMES[z], "alexnet")) alexnet(&t, classes);
  else if (!strcmp(ZOO_NAMES[z], "xception")) xception(&t, classes);
  else if (!strcmp(ZOO_NAMES[z], "mobilenetv2")) mobilenetv2(&t, h, w, classes);
  else vgg(&t, !strcmp(ZOO_NAMES[z], "vgg16") ? (const int[5]){ 2, 2, 3, 3, 3 } : (const int[5]){ 2, 2, 4, 4, 4 },
           classes);
  if (!t.oom) t.n -= 2;   /* the last layer's ",\n" */
  tpu_text_printf(&t, "\n  ],\n  \"loss\": \"softmax_cross_entropy\",\n"
                  "  \"optimizer\": { \"type\": \"adam\", \"learning_rate\": 0.001 },\n  \"seed\": 1\n}\n");
  if (t.oom) {
    tpu_free(t.s);
    snprintf(err, errcap, "out of memory");
    return TPU_ERR_NOMEM;
  }
  *json = t.s;
  return TPU_OK;
}
