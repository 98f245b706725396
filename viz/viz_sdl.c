/*
** viz_sdl.c -- the SDL side of the visualizer: text (SDL2_ttf, DejaVu Sans
** from Debian's fonts-dejavu-core), the window and its controls, the
** headless renderer and PNG output (viz_png.c; SDL2_image reads them back in tests).
**
** Every frame is composed in one software surface: tpu_viz_render() writes
** the shapes straight into its pixels (one pass over the cells, no
** SDL_RenderFillRect per cell) and text is blitted on top. How the window
** shows it (tpu_viz_window): on X11 (and SDL's dummy driver) that surface
** IS the window's own framebuffer, so presenting a frame is one
** XShmPutImage (MIT-SHM) of pixels already composed; SDL's default there
** would put a GL texture behind the window surface, and under Xvfb (Mesa's
** software GL) uploading and drawing a 1920x1080 texture cost more than
** everything else in a frame (docs/BENCHMARKS.md, viz). Elsewhere
** (Wayland, other platforms) the surface is uploaded to a streaming texture
** of an SDL renderer. Screenshots and headless frames save that same
** surface (viz_png.c), so a PNG is exactly what the window showed.
**
** Test mode (--script): actions are pushed as real SDL events, one per
** frame, through the same handler as the keyboard and mouse; time then
** advances by exactly 1/30 s per frame so runs are reproducible, and a state
** line is printed after each action.
*/
#include <SDL.h>
#include <SDL_ttf.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viz/viz_int.h"

#define FONT_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#define MONO_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"

const char TPU_VIZ_KEYS_HELP[] =
  "  space        pause / resume\n"
  "  right        one cycle forward (pauses)\n"
  "  shift+right  to the next tile's first cycle (pauses)\n"
  "  left         one cycle back (pauses)\n"
  "  n / p        next / previous event: a tile's weight load, first row, full\n"
  "               wavefront, first result; a stall (infeed wait, all-reduce)\n"
  "  + / -        run faster / slower (cycles per second, x2)\n"
  "  w            skip long waits while running, on (default) / off: a stretch\n"
  "               with an empty array longer than 2 s of playback jumps to 1/2 s\n"
  "               (2 s in an infeed wait or all-reduce) before the next tile,\n"
  "               infeed wait or all-reduce; a banner says how many cycles\n"
  "  1..8         select the core shown in the MXU panel\n"
  "  a            shade computing cells by activation or by partial sum\n"
  "  click        on the timeline: jump to that cycle (the array shows it)\n"
  "  wheel        on the timeline: zoom in / out around the cycle under the mouse\n"
  "  z / x        zoom the timeline in / out around the cycle shown\n"
  "  [ / ]        pan the timeline earlier / later (a quarter of its width)\n"
  "  hover        over a cell: its weight, activation and partial sum\n"
  "  s            save a PNG screenshot\n"
  "  h or ?       show / hide this help\n"
  "  q or Esc     quit\n";

struct tpu_viz_canvas {
  tpu_viz *v;
  tpu_viz_layout l;
  SDL_Surface *frame;              /* ours, or the window's framebuffer (frame_is_window) */
  bool frame_is_window;
  struct tpu_viz_window *win;      /* the window showing it, or NULL */
  TTF_Font *font, *small, *mono, *value;   /* title, labels, help, cell values: sized by the layout */
  TTF_Font *help_font; int help_px;        /* the help overlay's, sized so every key fits the frame */
  TTF_Font *unit;                          /* the timeline's unit labels, sized to fit a unit row */
  int value_lines;                         /* cell values: 3 (w, a, p) or 1 (the value that matters), see open_fonts */
  bool running, help, quit;
  bool show_waits;                 /* 'w': play long waits instead of skipping them */
  char banner[200];                /* what a jump skipped or reached (n, p, a skipped wait) */
  double banner_s;                 /* seconds the banner stays on screen */
  double speed, carry;             /* cycles per second; fractional cycles pending */
  int hover_r, hover_c, mouse_x;
  int shots;
  const char *out_dir;
};
typedef struct tpu_viz_canvas ui;

static void text(ui *u, TTF_Font *f, int x, int y, uint32_t argb, const char *s) {
  if (!s[0]) return;
  SDL_Color col = { (Uint8)(argb >> 16), (Uint8)(argb >> 8), (Uint8)argb, 255 };
  SDL_Surface *t = TTF_RenderUTF8_Blended(f, s, col);
  if (!t) return;                  /* text is decoration: a failed line is skipped */
  SDL_Rect dst = { x, y, t->w, t->h };
  SDL_BlitSurface(t, NULL, u->frame, &dst);
  SDL_FreeSurface(t);
}

/* text() cut to at most maxw pixels wide (ending in "..." when cut), so a
** large --scale does not run one panel's text into the next. */
static void text_fit(ui *u, TTF_Font *f, int x, int y, uint32_t argb, const char *s, int maxw) {
  char b[512];
  snprintf(b, sizeof b, "%s", s);
  size_t n = strlen(b);
  int w = 0;
  while (n > 3 && TTF_SizeUTF8(f, b, &w, NULL) == 0 && w > maxw) {
    do n--; while (n > 3 && (b[n - 3] & 0xc0) == 0x80);   /* cut before a whole UTF-8 character */
    memcpy(b + n - 3, "...", 4);
  }
  text(u, f, x, y, argb, b);
}

static void fmt_val(char *b, size_t n, float x) {
  if (x == 0) snprintf(b, n, "0");
  else snprintf(b, n, "%.2g", (double)x);
}

