/*
** config.c -- chip configuration: presets, the JSON loader, --set overrides,
** validation and the JSON writer.
**
** One table (KEYS below) maps every JSON key to a field, its type and its
** allowed range, in the manner of Ramulator's PARSE_PARAM: the loader, the
** --set parser, the writer and the docs all follow it. Unknown keys are
** errors; so are missing keys unless the file names a "base" preset.
** jansson values never outlive a call: we parse into the struct and decref.
*/
#include "sim/sim.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/presets.h"   /* generated: tpu_presets[] */

typedef enum { K_INT, K_I64, K_DBL, K_BOOL, K_STR, K_TOPO } ktype;

typedef struct key_def {
  const char *path;            /* JSON path, dotted */
  ktype type;
  size_t off;                  /* offset in tpu_chip_config */
  size_t size;                 /* K_STR: capacity */
  double lo, hi;               /* numbers: the physical range (inclusive) */
  const char *unit;            /* numbers: the unit, for messages ("GB/s"); NULL none */
  bool optional;               /* may be absent even without a base */
} key_def;

/* Every key of a chip file, of --set and of the reports' "chip" object.
** Each number has a physical range, checked at load time with the key
** named: no real part is outside it, and inside it every derived cycle count
** fits the engine's counters (a bandwidth of 1e-300 GB/s would give 1e304
** cycles per byte). docs/CHIPS.md's table states the same ranges and
** tests/e2e/t_badinput.sh checks both ends of every range against it: a
** new key is one row here and one row there. */
#define F(member) offsetof(tpu_chip_config, member)
#define S(member) sizeof(((tpu_chip_config *)0)->member)
static const key_def KEYS[] = {
  /* path                        type     field                        size  lo       hi          unit        optional */
  { "name",                      K_STR,   F(name),                     S(name), 0, 0,             NULL,       true },
  { "description",               K_STR,   F(description),              S(description), 0, 0,      NULL,       true },
  { "source",                    K_STR,   F(source),                   S(source), 0, 0,           NULL,       true },
  { "cores",                     K_INT,   F(cores),                    0,    1,       TPU_MAX_CORES, NULL,    false },
  { "cores_per_chip",            K_INT,   F(cores_per_chip),           0,    1,       TPU_MAX_CORES, NULL,    false },
  { "clock_mhz",                 K_DBL,   F(clock_mhz),                0,    1,       10000,      "MHz",      false },
  { "mxu.rows",                  K_INT,   F(mxu.rows),                 0,    1,       TPU_MXU_MAX_DIM, NULL,  false },
  { "mxu.cols",                  K_INT,   F(mxu.cols),                 0,    1,       TPU_MXU_MAX_DIM, NULL,  false },
  { "mxu.per_core",              K_INT,   F(mxus_per_core),            0,    1,       TPU_MAX_MXUS_PER_CORE, NULL, false },
  { "mxu.double_buffer",         K_BOOL,  F(mxu.double_buffer),        0,    0,       0,          NULL,       false },
  { "vpu.sublanes",              K_INT,   F(vpu.sublanes),             0,    1,       1024,       NULL,       false },
  { "vpu.lanes",                 K_INT,   F(vpu.lanes),                0,    1,       4096,       NULL,       false },
  { "vpu.cycles.elementwise",    K_INT,   F(vpu.cycles_elementwise),   0,    1,       100000,     "cycles",   false },
  { "vpu.cycles.divide",         K_INT,   F(vpu.cycles_divide),        0,    1,       100000,     "cycles",   false },
  { "vpu.cycles.transcendental", K_INT,   F(vpu.cycles_transcendental), 0,   1,       100000,     "cycles",   false },
  { "vpu.cycles.cross_lane",     K_INT,   F(vpu.cycles_cross_lane),    0,    1,       100000,     "cycles",   false },
  { "vpu.cycles.cross_sublane",  K_INT,   F(vpu.cycles_cross_sublane), 0,    1,       100000,     "cycles",   false },
  { "hbm.capacity_gib",          K_DBL,   F(hbm_capacity_gib),         0,    0.0009765625, 1048576, "GiB",    false },
  { "hbm.bandwidth_gb_per_s",    K_DBL,   F(hbm_bandwidth_gb_per_s),   0,    0.01,    1e6,        "GB/s",     false },
  { "hbm.latency_ns",            K_DBL,   F(hbm_latency_ns),           0,    0,       1e6,        "ns",       false },
  { "vmem.capacity_kib",         K_I64,   F(vmem_capacity_kib),        0,    1,       16777216,   "KiB",      false },
  { "ici.link_gbit_per_s",       K_DBL,   F(ici_link_gbit_per_s),      0,    0.01,    1e7,        "Gbit/s",   false },
  { "ici.latency_ns",            K_DBL,   F(ici_latency_ns),           0,    0,       1e6,        "ns",       false },
  { "ici.topology",              K_TOPO,  F(ici_topology),             0,    0,       0,          NULL,       false },
  { "ici.torus_x",               K_INT,   F(ici_torus_x),              0,    0,       TPU_MAX_CORES, "chips", true },
  { "ici.torus_y",               K_INT,   F(ici_torus_y),              0,    0,       TPU_MAX_CORES, "chips", true },
  { "ici.wrap_x",                K_BOOL,  F(ici_wrap_x),               0,    0,       0,          NULL,       true },
  { "ici.wrap_y",                K_BOOL,  F(ici_wrap_y),               0,    0,       0,          NULL,       true },
  { "hosts",                     K_INT,   F(hosts),                    0,    1,       TPU_MAX_CORES, NULL,    true },
  { "dma.outstanding",           K_INT,   F(dma_outstanding),          0,    1,       4096,       "transfers", true },
  { "dma.request_bytes",         K_I64,   F(dma_request_bytes),        0,    1,       16777216,   "bytes",    true },
  { "onchip.link_gbit_per_s",    K_DBL,   F(onchip_link_gbit_per_s),   0,    0.01,    1e7,        "Gbit/s",   true },
  { "onchip.latency_ns",         K_DBL,   F(onchip_latency_ns),        0,    0,       1e6,        "ns",       true },
  { "compiler.fusion",           K_BOOL,  F(compiler_fusion),          0,    0,       0,          NULL,       true },
  { "compiler.implicit_conv",    K_BOOL,  F(compiler_implicit_conv),   0,    0,       0,          NULL,       true },
  { "compiler.memory_planning",  K_BOOL,  F(compiler_memory_planning), 0,    0,       0,          NULL,       true },
  { "host.dispatch_s",           K_DBL,   F(host_dispatch_s),          0,    0,       60,         "s",        true },
  { "host.infeed_gb_per_s",      K_DBL,   F(host_infeed_gb_per_s),     0,    0.001,   1e4,        "GB/s",     true },
  { "host.compile_s",            K_DBL,   F(host_compile_s),           0,    0,       3600,       "s",        true },
  { "host.compile_s_per_kernel", K_DBL,   F(host_compile_s_per_kernel), 0,   0,       60,         "s",        true },
};
#undef S
#undef F
#define NKEYS (sizeof KEYS / sizeof KEYS[0])
/* Objects that group keys; anything else that is an object is an error. */
static const char *const SECTIONS[] = { "mxu", "vpu", "vpu.cycles", "hbm", "vmem", "ici", "dma", "onchip", "compiler", "host" };

