/*
** train.c -- the data-parallel training step over the cores, evaluation,
** epoch order and checkpoints.
**
** The trainer runs one step plan (fe_int.h): every core executes its
** forward, loss and backward steps (layers.c) on its own shard and
** workspace, on host threads (core k on thread k mod T); then the plan's
** all-reduce step sums the cores' gradients with tpu_sim_sum_cores() (core
** order, the engine's order too) and its update step runs the optimizer.
** No core reads another's buffers and the sum order is fixed, so the
** results are bit-identical for any thread count.
*/
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "frontend/fe_int.h"

tpu_status tpu_fe_trainer_create(const tpu_fe_model *m, const tpu_fe_backend *be, int cores, int global_batch,
                             int threads, tpu_fe_trainer *t) {
  memset(t, 0, sizeof *t);
  int rows = 0;
  if (tpu_fe_batch_split(global_batch, cores, &rows, NULL, 0)) return TPU_ERR_CONFIG;
  t->model = m;
  t->be = *be;
  /* the cores are our threads; OpenBLAS threads inside them would only
  ** oversubscribe the host (and make timing noisy) */
  if (be->kind == TPU_FE_BACKEND_REFERENCE) openblas_set_num_threads(1);
  t->cores = cores;
  t->rows = rows;
  t->threads = threads < 1 ? 1 : threads > cores ? cores : threads;
  t->ws = tpu_calloc((size_t)cores, sizeof *t->ws);
  t->params = tpu_malloc(m->nparams * sizeof(float) + 1);
  t->grad = tpu_malloc(m->nparams * sizeof(float) + 1);
  if (!t->ws || !t->params || !t->grad) goto fail;
  for (int c = 0; c < cores; c++)
    if (fe_ws_create(m, t->rows, &t->ws[c]) != TPU_OK) goto fail;
  if (fe_plan_create(m, t->rows, global_batch, be->prec, true, &t->plan) != TPU_OK) goto fail;
  if (fe_opt_create(m, &t->opt) != TPU_OK) goto fail;
  fe_params_init(m, t->params);
  return TPU_OK;
fail:
  tpu_fe_trainer_destroy(t);
  return TPU_ERR_NOMEM;
}

void tpu_fe_trainer_destroy(tpu_fe_trainer *t) {
  if (t->ws)
    for (int c = 0; c < t->cores; c++) fe_ws_destroy(t->model, &t->ws[c]);
  tpu_free(t->ws);
  fe_plan_destroy(t->plan);
  tpu_free(t->params);
  tpu_free(t->grad);
  fe_opt_destroy(&t->opt);
  memset(t, 0, sizeof *t);
}

/* {==================================================================
** Running the cores on threads
** ================================================================== */
typedef struct job {
  tpu_fe_trainer *t;
  const fe_plan *plan;         /* of this batch's shards */
  int base;                    /* the first core of the job; its shard starts at x */
  int first, stride;           /* cores base+first, base+first+stride, ... */
  const float *x;              /* per core: x + core*rows*insize */
  const int32_t *y;
  uint64_t step, first_sample;
  int active;                  /* cores with work */
  tpu_status st;
} job;

static void *run_cores(void *arg) {
  job *j = arg;
  tpu_fe_trainer *t = j->t;
  const tpu_fe_model *m = t->model;
  const size_t in = tpu_fe_shape_size(m->input);
  for (int k = j->first; k < j->active; k += j->stride) {
    const int c = j->base + k;
    fe_core_ws *ws = &t->ws[c];
    size_t off = (size_t)k * (size_t)j->plan->rows;
    tpu_status st = fe_forward(j->plan, &t->be, t->params, ws, j->x + off * in, j->y + off, j->step,
                               j->first_sample + off);
    if (!st && j->plan->train) st = fe_backward(j->plan, &t->be, t->params, ws);
    if (st) { j->st = st; return NULL; }
  }
  return NULL;
}

