/*
** cmd_matmul.c -- `tpusim matmul`: one GEMM on one core's MXU(s), or every
** layer of a SCALE-Sim topology as one (--topology), layer after layer.
**
** Reports cycles, MXU utilization (the GEMM's own M*N*K multiply-adds over
** rows x cols x arrays x cycles; docs/JSON.md), achieved FLOP/s at the configured clock (2*M*N*K over the
** simulated time; extra bf16 passes cost time but add no FLOPs), and the
** error against an f64 reference on the unrounded f32 inputs (the products
** in double, summed in k order; cli_matmul_error):
**   max_abs_err = max |C - ref|
**   max_rel_err = max |C - ref| / max |ref|   (normwise: near-zero entries of
**                 ref would make an elementwise ratio meaningless)
** The three levels give the same cycles; pe and tile give the same bits.
*/
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "mxu/mxu.h"
#include "scalesim/scalesim.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim matmul --m M --n N --k K [options]\n"
  "       tpusim matmul --a A.npy --b B.npy [options]\n"
  "       tpusim matmul --topology FILE.csv [--input-type conv|gemm] [options]\n\n"
  "Runs C = A.B (A is M x K, B is K x N, f32) through one core's MXU and reports\n"
  "cycles, MXU utilization, FLOP/s and the error against the product in double\n"
  "precision (the same on every host).\n\n"
  "  --m, --n, --k N        GEMM shape (1..2147483648 = 2^31 each at --level timing, also\n"
  "                         with --cores; 1..2147483647 at tile and pe, as memory allows;\n"
  "                         taken from --a/--b when given)\n"
  "  --precision P          bf16 (1 pass, default), bf16x3 or bf16x6 (f32 via 3 or 6 passes)\n"
  "  --level L              pe (every cell, every cycle), tile (default: exact cycles by\n"
  "                         formula, bits by the fast kernel) or timing (cycles only)\n"
  "  --dataflow D           ws (weight-stationary, default), os (output-stationary) or is\n"
  "                         (input-stationary), at every level (docs/MXU_FAST.md)\n"
  "  --seed S               seed for random N(0,1) inputs (default 1)\n"
  "  --a FILE, --b FILE     inputs as .npy (float32, C order, 2-D)\n"
  "  --out FILE             write C as .npy (float32)\n"
  "  --cores C              split along M over C cores (1..16), operands starting in HBM;\n"
  "                         reports the stall breakdown and the roofline position\n"
  "                         (docs/PROGRAMS.md)\n"
  "  --threads N            host threads with --cores (default: the host's cores)\n"
  "  --trace FILE           with --cores: write a Chrome/Perfetto trace\n"
  "  --topology FILE        a SCALE-Sim topology CSV: each layer's GEMM (its lowering,\n"
  "                         docs/SCALESIM.md) as one matmul, per-layer lines and a total;\n"
  "                         the level is timing unless --level says otherwise\n"
  "  --input-type T         with --topology: conv (default) or gemm (name, M, N, K)\n"
  "  --mem-limit MIB        the tile and pe levels hold A, B and C in memory (with --cores\n"
  "                         also the engine's copies): refuse a\n"
  "                         shape needing more than this (default: the machine's\n"
  "                         available memory); the timing level needs none\n";


#define CMD "matmul"

enum { OPT_PRECISION = 1, OPT_LEVEL, OPT_INPUT, OPT_DATAFLOW };

/* {==================================================================
** Options
** ================================================================== */
static int option(void *ud, int id, const char *v) {
  cli_matmul_opts *o = ud;
  if (id == OPT_PRECISION) return cli_precision(CMD, v, &o->precision);
  if (id == OPT_INPUT) { o->input_set = true; return cli_ss_input_type(CMD, v, &o->gemm); }
  if (id == OPT_LEVEL) o->level_set = true;
  if (id == OPT_LEVEL && !tpu_fidelity_parse(v, &o->level))
    return cli_usage_error(CMD, "--level: expected pe, tile or timing, got '%s'", v);
  if (id == OPT_DATAFLOW) {
    if (!tpu_mxu_dataflow_parse(v, &o->dataflow))
      return cli_usage_error(CMD, "--dataflow: expected ws, os or is, got '%s'", v);
    o->dataflow_set = true;
  }
  return 0;
}

