/*
** cmd_train.c -- `tpusim train`: train a model on the simulated chip,
** data-parallel across its cores, and report accuracy, simulated speed and
** where the cores' time went.
**
** Numerics run through the chosen backend (fe_gemm, frontend/layers.c). The step's simulated
** time does not depend on values: the step is lowered into per-core
** programs and run on the chip engine at the timing level once, and a step
** whose batch is ready late is that step delayed by the wait
** (tpu_fe_step_timer); docs/TRAINING.md says so.
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
  "                         seed_cnn) as NAME[@HxWxC][:CLASSES] (Keras applications'\n"
  "                         input_shape and classes, default 224x224x3:1000,\n"
  "                         xception's 299x299x3, seed_cnn's 192x192x3:5; e.g.\n"
  "                         vgg19@192x192x3:5), or a JSON model file: native\n"
  "                         (docs/MODELS.md) or Keras' model.to_json() (FILE@HxWxC\n"
  "                         when the file leaves the input shape unspecified);\n"
  "                         tpusim model NAME prints its layers\n"
  "  --data D               fashion-mnist (default, Debian's dataset-fashion-mnist),\n"
  "                         synthetic (of the model's input shape and classes),\n"
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
  "  --steps-per-epoch S    stop each epoch after S steps (default: the whole training set)\n"
  "  --batch B              global batch (default 128, at most 2^31); must divide by the\n"
  "                         cores and fit the training set\n"
  "  --cores C              cores to use (default: the chip's)\n"
  "  --backend sim|reference  sim (default): matmuls on the MXU model in the chosen\n"
  "                         precision; reference: OpenBLAS f32, no simulation\n"
  "  --level tile|timing    tile (default): values and time; timing: time only\n"
  "  --precision P          bf16 (default), bf16x3, bf16x6\n"
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

enum { OPT_BACKEND = 1, OPT_LEVEL, OPT_PRECISION };

typedef struct opts {
  const char *model, *data, *trace, *csv, *ckpt, *pipeline;
  long epochs, steps, batch, cores, threads, synth_n;
  long seed;                   /* -1: the model's */
  tpu_fe_backend_kind backend;
  tpu_fidelity level;
  tpu_precision prec;
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
  default:
    return cli_precision(CMD, v, &o->prec);
  }
}

static int parse_args(int argc, char **argv, opts *o) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  *o = (opts){ .data = "fashion-mnist", .epochs = 1, .batch = 128, .seed = -1, .synth_n = 2048,
               .backend = TPU_FE_BACKEND_SIM, .level = TPU_FIDELITY_TILE, .prec = TPU_PREC_BF16,
               .threads = ncpu > 0 ? ncpu : 1 };
  const cli_opt table[] = {
    CLI_STR("model", &o->model, NULL), CLI_STR("data", &o->data, NULL), CLI_STR("trace", &o->trace, NULL),
    CLI_STR("csv", &o->csv, NULL), CLI_STR("checkpoint", &o->ckpt, NULL), CLI_STR("pipeline", &o->pipeline, NULL),
    CLI_LONG("epochs", &o->epochs, 1, 100000), CLI_LONG("steps-per-epoch", &o->steps, 1, 100000000),
    CLI_LONG("batch", &o->batch, 1, 1L << 31), CLI_LONG("cores", &o->cores, 1, TPU_MAX_CORES),
    CLI_LONG("threads", &o->threads, 1, 256), CLI_LONG("synthetic-n", &o->synth_n, 1, INT_MAX),
    CLI_LONG("seed", &o->seed, 0, 2147483647L),
    CLI_ID("backend", OPT_BACKEND, NULL), CLI_ID("level", OPT_LEVEL, NULL), CLI_ID("precision", OPT_PRECISION, NULL),
    CLI_FLAG("resume", &o->resume),
  };
  const int rc = cli_parse(CMD, argc, argv, table, CLI_NOPTS(table), &o->com, option, o);
  if (rc) return rc;
  if (o->com.help) return cli_help(HELP, NULL);
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
** count and the ETA (wall time), at the end the epoch's wall time and wall
** time per step; then the simulated time per step, labelled 'sim' so no one
** takes one for the other, and the running loss and accuracy. */
static void progress(bool tty, bool final, long step, long total, double wall_s, double sim_step_s,
                     double loss, double acc) {
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
    printf(" - %.0fs %s/step (wall)", wall_s, wt);
  } else {
    const long eta = step ? lround(wall_s / (double)step * (double)(total - step)) : 0;
    if (eta >= 3600) printf(" - ETA: %ld:%02ld:%02ld", eta / 3600, eta / 60 % 60, eta % 60);
    else if (eta >= 60) printf(" - ETA: %ld:%02ld", eta / 60, eta % 60);
    else printf(" - ETA: %lds", eta);
  }
  printf(" - sim %s/step", t);
  /* --level timing computes no values: no loss to show (NaN) */
  if (!isnan(loss)) printf(" - loss: %.4f - accuracy: %.4f", loss, acc);
  if (!final) fflush(stdout);
}

