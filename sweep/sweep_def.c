/*
** sweep_def.c -- a sweep's definition: its command (from the caller's
** table), its fixed options and axes, and the points they make; the
** design is at the top of sweep.h.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_int.h"

tpu_status sweep_fail(char *err, size_t cap, tpu_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return st;
}

const char *sweep_path(char *buf, size_t cap, const char *dir, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
  return buf;
}

void sweep_capture(const tpu_sweep_env *env, char *buf, size_t cap) {
  if (env->capture) env->capture(buf, cap);
}

/* {==================================================================
** The commands
** ================================================================== */
const tpu_sweep_cmd *sweep_cmd_find(const tpu_sweep_env *env, const char *name) {
  for (int k = 0; k < env->ncmds; k++)
    if (!strcmp(name, env->cmds[k]->name)) return env->cmds[k];
  return NULL;
}

const char *sweep_cmd_list(const tpu_sweep_env *env, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < env->ncmds && n < cap; k++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", k == 0 ? "" : k == env->ncmds - 1 ? " or " : ", ",
                          env->cmds[k]->name);
  return buf;
}
/* }================================================================== */

/* {==================================================================
** The definition
** ================================================================== */

/* Splits "a,b,c" into a new axis (values are copies). */
static tpu_status add_axis(tpu_sweep_def *d, const char *flag, const char *name, size_t namelen, const char *prefix,
                           const char *list, char *err, size_t cap) {
  if (d->naxes == TPU_SWEEP_MAX_AXES) return sweep_fail(err, cap, TPU_ERR_INPUT, "at most %d axes", TPU_SWEEP_MAX_AXES);
  tpu_sweep_axis *a = &d->axes[d->naxes];
  int n = 1;
  for (const char *c = list; *c; c++) n += *c == ',';
  a->name = strndup(name, namelen);
  a->prefix = prefix;
  a->flag = flag;
  a->values = calloc((size_t)n, sizeof *a->values);
  if (!a->name || !a->values) return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
  d->naxes++;
  for (const char *c = list;; c++) {
    const char *e = strchr(c, ',');
    const size_t len = e ? (size_t)(e - c) : strlen(c);
    if (!len) return sweep_fail(err, cap, TPU_ERR_INPUT, "%s %s: an empty value in the list", flag, list);
    if (!(a->values[a->nvalues++] = strndup(c, len))) return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
    if (!e) break;
    c = e;
  }
  for (int i = 0; i < d->naxes - 1; i++)
    if (!strcmp(d->axes[i].name, a->name))
      return sweep_fail(err, cap, TPU_ERR_INPUT, "axis '%s' is given twice", a->name);
  if (d->npoints > 100000000L / a->nvalues) return sweep_fail(err, cap, TPU_ERR_INPUT, "more than 100000000 points");
  d->npoints *= a->nvalues;
  return TPU_OK;
}

/* One option of the command: "--name", "--name=value" or "--name value". */
static tpu_status add_option(tpu_sweep_def *d, int argc, char **argv, int *i, char *err, size_t cap) {
  const char *tok = argv[*i], *eq = strchr(tok, '=');
  if (strncmp(tok, "--", 2) || tok[2] == 0)
    return sweep_fail(err, cap, TPU_ERR_INPUT, "'%s': expected an option of %s (--NAME VALUE or --NAME V1,V2,...)", tok,
                      d->cmd->name);
  if (!strcmp(tok, "--json") || !strcmp(tok, "--help"))
    return sweep_fail(err, cap, TPU_ERR_INPUT, "%s is not a point's option (every point runs with --json)", tok);
  if (d->nargs + 2 > TPU_SWEEP_MAX_ARGS)
    return sweep_fail(err, cap, TPU_ERR_INPUT, "too many options (at most %d)", TPU_SWEEP_MAX_ARGS);
  const char *value = NULL;
  char *flag = eq ? strndup(tok, (size_t)(eq - tok)) : strdup(tok);
  if (!flag) return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
  if (eq) value = eq + 1;
  else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2)) value = argv[++*i];
  d->owned[d->nargs] = true;   /* the flag is a copy; the value points into argv */
  d->args[d->nargs++] = flag;
  if (value) d->args[d->nargs++] = value;
  if (value && strchr(value, ',')) {
    if (!strcmp(flag, "--set")) {
      const char *keq = strchr(value, '=');
      if (!keq || strchr(value, ',') < keq)
        return sweep_fail(err, cap, TPU_ERR_INPUT, "--set %s: expected KEY=V1,V2,...", value);
      char *prefix = strndup(value, (size_t)(keq - value) + 1);
      if (!prefix) return sweep_fail(err, cap, TPU_ERR_NOMEM, "out of memory");
      return add_axis(d, flag, value, (size_t)(keq - value), prefix, keq + 1, err, cap);
    }
    return add_axis(d, flag, flag + 2, strlen(flag + 2), "", value, err, cap);
  }
  d->fixed[d->nfixed++] = flag;
  if (value) d->fixed[d->nfixed++] = value;
  return TPU_OK;
}

