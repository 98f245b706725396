/*
** df_image.c -- encoded images: JPEG (Debian's libjpeg-turbo) and PNG
** (libpng) decoded as TensorFlow decodes them, and the bilinear resize of
** tf.image.resize; the decoding of many images on a few threads.
**
** Decoding follows tf.io.decode_image(contents, channels=C,
** expand_animations=False), which Keras' image_dataset_from_directory calls,
** and tf.io.decode_jpeg / decode_png with their default arguments:
**   - JPEG: the fast integer IDCT (JDCT_IFAST, TensorFlow's default
**     dct_method), fancy upsampling, full scale. C = 1 asks libjpeg for
**     grayscale (the luma channel), C = 3 for RGB; CMYK and YCCK images are
**     decoded as CMYK and converted as TensorFlow does (with an Adobe marker
**     r = k*c/255, else r = (255-k)(255-c)/255). C = 4 is refused, as
**     TensorFlow refuses it ("JPEG does not support 4 channels"). A
**     truncated stream is an error (TensorFlow's try_recover_truncated is
**     false by default); libjpeg's other warnings (extraneous bytes, a bad
**     Huffman code) are not, as in TensorFlow.
**   - PNG: the transformations of TensorFlow's png::CommonInitDecode for 8
**     bits: alpha stripped unless C is even (added as opaque, or from tRNS,
**     when asked for), 16-bit samples cut to their high byte, palettes
**     expanded, grey of 1, 2 or 4 bits expanded to 8, RGB to grey by
**     libpng's png_set_rgb_to_gray(1, 0.299, 0.587), grey to RGB replicated,
**     interlacing undone. A libpng error (bad CRC of a critical chunk,
**     truncated data, no IEND) is an error.
**   - Other formats tf.io.decode_image reads (GIF, BMP, WebP) are named and
**     refused: they are not decoded here.
**
** Resizing is tf.image.resize(images, size) with its defaults: bilinear,
** half-pixel centers, no antialiasing. For output index i the source
** coordinate is (i + 0.5) * in/out - 0.5 in float; the lower neighbour is
** max(floor, 0), the upper min(ceil, in-1), the weight the fraction; rows
** and columns interpolate as TensorFlow's compute_lerp does. TensorFlow
** returns float32; here the value is rounded to the nearest integer (halves
** up) and held as uint8, which moves it by at most 0.5 (of 255). An image
** already of the asked size is not touched (TensorFlow's no-op resize).
*/
#include "datafeed/df_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

/* Images of more values are refused before decoding (TensorFlow's limit). */
#define MAX_VALUES ((int64_t)1 << 29)

df_img_kind df_image_sniff(const unsigned char *p, size_t n) {
  if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) return DF_IMG_JPEG;
  if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8)) return DF_IMG_PNG;
  if (n >= 4 && !memcmp(p, "GIF8", 4)) return DF_IMG_GIF;
  if (n >= 2 && p[0] == 'B' && p[1] == 'M') return DF_IMG_BMP;
  if (n > 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return DF_IMG_WEBP;
  return DF_IMG_UNKNOWN;
}