static void seterr(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t cap, const char *fmt, ...) {
  if (!err || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

static const key_def *find_key(const char *path) {
  for (size_t i = 0; i < NKEYS; i++)
    if (strcmp(KEYS[i].path, path) == 0) return &KEYS[i];
  return NULL;
}
static bool is_section(const char *path) {
  for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; i++)
    if (strcmp(SECTIONS[i], path) == 0) return true;
  return false;
}

const char *tpu_ici_topology_name(tpu_ici_topology t) {
  static const char *const names[] = { [TPU_ICI_AUTO] = "auto", [TPU_ICI_RING] = "ring", [TPU_ICI_TORUS] = "torus" };
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}
static bool parse_topology(const char *s, tpu_ici_topology *out) {
  for (int t = TPU_ICI_AUTO; t <= TPU_ICI_TORUS; t++)
    if (strcmp(s, tpu_ici_topology_name((tpu_ici_topology)t)) == 0) { *out = (tpu_ici_topology)t; return true; }
  return false;
}
tpu_ici_topology tpu_ici_topology_resolve(const tpu_chip_config *cfg) {
  if (cfg->ici_topology != TPU_ICI_AUTO) return cfg->ici_topology;
  return cfg->cores / cfg->cores_per_chip >= 4 ? TPU_ICI_TORUS : TPU_ICI_RING;
}

/* What a key allows, for messages. */
static void allowed(const key_def *k, char *buf, size_t cap) {
  switch (k->type) {
    case K_INT: case K_I64:
      snprintf(buf, cap, "an integer in %.0f..%.0f%s%s", k->lo, k->hi, k->unit ? " " : "", k->unit ? k->unit : ""); break;
    case K_DBL:
      snprintf(buf, cap, "a number in [%.10g, %.10g]%s%s", k->lo, k->hi, k->unit ? " " : "", k->unit ? k->unit : ""); break;
    case K_BOOL: snprintf(buf, cap, "true or false"); break;
    case K_STR: snprintf(buf, cap, "a string of at most %zu bytes", k->size - 1); break;
    case K_TOPO: snprintf(buf, cap, "\"auto\", \"ring\" or \"torus\""); break;
  }
}

static bool in_range(const key_def *k, double v) {
  return isfinite(v) && v >= k->lo && v <= k->hi;
}

/* Stores a JSON value into the field. Returns false with a "got ..." text. */
static bool store_json(tpu_chip_config *cfg, const key_def *k, json_t *v, char *got, size_t cap) {
  char *base = (char *)cfg + k->off;
  switch (k->type) {
    case K_INT: case K_I64: {
      if (!json_is_integer(v)) {
        snprintf(got, cap, "got %s", json_is_real(v) ? "a non-integer number" : "a non-number");
        return false;
      }
      json_int_t x = json_integer_value(v);
      if (!in_range(k, (double)x)) { snprintf(got, cap, "got %lld", (long long)x); return false; }
      if (k->type == K_INT) *(int *)(void *)base = (int)x; else *(int64_t *)(void *)base = (int64_t)x;
      return true;
    }
    case K_DBL: {
      if (!json_is_number(v)) { snprintf(got, cap, "got a non-number"); return false; }
      double x = json_number_value(v);
      if (!in_range(k, x)) { snprintf(got, cap, "got %g", x); return false; }
      *(double *)(void *)base = x;
      return true;
    }
    case K_BOOL:
      if (!json_is_boolean(v)) { snprintf(got, cap, "got a non-boolean"); return false; }
      *(bool *)(void *)base = json_is_true(v);
      return true;
    case K_STR: {
      if (!json_is_string(v)) { snprintf(got, cap, "got a non-string"); return false; }
      const char *s = json_string_value(v);
      if (strlen(s) >= k->size) { snprintf(got, cap, "got %zu bytes", strlen(s)); return false; }
      strcpy(base, s);
      return true;
    }
    case K_TOPO: {
      tpu_ici_topology t;
      if (!json_is_string(v) || !parse_topology(json_string_value(v), &t)) {
        snprintf(got, cap, "got %s", json_is_string(v) ? json_string_value(v) : "a non-string");
        return false;
      }
      *(tpu_ici_topology *)(void *)base = t;
      return true;
    }
  }
  return false;
}

/* Cloud TPU v2 and v3 hosts: one per 4 chips (a board's), one for fewer. */
static int default_hosts(int chips) { return chips >= 4 ? (chips + 3) / 4 : 1; }

typedef struct load_ctx {
  tpu_json *j;                 /* the document, its name and its one error */
  bool seen[NKEYS];
} load_ctx;

/* "tpu-v2-8, tpu-v3-8, teach" */
static void preset_list(char *buf, size_t cap) {
  buf[0] = 0;
  for (const char *const *n = tpu_chip_preset_names(); *n; n++) {
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l, "%s%s", n == tpu_chip_preset_names() ? "" : ", ", *n);
  }
}

