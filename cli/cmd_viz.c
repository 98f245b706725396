/*
** cmd_viz.c -- `tpusim viz`: the SDL2 window (or headless PNG frames) showing
** the selected core's systolic array cell by cell and every core's timeline
** in the stall taxonomy. The drawing is in viz/; this file parses flags.
*/
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_int.h"
#include "datafeed/df.h"
#include "frontend/fe.h"
#include "sim/sim.h"
#include "viz/viz.h"

static const char HELP[] =
  "usage: tpusim viz [--m M --n N --k K] [--seed S] [options]\n"
  "       tpusim viz --program FILE.json [options]\n"
  "       tpusim viz --model NAME|FILE [--batch B] [--cores C] [options]\n"
  "       tpusim viz --pipeline FILE.json [--model NAME|FILE] [--batch B] [--steps N] [options]\n"
  "       tpusim viz --headless --frames N [--every CYCLES] --out DIR [options]\n\n"
  "Opens a window on a workload run on the chip engine: the selected core's MXU\n"
  "cell by cell from the PE-level model (idle, loading weights, computing shaded\n"
  "by activation or partial sum), the skewed input queue, the accumulators, and a\n"
  "timeline per core and unit colored by mxu_busy, vpu_busy, memory_wait,\n"
  "infeed_wait, collective_wait and idle, with the infeed queue and the totals.\n"
  "The workload is one of:\n"
  "  on the teach preset, by default, the class workload: one training step of\n"
  "    docs/examples/teach-class.json (12 inputs, dense 10, relu, dense 10) at\n"
  "    --batch 32 with --infeed-ready 300, starting at cycle 0 (docs/TEACHING.md);\n"
  "  a GEMM C = A.B (A is M x K, B is K x N; default M = 4 x rows x cores,\n"
  "    N = K = 2 x the array side; the default on other chips, and on teach when\n"
  "    --m, --n or --k is given), run as tpusim matmul --cores runs it;\n"
  "  a program (--program, docs/PROGRAMS.md), as tpusim run runs it;\n"
  "  one training step of a model (--model), lowered as tpusim train lowers it.\n"
  "The timeline and totals are the engine's (they equal those commands' --json\n"
  "'stall'). The MXU panel replays the selected core's matmul ops on array 0 at\n"
  "the engine's tile times; a program's or model's operand values are synthetic\n"
  "(docs/VIZ.md).\n\n"
  "  --m, --n, --k N        GEMM shape (1..65536 each)\n"
  "  --program FILE         a JSON program instead of the GEMM\n"
  "  --model NAME|FILE      one training step of a model (any of tpusim train's:\n"
  "                         built-in, zoo, JSON or ONNX file; docs/MODELS.md)\n"
  "                         instead of the GEMM\n"
  "  --batch B              with --model: the global batch (default 128), split evenly\n"
  "                         over the cores as tpusim train splits it\n"
  "  --pipeline FILE        the input pipeline (a datafeed JSON file, docs/DATAFEED.md)\n"
  "                         feeding --steps training steps of --model (default mlp): its\n"
  "                         stages' open/read/map/batch intervals drawn above the cores'\n"
  "                         timeline, each batch reaching the cores' infeed when the\n"
  "                         host-time model says, as tpusim train --pipeline times it\n"
  "  --steps N              with --pipeline: training steps shown (1..200, default 8)\n"
  "  --infeed-ready CYCLES  with --model: the batch reaches the cores' infeed this many\n"
  "                         cycles after the step starts (default 0: already there)\n"
  "  --cores C              run the GEMM or the model on C cores (1..the chip's), the\n"
  "                         chip cut as tpusim matmul and train cut it (default: all)\n"
  "  --seed S               seed for random N(0,1) inputs (default 1)\n"
  "  --precision P          bf16 (1 pass, default), bf16x3 or bf16x6 (3 or 6 passes)\n"
  "  --dtype-policy P       with --model: mixed_bfloat16 (default) or float32, as tpusim train\n"
  "  --core C               core shown first (1-based, default 1)\n"
  "  --cycle C              first cycle shown (default: the selected core's first\n"
  "                         weight load, where something first happens in the array;\n"
  "                         for one headless frame, its first full wavefront)\n"
  "  --at EVENT             first cycle shown: the selected core's first weight-load,\n"
  "                         wavefront (the first full diagonal), result (a tile's\n"
  "                         results written), partial-tile, infeed-wait, all-reduce\n"
  "                         or full-array (the first cycle every cell of a tile computes)\n"
  "  --scale X              text size factor, 0.5..4 (default 1; text also grows\n"
  "                         with the window: 13 px at 1280x800, 18 px at 1920x1080)\n"
  "  --speed X              cycles per second when running (default 4 on arrays\n"
  "                         up to 16x16, else 64)\n"
  "  --size WxH             frame size in pixels (default 1280x800, at least 640x480)\n"
  "  --headless             no window: render offscreen and write PNG frames\n"
  "  --frames N             headless: number of frames (default 1)\n"
  "  --every CYCLES         headless: cycles between frames (default 1)\n"
  "  --out DIR              where frames and screenshots go (default .; created)\n"
  "  --png FILE             headless: write one frame to FILE instead\n"
  "  --gif FILE             headless: write the frames (--cycle, --frames, --every) as\n"
  "                         one animated GIF at 10 frames/s, for slides\n"
  "  --script ACTIONS       test mode: comma-separated actions sent as events, one\n"
  "                         per frame (space, right, shift+right, left, plus, minus,\n"
  "                         1..8, a, h, s, q, esc, n, p, w, z, x, [, ], wait:FRAMES,\n"
  "                         click:X:Y, hover:X:Y, wheelup, wheeldown, size:WxH);\n"
  "                         prints the state after each (and each banner, as\n"
  "                         'banner: TEXT'); the session ends with them\n"
  "  --json                 headless: print one JSON object (run, totals, frames)\n\n"
  "keys in the window:\n";

