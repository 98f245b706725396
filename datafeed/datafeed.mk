# datafeed/: every datafeed/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard datafeed/*.c))