static bool walk(load_ctx *c, tpu_chip_config *cfg, json_t *obj, const char *prefix) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
    if (!*prefix && strcmp(key, "base") == 0) continue;
    if (is_section(path)) {
      if (!json_is_object(v)) { tpu_json_fail(c->j, path, "key '%s': expected an object", path); return false; }
      if (!walk(c, cfg, v, path)) return false;
      continue;
    }
    const key_def *k = find_key(path);
    if (!k) {
      tpu_json_fail(c->j, path, "unknown key '%s' (the keys are listed in docs/CHIPS.md)", path);
      return false;
    }
    char got[128], allow[128];
    if (!store_json(cfg, k, v, got, sizeof got)) {
      allowed(k, allow, sizeof allow);
      tpu_json_fail(c->j, path, "key '%s': expected %s, %s", path, allow, got);
      return false;
    }
    c->seen[k - KEYS] = true;
  }
  return true;
}

static tpu_status load_text(const char *where, const char *text, bool allow_base,
                            tpu_chip_config *out, char *err, size_t errcap) {
  tpu_json j = { .where = where, .noun = "key", .err = err, .errcap = errcap };
  tpu_status st = tpu_json_parse(&j, text, "a chip configuration, docs/CHIPS.md");
  if (st != TPU_OK) goto done;
  st = TPU_ERR_CONFIG;
  load_ctx c = { .j = &j };
  tpu_chip_config cfg;
  memset(&cfg, 0, sizeof cfg);
  bool has_base = false;
  json_t *b = json_object_get(j.root, "base");
  if (b) {
    const char *bn = json_is_string(b) ? json_string_value(b) : NULL;
    if (!allow_base || !bn || !tpu_chip_preset_json(bn)) {
      char names[256];
      preset_list(names, sizeof names);
      tpu_json_fail(&j, "base", "key 'base': expected the name of a preset (%s)", names);
      goto done;
    }
    char sub[512];
    const tpu_status bst = load_text(bn, tpu_chip_preset_json(bn), false, &cfg, sub, sizeof sub);
    if (bst != TPU_OK) {
      seterr(err, errcap, "%s", sub);
      if (bst == TPU_ERR_NOMEM) st = bst;
      goto done;
    }
    has_base = true;
  }
  if (!has_base) {
    cfg.dma_outstanding = -1, cfg.dma_request_bytes = -1, cfg.onchip_link_gbit_per_s = -1,
    cfg.onchip_latency_ns = -1;   /* "absent": filled below from the other keys */
    cfg.compiler_fusion = cfg.compiler_implicit_conv = cfg.compiler_memory_planning = true;   /* absent: on */
    cfg.ici_wrap_x = cfg.ici_wrap_y = true;   /* absent: a torus's wraparound links */
    cfg.hosts = -1;                           /* absent: one per 4 chips, below */
    tpu_chip_host_preset(&cfg, tpu_chip_host_names()[0], NULL, 0);   /* absent: the default host's */
  }
  if (!walk(&c, &cfg, j.root, "")) goto done;
  if (cfg.dma_outstanding < 0) cfg.dma_outstanding = 16;
  if (cfg.dma_request_bytes < 0) cfg.dma_request_bytes = 512;
  if (cfg.onchip_link_gbit_per_s < 0) cfg.onchip_link_gbit_per_s = cfg.ici_link_gbit_per_s;
  if (cfg.onchip_latency_ns < 0) cfg.onchip_latency_ns = cfg.ici_latency_ns;
  if (cfg.hosts < 0) cfg.hosts = default_hosts(cfg.cores_per_chip > 0 ? cfg.cores / cfg.cores_per_chip : 1);
  if (!has_base)
    for (size_t i = 0; i < NKEYS; i++)
      if (!c.seen[i] && !KEYS[i].optional) {
        char allow[128];
        allowed(&KEYS[i], allow, sizeof allow);
        tpu_json_fail(&j, NULL, "missing key '%s' (%s), or start from a preset with \"base\"", KEYS[i].path, allow);
        goto done;
      }
  char verr[512];
  if (tpu_chip_config_validate(&cfg, verr, sizeof verr) != TPU_OK) {
    seterr(err, errcap, "%s: %s", where, verr);
    goto done;
  }
  *out = cfg;
  st = TPU_OK;
done:
  tpu_json_free(&j);
  return st;
}

