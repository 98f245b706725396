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
**   efficientnetb0  Keras applications' EfficientNetB0 (efficientnet.py,
**                 weights="imagenet" as its default: rescaling 1/255,
**                 normalization (adapted: 7 non-trainable parameters), the
**                 second rescaling by 1/sqrt(stddev)), the stem conv 3x3/2
**                 after correct_pad, 16 MBConv blocks (1x1 expand, BN,
**                 swish; correct_pad and a 'valid' depthwise when stride
**                 2, else 'same'; BN, swish; squeeze-and-excite: global
**                 average, reshape 1x1xC, 1x1 conv swish, 1x1 conv sigmoid,
**                 multiply; 1x1 project, BN; dropout 0.2*b/16 and add when
**                 the block keeps its shape), the top 1x1 conv 1280, BN,
**                 swish, average, dropout 0.2, predictions: 5,330,571
**                 parameters at 224x224x3, 1000 classes. The blocks'
**                 dropout drops whole samples (Keras' noise_shape (None,
**                 1, 1, 1)).
**   resnet50      Keras applications' ResNet50 (resnet.py), 25,636,712
**                 parameters at 224x224x3, 1000 classes.
**   resnet152v2   Keras applications' ResNet152V2 (resnet_v2.py): 565
**                 layers (Keras counts 566 with its InputLayer, 564
**                 without the top), 60,380,648 parameters.
**   seed_cnn      the seed article's small custom CNN, known only by its
**                 count: 78,263 parameters at 192x192x3, 5 classes (its
**                 defaults); the design is ours.
**   bert_base     BERT-base (Devlin et al.; Hugging Face's
**                 bert-base-uncased, BertForSequenceClassification):
**                 NAME[@SEQ][:CLASSES], SEQ tokens (default 128; the
**                 position table has max(512, SEQ) rows), 2 classes by
**                 default. Token, position and token-type (all type 0)
**                 embeddings, layer_normalization (epsilon 1e-12), 12
**                 encoder blocks (self-attention 12 x 64, dropout 0.1,
**                 residual and layer_normalization; dense 3072 gelu, dense
**                 768, residual and layer_normalization), the pooler (the
**                 first token, dense 768 tanh), dropout and the classifier:
**                 109,482,240 parameters before the classifier at SEQ <= 512.
**   gpt2          GPT-2 small (Radford et al.; Hugging Face's gpt2):
**                 NAME[@SEQ][:CLASSES], SEQ tokens (default 1024, the
**                 context; the position table has max(1024, SEQ) rows).
**                 Token and position embeddings, 12 pre-norm blocks
**                 (layer_normalization 1e-5, causal self-attention 12 x
**                 64, residual; layer_normalization, dense 3072, gelu
**                 (tanh form, GPT-2's), dense 768, residual), a final
**                 layer_normalization: 124,439,808 parameters. Without
**                 CLASSES the head is GPT2LMHeadModel's: a dense tied to
**                 the token table (no parameters of its own) on every
**                 position, trained by the next-token loss; with CLASSES
**                 GPT2ForSequenceClassification's: the last token to a
**                 dense CLASSES without bias.
**   vit_b16       ViT-B/16 (Dosovitskiy et al.; torchvision's vit_b_16):
**                 16x16 patches by a conv2d 768 16x16/16, reshaped to a
**                 sequence, the class token, position_embedding, 12
**                 pre-norm encoder blocks (layer_normalization 1e-6,
**                 self-attention 12 x 64, residual; layer_normalization,
**                 dense 3072 gelu, dense 768, residual), a final
**                 layer_normalization, the class token's output to the
**                 head: 86,567,656 parameters at 224x224x3, 1000 classes.
*/
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/fe.h"

static const char *const ZOO_NAMES[] = {
  "alexnet", "vgg16", "vgg19",
  "xception",
  "mobilenetv2",
  "resnet50",
  "resnet152v2",
  "seed_cnn",
  "bert_base",
  "vit_b16",
  "gpt2",
  "efficientnetb0",
  NULL
};
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

/* {==================================================================
** EfficientNetB0: Keras applications' efficientnet.py, layer for layer
** ================================================================== */
/* Keras' imagenet_utils.correct_pad before a stride-2 'valid' conv of
** kernel k on h x w: [[k/2 - 1 + h%2, k/2], [k/2 - 1 + w%2, k/2]]; returns
** the output's height (and sets *w). */
static int en_pad(tpu_text *t, const char *name, int h, int *w, int k) {
  tpu_text_printf(t, "    { \"type\": \"zero_padding\", \"name\": \"%s\", \"padding\": [[%d, %d], [%d, %d]] },\n", name,
                  k / 2 - 1 + h % 2, k / 2, k / 2 - 1 + *w % 2, k / 2);
  *w = (*w + k / 2 - 1 + *w % 2 + k / 2 - k) / 2 + 1;
  return (h + k / 2 - 1 + h % 2 + k / 2 - k) / 2 + 1;
}
static void en_bn_swish(tpu_text *t, const char *pre, const char *bn, const char *act) {
  tpu_text_printf(t, "    { \"type\": \"batch_normalization\", \"name\": \"%s%s\" },\n", pre, bn);
  tpu_text_printf(t, "    { \"type\": \"swish\", \"name\": \"%s%s\" },\n", pre, act);
}

/* One block (Keras' block()): 'in' its input's name, updated to its output. */
static void en_block(tpu_text *t, const char *pre, char in[48], int fin, int fout, int k, int st, int e, double drop,
                     int *h, int *w) {
  char a[48], b[48];
  const int f = fin * e, se = fin / 4 > 1 ? fin / 4 : 1;
  if (e != 1) {
    snprintf(a, sizeof a, "%sexpand_conv", pre);
    xm_conv(t, "conv2d", a, in, f, 1, 1, "same");
    en_bn_swish(t, pre, "expand_bn", "expand_activation");
  }
  if (st == 2) {
    snprintf(a, sizeof a, "%sdwconv_pad", pre);
    *h = en_pad(t, a, *h, w, k);
  }
  snprintf(a, sizeof a, "%sdwconv", pre);
  xm_conv(t, "depthwise_conv2d", a, NULL, 0, k, st, st == 2 ? "valid" : "same");
  en_bn_swish(t, pre, "bn", "activation");
  tpu_text_printf(t, "    { \"type\": \"global_avgpool\", \"name\": \"%sse_squeeze\" },\n", pre);
  tpu_text_printf(t, "    { \"type\": \"reshape\", \"name\": \"%sse_reshape\", \"target_shape\": [1, 1, %d] },\n", pre, f);
  tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"%sse_reduce\", \"filters\": %d, \"kernel\": 1, "
                  "\"padding\": \"same\" },\n", pre, se);
  tpu_text_printf(t, "    { \"type\": \"swish\", \"name\": \"%sse_reduce_swish\" },\n", pre);
  tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"%sse_expand\", \"filters\": %d, \"kernel\": 1, "
                  "\"padding\": \"same\", \"activation\": \"sigmoid\" },\n", pre, f);
  tpu_text_printf(t, "    { \"type\": \"multiply\", \"name\": \"%sse_excite\", \"inputs\": [\"%sactivation\", "
                  "\"%sse_expand\"] },\n", pre, pre, pre);
  snprintf(a, sizeof a, "%sproject_conv", pre);
  xm_conv(t, "conv2d", a, NULL, fout, 1, 1, "same");
  snprintf(a, sizeof a, "%sproject_bn", pre);
  xm_bn(t, a, 0);
  if (st == 1 && fin == fout) {
    if (drop > 0) {
      snprintf(a, sizeof a, "%sdrop", pre);
      tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"%s\", \"rate\": %.17g, \"per_sample\": true },\n",
                      a, drop);
    }
    snprintf(b, sizeof b, "%sadd", pre);
    xm_add(t, b, a, in);
    snprintf(in, 48, "%s", b);
  } else {
    snprintf(in, 48, "%s", a);
  }
}

static void efficientnetb0(tpu_text *t, int h, int w, int classes) {
  /* kernel, repeats, filters in, out, expand ratio, stride (Keras' DEFAULT_BLOCKS_ARGS; se_ratio 0.25) */
  static const int ARGS[7][6] = { { 3, 1, 32, 16, 1, 1 }, { 3, 2, 16, 24, 6, 2 }, { 5, 2, 24, 40, 6, 2 },
                                  { 3, 3, 40, 80, 6, 2 }, { 5, 3, 80, 112, 6, 1 }, { 5, 4, 112, 192, 6, 2 },
                                  { 3, 1, 192, 320, 6, 1 } };
  tpu_text_printf(t, "    { \"type\": \"rescaling\", \"name\": \"rescaling\", \"scale\": %.17g },\n", 1.0 / 255.0);
  tpu_text_printf(t, "    { \"type\": \"normalization\", \"name\": \"normalization\" },\n");
  tpu_text_printf(t, "    { \"type\": \"rescaling\", \"name\": \"rescaling_1\", \"scale\": [%.17g, %.17g, %.17g] },\n",
                  1.0 / sqrt(0.229), 1.0 / sqrt(0.224), 1.0 / sqrt(0.225));
  h = en_pad(t, "stem_conv_pad", h, &w, 3);
  xm_conv(t, "conv2d", "stem_conv", NULL, 32, 3, 2, "valid");
  en_bn_swish(t, "", "stem_bn", "stem_activation");
  char in[48] = "stem_activation", pre[32];
  for (int i = 0, b = 0; i < 7; i++)
    for (int j = 0; j < ARGS[i][1]; j++, b++) {
      snprintf(pre, sizeof pre, "block%d%c_", i + 1, 'a' + j);
      en_block(t, pre, in, j ? ARGS[i][3] : ARGS[i][2], ARGS[i][3], ARGS[i][0], j ? 1 : ARGS[i][5], ARGS[i][4],
               0.2 * b / 16.0, &h, &w);
    }
  xm_conv(t, "conv2d", "top_conv", NULL, 1280, 1, 1, "same");
  en_bn_swish(t, "", "top_bn", "top_activation");
  tpu_text_printf(t, "    { \"type\": \"global_avgpool\", \"name\": \"avg_pool\" },\n");
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"top_dropout\", \"rate\": 0.2 },\n");
  dense(t, "predictions", classes, "softmax");
}
/* }================================================================== */

