/*
** mxu_int.h -- MXU internals shared between the module's files and white-box
** tests. Not part of the public API.
*/
#ifndef TPU_MXU_INT_H
#define TPU_MXU_INT_H
#include "mxu/mxu.h"
#include "mxu/mxu_fast_int.h"

/* The PE model's cell-update kernel comes in the same builds as the fast
** kernel (mxu_simd: portable C, AVX2+FMA, AVX-512), picked at
** tpu_mxu_create() by mxu_simd_pe_default(). Every build gives the same
** bits; tests force each one in turn. */
mxu_simd mxu_array_kernel(const tpu_mxu *m);
/* Selects a supported kernel (returns false, changing nothing, otherwise). */
bool mxu_array_set_kernel(tpu_mxu *m, mxu_simd k);
/* Tests: with 'skip' false, cycles at the fixed point (nothing in flight for
** rows + cols + 2 cycles) are stepped like any other instead of skipped. */
void mxu_array_set_skip(tpu_mxu *m, bool skip);

/* The PE-level model of the output-stationary array (mxu_os.c): runs tiles
** t[0..n) of the os schedule (m <= rows, n <= cols, any k >= 1; mxu.h,
** Dataflows) in order on cfg's array to the end, every PE every cycle,
** writing each tile's results into its out; starts[j] (if not NULL) gets
** tile j's stream start. 'hazards' (a bank restarted before its result
** left), 'mismatches' (operands of two tiles or two k meeting) and 'late'
** (results written off the header's cycle) must be 0. TPU_ERR_NOMEM, or
** TPU_ERR_RUNTIME if the run outgrows a generous bound (never expected). */
typedef struct mxu_os_stats { uint64_t cycles, macs, hazards, mismatches, late; } mxu_os_stats;
tpu_status mxu_os_run(const tpu_mxu_config *cfg, const tpu_mxu_tile *t, int n, uint64_t *starts,
                      mxu_os_stats *out);

#endif /* TPU_MXU_INT_H */
