/*
** scalesim.h -- SCALE-Sim v2 (github.com/scalesim-project/scale-sim-v2):
** its input files, its layer lowering, its compute and memory models, its
** reports, and the same layers on tpusim's own MXU and chip engine.
**
** What SCALE-Sim models. One systolic array of rows x cols PEs runs a
** network one layer at a time. A layer is a convolution (or a GEMM)
** lowered to a GEMM of M x N x K and mapped onto the array in one of three
** dataflows; timing comes from shapes and addresses only, never from data
** values, and its figures are per layer CSV reports.
**
** Inputs (tpu_ss_config_read, tpu_ss_topology_read). The .cfg is an INI
** file as Python's configparser reads it: [section] headers, "key: value"
** or "key = value", keys case-insensitive, '#' and ';' comment lines;
** unknown sections and keys are errors. A topology is a CSV with a header
** line, then one layer a line (spaces around fields and SCALE-Sim's
** trailing comma allowed, rows of empty fields skipped, columns past the
** last one used ignored): conv "name, IFMAP height, width, filter height,
** width, channels, filters, stride[, stride width]" or GEMM "name, M, N,
** K". A conv layer whose name contains "DP" is depthwise: one
** single-channel layer per channel, named NAMEChannel_i, as SCALE-Sim runs
** it. Messages name the file, line and column and what is allowed.
**
** Lowering (tpu_ss_lower; SCALE-Sim's, no padding):
**   ofmap_h = ceil((H - Fh + Sh) / Sh), ofmap_w likewise (a last window
**   running past the edge still counts)
**   M = ofmap_h x ofmap_w, N = filters, K = Fh x Fw x channels
** A GEMM line (name, M, N, K) is the conv layer M x K with a 1 x K filter
** and N filters.
**
** The compute model (tpu_ss_compute_layer). Each dataflow maps the GEMM
** onto the array as S_r x S_c spatial and T temporal:
**   ws (weights stay): S_r = K, S_c = N, T = M
**   os (outputs stay): S_r = M, S_c = N, T = K
**   is (inputs stay):  S_r = K, S_c = M, T = N
** folded into ceil(S_r/rows) x ceil(S_c/cols) folds, each charged as a full
** fold with no overlap between folds (no double buffering):
**   ws, is: 2 rows + cols + T - 2 cycles a fold (rows to load the stationary
**           operand, T to stream, rows + cols - 2 to fill and drain)
**   os:     rows + cols + T - 2 cycles a fold
** and SCALE-Sim reports the index of the last cycle, one less than the
** count: Total Cycles = folds x per_fold - 1. Its utilization figures are
**   Overall Util %     = 100 M N K / (Total Cycles x rows x cols)
**   Mapping Efficiency = mean over folds of used PEs / (rows x cols)
**   Compute Util %     = mean over folds of used PEs x T /
**                        (rows x cols x (per_fold + cols - 1)) for ws, is
**                        (rows x cols x per_fold) for os
** and its SRAM traffic (words) the operand elements each fold reads or
** writes. O(1) a layer: the demand matrices' shapes are computed, never
** built.
**
** The memory model (tpu_ss_mem_layer; SCALE-Sim's CALC bandwidth mode,
** docs/SCALESIM.md, *The memory model*). The layer's demand rows (one a
** cycle, the fold order above) go through three buffers of the configured
** SRAM sizes, one word each address:
**   IFMAP, filter read buffers: words are fetched from DRAM in sets of
**     size/100 words; an address is a DRAM read unless it was fetched in the
**     current epoch of 50 sets; an epoch ends when its 50th set fills, at
**     cycle c_i. The prefetch trace, 10 words a cycle, runs from
**     first_request - 5 set_words (the first epoch lands just before the
**     first request) to c_last + 1, or, with no epoch ever filled, from
**     -ceil(sets x set_words / 10) to -1.
**   OFMAP write buffer: words fill lines of `cols` words; when more than
**     half the buffer is taken (SCALE-Sim's free space below ceil(size/2))
**     and no drain runs, the open line is closed and the next
**     ceil(floor(size/2) / cols) lines drain, one a cycle; a chunk counts
**     its lines as full but for the pad of its last line. A write finding
**     the buffer full during a drain stalls the array until the drain ends
**     (the Stall Cycles); after the last row the rest drains.
** Avg DRAM BW = words / (last cycle - first cycle + 1) of each trace.
** Addresses are the operand matrices' (a conv layer's IFMAP windows
** overlap, so its DRAM reads are fewer than its SRAM reads); the offsets
** only shift them.
**
** The runs (tpu_ss_run_layers, tpu_ss_chip_run). The same layers go to one
** of three models, so they can be put side by side:
**   TPU_SS_COMPAT  SCALE-Sim's compute model, and in CALC mode its memory
**                  side: SCALE-Sim's cycles and reports, to the cycle;
**   TPU_SS_MXU     tpusim's MXU at the timing level (tpu_mxu_gemm) in the
**                  same dataflow: the next stationary tile loads while one
**                  streams, a partial fold charged for what it uses;
**   TPU_SS_CHIP    the chip engine: each layer one GEMM built by
**                  tpu_sim_gemm_program (as `matmul --cores` builds one),
**                  operands in HBM, M split over the cores, blocks double
**                  buffered; Total Cycles the engine's, Stall Cycles the
**                  cycles the cores did not compute.
** The reports (tpu_ss_write_reports) are SCALE-Sim's COMPUTE_REPORT.csv
** and BANDWIDTH_REPORT.csv, and with the memory model its DRAM columns
** and DETAILED_ACCESS_REPORT.csv, byte for byte as SCALE-Sim writes them
** (its percentages as Python prints floats), in LOGDIR/RUN/
** (tpu_ss_run_dir_name).
**
** Not modelled (docs/SCALESIM.md, *Not modelled*): SCALE-Sim's USER
** bandwidth mode (its read_buffer.py stalls the array on prefetches; here
** USER mode reports the stall-free compute figures, 0 Stall Cycles and no
** DRAM columns), its per-cycle trace files, padding (a padded layer is
** written with its padded input size). Outside compat mode the reports have
** no DRAM columns (that memory model is tied to SCALE-Sim's schedule). On
** the chip engine, which is weight-stationary only: overlap between layers
** (a layer's first loads wait for the previous layer's last write-back, as
** if each were a program launch), the activation between layers (no VPU
** op), the im2col layout change (the GEMM's A is taken as already laid out
** in HBM, SCALE-Sim's convention too); operands are f32 in HBM.
*/
#ifndef TPU_SCALESIM_H
#define TPU_SCALESIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "mxu/mxu.h"                   /* tpu_mxu_dataflow */
#include "sim/sim.h"                   /* tpu_chip_config, tpu_sim_stalls (the chip engine) */

