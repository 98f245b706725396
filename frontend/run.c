/*
** run.c -- the training run (fe.h, "The training run"): the feed, the step
** timer, the trainer and the running totals, one step a call.
**
** A step's simulated time does not depend on values, so the whole-batch
** step is lowered and run on the engine once (tpu_fe_step_timer), and a
** step whose batch is ready W cycles late is that step delayed by W
** (docs/TRAINING.md). The engine runs again only for a partial last batch
** (a pipeline without drop_remainder) and for a traced step. The loss and
** accuracy of an epoch are Keras' running means, each batch weighed by its
** size; the test split is evaluated after the epoch's last step.
**
** Invariants: 'epoch' and 'step' are the next step's position; the epoch's
** running sums hold steps 0..step-1 of it; 'sums' holds every step timed,
** a resumed checkpoint's included, and its stall parts add up to its
** cycles (the engine's, summed). Not here: printing, the command line's
** options, reports, wall time other than each epoch's.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frontend/fe_int.h"

struct tpu_fe_run {
  tpu_fe_run_config cfg;       /* the caller's; cfg.model points at 'model' */
  tpu_fe_model model;          /* the caller's model, with cfg.seed */
  int cores, rows;             /* the split: samples per core */
  bool numerics;               /* the tile level: values (trainer, test split) */
  double hz;                   /* the chip's clock */
  tpu_fe_feed *feed;
  tpu_fe_dataset test;         /* numerics: the test split */
  long steps, steps_avail;     /* per epoch: run, and in the training set */
  tpu_fe_step_timer *timer;    /* the whole-batch step on the engine */
  tpu_fe_step_timing tm, tm0;  /* the step's timing: the last one, and with no infeed wait */
  uint64_t tm_wait;            /* the infeed wait 'tm' was timed with */
  int tm_rows;                 /* and the shard of its busiest core */
  tpu_fe_run_log sums;         /* over the steps timed; sim_time_s: the whole run (checkpointed) */
  long nsteps;                 /* steps timed by this run */
  tpu_fe_trainer tr;           /* numerics only */
  int first_epoch;             /* the epochs a resumed checkpoint had done */
  uint64_t gstep;              /* steps done, a resumed run's included */
  tpu_fe_epoch_log *hist;      /* the whole run's history: nhist epochs (checkpointed) */
  int nhist;
  int epoch;                   /* the next step's position */
  long step;
  double lsum, wsum;           /* the epoch so far: loss summed with each batch's weight, the weights */
  double olsum[TPU_FE_MAX_OUTPUTS];   /* ... each output's loss summed the same way */
  long csum, seen;             /* ... samples right, samples */
  double ep_sim, ep_wall0;     /* ... simulated time, and the wall clock at its start */
  /* The host side of the fit (docs/TRAINING.md, "The host side of a fit") */
  double dequeue_s;            /* when the last step took its batch (its infeed buffer freed) */
  double xfer_s;               /* a sample's host-to-device transfer over the chips' links */
  double compile_s[2];         /* a program's compile: the training step's, the inference pass's */
  int kernels[2];              /* their kernels */
  bool compiled[4];            /* this run compiled: training whole / partial, eval whole / partial */
  long val_n, val_steps;       /* the validation split and its steps */
  int val_tail;                /* the last validation batch's samples (< the batch), or 0 */
  tpu_fe_step_timing ev, ev_tail;      /* the inference pass at the shard, and at the tail's */
  tpu_fe_fit_time fit, ep_fit; /* this run's, and the epoch's so far */
  long executions;
  int programs;
  tpu_status failed;           /* a step failed: the run only says so again */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

tpu_status tpu_fe_batch_split(int global_batch, int cores, int *per_core, char *err, size_t errcap) {
  if (global_batch >= 1 && cores >= 1 && global_batch % cores == 0) {
    *per_core = global_batch / cores;
    return TPU_OK;
  }
  if (global_batch < 1 || cores < 1)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--batch %d over %d cores: expected at least one sample and "
                      "one core", global_batch, cores);
  return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--batch %d does not divide across %d cores; use a multiple of %d "
                    "(the global batch is split evenly, as TPUStrategy does)", global_batch, cores, cores);
}

tpu_fe_run_config tpu_fe_run_config_default(void) {
  return (tpu_fe_run_config){ .global_batch = 128, .seed = -1, .backend = TPU_FE_BACKEND_SIM,
                              .level = TPU_FIDELITY_TILE, .prec = TPU_PREC_BF16, .threads = 1, .epochs = 1,
                              .data = "fashion-mnist", .synthetic_n = 2048, .trace_steps = 20,
                              .steps_per_execution = 1 };
}

