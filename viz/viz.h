/*
** viz.h -- the visualizer: watch the wavefront cross one core's systolic
** array and see where each core's time goes.
**
** What it shows. A session (tpu_viz) holds a run of the chip engine
** (sim.h, timing level) laid out per core: a strip of the core's stall
** kind per cycle, a row per unit (MXU, VPU, DMA, ICI) lit while an op of
** its kind is busy, the infeed queue, the totals, and the selected core's
** array 0 as a real PE-level model (tpu_mxu) stepped cycle by cycle;
** seeking backwards replays it from cycle 0.
**
** Where it comes from. Nothing is recomputed here: everything is the
** engine's event log (tpu_sim_result_events) and stall breakdown.
**   - The core strip is the log's stall intervals; the totals are
**     tpu_sim_result_stalls; the names and colours are the stall table's
**     (sim/stall.def: tpu_sim_stall_name, tpu_viz_stall_color).
**   - A unit's row is its ops' intervals (a matmul from its first weight
**     load, as the stall accounting counts it).
**   - The infeed queue is the program's ready cycles against the infeed
**     ops' ends.
**   - The PE model replays the log's array-0 tile events of the selected
**     core, in order, each held back to its op's start as the engine held
**     it, so the wavefront is where the engine's tile formula puts it.
** Invariants: a core's kinds sum to the run's cycles and equal the
** engine's per kind; the replayed tiles are exactly the engine's array-0
** tiles with their times (tests/check_viz.c proves both).
**
** Rendering is split like Peanut-GB: tpu_viz_render() draws every shape into
** a caller-owned 32-bit pixel buffer (0xAARRGGBB) and knows nothing of SDL;
** viz_sdl.c adds text (SDL2_ttf), the window, events and PNG output. Tests
** check frames without a window.
**
** Two kinds of session:
**   - A program (tpu_viz_create_program), run as given. The replayed
**     operand *values* are not the program's (the timing level has none,
**     and a buffer's values at the time of an op are not kept): they are
**     N(0,1) bf16 values drawn from the seed, the same for a given seed and
**     shape.
**   - A GEMM (tpu_viz_create): the program `tpusim matmul --cores` runs
**     (tpu_sim_gemm_program) on every core of the chip, shown the same way,
**     but the replayed tiles read the real operands (N(0,1) inputs of
**     `tpusim matmul --seed`, split into the pass's bf16 parts).
*/
#ifndef TPU_VIZ_H
#define TPU_VIZ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim/sim.h"

/* Timelines are coloured by the engine's stall kinds (TPU_SIM_MXU_BUSY ...
** TPU_SIM_IDLE, named by tpu_sim_stall_name): the colour column of the
** stall table (sim/stall.def), 0xAARRGGBB; opaque black out of range. */
uint32_t tpu_viz_stall_color(int stall);

/* The timeline's unit rows, top to bottom: the op table's row column
** (sim/ops.def), which names them (tpu_sim_kind_unit). */
typedef enum tpu_viz_unit { TPU_VIZ_UNIT_MXU = 0, TPU_VIZ_UNIT_VPU, TPU_VIZ_UNIT_DMA,
                            TPU_VIZ_UNIT_ICI, TPU_VIZ_NUNIT } tpu_viz_unit;
const char *tpu_viz_unit_name(tpu_viz_unit u);      /* "MXU", ... */

/* Cell colors (0xAARRGGBB): idle (empty), loading, holding (idle but
** keeping a tile's weight: loaded and waiting for activations, or done and
** not yet replaced). Computing cells are shaded by a value: x in
** [-1, 1] (value / scale, clamped) from blue (-1) through near-white (0) to
** red (+1). This function can't fail. */
#define TPU_VIZ_COLOR_IDLE    0xff2a2a2au
#define TPU_VIZ_COLOR_LOADING 0xffe0b000u
#define TPU_VIZ_COLOR_HOLDING 0xff5a4a1eu   /* idle, holding a tile's weight (dim amber) */
#define TPU_VIZ_COLOR_BG      0xff141414u
uint32_t tpu_viz_value_color(float value, float scale);

