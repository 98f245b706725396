/*
** check_datafeed_images.c -- datafeed's encoded images: JPEG and PNG decoded
** as TensorFlow decodes them, tf.image.resize's bilinear resize, a
** directory of class folders as Keras' image_dataset_from_directory reads
** it (its numpy shuffle and validation split), TFRecord Examples of encoded
** images, the costs the model charges for them, and every undecodable or
** truncated input named by file (and record).
**
** The tests make their own images: PNGs written with libpng (every value
** known, so decoded values are checked exactly), JPEGs written with libjpeg
** (checked against libjpeg's own decoding with TensorFlow's settings, and
** within a tolerance of the pixels encoded).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "datafeed/df_int.h"
#include "tests/test_util.h"

static char errbuf[1024];

static void setup(void) { tu_scratch("check_dfi"); }
#define tpath tu_path
static void mkdirs(const char *rel) {
  char p[512];
  const size_t root = strlen(tpath(""));
  snprintf(p, sizeof p, "%s", tpath(rel));
  for (char *q = p + root; *q; q++)
    if (*q == '/') { *q = 0; mkdir(p, 0700); *q = '/'; }
  mkdir(p, 0700);
}
static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}
static unsigned char *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n + 1);
  ck_assert_uint_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

/* {==================================================================
** PNG files of every color type: written here with libpng, every sample
** known
** ================================================================== */
typedef struct png_case {
  const char *name;
  int type, depth, interlace;   /* PNG_COLOR_TYPE_*, bits per sample, PNG_INTERLACE_* */
  bool trns;                    /* a tRNS chunk (grey: value 3; RGB: (3, 3, 3); palette: 3 entries) */
} png_case;

static int file_channels(int type) {
  return type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_PALETTE ? 1 : type == PNG_COLOR_TYPE_GA ? 2
       : type == PNG_COLOR_TYPE_RGB ? 3 : 4;
}
/* Sample k of pixel (x, y) as the file holds it (< 2^depth; a palette index < 8). */
static unsigned sample(const png_case *c, int x, int y, int k) {
  unsigned v = (unsigned)(x * 37 + y * 101 + k * 59 + (x * y) % 7);
  if (c->type == PNG_COLOR_TYPE_PALETTE) return v % 8;
  if ((x + y) % 5 == 0 && c->trns && k < 3) return 3;       /* some pixels take the tRNS colour */
  if ((x + y) % 3 == 0) return (1u << c->depth) - 1;        /* and the extremes */
  if ((x + y) % 4 == 0) return 0;
  return c->depth == 16 ? v * 613 % 65536 : v % (1u << c->depth);
}
static const png_color PALETTE[8] = { { 0, 0, 0 }, { 255, 255, 255 }, { 200, 10, 30 }, { 3, 3, 3 },
                                      { 17, 180, 240 }, { 90, 90, 90 }, { 255, 0, 255 }, { 12, 250, 7 } };
static const png_byte TRNS[3] = { 0, 128, 255 };

static void write_png(const char *path, const png_case *c, int w, int h) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  ck_assert(png && info);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, c->depth, c->type, c->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (c->type == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, PALETTE, 8);
  if (c->trns) {
    png_color_16 tc = { 0, 3, 3, 3, 3 };
    png_set_tRNS(png, info, TRNS, c->type == PNG_COLOR_TYPE_PALETTE ? 3 : 0, &tc);
  }
  png_write_info(png, info);
  if (c->depth < 8) png_set_packing(png);
  const int ch = file_channels(c->type), bps = c->depth == 16 ? 2 : 1;
  unsigned char *rows = malloc((size_t)w * (size_t)h * (size_t)ch * 2);
  png_bytep *rp = malloc((size_t)h * sizeof *rp);
  for (int y = 0; y < h; y++) {
    rp[y] = rows + (size_t)y * (size_t)w * (size_t)ch * (size_t)bps;
    for (int x = 0; x < w; x++)
      for (int k = 0; k < ch; k++) {
        unsigned v = sample(c, x, y, k);
        unsigned char *o = rp[y] + ((size_t)x * (size_t)ch + (size_t)k) * (size_t)bps;
        if (bps == 2) { o[0] = (unsigned char)(v >> 8); o[1] = (unsigned char)v; } else o[0] = (unsigned char)v;
      }
  }
  png_write_image(png, rp);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(f);
  free(rows);
  free(rp);
}

/* The pixel TensorFlow's decode_png(channels=C, dtype=uint8) gives, from
** the samples written: 16 bits cut to the high byte, grey of fewer bits
** scaled to 8, palettes looked up, tRNS as alpha, RGB to grey with
** libpng's integer weights of 32768 (0.299, 0.587 as png_set_rgb_to_gray
** truncates them: 9797, 19234 and 3737 for blue; 8-bit samples truncated,
** 16-bit ones rounded before their low byte goes), grey to
** RGB replicated, alpha added as 2^depth - 1 when absent. */
static unsigned expect_png(const png_case *c, int x, int y, int C, int k) {
  unsigned rgba[4];
  const bool color = c->type & PNG_COLOR_MASK_COLOR;
  if (c->type == PNG_COLOR_TYPE_PALETTE) {
    unsigned i = sample(c, x, y, 0);
    rgba[0] = PALETTE[i].red; rgba[1] = PALETTE[i].green; rgba[2] = PALETTE[i].blue;
    rgba[3] = c->trns && i < 3 ? TRNS[i] : 255;
  } else {
    unsigned s[4];
    for (int q = 0; q < file_channels(c->type); q++) {
      unsigned v = sample(c, x, y, q);
      s[q] = c->depth == 16 ? v >> 8 : c->depth < 8 ? v * 255 / ((1u << c->depth) - 1) : v;
    }
    bool is_trns = c->trns && sample(c, x, y, 0) == 3 && (!color || (sample(c, x, y, 1) == 3 && sample(c, x, y, 2) == 3));
    for (int q = 0; q < 3; q++) rgba[q] = color ? s[q] : s[0];
    rgba[3] = c->type & PNG_COLOR_MASK_ALPHA ? s[color ? 3 : 1] : c->trns ? (is_trns ? 0 : 255)
            : ((1u << c->depth) - 1) & 255;
  }
  if (C == 1) {
    if (!color && c->type != PNG_COLOR_TYPE_PALETTE) return rgba[0];
    if (c->depth == 16) {      /* libpng converts 16-bit samples before cutting them, rounding */
      unsigned r = sample(c, x, y, 0), g = sample(c, x, y, 1), b = sample(c, x, y, 2);
      return (r == g && g == b ? r : (9797 * r + 19234 * g + 3737 * b + 16384) >> 15) >> 8;
    }
    if (rgba[0] == rgba[1] && rgba[1] == rgba[2]) return rgba[0];
    return (9797 * rgba[0] + 19234 * rgba[1] + 3737 * rgba[2]) >> 15;
  }
  return rgba[k];
}

