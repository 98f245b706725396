/*
** check_viz.c -- the visualizer's data path, checked without a window: the
** frame's cells are exactly where the PE-level model and the timing formula
** of mxu.h put the wavefront, the timeline's totals are the chip engine's
** stall figures (for a GEMM and for a program) and its bands as long as
** they say, seeking backwards replays exactly, allocation failures are
** survived; and the PNG the SDL layer writes holds the same pixels.
*/
#include <SDL.h>
#include <SDL_image.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mxu/mxu.h"
#include "sim/sim.h"
#include "tests/test_util.h"
#include "viz/viz.h"

#define W 1280
#define H 800

static void destroy_viz(void *v) { tpu_viz_destroy(v); }

/* A GEMM session on a preset chip, destroyed after the test; make's has
** seed 7 and bf16 precision. */
static tpu_viz *session(const char *preset, int cores, tpu_viz_workload w) {
  const tpu_chip_config chip = tu_chip(preset, cores);
  tpu_viz *v;
  char err[512];
  ck_assert_msg(tpu_viz_create(&chip, &w, &v, err, sizeof err) == TPU_OK, "%s", err);
  tu_defer(destroy_viz, v);
  return v;
}
static tpu_viz *make(const char *preset, int cores, int m, int n, int k) {
  return session(preset, cores, (tpu_viz_workload){ m, n, k, 7, TPU_PREC_BF16 });
}
/* v's layout at W x H. */
static tpu_viz_layout layout(const tpu_viz *v) {
  tpu_viz_layout l;
  tpu_viz_layout_of(v, W, H, &l);
  return l;
}

static uint32_t px_at(const uint32_t *px, int x, int y) { return px[(size_t)y * W + (size_t)x]; }

/* v's frame at W x H as it stands: its layout in *l, its pixels in a buffer to free. */
static uint32_t *frame(tpu_viz *v, tpu_viz_layout *l) {
  tpu_viz_layout_of(v, W, H, l);
  uint32_t *px = malloc((size_t)W * H * 4);
  ck_assert_ptr_nonnull(px);
  tpu_viz_render(v, l, px, W);
  return px;
}

/* For a GEMM on the 8x8 teach array, at cycles across the first tiles'
** fill, steady state and drain: every cell's center has the computing color
** of the activation the formula says (activation m = t - s_i - r - c of the
** tile streaming on that diagonal, inside its K x N block), and every other
** cell is idle or loading. An independent PE model ticked t+1 times agrees
** on the state of every cell, and on which cells hold a weight in their
** shadow not yet active (the next tile's, double-buffered): a computing
** one among them has the amber corner mark, no other computing cell does. */
START_TEST(Wavefront_cells_are_where_the_PE_model_puts_them) {
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  const tpu_mxu_tile *tl;
  const tpu_mxu_tile_times *tt;
  size_t nt = tpu_viz_tiles(v, &tl, &tt);
  ck_assert_uint_ge(nt, 3);
  const tpu_viz_layout l = layout(v);
  ck_assert_int_ge(l.cell, 8);
  uint32_t *px = malloc((size_t)W * H * 4);
  const tpu_chip_config *ch = tpu_viz_chip(v);
  const int R = ch->mxu.rows, C = ch->mxu.cols;
  const float scale = tpu_viz_shade_scale(v);
  uint64_t cycles[] = { tt[0].stream_start, tt[0].stream_start + 3, tt[0].stream_start + 9,
                        tt[1].stream_start - 1, tt[1].stream_start + 2, tt[2].stream_start + 5,
                        tt[nt - 1].last_result, tt[0].load_start + 2 };
  int computing_seen = 0, shadow_seen = 0;
  for (size_t ci = 0; ci < sizeof cycles / sizeof cycles[0]; ci++) {
    const uint64_t t = cycles[ci];
    ck_assert(tpu_viz_seek(v, t) == TPU_OK);
    TU_EQ_U64(t, tpu_viz_cycle(v));
    tpu_viz_render(v, &l, px, W);
    /* the reference PE model, stepped on its own */
    tpu_mxu *pe;
    ck_assert(tpu_mxu_create(&ch->mxu, &pe) == TPU_OK);
    float *scratch = calloc((size_t)24 * 12, sizeof(float));
    for (size_t i = 0; i < nt; i++) {
      tpu_mxu_tile x = tl[i];
      x.out = scratch + (x.out - tl[0].out);     /* same layout, private accumulators */
      ck_assert(tpu_mxu_push(pe, &x) == TPU_OK);
    }
    for (uint64_t i = 0; i <= t; i++) tpu_mxu_tick(pe);
    uint8_t st[64], sh[64];
    float wt[64];
    tpu_mxu_view view = { .state = st, .weight = wt, .shadow = sh };
    tpu_mxu_view_cells(pe, &view);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        /* the shadow: a tile's weight reached the cell (L + c + r) and is not active yet (s + r + c) */
        bool shadow = false;
        for (size_t i = 0; i < nt; i++)
          shadow |= r < tl[i].k && c < tl[i].n && tt[i].load_start + (uint64_t)(c + r) <= t &&
                    t < tt[i].stream_start + (uint64_t)(r + c);
        ck_assert_msg(shadow == (sh[r * C + c] != 0) && shadow == tpu_viz_cell_shadow(v, r, c),
                      "cycle %llu cell (%d,%d): shadow by the formula %d, PE model %d, viz %d", (unsigned long long)t,
                      r, c, shadow, sh[r * C + c], tpu_viz_cell_shadow(v, r, c));
        const int inner = l.cell >= 6 ? l.cell - 1 : l.cell;
        const uint32_t corner = px_at(px, l.array.x + c * l.cell + inner - 1, l.array.y + r * l.cell);
        if (st[r * C + c] == TPU_MXU_CELL_COMPUTING) {
          ck_assert_msg((corner == TPU_VIZ_COLOR_LOADING) == shadow, "cycle %llu cell (%d,%d): corner 0x%08x, shadow %d",
                        (unsigned long long)t, r, c, corner, shadow);
          shadow_seen += shadow;
        }
        int64_t d = (int64_t)t - r - c;
        long on = -1;
        for (size_t i = 0; i < nt; i++)
          if (d >= (int64_t)tt[i].stream_start && d < (int64_t)tt[i].stream_start + tl[i].m) on = (long)i;
        bool comp = on >= 0 && r < tl[on].k && c < tl[on].n;
        ck_assert_msg(comp == (st[r * C + c] == TPU_MXU_CELL_COMPUTING),
                      "cycle %llu cell (%d,%d): formula says %s, PE model says state %d",
                      (unsigned long long)t, r, c, comp ? "computing" : "not computing", st[r * C + c]);
        uint32_t got = px_at(px, l.array.x + c * l.cell + l.cell / 2, l.array.y + r * l.cell + l.cell / 2);
        if (comp) {
          int64_t m = d - (int64_t)tt[on].stream_start;
          float a = tl[on].act[(size_t)m * (size_t)tl[on].lda + (size_t)r];
          uint32_t want = tpu_viz_value_color(a, scale);
          ck_assert_msg(got == want, "cycle %llu cell (%d,%d): pixel 0x%08x, expected computing 0x%08x",
                        (unsigned long long)t, r, c, got, want);
          computing_seen++;
        } else {
          uint32_t want = st[r * C + c] == TPU_MXU_CELL_LOADING ? TPU_VIZ_COLOR_LOADING
                        : tpu_viz_cell_holds(v, r, c) ? TPU_VIZ_COLOR_HOLDING : TPU_VIZ_COLOR_IDLE;
          if (st[r * C + c] == TPU_MXU_CELL_IDLE && wt[r * C + c] != 0) ck_assert(tpu_viz_cell_holds(v, r, c));
          ck_assert_msg(got == want, "cycle %llu cell (%d,%d): pixel 0x%08x, expected 0x%08x",
                        (unsigned long long)t, r, c, got, want);
        }
      }
    tpu_mxu_destroy(pe);
    free(scratch);
  }
  ck_assert_int_gt(computing_seen, 50);
  ck_assert_int_gt(shadow_seen, 5);           /* the next tile loads behind computing cells */
  free(px);
}
END_TEST

