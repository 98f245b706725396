/*
** df_costrun.c -- the real-cost run: the description's stages run on host
** threads that spend each modeled cost (a sleep to a deadline) instead of
** reading data, as the tf.data guide's ArtificialDataset sleeps; the
** consumer spends its step time. What the host-time model
** predicts is then measured (tpu_df_costrun, `tpusim pipeline --measure`).
**
** The run follows the model's plan (df_model_plan): the same chain of nodes,
** the same items (elements before batch, batches after, numbered over the
** whole run) and the same cost per item (df_model_item_cost), so the only
** differences are the host's: thread creation and hand-offs, sleeping and
** waking, cores taken by others.
**   - A synchronous node runs in the thread that pulls from it.
**   - An asynchronous node (prefetch, a map with num_parallel_calls) has k
**     threads; one at a time pulls the next item from its input (items in
**     order, never more than L outstanding), then spends the node's cost on
**     its own; items are handed out in order.
**   - A source of k > 1 lanes (parallel interleave) reads each file's
**     elements on the lane of that file, pulling in order.
**   - Each epoch is a fresh iteration: the threads are made when the
**     consumer asks for the epoch's first batch and joined at its end.
** Workers stages and repeat are modelled only (df_model_plan refuses them).
*/
#include "datafeed/df_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Each thread keeps the time its work so far should end (clock_s). spend
** moves it on by a cost and sleeps only when it is more than 1 ms ahead:
** short costs (a 10 us read) are slept in bulk, not one by one, since a
** sleep wakes tens of microseconds late, more on a busy host. settle sleeps
** until it, and is called before an item is handed to another thread, so
** no item is seen before its costs are spent. A thread that goes on at
** once starts its next cost where the last should have ended (lateness
** does not add up along a chain of costs, as it would not for work); after
** a wait of its own (more than 0.5 ms past that) it starts from now. The
** threads ask the kernel for no timer slack. */
static _Thread_local double clock_s;

static void sleep_until(double t) {
  struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}
static void settle(void) {
  if (clock_s > now_s()) sleep_until(clock_s);
}
static void spend(double s) {
  const double now = now_s();
  if (!(clock_s > 0 && now - clock_s < 0.0005)) clock_s = now > clock_s ? now : clock_s;
  clock_s += s > 0 ? s : 0;
  if (clock_s - now > 0.001) sleep_until(clock_s);
}

typedef struct cr_run cr_run;
typedef struct cr_async cr_async;
typedef struct cr_worker { cr_async *a; int lane; } cr_worker;
/* An asynchronous node's state for one epoch. */
struct cr_async {
  cr_run *run;
  int s;                     /* its node */
  pthread_mutex_t mu, pull_mu;
  pthread_cond_t cv;
  int64_t next_pull, delivered, end;
  int64_t *done;             /* ring of L: the item each slot holds, -1 none */
  pthread_t *th;
  struct cr_worker *ws;      /* k: each thread's node and lane */
  int nth;
  bool stop;
};

struct cr_run {
  const tpu_df_model *m;
  df_plan p;
  cr_async a[DF_MAX_STAGES + 2];
};

static void get(cr_run *r, int s, int64_t i);

/* The items of node s in one epoch. */
static int64_t per_epoch(const cr_run *r, int s) { return r->p.node[s].batch_level ? r->p.bpe : r->p.epoch_len; }


/* The thread of an asynchronous node (or a lane of the source). */
static void *worker_main(void *arg) {
  cr_worker *w = arg;
  cr_async *a = w->a;
  cr_run *r = a->run;
  const df_plan_node *n = &r->p.node[a->s];
  const bool lanes = n->kind == DF_PN_SOURCE;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  clock_s = 0;
  for (;;) {
    if (!lanes) pthread_mutex_lock(&a->pull_mu);      /* pulls one at a time, in order */
    pthread_mutex_lock(&a->mu);
    while (!a->stop && !(a->next_pull < a->end && a->next_pull - a->delivered < n->L &&
                         (!lanes || df_model_source_lane(r->m, a->next_pull) == w->lane)))
      pthread_cond_wait(&a->cv, &a->mu);
    if (a->stop) {
      pthread_mutex_unlock(&a->mu);
      if (!lanes) pthread_mutex_unlock(&a->pull_mu);
      break;
    }
    const int64_t i = a->next_pull++;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    double open_s, c;
    if (lanes) {
      c = df_model_item_cost(r->m, a->s, i, &open_s);
      spend(open_s + c);
    } else {
      get(r, a->s - 1, i);
      settle();                                       /* the input's work done before the next pull */
      pthread_mutex_unlock(&a->pull_mu);
      spend(df_model_item_cost(r->m, a->s, i, &open_s));
    }
    settle();
    pthread_mutex_lock(&a->mu);
    a->done[i % n->L] = i;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
  }
  return NULL;
}

/* Item i of node s, in the calling thread's time. */
static void get(cr_run *r, int s, int64_t i) {
  const df_plan_node *n = &r->p.node[s];
  double open_s, c;
  if (n->kind == DF_PN_ASYNC || (n->kind == DF_PN_SOURCE && n->k > 1)) {
    cr_async *a = &r->a[s];
    pthread_mutex_lock(&a->mu);
    while (a->done[i % n->L] != i && !a->stop) pthread_cond_wait(&a->cv, &a->mu);
    a->done[i % n->L] = -1;
    a->delivered = i + 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return;
  }
  switch (n->kind) {
  case DF_PN_SOURCE:
    c = df_model_item_cost(r->m, s, i, &open_s);
    spend(open_s + c);
    return;
  case DF_PN_BATCH: {
    const int64_t e = i / r->p.bpe, pos = (i % r->p.bpe) * r->p.B, size = df_model_batch_elements(r->m, i);
    for (int64_t j = 0; j < size; j++) get(r, s - 1, e * r->p.epoch_len + pos + j);
    break;
  }
  case DF_PN_CACHE:          /* the first epoch fills it, later ones read it back */
    if (i < per_epoch(r, s)) { get(r, s - 1, i); return; }
    break;
  default:
    get(r, s - 1, i);
  }
  spend(df_model_item_cost(r->m, s, i, &open_s));
}