static const png_case PNGS[] = {
  { "grey 8", PNG_COLOR_TYPE_GRAY, 8, PNG_INTERLACE_NONE, false },
  { "grey 1", PNG_COLOR_TYPE_GRAY, 1, PNG_INTERLACE_NONE, false },
  { "grey 2", PNG_COLOR_TYPE_GRAY, 2, PNG_INTERLACE_NONE, false },
  { "grey 4 tRNS", PNG_COLOR_TYPE_GRAY, 4, PNG_INTERLACE_NONE, true },
  { "grey 16", PNG_COLOR_TYPE_GRAY, 16, PNG_INTERLACE_NONE, false },
  { "grey+alpha 8", PNG_COLOR_TYPE_GA, 8, PNG_INTERLACE_NONE, false },
  { "rgb 8", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, false },
  { "rgb 8 tRNS", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, true },
  { "rgb 16", PNG_COLOR_TYPE_RGB, 16, PNG_INTERLACE_NONE, false },
  { "rgb 8 Adam7", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_ADAM7, false },
  { "rgba 8", PNG_COLOR_TYPE_RGBA, 8, PNG_INTERLACE_NONE, false },
  { "rgba 16 Adam7", PNG_COLOR_TYPE_RGBA, 16, PNG_INTERLACE_ADAM7, false },
  { "palette 8", PNG_COLOR_TYPE_PALETTE, 8, PNG_INTERLACE_NONE, false },
  { "palette 4 tRNS", PNG_COLOR_TYPE_PALETTE, 4, PNG_INTERLACE_NONE, true },
};

START_TEST(Png_of_every_color_type_decodes_to_1_3_and_4_channels_as_tensorflow) {
  const png_case *c = &PNGS[_i];
  const int w = 13, h = 9;      /* odd sizes: Adam7's passes and sub-byte rows end mid-byte */
  write_png(tpath("a.png"), c, w, h);
  size_t n;
  unsigned char *b = read_bytes(tpath("a.png"), &n);
  ck_assert_int_eq(df_image_sniff(b, n), DF_IMG_PNG);
  for (int C = 1; C <= 4; C++) {
    if (C == 2) continue;
    uint8_t *px;
    int ph, pw;
    ck_assert_msg(df_image_decode(b, n, C, &px, &ph, &pw, errbuf, sizeof errbuf) == TPU_OK, "%s: %s", c->name, errbuf);
    ck_assert_int_eq(ph, h);
    ck_assert_int_eq(pw, w);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int k = 0; k < C; k++) {
          unsigned want = expect_png(c, x, y, C, k), got = px[((size_t)y * (size_t)w + (size_t)x) * (size_t)C + (size_t)k];
          ck_assert_msg(want == got, "%s, %d channels, pixel (%d, %d) channel %d: expected %u, got %u", c->name, C, x, y, k,
                        want, got);
        }
    tpu_free(px);
  }
  free(b);
}
END_TEST

/* {==================================================================
** JPEG: written with libjpeg, checked against libjpeg's own decoding with
** TensorFlow's settings (JDCT_IFAST, fancy upsampling)
** ================================================================== */
/* A smooth test image of w x h x comps (0..255). */
static uint8_t smooth(int x, int y, int k) { return (uint8_t)(40 + 3 * x + 2 * y + 50 * k + (x * y) % 5); }

/* JPEG bytes (malloc'd) of the smooth image in 'in' space (JCS_RGB, JCS_GRAYSCALE, JCS_CMYK). */
static unsigned char *write_jpeg(int w, int h, J_COLOR_SPACE in, int quality, unsigned long *len) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr je;
  ci.err = jpeg_std_error(&je);
  jpeg_create_compress(&ci);
  unsigned char *buf = NULL;
  jpeg_mem_dest(&ci, &buf, len);
  ci.image_width = (JDIMENSION)w;
  ci.image_height = (JDIMENSION)h;
  ci.in_color_space = in;
  ci.input_components = in == JCS_GRAYSCALE ? 1 : in == JCS_CMYK ? 4 : 3;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, quality, TRUE);
  jpeg_start_compress(&ci, TRUE);
  uint8_t *row = malloc((size_t)w * 4);
  while (ci.next_scanline < ci.image_height) {
    for (int x = 0; x < w; x++)
      for (int k = 0; k < ci.input_components; k++) row[x * ci.input_components + k] = smooth(x, (int)ci.next_scanline, k);
    JSAMPROW rp = row;
    jpeg_write_scanlines(&ci, &rp, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  free(row);
  unsigned char *out = malloc(*len);     /* libjpeg's buffer goes back to libc's free */
  memcpy(out, buf, *len);
  free(buf);
  return out;
}

/* libjpeg's own decoding to 'out' space with TensorFlow's settings
** (malloc'd, h x w x components); CMYK as decoded, for the test to convert. */
static uint8_t *ref_jpeg(const unsigned char *b, unsigned long n, J_COLOR_SPACE out, int *comps, bool *adobe) {
  struct jpeg_decompress_struct ci;
  struct jpeg_error_mgr je;
  ci.err = jpeg_std_error(&je);
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, b, n);
  jpeg_read_header(&ci, TRUE);
  ci.out_color_space = out;
  ci.dct_method = JDCT_IFAST;
  ci.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&ci);
  *comps = ci.output_components;
  uint8_t *px = malloc((size_t)ci.output_width * ci.output_height * (size_t)*comps);
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW rp = px + (size_t)ci.output_scanline * ci.output_width * (size_t)*comps;
    jpeg_read_scanlines(&ci, &rp, 1);
  }
  *adobe = ci.saw_Adobe_marker;
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return px;
}

