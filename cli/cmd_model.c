/*
** cmd_model.c -- `tpusim model NAME|FILE`: a Keras-style summary of a
** model (layer, output shape, parameters) with, per layer, its GEMMs on the
** MXU and the training step's FLOPs. Shapes and FLOPs come from the step
** plan (tpu_fe_model_gemms), the one the value and timing paths run; this
** command computes none of them.
*/
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"
#include "frontend/fe.h"

#define CMD "model"

static const char HELP[] =
  "usage: tpusim model NAME|FILE [--batch N] [--json]\n\n"
  "Prints a Keras-style summary of a model: each layer's name and type, output\n"
  "shape and parameters, its GEMMs on the MXU for a training step of --batch\n"
  "samples (M x K x N, the product [M x K] . [K x N]; the text shows the\n"
  "forward one, --json every one: matmul, dW, dX; a depthwise one is C x (M x\n"
  "K x N), one product per channel) and the step's FLOPs (2*M*N*K over the\n"
  "layer's GEMMs, forward and backward), with totals.\n\n"
  "  NAME|FILE              a built-in model (mlp, cnn), a zoo model (alexnet,\n"
  "                         vgg16, vgg19, xception, mobilenetv2, resnet50,\n"
  "                         resnet152v2, seed_cnn) as NAME[@HxWxC][:CLASSES]\n"
  "                         (e.g. vgg19@192x192x3:5; default 224x224x3:1000,\n"
  "                         xception's 299x299x3, seed_cnn's 192x192x3:5),\n"
  "                         or a JSON model file: native (docs/MODELS.md) or\n"
  "                         Keras' model.to_json(), FILE@HxWxC giving an input\n"
  "                         shape the Keras file leaves unspecified\n"
  "  --batch N              samples in the step, 1..4096 (default 1)\n";

/* Keras' "(None, 224, 224, 64)" or "(None, 4096)". */
static const char *keras_shape(tpu_fe_shape s, char *buf, size_t cap) {
  if (s.h == 1 && s.w == 1) snprintf(buf, cap, "(None, %d)", s.c);
  else snprintf(buf, cap, "(None, %d, %d, %d)", s.h, s.w, s.c);
  return buf;
}
static const char *layer_name(const tpu_fe_model *m, int i, char *buf, size_t cap) {
  const tpu_fe_layer *l = &m->layers[i];
  if (l->name[0]) snprintf(buf, cap, "%s", l->name);
  else snprintf(buf, cap, "%s_%d", tpu_fe_layer_kind_name(l->kind), i);
  return buf;
}
/* 1234567 -> "1,234,567" */
static const char *commas(uint64_t v, char *buf, size_t cap) {
  char d[32];
  const int n = snprintf(d, sizeof d, "%llu", (unsigned long long)v);
  size_t o = 0;
  for (int k = 0; k < n && o + 2 < cap; k++) {
    if (k && (n - k) % 3 == 0) buf[o++] = ',';
    buf[o++] = d[k];
  }
  buf[o] = '\0';
  return buf;
}

static int report_text(const tpu_fe_model *m, long batch, const tpu_fe_layer_gemms *g) {
  char nm[64], ty[96], sh[64], pa[32], gm[128], fl[32];
  uint64_t fwd = 0, step = 0;
  int w = 34;   /* the first column: as wide as the longest "name (type)" */
  for (int i = 0; i < m->nlayers; i++) {
    const int n = snprintf(ty, sizeof ty, "%s (%s)", layer_name(m, i, nm, sizeof nm),
                           tpu_fe_layer_kind_name(m->layers[i].kind));
    if (n > w) w = n < (int)sizeof ty ? n : (int)sizeof ty - 1;
  }
  printf("Model: \"%s\" (GEMMs and FLOPs of one training step of batch %ld)\n", m->name, batch);
  printf("%-*s %-22s %13s  %-26s %20s\n", w, "Layer (type)", "Output Shape", "Param #", "Forward GEMM (M x K x N)",
         "Step FLOPs");
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *l = &m->layers[i];
    snprintf(ty, sizeof ty, "%s (%s)", layer_name(m, i, nm, sizeof nm), tpu_fe_layer_kind_name(l->kind));
    /* the forward GEMMs (separable_conv2d: the depthwise one, C products
    ** "C x (M x K x N)", then the pointwise) */
    size_t o = 0;
    gm[0] = '\0';
    for (int k = 0; k < g[i].ngemms && o < sizeof gm; k++) {
      if (!g[i].gemm[k].forward) continue;
      const long long G = (long long)g[i].gemm[k].groups, M = (long long)g[i].gemm[k].m,
                      K = (long long)g[i].gemm[k].k, N = (long long)g[i].gemm[k].n;
      const char *sep = o ? " + " : "";
      int len = G > 1 ? snprintf(gm + o, sizeof gm - o, "%s%lld x (%lld x %lld x %lld)", sep, G, M, K, N)
                    : snprintf(gm + o, sizeof gm - o, "%s%lld x %lld x %lld", sep, M, K, N);
      o += len > 0 ? (size_t)len : 0;
    }
    char row[320];
    int n = snprintf(row, sizeof row, "%-*s %-22s %13s  %-26s %20s", w, ty, keras_shape(l->out, sh, sizeof sh),
                     commas(l->nw + l->nb + l->ns, pa, sizeof pa), gm,
                     g[i].step_flops ? commas(g[i].step_flops, fl, sizeof fl) : "");
    for (n = n < (int)sizeof row ? n : (int)sizeof row - 1; n > 0 && row[n - 1] == ' ';) row[--n] = '\0';
    puts(row);
    fwd += g[i].forward_flops;
    step += g[i].step_flops;
  }
  printf("Total params: %s\n", commas(m->nparams, pa, sizeof pa));
  if (m->nstate) {   /* Keras' split, printed where it says something (batch_normalization) */
    printf("Trainable params: %s\n", commas(m->nparams - m->nstate, pa, sizeof pa));
    printf("Non-trainable params: %s\n", commas(m->nstate, pa, sizeof pa));
  }
  printf("Forward FLOPs: %s\n", commas(fwd, fl, sizeof fl));
  printf("Training step FLOPs: %s\n", commas(step, fl, sizeof fl));
  return 0;
}

