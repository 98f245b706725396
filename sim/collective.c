/*
** collective.c -- the timing of a collective, in closed form: the cycles
** the engine charges once every core has arrived (tpu_sim_collective_cycles)
** and the algorithm those cycles are of, in words, for the reports
** (tpu_sim_collective_algorithm). docs/PROGRAMS.md has the formulas.
**
** Model: the textbook alpha-beta cost of hierarchical ring algorithms, in
** core cycles, for n bytes per core: a step over a hop costs the hop's
** latency plus its bytes over its bandwidth. A chip's cores form an on-chip
** ring (onchip.*); the chips form a ring, or an x by y 2-D torus (ici.*;
** ici.topology auto: a torus from 4 chips on; a pod slice's layout from
** ici.torus_x/_y), crossed as rings along x, then along y, as TPU pods
** run an all-reduce: per dimension the sum of its rings' steps. Along a
** dimension with wraparound links the ring runs both ways at once, half
** the data each way; along one without (a slice cut from a pod, whose
** ends are not linked) the ring is folded onto the line (0, 2, 4, ..., 5,
** 3, 1): one direction's bandwidth, each step over two links (a line of
** 2 chips: one link). The sum is rounded up to a whole cycle once, at the
** end (at least 1 cycle when there is anything to move).
**
** Not modelled: values (sim/values.c sums them in core order, whatever the
** ring's chunk schedule), contention between collectives or with other
** traffic on the links, HBM traffic of the collective, link failures. The
** engine decides when a collective starts (the last arrival, sim/engine.c);
** this file only says how long it lasts.
*/
#include <stdio.h>

#include "sim/sim_int.h"

/* The collective's plan: c cores per chip, p chips, the chips as q along
** x by r along y (r = 1: a ring), and the link parameters in cycles and
** bytes per cycle. */
typedef struct coll_plan {
  int c, p, r, q;
  double a_on, b_on;           /* on-chip hop: latency (cycles), bytes per cycle */
  double a, b;                 /* ICI hop */
  /* per dimension (0: x, 1: y): the chip's slices sharing one ring
  ** direction (wraparound: ceil(c / 2), both ways; folded: all c) and a
  ** step's latency (wraparound: one hop; folded: two, one on a line of 2) */
  double h[2], ax[2];
  bool wrap[2];
} coll_plan;

static coll_plan plan_of(const tpu_chip_config *cfg) {
  coll_plan k;
  k.c = cfg->cores_per_chip;
  k.p = cfg->cores / cfg->cores_per_chip;
  tpu_chip_torus(cfg, &k.q, &k.r);
  const double hz = cfg->clock_mhz * 1e6;
  k.a_on = cfg->onchip_latency_ns * cfg->clock_mhz / 1000.0;
  k.b_on = cfg->onchip_link_gbit_per_s * 1e9 / 8.0 / hz;
  k.a = cfg->ici_latency_ns * cfg->clock_mhz / 1000.0;
  k.b = cfg->ici_link_gbit_per_s * 1e9 / 8.0 / hz;
  const int len[2] = { k.q, k.r };
  k.wrap[0] = cfg->ici_wrap_x;
  k.wrap[1] = cfg->ici_wrap_y;
  for (int d = 0; d < 2; d++) {
    k.h[d] = k.wrap[d] ? (k.c + 1) / 2 : k.c;
    k.ax[d] = k.wrap[d] || len[d] <= 2 ? k.a : 2 * k.a;
  }
  return k;
}

/* The alpha-beta cost of 'steps' steps of 'bytes' each over hops (a, b). */
static double ab(double steps, double a, double bytes, double b) { return steps * (a + bytes / b); }

