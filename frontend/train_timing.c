/*
** train_timing.c -- the simulated time of one training step, from shapes
** alone (values never enter it), behind fe_time_step(). This is the
** lowering's timing model until the chip engine (sim/sim.h programs) lands;
** the interface stays when the engine replaces the body.
**
** Each core runs the same program on its shard of 'rows' samples:
**   infeed dequeue -> for each layer: forward -> softmax-xent -> for each
**   layer in reverse: backward (dW = X^T.dY, dX = dY.W^T on the MXU,
**   activation gradients on the VPU) -> ring all-reduce of the gradients
**   over ICI -> optimizer update on the VPU.
** An op is (MXU cycles, VPU cycles, HBM bytes). MXU cycles are the MXU
** tile formula for the GEMM (tpu_mxu_gemm at timing level, all bf16 passes,
** with the core's arrays). VPU cycles are tpu_vpu_cycles() of the same ops
** the numerics run (activations as pixels x channels, parameter vectors
** 'lanes' wide), with the costs of the chip config. HBM
** bytes (weights and activations in bf16, gradients and optimizer state in
** f32) stream through double-buffered DMA: the transfer of an op overlaps
** its compute, so the core waits only for max(0, dma - compute) (plus the
** HBM latency once per op). The ring all-reduce is 2(C-1) steps of
** bytes/C over one link, each paying the hop latency, plus the VPU adds.
** Cores run identical programs, so they reach the all-reduce together; the
** all-reduce itself is the collective wait.
**
** VMEM: a GEMM's operands are tiled so that two buffers of each streamed
** tile (M x 128 activations, 128 x 128 weights, M x 128 results) fit; if
** even one M-row tile cannot fit, the shape is rejected.
**
** Not modelled here (yet): contention between the two cores of a chip for
** HBM beyond an even split of its bandwidth, host-to-device infeed
** bandwidth (the infeed's ready time comes from the caller), the transposes
** of operands for dX/dW (free layout choices of the lowering).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/fe_train.h"
#include "vpu/vpu.h"

/* ceil that forgives the last-bit error of a product of decimal figures
** (100 ns x 1 GHz must be 100 cycles, not 101) */
static double ceil_cycles(double x) { return ceil(x - 1e-6); }

typedef struct tctx {
  const tpu_chip_config *chip;
  tpu_precision prec;
  double cycles_per_byte;      /* HBM, this core's share */
  uint64_t lat_cycles;         /* HBM latency */
  fe_step_timing *t;
  tpu_status st;
  double now;                  /* cycles since the step began */
  char label[64];              /* what the next ops belong to */
  fe_trace_event *ev;          /* optional timeline */
  int evcap, nev;
} tctx;

static void event(tctx *c, int unit, const char *what, double start, double dur) {
  if (!c->ev || dur <= 0 || c->nev >= c->evcap) return;
  fe_trace_event *e = &c->ev[c->nev++];
  snprintf(e->name, sizeof e->name, "%s%s%s", c->label, *what ? " " : "", what);
  e->unit = unit;
  e->start = start;
  e->dur = dur;
}

/* One VPU op on a rows x cols operand (vpu.h's formula). */
static uint64_t vop(tctx *c, tpu_vpu_op op, int rows, int cols) {
  return tpu_vpu_cycles(&c->chip->vpu, op, rows, cols);
}
/* Rows of a vector of n values laid out 'lanes' wide. */
static int vec_rows(tctx *c, size_t n) {
  return (int)((n + (size_t)c->chip->vpu.lanes - 1) / (size_t)c->chip->vpu.lanes);
}

/* Charges one op: MXU and VPU work back to back, its DMA overlapped: the
** transfer starts with the op, the core waits for what compute does not
** cover, then computes. */
static void charge(tctx *c, uint64_t mxu, uint64_t vpu, uint64_t bytes) {
  double dma = bytes ? (double)bytes * c->cycles_per_byte + (double)c->lat_cycles : 0.0;
  double compute = (double)(mxu + vpu);
  double wait = dma > compute ? ceil_cycles(dma - compute) : 0.0;
  c->t->mxu_busy += (double)mxu;
  c->t->vpu_busy += (double)vpu;
  c->t->memory_wait += wait;
  c->t->hbm_bytes += bytes;
  event(c, FE_UNIT_DMA, "dma", c->now, dma);
  event(c, FE_UNIT_CORE, "memory_wait", c->now, wait);
  event(c, FE_UNIT_MXU, "matmul", c->now + wait, (double)mxu);
  event(c, FE_UNIT_VPU, "vpu", c->now + wait + (double)mxu, (double)vpu);
  c->now += wait + compute;
}

/* A GEMM op(A).op(B) of M x K by K x N, in the orientation the sim backend
** runs it (fe_gemm_swapped). */
static void gemm(tctx *c, bool ta, bool tb, int M, int N, int K, uint64_t bytes) {
  tpu_mxu_gemm_result r;
  bool sw = fe_gemm_swapped(c->prec, ta, tb, M, N, K);
  if (tpu_mxu_gemm(&c->chip->mxu, c->chip->mxus_per_core, TPU_FIDELITY_TIMING, c->prec,
                   sw ? N : M, sw ? M : N, K, NULL, NULL, NULL, &r) != TPU_OK) {
    c->st = TPU_ERR_CONFIG;
    return;
  }
  c->t->macs += r.macs;
  charge(c, r.cycles, 0, bytes);
}

