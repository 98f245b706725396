/*
** sweep_file.c -- `tpusim sweep --file FILE`: a sweep described in JSON
** (docs/SWEEPS.md), turned into the very argv the command line would give,
** so a file sweep and the same command-line sweep are one definition:
**
**   { "command": "train",
**     "options": { "model": "cnn", "level": "timing", "set": { "mxu.rows": 64 } },
**     "axes": [ { "option": "batch", "values": [32, 64, 128] },
**               { "set": "hbm.bandwidth_gb_per_s", "values": [300, 600] } ] }
**
** Options are the command's long names without the dashes; true is a flag,
** false leaves it out. Errors name the file, line:column and field.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_int.h"

typedef struct toks { tpu_sweep_file *f; tpu_json *doc; const tpu_sweep_env *env; } toks;

static int push(tpu_sweep_file *f, char *s) {
  if (!s) return -1;
  if (f->argc == TPU_SWEEP_MAX_ARGS) { free(s); return -1; }
  f->argv[f->argc++] = s;
  return 0;
}

/* A scalar as text into buf; false when it is not a string or number. */
static bool scalar(const json_t *v, char *buf, size_t cap) {
  if (json_is_string(v)) snprintf(buf, cap, "%s", json_string_value(v));
  else if (json_is_integer(v)) snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) snprintf(buf, cap, "%.17g", json_real_value(v));
  else return false;
  return !strchr(buf, ',');
}

static tpu_status options(toks *t, json_t *opts) {
  const char *k;
  json_t *v;
  char path[256], val[512], flag[300];
  json_object_foreach(opts, k, v) {
    snprintf(path, sizeof path, "options.%s", k);
    if (!strcmp(k, "set") && json_is_object(v)) {
      const char *sk;
      json_t *sv;
      json_object_foreach(v, sk, sv) {
        snprintf(path, sizeof path, "options.set.%s", sk);
        if (!scalar(sv, val, sizeof val)) return tpu_json_fail(t->doc, path, "expected a string or number without commas, got %s", tpu_json_type(sv));
        char kv[900];
        snprintf(kv, sizeof kv, "%s=%s", sk, val);
        if (push(t->f, strdup("--set")) || push(t->f, strdup(kv))) return tpu_json_fail(t->doc, path, "too many options");
      }
      continue;
    }
    snprintf(flag, sizeof flag, "--%s", k);
    if (json_is_false(v)) continue;
    if (json_is_true(v)) { if (push(t->f, strdup(flag))) return tpu_json_fail(t->doc, path, "too many options"); continue; }
    if (!scalar(v, val, sizeof val))
      return tpu_json_fail(t->doc, path, "expected a string, number or boolean without commas, got %s", tpu_json_type(v));
    if (push(t->f, strdup(flag)) || push(t->f, strdup(val))) return tpu_json_fail(t->doc, path, "too many options");
  }
  return TPU_OK;
}

/* Axis i (its "option" opt or its "set" key) is the only axis of its
** option: as argv, an axis given again with one value would be a fixed
** option the axis silently overrides. (A fixed option in "options" that an
** axis overrides is allowed, as on the command line.) */
static tpu_status axis_unique(toks *t, const char *path, size_t i, const char *opt, const char *set) {
  const json_t *axes = json_object_get(t->doc->root, "axes");
  const char *kind = opt ? "option" : "set", *name = opt ? opt : set;
  char field[80];
  snprintf(field, sizeof field, "%s.%s", path, kind);
  for (size_t j = 0; j < i; j++) {
    const char *other = json_string_value(json_object_get(json_array_get(axes, j), kind));
    if (other && !strcmp(other, name))
      return tpu_json_fail(t->doc, field, "'%s' is already axes[%zu]; one axis per option, its values in one list",
                           name, j);
  }
  return TPU_OK;
}