/* Hover data: a computing cell's weight is the tile's B value at (r, c), its
** activation the A value the formula puts there, and its partial sum the
** fmaf chain of the column above it for that activation (bf16 products are
** exact, one rounding per add). Shading by partial sum colors the cell by it. */
START_TEST(Hover_shows_the_cell_weight_activation_and_partial_sum) {
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  const tpu_mxu_tile *tl;
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, &tl, &tt);
  const uint64_t t = tt[0].stream_start + 9;
  ck_assert(tpu_viz_seek(v, t) == TPU_OK);
  tpu_viz_set_shade_psum(v, true);
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  int checked = 0;
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) {
      tpu_viz_cell cell;
      ck_assert(tpu_viz_cell_info(v, r, c, &cell));
      int64_t m = (int64_t)t - r - c - (int64_t)tt[0].stream_start;
      if (m < 0 || m >= tl[0].m || r >= tl[0].k || c >= tl[0].n) continue;
      ck_assert_int_eq(cell.state, TPU_MXU_CELL_COMPUTING);
      TU_EQ_BITS(tl[0].w[(size_t)r * (size_t)tl[0].ldw + (size_t)c], cell.weight, "weight");
      TU_EQ_BITS(tl[0].act[(size_t)m * (size_t)tl[0].lda + (size_t)r], cell.act, "activation");
      float ps = 0.0f;
      for (int j = 0; j <= r; j++)
        ps = fmaf(tl[0].act[(size_t)m * (size_t)tl[0].lda + (size_t)j], tl[0].w[(size_t)j * (size_t)tl[0].ldw + (size_t)c], ps);
      TU_EQ_BITS(ps, cell.psum, "partial sum");
      uint32_t got = px_at(px, l.array.x + c * l.cell + l.cell / 2, l.array.y + r * l.cell + l.cell / 2);
      ck_assert_uint_eq(got, tpu_viz_value_color(cell.psum, tpu_viz_shade_scale(v)));
      checked++;
    }
  ck_assert_int_ge(checked, 20);
  ck_assert(!tpu_viz_cell_info(v, 8, 0, &(tpu_viz_cell){ 0 }));
  free(px);
}
END_TEST

/* Going back in time replays the PE model from cycle 0: the frame is the
** same bytes as when we first passed that cycle. */
START_TEST(Seeking_backwards_gives_the_same_frame) {
  tpu_viz *v = make("teach", 0, 32, 16, 16);
  const tpu_viz_layout l = layout(v);
  uint32_t *a = malloc((size_t)W * H * 4), *b = malloc((size_t)W * H * 4);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, NULL, &tt);
  uint64_t t = tt[0].stream_start + 11;
  ck_assert(tpu_viz_seek(v, t) == TPU_OK);
  tpu_viz_render(v, &l, a, W);
  ck_assert(tpu_viz_seek(v, t + 40) == TPU_OK);
  ck_assert(tpu_viz_seek(v, 3) == TPU_OK);
  ck_assert(tpu_viz_seek(v, t) == TPU_OK);
  tpu_viz_render(v, &l, b, W);
  ck_assert(memcmp(a, b, (size_t)W * H * 4) == 0);
  /* another core, then back: the same again */
  ck_assert(tpu_viz_select_core(v, 2) == TPU_OK);
  ck_assert(tpu_viz_select_core(v, 0) == TPU_OK);
  tpu_viz_render(v, &l, b, W);
  ck_assert(memcmp(a, b, (size_t)W * H * 4) == 0);
  ck_assert(tpu_viz_select_core(v, 4) == TPU_ERR_INPUT);     /* teach has 4 cores */
  free(a); free(b);
}
END_TEST

/* Each core's strip in the timeline: the pixels of each category's color
** number totals[cat] * width / total_cycles, within one pixel per band edge;
** and the totals add up to the run's length. Checked on an 8-core 128x128
** chip and on teach. */
static void check_bands(const char *preset, int m, int n, int k) {
  tpu_viz *v = make(preset, 0, m, n, k);
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  const uint64_t total = tpu_viz_total_cycles(v);
  int busy_seen = 0, wait_seen = 0;
  for (int p = 0; p < tpu_viz_chip(v)->cores; p++) {
    uint64_t tot[TPU_SIM_NSTALL], sum = 0;
    tpu_viz_totals(v, p, tot);
    for (int c = 0; c < TPU_SIM_NSTALL; c++) sum += tot[c];
    TU_EQ_U64(total, sum);
    const int y = tpu_viz_core_y(&l, p) + l.strip_h / 2;
    int count[TPU_SIM_NSTALL] = { 0 }, edges = 0;
    uint32_t prev = 0;
    for (int x = 0; x < l.timeline.w; x++) {
      uint32_t col = px_at(px, tpu_viz_core_x(&l, p) + x, y);
      if (x && col != prev) edges++;
      prev = col;
      for (int c = 0; c < TPU_SIM_NSTALL; c++) if (col == tpu_viz_stall_color(c)) count[c]++;
    }
    for (int c = 0; c < TPU_SIM_NSTALL; c++) {
      double want = (double)tot[c] * l.timeline.w / (double)total;
      /* the cursor (1 px) may cover one pixel of some band */
      ck_assert_msg(fabs(count[c] - want) <= edges + 2, "%s core %d %s: %d px, expected %.1f (+-%d)", preset, p,
                    tpu_sim_stall_name(c), count[c], want, edges + 2);
    }
    busy_seen += tot[TPU_SIM_MXU_BUSY] > 0;
    wait_seen += tot[TPU_SIM_MEMORY_WAIT] > 0;
  }
  ck_assert_int_gt(busy_seen, 0);
  ck_assert_int_gt(wait_seen, 0);
  free(px);
}
START_TEST(Stall_bands_are_as_long_as_the_totals_say) {
  check_bands("tpu-v2-8", 1024, 256, 256);
  check_bands("teach", 128, 16, 16);
  check_bands("teach", 3, 40, 8);               /* fewer rows than cores: idle cores */
}
END_TEST

/* One core, one tile, operands in HBM (the engine's GEMM program): the core
** waits on memory until the operands land, then loads the weights (hidden
** by nothing: weight_load), then the MXU is busy to the last result, then
** the result goes back; nothing else. */
START_TEST(Totals_follow_the_tile_formula) {
  tpu_viz *v = make("teach", 1, 8, 8, 8);
  const tpu_mxu_tile_times *tt;
  ck_assert_uint_eq(tpu_viz_tiles(v, NULL, &tt), 1);
  uint64_t tot[TPU_SIM_NSTALL];
  tpu_viz_totals(v, 0, tot);
  /* the unhidden weight load [load_start, stream_start) is weight_load, the rest of the tile mxu_busy */
  TU_EQ_U64(tt[0].stream_start - tt[0].load_start, tot[TPU_SIM_WEIGHT_LOAD]);
  TU_EQ_U64(tt[0].last_result + 1 - tt[0].stream_start, tot[TPU_SIM_MXU_BUSY]);
  TU_EQ_U64(tpu_viz_total_cycles(v) - tot[TPU_SIM_MXU_BUSY] - tot[TPU_SIM_WEIGHT_LOAD], tot[TPU_SIM_MEMORY_WAIT]);
  TU_EQ_U64(0, tot[TPU_SIM_IDLE] + tot[TPU_SIM_VPU_BUSY] + tot[TPU_SIM_INFEED_WAIT] + tot[TPU_SIM_COLLECTIVE_WAIT]);
  /* the cycle before the load waits on memory, the load cycle is MXU work */
  ck_assert_int_eq(tpu_viz_core_cat_at(v, 0, tt[0].load_start - 1), TPU_SIM_MEMORY_WAIT);
  ck_assert_int_eq(tpu_viz_core_cat_at(v, 0, tt[0].load_start), TPU_SIM_WEIGHT_LOAD);
  ck_assert_int_eq(tpu_viz_core_cat_at(v, 0, tt[0].stream_start), TPU_SIM_MXU_BUSY);
  ck_assert_int_eq(tpu_viz_unit_cat_at(v, 0, TPU_VIZ_UNIT_VPU, tt[0].load_start), TPU_SIM_IDLE);
}
END_TEST

/* bf16x3 and bf16x6 walk the tiles of mxu_gemm.c: per N-tile, each pass's
** K-tiles, accumulating after the first; the PE model runs them all. */
START_TEST(Precision_passes_multiply_the_tiles) {
  const tpu_precision precs[] = { TPU_PREC_BF16, TPU_PREC_BF16X3, TPU_PREC_BF16X6 };
  for (int i = 0; i < 3; i++) {
    /* 3 N-tiles (cores 1 arrays), 2 K-tiles */
    tpu_viz *v = session("teach", 0, (tpu_viz_workload){ 16, 20, 12, 3, precs[i] });
    const tpu_mxu_tile *tl;
    size_t nt = tpu_viz_tiles(v, &tl, NULL);
    const int passes = tpu_precision_passes(precs[i]);
    TU_EQ_U64(3 * 2 * passes, nt);
    for (size_t j = 0; j < nt; j++) ck_assert(tl[j].accumulate == (j % (size_t)(2 * passes) != 0));
    ck_assert(tpu_viz_seek(v, tpu_viz_total_cycles(v) - 1) == TPU_OK);
  }
}
END_TEST