/* }================================================================== */

/* {==================================================================
** The run
** ================================================================== */

typedef struct train_run {
  tpu_chip_config chip, tchip;         /* the chip, and the chip cut to the cores in use */
  tpu_fe_model model;
  int cores;
  bool numerics, tty, text;
  double hz;
  tpu_fe_feed *feed;
  tpu_fe_feed_info fi;
  tpu_fe_dataset test;
  long steps, steps_avail;             /* per epoch: run, and in the training set */
  tpu_fe_step_timer *timer;            /* the step on the engine, for timer_rows samples per core */
  int timer_rows;
  tpu_fe_step_timing tm, tm0;          /* the step's timing: now, and with no infeed wait */
  uint64_t tm_wait;                    /* the infeed wait 'tm' was timed with */
  int tm_rows;                         /* and the shard of its busiest core */
  tpu_fe_run_log run;                  /* sums over the steps timed, sim_time_s: the whole run (checkpointed) */
  long nsteps;                         /* steps timed by this invocation */
  tpu_fe_trainer tr;
  tpu_fe_ckpt_info ck;
  int first_epoch;                     /* the epochs a resumed checkpoint had done */
  uint64_t gstep;
  tpu_text csv, tb;
  tpu_fe_epoch_log *hist;              /* the whole run's history: nhist epochs (checkpointed) */
  int nhist;
  json_t *ignored;                     /* a Keras model's options not modelled (--json), or NULL */
  double test_loss, test_acc, last_loss, last_acc, wall;
} train_run;

/* The model, the cores and the chip cut to them. */
static int load_model(const opts *o, train_run *t) {
  int rc = cli_load_chip(CMD, &o->com, &t->chip);
  if (rc || (rc = cli_load_model(CMD, o->model, o->com.json, &t->model, &t->ignored))) return rc;
  if (o->seed >= 0) t->model.seed = (uint64_t)o->seed;
  t->cores = o->cores ? (int)o->cores : t->chip.cores;
  if (t->cores > t->chip.cores)
    return cli_usage_error(CMD, "--cores %d: the chip %s has %d cores", t->cores, t->chip.name, t->chip.cores);
  /* sample counts are ints: no training set here holds more (synthetic data
  ** at most 2^31 - 1 samples, --synthetic-n), so a batch of 2^31 never fits */
  if (o->batch > INT_MAX)
    return cli_usage_error(CMD, "--batch %ld is larger than the training set (%s: at most %d samples%s)", o->batch,
                           o->data, INT_MAX, strcmp(o->data, "synthetic") ? "" : ", --synthetic-n's range");
  if (o->level != TPU_FIDELITY_TIMING && o->synth_n > (1L << 22))
    return cli_usage_error(CMD, "--synthetic-n %ld: --level tile holds the synthetic set in memory, at most 4194304 "
                           "samples; --level timing makes none and takes up to %d", o->synth_n, INT_MAX);
  if (o->batch % t->cores)
    return cli_usage_error(CMD, "--batch %ld does not divide across %d cores; use a multiple of %d "
                          "(the global batch is split evenly, as TPUStrategy does)", o->batch, t->cores, t->cores);
  t->numerics = o->level != TPU_FIDELITY_TIMING;
  t->hz = t->chip.clock_mhz * 1e6;
  /* the cores in use take part in the all-reduce; the chip is cut to them */
  t->tchip = t->chip;
  cli_chip_cut(&t->tchip, t->cores);
  return 0;
}

