/*
** sim_vpu.c -- the VPU as the engine sees it: maps an op's buffers onto
** vpu/vpu.h's operands, checks their sizes once (when the op is added), and
** calls tpu_vpu_cycles / tpu_vpu_exec.
**
** Operand order: in[] takes the operands the op only reads, in the order
** X, Y, LABELS, GRAD; out[] the ones it writes, in the order OUT, OUT2, IDX,
** PARAM, M, V. OUT2 of softmax_xent, sigmoid_bce and mse is optional. Labels and argmax indices
** live in f32 buffers as exact integers and are converted at the boundary.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

static const unsigned IN_ORDER[] = { TPU_VPU_O_X, TPU_VPU_O_Y, TPU_VPU_O_LABELS, TPU_VPU_O_GRAD };
static const unsigned OUT_ORDER[] = { TPU_VPU_O_OUT, TPU_VPU_O_OUT2, TPU_VPU_O_IDX, TPU_VPU_O_PARAM,
                                      TPU_VPU_O_M, TPU_VPU_O_V };
static const char *const OPND_NAMES[] = { "x", "y", "labels", "out", "out2", "idx", "param", "grad", "m", "v" };

static const char *opnd_name(unsigned bit) {
  for (int i = 0; i < 10; i++)
    if (bit == 1u << i) return OPND_NAMES[i];
  return "?";
}

const char *sim_vpu_names(void) {
  static _Thread_local char buf[1024];   /* filled on each call, one per thread (sweep points) */
  size_t n = 0;
  for (int i = 0; i < TPU_VPU_OP_COUNT && n < sizeof buf; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", tpu_vpu_op_name((tpu_vpu_op)i));
  return buf;
}

/* The operand bits the op takes through in[] and out[], in order. */
static int in_bits(tpu_vpu_op op, unsigned *bits) {
  const unsigned rd = tpu_vpu_op_reads(op) & ~tpu_vpu_op_writes(op);
  int n = 0;
  for (int i = 0; i < 4; i++)
    if (rd & IN_ORDER[i]) bits[n++] = IN_ORDER[i];
  return n;
}
static int out_bits(tpu_vpu_op op, unsigned *bits) {
  const unsigned wr = tpu_vpu_op_writes(op);
  int n = 0;
  for (int i = 0; i < 6; i++)
    if (wr & OUT_ORDER[i]) bits[n++] = OUT_ORDER[i];
  return n;
}

static const sim_buf *B(const sim_core_prog *cp, int h) { return &cp->bufs[h - 1]; }

/* The buffer that sets the op's shape: X, else PARAM. */
static const sim_buf *shape_buf(tpu_vpu_op op, const tpu_sim_op *o, const sim_core_prog *cp) {
  unsigned ib[4], ob[6];
  int ni = in_bits(op, ib), no = out_bits(op, ob);
  for (int i = 0; i < ni && o->in[i]; i++)
    if (ib[i] == TPU_VPU_O_X) return B(cp, o->in[i]);
  for (int i = 0; i < no && o->out[i]; i++)
    if (ob[i] == TPU_VPU_O_PARAM) return B(cp, o->out[i]);
  return B(cp, o->in[0] ? o->in[0] : o->out[0]);
}