START_TEST(Layout_maps_pixels_to_cells_and_cycles_and_back) {
  tpu_viz *v = make("tpu-v2-8", 0, 512, 256, 256);
  const tpu_viz_layout l = layout(v);
  ck_assert_int_ge(l.cell, 3);                  /* every one of 128x128 cells visible */
  ck_assert_int_le(l.array.x + l.array.w, W / 2);
  ck_assert_int_le(l.array.y + l.array.h, H);
  int r, c;
  ck_assert(tpu_viz_cell_at(v, &l, l.array.x + 5 * l.cell + 1, l.array.y + 127 * l.cell + 1, &r, &c));
  ck_assert_int_eq(r, 127); ck_assert_int_eq(c, 5);
  ck_assert(!tpu_viz_cell_at(v, &l, l.array.x - 1, l.array.y, &r, &c));
  TU_EQ_U64(0, tpu_viz_cycle_at_x(v, &l, l.timeline.x));
  uint64_t T = tpu_viz_total_cycles(v), last = tpu_viz_cycle_at_x(v, &l, l.timeline.x + l.timeline.w - 1);
  ck_assert(last < T && last + T / (uint64_t)l.timeline.w + 1 >= T - 1);
  for (uint64_t cy = 0; cy < T; cy += T / 37 + 1) {     /* the cursor's x maps back to its cycle */
    int x = l.timeline.x + (int)((double)cy * l.timeline.w / (double)T);
    uint64_t back = tpu_viz_cycle_at_x(v, &l, x);
    ck_assert(back <= cy && cy - back <= T / (uint64_t)l.timeline.w + 1);
  }
  ck_assert_int_le(tpu_viz_core_y(&l, 7) + l.core_h, l.infeed.y);
  /* 8 cores at 1280x800: two columns of 4, unit rows tall enough for a label
  ** of the text size (#32); the second column maps x to the same cycles */
  ck_assert_int_eq(l.per_col, 4);
  ck_assert_int_ge(l.row_h, l.font - 2);
  ck_assert_int_eq(tpu_viz_core_y(&l, 4), tpu_viz_core_y(&l, 0));
  ck_assert_int_eq(tpu_viz_core_x(&l, 4), l.timeline.x + l.col_dx);
  ck_assert_int_ge(l.col_dx, l.timeline.w + 8 * l.font);
  ck_assert_int_le(tpu_viz_core_x(&l, 7) + l.timeline.w, W);
  for (int x = 0; x < l.timeline.w; x += 7)
    TU_EQ_U64(tpu_viz_cycle_at_x(v, &l, l.timeline.x + x), tpu_viz_cycle_at_x(v, &l, tpu_viz_core_x(&l, 4) + x));
  tpu_viz *t = make("teach", 0, 24, 12, 20);        /* 4 cores: one column */
  const tpu_viz_layout lt = layout(t);
  ck_assert_int_eq(lt.per_col, 4);
  ck_assert_int_eq(lt.col_dx, 0);
  ck_assert_int_eq(tpu_viz_core_x(&lt, 3), lt.timeline.x);
}
END_TEST

/* Out-of-memory sweeps: a session of a 20x12x10 GEMM, or of program p, is
** created with each allocation failing in turn; a failure leaves no session. */
struct session_args { tpu_chip_config chip; tpu_sim_program *p; };
static tpu_status create_session(void *arg) {
  const struct session_args *a = arg;
  tpu_viz_workload w = { 20, 12, 10, 1, TPU_PREC_BF16 };
  tpu_viz *v;
  char err[1024];
  tpu_status st = a->p ? tpu_viz_create_program(&a->chip, a->p, "step.json", 1, &v, err, sizeof err)
                       : tpu_viz_create(&a->chip, &w, &v, err, sizeof err);
  if (st == TPU_OK) tpu_viz_destroy(v);
  else ck_assert_msg(!v && st == TPU_ERR_NOMEM, "allocation %d: %s (%s)", tu_fail_at, tpu_status_str(st), err);
  return st;
}
START_TEST(Create_survives_every_allocation_failure) {
  struct session_args a = { tu_chip("teach", 0), NULL };
  tu_oom_sweep(4000, create_session, &a);
}
END_TEST

START_TEST(Bad_shapes_are_rejected_with_a_message) {
  tpu_chip_config chip;
  char err[512];
  ck_assert(tpu_chip_config_load("teach", &chip, err, sizeof err) == TPU_OK);
  tpu_viz_workload w = { 0, 8, 8, 1, TPU_PREC_BF16 };
  tpu_viz *v;
  ck_assert_int_eq(tpu_viz_create(&chip, &w, &v, err, sizeof err), TPU_ERR_CONFIG);
  ck_assert_ptr_null(v);
  ck_assert(strstr(err, "1..65536"));
}
END_TEST

/* The PNG written through SDL (dummy video driver, software surface) holds
** the rendered cells: same color at every cell center as the pixel buffer. */
START_TEST(Png_frame_matches_the_rendered_buffer) {
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, NULL, &tt);
  ck_assert(tpu_viz_seek(v, tt[0].stream_start + 6) == TPU_OK);
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  ck_assert(SDL_Init(SDL_INIT_VIDEO) == 0);
  char path[] = "/tmp/tpusim_vizXXXXXX.png", err[512];
  int fd = mkstemps(path, 4);
  close(fd);
  ck_assert_msg(tpu_viz_save_png(v, W, H, path, err, sizeof err) == 0, "%s", err);
  SDL_Surface *s = IMG_Load(path);
  ck_assert_ptr_nonnull(s);
  SDL_Surface *c = SDL_ConvertSurfaceFormat(s, SDL_PIXELFORMAT_ARGB8888, 0);
  ck_assert_int_eq(c->w, W);
  ck_assert_int_eq(c->h, H);
  const uint32_t *p = c->pixels;
  for (int r = 0; r < 8; r++)
    for (int col = 0; col < 8; col++) {
      /* a cell's bottom-right corner: its value text (small arrays) is at the top left */
      int x = l.array.x + col * l.cell + l.cell - 3, y = l.array.y + r * l.cell + l.cell - 3;
      ck_assert_msg(p[(size_t)y * (size_t)(c->pitch / 4) + (size_t)x] == px_at(px, x, y),
                    "cell (%d,%d): png 0x%08x, buffer 0x%08x", r, col,
                    p[(size_t)y * (size_t)(c->pitch / 4) + (size_t)x], px_at(px, x, y));
    }
  SDL_FreeSurface(c);
  SDL_FreeSurface(s);
  remove(path);
  SDL_Quit();
  free(px);
}
END_TEST

/* {==================================================================
** Program sessions: the timeline is the chip engine's
** ================================================================== */
/* docs/examples/train_step.json with a host fast enough that batches queue
** up on the first steps (and arrive late on the last). */
static const char STEP_PROG[] =
  "{ \"cores\": 4, \"repeat\": 3,\n"
  "  \"infeed\": { \"first\": 0, \"interval\": 9000, \"batches\": 3 },\n"
  "  \"buffers\": [\n"
  "    { \"name\": \"w_hbm\", \"space\": \"hbm\",  \"shape\": [64, 32] },\n"
  "    { \"name\": \"x\", \"space\": \"vmem\", \"shape\": [32, 64] },\n"
  "    { \"name\": \"w\", \"space\": \"vmem\", \"shape\": [64, 32] },\n"
  "    { \"name\": \"y\", \"space\": \"vmem\", \"shape\": [32, 32] },\n"
  "    { \"name\": \"h\", \"space\": \"vmem\", \"shape\": [32, 32] },\n"
  "    { \"name\": \"g\", \"space\": \"vmem\", \"shape\": [64, 32] } ],\n"
  "  \"ops\": [\n"
  "    { \"op\": \"infeed\", \"dst\": \"x\", \"name\": \"batch\" },\n"
  "    { \"op\": \"dma\", \"src\": \"w_hbm\", \"dst\": \"w\", \"name\": \"fetch w\" },\n"
  "    { \"op\": \"matmul\", \"a\": \"x\", \"b\": \"w\", \"dst\": \"y\", \"name\": \"forward\" },\n"
  "    { \"op\": \"vpu\", \"fn\": \"relu\", \"in\": [\"y\"], \"out\": [\"h\"] },\n"
  "    { \"op\": \"matmul\", \"a\": \"x\", \"b\": \"h\", \"trans_a\": true, \"dst\": \"g\", \"name\": \"dW\" },\n"
  "    { \"op\": \"all_reduce\", \"src\": \"g\", \"dst\": \"g\", \"name\": \"allreduce dW\" },\n"
  "    { \"op\": \"vpu\", \"fn\": \"sub\", \"in\": [\"w\", \"g\"], \"out\": [\"w\"], \"name\": \"update\" },\n"
  "    { \"op\": \"dma\", \"src\": \"w\", \"dst\": \"w_hbm\", \"name\": \"store w\" } ] }\n";