const char *const *tpu_chip_preset_names(void) { return tpu_preset_names; }

/* The host setups (docs/CHIPS.md, "The host"): each value a source or a
** stated assumption there. */
typedef struct host_setup { double dispatch_s, infeed_gb_per_s, compile_s, compile_s_per_kernel; } host_setup;
static const char *const HOST_NAMES[] = { "tpu-vm", "colab", NULL };
static const host_setup HOSTS[] = {   /* HOST_NAMES[i]'s */
  /* a TPU VM: Keras runs on the TPU's own host, the chips on its PCIe */
  { 0.5e-3, 16.0, 2.0, 0.02 },
  /* a TPU node, as Colab's TPU was: Keras on a separate VM, each call a
  ** gRPC round trip over the data centre's network to the TPU's host */
  { 10e-3, 16.0, 2.0, 0.02 },
};

const char *const *tpu_chip_host_names(void) { return HOST_NAMES; }

tpu_status tpu_chip_host_preset(tpu_chip_config *cfg, const char *name, char *err, size_t errcap) {
  for (size_t i = 0; i < sizeof HOSTS / sizeof HOSTS[0]; i++)
    if (!strcmp(HOST_NAMES[i], name)) {
      cfg->host_dispatch_s = HOSTS[i].dispatch_s;
      cfg->host_infeed_gb_per_s = HOSTS[i].infeed_gb_per_s;
      cfg->host_compile_s = HOSTS[i].compile_s;
      cfg->host_compile_s_per_kernel = HOSTS[i].compile_s_per_kernel;
      return TPU_OK;
    }
  char names[128] = "";
  for (size_t i = 0; HOST_NAMES[i]; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? (HOST_NAMES[i + 1] ? ", " : " or ") : "",
             HOST_NAMES[i]);
  seterr(err, errcap, "--host: expected %s, got '%s'", names, name);
  return TPU_ERR_CONFIG;
}
const char *tpu_chip_preset_json(const char *name) {
  for (size_t i = 0; tpu_preset_names[i]; i++)
    if (strcmp(tpu_preset_names[i], name) == 0) return tpu_preset_texts[i];
  return NULL;
}