typedef struct tpu_viz_workload {
  int m, n, k;                 /* GEMM shape, 1..65536 each */
  uint64_t seed;               /* N(0,1) inputs, as tpusim matmul --seed */
  tpu_precision precision;     /* bf16 (1 pass), bf16x3, bf16x6: as tpusim matmul */
} tpu_viz_workload;

typedef struct tpu_viz tpu_viz;   /* opaque */

/* On success *out owns a new session (core 0 selected, cycle 0); free with
** tpu_viz_destroy(). On failure *out is NULL, nothing is allocated and err
** says why (TPU_ERR_CONFIG for bad shapes, TPU_ERR_NOMEM). 'chip' is copied. */
tpu_status tpu_viz_create(const tpu_chip_config *chip, const tpu_viz_workload *w,
                          tpu_viz **out, char *err, size_t errcap);
/* A session over program 'p' run on the chip engine (chip->cores must be
** the program's cores). 'p' is borrowed for the call; 'title' (copied,
** e.g. "program FILE") names the workload in the header; 'seed' draws the replayed operand values. On
** failure *out is NULL and err says why, with the engine's status:
** TPU_ERR_INPUT or TPU_ERR_RANGE for a program the chip cannot run (the
** engine's message), TPU_ERR_NOMEM, TPU_ERR_RUNTIME. */
tpu_status tpu_viz_create_program(const tpu_chip_config *chip, tpu_sim_program *p, const char *title,
                                  uint64_t seed, tpu_viz **out, char *err, size_t errcap);
void tpu_viz_destroy(tpu_viz *v);                   /* NULL is a no-op */
/* true for a program session. */
bool tpu_viz_is_program(const tpu_viz *v);
/* The header's workload text ("GEMM 24 x 12 x 20", "program FILE"). */
const char *tpu_viz_title(const tpu_viz *v);
/* The name of the matmul op whose tile array 0 of the selected core is
** working on at the cycle shown (the last to start loading), or NULL if
** none has yet. A GEMM's ops are named after their blocks. Valid until the
** session is destroyed. */
const char *tpu_viz_mxu_op(const tpu_viz *v);
/* The name of the op busy on unit u of the core at cycle c (the latest
** started, when two overlap), or NULL when the unit is idle. */
const char *tpu_viz_op_at(const tpu_viz *v, int core, tpu_viz_unit u, uint64_t c);
/* Tile i of the selected core's array 0 belongs to the matmul op of this
** name (NULL out of range). */
const char *tpu_viz_tile_op(const tpu_viz *v, size_t i);

