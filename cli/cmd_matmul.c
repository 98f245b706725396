/*
** cmd_matmul.c -- `tpusim matmul`: one GEMM on one core's MXU(s).
**
** Reports cycles, MXU utilization (MACs done by the array over
** cells x cycles), achieved FLOP/s at the configured clock (2*M*N*K over the
** simulated time; extra bf16 passes cost time but add no FLOPs), and the
** error against OpenBLAS sgemm on the unrounded f32 inputs:
**   max_abs_err = max |C - ref|
**   max_rel_err = max |C - ref| / max |ref|   (normwise: near-zero entries of
**                 ref would make an elementwise ratio meaningless)
** The three levels give the same cycles; pe and tile give the same bits.
*/
#include <cblas.h>
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "mxu/mxu.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim matmul --m M --n N --k K [options]\n"
  "       tpusim matmul --a A.npy --b B.npy [options]\n\n"
  "Runs C = A.B (A is M x K, B is K x N, f32) through one core's MXU and reports\n"
  "cycles, MXU utilization, FLOP/s and the error against OpenBLAS sgemm.\n\n"
  "  --m, --n, --k N        GEMM shape (1..2147483647 each; taken from --a/--b when given;\n"
  "                         1..65536 with --cores)\n"
  "  --precision P          bf16 (1 pass, default), bf16x3 or bf16x6 (f32 via 3 or 6 passes)\n"
  "  --level L              pe (every cell, every cycle), tile (default: exact cycles by\n"
  "                         formula, bits by the fast kernel) or timing (cycles only)\n"
  "  --seed S               seed for random N(0,1) inputs (default 1)\n"
  "  --a FILE, --b FILE     inputs as .npy (float32, C order, 2-D)\n"
  "  --out FILE             write C as .npy (float32)\n"
  "  --cores C              split along M over C cores (1..16), operands starting in HBM;\n"
  "                         reports the stall breakdown and the roofline position\n"
  "                         (docs/PROGRAMS.md)\n"
  "  --threads N            host threads with --cores (default: the host's cores)\n"
  "  --trace FILE           with --cores: write a Chrome/Perfetto trace\n"
  "  --mem-limit MIB        the tile and pe levels hold A, B and C in memory: refuse a\n"
  "                         shape needing more than this (default: the machine's\n"
  "                         available memory); the timing level needs none\n";


#define CMD "matmul"

enum { OPT_PRECISION = 1, OPT_LEVEL };

/* {==================================================================
** Options
** ================================================================== */
static int option(void *ud, int id, const char *v) {
  cli_matmul_opts *o = ud;
  if (id == OPT_PRECISION) return cli_precision(CMD, v, &o->precision);
  if (id == OPT_LEVEL && !tpu_fidelity_parse(v, &o->level))
    return cli_usage_error(CMD, "--level: expected pe, tile or timing, got '%s'", v);
  return 0;
}

static int parse(int argc, char **argv, cli_matmul_opts *o) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  o->precision = TPU_PREC_BF16;
  o->level = TPU_FIDELITY_TILE;
  const cli_opt opts[] = {
    CLI_LONG("m", &o->m, 1, INT_MAX), CLI_LONG("n", &o->n, 1, INT_MAX), CLI_LONG("k", &o->k, 1, INT_MAX),
    CLI_LONG("mem-limit", &o->mem_limit_mib, 1, LONG_MAX / 2097152),
    CLI_LONG("seed", &o->seed, 0, LONG_MAX), CLI_LONG("cores", &o->cores, 1, 16),
    CLI_LONG("threads", &o->threads, 1, 1024),
    CLI_ID("precision", OPT_PRECISION, NULL), CLI_ID("level", OPT_LEVEL, NULL),
    CLI_STR("a", &o->a, "--a needs a file name"), CLI_STR("b", &o->b, "--b needs a file name"),
    CLI_STR("out", &o->out, "--out needs a file name"), CLI_STR("trace", &o->trace, "--trace needs a file name"),
  };
  const int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), &o->com, option, o);
  return rc ? rc : o->com.help ? cli_help(HELP, NULL) : CLI_RUN;
}