/* The title line and the MXU panel's captions. */
static void compose_header(ui *u) {
  const tpu_viz *v = u->v;
  const tpu_viz_layout *l = &u->l;
  char b[512];
  const tpu_chip_config *ch = tpu_viz_chip(v);
  snprintf(b, sizeof b, "tpusim viz   %s   core %d of %d   %.60s   cycle %llu / %llu   %s %.4g cycles/s   shade: %s",
           ch->name, v->sel + 1, v->ncores, v->title, (unsigned long long)v->shown,
           (unsigned long long)v->total, u->running ? "running" : "paused", u->speed,
           v->shade_psum ? "partial sum" : "activation");
  text_fit(u, u->font, 8, 4, 0xffffffffu, b, l->width - 16);
  /* MXU panel captions */
  const char *mop = tpu_viz_mxu_op(v);
  if (mop) snprintf(b, sizeof b, "MXU %dx%d of core %d (array 0): %.40s%s", v->rows, v->cols, v->sel + 1, mop,
                    v->prog ? " (synthetic values)" : "");
  else snprintf(b, sizeof b, "MXU %dx%d of core %d (array 0)", v->rows, v->cols, v->sel + 1);
  const int ln = l->line;
  const int half = l->width / 2 - 10;
  text_fit(u, u->small, l->array.x, l->array.y - ln - 2 - (l->arrows ? ln : 0), 0xffc0c0c0u, b, half + 10 - l->array.x);
  if (l->arrows) {
    const int y = l->acc.y + l->acc.h + 2;
    text(u, u->small, l->queue.x, l->array.y - ln - 2, 0xff6fa8dcu, "input queue (activations)");
    text_fit(u, u->small, l->queue.x, y, 0xffe0b000u, "weights load from the top in a diagonal staircase", half);
    text_fit(u, u->small, l->queue.x, y + ln, 0xff6fa8dcu, "activations enter from the left, skewed by the input queue", half);
    text_fit(u, u->small, l->queue.x, y + 2 * ln, 0xff3cb371u, "partial sums flow down into the accumulators (bars)", half);
    text_fit(u, u->small, l->queue.x, y + 3 * ln, 0xffe0b000u,
             "amber corner: the next tile's weight loads behind a computing cell", half);
  } else {
    text(u, u->small, l->queue.x, l->queue.y + l->queue.h + 2, 0xffc0c0c0u, "input queue");
    text(u, u->small, l->acc.x, l->acc.y + l->acc.h + 2, 0xffc0c0c0u, "accumulators: results of the current tile");
  }
}

/* A value in at most 4 characters, for one line of large text: "-0.3",
** "2.3", "-25", "-120", "1e+04" beyond; "0" for what rounds to 0.0 (not
** "-0.0"). */
static void fmt_short(char *b, size_t n, float x) {
  const double a = fabs((double)x);
  if (a < 0.05) snprintf(b, n, "0");
  else if (a < 9.95) snprintf(b, n, "%.1f", (double)x);
  else if (a < 999.5) snprintf(b, n, "%.0f", (double)x);
  else snprintf(b, n, "%.0e", (double)x);
}

/* Each cell's weight (the one arriving while it loads), the activation
** passing through and its partial sum, when cells are big enough for three
** lines of the value font (arrays up to 16x16). When --scale asks for more
** than three lines allow, one line in the larger size: the value the cell
** is shaded by while it computes, else its weight. */
static void compose_cell_numbers(ui *u) {
  const tpu_viz *v = u->v;
  const tpu_viz_layout *l = &u->l;
  const int vh = TTF_FontLineSkip(u->value);
  if (!l->arrows || l->cell < u->value_lines * vh + 2) return;
  for (int r = 0; r < v->rows; r++)
    for (int c = 0; c < v->cols; c++) {
      size_t x = (size_t)r * (size_t)v->cols + (size_t)c;
      int px = l->array.x + c * l->cell + 2, py = l->array.y + r * l->cell + 1;
      uint32_t tc = v->state[x] == TPU_MXU_CELL_IDLE ? 0xffa0a0a0u : 0xff000000u;
      char n[32], s[40];
      float w;
      if (u->value_lines == 1) {
        const bool comp = v->state[x] == TPU_MXU_CELL_COMPUTING;
        if (!comp && !tpu_viz_cell_weight(v, r, c, &w)) continue;
        fmt_short(n, sizeof n, comp ? (v->shade_psum ? v->psum[x] : v->act[x]) : w);
        text(u, u->value, px, py + (l->cell - 1 - vh) / 2, tc, n);
        continue;
      }
      if (tpu_viz_cell_weight(v, r, c, &w)) {
        fmt_val(n, sizeof n, w);
        snprintf(s, sizeof s, "w %s", n);
        text(u, u->value, px, py, tc, s);
      }
      if (v->state[x] == TPU_MXU_CELL_COMPUTING) {
        fmt_val(n, sizeof n, v->act[x]);
        snprintf(s, sizeof s, "a %s", n);
        text(u, u->value, px, py + vh, tc, s);
        fmt_val(n, sizeof n, v->psum[x]);
        snprintf(s, sizeof s, "p %s", n);
        text(u, u->value, px, py + 2 * vh, tc, s);
      }
    }
}

/* The timeline's labels: per core its name and its units' rows, the
** infeed queue's. */
static void compose_timeline_labels(ui *u) {
  const tpu_viz *v = u->v;
  const tpu_viz_layout *l = &u->l;
  const int ln = l->line, lx = l->timeline.x - 8 * l->font + 10, lx0 = lx, ux0 = l->timeline.x - 4 * l->font;
  char b[512];
  text(u, u->small, l->timeline.x, l->timeline.y - ln - 2, 0xffc0c0c0u, "timeline (click to jump)");
  if (tpu_viz_pipeline_rows(v) > 0) {           /* the input pipeline's rows, as the tf.data guide draws them */
    snprintf(b, sizeof b, "input pipeline: %s", tpu_viz_pipeline_title(v));
    text_fit(u, u->small, l->pipeline.x, l->pipeline.y - ln - 2, 0xffc0c0c0u, b, l->pipeline.w);
    for (int r = 0; r < tpu_viz_pipeline_rows(v) && l->pipe_row_h >= l->font - 2; r++)
      text_fit(u, u->small, lx, l->pipeline.y + r * l->pipe_row_h - 2, 0xffa0a0a0u, tpu_viz_pipeline_row_name(v, r),
               l->pipeline.x - lx - 4);
  }
  for (int p = 0; p < v->ncores; p++) {
    const int y = tpu_viz_core_y(l, p), dx = tpu_viz_core_x(l, p) - l->timeline.x, cx = lx0 + dx, ux = ux0 + dx;
    snprintf(b, sizeof b, "core %d", p + 1);
    if (l->core_h >= ln) text(u, u->small, cx, y + (l->row_h >= l->font - 2 ? -2 : 0), p == v->sel ? 0xffffffffu : 0xffa0a0a0u, b);
    if (u->unit) {                              /* each unit's name in its row, in a size that fits it */
      const int uh = TTF_FontLineSkip(u->unit);
      int cw = 0;
      TTF_SizeUTF8(u->small, b, &cw, NULL);
      int x = ux;
      if (x < cx + cw + 6 && l->row_h < l->font - 2) x = cx + cw + 6;     /* clear of "core N" on its line */
      for (int un = 0; un < TPU_VIZ_NUNIT; un++)
        text_fit(u, u->unit, x, y + l->strip_h + un * l->row_h + (l->row_h - uh) / 2, 0xff909090u,
                 tpu_viz_unit_name((tpu_viz_unit)un), l->timeline.x + dx - x - 2);
    }
  }
  uint64_t ticks[64];                           /* the cycle axis's labels, centred under their ticks */
  const int nt = tpu_viz_axis_ticks(v, l, ticks, 64);
  uint64_t a, e;
  tpu_viz_view_range(v, &a, &e);
  text(u, u->small, lx, l->axis.y, 0xff808080u, "cycle");
  for (int i = 0; i < nt * (l->col_dx > 0 ? 2 : 1); i++) {     /* under each column of cores */
    const int x0 = l->timeline.x + (i >= nt ? l->col_dx : 0);
    int tw = 0, x = x0 + (int)((double)(ticks[i % nt] - a) * (double)l->timeline.w / (double)(e - a));
    tpu_viz_cycle_label(ticks[i % nt], b, sizeof b);
    if (TTF_SizeUTF8(u->small, b, &tw, NULL) != 0) continue;
    x -= tw / 2;
    if (x < x0) x = x0;
    if (x + tw > x0 + l->timeline.w) x = x0 + l->timeline.w - tw;
    text(u, u->small, x, l->axis.y + 5, 0xffa0a0a0u, b);
  }
  text(u, u->small, lx, l->infeed.y, 0xffa0a0a0u, "infeed");
  snprintf(b, sizeof b, "max %d", tpu_viz_infeed_max(v, v->sel));
  text(u, u->small, lx, l->infeed.y + ln, 0xff808080u, b);
}