const tpu_chip_config *tpu_viz_chip(const tpu_viz *v);
int      tpu_viz_core(const tpu_viz *v);            /* the selected core */
uint64_t tpu_viz_cycle(const tpu_viz *v);           /* the cycle shown */
uint64_t tpu_viz_total_cycles(const tpu_viz *v);    /* the run's length (all cores) */
/* Selects a core (0-based) and shows it at the current cycle. TPU_ERR_INPUT
** if out of range, TPU_ERR_NOMEM (then the previous core stays selected). */
tpu_status tpu_viz_select_core(tpu_viz *v, int core);
/* Shows cycle 'c' (clamped to the run): forward steps the PE model, backward
** replays it from cycle 0. TPU_ERR_NOMEM only when replaying. */
tpu_status tpu_viz_seek(tpu_viz *v, uint64_t c);
/* The cycle at which the selected core's next tile (after the current
** cycle) starts streaming, or the run's last cycle if none. */
uint64_t tpu_viz_next_tile_cycle(const tpu_viz *v);
/* The first cycle where something happens in the selected core's array 0
** (its first weight load; 0 without tiles): where the viewer starts. */
uint64_t tpu_viz_first_event_cycle(const tpu_viz *v);
/* The selected core's next / previous event after / before the cycle shown:
** a tile's first weight load, first streamed row, first full wavefront or
** first result, or a change of the core's stall kind (an infeed wait or an
** all-reduce beginning or ending). The run's last cycle / 0 if none. */
uint64_t tpu_viz_next_event_cycle(const tpu_viz *v);
uint64_t tpu_viz_prev_event_cycle(const tpu_viz *v);
/* The same step, dir > 0 next, dir < 0 previous, naming the event in
** 'what' (NULL: not wanted): "tile 3 of 64: full wavefront", "the core's
** memory_wait begins"; "" when there is none. For the window's banner. */
uint64_t tpu_viz_event_step(const tpu_viz *v, int dir, char *what, size_t cap);
/* A stretch the playback may skip: when the selected core's array 0 shows
** nothing at the cycle shown (no cell loading or computing), the cycle
** where something next happens for a class to see: the next tile starts
** loading, or an infeed wait or all-reduce begins or ends (else the run's
** last cycle); otherwise the cycle shown. *stall gets the stall kind that
** covers most of the stretch (memory_wait, vpu_busy, ...), or the core's
** kind at the cycle shown. This function can't fail. */
uint64_t tpu_viz_wait_end(const tpu_viz *v, int *stall);
/* The moments a picture is chosen by (`viz --at EVENT`), on the selected
** core: its first weight load (array 0's first tile starts loading); its
** first full wavefront (that tile's first activation diagonal reaching the
** last row it uses); its first result (that tile's results all written);
** its first partial tile (one using fewer rows or columns than the array),
** at its full wavefront, or once the tile before it has drained if that is
** later and the partial tile still streams (so it is seen computing alone); its first infeed wait; its first all-reduce (the
** first cycle in collective_wait); its first full array (the first cycle
** at which every cell of a tile computes at once: a tile whose M is at
** least its rows + columns - 1, from stream_start + k + n - 2). */
typedef enum tpu_viz_event {
  TPU_VIZ_AT_WEIGHT_LOAD = 0, TPU_VIZ_AT_WAVEFRONT, TPU_VIZ_AT_RESULT, TPU_VIZ_AT_PARTIAL_TILE,
  TPU_VIZ_AT_INFEED_WAIT, TPU_VIZ_AT_ALL_REDUCE, TPU_VIZ_AT_FULL_ARRAY, TPU_VIZ_NEVENT
} tpu_viz_event;
/* "weight-load", "wavefront", "result", "partial-tile", "infeed-wait",
** "all-reduce", "full-array"; NULL out of range. */
const char *tpu_viz_event_name(tpu_viz_event e);
/* The event's cycle into *c: true, or false when the run has none on the
** selected core (a GEMM without a partial tile, a step without infeed wait).
** This function can't fail. */
bool tpu_viz_event_cycle(const tpu_viz *v, tpu_viz_event e, uint64_t *c);
/* The selected core's cell (r, c) is idle and holds a weight at the cycle
** shown: its register keeps one, or a tile's weight has finished shifting
** into its shadow and the tile's first activation has not reached it yet
** (drawn TPU_VIZ_COLOR_HOLDING). false out of range. */
bool tpu_viz_cell_holds(const tpu_viz *v, int r, int c);
/* The selected core's cell (r, c) has a tile's weight in its shadow
** register that is not yet active at the cycle shown (tpu_mxu_view's
** shadow): loading into it, or loaded and waiting for the tile's first
** activation. While the cell still computes the tile before, it is drawn
** computing with the shadow mark: an amber (TPU_VIZ_COLOR_LOADING) triangle
** in its top-right corner, TPU_VIZ_SHADOW_MARK(pitch - gap) px on a side.
** false out of range. */
bool tpu_viz_cell_shadow(const tpu_viz *v, int r, int c);
#define TPU_VIZ_SHADOW_MARK(inner) ((inner) * 2 / 5 > 2 ? (inner) * 2 / 5 : 2)
/* What the picture at the cycle shown holds, for a script to check a
** picture's claim without reading pixels (`viz --json`'s "moment"): the
** selected core's stall kind and, over its array 0's cells, how many load
** weights, hold weights without computing (tpu_viz_cell_holds), compute, and how many rows and columns have a computing cell.
** This function can't fail. */
typedef struct tpu_viz_moment {
  int core_stall;              /* TPU_SIM_* */
  int cells, loading, holding, computing;
  int rows_computing, cols_computing;
} tpu_viz_moment;
void tpu_viz_moment_of(const tpu_viz *v, tpu_viz_moment *out);
/* Where stall kind 'stall' lies on the selected core: [*a, *b) from its
** first cycle to the end of its last; false when the core has none. */
bool tpu_viz_stall_span(const tpu_viz *v, int stall, uint64_t *a, uint64_t *b);
/* The selected core's array-0 tiles in order and their times (borrowed,
** valid until the session is destroyed); returns their count. */
size_t tpu_viz_tiles(const tpu_viz *v, const tpu_mxu_tile **tiles, const tpu_mxu_tile_times **times);
/* Cycles the core spent in each stall kind over the whole run: the
** engine's tpu_sim_result_stalls (they sum to tpu_viz_total_cycles). */
void tpu_viz_totals(const tpu_viz *v, int core, uint64_t out[TPU_SIM_NSTALL]);
/* The core's stall kind and the unit's state at cycle c (TPU_SIM_IDLE when
** the unit does nothing). These functions can't fail. */
int tpu_viz_core_cat_at(const tpu_viz *v, int core, uint64_t c);
int tpu_viz_unit_cat_at(const tpu_viz *v, int core, tpu_viz_unit u, uint64_t c);
/* Infeed queue occupancy (batches) of the core at cycle c: batches ready
** by c that no infeed op has dequeued by c; 0 for a GEMM. The largest over
** the run is tpu_viz_infeed_max. */
int tpu_viz_infeed_at(const tpu_viz *v, int core, uint64_t c);
int tpu_viz_infeed_max(const tpu_viz *v, int core);

