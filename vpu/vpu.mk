# vpu/
LIB_SRCS  +=
TEST_SRCS +=