/* The flags that go together, or not; 0 when they are consistent. */
static int check(const cli_matmul_opts *o) {
  if (!o->a != !o->b) return cli_usage_error(CMD, "--a and --b go together");
  if (o->out && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--out: the timing level computes no values; use --level tile or pe");
  if (o->cores) {
    if (!o->m || !o->n || !o->k) return cli_usage_error(CMD, "--cores needs --m, --n and --k");
    if (o->a || o->out)
      return cli_usage_error(CMD, "--cores runs seeded inputs in HBM; --a, --b and --out are for one core");
    if (o->level == TPU_FIDELITY_PE)
      return cli_usage_error(CMD, "--level pe does not go with --cores: the chip engine runs the cores at the tile "
                             "or timing level; use --level tile (the same cycles and bits as pe) with --cores, or "
                             "--level pe on one core (without --cores)");
    return 0;
  }
  if (o->trace || o->threads)
    return cli_usage_error(CMD, "--trace and --threads go with --cores (one core runs no engine)");
  return 0;
}

/* The machine's available memory in bytes (MemAvailable), or 0 if unknown. */
static double available_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024.0;
}

/* The tile and pe levels hold the operands: the memory a run needs is
** computed before anything is allocated, and a run needing more than the
** limit is refused (exit 2) with the figure. 0 when it fits. */
static int check_memory(const cli_matmul_opts *o) {
  if (o->level == TPU_FIDELITY_TIMING || o->cores) return 0;
  const double m = (double)o->m, n = (double)o->n, k = (double)o->k;
  const double parts = o->precision == TPU_PREC_BF16 && o->level == TPU_FIDELITY_TILE ? 0 : tpu_precision_parts(o->precision);
  /* A, B, C and the sgemm reference in f32, and the operands' bf16 parts */
  const double need = 4.0 * (m * k + k * n + 2.0 * m * n) + 4.0 * parts * (m * k + k * n);
  const double limit = o->mem_limit_mib ? (double)o->mem_limit_mib * 1048576.0 : available_bytes();
  if (limit > 0 && need > limit)
    return cli_usage_error(CMD, "%ld x %ld x %ld at --level %s needs %.3g GiB (A, B, C and the reference in f32%s), "
                           "more than the limit of %.3g GiB (%s); use --level timing (cycles only, no memory) or "
                           "a smaller shape", o->m, o->n, o->k, tpu_fidelity_name(o->level), need / 1073741824.0,
                           parts ? ", and the operands' bf16 parts" : "", limit / 1073741824.0,
                           o->mem_limit_mib ? "--mem-limit" : "the machine's available memory; --mem-limit MIB sets another");
  return 0;
}
/* }================================================================== */

/* {==================================================================
** Inputs and the reference (shared with matmul_cores.c)
** ================================================================== */
bool cli_matmul_seeded(long seed, long m, long n, long k, float **a, float **b) {
  const size_t mk = (size_t)m * (size_t)k, kn = (size_t)k * (size_t)n;
  *a = tpu_malloc(mk * sizeof **a);
  *b = tpu_malloc(kn * sizeof **b);
  if (!*a || !*b) {
    tpu_free(*a); tpu_free(*b);
    *a = *b = NULL;
    return false;
  }
  uint64_t r = (uint64_t)seed;
  tpu_normal_fill(&r, *a, mk);
  tpu_normal_fill(&r, *b, kn);
  return true;
}

bool cli_matmul_error(long m, long n, long k, const float *a, const float *b, const float *c, double *max_abs,
                      double *max_rel) {
  const size_t mn = (size_t)m * (size_t)n;
  float *ref = tpu_malloc(mn * sizeof *ref);
  if (!ref) return false;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n, 0.0f,
              ref, (int)n);
  double mx = 0, max_ref = 0;
  for (size_t j = 0; j < mn; j++) {
    const double d = fabs((double)c[j] - (double)ref[j]);
    if (!(d <= mx)) mx = d;                          /* NaN propagates */
    if (fabs((double)ref[j]) > max_ref) max_ref = fabs((double)ref[j]);
  }
  tpu_free(ref);
  *max_abs = mx;
  *max_rel = max_ref > 0 ? mx / max_ref : mx;
  return true;
}

/* The one-core run: inputs, result and what it measured. */
typedef struct mm_run {
  float *a, *b, *c;            /* C is NULL at the timing level */
  bool values;                 /* not the timing level */
  tpu_mxu_gemm_result res;
  double wall, max_abs, max_rel;
} mm_run;

