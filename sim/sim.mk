# sim/: the chip (config, presets, engine) and the shared base.
LIB_SRCS  += sim/base.c
TEST_SRCS += tests/check_base.c