/* {==================================================================
** Creation: the config, the data, the timer, the trainer, the checkpoint
** ================================================================== */
/* What the command line's options cannot get wrong but a caller can. */
/* Softmax cross-entropy reads the last layer's values as class scores: it
** needs two at least. A single sigmoid unit trains with binary
** cross-entropy (the loss the loader gives it unless "loss" says
** otherwise); a single linear or tanh unit is a regression head, whose
** mean squared error is not modelled. */
static tpu_status check_head(const tpu_fe_model *m, const char *label, char *err, size_t errcap) {
  const tpu_fe_layer *L = &m->layers[m->nlayers - 1];
  if (m->nout > 1 || m->loss != TPU_FE_LOSS_SOFTMAX_XENT || L->out.c >= 2) return TPU_OK;   /* "outputs": checked */
  return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--model %s: the last layer%s%s%s (%s) gives %d value: "
                    "softmax_cross_entropy needs one score per class (at least 2: a dense of 2 units and softmax); "
                    "one sigmoid unit trains with binary_cross_entropy (its default loss), a linear or tanh unit "
                    "(a regression, Keras' mean_squared_error) is not trained", label, *L->name ? " '" : "", L->name,
                    *L->name ? "'" : "", tpu_fe_layer_kind_name(L->kind), L->out.c);
}

static tpu_status check_config(const tpu_fe_run_config *c, char *err, size_t errcap) {
  if (!c->model || c->chip.cores < 1 || c->chip.cores > TPU_MAX_CORES || c->chip.clock_mhz <= 0)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "a run needs a model and a chip of 1..%d cores", TPU_MAX_CORES);
  if (c->level != TPU_FIDELITY_TILE && c->level != TPU_FIDELITY_TIMING)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--level: a run is at the tile or the timing level, got %s",
                      tpu_fidelity_name(c->level));
  if (c->epochs < 1 || c->steps_per_epoch < 0 || c->threads < 1 || c->synthetic_n < 1 || c->trace_steps < 0 ||
      c->timeline_steps < 0 || !c->data || c->steps_per_execution < 1)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "a run needs epochs, threads, synthetic_n, steps_per_execution >= 1, "
                      "steps_per_epoch, trace_steps, timeline_steps >= 0 and data; got %d, %d, %d, %d, %ld, %d, %d",
                      c->epochs, c->threads, c->synthetic_n, c->steps_per_execution, c->steps_per_epoch,
                      c->trace_steps, c->timeline_steps);
  tpu_status st = check_head(c->model, c->model_label ? c->model_label : c->model->name, err, errcap);
  if (st) return st;
  if (c->resume_dir && c->level == TPU_FIDELITY_TIMING)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--resume %s: --level timing computes no weights to resume",
                      c->resume_dir);
  if (c->level != TPU_FIDELITY_TIMING && c->synthetic_n > (1 << 22))
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--synthetic-n %d: --level tile holds the synthetic set in memory, "
                      "at most 4194304 samples; --level timing makes none and takes up to %d", c->synthetic_n,
                      INT_MAX);
  return TPU_OK;
}