static tpu_sim_program *parse_prog(const tpu_chip_config *chip, const char *text) {
  tpu_sim_program *p;
  char err[1024];
  ck_assert_msg(tpu_sim_program_parse(text, "step.json", chip->cores, &p, err, sizeof err) == TPU_OK, "%s", err);
  return p;
}

/* A session of STEP_PROG on the teach chip, and the engine's own run of the
** program on 'threads' host threads, to hold the session against. */
typedef struct step_run { tpu_chip_config chip; tpu_sim_program *p; tpu_viz *v; tpu_sim_result *r; } step_run;
static step_run step_open(int threads) {
  step_run s = { .chip = tu_chip("teach", 0) };
  char err[1024];
  s.p = parse_prog(&s.chip, STEP_PROG);
  ck_assert_msg(tpu_viz_create_program(&s.chip, s.p, "step.json", 1, &s.v, err, sizeof err) == TPU_OK, "%s", err);
  tpu_sim_options opt = { .level = TPU_FIDELITY_TIMING, .threads = threads };
  ck_assert(tpu_sim_run(&s.chip, s.p, &opt, &s.r) == TPU_OK);
  return s;
}
static void step_close(step_run *s) {
  tpu_sim_result_destroy(s->r);
  tpu_viz_destroy(s->v);
  tpu_sim_program_destroy(s->p);
}

/* The totals the visualizer shows per core are the engine's stall
** breakdown, category by category, and each op's unit row is busy exactly
** over the op's interval in the engine's result. */
START_TEST(Program_totals_equal_the_engine_stalls) {
  step_run sr = step_open(2);
  ck_assert(tpu_viz_is_program(sr.v));
  ck_assert(strstr(tpu_viz_title(sr.v), "step.json"));
  TU_EQ_U64(tpu_sim_result_cycles(sr.r), tpu_viz_total_cycles(sr.v));
  int kinds_seen = 0;
  for (int c = 0; c < sr.chip.cores; c++) {
    tpu_sim_stalls s;
    tpu_sim_result_stalls(sr.r, c, -1, &s);
    uint64_t t[TPU_SIM_NSTALL];
    tpu_viz_totals(sr.v, c, t);
    for (int k = 0; k < TPU_SIM_NSTALL; k++) {
      ck_assert_msg(t[k] == s.cycles[k], "core %d %s: viz %llu, engine %llu", c, tpu_sim_stall_name(k),
                    (unsigned long long)t[k], (unsigned long long)s.cycles[k]);
      kinds_seen += c == 0 && t[k] > 0;
    }
    for (int i = 0; i < tpu_sim_program_ops(sr.p, c); i++) {
      tpu_sim_op o;
      ck_assert(tpu_sim_program_op(sr.p, c, i, &o));
      uint64_t a, b;
      tpu_sim_result_op_times(sr.r, c, i, &a, &b);
      if (o.kind == TPU_SIM_MATMUL) a = tpu_sim_result_op_busy(sr.r, c, i);
      const tpu_viz_unit u = o.kind == TPU_SIM_MATMUL ? TPU_VIZ_UNIT_MXU : o.kind == TPU_SIM_VPU ? TPU_VIZ_UNIT_VPU
                           : o.kind == TPU_SIM_DMA ? TPU_VIZ_UNIT_DMA : TPU_VIZ_UNIT_ICI;
      if (o.kind == TPU_SIM_INFEED || b == a) continue;
      ck_assert_msg(tpu_viz_unit_cat_at(sr.v, c, u, a) != TPU_SIM_IDLE && tpu_viz_unit_cat_at(sr.v, c, u, b - 1) != TPU_SIM_IDLE,
                    "core %d op %d ('%s'): its unit row is idle inside [%llu, %llu)", c, i, o.name,
                    (unsigned long long)a, (unsigned long long)b);
      /* units other than the MXU run one op at a time: the op at any of its cycles is itself */
      if (u != TPU_VIZ_UNIT_MXU) {
        ck_assert_ptr_nonnull(tpu_viz_op_at(sr.v, c, u, (a + b) / 2));
        ck_assert_str_eq(tpu_viz_op_at(sr.v, c, u, (a + b) / 2), o.name);
      } else {
        ck_assert_ptr_nonnull(tpu_viz_op_at(sr.v, c, u, b - 1));
      }
    }
  }
  ck_assert_int_ge(kinds_seen, 5);             /* mxu, vpu, infeed, memory, collective */
  ck_assert_ptr_null(tpu_viz_op_at(sr.v, 0, TPU_VIZ_UNIT_VPU, 0));   /* nothing on the VPU at cycle 0 */
  step_close(&sr);
}
END_TEST

/* The headless frame's stall strips: every pixel has the color of the
** category of the cycle it stands for, and each category's pixels number
** its engine total x width / cycles within one pixel per band (rounding
** at each band's two ends) plus the cursor's pixel. */
START_TEST(Program_stall_bands_are_proportional_to_the_engine_figures) {
  step_run sr = step_open(1);
  tpu_viz_layout l;
  uint32_t *px = frame(sr.v, &l);
  const uint64_t T = tpu_viz_total_cycles(sr.v);
  for (int c = 0; c < sr.chip.cores; c++) {
    tpu_sim_stalls s;
    tpu_sim_result_stalls(sr.r, c, -1, &s);
    int bands[TPU_SIM_NSTALL] = { 0 }, count[TPU_SIM_NSTALL] = { 0 };
    for (uint64_t t = 0; t < T; t++)
      if (t == 0 || tpu_viz_core_cat_at(sr.v, c, t) != tpu_viz_core_cat_at(sr.v, c, t - 1)) bands[tpu_viz_core_cat_at(sr.v, c, t)]++;
    const int y = tpu_viz_core_y(&l, c) + l.strip_h / 2;
    for (int x = 1; x < l.timeline.w; x++) {       /* x = 0 is under the cursor (cycle 0) */
      const int want = tpu_viz_core_cat_at(sr.v, c, tpu_viz_cycle_at_x(sr.v, &l, l.timeline.x + x));
      const uint32_t got = px_at(px, tpu_viz_core_x(&l, c) + x, y);
      ck_assert_msg(got == tpu_viz_stall_color(want), "core %d x %d: 0x%08x, expected %s", c, x, got, tpu_sim_stall_name(want));
      count[want]++;
    }
    for (int k = 0; k < TPU_SIM_NSTALL; k++) {
      const double want = (double)s.cycles[k] * l.timeline.w / (double)T;
      ck_assert_msg(fabs(count[k] - want) <= bands[k] + 1, "core %d %s: %d px for %llu of %llu cycles (%.2f px), "
                    "%d band(s)", c, tpu_sim_stall_name(k), count[k], (unsigned long long)s.cycles[k],
                    (unsigned long long)T, want, bands[k]);
    }
  }
  free(px);
  step_close(&sr);
}
END_TEST