tpu_status tpu_chip_config_load(const char *name_or_file, tpu_chip_config *out, char *err, size_t errcap) {
  const char *preset = tpu_chip_preset_json(name_or_file);
  if (preset) {
    char where[96];
    snprintf(where, sizeof where, "preset %s", name_or_file);
    return load_text(where, preset, false, out, err, errcap);
  }
  char *text;
  tpu_status rst = tpu_json_read_file(name_or_file, &text, err, errcap);
  if (rst == TPU_ERR_IO) {
    int e = errno;
    char names[256];
    preset_list(names, sizeof names);
    int np = 0;
    while (tpu_preset_names[np]) np++;
    const char *near = strchr(name_or_file, '/') ? NULL : tpu_nearest(name_or_file, tpu_preset_names, np);
    seterr(err, errcap, "%s: not a preset (%s%s%s%s) and cannot open it as a file: %s", name_or_file,
           near ? "did you mean " : "", near ? near : "", near ? "? the presets are " : "", names, strerror(e));
    return TPU_ERR_IO;
  }
  if (rst != TPU_OK) return rst == TPU_ERR_INPUT ? TPU_ERR_CONFIG : rst;   /* a NUL byte: the message says so */
  tpu_status st = load_text(name_or_file, text, true, out, err, errcap);
  if (st == TPU_OK && !out->name[0]) {
    const char *slash = strrchr(name_or_file, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : name_or_file);
  }
  tpu_free(text);
  return st;
}

/* The slice's keys against its chips: a layout that holds them all, a
** ring's single row, a host for at most every chip. */
static tpu_status validate_slice(const tpu_chip_config *cfg, char *err, size_t errcap) {
  const int chips = cfg->cores / cfg->cores_per_chip, x = cfg->ici_torus_x, y = cfg->ici_torus_y;
  if ((x == 0) != (y == 0) || (x && (long)x * y != chips)) {
    seterr(err, errcap, "keys 'ici.torus_x' and 'ici.torus_y': %d x %d chips; expected both 0 (chosen from the chips) "
           "or a layout of all %d chips (cores / cores_per_chip)", x, y, chips);
    return TPU_ERR_CONFIG;
  }
  if (x && y > 1 && cfg->ici_topology == TPU_ICI_RING) {
    seterr(err, errcap, "key 'ici.torus_y': %d with ici.topology \"ring\"; a ring is one row (torus_y 1) or give "
           "ici.topology \"torus\"", y);
    return TPU_ERR_CONFIG;
  }
  if (cfg->hosts > chips) {
    seterr(err, errcap, "key 'hosts': %d hosts for %d chips; expected 1..%d (each host feeds at least one chip)",
           cfg->hosts, chips, chips);
    return TPU_ERR_CONFIG;
  }
  return TPU_OK;
}

void tpu_chip_torus(const tpu_chip_config *cfg, int *x, int *y) {
  const int p = cfg->cores / cfg->cores_per_chip;
  if (cfg->ici_torus_x > 0 && cfg->ici_torus_y > 0) { *x = cfg->ici_torus_x; *y = cfg->ici_torus_y; return; }
  int r = 1;
  if (p > 1 && tpu_ici_topology_resolve(cfg) == TPU_ICI_TORUS)
    for (int d = 1; d * d <= p; d++)
      if (p % d == 0) r = d;
  *x = p / r;
  *y = r;
}