static int parse(int argc, char **argv, cli_matmul_opts *o) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  o->precision = TPU_PREC_BF16;
  o->level = TPU_FIDELITY_TILE;
  const cli_opt opts[] = {
    CLI_LONG("m", &o->m, 1, TPU_MXU_MAX_GEMM_DIM), CLI_LONG("n", &o->n, 1, TPU_MXU_MAX_GEMM_DIM),
    CLI_LONG("k", &o->k, 1, TPU_MXU_MAX_GEMM_DIM),
    CLI_LONG("mem-limit", &o->mem_limit_mib, 1, LONG_MAX / 2097152),
    CLI_LONG("seed", &o->seed, 0, LONG_MAX), CLI_LONG("cores", &o->cores, 1, 16),
    CLI_LONG("threads", &o->threads, 1, 1024),
    CLI_ID("precision", OPT_PRECISION, NULL), CLI_ID("level", OPT_LEVEL, NULL),
    CLI_ID("dataflow", OPT_DATAFLOW, NULL),
    CLI_STR("a", &o->a, "--a needs a file name"), CLI_STR("b", &o->b, "--b needs a file name"),
    CLI_STR("out", &o->out, "--out needs a file name"), CLI_STR("trace", &o->trace, "--trace needs a file name"),
    CLI_STR("topology", &o->topology, "--topology needs a topology .csv file"), CLI_ID("input-type", OPT_INPUT, NULL),
  };
  const int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), &o->com, option, o);
  return rc ? rc : o->com.help ? cli_help(HELP, NULL) : CLI_RUN;
}

