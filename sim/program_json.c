/*
** program_json.c -- the JSON program format of docs/PROGRAMS.md into a
** tpu_sim_program. It loads through base.h's JSON documents, so every
** error names the file, line:column and the field's path. jansson values
** never outlive the call.
*/
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

/* Field paths are built into fixed buffers; a path too long for them (a
** deeply nested name of hundreds of characters) is cut short in the
** message, which is harmless, so the truncation warning is off here. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

typedef struct pctx {
  tpu_json j;                  /* the document and its one error */
  tpu_sim_program *p;
} pctx;

#define perr(x, path, ...) ((void)tpu_json_fail(&(x)->j, (path), __VA_ARGS__))
/* The object at 'path', for the member readers of base.h. */
static tpu_json_obj at(pctx *x, json_t *o, const char *path) { return (tpu_json_obj){ &x->j, o, path, NULL }; }

/* Rejects keys not in 'allowed' (NULL-terminated). */
static bool only_keys(pctx *x, json_t *o, const char *path, const char *const *allowed) {
  return tpu_json_keys(&(tpu_json_obj){ &x->j, o, path, NULL }, allowed) == TPU_OK;
}
static bool get_int(pctx *x, json_t *o, const char *key, const char *path, long long lo, long long hi,
                    long long *out, bool required) {
  int64_t v = *out;
  tpu_json_obj ob = at(x, o, path);
  if (tpu_json_int(&ob, key, lo, hi, required ? TPU_JSON_REQUIRED : 0, &v) != TPU_OK) return false;
  *out = v;
  return true;
}
static bool get_bool(pctx *x, json_t *o, const char *key, const char *path, bool *out) {
  tpu_json_obj ob = at(x, o, path);
  return tpu_json_bool(&ob, key, out) == TPU_OK;
}
static const char *get_str(pctx *x, json_t *o, const char *key, const char *path, bool required) {
  const char *s = NULL;
  tpu_json_obj ob = at(x, o, path);
  tpu_json_str(&ob, key, required ? TPU_JSON_REQUIRED : 0, &s);
  return s;
}

/* Element i of the array at 'path' (its path written to ep): an object
** whose keys are all in 'keys'. */
static bool element(pctx *x, json_t *e, const char *path, size_t i, const char *const *keys, char *ep, size_t cap) {
  snprintf(ep, cap, "%s[%zu]", path, i);
  if (!json_is_object(e)) { perr(x, ep, "expected an object"); return false; }
  return only_keys(x, e, ep, keys);
}

