/*
** cmd_info.c -- `tpusim info`: the resolved chip configuration and the
** peaks derived from it (bf16 FLOP/s per core and per chip, HBM bytes per
** FLOP, the roofline ridge point).
*/
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "sim/sim.h"

static const char HELP[] =
  "usage: tpusim info [--chip NAME|FILE] [--set KEY=VALUE]... [--json] [--list]\n\n"
  "Prints the resolved chip configuration (preset or file, then overrides)\n"
  "and the peaks it implies. --list prints the preset names.\n\n";

static int report_json(const char *cmd, const tpu_chip_config *cfg, const tpu_chip_peaks *pk) {
  char *cj = tpu_chip_config_to_json(cfg);
  json_t *chip = cj ? tpu_json_decode(cj, 0, NULL) : NULL;
  tpu_free(cj);
  if (!chip) return cli_runtime_error(cmd, "out of memory");
  json_t *o = json_pack("{s:o, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:s}}",
    "chip", chip, "peaks",
    "clock_hz", cli_json_real(pk->clock_hz),
    "bf16_flops_per_s_per_core", cli_json_real(pk->bf16_flops_per_core),
    "bf16_flops_per_s_per_chip", cli_json_real(pk->bf16_flops_per_chip),
    "bf16_flops_per_s_total", cli_json_real(pk->bf16_flops_total),
    "hbm_bytes_per_s_per_chip", cli_json_real(pk->hbm_bytes_per_s_per_chip),
    "hbm_bytes_per_flop", cli_json_real(pk->hbm_bytes_per_flop),
    "ridge_flops_per_byte", cli_json_real(pk->ridge_flops_per_byte),
    "ici_link_bytes_per_s", cli_json_real(pk->ici_link_bytes_per_s),
    "chips", pk->chips,
    "ici_topology", tpu_ici_topology_name(tpu_ici_topology_resolve(cfg)));
  return cli_print_json(cmd, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
}

static int report_text(const tpu_chip_config *cfg, const tpu_chip_peaks *pk) {
  printf("chip        %s -- %s\n", cfg->name, cfg->description);
  int x, y;
  tpu_chip_torus(cfg, &x, &y);
  printf("layout      %d cores on %d chips (%d per chip), %s ICI", cfg->cores, pk->chips, cfg->cores_per_chip,
         tpu_ici_topology_name(tpu_ici_topology_resolve(cfg)));
  if (y > 1) printf(" %dx%d (x by y; wraparound along x %s, along y %s)", x, y, cfg->ici_wrap_x ? "yes" : "no",
                    cfg->ici_wrap_y ? "yes" : "no");
  printf(", %d host%s (each feeding up to %d chips)\n", cfg->hosts, cfg->hosts == 1 ? "" : "s",
         tpu_chip_chips_per_host(cfg));
  printf("clock       %.0f MHz\n", cfg->clock_mhz);
  printf("mxu         %d x %d per array, %d per core, weights %s\n", cfg->mxu.rows, cfg->mxu.cols,
         cfg->mxus_per_core, cfg->mxu.double_buffer ? "double-buffered" : "single-buffered");
  printf("vpu         %d sublanes x %d lanes; cycles/register: elementwise %d, divide %d, "
         "transcendental %d, cross-lane %d, cross-sublane %d\n", cfg->vpu.sublanes, cfg->vpu.lanes,
         cfg->vpu.cycles_elementwise, cfg->vpu.cycles_divide, cfg->vpu.cycles_transcendental,
         cfg->vpu.cycles_cross_lane, cfg->vpu.cycles_cross_sublane);
  printf("hbm         %g GiB per chip, %g GB/s per chip, %g ns latency\n", cfg->hbm_capacity_gib,
         cfg->hbm_bandwidth_gb_per_s, cfg->hbm_latency_ns);
  printf("vmem        %lld KiB per core\n", (long long)cfg->vmem_capacity_kib);
  printf("ici         %g Gbit/s per link, %g ns per hop\n", cfg->ici_link_gbit_per_s, cfg->ici_latency_ns);
  printf("\npeaks\n");
  printf("  bf16      %.2f TFLOP/s per core, %.2f per chip, %.2f in all\n",
         pk->bf16_flops_per_core / 1e12, pk->bf16_flops_per_chip / 1e12, pk->bf16_flops_total / 1e12);
  printf("  hbm       %.4f bytes per FLOP per chip (ridge point %.1f FLOP/byte)\n",
         pk->hbm_bytes_per_flop, pk->ridge_flops_per_byte);
  printf("\nsource      %s\n", cfg->source);
  return 0;
}

static int print_presets(const char *cmd, bool json) {
  if (!json) {
    for (const char *const *n = tpu_chip_preset_names(); *n; n++) puts(*n);
    return 0;
  }
  json_t *arr = json_array();
  for (const char *const *n = tpu_chip_preset_names(); *n; n++) json_array_append_new(arr, json_string(*n));
  json_t *o = json_pack("{s:o}", "presets", arr);
  return cli_print_json(cmd, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

int cli_cmd_info(int argc, char **argv) {
  const char *cmd = "info";
  cli_common c;
  bool list = false;
  const cli_opt opts[] = { CLI_FLAG("list", &list) };
  int rc = cli_parse(cmd, argc, argv, opts, CLI_NOPTS(opts), &c, NULL, NULL);
  if (rc) return rc;
  if (c.help) return cli_help(HELP, NULL);
  if (list) return print_presets(cmd, c.json);
  tpu_chip_config cfg;
  rc = cli_load_chip(cmd, &c, &cfg);
  if (rc) return rc;
  tpu_chip_peaks pk;
  tpu_chip_peaks_of(&cfg, &pk);
  return c.json ? report_json(cmd, &cfg, &pk) : report_text(&cfg, &pk);
}
