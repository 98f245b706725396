/*
** json.c -- the one JSON loader of tpusim (base.h, "JSON documents"):
** jansson parses, tpu_json_locate finds the line and column of the value at
** fault, and the member readers word their messages the same way for every
** format (chips, programs, pipelines, models).
*/
#include "base/base.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Paths and labels are built into fixed buffers; one too long for them is
** cut short in the message, which is harmless. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* {==================================================================
** Documents and their one error
** ================================================================== */
static tpu_status vfail(tpu_json *j, const char *at, const char *field, const char *fmt, va_list ap) {
  if (j->failed) return j->code;
  j->failed = true;
  if (!j->err || !j->errcap) return j->code;
  char msg[1024], pos[32] = "";
  vsnprintf(msg, sizeof msg, fmt, ap);
  int line = 0, col = 0;
  char mapped[512];
  if (at && j->map_path) at = j->map_path(j->map_ud, at, mapped, sizeof mapped);
  if (at && j->text) tpu_json_locate(j->text, at, &line, &col);
  if (line > 0 && !j->generated) snprintf(pos, sizeof pos, ":%d:%d", line, col);
  if (field) snprintf(j->err, j->errcap, "%s%s: field '%s': %s", j->where, pos, field, msg);
  else snprintf(j->err, j->errcap, "%s%s: %s", j->where, pos, msg);
  return j->code;
}

static tpu_status failf(tpu_json *j, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tpu_status failf(tpu_json *j, const char *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tpu_status st = vfail(j, at, NULL, fmt, ap);
  va_end(ap);
  return st;
}

tpu_status tpu_json_fail(tpu_json *j, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tpu_status st = vfail(j, path, j->field_prefix && path && *path ? path : NULL, fmt, ap);
  va_end(ap);
  return st;
}

tpu_status tpu_json_read_file(const char *path, char **text, char *err, size_t errcap) {
  return tpu_read_text(path, "JSON text", text, err, errcap);
}

tpu_status tpu_read_text(const char *path, const char *what, char **text, char *err, size_t errcap) {
  size_t n = 0;
  *text = tpu_read_file(path, &n);
  if (!*text) {
    const int e = errno;
    if (e == ENOMEM) snprintf(err, errcap, "%s: out of memory", path);
    else snprintf(err, errcap, "%s: cannot read: %s", path, strerror(e));
    errno = e;
    return e == ENOMEM ? TPU_ERR_NOMEM : TPU_ERR_IO;
  }
  const char *nul = memchr(*text, 0, n);
  if (nul) {
    int line = 1, col = 1;
    for (const char *p = *text; p < nul; p++) {
      if (*p == '\n') { line++; col = 1; } else if ((*p & 0xC0) != 0x80) col++;
    }
    snprintf(err, errcap, "%s:%d:%d: contains a NUL byte; expected %s", path, line, col, what);
    tpu_free(*text);
    *text = NULL;
    return TPU_ERR_INPUT;
  }
  return TPU_OK;
}

tpu_status tpu_json_parse(tpu_json *j, const char *text, const char *what) {
  if (j->code == TPU_OK) j->code = TPU_ERR_CONFIG;
  if (!j->noun) j->noun = "field";
  j->text = text;
  j->failed = false;
  json_error_t je;
  const unsigned long failed = tpu_alloc_failures();
  j->root = tpu_json_decode(text, JSON_REJECT_DUPLICATES, &je);
  /* jansson turns some allocation failures into syntax errors: an
  ** allocation that failed meanwhile is an out-of-memory error, whatever
  ** jansson says (its decoder allocates outside the hook: base.c) */
  if (tpu_alloc_failures() != failed || (!j->root && json_error_code(&je) == json_error_out_of_memory)) {
    json_decref(j->root);
    j->root = NULL;
    snprintf(j->err, j->errcap, "%s: out of memory", j->where);
    j->failed = true;
    return TPU_ERR_NOMEM;
  }
  if (!j->root) {
    snprintf(j->err, j->errcap, "%s:%d:%d: malformed JSON: %s", j->where, je.line, je.column, je.text);
    j->failed = true;
    return j->code;
  }
  if (!json_is_object(j->root)) return tpu_json_fail(j, "", "expected a JSON object (%s)", what);
  return TPU_OK;
}

void tpu_json_free(tpu_json *j) {
  json_decref(j->root);
  j->root = NULL;
}

const char *tpu_json_type(const json_t *v) {
  switch (v ? json_typeof(v) : JSON_NULL) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE: case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}
/* }================================================================== */

/* {==================================================================
** Members
** ================================================================== */
static void member_path(const tpu_json_obj *o, const char *key, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", o->path, *o->path ? "." : "", key);
}
static void member_label(const tpu_json_obj *o, const char *key, char *buf, size_t cap) {
  if (o->label) {
    snprintf(buf, cap, "%sfield '%s'", o->label, key);
  } else {
    char p[256];
    member_path(o, key, p, sizeof p);
    snprintf(buf, cap, "field '%s'", p);
  }
}

/* "LABEL: MSG" at 'at' (the member, or the object for a missing one). */
static tpu_status vfail_member(const tpu_json_obj *o, const char *key, bool at_member, const char *fmt, va_list ap) {
  char at[256], label[320], msg[768];
  member_path(o, key, at, sizeof at);
  member_label(o, key, label, sizeof label);
  vsnprintf(msg, sizeof msg, fmt, ap);
  return failf(o->doc, at_member ? at : o->path, "%s: %s", label, msg);
}

tpu_status tpu_json_fail_member(const tpu_json_obj *o, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tpu_status st = vfail_member(o, key, json_object_get(o->v, key) != NULL, fmt, ap);
  va_end(ap);
  return st;
}

tpu_status tpu_json_missing(const tpu_json_obj *o, const char *key, const char *what) {
  return tpu_json_fail_member(o, key, "missing; expected %s", what);
}

tpu_status tpu_json_keys(const tpu_json_obj *o, const char *const *allowed) {
  const char *k;
  json_t *v;
  json_object_foreach(o->v, k, v) {
    bool ok = false;
    for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, k);
    if (ok) continue;
    char list[1024] = "";
    for (const char *const *a = allowed; *a; a++) {
      size_t n = strlen(list);
      snprintf(list + n, sizeof list - n, "%s%s", a == allowed ? "" : ", ", *a);
    }
    return tpu_json_fail_member(o, k, "unknown %s; allowed here: %s", o->doc->noun, list);
  }
  return TPU_OK;
}

tpu_status tpu_json_int_or(const tpu_json_obj *o, const char *key, int64_t lo, int64_t hi, const char *word,
                           int64_t word_value, int flags, int64_t *out) {
  json_t *v = json_object_get(o->v, key);
  char expect[160];
  snprintf(expect, sizeof expect, "an integer in %lld..%lld%s%s%s", (long long)lo, (long long)hi,
           word ? " or \"" : "", word ? word : "", word ? "\"" : "");
  if (!v) return flags & TPU_JSON_REQUIRED ? tpu_json_missing(o, key, expect) : TPU_OK;
  if (word && json_is_string(v) && !strcmp(json_string_value(v), word)) {
    *out = word_value;
    return TPU_OK;
  }
  if (!json_is_integer(v)) return tpu_json_fail_member(o, key, "expected %s, got %s", expect, tpu_json_type(v));
  const json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) return tpu_json_fail_member(o, key, "expected %s, got %lld", expect, (long long)x);
  *out = x;
  return TPU_OK;
}

