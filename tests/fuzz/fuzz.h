/*
** In-process fuzz targets (docs/TESTING.md, "Fuzzing"). Each fz_*.c defines
** the libFuzzer entry point LLVMFuzzerTestOneInput for one parser of the
** tool and links against libtpusim.a (and the cli objects, for the table
** of sweepable commands the sweep target reads files over). The same file builds two ways:
**   - with clang -fsanitize=fuzzer,address,undefined (make fuzz), where
**     libFuzzer drives it for FUZZ_SECONDS per target from tests/fuzz/NAME/;
**   - with the project's compiler and replay.c's main (make test, make
**     asan), which feeds it every file of its seed corpus once: the corpus
**     is a regression suite, and every crash make fuzz ever finds is added
**     to it.
** A target must not leak and must return 0; a crash, a sanitizer report or
** a leak is the finding. It reports the outcome of each stage it runs with
** fz_status, for replay's allocation-failure sweep (FUZZ_OOM=1, make
** test): every input is run again with its 1st, 2nd, ... allocation
** failing, and must then end as it did without the failure or in
** TPU_ERR_NOMEM (never a crash, a leak, or another error), SQLite's way.
*/
#ifndef TPU_FUZZ_H
#define TPU_FUZZ_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Writes data[0..size) to this process's scratch file 'slot' (a few per
** target) and returns its path, which stays the same for the process. */
const char *fz_scratch(int slot, const void *data, size_t size);
/* The scratch directory (created once, removed at exit). */
const char *fz_dir(void);
/* Writes data[0..size) to path (aborts on failure: the harness is broken). */
void fz_write(const char *path, const void *data, size_t size);
/* A NUL-terminated copy of data (the caller frees it with free()). */
char *fz_text(const uint8_t *data, size_t size);
/* The outcome of one stage of the target, a tpu_status. An out-of-memory
** outcome sticks for the rest of the input. */
int fz_status(int st);   /* returns st */
/* For replay: the input's outcome so far, and a fresh start. */
int fz_outcome(void);
void fz_reset(void);
struct tpu_df_source;
/* Reads a source to its end through a real pipeline (batch 2, no threads),
** ignoring the errors: the readers' checks are what is fuzzed. */
void fz_read_all(const struct tpu_df_source *src);
#endif