/* The flags that go together, or not; 0 when they are consistent. */
static int check(const cli_matmul_opts *o) {
  if (!o->a != !o->b) return cli_usage_error(CMD, "--a and --b go together");
  if (o->input_set && !o->topology) return cli_usage_error(CMD, "--input-type goes with --topology");
  if (o->topology && (o->m || o->n || o->k || o->a || o->out || o->cores))
    return cli_usage_error(CMD, "--topology gives each layer's M, N and K; --m, --n, --k, --a, --b, --out and "
                           "--cores do not go with it (tpusim run --topology runs the layers on several cores)");
  if (o->out && o->level == TPU_FIDELITY_TIMING)
    return cli_usage_error(CMD, "--out: the timing level computes no values; use --level tile or pe");
  if (o->level != TPU_FIDELITY_TIMING && (o->m > INT_MAX || o->n > INT_MAX || o->k > INT_MAX))
    return cli_usage_error(CMD, "--m, --n, --k: at --level %s each must be 1..%d (the values are held in memory); "
                           "--level timing takes up to 2147483648", tpu_fidelity_name(o->level), INT_MAX);
  if (o->cores) {
    if (o->dataflow != TPU_MXU_WS)
      return cli_usage_error(CMD, "--dataflow %s does not go with --cores: the chip engine runs weight-stationary MXUs; "
                             "drop --cores (one core runs every dataflow) or use --dataflow ws",
                             tpu_mxu_dataflow_name(o->dataflow));
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
** limit is refused (exit 2) with the figure, after 'what' (a topology's
** layer, or ""). 0 when it fits. */
static int check_memory(const cli_matmul_opts *o, const char *what) {
  if (o->level == TPU_FIDELITY_TIMING) return 0;
  const double m = (double)o->m, n = (double)o->n, k = (double)o->k, c = (double)o->cores;
  const double parts = o->precision == TPU_PREC_BF16 && o->level == TPU_FIDELITY_TILE ? 0 : tpu_precision_parts(o->precision);
  /* A, B and C in f32, and the operands' bf16 parts (the f64 reference is
  ** computed block by block and holds nothing); with --cores the engine's
  ** program holds A and every core's B as initial values, and its run the
  ** values of every HBM block (A, B, C) again */
  double need = o->cores ? 4.0 * (3.0 * m * k + (1.0 + 2.0 * c) * k * n + 2.0 * m * n)
                         : 4.0 * (m * k + k * n + m * n) + 4.0 * parts * (m * k + k * n);
  if (!o->cores && o->dataflow == TPU_MXU_IS && o->level == TPU_FIDELITY_PE)   /* the transposed operands and C */
    need += 4.0 * (parts * (m * k + k * n) + m * n);
  const double limit = o->mem_limit_mib ? (double)o->mem_limit_mib * 1048576.0 : available_bytes();
  if (limit > 0 && need > limit)
    return cli_usage_error(CMD, "%s%ld x %ld x %ld at --level %s needs %.3g GiB (%s), more than the limit of %.3g GiB "
                           "(%s); use --level timing (cycles only, no memory) or a smaller shape", what, o->m, o->n,
                           o->k, tpu_fidelity_name(o->level), need / 1073741824.0,
                           o->cores ? "A, B and C in f32, the program's HBM blocks and their values "
                           "in the run" : parts ? "A, B and C in f32, and the operands' bf16 parts"
                           : "A, B and C in f32", limit / 1073741824.0,
                           o->mem_limit_mib ? "--mem-limit" : "the machine's available memory; --mem-limit MIB sets another");
  return 0;
}
/* }================================================================== */

/* {==================================================================
** Inputs (the seeded ones and the reference are matmul_ref.c's)
** ================================================================== */
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
  tpu_mxu_config mxu = chip->mxu;
  mxu.dataflow = o->dataflow;
  const double t0 = cli_now_s();
  tpu_status st = tpu_mxu_gemm(&mxu, chip->mxus_per_core, o->level, o->precision, o->m, o->n, o->k, r->a, r->b,
                               r->c, &r->res);
  r->wall = cli_now_s() - t0;
  if (st == TPU_ERR_RANGE) {   /* the cycles are at least the MACs over the cells, each pass */
    const double macs = (double)o->m * (double)o->n * (double)o->k * tpu_precision_passes(o->precision);
    return cli_usage_error(CMD, "%ld x %ld x %ld: the run needs %.3g multiply-adds, at least %.3g cycles on %d MXU%s "
                           "of %dx%d; the simulator counts up to 2^62 (%.3g) of either", o->m, o->n, o->k, macs,
                           macs / ((double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core),
                           chip->mxus_per_core, chip->mxus_per_core > 1 ? "s" : "", chip->mxu.rows, chip->mxu.cols,
                           (double)TPU_MXU_MAX_COUNT);
  }
  if (st != TPU_OK) return cli_fail(CMD, st, "gemm failed: %s", tpu_status_str(st));
  if (r->values) cli_matmul_error(o->m, o->n, o->k, r->a, r->b, r->c, &r->max_abs, &r->max_rel);
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
  json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o}",
    "chip", chip->name, "m", (json_int_t)o->m, "n", (json_int_t)o->n, "k", (json_int_t)o->k,
    "precision", tpu_precision_name(o->precision), "level", tpu_fidelity_name(o->level),
    "cycles", (json_int_t)r->res.cycles, "time_s", cli_json_real(f.time_s), "mxu_utilization", cli_json_real(f.util),
    "flops_per_s", cli_json_real(f.flops), "peak_flops_per_s", cli_json_real(f.pk.bf16_flops_per_core),
    "tiles", (json_int_t)r->res.tiles, "macs", (json_int_t)r->res.macs,
    "weight_loads", (json_int_t)r->res.weight_loads, "wall_s", cli_json_real(r->wall));
  if (o->dataflow_set) json_object_set_new(j, "dataflow", json_string(tpu_mxu_dataflow_name(o->dataflow)));
  json_object_set_new(j, "max_abs_err", r->values ? cli_json_real(r->max_abs) : json_null());
  json_object_set_new(j, "max_rel_err", r->values ? cli_json_real(r->max_rel) : json_null());
  return j;
}

