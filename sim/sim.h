/*
** sim.h -- the chip: its configuration, and the engine that runs programs
** on it cycle by cycle.
**
** What it models. A chip configuration describes a TPU-like board:
** `cores` TensorCores, grouped `cores_per_chip` to a chip that shares one
** HBM; each core holds `mxu.per_core` systolic arrays of mxu.rows x
** mxu.cols (mxu/mxu.h), a vector unit (vpu/vpu.h) and a VMEM scratchpad;
** cores talk over ICI links. Configurations come from the presets embedded
** in the binary (sim/presets) or a JSON file, then `--set key=value`
** overrides; every value is validated once, here (docs/CHIPS.md). The
** engine runs a program (one instruction stream per core, ops on named
** buffers; docs/PROGRAMS.md) on five in-order units per core (DMA, MXU,
** VPU, INFEED, COLLECTIVE), each core's DMA engine keeping several
** transfers in flight with HBM bandwidth shared fairly by a chip's cores,
** and collectives timed in closed form: an on-chip ring among a chip's
** cores, then the chips' ICI ring or 2-D torus. A matmul's tiles follow the MXU's tile walk (tpu_mxu_walk) through
** each array's schedule.
**
** Invariants.
**   - Every cycle of every core is in exactly one stall kind of the stall
**     table (sim/stall.def: mxu_busy, vpu_busy, weight_load, infeed_wait,
**     memory_wait, collective_wait, idle, in that priority); per core and per step the
**     kinds sum to the run's cycles (checked on every run).
**   - Results, cycles and the event log do not depend on the number of host
**     threads: chips advance in parallel between collectives and share
**     nothing else; collective values are summed in a fixed order.
**   - The tile and timing levels give the same cycles; the tile level's
**     values are those of tpu_mxu_gemm and tpu_vpu_exec.
**
** The observer. With options.events (or trace) a run keeps, per core, an
** event log (tpu_sim_result_events): each op with its cycle stamps in
** program order (a DMA's issue, pool entry and completion; a collective's
** arrival, start and end; ...), each matmul's tiles in walk order (array,
** shape, weight load, stream start, end), then the core's states as stall
** intervals. It is assembled after the run from per-core records, so its
** order is fixed. Consumers read it instead of re-deriving what the engine
** knows: the trace writer (sim/trace.c, every trace of the tree), the
** training trace (frontend), the visualizer's timeline and tile replay.
*/
#ifndef TPU_SIM_H
#define TPU_SIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/base.h"
#include "mxu/mxu.h"
#include "vpu/vpu.h"

/* The most cores a chip configuration holds: a v3 pod's 2048 (docs/CHIPS.md,
** "Pod slices"). Alike cores are simulated once (sim_int.h), so a slice's
** data-parallel step costs about one core's. */
#define TPU_MAX_CORES 2048
/* The most cores a GEMM is split across (tpu_sim_gemm_*: `matmul --cores`,
** `run --topology`, `scalesim --chip`, the visualizer), each core's figures
** kept side by side: a board's. */
#define TPU_SIM_GEMM_MAX_CORES 16
/* The most MXUs a core holds (mxu.per_core): the engine keeps each core's
** arrays' state and per-array counts in arrays of this size. The MXU's
** GEMM driver (tpu_mxu_gemm, which computes the values) takes as many. */
#define TPU_MAX_MXUS_PER_CORE TPU_MXU_MAX_ARRAYS
/* The longest run the engine times: 2^53 cycles (exact in a double; 104
** days at 1 GHz). Cycle counts given to it (infeed ready cycles) must not
** exceed it, and a run that would last longer fails with TPU_ERR_RANGE
** instead of wrapping its 64-bit counters. */
#define TPU_SIM_MAX_CYCLES (UINT64_C(1) << 53)

typedef enum tpu_ici_topology { TPU_ICI_AUTO = 0, TPU_ICI_RING, TPU_ICI_TORUS } tpu_ici_topology;

typedef struct tpu_chip_config {
  char name[64];
  char description[256];
  char source[1024];
  int cores;                       /* 1..16 */
  int cores_per_chip;              /* divides cores; cores of a chip share its HBM */
  double clock_mhz;                /* core clock */
  tpu_mxu_config mxu;              /* one array's geometry and buffering */
  int mxus_per_core;               /* 1..TPU_MAX_MXUS_PER_CORE */
  tpu_vpu_config vpu;
  double hbm_capacity_gib;         /* per chip */
  double hbm_bandwidth_gb_per_s;   /* per chip, shared by its cores (GB = 1e9 bytes) */
  double hbm_latency_ns;
  int64_t vmem_capacity_kib;       /* per core */
  double ici_link_gbit_per_s;      /* per link, per direction */
  double ici_latency_ns;           /* per hop */
  tpu_ici_topology ici_topology;   /* how the chips are linked; AUTO: a 2-D torus from 4 chips on, else a ring */
  /* Added with issue #34, pod slices (optional in files; docs/CHIPS.md,
  ** "Pod slices"). */
  int ici_torus_x, ici_torus_y;    /* chips along each dimension (x * y = chips); 0, 0: chosen (tpu_chip_torus) */
  bool ici_wrap_x, ici_wrap_y;     /* wraparound links along x, along y (default true: a board's torus) */
  int hosts;                       /* host machines, each feeding ceil(chips / hosts) chips (default: one per 4 chips) */
  /* Added with issue #15 (optional in files: defaults below when absent). */
  int dma_outstanding;             /* DMA transfers in flight per core (default 16) */
  int64_t dma_request_bytes;       /* a core's DMA engine issues one request of this size per cycle (default 512) */
  double onchip_link_gbit_per_s;   /* between two cores of one chip, per direction (default: the ICI link's) */
  double onchip_latency_ns;        /* per on-chip hop (default: the ICI latency) */
  /* The step compiler's mechanisms (docs/COMPILER.md), each on unless a
  ** chip file or --set turns it off ("compiler.fusion": false), so that
  ** each one's effect can be measured in one sweep; with all three off and the
  ** float32 dtype policy a training step is lowered as before them. Only
  ** the training step's lowering (frontend) reads them. */
  bool compiler_fusion;            /* element-wise work fused into kernels; BN statistics in the producer */
  bool compiler_implicit_conv;     /* convolutions as implicit GEMMs: input windows formed in VMEM */
  bool compiler_memory_planning;   /* activations in HBM by liveness: the step's peak, not their sum */
  /* The host side of a training run (docs/TRAINING.md, "The host side of a
  ** fit"; optional in files: the tpu-vm host's values when absent, see
  ** tpu_chip_host_preset). Only the training run reads them. */
  double host_dispatch_s;          /* one call from the host to the TPU and its results back */
  double host_infeed_gb_per_s;     /* host-to-device link, per chip (GB = 1e9 bytes) */
  double host_compile_s;           /* XLA's compile of one program: a fixed part ... */
  double host_compile_s_per_kernel;/* ... and a part per kernel of the compiled program */
} tpu_chip_config;