static json_t *layer_json(const tpu_fe_model *m, int i, const tpu_fe_layer_gemms *g) {
  const tpu_fe_layer *l = &m->layers[i];
  char nm[64];
  json_t *gs = json_array();
  for (int k = 0; gs && k < g->ngemms; k++)
    json_array_append_new(gs, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "what", g->gemm[k].what, "phase",
                                        g->gemm[k].forward ? "fwd" : "bwd", "groups", (json_int_t)g->gemm[k].groups,
                                        "m", (json_int_t)g->gemm[k].m, "k", (json_int_t)g->gemm[k].k, "n",
                                        (json_int_t)g->gemm[k].n));
  return json_pack("{s:s, s:s, s:[i, i, i], s:I, s:o*, s:I, s:I}", "name", layer_name(m, i, nm, sizeof nm),
                   "type", tpu_fe_layer_kind_name(l->kind), "output_shape", l->out.h, l->out.w, l->out.c,
                   "params", (json_int_t)(l->nw + l->nb + l->ns), "gemms", gs, "forward_flops",
                   (json_int_t)g->forward_flops, "step_flops", (json_int_t)g->step_flops);
}

static int report_json(const tpu_fe_model *m, long batch, const tpu_fe_layer_gemms *g, json_t *ignored) {
  json_t *layers = json_array();
  uint64_t fwd = 0, step = 0;
  for (int i = 0; layers && i < m->nlayers; i++) {
    if (json_array_append_new(layers, layer_json(m, i, &g[i]))) { json_decref(layers); layers = NULL; }
    fwd += g[i].forward_flops;
    step += g[i].step_flops;
  }
  json_t *o = json_pack("{s:s, s:I, s:[i, i, i], s:o*, s:I, s:I, s:I}", "model", m->name, "batch", (json_int_t)batch,
                        "input_shape", m->input.h, m->input.w, m->input.c, "layers", layers, "parameters",
                        (json_int_t)m->nparams, "forward_flops", (json_int_t)fwd, "step_flops", (json_int_t)step);
  if (!o) return cli_runtime_error(CMD, "out of memory");
  if (ignored && json_object_set(o, "keras_ignored", ignored)) { json_decref(o); return cli_runtime_error(CMD, "out of memory"); }
  return cli_print_json(CMD, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

int cli_cmd_model(int argc, char **argv) {
  cli_common c;
  long batch = 1;
  const cli_opt opts[] = { CLI_LONG("batch", &batch, 1, 4096) };
  /* NAME|FILE first; the options after it (getopt_long sees it as argv[0]) */
  const bool named = argc > 1 && argv[1][0] != '-';
  int rc = cli_parse(CMD, named ? argc - 1 : argc, named ? argv + 1 : argv, opts, CLI_NOPTS(opts), &c, NULL, NULL);
  if (rc) return rc;
  if (c.help) return cli_help(HELP, NULL);
  if (!named) return cli_usage_error(CMD, "a model is required: tpusim model NAME|FILE (tpusim model --help)");
  tpu_fe_model *m = tpu_malloc(sizeof *m);
  tpu_fe_layer_gemms *g = NULL;
  json_t *ignored = NULL;
  if (!m) rc = cli_runtime_error(CMD, "out of memory");
  else if ((rc = cli_load_model(CMD, argv[1], c.json, m, &ignored))) {}
  else if (!(g = tpu_malloc((size_t)m->nlayers * sizeof *g)) || tpu_fe_model_gemms(m, (int)batch, g))
    rc = cli_runtime_error(CMD, "out of memory");
  else rc = c.json ? report_json(m, batch, g, ignored) : report_text(m, batch, g);
  json_decref(ignored);
  tpu_free(g);
  tpu_free(m);
  return rc;
}
