/*
** check_train.c -- the training front-end: model parsing and its errors,
** gradients of every layer against finite differences, bit-identity across
** thread counts, checkpoint round trips, the step timing against a hand
** count, and the training run (run.c) driven as a library: its steps,
** determinism, resume, batch split and allocation failures.
**
** The front-end lives in the tpusim binary, not in libtpusim.a, so this
** suite compiles its files in directly (they share no static names).
*/
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/fe_int.h"
#include "tests/test_util.h"

static tpu_fe_model parse_ok(const char *json) {
  tpu_fe_model m;
  char err[1024];
  tpu_status st = tpu_fe_model_parse(json, "t.json", &m, err, sizeof err);
  ck_assert_msg(st == TPU_OK, "parse failed: %s", err);
  return m;
}
static void parse_err(const char *json, const char *want) {
  tpu_fe_model m;
  char err[1024] = "";
  tpu_status st = tpu_fe_model_parse(json, "t.json", &m, err, sizeof err);
  ck_assert_msg(st == TPU_ERR_CONFIG, "expected an error containing '%s'", want);
  ck_assert_msg(strstr(err, want) != NULL, "\n  Expected: ...%s...\n  Actual:   %s", want, err);
}

/* {==================================================================
** Models
** ================================================================== */
START_TEST(Builtin_models_have_the_published_shapes) {
  tpu_fe_model m;
  char err[512];
  ck_assert_int_eq(tpu_fe_model_load("mlp", &m, err, sizeof err), TPU_OK);
  TU_EQ_U64(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10, m.nparams);
  ck_assert_int_eq(tpu_fe_model_load("cnn", &m, err, sizeof err), TPU_OK);
  /* conv 5x5x1x32, conv 5x5x32x64, 7*7*64 -> 1024, 1024 -> 10 */
  TU_EQ_U64(25 * 32 + 32 + 25 * 32 * 64 + 64 + 3136 * 1024 + 1024 + 1024 * 10 + 10, m.nparams);
  ck_assert_int_eq(m.layers[5].out.h, 7);
  ck_assert_int_eq(m.layers[5].out.c, 64);
}
END_TEST

