/*
** bench_hbm.c -- the memory and interconnect model, measured on the engine
** (docs/CHIPS.md shows the tables and the plot):
**   1. achieved HBM bandwidth of a streaming VPU op against the transfer
**      size, one core and every core of the board, each preset (teach with
**      transfers of 64 B to 16 KiB: its VMEM is 64 KiB). Each core streams
**      1024 chunks of the transfer size (at most 32 MiB): DMA a chunk
**      into one of a ring of VMEM slots, relu it into an output slot, DMA
**      that back to a fresh HBM buffer. Bandwidth = bytes moved both ways / run time; its
**      share of peak is against chip bandwidth / cores per chip (what each
**      core gets when every core streams). Goal: >= 90% of the share for
**      transfers of 1 MiB and more, one core and all.
**   2. all-reduce time against bytes and cores beside the alpha-beta
**      formula of the algorithm the engine names (computed here);
**   3. a GEMM grid: the roofline's bound verdict beside the engine's
**      (tpu_sim_result_bound), with the weight_load share.
** Timing level, deterministic: these are simulated figures, not host times.
** With a file argument it also writes the bandwidth table as CSV there.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/test_util.h"

static void add_op(tpu_sim_program *p, int core, tpu_sim_op op) {
  if (tpu_sim_add_op(p, core, &op, NULL) != TPU_OK) {
    fprintf(stderr, "bench_hbm: %s\n", tpu_sim_program_error(p));
    exit(1);
  }
}

/* One core's stream: 'total' bytes in chunks of 's' through a ring of VMEM slots. */
static void stream_core(tpu_sim_program *p, int core, int64_t s, int64_t total, int depth) {
  const int64_t cols = s / 4 < 128 ? s / 4 : 128, rows = s / 4 / cols, chunks = total / s;
  int slot[64], oslot[64];
  char name[32];
  for (int d = 0; d < depth; d++) {
    snprintf(name, sizeof name, "v%d", d);
    slot[d] = tpu_sim_buffer(p, core, name, TPU_SIM_VMEM, TPU_SIM_F32, rows, cols);
    snprintf(name, sizeof name, "o%d", d);
    oslot[d] = tpu_sim_buffer(p, core, name, TPU_SIM_VMEM, TPU_SIM_F32, rows, cols);
  }
  /* software-pipelined as a streaming kernel is: the loads of the next
  ** 'depth' chunks are issued ahead, and results go to their own slots, so
  ** the in-order DMA queue never waits behind a write-back (a load into a
  ** slot waits only for the relu that read it) */
  int hin[2], hout = 0;
  for (int64_t i = 0; i < chunks + depth; i++) {
    if (i < chunks) {
      snprintf(name, sizeof name, "in%lld", (long long)i);
      hin[i % 2] = tpu_sim_buffer(p, core, name, TPU_SIM_HBM, TPU_SIM_F32, rows, cols);
      add_op(p, core, (tpu_sim_op){ .kind = TPU_SIM_DMA, .src = hin[i % 2], .dst = slot[i % depth] });
    }
    const int64_t j = i - depth + 1;     /* the chunk computed and written back now */
    if (j < 0 || j >= chunks) continue;
    snprintf(name, sizeof name, "out%lld", (long long)j);
    hout = tpu_sim_buffer(p, core, name, TPU_SIM_HBM, TPU_SIM_F32, rows, cols);
    const int v = slot[j % depth], o = oslot[j % depth];
    add_op(p, core, (tpu_sim_op){ .kind = TPU_SIM_VPU, .vpu_op = TPU_VPU_RELU, .in = { v }, .out = { o } });
    add_op(p, core, (tpu_sim_op){ .kind = TPU_SIM_DMA, .src = o, .dst = hout });
  }
}