/* The input: datafeed's pipeline (values) and host-time model (ready
** times), checked against the model, and the test split. */
static int open_data(const opts *o, train_run *t) {
  char err[1024];
  const int ncls = t->model.layers[t->model.nlayers - 1].out.c;
  /* synthetic data takes the model's input shape and classes */
  tpu_fe_feed_opts fo = { .data = o->data, .pipeline = o->pipeline, .global_batch = (int)o->batch,
                          .epochs = (int)o->epochs, .synthetic_n = (int)o->synth_n, .seed = t->model.seed,
                          .input_shape = t->model.input, .synthetic_classes = ncls,
                          .no_values = !t->numerics, .model_shape = t->model.input, .model_classes = ncls };
  if (t->numerics && ncls > 256)
    return cli_usage_error(CMD, "%s gives %d classes; --level tile computes values with at most 256 classes "
                           "(byte labels); --level timing takes any count", o->model, ncls);
  tpu_status st = tpu_fe_feed_open(&fo, &t->feed, &t->fi, err, sizeof err);
  /* every split is checked against the model (tpu_fe_feed_opts.model_shape) */
  if (st) return o->pipeline ? cli_fail(CMD, st, "--pipeline: %s", err) : cli_fail(CMD, st, "--data %s: %s", o->data, err);
  if (t->numerics && (st = tpu_fe_feed_test_set(&fo, &t->test, err, sizeof err)))
    return cli_fail(CMD, st, "--data %s (test split): %s", o->data, err);
  t->steps_avail = (long)t->fi.batches_per_epoch;
  if (t->steps_avail < 1) return cli_usage_error(CMD, "--batch %ld is larger than the training set", o->batch);
  t->steps = o->steps && o->steps < t->steps_avail ? o->steps : t->steps_avail;
  return 0;
}

/* Times the step of 'rows' samples per core for an infeed 'wait' (values
** never enter it; see the top of this file): the step timer's, timed once,
** for whole batches; a partial last batch's step is timed on its own. */
static tpu_status time_step(const opts *o, train_run *t, int rows, uint64_t wait, bool traced, tpu_fe_step_timing *out,
                            char *err, size_t errcap) {
  const tpu_fe_step_trace tr = { .out = &t->tb, .step = (long)t->gstep, .t0_us = t->run.sim_time_s * 1e6 };
  if (rows == t->timer_rows) return tpu_fe_step_timer_time(t->timer, wait, traced ? &tr : NULL, out, err, errcap);
  return tpu_fe_time_step(&t->model, &t->tchip, o->prec, rows, true, wait, (int)o->threads,
                          out, traced ? &tr : NULL, err, errcap);
}

/* The trainer (from the checkpoint with --resume), the CSV header, the
** trace's metadata and the banner. */
static int start(const opts *o, train_run *t) {
  char err[1024];
  t->timer_rows = (int)(o->batch / t->cores);
  tpu_status st = tpu_fe_step_timer_create(&t->model, &t->tchip, o->prec, t->timer_rows, true,
                                           (int)o->threads, &t->timer, err, sizeof err);
  if (!st) st = time_step(o, t, t->timer_rows, 0, false, &t->tm0, err, sizeof err);
  if (st) return cli_fail(CMD, st, "%s: %s", o->model, err);
  t->tm = t->tm0;
  t->tm_rows = (int)(o->batch / t->cores);
  tpu_fe_backend be = { .kind = o->backend, .mxu = t->chip.mxu, .mxus = t->chip.mxus_per_core, .prec = o->prec };
  if (t->numerics && (st = tpu_fe_trainer_create(&t->model, &be, t->cores, (int)o->batch, (int)o->threads, &t->tr)))
    return cli_fail(CMD, st, "out of memory creating the trainer");
  t->ck = (tpu_fe_ckpt_info){ .seed = t->model.seed, .global_batch = (int)o->batch };
  if (o->resume) {   /* the run so far: weights, data position, sums and history */
    tpu_fe_ckpt_info got;
    if ((st = tpu_fe_ckpt_load(o->ckpt, &t->tr, &t->ck, &got, err, sizeof err)))
      return cli_fail(CMD, st, "--resume: %s", err);
    t->first_epoch = got.epochs_done;
    t->gstep = got.step;
    if (got.run.cores && got.run.cores != t->cores) {   /* its per-core sums are of other cores */
      tpu_free(got.history);
      return cli_usage_error(CMD, "--resume: %s/checkpoint.bin: written with --cores %d; resume with the same (got "
                             "--cores %d)", o->ckpt, got.run.cores, t->cores);
    }
    t->run = got.run;
    tpu_free(t->hist);
    t->hist = got.history;
    t->nhist = got.epochs_done;
    if (t->first_epoch < o->epochs && (st = tpu_fe_feed_seek(t->feed, t->first_epoch, err, sizeof err)))
      return cli_fail(CMD, st, "%s", err);
  }
  const int need = (int)(o->epochs > t->nhist ? o->epochs : t->nhist);
  tpu_fe_epoch_log *h = tpu_realloc(t->hist, (size_t)(need ? need : 1) * sizeof *h);
  if (!h) return cli_runtime_error(CMD, "out of memory");
  t->hist = h;
  if (o->csv)
    tpu_text_printf(&t->csv, "epoch,step,loss,accuracy,sim_step_s,%s_s,sim_time_s\n",
                    tpu_sim_stall_name(TPU_SIM_INFEED_WAIT));
  if (o->trace) tpu_sim_trace_steps_begin(&t->tb, t->chip.name, t->cores);
  t->tty = !o->com.json && cli_stdout_is_tty();
  t->text = !o->com.json;
  if (t->text)
    printf("Training %s (%zu parameters) on %s: %d cores x %ld samples = batch %ld, backend %s%s%s, data %s%s%s\n",
           t->model.name, t->model.nparams, t->chip.name, t->cores, o->batch / t->cores, o->batch,
           o->backend == TPU_FE_BACKEND_SIM ? "sim " : "reference",
           o->backend == TPU_FE_BACKEND_SIM ? tpu_precision_name(o->prec) : "",
           t->numerics ? "" : " (timing level: no values)", o->pipeline ? "pipeline " : "",
           o->pipeline ? o->pipeline : o->data, "");
  return 0;
}