/* The legend: per stall kind its name, the selected core's cycles and
** share, and all cores' cycles. */
static void compose_legend(ui *u) {
  const tpu_viz *v = u->v;
  const tpu_viz_layout *l = &u->l;
  char b[512];
  uint64_t tot[TPU_SIM_NSTALL], all[TPU_SIM_NSTALL] = { 0 };
  tpu_viz_totals(v, v->sel, tot);
  for (int p = 0; p < v->ncores; p++) {
    uint64_t t[TPU_SIM_NSTALL];
    tpu_viz_totals(v, p, t);
    for (int k = 0; k < TPU_SIM_NSTALL; k++) all[k] += t[k];
  }
  const int f = l->font, ln = l->line, x0 = l->legend.x + f + 6;
  const int cx[4] = { x0, l->legend.x + 11 * f, l->legend.x + 19 * f, l->legend.x + 24 * f };
  static const char *const head[4] = { "core time", "cycles", "share", "all cores" };
  for (int i = 0; i < 4; i++) text(u, u->small, cx[i], l->legend.y, 0xffc0c0c0u, head[i]);
  for (int k = 0; k < TPU_SIM_NSTALL; k++) {
    int y = l->legend.y + (k + 1) * ln;
    text(u, u->small, cx[0], y, 0xffffffffu, tpu_sim_stall_name(k));
    snprintf(b, sizeof b, "%llu", (unsigned long long)tot[k]);
    text(u, u->small, cx[1], y, 0xffffffffu, b);
    snprintf(b, sizeof b, "%.1f%%", 100.0 * (double)tot[k] / (double)v->total);
    text(u, u->small, cx[2], y, 0xffffffffu, b);
    snprintf(b, sizeof b, "%llu", (unsigned long long)all[k]);
    text(u, u->small, cx[3], y, 0xffffffffu, b);
  }
  /* cell states (swatches by tpu_viz_render) */
  const int y = l->legend.y + (TPU_SIM_NSTALL + 1) * ln;
  text(u, u->small, x0, y, 0xffffffffu, "idle");
  text(u, u->small, l->legend.x + 9 * f / 2 + f + 6, y, 0xffffffffu, "loading");
  text(u, u->small, l->legend.x + 11 * f + 6, y, 0xffffffffu, "holding");
  text_fit(u, u->small, l->legend.x + 22 * f + 6, y, 0xffffffffu,
           v->shade_psum ? "computing: partial sum -/+" : "computing: activation -/+", l->legend.w - 22 * f - 6);
  text_fit(u, u->small, x0, y + ln, 0xffffffffu, "amber corner: computing, the next tile's weight already in its shadow",
           l->legend.w - f - 6);
  /* the input pipeline's span kinds, swatch and name, as many as fit the line */
  char kinds[16];
  const int nk = tpu_viz_pipeline_rows(v) > 0 ? tpu_viz_pipeline_kinds(v, kinds) : 0;
  for (int k = 0, x = l->legend.x; k < nk; k++) {
    const char *name = tpu_viz_span_name(kinds[k]);
    int tw = 0;
    if (TTF_SizeUTF8(u->small, name, &tw, NULL) != 0 || x + f + 3 + tw > l->legend.x + l->legend.w) break;
    const uint32_t c = tpu_viz_span_color(kinds[k]);
    SDL_Rect sw = { x, y + 2 * ln + (ln - f) / 2, f, f };
    SDL_FillRect(u->frame, &sw, SDL_MapRGB(u->frame->format, (Uint8)(c >> 16), (Uint8)(c >> 8), (Uint8)c));
    text(u, u->small, x + f + 3, y + 2 * ln, 0xffffffffu, name);
    x += f + 3 + tw + f;
  }
}

/* What each unit runs at the cycle shown, the hovered cell, the help. */
static void compose_info(ui *u) {
  const tpu_viz *v = u->v;
  const tpu_viz_layout *l = &u->l;
  char b[512];
  /* what each unit of the selected core runs at the cycle shown */
  {
    int n = snprintf(b, sizeof b, "now on core %d:", v->sel + 1);
    for (int un = 0; un < TPU_VIZ_NUNIT && n > 0 && (size_t)n < sizeof b; un++) {
      const char *op = tpu_viz_op_at(v, v->sel, (tpu_viz_unit)un, v->shown);
      n += snprintf(b + n, sizeof b - (size_t)n, "   %s %.28s", tpu_viz_unit_name((tpu_viz_unit)un), op ? op : "-");
    }
    text_fit(u, u->small, l->info.x, l->info.y, 0xffd0d0d0u, b, l->info.w);
  }
  /* hover info, help */
  int y = l->info.y + l->line;
  tpu_viz_cell cell;
  if (u->hover_r >= 0 && tpu_viz_cell_info(v, u->hover_r, u->hover_c, &cell)) {
    static const char *const st[] = { "idle", "loading", "computing" };
    snprintf(b, sizeof b, "cell (%d, %d) %s: weight %.6g  activation %.6g  partial sum %.6g",
             u->hover_r, u->hover_c, st[cell.state <= 2 ? cell.state : 0], (double)cell.weight,
             (double)cell.act, (double)cell.psum);
    text(u, u->small, l->info.x, y, 0xffffffffu, b);
  }
  y += l->line;
  if (u->banner_s > 0 && u->banner[0]) {      /* a jump, said as such: amber box, dark text */
    int tw = 0, th = 0;
    if (TTF_SizeUTF8(u->font, u->banner, &tw, &th) != 0) tw = l->info.w, th = l->line;
    SDL_Rect r = { l->info.x - 4, y, tw + 8 < l->width - l->info.x ? tw + 8 : l->width - l->info.x, th + 2 };
    SDL_FillRect(u->frame, &r, SDL_MapRGB(u->frame->format, 0xe0, 0xb0, 0x00));
    text_fit(u, u->font, l->info.x, y + 1, 0xff141414u, u->banner, r.w - 8);
  } else {
    text_fit(u, u->small, l->info.x, y, 0xff909090u,
             "h: help   space: pause   n / p: next / previous event   w: skip waits   right: step   q: quit", l->info.w);
  }
}