/* Achieved bytes per second of 'active' cores streaming chunks of s. */
static double stream_bw(const tpu_chip_config *cfg, int active, int64_t s) {
  const int64_t total = s * 1024 < 32 << 20 ? s * 1024 : 32 << 20;   /* 1024 chunks, at most 32 MiB */
  int depth = (int)(cfg->vmem_capacity_kib * 1024 / 4 / s);   /* in and out slots, half the VMEM */
  if (depth > 16) depth = 16;
  if (depth > cfg->dma_outstanding) depth = cfg->dma_outstanding;
  if (depth < 2) depth = 2;
  tpu_sim_program *p;
  if (tpu_sim_program_create(cfg->cores, &p) != TPU_OK) exit(1);
  /* active cores spread over the chips first (one core: core 0) */
  const int chips = cfg->cores / cfg->cores_per_chip;
  for (int a = 0; a < active; a++) stream_core(p, (a % chips) * cfg->cores_per_chip + a / chips, s, total, depth);
  tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 2 };
  tpu_sim_result *r;
  if (tpu_sim_run(cfg, p, &o, &r) != TPU_OK) {
    fprintf(stderr, "bench_hbm: %s\n", tpu_sim_program_error(p));
    exit(1);
  }
  const double t = (double)tpu_sim_result_cycles(r) / (cfg->clock_mhz * 1e6);
  tpu_sim_result_destroy(r);
  tpu_sim_program_destroy(p);
  return 2.0 * (double)total * active / t;
}

/* 3. A GEMM grid as `tpusim matmul --cores 2` runs it (one chip of two
** cores): the roofline's verdict beside the engine's; true when they agree. */
static bool gemm_grid(void) {
  static const int64_t Ms[] = { 16, 64, 256, 512, 1024, 4096 };
  static const int64_t NK[][2] = { { 512, 512 }, { 2048, 2048 }, { 256, 4096 }, { 4096, 256 } };
  tpu_chip_config cfg;
  char err[256];
  if (tpu_chip_config_load("tpu-v2-8", &cfg, err, sizeof err) != TPU_OK ||
      tpu_chip_config_set(&cfg, "cores=2", err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); exit(1); }
  tpu_chip_peaks pk;
  tpu_chip_peaks_of(&cfg, &pk);
  printf("\n## Bound verdicts on a GEMM grid (tpu-v2-8, one chip of 2 cores, operands from HBM)\n\n");
  printf("| M | N | K | intensity / ridge | roofline | engine | weight_load share | agree |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  bool all = true;
  for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++)
    for (size_t j = 0; j < sizeof NK / sizeof NK[0]; j++) {
      tpu_sim_program *p;
      double bytes;
      if (tpu_sim_gemm_program(&cfg, 2, Ms[i], NK[j][0], NK[j][1], TPU_PREC_BF16, NULL, NULL, &p, &bytes, err,
                               sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); exit(1); }
      tpu_sim_options o = { .level = TPU_FIDELITY_TIMING, .threads = 1 };
      tpu_sim_result *r;
      if (tpu_sim_run(&cfg, p, &o, &r) != TPU_OK) { fprintf(stderr, "%s\n", tpu_sim_program_error(p)); exit(1); }
      const double x = 2.0 * (double)Ms[i] * (double)NK[j][0] * (double)NK[j][1] / bytes / pk.ridge_flops_per_byte;
      const char *roof = x < 1 ? "memory" : "compute", *eng = tpu_sim_result_bound(r);
      tpu_sim_stalls st;
      tpu_sim_result_stalls(r, -1, -1, &st);
      const double wl = (double)st.cycles[TPU_SIM_WEIGHT_LOAD] / (2.0 * (double)tpu_sim_result_cycles(r));
      const bool agree = !strcmp(roof, eng);
      all &= agree;
      printf("| %lld | %lld | %lld | %.2f | %s | %s | %.1f%% | %s |\n", (long long)Ms[i], (long long)NK[j][0],
             (long long)NK[j][1], x, roof, eng, 100 * wl, agree ? "yes" : "NO");
      tpu_sim_result_destroy(r);
      tpu_sim_program_destroy(p);
    }
  printf("\nverdicts agree on every point: %s\n", all ? "yes" : "NO");
  return all;
}

static double ring(int p, double m, double a, double b) { return 2.0 * (p - 1) * (a + m / p / b); }