static bool add_buffers(pctx *x, json_t *arr, const char *path, int core) {
  if (!arr) return true;
  if (!json_is_array(arr)) { perr(x, path, "expected an array of buffers"); return false; }
  static const char *const KEYS[] = { "name", "space", "shape", "dtype", "init", NULL };
  size_t i;
  json_t *b;
  json_array_foreach(arr, i, b) {
    char bp[256], sub[300];
    if (!element(x, b, path, i, KEYS, bp, sizeof bp)) return false;
    const char *name = get_str(x, b, "name", bp, true);
    const char *space = get_str(x, b, "space", bp, true);
    if (!name || !space) { if (!x->j.failed) perr(x, bp, "bad buffer"); return false; }
    snprintf(sub, sizeof sub, "%s.space", bp);
    tpu_sim_space sp;
    if (!strcmp(space, "hbm")) sp = TPU_SIM_HBM;
    else if (!strcmp(space, "vmem")) sp = TPU_SIM_VMEM;
    else { perr(x, sub, "expected \"hbm\" or \"vmem\", got \"%s\"", space); return false; }
    tpu_sim_dtype dt = TPU_SIM_F32;
    const char *dts = get_str(x, b, "dtype", bp, false);
    if (x->j.failed) return false;
    snprintf(sub, sizeof sub, "%s.dtype", bp);
    if (dts && !strcmp(dts, "bf16")) dt = TPU_SIM_BF16;
    else if (dts && strcmp(dts, "f32")) { perr(x, sub, "expected \"f32\" or \"bf16\", got \"%s\"", dts); return false; }
    json_t *sh = json_object_get(b, "shape");
    snprintf(sub, sizeof sub, "%s.shape", bp);
    long long dims[2];
    if (!sh) { tpu_json_missing(&(tpu_json_obj){ &x->j, b, bp, NULL }, "shape", "[rows, cols]"); return false; }
    if (!json_is_array(sh) || json_array_size(sh) != 2) { perr(x, sub, "expected [rows, cols]"); return false; }
    for (int d = 0; d < 2; d++) {
      json_t *v = json_array_get(sh, (size_t)d);
      char dp[320];
      snprintf(dp, sizeof dp, "%s[%d]", sub, d);
      if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > TPU_SIM_MAX_DIM) {
        perr(x, dp, "expected an integer in 1..2147483648 (2^31)");
        return false;
      }
      dims[d] = json_integer_value(v);
    }
    int h = tpu_sim_buffer(x->p, core, name, sp, dt, dims[0], dims[1]);
    if (!h) { perr(x, bp, "%s", tpu_sim_program_error(x->p)); return false; }
    json_t *init = json_object_get(b, "init");
    if (!init) continue;
    snprintf(sub, sizeof sub, "%s.init", bp);
    const size_t n = (size_t)(dims[0] * dims[1]);
    float *v = tpu_malloc(n * sizeof *v);
    if (!v) { perr(x, sub, "out of memory for %zu values", n); return false; }
    bool ok = true;
    if (json_is_string(init) && !strcmp(json_string_value(init), "zeros")) {
      memset(v, 0, n * sizeof *v);
    } else if (json_is_object(init) && json_object_size(init) == 1 && json_object_get(init, "const") &&
               json_is_number(json_object_get(init, "const"))) {
      const float c = (float)json_number_value(json_object_get(init, "const"));
      for (size_t k = 0; k < n; k++) v[k] = c;
    } else if (json_is_object(init) && json_object_size(init) == 1 && json_object_get(init, "iota") &&
               json_is_number(json_object_get(init, "iota"))) {
      const double step = json_number_value(json_object_get(init, "iota"));
      for (size_t k = 0; k < n; k++) v[k] = (float)((double)k * step);
    } else if (json_is_object(init) && json_object_size(init) == 1 && json_is_integer(json_object_get(init, "normal")) &&
               json_integer_value(json_object_get(init, "normal")) >= 0) {
      uint64_t s = (uint64_t)json_integer_value(json_object_get(init, "normal")) * 1000003u + (uint64_t)core;
      tpu_normal_fill(&s, v, n);
    } else if (json_is_array(init) && json_array_size(init) == n) {
      for (size_t k = 0; k < n && ok; k++) {
        json_t *e = json_array_get(init, k);
        if (!json_is_number(e)) {
          char ep[340];
          snprintf(ep, sizeof ep, "%s[%zu]", sub, k);
          perr(x, ep, "expected a number");
          ok = false;
        } else {
          v[k] = (float)json_number_value(e);
        }
      }
    } else {
      perr(x, sub, "expected \"zeros\", {\"const\": X}, {\"iota\": STEP}, {\"normal\": SEED} (N(0,1), seeded "
           "per core) or an array of rows*cols = %zu numbers", n);
      ok = false;
    }
    if (ok && tpu_sim_buffer_init(x->p, core, h, v) != TPU_OK) { perr(x, sub, "out of memory"); ok = false; }
    tpu_free(v);
    if (!ok) return false;
  }
  return true;
}

static int buf_ref(pctx *x, json_t *op, const char *key, const char *path, int core, bool required) {
  const char *nm = get_str(x, op, key, path, required);
  if (!nm) return 0;
  int h = tpu_sim_buffer_find(x->p, core, nm);
  if (!h) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    perr(x, sub, "no buffer named '%s' on core %d", nm, core);
  }
  return h;
}

static bool buf_list(pctx *x, json_t *op, const char *key, const char *path, int core, int *out, int max) {
  json_t *a = json_object_get(op, key);
  char sub[300];
  snprintf(sub, sizeof sub, "%s.%s", path, key);
  if (!a) { tpu_json_missing(&(tpu_json_obj){ &x->j, op, path, NULL }, key, "an array of buffer names"); return false; }
  if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > (size_t)max) {
    perr(x, sub, "expected an array of 1..%d buffer names", max);
    return false;
  }
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *e = json_array_get(a, i);
    char ep[340];
    snprintf(ep, sizeof ep, "%s[%zu]", sub, i);
    if (!json_is_string(e)) { perr(x, ep, "expected a buffer name"); return false; }
    if (!(out[i] = tpu_sim_buffer_find(x->p, core, json_string_value(e)))) {
      perr(x, ep, "no buffer named '%s' on core %d", json_string_value(e), core);
      return false;
    }
  }
  return true;
}