#define CMD "viz"

/* The class workload, the default on the teach preset: the text of
** docs/examples/teach-class.json (t_viz.sh checks that they run alike), one
** training step at batch 32 whose batch reaches the infeed at cycle 300. In
** the first minute of playback it shows an infeed wait, weight loads, the
** wavefront, partial tiles (12 inputs: 8 + 4 rows; 10 outputs: 8 + 2
** columns) and the gradients' all-reduce. */
static const char CLASS_MODEL[] =
  "{ \"name\": \"teach-class\", \"input\": [12],\n"
  "  \"layers\": [ { \"type\": \"dense\", \"units\": 10 }, { \"type\": \"relu\" },\n"
  "              { \"type\": \"dense\", \"units\": 10 } ],\n"
  "  \"loss\": \"softmax_cross_entropy\", \"seed\": 1 }\n";
enum { CLASS_BATCH = 32, CLASS_INFEED_READY = 300 };

enum { OPT_PRECISION = 1, OPT_SIZE, OPT_POLICY, OPT_AT };

typedef struct viz_opts {
  long m, n, k, seed, core, cycle, frames, every, cores, batch, infeed_ready, steps;   /* 0: not given */
  long per_core;               /* with --model: the run's split of --batch (which it sets) */
  double speed, scale;
  tpu_precision prec;
  tpu_fe_dtype_policy policy;  /* with --model */
  int at;                      /* --at: the event (tpu_viz_event), or -1 */
  bool prec_given, headless;
  bool class_default;          /* teach without a workload: the class workload (CLASS_MODEL) */
  int width, height;
  const char *out_dir, *script, *png, *gif, *program, *model, *pipeline;
  json_t *pipe_json;           /* --pipeline: the steps' waits, for --json */
  cli_common com;
} viz_opts;

/* {==================================================================
** Options
** ================================================================== */
static int option(void *ud, int id, const char *v) {
  viz_opts *o = ud;
  if (id == OPT_PRECISION) {
    o->prec_given = true;
    return cli_precision(CMD, v, &o->prec);
  }
  if (id == OPT_POLICY) return cli_dtype_policy(CMD, v, &o->policy);
  if (id == OPT_AT) {
    for (int e = 0; e < TPU_VIZ_NEVENT; e++)
      if (!strcmp(v, tpu_viz_event_name((tpu_viz_event)e))) { o->at = e; return 0; }
    return cli_usage_error(CMD, "--at: expected weight-load, wavefront, result, partial-tile, infeed-wait, "
                           "all-reduce or full-array, got '%s'", v);
  }
  char *e = (char *)"?";                       /* --size WxH */
  long w = 0, h = 0;
  errno = 0;
  if (*v) { w = strtol(v, &e, 10); if (*e == 'x') h = strtol(e + 1, &e, 10); else e = (char *)"?"; }
  if (*e || errno || w < 640 || h < 480 || w > 8192 || h > 8192)
    return cli_usage_error(CMD, "--size: expected WIDTHxHEIGHT with 640..8192 x 480..8192, got '%s'", v);
  o->width = (int)w;
  o->height = (int)h;
  return 0;
}

