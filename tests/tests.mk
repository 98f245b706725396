# tests/: every tests/check_*.c is a libcheck suite and every tests/bench_*.c a
# benchmark; tests/test_util.c is linked into each (see Makefile).
TEST_SRCS  += $(sort $(wildcard tests/check_*.c))
BENCH_SRCS += $(sort $(wildcard tests/bench_*.c))
