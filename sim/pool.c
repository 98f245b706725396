/*
** pool.c -- the engine's host threads: a pool that runs a batch of tasks
** (one per chip, or per core) and returns when all are done.
**
** A batch is handed out through one atomic ticket, (generation << 32) |
** next task, so a thread that is not running (a busy host) never holds up
** the others: whoever is awake takes the next task, and the caller takes
** them all if need be. Which thread runs which task never affects results
** (tasks share nothing; sim_int.h says why the engine's do not). Waiting
** first spins for up to SPIN_NS, yielding, before sleeping on a condition
** variable: a round between two collectives can be shorter than a futex
** wake-up.
**
** Models nothing of the chip: it is how the simulator uses the host, and
** no cycle, stall or value depends on it. Not done: thread affinity, or
** splitting a task (a chip's advance runs on one thread).
*/
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim/sim_int.h"

#define SPIN_NS 200000
#define POOL_CLOSED 0x7fffffffu   /* a task index past every batch */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs tasks of generation 'gen' while any are left. */
static void take_tasks(sim_pool *p, uint64_t gen) {
  for (;;) {
    uint64_t t = atomic_load(&p->ticket);
    if (t >> 32 != gen) return;                       /* a newer batch: the caller re-enters */
    const int idx = (int)(t & 0xffffffffu);
    if (idx >= atomic_load(&p->ntasks)) return;
    if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) continue;
    /* the CAS proves generation 'gen' is current, so fn and ctx are its own
    ** and stay so until every one of its tasks (this one too) has finished */
    p->fn(p->ctx, idx);
    if (atomic_fetch_add(&p->finished, 1) + 1 == atomic_load(&p->ntasks)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static void *worker(void *arg) {
  sim_pool *p = arg;
  uint64_t seen = 0;
  for (;;) {
    const uint64_t t0 = mono_ns();
    for (unsigned i = 1; atomic_load(&p->ticket) >> 32 == seen && !atomic_load(&p->quit); i++) {
      if ((i & 63) == 0 && mono_ns() - t0 > SPIN_NS) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->ticket) >> 32 == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->go, &p->mu);
        pthread_mutex_unlock(&p->mu);
        break;
      }
      if (i > 256) sched_yield();        /* an oversubscribed host: let the others run */
    }
    if (atomic_load(&p->quit)) break;
    seen = atomic_load(&p->ticket) >> 32;
    take_tasks(p, seen);
  }
  return NULL;
}

void sim_pool_run(sim_pool *p, int ntasks, void (*fn)(void *, int), void *ctx) {
  /* The previous batch is finished, but a worker may still hold a ticket
  ** of it (all of its tasks taken) and be about to compare it with ntasks.
  ** Were ntasks raised first, that worker's compare-exchange on the stale
  ** ticket could succeed and run a task of this batch under the old
  ** generation (twice, and counted once too often: the caller then went on
  ** while a task still ran). So first close the old generation: a ticket
  ** of a new generation whose index is past any batch; then set up the
  ** batch; then open it under a generation of its own. */
  const uint64_t g0 = atomic_load(&p->ticket) >> 32;
  atomic_store(&p->ticket, ((g0 + 1) << 32) | POOL_CLOSED);
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->ntasks, ntasks);
  atomic_store(&p->finished, 0);
  const uint64_t gen = g0 + 2;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->ticket, gen << 32);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  take_tasks(p, gen);
  const uint64_t t0 = mono_ns();
  for (unsigned i = 1; atomic_load(&p->finished) < ntasks; i++) {
    if ((i & 63) == 0 && mono_ns() - t0 > SPIN_NS) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->finished) < ntasks) pthread_cond_wait(&p->done, &p->mu);
      pthread_mutex_unlock(&p->mu);
      break;
    }
    if (i > 256) sched_yield();
  }
}

void sim_pool_start(sim_pool *p, int nthreads) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->ticket, 0);
  atomic_init(&p->finished, 0);
  atomic_init(&p->ntasks, 0);
  atomic_init(&p->quit, false);
  p->nthreads = 1;
  p->tid = tpu_calloc((size_t)nthreads, sizeof *p->tid);
  if (!p->tid) return;
  for (int w = 1; w < nthreads; w++) {
    if (pthread_create(&p->tid[w], NULL, worker, p) != 0) break;
    p->nthreads = w + 1;
  }
}

void sim_pool_stop(sim_pool *p) {
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->quit, true);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int w = 1; w < p->nthreads; w++) pthread_join(p->tid[w], NULL);
  tpu_free(p->tid);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
}

int sim_host_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}