/* The help: every key, over the whole frame, in a monospace size chosen so
** that all its lines fit whatever the window's size (at most the labels'
** size x 1.5, at least 6 px). */
static void compose_help(ui *u) {
  const tpu_viz_layout *l = &u->l;
  int lines = 2, cols = 0;                      /* a title line and a blank one, then the keys */
  for (const char *s = TPU_VIZ_KEYS_HELP; *s;) {
    const char *e = strchr(s, '\n');
    const int n = e ? (int)(e - s) : (int)strlen(s);
    if (n > cols) cols = n;
    lines++;
    s += n + (e ? 1 : 0);
  }
  const int m = 12;                             /* margin: the frame shows around the box */
  int px = (int)((double)(l->height - 4 * m) / (lines * 1.18));     /* DejaVu Sans Mono: line 1.17 em, */
  const int by_w = (int)((double)(l->width - 4 * m) / (cols * 0.61)); /* advance 0.602 em */
  if (px > by_w) px = by_w;
  if (px > l->font * 3 / 2) px = l->font * 3 / 2;
  if (px < 6) px = 6;
  if (!u->help_font || u->help_px != px) {
    if (u->help_font) TTF_CloseFont(u->help_font);
    u->help_font = TTF_OpenFont(MONO_PATH, px);
    u->help_px = px;
    if (!u->help_font) return;                  /* text is decoration */
  }
  const int skip = TTF_FontLineSkip(u->help_font);
  SDL_Rect box = { m, m, l->width - 2 * m, lines * skip + 2 * m };
  if (box.h > l->height - 2 * m) box.h = l->height - 2 * m;
  SDL_FillRect(u->frame, &box, SDL_MapRGB(u->frame->format, 0x10, 0x10, 0x24));
  int y = box.y + m;
  text(u, u->help_font, box.x + m, y, 0xffffffffu, "keys (h or ? closes this help)");
  y += 2 * skip;
  char b[256];
  for (const char *s = TPU_VIZ_KEYS_HELP; *s; y += skip) {
    const char *e = strchr(s, '\n');
    const size_t n = e ? (size_t)(e - s) : strlen(s);
    snprintf(b, sizeof b, "%.*s", (int)n, s);
    text(u, u->help_font, box.x + m, y, 0xffe0e0e0u, b);
    s += n + (e ? 1 : 0);
  }
}

static void compose(ui *u) {
  if (SDL_MUSTLOCK(u->frame)) SDL_LockSurface(u->frame);
  tpu_viz_render(u->v, &u->l, u->frame->pixels, u->frame->pitch / 4);
  if (SDL_MUSTLOCK(u->frame)) SDL_UnlockSurface(u->frame);
  compose_header(u);
  compose_cell_numbers(u);
  compose_timeline_labels(u);
  compose_legend(u);
  compose_info(u);
  if (u->help) compose_help(u);
}

static int save_surface(SDL_Surface *s, const char *path, char *err, size_t errcap) {
  return viz_png_write(path, s->pixels, s->w, s->h, s->pitch / 4, err, errcap);
}

static void close_fonts(ui *u) {
  TTF_Font **f[] = { &u->font, &u->small, &u->mono, &u->value, &u->help_font, &u->unit };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (*f[i]) { TTF_CloseFont(*f[i]); *f[i] = NULL; }
}

/* The fonts at the layout's text size: labels at l.font px, the title a
** little larger, cell values as large as three lines in a cell allow, times
** --scale: when that is more than three lines allow, one line of up to 4
** characters in the larger size (as large as the cell allows). */
static int open_fonts(ui *u, char *err, size_t errcap) {
  const tpu_viz_layout *l = &u->l;
  int vs = (l->cell - 4) * 3 / 11;           /* a line is about 1.2 em: 3 lines in cell - 4 px */
  if (vs > (l->cell - 4) * 10 / 48) vs = (l->cell - 4) * 10 / 48;   /* "w -0.025": 8 glyphs of about 0.6 em */
  if (vs > l->font) vs = l->font;
  if (vs < 6) vs = 6;
  const int want = (int)(vs * u->v->text_scale + 0.5);
  int one = (l->cell - 4) * 10 / 24;         /* "-0.3": 4 glyphs of about 0.6 em */
  if (one > (l->cell - 4) * 5 / 6) one = (l->cell - 4) * 5 / 6;
  u->value_lines = 3;
  if (want > vs && one > vs) { u->value_lines = 1; vs = want < one ? want : one; }
  close_fonts(u);
  u->font = TTF_OpenFont(FONT_PATH, l->font + l->font / 6);
  u->small = TTF_OpenFont(FONT_PATH, l->font);
  u->mono = TTF_OpenFont(MONO_PATH, l->font);
  u->value = TTF_OpenFont(FONT_PATH, vs);
  /* a unit label fits its row: DejaVu's line is 1.17 em; below 7 px none is drawn */
  int us = (int)((l->row_h + 1) / 1.17);
  if (us > l->font) us = l->font;
  u->unit = us >= 7 ? TTF_OpenFont(FONT_PATH, us) : NULL;
  if (!u->font || !u->small || !u->mono || !u->value || (us >= 7 && !u->unit)) {
    snprintf(err, errcap, "cannot open the font %s (Debian package fonts-dejavu-core): %s", FONT_PATH, TTF_GetError());
    return -1;
  }
  return 0;
}

static int ui_open(ui *u, tpu_viz *v, int w, int h, char *err, size_t errcap) {
  memset(u, 0, sizeof *u);
  u->v = v;
  u->hover_r = -1;
  if (w < 640) w = 640;
  if (h < 480) h = 480;
  tpu_viz_layout_of(v, w, h, &u->l);
  if (!TTF_WasInit() && TTF_Init() != 0) { snprintf(err, errcap, "SDL_ttf: %s", TTF_GetError()); return -1; }
  if (open_fonts(u, err, errcap) != 0) return -1;
  u->frame = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
  if (!u->frame) { snprintf(err, errcap, "SDL: %s", SDL_GetError()); return -1; }
  return 0;
}