/* {==================================================================
** ResNet50 and ResNet152V2: Keras applications' resnet.py and
** resnet_v2.py, layer for layer, with Keras' names and its listing order
** (each block's shortcut after its residual branch's 2_relu)
** ================================================================== */
/* One layer line. 'in' names its input (NULL: the layer listed before),
** 'in2' a merge's second input; 'fields' are the layer's other fields, ""
** or starting with ", ". */
static void rn_layer(tpu_text *t, const char *type, const char *name, const char *in, const char *in2,
                     const char *fields) {
  tpu_text_printf(t, "    { \"type\": \"%s\", \"name\": \"%s\"", type, name);
  if (in2) tpu_text_printf(t, ", \"inputs\": [\"%s\", \"%s\"]", in, in2);
  else if (in) tpu_text_printf(t, ", \"inputs\": \"%s\"", in);
  tpu_text_printf(t, "%s },\n", fields);
}
static void rn_conv(tpu_text *t, const char *name, const char *in, int filters, int k, int stride, bool same,
                    bool bias) {
  tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"%s\"", name);
  if (in) tpu_text_printf(t, ", \"inputs\": \"%s\"", in);
  tpu_text_printf(t, ", \"filters\": %d, \"kernel\": %d, \"stride\": %d, \"padding\": \"%s\"%s },\n", filters, k, stride,
                  same ? "same" : "valid", bias ? "" : ", \"use_bias\": false");
}
/* Keras' ResNets set BatchNormalization's epsilon to 1.001e-5 (momentum: the default 0.99). */
static void rn_bn(tpu_text *t, const char *name, const char *in) {
  rn_layer(t, "batch_normalization", name, in, NULL, ", \"epsilon\": 1.001e-5");
}
/* Block 'b' of stack 's' (conv2..conv5): "conv3_block1" + sfx. Keras'
** names fit the loader's 31 characters. */
typedef char rn_name[32];
static void rn_nm(rn_name d, int s, int b, const char *sfx) {
  const int n = snprintf(d, sizeof(rn_name), "conv%d_block%d%s", s, b, sfx);
  assert(n > 0 && n < (int)sizeof(rn_name));
  (void)n;
}
/* The stem: conv1_pad (3), conv1_conv 64 7x7/2 [conv1_bn, conv1_relu], pool1_pad (1), pool1_pool 3x3/2. */
static void rn_stem(tpu_text *t, bool bn) {
  rn_layer(t, "zero_padding", "conv1_pad", NULL, NULL, ", \"padding\": 3");
  rn_conv(t, "conv1_conv", NULL, 64, 7, 2, false, true);
  if (bn) {
    rn_bn(t, "conv1_bn", NULL);
    rn_layer(t, "relu", "conv1_relu", NULL, NULL, "");
  }
  rn_layer(t, "zero_padding", "pool1_pad", NULL, NULL, ", \"padding\": 1");
  rn_layer(t, "maxpool", "pool1_pool", NULL, NULL, ", \"size\": 3, \"stride\": 2");
}
static void rn_top(tpu_text *t, int classes) {
  rn_layer(t, "global_avgpool", "avg_pool", NULL, NULL, "");
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"predictions\", \"units\": %d, \"activation\": \"softmax\" },\n",
                  classes);
}