static tpu_status run_all(tpu_fe_trainer *t, job *proto) {
  job jobs[TPU_MAX_CORES];
  pthread_t th[TPU_MAX_CORES];
  int T = t->threads < proto->active ? t->threads : proto->active;
  bool started[TPU_MAX_CORES] = { false };
  for (int k = 0; k < T; k++) {
    jobs[k] = *proto;
    jobs[k].first = k;
    jobs[k].stride = T;
    jobs[k].st = TPU_OK;
    if (k > 0) started[k] = pthread_create(&th[k], NULL, run_cores, &jobs[k]) == 0;
    if (k > 0 && !started[k]) run_cores(&jobs[k]);   /* no thread: run it here */
  }
  run_cores(&jobs[0]);
  tpu_status st = TPU_OK;
  for (int k = 0; k < T; k++) {
    if (started[k]) pthread_join(th[k], NULL);
    if (jobs[k].st && !st) st = jobs[k].st;
  }
  return st;
}
/* }================================================================== */

/* batch_normalization's moving mean and variance (Keras: moving = moving *
** momentum + batch * (1 - momentum)) from the mean of the cores' per-core
** batch statistics, summed in core order: the same bits for any thread
** count. Linear, so the same as averaging per-replica moving averages. */
static void bn_moving(tpu_fe_trainer *t, const tpu_fe_layer *l, int active) {
  for (size_t k = 0; k < l->ns; k++) {
    double sum = 0.0;
    for (int c = 0; c < active; c++) sum += t->ws[c].stat[l->soff + k];
    float *mv = &t->params[l->soff + k];
    *mv = (float)(*mv * l->momentum + sum / active * (1.0 - l->momentum));
  }
}

/* The plan's all-reduce and update steps, after the backward of the
** 'active' cores that had samples. */
static tpu_status reduce_and_update(tpu_fe_trainer *t, const fe_plan *p, int active) {
  const float *grads[TPU_MAX_CORES];
  for (int c = 0; c < active; c++) grads[c] = t->ws[c].grad;
  for (int k = 0; k < p->nsteps; k++) {
    const fe_step *s = &p->steps[k];
    if (s->kind == FE_STEP_ALLREDUCE) tpu_sim_sum_cores(active, grads, s->rows, t->grad);
    else if (s->kind == FE_STEP_UPDATE) {
      tpu_status st = fe_opt_apply(t->model, &t->opt, t->params, t->grad);
      if (st) return st;
    } else if (s->kind == FE_STEP_BN_MOVING) bn_moving(t, &t->model->layers[s->layer], active);
  }
  return TPU_OK;
}

tpu_status tpu_fe_trainer_step(tpu_fe_trainer *t, const float *x, const int32_t *y, uint64_t step,
                           uint64_t first_sample, double *loss, int *correct) {
  return tpu_fe_trainer_step_n(t, x, y, t->rows * t->cores, step, first_sample, loss, correct);
}

tpu_status tpu_fe_trainer_step_n(tpu_fe_trainer *t, const float *x, const int32_t *y, int n, uint64_t step,
                                 uint64_t first_sample, double *loss, int *correct) {
  if (n < 1 || n > t->rows * t->cores) return TPU_ERR_INPUT;
  /* a short batch fills whole shards of 'rows' on the first cores and its
  ** ragged tail on the next (as tf.data splits a partial batch over
  ** replicas); the loss is the mean over its n samples */
  const int whole = n / t->rows, tail = n % t->rows, active = whole + (tail > 0);
  fe_plan *pw = NULL, *pt = NULL;
  tpu_status st = TPU_OK;
  if (n != t->rows * t->cores && whole > 0) st = fe_plan_create(t->model, t->rows, n, t->be.prec, true, &pw);
  if (!st && tail > 0) st = fe_plan_create(t->model, tail, n, t->be.prec, true, &pt);
  const fe_plan *full = n == t->rows * t->cores ? t->plan : pw;
  if (!st && whole > 0) {
    job j = { .t = t, .plan = full, .x = x, .y = y, .step = step, .first_sample = first_sample, .active = whole };
    st = run_all(t, &j);
  }
  if (!st && tail > 0) {
    const size_t off = (size_t)whole * (size_t)t->rows;
    job j = { .t = t, .plan = pt, .base = whole, .x = x + off * tpu_fe_shape_size(t->model->input), .y = y + off,
              .step = step, .first_sample = first_sample + off, .active = 1 };
    st = run_all(t, &j);
  }
  if (!st) {
    double ls = 0.0;
    int cor = 0;
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] = 0.0;
    for (int c = 0; c < active; c++) {
      ls += t->ws[c].loss_sum;
      cor += t->ws[c].correct;
      for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] += t->ws[c].out_loss_sum[k];
    }
    st = reduce_and_update(t, full ? full : pt, active);
    *loss = ls / (double)n;
    *correct = cor;
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] /= (double)n;
  }
  fe_plan_destroy(pw);
  fe_plan_destroy(pt);
  return st;
}