#define X(id, name, json, unit, track, row) json,
static const bool KIND_JSON[TPU_SIM_NKINDS] = {   /* the op table's json column */
#include "sim/ops.def"
};
#undef X

/* The kind an op's "op" names: a kind's name where the op table says the
** format uses it, else a collective's (*coll gets which); -1 for neither. */
static int kind_of(const char *s, tpu_sim_coll *coll) {
  for (int k = 0; k < TPU_SIM_NKINDS; k++)
    if (KIND_JSON[k] && !strcmp(s, tpu_sim_kind_name((tpu_sim_kind)k))) return k;
  for (int c = 0; c <= TPU_SIM_BROADCAST; c++)
    if (!strcmp(s, tpu_sim_coll_name((tpu_sim_coll)c))) {
      *coll = (tpu_sim_coll)c;
      return TPU_SIM_COLLECTIVE;
    }
  return -1;
}

/* Every "op" kind_of knows, for messages: "dma, matmul, ... or broadcast". */
static const char *op_names(char *buf, size_t cap) {
  const char *nm[TPU_SIM_NKINDS + TPU_SIM_BROADCAST + 1];
  int n = 0;
  for (int k = 0; k < TPU_SIM_NKINDS; k++)
    if (KIND_JSON[k]) nm[n++] = tpu_sim_kind_name((tpu_sim_kind)k);
  for (int c = 0; c <= TPU_SIM_BROADCAST; c++) nm[n++] = tpu_sim_coll_name((tpu_sim_coll)c);
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", nm[i]);
  return buf;
}

/* The fields of a VPU op: "fn", "in", "out" and its "params" (into *prm,
** which so->params then points at); errors set on x. */
static void parse_vpu(pctx *x, json_t *o, const char *op, int core, tpu_sim_op *so, tpu_vpu_params *prm) {
  char sub[300];
  const char *fn = get_str(x, o, "fn", op, true);   /* the name, only here: the op is an enum inside */
  if (fn && !tpu_vpu_op_parse(fn, &so->vpu_op)) {
    snprintf(sub, sizeof sub, "%s.fn", op);
    perr(x, sub, "unknown VPU op \"%s\" (docs/VPU.md lists them: add, mul, relu, exp, softmax_xent, adam, ...)", fn);
  }
  if (fn && !x->j.failed && buf_list(x, o, "in", op, core, so->in, TPU_SIM_MAX_IN))
    buf_list(x, o, "out", op, core, so->out, TPU_SIM_MAX_OUT);
  json_t *pj = json_object_get(o, "params");
  if (pj && !x->j.failed) {
    static const char *const PK[] = { "alpha", "lr", "momentum", "beta1", "beta2", "eps", "step", NULL };
    snprintf(sub, sizeof sub, "%s.params", op);
    *prm = tpu_vpu_params_default();
    if (!json_is_object(pj)) {
      perr(x, sub, "expected an object of VPU parameters");
    } else if (only_keys(x, pj, sub, PK)) {
      float *dst[] = { &prm->alpha, &prm->lr, &prm->momentum, &prm->beta1, &prm->beta2, &prm->eps };
      for (int k = 0; k < 6 && !x->j.failed; k++) {
        json_t *v = json_object_get(pj, PK[k]);
        char kp[340];
        snprintf(kp, sizeof kp, "%s.%s", sub, PK[k]);
        if (v && !json_is_number(v)) perr(x, kp, "expected a number");
        else if (v) *dst[k] = (float)json_number_value(v);
      }
      long long stp = prm->step;
      if (!x->j.failed && get_int(x, pj, "step", sub, 1, (long long)1 << 40, &stp, false)) prm->step = stp;
      so->params = prm;
    }
  }
}