/* resnet.py's residual_block_v1 (post-activation bottleneck) 'b' of stack
** 's' on input 'in', 'f' filters (4f out): the stride on the first 1x1
** convolution and on the projection shortcut; every convolution with a
** bias and followed by a batch_normalization. The output's name in out. */
static void rn_block_v1(tpu_text *t, int s, int b, const char *in, int f, int stride, bool proj, rn_name out) {
  rn_name n[8], c0, b0, add;
  static const char *const sfx[8] = { "_1_conv", "_1_bn", "_1_relu", "_2_conv", "_2_bn", "_2_relu", "_3_conv", "_3_bn" };
  for (int k = 0; k < 8; k++) rn_nm(n[k], s, b, sfx[k]);
  rn_nm(c0, s, b, "_0_conv");
  rn_nm(b0, s, b, "_0_bn");
  rn_nm(add, s, b, "_add");
  rn_conv(t, n[0], in, f, 1, stride, false, true);
  rn_bn(t, n[1], NULL);
  rn_layer(t, "relu", n[2], NULL, NULL, "");
  rn_conv(t, n[3], NULL, f, 3, 1, true, true);
  rn_bn(t, n[4], NULL);
  rn_layer(t, "relu", n[5], NULL, NULL, "");
  if (proj) rn_conv(t, c0, in, 4 * f, 1, stride, false, true);
  rn_conv(t, n[6], n[5], 4 * f, 1, 1, false, true);
  if (proj) rn_bn(t, b0, c0);
  rn_bn(t, n[7], n[6]);
  rn_layer(t, "add", add, proj ? b0 : in, n[7], "");
  rn_nm(out, s, b, "_out");
  rn_layer(t, "relu", out, NULL, NULL, "");
}

