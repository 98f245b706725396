/*
** sim_int.h -- internals of sim/: what its files share, and white-box
** tests read. Not a public header.
**
** Files. The engine is split as its models are:
**   engine.c        the timing: the event loop, each unit's model, the HBM
**                   share, the collectives' barrier, the checks before a run
**   collective.c    how long a collective lasts (closed forms)
**   values.c        the functional layer: what each op computes (tile
**                   level), called by the engine once the op is timed
**   sim_vpu.c       the VPU's operands, cycles and values for the engine
**   pool.c          the host threads the rounds run on
**   stats.c         after the run: the stall sweep, the event log, results
**   program.c, program_json.c   building programs (in C, from JSON)
**   lower.c         the lowering: programs from tensors and tiles, the one
**                   GEMM lowering, and its counting mode (sim.h)
**   gemm.c          the GEMM program over the cores, and its extended runs
**   trace.c         traces, from the event log
**   ops.def, stall.def          the op-kind and stall tables (public)
**
** Design.
**
** A program is, per core, an array of buffers and an array of ops. Each op's
** dependencies are derived when it is added (read after write, write after
** read, write after write on its buffers, in program order) and stored as a
** list of earlier op indices of the same core. Each op belongs to one unit
** (DMA, MXU, VPU, INFEED, COLL); a unit runs its ops in program order.
**
** The engine is a conservative parallel discrete-event simulation:
**   - An op *resolves* (gets its start and end cycle) as soon as all its
**     dependencies have resolved and it is the head of its unit's queue. For
**     the MXU, VPU and INFEED the end follows at once from the start (their
**     models depend on nothing else). A DMA's end depends on the other
**     transfers sharing its chip's HBM, and a collective's on every core.
**   - DMA: a core issues up to cfg.dma_outstanding transfers, in program
**     order. HBM is shared fairly: the cores with transfers in their data
**     phase (after the latency) each get bandwidth / cores, at most
**     dma.request_bytes a cycle, split evenly among their transfers. Rates
**     change only at entries and completions; the chip processes those in
**     time order. It may process the
**     event at time t only when nothing unresolved can start a transfer
**     before t: everything unresolved waits, directly or not, on a transfer
**     in flight (so starts no earlier than the earliest completion) or on a
**     collective (so starts no earlier than that collective's arrival plus
**     its duration: the chip's *horizon*).
**   - Cores of different chips share nothing but collectives, so chips are
**     simulated in parallel on host threads in rounds: each chip advances
**     until it is blocked, then one thread resolves the collective every
**     core has arrived at (start = the last arrival), computes its values in
**     a fixed order, and the next round begins. A chip never reads another
**     chip's state during a round, so results do not depend on the thread
**     count or on scheduling.
**   - Values (tile level) are computed when an op resolves: its inputs are
**     final then (their writers resolved first) and no later writer of its
**     outputs has resolved (write-after-read dependencies). They are a
**     layer of their own (sim/values.c), called after the op is timed: an
**     op's times come from shapes only (mxu_start times a matmul, its
**     values are sim_matmul_values'), so the timing level runs the same
**     code without them and gives the same cycles.
**   - Stall accounting is a sweep after the run over each core's busy and
**     wait intervals (sim/stats.c).
**   - The event log (options.events): while running, a core records only
**     its matmuls' tiles (in resolution order, which for the in-order MXU
**     queue is program order); per op it keeps start, mid, busy and end.
**     After the run each core's log is assembled on the pool from those and
**     the sweep's states (sim_build_log), so its order is fixed whatever
**     the threads did.
**   - Identical cores run once (timing level without the event log): cores
**     that run one program (tpu_sim_program_share) with the same infeed
**     ready cycles start in the same state and see the same inputs, so the
**     engine, being deterministic, gives them the same times. A chip whose
**     cores are all alike simulates its first core only, standing for all
**     (its weight: it counts that many times among the cores sharing HBM);
**     a chip whose cores are alike, one for one, to an earlier chip's is
**     not simulated: its cores take that chip's results (the per-op arrays
**     are shared, the stall parts copied). Which cores are simulated is
**     sim_core_rt.rep; tests/check_sim.c compares every op's times and
**     every stall part with the run of separate copies.
**
** Not modelled: bank conflicts and addresses inside HBM or VMEM (a buffer is
** a size), DMA issue out of program order, ICI contention between
** different collectives (they are in order),
** HBM traffic of collectives, the cost of dequeuing an infeed batch beyond
** waiting for it (the data pipeline's ready time includes the transfer).
*/
#ifndef TPU_SIM_INT_H
#define TPU_SIM_INT_H
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "sim/sim.h"