/* The selected core's cell (r, c) at the cycle shown. false if out of range. */
typedef struct tpu_viz_cell {
  int state;                   /* tpu_mxu_cell_state */
  float weight, act, psum;
} tpu_viz_cell;
bool tpu_viz_cell_info(const tpu_viz *v, int r, int c, tpu_viz_cell *out);
/* The weight a cell shows: while its tile loads, the value arriving there
** (the tile's weight for that cell), else the one it holds. false for an
** out-of-range cell or an idle cell that never held one. */
bool tpu_viz_cell_weight(const tpu_viz *v, int r, int c, float *w);
/* An input pipeline's timeline shown above the cores' (`tpusim viz
** --pipeline`), drawn as the tf.data performance guide draws one: a row per
** stage or worker, each element's open / read / map / batch ... interval on
** it, over the same cycles as the cores' strips, so a core's infeed_wait
** sits under the host work it waits for. Kinds are datafeed's letters
** (df.h: 'O' open, 'R' read, 'M' map, 'X' shuffle, 'B' batch, 'C' cache
** read, 'P' prefetch, 'S' serialize, 'D' deserialize, 'I' iterator made,
** 'W' consumer waits, 'T' consumer step). Names and spans are copied; spans
** outside [0, the run's cycles) are clipped when drawn. TPU_ERR_INPUT for
** a row out of range or more than 64 rows, TPU_ERR_NOMEM. */
typedef struct tpu_viz_span { int row; uint64_t a, b; char kind; } tpu_viz_span;
tpu_status tpu_viz_set_pipeline(tpu_viz *v, const char *title, int nrows, const char *const *names,
                                const tpu_viz_span *spans, size_t n);
int tpu_viz_pipeline_rows(const tpu_viz *v);                    /* 0 without a pipeline */
/* The span kinds present, in the legend's order, as a string in out; their count. */
int tpu_viz_pipeline_kinds(const tpu_viz *v, char out[16]);
const char *tpu_viz_pipeline_row_name(const tpu_viz *v, int row);
const char *tpu_viz_pipeline_title(const tpu_viz *v);           /* "" without a pipeline */
/* A span kind's color (0xAARRGGBB) and name ("open", "read", ...); an
** unknown kind is grey / "other". These functions can't fail. */
uint32_t tpu_viz_span_color(char kind);
const char *tpu_viz_span_name(char kind);
/* Multiplies the text size of every layout (--scale; <= 0 means 1). */
void tpu_viz_set_text_scale(tpu_viz *v, double s);
/* What computing cells are shaded by: false = activation, true = psum
** (the default on arrays larger than 16x16). */
void tpu_viz_set_shade_psum(tpu_viz *v, bool psum);
bool tpu_viz_shade_psum(const tpu_viz *v);
float tpu_viz_shade_scale(const tpu_viz *v);        /* the 'scale' for tpu_viz_value_color */

