/*
** ss_read.c -- SCALE-Sim v2's input files: the .cfg (an INI file as
** Python's configparser reads it: [section] headers, "key: value" or
** "key = value", keys case-insensitive, '#' and ';' comment lines) and the
** topology CSVs (a header line, then one layer a line, fields separated by
** commas with spaces around them allowed and the trailing comma SCALE-Sim's
** files carry). Errors name the file, line and column and what is allowed;
** unknown sections and keys are errors, as in every tpusim config.
**
** Conv layers are lowered as SCALE-Sim lowers them: no padding, output
** height ceil((H - Fh + S) / S) (= ceil((H - Fh) / S) + 1: a last window
** that runs past the edge still counts, as in SCALE-Sim), GEMM M = output
** pixels, N = filters, K = Fh x Fw x channels. A layer whose name contains
** "DP" is depthwise: SCALE-Sim runs it as one single-channel layer per
** channel, named NAMEChannel_i, and so does this reader. Rows of empty
** fields (",,,,") are skipped and columns past the last one used are
** ignored, so topologies saved from a spreadsheet with notes read too. A GEMM line
** (name, M, N, K) is the conv layer M x K with a 1 x K filter, N filters.
*/
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scalesim/scalesim.h"

/* A line being read: where it is, and where its messages go. */
typedef struct ss_line {
  const char *path;
  int line;
  const char *start;           /* the line's first character */
  char *err;
  size_t errcap;
} ss_line;