/* The units; each runs the ops of one kind (a row of sim/ops.def), and its
** number is that kind. */
enum { SIM_U_DMA = TPU_SIM_DMA, SIM_U_MXU = TPU_SIM_MATMUL, SIM_U_VPU = TPU_SIM_VPU, SIM_U_INFEED = TPU_SIM_INFEED,
       SIM_U_COLL = TPU_SIM_COLLECTIVE, SIM_NUNITS = TPU_SIM_NKINDS };
/* The unit whose busy intervals make stall kind s true (the table's 'kind'
** column), or -1 (idle). */
int sim_stall_unit(int s);
#define SIM_UNRESOLVED UINT64_MAX
/* Cycle arithmetic saturates at SIM_CYCLE_CAP, far below SIM_UNRESOLVED and
** far above TPU_SIM_MAX_CYCLES: a run that gets there fails (engine.c,
** account()) instead of wrapping. */
#define SIM_CYCLE_CAP (UINT64_C(1) << 62)
static inline uint64_t sim_add_cyc(uint64_t a, uint64_t b) {
  return a >= SIM_CYCLE_CAP - (b < SIM_CYCLE_CAP ? b : SIM_CYCLE_CAP) ? SIM_CYCLE_CAP : a + b;
}
/* ceil(x) as cycles, for x >= 0 (saturated; NaN too). */
static inline uint64_t sim_ceil_cyc(double x) { return x < (double)SIM_CYCLE_CAP ? (uint64_t)ceil(x) : SIM_CYCLE_CAP; }

typedef struct sim_buf {
  const char *name;            /* in the program's name table (sim_intern) */
  uint32_t hash;               /* of the name (the core's buffer index) */
  tpu_sim_space space;
  tpu_sim_dtype dtype;
  int64_t rows, cols;
  float *init;                 /* initial values, or NULL for zeros */
  int last_writer;             /* dependency tracking while ops are added; -1 none */
  int *readers;                /* ops that read it since the last write */
  int nreaders, capreaders;
  int first_use, last_use;     /* op indices (VMEM liveness); -1 unused */
} sim_buf;

typedef struct sim_op {
  tpu_sim_op o;                /* name points into the program's name table */
  const char *name;
  int unit;
  int dep0, ndeps;             /* into sim_core_prog.deps */
  int64_t bytes;               /* DMA and COLL: bytes per core moved/reduced */
  tpu_vpu_params params;       /* VPU scalars (o.params is NULL once added) */
} sim_op;

typedef struct sim_core_prog {
  sim_buf *bufs; int nbufs, capbufs;   /* handle h is bufs[h - 1] */
  sim_op *ops; int nops, capops;
  int *deps; int ndeps, capdeps;
  int *uq[SIM_NUNITS]; int uqn[SIM_NUNITS], uqcap[SIM_NUNITS];   /* each unit's ops in program order */
  int *bidx; int bidxcap;       /* buffer handles by name hash (open addressing, 0 empty) */
  uint64_t *infeed_ready; int64_t ninfeed;   /* the core's own, also when it shares */
  int maxstep;
  /* Sharing (tpu_sim_program_share): a core that runs another core's
  ** program holds a copy of that core's struct, pointing at its arrays
  ** (bufs, ops, deps, uq, bidx); only the owner frees them, and neither
  ** takes more buffers, ops or values afterwards. */
  int share;                   /* 1 + the core whose arrays these are; 0: its own */
  int nsharers;                /* cores running this core's arrays */
} sim_core_prog;

/* The program's strings (op names, VPU op names, buffer names), each kept
** once: interned into chunks freed with the program, so that adding an op
** costs no allocation of its own and a name repeated over thousands of ops
** (every tile of a layer) is stored once. */
typedef struct sim_names {
  const char **slot;           /* open addressing; NULL empty */
  uint32_t *hash;
  size_t cap, n;
  char *chunk;                 /* the current chunk's free space ... */
  size_t left;                 /* ... and its size */
  void *chunks;                /* every chunk, each starting with the previous one's address */
  /* The op and VPU op names interned last, by the caller's address (a
  ** lowering hands the same few name buffers to thousands of ops): checked
  ** by strcmp, so a buffer rewritten since is simply interned again. */
  const char *recent_src[16], *recent[16];
} sim_names;

struct tpu_sim_program {
  int cores;
  sim_core_prog *core;
  tpu_sim_infeed_fill fill;
  void *fill_ud;
  int64_t nops;                /* over all cores (shared cores count their ops too) */
  sim_names names;
  char err[1024];
};

/* The interned copy of s (hash h = sim_hash(s)), or NULL when out of memory. */
uint32_t sim_hash(const char *s);
const char *sim_intern(tpu_sim_program *p, const char *s, uint32_t h);