/* Adds a step's timing to the sums the report is made of. */
static void account(train_run *t, const tpu_fe_step_timing *tm) {
  for (int k = 0; k < TPU_SIM_NSTALL; k++) t->run.stall[k] += tm->stall[k];
  t->run.cycles += (double)tm->step_cycles;
  t->run.macs += (double)tm->macs;
  t->run.mxu_capacity += (double)tm->mxu_cycles_capacity;
  t->run.steps++;
  t->nsteps++;
  t->run.cores = t->cores;
  t->run.core_cycles += tm->step_cycles;   /* step() keeps it under 2^63 / cores */
  for (int c = 0; c < t->cores; c++)
    for (int k = 0; k < TPU_SIM_NSTALL; k++) t->run.core_stall[c][k] += tm->core_stall[c][k];
}

/* Step s of epoch ep: the batch when the infeed has it, the step's timing,
** the numerics; *loss, *cor and *step_s get its loss, correct predictions
** and simulated time. */
static int step(const opts *o, train_run *t, int ep, long s, int *n, double *loss, int *cor, double *step_s) {
  char err[1024];
  const float *xb;
  const uint8_t *yb;
  double ready_s;
  tpu_status st = tpu_fe_feed_next(t->feed, t->run.sim_time_s, &xb, &yb, n, &ready_s, err, sizeof err);
  if (st) return cli_fail(CMD, st, "epoch %d, step %ld: %s", ep + 1, s + 1, err);
  const double wait_cyc = (ready_s - t->run.sim_time_s) * t->hz;   /* >= 0: the feed never returns an earlier time */
  if (!(wait_cyc <= (double)TPU_SIM_MAX_CYCLES))
    return cli_usage_error(CMD, "%s: epoch %d, step %ld: the batch is ready %.4g s after the cores ask for it (%.4g "
                           "cycles), longer than the engine times (2^53 cycles): the pipeline's costs are out of "
                           "proportion to its elements and steps", o->pipeline ? o->pipeline : "--data", ep + 1, s + 1,
                           ready_s - t->run.sim_time_s, wait_cyc);
  const uint64_t wait = (uint64_t)llround(wait_cyc);
  const bool traced = o->trace && t->nsteps < 20;
  /* a partial last batch (a pipeline without drop_remainder) fills whole
  ** shards on the first cores: the step is timed with the busiest core's
  ** shard on every core (the others would wait for it at the all-reduce) */
  const int per_core = (int)(o->batch / t->cores), rows = *n < per_core ? *n : per_core;
  if (wait != t->tm_wait || rows != t->tm_rows || traced) {
    if ((st = time_step(o, t, rows, wait, traced, &t->tm, err, sizeof err))) return cli_fail(CMD, st, "%s", err);
    t->tm_wait = wait;
    t->tm_rows = rows;
  }
  /* the report's cycles, summed over the steps and the cores, are JSON integers */
  if (t->tm.step_cycles > (uint64_t)INT64_MAX / (uint64_t)t->cores - t->run.core_cycles)
    return cli_usage_error(CMD, "%s: epoch %d, step %ld: the run's simulated core-cycles pass 2^63 (the steps so far "
                           "took %llu cycles): the pipeline's costs are out of proportion to its elements and steps",
                           o->pipeline ? o->pipeline : "--data", ep + 1, s + 1, (unsigned long long)t->run.core_cycles);
  *step_s = (double)t->tm.step_cycles / t->hz;
  if (t->numerics && (st = tpu_fe_trainer_step_n(&t->tr, xb, yb, *n, t->gstep, (uint64_t)(s * o->batch), loss, cor)))
    return cli_fail(CMD, st, "epoch %d, step %ld: %s", ep + 1, s + 1, tpu_status_str(st));
  account(t, &t->tm);
  t->run.sim_time_s += *step_s;
  if (o->csv)
    tpu_text_printf(&t->csv, "%d,%llu,%.9g,%.9g,%.9g,%.9g,%.9g\n", ep + 1, (unsigned long long)t->gstep + 1,
                    t->numerics ? *loss : NAN, t->numerics ? (double)*cor / (double)*n : NAN, *step_s,
                    (double)wait / t->hz, t->run.sim_time_s);
  return 0;
}