START_TEST(Jpeg_decodes_as_libjpeg_with_tensorflows_defaults_and_near_the_pixels_encoded) {
  static const struct { J_COLOR_SPACE in; const char *name; } cases[] = {
    { JCS_RGB, "rgb" }, { JCS_GRAYSCALE, "grey" }, { JCS_CMYK, "cmyk (Adobe)" } };
  const int w = 21, h = 14;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    unsigned long n;
    unsigned char *b = write_jpeg(w, h, cases[ci].in, 95, &n);
    ck_assert_int_eq(df_image_sniff(b, n), DF_IMG_JPEG);
    for (int C = 1; C <= 3; C += 2) {
      if (cases[ci].in == JCS_CMYK && C == 1) {       /* libjpeg has no CMYK -> grey: refused, as in TensorFlow */
        uint8_t *px;
        int ph, pw;
        ck_assert(df_image_decode(b, n, C, &px, &ph, &pw, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
        continue;
      }
      uint8_t *px;
      int ph, pw, rc;
      bool adobe;
      ck_assert_msg(df_image_decode(b, n, C, &px, &ph, &pw, errbuf, sizeof errbuf) == TPU_OK, "%s: %s", cases[ci].name, errbuf);
      ck_assert(ph == h && pw == w);
      uint8_t *ref = ref_jpeg(b, n, C == 1 ? JCS_GRAYSCALE : cases[ci].in == JCS_CMYK ? JCS_CMYK : JCS_RGB, &rc, &adobe);
      int maxdiff = 0;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          for (int k = 0; k < C; k++) {
            size_t at = (size_t)(y * w + x);
            unsigned want;
            if (rc == 4) {      /* TensorFlow's CMYK -> RGB, with the Adobe marker libjpeg writes for CMYK */
              ck_assert(adobe);
              want = (unsigned)(ref[at * 4 + 3] * ref[at * 4 + (size_t)k] / 255);
            } else {
              want = ref[at * (size_t)C + (size_t)k];
            }
            unsigned got = px[at * (size_t)C + (size_t)k];
            ck_assert_msg(want == got, "%s, %d channels, (%d, %d) channel %d: libjpeg gives %u, we %u", cases[ci].name, C,
                          x, y, k, want, got);
            /* near what was encoded (the grey of an RGB image is its luma, not checked against a channel) */
            if (cases[ci].in == JCS_RGB && C == 3) {
              int d = abs((int)got - (int)smooth(x, y, k));
              if (d > maxdiff) maxdiff = d;
            }
            if (cases[ci].in == JCS_GRAYSCALE) {
              int d = abs((int)got - (int)smooth(x, y, 0));
              if (d > maxdiff) maxdiff = d;
            }
          }
      ck_assert_msg(maxdiff <= 8, "%s, %d channels: a value %d away from the pixel encoded", cases[ci].name, C, maxdiff);
      free(ref);
      tpu_free(px);
    }
    /* 4 channels: no alpha in a JPEG (tf.io.decode_image refuses it too) */
    uint8_t *px;
    int ph, pw;
    ck_assert(df_image_decode(b, n, 4, &px, &ph, &pw, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
    ck_assert_msg(strstr(errbuf, "a JPEG image has no alpha channel") != NULL, "%s", errbuf);
    free(b);
  }
}
END_TEST

/* {==================================================================
** Bad images, resizing, numpy's shuffle
** ================================================================== */
START_TEST(Undecodable_images_say_what_is_wrong) {
  unsigned long jn;
  unsigned char *jpg = write_jpeg(16, 16, JCS_RGB, 90, &jn);
  static const png_case rgb = { "rgb", PNG_COLOR_TYPE_RGB, 8, PNG_INTERLACE_NONE, false };
  write_png(tpath("p.png"), &rgb, 16, 16);
  size_t pn;
  unsigned char *png = read_bytes(tpath("p.png"), &pn);
  unsigned char *bad = malloc(pn > jn ? pn : jn);
  struct { const char *what; const unsigned char *p; size_t n; const char *says; } cases[5];
  uint8_t *px;
  int h, w;
  /* a JPEG cut in half: TensorFlow's decoder does not recover truncated data either */
  ck_assert(df_image_decode(jpg, jn / 2, 3, &px, &h, &w, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "undecodable JPEG data: Premature end of JPEG file") != NULL, "%s", errbuf);
  /* a JPEG whose header is spoiled */
  memcpy(bad, jpg, jn);
  for (int i = 4; i < 40; i++) bad[i] = 0x55;
  ck_assert(df_image_decode(bad, jn, 3, &px, &h, &w, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "undecodable JPEG data") != NULL, "%s", errbuf);
  /* a PNG with a byte of its image data changed (zlib's check or the chunk's CRC fails), and one cut short */
  memcpy(bad, png, pn);
  bad[pn - 20] ^= 0x40;
  ck_assert(df_image_decode(bad, pn, 3, &px, &h, &w, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "undecodable PNG data: IDAT: ") != NULL, "%s", errbuf);
  ck_assert(df_image_decode(png, pn - 30, 3, &px, &h, &w, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "undecodable PNG data: the data ends early (truncated)") != NULL, "%s", errbuf);
  /* formats tf.io.decode_image reads and we do not, and no image at all */
  cases[0].p = (const unsigned char *)"GIF89a\x10\x00\x10\x00"; cases[0].n = 10; cases[0].says = "a GIF image: tpusim decodes JPEG and PNG only";
  cases[1].p = (const unsigned char *)"BM\x36\x03\x00\x00\x00\x00"; cases[1].n = 8; cases[1].says = "a BMP image";
  cases[2].p = (const unsigned char *)"RIFF\x24\x00\x00\x00WEBPVP8 "; cases[2].n = 16; cases[2].says = "a WebP image";
  cases[3].p = (const unsigned char *)"hello, world"; cases[3].n = 12; cases[3].says = "not an image: 12 bytes";
  cases[4].p = png; cases[4].n = 0; cases[4].says = "not an image: 0 bytes";
  for (int i = 0; i < 5; i++) {
    ck_assert(df_image_decode(cases[i].p, cases[i].n, 3, &px, &h, &w, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
    ck_assert_msg(strstr(errbuf, cases[i].says) != NULL, "%s", errbuf);
  }
  free(jpg); free(png); free(bad);
}
END_TEST

START_TEST(Bilinear_resize_is_tf_image_resize_on_hand_derived_cases) {
  /* tf.image.resize(bilinear): the source coordinate of output i is
  ** (i + 0.5) * in/out - 0.5, lower neighbour max(floor, 0), upper
  ** min(ceil, in-1), weight the fraction. */
  uint8_t out[64];
  /* 2x2 -> 4x4 (scale 0.5): coordinates -0.25, 0.25, 0.75, 1.25, i.e. (0,0,t), (0,1,.25), (0,1,.75), (1,1,t).
  ** Rows [0 100] and [200 50]: row 0 gives 0 25 75 100, row 1 gives 200 162.5 87.5 50; output row 1 is
  ** row0 + (row1 - row0) * .25: 50, 59.375, 78.125, 87.5 -> 50 59 78 88 (halves up); row 2 with .75:
  ** 150, 128.125, 84.375, 62.5 -> 150 128 84 63. */
  const uint8_t in22[4] = { 0, 100, 200, 50 };
  ck_assert_int_eq(df_image_resize(in22, 2, 2, 1, out, 4, 4), TPU_OK);
  const uint8_t want44[16] = { 0, 25, 75, 100, 50, 59, 78, 88, 150, 128, 84, 63, 200, 163, 88, 50 };
  for (int i = 0; i < 16; i++) ck_assert_msg(out[i] == want44[i], "2x2->4x4 [%d]: %u, expected %u", i, out[i], want44[i]);
  /* 4x4 -> 2x2 (scale 2): coordinates 0.5 and 2.5, the means of the 2x2 blocks of 0..15: 2.5 4.5 10.5 12.5 */
  uint8_t in44[16];
  for (int i = 0; i < 16; i++) in44[i] = (uint8_t)i;
  ck_assert_int_eq(df_image_resize(in44, 4, 4, 1, out, 2, 2), TPU_OK);
  const uint8_t want22[4] = { 3, 5, 11, 13 };
  for (int i = 0; i < 4; i++) ck_assert_msg(out[i] == want22[i], "4x4->2x2 [%d]: %u", i, out[i]);
  /* 1x3 -> 1x2, 3 channels (scale 1.5): coordinates 0.25 (0,1,.25) and 1.75 (1,2,.75); the height stays */
  const uint8_t in13[9] = { 0, 255, 10, 40, 255, 20, 200, 0, 30 };
  ck_assert_int_eq(df_image_resize(in13, 1, 3, 3, out, 1, 2), TPU_OK);
  const uint8_t want12[6] = { 10, 255, 13, 160, 64, 28 };   /* 10, 255, 12.5 | 160, 63.75, 27.5 */
  for (int i = 0; i < 6; i++) ck_assert_msg(out[i] == want12[i], "1x3->1x2 [%d]: %u", i, out[i]);
  /* the same size is a copy */
  ck_assert_int_eq(df_image_resize(in44, 4, 4, 1, out, 4, 4), TPU_OK);
  ck_assert(!memcmp(out, in44, 16));
}
END_TEST

START_TEST(Numpy_legacy_shuffle_and_keras_validation_split) {
  /* numpy 1.24's np.random.RandomState(seed).shuffle(list(range(n))): the
  ** first values, and sum(i * v) mod 1e9+7 over the whole list */
  static const struct { uint32_t seed; int64_t n; int64_t first[12]; uint64_t sum; } cases[] = {
    { 123, 12, { 5, 0, 4, 9, 8, 7, 10, 3, 1, 6, 11, 2 }, 377 },
    { 0, 10, { 2, 8, 4, 9, 1, 6, 7, 3, 0, 5 }, 185 },
    { 7, 1000, { 778, 334, 271, 802, 216, 408, 812, 94, 487, 170, 24, 242 }, 246202311 },
    { 4294967295u, 5, { 4, 1, 0, 2, 3 }, 19 },
    { 42, 100000, { 75721, 80184, 19864, 76699, 92991, 76434, 84004, 80917, 60767, 50074, 27701, 42141 }, 127578366 },
  };
  int64_t *ids = malloc(100000 * sizeof *ids);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (int64_t i = 0; i < cases[c].n; i++) ids[i] = i;
    df_numpy_shuffle(ids, cases[c].n, cases[c].seed);
    for (int64_t i = 0; i < 12 && i < cases[c].n; i++) TU_EQ_U64(cases[c].first[i], ids[i]);
    uint64_t sum = 0;
    for (int64_t i = 0; i < cases[c].n; i++) sum = (sum + (uint64_t)i * (uint64_t)ids[i]) % 1000000007u;
    TU_EQ_U64(cases[c].sum, sum);
  }
  /* Keras: the last int(0.25 * 12) = 3 of the shuffled order are validation, the rest training */
  TU_EQ_U64(9, df_split(12, 0.25, false, true, 123, ids));
  for (int i = 0; i < 9; i++) TU_EQ_U64(cases[0].first[i], ids[i]);
  TU_EQ_U64(3, df_split(12, 0.25, true, true, 123, ids));
  for (int i = 0; i < 3; i++) TU_EQ_U64(cases[0].first[9 + i], ids[i]);
  TU_EQ_U64(2, df_split(12, 0.25, true, false, 123, ids + 64) - 1);   /* unshuffled: 9, 10, 11 */
  TU_EQ_U64(9, ids[64]);
  ck_assert(df_split(3, 0.2, true, true, 1, ids) < 0);      /* int(0.6) = 0: an empty subset */
  free(ids);
}
END_TEST

/* {==================================================================
** A directory of class folders (image_dataset_from_directory)
** ================================================================== */
/* PNG cases of the directory: exact rgb 6x4 images whose pixels say which file they are. */
static void put_png_rgb(const char *rel, int w, int h, int id) {
  FILE *f = fopen(tpath(rel), "wb");
  ck_assert_ptr_nonnull(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  uint8_t row[3 * 64];
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w * 3; x++) row[x] = (uint8_t)(id * 16 + y * 3 + x);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(f);
}
static uint8_t dir_px(int id, int y, int xk) { return (uint8_t)(id * 16 + y * 3 + xk); }

/* The tree: classes b_dogs (a subfolder 'more' and 'more-x': Keras sorts
** the walk's roots, so 'more' before 'more-x'), a_cats (a .JPG in capitals
** counts, notes.txt does not), c_empty (a class with no files), .hidden
** (not a class). Files in Keras' order, unshuffled:
**   0 a_cats/a.png, 1 a_cats/b.JPG (a JPEG), 2 a_cats/c.png,
**   3 b_dogs/z.png, 4 b_dogs/more/y.png, 5 b_dogs/more-x/x.png */
static void make_tree(void) {
  mkdirs("d/a_cats"); mkdirs("d/b_dogs/more"); mkdirs("d/b_dogs/more-x"); mkdirs("d/c_empty"); mkdirs("d/.hidden");
  put_png_rgb("d/a_cats/a.png", 6, 4, 0);
  unsigned long jn;
  unsigned char *jpg = write_jpeg(6, 4, JCS_RGB, 95, &jn);
  write_bytes(tpath("d/a_cats/b.JPG"), jpg, jn);
  free(jpg);
  put_png_rgb("d/a_cats/c.png", 6, 4, 2);
  write_bytes(tpath("d/a_cats/notes.txt"), "not an image", 12);
  put_png_rgb("d/b_dogs/z.png", 6, 4, 3);
  put_png_rgb("d/b_dogs/more/y.png", 6, 4, 4);
  put_png_rgb("d/b_dogs/more-x/x.png", 3, 2, 5);     /* resized to 6x4 (image_size) */
  put_png_rgb("d/.hidden/h.png", 6, 4, 9);
}

static tpu_df_source images_source(void) {
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_IMAGES;
  src.dir = tpath("d");
  src.height = 4; src.width = 6; src.channels = 3;
  return src;
}
static tpu_df_spec *spec_of(tpu_df_source src, int batch) {
  tpu_df_spec *s;
  ck_assert_int_eq(tpu_df_spec_create(&s), TPU_OK);
  ck_assert_msg(tpu_df_spec_set_source(s, &src) == TPU_OK, "%s", tpu_df_spec_errmsg(s));
  ck_assert_int_eq(tpu_df_spec_batch(s, batch, false), TPU_OK);
  return s;
}

/* The element of file 'id' (make_tree's numbering) in row r of batch b. */
static void expect_file(const tpu_df_batch *b, int r, int id, const uint8_t *jpeg_ref) {
  const int label = id < 3 ? 0 : 1;
  ck_assert_msg(b->y[r] == label, "row %d: label %d, expected %d (file %d)", r, b->y[r], label, id);
  const float *x = b->x + (size_t)r * 72;
  uint8_t small[18], big[72];
  for (int y = 0; y < 2; y++) for (int xk = 0; xk < 9; xk++) small[y * 9 + xk] = dir_px(5, y, xk);
  ck_assert_int_eq(df_image_resize(small, 2, 3, 3, big, 4, 6), TPU_OK);
  for (int y = 0; y < 4; y++)
    for (int xk = 0; xk < 18; xk++) {
      float want = id == 1 ? jpeg_ref[y * 18 + xk] : id == 5 ? big[y * 18 + xk] : dir_px(id, y, xk);
      ck_assert_msg(x[y * 18 + xk] == want, "file %d, (%d, %d): %g, expected %g", id, y, xk, (double)x[y * 18 + xk], (double)want);
    }
}

START_TEST(Image_folders_read_as_keras_classes_files_and_split) {
  make_tree();
  size_t jn;
  unsigned char *jb = read_bytes(tpath("d/a_cats/b.JPG"), &jn);
  int rc;
  bool adobe;
  uint8_t *jref = ref_jpeg(jb, jn, JCS_RGB, &rc, &adobe);
  free(jb);
  /* shuffle=False: classes sorted, each class's walk in order; 3 classes (c_empty counts, .hidden does not) */
  tpu_df_source src = images_source();
  src.no_shuffle = true;
  tpu_df_spec *s = spec_of(src, 6);
  tpu_df *df;
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  tpu_df_info in;
  tpu_df_get_info(df, &in);
  ck_assert_int_eq(in.classes, 3);
  ck_assert(in.height == 4 && in.width == 6 && in.channels == 3 && in.elements == 6);
  tpu_df_batch b;
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 6);
  for (int r = 0; r < 6; r++) expect_file(&b, r, r, jref);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  /* the model's sizes: an element and a file per image, the files' mean size */
  df_img_index ix;
  ck_assert_int_eq(df_images_index(&src, &ix, errbuf, sizeof errbuf), TPU_OK);
  uint64_t bytes = 0;
  for (int i = 0; i < 6; i++) { struct stat sb; ck_assert_int_eq(stat(ix.paths[i], &sb), 0); bytes += (uint64_t)sb.st_size; }
  TU_EQ_U64(bytes, ix.bytes);
  ck_assert_msg(strstr(ix.paths[4], "d/b_dogs/more/y.png") != NULL, "%s", ix.paths[4]);
  df_images_index_free(&ix);
  /* shuffle=True, seed 123, validation_split 0.5 (as Keras: numpy's
  ** RandomState(123).shuffle of 6 files is [1, 3, 4, 0, 2, 5]; the last int(0.5 * 6) = 3 are validation) */
  static const int perm[6] = { 1, 3, 4, 0, 2, 5 };
  int64_t ids[6] = { 0, 1, 2, 3, 4, 5 };
  df_numpy_shuffle(ids, 6, 123);
  for (int i = 0; i < 6; i++) TU_EQ_U64(perm[i], ids[i]);
  for (int v = 0; v < 2; v++) {
    src = images_source();
    src.seed = 123;
    src.validation_split = 0.5;
    src.test_split = v;
    s = spec_of(src, 3);
    ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
    ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 3);
    for (int r = 0; r < 3; r++) expect_file(&b, r, perm[v * 3 + r], jref);
    tpu_df_close(df);
    tpu_df_spec_destroy(s);
  }
  /* class_names: those folders only, in the order given */
  src = images_source();
  src.no_shuffle = true;
  const char *names[1] = { "b_dogs" };
  src.class_names = names; src.nclass_names = 1;
  s = spec_of(src, 3);
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 3);
  for (int r = 0; r < 3; r++) ck_assert_int_eq(b.y[r], 0);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  names[0] = "nope";
  s = spec_of(src, 3);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "source.class_names: 'nope' is not a class folder there") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
  free(jref);
}
END_TEST

