# viz/: every viz/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard viz/*.c))