int main(int argc, char **argv) {
  static const char *const chips[] = { "tpu-v2-8", "tpu-v3-8", "teach" };
  static const int64_t sizes[] = { 4096, 16384, 65536, 262144, 1048576, 4194304 };
  static const int64_t small[] = { 64, 256, 1024, 4096, 16384 };   /* teach: 64 KiB of VMEM */
  FILE *csv = argc > 1 ? fopen(argv[1], "w") : NULL;
  if (argc > 1 && !csv) { perror(argv[1]); return 1; }
  if (csv) fprintf(csv, "chip,cores,transfer_bytes,gb_per_s_per_core,share_pct\n");
  bool ok = true;
  printf("\n## HBM bandwidth of a streaming VPU op against the transfer size (timing level)\n\n");
  printf("| chip | cores streaming | transfer | GB/s per core | %% of the core's share | GB/s total |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  for (int ci = 0; ci < 3; ci++) {
    tpu_chip_config cfg;
    char err[256];
    if (tpu_chip_config_load(chips[ci], &cfg, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
    const double share = cfg.hbm_bandwidth_gb_per_s / cfg.cores_per_chip;
    for (int active = 1; active <= cfg.cores; active += cfg.cores - 1)
      for (size_t i = 0; i < 6 - (ci == 2); i++) {
        const int64_t sz = ci == 2 ? small[i] : sizes[i];
        const double bw = stream_bw(&cfg, active, sz) / 1e9, per = bw / active;
        printf("| %s | %d | %lld %s | %.2f | %.1f%% | %.2f |\n", chips[ci], active,
               (long long)(sz >= 1024 ? sz / 1024 : sz), sz >= 1024 ? "KiB" : "B", per, 100 * per / share, bw);
        if (csv) fprintf(csv, "%s,%d,%lld,%.3f,%.2f\n", chips[ci], active, (long long)sz, per, 100 * per / share);
        if (sz >= 1048576 && per < 0.9 * share) ok = false;
      }
  }
  printf("\ngoal: >= 90%% of the core's share (chip bandwidth / cores per chip) from 1 MiB on: %s\n",
         ok ? "met" : "NOT met");
  printf("\n## All-reduce on tpu-v2-8 (4 chips x 2 cores): the engine against the alpha-beta formula\n\n");
  printf("| cores | bytes per core | engine cycles | formula cycles | algorithm |\n| --- | --- | --- | --- | --- |\n");
  static const double bytes[] = { 4096, 1 << 20, 64 << 20 };
  for (int cores = 2; cores <= 8; cores *= 2)
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
      tpu_chip_config c;
      char err[256], set[32], alg[512];
      snprintf(set, sizeof set, "cores=%d", cores);
      if (tpu_chip_config_load("tpu-v2-8", &c, err, sizeof err) != TPU_OK ||
          tpu_chip_config_set(&c, set, err, sizeof err) != TPU_OK) { fprintf(stderr, "%s\n", err); return 1; }
      const double clk = c.clock_mhz * 1e6, n = bytes[i];
      const double a_on = c.onchip_latency_ns * 1e-9 * clk, b_on = c.onchip_link_gbit_per_s * 1e9 / 8 / clk;
      const double a = c.ici_latency_ns * 1e-9 * clk, b = c.ici_link_gbit_per_s * 1e9 / 8 / clk;
      const int p = cores / 2;
      double want = ring(2, n, a_on, b_on);
      if (p == 2) want += ring(2, n / 2, a, b);
      if (p == 4) want += ring(2, n / 2, a, b) + ring(2, n / 4, a, b);   /* 2 x 2 torus: rows, then columns */
      const uint64_t got = tpu_sim_collective_cycles(&c, TPU_SIM_ALL_REDUCE, (int64_t)n);
      printf("| %d | %.0f | %llu | %.0f | %s |\n", cores, n, (unsigned long long)got, ceil(want),
             tpu_sim_collective_algorithm(&c, TPU_SIM_ALL_REDUCE, alg, sizeof alg));
      if (got != (uint64_t)ceil(want)) ok = false;
    }
  ok &= gemm_grid();
  if (csv) fclose(csv);
  return ok ? 0 : 1;
}