START_TEST(A_bad_image_in_a_folder_is_named_by_its_path) {
  make_tree();
  static const struct { const char *file; const void *bytes; size_t n; const char *says; } cases[] = {
    { "d/b_dogs/more/y.png", "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16, "d/b_dogs/more/y.png: undecodable PNG data" },
    { "d/a_cats/a.png", "GIF89a\x01\x00\x01\x00", 10, "d/a_cats/a.png: a GIF image: tpusim decodes JPEG and PNG only" },
    { "d/b_dogs/w.gif", "GIF89a\x01\x00\x01\x00", 10, "d/b_dogs/w.gif: a GIF image" },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    make_tree();
    write_bytes(tpath(cases[c].file), cases[c].bytes, cases[c].n);
    tpu_df_source src = images_source();
    tpu_df_spec *s = spec_of(src, 2);
    tpu_df *df;
    ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
    ck_assert_msg(strstr(errbuf, cases[c].says) != NULL, "%s", errbuf);
    tpu_df_spec_destroy(s);
    unlink(tpath(cases[c].file));
  }
  /* a truncated JPEG */
  make_tree();
  size_t n;
  unsigned char *b = read_bytes(tpath("d/a_cats/b.JPG"), &n);
  write_bytes(tpath("d/a_cats/b.JPG"), b, n - 40);
  free(b);
  tpu_df_spec *s = spec_of(images_source(), 2);
  tpu_df *df;
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "d/a_cats/b.JPG: undecodable JPEG data: Premature end of JPEG file") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
  /* no images at all, and a split that leaves nothing */
  mkdirs("e/x");
  tpu_df_source src = images_source();
  src.dir = tpath("e");
  s = spec_of(src, 2);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "no images found in 1 class folders") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
  src = images_source();
  src.validation_split = 0.1;
  src.test_split = true;
  s = spec_of(src, 2);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "validation_split 0.1 of 6 images leaves the validation subset empty") != NULL, "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

