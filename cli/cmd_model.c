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
#include "cli/sim_report.h"
#include "frontend/fe.h"
#include "sweep/sweep.h"

#define CMD "model"

static const char HELP[] =
  "usage: tpusim model NAME|FILE [--batch N] [--chip C [--set K=V]... [--dtype-policy P] [--roofline FILE.png]]\n"
  "                    [--json]\n\n"
  "Prints a Keras-style summary of a model: each layer's name and type, output\n"
  "shape and parameters, its GEMMs on the MXU for a training step of --batch\n"
  "samples (M x K x N, the product [M x K] . [K x N]; the text shows the\n"
  "forward one, --json every one: matmul, dW, dX; a depthwise one is C x (M x\n"
  "K x N), one product per channel, a grouped conv2d's G x (M x K x N), one\n"
  "per group) and the step's FLOPs (2*M*N*K over the\n"
  "layer's GEMMs, forward and backward), with totals. With --chip, also one\n"
  "training step of --batch samples (split over the chip's cores) lowered by\n"
  "the step compiler and run at the timing level: per layer its time, what\n"
  "bounds it (MXU, VPU, HBM, ICI), FLOPs, HBM bytes, arithmetic intensity and\n"
  "fused kernel, and the step's HBM bytes by what they move (docs/COMPILER.md).\n\n"
  "  NAME|FILE              a built-in model (mlp, cnn), a zoo model (alexnet,\n"
  "                         vgg16, vgg19, xception, mobilenetv2, resnet50,\n"
  "                         resnet152v2, efficientnetb0, seed_cnn) as\n"
  "                         NAME[@HxWxC][:CLASSES]\n"
  "                         (e.g. vgg19@192x192x3:5; default 224x224x3:1000,\n"
  "                         xception's 299x299x3, seed_cnn's 192x192x3:5),\n"
  "                         bert_base[@SEQ][:CLASSES] (default 128 tokens, 2\n"
  "                         classes), gpt2[@SEQ][:CLASSES] (1024 tokens; without\n"
  "                         CLASSES the language model), vit_b16 (as the CNNs),\n"
  "                         a JSON model file: native (docs/MODELS.md) or\n"
  "                         Keras' model.to_json(), FILE@HxWxC giving an input\n"
  "                         shape the Keras file leaves unspecified, or FILE.onnx\n"
  "                         (as torch.onnx.export writes it)\n"
  "  --batch N              samples in the step, 1..4096 (default 1)\n"
  "  --dtype-policy P       with --chip: mixed_bfloat16 (default) or float32\n"
  "  --roofline FILE.png    with --chip: the roofline of the step's layers (a point per\n"
  "                         layer with FLOPs; gnuplot, with FILE.dat and FILE.gp beside)\n";