/* The CSV columns of a sweep point (sweep/sweep.h), set by cli_matmul_row below. */
static const tpu_sweep_field FIELDS[] = {
  { "cycles", TPU_SWEEP_INT }, { "time_s", TPU_SWEEP_REAL }, { "mxu_utilization", TPU_SWEEP_REAL },
  { "flops_per_s", TPU_SWEEP_REAL }, { "achieved_flops_per_s", TPU_SWEEP_REAL }, { "tiles", TPU_SWEEP_INT },
  { "macs", TPU_SWEEP_INT }, { "hbm_bytes", TPU_SWEEP_REAL }, { "bound", TPU_SWEEP_STR },
  { "max_abs_err", TPU_SWEEP_REAL }, { "max_rel_err", TPU_SWEEP_REAL },
};

/* A sweep point's row (NULL: none): the one-core figures, no roofline. */
static void sweep_row(const tpu_chip_config *chip, const cli_matmul_opts *o, const mm_run *r, tpu_sweep_row *row) {
  const mm_figures f = figures(chip, o, r);
  cli_matmul_row(row, &(cli_matmul_figures){ (int64_t)r->res.cycles, f.time_s, f.util, f.flops, NAN,
                                             (int64_t)r->res.tiles, (int64_t)r->res.macs, NAN, NULL, r->values,
                                             r->max_abs, r->max_rel });
}

void cli_matmul_row(tpu_sweep_row *row, const cli_matmul_figures *f) {
  tpu_sweep_row_int(row, "cycles", f->cycles);
  tpu_sweep_row_real(row, "time_s", f->time_s);
  tpu_sweep_row_real(row, "mxu_utilization", f->mxu_utilization);
  tpu_sweep_row_real(row, "flops_per_s", f->flops_per_s);
  tpu_sweep_row_real(row, "achieved_flops_per_s", f->achieved_flops_per_s);
  if (f->tiles < 0) tpu_sweep_row_null(row, "tiles");
  else tpu_sweep_row_int(row, "tiles", f->tiles);
  if (f->macs < 0) tpu_sweep_row_null(row, "macs");
  else tpu_sweep_row_int(row, "macs", f->macs);
  tpu_sweep_row_real(row, "hbm_bytes", f->hbm_bytes);
  if (f->bound) tpu_sweep_row_str(row, "bound", f->bound, strlen(f->bound));
  else tpu_sweep_row_null(row, "bound");
  tpu_sweep_row_real(row, "max_abs_err", f->values ? f->max_abs_err : NAN);
  tpu_sweep_row_real(row, "max_rel_err", f->values ? f->max_rel_err : NAN);
}

static int report_text(const tpu_chip_config *chip, const cli_matmul_opts *o, const mm_run *r) {
  const mm_figures f = figures(chip, o, r);
  printf("matmul %ld x %ld x %ld (M x N x K), %s, level %s%s%s, on one core of %s "
         "(%d MXU%s of %dx%d at %.0f MHz)\n", o->m, o->n, o->k, tpu_precision_name(o->precision),
         tpu_fidelity_name(o->level), o->dataflow_set ? ", dataflow " : "",
         o->dataflow_set ? tpu_mxu_dataflow_name(o->dataflow) : "", chip->name, chip->mxus_per_core, chip->mxus_per_core > 1 ? "s" : "",
         chip->mxu.rows, chip->mxu.cols, chip->clock_mhz);
  printf("  cycles            %llu (%.3f us)\n", (unsigned long long)r->res.cycles, f.time_s * 1e6);
  if (o->dataflow == TPU_MXU_OS)
    printf("  tiles             %llu (output-stationary: nothing loaded, both operands stream)\n",
           (unsigned long long)r->res.tiles);
  else
    printf("  tiles             %llu (%llu %s loads)\n", (unsigned long long)r->res.tiles,
           (unsigned long long)r->res.weight_loads, o->dataflow == TPU_MXU_IS ? "input" : "weight");
  printf("  mxu utilization   %.1f%%\n", 100.0 * f.util);
  printf("  achieved          %.3f TFLOP/s of %.3f peak\n", f.flops / 1e12, f.pk.bf16_flops_per_core / 1e12);
  if (r->values)
    printf("  error vs f64 ref  max abs %.3g, max rel %.3g (normwise)\n", r->max_abs, r->max_rel);
  else
    printf("  error vs f64 ref  (timing level: no values)\n");
  printf("  wall time         %.3f s\n", r->wall);
  if (o->out) printf("  wrote             %s\n", o->out);
  return 0;
}
/* }================================================================== */

