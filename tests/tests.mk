# tests/: every tests/check_*.c is a libcheck suite and every tests/bench_*.c a
# benchmark; tests/test_util.c is linked into each (see Makefile).
TEST_SRCS  += $(sort $(wildcard tests/check_*.c))
BENCH_SRCS += $(sort $(wildcard tests/bench_*.c))

# tests/fuzz/: one in-process fuzz target per parser (fz_NAME.c, see
# tests/fuzz/fuzz.h). In every mode each is linked with replay.c into
# NAME-replay, which make test runs over its seed corpus tests/fuzz/NAME/;
# with MODE=fuzz (make fuzz, clang) each is linked with libFuzzer into
# NAME-fuzz. The cli objects (all but main.o) are linked for the sweep
# target, which reads sweep files over the command line's table of
# sweepable commands (cli/sweep_cmds.c).
FUZZ_NAMES   = $(patsubst tests/fuzz/fz_%.c,%,$(sort $(wildcard tests/fuzz/fz_*.c)))
FUZZ_REPLAYS = $(FUZZ_NAMES:%=$(B)/tests/fuzz/%-replay)
FUZZ_BINS    = $(FUZZ_NAMES:%=$(B)/tests/fuzz/%-fuzz)
FUZZ_CLI     = $(filter-out $(B)/cli/main.o,$(CLI_SRCS:%.c=$(B)/%.o))