/* The host setups a chip may be driven from (`tpusim train --host NAME`),
** NULL-terminated; the first is the default (what a chip file without
** "host" keys gets). */
const char *const *tpu_chip_host_names(void);
/* Sets cfg's host.* keys to the named setup's (docs/CHIPS.md gives each
** value's source or assumption). TPU_ERR_CONFIG with the names allowed
** when there is no such setup. */
tpu_status tpu_chip_host_preset(tpu_chip_config *cfg, const char *name, char *err, size_t errcap);

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
/* The chips' arrangement: *x chips along x (the first ring of a
** collective), *y along y; a ring is x = chips, y = 1. ici.torus_x/_y when
** set, else for a torus y the largest divisor of the chips <= their square
** root. Can't fail. */
void tpu_chip_torus(const tpu_chip_config *cfg, int *x, int *y);
/* The chips one host feeds at most: ceil(chips / hosts). */
int tpu_chip_chips_per_host(const tpu_chip_config *cfg);
/* Cuts cfg to its first 'cores' cores (1..cfg->cores), as `--cores N`
** does: chips of at most cores_per_chip cores (the largest count that
** divides 'cores'); a slice cut to fewer chips is laid out anew
** (tpu_chip_torus's choice), keeps a wraparound link only along a
** dimension it still spans whole, and keeps its chips per host. */
void tpu_chip_config_cut(tpu_chip_config *cfg, int cores);
/* {==================================================================
** The chip engine (sim/engine.c; design in sim/sim_int.h; the JSON program
** format in docs/PROGRAMS.md).
**
** A program holds one instruction stream per core: operations on named
** buffers, each buffer living in the chip's HBM or in the core's VMEM.
** Dependencies are derived from the buffers an op reads and writes (read
** after write, write after read, write after write, in program order). Each
** core has five units that run their queues in program order, one per op
** kind of the op table (sim/ops.def): DMA, MXU, VPU, INFEED and
** COLLECTIVE; an op starts when its inputs are ready and its unit
** is free, and lasts as long as the unit's model says:
**   dma        up to dma.outstanding per core in flight; HBM latency, then
**              its bytes at its core's fair share of the chip's HBM bandwidth
**              (at most dma.request_bytes a cycle per core)
**   matmul     its tiles in walk order (tpu_mxu_walk) through their arrays'
**              tpu_mxu_sched (the core's arrays keep their state between
**              ops, so weight loads overlap the previous op)
**   vpu        the VPU's cycle cost for the op and shape
**   infeed     dequeues the next batch of the core's infeed queue; waits
**              until the batch's ready cycle (an infeed stall)
**   collective waits for every core to arrive (the slowest), then ring or
**              torus timing over the ICI links; real numerics in a fixed
**              summation order
** Every cycle of every core is classified by the stall table
** (sim/stall.def), in its priority: mxu_busy, vpu_busy, weight_load,
** infeed_wait, memory_wait, collective_wait or idle; the kinds sum to the run's cycles
** on every core and every step (checked on every run). Results, cycles and
** event logs do not depend on the number of host threads.
** ================================================================== */
typedef enum tpu_sim_space { TPU_SIM_HBM = 0, TPU_SIM_VMEM } tpu_sim_space;
typedef enum tpu_sim_dtype { TPU_SIM_F32 = 0, TPU_SIM_BF16 } tpu_sim_dtype;
typedef enum tpu_sim_kind {   /* the op kinds (sim/ops.def, which says what each does) */
#define X(id, name, json, unit, track, row) TPU_SIM_##id,
#include "sim/ops.def"
#undef X
} tpu_sim_kind;
#define X(id, name, json, unit, track, row) +1
enum { TPU_SIM_NKINDS = 0      /* the number of op kinds: one per row */
#include "sim/ops.def"
};
#undef X
typedef enum tpu_sim_coll {
  TPU_SIM_ALL_REDUCE = 0,      /* dst = sum over cores of src (same shape) */
  TPU_SIM_ALL_GATHER,          /* dst = the cores' src, concatenated by core (n x size) */
  TPU_SIM_REDUCE_SCATTER,      /* dst = core i's 1/n slice of the sum (size/n) */
  TPU_SIM_BROADCAST            /* dst = src of core 'root' */
} tpu_sim_coll;
enum {                         /* the stall taxonomy (sim/stall.def), in priority order */
#define X(id, name, kind, busy, color, report) TPU_SIM_##id,
#include "sim/stall.def"
#undef X
  TPU_SIM_NSTALL
};
/* The stall table's columns (sim/stall.def). These functions can't fail. */
const char *tpu_sim_stall_name(int s);                  /* "mxu_busy", ...; "?" out of range */
/* The kind an op of kind k makes true over its interval (TPU_SIM_MXU_BUSY
** for a matmul, ...); TPU_SIM_IDLE for an unknown kind. */
int tpu_sim_stall_of_kind(tpu_sim_kind k);
/* true for the kinds in which a unit computes (mxu_busy, vpu_busy); the
** others are the core waiting (or idle), the ones traces draw on a core's
** stall track. false out of range. */
bool tpu_sim_stall_busy(int s);
/* The kind at position i (0..TPU_SIM_NSTALL-1) of the training report's
** order (the table's 'report' column); -1 out of range. */
int tpu_sim_stall_in_report_order(int i);
/* The op table's columns (sim/ops.def). These functions can't fail. */
const char *tpu_sim_kind_name(tpu_sim_kind k);          /* "dma", "matmul", ...; "?" out of range */
const char *tpu_sim_kind_unit(tpu_sim_kind k);          /* its unit: "DMA", "MXU", ...; "?" out of range */
const char *tpu_sim_coll_name(tpu_sim_coll c);          /* "all_reduce", ... */
/* The one order of every data-parallel sum: dst[e] = src[0][e] + src[1][e]
** + ... + src[n-1][e] in f32, core by core (the engine's all_reduce and
** reduce_scatter values, the front-end trainer's gradients). dst may alias
** any src. This function can't fail. */
void tpu_sim_sum_cores(int n, const float *const *src, int64_t count, float *dst);