tpu_status tpu_sweep_def_parse(tpu_sweep_def *d, const tpu_sweep_env *env, int argc, char **argv, char *err,
                               size_t errcap) {
  char list[512];
  memset(d, 0, sizeof *d);
  d->env = env;
  d->npoints = 1;
  d->shard = d->nshards = 1;
  if (argc < 1)
    return sweep_fail(err, errcap, TPU_ERR_INPUT, "give the command to sweep: %s (tpusim sweep --help)",
                      sweep_cmd_list(env, list, sizeof list));
  if (!(d->cmd = sweep_cmd_find(env, argv[0])))
    return sweep_fail(err, errcap, TPU_ERR_INPUT, "'%s': expected the command to sweep, %s", argv[0],
                      sweep_cmd_list(env, list, sizeof list));
  tpu_status st = TPU_OK;
  for (int i = 1; i < argc && !st; i++) st = add_option(d, argc, argv, &i, err, errcap);
  return st;
}

void tpu_sweep_def_free(tpu_sweep_def *d) {
  for (int i = 0; i < d->nargs; i++)
    if (d->owned[i]) free((char *)d->args[i]);   /* not by its "--": a value may start so too */
  for (int a = 0; a < d->naxes; a++) {
    for (int v = 0; v < d->axes[a].nvalues; v++) free(d->axes[a].values[v]);
    free(d->axes[a].values);
    free((char *)d->axes[a].name);
    if (d->axes[a].prefix[0]) free((char *)d->axes[a].prefix);
  }
  d->nargs = d->naxes = 0;
}

const char *tpu_sweep_point_value(const tpu_sweep_def *d, long p, int a) {
  long stride = 1;
  for (int b = d->naxes - 1; b > a; b--) stride *= d->axes[b].nvalues;
  return d->axes[a].values[(p / stride) % d->axes[a].nvalues];
}

int tpu_sweep_point_argv(const tpu_sweep_def *d, long p, char **argv, int cap, char *bufs, size_t bufcap) {
  int n = 0;
  argv[n++] = (char *)d->cmd->name;
  if (d->cmd->threads) {         /* the points are the parallelism; a point's own --threads wins */
    argv[n++] = "--threads";
    argv[n++] = "1";
  }
  for (int i = 0; i < d->nfixed && n < cap - 1; i++) argv[n++] = (char *)d->fixed[i];
  size_t used = 0;
  for (int a = 0; a < d->naxes && n < cap - 3; a++) {
    argv[n++] = (char *)d->axes[a].flag;
    const int w = snprintf(bufs + used, bufcap - used, "%s%s", d->axes[a].prefix, tpu_sweep_point_value(d, p, a));
    argv[n++] = bufs + used;
    used += (size_t)w + 1 < bufcap - used ? (size_t)w + 1 : 0;
  }
  argv[n++] = "--json";
  argv[n] = NULL;
  return n;
}

json_t *sweep_def_json(const tpu_sweep_def *d) {
  json_t *args = json_array(), *axes = json_array();
  for (int i = 0; i < d->nargs; i++) json_array_append_new(args, json_string(d->args[i]));
  for (int a = 0; a < d->naxes; a++) json_array_append_new(axes, json_string(d->axes[a].name));
  return json_pack("{s:s,s:o,s:o,s:I}", "command", d->cmd->name, "args", args, "axes", axes,
                   "points", (json_int_t)d->npoints);
}
/* }================================================================== */