/* The infeed queue: batches ready at 0, 9000, 18000 (every core); a batch
** leaves when its infeed op ends. Occupancy is never negative, reaches 2
** (the second batch arrives while the first step runs), and the graph
** under the timeline is drawn in the infeed color where it is not empty. */
START_TEST(Program_infeed_queue_follows_ready_cycles_and_dequeues) {
  step_run sr = step_open(1);
  /* op 8 is step 1's infeed (8 ops per step) */
  uint64_t a, b;
  tpu_sim_result_op_times(sr.r, 0, 8, &a, &b);
  ck_assert_int_eq(tpu_viz_infeed_at(sr.v, 0, 0), 0);          /* batch 0 dequeued at once */
  ck_assert_int_eq(tpu_viz_infeed_at(sr.v, 0, 9000), b <= 9000 ? 0 : 1);
  ck_assert_int_eq(tpu_viz_infeed_at(sr.v, 0, b - 1), b > 9000 ? 1 : 0);
  int mx = 0;
  for (uint64_t t = 0; t < tpu_viz_total_cycles(sr.v); t += 7) {
    int q = tpu_viz_infeed_at(sr.v, 0, t);
    ck_assert_int_ge(q, 0);
    if (q > mx) mx = q;
  }
  ck_assert_int_ge(tpu_viz_infeed_max(sr.v, 0), mx);
  ck_assert_int_ge(mx, 1);
  tpu_viz_layout l;
  uint32_t *px = frame(sr.v, &l);
  int drawn = 0;
  for (int x = 1; x < l.infeed.w; x++) {
    bool full = tpu_viz_infeed_at(sr.v, 0, tpu_viz_cycle_at_x(sr.v, &l, l.infeed.x + x)) > 0;
    bool red = px_at(px, l.infeed.x + x, l.infeed.y + l.infeed.h - 1) == tpu_viz_stall_color(TPU_SIM_INFEED_WAIT);
    ck_assert_msg(full == red, "infeed graph x %d: %s drawn", x, red ? "a batch" : "nothing");
    drawn += red;
  }
  ck_assert_int_gt(drawn, 0);
  free(px);
  step_close(&sr);
}
END_TEST

/* The MXU panel replays the engine's tiles: on array 0 of each core, the
** first tile of every matmul op starts loading at the op's busy cycle in
** the engine's result, and at every tile's stream start + r + c the PE
** model has cell (r, c) computing (inside the tile's K x N block). */
START_TEST(Program_mxu_replay_runs_at_the_engine_tile_times) {
  step_run sr = step_open(1);
  ck_assert(tpu_viz_select_core(sr.v, 1) == TPU_OK);
  const tpu_mxu_tile *tl;
  const tpu_mxu_tile_times *tt;
  const size_t nt = tpu_viz_tiles(sr.v, &tl, &tt);
  size_t j = 0, ops = 0;
  for (int i = 0; i < tpu_sim_program_ops(sr.p, 1); i++) {
    tpu_sim_op o;
    tpu_sim_program_op(sr.p, 1, i, &o);
    if (o.kind != TPU_SIM_MATMUL) continue;
    while (j < nt && strcmp(tpu_viz_tile_op(sr.v, j), o.name)) j++;
    ck_assert_msg(j < nt, "no tile for op %d ('%s')", i, o.name);
    TU_EQ_U64(tpu_sim_result_op_busy(sr.r, 1, i), tt[j].load_start);
    uint64_t a, b;
    tpu_sim_result_op_times(sr.r, 1, i, &a, &b);
    size_t last = j;
    while (last + 1 < nt && tt[last + 1].load_start < b && !strcmp(tpu_viz_tile_op(sr.v, last + 1), o.name)) last++;
    TU_EQ_U64(b, tt[last].last_result + 1);      /* one array on teach: its last tile ends the op */
    j = last + 1;
    ops++;
  }
  ck_assert_uint_eq(ops, 6);
  ck_assert_uint_eq(j, nt);
  for (size_t i = 0; i < nt; i += 5) {
    const int rr = tl[i].k - 1, cc = tl[i].n - 1;
    ck_assert(tpu_viz_seek(sr.v, tt[i].stream_start + (uint64_t)rr + (uint64_t)cc) == TPU_OK);
    tpu_viz_cell cell;
    ck_assert(tpu_viz_cell_info(sr.v, rr, cc, &cell));
    ck_assert_msg(cell.state == TPU_MXU_CELL_COMPUTING, "tile %zu: cell (%d,%d) state %d at its first activation",
                  i, rr, cc, cell.state);
    ck_assert_str_eq(tpu_viz_mxu_op(sr.v), tpu_viz_tile_op(sr.v, i));
  }
  step_close(&sr);
}
END_TEST

/* The tiles the MXU panel replays are the engine's: for every core, the
** session's tile timeline is the run's array-0 tile events, in order, with
** their shapes and times, each held back to its op's start. On two arrays
** per core, for a program and for a GEMM. */
static void expect_engine_tiles(tpu_viz *v, const tpu_chip_config *chip, tpu_sim_program *p) {
  tpu_sim_options opt = { .level = TPU_FIDELITY_TIMING, .threads = 2, .events = true };
  tpu_sim_result *r;
  ck_assert(tpu_sim_run(chip, p, &opt, &r) == TPU_OK);
  for (int c = 0; c < chip->cores; c++) {
    ck_assert(tpu_viz_select_core(v, c) == TPU_OK);
    const tpu_mxu_tile *tl;
    const tpu_mxu_tile_times *tt;
    const size_t nt = tpu_viz_tiles(v, &tl, &tt);
    const tpu_sim_event *ev;
    const size_t n = tpu_sim_result_events(r, c, &ev);
    size_t j = 0, other = 0;
    uint64_t op_start = 0;
    tpu_sim_op o = { 0 };
    for (size_t i = 0; i < n; i++) {
      if (ev[i].type == TPU_SIM_EV_MATMUL) { op_start = ev[i].start; tpu_sim_program_op(p, c, ev[i].op, &o); }
      if (ev[i].type != TPU_SIM_EV_TILE) continue;
      if (ev[i].tile.array != 0) { other++; continue; }
      ck_assert_msg(j < nt, "core %d: the viz has %zu tiles, the engine more", c, nt);
      ck_assert(tl[j].m == ev[i].tile.m && tl[j].k == ev[i].tile.k && tl[j].n == ev[i].tile.n);
      TU_EQ_U64(ev[i].start, tt[j].load_start);
      TU_EQ_U64(ev[i].mid, tt[j].stream_start);
      TU_EQ_U64(ev[i].end - 1, tt[j].last_result);
      TU_EQ_U64(op_start, tl[j].earliest);
      ck_assert(tl[j].accumulate == (o.accumulate || !ev[i].tile.first));
      if (tpu_viz_is_program(v)) ck_assert_str_eq(tpu_viz_tile_op(v, j), o.name);
      j++;
    }
    TU_EQ_U64(nt, j);
    ck_assert_msg(other > 0 || j == 0, "core %d: array 1 runs nothing; the case shows no filtering", c);
  }
  tpu_sim_result_destroy(r);
}