/* {==================================================================
** --topology: every layer of a SCALE-Sim topology as one matmul
** ================================================================== */
typedef struct mt_layer { tpu_mxu_gemm_result res; double max_abs, max_rel, wall; } mt_layer;

/* Layer i as a matmul on one core, as the single command runs one. */
static int topology_layer(const tpu_chip_config *chip, cli_matmul_opts *o, const tpu_ss_layer *L, mt_layer *out) {
  char what[256];
  snprintf(what, sizeof what, "%s:%d: layer '%s': ", o->topology, L->line, L->name);
  const int64_t max = o->level == TPU_FIDELITY_TIMING ? TPU_MXU_MAX_GEMM_DIM : INT_MAX;
  if (L->m > (uint64_t)max || L->n > (uint64_t)max || L->k > (uint64_t)max)
    return cli_usage_error(CMD, "%sGEMM %llu x %llu x %llu: a matmul at --level %s takes M, N and K of 1..%lld", what,
                           (unsigned long long)L->m, (unsigned long long)L->n, (unsigned long long)L->k,
                           tpu_fidelity_name(o->level), (long long)max);
  o->m = (long)L->m; o->n = (long)L->n; o->k = (long)L->k;
  mm_run r = { 0 };
  int rc = check_memory(o, what);
  if (!rc && !(rc = load_inputs(o, &r)) && !(rc = run(chip, o, &r)))
    *out = (mt_layer){ r.res, r.values ? r.max_abs : 0, r.values ? r.max_rel : 0, r.wall };
  tpu_free(r.a); tpu_free(r.b); tpu_free(r.c);
  return rc;
}

/* The report's totals: cycles, MACs, tiles and weight loads summed, the
** largest errors. */
static mt_layer topology_total(const mt_layer *ls, int n) {
  mt_layer t = { .res = { 0 } };
  for (int i = 0; i < n; i++) {
    t.res.cycles += ls[i].res.cycles; t.res.macs += ls[i].res.macs;
    t.res.tiles += ls[i].res.tiles; t.res.weight_loads += ls[i].res.weight_loads;
    t.max_abs = fmax(t.max_abs, ls[i].max_abs); t.max_rel = fmax(t.max_rel, ls[i].max_rel);
    t.wall += ls[i].wall;
  }
  return t;
}

/* One layer's (or the total's) figures as JSON: cycles, seconds, the
** GEMM's utilization, the array's MACs, tiles, weight loads, errors. */
static json_t *topology_fig_json(const tpu_chip_config *chip, const cli_matmul_opts *o, const mt_layer *l,
                                 double gemm_macs) {
  const double cells = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core;
  const bool values = o->level != TPU_FIDELITY_TIMING;
  return json_pack("{s:I, s:o, s:o, s:I, s:I, s:I, s:o, s:o}", "cycles", (json_int_t)l->res.cycles,
    "time_s", cli_json_real((double)l->res.cycles / (chip->clock_mhz * 1e6)),
    "mxu_utilization", cli_json_real(gemm_macs / (cells * (double)l->res.cycles)), "macs", (json_int_t)l->res.macs,
    "tiles", (json_int_t)l->res.tiles, "weight_loads", (json_int_t)l->res.weight_loads,
    "max_abs_err", values ? cli_json_real(l->max_abs) : json_null(),
    "max_rel_err", values ? cli_json_real(l->max_rel) : json_null());
}

