/*
** viz_gif.c -- an animated GIF writer (GIF89a, LZW, one fixed palette) for
** slide-ready exports of a headless cycle range (tpusim viz --gif FILE).
**
** The palette is the viewer's own colours first, so a GIF shows them
** exactly: every stall kind's (sim/stall.def, tpu_viz_stall_color), every
** pipeline span kind's, the cell states', the text and panel greys, and 49
** samples of the computing scale (blue through near-white to red); then a
** 5 x 6 x 5 cube for what lies between (antialiased text edges). A pixel of
** one of the named colours maps to it exactly (a hash); any other to the
** nearest palette entry by its 15-bit colour (a table built once per file).
** A colour cube alone turned near-white, light blue and light red cells
** into mauve and tan. Frames are gathered in memory and written by
** tpu_write_atomic at the end: whole or not at all.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_int.h"

enum { GIF_CLEAR = 256, GIF_EOI = 257, GIF_MAXCODE = 4096, GIF_HASH = 512 };

struct viz_gif {
  FILE *f;                           /* a memory stream over buf */
  char *buf; size_t buf_n;
  char path[4096];
  int w, h;
  bool bad;
  uint8_t *idx;                      /* w*h palette indices of the frame */
  int16_t *child;                    /* LZW dictionary: child[code*256 + byte], -1 = none */
  uint8_t blk[256]; int nblk;        /* the current data sub-block */
  uint32_t acc; int nacc;            /* bits not yet written, LSB first */
  uint32_t pal[256]; int npal;       /* the palette (0xffRRGGBB) */
  uint32_t key[GIF_HASH];            /* named colours -> index: open addressing, 0 = empty */
  uint8_t val[GIF_HASH];
  uint8_t lut[32768];                /* any other colour: nearest entry by 5-bit channels */
};

static size_t slot(const viz_gif *g, uint32_t c) {
  size_t h = (size_t)((c * 2654435761u) >> 23) & (GIF_HASH - 1);
  while (g->key[h] && g->key[h] != c) h = (h + 1) & (GIF_HASH - 1);
  return h;
}

/* Adds colour c (alpha forced opaque) unless present; named colours are
** also entered in the hash. Silently full at 256. */
static void add(viz_gif *g, uint32_t c, bool named) {
  c |= 0xff000000u;
  const size_t h = slot(g, c);
  if (g->key[h]) return;
  for (int i = 0; !named && i < g->npal; i++) if (g->pal[i] == c) return;
  if (g->npal == 256) return;
  if (named) { g->key[h] = c; g->val[h] = (uint8_t)g->npal; }
  g->pal[g->npal++] = c;
}

static void build_palette(viz_gif *g) {
  static const uint32_t UI[] = { 0xffffffffu, 0xff000000u, 0xffc0c0c0u, 0xffa0a0a0u, 0xff909090u, 0xff808080u,
    0xffd0d0d0u, 0xffe0e0e0u, 0xff6fa8dcu, 0xff3cb371u, 0xff202020u, 0xff262626u, 0xff404040u, 0xff101024u,
    TPU_VIZ_COLOR_IDLE, TPU_VIZ_COLOR_LOADING, TPU_VIZ_COLOR_HOLDING, TPU_VIZ_COLOR_BG, TPU_VIZ_COLOR_TICK };
  for (size_t i = 0; i < sizeof UI / sizeof UI[0]; i++) add(g, UI[i], true);
  for (int k = 0; k < TPU_SIM_NSTALL; k++) add(g, tpu_viz_stall_color(k), true);
  for (const char *k = "ORMXBCPSDIWT?"; *k; k++) add(g, tpu_viz_span_color(*k), true);
  for (int i = 0; i <= 48; i++) add(g, tpu_viz_value_color((float)(i - 24) / 24.0f, 1), true);
  for (int r = 0; r < 5; r++)
    for (int gr = 0; gr < 6; gr++)
      for (int b = 0; b < 5; b++)
        add(g, (uint32_t)(r * 255 / 4) << 16 | (uint32_t)(gr * 255 / 5) << 8 | (uint32_t)(b * 255 / 4), false);
  for (int c = 0; c < 32768; c++) {
    const int r = (c >> 10) * 255 / 31, gg = (c >> 5 & 31) * 255 / 31, b = (c & 31) * 255 / 31;
    int best = 0, bd = 1 << 30;
    for (int i = 0; i < g->npal; i++) {
      const int dr = r - (int)(g->pal[i] >> 16 & 255), dg = gg - (int)(g->pal[i] >> 8 & 255), db = b - (int)(g->pal[i] & 255);
      const int d = dr * dr + dg * dg + db * db;
      if (d < bd) { bd = d; best = i; }
    }
    g->lut[c] = (uint8_t)best;
  }
}

uint8_t viz_gif_index(const viz_gif *g, uint32_t argb) {
  argb |= 0xff000000u;
  const size_t h = slot(g, argb);
  if (g->key[h]) return g->val[h];
  return g->lut[(argb >> 9 & 0x7c00) | (argb >> 6 & 0x3e0) | (argb >> 3 & 0x1f)];
}

uint32_t viz_gif_color(const viz_gif *g, uint8_t i) { return i < g->npal ? g->pal[i] : 0xff000000u; }