START_TEST(The_replayed_tiles_are_the_engine_tile_events) {
  tpu_chip_config chip;
  char err[1024];
  ck_assert(tpu_chip_config_load("teach", &chip, err, sizeof err) == TPU_OK);
  ck_assert(tpu_chip_config_set(&chip, "mxu.per_core=2", err, sizeof err) == TPU_OK);
  tpu_sim_program *p = parse_prog(&chip, STEP_PROG);
  tpu_viz *v;
  ck_assert_msg(tpu_viz_create_program(&chip, p, "step.json", 1, &v, err, sizeof err) == TPU_OK, "%s", err);
  expect_engine_tiles(v, &chip, p);
  tpu_viz_destroy(v);
  tpu_sim_program_destroy(p);
  tpu_viz_workload w = { 40, 24, 20, 5, TPU_PREC_BF16X3 };
  ck_assert_msg(tpu_viz_create(&chip, &w, &v, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert(tpu_sim_gemm_program(&chip, chip.cores, w.m, w.n, w.k, w.precision, NULL, NULL, &p, NULL, err,
                                 sizeof err) == TPU_OK);
  expect_engine_tiles(v, &chip, p);
  tpu_viz_destroy(v);
  tpu_sim_program_destroy(p);
}
END_TEST

/* A GEMM session is the engine's run of tpu_sim_gemm_program (what tpusim
** matmul --cores runs): the same cycles and, per core, the same stalls. */
START_TEST(Gemm_totals_equal_the_engine_run_of_the_matmul_program) {
  static const struct { const char *chip; int m, n, k; tpu_precision prec; } cases[] = {
    { "teach", 40, 12, 20, TPU_PREC_BF16 }, { "teach", 3, 40, 8, TPU_PREC_BF16X3 },
    { "tpu-v2-8", 1024, 256, 256, TPU_PREC_BF16 } };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tpu_chip_config chip;
    char err[1024];
    ck_assert(tpu_chip_config_load(cases[i].chip, &chip, err, sizeof err) == TPU_OK);
    tpu_viz_workload w = { cases[i].m, cases[i].n, cases[i].k, 5, cases[i].prec };
    tpu_viz *v;
    ck_assert_msg(tpu_viz_create(&chip, &w, &v, err, sizeof err) == TPU_OK, "%s", err);
    ck_assert(!tpu_viz_is_program(v));
    tpu_sim_program *p;
    ck_assert(tpu_sim_gemm_program(&chip, chip.cores, w.m, w.n, w.k, w.precision, NULL, NULL, &p, NULL, err,
                                   sizeof err) == TPU_OK);
    tpu_sim_options opt = { .level = TPU_FIDELITY_TIMING, .threads = 1 };
    tpu_sim_result *r;
    ck_assert(tpu_sim_run(&chip, p, &opt, &r) == TPU_OK);
    TU_EQ_U64(tpu_sim_result_cycles(r), tpu_viz_total_cycles(v));
    for (int c = 0; c < chip.cores; c++) {
      tpu_sim_stalls s;
      tpu_sim_result_stalls(r, c, -1, &s);
      uint64_t t[TPU_SIM_NSTALL];
      tpu_viz_totals(v, c, t);
      for (int k = 0; k < TPU_SIM_NSTALL; k++)
        ck_assert_msg(t[k] == s.cycles[k], "%s core %d %s: viz %llu, engine %llu", cases[i].chip, c,
                      tpu_sim_stall_name(k), (unsigned long long)t[k], (unsigned long long)s.cycles[k]);
    }
    ck_assert(tpu_viz_select_core(v, chip.cores - 1) == TPU_OK);   /* the last core always has rows */
    ck_assert_ptr_nonnull(tpu_viz_tile_op(v, 0));
    char first[64];   /* its first tile's op: the core's first rows, the first columns and depth */
    snprintf(first, sizeof first, "C@%d,0 += A@%d,0 . B@0,0", w.m * (chip.cores - 1) / chip.cores,
             w.m * (chip.cores - 1) / chip.cores);
    ck_assert_msg(!strcmp(tpu_viz_tile_op(v, 0), first), "%s", tpu_viz_tile_op(v, 0));
    tpu_sim_result_destroy(r);
    tpu_sim_program_destroy(p);
    tpu_viz_destroy(v);
  }
}
END_TEST

/* A program the chip cannot run is refused with the engine's message. */
START_TEST(Program_the_chip_cannot_run_is_refused) {
  tpu_chip_config chip;
  char err[1024];
  ck_assert(tpu_chip_config_load("teach", &chip, err, sizeof err) == TPU_OK);
  tpu_sim_program *p = parse_prog(&chip,
    "{ \"cores\": 4, \"buffers\": [ { \"name\": \"big\", \"space\": \"vmem\", \"shape\": [1024, 1024] } ],\n"
    "  \"ops\": [ { \"op\": \"vpu\", \"fn\": \"relu\", \"in\": [\"big\"], \"out\": [\"big\"] } ] }");
  tpu_viz *v;
  tpu_status st = tpu_viz_create_program(&chip, p, "big.json", 1, &v, err, sizeof err);
  ck_assert_int_eq(st, TPU_ERR_RANGE);
  ck_assert_ptr_null(v);
  ck_assert_msg(strstr(err, "VMEM") || strstr(err, "vmem"), "%s", err);
  tpu_sim_program_destroy(p);
}
END_TEST

START_TEST(Program_create_survives_every_allocation_failure) {
  struct session_args a = { tu_chip("teach", 0), NULL };
  a.p = parse_prog(&a.chip, STEP_PROG);
  tu_oom_sweep(2000, create_session, &a);
  tpu_sim_program_destroy(a.p);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The first minute: where the viewer starts, the event keys, the legend,
** the text size and the weights shown while they load
** ================================================================== */
/* The start is the first weight load; 'next event' from there visits every
** tile's first streamed row in order, and 'previous' undoes each step. */
START_TEST(Events_start_at_the_first_load_and_step_both_ways) {
  tpu_viz *v = make("teach", 0, 40, 12, 20);
  const tpu_mxu_tile_times *tt;
  const size_t nt = tpu_viz_tiles(v, NULL, &tt);
  ck_assert_uint_eq(tpu_viz_first_event_cycle(v), tt[0].load_start);
  ck_assert(tpu_viz_seek(v, tpu_viz_first_event_cycle(v)) == TPU_OK);
  size_t seen = 0;
  uint64_t last = tpu_viz_cycle(v);
  while (tpu_viz_cycle(v) + 1 < tpu_viz_total_cycles(v)) {
    const uint64_t at = tpu_viz_cycle(v), next = tpu_viz_next_event_cycle(v);
    ck_assert_uint_gt(next, at);
    ck_assert(tpu_viz_seek(v, next) == TPU_OK);
    ck_assert_uint_eq(tpu_viz_prev_event_cycle(v), at);
    for (size_t i = 0; i < nt; i++) {
      ck_assert(!(tt[i].stream_start > last && tt[i].stream_start < next));   /* none skipped */
      if (tt[i].stream_start == next) seen++;
    }
    last = next;
  }
  ck_assert_uint_eq(seen, nt);
}
END_TEST

/* The playback's skippable wait: before the first tile the core waits for
** memory with an empty array, up to the first weight load; while a tile
** computes nothing is skippable. The named step says what it reaches. */
START_TEST(Waits_with_an_empty_array_end_at_the_next_event_which_is_named) {
  tpu_viz *v = make("teach", 0, 40, 12, 20);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, NULL, &tt);
  int k = -1;
  ck_assert(tpu_viz_seek(v, 0) == TPU_OK);
  ck_assert_uint_eq(tpu_viz_wait_end(v, &k), tt[0].load_start);
  ck_assert_int_eq(k, TPU_SIM_MEMORY_WAIT);
  char what[128];
  ck_assert_uint_eq(tpu_viz_event_step(v, 1, what, sizeof what), tt[0].load_start);
  ck_assert_str_eq(what, "tile 1 of 6: weights start loading");
  ck_assert(tpu_viz_seek(v, tt[0].stream_start + 2) == TPU_OK);
  ck_assert_uint_eq(tpu_viz_wait_end(v, &k), tt[0].stream_start + 2);     /* computing: nothing to skip */
  ck_assert_uint_eq(tpu_viz_event_step(v, -1, what, sizeof what), tt[0].stream_start);
  ck_assert_str_eq(what, "tile 1 of 6: first row streams in");
}
END_TEST

/* On a 128x128 array a cell that keeps a tile's weight without computing
** (here after the run's last tile, which uses 64 of the 128 columns) is
** drawn apart from an empty one: dim amber against idle grey. */
START_TEST(Cells_holding_weights_differ_from_empty_ones) {
  tpu_viz *v = make("tpu-v2-8", 1, 256, 64, 128);
  ck_assert(tpu_viz_seek(v, tpu_viz_total_cycles(v) - 1) == TPU_OK);
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  tpu_viz_moment m;
  tpu_viz_moment_of(v, &m);
  ck_assert_int_eq(m.computing, 0);
  ck_assert_int_eq(m.holding, 128 * 64);
  const int y = l.array.y + 5 * l.cell + l.cell / 2;
  ck_assert_uint_eq(px_at(px, l.array.x + 3 * l.cell + l.cell / 2, y), TPU_VIZ_COLOR_HOLDING);
  ck_assert_uint_eq(px_at(px, l.array.x + 100 * l.cell + l.cell / 2, y), TPU_VIZ_COLOR_IDLE);
  free(px);
  /* teach, the first tile: cell (7, 7) has its weight (its shadow load ends
  ** at load_start + 7 + 8 - 1) before the wavefront reaches it
  ** (stream_start + 14): held, not empty, in between */
  tpu_viz *t = make("teach", 1, 32, 8, 8);
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(t, NULL, &tt);
  const uint64_t loaded = tt[0].load_start + 14, reached = tt[0].stream_start + 14;
  ck_assert_uint_lt(loaded + 1, reached);
  ck_assert(tpu_viz_seek(t, loaded + 1) == TPU_OK);
  ck_assert(tpu_viz_cell_holds(t, 7, 7));
  px = frame(t, &l);
  ck_assert_uint_eq(px_at(px, l.array.x + 7 * l.cell + 2, l.array.y + 7 * l.cell + l.cell - 3), TPU_VIZ_COLOR_HOLDING);
  free(px);
  ck_assert(tpu_viz_seek(t, reached) == TPU_OK);
  ck_assert(!tpu_viz_cell_holds(t, 7, 7));
  tpu_viz_cell cell;
  ck_assert(tpu_viz_cell_info(t, 7, 7, &cell) && cell.state == TPU_MXU_CELL_COMPUTING);
}
END_TEST

/* The timeline's cycle axis: round ticks (1, 2 or 5 times a power of ten
** apart) inside the visible range, each drawn as a tick under the bands,
** also when zoomed; labels are short. */
START_TEST(Axis_ticks_are_round_and_drawn) {
  tpu_viz *v = make("teach", 0, 40, 12, 20);
  for (int zoom = 0; zoom < 3; zoom++) {
    if (zoom) tpu_viz_zoom(v, 8.0, tpu_viz_total_cycles(v) / 3);
    tpu_viz_layout l;
    uint32_t *px = frame(v, &l);
    uint64_t t[64], a, b;
    const int n = tpu_viz_axis_ticks(v, &l, t, 64);
    tpu_viz_view_range(v, &a, &b);
    ck_assert_int_ge(n, 2);
    uint64_t step = t[1] - t[0], p = 1;
    while (p * 10 <= step) p *= 10;
    ck_assert(step == p || step == 2 * p || step == 5 * p);
    int drawn = 0;
    for (int x = l.axis.x; x < l.axis.x + l.axis.w; x++) drawn += px_at(px, x, l.axis.y + 2) == TPU_VIZ_COLOR_TICK;
    ck_assert(drawn == n || drawn == n - 1);      /* the cursor may cover one */
    for (int i = 0; i < n; i++) {
      ck_assert(t[i] >= a && t[i] < b && t[i] % step == 0);
      if (i) ck_assert_uint_eq(t[i] - t[i - 1], step);
      ck_assert_int_ge((int)((double)step * l.timeline.w / (double)(b - a)), 6 * l.font);
    }
    free(px);
  }
  char lb[16];
  tpu_viz_cycle_label(750, lb, sizeof lb);      ck_assert_str_eq(lb, "750");
  tpu_viz_cycle_label(12000, lb, sizeof lb);    ck_assert_str_eq(lb, "12k");
  tpu_viz_cycle_label(1500000, lb, sizeof lb);  ck_assert_str_eq(lb, "1500k");
  tpu_viz_cycle_label(25000000, lb, sizeof lb); ck_assert_str_eq(lb, "25M");
}
END_TEST

/* Text is 13 px at 1280x800 and twice that at scale 2, at least 18 px at
** 1920x1080; the legend has a swatch per stall kind and the cell states. */
START_TEST(Text_scales_and_the_legend_is_drawn) {
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  ck_assert_int_eq(l.font, 13);
  for (int k = 0; k < TPU_SIM_NSTALL; k++)
    ck_assert_uint_eq(px_at(px, l.legend.x + 2, l.legend.y + (k + 1) * l.line + l.line / 2), tpu_viz_stall_color(k));
  const int cy = l.legend.y + (TPU_SIM_NSTALL + 1) * l.line + l.line / 2;
  ck_assert_uint_eq(px_at(px, l.legend.x + 2, cy), TPU_VIZ_COLOR_IDLE);
  ck_assert_uint_eq(px_at(px, l.legend.x + 9 * l.font / 2 + 2, cy), TPU_VIZ_COLOR_LOADING);
  ck_assert_uint_eq(px_at(px, l.legend.x + 10 * l.font + 2, cy), TPU_VIZ_COLOR_HOLDING);
  /* the next row: a computing swatch with the shadow mark in its top-right corner */
  const int sy = l.legend.y + (TPU_SIM_NSTALL + 2) * l.line + (l.line - l.font) / 2;
  ck_assert_uint_eq(px_at(px, l.legend.x + l.font - 1, sy), TPU_VIZ_COLOR_LOADING);
  ck_assert_uint_eq(px_at(px, l.legend.x + 1, sy + l.font - 2), tpu_viz_value_color(0, 1));
  free(px);
  tpu_viz_set_text_scale(v, 2);
  ck_assert_int_eq(layout(v).font, 26);
  tpu_viz_set_text_scale(v, 1);
  tpu_viz_layout big;
  tpu_viz_layout_of(v, 1920, 1080, &big);
  ck_assert_int_ge(big.font, 18);
  ck_assert(l.arrows);
}
END_TEST

/* While a tile loads, a loading cell shows the weight arriving there (the
** tile's), not the zero the register still holds; after, the one it holds. */
START_TEST(Loading_cells_show_the_arriving_weight) {
  int loading = 0;
  const tpu_mxu_tile_times *tt;
  const tpu_mxu_tile *tl;
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  ck_assert_uint_gt(tpu_viz_tiles(v, &tl, &tt), 0);
  ck_assert(tpu_viz_seek(v, tt[0].load_start + 3) == TPU_OK);
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) {
      tpu_viz_cell cell;
      float w;
      ck_assert(tpu_viz_cell_info(v, r, c, &cell));
      if (cell.state != TPU_MXU_CELL_LOADING) continue;
      loading++;
      ck_assert(tpu_viz_cell_weight(v, r, c, &w));
      ck_assert(w == (r < tl[0].k && c < tl[0].n ? tl[0].w[(size_t)r * (size_t)tl[0].ldw + (size_t)c] : 0));
    }
  ck_assert_int_gt(loading, 0);
  float w;
  ck_assert(!tpu_viz_cell_weight(v, 8, 0, &w));
}
END_TEST
/* --gif: the animated GIF's first frame, read back by SDL2_image (an
** independent decoder), is the canvas's frame in the GIF's palette: the
** viewer's own colours (every stall kind's, the cell states') exactly, a
** computing cell's shade within 12 per channel (no longer turned mauve or
** tan), any other pixel within 40; it has one image per frame. */
static int channel_err(uint32_t a, uint32_t b) {
  int e = 0;
  for (int sh = 0; sh <= 16; sh += 8) {
    const int d = abs((int)(a >> sh & 255) - (int)(b >> sh & 255));
    if (d > e) e = d;
  }
  return e;
}
static bool named_color(uint32_t c) {
  for (int k = 0; k < TPU_SIM_NSTALL; k++) if (c == tpu_viz_stall_color(k)) return true;
  return c == TPU_VIZ_COLOR_IDLE || c == TPU_VIZ_COLOR_LOADING || c == TPU_VIZ_COLOR_HOLDING || c == TPU_VIZ_COLOR_BG ||
         c == 0xffffffffu;
}
START_TEST(Gif_frames_are_the_canvas_in_the_palette) {
  tpu_viz *v = make("teach", 0, 24, 12, 20);
  char path[] = "/tmp/tpusim_gifXXXXXX.gif", err[512];
  close(mkstemps(path, 4));
  const tpu_mxu_tile_times *tt;
  tpu_viz_tiles(v, NULL, &tt);
  const tpu_viz_app_opts o = { .headless = true, .frames = 3, .every = 5, .start = tt[0].stream_start + 6,   /* computing */
                               .gif = path, .width = W, .height = H, .speed = 4, .quiet = true };
  ck_assert_int_eq(tpu_viz_app_run(v, &o), 0);
  ck_assert(SDL_Init(SDL_INIT_VIDEO) == 0);
  ck_assert(tpu_viz_seek(v, o.start) == TPU_OK);
  tpu_viz_canvas *cv;
  ck_assert_msg(tpu_viz_canvas_create(v, W, H, &cv, err, sizeof err) == TPU_OK, "%s", err);
  tpu_viz_canvas_draw(cv);
  int pitch;
  const uint32_t *want = tpu_viz_canvas_pixels(cv, &pitch);
  SDL_Surface *s = IMG_Load(path);
  ck_assert_ptr_nonnull(s);
  SDL_Surface *c = SDL_ConvertSurfaceFormat(s, SDL_PIXELFORMAT_ARGB8888, 0);
  ck_assert_int_eq(c->w, W);
  ck_assert_int_eq(c->h, H);
  int named = 0;
  for (int y = layout(v).header.h; y < H; y++)       /* the title line holds the run's speed, not the canvas's */
    for (int x = 0; x < W; x++) {
      const uint32_t got = ((const uint32_t *)c->pixels)[(size_t)y * (size_t)(c->pitch / 4) + (size_t)x] | 0xff000000u;
      const uint32_t w = want[(size_t)y * (size_t)pitch + (size_t)x] | 0xff000000u;
      if (named_color(w)) named++;
      ck_assert_msg(named_color(w) ? got == w : channel_err(got, w) <= 40, "(%d,%d): gif 0x%08x, frame 0x%08x", x, y, got, w);
    }
  ck_assert_int_gt(named, W * H / 4);
  const tpu_viz_layout L = layout(v);
  int shaded = 0;
  for (int r = 0; r < 8; r++)                         /* the computing cells' shades */
    for (int cc = 0; cc < 8; cc++) {
      tpu_viz_cell cell;
      if (!tpu_viz_cell_info(v, r, cc, &cell) || cell.state != TPU_MXU_CELL_COMPUTING) continue;
      const int x = L.array.x + cc * L.cell + L.cell - 3, y = L.array.y + r * L.cell + L.cell - 3;   /* clear of the values */
      const uint32_t got = ((const uint32_t *)c->pixels)[(size_t)y * (size_t)(c->pitch / 4) + (size_t)x] | 0xff000000u;
      ck_assert_int_le(channel_err(got, want[(size_t)y * (size_t)pitch + (size_t)x]), 12);
      shaded++;
    }
  ck_assert_int_gt(shaded, 0);
  size_t n;
  unsigned char *bytes = (unsigned char *)tpu_read_file(path, &n);
  ck_assert_ptr_nonnull(bytes);
  int images = 0;
  for (size_t i = 0; i + 3 < n; i++) images += bytes[i] == 0x21 && bytes[i + 1] == 0xf9 && bytes[i + 2] == 4;
  ck_assert_int_ge(images, 3);
  ck_assert_int_eq(memcmp(bytes, "GIF89a", 6), 0);
  ck_assert_int_eq(bytes[n - 1], 0x3b);
  tpu_free(bytes);
  SDL_FreeSurface(c);
  SDL_FreeSurface(s);
  tpu_viz_canvas_destroy(cv);
  remove(path);
  SDL_Quit();
}
END_TEST
/* Zoom keeps the cycle under the mouse in place and halves the range; pan
** moves it and stops at the run's ends; the timeline's first pixel is the
** range's first cycle. */
START_TEST(Timeline_zooms_and_pans_within_the_run) {
  tpu_viz *v = make("teach", 0, 40, 12, 20);
  const tpu_viz_layout l = layout(v);
  const uint64_t T = tpu_viz_total_cycles(v);
  uint64_t a, b;
  const int x = l.timeline.x + l.timeline.w / 3;
  const uint64_t c = tpu_viz_cycle_at_x(v, &l, x);
  tpu_viz_zoom(v, 2.0, c);
  tpu_viz_view_range(v, &a, &b);
  ck_assert(a <= c && c < b);
  ck_assert_uint_le((b - a) > T / 2 ? (b - a) - T / 2 : T / 2 - (b - a), 1);
  const uint64_t c2 = tpu_viz_cycle_at_x(v, &l, x);
  ck_assert_uint_le(c2 > c ? c2 - c : c - c2, 2);
  ck_assert_uint_eq(tpu_viz_cycle_at_x(v, &l, l.timeline.x), a);
  for (int i = 0; i < 20; i++) tpu_viz_pan(v, 0.25);
  tpu_viz_view_range(v, &a, &b);
  ck_assert_uint_eq(b, T);
  for (int i = 0; i < 40; i++) tpu_viz_zoom(v, 2.0, T - 1);
  tpu_viz_view_range(v, &a, &b);
  ck_assert_uint_eq(b - a, 16);
  for (int i = 0; i < 40; i++) tpu_viz_zoom(v, 0.5, 0);
  tpu_viz_view_range(v, &a, &b);
  ck_assert_uint_eq(a, 0);
  ck_assert_uint_eq(b, T);
}
END_TEST
/* }================================================================== */