/* Forward (with the loss) of plan->rows samples on each of 'active' cores. */
static tpu_status eval_cores(tpu_fe_trainer *t, const fe_plan *p, const float *x, const int32_t *y, int active,
                             double *ls, long *cor) {
  job j = { .t = t, .plan = p, .x = x, .y = y, .active = active };
  tpu_status st = run_all(t, &j);
  for (int c = 0; c < active && !st; c++) {
    *ls += t->ws[c].loss_sum;
    *cor += t->ws[c].correct;
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] += t->ws[c].out_loss_sum[k];   /* summed */
  }
  return st;
}
/* The same for a shard size of its own (a short last batch). */
static tpu_status eval_short(tpu_fe_trainer *t, const float *x, const int32_t *y, int rows, int active,
                             double *ls, long *cor) {
  fe_plan *p = NULL;
  tpu_status st = fe_plan_create(t->model, rows, rows * active, t->be.prec, false, &p);
  if (!st) st = eval_cores(t, p, x, y, active, ls, cor);
  fe_plan_destroy(p);
  return st;
}

tpu_status tpu_fe_trainer_eval(tpu_fe_trainer *t, const tpu_fe_dataset *d, double *loss, double *acc) {
  const int gb = t->rows * t->cores;
  const size_t in = tpu_fe_shape_size(t->model->input);
  /* the value path reads 'in' floats a sample and indexes outputs by label:
  ** a dataset of another shape would be read past its end */
  if (tpu_fe_shape_size(d->shape) != in || d->classes != tpu_fe_model_label_classes(t->model) || d->n < 1)
    return TPU_ERR_INPUT;
  double ls = 0.0;
  long cor = 0;
  for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] = 0.0;
  fe_plan *full = NULL;   /* inference on whole shards */
  tpu_status st = fe_plan_create(t->model, t->rows, gb, t->be.prec, false, &full);
  for (int s = 0; s < d->n && !st; s += gb) {
    const float *x = d->x + (size_t)s * in;
    const int32_t *y = d->y + s;
    int left = d->n - s < gb ? d->n - s : gb;
    if (left == gb) { st = eval_cores(t, full, x, y, t->cores, &ls, &cor); continue; }
    /* a short last batch is spread over as many cores as it fills; the
    ** cores must see whole shards: a ragged tail runs on one core */
    int rows = left < t->rows ? left : t->rows;
    int whole = left / rows, done = whole * rows;
    st = eval_short(t, x, y, rows, whole, &ls, &cor);
    if (!st && done < left) st = eval_short(t, x + (size_t)done * in, y + done, left - done, 1, &ls, &cor);
  }
  fe_plan_destroy(full);
  if (st) return st;
  *loss = ls / (double)d->n;
  for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++) t->output_loss[k] /= (double)d->n;
  *acc = (double)cor / ((double)d->n * tpu_fe_model_predictions(t->model));
  return TPU_OK;
}