/* The input: datafeed's pipeline (values) and host-time model (ready
** times), checked against the model, and the test split. */
static tpu_status open_data(tpu_fe_run *r, const char *label, char *err, size_t errcap) {
  const tpu_fe_run_config *c = &r->cfg;
  char e[1024];
  const int ncls = tpu_fe_model_label_classes(&r->model);   /* a binary head's: 2 */
  /* synthetic data takes the model's input shape and classes (and token
  ** ids for a model whose input feeds an embedding) */
  tpu_fe_feed_opts fo = { .data = c->data, .pipeline = c->pipeline, .global_batch = c->global_batch,
                          .epochs = c->epochs, .synthetic_n = c->synthetic_n, .seed = r->model.seed,
                          .input_shape = r->model.input, .synthetic_classes = ncls, .no_values = !r->numerics,
                          .vocab = tpu_fe_model_vocab(&r->model),
                          .model_shape = r->model.input, .model_classes = ncls, .timeline_steps = c->timeline_steps,
                          .model_binary = r->model.loss == TPU_FE_LOSS_BINARY_XENT,
                          /* a slice's hosts each feed their chips: the busiest host's share */
                          .hosts = c->chip.hosts,
                          .host_batch = r->rows * c->chip.cores_per_chip * tpu_chip_chips_per_host(&c->chip) };
  if (ncls > TPU_FE_MAX_LABEL_CLASSES)   /* either level: the data pipeline makes the batches */
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "%s gives %d classes; the data pipeline's labels take at most %d "
                      "classes (its source.classes: 2..%d), at --level tile and timing alike", label, ncls,
                      TPU_FE_MAX_LABEL_CLASSES, TPU_FE_MAX_LABEL_CLASSES);
  tpu_fe_feed_info fi;
  tpu_status st = tpu_fe_feed_open(&fo, &r->feed, &fi, e, sizeof e);
  /* every split is checked against the model (tpu_fe_feed_opts.model_shape) */
  if (st && c->pipeline) return tpu_errorf(err, errcap, st, "--pipeline: %s", e);
  if (st && fo.model_binary)   /* the classes are the model's question too */
    return tpu_errorf(err, errcap, st, "--data %s (--model %s): %s", c->data, label, e);
  if (st) return tpu_errorf(err, errcap, st, "--data %s: %s", c->data, e);
  if (r->numerics && (st = tpu_fe_feed_test_set(&fo, &r->test, e, sizeof e)))
    return tpu_errorf(err, errcap, st, "--data %s (test split): %s", c->data, e);
  r->steps_avail = (long)fi.batches_per_epoch;
  /* the built-in pipeline keeps a partial batch, but not a batch larger
  ** than the whole set */
  if (!c->pipeline && fi.elements < c->global_batch)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--data %s: --batch %d is larger than the training set (%lld "
                      "samples)", c->data, c->global_batch, (long long)fi.elements);
  if (r->steps_avail < 1)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--batch %d is larger than the training set", c->global_batch);
  r->steps = c->steps_per_epoch && c->steps_per_epoch < r->steps_avail ? c->steps_per_epoch : r->steps_avail;
  /* the validation split: the test split's samples (synthetic: N/4, known
  ** without making them; at the timing level another split is read for
  ** its count) */
  if (r->numerics) r->val_n = r->test.n;
  else if (!strcmp(c->data, "synthetic")) r->val_n = c->synthetic_n / 4;
  else if (c->pipeline) r->val_n = 0;   /* the file describes the training input alone: no validation timed */
  else {
    tpu_fe_dataset d;
    if ((st = tpu_fe_feed_test_set(&fo, &d, e, sizeof e)))
      return tpu_errorf(err, errcap, st, "--data %s (test split): %s", c->data, e);
    r->val_n = d.n;
    tpu_fe_dataset_free(&d);
  }
  return TPU_OK;
}

/* The host side's constants (docs/TRAINING.md, "The host side of a fit"):
** the two programs' kernels and compile times, the validation pass's steps
** and their timing, a sample's transfer to the device. */
static tpu_status host_setup(tpu_fe_run *r, char *err, size_t errcap) {
  const tpu_fe_run_config *c = &r->cfg;
  const tpu_chip_config *chip = &c->chip;
  const int gb = c->global_batch;
  tpu_status st = TPU_OK;
  for (int t = 0; !st && t < 2; t++)
    st = tpu_fe_program_kernels(&r->model, chip, c->prec, r->rows, t == 0, &r->kernels[t]);
  if (st) return tpu_errorf(err, errcap, st, "counting the step's kernels: %s", tpu_status_str(st));
  for (int t = 0; t < 2; t++) r->compile_s[t] = chip->host_compile_s + chip->host_compile_s_per_kernel * r->kernels[t];
  r->val_steps = (r->val_n + gb - 1) / gb;
  r->val_tail = (int)(r->val_n % gb);
  if (r->val_n > r->val_tail &&
      (st = tpu_fe_time_step(&r->model, chip, c->prec, r->rows, false, 0, c->threads, &r->ev, NULL, err, errcap)))
    return st;
  /* a partial batch fills whole shards on the first cores: the busiest's */
  const int tail_rows = r->val_tail < r->rows ? r->val_tail : r->rows;
  if (r->val_tail &&
      (st = tpu_fe_time_step(&r->model, chip, c->prec, tail_rows, false, 0, c->threads, &r->ev_tail, NULL, err, errcap)))
    return st;
  /* the pipeline's f32 samples, each chip's shards over its own link */
  const double chips = (double)(chip->cores / chip->cores_per_chip);
  const tpu_fe_shape in = r->model.input;
  r->xfer_s = (double)in.h * in.w * in.c * sizeof(float) / (chips * chip->host_infeed_gb_per_s * 1e9);
  return TPU_OK;
}