/* --a and --b: 2-D float32 arrays whose shapes give (or must agree with)
** --m, --n and --k. */
static int load_npy(cli_matmul_opts *o, mm_run *r) {
  char err[1024];
  tpu_npy A, B;
  tpu_status st = tpu_npy_read_f32(o->a, &A, &r->a, err, sizeof err);
  if (st == TPU_OK) st = tpu_npy_read_f32(o->b, &B, &r->b, err, sizeof err);
  if (st != TPU_OK) return cli_fail(CMD, st, "%s", err);
  if (A.ndim != 2 || B.ndim != 2)
    return cli_usage_error(CMD, "%s: expected 2-D arrays, got %d-D", A.ndim != 2 ? o->a : o->b,
                           A.ndim != 2 ? A.ndim : B.ndim);
  if (A.shape[1] != B.shape[0])
    return cli_usage_error(CMD, "inner dimensions differ: %s is %lld x %lld, %s is %lld x %lld", o->a,
                           (long long)A.shape[0], (long long)A.shape[1], o->b, (long long)B.shape[0],
                           (long long)B.shape[1]);
  const long dims[3] = { (long)A.shape[0], (long)B.shape[1], (long)A.shape[1] };
  long *given[3] = { &o->m, &o->n, &o->k };
  static const char *const names[3] = { "--m", "--n", "--k" };
  for (int j = 0; j < 3; j++) {
    if (dims[j] < 1 || dims[j] > INT_MAX)
      return cli_usage_error(CMD, "%s: dimension %ld out of range 1..%d", j == 1 ? o->b : o->a, dims[j], INT_MAX);
    if (*given[j] && *given[j] != dims[j])
      return cli_usage_error(CMD, "%s %ld disagrees with the input files (%ld)", names[j], *given[j], dims[j]);
    *given[j] = dims[j];
  }
  return 0;
}

static int load_inputs(cli_matmul_opts *o, mm_run *r) {
  int rc;
  if (o->a && (rc = load_npy(o, r))) return rc;
  if (!o->a && (!o->m || !o->n || !o->k))
    return cli_usage_error(CMD, "give --m, --n and --k, or --a and --b (tpusim matmul --help)");
  r->values = o->level != TPU_FIDELITY_TIMING;
  if (!r->values) return 0;
  if ((!r->a && !cli_matmul_seeded(o->seed, o->m, o->n, o->k, &r->a, &r->b)) ||
      !(r->c = tpu_malloc((size_t)o->m * (size_t)o->n * sizeof *r->c)))
    return cli_runtime_error(CMD, "out of memory for %ld x %ld x %ld", o->m, o->n, o->k);
  return 0;
}
/* }================================================================== */

/* {==================================================================
** One core: run and report
** ================================================================== */
static int run(const tpu_chip_config *chip, const cli_matmul_opts *o, mm_run *r) {
  const double t0 = cli_now_s();
  tpu_status st = tpu_mxu_gemm(&chip->mxu, chip->mxus_per_core, o->level, o->precision, (int)o->m, (int)o->n,
                               (int)o->k, r->a, r->b, r->c, &r->res);
  r->wall = cli_now_s() - t0;
  if (st != TPU_OK) return cli_fail(CMD, st, "gemm failed: %s", tpu_status_str(st));
  if (r->values && !cli_matmul_error(o->m, o->n, o->k, r->a, r->b, r->c, &r->max_abs, &r->max_rel))
    return cli_runtime_error(CMD, "out of memory for %ld x %ld x %ld", o->m, o->n, o->k);
  const int64_t shape[2] = { o->m, o->n };
  if (o->out && tpu_npy_write_f32(o->out, r->c, 2, shape))
    return cli_runtime_error(CMD, "--out %s: cannot write: %s", o->out, strerror(errno));
  return 0;
}

/* What the report derives from the run. */
typedef struct mm_figures { tpu_chip_peaks pk; double time_s, util, flops; } mm_figures;

static mm_figures figures(const tpu_chip_config *chip, const cli_matmul_opts *o, const mm_run *r) {
  mm_figures f;
  tpu_chip_peaks_of(chip, &f.pk);
  f.time_s = (double)r->res.cycles / f.pk.clock_hz;
  const double cells = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core;
  /* docs/JSON.md's one meaning: the GEMM's own multiply-adds (each once,
  ** whatever the precision's passes; "macs" counts the array's) */
  f.util = (double)o->m * (double)o->n * (double)o->k / (cells * (double)r->res.cycles);
  f.flops = 2.0 * (double)o->m * (double)o->n * (double)o->k / f.time_s;
  return f;
}