/* resnet.py's ResNet50: stacks conv2..conv5 of 3, 4, 6, 3 bottleneck
** blocks of 64, 128, 256, 512 filters, the first block of each with a
** projection shortcut and, from conv3 on, stride 2. */
static void resnet50(tpu_text *t, int classes) {
  static const int blocks[4] = { 3, 4, 6, 3 };
  rn_name x = "pool1_pool", in;
  rn_stem(t, true);
  for (int s = 0; s < 4; s++)
    for (int b = 0; b < blocks[s]; b++) {
      memcpy(in, x, sizeof in);
      rn_block_v1(t, s + 2, b + 1, in, 64 << s, b == 0 && s > 0 ? 2 : 1, b == 0, x);
    }
  rn_top(t, classes);
}

/* resnet.py's residual_block_v2 (pre-activation): batch_normalization and
** relu first; the shortcut a 1x1 projection of that (first block of a
** stack), a 1x1 stride-2 maxpool of the block's input (last block of a
** strided stack; Keras leaves it unnamed, so it gets Keras' automatic name
** max_pooling2d[_N], counted in *npool) or the input itself; the 3x3
** convolution after an explicit zero_padding carries the stride; only the
** last 1x1 convolution and the projection have biases. */
static void rn_block_v2(tpu_text *t, int s, int b, const char *in, int f, int stride, bool proj, int *npool,
                        rn_name out) {
  rn_name n[10], sc;
  static const char *const sfx[10] = { "_preact_bn", "_preact_relu", "_1_conv", "_1_bn", "_1_relu", "_2_pad",
                                       "_2_conv", "_2_bn", "_2_relu", "_3_conv" };
  for (int k = 0; k < 10; k++) rn_nm(n[k], s, b, sfx[k]);
  rn_bn(t, n[0], in);
  rn_layer(t, "relu", n[1], NULL, NULL, "");
  rn_conv(t, n[2], NULL, f, 1, 1, false, false);
  rn_bn(t, n[3], NULL);
  rn_layer(t, "relu", n[4], NULL, NULL, "");
  rn_layer(t, "zero_padding", n[5], NULL, NULL, ", \"padding\": 1");
  rn_conv(t, n[6], NULL, f, 3, stride, false, false);
  rn_bn(t, n[7], NULL);
  rn_layer(t, "relu", n[8], NULL, NULL, "");
  if (proj) {
    rn_nm(sc, s, b, "_0_conv");
    rn_conv(t, sc, n[1], 4 * f, 1, stride, false, true);
  } else if (stride > 1) {
    if (*npool) snprintf(sc, sizeof sc, "max_pooling2d_%d", *npool % 100);
    else snprintf(sc, sizeof sc, "max_pooling2d");
    ++*npool;
    assert(stride == 2);
    rn_layer(t, "maxpool", sc, in, NULL, ", \"size\": 1, \"stride\": 2");
  } else {
    memcpy(sc, in, sizeof sc);
  }
  rn_conv(t, n[9], n[8], 4 * f, 1, 1, false, true);
  rn_nm(out, s, b, "_out");
  rn_layer(t, "add", out, sc, n[9], "");
}

