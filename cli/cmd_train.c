/*
** cmd_train.c -- `tpusim train`: train a model on the simulated chip,
** data-parallel across its cores, and report accuracy, simulated speed and
** where the cores' time went.
**
** The run itself -- feed, infeed waits, step timing, trainer, sums,
** evaluation, checkpoints -- is the front-end's training run (tpu_fe_run,
** frontend/run.c; docs/TRAINING.md, "What runs where"). This file parses
** the options, prints Keras-style progress from each step's record, writes
** the CSV rows, the trace and the checkpoints the options ask for, and the
** report from the run's totals.
*/
#include <limits.h>
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_int.h"
#include "cli/sim_report.h"
#include "datafeed/df.h"
#include "frontend/fe.h"
#include "sim/sim.h"

#define CMD "train"

static const char HELP[] =
  "usage: tpusim train --model NAME|FILE [options]\n\n"
  "Trains a model on the simulated chip, data-parallel across its cores (the\n"
  "global batch is split evenly), and reports test accuracy, simulated time per\n"
  "step, MXU utilization and the stall breakdown of the cores.\n\n"
  "  --model NAME|FILE      built-in model (mlp, cnn), a zoo model (alexnet, vgg16,\n"
  "                         vgg19, xception, mobilenetv2, resnet50, resnet152v2,\n"
  "                         efficientnetb0, seed_cnn) as NAME[@HxWxC][:CLASSES]\n"
  "                         (Keras applications'\n"
  "                         input_shape and classes, default 224x224x3:1000,\n"
  "                         xception's 299x299x3, seed_cnn's 192x192x3:5; e.g.\n"
  "                         vgg19@192x192x3:5), bert_base[@SEQ][:CLASSES] (default\n"
  "                         128 tokens, 2 classes), gpt2[@SEQ][:CLASSES] (1024\n"
  "                         tokens; without CLASSES the language model, trained\n"
  "                         on the next token), vit_b16[@HxWxC][:CLASSES], a\n"
  "                         JSON model file: native\n"
  "                         (docs/MODELS.md) or Keras' model.to_json() (FILE@HxWxC\n"
  "                         when the file leaves the input shape unspecified),\n"
  "                         or FILE.onnx as torch.onnx.export writes it (its\n"
  "                         weights are the starting weights); a head of one\n"
  "                         sigmoid unit trains with binary cross-entropy, a\n"
  "                         model with several outputs on their weighted sum;\n"
  "                         tpusim model NAME prints its layers\n"
  "  --data D               fashion-mnist (default, Debian's dataset-fashion-mnist),\n"
  "                         synthetic (of the model's input shape and classes;\n"
  "                         token ids for a model whose input feeds an embedding),\n"
  "                         cifar10:DIR (the CIFAR-10 binary files),\n"
  "                         images:DIR (class folders of JPEG/PNG images, read as\n"
  "                         Keras' image_dataset_from_directory with the model's\n"
  "                         input size and channels, validation_split 0.2 and the\n"
  "                         run's seed: the validation subset is the test set),\n"
  "                         tfrecord:FILES (a TFRecord file, directory or glob of\n"
  "                         tf.train.Example: image bytes, raw or JPEG/PNG, and an\n"
  "                         int64 label or class; split the same way), or a\n"
  "                         directory of the four MNIST-format IDX files; mnist reads\n"
  "                         them from /usr/share/datasets/mnist (no Debian package\n"
  "                         ships MNIST: download it there or to D)\n"
  "  --epochs E             epochs (default 1)\n"
  "  --pipeline FILE        the input pipeline, a datafeed JSON (docs/DATAFEED.md): its\n"
  "                         batches feed the cores and its host-time model says when each\n"
  "                         is ready (default: shuffle, normalize, batch, prefetch, no costs)\n"
  "  --steps-per-epoch S    stop each epoch after S steps (default: ceil(training set /\n"
  "                         batch), the last batch partial, as Keras' fit counts them)\n"
  "  --steps-per-execution N  steps run by one call from the host, as Keras'\n"
  "                         steps_per_execution (default 1); each call costs host.dispatch_s\n"
  "  --host H               the host driving the TPU: tpu-vm (default; Keras on the TPU's\n"
  "                         own host) or colab (a TPU node reached over the network, as\n"
  "                         Colab's was); sets the chip's host.* keys (docs/CHIPS.md)\n"
  "  --batch B              global batch (default 128, at most 2^31); must divide by the\n"
  "                         cores and fit the training set\n"
  "  --batch-per-core B     each core's batch instead: the global batch is B x the cores\n"
  "                         (a sweep over --cores at a fixed B is weak scaling)\n"
  "  --cores C              cores to use (default: the chip's)\n"
  "  --backend sim|reference  sim (default): matmuls on the MXU model in the chosen\n"
  "                         precision; reference: OpenBLAS f32, no simulation\n"
  "  --level tile|timing    tile (default): values and time; timing: time only\n"
  "  --precision P          bf16 (default), bf16x3, bf16x6\n"
  "  --dtype-policy P       mixed_bfloat16 (default: bf16 activations and their gradients,\n"
  "                         f32 weights and optimizer state, as TPUs train) or float32\n"
  "                         (Keras' policy names; docs/COMPILER.md)\n"
  "  --seed S               seed for initialization, dropout and shuffling (default:\n"
  "                         the model's \"seed\")\n"
  "  --threads T            host threads running the cores (default: CPUs online);\n"
  "                         results are identical for every T\n"
  "  --synthetic-n N        samples of the synthetic training set (default 2048; test: N/4;\n"
  "                         at most 4194304 at --level tile, which holds them, 2^31 - 1\n"
  "                         at --level timing, which makes none)\n"
  "  --trace FILE           Chrome/Perfetto trace of the first steps (one track per core and unit)\n"
  "  --csv FILE             one row per step\n"
  "  --checkpoint DIR       write weights, optimizer state and data position after each epoch\n"
  "  --resume               continue from DIR's checkpoint (results identical to an\n"
  "                         uninterrupted run)\n";