#define TPU_SIM_MAX_IN 4
#define TPU_SIM_MAX_OUT 3
/* One operation. Buffers are handles from tpu_sim_buffer (>= 1); 0 means
** none, so designated initializers leave unused operands empty. */
typedef struct tpu_sim_op {
  tpu_sim_kind kind;
  const char *name;            /* label in traces and errors (copied); NULL: "<kind>#<index>" */
  int step;                    /* training step (0..TPU_SIM_MAX_STEPS-1, nondecreasing along a core's program) */
  int src, dst;                /* DMA, INFEED (dst only), COLLECTIVE; MATMUL, dst only */
  int a, b;                    /* MATMUL: a is M x K (K x M if trans_a), b is K x N (N x K if trans_b) */
  bool trans_a, trans_b;
  bool accumulate;             /* MATMUL: dst += product (else dst = product) */
  tpu_precision precision;     /* MATMUL: bf16 (default), bf16x3, bf16x6 */
  /* VPU: an op of vpu/vpu.h (TPU_VPU_ADD, TPU_VPU_RELU, TPU_VPU_ADAM, ...; the
  ** JSON program format names it, "fn": "add").
  ** in[] holds the operands it only reads, in the order X, Y, LABELS, GRAD;
  ** out[] those it writes, in the order OUT, OUT2, IDX, PARAM, M, V (PARAM,
  ** M and V are updated in place). The op's rows x cols is the shape of X,
  ** or of PARAM for the optimizers. Labels and argmax indices are held in
  ** buffers as f32 values (exact integers). */
  tpu_vpu_op vpu_op;
  int in[TPU_SIM_MAX_IN];
  int out[TPU_SIM_MAX_OUT];
  const tpu_vpu_params *params; /* VPU scalars (copied); NULL: tpu_vpu_params_default() */
  tpu_sim_coll coll;           /* COLLECTIVE */
  int root;                    /* BROADCAST: the source core */
  /* An ordering the buffers cannot express: 1 + the index of an earlier op
  ** of the same core that must end before this one starts (0: none). For
  ** programs that reach one HBM region through several buffers (a tensor
  ** written tile by tile, then all-reduced whole), where dependencies by
  ** buffer identity would miss the link. */
  int after;
} tpu_sim_op;

typedef struct tpu_sim_program tpu_sim_program;   /* opaque */

/* A program for 'cores' cores (1..TPU_MAX_CORES), empty. On success *out
** owns it (tpu_sim_program_destroy); on failure *out is NULL. */
tpu_status tpu_sim_program_create(int cores, tpu_sim_program **out);
void tpu_sim_program_destroy(tpu_sim_program *p);             /* NULL is a no-op */
int  tpu_sim_program_cores(const tpu_sim_program *p);
int  tpu_sim_program_ops(const tpu_sim_program *p, int core);  /* ops on that core */
/* The message of the last failed call on p (or of tpu_sim_run with p):
** names the core, the op (index and name) or buffer, and what was wrong. */
const char *tpu_sim_program_error(const tpu_sim_program *p);

/* Op 'index' of 'core' as added (kind, step, operands, flags); name
** points into p (valid while p lives), params is NULL. false (and
** *out zeroed) when out of range. */
bool tpu_sim_program_op(const tpu_sim_program *p, int core, int index, tpu_sim_op *out);
/* The core's infeed queue: its batch count, and their ready cycles through
** *ready_cycles (borrowed from p; NULL when empty). */
int64_t tpu_sim_program_infeed(const tpu_sim_program *p, int core, const uint64_t **ready_cycles);

/* Adds a rows x cols buffer named 'name' (copied; unique within the core)
** to one core. Returns its handle (>= 1) or 0 on error (bad shape, duplicate
** name, out of memory; see tpu_sim_program_error). Values start at zero.
** Shapes: rows and cols 1..TPU_SIM_MAX_DIM, at most TPU_SIM_MAX_ELEMS
** elements (a byte count of 2^50 at most, so sums of them stay far from
** wrapping); what a run can hold is the chip's HBM and VMEM capacity,
** checked by tpu_sim_run, and at the tile level the host's memory. */
#define TPU_SIM_MAX_DIM ((int64_t)1 << 31)
#define TPU_SIM_MAX_ELEMS ((int64_t)1 << 48)
int tpu_sim_buffer(tpu_sim_program *p, int core, const char *name, tpu_sim_space space,
                   tpu_sim_dtype dtype, int64_t rows, int64_t cols);
/* The handle of 'name' on 'core', or 0. */
int tpu_sim_buffer_find(const tpu_sim_program *p, int core, const char *name);
/* rows * cols of a buffer, or 0 for a bad handle. */
int64_t tpu_sim_buffer_elems(const tpu_sim_program *p, int core, int buf);
/* A buffer's shape; false (and zeros) for a bad handle. */
bool tpu_sim_buffer_shape(const tpu_sim_program *p, int core, int buf, int64_t *rows, int64_t *cols);
/* Sets a buffer's initial values: rows*cols floats, copied (rounded to bf16
** for a bf16 buffer). Used at the tile level; ignored at the timing level. */
tpu_status tpu_sim_buffer_init(tpu_sim_program *p, int core, int buf, const float *values);
/* Appends an op to a core's program, after checking its operands exist and
** their shapes agree (TPU_ERR_INPUT with a message otherwise). Returns the
** op's index in the core's program through *index when non-NULL. A
** program holds at most TPU_SIM_MAX_OPS ops, all cores together (a core
** that shares another's program adds none: they are held once): beyond,
** TPU_ERR_RANGE. A run is bounded too: tpu_sim_run.
** Costs O(1) (amortized) whatever the program's size; so do
** tpu_sim_buffer and tpu_sim_buffer_find. */
tpu_status tpu_sim_add_op(tpu_sim_program *p, int core, const tpu_sim_op *op, int *index);
/* Room for 'ops' ops on a core in all (an optimization for builders that
** know their size: the op array is then allocated once, exactly, instead of
** doubling). TPU_ERR_INPUT (bad core, shared core, ops beyond
** TPU_SIM_MAX_OPS), TPU_ERR_NOMEM. */
tpu_status tpu_sim_program_reserve(tpu_sim_program *p, int core, int64_t ops);
/* The engine's bound on a program's size: every op costs the engine about
** 32 bytes per run and the program about 200 (docs/PROGRAMS.md). Builders
** that can know their size from their shapes (the JSON loader with its
** repeat, the training step's lowering) refuse before building anything. */
#define TPU_SIM_MAX_OPS ((int64_t)1 << 24)
/* Op steps are 0..TPU_SIM_MAX_STEPS-1: a run keeps every core's stall
** breakdown per step (about 60 bytes per step and core). */
#define TPU_SIM_MAX_STEPS (1 << 20)
/* Core 'to' runs the program of core 'from': the same buffers (initial
** values included) and ops, shared, not copied, so a data-parallel program
** is built once. 'to' must be empty (no buffers, no ops) and not shared
** from; afterwards neither core takes more buffers, initial values or ops
** (those calls fail with TPU_ERR_INPUT). Each core keeps its own infeed
** queue: 'to' starts with a copy of from's, and tpu_sim_infeed may replace
** either. Errors: TPU_ERR_INPUT (bad cores, 'to' not empty), TPU_ERR_NOMEM. */
tpu_status tpu_sim_program_share(tpu_sim_program *p, int from, int to);
/* The core's infeed queue: n batches with the cycle at which each is ready
** (copied; nondecreasing, at most TPU_SIM_MAX_CYCLES). Replaces any earlier queue. Batch values come
** from 'fill' when set (called at the tile level with the batch index and
** the destination buffer's floats), else batch b of core c is filled with
** the value c * 1000 + b (a test source). 'fill' may be called from several
** host threads at once, for different cores. */
typedef void (*tpu_sim_infeed_fill)(void *ud, int core, int64_t batch, float *dst, size_t n);
tpu_status tpu_sim_infeed(tpu_sim_program *p, int core, int64_t n, const uint64_t *ready_cycles);
void tpu_sim_infeed_set_fill(tpu_sim_program *p, tpu_sim_infeed_fill fill, void *ud);

