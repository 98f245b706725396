/*
** cmd_train.c -- `tpusim train`: train a model on the simulated chip,
** data-parallel across its cores, and report accuracy, simulated speed and
** where the cores' time went.
**
** Numerics run through the chosen backend (tpu_fe_gemm). The step's simulated
** time does not depend on values, so it is computed once per distinct
** situation (shard size, infeed ready time) by tpu_fe_time_step() -- the step
** lowered into per-core programs and run on the chip engine at the timing
** level -- and reused for every step in that situation; docs/TRAINING.md
** says so.
*/
#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_int.h"
#include "frontend/fe.h"
#include "sim/sim.h"

#define CMD "train"

static const char HELP[] =
  "usage: tpusim train --model NAME|FILE [options]\n\n"
  "Trains a model on the simulated chip, data-parallel across its cores (the\n"
  "global batch is split evenly), and reports test accuracy, simulated time per\n"
  "step, MXU utilization and the stall breakdown of the cores.\n\n"
  "  --model NAME|FILE      built-in model (mlp, cnn) or a JSON model file (docs/MODELS.md)\n"
  "  --data D               fashion-mnist (default), mnist, synthetic, or a directory\n"
  "                         holding the four IDX files\n"
  "  --epochs E             epochs (default 1)\n"
  "  --pipeline FILE        the input pipeline, a datafeed JSON (docs/DATAFEED.md): its\n"
  "                         batches feed the cores and its host-time model says when each\n"
  "                         is ready (default: shuffle, normalize, batch, prefetch, no costs)\n"
  "  --steps-per-epoch S    stop each epoch after S steps (default: the whole training set)\n"
  "  --batch B              global batch (default 128); must divide by the cores\n"
  "  --cores C              cores to use (default: the chip's)\n"
  "  --backend sim|reference  sim (default): matmuls on the MXU model in the chosen\n"
  "                         precision; reference: OpenBLAS f32, no simulation\n"
  "  --level tile|timing    tile (default): values and time; timing: time only\n"
  "  --precision P          bf16 (default), bf16x3, bf16x6\n"
  "  --seed S               seed for initialization, dropout and shuffling (default:\n"
  "                         the model's \"seed\")\n"
  "  --threads T            host threads running the cores (default: CPUs online);\n"
  "                         results are identical for every T\n"
  "  --synthetic-n N        samples of the synthetic training set (default 2048; test: N/4)\n"
  "  --trace FILE           Chrome/Perfetto trace of the first steps (one track per core and unit)\n"
  "  --csv FILE             one row per step\n"
  "  --checkpoint DIR       write weights, optimizer state and data position after each epoch\n"
  "  --resume               continue from DIR's checkpoint (results identical to an\n"
  "                         uninterrupted run)\n";