enum { OPT_BACKEND = 1, OPT_LEVEL, OPT_PRECISION, OPT_POLICY, OPT_HOST };

typedef struct opts {
  const char *model, *data, *trace, *csv, *ckpt, *pipeline;
  long epochs, steps, batch, bpc, cores, threads, synth_n, spe;   /* bpc: --batch-per-core */
  long seed;                   /* -1: the model's */
  tpu_fe_backend_kind backend;
  tpu_fidelity level;
  tpu_precision prec;
  tpu_fe_dtype_policy policy;
  bool resume;
  cli_common com;
} opts;

/* {==================================================================
** Options
** ================================================================== */
static int option(void *ud, int id, const char *v) {
  opts *o = ud;
  switch (id) {
  case OPT_BACKEND:
    if (strcmp(v, "sim") && strcmp(v, "reference"))
      return cli_usage_error(CMD, "--backend: expected sim or reference, got '%s'", v);
    o->backend = strcmp(v, "sim") ? TPU_FE_BACKEND_REFERENCE : TPU_FE_BACKEND_SIM;
    return 0;
  case OPT_LEVEL:
    if (strcmp(v, "tile") && strcmp(v, "timing"))
      return cli_usage_error(CMD, "--level: expected tile or timing, got '%s'", v);
    o->level = strcmp(v, "tile") ? TPU_FIDELITY_TIMING : TPU_FIDELITY_TILE;
    return 0;
  case OPT_POLICY:
    return cli_dtype_policy(CMD, v, &o->policy);
  case OPT_HOST: {
    char err[256];
    tpu_chip_config probe;
    memset(&probe, 0, sizeof probe);
    if (tpu_chip_host_preset(&probe, v, err, sizeof err)) return cli_usage_error(CMD, "%s", err);
    o->com.host = v;
    return 0;
  }
  default:
    return cli_precision(CMD, v, &o->prec);
  }
}

static int parse_args(int argc, char **argv, opts *o) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const tpu_fe_run_config d = tpu_fe_run_config_default();
  *o = (opts){ .data = d.data, .epochs = d.epochs, .batch = -1, .seed = d.seed, .synth_n = d.synthetic_n,
               .backend = d.backend, .level = d.level, .prec = d.prec, .threads = ncpu > 0 ? ncpu : 1,
               .spe = d.steps_per_execution };
  const cli_opt table[] = {
    CLI_STR("model", &o->model, NULL), CLI_STR("data", &o->data, NULL), CLI_STR("trace", &o->trace, NULL),
    CLI_STR("csv", &o->csv, NULL), CLI_STR("checkpoint", &o->ckpt, NULL), CLI_STR("pipeline", &o->pipeline, NULL),
    CLI_LONG("epochs", &o->epochs, 1, 100000), CLI_LONG("steps-per-epoch", &o->steps, 1, 100000000),
    CLI_LONG("batch", &o->batch, 1, 1L << 31), CLI_LONG("batch-per-core", &o->bpc, 1, 1L << 31),
    CLI_LONG("cores", &o->cores, 1, TPU_MAX_CORES),
    CLI_LONG("threads", &o->threads, 1, 256), CLI_LONG("synthetic-n", &o->synth_n, 1, INT_MAX),
    CLI_LONG("seed", &o->seed, 0, 2147483647L), CLI_LONG("steps-per-execution", &o->spe, 1, 100000000),
    CLI_ID("host", OPT_HOST, NULL),
    CLI_ID("backend", OPT_BACKEND, NULL), CLI_ID("level", OPT_LEVEL, NULL), CLI_ID("precision", OPT_PRECISION, NULL),
    CLI_ID("dtype-policy", OPT_POLICY, NULL), CLI_FLAG("resume", &o->resume),
  };
  const int rc = cli_parse(CMD, argc, argv, table, CLI_NOPTS(table), &o->com, option, o);
  if (rc) return rc;
  if (o->com.help) return cli_help(HELP, NULL);
  if (o->batch > 0 && o->bpc)
    return cli_usage_error(CMD, "--batch %ld and --batch-per-core %ld: give one (the global batch, or each core's, "
                           "the global batch then that times the cores)", o->batch, o->bpc);
  if (o->batch < 0 && !o->bpc) o->batch = d.global_batch;
  if (!o->model) return cli_usage_error(CMD, "--model is required: a built-in or zoo name (see --help) or a JSON file");
  if (o->resume && !o->ckpt) return cli_usage_error(CMD, "--resume needs --checkpoint DIR");
  if (o->backend == TPU_FE_BACKEND_REFERENCE && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--level timing runs only the simulation; it needs --backend sim");
  if (o->ckpt && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--checkpoint %s: --level timing computes no weights to save or resume; use --level "
                           "tile (the default), or leave out --checkpoint", o->ckpt);
  return CLI_RUN;
}
/* }================================================================== */

/* {==================================================================
** Progress (Keras style) and the report
** ================================================================== */
/* A duration in Keras' progress units: 107.7us, 4.2ms, 1.05s. */
static void fmt_step(char *b, size_t n, double s) {
  if (s >= 1.0) snprintf(b, n, "%.2fs", s);
  else if (s >= 1e-3) snprintf(b, n, "%.1fms", s * 1e3);
  else snprintf(b, n, "%.1fus", s * 1e6);
}