/* resnet_v2.py's ResNet152V2: the stem without batch normalization,
** stacks conv2..conv5 of 3, 8, 36, 3 pre-activation blocks of 64, 128,
** 256, 512 filters, the first block of each with a projection shortcut,
** the last with stride 2 (but conv5's); then post_bn, post_relu and the
** top. */
static void resnet152v2(tpu_text *t, int classes) {
  static const int blocks[4] = { 3, 8, 36, 3 };
  rn_name x = "pool1_pool", in;
  int npool = 0;
  rn_stem(t, false);
  for (int s = 0; s < 4; s++)
    for (int b = 0; b < blocks[s]; b++) {
      memcpy(in, x, sizeof in);
      rn_block_v2(t, s + 2, b + 1, in, 64 << s, b == blocks[s] - 1 && s < 3 ? 2 : 1, b == 0, &npool, x);
    }
  rn_bn(t, "post_bn", NULL);
  rn_layer(t, "relu", "post_relu", NULL, NULL, "");
  rn_top(t, classes);
}
/* }================================================================== */

/* The seed article's (../shared/seeds/002_*) "custom model": it gives
** only the parameter count, 78,263 for 192x192x3 images and 5 classes, so
** this network is ours, a plausible small Keras Sequential convnet with
** exactly that count and Keras' automatic layer names: a 5x5 then three
** 3x3 'same' relu convolutions of 32, 32, 32 and 195 filters, a 2x2
** maxpool after each of the first three, global average pooling and the
** softmax classifier. 195 is the one width that makes the count exact.
** Its default input is the seed's, 192x192x3 with 5 classes. */
static void seed_cnn(tpu_text *t, int classes) {
  static const int filters[4] = { 32, 32, 32, 195 };
  /* "%s%.0d": nothing for k = 0, else "_k" (Keras' conv2d, conv2d_1, ...) */
  for (int k = 0; k < 4; k++) {
    tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"conv2d%s%.0d\", \"filters\": %d, \"kernel\": %d, "
                    "\"padding\": \"same\", \"activation\": \"relu\" },\n", k ? "_" : "", k, filters[k], k ? 3 : 5);
    if (k < 3)
      tpu_text_printf(t, "    { \"type\": \"maxpool\", \"name\": \"max_pooling2d%s%.0d\", \"size\": 2 },\n",
                      k ? "_" : "", k);
  }
  tpu_text_printf(t, "    { \"type\": \"global_avgpool\", \"name\": \"global_average_pooling2d\" },\n");
  dense(t, "dense", classes, "softmax");
}