/* A new layout and text size for a w x h frame; on failure the previous
** layout and fonts stay (and the session ends if even they cannot be
** reopened). 0 or -1. */
static int relayout(ui *u, int w, int h) {
  char err[512];
  const tpu_viz_layout old = u->l;
  tpu_viz_layout_of(u->v, w, h, &u->l);
  if (open_fonts(u, err, sizeof err) == 0) return 0;
  u->l = old;
  if (open_fonts(u, err, sizeof err) != 0) u->quit = true;
  return -1;
}

static SDL_Surface *window_surface(struct tpu_viz_window *w);

/* The window was resized: a new layout, text size and frame (the window's
** new framebuffer, or a surface of ours that the window loop gives a new
** texture when it sees the frame's size change). On failure the previous
** frame stays. */
static void ui_resize(ui *u, int w, int h) {
  if (u->frame_is_window) {
    SDL_Surface *f = window_surface(u->win);   /* SDL remade it at the window's new size */
    if (!f) { fprintf(stderr, "tpusim viz: SDL: %s\n", SDL_GetError()); u->quit = true; return; }
    u->frame = f;
    if (relayout(u, f->w, f->h) != 0) u->quit = true;   /* the old layout does not fit the new frame */
    return;
  }
  if (w < 640) w = 640;
  if (h < 480) h = 480;
  SDL_Surface *f = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
  if (!f) return;
  if (relayout(u, w, h) != 0) { SDL_FreeSurface(f); return; }
  SDL_FreeSurface(u->frame);
  u->frame = f;
}

static void ui_close(ui *u) {
  close_fonts(u);
  if (u->frame && !u->frame_is_window) SDL_FreeSurface(u->frame);
  u->frame = NULL;
}

tpu_status tpu_viz_canvas_create(tpu_viz *v, int width, int height, tpu_viz_canvas **out,
                                 char *err, size_t errcap) {
  *out = NULL;
  ui *u = tpu_malloc(sizeof *u);
  if (!u) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  if (ui_open(u, v, width, height, err, errcap) != 0) {
    ui_close(u);
    tpu_free(u);
    return TPU_ERR_RUNTIME;
  }
  *out = u;
  return TPU_OK;
}
void tpu_viz_canvas_destroy(tpu_viz_canvas *c) {
  if (!c) return;
  ui_close(c);
  tpu_free(c);
}
void tpu_viz_canvas_draw(tpu_viz_canvas *c) { compose(c); }
const uint32_t *tpu_viz_canvas_pixels(const tpu_viz_canvas *c, int *pitch) {
  *pitch = c->frame->pitch / 4;
  return c->frame->pixels;
}
int tpu_viz_canvas_save_png(tpu_viz_canvas *c, const char *path, char *err, size_t errcap) {
  return save_surface(c->frame, path, err, errcap);
}

int tpu_viz_save_png(tpu_viz *v, int width, int height, const char *path, char *err, size_t errcap) {
  ui u;
  int rc = ui_open(&u, v, width, height, err, errcap);
  if (rc == 0) {
    compose(&u);
    rc = save_surface(u.frame, path, err, errcap);
  }
  ui_close(&u);
  return rc;
}

/* {==================================================================
** Events
** ================================================================== */
static void say_state(const ui *u) {
  uint64_t a, b;
  tpu_viz_view_range(u->v, &a, &b);
  printf("cycle %llu core %d %s speed %.4g", (unsigned long long)u->v->shown, u->v->sel + 1,
         u->running ? "running" : "paused", u->speed);
  if (a != 0 || b != u->v->total) printf(" view %llu..%llu", (unsigned long long)a, (unsigned long long)b);
  printf("\n");
  fflush(stdout);
}

static void screenshot(ui *u) {
  char path[4096], err[4300];
  snprintf(path, sizeof path, "%s/tpusim-viz-%03d.png", u->out_dir, ++u->shots);
  compose(u);
  if (save_surface(u->frame, path, err, sizeof err) == 0) printf("saved %s\n", path);
  else fprintf(stderr, "tpusim viz: %s\n", err);
  fflush(stdout);
}

/* Puts 'msg' on screen for 3 s and, in --script mode, on stdout. */
static void set_banner(ui *u, bool script, const char *msg) {
  snprintf(u->banner, sizeof u->banner, "%s", msg);
  u->banner_s = 3.0;
  if (script) { printf("banner: %s\n", u->banner); fflush(stdout); }
}

/* n / p: jump to the next / previous event and say which it is. */
static void jump_event(ui *u, int dir, bool script) {
  char what[128], b[200];
  const uint64_t c = tpu_viz_event_step(u->v, dir, what, sizeof what);
  u->running = false;
  tpu_viz_seek(u->v, c);
  if (what[0]) snprintf(b, sizeof b, "%s event: %s (cycle %llu)", dir > 0 ? "next" : "previous", what, (unsigned long long)c);
  else snprintf(b, sizeof b, "no %s event: cycle %llu", dir > 0 ? "later" : "earlier", (unsigned long long)c);
  set_banner(u, script, b);
}

/* While running: a stretch with an empty array (tpu_viz_wait_end) that
** would take more than 2 s of playback is skipped to 1/2 s before its end
** (2 s for an infeed wait or all-reduce), with a banner saying so.
** Returns the cycle to go to from 'to' (the cycle the clock reached). */
static uint64_t skip_wait(ui *u, uint64_t to, bool script) {
  int k;
  const uint64_t end = tpu_viz_wait_end(u->v, &k), now = u->v->shown;
  /* half a second of the stretch's end is played; 2 s of an infeed wait or
  ** an all-reduce, long enough to read the band and the ICI row */
  const double sec = k == TPU_SIM_INFEED_WAIT || k == TPU_SIM_COLLECTIVE_WAIT ? 2.0 : 0.5;
  const double lead = u->speed * sec > 1 ? u->speed * sec : 1;
  if (u->show_waits || end <= now || (double)(end - now) <= 2 * u->speed + lead || end <= to) return to;
  const uint64_t dest = end - (uint64_t)lead;
  if (dest <= to) return to;
  char b[200];
  snprintf(b, sizeof b, "skipping %llu cycles with an empty array, mostly %s (w: play them)", (unsigned long long)(dest - now),
           tpu_sim_stall_name(k));
  set_banner(u, script, b);
  return dest;
}