/* Op i of the list at 'path' into *so (its params, when it has some, into
** *prm, which *so then points at); false with the error set. Names point
** into the document. */
static bool parse_op(pctx *x, json_t *o, const char *path, size_t i, int core, tpu_sim_op *so, tpu_vpu_params *prm) {
  static const char *const KEYS[] = { "op", "name", "step", "src", "dst", "a", "b", "trans_a", "trans_b",
                                      "accumulate", "precision", "fn", "in", "out", "params", "root", NULL };
  char op[256], sub[300];
  if (!element(x, o, path, i, KEYS, op, sizeof op)) return false;
  const char *kind = get_str(x, o, "op", op, true);
  if (!kind) return false;
  snprintf(sub, sizeof sub, "%s.op", op);
  *so = (tpu_sim_op){ 0 };
  so->name = get_str(x, o, "name", op, false);
  long long step = 0;
  if (!get_int(x, o, "step", op, 0, 1000000, &step, false)) return false;
  so->step = (int)step;
  tpu_sim_coll coll = TPU_SIM_ALL_REDUCE;
  const int k = kind_of(kind, &coll);
  if (k < 0) {
    char names[160];
    perr(x, sub, "unknown op \"%s\"; expected %s", kind, op_names(names, sizeof names));
    return false;
  }
  so->kind = (tpu_sim_kind)k;
  switch (so->kind) {
  case TPU_SIM_DMA:
    so->src = buf_ref(x, o, "src", op, core, true);
    so->dst = so->src ? buf_ref(x, o, "dst", op, core, true) : 0;
    break;
  case TPU_SIM_MATMUL: {
    so->a = buf_ref(x, o, "a", op, core, true);
    so->b = so->a ? buf_ref(x, o, "b", op, core, true) : 0;
    so->dst = so->b ? buf_ref(x, o, "dst", op, core, true) : 0;
    if (x->j.failed || !get_bool(x, o, "trans_a", op, &so->trans_a) || !get_bool(x, o, "trans_b", op, &so->trans_b) ||
        !get_bool(x, o, "accumulate", op, &so->accumulate))
      return false;
    const char *pr = get_str(x, o, "precision", op, false);
    if (pr && !tpu_precision_parse(pr, &so->precision)) {
      snprintf(sub, sizeof sub, "%s.precision", op);
      perr(x, sub, "expected \"bf16\", \"bf16x3\" or \"bf16x6\", got \"%s\"", pr);
    }
    break;
  }
  case TPU_SIM_VPU:
    parse_vpu(x, o, op, core, so, prm);
    break;
  case TPU_SIM_INFEED:
    so->dst = buf_ref(x, o, "dst", op, core, true);
    break;
  case TPU_SIM_COLLECTIVE: {
    so->coll = coll;
    so->src = buf_ref(x, o, "src", op, core, true);
    so->dst = so->src ? buf_ref(x, o, "dst", op, core, true) : 0;
    long long root = 0;
    if (!x->j.failed && !get_int(x, o, "root", op, 0, x->p->cores - 1, &root, false)) return false;
    so->root = (int)root;
    break;
  }
  }
  return !x->j.failed;
}

/* The op list at 'path' onto a core, 'repeat' times: each op is read from
** the document once, in the first iteration (and added as it is read, so
** errors come in the list's order), then added again once per further
** iteration, its step shifted by it * (max step + 1). */
static bool add_ops(pctx *x, json_t *arr, const char *path, int core, long long repeat) {
  if (!json_is_array(arr)) { perr(x, path, "expected an array of ops"); return false; }
  const size_t n = json_array_size(arr);
  tpu_sim_op *ops = tpu_malloc((n ? n : 1) * sizeof *ops);
  tpu_vpu_params *prm = tpu_malloc((n ? n : 1) * sizeof *prm);
  bool ok = ops && prm;
  if (!ok) perr(x, path, "out of memory for %zu ops", n);
  long long maxstep = 0;
  for (long long it = 0; it < repeat && ok; it++) {
    for (size_t i = 0; i < n && ok; i++) {
      if (it == 0) {
        if (!(ok = parse_op(x, json_array_get(arr, i), path, i, core, &ops[i], &prm[i]))) break;
        if (ops[i].params) ops[i].params = &prm[i];
        if (ops[i].step > maxstep) maxstep = ops[i].step;
      }
      tpu_sim_op so = ops[i];
      so.step = (int)(it * (maxstep + 1) + ops[i].step);
      if (tpu_sim_add_op(x->p, core, &so, NULL) != TPU_OK) {
        char op[256];
        snprintf(op, sizeof op, "%s[%zu]", path, i);
        perr(x, op, "%s", tpu_sim_program_error(x->p));
        ok = false;
      }
    }
  }
  tpu_free(ops);
  tpu_free(prm);
  return ok;
}