void sim_seterr(tpu_sim_program *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t sim_buf_bytes(const sim_buf *b);
/* "op 3 ('mm1', matmul)" into buf. */
const char *sim_op_label(const sim_core_prog *cp, int op, char *buf, size_t cap);

/* {==================================================================
** The VPU as the engine sees it (sim/sim_vpu.c): check operand shapes,
** cycles, values.
** ================================================================== */
/* Every VPU op's name, comma-separated (for messages). */
const char *sim_vpu_names(void);
/* Checks op->vpu_op's numbers and shapes of operands; writes a message on
** failure. */
bool sim_vpu_check(const tpu_sim_op *op, const tpu_vpu_params *prm, const sim_core_prog *cp,
                   char *err, size_t cap);
uint64_t sim_vpu_cycles(const tpu_vpu_config *vc, const sim_op *so, const sim_core_prog *cp);
/* Computes the outputs; in[i]/out[i] are the buffers' value arrays.
** TPU_ERR_NOMEM (label scratch) or the VPU's error. */
tpu_status sim_vpu_exec(const sim_op *so, const sim_core_prog *cp, float *const *in, float *const *out);
/* }================================================================== */

/* {==================================================================
** Host threads (sim/pool.c)
** ================================================================== */
/* A pool of threads that runs batches of tasks; on the caller's stack,
** set up by sim_pool_start, torn down by sim_pool_stop. */
typedef struct sim_pool {
  int nthreads;
  pthread_t *tid;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  _Atomic uint64_t ticket;     /* generation << 32 | index of the next task */
  _Atomic int finished;        /* tasks of the current generation done */
  _Atomic bool quit;
  void (*fn)(void *ctx, int task);
  void *ctx;
  _Atomic int ntasks;
} sim_pool;

/* Starts nthreads-1 workers (the caller is the last); on failure runs with
** fewer. This function can't fail. */
void sim_pool_start(sim_pool *p, int nthreads);
/* Runs fn(ctx, 0 .. ntasks-1) on the pool and the calling thread; returns
** when every task has finished. Tasks must not depend on each other. */
void sim_pool_run(sim_pool *p, int ntasks, void (*fn)(void *, int), void *ctx);
void sim_pool_stop(sim_pool *p);
/* The host's online processors, 1..64. */
int sim_host_cores(void);
/* }================================================================== */

/* {==================================================================
** Run state
** ================================================================== */
typedef struct sim_iv { uint64_t a, b; } sim_iv;       /* [a, b) cycles */
typedef struct sim_slice { uint64_t a, b; int cat; } sim_slice;

/* sim_core_rt and sim_chip_rt start on a cache line and fill whole lines
** (the arrays are allocated aligned): a chip's thread writes its own chip's
** and cores' fields only, and must not share a line with another chip's. */
/* One DMA transfer in flight (engine.c): issued, waiting out the HBM
** latency until 'enter', then in the pool receiving its bytes. */
typedef struct sim_xfer {
  int op;
  bool in_pool;
  uint64_t enter;              /* cycle it joins the HBM pool */
  double rem;                  /* bytes still to arrive (in the pool) */
  double rate;                 /* bytes per cycle it receives now (in the pool) */
  uint64_t fin;                /* projected completion cycle (in the pool) */
} sim_xfer;

typedef struct sim_core_rt {
  _Alignas(64) int id;
  int chip;
  int rep;                     /* the core whose run stands for this one's; itself when simulated */
  const sim_core_prog *cp;
  const int *q[SIM_NUNITS]; int qn[SIM_NUNITS]; int head[SIM_NUNITS];   /* q, qn: cp->uq, cp->uqn */
  int waits[SIM_NUNITS];        /* 1 + an unresolved dependency the head op was found waiting on; 0 none */
  uint64_t unit_free[SIM_NUNITS];
  uint64_t *start, *end;       /* per op (in r->opmem); end SIM_UNRESOLVED until resolved */
  uint64_t *busy;              /* per op: start of its busy interval (MXU: first weight load) */
  uint64_t *mid;               /* per op: tpu_sim_event.mid (DMA: joins the pool; COLL: all arrived) */
  uint64_t *wl;                /* per op: a matmul's weight-load cycles not hidden (from busy on) */
  tpu_mxu_sched mxu[TPU_MAX_MXUS_PER_CORE];   /* the first cfg.mxus_per_core */
  float **val;                 /* per buffer values (tile level), else NULL */
  int64_t infeed_next;
  int coll_arrived;            /* op index of the collective waiting at the barrier, -1 none */
  uint64_t coll_arrival;
  sim_xfer *xf;                /* the DMA transfers in flight, [0, nxf); room for cfg.dma_outstanding */
  int nxf;
  int npool;                   /* of them in their data phase (in the HBM pool) */
  /* results */
  tpu_sim_stalls total;
  uint64_t memory_busy;        /* cycles with a DMA in flight (the union of the DMA intervals) */
  tpu_sim_stalls *steps;       /* [nsteps] */
  uint64_t *step_end;          /* [nsteps] */
  sim_slice *slices; int nslices, capslices;   /* the sweep's states (with the log) */
  tpu_sim_event *tiles; size_t ntiles, captiles; /* tiles recorded while running (with the log) */
  tpu_sim_event *log; size_t nlog;             /* the event log, built after the run */
  bool oom;
  uint64_t maxend;             /* its last op's end */
  tpu_status setup_st;
  char setup_err[512];
} sim_core_rt;

typedef struct sim_chip_rt {
  _Alignas(64) int first;      /* its simulated cores: first .. first + n - 1 */
  int n;
  int weight;                  /* cores each simulated core stands for (all of the chip's when alike) */
  uint64_t tlast;              /* the last pool event processed */
  int nactive;                 /* cores with a transfer in the pool */
  uint64_t horizon;
  bool progressed;
  char err[512];
  tpu_status st;
} sim_chip_rt;

struct tpu_sim_result {
  const tpu_chip_config *cfgp;
  tpu_chip_config cfg;
  tpu_sim_program *p;
  tpu_sim_options opt;
  int cores, chips, nsteps;
  sim_core_rt *core;
  sim_chip_rt *chip;
  uint64_t cycles;
  double bytes_per_cycle, hbm_lat;
  double core_bytes_per_cycle; /* one core's DMA engine: a request of dma.request_bytes a cycle */
  int coll_index;              /* collectives resolved so far */
  bool events;                 /* keep the event log */
  uint64_t *opmem;             /* every core's start, end, busy, mid and wl (alloc_ops) */
  sim_xfer *xfmem;             /* every core's DMA slots (cores x dma.outstanding) */
  int nsim, sim[TPU_MAX_CORES];              /* the simulated cores (rep == id), in order */
  int nsimchips, simchip[TPU_MAX_CORES];     /* the simulated chips, in order */
};

/* stats.c: the sweep; fills core->total, steps, step_end and (with the
** log) slices. Then the core's event log from its ops, tiles and slices. */
tpu_status sim_account(tpu_sim_result *r, int core);
tpu_status sim_build_log(tpu_sim_result *r, int core);
/* }================================================================== */

/* {==================================================================
** Values (sim/values.c): the functional layer, at the tile level. The
** engine calls these as an op resolves, after timing it; none of them
** reads or changes a cycle, and the timing never reads a value.
** ================================================================== */
/* Core c's value arrays (c->val), one per buffer of c->cp: its initial
** values, or zeros. TPU_ERR_NOMEM leaves what was allocated for
** sim_values_free. */
tpu_status sim_values_alloc(sim_core_rt *c);
void sim_values_free(sim_core_rt *c);    /* no values (c->val NULL) is a no-op */
/* Matmul so: dst (+)= op(a) . op(b) by tpu_mxu_gemm_acc at the tile level
** on cfg's arrays. TPU_ERR_NOMEM (scratch for the product). */
tpu_status sim_matmul_values(const tpu_chip_config *cfg, sim_core_rt *c, const sim_op *so);
/* VPU op so on its buffers' values: sim_vpu_exec's status. */
tpu_status sim_vpu_values(sim_core_rt *c, const sim_op *so);
void sim_dma_values(sim_core_rt *c, const sim_op *so);     /* dst = src; can't fail */
/* Infeed so: dst = batch 'batch' of core c (the program's fill, else
** c * 1000 + batch). Can't fail. */
void sim_infeed_values(tpu_sim_result *r, sim_core_rt *c, const sim_op *so, int64_t batch);
/* The collective that every core has arrived at (ops[q]: its op on core q;
** with one core, ops[0] alone): dst on every core. TPU_ERR_NOMEM. */
tpu_status sim_coll_values(tpu_sim_result *r, const int *ops);
/* }================================================================== */

/* {==================================================================
** The lowering's hooks for the GEMM program (lower.c, gemm.c)
** ================================================================== */
/* fn(ud, op, place) for every matmul op the lowering adds, in order (the
** GEMM program's places). */
void sim_lower_on_matmul(tpu_sim_lowering *L, void (*fn)(void *ud, int op, const tpu_sim_gemm_place *pl),
                         void *ud);
/* The name of block (r0, c0) of block tensor 'name' (what gemm.c gathers). */
void sim_lower_block_name(const char *name, int64_t r0, int64_t c0, char *buf, size_t cap);
/* }================================================================== */
#endif
