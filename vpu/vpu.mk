# vpu/: every vpu/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard vpu/*.c))
