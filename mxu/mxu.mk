# mxu/: every mxu/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard mxu/*.c))