/* One axis: {"option": NAME, "values": [...]} or {"set": KEY, "values": [...]}. */
static tpu_status axis(toks *t, json_t *a, size_t i) {
  char path[64], list[4096], val[512];
  snprintf(path, sizeof path, "axes[%zu]", i);
  tpu_json_obj o = { t->doc, a, path, NULL };
  static const char *const keys[] = { "option", "set", "values", NULL };
  const char *opt = NULL, *set = NULL;
  tpu_status st;
  if (!json_is_object(a)) return tpu_json_fail(t->doc, path, "expected an object like {\"option\": \"batch\", \"values\": [32, 64]}, got %s", tpu_json_type(a));
  if ((st = tpu_json_keys(&o, keys)) || (st = tpu_json_str(&o, "option", 0, &opt)) || (st = tpu_json_str(&o, "set", 0, &set))) return st;
  if (!opt == !set) return tpu_json_fail(t->doc, path, "give one of \"option\" and \"set\"");
  if ((st = axis_unique(t, path, i, opt, set))) return st;
  const json_t *vs = json_object_get(a, "values");
  if (!json_is_array(vs) || !json_array_size(vs)) return tpu_json_fail_member(&o, "values", "expected a non-empty array of values");
  size_t n = (size_t)snprintf(list, sizeof list, "%s%s", set ? set : "", set ? "=" : "");
  for (size_t k = 0; k < json_array_size(vs); k++) {
    char vp[96];
    snprintf(vp, sizeof vp, "%s.values[%zu]", path, k);
    if (!scalar(json_array_get(vs, k), val, sizeof val)) return tpu_json_fail(t->doc, vp, "expected a string or number without commas");
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? "," : "", val);
  }
  if (n >= sizeof list) return tpu_json_fail(t->doc, path, "values too long");
  char flag[300];
  snprintf(flag, sizeof flag, "--%s", set ? "set" : opt);
  if (push(t->f, strdup(flag)) || push(t->f, strdup(list))) return tpu_json_fail(t->doc, path, "too many options");
  return TPU_OK;
}

static tpu_status convert(toks *t) {
  tpu_json_obj root = { t->doc, t->doc->root, "", NULL };
  static const char *const keys[] = { "command", "options", "axes", NULL };
  const char *cmd = NULL;
  char list[512];
  tpu_status st;
  if ((st = tpu_json_keys(&root, keys)) || (st = tpu_json_str(&root, "command", TPU_JSON_REQUIRED, &cmd))) return st;
  if (!sweep_cmd_find(t->env, cmd))
    return tpu_json_fail(t->doc, "command", "expected the command to sweep, %s, got '%s'",
                         sweep_cmd_list(t->env, list, sizeof list), cmd);
  if (push(t->f, strdup(cmd))) return tpu_json_fail(t->doc, "command", "out of memory");
  json_t *opts = json_object_get(t->doc->root, "options"), *axes = json_object_get(t->doc->root, "axes");
  if (opts && !json_is_object(opts)) return tpu_json_fail(t->doc, "options", "expected an object, got %s", tpu_json_type(opts));
  if (opts && (st = options(t, opts))) return st;
  if (axes && !json_is_array(axes)) return tpu_json_fail(t->doc, "axes", "expected an array, got %s", tpu_json_type(axes));
  for (size_t i = 0; i < json_array_size(axes); i++)
    if ((st = axis(t, json_array_get(axes, i), i))) return st;
  return TPU_OK;
}

tpu_status tpu_sweep_file_load(const char *path, const tpu_sweep_env *env, tpu_sweep_file *f, char *err,
                               size_t errcap) {
  char msg[1024];
  char *text;
  tpu_status st = tpu_json_read_file(path, &text, msg, sizeof msg);
  if (st == TPU_ERR_IO) return sweep_fail(err, errcap, TPU_ERR_INPUT, "--file %s: cannot read: %s", path, strerror(errno));
  if (st) return sweep_fail(err, errcap, st, "--file %s", msg);
  tpu_json doc = { .where = path, .err = err, .errcap = errcap, .field_prefix = true };
  toks t = { f, &doc, env };
  st = tpu_json_parse(&doc, text, "a sweep");
  if (!st) st = convert(&t);
  tpu_json_free(&doc);
  tpu_free(text);
  return st;
}

void tpu_sweep_file_free(tpu_sweep_file *f) {
  for (int i = 0; i < f->argc; i++) free(f->argv[i]);
  f->argc = 0;
}