/* {==================================================================
** The input pipeline's rows (tpu_viz_set_pipeline)
** ================================================================== */
/* Spans on two rows of a GEMM session's run: each is drawn in its kind's
** color from its first to its last cycle on the timeline's x axis, rows
** without spans stay empty, the cores' blocks move down to make room, and
** bad rows are refused without changing the session. */
START_TEST(Pipeline_spans_are_drawn_on_their_rows_at_their_cycles) {
  tpu_viz *v = make("teach", 0, 64, 16, 16);
  const tpu_viz_layout l0 = layout(v);
  const uint64_t T = tpu_viz_total_cycles(v);
  const char *names[3] = { "read", "map", "train (consumer)" };
  const tpu_viz_span sp[3] = { { 0, 0, T / 4, 'O' }, { 0, T / 2, T / 2 + T / 8, 'R' }, { 2, T / 4, T / 2, 'W' } };
  const tpu_viz_span bad = { 3, 0, 1, 'R' };
  ck_assert_int_eq(tpu_viz_set_pipeline(v, "p.json", 3, names, &bad, 1), TPU_ERR_INPUT);
  ck_assert_int_eq(tpu_viz_pipeline_rows(v), 0);
  ck_assert_int_eq(tpu_viz_set_pipeline(v, "p.json", 3, names, sp, 3), TPU_OK);
  ck_assert_int_eq(tpu_viz_pipeline_rows(v), 3);
  ck_assert_str_eq(tpu_viz_pipeline_row_name(v, 2), "train (consumer)");
  char kinds[16];
  ck_assert_int_eq(tpu_viz_pipeline_kinds(v, kinds), 3);
  ck_assert_str_eq(kinds, "ORW");
  tpu_viz_seek(v, T - 1);                        /* the cursor out of the way, at the right end */
  tpu_viz_layout l;
  uint32_t *px = frame(v, &l);
  ck_assert_int_gt(l.timeline.y, l0.timeline.y);
  ck_assert_int_ge(l.timeline.y, l.pipeline.y + 3 * l.pipe_row_h);
  for (int r = 0; r < 3; r++) {
    const int y = l.pipeline.y + r * l.pipe_row_h + l.pipe_row_h / 2;
    for (int x = 0; x < l.pipeline.w - 1; x++) {
      const uint64_t c = tpu_viz_cycle_at_x(v, &l, l.pipeline.x + x);
      char want = 0;
      for (int k = 0; k < 3; k++)
        if (sp[k].row == r && c >= sp[k].a && c < sp[k].b) want = sp[k].kind;
      const uint32_t got = px_at(px, l.pipeline.x + x, y);
      /* a span edge may fall either side of a pixel boundary */
      const uint64_t c1 = tpu_viz_cycle_at_x(v, &l, l.pipeline.x + x + 1);
      bool edge = false;
      for (int k = 0; k < 3; k++) edge |= sp[k].row == r && ((sp[k].a > c && sp[k].a <= c1) || (sp[k].b > c && sp[k].b <= c1));
      if (!edge) ck_assert_msg(want ? got == tpu_viz_span_color(want) : got == 0xff202020u,
                               "row %d x %d (cycle %llu): 0x%08x", r, x, (unsigned long long)c, got);
    }
  }
  free(px);
}
END_TEST
/* }================================================================== */