/* The progress line as Keras prints it: while running the bar, the step
** count, the ETA (this host's wall time) and the simulated time per step
** so far, labelled 'sim'; at the end the epoch's simulated wall time (the
** fit's: steps, calls, validation, compile) and that time per step, as
** Keras would print it on the simulated TPU. Then the running loss and
** accuracy, and for a model with several outputs each output's loss
** between them, as Keras prints them (names: output_names). */
typedef char output_names[TPU_FE_MAX_OUTPUTS][48];   /* "<layer>_loss", Keras' names */
static void progress(bool tty, bool final, long step, long total, double wall_s, double sim_step_s,
                     double loss, double acc, int nout, output_names names, const double *ol) {
  if (!tty && !final) return;
  char bar[31];
  int w = total ? (int)(30 * step / total) : 30;
  for (int k = 0; k < 30; k++) bar[k] = k < w ? '=' : k == w ? '>' : '.';
  if (w >= 30) bar[29] = '=';
  bar[30] = 0;
  int dig = snprintf(NULL, 0, "%ld", total);
  char t[32], wt[32];
  fmt_step(t, sizeof t, sim_step_s);
  printf("%s%*ld/%ld [%s]", tty ? "\r" : "", dig, step, total, bar);
  if (final) {
    fmt_step(wt, sizeof wt, step ? wall_s / (double)step : 0);
    printf(" - %.0fs %s/step", wall_s, wt);
  } else {
    const long eta = step ? lround(wall_s / (double)step * (double)(total - step)) : 0;
    if (eta >= 3600) printf(" - ETA: %ld:%02ld:%02ld", eta / 3600, eta / 60 % 60, eta % 60);
    else if (eta >= 60) printf(" - ETA: %ld:%02ld", eta / 60, eta % 60);
    else printf(" - ETA: %lds", eta);
    printf(" - sim %s/step", t);
  }
  /* --level timing computes no values: no loss to show (NaN) */
  if (!isnan(loss)) {
    printf(" - loss: %.4f", loss);
    for (int k = 0; k < nout; k++) printf(" - %s: %.4f", names[k], ol[k]);
    printf(" - accuracy: %.4f", acc);
  }
  if (!final) fflush(stdout);
}

/* }================================================================== */

/* {==================================================================
** The run (frontend/fe.h, "The training run"), its progress and outputs
** ================================================================== */
typedef struct train_cli {
  tpu_chip_config chip;                /* the whole chip (the run's is cut to --cores) */
  tpu_fe_model model;
  json_t *ignored;                     /* a Keras model's options not modelled (--json), or NULL */
  float *weights;                      /* the file's starting weights (ONNX), or NULL */
  tpu_fe_run *run;
  tpu_text csv, tb;                    /* --csv rows, --trace */
  bool tty;                            /* the progress bar is redrawn in place */
  int nout;                            /* outputs whose losses are shown: the model's when several, else 0 */
  output_names oname;                  /* their names, as Keras' history keys */
  double wall;                         /* this invocation's wall time */
} train_cli;

/* The model, the chip cut to the cores, and the run on them. */
static int create_run(const opts *o, train_cli *t) {
  int rc = cli_load_chip(CMD, &o->com, &t->chip);
  if (rc || (rc = cli_load_model(CMD, o->model, o->com.json, &t->model, &t->ignored, &t->weights))) return rc;
  t->model.policy = o->policy;
  const int cores = o->cores ? (int)o->cores : t->chip.cores;
  if (cores > t->chip.cores)
    return cli_usage_error(CMD, "--cores %d: the chip %s has %d cores", cores, t->chip.name, t->chip.cores);
  /* sample counts are ints: no training set here holds more (synthetic data
  ** at most 2^31 - 1 samples, --synthetic-n), so a batch of 2^31 never fits */
  const double batch = o->bpc ? (double)o->bpc * cores : (double)o->batch;
  if (batch > INT_MAX)
    return cli_usage_error(CMD, "--batch%s %ld%s is larger than the training set (%s: at most %d samples%s)",
                           o->bpc ? "-per-core" : "", o->bpc ? o->bpc : o->batch, o->bpc ? " x the cores" : "",
                           o->data, INT_MAX, strcmp(o->data, "synthetic") ? "" : ", --synthetic-n's range");
  tpu_fe_run_config c = tpu_fe_run_config_default();
  c.model = &t->model;
  c.model_label = o->model;
  c.init_params = t->weights;
  c.chip = t->chip;
  cli_chip_cut(&c.chip, cores);        /* the cores in use take part in the all-reduce */
  c.global_batch = (int)batch;
  c.seed = o->seed;
  c.backend = o->backend;
  c.level = o->level;
  c.prec = o->prec;
  c.threads = (int)o->threads;
  c.epochs = (int)o->epochs;
  c.steps_per_epoch = o->steps;
  c.steps_per_execution = (int)o->spe;
  c.data = o->data;
  c.pipeline = o->pipeline;
  c.synthetic_n = (int)o->synth_n;
  c.resume_dir = o->resume ? o->ckpt : NULL;
  c.trace = o->trace ? &t->tb : NULL;
  if (o->trace) tpu_sim_trace_steps_begin(&t->tb, t->chip.name, cores);
  char err[2048];
  const tpu_status st = tpu_fe_run_create(&c, &t->run, err, sizeof err);
  return st ? cli_fail(CMD, st, "%s", err) : 0;
}

/* "sim bf16x3", or "reference" (OpenBLAS f32). */
static const char *backend_str(const opts *o, char *b, size_t n) {
  if (o->backend != TPU_FE_BACKEND_SIM) return "reference";
  snprintf(b, n, "sim %s", tpu_precision_name(o->prec));
  return b;
}