/* {==================================================================
** The input files
** ================================================================== */
typedef struct tpu_ss_config {
  char run_name[128];          /* [general] run_name */
  long rows, cols;             /* ArrayHeight, ArrayWidth */
  long ifmap_kib, filter_kib, ofmap_kib;   /* *SramSzkB */
  long ifmap_offset, filter_offset, ofmap_offset;
  long bandwidth;              /* Bandwidth (words per cycle; the first if a list) */
  long banks;                  /* MemoryBanks, 1 when absent */
  bool user_bandwidth;         /* InterfaceBandwidth USER (else CALC) */
  tpu_mxu_dataflow dataflow;   /* Dataflow ws|os|is */
} tpu_ss_config;

typedef struct tpu_ss_layer {
  char name[64];
  int line;                    /* the topology line it came from (messages) */
  long ifmap_h, ifmap_w, filter_h, filter_w, channels, filters, stride_h, stride_w;
  uint64_t ofmap_h, ofmap_w;   /* ceil((ifmap - filter + stride) / stride), no padding */
  uint64_t m, n, k;            /* the GEMM: ofmap pixels, filters, filter_h x filter_w x channels */
} tpu_ss_layer;

typedef struct tpu_ss_topology { tpu_ss_layer *layers; int n, cap; } tpu_ss_topology;
/* The layers a topology may expand to (a depthwise line is a layer per
** channel), decided from each line's fields before its layers are made:
** one line "convDP, 3, 3, 3, 3, 16777216, 1, 1" was 2^24 layers and 2.8 GB. */
#define TPU_SS_MAX_LAYERS 65536

