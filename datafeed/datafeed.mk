# datafeed/
LIB_SRCS  +=
TEST_SRCS +=