int tpu_chip_chips_per_host(const tpu_chip_config *cfg) {
  const int chips = cfg->cores / cfg->cores_per_chip;
  return (chips + cfg->hosts - 1) / cfg->hosts;
}

void tpu_chip_config_cut(tpu_chip_config *cfg, int cores) {
  const int per_host = tpu_chip_chips_per_host(cfg), chips0 = cfg->cores / cfg->cores_per_chip;
  int x0, y0;
  tpu_chip_torus(cfg, &x0, &y0);
  int cpc = cfg->cores_per_chip < cores ? cfg->cores_per_chip : cores;
  while (cores % cpc) cpc--;
  cfg->cores = cores;
  cfg->cores_per_chip = cpc;
  const int chips = cores / cpc;
  if (chips != chips0 && cfg->ici_torus_x > 0) {   /* a slice's sub-slice: laid out anew */
    cfg->ici_torus_x = cfg->ici_torus_y = 0;
    int x, y;
    tpu_chip_torus(cfg, &x, &y);
    cfg->ici_wrap_x = cfg->ici_wrap_x && x == x0;
    cfg->ici_wrap_y = cfg->ici_wrap_y && y == y0;
    cfg->ici_torus_x = x;
    cfg->ici_torus_y = y;
  }
  cfg->hosts = (chips + per_host - 1) / per_host;
}

tpu_status tpu_chip_config_validate(const tpu_chip_config *cfg, char *err, size_t errcap) {
  char allow[128];
  for (size_t i = 0; i < NKEYS; i++) {
    const key_def *k = &KEYS[i];
    const char *base = (const char *)cfg + k->off;
    double v;
    if (k->type == K_INT) v = *(const int *)(const void *)base;
    else if (k->type == K_I64) v = (double)*(const int64_t *)(const void *)base;
    else if (k->type == K_DBL) v = *(const double *)(const void *)base;
    else continue;
    if (!in_range(k, v)) {
      allowed(k, allow, sizeof allow);
      seterr(err, errcap, "key '%s': expected %s, got %g", k->path, allow, v);
      return TPU_ERR_CONFIG;
    }
  }
  if (cfg->cores % cfg->cores_per_chip != 0) {
    seterr(err, errcap, "key 'cores_per_chip': %d does not divide cores (%d)", cfg->cores_per_chip, cfg->cores);
    return TPU_ERR_CONFIG;
  }
  return validate_slice(cfg, err, errcap);
}

tpu_status tpu_chip_config_set(tpu_chip_config *cfg, const char *assignment, char *err, size_t errcap) {
  const char *eq = strchr(assignment, '=');
  if (!eq || eq == assignment) {
    seterr(err, errcap, "--set '%s': expected KEY=VALUE, e.g. mxu.rows=8", assignment);
    return TPU_ERR_CONFIG;
  }
  char path[128];
  size_t klen = (size_t)(eq - assignment);
  if (klen >= sizeof path) klen = sizeof path - 1;
  memcpy(path, assignment, klen);
  path[klen] = 0;
  const char *val = eq + 1;
  const key_def *k = find_key(path);
  if (!k) {
    char names[1024] = "";
    for (size_t i = 0; i < NKEYS; i++) {
      if (i) strcat(names, ", ");
      strcat(names, KEYS[i].path);
    }
    const char *keys[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) keys[i] = KEYS[i].path;
    const char *near = tpu_nearest(path, keys, (int)NKEYS);
    seterr(err, errcap, "--set: unknown key '%s'%s%s%s; known keys: %s", path, near ? " (did you mean '" : "",
           near ? near : "", near ? "'?)" : "", names);
    return TPU_ERR_CONFIG;
  }
  tpu_chip_config c = *cfg;
  char *base = (char *)&c + k->off;
  char allow[128];
  allowed(k, allow, sizeof allow);
  bool ok = false;
  char *end = NULL;
  errno = 0;
  switch (k->type) {
    case K_INT: case K_I64: {
      long long x = strtoll(val, &end, 10);
      ok = *val && !*end && errno == 0 && in_range(k, (double)x);
      if (ok) { if (k->type == K_INT) *(int *)(void *)base = (int)x; else *(int64_t *)(void *)base = x; }
      break;
    }
    case K_DBL: {
      double x = strtod(val, &end);
      ok = *val && !*end && errno == 0 && in_range(k, x);
      if (ok) *(double *)(void *)base = x;
      break;
    }
    case K_BOOL:
      ok = !strcmp(val, "true") || !strcmp(val, "false");
      if (ok) *(bool *)(void *)base = !strcmp(val, "true");
      break;
    case K_STR:
      ok = strlen(val) < k->size;
      if (ok) strcpy(base, val);
      break;
    case K_TOPO:
      ok = parse_topology(val, (tpu_ici_topology *)(void *)base);
      break;
  }
  if (!ok) {
    seterr(err, errcap, "--set %s: expected %s, got '%s'", path, allow, val);
    return TPU_ERR_CONFIG;
  }
  /* one dimension of the layout given: the other follows from the chips (0: both chosen) */
  if (k->off == offsetof(tpu_chip_config, ici_torus_x) || k->off == offsetof(tpu_chip_config, ici_torus_y)) {
    const bool is_x = k->off == offsetof(tpu_chip_config, ici_torus_x);
    const int v = is_x ? c.ici_torus_x : c.ici_torus_y, chips = c.cores / c.cores_per_chip;
    int *other = is_x ? &c.ici_torus_y : &c.ici_torus_x;
    if (v == 0) *other = 0;
    else if (chips % v == 0) *other = chips / v;
  }
  char verr[512];
  if (tpu_chip_config_validate(&c, verr, sizeof verr) != TPU_OK) {
    seterr(err, errcap, "--set %s: %s", path, verr);
    return TPU_ERR_CONFIG;
  }
  *cfg = c;
  return TPU_OK;
}