/* What a file looks like from its first lines, for a message when -c and
** -t are swapped: TPU_SS_LOOKS_CFG (a '[section]' line), _TOPOLOGY (a
** line of comma-separated fields before any section), or _UNKNOWN (also
** when it cannot be read). Reads at most its first 16 lines; can't fail. */
typedef enum tpu_ss_looks { TPU_SS_LOOKS_UNKNOWN = 0, TPU_SS_LOOKS_CFG, TPU_SS_LOOKS_TOPOLOGY } tpu_ss_looks;
tpu_ss_looks tpu_ss_looks_like(const char *path);

/* Reads a SCALE-Sim .cfg into *out. TPU_OK, or with the message in err
** ("FILE:LINE:COL: ..."): TPU_ERR_INPUT for a malformed file, the file
** reader's status (TPU_ERR_IO, TPU_ERR_INPUT, TPU_ERR_NOMEM) when it
** cannot be read. */
tpu_status tpu_ss_config_read(const char *path, tpu_ss_config *out, char *err, size_t errcap);
/* Reads a conv topology (gemm false) or a GEMM one into *out, each layer
** lowered; on success *out owns its layers (free with
** tpu_ss_topology_free), on failure it holds none. Returns as above; more
** than TPU_SS_MAX_LAYERS layers is TPU_ERR_INPUT at the line that passes it. */
tpu_status tpu_ss_topology_read(const char *path, bool gemm, tpu_ss_topology *out, char *err, size_t errcap);
void tpu_ss_topology_free(tpu_ss_topology *t);   /* a zeroed one is fine */
/* Fills ofmap_h, ofmap_w and m, n, k from the conv fields (the lowering
** above; filter no larger than the IFMAP, strides >= 1). This function
** can't fail. */
void tpu_ss_lower(tpu_ss_layer *ly);
/* }================================================================== */

/* {==================================================================
** SCALE-Sim's compute model
** ================================================================== */
typedef struct tpu_ss_compute {
  uint64_t sr, sc, t;          /* the mapping: spatial rows, spatial cols, temporal */
  uint64_t row_folds, col_folds;
  uint64_t cycles_per_fold;
  uint64_t total_cycles;       /* SCALE-Sim's "Total Cycles": folds x per_fold - 1 */
  uint64_t macs;               /* M N K */
  double overall_util_pct, mapping_eff_pct, compute_util_pct;
  uint64_t ifmap_sram_reads, filter_sram_reads, ofmap_sram_writes;  /* words */
} tpu_ss_compute;

/* Evaluates one M x N x K layer (each >= 1, M N K < 2^53) on a rows x cols
** array in dataflow df, by the formulas above. This function can't fail. */
void tpu_ss_compute_layer(int rows, int cols, tpu_mxu_dataflow df, uint64_t M, uint64_t N, uint64_t K,
                          tpu_ss_compute *out);
/* }================================================================== */

/* {==================================================================
** SCALE-Sim's memory side (CALC mode)
** ================================================================== */
typedef struct tpu_ss_access {
  int64_t start, stop;         /* first and last cycle of the trace (SCALE-Sim's convention) */
  uint64_t count;              /* words read or written */
} tpu_ss_access;

typedef struct tpu_ss_conv {   /* a layer as SCALE-Sim's topology gives it */
  uint64_t ifmap_h, ifmap_w, filter_h, filter_w, channels, filters, stride_h, stride_w;
  uint64_t ofmap_h, ofmap_w;   /* ceil((ifmap - filter + stride) / stride) */
} tpu_ss_conv;

