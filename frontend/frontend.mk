# frontend/: the tpusim command line.
CLI_SRCS += frontend/main.c frontend/cli.c frontend/cmd_info.c frontend/cmd_matmul.c