tpu_status tpu_json_int(const tpu_json_obj *o, const char *key, int64_t lo, int64_t hi, int flags, int64_t *out) {
  return tpu_json_int_or(o, key, lo, hi, NULL, 0, flags, out);
}

tpu_status tpu_json_num(const tpu_json_obj *o, const char *key, double lo, double hi, int flags, double *out) {
  json_t *v = json_object_get(o->v, key);
  const bool open = flags & TPU_JSON_HI_OPEN;
  char expect[160];
  if (isinf(lo) && isinf(hi)) snprintf(expect, sizeof expect, "a number");
  else if (isinf(hi)) snprintf(expect, sizeof expect, "a number >= %g", lo);
  else if (isinf(lo)) snprintf(expect, sizeof expect, "a number %s %g", open ? "<" : "<=", hi);
  else snprintf(expect, sizeof expect, "a number in [%g, %g%s", lo, hi, open ? ")" : "]");
  if (!v) return flags & TPU_JSON_REQUIRED ? tpu_json_missing(o, key, expect) : TPU_OK;
  if (!json_is_number(v)) return tpu_json_fail_member(o, key, "expected %s, got %s", expect, tpu_json_type(v));
  const double d = json_number_value(v);
  if (!(d >= lo) || (open ? !(d < hi && (float)d < (float)hi) : !(d <= hi)))
    return tpu_json_fail_member(o, key, "expected %s, got %g", expect, d);
  *out = d;
  return TPU_OK;
}