typedef struct tpu_ss_mem {
  uint64_t total_cycles, stall_cycles;  /* Total Cycles (stalls included), Stall Cycles */
  tpu_ss_access sram[3], dram[3];       /* IFMAP, filter, OFMAP (DETAILED_ACCESS_REPORT) */
  double dram_bw[3];                    /* Avg IFMAP/FILTER/OFMAP DRAM BW, words a cycle */
  const char *unsupported;              /* non-NULL: not modelled (why): SCALE-Sim itself fails on the
                                           layer, an operand has more than 2^50 words, or the model
                                           would take more than 2^27 steps (a layer far beyond what
                                           SCALE-Sim can run: bounded rather than left to hang) */
} tpu_ss_mem;

/* Runs one layer (rows x cols array, dataflow df) through the memory model
** with SRAMs of sram_words[3] words (IFMAP, filter, OFMAP; SCALE-Sim's
** SzkB x 1024). every_word false takes the closed forms where they hold
** (O(folds x (rows + cols) + drains) then); true walks every request and
** every row (the reference the tests hold the closed forms to). Both give
** the same figures. TPU_OK (check out->unsupported) or TPU_ERR_NOMEM. */
tpu_status tpu_ss_mem_layer(int rows, int cols, tpu_mxu_dataflow df, const tpu_ss_conv *layer,
                            const uint64_t sram_words[3], bool every_word, tpu_ss_mem *out);
/* }================================================================== */

/* {==================================================================
** A network, layer by layer, and SCALE-Sim's reports
** ================================================================== */
typedef enum tpu_ss_model {
  TPU_SS_MXU = 0,              /* tpusim's MXU at the timing level (the default) */
  TPU_SS_COMPAT,               /* SCALE-Sim v2's own models */
  TPU_SS_CHIP                  /* the chip engine (tpu_ss_chip_run) */
} tpu_ss_model;

typedef struct tpu_ss_result { /* one layer's figures, as the reports give them */
  tpu_ss_compute s;            /* SCALE-Sim's figures (cycles and utilization replaced outside compat) */
  uint64_t cycles;             /* the Total Cycles reported */
  uint64_t stall;              /* the Stall Cycles reported (0 but on the chip engine) */
  bool has_mem;                /* compat, CALC: SCALE-Sim's memory side in mem */
  tpu_ss_mem mem;
} tpu_ss_result;

/* Runs every layer of tp (read from tp_path) with cfg (read from cfg_path;
** the paths are for messages) in TPU_SS_COMPAT (compat true) or TPU_SS_MXU,
** filling rows[0..tp->n) and *total (the sum of their cycles). TPU_OK, or
** with the message in err: TPU_ERR_INPUT for a layer the model does not
** take (too large for the MXU, or one SCALE-Sim's memory model does not
** reproduce), TPU_ERR_NOMEM. */
tpu_status tpu_ss_run_layers(const tpu_ss_config *cfg, const char *cfg_path, const tpu_ss_topology *tp,
                             const char *tp_path, bool compat, tpu_ss_result *rows, uint64_t *total, char *err,
                             size_t errcap);

/* The run's directory, named after what ran, so that runs of one config
** with other dataflows or models sit side by side instead of overwriting
** each other. SCALE-Sim names a run by the config's run_name, which by its
** own convention ends in the dataflow (GoogleTPU_v1_ws); a cfg->dataflow
** that differs from the file's (file_df) replaces that ending, or adds one.
** TPU_SS_COMPAT then writes where SCALE-Sim would; tpusim's models add
** theirs: "_tpusim" for its MXU, "_CHIP_Ncores" for the chip engine (chip,
** unused otherwise). Can't fail (names are cut at the buffer's end). */
void tpu_ss_run_dir_name(const tpu_ss_config *cfg, tpu_mxu_dataflow file_df, tpu_ss_model model,
                         const tpu_chip_config *chip, char *out, size_t size);
