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
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "frontend/fe_int.h"

tpu_status tpu_fe_trainer_create(const tpu_fe_model *m, const tpu_fe_backend *be, int cores, int global_batch,
                             int threads, tpu_fe_trainer *t) {
  memset(t, 0, sizeof *t);
  if (cores < 1 || global_batch % cores) return TPU_ERR_CONFIG;
  t->model = m;
  t->be = *be;
  /* the cores are our threads; OpenBLAS threads inside them would only
  ** oversubscribe the host (and make timing noisy) */
  if (be->kind == TPU_FE_BACKEND_REFERENCE) openblas_set_num_threads(1);
  t->cores = cores;
  t->rows = global_batch / cores;
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
  int first, stride;           /* cores first, first+stride, ... */
  const float *x;              /* per core: x + core*rows*insize */
  const uint8_t *y;
  uint64_t step, first_sample;
  int active;                  /* cores with work */
  tpu_status st;
} job;

static void *run_cores(void *arg) {
  job *j = arg;
  tpu_fe_trainer *t = j->t;
  const tpu_fe_model *m = t->model;
  const size_t in = tpu_fe_shape_size(m->input);
  for (int c = j->first; c < j->active; c += j->stride) {
    fe_core_ws *ws = &t->ws[c];
    size_t off = (size_t)c * (size_t)j->plan->rows;
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
static void bn_moving(tpu_fe_trainer *t, const tpu_fe_layer *l) {
  for (size_t k = 0; k < l->ns; k++) {
    double sum = 0.0;
    for (int c = 0; c < t->cores; c++) sum += t->ws[c].stat[l->soff + k];
    float *mv = &t->params[l->soff + k];
    *mv = (float)(*mv * l->momentum + sum / t->cores * (1.0 - l->momentum));
  }
}

/* The plan's all-reduce and update steps, after every core's backward. */
static tpu_status reduce_and_update(tpu_fe_trainer *t) {
  const fe_plan *p = t->plan;
  const float *grads[TPU_MAX_CORES];
  for (int c = 0; c < t->cores; c++) grads[c] = t->ws[c].grad;
  for (int k = 0; k < p->nsteps; k++) {
    const fe_step *s = &p->steps[k];
    if (s->kind == FE_STEP_ALLREDUCE) tpu_sim_sum_cores(t->cores, grads, s->rows, t->grad);
    else if (s->kind == FE_STEP_UPDATE) fe_opt_apply(t->model, &t->opt, t->params, t->grad);
    else if (s->kind == FE_STEP_BN_MOVING) bn_moving(t, &t->model->layers[s->layer]);
  }
  return TPU_OK;
}

tpu_status tpu_fe_trainer_step(tpu_fe_trainer *t, const float *x, const uint8_t *y, uint64_t step,
                           uint64_t first_sample, double *loss, int *correct) {
  job j = { .t = t, .plan = t->plan, .x = x, .y = y, .step = step, .first_sample = first_sample,
            .active = t->cores };
  tpu_status st = run_all(t, &j);
  if (st) return st;
  double ls = 0.0;
  int cor = 0;
  for (int c = 0; c < t->cores; c++) {
    ls += t->ws[c].loss_sum;
    cor += t->ws[c].correct;
  }
  if ((st = reduce_and_update(t))) return st;
  *loss = ls / (double)(t->rows * t->cores);
  *correct = cor;
  return TPU_OK;
}

/* Forward (with the loss) of plan->rows samples on each of 'active' cores. */
static tpu_status eval_cores(tpu_fe_trainer *t, const fe_plan *p, const float *x, const uint8_t *y, int active,
                             double *ls, long *cor) {
  job j = { .t = t, .plan = p, .x = x, .y = y, .active = active };
  tpu_status st = run_all(t, &j);
  for (int c = 0; c < active && !st; c++) { *ls += t->ws[c].loss_sum; *cor += t->ws[c].correct; }
  return st;
}
/* The same for a shard size of its own (a short last batch). */
static tpu_status eval_short(tpu_fe_trainer *t, const float *x, const uint8_t *y, int rows, int active,
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
  if (tpu_fe_shape_size(d->shape) != in || d->classes != t->model->layers[t->model->nlayers - 1].out.c || d->n < 1)
    return TPU_ERR_INPUT;
  double ls = 0.0;
  long cor = 0;
  fe_plan *full = NULL;   /* inference on whole shards */
  tpu_status st = fe_plan_create(t->model, t->rows, gb, t->be.prec, false, &full);
  for (int s = 0; s < d->n && !st; s += gb) {
    const float *x = d->x + (size_t)s * in;
    const uint8_t *y = d->y + s;
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
  *acc = (double)cor / (double)d->n;
  return TPU_OK;
}

uint64_t tpu_fe_params_hash(const float *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n * sizeof(float); i++) { h ^= b[i]; h *= 0x100000001b3ull; }
  return h;
}

/* {==================================================================
** Checkpoints: "TPUSIMCK" v1, a header of u64 fields, the f32 arrays, and
** the CRC-32 of everything before it. Little-endian host layout.
** ================================================================== */
#define CK_MAGIC "TPUSIMCK"
enum { CK_NPARAMS, CK_OPT, CK_SEED, CK_BATCH, CK_EPOCHS, CK_STEP, CK_T, CK_NFIELDS };

static size_t ck_arrays(const tpu_fe_trainer *t) {
  return 1 + (t->opt.m != NULL) + (t->opt.v != NULL);
}

tpu_status tpu_fe_ckpt_save(const char *dir, const tpu_fe_trainer *t, const tpu_fe_ckpt_info *info,
                        char *err, size_t errcap) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    snprintf(err, errcap, "--checkpoint %s: cannot create the directory: %s", dir, strerror(errno));
    return TPU_ERR_IO;
  }
  const size_t n = t->model->nparams, na = ck_arrays(t);
  const size_t size = 8 + CK_NFIELDS * 8 + na * n * 4 + 4;
  unsigned char *buf = tpu_malloc(size);
  if (!buf) { snprintf(err, errcap, "checkpoint: out of memory"); return TPU_ERR_NOMEM; }
  uint64_t f[CK_NFIELDS] = { n, (uint64_t)t->model->opt.kind, info->seed, (uint64_t)info->global_batch,
                             (uint64_t)info->epochs_done, info->step, t->opt.t };
  unsigned char *p = buf;
  memcpy(p, CK_MAGIC, 8); p += 8;
  memcpy(p, f, sizeof f); p += sizeof f;
  memcpy(p, t->params, n * 4); p += n * 4;
  if (t->opt.m) { memcpy(p, t->opt.m, n * 4); p += n * 4; }
  if (t->opt.v) { memcpy(p, t->opt.v, n * 4); p += n * 4; }
  uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(p - buf));
  memcpy(p, &crc, 4);
  char path[4096];
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  int r = tpu_write_atomic(path, buf, size);
  tpu_free(buf);
  if (r) { snprintf(err, errcap, "%s: cannot write: %s", path, strerror(errno)); return TPU_ERR_IO; }
  return TPU_OK;
}