/* The end of an epoch: the next epoch's data, the test set, the progress
** line, the history and the checkpoint. */
static int end_epoch(const opts *o, train_run *t, int ep, double ewall, double ep_sim) {
  char err[1024];
  tpu_status st;
  if (t->steps < t->steps_avail && ep + 1 < o->epochs && (st = tpu_fe_feed_seek(t->feed, ep + 1, err, sizeof err)))
    return cli_fail(CMD, st, "%s", err);
  if (t->numerics && (st = tpu_fe_trainer_eval(&t->tr, &t->test, &t->test_loss, &t->test_acc)))
    return cli_fail(CMD, st, "evaluation: %s", tpu_status_str(st));
  if (t->text) {
    progress(t->tty, true, t->steps, t->steps, ewall, ep_sim / (double)t->steps, t->last_loss, t->last_acc);
    if (t->numerics) printf(" - val_loss: %.4f - val_accuracy: %.4f\n", t->test_loss, t->test_acc);
    else printf("\n");
    fflush(stdout);
  }
  const bool n = t->numerics;
  t->hist[ep] = (tpu_fe_epoch_log){ n ? t->last_loss : 0.0, n ? t->last_acc : 0.0, n ? t->test_loss : 0.0,
                                    n ? t->test_acc : 0.0, ep_sim, ewall };
  t->nhist = ep + 1;
  if (o->ckpt && n) {
    t->ck.epochs_done = ep + 1;
    t->ck.step = t->gstep;
    t->ck.run = t->run;
    t->ck.history = t->hist;
    if (tpu_fe_ckpt_save(o->ckpt, &t->tr, &t->ck, err, sizeof err))   /* an output: a runtime failure */
      return cli_runtime_error(CMD, "%s", err);
  }
  return 0;
}

static int run_epoch(const opts *o, train_run *t, int ep) {
  const double ew0 = cli_now_s();
  double lsum = 0, wsum = 0, last_draw = 0, ep_sim = 0;
  long csum = 0, seen = 0;
  if (t->text) printf("Epoch %d/%ld\n", ep + 1, o->epochs);
  for (long s = 0; s < t->steps; s++, t->gstep++) {
    double loss = NAN, step_s = 0;
    int cor = 0, n = 0, rc;
    if ((rc = step(o, t, ep, s, &n, &loss, &cor, &step_s))) return rc;
    ep_sim += step_s;
    /* the running means weigh each batch by its size, as Keras' (a full
    ** batch weighs exactly 1) */
    const double w = (double)n / (double)o->batch;
    lsum += loss * w;
    wsum += w;
    csum += cor;
    seen += n;
    t->last_loss = t->numerics ? lsum / wsum : NAN;
    t->last_acc = (double)csum / (double)seen;
    const double now = cli_now_s();
    if (t->tty && (now - last_draw > 0.05 || s + 1 == t->steps)) {
      progress(true, false, s + 1, t->steps, now - ew0, ep_sim / (double)(s + 1), t->last_loss, t->last_acc);
      last_draw = now;
    }
  }
  return end_epoch(o, t, ep, cli_now_s() - ew0, ep_sim);
}