const char *df_image_kind_name(df_img_kind k) {
  static const char *const n[] = { "unknown", "JPEG", "PNG", "GIF", "BMP", "WebP" };
  return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

/* {==================================================================
** JPEG
** ================================================================== */
typedef struct jerr_ctx {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
} jerr_ctx;

static void jpeg_fail(j_common_ptr ci) {
  jerr_ctx *e = (jerr_ctx *)ci->err;
  (*ci->err->format_message)(ci, e->msg);
  longjmp(e->jb, 1);
}
/* Warnings (level -1) pass, except the end of the data: a truncated JPEG is
** an error in TensorFlow. Trace messages (level >= 0) are dropped. */
static void jpeg_emit(j_common_ptr ci, int level) {
  if (level == -1) {
    ci->err->num_warnings++;
    if (ci->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(ci);
  }
}
static void jpeg_quiet(j_common_ptr ci) { (void)ci; }

/* The state of one decode, in memory the longjmp leaves alone. */
typedef struct jpeg_job {
  struct jpeg_decompress_struct ci;
  jerr_ctx err;
  uint8_t *out, *row4;
  int h, w;
} jpeg_job;

static tpu_status decode_jpeg(const unsigned char *p, size_t n, int c, uint8_t **out, int *h, int *w, char *why,
                              size_t cap) {
  if (c == 4) {
    snprintf(why, cap, "a JPEG image has no alpha channel: 4 channels (color_mode rgba) are read from PNG only, as "
             "tf.io.decode_image reads them");
    return TPU_ERR_INPUT;
  }
  jpeg_job *j = tpu_calloc(1, sizeof *j);
  if (!j) { snprintf(why, cap, "out of memory"); return TPU_ERR_NOMEM; }
  tpu_status st = TPU_ERR_INPUT;
  j->ci.err = jpeg_std_error(&j->err.pub);
  j->err.pub.error_exit = jpeg_fail;
  j->err.pub.emit_message = jpeg_emit;
  j->err.pub.output_message = jpeg_quiet;
  if (setjmp(j->err.jb)) {
    snprintf(why, cap, "undecodable JPEG data: %s", j->err.msg);
    goto done;
  }
  jpeg_create_decompress(&j->ci);
  jpeg_mem_src(&j->ci, p, (unsigned long)n);
  jpeg_read_header(&j->ci, TRUE);
  const bool cmyk = j->ci.jpeg_color_space == JCS_CMYK || j->ci.jpeg_color_space == JCS_YCCK;
  j->ci.out_color_space = c == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  j->ci.do_fancy_upsampling = TRUE;
  j->ci.dct_method = JDCT_IFAST;
  j->ci.scale_num = j->ci.scale_denom = 1;
  jpeg_calc_output_dimensions(&j->ci);
  j->h = (int)j->ci.output_height;
  j->w = (int)j->ci.output_width;
  if ((int64_t)j->h * j->w * c >= MAX_VALUES) {
    snprintf(why, cap, "JPEG image of %dx%d is too large (at most 2^29 values)", j->h, j->w);
    goto done;
  }
  jpeg_start_decompress(&j->ci);
  if (j->ci.output_components != (cmyk && c == 3 ? 4 : c)) {
    snprintf(why, cap, "JPEG image of %d components cannot be decoded to %d channels", j->ci.output_components, c);
    goto done;
  }
  j->out = tpu_malloc((size_t)j->h * (size_t)j->w * (size_t)c);
  j->row4 = cmyk && c == 3 ? tpu_malloc((size_t)j->w * 4) : NULL;
  if (!j->out || (cmyk && c == 3 && !j->row4)) { st = TPU_ERR_NOMEM; snprintf(why, cap, "out of memory"); goto done; }
  while (j->ci.output_scanline < j->ci.output_height) {
    uint8_t *row = j->out + (size_t)j->ci.output_scanline * (size_t)j->w * (size_t)c;
    JSAMPROW rp = j->row4 ? j->row4 : row;
    if (jpeg_read_scanlines(&j->ci, &rp, 1) != 1) { snprintf(why, cap, "undecodable JPEG data: no scanline"); goto done; }
    if (j->row4) {        /* TensorFlow's CMYK -> RGB */
      for (int x = 0; x < j->w; x++) {
        const int cc = j->row4[4 * x], m = j->row4[4 * x + 1], y = j->row4[4 * x + 2], k = j->row4[4 * x + 3];
        if (j->ci.saw_Adobe_marker) {
          row[3 * x] = (uint8_t)(k * cc / 255); row[3 * x + 1] = (uint8_t)(k * m / 255); row[3 * x + 2] = (uint8_t)(k * y / 255);
        } else {
          row[3 * x] = (uint8_t)((255 - k) * (255 - cc) / 255); row[3 * x + 1] = (uint8_t)((255 - k) * (255 - m) / 255);
          row[3 * x + 2] = (uint8_t)((255 - k) * (255 - y) / 255);
        }
      }
    }
  }
  jpeg_finish_decompress(&j->ci);
  *out = j->out;
  j->out = NULL;
  *h = j->h; *w = j->w;
  st = TPU_OK;
done:
  jpeg_destroy_decompress(&j->ci);
  tpu_free(j->out);
  tpu_free(j->row4);
  tpu_free(j);
  return st;
}
/* }================================================================== */

/* {==================================================================
** PNG
** ================================================================== */
typedef struct png_job {
  const unsigned char *p;
  size_t left;
  png_structp png;
  png_infop info;
  uint8_t *out;
  char msg[200];
} png_job;

static void png_fail(png_structp png, png_const_charp msg) {
  png_job *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg);
  png_longjmp(png, 1);
}
static void png_warn(png_structp png, png_const_charp msg) { (void)png; (void)msg; }
static void png_reader(png_structp png, png_bytep data, size_t n) {
  png_job *j = png_get_io_ptr(png);
  if (j->left < n) png_error(png, "the data ends early (truncated)");
  memcpy(data, j->p, n);
  j->p += n;
  j->left -= n;
}

static tpu_status decode_png(const unsigned char *p, size_t n, int c, uint8_t **out, int *h, int *w, char *why,
                             size_t cap) {
  png_job *j = tpu_calloc(1, sizeof *j);
  if (!j) { snprintf(why, cap, "out of memory"); return TPU_ERR_NOMEM; }
  tpu_status st = TPU_ERR_INPUT;
  j->p = p;
  j->left = n;
  j->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_fail, png_warn);
  if (!j->png) { tpu_free(j); snprintf(why, cap, "out of memory"); return TPU_ERR_NOMEM; }
  if (setjmp(png_jmpbuf(j->png))) {
    snprintf(why, cap, "undecodable PNG data: %s", j->msg);
    goto done;
  }
  j->info = png_create_info_struct(j->png);
  if (!j->info) { st = TPU_ERR_NOMEM; snprintf(why, cap, "out of memory"); goto done; }
  png_set_read_fn(j->png, j, png_reader);
  png_read_info(j->png, j->info);
  png_uint_32 pw, ph;
  int depth, type;
  png_get_IHDR(j->png, j->info, &pw, &ph, &depth, &type, NULL, NULL, NULL);
  if ((int64_t)pw * ph * c >= MAX_VALUES) {
    snprintf(why, cap, "PNG image of %ux%u is too large (at most 2^29 values)", (unsigned)ph, (unsigned)pw);
    goto done;
  }
  /* TensorFlow's CommonInitDecode, for 8 bits and C channels */
  const bool trns = png_get_valid(j->png, j->info, PNG_INFO_tRNS) != 0, alpha = (type & PNG_COLOR_MASK_ALPHA) != 0;
  if (c % 2 == 0) {
    if (!alpha && trns) png_set_tRNS_to_alpha(j->png);
    else if (!alpha) png_set_add_alpha(j->png, (1u << depth) - 1, PNG_FILLER_AFTER);
  } else if (alpha || trns) {
    png_set_strip_alpha(j->png);
  }
  if (depth > 8) png_set_strip_16(j->png);
  png_set_packing(j->png);
  const int passes = png_set_interlace_handling(j->png);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
  const bool gray = !(type & PNG_COLOR_MASK_COLOR);
  if (gray && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
  if (c < 3 && !gray) png_set_rgb_to_gray(j->png, 1, 0.299, 0.587);
  else if (c >= 3 && gray) png_set_gray_to_rgb(j->png);
  png_read_update_info(j->png, j->info);
  const size_t rowbytes = png_get_rowbytes(j->png, j->info);
  if (rowbytes != (size_t)pw * (size_t)c) {
    snprintf(why, cap, "PNG image (color type %d, %d bits) does not decode to %d channels", type, depth, c);
    goto done;
  }
  j->out = tpu_malloc((size_t)ph * rowbytes);
  if (!j->out) { st = TPU_ERR_NOMEM; snprintf(why, cap, "out of memory"); goto done; }
  for (int pass = 0; pass < passes; pass++)
    for (png_uint_32 y = 0; y < ph; y++) png_read_row(j->png, j->out + (size_t)y * rowbytes, NULL);
  png_read_end(j->png, j->info);
  *out = j->out;
  j->out = NULL;
  *h = (int)ph; *w = (int)pw;
  st = TPU_OK;
done:
  png_destroy_read_struct(&j->png, j->info ? &j->info : NULL, NULL);
  tpu_free(j->out);
  tpu_free(j);
  return st;
}
/* }================================================================== */

tpu_status df_image_decode(const unsigned char *p, size_t n, int c, uint8_t **out, int *h, int *w, char *why, size_t cap) {
  *out = NULL;
  *h = *w = 0;
  if (c != 1 && c != 3 && c != 4) {
    snprintf(why, cap, "JPEG and PNG images decode to 1, 3 or 4 channels, not %d (source.shape)", c);
    return TPU_ERR_INPUT;
  }
  df_img_kind k = df_image_sniff(p, n);
  switch (k) {
  case DF_IMG_JPEG: return decode_jpeg(p, n, c, out, h, w, why, cap);
  case DF_IMG_PNG: return decode_png(p, n, c, out, h, w, why, cap);
  case DF_IMG_UNKNOWN:
    snprintf(why, cap, "not an image: %zu bytes that begin neither as JPEG (ff d8 ff) nor as PNG (89 50 4e 47)", n);
    return TPU_ERR_INPUT;
  default:
    snprintf(why, cap, "a %s image: tpusim decodes JPEG and PNG only (tf.io.decode_image also reads GIF, BMP and WebP)",
             df_image_kind_name(k));
    return TPU_ERR_INPUT;
  }
}

/* {==================================================================
** Resizing (tf.image.resize, bilinear, half-pixel centers)
** ================================================================== */
typedef struct lerp1 { int lo, hi; float t; } lerp1;

/* TensorFlow's compute_interpolation_weights with the HalfPixelScaler. */
static void weights(lerp1 *l, int out, int in) {
  const float scale = (float)in / (float)out;
  for (int i = 0; i < out; i++) {
    const float v = ((float)i + 0.5f) * scale - 0.5f, f = floorf(v);
    l[i].lo = f > 0 ? (int)f : 0;
    l[i].hi = (int)ceilf(v) < in - 1 ? (int)ceilf(v) : in - 1;
    l[i].t = v - f;
  }
}

static uint8_t to_u8(float v) { return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)(v + 0.5f); }