typedef struct opts {
  const char *model, *data, *trace, *csv, *ckpt, *pipeline;
  long epochs, steps, batch, cores, threads, synth_n;
  long long seed;              /* -1: the model's */
  tpu_fe_backend_kind backend;
  tpu_fidelity level;
  tpu_precision prec;
  bool resume;
} opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_args(int argc, char **argv, opts *o, cli_common *com) {
  char err[256];
  memset(o, 0, sizeof *o);
  o->data = "fashion-mnist";
  o->epochs = 1; o->batch = 128; o->seed = -1; o->synth_n = 2048;
  o->backend = TPU_FE_BACKEND_SIM; o->level = TPU_FIDELITY_TILE; o->prec = TPU_PREC_BF16;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  o->threads = n > 0 ? n : 1;
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int r;
    struct { const char *name; const char **dst; } strs[] = {
      { "--model", &o->model }, { "--data", &o->data }, { "--trace", &o->trace },
      { "--csv", &o->csv }, { "--checkpoint", &o->ckpt }, { "--pipeline", &o->pipeline },
    };
    bool done = false;
    for (size_t k = 0; k < sizeof strs / sizeof strs[0] && !done; k++)
      if ((r = cli_opt(argc, argv, &i, strs[k].name, &v))) {
        if (r < 0) return cli_usage_error(CMD, "%s needs a value", strs[k].name);
        *strs[k].dst = v;
        done = true;
      }
    if (done) continue;
    struct { const char *name; long lo, hi; long *dst; } ints[] = {
      { "--epochs", 1, 100000, &o->epochs }, { "--steps-per-epoch", 1, 100000000, &o->steps },
      { "--batch", 1, 1 << 20, &o->batch }, { "--cores", 1, TPU_MAX_CORES, &o->cores },
      { "--threads", 1, 256, &o->threads }, { "--synthetic-n", 1, 1 << 22, &o->synth_n },
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !done; k++)
      if ((r = cli_opt(argc, argv, &i, ints[k].name, &v))) {
        if (r < 0) return cli_usage_error(CMD, "%s needs a value", ints[k].name);
        if (!cli_parse_long(v, ints[k].lo, ints[k].hi, ints[k].dst, ints[k].name, err, sizeof err))
          return cli_usage_error(CMD, "%s", err);
        done = true;
      }
    if (done) continue;
    if ((r = cli_opt(argc, argv, &i, "--seed", &v))) {
      long s;
      if (r < 0 || !cli_parse_long(v, 0, 2147483647L, &s, "--seed", err, sizeof err))
        return cli_usage_error(CMD, "%s", r < 0 ? "--seed needs a value" : err);
      o->seed = s;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--backend", &v))) {
      if (r < 0 || (strcmp(v, "sim") && strcmp(v, "reference")))
        return cli_usage_error(CMD, "--backend: expected sim or reference, got '%s'", r < 0 ? "" : v);
      o->backend = strcmp(v, "sim") ? TPU_FE_BACKEND_REFERENCE : TPU_FE_BACKEND_SIM;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--level", &v))) {
      if (r < 0 || (strcmp(v, "tile") && strcmp(v, "timing")))
        return cli_usage_error(CMD, "--level: expected tile or timing, got '%s'", r < 0 ? "" : v);
      o->level = strcmp(v, "tile") ? TPU_FIDELITY_TIMING : TPU_FIDELITY_TILE;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--precision", &v))) {
      if (r < 0 || !tpu_precision_parse(v, &o->prec))
        return cli_usage_error(CMD, "--precision: expected bf16, bf16x3 or bf16x6, got '%s'", r < 0 ? "" : v);
      continue;
    }
    if (cli_opt(argc, argv, &i, "--resume", NULL) == 1) { o->resume = true; continue; }
    r = cli_common_opt(argc, argv, &i, com, CMD);
    if (r == 1) continue;
    if (r > 1) return r;
    return cli_usage_error(CMD, "unknown option '%s' (tpusim train --help)", argv[i]);
  }
  if (com->help) return 0;
  if (!o->model) return cli_usage_error(CMD, "--model is required: a built-in name (mlp, cnn) or a JSON file");
  if (o->resume && !o->ckpt) return cli_usage_error(CMD, "--resume needs --checkpoint DIR");
  if (o->backend == TPU_FE_BACKEND_REFERENCE && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--level timing runs only the simulation; it needs --backend sim");
  return 0;
}

/* {==================================================================
** Progress (Keras style) and the report
** ================================================================== */
static void progress(bool tty, bool final, long step, long total, double sim_step_s,
                     double loss, double acc) {
  if (!tty && !final) return;
  char bar[31];
  int w = total ? (int)(30 * step / total) : 30;
  for (int k = 0; k < 30; k++) bar[k] = k < w ? '=' : k == w ? '>' : '.';
  if (w >= 30) bar[29] = '=';
  bar[30] = 0;
  int dig = snprintf(NULL, 0, "%ld", total);
  /* simulated time per step, in Keras' units */
  char t[32];
  if (sim_step_s >= 1.0) snprintf(t, sizeof t, "%.2fs", sim_step_s);
  else if (sim_step_s >= 1e-3) snprintf(t, sizeof t, "%.1fms", sim_step_s * 1e3);
  else snprintf(t, sizeof t, "%.1fus", sim_step_s * 1e6);
  printf("%s%*ld/%ld [%s] - %s/step", tty ? "\r" : "", dig, step, total, bar, t);
  /* --level timing computes no values: no loss to show (NaN) */
  if (!isnan(loss)) printf(" - loss: %.4f - accuracy: %.4f", loss, acc);
  if (!final) fflush(stdout);
}

static const char *verdict(double input_frac) {
  if (input_frac >= 0.20) return "highly input-bound: the cores wait for the host pipeline for much of each step";
  if (input_frac >= 0.05) return "moderately input-bound: improving the input pipeline would pay a little";
  return "not input-bound: the host pipeline keeps up with the cores";
}
/* }================================================================== */