static void handle(ui *u, const SDL_Event *e, bool script) {
  tpu_viz *v = u->v;
  if (e->type == SDL_QUIT) { u->quit = true; return; }
  if (e->type == SDL_MOUSEMOTION) {
    int r, c;
    u->mouse_x = e->motion.x;
    if (tpu_viz_cell_at(v, &u->l, e->motion.x, e->motion.y, &r, &c)) { u->hover_r = r; u->hover_c = c; }
    else u->hover_r = -1;
    return;
  }
  if (e->type == SDL_MOUSEBUTTONDOWN && e->button.button == SDL_BUTTON_LEFT) {
    const tpu_viz_rect *t = &u->l.timeline;
    int x = e->button.x, y = e->button.y;
    if (x >= t->x && x < t->x + t->w && y >= t->y - 4 && y < u->l.infeed.y + u->l.infeed.h) {
      tpu_viz_seek(v, tpu_viz_cycle_at_x(v, &u->l, x));
      u->running = false;
    }
    return;
  }
  if (e->type == SDL_MOUSEWHEEL) {
    if (e->wheel.y) tpu_viz_zoom(v, e->wheel.y > 0 ? 2.0 : 0.5, tpu_viz_cycle_at_x(v, &u->l, u->mouse_x));
    return;
  }
  if (e->type == SDL_WINDOWEVENT && e->window.event == SDL_WINDOWEVENT_SIZE_CHANGED) {
    ui_resize(u, e->window.data1, e->window.data2);
    return;
  }
  if (e->type != SDL_KEYDOWN) return;
  const SDL_Keycode k = e->key.keysym.sym;
  const bool shift = (e->key.keysym.mod & KMOD_SHIFT) != 0;
  switch (k) {
  case SDLK_q: case SDLK_ESCAPE: u->quit = true; break;
  case SDLK_SPACE: u->running = !u->running; u->carry = 0; break;
  case SDLK_RIGHT:
    u->running = false;
    tpu_viz_seek(v, shift ? tpu_viz_next_tile_cycle(v) : v->shown + 1);
    break;
  case SDLK_LEFT:
    u->running = false;
    if (v->shown > 0) tpu_viz_seek(v, v->shown - 1);
    break;
  case SDLK_PLUS: case SDLK_EQUALS: case SDLK_KP_PLUS: if (u->speed < 65536) u->speed *= 2; break;
  case SDLK_MINUS: case SDLK_KP_MINUS: if (u->speed > 0.25) u->speed /= 2; break;
  case SDLK_z: tpu_viz_zoom(v, 2.0, v->shown); break;
  case SDLK_x: tpu_viz_zoom(v, 0.5, v->shown); break;
  case SDLK_LEFTBRACKET: tpu_viz_pan(v, -0.25); break;
  case SDLK_RIGHTBRACKET: tpu_viz_pan(v, 0.25); break;
  case SDLK_n: jump_event(u, 1, script); break;
  case SDLK_p: jump_event(u, -1, script); break;
  case SDLK_w:
    u->show_waits = !u->show_waits;
    set_banner(u, script, u->show_waits ? "waits are played cycle by cycle (w: skip them)" : "long waits are skipped (w: play them)");
    break;
  case SDLK_a: v->shade_psum = !v->shade_psum; break;
  case SDLK_h: case SDLK_QUESTION: case SDLK_SLASH: u->help = !u->help; break;
  case SDLK_s: screenshot(u); break;
  default:
    if (k >= SDLK_1 && k <= SDLK_8 && k - SDLK_1 < v->ncores) tpu_viz_select_core(v, (int)(k - SDLK_1));
    break;
  }
}

/* Turns one script action into an SDL event; false if it is not one. */
static bool script_event(const char *a, SDL_Event *e, int *wait) {
  memset(e, 0, sizeof *e);
  *wait = 0;
  int x, y;
  if (sscanf(a, "wait:%d", wait) == 1) return *wait >= 0;
  if (sscanf(a, "click:%d:%d", &x, &y) == 2) {
    e->type = SDL_MOUSEBUTTONDOWN; e->button.button = SDL_BUTTON_LEFT; e->button.x = x; e->button.y = y;
    return true;
  }
  if (!strcmp(a, "wheelup") || !strcmp(a, "wheeldown")) {   /* at the last hover's x */
    e->type = SDL_MOUSEWHEEL; e->wheel.y = a[5] == 'u' ? 1 : -1;
    return true;
  }
  if (sscanf(a, "hover:%d:%d", &x, &y) == 2) {
    e->type = SDL_MOUSEMOTION; e->motion.x = x; e->motion.y = y;
    return true;
  }
  static const struct { const char *name; SDL_Keycode k; Uint16 mod; } keys[] = {
    { "space", SDLK_SPACE, 0 }, { "right", SDLK_RIGHT, 0 }, { "shift+right", SDLK_RIGHT, KMOD_LSHIFT },
    { "left", SDLK_LEFT, 0 }, { "plus", SDLK_PLUS, 0 }, { "minus", SDLK_MINUS, 0 },
    { "s", SDLK_s, 0 }, { "q", SDLK_q, 0 }, { "esc", SDLK_ESCAPE, 0 }, { "h", SDLK_h, 0 },
    { "a", SDLK_a, 0 }, { "w", SDLK_w, 0 }, { "n", SDLK_n, 0 }, { "p", SDLK_p, 0 }, { "z", SDLK_z, 0 }, { "x", SDLK_x, 0 },
    { "[", SDLK_LEFTBRACKET, 0 }, { "]", SDLK_RIGHTBRACKET, 0 }, { "1", SDLK_1, 0 }, { "2", SDLK_2, 0 }, { "3", SDLK_3, 0 }, { "4", SDLK_4, 0 },
    { "5", SDLK_5, 0 }, { "6", SDLK_6, 0 }, { "7", SDLK_7, 0 }, { "8", SDLK_8, 0 } };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(a, keys[i].name)) {
      e->type = SDL_KEYDOWN;
      e->key.keysym.sym = keys[i].k;
      e->key.keysym.mod = keys[i].mod;
      return true;
    }
  return false;
}

static bool is_headless_driver(const char *d) {
  return !d || !strcmp(d, "dummy") || !strcmp(d, "offscreen") || !strcmp(d, "evdev");
}
/* }================================================================== */

/* {==================================================================
** The window
** ================================================================== */
struct tpu_viz_window {
  ui u;                            /* the canvas (its frame may be the window's framebuffer) */
  SDL_Window *win;
  SDL_Renderer *ren;               /* the texture path only */
  SDL_Texture *tex;
  const char *path;                /* how frames reach the screen (tpu_viz_window_path) */
};

