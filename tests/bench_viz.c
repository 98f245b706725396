/*
** bench_viz.c -- frames per second of the visualizer on a 128x128 array of
** an 8-core chip (tpu-v2-8) at 1920x1080. Each frame steps the PE model one
** cycle in the middle of a tile (so every cell changes), composes the whole
** window (cells, queue, accumulators, 8 cores' timelines, legend, text) and
** presents it through the window `tpusim viz` opens (tpu_viz_window: on X11
** the window's own framebuffer). Side by side: the path tpusim 0.2.0's
** window took (the composed frame uploaded to a streaming texture of SDL's
** default renderer, GL under X11), and a naive renderer issuing one
** SDL_RenderFillRect per cell. With DISPLAY set (e.g. under xvfb-run, as
** make bench runs it) the windows are real X11 windows; else SDL's dummy
** driver. Goals (issue #19): the window's frame >= 60 frames/s; headless
** PNG frames (step, compose, encode, write) >= 30 frames/s.
*/
#include <SDL.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/sim.h"
#include "tests/test_util.h"
#include "viz/viz.h"

#define W 1920                          /* a projector's frame (issue #19) */
#define H 1080
#define SECONDS 2.0
#define MAX_FRAMES 3800                 /* stay inside the first tile */

static void die(const char *what) {
  fprintf(stderr, "bench_viz: %s\n", what);
  exit(1);
}

/* The window's renderer and texture, and a session seeked into its first tile. */
typedef struct bench {
  SDL_Renderer *ren;               /* the old path's window: renderer and texture */
  SDL_Texture *tex;
  tpu_viz_window *win;             /* tpusim viz's window */
  tpu_viz *v;
  tpu_viz_canvas *cv;
  tpu_viz_layout l;
  uint64_t start;                  /* the cycle of frame 0 */
  uint32_t *px;                    /* W x H, for the shapes-only frame */
  char png[64];
} bench;

/* One 4096 x 256 x 256 matmul per core, operands already in VMEM: each
** tile streams 4096 cycles, more than any loop below steps (a GEMM from HBM
** is cut into VMEM-sized blocks, whose tiles are shorter). */
static tpu_viz *session(const tpu_chip_config *chip) {
  tpu_sim_program *p;
  if (tpu_sim_program_create(chip->cores, &p) != TPU_OK) die("out of memory");
  for (int c = 0; c < chip->cores; c++) {
    int a = tpu_sim_buffer(p, c, "a", TPU_SIM_VMEM, TPU_SIM_F32, 4096, 256);
    int b = tpu_sim_buffer(p, c, "b", TPU_SIM_VMEM, TPU_SIM_F32, 256, 256);
    int d = tpu_sim_buffer(p, c, "c", TPU_SIM_VMEM, TPU_SIM_F32, 4096, 256);
    tpu_sim_op op = { .kind = TPU_SIM_MATMUL, .a = a, .b = b, .dst = d };
    if (!a || !b || !d || tpu_sim_add_op(p, c, &op, NULL) != TPU_OK) die(tpu_sim_program_error(p));
  }
  tpu_viz *v;
  char err[512];
  if (tpu_viz_create_program(chip, p, "bench", 1, &v, err, sizeof err) != TPU_OK) die(err);
  tpu_sim_program_destroy(p);
  return v;
}

/* A new session and canvas for the next measurement. */
static void fresh(bench *b) {
  tpu_viz_window_destroy(b->win);
  b->win = NULL;
  tpu_viz_canvas_destroy(b->cv);
  tpu_viz_destroy(b->v);
  tpu_chip_config chip;
  char err[512];
  if (tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err) != TPU_OK) die(err);
  b->v = session(&chip);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(b->v, NULL, &tt);
  b->start = tt[0].stream_start + 200;            /* the whole array is computing */
  if (b->start + 4000 > tt[0].last_result) die("tile too short");
  tpu_viz_seek(b->v, b->start);
  if (tpu_viz_canvas_create(b->v, W, H, &b->cv, err, sizeof err) != TPU_OK) die(err);
  tpu_viz_layout_of(b->v, W, H, &b->l);
}