uint64_t tpu_fe_params_hash(const float *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n * sizeof(float); i++) { h ^= b[i]; h *= 0x100000001b3ull; }
  return h;
}

/* {==================================================================
** Checkpoints, format 4: "TPUSIMC4", a header of u64 fields, the run's
** sums and each epoch's history as f64, the per-core sums as u64 (cores,
** their cycles, then 'cores' x the stall kinds), the f32 arrays, and the
** CRC-32 of everything before it. Little-endian host layout. Format 3
** ("TPUSIMC3", tpusim 0.3 and 0.4) is read too: its per-core sums always
** held 16 rows (a board's cores, the most a chip had then). Format 1
** ("TPUSIMCK", tpusim 0.2.0) had no run sums or history, format 2
** ("TPUSIMC2", development builds before 0.3.0) no per-core sums.
** ================================================================== */
#define CK_MAGIC "TPUSIMC4"
#define CK_MAGIC_V3 "TPUSIMC3"
#define CK_V3_ROWS 16
#define CK_MAGIC_V1 "TPUSIMCK"
#define CK_MAGIC_V2 "TPUSIMC2"
enum { CK_NPARAMS, CK_OPT, CK_SEED, CK_BATCH, CK_EPOCHS, CK_STEP, CK_T, CK_STEPS_TIMED, CK_NFIELDS };
enum { CK_CYCLES, CK_MACS, CK_CAP, CK_SIM_TIME, CK_STALL0, CK_NRUN = CK_STALL0 + TPU_SIM_NSTALL };
enum { CK_H_LOSS, CK_H_ACC, CK_H_VLOSS, CK_H_VACC, CK_H_SIM, CK_NHIST };
enum { CK_C_CORES, CK_C_CYCLES, CK_C_STALL0 };
/* u64 values of the per-core sums with 'rows' rows */
static size_t ck_ncore(uint64_t rows) { return CK_C_STALL0 + (size_t)rows * TPU_SIM_NSTALL; }

static size_t ck_arrays(const tpu_fe_trainer *t) {
  return 1 + (t->opt.m != NULL) + (t->opt.v != NULL);
}
static size_t ck_size(size_t nparams, size_t na, uint64_t epochs, uint64_t rows) {
  return 8 + CK_NFIELDS * 8 + CK_NRUN * 8 + (size_t)epochs * CK_NHIST * 8 + ck_ncore(rows) * 8 + na * nparams * 4 + 4;
}

tpu_status tpu_fe_ckpt_save(const char *dir, const tpu_fe_trainer *t, const tpu_fe_ckpt_info *info,
                        char *err, size_t errcap) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    snprintf(err, errcap, "--checkpoint %s: cannot create the directory: %s", dir, strerror(errno));
    return TPU_ERR_IO;
  }
  const size_t n = t->model->nparams, na = ck_arrays(t), ne = info->epochs_done > 0 ? (size_t)info->epochs_done : 0;
  const tpu_fe_run_log *rl = &info->run;
  const int rows = rl->cores > 0 && rl->cores <= TPU_MAX_CORES ? rl->cores : 0;
  const size_t size = ck_size(n, na, ne, (uint64_t)rows);
  unsigned char *buf = tpu_calloc(1, size);
  if (!buf) { snprintf(err, errcap, "checkpoint: out of memory"); return TPU_ERR_NOMEM; }
  uint64_t f[CK_NFIELDS] = { n, (uint64_t)t->model->opt.kind, info->seed, (uint64_t)info->global_batch,
                             (uint64_t)ne, info->step, t->opt.t, rl->steps };
  double r[CK_NRUN] = { rl->cycles, rl->macs, rl->mxu_capacity, rl->sim_time_s };
  for (int k = 0; k < TPU_SIM_NSTALL; k++) r[CK_STALL0 + k] = rl->stall[k];
  unsigned char *p = buf;
  memcpy(p, CK_MAGIC, 8); p += 8;
  memcpy(p, f, sizeof f); p += sizeof f;
  memcpy(p, r, sizeof r); p += sizeof r;
  for (size_t e = 0; e < ne; e++, p += CK_NHIST * 8) {
    if (!info->history) continue;
    const tpu_fe_epoch_log *h = &info->history[e];
    const double v[CK_NHIST] = { h->loss, h->accuracy, h->val_loss, h->val_accuracy, h->sim_s };
    memcpy(p, v, sizeof v);
  }
  const uint64_t c[CK_C_STALL0] = { (uint64_t)rows, rl->core_cycles };
  memcpy(p, c, sizeof c); p += sizeof c;
  memcpy(p, rl->core_stall, (size_t)rows * sizeof rl->core_stall[0]); p += (size_t)rows * sizeof rl->core_stall[0];
  memcpy(p, t->params, n * 4); p += n * 4;
  if (t->opt.m) { memcpy(p, t->opt.m, n * 4); p += n * 4; }
  if (t->opt.v) { memcpy(p, t->opt.v, n * 4); p += n * 4; }
  uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(p - buf));
  memcpy(p, &crc, 4);
  char path[4096];
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  int w = tpu_write_atomic(path, buf, size);
  tpu_free(buf);
  if (w) { snprintf(err, errcap, "%s: cannot write: %s", path, strerror(errno)); return TPU_ERR_IO; }
  return TPU_OK;
}