/* {==================================================================
** TFRecord Examples of encoded images (the seed's Flowers layout)
** ================================================================== */
static uint32_t t_mask(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

typedef struct tbuf { unsigned char *b; size_t n, cap; } tbuf;
static void t_put(tbuf *t, const void *p, size_t n) {
  if (t->n + n > t->cap) { t->cap = (t->n + n) * 2 + 64; t->b = realloc(t->b, t->cap); }
  memcpy(t->b + t->n, p, n);
  t->n += n;
}
static void t_varint(tbuf *t, uint64_t v) {
  unsigned char c;
  while (v >= 0x80) { c = (unsigned char)((v & 0x7f) | 0x80); t_put(t, &c, 1); v >>= 7; }
  c = (unsigned char)v;
  t_put(t, &c, 1);
}
static void t_len(tbuf *t, int field, const void *p, size_t n) {
  t_varint(t, (uint64_t)field << 3 | 2);
  t_varint(t, n);
  t_put(t, p, n);
}
/* A Features map entry 'key' of list kind 'list' (1 bytes, 2 float, 3 int64) whose list message is body. */
static void t_feature(tbuf *feats, const char *key, int list, const tbuf *body) {
  tbuf f = { 0 }, e = { 0 };
  t_len(&f, list, body->b, body->n);
  t_len(&e, 1, key, strlen(key));
  t_len(&e, 2, f.b, f.n);
  t_len(feats, 1, e.b, e.n);
  free(f.b); free(e.b);
}
/* The Flowers TFRecords' Example: image (encoded bytes), class (int64),
** label (the class name, bytes), size (int64 [h, w]), one_hot_class (floats). */
static void flowers_example(tbuf *ex, const unsigned char *img, size_t n, int cls) {
  static const char *const names[] = { "daisy", "dandelion", "roses", "sunflowers", "tulips" };
  tbuf feats = { 0 }, l = { 0 };
  t_len(&l, 1, img, n);
  t_feature(&feats, "image", 1, &l);
  l.n = 0;
  t_varint(&l, 1 << 3); t_varint(&l, (uint64_t)cls);
  t_feature(&feats, "class", 3, &l);
  l.n = 0;
  t_len(&l, 1, names[cls], strlen(names[cls]));
  t_feature(&feats, "label", 1, &l);
  l.n = 0;
  tbuf v = { 0 };
  t_varint(&v, 8); t_varint(&v, 6);
  t_len(&l, 1, v.b, v.n);
  t_feature(&feats, "size", 3, &l);
  l.n = 0;
  float oh[5] = { 0 };
  oh[cls] = 1;
  t_len(&l, 1, oh, sizeof oh);
  t_feature(&feats, "one_hot_class", 2, &l);
  ex->n = 0;
  t_len(ex, 1, feats.b, feats.n);
  free(feats.b); free(l.b); free(v.b);
}
static void t_record(FILE *f, const tbuf *ex) {
  unsigned char h[12], t[4];
  uint64_t len = ex->n;
  for (int k = 0; k < 8; k++) h[k] = (unsigned char)(len >> (8 * k));
  uint32_t c = t_mask(tu_crc32c(h, 8)), dc = t_mask(tu_crc32c(ex->b, ex->n));
  for (int k = 0; k < 4; k++) { h[8 + k] = (unsigned char)(c >> (8 * k)); t[k] = (unsigned char)(dc >> (8 * k)); }
  fwrite(h, 1, 12, f); fwrite(ex->b, 1, ex->n, f); fwrite(t, 1, 4, f);
}

/* Record r of flowers.tfrecord: even r a PNG of 6x8 rgb (put_png_rgb's id r), odd r a JPEG of the smooth
** image (8x6 rgb); class r % 5. Record 'bad' holds the first 'bad_len' bytes of its image. */
static void write_flowers(const char *name, int n, int bad, size_t bad_len) {
  unsigned long jn;
  unsigned char *jpg = write_jpeg(8, 6, JCS_RGB, 95, &jn);
  FILE *f = fopen(tpath(name), "wb");
  tbuf ex = { 0 };
  for (int r = 0; r < n; r++) {
    size_t pn = jn;
    unsigned char *img = jpg;
    if (r % 2 == 0) { put_png_rgb("tmp.png", 8, 6, r); img = read_bytes(tpath("tmp.png"), &pn); }
    flowers_example(&ex, img, r == bad ? bad_len : pn, r % 5);
    t_record(f, &ex);
    if (img != jpg) free(img);
  }
  fclose(f);
  free(ex.b);
  free(jpg);
}

START_TEST(Tfrecord_examples_of_jpeg_and_png_images_decode_every_record) {
  write_flowers("flowers.tfrecord", 7, -1, 0);
  unsigned long jn;
  unsigned char *jpg = write_jpeg(8, 6, JCS_RGB, 95, &jn);
  int rc;
  bool adobe;
  uint8_t *jref = ref_jpeg(jpg, jn, JCS_RGB, &rc, &adobe);
  free(jpg);
  const char *files[1] = { tpath("flowers.tfrecord") };
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_TFRECORD;
  src.files = files; src.nfiles = 1;
  src.height = 6; src.width = 8; src.channels = 3; src.classes = 5;
  tpu_df_spec *s = spec_of(src, 7);
  tpu_df *df;
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  tpu_df_batch b;
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 7);
  for (int r = 0; r < 7; r++) {
    ck_assert_int_eq(b.y[r], r % 5);              /* the int64 'class' (the Flowers 'label' is the name, bytes) */
    for (int i = 0; i < 144; i++) {
      float want = r % 2 ? jref[i] : dir_px(r, i / 24, i % 24);
      ck_assert_msg(b.x[r * 144 + i] == want, "record %d value %d: %g, expected %g", r, i, (double)b.x[r * 144 + i], (double)want);
    }
  }
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  /* another size: refused unless resized (then as tf.image.resize: record 0 checked by hand's rule) */
  src.height = 3; src.width = 4;
  s = spec_of(src, 7);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "flowers.tfrecord: record 0: feature 'image': a PNG image of 6x8; the source's shape is 3x4") != NULL,
                "%s", errbuf);
  tpu_df_spec_destroy(s);
  src.resize = true;
  s = spec_of(src, 7);
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 7);
  uint8_t full[144], half[36];
  for (int i = 0; i < 144; i++) full[i] = dir_px(0, i / 24, i % 24);
  ck_assert_int_eq(df_image_resize(full, 6, 8, 3, half, 3, 4), TPU_OK);
  /* 6x8 -> 3x4 is scale 2: each value the mean of a 2x2 block (halves up) */
  for (int i = 0; i < 36; i++) {
    int y = i / 12, xk = i % 12, x = xk / 3, k = xk % 3;
    int sum = full[(2 * y) * 24 + (2 * x) * 3 + k] + full[(2 * y) * 24 + (2 * x + 1) * 3 + k] +
              full[(2 * y + 1) * 24 + (2 * x) * 3 + k] + full[(2 * y + 1) * 24 + (2 * x + 1) * 3 + k];
    ck_assert_int_eq(half[i], (sum + 2) / 4);
    ck_assert(b.x[i] == half[i]);
  }
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  /* a validation split of the records (numpy's RandomState(5) order, kept in file order) */
  int64_t ids[7];
  TU_EQ_U64(2, df_split(7, 0.3, true, true, 5, ids));
  src.height = 6; src.width = 8; src.resize = false;
  src.validation_split = 0.3; src.test_split = true; src.seed = 5;
  s = spec_of(src, 7);
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 2);
  int64_t lo = ids[0] < ids[1] ? ids[0] : ids[1], hi = ids[0] ^ ids[1] ^ lo;
  ck_assert_int_eq(b.y[0], lo % 5);
  ck_assert_int_eq(b.y[1], hi % 5);
  tpu_df_close(df);
  int64_t recs;
  uint64_t bytes;
  ck_assert_int_eq(df_tfrecord_count(&src, &recs, &bytes, errbuf, sizeof errbuf), TPU_OK);
  TU_EQ_U64(2, recs);
  tpu_df_spec_destroy(s);
  free(jref);
}
END_TEST