/* "PATH:LINE:COL: message" into the line's err; TPU_ERR_INPUT. */
static tpu_status fail_at(const ss_line *l, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tpu_status fail_at(const ss_line *l, const char *at, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(l->err, l->errcap, "%s:%d:%d: %s", l->path, l->line, (int)(at - l->start) + 1, msg);
  return TPU_ERR_INPUT;
}

/* Trims spaces at both ends of [*b, *e) in place. */
static void trim(const char **b, const char **e) {
  while (*b < *e && isspace((unsigned char)**b)) (*b)++;
  while (*e > *b && isspace((unsigned char)(*e)[-1])) (*e)--;
}

/* A whole decimal integer in [lo, hi] spanning [b, e). */
static tpu_status parse_long(const ss_line *l, const char *b, const char *e, const char *field, long lo, long hi,
                      long *out) {
  char buf[32];
  const size_t n = (size_t)(e - b);
  if (n == 0 || n >= sizeof buf) return fail_at(l, b, "field '%s': expected an integer in %ld..%ld", field, lo, hi);
  memcpy(buf, b, n);
  buf[n] = 0;
  char *end;
  errno = 0;
  const long x = strtol(buf, &end, 10);
  if (*end || errno || x < lo || x > hi)
    return fail_at(l, b, "field '%s': expected an integer in %ld..%ld, got '%s'", field, lo, hi, buf);
  *out = x;
  return TPU_OK;
}

/* {==================================================================
** The .cfg
** ================================================================== */
enum { SEC_NONE, SEC_GENERAL, SEC_ARCH, SEC_RUN, SEC_NETWORK };
static const char *const SECTIONS[] = { "", "general", "architecture_presets", "run_presets", "network_presets" };

typedef struct cfg_key { int section; const char *name; long *dst; bool required; } cfg_key;
enum { K_RUNNAME, K_DATAFLOW, K_BW, K_IFBW, K_TOPO, K_NLONG = 9 };
/* seen[]: the line each key was given on (0: not given), the K_NLONG
** integers, then K_NLONG + K_RUNNAME ..; then each section's header line. */
#define K_SECTION(s) (K_NLONG + 5 + (s))
#define K_NSEEN K_SECTION(SEC_NETWORK + 1)

/* Key 'key' (lower case, as configparser reports it) of section sec, at
** kb, marked given: a key given twice in a section is refused, as
** configparser refuses it (DuplicateOptionError) instead of taking the last. */
static tpu_status given(const ss_line *l, const char *kb, int *seen, int i, const char *key, int sec) {
  if (seen[i])
    return fail_at(l, kb, "option '%s' in section [%s] already exists (line %d); a key is given once per section, "
                   "as Python's configparser requires", key, SECTIONS[sec], seen[i]);
  seen[i] = l->line;
  return TPU_OK;
}

/* One "key: value" of section sec; seen[] marks the keys given. */
static tpu_status cfg_value(const ss_line *l, int sec, const char *kb, const char *ke, const char *vb, const char *ve,
                           tpu_ss_config *o, int *seen) {
  const cfg_key longs[K_NLONG] = {
    { SEC_ARCH, "arrayheight", &o->rows, true }, { SEC_ARCH, "arraywidth", &o->cols, true },
    { SEC_ARCH, "ifmapsramszkb", &o->ifmap_kib, true }, { SEC_ARCH, "filtersramszkb", &o->filter_kib, true },
    { SEC_ARCH, "ofmapsramszkb", &o->ofmap_kib, true }, { SEC_ARCH, "ifmapoffset", &o->ifmap_offset, true },
    { SEC_ARCH, "filteroffset", &o->filter_offset, true }, { SEC_ARCH, "ofmapoffset", &o->ofmap_offset, true },
    { SEC_ARCH, "memorybanks", &o->banks, false } };
  const size_t kn = (size_t)(ke - kb);
  char key[40] = "", orig[40] = "";           /* lower case to match, as given for messages */
  for (size_t i = 0; i < kn && i + 1 < sizeof key; i++) {
    key[i] = (char)tolower((unsigned char)kb[i]);
    orig[i] = kb[i];
  }
  for (int i = 0; i < K_NLONG; i++) {
    if (strcmp(key, longs[i].name) || sec != longs[i].section) continue;
    const tpu_status st = given(l, kb, seen, i, key, sec);
    if (st) return st;
    const long hi = i < 2 ? TPU_MXU_MAX_DIM : 0x7fffffffL;
    return parse_long(l, vb, ve, orig, i < 2 ? 1 : 0, hi, longs[i].dst);
  }
  const int n = (int)(ve - vb);
  static const struct { int sec, idx; const char *name; } others[] = {
    { SEC_GENERAL, K_RUNNAME, "run_name" }, { SEC_ARCH, K_DATAFLOW, "dataflow" }, { SEC_ARCH, K_BW, "bandwidth" },
    { SEC_RUN, K_IFBW, "interfacebandwidth" }, { SEC_NETWORK, K_TOPO, "topologycsvloc" } };
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    tpu_status st = sec == others[i].sec && !strcmp(key, others[i].name)
                        ? given(l, kb, seen, K_NLONG + others[i].idx, key, sec) : TPU_OK;
    if (st) return st;
  }
  if (sec == SEC_GENERAL && !strcmp(key, "run_name")) {
    if (n < 1 || n >= (int)sizeof o->run_name) return fail_at(l, vb, "field 'run_name': expected 1..127 characters");
    for (int i = 0; i < n; i++)
      if (vb[i] == '/' || vb[i] == '\\') return fail_at(l, vb + i, "field 'run_name': names a directory; no '/' allowed");
    memcpy(o->run_name, vb, (size_t)n);
    o->run_name[n] = 0;
    return TPU_OK;
  }
  if (sec == SEC_ARCH && !strcmp(key, "dataflow")) {
    char df[8] = "";
    if (n < (int)sizeof df) memcpy(df, vb, (size_t)n);
    if (!tpu_mxu_dataflow_parse(df, &o->dataflow))
      return fail_at(l, vb, "field 'Dataflow': expected ws, os or is, got '%.*s'", n, vb);
    return TPU_OK;
  }
  if (sec == SEC_ARCH && !strcmp(key, "bandwidth")) {      /* "10" or "10,10,10": the first is used */
    const char *c = memchr(vb, ',', (size_t)n);
    const char *e1 = c ? c : ve;
    trim(&vb, &e1);
    return parse_long(l, vb, e1, "Bandwidth", 1, 0x7fffffffL, &o->bandwidth);
  }
  if (sec == SEC_RUN && !strcmp(key, "interfacebandwidth")) {
    if (n == 4 && !strncmp(vb, "CALC", 4)) o->user_bandwidth = false;
    else if (n == 4 && !strncmp(vb, "USER", 4)) o->user_bandwidth = true;
    else return fail_at(l, vb, "field 'InterfaceBandwidth': expected CALC or USER, got '%.*s'", n, vb);
    return TPU_OK;
  }
  if (sec == SEC_NETWORK && !strcmp(key, "topologycsvloc")) return TPU_OK;  /* -t names the topology */
  return fail_at(l, kb, "unknown key '%.*s' in section [%s]", (int)kn, kb, SECTIONS[sec]);
}