/* Makes the threads of every asynchronous node for epoch e; stops and
** joins them (stop). TPU_ERR_RUNTIME when a thread cannot start. */
static tpu_status start_epoch(cr_run *r, int64_t e) {
  for (int s = 0; s < r->p.n; s++) {
    const df_plan_node *n = &r->p.node[s];
    if (!(n->kind == DF_PN_ASYNC || (n->kind == DF_PN_SOURCE && n->k > 1))) continue;
    cr_async *a = &r->a[s];
    a->next_pull = a->delivered = e * per_epoch(r, s);
    a->end = a->next_pull + per_epoch(r, s);
    a->stop = false;
    for (int k = 0; k < n->L; k++) a->done[k] = -1;
    for (int k = 0; k < n->k; k++) {
      a->ws[k] = (cr_worker){ a, k };
      if (pthread_create(&a->th[k], NULL, worker_main, &a->ws[k]) != 0) return TPU_ERR_RUNTIME;
      a->nth = k + 1;
    }
  }
  return TPU_OK;
}
/* Every node told to stop before any is joined: a thread waiting for an
** item of a stopped node gives up (get), so none waits for ever when the
** run ends inside an epoch. */
static void stop_epoch(cr_run *r) {
  for (int s = 0; s < r->p.n; s++) {
    cr_async *a = &r->a[s];
    if (!a->th) continue;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
  }
  for (int s = 0; s < r->p.n; s++) {
    cr_async *a = &r->a[s];
    for (int k = 0; a->th && k < a->nth; k++) pthread_join(a->th[k], NULL);
    a->nth = 0;
  }
}

static void free_run(cr_run *r) {
  for (int s = 0; s < r->p.n; s++) {
    cr_async *a = &r->a[s];
    if (!a->th) continue;
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->pull_mu);
    pthread_cond_destroy(&a->cv);
    tpu_free(a->done);
    tpu_free(a->th);
    tpu_free(a->ws);
  }
}

/* The state of the asynchronous nodes. */
static tpu_status alloc_run(cr_run *r) {
  for (int s = 0; s < r->p.n; s++) {
    const df_plan_node *n = &r->p.node[s];
    if (!(n->kind == DF_PN_ASYNC || (n->kind == DF_PN_SOURCE && n->k > 1))) continue;
    cr_async *a = &r->a[s];
    a->run = r;
    a->s = s;
    a->done = tpu_malloc((size_t)n->L * sizeof *a->done);
    a->th = tpu_calloc((size_t)n->k, sizeof *a->th);
    a->ws = tpu_calloc((size_t)n->k, sizeof *a->ws);
    if (!a->done || !a->th || !a->ws) {
      tpu_free(a->done); tpu_free(a->th); tpu_free(a->ws);
      a->th = NULL;
      return TPU_ERR_NOMEM;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->pull_mu, NULL);
    pthread_cond_init(&a->cv, NULL);
  }
  return TPU_OK;
}

tpu_status tpu_df_costrun(const tpu_df_spec *spec, const tpu_df_model_options *opt, double step_s, int64_t steps,
                          tpu_df_model_result *res, char *err, size_t errcap) {
  memset(res, 0, sizeof *res);
  tpu_df_model_options o = opt ? *opt : tpu_df_model_options_default();
  o.timeline_steps = 0;
  tpu_df_model *m;
  tpu_status st = tpu_df_model_create(spec, &o, &m, err, errcap);
  if (st != TPU_OK) return st;
  cr_run *r = tpu_calloc(1, sizeof *r);
  if (!r) { tpu_df_model_destroy(m); snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  r->m = m;
  if ((st = df_model_plan(m, &r->p, err, errcap)) != TPU_OK) goto out;
  if ((st = alloc_run(r)) != TPU_OK) { snprintf(err, errcap, "out of memory"); goto out; }
  const int top = r->p.n - 1;
  const int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  clock_s = 0;
  const double t0 = now_s();
  double t = 0, wsum = 0, wmax = 0;
  int64_t b = 0;
  for (; b < steps && b < r->p.total_batches; b++) {
    if (b % r->p.bpe == 0) {          /* a fresh iteration: made when its first batch is asked for */
      if (b > 0) stop_epoch(r);
      if ((st = start_epoch(r, b / r->p.bpe)) != TPU_OK) { snprintf(err, errcap, "cannot start a thread"); break; }
    }
    const double req = now_s() - t0;
    get(r, top, b);
    settle();
    const double w = now_s() - t0 - req;
    wsum += w;
    if (w > wmax) wmax = w;
    spend(step_s);
    settle();
    t = now_s() - t0;
  }
  stop_epoch(r);
  if (slack > 0) prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0UL, 0UL, 0UL);
  *res = (tpu_df_model_result){ .total_s = t, .steps = b, .wait_mean_s = b ? wsum / (double)b : 0, .wait_max_s = wmax,
                                .input_bound_share = t > 0 ? wsum / t : 0 };
out:
  free_run(r);
  tpu_free(r);
  tpu_df_model_destroy(m);
  return st;
}
