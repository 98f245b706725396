/*
** bench_viz.c -- frames per second of the visualizer on a 128x128 array of
** an 8-core chip (tpu-v2-8), headless (SDL dummy video driver), software
** renderer, side by side with a naive renderer that issues one
** SDL_RenderFillRect per cell. Each frame steps the PE model one cycle in
** the middle of a tile (so every cell changes), composes the whole window
** (cells, queue, accumulators, 8 cores' timelines, text) and presents it.
** Goal (issue 7): >= 30 frames/s, for the window's frame and for headless
** PNG frames (step, compose, encode, write).
*/
#include <SDL.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/sim.h"
#include "tests/test_util.h"
#include "viz/viz.h"

#define W 1280
#define H 800
#define SECONDS 2.0
#define MAX_FRAMES 3800                 /* stay inside the first tile */

static tpu_viz *setup(uint64_t *start) {
  tpu_chip_config chip;
  char err[512];
  if (tpu_chip_config_load("tpu-v2-8", &chip, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); exit(1); }
  /* one 4096 x 256 x 256 matmul per core, operands already in VMEM: each
  ** tile streams 4096 cycles, more than any loop below steps (a GEMM from
  ** HBM is cut into VMEM-sized blocks, whose tiles are shorter) */
  tpu_sim_program *p;
  if (tpu_sim_program_create(chip.cores, &p) != TPU_OK) exit(1);
  for (int c = 0; c < chip.cores; c++) {
    int a = tpu_sim_buffer(p, c, "a", TPU_SIM_VMEM, TPU_SIM_F32, 4096, 256);
    int b = tpu_sim_buffer(p, c, "b", TPU_SIM_VMEM, TPU_SIM_F32, 256, 256);
    int d = tpu_sim_buffer(p, c, "c", TPU_SIM_VMEM, TPU_SIM_F32, 4096, 256);
    tpu_sim_op op = { .kind = TPU_SIM_MATMUL, .a = a, .b = b, .dst = d };
    if (!a || !b || !d || tpu_sim_add_op(p, c, &op, NULL) != TPU_OK) { fprintf(stderr, "%s\n", tpu_sim_program_error(p)); exit(1); }
  }
  tpu_viz *v;
  if (tpu_viz_create_program(&chip, p, "bench", 1, &v, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); exit(1); }
  tpu_sim_program_destroy(p);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, NULL, &tt);
  *start = tt[0].stream_start + 200;            /* the whole array is computing */
  if (*start + 4000 > tt[0].last_result) { fprintf(stderr, "bench: tile too short\n"); exit(1); }
  tpu_viz_seek(v, *start);
  return v;
}

