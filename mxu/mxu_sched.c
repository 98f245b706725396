/*
** mxu_sched.c -- tile-level timing: the formula of mxu.h, one tile at a time.
**
** Every constraint of the header appears once below, in the order the header
** states them; the PE model (mxu_array.c) must land on the same cycles, and
** tests/check_mxu.c drives both side by side. is is ws with the stream
** length N and the block's M in the roles of M and N; os has its own rules
** (tests/check_mxu_df.c steps a PE model of it).
*/
#include "mxu/mxu.h"

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

void tpu_mxu_sched_init(tpu_mxu_sched *s, const tpu_mxu_config *cfg) {
  *s = (tpu_mxu_sched){ .cfg = *cfg };
}

/* ws (and is, with m the stream length and n the columns used). */
static void sched_ws(tpu_mxu_sched *s, uint64_t M, uint64_t K, uint64_t N, uint64_t earliest,
                     tpu_mxu_tile_times *out) {
  const uint64_t rows = (uint64_t)s->cfg.rows;
  /* weight load: one port, and the shadow (or the array itself) must be free */
  uint64_t load = max_u64(earliest, s->loader_free);
  if (s->prev_m > 0)
    load = max_u64(load, s->cfg.double_buffer ? s->prev_stream : s->prev_stream + s->prev_m);
  /* streaming: all weights in place, and one activation vector per cycle */
  uint64_t stream = load + K;
  if (s->prev_m > 0) stream = max_u64(stream, s->prev_stream + s->prev_m);
  const uint64_t last = stream + (M - 1) + (rows - 1) + (N - 1);

  s->loader_free = load + K;
  s->prev_stream = stream;
  s->prev_m = M;
  s->done = max_u64(s->done, last + 1);
  if (out) *out = (tpu_mxu_tile_times){ load, stream, last };
}

/* os: M x N outputs stay, K streams. */
static void sched_os(tpu_mxu_sched *s, uint64_t M, uint64_t K, uint64_t N, uint64_t earliest,
                     tpu_mxu_tile_times *out) {
  const uint64_t rows = (uint64_t)s->cfg.rows;
  /* one A and one B vector a cycle; the output chain one result a cycle */
  uint64_t stream = max_u64(earliest, s->loader_free);
  if (s->prev_m > 0 && s->out_free > stream + K) stream = s->out_free - K;
  const uint64_t last = stream + K + (M - 1) + (rows - 1) + (N - 1);

  s->loader_free = stream + K;
  s->out_free = stream + K + M;
  s->prev_stream = stream;
  s->prev_m = K;
  s->done = max_u64(s->done, last + 1);
  if (out) *out = (tpu_mxu_tile_times){ stream, stream, last };
}

void tpu_mxu_sched_tile(tpu_mxu_sched *s, int64_t m, int64_t k, int64_t n, uint64_t earliest,
                        tpu_mxu_tile_times *out) {
  const uint64_t M = (uint64_t)m, K = (uint64_t)k, N = (uint64_t)n;
  switch (s->cfg.dataflow) {
  case TPU_MXU_OS: sched_os(s, M, K, N, earliest, out); break;
  case TPU_MXU_IS: sched_ws(s, N, K, M, earliest, out); break;
  default:         sched_ws(s, M, K, N, earliest, out); break;
  }
  s->tiles++;
  s->macs += M * K * N;
  s->useful_cells_cycles += M * K * N;
}