static json_t *topology_json(const tpu_chip_config *chip, const cli_matmul_opts *o, const tpu_ss_topology *tp,
                             const mt_layer *ls) {
  const mt_layer t = topology_total(ls, tp->n);
  json_t *arr = json_array();
  double all = 0;
  for (int i = 0; arr && i < tp->n; i++) {
    const tpu_ss_layer *L = &tp->layers[i];
    const double macs = (double)L->m * (double)L->n * (double)L->k;
    json_t *e = json_pack("{s:s, s:i, s:I, s:I, s:I}", "name", L->name, "line", L->line, "m", (json_int_t)L->m,
                          "n", (json_int_t)L->n, "k", (json_int_t)L->k);
    all += macs;
    if (!e || json_object_update_new(e, topology_fig_json(chip, o, &ls[i], macs)) || json_array_append_new(arr, e)) {
      json_decref(arr);
      arr = NULL;
    }
  }
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "chip", chip->name, "topology", o->topology, "input_type",
                        o->gemm ? "gemm" : "conv", "precision", tpu_precision_name(o->precision), "level",
                        tpu_fidelity_name(o->level), "layer_count", tp->n);
  json_t *tot = topology_fig_json(chip, o, &t, all);
  if (!j || !tot || !arr || json_object_update(j, tot) || json_object_set_new(j, "layers", arr) ||
      json_object_set_new(j, "wall_s", cli_json_real(t.wall))) {
    json_decref(j); json_decref(tot);
    return NULL;
  }
  json_decref(tot);
  return j;
}

static void topology_text(const tpu_chip_config *chip, const cli_matmul_opts *o, const tpu_ss_topology *tp,
                          const mt_layer *ls) {
  const double cells = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core;
  const bool values = o->level != TPU_FIDELITY_TIMING;
  printf("matmul %s (%d layers, %s), each layer one matmul on one core of %s (%d MXU%s of %dx%d at %.0f MHz), "
         "%s, level %s\n", o->topology, tp->n, o->gemm ? "gemm" : "conv", chip->name, chip->mxus_per_core,
         chip->mxus_per_core > 1 ? "s" : "", chip->mxu.rows, chip->mxu.cols, chip->clock_mhz,
         tpu_precision_name(o->precision), tpu_fidelity_name(o->level));
  printf("  %-4s %-22s %8s %8s %8s %12s %7s%s\n", "id", "layer", "M", "N", "K", "cycles", "util%",
         values ? "  max rel err" : "");
  double all = 0;
  for (int i = 0; i < tp->n; i++) {
    const tpu_ss_layer *L = &tp->layers[i];
    const double macs = (double)L->m * (double)L->n * (double)L->k;
    all += macs;
    printf("  %-4d %-22s %8llu %8llu %8llu %12llu %7.2f", i, L->name, (unsigned long long)L->m,
           (unsigned long long)L->n, (unsigned long long)L->k, (unsigned long long)ls[i].res.cycles,
           100.0 * macs / (cells * (double)ls[i].res.cycles));
    if (values) printf("  %.3g", ls[i].max_rel);
    printf("\n");
  }
  const mt_layer t = topology_total(ls, tp->n);
  printf("  total %llu cycles (%.3f us), MXU utilization %.2f%%, %llu tiles; wall time %.3f s\n",
         (unsigned long long)t.res.cycles, (double)t.res.cycles / chip->clock_mhz,
         100.0 * all / (cells * (double)t.res.cycles), (unsigned long long)t.res.tiles, t.wall);
}

/* A sweep point's row (NULL: none): the total's figures. */
static void topology_row(const tpu_chip_config *chip, const cli_matmul_opts *o, const tpu_ss_topology *tp,
                         const mt_layer *ls, tpu_sweep_row *row) {
  const mt_layer t = topology_total(ls, tp->n);
  const double cells = (double)chip->mxu.rows * chip->mxu.cols * chip->mxus_per_core;
  double all = 0;
  for (int i = 0; i < tp->n; i++) all += (double)tp->layers[i].m * (double)tp->layers[i].n * (double)tp->layers[i].k;
  cli_matmul_row(row, &(cli_matmul_figures){ (int64_t)t.res.cycles, (double)t.res.cycles / (chip->clock_mhz * 1e6),
                                             all / (cells * (double)t.res.cycles), NAN, NAN, (int64_t)t.res.tiles,
                                             (int64_t)t.res.macs, NAN, NULL, o->level != TPU_FIDELITY_TIMING,
                                             t.max_abs, t.max_rel });
}