/* {==================================================================
** Transformers
** ================================================================== */
static void bert_block(tpu_text *t, int l, const char *in, int hidden, int heads, int ff) {
  tpu_text_printf(t, "    { \"type\": \"multi_head_attention\", \"name\": \"layer_%d_attention\", \"inputs\": \"%s\", "
                  "\"num_heads\": %d, \"key_dim\": %d, \"dropout\": 0.1 },\n", l, in, heads, hidden / heads);
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"layer_%d_attention_dropout\", \"rate\": 0.1 },\n", l);
  tpu_text_printf(t, "    { \"type\": \"add\", \"name\": \"layer_%d_attention_add\", \"inputs\": [\"layer_%d_attention_dropout\", "
                  "\"%s\"] },\n", l, l, in);
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"layer_%d_attention_ln\", \"epsilon\": 1e-12 },\n", l);
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"layer_%d_intermediate\", \"units\": %d },\n", l, ff);
  tpu_text_printf(t, "    { \"type\": \"gelu\", \"name\": \"layer_%d_gelu\" },\n", l);
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"layer_%d_output\", \"units\": %d },\n", l, hidden);
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"layer_%d_output_dropout\", \"rate\": 0.1 },\n", l);
  tpu_text_printf(t, "    { \"type\": \"add\", \"name\": \"layer_%d_output_add\", \"inputs\": [\"layer_%d_output_dropout\", "
                  "\"layer_%d_attention_ln\"] },\n", l, l, l);
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"layer_%d_output_ln\", \"epsilon\": 1e-12 },\n", l);
}

static void bert_base(tpu_text *t, int seq, int classes) {
  tpu_text_printf(t, "    { \"type\": \"embedding\", \"name\": \"embeddings\", \"input_dim\": 30522, \"output_dim\": 768, "
                  "\"token_types\": 2 },\n");
  tpu_text_printf(t, "    { \"type\": \"position_embedding\", \"name\": \"position_embeddings\", \"max_length\": %d },\n",
                  seq > 512 ? seq : 512);
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"embeddings_ln\", \"epsilon\": 1e-12 },\n");
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"embeddings_dropout\", \"rate\": 0.1 },\n");
  char in[40] = "embeddings_dropout";
  for (int l = 0; l < 12; l++) {
    bert_block(t, l, in, 768, 12, 3072);
    snprintf(in, sizeof in, "layer_%d_output_ln", l);
  }
  tpu_text_printf(t, "    { \"type\": \"take\", \"name\": \"first_token\", \"position\": 0 },\n");
  dense(t, "pooler", 768, "tanh");
  tpu_text_printf(t, "    { \"type\": \"dropout\", \"name\": \"pooler_dropout\", \"rate\": 0.1 },\n");
  dense(t, "classifier", classes, "linear");
}
/* A pre-norm transformer block (GPT-2's, ViT's) on 'in' (a layer name);
** its output is "layer_L_add_2". */
static void prenorm_block(tpu_text *t, int l, const char *in, double eps, bool causal, bool tanh_gelu) {
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"layer_%d_ln_1\", \"inputs\": \"%s\", "
                  "\"epsilon\": %g },\n", l, in, eps);
  tpu_text_printf(t, "    { \"type\": \"multi_head_attention\", \"name\": \"layer_%d_attention\", \"num_heads\": 12, "
                  "\"key_dim\": 64%s },\n", l, causal ? ", \"causal\": true" : "");
  tpu_text_printf(t, "    { \"type\": \"add\", \"name\": \"layer_%d_add_1\", \"inputs\": [\"layer_%d_attention\", \"%s\"] },\n",
                  l, l, in);
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"layer_%d_ln_2\", \"epsilon\": %g },\n", l, eps);
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"layer_%d_mlp_1\", \"units\": 3072 },\n", l);
  tpu_text_printf(t, "    { \"type\": \"gelu\", \"name\": \"layer_%d_gelu\"%s },\n", l, tanh_gelu ? ", \"approximate\": true" : "");
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"layer_%d_mlp_2\", \"units\": 768 },\n", l);
  tpu_text_printf(t, "    { \"type\": \"add\", \"name\": \"layer_%d_add_2\", \"inputs\": [\"layer_%d_mlp_2\", "
                  "\"layer_%d_add_1\"] },\n", l, l, l);
}