/* The zoo's parameter counts are Keras applications' (VGG) and
** torchvision's (AlexNet), exactly. */
START_TEST(Zoo_models_have_the_published_parameter_counts) {
  static const struct { const char *spec; uint64_t nparams; int nlayers; } zoo[] = {
    { "vgg19", 143667240, 25 }, { "vgg19@192x192x3:5", 112327749, 25 }, { "vgg16", 138357544, 22 },
    { "vgg16@224x224x3:1000", 138357544, 22 }, { "alexnet", 61100840, 15 },
    { "xception", 22910480, 133 }, { "xception@192x192x3:5", 20871725, 133 }, { "mobilenetv2", 3538984, 155 },
    { "resnet50", 25636712, 176 }, { "resnet50@224x224x3:1000", 25636712, 176 },
    { "resnet152v2", 60380648, 565 }, { "resnet152v2@192x192x3:5", 58341893, 565 },
    { "efficientnetb0", 5330571, 256 }, { "seed_cnn@192x192x3:5", 78263, 9 }, { "seed_cnn", 78263, 9 },
  };
  tpu_fe_model *m = malloc(sizeof *m);
  char err[512];
  for (size_t k = 0; k < sizeof zoo / sizeof zoo[0]; k++) {
    ck_assert_msg(tpu_fe_model_load(zoo[k].spec, m, err, sizeof err) == TPU_OK, "%s: %s", zoo[k].spec, err);
    TU_EQ_U64(zoo[k].nparams, m->nparams);
    ck_assert_int_eq(m->nlayers, zoo[k].nlayers);
    ck_assert_str_eq(m->name, zoo[k].spec);
  }
  ck_assert_int_eq(m->layers[m->nlayers - 1].out.c, 5);   /* seed_cnn's default: the seed's 5 classes */
  ck_assert_int_eq(tpu_fe_model_load("mobilenetv2", m, err, sizeof err), TPU_OK);
  ck_assert_int_eq(m->layers[m->nlayers - 1].out.c, 1000);
  /* Keras' non-trainable moving statistics: MobileNetV2 34,112, Xception 54,528 */
  TU_EQ_U64(34112, m->nstate);
  ck_assert_int_eq(tpu_fe_model_load("xception", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(54528, m->nstate);
  ck_assert_int_eq(m->input.h, 299);
  ck_assert_int_eq(m->layers[m->nlayers - 3].out.h, 10);   /* block14_sepconv2_act: 10x10x2048 */
  ck_assert_int_eq(m->layers[m->nlayers - 3].out.c, 2048);
  /* MobileNetV2 at 192x192: the stride-2 blocks' padding follows the (even) size */
  ck_assert_int_eq(tpu_fe_model_load("mobilenetv2@192x192x3:5", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(3538984 - 1281 * 1000 + 1281 * 5, m->nparams);
  ck_assert_int_eq(m->layers[m->nlayers - 3].out.h, 6);
  static const char *const bad[] = { "vgg19@192x192:5", "vgg19:", "vgg19@0x1x1", "vgg19:5x", "alexnet@9x9x3:0",
                                     "resnet50@192x192:5", "resnet152v2:", "seed_cnn:0", "seed_cnn@192x192x3x1" };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ck_assert_int_eq(tpu_fe_model_load(bad[k], m, err, sizeof err), TPU_ERR_CONFIG);
    ck_assert_msg(strstr(err, "NAME[@HxWxC][:CLASSES]") != NULL, "%s", err);
  }
  /* too small for five 2x2 pools: the loader's shape error */
  ck_assert_int_eq(tpu_fe_model_load("vgg16@16x16x3", m, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(err, "vgg16@16x16x3:") == err && strstr(err, "layers[") != NULL, "%s", err);
  /* Keras' smallest ResNet input, 32x32: conv5's maps are 1x1 images (not
  ** vectors), so its 1x1 and 3x3 convolutions apply */
  ck_assert_int_eq(tpu_fe_model_load("resnet50@32x32x3:10", m, err, sizeof err), TPU_OK);
  ck_assert_int_eq(m->layers[m->nlayers - 3].out.h, 1);
  /* EfficientNetB0 (Keras 2.13 and 3, weights="imagenet": two rescaling
  ** layers): 5,288,548 trainable, the paper's 5.3M and the count
  ** torchsummary prints for the PyTorch ports (timm's efficientnet_b0,
  ** lukemelas/EfficientNet-PyTorch); non-trainable the batch norms' moving
  ** mean and variance, 42,016, and the adapted Normalization's mean,
  ** variance and count over 3 channels, 7: 42,023, Keras' summary */
  ck_assert_int_eq(tpu_fe_model_load("efficientnetb0", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(42023, m->nstate);
  TU_EQ_U64(5288548, m->nparams - m->nstate);
  ck_assert_int_eq(m->layers[1].kind, TPU_FE_NORMALIZATION);
  TU_EQ_U64(7, m->layers[1].ns);
  ck_assert_int_eq(m->layers[m->nlayers - 4].out.h, 7);   /* top_activation: 7x7x1280 */
  ck_assert_int_eq(m->layers[m->nlayers - 4].out.c, 1280);
  /* keras.io's EfficientNet fine-tuning example prints Keras' summary of
  ** EfficientNetB0 with a 120-class top: 4,203,291 total, 4,161,268
  ** trainable, 42,023 non-trainable */
  ck_assert_int_eq(tpu_fe_model_load("efficientnetb0:120", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(4203291, m->nparams);
  TU_EQ_U64(4161268, m->nparams - m->nstate);
  ck_assert_int_eq(tpu_fe_model_load("efficientnetb0@225x223x3:5", m, err, sizeof err), TPU_OK);   /* odd sizes: */
  ck_assert_int_eq(m->layers[4].out.h, 113);   /* correct_pad keeps Keras' ceil(h/2) */
  ck_assert_int_eq(m->layers[4].out.w, 112);
  free(m);
}
END_TEST

/* BERT-base as Hugging Face's bert-base-uncased: embeddings 30522*768 +
** 512*768 + 2*768 + LayerNorm 2*768 = 23,837,184; per encoder layer the
** attention 4*(768*768 + 768) = 2,362,368, its LayerNorm 1,536, the
** intermediate 768*3072 + 3072 = 2,362,368, the output 3072*768 + 768 =
** 2,360,064 and its LayerNorm 1,536: 7,087,872, 12 of them 85,054,464; the
** pooler 768*768 + 768 = 590,592; 109,482,240 in all, then the classifier
** 768*classes + classes. @SEQ sets the tokens; past 512 the position table
** grows with it. */
START_TEST(Bert_base_has_hugging_faces_parameter_count) {
  tpu_fe_model *m = malloc(sizeof *m);
  char err[512];
  static const struct { const char *spec; uint64_t nparams; int seq, classes; } z[] = {
    { "bert_base", 109482240 + 768 * 2 + 2, 128, 2 }, { "bert_base@512:3", 109482240 + 768 * 3 + 3, 512, 3 },
    { "bert_base@64", 109482240 + 1538, 64, 2 }, { "bert_base@4096", 109482240 + (4096 - 512) * 768 + 1538, 4096, 2 } };
  for (size_t k = 0; k < sizeof z / sizeof z[0]; k++) {
    ck_assert_msg(tpu_fe_model_load(z[k].spec, m, err, sizeof err) == TPU_OK, "%s: %s", z[k].spec, err);
    TU_EQ_U64(z[k].nparams, m->nparams);
    ck_assert_int_eq(m->input.c, z[k].seq);
    ck_assert_int_eq(m->layers[0].out.w, z[k].seq);
    ck_assert_int_eq(m->layers[m->nlayers - 1].out.c, z[k].classes);
  }
  int mha = 0;
  for (int i = 0; i < m->nlayers; i++) mha += m->layers[i].kind == TPU_FE_MHA && m->layers[i].num_heads == 12 &&
                                               m->layers[i].key_dim == 64 && !m->layers[i].causal;
  ck_assert_int_eq(mha, 12);
  /* ViT-B/16 as torchvision's vit_b_16: the patches' conv 16*16*3*768 + 768
  ** = 590,592, the class token 768, the positions 197*768 = 151,296, 12
  ** blocks of 7,087,872 (two LayerNorms 3,072, attention 2,362,368, MLP
  ** 4,722,432): 85,054,464, the last LayerNorm 1,536, the head 769,000 */
  ck_assert_int_eq(tpu_fe_model_load("vit_b16", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(590592 + 768 + 151296 + 85054464 + 1536 + 769000, m->nparams);
  TU_EQ_U64(86567656, m->nparams);
  ck_assert_int_eq(tpu_fe_model_load("vit_b16@32x32x3:10", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(86567656 - 769000 - (197 - 5) * 768 + 7690, m->nparams);
  /* GPT-2 small as Hugging Face's GPT2Model: wte 50257*768 = 38,597,376, wpe
  ** 1024*768 = 786,432, 12 blocks of 7,087,872 (ln_1, c_attn and c_proj
  ** 2,362,368, ln_2, the MLP 4,722,432), ln_f 1,536: 124,439,808, which
  ** GPT2LMHeadModel keeps (its lm_head is wte); with classes
  ** GPT2ForSequenceClassification's score, 768*classes without bias */
  ck_assert_int_eq(tpu_fe_model_load("gpt2", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(38597376 + 786432 + 12 * 7087872 + 1536, m->nparams);
  TU_EQ_U64(124439808, m->nparams);   /* GPT2LMHeadModel's: lm_head is wte, tied */
  ck_assert(m->layers[3].kind == TPU_FE_MHA && m->layers[3].causal && m->layers[7].approximate);
  const tpu_fe_layer *head = &m->layers[m->nlayers - 1];
  ck_assert(head->kind == TPU_FE_DENSE && head->tied == 1 && head->nw == 0 && head->nb == 0);
  ck_assert(head->out.w == 1024 && head->out.c == 50257 && m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT);
  ck_assert_int_eq(tpu_fe_model_predictions(m), 1023);
  ck_assert_int_eq(tpu_fe_model_load("gpt2@128:5", m, err, sizeof err), TPU_OK);
  TU_EQ_U64(124439808 + 768 * 5, m->nparams);   /* GPT2ForSequenceClassification's score */
  ck_assert_int_eq(m->layers[m->nlayers - 2].position, 127);
  ck_assert(m->loss == TPU_FE_LOSS_SOFTMAX_XENT);
  ck_assert_int_eq(tpu_fe_model_load("gpt2:1", m, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(err, "gpt2 is gpt2[@SEQ][:CLASSES]") != NULL, "%s", err);
  static const char *const bad[] = { "bert_base@", "bert_base@0", "bert_base:1", "bert_base@128x128", "bert_base:" };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    ck_assert_int_eq(tpu_fe_model_load(bad[k], m, err, sizeof err), TPU_ERR_CONFIG);
    ck_assert_msg(strstr(err, "bert_base[@SEQ][:CLASSES]") != NULL, "%s", err);
  }
  free(m);
}
END_TEST

static int layer_named(const tpu_fe_model *m, const char *name) {
  for (int i = 0; i < m->nlayers; i++) if (!strcmp(m->layers[i].name, name)) return i;
  ck_abort_msg("%s: no layer '%s'", m->name, name);
  return -1;
}

/* The ResNets are Keras applications' layer for layer: Keras' split of
** trainable and non-trainable parameters (the batch_normalizations' moving
** statistics), its names, shapes and shortcuts. */
START_TEST(Resnets_are_keras_applications_layer_for_layer) {
  tpu_fe_model *m = malloc(sizeof *m);
  char err[512];
  ck_assert_msg(tpu_fe_model_load("resnet50", m, err, sizeof err) == TPU_OK, "%s", err);
  TU_EQ_U64(53120, m->nstate);   /* Keras: Trainable params 25,583,592, Non-trainable 53,120 */
  int i = layer_named(m, "conv1_conv");
  ck_assert(m->layers[i].kh == 7 && m->layers[i].stride == 2 && !m->layers[i].no_bias && m->layers[i].out.h == 112);
  i = layer_named(m, "conv1_bn");
  ck_assert(m->layers[i].epsilon == 1.001e-5 && m->layers[i].momentum == 0.99);
  ck_assert_int_eq(m->layers[layer_named(m, "pool1_pool")].out.h, 56);
  /* conv3_block1: the stride on the first 1x1 and on the projection, whose batch_normalization is added */
  i = layer_named(m, "conv3_block1_1_conv");
  ck_assert(m->layers[i].kh == 1 && m->layers[i].stride == 2 && m->layers[i].out.h == 28);
  ck_assert_int_eq(m->layers[i].inputs[0], layer_named(m, "conv2_block3_out"));
  i = layer_named(m, "conv3_block1_add");
  ck_assert(m->layers[i].nin == 2 && m->layers[i].inputs[0] == layer_named(m, "conv3_block1_0_bn") &&
            m->layers[i].inputs[1] == layer_named(m, "conv3_block1_3_bn"));
  i = layer_named(m, "conv3_block2_add");   /* identity shortcut */
  ck_assert_int_eq(m->layers[i].inputs[0], layer_named(m, "conv3_block1_out"));
  i = layer_named(m, "conv5_block3_out");
  ck_assert(m->layers[i].out.h == 7 && m->layers[i].out.c == 2048);
  ck_assert_int_eq(m->layers[m->nlayers - 1].act, TPU_FE_SOFTMAX);

  ck_assert_msg(tpu_fe_model_load("resnet152v2@192x192x3:5", m, err, sizeof err) == TPU_OK, "%s", err);
  TU_EQ_U64(143744, m->nstate);   /* Keras: Non-trainable params 143,744 */
  ck_assert_int_eq(m->layers[layer_named(m, "pool1_pad")].inputs[0], layer_named(m, "conv1_conv"));   /* no conv1_bn */
  i = layer_named(m, "conv2_block1_0_conv");   /* projection of the pre-activation, with a bias */
  ck_assert(m->layers[i].inputs[0] == layer_named(m, "conv2_block1_preact_relu") && !m->layers[i].no_bias);
  i = layer_named(m, "conv2_block1_2_conv");   /* after its zero_padding, no bias */
  ck_assert(m->layers[i].no_bias && !m->layers[i].same && m->layers[i].stride == 1);
  i = layer_named(m, "conv4_block36_2_conv");   /* the last block of a stack carries the stride */
  ck_assert(m->layers[i].stride == 2 && m->layers[i].out.h == 6);
  i = layer_named(m, "max_pooling2d_2");   /* and its shortcut is a 1x1 stride-2 maxpool of the block's input */
  ck_assert(m->layers[i].pool == 1 && m->layers[i].stride == 2 && m->layers[i].out.h == 6 &&
            m->layers[i].inputs[0] == layer_named(m, "conv4_block35_out"));
  i = layer_named(m, "conv4_block36_out");
  ck_assert(m->layers[i].inputs[0] == layer_named(m, "max_pooling2d_2") &&
            m->layers[i].inputs[1] == layer_named(m, "conv4_block36_3_conv"));
  ck_assert_int_eq(m->layers[layer_named(m, "conv5_block3_2_conv")].stride, 1);   /* conv5's last: no stride */
  i = layer_named(m, "post_relu");
  ck_assert(m->layers[i].out.h == 6 && m->layers[i].out.c == 2048);
  int pools = 0;
  for (int k = 0; k < m->nlayers; k++) pools += m->layers[k].kind == TPU_FE_MAXPOOL;
  ck_assert_int_eq(pools, 4);   /* pool1_pool, max_pooling2d, _1, _2 */
  free(m);
}
END_TEST

/* The step plan's GEMMs for resnet50's stem and first bottleneck block,
** derived by hand from im2col (docs/MODELS.md): conv2d on an H x W x C
** input with F filters of kh x kw is, for a shard of r samples and an
** OH x OW output, forward [r*OH*OW x kh*kw*C] . [kh*kw*C x F], dW =
** cols^T . dY (M = kh*kw*C, N = F, K = r*OH*OW) and dX = dY . W^T (M =
** r*OH*OW, N = kh*kw*C, K = F) where a layer upstream learns. */
START_TEST(The_resnet50_plan_has_the_hand_derived_gemms) {
  tpu_fe_model *m = malloc(sizeof *m);
  char err[512];
  ck_assert_msg(tpu_fe_model_load("resnet50", m, err, sizeof err) == TPU_OK, "%s", err);
  enum { r = 4, P1 = r * 112 * 112, P2 = r * 56 * 56 };   /* batch 32 on tpu-v2-8's 8 cores */
  /* in plan order: the forward matmuls in listing order, then dW and dX
  ** (dW: A transposed; dX: B transposed) in reverse listing order */
  static const struct { const char *layer, *what; int M, N, K; } want[] = {
    { "conv1_conv", "matmul", P1, 64, 147 },             /* 230x230x3 (conv1_pad), 7x7/2 -> 112x112x64 */
    { "conv2_block1_1_conv", "matmul", P2, 64, 64 },    /* 56x56x64 (pool1_pool), 1x1 -> 64 */
    { "conv2_block1_2_conv", "matmul", P2, 64, 576 },   /* 3x3 same -> 64 */
    { "conv2_block1_0_conv", "matmul", P2, 256, 64 },   /* the projection: 1x1 of pool1_pool -> 256 */
    { "conv2_block1_3_conv", "matmul", P2, 256, 64 },   /* 1x1 -> 256 */
    { "conv2_block1_3_conv", "dW", 64, 256, P2 }, { "conv2_block1_3_conv", "dX", P2, 64, 256 },
    { "conv2_block1_0_conv", "dW", 64, 256, P2 }, { "conv2_block1_0_conv", "dX", P2, 64, 256 },
    { "conv2_block1_2_conv", "dW", 576, 64, P2 }, { "conv2_block1_2_conv", "dX", P2, 576, 64 },
    { "conv2_block1_1_conv", "dW", 64, 64, P2 }, { "conv2_block1_1_conv", "dX", P2, 64, 64 },
    { "conv1_conv", "dW", 147, 64, P1 },   /* no dX: nothing before it learns */
  };
  const int n = (int)(sizeof want / sizeof want[0]);
  unsigned char ours[TPU_FE_MAX_LAYERS] = { 0 };
  for (int k = 0; k < n; k++) ours[layer_named(m, want[k].layer)] = 1;
  fe_plan *p;
  ck_assert_int_eq(fe_plan_create(m, r, 8 * r, TPU_PREC_BF16, true, &p), TPU_OK);
  int k = 0, all = 0;
  for (int s = 0; s < p->nsteps; s++) {
    const fe_step *st = &p->steps[s];
    if (st->kind != FE_STEP_GEMM) continue;
    all++;
    if (st->layer < 0 || !ours[st->layer]) continue;
    const fe_gemm_step *g = &st->gemm;
    ck_assert_msg(k < n, "an extra GEMM: %s of layer %d", g->what, st->layer);
    const bool fwd = !strcmp(want[k].what, "matmul");
    ck_assert_msg(!strcmp(m->layers[st->layer].name, want[k].layer) && !strcmp(g->what, want[k].what) &&
                  st->phase == (fwd ? FE_FORWARD : FE_BACKWARD) && g->M == want[k].M && g->N == want[k].N &&
                  g->K == want[k].K && g->ta == !strcmp(want[k].what, "dW") && g->tb == !strcmp(want[k].what, "dX") &&
                  !g->acc, "GEMM %d\n  Expected: %s %s M %d N %d K %d\n  Actual:   %s %s %s M %d N %d K %d ta %d tb %d",
                  k, want[k].layer, want[k].what, want[k].M, want[k].N, want[k].K, fe_phase_name(st->phase),
                  m->layers[st->layer].name, g->what, g->M, g->N, g->K, g->ta, g->tb);
    k++;
  }
  ck_assert_int_eq(k, n);
  /* the whole step: 53 convolutions and the classifier, each with matmul and dW, and dX but for conv1_conv */
  ck_assert_int_eq(all, 54 * 3 - 1);
  fe_plan_destroy(p);
  free(m);
}
END_TEST

/* batch_normalization counts as Keras: 4*C parameters, gamma and beta
** trainable, the moving mean and variance not; center/scale drop beta/gamma. */
START_TEST(Batch_normalization_has_the_keras_parameter_counts) {
  tpu_fe_model m = parse_ok("{ \"input\": [8, 8, 3], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 64, \"kernel\": 3 },"
                            " { \"type\": \"batch_normalization\" }, { \"type\": \"flatten\" },"
                            " { \"type\": \"dense\", \"units\": 2 } ] }");
  const tpu_fe_layer *bn = &m.layers[1];
  TU_EQ_U64(256, bn->nw + bn->nb + bn->ns);
  TU_EQ_U64(128, bn->nw + bn->nb);
  TU_EQ_U64(128, m.nstate);
  TU_EQ_U64(3 * 3 * 3 * 64 + 64 + 256 + 6 * 6 * 64 * 2 + 2, m.nparams);
  ck_assert(bn->momentum == 0.99 && bn->epsilon == 1e-3);
  m = parse_ok("{ \"input\": [5], \"layers\": [ { \"type\": \"batch_normalization\", \"center\": false,"
               " \"scale\": false }, { \"type\": \"dense\", \"units\": 2 } ] }");
  TU_EQ_U64(10, m.layers[0].nw + m.layers[0].nb + m.layers[0].ns);
  TU_EQ_U64(10, m.nstate);
  parse_err("{ \"input\": [5], \"layers\": [ { \"type\": \"batch_normalization\", \"momentum\": 1 },"
            " { \"type\": \"dense\", \"units\": 2 } ] }", "momentum");
  parse_err("{ \"input\": [5], \"layers\": [ { \"type\": \"batch_normalization\", \"axis\": 1 },"
            " { \"type\": \"dense\", \"units\": 2 } ] }", "axis");
  parse_err("{ \"input\": [5], \"layers\": [ { \"type\": \"batch_normalization\", \"epsilon\": 0 },"
            " { \"type\": \"dense\", \"units\": 2 } ] }", "epsilon");
}
END_TEST

START_TEST(Bad_models_name_the_layer_the_field_and_the_shapes) {
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": 3 },\n"
            "  { \"type\": \"dense2\" } ] }", "t.json:2:13: layers[1]: field 'type': unknown layer 'dense2'");
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\" } ] }",
            "layers[0] (dense): field 'units': missing");
  parse_err("{ \"input\": [8, 8, 1], \"layers\": [ { \"type\": \"dense\", \"units\": 3 } ] }",
            "the last layer's output 8x8x3 is not flat");   /* dense is applied at every pixel */
  parse_err("{ \"input\": [4, 4, 1], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 5 },"
            " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 2 } ] }",
            "layers[0] (conv2d): field 'kernel': 5x5 does not fit the input shape 4x4x1 with padding \"valid\"");
  parse_err("{ \"input\": [16], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1 } ] }",
            "layers[0] (conv2d): input shape 16 is flat");
  parse_err("{ \"input\": [2, 2, 3], \"layers\": [ { \"type\": \"global_avgpool\" }, { \"type\": \"relu\" },"
            " { \"type\": \"zero_padding\" } ] }", "layers[2] (zero_padding): input shape 3 is flat");
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": -1 } ] }",
            "t.json:1:57: layers[0] (dense): field 'units': expected an integer in 1..1048576");
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": 2, \"unit\": 3 } ] }",
            "layers[0] (dense): field 'unit': unknown field; allowed here: type, name, inputs, units");
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dropout\", \"rate\": 1.0 } ] }",
            "layers[0] (dropout): field 'rate': expected a number in [0, 1)");
  parse_err("{ \"input\": [4, 4, 2], \"layers\": [ { \"type\": \"maxpool\", \"size\": 2 } ] }",
            "the last layer's output 2x2x2 is not flat");
  parse_err("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": 2 } ], \"optimizer\": { \"type\": \"rmsprop\" } }",
            "optimizer: field 'type': expected \"sgd\", \"momentum\" or \"adam\"");
  parse_err("{ \"input\": [4], \"layers\": [ ", "t.json:1:");
  parse_err("{ \"layers\": [ { \"type\": \"dense\", \"units\": 2 } ] }", "field 'input': missing");
}
END_TEST

#define GRAPH(layers) "{ \"input\": [8, 8, 2], \"layers\": [ " layers " ] }"
#define CONV(nm, f, in) "{ \"type\": \"conv2d\", \"name\": \"" nm "\", \"filters\": " #f ", \"kernel\": 1" in " }, "
#define HEAD "{ \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 }"
START_TEST(Bad_graphs_name_the_layers_and_the_shapes) {
  parse_err(GRAPH(CONV("a", 4, ", \"inputs\": \"b\"") CONV("b", 4, ", \"inputs\": \"a\"") HEAD),
            "layers[0] (conv2d 'a'): field 'inputs': a cycle: it takes its input from layers[1] (conv2d 'b'), "
            "which depends on it");
  parse_err(GRAPH(CONV("a", 4, ", \"inputs\": \"a\"") HEAD), "layers[0] (conv2d 'a'): field 'inputs': a cycle");
  parse_err(GRAPH(CONV("a", 4, ", \"inputs\": \"zz\"") HEAD),
            "layers[0] (conv2d 'a'): field 'inputs': unknown input 'zz'");
  parse_err(GRAPH(CONV("a", 4, "") CONV("b", 3, ", \"inputs\": \"input\"")
                  "{ \"type\": \"add\", \"inputs\": [\"a\", \"b\"] }, " HEAD),
            "layers[2] (add): input shapes do not match: layers[0] (conv2d 'a') gives 8x8x4, layers[1] (conv2d 'b') "
            "gives 8x8x3; add needs equal shapes");
  parse_err(GRAPH(CONV("a", 4, "") "{ \"type\": \"maxpool\", \"name\": \"p\", \"inputs\": \"input\" }, "
                  "{ \"type\": \"concatenate\", \"inputs\": [\"a\", \"p\"] }, " HEAD),
            "layers[2] (concatenate): input shapes do not match: layers[0] (conv2d 'a') gives 8x8x4, layers[1] "
            "(maxpool 'p') gives 4x4x2; concatenate joins channels and needs equal height and width");
  parse_err(GRAPH(CONV("a", 4, "") CONV("b", 3, ", \"inputs\": \"input\"")
                  "{ \"type\": \"flatten\", \"inputs\": \"a\" }, { \"type\": \"dense\", \"units\": 3 }"),
            "layers[1] (conv2d 'b'): an unused branch: no later layer takes its output 8x8x3");
  parse_err(GRAPH(CONV("a", 4, "") "{ \"type\": \"dense\", \"units\": 3, \"inputs\": \"f\" }, "
                  "{ \"type\": \"flatten\", \"name\": \"f\", \"inputs\": \"a\" }"),
            "layers[1] (dense): field 'inputs': layers[2] (flatten 'f') is listed after it");
  parse_err(GRAPH(CONV("a", 4, "") CONV("a", 4, "") HEAD), "layers[1] (conv2d 'a'): field 'name': 'a' is already "
            "the name of layers[0]");
  parse_err(GRAPH("{ \"type\": \"add\", \"inputs\": [\"input\"] }, " HEAD),
            "layers[0] (add): field 'inputs': expected an array of 2..8 layer names");
  parse_err(GRAPH("{ \"type\": \"relu\", \"inputs\": [\"input\", \"input\"] }, " HEAD),
            "layers[0] (relu): field 'inputs': expected one layer name");
}
END_TEST

START_TEST(Activation_fields_and_new_layers_are_checked) {
  parse_err(GRAPH("{ \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1, \"activation\": \"softmax\" }, " HEAD),
            "layers[0] (conv2d): an \"activation\": \"softmax\" is supported only at the model's output");
  parse_err(GRAPH("{ \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1, \"activation\": \"elu\" }, " HEAD),
            "layers[0] (conv2d): field 'activation': unknown activation 'elu'; expected linear, relu, relu6, tanh, sigmoid or softmax");
  parse_err(GRAPH("{ \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1, \"use_bias\": 0 }, " HEAD),
            "layers[0] (conv2d): field 'use_bias': expected true or false");
  /* Keras' counts: Conv2D(8, 3, use_bias=False) on 8x8x2 has 144 weights */
  tpu_fe_model m = parse_ok(GRAPH("{ \"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"use_bias\": false }, "
                                  "{ \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 3 }"));
  TU_EQ_U64(3 * 3 * 2 * 8 + 8 * 3 + 3, m.nparams);
  ck_assert_int_eq(m.layers[1].out.c, 8);
  ck_assert_int_eq(m.layers[1].out.h, 1);
  tpu_fe_model z = parse_ok(GRAPH("{ \"type\": \"zero_padding\", \"padding\": [[1, 0], [2, 1]] }, "
                                  "{ \"type\": \"zero_padding\", \"padding\": [3, 0] }, " HEAD));
  ck_assert_int_eq(z.layers[0].out.h, 9);
  ck_assert_int_eq(z.layers[0].out.w, 11);
  ck_assert_int_eq(z.layers[1].out.h, 15);
  ck_assert_int_eq(z.layers[1].out.w, 11);
  parse_err(GRAPH("{ \"type\": \"zero_padding\", \"padding\": [1, -1] }, " HEAD),
            "layers[0] (zero_padding): field 'padding': expected p, [h, w] or [[top, bottom], [left, right]]");
  /* Xception's MaxPooling2D(3, strides=2, padding='same'): 147 -> 74 */
  tpu_fe_model xp = parse_ok("{ \"input\": [147, 147, 1], \"layers\": [ { \"type\": \"maxpool\", \"size\": 3, "
                             "\"stride\": 2, \"padding\": \"same\" }, " HEAD "] }");
  ck_assert_int_eq(xp.layers[0].out.h, 74);
  ck_assert_int_eq(xp.layers[0].pad_top, 1);
  /* avgpool 'same' leaves the padding out of the count (TensorFlow): [1 2 3] -> [1.5 2.5 3] */
  tpu_fe_model ap = parse_ok("{ \"input\": [1, 3, 1], \"layers\": [ { \"type\": \"avgpool\", \"size\": 2, "
                             "\"stride\": 1, \"padding\": \"same\" }, " HEAD "] }");
  {
    tpu_fe_backend rb = { .kind = TPU_FE_BACKEND_REFERENCE };
    fe_core_ws ws;
    fe_plan *pl;
    float prm[12] = { 0 }, in[3] = { 1, 2, 3 };
    ck_assert_int_eq(fe_ws_create(&ap, 1, &ws), TPU_OK);
    ck_assert_int_eq(fe_plan_create(&ap, 1, 1, TPU_PREC_BF16, false, &pl), TPU_OK);
    ck_assert_int_eq(fe_forward(pl, &rb, prm, &ws, in, NULL, 0, 0), TPU_OK);
    ck_assert(ws.act[1][0] == 1.5f && ws.act[1][1] == 2.5f && ws.act[1][2] == 3.0f);
    fe_plan_destroy(pl);
    fe_ws_destroy(&ap, &ws);
  }
  /* a softmax output is folded into the loss: the same loss as the logits' */
  tpu_fe_model a = parse_ok("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": 3 } ] }");
  tpu_fe_model b = parse_ok("{ \"input\": [4], \"layers\": [ { \"type\": \"dense\", \"units\": 3, "
                            "\"activation\": \"softmax\" } ] }");
  tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  float p[15], x[8] = { 1, -2, 3, 0.5f, -1, 0, 2, 1 };
  int32_t y[2] = { 0, 2 };
  for (int k = 0; k < 15; k++) p[k] = 0.1f * (float)(k % 7) - 0.3f;
  double loss[2];
  for (int v = 0; v < 2; v++) {
    fe_core_ws ws;
    fe_plan *pl;
    ck_assert_int_eq(fe_ws_create(v ? &b : &a, 2, &ws), TPU_OK);
    ck_assert_int_eq(fe_plan_create(v ? &b : &a, 2, 2, TPU_PREC_BF16, false, &pl), TPU_OK);
    ck_assert_int_eq(fe_forward(pl, &be, p, &ws, x, y, 0, 0), TPU_OK);
    loss[v] = ws.loss_sum;
    fe_plan_destroy(pl);
    fe_ws_destroy(v ? &b : &a, &ws);
  }
  ck_assert(loss[0] == loss[1] && loss[0] > 0);
}
END_TEST

/* depthwise_conv2d and separable_conv2d count as Keras' DepthwiseConv2D and
** SeparableConv2D; relu's max_value and the relu6 activation; the checks. */
START_TEST(Depthwise_and_separable_layers_have_the_keras_parameter_counts) {
  tpu_fe_model m = parse_ok("{ \"input\": [9, 9, 6], \"layers\": [ { \"type\": \"depthwise_conv2d\", \"kernel\": 3,"
                            " \"depth_multiplier\": 2, \"stride\": 2 }, { \"type\": \"separable_conv2d\", \"filters\": 5,"
                            " \"kernel\": [3, 2], \"padding\": \"same\", \"activation\": \"relu6\" },"
                            " { \"type\": \"relu\", \"max_value\": 0.5 }, { \"type\": \"separable_conv2d\", \"filters\": 4,"
                            " \"kernel\": 1, \"use_bias\": false, \"depth_multiplier\": 3 },"
                            " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 2 } ] }");
  const tpu_fe_layer *d = &m.layers[0], *s1 = &m.layers[1], *r = &m.layers[2], *s2 = &m.layers[3];
  ck_assert(d->out.h == 4 && d->out.w == 4 && d->out.c == 12);     /* valid, stride 2: (9-3)/2+1 */
  TU_EQ_U64(3 * 3 * 6 * 2, d->nw);                                    /* kh x kw x C x dm */
  TU_EQ_U64(12, d->nb);
  ck_assert(s1->out.h == 4 && s1->out.c == 5);
  TU_EQ_U64(3 * 2 * 12 + 12 * 5, s1->nw);                             /* depthwise, then pointwise */
  TU_EQ_U64(12 * 5, s1->nw2);
  TU_EQ_U64(5, s1->nb);
  ck_assert(s1->act == TPU_FE_RELU && s1->capped && s1->max_value == 6.0);
  ck_assert(r->capped && r->max_value == 0.5);
  TU_EQ_U64(5 * 3 + 15 * 4, s2->nw);
  TU_EQ_U64(0, s2->nb);
  TU_EQ_U64(108 + 12 + 132 + 5 + 75 + 4 * 4 * 4 * 2 + 2, m.nparams);
  TU_EQ_U64(3 * 2 * 12 * 12, m.max_wx);                               /* s1's kernel, block-diagonal */
  ck_assert(!parse_ok(GRAPH("{ \"type\": \"relu\" }, " HEAD)).layers[0].capped);
  static const struct { const char *json, *want; } BAD[] = {   /* each with the message it must give */
    { GRAPH("{ \"type\": \"depthwise_conv2d\", \"kernel\": 3, \"filters\": 4 }, " HEAD),
      "layers[0] (depthwise_conv2d): field 'filters': unknown field" },
    { GRAPH("{ \"type\": \"depthwise_conv2d\", \"kernel\": 3, \"depth_multiplier\": 0 }, " HEAD),
      "layers[0] (depthwise_conv2d): field 'depth_multiplier': expected an integer in 1..4096" },
    { GRAPH("{ \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"groups\": 4 }, " HEAD),
      "layers[0] (conv2d): field 'groups': 4 does not divide the 2 input channels and the 4 filters" },
    { GRAPH("{ \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"groups\": 2 }, " HEAD),
      "layers[0] (conv2d): field 'groups': 2 does not divide the 2 input channels and the 3 filters" },
    { GRAPH("{ \"type\": \"depthwise_conv2d\", \"kernel\": 3, \"groups\": 2 }, " HEAD),
      "layers[0] (depthwise_conv2d): field 'groups': unknown field" },
    { GRAPH("{ \"type\": \"separable_conv2d\", \"kernel\": 3 }, " HEAD),
      "layers[0] (separable_conv2d): field 'filters': missing" },
    { GRAPH("{ \"type\": \"separable_conv2d\", \"filters\": 2, \"kernel\": 9 }, " HEAD),
      "layers[0] (separable_conv2d): field 'kernel': 9x9 does not fit the input shape 8x8x2 with padding \"valid\"" },
    { "{ \"input\": [8], \"layers\": [ { \"type\": \"depthwise_conv2d\", \"kernel\": 1 },"
      " { \"type\": \"dense\", \"units\": 2 } ] }", "layers[0] (depthwise_conv2d): input shape 8 is flat" },
    { GRAPH("{ \"type\": \"relu\", \"max_value\": -1 }, " HEAD), "layers[0] (relu): field 'max_value'" },
    { GRAPH("{ \"type\": \"tanh\", \"max_value\": 1 }, " HEAD), "layers[0] (tanh): field 'max_value': unknown field" },
  };
  for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) parse_err(BAD[k].json, BAD[k].want);
}
END_TEST

/* Parameters of model m (returned, for the caller to free) and then the
** n inputs x, drawn normal from 'seed'. */
static float *normal_params(const tpu_fe_model *m, uint64_t seed, float *x, int n) {
  tu_rng r = { seed };
  float *p = malloc(m->nparams * sizeof *p);
  for (size_t k = 0; k < m->nparams; k++) p[k] = tu_normal(&r);
  for (int k = 0; k < n; k++) x[k] = tu_normal(&r);
  return p;
}
/* The first layer's output of model m's inference forward on the B samples
** x with parameters p, on backend 'kind' (0 reference, 1 sim at bf16): a
** copy the caller frees. */
static float *first_layer_out(const tpu_fe_model *m, int kind, int B, const float *p, const float *x) {
  tpu_fe_backend be = { .kind = (tpu_fe_backend_kind)kind, .mxu = tpu_mxu_config_default(), .mxus = 1,
                        .prec = TPU_PREC_BF16 };
  fe_core_ws ws;
  fe_plan *pl;
  ck_assert_int_eq(fe_ws_create(m, B, &ws), TPU_OK);
  ck_assert_int_eq(fe_plan_create(m, B, B, TPU_PREC_BF16, false, &pl), TPU_OK);
  ck_assert_int_eq(fe_forward(pl, &be, p, &ws, x, NULL, 0, 0), TPU_OK);
  const size_t n = (size_t)B * tpu_fe_shape_size(m->layers[0].out);
  float *y = malloc(n * sizeof *y);
  memcpy(y, ws.act[1], n * sizeof *y);
  fe_plan_destroy(pl);
  fe_ws_destroy(m, &ws);
  return y;
}

/* The depthwise GEMM on its block-diagonal operand is the depthwise
** convolution: against a direct loop (f32 on the reference backend, within
** bf16 rounding on the sim one), stride 2 'same' with depth multiplier 2. */
START_TEST(A_depthwise_gemm_is_the_depthwise_convolution) {
  tpu_fe_model m = parse_ok("{ \"input\": [5, 6, 3], \"layers\": [ { \"type\": \"depthwise_conv2d\", \"kernel\": [3, 2],"
                            " \"stride\": 2, \"padding\": \"same\", \"depth_multiplier\": 2 }, { \"type\": \"flatten\" },"
                            " { \"type\": \"dense\", \"units\": 2 } ] }");
  const tpu_fe_layer *d = &m.layers[0];
  ck_assert(d->out.h == 3 && d->out.w == 3 && d->out.c == 6 && d->pad_top == 1 && d->pad_left == 0);
  enum { B = 2, H = 5, W = 6, C = 3, DM = 2 };
  float x[B * H * W * C], *p = normal_params(&m, 17, x, B * H * W * C);
  for (int kind = 0; kind < 2; kind++) {
    float *y = first_layer_out(&m, kind, B, p, x);
    for (int b = 0; b < B; b++)
      for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
          for (int c = 0; c < C; c++)
            for (int q = 0; q < DM; q++) {
              double want = p[d->boff + (size_t)(c * DM + q)], mag = 0;
              for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 2; kx++) {
                  const int iy = oy * 2 + ky - 1, ix = ox * 2 + kx;
                  if (iy < 0 || iy >= H || ix >= W) continue;
                  const double v = (double)x[((b * H + iy) * W + ix) * C + c] * p[((ky * 2 + kx) * C + c) * DM + q];
                  want += v;
                  mag += fabs(v);
                }
              const float got = y[((b * 3 + oy) * 3 + ox) * C * DM + c * DM + q];
              ck_assert_msg(fabs(got - want) <= (kind ? 1.6e-2 : 1e-5) * (mag + 1),
                            "backend %d, output (%d, %d, %d, %d, %d): %g, want %g", kind, b, oy, ox, c, q, got, want);
            }
    free(y);
  }
  free(p);
}
END_TEST

/* conv2d with groups 3 (Keras' Conv2D groups): output channel f reads only
** its group's C/G input channels with the kernel kh x kw x C/G x F, on both
** backends, against the direct sum; the parameter count is Keras'
** (kh*kw*(C/G)*F + F). */
START_TEST(A_grouped_conv_reads_only_its_groups_channels) {
  tpu_fe_model m = parse_ok("{ \"input\": [5, 6, 6], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 9,"
                            " \"kernel\": [3, 2], \"stride\": 2, \"padding\": \"same\", \"groups\": 3 },"
                            " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 2 } ] }");
  enum { B = 2, H = 5, W = 6, C = 6, F = 9, G = 3, CG = C / G, FG = F / G };
  const tpu_fe_layer *d = &m.layers[0];
  ck_assert(d->out.h == 3 && d->out.w == 3 && d->out.c == F && d->nw == 3 * 2 * CG * F && d->nb == F);
  ck_assert(m.max_wx == 3 * 2 * C * F);   /* the expanded kernel, block-diagonal */
  float x[B * H * W * C], *p = normal_params(&m, 23, x, B * H * W * C);
  for (int kind = 0; kind < 2; kind++) {
    float *y = first_layer_out(&m, kind, B, p, x);
    for (int b = 0; b < B; b++)
      for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
          for (int f = 0; f < F; f++) {
            double want = p[d->boff + (size_t)f], mag = 0;
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 2; kx++)
                for (int ci = 0; ci < CG; ci++) {
                  const int iy = oy * 2 + ky - 1, ix = ox * 2 + kx, c = (f / FG) * CG + ci;
                  if (iy < 0 || iy >= H || ix >= W) continue;
                  const double v = (double)x[((b * H + iy) * W + ix) * C + c] * p[((ky * 2 + kx) * CG + ci) * F + f];
                  want += v;
                  mag += fabs(v);
                }
            const float got = y[((b * 3 + oy) * 3 + ox) * F + f];
            ck_assert_msg(fabs(got - want) <= (kind ? 1.6e-2 : 1e-5) * (mag + 1),
                          "backend %d, output (%d, %d, %d, %d): %g, want %g", kind, b, oy, ox, f, got, want);
          }
    free(y);
  }
  free(p);
}
END_TEST

/* No small cap: a chain of 1000 layers loads, and plans. */
START_TEST(A_model_may_have_a_thousand_layers) {
  tpu_text t = { 0 };
  tpu_text_printf(&t, "%s", "{ \"input\": [4], \"layers\": [ ");
  for (int i = 0; i < 999; i++) tpu_text_printf(&t, "{ \"type\": \"%s\" }, ", i % 2 ? "relu" : "tanh");
  tpu_text_printf(&t, "%s", "{ \"type\": \"dense\", \"units\": 3 } ] }");
  tpu_fe_model *m = malloc(sizeof *m);
  char err[512];
  ck_assert_msg(tpu_fe_model_parse(t.s, "t.json", m, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_int_eq(m->nlayers, 1000);
  fe_plan *pl;
  ck_assert_int_eq(fe_plan_create(m, 2, 2, TPU_PREC_BF16, true, &pl), TPU_OK);
  int gemms = 0;
  for (int k = 0; k < pl->nsteps; k++) gemms += pl->steps[k].kind == FE_STEP_GEMM;
  ck_assert_int_eq(gemms, 2);   /* the dense layer's matmul and dW: no dX (nothing upstream learns) */
  fe_plan_destroy(pl);
  free(m);
  tpu_free(t.s);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Gradients: analytic (backward) against central differences of the
** f64-accumulated loss, on small models that chain every layer kind.
** ================================================================== */
/* a tiny BERT: token ids (with a token-type table), position_embedding,
** an encoder block, the first token taken to a tanh pooler */
#define TINY_BERT \
  "{ \"input\": [7], \"layers\": [ { \"type\": \"embedding\", \"input_dim\": 11, \"output_dim\": 4, \"token_types\": 2 }," \
  " { \"type\": \"position_embedding\", \"max_length\": 9 }, { \"type\": \"layer_normalization\", \"name\": \"e\" }," \
  " { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2, \"key_dim\": 2 }," \
  " { \"type\": \"add\", \"inputs\": [\"a\", \"e\"] }, { \"type\": \"take\", \"position\": 0 }," \
  " { \"type\": \"dense\", \"units\": 4, \"activation\": \"tanh\" }, { \"type\": \"dense\", \"units\": 3 } ] }"
static const char *const GRAD_MODELS[] = {
  "{ \"input\": [5], \"layers\": [ { \"type\": \"dense\", \"units\": 4 }, { \"type\": \"tanh\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"units\": 5 }, { \"type\": \"sigmoid\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"units\": 7 }, { \"type\": \"relu\" },"
  " { \"type\": \"dropout\", \"rate\": 0.3 }, { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [6, 6, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"relu\" }, { \"type\": \"maxpool\", \"size\": 2 }, { \"type\": \"flatten\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [7, 7, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": [3, 2], \"stride\": 2 },"
  " { \"type\": \"tanh\" }, { \"type\": \"avgpool\", \"size\": 2, \"stride\": 1 }, { \"type\": \"flatten\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [5, 5, 1], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 2, \"stride\": 2, \"padding\": \"same\" },"
  " { \"type\": \"sigmoid\" }, { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* graphs: a skip connection summed by add; d0 feeds tanh, add and d2, so
  ** its gradient is one copy and two sums (add's, and a DTMP one) */
  "{ \"input\": [5], \"layers\": [ { \"type\": \"dense\", \"name\": \"d0\", \"units\": 4 }, { \"type\": \"tanh\" },"
  " { \"type\": \"dense\", \"name\": \"d1\", \"units\": 4 }, { \"type\": \"add\", \"name\": \"s\", \"inputs\": [\"d1\", \"d0\"] },"
  " { \"type\": \"dense\", \"name\": \"d2\", \"units\": 2, \"inputs\": \"d0\" },"
  " { \"type\": \"concatenate\", \"inputs\": [\"s\", \"d2\"] }, { \"type\": \"sigmoid\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* concatenate of three branches, r feeding all three (gradients summed) */
  "{ \"input\": [6, 6, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"relu\", \"name\": \"r\" }, { \"type\": \"conv2d\", \"name\": \"a\", \"filters\": 2, \"kernel\": 1 },"
  " { \"type\": \"conv2d\", \"name\": \"b\", \"inputs\": \"r\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"concatenate\", \"inputs\": [\"a\", \"b\", \"r\"] }, { \"type\": \"avgpool\", \"size\": 2 },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* "activation" and "use_bias" on conv2d and dense, global_avgpool, a
  ** softmax layer at the output (folded into the loss) */
  "{ \"input\": [6, 5, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\","
  " \"activation\": \"tanh\", \"use_bias\": false }, { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 2,"
  " \"activation\": \"sigmoid\" }, { \"type\": \"global_avgpool\" },"
  " { \"type\": \"dense\", \"units\": 3, \"activation\": \"tanh\" }, { \"type\": \"softmax\" } ] }",
  "{ \"input\": [5], \"layers\": [ { \"type\": \"dense\", \"units\": 4, \"activation\": \"relu\" },"
  " { \"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\", \"use_bias\": false } ] }",
  /* zero_padding, asymmetric (Keras' ((1, 0), (2, 1))) and symmetric */
  "{ \"input\": [5, 4, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1 },"
  " { \"type\": \"zero_padding\", \"padding\": [[1, 0], [2, 1]] },"
  " { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"activation\": \"tanh\" },"
  " { \"type\": \"zero_padding\", \"padding\": 1 }, { \"type\": \"avgpool\", \"size\": 2 },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* "padding": "same" for pools (max ignores the padding, avg leaves it out of the count) */
  "{ \"input\": [5, 5, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 1, \"activation\": \"tanh\" },"
  " { \"type\": \"maxpool\", \"size\": 2, \"padding\": \"same\" },"
  " { \"type\": \"avgpool\", \"size\": 3, \"stride\": 2, \"padding\": \"same\" },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* batch_normalization: on a dense layer's units (defaults), and on conv2d
  ** channels without gamma, then without beta */
  "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"units\": 5 }, { \"type\": \"batch_normalization\" },"
  " { \"type\": \"tanh\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [4, 4, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"batch_normalization\", \"scale\": false, \"momentum\": 0.9 }, { \"type\": \"tanh\" },"
  " { \"type\": \"batch_normalization\", \"center\": false, \"epsilon\": 0.01 },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* conv2d on a 1x1 image (a valid convolution's output; ResNet50's last
  ** stage at 32x32): an image, not a vector, padded 'same' and 1x1 */
  "{ \"input\": [3, 3, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3 },"
  " { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\", \"activation\": \"tanh\" },"
  " { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 1 }, { \"type\": \"flatten\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* depthwise_conv2d: depth multiplier 2, stride 2 'valid', bias, relu6
  ** (the cap is far above these values); a capped relu layer at 1.5 */
  "{ \"input\": [7, 6, 2], \"layers\": [ { \"type\": \"depthwise_conv2d\", \"kernel\": [3, 2], \"stride\": 2,"
  " \"depth_multiplier\": 2, \"activation\": \"relu6\" }, { \"type\": \"relu\", \"max_value\": 1.5 },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* separable_conv2d: 'same' without bias after a conv (so dX flows through
  ** both halves), then with depth multiplier 2, bias and tanh */
  "{ \"input\": [5, 5, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 1 },"
  " { \"type\": \"separable_conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\", \"use_bias\": false },"
  " { \"type\": \"separable_conv2d\", \"filters\": 2, \"kernel\": 2, \"stride\": 2, \"depth_multiplier\": 2,"
  " \"activation\": \"tanh\" }, { \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* a sequence (6 positions of 5): dense at every position, gelu, a
  ** residual add, layer_normalization, global_avgpool over the positions */
  "{ \"input\": [6, 5], \"layers\": [ { \"type\": \"dense\", \"name\": \"e\", \"units\": 5 },"
  " { \"type\": \"dense\", \"units\": 8 }, { \"type\": \"gelu\" },"
  " { \"type\": \"dense\", \"name\": \"d\", \"units\": 5 }, { \"type\": \"add\", \"inputs\": [\"d\", \"e\"] },"
  " { \"type\": \"layer_normalization\" }, { \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* gelu's tanh form, swish, multiply (x * x too: two gradients summed),
  ** leaky_relu, layer_normalization without beta */
  "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"name\": \"p\", \"units\": 6 },"
  " { \"type\": \"swish\", \"name\": \"q\" }, { \"type\": \"gelu\", \"name\": \"g\", \"inputs\": \"p\", \"approximate\": true },"
  " { \"type\": \"multiply\", \"name\": \"m\", \"inputs\": [\"q\", \"g\"] },"
  " { \"type\": \"multiply\", \"inputs\": [\"m\", \"m\"] }, { \"type\": \"leaky_relu\", \"negative_slope\": 0.2 },"
  " { \"type\": \"layer_normalization\", \"center\": false, \"epsilon\": 0.01 }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* dense on an image (each pixel), leaky_relu at Keras' default slope,
  ** layer_normalization without gamma on its channels */
  "{ \"input\": [3, 2, 2], \"layers\": [ { \"type\": \"dense\", \"units\": 4 }, { \"type\": \"leaky_relu\" },"
  " { \"type\": \"layer_normalization\", \"scale\": false }, { \"type\": \"flatten\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* multi_head_attention: a pre-norm transformer block over 5 positions
  ** of 6 (causal, value_dim apart from key_dim, dropout on the weights),
  ** then one without bias over a dense's output (its input needs no dX);
  ** layer_normalization in each so that the sim backend checks it too */
  "{ \"input\": [5, 6], \"layers\": [ { \"type\": \"layer_normalization\", \"name\": \"n\" },"
  " { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2, \"key_dim\": 3, \"value_dim\": 4,"
  " \"causal\": true, \"dropout\": 0.2 }, { \"type\": \"add\", \"inputs\": [\"a\", \"n\"] },"
  " { \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  "{ \"input\": [4, 5], \"layers\": [ { \"type\": \"dense\", \"units\": 6, \"use_bias\": false },"
  " { \"type\": \"multi_head_attention\", \"num_heads\": 3, \"key_dim\": 2, \"use_bias\": false },"
  " { \"type\": \"layer_normalization\" }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  TINY_BERT,
  /* tied: GPT-2's language-model head, a dense reading the token table
  ** transposed, on the last token of a causal block (the table's gradient
  ** sums the gather's and the head's); and on every position of a
  ** sequence, a token-type table beside (its row's gradient apart) */
  "{ \"input\": [6], \"layers\": [ { \"type\": \"embedding\", \"name\": \"wte\", \"input_dim\": 9, \"output_dim\": 4 },"
  " { \"type\": \"position_embedding\", \"max_length\": 6 }, { \"type\": \"layer_normalization\", \"name\": \"n\" },"
  " { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2, \"key_dim\": 2, \"causal\": true },"
  " { \"type\": \"add\", \"inputs\": [\"a\", \"n\"] }, { \"type\": \"take\", \"position\": 5 },"
  " { \"type\": \"layer_normalization\" }, { \"type\": \"dense\", \"tied_to\": \"wte\" } ] }",
  "{ \"input\": [5], \"layers\": [ { \"type\": \"embedding\", \"name\": \"e\", \"input_dim\": 7, \"output_dim\": 3,"
  " \"token_types\": 2 }, { \"type\": \"layer_normalization\" }, { \"type\": \"dense\", \"tied_to\": \"e\", \"units\": 7 },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* GPT-2's training: the tied head on every position and the next-token
  ** loss (each position against the input's next id, the last left out) */
  "{ \"input\": [5], \"layers\": [ { \"type\": \"embedding\", \"name\": \"e\", \"input_dim\": 7, \"output_dim\": 4 },"
  " { \"type\": \"position_embedding\", \"name\": \"p\", \"max_length\": 5 }, { \"type\": \"layer_normalization\" },"
  " { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2, \"key_dim\": 2, \"causal\": true },"
  " { \"type\": \"add\", \"inputs\": [\"a\", \"p\"] }, { \"type\": \"layer_normalization\" },"
  " { \"type\": \"dense\", \"tied_to\": \"e\" } ], \"loss\": \"next_token_softmax_cross_entropy\" }",
  /* a tiny ViT: 2x2 patches of a 4x4x2 image by a strided conv2d,
  ** reshaped to 4 positions, the class token, position_embedding, a
  ** pre-norm attention block, the class token's output to the head */
  "{ \"input\": [4, 4, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 2, \"stride\": 2 },"
  " { \"type\": \"reshape\", \"target_shape\": [-1, 4] }, { \"type\": \"class_token\" },"
  " { \"type\": \"position_embedding\", \"name\": \"p\", \"max_length\": 5 },"
  " { \"type\": \"layer_normalization\" }, { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2,"
  " \"key_dim\": 2 }, { \"type\": \"add\", \"inputs\": [\"a\", \"p\"] }, { \"type\": \"take\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* a softmax layer inside the model (on each position's channels), and
  ** the output's softmax before a reshape: folded into the loss */
  "{ \"input\": [3, 4], \"layers\": [ { \"type\": \"dense\", \"units\": 5 }, { \"type\": \"softmax\" },"
  " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 }, { \"type\": \"softmax\" },"
  " { \"type\": \"reshape\", \"target_shape\": [3] } ] }",
  /* permute: a sequence's axes swapped (a dense over its positions), and an
  ** image's (2, 3, 1) */
  "{ \"input\": [3, 4], \"layers\": [ { \"type\": \"dense\", \"units\": 5 }, { \"type\": \"permute\", \"dims\": [2, 1] },"
  " { \"type\": \"dense\", \"units\": 2 }, { \"type\": \"softmax\" }, { \"type\": \"permute\", \"dims\": [2, 1] },"
  " { \"type\": \"layer_normalization\" }, { \"type\": \"reshape\", \"target_shape\": [2, 5, 1] },"
  " { \"type\": \"permute\", \"dims\": [2, 3, 1] }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
  /* rescaling (per channel, with an offset), normalization (given, and
  ** adapted), after a conv2d so that dX goes through them; squeeze-and-
  ** excite's broadcasting multiply, the gate second and first; a
  ** dropout of whole samples */
  "{ \"input\": [4, 4, 3], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": 1 },"
  " { \"type\": \"rescaling\", \"scale\": [0.5, -2, 1.5], \"offset\": [0.1, 0, -0.3] },"
  " { \"type\": \"normalization\", \"mean\": [0.1, 0.2, -0.1], \"variance\": [2, 0.5, 1] },"
  " { \"type\": \"normalization\" }, { \"type\": \"rescaling\", \"scale\": 0.7 },"
  " { \"type\": \"conv2d\", \"name\": \"m\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\" },"
  " { \"type\": \"swish\", \"name\": \"ms\" }, { \"type\": \"global_avgpool\" },"
  " { \"type\": \"reshape\", \"target_shape\": [1, 1, 4] }, { \"type\": \"conv2d\", \"filters\": 2, \"kernel\": 1 },"
  " { \"type\": \"swish\" }, { \"type\": \"conv2d\", \"name\": \"g\", \"filters\": 4, \"kernel\": 1,"
  " \"activation\": \"sigmoid\" }, { \"type\": \"multiply\", \"name\": \"x\", \"inputs\": [\"ms\", \"g\"] },"
  " { \"type\": \"multiply\", \"inputs\": [\"g\", \"x\"] }, { \"type\": \"dropout\", \"rate\": 0.4,"
  " \"per_sample\": true }, { \"type\": \"flatten\" },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* add of three, one of them the model input (which needs no gradient) */
  "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"name\": \"p\", \"units\": 6 },"
  " { \"type\": \"tanh\", \"name\": \"q\" }, { \"type\": \"add\", \"inputs\": [\"input\", \"p\", \"q\"] },"
  " { \"type\": \"dense\", \"units\": 3 } ] }",
  /* binary heads (binary cross-entropy on the sigmoid's logit, labels 0
  ** and 1): a dense of one sigmoid unit, its loss by default; a sigmoid
  ** layer after a conv's one value, then a flatten, the loss named */
  "{ \"input\": [5], \"layers\": [ { \"type\": \"dense\", \"units\": 4, \"activation\": \"tanh\" },"
  " { \"type\": \"dense\", \"units\": 1, \"activation\": \"sigmoid\" } ] }",
  "{ \"input\": [3, 3, 2], \"loss\": \"binary_cross_entropy\", \"layers\": [ { \"type\": \"conv2d\", \"filters\": 3,"
  " \"kernel\": 2, \"activation\": \"relu\" }, { \"type\": \"conv2d\", \"filters\": 1, \"kernel\": 2 },"
  " { \"type\": \"sigmoid\" }, { \"type\": \"flatten\" } ] }",
  /* two outputs (Keras' loss_weights): class scores under softmax
  ** cross-entropy and a tanh value under mean squared error (its head's
  ** loss by default) at weight 0.5; then an output that also feeds the
  ** other (its gradient: its loss's plus the other's, summed) */
  "{ \"input\": [5], \"outputs\": [ { \"layer\": \"p\", \"loss\": \"softmax_cross_entropy\" },"
  " { \"layer\": \"v\", \"weight\": 0.5 } ], \"layers\": [ { \"type\": \"dense\", \"name\": \"h\", \"units\": 4,"
  " \"activation\": \"tanh\" }, { \"type\": \"dense\", \"name\": \"p\", \"units\": 3 },"
  " { \"type\": \"dense\", \"name\": \"v\", \"inputs\": \"h\", \"units\": 1, \"activation\": \"tanh\" } ] }",
  "{ \"input\": [4], \"outputs\": [ { \"layer\": \"a\", \"weight\": 2 }, { \"layer\": \"b\", \"weight\": 0.25 } ],"
  " \"layers\": [ { \"type\": \"dense\", \"name\": \"a\", \"units\": 3 },"
  " { \"type\": \"dense\", \"name\": \"b\", \"units\": 1 } ] }",
  /* one output with a weight: its loss scaled */
  "{ \"input\": [4], \"outputs\": [ { \"layer\": \"s\", \"weight\": 3 } ], \"layers\": [ { \"type\": \"dense\","
  " \"units\": 3, \"activation\": \"tanh\" }, { \"type\": \"dense\", \"name\": \"s\", \"units\": 3,"
  " \"activation\": \"softmax\" } ] }",
  /* grouped conv2d (Keras' groups, last so that the models before keep
  ** their seeds): 'same' with bias and tanh after a 1x1 conv (dX flows
  ** through it), then 'valid', stride 2, without bias */
  "{ \"input\": [5, 5, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 1 },"
  " { \"type\": \"conv2d\", \"filters\": 6, \"kernel\": 3, \"groups\": 2, \"padding\": \"same\","
  " \"activation\": \"tanh\" }, { \"type\": \"conv2d\", \"filters\": 3, \"kernel\": [2, 3], \"stride\": 2,"
  " \"groups\": 3, \"use_bias\": false }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 3 } ] }",
};

static double loss_at(const fe_plan *pl, const tpu_fe_backend *be, const float *p, fe_core_ws *ws,
                      const float *x, const int32_t *y) {
  ck_assert_int_eq(fe_forward(pl, be, p, ws, x, y, 7, 0), TPU_OK);
  return ws->loss_sum;
}

/* A per-sample dropout (Keras' noise_shape (None, 1, 1, 1)) keeps or
** drops each sample whole: its mask is one value per sample, 0 or
** 1/(1 - rate), over 64 samples some of each. */
START_TEST(A_per_sample_dropout_keeps_or_drops_whole_samples) {
  tpu_fe_model m = parse_ok("{ \"input\": [2, 2, 3], \"layers\": [ { \"type\": \"dropout\", \"rate\": 0.5,"
                            " \"per_sample\": true }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 2 } ] }");
  ck_assert(m.layers[0].per_sample);
  tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE, .mxu = tpu_mxu_config_default(), .mxus = 1,
                        .prec = TPU_PREC_BF16 };
  const int B = 64;
  fe_core_ws ws;
  fe_plan *pl;
  ck_assert_int_eq(fe_ws_create(&m, B, &ws), TPU_OK);
  ck_assert_int_eq(fe_plan_create(&m, B, B, TPU_PREC_BF16, true, &pl), TPU_OK);
  float *p = calloc(m.nparams, sizeof *p), *x = calloc((size_t)B * 12, sizeof *x);
  int32_t y[64] = { 0 };
  ck_assert_int_eq(fe_forward(pl, &be, p, &ws, x, y, 3, 0), TPU_OK);
  int kept = 0;
  for (int b = 0; b < B; b++) {
    for (int e = 1; e < 12; e++) ck_assert(ws.mask[0][b * 12 + e] == ws.mask[0][b * 12]);
    ck_assert(ws.mask[0][b * 12] == 0.0f || ws.mask[0][b * 12] == 2.0f);
    kept += ws.mask[0][b * 12] > 0;
  }
  ck_assert(kept > 0 && kept < B);
  free(p);
  free(x);
  fe_plan_destroy(pl);
  fe_ws_destroy(&m, &ws);
}
END_TEST

/* A workspace for pl's model and its forward with the loss on the
** reference backend (ws: the caller's, fe_ws_destroy). */
static void forward_reference(const fe_plan *pl, const float *p, const float *x, const int32_t *y, fe_core_ws *ws) {
  tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  ck_assert_int_eq(fe_ws_create(pl->model, pl->rows, ws), TPU_OK);
  ck_assert_int_eq(fe_forward(pl, &be, p, ws, x, y, 0, 0), TPU_OK);
}

/* A binary head: the plan leaves the sigmoid out (a view of the logit)
** and ends in sigmoid_bce and binary_accuracy; the value path's loss is
** the mean binary cross-entropy of the logits computed by hand, its
** accuracy the count of sigmoid > 0.5 against the labels. */
START_TEST(A_binary_head_trains_with_binary_cross_entropy_on_its_logit) {
  tpu_fe_model m = parse_ok("{ \"input\": [3], \"layers\": [ { \"type\": \"dense\", \"units\": 1 },"
                            " { \"type\": \"sigmoid\" } ] }");
  ck_assert_int_eq(m.loss, TPU_FE_LOSS_BINARY_XENT);
  ck_assert_int_eq(tpu_fe_model_label_classes(&m), 2);
  ck_assert_str_eq(tpu_fe_loss_name(m.loss), "binary_cross_entropy");
  m.policy = TPU_FE_FLOAT32;
  enum { B = 6 };
  fe_plan *pl;
  ck_assert_int_eq(fe_plan_create(&m, B, B, TPU_PREC_BF16, true, &pl), TPU_OK);
  int sig = 0, bce = 0, bacc = 0, views = 0;
  for (int k = 0; k < pl->nsteps; k++) {
    const fe_step *st = &pl->steps[k];
    views += st->kind == FE_STEP_VIEW && st->layer == 1;
    if (st->kind != FE_STEP_VPU) continue;
    sig += st->vpu.op == TPU_VPU_SIGMOID || st->vpu.op == TPU_VPU_SIGMOID_GRAD;
    bce += st->vpu.op == TPU_VPU_SIGMOID_BCE && st->vpu.rows == B && st->vpu.cols == 1;
    bacc += st->vpu.op == TPU_VPU_BINARY_ACCURACY;
  }
  ck_assert_int_eq(sig, 0);
  ck_assert_int_eq(bce, 1);
  ck_assert_int_eq(bacc, 1);
  ck_assert_int_eq(views, 2);   /* forward and backward */
  float p[4] = { 0.5f, -1.0f, 2.0f, 0.25f }, x[B * 3];   /* kernel 3 x 1, bias */
  int32_t y[B] = { 1, 0, 1, 1, 0, 0 };
  for (int k = 0; k < B * 3; k++) x[k] = (float)((k * 7) % 5) - 2.0f;
  fe_core_ws ws;
  forward_reference(pl, p, x, y, &ws);
  double want = 0;
  int hits = 0;
  for (int b = 0; b < B; b++) {
    const double v = x[b * 3] * 0.5 - x[b * 3 + 1] + x[b * 3 + 2] * 2.0 + 0.25;   /* exact in f32 too */
    want += fmax(v, 0) - v * y[b] + log1p(exp(-fabs(v)));
    hits += (v > 0) == (y[b] == 1);
  }
  ck_assert_msg(fabs(ws.loss_sum - want) <= 1e-6 * want, "Expected %.9g\n  Actual %.9g", want, ws.loss_sum);
  ck_assert_int_eq(ws.correct, hits);
  /* a label of 2 on a binary head is bad input */
  y[3] = 2;
  ck_assert_int_eq(fe_forward(pl, &(tpu_fe_backend){ .kind = TPU_FE_BACKEND_REFERENCE }, p, &ws, x, y, 0, 0),
                   TPU_ERR_INPUT);
  fe_ws_destroy(&m, &ws);
  fe_plan_destroy(pl);
}
END_TEST

/* Two outputs: the value path's loss is the weighted sum of the class
** scores' softmax cross-entropy and the tanh value's squared error against
** 2*label/(classes-1) - 1, both computed by hand; the accuracy is output
** 0's. Each output's own loss, unweighted, is kept too (Keras'
** <output>_loss), and the trainer reports its mean on both backends. */
START_TEST(Two_outputs_train_the_weighted_sum_of_their_losses) {
  tpu_fe_model m = parse_ok("{ \"input\": [2], \"outputs\": [ { \"layer\": \"p\", \"weight\": 2 },"
                            " { \"layer\": \"v\", \"weight\": 0.5 } ], \"layers\": [ { \"type\": \"dense\","
                            " \"name\": \"p\", \"units\": 3 }, { \"type\": \"dense\", \"name\": \"v\", \"inputs\": \"input\","
                            " \"units\": 1, \"activation\": \"tanh\" } ] }");
  ck_assert_int_eq(m.nout, 2);
  ck_assert_int_eq(m.out[1].loss, TPU_FE_LOSS_MSE);
  ck_assert_int_eq(tpu_fe_model_label_classes(&m), 3);
  m.policy = TPU_FE_FLOAT32;
  enum { B = 4 };
  fe_plan *pl;
  ck_assert_int_eq(fe_plan_create(&m, B, B, TPU_PREC_BF16, true, &pl), TPU_OK);
  /* p: kernel 2 x 3, bias 3; v: kernel 2 x 1, bias 1 */
  float p[12] = { 0.5f, -1, 0.25f, 1, 0, -0.5f, 0.1f, 0, -0.1f, 0.75f, -0.25f, 0.125f }, x[B * 2];
  int32_t y[B] = { 0, 2, 1, 2 };
  for (int k = 0; k < B * 2; k++) x[k] = (float)(k % 3) - 0.5f * (float)(k % 2);
  fe_core_ws ws;
  forward_reference(pl, p, x, y, &ws);
  double want = 0, own[2] = { 0, 0 };
  int hits = 0;
  for (int b = 0; b < B; b++) {
    double z[3], mx = -1e300, s = 0;
    int arg = 0;
    for (int c = 0; c < 3; c++) {
      z[c] = x[2 * b] * p[c] + x[2 * b + 1] * p[3 + c] + p[6 + c];
      if (z[c] > mx) { mx = z[c]; arg = c; }
    }
    for (int c = 0; c < 3; c++) s += exp(z[c] - mx);
    const double ce = log(s) - (z[y[b]] - mx), t = 2.0 * y[b] / 2 - 1;
    const double v = tanh(x[2 * b] * p[9] + x[2 * b + 1] * p[10] + p[11]);
    want += 2 * ce + 0.5 * (v - t) * (v - t);
    own[0] += ce;
    own[1] += (v - t) * (v - t);
    hits += arg == y[b];
  }
  ck_assert_msg(fabs(ws.loss_sum - want) <= 1e-5 * want, "Expected %.9g\n  Actual %.9g", want, ws.loss_sum);
  ck_assert_int_eq(ws.correct, hits);
  for (int k = 0; k < 2; k++) ck_assert(fabs(ws.out_loss_sum[k] - own[k]) <= 1e-5 * own[k]);
  ck_assert(fabs(2 * ws.out_loss_sum[0] + 0.5 * ws.out_loss_sum[1] - ws.loss_sum) <= 1e-12 * want);
  fe_ws_destroy(&m, &ws);
  fe_plan_destroy(pl);
  for (int kind = 0; kind < 2; kind++) {   /* the trainer's step: the batch's means, before its update */
    tpu_fe_backend be = { .kind = kind ? TPU_FE_BACKEND_SIM : TPU_FE_BACKEND_REFERENCE,
                          .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16X6 };
    tpu_fe_trainer t;
    ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, 1, B, 1, &t), TPU_OK);
    memcpy(t.params, p, sizeof p);
    double loss;
    int correct;
    ck_assert_int_eq(tpu_fe_trainer_step(&t, x, y, 0, 0, &loss, &correct), TPU_OK);
    ck_assert(fabs(loss - want / B) <= 1e-4 * want / B);
    for (int k = 0; k < 2; k++) ck_assert(fabs(t.output_loss[k] - own[k] / B) <= 1e-4 * own[k] / B);
    ck_assert(fabs(2 * t.output_loss[0] + 0.5 * t.output_loss[1] - loss) <= 1e-12 * loss);
    tpu_fe_trainer_destroy(&t);
  }
}
END_TEST

/* On the reference backend (OpenBLAS f32) every model; on the sim backend
** (the MXU at bf16x6, near f32; the float32 policy) the models from the
** sequence one on, whose layers came with transformers, and the binary
** heads and the grouped convolutions. */
static void gradient_check(int i, tpu_fe_backend_kind kind);
START_TEST(Every_layer_gradient_matches_finite_differences) {
  gradient_check(_i, TPU_FE_BACKEND_REFERENCE);
  if (strstr(GRAD_MODELS[_i], "layer_normalization") || strstr(GRAD_MODELS[_i], "rescaling") ||
      strstr(GRAD_MODELS[_i], "\"units\": 1,") || strstr(GRAD_MODELS[_i], "binary_cross_entropy") ||
      strstr(GRAD_MODELS[_i], "outputs") || strstr(GRAD_MODELS[_i], "groups"))
    gradient_check(_i, TPU_FE_BACKEND_SIM);
}
END_TEST

static void gradient_check(int _i, tpu_fe_backend_kind kind) {
  const char *json = GRAD_MODELS[_i];
  tpu_fe_model m = parse_ok(json);
  m.policy = TPU_FE_FLOAT32;
  tpu_fe_backend be = { .kind = kind, .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16X6 };
  const int B = 3;
  fe_core_ws ws;
  fe_plan *pl;
  ck_assert_int_eq(fe_ws_create(&m, B, &ws), TPU_OK);
  ck_assert_int_eq(fe_plan_create(&m, B, B, TPU_PREC_BF16, true, &pl), TPU_OK);
  float *p = malloc(m.nparams * sizeof *p);
  size_t in = tpu_fe_shape_size(m.input);
  float *x = malloc((size_t)B * in * sizeof *x);
  int32_t y[3] = { 0, 2, 1 };
  if (m.loss == TPU_FE_LOSS_BINARY_XENT) y[1] = 1;   /* labels 0 and 1 */
  tu_rng r = { 42 + (uint64_t)_i };
  for (size_t k = 0; k < m.nparams; k++) p[k] = 0.5f * tu_normal(&r);
  for (int l = 0; l < m.nlayers; l++)   /* an adapted normalization's variance: positive */
    for (int c = 0; m.layers[l].kind == TPU_FE_NORMALIZATION && c < (int)m.layers[l].ns / 2; c++)
      p[m.layers[l].soff + (size_t)m.layers[l].out.c + (size_t)c] = fabsf(p[m.layers[l].soff + (size_t)c]) + 0.5f;
  for (size_t k = 0; k < (size_t)B * in; k++)   /* token ids for an embedding */
    x[k] = m.layers[0].kind == TPU_FE_EMBEDDING ? (float)((k * 5 + 3) % (size_t)m.layers[0].input_dim) : tu_normal(&r);
  loss_at(pl, &be, p, &ws, x, y);
  ck_assert_int_eq(fe_backward(pl, &be, p, &ws), TPU_OK);
  float *g = malloc(m.nparams * sizeof *g);
  memcpy(g, ws.grad, m.nparams * sizeof *g);
  double worst = 0;
  for (size_t k = 0; k < m.nparams; k++) {
    bool state = false;   /* non-trainable: no gradient */
    for (int l = 0; l < m.nlayers; l++) state = state || (k >= m.layers[l].soff && k < m.layers[l].soff + m.layers[l].ns);
    if (state) continue;
    /* central differences at h = 1e-3; where the f32 loss's rounding noise
    ** (about 1e-7 of the loss, over a difference of 2h) shows, once more at
    ** h = 1e-2, whose truncation error is still far below the bound: a
    ** wrong gradient fails both */
    double num = 0, err = 1;
    for (float h = 1e-3f; err >= 2e-2 && h < 2e-2f; h *= 10) {
      const float p0 = p[k];
      p[k] = p0 + h;
      double up = loss_at(pl, &be, p, &ws, x, y);
      double hu = (double)p[k] - p0;
      p[k] = p0 - h;
      double dn = loss_at(pl, &be, p, &ws, x, y);
      double hd = p0 - (double)p[k];
      p[k] = p0;
      num = (up - dn) / (hu + hd) / B;
      err = fabs(num - g[k]) / (fabs(num) + fabs((double)g[k]) + 1e-2);
    }
    if (err > worst) worst = err;
    ck_assert_msg(err < 2e-2, "model %d param %zu, backend %d\n  Expected (finite difference): %.8g\n"
                  "  Actual (backward): %.8g", _i, k, (int)kind, num, (double)g[k]);
  }
  free(p); free(x); free(g);
  fe_plan_destroy(pl);
  fe_ws_destroy(&m, &ws);
}
/* }================================================================== */

/* {==================================================================
** Data parallelism and determinism
** ================================================================== */
static uint64_t train_steps(const tpu_fe_model *m, tpu_fe_backend_kind kind, int cores, int threads, int steps) {
  tpu_fe_backend be = { .kind = kind, .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16 };
  tpu_fe_trainer t;
  const int gb = 16;
  ck_assert_int_eq(tpu_fe_trainer_create(m, &be, cores, gb, threads, &t), TPU_OK);
  tpu_fe_dataset d;
  char err[256];
  ck_assert_int_eq(tpu_fe_feed_test_set(&(tpu_fe_feed_opts){ .data = "synthetic", .synthetic_n = 4 * gb * steps, .seed = 3 }, &d, err, sizeof err), TPU_OK);
  ck_assert_int_eq(d.n, gb * steps);
  size_t in = tpu_fe_shape_size(m->input);
  for (int s = 0; s < steps; s++) {
    double loss;
    int cor;
    ck_assert_int_eq(tpu_fe_trainer_step(&t, d.x + (size_t)s * gb * in, d.y + s * gb, (uint64_t)s,
                                     (uint64_t)s * gb, &loss, &cor), TPU_OK);
    ck_assert(isfinite(loss));
  }
  uint64_t h = tpu_fe_params_hash(t.params, m->nparams);
  tpu_fe_trainer_destroy(&t);
  tpu_fe_dataset_free(&d);
  return h;
}

/* Two steps of m on 8 cores at global batch 16 with `threads` threads, on
** seeded data made for the model (token ids below an embedding's
** input_dim, labels below its label classes): the parameters' hash. */
static uint64_t train_own_data(const tpu_fe_model *m, tpu_fe_backend_kind kind, int threads) {
  tpu_fe_backend be = { .kind = kind, .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16 };
  enum { GB = 16, STEPS = 2 };
  tpu_fe_trainer t;
  ck_assert_int_eq(tpu_fe_trainer_create(m, &be, 8, GB, threads, &t), TPU_OK);
  const size_t in = tpu_fe_shape_size(m->input);
  const int vocab = tpu_fe_model_vocab(m), classes = tpu_fe_model_label_classes(m);
  float *x = malloc((size_t)GB * in * sizeof *x);
  int32_t y[GB];
  tu_rng r = { 11 };
  for (int s = 0; s < STEPS; s++) {
    for (size_t k = 0; k < (size_t)GB * in; k++)
      x[k] = vocab ? (float)(tu_next(&r) % (uint64_t)vocab) : tu_normal(&r);
    for (int b = 0; b < GB; b++) y[b] = (int32_t)(tu_next(&r) % (uint64_t)classes);
    double loss;
    int cor;
    ck_assert_int_eq(tpu_fe_trainer_step(&t, x, y, (uint64_t)s, (uint64_t)s * GB, &loss, &cor), TPU_OK);
    ck_assert(isfinite(loss));
  }
  const uint64_t h = tpu_fe_params_hash(t.params, m->nparams);
  free(x);
  tpu_fe_trainer_destroy(&t);
  return h;
}

/* The layers and losses of #29 and #30 give the same bits for 1, 2 and 8
** threads: a grouped conv, rescaling, adapted normalization, the
** squeeze-and-excite gate, per-sample dropout; a binary head; two outputs;
** a language model's tied head and next-token loss. */
START_TEST(New_layers_and_losses_are_identical_for_1_2_and_8_threads) {
  static const char *const MODELS[] = {
    "{ \"input\": [6, 6, 4], \"layers\": [ { \"type\": \"conv2d\", \"name\": \"g\", \"filters\": 8, \"kernel\": 3,"
    " \"padding\": \"same\", \"groups\": 2 }, { \"type\": \"rescaling\", \"scale\": 0.5, \"offset\": 0.1 },"
    " { \"type\": \"normalization\" }, { \"type\": \"swish\", \"name\": \"s\" }, { \"type\": \"global_avgpool\" },"
    " { \"type\": \"reshape\", \"target_shape\": [1, 1, 8] }, { \"type\": \"conv2d\", \"name\": \"e\", \"filters\": 8,"
    " \"kernel\": 1, \"activation\": \"sigmoid\" }, { \"type\": \"multiply\", \"inputs\": [\"s\", \"e\"] },"
    " { \"type\": \"dropout\", \"rate\": 0.3, \"per_sample\": true }, { \"type\": \"global_avgpool\" },"
    " { \"type\": \"dense\", \"units\": 3 } ] }",
    "{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"units\": 4, \"activation\": \"relu\" },"
    " { \"type\": \"dropout\", \"rate\": 0.25 }, { \"type\": \"dense\", \"units\": 1, \"activation\": \"sigmoid\" } ] }",
    "{ \"input\": [6], \"outputs\": [ { \"layer\": \"p\" }, { \"layer\": \"v\", \"weight\": 0.5 } ],"
    " \"layers\": [ { \"type\": \"dense\", \"name\": \"p\", \"units\": 3 }, { \"type\": \"dense\", \"name\": \"v\","
    " \"inputs\": \"input\", \"units\": 1, \"activation\": \"tanh\" } ] }",
    "{ \"input\": [6], \"loss\": \"next_token_softmax_cross_entropy\", \"layers\": [ { \"type\": \"embedding\","
    " \"name\": \"e\", \"input_dim\": 40, \"output_dim\": 8 }, { \"type\": \"layer_normalization\" },"
    " { \"type\": \"dense\", \"units\": 8 }, { \"type\": \"dense\", \"tied_to\": \"e\" } ] }",
  };
  for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
    tpu_fe_model m = parse_ok(MODELS[i]);
    for (int kind = 0; kind < 2; kind++) {
      const uint64_t h1 = train_own_data(&m, (tpu_fe_backend_kind)kind, 1);
      ck_assert_msg(h1 == train_own_data(&m, (tpu_fe_backend_kind)kind, 2), "model %zu backend %d", i, kind);
      ck_assert_msg(h1 == train_own_data(&m, (tpu_fe_backend_kind)kind, 8), "model %zu backend %d", i, kind);
    }
  }
}
END_TEST

static const char SMALL_CNN[] =
  "{ \"input\": [28, 28, 1], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"stride\": 2 },"
  " { \"type\": \"relu\" }, { \"type\": \"maxpool\", \"size\": 2 }, { \"type\": \"flatten\" },"
  " { \"type\": \"dropout\", \"rate\": 0.25 }, { \"type\": \"dense\", \"units\": 10 } ] }";

START_TEST(Results_are_identical_for_1_2_and_8_threads) {
  tpu_fe_model m = parse_ok(SMALL_CNN);
  for (int kind = 0; kind < 2; kind++) {
    uint64_t h1 = train_steps(&m, (tpu_fe_backend_kind)kind, 8, 1, 3);
    TU_EQ_U64(h1, train_steps(&m, (tpu_fe_backend_kind)kind, 8, 2, 3));
    TU_EQ_U64(h1, train_steps(&m, (tpu_fe_backend_kind)kind, 8, 8, 3));
  }
  /* depthwise and separable convs: each core expands its kernels in its
  ** own workspace */
  char err[512];
  ck_assert_msg(tpu_fe_model_load("docs/examples/small-sepconv.json", &m, err, sizeof err) == TPU_OK, "%s", err);
  for (int kind = 0; kind < 2; kind++)
    TU_EQ_U64(train_steps(&m, (tpu_fe_backend_kind)kind, 8, 1, 2), train_steps(&m, (tpu_fe_backend_kind)kind, 8, 2, 2));
  /* attention, layer_normalization, gelu: the small ViT's blocks (each
  ** core its own batched GEMMs, dropout masks per global sample) */
  ck_assert_msg(tpu_fe_model_load("docs/examples/small-vit.json", &m, err, sizeof err) == TPU_OK, "%s", err);
  m.layers[3].rate = 0.1;   /* b0_att: dropout on the attention weights */
  for (int kind = 0; kind < 2; kind++)
    TU_EQ_U64(train_steps(&m, (tpu_fe_backend_kind)kind, 8, 1, 2), train_steps(&m, (tpu_fe_backend_kind)kind, 8, 2, 2));
}
END_TEST

/* #18: a pipeline's partial last batch (no drop_remainder) was refused
** mid-training. It trains as Keras does: whole per-core shards on the
** first cores, the ragged rest on the next, the loss the mean over the
** batch's samples; the same step as a trainer whose whole batch it is, up
** to f32 summation order. Sizes outside 1..global batch are refused. */
START_TEST(A_partial_batch_trains_as_the_mean_over_its_samples) {
  tpu_fe_model m = parse_ok("{ \"input\": [6], \"layers\": [ { \"type\": \"dense\", \"units\": 5, "
                            "\"activation\": \"relu\" }, { \"type\": \"dense\", \"units\": 3 } ], "
                            "\"optimizer\": { \"type\": \"adam\", \"learning_rate\": 0.01 } }");
  enum { CORES = 4, GB = 16 };
  float x[GB * 6];
  int32_t y[GB];
  tu_rng r = { 9 };
  for (int k = 0; k < GB * 6; k++) x[k] = tu_normal(&r);
  for (int k = 0; k < GB; k++) y[k] = (int32_t)(k % 3);
  const tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  static const int sizes[] = { 10, 3, 4, 15 };      /* shards 4+4+2, 3, 4, 4+4+4+3 */
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const int n = sizes[k];
    tpu_fe_trainer a, b;
    double la, lb;
    int ca, cb;
    ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, CORES, GB, 2, &a), TPU_OK);
    ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, 1, n, 1, &b), TPU_OK);
    for (int step = 0; step < 2; step++) {
      ck_assert_int_eq(tpu_fe_trainer_step_n(&a, x, y, n, (uint64_t)step, 0, &la, &ca), TPU_OK);
      ck_assert_int_eq(tpu_fe_trainer_step(&b, x, y, (uint64_t)step, 0, &lb, &cb), TPU_OK);
      ck_assert_double_eq_tol(la, lb, 1e-5);
      ck_assert_int_eq(ca, cb);
    }
    for (size_t i = 0; i < m.nparams; i++) ck_assert_double_eq_tol(a.params[i], b.params[i], 1e-5);
    ck_assert_int_eq(tpu_fe_trainer_step_n(&a, x, y, 0, 2, 0, &la, &ca), TPU_ERR_INPUT);
    ck_assert_int_eq(tpu_fe_trainer_step_n(&a, x, y, GB + 1, 2, 0, &la, &ca), TPU_ERR_INPUT);
    tpu_fe_trainer_destroy(&a);
    tpu_fe_trainer_destroy(&b);
  }
}
END_TEST