tpu_status df_image_resize(const uint8_t *in, int ih, int iw, int c, uint8_t *out, int oh, int ow) {
  if (ih == oh && iw == ow) { memcpy(out, in, (size_t)oh * (size_t)ow * (size_t)c); return TPU_OK; }
  lerp1 *ys = tpu_malloc((size_t)(oh + ow) * sizeof *ys), *xs = ys ? ys + oh : NULL;
  if (!ys) return TPU_ERR_NOMEM;
  weights(ys, oh, ih);
  weights(xs, ow, iw);
  for (int y = 0; y < oh; y++) {
    const uint8_t *top = in + (size_t)ys[y].lo * (size_t)iw * (size_t)c, *bot = in + (size_t)ys[y].hi * (size_t)iw * (size_t)c;
    const float yt = ys[y].t;
    uint8_t *o = out + (size_t)y * (size_t)ow * (size_t)c;
    for (int x = 0; x < ow; x++) {
      const size_t l = (size_t)xs[x].lo * (size_t)c, r = (size_t)xs[x].hi * (size_t)c;
      const float xt = xs[x].t;
      for (int k = 0; k < c; k++) {
        const float tl = top[l + (size_t)k], tr = top[r + (size_t)k], bl = bot[l + (size_t)k], br = bot[r + (size_t)k];
        const float t = tl + (tr - tl) * xt, b = bl + (br - bl) * xt;
        o[(size_t)x * (size_t)c + (size_t)k] = to_u8(t + (b - t) * yt);
      }
    }
  }
  tpu_free(ys);
  return TPU_OK;
}
/* }================================================================== */