/* The run's sums: finite, >= 0, the stall parts summing to the cycles, no
** more steps timed than run. Names the first field at fault in 'field'. */
static bool ck_run_ok(const uint64_t *f, const double *r, char *field, size_t cap, double *bad) {
  static const char *const names[CK_STALL0] = { "run.cycles", "run.macs", "run.mxu_capacity", "run.sim_time_s" };
  double sum = 0;
  for (int k = 0; k < CK_NRUN; k++) {
    if (!(isfinite(r[k]) && r[k] >= 0)) {
      if (k < CK_STALL0) snprintf(field, cap, "%s", names[k]);
      else snprintf(field, cap, "run.stall.%s", tpu_sim_stall_name(k - CK_STALL0));
      *bad = r[k];
      return false;
    }
    if (k >= CK_STALL0) sum += r[k];
  }
  if (fabs(sum - r[CK_CYCLES]) > 1e-6 * r[CK_CYCLES] + 1e-6 || r[CK_CYCLES] > (double)f[CK_STEPS_TIMED] * (double)TPU_SIM_MAX_CYCLES) {
    snprintf(field, cap, "run.cycles");
    *bad = r[CK_CYCLES];
    return false;
  }
  return true;
}

/* Epoch e's history: accuracies in [0, 1], losses >= 0 (NaN: a run that
** diverged), times finite and >= 0. */
static bool ck_hist_ok(const double *h, size_t e, char *field, size_t cap, double *bad) {
  static const char *const names[CK_NHIST] = { "loss", "accuracy", "val_loss", "val_accuracy", "sim_s" };
  for (int k = 0; k < CK_NHIST; k++) {
    const double v = h[k];
    const bool ok = k == CK_H_ACC || k == CK_H_VACC ? v >= 0 && v <= 1
                  : k == CK_H_LOSS || k == CK_H_VLOSS ? isnan(v) || (v >= 0 && isfinite(v))
                  : isfinite(v) && v >= 0;
    if (!ok) {
      snprintf(field, cap, "history[%zu].%s", e, names[k]);
      *bad = v;
      return false;
    }
  }
  return true;
}