static bool set_infeed(pctx *x, json_t *inf, const char *path, int core) {
  if (!inf) return true;
  static const char *const KEYS[] = { "ready_cycles", "first", "interval", "batches", NULL };
  if (!json_is_object(inf)) { perr(x, path, "expected an object"); return false; }
  if (!only_keys(x, inf, path, KEYS)) return false;
  json_t *rc = json_object_get(inf, "ready_cycles");
  uint64_t *r = NULL;
  long long n = 0;
  if (rc) {
    static const char *const other[] = { "batches", "first", "interval" };
    for (int k = 0; k < 3; k++)
      if (json_object_get(inf, other[k])) {
        char sub[300];
        snprintf(sub, sizeof sub, "%s.%s", path, other[k]);
        perr(x, sub, "give either \"ready_cycles\" (each batch's cycle) or \"batches\" with \"first\" and "
             "\"interval\", not both");
        return false;
      }
    char sub[300];
    snprintf(sub, sizeof sub, "%s.ready_cycles", path);
    if (!json_is_array(rc)) { perr(x, sub, "expected an array of cycles"); return false; }
    n = (long long)json_array_size(rc);
    if (n && !(r = tpu_malloc((size_t)n * sizeof *r))) { perr(x, sub, "out of memory"); return false; }
    for (long long i = 0; i < n; i++) {
      json_t *e = json_array_get(rc, (size_t)i);
      if (!json_is_integer(e) || json_integer_value(e) < 0 || (uint64_t)json_integer_value(e) > TPU_SIM_MAX_CYCLES ||
          (i && (uint64_t)json_integer_value(e) < r[i - 1])) {
        char ep[340];
        snprintf(ep, sizeof ep, "%s[%lld]", sub, i);
        perr(x, ep, "expected a cycle count in 0..2^53 (%llu) and >= the previous batch's",
             (unsigned long long)TPU_SIM_MAX_CYCLES);
        tpu_free(r);
        return false;
      }
      r[i] = (uint64_t)json_integer_value(e);
    }
  } else {
    long long first = 0, interval = 0;
    if (!get_int(x, inf, "batches", path, 0, 100000000, &n, true) ||
        !get_int(x, inf, "first", path, 0, (long long)1 << 50, &first, false) ||
        !get_int(x, inf, "interval", path, 0, (long long)1 << 40, &interval, false))
      return false;
    if (n > 1 && (uint64_t)interval > (TPU_SIM_MAX_CYCLES - (uint64_t)first) / (uint64_t)(n - 1)) {
      char sub[300];
      snprintf(sub, sizeof sub, "%s.interval", path);
      perr(x, sub, "the last of %lld batches would be ready at cycle %.4g (first + (batches - 1) * interval), past "
           "the longest run the engine times (2^53 cycles)", n, (double)first + (double)(n - 1) * (double)interval);
      return false;
    }
    if (n && !(r = tpu_malloc((size_t)n * sizeof *r))) { perr(x, path, "out of memory"); return false; }
    for (long long i = 0; i < n; i++) r[i] = (uint64_t)first + (uint64_t)i * (uint64_t)interval;
  }
  tpu_status st = tpu_sim_infeed(x->p, core, n, r);
  tpu_free(r);
  if (st != TPU_OK) { perr(x, path, "%s", tpu_sim_program_error(x->p)); return false; }
  return true;
}

