# mxu/: the systolic array (PE model, tile timing, fast kernel, GEMM driver).
LIB_SRCS  +=
TEST_SRCS +=