static tpu_status cfg_line(ss_line *l, const char *b, const char *e, int *sec, tpu_ss_config *o, int *seen) {
  trim(&b, &e);
  if (b == e || *b == '#' || *b == ';') return TPU_OK;
  if (*b == '[') {
    if (e[-1] != ']') return fail_at(l, b, "a section header is '[name]'");
    const char *nb = b + 1, *ne = e - 1;
    trim(&nb, &ne);
    for (int s = SEC_GENERAL; s <= SEC_NETWORK; s++)
      if ((size_t)(ne - nb) == strlen(SECTIONS[s]) && !strncmp(nb, SECTIONS[s], (size_t)(ne - nb))) {
        if (seen[K_SECTION(s)])   /* configparser: DuplicateSectionError, not a merge */
          return fail_at(l, nb, "section [%s] already exists (line %d); a section is given once, as Python's "
                         "configparser requires", SECTIONS[s], seen[K_SECTION(s)]);
        seen[K_SECTION(s)] = l->line;
        *sec = s;
        return TPU_OK;
      }
    return fail_at(l, nb, "unknown section '%.*s'; allowed: general, architecture_presets, run_presets, "
                   "network_presets", (int)(ne - nb), nb);
  }
  if (*sec == SEC_NONE) return fail_at(l, b, "a key before any [section]");
  const char *sep = b;
  while (sep < e && *sep != ':' && *sep != '=') sep++;
  if (sep == e) return fail_at(l, b, "expected 'key: value' or 'key = value'");
  const char *kb = b, *ke = sep, *vb = sep + 1, *ve = e;
  trim(&kb, &ke);
  trim(&vb, &ve);
  return cfg_value(l, *sec, kb, ke, vb, ve, o, seen);
}

static tpu_status cfg_missing(const char *path, const int *seen, char *err, size_t errcap) {
  static const char *const names[] = { "ArrayHeight", "ArrayWidth", "IfmapSramSzkB", "FilterSramSzkB",
    "OfmapSramSzkB", "IfmapOffset", "FilterOffset", "OfmapOffset", "MemoryBanks", "run_name", "Dataflow",
    "Bandwidth", "InterfaceBandwidth" };
  for (int i = 0; i < K_NLONG + 4; i++) {
    if (seen[i] || i == 8 || i == K_NLONG + K_BW) continue;   /* MemoryBanks: 1; Bandwidth: only for USER */
    if (i == K_NLONG + K_RUNNAME) continue;                   /* checked by the caller */
    snprintf(err, errcap, "%s: missing key '%s'", path, names[i]);
    return TPU_ERR_INPUT;
  }
  return TPU_OK;
}

tpu_ss_looks tpu_ss_looks_like(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return TPU_SS_LOOKS_UNKNOWN;
  char line[512];
  tpu_ss_looks k = TPU_SS_LOOKS_UNKNOWN;
  for (int n = 0; k == TPU_SS_LOOKS_UNKNOWN && n < 16 && fgets(line, sizeof line, f); n++) {
    const char *b = line + strspn(line, " \t");
    if (*b == '[' && strchr(b, ']')) k = TPU_SS_LOOKS_CFG;
    else if (*b != '#' && *b != ';' && strchr(b, ',')) k = TPU_SS_LOOKS_TOPOLOGY;
  }
  fclose(f);
  return k;
}