/* Moving averages from per-core (per-replica) batch statistics, averaged in
** core order: the same bits for 1 and 2 threads on both backends; then
** inference normalizes with them. A batch_normalization on the model input
** sees the data itself, so the expected values need no model. */
START_TEST(Batch_normalization_moving_averages_are_per_core_and_thread_independent) {
  tpu_fe_model m = parse_ok("{ \"input\": [3], \"layers\": [ { \"type\": \"batch_normalization\", \"momentum\": 0.9 },"
                            " { \"type\": \"dense\", \"units\": 2 } ] }");
  enum { CORES = 2, GB = 8, PER = GB / CORES };
  float x[GB * 3];
  int32_t y[GB];
  tu_rng r = { 5 };
  for (int k = 0; k < GB * 3; k++) x[k] = 2.0f + 3.0f * tu_normal(&r);
  for (int k = 0; k < GB; k++) y[k] = (int32_t)(k & 1);
  for (int kind = 0; kind < 2; kind++) {
    tpu_fe_backend be = { .kind = (tpu_fe_backend_kind)kind, .mxu = tpu_mxu_config_default(), .mxus = 1,
                          .prec = TPU_PREC_BF16 };
    float *params[2];
    for (int th = 1; th <= 2; th++) {
      tpu_fe_trainer t;
      double loss;
      int cor;
      ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, CORES, GB, th, &t), TPU_OK);
      ck_assert_int_eq(tpu_fe_trainer_step(&t, x, y, 0, 0, &loss, &cor), TPU_OK);
      params[th - 1] = malloc(m.nparams * sizeof(float));
      memcpy(params[th - 1], t.params, m.nparams * sizeof(float));
      tpu_fe_trainer_destroy(&t);
    }
    ck_assert(memcmp(params[0], params[1], m.nparams * sizeof(float)) == 0);
    const tpu_fe_layer *bn = &m.layers[0];
    for (int c = 0; c < 3; c++) {
      double mm = 0, mv = 0;
      for (int core = 0; core < CORES; core++) {
        double s = 0, q = 0;
        for (int b = 0; b < PER; b++) s += x[(core * PER + b) * 3 + c];
        for (int b = 0; b < PER; b++) q += pow(x[(core * PER + b) * 3 + c] - s / PER, 2);
        mm += s / PER / CORES;
        mv += q / PER / CORES;   /* the per-core (biased) variances, not the global one */
      }
      ck_assert_double_eq_tol(params[0][bn->soff + (size_t)c], 0.1 * mm, 1e-5);
      ck_assert_double_eq_tol(params[0][bn->soff + 3 + (size_t)c], 0.9 + 0.1 * mv, 1e-5);
    }
    /* inference: (x - moving mean) / sqrt(moving var + eps) * gamma + beta */
    fe_plan *pl;
    fe_core_ws ws;
    ck_assert_int_eq(fe_plan_create(&m, PER, PER, TPU_PREC_BF16, false, &pl), TPU_OK);
    ck_assert_int_eq(fe_ws_create(&m, PER, &ws), TPU_OK);
    ck_assert_int_eq(fe_forward(pl, &be, params[0], &ws, x, NULL, 0, 0), TPU_OK);
    const float *P = params[0];
    for (int k = 0; k < PER * 3; k++) {
      const int c = k % 3;
      double want = (x[k] - P[bn->soff + c]) / sqrt(P[bn->soff + 3 + c] + 1e-3) * P[bn->woff + c] + P[bn->boff + c];
      /* the sim backend stores it as the mixed_bfloat16 policy has it: bf16, within half an ulp (2^-8 relative) */
      ck_assert_double_le(fabs(ws.act[1][k] - want), 1e-4 + (kind ? fabs(want) / 256.0 : 0));
      if (kind) ck_assert_float_eq(ws.act[1][k], tpu_bf16_round(ws.act[1][k]));
    }
    fe_ws_destroy(&m, &ws);
    fe_plan_destroy(pl);
    free(params[0]);
    free(params[1]);
  }
}
END_TEST