/* The per-core sums: as many cores as a chip has (none before the first
** step timed), their cycles those of the run, each core's stall parts
** adding up to them, nothing for the other cores, and small enough for the
** report's integers. Names the first field at fault in 'field'. */
static bool ck_cores_ok(const uint64_t *f, const double *r, const uint64_t *c, uint64_t rows, char *field, size_t cap,
                        double *bad) {
  const uint64_t cores = c[CK_C_CORES], cyc = c[CK_C_CYCLES];
  const bool cores_ok = f[CK_STEPS_TIMED] ? cores >= 1 && cores <= rows : cores == 0;
  if (!cores_ok || fabs((double)cyc - r[CK_CYCLES]) > 1e-6 * r[CK_CYCLES] + 1e-6 ||
      cyc > (uint64_t)INT64_MAX / (cores ? cores : 1)) {
    snprintf(field, cap, "%s", cores_ok ? "core_cycles" : "cores");
    *bad = (double)(cores_ok ? cyc : cores);
    return false;
  }
  for (uint64_t k = 0; k < rows; k++) {
    const uint64_t *s = c + CK_C_STALL0 + k * TPU_SIM_NSTALL, want = k < cores ? cyc : 0;
    uint64_t sum = 0;
    for (int i = 0; i < TPU_SIM_NSTALL && sum <= want; i++) sum += s[i] <= want ? s[i] : want + 1;
    if (sum != want) {
      snprintf(field, cap, "core[%llu].stall", (unsigned long long)k);
      *bad = (double)sum;
      return false;
    }
  }
  return true;
}

/* The run's sums, each epoch's history (at 'hist') and the per-core sums
** after them ('rows' rows, at c): true, or false with the message in err. */
static bool ck_sums_ok(const char *path, const uint64_t *f, const double *r, const unsigned char *hist,
                       const uint64_t *c, uint64_t rows, char *err, size_t errcap) {
  char field[64];
  double bad = 0;
  if (!ck_run_ok(f, r, field, sizeof field, &bad)) {
    snprintf(err, errcap, "%s: field '%s' is %g; expected a finite sum >= 0, the stall parts adding up to run.cycles "
             "(a damaged checkpoint)", path, field, bad);
    return false;
  }
  for (size_t e = 0; e < f[CK_EPOCHS]; e++) {
    double h[CK_NHIST];
    memcpy(h, hist + e * sizeof h, sizeof h);
    if (!ck_hist_ok(h, e, field, sizeof field, &bad)) {
      snprintf(err, errcap, "%s: field '%s' is %g; expected accuracies in [0, 1], losses >= 0, times finite and >= 0 "
               "(a damaged checkpoint)", path, field, bad);
      return false;
    }
  }
  if (!ck_cores_ok(f, r, c, rows, field, sizeof field, &bad)) {
    snprintf(err, errcap, "%s: field '%s' is %g; expected at most %llu cores, their cycles those of the run and each "
             "core's stall parts adding up to them (a damaged checkpoint)", path, field, bad, (unsigned long long)rows);
    return false;
  }
  return true;
}

static tpu_status ck_read_failed(const char *path, char *err, size_t errcap) {
  const int e = errno;
  snprintf(err, errcap, "%s: cannot read: %s", path, strerror(e));
  return e == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO;
}

static const char *const CK_NAMES[CK_NFIELDS] = { "parameters", "optimizer", "seed", "global_batch", "epochs_done",
                                                  "step", "optimizer_steps", "steps_timed" };
/* The header's fields within their ranges: true, or false with the message. */
static bool ck_fields_ok(const char *path, const uint64_t *f, char *err, size_t errcap) {
  static const uint64_t hi[CK_NFIELDS] = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, TPU_FE_CKPT_MAX_EPOCHS,
                                           TPU_FE_CKPT_MAX_STEPS, TPU_FE_CKPT_MAX_STEPS, TPU_FE_CKPT_MAX_STEPS };
  for (int k = 0; k < CK_NFIELDS; k++)
    if (f[k] > hi[k]) {
      snprintf(err, errcap, "%s: field '%s' is %llu; expected 0..%llu (a damaged checkpoint)", path, CK_NAMES[k],
               (unsigned long long)f[k], (unsigned long long)hi[k]);
      return false;
    }
  return true;
}