static void put(viz_gif *g, const void *p, size_t n) {
  if (!g->bad && fwrite(p, 1, n, g->f) != n) g->bad = true;
}
static void put16(viz_gif *g, int v) { uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) }; put(g, b, 2); }

static void flush_block(viz_gif *g) {
  if (!g->nblk) return;
  uint8_t n = (uint8_t)g->nblk;
  put(g, &n, 1);
  put(g, g->blk, (size_t)g->nblk);
  g->nblk = 0;
}
static void emit(viz_gif *g, int code, int bits) {
  g->acc |= (uint32_t)code << g->nacc;
  g->nacc += bits;
  while (g->nacc >= 8) {
    g->blk[g->nblk++] = (uint8_t)g->acc;
    g->acc >>= 8;
    g->nacc -= 8;
    if (g->nblk == 255) flush_block(g);
  }
}

/* The frame's indices as LZW codes (minimum code size 8). */
static void lzw(viz_gif *g) {
  const size_t n = (size_t)g->w * (size_t)g->h;
  int next = GIF_EOI + 1, bits = 9, cur = g->idx[0];
  memset(g->child, 0xff, (size_t)GIF_MAXCODE * 256 * sizeof *g->child);
  emit(g, GIF_CLEAR, bits);
  for (size_t i = 1; i < n; i++) {
    const int k = g->idx[i], c = g->child[cur * 256 + k];
    if (c >= 0) { cur = c; continue; }
    emit(g, cur, bits);
    if (next < GIF_MAXCODE) {
      g->child[cur * 256 + k] = (int16_t)next;
      if (next++ == (1 << bits) && bits < 12) bits++;
    } else {                                       /* table full: start over */
      emit(g, GIF_CLEAR, bits);
      memset(g->child, 0xff, (size_t)GIF_MAXCODE * 256 * sizeof *g->child);
      next = GIF_EOI + 1;
      bits = 9;
    }
    cur = k;
  }
  emit(g, cur, bits);
  emit(g, GIF_EOI, next == (1 << bits) && bits < 12 ? bits + 1 : bits);
  if (g->nacc) emit(g, 0, 8 - g->nacc);
  flush_block(g);
  uint8_t z = 0;
  put(g, &z, 1);
}

viz_gif *viz_gif_open(const char *path, int w, int h, char *err, size_t errcap) {
  viz_gif *g = tpu_calloc(1, sizeof *g);
  if (g) { g->idx = tpu_malloc((size_t)w * (size_t)h); g->child = tpu_malloc((size_t)GIF_MAXCODE * 256 * 2); }
  if (!g || !g->idx || !g->child) {
    snprintf(err, errcap, "%s: out of memory", path);
    if (g) { tpu_free(g->idx); tpu_free(g->child); tpu_free(g); }
    return NULL;
  }
  g->w = w; g->h = h;
  snprintf(g->path, sizeof g->path, "%s", path);
  if (!(g->f = open_memstream(&g->buf, &g->buf_n))) {
    snprintf(err, errcap, "%s: out of memory", path);
    tpu_free(g->idx); tpu_free(g->child); tpu_free(g);
    return NULL;
  }
  put(g, "GIF89a", 6);
  put16(g, w); put16(g, h);
  const uint8_t lsd[3] = { 0xf7, 0, 0 };           /* global table of 256 entries */
  put(g, lsd, 3);
  build_palette(g);
  for (int i = 0; i < 256; i++) {
    const uint32_t c = i < g->npal ? g->pal[i] : 0;
    const uint8_t rgb[3] = { (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c };
    put(g, rgb, 3);
  }
  const uint8_t loop[19] = { 0x21, 0xff, 11, 'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0', 3, 1, 0, 0, 0 };
  put(g, loop, sizeof loop);                       /* loop forever */
  return g;
}

void viz_gif_frame(viz_gif *g, const uint32_t *px, int pitch, int delay_cs) {
  for (int y = 0; y < g->h; y++)
    for (int x = 0; x < g->w; x++) g->idx[(size_t)y * (size_t)g->w + (size_t)x] = viz_gif_index(g, px[(size_t)y * (size_t)pitch + (size_t)x]);
  const uint8_t gce[8] = { 0x21, 0xf9, 4, 0, (uint8_t)delay_cs, (uint8_t)(delay_cs >> 8), 0, 0 };
  put(g, gce, 8);
  const uint8_t sep = 0x2c;
  put(g, &sep, 1);
  put16(g, 0); put16(g, 0); put16(g, g->w); put16(g, g->h);
  const uint8_t flags_min[2] = { 0, 8 };
  put(g, flags_min, 2);
  lzw(g);
}

int viz_gif_close(viz_gif *g, bool keep, char *err, size_t errcap) {
  if (!g) return 0;
  const uint8_t trailer = 0x3b;
  put(g, &trailer, 1);
  if (fclose(g->f) != 0) g->bad = true;
  int rc = 0;
  if (keep && g->bad) {
    snprintf(err, errcap, "%s: cannot write: out of memory", g->path);
    rc = -1;
  } else if (keep && tpu_write_atomic(g->path, g->buf, g->buf_n) != 0) {
    snprintf(err, errcap, "%s: cannot write: %s", g->path, strerror(errno));
    rc = -1;
  }
  free(g->buf);
  tpu_free(g->idx); tpu_free(g->child); tpu_free(g);
  return rc;
}