static int write_outputs(const opts *o, train_run *t) {
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
** The report
** ================================================================== */
typedef struct summary {
  double fr[TPU_SIM_NSTALL];   /* the stall parts (TPU_SIM_* order), fractions of the step */
  double util;                 /* useful MACs over the array's capacity */
  double step_s, ips;
} summary;

static summary summarize(const opts *o, train_run *t) {
  if (t->run.steps == 0) account(t, &t->tm0);  /* no step timed (never happens in a whole run): report one */
  summary m;
  for (int k = 0; k < TPU_SIM_NSTALL; k++) m.fr[k] = t->run.stall[k] / t->run.cycles;
  /* useful MACs only: extra bf16 passes cost time but are not model work */
  m.util = t->run.macs / (double)tpu_precision_passes(o->prec) / t->run.mxu_capacity;
  m.step_s = t->run.cycles / (double)t->run.steps / t->hz;
  m.ips = (double)o->batch / m.step_s;
  return m;
}

/* The stall parts in cycles over the run's steps (a resumed run's
** included, from its checkpoint): "per_core" (each core's, with its
** "cycles"), "stall_cycles" (summed over the cores) and "per_core_steps".
** 0, or -1 when out of memory. */
static int per_core_json(json_t *j, const train_run *t) {
  json_t *pc = json_array(), *tot = json_object();
  int bad = !pc || !tot;
  for (int c = 0; !bad && c < t->cores; c++) {
    json_t *e = json_pack("{s:i,s:I}", "core", c, "cycles", (json_int_t)t->run.core_cycles);
    bad |= json_array_append_new(pc, e);
    for (int i = 0; !bad && i < TPU_SIM_NSTALL; i++) {
      const int k = tpu_sim_stall_in_report_order(i);
      bad |= json_object_set_new(e, tpu_sim_stall_name(k), json_integer((json_int_t)t->run.core_stall[c][k]));
    }
  }
  for (int i = 0; !bad && i < TPU_SIM_NSTALL; i++) {
    const int k = tpu_sim_stall_in_report_order(i);
    uint64_t sum = 0;
    for (int c = 0; c < t->cores; c++) sum += t->run.core_stall[c][k];   /* <= cores * core_cycles < 2^63 */
    bad |= json_object_set_new(tot, tpu_sim_stall_name(k), json_integer((json_int_t)sum));
  }
  bad |= json_object_set_new(j, "stall_cycles", tot);
  bad |= json_object_set_new(j, "per_core", pc);
  bad |= json_object_set_new(j, "per_core_steps", json_integer((json_int_t)t->run.steps));
  return bad ? -1 : 0;
}

/* The --json report; NULL when out of memory. */
static json_t *report_json(const opts *o, train_run *t, const summary *m) {
  const bool n = t->numerics;
  json_t *stall = json_object();
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {   /* in the training report's order (sim/stall.def) */
    const int k = tpu_sim_stall_in_report_order(i);
    json_object_set_new(stall, tpu_sim_stall_name(k), cli_json_real(m->fr[k]));
  }
  char hs[32];
  snprintf(hs, sizeof hs, "%016llx", n ? (unsigned long long)tpu_fe_params_hash(t->tr.params, t->model.nparams) : 0ull);
  json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:I}",
                        "model", t->model.name, "chip", t->chip.name, "cores", t->cores, "global_batch", (int)o->batch,
                        "per_core_batch", (int)(o->batch / t->cores),
                        "backend", o->backend == TPU_FE_BACKEND_SIM ? "sim" : "reference",
                        "level", tpu_fidelity_name(o->level), "precision", tpu_precision_name(o->prec),
                        "data", o->data, "epochs", t->nhist, "steps_per_epoch", (int)t->steps,
                        "parameters", (json_int_t)t->model.nparams);
  /* a resumed run reports the whole run; epochs_run says how much of it this invocation ran */
  json_object_set_new(j, "epochs_run", json_integer(t->nhist - t->first_epoch > 0 ? t->nhist - t->first_epoch : 0));
  json_object_set_new(j, "val_loss", n ? cli_json_real(t->test_loss) : json_null());
  json_object_set_new(j, "val_accuracy", n ? cli_json_real(t->test_acc) : json_null());
  json_object_set_new(j, "test_loss", n ? cli_json_real(t->test_loss) : json_null());      /* alias of val_loss */
  json_object_set_new(j, "test_accuracy", n ? cli_json_real(t->test_acc) : json_null());
  json_object_set_new(j, "train_loss", n ? cli_json_real(t->last_loss) : json_null());
  json_object_set_new(j, "train_accuracy", n ? cli_json_real(t->last_acc) : json_null());
  json_object_set_new(j, "sim_step_s", cli_json_real(m->step_s));
  json_object_set_new(j, "sim_step_cycles", json_integer((json_int_t)llround(t->run.cycles / (double)t->run.steps)));
  json_object_set_new(j, "sim_time_s", cli_json_real(t->run.sim_time_s));
  json_object_set_new(j, "images_per_s", cli_json_real(m->ips));
  json_object_set_new(j, "mxu_utilization", cli_json_real(m->util));
  json_object_set_new(j, "stall", stall);
  if (per_core_json(j, t)) { json_decref(j); return NULL; }
  json_object_set_new(j, "input_wait_fraction", cli_json_real(m->fr[TPU_SIM_INFEED_WAIT]));
  json_object_set_new(j, "input_verdict", json_string(tpu_df_verdict(m->fr[TPU_SIM_INFEED_WAIT])));
  char alg[512];
  json_object_set_new(j, "all_reduce_algorithm",
                      json_string(tpu_sim_collective_algorithm(&t->chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg)));
  json_object_set_new(j, "wall_s", cli_json_real(t->wall));   /* this invocation's */
  json_object_set_new(j, "params_hash", n ? json_string(hs) : json_null());
  json_t *hist = json_array();
  /* val_* as Keras names them; test_* are their aliases for one release;
  ** wall_s is null for the epochs before a --resume (checkpoints keep no
  ** wall time, so that identical runs write identical files) */
  for (int e = 0; e < t->nhist; e++) {
    const tpu_fe_epoch_log *h = &t->hist[e];
    json_array_append_new(hist, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "epoch", e + 1,
                                          "loss", cli_json_real(h->loss), "accuracy", cli_json_real(h->accuracy),
                                          "val_loss", cli_json_real(h->val_loss),
                                          "val_accuracy", cli_json_real(h->val_accuracy),
                                          "test_loss", cli_json_real(h->val_loss),
                                          "test_accuracy", cli_json_real(h->val_accuracy),
                                          "wall_s", cli_json_real(h->wall_s), "sim_s", cli_json_real(h->sim_s)));
  }
  json_object_set_new(j, "history", hist);
  json_object_set_new(j, "tpusim_version", json_string(TPU_VERSION));
  if (t->ignored) json_object_set(j, "keras_ignored", t->ignored);
  return j;
}