START_TEST(The_sim_backend_differs_from_f32_only_by_bf16_rounding) {
  /* one GEMM: the sim backend equals tpu_mxu_gemm on the same operands,
  ** transposes included, and stays within bf16 error of OpenBLAS */
  tpu_fe_backend ref = { .kind = TPU_FE_BACKEND_REFERENCE };
  tpu_fe_backend sim = { .kind = TPU_FE_BACKEND_SIM, .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16 };
  fe_scratch s = { 0 };
  tu_rng r = { 5 };
  const int M = 37, N = 130, K = 200;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
  float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N), *C3 = malloc(sizeof(float) * M * N);
  tu_fill(&r, A, (size_t)M * K, 0);
  tu_fill(&r, B, (size_t)K * N, 0);
  ck_assert_int_eq(fe_gemm(&ref, &s, false, false, M, N, K, A, B, C1, false), TPU_OK);
  ck_assert_int_eq(fe_gemm(&sim, &s, false, false, M, N, K, A, B, C2, false), TPU_OK);
  ck_assert_int_eq(tpu_mxu_gemm(&sim.mxu, 1, TPU_FIDELITY_TILE, TPU_PREC_BF16, M, N, K, A, B, C3, NULL), TPU_OK);
  for (int k = 0; k < M * N; k++) {
    TU_EQ_BITS(C3[k], C2[k], "sim backend vs tpu_mxu_gemm");
    ck_assert_msg(fabsf(C1[k] - C2[k]) < 0.15f, "bf16 error too large at %d: %g vs %g", k, C1[k], C2[k]);
  }
  /* transposed A: same bits as the explicit transpose */
  float *At = malloc(sizeof(float) * M * K);
  for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) At[k * M + i] = A[i * K + k];
  ck_assert_int_eq(fe_gemm(&sim, &s, true, false, M, N, K, At, B, C1, false), TPU_OK);
  for (int k = 0; k < M * N; k++) TU_EQ_BITS(C2[k], C1[k], "transposed A");
  free(A); free(B); free(C1); free(C2); free(C3); free(At);
  fe_scratch_free(&s);
}
END_TEST

START_TEST(Transposed_and_swapped_gemms_give_the_bits_of_the_plain_mxu_gemm) {
  /* every transpose flag, with shapes on both sides of the swap rule */
  static const int shapes[][3] = { { 300, 20, 50 }, { 16, 300, 40 }, { 37, 130, 200 }, { 5, 7, 3 }, { 129, 1, 257 } };
  fe_scratch s = { 0 };
  tu_rng r = { 9 };
  int swaps = 0;
  for (int pr = 0; pr < 3; pr++)
  for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++)
    for (int f = 0; f < 8; f++) {
      tpu_fe_backend sim = { .kind = TPU_FE_BACKEND_SIM, .mxu = tpu_mxu_config_default(), .mxus = 1,
                         .prec = (tpu_precision)pr };
      const int M = shapes[q][0], N = shapes[q][1], K = shapes[q][2];
      const bool ta = f & 1, tb = f & 2, acc = f & 4;
      swaps += fe_gemm_swapped(sim.prec, ta, tb, M, N, K);
      float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
      float *Ap = malloc(sizeof(float) * M * K), *Bp = malloc(sizeof(float) * K * N);
      float *C = malloc(sizeof(float) * M * N), *W = malloc(sizeof(float) * M * N);
      tu_fill(&r, A, (size_t)M * K, 0);
      tu_fill(&r, B, (size_t)K * N, 0);
      tu_fill(&r, C, (size_t)M * N, 0);
      memcpy(W, C, sizeof(float) * M * N);
      /* plain row-major operands for the reference call */
      for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) Ap[i * K + k] = ta ? A[k * M + i] : A[i * K + k];
      for (int k = 0; k < K; k++) for (int j = 0; j < N; j++) Bp[k * N + j] = tb ? B[j * K + k] : B[k * N + j];
      float *R = malloc(sizeof(float) * M * N);
      ck_assert_int_eq(tpu_mxu_gemm(&sim.mxu, 1, TPU_FIDELITY_TILE, sim.prec, M, N, K, Ap, Bp, R, NULL), TPU_OK);
      if (acc) for (int k = 0; k < M * N; k++) R[k] = W[k] + R[k];
      ck_assert_int_eq(fe_gemm(&sim, &s, ta, tb, M, N, K, A, B, C, acc), TPU_OK);
      for (int k = 0; k < M * N; k++) TU_EQ_BITS(R[k], C[k], "fe_gemm vs tpu_mxu_gemm");
      free(A); free(B); free(Ap); free(Bp); free(C); free(W); free(R);
    }
  ck_assert_msg(swaps >= 4, "the shapes exercise the swap only %d times", swaps);
  fe_scratch_free(&s);
}
END_TEST