tpu_status tpu_fe_ckpt_load(const char *dir, tpu_fe_trainer *t, const tpu_fe_ckpt_info *want, tpu_fe_ckpt_info *info,
                        char *err, size_t errcap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
  size_t len = 0;
  unsigned char *buf = (unsigned char *)tpu_read_file(path, &len);
  if (!buf) { snprintf(err, errcap, "%s: cannot read: %s", path, strerror(errno)); return TPU_ERR_IO; }
  tpu_status st = TPU_ERR_INPUT;
  const size_t n = t->model->nparams, na = ck_arrays(t);
  uint64_t f[CK_NFIELDS];
  uint32_t crc;
  if (len < 8 + sizeof f + 4 || memcmp(buf, CK_MAGIC, 8)) {
    snprintf(err, errcap, "%s: not a tpusim checkpoint", path); goto done;
  }
  memcpy(f, buf + 8, sizeof f);
  memcpy(&crc, buf + len - 4, 4);
  if (crc != (uint32_t)crc32(0L, buf, (uInt)(len - 4))) {
    snprintf(err, errcap, "%s: corrupt (CRC mismatch)", path); goto done;
  }
  if (f[CK_NPARAMS] != n || f[CK_OPT] != (uint64_t)t->model->opt.kind || len != 8 + sizeof f + na * n * 4 + 4) {
    snprintf(err, errcap, "%s: written for another model (%llu parameters, optimizer %llu); this one has %zu",
             path, (unsigned long long)f[CK_NPARAMS], (unsigned long long)f[CK_OPT], n);
    goto done;
  }
  if (f[CK_SEED] != want->seed || f[CK_BATCH] != (uint64_t)want->global_batch) {
    snprintf(err, errcap, "%s: written with --seed %llu --batch %llu; resume with the same (got --seed %llu --batch %d)",
             path, (unsigned long long)f[CK_SEED], (unsigned long long)f[CK_BATCH],
             (unsigned long long)want->seed, want->global_batch);
    goto done;
  }
  const unsigned char *p = buf + 8 + sizeof f;
  memcpy(t->params, p, n * 4); p += n * 4;
  if (t->opt.m) { memcpy(t->opt.m, p, n * 4); p += n * 4; }
  if (t->opt.v) { memcpy(t->opt.v, p, n * 4); p += n * 4; }
  t->opt.t = f[CK_T];
  info->seed = f[CK_SEED];
  info->global_batch = (int)f[CK_BATCH];
  info->epochs_done = (int)f[CK_EPOCHS];
  info->step = f[CK_STEP];
  st = TPU_OK;
done:
  tpu_free(buf);
  return st;
}
/* }================================================================== */
