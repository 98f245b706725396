# cli/: the tpusim command line (every cli/*.c; one file per command). It
# calls only the modules' public headers and links libtpusim.a.
CLI_SRCS += $(sort $(wildcard cli/*.c))
