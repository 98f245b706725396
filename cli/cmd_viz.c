/*
** cmd_viz.c -- `tpusim viz`: the SDL2 window (or headless PNG frames) showing
** the selected core's systolic array cell by cell and every core's timeline
** in the stall taxonomy. The drawing is in viz/; this file parses flags.
*/
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_int.h"
#include "frontend/fe.h"
#include "sim/sim.h"
#include "viz/viz.h"

static const char HELP[] =
  "usage: tpusim viz [--m M --n N --k K] [--seed S] [options]\n"
  "       tpusim viz --program FILE.json [options]\n"
  "       tpusim viz --model NAME|FILE [--batch B] [--cores C] [options]\n"
  "       tpusim viz --headless --frames N [--every CYCLES] --out DIR [options]\n\n"
  "Opens a window on a workload run on the chip engine: the selected core's MXU\n"
  "cell by cell from the PE-level model (idle, loading weights, computing shaded\n"
  "by activation or partial sum), the skewed input queue, the accumulators, and a\n"
  "timeline per core and unit colored by mxu_busy, vpu_busy, memory_wait,\n"
  "infeed_wait, collective_wait and idle, with the infeed queue and the totals.\n"
  "The workload is one of:\n"
  "  a GEMM C = A.B (A is M x K, B is K x N; default M = 4 x rows x cores,\n"
  "    N = K = 2 x the array side), run as tpusim matmul --cores runs it;\n"
  "  a program (--program, docs/PROGRAMS.md), as tpusim run runs it;\n"
  "  one training step of a model (--model), lowered as tpusim train lowers it.\n"
  "The timeline and totals are the engine's (they equal those commands' --json\n"
  "'stall'). The MXU panel replays the selected core's matmul ops on array 0 at\n"
  "the engine's tile times; a program's or model's operand values are synthetic\n"
  "(docs/VIZ.md).\n\n"
  "  --m, --n, --k N        GEMM shape (1..65536 each)\n"
  "  --program FILE         a JSON program instead of the GEMM\n"
  "  --model NAME|FILE      one training step of a model (mlp, cnn or a JSON file,\n"
  "                         docs/MODELS.md) instead of the GEMM\n"
  "  --batch B              with --model: the global batch (default 128), split evenly\n"
  "                         over the cores as tpusim train splits it\n"
  "  --infeed-ready CYCLES  with --model: the batch reaches the cores' infeed this many\n"
  "                         cycles after the step starts (default 0: already there)\n"
  "  --cores C              run the GEMM or the model on C cores (1..the chip's), the\n"
  "                         chip cut as tpusim matmul and train cut it (default: all)\n"
  "  --seed S               seed for random N(0,1) inputs (default 1)\n"
  "  --precision P          bf16 (1 pass, default), bf16x3 or bf16x6 (3 or 6 passes)\n"
  "  --core C               core shown first (1-based, default 1)\n"
  "  --cycle C              first cycle shown (default 0)\n"
  "  --speed X              cycles per second when running (default 4 on arrays\n"
  "                         up to 16x16, else 64)\n"
  "  --size WxH             frame size in pixels (default 1280x800, at least 640x480)\n"
  "  --headless             no window: render offscreen and write PNG frames\n"
  "  --frames N             headless: number of frames (default 1)\n"
  "  --every CYCLES         headless: cycles between frames (default 1)\n"
  "  --out DIR              where frames and screenshots go (default .; created)\n"
  "  --png FILE             headless: write one frame to FILE instead\n"
  "  --script ACTIONS       test mode: comma-separated actions sent as events, one\n"
  "                         per frame (space, right, shift+right, left, plus, minus,\n"
  "                         1..8, a, h, s, q, esc, wait:FRAMES, click:X:Y, hover:X:Y);\n"
  "                         prints the state after each; the session ends with them\n"
  "  --json                 headless: print one JSON object (run, totals, frames)\n\n"
  "keys in the window:\n";