tpu_status tpu_ss_config_read(const char *path, tpu_ss_config *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  out->banks = 1;
  out->bandwidth = 10;
  char *text;
  tpu_status st = tpu_read_text(path, "a SCALE-Sim configuration (text)", &text, err, errcap);
  if (st) return st;
  int seen[K_NSEEN] = { 0 };
  int sec = SEC_NONE;
  ss_line l = { path, 0, text, err, errcap };
  for (const char *p = text; *p && !st;) {
    const char *e = p + strcspn(p, "\n");
    l.line++;
    l.start = p;
    st = cfg_line(&l, p, e, &sec, out, seen);
    p = *e ? e + 1 : e;
  }
  tpu_free(text);
  if (st) return st;
  if (!out->run_name[0]) {
    snprintf(err, errcap, "%s: missing key 'run_name' in [general]", path);
    return TPU_ERR_INPUT;
  }
  return cfg_missing(path, seen, err, errcap);
}
/* }================================================================== */

/* {==================================================================
** The topology CSVs
** ================================================================== */
#define SS_MAX_FIELDS 64

static tpu_status add_layer(const ss_line *l, tpu_ss_topology *t, const tpu_ss_layer *ly) {
  if (t->n == t->cap) {
    const int cap = t->cap ? 2 * t->cap : 64;
    tpu_ss_layer *nl = tpu_realloc(t->layers, (size_t)cap * sizeof *nl);
    if (!nl) {
      snprintf(l->err, l->errcap, "out of memory");
      return TPU_ERR_NOMEM;
    }
    t->layers = nl;
    t->cap = cap;
  }
  t->layers[t->n++] = *ly;
  return TPU_OK;
}

void tpu_ss_lower(tpu_ss_layer *ly) {
  ly->ofmap_h = (uint64_t)((ly->ifmap_h - ly->filter_h + ly->stride_h - 1) / ly->stride_h + 1);
  ly->ofmap_w = (uint64_t)((ly->ifmap_w - ly->filter_w + ly->stride_w - 1) / ly->stride_w + 1);
  ly->m = ly->ofmap_h * ly->ofmap_w;
  ly->n = (uint64_t)ly->filters;
  ly->k = (uint64_t)ly->filter_h * (uint64_t)ly->filter_w * (uint64_t)ly->channels;
}

static const char *const CONV_FIELDS[] = { "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
                                           "Channels", "Num Filter", "Strides", "Stride Width" };
static const char *const GEMM_FIELDS[] = { "M", "N", "K" };

/* The numbers of one line (fields 1..) into v[]; the layer checks. Fields
** past the last one used (stride width for conv, K for GEMM) are ignored:
** spreadsheet-made topologies carry notes in extra columns. */
static tpu_status topo_numbers(const ss_line *l, bool gemm, const char **fb, const char **fe, int nf, long *v) {
  const int want = gemm ? 3 : 7;
  if (nf - 1 < want)
    return fail_at(l, l->start, "expected %s, got %d fields", gemm ? "name, M, N, K" :
                   "name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides",
                   nf);
  const int used = !gemm && nf - 1 >= 8 && fb[8] != fe[8] ? 8 : want;
  for (int i = 1; i <= used; i++) {
    const char *name = gemm ? GEMM_FIELDS[i - 1] : CONV_FIELDS[i - 1];
    /* a GEMM's M, N, K as far as the timing level goes; a conv's fields to
    ** 2^24 (their products, M and K, can pass 2^31: each command then says
    ** what it takes) */
    const long hi = gemm ? (long)TPU_MXU_MAX_GEMM_DIM : 1L << 24;
    const tpu_status st = parse_long(l, fb[i], fe[i], name, 1, hi, &v[i - 1]);
    if (st) return st;
  }
  if (!gemm && used == 7) v[7] = v[6];                         /* one stride: both directions */
  if (!gemm && v[2] > v[0]) return fail_at(l, fb[3], "field 'Filter Height': %ld is larger than the IFMAP "
                                           "height %ld", v[2], v[0]);
  if (!gemm && v[3] > v[1]) return fail_at(l, fb[4], "field 'Filter Width': %ld is larger than the IFMAP "
                                           "width %ld", v[3], v[1]);
  return TPU_OK;
}