/* The names of a model's outputs' losses as Keras' History keys them:
** "<output layer's name>_loss", or "output_<k+1>_loss" for an unnamed
** layer (tf.keras' pseudo output names). */
static void name_outputs(train_cli *t) {
  t->nout = t->model.nout > 1 ? t->model.nout : 0;
  for (int k = 0; k < t->nout; k++) {
    const char *n = t->model.layers[t->model.out[k].layer].name;
    char b[sizeof t->oname[k]];   /* the name and the destination are both in *t (-Wrestrict) */
    if (*n) snprintf(b, sizeof b, "%s_loss", n);
    else snprintf(b, sizeof b, "output_%d_loss", k + 1);
    memcpy(t->oname[k], b, sizeof b);
  }
}

/* The CSV header and the banner. */
static void start(const opts *o, train_cli *t, const tpu_fe_run_totals *tot) {
  name_outputs(t);
  if (o->csv) {
    tpu_text_printf(&t->csv, "epoch,step,loss,accuracy,sim_step_s,%s_s,sim_time_s",
                    tpu_sim_stall_name(TPU_SIM_INFEED_WAIT));
    for (int k = 0; k < t->nout; k++) tpu_text_printf(&t->csv, ",%s", t->oname[k]);
    tpu_text_printf(&t->csv, "\n");
  }
  char be[32];
  t->tty = !o->com.json && cli_stdout_is_tty();
  if (!o->com.json)
    printf("Training %s (%zu parameters) on %s: %d cores x %d samples = batch %ld, backend %s%s, data %s%s\n",
           t->model.name, t->model.nparams, t->chip.name, tot->cores, tot->per_core_batch,
           (long)tot->per_core_batch * tot->cores,
           backend_str(o, be, sizeof be), o->level != TPU_FIDELITY_TIMING ? "" : " (timing level: no values)",
           o->pipeline ? "pipeline " : "", o->pipeline ? o->pipeline : o->data);
}

/* A step's CSV row and progress; after an epoch's last step its line and
** the checkpoint. 'ew0' is the epoch's start on the wall clock. */
static int after_step(const opts *o, train_cli *t, const tpu_fe_step_record *r, long steps, double ew0,
                      double *last_draw) {
  const bool n = o->level != TPU_FIDELITY_TIMING, tty = t->tty;
  if (o->csv) {
    tpu_text_printf(&t->csv, "%d,%llu,%.9g,%.9g,%.9g,%.9g,%.9g", r->epoch + 1, (unsigned long long)r->global_step + 1,
                    n ? r->loss : NAN, n ? (double)r->correct / (double)r->predictions : NAN, r->sim_step_s,
                    r->infeed_wait_s, r->sim_time_s);
    for (int k = 0; k < t->nout; k++) tpu_text_printf(&t->csv, ",%.9g", r->output_loss[k]);
    tpu_text_printf(&t->csv, "\n");
  }
  const double now = cli_now_s();
  if (tty && (now - *last_draw > 0.05 || r->step + 1 == steps)) {
    progress(true, false, r->step + 1, steps, now - ew0, r->epoch_sim_s / (double)(r->step + 1), r->epoch_loss,
             r->epoch_accuracy, t->nout, t->oname, r->epoch_output_loss);
    *last_draw = now;
  }
  if (!r->epoch_end) return 0;
  if (!o->com.json) {
    const tpu_fe_fit_time *f = &r->epoch_log.fit;
    progress(tty, true, steps, steps, f->fit_s, r->epoch_sim_s / (double)steps, r->epoch_loss, r->epoch_accuracy,
             t->nout, t->oname, r->epoch_output_loss);
    if (n) {
      printf(" - val_loss: %.4f", r->epoch_log.val_loss);
      for (int k = 0; k < t->nout; k++) printf(" - val_%s: %.4f", t->oname[k], r->epoch_log.val_output_loss[k]);
      printf(" - val_accuracy: %.4f\n", r->epoch_log.val_accuracy);
    } else {
      printf("\n");
    }
    char cs[32];
    fmt_step(cs, sizeof cs, r->epoch_sim_s / (double)steps);
    printf("  simulated %.3gs: chip %.3gs (%s/step), input %.3gs, dispatch %.3gs, validation %.3gs, compile %.3gs; "
           "host wall %.2fs\n", f->fit_s, f->chip_s, cs, f->input_s, f->dispatch_s, f->validation_s, f->compile_s,
           r->epoch_log.wall_s);
    fflush(stdout);
  }
  char err[1024];
  if (o->ckpt && tpu_fe_run_save(t->run, o->ckpt, err, sizeof err))   /* an output: a runtime failure */
    return cli_runtime_error(CMD, "%s", err);
  return 0;
}

/* The step for the step hook (cli_step_hook; the Python callback), with
** the CSV row's figures; at an epoch's end its history entry's too. 0, or
** 1 after a message. */
/* A model with several outputs: {"<output>_loss": v[k], ...} in output
** order (the progress line's names); null at the timing level. */
static json_t *losses_json(const train_cli *t, bool n, const double *v) {
  if (!n) return json_null();
  json_t *o = json_object();
  for (int k = 0; k < t->nout; k++) json_object_set_new(o, t->oname[k], cli_json_real(v[k]));
  return o;
}