/* The window's framebuffer, if it has the canvas's 32-bit 0x??RRGGBB pixels
** (ARGB8888, or X11's RGB888 whose top byte is ignored), else NULL. */
static SDL_Surface *window_surface(struct tpu_viz_window *w) {
  SDL_Surface *s = SDL_GetWindowSurface(w->win);
  if (!s) return NULL;
  const Uint32 f = s->format->format;
  return f == SDL_PIXELFORMAT_ARGB8888 || f == SDL_PIXELFORMAT_RGB888 ? s : NULL;
}

/* Drivers whose window surface is a framebuffer of their own (X11: shared
** memory with the server) when SDL is told not to put a GL texture behind it. */
static bool native_framebuffer(const char *drv) { return drv && (!strcmp(drv, "x11") || !strcmp(drv, "dummy")); }

void tpu_viz_window_destroy(tpu_viz_window *w) {
  if (!w) return;
  ui_close(&w->u);
  if (w->tex) SDL_DestroyTexture(w->tex);
  if (w->ren) SDL_DestroyRenderer(w->ren);
  if (w->win) SDL_DestroyWindow(w->win);
  tpu_free(w);
}

/* The texture path: an SDL renderer (accelerated if it can) and a
** streaming texture the canvas's own frame is uploaded to. */
static int open_texture_path(tpu_viz_window *w, char *err, size_t errcap) {
  w->ren = SDL_CreateRenderer(w->win, -1, 0);
  if (!w->ren) w->ren = SDL_CreateRenderer(w->win, -1, SDL_RENDERER_SOFTWARE);
  if (w->ren) w->tex = SDL_CreateTexture(w->ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING,
                                         w->u.frame->w, w->u.frame->h);
  if (!w->ren || !w->tex) { snprintf(err, errcap, "SDL: %s", SDL_GetError()); return -1; }
  SDL_RendererInfo ri;
  w->path = SDL_GetRendererInfo(w->ren, &ri) == 0 && !strcmp(ri.name, "software") ? "SDL software renderer, streaming texture"
                                                                                 : "SDL renderer, streaming texture";
  return 0;
}

tpu_status tpu_viz_window_create(tpu_viz *v, int width, int height, tpu_viz_window **out, char *err, size_t errcap) {
  *out = NULL;
  tpu_viz_window *w = tpu_calloc(1, sizeof *w);
  if (!w) { snprintf(err, errcap, "out of memory"); return TPU_ERR_NOMEM; }
  const char *drv = SDL_GetCurrentVideoDriver();
  const bool fb = native_framebuffer(drv);
  /* before the first SDL_GetWindowSurface, and only as a default: the
  ** SDL_FRAMEBUFFER_ACCELERATION environment variable still decides */
  if (fb) SDL_SetHintWithPriority(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0", SDL_HINT_DEFAULT);
  if (ui_open(&w->u, v, width, height, err, errcap) != 0) { tpu_viz_window_destroy(w); return TPU_ERR_RUNTIME; }
  w->u.win = w;
  w->win = SDL_CreateWindow("tpusim viz", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, w->u.l.width, w->u.l.height,
                            SDL_WINDOW_RESIZABLE);
  if (!w->win) {
    snprintf(err, errcap, "cannot open a window: %s", SDL_GetError());
    tpu_viz_window_destroy(w);
    return TPU_ERR_IO;
  }
  SDL_Surface *s = fb ? window_surface(w) : NULL;
  if (s) {
    SDL_FreeSurface(w->u.frame);
    w->u.frame = s;
    w->u.frame_is_window = true;
    w->path = !strcmp(drv, "x11") ? "X11 framebuffer (MIT-SHM)" : "window framebuffer";
    if (s->w != w->u.l.width || s->h != w->u.l.height) relayout(&w->u, s->w, s->h);
  } else {
    if (fb) {                      /* a window surface and a renderer do not mix: start afresh */
      SDL_DestroyWindow(w->win);
      w->win = SDL_CreateWindow("tpusim viz", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, w->u.l.width,
                                w->u.l.height, SDL_WINDOW_RESIZABLE);
    }
    if (!w->win || open_texture_path(w, err, errcap) != 0) {
      if (!w->win) snprintf(err, errcap, "cannot open a window: %s", SDL_GetError());
      tpu_viz_window_destroy(w);
      return TPU_ERR_RUNTIME;
    }
  }
  *out = w;
  return TPU_OK;
}

const char *tpu_viz_window_path(const tpu_viz_window *w) { return w->path; }

/* Composes the frame and shows it. The texture path makes a texture of the
** frame's new size after a resize (if none can be made, the frame goes back
** to the texture's size). */
void tpu_viz_window_present(tpu_viz_window *w) {
  ui *u = &w->u;
  if (u->frame_is_window) {
    compose(u);
    SDL_UpdateWindowSurface(w->win);
    return;
  }
  int tw, th;
  if (SDL_QueryTexture(w->tex, NULL, NULL, &tw, &th) == 0 && (tw != u->frame->w || th != u->frame->h)) {
    SDL_Texture *nt = SDL_CreateTexture(w->ren, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, u->frame->w,
                                        u->frame->h);
    if (nt) { SDL_DestroyTexture(w->tex); w->tex = nt; }
    else ui_resize(u, tw, th);
  }
  compose(u);
  SDL_UpdateTexture(w->tex, NULL, u->frame->pixels, u->frame->pitch);
  SDL_RenderClear(w->ren);
  SDL_RenderCopy(w->ren, w->tex, NULL, NULL);
  SDL_RenderPresent(w->ren);
}

/* SDL_Init(SDL_INIT_VIDEO) with stderr closed: the display libraries it
** probes print their own complaints ("error: XDG_RUNTIME_DIR is invalid or
** not set in the environment.") before ours; SDL_GetError keeps what
** matters. */
static int sdl_init_quiet(void) {
  fflush(stderr);
  const int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null >= 0) dup2(null, STDERR_FILENO);
  const int rc = SDL_Init(SDL_INIT_VIDEO);
  fflush(stderr);
  if (saved >= 0 && null >= 0) dup2(saved, STDERR_FILENO);
  if (saved >= 0) close(saved);
  if (null >= 0) close(null);
  return rc;
}