static int parse(int argc, char **argv, viz_opts *o) {
  *o = (viz_opts){ .seed = 1, .core = 1, .cycle = -1, .at = -1, .scale = 1, .every = 1, .prec = TPU_PREC_BF16, .width = 1280, .height = 800 };
  const cli_opt opts[] = {
    CLI_LONG("m", &o->m, 1, 65536), CLI_LONG("n", &o->n, 1, 65536), CLI_LONG("k", &o->k, 1, 65536),
    CLI_LONG("seed", &o->seed, 0, LONG_MAX), CLI_LONG("core", &o->core, 1, TPU_SIM_GEMM_MAX_CORES),
    CLI_LONG("cycle", &o->cycle, 0, LONG_MAX), CLI_LONG("frames", &o->frames, 1, 100000),
    CLI_LONG("every", &o->every, 1, LONG_MAX), CLI_LONG("cores", &o->cores, 1, TPU_SIM_GEMM_MAX_CORES),
    CLI_LONG("batch", &o->batch, 1, 1 << 20), CLI_LONG("infeed-ready", &o->infeed_ready, 0, (long)TPU_SIM_MAX_CYCLES),
    CLI_ID("precision", OPT_PRECISION, NULL), CLI_ID("size", OPT_SIZE, NULL), CLI_ID("dtype-policy", OPT_POLICY, NULL),
    CLI_ID("at", OPT_AT, NULL),
    CLI_STR("model", &o->model, "--model needs a name or a file"),
    CLI_STR("program", &o->program, "--program needs a file name"),
    CLI_STR("pipeline", &o->pipeline, "--pipeline needs a datafeed JSON file"), CLI_LONG("steps", &o->steps, 1, 200),
    CLI_DOUBLE("speed", &o->speed, 0.25, 65536), CLI_DOUBLE("scale", &o->scale, 0.5, 4),
    CLI_STR("out", &o->out_dir, "--out needs a directory"), CLI_STR("png", &o->png, "--png needs a file name"),
    CLI_STR("gif", &o->gif, "--gif needs a file name"),
    CLI_STR("script", &o->script, "--script needs a list of actions"),
    CLI_FLAG("headless", &o->headless),
  };
  const int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), &o->com, option, o);
  if (!rc && !o->com.help && o->at >= 0 && o->cycle >= 0)
    return cli_usage_error(CMD, "--at and --cycle both choose the first cycle shown; give one");
  return rc ? rc : o->com.help ? cli_help(HELP, TPU_VIZ_KEYS_HELP) : CLI_RUN;
}

/* Which workload: one of GEMM (--m --n --k), program, model. */
static int check_workload(const viz_opts *o, const tpu_chip_config *chip) {
  const bool gemm_flags = o->m || o->n || o->k;
  if (o->pipeline && (o->program || gemm_flags || o->infeed_ready))
    return cli_usage_error(CMD, "--pipeline feeds training steps of --model; --program, --m/--n/--k and "
                           "--infeed-ready do not go with it (the pipeline says when each batch is ready)");
  if (o->program && o->model) return cli_usage_error(CMD, "--program and --model are two workloads: give one");
  if ((o->program || o->model) && gemm_flags)
    return cli_usage_error(CMD, "--%s runs %s; --m, --n and --k describe a GEMM: give one or the other",
                           o->program ? "program" : "model", o->program ? "a program" : "a model's training step");
  if (o->program && o->prec_given)
    return cli_usage_error(CMD, "--precision: a program gives each matmul's precision itself");
  if (o->steps && !o->pipeline) return cli_usage_error(CMD, "--steps goes with --pipeline");
  if (!o->model && !o->pipeline && (o->batch || o->infeed_ready))
    return cli_usage_error(CMD, "--batch and --infeed-ready go with --model");
  if (o->cores && o->program)
    return cli_usage_error(CMD, "--cores: a program is written for the chip's cores (%d on %s); --cores goes with "
                           "a GEMM or a model", chip->cores, chip->name);
  if (o->cores > chip->cores)
    return cli_usage_error(CMD, "--cores: expected 1..%d (the cores of %s), got %ld", chip->cores, chip->name, o->cores);
  return 0;
}