tpu_status df_image_load(const unsigned char *p, size_t n, int oh, int ow, int c, bool resize, uint8_t *out, char *why,
                         size_t cap) {
  uint8_t *img;
  int h, w;
  tpu_status st = df_image_decode(p, n, c, &img, &h, &w, why, cap);
  if (st != TPU_OK) return st;
  if ((h != oh || w != ow) && !resize) {
    snprintf(why, cap, "a %s image of %dx%d; the source's shape is %dx%d (set \"resize\": \"bilinear\" to resize it)",
             df_image_kind_name(df_image_sniff(p, n)), h, w, oh, ow);
    st = TPU_ERR_INPUT;
  } else if ((st = df_image_resize(img, h, w, c, out, oh, ow)) != TPU_OK) {
    snprintf(why, cap, "out of memory");
  }
  tpu_free(img);
  return st;
}

/* {==================================================================
** Many images on a few threads
** ================================================================== */
typedef struct load_all {
  df_img_job *jobs;
  int64_t n;
  int oh, ow, c;
  bool resize;
  _Atomic int64_t next;
  _Atomic int64_t first_bad;   /* lowest failing job so far; n: none */
} load_all;

/* Reads a whole file (the job's path). */
static tpu_status read_path(const char *path, unsigned char **buf, size_t *len, char *why, size_t cap) {
  int fd = open(path, O_RDONLY | O_NONBLOCK);   /* a FIFO does not block the open; fstat refuses it */
  if (fd < 0) { snprintf(why, cap, "cannot open: %s", strerror(errno)); return TPU_ERR_IO; }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { close(fd); snprintf(why, cap, "not a regular file"); return TPU_ERR_IO; }
  size_t n = (size_t)sb.st_size, got = 0;
  unsigned char *b = tpu_malloc(n ? n : 1);
  if (!b) { close(fd); snprintf(why, cap, "out of memory"); return TPU_ERR_NOMEM; }
  while (got < n) {
    ssize_t r = read(fd, b + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { close(fd); tpu_free(b); snprintf(why, cap, "read error"); return TPU_ERR_IO; }
    got += (size_t)r;
  }
  close(fd);
  *buf = b;
  *len = n;
  return TPU_OK;
}

static void *load_main(void *arg) {
  load_all *a = arg;
  for (;;) {
    int64_t i = atomic_fetch_add(&a->next, 1);
    if (i >= a->n || i > atomic_load(&a->first_bad)) break;   /* jobs after a failure need not run */
    df_img_job *j = &a->jobs[i];
    const unsigned char *p = j->p;
    size_t len = j->n;
    unsigned char *buf = NULL;
    j->st = j->path ? read_path(j->path, &buf, &len, j->why, sizeof j->why) : TPU_OK;
    if (buf) p = buf;
    if (j->st == TPU_OK) j->st = df_image_load(p, len, a->oh, a->ow, a->c, a->resize, j->dst, j->why, sizeof j->why);
    tpu_free(buf);
    if (j->st != TPU_OK) {
      int64_t b = atomic_load(&a->first_bad);
      while (i < b && !atomic_compare_exchange_weak(&a->first_bad, &b, i)) {}
    }
  }
  return NULL;
}

int df_image_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

tpu_status df_image_load_all(df_img_job *jobs, int64_t n, int oh, int ow, int c, bool resize, int threads, int64_t *bad) {
  load_all a = { .jobs = jobs, .n = n, .oh = oh, .ow = ow, .c = c, .resize = resize };
  atomic_init(&a.next, 0);
  atomic_init(&a.first_bad, n);
  *bad = -1;
  if (threads > n) threads = (int)n;
  pthread_t th[8];
  int started = 0;
  for (int i = 1; i < threads && i <= 8; i++) {
    if (pthread_create(&th[started], NULL, load_main, &a) != 0) break;   /* fewer threads: still correct */
    started++;
  }
  load_main(&a);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  int64_t fb = atomic_load(&a.first_bad);
  if (fb >= n) return TPU_OK;
  *bad = fb;
  return jobs[fb].st;
}