bool sim_vpu_check(const tpu_sim_op *o, const tpu_vpu_params *prm, const sim_core_prog *cp,
                   char *err, size_t cap) {
  const tpu_vpu_op op = o->vpu_op;
  unsigned ib[4], ob[6];
  const int ni = in_bits(op, ib), no = out_bits(op, ob);
  int gi = 0, go = 0;
  while (gi < TPU_SIM_MAX_IN && o->in[gi]) gi++;
  while (go < TPU_SIM_MAX_OUT && o->out[go]) go++;
  const bool opt_out2 = (op == TPU_VPU_SOFTMAX_XENT || op == TPU_VPU_SIGMOID_BCE || op == TPU_VPU_MSE) && go == no - 1;
  if (gi != ni || (go != no && !opt_out2)) {
    char want[128] = "";
    size_t n = 0;
    n += (size_t)snprintf(want + n, sizeof want - n, "in: [");
    for (int i = 0; i < ni; i++) n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", i ? ", " : "", opnd_name(ib[i]));
    n += (size_t)snprintf(want + n, sizeof want - n, "], out: [");
    for (int i = 0; i < no; i++) n += (size_t)snprintf(want + n, sizeof want - n, "%s%s", i ? ", " : "", opnd_name(ob[i]));
    snprintf(want + n, sizeof want - n, "]");
    snprintf(err, cap, "vpu op '%s' takes %s; got %d input(s) and %d output(s)", tpu_vpu_op_name(op), want, gi, go);
    return false;
  }
  const sim_buf *sb = shape_buf(op, o, cp);
  if (sb->rows > INT32_MAX || sb->cols > INT32_MAX) {
    snprintf(err, cap, "vpu op '%s': shape too large", tpu_vpu_op_name(op));
    return false;
  }
  const int rows = (int)sb->rows, cols = (int)sb->cols;
  for (int k = 0; k < ni + go; k++) {
    const unsigned bit = k < ni ? ib[k] : ob[k - ni];
    const sim_buf *b = B(cp, k < ni ? o->in[k] : o->out[k - ni]);
    const size_t want = tpu_vpu_operand_elems(op, bit, rows, cols);
    if ((size_t)(b->rows * b->cols) != want) {
      snprintf(err, cap, "vpu op '%s' on %d x %d: %s[%d] ('%s', operand %s) has %lld elements; it needs %zu",
               tpu_vpu_op_name(op), rows, cols, k < ni ? "in" : "out", k < ni ? k : k - ni, b->name,
               opnd_name(bit), (long long)(b->rows * b->cols), want);
      return false;
    }
  }
  /* hyper-parameters, as tpu_vpu_exec checks them, so the timing level
  ** rejects what the tile level would */
  const bool sgd = op == TPU_VPU_SGD, mom = op == TPU_VPU_MOMENTUM, adam = op == TPU_VPU_ADAM;
  if ((sgd || mom || adam) && !(isfinite(prm->lr) && prm->lr >= 0)) {
    snprintf(err, cap, "vpu op '%s': params.lr must be finite and >= 0, got %g", tpu_vpu_op_name(op), (double)prm->lr);
    return false;
  }
  if (mom && !(prm->momentum >= 0 && prm->momentum < 1)) {
    snprintf(err, cap, "vpu op 'momentum': params.momentum must be in [0, 1), got %g", (double)prm->momentum);
    return false;
  }
  if (adam && !(prm->beta1 >= 0 && prm->beta1 < 1 && prm->beta2 >= 0 && prm->beta2 < 1 && isfinite(prm->eps) &&
                prm->eps > 0 && prm->step >= 1)) {
    snprintf(err, cap, "vpu op 'adam': params need 0 <= beta1, beta2 < 1, eps finite > 0, step >= 1");
    return false;
  }
  /* the shape check alone: a 0-cycle op is legal (a column sum of one row
  ** on a 1-sublane VPU reduces nothing) */
  if (tpu_vpu_registers(&(tpu_vpu_config){ 1, 1, 1, 1, 1, 1, 1 }, rows, cols) == 0) {
    snprintf(err, cap, "vpu op '%s': shape %d x %d not accepted", tpu_vpu_op_name(op), rows, cols);
    return false;
  }
  return true;
}

uint64_t sim_vpu_cycles(const tpu_vpu_config *vc, const sim_op *so, const sim_core_prog *cp) {
  const sim_buf *sb = shape_buf(so->o.vpu_op, &so->o, cp);
  return tpu_vpu_cycles(vc, so->o.vpu_op, (int)sb->rows, (int)sb->cols);
}

tpu_status sim_vpu_exec(const sim_op *so, const sim_core_prog *cp, float *const *in, float *const *out) {
  const tpu_vpu_op op = so->o.vpu_op;
  const tpu_sim_op *o = &so->o;
  const sim_buf *sb = shape_buf(op, o, cp);
  tpu_vpu_args a = { .rows = (int)sb->rows, .cols = (int)sb->cols, .p = so->params };
  unsigned ib[4], ob[6];
  const int ni = in_bits(op, ib), no = out_bits(op, ob);
  int32_t *labels = NULL, *idx = NULL;
  float *idx_f = NULL;
  tpu_status st = TPU_ERR_NOMEM;
  bool round = false;
  for (int k = 0; k < ni; k++) {
    switch (ib[k]) {
    case TPU_VPU_O_X: a.x = in[k]; break;
    case TPU_VPU_O_Y: a.y = in[k]; break;
    case TPU_VPU_O_GRAD: a.grad = in[k]; break;
    case TPU_VPU_O_LABELS: {
      const size_t n = (size_t)a.rows;
      if (!(labels = tpu_malloc(n * sizeof *labels))) goto out;
      for (size_t e = 0; e < n; e++) {
        const float f = in[k][e];
        labels[e] = (f >= 0 && f < 2147483647.0f && f == floorf(f)) ? (int32_t)f : -1;
      }
      a.labels = labels;
      break;
    }
    default: break;
    }
  }
  for (int k = 0; k < no && o->out[k]; k++) {
    const bool bf = B(cp, o->out[k])->dtype == TPU_SIM_BF16;
    switch (ob[k]) {
    case TPU_VPU_O_OUT: a.out = out[k]; round |= bf; break;
    case TPU_VPU_O_OUT2: a.out2 = out[k]; round |= bf; break;
    case TPU_VPU_O_PARAM: a.param = out[k]; round |= bf; break;
    case TPU_VPU_O_M: a.m = out[k]; break;
    case TPU_VPU_O_V: a.v = out[k]; break;
    case TPU_VPU_O_IDX:
      if (!(idx = tpu_malloc((size_t)a.rows * sizeof *idx))) goto out;
      idx_f = out[k];
      a.idx = idx;
      break;
    default: break;
    }
  }
  a.round_bf16 = round;
  st = tpu_vpu_exec(op, &a);
  if (st == TPU_OK && idx)
    for (int e = 0; e < a.rows; e++) idx_f[e] = (float)idx[e];
out:
  tpu_free(labels);
  tpu_free(idx);
  return st;
}