/* Times the step of 'rows' samples per core for an infeed 'wait' (values
** never enter it): the step timer's for whole batches; a partial last
** batch's step is timed on its own. */
static tpu_status time_step(tpu_fe_run *r, int rows, uint64_t wait, bool traced, tpu_fe_step_timing *out, char *err,
                            size_t errcap) {
  const tpu_fe_step_trace tr = { .out = r->cfg.trace, .step = (long)r->gstep, .t0_us = r->sums.sim_time_s * 1e6 };
  if (rows == r->rows) return tpu_fe_step_timer_time(r->timer, wait, traced ? &tr : NULL, out, err, errcap);
  return tpu_fe_time_step(&r->model, &r->cfg.chip, r->cfg.prec, rows, true, wait, r->cfg.threads, out,
                          traced ? &tr : NULL, err, errcap);
}

/* The run a checkpoint had done: its weights, data position, sums and history. */
static tpu_status resume(tpu_fe_run *r, char *err, size_t errcap) {
  const tpu_fe_run_config *c = &r->cfg;
  char e[1024];
  const tpu_fe_ckpt_info want = { .seed = r->model.seed, .global_batch = c->global_batch };
  tpu_fe_ckpt_info got;
  tpu_status st = tpu_fe_ckpt_load(c->resume_dir, &r->tr, &want, &got, e, sizeof e);
  if (st) return tpu_errorf(err, errcap, st, "--resume: %s", e);
  if (got.run.cores && got.run.cores != r->cores) {   /* its per-core sums are of other cores */
    tpu_free(got.history);
    return tpu_errorf(err, errcap, TPU_ERR_INPUT, "--resume: %s/checkpoint.bin: written with --cores %d; resume with "
                      "the same (got --cores %d)", c->resume_dir, got.run.cores, r->cores);
  }
  r->first_epoch = r->epoch = got.epochs_done;
  r->gstep = got.step;
  r->sums = got.run;
  r->hist = got.history;
  r->nhist = got.epochs_done;
  if (r->first_epoch < c->epochs && (st = tpu_fe_feed_seek(r->feed, r->first_epoch, err, errcap))) return st;
  return TPU_OK;
}

/* The step timer and the step at no wait, the trainer, the checkpoint and
** room for the history. */
/* The tile level holds the global batch's activations and their gradients
** (every core's shard), the parameters, their gradient and the optimizer's
** state in the host's memory: a run that would need more than the host has
** is refused before it starts (a pod slice's global batch at the tile
** level, say). The timing level holds none of them. */
static tpu_status check_host_memory(const tpu_fe_run *r, char *err, size_t errcap) {
  if (!r->numerics) return TPU_OK;
  const tpu_fe_model *m = &r->model;
  double per_row = (double)tpu_fe_shape_size(m->input);
  for (int i = 0; i < m->nlayers; i++) per_row += 2.0 * (double)tpu_fe_shape_size(m->layers[i].out);
  const double need = 4.0 * (per_row * r->cfg.global_batch + 4.0 * (double)m->nparams);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
  if (need <= have) return TPU_OK;
  return tpu_errorf(err, errcap, TPU_ERR_RANGE, "--level %s computes every core's values on this host: %.3g GiB for "
                    "the global batch of %d on %d cores (activations and their gradients, the parameters, their "
                    "gradient and the optimizer's state), more than the host's %.3g GiB of memory; --level timing "
                    "times the same step without values on any slice, or use a smaller --batch",
                    tpu_fidelity_name(r->cfg.level), need / 1073741824.0, r->cfg.global_batch, r->cores,
                    have / 1073741824.0);
}

static tpu_status start(tpu_fe_run *r, const char *label, char *err, size_t errcap) {
  const tpu_fe_run_config *c = &r->cfg;
  char e[1024];
  tpu_status st0 = check_host_memory(r, err, errcap);
  if (st0) return st0;
  tpu_status st = tpu_fe_step_timer_create(&r->model, &c->chip, c->prec, r->rows, true, c->threads, &r->timer, e,
                                           sizeof e);
  if (!st) st = time_step(r, r->rows, 0, false, &r->tm0, e, sizeof e);
  if (!st) st = host_setup(r, e, sizeof e);
  if (st) return tpu_errorf(err, errcap, st, "%s: %s", label, e);
  r->tm = r->tm0;
  r->tm_rows = r->rows;
  const tpu_fe_backend be = { .kind = c->backend, .mxu = c->chip.mxu, .mxus = c->chip.mxus_per_core, .prec = c->prec };
  if (r->numerics && (st = tpu_fe_trainer_create(&r->model, &be, r->cores, c->global_batch, c->threads, &r->tr)))
    return tpu_errorf(err, errcap, st, "out of memory creating the trainer");
  if (r->numerics && c->init_params) memcpy(r->tr.params, c->init_params, r->model.nparams * sizeof(float));
  if (c->resume_dir && (st = resume(r, err, errcap))) return st;
  const int need = c->epochs > r->nhist ? c->epochs : r->nhist;
  tpu_fe_epoch_log *h = tpu_realloc(r->hist, (size_t)(need ? need : 1) * sizeof *h);
  if (!h) return tpu_errorf(err, errcap, TPU_ERR_NOMEM, "out of memory");
  r->hist = h;
  return TPU_OK;
}