int cli_cmd_train(int argc, char **argv) {
  opts o;
  cli_common com;
  cli_common_init(&com);
  int rc = parse_args(argc, argv, &o, &com);
  if (rc) return rc;
  if (com.help) { fputs(HELP, stdout); fputs(CLI_COMMON_HELP, stdout); return 0; }

  tpu_chip_config chip;
  if ((rc = cli_load_chip(CMD, &com, &chip))) return rc;
  /* The GEMM driver allocates its bf16 operand copies per call; keep glibc
  ** from mmap-ing (and page-faulting) them afresh every time. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  char err[1024];
  tpu_fe_model model;
  tpu_status st = tpu_fe_model_load(o.model, &model, err, sizeof err);
  if (st) return cli_usage_error(CMD, "%s", err);
  if (o.seed >= 0) model.seed = (uint64_t)o.seed;
  int cores = o.cores ? (int)o.cores : chip.cores;
  if (cores > chip.cores)
    return cli_usage_error(CMD, "--cores %d: the chip %s has %d cores", cores, chip.name, chip.cores);
  if (o.batch % cores)
    return cli_usage_error(CMD, "--batch %ld does not divide across %d cores; use a multiple of %d "
                          "(the global batch is split evenly, as TPUStrategy does)", o.batch, cores, cores);
  const bool numerics = o.level != TPU_FIDELITY_TIMING;
  /* the cores in use take part in the all-reduce; the chip is cut to them
  ** (chips of min(cores_per_chip, cores) cores, the largest divisor of
  ** 'cores' that fits, as matmul --cores does), so idle cores neither share
  ** HBM bandwidth nor dilute the stall report */
  tpu_chip_config tchip = chip;
  tchip.cores = cores;
  tchip.cores_per_chip = chip.cores_per_chip < cores ? chip.cores_per_chip : cores;
  while (cores % tchip.cores_per_chip) tchip.cores_per_chip--;

  /* the input: datafeed's pipeline (values) and host-time model (ready times) */
  tpu_fe_feed *feed = NULL;
  tpu_fe_feed_info fi;
  tpu_fe_feed_opts fo = { .data = o.data, .pipeline = o.pipeline, .global_batch = (int)o.batch,
                      .epochs = (int)o.epochs, .synthetic_n = (int)o.synth_n, .seed = model.seed };
  if ((st = tpu_fe_feed_open(&fo, &feed, &fi, err, sizeof err))) {
    if (st == TPU_ERR_NOMEM) return cli_runtime_error(CMD, "%s", err);
    if (o.pipeline) return cli_usage_error(CMD, "--pipeline: %s", err);
    return cli_usage_error(CMD, "--data %s: %s", o.data, err);
  }
  tpu_fe_dataset test = { 0 };
  char a[48], b[48];
  int ncls = model.layers[model.nlayers - 1].out.c;
  if (tpu_fe_shape_size(fi.shape) != tpu_fe_shape_size(model.input) || ncls != fi.classes) {
    cli_usage_error(CMD, "%s: the model takes input %s and gives %d classes; the data has samples of %s "
                   "and %d classes", o.model, tpu_fe_shape_str(model.input, a, sizeof a), ncls,
                   tpu_fe_shape_str(fi.shape, b, sizeof b), fi.classes);
    tpu_fe_feed_close(feed);
    return 2;
  }
  if (numerics && (st = tpu_fe_feed_test_set(o.data, (int)o.synth_n, model.seed, &test, err, sizeof err))) {
    tpu_fe_feed_close(feed);
    return cli_usage_error(CMD, "--data %s (test split): %s", o.data, err);
  }
  long steps_avail = (long)fi.batches_per_epoch;
  if (steps_avail < 1) {
    tpu_fe_feed_close(feed); tpu_fe_dataset_free(&test);
    return cli_usage_error(CMD, "--batch %ld is larger than the training set", o.batch);
  }
  long steps = o.steps && o.steps < steps_avail ? o.steps : steps_avail;

  /* Timing: values never enter it, so a step is timed once per distinct
  ** infeed wait and reused (see the top of this file). */
  tpu_fe_step_timing tm, tm0;
  uint64_t tm_wait = 0;
  if ((st = tpu_fe_time_step(&model, &tchip, o.prec, (int)(o.batch / cores), true, 0, (int)o.threads, &tm0, NULL,
                         err, sizeof err))) {
    tpu_fe_feed_close(feed); tpu_fe_dataset_free(&test);
    return cli_usage_error(CMD, "%s: %s", o.model, err);
  }
  tm = tm0;
  const double hz = chip.clock_mhz * 1e6;
  double sum[TPU_SIM_NSTALL] = { 0 }, sum_cycles = 0, sum_macs = 0, sum_cap = 0;   /* sum: per stall kind */
  long nsteps = 0;

  tpu_fe_backend be = { .kind = o.backend, .mxu = chip.mxu, .mxus = chip.mxus_per_core, .prec = o.prec };
  tpu_fe_trainer tr;
  tpu_text csv = { 0 }, tb = { 0 };
  json_t *hist = json_array();
  int status = 0;
  const bool tty = !com.json && cli_stdout_is_tty();
  const bool text = !com.json;
  memset(&tr, 0, sizeof tr);
  if (!hist) { status = cli_runtime_error(CMD, "out of memory"); goto out; }
  if (numerics && tpu_fe_trainer_create(&model, &be, cores, (int)o.batch, (int)o.threads, &tr) != TPU_OK) {
    status = cli_runtime_error(CMD, "out of memory creating the trainer");
    goto out;
  }

  tpu_fe_ckpt_info ck = { .seed = model.seed, .global_batch = (int)o.batch };
  int first_epoch = 0;
  uint64_t gstep = 0;
  if (o.resume) {
    if (!numerics) { status = cli_usage_error(CMD, "--resume needs --level tile"); goto out; }
    tpu_fe_ckpt_info got;
    if ((st = tpu_fe_ckpt_load(o.ckpt, &tr, &ck, &got, err, sizeof err))) {
      status = cli_usage_error(CMD, "--resume: %s", err);
      goto out;
    }
    first_epoch = got.epochs_done;
    gstep = got.step;
    if (first_epoch < o.epochs && (st = tpu_fe_feed_seek(feed, first_epoch, err, sizeof err))) {
      status = cli_runtime_error(CMD, "%s", err);
      goto out;
    }
  }

  if (o.csv)
    tpu_text_printf(&csv, "epoch,step,loss,accuracy,sim_step_s,%s_s,sim_time_s\n", tpu_sim_stall_name(TPU_SIM_INFEED_WAIT));
  if (o.trace) tpu_sim_trace_steps_begin(&tb, chip.name, cores);
  double wall0 = now_s(), test_loss = NAN, test_acc = NAN, last_loss = NAN, last_acc = NAN;
  double sim_time = 0;
  if (text)
    printf("Training %s (%zu parameters) on %s: %d cores x %ld samples = batch %ld, backend %s%s%s, data %s%s%s\n",
           model.name, model.nparams, chip.name, cores, o.batch / cores, o.batch,
           o.backend == TPU_FE_BACKEND_SIM ? "sim " : "reference",
           o.backend == TPU_FE_BACKEND_SIM ? tpu_precision_name(o.prec) : "",
           numerics ? "" : " (timing level: no values)", o.pipeline ? "pipeline " : "",
           o.pipeline ? o.pipeline : o.data, "");
  for (int ep = first_epoch; ep < o.epochs; ep++) {
    double ew0 = now_s(), lsum = 0;
    long csum = 0;
    if (text) printf("Epoch %d/%ld\n", ep + 1, o.epochs);
    double last_draw = 0, ep_sim = 0;
    for (long s = 0; s < steps; s++, gstep++) {
      double loss = NAN, ready_s;
      int cor = 0;
      const float *xb;
      const uint8_t *yb;
      if ((st = tpu_fe_feed_next(feed, sim_time, &xb, &yb, &ready_s, err, sizeof err))) {
        status = cli_runtime_error(CMD, "step %ld: %s", s, err);
        goto out;
      }
      uint64_t wait = (uint64_t)llround((ready_s - sim_time) * hz);
      /* the trace shows the first steps (every step has the same timing; see the top of this file) */
      const tpu_fe_step_trace strace = { .out = &tb, .step = (long)gstep, .t0_us = sim_time * 1e6 };
      if (wait != tm_wait || (o.trace && nsteps < 20)) {
        if ((st = tpu_fe_time_step(&model, &tchip, o.prec, (int)(o.batch / cores), true, wait, (int)o.threads, &tm,
                               o.trace && nsteps < 20 ? &strace : NULL, err, sizeof err))) {
          status = cli_runtime_error(CMD, "%s", err);
          goto out;
        }
        tm_wait = wait;
      }
      const double step_s = (double)tm.step_cycles / hz;
      if (numerics) {
        if ((st = tpu_fe_trainer_step(&tr, xb, yb, gstep, (uint64_t)(s * o.batch), &loss, &cor))) {
          status = cli_runtime_error(CMD, "step %ld: %s", s, tpu_status_str(st));
          goto out;
        }
        lsum += loss;
        csum += cor;
      }
      for (int k = 0; k < TPU_SIM_NSTALL; k++) sum[k] += tm.stall[k];
      sum_cycles += (double)tm.step_cycles;
      sum_macs += (double)tm.macs;
      sum_cap += (double)tm.mxu_cycles_capacity;
      nsteps++;
      sim_time += step_s;
      ep_sim += step_s;
      last_loss = numerics ? lsum / (double)(s + 1) : NAN;
      last_acc = (double)csum / (double)((s + 1) * o.batch);
      if (o.csv)
        tpu_text_printf(&csv, "%d,%llu,%.9g,%.9g,%.9g,%.9g,%.9g\n", ep + 1, (unsigned long long)gstep + 1,
                  numerics ? loss : NAN, numerics ? (double)cor / (double)o.batch : NAN, step_s,
                  (double)wait / hz, sim_time);
      double t = now_s();
      if (tty && (t - last_draw > 0.05 || s + 1 == steps)) {
        progress(true, false, s + 1, steps, ep_sim / (double)(s + 1), last_loss, last_acc);
        last_draw = t;
      }
    }
    if (steps < steps_avail && ep + 1 < o.epochs && (st = tpu_fe_feed_seek(feed, ep + 1, err, sizeof err))) {
      status = cli_runtime_error(CMD, "%s", err);
      goto out;
    }
    double ewall = now_s() - ew0;
    if (numerics && (st = tpu_fe_trainer_eval(&tr, &test, &test_loss, &test_acc))) {
      status = cli_runtime_error(CMD, "evaluation: %s", tpu_status_str(st));
      goto out;
    }
    if (text) {
      progress(tty, true, steps, steps, ep_sim / (double)steps, last_loss, last_acc);
      if (numerics) printf(" - wall %.1fs - test_loss: %.4f - test_accuracy: %.4f\n", ewall, test_loss, test_acc);
      else printf(" - wall %.1fs\n", ewall);
      fflush(stdout);
    }
    json_array_append_new(hist, json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "epoch", ep + 1,
                                          "loss", numerics ? last_loss : 0.0, "accuracy", numerics ? last_acc : 0.0,
                                          "test_loss", numerics ? test_loss : 0.0,
                                          "test_accuracy", numerics ? test_acc : 0.0, "wall_s", ewall,
                                          "sim_s", ep_sim));
    if (o.ckpt && numerics) {
      ck.epochs_done = ep + 1;
      ck.step = gstep;
      if ((st = tpu_fe_ckpt_save(o.ckpt, &tr, &ck, err, sizeof err))) {
        status = cli_runtime_error(CMD, "%s", err);
        goto out;
      }
    }
  }
  double wall = now_s() - wall0;

  if (o.csv) {
    if (csv.oom || tpu_write_atomic(o.csv, csv.s, csv.n)) {
      status = cli_runtime_error(CMD, "--csv %s: cannot write: %s", o.csv, csv.oom ? "out of memory" : strerror(errno));
      goto out;
    }
  }
  if (o.trace) {
    tpu_sim_trace_steps_end(&tb);
    if (tb.oom || tpu_write_atomic(o.trace, tb.s, tb.n)) {
      status = cli_runtime_error(CMD, "--trace %s: cannot write: %s", o.trace, tb.oom ? "out of memory" : strerror(errno));
      goto out;
    }
  }

  if (nsteps == 0) {   /* resumed after the last epoch: nothing ran, time one step for the report */
    for (int k = 0; k < TPU_SIM_NSTALL; k++) sum[k] = tm0.stall[k];
    sum_cycles = (double)tm0.step_cycles; sum_macs = (double)tm0.macs; sum_cap = (double)tm0.mxu_cycles_capacity;
    nsteps = 1;
  }
  double sc = sum_cycles;
  double fr[TPU_SIM_NSTALL];   /* per stall kind; reported in the training report's order */
  for (int k = 0; k < TPU_SIM_NSTALL; k++) fr[k] = sum[k] / sc;
  const double input_frac = fr[TPU_SIM_INFEED_WAIT];
  /* useful MACs only: extra bf16 passes cost time but are not model work */
  double util = sum_macs / (double)tpu_precision_passes(o.prec) / sum_cap;
  const double step_s = sum_cycles / (double)nsteps / hz;
  double ips = (double)o.batch / step_s;
  uint64_t phash = numerics ? tpu_fe_params_hash(tr.params, model.nparams) : 0;
  if (com.json) {
    json_t *stall = json_object();
    for (int i = 0; i < TPU_SIM_NSTALL; i++) {
      const int k = tpu_sim_stall_in_report_order(i);
      json_object_set_new(stall, tpu_sim_stall_name(k), json_real(fr[k]));
    }
    char hs[32];
    snprintf(hs, sizeof hs, "%016llx", (unsigned long long)phash);
    json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:I}",
                          "model", model.name, "chip", chip.name, "cores", cores, "global_batch", (int)o.batch,
                          "per_core_batch", (int)(o.batch / cores),
                          "backend", o.backend == TPU_FE_BACKEND_SIM ? "sim" : "reference",
                          "level", tpu_fidelity_name(o.level), "precision", tpu_precision_name(o.prec),
                          "data", o.data, "epochs", (int)o.epochs, "steps_per_epoch", (int)steps,
                          "parameters", (json_int_t)model.nparams);
    json_object_set_new(j, "test_loss", numerics ? json_real(test_loss) : json_null());
    json_object_set_new(j, "test_accuracy", numerics ? json_real(test_acc) : json_null());
    json_object_set_new(j, "train_loss", numerics ? json_real(last_loss) : json_null());
    json_object_set_new(j, "train_accuracy", numerics ? json_real(last_acc) : json_null());
    json_object_set_new(j, "sim_step_s", json_real(step_s));
    json_object_set_new(j, "sim_step_cycles", json_integer((json_int_t)llround(sum_cycles / (double)nsteps)));
    json_object_set_new(j, "sim_time_s", json_real(sim_time));
    json_object_set_new(j, "images_per_s", json_real(ips));
    json_object_set_new(j, "mxu_utilization", json_real(util));
    json_object_set_new(j, "stall", stall);
    json_object_set_new(j, "input_wait_fraction", json_real(input_frac));
    json_object_set_new(j, "input_verdict", json_string(verdict(input_frac)));
    json_object_set_new(j, "wall_s", json_real(wall));
    json_object_set_new(j, "params_hash", numerics ? json_string(hs) : json_null());
    json_object_set_new(j, "history", hist);
    hist = NULL;
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (!s) { status = cli_runtime_error(CMD, "out of memory"); goto out; }
    puts(s);
    free(s);
  } else {
    printf("\nSummary: %s on %s, %d cores, global batch %ld (%ld per core), backend %s\n", model.name, chip.name,
           cores, o.batch, o.batch / cores, o.backend == TPU_FE_BACKEND_SIM ? (o.prec == TPU_PREC_BF16 ? "sim bf16" : o.prec == TPU_PREC_BF16X3 ? "sim bf16x3" : "sim bf16x6") : "reference f32");
    if (numerics) printf("  test accuracy     %.4f (test loss %.4f)\n", test_acc, test_loss);
    printf("  simulated step    %.4g us (%.0f cycles at %g MHz, mean of %ld steps), %.4g images/s\n", step_s * 1e6,
           sum_cycles / (double)nsteps, chip.clock_mhz, nsteps, ips);
    printf("  MXU utilization   %.2f%%\n", util * 100);
    printf("  step time         ");
    for (int i = 0; i < TPU_SIM_NSTALL; i++) {
      const int k = tpu_sim_stall_in_report_order(i);
      printf("%s %.1f%%%s", tpu_sim_stall_name(k), fr[k] * 100, i < TPU_SIM_NSTALL - 1 ? "  " : "\n");
    }
    printf("  input pipeline    %.1f%% of the step waiting for input: %s\n", input_frac * 100, verdict(input_frac));
    printf("  wall time         %.2f s\n", wall);
  }
out:
  json_decref(hist);
  if (numerics) tpu_fe_trainer_destroy(&tr);
  tpu_free(csv.s);
  tpu_free(tb.s);
  tpu_fe_feed_close(feed);
  tpu_fe_dataset_free(&test);
  return status;
}
