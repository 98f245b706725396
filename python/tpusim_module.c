/*
** tpusim_module.c -- tpusim._tpusim, the CPython extension under the
** tpusim package (python/tpusim/__init__.py): one function, run(argv,
** on_step), that runs `tpusim ARGV...` in this process (cli/call.h) and
** returns (exit status, report JSON text or None, message).
**
** Threads and signals. A call runs on a worker thread of its own, with the
** GIL released, while the calling thread waits for it in 50 ms slices and
** in between lets Python run its signal handlers (PyErr_CheckSignals): a
** Ctrl-C there raises the cancel flag (base.h), the run stops at its next
** step or point without writing its outputs, and the KeyboardInterrupt is
** raised once the worker is done. The per-step hook takes the GIL
** (PyGILState_Ensure) to call the Python callback; an exception from it
** stops the run and is re-raised to the caller. Calls are serialized by one
** lock (getopt_long's globals, the one cancel flag): a second Python thread
** waits, without the GIL, for the first call to end.
**
** Nothing here exits the process: every failure is a status and message.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "cli/call.h"

static pthread_mutex_t one_call = PTHREAD_MUTEX_INITIALIZER;

typedef struct job {
  tpu_cli_call call;
  PyObject *on_step;                 /* borrowed; NULL: none */
  PyObject *exc_type, *exc_value, *exc_tb;   /* what on_step raised */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int rc;
} job;

/* The step hook, on the worker thread: calls on_step(step_json) with the
** GIL. Non-zero (stop) when it raised; the exception is kept for the
** caller. */
static int step(void *ud, const char *step_json) {
  job *j = ud;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(j->on_step, "s", step_json);
  const int stop = r == NULL;
  if (stop) PyErr_Fetch(&j->exc_type, &j->exc_value, &j->exc_tb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return stop;
}

static void *worker(void *ud) {
  job *j = ud;
  const int rc = tpu_cli_run(&j->call);
  pthread_mutex_lock(&j->mu);
  j->rc = rc;
  j->done = true;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

/* Waits for the worker in slices, running Python's signal handlers in
** between; true when one raised (the exception is then pending, and the
** cancel flag up). Called with the GIL. */
static bool wait_job(job *j) {
  bool interrupted = false;
  for (;;) {
    bool done;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&j->mu);
    if (!j->done) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_nsec += 50 * 1000 * 1000;
      if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
      pthread_cond_timedwait(&j->cv, &j->mu, &t);
    }
    done = j->done;
    pthread_mutex_unlock(&j->mu);
    Py_END_ALLOW_THREADS
    if (done) return interrupted;
    if (!interrupted && PyErr_CheckSignals() < 0) {
      interrupted = true;            /* keep the exception pending; stop the run and wait for it */
      tpu_cancel_request();
    }
  }
}

/* argv (a list of str) as C strings, argv[n] = NULL; NULL with an exception set. */
static char **c_argv(PyObject *list, Py_ssize_t *n) {
  *n = PyList_Size(list);
  char **a = calloc((size_t)*n + 1, sizeof *a);
  if (!a) return (char **)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < *n; i++) {
    const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
    if (!s || !(a[i] = strdup(s))) {
      for (Py_ssize_t k = 0; k < i; k++) free(a[k]);
      free(a);
      if (s) PyErr_NoMemory();
      return NULL;
    }
  }
  return a;
}

static PyObject *run(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *list, *on_step = Py_None;
  if (!PyArg_ParseTuple(args, "O!|O", &PyList_Type, &list, &on_step)) return NULL;
  if (on_step != Py_None && !PyCallable_Check(on_step)) {
    PyErr_SetString(PyExc_TypeError, "on_step must be callable or None");
    return NULL;
  }
  Py_ssize_t n;
  char **argv = c_argv(list, &n);
  if (!argv) return NULL;
  job j = { .call = { .argc = (int)n, .argv = argv }, .on_step = on_step == Py_None ? NULL : on_step };
  if (j.on_step) { j.call.on_step = step; j.call.ud = &j; }
  pthread_mutex_init(&j.mu, NULL);
  pthread_cond_init(&j.cv, NULL);
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&one_call);
  Py_END_ALLOW_THREADS
  tpu_cancel_clear();
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 16u << 20);   /* the program's main thread has 8 MiB; room to spare */
  pthread_t t;
  const int err = pthread_create(&t, &at, worker, &j);
  pthread_attr_destroy(&at);
  bool interrupted = false;
  if (!err) {
    interrupted = wait_job(&j);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(t, NULL);
    Py_END_ALLOW_THREADS
  }
  tpu_cancel_clear();
  pthread_mutex_unlock(&one_call);
  for (Py_ssize_t i = 0; i < n; i++) free(argv[i]);
  free(argv);
  pthread_mutex_destroy(&j.mu);
  pthread_cond_destroy(&j.cv);
  PyObject *ret = NULL;
  if (err) PyErr_Format(PyExc_RuntimeError, "tpusim: cannot start a thread: %s", strerror(err));
  else if (interrupted) {            /* the signal's exception is pending: it wins over the callback's */
    Py_XDECREF(j.exc_type);
    Py_XDECREF(j.exc_value);
    Py_XDECREF(j.exc_tb);
  } else if (j.exc_type) PyErr_Restore(j.exc_type, j.exc_value, j.exc_tb);
  else ret = Py_BuildValue("(izs)", j.rc, j.call.report, j.call.err);
  free(j.call.report);
  return ret;
}

static PyMethodDef METHODS[] = {
  { "run", run, METH_VARARGS,
    "run(argv, on_step=None) -> (status, report_json or None, message)\n\n"
    "Runs `tpusim ARGV...` in this process (argv[0] the command). on_step(step_json) is called\n"
    "after each training step. Ctrl-C stops the run and raises KeyboardInterrupt." },
  { NULL, NULL, 0, NULL }
};

static struct PyModuleDef MODULE = { PyModuleDef_HEAD_INIT, "_tpusim", "tpusim's engine (see the tpusim package)", -1,
                                     METHODS, NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit__tpusim(void);
PyMODINIT_FUNC PyInit__tpusim(void) {
  PyObject *m = PyModule_Create(&MODULE);
  if (m && PyModule_AddStringConstant(m, "version", tpu_version())) { Py_DECREF(m); return NULL; }
  return m;
}
