/*
** viz_int.h -- the session's insides, shared by viz.c (model, layout,
** shapes) and viz_sdl.c (text, window, events). Not a public header.
**
** Timeline storage: per core, its cycles are cut into segments of constant
** state [seg_at[i], seg_at[i+1]); each segment records the core's stall
** kind and each unit's, so any cycle is classified by one binary search.
*/
#ifndef TPU_VIZ_INT_H
#define TPU_VIZ_INT_H
#include "viz/viz.h"

typedef struct viz_seg {
  uint64_t at;                       /* first cycle of the segment */
  uint8_t core;                      /* the core's stall kind (TPU_SIM_*) */
  uint8_t unit[TPU_VIZ_NUNIT];       /* per unit, its stall kind when busy, else TPU_SIM_IDLE */
} viz_seg;

/* Where a replayed tile comes from: the core's matmul op (ordinal) and the
** tile's place in that op's walk (offsets, bf16 parts). */
typedef struct viz_tsrc { int op; tpu_mxu_walk_tile walk; } viz_tsrc;

/* One op's interval on a unit (for the "what runs now" line). */
typedef struct viz_opiv { uint64_t a, b; char *name; } viz_opiv;

typedef struct viz_core {
  int m0, mrows;                     /* GEMM: the core's rows of A and C */
  tpu_sim_gemm_place *places;        /* GEMM: where each matmul op sits (tpu_sim_gemm_places) */
  size_t nplaces;
  viz_seg *seg; size_t nseg;         /* last segment is idle up to the run's end */
  uint64_t end;                      /* the run's length (segments end there) */
  uint64_t totals[TPU_SIM_NSTALL];   /* the engine's (tpu_sim_result_stalls) */
  tpu_mxu_tile *tiles;               /* array 0's tiles (the one the PE model shows) */
  tpu_mxu_tile_times *times;
  size_t ntiles;
  viz_tsrc *tsrc;                     /* per tile */
  viz_opiv *opiv[TPU_VIZ_NUNIT];     /* per unit, its ops in program order (starts nondecreasing) */
  size_t nopiv[TPU_VIZ_NUNIT];
  char **opname; int nopname;        /* the core's matmul ops' names, in program order */
  uint64_t *inf_ready; int64_t ninf; /* infeed batches' ready cycles */
  uint64_t *inf_deq; int64_t ndeq;   /* the infeed ops' end cycles (a batch leaves the queue) */
  int inf_max;                       /* largest occupancy over the run */
} viz_core;

/* The input pipeline shown above the timeline (tpu_viz_set_pipeline). */
typedef struct viz_pipe {
  char title[160];
  int nrows;
  char **names;                      /* nrows */
  tpu_viz_span *spans; size_t nspans;
} viz_pipe;

struct tpu_viz {
  tpu_chip_config chip;
  tpu_viz_workload w;                /* GEMM sessions */
  bool prog;                         /* a program given by the caller (synthetic values) */
  char title[160];                   /* "GEMM M x N x K" or "program NAME" */
  int rows, cols, ncores;
  float *A, *B, *C;                  /* bf16-valued inputs, f32 result (all cores' rows) */
  viz_core core[TPU_SIM_GEMM_MAX_CORES];
  uint64_t total;                    /* run length: max over cores */
  int sel;                           /* selected core */
  uint64_t shown;                    /* cycle shown */
  tpu_mxu *pe;                       /* PE model of the selected core's array 0 */
  uint64_t ticks;                    /* ticks done on pe */
  uint8_t *state; float *weight, *act, *psum;   /* the view, rows*cols each */
  uint8_t *shadow;                   /* the view's shadow flags (tpu_mxu_view), rows*cols */
  bool shade_psum;
  double text_scale;                 /* --scale: multiplies the text size (default 1) */
  float act_scale, psum_scale;
  uint8_t *tl_cache; int tl_w; uint64_t tl_total; /* per timeline x: core cat + unit cats */
  uint64_t tl_a, tl_b;               /* the timeline's visible cycles [tl_a, tl_b); 0, 0 = the whole run */
  uint64_t tl_ca, tl_cb;             /* the range tl_cache was built for */
  viz_pipe pipe;                     /* nrows 0: none */
  uint32_t *tl_px;                   /* the cores' strips and unit rows drawn from tl_cache (timeline.w x */
  int tl_px_key[3];                  /* ncores * core_h pixels), for the core_h, strip_h, row_h it was drawn at */
};
/* Writes 32-bit 0xAARRGGBB pixels as an RGB PNG, whole or not at all
** (tpu_write_atomic). 0, or -1 with err set. (viz_png.c) */
int viz_png_write(const char *path, const uint32_t *px, int w, int h, int pitch, char *err, size_t errcap);
/* Animated GIF (viz_gif.c): frames of w x h pixels, each mapped to one
** palette per file: the viewer's named colours exactly (stall kinds, span
** kinds, cell states, greys, the computing scale), others to the nearest
** entry (viz_gif_index; viz_gif_color is the palette entry); gathered in
** memory and written by viz_gif_close(keep) (tpu_write_atomic).
** open returns NULL with err set; close returns 0, or -1 with err set. */
typedef struct viz_gif viz_gif;
uint8_t viz_gif_index(const viz_gif *g, uint32_t argb);
uint32_t viz_gif_color(const viz_gif *g, uint8_t i);
viz_gif *viz_gif_open(const char *path, int w, int h, char *err, size_t errcap);
void viz_gif_frame(viz_gif *g, const uint32_t *px, int pitch, int delay_cs);
int viz_gif_close(viz_gif *g, bool keep, char *err, size_t errcap);
#endif
