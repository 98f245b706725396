# viz/
LIB_SRCS  +=
TEST_SRCS +=