START_TEST(A_bad_image_in_a_tfrecord_is_named_by_file_and_record) {
  /* record 3 (a JPEG) cut to 200 bytes inside a sound record: the framing holds, the image does not */
  write_flowers("f.tfrecord", 5, 3, 200);
  const char *files[1] = { tpath("f.tfrecord") };
  tpu_df_source src = tpu_df_source_default();
  src.kind = TPU_DF_SRC_TFRECORD;
  src.files = files; src.nfiles = 1;
  src.height = 6; src.width = 8; src.channels = 3;
  tpu_df_spec *s = spec_of(src, 5);
  tpu_df *df;
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "f.tfrecord: record 3: feature 'image': undecodable JPEG data: Premature end of JPEG file") != NULL,
                "%s", errbuf);
  /* the same for any number of decoding threads: the lowest bad record is named */
  write_flowers("f.tfrecord", 9, 3, 200);
  size_t n;
  unsigned char *b = read_bytes(tpath("f.tfrecord"), &n);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "record 3: feature 'image'") != NULL, "%s", errbuf);
  /* the file cut inside record 4: a truncated record */
  write_flowers("f.tfrecord", 5, -1, 0);
  free(b);
  b = read_bytes(tpath("f.tfrecord"), &n);
  write_bytes(tpath("f.tfrecord"), b, n - 30);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "f.tfrecord: record 4: truncated (") != NULL, "%s", errbuf);
  free(b);
  tpu_df_spec_destroy(s);
  /* an Example with neither an int64 'label' nor a 'class' */
  FILE *f = fopen(tpath("g.tfrecord"), "wb");
  tbuf ex = { 0 }, feats = { 0 }, l = { 0 };
  t_len(&l, 1, "\x89PNG", 4);
  t_feature(&feats, "image", 1, &l);
  l.n = 0;
  t_len(&l, 1, "roses", 5);
  t_feature(&feats, "label", 1, &l);
  t_len(&ex, 1, feats.b, feats.n);
  t_record(f, &ex);
  fclose(f);
  free(ex.b); free(feats.b); free(l.b);
  files[0] = tpath("g.tfrecord");
  s = spec_of(src, 5);
  ck_assert(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_ERR_INPUT);
  ck_assert_msg(strstr(errbuf, "g.tfrecord: record 0: bad tf.train.Example: feature 'label' is a bytes_list; expected an int64_list") != NULL,
                "%s", errbuf);
  tpu_df_spec_destroy(s);
}
END_TEST