/* Frames per second of frame(b, 0), frame(b, 1), ... for 'seconds' (at most
** 'max_frames' frames). */
static double fps(bench *b, void (*frame)(bench *, int), double seconds, int max_frames) {
  int frames = 0;
  double t0 = tu_now(), t;
  while ((t = tu_now()) - t0 < seconds && frames < max_frames) frame(b, frames++);
  return frames / (t - t0);
}

static void present(bench *b, const uint32_t *px, int pitch) {
  SDL_UpdateTexture(b->tex, NULL, px, pitch * 4);
  SDL_RenderCopy(b->ren, b->tex, NULL, NULL);
  SDL_RenderPresent(b->ren);
}

/* The viz frame: one cycle on, the whole window composed and presented as
** tpusim viz presents it. */
static void frame_window(bench *b, int i) {
  tpu_viz_seek(b->v, b->start + (uint64_t)i);
  tpu_viz_window_present(b->win);
}

/* The same frame shown the way tpusim 0.2.0 showed it: composed, uploaded
** to a streaming texture, drawn by the renderer. */
static void frame_texture(bench *b, int i) {
  tpu_viz_seek(b->v, b->start + (uint64_t)i);
  tpu_viz_canvas_draw(b->cv);
  int pitch;
  const uint32_t *px = tpu_viz_canvas_pixels(b->cv, &pitch);
  present(b, px, pitch);
}

/* Shapes only (no text): the pixel path the naive renderer is compared with. */
static void frame_shapes(bench *b, int i) {
  tpu_viz_seek(b->v, b->start + (uint64_t)i);
  tpu_viz_render(b->v, &b->l, b->px, W);
  present(b, b->px, W);
}

/* Naive: the same cells, one SDL_RenderFillRect each (no text, no timeline). */
static void frame_naive(bench *b, int i) {
  tpu_viz_seek(b->v, b->start + (uint64_t)i);
  SDL_SetRenderDrawColor(b->ren, 20, 20, 20, 255);
  SDL_RenderClear(b->ren);
  const float scale = tpu_viz_shade_scale(b->v);
  const tpu_viz_layout *l = &b->l;
  for (int r = 0; r < tpu_viz_chip(b->v)->mxu.rows; r++)
    for (int c = 0; c < tpu_viz_chip(b->v)->mxu.cols; c++) {
      tpu_viz_cell cell;
      tpu_viz_cell_info(b->v, r, c, &cell);
      uint32_t col = cell.state == 2 ? tpu_viz_value_color(cell.act, scale)
                   : cell.state == 1 ? TPU_VIZ_COLOR_LOADING : TPU_VIZ_COLOR_IDLE;
      SDL_SetRenderDrawColor(b->ren, (Uint8)(col >> 16), (Uint8)(col >> 8), (Uint8)col, 255);
      SDL_Rect rc = { l->array.x + c * l->cell, l->array.y + r * l->cell, l->cell, l->cell };
      SDL_RenderFillRect(b->ren, &rc);
    }
  SDL_RenderPresent(b->ren);
}

/* The parts: stepping the PE model alone, composing alone. */
static void frame_step(bench *b, int i) { tpu_viz_seek(b->v, b->start + (uint64_t)i); }
static void frame_compose(bench *b, int i) { (void)i; tpu_viz_canvas_draw(b->cv); }

/* A headless PNG frame (what --headless --frames N writes). */
static void frame_png(bench *b, int i) {
  char err[512];
  tpu_viz_seek(b->v, b->start + (uint64_t)i);
  tpu_viz_canvas_draw(b->cv);
  if (tpu_viz_canvas_save_png(b->cv, b->png, err, sizeof err) != 0) die(err);
}

enum { WINDOW, TEXTURE, SHAPES, NAIVE, STEP, COMPOSE, PNG, NMEASURES };

