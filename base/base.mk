# base/: what every module shares (status, allocation, bf16, rng, files,
# JSON positions); the bottom of the include graph. Goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard base/*.c))
