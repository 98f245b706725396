/*
** values.c -- the engine's functional layer: the values each op writes, at
** the tile level (options.level TILE; PE runs as TILE). sim/engine.c times
** every op from shapes and addresses alone and calls these as the op
** resolves: its inputs are final then (their writers resolved first) and
** no later writer of its outputs has resolved (write-after-read
** dependencies). Nothing here reads a cycle, and the timing never reads a
** value: a timing-level run calls none of this and gives the same cycles.
**
**   matmul      tpu_mxu_gemm_acc at the tile level, the MXU's fast kernel:
**               the PE model's bits (bf16 products, f32 sums in the order
**               partial sums travel; mxu/mxu.h, "Numerics"), added into
**               the dst's values when the op accumulates
**   vpu         tpu_vpu_exec on the op's buffers (sim/sim_vpu.c maps them)
**   dma         a copy
**   infeed      the program's fill (tpu_sim_infeed_set_fill), else
**               core * 1000 + batch in every element
**   collective  sums in core order 0..n-1 (tpu_sim_sum_cores), whatever the
**               ring's chunk schedule (sim/collective.c times the ring)
** A value stored into a bf16 buffer is rounded to bf16 (nearest even).
**
** Not modelled: values in flight (an op's outputs appear whole when it
** resolves, not tile by tile or as a transfer's bytes arrive), addresses
** (each buffer is an array of its own, so buffers never alias), and the
** PE level's stepping of every cell (its bits are the tile level's).
*/
#include <string.h>

#include "sim/sim_int.h"

tpu_status sim_values_alloc(sim_core_rt *c) {
  const sim_core_prog *cp = c->cp;
  if (!(c->val = tpu_calloc((size_t)cp->nbufs + 1, sizeof *c->val))) return TPU_ERR_NOMEM;
  for (int b = 0; b < cp->nbufs; b++) {
    const sim_buf *B = &cp->bufs[b];
    const size_t ne = (size_t)(B->rows * B->cols);
    if (!(c->val[b] = tpu_calloc(ne, sizeof(float)))) return TPU_ERR_NOMEM;
    if (B->init) memcpy(c->val[b], B->init, ne * sizeof(float));
  }
  return TPU_OK;
}

void sim_values_free(sim_core_rt *c) {
  if (c->val)
    for (int b = 0; b < c->cp->nbufs; b++) tpu_free(c->val[b]);
  tpu_free(c->val);
}

/* n values into buffer b's array, as its dtype holds them (dst may be src:
** rounding in place). */
static void store(const sim_buf *b, float *dst, const float *src, size_t n) {
  if (dst != src) memmove(dst, src, n * sizeof *dst);
  if (b->dtype == TPU_SIM_BF16) tpu_bf16_round_array(dst, n);
}

tpu_status sim_matmul_values(const tpu_chip_config *cfg, sim_core_rt *c, const sim_op *so) {
  const sim_core_prog *cp = c->cp;
  const tpu_sim_op *o = &so->o;
  const sim_buf *A = &cp->bufs[o->a - 1], *D = &cp->bufs[o->dst - 1];
  const int64_t M = D->rows, N = D->cols, K = o->trans_a ? A->rows : A->cols;
  const float *a = c->val[o->a - 1], *b = c->val[o->b - 1];
  float *at = NULL, *bt = NULL, *cm = tpu_malloc((size_t)(M * N) * sizeof *cm);
  tpu_status st = TPU_ERR_NOMEM;
  if (!cm) goto out;
  if (o->trans_a) {                      /* a is K x M */
    if (!(at = tpu_malloc((size_t)(M * K) * sizeof *at))) goto out;
    for (int64_t i = 0; i < K; i++)
      for (int64_t j = 0; j < M; j++) at[j * K + i] = a[i * M + j];
    a = at;
  }
  if (o->trans_b) {                      /* b is N x K */
    if (!(bt = tpu_malloc((size_t)(K * N) * sizeof *bt))) goto out;
    for (int64_t i = 0; i < N; i++)
      for (int64_t j = 0; j < K; j++) bt[j * N + i] = b[i * K + j];
    b = bt;
  }
  float *d = c->val[o->dst - 1];
  const size_t n = (size_t)(M * N);
  if (o->accumulate) memcpy(cm, d, n * sizeof *cm);   /* the accumulators hold the earlier folds' sums */
  st = tpu_mxu_gemm_acc(&cfg->mxu, cfg->mxus_per_core, TPU_FIDELITY_TILE, o->precision, (int)M, (int)N,
                        (int)K, a, b, cm, o->accumulate, NULL);
  if (st != TPU_OK) goto out;
  store(D, d, cm, n);
out:
  tpu_free(at);
  tpu_free(bt);
  tpu_free(cm);
  return st;
}