tpu_status tpu_fe_run_create(const tpu_fe_run_config *cfg, tpu_fe_run **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_status st = check_config(cfg, err, errcap);
  if (st) return st;
  int rows = 0;
  if ((st = tpu_fe_batch_split(cfg->global_batch, cfg->chip.cores, &rows, err, errcap))) return st;
  tpu_fe_run *r = tpu_calloc(1, sizeof *r);
  if (!r) return tpu_errorf(err, errcap, TPU_ERR_NOMEM, "out of memory");
  r->model = *cfg->model;
  if (cfg->seed >= 0) r->model.seed = (uint64_t)cfg->seed;
  const char *label = cfg->model_label ? cfg->model_label : r->model.name;
  r->cfg = *cfg;
  r->cfg.model = &r->model;
  r->cfg.model_label = NULL;   /* read only here */
  r->cores = cfg->chip.cores;
  r->rows = rows;
  r->numerics = cfg->level != TPU_FIDELITY_TIMING;
  r->hz = cfg->chip.clock_mhz * 1e6;
  if ((st = open_data(r, label, err, errcap)) || (st = start(r, label, err, errcap))) {
    tpu_fe_run_destroy(r);
    return st;
  }
  *out = r;
  return TPU_OK;
}

void tpu_fe_run_destroy(tpu_fe_run *r) {
  if (!r) return;
  tpu_free(r->hist);
  tpu_fe_step_timer_destroy(r->timer);
  if (r->tr.model) tpu_fe_trainer_destroy(&r->tr);
  tpu_fe_feed_close(r->feed);
  tpu_fe_dataset_free(&r->test);
  tpu_free(r);
}
/* }================================================================== */

/* {==================================================================
** A step
** ================================================================== */
bool tpu_fe_run_next(const tpu_fe_run *r, int *epoch, long *step) {
  if (epoch) *epoch = r->epoch;
  if (step) *step = r->step;
  return r->epoch < r->cfg.epochs;
}

/* Adds a step's timing to the sums the report is made of. */
static void account(tpu_fe_run_log *s, const tpu_fe_step_timing *tm, int cores) {
  for (int k = 0; k < TPU_SIM_NSTALL; k++) s->stall[k] += tm->stall[k];
  s->cycles += (double)tm->step_cycles;
  s->macs += (double)tm->macs;
  s->mxu_capacity += (double)tm->mxu_cycles_capacity;
  s->steps++;
  s->cores = cores;
  s->core_cycles += tm->step_cycles;   /* timed_step keeps it under 2^63 / cores */
  for (int c = 0; c < cores; c++)
    for (int k = 0; k < TPU_SIM_NSTALL; k++) s->core_stall[c][k] += tm->core_stall[c][k];
}

