/*
** npy.h -- .npy files of f32 in C order (NumPy format versions 1.0-3.0),
** the array format of tpusim's command line. Internal to frontend/.
*/
#ifndef TPU_FE_NPY_H
#define TPU_FE_NPY_H
#include <stddef.h>
#include <stdint.h>

#define TPU_FE_NPY_MAX_DIMS 8
typedef struct cli_npy {
  int ndim;
  int64_t shape[TPU_FE_NPY_MAX_DIMS];
  float *data;                     /* owned; free with cli_npy_free */
} cli_npy;

/* Reads an f32 C-order .npy. On failure returns -1 and writes a message
** naming the file and what was wrong (magic, header field, size) into err;
** 'out' then owns nothing. */
int  cli_npy_read_f32(const char *path, cli_npy *out, char *err, size_t errcap);
void cli_npy_free(cli_npy *a);
/* Writes an f32 C-order .npy atomically (temp file + rename). -1 with errno. */
int  cli_npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);
#endif