/* Reads a JSON program (docs/PROGRAMS.md) for a chip of 'cores' cores.
** 'file' names the source in messages. A program that would exceed
** TPU_SIM_MAX_OPS or TPU_SIM_MAX_STEPS (its lists' lengths times repeat) is
** refused before anything is built. On error returns TPU_ERR_INPUT (or
** TPU_ERR_NOMEM) and writes "FILE:LINE:COL: field 'ops[3].src': ..." into
** err; *out is NULL. */
tpu_status tpu_sim_program_parse(const char *text, const char *file, int cores,
                                 tpu_sim_program **out, char *err, size_t errcap);

typedef struct tpu_sim_options {
  tpu_fidelity level;          /* TILE: values and cycles; TIMING: cycles only (PE runs as TILE) */
  int threads;                 /* host threads; 0: the host's cores */
  bool events;                 /* keep the event log (tpu_sim_result_events) */
  bool trace;                  /* for the trace writers; implies events */
} tpu_sim_options;

/* The observer: what the engine saw, as events with cycle stamps, one log
** per core (tpu_sim_result_events). Each core's log lists, in this order:
**   - every op in program order, each as one event of its kind (type ==
**     its tpu_sim_kind), a matmul's followed by its tiles in walk order
**     (tpu_mxu_walk, all arrays);
**   - then the core's states over the run as TPU_SIM_EV_STALL intervals in
**     time order: maximal runs of one stall kind, covering [0, the run's
**     cycles) without gap or overlap, so per kind they sum to
**     tpu_sim_result_stalls(r, core, -1).
** Times per type (all cycles; intervals are [start, end)):
**   type        start                   mid                       end
**   MATMUL      inputs ready            first weight load (busy)  one past its last result
**   TILE        weight load starts      streaming starts          one past its last result
**   DMA         issued                  joins the HBM pool        complete
**   VPU         starts                  = start                   done
**   INFEED      asks for batch 'batch'  = start                   the batch is there
**   COLLECTIVE  this core arrives       all have arrived: the     done
**                                       transfer starts
**   STALL       the state 'stall' ...   = start                   ... until here
** The log is built after the run from per-core records, so it is the same
** for any number of host threads. */
typedef enum tpu_sim_event_type {
#define X(id, name, json, unit, track, row) TPU_SIM_EV_##id = TPU_SIM_##id,
#include "sim/ops.def"
#undef X
  TPU_SIM_EV_TILE,             /* one tile of the matmul 'op' */
  TPU_SIM_EV_STALL             /* one state of the core */
} tpu_sim_event_type;

typedef struct tpu_sim_event {
  tpu_sim_event_type type;
  int core;
  int op;                      /* the op's index in the core's program; -1 for STALL */
  uint64_t start, mid, end;    /* see the table above */
  int stall;                   /* STALL: the kind (TPU_SIM_MXU_BUSY ...) */
  int64_t batch;               /* INFEED: the batch dequeued (0, 1, ... along the core) */
  tpu_mxu_walk_tile tile;      /* TILE: its place in the walk (shape, offsets, pass, array) */
} tpu_sim_event;

typedef struct tpu_sim_stalls { uint64_t cycles[TPU_SIM_NSTALL]; } tpu_sim_stalls;
typedef struct tpu_sim_result tpu_sim_result;     /* opaque */

/* Runs program p on chip cfg (cfg->cores must equal the program's cores).
** Errors: TPU_ERR_RANGE (VMEM or HBM capacity exceeded: the message names
** the core, the op and the bytes; a run longer than TPU_SIM_MAX_CYCLES: the message names the
** first op that ends past it; a matmul whose rows alone would stream longer, before the run; more than
** TPU_SIM_MAX_OPS ops over the cores the run simulates: alike cores count once at the timing level without
** the event log, every core otherwise, before the run), TPU_ERR_INPUT (mismatched collectives,
** too few infeed batches), TPU_ERR_NOMEM; message in
** tpu_sim_program_error(p). On success *out owns the result
** (tpu_sim_result_destroy). p is not changed and may be run again; it must
** outlive the result (the result refers to its ops and buffers). */
tpu_status tpu_sim_run(const tpu_chip_config *cfg, tpu_sim_program *p,
                       const tpu_sim_options *opt, tpu_sim_result **out);
