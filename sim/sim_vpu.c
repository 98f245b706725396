/*
** sim_vpu.c -- the VPU as the engine sees it.
**
** TEMPORARY: a minimal set of element-wise ops with the cost rule of
** vpu/vpu.h (cycles per register of work) until vpu/vpu.h's
** tpu_vpu_cycles / tpu_vpu_exec land; then this file only maps names and
** operands onto them.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim_int.h"

typedef struct vdef { const char *name; int nin, nout; int cost; } vdef;
enum { C_ELEM, C_TRANS };
static const vdef DEFS[] = {
  { "add", 2, 1, C_ELEM }, { "sub", 2, 1, C_ELEM }, { "mul", 2, 1, C_ELEM },
  { "max", 2, 1, C_ELEM }, { "relu", 1, 1, C_ELEM }, { "copy", 1, 1, C_ELEM },
  { "exp", 1, 1, C_TRANS },
};
#define NDEFS (int)(sizeof DEFS / sizeof DEFS[0])

int sim_vpu_lookup(const char *name) {
  for (int i = 0; i < NDEFS; i++)
    if (!strcmp(DEFS[i].name, name)) return i;
  return -1;
}
const char *sim_vpu_names(void) { return "add, sub, mul, max, relu, copy, exp"; }

static int64_t elems(const sim_core_prog *cp, int h) {
  return cp->bufs[h - 1].rows * cp->bufs[h - 1].cols;
}

bool sim_vpu_check(int code, const tpu_sim_op *op, const sim_core_prog *cp, char *err, size_t cap) {
  const vdef *d = &DEFS[code];
  int nin = 0, nout = 0;
  while (nin < TPU_SIM_MAX_IN && op->in[nin]) nin++;
  while (nout < TPU_SIM_MAX_OUT && op->out[nout]) nout++;
  if (nin != d->nin || nout != d->nout) {
    snprintf(err, cap, "vpu op '%s' takes %d input(s) and %d output(s), got %d and %d", d->name, d->nin,
             d->nout, nin, nout);
    return false;
  }
  int64_t n = elems(cp, op->out[0]);
  for (int i = 0; i < nin; i++)
    if (elems(cp, op->in[i]) != n) {
      snprintf(err, cap, "vpu op '%s': in[%d] '%s' has %lld elements, out[0] '%s' %lld; they must be equal",
               d->name, i, cp->bufs[op->in[i] - 1].name, (long long)elems(cp, op->in[i]),
               cp->bufs[op->out[0] - 1].name, (long long)n);
      return false;
    }
  return true;
}

uint64_t sim_vpu_cycles(const tpu_vpu_config *vc, int code, const sim_core_prog *cp, const tpu_sim_op *op) {
  uint64_t reg = (uint64_t)vc->sublanes * (uint64_t)vc->lanes;
  uint64_t regs = ((uint64_t)elems(cp, op->out[0]) + reg - 1) / reg;
  return regs * (uint64_t)(DEFS[code].cost == C_TRANS ? vc->cycles_transcendental : vc->cycles_elementwise);
}

void sim_vpu_exec(int code, const sim_core_prog *cp, const tpu_sim_op *op, float *const *in, float *const *out) {
  size_t n = (size_t)elems(cp, op->out[0]);
  float *o = out[0];
  const float *a = in[0], *b = in[1];
  switch (code) {
  case 0: for (size_t i = 0; i < n; i++) o[i] = a[i] + b[i]; break;
  case 1: for (size_t i = 0; i < n; i++) o[i] = a[i] - b[i]; break;
  case 2: for (size_t i = 0; i < n; i++) o[i] = a[i] * b[i]; break;
  case 3: for (size_t i = 0; i < n; i++) o[i] = a[i] > b[i] ? a[i] : b[i]; break;
  case 4: for (size_t i = 0; i < n; i++) o[i] = a[i] > 0 ? a[i] : 0.0f; break;
  case 5: memmove(o, a, n * sizeof *o); break;
  case 6: for (size_t i = 0; i < n; i++) o[i] = expf(a[i]); break;
  default: break;
  }
  if (cp->bufs[op->out[0] - 1].dtype == TPU_SIM_BF16) tpu_bf16_round_array(o, n);
}