/* Keras' "(None, 224, 224, 64)", "(None, 128, 768)" (a sequence: 1 x L x C)
** or "(None, 4096)": an image (tpu_fe_layer.image) has rank 4, 1x1 or 1 x W
** ones too. */
static const char *keras_shape(tpu_fe_shape s, bool image, char *buf, size_t cap) {
  if (image) snprintf(buf, cap, "(None, %d, %d, %d)", s.h, s.w, s.c);
  else if (s.h == 1 && s.w == 1) snprintf(buf, cap, "(None, %d)", s.c);
  else if (s.h == 1) snprintf(buf, cap, "(None, %d, %d)", s.w, s.c);
  else snprintf(buf, cap, "(None, %d, %d, %d)", s.h, s.w, s.c);
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
    const int n = snprintf(ty, sizeof ty, "%s (%s)", cli_layer_name(m, i, nm, sizeof nm),
                           tpu_fe_layer_kind_name(m->layers[i].kind));
    if (n > w) w = n < (int)sizeof ty ? n : (int)sizeof ty - 1;
  }
  printf("Model: \"%s\" (GEMMs and FLOPs of one training step of batch %ld)\n", m->name, batch);
  printf("%-*s %-22s %13s  %-26s %20s\n", w, "Layer (type)", "Output Shape", "Param #", "Forward GEMM (M x K x N)",
         "Step FLOPs");
  for (int i = 0; i < m->nlayers; i++) {
    const tpu_fe_layer *l = &m->layers[i];
    snprintf(ty, sizeof ty, "%s (%s)", cli_layer_name(m, i, nm, sizeof nm), tpu_fe_layer_kind_name(l->kind));
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
    int n = snprintf(row, sizeof row, "%-*s %-22s %13s  %-26s %20s", w, ty, keras_shape(l->out, l->image, sh, sizeof sh),
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
  if (m->nout > 1) {   /* printed where it says something: several outputs, ... */
    printf("Outputs:");
    for (int k = 0; k < m->nout; k++) {
      const int i = m->out[k].layer;
      char who[48];
      if (*m->layers[i].name) snprintf(who, sizeof who, "%s", m->layers[i].name);
      else snprintf(who, sizeof who, "layers[%d]", i);
      printf("%s %s %s x %g", k ? "," : "", who, tpu_fe_loss_name(m->out[k].loss), m->out[k].weight);
    }
    printf(" (the loss trained: their sum)\n");
  } else if (m->loss == TPU_FE_LOSS_BINARY_XENT) {   /* ... a binary head, ... */
    printf("Loss: %s (on the sigmoid's logit; labels 0 and 1, accuracy at 0.5)\n", tpu_fe_loss_name(m->loss));
  } else if (m->loss == TPU_FE_LOSS_NEXT_TOKEN_XENT) {   /* ... a language model */
    printf("Loss: %s (each position against the next input id; the last position left out)\n",
           tpu_fe_loss_name(m->loss));
  }
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
  json_t *in = json_array();   /* the layers it reads (-1: the model's input) */
  for (int k = 0; in && k < l->nin; k++) json_array_append_new(in, json_integer(l->inputs[k]));
  return json_pack("{s:s, s:s, s:o*, s:[i, i, i], s:I, s:I, s:o*, s:I, s:I}", "name", cli_layer_name(m, i, nm, sizeof nm),
                   "type", tpu_fe_layer_kind_name(l->kind), "inputs", in, "output_shape", l->out.h, l->out.w, l->out.c,
                   "params", (json_int_t)(l->nw + l->nb + l->ns), "trainable_params", (json_int_t)(l->nw + l->nb),
                   "gemms", gs, "forward_flops", (json_int_t)g->forward_flops, "step_flops",
                   (json_int_t)g->step_flops);
}

static int report_json(const tpu_fe_model *m, long batch, const tpu_fe_layer_gemms *g, json_t *ignored,
                       json_t *stepj) {
  char nm[64];
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
  if (o) json_object_set_new(o, "loss", json_string(tpu_fe_loss_name(m->loss)));   /* output 0's */
  if (o && m->nout > 1) {   /* several outputs: each one's layer, loss and weight (the loss trained: their sum) */
    json_t *outs = json_array();
    for (int k = 0; k < m->nout; k++)
      json_array_append_new(outs, json_pack("{s:s, s:s, s:f}", "layer", cli_layer_name(m, m->out[k].layer, nm,
                                            sizeof nm), "loss", tpu_fe_loss_name(m->out[k].loss), "weight",
                                            m->out[k].weight));
    json_object_set_new(o, "outputs", outs);
  }
  if (!o || (stepj && json_object_set(o, "step", stepj))) {
    json_decref(o);
    return cli_runtime_error(CMD, "out of memory");
  }
  if (ignored && json_object_set(o, "keras_ignored", ignored)) { json_decref(o); return cli_runtime_error(CMD, "out of memory"); }
  return cli_print_json(CMD, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

/* The roofline of the step's layers into png (DIR/NAME.png, or NAME.png
** in the working directory): the core's peak and its HBM share, and a
** point per layer that asks the MXU for work. 0, or the exit status. */
static int roofline(const char *png, const tpu_fe_model *m, const tpu_chip_config *chip, const tpu_fe_step_costs *k) {
  const size_t n = strlen(png);
  char base[4096], nm[64];
  snprintf(base, sizeof base, "%s%.*s", strchr(png, '/') ? "" : "./", (int)(n - 4), png);
  tpu_chip_peaks pk;
  tpu_chip_peaks_of(chip, &pk);
  const double bw = pk.hbm_bytes_per_s_per_chip / chip->cores_per_chip, hz = chip->clock_mhz * 1e6;
  tpu_text dat = { 0 }, gp = { 0 };
  tpu_text_printf(&dat, "# layer intensity_flop_per_byte attained_flop_per_s (one core; %s)\n", chip->name);
  for (int i = 0; i < k->n - 1; i++) {
    const tpu_fe_layer_cost *c = &k->layer[i];
    if (c->flops > 0 && c->hbm_bytes > 0 && c->cycles > 0)
      tpu_text_printf(&dat, "%s %.6g %.6g\n", cli_layer_name(m, i, nm, sizeof nm), c->flops / c->hbm_bytes,
                      c->flops / (c->cycles / hz));
  }
  const char *name = strrchr(base, '/') + 1;
  tpu_text_printf(&gp, "# gnuplot script written by tpusim model --roofline; edit it and rerun `gnuplot %s.gp`\n"
                  "set terminal pngcairo size 960,600 noenhanced\nset output '%s.png'\n"
                  "set title '%s on %s: one training step, a point per layer (one core)'\n"
                  "set xlabel 'arithmetic intensity (FLOP per HBM byte)'\nset ylabel 'attained FLOP/s'\n"
                  "set logscale xy\nset grid\nset key bottom right\nset samples 400\nset xrange [0.1:10000]\n"
                  "peak = %.6g\nbw = %.6g\nroof(x) = x * bw < peak ? x * bw : peak\n"
                  "plot roof(x) with lines lw 2 title 'roof: MXU peak, HBM share', \\\n"
                  "     '%s.dat' using 2:3 with points pt 7 ps 1 title 'layers'\n",
                  name, name, m->name, chip->name, pk.bf16_flops_per_core, bw, name);
  char err[4200];
  tpu_status st = dat.oom || gp.oom ? TPU_ERR_NOMEM
                : tpu_sweep_gnuplot(base, dat.s, dat.n, gp.s, gp.n, false, err, sizeof err);
  tpu_free(dat.s);
  tpu_free(gp.s);
  if (st == TPU_ERR_NOMEM) return cli_runtime_error(CMD, "out of memory");
  return st ? cli_fail(CMD, st, "--roofline: %s", err) : 0;
}

/* The step's costs on the chip (--chip given): 0, or the exit status. */
static int step_costs(const cli_common *c, const tpu_fe_model *m, long batch, tpu_chip_config *chip,
                      tpu_fe_step_costs *k) {
  int rc = cli_load_chip(CMD, c, chip), rows = 0;
  if (rc) return rc;
  char err[1024];
  tpu_status st = tpu_fe_batch_split((int)batch, chip->cores, &rows, err, sizeof err);
  if (!st) st = tpu_fe_step_costs_of(m, chip, TPU_PREC_BF16, rows, true, k, err, sizeof err);
  return st ? cli_fail(CMD, st, "%s", err) : 0;
}

static int policy_opt(void *ud, int id, const char *v) {
  (void)id;
  return cli_dtype_policy(CMD, v, ud);
}

int cli_cmd_model(int argc, char **argv) {
  cli_common c;
  long batch = 1;
  tpu_fe_dtype_policy policy = TPU_FE_MIXED_BFLOAT16;
  const char *png = NULL;
  const cli_opt opts[] = { CLI_LONG("batch", &batch, 1, 4096), CLI_ID("dtype-policy", 1, NULL),
                           CLI_STR("roofline", &png, NULL) };
  /* NAME|FILE first; the options after it (getopt_long sees it as argv[0]) */
  const bool named = argc > 1 && argv[1][0] != '-';
  int rc = cli_parse(CMD, named ? argc - 1 : argc, named ? argv + 1 : argv, opts, CLI_NOPTS(opts), &c, policy_opt,
                     &policy);
  if (rc) return rc;
  if (c.help) return cli_help(HELP, NULL);
  if (!named) return cli_usage_error(CMD, "a model is required: tpusim model NAME|FILE (tpusim model --help)");
  tpu_fe_model *m = tpu_malloc(sizeof *m);
  tpu_fe_layer_gemms *g = NULL;
  json_t *ignored = NULL, *step = NULL;
  tpu_fe_step_costs k = { 0 };
  tpu_chip_config chip;
  const bool with_chip = cli_chip_given(named ? argc - 1 : argc, named ? argv + 1 : argv, &c);
  if (png && (!with_chip || strlen(png) < 5 || strcmp(png + strlen(png) - 4, ".png"))) {
    tpu_free(m);
    if (!with_chip) return cli_usage_error(CMD, "--roofline needs --chip (the step it draws)");
    return cli_usage_error(CMD, "--roofline %s: expected a file name ending in .png", png);
  }
  if (!m) rc = cli_runtime_error(CMD, "out of memory");
  else if ((rc = cli_load_model(CMD, argv[1], c.json, m, &ignored, NULL))) {}
  else if (!(g = tpu_malloc((size_t)m->nlayers * sizeof *g)) || tpu_fe_model_gemms(m, (int)batch, g))
    rc = cli_runtime_error(CMD, "out of memory");
  else if (m->policy = policy, with_chip && (rc = step_costs(&c, m, batch, &chip, &k))) {}
  else if (with_chip && c.json && !(step = cli_step_costs_json(m, &chip, batch, &k))) rc = cli_runtime_error(CMD, "out of memory");
  else if (png && with_chip && (rc = roofline(png, m, &chip, &k))) {}
  else if (c.json) rc = report_json(m, batch, g, ignored, step);
  else if (!(rc = report_text(m, batch, g)) && with_chip) cli_step_costs_text(m, &chip, batch, &k);
  tpu_fe_step_costs_free(&k);
  json_decref(step);
  json_decref(ignored);
  tpu_free(g);
  tpu_free(m);
  return rc;
}