/* The --json report; NULL when out of memory. */
static json_t *report_json(const tpu_chip_config *chip, const cli_matmul_opts *o, const mm_run *r) {
  const mm_figures f = figures(chip, o, r);
  json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o}",
    "chip", chip->name, "m", (int)o->m, "n", (int)o->n, "k", (int)o->k,
    "precision", tpu_precision_name(o->precision), "level", tpu_fidelity_name(o->level),
    "cycles", (json_int_t)r->res.cycles, "time_s", cli_json_real(f.time_s), "mxu_utilization", cli_json_real(f.util),
    "flops_per_s", cli_json_real(f.flops), "peak_flops_per_s", cli_json_real(f.pk.bf16_flops_per_core),
    "tiles", (json_int_t)r->res.tiles, "macs", (json_int_t)r->res.macs,
    "weight_loads", (json_int_t)r->res.weight_loads, "wall_s", cli_json_real(r->wall));
  json_object_set_new(j, "max_abs_err", r->values ? cli_json_real(r->max_abs) : json_null());
  json_object_set_new(j, "max_rel_err", r->values ? cli_json_real(r->max_rel) : json_null());
  return j;
}

static int report_text(const tpu_chip_config *chip, const cli_matmul_opts *o, const mm_run *r) {
  const mm_figures f = figures(chip, o, r);
  printf("matmul %ld x %ld x %ld (M x N x K), %s, level %s, on one core of %s "
         "(%d MXU%s of %dx%d at %.0f MHz)\n", o->m, o->n, o->k, tpu_precision_name(o->precision),
         tpu_fidelity_name(o->level), chip->name, chip->mxus_per_core, chip->mxus_per_core > 1 ? "s" : "",
         chip->mxu.rows, chip->mxu.cols, chip->clock_mhz);
  printf("  cycles            %llu (%.3f us)\n", (unsigned long long)r->res.cycles, f.time_s * 1e6);
  printf("  tiles             %llu (%llu weight loads)\n", (unsigned long long)r->res.tiles,
         (unsigned long long)r->res.weight_loads);
  printf("  mxu utilization   %.1f%%\n", 100.0 * f.util);
  printf("  achieved          %.3f TFLOP/s of %.3f peak\n", f.flops / 1e12, f.pk.bf16_flops_per_core / 1e12);
  if (r->values)
    printf("  error vs sgemm    max abs %.3g, max rel %.3g (normwise)\n", r->max_abs, r->max_rel);
  else
    printf("  error vs sgemm    (timing level: no values)\n");
  printf("  wall time         %.3f s\n", r->wall);
  if (o->out) printf("  wrote             %s\n", o->out);
  return 0;
}
/* }================================================================== */

/* One run of matmul on parsed options (reentrant: tpusim sweep runs points
** on several threads). With --json, *report gets the report; otherwise the
** text report is printed and *report is NULL. */
static int matmul_run(const void *op, json_t **report) {
  cli_matmul_opts o = *(const cli_matmul_opts *)op;   /* load_npy fills in --m, --n, --k */
  *report = NULL;
  tpu_chip_config chip;
  int rc;
  if ((rc = cli_load_chip(CMD, &o.com, &chip)) || (rc = check(&o))) return rc;
  if (o.cores && (o.m > 65536 || o.n > 65536 || o.k > 65536))
    return cli_usage_error(CMD, "--cores: --m, --n and --k must be 1..65536 (the engine's GEMM program holds "
                           "them in HBM blocks); without --cores the timing level takes up to 2147483647");
  if (o.cores) return cli_matmul_cores(&chip, &o, report);
  mm_run r = { 0 };
  if (!o.a && (rc = check_memory(&o))) return rc;
  if (!(rc = load_inputs(&o, &r)) && !(rc = run(&chip, &o, &r))) {
    if (!o.com.json) rc = report_text(&chip, &o, &r);
    else if (!(*report = report_json(&chip, &o, &r))) rc = cli_runtime_error(CMD, "out of memory");
  }
  tpu_free(r.a);
  tpu_free(r.b);
  tpu_free(r.c);
  return rc;
}

CLI_POINT_COMMAND(matmul, cli_matmul_opts, false, true, parse, matmul_run,
                  JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