/* Finds or creates the object for a dotted prefix inside root. */
static json_t *section(json_t *root, const char *path, const char **leaf) {
  json_t *o = root;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  char *p = buf, *dot;
  while ((dot = strchr(p, '.'))) {
    *dot = 0;
    json_t *n = json_object_get(o, p);
    if (!n) { n = json_object(); json_object_set_new(o, p, n); }
    o = n;
    p = dot + 1;
  }
  *leaf = path + (p - buf);
  return o;
}

char *tpu_chip_config_to_json(const tpu_chip_config *cfg) {
  json_t *root = json_object();
  if (!root) return NULL;
  for (size_t i = 0; i < NKEYS; i++) {
    const key_def *k = &KEYS[i];
    const char *base = (const char *)cfg + k->off;
    const char *leaf;
    json_t *o = section(root, k->path, &leaf);
    json_t *v = NULL;
    switch (k->type) {
      case K_INT: v = json_integer(*(const int *)(const void *)base); break;
      case K_I64: v = json_integer(*(const int64_t *)(const void *)base); break;
      case K_DBL: v = json_real(*(const double *)(const void *)base); break;
      case K_BOOL: v = json_boolean(*(const bool *)(const void *)base); break;
      case K_STR: v = json_string(base); break;
      case K_TOPO: v = json_string(tpu_ici_topology_name(*(const tpu_ici_topology *)(const void *)base)); break;
    }
    json_object_set_new(o, leaf, v);
  }
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
  json_decref(root);
  if (!s) return NULL;
  char *r = tpu_strdup(s);
  free(s);                               /* jansson allocated it with malloc */
  return r;
}

void tpu_chip_peaks_of(const tpu_chip_config *cfg, tpu_chip_peaks *out) {
  memset(out, 0, sizeof *out);
  out->clock_hz = cfg->clock_mhz * 1e6;
  out->bf16_flops_per_core = 2.0 * cfg->mxu.rows * cfg->mxu.cols * cfg->mxus_per_core * out->clock_hz;
  out->bf16_flops_per_chip = out->bf16_flops_per_core * cfg->cores_per_chip;
  out->bf16_flops_total = out->bf16_flops_per_core * cfg->cores;
  out->hbm_bytes_per_s_per_chip = cfg->hbm_bandwidth_gb_per_s * 1e9;
  out->hbm_bytes_per_flop = out->hbm_bytes_per_s_per_chip / out->bf16_flops_per_chip;
  out->ridge_flops_per_byte = out->bf16_flops_per_chip / out->hbm_bytes_per_s_per_chip;
  out->ici_link_bytes_per_s = cfg->ici_link_gbit_per_s * 1e9 / 8.0;
  out->chips = cfg->cores / cfg->cores_per_chip;
}