static tpu_status topo_line(const ss_line *l, const char *b, const char *e, bool gemm, tpu_ss_topology *t) {
  const char *fb[SS_MAX_FIELDS + 1], *fe[SS_MAX_FIELDS + 1];
  int nf = 0;
  for (const char *p = b;;) {
    const char *c = memchr(p, ',', (size_t)(e - p));
    if (nf == SS_MAX_FIELDS) return fail_at(l, p, "too many fields (at most %d)", SS_MAX_FIELDS);
    fb[nf] = p;
    fe[nf] = c ? c : e;
    trim(&fb[nf], &fe[nf]);
    nf++;
    if (!c) break;
    p = c + 1;
  }
  if (nf > 1 && fb[nf - 1] == fe[nf - 1]) nf--;                /* the trailing comma */
  bool empty = true;                                           /* ",,,,": a blank spreadsheet row */
  for (int i = 0; i < nf; i++) empty = empty && fb[i] == fe[i];
  if (empty) return TPU_OK;
  tpu_ss_layer ly;
  memset(&ly, 0, sizeof ly);
  const int nl = (int)(fe[0] - fb[0]);
  if (nl < 1 || nl >= (int)sizeof ly.name) return fail_at(l, fb[0], "field 'Layer name': expected 1..63 characters");
  memcpy(ly.name, fb[0], (size_t)nl);
  ly.line = l->line;
  long v[8] = { 0 };
  tpu_status st = topo_numbers(l, gemm, fb, fe, nf, v);
  if (st) return st;
  if (gemm) {                                                  /* M x K ifmap, 1 x K filter, N filters */
    const long g[8] = { v[0], v[2], 1, v[2], 1, v[1], 1, 1 };
    memcpy(v, g, sizeof g);
  }
  ly.ifmap_h = v[0]; ly.ifmap_w = v[1]; ly.filter_h = v[2]; ly.filter_w = v[3];
  ly.channels = v[4]; ly.filters = v[5]; ly.stride_h = v[6]; ly.stride_w = v[7];
  tpu_ss_lower(&ly);
  const bool dp = !gemm && strstr(ly.name, "DP");
  const long adds = dp ? ly.channels : 1;
  if (adds > TPU_SS_MAX_LAYERS - t->n) {  /* from the fields, before any layer is made */
    if (!dp) return fail_at(l, fb[0], "layer %d: a topology may have at most %d layers", t->n + 1, TPU_SS_MAX_LAYERS);
    return fail_at(l, fb[5], "field 'Channels': a depthwise layer is a layer per channel: %ld layers after the %d "
                   "before make more than the %d a topology may have", adds, t->n, TPU_SS_MAX_LAYERS);
  }
  if (!dp) return add_layer(l, t, &ly);
  tpu_ss_layer one = ly;                                       /* depthwise: a layer per channel */
  one.channels = 1;
  tpu_ss_lower(&one);
  for (long c = 0; c < ly.channels && !st; c++) {
    snprintf(one.name, sizeof one.name, "%.40sChannel_%d", ly.name, (int)(c & 0xfffffff));
    st = add_layer(l, t, &one);
  }
  return st;
}

tpu_status tpu_ss_topology_read(const char *path, bool gemm, tpu_ss_topology *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  char *text;
  tpu_status st = tpu_read_text(path, "a SCALE-Sim topology (CSV text)", &text, err, errcap);
  if (st) return st;
  ss_line l = { path, 0, text, err, errcap };
  for (const char *p = text; *p && !st;) {
    const char *b = p, *e = p + strcspn(p, "\n");
    l.line++;
    l.start = p;
    p = *e ? e + 1 : e;
    trim(&b, &e);
    if (l.line == 1 || b == e) continue;                       /* the header; blank lines */
    st = topo_line(&l, b, e, gemm, out);
  }
  tpu_free(text);
  if (!st && out->n == 0) {
    snprintf(err, errcap, "%s: no layers (a header line, then one layer a line)", path);
    st = TPU_ERR_INPUT;
  }
  if (st) tpu_ss_topology_free(out);
  return st;
}

void tpu_ss_topology_free(tpu_ss_topology *t) {
  tpu_free(t->layers);
  memset(t, 0, sizeof *t);
}
/* }================================================================== */