/* The window loop. 'script' is a private copy (tokens are cut in place). */
static int run_window(tpu_viz *v, const tpu_viz_app_opts *o, char *script) {
  char err[4300];
  if (sdl_init_quiet() != 0) {
    fprintf(stderr, "tpusim viz: no display (%s); run with --headless --frames N --out DIR to write PNG frames instead\n",
            SDL_GetError());
    return 2;
  }
  const char *drv = SDL_GetCurrentVideoDriver();
  if (is_headless_driver(drv) && !script) {
    fprintf(stderr, "tpusim viz: no display (SDL video driver '%s' shows nothing); run with --headless "
                    "--frames N --out DIR to write PNG frames instead\n", drv ? drv : "none");
    SDL_Quit();
    return 2;
  }
  int rc = 1;
  tpu_viz_window *w = NULL;
  tpu_status st = tpu_viz_window_create(v, o->width, o->height, &w, err, sizeof err);
  if (st != TPU_OK) {
    if (st == TPU_ERR_IO)
      fprintf(stderr, "tpusim viz: no display (%s); run with --headless --frames N --out DIR\n", err);
    else fprintf(stderr, "tpusim viz: %s\n", err);
    rc = st == TPU_ERR_IO ? 2 : 1;
    goto out;
  }
  ui *u = &w->u;
  u->out_dir = o->out_dir ? o->out_dir : ".";
  u->speed = o->speed;
  u->running = true;
  char *save = NULL, *next = script ? strtok_r(script, ",", &save) : NULL;
  int wait = 0;
  Uint64 last = SDL_GetPerformanceCounter();
  while (!u->quit) {
    SDL_Event e;
    while (SDL_PollEvent(&e)) handle(u, &e, script != NULL);
    if (script) {
      if (wait > 0) wait--;
      else if (next) {
        SDL_Event se;
        int sw, sh;
        if (sscanf(next, "size:%dx%d", &sw, &sh) == 2 && sw > 0 && sh > 0) {   /* as a user drags the corner */
          SDL_SetWindowSize(w->win, sw, sh);
          next = strtok_r(NULL, ",", &save);
          continue;
        }
        if (!script_event(next, &se, &wait)) {
          fprintf(stderr, "tpusim viz: --script: unknown action '%s'\n", next);
          rc = 2;
          goto out;
        }
        if (se.type) { handle(u, &se, true); say_state(u); }
        next = strtok_r(NULL, ",", &save);
      } else if (!u->quit) u->quit = true;    /* a script ends the session */
    }
    /* advance the simulation */
    Uint64 now = SDL_GetPerformanceCounter();
    double dt = script ? 1.0 / 30 : (double)(now - last) / (double)SDL_GetPerformanceFrequency();
    last = now;
    if (u->banner_s > 0) u->banner_s -= dt;
    if (u->running) {
      u->carry += u->speed * dt;
      uint64_t n = (uint64_t)u->carry;
      u->carry -= (double)n;
      uint64_t to = skip_wait(u, v->shown + n, script != NULL);
      if (to != v->shown) {
        if (to >= v->total - 1) { to = v->total - 1; u->running = false; }
        tpu_viz_seek(v, to);
      }
    }
    tpu_viz_window_present(w);
    if (!script) SDL_Delay(15);
  }
  rc = 0;
out:
  tpu_viz_window_destroy(w);
  TTF_Quit();
  SDL_Quit();
  return rc;
}
/* }================================================================== */

/* {==================================================================
** Headless frames
** ================================================================== */
static int run_headless(tpu_viz *v, const tpu_viz_app_opts *o) {
  char err[4300];
  viz_gif *gif = NULL;
  SDL_SetHint(SDL_HINT_VIDEODRIVER, "offscreen,dummy");
  if (sdl_init_quiet() != 0) { fprintf(stderr, "tpusim viz: SDL: %s\n", SDL_GetError()); return 1; }
  ui u;
  int rc = 1;
  if (ui_open(&u, v, o->width, o->height, err, sizeof err) != 0) { fprintf(stderr, "tpusim viz: %s\n", err); goto out; }
  u.speed = o->speed;
  if (o->gif && !(gif = viz_gif_open(o->gif, u.frame->w, u.frame->h, err, sizeof err))) {
    fprintf(stderr, "tpusim viz: %s\n", err);
    goto out;
  }
  for (int f = 0; f < o->frames; f++) {
    /* saturated: --every up to LONG_MAX must not wrap past the run's end
    ** back into it (the seek clamps to the last cycle) */
    const uint64_t c = f && o->every > (UINT64_MAX - o->start) / (uint64_t)f ? UINT64_MAX
                                                                              : o->start + (uint64_t)f * o->every;
    if (tpu_viz_seek(v, c) != TPU_OK) { fprintf(stderr, "tpusim viz: out of memory\n"); goto out; }
    char path[4096];
    if (o->png) snprintf(path, sizeof path, "%s", o->png);
    else snprintf(path, sizeof path, "%s/frame_%06d.png", o->out_dir ? o->out_dir : ".", f);
    compose(&u);
    if (gif) { viz_gif_frame(gif, u.frame->pixels, u.frame->pitch / 4, 10); continue; }
    if (save_surface(u.frame, path, err, sizeof err) != 0) { fprintf(stderr, "tpusim viz: %s\n", err); goto out; }
    if (!o->quiet) printf("wrote %s (cycle %llu)\n", path, (unsigned long long)v->shown);
  }
  if (gif) {
    viz_gif *g = gif;
    gif = NULL;
    if (viz_gif_close(g, true, err, sizeof err) != 0) { fprintf(stderr, "tpusim viz: %s\n", err); goto out; }
    if (!o->quiet) printf("wrote %s (%d frames, cycles %llu..%llu)\n", o->gif, o->frames,
                          (unsigned long long)o->start, (unsigned long long)v->shown);
  }
  rc = 0;
out:
  viz_gif_close(gif, false, err, sizeof err);     /* a failed run leaves no file */
  ui_close(&u);
  TTF_Quit();
  SDL_Quit();
  return rc;
}
/* }================================================================== */

/* Whether every action of 'script' (cut in place) is one: the whole
** script is checked before the window runs any of it. */
static bool script_valid(char *script) {
  char *save = NULL;
  for (char *a = strtok_r(script, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    SDL_Event e;
    int wait, sw, sh;
    if ((sscanf(a, "size:%dx%d", &sw, &sh) == 2 && sw > 0 && sh > 0) || script_event(a, &e, &wait)) continue;
    fprintf(stderr, "tpusim viz: --script: unknown action '%s'\n", a);
    return false;
  }
  return true;
}

int tpu_viz_app_run(tpu_viz *v, const tpu_viz_app_opts *o) {
  if (o->start) tpu_viz_seek(v, o->start);
  if (o->headless) return run_headless(v, o);
  char *script = NULL;
  if (o->script) {
    script = tpu_strdup(o->script);
    if (!script) { fprintf(stderr, "tpusim viz: out of memory\n"); return 1; }
    const bool ok = script_valid(script);
    tpu_free(script);
    if (!ok) return 2;
    if (!(script = tpu_strdup(o->script))) { fprintf(stderr, "tpusim viz: out of memory\n"); return 1; }
  }
  int rc = run_window(v, o, script);
  tpu_free(script);
  return rc;
}