static int report_text(const opts *o, const train_run *t, const summary *m) {
  printf("\nSummary: %s on %s, %d cores, global batch %ld (%ld per core), backend %s\n", t->model.name, t->chip.name,
         t->cores, o->batch, o->batch / t->cores, o->backend == TPU_FE_BACKEND_SIM ? (o->prec == TPU_PREC_BF16 ? "sim bf16" : o->prec == TPU_PREC_BF16X3 ? "sim bf16x3" : "sim bf16x6") : "reference f32");
  if (t->numerics) printf("  test accuracy     %.4f (test loss %.4f)\n", t->test_acc, t->test_loss);
  printf("  simulated step    %.4g us (%.0f cycles at %g MHz, mean of %llu steps), %.4g images/s\n", m->step_s * 1e6,
         t->run.cycles / (double)t->run.steps, t->chip.clock_mhz, (unsigned long long)t->run.steps, m->ips);
  printf("  MXU utilization   %.2f%%\n", m->util * 100);
  printf("  step time         ");
  for (int i = 0; i < TPU_SIM_NSTALL; i++) {
    const int k = tpu_sim_stall_in_report_order(i);
    printf("%s %.1f%%%s", tpu_sim_stall_name(k), m->fr[k] * 100, i < TPU_SIM_NSTALL - 1 ? "  " : "\n");
  }
  printf("  input pipeline    %.1f%% of the step waiting for input: %s\n", m->fr[TPU_SIM_INFEED_WAIT] * 100, tpu_df_verdict(m->fr[TPU_SIM_INFEED_WAIT]));
  char alg[512];
  if (t->chip.cores > 1)
    printf("  all-reduce        %s\n", tpu_sim_collective_algorithm(&t->chip, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
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
};

/* A sweep point's row (NULL: none) from what the run computed: the mean
** step, the verdict's words before ':', the test figures (none at the
** timing level) and each stall part per step (its share x the mean step's
** cycles) and as a share of the step. */
static void sweep_row(const train_run *t, const summary *m, tpu_sweep_row *row) {
  const long long step_cycles = llround(t->run.cycles / (double)t->run.steps);
  const char *verdict = tpu_df_verdict(m->fr[TPU_SIM_INFEED_WAIT]);
  double cycles[TPU_SIM_NSTALL];
  for (int k = 0; k < TPU_SIM_NSTALL; k++) cycles[k] = m->fr[k] * (double)step_cycles;
  tpu_sweep_row_real(row, "sim_step_s", m->step_s);
  tpu_sweep_row_int(row, "sim_step_cycles", step_cycles);
  tpu_sweep_row_real(row, "images_per_s", m->ips);
  tpu_sweep_row_real(row, "mxu_utilization", m->util);
  tpu_sweep_row_real(row, "input_wait_fraction", m->fr[TPU_SIM_INFEED_WAIT]);
  tpu_sweep_row_str(row, "input_verdict", verdict, strcspn(verdict, ":"));
  tpu_sweep_row_real(row, "test_accuracy", t->numerics ? t->test_acc : NAN);
  tpu_sweep_row_real(row, "test_loss", t->numerics ? t->test_loss : NAN);
  cli_sweep_stalls(row, cycles, m->fr);
}

/* With --json, *report gets the report (the caller prints it); otherwise
** the text report is printed and *report is NULL. A sweep point's row gets
** its CSV columns. */
static int train(const opts *o, train_run *t, json_t **report, tpu_sweep_row *row) {
  int rc;
  if ((rc = load_model(o, t)) || (rc = open_data(o, t)) || (rc = start(o, t))) return rc;
  const double wall0 = cli_now_s();
  if (t->first_epoch >= o->epochs) {
    /* resumed after the last epoch: the report is the checkpointed run's,
    ** whose last epoch's figures are those of the weights restored */
    fprintf(stderr, "tpusim train: nothing left to do: %s/checkpoint.bin has %d epoch(s) done and --epochs is %ld; "
            "give a larger --epochs to train on\n", o->ckpt, t->first_epoch, o->epochs);
    const tpu_fe_epoch_log *last = &t->hist[t->nhist - 1];
    t->last_loss = last->loss;
    t->last_acc = last->accuracy;
    t->test_loss = last->val_loss;
    t->test_acc = last->val_accuracy;
  }
  for (int ep = t->first_epoch; ep < o->epochs; ep++)
    if ((rc = run_epoch(o, t, ep))) return rc;
  t->wall = cli_now_s() - wall0;
  if ((rc = write_outputs(o, t))) return rc;
  const summary m = summarize(o, t);
  sweep_row(t, &m, row);
  if (!o->com.json) return report_text(o, t, &m);
  if (!(*report = report_json(o, t, &m))) return cli_runtime_error(CMD, "out of memory");
  return 0;
}

/* One run of train on parsed options: all its state is on this call's
** stack, so runs may go on several host threads at once (tpusim sweep). */
static int train_run_opts(const void *op, json_t **report, tpu_sweep_row *row) {
  const opts *o = op;
  *report = NULL;
  /* The GEMM driver allocates its bf16 operand copies per call; keep glibc
  ** from mmap-ing (and page-faulting) them afresh every time. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  train_run t;
  memset(&t, 0, sizeof t);
  t.test_loss = t.test_acc = t.last_loss = t.last_acc = NAN;
  int rc = train(o, &t, report, row);
  tpu_free(t.hist);
  json_decref(t.ignored);
  tpu_fe_step_timer_destroy(t.timer);
  if (t.numerics) tpu_fe_trainer_destroy(&t.tr);
  tpu_free(t.csv.s);
  tpu_free(t.tb.s);
  tpu_fe_feed_close(t.feed);
  tpu_fe_dataset_free(&t.test);
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