void     tpu_sim_result_destroy(tpu_sim_result *r);                /* NULL is a no-op */
uint64_t tpu_sim_result_cycles(const tpu_sim_result *r);           /* the run's length */
int      tpu_sim_result_cores(const tpu_sim_result *r);
int      tpu_sim_result_steps(const tpu_sim_result *r);            /* 1 + the largest step */
/* Stall breakdown of one core (core -1: summed over cores), over the whole
** run (step -1) or one step. A core's step s spans from the end of its
** step s-1 ops to the end of its step s ops (the last step to the end of
** the run). This function can't fail; out of range gives zeros. */
void tpu_sim_result_stalls(const tpu_sim_result *r, int core, int step, tpu_sim_stalls *out);
/* Cycles in which core 'core' (-1: summed over the cores) had a DMA in
** flight, whatever else it did (the stall table counts only the cycles in
** which nothing of higher priority ran as memory_wait). Can't fail. */
uint64_t tpu_sim_result_memory_busy(const tpu_sim_result *r, int core);
/* Which resource bounds the run, summed over the cores: "memory" when the
** cores had transfers in flight (tpu_sim_result_memory_busy) plus weights
** shifting in that compute did not hide (weight_load) for longer than the
** MXUs computed (mxu_busy), else "compute". With transfers overlapping
** compute, memory_wait alone says only what was not hidden; this compares
** the two resources' occupancy. The roofline's verdict (intensity against
** the ridge point) agrees on a grid of GEMMs (tests/check_sim.c). */
const char *tpu_sim_result_bound(const tpu_sim_result *r);
/* The cycle at which a core's step ends (its last op of that step is done). */
uint64_t tpu_sim_result_step_end(const tpu_sim_result *r, int core, int step);
/* Start and end (exclusive) cycle of op 'index' of 'core'. */
void tpu_sim_result_op_times(const tpu_sim_result *r, int core, int index,
                             uint64_t *start, uint64_t *end);
/* When op 'index' of 'core' makes its unit busy: a matmul's first weight
** load (the stall accounting's matmul interval is [busy, end): its
** weight_load part first, then mxu_busy); the start for the other kinds.
** 0 out of range. */
uint64_t tpu_sim_result_op_busy(const tpu_sim_result *r, int core, int index);
/* A buffer's final values (rows*cols floats, owned by r), or NULL at the
** timing level or for a bad handle. */
const float *tpu_sim_result_buffer(const tpu_sim_result *r, int core, int buf);
/* The event log of one core (needs options.events or options.trace):
** *ev gets the array (owned by r), the count is returned; 0 (and NULL)
** without a log or out of range. */
size_t tpu_sim_result_events(const tpu_sim_result *r, int core, const tpu_sim_event **ev);

/* {==================================================================
** Traces (sim/trace.c): Chrome/Perfetto trace-event JSON, written from
** the runs' event logs (they need options.trace). Timestamps are
** microseconds of simulated time (cycles / clock MHz).
** ================================================================== */
/* One layout for every trace (trace.c has the picture): a process per
** core, its "core (stalls)" track with the waiting states, per unit (MXU,
** VPU, DMA, ICI, infeed) as many tracks as it has ops in flight together
** (so no track's slices overlap, as Perfetto needs), counters of the DMA
** transfers in flight and their HBM GB/s, and flow arrows from each DMA
** to the matmul waiting for it. Slice args keep the cycles.
** One run: newly allocated, tpu_free() it; NULL on out-of-memory or
** without trace. */
char *tpu_sim_result_trace_json(const tpu_sim_result *r);
/* Training steps, one run per step, appended to 'out': begin writes the
** header and the cores' names; add appends run r, shifted by t0_us, its
** slices tagged with 'step' (TPU_ERR_INPUT without trace); end closes the
** trace. Out of memory shows in out->oom. */
void tpu_sim_trace_steps_begin(tpu_text *out, const char *chip, int cores);
tpu_status tpu_sim_trace_steps_add(tpu_text *out, const tpu_sim_result *r, long step, double t0_us);
void tpu_sim_trace_steps_end(tpu_text *out);
/* }================================================================== */
/* {==================================================================
** The lowering (sim/lower.c): one core's program built from tensors in
** HBM and tiles of them streamed through VMEM. It holds THE one GEMM
** lowering every path uses -- tpusim matmul --cores, run --topology,
** scalesim --chip and viz (tpu_sim_gemm_program below) and the training
** step (frontend's step lowering) -- and the tile walks of element-wise
** passes. The same code either builds the ops or, made without a program,
** only counts them (ops, bytes moved, multiply-adds, tensor bytes): a
** builder sizes, and refuses, a program before building it by running
** itself, never by a formula kept equal to it by hand.
**
** Tiles. The core's VMEM of V bytes (vmem_capacity_kib) sets the budget.
** A GEMM's tiles come from a square S x S, S the largest power of two up
** to 1024 with 48 S^2 <= V (512 on 16 MiB, 32 on teach's 64 KiB): six
** slots (a, b and c, two each, so that the next tile's DMA overlaps this
** tile's compute) of S^2 f32 values, twice over for the edge shapes a
** slot meets. C[M x N] = op(A).op(B) is cut into result tiles of mt x nt
** over kt-deep slices: nt = min(N, S), kt = min(K, S), mt = min(M, S^2 /
** max(nt, kt)), then kt = min(K, S^2 / max(mt, nt)) (an extent that
** splits its dimension is cut to whole sublane groups of 8): a narrow
** GEMM takes more rows a tile. An operand reused across result tiles
** whose whole fits in V/8 stays in VMEM for the GEMM (loaded once). The
** engine checks VMEM liveness on every run and refuses an overflow.
** Element-wise passes walk tiles of 2Q values, Q = V/256 (up to 6 slots of
** 4 shapes: 3/4 of V).
**
** Order. Per result tile (mb, nb) in row-major order, for each kb: load
** the a and b tiles (or take the cached block; loaded at its first use),
** then the matmul (accumulating from kb 1). A result tile's epilogue runs
** on it in VMEM (bias_add of a 1 x N bias, an activation; and for dW, db
** = the column sums of B); its store is deferred until the next tile's
** first loads are issued, so that the DMA unit, which runs in program
** order, fetches ahead instead of queueing behind it.
**
** Sections. A lowering's ops are grouped in sections ("fwd 1 dense"): a
** section labels its ops in traces ("<label> matmul", "<label> matmul
** dma") and owns its VMEM buffers, made by role, slot and shape at first
** use ("s3 a0 16x256") and live only within it (the engine checks VMEM
** liveness and capacity).
**
** Tensors in HBM. A tensor is rows x cols f32 values, declared once by
** name (a later declaration of the name is the same tensor). Its tiles are
** addressed one of two ways:
**   blocks  each tile is an HBM buffer of its own ("A@256,512"), holding
**           the tensor's values when the declaration gave them: what the
**           tile level computes with (tpusim matmul --cores);
**   views   (a view group: "hbm") timing only: a tile is the buffer of its
**           shape in the group ("hbm 16x256"), shared by every tensor of
**           the group, and the whole tensor is one more buffer so that HBM
**           capacity is checked. Shared views order same-shape tiles as
**           one buffer would (write after read); the step lowering's
**           tensors are views.
** Not modelled: tile DMAs are never strided gathers (a tile's bytes are
** charged as one transfer), and nothing orders a tile read after a write of
** another tile of the same tensor but program order (the DMA unit issues in
** order; 'after' links say where more is needed).
** ================================================================== */
typedef struct tpu_sim_lowering tpu_sim_lowering;   /* opaque */

