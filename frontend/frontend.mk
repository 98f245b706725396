# frontend/: the tpusim command line (every frontend/*.c; one file per command).
CLI_SRCS += $(sort $(wildcard frontend/*.c))