tpu_status tpu_fe_ckpt_load(const char *dir, tpu_fe_trainer *t, const tpu_fe_ckpt_info *want, tpu_fe_ckpt_info *info,
                        char *err, size_t errcap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  info->history = NULL;
  size_t len = 0;
  unsigned char *buf = (unsigned char *)tpu_read_file(path, &len);
  if (!buf) return ck_read_failed(path, err, errcap);
  tpu_status st = TPU_ERR_INPUT;
  const size_t n = t->model->nparams, na = ck_arrays(t);
  uint64_t f[CK_NFIELDS];
  double r[CK_NRUN];
  uint32_t crc;
  uint64_t *c = NULL;          /* the per-core sums */
  if (len >= 8 && (!memcmp(buf, CK_MAGIC_V1, 8) || !memcmp(buf, CK_MAGIC_V2, 8))) {
    const bool v1 = !memcmp(buf, CK_MAGIC_V1, 8);
    snprintf(err, errcap, "%s: a checkpoint of format %s, which kept no %s; this tpusim resumes formats 3 and 4: "
             "start the run again", path, v1 ? "1 (tpusim 0.2.0)" : "2 (a development build before 0.3.0)",
             v1 ? "history of the run" : "per-core stall cycles");
    goto done;
  }
  const bool v3 = len >= 8 && !memcmp(buf, CK_MAGIC_V3, 8);
  if (len < 8 + sizeof f + sizeof r + 4 || (!v3 && memcmp(buf, CK_MAGIC, 8))) {
    snprintf(err, errcap, "%s: not a tpusim checkpoint", path); goto done;
  }
  memcpy(f, buf + 8, sizeof f);
  memcpy(r, buf + 8 + sizeof f, sizeof r);
  memcpy(&crc, buf + len - 4, 4);
  if (crc != (uint32_t)crc32(0L, buf, (uInt)(len - 4))) {
    snprintf(err, errcap, "%s: corrupt (CRC mismatch)", path); goto done;
  }
  /* the CRC only says the file is as written: every field is checked too */
  if (!ck_fields_ok(path, f, err, errcap)) goto done;
  if (f[CK_NPARAMS] != n || f[CK_OPT] != (uint64_t)t->model->opt.kind) {
    snprintf(err, errcap, "%s: written for another model (%llu parameters, optimizer %llu); this one has %zu",
             path, (unsigned long long)f[CK_NPARAMS], (unsigned long long)f[CK_OPT], n);
    goto done;
  }
  /* the per-core sums' rows: format 3's 16, else the cores they hold */
  const size_t at = 8 + sizeof f + sizeof r + (size_t)f[CK_EPOCHS] * CK_NHIST * 8;
  uint64_t rows = CK_V3_ROWS;
  if (!v3 && len >= at + 8) memcpy(&rows, buf + at, 8);
  if (rows > TPU_MAX_CORES) {
    snprintf(err, errcap, "%s: field 'cores' is %llu; expected 0..%d (a damaged checkpoint)", path,
             (unsigned long long)rows, TPU_MAX_CORES);
    goto done;
  }
  if (len != ck_size(n, na, f[CK_EPOCHS], rows)) {
    snprintf(err, errcap, "%s: %zu bytes, but its fields (%zu parameters, epochs_done %llu, %llu cores) make %zu (a "
             "damaged checkpoint)", path, len, n, (unsigned long long)f[CK_EPOCHS], (unsigned long long)rows,
             ck_size(n, na, f[CK_EPOCHS], rows));
    goto done;
  }
  if (f[CK_SEED] != want->seed || f[CK_BATCH] != (uint64_t)want->global_batch) {
    snprintf(err, errcap, "%s: written with --seed %llu --batch %llu; resume with the same (got --seed %llu --batch %d)",
             path, (unsigned long long)f[CK_SEED], (unsigned long long)f[CK_BATCH],
             (unsigned long long)want->seed, want->global_batch);
    goto done;
  }
  if (f[CK_STEP] < f[CK_EPOCHS] || f[CK_T] != f[CK_STEP] || f[CK_STEPS_TIMED] > f[CK_STEP]) {
    const int k = f[CK_STEP] < f[CK_EPOCHS] ? CK_STEP : f[CK_T] != f[CK_STEP] ? CK_T : CK_STEPS_TIMED;
    snprintf(err, errcap, "%s: field '%s' is %llu with step %llu and epochs_done %llu; every epoch runs at least one "
             "step, every step makes one optimizer update and is timed at most once (a damaged checkpoint)", path,
             CK_NAMES[k], (unsigned long long)f[k], (unsigned long long)f[CK_STEP], (unsigned long long)f[CK_EPOCHS]);
    goto done;
  }
  const unsigned char *hist = buf + 8 + sizeof f + sizeof r;
  c = tpu_malloc(ck_ncore(rows) * sizeof *c);
  if (!c) { snprintf(err, errcap, "%s: out of memory", path); st = TPU_ERR_NOMEM; goto done; }
  memcpy(c, buf + at, ck_ncore(rows) * sizeof *c);
  if (!ck_sums_ok(path, f, r, hist, c, rows, err, errcap)) goto done;
  const unsigned char *p = buf + at + ck_ncore(rows) * sizeof *c;
  if (t->opt.v) {   /* adam's second moments are means of squares */
    const unsigned char *v = p + n * 4 * (na - 1);
    for (size_t i = 0; i < n; i++) {
      float x;
      memcpy(&x, v + i * 4, 4);
      if (x < 0) {
        snprintf(err, errcap, "%s: field 'adam_v[%zu]' is %g; a second moment is >= 0 (a damaged checkpoint)", path, i,
                 (double)x);
        goto done;
      }
    }
  }
  if (f[CK_EPOCHS] && !(info->history = tpu_malloc(f[CK_EPOCHS] * sizeof *info->history))) {
    snprintf(err, errcap, "%s: out of memory", path);
    st = TPU_ERR_NOMEM;
    goto done;
  }
  for (size_t e = 0; e < f[CK_EPOCHS]; e++) {
    double h[CK_NHIST];
    memcpy(h, hist + e * sizeof h, sizeof h);
    info->history[e] = (tpu_fe_epoch_log){ h[CK_H_LOSS], h[CK_H_ACC], h[CK_H_VLOSS], h[CK_H_VACC], h[CK_H_SIM], NAN,
                                          { NAN, NAN, NAN, NAN, NAN, NAN }, { 0 }, { 0 } };
    for (int k = 0; k < TPU_FE_MAX_OUTPUTS; k++)
      info->history[e].output_loss[k] = info->history[e].val_output_loss[k] = NAN;
  }
  memcpy(t->params, p, n * 4); p += n * 4;
  if (t->opt.m) { memcpy(t->opt.m, p, n * 4); p += n * 4; }
  if (t->opt.v) { memcpy(t->opt.v, p, n * 4); p += n * 4; }
  t->opt.t = f[CK_T];
  info->seed = f[CK_SEED];
  info->global_batch = (int)f[CK_BATCH];
  info->epochs_done = (int)f[CK_EPOCHS];
  info->step = f[CK_STEP];
  info->run = (tpu_fe_run_log){ .steps = f[CK_STEPS_TIMED], .cycles = r[CK_CYCLES], .macs = r[CK_MACS],
                                .mxu_capacity = r[CK_CAP], .sim_time_s = r[CK_SIM_TIME] };
  for (int k = 0; k < TPU_SIM_NSTALL; k++) info->run.stall[k] = r[CK_STALL0 + k];
  info->run.cores = (int)c[CK_C_CORES];
  info->run.core_cycles = c[CK_C_CYCLES];
  memcpy(info->run.core_stall, c + CK_C_STALL0, (size_t)c[CK_C_CORES] * sizeof info->run.core_stall[0]);
  st = TPU_OK;
done:
  tpu_free(c);
  tpu_free(buf);
  return st;
}
/* }================================================================== */