static int parse_u64(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out) {
  char err[256];
  if (!cli_parse_long(v, lo, hi, out, flag, err, sizeof err)) return cli_usage_error(cmd, "%s", err);
  return 0;
}

int cli_cmd_viz(int argc, char **argv) {
  const char *cmd = "viz";
  cli_common c;
  cli_common_init(&c);
  long m = 0, n = 0, k = 0, seed = 1, core = 1, cycle = 0, frames = 1, every = 1, cores = 0, batch = 0,
       infeed_ready = 0;
  double speed = 0;
  tpu_precision prec = TPU_PREC_BF16;
  int width = 1280, height = 800;
  bool headless = false, frames_given = false;
  const char *out_dir = NULL, *script = NULL, *png = NULL, *prog_path = NULL, *model_name = NULL;
  bool prec_given = false;
  bool gemm_flags = false;
  char err[1024];
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(argc, argv, &i, &c, cmd);
    if (r > 1) return r;
    if (r == 1) continue;
    const char *v;
    struct { const char *name; long *dst; long lo, hi; } nums[] = {
      { "--m", &m, 1, 65536 }, { "--n", &n, 1, 65536 }, { "--k", &k, 1, 65536 },
      { "--seed", &seed, 0, LONG_MAX }, { "--core", &core, 1, TPU_MAX_CORES },
      { "--cycle", &cycle, 0, LONG_MAX }, { "--frames", &frames, 1, 100000 },
      { "--every", &every, 1, LONG_MAX }, { "--cores", &cores, 1, TPU_MAX_CORES },
      { "--batch", &batch, 1, 1 << 20 }, { "--infeed-ready", &infeed_ready, 0, LONG_MAX } };
    bool done = false;
    for (size_t j = 0; j < sizeof nums / sizeof nums[0] && !done; j++) {
      r = cli_opt(argc, argv, &i, nums[j].name, &v);
      if (r < 0) return cli_usage_error(cmd, "%s needs a value", nums[j].name);
      if (r == 0) continue;
      if ((r = parse_u64(cmd, nums[j].name, v, nums[j].lo, nums[j].hi, nums[j].dst))) return r;
      if (nums[j].dst == &frames) frames_given = true;
      if (nums[j].dst == &m || nums[j].dst == &n || nums[j].dst == &k) gemm_flags = true;
      done = true;
    }
    if (done) continue;
    if ((r = cli_opt(argc, argv, &i, "--precision", &v))) {
      if (r < 0 || !tpu_precision_parse(v, &prec))
        return cli_usage_error(cmd, "--precision: expected bf16, bf16x3 or bf16x6, got '%s'", r < 0 ? "" : v);
      prec_given = true;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--model", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--model needs a name or a file");
      model_name = v;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--program", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--program needs a file name");
      prog_path = v;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--speed", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--speed needs a value");
      if (!cli_parse_double(v, 0.25, 65536, &speed, "--speed", err, sizeof err)) return cli_usage_error(cmd, "%s", err);
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--size", &v))) {
      char *e;
      long w = 0, h = 0;
      if (r > 0) { errno = 0; w = strtol(v, &e, 10); if (*e == 'x') h = strtol(e + 1, &e, 10); else e = (char *)"?"; }
      if (r < 0 || *e || errno || w < 640 || h < 480 || w > 8192 || h > 8192)
        return cli_usage_error(cmd, "--size: expected WIDTHxHEIGHT with 640..8192 x 480..8192, got '%s'", r < 0 ? "" : v);
      width = (int)w; height = (int)h;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--out", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--out needs a directory");
      out_dir = v;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--png", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--png needs a file name");
      png = v;
      continue;
    }
    if ((r = cli_opt(argc, argv, &i, "--script", &v))) {
      if (r < 0) return cli_usage_error(cmd, "--script needs a list of actions");
      script = v;
      continue;
    }
    if (cli_opt(argc, argv, &i, "--headless", NULL) == 1) { headless = true; continue; }
    return cli_usage_error(cmd, "unknown option '%s' (tpusim viz --help)", argv[i]);
  }
  if (c.help) { fputs(HELP, stdout); fputs(TPU_VIZ_KEYS_HELP, stdout); fputs("\n", stdout); fputs(CLI_COMMON_HELP, stdout); return 0; }
  tpu_chip_config chip;
  int rc = cli_load_chip(cmd, &c, &chip);
  if (rc) return rc;
  if ((prog_path != NULL) + (model_name != NULL) > 1)
    return cli_usage_error(cmd, "--program and --model are two workloads: give one");
  if ((prog_path || model_name) && gemm_flags)
    return cli_usage_error(cmd, "--%s runs %s; --m, --n and --k describe a GEMM: give one or the other",
                          prog_path ? "program" : "model", prog_path ? "a program" : "a model's training step");
  if (prog_path && prec_given)
    return cli_usage_error(cmd, "--precision: a program gives each matmul's precision itself");
  if (!model_name && (batch || infeed_ready))
    return cli_usage_error(cmd, "--batch and --infeed-ready go with --model");
  if (cores && prog_path)
    return cli_usage_error(cmd, "--cores: a program is written for the chip's cores (%d on %s); --cores goes with "
                          "a GEMM or a model", chip.cores, chip.name);
  if (cores) {                     /* as tpusim matmul --cores: the chip cut to C cores */
    if (cores > chip.cores)
      return cli_usage_error(cmd, "--cores: expected 1..%d (the cores of %s), got %ld", chip.cores, chip.name, cores);
    int cpc = chip.cores_per_chip < cores ? chip.cores_per_chip : (int)cores;
    while (cores % cpc) cpc--;
    chip.cores = (int)cores;
    chip.cores_per_chip = cpc;
  }
  if (core > chip.cores) return cli_usage_error(cmd, "--core %ld: the chip '%s' has %d cores", core, chip.name, chip.cores);
  if (!headless && (frames_given || c.json)) return cli_usage_error(cmd, "--frames and --json go with --headless");
  if (headless && script) return cli_usage_error(cmd, "--script drives the window; it does not go with --headless");
  if (png && (!headless || out_dir || frames_given))
    return cli_usage_error(cmd, "--png FILE writes one headless frame: use it with --headless, without --out and --frames");
  if (headless && !out_dir && !png) return cli_usage_error(cmd, "--headless needs --out DIR for the PNG frames (or --png FILE for one)");
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
    return cli_usage_error(cmd, "--out %s: cannot create the directory: %s", out_dir, strerror(errno));
  struct stat sb;
  if (out_dir && (stat(out_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
    return cli_usage_error(cmd, "--out %s: not a directory", out_dir);
  if (prog_path && gemm_flags)
    return cli_usage_error(cmd, "--program runs a program; --m, --n, --k and --precision describe a GEMM: give one or the other");
  int side = chip.mxu.rows > chip.mxu.cols ? chip.mxu.rows : chip.mxu.cols;
  long dm = 4L * chip.mxu.rows * chip.cores;
  tpu_viz_workload w = { .m = m ? (int)m : (int)(dm < 65536 ? dm : 65536),
                         .n = n ? (int)n : 2 * side, .k = k ? (int)k : 2 * side,
                         .seed = (uint64_t)seed, .precision = prec };
  tpu_viz *v;
  tpu_status st;
  if (model_name) {
    tpu_fe_model model;
    if (!batch) batch = 128;                       /* tpusim train's default */
    if (batch % chip.cores)
      return cli_usage_error(cmd, "--batch %ld does not divide across %d cores; use a multiple of %d (the global "
                            "batch is split evenly, as tpusim train splits it)", batch, chip.cores, chip.cores);
    if ((st = tpu_fe_model_load(model_name, &model, err, sizeof err)) != TPU_OK)
      return st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
    tpu_sim_program *p = NULL;
    if ((st = tpu_fe_step_program(&model, &chip, prec, (int)(batch / chip.cores), true, (uint64_t)infeed_ready, &p,
                              err, sizeof err)) != TPU_OK)
      return st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "--model %s: %s", model_name, err)
                                 : cli_usage_error(cmd, "--model %s: %s", model_name, err);
    char title[128];
    snprintf(title, sizeof title, "%.40s, batch %ld (%ld per core)", model.name, batch, batch / chip.cores);
    st = tpu_viz_create_program(&chip, p, title, (uint64_t)seed, &v, err, sizeof err);
    tpu_sim_program_destroy(p);
    if (st != TPU_OK)
      return st == TPU_ERR_NOMEM || st == TPU_ERR_RUNTIME ? cli_runtime_error(cmd, "--model %s: %s", model_name, err)
                                                          : cli_usage_error(cmd, "--model %s: %s", model_name, err);
  } else if (prog_path) {
    char *text = tpu_read_file(prog_path, NULL);
    if (!text) return cli_usage_error(cmd, "%s: cannot read: %s", prog_path, strerror(errno));
    tpu_sim_program *p = NULL;
    st = tpu_sim_program_parse(text, prog_path, chip.cores, &p, err, sizeof err);
    tpu_free(text);
    if (st != TPU_OK) return st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
    char title[160];
    snprintf(title, sizeof title, "program %.140s", prog_path);
    st = tpu_viz_create_program(&chip, p, title, (uint64_t)seed, &v, err, sizeof err);
    tpu_sim_program_destroy(p);
    /* as tpusim run: a program that does not fit the chip is bad input */
    if (st != TPU_OK)
      return st == TPU_ERR_NOMEM || st == TPU_ERR_RUNTIME ? cli_runtime_error(cmd, "%s: %s", prog_path, err)
                                                          : cli_usage_error(cmd, "%s: %s", prog_path, err);
  } else {
    st = tpu_viz_create(&chip, &w, &v, err, sizeof err);
    if (st != TPU_OK) return st == TPU_ERR_NOMEM ? cli_runtime_error(cmd, "%s", err) : cli_usage_error(cmd, "%s", err);
  }
  if ((uint64_t)cycle >= tpu_viz_total_cycles(v)) {
    cli_usage_error(cmd, "--cycle %ld: the run lasts %llu cycles (0..%llu)", cycle,
                   (unsigned long long)tpu_viz_total_cycles(v), (unsigned long long)tpu_viz_total_cycles(v) - 1);
    tpu_viz_destroy(v);
    return 2;
  }
  if (tpu_viz_select_core(v, (int)core - 1) != TPU_OK) {
    tpu_viz_destroy(v);
    return cli_runtime_error(cmd, "out of memory");
  }
  tpu_viz_app_opts o = {
    .headless = headless, .frames = (int)frames, .every = (uint64_t)every, .start = (uint64_t)cycle,
    .out_dir = out_dir, .png = png, .script = script, .width = width, .height = height,
    .speed = speed > 0 ? speed : (chip.mxu.rows <= 16 ? 4 : 64), .quiet = c.json };
  rc = tpu_viz_app_run(v, &o);
  if (rc == 0 && c.json) {
    json_t *o_ = json_pack("{s:s, s:i}", "chip", chip.name, "cores", chip.cores);
    if (model_name) {
      json_object_set_new(o_, "model", json_pack("{s:s, s:I, s:I, s:s, s:I}", "name", model_name,
                          "global_batch", (json_int_t)batch, "per_core_batch", (json_int_t)(batch / chip.cores),
                          "precision", tpu_precision_name(prec), "infeed_ready", (json_int_t)infeed_ready));
      json_object_set_new(o_, "seed", json_integer((json_int_t)seed));
    } else if (prog_path) {
      json_object_set_new(o_, "program", json_string(prog_path));
      json_object_set_new(o_, "seed", json_integer((json_int_t)seed));
    } else {
      json_object_set_new(o_, "gemm", json_pack("{s:i, s:i, s:i, s:I, s:s}", "m", w.m, "n", w.n, "k", w.k,
                                                "seed", (json_int_t)seed, "precision", tpu_precision_name(prec)));
    }
    json_object_set_new(o_, "total_cycles", json_integer((json_int_t)tpu_viz_total_cycles(v)));
    json_object_set_new(o_, "frames", json_integer(frames));
    json_object_set_new(o_, "every", json_integer((json_int_t)every));
    json_t *per = json_array(), *sum = json_object();
    uint64_t all[TPU_SIM_NSTALL] = { 0 };
    for (int p = 0; p < chip.cores; p++) {
      uint64_t t[TPU_SIM_NSTALL];
      tpu_viz_totals(v, p, t);
      json_t *cc = json_object();
      for (int j = 0; j < TPU_SIM_NSTALL; j++) {
        json_object_set_new(cc, tpu_sim_stall_name(j), json_integer((json_int_t)t[j]));
        all[j] += t[j];
      }
      json_array_append_new(per, cc);
    }
    for (int j = 0; j < TPU_SIM_NSTALL; j++)
      json_object_set_new(sum, tpu_sim_stall_name(j), json_integer((json_int_t)all[j]));
    json_object_set_new(o_, "stall", sum);      /* summed over cores, as tpusim run --json */
    json_object_set_new(o_, "stall_cycles_per_core", per);
    const tpu_mxu_tile *tl;
    const tpu_mxu_tile_times *tt;
    size_t nt = tpu_viz_tiles(v, &tl, &tt);
    json_t *ta = json_array();
    for (size_t j = 0; j < nt; j++)
    {
      json_t *t = json_pack("{s:i, s:i, s:i, s:I, s:I, s:I}", "m", tl[j].m, "k", tl[j].k,
        "n", tl[j].n, "load_start", (json_int_t)tt[j].load_start, "stream_start", (json_int_t)tt[j].stream_start,
        "last_result", (json_int_t)tt[j].last_result);
      if (tpu_viz_tile_op(v, j)) json_object_set_new(t, "op", json_string(tpu_viz_tile_op(v, j)));
      json_array_append_new(ta, t);
    }
    json_object_set_new(o_, "core", json_integer(tpu_viz_core(v) + 1));
    /* where things are in the frames, for scripts that read the PNGs */
    tpu_viz_layout l;
    tpu_viz_layout_of(v, width, height, &l);
    json_t *cy = json_array(), *colors = json_object();
    for (int p = 0; p < chip.cores; p++) json_array_append_new(cy, json_integer(tpu_viz_core_y(&l, p)));
    for (int j = 0; j < TPU_SIM_NSTALL; j++) {
      char hex[8];
      snprintf(hex, sizeof hex, "#%06x", (unsigned)(tpu_viz_stall_color(j) & 0xffffffu));
      json_object_set_new(colors, tpu_sim_stall_name(j), json_string(hex));
    }
    json_object_set_new(o_, "colors", colors);
    json_object_set_new(o_, "layout", json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o}",
      "width", l.width, "height", l.height, "array_x", l.array.x, "array_y", l.array.y, "cell", l.cell,
      "timeline_x", l.timeline.x, "timeline_w", l.timeline.w, "core_y", cy));
    json_object_set_new(json_object_get(o_, "layout"), "strip_h", json_integer(l.strip_h));
    json_object_set_new(json_object_get(o_, "layout"), "infeed_x", json_integer(l.infeed.x));
    json_object_set_new(json_object_get(o_, "layout"), "infeed_y", json_integer(l.infeed.y));
    json_object_set_new(json_object_get(o_, "layout"), "infeed_h", json_integer(l.infeed.h));
    json_object_set_new(o_, "tiles", ta);
    json_dumpf(o_, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(o_);
  }
  tpu_viz_destroy(v);
  return rc;
}