/* What a GEMM's tiling is (the Tiles paragraph): mt x nt result tiles over
** kt-deep slices, MB x NB x KB of them, and which operands stay in VMEM. */
typedef struct tpu_sim_tiling {
  int64_t mt, nt, kt, MB, NB, KB;
  bool cache_a, cache_b;
} tpu_sim_tiling;
/* The tiling of an M x N x K GEMM on cfg's VMEM. Can't fail (shapes >= 1). */
tpu_sim_tiling tpu_sim_gemm_tiling(const tpu_chip_config *cfg, int64_t M, int64_t N, int64_t K);

/* What a tensor's bytes count as in the totals (and refusals). */
typedef enum tpu_sim_tensor_class {
  TPU_SIM_T_ACTIVATION = 0, TPU_SIM_T_PARAMETER, TPU_SIM_T_GRADIENT, TPU_SIM_T_OPTIMIZER, TPU_SIM_T_NCLASS
} tpu_sim_tensor_class;

/* What a lowering built (or would build), summed since its creation. */
typedef struct tpu_sim_lower_counts {
  double ops;                  /* ops added (a double: a count may pass 2^63) */
  double hbm_bytes;            /* bytes its DMAs move */
  double macs;                 /* the multiply-adds its matmuls do, passes included (useful ones when
                                  a GEMM says so) */
  double tensor_bytes[TPU_SIM_T_NCLASS];   /* the distinct tensors it declared, by class */
  double class_bytes[TPU_SIM_T_NCLASS];    /* hbm_bytes by the class of the tensor each DMA moves */
} tpu_sim_lower_counts;

/* A lowering onto core 'core' of p (ops are appended to what p holds), or,
** with p NULL, one that only counts. VMEM and the tile budget come from
** cfg. On success *out owns it (tpu_sim_lower_destroy; p must outlive it);
** TPU_ERR_CONFIG when cfg's VMEM cannot hold 8 values per tile (err says
** so), TPU_ERR_NOMEM. */
tpu_status tpu_sim_lower_create(const tpu_chip_config *cfg, tpu_sim_program *p, int core, tpu_sim_lowering **out,
                                char *err, size_t errcap);
void tpu_sim_lower_destroy(tpu_sim_lowering *L);           /* NULL is a no-op */
/* The first failure of any call below (they do nothing once one failed):
** TPU_OK, or the status, with its message ("<section>: what"). */
tpu_status tpu_sim_lower_status(const tpu_sim_lowering *L);
const char *tpu_sim_lower_error(const tpu_sim_lowering *L);
/* A caller's own refusal (a tile that cannot hold a row of logits): the
** lowering fails with st and msg, in its section, unless it failed before. */
void tpu_sim_lower_fail(tpu_sim_lowering *L, tpu_status st, const char *msg);
void tpu_sim_lower_counts_of(const tpu_sim_lowering *L, tpu_sim_lower_counts *out);
/* Q, the values in one streamed tile (the Tiles paragraph). */
int64_t tpu_sim_lower_tile_values(const tpu_sim_lowering *L);
/* A tile's extent along a dimension of n: at most lim (>= 1), cut to whole
** sublane groups of 8 when it splits n. Can't fail. */
int64_t tpu_sim_lower_extent(int64_t n, int64_t lim);
/* Starts a section labelled 'label' (copied; cut to 63 bytes). */
void tpu_sim_lower_section(tpu_sim_lowering *L, const char *label);
/* The training step the next ops belong to (tpu_sim_op.step). */
void tpu_sim_lower_set_step(tpu_sim_lowering *L, int step);

/* Declares tensor 'name' (rows x cols; a name already declared is that
** tensor, and must have this shape) and returns its handle (>= 1; 0 after
** a failure). 'views' NULL: its tiles are blocks, holding 'init' (rows x
** cols, row-major, copied tile by tile as tiles are made; NULL: zeros);
** else the name of its view group (init must be NULL). Its bytes count
** once in cls. 'init' is borrowed: it must outlive the lowering. */
int tpu_sim_lower_tensor(tpu_sim_lowering *L, const char *name, const char *views, tpu_sim_tensor_class cls,
                         tpu_sim_dtype dt, int64_t rows, int64_t cols, const float *init);
/* A view group's handle without a whole tensor behind it: tiles of an
** operand the lowering streams but no tensor of the step holds (an im2col
** matrix gathered by the DMA). A group is its name and its dtype: "hbm"
** in bf16 and "hbm" in f32 are two groups, each tile of the first moving
** 2 bytes a value. Handles of one group with other classes share its
** buffers (and so its ordering); they differ in what their DMAs' bytes
** count as (tpu_sim_lower_counts.class_bytes). */
int tpu_sim_lower_views(tpu_sim_lowering *L, const char *group, tpu_sim_dtype dt, tpu_sim_tensor_class cls);
/* The dtype tensor (or view group) t is stored in (f32 for no tensor). */
tpu_sim_dtype tpu_sim_lower_tensor_dtype(const tpu_sim_lowering *L, int t);
/* The engine buffer holding tensor t whole (views: its capacity buffer;
** blocks: 0, a block tensor has none). */
int tpu_sim_lower_buffer(const tpu_sim_lowering *L, int t);

