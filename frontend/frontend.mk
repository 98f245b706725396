# frontend/: the tpusim command line.
CLI_SRCS += frontend/main.c