START_TEST(A_checkpoint_restores_parameters_and_optimizer_state_exactly) {
  tpu_fe_model m = parse_ok(SMALL_CNN);
  tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  tpu_fe_trainer a, b;
  ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, 2, 8, 1, &a), TPU_OK);
  ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, 2, 8, 1, &b), TPU_OK);
  tpu_fe_dataset d;
  char err[512], dir[] = "/tmp/tpusim_ckXXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(tpu_fe_feed_test_set(&(tpu_fe_feed_opts){ .data = "synthetic", .synthetic_n = 32, .seed = 1 }, &d, err, sizeof err), TPU_OK);
  double loss;
  int cor;
  ck_assert_int_eq(tpu_fe_trainer_step(&a, d.x, d.y, 0, 0, &loss, &cor), TPU_OK);
  tpu_fe_ckpt_info info = { .seed = 1, .global_batch = 8, .epochs_done = 1, .step = 1 }, got;
  ck_assert_int_eq(tpu_fe_ckpt_save(dir, &a, &info, err, sizeof err), TPU_OK);
  ck_assert_int_eq(tpu_fe_ckpt_load(dir, &b, &info, &got, err, sizeof err), TPU_OK);
  ck_assert_int_eq(got.epochs_done, 1);
  tpu_free(got.history);
  TU_EQ_U64(tpu_fe_params_hash(a.params, m.nparams), tpu_fe_params_hash(b.params, m.nparams));
  TU_EQ_U64(tpu_fe_params_hash(a.opt.v, m.nparams), tpu_fe_params_hash(b.opt.v, m.nparams));
  TU_EQ_U64(a.opt.t, b.opt.t);
  /* a different batch is refused with a message */
  tpu_fe_ckpt_info other = info;
  other.global_batch = 16;
  ck_assert_int_eq(tpu_fe_ckpt_load(dir, &b, &other, &got, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(err, "--batch 8"));
  char path[600];
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  /* a flipped byte is caught by the CRC */
  FILE *f = fopen(path, "r+b");
  fseek(f, 100, SEEK_SET);
  fputc(0x55, f);
  fclose(f);
  ck_assert_int_eq(tpu_fe_ckpt_load(dir, &b, &info, &got, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_ptr_nonnull(strstr(err, "CRC"));
  remove(path);
  rmdir(dir);
  tpu_fe_dataset_free(&d);
  tpu_fe_trainer_destroy(&a);
  tpu_fe_trainer_destroy(&b);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Timing
** ================================================================== */
START_TEST(A_tiny_step_takes_the_hand_counted_cycles) {
  /* teach chip: 4 cores on one chip, 8x8 MXU, 1 GHz; HBM 8 B/cycle shared
  ** by the 4 cores, 100 cycles latency; VMEM 64 KiB; VPU registers 2x8
  ** (ew 1, div 4, tr 4, cross-lane 2, cross-sublane 1); ICI 1 B/cycle, 100
  ** cycles per hop. Model: 8 -> dense 4, SGD; 4 samples per core.
  **
  ** The lowering (train_lower.c): VMEM/256 = 256 values per tile, so every
  ** operand is one tile. The four cores run the same program in lockstep,
  ** so each DMA shares HBM with three others: 2 B/cycle, and a DMA of B
  ** bytes takes 100 + B/2 cycles (128 B: 164, 64 B: 132, 16 B: 108, 4 B:
  ** 102, 160 B: 180). The DMA unit runs one transfer at a time, in order.
  ** MXU (mxu.h): a tile loads K weight rows from L, streams from s = L+K, is
  ** done after s + (M-1) + (rows-1) + (N-1), busy [L, done+1).
  ** VPU (vpu.h), rb = ceil(rows/2), cb = ceil(cols/8), lgS = 1, lgL = 3:
  **   bias_add 4x4: 2 regs = 2; softmax_xent 4x4: 2*(5+4+4) + 3*2*(3*2) +
  **   2*(2+4) = 74; accuracy 4x4: 2*2 + 2*2*6 + 2*1 + (1+1) = 32;
  **   col_sum 4x4: 1*(1+1) = 2; sgd on the 36 parameters as 5x8: 3 regs*2 = 6.
  ** All-reduce of 36 f32 = 144 B over a ring of 4: 2*3/4*144 + 2*3*100 = 816.
  **
  ** Timeline of every core (the infeed is ready at 0):
  **   fwd   dma x 4x8 [0,164), dma W 8x4 [164,328), matmul 4x8.8x4:
  **         L=328, s=336, done 336+3+7+3=349 -> [328,350); dma bias 1x4
  **         [328,436); bias_add [436,438); dma y 4x4 out [438,570)
  **   loss  dma logits [570,702), dma labels 4x1 [702,810); softmax_xent
  **         [810,884); accuracy [884,916); dma dlogits out [884,1016),
  **         loss 4x1 out [1016,1124), accuracy 1x1 out [1124,1226)
  **   bwd   dma X (4x8, read transposed) [1226,1390), dma dY 4x4
  **         [1390,1522); dW = X^T.dY 8x4.4x4: L=1522, s=1526, done
  **         1526+7+7+3=1543 -> [1522,1544); col_sum dY [1522,1524); dma db
  **         out [1524,1632), dma dW out 8x4 [1632,1796)
  **   all-reduce [1796,2612)
  **   sgd   dma params 5x8 [2612,2792), grads [2792,2972); sgd
  **         [2972,2978); dma params out [2978,3158)
  ** Step: 3158. Stalls (priority mxu, vpu, infeed, memory, collective):
  **   mxu 22+22 = 44; vpu 2+74+32+6 = 114 (col_sum hides under the MXU);
  **   collective 816; memory = DMA time not under MXU/VPU: [0,436) - 22 +
  **   [438,810) + [884,1522) - 32 + [1524,1796) - 20 + [2612,2972) +
  **   [2978,3158) = 414+372+606+252+360+180 = 2184; idle 0. */
  tpu_chip_config chip = tu_chip("teach", 0);
  char err[512];
  /* one transfer in flight per core, as counted above (the engine allows
  ** dma.outstanding; tests/check_sim.c times overlapping transfers) */
  ck_assert(tpu_chip_config_set(&chip, "dma.outstanding=1", err, sizeof err) == TPU_OK);
  tpu_fe_model m = parse_ok("{ \"input\": [8], \"layers\": [ { \"type\": \"dense\", \"units\": 4 } ],"
                        " \"optimizer\": { \"type\": \"sgd\" } }");
  tpu_fe_step_timing t;
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 0, 1, &t, NULL, err, sizeof err), TPU_OK);
  TU_EQ_U64(3158, t.step_cycles);
  TU_EQ_U64(32, (uint64_t)t.stall[TPU_SIM_MXU_BUSY]);      /* 44 less the weight loads below */
  /* weight_load: [328,336) and [1524,1526) ([1522,1524) is col_sum's, vpu_busy now that the MXU's busy part
  ** starts at 1526) */
  TU_EQ_U64(10, (uint64_t)t.stall[TPU_SIM_WEIGHT_LOAD]);
  TU_EQ_U64(116, (uint64_t)t.stall[TPU_SIM_VPU_BUSY]);
  TU_EQ_U64(2184, (uint64_t)t.stall[TPU_SIM_MEMORY_WAIT]);
  TU_EQ_U64(816, (uint64_t)t.stall[TPU_SIM_COLLECTIVE_WAIT]);
  TU_EQ_U64(0, (uint64_t)t.stall[TPU_SIM_INFEED_WAIT]);
  TU_EQ_U64(0, (uint64_t)t.stall[TPU_SIM_IDLE]);
  TU_EQ_U64(4 * 8 * 4 + 8 * 4 * 4, t.macs);
  TU_EQ_U64(144, t.allreduce_bytes);
  /* the trace (core 0 of teach's 4, 1 cycle = 0.001 us): ops on their
  ** tracks, waits on the stall track (tid 0); the waits plus the MXU and
  ** VPU work not under the MXU cover the step */
  tpu_text tb = { 0 };
  tpu_sim_trace_steps_begin(&tb, chip.name, chip.cores);
  const tpu_fe_step_trace tr = { .out = &tb, .step = 7, .t0_us = 0 };
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 0, 1, &t, &tr, err, sizeof err), TPU_OK);
  tpu_sim_trace_steps_end(&tb);
  ck_assert(!tb.oom);
  json_error_t je;
  json_t *root = json_loads(tb.s, 0, &je), *doc = json_object_get(root, "traceEvents");
  ck_assert_msg(doc != NULL, "trace: %s", je.text);
  double core = 0, end = 0;
  int dmas = 0;
  size_t k;
  json_t *x;
  json_array_foreach(doc, k, x) {
    if (strcmp(json_string_value(json_object_get(x, "ph")), "X") || json_integer_value(json_object_get(x, "pid")))
      continue;
    const double a = json_number_value(json_object_get(x, "ts")) * 1000, d = json_number_value(json_object_get(x, "dur")) * 1000;
    const json_int_t tid = json_integer_value(json_object_get(x, "tid"));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(x, "args"), "step")), 7);
    if (a + d > end) end = a + d;
    if (tid == 0) core += d;
    if (tid >= 300 && tid < 400) dmas++;   /* the DMA tracks */
  }
  json_decref(root);
  tpu_free(tb.s);
  TU_EQ_U64(16, (uint64_t)dmas);
  TU_EQ_U64(3158, (uint64_t)llround(end));
  TU_EQ_U64(2184 + 816 + 10, (uint64_t)llround(core));   /* memory, collective and weight_load waits */
  /* an infeed that is late by 500 cycles adds exactly 500, as infeed_wait */
  tpu_fe_step_timing late;
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 500, 1, &late, NULL, err, sizeof err), TPU_OK);
  TU_EQ_U64(t.step_cycles + 500, late.step_cycles);
  TU_EQ_U64(500, (uint64_t)late.stall[TPU_SIM_INFEED_WAIT]);
  /* bf16x3: three passes per tile, each loading its weights while the
  ** previous one streams (L_i >= max(L_{i-1}+K, s_{i-1}), s_i >= max(L_i+K,
  ** s_{i-1}+M)). fwd (M 4, K 8): s = 336, 344, 352, done 352+13 = 365 ->
  ** [328,366) = 38. dW (M 8, K 4): s = 1526, 1534, 1542, done 1542+17 =
  ** 1559 -> [1522,1560) = 38. Both end before the DMAs that wait for them
  ** could start anyway, so the step does not change: MXU time hides under
  ** memory time. */
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16X3, 4, true, 0, 1, &late, NULL, err, sizeof err), TPU_OK);
  /* of those, weight_load: fwd the first load [328,336) and the two 4-cycle
  ** gaps while K = 8 rows load behind M = 4 streamed, 16; dW the first load
  ** [1522,1526), 2 of it under col_sum: 2 */
  TU_EQ_U64(38 + 38 - 16 - 4, (uint64_t)late.stall[TPU_SIM_MXU_BUSY]);
  TU_EQ_U64(16 + 2, (uint64_t)late.stall[TPU_SIM_WEIGHT_LOAD]);
  TU_EQ_U64(3158, late.step_cycles);
  TU_EQ_U64(2184 - 32, (uint64_t)late.stall[TPU_SIM_MEMORY_WAIT]);
}
END_TEST

START_TEST(Step_timing_is_identical_for_1_2_and_8_threads) {
  tpu_chip_config chip;
  char err[512];
  static const char *const models[] = { "mlp", "cnn" };
  ck_assert_int_eq(tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err), TPU_OK);
  for (int k = 0; k < 2; k++) {
    tpu_fe_model m;
    ck_assert_int_eq(tpu_fe_model_load(models[k], &m, err, sizeof err), TPU_OK);
    tpu_fe_step_timing t[3];
    static const int threads[3] = { 1, 2, 8 };
    for (int i = 0; i < 3; i++)
      ck_assert_msg(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 16, true, 1234, threads[i], &t[i], NULL, err,
                                 sizeof err) == TPU_OK, "%s", err);
    for (int i = 1; i < 3; i++)
      ck_assert_msg(!memcmp(&t[0], &t[i], sizeof t[0]), "%s: %d threads differ from 1 (%llu vs %llu cycles)",
                    models[k], threads[i], (unsigned long long)t[i].step_cycles,
                    (unsigned long long)t[0].step_cycles);
  }
}
END_TEST

START_TEST(Stall_parts_sum_to_the_step_for_the_builtin_models) {
  tpu_chip_config chip;
  char err[512];
  static const char *const chips[] = { "tpu-v2-8", "tpu-v3-8", "teach" };
  static const char *const models[] = { "mlp", "cnn" };
  for (int c = 0; c < 3; c++)
    for (int k = 0; k < 2; k++) {
      if (c == 2 && k == 1) continue;   /* cnn on teach's 64 KiB VMEM: millions of ops, see below */
      ck_assert_int_eq(tpu_chip_config_load(chips[c], &chip, err, sizeof err), TPU_OK);
      tpu_fe_model m;
      ck_assert_int_eq(tpu_fe_model_load(models[k], &m, err, sizeof err), TPU_OK);
      for (int train = 0; train < 2; train++) {
        tpu_fe_step_timing t;
        ck_assert_msg(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 16, train, 0, 2, &t, NULL, err, sizeof err)
                      == TPU_OK, "%s/%s: %s", chips[c], models[k], err);
        double sum = 0;
        for (int s = 0; s < TPU_SIM_NSTALL; s++) sum += t.stall[s];
        ck_assert_msg(fabs(sum - (double)t.step_cycles) < 1e-6 * (double)t.step_cycles, "%s/%s: %g vs %llu",
                      chips[c], models[k], sum, (unsigned long long)t.step_cycles);
        /* each core's parts add up to the step, and their mean is stall[] */
        for (int s = 0; s < TPU_SIM_NSTALL; s++) {
          uint64_t over_cores = 0;
          for (int core = 0; core < chip.cores; core++) over_cores += t.core_stall[core][s];
          ck_assert(over_cores == (uint64_t)llround(t.stall[s] * chip.cores));
        }
        for (int core = 0; core < TPU_MAX_CORES; core++) {
          uint64_t own = 0;
          for (int s = 0; s < TPU_SIM_NSTALL; s++) own += t.core_stall[core][s];
          ck_assert_msg(own == (core < chip.cores ? t.step_cycles : 0), "%s/%s core %d: %llu", chips[c], models[k],
                        core, (unsigned long long)own);
        }
        ck_assert(t.macs > 0 && t.macs <= t.mxu_cycles_capacity);
        ck_assert(t.hbm_bytes > 0);
        ck_assert(train ? t.stall[TPU_SIM_COLLECTIVE_WAIT] > 0 : t.stall[TPU_SIM_COLLECTIVE_WAIT] == 0);
      }
    }
}
END_TEST

/* The largest zoo model, ResNet152V2 (565 layers) at the seed's shape,
** plans and times a whole training step (batch 32 on tpu-v2-8): the stall
** parts sum to the step, the MXU does exactly the plan's work, and the
** all-reduce carries every trainable gradient. */
START_TEST(Resnet152v2_times_a_whole_training_step) {
  tpu_chip_config chip;
  char err[512];
  ck_assert_int_eq(tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err), TPU_OK);
  tpu_fe_model *m = malloc(sizeof *m);
  ck_assert_msg(tpu_fe_model_load("resnet152v2@192x192x3:5", m, err, sizeof err) == TPU_OK, "%s", err);
  const int rows = 4;
  tpu_fe_step_timing t;
  ck_assert_msg(tpu_fe_time_step(m, &chip, TPU_PREC_BF16, rows, true, 0, 2, &t, NULL, err, sizeof err) == TPU_OK,
                "%s", err);
  double sum = 0;
  for (int s = 0; s < TPU_SIM_NSTALL; s++) sum += t.stall[s];
  ck_assert_msg(fabs(sum - (double)t.step_cycles) < 1e-6 * (double)t.step_cycles, "%g vs %llu", sum,
                (unsigned long long)t.step_cycles);
  ck_assert(t.stall[TPU_SIM_MXU_BUSY] > 0 && t.stall[TPU_SIM_VPU_BUSY] > 0 && t.stall[TPU_SIM_COLLECTIVE_WAIT] > 0);
  fe_plan *p;
  ck_assert_int_eq(fe_plan_create(m, rows, rows * chip.cores, TPU_PREC_BF16, true, &p), TPU_OK);
  uint64_t macs = 0;
  for (int k = 0; k < p->nsteps; k++)
    if (p->steps[k].kind == FE_STEP_GEMM)
      macs += (uint64_t)p->steps[k].gemm.M * (uint64_t)p->steps[k].gemm.N * (uint64_t)p->steps[k].gemm.K;
  fe_plan_destroy(p);
  TU_EQ_U64(macs, t.macs);
  ck_assert(t.allreduce_bytes >= 4 * (m->nparams - m->nstate));
  free(m);
}
END_TEST

/* batch_normalization's VPU passes are timed: the stall parts still sum to
** the step, and a model with it takes longer than the same model without. */
START_TEST(Batch_normalization_is_timed_as_VPU_work) {
  tpu_chip_config chip;
  char err[512];
  ck_assert_int_eq(tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err), TPU_OK);
  static const char *const json[2] = {
    "{ \"input\": [12, 12, 3], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 32, \"kernel\": 3 },"
    " { \"type\": \"relu\" }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 4 } ] }",
    "{ \"input\": [12, 12, 3], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 32, \"kernel\": 3 },"
    " { \"type\": \"batch_normalization\" }, { \"type\": \"relu\" }, { \"type\": \"flatten\" },"
    " { \"type\": \"dense\", \"units\": 4 } ] }" };
  for (int train = 0; train < 2; train++) {
    tpu_fe_step_timing t[2];
    for (int k = 0; k < 2; k++) {
      tpu_fe_model m = parse_ok(json[k]);
      ck_assert_msg(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 16, train, 0, 2, &t[k], NULL, err, sizeof err)
                    == TPU_OK, "%s", err);
      double sum = 0;
      for (int s = 0; s < TPU_SIM_NSTALL; s++) sum += t[k].stall[s];
      ck_assert(fabs(sum - (double)t[k].step_cycles) < 1e-6 * (double)t[k].step_cycles);
    }
    ck_assert_msg(t[1].step_cycles > t[0].step_cycles, "%llu vs %llu", (unsigned long long)t[1].step_cycles,
                  (unsigned long long)t[0].step_cycles);
    ck_assert(t[1].stall[TPU_SIM_VPU_BUSY] > t[0].stall[TPU_SIM_VPU_BUSY]);
    TU_EQ_U64(t[0].macs, t[1].macs);   /* no MXU work */
  }
}
END_TEST