static void gpt2(tpu_text *t, int seq, int classes) {
  tpu_text_printf(t, "    { \"type\": \"embedding\", \"name\": \"wte\", \"input_dim\": 50257, \"output_dim\": 768 },\n");
  tpu_text_printf(t, "    { \"type\": \"position_embedding\", \"name\": \"wpe\", \"max_length\": %d },\n",
                  seq > 1024 ? seq : 1024);
  char in[40] = "wpe";
  for (int l = 0; l < 12; l++) {
    prenorm_block(t, l, in, 1e-5, true, true);
    snprintf(in, sizeof in, "layer_%d_add_2", l);
  }
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"ln_f\", \"epsilon\": 1e-5 },\n");
  if (!classes) {   /* GPT2LMHeadModel's lm_head: the token table, tied */
    tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"lm_head\", \"tied_to\": \"wte\" },\n");
    return;
  }
  tpu_text_printf(t, "    { \"type\": \"take\", \"name\": \"last_token\", \"position\": %d },\n", seq - 1);
  tpu_text_printf(t, "    { \"type\": \"dense\", \"name\": \"score\", \"units\": %d, \"use_bias\": false },\n", classes);
}

static void vit_b16(tpu_text *t, int h, int w, int classes) {
  const int n = (h / 16) * (w / 16);
  tpu_text_printf(t, "    { \"type\": \"conv2d\", \"name\": \"conv_proj\", \"filters\": 768, \"kernel\": 16, \"stride\": 16 },\n");
  tpu_text_printf(t, "    { \"type\": \"reshape\", \"name\": \"patches\", \"target_shape\": [%d, 768] },\n", n);
  tpu_text_printf(t, "    { \"type\": \"class_token\", \"name\": \"class_token\" },\n");
  tpu_text_printf(t, "    { \"type\": \"position_embedding\", \"name\": \"pos_embedding\", \"max_length\": %d },\n", n + 1);
  char in[40] = "pos_embedding";
  for (int l = 0; l < 12; l++) {
    prenorm_block(t, l, in, 1e-6, false, false);
    snprintf(in, sizeof in, "layer_%d_add_2", l);
  }
  tpu_text_printf(t, "    { \"type\": \"layer_normalization\", \"name\": \"ln\", \"epsilon\": 1e-6 },\n");
  tpu_text_printf(t, "    { \"type\": \"take\", \"name\": \"class_token_out\", \"position\": 0 },\n");
  dense(t, "head", classes, "linear");
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

/* The frame of a zoo model's JSON around its layers (written by 'layers'
** into t); *json gets it, or TPU_ERR_NOMEM. */
static tpu_status zoo_finish(tpu_text *t, const char *lr, const char *loss, char **json, char *err, size_t errcap) {
  if (!t->oom) t->n -= 2;   /* the last layer's ",\n" */
  tpu_text_printf(t, "\n  ],\n  \"loss\": \"%s\",\n"
                  "  \"optimizer\": { \"type\": \"adam\", \"learning_rate\": %s },\n  \"seed\": 1\n}\n", loss, lr);
  if (t->oom) {
    tpu_free(t->s);
    snprintf(err, errcap, "out of memory");
    return TPU_ERR_NOMEM;
  }
  *json = t->s;
  return TPU_OK;
}

/* bert_base and gpt2 [@SEQ][:CLASSES]: SEQ token ids 1..65536 (default
** 128, gpt2's 1024), CLASSES (default 2; gpt2's none: its language-model
** head); adam at 2e-5, BERT's fine-tuning rate. */
static tpu_status bert_json(const char *spec, const char *knobs, char **json, char *err, size_t errcap) {
  const bool g = !strncmp(spec, "gpt2", 4);
  long seq = g ? 1024 : 128, classes = g ? 0 : 2;
  char *e;
  const char *s = knobs;
  if (*s == '@') {
    seq = (s[1] >= '0' && s[1] <= '9') ? strtol(s + 1, &e, 10) : 0;
    s = seq ? e : s + 1;
  }
  if (*s == ':') {
    classes = (s[1] >= '0' && s[1] <= '9') ? strtol(s + 1, &e, 10) : 0;
    s = classes ? e : s + 1;
  }
  if (*s || seq < (g && !classes ? 2 : 1) || seq > 65536 || (classes < 2 && !(g && !classes)) || classes > 1 << 20) {
    snprintf(err, errcap, "%s: %s is %s[@SEQ][:CLASSES], e.g. %s@512:3 (SEQ tokens 1..65536, default %d; classes "
             "2..1048576, default %s)", spec, g ? "gpt2" : "bert_base", g ? "gpt2" : "bert_base", g ? "gpt2" : "bert_base",
             g ? 1024 : 128, g ? "none: the language-model head, SEQ 2 or more" : "2");
    return TPU_ERR_CONFIG;
  }
  tpu_text t = { 0 };
  tpu_text_printf(&t, "{\n  \"name\": \"%.63s\",\n  \"input\": [%ld],\n  \"layers\": [\n", spec, seq);
  if (g) gpt2(&t, (int)seq, (int)classes);
  else bert_base(&t, (int)seq, (int)classes);
  return zoo_finish(&t, "2e-5", g && !classes ? "next_token_softmax_cross_entropy" : "softmax_cross_entropy", json,
                    err, errcap);
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
  const bool bert = !strcmp(ZOO_NAMES[z], "bert_base") || !strcmp(ZOO_NAMES[z], "gpt2");
  if (bert) return bert_json(spec, spec + nl, json, err, errcap);
  if (!strcmp(ZOO_NAMES[z], "xception")) h = w = 299;
  if (!strcmp(ZOO_NAMES[z], "seed_cnn")) { h = w = 192; classes = 5; }   /* the seed's Flowers */
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
  else if (!strcmp(ZOO_NAMES[z], "resnet50")) resnet50(&t, classes);
  else if (!strcmp(ZOO_NAMES[z], "resnet152v2")) resnet152v2(&t, classes);
  else if (!strcmp(ZOO_NAMES[z], "seed_cnn")) seed_cnn(&t, classes);
  else if (!strcmp(ZOO_NAMES[z], "vit_b16")) vit_b16(&t, h, w, classes);
  else if (!strcmp(ZOO_NAMES[z], "efficientnetb0")) efficientnetb0(&t, h, w, classes);
  else vgg(&t, !strcmp(ZOO_NAMES[z], "vgg16") ? (const int[5]){ 2, 2, 3, 3, 3 } : (const int[5]){ 2, 2, 4, 4, 4 },
           classes);
  return zoo_finish(&t, "0.001", "softmax_cross_entropy", json, err, errcap);
}