/* {==================================================================
** Layout and rendering (no SDL). All coordinates are pixels of a frame.
** ================================================================== */
typedef struct tpu_viz_rect { int x, y, w, h; } tpu_viz_rect;
typedef struct tpu_viz_layout {
  int width, height;
  tpu_viz_rect header;         /* title line */
  tpu_viz_rect array;          /* the rows x cols cells */
  int cell;                    /* cell pitch; cells are cell x cell (gap of 1 when cell >= 6) */
  tpu_viz_rect queue;          /* skewed input queue, left of the array (queue_cols x rows) */
  int queue_cols;
  tpu_viz_rect acc;            /* accumulators, below the array */
  tpu_viz_rect pipeline;       /* the input pipeline's rows, above the timeline (h 0 without) */
  int pipe_row_h;              /* a pipeline row's height */
  tpu_viz_rect timeline;       /* the band area (labels are left of it) */
  tpu_viz_rect axis;           /* the cycle axis under it: ticks, then their labels */
  int core_h, row_h, strip_h;  /* per-core block height; unit row and core strip heights */
  int per_col, col_dx;         /* cores per column of blocks; column 1's x offset (0: one column) */
  tpu_viz_rect infeed;         /* infeed occupancy graph */
  tpu_viz_rect legend;         /* legend and totals */
  tpu_viz_rect info;           /* hover and help text */
  int font, line;              /* text size (px) and text row pitch */
  bool arrows;                 /* small arrays: flow arrows and per-cell values */
} tpu_viz_layout;

/* Computes the layout of a width x height frame (at least 640 x 480). */
void tpu_viz_layout_of(const tpu_viz *v, int width, int height, tpu_viz_layout *out);
/* Top y of core p's block in the timeline; its strip is [y, y+strip_h),
** unit u's row [y + strip_h + u*row_h, + row_h). When one column of
** blocks would leave unit rows too thin for their labels (8 cores at
** 1280x800: 8 px), the cores are laid out in two columns (per_col in the
** first, the rest in the second, col_dx to the right, each with its label
** gutter), each column showing the same cycles as timeline.x .. + w. */
int tpu_viz_core_y(const tpu_viz_layout *l, int core);
/* Left x of core p's bands: timeline.x, + col_dx in the second column. */
int tpu_viz_core_x(const tpu_viz_layout *l, int core);
/* The timeline's visible cycles [a, b): the whole run until zoomed. */
void tpu_viz_view_range(const tpu_viz *v, uint64_t *a, uint64_t *b);
/* Zooms the timeline by 'factor' (2 = twice as many pixels per cycle,
** 0.5 = out) keeping cycle 'center' where it is on screen; at least 16
** cycles stay visible, never more than the run. */
void tpu_viz_zoom(tpu_viz *v, double factor, uint64_t center);
/* Pans the timeline by 'fraction' of its visible width (negative: earlier),
** clamped to the run. */
void tpu_viz_pan(tpu_viz *v, double fraction);
/* Cycle under timeline x (clamped to the visible range), and the cell under
** (x, y) (false if none). */
uint64_t tpu_viz_cycle_at_x(const tpu_viz *v, const tpu_viz_layout *l, int x);
bool tpu_viz_cell_at(const tpu_viz *v, const tpu_viz_layout *l, int x, int y, int *r, int *c);
/* The cycle axis: up to 'max' ticks into out (cycles in the visible range,
** increasing, a round step apart: 1, 2 or 5 times a power of ten, the
** smallest that leaves 6 text heights between ticks); their count. */
int tpu_viz_axis_ticks(const tpu_viz *v, const tpu_viz_layout *l, uint64_t *out, int max);
/* A tick's label: "750", "12k", "1.5M" (at most 7 characters). */
void tpu_viz_cycle_label(uint64_t c, char *b, size_t n);
#define TPU_VIZ_COLOR_TICK 0xff909090u

