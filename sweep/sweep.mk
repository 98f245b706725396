# sweep/: the sweep engine (grid, journal, points on host threads, CSV,
# shards and their merge, GNU parallel and Slurm scripts, plots); every
# sweep/*.c goes into libtpusim.a.
LIB_SRCS  += $(sort $(wildcard sweep/*.c))