static int topology_run(const tpu_chip_config *chip, cli_matmul_opts *o, json_t **report, tpu_sweep_row *row) {
  if (!o->level_set) o->level = TPU_FIDELITY_TIMING;
  tpu_ss_topology tp;
  char err[1024];
  const tpu_status st = tpu_ss_topology_read(o->topology, o->gemm, &tp, err, sizeof err);
  if (st) return cli_fail(CMD, st, "%s", err);
  int rc = 0;
  mt_layer *ls = tpu_calloc((size_t)tp.n, sizeof *ls);
  if (!ls) rc = cli_runtime_error(CMD, "out of memory");
  for (int i = 0; i < tp.n && !rc; i++) rc = topology_layer(chip, o, &tp.layers[i], &ls[i]);
  if (!rc) topology_row(chip, o, &tp, ls, row);
  if (!rc && !o->com.json) topology_text(chip, o, &tp, ls);
  else if (!rc && !(*report = topology_json(chip, o, &tp, ls))) rc = cli_runtime_error(CMD, "out of memory");
  tpu_free(ls);
  tpu_ss_topology_free(&tp);
  return rc;
}
/* }================================================================== */

/* One run of matmul on parsed options (reentrant: tpusim sweep runs points
** on several threads). With --json, *report gets the report; otherwise the
** text report is printed and *report is NULL. A sweep point's row gets its
** CSV columns. */
static int matmul_run(const void *op, json_t **report, tpu_sweep_row *row) {
  cli_matmul_opts o = *(const cli_matmul_opts *)op;   /* load_npy fills in --m, --n, --k */
  *report = NULL;
  tpu_chip_config chip;
  int rc;
  if ((rc = cli_load_chip(CMD, &o.com, &chip)) || (rc = check(&o))) return rc;
  if (o.dataflow == TPU_MXU_OS && !chip.mxu.double_buffer)
    return cli_usage_error(CMD, "--dataflow os needs the second accumulator bank of a double-buffered MXU, and "
                           "chip %s has mxu.double_buffer false (a single-bank os array is not modelled)", chip.name);
  if (o.topology) return topology_run(&chip, &o, report, row);
  if (!o.a && (rc = check_memory(&o, ""))) return rc;
  if (o.cores) return cli_matmul_cores(&chip, &o, report, row);
  mm_run r = { 0 };
  if (!(rc = load_inputs(&o, &r)) && !(rc = run(&chip, &o, &r))) {
    sweep_row(&chip, &o, &r, row);
    if (!o.com.json) rc = report_text(&chip, &o, &r);
    else if (!(*report = report_json(&chip, &o, &r))) rc = cli_runtime_error(CMD, "out of memory");
  }
  tpu_free(r.a);
  tpu_free(r.b);
  tpu_free(r.c);
  return rc;
}

/* The command as a sweep point (sweep/sweep.h) and as itself. */
static int parse_point(int argc, char **argv, void *o) { return parse(argc, argv, o); }
static int check_point(const void *o, char *memo, size_t cap) {
  return cli_sweep_check_chip(&((const cli_matmul_opts *)o)->com, memo, cap);
}
const tpu_sweep_cmd cli_matmul_cmd = { CMD, sizeof(cli_matmul_opts), false, parse_point, check_point, matmul_run,
                                       FIELDS, (int)(sizeof FIELDS / sizeof *FIELDS), NULL, 0 };

int cli_cmd_matmul(int argc, char **argv) {
  return cli_point_main(&cli_matmul_cmd, argc, argv, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
}