/* {==================================================================
** The model's costs of image sources, and JSON
** ================================================================== */
#define NEAR(want, got) ck_assert_msg(fabs((want) - (got)) < 1e-9, "%s: expected %.9f, got %.9f", #got, (double)(want), (double)(got))

START_TEST(The_model_opens_reads_and_decodes_each_image) {
  make_tree();
  tpu_df_source src = images_source();
  src.no_shuffle = true;
  tpu_df_spec *s;
  ck_assert_int_eq(tpu_df_spec_create(&s), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_source(s, &src), TPU_OK);
  /* 6 images, each its own file: open 10 ms, read 1 ms + its bytes at 1 MB/s, decode 4 ms; batches of 3,
  ** a train step of 20 ms. By hand: an element costs 10 + 1 + B/1000 + 4 ms (B the files' mean size, the
  ** model's element bytes); batch 0 is ready at 3e, batch 1 at 3e + 3e (read after step 0 is asked: the
  ** naive pipeline), total 6e + 20 ms. */
  ck_assert_int_eq(tpu_df_spec_set_cost(s, "open_latency_s", 0.010), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_cost(s, "read_latency_s", 0.001), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_cost(s, "read_bandwidth_bytes_per_s", 1e6), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_set_cost(s, "decode_cost_per_element_s", 0.004), TPU_OK);
  ck_assert_int_eq(tpu_df_spec_batch(s, 3, false), TPU_OK);
  df_img_index ix;
  ck_assert_int_eq(df_images_index(&src, &ix, errbuf, sizeof errbuf), TPU_OK);
  const int64_t B = (int64_t)((ix.bytes + 3) / 6);
  df_images_index_free(&ix);
  const double e = 0.010 + 0.001 + (double)B / 1e6 + 0.004;
  double ready[2];
  tpu_df_model_result r;
  ck_assert_msg(tpu_df_model_run(s, NULL, 0.020, NULL, NULL, 10, ready, &r, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  TU_EQ_U64(2, r.steps);
  NEAR(3 * e, ready[0]);
  NEAR(3 * e + 0.020 + 3 * e, ready[1]);
  NEAR(6 * e + 0.040, r.total_s);
  tpu_df_spec_destroy(s);
}
END_TEST

START_TEST(Json_images_and_tfrecord_sources_take_keras_arguments_and_name_bad_ones) {
  make_tree();
  char text[2048];
  tpu_df_spec *s;
  snprintf(text, sizeof text,
           "{ \"source\": { \"kind\": \"images\", \"dir\": \"%s\", \"image_size\": [4, 6], \"color_mode\": \"grayscale\",\n"
           "  \"validation_split\": 0.5, \"subset\": \"training\", \"seed\": 123, \"decode_cost_per_element_s\": 0.002 },\n"
           "  \"stages\": [ { \"op\": \"batch\", \"batch_size\": 3 } ] }", tpath("d"));
  ck_assert_msg(tpu_df_spec_parse(text, "i.json", &s, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  ck_assert(s->src.kind == TPU_DF_SRC_IMAGES && s->src.channels == 1 && s->src.height == 4 && s->src.width == 6);
  TU_EQ_U64(3, s->cost.elements);           /* found at parse: the training half */
  TU_EQ_U64(3, s->cost.files);
  tpu_df *df;
  ck_assert_msg(tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf) == TPU_OK, "%s", errbuf);
  tpu_df_batch b;
  ck_assert(tpu_df_next(df, &b) == TPU_OK && b.size == 3 && b.features == 24);
  tpu_df_close(df);
  tpu_df_spec_destroy(s);
  static const struct { const char *src; const char *says; } bad[] = {
    { "\"kind\": \"images\", \"dir\": \"D\", \"validation_split\": 0.2", "field 'source.subset': missing" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"subset\": \"training\"", "field 'source.validation_split': missing" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"validation_split\": 0.2, \"subset\": \"training\"",
      "field 'source.seed': missing; expected an integer in 0..4294967295" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"color_mode\": \"cmyk\"", "field 'source.color_mode': expected \"grayscale\"" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"interpolation\": \"nearest\"", "only \"bilinear\"" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"shape\": [4, 6, 3]", "field 'source.shape': is for sources other than images" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"split\": \"test\"", "field 'source.split': is for the mnist" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"image_size\": [4]", "field 'source.image_size': expected [height, width]" },
    { "\"kind\": \"images\", \"dir\": \"D\", \"subset\": \"test\", \"validation_split\": 0.2, \"seed\": 1",
      "field 'source.subset': expected \"training\" or \"validation\"" },
    { "\"kind\": \"images\"", "field 'source.dir': missing" },
    { "\"kind\": \"images\", \"dir\": \"D/nope\"", "field 'source.dir':" },
    { "\"kind\": \"synthetic\", \"n\": 4, \"shape\": [2], \"classes\": 2, \"image_size\": [4, 4]",
      "field 'source.image_size': is for an images source" },
    { "\"kind\": \"tfrecord\", \"files\": \"x\", \"shape\": [2, 2, 3], \"resize\": \"bicubic\"", "field 'source.resize': expected \"bilinear\"" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char src[512], *d;
    snprintf(src, sizeof src, "%s", bad[i].src);
    if ((d = strstr(src, "\"D")) != NULL) {        /* the tree's directory for D */
      char rest[256];
      snprintf(rest, sizeof rest, "%s", d + 2);
      snprintf(d, sizeof src - (size_t)(d - src), "\"%s%s", tpath("d"), rest);
    }
    snprintf(text, sizeof text, "{ \"source\": { %s },\n  \"stages\": [ { \"op\": \"batch\", \"batch_size\": 3 } ] }", src);
    ck_assert_msg(tpu_df_spec_parse(text, "b.json", &s, errbuf, sizeof errbuf) != TPU_OK, "case %zu parsed", i);
    ck_assert_msg(strstr(errbuf, bad[i].says) != NULL && strstr(errbuf, "b.json:1:") != NULL, "case %zu: %s", i, errbuf);
  }
}
END_TEST

/* {==================================================================
** Every allocation failing in turn
** ================================================================== */
static tpu_status open_images_and_tfrecord(void *ctx) {
  (void)ctx;
  tpu_df_source src = images_source();
  src.seed = 1;
  src.validation_split = 0.5;
  const char *files[1] = { tpath("o.tfrecord") };
  tpu_df_source t = tpu_df_source_default();
  t.kind = TPU_DF_SRC_TFRECORD;
  t.files = files; t.nfiles = 1;
  t.height = 3; t.width = 4; t.channels = 3; t.resize = true;
  t.validation_split = 0.4; t.seed = 3;
  tpu_status st = TPU_OK;
  for (int k = 0; k < 2 && st == TPU_OK; k++) {
    tpu_df_spec *s;
    if ((st = tpu_df_spec_create(&s)) != TPU_OK) return st;
    if ((st = tpu_df_spec_set_source(s, k ? &t : &src)) == TPU_OK && (st = tpu_df_spec_batch(s, 2, false)) == TPU_OK) {
      tpu_df *df;
      if ((st = tpu_df_open(s, NULL, &df, errbuf, sizeof errbuf)) == TPU_OK) {
        tpu_df_batch b;
        st = tpu_df_next(df, &b);
        tpu_df_close(df);
      }
      if (st == TPU_OK) {
        tpu_df_model_result r;
        st = tpu_df_model_run(s, NULL, 0.01, NULL, NULL, 5, NULL, &r, errbuf, sizeof errbuf);
      }
    }
    tpu_df_spec_destroy(s);
  }
  return st;
}
START_TEST(Image_sources_survive_every_allocation_failure) {
  make_tree();
  write_flowers("o.tfrecord", 5, -1, 0);
  tu_oom_sweep(3000, open_images_and_tfrecord, NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("datafeed_images");
  TCase *tc = TU_CASE(s, "decode", 60, Jpeg_decodes_as_libjpeg_with_tensorflows_defaults_and_near_the_pixels_encoded,
                      Undecodable_images_say_what_is_wrong, Bilinear_resize_is_tf_image_resize_on_hand_derived_cases,
                      Numpy_legacy_shuffle_and_keras_validation_split);
  tcase_add_loop_test(tc, Png_of_every_color_type_decodes_to_1_3_and_4_channels_as_tensorflow, 0,
                      (int)(sizeof PNGS / sizeof PNGS[0]));
  tcase_add_checked_fixture(tc, setup, NULL);
  tc = TU_CASE(s, "sources", 60, Image_folders_read_as_keras_classes_files_and_split,
               A_bad_image_in_a_folder_is_named_by_its_path, Tfrecord_examples_of_jpeg_and_png_images_decode_every_record,
               A_bad_image_in_a_tfrecord_is_named_by_file_and_record, The_model_opens_reads_and_decodes_each_image,
               Json_images_and_tfrecord_sources_take_keras_arguments_and_name_bad_ones);
  tcase_add_checked_fixture(tc, setup, NULL);
  tc = TU_CASE(s, "oom", 300, Image_sources_survive_every_allocation_failure);
  tcase_add_checked_fixture(tc, setup, NULL);
  return tu_main(s);
}