/* VMEM buffer (role, slot) of this section with shape r x c, made at its
** first use. Roles name the buffers ("s3 a0 16x256"). VMEM buffers hold
** f32 whatever the tensor's dtype in HBM: a bf16 tile is widened as it
** lands (the VPUs of TPU v2/v3 have no bf16 arithmetic), so its DMA moves
** 2 bytes a value and VMEM is charged 4. */
typedef enum tpu_sim_lower_role {
  TPU_SIM_R_A = 0, TPU_SIM_R_B, TPU_SIM_R_C, TPU_SIM_R_CA, TPU_SIM_R_CB, TPU_SIM_R_BIAS, TPU_SIM_R_DB,
  TPU_SIM_R_PART, TPU_SIM_R_X, TPU_SIM_R_Y, TPU_SIM_R_O, TPU_SIM_R_MASK, TPU_SIM_R_LAB, TPU_SIM_R_LOSS,
  TPU_SIM_R_ACC, TPU_SIM_R_P, TPU_SIM_R_G, TPU_SIM_R_M, TPU_SIM_R_V, TPU_SIM_R_ST, TPU_SIM_R_SQ, TPU_SIM_R_W,
  TPU_SIM_R_NROLES
} tpu_sim_lower_role;
int tpu_sim_lower_vmem(tpu_sim_lowering *L, tpu_sim_lower_role role, int slot, int64_t r, int64_t c);
/* DMA of tile [r0, r0+r) x [c0, c0+c) of tensor t into VMEM buffer (role,
** slot); returns the VMEM buffer. 'what' labels the op (a literal, or a
** string that outlives the section: the lowering keeps the pointer). */
int tpu_sim_lower_load(tpu_sim_lowering *L, int t, tpu_sim_lower_role role, int slot, int64_t r0, int64_t c0,
                       int64_t r, int64_t c, const char *what);
/* DMA of VMEM buffer v (r x c) into tile (r0, c0) of tensor t: now, or
** deferred until the next tile's loads are issued (tpu_sim_lower_flush
** issues every deferred store; at most 4 wait, a fifth flushes them). */
void tpu_sim_lower_store(tpu_sim_lowering *L, int v, int t, int64_t r0, int64_t c0, int64_t r, int64_t c,
                         const char *what);
void tpu_sim_lower_defer(tpu_sim_lowering *L, int v, int t, int64_t r0, int64_t c0, int64_t r, int64_t c,
                         const char *what);
void tpu_sim_lower_flush(tpu_sim_lowering *L);
/* A VPU op on VMEM buffers (in[], out[] as tpu_sim_op; 0 for none),
** labelled by the op's name. */
void tpu_sim_lower_vpu(tpu_sim_lowering *L, tpu_vpu_op fn, const int in[3], const int out[3],
                       const tpu_vpu_params *prm);
/* Appends op as it is (its name becomes "<section> <what>", its step the
** lowering's); returns its index in the core's program (counting: the
** index it would have), -1 after a failure. */
int tpu_sim_lower_op(tpu_sim_lowering *L, tpu_sim_op *op, const char *what);
/* The next DMA waits for op 'index' (tpu_sim_op.after). */
void tpu_sim_lower_dma_after(tpu_sim_lowering *L, int index);
/* The index of the last op, and of the last DMA, added; -1 before any. */
int tpu_sim_lower_last_op(const tpu_sim_lowering *L);
int tpu_sim_lower_last_dma(const tpu_sim_lowering *L);

/* The one GEMM lowering: C = op(A).op(B) over tensors a, b, c. */
typedef struct tpu_sim_lower_gemm {
  const char *what;            /* ops' label: "matmul", "dW", "dX" (its DMAs: "<what> dma") */
  int64_t M, N, K;
  bool ta, tb;                 /* A stored K x M, B stored N x K */
  int a, b, c;                 /* tensors (handles); c gets the result */
  tpu_precision prec;
  int bias;                    /* 0, or a 1 x N tensor added to each result tile (bias_add) */
  bool has_act;                /* an activation on each result tile ... */
  tpu_vpu_op act;              /* ... this one */
  int db;                      /* 0, or a 1 x N tensor: the column sums of B (stored K x N, so not tb;
                                  dW's db) */
  uint64_t useful;             /* the model's multiply-adds in it when not M*N*K (a depthwise block) */
  int stats;                   /* 0, or a 2 x N tensor: the column sums of the result and of its
                                  squares (a batch norm's statistics reduced in its producer's
                                  epilogue: per tile a col_sum, a mul and a col_sum, added up over
                                  the block rows, stored after the last) */
  double a_share;              /* 0: A is streamed as stored. In (0, 1]: A is an implicit operand (a
                                  convolution's im2col matrix formed in VMEM from the input's
                                  window): each A tile's DMA moves ceil(a_share * its values) into
                                  a window buffer, the matmul waits for that DMA, and the next DMA
                                  into the same window slot for the matmul that used it */
  int64_t c_window;            /* 0: C tiles are stored. > 0: C is summed on chip into a window of
                                  this many values per block row (a transposed convolution's taps
                                  added into dX, col2im in VMEM: an 'add' per tile), stored once
                                  after the block row's last tile */
  const tpu_sim_tiling *tiling;   /* NULL: tpu_sim_gemm_tiling of the shape; else this one (a part of a
                                     larger GEMM lowered as the whole would be) */
} tpu_sim_lower_gemm;
void tpu_sim_lower_gemm_add(tpu_sim_lowering *L, const tpu_sim_lower_gemm *g);

/* Element-wise passes over R x C tensors, tile by tile (2Q values a tile,
** row-major). ewise: out = fn(x[, y]) with x (and y when nin is 2) loaded
** from tensor t, or y on chip (mask: an R x C tile; yvec: a 1 x C vector);
** reduce: a 1 x ci result per tile (col_sum); reduce_rows: an ri x 1 result
** per tile (row_sum), stored as column j of the tile's rows for the tile's
** column j of tiles. fold: out = fn(tap 0, tap
** 1, ...) over 'taps' same-shape tiles (pool windows, col2im taps), then
** a 'scale' by scale->alpha when scale is set. */
typedef struct tpu_sim_lower_ewise {
  tpu_vpu_op fn;
  int nin;                     /* inputs read from HBM: 1 or 2 */
  bool mask, yvec, reduce, reduce_rows;
  const tpu_vpu_params *prm;
} tpu_sim_lower_ewise;
void tpu_sim_lower_ewise_add(tpu_sim_lowering *L, int t, const tpu_sim_lower_ewise *e, int64_t R, int64_t C);
void tpu_sim_lower_fold_add(tpu_sim_lowering *L, int t, tpu_vpu_op fn, int taps, int64_t R, int64_t C,
                            const tpu_vpu_params *scale);
/* The tile walk of those passes: tile n is rows [r0, r0+ri) x columns
** [c0, c0+ci), row-major. Start with tpu_sim_lower_walk_of, then
** tpu_sim_lower_walk_next while it returns true (false at the end, or once
** the lowering failed). */
typedef struct tpu_sim_lower_walk { int64_t R, C, rt, ct, r0, c0, ri, ci; int n; } tpu_sim_lower_walk;
tpu_sim_lower_walk tpu_sim_lower_walk_of(const tpu_sim_lowering *L, int64_t R, int64_t C);
bool tpu_sim_lower_walk_next(const tpu_sim_lowering *L, tpu_sim_lower_walk *w);
/* }================================================================== */