START_TEST(The_lowering_tiles_into_VMEM_and_says_when_it_cannot) {
  tpu_chip_config chip;
  char err[512];
  tpu_fe_model m;
  ck_assert_int_eq(tpu_chip_config_load("teach", &chip, err, sizeof err), TPU_OK);
  /* a small conv net on teach's 64 KiB: activations and im2col do not fit
  ** VMEM whole, so they stream through it in tiles; the engine accepts it */
  m = parse_ok("{ \"input\": [12, 12, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3,"
               " \"padding\": \"same\" }, { \"type\": \"relu\" }, { \"type\": \"avgpool\", \"size\": 2 },"
               " { \"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"padding\": \"same\" },"
               " { \"type\": \"tanh\" }, { \"type\": \"maxpool\", \"size\": 2 }, { \"type\": \"dropout\", \"rate\": 0.5 },"
               " { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 10 } ],"
               " \"optimizer\": { \"type\": \"momentum\", \"momentum\": 0.9 } }");
  tpu_sim_program *p = NULL;
  ck_assert_msg(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, 40, true, 0, &p, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert(tpu_sim_program_ops(p, 0) > 100);
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 1 };
  tpu_sim_result *r = NULL, *r2 = NULL;
  ck_assert_msg(tpu_sim_run(&chip, p, &o, &r) == TPU_OK, "%s", tpu_sim_program_error(p));
  ck_assert_int_eq(tpu_sim_result_cores(r), 4);
  /* the program also runs with values (the tile level: several row tiles
  ** of labels, which stay valid classes), in the same cycles */
  o.level = TPU_FIDELITY_TILE;
  ck_assert_msg(tpu_sim_run(&chip, p, &o, &r2) == TPU_OK, "%s", tpu_sim_program_error(p));
  TU_EQ_U64(tpu_sim_result_cycles(r), tpu_sim_result_cycles(r2));
  tpu_sim_result_destroy(r2);
  tpu_sim_result_destroy(r);
  tpu_sim_program_destroy(p);
  /* three loss tiles of 24 rows: the third reads its labels after the
  ** first tile's loss went to HBM */
  tpu_fe_model d = parse_ok("{ \"input\": [8], \"layers\": [ { \"type\": \"dense\", \"units\": 10 } ] }");
  ck_assert_msg(tpu_fe_step_program(&d, &chip, TPU_PREC_BF16, 72, true, 0, &p, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_msg(tpu_sim_run(&chip, p, &o, &r2) == TPU_OK, "%s", tpu_sim_program_error(p));
  tpu_sim_result_destroy(r2);
  tpu_sim_program_destroy(p);
  /* one sample per core: one-row tiles everywhere (db is then a copy) */
  tpu_fe_step_timing t;
  ck_assert_msg(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 1, true, 0, 1, &t, NULL, err, sizeof err) == TPU_OK,
                "%s", err);
  ck_assert(t.step_cycles > 0);
  /* 1000 classes need a row of logits in one tile: 256 values on teach */
  m = parse_ok("{ \"input\": [8], \"layers\": [ { \"type\": \"dense\", \"units\": 1000 } ] }");
  ck_assert_int_eq(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, 4, true, 0, &p, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert(p == NULL);
  ck_assert_msg(strstr(err, "layer 0 (dense)") && strstr(err, "1000 logits") && strstr(err, "65536 bytes"), "%s", err);
  /* a VMEM too small for any tile */
  ck_assert_int_eq(tpu_chip_config_set(&chip, "vmem.capacity_kib=1", err, sizeof err), TPU_OK);
  ck_assert_int_eq(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, 4, true, 0, &p, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(err, "1024 bytes"), "%s", err);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The step plan: the value path and the timing path run its GEMMs
** ================================================================== */
typedef struct gemm_log { fe_gemm_call calls[1024]; int n; } gemm_log;
static void record_gemm(void *ud, const fe_gemm_call *c) {
  gemm_log *l = ud;
  if (l->n < (int)(sizeof l->calls / sizeof l->calls[0])) l->calls[l->n] = *c;
  l->n++;
}

/* Every built-in model and the shipped small-cnn, small-resnet and
** small-sepconv examples. */
static int plan_models(tpu_fe_model *out, int cap) {
  char err[512];
  int n = 0;
  for (const char *const *b = tpu_fe_model_builtin_names(); *b && n < cap; b++, n++)
    ck_assert_msg(tpu_fe_model_load(*b, &out[n], err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_msg(tpu_fe_model_load("docs/examples/small-cnn.json", &out[n], err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_msg(tpu_fe_model_load("docs/examples/small-resnet.json", &out[n + 1], err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_msg(tpu_fe_model_load("docs/examples/small-sepconv.json", &out[n + 2], err, sizeof err) == TPU_OK, "%s", err);
  /* depthwise GEMMs wider than the MXU: 200 channels (2 blocks), and 130
  ** with depth multiplier 2 (3 blocks of 64 channels) */
  out[n + 3] = parse_ok("{ \"name\": \"wide-dw\", \"input\": [4, 4, 200], \"layers\": [ { \"type\": \"depthwise_conv2d\","
                        " \"kernel\": 3, \"padding\": \"same\" }, { \"type\": \"conv2d\", \"filters\": 130, \"kernel\": 1 },"
                        " { \"type\": \"separable_conv2d\", \"filters\": 8, \"kernel\": 3, \"depth_multiplier\": 2,"
                        " \"activation\": \"relu6\" }, { \"type\": \"flatten\" }, { \"type\": \"dense\", \"units\": 5 } ] }");
  /* a transformer-like block on a sequence: every new layer kind */
  out[n + 4] = parse_ok("{ \"name\": \"seq-block\", \"input\": [6, 8], \"layers\": [ { \"type\": \"dense\", \"units\": 16 },"
                        " { \"type\": \"gelu\" }, { \"type\": \"dense\", \"name\": \"d2\", \"units\": 8 },"
                        " { \"type\": \"add\", \"name\": \"r\", \"inputs\": [\"d2\", \"input\"] },"
                        " { \"type\": \"layer_normalization\", \"name\": \"ln\" }, { \"type\": \"swish\", \"name\": \"sw\" },"
                        " { \"type\": \"multiply\", \"inputs\": [\"ln\", \"sw\"] }, { \"type\": \"leaky_relu\" },"
                        " { \"type\": \"multi_head_attention\", \"num_heads\": 2, \"key_dim\": 4, \"causal\": true,"
                        " \"dropout\": 0.1 },"
                        " { \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 5 } ] }");
  /* a language model: the head tied to the token table (its GEMMs read the
  ** table transposed), the next-token loss over every position */
  out[n + 5] = parse_ok("{ \"name\": \"tiny-lm\", \"input\": [6], \"layers\": [ { \"type\": \"embedding\", \"name\": \"e\","
                        " \"input_dim\": 40, \"output_dim\": 8 }, { \"type\": \"layer_normalization\" },"
                        " { \"type\": \"dense\", \"units\": 8 }, { \"type\": \"dense\", \"tied_to\": \"e\" } ],"
                        " \"loss\": \"next_token_softmax_cross_entropy\" }");
  return n + 6;
}

/* The products the plan's GEMM steps make (a batched one: each). */
static int plan_gemms(const fe_plan *p) {
  int g = 0;
  for (int k = 0; k < p->nsteps; k++)
    if (p->steps[k].kind == FE_STEP_GEMM) g += p->steps[k].gemm.batch > 1 ? p->steps[k].gemm.batch : 1;
  return g;
}

START_TEST(The_value_path_runs_exactly_the_plans_gemms) {
  /* one training step on 2 cores (1 host thread, so core 0's GEMMs come
  ** first), recorded at fe_gemm, against the plan's GEMM steps for each core */
  tpu_fe_model models[8];
  const int nm = plan_models(models, 4);
  static const tpu_precision precs[] = { TPU_PREC_BF16, TPU_PREC_BF16X3 };
  for (int k = 0; k < nm; k++)
    for (int q = 0; q < 2; q++) {
      const tpu_fe_model *m = &models[k];
      tpu_fe_backend be = { .kind = TPU_FE_BACKEND_SIM, .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = precs[q] };
      tpu_fe_trainer t;
      const int cores = 2, rows = 2;
      ck_assert_int_eq(tpu_fe_trainer_create(m, &be, cores, cores * rows, 1, &t), TPU_OK);
      float *x = calloc((size_t)(cores * rows) * tpu_fe_shape_size(m->input), sizeof *x);
      int32_t y[4] = { 1, 2, 3, 4 };
      static gemm_log log;
      log.n = 0;
      fe_gemm_observe(record_gemm, &log);
      double loss;
      int cor;
      tpu_status st = tpu_fe_trainer_step(&t, x, y, 0, 0, &loss, &cor);
      fe_gemm_observe(NULL, NULL);
      ck_assert_int_eq(st, TPU_OK);
      const fe_plan *p = t.plan;
      const int per = plan_gemms(p);
      ck_assert_msg(per >= 2 && log.n == cores * per, "%s: %d GEMMs run, the plan has %d per core", m->name, log.n, per);
      int i = 0;
      for (int c = 0; c < cores; c++)
        for (int s = 0; s < p->nsteps; s++)
          for (int bq = 0; p->steps[s].kind == FE_STEP_GEMM && bq < (p->steps[s].gemm.batch > 1 ? p->steps[s].gemm.batch : 1);
               bq++) {
          const fe_gemm_step *g = &p->steps[s].gemm;
          const fe_gemm_call *r = &log.calls[i++];
          ck_assert_msg(r->M == g->M && r->N == g->N && r->K == g->K && r->ta == g->ta && r->tb == g->tb &&
                        r->acc == g->acc && r->swapped == g->swapped && r->prec == p->prec &&
                        tpu_precision_passes(r->prec) == g->passes,
                        "%s, core %d, plan step %d (layer %d %s):\n  Expected: %dx%dx%d ta %d tb %d acc %d swapped %d\n"
                        "  Actual:   %dx%dx%d ta %d tb %d acc %d swapped %d", m->name, c, s, p->steps[s].layer, g->what,
                        g->M, g->N, g->K, g->ta, g->tb, g->acc, g->swapped, r->M, r->N, r->K, r->ta, r->tb, r->acc,
                        r->swapped);
        }
      free(x);
      tpu_fe_trainer_destroy(&t);
    }
}
END_TEST

/* The shapes of a matmul op of the lowered program: its tile's m x n x k. */
static void op_tile(const tpu_sim_program *prog, const tpu_sim_op *op, int64_t *mi, int64_t *ni, int64_t *ki) {
  int64_t ar, ac, br, bc, cr, cc;
  ck_assert(tpu_sim_buffer_shape(prog, 0, op->a, &ar, &ac) && tpu_sim_buffer_shape(prog, 0, op->b, &br, &bc));
  ck_assert(tpu_sim_buffer_shape(prog, 0, op->dst, &cr, &cc));
  *mi = op->trans_a ? ac : ar;
  *ki = op->trans_a ? ar : ac;
  *ni = op->trans_b ? br : bc;
  ck_assert(cr == *mi && cc == *ni);
}

START_TEST(The_timing_path_lowers_exactly_the_plans_gemms) {
  /* core 0's matmul ops, in program order, grouped by name: each group is
  ** one plan GEMM tiled (its tiles cover M x N x K exactly, one K run per
  ** output tile), with the plan's transposes and precision; a depthwise one
  ** is its blocks of the MXU's width, each tiled so (fe_gemm_dw_block); a
  ** batched one (attention's) its products one after another */
  tpu_fe_model models[8];
  const int nm = plan_models(models, 4);
  tpu_chip_config chip;
  char err[512];
  ck_assert_int_eq(tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err), TPU_OK);
  static const tpu_precision precs[] = { TPU_PREC_BF16, TPU_PREC_BF16X3 };
  for (int k = 0; k < nm; k++)
    for (int q = 0; q < 2; q++)
      for (int train = 0; train < 2; train++) {
        const tpu_fe_model *m = &models[k];
        const int rows = 4;
        tpu_sim_program *prog = NULL;
        ck_assert_msg(tpu_fe_step_program(m, &chip, precs[q], rows, train, 0, &prog, err, sizeof err) == TPU_OK, "%s", err);
        fe_plan *p = NULL;
        ck_assert_int_eq(fe_plan_create(m, rows, rows * chip.cores, precs[q], train, &p), TPU_OK);
        const int nops = tpu_sim_program_ops(prog, 0);
        int o = 0, groups = 0;
        for (int s = 0; s < p->nsteps; s++) {
          if (p->steps[s].kind != FE_STEP_GEMM) continue;
          const fe_gemm_step *g = &p->steps[s].gemm;
          const fe_step *st = &p->steps[s];
          char want[160];
          snprintf(want, sizeof want, "%s %d %s %s", fe_phase_name(st->phase), st->layer,
                   tpu_fe_layer_kind_name(m->layers[st->layer].kind), g->what);
          tpu_sim_op op;
          while (o < nops && tpu_sim_program_op(prog, 0, o, &op) && op.kind != TPU_SIM_MATMUL) o++;
          ck_assert_msg(o < nops, "%s: no matmul op for plan GEMM '%s'", m->name, want);
          int64_t mnk = 0, mn = 0, K = 0;   /* K: the first output tile's run over K */
          bool first_run = true;
          int tiles = 0;
          for (; o < nops; o++) {
            ck_assert(tpu_sim_program_op(prog, 0, o, &op));
            if (op.kind != TPU_SIM_MATMUL) continue;
            if (strcmp(op.name, want)) break;
            int64_t mi, ni, ki;
            op_tile(prog, &op, &mi, &ni, &ki);
            ck_assert_msg(op.trans_a == g->ta && op.trans_b == g->tb && op.precision == p->prec,
                          "%s: '%s' tile %d has ta %d tb %d precision %d", m->name, want, tiles, op.trans_a, op.trans_b,
                          (int)op.precision);
            ck_assert_msg(tiles > 0 || !op.accumulate, "%s: '%s' starts with an accumulating tile", m->name, want);
            if (!op.accumulate) mn += mi * ni;
            if (tiles > 0 && !op.accumulate) first_run = false;
            if (first_run) K += ki;
            mnk += mi * ni * ki;
            tiles++;
          }
          const int64_t nb = g->batch > 1 ? g->batch : 1;   /* a batched GEMM: each product tiled so */
          int64_t wK = g->K, wmn = (int64_t)g->M * g->N * nb, wmnk = wmn * g->K;
          if (g->dw) {   /* the blocks' products only */
            int64_t bm, bn, bk;
            wmn = wmnk = 0;
            for (int b = 0; fe_gemm_dw_block(g, chip.mxu.cols, b, &bm, &bn, &bk); b++) {
              if (b == 0) wK = bk;
              wmn += bm * bn;
              wmnk += bm * bn * bk;
            }
          }
          ck_assert_msg(tiles > 0 && K == wK && mn == wmn && mnk == wmnk,
                        "%s: '%s'\n  Expected: %d x %d x %d (K %lld, M*N %lld, M*N*K %lld)\n"
                        "  Actual:   %d tiles, K %lld, M*N %lld, M*N*K %lld", m->name, want, g->M, g->N, g->K,
                        (long long)wK, (long long)wmn, (long long)wmnk, tiles, (long long)K, (long long)mn,
                        (long long)mnk);
          groups += (int)nb;
        }
        /* and no matmul op outside the plan's GEMMs */
        for (tpu_sim_op op; o < nops; o++)
          ck_assert_msg(!tpu_sim_program_op(prog, 0, o, &op) || op.kind != TPU_SIM_MATMUL,
                        "%s: matmul op %d ('%s') is none of the plan's GEMMs", m->name, o, op.name);
        ck_assert_int_eq(groups, plan_gemms(p));
        fe_plan_destroy(p);
        tpu_sim_program_destroy(prog);
      }
}
END_TEST
/* The depthwise mapping (fe_int.h): on tpu-v2-8's 128x128 MXU a 3x3
** depthwise conv over 256 channels streams as many activation rows through
** 128x128 weight tiles as a dense 3x3 conv from 128 channels to 256 -- each
** 128-channel block is a dense product of its 9*128 im2col columns -- while
** its useful multiply-adds are 1/128 of the dense conv's: the utilization a
** user sees is dm/128 of the dense one's. */
START_TEST(A_depthwise_conv_streams_the_MXU_as_long_as_a_dense_conv_128_times_its_work) {
  tpu_chip_config chip;
  char err[512];
  ck_assert_int_eq(tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err), TPU_OK);
  static const char *const json[2] = {
    "{ \"input\": [16, 16, 256], \"layers\": [ { \"type\": \"depthwise_conv2d\", \"kernel\": 3, \"padding\": \"same\","
    " \"use_bias\": false }, { \"type\": \"global_avgpool\" }, { \"type\": \"dense\", \"units\": 2 } ] }",
    "{ \"input\": [16, 16, 128], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 256, \"kernel\": 3,"
    " \"padding\": \"same\", \"use_bias\": false }, { \"type\": \"global_avgpool\" },"
    " { \"type\": \"dense\", \"units\": 2 } ] }" };
  const int rows = 4;
  const uint64_t R = (uint64_t)rows * 16 * 16;
  for (int train = 0; train < 2; train++) {
    tpu_fe_step_timing t[2];
    uint64_t streamed[2] = { 0, 0 };   /* activation rows through a 128x128 weight tile, the conv's ops */
    for (int k = 0; k < 2; k++) {
      tpu_fe_model m = parse_ok(json[k]);
      ck_assert_msg(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, rows, train, 0, 1, &t[k], NULL, err, sizeof err)
                    == TPU_OK, "%s", err);
      tpu_sim_program *prog = NULL;
      ck_assert_int_eq(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, rows, train, 0, &prog, err, sizeof err), TPU_OK);
      for (int o = 0; o < tpu_sim_program_ops(prog, 0); o++) {
        tpu_sim_op op;
        int64_t mi, ni, ki;
        ck_assert(tpu_sim_program_op(prog, 0, o, &op));
        if (op.kind != TPU_SIM_MATMUL || strstr(op.name, " 0 ") == NULL) continue;   /* layer 0's */
        op_tile(prog, &op, &mi, &ni, &ki);
        streamed[k] += (uint64_t)mi * (uint64_t)((ki + 127) / 128) * (uint64_t)((ni + 127) / 128);
      }
      tpu_sim_program_destroy(prog);
    }
    /* forward, and in training dW (the input needs no dX); the dense head
    ** (matmul, and in training dW and dX) is the same in both */
    const uint64_t gemms = train ? 2 : 1, head = (train ? 3 : 1) * (uint64_t)rows * 256 * 2;
    TU_EQ_U64(gemms * R * 9 * 256 + head, t[0].macs);
    TU_EQ_U64(gemms * R * 9 * 128 * 256 + head, t[1].macs);
    ck_assert_msg(streamed[0] == streamed[1] && streamed[0] > 0, "train %d: %llu rows streamed (depthwise) vs %llu",
                  train, (unsigned long long)streamed[0], (unsigned long long)streamed[1]);
    /* the MXU is busy about as long (the depthwise reads twice the input) */
    ck_assert(t[0].stall[TPU_SIM_MXU_BUSY] >= 0.9 * t[1].stall[TPU_SIM_MXU_BUSY]);
    ck_assert(t[0].stall[TPU_SIM_MXU_BUSY] <= 1.5 * t[1].stall[TPU_SIM_MXU_BUSY]);
  }
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The step's size from its shapes, and the step timer
** ================================================================== */
/* Every gradient model, the built-in models and examples, and models with
** sgd and momentum: all the lowerings; *n gets the count. */
static tpu_fe_model *size_models(int *n) {
  static tpu_fe_model m[64];
  const int ng = (int)(sizeof GRAD_MODELS / sizeof GRAD_MODELS[0]);
  int nb = 0;
  for (const char *const *b = tpu_fe_model_builtin_names(); *b; b++) nb++;
  /* room for every model below: plan_models' built-ins and its 6 more, then 2 */
  ck_assert_int_le(ng + nb + 6 + 2, (int)(sizeof m / sizeof m[0]));
  int k = 0;
  for (; k < ng; k++) m[k] = parse_ok(GRAD_MODELS[k]);
  k += plan_models(&m[k], nb);
  m[k++] = parse_ok("{ \"input\": [9, 9, 3], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 5, \"kernel\": 3 },"
                    " { \"type\": \"maxpool\", \"size\": 3, \"stride\": 2, \"padding\": \"same\" }, { \"type\": \"flatten\" },"
                    " { \"type\": \"dense\", \"units\": 1 }, { \"type\": \"dense\", \"units\": 4 } ],"
                    " \"optimizer\": { \"type\": \"sgd\" } }");
  m[k++] = parse_ok("{ \"input\": [300], \"layers\": [ { \"type\": \"dense\", \"units\": 257 }, { \"type\": \"relu\" },"
                    " { \"type\": \"dense\", \"units\": 10 } ], \"optimizer\": { \"type\": \"momentum\" } }");
  *n = k;
  return m;
}

START_TEST(The_step_size_from_the_shapes_is_the_programs) {
  /* tpu_fe_step_size_of counts, from the shapes, exactly the ops the
  ** lowering adds: every model, three chips, training and inference, a
  ** one-sample shard (one-row tiles) and larger ones, both precisions */
  int nm;
  tpu_fe_model *models = size_models(&nm);
  static const char *const chips[] = { "teach", "tpu-v2-8", "tpu-v3-8" };
  static const int rows[] = { 1, 3, 16 };
  char err[512];
  for (int c = 0; c < 3; c++) {
    tpu_chip_config chip;
    ck_assert_int_eq(tpu_chip_config_load(chips[c], &chip, err, sizeof err), TPU_OK);
    for (int k = 0; k < nm; k++)
      for (int r = 0; r < 3; r++)
        for (int train = 0; train < 2; train++) {
          const tpu_precision prec = (k + r) % 2 ? TPU_PREC_BF16X3 : TPU_PREC_BF16;
          tpu_fe_step_size z;
          ck_assert_int_eq(tpu_fe_step_size_of(&models[k], &chip, prec, rows[r], train, &z), TPU_OK);
          tpu_sim_program *p = NULL;
          tpu_status st = tpu_fe_step_program(&models[k], &chip, prec, rows[r], train, 0, &p, err, sizeof err);
          if (st == TPU_ERR_CONFIG) continue;   /* a row of logits too wide for teach's tiles */
          ck_assert_msg(st == TPU_OK, "%s: %s", models[k].name, err);
          for (int core = 0; core < chip.cores; core++)
            ck_assert_msg(tpu_sim_program_ops(p, core) == (int)z.ops_per_core,
                          "%s on %s, %d rows, train %d, core %d\n  Expected: %d ops\n  Actual:   %.0f counted", models[k].name,
                          chips[c], rows[r], train, core, tpu_sim_program_ops(p, core), z.ops_per_core);
          ck_assert(z.hbm_tensor_bytes_per_core == z.activation_bytes + z.parameter_bytes + z.gradient_bytes +
                    z.optimizer_state_bytes && z.parameter_bytes == 4.0 * (double)models[k].nparams);
          tpu_sim_program_destroy(p);
        }
  }
}
END_TEST

START_TEST(Steps_too_big_for_the_engine_or_the_hbm_are_refused_before_they_are_built) {
  tpu_chip_config chip = tu_chip("teach", 0);
  char err[1024];
  tpu_sim_program *p = NULL;
  /* 784 -> 524288 -> 10 on teach's 64 KiB tiles: 7.4 million ops per core;
  ** three steps of it in one program pass the engine's 2^24 (the cores share
  ** the program: one core's ops count, once) */
  tpu_fe_model m = parse_ok("{ \"name\": \"wide\", \"input\": [784], \"layers\": [ { \"type\": \"dense\", \"units\": 524288 },"
                            " { \"type\": \"dense\", \"units\": 10 } ] }");
  double t0 = tu_cpu_now();
  const uint64_t ready[3] = { 0, 0, 0 };
  ck_assert_int_eq(tpu_fe_steps_program(&m, &chip, TPU_PREC_BF16, 16, 3, ready, &p, err, sizeof err), TPU_ERR_RANGE);
  ck_assert(p == NULL);
  ck_assert_msg(strstr(err, "wide on teach at 16 samples per core") && strstr(err, "7389208 engine ops per core") &&
                strstr(err, "22167624 in the program, more than the engine's limit of 16777216"), "%s", err);
  /* 784 -> 65536 -> 10: parameters, gradients and Adam's two moments of
  ** 51.4 M floats on each of 4 cores do not fit teach's 1 GiB */
  m = parse_ok("{ \"name\": \"wide\", \"input\": [784], \"layers\": [ { \"type\": \"dense\", \"units\": 65536 },"
               " { \"type\": \"dense\", \"units\": 10 } ] }");
  ck_assert_int_eq(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, 16, true, 0, &p, err, sizeof err), TPU_ERR_RANGE);
  /* activations at their planned peak (bf16, reused after their last use; compile.c) */
  ck_assert_msg(strstr(err, "3343067008 bytes of HBM per chip") && strstr(err, "4 cores per chip") &&
                strstr(err, "activations and their gradients 2148672 at their planned peak") &&
                strstr(err, "parameters 208404520") && strstr(err, "optimizer state 416809040") &&
                strstr(err, "capacity of 1073741824 bytes"), "%s", err);
  tpu_fe_step_timing t;
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 16, true, 0, 1, &t, NULL, err, sizeof err), TPU_ERR_RANGE);
  ck_assert_msg(tu_cpu_now() - t0 < 1.0, "refusing took %.2f s of CPU", tu_cpu_now() - t0);
}
END_TEST

START_TEST(The_step_timer_gives_the_engines_timing_for_every_wait) {
  /* "both ways": the timer's step for a wait (the step at wait 0, shifted)
  ** against the step lowered and run on the engine with that wait, every
  ** field bit for bit */
  int nm;
  tpu_fe_model *models = size_models(&nm);
  static const char *const chips[] = { "teach", "tpu-v2-8" };
  static const uint64_t waits[] = { 0, 1, 3, 997, 123457, 50000000 };
  char err[512];
  for (int c = 0; c < 2; c++) {
    tpu_chip_config chip;
    ck_assert_int_eq(tpu_chip_config_load(chips[c], &chip, err, sizeof err), TPU_OK);
    for (int k = 0; k < nm; k++)
      for (int train = 0; train < 2; train++) {
        if (c == 0 && !strcmp(models[k].name, "cnn")) continue;   /* millions of ops on teach's VMEM */
        const int rows = 4 + k % 3;
        tpu_fe_step_timer *tm = NULL;
        tpu_status st = tpu_fe_step_timer_create(&models[k], &chip, TPU_PREC_BF16, rows, train, 2, &tm, err, sizeof err);
        if (st == TPU_ERR_CONFIG) continue;   /* a row of logits too wide for teach's tiles */
        ck_assert_msg(st == TPU_OK, "%s: %s", models[k].name, err);
        for (int w = 0; w < 6; w++) {
          tpu_fe_step_timing a, b;
          ck_assert_int_eq(tpu_fe_step_timer_time(tm, waits[w], NULL, &a, err, sizeof err), TPU_OK);
          ck_assert_msg(tpu_fe_time_step(&models[k], &chip, TPU_PREC_BF16, rows, train, waits[w], 1, &b, NULL, err,
                                         sizeof err) == TPU_OK, "%s", err);
          ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s on %s, train %d, wait %llu\n  Expected: %llu cycles, infeed_wait %.17g\n"
                        "  Actual:   %llu cycles, infeed_wait %.17g", models[k].name, chips[c], train,
                        (unsigned long long)waits[w], (unsigned long long)b.step_cycles, b.stall[TPU_SIM_INFEED_WAIT],
                        (unsigned long long)a.step_cycles, a.stall[TPU_SIM_INFEED_WAIT]);
        }
        tpu_fe_step_timer_destroy(tm);
      }
  }
  /* a traced step runs on the engine: the same trace as tpu_fe_time_step's */
  tpu_chip_config chip = tu_chip("teach", 0);
  tpu_fe_model m = parse_ok(GRAD_MODELS[3]);
  tpu_text ta = { 0 }, tb = { 0 };
  const tpu_fe_step_trace tra = { .out = &ta, .step = 3, .t0_us = 10 }, trb = { .out = &tb, .step = 3, .t0_us = 10 };
  tpu_fe_step_timer *tm = NULL;
  ck_assert_int_eq(tpu_fe_step_timer_create(&m, &chip, TPU_PREC_BF16, 4, true, 1, &tm, err, sizeof err), TPU_OK);
  tpu_fe_step_timing a, b;
  ck_assert_int_eq(tpu_fe_step_timer_time(tm, 777, &tra, &a, err, sizeof err), TPU_OK);
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 777, 1, &b, &trb, err, sizeof err), TPU_OK);
  ck_assert(!memcmp(&a, &b, sizeof a) && ta.n == tb.n && ta.n > 0 && !memcmp(ta.s, tb.s, ta.n));
  /* and after it, the timer still shifts the step at wait 0 */
  ck_assert_int_eq(tpu_fe_step_timer_time(tm, 5, NULL, &a, err, sizeof err), TPU_OK);
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 5, 1, &b, NULL, err, sizeof err), TPU_OK);
  ck_assert(!memcmp(&a, &b, sizeof a));
  tpu_fe_step_timer_destroy(tm);
  tpu_free(ta.s);
  tpu_free(tb.s);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** Out of memory: every allocation fails in turn
** ================================================================== */

/* a tiny transformer: every allocation of attention's and layer
** normalization's value path */
static const char SMALL_TRANSFORMER[] =
  "{ \"input\": [6], \"layers\": [ { \"type\": \"embedding\", \"input_dim\": 9, \"output_dim\": 4 },"
  " { \"type\": \"position_embedding\", \"max_length\": 6 }, { \"type\": \"layer_normalization\", \"name\": \"n\" },"
  " { \"type\": \"multi_head_attention\", \"name\": \"a\", \"num_heads\": 2, \"key_dim\": 2, \"dropout\": 0.1 },"
  " { \"type\": \"add\", \"inputs\": [\"a\", \"n\"] }, { \"type\": \"take\" }, { \"type\": \"dense\", \"units\": 3 } ] }";

START_TEST(Parsing_and_training_survive_every_allocation_failure) {
  for (int kind = 0; kind < 4; kind++) {   /* both backends, the small CNN then the transformer */
  int ok_seen = 0;
  for (tu_fail_at = 1; tu_fail_at < 1000 && !ok_seen; tu_fail_at++) {
    tu_alloc_calls = 0;
    tpu_set_alloc(tu_failing_alloc, NULL);
    tpu_fe_model m;
    char err[512];
    tpu_status st = tpu_fe_model_parse(kind < 2 ? SMALL_CNN : SMALL_TRANSFORMER, "t.json", &m, err, sizeof err);
    tpu_fe_trainer t;
    double loss = 0;
    int cor;
    float x[2 * 784] = { 0 };
    int32_t y[2] = { 1, 2 };
    tpu_fe_backend be = { .kind = (tpu_fe_backend_kind)(kind % 2), .mxu = tpu_mxu_config_default(), .mxus = 1 };
    if (st == TPU_OK) st = tpu_fe_trainer_create(&m, &be, 2, 2, 1, &t);
    if (st == TPU_OK) {
      st = tpu_fe_trainer_step(&t, x, y, 0, 0, &loss, &cor);
      tpu_fe_trainer_destroy(&t);
    }
    tpu_set_alloc(NULL, NULL);
    if (st == TPU_OK) ok_seen = 1;
    else ck_assert_msg(st == TPU_ERR_NOMEM, "allocation %d: status %s", tu_fail_at, tpu_status_str(st));
  }
  ck_assert_msg(ok_seen && tu_fail_at > 20, "backend %d: %d allocations", kind, tu_fail_at);
  }
}
END_TEST
typedef struct timer_ctx { const tpu_fe_model *m; tpu_chip_config chip; } timer_ctx;
static tpu_status timer_run(void *ctx) {
  const timer_ctx *x = ctx;
  char err[512];
  tpu_fe_step_timer *tm = NULL;
  tpu_fe_step_timing t;
  tpu_status st = tpu_fe_step_timer_create(x->m, &x->chip, TPU_PREC_BF16, 4, true, 1, &tm, err, sizeof err);
  if (!st) st = tpu_fe_step_timer_time(tm, 9, NULL, &t, err, sizeof err);
  tpu_fe_step_timer_destroy(tm);
  return st;
}
START_TEST(Step_timing_survives_every_allocation_failure) {
  tpu_chip_config chip = tu_chip("teach", 0);
  char err[512];
  tpu_fe_model m = parse_ok("{ \"input\": [8], \"layers\": [ { \"type\": \"dense\", \"units\": 4 }, { \"type\": \"relu\" },"
                        " { \"type\": \"dense\", \"units\": 4 } ] }");
  tpu_fe_step_timing want, t;
  tpu_text tb = { 0 };
  const tpu_fe_step_trace tr = { .out = &tb };
  ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 0, 1, &want, &tr, err, sizeof err), TPU_OK);
  int ok_seen = 0;
  for (tu_fail_at = 1; tu_fail_at < 20000 && !ok_seen; tu_fail_at++) {
    tu_alloc_calls = 0;
    tpu_set_alloc(tu_failing_alloc, NULL);
    tpu_status st = tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, 0, 1, &t, &tr, err, sizeof err);
    tpu_set_alloc(NULL, NULL);
    if (st == TPU_OK) {
      ok_seen = 1;
      ck_assert(!memcmp(&want, &t, sizeof t));
    } else {
      ck_assert_msg(st == TPU_ERR_NOMEM, "allocation %d: status %s: %s", tu_fail_at, tpu_status_str(st), err);
    }
  }
  ck_assert_msg(ok_seen && tu_fail_at > 50, "%d allocations", tu_fail_at);
  tpu_free(tb.s);
  /* the step timer too: every failure is TPU_ERR_NOMEM, nothing leaks */
  timer_ctx x = { &m, chip };
  ck_assert_int_ge(tu_oom_sweep(20000, timer_run, &x), 50);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The training run (run.c): the loop of `tpusim train`, driven without
** the program
** ================================================================== */
/* SMALL_CNN with adam (optimizer state to checkpoint) and dropout (masks
** keyed by the step). */
static const char RUN_CNN[] =
  "{ \"input\": [28, 28, 1], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"stride\": 2 },"
  " { \"type\": \"relu\" }, { \"type\": \"maxpool\", \"size\": 2 }, { \"type\": \"flatten\" },"
  " { \"type\": \"dropout\", \"rate\": 0.25 }, { \"type\": \"dense\", \"units\": 10 } ],"
  " \"optimizer\": { \"type\": \"adam\", \"learning_rate\": 0.01 }, \"seed\": 5 }";

/* The small run of these tests: RUN_CNN on teach's 4 cores, synthetic
** data of 32 samples, a global batch of 8 (2 per core): 4 steps an epoch. */
static tpu_fe_run_config run_config(const tpu_fe_model *m, int epochs) {
  tpu_fe_run_config c = tpu_fe_run_config_default();
  c.model = m;
  c.chip = tu_chip("teach", 0);
  c.data = "synthetic";
  c.synthetic_n = 32;
  c.global_batch = 8;
  c.epochs = epochs;
  return c;
}