/* Window or frames: the flags of each. */
static int check_output(const viz_opts *o, const tpu_chip_config *chip) {
  const bool frames_given = o->frames != 0;
  if (o->core > chip->cores)
    return cli_usage_error(CMD, "--core %ld: the chip '%s' has %d cores", o->core, chip->name, chip->cores);
  if (!o->headless && (frames_given || o->com.json)) return cli_usage_error(CMD, "--frames and --json go with --headless");
  if (o->headless && o->script) return cli_usage_error(CMD, "--script drives the window; it does not go with --headless");
  if (o->png && (!o->headless || o->out_dir || frames_given))
    return cli_usage_error(CMD, "--png FILE writes one headless frame: use it with --headless, without --out and --frames");
  if (o->gif && (!o->headless || o->out_dir || o->png))
    return cli_usage_error(CMD, "--gif FILE writes the headless frames as one animated GIF: use it with --headless, "
                           "without --out and --png");
  if (o->headless && !o->out_dir && !o->png && !o->gif)
    return cli_usage_error(CMD, "--headless needs --out DIR for the PNG frames (or --png FILE for one, --gif FILE for an animation)");
  if (o->out_dir && mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
    return cli_runtime_error(CMD, "--out %s: cannot create the directory: %s", o->out_dir, strerror(errno));
  struct stat sb;
  if (o->out_dir && (stat(o->out_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
    return cli_runtime_error(CMD, "--out %s: cannot write: not a directory", o->out_dir);
  return 0;
}
/* }================================================================== */

/* {==================================================================
** The session
** ================================================================== */
/* The training run of --model behind the picture, as tpusim train makes
** it at the timing level (frontend/fe.h, "The training run"): with
** --pipeline its --steps steps fed by the pipeline, else one step on
** synthetic data. Sets o->batch and o->per_core to the run's split. */
static int create_run(viz_opts *o, const tpu_chip_config *chip, const tpu_fe_model *model, tpu_fe_run **run) {
  char label[256], err[2048];
  snprintf(label, sizeof label, "--model %s", o->model);
  tpu_fe_run_config c = tpu_fe_run_config_default();
  c.model = model;
  c.model_label = label;
  c.chip = *chip;
  c.level = TPU_FIDELITY_TIMING;
  c.prec = o->prec;
  if (o->batch) c.global_batch = (int)o->batch;
  if (o->pipeline) {
    c.pipeline = o->pipeline;
    c.steps_per_epoch = o->steps;
    c.timeline_steps = (int)o->steps;
  } else {
    c.data = "synthetic";
    c.synthetic_n = c.global_batch;
    c.steps_per_epoch = 1;
  }
  const tpu_status st = tpu_fe_run_create(&c, run, err, sizeof err);
  if (st) return cli_fail(CMD, st, "%s", err);
  tpu_fe_run_totals t;
  tpu_fe_run_get_totals(*run, &t);
  o->batch = c.global_batch;
  o->per_core = t.per_core_batch;
  if (o->pipeline && t.steps_per_epoch < o->steps)
    return cli_usage_error(CMD, "--pipeline %s: the data ends after %ld batches; give fewer --steps", o->pipeline,
                           t.steps_per_epoch);
  return 0;
}

/* One training step of --model, lowered as tpusim train lowers it. */
static int create_model(viz_opts *o, const tpu_chip_config *chip, tpu_viz **v) {
  char err[1024];
  tpu_fe_model model;
  tpu_fe_run *run = NULL;
  int rc = 0;
  if (!o->class_default) rc = cli_load_model(CMD, o->model, false, &model, NULL, NULL);
  else if (tpu_fe_model_parse(CLASS_MODEL, "the class workload", &model, err, sizeof err) != TPU_OK)
    return cli_runtime_error(CMD, "the class workload: %s", err);
  model.policy = o->policy;
  if (rc || (rc = create_run(o, chip, &model, &run))) { tpu_fe_run_destroy(run); return rc; }
  tpu_sim_program *p = NULL;
  const uint64_t ready = (uint64_t)o->infeed_ready;
  tpu_status st = tpu_fe_run_program(run, 1, &ready, &p, err, sizeof err);
  tpu_fe_run_destroy(run);
  if (st) return cli_fail(CMD, st, "--model %s: %s", o->model, err);
  char title[128];
  snprintf(title, sizeof title, "%.40s, batch %ld (%ld per core)", model.name, o->batch, o->per_core);
  st = tpu_viz_create_program(chip, p, title, (uint64_t)o->seed, v, err, sizeof err);
  tpu_sim_program_destroy(p);
  return st == TPU_OK ? 0 : cli_fail(CMD, st, "--model %s: %s", o->model, err);
}

/* {==================================================================
** --pipeline: training steps fed by an input pipeline
** ================================================================== */
/* The run's --steps steps, each asking for its batch when the step before
** ended: ready[k] gets step k's ready cycle from the run's start, waits
** each step's infeed wait; 0 or the exit status. */
static int pipeline_steps(const viz_opts *o, tpu_fe_run *run, uint64_t *ready, json_t *waits) {
  char err[2048];
  uint64_t t = 0;
  for (long k = 0; k < o->steps; k++) {
    tpu_fe_step_record r;
    const tpu_status st = tpu_fe_run_step(run, &r, err, sizeof err);
    if (st) return cli_fail(CMD, st, "%s", err);
    ready[k] = t + r.infeed_wait_cycles;
    json_array_append_new(waits, json_integer((json_int_t)r.infeed_wait_cycles));
    t += r.step_cycles;
  }
  return 0;
}

/* The host-time model's rows and intervals (seconds) as the viz's spans (cycles). */
static int pipeline_spans(const viz_opts *o, const tpu_chip_config *chip, const tpu_df_model *dm, tpu_viz *v) {
  const double hz = chip->clock_mhz * 1e6;
  const int nrows = tpu_df_model_rows(dm);
  size_t n;
  const tpu_df_interval *iv = tpu_df_model_intervals(dm, &n);
  const char *names[64];
  if (nrows > 64)                      /* e.g. a map with num_parallel_calls 100: a row per worker */
    return cli_usage_error(CMD, "--pipeline %s: %d timeline rows (stages and workers); the viewer draws at most 64",
                           o->pipeline, nrows);
  tpu_viz_span *sp = tpu_malloc((n + 1) * sizeof *sp);
  if (!sp) return cli_runtime_error(CMD, "out of memory");
  for (int r = 0; r < nrows; r++) names[r] = tpu_df_model_row_name(dm, r);
  for (size_t i = 0; i < n; i++)
    sp[i] = (tpu_viz_span){ iv[i].row, (uint64_t)llround(iv[i].start_s * hz), (uint64_t)llround(iv[i].end_s * hz), iv[i].kind };
  const tpu_status st = tpu_viz_set_pipeline(v, o->pipeline, nrows, names, sp, n);
  tpu_free(sp);
  return st == TPU_OK ? 0 : cli_runtime_error(CMD, "--pipeline %s: out of memory", o->pipeline);
}

/* --steps training steps of --model fed by --pipeline, on the engine as one
** program, with the pipeline's timeline above the cores'. */
static int create_pipeline(viz_opts *o, const tpu_chip_config *chip, tpu_viz **v) {
  char err[1024];
  tpu_fe_model model;
  tpu_fe_run *run = NULL;
  tpu_sim_program *p = NULL;
  uint64_t *ready = tpu_malloc((size_t)o->steps * sizeof *ready);
  json_t *waits = json_array();
  int rc = ready && waits ? 0 : cli_runtime_error(CMD, "out of memory");
  tpu_status st = rc ? TPU_OK : tpu_fe_model_load(o->model, &model, err, sizeof err);
  if (!rc && st) rc = cli_fail(CMD, st, "%s", err);
  model.policy = o->policy;
  if (!rc) rc = create_run(o, chip, &model, &run);
  if (!rc) rc = pipeline_steps(o, run, ready, waits);
  if (!rc && (st = tpu_fe_run_program(run, (int)o->steps, ready, &p, err, sizeof err)))
    rc = cli_fail(CMD, st, "--model %s: %s", o->model, err);
  char title[160] = "";
  if (!rc)
    snprintf(title, sizeof title, "%.40s, batch %ld, %ld steps fed by %.60s", model.name, o->batch, o->steps, o->pipeline);
  if (!rc && (st = tpu_viz_create_program(chip, p, title, (uint64_t)o->seed, v, err, sizeof err)))
    rc = cli_fail(CMD, st, "--model %s: %s", o->model, err);
  if (!rc) rc = pipeline_spans(o, chip, tpu_fe_run_host_model(run), *v);
  if (!rc) o->pipe_json = json_pack("{s:s,s:I,s:I,s:o}", "file", o->pipeline, "global_batch", (json_int_t)o->batch,
                                    "steps", (json_int_t)o->steps, "infeed_wait_cycles", json_incref(waits));
  json_decref(waits);
  tpu_free(ready);
  tpu_sim_program_destroy(p);
  tpu_fe_run_destroy(run);
  return rc;
}
/* }================================================================== */

/* A program, as tpusim run runs it: one that does not fit the chip is bad input. */
static int create_program(const viz_opts *o, const tpu_chip_config *chip, tpu_viz **v) {
  char err[1024], title[160];
  tpu_sim_program *p = NULL;
  int rc = cli_load_program(CMD, o->program, chip->cores, &p);
  if (rc) return rc;
  snprintf(title, sizeof title, "program %.140s", o->program);
  tpu_status st = tpu_viz_create_program(chip, p, title, (uint64_t)o->seed, v, err, sizeof err);
  tpu_sim_program_destroy(p);
  return st == TPU_OK ? 0 : cli_fail(CMD, st, "%s: %s", o->program, err);
}

/* The GEMM: by default M = 4 x rows x cores, N = K = 2 x the array side. */
static tpu_viz_workload gemm_of(const viz_opts *o, const tpu_chip_config *chip) {
  const int side = chip->mxu.rows > chip->mxu.cols ? chip->mxu.rows : chip->mxu.cols;
  const long dm = 4L * chip->mxu.rows * chip->cores;
  return (tpu_viz_workload){ .m = o->m ? (int)o->m : (int)(dm < 65536 ? dm : 65536),
                             .n = o->n ? (int)o->n : 2 * side, .k = o->k ? (int)o->k : 2 * side,
                             .seed = (uint64_t)o->seed, .precision = o->prec };
}

static int create(viz_opts *o, const tpu_chip_config *chip, tpu_viz **v) {
  *v = NULL;
  int rc;
  if (o->pipeline) rc = create_pipeline(o, chip, v);
  else if (o->model) rc = create_model(o, chip, v);
  else if (o->program) rc = create_program(o, chip, v);
  else {
    char err[1024];
    const tpu_viz_workload w = gemm_of(o, chip);
    tpu_status st = tpu_viz_create(chip, &w, v, err, sizeof err);
    rc = st == TPU_OK ? 0 : cli_fail(CMD, st, "%s", err);
  }
  if (rc) return rc;
  const uint64_t total = tpu_viz_total_cycles(*v);
  if (o->cycle >= 0 && (uint64_t)o->cycle >= total)
    return cli_usage_error(CMD, "--cycle %ld: the run lasts %llu cycles (0..%llu)", o->cycle,
                           (unsigned long long)total, (unsigned long long)total - 1);
  if (tpu_viz_select_core(*v, (int)o->core - 1) != TPU_OK) return cli_runtime_error(CMD, "out of memory");
  tpu_viz_set_text_scale(*v, o->scale);
  uint64_t at;
  if (o->at >= 0 && !tpu_viz_event_cycle(*v, (tpu_viz_event)o->at, &at))
    return cli_usage_error(CMD, "--at %s: core %ld has none in this run%s", tpu_viz_event_name((tpu_viz_event)o->at),
                           o->core, o->at == TPU_VIZ_AT_INFEED_WAIT ? " (--model with --infeed-ready C makes one)"
                           : o->at == TPU_VIZ_AT_ALL_REDUCE ? " (--model on several cores has one)"
                           : o->at == TPU_VIZ_AT_FULL_ARRAY ? " (a tile needs M of at least its rows + columns - 1)" : "");
  if (o->at >= 0) o->cycle = (long)at;
  /* Without --cycle or --at: a still is taken where it shows the dataflow
  ** (the first full wavefront); a window, frames or a GIF start at the first
  ** weight load, to watch it, or at the core's first infeed wait when that
  ** comes first (the class workload: cycle 0). */
  const bool still = o->headless && !o->gif && o->frames <= 1;
  uint64_t first = tpu_viz_first_event_cycle(*v), wait;
  if (tpu_viz_event_cycle(*v, TPU_VIZ_AT_INFEED_WAIT, &wait) && wait < first) first = wait;
  if (o->cycle < 0) o->cycle = (long)(still && tpu_viz_event_cycle(*v, TPU_VIZ_AT_WAVEFRONT, &at) ? at : first);
  return 0;
}
/* }================================================================== */

/* {==================================================================
** The --json report: the run, the totals, the tiles and where things are
** in the frames (for scripts that read the PNGs)
** ================================================================== */
static void add_workload(json_t *j, const viz_opts *o, const tpu_chip_config *chip) {
  if (o->model) {
    json_object_set_new(j, "model", json_pack("{s:s, s:I, s:I, s:s, s:I}", "name", o->model,
                        "global_batch", (json_int_t)o->batch, "per_core_batch", (json_int_t)o->per_core,
                        "precision", tpu_precision_name(o->prec), "infeed_ready", (json_int_t)o->infeed_ready));
    json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
  } else if (o->program) {
    json_object_set_new(j, "program", json_string(o->program));
    json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
  } else {
    const tpu_viz_workload w = gemm_of(o, chip);
    json_object_set_new(j, "gemm", json_pack("{s:i, s:i, s:i, s:I, s:s}", "m", w.m, "n", w.n, "k", w.k,
                                             "seed", (json_int_t)o->seed, "precision", tpu_precision_name(o->prec)));
  }
}

static void add_totals(json_t *j, const tpu_viz *v, int cores) {
  json_t *per = json_array(), *sum = json_object();
  uint64_t all[TPU_SIM_NSTALL] = { 0 };
  for (int p = 0; p < cores; p++) {
    uint64_t t[TPU_SIM_NSTALL];
    tpu_viz_totals(v, p, t);
    json_t *cc = json_object();
    for (int k = 0; k < TPU_SIM_NSTALL; k++) {
      json_object_set_new(cc, tpu_sim_stall_name(k), json_integer((json_int_t)t[k]));
      all[k] += t[k];
    }
    json_array_append_new(per, cc);
  }
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    json_object_set_new(sum, tpu_sim_stall_name(k), json_integer((json_int_t)all[k]));
  json_object_set_new(j, "stall", sum);      /* summed over cores, as tpusim run --json */
  json_object_set_new(j, "stall_cycles_per_core", per);
}

static json_t *tiles_json(const tpu_viz *v) {
  const tpu_mxu_tile *tl;
  const tpu_mxu_tile_times *tt;
  const size_t nt = tpu_viz_tiles(v, &tl, &tt);
  json_t *ta = json_array();
  for (size_t k = 0; k < nt; k++) {
    json_t *t = json_pack("{s:i, s:i, s:i, s:I, s:I, s:I}", "m", tl[k].m, "k", tl[k].k,
      "n", tl[k].n, "load_start", (json_int_t)tt[k].load_start, "stream_start", (json_int_t)tt[k].stream_start,
      "last_result", (json_int_t)tt[k].last_result);
    if (tpu_viz_tile_op(v, k)) json_object_set_new(t, "op", json_string(tpu_viz_tile_op(v, k)));
    json_array_append_new(ta, t);
  }
  return ta;
}

static void add_layout(json_t *j, const tpu_viz *v, const viz_opts *o, int cores) {
  tpu_viz_layout l;
  tpu_viz_layout_of(v, o->width, o->height, &l);
  json_t *cy = json_array(), *cx = json_array(), *colors = json_object();
  for (int p = 0; p < cores; p++) {
    json_array_append_new(cy, json_integer(tpu_viz_core_y(&l, p)));
    json_array_append_new(cx, json_integer(tpu_viz_core_x(&l, p)));
  }
  for (int k = 0; k < TPU_SIM_NSTALL; k++) {
    char hex[8];
    snprintf(hex, sizeof hex, "#%06x", (unsigned)(tpu_viz_stall_color(k) & 0xffffffu));
    json_object_set_new(colors, tpu_sim_stall_name(k), json_string(hex));
  }
  json_object_set_new(j, "colors", colors);
  json_t *lj = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o}",
    "width", l.width, "height", l.height, "array_x", l.array.x, "array_y", l.array.y, "cell", l.cell,
    "timeline_x", l.timeline.x, "timeline_w", l.timeline.w, "core_y", cy);
  json_object_set_new(lj, "core_x", cx);     /* two columns of cores when one leaves unit rows too thin */
  json_object_set_new(lj, "strip_h", json_integer(l.strip_h));
  json_object_set_new(lj, "infeed_x", json_integer(l.infeed.x));
  json_object_set_new(lj, "infeed_y", json_integer(l.infeed.y));
  json_object_set_new(lj, "infeed_h", json_integer(l.infeed.h));
  json_object_set_new(lj, "font", json_integer(l.font));
  json_object_set_new(lj, "line", json_integer(l.line));
  json_object_set_new(lj, "array_w", json_integer(l.array.w));
  json_object_set_new(lj, "array_h", json_integer(l.array.h));
  json_object_set_new(lj, "legend_x", json_integer(l.legend.x));
  json_object_set_new(lj, "legend_y", json_integer(l.legend.y));
  if (tpu_viz_pipeline_rows(v) > 0) {
    json_object_set_new(lj, "pipeline_x", json_integer(l.pipeline.x));
    json_object_set_new(lj, "pipeline_y", json_integer(l.pipeline.y));
    json_object_set_new(lj, "pipeline_w", json_integer(l.pipeline.w));
    json_object_set_new(lj, "pipeline_row_h", json_integer(l.pipe_row_h));
  }
  json_object_set_new(j, "layout", lj);
}

/* The picture's first frame, as figures: what a doc's "look for" claims of
** it can be checked against (the cells lit, the core's stall kind), and
** where each stall kind lies on the selected core (an all-reduce band's
** place in the step). Seeks the session back to the first frame. */
static void add_moment(json_t *j, const viz_opts *o, tpu_viz *v) {
  const uint64_t start = (uint64_t)o->cycle;
  tpu_viz_seek(v, start);          /* a replay's allocation failure leaves the last frame: the figures say which cycle */
  tpu_viz_moment m;
  tpu_viz_moment_of(v, &m);
  json_t *mj = json_pack("{s:I, s:s?, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f}", "cycle", (json_int_t)tpu_viz_cycle(v),
    "event", o->at >= 0 ? tpu_viz_event_name((tpu_viz_event)o->at) : NULL, "core_stall", tpu_sim_stall_name(m.core_stall),
    "cells", m.cells, "cells_loading", m.loading, "cells_holding", m.holding, "cells_computing", m.computing,
    "rows_computing", m.rows_computing, "cols_computing", m.cols_computing,
    "computing_fraction", m.cells ? (double)m.computing / m.cells : 0.0);
  json_object_set_new(j, "moment", mj);
  json_t *sp = json_object();
  for (int k = 0; k < TPU_SIM_NSTALL; k++) {
    uint64_t a, b;
    if (tpu_viz_stall_span(v, k, &a, &b))
      json_object_set_new(sp, tpu_sim_stall_name(k), json_pack("{s:I, s:I}", "first", (json_int_t)a, "end", (json_int_t)b));
  }
  json_object_set_new(j, "stall_spans", sp);
}

static int report_json(const viz_opts *o, const tpu_chip_config *chip, tpu_viz *v) {
  json_t *j = json_pack("{s:s, s:i}", "chip", chip->name, "cores", chip->cores);
  add_workload(j, o, chip);
  json_object_set_new(j, "total_cycles", json_integer((json_int_t)tpu_viz_total_cycles(v)));
  json_object_set_new(j, "start_cycle", json_integer((json_int_t)o->cycle));
  json_object_set_new(j, "frames", json_integer(o->frames ? o->frames : 1));
  json_object_set_new(j, "every", json_integer((json_int_t)o->every));
  add_totals(j, v, chip->cores);
  add_moment(j, o, v);
  if (o->pipe_json) {                 /* the rows drawn, and each step's infeed wait as train times it */
    json_t *rows = json_array(), *colors = json_object();
    for (int r = 0; r < tpu_viz_pipeline_rows(v); r++) json_array_append_new(rows, json_string(tpu_viz_pipeline_row_name(v, r)));
    char kinds[16], hex[8], key[2] = { 0 };
    for (int k = 0, n = tpu_viz_pipeline_kinds(v, kinds); k < n; k++) {
      snprintf(hex, sizeof hex, "#%06x", (unsigned)(tpu_viz_span_color(kinds[k]) & 0xffffffu));
      key[0] = kinds[k];
      json_object_set_new(colors, key, json_string(hex));
    }
    json_object_set_new(o->pipe_json, "rows", rows);
    json_object_set_new(o->pipe_json, "colors", colors);
    json_object_set(j, "pipeline", o->pipe_json);
  }
  json_t *tiles = tiles_json(v);
  json_object_set_new(j, "core", json_integer(tpu_viz_core(v) + 1));
  add_layout(j, v, o, chip->cores);
  json_object_set_new(j, "tiles", tiles);
  return cli_print_json(CMD, j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}
/* }================================================================== */

int cli_cmd_viz(int argc, char **argv) {
  viz_opts o;
  int rc = parse(argc, argv, &o);
  if (rc != CLI_RUN) return rc;
  tpu_chip_config chip;
  if (o.pipeline && !o.model) o.model = "mlp";     /* the consumer of --pipeline */
  if (o.pipeline && !o.steps) o.steps = 8;
  if ((rc = cli_load_chip(CMD, &o.com, &chip)) || (rc = check_workload(&o, &chip))) return rc;
  if (!strcmp(chip.name, "teach") && !o.m && !o.n && !o.k && !o.program && !o.model && !o.pipeline) {
    o.class_default = true;                       /* the class workload (CLASS_MODEL) */
    o.model = "teach-class";
    o.batch = CLASS_BATCH;
    o.infeed_ready = CLASS_INFEED_READY;
    if (o.cores && CLASS_BATCH % o.cores)
      return cli_usage_error(CMD, "--cores %ld: the default workload on teach (the class workload, docs/TEACHING.md) "
                             "is a batch of %d, which does not split evenly over %ld cores; use --cores 1, 2 or 4, "
                             "or give a workload (--m/--n/--k, --model, --program)", o.cores, CLASS_BATCH, o.cores);
  }
  if (o.cores) cli_chip_cut(&chip, (int)o.cores);   /* as tpusim matmul --cores */
  if ((rc = check_output(&o, &chip))) return rc;
  tpu_viz *v;
  if (!(rc = create(&o, &chip, &v))) {
    tpu_viz_app_opts ao = {
      .headless = o.headless, .frames = o.frames ? (int)o.frames : 1, .every = (uint64_t)o.every,
      .start = (uint64_t)o.cycle, .out_dir = o.out_dir, .png = o.png, .gif = o.gif, .script = o.script, .width = o.width,
      .height = o.height, .speed = o.speed > 0 ? o.speed : (chip.mxu.rows <= 16 ? 4 : 64), .quiet = o.com.json };
    rc = tpu_viz_app_run(v, &ao);
    if (rc == 0 && o.com.json) rc = report_json(&o, &chip, v);
  }
  tpu_viz_destroy(v);
  json_decref(o.pipe_json);
  return rc;
}