int main(void) {
  Suite *s = suite_create("viz");
  TU_CASE(s, "render", 120, Wavefront_cells_are_where_the_PE_model_puts_them,
          Seeking_backwards_gives_the_same_frame, Hover_shows_the_cell_weight_activation_and_partial_sum,
          Layout_maps_pixels_to_cells_and_cycles_and_back);
  TU_CASE(s, "timeline", 120, Stall_bands_are_as_long_as_the_totals_say, Totals_follow_the_tile_formula,
          Precision_passes_multiply_the_tiles);
  TU_CASE(s, "program", 120, Program_totals_equal_the_engine_stalls,
          Program_stall_bands_are_proportional_to_the_engine_figures,
          Program_infeed_queue_follows_ready_cycles_and_dequeues,
          Program_mxu_replay_runs_at_the_engine_tile_times, The_replayed_tiles_are_the_engine_tile_events,
          Program_the_chip_cannot_run_is_refused,
          Gemm_totals_equal_the_engine_run_of_the_matmul_program,
          Program_create_survives_every_allocation_failure);
  TU_CASE(s, "limits", 120, Bad_shapes_are_rejected_with_a_message, Create_survives_every_allocation_failure);
  TU_CASE(s, "sdl", 120, Png_frame_matches_the_rendered_buffer);
  TU_CASE(s, "pipeline", 120, Pipeline_spans_are_drawn_on_their_rows_at_their_cycles);
  TU_CASE(s, "teach", 120, Events_start_at_the_first_load_and_step_both_ways, Axis_ticks_are_round_and_drawn, Cells_holding_weights_differ_from_empty_ones, Waits_with_an_empty_array_end_at_the_next_event_which_is_named, Text_scales_and_the_legend_is_drawn,
          Loading_cells_show_the_arriving_weight, Gif_frames_are_the_canvas_in_the_palette,
          Timeline_zooms_and_pans_within_the_run);
  return tu_main(s);
}