static int step_hook(const opts *o, const train_cli *t, const tpu_fe_step_record *r) {
  if (!cli_step_hooked()) return 0;
  const bool n = o->level != TPU_FIDELITY_TIMING;
  json_t *j = json_pack("{s:i,s:I,s:I,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:b}", "epoch", r->epoch + 1, "step",
                        (json_int_t)r->step + 1, "global_step", (json_int_t)r->global_step + 1, "samples", r->samples,
                        "loss", cli_json_real(n ? r->loss : NAN),
                        "accuracy", cli_json_real(n ? (double)r->correct / (double)r->predictions : NAN),
                        "epoch_loss", cli_json_real(n ? r->epoch_loss : NAN),
                        "epoch_accuracy", cli_json_real(n ? r->epoch_accuracy : NAN),
                        "sim_step_s", cli_json_real(r->sim_step_s), "infeed_wait_s", cli_json_real(r->infeed_wait_s),
                        "sim_time_s", cli_json_real(r->sim_time_s), "epoch_end", r->epoch_end);
  if (j && r->epoch_end && n) {
    json_object_set_new(j, "val_loss", cli_json_real(r->epoch_log.val_loss));
    json_object_set_new(j, "val_accuracy", cli_json_real(r->epoch_log.val_accuracy));
  }
  if (j && t->nout) {   /* several outputs: each one's loss, as Keras' logs hold them */
    json_object_set_new(j, "output_losses", losses_json(t, n, r->output_loss));
    json_object_set_new(j, "epoch_output_losses", losses_json(t, n, r->epoch_output_loss));
    if (r->epoch_end) json_object_set_new(j, "val_output_losses", losses_json(t, n, r->epoch_log.val_output_loss));
  }
  const int rc = cli_step_hook(CMD, j);
  json_decref(j);
  return rc;
}

/* The steps left, with their progress. A cancellation (base.h) stops the
** run before a step, as a failure: the outputs are not written. */
static int run_steps(const opts *o, train_cli *t, long steps) {
  double ew0 = 0, last_draw = 0;
  int ep;
  long s;
  char err[2048];
  while (tpu_fe_run_next(t->run, &ep, &s)) {
    if (tpu_cancel_requested()) return cli_runtime_error(CMD, "interrupted");
    if (s == 0) {
      if (!o->com.json) printf("Epoch %d/%ld\n", ep + 1, o->epochs);
      ew0 = cli_now_s();
      last_draw = 0;
    }
    tpu_fe_step_record r;
    const tpu_status st = tpu_fe_run_step(t->run, &r, err, sizeof err);
    int rc = st ? cli_fail(CMD, st, "%s", err) : after_step(o, t, &r, steps, ew0, &last_draw);
    if (!rc) rc = step_hook(o, t, &r);
    if (rc) return rc;
  }
  return 0;
}

static int write_outputs(const opts *o, train_cli *t) {
  if (o->csv && (t->csv.oom || tpu_write_atomic(o->csv, t->csv.s, t->csv.n)))
    return cli_runtime_error(CMD, "--csv %s: cannot write: %s", o->csv, t->csv.oom ? "out of memory" : strerror(errno));
  if (o->trace) {
    tpu_sim_trace_steps_end(&t->tb);
    if (t->tb.oom || tpu_write_atomic(o->trace, t->tb.s, t->tb.n))
      return cli_runtime_error(CMD, "--trace %s: cannot write: %s", o->trace, t->tb.oom ? "out of memory" : strerror(errno));
  }
  return 0;
}
/* }================================================================== */

/* {==================================================================
** The report, from the run's totals
** ================================================================== */
/* The stall parts in cycles over the run's steps (a resumed run's
** included, from its checkpoint): "per_core" (each core's, with its
** "cycles"), "stall_cycles" (summed over the cores) and "per_core_steps".
** 0, or -1 when out of memory. */
static int per_core_json(json_t *j, const tpu_fe_run_totals *t) {
  const tpu_fe_run_log *r = &t->sums;
  json_t *pc = json_array(), *tot = json_object();
  int bad = !pc || !tot;
  for (int c = 0; !bad && c < t->cores; c++) {
    json_t *e = json_pack("{s:i,s:I}", "core", c, "cycles", (json_int_t)r->core_cycles);
    bad |= json_array_append_new(pc, e);
    for (int i = 0; !bad && i < TPU_SIM_NSTALL; i++) {
      const int k = tpu_sim_stall_in_report_order(i);
      bad |= json_object_set_new(e, tpu_sim_stall_name(k), json_integer((json_int_t)r->core_stall[c][k]));
    }
  }
  for (int i = 0; !bad && i < TPU_SIM_NSTALL; i++) {
    const int k = tpu_sim_stall_in_report_order(i);
    uint64_t sum = 0;
    for (int c = 0; c < t->cores; c++) sum += r->core_stall[c][k];   /* <= cores * core_cycles < 2^63 */
    bad |= json_object_set_new(tot, tpu_sim_stall_name(k), json_integer((json_int_t)sum));
  }
  bad |= json_object_set_new(j, "stall_cycles", tot);
  bad |= json_object_set_new(j, "per_core", pc);
  bad |= json_object_set_new(j, "per_core_steps", json_integer((json_int_t)r->steps));
  return bad ? -1 : 0;
}

/* A simulated fit time, split (tpu_fe_fit_time): null parts before a
** --resume (checkpoints keep none). */
static json_t *fit_json(const tpu_fe_fit_time *f) {
  return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "time_s", cli_json_real(f->fit_s), "chip_s", cli_json_real(f->chip_s),
                   "input_s", cli_json_real(f->input_s), "dispatch_s", cli_json_real(f->dispatch_s),
                   "validation_s", cli_json_real(f->validation_s), "compile_s", cli_json_real(f->compile_s));
}

