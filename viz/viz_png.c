/*
** viz_png.c -- a small PNG writer (8-bit RGB, no interlace) on zlib, for the
** headless frames and screenshots.
**
** Why not IMG_SavePNG: SDL2_image compresses at zlib's default level, which
** costs ~35 ms for a 1280x800 frame, so headless rendering could not keep
** 30 frames/s. Frames are mostly flat colors: level 1 with the Sub filter
** writes them 4-5x faster and about as small. SDL2_image still reads them
** back in the tests (an independent decoder).
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "viz/viz_int.h"

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n) {
  unsigned char hdr[8], crc[4];
  put32(hdr, (uint32_t)n);
  memcpy(hdr + 4, type, 4);
  uLong c = crc32(0L, (const Bytef *)type, 4);
  if (n) c = crc32(c, data, (uInt)n);
  put32(crc, (uint32_t)c);
  return fwrite(hdr, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) && fwrite(crc, 1, 4, f) == 4 ? 0 : -1;
}

int viz_png_write(const char *path, const uint32_t *px, int w, int h, int pitch, char *err, size_t errcap) {
  const size_t stride = (size_t)w * 3 + 1, raw_n = stride * (size_t)h;
  unsigned char *raw = tpu_malloc(raw_n);
  uLongf z_n = compressBound((uLong)raw_n);
  unsigned char *z = tpu_malloc(z_n);
  FILE *f = NULL;
  int rc = -1;
  if (!raw || !z) { snprintf(err, errcap, "%s: out of memory", path); goto out; }
  for (int y = 0; y < h; y++) {                 /* filter 1 (Sub): byte minus the one 3 to the left */
    unsigned char *o = raw + (size_t)y * stride;
    const uint32_t *row = px + (size_t)y * (size_t)pitch;
    o[0] = 1;
    uint32_t prev = 0;
    for (int x = 0; x < w; x++) {
      uint32_t p = row[x];
      o[1 + 3 * x] = (unsigned char)((p >> 16) - (prev >> 16));
      o[2 + 3 * x] = (unsigned char)((p >> 8) - (prev >> 8));
      o[3 + 3 * x] = (unsigned char)(p - prev);
      prev = p;
    }
  }
  if (compress2(z, &z_n, raw, (uLong)raw_n, 1) != Z_OK) { snprintf(err, errcap, "%s: zlib failed", path); goto out; }
  char *buf = NULL;
  size_t buf_n = 0;
  if (!(f = open_memstream(&buf, &buf_n))) { snprintf(err, errcap, "%s: out of memory", path); goto out; }
  unsigned char ihdr[13];
  put32(ihdr, (uint32_t)w); put32(ihdr + 4, (uint32_t)h);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = ihdr[11] = ihdr[12] = 0;   /* 8-bit RGB */
  int bad = fwrite("\x89PNG\r\n\x1a\n", 1, 8, f) != 8 || chunk(f, "IHDR", ihdr, 13) ||
            chunk(f, "IDAT", z, z_n) || chunk(f, "IEND", NULL, 0);
  if (fclose(f) != 0) bad = 1;
  if (bad) errno = ENOMEM;
  if (bad || tpu_write_atomic(path, buf, buf_n) != 0) {
    snprintf(err, errcap, "%s: cannot write: %s", path, strerror(errno));
    free(buf);
    goto out;
  }
  free(buf);
  rc = 0;
out:
  tpu_free(raw);
  tpu_free(z);
  return rc;
}
