/*
** sim.h -- the chip: configuration, presets and derived peaks.
**
** A chip configuration describes a TPU-like board: `cores` TensorCores,
** grouped `cores_per_chip` to a chip that shares one HBM; each core holds
** `mxu.per_core` systolic arrays of mxu.rows x mxu.cols, a vector unit and a
** VMEM scratchpad; cores talk over ICI links. Configurations come from the
** presets embedded in the binary (the JSON files in sim/presets) or from a JSON file,
** then `--set key=value` overrides; every value is validated once, here.
** The JSON format and every key are documented in docs/CHIPS.md.
*/
#ifndef TPU_SIM_H
#define TPU_SIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim/base.h"
#include "mxu/mxu.h"
#include "vpu/vpu.h"

#define TPU_MAX_CORES 16

typedef enum tpu_ici_topology { TPU_ICI_AUTO = 0, TPU_ICI_RING, TPU_ICI_TORUS } tpu_ici_topology;

typedef struct tpu_chip_config {
  char name[64];
  char description[256];
  char source[1024];
  int cores;                       /* 1..16 */
  int cores_per_chip;              /* divides cores; cores of a chip share its HBM */
  double clock_mhz;                /* core clock */
  tpu_mxu_config mxu;              /* one array's geometry and buffering */
  int mxus_per_core;               /* 1..8 */
  tpu_vpu_config vpu;
  double hbm_capacity_gib;         /* per chip */
  double hbm_bandwidth_gb_per_s;   /* per chip, shared by its cores (GB = 1e9 bytes) */
  double hbm_latency_ns;
  int64_t vmem_capacity_kib;       /* per core */
  double ici_link_gbit_per_s;      /* per link, per direction */
  double ici_latency_ns;           /* per hop */
  tpu_ici_topology ici_topology;   /* AUTO: ring for <= 8 cores, 2-D torus beyond */
} tpu_chip_config;

/* Peaks derived from a configuration (computed at report time). */
typedef struct tpu_chip_peaks {
  double clock_hz;
  double bf16_flops_per_core;      /* 2 * rows * cols * mxus * clock */
  double bf16_flops_per_chip;
  double bf16_flops_total;
  double hbm_bytes_per_s_per_chip;
  double hbm_bytes_per_flop;       /* per chip: bandwidth / peak */
  double ridge_flops_per_byte;     /* roofline ridge point: peak / bandwidth */
  double ici_link_bytes_per_s;
  int chips;
} tpu_chip_peaks;

/* Names of the embedded presets, NULL-terminated; the first is the default. */
const char *const *tpu_chip_preset_names(void);
/* The preset's JSON text, or NULL if there is no such preset. */
const char *tpu_chip_preset_json(const char *name);

/* Loads 'name_or_file': a preset name, else a path to a JSON file. A file
** may start from a preset with "base": "NAME" and give only what differs;
** without a base every key is required. On error returns TPU_ERR_CONFIG (or
** TPU_ERR_IO for an unreadable file) and writes into err a message naming
** the file, line:column where known, the key and what is allowed. 'out' is
** written only on success. */
tpu_status tpu_chip_config_load(const char *name_or_file, tpu_chip_config *out,
                                char *err, size_t errcap);
/* Applies one "key=value" override ("mxu.rows=8", "ici.topology=torus"),
** then re-validates the whole configuration. On error 'cfg' is unchanged. */
tpu_status tpu_chip_config_set(tpu_chip_config *cfg, const char *assignment,
                               char *err, size_t errcap);
/* Checks every field and the relations between them. */
tpu_status tpu_chip_config_validate(const tpu_chip_config *cfg, char *err, size_t errcap);
/* The configuration as a JSON object text (the same keys as the file
** format), newly allocated: tpu_free() it. NULL on out-of-memory. */
char *tpu_chip_config_to_json(const tpu_chip_config *cfg);
void tpu_chip_peaks_of(const tpu_chip_config *cfg, tpu_chip_peaks *out);
const char *tpu_ici_topology_name(tpu_ici_topology t);
/* The topology actually used (AUTO resolved by core count). */
tpu_ici_topology tpu_ici_topology_resolve(const tpu_chip_config *cfg);
#endif /* TPU_SIM_H */