/* The run's "fit": its simulated wall time split, and what made it. */
static json_t *fit_report_json(const opts *o, const tpu_chip_config *chip, const tpu_fe_run_totals *m) {
  json_t *f = fit_json(&m->fit);
  const int run = m->epochs_done - m->first_epoch;
  json_object_set_new(f, "epoch_s", cli_json_real(run > 0 ? m->fit.fit_s / run : NAN));
  json_object_set_new(f, "steps_per_execution", json_integer(o->spe));
  json_object_set_new(f, "executions", json_integer(m->executions));
  json_object_set_new(f, "validation_samples", json_integer(m->val_samples));
  json_object_set_new(f, "validation_steps", json_integer(m->val_steps));
  json_object_set_new(f, "programs", json_integer(m->programs));
  json_object_set_new(f, "kernels", json_pack("{s:i,s:i}", "train", m->kernels_train, "eval", m->kernels_eval));
  json_object_set_new(f, "host", json_pack("{s:o,s:o,s:o,s:o}", "dispatch_s", cli_json_real(chip->host_dispatch_s),
                                           "infeed_gb_per_s", cli_json_real(chip->host_infeed_gb_per_s),
                                           "compile_s", cli_json_real(chip->host_compile_s),
                                           "compile_s_per_kernel", cli_json_real(chip->host_compile_s_per_kernel)));
  return f;
}

/* The run's history: val_* as Keras names them; test_* are their aliases
** for one release; wall_s is null for the epochs before a --resume
** (checkpoints keep no wall time, so that identical runs write identical
** files). */
static json_t *history_json(const opts *o, const train_cli *t, const tpu_fe_run_totals *m) {
  json_t *hist = json_array();
  for (int e = 0; e < m->epochs_done; e++) {
    const tpu_fe_epoch_log *h = &m->history[e];
    json_array_append_new(hist, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "epoch", e + 1,
                                          "loss", cli_json_real(h->loss), "accuracy", cli_json_real(h->accuracy),
                                          "val_loss", cli_json_real(h->val_loss),
                                          "val_accuracy", cli_json_real(h->val_accuracy),
                                          "test_loss", cli_json_real(h->val_loss),
                                          "test_accuracy", cli_json_real(h->val_accuracy),
                                          "wall_s", cli_json_real(h->wall_s), "sim_s", cli_json_real(h->sim_s)));
    json_object_set_new(json_array_get(hist, (size_t)e), "fit", fit_json(&h->fit));
    if (t->nout) {   /* several outputs: each one's loss, unweighted (null before a --resume) */
      const bool n = o->level != TPU_FIDELITY_TIMING;
      json_object_set_new(json_array_get(hist, (size_t)e), "output_losses", losses_json(t, n, h->output_loss));
      json_object_set_new(json_array_get(hist, (size_t)e), "val_output_losses", losses_json(t, n, h->val_output_loss));
    }
  }
  return hist;
}

/* The --json report; NULL when out of memory. */
static json_t *report_json(const opts *o, const train_cli *t, const tpu_fe_run_totals *m) {
  const bool n = o->level != TPU_FIDELITY_TIMING;
  json_t *stall = json_object();
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {   /* in the training report's order (sim/stall.def) */
    const int k = tpu_sim_stall_in_report_order(i);
    json_object_set_new(stall, tpu_sim_stall_name(k), cli_json_real(m->stall_fraction[k]));
  }
  char hs[32];
  size_t np;
  const float *params = tpu_fe_run_params(t->run, &np);
  snprintf(hs, sizeof hs, "%016llx", n ? (unsigned long long)tpu_fe_params_hash(params, np) : 0ull);
  json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:I}",
                        "model", t->model.name, "chip", t->chip.name, "cores", m->cores,
                        "global_batch", m->per_core_batch * m->cores,
                        "per_core_batch", m->per_core_batch,
                        "backend", o->backend == TPU_FE_BACKEND_SIM ? "sim" : "reference",
                        "level", tpu_fidelity_name(o->level), "precision", tpu_precision_name(o->prec),
                        "data", o->data, "epochs", m->epochs_done, "steps_per_epoch", (int)m->steps_per_epoch,
                        "parameters", (json_int_t)t->model.nparams);
  json_object_set_new(j, "dtype_policy", json_string(tpu_fe_dtype_policy_name(t->model.policy)));
  /* a resumed run reports the whole run; epochs_run says how much of it this invocation ran */
  const int run = m->epochs_done - m->first_epoch;
  json_object_set_new(j, "epochs_run", json_integer(run > 0 ? run : 0));
  json_object_set_new(j, "val_loss", n ? cli_json_real(m->val_loss) : json_null());
  json_object_set_new(j, "val_accuracy", n ? cli_json_real(m->val_accuracy) : json_null());
  json_object_set_new(j, "test_loss", n ? cli_json_real(m->val_loss) : json_null());      /* alias of val_loss */
  json_object_set_new(j, "test_accuracy", n ? cli_json_real(m->val_accuracy) : json_null());
  json_object_set_new(j, "train_loss", n ? cli_json_real(m->train_loss) : json_null());
  json_object_set_new(j, "train_accuracy", n ? cli_json_real(m->train_accuracy) : json_null());
  json_object_set_new(j, "sim_step_s", cli_json_real(m->sim_step_s));
  json_object_set_new(j, "sim_step_cycles", json_integer((json_int_t)llround(m->sim_step_cycles)));
  json_object_set_new(j, "sim_time_s", cli_json_real(m->sums.sim_time_s));
  json_object_set_new(j, "images_per_s", cli_json_real(m->images_per_s));
  json_object_set_new(j, "mxu_utilization", cli_json_real(m->mxu_utilization));
  json_object_set_new(j, "stall", stall);
  if (per_core_json(j, m)) { json_decref(j); return NULL; }
  json_object_set_new(j, "input_wait_fraction", cli_json_real(m->stall_fraction[TPU_SIM_INFEED_WAIT]));
  json_object_set_new(j, "input_verdict", json_string(tpu_df_verdict(m->stall_fraction[TPU_SIM_INFEED_WAIT])));
  char alg[512];
  json_object_set_new(j, "all_reduce_algorithm",
                      json_string(tpu_sim_collective_algorithm(&t->chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg)));
  json_object_set_new(j, "wall_s", cli_json_real(t->wall));   /* this invocation's */
  json_object_set_new(j, "params_hash", n ? json_string(hs) : json_null());
  json_object_set_new(j, "history", history_json(o, t, m));
  if (t->nout) {   /* several outputs: the last epoch's loss of each, unweighted */
    const tpu_fe_epoch_log *h = m->epochs_done ? &m->history[m->epochs_done - 1] : NULL;
    json_object_set_new(j, "train_output_losses", losses_json(t, n && h, h ? h->output_loss : NULL));
    json_object_set_new(j, "val_output_losses", losses_json(t, n && h, h ? h->val_output_loss : NULL));
  }
  json_object_set_new(j, "fit", fit_report_json(o, &t->chip, m));
  /* the step's table: where one step's time and bytes go, per layer */
  tpu_chip_config chip = t->chip;
  cli_chip_cut(&chip, m->cores);
  tpu_fe_step_costs k;
  if (o->backend == TPU_FE_BACKEND_SIM) {   /* the run's own timing of the step: only memory can fail */
    json_t *step = NULL;
    if (tpu_fe_run_step_costs(t->run, &k) == TPU_OK) step = cli_step_costs_json(&t->model, &chip, (long)m->per_core_batch * m->cores, &k);
    tpu_fe_step_costs_free(&k);
    if (!step || json_object_set_new(j, "step", step)) { json_decref(j); return NULL; }
  }
  json_object_set_new(j, "tpusim_version", json_string(TPU_VERSION));
  if (t->ignored) json_object_set(j, "keras_ignored", t->ignored);
  return j;
}