tpu_status tpu_json_bool(const tpu_json_obj *o, const char *key, bool *out) {
  json_t *v = json_object_get(o->v, key);
  if (!v) return TPU_OK;
  if (!json_is_boolean(v)) return tpu_json_fail_member(o, key, "expected true or false, got %s", tpu_json_type(v));
  *out = json_is_true(v);
  return TPU_OK;
}

tpu_status tpu_json_str(const tpu_json_obj *o, const char *key, int flags, const char **out) {
  json_t *v = json_object_get(o->v, key);
  if (!v) return flags & TPU_JSON_REQUIRED ? tpu_json_missing(o, key, "a string") : TPU_OK;
  if (!json_is_string(v)) return tpu_json_fail_member(o, key, "expected a string, got %s", tpu_json_type(v));
  *out = json_string_value(v);
  return TPU_OK;
}
/* }================================================================== */

/* {==================================================================
** JSON locator: a tolerant scanner that walks the text, tracking the
** current path, until the requested path's value starts. It only has to
** handle text that jansson already accepted (errors are reported by the
** caller), so it skips rather than validates.
** ================================================================== */
typedef struct scan { const char *p; int line, col; } scan;

static void adv(scan *s) {
  if (*s->p == '\n') { s->line++; s->col = 1; } else if ((*s->p & 0xC0) != 0x80) s->col++;
  s->p++;
}
static void skip_ws(scan *s) { while (*s->p && isspace((unsigned char)*s->p)) adv(s); }
/* Reads a string token into buf (truncated, unescaped roughly). */
static void read_str(scan *s, char *buf, size_t cap) {
  size_t n = 0;
  adv(s);                                       /* opening quote */
  while (*s->p && *s->p != '"') {
    if (*s->p == '\\' && s->p[1]) { adv(s); }
    if (n + 1 < cap) buf[n++] = *s->p;
    adv(s);
  }
  if (*s->p) adv(s);
  buf[n] = 0;
}
static void skip_value(scan *s);
static void skip_value(scan *s) {
  skip_ws(s);
  char c = *s->p;
  if (c == '"') { char tmp[2]; read_str(s, tmp, sizeof tmp); return; }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    adv(s);
    for (;;) {
      skip_ws(s);
      if (!*s->p) return;
      if (*s->p == close) { adv(s); return; }
      if (*s->p == ',' || *s->p == ':') { adv(s); continue; }
      skip_value(s);
    }
  }
  while (*s->p && !strchr(",]}", *s->p) && !isspace((unsigned char)*s->p)) adv(s);
}

int tpu_json_locate(const char *text, const char *path, int *line, int *col) {
  scan s = { text, 1, 1 };
  skip_ws(&s);
  *line = s.line; *col = s.col;
  const char *q = path;
  while (*q) {
    if (*q == '.') { q++; continue; }
    skip_ws(&s);
    if (*q == '[') {                            /* array index */
      long idx = strtol(q + 1, (char **)&q, 10);
      if (*q == ']') q++;
      if (*s.p != '[') return 0;
      adv(&s);
      for (long i = 0; ; i++) {
        skip_ws(&s);
        if (!*s.p || *s.p == ']') return 0;
        if (i == idx) break;
        skip_value(&s);
        skip_ws(&s);
        if (*s.p == ',') adv(&s);
      }
    } else {                                    /* object key */
      char key[128];
      size_t n = 0;
      while (*q && *q != '.' && *q != '[' && n + 1 < sizeof key) key[n++] = *q++;
      key[n] = 0;
      if (*s.p != '{') return 0;
      adv(&s);
      for (;;) {
        skip_ws(&s);
        if (*s.p != '"') return 0;
        char k[128];
        int kl = s.line, kc = s.col;
        read_str(&s, k, sizeof k);
        skip_ws(&s);
        if (*s.p == ':') adv(&s);
        skip_ws(&s);
        if (strcmp(k, key) == 0) {
          if (!*q) { *line = s.line; *col = s.col; (void)kl; (void)kc; return 1; }
          break;
        }
        skip_value(&s);
        skip_ws(&s);
        if (*s.p == ',') adv(&s); else return 0;
      }
    }
    skip_ws(&s);
    *line = s.line; *col = s.col;
  }
  return 1;
}
/* }================================================================== */