tpu_status tpu_sim_program_parse(const char *text, const char *file, int cores, tpu_sim_program **out,
                                 char *err, size_t errcap) {
  *out = NULL;
  const unsigned long failed = tpu_alloc_failures();
  pctx x = { .j = { .where = file, .code = TPU_ERR_INPUT, .field_prefix = true, .err = err, .errcap = errcap } };
  tpu_status st = tpu_json_parse(&x.j, text, "a program, see docs/PROGRAMS.md");
  if (st != TPU_OK) goto out;
  st = TPU_ERR_INPUT;
  json_t *root = x.j.root;
  static const char *const KEYS[] = { "description", "cores", "repeat", "buffers", "ops", "infeed", "per_core", NULL };
  if (!only_keys(&x, root, "", KEYS)) goto out;
  const char *description;
  if (tpu_json_str(&(tpu_json_obj){ &x.j, root, "", NULL }, "description", 0, &description)) goto out;
  long long want = cores, repeat = 1;
  if (!get_int(&x, root, "cores", "", 1, TPU_MAX_CORES, &want, false)) goto out;
  if (want != cores) {
    perr(&x, "cores", "the program is for %lld core(s) but the chip has %d (pick another --chip or --set cores=%lld)",
         want, cores, want);
    goto out;
  }
  if (!get_int(&x, root, "repeat", "", 1, 1000000, &repeat, false)) goto out;
  json_t *ops = json_object_get(root, "ops"), *pc = json_object_get(root, "per_core");
  if (!ops == !pc) {
    perr(&x, NULL, "give either \"ops\" (the same program on every core) or \"per_core\" (one entry per core), "
         "not %s", ops ? "both" : "neither");
    goto out;
  }
  if (pc && (!json_is_array(pc) || json_array_size(pc) != (size_t)cores)) {
    perr(&x, "per_core", "expected an array of %d entries (one per core)", cores);
    goto out;
  }
  /* What it expands to, from the lists' lengths, before anything is built */
  long long nops = 0, maxstep = 0;
  for (int c = 0; c < (pc ? cores : 1); c++) {
    json_t *a = pc ? json_object_get(json_array_get(pc, (size_t)c), "ops") : ops;
    if (!json_is_array(a)) continue;   /* its error comes when it is read */
    nops += (long long)json_array_size(a);
    for (size_t i = 0; i < json_array_size(a); i++) {
      json_t *sj = json_object_get(json_array_get(a, i), "step");
      if (json_is_integer(sj) && json_integer_value(sj) > maxstep) maxstep = json_integer_value(sj);
    }
  }
  const long long total = nops * repeat * (pc ? 1 : cores);
  if (total > TPU_SIM_MAX_OPS) {
    char fig[160];
    if (pc) snprintf(fig, sizeof fig, "%lld ops over the cores' lists x repeat %lld", nops, repeat);
    else snprintf(fig, sizeof fig, "%lld ops x repeat %lld x %d cores", nops, repeat, cores);
    perr(&x, repeat > 1 ? "repeat" : NULL, "the program expands to %lld ops (%s), more than the engine's limit of %lld "
         "ops in a program", total, fig, (long long)TPU_SIM_MAX_OPS);
    goto out;
  }
  if (maxstep > 1000000) maxstep = 1000000;   /* larger steps are refused when read */
  if ((maxstep + 1) * repeat > TPU_SIM_MAX_STEPS) {
    perr(&x, "repeat", "the program's steps would reach %lld (repeat %lld x %lld steps per iteration); steps are "
         "0..%d", (maxstep + 1) * repeat - 1, repeat, maxstep + 1, TPU_SIM_MAX_STEPS - 1);
    goto out;
  }
  if (tpu_sim_program_create(cores, &x.p) != TPU_OK) { snprintf(err, errcap, "out of memory"); st = TPU_ERR_NOMEM; goto out; }
  for (int c = 0; c < cores; c++) {
    if (!add_buffers(&x, json_object_get(root, "buffers"), "buffers", c)) goto out;
    if (!set_infeed(&x, json_object_get(root, "infeed"), "infeed", c)) goto out;
    if (pc) {
      char path[64];
      json_t *e = json_array_get(pc, (size_t)c);
      static const char *const PKEYS[] = { "buffers", "ops", "infeed", NULL };
      if (!element(&x, e, "per_core", (size_t)c, PKEYS, path, sizeof path)) goto out;
      char sub[96];
      snprintf(sub, sizeof sub, "%s.buffers", path);
      if (!add_buffers(&x, json_object_get(e, "buffers"), sub, c)) goto out;
      snprintf(sub, sizeof sub, "%s.infeed", path);
      if (!set_infeed(&x, json_object_get(e, "infeed"), sub, c)) goto out;
      snprintf(sub, sizeof sub, "%s.ops", path);
      json_t *eo = json_object_get(e, "ops");
      if (!eo) { tpu_json_missing(&(tpu_json_obj){ &x.j, e, path, NULL }, "ops", "an array of ops"); goto out; }
      if (!add_ops(&x, eo, sub, c, repeat)) goto out;
    } else if (!add_ops(&x, ops, "ops", c, repeat)) {
      goto out;
    }
  }
  *out = x.p;
  x.p = NULL;
  st = TPU_OK;
out:
  /* a failure while an allocation failed is that failure (the builders
  ** report theirs through the field they were building) */
  if (st != TPU_OK && tpu_alloc_failures() != failed) st = TPU_ERR_NOMEM;
  tpu_sim_program_destroy(x.p);
  tpu_json_free(&x.j);
  return st;
}
