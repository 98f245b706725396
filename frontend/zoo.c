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
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe.h"

static const char *const ZOO_NAMES[] = { "alexnet", "vgg16", "vgg19", NULL };
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
  if (!parse_knobs(spec + nl, &h, &w, &c, &classes)) {
    snprintf(err, errcap, "%s: a zoo model is NAME[@HxWxC][:CLASSES], e.g. %s@192x192x3:5 (height, width and "
             "channels 1..65536, classes 1..1048576)", spec, ZOO_NAMES[z]);
    return TPU_ERR_CONFIG;
  }
  tpu_text t = { 0 };
  tpu_text_printf(&t, "{\n  \"name\": \"%.63s\",\n  \"input\": [%d, %d, %d],\n  \"layers\": [\n", spec, h, w, c);
  if (!strcmp(ZOO_NAMES[z], "alexnet")) alexnet(&t, classes);
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