static int report_text(const opts *o, const train_cli *t, const tpu_fe_run_totals *m) {
  char be[32];
  printf("\nSummary: %s on %s, %d cores, global batch %ld (%d per core), backend %s%s\n", t->model.name, t->chip.name,
         m->cores, (long)m->per_core_batch * m->cores, m->per_core_batch, backend_str(o, be, sizeof be),
         o->backend == TPU_FE_BACKEND_SIM ? "" : " f32");
  if (o->level != TPU_FIDELITY_TIMING)
    printf("  test accuracy     %.4f (test loss %.4f)\n", m->val_accuracy, m->val_loss);
  printf("  simulated step    %.4g us (%.0f cycles at %g MHz, mean of %llu steps), %.4g images/s\n",
         m->sim_step_s * 1e6, m->sim_step_cycles, t->chip.clock_mhz, (unsigned long long)m->sums.steps,
         m->images_per_s);
  printf("  MXU utilization   %.2f%%\n", m->mxu_utilization * 100);
  printf("  step time         ");
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    const int k = tpu_sim_stall_in_report_order(i);
    printf("%s %.1f%%%s", tpu_sim_stall_name(k), m->stall_fraction[k] * 100, i < TPU_SIM_NSTALL - 1 ? "  " : "\n");
  }
  const double in = m->stall_fraction[TPU_SIM_INFEED_WAIT];
  printf("  input pipeline    %.1f%% of the step waiting for input: %s\n", in * 100, tpu_df_verdict(in));
  char alg[512];
  if (t->chip.cores > 1)
    printf("  all-reduce        %s\n", tpu_sim_collective_algorithm(&t->chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
  const tpu_fe_fit_time *f = &m->fit;
  const int run = m->epochs_done - m->first_epoch;
  if (run > 0) {
    printf("  simulated fit     %.4g s over %d epoch%s (%.4g s each): chip %.4g s, input %.4g s, dispatch %.4g s, "
           "validation %.4g s, compile %.4g s\n", f->fit_s, run, run == 1 ? "" : "s", f->fit_s / run, f->chip_s,
           f->input_s, f->dispatch_s, f->validation_s, f->compile_s);
    printf("  host              %ld call%s of %ld step%s (%.3g ms each), %d program%s compiled (train %d kernels, "
           "eval %d), validation %ld samples in %ld steps\n", m->executions, m->executions == 1 ? "" : "s", o->spe,
           o->spe == 1 ? "" : "s", t->chip.host_dispatch_s * 1e3, m->programs, m->programs == 1 ? "" : "s",
           m->kernels_train, m->kernels_eval, m->val_samples, m->val_steps);
  }
  printf("  wall time         %.2f s\n", t->wall);
  return 0;
}
/* }================================================================== */

/* train's CSV columns (a sweep's, sweep/sweep.h), filled by sweep_row, then
** the stall parts (cli_stall_fields). */
static const tpu_sweep_field FIELDS[] = {
  { "sim_step_s", TPU_SWEEP_REAL }, { "sim_step_cycles", TPU_SWEEP_INT }, { "images_per_s", TPU_SWEEP_REAL },
  { "mxu_utilization", TPU_SWEEP_REAL }, { "input_wait_fraction", TPU_SWEEP_REAL },
  { "input_verdict", TPU_SWEEP_STR }, { "test_accuracy", TPU_SWEEP_REAL }, { "test_loss", TPU_SWEEP_REAL },
  { "fit_time_s", TPU_SWEEP_REAL }, { "epoch_s", TPU_SWEEP_REAL }, { "fit_chip_s", TPU_SWEEP_REAL },
  { "fit_input_s", TPU_SWEEP_REAL }, { "fit_dispatch_s", TPU_SWEEP_REAL }, { "fit_validation_s", TPU_SWEEP_REAL },
  { "fit_compile_s", TPU_SWEEP_REAL }, { "executions", TPU_SWEEP_INT },
};

/* A sweep point's row (NULL: none) from the run's totals: the mean step,
** the verdict's words before ':', the test figures (none at the timing
** level) and each stall part per step (its share x the mean step's cycles)
** and as a share of the step. */
static void sweep_row(const opts *o, const tpu_fe_run_totals *m, tpu_sweep_row *row) {
  if (!row) return;
  const bool numerics = o->level != TPU_FIDELITY_TIMING;
  const long long step_cycles = llround(m->sim_step_cycles);
  const char *verdict = tpu_df_verdict(m->stall_fraction[TPU_SIM_INFEED_WAIT]);
  double cycles[TPU_SIM_NSTALL];
  for (int k = 0; k < TPU_SIM_NSTALL; k++) cycles[k] = m->stall_fraction[k] * (double)step_cycles;
  tpu_sweep_row_real(row, "sim_step_s", m->sim_step_s);
  tpu_sweep_row_int(row, "sim_step_cycles", step_cycles);
  tpu_sweep_row_real(row, "images_per_s", m->images_per_s);
  tpu_sweep_row_real(row, "mxu_utilization", m->mxu_utilization);
  tpu_sweep_row_real(row, "input_wait_fraction", m->stall_fraction[TPU_SIM_INFEED_WAIT]);
  tpu_sweep_row_str(row, "input_verdict", verdict, strcspn(verdict, ":"));
  tpu_sweep_row_real(row, "test_accuracy", numerics ? m->val_accuracy : NAN);
  tpu_sweep_row_real(row, "test_loss", numerics ? m->val_loss : NAN);
  const int run = m->epochs_done - m->first_epoch;
  tpu_sweep_row_real(row, "fit_time_s", m->fit.fit_s);
  tpu_sweep_row_real(row, "epoch_s", run > 0 ? m->fit.fit_s / run : NAN);
  tpu_sweep_row_real(row, "fit_chip_s", m->fit.chip_s);
  tpu_sweep_row_real(row, "fit_input_s", m->fit.input_s);
  tpu_sweep_row_real(row, "fit_dispatch_s", m->fit.dispatch_s);
  tpu_sweep_row_real(row, "fit_validation_s", m->fit.validation_s);
  tpu_sweep_row_real(row, "fit_compile_s", m->fit.compile_s);
  tpu_sweep_row_int(row, "executions", m->executions);
  cli_sweep_stalls(row, cycles, m->stall_fraction);
}

/* With --json, *report gets the report (the caller prints it); otherwise
** the text report is printed and *report is NULL. A sweep point's row gets
** its CSV columns. */
static int train(const opts *o, train_cli *t, json_t **report, tpu_sweep_row *row) {
  int rc = create_run(o, t);
  if (rc) return rc;
  tpu_fe_run_totals m;
  tpu_fe_run_get_totals(t->run, &m);
  start(o, t, &m);
  const double wall0 = cli_now_s();
  if (!tpu_fe_run_next(t->run, NULL, NULL))
    /* resumed after the last epoch: the report is the checkpointed run's,
    ** whose last epoch's figures are those of the weights restored */
    fprintf(stderr, "tpusim train: nothing left to do: %s/checkpoint.bin has %d epoch(s) done and --epochs is %ld; "
            "give a larger --epochs to train on\n", o->ckpt, m.first_epoch, o->epochs);
  if ((rc = run_steps(o, t, m.steps_per_epoch))) return rc;
  t->wall = cli_now_s() - wall0;
  if ((rc = write_outputs(o, t))) return rc;
  tpu_fe_run_get_totals(t->run, &m);
  sweep_row(o, &m, row);
  if (!o->com.json) return report_text(o, t, &m);
  if (!(*report = report_json(o, t, &m))) return cli_runtime_error(CMD, "out of memory");
  return 0;
}

/* One run of train on parsed options: all its state is on this call's
** stack or the run's, so runs may go on several host threads at once
** (tpusim sweep). */
static int train_run_opts(const void *op, json_t **report, tpu_sweep_row *row) {
  const opts *o = op;
  *report = NULL;
  /* The GEMM driver allocates its bf16 operand copies per call; keep glibc
  ** from mmap-ing (and page-faulting) them afresh every time. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  train_cli t;
  memset(&t, 0, sizeof t);
  int rc = train(o, &t, report, row);
  tpu_fe_run_destroy(t.run);
  json_decref(t.ignored);
  tpu_free(t.weights);
  tpu_free(t.csv.s);
  tpu_free(t.tb.s);
  return rc;
}

/* The command as a sweep point (sweep/sweep.h) and as itself. */
static int parse_point(int argc, char **argv, void *o) { return parse_args(argc, argv, o); }
static int check_point(const void *o, char *memo, size_t cap) {
  return cli_sweep_check_chip(&((const opts *)o)->com, memo, cap);
}
const tpu_sweep_cmd cli_train_cmd = { CMD, sizeof(opts), true, parse_point, check_point, train_run_opts, FIELDS,
                                      (int)(sizeof FIELDS / sizeof *FIELDS), cli_stall_fields, CLI_STALL_FIELDS };

int cli_cmd_train(int argc, char **argv) {
  return cli_point_main(&cli_train_cmd, argc, argv, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
}