/* {==================================================================
** The program of one GEMM C = A.B (M x K times K x N, each
** 1..TPU_SIM_MAX_DIM) split along M over 'cores' cores, as `tpusim
** matmul --cores`, `run --topology` and `tpusim viz` run it (sim/gemm.c).
** Core c gets rows [m0, m0+mi), m0 = M*c/cores (tpu_sim_gemm_rows), and
** lowers its part with the one GEMM lowering above: tensors "A" (its
** rows), "B" and "C" (its rows) in blocks, in one section "gemm". A and B
** (row-major, f32) are copied into the blocks when non-NULL (tile level);
** NULL gives a timing-level program. *hbm_bytes (may be NULL) gets the
** bytes the program moves. On failure *out is NULL, err says why
** (TPU_ERR_CONFIG bad shape, TPU_ERR_RANGE a program of more than
** TPU_SIM_MAX_OPS ops, refused before anything is built; TPU_ERR_NOMEM). */
tpu_status tpu_sim_gemm_program(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                                tpu_precision prec, const float *A, const float *B, tpu_sim_program **out,
                                double *hbm_bytes, char *err, size_t errcap);
/* Core c's first row and row count of an M-row GEMM over 'cores' cores:
** rows [M*c/cores, M*(c+1)/cores). Can't fail (M <= 2^31, cores <= 16). */
void tpu_sim_gemm_rows(int64_t M, int cores, int c, int64_t *m0, int64_t *mi);
/* C (M x N, row-major) gathered from the C blocks of every core of a run
** of such a program at the tile level. TPU_ERR_INPUT when r holds no
** values (the timing level). */
tpu_status tpu_sim_gemm_result(const tpu_sim_result *r, const tpu_sim_program *p, const tpu_chip_config *cfg,
                               int64_t M, int64_t N, int64_t K, float *C);
/* Where each matmul op of core c's part sits in the GEMM: for the j-th
** matmul op of the core, in program order, places[j] gets its program
** index and its tile's first row (within the whole GEMM), column and
** depth and its extents. *n gets the count; *places is the caller's
** (tpu_free). Users of the program (viz) read this instead of re-deriving
** the lowering. TPU_ERR_NOMEM, or the errors of tpu_sim_gemm_program. */
typedef struct tpu_sim_gemm_place { int op; int64_t m0, n0, k0, m, n, k; } tpu_sim_gemm_place;
tpu_status tpu_sim_gemm_places(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                               tpu_precision prec, int c, tpu_sim_gemm_place **places, size_t *n, char *err,
                               size_t errcap);
/* The run of that program on cfg (cfg->cores == cores) with options opt.
** A program of at most 'whole_ops' ops (0: TPU_SIM_GEMM_WHOLE_OPS) is built
** whole and run (so is any at the tile level or with events or a trace;
** then up to TPU_SIM_MAX_OPS). A larger one at the timing level is run
** *extended*, so a GEMM of M = 2^31 costs what a few block rows cost (a
** block row is mt rows of the core with the fewest, tpu_sim_gemm_tiling):
** the cores' block rows repeat, so after a few of them the engine's state
** repeats shifted in time. The program is run with the first block rows of
** every core left out (each core's part lowered with its whole part's
** tiling), keeping 1, 2, 3, ... on the core with the fewest,
** until the run's figures (its cycles; per core each stall kind,
** tpu_sim_result_memory_busy and its end) grow by the same amounts over
** three periods of p block rows (p = 1..4) from some length j0 on, and
** only mxu_busy and weight_load grow (every core runs at its arrays' pace:
** a memory-bound run is paced by the HBM share between cores, whose
** fractional rates can drift for hundreds of block rows). The pattern must
** then predict a run of about 65 block rows exactly. The result is the run
** of the length between j0 and j0 + p that differs from the whole
** program's by a whole number q of periods, its figures moved on by q
** growths (checked: beyond TPU_SIM_MAX_CYCLES is TPU_ERR_RANGE with the
** figure). Without such a pattern the whole program is run when it is
** within TPU_SIM_MAX_OPS, else TPU_ERR_RANGE says why. tests/check_sim.c
** compares extended and whole runs. The extended result's cycles, stalls, memory_busy, bound and
** step end are the whole GEMM's; its ops, op times and program (*prog) are
** those of the shorter run. *info says what was run. Errors as
** tpu_sim_gemm_program, plus TPU_ERR_RANGE for a run longer than
** TPU_SIM_MAX_CYCLES (the message gives the figure), HBM buffers beyond the
** chips' capacity, N and K whose single block row is too many ops, or no
** pattern and a whole program beyond TPU_SIM_MAX_OPS; and tpu_sim_run's. On failure
** *prog and *res are NULL and err says why. */
#define TPU_SIM_GEMM_WHOLE_OPS ((int64_t)1 << 18)
typedef struct tpu_sim_gemm_info {
  int64_t block;               /* mt of the core with the fewest rows: a block row */
  double hbm_bytes;            /* the whole GEMM's HBM traffic */
  int64_t rows_run;            /* extended: block rows of the smallest core in the run behind the result; 0: whole */
  int period;                  /* extended: p, in block rows */
  uint64_t periods;            /* extended: q */
} tpu_sim_gemm_info;
tpu_status tpu_sim_gemm_run(const tpu_chip_config *cfg, int cores, int64_t M, int64_t N, int64_t K,
                            tpu_precision prec, const float *A, const float *B, const tpu_sim_options *opt,
                            int64_t whole_ops, tpu_sim_program **prog, tpu_sim_result **res,
                            tpu_sim_gemm_info *info, char *err, size_t errcap);
/* The closed-form cycles of one collective of 'bytes' per core over all the
** chip's cores (what the engine charges once every core has arrived);
** at most 2^62 (saturated). */
uint64_t tpu_sim_collective_cycles(const tpu_chip_config *cfg, tpu_sim_coll c, int64_t bytes);
/* The algorithm tpu_sim_collective_cycles times for collective c on cfg, in
** words ("hierarchical all-reduce: ring reduce-scatter over an on-chip ring
** of the chip's 2 cores, ..."), written into buf; returns buf. This
** function can't fail (the text is cut to cap). */
const char *tpu_sim_collective_algorithm(const tpu_chip_config *cfg, tpu_sim_coll c, char *buf, size_t cap);
/* }================================================================== */
#endif /* TPU_SIM_H */