/* Draws the frame (every shape; text is drawn on top by the SDL layer) into
** 'pixels' (width x height of the layout, 'pitch' pixels per row, caller-
** owned). This function can't fail. */
void tpu_viz_render(tpu_viz *v, const tpu_viz_layout *l, uint32_t *pixels, int pitch);
/* }================================================================== */

/* {==================================================================
** The SDL front end (viz_sdl.c).
** ================================================================== */
typedef struct tpu_viz_app_opts {
  bool headless;               /* render offscreen, write PNG frames */
  int frames;                  /* headless: frames to write (>= 1) */
  uint64_t every;              /* headless: cycles between frames (>= 1) */
  uint64_t start;              /* first cycle shown */
  const char *out_dir;         /* headless frames and 's' screenshots ("." when NULL) */
  const char *png;             /* headless: write the one frame to this file instead */
  const char *gif;             /* headless: write all frames as one animated GIF (10 frames/s) instead */
  const char *script;          /* interactive test mode: comma-separated actions */
  int width, height;           /* frame size */
  double speed;                /* cycles per second when running */
  bool quiet;                  /* no stdout lines */
} tpu_viz_app_opts;

/* Runs the window (or the headless renderer). Returns 0, 1 on a runtime
** failure (message on stderr), 2 when no display can be opened (message
** suggests --headless). */
int tpu_viz_app_run(tpu_viz *v, const tpu_viz_app_opts *o);
/* Renders the current frame with text to a PNG file (software, no window).
** Needs SDL video initialised (any driver) and TTF. 0 or -1 (err set). */
int tpu_viz_save_png(tpu_viz *v, int width, int height, const char *path, char *err, size_t errcap);
/* A canvas: one software frame (ARGB8888) with its fonts, composed as the
** window shows it (shapes, then text). Needs SDL initialised (any video
** driver, e.g. dummy); TTF is initialised on first use. On failure *out is
** NULL and err says why (e.g. the font is missing). 'v' must outlive it. */
typedef struct tpu_viz_canvas tpu_viz_canvas;
tpu_status tpu_viz_canvas_create(tpu_viz *v, int width, int height, tpu_viz_canvas **out,
                                 char *err, size_t errcap);
void tpu_viz_canvas_destroy(tpu_viz_canvas *c);             /* NULL is a no-op */
void tpu_viz_canvas_draw(tpu_viz_canvas *c);                /* this function can't fail */
/* The composed pixels (owned by the canvas), 'pitch' pixels per row. */
const uint32_t *tpu_viz_canvas_pixels(const tpu_viz_canvas *c, int *pitch);
/* Writes the frame whole or not at all; 0, or -1 with err set. */
int tpu_viz_canvas_save_png(tpu_viz_canvas *c, const char *path, char *err, size_t errcap);
/* A window showing a canvas, as `tpusim viz` shows it (bench_viz times
** this path). Needs SDL video initialised with a driver that can open
** windows. On X11 (and SDL's dummy driver) the canvas composes straight
** into the window's framebuffer, shown with one XShmPutImage; elsewhere it
** is uploaded to a streaming texture of an SDL renderer. On failure *out
** is NULL and err says why: TPU_ERR_IO when no window can be opened,
** TPU_ERR_RUNTIME otherwise. */
typedef struct tpu_viz_window tpu_viz_window;
tpu_status tpu_viz_window_create(tpu_viz *v, int width, int height, tpu_viz_window **out, char *err, size_t errcap);
void tpu_viz_window_destroy(tpu_viz_window *w);             /* NULL is a no-op */
void tpu_viz_window_present(tpu_viz_window *w);             /* compose and show one frame; can't fail */
/* How frames reach the screen: "X11 framebuffer (MIT-SHM)", "window
** framebuffer", "SDL renderer, streaming texture", ... */
const char *tpu_viz_window_path(const tpu_viz_window *w);
/* The key help text (for --help and the on-screen help). */
extern const char TPU_VIZ_KEYS_HELP[];
/* }================================================================== */
#endif /* TPU_VIZ_H */