/* The batch when the infeed has it, and the step's timing at that wait:
** rec's batch and time. *x and *y get the batch's values (NULL when none). */
static tpu_status timed_step(tpu_fe_run *r, tpu_fe_step_record *rec, const float **x, const int32_t **y, char *err,
                             size_t errcap) {
  const int ep = r->epoch;
  const long s = r->step;
  const char *input = r->cfg.pipeline ? r->cfg.pipeline : "--data";
  char e[1024];
  const tpu_chip_config *chip = &r->cfg.chip;
  /* a call from the host runs steps_per_execution steps, counted from the
  ** epoch's first */
  double pre_s = 0;   /* the host's work right before the step: its call, a compile */
  if (s % r->cfg.steps_per_execution == 0) {
    pre_s += chip->host_dispatch_s;
    r->ep_fit.dispatch_s += chip->host_dispatch_s;
    r->executions++;
  }
  /* the input pipeline runs on the chip's clock (the steps alone): the
  ** host's calls, compiles and validation do not let it run ahead */
  double host_s;   /* when the batch is ready on the host: when asked if prefetched */
  const double asked_s = r->sums.sim_time_s;
  tpu_status st = tpu_fe_feed_next(r->feed, asked_s, x, y, &rec->samples, &host_s, e, sizeof e);
  if (st) return tpu_errorf(err, errcap, st, "epoch %d, step %ld: %s", ep + 1, s + 1, e);
  /* a partial last batch (a pipeline without drop_remainder) fills whole
  ** shards on the first cores: the step is timed with the busiest core's
  ** shard on every core (the others would wait for it at the all-reduce) */
  const int rows = rec->samples < r->rows ? rec->samples : r->rows;
  /* the program's first run compiles it; a partial batch is another shape */
  const int prog = rec->samples == r->cfg.global_batch ? 0 : 1;
  if (!r->compiled[prog]) {
    r->compiled[prog] = true;
    r->programs++;
    pre_s += r->compile_s[0];
    r->ep_fit.compile_s += r->compile_s[0];
  }
  /* the batch goes to the device once the host has it and the device's
  ** buffer is free (the step before took its batch; for an epoch's first,
  ** when its iterator was made): a batch the host had when asked
  ** (prefetched) is taken to have been there when the buffer freed, so its
  ** transfer overlaps the step before and the host's work since (the call,
  ** a compile: pre_s of wall time that the chip's clock does not count);
  ** one the host makes late goes when it is made */
  const double request_s = asked_s;
  const double start_s = host_s > asked_s ? host_s : (s == 0 ? request_s : r->dequeue_s) - pre_s;
  const double ready_s = start_s + rec->samples * r->xfer_s;
  const double wait_cyc = ready_s > request_s ? (ready_s - request_s) * r->hz : 0;
  if (!(wait_cyc <= (double)TPU_SIM_MAX_CYCLES))
    return tpu_errorf(err, errcap, TPU_ERR_INPUT, "%s: epoch %d, step %ld: the batch is ready %.4g s after the cores "
                      "ask for it (%.4g cycles), longer than the engine times (2^53 cycles): the pipeline's costs are "
                      "out of proportion to its elements and steps", input, ep + 1, s + 1, ready_s - request_s,
                      wait_cyc);
  const uint64_t wait = (uint64_t)llround(wait_cyc);
  r->dequeue_s = request_s + (double)wait / r->hz;
  const bool traced = r->cfg.trace && r->nsteps < r->cfg.trace_steps;
  if (wait != r->tm_wait || rows != r->tm_rows || traced) {
    if ((st = time_step(r, rows, wait, traced, &r->tm, err, errcap))) return st;
    r->tm_wait = wait;
    r->tm_rows = rows;
  }
  /* the report's cycles, summed over the steps and the cores, are JSON integers */
  if (r->tm.step_cycles > (uint64_t)INT64_MAX / (uint64_t)r->cores - r->sums.core_cycles)
    return tpu_errorf(err, errcap, TPU_ERR_INPUT, "%s: epoch %d, step %ld: the run's simulated core-cycles pass 2^63 "
                      "(the steps so far took %llu cycles): the pipeline's costs are out of proportion to its elements "
                      "and steps", input, ep + 1, s + 1, (unsigned long long)r->sums.core_cycles);
  rec->infeed_wait_cycles = wait;
  rec->step_cycles = r->tm.step_cycles;
  rec->infeed_wait_s = (double)wait / r->hz;
  rec->sim_step_s = (double)r->tm.step_cycles / r->hz;
  return TPU_OK;
}

/* The validation pass after an epoch, on the simulated clock: the test
** split at the global batch, forward only, steps_per_execution steps a
** call; each program compiled on its first run; the first batch's transfer
** waited for, each next one's hidden behind the step before as far as it
** goes. */
static void validation_time(tpu_fe_run *r) {
  const tpu_chip_config *chip = &r->cfg.chip;
  const long whole = r->val_steps - (r->val_tail ? 1 : 0);
  const int spe = r->cfg.steps_per_execution;
  if (!r->val_steps) return;
  for (int k = 0; k < 2; k++)
    if ((k == 0 ? whole > 0 : r->val_tail > 0) && !r->compiled[2 + k]) {
      r->compiled[2 + k] = true;
      r->programs++;
      r->ep_fit.compile_s += r->compile_s[1];
    }
  const long calls = (r->val_steps + spe - 1) / spe;
  const double ev = (double)r->ev.step_cycles / r->hz, ev_tail = (double)r->ev_tail.step_cycles / r->hz;
  const double x = r->cfg.global_batch * r->xfer_s, x_tail = r->val_tail * r->xfer_s;
  const double first = whole > 0 ? x : x_tail;
  const double exposed = (whole > 1 ? (double)(whole - 1) * fmax(0, x - ev) : 0) +   /* what the step */
                         (whole > 0 && r->val_tail ? fmax(0, x_tail - ev) : 0);        /* before leaves */
  const double t = (double)calls * chip->host_dispatch_s + (double)whole * ev + (r->val_tail ? ev_tail : 0) + first +
                   exposed;
  r->executions += calls;
  r->ep_fit.validation_s += t;
}