static tpu_fe_run *run_create_ok(const tpu_fe_run_config *c) {
  tpu_fe_run *r = NULL;
  char err[2048];
  ck_assert_msg(tpu_fe_run_create(c, &r, err, sizeof err) == TPU_OK, "%s", err);
  return r;
}

/* Runs r to its end, the records into rec[0..*n) (at most cap). */
static void run_to_end(tpu_fe_run *r, tpu_fe_step_record *rec, int cap, int *n) {
  char err[2048];
  for (*n = 0; tpu_fe_run_next(r, NULL, NULL); (*n)++) {
    ck_assert_int_lt(*n, cap);
    ck_assert_msg(tpu_fe_run_step(r, &rec[*n], err, sizeof err) == TPU_OK, "step %d: %s", *n, err);
  }
}

/* A run of c made and run to its end (run_to_end); the caller destroys it. */
static tpu_fe_run *run_all(const tpu_fe_run_config *c, tpu_fe_step_record *rec, int cap, int *n) {
  tpu_fe_run *r = run_create_ok(c);
  run_to_end(r, rec, cap, n);
  return r;
}

static uint64_t run_params_hash(const tpu_fe_run *r) {
  size_t n;
  const float *p = tpu_fe_run_params(r, &n);
  return tpu_fe_params_hash(p, n);
}

#define SAME(a, b, f) (!memcmp(&(a)->f, &(b)->f, sizeof (a)->f))   /* bit for bit, NaN included */

/* Two records of the same step say the same, bit for bit (the wall time aside). */
static void same_record(const tpu_fe_step_record *a, const tpu_fe_step_record *b) {
  const tpu_fe_epoch_log *x = &a->epoch_log, *y = &b->epoch_log;
  ck_assert_msg(SAME(a, b, epoch) && SAME(a, b, step) && SAME(a, b, global_step) && SAME(a, b, samples) &&
                SAME(a, b, loss) && SAME(a, b, correct) && SAME(a, b, infeed_wait_cycles) && SAME(a, b, step_cycles) &&
                SAME(a, b, infeed_wait_s) && SAME(a, b, sim_step_s) && SAME(a, b, sim_time_s) &&
                SAME(a, b, epoch_loss) && SAME(a, b, epoch_accuracy) && SAME(a, b, epoch_sim_s) &&
                SAME(a, b, epoch_end), "epoch %d step %ld: loss %.17g / %.17g, time %.17g / %.17g", a->epoch, a->step,
                a->loss, b->loss, a->sim_time_s, b->sim_time_s);
  ck_assert_msg(!a->epoch_end || (SAME(x, y, loss) && SAME(x, y, accuracy) && SAME(x, y, val_loss) &&
                                  SAME(x, y, val_accuracy) && SAME(x, y, sim_s)), "epoch %d's log", a->epoch);
}

/* Two runs' sums are the same, bit for bit. */
static void same_sums(const tpu_fe_run_log *a, const tpu_fe_run_log *b) {
  ck_assert(SAME(a, b, steps) && SAME(a, b, cycles) && SAME(a, b, macs) && SAME(a, b, mxu_capacity) &&
            SAME(a, b, stall) && SAME(a, b, sim_time_s) && SAME(a, b, cores) && SAME(a, b, core_cycles) &&
            SAME(a, b, core_stall));
}

/* Synthetic data for a model whose input feeds an embedding: token ids,
** exact integers in [0, the vocabulary) as the f32 the feed carries (not
** pixels scaled to [0, 1]), in every batch and the test split; a tiny BERT
** trains on them at the tile level with finite, falling losses. */
static void check_ids(const float *x, size_t n, int vocab) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(x[i] >= 0.0f && x[i] < (float)vocab && x[i] == floorf(x[i]), "id %g of %d", (double)x[i], vocab);
}

START_TEST(Synthetic_data_for_a_token_model_is_integer_ids_that_train) {
  tpu_fe_model *m = malloc(sizeof *m);
  char err[1024];
  static const struct { const char *spec; int vocab; } z[] = { { "gpt2@64", 50257 }, { "bert_base@32", 30522 },
                                                               { "mlp", 0 } };
  for (size_t k = 0; k < sizeof z / sizeof *z; k++) {
    ck_assert_int_eq(tpu_fe_model_load(z[k].spec, m, err, sizeof err), TPU_OK);
    ck_assert_int_eq(tpu_fe_model_vocab(m), z[k].vocab);
    const int ncls = tpu_fe_model_label_classes(m);
    const tpu_fe_feed_opts o = { .data = "synthetic", .global_batch = 16, .epochs = 1, .synthetic_n = 64, .seed = 5,
                                 .input_shape = m->input, .synthetic_classes = ncls, .vocab = tpu_fe_model_vocab(m),
                                 .model_shape = m->input, .model_classes = ncls };
    tpu_fe_feed *f;
    tpu_fe_feed_info fi;
    ck_assert_msg(tpu_fe_feed_open(&o, &f, &fi, err, sizeof err) == TPU_OK, "%s", err);
    const size_t in = tpu_fe_shape_size(m->input);
    const float *x;
    const int32_t *y;
    int n;
    double ready;
    int whole = 0;
    for (int b = 0; b < 4; b++) {
      ck_assert_int_eq(tpu_fe_feed_next(f, 0, &x, &y, &n, &ready, err, sizeof err), TPU_OK);
      ck_assert(n == 16 && y);
      for (int i = 0; i < n; i++) ck_assert_int_lt(y[i], ncls);
      if (z[k].vocab) check_ids(x, (size_t)n * in, z[k].vocab);
      for (size_t i = 0; i < (size_t)n * in; i++) whole += x[i] == floorf(x[i]);
    }
    if (!z[k].vocab) ck_assert_int_lt(whole, 4 * 16 * (int)in);   /* pixels are scaled to [0, 1] */
    tpu_fe_feed_close(f);
    tpu_fe_dataset d;
    ck_assert_msg(tpu_fe_feed_test_set(&o, &d, err, sizeof err) == TPU_OK, "%s", err);
    ck_assert_int_eq(d.n, 16);
    if (z[k].vocab) check_ids(d.x, (size_t)d.n * in, z[k].vocab);
    tpu_fe_dataset_free(&d);
  }
  free(m);
  tpu_fe_model t = parse_ok(TINY_BERT);
  tpu_fe_run_config c = run_config(&t, 4);
  c.synthetic_n = 64;
  tpu_fe_run *r = run_create_ok(&c);
  tpu_fe_step_record rec[40];
  int n;
  run_to_end(r, rec, 40, &n);
  ck_assert_int_eq(n, 32);
  for (int i = 0; i < n; i++) ck_assert(isfinite(rec[i].loss));
  tpu_fe_run_totals tot;
  tpu_fe_run_get_totals(r, &tot);
  ck_assert_msg(tot.history[3].loss < tot.history[0].loss, "%g then %g", tot.history[0].loss, tot.history[3].loss);
  tpu_fe_run_destroy(r);
  /* a language model on them: the next-token loss, its accuracy over the
  ** 5 predicted tokens of each sample */
  t = parse_ok("{ \"input\": [6], \"layers\": [ { \"type\": \"embedding\", \"name\": \"e\", \"input_dim\": 200,"
               " \"output_dim\": 8 }, { \"type\": \"position_embedding\", \"max_length\": 6 },"
               " { \"type\": \"layer_normalization\" }, { \"type\": \"multi_head_attention\", \"num_heads\": 2,"
               " \"key_dim\": 4, \"causal\": true }, { \"type\": \"dense\", \"tied_to\": \"e\" } ],"
               " \"loss\": \"next_token_softmax_cross_entropy\", \"optimizer\": { \"type\": \"adam\", \"learning_rate\": 0.01 } }");
  c = run_config(&t, 4);
  c.synthetic_n = 64;
  r = run_create_ok(&c);
  run_to_end(r, rec, 40, &n);
  ck_assert_int_eq(n, 32);
  for (int i = 0; i < n; i++)
    ck_assert(isfinite(rec[i].loss) && rec[i].predictions == 8 * 5 && rec[i].correct <= rec[i].predictions);
  ck_assert_msg(rec[0].loss > 4.5 && rec[0].loss < 6.0, "%g: about ln 200 = 5.3 at the start", rec[0].loss);
  tpu_fe_run_get_totals(r, &tot);
  ck_assert_msg(tot.history[3].loss < tot.history[0].loss - 0.5, "%g then %g", tot.history[0].loss, tot.history[3].loss);
  ck_assert(tot.history[3].accuracy > tot.history[0].accuracy && tot.history[3].val_accuracy <= 1.0);
  tpu_fe_run_destroy(r);
}
END_TEST