static void report(const double f[NMEASURES], const char *path, const char *renderer) {
  printf("\n## viz: frames per second, tpu-v2-8 (8 cores, 128x128 MXU), %dx%d, SDL video driver %s\n\n",
         W, H, SDL_GetCurrentVideoDriver() ? SDL_GetCurrentVideoDriver() : "?");
  printf("| frame | frames/s | vs naive cells |\n| --- | ---: | ---: |\n");
  printf("| viz: step 1 cycle, whole window (cells, queue, 8-core timeline, legend, text), shown by %s | %.1f | %.2fx |\n",
         path, f[WINDOW], f[WINDOW] / f[NAIVE]);
  printf("| before (tpusim 0.2.0): the same frame through a streaming texture of SDL's %s renderer | %.1f | %.2fx |\n",
         renderer, f[TEXTURE], f[TEXTURE] / f[NAIVE]);
  printf("| shapes only: step, every cell + queue + timeline into the pixels, upload | %.1f | %.2fx |\n", f[SHAPES],
         f[SHAPES] / f[NAIVE]);
  printf("| naive: step 1 cycle, one SDL_RenderFillRect per cell (cells only) | %.1f | 1.0x |\n", f[NAIVE]);
  printf("| part: stepping the 128x128 PE model one cycle | %.1f | |\n", f[STEP]);
  printf("| part: composing the whole window (no step, no present) | %.1f | |\n", f[COMPOSE]);
  printf("| headless PNG: step, compose, encode and write | %.1f | |\n", f[PNG]);
  printf("\ngoal: viz frame >= 60 frames/s: %s; headless PNG frames >= 30 frames/s: %s\n",
         f[WINDOW] >= 60.0 ? "met" : "NOT MET", f[PNG] >= 30.0 ? "met" : "NOT MET");
}

int main(void) {
  if (!getenv("DISPLAY")) SDL_SetHint(SDL_HINT_VIDEODRIVER, "dummy");   /* a real window under X (Xvfb) */
  if (SDL_Init(SDL_INIT_VIDEO) != 0) die(SDL_GetError());
  bench b = { 0 };
  char err[512];
  double f[NMEASURES];
  fresh(&b);
  if (tpu_viz_window_create(b.v, W, H, &b.win, err, sizeof err) != TPU_OK) die(err);
  const char *path = tpu_viz_window_path(b.win);
  f[WINDOW] = fps(&b, frame_window, SECONDS, MAX_FRAMES);
  fresh(&b);
  /* the old path's window, as tpusim 0.2.0 made it (its default renderer) */
  SDL_Window *win = SDL_CreateWindow("bench", 0, 0, W, H, 0);
  b.ren = win ? SDL_CreateRenderer(win, -1, 0) : NULL;
  if (win && !b.ren) b.ren = SDL_CreateRenderer(win, -1, SDL_RENDERER_SOFTWARE);
  b.tex = b.ren ? SDL_CreateTexture(b.ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, W, H) : NULL;
  b.px = malloc((size_t)W * H * 4);
  if (!b.tex || !b.px) die(SDL_GetError());
  SDL_RendererInfo ri;
  const char *renderer = SDL_GetRendererInfo(b.ren, &ri) == 0 ? ri.name : "?";
  snprintf(b.png, sizeof b.png, "/tmp/tpusim_bench_viz_%ld.png", (long)getpid());
  f[TEXTURE] = fps(&b, frame_texture, SECONDS, MAX_FRAMES);
  fresh(&b);
  f[SHAPES] = fps(&b, frame_shapes, SECONDS, MAX_FRAMES);
  fresh(&b);
  f[NAIVE] = fps(&b, frame_naive, SECONDS, MAX_FRAMES);
  fresh(&b);
  f[STEP] = fps(&b, frame_step, SECONDS / 2, MAX_FRAMES);
  f[COMPOSE] = fps(&b, frame_compose, SECONDS / 2, INT_MAX);
  fresh(&b);
  f[PNG] = fps(&b, frame_png, SECONDS, MAX_FRAMES);
  remove(b.png);
  report(f, path, renderer);
  tpu_viz_canvas_destroy(b.cv);
  tpu_viz_destroy(b.v);
  free(b.px);
  SDL_DestroyTexture(b.tex);
  SDL_DestroyRenderer(b.ren);
  SDL_DestroyWindow(win);
  SDL_Quit();
  return f[WINDOW] >= 60.0 && f[PNG] >= 30.0 ? 0 : 1;
}
