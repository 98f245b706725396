# scalesim/: SCALE-Sim v2 compatibility (its files, lowering, compute and
# memory models, reports, and its topologies on the chip engine); every
# scalesim/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard scalesim/*.c))