/* The end of an epoch: the next epoch's data, the test split, the history. */
static tpu_status end_epoch(tpu_fe_run *r, tpu_fe_step_record *rec, char *err, size_t errcap) {
  const int ep = r->epoch;
  const double ewall = now_s() - r->ep_wall0;
  const bool n = r->numerics;
  double val_loss = NAN, val_acc = NAN;
  tpu_status st;
  if (r->steps < r->steps_avail && ep + 1 < r->cfg.epochs && (st = tpu_fe_feed_seek(r->feed, ep + 1, err, errcap)))
    return st;
  if (n && (st = tpu_fe_trainer_eval(&r->tr, &r->test, &val_loss, &val_acc)))
    return tpu_errorf(err, errcap, st, "evaluation: %s", tpu_status_str(st));
  validation_time(r);
  tpu_fe_fit_time *f = &r->ep_fit;
  f->fit_s = f->chip_s + f->input_s + f->dispatch_s + f->validation_s + f->compile_s;
  r->fit.fit_s += f->fit_s, r->fit.chip_s += f->chip_s, r->fit.input_s += f->input_s;
  r->fit.dispatch_s += f->dispatch_s, r->fit.validation_s += f->validation_s, r->fit.compile_s += f->compile_s;
  r->hist[ep] = (tpu_fe_epoch_log){ n ? rec->epoch_loss : 0.0, n ? rec->epoch_accuracy : 0.0, n ? val_loss : 0.0,
                                    n ? val_acc : 0.0, r->ep_sim, ewall, *f, { 0 }, { 0 } };
  for (int k = 0; n && k < TPU_FE_MAX_OUTPUTS; k++) {
    r->hist[ep].output_loss[k] = rec->epoch_output_loss[k];
    r->hist[ep].val_output_loss[k] = r->tr.output_loss[k];
  }
  r->nhist = ep + 1;
  rec->epoch_end = true;
  rec->epoch_log = r->hist[ep];
  return TPU_OK;
}

/* Step r->step of epoch r->epoch: the batch, its timing, its values, the
** sums and the epoch's running means. */
static tpu_status run_step(tpu_fe_run *r, tpu_fe_step_record *rec, char *err, size_t errcap) {
  const int ep = r->epoch;
  const long s = r->step;
  *rec = (tpu_fe_step_record){ .epoch = ep, .step = s, .global_step = r->gstep, .loss = NAN };
  for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) rec->output_loss[k] = rec->epoch_output_loss[k] = NAN;
  if (s == 0) {
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) r->olsum[k] = 0;
    r->lsum = r->wsum = r->ep_sim = 0;
    r->csum = r->seen = 0;
    r->ep_wall0 = now_s();
    r->ep_fit = (tpu_fe_fit_time){ 0 };
  }
  const float *x;
  const int32_t *y;
  tpu_status st = timed_step(r, rec, &x, &y, err, errcap);
  if (st) return st;
  if (r->numerics && (st = tpu_fe_trainer_step_n(&r->tr, x, y, rec->samples, r->gstep,
                                                 (uint64_t)s * (uint64_t)r->cfg.global_batch, &rec->loss,
                                                 &rec->correct)))
    return tpu_errorf(err, errcap, st, "epoch %d, step %ld: %s", ep + 1, s + 1, tpu_status_str(st));
  account(&r->sums, &r->tm, r->cores);
  r->nsteps++;
  r->sums.sim_time_s += rec->sim_step_s;
  rec->sim_time_s = r->sums.sim_time_s;
  r->ep_sim += rec->sim_step_s;
  r->ep_fit.chip_s += rec->sim_step_s - rec->infeed_wait_s;
  r->ep_fit.input_s += rec->infeed_wait_s;
  /* the running means weigh each batch by its size, as Keras' (a full
  ** batch weighs exactly 1) */
  const double w = (double)rec->samples / (double)r->cfg.global_batch;
  r->lsum += rec->loss * w;
  r->wsum += w;
  rec->predictions = rec->samples * tpu_fe_model_predictions(&r->model);
  r->csum += rec->correct;
  r->seen += rec->predictions;
  rec->epoch_loss = r->numerics ? r->lsum / r->wsum : NAN;
  for (int k = 0; r->numerics && k < TPU_FE_MAX_OUTPUTS; k++) {
    rec->output_loss[k] = r->tr.output_loss[k];
    r->olsum[k] += rec->output_loss[k] * w;
    rec->epoch_output_loss[k] = r->olsum[k] / r->wsum;
  }
  rec->epoch_accuracy = (double)r->csum / (double)r->seen;
  rec->epoch_sim_s = r->ep_sim;
  return s + 1 == r->steps ? end_epoch(r, rec, err, errcap) : TPU_OK;
}