tpu_status fe_time_step(const fe_model *m, const tpu_chip_config *chip, tpu_precision prec,
                        int rows, bool train, uint64_t infeed_ready_cycles,
                        fe_step_timing *out, fe_trace_event *ev, int evcap, int *nev,
                        char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  const tpu_vpu_config *v = &chip->vpu;
  double hz = chip->clock_mhz * 1e6;
  double core_bw = chip->hbm_bandwidth_gb_per_s * 1e9 / chip->cores_per_chip;
  tctx c = { .chip = chip, .prec = prec, .cycles_per_byte = hz / core_bw,
             .lat_cycles = (uint64_t)ceil_cycles(chip->hbm_latency_ns * 1e-9 * hz), .t = out,
             .ev = ev, .evcap = evcap };
  const int64_t vmem = chip->vmem_capacity_kib * 1024;
  const int R = chip->mxu.rows, Cc = chip->mxu.cols;
  const size_t B = (size_t)rows;

  /* VMEM check: the GEMMs stream M-row chunks of activations (bf16) and
  ** R x C weight tiles (bf16) into f32 results, two buffers of each; a chunk
  ** of one row must fit (larger M is split into chunks, which the MXU formula
  ** times the same way as one stream since accumulators are not modelled). */
  const int64_t need = 2 * ((int64_t)R * 2 + (int64_t)R * Cc * 2 + (int64_t)Cc * 4);
  if (need > vmem) {
    snprintf(err, errcap, "a %dx%d weight tile and one activation row, double-buffered, need %lld bytes; "
             "VMEM holds %lld", R, Cc, (long long)need, (long long)vmem);
    return TPU_ERR_CONFIG;
  }

  /* infeed: the shard (bf16) is DMA'd in once it is ready */
  out->infeed_wait = (double)infeed_ready_cycles;
  snprintf(c.label, sizeof c.label, "infeed");
  event(&c, FE_UNIT_CORE, "wait", 0, out->infeed_wait);
  c.now = out->infeed_wait;
  charge(&c, 0, 0, B * fe_shape_size(m->input) * 2);

  for (int i = 0; i < m->nlayers; i++) {
    const fe_layer *L = &m->layers[i];
    size_t n_in = B * fe_shape_size(L->in), n_out = B * fe_shape_size(L->out);
    const int orows = rows * L->out.h * L->out.w, oc = L->out.c;   /* pixels x channels */
    snprintf(c.label, sizeof c.label, "fwd %d %s", i, fe_layer_kind_name(L->kind));
    switch (L->kind) {
    case FE_DENSE:
      gemm(&c, false, false, rows, L->units, L->in.c, (L->nw + L->nb) * 2 + n_in * 2 + n_out * 2);
      charge(&c, 0, vop(&c, TPU_VPU_BIAS_ADD, rows, L->units), 0);
      break;
    case FE_CONV2D: {
      int M = orows, K = L->kh * L->kw * L->in.c;
      /* im2col is address generation of the DMA: the input is read once
      ** per kernel tap */
      gemm(&c, false, false, M, L->filters, K, (L->nw + L->nb) * 2 + n_in * 2 * (size_t)L->kh * (size_t)L->kw + n_out * 2);
      charge(&c, 0, vop(&c, TPU_VPU_BIAS_ADD, M, L->filters), 0);
      break;
    }
    case FE_MAXPOOL: case FE_AVGPOOL:   /* P*P-1 max (or add) passes over the output, + a scale */
      charge(&c, 0, (uint64_t)(L->pool * L->pool - 1) * vop(&c, TPU_VPU_MAX, orows, oc) +
                    (L->kind == FE_AVGPOOL ? vop(&c, TPU_VPU_SCALE, orows, oc) : 0), 0);
      break;
    case FE_RELU:
      charge(&c, 0, vop(&c, TPU_VPU_RELU, orows, oc), 0);
      break;
    case FE_TANH: case FE_SIGMOID:
      charge(&c, 0, vop(&c, L->kind == FE_TANH ? TPU_VPU_TANH : TPU_VPU_SIGMOID, orows, oc), 0);
      break;
    case FE_DROPOUT:
      if (train && L->rate > 0) charge(&c, 0, vop(&c, TPU_VPU_MUL, orows, oc), 0);
      break;
    default:
      break;
    }
  }
  /* softmax cross-entropy (loss and its gradient in one op) and accuracy */
  int ncls = m->layers[m->nlayers - 1].out.c;
  snprintf(c.label, sizeof c.label, "softmax_xent");
  charge(&c, 0, vop(&c, TPU_VPU_SOFTMAX_XENT, rows, ncls) + vop(&c, TPU_VPU_ACCURACY, rows, ncls), 0);

  if (train) {
    for (int i = m->nlayers - 1; i >= 0; i--) {
      const fe_layer *L = &m->layers[i];
      size_t n_in = B * fe_shape_size(L->in), n_out = B * fe_shape_size(L->out);
      const int irows = rows * L->in.h * L->in.w, ic = L->in.c;
      snprintf(c.label, sizeof c.label, "bwd %d %s", i, fe_layer_kind_name(L->kind));
      switch (L->kind) {
      case FE_DENSE:
        gemm(&c, true, false, L->in.c, L->units, rows, n_in * 2 + n_out * 2 + L->nw * 4);                 /* dW */
        charge(&c, 0, vop(&c, TPU_VPU_COL_SUM, rows, L->units), 0);                          /* db */
        if (i > 0) gemm(&c, false, true, rows, L->in.c, L->units, L->nw * 2 + n_in * 2);                  /* dX */
        break;
      case FE_CONV2D: {
        int M = rows * L->out.h * L->out.w, K = L->kh * L->kw * L->in.c;
        gemm(&c, true, false, K, L->filters, M, n_in * 2 * (size_t)L->kh * (size_t)L->kw + n_out * 2 + L->nw * 4);
        charge(&c, 0, vop(&c, TPU_VPU_COL_SUM, M, L->filters), 0);
        if (i > 0) {
          gemm(&c, false, true, M, K, L->filters, L->nw * 2 + n_out * 2);
          charge(&c, 0, vop(&c, TPU_VPU_ADD, M, K), n_in * 4);                               /* col2im */
        }
        break;
      }
      case FE_MAXPOOL:    /* route each gradient to its window's winner: a select per input */
        charge(&c, 0, vop(&c, TPU_VPU_RELU_GRAD, irows, ic), 0);
        break;
      case FE_AVGPOOL:
        charge(&c, 0, vop(&c, TPU_VPU_SCALE, irows, ic), 0);
        break;
      case FE_RELU:
        charge(&c, 0, vop(&c, TPU_VPU_RELU_GRAD, irows, ic), 0);
        break;
      case FE_TANH: case FE_SIGMOID:
        charge(&c, 0, vop(&c, L->kind == FE_TANH ? TPU_VPU_TANH_GRAD : TPU_VPU_SIGMOID_GRAD, irows, ic), 0);
        break;
      case FE_DROPOUT:
        if (L->rate > 0) charge(&c, 0, vop(&c, TPU_VPU_MUL, irows, ic), 0);
        break;
      default:
        break;
      }
    }
    /* ring all-reduce: reduce-scatter then all-gather, 2(C-1) hops of
    ** bytes/C, and C-1 adds of a 1/C chunk on the VPU */
    int C = chip->cores;
    size_t bytes = m->nparams * 4;
    out->allreduce_bytes = bytes;
    if (C > 1) {
      double link = chip->ici_link_gbit_per_s * 1e9 / 8.0;
      double hop = ceil_cycles((double)bytes / C / link * hz) + ceil_cycles(chip->ici_latency_ns * 1e-9 * hz);
      out->collective_wait = 2.0 * (C - 1) * hop;
      size_t chunk = (m->nparams + (size_t)C - 1) / (size_t)C;
      double adds = (double)((uint64_t)(C - 1) * vop(&c, TPU_VPU_ADD, vec_rows(&c, chunk), v->lanes));
      snprintf(c.label, sizeof c.label, "all_reduce");
      event(&c, FE_UNIT_ICI, "ring", c.now, out->collective_wait);
      event(&c, FE_UNIT_CORE, "collective_wait", c.now, out->collective_wait);
      event(&c, FE_UNIT_VPU, "adds", c.now + out->collective_wait, adds);
      c.now += out->collective_wait + adds;
      out->vpu_busy += adds;
    }
    snprintf(c.label, sizeof c.label, "optimizer");
    /* optimizer: params, grads and state in f32 through VMEM */
    int state = m->opt.kind == FE_ADAM ? 2 : m->opt.kind == FE_MOMENTUM ? 1 : 0;
    tpu_vpu_op op = m->opt.kind == FE_ADAM ? TPU_VPU_ADAM : m->opt.kind == FE_MOMENTUM ? TPU_VPU_MOMENTUM : TPU_VPU_SGD;
    charge(&c, 0, vop(&c, op, vec_rows(&c, m->nparams), v->lanes), m->nparams * 4 * (size_t)(2 + 2 * state));
  }
  if (c.st != TPU_OK) {
    snprintf(err, errcap, "a GEMM of the model has a shape the MXU model rejects");
    return c.st;
  }
  double total = out->mxu_busy + out->vpu_busy + out->memory_wait + out->infeed_wait + out->collective_wait;
  out->step_cycles = (uint64_t)total;
  out->idle = (double)out->step_cycles - total;
  uint64_t cap = (uint64_t)chip->mxu.rows * (uint64_t)chip->mxu.cols * (uint64_t)chip->mxus_per_core;
  out->mxu_cycles_capacity = cap * out->step_cycles;
  if (nev) *nev = c.nev;
  return TPU_OK;
}