int main(void) {
  SDL_SetHint(SDL_HINT_VIDEODRIVER, "dummy");
  if (SDL_Init(SDL_INIT_VIDEO) != 0) { fprintf(stderr, "SDL: %s\n", SDL_GetError()); return 1; }
  SDL_Window *win = SDL_CreateWindow("bench", 0, 0, W, H, 0);
  SDL_Renderer *ren = win ? SDL_CreateRenderer(win, -1, SDL_RENDERER_SOFTWARE) : NULL;
  SDL_Texture *tex = ren ? SDL_CreateTexture(ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, W, H) : NULL;
  if (!tex) { fprintf(stderr, "SDL: %s\n", SDL_GetError()); return 1; }
  char err[512];
  uint64_t start;
  tpu_viz *v = setup(&start);
  tpu_viz_canvas *cv;
  if (tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }

  /* 1. the viz frame */
  int frames = 0;
  double t0 = tu_now(), t;
  while ((t = tu_now()) - t0 < SECONDS && frames < MAX_FRAMES) {
    tpu_viz_seek(v, start + (uint64_t)frames);
    tpu_viz_canvas_draw(cv);
    int pitch;
    const uint32_t *px = tpu_viz_canvas_pixels(cv, &pitch);
    SDL_UpdateTexture(tex, NULL, px, pitch * 4);
    SDL_RenderCopy(ren, tex, NULL, NULL);
    SDL_RenderPresent(ren);
    frames++;
  }
  const double fps_viz = frames / (t - t0);

  /* 1b. shapes only (no text): the pixel path the naive renderer is compared with */
  tpu_viz_canvas_destroy(cv);
  tpu_viz_destroy(v);
  v = setup(&start);
  if (tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
  uint32_t *shapes = malloc((size_t)W * H * 4);
  tpu_viz_layout ls;
  tpu_viz_layout_of(v, W, H, &ls);
  frames = 0;
  t0 = tu_now();
  while ((t = tu_now()) - t0 < SECONDS && frames < MAX_FRAMES) {
    tpu_viz_seek(v, start + (uint64_t)frames);
    tpu_viz_render(v, &ls, shapes, W);
    SDL_UpdateTexture(tex, NULL, shapes, W * 4);
    SDL_RenderCopy(ren, tex, NULL, NULL);
    SDL_RenderPresent(ren);
    frames++;
  }
  const double fps_shapes = frames / (t - t0);
  free(shapes);

  /* 2. naive: the same cells, one SDL_RenderFillRect each (no text, no timeline) */
  tpu_viz_canvas_destroy(cv);
  tpu_viz_destroy(v);
  v = setup(&start);
  if (tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
  tpu_viz_layout l;
  tpu_viz_layout_of(v, W, H, &l);
  const int R = tpu_viz_chip(v)->mxu.rows, C = tpu_viz_chip(v)->mxu.cols;
  frames = 0;
  t0 = tu_now();
  while ((t = tu_now()) - t0 < SECONDS && frames < MAX_FRAMES) {
    tpu_viz_seek(v, start + (uint64_t)frames);
    SDL_SetRenderDrawColor(ren, 20, 20, 20, 255);
    SDL_RenderClear(ren);
    const float scale = tpu_viz_shade_scale(v);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        tpu_viz_cell cell;
        tpu_viz_cell_info(v, r, c, &cell);
        uint32_t col = cell.state == 2 ? tpu_viz_value_color(cell.act, scale)
                     : cell.state == 1 ? TPU_VIZ_COLOR_LOADING : TPU_VIZ_COLOR_IDLE;
        SDL_SetRenderDrawColor(ren, (Uint8)(col >> 16), (Uint8)(col >> 8), (Uint8)col, 255);
        SDL_Rect rc = { l.array.x + c * l.cell, l.array.y + r * l.cell, l.cell, l.cell };
        SDL_RenderFillRect(ren, &rc);
      }
    SDL_RenderPresent(ren);
    frames++;
  }
  const double fps_naive = frames / (t - t0);

  /* 3. the parts: stepping the PE model alone, composing alone */
  tpu_viz_canvas_destroy(cv);
  tpu_viz_destroy(v);
  v = setup(&start);
  if (tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
  frames = 0;
  t0 = tu_now();
  while ((t = tu_now()) - t0 < SECONDS / 2 && frames < MAX_FRAMES) { tpu_viz_seek(v, start + (uint64_t)frames); frames++; }
  const double fps_step = frames / (t - t0);
  frames = 0;
  t0 = tu_now();
  while ((t = tu_now()) - t0 < SECONDS / 2) { tpu_viz_canvas_draw(cv); frames++; }
  const double fps_compose = frames / (t - t0);

  /* 4. headless PNG frames (what --headless --frames N writes) */
  tpu_viz_canvas_destroy(cv);
  tpu_viz_destroy(v);
  v = setup(&start);
  if (tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
  char path[64];
  snprintf(path, sizeof path, "/tmp/tpusim_bench_viz_%ld.png", (long)getpid());
  frames = 0;
  t0 = tu_now();
  while ((t = tu_now()) - t0 < SECONDS && frames < MAX_FRAMES) {
    tpu_viz_seek(v, start + (uint64_t)frames);
    tpu_viz_canvas_draw(cv);
    if (tpu_viz_canvas_save_png(cv, path, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
    frames++;
  }
  const double fps_png = frames / (t - t0);
  remove(path);

  printf("\n## viz: frames per second, tpu-v2-8 (8 cores, 128x128 MXU), %dx%d, software renderer, headless\n\n", W, H);
  printf("| frame | frames/s | vs naive cells |\n| --- | ---: | ---: |\n");
  printf("| viz: step 1 cycle, whole window (cells, queue, 8-core timeline, text) | %.1f | |\n", fps_viz);
  printf("| viz shapes only: step, every cell + queue + timeline into the pixels, upload | %.1f | %.2fx |\n", fps_shapes, fps_shapes / fps_naive);
  printf("| naive: step 1 cycle, one SDL_RenderFillRect per cell (cells only) | %.1f | 1.0x |\n", fps_naive);
  printf("| part: stepping the 128x128 PE model one cycle | %.1f | |\n", fps_step);
  printf("| part: composing the whole window (no step, no present) | %.1f | |\n", fps_compose);
  printf("| headless PNG: step, compose, encode and write | %.1f | |\n", fps_png);
  const int ok = fps_viz >= 30.0 && fps_png >= 30.0;
  printf("\ngoal: viz frame >= 30 frames/s: %s; headless PNG frames >= 30 frames/s: %s\n",
         fps_viz >= 30.0 ? "met" : "NOT MET", fps_png >= 30.0 ? "met" : "NOT MET");
  tpu_viz_canvas_destroy(cv);
  tpu_viz_destroy(v);
  SDL_DestroyTexture(tex);
  SDL_DestroyRenderer(ren);
  SDL_DestroyWindow(win);
  SDL_Quit();
  return ok ? 0 : 1;
}