tpu_status tpu_fe_run_step(tpu_fe_run *r, tpu_fe_step_record *rec, char *err, size_t errcap) {
  if (r->failed) return tpu_errorf(err, errcap, r->failed, "the run failed at an earlier step");
  if (!tpu_fe_run_next(r, NULL, NULL))
    return tpu_errorf(err, errcap, TPU_ERR_INPUT, "the run has no step left: its %d epochs are done", r->cfg.epochs);
  tpu_status st = run_step(r, rec, err, errcap);
  if (st) {
    r->failed = st;
    return st;
  }
  r->gstep++;
  if (++r->step == r->steps) {
    r->epoch++;
    r->step = 0;
  }
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** What the run did, its checkpoint, its program
** ================================================================== */
void tpu_fe_run_get_totals(const tpu_fe_run *r, tpu_fe_run_totals *out) {
  *out = (tpu_fe_run_totals){ .cores = r->cores, .per_core_batch = r->rows, .steps_per_epoch = r->steps,
                              .first_epoch = r->first_epoch, .epochs_done = r->nhist, .history = r->hist,
                              .global_step = r->gstep, .steps_run = r->nsteps, .sums = r->sums, .fit = r->fit,
                              .executions = r->executions, .val_samples = r->val_n, .val_steps = r->val_steps,
                              .kernels_train = r->kernels[0], .kernels_eval = r->kernels[1],
                              .programs = r->programs };
  tpu_fe_run_log *s = &out->sums;
  if (s->steps == 0) account(s, &r->tm0, r->cores);   /* no step timed (a checkpoint's run never has none) */
  for (int k = 0; k < TPU_SIM_NSTALL; k++) out->stall_fraction[k] = s->stall[k] / s->cycles;
  /* useful MACs only: extra bf16 passes cost time but are not model work */
  out->mxu_utilization = s->macs / (double)tpu_precision_passes(r->cfg.prec) / s->mxu_capacity;
  out->sim_step_cycles = s->cycles / (double)s->steps;
  out->sim_step_s = s->cycles / (double)s->steps / r->hz;
  out->images_per_s = (double)r->cfg.global_batch / out->sim_step_s;
  const tpu_fe_epoch_log *last = r->nhist ? &r->hist[r->nhist - 1] : NULL;
  const bool n = r->numerics && last;
  out->train_loss = n ? last->loss : NAN;
  out->train_accuracy = n ? last->accuracy : NAN;
  out->val_loss = n ? last->val_loss : NAN;
  out->val_accuracy = n ? last->val_accuracy : NAN;
}

tpu_status tpu_fe_run_save(const tpu_fe_run *r, const char *dir, char *err, size_t errcap) {
  if (!r->numerics)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--checkpoint %s: --level timing computes no weights to save", dir);
  if (r->failed || r->step != 0)
    return tpu_errorf(err, errcap, TPU_ERR_CONFIG, "--checkpoint %s: a checkpoint is written between epochs; the run "
                      "is %s", dir, r->failed ? "failed" : "within an epoch");
  const tpu_fe_ckpt_info ck = { .seed = r->model.seed, .global_batch = r->cfg.global_batch, .epochs_done = r->nhist,
                                .step = r->gstep, .run = r->sums, .history = r->hist };
  return tpu_fe_ckpt_save(dir, &r->tr, &ck, err, errcap);
}

tpu_status tpu_fe_run_step_costs(const tpu_fe_run *r, tpu_fe_step_costs *out) {
  return tpu_fe_step_timer_costs(r->timer, out);
}

const float *tpu_fe_run_params(const tpu_fe_run *r, size_t *n) {
  *n = r->numerics ? r->model.nparams : 0;
  return r->numerics ? r->tr.params : NULL;
}

tpu_status tpu_fe_run_program(const tpu_fe_run *r, int steps, const uint64_t *ready_cycles, tpu_sim_program **out,
                              char *err, size_t errcap) {
  return tpu_fe_steps_program(&r->model, &r->cfg.chip, r->cfg.prec, r->rows, steps, ready_cycles, out, err, errcap);
}

const struct tpu_df_model *tpu_fe_run_host_model(const tpu_fe_run *r) {
  return fe_feed_host_model(r->feed);
}
/* }================================================================== */