tpu_status sim_vpu_values(sim_core_rt *c, const sim_op *so) {
  float *in[TPU_SIM_MAX_IN] = { 0 }, *out[TPU_SIM_MAX_OUT] = { 0 };
  for (int k = 0; k < TPU_SIM_MAX_IN && so->o.in[k]; k++) in[k] = c->val[so->o.in[k] - 1];
  for (int k = 0; k < TPU_SIM_MAX_OUT && so->o.out[k]; k++) out[k] = c->val[so->o.out[k] - 1];
  return sim_vpu_exec(so, c->cp, in, out);
}

void sim_dma_values(sim_core_rt *c, const sim_op *so) {
  const sim_buf *S = &c->cp->bufs[so->o.src - 1], *D = &c->cp->bufs[so->o.dst - 1];
  store(D, c->val[so->o.dst - 1], c->val[so->o.src - 1], (size_t)(S->rows * S->cols));
}

/* Collective values over every core. Sums run in core order 0..n-1
** (tpu_sim_sum_cores, the trainer's order too), whatever the ring's chunk
** schedule: the timing is the ring's, the bits are the one data-parallel sum. */
tpu_status sim_coll_values(tpu_sim_result *r, const int *ops) {
  const int n = r->cores;
  const sim_op *so0 = &r->core[0].cp->ops[ops[0]];
  const tpu_sim_op *o = &so0->o;
  const sim_buf *S0 = &r->core[0].cp->bufs[o->src - 1];
  const int64_t E = S0->rows * S0->cols;
  float *sum = NULL;
  if (o->coll == TPU_SIM_ALL_REDUCE || o->coll == TPU_SIM_REDUCE_SCATTER) {
    if (!(sum = tpu_malloc((size_t)E * sizeof *sum))) return TPU_ERR_NOMEM;
    const float *src[TPU_MAX_CORES];
    for (int q = 0; q < n; q++) src[q] = r->core[q].val[r->core[q].cp->ops[ops[q]].o.src - 1];
    tpu_sim_sum_cores(n, src, E, sum);
  }
  if (o->coll == TPU_SIM_ALL_GATHER) {
    /* dst may alias nobody's src (shapes differ), so write in place */
    for (int c = 0; c < n; c++) {
      const tpu_sim_op *oc = &r->core[c].cp->ops[ops[c]].o;
      const sim_buf *D = &r->core[c].cp->bufs[oc->dst - 1];
      float *d = r->core[c].val[oc->dst - 1];
      for (int q = 0; q < n; q++)
        memcpy(d + (size_t)(q * E), r->core[q].val[r->core[q].cp->ops[ops[q]].o.src - 1], (size_t)E * sizeof *d);
      if (D->dtype == TPU_SIM_BF16) tpu_bf16_round_array(d, (size_t)(n * E));
    }
  } else if (o->coll == TPU_SIM_BROADCAST) {
    const int root = o->root;
    const float *s = r->core[root].val[r->core[root].cp->ops[ops[root]].o.src - 1];
    float *tmp = tpu_malloc((size_t)E * sizeof *tmp);
    if (!tmp) return TPU_ERR_NOMEM;
    memcpy(tmp, s, (size_t)E * sizeof *tmp);
    for (int c = 0; c < n; c++) {
      const tpu_sim_op *oc = &r->core[c].cp->ops[ops[c]].o;
      store(&r->core[c].cp->bufs[oc->dst - 1], r->core[c].val[oc->dst - 1], tmp, (size_t)E);
    }
    tpu_free(tmp);
  } else {
    for (int c = 0; c < n; c++) {
      const tpu_sim_op *oc = &r->core[c].cp->ops[ops[c]].o;
      const sim_buf *D = &r->core[c].cp->bufs[oc->dst - 1];
      if (o->coll == TPU_SIM_ALL_REDUCE)
        store(D, r->core[c].val[oc->dst - 1], sum, (size_t)E);
      else
        store(D, r->core[c].val[oc->dst - 1], sum + E / n * c, (size_t)(E / n));
    }
  }
  tpu_free(sum);
  return TPU_OK;
}

void sim_infeed_values(tpu_sim_result *r, sim_core_rt *c, const sim_op *so, int64_t batch) {
  const sim_buf *D = &c->cp->bufs[so->o.dst - 1];
  float *d = c->val[so->o.dst - 1];
  const size_t n = (size_t)(D->rows * D->cols);
  if (r->p->fill) {
    r->p->fill(r->p->fill_ud, c->id, batch, d, n);
  } else {
    const float v = (float)(c->id * 1000 + batch);
    for (size_t i = 0; i < n; i++) d[i] = v;
  }
  if (D->dtype == TPU_SIM_BF16) tpu_bf16_round_array(d, n);
}