/* Writes COMPUTE_REPORT.csv and BANDWIDTH_REPORT.csv (and, when the rows
** have the memory side, DETAILED_ACCESS_REPORT.csv) into LOGDIR/RUN_DIR,
** creating both directories as needed; each file whole or not at all.
** TPU_OK, or TPU_ERR_IO or TPU_ERR_NOMEM with the message in err. */
tpu_status tpu_ss_write_reports(const char *logdir, const char *run_dir, const tpu_ss_topology *tp,
                                const tpu_ss_result *rows, char *err, size_t errcap);
/* }================================================================== */

/* {==================================================================
** A topology on the chip engine (tpusim run --topology, scalesim --chip).
** Each layer is one GEMM (M x N x K of its lowering), built by
** tpu_sim_gemm_program exactly as `matmul --cores` builds one; the layers
** run one after another, each its own engine run, so a network's cycles
** are the sum of its layers'.
** ================================================================== */
typedef struct tpu_ss_chip_layer {
  uint64_t cycles;             /* the layer's run */
  tpu_sim_stalls stall;        /* summed over the cores */
  tpu_sim_stalls core[TPU_SIM_GEMM_MAX_CORES];      /* per core */
  uint64_t memory_busy;        /* tpu_sim_result_memory_busy over the cores */
  const char *bound;           /* tpu_sim_result_bound: "memory" or "compute" */
  double hbm_bytes;            /* HBM traffic of the layer's program */
  double hbm_operand_bytes[3]; /* the same by operand: ifmap (A) read, filter (B) read, ofmap (C) written */
} tpu_ss_chip_layer;

typedef struct tpu_ss_chip_result {
  int n;                       /* layers */
  tpu_ss_chip_layer *layers;   /* n of them (tpu_ss_chip_result_free) */
  uint64_t cycles;             /* sum over the layers */
  tpu_sim_stalls stall;        /* summed over layers and cores */
  tpu_sim_stalls core[TPU_SIM_GEMM_MAX_CORES];      /* per core, summed over layers */
  uint64_t memory_busy;
  double hbm_bytes, macs;      /* sums; macs = sum of M*N*K */
  double wall_s;               /* host time of the runs */
} tpu_ss_chip_result;

/* Runs topology tp (read from 'path', for messages) on 'chip' (its cores
** all used: cut it first) at 'level' (tile: zero-valued operands, the same
** cycles) on 'threads' host threads (0: the host's). With 'trace' set,
** appends one Perfetto trace of all layers (each a step, one after
** another) to *trace (the caller's; free trace->s with tpu_free, also on
** failure). TPU_OK and *out filled (free with tpu_ss_chip_result_free; a
** zeroed one is fine), or with the message in err and *out empty: a layer
** the GEMM builder refuses is "PATH:LINE: layer 'NAME' (GEMM M x N x K):
** why" (TPU_ERR_INPUT or the builder's status), an engine failure the
** engine's status, TPU_ERR_NOMEM. */
tpu_status tpu_ss_chip_run(const char *path, const tpu_ss_topology *tp, const tpu_chip_config *chip,
                           tpu_fidelity level, int threads, tpu_text *trace, tpu_ss_chip_result *out, char *err,
                           size_t errcap);
void tpu_ss_chip_result_free(tpu_ss_chip_result *r);
/* The bound of a whole run: tpu_sim_result_bound's comparison (transfers
** in flight plus weight_load against mxu_busy) over the summed counters:
** "memory" or "compute". This function can't fail. */
const char *tpu_ss_chip_bound(const tpu_ss_chip_result *r);
/* SCALE-Sim's figures of a chip run into rows[0..tp->n): Total Cycles the
** engine's, Stall Cycles those in which the cores computed nothing (mean
** over the cores), Overall Util the MACs over every PE of the cores in
** Total Cycles, Compute Util over the PEs in the cycles they computed;
** Mapping Efficiency stays SCALE-Sim's (shapes only, from cfg's array).
** This function can't fail. */
void tpu_ss_chip_results(const tpu_ss_config *cfg, const tpu_ss_topology *tp, const tpu_chip_config *chip,
                         const tpu_ss_chip_result *run, tpu_ss_result *rows);
/* }================================================================== */
#endif /* TPU_SCALESIM_H */