/* More classes than a byte holds: a 300-class head on synthetic data
** trains at the tile level on both backends. The labels are int32 from the
** datafeed to the VPU, so classes 256..299 reach the loss; the first steps'
** loss is about ln 300 = 5.7, and finite throughout. */
START_TEST(A_head_of_300_classes_trains_at_the_tile_level) {
  tpu_fe_model m = parse_ok("{ \"input\": [4, 4, 1], \"layers\": [ { \"type\": \"flatten\" },"
                            " { \"type\": \"dense\", \"units\": 300 } ] }");
  ck_assert_int_eq(tpu_fe_model_label_classes(&m), 300);
  char err[1024];
  const tpu_fe_feed_opts o = { .data = "synthetic", .global_batch = 32, .epochs = 1, .synthetic_n = 128, .seed = 3,
                               .input_shape = m.input, .synthetic_classes = 300, .model_shape = m.input,
                               .model_classes = 300 };
  tpu_fe_feed *f;
  tpu_fe_feed_info fi;
  ck_assert_msg(tpu_fe_feed_open(&o, &f, &fi, err, sizeof err) == TPU_OK, "%s", err);
  int high = 0, top = 0;
  for (int b = 0; b < 4; b++) {
    const float *x;
    const int32_t *y;
    int n;
    double ready;
    ck_assert_int_eq(tpu_fe_feed_next(f, 0, &x, &y, &n, &ready, err, sizeof err), TPU_OK);
    ck_assert(n == 32 && x && y);
    for (int i = 0; i < n; i++) {
      ck_assert(y[i] >= 0 && y[i] < 300);
      high += y[i] >= 256;
      if (y[i] > top) top = y[i];
    }
  }
  tpu_fe_feed_close(f);
  ck_assert_msg(high > 0, "no label >= 256 in 128 samples (the largest %d)", top);
  tpu_fe_dataset d;
  ck_assert_msg(tpu_fe_feed_test_set(&o, &d, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_int_eq(d.classes, 300);
  tpu_fe_dataset_free(&d);
  static const tpu_fe_backend_kind BE[] = { TPU_FE_BACKEND_REFERENCE, TPU_FE_BACKEND_SIM };
  for (int k = 0; k < 2; k++) {
    tpu_fe_run_config c = run_config(&m, 1);
    c.backend = BE[k];
    c.chip = tu_chip("tpu-v2-8", 0);   /* a row of 300 logits in one VMEM tile: teach's holds 256 */
    c.synthetic_n = 128;
    c.global_batch = 32;
    tpu_fe_step_record rec[8];
    int n;
    tpu_fe_run *r = run_all(&c, rec, 8, &n);
    ck_assert_int_eq(n, 4);
    for (int i = 0; i < n; i++) ck_assert_msg(isfinite(rec[i].loss) && rec[i].correct <= 32, "step %d", i);
    ck_assert_msg(rec[0].loss > 5.0 && rec[0].loss < 6.5, "%g: about ln 300 = 5.7 at the start", rec[0].loss);
    tpu_fe_run_totals tot;
    tpu_fe_run_get_totals(r, &tot);
    ck_assert(isfinite(tot.history[0].val_loss) && tot.history[0].val_accuracy <= 1.0);
    tpu_fe_run_destroy(r);
  }
}
END_TEST

START_TEST(A_run_steps_through_its_epochs_and_sums_what_it_timed) {
  tpu_fe_model m = parse_ok(RUN_CNN);
  const tpu_fe_run_config c = run_config(&m, 2);
  tpu_fe_run *r = run_create_ok(&c);
  tpu_fe_run_totals t;
  tpu_fe_run_get_totals(r, &t);
  ck_assert(t.cores == 4 && t.per_core_batch == 2 && t.steps_per_epoch == 4 && t.epochs_done == 0);
  ck_assert(t.global_step == 0 && t.steps_run == 0 && isnan(t.val_loss));
  double sim = 0, ep_sim = 0;
  for (int k = 0; k < 8; k++) {
    int ep;
    long st;
    ck_assert(tpu_fe_run_next(r, &ep, &st));
    ck_assert(ep == k / 4 && st == k % 4);
    tpu_fe_step_record rec;
    char err[1024];
    ck_assert_msg(tpu_fe_run_step(r, &rec, err, sizeof err) == TPU_OK, "%s", err);
    ck_assert(rec.epoch == ep && rec.step == st && rec.global_step == (uint64_t)k && rec.samples == 8);
    ck_assert(isfinite(rec.loss) && rec.loss > 0 && rec.correct >= 0 && rec.correct <= 8);
    /* the built-in pipeline costs nothing: a step waits only for its
    ** batch's transfer (8 samples of 28x28x1 f32 over teach's one link),
    ** hidden behind the step before and the host's work since (an epoch's
    ** first: behind its call and, in the first epoch, its compile) */
    const double xfer = 8.0 * 28 * 28 * 4 / (c.chip.host_infeed_gb_per_s * 1e9);
    const double hidden = ep == 0 && st == 0 ? c.chip.host_dispatch_s + c.chip.host_compile_s : c.chip.host_dispatch_s;
    const uint64_t want = st || xfer <= hidden ? 0 : (uint64_t)llround((xfer - hidden) * c.chip.clock_mhz * 1e6);
    ck_assert_msg(rec.infeed_wait_cycles == want && rec.step_cycles > 0, "step %d waits %llu cycles, not %llu", k,
                  (unsigned long long)rec.infeed_wait_cycles, (unsigned long long)want);
    ck_assert(want == 0);   /* 1.6 us: the call hides it */
    ck_assert(rec.sim_step_s == (double)rec.step_cycles / (c.chip.clock_mhz * 1e6));
    ep_sim = st ? ep_sim + rec.sim_step_s : rec.sim_step_s;
    ck_assert(rec.sim_time_s == (sim += rec.sim_step_s) && rec.epoch_sim_s == ep_sim);
    ck_assert(rec.epoch_end == (st == 3));
    if (rec.epoch_end)
      ck_assert(rec.epoch_log.sim_s == ep_sim && rec.epoch_log.loss == rec.epoch_loss &&
                rec.epoch_log.val_accuracy >= 0 && rec.epoch_log.val_accuracy <= 1 && isfinite(rec.epoch_log.val_loss));
  }
  ck_assert(!tpu_fe_run_next(r, NULL, NULL));
  tpu_fe_step_record rec;
  char err[1024];
  ck_assert_int_eq(tpu_fe_run_step(r, &rec, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "no step left") != NULL, "%s", err);
  tpu_fe_run_get_totals(r, &t);
  ck_assert(t.epochs_done == 2 && t.global_step == 8 && t.steps_run == 8 && t.sums.steps == 8 && t.sums.cores == 4);
  ck_assert(t.sums.sim_time_s == sim && fabs(t.history[1].sim_s + t.history[0].sim_s - sim) <= 1e-15 * sim);
  ck_assert(t.train_loss == t.history[1].loss && t.val_accuracy == t.history[1].val_accuracy);
  double fr = 0;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) fr += t.stall_fraction[k];
  ck_assert_msg(fabs(fr - 1) < 1e-12, "stall fractions sum to %.17g", fr);
  ck_assert(t.sim_step_cycles * 8 == t.sums.cycles && t.images_per_s == 8 / t.sim_step_s);
  ck_assert(t.mxu_utilization > 0 && t.mxu_utilization < 1);
  tpu_fe_run_destroy(r);
  /* the timing level: the same steps' time, no values, nothing to save */
  tpu_fe_run_config ct = c;
  ct.level = TPU_FIDELITY_TIMING;
  r = run_create_ok(&ct);
  tpu_fe_step_record tr[8];
  int n;
  run_to_end(r, tr, 8, &n);
  ck_assert_int_eq(n, 8);
  ck_assert(isnan(tr[7].loss) && isnan(tr[7].epoch_loss) && tr[7].correct == 0 && tr[7].sim_time_s == sim);
  size_t np;
  ck_assert(tpu_fe_run_params(r, &np) == NULL && np == 0);
  tpu_fe_run_totals tt;
  tpu_fe_run_get_totals(r, &tt);
  ck_assert(isnan(tt.val_loss));
  same_sums(&tt.sums, &t.sums);
  ck_assert_int_eq(tpu_fe_run_save(r, tu_scratch("run"), err, sizeof err), TPU_ERR_CONFIG);
  tpu_fe_run_destroy(r);
}
END_TEST

/* The host side of a fit (docs/TRAINING.md): one call per
** steps_per_execution steps, each program compiled on its first run, the
** validation pass after each epoch; the parts add up to the epoch. */
static void fit_parts_add_up(const tpu_fe_epoch_log *h) {
  const tpu_fe_fit_time *f = &h->fit;
  ck_assert(f->chip_s > 0 && f->input_s >= 0 && f->dispatch_s >= 0 && f->validation_s > 0 && f->compile_s >= 0);
  ck_assert(fabs(f->chip_s + f->input_s - h->sim_s) <= 1e-12 * h->sim_s);
  ck_assert(fabs(f->chip_s + f->input_s + f->dispatch_s + f->validation_s + f->compile_s - f->fit_s) <= 1e-12 * f->fit_s);
}

START_TEST(The_host_side_of_a_fit_adds_calls_compiles_and_validation) {
  tpu_fe_model m = parse_ok(RUN_CNN);
  tpu_fe_run_config c = run_config(&m, 2);   /* 4 steps an epoch; validation: 8 samples, one step */
  c.level = TPU_FIDELITY_TIMING;
  c.steps_per_execution = 3;
  c.chip.host_dispatch_s = 0.25e-3;
  c.chip.host_compile_s = 1.5;
  c.chip.host_compile_s_per_kernel = 0.01;
  tpu_fe_run *r = run_create_ok(&c);
  tpu_fe_step_record rec[16];
  int n;
  run_to_end(r, rec, 16, &n);
  tpu_fe_run_totals t;
  tpu_fe_run_get_totals(r, &t);
  ck_assert_int_eq(n, 8);
  ck_assert(t.kernels_train > t.kernels_eval && t.kernels_eval > 0 && t.val_samples == 8 && t.val_steps == 1);
  ck_assert_int_eq(t.executions, 2 * (2 + 1));   /* an epoch: calls of 3 and 1 steps, and one for validation */
  ck_assert_int_eq(t.programs, 2);               /* the training step and the inference pass, whole batches */
  const double ct = 1.5 + 0.01 * t.kernels_train, ce = 1.5 + 0.01 * t.kernels_eval;
  const tpu_fe_epoch_log *h = t.history;
  ck_assert(h[0].fit.compile_s == ct + ce && h[1].fit.compile_s == 0);
  ck_assert(h[0].fit.dispatch_s == 2 * 0.25e-3 && h[1].fit.dispatch_s == h[0].fit.dispatch_s);
  ck_assert(h[0].fit.validation_s == h[1].fit.validation_s && h[0].fit.validation_s > 0.25e-3);
  for (int e = 0; e < 2; e++) fit_parts_add_up(&h[e]);
  ck_assert(fabs(t.fit.fit_s - h[0].fit.fit_s - h[1].fit.fit_s) <= 1e-12 * t.fit.fit_s);
  tpu_fe_run_destroy(r);
  /* the tile level times the same fit, bit for bit */
  c.level = TPU_FIDELITY_TILE;
  r = run_create_ok(&c);
  run_to_end(r, rec, 16, &n);
  tpu_fe_run_totals tv;
  tpu_fe_run_get_totals(r, &tv);
  ck_assert(!memcmp(&tv.fit, &t.fit, sizeof t.fit) && tv.executions == t.executions && tv.programs == t.programs);
  tpu_fe_run_destroy(r);
  /* 36 samples: 5 steps, the last of 4 (another program); validation 9:
  ** a whole step and a partial one (two more); one call does it all */
  c.synthetic_n = 36;
  c.steps_per_execution = 100;
  c.level = TPU_FIDELITY_TIMING;
  r = run_create_ok(&c);
  run_to_end(r, rec, 16, &n);
  tpu_fe_run_get_totals(r, &t);
  ck_assert(n == 10 && rec[4].samples == 4 && rec[3].samples == 8 && t.val_steps == 2 && t.val_samples == 9);
  ck_assert_int_eq(t.programs, 4);
  ck_assert_int_eq(t.executions, 2 * (1 + 1));
  ck_assert(fabs(t.history[0].fit.compile_s - 2 * (ct + ce)) <= 1e-12 && t.history[0].fit.dispatch_s == 0.25e-3);
  for (int e = 0; e < 2; e++) fit_parts_add_up(&t.history[e]);
  tpu_fe_run_destroy(r);
  /* a slow host link: each batch's transfer (8 x 3136 bytes at 1 MB/s,
  ** 25 ms) is hidden behind the host's work before the step and the step
  ** before it, as far as they go; the first epoch's first behind its
  ** compile, the second's behind its call only */
  c.synthetic_n = 32;
  c.steps_per_execution = 3;
  c.chip.host_infeed_gb_per_s = 0.001;
  r = run_create_ok(&c);
  run_to_end(r, rec, 16, &n);
  const double hz = c.chip.clock_mhz * 1e6, xfer = 8.0 * 3136 / 1e6;
  ck_assert_int_eq(rec[0].infeed_wait_cycles, 0);
  TU_EQ_U64(rec[4].infeed_wait_cycles, (uint64_t)llround((xfer - 0.25e-3) * hz));
  for (int k = 1; k < 8; k++) {
    if (k == 4) continue;
    const double before = (double)(rec[k - 1].step_cycles - rec[k - 1].infeed_wait_cycles) / hz +
                          (k % 4 == 3 ? 0.25e-3 : 0);   /* step 3 of an epoch begins a call */
    const double want = xfer - before;
    ck_assert_msg(fabs((double)rec[k].infeed_wait_cycles - want * hz) <= 1.0, "step %d waits %llu cycles, not %.1f", k,
                  (unsigned long long)rec[k].infeed_wait_cycles, want * hz);
  }
  tpu_fe_run_destroy(r);
  /* a call runs at least one step */
  c.steps_per_execution = 0;
  char err[512];
  ck_assert_int_eq(tpu_fe_run_create(&c, &r, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(err, "steps_per_execution") != NULL, "%s", err);
}
END_TEST

/* The same run twice gives the same bits; so do 1 and 4 host threads. */
START_TEST(A_run_is_deterministic_for_every_thread_count) {
  tpu_fe_model m = parse_ok(RUN_CNN);
  tpu_fe_step_record a[8], b[8];
  uint64_t hash[3];
  tpu_fe_run_log sums[3];
  for (int i = 0; i < 3; i++) {
    tpu_fe_run_config c = run_config(&m, 2);
    c.threads = i == 2 ? 4 : 1;
    tpu_fe_run *r = run_create_ok(&c);
    int n;
    run_to_end(r, i ? b : a, 8, &n);
    ck_assert_int_eq(n, 8);
    for (int k = 0; i && k < 8; k++) same_record(&a[k], &b[k]);
    hash[i] = run_params_hash(r);
    tpu_fe_run_totals t;
    tpu_fe_run_get_totals(r, &t);
    sums[i] = t.sums;
    tpu_fe_run_destroy(r);
  }
  TU_EQ_U64(hash[0], hash[1]);
  TU_EQ_U64(hash[0], hash[2]);
  same_sums(&sums[0], &sums[1]);
  same_sums(&sums[0], &sums[2]);
}
END_TEST

/* A run checkpointed after its first epoch and resumed computes what the
** uninterrupted run does: its steps, parameters, sums and history. */
START_TEST(A_resumed_run_equals_the_uninterrupted_run) {
  tpu_fe_model m = parse_ok(RUN_CNN);
  const char *dir = tu_scratch("run");
  char err[2048];
  tpu_fe_step_record full[12], part[12];
  int n;
  tpu_fe_run_config c = run_config(&m, 3);
  tpu_fe_run *r = run_create_ok(&c);
  run_to_end(r, full, 12, &n);
  ck_assert_int_eq(n, 12);
  const uint64_t hash = run_params_hash(r);
  tpu_fe_run_totals want;
  tpu_fe_run_get_totals(r, &want);
  tpu_fe_epoch_log hist[3];
  memcpy(hist, want.history, sizeof hist);
  tpu_fe_run_destroy(r);
  /* epoch 1, saved; a save within an epoch is refused */
  c.epochs = 1;
  r = run_create_ok(&c);
  ck_assert_int_eq(tpu_fe_run_step(r, &part[0], err, sizeof err), TPU_OK);
  ck_assert_int_eq(tpu_fe_run_save(r, dir, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_msg(strstr(err, "between epochs") != NULL, "%s", err);
  run_to_end(r, part + 1, 11, &n);
  ck_assert_int_eq(n, 3);
  ck_assert_msg(tpu_fe_run_save(r, dir, err, sizeof err) == TPU_OK, "%s", err);
  tpu_fe_run_destroy(r);
  /* epochs 2 and 3 from the checkpoint */
  c.epochs = 3;
  c.resume_dir = dir;
  r = run_create_ok(&c);
  int ep;
  long st;
  ck_assert(tpu_fe_run_next(r, &ep, &st) && ep == 1 && st == 0);
  run_to_end(r, part + 4, 8, &n);
  ck_assert_int_eq(n, 8);
  for (int k = 0; k < 12; k++) same_record(&full[k], &part[k]);
  TU_EQ_U64(hash, run_params_hash(r));
  tpu_fe_run_totals got;
  tpu_fe_run_get_totals(r, &got);
  ck_assert(got.first_epoch == 1 && got.epochs_done == 3 && got.global_step == 12 && got.steps_run == 8);
  same_sums(&got.sums, &want.sums);
  for (int e = 0; e < 3; e++) {
    tpu_fe_epoch_log x = got.history[e], y = hist[e];
    ck_assert(e ? !isnan(x.wall_s) : isnan(x.wall_s));   /* checkpoints keep no wall time */
    x.wall_s = y.wall_s = 0;
    /* nor the fit's split; the resumed run compiles again in its first epoch */
    ck_assert(e ? !isnan(x.fit.fit_s) : isnan(x.fit.fit_s));
    if (e == 1) ck_assert(x.fit.compile_s == hist[0].fit.compile_s && y.fit.compile_s == 0);
    if (e < 2) x.fit = y.fit = (tpu_fe_fit_time){ 0 };
    /* nor each output's own loss */
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) {
      ck_assert(e ? !isnan(x.output_loss[k]) && !isnan(x.val_output_loss[k])
                  : isnan(x.output_loss[k]) && isnan(x.val_output_loss[k]));
      if (!e) x.output_loss[k] = y.output_loss[k], x.val_output_loss[k] = y.val_output_loss[k];
    }
    ck_assert_msg(!memcmp(&x, &y, sizeof x), "history[%d]", e);
  }
  tpu_fe_run_destroy(r);
  /* a run that has all its epochs has no step left; another batch is refused */
  c.epochs = 1;
  r = run_create_ok(&c);
  ck_assert(!tpu_fe_run_next(r, NULL, NULL));
  tpu_fe_run_destroy(r);
  c.global_batch = 16;
  ck_assert_int_eq(tpu_fe_run_create(&c, &r, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err, "--resume: ") == err && strstr(err, "--batch 8") != NULL, "%s", err);
}
END_TEST

/* The global batch splits over the cores, or the message says how to fix it. */
START_TEST(The_batch_split_divides_the_global_batch_or_says_why) {
  static const struct { int batch, cores, per_core; const char *says; } t[] = {
    { 128, 8, 16, NULL }, { 1, 1, 1, NULL }, { 8, 4, 2, NULL }, { INT_MAX, 1, INT_MAX, NULL },
    { 1 << 30, 16, 1 << 26, NULL },
    { 7, 8, 0, "--batch 7 does not divide across 8 cores; use a multiple of 8 (the global batch is split evenly, "
               "as TPUStrategy does)" },
    { 100, 8, 0, "--batch 100 does not divide across 8 cores; use a multiple of 8" },
    { 0, 4, 0, "--batch 0 over 4 cores: expected at least one sample" },
    { 16, 0, 0, "--batch 16 over 0 cores" },
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    int per = -1;
    char err[256] = "";
    const tpu_status st = tpu_fe_batch_split(t[k].batch, t[k].cores, &per, err, sizeof err);
    ck_assert_int_eq(st, t[k].says ? TPU_ERR_CONFIG : TPU_OK);
    ck_assert_int_eq(per, t[k].says ? -1 : t[k].per_core);
    ck_assert_msg(!t[k].says || strstr(err, t[k].says) == err, "%s", err);
    ck_assert_int_eq(tpu_fe_batch_split(t[k].batch, t[k].cores, &per, NULL, 0), st);   /* no message wanted */
  }
  /* the run and the trainer refuse such a batch the same way */
  tpu_fe_model m = parse_ok(RUN_CNN);
  tpu_fe_run_config c = run_config(&m, 1);
  c.global_batch = 6;
  tpu_fe_run *r = (tpu_fe_run *)&c;
  char err[2048];
  ck_assert_int_eq(tpu_fe_run_create(&c, &r, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_ptr_null(r);
  ck_assert_str_eq(err, "--batch 6 does not divide across 4 cores; use a multiple of 4 (the global batch is split "
                        "evenly, as TPUStrategy does)");
  tpu_fe_trainer tr;
  const tpu_fe_backend be = { .kind = TPU_FE_BACKEND_REFERENCE };
  ck_assert_int_eq(tpu_fe_trainer_create(&m, &be, 4, 6, 1, &tr), TPU_ERR_CONFIG);
  tpu_fe_trainer_destroy(&tr);
  /* a batch larger than the training set */
  c.global_batch = 64;
  ck_assert_int_eq(tpu_status_exit_code(tpu_fe_run_create(&c, &r, err, sizeof err)), 2);
  ck_assert_msg(strstr(err, "--data synthetic: ") == err, "%s", err);
}
END_TEST

/* A run's creation, a step and its end, with each allocation failing in
** turn: TPU_ERR_NOMEM with a message, nothing left allocated. */
static tpu_status run_once(void *ctx) {
  const tpu_fe_run_config *c = ctx;
  tpu_fe_run *r = NULL;
  tpu_fe_step_record rec;
  char err[2048] = "";
  tpu_status st = tpu_fe_run_create(c, &r, err, sizeof err);
  ck_assert_msg(st ? r == NULL && err[0] : r != NULL, "status %s: %s", tpu_status_str(st), err);
  if (!st) st = tpu_fe_run_step(r, &rec, err, sizeof err);
  tpu_fe_run_destroy(r);
  return st;
}
START_TEST(Creating_and_stepping_a_run_survive_every_allocation_failure) {
  tpu_fe_model m = parse_ok(RUN_CNN);
  tpu_fe_run_config c = run_config(&m, 1);
  c.steps_per_epoch = 1;
  ck_assert_int_ge(tu_oom_sweep(20000, run_once, &c), 50);
  c.level = TPU_FIDELITY_TIMING;
  ck_assert_int_ge(tu_oom_sweep(20000, run_once, &c), 50);
}
END_TEST
/* }================================================================== */

/* Several steps as one engine program (tpu_fe_steps_program, what `viz
** --pipeline` runs): a step's infeed is issued after the step before's
** last op, so with batch k ready at the cycle the single-step timings say,
** the run lasts exactly the steps' cycles one after another. A DMA of step
** k-1 still in flight when step k asks for its batch (the DMA engines keep
** several transfers in flight) overlaps that request: those cycles count
** as infeed_wait, which the stall table ranks above memory_wait, so per
** step infeed_wait + memory_wait is exactly the single step's, and
** infeed_wait at least its wait. */
START_TEST(Steps_run_one_after_another_with_their_infeed_waits) {
  char err[1024];
  tpu_fe_model m;
  ck_assert_int_eq(tpu_fe_model_load("mlp", &m, err, sizeof err), TPU_OK);
  const tpu_chip_config chip = tu_chip("teach", 0);
  const uint64_t wait[3] = { 700, 5000, 0 };
  uint64_t ready[3], t = 0, sum = 0, single_waits[3];
  for (int k = 0; k < 3; k++) {
    tpu_fe_step_timing tm;
    ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 4, true, wait[k], 1, &tm, NULL, err, sizeof err), TPU_OK);
    single_waits[k] = (uint64_t)(tm.stall[TPU_SIM_INFEED_WAIT] + tm.stall[TPU_SIM_MEMORY_WAIT]);   /* one core's */
    ready[k] = t + wait[k];
    t += tm.step_cycles;
    sum += wait[k];
  }
  tpu_sim_program *p;
  ck_assert_msg(tpu_fe_steps_program(&m, &chip, TPU_PREC_BF16, 4, 3, ready, &p, err, sizeof err) == TPU_OK, "%s", err);
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 1 };
  tpu_sim_result *r;
  ck_assert_int_eq(tpu_sim_run(&chip, p, &o, &r), TPU_OK);
  TU_EQ_U64(t, tpu_sim_result_cycles(r));
  ck_assert_int_eq(tpu_sim_result_steps(r), 3);
  for (int c = 0; c < chip.cores; c++) {
    tpu_sim_stalls st;
    tpu_sim_result_stalls(r, c, -1, &st);
    ck_assert_uint_ge(st.cycles[TPU_SIM_INFEED_WAIT], sum);
    for (int k = 0; k < 3; k++) {
      tpu_sim_result_stalls(r, c, k, &st);
      ck_assert_uint_ge(st.cycles[TPU_SIM_INFEED_WAIT], wait[k]);
      TU_EQ_U64(single_waits[k], st.cycles[TPU_SIM_INFEED_WAIT] + st.cycles[TPU_SIM_MEMORY_WAIT]);
    }
  }
  tpu_sim_result_destroy(r);
  tpu_sim_program_destroy(p);
  ck_assert_int_eq(tpu_fe_steps_program(&m, &chip, TPU_PREC_BF16, 4, 0, ready, &p, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_ptr_null(p);
}
END_TEST

/* {==================================================================
** The step compiler (frontend/compile.c, docs/COMPILER.md)
** ================================================================== */
/* A chip with the compiler's switches from the bits of 'on' (1 fusion, 2
** implicit convolution, 4 memory planning). */
static tpu_chip_config switched(const char *preset, int on) {
  tpu_chip_config chip = tu_chip(preset, 0);
  chip.compiler_fusion = on & 1;
  chip.compiler_implicit_conv = on & 2;
  chip.compiler_memory_planning = on & 4;
  return chip;
}

START_TEST(Each_compiler_mechanism_lowers_a_program_the_counts_describe_and_never_adds_traffic) {
  /* every model, every combination of the switches and both policies: the
  ** count of the lowering equals the program built, the program runs, and
  ** turning any one mechanism on (or bf16 storage) never moves more bytes;
  ** over the models each one moves fewer somewhere */
  int nm;
  tpu_fe_model *models = size_models(&nm);
  char err[512];
  bool helped[5] = { false };
  for (int k = 0; k < nm; k++)
    for (int on = 0; on < 8; on++)
      for (int pol = 0; pol < 2; pol++) {
        tpu_fe_model m = models[k];
        m.policy = pol ? TPU_FE_FLOAT32 : TPU_FE_MIXED_BFLOAT16;
        tpu_chip_config chip = switched("tpu-v2-8", on);
        tpu_fe_step_size z;
        ck_assert_int_eq(tpu_fe_step_size_of(&m, &chip, TPU_PREC_BF16, 3, true, &z), TPU_OK);
        tpu_sim_program *p = NULL;
        ck_assert_msg(tpu_fe_step_program(&m, &chip, TPU_PREC_BF16, 3, true, 0, &p, err, sizeof err) == TPU_OK,
                      "%s: %s", m.name, err);
        ck_assert_int_eq(tpu_sim_program_ops(p, 0), (int)z.ops_per_core);
        tpu_sim_program_destroy(p);
        tpu_fe_step_timing t, u;
        ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, 3, true, 0, 1, &t, NULL, err, sizeof err), TPU_OK);
        for (int b = 0; b < 4; b++) {   /* one more mechanism, or (b == 3) the f32 policy instead of bf16 */
          tpu_fe_model m2 = m;
          tpu_chip_config c2 = chip;
          if (b < 3 && (on & (1 << b))) continue;
          if (b == 3 && !pol) continue;
          if (b < 3) c2 = switched("tpu-v2-8", on | (1 << b));
          else m2.policy = TPU_FE_MIXED_BFLOAT16;
          ck_assert_int_eq(tpu_fe_time_step(&m2, &c2, TPU_PREC_BF16, 3, true, 0, 1, &u, NULL, err, sizeof err), TPU_OK);
          ck_assert_msg(u.hbm_bytes <= t.hbm_bytes, "%s, switches %d, policy %d, +%d: %llu bytes, %llu without it",
                        m.name, on, pol, b, (unsigned long long)u.hbm_bytes, (unsigned long long)t.hbm_bytes);
          helped[b] |= u.hbm_bytes < t.hbm_bytes;
        }
      }
  ck_assert(helped[0] && helped[1] && helped[3]);   /* planning moves no byte: it only places them */
}
END_TEST

START_TEST(Memory_planning_keeps_the_liveness_peak_and_resnet50_at_batch_1024_fits) {
  /* ResNet-50 at 128 samples per core (a global batch of 1024): each
  ** tensor kept apart needs more than a v2-8 or v3-8 chip has; the peak
  ** of those live at once fits both */
  tpu_fe_model m;
  char err[512];
  ck_assert_int_eq(tpu_fe_model_load("resnet50", &m, err, sizeof err), TPU_OK);
  for (int c = 0; c < 2; c++) {
    tpu_chip_config on = switched(c ? "tpu-v3-8" : "tpu-v2-8", 7), off = switched(c ? "tpu-v3-8" : "tpu-v2-8", 3);
    tpu_fe_step_size zon, zoff;
    ck_assert_int_eq(tpu_fe_step_size_of(&m, &on, TPU_PREC_BF16, 128, true, &zon), TPU_OK);
    ck_assert_int_eq(tpu_fe_step_size_of(&m, &off, TPU_PREC_BF16, 128, true, &zoff), TPU_OK);
    const double cap = on.hbm_capacity_gib * 1073741824.0;
    ck_assert_msg(zon.hbm_tensor_bytes_per_core * on.cores_per_chip <= cap, "%s: %.0f planned", on.name,
                  zon.hbm_tensor_bytes_per_core);
    ck_assert(zoff.hbm_tensor_bytes_per_core * off.cores_per_chip > cap);
    ck_assert_msg(zon.activation_bytes < zoff.activation_bytes / 3, "%.0f planned, %.0f in all", zon.activation_bytes, zoff.activation_bytes);
    ck_assert(zon.parameter_bytes == zoff.parameter_bytes && zon.optimizer_state_bytes == zoff.optimizer_state_bytes);
  }
}
END_TEST

START_TEST(The_mixed_bfloat16_policy_stores_activations_in_bf16) {
  /* the sim backend's forward rounds every layer output but the logits to
  ** bf16 under mixed_bfloat16 (the timing path stores them so), keeps them
  ** f32 under float32; the reference backend, the f32 baseline, never */
  tpu_fe_model m = parse_ok("{ \"input\": [8, 8, 2], \"layers\": [ { \"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3 },"
                            " { \"type\": \"batch_normalization\" }, { \"type\": \"relu\" }, { \"type\": \"flatten\" },"
                            " { \"type\": \"dense\", \"units\": 5 } ] }");
  enum { R = 6 };
  float x[R * 128];
  int32_t y[R];
  for (int i = 0; i < R * 128; i++) x[i] = (float)((i * 7919) % 1000) / 997.0f;
  for (int i = 0; i < R; i++) y[i] = (int32_t)(i % 5);
  float *params = malloc(m.nparams * sizeof *params);
  fe_params_init(&m, params);
  for (int run = 0; run < 3; run++) {
    const bool mixed = run != 1;
    m.policy = mixed ? TPU_FE_MIXED_BFLOAT16 : TPU_FE_FLOAT32;
    const tpu_fe_backend be = { .kind = run == 2 ? TPU_FE_BACKEND_REFERENCE : TPU_FE_BACKEND_SIM,
                                .mxu = tpu_mxu_config_default(), .mxus = 1, .prec = TPU_PREC_BF16 };
    fe_plan *pl;
    fe_core_ws ws;
    ck_assert_int_eq(fe_plan_create(&m, R, R, TPU_PREC_BF16, true, &pl), TPU_OK);
    ck_assert_int_eq(fe_ws_create(&m, R, &ws), TPU_OK);
    ck_assert_int_eq(fe_forward(pl, &be, params, &ws, x, y, 0, 0), TPU_OK);
    ck_assert_int_eq(fe_backward(pl, &be, params, &ws), TPU_OK);
    for (int j = 1; j < m.nlayers; j++) {   /* layer outputs but the logits */
      const size_t n = (size_t)R * tpu_fe_shape_size(m.layers[j - 1].out);
      size_t kept = 0;
      for (size_t i = 0; i < n; i++) kept += ws.act[j][i] == tpu_bf16_round(ws.act[j][i]);
      if (run == 0) ck_assert_msg(kept == n, "layer %d: %zu of %zu values bf16", j - 1, kept, n);
      else if (m.layers[j - 1].kind != TPU_FE_RELU) ck_assert_msg(kept < n, "run %d layer %d: all bf16", run, j - 1);
    }
    fe_ws_destroy(&m, &ws);
    fe_plan_destroy(pl);
  }
  free(params);
}
END_TEST

START_TEST(The_step_costs_add_up_to_the_step) {
  /* the per-layer table splits the step: its cycles add up to the step's,
  ** its bytes to the DMAs', the classes to the same; FLOPs to the model's */
  static const char *const names[] = { "cnn", "resnet50", "xception" };
  static const int rows[] = { 16, 2, 1 };
  char err[512];
  for (int k = 0; k < 3; k++) {
    tpu_fe_model m;
    ck_assert_int_eq(tpu_fe_model_load(names[k], &m, err, sizeof err), TPU_OK);
    tpu_chip_config chip = tu_chip("tpu-v2-8", 0);
    tpu_fe_step_costs c;
    ck_assert_int_eq(tpu_fe_step_costs_of(&m, &chip, TPU_PREC_BF16, rows[k], true, &c, err, sizeof err), TPU_OK);
    tpu_fe_step_timing t;
    ck_assert_int_eq(tpu_fe_time_step(&m, &chip, TPU_PREC_BF16, rows[k], true, 0, 1, &t, NULL, err, sizeof err), TPU_OK);
    TU_EQ_U64(t.step_cycles, c.step_cycles);
    ck_assert_int_eq(c.n, m.nlayers + 1);
    double cyc = 0, bytes = 0, cls = 0, flops = 0;
    for (int i = 0; i < c.n; i++) {
      cyc += c.layer[i].cycles;
      bytes += c.layer[i].hbm_bytes;
      flops += c.layer[i].flops;
      ck_assert(!c.layer[i].bound ? c.layer[i].cycles == 0 || c.layer[i].hbm_bytes == 0
                                  : strstr("MXU VPU HBM ICI", c.layer[i].bound) != NULL);
    }
    for (int i = 0; i < TPU_SIM_T_NCLASS; i++) cls += c.class_bytes[i];
    ck_assert_double_eq(cyc, (double)c.step_cycles);
    ck_assert_double_eq_tol(bytes, c.hbm_bytes, 1e-6 * c.hbm_bytes);
    ck_assert_double_eq_tol(cls, c.hbm_bytes, 1e-6 * c.hbm_bytes);
    ck_assert_double_eq((double)t.hbm_bytes, c.hbm_bytes);
    ck_assert_double_eq_tol(flops, 2.0 * (double)t.macs, 1e-9 * flops);
    tpu_fe_step_costs_free(&c);
  }
  /* an attention layer's parts split it: cycles, bytes and FLOPs add up to
  ** the layer's; at 128 tokens the projections carry most FLOPs */
  tpu_fe_model *b = malloc(sizeof *b);
  ck_assert_int_eq(tpu_fe_model_load("bert_base@128", b, err, sizeof err), TPU_OK);
  tpu_chip_config chip = tu_chip("tpu-v2-8", 0);
  tpu_fe_step_costs c;
  ck_assert_int_eq(tpu_fe_step_costs_of(b, &chip, TPU_PREC_BF16, 1, true, &c, err, sizeof err), TPU_OK);
  ck_assert_int_eq(c.natt, 12 * TPU_FE_ATT_NPARTS);
  for (int q = 0; q < c.natt; q += TPU_FE_ATT_NPARTS) {
    const tpu_fe_layer_cost *l = &c.layer[c.att[q].layer];
    double cyc = 0, bytes = 0, flops = 0;
    for (int x = 0; x < TPU_FE_ATT_NPARTS; x++) {
      ck_assert_int_eq(c.att[q + x].part, x);
      cyc += c.att[q + x].cycles;
      bytes += c.att[q + x].hbm_bytes;
      flops += c.att[q + x].flops;
    }
    ck_assert_double_eq(cyc, l->cycles);
    ck_assert_double_eq_tol(bytes, l->hbm_bytes, 1e-9 * bytes);
    ck_assert_double_eq_tol(flops, l->flops, 1e-9 * flops);
    ck_assert(c.att[q + TPU_FE_ATT_PROJECTIONS].flops > 0.9 * flops);
    ck_assert(c.att[q + TPU_FE_ATT_SOFTMAX].flops == 0 && !strcmp(c.att[q + TPU_FE_ATT_SOFTMAX].bound, "VPU"));
  }
  ck_assert_str_eq(tpu_fe_att_part_name(TPU_FE_ATT_WEIGHTED_SUM), "weighted sum");
  tpu_fe_step_costs_free(&c);
  free(b);
}
END_TEST
/* }================================================================== */

int main(void) {
  Suite *s = suite_create("train");
  TU_CASE(s, "models", 0, Builtin_models_have_the_published_shapes, Zoo_models_have_the_published_parameter_counts,
          Bert_base_has_hugging_faces_parameter_count,
          Resnets_are_keras_applications_layer_for_layer, The_resnet50_plan_has_the_hand_derived_gemms,
          Batch_normalization_has_the_keras_parameter_counts,
          Depthwise_and_separable_layers_have_the_keras_parameter_counts, A_depthwise_gemm_is_the_depthwise_convolution,
          A_grouped_conv_reads_only_its_groups_channels,
          Bad_models_name_the_layer_the_field_and_the_shapes, Bad_graphs_name_the_layers_and_the_shapes,
          A_model_may_have_a_thousand_layers, Activation_fields_and_new_layers_are_checked,
          A_binary_head_trains_with_binary_cross_entropy_on_its_logit,
          Two_outputs_train_the_weighted_sum_of_their_losses);
  tcase_add_loop_test(TU_CASE(s, "gradients", 60, NULL), Every_layer_gradient_matches_finite_differences, 0,
                      (int)(sizeof GRAD_MODELS / sizeof GRAD_MODELS[0]));
  TU_CASE(s, "dropout", 60, A_per_sample_dropout_keeps_or_drops_whole_samples);
  TU_CASE(s, "determinism", 120, Results_are_identical_for_1_2_and_8_threads,
          New_layers_and_losses_are_identical_for_1_2_and_8_threads,
          A_partial_batch_trains_as_the_mean_over_its_samples,
          Batch_normalization_moving_averages_are_per_core_and_thread_independent,
          The_sim_backend_differs_from_f32_only_by_bf16_rounding,
          Transposed_and_swapped_gemms_give_the_bits_of_the_plain_mxu_gemm,
          A_checkpoint_restores_parameters_and_optimizer_state_exactly);
  TU_CASE(s, "plan", 120, The_value_path_runs_exactly_the_plans_gemms,
          The_timing_path_lowers_exactly_the_plans_gemms,
          A_depthwise_conv_streams_the_MXU_as_long_as_a_dense_conv_128_times_its_work);
  TU_CASE(s, "oom", 120, Parsing_and_training_survive_every_allocation_failure,
          Step_timing_survives_every_allocation_failure);
  TU_CASE(s, "timing", 120, A_tiny_step_takes_the_hand_counted_cycles,
          Step_timing_is_identical_for_1_2_and_8_threads, Stall_parts_sum_to_the_step_for_the_builtin_models,
          The_lowering_tiles_into_VMEM_and_says_when_it_cannot, Batch_normalization_is_timed_as_VPU_work,
          Steps_run_one_after_another_with_their_infeed_waits, Resnet152v2_times_a_whole_training_step);
  TU_CASE(s, "run", 120, A_run_steps_through_its_epochs_and_sums_what_it_timed,
          Synthetic_data_for_a_token_model_is_integer_ids_that_train, A_head_of_300_classes_trains_at_the_tile_level,
          The_host_side_of_a_fit_adds_calls_compiles_and_validation,
          A_run_is_deterministic_for_every_thread_count, A_resumed_run_equals_the_uninterrupted_run,
          The_batch_split_divides_the_global_batch_or_says_why,
          Creating_and_stepping_a_run_survive_every_allocation_failure);
  TU_CASE(s, "compiler", 240, Each_compiler_mechanism_lowers_a_program_the_counts_describe_and_never_adds_traffic,
          Memory_planning_keeps_the_liveness_peak_and_resnet50_at_batch_1024_fits,
          The_mixed_bfloat16_policy_stores_activations_in_bf16, The_step_costs_add_up_to_the_step);
  TU_CASE(s, "size", 240, The_step_size_from_the_shapes_is_the_programs,
          Steps_too_big_for_the_engine_or_the_hbm_are_refused_before_they_are_built,
          The_step_timer_gives_the_engines_timing_for_every_wait);
  return tu_main(s);
}