/* Hierarchical collectives, in cycles, for n bytes per core (the textbook
** alpha-beta forms; docs/PROGRAMS.md):
**   all_reduce      on-chip ring reduce-scatter among the chip's c cores,
**                   then each core's 1/c slice all-reduced among the p chips
**                   (a ring, or on an r x q torus a ring along the rows then
**                   along the columns, and back), the chip's slices on the
**                   ring's two directions, then on-chip ring all-gather
**   reduce_scatter  the first two stages' reduce-scatter halves
**   all_gather      each core's n around its chip ring, then on-chip
**   broadcast       pipelined along the chips, then along the chip's cores */
static double coll_time(const coll_plan *k, tpu_sim_coll coll, double n) {
  const int c = k->c, p = k->p, r = k->r, q = k->q;
  const double *h = k->h, *ax = k->ax;
  double t = 0;
  switch (coll) {
  case TPU_SIM_ALL_REDUCE:
    t += 2 * ab(c - 1, k->a_on, n / c, k->b_on);
    t += 2 * (ab(q - 1, ax[0], h[0] * n / c / q, k->b) + ab(r - 1, ax[1], h[1] * n / c / q / r, k->b));
    break;
  case TPU_SIM_REDUCE_SCATTER:
    t += ab(c - 1, k->a_on, n / c, k->b_on);
    t += ab(q - 1, ax[0], h[0] * n / c / q, k->b) + ab(r - 1, ax[1], h[1] * n / c / q / r, k->b);
    break;
  case TPU_SIM_ALL_GATHER:
    t += ab(q - 1, ax[0], h[0] * n, k->b) + ab(r - 1, ax[1], h[1] * q * n, k->b);
    t += ab(c - 1, k->a_on, p * n, k->b_on);
    break;
  default:
    if (p > 1) t += n / k->b + (q - 1 + r - 1) * k->a;
    if (c > 1) t += n / k->b_on + (c - 1) * k->a_on;
    break;
  }
  return t;
}

uint64_t tpu_sim_collective_cycles(const tpu_chip_config *cfg, tpu_sim_coll c, int64_t bytes) {
  if (cfg->cores <= 1 || bytes <= 0) return 0;
  const coll_plan k = plan_of(cfg);
  const double t = coll_time(&k, c, (double)bytes);
  uint64_t cyc = sim_ceil_cyc(t - 1e-9 * t);
  return cyc ? cyc : 1;
}

const char *tpu_sim_collective_algorithm(const tpu_chip_config *cfg, tpu_sim_coll coll, char *buf, size_t cap) {
  const coll_plan k = plan_of(cfg);
  static const char *const NAMES[] = { "all-reduce", "all-gather", "reduce-scatter", "broadcast" };
  const char *name = (unsigned)coll < 4 ? NAMES[coll] : "?";
  char on[96] = "", ici[224] = "";
  snprintf(on, sizeof on, "an on-chip ring of the chip's %d cores", k.c);
  if (k.r > 1 && k.wrap[0] && k.wrap[1])
    snprintf(ici, sizeof ici, "a %dx%d 2-D torus of %d chips (rings along the rows, then the columns)", k.r, k.q, k.p);
  else if (k.r > 1)
    snprintf(ici, sizeof ici, "a %dx%d 2-D torus of %d chips (rings along the rows, then the columns; %s folded onto "
             "a line: no wraparound links)", k.r, k.q, k.p, !k.wrap[0] && !k.wrap[1] ? "both" : k.wrap[0] ? "the columns'"
             : "the rows'");
  else snprintf(ici, sizeof ici, "a %sring of %d chips", k.wrap[0] || k.p <= 2 ? "" : "folded ", k.p);
  if (!buf || !cap) return "";
  if (cfg->cores <= 1) snprintf(buf, cap, "%s: none (one core)", name);
  else if (k.p == 1) snprintf(buf, cap, "%s %s over %s", coll == TPU_SIM_BROADCAST ? "pipelined" : "ring", name, on);
  else if (k.c == 1) snprintf(buf, cap, "%s %s over %s", coll == TPU_SIM_BROADCAST ? "pipelined" : "ring", name, ici);
  else if (coll == TPU_SIM_ALL_REDUCE)
    snprintf(buf, cap, "hierarchical all-reduce: ring reduce-scatter over %s, ring all-reduce of each core's 1/%d "
             "slice over %s (the slices on the two ring directions), ring all-gather over %s", on, k.c, ici, on);
  else if (coll == TPU_SIM_REDUCE_SCATTER)
    snprintf(buf, cap, "hierarchical reduce-scatter: ring reduce-scatter over %s, then of each core's 1/%d slice "
             "over %s", on, k.c, ici);
  else if (coll == TPU_SIM_ALL_GATHER)
    snprintf(buf, cap, "hierarchical all-gather: ring all-gather over %s, then over %s", ici, on);
  else
    snprintf(buf, cap, "pipelined broadcast over %s, then over %s", ici, on);
  return buf;
}
